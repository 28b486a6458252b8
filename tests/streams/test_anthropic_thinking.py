"""Anthropic's extended-thinking blocks: kept on every path so that the next request can send
them back before the turn's tool calls (the API refuses it without them), and never kept cut
off or past the stream's byte limit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("toolwire._core")

from tests.test_assistant_turn_reasoning import sdk_takes_anthropic_turn
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler
from toolwire.events import StreamEnded

from .clients import assemble_both, assemble_sync, both_paths
from .conftest import SSEServer
from .streamkit import Call, anthropic_message_start, anthropic_stream, sse_body

FMT = "anthropic"
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


def _thinking(index: int, pieces: list[str], signature: str | None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        }
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "thinking_delta", "thinking": piece},
        }
        for piece in pieces
    ]
    if signature is not None:
        events.append(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "signature_delta", "signature": signature},
            }
        )
    events.append({"type": "content_block_stop", "index": index})
    return events


def _redacted(index: int, data: str) -> list[dict[str, Any]]:
    block = {"type": "redacted_thinking", "data": data}
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        {"type": "content_block_stop", "index": index},
    ]


def _block(index: int, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A block of `anthropic_stream`'s (its message's only one) moved to `index`."""
    body = [e for e in events if e["type"].startswith("content_block")]
    return [{**e, "index": index} for e in body]


def _interleaved() -> list[dict[str, Any]]:
    """Thinking, redacted thinking, text, a call, an unsigned thinking block, thinking again
    (interleaved thinking between calls), and a second call."""
    weather = anthropic_stream([Call("get_weather", '{"city": "東京"}', "toolu_1")], size=4)
    book = anthropic_stream([Call("book", '{"seats": 2}', "toolu_2")], size=4)
    text = [e for e in anthropic_stream([], text="On it.") if "index" in e]
    return [
        anthropic_message_start(),
        *_thinking(0, ["Let me think ", "about 東京 ", "😀."], SIGNATURE),
        *_redacted(1, REDACTED),
        *_block(2, text),
        *_block(3, weather),
        *_thinking(4, ["no signature"], None),
        *_thinking(5, ["Next, ", "😀."], "c2ln"),
        *_block(6, book),
        weather[-2],  # message_delta: tool_use
        weather[-1],
    ]


