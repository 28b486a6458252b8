"""`toolwire.assemble` over the real OpenAI client (Responses API), sync and async."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

pytest.importorskip("toolwire._core")

from toolwire import Assembler
from toolwire.events import CallStarted, StreamEnded, TextDelta
from toolwire.toolset import Toolset

from .clients import assemble_async, assemble_both, assemble_sync
from .conftest import SSEServer
from .make_fixtures import PARALLEL, TEXT, large_arguments
from .streamkit import Call, load_events, responses_stream, sse_body

FMT = "openai-responses"


def test_parallel_interleaved_calls_sync(sse_server: SSEServer, split: str) -> None:
    _, events_in = load_events("openai_responses_parallel4")
    route = sse_server.register_events(events_in, FMT, split=split)
    events, stream = assemble_sync(route, FMT)
    assert [c.name for c in stream.calls] == [c.name for c in PARALLEL]
    assert [c.value for c in stream.calls] == [c.value for c in PARALLEL]
    assert all(c.ok for c in stream.calls)
    # The id is the call_id a function_call_output must quote; the item id is kept for replay.
    assert [c.id for c in stream.calls] == ["call_0", "call_1", "call_2", "call_3"]
    assert [c.metadata["item_id"] for c in stream.calls] == ["fc_0", "fc_1", "fc_2", "fc_3"]
    # Output index 0 is the message; calls are keyed by output_index 1..4.
    assert [c.index for c in stream.calls] == [1, 2, 3, 4]
    assert stream.text == TEXT == "".join(e.text for e in events if isinstance(e, TextDelta))
    end = events[-1]
    assert isinstance(end, StreamEnded) and end.finish_reason == "completed"
    assert end.usage is not None and end.usage["total_tokens"] == 33
    assert [e.name for e in events if isinstance(e, CallStarted)] == [c.name for c in PARALLEL]


@pytest.mark.anyio
async def test_parallel_interleaved_calls_async(sse_server: SSEServer, split: str) -> None:
    _, events_in = load_events("openai_responses_parallel4")
    route = sse_server.register_events(events_in, FMT, split=split)
    _, stream = await assemble_async(route, FMT)
    assert [c.value for c in stream.calls] == [c.value for c in PARALLEL]
    assert stream.text == TEXT


def test_200k_arguments(sse_server: SSEServer) -> None:
    big = large_arguments()
    route = sse_server.register_events(
        responses_stream([Call("write_file", big)], size=4093), FMT, split="random-7"
    )
    _, stream = assemble_sync(route, FMT, progress=False)
    assert stream.calls[0].value == json.loads(big)


def test_incomplete_max_output_tokens_truncates(sse_server: SSEServer) -> None:
    events_in = responses_stream(
        [Call("f", '{"path": "a", "content": "long"}')],
        size=6,
        status="incomplete",
        incomplete_reason="max_output_tokens",
    )
    # The cut call never gets its done events.
    cut = [
        e
        for e in events_in
        if not (
            e["type"] in ("response.function_call_arguments.done", "response.output_item.done")
            or (e["type"] == "response.function_call_arguments.delta" and "long" in e["delta"])
        )
    ]
    route = sse_server.register_events(cut, FMT)
    events, stream = assemble_sync(route, FMT)
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "truncated"
    assert events[-1].finish_reason == "max_output_tokens"


def test_content_filter_stops_open_calls(sse_server: SSEServer) -> None:
    events_in = responses_stream(
        [Call("f", '{"a": 1}')], status="incomplete", incomplete_reason="content_filter"
    )
    cut = [e for e in events_in if e["type"] != "response.output_item.done"]
    _, stream = assemble_sync(sse_server.register_events(cut, FMT), FMT)
    assert stream.calls[0].error.kind == "filtered"


def test_connection_drop(sse_server: SSEServer) -> None:
    body = sse_body(responses_stream([Call("f", '{"a":1}'), Call("g", '{"b":"xyz"}')], size=3), FMT)
    route = sse_server.register(body, drop_after=body.index(b'"xy') + 2)
    events, stream = assemble_sync(route, FMT)
    first, second = stream.calls
    assert first.ok and first.value == {"a": 1}
    assert second.error is not None and second.error.kind == "truncated"
    assert isinstance(stream.transport_error, openai.APIConnectionError)
    assert events[-1].finish_reason is None


def _calls_three_ways(sse_server: SSEServer, events: list[dict[str, Any]]) -> list[Any]:
    """The calls of `events` fed as dicts, as raw SSE and through the real openai client: the
    same on every path."""
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    shown = [(c.name, c.arguments, c.error.kind if c.error else None) for c in dicts.finish()]
    raw = Assembler()
    raw.feed_sse(sse_body(events, FMT))
    assert [(c.name, c.arguments, c.error.kind if c.error else None) for c in raw.finish()] == shown
    _, stream = assemble_sync(sse_server.register_events(events, FMT), FMT)
    assert [(c.name, c.arguments, c.error.kind if c.error else None) for c in stream.calls] == shown
    return shown


def test_a_blank_item_id_is_no_id(sse_server: SSEServer) -> None:
    # Quirk 14: an empty `item_id` names no item; keyed apart, its delta made a second call.
    events = responses_stream([Call("ping", '{"a": 1, "b": 2}')], size=7)
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    deltas[-1]["item_id"] = ""
    assert _calls_three_ways(sse_server, events) == [("ping", '{"a": 1, "b": 2}', None)]


@pytest.mark.parametrize("blank", ["", None])
def test_an_item_announced_without_a_name_is_named_by_its_done(
    sse_server: SSEServer, blank: str | None
) -> None:
    # Quirks 10, 11: a bridge announces the item with a blank name (or none), streams the
    # arguments, and names it in `output_item.done`. The name was ignored and the call ended
    # `missing_name`, while the same `done` named an item whose `added` was lost. A name the
    # call has is kept (the second item's `done` names it otherwise).
    calls = [Call("get_weather", '{"city": "Paris"}'), Call("lookup", '{"q": [1]}')]
    events = responses_stream(calls, size=4, interleave=True)
    for event in events:
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            continue
        if event["type"] == "response.output_item.added" and item["id"] == "fc_0":
            event["item"] = {k: v for k, v in item.items() if k != "name" or blank is not None}
            if blank is not None:
                event["item"]["name"] = blank
        elif event["type"] == "response.output_item.done" and item["id"] == "fc_1":
            event["item"] = {**item, "name": "other"}
    expected = [("get_weather", '{"city": "Paris"}', None), ("lookup", '{"q": [1]}', None)]
    assert _calls_three_ways(sse_server, events) == expected
    # The control: its `added` lost.
    lost = [
        e
        for e in events
        if not (e["type"] == "response.output_item.added" and e["item"]["id"] == "fc_0")
    ]
    assert sorted(_calls_three_ways(sse_server, lost)) == expected
    # The schema check the name brings reads the text that came before it, on every path.
    tools = Toolset(
        [
            {"name": "get_weather", "parameters": {"properties": {"city": {"type": "integer"}}}},
            {"name": "lookup", "parameters": {"additionalProperties": True}},
        ]
    )
    _, stream = assemble_both(sse_server.register_events(events, FMT), FMT, tools=tools)
    assert [o.ok for o in stream.outcomes] == [False, True]


def test_an_event_type_of_the_wrong_json_type_is_skipped(sse_server: SSEServer) -> None:
    # A list as `type` reached a set lookup and raised TypeError out of `feed_chunk`.
    events = responses_stream([Call("ping", '{"a": 1}')])
    events.insert(1, {"type": ["response.output_text.delta"], "sequence_number": 99})
    asm = Assembler()
    for event in events:
        asm.feed_chunk(event)
    assert [(c.name, c.value) for c in asm.finish()] == [("ping", {"a": 1})]


def test_a_summary_spaced_otherwise_is_the_same_call(sse_server: SSEServer) -> None:
    # A server that re-serializes the final arguments (`{"a":1,"b":[2]}` after deltas that
    # spelled `{"a": 1, "b": [2]}`): appended, it made the call `concatenated_values`.
    events = responses_stream([Call("ping", '{"a": 1, "b": [2, "x y"]}')], size=5)
    for event in events:
        if event["type"] == "response.function_call_arguments.done":
            event["arguments"] = '{"a":1,"b":[2,"x y"]}'
        item = event.get("item")
        if event["type"] == "response.output_item.done" and isinstance(item, dict):
            item["arguments"] = '{"a":1,\n"b":[2,"x y"]}'
    assert _calls_three_ways(sse_server, events) == [("ping", '{"a": 1, "b": [2, "x y"]}', None)]
    raw = Assembler()
    raw.feed_sse(sse_body(events, FMT))
    raw.finish()
    assert raw.stream_errors() == []


def test_a_call_sent_only_as_a_summary_reports_no_mismatch() -> None:
    events = [
        e
        for e in responses_stream([Call("ping", '{"a": 1}')])
        if e["type"] != "response.function_call_arguments.delta"
    ]
    raw = Assembler()
    raw.feed_sse(sse_body(events, FMT))
    assert [(c.name, c.value) for c in raw.finish()] == [("ping", {"a": 1})]
    assert raw.stream_errors() == []


def test_an_event_sent_twice_is_read_once(sse_server: SSEServer) -> None:
    # Fault 5: a proxy repeats an argument delta; its `sequence_number` says it is one read.
    events = responses_stream([Call("ping", '{"a": 1, "b": 2}')], size=3)
    at = next(
        i for i, e in enumerate(events) if e["type"] == "response.function_call_arguments.delta"
    )
    again = [*events[: at + 2], events[at + 1], events[at], *events[at + 2 :]]
    assert _calls_three_ways(sse_server, again) == [("ping", '{"a": 1, "b": 2}', None)]


def test_numbers_that_do_not_rise_are_not_read(sse_server: SSEServer) -> None:
    # A bridge that numbers every event 0: its events are all different, none is a repeat.
    events = [{**e, "sequence_number": 0} for e in responses_stream([Call("ping", '{"a": 1}')])]
    assert _calls_three_ways(sse_server, events) == [("ping", '{"a": 1}', None)]
    # Numbers that fall back once make the rest of them unread: a delta equal to one before it
    # still counts.
    events = responses_stream([Call("ping", '{"a": 11}')], size=1)
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    deltas[0]["sequence_number"] = 0
    ones = [i for i, d in enumerate(deltas) if d["delta"] == "1"]
    assert len(ones) == 2 and ones[1] == ones[0] + 1
    deltas[ones[1]]["sequence_number"] = deltas[ones[0]]["sequence_number"]
    assert _calls_three_ways(sse_server, events) == [("ping", '{"a": 11}', None)]


def test_a_response_sent_again_from_its_start_gives_its_call_once(sse_server: SSEServer) -> None:
    events = responses_stream([Call("ping", '{"a": 1}')], size=2)
    end = next(i for i, e in enumerate(events) if e["type"] == "response.completed")
    shown = _calls_three_ways(sse_server, events[:end] + events)
    assert shown == [("ping", '{"a": 1}', None)]


def test_items_at_a_position_past_any_list_stay_apart(sse_server: SSEServer) -> None:
    # An `output_index` near 2**63 was numbered on (`+ 1`) into the next item's key on the raw
    # path (two calls merged into one named "fg") and past the 64-bit range on `feed_chunk`
    # (MisuseError): it is read as missing on every path.
    far = 2**63 - 1

    def item(event: str, name: str, arguments: str) -> dict[str, Any]:
        fields = {"id": f"fc_{name}", "call_id": f"c_{name}", "name": name}
        item = {"type": "function_call", **fields, "arguments": arguments}
        return {"type": f"response.output_item.{event}", "output_index": far, "item": item}

    events = [item("added", "f", ""), item("added", "g", ""), item("done", "g", "{}")]
    events += [item("done", "f", "{}")]
    events += [{"type": "response.completed", "response": {"id": "r", "status": "completed"}}]
    assert _calls_three_ways(sse_server, events) == [("f", "{}", None), ("g", "{}", None)]
