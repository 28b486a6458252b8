"""OpenAI Chat Completions chunks (and the many OpenAI-compatible servers) to assembler calls.

Design notes:
- Every `tool_calls[]` entry is one `feed`, in list order, even several for one index inside one
  chunk (quirk 6). Index, id, name, type and arguments go through untouched; the core owns the
  rules for missing/constant/negative indexes, repeated names and unstable ids (quirks 1-18).
- Fields of a tool-call entry that the SDK does not declare (Gemini's `extra_content` with its
  `thought_signature`) are kept per call with `set_metadata`, an unpaired surrogate in a name
  as U+FFFD. An entry that carries nothing but such fields only sets metadata: it must never
  open a call (quirk 31).
- Only one choice is assembled, the first the stream shows, the lowest of a chunk's (0, unless
  a translator numbered a single choice otherwise, quirk 4); `n > 1` streams interleave several
  independent answers whose calls would otherwise be merged. Another choice that carries text
  or tool calls is named in `ChunkInfo.other_choices` (`stream_errors()` says `other_choice`, as
  on the raw path), so that what is not assembled is not lost unseen. Choices without `delta` (Azure
  content-filter annotations) and chunks with empty `choices` (usage-only, prompt-filter) are
  skipped (quirks 29, 30).
- A custom tool's call (`type: "custom"`) carries its name and free-form input in `custom`
  instead of `function`: `custom.input` pieces are fed as the call's text, which the core never
  reads as JSON, and an entry with `custom` and no `type` is one too, as on the raw path. An
  unpaired surrogate in that input is U+FFFD (warning `replacement_character`), as in a
  Responses custom call's, not the `\\uXXXX` escape a function's JSON arguments keep.
- The legacy `function_call` delta is fed as a call without index or id.
- `finish_reason` is reported as sent. The reasons that stop the open calls are those the raw SSE
  path stops on (`FinishReason::stops_calls` in `rust/src/envelope.rs`): `content_filter`,
  `safety` and `refusal` in any ASCII case, and a natural end (`stop`) after a `refusal` delta.
  Whether a call is usable is otherwise decided from the call itself, never from the reason
  (quirks 34-36).
- Usage members are merged over the chunks that carry usage; `null` members are left out.
- A `{"error": ...}` chunk ends the response: open calls stop, the finish reason is `error`.
  Not after a finish reason that ended the choice as a whole answer (`stop`, `tool_calls`):
  Chat has no end event per call, so that reason ended every call there was, and an error
  after it (before the usage chunk or `[DONE]`) stops none of them, as an Anthropic error stops
  no block that ended; a call that started after that reason is open, and stopped, and so is
  one that argument text (more than white space) came for after it: its text did not end
  there. Such text is still the call's, which is decided from its text (quirks 34, 35).
- A whole, non-streamed `ChatCompletion` (a server that ignored `stream=True`) has a
  `message` where a chunk has its `delta`: it is read as one delta, its calls numbered by
  their position. Only a choice without `delta` is looked at for it.
"""

from __future__ import annotations

from typing import Any, cast

from toolwire.formats._fields import (
    arguments_of,
    copy_usage,
    extras,
    get,
    malformed_envelope,
    merge_usage,
    plain,
    sdk_index_of,
    str_or_none,
)
from toolwire.formats._types import (
    ChunkInfo,
    FeedRecord,
    Sink,
    WireFormat,
    after_provider_error,
    folded_reason,
    gave_up,
    is_limit,
    stop_open_calls,
    stops_calls,
    unreadable,
)
from toolwire.formats._utf16 import Utf16, replace_lone_surrogates
from toolwire.payloads import FREE_FORM_TYPE

__all__ = ["ChatCompletionsAdapter"]

_TOOL_CALL_FIELDS = frozenset({"index", "id", "type", "function", "custom"})
# Natural ends; after a `refusal` delta they mean a refusal (as `FinishReason::Stop` in Rust).
_NATURAL_ENDS = frozenset({"stop", "end_turn", "stop_sequence", "eos", "completed"})
# Ends that hand the turn to the tools (`FinishReason::ToolCalls` in Rust).
_TOOL_ENDS = frozenset({"tool_calls", "function_call", "tool_use"})


