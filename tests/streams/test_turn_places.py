"""A turn with no call keeps the places of its text blocks itself (`Assembler.text_places`,
`stream.text_places`, `StreamEnded.text_places`): with no call to write them on, the next turn
still sends each Responses message, Anthropic text block and Gemini text part back in its
place among the reasoning, server and hosted items, on every path of the stream."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import assistant_turn
from toolwire.assembler import Assembler
from toolwire.events import StreamEnded

from .clients import assemble_both, assemble_gemini, next_responses_input
from .conftest import SSEServer
from .streamkit import Call, anthropic_message_start, gemini_call, gemini_chunk, sse_body
from .test_anthropic_server_tools import (
    RESULTS,
    SEARCH,
    _end,  # pyright: ignore[reportPrivateUsage]
)
from .test_anthropic_server_tools import _block as _server_block  # pyright: ignore[reportPrivateUsage]
from .test_anthropic_thinking import sent_by_anthropic
from .test_message_places import (
    _gemini_paths,  # pyright: ignore[reportPrivateUsage]
    _output,  # pyright: ignore[reportPrivateUsage]
    _parts,  # pyright: ignore[reportPrivateUsage]
    _sdk_takes,  # pyright: ignore[reportPrivateUsage]
    _serve,  # pyright: ignore[reportPrivateUsage]
    _shape,  # pyright: ignore[reportPrivateUsage]
)
from .test_responses_hosted import WEB
from .test_responses_reasoning import FIRST, SECOND

RESPONSES = "openai-responses"
WEATHER = Call("get_weather", '{"city": "東京"}', "call_1")


def _raw_and_chunks(events: list[dict[str, Any]], fmt: str) -> list[tuple[Assembler, str]]:
    """`events` as dicts through `feed_chunk`, and their body cut in three through `feed_sse`,
    both finished with no call: each assembler with the text it handed out."""
    chunks, raw = Assembler(), Assembler()
    said = "".join(chunks.feed_chunk(event).text for event in events)
    body = sse_body(events, fmt)
    for start, end in itertools.pairwise([0, len(body) // 3, len(body) // 2, len(body)]):
        raw.feed_sse(body[start:end])
    assert chunks.finish() == [] and raw.finish() == []
    assert raw.text == said
    return [(chunks, said), (raw, raw.text)]


class _Finished:
    """An assembler's calls and text places once finished."""

    def __init__(self, asm: Assembler) -> None:
        self.calls = asm.finish()
        self.text_places = asm.text_places


def _raw_and_chunks_of_calls(events: list[dict[str, Any]]) -> list[tuple[_Finished, str]]:
    """`events` as dicts through `feed_chunk`, and their body through `feed_sse`, finished."""
    chunks, raw = Assembler(), Assembler()
    said = "".join(chunks.feed_chunk(event).text for event in events)
    raw.feed_sse(sse_body(events, RESPONSES))
    return [(_Finished(chunks), said), (_Finished(raw), raw.text)]


def _ended(events: list[Any]) -> StreamEnded:
    (end,) = [e for e in events if isinstance(e, StreamEnded)]
    return end


def test_responses_messages_without_calls_go_back_each_after_its_reasoning(
    sse_server: SSEServer, split: str
) -> None:
    events = _output(FIRST, ("msg_1", "Let me look."), SECOND, ("msg_2", "Found it 😀."))
    route = sse_server.register_events(events, RESPONSES, split=split)
    seen, stream = assemble_both(route, RESPONSES)
    assert stream.calls == [] and stream.reasoning == [FIRST, SECOND]
    assert stream.text_places == [[0, 1], [12, 2]]
    assert _ended(seen).text_places == stream.text_places
    expected = ["rs_1", "Let me look.", "rs_2", "Found it 😀."]
    ways = [(stream.reasoning, stream.text, stream.text_places)]
    ways += [
        (asm.reasoning, said, asm.text_places) for asm, said in _raw_and_chunks(events, RESPONSES)
    ]
    for reasoning, said, places in ways:
        assert places == stream.text_places
        with warnings.catch_warnings():
            # Each reasoning item goes with the message that followed it: none is left out.
            warnings.simplefilter("error")
            turn = assistant_turn(
                [], style=RESPONSES, text=said, reasoning=reasoning, text_places=places
            )
        assert _shape(turn) == expected
        _sdk_takes(turn, [])
    # The real openai client sends it as it is, stateless.
    turn = assistant_turn(
        [],
        style=RESPONSES,
        text=stream.text,
        reasoning=stream.reasoning,
        text_places=stream.text_places,
    )
    assert _shape(next_responses_input(sse_server, turn)) == expected


