"""Builders for provider stream bodies, split plans, and a recording stand-in for the core.

Everything here is deterministic: a test that builds a stream gets the same bytes every run.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "streams"

Event = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# SSE bodies


_LONE = re.compile("[\ud800-\udfff]")


def json_text(value: Any) -> str:
    """Compact JSON with non-ASCII text as is, as providers send it.

    A lone surrogate (half of a pair a UTF-16 producer split between two fragments, quirk 41)
    has no UTF-8 form: it is written as its `\\uXXXX` escape, as a JSON encoder writes it."""
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", data)


def joined_text(fragments: Iterable[str]) -> str:
    """The fragments' text as a call carries it: surrogate halves split between fragments
    paired again, a half left alone written back as its escape."""
    text = "".join(fragments)
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def sse_body(events: Iterable[Event], fmt: str) -> bytes:
    """Render events as the provider's SSE body (Chat: data-only plus [DONE]; Gemini: data-only;
    others: named), each event's data as `json_text` writes it."""
    out: list[str] = []
    for event in events:
        data = json_text(event)
        if fmt in ("openai-chat", "gemini"):
            out.append(f"data: {data}\n\n")
        else:
            out.append(f"event: {event['type']}\ndata: {data}\n\n")
    if fmt == "openai-chat":
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()


