"""Types shared by the format adapters (kept apart so adapters and `detect` avoid a cycle)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

__all__ = [
    "Arguments",
    "ChunkInfo",
    "FeedRecord",
    "FormatAdapter",
    "Sink",
    "WireFormat",
    "after_provider_error",
    "folded_reason",
    "gave_up",
    "is_limit",
    "stop_open_calls",
    "stops_calls",
    "unreadable",
]

WireFormat: TypeAlias = Literal[
    "openai-chat", "openai-responses", "anthropic", "gemini", "bedrock-converse"
]
"""The wire formats toolwire reads; the same names as the raw-SSE path's `Assembler.format`
(`Format::as_str` in `rust/src/envelope.rs`), which reads every one but `bedrock-converse`: its body
is AWS event-stream binary, not SSE."""

Arguments: TypeAlias = str | bytes | dict[str, Any] | list[Any] | int | float


class Sink(Protocol):
    """What an adapter drives: the subset of `_core.Assembler` that takes envelope data."""

    def feed(
        self,
        index: int | None,
        /,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: Arguments | None = None,
        type: str | None = None,
        start: bool = False,
    ) -> int:
        """Feed one tool-call delta and return the call's ordinal."""
        ...

    def starts_call(
        self,
        index: int | None,
        /,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> bool:
        """Whether `feed` would start a new call for this delta."""
        ...

    def end(self, index: int | None, /) -> None:
        """Close the call at this wire key (a per-call stop event)."""
        ...

    def set_metadata(self, index: int | None, key: str, value: Any, /) -> None:
        """Keep an opaque provider field on the call at this wire key."""
        ...

    def stop(self, reason: str, /) -> None:
        """The provider stopped the stream; open calls must not be executed."""
        ...

    def stop_all(self, reason: str, /) -> None:
        """The provider said its calls are malformed; no call may be executed, ended or not."""
        ...

    def _stop_call(self, ordinal: int, reason: str, /) -> None:
        """The provider stopped the call at `ordinal` alone; it must not be executed."""
        ...

    def __len__(self) -> int:
        """How many calls were started."""
        ...

    def limit_reached(self) -> None:
        """The output limit was reached: the last call started, if open, was cut there."""
        ...

    def interrupt(self, reason: str, /) -> None:
        """The stream broke off: open calls with empty or incomplete arguments are cut."""
        ...

    def lose_event(self, reason: str, /) -> None:
        """An event that may have carried part of a call could not be read: the calls still
        open must not run."""
        ...

    def _may_hold(self, n: int, /) -> bool:
        """Whether `n` bytes held for an open call fit the response's limit; False once over."""
        ...

    def _tracks_progress(self) -> bool:
        """Whether progress items are recorded: an adapter records those of arguments it reads
        as values only then."""
        ...

    def _stop_progress(self, index: int | None, /) -> None:
        """Records no more progress items for the call at this wire key, its text included:
        its values do not make what the call will hold."""
        ...

    def _record_progress(
        self, index: int | None, path: str, text: str, string: bool, ends: bool, /
    ) -> None:
        """Records a progress item of the call at this wire key whose arguments arrive as
        values: `text` appended to the string at JSON Pointer `path` (`ends`: no more of it
        comes), or the JSON text of the number or literal there."""
        ...

    def _set_aside(self, index: int | None, arguments: Arguments, /) -> int | None:
        """Counts arguments set aside for the call at this wire key while they are held: the
        bytes counted, or None when they must not be kept."""
        ...

    def _hold_fragment(self, n: int, /) -> bool:
        """Counts a fragment held for its surrogate half while it is held; False (nothing
        counted) when it must not be held."""
        ...

    def _release(self, n: int, /) -> None:
        """Gives back `n` bytes counted by `_set_aside` or `_hold_fragment` (let go, or about to
        be fed), or by `_keep_text` for a reasoning block that is dropped."""
        ...

    def _text_block(self, pending: int = 0, /) -> None:
        """A block of assistant text starts, after `pending` characters of the text of the
        chunk that starts it (a Gemini chunk of several parts): the next turn sends each block
        back in its place among the calls."""
        ...

    def _sign_text_block(self, signature: str, /) -> None:
        """The text block begun last carries this Gemini thought signature: it goes with the
        block's place, and back on its part in the next turn."""
        ...

    def _keep_citation(self, json: str, /) -> bool:
        """Keeps a citation (JSON text) of the text block that started last, with the block's
        place; False when it does not fit `max_stream_bytes`."""
        ...

    def _keep_text(self, n: int, /) -> bool:
        """Counts `n` bytes of text kept (assistant text, a reasoning block's) toward
        `max_stream_bytes`; False (nothing counted) once the response is past a limit."""
        ...

    def _keep_reasoning(self, text: str, signature: str | None, /) -> None:
        """Keeps a reasoning block that stopped whole, its bytes already counted: a `thinking`
        block, or with no `signature` a `redacted_thinking` block whose data is `text`."""
        ...

    def _keep_reasoning_item(self, json: str, before: int = 0, /) -> None:
        """Keeps a Responses `reasoning` or hosted item, or an Anthropic server block, that
        finished, as JSON text, its bytes already counted (`_keep_text`), before the last
        `before` items kept (those that came after it in the output)."""
        ...

    def _keep_converse_reasoning(
        self, text: str, signature: str | None, redacted: bytes | None, /
    ) -> None:
        """Keeps a Bedrock `reasoningContent` block that stopped, its bytes already counted:
        its `reasoningText`, or with `redacted` its `redactedContent`."""
        ...

    def _keep_converse_image(self, format: str, data: bytes, /) -> None:
        """Keeps a Bedrock `image` block that stopped, in its place among the reasoning
        blocks, its bytes already counted: its `format`, then its data."""
        ...

    def _keep_gemini_thought(self, text: str, signature: str | None, /) -> None:
        """Keeps a Gemini thought (a run of `thought` parts), its bytes already counted: its
        text and its `thoughtSignature`, if it came with one."""
        ...

    def _drop_reasoning(self) -> None:
        """Lets go of the reasoning item kept last, its bytes given back: the item after it is
        not one the next turn sends."""
        ...

    def _forget_reasoning(self) -> None:
        """The response starts again: the reasoning blocks kept so far are let go."""
        ...


# Finish reasons of every format, compared in ASCII lower case, as `FinishReason::from_raw` in
# `rust/src/envelope.rs` reads them for the raw path: the ones after which no call may run
# (`stops_calls`), and the ones that say the output limit was reached (`Length`).
STOPPING_REASONS = frozenset(
    {
        "content_filter",
        "safety",
        "refusal",
        # Bedrock Converse: a guardrail or the model's own filter ended the response.
        "guardrail_intervened",
        "content_filtered",
        # Gemini's filters: the output was cut because of what it held, so what came is not
        # the answer the model meant to give.
        "recitation",  # it repeated a source too closely
        "blocklist",  # it held a term of the configured blocklist
        "prohibited_content",  # it may hold prohibited content
        "spii",  # it may hold sensitive personal data
        "language",  # it was in a language the filters do not support
        "image_safety",  # an image it made broke the safety policy
        "image_prohibited_content",  # an image it made may be prohibited
        "image_recitation",  # an image it made repeated a source
    }
)
LIMIT_REASONS = frozenset(
    {
        "length",
        "max_tokens",
        "max_output_tokens",
        "model_length",
        "model_context_window_exceeded",
        # Gemini's per-request token limit, when the SDK does not continue the answer itself.
        "continuation",
    }
)


def folded_reason(reason: str) -> str:
    """A raw finish reason in ASCII lower case, as the raw path compares it."""
    return reason.lower() if reason.isascii() else reason


def stops_calls(reason: str) -> bool:
    """Whether a raw finish reason ends the response so that no open call may run."""
    return folded_reason(reason) in STOPPING_REASONS


def is_limit(reason: str) -> bool:
    """Whether a raw finish reason says the output limit was reached."""
    return folded_reason(reason) in LIMIT_REASONS


@dataclass(frozen=True, slots=True)
class FeedRecord:
    """One `feed` an adapter made: the ordinal the core returned and the id/name it carried.

    Attributes:
        ordinal: The call's dense ordinal as returned by the core.
        id: The id field of that delta exactly as sent (may be blank or `"null"`).
        name: The name field of that delta exactly as sent (may be a fragment or blank).
    """

    ordinal: int
    id: str | None
    name: str | None


@dataclass(slots=True)
class ChunkInfo:
    """What one chunk carried besides tool-call deltas.

    Attributes:
        text: Assistant text in this chunk (empty when none).
        feeds: One record per `feed` made for this chunk, in order.
        finish_reason: The provider's stop reason if this chunk carried one.
        usage: Token usage if this chunk carried it, as a plain dict: the members of every usage
            object so far, merged, later values winning, `null` members left out.
        error: The provider's error object, as sent, when this chunk says the provider gave up
            on the response (an error event or member, a failed response's `error`, a Bedrock
            exception); `stream_errors()` then tells it as `provider_error`.
        malformed: True when the chunk could not be read (not an object, or a field of the
            wrong type) and was skipped whole: the calls still open lost what it may have
            carried (`lost_event`), and `stream_errors()` tells it as `malformed_event`.
        arguments_mismatch: Why, when this chunk is a provider's summary of a call's whole
            arguments (a Responses `.done` or finished item) that differs from the deltas that
            came for it; `stream_errors()` then tells it as `arguments_mismatch`.
        other_choices: The indexes of the choices other than the one assembled whose text or
            tool calls this chunk carried and that were not assembled (a Chat stream with
            `n > 1`); `stream_errors()` tells them as `other_choice`.
        container: The id of the code-execution container the response runs in, when this
            chunk names it (Anthropic: the `container` of `message_start`'s message or of
            `message_delta`'s delta): the request that continues a `pause_turn` passes it as
            `container=` so that the code goes on with its files and state.
    """

    text: str = ""
    feeds: list[FeedRecord] = field(default_factory=lambda: [])
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    error: Any = None
    malformed: bool = False
    arguments_mismatch: str | None = None
    other_choices: list[int] = field(default_factory=lambda: [])
    container: str | None = None


def unreadable(info: ChunkInfo, sink: Sink) -> ChunkInfo:
    """A chunk that cannot be read at all: the raw SSE path skips such an event whole, and it
    may have carried part of a call, so the calls still open must not run, on both paths."""
    sink.lose_event("a malformed event")
    info.malformed = True
    return info


def gave_up(
    info: ChunkInfo, sink: Sink, error: object, reason: str = "error", *, stop: bool = True
) -> ChunkInfo:
    """A chunk by which the provider gave up on the response, `error` being what it said: the
    calls it had not ended must not run (an SDK raises there and reads no further). `stop`
    false: the format ended them all already (a Chat finish reason)."""
    info.finish_reason = reason
    info.error = {} if error is None else error
    if stop:
        sink.stop(reason)
    return info


def stop_open_calls(
    sink: Sink, ended: int | None, reason: str, reopened: Sequence[int] = ()
) -> None:
    """The provider gave up (`reason`): the calls it had not ended must not run. `ended`: a
    Chat finish reason ended the calls below that ordinal (Chat has no end event per call, so
    the reason ended all there were), and only the calls that started after it are stopped,
    and those of `reopened`, which argument text came for after it."""
    if ended is None:
        sink.stop(reason)
        return
    for ordinal in (*reopened, *range(ended, len(sink))):
        sink._stop_call(ordinal, reason)  # pyright: ignore[reportPrivateUsage]


def after_provider_error(info: ChunkInfo, sink: Sink) -> ChunkInfo:
    """A chunk that comes after the provider gave up on the response (an error chunk or event):
    as on the raw SSE path, a finish reason it carries does not undo the failure (the reason
    stays `error`), and a call it starts must not run either (an SDK raises at the error and
    never shows it). Only the calls it feeds are stopped: those a Chat finish reason ended
    before the error stay as they were (the others were stopped when the provider gave up)."""
    if info.finish_reason is not None:
        info.finish_reason = "error"
    for record in info.feeds:
        sink._stop_call(record.ordinal, "error")  # pyright: ignore[reportPrivateUsage]
    return info


class FormatAdapter(Protocol):
    """Per-stream state for one wire format."""

    format: WireFormat

    def handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        """Translate one chunk into sink calls and return its non-tool content."""
        ...

    def flush(self, sink: Sink) -> None:
        """The stream ends: feed what the adapter still holds (an unpaired surrogate half)."""
        ...
