"""The assistant text of a Responses output and of a Gemini answer goes back to the next
request as it came: each Responses `message` item as a message of its own, in its place among
the calls, reasoning items and hosted items; each run of Gemini text parts as a part of its own,
in its place among the calls, the signatures staying on the parts they came on. On every path
of the stream: the SDK's objects through `assemble`, dicts through `feed_chunk`, and the raw
bytes through `feed_sse`, cut every way."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _taken_by_typed_dict  # pyright: ignore[reportPrivateUsage]
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler

from .clients import assemble_both, assemble_gemini, next_responses_input
from .conftest import SSEServer
from .streamkit import Call, fragments, gemini_call, gemini_chunk, responses_stream, sse_body
from .test_responses_hosted import WEB, _hosted  # pyright: ignore[reportPrivateUsage]
from .test_responses_reasoning import (
    FIRST,
    SECOND,
    _item,  # pyright: ignore[reportPrivateUsage]
    _reasoning,  # pyright: ignore[reportPrivateUsage]
)

RESPONSES = "openai-responses"
GEMINI = "gemini"
THIRD = _item("rs_3", ["Tell them."], "gAAAAABrZXk=")
WEATHER = Call("get_weather", '{"city": "東京"}', "call_1")
BOOK = Call("book", '{"seats": 2}', "call_2")


# --- OpenAI Responses -------------------------------------------------------------------------


def _said(index: int, msg_id: str, text: str) -> list[dict[str, Any]]:
    """A `message` item at `index`, its text streamed in pieces."""
    item = {"type": "message", "id": msg_id, "role": "assistant", "status": "in_progress"}
    at = {"item_id": msg_id, "output_index": index, "content_index": 0}
    part = {"type": "output_text", "text": text, "annotations": []}
    done = {**item, "status": "completed", "content": [part]}
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "content": []},
        },
        *(
            {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
            for piece in fragments(text, 5)
        ),
        {"type": "response.output_item.done", "output_index": index, "item": done},
    ]


def _called(index: int, call: Call) -> list[dict[str, Any]]:
    """A `function_call` item at `index` (item id `fc_` and its call id's number)."""
    fc_id = f"fc_{call.id.removeprefix('call_')}" if call.id else f"fc_{index}"
    item = {"type": "function_call", "id": fc_id, "call_id": call.id, "name": call.name}
    at = {"item_id": fc_id, "output_index": index}
    done = {**item, "arguments": call.arguments, "status": "completed"}
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "arguments": "", "status": "in_progress"},
        },
        *(
            {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            for piece in fragments(call.arguments, 4)
        ),
        {"type": "response.output_item.done", "output_index": index, "item": done},
    ]


def _output(*items: Any) -> list[dict[str, Any]]:
    """The events of a response whose output is `items`, in order: a `(msg_id, text)` pair is a
    message, a `Call` a function call, a `reasoning` item or a hosted item itself."""
    events: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if isinstance(item, tuple):
            events += _said(index, *item)
        elif isinstance(item, Call):
            events += _called(index, item)
        elif item["type"] == "reasoning":
            events += _reasoning(index, item)
        else:
            events += _hosted(index, item)
    start, *_, end = responses_stream([])
    numbered = [start, *events, end]
    return [{**event, "sequence_number": n} for n, event in enumerate(numbered)]


