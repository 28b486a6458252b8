"""The public `Assembler`: the compiled core plus `feed_chunk` for SDK objects and dicts."""

from __future__ import annotations

import json
import re
from typing import Any, cast

from toolwire import _core
from toolwire._pickling import LiveState
from toolwire.formats import (
    ChunkInfo,
    FormatAdapter,
    WireFormat,
    detect_format,
    helper_chunk,
    is_error_event,
    make_adapter,
)
from toolwire.formats._fields import get
from toolwire.formats._types import after_provider_error, gave_up, unreadable
from toolwire.formats._utf16 import replace_lone_surrogates, text_piece
from toolwire.formats.openai_chat import ChatCompletionsAdapter
from toolwire.formats.whole import unread_json_answer, whole_response_events

__all__ = ["Assembler", "read_chunks_as"]

# Per-stream format state lives in the instance __dict__ (the core class is a subclassable
# pyclass) under this key, created on the first meaningful chunk, so the core's constructor
# signature is inherited unchanged.
_ADAPTER = "_toolwire_adapter"
# The high surrogate that ended the last text piece, waiting for its other half.
_TEXT_HALF = "_toolwire_text_half"
# Present once a chunk carried a finish reason (or the provider's error).
_FINISH_SEEN = "_toolwire_finish_seen"
# Present once the provider gave up before any chunk told the stream's format.
_GAVE_UP_EARLY = "_toolwire_gave_up_early"
# How many chunks `feed_chunk` took: the event number of the stream errors it tells.
_CHUNKS = "_toolwire_chunks"
# Set while a `feed_chunk` runs (see there).
_INSIDE = "_toolwire_inside"
# Present once `stream_errors` has the chunk that took the response past a per-stream limit.
_LIMIT_TOLD = "_toolwire_limit_told"
# A line of an SSE body that starts an event's field, as the text of the body holds them.
_SSE_FIELD = re.compile(r"(?:^|\n)\ufeff?(?:data|event):")
# Characters of assistant text `feed_chunk` handed out so far: where a text block starts.
_SAID = "_toolwire_said"


