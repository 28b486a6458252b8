"""Anthropic Messages stream events to assembler calls.

Design notes:
- Content-block indexes count text and thinking blocks too, so a tool call's key is its block
  index and the core maps it to a dense ordinal (quirks 4, 32).
- `content_block_start` of a `tool_use` block carries `input`, almost always the placeholder
  `{}` followed by `input_json_delta` fragments. The placeholder is therefore not fed at start; at
  `content_block_stop` it is fed as the complete value only if no fragment arrived (a server that
  sends the whole input at start). An empty `partial_json` is no fragment (quirk 26).
- An input that says more than `{}` is held outside the core until then: it is counted toward
  `max_stream_bytes` while held (`Sink._set_aside`), given back at the first fragment or when
  fed, and not kept at all past `max_bytes` (the call is `too_large`) or past the stream limit
  (the response is refused whole), so a stream of large inputs cannot make us hold more than the
  limits. Once the response is refused, a block keeps nothing. As on the raw SSE path.
- A tool block that stops with no input (no fragment or only JSON whitespace, the `{}`
  placeholder or none) is a tool without parameters only if the message goes on: its end waits
  for the next event of the message (a `ping`, or an event of a kind no message has, tells
  nothing, as on the raw path). If that event says `max_tokens`, the call is left open under
  `limit_reached` and ends `truncated`, since Anthropic closes the block the limit cut before
  it says why the message stopped; if the stream breaks off there, the
  interruption makes it `truncated` too, and if an `error` event follows, the error stops it
  (`filtered`). The raw SSE path holds it the same way.
- `content_block_stop` ends the call (`end(index)`); a `message_delta.stop_reason` of `refusal`
  (or, from translators, `content_filter` or `safety`, in any ASCII case, as the raw path reads
  it) and an `error` event stop the open calls.
- A block of any other kind than text, thinking and `tool_use` (a server tool's call,
  `server_tool_use`, and its result, `web_search_tool_result`, `code_execution_tool_result`...,
  an `mcp_tool_use`, a `container_upload`...) ran on Anthropic's side: never a call, and never
  checked against a client tool's schema. It is kept whole with the thinking blocks for the
  next turn, in its place (a call after it counts it in `reasoning_before`), its input from
  its `input_json_delta`s, held and counted as thinking is; one whose input is no JSON value,
  or that never stopped, is left out, as on the raw SSE path. A `compaction` block (context
  management) takes its `compaction_delta`s as the `anthropic` SDK's accumulator does: each
  sets the block's `content` and `encrypted_content`, a member it lacks to null.
- A `tool_use` block's `caller` (programmatic tool calling: the code execution that made the
  call) is kept as metadata `caller`, and its `toolset_name` (a tool of an MCP toolset) as
  metadata `toolset_name`: the next turn sends both back on the call's block.
- A text block's citations (a `citations` list on its start, then each `citations_delta`'s
  `citation`, in order, as the `anthropic` SDK's accumulator appends them) go with the block's
  place (`Sink._keep_citation`), on the calls or, in a turn with none, in `text_places`: the
  next turn sends the block back with them. Counted toward `max_stream_bytes` as assistant
  text is; as on the raw SSE path.
- Usage is merged: `message_start` brings input tokens, `message_delta` the output tokens.
- The code-execution container the response runs in (`container`, on `message_start`'s
  message or `message_delta`'s delta, as the SDK's accumulator reads it) is told by its id
  (`ChunkInfo.container`): a `pause_turn` is continued in it. One of another shape tells
  nothing, as on the raw SSE path.
- `thinking` and `redacted_thinking` blocks are kept for the next request
  (`Assembler.reasoning`), as on the raw SSE path (`rust/src/envelope/thinking.rs` says how):
  a block only once it stopped whole (signed, or with its data), its bytes counted toward
  `max_stream_bytes` from the first one (`Sink._keep_text`) and given back if it is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from toolwire.formats._fields import (
    arguments_of,
    copy_usage,
    get,
    is_object,
    malformed_envelope,
    malformed_record,
    merge_usage,
    plain,
    position_of,
    str_or_none,
)
from toolwire.formats._reasoning import (
    Thought,
    cite,
    close,
    drop,
    hold,
    hold_block,
    item_value,
    keep_block,
    read_input,
    sign,
    think,
    value_json,
)
from toolwire.formats._replay import ReplayedText
from toolwire.formats._types import (
    Arguments,
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
from toolwire.formats._utf16 import Utf16, escape_lone_surrogates

__all__ = ["AnthropicMessagesAdapter"]

# The kinds of event a message is made of (`ping` aside), as the raw path reads them.
_MESSAGE_EVENTS = frozenset(
    (
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    )
)


@dataclass(slots=True)
class _Block:
    # The block's `input` as the core takes it (`arguments_of`), fed only if no fragment comes;
    # None when there was none, when it was not kept, and once a fragment came.
    placeholder: object
    # The bytes of `placeholder` the core counts while it is held (`Sink._set_aside`).
    aside: int = 0
    fragments: bool = False
    # A fragment held more than JSON whitespace: only then did the input start.
    content: bool = False
    # The block's id, to know the block sent again after a reconnect.
    id: str | None = None


@dataclass(slots=True)
class _State:
    blocks: dict[int, _Block] = field(default_factory=lambda: {})
    # Open blocks that are not `tool_use` (text, thinking, server tools): not ours.
    others: set[int] = field(default_factory=lambda: set())
    # Open text blocks: a `citations_delta` is one's own.
    texts: set[int] = field(default_factory=lambda: set())
    usage: dict[str, Any] = field(default_factory=lambda: {})
    # A tool block that stopped with no input, whose end waits for the next event: its index
    # and its placeholder (one that says nothing, so none is held), and the block's id.
    empty: tuple[int | None, object, str | None] | None = None
    # The highest block index an event gave, for a block start without one.
    highest: int | None = None
    # Reasoning blocks still streaming, by index.
    thoughts: dict[int, Thought] = field(default_factory=lambda: {})
    # `message_start` came: another one replays the response.
    started: bool = False
    # Reasoning blocks kept in this response: a tool block is told how many came before it.
    kept: int = 0

    def note(self, index: int | None) -> None:
        """Remembers an index an event gave."""
        if index is not None and (self.highest is None or index > self.highest):
            self.highest = index


class AnthropicMessagesAdapter:
    """Per-stream state for Messages events (`RawMessageStreamEvent` variants or dicts)."""

    format: WireFormat = "anthropic"

    __slots__ = ("_gave_up", "_state", "_text", "_utf16")

    def __init__(self) -> None:
        """Start with no content blocks seen."""
        self._state = _State()
        self._utf16 = Utf16()
        self._gave_up = False
        self._text = ReplayedText()

    def handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        """Translate one event.

        Args:
            chunk: A Messages stream event or a dict of the same shape.
            sink: Receives `feed` / `end` / `stop` calls.

        Returns:
            The event's text, feeds, stop reason and (merged) usage.
        """
        info = self._handle(chunk, sink)
        if info.text:
            info.text = self._text.take(info.text, keep=sink._may_hold(0))  # pyright: ignore[reportPrivateUsage]
        return after_provider_error(info, sink) if self._gave_up else info

    def _handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        info = ChunkInfo()
        kind = get(chunk, "type")
        if malformed_envelope(chunk):
            return unreadable(info, sink)
        # An event whose type reads, but whose block or delta does not, still says that the
        # message went on past a tool block that stopped with no input, as on the raw SSE
        # path: that block is a call without parameters, ended before the event is lost.
        malformed = _malformed(chunk, kind)
        held = self._state.empty
        # Only an event of the message says it went on: the raw path skips one of a kind no
        # Anthropic stream has, and a `ping` tells nothing either way.
        if (
            held is not None
            and isinstance(kind, str)
            and (kind in _MESSAGE_EVENTS or kind == "error")
        ):
            replay = _replay_of(held, kind, chunk)
            if replay != "before":
                self._state.empty = None
            reason = None if malformed else str_or_none(get(get(chunk, "delta"), "stop_reason"))
            # An error is no sign that the message went on: the provider gave up, the block is
            # left open for the error to stop, as when the SDK raises the event instead.
            if (
                replay == "no"
                and kind != "error"
                and not (kind == "message_delta" and reason and is_limit(reason))
            ):
                # The message went on: a call of a tool without parameters.
                self._end_block(held[0], held[1], sink, info)
        if malformed:
            return unreadable(info, sink)
        if kind == "content_block_delta":
            self._delta(chunk, sink, info)
        elif kind == "content_block_start":
            self._start(chunk, sink, info)
        elif kind == "content_block_stop":
            self._stop(chunk, sink, info)
        elif kind == "message_start":
            self._text.start()
            if self._state.started:
                # The response comes again from its start, its reasoning blocks too.
                sink._forget_reasoning()  # pyright: ignore[reportPrivateUsage]
                self._state.kept = 0
            self._state.started = True
            message = get(chunk, "message")
            self._usage(get(message, "usage"), info)
            info.container = _container_id(get(message, "container"))
        elif kind == "message_delta":
            self._usage(get(chunk, "usage"), info)
            info.container = _container_id(get(get(chunk, "delta"), "container"))
            reason = str_or_none(get(get(chunk, "delta"), "stop_reason"))
            if reason:
                info.finish_reason = reason
                if stops_calls(reason):
                    sink.stop(reason)
                elif is_limit(reason):
                    sink.limit_reached()
        elif kind == "error":
            gave_up(info, sink, get(chunk, "error"))
            self._gave_up = True
        return info

    def _start(self, event: object, sink: Sink, info: ChunkInfo) -> None:
        state = self._state
        index = position_of(get(event, "index"))
        if index is None and state.highest is not None:
            # No index: the next after the highest the stream gave (a start that lost its index
            # while its deltas keep theirs), as on the raw SSE path.
            index = state.highest + 1
        elif index is None:
            # In a stream that gives none, the number of blocks open, as on the raw SSE path
            # (start, deltas and stop then pair up one block at a time).
            index = len(state.blocks) + len(state.others)
        else:
            state.note(index)
        block = get(event, "content_block")
        if block is None:
            # A start without its block (missing or null) says nothing of it: the deltas that
            # follow are kept as those of a block whose start never came (quirk 32), as on the
            # raw SSE path, rather than dropped as another kind of block's.
            return
        block_type = get(block, "type")
        # A block restarting at an index still open (a translator that reuses indexes and
        # skips `content_block_stop`) replaces it, whatever its type, as on the raw SSE path.
        replaced = state.blocks.pop(index, None)
        if replaced is not None and replaced.aside:
            sink._release(replaced.aside)  # pyright: ignore[reportPrivateUsage]
        thought = state.thoughts.pop(index, None)
        if thought is not None:
            drop(thought, sink)
        state.others.discard(index)
        state.texts.discard(index)
        if block_type != "tool_use":
            state.others.add(index)
        if block_type in ("thinking", "redacted_thinking"):
            _start_thought(state, index, block, block_type == "redacted_thinking", sink)
            return
        if block_type == "text":
            sink._text_block()  # pyright: ignore[reportPrivateUsage]
            state.texts.add(index)
            text = get(block, "text")
            if isinstance(text, str):
                info.text += text
            citations = get(block, "citations")
            if isinstance(citations, (list, tuple)):
                for citation in cast("list[object]", citations):
                    cite(citation, sink)
            return
        if block_type != "tool_use":
            _start_server_block(state, index, block, sink)
            return
        wire_id = str_or_none(get(block, "id"))
        name = str_or_none(get(block, "name"))
        self._utf16.forget(sink, index)
        ordinal = self._utf16.feed(sink, index, id=wire_id, name=name, start=True)
        info.feeds.append(FeedRecord(ordinal, wire_id, name))
        if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            # The response was refused whole: its blocks keep nothing (their deltas and stop
            # find no block, and the core keeps none of it), as on the raw SSE path.
            return
        if state.kept:
            # Interleaved thinking: the next turn sends the blocks back in their places.
            sink.set_metadata(index, "reasoning_before", state.kept)
        caller = plain(get(block, "caller"))
        if isinstance(caller, dict):
            # Programmatic tool calling: the next turn sends it back on the call's block.
            sink.set_metadata(index, "caller", caller)
        toolset = get(block, "toolset_name")
        if isinstance(toolset, str):
            # A tool of an MCP toolset: the next turn sends the call back with its toolset.
            sink.set_metadata(index, "toolset_name", toolset)
        started = self._placeholder(index, get(block, "input"), sink)
        # A blank id (`""`, `"null"`) names no block, as on the raw path.
        started.id = wire_id if wire_id not in (None, "", "null") else None
        state.blocks[index] = started

    @staticmethod
    def _placeholder(index: int, placeholder: object, sink: Sink) -> _Block:
        """A tool block with its `input`, set aside as the core will take it; an input that
        passes a limit is not kept (the core made the call `too_large`, or refused the
        response), as on the raw SSE path."""
        arguments = arguments_of(plain(placeholder))
        if arguments is None or arguments == {} or arguments == "":
            # It says nothing: nothing to hold, as its text is known.
            return _Block(arguments)
        if isinstance(arguments, str):
            # Written as the raw SSE path keeps it: a lone surrogate as its escape.
            arguments = escape_lone_surrogates(arguments)
        aside = sink._set_aside(index, arguments)  # pyright: ignore[reportPrivateUsage]
        return _Block(None) if aside is None else _Block(arguments, aside)

    def _delta(self, event: object, sink: Sink, info: ChunkInfo) -> None:
        delta = get(event, "delta")
        # The index of every delta counts toward the highest the stream gave, text and kinds
        # unknown here included, as on the raw SSE path: a later block start without an index
        # takes the next one.
        given = position_of(get(event, "index")) if is_object(delta) else None
        self._state.note(given)
        delta_type = get(delta, "type")
        if delta_type == "text_delta":
            text = get(delta, "text")
            if isinstance(text, str):
                info.text += text
            return
        if delta_type in ("thinking_delta", "signature_delta"):
            thought = self._state.thoughts.get(given or 0)
            if thought is None or thought.block is not None:
                return
            if delta_type == "thinking_delta":
                piece = get(delta, "thinking")
                if isinstance(piece, str):
                    think(thought, piece, sink)
            else:
                signature = get(delta, "signature")
                if isinstance(signature, str):
                    sign(thought, signature, sink)
            return
        if delta_type != "input_json_delta":
            # Looked for only here: a call's fragment and text pay nothing for them.
            if delta_type == "citations_delta":
                if (given or 0) in self._state.texts:
                    cite(get(delta, "citation"), sink)
            elif delta_type == "compaction_delta":
                thought = self._state.thoughts.get(given or 0)
                if thought is not None and thought.block is not None:
                    _compact(thought, thought.block, delta, sink)
            return
        # A missing index is block 0, as on the raw SSE path.
        index = given or 0
        fragment = get(delta, "partial_json")
        if index in self._state.others:
            thought = self._state.thoughts.get(index)
            if thought is not None and thought.block is not None and isinstance(fragment, str):
                # A server tool's input, kept with its block.
                think(thought, fragment, sink)
            return
        if fragment is not None and not isinstance(fragment, str):
            # Arguments sent as a value, not text: ignored, they left the call `{}`, a call
            # that runs. A field of the wrong type makes the event unread, as on the raw path.
            unreadable(info, sink)
            return
        if not fragment:
            return
        # A fragment for a block whose start never came is kept (quirk 32), as on the raw SSE
        # path: the call then reports its missing name instead of vanishing.
        block = self._state.blocks.get(index)
        if block is not None:
            if block.aside:
                # The input of the block's start is not used now: given back at once, before
                # the fragment is counted, so both are never counted together.
                sink._release(block.aside)  # pyright: ignore[reportPrivateUsage]
                block.aside = 0
            block.placeholder = None
            block.fragments = True
            block.content = block.content or bool(fragment.strip(" \t\n\r"))
        ordinal = self._utf16.fragment(sink, index, fragment)  # quirk 41
        if ordinal is not None:
            info.feeds.append(FeedRecord(ordinal, None, None))

    def _stop(self, event: object, sink: Sink, info: ChunkInfo) -> None:
        given = position_of(get(event, "index"))
        self._state.note(given)
        index = given or 0
        self._state.others.discard(index)
        self._state.texts.discard(index)
        thought = self._state.thoughts.pop(index, None)
        if thought is not None and _end_thought(thought, sink):
            self._state.kept += 1
        block = self._state.blocks.pop(index, None)
        if block is None:
            return
        placeholder = block.placeholder
        if not block.content and (placeholder is None or placeholder == {} or placeholder == ""):
            self._state.empty = (index, placeholder, block.id)
            return
        self._end_block(index, placeholder, sink, info, block.aside)

    def _end_block(
        self, index: int | None, placeholder: object, sink: Sink, info: ChunkInfo, aside: int = 0
    ) -> None:
        # The placeholder is the input only when no fragment came (a server that sends the
        # whole input at start, or `{}` for a tool without parameters).
        if placeholder is not None:
            if aside:
                # Given back first: fed, the same bytes are counted as the call's own.
                sink._release(aside)  # pyright: ignore[reportPrivateUsage]
            ordinal = sink.feed(index, arguments=cast("Arguments", placeholder))
            info.feeds.append(FeedRecord(ordinal, None, None))
        self._utf16.release(sink, index)
        sink.end(index)

    def flush(self, sink: Sink) -> None:
        """The stream ends: hand the core what is still held (an unpaired surrogate half).

        A tool block that stopped without input just before the end is left open: if the
        stream broke off there, the interruption makes it `truncated`; otherwise `finish`
        completes it as `{}`, as any open call without arguments.
        """
        self._utf16.flush(sink)

    def _usage(self, usage: object, info: ChunkInfo) -> None:
        if usage is None:
            return
        # message_delta repeats some counters as null; a null must not erase a known count.
        merged = merge_usage(self._state.usage, usage)
        # A usage that is no object counts nothing (`merge_usage` hands back what it had): the
        # stream's usage stays unknown, as on the raw path, rather than an empty one.
        if isinstance(merged, dict) and merged is not self._state.usage:
            self._state.usage = merged
            info.usage = copy_usage(merged)


def _start_thought(state: _State, index: int, block: object, redacted: bool, sink: Sink) -> None:
    """A reasoning block starts, with its `thinking` (or `data`) and `signature`; nothing is
    kept once the response is refused."""
    if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
        return
    thought = Thought(redacted)
    first = get(block, "data" if redacted else "thinking")
    if isinstance(first, str):
        think(thought, first, sink)
    signature = get(block, "signature")
    if isinstance(signature, str):
        sign(thought, signature, sink)
    state.thoughts[index] = thought


def _start_server_block(state: _State, index: int, block: object, sink: Sink) -> None:
    """A server tool's call or result starts: held whole (`hold_block`), never a call."""
    thought = hold_block(item_value(block), sink)
    if thought is not None:
        state.thoughts[index] = thought


