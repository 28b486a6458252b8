"""The SDKs' stream helpers (`client.chat.completions.stream(...)`, `client.responses.stream(...)`,
anthropic's `client.messages.stream(...)`) through `assemble`, `aassemble` and `feed_chunk`, over
real HTTP: each must give what `create(..., stream=True)` gives on the same body, also when the
model's arguments are not JSON, which the helpers themselves raise for."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from toolwire import Assembler, MisuseError
from toolwire.stream import aassemble, assemble

from .clients import (
    MESSAGES,
    _aanthropic,
    _anthropic,
    _aopenai,
    _openai,
    check_event_order,
    raw_key,
)
from .conftest import SSEServer
from .streamkit import Call, anthropic_stream, chat_stream, responses_stream

# The second call is the model's mistake; the helpers raise for it (openai's only for a strict
# tool), toolwire reports it on the call and delivers the calls after it.
CALLS = [
    Call("get_weather", '{"city": "東京"}', "call_a"),
    Call("get_weather", '{"city": tru}', "call_b"),
    Call("get_time", '{"zone": "UTC"}', "call_c"),
]
VALID = [CALLS[0], CALLS[2]]

_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "zone": {"type": "string"}},
    "additionalProperties": False,
}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "strict": True, "parameters": _PARAMETERS},
    }
    for name in ("get_weather", "get_time")
]
RESPONSES_TOOLS = [
    {"type": "function", "name": name, "strict": True, "parameters": _PARAMETERS}
    for name in ("get_weather", "get_time")
]


def summary(stream: Any, events: list[Any]) -> tuple[Any, ...]:
    check_event_order(events, stream)
    return (
        raw_key(stream.calls),
        stream.text,
        stream.finish_reason,
        stream.usage,
        stream.format,
        stream.transport_error,
        stream.assembler.stream_errors(),
        [type(e).__name__ for e in events],
    )


def _body(fmt: str, calls: list[Call]) -> list[dict[str, Any]]:
    if fmt == "openai-chat":
        return chat_stream(calls, text="Sure.", usage={"prompt_tokens": 3, "completion_tokens": 4})
    if fmt == "openai-responses":
        return responses_stream(calls, text="Sure.")
    return anthropic_stream(calls, text="Sure.")


def _create(client: Any, fmt: str) -> Any:
    if fmt == "openai-chat":
        return client.chat.completions.create(
            model="test-model", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
        )
    if fmt == "openai-responses":
        return client.responses.create(
            model="test-model", input="weather?", tools=RESPONSES_TOOLS, stream=True
        )
    return client.messages.create(
        model="test-model", max_tokens=1024, messages=MESSAGES, stream=True
    )


# Every spelling of each helper the installed SDKs have (`client.beta.chat` is `client.chat`'s
# resource again; `client.beta.responses` has no helper).
HELPERS = {
    "chat": ("openai-chat", lambda c: c.chat.completions),
    "beta-chat": ("openai-chat", lambda c: c.beta.chat.completions),
    "responses": ("openai-responses", lambda c: c.responses),
    "messages": ("anthropic", lambda c: c.messages),
    "beta-messages": ("anthropic", lambda c: c.beta.messages),
}


def _helper(client: Any, name: str) -> Any:
    fmt, resource = HELPERS[name]
    if fmt == "openai-chat":
        return resource(client).stream(model="test-model", messages=MESSAGES, tools=CHAT_TOOLS)
    if fmt == "openai-responses":
        return resource(client).stream(model="test-model", input="weather?", tools=RESPONSES_TOOLS)
    return resource(client).stream(model="test-model", max_tokens=1024, messages=MESSAGES)


def _client(route: Any, fmt: str) -> Any:
    return _anthropic(route) if fmt == "anthropic" else _openai(route)


def _aclient(route: Any, fmt: str) -> Any:
    return _aanthropic(route) if fmt == "anthropic" else _aopenai(route)


def _run_create(route: Any, fmt: str) -> tuple[Any, ...]:
    with _client(route, fmt) as client, assemble(_create(client, fmt)) as stream:
        events = list(stream)
    return summary(stream, events)


@pytest.mark.parametrize("calls", [VALID, CALLS], ids=["valid", "not-json"])
@pytest.mark.parametrize("name", sorted(HELPERS))
def test_helper_gives_what_create_gives(
    sse_server: SSEServer, split: str, name: str, calls: list[Call]
) -> None:
    fmt = HELPERS[name][0]
    route = sse_server.register_events(_body(fmt, calls), fmt, split=split)
    expected = _run_create(route, fmt)
    assert len(expected[0]) == len(calls)
    with _client(route, fmt) as client, _helper(client, name) as helper:
        with assemble(helper) as stream:
            events = list(stream)
    assert summary(stream, events) == expected
    if calls is CALLS:
        assert [c.error and c.error.kind for c in stream.calls] == [None, "unexpected_byte", None]


@pytest.mark.anyio
@pytest.mark.parametrize("calls", [VALID, CALLS], ids=["valid", "not-json"])
@pytest.mark.parametrize("name", sorted(HELPERS))
async def test_async_helper_gives_what_create_gives(
    sse_server: SSEServer, name: str, calls: list[Call]
) -> None:
    fmt = HELPERS[name][0]
    route = sse_server.register_events(_body(fmt, calls), fmt, split="random-2")
    expected = _run_create(route, fmt)
    async with _aclient(route, fmt) as client, _helper(client, name) as helper:
        async with aassemble(helper) as stream:
            events = [event async for event in stream]
    assert summary(stream, events) == expected


@pytest.mark.parametrize("name", ["chat", "messages"])
def test_helper_events_through_feed_chunk(sse_server: SSEServer, name: str) -> None:
    """A caller that iterates the helper itself and feeds what it yields: the chunks inside
    openai's `chunk` events are read, the events derived from them are not (nor counted)."""
    fmt = HELPERS[name][0]
    route = sse_server.register_events(_body(fmt, VALID), fmt, split="random-1")
    calls, text, reason, usage, _, _, errors, _ = _run_create(route, fmt)
    asm = Assembler()
    infos = []
    with _client(route, fmt) as client, _helper(client, name) as helper:
        for event in helper:
            infos.append(asm.feed_chunk(event))
    assert asm.chunk_format == fmt
    assert raw_key(asm.finish()) == calls
    assert "".join(i.text for i in infos) == text
    assert [i.finish_reason for i in infos if i.finish_reason] == [reason]
    assert [i.usage for i in infos if i.usage is not None][-1] == usage
    assert asm.stream_errors() == errors


