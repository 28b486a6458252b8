"""A stream replayed after a reconnect (fault 5): each call comes back once, its text once.

A provider or proxy that reconnects may send the response again from its start, either after
the first rendition ended or while a call was still streaming. The replay repeats each call's
header (its key, id and name) before its fragments; the calls must not come back twice (a tool
would run twice, under a renamed id) nor with their text doubled. Every stream is served to the
real SDK client over HTTP and read with `assemble`; `assemble_both` then feeds the identical body
to `feed_sse`, cut every way a gateway may see it, and requires the same result.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import (
    Call,
    Event,
    anthropic_stream,
    before_the_end,
    chat_chunk,
    chat_stream,
    responses_stream,
    sse_body,
    tc,
    tool_delta,
)

FORMATS = ("openai-chat", "openai-responses", "anthropic")
CALLS = [
    Call("get_weather", '{"city": "Z\\u00fcrich \\"old town\\"", "days": [1, 2]}'),
    Call("lookup", '{"q": "\u6771\u4eac \U0001f600", "n": 3}'),
]


def _stream(fmt: str, calls: list[Call], **options: Any) -> list[Event]:
    if fmt == "anthropic":
        return anthropic_stream(calls, **options)
    if fmt == "openai-responses":
        return responses_stream(calls, **options)
    return chat_stream(calls, **options)


def _until_fragment(events: list[Event], fmt: str, nth: int) -> list[Event]:
    """The events of `events` before the end, up to and including its `nth` argument fragment
    (a connection that dropped in the middle of a call)."""
    kept: list[Event] = []
    seen = 0
    for event in before_the_end(events, fmt):
        kept.append(event)
        seen += _is_fragment(event)
        if seen == nth:
            break
    return kept


def _is_fragment(event: Event) -> bool:
    if event.get("type") == "response.function_call_arguments.delta":
        return bool(event["delta"])
    delta = event.get("delta")
    if event.get("type") == "content_block_delta" and isinstance(delta, dict):
        return bool(delta.get("partial_json"))
    for choice in event.get("choices", []):
        for entry in choice.get("delta", {}).get("tool_calls", []):
            if entry.get("function", {}).get("arguments"):
                return True
    return False


@pytest.mark.parametrize("fmt", FORMATS)
def test_stream_replayed_after_it_ended_gives_each_call_once(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    events = _stream(fmt, CALLS, size=5)
    first = events if fmt != "openai-chat" else events[:-1]
    route = sse_server.register(sse_body(first + events, fmt), split=split)
    _, s = assemble_both(route, fmt)
    assert [(c.name, c.arguments, c.error) for c in s.calls] == [
        (c.name, c.arguments, None) for c in CALLS
    ]
    assert len({c.id for c in s.calls}) == 2
    assert all("replay_dropped" in c.warnings for c in s.calls)
    assert all("duplicate_id" not in c.warnings for c in s.calls)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("nth", [1, 4, 9])
def test_stream_replayed_from_the_middle_of_a_call(
    sse_server: SSEServer, split: str, fmt: str, nth: int
) -> None:
    # The connection dropped after the `nth` fragment (in the first or the second call); the
    # replay resends what came, then goes on, cut other than the first rendition. Responses
    # and Anthropic start each call with an event of its own, which says the call is sent
    # again. A Chat header repeated inside an open call does not say it (providers repeat it
    # in every chunk, and text that follows may start the way the call's does): that call's
    # text comes twice and it does not run; a call whole before the cut still runs once.
    events = _stream(fmt, CALLS, size=5)
    replay = _stream(fmt, CALLS, size=3)
    body = sse_body(_until_fragment(events, fmt, nth) + replay, fmt)
    _, s = assemble_both(sse_server.register(body, split=split), fmt)
    assert len(s.calls) == len(CALLS)
    got = [(c.name, c.arguments, c.error) for c in s.calls]
    expected = [(c.name, c.arguments, None) for c in CALLS]
    if fmt != "openai-chat":
        assert got == expected
        return
    for call, want in zip(s.calls, CALLS, strict=True):
        assert call.arguments == want.arguments or not call.ok
    assert not all(c.ok for c in s.calls)


@pytest.mark.parametrize("fmt", FORMATS)
def test_replay_with_other_arguments_is_another_call_never_appended(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # The stream sent again is not the same (the server generated it anew): the call sent
    # first keeps its own arguments, and the other text is a call of its own under a renamed
    # id, as any two calls under one id are (quirk 16); nothing is spliced into the first.
    first = [Call("get_weather", '{"city": "Oslo", "days": [1]}')]
    again = [Call("get_weather", '{"city": "Oslo", "days": [2]}')]
    events = _stream(fmt, first, size=4)
    if fmt == "openai-chat":
        events = events[:-1]
    route = sse_server.register(sse_body(events + _stream(fmt, again, size=4), fmt), split=split)
    _, s = assemble_both(route, fmt)
    assert [(c.arguments, c.error) for c in s.calls] == [
        (first[0].arguments, None),
        (again[0].arguments, None),
    ]
    assert s.calls[1].id != s.calls[0].id
    assert "duplicate_id" in s.calls[1].warnings
    assert "replay_dropped" not in s.calls[0].warnings


def test_white_space_after_a_call_with_its_header_in_every_chunk_is_no_call(
    sse_server: SSEServer, split: str
) -> None:
    # Quirks 8 and 12 (id and name in every chunk) with text that starts with white space and
    # white space after the value: that looked like the call sent again, then like another
    # call, a runnable `{}` under a renamed id that the model never made.
    pieces = ["\n", '{"path": "/tmp/x"}', "\n", "\n", " "]
    events: list[Event] = [chat_chunk({"role": "assistant", "content": None})]
    events += [
        chat_chunk(tool_delta(tc(0, id="call_1", type="function", name="rm", arguments=p)))
        for p in pieces
    ]
    events.append(chat_chunk({}, finish_reason="tool_calls"))
    route = sse_server.register(sse_body(events, "openai-chat"), split=split)
    _, s = assemble_both(route, "openai-chat")
    assert [(c.id, c.value, c.error) for c in s.calls] == [("call_1", {"path": "/tmp/x"}, None)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_replayed_call_without_parameters_runs_once(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    calls = [Call("now", "{}"), Call("lookup", '{"q": "x"}')]
    events = _stream(fmt, calls, size=4)
    first = events if fmt != "openai-chat" else events[:-1]
    route = sse_server.register(sse_body(first + events, fmt), split=split)
    _, s = assemble_both(route, fmt)
    assert [(c.name, c.arguments, c.error) for c in s.calls] == [
        ("now", "{}", None),
        ("lookup", '{"q": "x"}', None),
    ]


@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic"])
@pytest.mark.parametrize("cut", [None, 3])
def test_replayed_response_keeps_its_text_once(
    sse_server: SSEServer, split: str, fmt: str, cut: int | None
) -> None:
    # A second `response.created` / `message_start` starts the replay; its text comes again,
    # after the first rendition ended or broke off after `cut` text events.
    text = 'Let me look that up: \u6771\u4eac \U0001f600, "quoted".\n'
    events = _stream(fmt, CALLS, text=text, size=5)
    first = events
    if cut is not None:
        texts = [i for i, e in enumerate(events) if _is_text(e)]
        first = events[: texts[cut]]
    route = sse_server.register(sse_body(first + events, fmt), split=split)
    _, s = assemble_both(route, fmt)
    assert s.text == text
    assert [(c.arguments, c.error) for c in s.calls] == [(c.arguments, None) for c in CALLS]


def _is_text(event: Event) -> bool:
    delta = event.get("delta")
    if event.get("type") == "response.output_text.delta":
        return True
    return isinstance(delta, dict) and delta.get("type") == "text_delta"


def test_replayed_anthropic_tool_without_parameters_runs_once(
    sse_server: SSEServer, split: str
) -> None:
    # As Anthropic streams a tool without parameters: `input: {}` and one empty fragment,
    # so the call is the whole value `{}`.
    calls = [Call("now", ""), Call("lookup", '{"q": 1}')]
    events = anthropic_stream(calls, size=4)
    route = sse_server.register(sse_body(events + events, "anthropic"), split=split)
    _, s = assemble_both(route, "anthropic")
    assert [(c.id, c.arguments, c.error) for c in s.calls] == [
        ("toolu_0", "{}", None),
        ("toolu_1", '{"q": 1}', None),
    ]


@pytest.mark.parametrize(
    ("ending", "kind"),
    [("max_tokens", "truncated"), ("error", "filtered"), ("tool_use", None)],
)
@pytest.mark.parametrize("replay", ["message", "block", "text first"])
def test_a_replay_does_not_settle_a_tool_block_left_without_input(
    sse_server: SSEServer, split: str, ending: str, kind: str | None, replay: str
) -> None:
    # A tool block that stopped with no input is a call without parameters only if the message
    # goes on. The replay's `message_start` (or the block's start again) was taken as the
    # message going on: the call ran as `{}` though the output limit or an error cut it.
    text = "Let me check." if replay == "text first" else ""
    events = anthropic_stream([Call("delete_all", "")], text=text, stop_reason=ending)
    last_stop = max(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    head, tail = events[: last_stop + 1], events[last_stop + 1 :]
    block_start = max(i for i, e in enumerate(head) if e["type"] == "content_block_start")
    again = head if replay != "block" else head[block_start:]
    if ending == "error":
        tail = [{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}]
    body = sse_body(head + again + tail, "anthropic")
    _, s = assemble_both(sse_server.register(body, split=split), "anthropic")
    dicts = Assembler()
    for event in head + again + tail:
        dicts.feed_chunk(event)
    for calls in (s.calls, dicts.finish()):
        assert [(c.name, c.error.kind if c.error else None) for c in calls] == [
            ("delete_all", kind)
        ]
    if kind is None:
        assert s.calls[0].value == {}


@pytest.mark.parametrize("fmt", ["openai-responses", "anthropic"])
def test_replay_from_a_cut_between_the_halves_of_a_surrogate_pair(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # A UTF-16 producer cut the first rendition between the halves of a pair (quirk 41); the
    # replay sends the pair whole. The half held from the first rendition is not its start.
    events = _stream(fmt, [Call("f", '{"e": "x\\ud83d\\ude00"}')], size=4)
    fragments = [i for i, e in enumerate(events) if _is_fragment(e)]
    first = events[: fragments[0]]
    for piece in ['{"e": "x', "\\ud83d"]:
        event = json.loads(json.dumps(events[fragments[0]]))
        if fmt == "anthropic":
            event["delta"]["partial_json"] = piece
        else:
            event["delta"] = piece
        first.append(event)
    route = sse_server.register(sse_body(first + events, fmt), split=split)
    _, s = assemble_both(route, fmt)
    assert [(c.arguments, c.error) for c in s.calls] == [('{"e": "x\\ud83d\\ude00"}', None)]
    assert s.calls[0].value == {"e": "x\U0001f600"}


# --- Responses items that lack some of their fields ----------------------------------------

_CREATED = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
_COMPLETED = {"type": "response.completed", "response": {"id": "r", "status": "completed"}}


def _delta(item_id: str, text: str, **fields: Any) -> Event:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": item_id,
        "delta": text,
        **fields,
    }


def _item(kind: str, output_index: int | None, arguments: str, **item: Any) -> Event:
    event: Event = {
        "type": f"response.output_item.{kind}",
        "item": {"type": "function_call", "arguments": arguments, **item},
    }
    if output_index is not None:
        event["output_index"] = output_index
    return event


def _both(events: list[Event]) -> list[tuple[Any, ...]]:
    """The calls `feed_sse` and `feed_chunk` make of `events`, which must be the same."""
    raw = Assembler()
    raw.feed_sse(sse_body(events, "openai-responses"))
    sdk = Assembler()
    for event in events:
        sdk.feed_chunk(event)
    out = []
    for calls in (raw.finish(), sdk.finish()):
        out.append([(c.id, c.name, c.arguments, c.error and c.error.kind) for c in calls])
    assert out[0] == out[1]
    return out[0]


def test_item_whose_added_was_lost_keeps_its_deltas_after_a_replay() -> None:
    # `fc_0` lost its `output_item.added` and its deltas have no `output_index`: it is found
    # by its `item_id`, on both paths, and never lends its text to the next item.
    g = {"id": "fc_1", "call_id": "c1", "name": "g"}
    first = [_CREATED, _delta("fc_0", "{"), _item("added", 1, "", **g), _delta("fc_0", "}")]
    rest = [
        _delta("fc_1", '{"t": 1}', output_index=1),
        _item("done", 1, '{"t": 1}', **g),
        _COMPLETED,
    ]
    assert _both(first + rest)[1] == ("c1", "g", '{"t": 1}', None)
    calls = _both(first + first + rest)
    assert [c for c in calls if c[1] == "g"] == [("c1", "g", '{"t": 1}', None)]


def test_replayed_items_without_output_index_or_id_are_found_by_call_id() -> None:
    # Such items are keyed by their place among the items, which the replay does not keep.
    call = {"call_id": "call_0", "name": "g"}
    rendition = [
        _CREATED,
        _item("added", None, "", **call),
        _delta("fc_0", '{"a": 1}'),
        _item("done", None, '{"a": 1}', **call),
    ]
    assert _both(rendition + rendition + [_COMPLETED]) == [("call_0", "g", '{"a": 1}', None)]