class ChatCompletionsAdapter:
    """Per-stream state for Chat Completions chunks (`ChatCompletionChunk` or dicts)."""

    format: WireFormat = "openai-chat"

    __slots__ = ("_choice", "_ended", "_gave_up", "_refusal", "_reopened", "_usage", "_utf16")

    def __init__(self) -> None:
        """Start with no surrogate half held and no refusal seen."""
        self._utf16 = Utf16()
        # How many calls there were when the latest finish reason ended the choice as a
        # whole answer (`stop`, `tool_calls`); None while none did.
        self._ended: int | None = None
        # The calls below `_ended` that argument text came for after that finish reason:
        # their text did not end there, so a provider error after it stops them too.
        self._reopened: list[int] = []
        self._gave_up = False
        self._refusal = False
        self._usage: dict[str, Any] | None = None
        self._choice: int | None = None

    @property
    def reopened(self) -> list[int]:
        """The calls below `ended` that argument text (more than white space) came for after
        that finish reason: it did not end them."""
        return self._reopened

    @property
    def choice(self) -> int | None:
        """The index of the choice assembled, `None` before a chunk with choices came."""
        return self._choice

    @property
    def ended(self) -> int | None:
        """How many calls there were when the assembled choice's latest finish reason ended it
        as a whole answer (`stop`, `tool_calls`, ...), before any provider error: Chat has no
        end event per call, so that reason ended them all. None while none did."""
        return self._ended

    def handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        """Translate one chunk.

        Args:
            chunk: A `ChatCompletionChunk` or a dict of the same shape.
            sink: Receives `feed` / `set_metadata` / `stop` calls.

        Returns:
            The chunk's text, feeds, finish reason and usage.
        """
        info = self._handle(chunk, sink)
        return after_provider_error(info, sink) if self._gave_up else info

    def _handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        info = ChunkInfo()
        if malformed_envelope(chunk):
            return unreadable(info, sink)
        usage = get(chunk, "usage")
        if usage is not None:
            self._usage = merge_usage(self._usage, usage)
            info.usage = copy_usage(self._usage)
        choices = get(chunk, "choices")
        error = get(chunk, "error")
        if error is not None and (not isinstance(choices, list) or bool(error)):
            # A provider error inside the stream (the SDK raises it instead, even next to
            # `choices`, as OpenRouter sends it, and reads no further): calls it had not ended
            # must not run, as on the raw SSE path. A finish reason that ended the choice as a
            # whole answer ended every call: an error after it stops none.
            gave_up(info, sink, error, stop=False)
            if not self._gave_up:
                stop_open_calls(sink, self._ended, "error", self._reopened)
            self._gave_up = True
            return info
        if not isinstance(choices, list):
            return info
        indexes = [_choice_index(choice) for choice in cast("list[object]", choices)]
        if self._choice is None and indexes:
            # Of several in the stream's first choice-bearing chunk, the lowest.
            self._choice = min(indexes)
        for choice, index in zip(cast("list[object]", choices), indexes, strict=True):
            if index != self._choice:
                if _carries_content(get(choice, "delta")):
                    info.other_choices.append(index)
                continue
            delta = get(choice, "delta")
            if delta is not None:
                self._delta(delta, sink, info)
            else:
                message = get(choice, "message")
                if message is not None:
                    self._delta(_whole_message(message), sink, info)
            reason = str_or_none(get(choice, "finish_reason"))
            if reason:
                info.finish_reason = reason
                folded = folded_reason(reason)
                natural = folded in _NATURAL_ENDS
                if not self._gave_up:
                    self._ended = len(sink) if natural or folded in _TOOL_ENDS else None
                    self._reopened = []
                if stops_calls(reason) or (natural and self._refusal):
                    sink.stop(reason)
                elif is_limit(reason):
                    sink.limit_reached()
        return info

    def _delta(self, delta: object, sink: Sink, info: ChunkInfo) -> None:
        content = get(delta, "content")
        if isinstance(content, str):
            info.text += content
        tool_calls = get(delta, "tool_calls")
        if isinstance(tool_calls, list):
            for entry in cast("list[object]", tool_calls):
                # A `null` entry carries no call (the raw path skips it too).
                if entry is not None:
                    self._tool_call(entry, sink, info)
        if not self._refusal:
            # Read on tool-call deltas too, as the raw path reads it: refusal text next to a
            # call's fragment made a later `stop` a refusal there only, and the call ran here.
            refusal = get(delta, "refusal")
            self._refusal = isinstance(refusal, str) and refusal != ""
        legacy = get(delta, "function_call")
        if legacy is not None:
            self._feed(None, None, legacy, None, sink, info)

    def flush(self, sink: Sink) -> None:
        """The stream ends: hand the core what is still held (an unpaired surrogate half)."""
        self._utf16.flush(sink)

    def _tool_call(self, entry: object, sink: Sink, info: ChunkInfo) -> None:
        index = sdk_index_of(get(entry, "index"))
        function = get(entry, "function")
        # Read only for an entry without `function`: a function call's entries cost no more.
        custom = get(entry, "custom") if function is None else None
        metadata = extras(entry, _TOOL_CALL_FIELDS)
        wire_id = str_or_none(get(entry, "id"))
        kind = str_or_none(get(entry, "type"))
        if custom is not None:
            # A custom tool's call: its input pieces are its text, as `arguments` would be.
            function = {"name": get(custom, "name"), "arguments": get(custom, "input")}
            kind = kind or FREE_FORM_TYPE
        if metadata and function is None and wire_id is None and kind is None:
            _set_metadata(sink, index, metadata)
            return
        self._feed(index, wire_id, function, kind, sink, info, text=custom is not None)
        _set_metadata(sink, index, metadata)

    def _feed(
        self,
        index: int | None,
        wire_id: str | None,
        function: object,
        kind: str | None,
        sink: Sink,
        info: ChunkInfo,
        *,
        text: bool = False,
    ) -> None:
        name = str_or_none(get(function, "name"))
        arguments = arguments_of(get(function, "arguments"))
        # Through `Utf16.feed`: surrogate halves split between events are joined (quirk 41).
        # A custom tool's input (`text`) is plain text: a half left unpaired is U+FFFD.
        ordinal = self._utf16.feed(
            sink, index, id=wire_id, name=name, arguments=arguments, type=kind, text=text
        )
        info.feeds.append(FeedRecord(ordinal, wire_id, name))
        ended = self._ended is not None and ordinal < self._ended
        if ended and ordinal not in self._reopened and _says_something(arguments):
            self._reopened.append(ordinal)


