"""Drive the real SDK clients (sync and async) against a registered route."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anthropic
import openai

from .streamkit import adversarial_points, pieces, sse_body

if TYPE_CHECKING:
    from .conftest import Route, SSEServer

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS_CHAT = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]


def _openai(route: Route) -> openai.OpenAI:
    return openai.OpenAI(base_url=route.openai_base_url, api_key="test", max_retries=0)


def _aopenai(route: Route) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=route.openai_base_url, api_key="test", max_retries=0)


def _anthropic(route: Route) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=route.anthropic_base_url, api_key="test", max_retries=0)


def _aanthropic(route: Route) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=route.anthropic_base_url, api_key="test", max_retries=0
    )


def _gemini(route: Route) -> Any:
    from google import genai
    from google.genai import types

    # No retries (the SDK's default has none either): a test sees the first answer.
    options = types.HttpOptions(base_url=route.gemini_base_url, api_version="v1beta")
    return genai.Client(api_key="test", http_options=options)


GEMINI_TOOLS = [
    {"function_declarations": [{"name": "get_weather", "parameters": {"type": "object"}}]}
]


def open_sync(client: Any, fmt: str) -> Any:
    """Start the streaming request for `fmt` on a sync client; returns the SDK stream."""
    if fmt == "gemini":
        return client.models.generate_content_stream(
            model="test-model", contents="weather?", config={"tools": GEMINI_TOOLS}
        )
    if fmt == "openai-chat":
        return client.chat.completions.create(
            model="test-model", messages=MESSAGES, tools=TOOLS_CHAT, stream=True
        )
    if fmt == "openai-responses":
        return client.responses.create(model="test-model", input="weather?", stream=True)
    return client.messages.create(
        model="test-model", max_tokens=1024, messages=MESSAGES, stream=True
    )


async def open_async(client: Any, fmt: str) -> Any:
    if fmt == "gemini":
        # `client` is the async face, `genai.Client(...).aio`.
        return await client.models.generate_content_stream(
            model="test-model", contents="weather?", config={"tools": GEMINI_TOOLS}
        )
    if fmt == "openai-chat":
        return await client.chat.completions.create(
            model="test-model", messages=MESSAGES, tools=TOOLS_CHAT, stream=True
        )
    if fmt == "openai-responses":
        return await client.responses.create(model="test-model", input="weather?", stream=True)
    return await client.messages.create(
        model="test-model", max_tokens=1024, messages=MESSAGES, stream=True
    )


def sync_client(route: Route, fmt: str) -> Any:
    if fmt == "gemini":
        return _gemini(route)
    return _anthropic(route) if fmt == "anthropic" else _openai(route)


def async_client(route: Route, fmt: str) -> Any:
    if fmt == "gemini":
        # One client serves both: `client.aio` is its async face (closed by `aclose`).
        return _gemini(route).aio
    return _aanthropic(route) if fmt == "anthropic" else _aopenai(route)


def sdk_chunks(route: Route, fmt: str) -> list[Any]:
    """All SDK event objects of a stream that ends cleanly."""
    with sync_client(route, fmt) as client:
        if fmt == "gemini":
            # google-genai's stream is a generator, not a context manager.
            return list(open_sync(client, fmt))
        with open_sync(client, fmt) as stream:
            return list(stream)


async def sdk_chunks_async(route: Route, fmt: str) -> list[Any]:
    async with async_client(route, fmt) as client:
        stream = await open_async(client, fmt)
        async with stream:
            return [chunk async for chunk in stream]


# ---------------------------------------------------------------------------------------------
# The wrapper, end to end


def assemble_sync(route: Route, fmt: str, **options: Any) -> tuple[list[Any], Any]:
    """Run `toolwire.assemble` over a real sync SDK stream; returns (events, tool stream)."""
    from toolwire.stream import assemble

    with sync_client(route, fmt) as client, assemble(open_sync(client, fmt), **options) as stream:
        events = list(stream)
    check_event_order(events, stream)
    return events, stream


async def assemble_async(route: Route, fmt: str, **options: Any) -> tuple[list[Any], Any]:
    from toolwire.stream import aassemble

    async with async_client(route, fmt) as client:
        source = await open_async(client, fmt)
        async with aassemble(source, **options) as stream:
            events = [event async for event in stream]
    check_event_order(events, stream)
    return events, stream


def ascii_escaped(body: bytes) -> bytes:
    """`body` with every non-ASCII character written as its JSON `\\uXXXX` escape (a surrogate
    pair for astral ones), as servers with `ensure_ascii` send it: the same events."""
    out = bytearray()
    # A body cut by a dropped connection may end inside a character: those bytes stay as sent.
    for c in body.decode("utf-8", "surrogateescape"):
        if c.isascii() or "\udc80" <= c <= "\udcff":
            out += c.encode("utf-8", "surrogateescape")
            continue
        units = c.encode("utf-16-be")
        for i in range(0, len(units), 2):
            out += f"\\u{units[i]:02x}{units[i + 1]:02x}".encode()
    return bytes(out)


def raw_plans(body: bytes, cuts: list[int]) -> dict[str, list[bytes]]:
    """The cuts a gateway may see on the same bytes: the server's own writes, every byte alone,
    inside every `\\uXXXX` escape and inside `data:` (and, in a CRLF copy of the body, between
    `\\r` and `\\n`), and byte by byte through a copy with non-ASCII characters escaped."""
    inside = set(adversarial_points(body))
    for i in range(len(body) - 1):
        if body[i : i + 2] == b"\\u":
            inside.update(range(i + 1, i + 6))
    crlf = body.replace(b"\n", b"\r\n")
    crlf_cuts = [i + 1 for i in range(len(crlf)) if crlf[i : i + 2] == b"\r\n"]
    ascii_body = ascii_escaped(body)
    return {
        "server": pieces(body, cuts),
        "bytewise": [body[i : i + 1] for i in range(len(body))],
        "inside": pieces(body, sorted(c for c in inside if c <= len(body))),
        "crlf": pieces(crlf, crlf_cuts),
        "ascii-bytewise": [ascii_body[i : i + 1] for i in range(len(ascii_body))],
    }


def raw_key(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (c.ordinal, c.index, c.name, c.id, c.arguments, c.value, c.error.kind if c.error else None)
        for c in calls
    ]


def _progress(items: list[tuple[int, str, str]]) -> dict[tuple[int, str], str]:
    """Progress text joined per (call, JSON Pointer): how it is cut depends on the chunks."""
    out: dict[tuple[int, str], str] = {}
    for ordinal, path, text in items:
        out[ordinal, path] = out.get((ordinal, path), "") + text
    return out


def assemble_both(route: Route, fmt: str, **options: Any) -> tuple[list[Any], Any]:
    """The real SDK through `assemble`, then `feed_sse` on the very same bytes, cut every way a
    gateway may see them: both paths must give the same calls, text and finish reason, the same
    pre-check errors in the same order, and the same progress text."""
    from toolwire.assembler import Assembler
    from toolwire.events import ArgumentsProgress, PrecheckError

    events, stream = assemble_sync(route, fmt, **options)
    body = route.body if route.drop_after is None else route.body[: route.drop_after]
    tools = options.get("tools")
    early_sdk = [
        (e.ordinal, e.error.kind, e.error.offset, e.error.path)
        for e in events
        if isinstance(e, PrecheckError)
    ]
    progress_sdk = _progress(
        [(e.ordinal, e.path, e.text) for e in events if isinstance(e, ArgumentsProgress)]
    )
    for plan, parts in raw_plans(body, route.cuts).items():
        raw = Assembler(tools=tools, track_progress=True)
        early: list[tuple[Any, ...]] = []
        progress: list[tuple[int, str, str]] = []
        for part in parts:
            raw.feed_sse(part)
            early += [(o, e.kind, e.offset, e.path) for o, e in raw.drain_errors()]
            progress += raw.drain_progress()
        if route.drop_after is not None:
            raw.interrupt("the connection dropped")
            early += [(o, e.kind, e.offset, e.path) for o, e in raw.drain_errors()]
        calls = raw.finish()
        # What `finish` released (a fragment held to tell a resend from new text).
        progress += raw.drain_progress()
        assert early == early_sdk, plan
        assert _progress(progress) == progress_sdk, (plan, _progress(progress), progress_sdk)
        assert raw_key(calls) == raw_key(stream.calls), plan
        assert [c.warnings for c in calls] == [c.warnings for c in stream.calls], (
            plan,
            [(c.arguments, c.warnings) for c in calls],
            [(c.arguments, c.warnings) for c in stream.calls],
        )
        assert [c.metadata for c in calls] == [c.metadata for c in stream.calls], plan
        assert raw.text == stream.text, plan
        assert raw.reasoning == stream.reasoning, plan
        assert raw.text_places == stream.text_places, plan
        # Past a limit the wrapper reads no further: the finish reason and usage after it are
        # only in the bytes a gateway was given.
        past_limit = any(kind == "stream_limit" for kind, _, _ in raw.stream_errors())
        if route.drop_after is None and not past_limit:
            assert raw.finish_reason == stream.finish_reason, plan
            assert raw.usage == stream.usage, plan
        if tools is not None:
            assert [tools.validate(c).ok for c in calls] == [o.ok for o in stream.outcomes]
    return events, stream


def both_paths(
    events: list[Any], fmt: str, *, limit: int = 1 << 20, cuts: Sequence[int] = ()
) -> tuple[Any, Any]:
    """The events fed as dicts through `feed_chunk`, and their SSE body through `feed_sse` cut
    at `cuts` (each taken modulo the body's length), both assemblers finished."""
    from toolwire.assembler import Assembler

    chunks, raw = Assembler(max_stream_bytes=limit), Assembler(max_stream_bytes=limit)
    for event in events:
        chunks.feed_chunk(event)
    body = sse_body(events, fmt)
    at = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    for start, end in itertools.pairwise(at):
        raw.feed_sse(body[start:end])
    chunks.finish()
    raw.finish()
    return chunks, raw


def _read(asm: Any, calls: list[Any], reason: Any, usage: Any) -> tuple[Any, ...]:
    return (
        [(c.name, c.id, c.arguments, c.error.kind if c.error else None, c.metadata) for c in calls],
        reason,
        usage,
        asm.reasoning,
        asm.stream_errors(),
    )


def every_path(events: list[Any], fmt: str, body: bytes | None = None) -> list[tuple[Any, ...]]:
    """What each way in reads of `events`: `feed_chunk` with them as dicts, then `feed_sse` on
    their body (`body`, else as `sse_body` writes it) whole, byte by byte, and cut in two at
    every byte. Each as (calls, finish reason, usage, reasoning, stream errors), a call as
    (name, id, arguments, error kind, metadata)."""
    from toolwire.assembler import Assembler

    chunks = Assembler()
    told = [chunks.feed_chunk(event) for event in events]
    calls = chunks.finish()
    reasons = [info.finish_reason for info in told if info.finish_reason is not None]
    usages = [info.usage for info in told if info.usage is not None]
    seen = [_read(chunks, calls, (reasons or [None])[-1], (usages or [None])[-1])]
    body = sse_body(events, fmt) if body is None else body
    cuts = [[body], [body[i : i + 1] for i in range(len(body))]]
    cuts += [[body[:i], body[i:]] for i in range(1, len(body))]
    for parts in cuts:
        raw = Assembler()
        for part in parts:
            raw.feed_sse(part)
        calls = raw.finish()
        seen.append(_read(raw, calls, raw.finish_reason, raw.usage))
    return seen


def agree_on_every_path(events: list[Any], fmt: str, body: bytes | None = None) -> tuple[Any, ...]:
    """What every way in reads of `events` ([`every_path`]), checked to be the same."""
    first, *others = every_path(events, fmt, body)
    differ = [i for i, seen in enumerate(others) if seen != first]
    assert not differ, f"feed_sse (way {differ[0]}) read {others[differ[0]]}, not {first}"
    return first


def check_reasoning(
    events: list[Any], stream: Any, names: list[str], reasoning: list[Any], text: str
) -> None:
    """The stream made whole calls of `names`, kept `reasoning` (also on its `StreamEnded`),
    and none of it as assistant text, which is `text`."""
    from toolwire.events import StreamEnded

    assert [c.name for c in stream.calls] == names
    assert all(c.ok for c in stream.calls)
    assert stream.reasoning == reasoning
    end = events[-1]
    assert isinstance(end, StreamEnded) and list(end.reasoning) == reasoning
    assert stream.text == text


def check_event_order(events: list[Any], stream: Any) -> None:
    """The guarantees documented in toolwire.events, checked on every end-to-end run."""
    from toolwire.events import (
        ArgumentsProgress,
        CallCompleted,
        CallStarted,
        PrecheckError,
        StreamEnded,
    )

    assert events, "a stream always ends with StreamEnded"
    assert isinstance(events[-1], StreamEnded)
    assert sum(isinstance(e, StreamEnded) for e in events) == 1
    started: list[int] = []
    completed: list[int] = []
    for event in events:
        if isinstance(event, CallStarted):
            assert event.ordinal not in started, "one CallStarted per call"
            started.append(event.ordinal)
        elif isinstance(event, (ArgumentsProgress, PrecheckError)):
            assert event.ordinal in started and event.ordinal not in completed
        elif isinstance(event, CallCompleted):
            assert event.call.ordinal in started, "CallStarted comes first"
            assert event.call.ordinal not in completed, "exactly one CallCompleted"
            completed.append(event.call.ordinal)
    assert started == sorted(started) == completed
    assert [c.ordinal for c in stream.calls] == completed
    assert list(events[-1].calls) == stream.calls
    assert list(events[-1].reasoning) == stream.reasoning


def assemble_gemini(
    route: Route, chunks: list[dict[str, Any]], **options: Any
) -> tuple[list[Any], Any]:
    """The real google-genai client through `assemble`, then `feed_sse` on the very same bytes
    cut every way a gateway may see them (`assemble_both`), then `feed_chunk` on the same chunks
    as plain dicts of the REST shape, and again as the snake_case dicts of the SDK objects'
    `model_dump()`: every way in must give the same calls, text, finish reason and usage."""
    from toolwire.assembler import Assembler

    events, stream = assemble_both(route, "gemini", **options)
    detected = Assembler()
    detected.feed_sse(route.body)
    assert detected.format == "gemini"
    if route.drop_after is not None:
        return events, stream
    sdk = sdk_chunks(route, "gemini")
    for shape, dicts in (
        ("rest", chunks),
        ("snake", [c.model_dump(exclude_none=True) for c in sdk]),
        ("sdk", sdk),
    ):
        asm = Assembler(tools=options.get("tools"))
        infos = [asm.feed_chunk(chunk) for chunk in dicts]
        calls = asm.finish()
        assert raw_key(calls) == raw_key(stream.calls), shape
        assert [c.metadata for c in calls] == [c.metadata for c in stream.calls], shape
        assert [c.warnings for c in calls] == [c.warnings for c in stream.calls], shape
        assert "".join(i.text for i in infos) == stream.text, shape
        assert asm.text_places == stream.text_places, shape
        assert asm.reasoning == stream.reasoning, shape
        reasons = [i.finish_reason for i in infos if i.finish_reason is not None]
        assert (reasons[-1] if reasons else None) == stream.finish_reason, shape
        usages = [i.usage for i in infos if i.usage is not None]
        assert (usages[-1] if usages else None) == stream.usage, shape
    return events, stream


# ---------------------------------------------------------------------------------------------
# Closing from elsewhere: a watchdog (a "stop" button, a per-request timeout) closes the stream
# while the consumer waits for a chunk from a server that stopped sending.

# The clients' read timeout: far longer than a test may take, so only the close can end a read.
READ_TIMEOUT = 60.0
# How long the consumer may take to see the close (it is at once; the bound keeps a failure
# from hanging the run).
UNBLOCKED = 10.0


class ThreadReader:
    """A consumer that reads a tool stream on a thread of its own until a close ends it."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.events: list[Any] = []
        self.raised: list[BaseException] = []
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._consume)
        self._thread.start()

    def _consume(self) -> None:
        from toolwire.events import CallStarted

        try:
            for event in self.stream:
                self.events.append(event)
                if isinstance(event, CallStarted):
                    self._started.set()
        except BaseException as exc:
            self.raised.append(exc)

    def wait_inside_next(self) -> None:
        """Wait until the reader saw a call start and waits in the read after it."""
        assert self._started.wait(UNBLOCKED)
        # No event follows `CallStarted` before the stall, so once the reader holds the
        # stream's reading lock again it waits in the read (its own `next` call, which a close
        # must cut).
        give_up = time.monotonic() + UNBLOCKED
        while not self.stream._reading.locked():
            assert time.monotonic() < give_up, "the reader never went back into next()"
            time.sleep(0.001)

    def close_and_join(self) -> None:
        """Close the stream from this thread: the reader must end at once, raising nothing."""
        began = time.monotonic()
        self.stream.close()
        self.join()
        assert time.monotonic() - began < UNBLOCKED

    def join(self) -> None:
        """Wait for the reader to end (within `UNBLOCKED`), having raised nothing."""
        self._thread.join(UNBLOCKED)
        assert not self._thread.is_alive() and self.raised == []


async def task_reader(stream: Any) -> asyncio.Future[list[Any]]:
    """A task that reads an async tool stream to its end (its result: the events), once it saw
    a call start and waits for the next chunk."""
    from toolwire.events import CallStarted

    started = asyncio.Event()

    async def consume() -> list[Any]:
        events: list[Any] = []
        async for event in stream:
            events.append(event)
            if isinstance(event, CallStarted):
                started.set()
        return events

    reader = asyncio.ensure_future(consume())
    await asyncio.wait_for(started.wait(), UNBLOCKED)
    await asyncio.sleep(0.01)  # the reader now waits inside `__anext__` for the next chunk
    return reader


def next_responses_input(server: SSEServer, items: list[Any]) -> list[Any]:
    """Sends `items` as the input of a stateless streamed Responses request (`store=False`,
    with the encrypted reasoning) through the real openai client to `server`, and returns the
    input the server received."""
    from .streamkit import responses_stream

    follow_up = server.register_events(responses_stream([], text="Done."), "openai-responses")
    with (
        openai.OpenAI(base_url=follow_up.openai_base_url, api_key="test", max_retries=0) as client,
        client.responses.create(
            model="test-model",
            input=items,
            store=False,
            include=["reasoning.encrypted_content"],
            stream=True,
        ) as events,
    ):
        assert [e.type for e in events][-1] == "response.completed"
    (request,) = follow_up.requests
    return request["json"]["input"]
