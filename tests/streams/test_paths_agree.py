"""Streams on which the SDK path (`assemble` over the real client, and `feed_chunk` with the
same events as dicts) and `feed_sse` once disagreed: each must give the same calls on every
path, and no call may run with arguments other than those the provider sent, vanish, or appear
without an id and a name.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import agree_on_every_path, assemble_both, assemble_sync, raw_key
from .conftest import SSEServer
from .streamkit import (
    Call,
    anthropic_stream,
    chat_chunk,
    chat_stream,
    gemini_call,
    gemini_chunk,
    json_text,
    responses_stream,
    sse_body,
    tool_delta,
)


def _dicts(events: list[dict[str, Any]]) -> list[Any]:
    """`feed_chunk` with the events as dicts: the calls it gives."""
    assembler = Assembler()
    for event in events:
        assembler.feed_chunk(event)
    return assembler.finish()


def _raw_errors(events: list[dict[str, Any]], fmt: str) -> list[str]:
    """The kinds of stream error `feed_sse` tells of the events' body."""
    assembler = Assembler()
    assembler.feed_sse(sse_body(events, fmt))
    assembler.finish()
    return [kind for kind, _, _ in assembler.stream_errors()]


def _agree(sse_server: SSEServer, events: list[dict[str, Any]], fmt: str) -> Any:
    route = sse_server.register_events(events, fmt, split="adversarial")
    _, stream = assemble_both(route, fmt)
    assert raw_key(_dicts(events)) == raw_key(stream.calls)
    return stream


@pytest.mark.parametrize("where", ["done", "item"])
@pytest.mark.parametrize("summary", [7, [], [1, 2], True])
def test_a_summary_that_is_no_string_is_an_item_s_arguments(
    sse_server: SSEServer, where: str, summary: Any
) -> None:
    # A bridge that got no deltas for an item and sends its summary as a value: that value is
    # all the provider said of the arguments. It is no object, so the call fails; it must not
    # run as `{}` on the raw path.
    events = responses_stream([Call("f", "", "c1")])
    for event in events:
        if where == "done" and event["type"] == "response.function_call_arguments.done":
            event["arguments"] = summary
        if where == "item" and event["type"] == "response.output_item.done":
            event["item"]["arguments"] = summary
    stream = _agree(sse_server, events, "openai-responses")
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "not_object"


def test_an_object_summary_of_an_item_without_deltas_is_its_value(
    sse_server: SSEServer,
) -> None:
    events = responses_stream([Call("f", "", "c1")])
    for event in events:
        if event["type"] == "response.function_call_arguments.done":
            event["arguments"] = {"city": "東京"}
    stream = _agree(sse_server, events, "openai-responses")
    (call,) = stream.calls
    assert call.ok and call.value == {"city": "東京"}


@pytest.mark.parametrize("field", ["type", "id", "name"])
@pytest.mark.parametrize("bad", [True, 5, ["tool_use"], {"x": 1}])
def test_a_block_start_with_a_field_of_the_wrong_type_keeps_its_fragments(
    sse_server: SSEServer, field: str, bad: Any
) -> None:
    # The raw path cannot read such a start and keeps the block's fragments as those of a
    # block whose start was lost (the call fails, `missing_name`); the SDK's objects carry the
    # field as sent, and a block whose `type` is no `"tool_use"` would drop them unsaid.
    events = anthropic_stream([Call("f", '{"a":1}', "t1"), Call("g", '{"b":2}', "t2")])
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["id"] == "t1":
            event["content_block"][field] = bad
    stream = _agree(sse_server, events, "anthropic")
    first, second = stream.calls
    assert first.error is not None and first.error.kind == "missing_name"
    assert first.arguments == '{"a":1}'
    assert second.ok and second.value == {"b": 2}
    assert [e[0] for e in stream.assembler.stream_errors()] == ["malformed_event"]


@pytest.mark.parametrize("bad", [None, "missing"])
def test_a_block_start_of_no_type_keeps_its_fragments(sse_server: SSEServer, bad: Any) -> None:
    # A block of no kind (`type` null or left out) is no block the stream can read: its
    # fragments are kept as those of a block whose start was lost, and the stream says what it
    # could not read. Read as another kind of block, its call vanished without a word.
    events = anthropic_stream([Call("f", '{"a":1}', "t1"), Call("g", '{"b":2}', "t2")])
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["id"] == "t1":
            if bad == "missing":
                del event["content_block"]["type"]
            else:
                event["content_block"]["type"] = bad
    stream = _agree(sse_server, events, "anthropic")
    first, second = stream.calls
    assert first.error is not None and first.error.kind == "missing_name"
    assert first.arguments == '{"a":1}'
    assert second.ok and second.value == {"b": 2}
    assert [e[0] for e in stream.assembler.stream_errors()] == ["malformed_event"]


