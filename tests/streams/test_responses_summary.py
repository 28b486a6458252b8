"""Responses streams whose text or items repeat: the SDK and raw SSE paths must agree.

Each stream is served to the real `openai` client over HTTP and read with `assemble`;
`assemble_both` then feeds the identical body to `feed_sse`, cut every way a gateway may see it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import tool_messages
from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import Call, responses_stream

FMT = "openai-responses"


def _body(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_summary_of_a_call_that_repeated_a_whole_value(sse_server: SSEServer, split: str) -> None:
    # The model wrote the same object twice in one call (quirk 21); the second delta equals the
    # whole first one, so it reads as a consolidated repeat (quirk 20) and is dropped. The
    # summary says both were sent: the call must not come back as one executable object. The
    # raw path compared the summary with the deltas only (equal) and returned `{"a":1}` as
    # valid, while `feed_chunk`, which compares with what the call holds, flagged it.
    events = responses_stream([Call("f", '{"a":1}{"a":1}')], size=7)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert not call.ok and call.error is not None
    assert call.error.kind == "concatenated_values"


def test_stream_replayed_from_the_start_gives_each_call_once(
    sse_server: SSEServer, split: str
) -> None:
    # A reconnect replays the stream from its start: each `output_item.added` comes again at
    # an `output_index` whose call has ended. `feed_chunk` once ignored such an item (the
    # replayed calls lost their name and id); then each call came back twice, the second under
    # a renamed id, so a tool ran twice. The replay is the same call sent again.
    calls = [Call("get_weather", '{"city": "Oslo"}'), Call("lookup", '{"q": [1, 2]}')]
    events = responses_stream(calls, size=4, interleave=True)
    _, s = assemble_both(sse_server.register(_body(events[:-1] + events), split=split), FMT)
    assert [(c.name, c.arguments, c.error) for c in s.calls] == [
        (c.name, c.arguments, None) for c in calls
    ]
    assert [c.id for c in s.calls] == ["call_0", "call_1"]
    assert all("replay_dropped" in c.warnings for c in s.calls)


def test_an_item_without_call_id_is_answered_under_its_item_id(
    sse_server: SSEServer, split: str
) -> None:
    # Some bridges send function_call items with an `id` and no `call_id`. The raw path used
    # the item id as the call id while the SDK path gave None (answered as `toolwire_0`).
    events = responses_stream([Call("f", '{"a": 1}'), Call("g", "{}")], size=3)
    for event in events:
        item = event.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            item.pop("call_id", None)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    assert [(c.name, c.error) for c in s.calls] == [("f", None), ("g", None)]
    ids = [c.id for c in s.calls]
    assert all(ids) and len(set(ids)) == 2
    assert [m["tool_call_id"] for m in tool_messages(s.calls, [{}, {}])] == ids


def test_a_delta_before_its_item_and_a_lost_one_read_alike_on_both_paths(
    sse_server: SSEServer, split: str
) -> None:
    # A delta arrived before its `output_item.added`, and a later one was lost. The item
    # announced after the delta still counted as unannounced on the SDK path, so both
    # summaries were fed there and once on the raw path: the same stream gave two texts.
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    item |= {"arguments": "", "status": "in_progress"}

    def delta(text: str) -> dict[str, Any]:
        return {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": text,
        }

    done = {**item, "arguments": '{"a":12}', "status": "completed"}
    events = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        delta('{"a":'),
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        delta("2}"),
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_1",
            "output_index": 0,
            "arguments": '{"a":12}',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert not call.ok and call.error is not None


def _one_item(
    added: str, deltas: list[str], done: str | None, final: str, *, item_id: bool = True
) -> list[dict[str, Any]]:
    """One function call item: `added` carrying `added`, its deltas, a `.done` summary (unless
    None) and an `output_item.done` whose item carries `final`. Without `item_id`, the
    argument events name the item by its `output_index` alone."""
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    named: dict[str, Any] = {"item_id": "fc_1"} if item_id else {}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": added, "status": "in_progress"},
        },
    ]
    events += [
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": d} | named
        for d in deltas
    ]
    if done is not None:
        events.append(
            {"type": "response.function_call_arguments.done", "output_index": 0, "arguments": done}
            | named
        )
    events.append(
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": final, "status": "completed"},
        }
    )
    events.append({"type": "response.completed", "response": {"id": "r", "status": "completed"}})
    return events


@pytest.mark.parametrize("item_id", [True, False])
@pytest.mark.parametrize(
    ("deltas", "done", "final"),
    [
        ([], "{}", '{"n": 1}'),
        ([], '{"a":1}', '{"a":1,"b":2}'),
        (['{"a":', "1}"], '{"a":1}', '{"a":1,"b":2}'),
    ],
)
def test_a_final_item_that_contradicts_the_done_summary_is_never_run(
    sse_server: SSEServer, split: str, deltas: list[str], done: str, final: str, item_id: bool
) -> None:
    # The `.done` summary and the finished item disagree. The raw path read only the first
    # summary and ran it silently (the final item ignored); `feed_chunk` fed the second when
    # no delta came, and ignored it after deltas. Every summary is compared with what the
    # call holds on both paths: one that contradicts it is fed, and the call does not run.
    events = _one_item("", deltas, done, final, item_id=item_id)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert not call.ok and call.error is not None


@pytest.mark.parametrize("final", ['{"a":1}', '{"a": 1}'])
def test_a_final_item_that_repeats_the_done_summary_runs(
    sse_server: SSEServer, split: str, final: str
) -> None:
    # The same tokens said twice (spaced otherwise too) confirm the call: it runs once.
    events = _one_item("", [], '{"a":1}', final)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert (call.ok, call.arguments) == (True, '{"a":1}')


@pytest.mark.parametrize("done", [None, '{"a":1}'])
def test_a_summary_after_its_item_ended_makes_no_second_call(
    sse_server: SSEServer, split: str, done: str | None
) -> None:
    # Events out of order: a `.done` summary comes after the item's `output_item.done`. The
    # call has ended; on the SDK path the summary was fed to a call of its own (nameless, so
    # `missing_name`), while the raw path returned one call. It is one call on both.
    events = _one_item("", [], done, "")
    late = {
        "type": "response.function_call_arguments.done",
        "item_id": "fc_1",
        "output_index": 0,
        "arguments": '{"a":2}',
    }
    events.insert(-1, late)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    (call,) = s.calls
    assert call.name == "f"


@pytest.mark.parametrize("item_id", ["fc_1", None])
def test_a_done_summary_of_an_item_never_seen_is_a_call(
    sse_server: SSEServer, split: str, item_id: str | None
) -> None:
    # The item's `added`, deltas and `output_item.done` were lost: its `.done` summary is all
    # that came of it. It made no call and no error on either path, where a lone delta makes a
    # call that reports its missing name.
    done: dict[str, Any] = {
        "type": "response.function_call_arguments.done",
        "output_index": 0,
        "arguments": '{"path": "/"}',
    }
    if item_id is not None:
        done["item_id"] = item_id
    events = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}},
        done,
        {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
    ]
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    for calls in (s.calls, dicts.finish()):
        assert [(c.arguments, c.error.kind if c.error else None) for c in calls] == [
            ('{"path": "/"}', "missing_name")
        ]


def test_items_under_one_output_index_without_added_report_that_index(
    sse_server: SSEServer, split: str
) -> None:
    # Two items sent under one `output_index`, both `output_item.added` lost: the second is
    # keyed apart from the first. The raw path reported `output_index` 0 for both (as the README
    # promises); the SDK path reported the second's internal key, 1.
    def item(i: int, arguments: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": "f",
            "arguments": arguments,
            "status": "completed",
        }

    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
    ]
    for i, text in ((1, '{"a":1}'), (2, '{"b":2}')):
        events += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_{i}",
                "output_index": 0,
                "delta": text,
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item(i, text)},
        ]
    events.append({"type": "response.completed", "response": {"id": "r", "status": "completed"}})
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    assert [(c.index, c.id, c.arguments, c.error) for c in s.calls] == [
        (0, "call_1", '{"a":1}', None),
        (0, "call_2", '{"b":2}', None),
    ]


def _rendition(
    item_id: str, output_index: int, arguments: str, *, deltas: bool, added: str = ""
) -> list[dict[str, Any]]:
    """One rendition of the call `call_1` to `f` as the item `item_id`: its `added` carrying
    `added`, its deltas (or none: a bridge that sends only the summaries), its `.done` and its
    `output_item.done`, both carrying `arguments`."""
    item = {"type": "function_call", "id": item_id, "call_id": "call_1", "name": "f"}
    at: dict[str, Any] = {"item_id": item_id, "output_index": output_index}
    events: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": {**item, "arguments": added, "status": "in_progress"},
        }
    ]
    if deltas:
        events += [
            {"type": "response.function_call_arguments.delta", "delta": piece} | at
            for piece in (arguments[:5], arguments[5:])
        ]
    events.append({"type": "response.function_call_arguments.done", "arguments": arguments} | at)
    events.append(
        {
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": {**item, "arguments": arguments, "status": "completed"},
        }
    )
    return events


def _dicts_and_bytes(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The calls `feed_chunk` makes of `events` as dicts, checked equal (warnings and stream
    errors too) to what `feed_sse` makes of them as one SSE body."""
    made: list[list[tuple[Any, ...]]] = []
    errors: list[list[str]] = []
    for raw in (False, True):
        assembler = Assembler()
        if raw:
            assembler.feed_sse(_body(events))
        else:
            for event in events:
                assembler.feed_chunk(event)
        calls = assembler.finish()
        made.append([(c.ordinal, c.id, c.name, c.arguments, c.error, c.warnings) for c in calls])
        errors.append([kind for kind, _, _ in assembler.stream_errors()])
    assert made[1] == made[0]
    assert errors[1] == errors[0]
    return made[0]


