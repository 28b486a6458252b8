"""OpenAI Responses `reasoning` items: kept whole from `response.output_item.done` (or the
finished response's `output`) on every path, so that a stateless next request (`store=False`)
can send each back right before the item that followed it (the API refuses or degrades the
turn otherwise), and never kept cut off, twice, past the stream's byte limit, or without the
item that followed it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _taken_by_typed_dict  # pyright: ignore[reportPrivateUsage]
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler

from .clients import (
    agree_on_every_path,
    assemble_both,
    assemble_sync,
    both_paths,
    check_reasoning,
    next_responses_input,
    sdk_chunks,
)
from .conftest import SSEServer
from .streamkit import Call, fragments, responses_stream, sse_body

FMT = "openai-responses"
ENCRYPTED = "gAAAAABoZ3Jvc3N+/=="


def _item(rs_id: str, summary: list[str], encrypted: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": rs_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": text} for text in summary],
    }
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return {**item, "status": "completed"}


def _reasoning(index: int, item: dict[str, Any], *, done: bool = True) -> list[dict[str, Any]]:
    """A reasoning item's events as the API streams them: added, each summary part with its
    text deltas, then (`done`) the finished item."""
    rs_id = item["id"]
    at = {"item_id": rs_id, "output_index": index}
    started = {"id": rs_id, "type": "reasoning", "summary": []}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": started}
    ]
    for k, part in enumerate(item["summary"]):
        empty = {"type": "summary_text", "text": ""}
        events.append(
            {
                "type": "response.reasoning_summary_part.added",
                **at,
                "summary_index": k,
                "part": empty,
            }
        )
        events += [
            {"type": "response.reasoning_summary_text.delta", **at, "summary_index": k, "delta": d}
            for d in fragments(part["text"], 4)
        ]
        events += [
            {
                "type": "response.reasoning_summary_text.done",
                **at,
                "summary_index": k,
                "text": part["text"],
            },
            {
                "type": "response.reasoning_summary_part.done",
                **at,
                "summary_index": k,
                "part": part,
            },
        ]
    if done:
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def _numbered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]


FIRST = _item("rs_1", ["Weather first, ", "then 東京 😀."], ENCRYPTED)
SECOND = _item("rs_2", ["Now book."], ENCRYPTED[::-1])


def _with_calls(*, second_done: bool = True) -> list[dict[str, Any]]:
    """A reasoning item, a call, a second reasoning item (interleaved reasoning), a call."""
    calls = responses_stream(
        [Call("get_weather", '{"city": "東京"}', "call_1"), Call("book", '{"seats": 2}', "call_2")]
    )
    created, body, completed = calls[0], calls[1:-1], calls[-1]
    # Each call moves one place up for the reasoning item before it.
    first = [{**e, "output_index": 1} for e in body if e["output_index"] == 0]
    second = [{**e, "output_index": 3} for e in body if e["output_index"] == 1]
    return _numbered(
        [
            created,
            *_reasoning(0, FIRST),
            *first,
            *_reasoning(2, SECOND, done=second_done),
            *second,
            completed,
        ]
    )


def test_reasoning_items_are_kept_whole_in_order_on_every_path(
    sse_server: SSEServer, split: str
) -> None:
    route = sse_server.register_events(_with_calls(), FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way.
    events, stream = assemble_both(route, FMT)
    # The summaries are not assistant text.
    check_reasoning(events, stream, ["get_weather", "book"], [FIRST, SECOND], "")


def test_the_sdk_objects_keep_what_the_dicts_keep(sse_server: SSEServer) -> None:
    route = sse_server.register_events(_with_calls(), FMT)
    objects, dicts = Assembler(), Assembler()
    for chunk in sdk_chunks(route, FMT):
        objects.feed_chunk(chunk)
    for event in _with_calls():
        dicts.feed_chunk(event)
    assert objects.reasoning == dicts.reasoning == [FIRST, SECOND]


def test_the_next_stateless_turn_sends_each_item_back_right_before_its_call(
    sse_server: SSEServer,
) -> None:
    from openai.types.responses import ResponseInputParam, ResponseReasoningItemParam

    route = sse_server.register_events(_with_calls(), FMT)
    _, stream = assemble_sync(route, FMT)
    # Each call knows the reasoning item right before it in the output.
    assert [c.metadata.get("reasoning_id") for c in stream.calls] == ["rs_1", "rs_2"]
    turn = assistant_turn(stream.calls, style=FMT, text="On it.", reasoning=stream.reasoning)
    # In output order: two items in a row, or one away from its call, are refused.
    assert [item.get("type", "message") for item in turn] == [
        "message",
        "reasoning",
        "function_call",
        "reasoning",
        "function_call",
    ]
    assert [turn[1], turn[3]] == [FIRST, SECOND]
    # A call after its reasoning item goes as the output had it, under its own id.
    assert [turn[2]["id"], turn[4]["id"]] == ["fc_0", "fc_1"]
    for item in (turn[1], turn[3]):
        _taken_by_typed_dict(ResponseReasoningItemParam, item)
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=FMT)
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    _taken_by_typed_dict(ResponseInputParam, [user, *turn, *results])


def test_the_next_request_goes_through_the_sdk_with_the_items(sse_server: SSEServer) -> None:
    route = sse_server.register_events(_with_calls(), FMT)
    _, stream = assemble_sync(route, FMT)
    turn = assistant_turn(stream.calls, style=FMT, reasoning=stream.reasoning)
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=FMT)
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    sent = next_responses_input(sse_server, [user, *turn, *results])
    assert [sent[1], sent[3]] == [FIRST, SECOND]
    assert [(item["type"], item.get("id")) for item in sent[1:]] == [
        ("reasoning", "rs_1"),
        ("function_call", "fc_0"),
        ("reasoning", "rs_2"),
        ("function_call", "fc_1"),
        ("function_call_output", None),
        ("function_call_output", None),
    ]


def test_an_item_cut_off_by_a_dropped_connection_is_not_kept(sse_server: SSEServer) -> None:
    events = _with_calls()
    body = sse_body(events, FMT)
    # Cut inside the second item's summary, before its `output_item.done`.
    cut = body.index(b'"delta":"Now "') + 5
    route = sse_server.register(body, drop_after=cut)
    _, stream = assemble_both(route, FMT)
    assert stream.reasoning == [FIRST]
    # A stream that ends without the item finished keeps it out too.
    cut_events = _with_calls(second_done=False)
    for asm in both_paths(cut_events, FMT):
        assert asm.reasoning == [FIRST]


def test_reasoning_items_count_toward_the_stream_byte_limit() -> None:
    big = _item("rs_2", ["Long."], "x" * 6_000)
    call = responses_stream([Call("f", '{"a": 1}', "call_1")])[1:]
    events = _numbered(
        [
            *_reasoning(0, _item("rs_1", ["Short."], "e")),
            # Its follower, which the first item needs to be kept.
            *responses_stream([], text="Hm.")[1:-1],
            *_reasoning(1, big),
            *call,
        ]
    )
    short = _item("rs_1", ["Short."], "e")
    for asm in both_paths(events, FMT, limit=4_000):
        # Past the limit the response is refused whole: the item that crossed it is not kept.
        assert asm.reasoning == [short]
        assert "stream_limit" in [kind for kind, _, _ in asm.stream_errors()]
    for asm in both_paths(events, FMT, limit=8_000):
        assert asm.reasoning == [short, big]
        assert asm.stream_errors() == []


def test_a_replayed_response_keeps_its_items_once() -> None:
    created = responses_stream([])[0]
    once = [created, *_reasoning(0, FIRST)]
    # Replayed from its `response.created`, numbered again from the start.
    replayed = [*_numbered(once), *_numbered(once)]
    # An item finished twice in a stream that numbers no events.
    repeated = [created, *_reasoning(0, FIRST), *_reasoning(0, FIRST)[-1:]]
    for events in (replayed, repeated):
        for asm in both_paths(events, FMT):
            assert asm.reasoning == [FIRST]


_TEXT = st.text(
    st.sampled_from(["a", " ", "é", "東", "😀", '"', "\\", "\n", "\x01", "\ud83d", "\ude00"]),
    max_size=6,
)


@settings(max_examples=80, deadline=None)
@given(
    summary=st.lists(_TEXT, max_size=3),
    encrypted=st.one_of(st.none(), _TEXT),
    done=st.booleans(),
    cuts=st.lists(st.integers(0, 10**6), max_size=10),
)
def test_any_split_of_the_body_keeps_what_the_chunks_keep(
    summary: list[str], encrypted: str | None, done: bool, cuts: list[int]
) -> None:
    # The events as a client reads them: `json.loads` of the body's data.
    item = _item("rs_1", summary, encrypted)
    events = json.loads(json.dumps(_numbered(_reasoning(0, item, done=done))))
    chunks, raw = both_paths(events, FMT, cuts=cuts)
    assert raw.reasoning == chunks.reasoning == ([events[-1]["item"]] if done else [])


def _kept(events: list[dict[str, Any]], limit: int = 1 << 20) -> list[tuple[Any, list[Any]]]:
    """Each path's assembler over `events` (dicts through `feed_chunk`, their SSE body through
    `feed_sse`), with the calls it finished with."""
    chunks, raw = Assembler(max_stream_bytes=limit), Assembler(max_stream_bytes=limit)
    for event in events:
        chunks.feed_chunk(event)
    raw.feed_sse(sse_body(events, FMT))
    return [(chunks, chunks.finish()), (raw, raw.finish())]


def _finished_with(events: list[dict[str, Any]], *items: dict[str, Any]) -> list[dict[str, Any]]:
    """`events` with the reasoning `items` in the finished response's `output`, each before the
    call at its place (item k before call k), as the API lists them."""
    *body, final = events
    calls = final["response"]["output"]
    output = [x for pair in zip(items, calls, strict=True) for x in pair]
    return [*body, {**final, "response": {**final["response"], "output": output}}]


def _no_item_done(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` without the reasoning items' `output_item.done` (a stream joined part way)."""
    return _numbered(
        [
            e
            for e in events
            if not (e["type"] == "response.output_item.done" and e["item"]["type"] == "reasoning")
        ]
    )