@pytest.mark.parametrize("kind", ["text_delta", "no_such_delta"])
def test_the_index_of_any_delta_places_a_later_block_start_without_one(
    sse_server: SSEServer, kind: str
) -> None:
    # A translator numbered its blocks with gaps and left one start without an index: it
    # takes the next one after the highest the stream gave. `feed_sse` counted the index of
    # a text delta (or any delta) and `feed_chunk` did not, so there the tool block's start
    # and its fragments went to two blocks: a call cut off and one without a name.
    delta = {"type": kind, "text": "Hi"} if kind == "text_delta" else {"type": kind}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 7, "delta": delta},
        {
            "type": "content_block_start",
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 8,
            "delta": {"type": "input_json_delta", "partial_json": '{"a":1}'},
        },
        {"type": "content_block_stop", "index": 8},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    stream = _agree(sse_server, events, "anthropic")
    (call,) = stream.calls
    assert call.ok and call.index == 8 and call.value == {"a": 1}


def test_a_malformed_block_after_a_block_without_input_ends_that_call(
    sse_server: SSEServer,
) -> None:
    # A tool block that stopped with no input waits for the next event to say whether the
    # message went on. A block start whose fields do not read still says so: the call without
    # parameters runs, on every path, rather than being lost with the unreadable event.
    events = anthropic_stream([Call("ping", "", "t1"), Call("g", '{"b":2}', "t2")])
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["id"] == "t2":
            event["content_block"]["id"] = True
    stream = _agree(sse_server, events, "anthropic")
    first, second = stream.calls
    assert first.ok and first.value == {} and first.name == "ping"
    assert second.error is not None and second.error.kind == "missing_name"


def _late_responses(late: list[str]) -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    done = {**item, "arguments": '{"e😀": 1}', "status": "completed"}
    response = {"id": "r", "object": "response", "created_at": 1, "model": "m", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": "", "status": "in_progress"},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
    ]
    events += [
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": text,
        }
        for text in late
    ]
    events.append(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done]},
        }
    )
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


def _late_anthropic(late: list[str]) -> list[dict[str, Any]]:
    events = anthropic_stream([Call("f", '{"e😀": 1}', "t1")])
    stop = max(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    deltas = [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": text},
        }
        for text in late
    ]
    return events[: stop + 1] + deltas + events[stop + 1 :]


@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic"])
@pytest.mark.parametrize(
    "late", [['{"e\ud83d', '\ude00": 1}'], ["\ud83d"], ['{"e\ud83d', "\ud83d\ude00"]]
)
def test_a_late_fragment_that_ends_in_half_a_pair_starts_no_call(
    sse_server: SSEServer, fmt: str, late: list[str]
) -> None:
    # Text after the provider ended the call never starts a call of its own, also when its
    # fragment ends in the first half of a surrogate pair, held for the next fragment.
    events = _late_responses(late) if fmt == "openai-responses" else _late_anthropic(late)
    stream = _agree(sse_server, events, fmt)
    (call,) = stream.calls
    assert call.ok and call.value == {"e😀": 1}
    assert call.warnings == ["late_fragment_dropped"]


@pytest.mark.parametrize(
    ("fmt", "field"),
    [
        ("anthropic", "name"),
        ("anthropic", "id"),
        ("openai-responses", "name"),
        ("openai-responses", "call_id"),
    ],
)
def test_a_lone_surrogate_in_a_name_or_id_is_read_as_the_sdk_reads_it(
    sse_server: SSEServer, fmt: str, field: str
) -> None:
    # The escape of half a surrogate pair, which serde refuses as a string, made the raw path
    # skip the event that started the second call: that call lost its name and id, and on
    # Responses the first call, whole and valid, was refused `lost_event` with it. Chat and the
    # SDK objects read the escape as U+FFFD.
    calls = [Call("f", '{"a":1}', "t1"), Call("g", '{"b":2}', "t2")]
    if fmt == "anthropic":
        events = anthropic_stream(calls)
        starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    else:
        events = responses_stream(calls, interleave=True)
        starts = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    starts[1][field] += "\ud800"
    stream = _agree(sse_server, events, fmt)
    first, second = stream.calls
    assert first.ok and first.value == {"a": 1}
    assert second.ok and second.value == {"b": 2}
    assert (second.name, second.id) == (("g\ufffd", "t2") if field == "name" else ("g", "t2\ufffd"))
    assert _raw_errors(events, fmt) == []


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses"])
def test_a_lone_surrogate_in_a_stop_reason_keeps_the_finish_reason(
    sse_server: SSEServer, fmt: str
) -> None:
    # The reason was lost with the event that carried it (and the stream read as cut off),
    # where Chat's `finish_reason` and the SDK objects keep it, U+FFFD for the half.
    if fmt == "anthropic":
        events = anthropic_stream([Call("f", '{"a":1}', "t1")], stop_reason="max_tokens\ud800")
    else:
        events = responses_stream(
            [Call("f", '{"a":1}', "t1")],
            status="incomplete",
            incomplete_reason="max_output_tokens\ud800",
        )
    stream = _agree(sse_server, events, fmt)
    assert stream.finish_reason is not None and stream.finish_reason.endswith("\ufffd")
    assert _raw_errors(events, fmt) == []