EXPECTED = [
    {"type": "thinking", "thinking": "Let me think about 東京 😀.", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": REDACTED},
    {"type": "thinking", "thinking": "Next, 😀.", "signature": "c2ln"},
]


def test_thinking_blocks_are_kept_in_order_on_every_path(sse_server: SSEServer, split: str) -> None:
    route = sse_server.register_events(_interleaved(), FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way.
    events, stream = assemble_both(route, FMT)
    assert [c.name for c in stream.calls] == ["get_weather", "book"]
    assert all(c.ok for c in stream.calls)
    # Only whole blocks, in block order: the unsigned one is left out.
    assert stream.reasoning == EXPECTED
    end = events[-1]
    assert isinstance(end, StreamEnded) and list(end.reasoning) == EXPECTED
    # Thinking is not assistant text.
    assert stream.text == "On it."


def test_the_next_turn_sends_the_thinking_back_in_its_places(sse_server: SSEServer) -> None:
    route = sse_server.register_events(_interleaved(), FMT)
    _, stream = assemble_sync(route, FMT)
    # Each call knows how many kept blocks came before it (the unsigned one is not counted).
    assert [c.metadata.get("reasoning_before") for c in stream.calls] == [2, 3]
    (turn,) = assistant_turn(stream.calls, style=FMT, text=stream.text, reasoning=stream.reasoning)
    content = turn["content"]
    # As the message came: the thinking between the calls stays between them.
    assert [b["type"] for b in content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
        "thinking",
        "tool_use",
    ]
    assert [content[0], content[1], content[4]] == EXPECTED
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=FMT)
    sdk_takes_anthropic_turn(turn, results)


def _counts(events: list[dict[str, Any]], cut: int = 0) -> list[list[Any]]:
    """Each call's `reasoning_before` on `feed_chunk` (the events as dicts) and on `feed_sse`
    (their body cut at `cut`), and that both paths kept `EXPECTED`."""
    chunks, raw = Assembler(), Assembler()
    for event in events:
        chunks.feed_chunk(event)
    body = sse_body(events, FMT)
    raw.feed_sse(body[:cut])
    raw.feed_sse(body[cut:])
    found = [[c.metadata.get("reasoning_before") for c in asm.finish()] for asm in (chunks, raw)]
    assert chunks.reasoning == raw.reasoning
    return found


def test_both_paths_tell_each_call_the_blocks_before_it() -> None:
    events = _interleaved()
    for cut in range(0, len(sse_body(events, FMT)), 41):
        assert _counts(events, cut) == [[2, 3], [2, 3]]
    # Without thinking, a call carries nothing more.
    plain = anthropic_stream([Call("book", '{"seats": 2}', "toolu_2")], size=4)
    assert _counts(plain) == [[None], [None]]


def test_a_replayed_response_counts_its_blocks_once() -> None:
    events = _interleaved()
    # The response comes again from its start (a reconnect): the count starts again with it.
    assert _counts([*events[:-2], *events]) == [[2, 3], [2, 3]]


def next_turn_as_sent(sse_server: SSEServer, events: list[dict[str, Any]]) -> list[Any]:
    """The assistant turn of `events`, with its two calls' results, as the real `anthropic`
    client sends it in the next request (to a local server)."""
    route = sse_server.register_events(events, FMT)
    _, stream = assemble_sync(route, FMT)
    turn = assistant_turn(stream.calls, style=FMT, text=stream.text, reasoning=stream.reasoning)
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=FMT)
    return sent_by_anthropic(sse_server, [*turn, *results])


def sent_by_anthropic(sse_server: SSEServer, messages: list[dict[str, Any]]) -> list[Any]:
    """The content of the first of `messages` (after a user message) as the real `anthropic`
    client sends it (to a local server)."""
    import anthropic

    follow_up = sse_server.register_events(anthropic_stream([], text="Done."), FMT)
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    with (
        anthropic.Anthropic(
            base_url=follow_up.anthropic_base_url, api_key="test", max_retries=0
        ) as client,
        client.messages.stream(
            model="test-model",
            max_tokens=1024,
            messages=[user, *messages],  # pyright: ignore[reportArgumentType]
        ) as answer,
    ):
        assert answer.get_final_text() == "Done."
    (request,) = follow_up.requests
    return request["json"]["messages"][1]["content"]


def test_the_next_request_goes_through_the_sdk_in_the_same_order(sse_server: SSEServer) -> None:
    sent = next_turn_as_sent(sse_server, _interleaved())
    # The blocks as the first response streamed them, the unsigned one left out.
    assert [(b["type"], b.get("id")) for b in sent] == [
        ("thinking", None),
        ("redacted_thinking", None),
        ("text", None),
        ("tool_use", "toolu_1"),
        ("thinking", None),
        ("tool_use", "toolu_2"),
    ]
    assert [sent[0], sent[1], sent[4]] == EXPECTED


def test_a_block_cut_off_by_a_dropped_connection_is_not_kept(sse_server: SSEServer) -> None:
    events = _interleaved()
    body = sse_body(events, FMT)
    # Cut inside the second signed thinking block (index 5), after its first delta.
    marker = json.dumps({"type": "thinking_delta", "thinking": "Next, "}, separators=(",", ":"))
    cut = body.index(marker.encode()) + len(marker) + 10
    route = sse_server.register(body, drop_after=cut)
    _, stream = assemble_both(route, FMT)
    assert stream.reasoning == EXPECTED[:2]
    assert stream.finish_reason is None