def test_items_only_in_the_finished_response_are_kept_once_in_place(
    sse_server: SSEServer, split: str
) -> None:
    both = _finished_with(_with_calls(), FIRST, SECOND)
    for events in (both, _no_item_done(both)):
        for asm, calls in _kept(events):
            # Once, in output order, each paired with the call after it.
            assert asm.reasoning == [FIRST, SECOND]
            assert [c.metadata.get("reasoning_id") for c in calls] == ["rs_1", "rs_2"]
    route = sse_server.register_events(_no_item_done(both), FMT, split=split)
    events, stream = assemble_both(route, FMT)
    check_reasoning(events, stream, ["get_weather", "book"], [FIRST, SECOND], "")
    turn = assistant_turn(stream.calls, style=FMT, reasoning=stream.reasoning)
    assert [item.get("id") for item in turn] == ["rs_1", "fc_0", "rs_2", "fc_1"]


def _one_call(
    first: list[dict[str, Any]], at: int, second: dict[str, Any] = SECOND
) -> list[dict[str, Any]]:
    """`first`, then a reasoning item (`second`) and a call at `at`, `at + 1`."""
    stream = responses_stream([Call("book", '{"seats": 2}', "call_2")])
    created, body, completed = stream[0], stream[1:-1], stream[-1]
    moved = [{**e, "output_index": at + 1} for e in body]
    return _numbered([created, *first, *_reasoning(at, second), *moved, completed])


