"""`toolwire.assemble` over the real OpenAI client (Chat Completions), sync and async."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import openai
import pytest

pytest.importorskip("toolwire._core")

from toolwire import MisuseError
from toolwire.events import (
    ArgumentsProgress,
    CallCompleted,
    CallStarted,
    PrecheckError,
    StreamEnded,
    TextDelta,
)
from toolwire.stream import assemble

from .clients import (
    READ_TIMEOUT,
    UNBLOCKED,
    ThreadReader,
    assemble_async,
    assemble_sync,
    open_sync,
    sync_client,
)
from .conftest import Route, SSEServer
from .make_fixtures import PARALLEL, TEXT, large_arguments
from .streamkit import (
    Call,
    chat_chunk,
    chat_stream,
    load_events,
    sse_body,
    tc,
    well_formed_stream,
)

FMT = "openai-chat"


def by_ordinal(events: list[Any], kind: type) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for e in events:
        if isinstance(e, kind):
            out.setdefault(e.ordinal, []).append(e)
    return out


def assert_calls(calls: list[Any], expected: list[Call]) -> None:
    assert [c.name for c in calls] == [e.name for e in expected]
    assert [c.value for c in calls] == [e.value for e in expected]
    assert all(c.ok and c.error is None for c in calls), [c.error for c in calls]


def test_parallel_interleaved_calls_sync(sse_server: SSEServer, split: str) -> None:
    _, chunks = load_events("openai_chat_parallel4_interleaved")
    route = sse_server.register_events(chunks, FMT, split=split)
    events, stream = assemble_sync(route, FMT)
    assert_calls(stream.calls, PARALLEL)
    assert [c.id for c in stream.calls] == ["call_0", "call_1", "call_2", "call_3"]
    assert [c.index for c in stream.calls] == [0, 1, 2, 3]
    assert stream.text == TEXT == "".join(e.text for e in events if isinstance(e, TextDelta))
    assert stream.format == FMT
    end = events[-1]
    assert end == StreamEnded(
        "tool_calls",
        {"prompt_tokens": 50, "completion_tokens": 80, "total_tokens": 130},
        tuple(stream.calls),
    )
    started = [e for e in events if isinstance(e, CallStarted)]
    assert [(s.id, s.name) for s in started] == [
        (f"call_{i}", c.name) for i, c in enumerate(PARALLEL)
    ]
    # The four calls are written at the same time: progress alternates between them.
    progress = [e.ordinal for e in events if isinstance(e, ArgumentsProgress)]
    assert set(progress) == {0, 1, 2, 3} and progress != sorted(progress)
    written = "".join(
        p.text for p in by_ordinal(events, ArgumentsProgress)[3] if p.path == "/content"
    )
    assert written == "第一行\n第二行 🚀\\"
    assert stream.transport_error is None
    stream.raise_for_transport_error()
    assert route.requests[0]["json"]["stream"] is True


@pytest.mark.anyio
async def test_parallel_interleaved_calls_async(sse_server: SSEServer, split: str) -> None:
    _, chunks = load_events("openai_chat_parallel4_interleaved")
    route = sse_server.register_events(chunks, FMT, split=split)
    events, stream = await assemble_async(route, FMT)
    assert_calls(stream.calls, PARALLEL)
    assert stream.text == TEXT
    assert isinstance(events[-1], StreamEnded) and events[-1].finish_reason == "tool_calls"


@pytest.mark.parametrize("split_mode", ["whole", "random-3"])
def test_200k_arguments(sse_server: SSEServer, split_mode: str) -> None:
    _, chunks = load_events("openai_chat_large_200k")
    route = sse_server.register_events(chunks, FMT, split=split_mode)
    events, stream = assemble_sync(route, FMT, progress=False)
    (call,) = stream.calls
    expected = large_arguments()
    assert len(expected.encode()) > 200_000
    assert call.arguments == expected
    assert call.value == json.loads(expected)
    assert call.value["escaped"] == "emoji 😀 e\u0301 日本"
    assert not any(isinstance(e, ArgumentsProgress) for e in events)


@pytest.mark.anyio
async def test_200k_arguments_async(sse_server: SSEServer) -> None:
    _, chunks = load_events("openai_chat_large_200k")
    route = sse_server.register_events(chunks, FMT, split="random-4")
    _, stream = await assemble_async(route, FMT)
    assert stream.calls[0].value == json.loads(large_arguments())


def cut_inside_call(body: bytes, marker: bytes) -> int:
    at = body.index(marker)
    return at + len(marker) // 2


def drop_route(sse_server: SSEServer) -> Any:
    calls = [Call("get_weather", '{"city":"Paris"}'), Call("get_weather", '{"city":"Rome"}')]
    chunks = chat_stream(calls, size=4)
    body = sse_body(chunks, FMT)
    # Cut in the middle of the second call's arguments: no finish_reason, no [DONE].
    return sse_server.register(body, split="random-5", drop_after=cut_inside_call(body, b'"Ro'))


def check_dropped(events: list[Any], stream: Any) -> None:
    first, second = stream.calls
    assert first.ok and first.value == {"city": "Paris"}
    assert not second.ok and second.error.kind == "truncated"
    assert second.value is None
    assert events[-1].finish_reason is None and stream.finish_reason is None
    assert isinstance(stream.transport_error, openai.APIConnectionError)
    with pytest.raises(openai.APIConnectionError):
        stream.raise_for_transport_error()
    assert sum(isinstance(e, CallCompleted) for e in events) == 2


def test_connection_drop_keeps_every_call_sync(sse_server: SSEServer) -> None:
    check_dropped(*assemble_sync(drop_route(sse_server), FMT))


@pytest.mark.anyio
async def test_connection_drop_keeps_every_call_async(sse_server: SSEServer) -> None:
    check_dropped(*await assemble_async(drop_route(sse_server), FMT))


def test_early_close_closes_the_http_response(sse_server: SSEServer) -> None:
    _, chunks = load_events("openai_chat_parallel4_interleaved")
    route = sse_server.register_events(chunks, FMT, split="bytewise")
    with sync_client(route, FMT) as client:
        source = open_sync(client, FMT)
        seen = []
        with assemble(source) as stream:
            for event in stream:
                seen.append(event)
                if isinstance(event, ArgumentsProgress) and event.ordinal == 1:
                    break
        assert source.response.is_closed
        # Every call that had started is there at once, and the cut ones are not usable.
        assert len(stream.calls) >= 2
        assert all(c.error is not None and c.error.kind == "truncated" for c in stream.calls)
        assert stream.finish_reason is None and stream.transport_error is None
        # A reader that comes back gets the end of the stream, each call completed once.
        seen.extend(stream)
        with pytest.raises(StopIteration):
            next(stream)
    assert isinstance(seen[-1], StreamEnded) and seen[-1].finish_reason is None
    completed = [e.call.ordinal for e in seen if isinstance(e, CallCompleted)]
    assert sorted(completed) == [c.ordinal for c in stream.calls]


def test_connection_drop_before_any_argument_text(sse_server: SSEServer) -> None:
    chunks = chat_stream([Call("delete_files", '{"pattern": "*"}')], size=4)
    body = sse_body(chunks, FMT)
    # Drop right after the event that names the call (a half-sent event never reaches the SDK).
    named = body.index(b'"arguments":""')
    route = sse_server.register(body, drop_after=body.index(b"\n\n", named) + 2)
    _, stream = assemble_sync(route, FMT)
    (call,) = stream.calls
    assert call.name == "delete_files"
    assert call.error is not None and call.error.kind == "truncated"


def test_partial_value_grows_while_streaming(sse_server: SSEServer) -> None:
    call = Call("write_file", json.dumps({"path": "a.txt", "content": "héllo wörld " * 20}))
    route = sse_server.register_events(chat_stream([call], size=9), FMT, split="random-6")
    seen: list[Any] = []
    with sync_client(route, FMT) as client, assemble(open_sync(client, FMT)) as stream:
        for event in stream:
            if isinstance(event, ArgumentsProgress):
                seen.append(stream.partial(event.ordinal))
    final = stream.calls[0].value
    assert seen and all(isinstance(v, dict) for v in seen)
    for earlier, later in zip(seen, [*seen[1:], final], strict=False):
        for key, value in earlier.items():
            assert key in later
            assert later[key] == value or (isinstance(value, str) and later[key].startswith(value))


def test_partial_answers_for_every_event_the_stream_yields(sse_server: SSEServer) -> None:
    # The last progress items (a fragment held to tell a resend from new text is decided only
    # at the end) and every CallCompleted come after the stream finished: a UI that asks for
    # the partial value there gets the call's, not a MisuseError.
    chunks = [
        chat_chunk({"tool_calls": [tc(0, id="a", name="t", arguments='{"b": ')]}),
        chat_chunk({"tool_calls": [tc(0, arguments='{"b": 3}')]}),
        chat_chunk({"tool_calls": [tc(1, id="c", name="t", arguments='{"c": "x')]}),
        chat_chunk({}, finish_reason="length"),
    ]
    route = sse_server.register_events(chunks, FMT)
    seen: list[tuple[str, Any]] = []
    with sync_client(route, FMT) as client, assemble(open_sync(client, FMT)) as stream:
        for event in stream:
            if isinstance(event, (ArgumentsProgress, CallCompleted)):
                ordinal = (
                    event.ordinal if isinstance(event, ArgumentsProgress) else event.call.ordinal
                )
                seen.append((type(event).__name__, stream.partial(ordinal)))
    assert seen[-2:] == [("CallCompleted", {"b": 3}), ("CallCompleted", {"c": "x"})]
    assert ("ArgumentsProgress", {"b": 3}) in seen
    assert stream.calls[1].error is not None


def test_content_filter_mid_call_is_not_executable(sse_server: SSEServer, split: str) -> None:
    chunks = chat_stream([Call("delete_files", '{"pattern": "*.log"}')], size=5)[:-1]
    chunks = chunks[:-2]  # the filter fires before the arguments are complete
    chunks.append(chat_chunk({}, finish_reason="content_filter"))
    route = sse_server.register_events(chunks, FMT, split=split)
    events, stream = assemble_sync(route, FMT)
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "filtered"
    assert events[-1].finish_reason == "content_filter"


def test_server_error_status_is_raised_by_the_sdk(sse_server: SSEServer) -> None:
    route = sse_server.register(b'{"error": {"message": "bad", "type": "invalid"}}', status=400)
    with sync_client(route, FMT) as client, pytest.raises(openai.BadRequestError):
        open_sync(client, FMT)


@pytest.mark.anyio
async def test_early_close_async_closes_the_http_response(sse_server: SSEServer) -> None:
    from toolwire.stream import aassemble

    from .clients import async_client, open_async

    _, chunks = load_events("openai_chat_parallel4_interleaved")
    route = sse_server.register_events(chunks, FMT, split="bytewise")
    async with async_client(route, FMT) as client:
        source = await open_async(client, FMT)
        async with aassemble(source) as stream:
            async for event in stream:
                if isinstance(event, ArgumentsProgress):
                    break
        assert source.response.is_closed
    assert stream.calls and all(not c.ok for c in stream.calls)


def test_outcomes_with_a_toolset(sse_server: SSEServer) -> None:
    from pydantic import BaseModel

    from toolwire.toolset import Toolset

    class GetWeather(BaseModel):
        """Current weather."""

        city: str
        unit: str = "celsius"

    tools = Toolset([GetWeather])
    calls = [
        Call("get_weather", '{"city": "Oslo"}'),
        Call("get_weather", '{"town": "Oslo"}'),
        Call("launch_rocket", "{}"),
    ]
    route = sse_server.register_events(chat_stream(calls, size=3), FMT, split="random-11")
    events, stream = assemble_sync(route, FMT, tools=tools)
    completed = [e for e in events if isinstance(e, CallCompleted)]
    assert [e.outcome for e in completed] == stream.outcomes
    ok, missing_city, unknown = stream.outcomes
    assert ok.ok and ok.model == GetWeather(city="Oslo")
    assert not missing_city.ok and missing_city.kind == "model_error"
    assert not unknown.ok and unknown.error_type == "unknown_tool"
    assert stream.calls[2].error.kind == "unknown_tool"


def test_events_are_frozen_values() -> None:
    import dataclasses

    from toolwire.events import Event, StreamEvent

    event = CallStarted(0, "call_1", "f")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.name = "g"  # type: ignore[misc]
    assert event == CallStarted(0, "call_1", "f") and hash(event) == hash(
        CallStarted(0, "call_1", "f")
    )
    assert not hasattr(event, "__dict__")
    assert isinstance(TextDelta("x"), StreamEvent)
    assert set(Event.__args__) == {  # type: ignore[attr-defined]
        TextDelta,
        CallStarted,
        ArgumentsProgress,
        PrecheckError,
        CallCompleted,
        StreamEnded,
    }


# ---------------------------------------------------------------------------------------------
# Closing from elsewhere: a watchdog (a "stop" button, a per-request timeout) closes the stream
# while the consumer waits for a chunk from a server that stopped sending.


def _stalled_route(sse_server: SSEServer, fmt: str) -> Route:
    """A stream that starts a call, then sends nothing more (the connection stays open)."""
    body = sse_body(well_formed_stream(fmt, [Call("get_weather", '{"city": "Paris"}')]), fmt)
    named = body.index(b'"get_weather"')
    return sse_server.register(body, drop_after=body.index(b"\n\n", named) + 2, stall=True)


def _check_closed_from_elsewhere(events: list[Any], stream: Any) -> None:
    # The consumer's iteration ended as an early close ends it: the call it saw start was
    # completed (cut off, so it does not run) and the stream ended without a finish reason.
    assert [type(e).__name__ for e in events if not isinstance(e, ArgumentsProgress)] == [
        "CallStarted",
        "CallCompleted",
        "StreamEnded",
    ]
    (call,) = stream.calls
    assert call.name == "get_weather" and call.error is not None
    assert call.error.kind == "truncated"
    assert stream.finish_reason is None and stream.transport_error is None


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_close_from_another_thread_unblocks_the_reader(sse_server: SSEServer, fmt: str) -> None:
    route = _stalled_route(sse_server, fmt)
    try:
        with sync_client(route, fmt) as client:
            source = open_sync(client.with_options(timeout=READ_TIMEOUT), fmt)
            stream = assemble(source)
            reader = ThreadReader(stream)
            reader.wait_inside_next()
            reader.close_and_join()  # the consumer is blocked inside `next` on another thread
            stream.close()  # again: nothing happens
            assert source.response.is_closed
    finally:
        route.release.set()
    _check_closed_from_elsewhere(reader.events, stream)
    with pytest.raises(StopIteration):
        next(stream)


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
async def test_aclose_from_another_task_unblocks_the_reader(
    sse_server: SSEServer, fmt: str
) -> None:
    from toolwire.stream import aassemble

    from .clients import async_client, open_async, task_reader

    route = _stalled_route(sse_server, fmt)
    try:
        async with async_client(route, fmt) as client:
            source = await open_async(client.with_options(timeout=READ_TIMEOUT), fmt)
            stream = aassemble(source)
            reader = await task_reader(stream)
            await stream.aclose()  # the consumer task waits inside `__anext__`
            events = await asyncio.wait_for(reader, UNBLOCKED)
            await stream.aclose()  # again: nothing happens
            assert source.response.is_closed
    finally:
        route.release.set()
    _check_closed_from_elsewhere(events, stream)
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


def test_two_threads_reading_one_stream_is_misuse() -> None:
    inside, more = threading.Event(), threading.Event()

    def source() -> Iterator[Any]:
        yield chat_chunk({"tool_calls": [tc(0, id="a", name="t", arguments='{"b": ')]})
        inside.set()
        more.wait(UNBLOCKED)
        yield chat_chunk({"tool_calls": [tc(0, arguments="1}")]})

    stream = assemble(source())
    assert isinstance(next(stream), CallStarted)
    reader = threading.Thread(target=lambda: list(stream))
    reader.start()
    try:
        assert inside.wait(UNBLOCKED)  # the reader is inside `next`
        with pytest.raises(MisuseError, match="another thread"):
            next(stream)
        stream.close()
    finally:
        more.set()
    reader.join(UNBLOCKED)
    assert not reader.is_alive()
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "truncated"


@pytest.mark.anyio
async def test_two_tasks_reading_one_stream_is_misuse(sse_server: SSEServer) -> None:
    from toolwire.stream import aassemble

    from .clients import async_client, open_async

    route = _stalled_route(sse_server, FMT)
    try:
        async with async_client(route, FMT) as client:
            stream = aassemble(await open_async(client.with_options(timeout=READ_TIMEOUT), FMT))
            first = await stream.__anext__()
            assert isinstance(first, CallStarted)
            reader = asyncio.ensure_future(stream.__anext__())
            await asyncio.sleep(0.01)  # the reader is now waiting for the next chunk
            assert not reader.done()
            with pytest.raises(MisuseError, match="another task"):
                await stream.__anext__()
            await stream.aclose()
            await asyncio.wait_for(reader, UNBLOCKED)
    finally:
        route.release.set()