def load_events(name: str) -> tuple[str, list[Event]]:
    """A recorded stream from tests/data/streams: (format, events). First line names the format."""
    lines = (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    return header["format"], [json.loads(line) for line in lines[1:] if line.strip()]


def fixture_names() -> list[str]:
    return sorted(p.stem for p in DATA.glob("*.jsonl"))


def write_events(name: str, fmt: str, events: Sequence[Event], note: str) -> None:
    lines = [json.dumps({"format": fmt, "note": note}, ensure_ascii=False)]
    lines += [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events]
    (DATA / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Split plans: where the server cuts the body into separate writes


def split_points(body: bytes, mode: str) -> list[int]:
    """Offsets (exclusive ends) at which to cut `body` into writes."""
    n = len(body)
    if mode == "whole":
        return [n]
    if mode == "bytewise":
        return list(range(1, n + 1))
    if mode.startswith("random"):
        rng = random.Random(mode)
        cuts: list[int] = []
        pos = 0
        while pos < n:
            pos = min(n, pos + rng.randint(1, 64))
            cuts.append(pos)
        return cuts
    if mode == "adversarial":
        return adversarial_points(body)
    raise ValueError(mode)


def adversarial_points(body: bytes) -> list[int]:
    """Cut inside every multi-byte UTF-8 character, between the two newlines ending an event,
    inside `data:` and `event:` prefixes and right after every backslash."""
    cuts: set[int] = set()
    for i, b in enumerate(body):
        if 0x80 <= b < 0xC0 and i > 0:  # continuation byte: cut before it
            cuts.add(i)
        if b == 0x5C:  # backslash: the escape's next byte arrives separately
            cuts.add(i + 1)
        if body[i : i + 2] == b"\n\n":
            cuts.add(i + 1)
        if body[i : i + 5] == b"data:":
            cuts.add(i + 2)
        if body[i : i + 6] == b"event:":
            cuts.add(i + 3)
    cuts.add(len(body))
    return sorted(c for c in cuts if 0 < c <= len(body))


def pieces(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    out: list[bytes] = []
    start = 0
    for cut in cuts:
        if cut > start:
            out.append(body[start:cut])
            start = cut
    if start < len(body):
        out.append(body[start:])
    return out


# ---------------------------------------------------------------------------------------------
# Chat Completions


def chat_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    choices: list[dict[str, Any]] | None = None,
    usage: dict[str, Any] | None = None,
    chunk_id: str = "chatcmpl-toolwire",
) -> Event:
    if choices is None:
        choices = [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]
    chunk: Event = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": 1_760_000_000,
        "model": "test-model",
        "choices": choices,
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def tc(
    index: int | None = 0,
    *,
    id: str | None = None,
    name: str | None = None,
    arguments: Any = None,
    type: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One `tool_calls[]` entry; keys left as None are omitted (as many servers do)."""
    entry: dict[str, Any] = {}
    if index is not None:
        entry["index"] = index
    if id is not None:
        entry["id"] = id
    if type is not None:
        entry["type"] = type
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        entry["function"] = function
    entry.update(extra)
    return entry


def tool_delta(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": list(entries)}


def fragments(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class Call:
    """A call to stream: what a correct assembler must give back."""

    name: str
    arguments: str
    id: str = ""

    @property
    def value(self) -> Any:
        return json.loads(self.arguments)


def chat_stream(
    calls: Sequence[Call],
    *,
    text: str = "",
    size: int = 7,
    interleave: bool = False,
    finish_reason: str = "tool_calls",
    usage: dict[str, Any] | None = None,
) -> list[Event]:
    """A well-formed Chat Completions tool-call stream (OpenAI's own shape)."""
    events: list[Event] = [chat_chunk({"role": "assistant", "content": None})]
    for piece in fragments(text, 5) if text else []:
        events.append(chat_chunk({"content": piece}))
    per_call: list[list[Event]] = []
    for i, call in enumerate(calls):
        seq = [
            chat_chunk(
                tool_delta(
                    tc(i, id=call.id or f"call_{i}", type="function", name=call.name, arguments="")
                )
            )
        ]
        seq += [chat_chunk(tool_delta(tc(i, arguments=f))) for f in fragments(call.arguments, size)]
        per_call.append(seq)
    if interleave:
        while any(per_call):
            for seq in per_call:
                if seq:
                    events.append(seq.pop(0))
    else:
        for seq in per_call:
            events += seq
    events.append(chat_chunk({}, finish_reason=finish_reason))
    if usage is not None:
        events.append(chat_chunk(choices=[], usage=usage))
    return events


# ---------------------------------------------------------------------------------------------
# Responses


def responses_stream(
    calls: Sequence[Call],
    *,
    text: str = "",
    size: int = 7,
    interleave: bool = False,
    status: str = "completed",
    incomplete_reason: str | None = None,
) -> list[Event]:
    seq_no = iter(range(1_000_000))
    resp = {"id": "resp_1", "object": "response", "created_at": 1, "model": "test-model"}
    events: list[Event] = [
        {
            "type": "response.created",
            "sequence_number": next(seq_no),
            "response": {**resp, "status": "in_progress", "output": []},
        },
    ]
    out_index = 0
    output: list[dict[str, Any]] = []
    if text:
        msg = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        events.append(
            {
                "type": "response.output_item.added",
                "sequence_number": next(seq_no),
                "output_index": 0,
                "item": msg,
            }
        )
        for piece in fragments(text, 5):
            events.append(
                {
                    "type": "response.output_text.delta",
                    "sequence_number": next(seq_no),
                    "item_id": "msg_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
            )
        done_msg = {
            **msg,
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        events.append(
            {
                "type": "response.output_item.done",
                "sequence_number": next(seq_no),
                "output_index": 0,
                "item": done_msg,
            }
        )
        output.append(done_msg)
        out_index = 1
    per_call: list[list[Event]] = []
    for k, call in enumerate(calls):
        oi = out_index + k
        item = {
            "type": "function_call",
            "id": f"fc_{k}",
            "call_id": call.id or f"call_{k}",
            "name": call.name,
            "arguments": "",
            "status": "in_progress",
        }
        seq: list[Event] = [
            {"type": "response.output_item.added", "output_index": oi, "item": item}
        ]
        seq += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_{k}",
                "output_index": oi,
                "delta": f,
            }
            for f in fragments(call.arguments, size)
        ]
        seq.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": f"fc_{k}",
                "output_index": oi,
                "arguments": call.arguments,
            }
        )
        done_item = {**item, "arguments": call.arguments, "status": "completed"}
        seq.append({"type": "response.output_item.done", "output_index": oi, "item": done_item})
        output.append(done_item)
        per_call.append(seq)
    ordered: list[Event] = []
    if interleave:
        while any(per_call):
            for seq in per_call:
                if seq:
                    ordered.append(seq.pop(0))
    else:
        for seq in per_call:
            ordered += seq
    for e in ordered:
        events.append({**e, "sequence_number": next(seq_no)})
    final = {
        **resp,
        "status": status,
        "output": output,
        "usage": {
            "input_tokens": 11,
            "output_tokens": 22,
            "total_tokens": 33,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    if incomplete_reason is not None:
        final["incomplete_details"] = {"reason": incomplete_reason}
    kind = {
        "completed": "response.completed",
        "incomplete": "response.incomplete",
        "failed": "response.failed",
    }[status]
    events.append({"type": kind, "sequence_number": next(seq_no), "response": final})
    return events


# ---------------------------------------------------------------------------------------------
# Anthropic Messages


def anthropic_message_start(message_id: str = "msg_1") -> Event:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "test-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 17, "output_tokens": 1},
        },
    }


def anthropic_thinking(index: int, thought: str = "Let me think.") -> list[Event]:
    """A whole thinking block (text and signature) at content-block `index`."""
    return [
        {
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "thinking_delta", "thinking": thought},
        },
        {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "signature_delta", "signature": "c2ln"},
        },
        {"type": "content_block_stop", "index": index},
    ]


