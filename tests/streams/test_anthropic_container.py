"""Anthropic's code-execution container: a turn that stops with `pause_turn` after a server tool
(code execution) is continued by sending it back as it is, in the same container (`container=`
its id, which the `Message` carries and a stream names on `message_delta`'s delta), so that
the code goes on with its files and state. The id was on no path: it is told where the stream's
end is (`stream.container`, `StreamEnded.container`), by `feed_sse` (`Assembler.container`) and
by `feed_chunk` (`ChunkInfo.container`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import assemble
from toolwire.assembler import Assembler
from toolwire.events import StreamEnded

from .clients import assemble_async, assemble_both, both_paths
from .conftest import SSEServer
from .streamkit import anthropic_message_start

FMT = "anthropic"
CONTAINER = {"id": "container_011CTpC8", "expires_at": "2026-12-07T23:35:00Z"}
CODE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {}}
RESULT = {
    "type": "code_execution_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": {"type": "code_execution_result", "stdout": "4\n", "stderr": "", "return_code": 0},
}


def _paused(container: object = CONTAINER) -> list[dict[str, Any]]:
    """Text, a code execution and its result, then `pause_turn` naming the container."""
    return [
        anthropic_message_start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Running it."},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": CODE},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"code": "print(2+2)"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": RESULT},
        {"type": "content_block_stop", "index": 2},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "pause_turn", "stop_sequence": None, "container": container},
            "usage": {"output_tokens": 42},
        },
        {"type": "message_stop"},
    ]


def _told(events: list[dict[str, Any]]) -> list[str]:
    """The containers `feed_chunk` told, chunk by chunk."""
    asm = Assembler()
    told = [asm.feed_chunk(event).container for event in events]
    asm.finish()
    return [c for c in told if c is not None]


def test_the_container_is_told_at_the_stream_s_end_on_every_path(
    sse_server: SSEServer, split: str
) -> None:
    route = sse_server.register_events(_paused(), FMT, split=split)
    # The real SDK through `assemble` (sync and async), then `feed_sse` on the same bytes.
    events, stream = assemble_both(route, FMT)
    assert stream.finish_reason == "pause_turn" and stream.calls == []
    assert stream.container == CONTAINER["id"]
    end = events[-1]
    assert isinstance(end, StreamEnded) and end.container == CONTAINER["id"]
    _, later = asyncio.run(assemble_async(route, FMT))
    assert later.container == CONTAINER["id"]
    _, raw = both_paths(_paused(), FMT, cuts=range(1, 2000, 13))
    assert raw.container == CONTAINER["id"]
    assert _told(_paused()) == [CONTAINER["id"]]


def test_a_container_named_at_the_start_is_kept_to_the_end() -> None:
    # A whole `Message` names it on the message; read as the stream of it, `message_start`
    # does, and a later `message_delta` that names none does not forget it.
    events = _paused(None)
    events[0]["message"]["container"] = CONTAINER
    assert _told(events) == [CONTAINER["id"]]
    _, raw = both_paths(events, FMT)
    assert raw.container == CONTAINER["id"]


def test_a_whole_message_gives_its_container() -> None:
    from anthropic.types import Message

    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "test-model",
            "content": [{"type": "text", "text": "Running it."}, {**CODE, "input": {"code": "1"}}],
            "stop_reason": "pause_turn",
            "stop_sequence": None,
            "container": CONTAINER,
            "usage": {"input_tokens": 3, "output_tokens": 5},
        }
    )
    with assemble(message) as stream:
        events = list(stream)
    assert stream.container == CONTAINER["id"]
    end = events[-1]
    assert isinstance(end, StreamEnded) and end.container == CONTAINER["id"]


@pytest.mark.parametrize("container", [None, {"id": 7}, "container_1", {"id": ""}, {}])
def test_no_container_or_one_of_another_shape_names_none(container: object) -> None:
    _, raw = both_paths(_paused(container), FMT)
    assert raw.container is None
    assert raw.finish_reason == "pause_turn" and raw.stream_errors() == []
    assert _told(_paused(container)) == []
