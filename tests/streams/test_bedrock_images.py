"""Bedrock Converse `image` blocks in the model's answer: the next turn must send the message
back as it came, so an image the model wrote (its `format` at its start, its `source.bytes` in
`image` deltas) is kept whole, in its place, with the reasoning blocks (`Assembler.reasoning`),
on every path: the real boto3 client through `assemble` (which decodes the base64 of the wire),
the event dicts through `feed_chunk`, and a whole `Converse` answer. It used to be dropped, and
the next turn went without it."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _bedrock_request_errors  # pyright: ignore[reportPrivateUsage]
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler
from toolwire.events import StreamEnded

from .bedrockkit import (
    assemble_bedrock,
    block_stop,
    message_stop,
    metadata,
    reasoning_block,
    serve,
    text_block,
    tool_block,
)
from .conftest import SSEServer
from .streamkit import Call

FMT = "bedrock-converse"
# Bytes of every value, a UTF-8 lead byte and a NUL among them: no text would carry them.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3


def _image(index: int, data: bytes = PNG, *, size: int = 100, kind: str = "png") -> list[Any]:
    """An image block as Bedrock streams it: its start with the format, the bytes in pieces
    (base64 on the wire, as boto3's model has them), its stop."""
    start = {"image": {"format": kind}}
    pieces = [data[at : at + size] for at in range(0, len(data), size)]
    return [
        {"contentBlockStart": {"start": start, "contentBlockIndex": index}},
        *(_image_delta(index, {"source": {"bytes": _b64(piece)}}) for piece in pieces),
        block_stop(index),
    ]


def _image_delta(index: int, image: dict[str, Any]) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"image": image}, "contentBlockIndex": index}}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _events() -> list[dict[str, Any]]:
    """Reasoning, text, the model's image, more text, then a client call."""
    return [
        {"messageStart": {"role": "assistant"}},
        *reasoning_block(0, "Draw first."),
        *text_block(1, "Here it is:"),
        *_image(2),
        *text_block(3, "Now saving."),
        *tool_block(4, Call("save", '{"name": "chart"}', "tooluse_1")),
        message_stop("tool_use"),
        metadata(),
    ]


REASONING = {"reasoningContent": {"reasoningText": {"text": "Draw first.", "signature": "c2ln"}}}
IMAGE = {"image": {"format": "png", "source": {"bytes": PNG}}}
KEPT = [REASONING, IMAGE]


def _fed(events: list[dict[str, Any]], limit: int = 1 << 20) -> tuple[Assembler, list[Any]]:
    asm = Assembler(max_stream_bytes=limit)
    for event in events:
        asm.feed_chunk(event)
    return asm, asm.finish()


def test_an_image_is_kept_in_its_place_on_every_path(sse_server: SSEServer, split: str) -> None:
    events, stream = assemble_bedrock(serve(sse_server, _events(), split=split))
    assert [(c.name, c.value) for c in stream.calls] == [("save", {"name": "chart"})]
    assert stream.reasoning == KEPT
    end = events[-1]
    assert isinstance(end, StreamEnded) and list(end.reasoning) == KEPT
    assert stream.text == "Here it is:Now saving."
    # The call comes after both blocks.
    assert [c.metadata.get("reasoning_before") for c in stream.calls] == [2]
    asm, calls = _fed(_events())
    assert asm.reasoning == KEPT
    assert [c.metadata.get("reasoning_before") for c in calls] == [2]


def test_the_next_turn_sends_the_image_back_in_its_place() -> None:
    asm, calls = _fed(_events())
    (turn,) = assistant_turn(
        calls, style=FMT, text="Here it is:Now saving.", reasoning=asm.reasoning
    )
    assert turn["content"] == [
        REASONING,
        {"text": "Here it is:"},
        IMAGE,
        {"text": "Now saving."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "save", "input": {"name": "chart"}}},
    ]
    results = tool_messages(calls, ["saved"], style=FMT)
    user = {"role": "user", "content": [{"text": "Draw a chart and save it."}]}
    # botocore's own validator of the Converse request takes it.
    assert _bedrock_request_errors([user, turn, {"role": "user", "content": results}]) == ""