def test_responses_messages_around_a_hosted_item_keep_their_places() -> None:
    events = _output(("msg_1", "Searching."), WEB, ("msg_2", "Found it."))
    for asm, said in _raw_and_chunks(events, RESPONSES):
        assert asm.text_places == [[0, 0], [10, 1]]
        turn = assistant_turn(
            [], style=RESPONSES, text=said, reasoning=asm.reasoning, text_places=asm.text_places
        )
        assert _shape(turn) == ["Searching.", "ws_1", "Found it."]


def _paused() -> list[dict[str, Any]]:
    """Text, a web search and its results, text: Claude pauses the turn after a server tool."""
    return [
        anthropic_message_start(),
        *_server_block(0, {"type": "text", "text": ""}, pieces=("Searching ", "東京.")),
        *_server_block(1, SEARCH, pieces=('{"query": "東京 weather"}',)),
        *_server_block(2, RESULTS),
        *_server_block(3, {"type": "text", "text": ""}, pieces=("Found it.",)),
        *_end("pause_turn"),
    ]


def _anthropic_shape(turn: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    (message,) = turn
    return [(b["type"], b.get("text") or b.get("id")) for b in message["content"]]


def test_a_paused_anthropic_turn_goes_back_in_its_block_order(
    sse_server: SSEServer, split: str
) -> None:
    events = _paused()
    route = sse_server.register_events(events, "anthropic", split=split)
    seen, stream = assemble_both(route, "anthropic")
    assert stream.finish_reason == "pause_turn" and stream.calls == []
    assert stream.text_places == [[0, 0], [13, 2]]
    assert _ended(seen).text_places == stream.text_places
    expected = [
        ("text", "Searching 東京."),
        ("server_tool_use", "srvtoolu_1"),
        ("web_search_tool_result", None),
        ("text", "Found it."),
    ]
    ways = [(stream.reasoning, stream.text, stream.text_places)]
    ways += [(a.reasoning, said, a.text_places) for a, said in _raw_and_chunks(events, "anthropic")]
    for reasoning, said, places in ways:
        turn = assistant_turn(
            [], style="anthropic", text=said, reasoning=reasoning, text_places=places
        )
        assert _anthropic_shape(turn) == expected
    # Sent back as it came, through the real client, for Claude to go on with its turn.
    turn = assistant_turn(
        [],
        style="anthropic",
        text=stream.text,
        reasoning=stream.reasoning,
        text_places=stream.text_places,
    )
    sent = sent_by_anthropic(sse_server, turn)
    assert [(b["type"], b.get("text") or b.get("id")) for b in sent] == expected


def test_a_turn_with_calls_leaves_its_places_on_them() -> None:
    events = _output(("msg_1", "On it."), WEATHER, ("msg_2", "Done."))
    for asm, said in _raw_and_chunks_of_calls(events):
        assert asm.text_places is None
        turn = assistant_turn(asm.calls, style=RESPONSES, text=said, text_places=[[0, 0], [2, 0]])
        # Places given for a turn with no call are not read: the calls' own are.
        assert _shape(turn) == ["On it.", "call_1", "Done."]


def test_turn_places_past_the_text_given_are_not_used_to_cut_it() -> None:
    (turn,) = assistant_turn([], style=RESPONSES, text="Mine.", text_places=[[0, 0], [9, 1]])
    assert turn == {"role": "assistant", "content": "Mine."}


@pytest.mark.parametrize("places", [[["a", 0]], [[1]], "[[0, 0]]", [[3, 0], [1, 0]], [[0, -1]]])
def test_turn_places_that_do_not_fit_send_the_text_after_the_reasoning(places: Any) -> None:
    (turn,) = assistant_turn(
        [], style="anthropic", text="Found.", reasoning=[SEARCH, RESULTS], text_places=places
    )
    assert _anthropic_shape([turn]) == [
        ("server_tool_use", "srvtoolu_1"),
        ("web_search_tool_result", None),
        ("text", "Found."),
    ]


def _gemini_text_places(chunks: list[dict[str, Any]]) -> list[Any]:
    """The text places of `chunks` as dicts through `feed_chunk`, and through `feed_sse` cut in
    three."""
    return [asm.text_places for asm, _ in _raw_and_chunks(chunks, "gemini")]


def test_a_gemini_answer_keeps_its_text_parts_and_their_signature(
    sse_server: SSEServer, split: str
) -> None:
    # Thought parts first and between the texts; the last text signed on a part of its own, as
    # Gemini signs an answer without calls on its last part.
    chunks = [
        gemini_chunk({"text": "Planning.", "thought": True}),
        gemini_chunk({"text": "First "}),
        gemini_chunk({"text": "东京."}),
        gemini_chunk({"text": "Checking.", "thought": True}),
        gemini_chunk({"text": "Second 😀."}),
        gemini_chunk({"text": "", "thoughtSignature": "c2ln"}, finish="STOP"),
    ]
    _, stream = assemble_gemini(_serve(sse_server, chunks, split), chunks)
    assert stream.calls == []
    # Each text block after the thoughts kept before it.
    assert stream.text_places == [[0, 1], [9, 2, "c2ln"]]
    assert _gemini_text_places(chunks) == [stream.text_places] * 2
    turn = assistant_turn([], style="gemini", text=stream.text, text_places=stream.text_places)
    assert _parts(turn) == [("First 东京.", None), ("Second 😀.", "sig")]
    turn = assistant_turn(
        [],
        style="gemini",
        text=stream.text,
        reasoning=stream.reasoning,
        text_places=stream.text_places,
    )
    assert turn[0]["parts"][::2] == [
        {"text": "Planning.", "thought": True},
        {"text": "Checking.", "thought": True},
    ]
    assert _parts(turn)[1::2] == [("First 东京.", None), ("Second 😀.", "sig")]


def test_a_signed_gemini_text_part_is_a_part_of_its_own() -> None:
    chunks = [
        gemini_chunk({"text": "Signed.", "thoughtSignature": "Zmlyc3Q="}),
        gemini_chunk({"text": "Not."}, finish="STOP"),
    ]
    for asm, said in _raw_and_chunks(chunks, "gemini"):
        assert asm.text_places == [[0, 0, "Zmlyc3Q="], [7, 0]]
        turn = assistant_turn([], style="gemini", text=said, text_places=asm.text_places)
        assert _parts(turn) == [("Signed.", "first"), ("Not.", None)]


def test_a_gemini_text_signature_before_a_call_stays_on_the_text() -> None:
    chunks = [
        gemini_chunk({"text": "On it."}),
        gemini_chunk({"thoughtSignature": "c2ln"}),
        gemini_chunk(gemini_call("ping", {}, thoughtSignature="c2Vjb25k"), finish="STOP"),
    ]
    for calls, said in _gemini_paths(chunks):
        assert [c.metadata for c in calls] == [
            {"thought_signature": "c2Vjb25k", "text_before": [[0, 0, "c2ln"]]}
        ]
        assert _parts(assistant_turn(calls, style="gemini", text=said)) == [
            ("On it.", "sig"),
            ("ping", "second"),
        ]
