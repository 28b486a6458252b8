"""A recorded stream that a provider error ended replays as the live stream ended.

The openai SDK raises a Chat `{"error": ...}` line and the anthropic SDK an `error` event
instead of yielding them, so the recorder never sees that chunk. Replayed without it, the
recording would end as if the provider had stopped cleanly: a call whose JSON happened to be
complete would come back runnable, where the live stream refused it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import Assembler, Toolset, assemble
from toolwire.recorder import Recorder
from toolwire.replay import load_corpus, replay, verdict

from .clients import open_sync, sync_client
from .conftest import SSEServer
from .streamkit import (
    PROVIDER_ERRORS,
    Call,
    before_the_end,
    chat_stream,
    sse_body,
    well_formed_stream,
)

CALLS = [Call("get_weather", '{"city": "Oslo"}'), Call("lookup", '{"q": [1, 2')]

TOOLS = Toolset(
    [
        {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "array"}}},
        },
    ]
)


def _recorded_live(
    sse_server: SSEServer,
    tmp_path: Path,
    fmt: str,
    events: list[dict[str, Any]],
    *,
    broken: bool = False,
) -> tuple[Any, list[tuple[str, str | None]]]:
    """Streams `events` through the real SDK client and a recorder (`broken`: the server drops
    the connection before the last byte); the stream and each call's live verdict."""
    body = sse_body(events, fmt)
    if broken:
        route = sse_server.register(body, drop_after=len(body) - 1)
    else:
        route = sse_server.register(body.removesuffix(b"data: [DONE]\n\n"))
    recorder = Recorder(tmp_path / "corpus.jsonl", toolset=TOOLS, streams="all")
    with sync_client(route, fmt) as client:
        with recorder.assemble(open_sync(client, fmt)) as stream:
            list(stream)
    return stream, [verdict(c, o) for c, o in zip(stream.calls, stream.outcomes, strict=True)]


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_replay_of_a_recorded_provider_error_matches_live(
    sse_server: SSEServer, tmp_path: Path, fmt: str
) -> None:
    events = [*before_the_end(well_formed_stream(fmt, CALLS, size=4), fmt), PROVIDER_ERRORS[fmt]]
    stream, live = _recorded_live(sse_server, tmp_path, fmt, events)
    assert stream.finish_reason == "error"
    assert [state for state, _ in live] == ["model_error", "model_error"]

    (case,) = replay(load_corpus([tmp_path / "corpus.jsonl"]), TOOLS).cases
    assert [(c.state, c.code) for c in case.calls] == live


# OpenRouter's mid-stream error: a chunk with `error` next to `choices`. The openai SDK raises it
# like a bare `{"error": ...}` line.
OPENROUTER_ERROR = {
    "id": "gen-1",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "test-model",
    "error": {"code": 502, "message": "Provider disconnected"},
    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
}


def test_error_next_to_choices_ends_the_calls_on_every_path(
    sse_server: SSEServer, tmp_path: Path
) -> None:
    events = [*before_the_end(chat_stream(CALLS, size=4), "openai-chat"), OPENROUTER_ERROR]
    body = sse_body(events, "openai-chat").removesuffix(b"data: [DONE]\n\n")
    route = sse_server.register(body)
    recorder = Recorder(tmp_path / "recorded.jsonl", toolset=TOOLS, streams="all")
    with sync_client(route, "openai-chat") as client:
        with recorder.assemble(open_sync(client, "openai-chat")) as live:
            list(live)
    assert live.finish_reason == "error"
    expected = [verdict(c, o) for c, o in zip(live.calls, live.outcomes, strict=True)]
    assert expected == [("model_error", "filtered"), ("model_error", "filtered")]

    (tmp_path / "body.sse").write_bytes(body)
    with (tmp_path / "chunks.jsonl").open("w", encoding="utf-8") as out:
        out.write(json.dumps({"toolwire": "stream", "format": "openai-chat"}) + "\n")
        out.writelines(json.dumps(e) + "\n" for e in events)
    with (tmp_path / "auto.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(e) + "\n" for e in events)
    corpus = load_corpus(
        [tmp_path / name for name in ("recorded.jsonl", "body.sse", "chunks.jsonl", "auto.jsonl")]
    )
    report = replay(corpus, TOOLS)
    assert len(report.cases) == 4
    for case in report.cases:
        assert [(c.state, c.code) for c in case.calls] == expected, case.entry.key

    # The dict-chunk path of the live stream agrees too.
    with assemble(events, TOOLS) as stream:
        list(stream)
    assert stream.finish_reason == "error"
    assert [verdict(c, o) for c, o in zip(stream.calls, stream.outcomes, strict=True)] == expected


@pytest.mark.parametrize("empty", [None, {}, ""])
def test_an_empty_error_next_to_choices_is_no_error(empty: object) -> None:
    # The SDK raises only for a truthy `error`; some gateways send `"error": null` on every chunk.
    events = [{**e, "error": empty} for e in chat_stream(CALLS[:1], size=4)]
    sse = Assembler()
    sse.feed_sse(sse_body(events, "openai-chat"))
    chunks = Assembler()
    for event in events:
        chunks.feed_chunk(event)
    for asm in (sse, chunks):
        (call,) = asm.finish()
        assert call.error is None and call.value == {"city": "Oslo"}


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_replay_of_a_broken_connection_matches_live(
    sse_server: SSEServer, tmp_path: Path, fmt: str
) -> None:
    # The connection drops after the first call's JSON closed and while the second call has
    # only started: a transport error leaves no chunk, so the record says the stream broke off.
    calls = [Call("get_weather", '{"city": "Oslo"}'), Call("lookup", "")]
    events = before_the_end(well_formed_stream(fmt, calls, size=4), fmt)
    stream, live = _recorded_live(sse_server, tmp_path, fmt, events, broken=True)
    assert stream.transport_error is not None
    assert len(live) == 2 and live[1][0] != "ok"
    (record,) = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert record["interrupted"] == type(stream.transport_error).__name__

    (case,) = replay(load_corpus([tmp_path / "corpus.jsonl"]), TOOLS).cases
    assert [(c.state, c.code) for c in case.calls] == live