class Assembler(_core.Assembler, LiveState):
    """Assembles one stream's tool calls; see `_core.Assembler` for the delta-level API.

    Adds `feed_chunk` for whole provider chunks: OpenAI Chat Completions chunks, Responses
    events, Anthropic Messages events and Gemini `GenerateContentResponse` chunks, as SDK objects
    or as dicts of the same shape, and the Bedrock ConverseStream event dicts boto3 yields. The
    format is detected from the first chunk that tells it and then fixed for the stream.

    Example:
        >>> asm = Assembler()  # doctest: +SKIP
        >>> for chunk in client.chat.completions.create(..., stream=True):  # doctest: +SKIP
        ...     asm.feed_chunk(chunk)
        >>> calls = asm.finish()  # doctest: +SKIP
    """

    _not_copied = (
        "it holds a stream's native state. Pickle its finished calls or their outcomes instead"
    )

    def interrupt(self, reason: str, /) -> None:
        """The transport broke off: calls with no argument text yet become `truncated`, and
        fragments an open call still holds two ways are read as appended (`_core.Assembler`).

        After a Chat choice's finish reason that ended it as a whole answer (`stop`,
        `tool_calls`), only the calls that started after that reason: Chat sends no end event
        per call, so that reason ends every call there is, and a break after it (the usage
        chunk or `[DONE]` lost) cuts none of them, as a break after Anthropic's
        `message_delta` or Gemini's last chunk cuts none.

        Args:
            reason: Why the stream broke off.

        Raises:
            MisuseError: The assembler was already finished.
        """
        ended = None if self.finished else chat_ended_calls(self)
        if ended is None:
            super().interrupt(reason)
        else:
            self._interrupt_from(ended, reason)

    @property
    def chunk_format(self) -> WireFormat | None:
        """The wire format detected by `feed_chunk`, or `None` before the first telling chunk."""
        adapter: FormatAdapter | None = self.__dict__.get(_ADAPTER)
        return None if adapter is None else adapter.format

    def feed_chunk(self, chunk: object) -> ChunkInfo:
        """Feed one provider chunk: route its tool-call deltas into the assembler.

        Args:
            chunk: A `ChatCompletionChunk`, a Responses stream event, an Anthropic
                `RawMessageStreamEvent`, a google-genai `GenerateContentResponse`, or a dict of
                the same shape; or a Bedrock ConverseStream event dict. What an SDK stream
                helper yields is read too: the chunk inside openai's `chunk` event, and none
                of the events the helpers derive from the chunks (`content.delta`,
                `input_json`, ...), which return an empty `ChunkInfo` and are not numbered.
                A whole, non-streamed `ChatCompletion`, `Response` or `Message` (or its dict)
                is read as the stream that would have carried it, its events numbered.

        Returns:
            The chunk's assistant text, the `feed` calls it caused (ordinal, id, name), its
            finish reason and usage, and the provider's error if it gave up in this chunk. A
            chunk that does not tell its format before any format is known is ignored and
            returns an empty `ChunkInfo`. A chunk that is not an object (`None`, a number, a
            string, a list: an SSE event whose data is such JSON) makes the calls still open
            `lost_event`, as on the raw path. As there, `stream_errors()` tells a provider's
            error, a chunk that could not be read and a Responses summary that differs from
            its call's deltas, numbering the chunks from 1.

        Raises:
            MisuseError: The assembler was already finished, another thread's call is inside
                it, or `chunk` is bytes or the text of SSE lines (`data: ...`, as
                `response.iter_text()` and `iter_lines()` give the body): a raw body, which
                `feed_sse` reads.
        """
        if self.finished:
            # A chunk of text alone would touch no call, and so raise nowhere in the core.
            raise _core.MisuseError("already finished: create a new one for the next stream")
        if isinstance(chunk, (bytes, bytearray, memoryview)):
            # No SDK yields bytes for an event (its data is JSON: an object, a string, a
            # number, a list), so these are the body's own bytes, `assemble(r.iter_bytes())`:
            # read as a chunk of no format known, every call in them vanished without a word.
            raise _core.MisuseError(
                "feed_chunk takes one decoded chunk (an SDK event or a dict), not "
                f"{type(cast(object, chunk)).__name__}: feed the raw bytes of an SSE body "
                "to feed_sse"
            )
        state: dict[str, Any] = self.__dict__
        # The adapter's state lives here, in Python, where the core's borrow check does not
        # reach: a second thread inside it at once would interleave two chunks' halves.
        # `setdefault` is one step under the GIL, so only one caller finds its own token.
        token = object()
        if state.setdefault(_INSIDE, token) is not token:
            raise _core.MisuseError(
                "another thread's call is inside this assembler: one assembler serves one stream"
            )
        try:
            return self._feed_chunk(chunk, state)
        finally:
            del state[_INSIDE]

    def _feed_chunk(self, chunk: object, state: dict[str, Any]) -> ChunkInfo:
        if chunk is not None:
            chunk = helper_chunk(chunk)
            if chunk is None:
                # Not counted: the chunks are numbered as `create(stream=True)` yields them.
                return ChunkInfo()
        if chunk is None or isinstance(chunk, (bool, int, float, str, list)):
            if isinstance(chunk, str) and _SSE_FIELD.search(chunk):
                # The body as text (`response.iter_text()`, `iter_lines()`), not the data of
                # one event: read as such, every call in it vanished without a word.
                raise _core.MisuseError(
                    "feed_chunk takes one decoded chunk (an SDK event or a dict), not SSE "
                    "text: feed the raw bytes of the body (response.iter_bytes()) to feed_sse"
                )
            number = state[_CHUNKS] = state.get(_CHUNKS, 0) + 1
            # An event whose data is JSON but not an object (`data: 123`): the SDKs hand it on
            # as it is, and the raw SSE path reads it as a malformed event. It may have carried
            # part of a call, so the calls still open must not run, on both paths.
            info = unreadable(ChunkInfo(), self)
            _tell(self, number, info, f"not an object ({type(cast(object, chunk)).__name__})")
            return info
        number = state[_CHUNKS] = state.get(_CHUNKS, 0) + 1
        adapter: FormatAdapter | None = state.get(_ADAPTER)
        if adapter is None:
            fmt = detect_format(chunk)
            if fmt is None:
                whole = whole_response_events(chunk)
                if whole is not None:
                    # A whole response (the server did not stream): read as the events that
                    # would have carried it, each numbered as a chunk of its own.
                    state[_CHUNKS] = number - 1
                    return _merged([self._feed_chunk(event, state) for event in whole])
                if not is_error_event(chunk):
                    if unread_json_answer(chunk):
                        # Not a chunk of a stream but all google-genai made of a JSON answer:
                        # told, so that the stream does not end empty without a word.
                        self._stream_error(
                            "truncated_body",
                            number,
                            "the server answered a JSON document, not an event stream: "
                            "google-genai read no response from it",
                        )
                    return ChunkInfo()
                # The provider gave up first: whatever the format turns out to be, what follows
                # is in no response an SDK shows (it raises here), and no call of it may run.
                error = get(chunk, "error")
                info = gave_up(ChunkInfo(), self, chunk if error is None else error)
                _tell(self, number, info)
                state[_GAVE_UP_EARLY] = True
                state[_FINISH_SEEN] = True
                return info
            adapter = _read_chunks_as(self, fmt)
        try:
            info = adapter.handle(chunk, self)
        except RecursionError:
            # A chunk nested deeper than Python's stack lets an adapter walk it: unreadable, as
            # the raw path reads an event past its JSON reader's depth. Its calls still open may
            # have lost a fragment and must not run; the stream goes on.
            info = unreadable(ChunkInfo(), self)
            _tell(self, number, info, "nested too deep to read")
            return info
        _tell(self, number, info)
        if _GAVE_UP_EARLY in state:
            info = after_provider_error(info, self)
        if info.finish_reason is not None:
            state[_FINISH_SEEN] = True
            # A lone surrogate in the reason is U+FFFD, as the raw SSE path reads its escape.
            info.finish_reason = replace_lone_surrogates(info.finish_reason)
        text = info.text
        if text:
            half = ""
            if text.isascii() and _TEXT_HALF not in state:
                size = len(text)
            else:
                text, half = text_piece(state.pop(_TEXT_HALF, ""), text)
                size = len(text.encode())
            # Counted as the raw SSE path counts the text it reads, a surrogate half held for
            # the next chunk only once paired: a response past its byte limit is refused whole
            # on both paths, and its later text (the other half too) is not kept on either.
            if not self._keep_text(size):
                info.text = ""
            else:
                info.text = text
                if half:
                    state[_TEXT_HALF] = half
            if info.text:
                state[_SAID] = state.get(_SAID, 0) + len(info.text)
        if _LIMIT_TOLD not in state and not self._may_hold(0):
            note_limit(self, number)
        return info

    def _text_block(self, pending: int = 0, /) -> None:
        """A text block starts in this chunk, after `pending` characters of its text: its
        place among the calls and reasoning blocks goes on the calls at finish (metadata
        `text_before`, `text_after`), as `feed_sse` places the blocks it reads."""
        self._mark_text_block(self.__dict__.get(_SAID, 0) + pending)

    def text_tail(self) -> str:
        """Text still owed by `feed_chunk` at the end: U+FFFD for a held, unpaired surrogate half.

        Returns:
            `""` or `"\ufffd"`; asking ends the wait for the other half.
        """
        return "\ufffd" if self.__dict__.pop(_TEXT_HALF, None) else ""