def _compact(thought: Thought, block: dict[str, Any], delta: object, sink: Sink) -> None:
    """A `compaction_delta` sets the block's `content` and `encrypted_content`, a member the
    delta lacks to null, as the `anthropic` SDK's accumulator does; the block is counted anew."""
    if block.get("type") != "compaction" or thought.dead:
        return
    old = len(value_json(block).encode())
    thought.counted -= old
    sink._release(old)  # pyright: ignore[reportPrivateUsage]
    for name in ("content", "encrypted_content"):
        value = get(delta, name)
        block[name] = value if isinstance(value, str) else None
    hold(thought, len(value_json(block).encode()), sink)


def _end_server_block(thought: Thought, block: dict[str, Any], text: str, sink: Sink) -> bool:
    """A server block stopped: kept with its input (`text`, its `input_json_delta`s); left out
    when its input is no JSON value. Whether it was kept."""
    if text.strip(" \t\n\r"):
        try:
            block["input"] = read_input(text)
        except ValueError:
            drop(thought, sink)
            return False
    return keep_block(thought, block, sink)


def _end_thought(thought: Thought, sink: Sink) -> bool:
    """The block stopped: kept when whole (signed, or with its data), else let go; whether it
    was kept."""
    text = close(thought, sink)
    if thought.block is not None:
        return _end_server_block(thought, thought.block, text, sink)
    whole = bool(text) if thought.redacted else bool(thought.signature)
    # Once the response is refused, no block is kept, even one counted in full before.
    if not whole or thought.dead or not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
        drop(thought, sink)
        return False
    sink._keep_reasoning(text, None if thought.redacted else thought.signature)  # pyright: ignore[reportPrivateUsage]
    return True