def _decoy(value: Any) -> Any:
    """A value of the same JSON type that differs from `value`."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7
    if isinstance(value, str):
        return value + "-decoy"
    if isinstance(value, list):
        return []
    if isinstance(value, dict):
        return {}
    return "decoy"


def _with_repeats(value: Any, skip: frozenset[str], decoys: Any = _decoy) -> str:
    """Compact JSON in which every member of every object comes twice: a decoy first, then the
    real value, which `json.loads` keeps. Members named in `skip` are written once, untouched
    (a call's arguments object: its own repeated keys are the `duplicate_keys` policy's)."""
    if isinstance(value, dict):
        members: list[str] = []
        for k, v in value.items():
            key = json_text(k)
            if k in skip:
                members.append(f"{key}:{json_text(v)}")
                continue
            members.append(f"{key}:{json_text(decoys(v))}")
            members.append(f"{key}:{_with_repeats(v, skip, decoys)}")
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_with_repeats(v, skip, decoys) for v in value) + "]"
    return json_text(value)


def _repeated_body(events: list[dict[str, Any]], fmt: str, decoys: Any = _decoy) -> bytes:
    out: list[str] = []
    for event in events:
        data = _with_repeats(event, frozenset({"args", "input"}), decoys)
        assert json.loads(data) == event
        name = "" if fmt in ("openai-chat", "gemini") else f"event: {event['type']}\n"
        out.append(f"{name}data: {data}\n\n")
    if fmt == "openai-chat":
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def _repeats_stream(fmt: str) -> list[dict[str, Any]]:
    calls = [Call("get_weather", '{"city":"Paris"}', "c1"), Call("f", '{"a":[1,2]}', "c2")]
    if fmt == "openai-chat":
        return chat_stream(calls, text="Sure.", usage={"prompt_tokens": 3, "completion_tokens": 9})
    if fmt == "openai-responses":
        return responses_stream(calls, text="Sure.")
    if fmt == "anthropic":
        return anthropic_stream(calls, text="Sure.")
    return [
        gemini_chunk({"text": "Sure."}),
        gemini_chunk(gemini_call("get_weather", {"city": "Paris"}, id="c1")),
        gemini_chunk(
            gemini_call("f", {"a": [1, 2]}, id="c2"),
            finish="STOP",
            usage={"promptTokenCount": 3, "candidatesTokenCount": 9},
        ),
    ]


def _null_decoy(value: Any) -> Any:
    """`null` for every value."""
    return None


def _crossed_decoy(value: Any) -> Any:
    """A value of another JSON type: an array for an object, an object for an array, a number
    for a string, a string for a number, an array for a boolean, an object for `null`."""
    if isinstance(value, dict):
        return [1, {"a": None}]
    if isinstance(value, list):
        return {"x": [value[:1]]}
    if isinstance(value, bool):
        return [value]
    if isinstance(value, str):
        return -1.5e3
    if isinstance(value, (int, float)):
        return str(value)
    return {}


@pytest.mark.parametrize("decoys", [_decoy, _null_decoy, _crossed_decoy])
@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_repeated_members_of_an_event_keep_their_last_value(
    sse_server: SSEServer, fmt: str, decoys: Any
) -> None:
    # The SDKs decode each event with `json.loads`, which keeps the last value of a repeated
    # key. `feed_sse` skipped every such event as malformed (serde refuses a repeated field),
    # and the calls in it were lost. Every member of every envelope object comes twice here,
    # a decoy first: of the same type, `null`, or of another type. An earlier `"delta": null`
    # or `"tool_calls": {...}` in a Chat chunk (members read as they come, on the hot path)
    # made the chunk malformed where the SDK read it.
    events = _repeats_stream(fmt)
    body = _repeated_body(events, fmt, decoys)
    route = sse_server.register(body, split="adversarial")
    _, stream = assemble_both(route, fmt)
    assert [(c.name, c.id, c.value) for c in stream.calls] == [
        ("get_weather", "c1", {"city": "Paris"}),
        ("f", "c2", {"a": [1, 2]}),
    ]
    assert all(c.ok for c in stream.calls)
    raw = Assembler()
    raw.feed_sse(body)
    assert raw.stream_errors() == []
    assert raw_key(raw.finish()) == raw_key(stream.calls)


def _with_unpaired_name(value: Any, skip: frozenset[str]) -> Any:
    """`value` with a member whose name holds an unpaired surrogate half added to every object
    but those named in `skip` and what they hold."""
    if isinstance(value, dict):
        out = {k: v if k in skip else _with_unpaired_name(v, skip) for k, v in value.items()}
        return {"x\ud800": 1, **out}
    if isinstance(value, list):
        return [_with_unpaired_name(v, skip) for v in value]
    return value


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_a_name_with_an_unpaired_surrogate_keeps_its_event(sse_server: SSEServer, fmt: str) -> None:
    # `json.loads` takes a name such as `"x\ud800"`, and the SDKs read the event; serde_json
    # refuses it wherever the raw path reads an object's names, and the event was skipped as
    # malformed, every fragment in it lost. In a Chat chunk it comes in every object here (a
    # tool-call entry's is its call's metadata, its key with U+FFFD, as `feed_chunk` sets it);
    # in the other formats' events, in the event's own members.
    events = _repeats_stream(fmt)
    if fmt == "openai-chat":
        events = [_with_unpaired_name(e, frozenset({"usage"})) for e in events]
    else:
        events = [{"x\ud800": 1, **e} for e in events]
    stream = _agree(sse_server, events, fmt)
    assert [(c.name, c.id, c.value, c.ok) for c in stream.calls] == [
        ("get_weather", "c1", {"city": "Paris"}, True),
        ("f", "c2", {"a": [1, 2]}, True),
    ]
    assert _raw_errors(events, fmt) == []
    raw = Assembler()
    raw.feed_sse(sse_body(events, fmt))
    calls = raw.finish()
    assert [c.metadata for c in calls] == [c.metadata for c in _dicts(events)]
    if fmt == "openai-chat":
        assert all(c.metadata == {"x\ufffd": 1} for c in calls)


@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic"])
def test_a_name_with_an_unpaired_surrogate_in_a_nested_object_keeps_its_event(
    sse_server: SSEServer, fmt: str
) -> None:
    # The objects the raw path reads in a second pass (a Responses `item` and `response`, an
    # Anthropic `message`, `content_block` and `delta`) were refused whole for such a name, and
    # their event skipped as malformed: a call lost its name and id, or all of it.
    events = [_with_unpaired_name(e, frozenset({"usage", "input"})) for e in _repeats_stream(fmt)]
    stream = _agree(sse_server, events, fmt)
    assert [(c.name, c.id, c.value, c.ok) for c in stream.calls] == [
        ("get_weather", "c1", {"city": "Paris"}, True),
        ("f", "c2", {"a": [1, 2]}, True),
    ]
    assert _raw_errors(events, fmt) == []


_LONE = "x\ud800"


def _lone(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` with a member whose name holds an unpaired surrogate half first."""
    return {_LONE: 1, **obj}