def _limited(events: list[dict[str, Any]], limit: int) -> tuple[Assembler, Assembler]:
    """`feed_chunk` with the events as dicts and `feed_sse` on their body, both finished."""
    return both_paths(events, FMT, limit=limit)


def test_thinking_counts_toward_the_stream_byte_limit() -> None:
    long = ["x" * 600] * 10  # 6,000 bytes of thinking, and a small call
    events = [
        anthropic_message_start(),
        *_thinking(0, ["short"], "s1"),
        *_thinking(1, long, "s2"),
        *anthropic_stream([Call("f", '{"a": 1}')])[1:],
    ]
    for event in events[-6:]:
        if "index" in event:
            event["index"] = 2
    for asm in _limited(events, 4_000):
        # Past the limit the response is refused whole, as for argument text: the block that
        # crossed it is not kept, nor anything after; the block that ended before it is.
        assert asm.reasoning == [{"type": "thinking", "thinking": "short", "signature": "s1"}]
        assert "stream_limit" in [kind for kind, _, _ in asm.stream_errors()]
    # Under the limit, everything is kept.
    for asm in _limited(events, 8_000):
        assert [b["signature"] for b in asm.reasoning] == ["s1", "s2"]
        assert asm.reasoning[1]["thinking"] == "x" * 6000
        assert asm.stream_errors() == []


def test_a_block_that_stops_after_the_response_is_refused_is_not_kept() -> None:
    # Interleaved by a translator: the thinking was counted in full, then a call's arguments
    # took the response past the limit, then the thinking block stopped.
    thinking = _thinking(0, ["Hmm."], "s")
    call = _block(1, anthropic_stream([Call("f", json.dumps({"a": "z" * 200}), "toolu_1")]))
    events = [anthropic_message_start(), *thinking[:-1], *call, thinking[-1]]
    for asm in _limited(events, 100):
        assert asm.reasoning == []
        assert "stream_limit" in [kind for kind, _, _ in asm.stream_errors()]


def test_a_dropped_block_gives_its_bytes_back() -> None:
    # Unsigned blocks are not kept, so they must not use up the response's byte budget.
    events = [anthropic_message_start()]
    for index in range(8):
        events += _thinking(index, ["y" * 1000], None)
    events += _thinking(8, ["kept"], "s")
    for asm in _limited(events, 3_000):
        assert asm.reasoning == [{"type": "thinking", "thinking": "kept", "signature": "s"}]
        assert asm.stream_errors() == []


def test_a_replayed_response_keeps_its_blocks_once() -> None:
    once = [anthropic_message_start(), *_thinking(0, ["Hmm."], "s")]
    events = [*once, *once, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}]
    for asm in _limited(events, 1_000):
        assert asm.reasoning == [{"type": "thinking", "thinking": "Hmm.", "signature": "s"}]


_PIECE = st.text(
    st.sampled_from(["a", " ", "é", "東", "😀", '"', "\\", "\n", "\ud83d", "\ude00"]), max_size=6
)


@settings(max_examples=80, deadline=None)
@given(
    pieces=st.lists(_PIECE, max_size=5),
    signed=st.booleans(),
    stopped=st.booleans(),
    cuts=st.lists(st.integers(0, 10**6), max_size=10),
)
def test_any_split_of_the_body_keeps_what_the_chunks_keep(
    pieces: list[str], signed: bool, stopped: bool, cuts: list[int]
) -> None:
    # Surrogate halves split between deltas (a UTF-16 producer) are joined on both paths.
    events = [anthropic_message_start(), *_thinking(0, pieces, "sig" if signed else None)]
    if not stopped:
        events.pop()
    chunks, raw = both_paths(events, FMT, cuts=cuts)
    expected = chunks.reasoning
    assert raw.reasoning == expected
    if signed and stopped:
        text = "".join(pieces).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        assert expected == [{"type": "thinking", "thinking": text, "signature": "sig"}]
    else:
        assert expected == []
