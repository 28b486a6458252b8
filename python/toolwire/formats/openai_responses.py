"""OpenAI Responses API stream events to assembler calls.

Design notes:
- A call is found by its `item_id` when the event has one the stream announced, else by its
  `output_index`, else it is the last function call. Some compatible servers send one (or a
  wrong) `output_index` for interleaved items: keyed by `output_index` alone, their arguments
  would be mixed. A call is keyed in the core by its `output_index`, unless an item with another
  `item_id` already has that key; it is then keyed apart (by a number above every index seen)
  and still reports its `output_index` as `ToolCall.index`, as on the raw SSE path.
- The call's id is the item's `call_id` (what a `function_call_output` must quote); the item's own
  `id` (`fc_...`) is kept as metadata `item_id` for replaying the item in the next turn, and is
  the call's id when a bridge sends no `call_id`. A call of a tool declared inside a `namespace`
  tool keeps the item's `namespace` as metadata `namespace` (its `name` is the bare name), read
  from its `output_item.added`, its `output_item.done` and the finished response's `output`,
  whichever says it.
- `response.function_call_arguments.done` and the item in `response.output_item.done` repeat the
  whole arguments. They are summaries, not fragments: they are fed when no argument text arrived
  for that item before (bridges that send only the summary). Otherwise each summary is
  compared with the text the call holds (`Assembler.check_summary` in the core): one that only
  continues it (the last deltas were lost) completes it; one that says something else (a delta
  lost or repeated on the way, or a finished item that contradicts the `.done` before it)
  leaves the call `arguments_mismatch`, with the text its deltas made, never run. Either is
  told as `arguments_mismatch` in `stream_errors()`, as on the raw SSE path.
- Deltas for an item never announced (its `response.output_item.added` was lost) open a call
  without a name, as on the raw SSE path: its `response.output_item.done` names it, else it ends
  as `missing_name`. Nothing that arrived is dropped. So does an item announced without a name
  (blank or missing: quirks 10, 11); a name the call has is kept.
- `response.output_item.done` ends the call. `response.incomplete` with reason `content_filter`
  (or `safety` or `refusal`, in any ASCII case, as the raw path reads it), `response.failed`,
  `response.cancelled` and a stream `error` event stop the open calls.
- `function_call` and `custom_tool_call` items are tool calls for the caller; hosted tools
  (web search, code interpreter) run on the server, so they are not assembled. Every other
  item (`_is_hosted`: a hosted tool's call, `web_search_call`, `mcp_call`..., or one the
  application answers itself, `computer_call`, `local_shell_call`...) with an `id` (the API
  takes none back without it) is kept whole from its `output_item.done`, once per `id`, with
  the reasoning items (`Assembler.reasoning`), in
  output order: a stateless request must send it back, with the reasoning item before it.
  It is no call: it never runs, and needs no result from the assembler. A call is told how
  many came before it (metadata `hosted_before`), so that the next turn keeps their places.
  One no `output_item.done` brought is kept from the finished response's `output`, read for
  them only when it holds more items than `output_item.done` events came. In a stream joined
  part way (a background response resumed with `starting_after`), such an item goes before the
  kept items the stream brought that came after it there (`_keep_reasoning_item`'s
  `before`), and the calls are told anew how many hosted items came before them.
- A `custom_tool_call` (a custom tool: free-form input, maybe grammar-constrained) is a call
  of type `custom` whose text is its input as the model wrote it: the core never reads it as
  JSON nor pre-checks it, and ends it as a `free_form_call` error with the text kept, so it is
  answered (`custom_tool_call_output`) and never run as JSON arguments. The text is taken
  whole from `response.custom_tool_call_input.done` or the finished item, whichever comes
  first; the input deltas only open the call when its `output_item.added` was lost. A finished
  item that states another input than the `.done` event before it is the one kept (it is what
  the provider keeps as the call): the call gets the warning `input_mismatch`, and
  `stream_errors()` tells it as `arguments_mismatch`. As on the raw SSE path.
- The arguments an `output_item.added` carries are held until a delta or summary replaces them
  or the item ends: counted toward `max_stream_bytes` while held (`Sink._set_aside`), given back
  when replaced or fed, and not kept at all past `max_bytes` (the call is `too_large`) or past the
  stream limit (the response is refused whole). Once the response is refused, a new item makes
  no state, so what follows costs no memory. As on the raw SSE path.
- A `reasoning` item is kept for the next request (`Assembler.reasoning`: a stateless request,
  `store=False`, must send it back) whole from its `output_item.done`, the authoritative copy:
  its summary deltas are not held, and an item that never finished (the stream broke off
  first) is not kept. One no `output_item.done` brought (a stream joined part way) is kept
  from the finished response's `output`, once. The API refuses a reasoning item sent back
  without the item that followed it in the output, so the item after it decides: a call gets
  the item's `id` as metadata `reasoning_id` (`assistant_turn` sends the item right before
  it), a `message` (the assistant text) or a hosted item that finishes keeps it, anything
  else (another reasoning item, the response's end) lets it go, its bytes given back.
  Its bytes count toward `max_stream_bytes` as assistant text does; once the response is
  refused at the limit, no item is kept. An item is kept once per `id`, and a response
  replayed from its `response.created` lets its items go, as they come again. As on the raw
  SSE path (`rust/src/envelope/thinking.rs`).
- A `message` item's `output_item.added` starts a block of the assistant text
  (`Sink._text_block`), after the reasoning item before it is kept: where each message began
  among the calls and the kept items goes on the calls at finish (metadata `text_before`,
  `text_after`), so that the next turn sends each message back as an item of its own, in its
  place. As on the raw SSE path.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

from toolwire._core import same_tokens
from toolwire.formats._fields import (
    arguments_of,
    copy_usage,
    get,
    malformed_envelope,
    malformed_record,
    merge_usage,
    position_of,
    str_or_none,
)
from toolwire.formats._reasoning import item_json
from toolwire.formats._replay import ReplayedText
from toolwire.formats._types import (
    ChunkInfo,
    FeedRecord,
    Sink,
    WireFormat,
    after_provider_error,
    gave_up,
    is_limit,
    stops_calls,
    unreadable,
)
from toolwire.formats._utf16 import Utf16, escape_lone_surrogates, replace_lone_surrogates
from toolwire.payloads import FREE_FORM_TYPE

__all__ = ["ResponsesAdapter"]

# `response.cancelled` has no event class in the openai SDK: it yields the event as the first
# class of its union with the fields kept (`get` reads them), so it is matched by `type` alone.
_CALL_ITEMS = frozenset(("function_call", "custom_tool_call"))

_FINAL = frozenset(
    ("response.completed", "response.incomplete", "response.failed", "response.cancelled")
)


def _item_id(obj: object, field: str) -> str | None:
    """An item's id, with a blank one (`""`) read as none, as the raw SSE path reads it
    (quirk 14): keyed apart, the events of one item would make two calls."""
    return str_or_none(get(obj, field)) or None


@dataclass(slots=True)
class _Calls:
    by_item: dict[str, int] = field(default_factory=lambda: {})
    # The key of every function call item in the order they opened.
    order: list[int] = field(default_factory=lambda: [])
    opened: set[int] = field(default_factory=lambda: set())
    with_arguments: set[int] = field(default_factory=lambda: set())
    ordinals: dict[int, int] = field(default_factory=lambda: {})
    verified: set[int] = field(default_factory=lambda: set())
    # Items whose `output_item.done` was read: the call ended, so a summary that comes late
    # (events out of order) finds no call to compare with, and must not open a nameless one.
    ended: set[int] = field(default_factory=lambda: set())
    # The arguments each item's `output_item.added` carried, set aside: a placeholder (`"{}"`,
    # quirk 24) that deltas do not continue. Fed only if no delta or summary brings any. With
    # the bytes the core counts while they are held (`Sink._set_aside`).
    provisional: dict[int, tuple[str, int]] = field(default_factory=lambda: {})
    # Items whose deltas came before any `output_item.added` (it was lost): opened without a
    # name, which their `output_item.done` may still bring.
    unannounced: set[int] = field(default_factory=lambda: set())
    # Items announced without a name (blank or missing): their `output_item.done` names them
    # (quirks 10, 11), as it names an item whose `added` was lost.
    nameless: set[int] = field(default_factory=lambda: set())
    # The `item_id` of each key, and the latest key opened at each `output_index`.
    item_of: dict[int, str | None] = field(default_factory=lambda: {})
    # The `output_index` each key was opened at (its key, when the event had none).
    index_of: dict[int, int] = field(default_factory=lambda: {})
    latest_at: dict[int, int] = field(default_factory=lambda: {})
    # A key above every `output_index` and key seen, for an item keyed apart.
    next_key: int = 0


# How many of the latest events a repeat is looked for among.
_RECENT_EVENTS = 16


class _Sequence:
    """The `sequence_number`s of a Responses stream read so far."""

    __slots__ = ("last", "recent", "reliable")

    def __init__(self) -> None:
        self.last: int | None = None
        # The latest events by number (the objects, compared whole, as the raw SSE path
        # compares their bytes).
        self.recent: deque[tuple[int, object]] = deque(maxlen=_RECENT_EVENTS)
        self.reliable = True

    def repeated(self, kind: str, event: object) -> bool:
        """Whether `event` is one read already, sent again (fault 5: a proxy repeats a delta
        after a reconnect), which taken twice would double its text: its number is not above
        the last one's, and an event among the latest had that number and is equal to it. A
        response sent again from its start begins with `response.created`, and its events go to
        the replay rules. A number that comes again on another event means the producer does
        not number events in order (a bridge that sends a constant): numbers are then not read
        for the rest of the stream."""
        number = get(event, "sequence_number")
        if not self.reliable or type(number) is not int or not 0 <= number < 1 << 64:
            return False
        if self.last is not None and number <= self.last and kind != "response.created":
            if any(seen == number and earlier == event for seen, earlier in self.recent):
                return True
            self.reliable = False
            return False
        self.last = number
        self.recent.append((number, event))
        return False


class ResponsesAdapter:
    """Per-stream state for Responses events (`ResponseStreamEvent` variants or dicts)."""

    format: WireFormat = "openai-responses"

    __slots__ = (
        "_announced",
        "_awaiting",
        "_calls",
        "_gave_up",
        "_hosted",
        "_hosted_ahead",
        "_hosted_streamed",
        "_items_done",
        "_reasoning_ids",
        "_reasoning_streamed",
        "_sequence",
        "_started",
        "_text",
        "_usage",
        "_utf16",
    )

    def __init__(self) -> None:
        """Start with no calls seen."""
        self._calls = _Calls()
        self._utf16 = Utf16()
        self._gave_up = False
        self._usage: dict[str, Any] | None = None
        self._text = ReplayedText()
        self._sequence = _Sequence()
        # `response.created` came: another one replays the response.
        self._started = False
        # A call item was announced, even in a response refused whole: its finished
        # `output` is then not read for calls, as on the raw SSE path.
        self._announced = False
        # The `id`s of the reasoning and hosted items kept in this response, in the order kept,
        # each with whether it still is (a reasoning item let go is not).
        self._reasoning_ids: dict[str, bool] = {}
        # The last reasoning item kept, by its `id` (`None` when it has none), while the item
        # after it has not come (`_follow`); `False` when none waits.
        self._awaiting: str | bool | None = False
        # A reasoning item came in its own `output_item.done`.
        self._reasoning_streamed = False
        # Hosted items kept in this response, and whether one came in its own
        # `output_item.done`.
        self._hosted = 0
        self._hosted_streamed = False
        # Hosted items of the finished response's `output` before the call read from it
        # (`_summary_calls`), kept after the calls: counted for the call as kept ones.
        self._hosted_ahead = 0
        # `output_item.done` events read (the finished response's `output` is read for hosted
        # items only when it holds more).
        self._items_done = 0

    def handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        """Translate one event.

        Args:
            chunk: A Responses stream event or a dict of the same shape.
            sink: Receives `feed` / `end` / `set_metadata` / `stop` calls.

        Returns:
            The event's text, feeds, finish reason and usage.
        """
        info = self._handle(chunk, sink)
        if info.text:
            info.text = self._text.take(info.text, keep=sink._may_hold(0))  # pyright: ignore[reportPrivateUsage]
        return after_provider_error(info, sink) if self._gave_up else info

    def _handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        info = ChunkInfo()
        # Only a str names an event; any other value (a list from a broken producer) is no
        # kind this adapter knows, and must not reach the set lookup below, where it would raise.
        kind = str_or_none(get(chunk, "type"))
        if malformed_envelope(chunk):
            return unreadable(info, sink)
        if kind is not None and kind.startswith("response."):
            error = get(chunk, "error")
            if error:
                # The openai SDK raises any event whose data has an `error` member that reads
                # as true, whatever its type says, and reads no further (as on the raw path).
                gave_up(info, sink, error)
                self._gave_up = True
                return info
            # An event whose item does not read still has its number, as the raw path reads
            # it: numbers that went back after it mean the producer numbers no events.
            if self._sequence.repeated(kind, chunk):
                return info
        if kind in _ITEM_EVENTS and malformed_record(get(chunk, "item"), _ITEM_FIELDS):
            return unreadable(info, sink)
        if kind == "response.output_text.delta":
            delta = get(chunk, "delta")
            if isinstance(delta, str):
                info.text = delta
        elif kind == "response.created":
            self._text.start()
            if self._started:
                # The response comes again from its start, its reasoning items too.
                sink._forget_reasoning()  # pyright: ignore[reportPrivateUsage]
                self._reasoning_ids.clear()
                self._awaiting = False
                self._hosted = 0
            self._started = True
        elif kind == "response.output_item.added":
            item = get(chunk, "item")
            if self._awaiting is not False:
                self._follow_item(item, sink)
            if str_or_none(get(item, "type")) == "message":
                # Its place among the calls and the kept items (the reasoning item before it
                # kept now), for the next turn to send each message back where it was.
                sink._text_block()  # pyright: ignore[reportPrivateUsage]
            self._item(chunk, sink, info, done=False)
        elif kind == "response.function_call_arguments.delta":
            self._arguments(self._delta_index(chunk, sink), get(chunk, "delta"), sink, info)
        elif kind == "response.function_call_arguments.done":
            # An item never announced (its `added` and deltas lost) is opened here, as for a
            # delta: the summary is all of it that came, and it was dropped unsaid.
            self._summary(self._delta_index(chunk, sink), get(chunk, "arguments"), sink, info)
        elif kind == "response.output_item.done":
            item = get(chunk, "item")
            self._items_done += 1
            item_type = str_or_none(get(item, "type"))
            if item_type == "reasoning":
                self._keep_reasoning(item, sink, summary=False)
            elif (
                item_type not in _READ_ITEMS
                and item_type is not None
                and _item_id(item, "id") is not None
            ):
                # A hosted item (`_is_hosted`), told apart inline: a call's item comes here too.
                self._keep_reasoning(item, sink, summary=False, hosted=True)
            else:
                if self._awaiting is not False:
                    # An item whose `added` was lost still follows the reasoning before it.
                    self._follow_item(item, sink)
                self._item(chunk, sink, info, done=True)
        elif kind == "response.custom_tool_call_input.delta":
            self._free_form_index(chunk, sink, info)
        elif kind == "response.custom_tool_call_input.done":
            index = self._free_form_index(chunk, sink, info)
            self._free_form_input(index, get(chunk, "input"), sink, info)
        elif kind in _FINAL:
            self._finished(get(chunk, "response"), kind, sink, info)
        elif kind == "error":
            # Its `error` member says what went wrong; without one, the event's own members
            # (`code`, `message`) do, as the raw SSE path reads it.
            error = get(chunk, "error")
            gave_up(info, sink, chunk if error is None else error)
            self._gave_up = True
        return info

    def _keep_reasoning(
        self, item: object, sink: Sink, *, summary: bool, hosted: bool = False, before: int = 0
    ) -> None:
        """A `reasoning` item, or a `hosted` item, finished (`summary`: read from the finished
        response's `output`): kept once per `id`, its bytes counted. A reasoning item waits for
        its follower (`_follow`); a hosted item is one, and is counted for the calls after it
        (metadata `hosted_before`). An item of the finished response that came before the last
        `before` items kept goes before them."""
        item_id = _item_id(item, "id")
        if item_id is not None and item_id in self._reasoning_ids:
            # A repeat of a finished item (a stream that numbers no events), or in the
            # finished response one its own `output_item.done` brought.
            if not hosted and self._awaiting not in (False, item_id):
                self._follow(None, sink)
            return
        streamed = self._hosted_streamed if hosted else self._reasoning_streamed
        if item_id is None and summary and streamed:
            # An item without `id` cannot be told from one its `output_item.done` brought.
            return
        if hosted:
            self._hosted_streamed |= not summary
        else:
            self._reasoning_streamed |= not summary
        # A reasoning item right after another has no follower the next turn could send.
        self._follow(None, sink, hosted=hosted)
        text = item_json(item)
        if not sink._keep_text(len(text.encode())):  # pyright: ignore[reportPrivateUsage]
            return
        if item_id is not None:
            self._reasoning_ids[item_id] = True
        sink._keep_reasoning_item(text, before)  # pyright: ignore[reportPrivateUsage]
        if hosted:
            self._hosted += 1
        else:
            self._awaiting = item_id

    def _follow(
        self, call: int | None, sink: Sink, *, message: bool = False, hosted: bool = False
    ) -> None:
        """The item after the reasoning item kept last came: a call (its key) is told the
        item's `id` (metadata `reasoning_id`), so that the next turn sends the item right
        before it; a `message` (the assistant text) or a `hosted` item, kept right after it,
        keeps it; anything else (another reasoning item, the response's end) lets it go, as
        the API refuses a reasoning item sent back without the item that followed it. As on
        the raw SSE path."""
        awaiting, self._awaiting = self._awaiting, False
        if awaiting is False or message or hosted:
            return
        if call is None:
            if isinstance(awaiting, str):
                # Let go: it is no longer among the items kept, though kept once.
                self._reasoning_ids[awaiting] = False
            sink._drop_reasoning()  # pyright: ignore[reportPrivateUsage]
        elif isinstance(awaiting, str):
            sink.set_metadata(call, "reasoning_id", awaiting)

    def _follow_item(self, item: object, sink: Sink) -> None:
        """What follows the reasoning item kept last, when it is no call (a call is followed
        up as it opens, `_announce`)."""
        kind = str_or_none(get(item, "type"))
        if kind in _CALL_ITEMS or (_is_hosted(kind) and _item_id(item, "id") is not None):
            # A hosted item follows it once it finishes, and is kept then (`_keep_reasoning`);
            # one without `id` is not kept.
            return
        if kind == "reasoning" and self._awaiting is not None:
            if _item_id(item, "id") == self._awaiting:
                # The item's own `added` again (a replay): it follows nothing.
                return
        self._follow(None, sink, message=kind == "message")

    def _delta_index(self, event: object, sink: Sink) -> int:
        """The key of an argument delta's item. An item never announced (its
        `output_item.added` was lost) is opened here without a name, so its text is not
        dropped: the raw SSE path keeps it too, and the call ends as `missing_name` unless its
        `output_item.done` names it. Once the response was refused whole, it gets no state."""
        calls = self._calls
        item_id = _item_id(event, "item_id")
        output_index = self._output_index(event)
        index = self._find(item_id, output_index)
        if index is None:
            index = self._new_key(0 if output_index is None else output_index, item_id)
        if index not in calls.opened and sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            self._open(index, index if output_index is None else output_index, item_id)
            calls.unannounced.add(index)
        return index

    def _free_form_index(self, event: object, sink: Sink, info: ChunkInfo) -> int:
        """The key of a custom tool call's input event. An item never announced (its
        `output_item.added` was lost) is opened here as a free-form call without a name, so
        that it is not dropped: its `output_item.done` names it, else it ends `missing_name`.
        """
        opened = len(self._calls.order)
        index = self._delta_index(event, sink)
        if len(self._calls.order) > opened:
            ordinal = self._utf16.feed(sink, index, type=FREE_FORM_TYPE)
            info.feeds.append(FeedRecord(ordinal, None, None))
        return index

    def _free_form_input(
        self, index: int, value: object, sink: Sink, info: ChunkInfo, *, finished: bool = False
    ) -> None:
        """The whole free-form text of the custom tool call at `index`, fed once as the
        call's text: a later `.done` repeats it, and the finished item's (`finished`), which the
        provider keeps as the call, replaces a different one, told as on the raw path."""
        calls = self._calls
        if not isinstance(value, str) or index not in calls.opened or index in calls.ended:
            return
        if index in calls.with_arguments:
            replace = getattr(sink, "_replace_free_form", None)
            ordinal = calls.ordinals.get(index)
            if not finished or replace is None or ordinal is None:
                return
            if replace(ordinal, replace_lone_surrogates(value).encode()):
                shown = calls.index_of.get(index, index)
                info.arguments_mismatch = (
                    f"final input of the custom tool call at output_index {shown} differs from "
                    "its custom_tool_call_input.done: the finished item's was kept"
                )
            return
        calls.with_arguments.add(index)
        if value:
            # Plain text, not JSON: an unpaired surrogate half is U+FFFD, as on the raw path.
            ordinal = sink.feed(index, arguments=replace_lone_surrogates(value))
            calls.ordinals[index] = ordinal
            info.feeds.append(FeedRecord(ordinal, None, None))

    def _output_index(self, event: object) -> int | None:
        index = position_of(get(event, "output_index"))
        if index is not None:
            self._calls.next_key = max(self._calls.next_key, index + 1)
        return index

    def _find(self, item_id: str | None, output_index: int | None) -> int | None:
        """The key of the item an event names: by `item_id` when it is known; else by
        `output_index` (the latest item there, unless that item has another `item_id`); else,
        with neither, the last function call item. As on the raw SSE path."""
        calls = self._calls
        if item_id is not None and item_id in calls.by_item:
            return calls.by_item[item_id]
        if output_index is None:
            return calls.order[-1] if calls.order else None
        index = calls.latest_at.get(output_index)
        if index is not None and item_id is not None and calls.item_of.get(index) is not None:
            return None
        return index

    def _new_key(self, output_index: int, item_id: str | None) -> int:
        """The key of a new item: its `output_index`, unless an item with another `item_id`
        has that key, so that two items sent under one index never share a call."""
        calls = self._calls
        other = calls.item_of.get(output_index)
        taken = output_index in calls.opened and None not in (item_id, other) and other != item_id
        index = calls.next_key if taken else output_index
        calls.next_key = max(calls.next_key, index + 1)
        return index

    def _open(self, index: int, output_index: int, item_id: str | None) -> None:
        calls = self._calls
        calls.opened.add(index)
        calls.order.append(index)
        calls.item_of[index] = item_id
        calls.index_of[index] = output_index
        calls.latest_at[output_index] = index
        if item_id is not None:
            calls.by_item[item_id] = index

    def _item(self, event: object, sink: Sink, info: ChunkInfo, *, done: bool) -> None:
        item = get(event, "item")
        if str_or_none(get(item, "type")) not in _CALL_ITEMS:
            return
        calls = self._calls
        item_id = _item_id(item, "id")
        output_index = self._output_index(event)
        if done:
            index = self._find(item_id, output_index)
        else:
            # A repeated `output_item.added` of one item (a replay after a reconnect) keeps its
            # key; a new item is numbered by the items before it when it has no index.
            index = calls.by_item.get(item_id) if item_id is not None else None
            if index is not None:
                # Its arguments come again: a half held from the first rendition is not
                # waiting for more.
                self._utf16.forget(sink, index)
            if output_index is None:
                output_index = len(calls.order)
        if index is None:
            index = self._new_key(0 if output_index is None else output_index, item_id)
        # Every `output_item.added` is an item, also at an `output_index` seen before (a stream
        # replayed after a reconnect, a bridge that reuses indexes): its id and name go to the
        # core, which continues the open call or starts a new one, as on the raw SSE path.
        first = index not in calls.opened or not done
        if done and not first and index not in calls.unannounced:
            # The finished item may name the `namespace` its `added` left out.
            _tell_namespace(index, item, sink)
        if done and index in calls.unannounced:
            # The deltas came first; the finished item brings the id and name they lacked, and
            # its arguments are the summary the deltas' text is compared with, as on the raw
            # SSE path. Keyed apart from another item under its `output_index`, the call
            # reports that index, as the raw path has it report the index its deltas came with.
            calls.unannounced.discard(index)
            if item_id is not None and calls.item_of.get(index) is None:
                calls.item_of[index] = item_id
                calls.by_item[item_id] = index
            shown = calls.index_of.get(index)
            calls.ordinals[index] = self._announce(index, item, item_id, sink, info, shown)
        elif done and index in calls.nameless:
            # Announced without a name (quirks 10, 11): the finished item names the call its
            # text went to, as it names one whose `added` was lost (a call that has a name is
            # not in the set, and keeps it). As on the raw SSE path.
            calls.nameless.discard(index)
            name = str_or_none(get(item, "name"))
            if name:
                ordinal = self._utf16.feed(sink, index, name=name)
                info.feeds.append(FeedRecord(ordinal, None, name))
        elif first:
            ordinal = self._announce(index, item, item_id, sink, info, output_index)
            if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
                # The response was refused whole: the item gets no state (its later events
                # find none, and the core keeps none of them), as on the raw SSE path.
                if done:
                    self._utf16.release(sink, index)
                    sink.end(index)
                return
            self._open(index, index if output_index is None else output_index, item_id)
            calls.ordinals[index] = ordinal
            if index in calls.unannounced:
                # Deltas that came before it are its own: the item is announced now, and its
                # summaries are compared with them, as on the raw SSE path.
                calls.unannounced.discard(index)
            else:
                # Announced again (a call sent again): no text of its own came yet.
                calls.with_arguments.discard(index)
                calls.verified.discard(index)
                calls.ended.discard(index)
            if str_or_none(get(item, "name")):
                calls.nameless.discard(index)
            else:
                calls.nameless.add(index)
        if done:
            if get(item, "type") == "custom_tool_call":
                self._free_form_input(index, get(item, "input"), sink, info, finished=True)
            else:
                self._summary(index, get(item, "arguments"), sink, info)
            self._feed_provisional(index, sink, info)
            self._utf16.release(sink, index)
            sink.end(index)
            calls.ended.add(index)
        elif index not in calls.with_arguments and index not in calls.verified:
            arguments = get(item, "arguments")
            # Only text, as on the raw SSE path: an item carries its arguments as a string.
            if isinstance(arguments, str) and arguments:
                # An `added` sent again replaces what the first one carried: given back first,
                # so that the two are never counted at once.
                before = calls.provisional.pop(index, None)
                if before is not None:
                    sink._release(before[1])  # pyright: ignore[reportPrivateUsage]
                # Held as it will be fed, as the raw SSE path holds it decoded: a lone
                # surrogate as its escape.
                text = escape_lone_surrogates(arguments)
                aside = sink._set_aside(index, text)  # pyright: ignore[reportPrivateUsage]
                if aside is not None:
                    calls.provisional[index] = (text, aside)

    def _feed_provisional(self, index: int, sink: Sink, info: ChunkInfo) -> None:
        """Feeds the arguments an item's `added` carried, if nothing else brought any."""
        held = self._calls.provisional.pop(index, None)
        if held is not None:
            text, aside = held
            # Given back first: fed, the same bytes are counted as the call's own.
            sink._release(aside)  # pyright: ignore[reportPrivateUsage]
            self._arguments(index, text, sink, info)

    def _announce(
        self,
        index: int,
        item: object,
        item_id: str | None,
        sink: Sink,
        info: ChunkInfo,
        output_index: int | None = None,
    ) -> int:
        """Hands the core an item's call id and name; returns the call's ordinal."""
        # A bridge that sends no `call_id` gets its item id back, as on the raw SSE path.
        call_id = str_or_none(get(item, "call_id")) or item_id
        name = str_or_none(get(item, "name"))
        kind = FREE_FORM_TYPE if get(item, "type") == "custom_tool_call" else None
        # An item event starts its call: the same item again is that call sent again.
        ordinal = self._utf16.feed(sink, index, id=call_id, name=name, type=kind, start=True)
        self._announced = True
        info.feeds.append(FeedRecord(ordinal, call_id, name))
        if item_id is not None:
            # An unpaired surrogate in an id is U+FFFD, as the raw path reads its escape.
            sink.set_metadata(index, "item_id", replace_lone_surrogates(item_id))
        set_index = getattr(sink, "_set_index", None)
        if output_index is not None and output_index != index and set_index is not None:
            # Keyed apart from another item under this `output_index`, it still reports it;
            # after its `item_id`, as the raw SSE path sets them, so that one that takes the
            # response past its limit leaves the index unset on both paths.
            set_index(ordinal, output_index)
        if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            # The call's id, name or `item_id` took the response past its limit (the raw SSE
            # path hands the three over at once): refused whole, the call follows no reasoning
            # item, which is let go at the end as one without a follower, as on that path.
            return ordinal
        _tell_namespace(index, item, sink)
        self._follow(index, sink)
        hosted = self._hosted + self._hosted_ahead
        if hosted:
            sink.set_metadata(index, "hosted_before", hosted)
        return ordinal

    def _summary(self, index: int, value: object, sink: Sink, info: ChunkInfo) -> None:
        """Whole arguments from an item or a `.done` event: fed when no text came, else
        compared with what the call holds by the core, which takes it when it completes deltas
        that stopped short and fails the call (`arguments_mismatch`) when it says something
        else, as the raw SSE path does. Every summary is compared, not only the first: an
        `output_item.done` that contradicts the `.done` before it must not leave the call to
        run silently with the first reading."""
        calls = self._calls
        if index in calls.ended or index not in calls.opened:
            # Ended, or no state (the response was refused whole): as on the raw SSE path,
            # a summary of an item without state is not fed.
            return
        if index not in calls.with_arguments:
            self._arguments(index, value, sink, info)
            return
        full = arguments_of(value)
        if not isinstance(full, str) or full == "":
            return
        read = getattr(sink, "arguments_so_far", None)
        ordinal = calls.ordinals.get(index)
        if read is None or ordinal is None:
            return
        calls.verified.add(index)
        try:
            expected = full.encode()
        except UnicodeEncodeError:
            expected = escape_lone_surrogates(full).encode()
        # A summary that spaces the same tokens otherwise (re-serialized) is the same call.
        # The core compares it with each reading of fragments it still holds, and decides them;
        # text that says something else stays as the deltas made it, and the call does not run.
        check = getattr(sink, "_check_summary", None)
        if check is not None:
            verdict = check(ordinal, expected)
        else:
            verdict = "same" if same_tokens(read(ordinal), expected) else "fill"
        if verdict == "same":
            return
        # The summary is whole: a surrogate half still held waited for a delta that was lost,
        # and a half at the summary's end has no partner to come. As on the raw SSE path, the
        # summary supersedes the half.
        self._utf16.forget(sink, index)
        if verdict in ("extend", "mismatch"):
            shown = calls.index_of.get(index, index)
            info.arguments_mismatch = (
                f"final arguments of the call at output_index {shown} differ from its deltas"
            )
        if verdict == "fill":
            # Fed with unpaired halves escaped, as a fragment is.
            ordinal = sink.feed(index, arguments=escape_lone_surrogates(full))
            info.feeds.append(FeedRecord(ordinal, None, None))

    def _arguments(self, index: int, value: object, sink: Sink, info: ChunkInfo) -> None:
        arguments = arguments_of(value)
        # An empty delta is a no-op (quirk 26); it must not count as "arguments arrived".
        if arguments is None or arguments == "":
            return
        calls = self._calls
        # An item with no state (the response was refused whole) gets none here either.
        kept = index in calls.opened
        if kept:
            calls.with_arguments.add(index)
            unused = calls.provisional.pop(index, None)
            if unused is not None:
                # What `added` carried is not used now: given back before the text is counted,
                # so both are never counted together.
                sink._release(unused[1])  # pyright: ignore[reportPrivateUsage]
        ordinal = self._utf16.fragment(sink, index, arguments)  # quirk 41
        if ordinal is None:
            # All of it is held for the next fragment, which feeds it.
            return
        if kept:
            # The item's summary is compared with the call its text went to: an item whose
            # `output_item.added` was lost has no other record of it, and text that differs
            # from a call sent again goes to a call of its own (a replay that is no replay).
            calls.ordinals[index] = ordinal
        info.feeds.append(FeedRecord(ordinal, None, None))

    def flush(self, sink: Sink) -> None:
        """The stream ends: hand the core what is still held (an unpaired surrogate half)."""
        self._utf16.flush(sink)

    def _finished(self, response: object, kind: str, sink: Sink, info: ChunkInfo) -> None:
        if kind == "response.completed" and not self._announced and not self._calls.order:
            self._summary_calls(response, sink, info)
        elif self._calls.order:
            self._summary_namespaces(response, sink)
        usage = get(response, "usage")
        if usage is not None:
            # `null` members left out, as the SDK objects and the raw SSE path read them.
            self._usage = merge_usage(self._usage, usage)
            info.usage = copy_usage(self._usage)
        self._summary_reasoning(response, sink)
        if kind == "response.completed":
            # A response that ended well gives every item the arguments its `added` carried,
            # if nothing else brought any; one cut short leaves such a call without them.
            for index in list(self._calls.provisional):
                self._feed_provisional(index, sink, info)
            info.finish_reason = "completed"
        elif kind == "response.failed":
            gave_up(info, sink, get(response, "error"), "failed")
        elif kind == "response.cancelled":
            # As on the raw SSE path: a call the server had not finished must not run.
            info.finish_reason = "cancelled"
            sink.stop("cancelled")
        else:
            reason = str_or_none(get(get(response, "incomplete_details"), "reason"))
            info.finish_reason = reason or "incomplete"
            if stops_calls(reason or "incomplete"):
                sink.stop(reason or "incomplete")
            elif is_limit(reason or "incomplete"):
                sink.limit_reached()

    def _summary_calls(self, response: object, sink: Sink, info: ChunkInfo) -> None:
        """The function calls of a response that no item event announced (a bridge that sends
        them only in the finished response's `output`), each read as its `output_item.done`
        would have been, at its position in `output`, as the raw SSE path reads them. Read only
        when the stream announced no call at all, so a summary never doubles a streamed call.
        An item the raw SSE path cannot read (no object, or a `type`, `id`, `call_id` or `name`
        that is no string) is skipped and the chunk told `malformed`: it holds no part of
        another item, so the rest of the response, its finish reason too, is read.
        """
        output = get(response, "output")
        if not isinstance(output, list):
            return
        for position, item in enumerate(cast("list[object]", output)):
            if item is None or malformed_record(item, _ITEM_FIELDS):
                info.malformed = True
                continue
            item_type = str_or_none(get(item, "type"))
            if item_type in _CALL_ITEMS:
                event = {
                    "type": "response.output_item.done",
                    "output_index": position,
                    "item": item,
                }
                self._item(event, sink, info, done=True)
            elif _readable_hosted(item) and _item_id(item, "id") not in self._reasoning_ids:
                # Kept after the calls (`_summary_reasoning`), it still came before them.
                self._hosted_ahead += 1
        self._hosted_ahead = 0

    def _summary_namespaces(self, response: object, sink: Sink) -> None:
        """Each call the stream brought is told the `namespace` its item in the finished
        response's `output` names, which no item event may have said. As on the raw SSE path.
        """
        output = get(response, "output")
        for item in cast("list[object]", output) if isinstance(output, list) else []:
            # Most items name none: the one read that tells so comes first.
            if get(item, "namespace") is None or malformed_record(item, _ITEM_FIELDS):
                continue
            if str_or_none(get(item, "type")) not in _CALL_ITEMS:
                continue
            item_id = _item_id(item, "id")
            key = None if item_id is None else self._calls.by_item.get(item_id)
            if key is not None:
                _tell_namespace(key, item, sink)

    def _summary_reasoning(self, response: object, sink: Sink) -> None:
        """The `reasoning` and hosted items of the finished response's `output` that no
        `output_item.done` brought (a stream joined part way, a bridge that sends only the
        finished response), kept as theirs would have been. The item after each reasoning item
        in `output` is its follower, and so it is for an item the stream brought that still
        waits; the response ends here, so one not found there has none. Hosted items are
        looked for only when `output` holds more items than `output_item.done` events came.
        As on the raw SSE path."""
        output = get(response, "output")
        items = cast("list[object]", output) if isinstance(output, list) else []
        if self._awaiting is not False:
            waiting = self._awaiting
            at = next(
                (
                    k
                    for k, item in enumerate(items)
                    if waiting is not None
                    and str_or_none(get(item, "type")) == "reasoning"
                    and _item_id(item, "id") == waiting
                ),
                None,
            )
            self._follow_output(items, at, sink)
        hosted = len(items) > self._items_done
        kept = self._hosted
        # The items the stream brought, kept so far: in a stream joined part way, an item only
        # `output` has goes before those that came after it there.
        streamed = len(self._reasoning_ids)
        places: list[int] | None = None
        for at, item in enumerate(items):
            is_hosted = str_or_none(get(item, "type")) != "reasoning"
            if is_hosted and not (hosted and _readable_hosted(item)):
                continue
            item_id = _item_id(item, "id")
            before = 0
            if streamed and (item_id is None or item_id not in self._reasoning_ids):
                if places is None:
                    places = self._places(items, streamed)
                before = sum(place > at for place in places)
            self._keep_reasoning(item, sink, summary=True, hosted=is_hosted, before=before)
            if not is_hosted and self._awaiting is not False:
                self._follow_output(items, at, sink, before)
        if self._hosted > kept:
            self._tell_hosted_before(items, sink)

    def _places(self, items: list[object], streamed: int) -> list[int]:
        """The places in the finished response's `output` of the first `streamed` items kept
        that still are. As on the raw SSE path."""
        kept = self._reasoning_ids
        still = {key for key in list(kept)[:streamed] if kept[key]}
        return [
            at
            for at, item in enumerate(items)
            if not malformed_record(item, _ITEM_FIELDS) and _item_id(item, "id") in still
        ]

    def _tell_hosted_before(self, items: list[object], sink: Sink) -> None:
        """Hosted items kept from the finished response's `output` were kept in its order,
        maybe before items the stream brought: each call after them there is told how many
        came before it (metadata `hosted_before`), as its `output_item.added` would have been.
        As on the raw SSE path."""
        count = 0
        for item in items:
            if malformed_record(item, _ITEM_FIELDS):
                continue
            item_type = str_or_none(get(item, "type"))
            if _readable_hosted(item):
                count += 1
            elif count and item_type in _CALL_ITEMS:
                item_id = _item_id(item, "id")
                key = None if item_id is None else self._calls.by_item.get(item_id)
                if key is not None:
                    sink.set_metadata(key, "hosted_before", count)

    def _follow_output(
        self, items: list[object], at: int | None, sink: Sink, before: int = 0
    ) -> None:
        """The item waiting is at `at` in the finished response's `output`: the next one there
        follows it (none: it has no follower). A hosted item kept here goes right after it,
        before the last `before` items kept."""
        after = items[at + 1] if at is not None and at + 1 < len(items) else None
        if after is None or malformed_record(after, _ITEM_FIELDS):
            # An item that does not read is no item the next turn sends, as on the raw path.
            self._follow(None, sink)
        elif _readable_hosted(after):
            # Kept here, right after it; one kept already came before it, and is no follower.
            self._keep_reasoning(after, sink, summary=True, hosted=True, before=before)
            self._follow(None, sink)
        elif str_or_none(get(after, "type")) in _CALL_ITEMS:
            item_id = _item_id(after, "id")
            self._follow(None if item_id is None else self._calls.by_item.get(item_id), sink)
        else:
            self._follow_item(after, sink)


