"""Adapters that turn one provider's stream envelopes into assembler calls.

Each wire format has one module. An adapter reads an SDK event object or a plain dict of the same
shape and calls `feed` / `end` / `set_metadata` / `stop` on a sink (in production the
`toolwire.Assembler`). Adapters translate envelopes only: fragment-level quirks (repeated names,
unstable ids, cumulative arguments, odd indexes) are the core's business, so an adapter passes
fields through as the provider sent them.
"""

from __future__ import annotations

from toolwire.formats._types import ChunkInfo, FeedRecord, FormatAdapter, Sink, WireFormat
from toolwire.formats.anthropic_messages import AnthropicMessagesAdapter
from toolwire.formats.bedrock_converse import BedrockConverseAdapter
from toolwire.formats.detect import detect_format, helper_chunk, is_error_event
from toolwire.formats.gemini import GeminiAdapter
from toolwire.formats.openai_chat import ChatCompletionsAdapter
from toolwire.formats.openai_responses import ResponsesAdapter

__all__ = [
    "AnthropicMessagesAdapter",
    "BedrockConverseAdapter",
    "ChatCompletionsAdapter",
    "ChunkInfo",
    "FeedRecord",
    "FormatAdapter",
    "GeminiAdapter",
    "ResponsesAdapter",
    "Sink",
    "WireFormat",
    "detect_format",
    "helper_chunk",
    "is_error_event",
    "make_adapter",
]


def make_adapter(fmt: WireFormat) -> FormatAdapter:
    """A fresh adapter (with new per-stream state) for the wire format `fmt`.

    Args:
        fmt: One of `"openai-chat"`, `"openai-responses"`, `"anthropic"`, `"gemini"`,
            `"bedrock-converse"`.

    Returns:
        An adapter whose `handle(chunk, sink)` translates that format's chunks.

    Raises:
        ValueError: `fmt` is not a known wire format.
    """
    if fmt == "openai-chat":
        return ChatCompletionsAdapter()
    if fmt == "openai-responses":
        return ResponsesAdapter()
    if fmt == "anthropic":
        return AnthropicMessagesAdapter()
    if fmt == "gemini":
        return GeminiAdapter()
    if fmt == "bedrock-converse":
        return BedrockConverseAdapter()
    raise ValueError(
        f"unknown wire format {fmt!r}; expected 'openai-chat', 'openai-responses', 'anthropic',"
        " 'gemini' or 'bedrock-converse'"
    )
