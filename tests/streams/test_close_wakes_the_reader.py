"""A close from elsewhere wakes a reader blocked on a server that stopped sending, whatever the
SDK: also google-genai's streams (generators that show no response) and boto3's `EventStream`
(whose own close waited for the blocked read to end).

openai's and anthropic's streams are covered in test_openai_chat.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from google import genai
from google.genai import types
from pydantic import BaseModel, field_validator

from toolwire import Toolset
from toolwire.events import ArgumentsProgress, StreamEnded
from toolwire.stream import AsyncToolStream, aassemble, assemble

from .bedrockkit import CONTENT_TYPE, converse_events, converse_stream, eventstream_body, frames
from .clients import GEMINI_TOOLS, READ_TIMEOUT, UNBLOCKED, ThreadReader, task_reader
from .conftest import Route, SSEServer
from .streamkit import Call, chat_chunk, gemini_call, gemini_chunk, sse_body, tc


def _gemini_route(sse_server: SSEServer) -> Route:
    """A Gemini stream that sends one whole call, then nothing (the connection stays open)."""
    chunks = [
        gemini_chunk(gemini_call("get_weather", {"city": "Paris"})),
        gemini_chunk(gemini_call("get_weather", {"city": "Oslo"}), finish="STOP"),
    ]
    body = sse_body(chunks, "gemini")
    return sse_server.register(body, drop_after=body.index(b"\n\n") + 2, stall=True)


def _bedrock_route(sse_server: SSEServer) -> Route:
    """A ConverseStream that starts a call, then sends nothing (the connection stays open)."""
    body = eventstream_body(converse_events([Call("get_weather", '{"city": "Paris"}')]))
    named = body.index(b"get_weather")
    cut = next(start + total for start, _, total in frames(body) if named < start + total)
    return sse_server.register(body, drop_after=cut, stall=True, content_type=CONTENT_TYPE)


def _gemini(route: Route) -> genai.Client:
    options = types.HttpOptions(
        base_url=route.gemini_base_url, api_version="v1beta", timeout=int(READ_TIMEOUT * 1000)
    )
    return genai.Client(api_key="test", http_options=options)


@contextlib.contextmanager
def _sync_source(sse_server: SSEServer, sdk: str) -> Iterator[tuple[Route, Any]]:
    if sdk == "gemini":
        route = _gemini_route(sse_server)
        with _gemini(route) as client:
            yield (
                route,
                client.models.generate_content_stream(
                    model="test-model", contents="weather?", config={"tools": GEMINI_TOOLS}
                ),
            )
        return
    # botocore's read timeout is READ_TIMEOUT by default.
    route = _bedrock_route(sse_server)
    with converse_stream(route) as source:
        yield route, source


async def _gemini_reader(client: Any) -> tuple[AsyncToolStream, asyncio.Future[list[Any]]]:
    """A task reading a google-genai async stream, once it waits inside the SDK's generator
    (which cannot be closed while it is inside)."""
    source = await client.models.generate_content_stream(
        model="test-model", contents="weather?", config={"tools": GEMINI_TOOLS}
    )
    stream = aassemble(source)
    reader = await task_reader(stream)
    return stream, reader


def _check_ended(events: list[Any], stream: Any) -> None:
    # The reader's iteration ended as an early close ends it: the call it saw start completed
    # and the stream ended without a finish reason.
    assert [type(e).__name__ for e in events if not isinstance(e, ArgumentsProgress)] == [
        "CallStarted",
        "CallCompleted",
        "StreamEnded",
    ]
    assert [c.name for c in stream.calls] == ["get_weather"]
    assert isinstance(events[-1], StreamEnded) and stream.finish_reason is None
    assert stream.transport_error is None


@pytest.mark.parametrize("sdk", ["gemini", "bedrock"])
def test_close_from_another_thread_wakes_the_reader(sse_server: SSEServer, sdk: str) -> None:
    with _sync_source(sse_server, sdk) as (route, source):
        try:
            stream = assemble(source)
            reader = ThreadReader(stream)
            reader.wait_inside_next()
            # boto3's own close waited for the blocked read to end; google-genai's generator
            # could not be closed under its reader, nor its socket found.
            reader.close_and_join()
        finally:
            route.release.set()
    _check_ended(reader.events, stream)


@pytest.mark.anyio
async def test_aclose_from_another_task_wakes_a_gemini_reader(sse_server: SSEServer) -> None:
    route = _gemini_route(sse_server)
    try:
        async with _gemini(route).aio as client:
            stream, reader = await _gemini_reader(client)
            await stream.aclose()
            events = await asyncio.wait_for(reader, UNBLOCKED)
            await stream.aclose()  # again: nothing happens
    finally:
        route.release.set()
    _check_ended(events, stream)
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


@pytest.mark.anyio
async def test_a_cancellation_that_comes_with_the_aclose_still_cancels_the_reader(
    sse_server: SSEServer,
) -> None:
    # The close wakes the reader with a cancellation it then takes back: one of someone else's
    # (a timeout, a task group) that came at the same time must still end the reader's task.
    route = _gemini_route(sse_server)
    try:
        async with _gemini(route).aio as client:
            stream, reader = await _gemini_reader(client)
            await stream.aclose()
            reader.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(reader, UNBLOCKED)
    finally:
        route.release.set()
    assert [c.name for c in stream.calls] == ["get_weather"]


def test_a_close_leaves_the_socket_a_validator_reads_alone() -> None:
    # The stream validates calls on its reader's thread, in the application's own code, which
    # may wait on a socket of its own (a service behind a business check): a close from
    # another thread then must not shut that socket down, which is none of the stream's.
    ours, theirs = socket.socketpair()
    inside = threading.Event()
    received: list[bytes] = []

    class GetWeather(BaseModel):
        city: str

        @field_validator("city")
        @classmethod
        def _known(cls, value: str) -> str:
            inside.set()
            # Through a file, as HTTP clients read: the socket is then `self._sock` of the
            # frame that waits.
            with ours.makefile("rb") as answer:
                received.append(answer.read(10))
            return value

    chunk = chat_chunk(
        {"tool_calls": [tc(0, id="a", name="get_weather", arguments='{"city": "Paris"}')]},
        finish_reason="tool_calls",
    )
    stream = assemble([chunk], Toolset([GetWeather]))
    try:
        reader = ThreadReader(stream)
        assert inside.wait(UNBLOCKED)
        stream.close()
        theirs.sendall(b"the answer")
        reader.join()
    finally:
        ours.close()
        theirs.close()
    assert received == [b"the answer"]
    assert stream.outcomes[0].ok