# `feed` of its own: called through the core class's, CPython checked every fragment's
# assembler against that class by walking this one's MRO.
_core._install_feed(Assembler)


def chat_ended_calls(asm: Assembler) -> int | None:
    """How many calls the Chat choice `asm` assembles had when its latest finish reason before
    any provider error ended it as a whole answer (`stop`, `tool_calls`), on the path that fed
    it (`feed_chunk`'s adapter, or the raw SSE path): those calls all ended, and neither a break
    nor a provider error after it cuts or stops one; a call that started later can be. None
    when no such reason came (or the stream is no Chat stream)."""
    adapter = asm.__dict__.get(_ADAPTER)
    if adapter is not None:
        return adapter.ended if isinstance(adapter, ChatCompletionsAdapter) else None
    return asm._chat_ended_calls  # pyright: ignore[reportPrivateUsage]


def chat_reopened_calls(asm: Assembler) -> list[int]:
    """The calls below `chat_ended_calls(asm)` that argument text came for after that finish
    reason on `feed_chunk`'s path (the SDK's chunks): an error the SDK raises stops them too."""
    adapter = asm.__dict__.get(_ADAPTER)
    return adapter.reopened if isinstance(adapter, ChatCompletionsAdapter) else []


def _read_chunks_as(asm: Assembler, fmt: WireFormat) -> FormatAdapter:
    """Makes `feed_chunk` read `asm`'s chunks as `fmt` from now on, and returns the adapter."""
    adapter = make_adapter(fmt)
    asm.__dict__[_ADAPTER] = adapter
    # What the adapter still holds at the end (half of a surrogate pair) is fed when `finish`
    # starts, and a stream without a finish reason is cut there; a hook, so that streams fed
    # by `feed` pay nothing for it.
    asm._flush_before_finish(_end_of_chunks)
    return adapter