def test_a_turn_of_text_and_an_image_keeps_both_places() -> None:
    events = [
        {"messageStart": {"role": "assistant"}},
        *text_block(0, "Before."),
        *_image(1, b"GIF89a", kind="gif"),
        *text_block(2, "After."),
        message_stop("end_turn"),
    ]
    asm, calls = _fed(events)
    shown = {"image": {"format": "gif", "source": {"bytes": b"GIF89a"}}}
    assert asm.reasoning == [shown]
    (turn,) = assistant_turn(
        calls, style=FMT, text="Before.After.", reasoning=asm.reasoning, text_places=asm.text_places
    )
    assert turn["content"] == [{"text": "Before."}, shown, {"text": "After."}]


def test_an_image_from_s3_is_kept_with_its_location() -> None:
    location = {"uri": "s3://bucket/chart.png", "bucketOwner": "123456789012"}
    events = [
        {"contentBlockStart": {"start": {"image": {"format": "png"}}, "contentBlockIndex": 0}},
        _image_delta(0, {"source": {"s3Location": location}}),
        block_stop(0),
        message_stop("end_turn"),
    ]
    asm, _ = _fed(events)
    assert asm.reasoning == [{"image": {"format": "png", "source": {"s3Location": location}}}]


def test_an_image_that_failed_or_was_cut_off_is_left_out() -> None:
    failed = [
        *_image(0)[:2],
        _image_delta(0, {"error": {"message": "the image could not be made"}}),
        block_stop(0),
    ]
    unreadable = [
        *_image(1)[:2],
        _image_delta(1, {"source": {"bytes": "not base64!"}}),
        block_stop(1),
    ]
    no_format = [
        {"contentBlockStart": {"start": {"image": {"format": None}}, "contentBlockIndex": 2}},
        _image_delta(2, {"source": {"bytes": _b64(PNG)}}),
        block_stop(2),
    ]
    cut = _image(3)[:-1]
    asm, _ = _fed([*failed, *unreadable, *no_format, *cut])
    assert asm.reasoning == []
    assert asm.stream_errors() == []


def test_image_bytes_count_toward_the_stream_byte_limit() -> None:
    events = [*_image(0), *tool_block(1, Call("save", "{}", "tooluse_1")), message_stop("tool_use")]
    refused, calls = _fed(events, len(PNG) // 2)
    # Past the limit the response is refused whole: the image that crossed it is not kept,
    # and no call of it runs.
    assert refused.reasoning == [] and not any(c.ok for c in calls)
    assert "stream_limit" in [kind for kind, _, _ in refused.stream_errors()]
    kept, _ = _fed(events, len(PNG) + 200)
    assert kept.reasoning == [IMAGE] and kept.stream_errors() == []


def test_a_replayed_response_keeps_its_image_once() -> None:
    once = [{"messageStart": {"role": "assistant"}}, *_image(0)]
    asm, _ = _fed([*once, *once, message_stop("end_turn")])
    assert asm.reasoning == [IMAGE]


def test_a_whole_converse_answer_keeps_its_image() -> None:
    # A `Converse` answer as boto3's `converse` gives it (bytes) and as its JSON carries it
    # (base64), handed to `feed_chunk`.
    for data in (PNG, _b64(PNG)):
        answer = {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"text": "Here it is:"},
                        {"image": {"format": "png", "source": {"bytes": data}}},
                    ],
                }
            },
            "stopReason": "end_turn",
            "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
        }
        asm = Assembler()
        info = asm.feed_chunk(answer)
        assert asm.finish() == [] and info.text == "Here it is:"
        assert asm.reasoning == [IMAGE]


def test_a_converse_answer_with_an_image_given_to_converse_stream(sse_server: SSEServer) -> None:
    answer = {
        "output": {"message": {"role": "assistant", "content": [IMAGE_ON_THE_WIRE]}},
        "stopReason": "end_turn",
    }
    route = sse_server.register(json.dumps(answer).encode(), content_type="application/json")
    _, stream = assemble_bedrock(route)
    assert stream.reasoning == [IMAGE] and stream.transport_error is None


IMAGE_ON_THE_WIRE = {"image": {"format": "png", "source": {"bytes": _b64(PNG)}}}
