"""Amazon Bedrock ConverseStream events to assembler calls.

The chunks are the event dicts that boto3's `bedrock-runtime` `converse_stream(...)["stream"]`
yields, each with exactly one member: `messageStart`, `contentBlockStart`, `contentBlockDelta`,
`contentBlockStop`, `messageStop`, `metadata`, or an exception (`internalServerException`,
`modelStreamErrorException`, `validationException`, `throttlingException`,
`serviceUnavailableException`, or any later `...Exception` member). The body is AWS event-stream
binary, not SSE, so this format has no raw `feed_sse` path: read it through boto3 (or any decoder
that yields these dicts).

Design notes:
- Only tool blocks have a `contentBlockStart`; text and reasoning blocks start with their first
  delta. `contentBlockIndex` counts every block, so it is the call's key and the core maps it
  to a dense ordinal (quirk 32). A `toolUse` delta for an index whose start never came is kept
  (quirk 32), as the Anthropic adapter keeps a fragment after a lost `content_block_start`: the
  call then reports its missing name instead of vanishing. A missing index is passed on as
  missing: the core owns that rule.
- `toolUse.input` is a string fragment to fold; an object (quirk 23) is the complete value.
  An empty string is no fragment (quirk 26).
- `contentBlockStop` ends the call. A tool block that stopped with no input at all (or only
  whitespace, which the core reads as none) is a call of a tool without parameters (`{}`,
  quirk 25), but only if the response goes on normally: its end is held until the next event.
  If that event says the output limit was reached (`max_tokens`), the call is left open under
  `limit_reached`, so it is `truncated` and not `{}` (the model was cut before it wrote the
  input); if it is an exception, or the stream breaks off there, the call is still open when
  the assembler stops or interrupts it, so boto3's raised `EventStreamError` and the same
  exception event fed as a dict give the same call.
- A server tool's call (`toolUse` of `type` `server_tool_use`) and its result (`toolResult`)
  ran on Bedrock's side: never calls, never checked against a client tool's schema, never run.
  Each is kept whole with the reasoning blocks for the next turn (`Assembler.reasoning`), in
  its place (a call after it counts it in `reasoning_before`), once it stopped: `{"toolUse":
  {"toolUseId", "name", "type", "input"}}` with the input its `toolUse` deltas wrote (`{}` for
  none; one that is no JSON value is left out), `{"toolResult": {"toolUseId", "type",
  "status", "content"}}` with the content its `toolResult` deltas gave, in order (a `text`
  piece joined to the text piece right before it, a `json` piece whole). They are held and
  counted toward `max_stream_bytes` as reasoning is; one cut off is left out. A start that
  names no kind of block (`start` missing, null or empty) is no such block: its `toolUse`
  deltas are kept as those of a block whose start was lost, never dropped unsaid.
- An `image` block the model wrote (its start gives the `format`, its `image` deltas the
  `source`, the `bytes` in pieces) is part of the answer the next turn must send back as it
  came, in its place: it is kept with the reasoning blocks once it stopped, as `{"image":
  {"format", "source": {"bytes"}}}` with its pieces joined (bytes as boto3 gives them, or the
  base64 text of the wire JSON), or with the `s3Location` a delta gave. Its bytes are held and
  counted as reasoning is. One a delta said failed (`error`), whose bytes do not read, or that
  was cut off is left out: sent back it would be refused, or be another image.
- `stopReason` is reported as sent; `guardrail_intervened` and `content_filtered` (and the other
  stopping reasons of `stops_calls`) stop the open calls, `max_tokens` and
  `model_context_window_exceeded` mark the output limit. `malformed_tool_use` and
  `malformed_model_output` stop every call, even one whose block ended with a whole value:
  Bedrock judged the calls it sent and does not say which one failed.
- `reasoningContent` blocks are not assistant text; they are kept for the next request
  (`Assembler.reasoning`: an Anthropic model's turn with tool use is refused without them),
  as `{"reasoningContent": {"reasoningText": {"text", "signature"}}}` or
  `{"reasoningContent": {"redactedContent": bytes}}`, the shape the next request sends. The
  text deltas are appended, a `signature` replaces the one before (Anthropic's accumulator),
  the `redactedContent` blobs are joined (a `str`, what a decoder of the wire JSON gives, is
  read as the base64 text it is there). The block's kind is its first delta's. A block is kept
  once its `contentBlockStop` came with text, a signature or data; one cut off (the stream
  ended or broke first) is not: sent back it would be refused, or be taken as all the model
  thought. A text block the model did not sign (one that does not sign its reasoning) is kept
  without a signature. Its bytes count toward `max_stream_bytes` from the first delta, as the
  Anthropic adapter counts thinking (`formats/_reasoning.py`); a block dropped gives them back.
  A second `messageStart` (the response replayed) lets the blocks kept and open go.
- A text block's `citation` deltas (each a whole citation: `title`, `source`,
  `sourceContent`, `location`, as Strands and the AWS samples read them) go with the block's
  place, in order (`Sink._keep_citation`, counted toward `max_stream_bytes` as text is): the
  next turn sends the block back as `{"citationsContent": {"content": [{"text"}],
  "citations": [...]}}`, the shape Converse takes cited text in. A citation may come before
  the block's text: it starts the block, as text does.
- Usage comes from `metadata.usage`, merged like the other formats; `metrics` and `trace` are
  not usage.
- An exception event ends the response: open calls stop, the finish reason is `error`. boto3
  raises these as `botocore.exceptions.EventStreamError` instead, which `assemble` reads the
  same way.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from toolwire.formats._fields import (
    arguments_of,
    copy_usage,
    get,
    index_of,
    merge_usage,
    plain,
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
    folded_reason,
    gave_up,
    is_limit,
    stops_calls,
)
from toolwire.formats._utf16 import Utf16

__all__ = ["BedrockConverseAdapter", "is_converse_event"]

# The event members of `ConverseStreamOutput` in botocore's bedrock-runtime model but `metadata`,
# which is too common a key to tell the format alone (it does with the `usage` it always carries).
_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop"}
)


def _is_exception(key: object) -> bool:
    # The model's exception members (`internalServerException`, `modelStreamErrorException`,
    # `validationException`, `throttlingException`, `serviceUnavailableException`) and any
    # later one, which boto3 raises all the same.
    return isinstance(key, str) and key.endswith("Exception")


def is_converse_event(event: Mapping[object, object]) -> bool:
    """Whether a dict is a ConverseStream event, as boto3 yields it.

    Args:
        event: A chunk that is a mapping.

    Returns:
        True when a member is named after a ConverseStream event or exception.
    """
    for key, value in event.items():
        if key in _EVENTS or _is_exception(key):
            return True
        if key == "metadata" and get(value, "usage") is not None:
            return True
    return False


# Stop reasons that say the model's output itself was malformed: Bedrock could not turn it into
# a valid message (`malformed_model_output`) or a valid tool use (`malformed_tool_use`).
_MALFORMED = frozenset({"malformed_tool_use", "malformed_model_output"})

_Key = int | None
# No text block is open.
_NO_TEXT = object()
_JSON_WHITESPACE = " \t\n\r"


def _blob(value: object) -> bytes | None:
    """A blob member (`redactedContent`, an image's `bytes`): bytes as boto3 gives them, or the
    base64 text of the wire JSON; None for anything else (or text that is no base64), which
    holds nothing that could be sent back."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


@dataclass(slots=True)
class _Image:
    """An `image` block still streaming."""

    format: str
    # Counts its bytes toward `max_stream_bytes` (its format's first); `data` holds the
    # `bytes` pieces joined.
    held: Thought
    # The `s3Location` a delta gave, when the image is one.
    location: dict[str, Any] | None = None
    # A delta said it failed, or held bytes that do not read: it is left out.
    failed: bool = False


def _has_input(arguments: Arguments) -> bool:
    if isinstance(arguments, str):
        return bool(arguments.strip(_JSON_WHITESPACE))
    if isinstance(arguments, bytes):
        return bool(arguments.strip(_JSON_WHITESPACE.encode()))
    return True


def _members(value: object) -> dict[str, Any]:
    """`value` when it is an object (a dict), else no members."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _says_something(start: object) -> bool:
    """Whether a `contentBlockStart`'s `start` names a kind of block: a member that is set."""
    if not isinstance(start, Mapping):
        return False
    return any(value is not None for value in cast("Mapping[object, object]", start).values())


class BedrockConverseAdapter:
    """Per-stream state for ConverseStream event dicts (what boto3's `EventStream` yields)."""

    format: WireFormat = "bedrock-converse"

    __slots__ = (
        "_empty",
        "_fed",
        "_gave_up",
        "_hosted",
        "_images",
        "_kept",
        "_saying",
        "_started",
        "_text",
        "_thoughts",
        "_usage",
        "_utf16",
    )

    def __init__(self) -> None:
        """Start with no content blocks seen."""
        # Open tool blocks, each with whether input (more than whitespace) was fed to it.
        self._fed: dict[_Key, bool] = {}
        # Open blocks that are not ours (server-side tools, tool results, images).
        self._hosted: set[_Key] = set()
        # A tool block that stopped without input, whose end waits for the next event.
        self._empty: list[_Key] = []
        self._usage: dict[str, Any] | None = None
        self._utf16 = Utf16()
        self._gave_up = False
        # A second `messageStart` is the response replayed from its start (a retry after a
        # break): its text is kept once, as on the Anthropic and Responses adapters.
        self._text = ReplayedText()
        # Reasoning blocks still streaming, by block index.
        self._thoughts: dict[_Key, Thought] = {}
        # Image blocks still streaming, by block index.
        self._images: dict[_Key, _Image] = {}
        # `messageStart` came: another one replays the response.
        self._started = False
        # Reasoning blocks kept in this response: a tool block is told how many came before it.
        self._kept = 0
        # The index of the text block open (text comes without a start), or `_NO_TEXT`: text
        # at another index starts a block, whose place the next turn keeps.
        self._saying: _Key | object = _NO_TEXT

    def handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        """Translate one event.

        Args:
            chunk: A ConverseStream event dict (one member: `contentBlockDelta`, ...).
            sink: Receives `feed` / `end` / `stop` / `stop_all` / `limit_reached` calls.

        Returns:
            The event's text, feeds, stop reason and (merged) usage.
        """
        info = self._handle(chunk, sink)
        if info.text:
            info.text = self._text.take(info.text, keep=sink._may_hold(0))  # pyright: ignore[reportPrivateUsage]
        return after_provider_error(info, sink) if self._gave_up else info

    def _handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        info = ChunkInfo()
        delta = get(chunk, "contentBlockDelta")
        if delta is not None:
            self._end_empty(sink)
            self._delta(delta, sink, info)
            return info
        event = get(chunk, "contentBlockStart")
        if event is not None:
            self._end_empty(sink)
            self._start(event, sink, info)
            return info
        event = get(chunk, "contentBlockStop")
        if event is not None:
            self._end_empty(sink)
            self._stop(event, sink)
            return info
        event = get(chunk, "messageStop")
        if event is not None:
            self._message_stop(event, sink, info)
            return info
        event = get(chunk, "metadata")
        if event is not None:
            self._end_empty(sink)
            self._read_usage(get(event, "usage"), info)
            return info
        if get(chunk, "messageStart") is not None:
            self._end_empty(sink)
            self._text.start()
            if self._started:
                # The response comes again from its start, its reasoning blocks too.
                for thought in self._thoughts.values():
                    drop(thought, sink)
                self._thoughts.clear()
                for image in self._images.values():
                    drop(image.held, sink)
                self._images.clear()
                sink._forget_reasoning()  # pyright: ignore[reportPrivateUsage]
                self._kept = 0
                self._saying = _NO_TEXT
            self._started = True
        elif isinstance(chunk, Mapping) and any(
            map(_is_exception, cast("Mapping[object, object]", chunk))
        ):
            # The provider gave up: calls it had not ended must not run, and a block that
            # stopped without input is not known to be a call without parameters.
            self._empty.clear()
            exceptions = {
                key: value
                for key, value in cast("Mapping[object, object]", chunk).items()
                if _is_exception(key)
            }
            gave_up(info, sink, exceptions)
            self._gave_up = True
        return info

    def _start(self, event: object, sink: Sink, info: ChunkInfo) -> None:
        index = index_of(get(event, "contentBlockIndex"))
        if self._saying == index:
            # Another block starts at the text's index: text there after it is a new block.
            self._saying = _NO_TEXT
        start = get(event, "start")
        tool = get(start, "toolUse")
        # A block restarting at an index still open replaces it, as in the Anthropic adapter.
        self._fed.pop(index, None)
        self._hosted.discard(index)
        replaced = self._images.pop(index, None)
        if replaced is not None:
            drop(replaced.held, sink)
        if tool is None and not _says_something(start):
            # A start that says nothing of its block (`start` missing, null or empty): the
            # `toolUse` deltas that follow are kept as those of a block whose start was lost
            # (the call fails, missing its name), rather than dropped as a hosted block's.
            return
        result = get(start, "toolResult") if tool is None else None
        if (tool is not None and get(tool, "type") == "server_tool_use") or result is not None:
            # A server tool's call or its result: Bedrock ran it, the next turn sends it back.
            self._start_server_block(index, tool, result, sink)
            return
        if tool is None:
            self._hosted.add(index)
            image = get(start, "image")
            if image is not None:
                self._start_image(index, image, sink)
            return
        self._fed[index] = False
        wire_id = str_or_none(get(tool, "toolUseId"))
        name = str_or_none(get(tool, "name"))
        # Marked as a call's start, so that the core knows a replayed call for one sent again.
        ordinal = self._utf16.feed(sink, index, id=wire_id, name=name, start=True)
        info.feeds.append(FeedRecord(ordinal, wire_id, name))
        if self._kept:
            # Interleaved reasoning: the next turn sends the blocks back in their places.
            sink.set_metadata(index, "reasoning_before", self._kept)

    def _delta(self, event: object, sink: Sink, info: ChunkInfo) -> None:
        delta = get(event, "delta")
        text = get(delta, "text")
        if isinstance(text, str):
            index = index_of(get(event, "contentBlockIndex"))
            if self._saying != index:
                self._saying = index
                sink._text_block()  # pyright: ignore[reportPrivateUsage]
            info.text += text
            return
        tool = get(delta, "toolUse")
        if tool is None:
            # Looked for only here: a call's fragment pays for no other member.
            reasoning = get(delta, "reasoningContent")
            if reasoning is not None:
                self._reason(index_of(get(event, "contentBlockIndex")), reasoning, sink)
                return
            result = get(delta, "toolResult")
            if result is not None:
                self._result(index_of(get(event, "contentBlockIndex")), result, sink)
                return
            image = get(delta, "image")
            if image is not None:
                self._image(index_of(get(event, "contentBlockIndex")), image, sink)
                return
            citation = get(delta, "citation")
            if citation is not None:
                self._cite(index_of(get(event, "contentBlockIndex")), citation, sink)
            return
        index = index_of(get(event, "contentBlockIndex"))
        arguments = arguments_of(get(tool, "input"))
        if index in self._hosted:
            server = self._thoughts.get(index)
            if server is not None and server.block is not None and isinstance(arguments, str):
                # A server tool's input, kept with its block.
                think(server, arguments, sink)
            return
        if arguments is None or arguments == "":
            return
        # Also for a block whose start never came (quirk 32): its stop then ends the call.
        # Whitespace alone is no input: the model has not begun the value, and the core
        # completes blank arguments as `{}` just as it does none.
        self._fed[index] = self._fed.get(index) or _has_input(arguments)
        ordinal = self._utf16.fragment(sink, index, arguments)  # quirks 23, 41
        if ordinal is not None:
            info.feeds.append(FeedRecord(ordinal, None, None))

    def _cite(self, index: _Key, citation: object, sink: Sink) -> None:
        """A `citation` delta of the text block at `index`, kept whole with the block's place:
        the next turn sends the text back as a `citationsContent` block with its citations.
        One may come before the block's text (a block has no start of its own): it starts the
        block, as text does. None of a block of another kind."""
        if index in self._fed or index in self._hosted or index in self._thoughts:
            return
        if self._saying != index:
            self._saying = index
            sink._text_block()  # pyright: ignore[reportPrivateUsage]
        cite(citation, sink)

    def _reason(self, index: _Key, delta: object, sink: Sink) -> None:
        """A `reasoningContent` delta of the block at `index`; the first one starts it, unless
        the response was refused, when nothing more is kept."""
        redacted = get(delta, "redactedContent")
        thought = self._thoughts.get(index)
        if (thought is not None and thought.block is not None) or index in self._images:
            # None of a server block's or an image's own.
            return
        if thought is None:
            if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
                return
            thought = self._thoughts[index] = Thought(redacted is not None)
        if thought.redacted:
            data = _blob(redacted) or b""
            if data and hold(thought, len(data), sink):
                thought.data += data
            return
        text = get(delta, "text")
        if isinstance(text, str):
            think(thought, text, sink)
        signature = get(delta, "signature")
        if isinstance(signature, str):
            sign(thought, signature, sink)

    def _start_image(self, index: _Key, start: object, sink: Sink) -> None:
        """An `image` block starts: held from its `format` on (one without a format could not
        be sent back), unless the response keeps nothing more (it was refused)."""
        kind = str_or_none(get(start, "format"))
        if not kind or not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            return
        held = Thought(True)
        if hold(held, len(kind.encode()), sink):
            self._images[index] = _Image(kind, held)

    def _image(self, index: _Key, delta: object, sink: Sink) -> None:
        """An `image` delta of the block at `index`: a piece of its `bytes`, its `s3Location`,
        or the `error` that makes it none."""
        image = self._images.get(index)
        if image is None or image.failed:
            return
        source = get(delta, "source")
        piece = get(source, "bytes")
        data = None if piece is None else _blob(piece)
        location = get(source, "s3Location")
        if get(delta, "error") is not None or (piece is not None and data is None):
            image.failed = True
        elif data:
            if hold(image.held, len(data), sink):
                image.held.data += data
        elif isinstance(location, Mapping):
            image.location = plain(cast("Mapping[str, object]", location))
            hold(image.held, len(value_json(image.location).encode()), sink)

    def _end_image(self, index: _Key, sink: Sink) -> None:
        """The block at `index` stopped: an image is kept when it is whole."""
        image = self._images.pop(index, None)
        if image is None:
            return
        held = image.held
        if image.failed or held.dead or not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            drop(held, sink)
        elif held.data:
            sink._keep_converse_image(image.format, bytes(held.data))  # pyright: ignore[reportPrivateUsage]
            self._kept += 1
        elif image.location is not None:
            source = {"s3Location": image.location}
            if keep_block(held, {"image": {"format": image.format, "source": source}}, sink):
                self._kept += 1
        else:
            drop(held, sink)

    def _start_server_block(self, index: _Key, tool: object, result: object, sink: Sink) -> None:
        """A server tool's `toolUse` (`tool`) or `toolResult` (`result`) block starts: held
        whole as its start gave it (`hold_block`), its input or content to come in deltas."""
        self._hosted.add(index)
        replaced = self._thoughts.pop(index, None)
        if replaced is not None:
            drop(replaced, sink)
        block: dict[str, Any]
        if tool is not None:
            block = {"toolUse": _members(item_value(tool))}
        else:
            block = {"toolResult": {**_members(item_value(result)), "content": []}}
        thought = hold_block(block, sink)
        if thought is not None:
            self._thoughts[index] = thought

    def _result(self, index: _Key, pieces: object, sink: Sink) -> None:
        """A `toolResult` delta of the server block at `index`: its pieces of content, in
        order, a `text` piece joined to the text piece before it (text streams in pieces), a
        `json` piece whole."""
        thought = self._thoughts.get(index)
        block = None if thought is None else thought.block
        if thought is None or block is None or not isinstance(pieces, list):
            return
        content = cast("list[dict[str, Any]]", block["toolResult"]["content"])
        for piece in cast("list[object]", pieces):
            value = _members(item_value(piece))
            text = value.get("text")
            if isinstance(text, str):
                if not hold(thought, len(text.encode()), sink):
                    return
                if content and set(content[-1]) == {"text"}:
                    content[-1]["text"] += text
                else:
                    content.append({"text": text})
            elif "json" in value:
                if not hold(thought, len(value_json(value["json"]).encode()), sink):
                    return
                content.append({"json": value["json"]})

    def _end_server_block(self, thought: Thought, block: dict[str, Any], sink: Sink) -> None:
        """A server block stopped: kept with the input its deltas wrote (none: `{}`, as a call
        of a tool without parameters); left out when that is no JSON value."""
        text = close(thought, sink)
        tool = block.get("toolUse")
        if isinstance(tool, dict):
            try:
                given = text.strip(_JSON_WHITESPACE)
                cast("dict[str, Any]", tool)["input"] = read_input(given) if given else {}
            except ValueError:
                drop(thought, sink)
                return
        if keep_block(thought, block, sink):
            self._kept += 1

    def _end_thought(self, index: _Key, sink: Sink) -> None:
        """The block at `index` stopped: a reasoning block is kept when it holds something."""
        thought = self._thoughts.pop(index, None)
        if thought is None:
            return
        if thought.block is not None:
            self._end_server_block(thought, thought.block, sink)
            return
        text = close(thought, sink)
        whole = bool(thought.data) if thought.redacted else bool(text or thought.signature)
        # Once the response is refused, no block is kept, even one counted in full before.
        if not whole or thought.dead or not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            drop(thought, sink)
            return
        sink._keep_converse_reasoning(  # pyright: ignore[reportPrivateUsage]
            text, thought.signature or None, bytes(thought.data) if thought.redacted else None
        )
        self._kept += 1

    def _stop(self, event: object, sink: Sink) -> None:
        index = index_of(get(event, "contentBlockIndex"))
        if self._saying == index:
            self._saying = _NO_TEXT
        self._end_thought(index, sink)
        self._end_image(index, sink)
        self._hosted.discard(index)
        fed = self._fed.pop(index, None)
        if fed is None:
            return
        if not fed:
            self._empty.append(index)
            return
        self._utf16.release(sink, index)
        sink.end(index)

    def _end_empty(self, sink: Sink) -> None:
        # The response went on after a block that stopped without input: a call of a tool
        # without parameters, which the core completes as `{}` when it ends.
        for index in self._empty:
            sink.end(index)
        self._empty.clear()

    def _message_stop(self, event: object, sink: Sink, info: ChunkInfo) -> None:
        reason = str_or_none(get(event, "stopReason"))
        if reason and is_limit(reason):
            # The last call started, if it has no input, was cut before it wrote any: left
            # open, `limit_reached` makes it `truncated` at finish rather than `{}`.
            self._empty.clear()
            sink.limit_reached()
        self._end_empty(sink)
        if reason:
            info.finish_reason = reason
            if folded_reason(reason) in _MALFORMED:
                sink.stop_all(reason)
            elif stops_calls(reason):
                sink.stop(reason)

    def _read_usage(self, usage: object, info: ChunkInfo) -> None:
        if usage is None:
            return
        merged = merge_usage(self._usage, usage)
        if isinstance(merged, dict):
            self._usage = merged
            info.usage = copy_usage(merged)

    def flush(self, sink: Sink) -> None:
        """The stream ends: hand the core what is still held (an unpaired surrogate half).

        A block that stopped without input just before the end is left open: if the stream
        broke off there, the interruption makes it `truncated`; otherwise `finish` completes it
        as `{}`, as any open call without arguments.
        """
        self._utf16.flush(sink)
