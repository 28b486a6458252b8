"""A provider error inside the stream, through the real SDK clients and on the raw SSE path.

The openai SDK raises a Chat `{"error": ...}` line and the anthropic SDK an `error` event; the
Responses client yields its `error` event. Every path must end the response the same way: the
calls the provider had not ended do not run (even one whose JSON happens to be complete), and
the finish reason is `error`.
"""

from __future__ import annotations

import pytest

pytest.importorskip("toolwire._core")

from toolwire import tool_messages

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import PROVIDER_ERRORS, Call, before_the_end, sse_body, well_formed_stream

CALLS = [Call("get_weather", '{"city": "Oslo 😀"}'), Call("lookup", '{"q": [1, 2')]


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_a_provider_error_mid_stream_runs_no_call(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    events = [*before_the_end(well_formed_stream(fmt, CALLS, size=4), fmt), PROVIDER_ERRORS[fmt]]
    body = sse_body(events, fmt)
    if fmt == "openai-chat":
        body = body.removesuffix(b"data: [DONE]\n\n")
    _, stream = assemble_both(sse_server.register(body, split=split), fmt)
    assert [c.name for c in stream.calls] == ["get_weather", "lookup"]
    assert all(not c.ok and c.error is not None for c in stream.calls)
    assert stream.finish_reason == "error"
    messages = tool_messages(stream.calls, [None, None])
    assert [m["tool_call_id"] for m in messages] == [c.id for c in stream.calls]
