"""Reasoning the next request must send back, as the adapters keep it for `Assembler.reasoning`.

Design notes:
- A block that streams (Anthropic's `thinking`, Bedrock's `reasoningContent`) is held in a
  `Thought` while it streams, and every byte of it counts toward `max_stream_bytes` as
  assistant text does (`Sink._keep_text`), from its first delta: a stream of reasoning cannot
  make the assembler hold more than the limit. Bytes that do not fit refuse the response whole;
  the block then keeps nothing, its bytes given back (`Sink._release`), as is a block dropped.
  The raw SSE path counts the same bytes (`rust/src/envelope/thinking.rs`).
- The text is decoded as assistant text is: a surrogate pair split between two deltas is
  joined, a half left unpaired at the block's end is U+FFFD.
- A Responses `reasoning` item is kept whole from its `output_item.done`, written as JSON text
  the way the raw SSE path writes it (`item_json`), so that both paths count and keep the same
  bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from toolwire.formats._fields import plain
from toolwire.formats._types import Sink
from toolwire.formats._utf16 import replace_lone_surrogates, text_piece

__all__ = [
    "Thought",
    "cite",
    "close",
    "drop",
    "hold",
    "hold_block",
    "item_json",
    "item_value",
    "keep_block",
    "read_input",
    "sign",
    "think",
    "value_json",
]


@dataclass(slots=True)
class Thought:
    """A reasoning block still streaming."""

    redacted: bool
    # The reasoning (Anthropic: or the redacted data) so far, in pieces.
    text: list[str] = field(default_factory=lambda: [])
    # Bedrock's redacted reasoning so far (a blob).
    data: bytearray = field(default_factory=bytearray)
    signature: str = ""
    # A high surrogate that ended the last delta, waiting for its other half.
    half: str = ""
    # Bytes counted toward `max_stream_bytes` for this block.
    counted: int = 0
    # Some of its bytes did not fit: it keeps nothing (the response is refused whole).
    dead: bool = False
    # A server block (`hold_block`: an Anthropic server tool's call or result, a Bedrock
    # server tool's `toolUse` or `toolResult`): the block as its start gave it; `text` then
    # holds its input as its input deltas wrote it.
    block: dict[str, Any] | None = None


def hold(thought: Thought, n: int, sink: Sink) -> bool:
    """Counts `n` more bytes of `thought`, as assistant text is counted; when they do not fit,
    the block is dropped (its bytes given back) and keeps nothing more."""
    if thought.dead:
        return False
    if sink._keep_text(n):  # pyright: ignore[reportPrivateUsage]
        thought.counted += n
        return True
    drop(thought, sink)
    thought.text, thought.signature, thought.counted, thought.dead = [], "", 0, True
    thought.block = None
    thought.data.clear()
    return False


def think(thought: Thought, text: str, sink: Sink) -> None:
    """Appends a piece of the block's text."""
    piece, thought.half = text_piece(thought.half, text)
    if piece and hold(thought, len(piece.encode()), sink):
        thought.text.append(piece)


def sign(thought: Thought, signature: str, sink: Sink) -> None:
    """A signature replaces the one before (the `anthropic` SDK's accumulator sets it)."""
    if thought.redacted or thought.dead:
        return
    signature = replace_lone_surrogates(signature)
    if thought.signature:
        old = len(thought.signature.encode())
        thought.counted -= old
        sink._release(old)  # pyright: ignore[reportPrivateUsage]
    thought.signature = ""
    if signature and hold(thought, len(signature.encode()), sink):
        thought.signature = signature


def close(thought: Thought, sink: Sink) -> str:
    """The block's text once it stopped: a half still held is U+FFFD."""
    if thought.half and hold(thought, 3, sink):
        thought.text.append("\ufffd")
    thought.half = ""
    return "".join(thought.text)


def drop(thought: Thought, sink: Sink) -> None:
    """Lets go of what a block that will not be kept counted."""
    if thought.counted:
        sink._release(thought.counted)  # pyright: ignore[reportPrivateUsage]


def hold_block(value: object, sink: Sink) -> Thought | None:
    """A server block starts as `value` (JSON-shaped): held whole, counted as its JSON text, and
    never a call; None when the response keeps nothing more (it was refused)."""
    if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
        return None
    thought = Thought(False)
    if isinstance(value, dict) and hold(thought, len(value_json(value).encode()), sink):
        thought.block = cast("dict[str, Any]", value)
    return thought


def keep_block(thought: Thought, block: dict[str, Any], sink: Sink) -> bool:
    """A server block stopped whole: kept as `block`, counted as kept in place of what it
    counted while it streamed; whether it was kept (not once the response is refused)."""
    drop(thought, sink)
    if thought.dead or not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
        return False
    kept = value_json(block)
    if not sink._keep_text(len(kept.encode())):  # pyright: ignore[reportPrivateUsage]
        return False
    sink._keep_reasoning_item(kept)  # pyright: ignore[reportPrivateUsage]
    return True


def read_input(text: str) -> Any:
    """A server tool's input as its deltas wrote it (`text`), read as one JSON value.

    Raises:
        ValueError: It is no JSON value (`NaN` and `Infinity` are none, as on the raw path).
    """
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError as e:
        raise ValueError("the input nests too deep") from e


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is no JSON value")


def item_json(item: object) -> str:
    """A Responses item (an SDK model or a dict) as the JSON text the raw SSE path keeps: its
    members as sent, in order, written without spaces; every non-ASCII character escaped when
    it holds an unpaired surrogate, which UTF-8 cannot carry."""
    return value_json(item_value(item))


def item_value(item: object) -> Any:
    """A Responses item or an Anthropic block (an SDK model or a dict) as JSON-shaped values:
    an SDK model's members are the ones the event sent (`exclude_unset`), a null one included,
    as the raw path and a dict keep them."""
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
    return plain(item)


def cite(citation: object, sink: Sink) -> None:
    """Keeps a citation of the text block begun last (an Anthropic `citations_delta`'s, a
    Bedrock `citation` delta), if it is an object, written as the raw SSE path writes it: it
    goes with the block's place, and back on the block in the next turn."""
    value = item_value(citation)
    if isinstance(value, dict):
        sink._keep_citation(value_json(value))  # pyright: ignore[reportPrivateUsage]


def value_json(value: Any) -> str:
    """`value` as the JSON text the raw SSE path keeps for an item (see `item_json`)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode()
    except UnicodeEncodeError:
        text = json.dumps(value, separators=(",", ":"))
    return text
