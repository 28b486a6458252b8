"""Stream-path defects found by comparing the SDK path with `feed_sse`, each pinned here on both
ways in: the real SDK client over HTTP through `assemble`, and `feed_sse` on the same bytes cut
every way a gateway may see them (`assemble_both`)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import (
    Call,
    anthropic_stream,
    chat_stream,
    json_text,
    responses_stream,
    sse_body,
    well_formed_stream,
)

RESPONSES = "openai-responses"


def _shown(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.index, c.id, c.name, c.value, c.error.kind if c.error else None) for c in calls]


@pytest.mark.parametrize("output_index", ["same", "swapped"])
def test_responses_items_are_found_by_item_id_not_output_index(
    sse_server: SSEServer, split: str, output_index: str
) -> None:
    # Interleaved function calls that a compatible server sends under one `output_index` (or
    # under each other's): keyed by `output_index`, the arguments of both calls were mixed
    # into one. Every event names its item by `item_id` (`output_item.done` in its item).
    calls = [Call("f", '{"a": "one one one"}'), Call("g", '{"b": "two two two"}')]
    events = responses_stream(calls, interleave=True, size=4)
    for event in events:
        if "output_index" in event and event["type"] != "response.output_item.added":
            item = event.get("item_id") or event["item"]["id"]
            if output_index == "swapped":
                event["output_index"] = {"fc_0": 1, "fc_1": 0}[item]
        if "output_index" in event and output_index == "same":
            event["output_index"] = 0
    route = sse_server.register(sse_body(events, RESPONSES), split=split)
    _, stream = assemble_both(route, RESPONSES)
    # The index a call reports is the `output_index` its item was announced with.
    want = [
        (0, "call_0", "f", {"a": "one one one"}, None),
        (0 if output_index == "same" else 1, "call_1", "g", {"b": "two two two"}, None),
    ]
    assert _shown(stream.calls) == want
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    assert _shown(dicts.finish()) == want


def test_responses_cancelled_reads_the_same_on_both_paths(
    sse_server: SSEServer, split: str
) -> None:
    # `response.cancelled` (no event class in the openai SDK) was read only by `feed_sse`: the
    # SDK path had no finish reason or usage, and the call the server never finished (no
    # `output_item.done`, its arguments complete) would run on either path.
    calls = [Call("f", '{"a": 1}'), Call("g", '{"b": 2}')]
    events = responses_stream(calls)
    final = events[-1]
    final["type"] = "response.cancelled"
    final["response"]["status"] = "cancelled"
    done = [i for i, e in enumerate(events) if e["type"] == "response.output_item.done"]
    del events[done[-1]]
    route = sse_server.register(sse_body(events, RESPONSES), split=split)
    _, stream = assemble_both(route, RESPONSES)
    assert stream.finish_reason == "cancelled"
    assert stream.usage is not None and stream.usage["total_tokens"] == 33
    assert [(c.value, c.error.kind if c.error else None) for c in stream.calls] == [
        ({"a": 1}, None),
        ({"b": 2}, "filtered"),
    ]


@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic"])
def test_an_ended_parameterless_call_stays_runnable_when_the_response_is_stopped(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # A content filter or refusal after the provider had ended its calls stops only the calls
    # still open. An ended call with no argument text (a tool without parameters, quirk 25)
    # was stopped as if it were open, while the same call ended with `{}` stayed runnable.
    calls = [Call("ping", ""), Call("f", "{}"), Call("g", '{"a": 1}')]
    if fmt == "anthropic":
        events = anthropic_stream(calls, stop_reason="refusal", empty_first_delta=False)
    else:
        events = responses_stream(calls, status="incomplete", incomplete_reason="content_filter")
        events = [e for e in events if e.get("delta") != ""]
    route = sse_server.register(sse_body(events, fmt), split=split)
    _, stream = assemble_both(route, fmt)
    assert [(c.name, c.arguments, c.error) for c in stream.calls] == [
        ("ping", "{}", None),
        ("f", "{}", None),
        ("g", '{"a": 1}', None),
    ]


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_a_call_cut_by_the_output_limit_before_its_arguments_does_not_run(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # The output limit cut the last call after its header, before any argument text: it came
    # back runnable as a call without parameters (`{}`, quirk 25), on both paths, although
    # the model never began its arguments (quirk 36). An empty call that another call followed
    # is a call without parameters, and stays runnable.
    calls = [Call("ping", ""), Call("f", '{"a": 1}'), Call("g", '{"b": 2}')]
    if fmt == "openai-chat":
        events = chat_stream(calls, finish_reason="length")
        events = [e for e in events if not _fragment_of(e, 2)]
    elif fmt == "anthropic":
        events = anthropic_stream(calls, stop_reason="max_tokens")
        events = [e for e in events if e.get("index") != 2 or e["type"] == "content_block_start"]
    else:
        events = responses_stream(calls, status="incomplete", incomplete_reason="max_output_tokens")
        events = [e for e in events if e.get("item_id") != "fc_2" and not _done(e, "fc_2")]
    route = sse_server.register(sse_body(events, fmt), split=split)
    _, stream = assemble_both(route, fmt)
    assert [(c.name, c.arguments, c.error.kind if c.error else None) for c in stream.calls] == [
        ("ping", "{}", None),
        ("f", '{"a": 1}', None),
        ("g", "", "truncated"),
    ]


def _fragment_of(event: dict[str, Any], index: int) -> bool:
    """Whether a Chat chunk carries an argument fragment (no header) of the call at `index`."""
    deltas = [c.get("delta", {}) for c in event.get("choices", [])]
    entries = [t for d in deltas for t in d.get("tool_calls", [])]
    return any(t.get("index") == index and "id" not in t for t in entries)


def _done(event: dict[str, Any], item_id: str) -> bool:
    return event["type"] == "response.output_item.done" and event["item"]["id"] == item_id


@pytest.mark.parametrize(
    "reason",
    # Bedrock's (from a translator that passes them on): the same on the raw path and feed_chunk.
    [
        "content_filter",
        "CONTENT_FILTER",
        "safety",
        "Refusal",
        "guardrail_intervened",
        "Content_Filtered",
    ],
)
@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic"])
def test_every_path_reads_the_same_stopping_reasons(
    sse_server: SSEServer, split: str, fmt: str, reason: str
) -> None:
    # The raw path stops the open calls on every reason that normalizes to a content filter or
    # a refusal, in any ASCII case; `feed_chunk` stopped Responses calls on `content_filter`
    # alone and Anthropic calls on `refusal` alone, so a call the provider had not ended ran
    # on the SDK path only (with complete arguments) or came back `truncated` instead.
    calls = [Call("f", '{"a": 1}'), Call("g", '{"b": 2}')]
    if fmt == "anthropic":
        events = anthropic_stream(calls, stop_reason=reason)
        ends = [i for i, e in enumerate(events) if e["type"] == "content_block_stop"]
    else:
        events = responses_stream(calls, status="incomplete", incomplete_reason=reason)
        ends = [i for i, e in enumerate(events) if e["type"] == "response.output_item.done"]
    del events[ends[-1]]
    route = sse_server.register(sse_body(events, fmt), split=split)
    _, stream = assemble_both(route, fmt)
    assert [(c.name, c.error.kind if c.error else None) for c in stream.calls] == [
        ("f", None),
        ("g", "filtered"),
    ]


@pytest.mark.parametrize("marker", ["[DONE]x", "[DONE] ", "[DONE]{}"])
def test_data_that_starts_with_done_ends_the_stream_on_both_paths(
    sse_server: SSEServer, split: str, marker: str
) -> None:
    # The openai SDK stops at any data that starts with `[DONE]`; `feed_sse` ended only at
    # `[DONE]` itself, reported `[DONE]x` as malformed and read on, so a call sent after it
    # came back runnable from the raw path alone.
    first = chat_stream([Call("lookup", '{"a": 1}')])
    later = chat_stream([Call("delete_account", '{"really": true}')])
    body = sse_body(first, "openai-chat").replace(b"data: [DONE]", f"data: {marker}".encode())
    body += sse_body(later, "openai-chat")
    route = sse_server.register(body, split=split)
    _, stream = assemble_both(route, "openai-chat")
    assert [(c.name, c.value, c.ok) for c in stream.calls] == [("lookup", {"a": 1}, True)]
    raw = Assembler()
    raw.feed_sse(body)
    assert [c.name for c in raw.finish()] == ["lookup"]
    assert {kind for kind, _, _ in raw.stream_errors()} == {"after_done"}


@pytest.mark.parametrize("error", [{"message": "boom"}, "boom", [1]])
def test_a_responses_event_with_an_error_member_is_a_provider_error_on_every_path(
    sse_server: SSEServer, split: str, error: Any
) -> None:
    # The openai SDK raises any event whose data has an `error` member that reads as true,
    # whatever its type; `feed_sse` and `feed_chunk` read the event by its type and ran on,
    # and the call it left open came back runnable from those paths alone.
    calls = [Call("f", '{"a": 1}'), Call("g", '{"b": 2}')]
    events = responses_stream(calls)
    second = next(
        i
        for i, e in enumerate(events)
        if e["type"] == "response.output_item.done" and e["item"]["name"] == "g"
    )
    # The server sends nothing after it: what follows an error the SDK raises is the raw
    # path's alone (see the README), and is not what this compares.
    events = [*events[: second - 1], {**events[second - 1], "error": error}]
    route = sse_server.register(sse_body(events, RESPONSES), split=split)
    _, stream = assemble_both(route, RESPONSES)
    assert stream.finish_reason == "error"
    shown = [(c.name, c.error.kind if c.error else None) for c in stream.calls]
    assert shown == [("f", None), ("g", "filtered")]
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    assert [(c.name, c.error.kind if c.error else None) for c in dicts.finish()] == shown


def test_a_responses_event_with_a_false_error_member_is_read_as_usual(
    sse_server: SSEServer, split: str
) -> None:
    events = responses_stream([Call("f", '{"a": 1}')])
    events = [{**e, "error": None} if e["type"].startswith("response.") else e for e in events]
    route = sse_server.register(sse_body(events, RESPONSES), split=split)
    _, stream = assemble_both(route, RESPONSES)
    assert [(c.name, c.value, c.ok) for c in stream.calls] == [("f", {"a": 1}, True)]


def _named(events: list[dict[str, Any]], names: dict[int, str], *, empty: int = -1) -> bytes:
    """An SSE body of `events`, each under its type as event name but those of `names`
    (position -> name); the event at `empty` is sent with empty data."""
    out = []
    for i, event in enumerate(events):
        data = "" if i == empty else json_text(event)
        out.append(f"event: {names.get(i, event['type'])}\ndata: {data}\n\n")
    return "".join(out).encode()


def _second_call_delta(events: list[dict[str, Any]]) -> int:
    return [i for i, e in enumerate(events) if e["type"] == "content_block_delta"][-1]


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("error", 3),
        ("ping", 3),
        ("content_block_delta", 5),
        ("response.output_text.delta", 5),
        ("ping", -1),
        ("message_start", -1),
    ],
)
def test_a_chat_chunk_under_an_event_name_is_read_as_a_chunk(
    sse_server: SSEServer, split: str, name: str, count: int
) -> None:
    # The openai SDK reads the data alone (an `error` member makes an error); `feed_sse` took
    # the event name for the data's type: `error` stopped every call there, and another
    # format's name dropped the chunk (a `transfer` of 1000 ran as 1), or, on every chunk,
    # every call.
    events = chat_stream([Call("f", '{"a": 1000}'), Call("g", '{"b": 2}')], size=3)
    named = f"event: {name}\ndata: ".encode()
    body = sse_body(events, "openai-chat").replace(b"data: ", named, count)
    route = sse_server.register(body, split=split)
    _, stream = assemble_both(route, "openai-chat")
    assert [(c.name, c.value, c.ok) for c in stream.calls] == [
        ("f", {"a": 1000}, True),
        ("g", {"b": 2}, True),
    ]


@pytest.mark.parametrize("empty", [False, True])
def test_an_anthropic_event_named_error_stops_the_calls_whatever_its_data(
    sse_server: SSEServer, split: str, empty: bool
) -> None:
    # The anthropic SDK raises every `event: error` before it reads the data; `feed_sse` read
    # a delta sent under that name as a delta (and an empty one as nothing), and the call
    # came back runnable from the raw path alone.
    events = anthropic_stream([Call("f", '{"a": 1}'), Call("g", '{"b": 2}')], size=64)
    at = _second_call_delta(events)
    body = _named(events[: at + 1], {at: "error"}, empty=at if empty else -1)
    route = sse_server.register(body, split=split)
    _, stream = assemble_both(route, "anthropic")
    assert stream.finish_reason == "error"
    assert [(c.name, c.error.kind if c.error else None) for c in stream.calls] == [
        ("f", None),
        ("g", "filtered"),
    ]


def test_an_anthropic_event_named_ping_is_skipped_whatever_its_data(
    sse_server: SSEServer, split: str
) -> None:
    # The anthropic SDK skips every `event: ping`; `feed_sse` read a delta sent under that
    # name, and the call had arguments on the raw path only.
    events = anthropic_stream([Call("f", '{"a": 1}')], size=64)
    at = _second_call_delta(events)
    route = sse_server.register(_named(events, {at: "ping"}), split=split)
    _, stream = assemble_both(route, "anthropic")
    # The call's only delta was skipped: its block started with no input, so it has none.
    assert [(c.name, c.arguments) for c in stream.calls] == [("f", "{}")]


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses"])
@pytest.mark.parametrize("written", [1.0, True, "1"])
def test_a_position_written_as_another_json_type_is_read_as_the_sdk_reads_it(
    sse_server: SSEServer, split: str, fmt: str, written: object
) -> None:
    # A gateway that keeps JSON numbers as doubles writes a block `index` (or `output_index`)
    # as `1.0`. The SDKs read it as 1 (pydantic's lax integer); the raw path and `feed_chunk`
    # on dicts found the event unreadable, and the second call vanished from their results.
    events = well_formed_stream(fmt, [Call("f", '{"a": 1}'), Call("g", '{"b": 2}')], size=4)
    position = "index" if fmt == "anthropic" else "output_index"
    for event in events:
        if event.get(position) == 1:
            event[position] = written
    body = sse_body(events, fmt)
    assert f'"{position}":{json_text(written)}'.encode() in body
    _, stream = assemble_both(sse_server.register(body, split=split), fmt)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    for calls in (stream.calls, dicts.finish()):
        assert [(c.name, c.value, c.ok) for c in calls] == [
            ("f", {"a": 1}, True),
            ("g", {"b": 2}, True),
        ]
    assert dicts.stream_errors() == []
