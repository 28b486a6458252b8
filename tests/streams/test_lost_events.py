"""An event that cannot be read while a call is open: the call must not run.

A malformed event (not JSON, or cut short by a proxy) or one too large to read may have carried
a fragment of any open call. Skipping it and assembling the rest can still close the arguments
as valid JSON, with a field missing: a call that would run with data the model never chose.
The raw path marks every call whose arguments were still open as `lost_event` (the SDKs raise
at such an event, and their calls end cut off); a call already complete, or one that starts
after the loss, is untouched.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import Assembler, tool_messages
from toolwire.toolset import Toolset

from .clients import assemble_async, assemble_sync
from .conftest import SSEServer
from .streamkit import Call, before_the_end, sse_body, well_formed_stream

CALLS = [Call("get_weather", '{"city": "Oslo", "days": 3}'), Call("lookup", '{"q": [1, 2]}')]
GARBLED = {
    "openai-chat": b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"fun\n\n',
    "openai-responses": b'event: response.function_call_arguments.delta\ndata: {"type":"resp\n\n',
    "anthropic": b'event: content_block_delta\ndata: {"type":"content_block_delta","ind\n\n',
}


def _with_event(fmt: str, event: bytes) -> bytes:
    """The stream with `event` right after the first call's first fragment."""
    events = well_formed_stream(fmt, CALLS, size=4)
    body = sse_body(events, fmt)
    # The first event that carries argument text of the first call (its first fragment).
    first = next(i for i, e in enumerate(events) if '{"ci' in str(e))
    cut = len(sse_body(events[: first + 1], fmt).removesuffix(b"data: [DONE]\n\n"))
    return body[:cut] + event + body[cut:]


def _with_garbled_event(fmt: str) -> bytes:
    """The stream with an unreadable event right after the first call's first fragment."""
    return _with_event(fmt, GARBLED[fmt])


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_a_call_open_across_an_unreadable_event_does_not_run(fmt: str) -> None:
    body = _with_garbled_event(fmt)
    assembler = Assembler()
    assembler.feed_sse(body)
    assert assembler.failed, "known at once, before the stream ends"
    calls = assembler.finish()
    assert [c.name for c in calls] == ["get_weather", "lookup"]
    first, second = calls
    assert first.error is not None and first.error.kind == "lost_event"
    assert second.ok, "it started after the loss"
    assert [kind for kind, _, _ in assembler.stream_errors()] == ["malformed_event"]
    tools = Toolset(
        [
            {"name": "get_weather", "parameters": {"type": "object"}},
            {"name": "lookup", "parameters": {"type": "object"}},
        ]
    )
    outcome = tools.validate(first)
    assert not outcome.ok and outcome.error_type == "lost_event" and outcome.retryable
    assert outcome.message is not None and "not executed" in outcome.message
    messages = tool_messages(calls, [None, {"found": 1}])
    assert [m["tool_call_id"] for m in messages] == [c.id for c in calls]


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_the_sdk_path_does_not_run_it_either(sse_server: SSEServer, fmt: str) -> None:
    # The SDKs raise at an event they cannot parse: the stream ends there as a transport
    # error, and the call it interrupted comes back cut off, never runnable.
    body = _with_garbled_event(fmt)
    _, stream = assemble_sync(sse_server.register(body), fmt)
    assert stream.transport_error is not None
    assert stream.calls and stream.calls[0].name == "get_weather"
    assert not stream.calls[0].ok


def test_an_unreadable_event_between_calls_costs_nothing() -> None:
    fmt = "openai-chat"
    events = well_formed_stream(fmt, CALLS, size=64)
    head = before_the_end(events, fmt)
    body = sse_body(head, fmt).removesuffix(b"data: [DONE]\n\n")
    tail = sse_body([e for e in events if e not in head], fmt)
    assembler = Assembler()
    assembler.feed_sse(body + GARBLED[fmt] + tail)
    calls = assembler.finish()
    assert all(c.ok for c in calls), [c.error for c in calls]


NOT_AN_OBJECT = {
    "openai-chat": b"data: 123\n\n",
    "openai-responses": b"event: response.function_call_arguments.delta\ndata: 123\n\n",
    "anthropic": b"event: content_block_delta\ndata: 123\n\n",
}


