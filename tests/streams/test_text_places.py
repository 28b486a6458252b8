"""The assistant text of an Anthropic or Bedrock message goes back to the next request as it
came: text the model wrote after a call stays after it, separate text blocks stay separate,
and each stays in its place among the thinking blocks, on every path of the stream."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from tests.test_assistant_turn_reasoning import sdk_takes_anthropic_turn
from tests.test_result_messages import _bedrock_request_errors  # pyright: ignore[reportPrivateUsage]
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler

from .bedrockkit import assemble_bedrock, message_stop, metadata, serve, text_block, tool_block
from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import Call, anthropic_message_start, anthropic_stream, sse_body
from .test_anthropic_thinking import (
    SIGNATURE,
    _block,  # pyright: ignore[reportPrivateUsage]
    _thinking,  # pyright: ignore[reportPrivateUsage]
    next_turn_as_sent,
)

FMT = "anthropic"
WEATHER = Call("get_weather", '{"city": "東京"}', "toolu_1")
BOOK = Call("book", '{"seats": 2}', "toolu_2")
THOUGHT = {"type": "thinking", "thinking": "Let me think.", "signature": SIGNATURE}


def _said(index: int, text: str) -> list[dict[str, Any]]:
    """A text block at `index`."""
    return _block(index, [e for e in anthropic_stream([], text=text) if "index" in e])


def _call(index: int, call: Call) -> list[dict[str, Any]]:
    return _block(index, anthropic_stream([call], size=4))


def _message(*blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A message of these blocks, numbered in order, that stops for its calls."""
    end = anthropic_stream([WEATHER])
    return [anthropic_message_start(), *(e for block in blocks for e in block), *end[-2:]]


def _around() -> list[dict[str, Any]]:
    """Text, a call, text, a call, text: a model that writes between and after its calls."""
    return _message(
        _said(0, "Checking 東京."),
        _call(1, WEATHER),
        _said(2, "Then booking."),
        _call(3, BOOK),
        _said(4, "Both asked 😀."),
    )


def _shape(turn: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(b["type"], b.get("text") or b.get("id")) for b in turn["content"]]