def test_an_item_whose_follower_is_not_sent_back_is_let_go(sse_server: SSEServer) -> None:
    # Each item alone fits the byte limit, not both: the one let go gives its bytes back.
    first = _item("rs_1", ["Search first."], "x" * 3_000)
    second = _item("rs_2", ["Now book."], "y" * 3_000)
    # Right before another reasoning item, or at the response's end: sent back alone, it
    # would be refused. (One before a hosted item is kept with it: test_responses_hosted.)
    ended = _one_call([], 0, second)
    for events, limit in (
        (_one_call(_reasoning(0, first), 1, second), 5_000),
        (_finished_with(_one_call(_reasoning(0, first), 1, second), second), 5_000),
        # At the end, both were held until then.
        (_numbered([*ended[:-1], *_reasoning(2, first), ended[-1]]), 8_000),
    ):
        for asm, calls in _kept(events, limit=limit):
            assert asm.reasoning == [second]
            assert [c.metadata.get("reasoning_id") for c in calls] == ["rs_2"]
            assert asm.stream_errors() == []
    route = sse_server.register_events(_one_call(_reasoning(0, FIRST), 1), FMT)
    events, stream = assemble_both(route, FMT)
    check_reasoning(events, stream, ["book"], [SECOND], "")


def test_an_item_before_the_text_goes_back_before_it(sse_server: SSEServer) -> None:
    text = responses_stream([], text="Let me book.")[1:-1]
    events = _one_call([*_reasoning(0, FIRST), *text], 2)
    route = sse_server.register_events(events, FMT)
    _, stream = assemble_both(route, FMT)
    assert stream.reasoning == [FIRST, SECOND]
    turn = assistant_turn(stream.calls, style=FMT, text=stream.text, reasoning=stream.reasoning)
    assert [item.get("id", item.get("role")) for item in turn] == [
        "rs_1",
        "assistant",
        "rs_2",
        "fc_0",
    ]


def _unpaired(item: dict[str, Any]) -> dict[str, Any]:
    """`item` with a member whose name holds an unpaired surrogate half, which `json.loads`
    takes and serde_json refuses."""
    return {"x\ud800": 1, **item}


def _only_finished(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` as a bridge that sends only the finished response sends them."""
    return _numbered([events[0], events[-1]])


@pytest.mark.parametrize("shape", ["streamed calls", "finished response only"])
def test_an_item_with_an_unpaired_name_in_the_finished_response_is_kept_alike(shape: str) -> None:
    # The raw path read each `reasoning` item of the finished response's `output` with
    # serde_json, which refused such a name: the item was not kept, its call not told its id
    # (`reasoning_id`), and the next turn went without it; read as the bridge's calls, it was
    # also told as an unreadable item.
    events = _no_item_done(_finished_with(_with_calls(), _unpaired(FIRST), _unpaired(SECOND)))
    if shape != "streamed calls":
        events = _only_finished(events)
    read, _, _, reasoning, errors = agree_on_every_path(events, FMT)
    assert [call[4].get("reasoning_id") for call in read] == ["rs_1", "rs_2"]
    assert reasoning == [_unpaired(FIRST), _unpaired(SECOND)]
    assert errors == []
    turns = []
    for asm, calls in _kept(events):
        turn = assistant_turn(calls, style=FMT, reasoning=asm.reasoning)
        assert [item["type"] for item in turn] == [
            "reasoning",
            "function_call",
            "reasoning",
            "function_call",
        ]
        assert [turn[0], turn[2]] == reasoning
        turns.append(turn)
    assert turns[0] == turns[1]
