"""The shared stream corpus of toolwire's benchmarks: deterministic, seeded, no files needed.

Every suite in `benches/` (and, through `python benches/corpus.py --write DIR`, the Rust
criterion bench) reads the same streams, so a number in one table can be compared with a number
in another.

What a case holds:

* `texts`: the complete argument text of each call (about 200 B, 2 KB, 20 KB or 200 KB, sized
  to the byte so that growth from one size to the next is exactly 10x in bytes). The text mixes
  nested objects, integers and floats, CJK and emoji both raw and as `\\uXXXX` escapes
  (surrogate pairs included), `\\"`, `\\n`, `\\t` and `\\\\` escapes: what models really emit.
* `deltas`: `(index, id, name, fragment)` tuples cut like real streams, mostly 3-20 bytes, with
  cuts that fall inside escapes. Plain tuples, so that the loop overhead every alternative pays
  is the same and as small as Python allows.
* `byte_deltas`: the same stream cut into `bytes`, where cuts may also fall inside a UTF-8
  character (toolwire and orjson accept bytes; most alternatives do not).
* Parallel cases interleave four calls, as OpenAI-compatible servers do with parallel tool calls.
* Derived views, built on first use: OpenAI Chat Completions chunk dicts, real
  `ChatCompletionChunk` objects, the SSE body (and network-sized pieces of it), Anthropic
  Messages events, and LangChain `AIMessageChunk`s.

Every view is checked against `expected` (the `json.loads` of each text) by the suites before
anything is timed.
"""

from __future__ import annotations

import functools
import json
import random
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = [
    "CASES",
    "PARALLEL",
    "SINGLE",
    "SIZES",
    "TOOL_NAME",
    "Case",
    "Delta",
    "Dimensions",
    "Document",
    "LineItem",
    "get_case",
]

TOOL_NAME = "create_document"
"""The one tool every call in the corpus invokes."""

SIZES: dict[str, int] = {"200B": 200, "2KB": 2_000, "20KB": 20_000, "200KB": 200_000}
"""Argument size of one call, in UTF-8 bytes."""

SINGLE = tuple(f"single-{label}" for label in SIZES)
PARALLEL = ("parallel4-2KB", "parallel4-20KB")
CASES = SINGLE + PARALLEL

Delta = tuple[int, str | None, str | None, str]
"""`(index, id, name, arguments fragment)`: one tool-call delta as the wire carries it."""

ByteDelta = tuple[int, str | None, str | None, bytes]


class Dimensions(BaseModel):
    """A nested object inside every line item."""

    w: float
    h: float
    unit: str


class LineItem(BaseModel):
    """One entry of the `items` array, which carries most of a large call's bytes."""

    sku: str
    qty: int
    price: float
    text: str
    tags: list[str]
    size: Dimensions
    stock: bool
    note: str | None


class Document(BaseModel):
    """The arguments of `create_document`: the Pydantic model of the corpus' only tool."""

    title: str
    lang: str
    summary: str
    priority: int
    items: list[LineItem]


# Text the generator draws from: raw multi-byte characters (2, 3 and 4 bytes in UTF-8, flags
# and skin-tone modifiers), and characters that JSON must escape.
_WORDS = tuple(
    "printer invoice shipment ticket renewal warehouse refund meeting café naïve résumé Zürich "
    "São-Paulo 🚀 ✨ 🎉 👍🏽 🇯🇵 €42 東京都渋谷区 会議室 北京烤鸭 小笼包 "
    "서울특별시 강남구 日本語テキスト".split()
)
_SPECIAL = ('"quoted"', "line\nbreak", "tab\there", "C:\\temp\\x", "bell\u0007", "a/b")


def _phrase(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    if rng.random() < 0.5:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_SPECIAL))
    return " ".join(words)


def _item(rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "sku": f"SKU-{n:05d}",
        "qty": rng.randint(1, 500),
        "price": round(rng.uniform(0.5, 9999.0), 2),
        "text": _phrase(rng, 2, 8),
        "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 3))],
        "size": {
            "w": round(rng.uniform(0.1, 300.0), 3),
            "h": float(rng.randint(1, 90)),
            "unit": rng.choice(["cm", "mm", "in", "インチ"]),
        },
        "stock": rng.random() < 0.7,
        "note": None if rng.random() < 0.3 else _phrase(rng, 1, 3),
    }