def _gemini_candidate(*parts: dict[str, Any], **members: Any) -> dict[str, Any]:
    return {"content": {"role": "model", "parts": list(parts)}, **members}


_CALL = gemini_call("f", {"a": 1}, id="c1")
_STREAMED = gemini_call("f", id="c1", willContinue=True)
_DONE = gemini_chunk({"text": "ok"}, finish="STOP")
# Where a Gemini chunk holds an object, the name in it, and what every path reads: calls as
# (name, id, arguments, error kind), the finish reason and the usage.
_GEMINI_PLACES: dict[str, tuple[list[dict[str, Any]], list[tuple[Any, ...]], Any, Any]] = {
    "candidate": (
        [{"candidates": [_lone(_gemini_candidate(_CALL, finishReason="STOP"))]}],
        [("f", "c1", '{"a":1}', None)],
        "STOP",
        None,
    ),
    "content": (
        [{"candidates": [{"content": _lone({"parts": [_CALL]}), "finishReason": "STOP"}]}],
        [("f", "c1", '{"a":1}', None)],
        "STOP",
        None,
    ),
    "part": (
        [gemini_chunk(_lone(_CALL), finish="STOP")],
        [("f", "c1", '{"a":1}', None)],
        "STOP",
        None,
    ),
    "functionCall": (
        [gemini_chunk({"functionCall": _lone(_CALL["functionCall"])}, finish="STOP")],
        [("f", "c1", '{"a":1}', None)],
        "STOP",
        None,
    ),
    "partialArgs piece": (
        [
            gemini_chunk(_STREAMED),
            gemini_chunk(
                gemini_call(
                    partialArgs=[
                        {"jsonPath": "$.a", "stringValue": "hel", "willContinue": True},
                        _lone({"jsonPath": "$.a", "stringValue": "lo"}),
                    ]
                )
            ),
            _DONE,
        ],
        [("f", "c1", '{"a":"hello"}', None)],
        "STOP",
        None,
    ),
    # Named like a value of a kind no reader holds: it breaks the call, as the adapter reads it.
    "partialArgs piece's value": (
        [
            gemini_chunk(_STREAMED),
            gemini_chunk(
                gemini_call(
                    partialArgs=[
                        {"jsonPath": "$.a", "stringValue": "hel"},
                        {"jsonPath": "$.b", f"{_LONE}Value": [1]},
                    ]
                )
            ),
            _DONE,
        ],
        [("f", "c1", '{"a":"hel"}', "mixed_arguments")],
        "STOP",
        None,
    ),
    "promptFeedback": (
        [gemini_chunk(_CALL), {"promptFeedback": _lone({"blockReason": "SAFETY"})}],
        [("f", "c1", '{"a":1}', "filtered")],
        "SAFETY",
        None,
    ),
    # Respelled in the REST spelling, as the adapter respells a snake_case dict.
    "usageMetadata": (
        [gemini_chunk(_CALL, finish="STOP", usage=_lone({"prompt_token_count": 3}))],
        [("f", "c1", '{"a":1}', None)],
        "STOP",
        {"x\ufffd": 1, "promptTokenCount": 3},
    ),
}


