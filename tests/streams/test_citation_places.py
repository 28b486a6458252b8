"""Citations go with their text block's place (`text_before`, `text_after`, `text_places`), as a
Gemini text part's signature does: one writer serves a turn with calls and one without, on every
path (the real SDK through `assemble`, `feed_chunk`, `feed_sse` cut every way). The whole next
turn of an Anthropic answer with no client call equals what the `anthropic` SDK's own
accumulation made of the stream (`MessageStreamManager.get_final_message()`), and a Bedrock
Converse answer's cited text goes back as the `citationsContent` block Converse takes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

pytest.importorskip("toolwire._core")

from toolwire import assistant_turn
from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import anthropic_message_start
from .test_anthropic_blocks import (
    CHAR,
    PAGE,
    SEARCHED,
    _cited,  # pyright: ignore[reportPrivateUsage]
    _paths,  # pyright: ignore[reportPrivateUsage]
)
from .test_anthropic_server_tools import (
    RESULTS,
    SEARCH,
    _block,  # pyright: ignore[reportPrivateUsage]
    _end,  # pyright: ignore[reportPrivateUsage]
    _use,  # pyright: ignore[reportPrivateUsage]
)

FMT = "anthropic"


def _answer() -> list[dict[str, Any]]:
    """Cited text, plain text and cited text again, with no client call: a whole answer."""
    return [
        anthropic_message_start(),
        *_cited(0, "It is sunny, 21 °C.", [CHAR, PAGE]),
        *_block(1, {"type": "text", "text": ""}, pieces=(" Also:",)),
        *_cited(2, " rain later.", [SEARCHED]),
        *_end("end_turn"),
    ]


def _paused() -> list[dict[str, Any]]:
    """A web search, its results and the text citing them, paused (`pause_turn`): no call."""
    return [
        anthropic_message_start(),
        *_block(0, {"type": "text", "text": ""}, pieces=("Searching.",)),
        *_block(1, SEARCH, pieces=('{"query": "東京 weather"}',)),
        *_block(2, RESULTS),
        *_cited(3, "Rain later.", [SEARCHED]),
        *_end("pause_turn"),
    ]


def _final_content(sse_server: SSEServer, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The message content the real `anthropic` client's stream manager accumulates."""
    import anthropic

    route = sse_server.register_events(events, FMT)
    with (
        anthropic.Anthropic(base_url=route.anthropic_base_url, api_key="test", max_retries=0) as c,
        c.messages.stream(
            model="test-model", max_tokens=1024, messages=[{"role": "user", "content": "?"}]
        ) as stream,
    ):
        message = stream.get_final_message()
    return [block.model_dump(mode="json", exclude_unset=True) for block in message.content]


