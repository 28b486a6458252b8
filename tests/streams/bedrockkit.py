"""Bedrock ConverseStream for the tests: an AWS event-stream encoder, stream builders, and the
real boto3 `bedrock-runtime` client pointed at the loopback server.

The body of `converse-stream` is a sequence of event-stream messages (botocore's
`botocore.eventstream.EventStreamBuffer` decodes them), each:

    prelude   total length (uint32 BE), headers length (uint32 BE), CRC32 of those 8 bytes
    headers   per header: name length (uint8), name, value type (7: string), value length
              (uint16 BE), value
    payload   the event's JSON
    CRC32     of everything before it (uint32 BE)

An event carries `:event-type` (the member of `ConverseStreamOutput`), `:content-type:
application/json` and `:message-type: event`; an exception `:exception-type` and
`:message-type: exception` instead, which boto3 raises as `EventStreamError`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from .clients import check_event_order
from .streamkit import Call, Event, adversarial_points, fragments, json_text, split_points

if TYPE_CHECKING:
    from .conftest import Route, SSEServer

CONTENT_TYPE = "application/vnd.amazon.eventstream"
MESSAGES = [{"role": "user", "content": [{"text": "What is the weather in Paris?"}]}]
USAGE = {"inputTokens": 17, "outputTokens": 42, "totalTokens": 59}
_STRING = 7
_PRELUDE = 12
_CRC = 4


# ---------------------------------------------------------------------------------------------
# The encoder


def message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message with string headers."""
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    prelude = struct.pack(">II", _PRELUDE + len(encoded) + len(payload) + _CRC, len(encoded))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return head + struct.pack(">I", zlib.crc32(head))


def _header(name: str, value: str) -> bytes:
    key, text = name.encode(), value.encode()
    return struct.pack(">B", len(key)) + key + struct.pack(">BH", _STRING, len(text)) + text


def event_message(event: Event) -> bytes:
    """One ConverseStream event dict (`{member: body}`, as boto3 yields it) as its message.

    Members named `...Exception` become exception messages. Bedrock pads every event payload
    with a `p` member (so sizes do not leak the content); boto3 drops it, and so it is sent.
    """
    ((kind, body),) = event.items()
    payload = json_text({**body, "p": "abcdefghijklmnopqrstuvwxyzABCDEF"[: len(kind)]}).encode()
    common = {":content-type": "application/json"}
    if kind.endswith("Exception"):
        headers = {":exception-type": kind, **common, ":message-type": "exception"}
    else:
        headers = {":event-type": kind, **common, ":message-type": "event"}
    return message(headers, payload)


def eventstream_body(events: Iterable[Event]) -> bytes:
    """The `converse-stream` response body for these events."""
    return b"".join(event_message(event) for event in events)


def frames(body: bytes) -> list[tuple[int, int, int]]:
    """(offset, headers length, total length) of every whole message in `body`."""
    out: list[tuple[int, int, int]] = []
    start = 0
    while start + _PRELUDE <= len(body):
        total, headers = struct.unpack_from(">II", body, start)
        out.append((start, headers, total))
        start += total
    return out


