"""Typed events yielded by `toolwire.assemble` / `toolwire.aassemble`.

Every event is a frozen, slotted dataclass deriving from `StreamEvent`; `Event` is the union of
the concrete classes, so `match` statements over it can be checked for exhaustiveness.

Order guarantees within one stream: a call's `CallStarted` comes before any other event for that
ordinal; every `CallStarted` is followed by exactly one `CallCompleted`; `StreamEnded` is last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from toolwire._core import CallError, ToolCall
    from toolwire.validation import Outcome

__all__ = [
    "ArgumentsProgress",
    "CallCompleted",
    "CallStarted",
    "Event",
    "PrecheckError",
    "StreamEnded",
    "StreamEvent",
    "TextDelta",
]


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """Base class of every event a tool stream yields."""


@dataclass(frozen=True, slots=True)
class TextDelta(StreamEvent):
    """Assistant text as it arrives.

    Attributes:
        text: The text carried by one chunk (never empty).
    """

    text: str


@dataclass(frozen=True, slots=True)
class CallStarted(StreamEvent):
    """A tool call appeared in the stream.

    Attributes:
        ordinal: Dense position of the call in this stream (0, 1, ...), stable for its lifetime.
        id: The provider's call id if the opening delta carried one.
        name: The tool name if the opening delta carried one. `None` when a provider sends
            arguments before the name (it is then on `CallCompleted.call.name`).
    """

    ordinal: int
    id: str | None
    name: str | None


@dataclass(frozen=True, slots=True)
class ArgumentsProgress(StreamEvent):
    """Decoded argument text appended to one value since the last progress event.

    Attributes:
        ordinal: The call being written.
        path: JSON Pointer of the value the text belongs to (`"/content"`).
        text: Decoded text appended to that value.
    """

    ordinal: int
    path: str
    text: str


@dataclass(frozen=True, slots=True)
class PrecheckError(StreamEvent):
    """A schema pre-check error that became certain while the call was still streaming.

    The call is not yet complete; the same problem is on `CallCompleted.call.error` (or its
    outcome) at the end. Use it to abort early or to show the problem in a UI.

    Attributes:
        ordinal: The call the error is about.
        error: Kind, message, byte offset and JSON Pointer of the problem.
    """

    ordinal: int
    error: CallError


@dataclass(frozen=True, slots=True)
class CallCompleted(StreamEvent):
    """A tool call is final.

    Attributes:
        call: The assembled call, with `error` set when it must not be executed (truncated,
            invalid JSON, unknown tool, filtered, ...).
        outcome: The toolset's verdict (`Toolset.validate(call)`) when tools were given, else
            `None`.
    """

    call: ToolCall
    outcome: Outcome | None = None


@dataclass(frozen=True, slots=True)
class StreamEnded(StreamEvent):
    """The stream is over; always the last event.

    Attributes:
        finish_reason: The provider's stop reason as sent (`"tool_calls"`, `"stop"`,
            `"end_turn"`, `"completed"`, ...), or `None` when the stream broke off or never
            said. Decide whether to run tools from `calls`, never from this value.
        usage: Token usage as a plain dict if the provider sent it.
        calls: Every call of the stream, in ordinal order (the same list as `.calls`).
        reasoning: The reasoning that ended whole (`Assembler.reasoning`: Anthropic's
            `thinking` blocks, Responses `reasoning` and hosted items, Bedrock
            `reasoningContent` blocks, Gemini thought parts), in output order, to send back with
            the calls (`assistant_turn(..., reasoning=...)`); empty for other providers.
        text_places: Where each text block of a turn with no call began
            (`Assembler.text_places`), to send the text back in its blocks and places
            (`assistant_turn(..., text_places=...)`); `None` with calls, which carry them.
        container: The id of the code-execution container the response ran in (Anthropic's
            `container`, the last one the stream named), or `None`. A turn that stopped with
            `pause_turn` is continued by sending it back as it is, with `container=` this id,
            so that the code goes on with its files and state.
    """

    finish_reason: str | None
    usage: dict[str, Any] | None
    calls: tuple[ToolCall, ...]
    reasoning: tuple[dict[str, Any], ...] = ()
    text_places: list[list[int | str | list[dict[str, Any]]]] | None = None
    container: str | None = None


Event: TypeAlias = (
    TextDelta | CallStarted | ArgumentsProgress | PrecheckError | CallCompleted | StreamEnded
)
"""Union of every concrete event class."""