def test_helper_chunk_event_dicts_feed_like_chunks() -> None:
    """The dicts of the helper's events (`model_dump()`) are read as the events are."""
    chunks = chat_stream(VALID, text="Sure.")
    plain = Assembler()
    plain_text = "".join(plain.feed_chunk(chunk).text for chunk in chunks)
    wrapped = Assembler()
    text = ""
    for chunk in chunks:
        text += wrapped.feed_chunk({"type": "chunk", "chunk": chunk, "snapshot": {}}).text
        derived = {"type": "content.delta", "delta": "Sure.", "snapshot": "Sure."}
        assert wrapped.feed_chunk(derived).text == ""
    assert raw_key(wrapped.finish()) == raw_key(plain.finish())
    assert text == plain_text == "Sure."


@pytest.mark.parametrize("name", sorted(HELPERS))
def test_helper_manager_is_misuse(sse_server: SSEServer, name: str) -> None:
    """`.stream(...)` before `with ... as stream` sent no request: no stream to read yet."""
    fmt = HELPERS[name][0]
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    with _client(route, fmt) as client:
        manager = _helper(client, name)
        with pytest.raises(MisuseError, match="not the manager"):
            assemble(manager)
        with pytest.raises(MisuseError, match="not the manager"):
            aassemble(manager)
    assert route.requests == []


@pytest.mark.anyio
async def test_async_helper_manager_is_misuse(sse_server: SSEServer) -> None:
    route = sse_server.register_events(_body("anthropic", VALID), "anthropic")
    async with _aclient(route, "anthropic") as client:
        manager = _helper(client, "messages")
        with pytest.raises(MisuseError, match="AsyncMessageStreamManager"):
            aassemble(manager)
        assert route.requests == []
        # It holds the request not yet awaited: entered, it is sent and closed.
        async with manager:
            pass


def test_assistants_event_handler_is_misuse() -> None:
    from openai.lib.streaming import AssistantEventHandler

    with pytest.raises(MisuseError, match="Assistants"):
        assemble(AssistantEventHandler())


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
async def test_a_request_not_awaited_is_misuse(sse_server: SSEServer, fmt: str) -> None:
    # The forgotten `await`: refused where the mistake is, with the fix, not a bare TypeError
    # at the first read. The request was never sent, and the coroutine is not left unawaited.
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    async with _aclient(route, fmt) as client:
        with pytest.raises(MisuseError, match="did you forget await"):
            aassemble(_create(client, fmt))
        with pytest.raises(MisuseError, match="must be awaited"):
            assemble(_create(client, fmt))
        gc.collect()  # a coroutine never awaited would warn here (warnings are errors)
    assert route.requests == []


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
async def test_an_async_stream_given_to_assemble_is_misuse(sse_server: SSEServer, fmt: str) -> None:
    # `with assemble(async_stream)` closed the stream with its `close()` unawaited (its
    # response left open). Refused when built, the stream stays the caller's, unread.
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    async with _aclient(route, fmt) as client:
        source = await _create(client, fmt)
        with pytest.raises(MisuseError, match="is async: read it with aassemble"):
            assemble(source)
        assert not source.response.is_closed
        async with aassemble(source) as stream:
            events = [event async for event in stream]
        assert source.response.is_closed
    assert [c.name for c in stream.calls] == ["get_weather", "get_time"]
    assert len(events) > 2


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_a_sync_stream_given_to_aassemble_is_misuse(sse_server: SSEServer, fmt: str) -> None:
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    with _client(route, fmt) as client:
        source = _create(client, fmt)
        with pytest.raises(MisuseError, match="read it with assemble"):
            aassemble(source)
        assert not source.response.is_closed
        with assemble(source) as stream:
            list(stream)
    assert [c.name for c in stream.calls] == ["get_weather", "get_time"]


