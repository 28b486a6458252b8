"""Tell the wire format from the first chunk that says which one it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from toolwire.formats._fields import get
from toolwire.formats._types import WireFormat
from toolwire.formats.bedrock_converse import is_converse_event

__all__ = ["detect_format", "helper_chunk", "is_error_event"]

_ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)

# The events the SDKs' stream helpers derive from the provider's events they also yield
# (openai's `client.chat.completions.stream(...)`, anthropic's `client.messages.stream(...)`):
# their text and argument pieces repeat what those events carried.
_HELPER_DERIVED_TYPES = frozenset(
    {
        "content.delta",
        "content.done",
        "refusal.delta",
        "refusal.done",
        "tool_calls.function.arguments.delta",
        "tool_calls.function.arguments.done",
        "logprobs.content.delta",
        "logprobs.content.done",
        "logprobs.refusal.delta",
        "logprobs.refusal.done",
        "text",
        "citation",
        "thinking",
        "signature",
        "input_json",
        "compaction",
    }
)

_GEMINI_FIELDS = (
    "candidates",
    "usageMetadata",
    "usage_metadata",
    "promptFeedback",
    "prompt_feedback",
)


def detect_format(chunk: object) -> WireFormat | None:
    """The wire format of `chunk`, or `None` when this chunk alone does not tell.

    Chat Completions chunks carry `choices` (possibly empty) or `object: "chat.completion.chunk"`;
    Responses events have a `type` starting with `response.`; Anthropic events have one of the
    Messages event types; Gemini `GenerateContentResponse` chunks carry `candidates`,
    `usageMetadata` or `promptFeedback` (snake_case on SDK objects) and no `choices`; Bedrock
    ConverseStream events (the dicts boto3 yields) have one member named after the event
    (`contentBlockDelta`, `metadata` with its `usage`, an exception). An `error` event is
    ambiguous and returns `None`, as does anything unrecognised, so the caller can wait for a
    chunk that decides.

    Args:
        chunk: An SDK event object or a dict of the same shape.

    Returns:
        `"openai-chat"`, `"openai-responses"`, `"anthropic"`, `"gemini"`, `"bedrock-converse"`,
        or `None`.
    """
    kind = get(chunk, "type")
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "openai-responses"
        if kind in _ANTHROPIC_TYPES:
            return "anthropic"
    if get(chunk, "object") == "chat.completion.chunk" or get(chunk, "choices") is not None:
        return "openai-chat"
    if any(get(chunk, name) is not None for name in _GEMINI_FIELDS):
        return "gemini"
    if isinstance(chunk, Mapping) and is_converse_event(cast("Mapping[object, object]", chunk)):
        return "bedrock-converse"
    return None


def helper_chunk(event: object) -> object | None:
    """The provider's chunk in an event of an SDK stream helper, `None` for an event the helper
    derived from chunks it yielded too, and `event` itself for anything else.

    openai's chat helper yields each `ChatCompletionChunk` wrapped in a `chunk` event
    (`ChunkEvent`), from which no format can be told, next to `content.delta`,
    `tool_calls.function.arguments.delta` and other events of its own; anthropic's helper yields
    the raw events themselves next to `text`, `input_json` and others.

    Args:
        event: What the helper yielded (or a dict of the same shape), or any other chunk.
    """
    kind = get(event, "type")
    if kind == "chunk":
        inner = get(event, "chunk")
        return event if inner is None else inner
    if isinstance(kind, str) and kind in _HELPER_DERIVED_TYPES:
        return None
    return event


def is_error_event(chunk: object) -> bool:
    """True for a provider's error chunk of any format: an event of type `error` (Anthropic,
    Responses) or a chunk whose only news is an `error` member (a Chat `{"error": ...}` line,
    Gemini's). `detect_format` cannot tell their format, yet they end the response whatever
    it is, as the raw SSE path reads them.
    """
    kind = get(chunk, "type")
    if kind is not None:
        return kind == "error"
    return get(chunk, "error") is not None
