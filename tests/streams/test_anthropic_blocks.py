"""Anthropic blocks the next turn must send back as the `anthropic` SDK accumulates them: a text
block's citations (`citations_delta`), a context-management `compaction` block
(`compaction_delta`) and a `tool_use` block's `toolset_name`, the same on every path (`assemble`
with the real client, `feed_chunk` with SDK objects and dicts, `feed_sse` cut every way)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pydantic import TypeAdapter

pytest.importorskip("toolwire._core")

from toolwire import assistant_turn
from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import anthropic_message_start, sse_body
from .test_anthropic_server_tools import _block, _end, _use  # pyright: ignore[reportPrivateUsage]

FMT = "anthropic"

CHAR = {
    "type": "char_location",
    "cited_text": "東京 is sunny.",
    "document_index": 0,
    "document_title": "Weather",
    "start_char_index": 0,
    "end_char_index": 12,
}
PAGE = {
    "type": "page_location",
    "cited_text": "21 °C",
    "document_index": 1,
    "document_title": None,
    "start_page_number": 2,
    "end_page_number": 3,
}
SEARCHED = {
    "type": "web_search_result_location",
    "cited_text": "Rain later.",
    "url": "https://weather.example/tokyo",
    "title": "Tokyo",
    "encrypted_index": "Eo8BCioIAhgBIiQ",
}


def _cited(index: int, text: str, citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A text block whose text comes first, then one `citations_delta` per citation, as the
    API streams a cited passage."""
    start, *deltas, stop = _block(index, {"type": "text", "text": ""}, pieces=(text,))
    cites = [
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "citations_delta", "citation": c},
        }
        for c in citations
    ]
    return [start, *cites[:1], *deltas, *cites[1:], stop]


def _turn() -> list[dict[str, Any]]:
    """Cited text, a call, cited text again, plain text, and a call."""
    return [
        anthropic_message_start(),
        *_cited(0, "It is sunny, 21 °C.", [CHAR, PAGE]),
        *_block(1, _use("toolu_1", "get_weather"), pieces=('{"city": "Tokyo"}',)),
        *_cited(2, "Rain later.", [SEARCHED]),
        *_block(3, {"type": "text", "text": ""}, pieces=(" Booking.",)),
        *_block(4, _use("toolu_2", "book"), pieces=('{"seats": 2}',)),
        *_end(),
    ]


def _sdk_content(events: list[dict[str, Any]], *, beta: bool = False) -> list[dict[str, Any]]:
    """The message content the `anthropic` SDK's own accumulator makes of `events`."""
    snapshot: Any = None
    if beta:
        from anthropic.lib.streaming._beta_messages import accumulate_event as beta_accumulate

        for event in events:
            snapshot = beta_accumulate(
                event=event,  # pyright: ignore[reportArgumentType]
                current_snapshot=snapshot,
                json_bufs={},
                request_headers={},  # pyright: ignore[reportArgumentType]
            )
    else:
        from anthropic.lib.streaming._messages import accumulate_event

        for event in events:
            snapshot = accumulate_event(
                event=event,  # pyright: ignore[reportArgumentType]
                current_snapshot=snapshot,
                json_bufs={},
            )
    return [b.model_dump(mode="json", exclude_unset=True) for b in snapshot.content]


class _Run:
    """What one way in made of a stream: the assembler, its calls and the assistant text."""

    def __init__(self, asm: Assembler, text: str) -> None:
        self.asm, self.text = asm, text
        self.calls = asm.finish()

    def turn(self) -> list[dict[str, Any]]:
        (turn,) = assistant_turn(
            self.calls, style=FMT, text=self.text, reasoning=self.asm.reasoning
        )
        return turn["content"]


def _paths(
    events: list[dict[str, Any]], *, limit: int = 1 << 20, cuts: tuple[int, ...] = (7, 300, 901)
) -> list[_Run]:
    """`feed_chunk` with the events as dicts and as the SDK's objects, and `feed_sse` on their
    body cut at `cuts`."""
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    # Built as the client builds what it yields.
    sdk = [construct_type(type_=RawMessageStreamEvent, value=e) for e in events]
    runs: list[_Run] = []
    for chunks in (events, sdk):
        asm = Assembler(max_stream_bytes=limit)
        text = "".join(asm.feed_chunk(chunk).text for chunk in chunks)
        runs.append(_Run(asm, text))
    raw = Assembler(max_stream_bytes=limit)
    body = sse_body(events, FMT)
    at = sorted({0, len(body), *(c % len(body) for c in cuts)})
    for start, end in itertools.pairwise(at):
        raw.feed_sse(body[start:end])
    runs.append(_Run(raw, raw.text))
    return runs


