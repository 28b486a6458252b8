"""A call that ended long before, among many, still gets a late error at once.

`drain_errors` and `failed` look only at the calls changed since they last looked; a summary
that contradicts an ended call's text, or text after its end, changes that call however long
ago it ended, through every entry point: `feed_chunk`, `feed_sse` and `feed`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .streamkit import Call, responses_stream

CALLS = 40


def _late_summary_stream() -> list[dict[str, Any]]:
    """A Responses stream of `CALLS` calls whose first call's end (its `.done` summary, which
    differs from its deltas, and its item's end) comes after every other call."""
    events = responses_stream([Call("f", '{"a": 1}') for _ in range(CALLS)], size=3)
    first_ends = [
        e
        for e in events
        if e.get("output_index") == 0
        and e["type"] in ("response.function_call_arguments.done", "response.output_item.done")
    ]
    assert len(first_ends) == 2
    rest = [e for e in events if all(e is not end for end in first_ends)]
    summary, item_done = (json.loads(json.dumps(e)) for e in first_ends)
    summary["arguments"] = item_done["item"]["arguments"] = '{"a": 2}'
    return [*rest[:-1], summary, item_done, rest[-1]]


def _drained(asm: Assembler) -> tuple[list[tuple[int, str]], bool]:
    return [(o, e.kind) for o, e in asm.drain_errors()], asm.failed


@pytest.mark.parametrize("path", ["feed_chunk", "feed_sse"])
def test_a_late_summary_fails_a_call_that_ended_long_before(path: str) -> None:
    events = _late_summary_stream()
    asm = Assembler()
    seen: list[tuple[str, list[tuple[int, str]], bool]] = []
    for event in events:
        if path == "feed_chunk":
            asm.feed_chunk(event)
        else:
            asm.feed_sse(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        errors, failed = _drained(asm)
        seen.append((event["type"], errors, failed))
    late = len(events) - 3
    assert all(errors == [] and not failed for _, errors, failed in seen[:late])
    assert seen[late] == (
        "response.function_call_arguments.done",
        [(0, "arguments_mismatch")],
        True,
    )
    assert [s[1:] for s in seen[late + 1 :]] == [([], True), ([], True)]
    calls = asm.finish()
    assert [c.ordinal for c in calls if c.error is not None] == [0]


def test_text_after_an_incomplete_call_ended_fails_it_among_many() -> None:
    asm = Assembler()
    asm.feed(0, id="c0", name="f", arguments='{"a": 1')
    asm.end(0)
    for key in range(1, CALLS):
        asm.feed(key, id=f"c{key}", name="f", arguments='{"a": 1}')
        asm.end(key)
        assert _drained(asm) == ([], False)
    asm.feed(0, arguments="}")
    assert _drained(asm) == ([(0, "arguments_mismatch")], True)
    assert _drained(asm) == ([], True)
