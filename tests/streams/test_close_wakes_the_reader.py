"""A close from elsewhere wakes a reader blocked on a server that stopped sending, whatever the
SDK: also google-genai's streams (generators that show no response) and boto3's `EventStream`
(whose own close waited for the blocked read to end).

openai's and anthropic's streams are covered in test_openai_chat.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from google import genai
from google.genai import types

from toolwire.events import ArgumentsProgress, StreamEnded
from toolwire.stream import assemble

from .bedrockkit import CONTENT_TYPE, converse_events, converse_stream, eventstream_body, frames
from .clients import GEMINI_TOOLS, READ_TIMEOUT, ThreadReader
from .conftest import Route, SSEServer
from .streamkit import Call, gemini_call, gemini_chunk, sse_body


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