def _responses_paths(events: list[dict[str, Any]]) -> list[tuple[list[Any], list[Any], str]]:
    """The calls, reasoning and text of `events` as dicts through `feed_chunk`, and through
    `feed_sse` as their body cut in three: both paths put the same places on the calls."""
    chunks, raw = Assembler(), Assembler()
    said = "".join(chunks.feed_chunk(event).text for event in events)
    body = sse_body(events, RESPONSES)
    for start, end in itertools.pairwise([0, len(body) // 3, len(body) // 2, len(body)]):
        raw.feed_sse(body[start:end])
    made = [(chunks.finish(), chunks.reasoning, said), (raw.finish(), raw.reasoning, raw.text)]
    assert [c.metadata for c in made[0][0]] == [c.metadata for c in made[1][0]]
    return made


def _shape(turn: list[dict[str, Any]]) -> list[str]:
    """Each item as its id, a call as its `call_id`, a message as its text."""
    return [item.get("content") or item.get("call_id") or item["id"] for item in turn]


def _sdk_takes(turn: list[dict[str, Any]], calls: list[Any]) -> None:
    """The next request's input, the turn and its results, as the openai SDK types take it."""
    from openai.types.responses import ResponseInputParam

    results = tool_messages(calls, [{"ok": True}] * len(calls), style=RESPONSES)
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    _taken_by_typed_dict(ResponseInputParam, [user, *turn, *results])


def test_each_message_goes_back_on_its_own_after_the_call_it_followed(
    sse_server: SSEServer, split: str
) -> None:
    events = _output(
        Call("ping", "{}", "call_1"), ("msg_1", "Pinged."), ("msg_2", "Anything else?")
    )
    route = sse_server.register_events(events, RESPONSES, split=split)
    # The real SDK's objects through `assemble`, and `feed_sse` on the same bytes cut every way:
    # the calls carry the same places on both.
    _, stream = assemble_both(route, RESPONSES)
    assert stream.text == "Pinged.Anything else?"
    turn = assistant_turn(stream.calls, style=RESPONSES, text=stream.text)
    # Two messages, after the call, not one message of both texts run together before it.
    assert _shape(turn) == ["call_1", "Pinged.", "Anything else?"]
    _sdk_takes(turn, stream.calls)
    for calls, reasoning, said in _responses_paths(events):
        assert assistant_turn(calls, style=RESPONSES, text=said, reasoning=reasoning) == turn


def test_messages_between_and_after_the_calls_keep_their_places(sse_server: SSEServer) -> None:
    events = _output(
        ("msg_1", "Checking 東京."),
        WEATHER,
        ("msg_2", "Then booking."),
        BOOK,
        ("msg_3", "Both asked 😀."),
    )
    route = sse_server.register_events(events, RESPONSES)
    _, stream = assemble_both(route, RESPONSES)
    assert [c.metadata for c in stream.calls] == [
        {"item_id": "fc_1", "text_before": [[0, 0]]},
        {"item_id": "fc_2", "text_before": [[12, 0]], "text_after": [[25, 0]]},
    ]
    turn = assistant_turn(stream.calls, style=RESPONSES, text=stream.text)
    assert _shape(turn) == ["Checking 東京.", "call_1", "Then booking.", "call_2", "Both asked 😀."]
    _sdk_takes(turn, stream.calls)


def test_a_stateless_turn_sends_every_reasoning_item_before_the_message_it_preceded(
    sse_server: SSEServer,
) -> None:
    # Reasoning before each message, a call between them, a web search between the second
    # message and the last call: each item goes back right before the item that followed it.
    events = _output(
        FIRST,
        ("msg_1", "Let me look."),
        SECOND,
        WEATHER,
        THIRD,
        ("msg_2", "Found it."),
        WEB,
        BOOK,
    )
    route = sse_server.register_events(events, RESPONSES)
    _, stream = assemble_both(route, RESPONSES)
    assert stream.reasoning == [FIRST, SECOND, THIRD, WEB]
    expected = ["rs_1", "Let me look.", "rs_2", "call_1", "rs_3", "Found it.", "ws_1", "call_2"]
    for calls, reasoning, said in [
        (stream.calls, stream.reasoning, stream.text),
        *_responses_paths(events),
    ]:
        with warnings.catch_warnings():
            # No reasoning item is left out: each one's follower is in the turn.
            warnings.simplefilter("error")
            turn = assistant_turn(calls, style=RESPONSES, text=said, reasoning=reasoning)
        assert _shape(turn) == expected
        _sdk_takes(turn, calls)
    # The real openai client sends it as it is.
    turn = assistant_turn(
        stream.calls, style=RESPONSES, text=stream.text, reasoning=stream.reasoning
    )
    assert _shape(next_responses_input(sse_server, turn)) == expected


def test_a_reasoning_item_goes_before_its_message_not_the_hosted_item_after_it() -> None:
    for calls, reasoning, said in _responses_paths(
        _output(FIRST, ("msg_1", "Searching."), WEB, WEATHER)
    ):
        turn = assistant_turn(calls, style=RESPONSES, text=said, reasoning=reasoning)
        assert _shape(turn) == ["rs_1", "Searching.", "ws_1", "call_1"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ((WEATHER, BOOK), ["call_1", "call_2"]),
        ((("msg_1", "On it."), WEATHER, BOOK), ["On it.", "call_1", "call_2"]),
        ((FIRST, ("msg_1", "On it."), WEATHER), ["rs_1", "On it.", "call_1"]),
        ((("msg_1", "On it."), FIRST, WEATHER), ["On it.", "rs_1", "call_1"]),
        ((WEB, ("msg_1", "On it."), WEATHER), ["ws_1", "On it.", "call_1"]),
        (
            (FIRST, WEB, SECOND, ("msg_1", "On it."), THIRD, WEATHER),
            ["rs_1", "ws_1", "rs_2", "On it.", "rs_3", "call_1"],
        ),
    ],
)
def test_no_text_or_one_message_before_the_calls_is_sent_as_before(
    output: tuple[Any, ...], expected: list[str]
) -> None:
    for calls, reasoning, said in _responses_paths(_output(*output)):
        # Nothing more on the calls: the text goes right before the first call, as it did.
        assert not any({"text_before", "text_after"} & set(c.metadata) for c in calls)
        turn = assistant_turn(calls, style=RESPONSES, text=said, reasoning=reasoning)
        assert _shape(turn) == expected


# --- Gemini -----------------------------------------------------------------------------------


def _gemini_paths(chunks: list[dict[str, Any]]) -> list[tuple[list[Any], str]]:
    """The calls and text of `chunks` as dicts through `feed_chunk`, and through `feed_sse` as
    their body cut in three."""
    chunked, raw = Assembler(), Assembler()
    said = "".join(chunked.feed_chunk(chunk).text for chunk in chunks)
    body = sse_body(chunks, GEMINI)
    for start, end in itertools.pairwise([0, len(body) // 3, len(body) // 2, len(body)]):
        raw.feed_sse(body[start:end])
    made = [(chunked.finish(), said), (raw.finish(), raw.text)]
    assert [c.metadata for c in made[0][0]] == [c.metadata for c in made[1][0]]
    return made


def _parts(turn: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """Each part of the one content as (its text or call's name, its signature)."""
    from google.genai import types

    (content,) = turn
    # The SDK's models forbid unknown keys.
    read = types.Content.model_validate(content)
    shown: list[tuple[str, str | None]] = []
    for part in read.parts or []:
        said = part.text if part.function_call is None else part.function_call.name
        signed = part.thought_signature
        shown.append((said or "", None if signed is None else signed.decode()))
    return shown


def _serve(server: SSEServer, chunks: list[dict[str, Any]], split: str) -> Any:
    return server.register(sse_body(chunks, GEMINI), split=split)


def test_gemini_text_after_a_call_stays_after_it(sse_server: SSEServer, split: str) -> None:
    chunks = [
        gemini_chunk(gemini_call("ping", {})),
        gemini_chunk({"text": "Pinged."}, finish="STOP"),
    ]
    _, stream = assemble_gemini(_serve(sse_server, chunks, split), chunks)
    assert [c.metadata for c in stream.calls] == [{"text_after": [[0, 0]]}]
    assert _parts(assistant_turn(stream.calls, style=GEMINI, text=stream.text)) == [
        ("ping", None),
        ("Pinged.", None),
    ]


def _around() -> list[dict[str, Any]]:
    """Text, a signed call, text, a signed call and text in one chunk: a thought, a signature
    alone and a text cut in two along the way."""
    return [
        gemini_chunk({"text": "Checking "}),
        gemini_chunk({"text": "東京."}),
        gemini_chunk(gemini_call("get_weather", {"city": "東京"})),
        # A part with nothing but a signature belongs to the call before it.
        gemini_chunk({"thoughtSignature": "Zmlyc3Q="}),
        # A thought is not text: it neither starts nor splits a block.
        gemini_chunk({"text": "Booking next.", "thought": True}),
        gemini_chunk({"text": "Then "}),
        gemini_chunk({"text": "booking."}),
        gemini_chunk(
            gemini_call("book", {"seats": 2}, thoughtSignature="c2Vjb25k"),
            {"text": "Both asked 😀."},
            finish="STOP",
        ),
    ]


def test_gemini_text_parts_keep_their_places_and_calls_their_signatures(
    sse_server: SSEServer, split: str
) -> None:
    chunks = _around()
    _, stream = assemble_gemini(_serve(sse_server, chunks, split), chunks)
    assert stream.text == "Checking 東京.Then booking.Both asked 😀."
    expected = [
        ("Checking 東京.", None),
        ("get_weather", "first"),
        ("Then booking.", None),
        ("book", "second"),
        ("Both asked 😀.", None),
    ]
    turn = assistant_turn(stream.calls, style=GEMINI, text=stream.text)
    assert _parts(turn) == expected
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=GEMINI)
    from google.genai import types

    types.Content.model_validate({"role": "user", "parts": results})


def test_gemini_parts_of_one_chunk_are_placed_alike() -> None:
    # A call and text after it in the chunk that also holds the text before it.
    chunk = gemini_chunk(
        {"text": "Checking."}, gemini_call("ping", {}), {"text": "Pinged."}, finish="STOP"
    )
    for calls, said in _gemini_paths([chunk]):
        assert [c.metadata for c in calls] == [{"text_before": [[0, 0]], "text_after": [[9, 0]]}]
        assert _parts(assistant_turn(calls, style=GEMINI, text=said)) == [
            ("Checking.", None),
            ("ping", None),
            ("Pinged.", None),
        ]


@pytest.mark.parametrize("text", ["", "On it."])
def test_gemini_no_text_or_text_before_the_calls_is_sent_as_before(text: str) -> None:
    said = [gemini_chunk({"text": piece}) for piece in fragments(text, 3)]
    signed = gemini_call("get_weather", {"city": "東京"}, thoughtSignature="c2ln")
    chunks = [*said, gemini_chunk(signed), gemini_chunk(gemini_call("book", {}), finish="STOP")]
    for calls, told in _gemini_paths(chunks):
        assert [c.metadata for c in calls] == [{"thought_signature": "c2ln"}, {}]
        assert _parts(assistant_turn(calls, style=GEMINI, text=told)) == [
            *([(text, None)] if text else []),
            ("get_weather", "sig"),
            ("book", None),
        ]
