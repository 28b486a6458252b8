"""A provider error inside the stream, through the real SDK clients and on the raw SSE path.

The openai SDK raises a Chat `{"error": ...}` line and the anthropic SDK an `error` event; the
Responses client yields its `error` event. Every path must end the response the same way: the
calls the provider had not ended do not run (even one whose JSON happens to be complete), and
the finish reason is `error`.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import tool_messages

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import Call, anthropic_stream, chat_stream, responses_stream, sse_body

CALLS = [Call("get_weather", '{"city": "Oslo 😀"}'), Call("lookup", '{"q": [1, 2')]


def _cut_before_the_end(events: list[dict[str, Any]], fmt: str) -> list[dict[str, Any]]:
    """The events before any call or the response ends."""
    if fmt == "anthropic":
        ends = ("content_block_stop", "message_delta", "message_stop")
        return [e for e in events if e["type"] not in ends]
    if fmt == "openai-responses":
        return [e for e in events if "done" not in e["type"] and "completed" not in e["type"]]
    return [e for e in events if not any(c.get("finish_reason") for c in e.get("choices", []))]


ERRORS: dict[str, dict[str, Any]] = {
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
    "openai-responses": {
        "type": "error",
        "code": "server_error",
        "message": "busy",
        "param": None,
        "sequence_number": 999,
    },
    "openai-chat": {"error": {"message": "busy", "type": "server_error"}},
}

STREAMS = {"anthropic": anthropic_stream, "openai-responses": responses_stream}


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_a_provider_error_mid_stream_runs_no_call(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    make = STREAMS.get(fmt, chat_stream)
    events = [*_cut_before_the_end(make(CALLS, size=4), fmt), ERRORS[fmt]]
    body = sse_body(events, fmt)
    if fmt == "openai-chat":
        body = body.removesuffix(b"data: [DONE]\n\n")
    _, stream = assemble_both(sse_server.register(body, split=split), fmt)
    assert [c.name for c in stream.calls] == ["get_weather", "lookup"]
    assert all(not c.ok and c.error is not None for c in stream.calls)
    assert stream.finish_reason == "error"
    messages = tool_messages(stream.calls, [None, None])
    assert [m["tool_call_id"] for m in messages] == [c.id for c in stream.calls]