def _dump(value: Any, ascii_items: bool) -> str:
    """Compact JSON text, as OpenAI's models emit arguments.

    With `ascii_items`, every third item from the second on is written with `\\uXXXX` escapes
    for every non-ASCII character (surrogate pairs for emoji), as some providers and proxies do.
    """
    items = value["items"]
    head = {k: v for k, v in value.items() if k != "items"}
    parts = [_dump_item(item, ascii_items and i % 3 == 1) for i, item in enumerate(items)]
    text = json.dumps(head, ensure_ascii=False, separators=_COMPACT)
    return text[:-1] + ',"items":[' + ",".join(parts) + "]}"


def _dump_item(item: dict[str, Any], escaped: bool) -> str:
    return json.dumps(item, ensure_ascii=escaped, separators=_COMPACT)


_COMPACT = (",", ":")


def make_arguments(size: int, seed: int) -> str:
    """A `Document` argument text of exactly `size` UTF-8 bytes.

    Items are added until one more would not fit, then `summary` is padded with ASCII so the
    byte count is exact (growth ratios between sizes are then exactly 10x in bytes).
    """
    rng = random.Random(seed)
    value: dict[str, Any] = {
        "title": _phrase(rng, 1, 2)[:12] if size >= 1000 else "Q3",
        "lang": rng.choice(["en", "ja", "zh", "ko", "fr"]),
        "summary": "",
        "priority": rng.randint(1, 5),
        "items": [_SMALL_ITEM],
    }
    # Sizes are tracked per item (each item's text plus its ", " separator), so building a
    # 200 KB text costs one dump per item rather than one per item of the whole document.
    used = len(_dump(value, True).encode())
    while True:
        item = _item(rng, len(value["items"]))
        n = len(value["items"])
        extra = len(_dump_item(item, n % 3 == 1).encode()) + 1
        if used + extra > size:
            break
        value["items"].append(item)
        used += extra
    missing = size - len(_dump(value, True).encode())
    if missing < 0:
        raise ValueError(f"cannot fit a document into {size} bytes")
    value["summary"] = ("ok " * size)[:missing]
    text = _dump(value, True)
    assert len(text.encode()) == size, (len(text.encode()), size)
    return text


# The first item of every document: short, so that even the 200 B call has a nested object,
# raw CJK and emoji, and `\"`, `\n` and `\u0007` escapes.
_SMALL_ITEM: dict[str, Any] = {
    "sku": "S1",
    "qty": 2,
    "price": 9.5,
    "text": '東🚀"x\n\u0007',
    "tags": ["é"],
    "size": {"w": 1.5, "h": 2.0, "unit": "cm"},
    "stock": True,
    "note": None,
}


def _fragment_lengths(rng: random.Random, total: int) -> Iterator[int]:
    """Fragment lengths as streamed tokens give them: mostly 3-20 bytes, a few 1-2 or up to 64."""
    done = 0
    while done < total:
        roll = rng.random()
        if roll < 0.05:
            n = rng.randint(1, 2)
        elif roll < 0.95:
            n = rng.randint(3, 20)
        else:
            n = rng.randint(21, 64)
        n = min(n, total - done)
        done += n
        yield n


def cut_text(text: str, seed: int) -> list[str]:
    """Cuts a text into `str` fragments at byte lengths from `_fragment_lengths`.

    A cut that would split a UTF-8 character moves to the character's end (a `str` cannot hold
    half a character); cuts inside `\\uXXXX`, `\\"` and other escapes are kept.
    """
    data = text.encode()
    rng = random.Random(seed)
    out: list[str] = []
    start = 0
    target = 0
    for n in _fragment_lengths(rng, len(data)):
        target += n
        pos = target
        while pos < len(data) and (data[pos] & 0xC0) == 0x80:
            pos += 1
        if pos > start:
            out.append(data[start:pos].decode())
            start = pos
    return out


def cut_bytes(data: bytes, seed: int) -> list[bytes]:
    """Cuts bytes anywhere, inside UTF-8 characters and escapes alike."""
    rng = random.Random(seed)
    out: list[bytes] = []
    start = 0
    for n in _fragment_lengths(rng, len(data)):
        out.append(data[start : start + n])
        start += n
    return out