def _says_something(arguments: object) -> bool:
    """Whether argument text (or a value) carries more than JSON white space."""
    if isinstance(arguments, str):
        return arguments.strip(" \t\r\n") != ""
    if isinstance(arguments, bytes):
        return arguments.strip(b" \t\r\n") != b""
    return arguments is not None


def _choice_index(choice: object) -> int:
    """A choice's `index`; a missing or unreadable one is choice 0, as the raw path reads it."""
    index = sdk_index_of(get(choice, "index"))
    return 0 if index is None else index


def _whole_message(message: object) -> dict[str, Any]:
    """A whole, non-streamed `ChatCompletion` choice's `message` (a server that ignored
    `stream=True`, or the completion handed over as it is) as the one delta that carries it:
    its tool calls numbered by their position, which a message does not send."""
    delta = plain(message)
    if not isinstance(delta, dict):
        return {}
    fields = cast("dict[str, Any]", delta)
    calls = fields.get("tool_calls")
    if isinstance(calls, list):
        fields["tool_calls"] = [
            {"index": position, **cast("dict[str, Any]", entry)}
            if isinstance(entry, dict) and "index" not in entry
            else entry
            for position, entry in enumerate(cast("list[object]", calls))
        ]
    return fields


def _carries_content(delta: object) -> bool:
    """Whether a skipped choice's delta held what the assembled choice would keep: text, a
    refusal, a tool call entry or a legacy function call (`carries_content` in
    `rust/src/envelope.rs` decides it for the raw path)."""
    if delta is None:
        return False
    content, refusal = get(delta, "content"), get(delta, "refusal")
    tool_calls = get(delta, "tool_calls")
    return (
        (isinstance(content, str) and content != "")
        or (isinstance(refusal, str) and refusal != "")
        or (
            isinstance(tool_calls, list)
            and any(entry is not None for entry in cast("list[object]", tool_calls))
        )
        or get(delta, "function_call") is not None
    )


def _set_metadata(sink: Sink, index: int | None, metadata: dict[str, object]) -> None:
    """An entry's other members as the call's metadata, in order. `json.loads` takes a name
    with an unpaired surrogate half, which the core's keys (UTF-8) cannot hold: the half is
    U+FFFD there, as the raw SSE path reads it. Two names that differ only there are one key
    then, set in turn: the later value stays, where the first came."""
    for key, value in metadata.items():
        sink.set_metadata(index, replace_lone_surrogates(key), plain(value))
