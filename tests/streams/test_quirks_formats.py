"""Provider quirks of the argument payload, finish and encoding families on the Anthropic and
Responses wire formats, through both ways in on the very same bytes.

`test_quirks.py` covers each quirk on Chat Completions. The ones below can occur on every format
(a translator or a local server behind an Anthropic- or Responses-compatible endpoint sends the
same defects), so each is served to the real SDK client over HTTP and read with `assemble`, and
`assemble_both` then feeds the identical body to `feed_sse`, cut every way a gateway may see it
(the server's writes, byte by byte, inside `\\uXXXX` escapes and `data:`, CRLF line ends split):
both must give the same calls, and every call ends with exactly one result.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("toolwire._core")

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import Call, anthropic_stream


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_quirk_23_whole_object_arguments_read_the_same_on_both_paths(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # A Python server's default `json.dumps` (", " and ": " separators, `\uXXXX` for non-ASCII)
    # and a Go server's (`\u003c` for `<`) put the arguments object on the wire with spaces and
    # escapes. The SDK decodes the event and toolwire serializes the dict compactly; the raw path
    # used to keep the object's wire text, so `arguments` differed between the two ways in.
    value = {"city": "Zürich <b>", "n": [1, {"x": None}], "s": 'a"b\\c\n\u001f/😀'}
    if fmt == "openai-chat":
        entry = {"index": 0, "id": "a", "type": "function"}
        entry["function"] = {"name": "f", "arguments": value}
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    else:
        events = anthropic_stream([Call("f", "{}")])
        start = next(e for e in events if e["type"] == "content_block_start")
        start["content_block"]["input"] = value
        events = [e for e in events if e["type"] != "content_block_delta"]
    go_escape = "\\u003c"
    body = "".join(
        (f"event: {e['type']}\n" if fmt == "anthropic" else "")
        + "data: "
        + json.dumps(e).replace("<", go_escape)
        + "\n\n"
        for e in events
    )
    body += "data: [DONE]\n\n" if fmt == "openai-chat" else ""
    assert "\\u00fc" in body and "\\u003c" in body and '"city": ' in body
    _, s = assemble_both(sse_server.register(body.encode(), split=split), fmt)
    (call,) = s.calls
    assert call.ok and call.value == value
    assert call.arguments == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