def anthropic_stream(
    calls: Sequence[Call],
    *,
    text: str = "",
    thinking: bool = False,
    size: int = 7,
    stop_reason: str = "tool_use",
    empty_first_delta: bool = True,
) -> list[Event]:
    events: list[Event] = [anthropic_message_start()]
    index = 0
    if thinking:
        events += anthropic_thinking(index)
        index += 1
    if text:
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
        )
        events.append({"type": "ping"})
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": p},
            }
            for p in fragments(text, 5)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    for k, call in enumerate(calls):
        events.append(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id or f"toolu_{k}",
                    "name": call.name,
                    "input": {},
                },
            }
        )
        if empty_first_delta:
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": ""},
                }
            )
        events += [
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": f},
            }
            for f in fragments(call.arguments, size)
        ]
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 42},
        }
    )
    events.append({"type": "message_stop"})
    return events


def well_formed_stream(fmt: str, calls: Sequence[Call], *, size: int = 7) -> list[Event]:
    """A well-formed tool-call stream in `fmt` (`openai-chat`, `openai-responses`,
    `anthropic`)."""
    if fmt == "anthropic":
        return anthropic_stream(calls, size=size)
    if fmt == "openai-responses":
        return responses_stream(calls, size=size)
    return chat_stream(calls, size=size)


def before_the_end(events: list[Event], fmt: str) -> list[Event]:
    """The events before any call or the response ends."""
    if fmt == "anthropic":
        ends = ("content_block_stop", "message_delta", "message_stop")
        return [e for e in events if e["type"] not in ends]
    if fmt == "openai-responses":
        return [e for e in events if "done" not in e["type"] and "completed" not in e["type"]]
    return [e for e in events if not any(c.get("finish_reason") for c in e.get("choices", []))]


# The error event each provider sends when it gives up on a response mid-stream.
PROVIDER_ERRORS: dict[str, Event] = {
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
    "openai-responses": {
        "type": "error",
        "code": "server_error",
        "message": "busy",
        "param": None,
        "sequence_number": 999,
    },
    "openai-chat": {"error": {"message": "busy", "type": "server_error"}},
}


# ---------------------------------------------------------------------------------------------
# Gemini generateContent (REST shape, camelCase)


def gemini_chunk(
    *parts: Event,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    index: int | None = None,
) -> Event:
    """One `GenerateContentResponse` chunk with candidate 0 (or `index`) holding `parts`."""
    candidate: Event = {"content": {"role": "model", "parts": list(parts)}}
    if index is not None:
        candidate["index"] = index
    if finish is not None:
        candidate["finishReason"] = finish
    chunk: Event = {"candidates": [candidate], "modelVersion": "test-model"}
    if usage is not None:
        chunk["usageMetadata"] = usage
    return chunk


