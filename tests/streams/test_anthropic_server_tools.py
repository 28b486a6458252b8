"""Anthropic server tools and programmatic tool calling: a `server_tool_use` block (web search,
code execution... run by Anthropic) and its result blocks are kept whole on every path, once
each, in block order, with the thinking blocks (`Assembler.reasoning`), so that the next turn
sends each back in its place; they are never calls, never checked against a client tool's
schema, and never run. A `tool_use` block's `caller` (a call made from code execution) is kept
as metadata and sent back on the call's block."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _taken_by_typed_dict  # pyright: ignore[reportPrivateUsage]
from toolwire import Toolset, assemble, assistant_turn, tool_messages
from toolwire.assembler import Assembler
from toolwire.events import StreamEnded
from toolwire.execution import Executor

from .clients import assemble_both, both_paths, open_sync, sync_client
from .conftest import SSEServer
from .streamkit import anthropic_message_start, anthropic_thinking
from .test_anthropic_thinking import next_turn_as_sent

FMT = "anthropic"

SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
RESULTS = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://weather.example/tokyo",
            "title": "東京 weather",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2",
            "page_age": "2 hours ago",
        }
    ],
}
CODE = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "code_execution", "input": {}}
# Programmatic tool calling: the call is made by the code that `srvtoolu_2` runs.
FROM_CODE = {"type": "code_execution_20250825", "tool_id": "srvtoolu_2"}
DIRECT = {"type": "direct"}


def _block(
    index: int, block: dict[str, Any], *, pieces: tuple[str, ...] = (), delta: str = ""
) -> list[dict[str, Any]]:
    """A content block at `index`: its start, a delta of type `delta` per piece, its stop."""
    kind = delta or ("text_delta" if block["type"] == "text" else "input_json_delta")
    member = "text" if kind == "text_delta" else "partial_json"
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *(
            {"type": "content_block_delta", "index": index, "delta": {"type": kind, member: p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def _use(call_id: str, name: str, caller: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    if caller is not None:
        block["caller"] = caller
    return block


def _end(reason: str = "tool_use") -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": 42, "server_tool_use": {"web_search_requests": 1}},
        },
        {"type": "message_stop"},
    ]


def _turn() -> list[dict[str, Any]]:
    """Thinking, text, a web search and its results, text, a call, a code execution, and a
    call that code made (programmatic tool calling), as Claude streams them."""
    return [
        anthropic_message_start(),
        *anthropic_thinking(0, "Search first."),
        *_block(1, {"type": "text", "text": ""}, pieces=("Searching.",)),
        *_block(2, SEARCH, pieces=("", '{"query": "東', '京 weather"}')),
        *_block(3, RESULTS),
        *_block(4, {"type": "text", "text": ""}, pieces=("Found it.",)),
        *_block(5, _use("toolu_1", "get_weather", DIRECT), pieces=('{"city"', ': "Tokyo"}')),
        *_block(6, CODE, pieces=('{"code": "book(', 'seats=2)"}')),
        *_block(7, _use("toolu_2", "book", FROM_CODE), pieces=('{"seats": 2}',)),
        *_end(),
    ]


THINKING = {"type": "thinking", "thinking": "Search first.", "signature": "c2ln"}
KEPT = [
    THINKING,
    {**SEARCH, "input": {"query": "東京 weather"}},
    RESULTS,
    {**CODE, "input": {"code": "book(seats=2)"}},
]


class WebSearch(BaseModel):
    """A client tool that shares the server tool's name: the server's call is none of its."""

    query: int


class GetWeather(BaseModel):
    """Get the weather."""

    city: str


class Book(BaseModel):
    """Book seats."""

    seats: int


TOOLS = Toolset([WebSearch, GetWeather, Book])


def test_server_blocks_are_kept_in_order_on_every_path(sse_server: SSEServer, split: str) -> None:
    route = sse_server.register_events(_turn(), FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way, with
    # the client tools' pre-check on: the server's input is checked against none of them.
    events, stream = assemble_both(route, FMT, tools=TOOLS)
    # Only the client's calls, each under its own block index.
    assert [(c.name, c.id, c.index) for c in stream.calls] == [
        ("get_weather", "toolu_1", 5),
        ("book", "toolu_2", 7),
    ]
    assert [c.value for c in stream.calls] == [{"city": "Tokyo"}, {"seats": 2}]
    assert all(o.ok for o in stream.outcomes)
    assert stream.reasoning == KEPT
    end = events[-1]
    assert isinstance(end, StreamEnded) and list(end.reasoning) == KEPT
    assert stream.text == "Searching.Found it."
    # Each call knows the blocks kept before it, and who made it.
    assert [c.metadata.get("reasoning_before") for c in stream.calls] == [3, 4]
    assert [c.metadata.get("caller") for c in stream.calls] == [DIRECT, FROM_CODE]


def test_feed_chunk_keeps_what_feed_sse_keeps() -> None:
    events = _turn()
    chunks, raw = both_paths(events, FMT)
    assert chunks.reasoning == raw.reasoning == KEPT


def test_a_server_call_is_never_run(sse_server: SSEServer) -> None:
    route = sse_server.register_events(_turn(), FMT)
    ran: list[str] = []
    executor = Executor(
        {
            "web_search": lambda args: ran.append("web_search"),
            "get_weather": lambda args: ran.append("get_weather"),
            "book": lambda args: ran.append("book"),
            "code_execution": lambda args: ran.append("code_execution"),
        }
    )
    with sync_client(route, FMT) as client, assemble(open_sync(client, FMT), TOOLS) as stream:
        for _ in stream:
            pass
    results = executor.execute_all(stream.outcomes)
    assert ran == ["get_weather", "book"]
    # One result per client call, none for the server's.
    messages = tool_messages(stream.calls, results, style=FMT)
    assert [m["tool_use_id"] for m in messages] == ["toolu_1", "toolu_2"]


def _sdk_takes(content: list[dict[str, Any]]) -> None:
    """Each block validates as the anthropic SDK's own param type, every key one it declares
    (its TypedDicts drop keys they do not know)."""
    from anthropic.types import (
        ServerToolUseBlockParam,
        TextBlockParam,
        ThinkingBlockParam,
        ToolUseBlockParam,
        WebSearchToolResultBlockParam,
    )

    kinds: dict[str, Any] = {
        "thinking": ThinkingBlockParam,
        "text": TextBlockParam,
        "tool_use": ToolUseBlockParam,
        "server_tool_use": ServerToolUseBlockParam,
        "web_search_tool_result": WebSearchToolResultBlockParam,
    }
    for block in content:
        _taken_by_typed_dict(kinds[block["type"]], block)


def test_the_next_request_sends_each_block_back_in_its_place(sse_server: SSEServer) -> None:
    from anthropic.types import MessageParam

    # The turn and the calls' results, as the real client sends them to a local server.
    sent = next_turn_as_sent(sse_server, _turn())
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    TypeAdapter(list[MessageParam]).validate_python([user, {"role": "assistant", "content": sent}])
    _sdk_takes(sent)
    # As the message came, each block once: the server's between the text and the calls.
    assert [(b["type"], b.get("id")) for b in sent] == [
        ("thinking", None),
        ("text", None),
        ("server_tool_use", "srvtoolu_1"),
        ("web_search_tool_result", None),
        ("text", None),
        ("tool_use", "toolu_1"),
        ("server_tool_use", "srvtoolu_2"),
        ("tool_use", "toolu_2"),
    ]
    assert [sent[0], sent[2], sent[3], sent[6]] == KEPT
    assert [sent[1]["text"], sent[4]["text"]] == ["Searching.", "Found it."]
    assert sent[5]["caller"] == DIRECT
    assert sent[7]["caller"] == FROM_CODE
    assert sent[7]["input"] == {"seats": 2}


def test_result_blocks_of_every_kind_are_kept_whole() -> None:
    code_result = {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_2",
        "content": {
            "type": "code_execution_result",
            "stdout": "42\n",
            "stderr": "",
            "return_code": 0,
            "content": [],
        },
    }
    bash_result = {
        "type": "bash_code_execution_tool_result",
        "tool_use_id": "srvtoolu_3",
        "content": {"type": "bash_code_execution_tool_result_error", "error_code": "unavailable"},
    }
    fetch = {"type": "server_tool_use", "id": "srvtoolu_4", "name": "web_fetch", "input": {}}
    mcp = {
        "type": "mcp_tool_use",
        "id": "mcptoolu_1",
        "name": "lookup",
        "server_name": "docs",
        "input": {},
    }
    upload = {"type": "container_upload", "file_id": "file_1"}
    events = [
        anthropic_message_start(),
        *_block(0, code_result),
        *_block(1, bash_result),
        # An input sent whole at the start, with no delta, is kept as sent.
        *_block(2, {**fetch, "input": {"url": "https://example.com"}}),
        *_block(3, mcp, pieces=('{"q": [1, 2.5, null, true]}',)),
        *_block(4, upload),
        *_block(5, _use("toolu_1", "get_weather"), pieces=('{"city": "Oslo"}',)),
        *_end(),
    ]
    chunks, raw = both_paths(events, FMT)
    expected = [
        code_result,
        bash_result,
        {**fetch, "input": {"url": "https://example.com"}},
        {**mcp, "input": {"q": [1, 2.5, None, True]}},
        upload,
    ]
    assert chunks.reasoning == raw.reasoning == expected
    calls = Assembler()
    for event in events:
        calls.feed_chunk(event)
    (call,) = calls.finish()
    assert (call.name, call.index, call.metadata.get("reasoning_before")) == ("get_weather", 5, 5)


def test_a_server_block_cut_off_or_unreadable_is_left_out() -> None:
    whole = _block(1, SEARCH, pieces=('{"query": "a"}',))
    broken = _block(2, {**SEARCH, "id": "srvtoolu_2"}, pieces=('{"query": "b', "}"))
    cut = _block(3, {**SEARCH, "id": "srvtoolu_3"}, pieces=('{"query": "c"}',))[:-1]
    events = [anthropic_message_start(), *whole, *broken, *cut]
    chunks, raw = both_paths(events, FMT)
    # The input that never closes, and the block that never stops, are not sent back.
    assert chunks.reasoning == raw.reasoning == [{**SEARCH, "input": {"query": "a"}}]
    assert chunks.stream_errors() == raw.stream_errors() == []


def test_server_blocks_count_toward_the_stream_byte_limit() -> None:
    big = {**RESULTS, "content": [{**RESULTS["content"][0], "encrypted_content": "e" * 5000}]}
    events = [
        anthropic_message_start(),
        *_block(0, SEARCH, pieces=('{"query": "x"}',)),
        *_block(1, big),
        *_block(2, _use("toolu_1", "f"), pieces=("{}",)),
        *_end(),
    ]
    for asm in both_paths(events, FMT, limit=2_000):
        # Past the limit the response is refused whole: the block that crossed it is not kept.
        assert asm.reasoning == [{**SEARCH, "input": {"query": "x"}}]
        assert "stream_limit" in [kind for kind, _, _ in asm.stream_errors()]
    for asm in both_paths(events, FMT, limit=8_000):
        assert asm.reasoning == [{**SEARCH, "input": {"query": "x"}}, big]
        assert asm.stream_errors() == []


def test_a_replayed_response_keeps_its_server_blocks_once() -> None:
    once = [anthropic_message_start(), *_block(0, SEARCH, pieces=('{"query": "x"}',))]
    events = [*once, *once, *_end("end_turn")]
    for asm in both_paths(events, FMT):
        assert asm.reasoning == [{**SEARCH, "input": {"query": "x"}}]


def test_a_turn_takes_no_text_or_call_blocks_as_reasoning() -> None:
    made = [{"type": "text", "text": "x"}, _use("toolu_1", "f"), {"type": "reasoning", "id": "r"}]
    for block in [*made, {"type": None}, {"no": "type"}]:
        with pytest.raises(TypeError, match="server block"):
            assistant_turn([], style=FMT, reasoning=[block])


# Pieces of a JSON string's text: characters, escapes, and surrogate halves that a UTF-16
# producer may split between two deltas.
_PIECE = st.lists(
    st.sampled_from(["a", " ", "é", "東", "😀", '\\"', "\\n", "\ud83d", "\ude00"]), max_size=6
).map("".join)


@settings(max_examples=80, deadline=None)
@given(
    pieces=st.lists(_PIECE, max_size=5),
    stopped=st.booleans(),
    cuts=st.lists(st.integers(0, 10**6), max_size=10),
)
def test_any_split_of_the_body_keeps_what_the_chunks_keep(
    pieces: list[str], stopped: bool, cuts: list[int]
) -> None:
    fragments = ['{"query": "', *pieces, '"}']
    events = [anthropic_message_start(), *_block(0, SEARCH, pieces=tuple(fragments))]
    if not stopped:
        events.pop()
    chunks, raw = both_paths(events, FMT, cuts=cuts)
    assert raw.reasoning == chunks.reasoning
    if stopped:
        text = "".join(pieces).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        query = json.loads(f'"{text}"')
        assert chunks.reasoning == [{**SEARCH, "input": {"query": query}}]
    else:
        assert chunks.reasoning == []