def frame_points(body: bytes) -> list[int]:
    """Cuts inside every message: inside and right after the prelude and its CRC, inside the
    headers, at the payload's start and middle, before and inside the message CRC, plus the
    SSE cuts inside every UTF-8 character and after every backslash."""
    cuts = set(adversarial_points(body))
    for start, headers, total in frames(body):
        payload = start + _PRELUDE + headers
        end = start + total
        cuts.update(
            start + n for n in (1, 4, 6, 8, 11, _PRELUDE, _PRELUDE + 1, _PRELUDE + headers // 2)
        )
        cuts.update((payload, (payload + end - _CRC) // 2, end - _CRC, end - 2, end))
    return sorted(c for c in cuts if 0 < c <= len(body))


def cuts_for(body: bytes, split: str) -> list[int]:
    """The server's write plan for a split mode; `adversarial` cuts inside every message."""
    return frame_points(body) if split == "adversarial" else split_points(body, split)


# ---------------------------------------------------------------------------------------------
# Streams


def text_block(index: int, text: str, *, size: int = 5) -> list[Event]:
    """A text block: no `contentBlockStart` (quirk 32), deltas of `size` characters, then its
    stop."""
    return [
        *(
            {"contentBlockDelta": {"delta": {"text": piece}, "contentBlockIndex": index}}
            for piece in fragments(text, size)
        ),
        {"contentBlockStop": {"contentBlockIndex": index}},
    ]


def reasoning_block(
    index: int, thought: str = "Let me think.", *, size: int = 6, redacted: bool = False
) -> list[Event]:
    """A reasoning block (no start either), its text in pieces of `size` characters and its
    signature; or, `redacted`, only the encrypted reasoning (a blob, base64 on the wire)."""
    deltas: list[dict[str, Any]] = [{"redactedContent": "c2VjcmV0"}]
    if not redacted:
        deltas = [{"text": piece} for piece in fragments(thought, size)] + [{"signature": "c2ln"}]
    return [
        *(
            {"contentBlockDelta": {"delta": {"reasoningContent": d}, "contentBlockIndex": index}}
            for d in deltas
        ),
        {"contentBlockStop": {"contentBlockIndex": index}},
    ]


def tool_start(index: int, call: Call, k: int = 0) -> Event:
    tool = {"toolUseId": call.id or f"tooluse_{k}", "name": call.name}
    return {"contentBlockStart": {"start": {"toolUse": tool}, "contentBlockIndex": index}}


def tool_input(index: int, value: Any) -> Event:
    """A `toolUse` delta: a string fragment, or (quirk 23) an object."""
    return {
        "contentBlockDelta": {"delta": {"toolUse": {"input": value}}, "contentBlockIndex": index}
    }


def block_stop(index: int) -> Event:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def tool_block(index: int, call: Call, k: int = 0, *, size: int = 7) -> list[Event]:
    """A tool block: its start, the input in fragments of `size` characters, its stop."""
    pieces = fragments(call.arguments, size) if call.arguments else []
    return [
        tool_start(index, call, k),
        *(tool_input(index, piece) for piece in pieces),
        block_stop(index),
    ]


# The exception members of `ConverseStreamOutput`, as Bedrock sends them mid-stream.
EXCEPTIONS: list[Event] = [
    {
        "modelStreamErrorException": {
            "message": "stream broke",
            "originalStatusCode": 500,
            "originalMessage": "upstream reset",
        }
    },
    {"internalServerException": {"message": "internal error"}},
    {"throttlingException": {"message": "slow down"}},
    {"serviceUnavailableException": {"message": "try again"}},
    {"validationException": {"message": "output too long"}},
]


def message_stop(reason: str) -> Event:
    return {"messageStop": {"stopReason": reason}}


def metadata(usage: dict[str, Any] | None = None) -> Event:
    return {"metadata": {"usage": usage or USAGE, "metrics": {"latencyMs": 321}}}


def converse_events(
    calls: Sequence[Call],
    *,
    text: str = "",
    reasoning: bool = False,
    size: int = 7,
    stop_reason: str = "tool_use",
    usage: dict[str, Any] | None = None,
) -> list[Event]:
    """A whole ConverseStream response: optional reasoning and text blocks, then one tool block
    per call, `messageStop` and `metadata`; block indexes count every block."""
    events: list[Event] = [{"messageStart": {"role": "assistant"}}]
    index = 0
    if reasoning:
        events += reasoning_block(index)
        index += 1
    if text:
        events += text_block(index, text)
        index += 1
    for k, call in enumerate(calls):
        events += tool_block(index + k, call, k, size=size)
    return [*events, message_stop(stop_reason), metadata(usage)]


# ---------------------------------------------------------------------------------------------
# The real client


def serve(
    server: SSEServer,
    events: Sequence[Event],
    *,
    split: str = "whole",
    drop_after: int | None = None,
) -> Route:
    """Register the event-stream body of `events`, cut by `split` (see `cuts_for`)."""
    body = eventstream_body(events)
    cuts = cuts_for(body, split)
    return server.register(body, split=cuts, drop_after=drop_after, content_type=CONTENT_TYPE)


@contextmanager
def converse_response(route: Route) -> Iterator[dict[str, Any]]:
    """The whole response of the real boto3 client's `converse_stream` (a dict whose `stream`
    member is an `EventStream`); the client and its connections are closed on leaving."""
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=route.url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"total_max_attempts": 1}),
    )
    try:
        yield client.converse_stream(modelId="test-model", messages=MESSAGES)
    finally:
        client.close()


@contextmanager
def converse_stream(route: Route) -> Iterator[Any]:
    """`converse_stream(...)["stream"]` of the real boto3 client (an `EventStream`)."""
    with converse_response(route) as response:
        yield response["stream"]


def assemble_bedrock(route: Route, **options: Any) -> tuple[list[Any], Any]:
    """`toolwire.assemble` over the real boto3 stream; returns (events, tool stream)."""
    from toolwire.stream import assemble

    with converse_stream(route) as source, assemble(source, **options) as stream:
        events = list(stream)
    check_event_order(events, stream)
    return events, stream


def via_dicts(events: Sequence[Event]) -> tuple[Any, list[Any]]:
    """The same events fed as dicts through `Assembler.feed_chunk`: (assembler, calls)."""
    from toolwire.assembler import Assembler

    asm = Assembler()
    for event in events:
        asm.feed_chunk(event)
    return asm, asm.finish()


@dataclass
class DictRun:
    """What `Assembler.feed_chunk` made of a sequence of event dicts."""

    calls: list[Any]
    text: str
    finish_reason: str | None
    usage: dict[str, Any] | None


def feed_dicts(events: Sequence[Event], *, interrupted: bool = False) -> DictRun:
    """The events fed as dicts, as `assemble` reads them: a connection that broke off after
    the last one interrupts the assembler before it finishes."""
    from toolwire.assembler import Assembler

    asm = Assembler()
    text: list[str] = []
    finish: str | None = None
    usage: dict[str, Any] | None = None
    for event in events:
        info = asm.feed_chunk(event)
        text.append(info.text)
        finish = info.finish_reason or finish
        usage = usage if info.usage is None else info.usage
    if interrupted:
        asm.interrupt("the connection dropped")
    text.append(asm.text_tail())
    return DictRun(asm.finish(), "".join(text), finish, usage)


def shown(calls: Sequence[Any]) -> list[tuple[Any, ...]]:
    """What a test compares: (ordinal, index, id, name, value, error kind) per call."""
    return [
        (c.ordinal, c.index, c.id, c.name, c.value if c.ok else None, c.error and c.error.kind)
        for c in calls
    ]