@pytest.mark.parametrize("place", list(_GEMINI_PLACES))
def test_a_name_with_an_unpaired_surrogate_deep_in_a_gemini_chunk_keeps_its_chunk(
    place: str,
) -> None:
    # The raw path reads a chunk's candidates, their content, parts, calls and pieces, and its
    # prompt feedback, each on its own after the chunk: such a name in one was refused, and the
    # chunk skipped as malformed (its call lost, or a block reason and its stop). In usage with
    # snake_case names, those names were left unspelled.
    events, calls, reason, usage = _GEMINI_PLACES[place]
    read, finish, merged, reasoning, errors = agree_on_every_path(events, "gemini")
    assert [c[:4] for c in read] == calls
    assert (finish, merged, reasoning, errors) == (reason, usage, [], [])


def test_a_gemini_chunk_the_body_ends_inside_reads_with_an_unpaired_name() -> None:
    # google-genai reads the data gathered for an event where a clean body ends, and so does
    # the raw path for a Gemini chunk: one with such a name was not seen as Gemini's there, and
    # its call was lost.
    events = [
        gemini_chunk(gemini_call("get_weather", {"city": "Paris"}, id="c1")),
        _lone(gemini_chunk(gemini_call("f", {"a": [1, 2]}, id="c2"), finish="STOP")),
    ]
    body = sse_body(events, "gemini").removesuffix(b"\n\n")
    read, finish, _, _, errors = agree_on_every_path(events, "gemini", body)
    assert [c[:4] for c in read] == [
        ("get_weather", "c1", '{"city":"Paris"}', None),
        ("f", "c2", '{"a":[1,2]}', None),
    ]
    assert (finish, errors) == ("STOP", [])


def _finished_only(calls: list[Call], **shape: Any) -> list[dict[str, Any]]:
    """A Responses stream of `calls` as a bridge that sends only the finished response."""
    events = responses_stream(calls, **shape)
    return [events[0], events[-1]]


def test_a_call_with_an_unpaired_name_only_in_the_finished_response_is_read() -> None:
    # A bridge that sends the calls only in the finished response's `output`: such a name in
    # the item was refused, and the call told as an unreadable item and lost.
    events = _finished_only([Call("f", '{"a":1}', "c1"), Call("g", "{}", "c2")])
    output = events[-1]["response"]["output"]
    output[:] = [_lone(item) for item in output]
    read, finish, _, _, errors = agree_on_every_path(events, "openai-responses")
    assert [c[:4] for c in read] == [("f", "c1", '{"a":1}', None), ("g", "c2", "{}", None)]
    assert (finish, errors) == ("completed", [])


def test_why_a_response_is_incomplete_is_read_with_an_unpaired_name() -> None:
    # Such a name in `incomplete_details` made the raw path drop the object, and the reason
    # with it: the stream's finish reason was `incomplete`, not the output limit.
    events = responses_stream(
        [Call("f", '{"a":', "c1")], status="incomplete", incomplete_reason="max_output_tokens"
    )
    response = events[-1]["response"]
    response["incomplete_details"] = _lone(response["incomplete_details"])
    read, finish, _, _, errors = agree_on_every_path(events, "openai-responses")
    assert [c[:4] for c in read] == [("f", "c1", '{"a":', "truncated")]
    assert (finish, errors) == ("max_output_tokens", [])