def _interleave(per_call: list[list[Any]], seed: int) -> list[tuple[int, Any]]:
    """Merges the calls' fragment lists in a random order that keeps each call's own order.

    Calls start one after another (the first fragment of call k comes after the first of call
    k-1), as providers announce parallel calls in index order.
    """
    rng = random.Random(seed)
    cursors = [0] * len(per_call)
    started = 0
    out: list[tuple[int, Any]] = []
    remaining = sum(len(f) for f in per_call)
    while remaining:
        live = [i for i in range(min(started + 1, len(per_call))) if cursors[i] < len(per_call[i])]
        i = rng.choice(live)
        if i == started:
            started += 1
        out.append((i, per_call[i][cursors[i]]))
        cursors[i] += 1
        remaining -= 1
    return out


def call_id(index: int) -> str:
    """The wire id of the call at `index` (deterministic, OpenAI-shaped)."""
    return f"call_{index:02d}bench{index * 7919:08d}"


class Case:
    """One stream of the corpus and every view of it the suites need.

    Attributes:
        name: `single-200B` ... `single-200KB`, `parallel4-2KB`, `parallel4-20KB`.
        size: The size label of one call's arguments (`200B` ... `200KB`).
        texts: The complete argument text of each call, in index order.
        expected: `json.loads` of each text: what every alternative must produce.
        deltas: `(index, id, name, str fragment)`; id and name ride on a call's first delta.
        byte_deltas: The same calls cut as bytes, anywhere.
        arg_bytes: Argument bytes of all calls.
    """

    def __init__(self, name: str, variant: int = 0) -> None:
        """`variant` 0 is the timed corpus; another gives other streams of the same kind (the
        profile-guided build trains on those, so that its profile is not of the timed bytes)."""
        kind, label = name.split("-", 1)
        self.name = name
        self.size = label
        calls = 4 if kind.startswith("parallel") else 1
        size = SIZES[label]
        base = SIZES[label] + (1 if calls > 1 else 0) + variant * 1_000_003
        self.texts: tuple[str, ...] = tuple(
            make_arguments(size, base * 10 + i) for i in range(calls)
        )
        self.expected: tuple[Any, ...] = tuple(json.loads(t) for t in self.texts)
        self.arg_bytes = sum(len(t.encode()) for t in self.texts)
        text_frags = [cut_text(t, base * 100 + i) for i, t in enumerate(self.texts)]
        byte_frags = [cut_bytes(t.encode(), base * 1000 + i) for i, t in enumerate(self.texts)]
        self.deltas: tuple[Delta, ...] = tuple(_with_heads(_interleave(text_frags, base)))
        self.byte_deltas: tuple[ByteDelta, ...] = tuple(
            _with_heads(_interleave(byte_frags, base + 1))
        )

        self.variant = variant

    def __repr__(self) -> str:
        variant = f", {self.variant}" if self.variant else ""
        return f"Case({self.name!r}{variant})"

    @property
    def calls(self) -> int:
        """Number of tool calls in the stream."""
        return len(self.texts)

    @property
    def fragments(self) -> int:
        """Number of argument fragments (str cut)."""
        return len(self.deltas)

    @functools.cached_property
    def fragments_by_call(self) -> list[list[str]]:
        """The str fragments of each call, in order (for suites that feed one call alone)."""
        out: list[list[str]] = [[] for _ in self.texts]
        for index, _id, _name, frag in self.deltas:
            out[index].append(frag)
        return out

    @functools.cached_property
    def chunk_dicts(self) -> list[dict[str, Any]]:
        """OpenAI Chat Completions stream chunks, as the SSE `data:` JSON carries them."""
        base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000}
        base["model"] = "gpt-4.1-mini"
        first = {"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}
        out = [{**base, "choices": [first]}]
        for index, id_, name, frag in self.deltas:
            call: dict[str, Any] = {"index": index}
            if id_ is not None:
                call["id"] = id_
                call["type"] = "function"
                call["function"] = {"name": name, "arguments": frag}
            else:
                call["function"] = {"arguments": frag}
            choice = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
            out.append({**base, "choices": [choice]})
        last = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
        out.append({**base, "choices": [last]})
        return out

    @functools.cached_property
    def chunks(self) -> list[Any]:
        """The same chunks as real `openai.types.chat.ChatCompletionChunk` objects."""
        from openai.types.chat import ChatCompletionChunk

        return [ChatCompletionChunk.model_validate(d) for d in self.chunk_dicts]

    @functools.cached_property
    def sse_body(self) -> bytes:
        """The stream as an OpenAI Chat Completions SSE response body."""
        lines = [
            b"data: " + json.dumps(d, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
            for d in self.chunk_dicts
        ]
        return b"".join(lines) + b"data: [DONE]\n\n"

    @functools.cached_property
    def sse_pieces(self) -> list[bytes]:
        """The SSE body as network reads deliver it: 256 B - 4 KB pieces cut anywhere."""
        rng = random.Random(len(self.sse_body))
        out: list[bytes] = []
        start = 0
        body = self.sse_body
        while start < len(body):
            n = rng.randint(256, 4096)
            out.append(body[start : start + n])
            start += n
        return out

    @functools.cached_property
    def anthropic_events(self) -> list[Any]:
        """The calls as Anthropic Messages stream events (SDK objects).

        Anthropic streams content blocks one after another, so parallel calls arrive in block
        order rather than interleaved; the fragments are the same.
        """
        from anthropic.types import RawMessageStreamEvent
        from pydantic import TypeAdapter

        adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
        usage = {"input_tokens": 10, "output_tokens": 1}
        message = {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        raw: list[dict[str, Any]] = [{"type": "message_start", "message": message}]
        for index, frags in enumerate(self.fragments_by_call):
            block = {"type": "tool_use", "id": f"toolu_{index:02d}", "name": TOOL_NAME}
            raw.append({"type": "content_block_start", "index": index, "content_block": block})
            raw[-1]["content_block"]["input"] = {}
            for frag in frags:
                delta = {"type": "input_json_delta", "partial_json": frag}
                raw.append({"type": "content_block_delta", "index": index, "delta": delta})
            raw.append({"type": "content_block_stop", "index": index})
        raw.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 99},
            }
        )
        raw.append({"type": "message_stop"})
        return [adapter.validate_python(e) for e in raw]

    @functools.cached_property
    def gemini_streamed(self) -> list[dict[str, Any]]:
        """Each call as Vertex AI streams arguments (`streamFunctionCallArguments`), REST dicts.

        A part naming the call, then one part per argument piece: a JSON Path and a scalar,
        strings cut where the corpus cuts its fragments (`willContinue` on each piece but a
        string's last). partialArgs carry scalars only, so an empty list or object cannot be
        sent: `gemini_expected` is the arguments without them.
        """
        return _gemini_streamed(self.gemini_expected, len(self.texts[0]))

    @functools.cached_property
    def gemini_long_string(self) -> list[dict[str, Any]]:
        """`gemini_streamed` of one string argument: each call's whole text, as a note."""
        return _gemini_streamed(self.gemini_long_expected, len(self.texts[0]))

    @functools.cached_property
    def gemini_long_expected(self) -> list[Any]:
        """The arguments `gemini_long_string` carries."""
        return [{"note": text} for text in self.texts]

    @functools.cached_property
    def gemini_expected(self) -> list[Any]:
        """The arguments `gemini_streamed` carries: `expected` without empty containers."""
        return [_without_empty(value) for value in self.expected]

    @functools.cached_property
    def gemini_sse_body(self) -> bytes:
        """`gemini_streamed` as the SSE body of `streamGenerateContent?alt=sse`."""
        events = (
            json.dumps(c, ensure_ascii=False, separators=_COMPACT) for c in self.gemini_streamed
        )
        return b"".join(b"data: " + event.encode() + b"\r\n\r\n" for event in events)

    @functools.cached_property
    def langchain_chunks(self) -> list[Any]:
        """The deltas as LangChain `AIMessageChunk`s with `tool_call_chunks`."""
        from langchain_core.messages import AIMessageChunk

        return [
            AIMessageChunk(
                content="",
                tool_call_chunks=[{"name": name, "args": frag, "id": id_, "index": index}],
            )
            for index, id_, name, frag in self.deltas
        ]

    def cut_stats(self) -> dict[str, int]:
        """How many str cuts fall inside an escape, and byte cuts inside a UTF-8 character."""
        in_escape = 0
        for index, text in enumerate(self.texts):
            data = text.encode()
            pos = 0
            escapes = _escape_interiors(data)
            for frag in self.fragments_by_call[index][:-1]:
                pos += len(frag.encode())
                in_escape += pos in escapes
        in_char = 0
        per_call: dict[int, int] = {}
        for index, _id, _name, frag in self.byte_deltas:
            pos = per_call.get(index, 0) + len(frag)
            per_call[index] = pos
            data = self.texts[index].encode()
            in_char += pos < len(data) and (data[pos] & 0xC0) == 0x80
        return {"cuts_in_escape": in_escape, "cuts_in_utf8_char": in_char}


