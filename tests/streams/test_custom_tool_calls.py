"""Responses custom tool calls (free-form input): calls on both paths, answered in kind.

A `custom_tool_call` item streams free text (`response.custom_tool_call_input.delta` /
`.done`), not JSON arguments. It was no call at all on either path, without a word, and the
next request lacked the `custom_tool_call_output` the API requires for it. Each stream is
served to the real `openai` client over HTTP and read with `assemble`; `assemble_both` then
feeds the identical body to `feed_sse`, cut every way a gateway may see it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import Toolset, assistant_turn, tool_messages
from toolwire.assembler import Assembler

from .clients import assemble_both, assemble_sync
from .conftest import SSEServer
from .streamkit import pieces

FMT = "openai-responses"
# Quotes, a backslash, a newline and non-ASCII text: the input is no JSON, and is kept as sent.
INPUT = "SELECT \"name\" FROM t WHERE x = 'a\\b';\n-- é 😀"
TOOLS = Toolset(
    [{"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}}}]
)


def _body(events: list[dict[str, Any]]) -> bytes:
    numbered = [{**e, "sequence_number": n} for n, e in enumerate(events)]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in numbered)


def _custom_item(text: str) -> dict[str, Any]:
    return {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_sql",
        "name": "run_sql",
        "input": text,
    }


def _custom_events(text: str, *, size: int = 5) -> list[dict[str, Any]]:
    where = {"output_index": 0, "item_id": "ctc_1"}
    deltas = [
        {"type": "response.custom_tool_call_input.delta", **where, "delta": text[i : i + size]}
        for i in range(0, len(text), size)
    ]
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": _custom_item("")},
        *deltas,
        {"type": "response.custom_tool_call_input.done", **where, "input": text},
        {"type": "response.output_item.done", "output_index": 0, "item": _custom_item(text)},
    ]


def _function_events(at: int) -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_f", "name": "lookup"}
    return [
        {
            "type": "response.output_item.added",
            "output_index": at,
            "item": {**item, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": at,
            "item_id": "fc_1",
            "delta": '{"q": 1}',
        },
        {
            "type": "response.output_item.done",
            "output_index": at,
            "item": {**item, "arguments": '{"q": 1}'},
        },
    ]


_CREATED = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
_COMPLETED = {"type": "response.completed", "response": {"id": "r", "status": "completed"}}


def test_a_custom_tool_call_is_a_call_of_its_free_form_text(
    sse_server: SSEServer, split: str
) -> None:
    events = [_CREATED, *_custom_events(INPUT), *_function_events(1), _COMPLETED]
    route = sse_server.register(_body(events), split=split)
    _, s = assemble_both(route, FMT, tools=TOOLS)
    custom, function = s.calls
    assert (custom.name, custom.id, custom.type, custom.arguments) == (
        "run_sql",
        "call_sql",
        "custom",
        INPUT,
    )
    # Never read as JSON, never run: a typed error that says why.
    assert custom.value is None
    assert custom.error is not None and custom.error.kind == "free_form_call"
    assert custom.metadata == {"item_id": "ctc_1"}
    assert function.ok and function.value == {"q": 1}
    assert s.finish_reason == "completed"
    outcome = s.outcomes[0]
    assert not outcome.ok and outcome.error_type == "free_form_call"
    assert not outcome.retryable
    assert s.outcomes[1].ok


def test_a_custom_tool_call_is_answered_with_a_custom_output(
    sse_server: SSEServer,
) -> None:
    events = [_CREATED, *_custom_events(INPUT), *_function_events(1), _COMPLETED]
    _, s = assemble_both(sse_server.register(_body(events)), FMT, tools=TOOLS)
    custom = s.calls[0]
    messages = tool_messages(s.calls, [s.outcomes[0], {"found": True}], style="openai-responses")
    assert [(m["type"], m["call_id"]) for m in messages] == [
        ("custom_tool_call_output", "call_sql"),
        ("function_call_output", "call_f"),
    ]
    assert json.loads(messages[0]["output"])["ok"] is False
    # The outcome alone answers its call in kind too.
    alone = s.outcomes[0].to_message(style="openai-responses")
    assert (alone["type"], alone["call_id"]) == ("custom_tool_call_output", "call_sql")
    assert s.outcomes[0].to_message(custom, style="openai-responses") == alone
    # The application that runs the tool itself answers it with its result.
    ran = tool_messages([custom], ["3 rows"], style="openai-responses")
    assert ran == [{"type": "custom_tool_call_output", "call_id": "call_sql", "output": "3 rows"}]
    # The turn sent back holds the call as the model made it.
    assert assistant_turn(s.calls, style="openai-responses") == [
        {"type": "custom_tool_call", "call_id": "call_sql", "name": "run_sql", "input": INPUT},
        {"type": "function_call", "call_id": "call_f", "name": "lookup", "arguments": '{"q": 1}'},
    ]


def test_custom_tool_call_text_that_reads_as_json_is_not_run(sse_server: SSEServer) -> None:
    # A custom tool named like a function tool, whose free text happens to be a valid object
    # for that tool's schema, still must not run as that tool's JSON arguments.
    text = '{"q": 1}'
    events = [_CREATED, *_custom_events(text), _COMPLETED]
    for event in events:
        if "item" in event:
            event["item"]["name"] = "lookup"
    _, s = assemble_both(sse_server.register(_body(events)), FMT, tools=TOOLS)
    (call,) = s.calls
    assert (call.arguments, call.value, call.type) == (text, None, "custom")
    assert call.error is not None and call.error.kind == "free_form_call"
    assert not s.outcomes[0].ok


def test_an_empty_custom_input_is_kept_empty(sse_server: SSEServer) -> None:
    events = [_CREATED, *_custom_events(""), _COMPLETED]
    _, s = assemble_both(sse_server.register(_body(events)), FMT)
    (call,) = s.calls
    assert (call.arguments, call.warnings) == ("", [])
    assert call.error is not None and call.error.kind == "free_form_call"


def test_a_custom_tool_call_whose_added_was_lost_is_kept(sse_server: SSEServer, split: str) -> None:
    # The input events open it without a name; the finished item names it.
    events = [_CREATED, *_custom_events(INPUT)[1:], _COMPLETED]
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert (call.name, call.id, call.type, call.arguments) == (
        "run_sql",
        "call_sql",
        "custom",
        INPUT,
    )
    assert call.error is not None and call.error.kind == "free_form_call"


def test_a_custom_tool_call_only_in_the_finished_response_is_read(sse_server: SSEServer) -> None:
    # A bridge that lists its items only in `response.completed`'s `output`.
    output = [{"type": "message", "id": "m", "content": []}, _custom_item(INPUT)]
    completed = {
        "type": "response.completed",
        "response": {"id": "r", "status": "completed", "output": output},
    }
    _, s = assemble_both(sse_server.register(_body([_CREATED, completed])), FMT)
    (call,) = s.calls
    assert (call.index, call.name, call.id, call.arguments) == (1, "run_sql", "call_sql", INPUT)
    assert call.error is not None and call.error.kind == "free_form_call"


def test_a_custom_tool_call_cut_off_before_its_input_is_truncated(sse_server: SSEServer) -> None:
    events = [_CREATED, *_custom_events(INPUT)[:3]]
    body = _body(events)
    _, s = assemble_both(sse_server.register(body, drop_after=len(body)), FMT)
    (call,) = s.calls
    assert (call.name, call.type) == ("run_sql", "custom")
    assert call.error is not None and call.error.kind == "truncated"


def test_custom_input_past_max_bytes_is_too_large() -> None:
    asm = Assembler(max_bytes=8)
    asm.feed_sse(_body([_CREATED, *_custom_events("0123456789abc"), _COMPLETED]))
    (call,) = asm.finish()
    assert call.error is not None and call.error.kind == "too_large"
    assert call.arguments == "01234567"


def test_a_recorded_custom_tool_call_replays_as_one(tmp_path: Path) -> None:
    # Recorded without its type, the free text replayed as JSON arguments: `invalid_json`.
    from toolwire.recorder import Recorder
    from toolwire.replay import load_corpus, replay

    asm = Assembler()
    asm.feed_sse(_body([_CREATED, *_custom_events(INPUT), _COMPLETED]))
    (call,) = asm.finish()
    recorder = Recorder(tmp_path / "corpus.jsonl")
    assert recorder.record_call(call, format=FMT)
    (case,) = replay(load_corpus([tmp_path / "corpus.jsonl"])).cases
    (replayed,) = case.calls
    assert replayed.code == "free_form_call"
    (entry,) = load_corpus([tmp_path / "corpus.jsonl"])
    assert (entry.call_type, entry.arguments, entry.call_id) == ("custom", INPUT, "call_sql")


def _key(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (c.index, c.name, c.id, c.type, c.arguments, c.value, c.error.kind if c.error else None)
        for c in calls
    ]


# Surrogates included, which `st.text` leaves out by default.
_ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=_ANY_TEXT, size=st.integers(1, 8), data=st.data())
def test_property_custom_input_split_anywhere_reads_alike(
    sse_server: SSEServer, text: str, size: int, data: st.DataObject
) -> None:
    # Any input (lone surrogates included), cut into any deltas, the body split anywhere: the
    # real SDK, SDK-shaped dicts and `feed_sse` give the same calls, the input kept as sent.
    events = [_CREATED, *_custom_events(text, size=size), *_function_events(1), _COMPLETED]
    body = _body(events)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body)), max_size=12))))
    _, stream = assemble_sync(sse_server.register(body, split=[*cuts, len(body)]), FMT)
    raw = Assembler()
    for piece in pieces(body, cuts):
        raw.feed_sse(piece)
    dicts = Assembler()
    for event in [json.loads(line[6:]) for line in body.decode().splitlines()[1::3]]:
        dicts.feed_chunk(event)
    calls = raw.finish()
    assert _key(stream.calls) == _key(calls) == _key(dicts.finish())
    # A pair of halves is its character; a half alone, which UTF-8 cannot hold, is U+FFFD.
    kept = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    assert (calls[0].type, calls[0].arguments) == ("custom", kept)
    assert ("replacement_character" in calls[0].warnings) == ("\ufffd" in kept)