def _replay_of(held: tuple[int | None, object, str | None], kind: object, event: object) -> str:
    """How event `kind` relates to the tool block `held` (stopped with no input, waiting for the
    next event to say whether the message went on), as the raw path's `replay_of` reads it:
    `before` for the message sent again after a reconnect up to that block (`message_start`,
    an earlier block's event), whose wait goes on; taken as the message going on, the block
    was a call without parameters, and the limit or error after the replay no longer cut it.
    `same` for the block's own start again (same index, same id), which replaces it; else
    `no`."""
    if kind == "message_start":
        return "before"
    if kind not in ("content_block_start", "content_block_delta", "content_block_stop"):
        return "no"
    index, _, held_id = held
    given = position_of(get(event, "index"))
    if given is None or index is None:
        return "no"
    if given < index:
        return "before"
    if given == index and kind == "content_block_start":
        block = get(event, "content_block")
        wire_id = str_or_none(get(block, "id"))
        if get(block, "type") == "tool_use" and held_id is not None and wire_id == held_id:
            return "same"
    return "no"


def _container_id(container: object) -> str | None:
    """The id of a `container` (an SDK model or a dict), if it names one."""
    named = get(container, "id")
    return named if isinstance(named, str) and named else None


def _malformed(event: object, kind: object) -> bool:
    """Whether an Anthropic event has a shape the raw SSE path's decoder refuses beyond
    `malformed_envelope`'s: a `delta` or `content_block` that is not an object, a block whose
    `type`, `id` or `name` is not a string (a `type` that is null or missing included), a
    delta whose `type` or `stop_reason` is not a string, or a `message_start` whose `message`
    is not an object. A block start read past such a field
    would be no `tool_use` block, and its fragments would be dropped without a word, where the
    raw path keeps them as those of a block whose start was lost."""
    if kind == "message_start":
        return malformed_record(get(event, "message"), ())
    if kind == "content_block_start":
        block = get(event, "content_block")
        if block is not None and get(block, "type") is None:
            return True
        return malformed_record(block, ("type", "id", "name"))
    if kind not in ("content_block_delta", "message_delta"):
        return False
    return malformed_record(get(event, "delta"), ("type", "stop_reason"))
