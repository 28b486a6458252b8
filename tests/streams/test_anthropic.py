"""`toolwire.assemble` over the real Anthropic client (Messages), sync and async."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler
from toolwire.events import CallStarted, StreamEnded, TextDelta
from toolwire.stream import assemble, is_provider_error, is_transport_error

from .clients import assemble_async, assemble_both, assemble_sync
from .conftest import SSEServer
from .make_fixtures import PARALLEL, TEXT, large_arguments
from .streamkit import Call, anthropic_stream, load_events, sse_body

FMT = "anthropic"


def test_thinking_text_and_tools_sync(sse_server: SSEServer, split: str) -> None:
    _, events_in = load_events("anthropic_thinking_text_tools")
    route = sse_server.register_events(events_in, FMT, split=split)
    events, stream = assemble_sync(route, FMT)
    assert [c.value for c in stream.calls] == [c.value for c in PARALLEL[:2]]
    assert [c.id for c in stream.calls] == ["toolu_0", "toolu_1"]
    # Block indexes count the thinking and text blocks; ordinals are dense.
    assert [c.index for c in stream.calls] == [2, 3]
    assert [c.ordinal for c in stream.calls] == [0, 1]
    assert stream.text == TEXT == "".join(e.text for e in events if isinstance(e, TextDelta))
    end = events[-1]
    assert isinstance(end, StreamEnded) and end.finish_reason == "tool_use"
    assert end.usage == {"input_tokens": 17, "output_tokens": 42}
    # The thinking block is kept whole, for the next request.
    thought = {"type": "thinking", "thinking": "Let me think.", "signature": "c2ln"}
    assert stream.reasoning == list(end.reasoning) == [thought]


@pytest.mark.anyio
async def test_parallel_four_async(sse_server: SSEServer, split: str) -> None:
    _, events_in = load_events("anthropic_parallel4")
    route = sse_server.register_events(events_in, FMT, split=split)
    events, stream = await assemble_async(route, FMT)
    assert [c.value for c in stream.calls] == [c.value for c in PARALLEL]
    assert [e.name for e in events if isinstance(e, CallStarted)] == [c.name for c in PARALLEL]


def test_parallel_four_sync(sse_server: SSEServer) -> None:
    _, events_in = load_events("anthropic_parallel4")
    _, stream = assemble_sync(sse_server.register_events(events_in, FMT, split="bytewise"), FMT)
    assert [c.value for c in stream.calls] == [c.value for c in PARALLEL]


def test_200k_arguments(sse_server: SSEServer) -> None:
    big = large_arguments()
    route = sse_server.register_events(
        anthropic_stream([Call("write_file", big)], size=2039), FMT, split="random-8"
    )
    _, stream = assemble_sync(route, FMT, progress=False)
    assert stream.calls[0].value == json.loads(big)


def test_placeholder_input_without_deltas_is_the_value(sse_server: SSEServer) -> None:
    events_in = [
        e
        for e in anthropic_stream([Call("list_files", "{}")])
        if e["type"] != "content_block_delta"
    ]
    _, stream = assemble_sync(sse_server.register_events(events_in, FMT), FMT)
    (call,) = stream.calls
    assert call.ok and call.value == {} and call.arguments == "{}"


def test_refusal_stops_an_open_call(sse_server: SSEServer) -> None:
    events_in = anthropic_stream([Call("f", '{"a": 1}')], stop_reason="refusal", size=3)
    events_in = [e for e in events_in if e["type"] != "content_block_stop"]
    _, stream = assemble_sync(sse_server.register_events(events_in, FMT), FMT)
    assert stream.calls[0].error.kind == "filtered"


def test_max_tokens_cut_is_truncated(sse_server: SSEServer) -> None:
    events_in = anthropic_stream(
        [Call("f", '{"path": "x", "content": "abcdef"}')], stop_reason="max_tokens", size=5
    )
    stop_at = next(i for i, e in enumerate(events_in) if e["type"] == "content_block_stop")
    events_in = events_in[: stop_at - 2] + events_in[stop_at + 1 :]
    events, stream = assemble_sync(sse_server.register_events(events_in, FMT), FMT)
    assert stream.calls[0].error.kind == "truncated"
    assert events[-1].finish_reason == "max_tokens"


@pytest.mark.parametrize("blank", ["", "  ", "\n\t "])
def test_an_empty_tool_block_closed_at_max_tokens_is_truncated(
    sse_server: SSEServer, blank: str
) -> None:
    # The limit cut the block before its input began (nothing, or JSON whitespace alone);
    # Anthropic closes the block before the message says `max_tokens`, so the call must not run
    # as a call without parameters. An empty block the message went on after is one.
    events_in = anthropic_stream(
        [Call("ping", blank), Call("f", blank)], stop_reason="max_tokens", empty_first_delta=False
    )
    stop = max(i for i, e in enumerate(events_in) if e["type"] == "content_block_stop")
    events_in.insert(stop + 1, {"type": "ping"})
    events, stream = assemble_both(sse_server.register_events(events_in, FMT), FMT)
    first, second = stream.calls
    assert first.ok and first.value == {}
    assert second.error is not None and second.error.kind == "truncated"
    assert second.arguments.strip() == ""
    assert events[-1].finish_reason == "max_tokens"
    # The same stream ending normally: both are calls without parameters.
    for event in events_in:
        if event["type"] == "message_delta":
            event["delta"]["stop_reason"] = "tool_use"
    _, stream = assemble_both(sse_server.register_events(events_in, FMT), FMT)
    assert [(c.ok, c.value) for c in stream.calls] == [(True, {}), (True, {})]


@pytest.mark.anyio
async def test_connection_drop_async(sse_server: SSEServer) -> None:
    body = sse_body(anthropic_stream([Call("f", '{"a":1}'), Call("g", '{"b":"xyz"}')], size=3), FMT)
    route = sse_server.register(body, split="random-9", drop_after=body.index(b'"xy') + 2)
    events, stream = await assemble_async(route, FMT)
    first, second = stream.calls
    assert first.ok and first.value == {"a": 1}
    assert second.error is not None and second.error.kind == "truncated"
    assert stream.transport_error is not None
    assert events[-1].finish_reason is None


@pytest.mark.parametrize("complete", [True, False])
def test_error_event_mid_stream_ends_gracefully(sse_server: SSEServer, complete: bool) -> None:
    events_in = anthropic_stream([Call("f", '{"a": 1}')], size=3)
    cut = next(i for i, e in enumerate(events_in) if e["type"] == "content_block_stop")
    if not complete:
        cut -= 1  # the last argument fragment never arrives
    body = sse_body(events_in[:cut], FMT) + (
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
        b'"message":"Overloaded"}}\n\n'
    )
    events, stream = assemble_sync(sse_server.register(body), FMT)
    assert isinstance(stream.transport_error, anthropic.APIStatusError)
    (call,) = stream.calls
    # The provider gave up before the block's `content_block_stop`: even a value whose JSON
    # closed does not run, as when the same body is read raw or fed as dicts.
    assert not call.ok and call.error is not None and call.error.kind == "filtered"
    assert events[-1].finish_reason == "error" == stream.finish_reason


def test_connection_drop_sync(sse_server: SSEServer) -> None:
    body = sse_body(anthropic_stream([Call("f", '{"a":1}'), Call("g", '{"b":"xyz"}')], size=3), FMT)
    route = sse_server.register(body, split="adversarial", drop_after=body.index(b'"xy') + 2)
    events, stream = assemble_sync(route, FMT)
    assert [c.ok for c in stream.calls] == [True, False]
    # Older Anthropic SDKs let the HTTP client's own error through; newer ones wrap it in
    # APIConnectionError. Either way it is a dropped connection, not a provider's error.
    error = stream.transport_error
    assert isinstance(error, anthropic.APIConnectionError) or (
        type(error).__name__ == "RemoteProtocolError"
    )
    assert is_transport_error(error) and not is_provider_error(error)
    with pytest.raises(type(stream.transport_error)):
        stream.raise_for_transport_error()
    assert events[-1].finish_reason is None


@pytest.mark.parametrize("usage", ["null", 5, [], True])
def test_a_usage_that_is_no_object_leaves_the_usage_unknown_on_every_path(usage: Any) -> None:
    # It counts nothing: the raw path's usage stays None, the SDK path's was `{}`.
    events = anthropic_stream([Call("f", '{"a": 1}', "t1")])
    for event in events:
        if event["type"] == "message_start":
            event["message"]["usage"] = usage
        if event["type"] == "message_delta":
            del event["usage"]
    raw = Assembler()
    raw.feed_sse(sse_body(events, "anthropic"))
    raw.finish()
    stream = assemble(iter(events))
    list(stream)
    assert raw.usage is None and stream.usage is None