@pytest.mark.parametrize("source", [42, None, object()])
def test_what_is_not_iterable_is_misuse(source: Any) -> None:
    with pytest.raises(MisuseError, match="not iterable"):
        assemble(source)
    with pytest.raises(MisuseError, match="not async iterable"):
        aassemble(source)


def test_a_tool_stream_given_to_a_tool_stream_is_misuse() -> None:
    # The outer stream read the inner's events as chunks of no known format: it gave only
    # StreamEnded, no calls and no error, and the inner's events were gone with it.
    chunks = chat_stream([Call("get_weather", '{"city": "Paris"}')])
    inner = assemble(chunks)
    with pytest.raises(MisuseError, match=r"not a tool stream \(ToolStream\)"):
        assemble(inner)
    with pytest.raises(MisuseError, match=r"not a tool stream \(AsyncToolStream\)"):
        aassemble(aassemble(_async_chunks(chunks)))
    # The inner stream is untouched.
    assert [c.name for c in inner.calls] == [] and list(inner)
    assert [c.name for c in inner.calls] == ["get_weather"]


async def _async_chunks(chunks: list[Any]) -> Any:
    for chunk in chunks:
        yield chunk


def _raw(client: Any, fmt: str, kind: str) -> Any:
    """The same request through `with_raw_response` or `with_streaming_response`."""
    if fmt == "openai-chat":
        return getattr(client.chat.completions, kind).create(
            model="test-model", messages=MESSAGES, tools=CHAT_TOOLS, stream=True
        )
    return getattr(client.messages, kind).create(
        model="test-model", max_tokens=1024, messages=MESSAGES, stream=True
    )


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_a_raw_response_is_misuse_that_names_parse(sse_server: SSEServer, fmt: str) -> None:
    # `with_raw_response` (for its headers: request id, rate limits) and
    # `with_streaming_response` give the HTTP response, whose stream `.parse()` makes: it was
    # refused as "not iterable", which says nothing of the fix.
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    with _client(route, fmt) as client:
        raw = _raw(client, fmt, "with_raw_response")
        with pytest.raises(MisuseError, match=r"assemble\(response\.parse\(\)\)"):
            assemble(raw)
        with pytest.raises(MisuseError, match=r"aassemble\(.*response\.parse\(\)\)"):
            aassemble(raw)
        with assemble(raw.parse()) as stream:
            list(stream)
        assert [c.name for c in stream.calls] == ["get_weather", "get_time"]
        with _raw(client, fmt, "with_streaming_response") as response:
            with pytest.raises(MisuseError, match=r"assemble\(response\.parse\(\)\)"):
                assemble(response)
            assert not response.is_closed
            with assemble(response.parse()) as stream:
                list(stream)
        assert [c.name for c in stream.calls] == ["get_weather", "get_time"]


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
async def test_an_async_raw_response_is_misuse_that_names_parse(
    sse_server: SSEServer, fmt: str
) -> None:
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    async with _aclient(route, fmt) as client:
        async with _raw(client, fmt, "with_streaming_response") as response:
            with pytest.raises(MisuseError, match=r"aassemble\(await response\.parse\(\)\)"):
                aassemble(response)
            async with aassemble(await response.parse()) as stream:
                [event async for event in stream]
        assert [c.name for c in stream.calls] == ["get_weather", "get_time"]


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
@pytest.mark.parametrize("read", ["iter_text", "iter_lines"])
def test_the_body_as_text_is_misuse_that_names_feed_sse(
    sse_server: SSEServer, fmt: str, read: str
) -> None:
    # The body's bytes given to `assemble` are refused (`feed_sse` reads them); its text, as
    # `response.iter_text()` or `iter_lines()` decode it, was read as events whose data is a
    # JSON string: no call, and no error, for a stream full of calls.
    route = sse_server.register_events(_body(fmt, VALID), fmt)
    with _client(route, fmt) as client, _raw(client, fmt, "with_streaming_response") as response:
        with (
            pytest.raises(MisuseError, match=r"SSE text.*feed_sse"),
            assemble(getattr(response, read)()) as stream,
        ):
            list(stream)
    asm = Assembler()
    with _client(route, fmt) as client, _raw(client, fmt, "with_streaming_response") as response:
        for piece in response.iter_bytes():
            asm.feed_sse(piece)
    assert [c.name for c in asm.finish()] == ["get_weather", "get_time"]


def test_a_chunk_whose_data_is_a_json_string_is_still_an_unreadable_event() -> None:
    # What an SDK yields for `data: "..."`: a string, read as an event that is no object.
    asm = Assembler()
    asm.feed_chunk(chat_stream(VALID)[1])
    asm.feed_chunk("the data of an event")
    assert [kind for kind, _, _ in asm.stream_errors()] == ["malformed_event"]
