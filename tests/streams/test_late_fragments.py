"""Argument text the provider's own events contradict: a fragment that comes after its call
ended (a proxy's stray newline, a delta repeated under a new `sequence_number`), and a Responses
`.done` summary that differs from the deltas. Every path must read them alike: no call without
an id that a result could answer, no invented text, and an error that says what happened.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import Toolset, tool_messages
from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer

_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
}


def _anthropic(deltas: list[str], late: str) -> list[dict[str, Any]]:
    def delta(text: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": text},
        }

    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    return [
        _START,
        {"type": "content_block_start", "index": 0, "content_block": block},
        *(delta(d) for d in deltas),
        {"type": "content_block_stop", "index": 0},
        delta(late),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]


def _bedrock(deltas: list[str], late: str) -> list[dict[str, Any]]:
    def delta(text: str) -> dict[str, Any]:
        return {
            "contentBlockDelta": {"delta": {"toolUse": {"input": text}}, "contentBlockIndex": 0}
        }

    start = {"start": {"toolUse": {"toolUseId": "t1", "name": "f"}}, "contentBlockIndex": 0}
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": start},
        *(delta(d) for d in deltas),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        delta(late),
        {"messageStop": {"stopReason": "tool_use"}},
    ]


_ITEM = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f"}
_RESPONSE = {"id": "r", "object": "response", "status": "in_progress", "model": "m", "output": []}


def _delta(text: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_1",
        "output_index": 0,
        "delta": text,
    }


def _responses(
    deltas: list[str], summary: str, *, late: str | None = None, after_done: str | None = None
) -> list[dict[str, Any]]:
    """One function call item: its deltas, then `after_done` (a delta after the `.done`
    summary), both summaries saying `summary`, then `late` (a delta after the item ended).
    Numbered in order, as a proxy that renumbers the events it repeats sends them."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _RESPONSE},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**_ITEM, "status": "in_progress", "arguments": ""},
        },
        *(_delta(d) for d in deltas),
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_1",
            "output_index": 0,
            "arguments": summary,
        },
    ]
    if after_done is not None:
        events.append(_delta(after_done))
    events.append(
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**_ITEM, "status": "completed", "arguments": summary},
        }
    )
    if late is not None:
        events.append(_delta(late))
    events.append({"type": "response.completed", "response": {**_RESPONSE, "status": "completed"}})
    return [{**e, "sequence_number": n} for n, e in enumerate(events)]


def _body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def _every_path(events: list[dict[str, Any]], *, sse: bool = True) -> list[Assembler]:
    """Assemblers fed `events` as dicts and, unless it is not SSE, as the raw body (whole and
    byte by byte)."""
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    if not sse:
        return [dicts]
    body = _body(events)
    whole, bytewise = Assembler(), Assembler()
    whole.feed_sse(body)
    for i in range(len(body)):
        bytewise.feed_sse(body[i : i + 1])
    return [dicts, whole, bytewise]


def _shown(asm: Assembler) -> list[tuple[Any, ...]]:
    return [
        (c.id, c.name, c.arguments, c.error.kind if c.error else None, c.warnings)
        for c in asm.finish()
    ]


_STREAMS = {
    "anthropic": (_anthropic, "toolu_1", True),
    "bedrock": (_bedrock, "t1", False),
    "responses": (
        lambda deltas, late: _responses(deltas, "".join(deltas), late=late),
        "call_1",
        True,
    ),
}


@pytest.mark.parametrize("fmt", sorted(_STREAMS))
@pytest.mark.parametrize("late", ["\n", " ", "\t\r\n"])
def test_white_space_after_an_ended_call_adds_nothing(fmt: str, late: str) -> None:
    # A proxy's stray newline after the block's (item's) stop opened a call with no id and no
    # name, which `tool_messages` answered under a made-up id the provider rejects.
    build, call_id, sse = _STREAMS[fmt]
    for asm in _every_path(build(['{"a":', "1}"], late), sse=sse):
        assert _shown(asm) == [(call_id, "f", '{"a":1}', None, [])]