def _legacy_chat_stream() -> list[dict[str, Any]]:
    return [
        chat_chunk({"role": "assistant", "function_call": {"name": "f", "arguments": ""}}),
        chat_chunk({"function_call": {"arguments": '{"a":'}}),
        chat_chunk({"function_call": {"arguments": "[1,2]}"}}),
        chat_chunk({}, finish_reason="function_call"),
    ]


def _custom_chat_stream() -> list[dict[str, Any]]:
    def custom(**members: Any) -> dict[str, Any]:
        return tool_delta(
            {"index": 0, "type": "custom", "custom": members}
            | ({"id": "c1"} if "name" in members else {})
        )

    return [
        chat_chunk(custom(name="f", input="")),
        chat_chunk(custom(input="hel")),
        chat_chunk(custom(input="lo")),
        chat_chunk({}, finish_reason="tool_calls"),
    ]


@pytest.mark.parametrize("shape", ["legacy", "custom"])
def test_a_chat_call_object_with_a_name_with_an_unpaired_surrogate_is_read(
    sse_server: SSEServer, shape: str
) -> None:
    # A legacy `function_call` with such a name was refused and its chunk skipped; a `custom`
    # object was read as a custom call with no name and no input, and no error said so.
    plain = _legacy_chat_stream() if shape == "legacy" else _custom_chat_stream()
    events = [_with_unpaired_name(e, frozenset()) for e in plain]
    stream = _agree(sse_server, events, "openai-chat")
    assert raw_key(stream.calls) == raw_key(_dicts(plain))
    assert [(c.name, c.arguments) for c in stream.calls] == [
        ("f", '{"a":[1,2]}' if shape == "legacy" else "hello")
    ]
    assert _raw_errors(events, "openai-chat") == []


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_usage_with_a_name_with_an_unpaired_surrogate_does_not_end_the_sdk_stream(
    sse_server: SSEServer, fmt: str
) -> None:
    # pydantic cannot write such a name of an SDK usage model (`model_dump` raised
    # UnicodeEncodeError), and the stream ended there, every call lost. The raw path's
    # serde_json refuses it, and dropped the whole usage: every path has U+FFFD in its place.
    events = _repeats_stream(fmt)
    for event in events:
        for holder in (event, event.get("response"), event.get("message")):
            if isinstance(holder, dict) and isinstance(holder.get("usage"), dict):
                holder["usage"] = {"x\ud800": {"y\udc00": "\udc00"}, **holder["usage"]}
    route = sse_server.register_events(events, fmt)
    _, stream = assemble_sync(route, fmt)
    assert [(c.name, c.value, c.ok) for c in stream.calls] == [
        ("get_weather", {"city": "Paris"}, True),
        ("f", {"a": [1, 2]}, True),
    ]
    assert stream.usage is not None and stream.usage["x\ufffd"] == {"y\ufffd": "\ufffd"}
    raw = Assembler()
    raw.feed_sse(route.body)
    raw.finish()
    assert raw.usage == stream.usage
    chunks = Assembler()
    told = [u for e in events if (u := chunks.feed_chunk(e).usage) is not None]
    assert told[-1] == stream.usage


