"""Per-stream limits (fault 14): a response with too many calls or too many bytes is refused
whole, on the SDK path and the raw SSE path alike, and nothing more of it is kept."""

from __future__ import annotations

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import Call, anthropic_stream, chat_stream, responses_stream, sse_body

GENERATORS = {
    "openai-chat": chat_stream,
    "openai-responses": responses_stream,
    "anthropic": anthropic_stream,
}


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_ten_thousand_calls_are_refused_whole(fmt: str) -> None:
    # The default `max_calls` is 1,024: the calls kept all fail, none runs, and what the calls
    # past the limit carried (ids, metadata) is not kept on any of them.
    events = GENERATORS[fmt]([Call("f", '{"a": 1}') for _ in range(10_000)], size=64)
    raw = Assembler()
    raw.feed_sse(sse_body(events, fmt))
    sdk = Assembler()
    for event in events:
        sdk.feed_chunk(event)
    for asm in (raw, sdk):
        assert [kind for kind, _, _ in asm.stream_errors()] == ["stream_limit"]
    kept = [raw.finish(), sdk.finish()]
    for calls in kept:
        assert len(calls) == 1024
        assert {c.error.kind for c in calls if c.error} == {"too_large"}
        assert calls[-1].id is not None and calls[-1].id.endswith("1023")
    assert [(c.id, c.metadata) for c in kept[0]] == [(c.id, c.metadata) for c in kept[1]]


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_calls_past_the_limit_through_the_sdk(sse_server: SSEServer, fmt: str) -> None:
    calls = [Call("f", '{"a": 1}') for _ in range(1030)]
    route = sse_server.register(sse_body(GENERATORS[fmt](calls, size=64), fmt))
    _, s = assemble_both(route, fmt)
    assert len(s.calls) == 1024
    assert not any(c.ok for c in s.calls)
    assert not any(o.ok for o in s.outcomes)


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_bytes_past_the_stream_limit_are_not_kept(fmt: str) -> None:
    calls = [Call("write", '{"text": "' + "x" * 5000 + '"}') for _ in range(3)]
    events = GENERATORS[fmt](calls, size=100)
    raw = Assembler(max_stream_bytes=8000)
    raw.feed_sse(sse_body(events, fmt))
    sdk = Assembler(max_stream_bytes=8000)
    for event in events:
        sdk.feed_chunk(event)
    for done in (raw.finish(), sdk.finish()):
        # Calls whose start came after the limit are not read at all.
        assert 1 <= len(done) <= 3
        # What is kept is counted after it is kept: at most one fragment (100 bytes) past.
        assert sum(len(c.arguments) for c in done) <= 8000 + 100
        assert all(c.error is not None and c.error.kind == "too_large" for c in done)
        assert "max_stream_bytes" in done[0].error.message


def test_limits_are_checked() -> None:
    from toolwire import MisuseError

    with pytest.raises(MisuseError):
        Assembler(max_calls=0)
    with pytest.raises((MisuseError, OverflowError, ValueError)):
        Assembler(max_stream_bytes=-1)