def _first_call_fate(stream: Any) -> tuple[str | None, bool]:
    first = stream.calls[0]
    return first.name, first.ok


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_an_event_whose_data_is_not_an_object_loses_the_open_call_on_both_paths(
    sse_server: SSEServer, fmt: str
) -> None:
    # `data: 123` parses as JSON: the SDKs hand it on as the event, where the raw path reads a
    # malformed event. Either way the call it may have cut must not run.
    body = _with_event(fmt, NOT_AN_OBJECT[fmt])
    raw = Assembler()
    raw.feed_sse(body)
    raw_first = raw.finish()[0]
    assert raw_first.error is not None and raw_first.error.kind == "lost_event"
    _, stream = assemble_sync(sse_server.register(body), fmt)
    assert _first_call_fate(stream) == ("get_weather", False)
    assert stream.calls[0].error is not None and stream.calls[0].error.kind == "lost_event"
    assert stream.calls[1].ok, "it started after the loss"


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_bytes_that_are_not_utf8_end_the_sdk_stream_cleanly(
    sse_server: SSEServer, fmt: str
) -> None:
    # The SDKs decode the body line by line and raise UnicodeDecodeError: like any event they
    # cannot decode, it ends the stream as a transport error, with every call answered.
    body = _with_event(fmt, b'data: {"\xff"}\n\n')
    events, stream = assemble_sync(sse_server.register(body), fmt)
    assert isinstance(stream.transport_error, UnicodeDecodeError)
    assert _first_call_fate(stream) == ("get_weather", False)
    assert type(events[-1]).__name__ == "StreamEnded"


@pytest.mark.anyio
async def test_bytes_that_are_not_utf8_end_the_async_sdk_stream_cleanly(
    sse_server: SSEServer,
) -> None:
    body = _with_event("openai-chat", b'data: {"\xff"}\n\n')
    events, stream = await assemble_async(sse_server.register(body), "openai-chat")
    assert isinstance(stream.transport_error, UnicodeDecodeError)
    assert _first_call_fate(stream) == ("get_weather", False)
    assert type(events[-1]).__name__ == "StreamEnded"


# Events the raw path cannot read: data that is no object, and a field of the wrong type.
UNREADABLE: dict[str, list[Any]] = {
    "openai-chat": [123, {"object": "chat.completion.chunk", "choices": "none"}],
    "openai-responses": [
        None,
        {"type": "response.function_call_arguments.delta", "output_index": "x", "delta": "x"},
    ],
    "anthropic": [
        [1],
        {"type": "content_block_delta", "index": 0.5, "delta": {"type": "input_json_delta"}},
    ],
}


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_an_unreadable_chunk_is_told_as_the_raw_path_tells_it(fmt: str, which: int) -> None:
    # Fed as chunks, the same stream says what it could not read, at the same event, as the
    # raw path says it: a caller of `feed_chunk` learns why its call became `lost_event`.
    events = well_formed_stream(fmt, CALLS, size=4)
    first = next(i for i, e in enumerate(events) if '{"ci' in str(e))
    unreadable = UNREADABLE[fmt][which]
    dicts = Assembler()
    infos = [dicts.feed_chunk(event) for event in [*events[: first + 1], unreadable]]
    infos += [dicts.feed_chunk(event) for event in events[first + 1 :]]
    raw = Assembler()
    named = "" if fmt == "openai-chat" else f"event: {events[first]['type']}\n"
    data = json.dumps(unreadable, separators=(",", ":"))
    raw.feed_sse(
        sse_body(events[: first + 1], fmt).removesuffix(b"data: [DONE]\n\n")
        + f"{named}data: {data}\n\n".encode()
        + sse_body(events[first + 1 :], fmt)
    )
    assert [i for i, info in enumerate(infos) if info.malformed] == [first + 1]
    told = [(kind, event) for kind, event, _ in dicts.stream_errors()]
    assert told == [(kind, event) for kind, event, _ in raw.stream_errors()]
    assert told == [("malformed_event", first + 2)]
    assert [c.error.kind if c.error else None for c in dicts.finish()] == ["lost_event", None]


@pytest.mark.parametrize("value", [{"path": "/home/me"}, 7, False, ["x"]])
def test_anthropic_arguments_sent_as_a_value_are_no_empty_call(
    sse_server: SSEServer, value: object
) -> None:
    # A gateway that forwards parsed arguments writes `partial_json` as an object. Ignored, it
    # left the call `{}`: a call that runs, with its parameters' defaults. The event is unread
    # on every path, and the call it was meant for never runs.
    events = well_formed_stream("anthropic", [Call("delete_tree", "{}")], size=64)
    for event in events:
        if event.get("type") == "content_block_delta":
            event["delta"]["partial_json"] = value
    body = sse_body(events, "anthropic")
    raw = Assembler()
    raw.feed_sse(body)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    _, stream = assemble_sync(sse_server.register(body), "anthropic")
    for calls in (raw.finish(), dicts.finish(), stream.calls):
        assert [c.error.kind if c.error else None for c in calls] == ["lost_event"]
    for asm in (raw, dicts):
        assert [kind for kind, _, _ in asm.stream_errors()] == ["malformed_event"]
