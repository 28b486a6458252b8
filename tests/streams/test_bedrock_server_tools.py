"""Bedrock Converse server tools: a server tool's call (`toolUse` of `type` `server_tool_use`)
and its result (`toolResult`), which Bedrock ran, are kept whole on every path (the real boto3
client through `assemble`, the event dicts through `feed_chunk`), once each, in block order,
with the reasoning blocks (`Assembler.reasoning`), so that the next turn sends each back in its
place; they are never calls, never checked against a client tool's schema, and never run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _bedrock_request_errors  # pyright: ignore[reportPrivateUsage]
from toolwire import Toolset, assistant_turn, tool_messages
from toolwire.assembler import Assembler
from toolwire.events import StreamEnded
from toolwire.execution import Executor

from .bedrockkit import (
    assemble_bedrock,
    block_stop,
    message_stop,
    metadata,
    reasoning_block,
    serve,
    text_block,
    tool_block,
    tool_input,
)
from .conftest import SSEServer
from .streamkit import Call

FMT = "bedrock-converse"


def _search(index: int, pieces: tuple[str, ...]) -> list[dict[str, Any]]:
    start = {"toolUseId": "srv_1", "name": "web_search", "type": "server_tool_use"}
    return [
        {"contentBlockStart": {"start": {"toolUse": start}, "contentBlockIndex": index}},
        *(tool_input(index, piece) for piece in pieces),
        block_stop(index),
    ]


def _result(index: int, deltas: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    start = {"toolUseId": "srv_1", "type": "web_search_result", "status": "success"}
    return [
        {"contentBlockStart": {"start": {"toolResult": start}, "contentBlockIndex": index}},
        *(
            {"contentBlockDelta": {"delta": {"toolResult": d}, "contentBlockIndex": index}}
            for d in deltas
        ),
        block_stop(index),
    ]


def _events() -> list[dict[str, Any]]:
    """Reasoning, text, a web search and its result, more text, then a client call."""
    return [
        {"messageStart": {"role": "assistant"}},
        *reasoning_block(0, "Search first."),
        *text_block(1, "Searching."),
        *_search(2, ('{"query"', ': "東京 weather"}')),
        *_result(
            3,
            [
                [{"text": "Sunny, "}],
                [{"text": "21 °C."}, {"json": {"url": "https://weather.example", "n": [1, 2.5]}}],
            ],
        ),
        *text_block(4, "Found it."),
        *tool_block(5, Call("get_weather", '{"city": "Tokyo"}', "tooluse_1")),
        message_stop("tool_use"),
        metadata(),
    ]


REASONING = {"reasoningContent": {"reasoningText": {"text": "Search first.", "signature": "c2ln"}}}
SEARCH = {
    "toolUse": {
        "toolUseId": "srv_1",
        "name": "web_search",
        "type": "server_tool_use",
        "input": {"query": "東京 weather"},
    }
}
RESULT = {
    "toolResult": {
        "toolUseId": "srv_1",
        "type": "web_search_result",
        "status": "success",
        "content": [
            {"text": "Sunny, 21 °C."},
            {"json": {"url": "https://weather.example", "n": [1, 2.5]}},
        ],
    }
}
KEPT = [REASONING, SEARCH, RESULT]


class WebSearch(BaseModel):
    """A client tool that shares the server tool's name: the server's call is none of its."""

    query: int


class GetWeather(BaseModel):
    """Get the weather."""

    city: str


TOOLS = Toolset([WebSearch, GetWeather])


def _fed(events: list[dict[str, Any]], limit: int = 1 << 20) -> tuple[Assembler, list[Any]]:
    asm = Assembler(max_stream_bytes=limit)
    for event in events:
        asm.feed_chunk(event)
    return asm, asm.finish()


def test_server_blocks_are_kept_in_order_on_every_path(sse_server: SSEServer, split: str) -> None:
    events, stream = assemble_bedrock(serve(sse_server, _events(), split=split), tools=TOOLS)
    # Only the client's call; the server's input is checked against no client tool.
    assert [(c.name, c.id, c.value) for c in stream.calls] == [
        ("get_weather", "tooluse_1", {"city": "Tokyo"})
    ]
    assert all(o.ok for o in stream.outcomes)
    assert stream.reasoning == KEPT
    end = events[-1]
    assert isinstance(end, StreamEnded) and list(end.reasoning) == KEPT
    assert stream.text == "Searching.Found it."
    assert [c.metadata.get("reasoning_before") for c in stream.calls] == [3]
    asm, calls = _fed(_events())
    assert asm.reasoning == KEPT
    assert [c.metadata.get("reasoning_before") for c in calls] == [3]


def test_a_server_call_is_never_run(sse_server: SSEServer) -> None:
    ran: list[str] = []
    executor = Executor(
        {
            "web_search": lambda args: ran.append("web_search"),
            "get_weather": lambda args: ran.append("get_weather"),
        }
    )
    _, stream = assemble_bedrock(serve(sse_server, _events()), tools=TOOLS)
    results = executor.execute_all(stream.outcomes)
    assert ran == ["get_weather"]
    messages = tool_messages(stream.calls, results, style=FMT)
    assert [m["toolResult"]["toolUseId"] for m in messages] == ["tooluse_1"]


def test_the_next_turn_sends_each_block_back_in_its_place() -> None:
    asm, calls = _fed(_events())
    (turn,) = assistant_turn(calls, style=FMT, text="Searching.Found it.", reasoning=asm.reasoning)
    content = turn["content"]
    assert content == [
        REASONING,
        {"text": "Searching."},
        SEARCH,
        RESULT,
        {"text": "Found it."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Tokyo"}}},
    ]
    results = tool_messages(calls, [{"temp": 21}], style=FMT)
    user = {"role": "user", "content": [{"text": "Weather in Tokyo?"}]}
    # botocore's own validator of the Converse request takes them.
    assert _bedrock_request_errors([user, turn, {"role": "user", "content": results}]) == ""


def test_a_server_call_without_input_is_kept_with_an_empty_input() -> None:
    asm, _ = _fed(_search(0, ()))
    assert asm.reasoning == [{"toolUse": {**SEARCH["toolUse"], "input": {}}}]


def test_a_server_block_cut_off_or_unreadable_is_left_out() -> None:
    broken = _search(0, ('{"query": "b',))
    cut = _result(1, [[{"text": "partial"}]])[:-1]
    asm, _ = _fed([*broken, *cut])
    assert asm.reasoning == []
    assert asm.stream_errors() == []


def test_server_blocks_count_toward_the_stream_byte_limit() -> None:
    big = _result(1, [[{"text": "x" * 600}] for _ in range(10)])
    events = [
        *_search(0, ('{"query": "q"}',)),
        *big,
        *tool_block(2, Call("get_weather", '{"city": "Oslo"}', "tooluse_1")),
        message_stop("tool_use"),
    ]
    searched = {"toolUse": {**SEARCH["toolUse"], "input": {"query": "q"}}}
    refused, _ = _fed(events, 3_000)
    # Past the limit the response is refused whole: the block that crossed it is not kept.
    assert refused.reasoning == [searched]
    assert "stream_limit" in [kind for kind, _, _ in refused.stream_errors()]
    kept, _ = _fed(events, 10_000)
    assert len(kept.reasoning) == 2 and kept.stream_errors() == []


def test_a_replayed_response_keeps_its_server_blocks_once() -> None:
    once = [{"messageStart": {"role": "assistant"}}, *_search(0, ('{"query": "q"}',))]
    asm, _ = _fed([*once, *once, message_stop("end_turn")])
    assert asm.reasoning == [{"toolUse": {**SEARCH["toolUse"], "input": {"query": "q"}}}]


def test_a_turn_takes_no_client_call_as_a_server_block() -> None:
    client = {"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}
    for block in [client, {"text": "x"}]:
        with pytest.raises(TypeError, match="server tool block"):
            assistant_turn([], style=FMT, reasoning=[block])


def _answer() -> dict[str, Any]:
    """The whole Converse answer of `_events`, as `converse` (or a JSON body) gives it."""
    call = {
        "toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Tokyo"}}
    }
    content = [REASONING, {"text": "Searching."}, SEARCH, RESULT, {"text": "Found it."}, call]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
    }


def _turn(calls: list[Any], reasoning: list[Any]) -> list[Any]:
    (turn,) = assistant_turn(calls, style=FMT, text="Searching.Found it.", reasoning=reasoning)
    return turn["content"]


def test_a_whole_answer_keeps_what_the_same_answer_streamed_keeps(sse_server: SSEServer) -> None:
    streamed, streamed_calls = _fed(_events())
    expected = _turn(streamed_calls, streamed.reasoning)
    assert RESULT in expected
    whole = Assembler()
    whole.feed_chunk(_answer())
    assert _turn(whole.finish(), whole.reasoning) == expected
    # The same answer as a JSON body to the real boto3 client's `converse_stream`.
    route = sse_server.register(json.dumps(_answer()).encode(), content_type="application/json")
    _, stream = assemble_bedrock(route, tools=TOOLS)
    assert stream.transport_error is None
    assert _turn(stream.calls, stream.reasoning) == expected