@pytest.mark.parametrize("fmt", sorted(_STREAMS))
@pytest.mark.parametrize("late", ["1}", '{"a":1}', ',"b":2}'])
def test_text_after_a_whole_ended_call_is_dropped_and_said(fmt: str, late: str) -> None:
    # Text after the stop of a call whose value is whole could only have made it invalid (a
    # delta repeated by a proxy): the call stays as the provider ended it, with a warning,
    # and no second call is made.
    build, call_id, sse = _STREAMS[fmt]
    for asm in _every_path(build(['{"a":', "1}"], late), sse=sse):
        want = [(call_id, "f", '{"a":1}', None, ["late_fragment_dropped"])]
        assert _shown(asm) == want


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock"])
def test_text_after_an_ended_call_that_was_not_whole_fails_it(fmt: str) -> None:
    # The call ended before its value was whole and text came after: the text it ended with
    # is not all of it, so it must not run, and nothing of it makes a call of its own.
    build, call_id, sse = _STREAMS[fmt]
    for asm in _every_path(build(['{"a":'], "1}"), sse=sse):
        ((cid, name, arguments, kind, _),) = _shown(asm)
        assert (cid, name, arguments, kind) == (call_id, "f", '{"a":', "arguments_mismatch")


def test_tool_messages_answer_only_the_calls_the_provider_sent() -> None:
    asm = Assembler()
    for event in _responses(['{"a":1}'], '{"a":1}', late=" "):
        asm.feed_chunk(event)
    calls = asm.finish()
    messages = tool_messages(calls, [{"ok": True}], style="openai-responses")
    assert [m.get("call_id") for m in messages] == ["call_1"]


_TOOLS = Toolset(
    [
        {
            "name": "f",
            "description": "x",
            "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
        }
    ]
)


@pytest.mark.parametrize(
    ("deltas", "after_done", "arguments"),
    [
        # A delta repeated (renumbered by a proxy, or sent without a number).
        (['{"a":"x', "y", "y", '"}'], None, '{"a":"xyy"}'),
        # A delta lost between two others.
        (['{"a":"', '"}'], None, '{"a":""}'),
        # A delta repeated after the `.done` summary.
        (['{"a":"x', 'y"}'], 'y"}', '{"a":"xy"}y"}'),
    ],
)
def test_a_summary_that_differs_from_the_deltas_is_a_mismatch(
    sse_server: SSEServer,
    split: str,
    deltas: list[str],
    after_done: str | None,
    arguments: str,
) -> None:
    # Both summaries say `{"a":"xy"}`. The call failed as `concatenated_values` with the
    # summaries appended to its text (the model was told it sent two values), and only
    # `feed_sse` told `arguments_mismatch`. The call keeps the text its deltas made, fails as
    # `arguments_mismatch` on every path, and every path tells it at stream level.
    events = _responses(deltas, '{"a":"xy"}', after_done=after_done)
    for asm in _every_path(events):
        ((_, _, text, kind, _),) = _shown(asm)
        assert (text, kind) == (arguments, "arguments_mismatch")
        assert "arguments_mismatch" in [kind for kind, _, _ in asm.stream_errors()]
    _, stream = assemble_both(sse_server.register(_body(events), split=split), "openai-responses")
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "arguments_mismatch"
    assert call.arguments == arguments
    with_tools = Assembler(tools=_TOOLS)
    for event in events:
        with_tools.feed_chunk(event)
    (call,) = with_tools.finish()
    outcome = _TOOLS.validate(call)
    assert (outcome.ok, outcome.error_type, outcome.retryable) == (
        False,
        "arguments_mismatch",
        True,
    )
    assert "JSON" not in outcome.message


def test_a_summary_that_completes_cut_deltas_is_taken() -> None:
    # The deltas stop short (the last ones lost) and the summary starts with all of them: it
    # is the whole text, read as a resend, and runs. Told as a mismatch at stream level.
    events = _responses(['{"a":', '"x'], '{"a":"xy"}')
    for asm in _every_path(events):
        ((_, _, text, kind, _),) = _shown(asm)
        assert (text, kind) == ('{"a":"xy"}', None)
        assert [kind for kind, _, _ in asm.stream_errors()] == ["arguments_mismatch"]