_ITEM_EVENTS = frozenset({"response.output_item.added", "response.output_item.done"})
# The items the adapter reads otherwise: every other item is a hosted item (`_is_hosted`).
_READ_ITEMS = frozenset(("function_call", "custom_tool_call", "message", "reasoning"))


def _is_hosted(kind: str | None) -> bool:
    """Whether an output item of this `type` is a hosted item, kept whole for the next turn:
    none the adapter reads otherwise (a call, the assistant text, a reasoning item), as on the
    raw SSE path (`is_hosted` in `rust/src/envelope/thinking.rs`)."""
    return kind is not None and kind not in _READ_ITEMS


def _tell_namespace(key: int, item: object, sink: Sink) -> None:
    """Tells the call under `key` the `namespace` tool its item says the called tool is
    declared in: called by its bare name, the tool is told apart by it, and the next turn must
    send it back. A value that is no string, or a blank one, is no namespace."""
    namespace = str_or_none(get(item, "namespace"))
    if namespace:
        sink.set_metadata(key, "namespace", replace_lone_surrogates(namespace))


def _readable_hosted(item: object) -> bool:
    """Whether an item of the finished response's `output` is a hosted item the raw SSE path
    reads too (its `type`, `id`, `call_id` and `name` strings where present), with the `id`
    it is kept only with (the API takes none back without it)."""
    return (
        _is_hosted(str_or_none(get(item, "type")))
        and _item_id(item, "id") is not None
        and not malformed_record(item, _ITEM_FIELDS)
    )


# The fields of an item the raw SSE path reads as strings: an item where one is another type
# is one it cannot read.
_ITEM_FIELDS = ("type", "id", "call_id", "name")
