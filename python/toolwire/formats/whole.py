"""A whole, non-streamed response read as the stream events that would have carried it.

Design notes:
- A server that ignores `stream=True` (a proxy, a gateway, a mock) answers one JSON document:
  a Responses `Response` or an Anthropic `Message`. The SDKs read such a body as an event stream
  with no event in it and yield nothing, and a `Response` or `Message` handed to `feed_chunk`
  told no format: every call it carried vanished without a word. Its calls are read instead,
  through the same adapter and core as a stream's, from the events a stream of that response
  would have sent. A Chat `ChatCompletion` needs no events: its choices' `message` is read as
  one delta by the Chat adapter itself.
- Only what the adapters read is written: text, tool-call items and blocks with their whole
  arguments, reasoning, the stop reason and usage. Never on the path of a streamed chunk: it is
  asked only of a chunk that told no format.
"""

from __future__ import annotations

import json
from typing import Any, cast

from toolwire.formats._fields import get, plain

__all__ = ["whole_response_events"]

# The statuses of a `Response` that has finished, each the type of the event that ends it.
_FINISHED = frozenset(("completed", "incomplete", "failed", "cancelled"))


def whole_response_events(chunk: object) -> list[dict[str, Any]] | None:
    """The stream events equivalent to `chunk` when it is a whole, non-streamed response: a
    finished Responses `Response` (`object: "response"`) or an Anthropic `Message`
    (`type: "message"`), as an SDK model or a dict; None for anything else."""
    if get(chunk, "object") == "response" and get(chunk, "status") in _FINISHED:
        return _responses_events(plain(chunk))
    if get(chunk, "type") == "message" and get(chunk, "role") == "assistant":
        return _anthropic_events(plain(chunk))
    return None


def _list(value: object) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []


def _responses_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """Each output item's text pieces and its `output_item.done` (a message started by its
    `output_item.added`), then the finishing event."""
    events: list[dict[str, Any]] = []
    for position, item in enumerate(_list(response.get("output"))):
        if not isinstance(item, dict):
            continue
        fields = cast("dict[str, Any]", item)
        if fields.get("type") == "message":
            # Its start, as a stream announces it: where a message starts among the calls is
            # where it goes back in the next turn.
            started: dict[str, Any] = {**fields, "status": "in_progress", "content": []}
            events.append(
                {"type": "response.output_item.added", "output_index": position, "item": started}
            )
            for part, content in enumerate(_list(fields.get("content"))):
                text = get(content, "text")
                if get(content, "type") == "output_text" and isinstance(text, str) and text:
                    events.append(
                        {
                            "type": "response.output_text.delta",
                            "output_index": position,
                            "content_index": part,
                            "item_id": fields.get("id"),
                            "delta": text,
                        }
                    )
        events.append({"type": "response.output_item.done", "output_index": position, "item": item})
    events.append({"type": f"response.{response['status']}", "response": response})
    return events


def _anthropic_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """`message_start` without the content, each block started, filled and stopped, then
    `message_delta` with the stop reason and `message_stop`."""
    usage = message.get("usage")
    start: dict[str, Any] = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(_list(message.get("content"))):
        if not isinstance(block, dict):
            continue
        events += _block_events(index, cast("dict[str, Any]", block))
        events.append({"type": "content_block_stop", "index": index})
    delta = {
        "stop_reason": message.get("stop_reason"),
        "stop_sequence": message.get("stop_sequence"),
    }
    ending: dict[str, Any] = {"type": "message_delta", "delta": delta}
    if isinstance(usage, dict):
        ending["usage"] = usage
    events += [ending, {"type": "message_stop"}]
    return events


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """A content block's start and the deltas that carry it: a text or thinking block's text
    and signature as their deltas, a tool block's whole `input` as its one fragment (none for
    an empty one), any other
    block (redacted thinking, a server tool's) whole at its start."""
    kind = block.get("type")

    def start(**emptied: Any) -> dict[str, Any]:
        return {
            "type": "content_block_start",
            "index": index,
            "content_block": {**block, **emptied},
        }

    def delta(**fields: Any) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": fields}

    if kind == "text":
        return [start(text=""), delta(type="text_delta", text=block.get("text", ""))]
    if kind == "thinking":
        events = [start(thinking="", signature="")]
        events.append(delta(type="thinking_delta", thinking=block.get("thinking", "")))
        if "signature" in block:
            events.append(delta(type="signature_delta", signature=block["signature"]))
        return events
    if kind == "tool_use":
        value = block.get("input", {})
        if value == {}:
            # As a stream sends a block that stopped with no input: a call without parameters
            # if the message goes on, cut (`truncated`) if it stopped at `max_tokens`.
            return [start(input={})]
        fragment = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return [start(input={}), delta(type="input_json_delta", partial_json=fragment)]
    return [start()]
