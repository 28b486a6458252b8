"""Bedrock Converse `reasoningContent` blocks: kept on every path (the real boto3 client through
`assemble`, the event dicts through `feed_chunk`) so that the next request can send them back
before the `toolUse` blocks, and never kept cut off, twice, or past the stream's byte limit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _bedrock_request_errors  # pyright: ignore[reportPrivateUsage]
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler

from .bedrockkit import (
    assemble_bedrock,
    eventstream_body,
    message_stop,
    metadata,
    reasoning_block,
    serve,
    text_block,
    tool_block,
)
from .clients import check_reasoning
from .conftest import SSEServer
from .streamkit import Call

FMT = "bedrock-converse"
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


def _events(*, cut_second: bool = False) -> list[dict[str, Any]]:
    """Reasoning, redacted reasoning, text, a call, reasoning again, a second call."""
    second = reasoning_block(4, "Now book 😀.", size=3)
    second[-2]["contentBlockDelta"]["delta"]["reasoningContent"]["signature"] = "c2ln2"
    if cut_second:
        second = second[:2]
    return [
        {"messageStart": {"role": "assistant"}},
        *reasoning_block(0, "Weather first, then 東京.", size=4),
        *reasoning_block(1, redacted=True),
        *text_block(2, "On it."),
        *tool_block(3, Call("get_weather", '{"city": "東京"}', "tooluse_1")),
        *second,
        *tool_block(5, Call("book", '{"seats": 2}', "tooluse_2")),
        message_stop("tool_use"),
        metadata(),
    ]


def _text(text: str, signature: str | None) -> dict[str, Any]:
    block: dict[str, Any] = {"text": text}
    if signature is not None:
        block["signature"] = signature
    return {"reasoningContent": {"reasoningText": block}}


# `reasoning_block`'s redacted data is the base64 of this, as the wire JSON carries a blob.
REDACTED = {"reasoningContent": {"redactedContent": b"secret"}}
EXPECTED = [
    _text("Weather first, then 東京.", "c2ln"),
    REDACTED,
    _text("Now book 😀.", "c2ln2"),
]


def _fed(events: list[dict[str, Any]], limit: int = 1 << 20) -> Assembler:
    asm = Assembler(max_stream_bytes=limit)
    for event in events:
        asm.feed_chunk(event)
    asm.finish()
    return asm


def test_reasoning_blocks_are_kept_in_order_on_every_path(
    sse_server: SSEServer, split: str
) -> None:
    # The real boto3 client reads the event-stream body cut every way; it gives the blob as
    # bytes, where the wire JSON read as dicts gives its base64 text: both keep the bytes.
    events, stream = assemble_bedrock(serve(sse_server, _events(), split=split))
    check_reasoning(events, stream, ["get_weather", "book"], EXPECTED, "On it.")
    assert _fed(_events()).reasoning == EXPECTED


def test_the_next_turn_sends_the_reasoning_back_in_its_places(sse_server: SSEServer) -> None:
    asm = Assembler()
    for event in _events():
        asm.feed_chunk(event)
    calls = asm.finish()
    # The real boto3 client's events, through `assemble`, tell each call the same.
    _, stream = assemble_bedrock(serve(sse_server, _events()))
    for made in (calls, stream.calls):
        assert [c.metadata.get("reasoning_before") for c in made] == [2, 3]
    (turn,) = assistant_turn(calls, style=FMT, text="On it.", reasoning=asm.reasoning)
    content = turn["content"]
    # As the message came: the reasoning between the calls stays between them.
    assert [next(iter(block)) for block in content] == [
        "reasoningContent",
        "reasoningContent",
        "text",
        "toolUse",
        "reasoningContent",
        "toolUse",
    ]
    assert [content[0], content[1], content[4]] == EXPECTED
    results = tool_messages(calls, [{"temp": 21}, {"ok": True}], style=FMT)
    user = {"role": "user", "content": [{"text": "Weather in Tokyo, and book."}]}
    answer = {"role": "user", "content": results}
    # botocore's own validator of the Converse request takes them.
    assert _bedrock_request_errors([user, turn, answer]) == ""


def test_a_replayed_response_counts_its_blocks_once() -> None:
    events = _events()
    # The response comes again from its start (a retry): the count starts again with it.
    asm = Assembler()
    for event in [*events[:-2], *events]:
        asm.feed_chunk(event)
    assert [c.metadata.get("reasoning_before") for c in asm.finish()] == [2, 3]
    assert asm.reasoning == EXPECTED


def test_a_block_cut_off_is_not_kept(sse_server: SSEServer) -> None:
    # The connection drops inside the second signed block: boto3 raises, `assemble` stops.
    events = _events()
    body = eventstream_body(events)
    cut = body.index(json.dumps("Now").encode()) + 10
    _, stream = assemble_bedrock(serve(sse_server, events, drop_after=cut))
    assert stream.reasoning == EXPECTED[:2]
    # A stream that ends without the block's stop keeps it out too.
    assert _fed(_events(cut_second=True)).reasoning == EXPECTED[:2]


def test_an_unsigned_block_that_stopped_is_kept_without_a_signature() -> None:
    # A model that does not sign its reasoning: sent back as it came.
    block = reasoning_block(0, "Plain.")
    del block[-2]["contentBlockDelta"]["delta"]["reasoningContent"]["signature"]
    block[-2]["contentBlockDelta"]["delta"]["reasoningContent"]["text"] = ""
    assert _fed(block).reasoning == [_text("Plain.", None)]
    # One that holds nothing is nothing to send back.
    empty = [
        {
            "contentBlockDelta": {
                "delta": {"reasoningContent": {"text": ""}},
                "contentBlockIndex": 0,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 0}},
    ]
    assert _fed(empty).reasoning == []


def test_reasoning_counts_toward_the_stream_byte_limit() -> None:
    events = [
        *reasoning_block(0, "short"),
        *reasoning_block(1, "x" * 6_000, size=600),
        *tool_block(2, Call("f", '{"a": 1}', "tooluse_1")),
        message_stop("tool_use"),
    ]
    refused = _fed(events, 4_000)
    # Past the limit the response is refused whole: the block that crossed it is not kept.
    assert refused.reasoning == [_text("short", "c2ln")]
    assert "stream_limit" in [kind for kind, _, _ in refused.stream_errors()]
    kept = _fed(events, 8_000)
    assert kept.reasoning == [_text("short", "c2ln"), _text("x" * 6_000, "c2ln")]
    assert kept.stream_errors() == []


def test_a_replayed_response_keeps_its_blocks_once() -> None:
    once = [{"messageStart": {"role": "assistant"}}, *reasoning_block(0, "Hmm.")]
    # Replayed from its start, once after the block stopped and once in the middle of it.
    for events in ([*once, *once], [*once[:-2], *once]):
        assert _fed([*events, message_stop("end_turn")]).reasoning == [_text("Hmm.", "c2ln")]


_PIECE = st.text(
    st.sampled_from(["a", " ", "é", "東", "😀", '"', "\\", "\n", "\ud83d", "\ude00"]), max_size=6
)


@settings(max_examples=80, deadline=None)
@given(pieces=st.lists(_PIECE, min_size=1, max_size=5), signed=st.booleans())
def test_split_surrogate_pairs_are_joined_as_in_anthropic_thinking(
    pieces: list[str], signed: bool
) -> None:
    # A UTF-16 producer splits a pair between two deltas; a half left alone is U+FFFD.
    deltas: list[dict[str, Any]] = [{"text": piece} for piece in pieces]
    if signed:
        deltas.append({"signature": "sig"})
    events = [
        {"contentBlockDelta": {"delta": {"reasoningContent": d}, "contentBlockIndex": 0}}
        for d in deltas
    ]
    events.append({"contentBlockStop": {"contentBlockIndex": 0}})
    text = "".join(pieces).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    kept = _fed(events).reasoning
    assert kept == ([_text(text, "sig" if signed else None)] if text or signed else [])
