"""Responses streams whose text repeats: the SDK path and the raw SSE path must still agree.

Each stream is served to the real `openai` client over HTTP and read with `assemble`;
`assemble_both` then feeds the identical body to `feed_sse`, cut every way a gateway may see it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import Call, responses_stream

FMT = "openai-responses"


def _body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_summary_of_a_call_that_repeated_a_whole_value(sse_server: SSEServer, split: str) -> None:
    # The model wrote the same object twice in one call (quirk 21); the second delta equals the
    # whole first one, so it reads as a consolidated repeat (quirk 20) and is dropped. The
    # summary says both were sent: the call must not come back as one executable object. The
    # raw path compared the summary with the deltas only (equal) and returned `{"a":1}` as
    # valid, while `feed_chunk`, which compares with what the call holds, flagged it.
    events = responses_stream([Call("f", '{"a":1}{"a":1}')], size=7)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert not call.ok and call.error is not None
    assert call.error.kind == "concatenated_values"
