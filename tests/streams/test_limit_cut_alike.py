"""A per-stream limit cuts the same content of a response on every path: `feed_chunk` with the
events, `feed_sse` with their body whole and byte by byte. Found by a differential fuzzer that
feeds mutated streams to each path; each case here is the smallest stream it found."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .streamkit import sse_body

FMT = "openai-responses"
_REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "t"}]}


def _call_item(n: int, **fields: Any) -> dict[str, Any]:
    item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "lookup"}
    return item | fields


def _added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def _done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def _delta(index: int, item_id: str, delta: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": item_id,
        "output_index": index,
        "delta": delta,
    }


def _completed(*output: object) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {"status": "completed", "output": list(output)},
    }


def _outcome(asm: Assembler) -> tuple[Any, ...]:
    early = [(o, e.kind, e.offset, e.path) for o, e in asm.drain_errors()]
    calls = asm.finish()
    return (
        early,
        [(c.ordinal, c.index, c.name, c.id, c.arguments, c.error and c.error.kind) for c in calls],
        asm.reasoning,
        [(kind, event) for kind, event, _ in asm.stream_errors()],
    )


def _each_path(events: list[dict[str, Any]], **limits: int) -> list[tuple[Any, ...]]:
    """The outcome of `events` on `feed_chunk`, `feed_sse` whole and `feed_sse` byte by byte."""
    chunks = Assembler(**limits)
    for event in events:
        chunks.feed_chunk(event)
    body = sse_body(events, FMT)
    whole = Assembler(**limits)
    whole.feed_sse(body)
    bytewise = Assembler(**limits)
    for i in range(len(body)):
        bytewise.feed_sse(body[i : i + 1])
    return [_outcome(chunks), _outcome(whole), _outcome(bytewise)]


def _alike(events: list[dict[str, Any]], **limits: int) -> tuple[Any, ...]:
    chunks, whole, bytewise = _each_path(events, **limits)
    assert chunks == whole == bytewise
    return chunks


def test_a_reasoning_item_whose_follower_passes_the_limit_is_let_go_on_every_path() -> None:
    # The reasoning item fits; the header of the call after it (its id, name and `item_id`)
    # takes the response past its limit. Refused whole, the call follows nothing: the item,
    # which the API refuses without its follower, is let go at the end on both paths, where
    # `feed_chunk` kept it as the call's (a call with no `reasoning_id` to send it before).
    call = _call_item(0)
    events = [
        {"type": "response.created", "response": {}},
        _added(0, {"type": "reasoning", "id": "rs_1", "summary": []}),
        _done(0, _REASONING),
        _added(1, call | {"arguments": ""}),
        _delta(1, "fc_0", '{"q": 1}'),
        _done(1, call | {"arguments": '{"q": 1}'}),
        _completed(_REASONING, call | {"arguments": '{"q": 1}'}),
    ]
    # The item is kept as its compact JSON; the call's header passes the 10 bytes left.
    fits = len(json.dumps(_REASONING, separators=(",", ":"))) + 10
    _, calls, reasoning, errors = _alike(events, max_stream_bytes=fits)
    assert reasoning == []
    assert [error for *_, error in calls] == ["too_large"]
    assert errors == [("stream_limit", 4)]


def test_a_summary_of_an_item_never_announced_after_the_limit_feeds_nothing() -> None:
    # Past the limit, an item without state gets none: its `arguments.done` fed the core on
    # `feed_chunk` (which then named the refused response's one call after that item), and
    # nothing on the raw path (which named it after the next item announced).
    events = [
        {"type": "response.created", "response": {}},
        _done(0, _REASONING),
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_3",
            "output_index": 3,
            "arguments": '{"a": 1}',
        },
        _added(4, _call_item(4, arguments="")),
        _completed(),
    ]
    _, calls, _, errors = _alike(events, max_stream_bytes=20)
    assert [(index, error) for _, index, *_, error in calls] == [(4, "too_large")]
    assert errors == [("stream_limit", 2)]


def test_a_refused_response_does_not_read_its_finished_output_for_calls() -> None:
    # A call was announced (refused at the limit), so the finished `output` is not read for
    # calls on either path: `feed_chunk` read it when the refusal had kept no call, and told
    # an item there that does not read as a malformed event the raw path never saw.
    call = _call_item(0, arguments="")
    events = [
        {"type": "response.created", "response": {}},
        _added(0, call),
        _completed({"type": "reasoning", "id": {}, "summary": []}, call),
    ]
    _, _, _, errors = _alike(events, max_stream_bytes=5)
    assert errors == [("stream_limit", 2)]


def test_a_call_keyed_apart_whose_item_id_passes_the_limit_reports_alike() -> None:
    # A delta under an unknown `item_id` keys an item apart from the one at its index; the
    # next item at the next index is then keyed apart too. Its `item_id` takes the response
    # past the limit: `feed_chunk` had set the index it reports before that, the raw path
    # sets it after, and refused, not at all.
    first = _call_item(0, arguments="")
    events = [
        {"type": "response.created", "response": {}},
        _added(0, first),
        _delta(0, "fc_x", " "),
        _added(1, _call_item(1, arguments="")),
        _completed(),
    ]
    _, calls, _, errors = _alike(events, max_stream_bytes=40)
    assert [index for _, index, *_ in calls] == [0, 1, 2]
    assert errors == [("stream_limit", 4)]


_BIG = '{"city": "' + "x" * 40 + '"}'
# A finished item with no `added` before it.
_ALONE = [
    {"type": "response.created", "response": {}},
    _done(0, _call_item(0, arguments=_BIG)),
    _completed(),
]


def test_a_finished_item_alone_past_max_bytes_fails_where_its_text_does() -> None:
    # An `output_item.done` with no `added` before it: the raw path set its arguments aside as
    # an `added`'s, which failed the call `too_large` at once, at no path, before feeding the
    # same text, which `feed_chunk` feeds at once (`too_large` at `/city`).
    early, calls, _, _ = _alike(_ALONE, max_bytes=20)
    assert early == [(0, "too_large", 20, "/city")]
    assert [error for *_, error in calls] == ["too_large"]


def test_a_finished_item_alone_past_the_stream_limit_keeps_what_feeding_keeps() -> None:
    # The same item past the response's byte limit: set aside, its text was refused before it
    # was fed, where `feed_chunk` fed it (keeping the text that crossed the limit).
    _, calls, _, errors = _alike(_ALONE, max_stream_bytes=40)
    assert [(arguments, error) for *_, arguments, error in calls] == [(_BIG, "too_large")]
    assert errors == [("stream_limit", 2)]