def fed_past_limit(asm: Assembler) -> bool:
    """True once a chunk fed by `feed_chunk` took `asm`'s response past a per-stream limit
    (`max_calls`, `max_stream_bytes`): nothing more of it is kept, every call fails, and
    `stream_errors()` says `stream_limit`. A dict lookup, cheap enough to ask after each chunk."""
    return _LIMIT_TOLD in asm.__dict__


def note_limit(asm: Assembler, number: int) -> None:
    """Tells `stream_errors` that chunk `number` took `asm`'s response past a per-stream limit
    (`fed_past_limit` is True from then on). Asked once, when it happened: by `feed_chunk`, and
    by a stream wrapper whose count of a JSON answer's body passed `max_stream_bytes`."""
    _tell_limit(asm, number)
    asm.__dict__[_LIMIT_TOLD] = True


def read_chunks_as(asm: Assembler, fmt: WireFormat) -> None:
    """Makes `asm.feed_chunk` read every chunk as `fmt`, for a caller that knows the format
    (a recorded stream): chunks are not sniffed, and the end-of-stream rules apply as usual.

    Raises:
        MisuseError: `asm` already reads chunks of a format.
    """
    if _ADAPTER in asm.__dict__:
        raise _core.MisuseError("the assembler already reads chunks of a format")
    _read_chunks_as(asm, fmt)


def _tell(
    asm: Assembler, number: int, info: ChunkInfo, unread: str = "a field of the wrong type"
) -> None:
    """Tells `stream_errors` what chunk `number` said of the stream, as the raw SSE path tells
    it of an event: the provider's error, or that the chunk could not be read (`unread` says
    why)."""
    if info.error is not None:
        asm._stream_error("provider_error", number, _error_text(info.error))  # pyright: ignore[reportPrivateUsage]
    elif info.malformed:
        asm._stream_error("malformed_event", number, f"malformed event: {unread}")  # pyright: ignore[reportPrivateUsage]
    if info.arguments_mismatch is not None:
        asm._stream_error("arguments_mismatch", number, info.arguments_mismatch)  # pyright: ignore[reportPrivateUsage]
    if info.other_choices:
        adapter = asm.__dict__.get(_ADAPTER)
        chosen = adapter.choice if isinstance(adapter, ChatCompletionsAdapter) else None
        for index in info.other_choices:
            asm._other_choice(number, 0 if chosen is None else chosen, index)  # pyright: ignore[reportPrivateUsage]


def _merged(infos: list[ChunkInfo]) -> ChunkInfo:
    """What the events a whole response stands for carried, as one chunk's `ChunkInfo`: their
    text and feeds in order, the last finish reason, usage and error each told."""
    merged = ChunkInfo()
    for info in infos:
        merged.text += info.text
        merged.feeds += info.feeds
        merged.other_choices += info.other_choices
        merged.malformed = merged.malformed or info.malformed
        merged.finish_reason = info.finish_reason or merged.finish_reason
        merged.usage = merged.usage if info.usage is None else info.usage
        merged.container = info.container or merged.container
        merged.error = merged.error if info.error is None else info.error
        merged.arguments_mismatch = info.arguments_mismatch or merged.arguments_mismatch
    return merged


def _tell_limit(asm: Assembler, number: int) -> None:
    """Tells `stream_errors` that chunk `number` took the response past a per-stream limit, as
    the raw SSE path names the event that did; without it the limit is told at event 0."""
    for kind, _, message in asm.stream_errors():
        if kind == "stream_limit":
            asm._stream_error(kind, number, message)  # pyright: ignore[reportPrivateUsage]
            return


def _error_text(error: object) -> str:
    """A provider's error object as compact JSON, the text the raw SSE path keeps of it (for
    people: an object that cannot be written as JSON is written as far as it can)."""
    try:
        dump = getattr(error, "model_dump", None)
        data = dump(mode="json") if callable(dump) else error
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        try:
            text = repr(error)
        except RecursionError:
            text = f"<{type(error).__name__} nested too deep to write>"
    # A lone surrogate cannot cross into the core's UTF-8 text.
    return text.encode("utf-8", "replace").decode()


def _end_of_chunks(asm: Assembler) -> None:
    """`finish` of a stream fed by `feed_chunk` starts: the adapter hands over what it holds,
    and a stream that never carried a finish reason broke off (quirk 38), however its
    transport ended, so its open calls with empty or incomplete arguments are cut, as the raw
    SSE path cuts them at the end of such a body."""
    state: dict[str, Any] = asm.__dict__
    adapter: FormatAdapter = state[_ADAPTER]
    adapter.flush(asm)
    if _FINISH_SEEN not in state:
        asm.interrupt("the stream ended without a finish reason")