_FIRST = '{"city": "Oslo"}'
# The text sent again: the same bytes, the same tokens spaced otherwise, another value.
_AGAIN = {
    "same": _FIRST,
    "respaced": '{"city":"Oslo"}',
    "other": '{"city": "Rome"}',
}


def _expected(again: str) -> list[tuple[Any, ...]]:
    """As the README has it: a rendition whose text is the call's, byte for byte, is dropped
    (`replay_dropped`); one whose text differs in any byte is a call of its own under a
    renamed id (`duplicate_id`)."""
    if again == _FIRST:
        return [(0, "call_1", "f", _FIRST, None, ["replay_dropped"])]
    return [
        (0, "call_1", "f", _FIRST, None, []),
        (1, "call_1_1", "f", again, None, ["duplicate_id"]),
    ]


def _response(*renditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    created = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
    completed = {"type": "response.completed", "response": {"id": "r", "status": "completed"}}
    return [created, *(e for r in renditions for e in r), completed]


@pytest.mark.parametrize("first_deltas", [True, False])
@pytest.mark.parametrize("again", _AGAIN)
@pytest.mark.parametrize(
    ("item_id", "output_index"), [("fc_1", 0), ("fc_2", 1)], ids=["same-item", "other-item"]
)
def test_a_call_sent_again_with_only_its_summaries_reads_alike_on_both_paths(
    sse_server: SSEServer,
    split: str,
    first_deltas: bool,
    again: str,
    item_id: str,
    output_index: int,
) -> None:
    # After its `output_item.done`, the call comes again from a bridge that sends no deltas:
    # the same item, or another item under the same `call_id`. The SDK path fed the summary
    # as the rendition's text (dropped as a replay, or a call of its own); the raw path
    # compared it with the first rendition's text by its tokens, so a respaced one was
    # dropped without a word and even a byte-identical one left no `replay_dropped`.
    events = _response(
        _rendition("fc_1", 0, _FIRST, deltas=first_deltas),
        _rendition(item_id, output_index, _AGAIN[again], deltas=False),
    )
    assert _dicts_and_bytes(events) == _expected(_AGAIN[again])
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    got = [(c.ordinal, c.id, c.name, c.arguments, c.error, c.warnings) for c in s.calls]
    assert got == _expected(_AGAIN[again])


@pytest.mark.parametrize("again", _AGAIN)
@pytest.mark.parametrize("summary", [True, False], ids=["with-done", "item-done-only"])
def test_an_item_header_sent_again_with_arguments_reads_alike_on_both_paths(
    sse_server: SSEServer, split: str, again: str, summary: bool
) -> None:
    # The ended item's `output_item.added` comes again carrying the arguments, then its
    # `output_item.done` (after a `.done`, or alone): the text the header carries is that
    # rendition's, as when no summary follows it.
    text = _AGAIN[again]
    second = _rendition("fc_1", 0, text, deltas=False, added=text)
    if not summary:
        second = [e for e in second if e["type"] != "response.function_call_arguments.done"]
    events = _response(_rendition("fc_1", 0, _FIRST, deltas=True), second)
    assert _dicts_and_bytes(events) == _expected(text)
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    got = [(c.ordinal, c.id, c.name, c.arguments, c.error, c.warnings) for c in s.calls]
    assert got == _expected(text)


@pytest.mark.parametrize("summary", [_FIRST, '{"city":"Oslo"}'], ids=["same", "respaced"])
def test_deltas_before_their_item_are_its_own_text_on_both_paths(
    sse_server: SSEServer, split: str, summary: str
) -> None:
    # Every delta came before the item's `output_item.added`; its summaries then repeat the
    # text. The raw path compares them with the deltas, which are the item's own text. The
    # SDK path forgot them when the item was announced and fed the summary as new text,
    # which the core dropped as a repeat (`repeat_dropped`): one stream, two warnings.
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"}
    at = {"item_id": "fc_1", "output_index": 0}
    events = _response(
        [
            {"type": "response.function_call_arguments.delta", "delta": _FIRST[:5]} | at,
            {"type": "response.function_call_arguments.delta", "delta": _FIRST[5:]} | at,
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "arguments": "", "status": "in_progress"},
            },
            {"type": "response.function_call_arguments.done", "arguments": summary} | at,
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "arguments": summary, "status": "completed"},
            },
        ]
    )
    expected = [(0, "call_1", "f", _FIRST, None, [])]
    assert _dicts_and_bytes(events) == expected
    _, s = assemble_both(sse_server.register(_body(events), split=split), FMT)
    got = [(c.ordinal, c.id, c.name, c.arguments, c.error, c.warnings) for c in s.calls]
    assert got == expected