def test_text_after_a_call_stays_after_it_on_every_path(sse_server: SSEServer, split: str) -> None:
    route = sse_server.register_events(_around(), FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way: the
    # calls carry the same places on both.
    _, stream = assemble_both(route, FMT)
    assert stream.text == "Checking 東京.Then booking.Both asked 😀."
    assert [c.metadata for c in stream.calls] == [
        {"text_before": [[0, 0]]},
        {"text_before": [[12, 0]], "text_after": [[25, 0]]},
    ]
    (turn,) = assistant_turn(stream.calls, style=FMT, text=stream.text, reasoning=stream.reasoning)
    assert _shape(turn) == [
        ("text", "Checking 東京."),
        ("tool_use", "toolu_1"),
        ("text", "Then booking."),
        ("tool_use", "toolu_2"),
        ("text", "Both asked 😀."),
    ]
    sdk_takes_anthropic_turn(turn, tool_messages(stream.calls, [{"temp": 21}, 1], style=FMT))


def _paths(events: list[dict[str, Any]]) -> list[tuple[list[Any], list[dict[str, Any]]]]:
    """The calls and reasoning of `events` fed as dicts through `feed_chunk`, and through
    `feed_sse` as their body cut in three: both paths place the text alike."""
    chunks, raw = Assembler(), Assembler()
    for event in events:
        chunks.feed_chunk(event)
    body = sse_body(events, FMT)
    for start, end in itertools.pairwise([0, len(body) // 3, len(body) // 2, len(body)]):
        raw.feed_sse(body[start:end])
    made = [(chunks.finish(), chunks.reasoning), (raw.finish(), raw.reasoning)]
    assert [c.metadata for c in made[0][0]] == [c.metadata for c in made[1][0]]
    return made


def _text_of(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["delta"]["text"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"
    )


def test_text_blocks_stay_apart_and_in_their_places_among_the_thinking() -> None:
    events = _message(
        _thinking(0, ["Weather ", "first."], SIGNATURE),
        _said(1, "On it."),
        _thinking(2, ["Then ", "book."], "c2ln"),
        _said(3, "First the weather."),
        _said(4, " "),
        _said(5, "Then the seats."),
        _call(6, WEATHER),
        _call(7, BOOK),
    )
    for calls, reasoning in _paths(events):
        (turn,) = assistant_turn(calls, style=FMT, text=_text_of(events), reasoning=reasoning)
        assert _shape(turn) == [
            ("thinking", None),
            ("text", "On it."),
            ("thinking", None),
            ("text", "First the weather."),
            # The blank block is left out (the API refuses one), the next one stays apart.
            ("text", "Then the seats."),
            ("tool_use", "toolu_1"),
            ("tool_use", "toolu_2"),
        ]
        sdk_takes_anthropic_turn(turn, tool_messages(calls, [1, 2], style=FMT))


def test_text_only_after_the_calls_follows_them() -> None:
    events = _message(_call(0, WEATHER), _call(1, BOOK), _said(2, "Asked both."))
    for calls, _ in _paths(events):
        assert [c.metadata for c in calls] == [{}, {"text_after": [[0, 0]]}]
        (turn,) = assistant_turn(calls, style=FMT, text="Asked both.")
        assert _shape(turn) == [
            ("tool_use", "toolu_1"),
            ("tool_use", "toolu_2"),
            ("text", "Asked both."),
        ]


def test_the_next_request_goes_through_the_sdk_in_the_same_order(sse_server: SSEServer) -> None:
    sent = next_turn_as_sent(sse_server, _around())
    assert [(b["type"], b.get("text") or b.get("id")) for b in sent] == [
        ("text", "Checking 東京."),
        ("tool_use", "toolu_1"),
        ("text", "Then booking."),
        ("tool_use", "toolu_2"),
        ("text", "Both asked 😀."),
    ]


@pytest.mark.parametrize("thinking", [False, True])
@pytest.mark.parametrize("text", ["", "On it."])
def test_no_text_or_one_block_before_the_calls_is_sent_as_before(thinking: bool, text: str) -> None:
    events = anthropic_stream([WEATHER, BOOK], text=text, thinking=thinking)
    for calls, reasoning in _paths(events):
        # Nothing more on the calls: the text goes right before the first call, as it did.
        assert not any({"text_before", "text_after"} & set(c.metadata) for c in calls)
        (turn,) = assistant_turn(calls, style=FMT, text=text, reasoning=reasoning)
        assert _shape(turn) == [
            *([("thinking", None)] if thinking else []),
            *([("text", text)] if text else []),
            ("tool_use", "toolu_1"),
            ("tool_use", "toolu_2"),
        ]


def test_text_not_the_streams_goes_as_one_block_before_the_calls() -> None:
    ((calls, _), _) = _paths(_around())
    # Places past the text given (the caller's own text) are not used to cut it.
    (turn,) = assistant_turn(calls, style=FMT, text="Mine.")
    assert _shape(turn) == [("text", "Mine."), ("tool_use", "toolu_1"), ("tool_use", "toolu_2")]


def test_a_replayed_response_keeps_its_text_in_its_places() -> None:
    events = _around()
    # The response comes again from its start (a reconnect): its text and calls are kept
    # once, and so are its blocks' places, as if it had come once.
    replayed = [*events[:-2], *events]
    text = _text_of(events)
    for (calls, _), (once, _) in zip(_paths(replayed), _paths(events), strict=True):
        assert [c.metadata for c in calls] == [c.metadata for c in once] != [{}, {}]
        (turn,) = assistant_turn(calls, style=FMT, text=text)
        assert turn == assistant_turn(once, style=FMT, text=text)[0]
        assert _shape(turn) == [
            ("text", "Checking 東京."),
            ("tool_use", "toolu_1"),
            ("text", "Then booking."),
            ("tool_use", "toolu_2"),
            ("text", "Both asked 😀."),
        ]


def _converse() -> list[dict[str, Any]]:
    """Text, a call, two text blocks, a call, text: Bedrock sends text blocks without a start."""
    return [
        {"messageStart": {"role": "assistant"}},
        *text_block(0, "Checking 東京."),
        *tool_block(1, Call("get_weather", '{"city": "東京"}', "tooluse_1")),
        *text_block(2, "Then booking."),
        *text_block(3, "Right away."),
        *tool_block(4, Call("book", '{"seats": 2}', "tooluse_2")),
        *text_block(5, "Both asked 😀."),
        message_stop("tool_use"),
        metadata(),
    ]


def test_bedrock_text_goes_back_in_its_blocks_and_places(sse_server: SSEServer) -> None:
    asm = Assembler()
    said = "".join(asm.feed_chunk(event).text for event in _converse())
    calls = asm.finish()
    # The real boto3 client's events, through `assemble`, tell each call the same.
    _, stream = assemble_bedrock(serve(sse_server, _converse()))
    assert stream.text == said
    assert [c.metadata for c in stream.calls] == [c.metadata for c in calls]
    (turn,) = assistant_turn(calls, style="bedrock-converse", text=said)
    assert [b.get("text") or b["toolUse"]["toolUseId"] for b in turn["content"]] == [
        "Checking 東京.",
        "tooluse_1",
        "Then booking.",
        "Right away.",
        "tooluse_2",
        "Both asked 😀.",
    ]
    results = tool_messages(calls, [{"temp": 21}, {"ok": True}], style="bedrock-converse")
    user = {"role": "user", "content": [{"text": "Weather in Tokyo, and book."}]}
    # botocore's own validator of the Converse request takes them.
    assert _bedrock_request_errors([user, turn, {"role": "user", "content": results}]) == ""


def test_a_turn_of_some_of_the_calls_loses_no_text() -> None:
    ((calls, _), _) = _paths(_around())
    said = "Checking 東京.Then booking.Both asked 😀."
    # The first call left out: its text goes with the next block kept.
    (turn,) = assistant_turn(calls[1:], style=FMT, text=said)
    assert _shape(turn) == [
        ("text", "Checking 東京.Then booking."),
        ("tool_use", "toolu_2"),
        ("text", "Both asked 😀."),
    ]


@pytest.mark.parametrize(
    "places",
    [[["a", 0]], [[1]], "[[0, 0]]", [[3, 0], [1, 0]], [[True, 0]], [[0, -1]], [[99, 0]]],
)
def test_places_that_do_not_fit_send_the_text_as_one_block(places: object) -> None:
    asm = Assembler()
    asm.feed(0, id="toolu_1", name="ping", arguments="{}")
    asm.set_metadata(0, "text_after", places)
    (turn,) = assistant_turn(asm.finish(), style=FMT, text="Pinging.")
    assert _shape(turn) == [("text", "Pinging."), ("tool_use", "toolu_1")]
