"""A whole, non-streamed response read as the stream events that would have carried it.

Design notes:
- A server that ignores `stream=True` (a proxy, a gateway, a mock) answers one JSON document:
  a Responses `Response`, an Anthropic `Message` or a Bedrock `Converse` response. The SDKs
  read such a body as an event stream (boto3 as event-stream frames it cannot decode)
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
from collections.abc import Mapping
from typing import Any, cast

from toolwire.formats._fields import get, plain

__all__ = ["aws_error_event", "is_json_media", "unread_json_answer", "whole_response_events"]

# The statuses of a `Response` that has finished, each the type of the event that ends it.
_FINISHED = frozenset(("completed", "incomplete", "failed", "cancelled"))


def whole_response_events(chunk: object) -> list[dict[str, Any]] | None:
    """The stream events equivalent to `chunk` when it is a whole, non-streamed response: a
    finished Responses `Response` (`object: "response"`), an Anthropic `Message`
    (`type: "message"`), as an SDK model or a dict, or a Bedrock `Converse` response dict
    (`output.message` and `stopReason`); None for anything else."""
    if get(chunk, "object") == "response" and get(chunk, "status") in _FINISHED:
        return _responses_events(plain(chunk))
    if get(chunk, "type") == "message" and get(chunk, "role") == "assistant":
        return _anthropic_events(plain(chunk))
    if isinstance(chunk, dict) and "stopReason" in chunk:
        response = cast("dict[str, Any]", chunk)
        message = get(response.get("output"), "message")
        if isinstance(message, dict):
            return _converse_events(response, cast("dict[str, Any]", message))
    return None


# The members of AWS's JSON error shape, as botocore reads an error body.
_AWS_ERROR = frozenset(("message", "Message", "__type", "code", "Code"))


def aws_error_event(document: object) -> dict[str, Any] | None:
    """The error event AWS's JSON error shape (`{"message": ...}`, its type beside it) stands
    for, which a gateway in front of a model (Bedrock, API Gateway) may answer with status 200:
    the provider's error, as the raw SSE path reads it; None for any other document."""
    if not isinstance(document, dict):
        return None
    fields = cast("dict[object, object]", document)
    said = isinstance(fields.get("message"), str) or isinstance(fields.get("Message"), str)
    return {"error": document} if said and _AWS_ERROR.issuperset(fields) else None


def is_json_media(content_type: object) -> bool:
    """Whether a `content-type` header's value names JSON (`application/json`, `...+json`)."""
    if not isinstance(content_type, str):
        return False
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def unread_json_answer(chunk: object) -> bool:
    """Whether `chunk` is what google-genai yields for a JSON answer to a stream request that
    it could not read as a response (a JSON array of chunks, which `streamGenerateContent`
    answers without `alt=sse`, or another document): a `GenerateContentResponse` that holds
    only the HTTP response, whose headers say JSON. Asked only of a chunk that told no format."""
    headers = get(get(chunk, "sdk_http_response"), "headers")
    if not isinstance(headers, Mapping):
        return False
    fields = cast("Mapping[object, object]", headers)
    kind = next((v for k, v in fields.items() if str(k).lower() == "content-type"), None)
    return is_json_media(kind)


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


def _converse_events(response: dict[str, Any], message: dict[str, Any]) -> list[dict[str, Any]]:
    """`messageStart`, each content block as its deltas (a tool block started first, its whole
    `input` as one fragment, none for an empty one; an image started with its format, its
    source one delta; a `citationsContent` block's text, then its citations; a server tool's
    `toolResult` started without its content, which is one delta) and its stop,
    then `messageStop` with the stop reason and `metadata` with the usage, as ConverseStream
    sends them."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": message.get("role", "assistant")}}]
    for index, block in enumerate(_list(message.get("content"))):
        if not isinstance(block, dict):
            continue
        fields = cast("dict[str, Any]", block)
        deltas: list[dict[str, Any]] = []
        tool, reasoning = fields.get("toolUse"), fields.get("reasoningContent")
        image = fields.get("image")
        if isinstance(tool, dict):
            start = {k: v for k, v in cast("dict[str, Any]", tool).items() if k != "input"}
            events.append(
                {"contentBlockStart": {"start": {"toolUse": start}, "contentBlockIndex": index}}
            )
            value = cast("dict[str, Any]", tool).get("input", {})
            if value != {}:
                fragment = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
                deltas.append({"toolUse": {"input": fragment}})
        elif isinstance(fields.get("text"), str):
            deltas.append({"text": fields["text"]})
        elif isinstance(reasoning, dict):
            content = cast("dict[str, Any]", reasoning)
            said = content.get("reasoningText")
            if isinstance(said, dict):
                text = cast("dict[str, Any]", said)
                deltas += [
                    {"reasoningContent": {key: text[key]}}
                    for key in ("text", "signature")
                    if key in text
                ]
            elif "redactedContent" in content:
                redacted = content["redactedContent"]
                deltas.append({"reasoningContent": {"redactedContent": redacted}})
        elif isinstance(image, dict):
            # The model's image: its format at its start, its source (and error) as a delta.
            shown = cast("dict[str, Any]", image)
            start = {"format": shown.get("format")}
            events.append(
                {"contentBlockStart": {"start": {"image": start}, "contentBlockIndex": index}}
            )
            deltas.append({"image": {k: v for k, v in shown.items() if k in ("source", "error")}})
        elif isinstance(fields.get("citationsContent"), dict):
            # Cited text: its generated text, then each citation, as a stream's deltas.
            cited = cast("dict[str, Any]", fields["citationsContent"])
            said = [get(piece, "text") for piece in _list(cited.get("content"))]
            deltas += [{"text": text} for text in said if isinstance(text, str)]
            deltas += [
                {"citation": c} for c in _list(cited.get("citations")) if isinstance(c, dict)
            ]
        elif isinstance(fields.get("toolResult"), dict):
            # A server tool's result (Bedrock ran the tool): kept for the next turn as a
            # stream's `toolResult` block is, its content one delta.
            result = cast("dict[str, Any]", fields["toolResult"])
            start = {k: v for k, v in result.items() if k != "content"}
            events.append(
                {"contentBlockStart": {"start": {"toolResult": start}, "contentBlockIndex": index}}
            )
            deltas.append({"toolResult": _list(result.get("content"))})
        else:
            # A document: no call and no text of the turn.
            continue
        events += [
            {"contentBlockDelta": {"delta": delta, "contentBlockIndex": index}} for delta in deltas
        ]
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    events.append({"messageStop": {"stopReason": response.get("stopReason")}})
    metadata = {key: response[key] for key in ("usage", "metrics") if key in response}
    if metadata:
        events.append({"metadata": metadata})
    return events