def _gemini_streamed(values: list[Any], seed: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, value in enumerate(values):
        start = {"name": TOOL_NAME, "id": call_id(index), "willContinue": True}
        out.append(_gemini_chunk({"functionCall": start}))
        pieces = list(_gemini_pieces("$", value, random.Random(index + seed)))
        for n, piece in enumerate(pieces):
            call: dict[str, Any] = {"partialArgs": [piece]}
            if n + 1 < len(pieces):
                call["willContinue"] = True
            out.append(_gemini_chunk({"functionCall": call}))
    out.append({**_gemini_chunk(), "candidates": [{"index": 0, "finishReason": "STOP"}]})
    return out


def _gemini_chunk(*parts: dict[str, Any]) -> dict[str, Any]:
    content = {"role": "model", "parts": list(parts)}
    return {"candidates": [{"index": 0, "content": content}], "modelVersion": "gemini-3-pro"}


def _gemini_pieces(path: str, value: Any, rng: random.Random) -> Iterator[dict[str, Any]]:
    """The partialArgs pieces of `value` at JSON Path `path`, in document order."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _gemini_pieces(f"{path}.{key}", item, rng)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _gemini_pieces(f"{path}[{i}]", item, rng)
    elif isinstance(value, str):
        at, more = 0, True
        while more:
            size = rng.randint(3, 20)
            piece = {"jsonPath": path, "stringValue": value[at : at + size]}
            at += size
            more = at < len(value)
            if more:
                piece["willContinue"] = True
            yield piece
    elif isinstance(value, bool):
        yield {"jsonPath": path, "boolValue": value}
    elif value is None:
        yield {"jsonPath": path, "nullValue": "NULL_VALUE"}
    else:
        yield {"jsonPath": path, "numberValue": value}


def _without_empty(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_empty(v) for k, v in value.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_without_empty(v) for v in value if v not in ({}, [])]
    return value


def _escape_interiors(data: bytes) -> set[int]:
    """Byte positions strictly inside a backslash escape (`\\n`, `\\uXXXX`) of a JSON text."""
    out: set[int] = set()
    i = 0
    while i < len(data):
        if data[i] == 0x5C:  # backslash
            length = 6 if data[i + 1] == 0x75 else 2  # \uXXXX or a two-byte escape
            out.update(range(i + 1, i + length))
            i += length
        else:
            i += 1
    return out


def _with_heads(merged: list[tuple[int, Any]]) -> Iterator[tuple[int, str | None, str | None, Any]]:
    """Puts the id and the name on each call's first delta, as OpenAI does."""
    seen: set[int] = set()
    for index, frag in merged:
        if index in seen:
            yield (index, None, None, frag)
        else:
            seen.add(index)
            yield (index, call_id(index), TOOL_NAME, frag)


@functools.cache
def get_case(name: str) -> Case:
    """The case called `name`, built once per process and shared by every suite."""
    return Case(name)


def write_corpus(directory: Path) -> None:
    """Writes each case's byte fragments for the Rust bench (`benches/rust_bench.rs`).

    Format of `<case>.frags`, little-endian: u32 fragment count, then per fragment a u32 call
    index, a u32 length and the bytes. `<case>.str.frags` holds the str cut in the same format.
    A binary format, because byte fragments may end inside a UTF-8 character.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        case = get_case(name)
        for suffix, deltas in (
            ("frags", [(i, f) for i, _, _, f in case.byte_deltas]),
            ("str.frags", [(i, f.encode()) for i, _, _, f in case.deltas]),
        ):
            out = bytearray(struct.pack("<I", len(deltas)))
            for index, frag in deltas:
                out += struct.pack("<II", index, len(frag)) + frag
            (directory / f"{name}.{suffix}").write_bytes(bytes(out))


def main(argv: list[str]) -> int:
    """`python benches/corpus.py --write DIR` writes the corpus; without arguments, a summary."""
    if len(argv) == 2 and argv[0] == "--write":
        write_corpus(Path(argv[1]))
        return 0
    if argv:
        print("usage: python benches/corpus.py [--write DIR]", file=sys.stderr)
        return 2
    for name in CASES:
        case = get_case(name)
        mean = case.arg_bytes / case.fragments
        print(
            f"{name:16} calls={case.calls} bytes={case.arg_bytes:>7} "
            f"fragments={case.fragments:>6} mean={mean:4.1f} B {case.cut_stats()}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