def _without_parsed(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The SDK's server blocks carry their input as parsed; the turn sends the same value.
    return [{k: v for k, v in b.items() if k != "parsed_output"} for b in blocks]


@pytest.mark.parametrize("events", [_answer, _paused], ids=["end_turn", "pause_turn"])
def test_a_turn_without_calls_goes_back_as_the_sdk_accumulated_it(
    sse_server: SSEServer, split: str, events: Any
) -> None:
    from anthropic.types import MessageParam

    streamed = events()
    expected = _without_parsed(_final_content(sse_server, streamed))
    assert any("citations" in block for block in expected)
    route = sse_server.register_events(streamed, FMT, split=split)
    # The real SDK through `assemble`, and `feed_sse` on the same bytes cut every way.
    _, stream = assemble_both(route, FMT)
    assert stream.calls == []
    (turn,) = assistant_turn(
        [], style=FMT, text=stream.text, reasoning=stream.reasoning, text_places=stream.text_places
    )
    assert turn["content"] == expected
    user = {"role": "user", "content": "Weather in Tokyo?"}
    TypeAdapter(list[MessageParam]).validate_python([user, turn])
    # `feed_chunk` with dicts and with the SDK's objects, and `feed_sse` cut elsewhere.
    for run in _paths(streamed):
        assert run.calls == []
        (again,) = assistant_turn(
            [],
            style=FMT,
            text=run.text,
            reasoning=run.asm.reasoning,
            text_places=run.asm.text_places,
        )
        assert again == turn


def test_citations_ride_with_the_places_not_as_metadata() -> None:
    # One cited block right before the call: written as its place, which the call carries.
    start, *rest = _cited(0, "Sunny.", [PAGE])
    start["content_block"] = {"type": "text", "text": "", "citations": [CHAR]}
    events = [
        anthropic_message_start(),
        start,
        *rest,
        *_block(1, _use("toolu_1", "get_weather"), pieces=("{}",)),
        *_block(2, {"type": "text", "text": ""}, pieces=("Plain.",)),
        *_end(),
    ]
    for run in _paths(events):
        (call,) = run.calls
        assert "citations" not in call.metadata
        assert call.metadata["text_before"] == [[0, 0, [CHAR, PAGE]]]
        assert call.metadata["text_after"] == [[6, 0]]
        assert run.turn() == [
            {"type": "text", "text": "Sunny.", "citations": [CHAR, PAGE]},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            {"type": "text", "text": "Plain."},
        ]


def test_a_replayed_response_keeps_its_citations_once() -> None:
    # The response comes again from its start after a reconnect: the text is kept once, and
    # the cited block's citations with it, not lost with the places.
    first = [anthropic_message_start(), *_cited(0, "Sunny.", [CHAR])]
    events = [
        *first,
        *first,
        *_block(1, _use("toolu_1", "get_weather"), pieces=("{}",)),
        *_end(),
    ]
    for run in _paths(events):
        assert run.text == "Sunny."
        assert run.turn()[0] == {"type": "text", "text": "Sunny.", "citations": [CHAR]}


def test_text_places_of_a_cited_turn_are_read_with_their_citations() -> None:
    # Places written by hand: the citations follow the counts, after a signature if any.
    places: list[list[Any]] = [[0, 0, [CHAR]], [5, 0], [9, 0, [SEARCHED, PAGE]]]
    (turn,) = assistant_turn([], style=FMT, text="Sunny", text_places=places[:1])
    assert turn["content"] == [{"type": "text", "text": "Sunny", "citations": [CHAR]}]
    # Places past the end of the text given (not the stream's) are not used, nor their
    # citations: the text goes as one block.
    (turn,) = assistant_turn([], style=FMT, text="Sunny", text_places=places)
    assert turn["content"] == [{"type": "text", "text": "Sunny"}]
    (turn,) = assistant_turn([], style=FMT, text="Sunny and rain.", text_places=places)
    assert turn["content"] == [
        {"type": "text", "text": "Sunny", "citations": [CHAR]},
        {"type": "text", "text": " and"},
        {"type": "text", "text": " rain.", "citations": [SEARCHED, PAGE]},
    ]
    # An entry of another shape (a citation that is no object) makes the places unknown: the
    # text then goes as one block.
    (turn,) = assistant_turn([], style=FMT, text="Sunny", text_places=[[0, 0, ["x"]]])
    assert turn["content"] == [{"type": "text", "text": "Sunny"}]


def _drain(asm: Assembler, chunks: list[dict[str, Any]]) -> str:
    return "".join(asm.feed_chunk(chunk).text for chunk in chunks)


CONVERSE_CITATION = {
    "title": "Weather report",
    "sourceContent": [{"text": "Tokyo: sunny, 21 °C."}],
    "location": {"documentChar": {"documentIndex": 0, "start": 0, "end": 20}},
}
WEB_CITATION = {
    "title": "Tokyo forecast",
    "source": "weather.example",
    "location": {"web": {"url": "https://weather.example/tokyo", "domain": "weather.example"}},
}


def _converse_stream() -> list[dict[str, Any]]:
    """Cited text, a call, and text cited on the web after it (its citation first)."""

    def delta(index: int, **member: Any) -> dict[str, Any]:
        return {"contentBlockDelta": {"delta": member, "contentBlockIndex": index}}

    def stop(index: int) -> dict[str, Any]:
        return {"contentBlockStop": {"contentBlockIndex": index}}

    tool = {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}}
    return [
        {"messageStart": {"role": "assistant"}},
        delta(0, text="It is sunny"),
        delta(0, text=", 21 °C."),
        delta(0, citation=CONVERSE_CITATION),
        stop(0),
        {"contentBlockStart": {"start": tool, "contentBlockIndex": 1}},
        delta(1, toolUse={"input": '{"city": "Tokyo"}'}),
        stop(1),
        delta(2, citation=WEB_CITATION),
        delta(2, text="Rain later."),
        stop(2),
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 9, "totalTokens": 12}}},
    ]