def test_citations_go_back_on_their_text_blocks_on_every_path(
    sse_server: SSEServer, split: str
) -> None:
    from anthropic.types import MessageParam

    events = _turn()
    route = sse_server.register_events(events, FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way.
    _, stream = assemble_both(route, FMT)
    (turn,) = assistant_turn(stream.calls, style=FMT, text=stream.text, reasoning=stream.reasoning)
    sent = turn["content"]
    assert [(b["type"], b.get("text")) for b in sent] == [
        ("text", "It is sunny, 21 °C."),
        ("tool_use", None),
        ("text", "Rain later."),
        ("text", " Booking."),
        ("tool_use", None),
    ]
    # Each cited block with its citations in order, as the SDK's accumulator gives them.
    sdk = _sdk_content(events)
    assert [b.get("citations") for b in sent] == [
        sdk[0]["citations"],
        None,
        sdk[2]["citations"],
        None,
        None,
    ]
    assert sent[0]["citations"] == [CHAR, PAGE]
    assert sent[2]["citations"] == [SEARCHED]
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    TypeAdapter(list[MessageParam]).validate_python([user, turn])


def test_feed_chunk_and_feed_sse_keep_the_same_citations() -> None:
    made = [run.turn() for run in _paths(_turn())]
    assert made[0] == made[1] == made[2]
    assert made[0][0]["citations"] == [CHAR, PAGE]
    assert made[0][2]["citations"] == [SEARCHED]


def test_citations_of_a_turn_with_one_text_block_and_of_a_blocks_start() -> None:
    # The text is one block right before the call: its place is written all the same, with
    # its citations. A block whose start already holds citations keeps them first.
    start, *rest = _cited(0, "Sunny.", [PAGE])
    start["content_block"] = {"type": "text", "text": "", "citations": [CHAR]}
    events = [
        anthropic_message_start(),
        start,
        *rest,
        *_block(1, _use("toolu_1", "get_weather"), pieces=("{}",)),
        *_end(),
    ]
    for run in _paths(events):
        (call,) = run.calls
        assert call.metadata["text_before"] == [[0, 0, [CHAR, PAGE]]]
        (text, use) = run.turn()
        assert text == {"type": "text", "text": "Sunny.", "citations": [CHAR, PAGE]}
        assert use["type"] == "tool_use"
    assert _sdk_content(events)[0]["citations"] == [CHAR, PAGE]


def test_citations_count_toward_the_stream_byte_limit() -> None:
    big = {**CHAR, "cited_text": "x" * 3_000}
    events = [
        anthropic_message_start(),
        *_cited(0, "Cited.", [big]),
        *_block(1, _use("toolu_1", "f"), pieces=("{}",)),
        *_end(),
    ]
    for run in _paths(events, limit=2_000):
        assert "stream_limit" in [kind for kind, _, _ in run.asm.stream_errors()]
    for run in _paths(events, limit=8_000):
        assert run.asm.stream_errors() == []
        assert run.turn()[0]["citations"] == [big]


COMPACTION = {"type": "compaction", "content": None, "encrypted_content": None}


def _compacted(*deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        anthropic_message_start(),
        {"type": "content_block_start", "index": 0, "content_block": COMPACTION},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "compaction_delta", **delta},
            }
            for delta in deltas
        ),
        {"type": "content_block_stop", "index": 0},
        *_block(1, {"type": "text", "text": ""}, pieces=("Going on.",)),
        *_block(2, _use("toolu_1", "get_weather"), pieces=('{"city": "Oslo"}',)),
        *_end(),
    ]


def test_a_compaction_block_takes_its_deltas_as_the_sdk_does(sse_server: SSEServer) -> None:
    events = _compacted(
        {"content": "Summary so far: 東京.", "encrypted_content": "b3BhcXVl"},
        # A later delta sets both again; a member it lacks becomes null, as in the SDK.
        {"content": "Summary: 東京 and Oslo."},
    )
    kept = {"type": "compaction", "content": "Summary: 東京 and Oslo.", "encrypted_content": None}
    assert _sdk_content(events, beta=True)[0] == kept
    route = sse_server.register_events(events, FMT)
    _, stream = assemble_both(route, FMT)
    assert stream.reasoning == [kept]
    for run in _paths(events):
        assert run.asm.reasoning == [kept]
        # Sent back whole, in its place before the text and the call.
        sent = run.turn()
        assert [b["type"] for b in sent] == ["compaction", "text", "tool_use"]
        assert sent[0] == kept


def test_a_compaction_block_counts_anew_toward_the_stream_byte_limit() -> None:
    events = _compacted({"content": "s" * 3_000, "encrypted_content": "e"})
    for run in _paths(events, limit=2_000):
        assert run.asm.reasoning == []
        assert "stream_limit" in [kind for kind, _, _ in run.asm.stream_errors()]
    for run in _paths(events, limit=8_000):
        kept = {**COMPACTION, "content": "s" * 3_000, "encrypted_content": "e"}
        assert run.asm.reasoning == [kept]


def test_a_calls_toolset_name_goes_back_on_its_block(sse_server: SSEServer) -> None:
    from anthropic.types import MessageParam

    use = {**_use("toolu_1", "search_docs"), "toolset_name": "docs_mcp"}
    events = [
        anthropic_message_start(),
        *_block(0, use, pieces=('{"q": "x"}',)),
        *_block(1, _use("toolu_2", "get_weather"), pieces=("{}",)),
        *_end(),
    ]
    route = sse_server.register_events(events, FMT)
    _, stream = assemble_both(route, FMT)
    assert [c.metadata.get("toolset_name") for c in stream.calls] == ["docs_mcp", None]
    for run in _paths(events):
        assert [c.metadata.get("toolset_name") for c in run.calls] == ["docs_mcp", None]
    (turn,) = assistant_turn(stream.calls, style=FMT)
    assert turn["content"][0]["toolset_name"] == "docs_mcp"
    assert "toolset_name" not in turn["content"][1]
    assert _sdk_content(events)[0]["toolset_name"] == "docs_mcp"
    user = {"role": "user", "content": "Search the docs."}
    TypeAdapter(list[MessageParam]).validate_python([user, turn])