def _untyped_decoy(value: Any) -> Any:
    """A decoy of another JSON type for strings and numbers (which the raw path reads from the
    last value only), a same-typed one for arrays and objects."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    return _decoy(value)


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_a_repeated_member_s_earlier_value_of_another_type_is_dropped(fmt: str) -> None:
    # Python drops an earlier value unread, whatever its type: an earlier `"type": ["x"]` or
    # `"index": ["0"]` must not make the event unreadable either.
    events = _repeats_stream(fmt)
    body = _repeated_body(events, fmt, _untyped_decoy)
    raw = Assembler()
    raw.feed_sse(body)
    calls = raw.finish()
    assert raw.stream_errors() == []
    assert [(c.name, c.id, c.value, c.ok) for c in calls] == [
        ("get_weather", "c1", {"city": "Paris"}, True),
        ("f", "c2", {"a": [1, 2]}, True),
    ]


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("response.completed", "incomplete"),
        ("response.completed", "failed"),
        ("response.failed", "completed"),
        ("response.incomplete", "completed"),
        ("response.cancelled", "completed"),
    ],
)
def test_the_final_event_s_type_says_how_a_response_ended(
    sse_server: SSEServer, kind: str, status: str
) -> None:
    # The SDK path reads the event's type; `feed_sse` read the `status` of its `response`
    # where they disagreed: it ran the calls of a `response.failed`, or stopped those of a
    # `response.completed`, that the other path did not.
    events = responses_stream([Call("f", '{"a":1}', "c1")])
    final = events[-1]
    final["type"] = kind
    final["response"]["status"] = status
    if kind == "response.incomplete":
        final["response"]["incomplete_details"] = {"reason": "content_filter"}
    stream = _agree(sse_server, events, "openai-responses")
    raw = Assembler()
    raw.feed_sse(sse_body(events, "openai-responses"))
    calls = raw.finish()
    assert raw.finish_reason == stream.finish_reason == _ENDED_AS[kind]
    # The call had ended before: it is whole on every path, whatever came after it.
    assert [c.ok for c in calls] == [c.ok for c in stream.calls] == [True]


_ENDED_AS = {
    "response.completed": "completed",
    "response.failed": "failed",
    "response.incomplete": "content_filter",
    "response.cancelled": "cancelled",
}


@pytest.mark.parametrize("kind", ["response.failed", "response.cancelled"])
@pytest.mark.parametrize(
    "response",
    ["failed", -1, [], True, {"output": -1}, {"incomplete_details": "max_output_tokens"}],
)
def test_a_final_event_whose_response_is_no_object_still_stops_the_open_call(
    sse_server: SSEServer, kind: str, response: Any
) -> None:
    # A bridge that writes the final event's `response`, or a member of it, as some other
    # JSON value: the SDK path reads the event by its type and stops the call the server had
    # not finished, while `feed_sse` refused the whole event as malformed and ran that call.
    events = responses_stream([Call("f", '{"a": 1}', "c1")])
    events = [
        e
        for e in events
        if e["type"] not in ("response.function_call_arguments.done", "response.output_item.done")
    ]
    events[-1] = {**events[-1], "type": kind, "response": response}
    stream = _agree(sse_server, events, "openai-responses")
    raw = Assembler()
    raw.feed_sse(sse_body(events, "openai-responses"))
    calls = raw.finish()
    assert raw.finish_reason == stream.finish_reason == _ENDED_AS[kind]
    assert [c.error.kind if c.error else None for c in calls] == ["filtered"]


def _choice(index: int, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "finish_reason": finish_reason}


def _other_choices_stream() -> list[dict[str, Any]]:
    """An `n > 1` stream: choice 0 calls `f`; choice 2 answers in text, choice 1 calls `g`;
    every choice opens with an empty delta, which carries nothing."""
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f"}}
    other = {"index": 0, "id": "c2", "type": "function", "function": {"name": "g"}}
    return [
        chat_chunk(choices=[_choice(i, {"role": "assistant", "content": ""}) for i in range(3)]),
        chat_chunk(choices=[_choice(0, {"tool_calls": [call]})]),
        chat_chunk(choices=[_choice(2, {"content": "Hello"})]),
        chat_chunk(choices=[_choice(1, {"tool_calls": [other]})]),
        chat_chunk(
            choices=[_choice(0, {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})]
        ),
        chat_chunk(
            choices=[_choice(1, {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})]
        ),
        chat_chunk(choices=[_choice(i, {}, "tool_calls" if i != 2 else "stop") for i in range(3)]),
    ]


def test_the_choices_not_assembled_are_told_alike_on_every_path(sse_server: SSEServer) -> None:
    # Only choice 0 is assembled; the text and calls of choices 1 and 2 were dropped with no
    # word on any path, so nothing told a gateway that asked for `n > 1` what it lost.
    events = _other_choices_stream()
    route = sse_server.register_events(events, "openai-chat", split="adversarial")
    _, stream = assemble_both(route, "openai-chat")
    assert [c.name for c in stream.calls] == ["f"]
    told = [
        (
            "other_choice",
            3,
            "2 choices (the lowest 1) carried text or tool calls that were not assembled: only "
            "choice 0 is",
        )
    ]
    assert stream.assembler.stream_errors() == told
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    dicts.finish()
    assert dicts.stream_errors() == told
    body = sse_body(events, "openai-chat")
    for parts in ([body], [body[i : i + 1] for i in range(len(body))]):
        raw = Assembler()
        for part in parts:
            raw.feed_sse(part)
        raw.finish()
        assert raw.stream_errors() == told


def test_one_other_choice_is_named_and_empty_ones_are_not_told(sse_server: SSEServer) -> None:
    events = _other_choices_stream()
    # Choice 2's text gone: only choice 1 carried something.
    del events[2]
    route = sse_server.register_events(events, "openai-chat", split="adversarial")
    _, stream = assemble_both(route, "openai-chat")
    told = [
        (
            "other_choice",
            3,
            "choice 1 carried text or tool calls that were not assembled: only choice 0 is",
        )
    ]
    assert stream.assembler.stream_errors() == told
    assert _raw_errors(events, "openai-chat") == ["other_choice"]
    # Without choice 1's calls, no other choice carried anything: nothing to tell.
    quiet = [e for e in events if e["choices"][0]["index"] != 1 or not e["choices"][0]["delta"]]
    assert _raw_errors(quiet, "openai-chat") == []
    assert _agree(sse_server, quiet, "openai-chat").assembler.stream_errors() == []


@pytest.mark.parametrize("kind", ["", "message_annotation", "response.created"])
def test_an_event_of_no_known_kind_says_nothing_of_a_block_without_input(
    sse_server: SSEServer, kind: str
) -> None:
    # A tool block that stopped with no input waits for the next event to say whether the
    # message went on; `max_tokens` then says it was cut. An event of a kind no Anthropic
    # stream has, between the two, is skipped by the raw path and says nothing either way:
    # read as the message going on, the call cut by the limit ran as `{}` on the SDK path.
    events = anthropic_stream([Call("ping", "", "t1")], stop_reason="max_tokens")
    stop = next(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    events.insert(stop + 1, {"type": kind, "note": 1})
    stream = _agree(sse_server, events, "anthropic")
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "truncated"
    assert call.value is None


@pytest.mark.parametrize("bad", [True, 5, "msg", [1]])
def test_a_message_start_whose_message_is_no_object_loses_the_open_call(
    sse_server: SSEServer, bad: Any
) -> None:
    # The raw path cannot read such an event, and an event it cannot read may have carried a
    # fragment of the open call: that call must not run, on the SDK path either.
    events = anthropic_stream([Call("f", '{"a": 1, "b": 2}', "t1")])
    first = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "content_block_delta" and e["delta"]["partial_json"]
    )
    events.insert(first + 1, {"type": "message_start", "message": bad})
    stream = _agree(sse_server, events, "anthropic")
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "lost_event"
    assert [e[0] for e in stream.assembler.stream_errors()] == ["malformed_event"]


@pytest.mark.parametrize(
    "bad", [1, None, {"type": "function_call", "id": "fc_x", "call_id": True, "name": "f"}]
)
def test_an_unreadable_item_of_a_finished_response_s_output_is_skipped_alike(
    sse_server: SSEServer, bad: Any
) -> None:
    # A bridge that lists the calls only in `response.completed`'s `output`: an item that is
    # no object, or whose `call_id` is no string, holds no part of another item. Every path
    # refused the whole event there, losing the finish reason and the calls after it; each
    # now skips that item alone and tells it as a malformed event.
    def item(n: int) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": "lookup",
            "arguments": json_text({"n": n}),
            "status": "completed",
        }

    response = {"id": "r", "object": "response", "created_at": 1, "model": "m"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [item(1), bad, item(2)]},
        },
    ]
    stream = _agree(sse_server, events, "openai-responses")
    assert [(c.id, c.ok) for c in stream.calls] == [("call_1", True), ("call_2", True)]
    assert [e[0] for e in stream.assembler.stream_errors()] == ["malformed_event"]
    assert _raw_errors(events, "openai-responses") == ["malformed_event"]
    assert stream.finish_reason == "completed"


def test_an_unreadable_item_event_keeps_its_sequence_number_on_both_paths() -> None:
    # The raw path reads an event's `sequence_number` before its item. Here an `added` whose
    # item does not read is numbered ahead of the events after it: numbers that go back mean
    # the producer numbers no events, and a delta sent twice under one number is then text
    # sent twice, not a repeat to drop. `feed_chunk` skipped the number with the item, and
    # dropped the delta the raw path kept.
    def delta(text: str, n: int) -> dict[str, Any]:
        return {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": text,
            "sequence_number": n,
        }

    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": ""}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 1, "item": 7, "sequence_number": 9},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": item,
            "sequence_number": 1,
        },
        delta('{"a": ', 2),
        delta('{"a": ', 2),
        delta("1}", 3),
    ]
    assembler = Assembler()
    for event in events:
        assembler.feed_chunk(event)
    chunk_calls = assembler.finish()
    raw = Assembler()
    raw.feed_sse(sse_body(events, "openai-responses"))
    raw_calls = raw.finish()
    assert raw_key(chunk_calls) == raw_key(raw_calls)
    assert [c.warnings for c in chunk_calls] == [c.warnings for c in raw_calls]


def test_an_unpaired_surrogate_in_an_item_id_is_replaced_on_every_path(
    sse_server: SSEServer,
) -> None:
    # A lone `\uXXXX` escape in an id is U+FFFD on the raw path; `feed_chunk` kept the half
    # in the call's `item_id` metadata, which then differed from the raw path's and cannot
    # be written as UTF-8.
    events = responses_stream([Call("f", '{"a": 1}', "c1")])
    for event in events:
        item = event.get("item")
        if isinstance(item, dict) and item.get("id") == "fc_0":
            item["id"] = "fc_\ud83d0"
        if event.get("item_id") == "fc_0":
            event["item_id"] = "fc_\ud83d0"
    stream = _agree(sse_server, events, "openai-responses")
    (call,) = stream.calls
    assert call.ok and call.metadata == {"item_id": "fc_\ufffd0"}