def _converse_turn(chunks: list[dict[str, Any]], *, with_calls: bool = True) -> Any:
    asm = Assembler()
    said = _drain(asm, chunks)
    calls = asm.finish()
    assert bool(calls) == with_calls
    (turn,) = assistant_turn(
        calls, style="bedrock-converse", text=said, text_places=asm.text_places
    )
    return turn


EXPECTED_CONVERSE = [
    {
        "citationsContent": {
            "content": [{"text": "It is sunny, 21 °C."}],
            "citations": [CONVERSE_CITATION],
        }
    },
    {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Tokyo"}}},
    {"citationsContent": {"content": [{"text": "Rain later."}], "citations": [WEB_CITATION]}},
]


def test_bedrock_citations_go_back_as_citations_content_blocks() -> None:
    from botocore.session import get_session

    turn = _converse_turn(_converse_stream())
    assert turn == {"role": "assistant", "content": EXPECTED_CONVERSE}
    # botocore's own validator of a Converse request takes the turn as it is.
    client = get_session().create_client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    model = client.meta.service_model.operation_model("Converse").input_shape
    from botocore.validate import ParamValidator

    user = {"role": "user", "content": [{"text": "Weather in Tokyo?"}]}
    report = ParamValidator().validate(
        {"modelId": "m", "messages": [user, turn]},
        model,
    )
    assert not report.has_errors(), report.generate_report()


def test_a_bedrock_answer_without_calls_keeps_its_citations() -> None:
    chunks = [c for c in _converse_stream() if not _is_tool(c)]
    chunks[-2] = {"messageStop": {"stopReason": "end_turn"}}
    turn = _converse_turn(chunks, with_calls=False)
    assert turn["content"] == [EXPECTED_CONVERSE[0], EXPECTED_CONVERSE[2]]


def _is_tool(chunk: dict[str, Any]) -> bool:
    start = chunk.get("contentBlockStart") or chunk.get("contentBlockDelta") or {}
    stop = chunk.get("contentBlockStop") or {}
    return start.get("contentBlockIndex", stop.get("contentBlockIndex")) == 1


def test_a_whole_converse_answer_keeps_its_citations_content() -> None:
    # A server that ignored the request to stream: the Converse response read as its events.
    response = {
        "output": {"message": {"role": "assistant", "content": EXPECTED_CONVERSE}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 3, "outputTokens": 9, "totalTokens": 12},
    }
    assert _converse_turn([response])["content"] == EXPECTED_CONVERSE


def test_bedrock_citations_count_toward_the_stream_byte_limit() -> None:
    big = {**CONVERSE_CITATION, "sourceContent": [{"text": "x" * 3_000}]}
    chunks = _converse_stream()
    chunks[3] = {"contentBlockDelta": {"delta": {"citation": big}, "contentBlockIndex": 0}}
    asm = Assembler(max_stream_bytes=2_000)
    _drain(asm, chunks)
    asm.finish()
    assert "stream_limit" in [kind for kind, _, _ in asm.stream_errors()]