def gemini_call(
    name: str | None = None, args: dict[str, Any] | None = None, **fields: Any
) -> Event:
    """A `functionCall` part; `fields` go on the call (`id`, `willContinue`, `partialArgs`) or,
    for `thoughtSignature`, on the part."""
    call: Event = {}
    if name is not None:
        call["name"] = name
    if args is not None:
        call["args"] = args
    signature = fields.pop("thoughtSignature", None)
    call.update(fields)
    part: Event = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


# ---------------------------------------------------------------------------------------------
# A recording stand-in for the core (adapter tests that need no compiled module)


@dataclass
class RecordingSink:
    """Records the sink calls an adapter makes; ordinals: one per wire key, in first-seen order."""

    calls: list[tuple[Any, ...]] = field(default_factory=list[tuple[Any, ...]])
    keys: dict[int | None, int] = field(default_factory=dict[int | None, int])

    def feed(
        self,
        index: int | None,
        /,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: Any = None,
        type: str | None = None,
        start: bool = False,
    ) -> int:
        # `start` only tells the core that a header may send a call again; the recorded
        # deltas are what the adapter fed.
        self.calls.append(("feed", index, id, name, arguments, type))
        return self.keys.setdefault(index, len(self.keys))

    def end(self, index: int | None) -> None:
        self.calls.append(("end", index))

    def set_metadata(self, index: int | None, key: str, value: Any) -> None:
        self.calls.append(("set_metadata", index, key, value))

    def stop(self, reason: str) -> None:
        self.calls.append(("stop", reason))

    def stop_all(self, reason: str) -> None:
        self.calls.append(("stop_all", reason))

    def _stop_call(self, ordinal: int, reason: str) -> None:
        self.calls.append(("stop_call", ordinal, reason))

    def __len__(self) -> int:
        return len(self.keys)

    def limit_reached(self) -> None:
        self.calls.append(("limit_reached",))

    def interrupt(self, reason: str) -> None:
        self.calls.append(("interrupt", reason))

    def _may_hold(self, n: int) -> bool:
        # Held bytes are not a delta: the recording sink sets no limit.
        return True

    def _tracks_progress(self) -> bool:
        # Progress items are not deltas: the recording sink tracks none.
        return False

    def _stop_progress(self, index: int | None) -> None:
        self.calls.append(("stop_progress", index))

    def _record_progress(
        self, index: int | None, path: str, text: str, string: bool, ends: bool
    ) -> None:
        self.calls.append(("progress", index, path, text, string, ends))

    def _set_aside(self, index: int | None, arguments: Any) -> int | None:
        # Set-aside arguments are not a delta either: kept, with no limit to count them against.
        return 0

    def _hold_fragment(self, n: int) -> bool:
        # A held fragment is not a delta either: held, with no limit.
        return True

    def _release(self, n: int) -> None:
        pass

    def _keep_text(self, n: int) -> bool:
        # Kept text counts against no limit here.
        return True

    def _keep_reasoning(self, text: str, signature: str | None) -> None:
        # Recorded with the deltas: SDK objects and dicts must keep the same blocks.
        self.calls.append(("reasoning", text, signature))

    def _keep_reasoning_item(self, json: str) -> None:
        self.calls.append(("reasoning_item", json))

    def _keep_converse_reasoning(
        self, text: str, signature: str | None, redacted: bytes | None
    ) -> None:
        self.calls.append(("reasoning", text, signature, redacted))

    def _keep_citation(self, json: str) -> bool:
        self.calls.append(("citation", json))
        return True

    def _drop_reasoning(self) -> None:
        self.calls.append(("drop_reasoning",))

    def _forget_reasoning(self) -> None:
        self.calls.append(("forget_reasoning",))

    def _text_block(self, pending: int = 0) -> None:
        self.calls.append(("text_block", pending) if pending else ("text_block",))

    def arguments(self, index: int | None) -> str:
        """Concatenated text fragments fed for one key."""
        return "".join(
            c[4] for c in self.calls if c[0] == "feed" and c[1] == index and isinstance(c[4], str)
        )
