"""A seeded generator of realistic tool-call streams in the three wire formats, with faults.

`generate(seed, fmt)` builds one stream from a `random.Random` seeded with `fmt` and `seed`:
text before and between calls, thinking or reasoning (Anthropic's also between calls), one to
five parallel calls whose fragments interleave, arguments written as JSON text by hand (so the
bytes are chosen: exponents, negative zero, big integers, raw and escaped CJK and emoji,
surrogate pairs split between fragments as a UTF-16 producer cuts them, every short escape),
usage and a finish reason. `with_fault` then breaks it the way networks and providers do. The
result says what a correct assembler must give back, so a test compares the real SDK path,
`feed_sse` and the expectation on the same bytes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .streamkit import (
    PROVIDER_ERRORS,
    Event,
    adversarial_points,
    anthropic_message_start,
    anthropic_thinking,
    chat_chunk,
    sse_body,
)

FORMATS = ("openai-chat", "openai-responses", "anthropic")
FAULTS = ("truncated", "duplicated", "dropped", "reset", "provider_error")

_NAMES = ("get_weather", "search_docs", "write_file", "list_items", "ping")
_WORDS = ("Oslo", "東京", "😀", "naïve", "x", "Ünïcödé", "€", "🎉🎉", "北京市", "a b", "")


@dataclass
class GenCall:
    """One call of a generated stream: what must come back, and the fragments that carry it."""

    name: str
    id: str
    arguments: str
    fragments: list[str]
    #: The wire index the call reports (Chat `index`, `output_index`, content-block index).
    index: int = 0

    @property
    def expected_arguments(self) -> str:
        # An empty buffer at close becomes `{}` (quirk 25).
        return self.arguments or "{}"


@dataclass
class Generated:
    """A stream, its events, and what a correct assembler gives back for it."""

    seed: int
    fmt: str
    events: list[Event]
    calls: list[GenCall]
    text: str
    finish: str
    #: Every call ends `filtered`: a content filter or a refusal ended the response while the
    #: calls were open (a call its provider had ended, complete, stays as it was).
    stopped: bool = False
    fault: str | None = None
    #: The connection drops after this many body bytes.
    drop_after: int | None = None
    #: A Chat stream ends with `[DONE]` (not after a provider error: the SDK reads no further).
    done: bool = True
    notes: list[str] = field(default_factory=list[str])

    @property
    def body(self) -> bytes:
        body = sse_body(self.events, self.fmt)
        return body if self.done else body.removesuffix(b"data: [DONE]\n\n")


# ---------------------------------------------------------------------------------------------
# Arguments as JSON text


def _number(rng: random.Random) -> str:
    return rng.choice(
        [
            "0",
            "-0",
            "-0.0",
            "1e3",
            "1E+2",
            "-2.5e-3",
            "12345678901234567890123456789",
            "-9007199254740993",
            "3.14159",
            "0.1",
            "18446744073709551617",
            str(rng.randint(-1000, 1000)),
        ]
    )


def _char(rng: random.Random, c: str) -> str:
    """`c` written into a JSON string: raw, or (for non-ASCII) as its `\\uXXXX` escape(s)."""
    if c.isascii() or rng.random() < 0.6:
        return c
    units = c.encode("utf-16-be")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def _string(rng: random.Random) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.55:
            parts += [_char(rng, c) for c in rng.choice(_WORDS)]
        else:
            parts.append(rng.choice(['\\"', "\\\\", "\\n", "\\t", "\\/", "\\r", "\\u00e9", " "]))
    return '"' + "".join(parts) + '"'


def _value(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if depth < 3 and roll < 0.2:
        return _object(rng, depth + 1)
    if depth < 3 and roll < 0.3:
        items = [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return "[" + rng.choice([",", ", "]).join(items) + "]"
    if roll < 0.6:
        return _string(rng)
    if roll < 0.85:
        return _number(rng)
    return rng.choice(["true", "false", "null"])


def _object(rng: random.Random, depth: int) -> str:
    keys = rng.sample(["city", "q", "n", "path", "東", "ключ", "emoji😀", 'a\\"b', "x"], 4)
    members = [f'"{k}": {_value(rng, depth)}' for k in keys[: rng.randint(0, 4)]]
    text = "{" + rng.choice([", ", ",", ",\n  "]).join(members) + "}"
    if depth == 0 and rng.random() < 0.1:
        # Some models pad the arguments with whitespace: still one JSON text.
        text = rng.choice([" ", "\n", "\r\n\t"]) + text + rng.choice(["", " ", "\n"])
    return text


def _split(rng: random.Random, text: str) -> list[str]:
    """Cut `text` into fragments anywhere, also between the two halves of an astral character
    (a UTF-16 producer, quirk 41), and now and then as an empty fragment (quirk 26)."""
    units: list[str] = []
    for c in text:
        if ord(c) > 0xFFFF:
            code = ord(c) - 0x10000
            units += [chr(0xD800 + (code >> 10)), chr(0xDC00 + (code & 0x3FF))]
        else:
            units.append(c)
    out: list[str] = []
    pos = 0
    while pos < len(units):
        step = rng.choice([1, 1, 2, 3, 5, 8, 13])
        # Whole pairs inside one fragment travel joined, as a JSON encoder writes them.
        piece = "".join(units[pos : pos + step])
        out.append(piece.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))
        pos += step
        if rng.random() < 0.05:
            out.append("")
    return out or [""]


def _arguments(rng: random.Random, name: str) -> str:
    if name == "ping" and rng.random() < 0.7:
        return ""
    return _object(rng, 0)


# ---------------------------------------------------------------------------------------------
# Streams


def generate(seed: int, fmt: str) -> Generated:
    """A well-formed stream in `fmt` built from `seed` alone."""
    rng = random.Random(f"{fmt}/{seed}")
    calls = new_calls(rng, seed)
    if fmt == "openai-chat":
        return _chat(rng, seed, calls)
    if fmt == "openai-responses":
        return _responses(rng, seed, calls)
    return _anthropic(rng, seed, calls)


def new_calls(rng: random.Random, seed: int) -> list[GenCall]:
    """One to five calls: a name, arguments as JSON text and the fragments that carry them."""
    calls: list[GenCall] = []
    for k in range(rng.randint(1, 5)):
        name = rng.choice(_NAMES)
        arguments = _arguments(rng, name)
        calls.append(GenCall(name, f"call_{seed}_{k}", arguments, _split(rng, arguments)))
    return calls


def assistant_texts(rng: random.Random, slots: int) -> list[str]:
    """Assistant text before each call and after the last (most slots empty)."""
    return [
        "".join(rng.choice(_WORDS) + " " for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.35
        else ""
        for _ in range(slots)
    ]


def _text_of(events: list[Event]) -> str:
    """The assistant text the events carry, in the order they carry it."""
    out: list[str] = []
    for e in events:
        if "choices" in e:
            out += [c["delta"].get("content") or "" for c in e["choices"]]
        elif e.get("type") == "response.output_text.delta":
            out.append(e["delta"])
        elif e.get("type") == "content_block_delta" and e["delta"]["type"] == "text_delta":
            out.append(e["delta"]["text"])
    return "".join(out)


def _interleave(rng: random.Random, lanes: list[list[Event]]) -> list[Event]:
    """The lanes' events merged in a random order that keeps each lane's own order."""
    lanes = [list(lane) for lane in lanes if lane]
    out: list[Event] = []
    while lanes:
        lane = rng.choice(lanes)
        out.append(lane.pop(0))
        if not lane:
            lanes.remove(lane)
    return out


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
    return chat_chunk(delta, finish_reason=finish, chunk_id="chatcmpl-gen")


def _chat(rng: random.Random, seed: int, calls: list[GenCall]) -> Generated:
    texts = assistant_texts(rng, len(calls) + 1)
    events: list[Event] = [_chat_chunk({"role": "assistant", "content": None})]
    if rng.random() < 0.3:
        # DeepSeek-style reasoning: not assistant text, not a call.
        events.append(_chat_chunk({"reasoning_content": "Let me think 🤔."}))
    interleave = rng.random() < 0.6
    lanes: list[list[Event]] = []
    for i, call in enumerate(calls):
        lane: list[Event] = []
        if texts[i]:
            lane.append(_chat_chunk({"content": texts[i]}))
        call.index = i
        first = {"index": i, "id": call.id, "type": "function"}
        head = call.fragments[0] if rng.random() < 0.5 else ""
        rest = call.fragments[1:] if head else call.fragments
        first["function"] = {"name": call.name, "arguments": head}
        lane.append(_chat_chunk({"tool_calls": [first]}))
        lane += [
            _chat_chunk({"tool_calls": [{"index": i, "function": {"arguments": f}}]}) for f in rest
        ]
        lanes.append(lane)
    if interleave:
        events += _interleave(rng, lanes)
    else:
        for lane in lanes:
            events += lane
    if texts[-1]:
        events.append(_chat_chunk({"content": texts[-1]}))
    if rng.random() < 0.3:
        events = _merge_tool_chunks(rng, events)
    finish = rng.choice(["tool_calls", "tool_calls", "stop", "length", "content_filter"])
    last = events[-1]["choices"][0]
    if "tool_calls" in last["delta"] and rng.random() < 0.3:
        # The finish reason on the chunk of the last fragment, as some servers send it.
        last["finish_reason"] = finish
    else:
        events.append(_chat_chunk({}, finish))
    if rng.random() < 0.7:
        usage = {
            "prompt_tokens": 9,
            "completion_tokens": len(events),
            "total_tokens": 9 + len(events),
        }
        events.append(chat_chunk(choices=[], usage=usage, chunk_id="chatcmpl-gen"))
    gen = Generated(seed, "openai-chat", events, calls, _text_of(events), finish)
    gen.stopped = finish == "content_filter"
    return gen


def _merge_tool_chunks(rng: random.Random, events: list[Event]) -> list[Event]:
    """Runs of tool-call chunks folded into chunks of several entries (quirk 6)."""
    out: list[Event] = []
    for event in events:
        delta = event["choices"][0]["delta"] if event.get("choices") else {}
        prev = out[-1]["choices"][0]["delta"] if out and out[-1].get("choices") else {}
        if "tool_calls" in delta and "tool_calls" in prev and rng.random() < 0.6:
            prev["tool_calls"] += delta["tool_calls"]
        else:
            out.append(event)
    return out


def _responses(rng: random.Random, seed: int, calls: list[GenCall]) -> Generated:
    texts = assistant_texts(rng, len(calls) + 1)
    resp = {"id": f"resp_{seed}", "object": "response", "created_at": 1, "model": "test-model"}
    events: list[Event] = [
        {"type": "response.created", "response": {**resp, "status": "in_progress", "output": []}},
        {
            "type": "response.in_progress",
            "response": {**resp, "status": "in_progress", "output": []},
        },
    ]
    out_index = 0
    output: list[dict[str, Any]] = []
    if rng.random() < 0.4:
        item = {"type": "reasoning", "id": "rs_1", "summary": []}
        summary = "Thinking about 東京 😀."
        events += [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {
                "type": "response.reasoning_summary_part.added",
                "item_id": "rs_1",
                "output_index": 0,
                "summary_index": 0,
                "part": {"type": "summary_text", "text": ""},
            },
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": "rs_1",
                "output_index": 0,
                "summary_index": 0,
                "delta": summary,
            },
            {
                "type": "response.reasoning_summary_text.done",
                "item_id": "rs_1",
                "output_index": 0,
                "summary_index": 0,
                "text": summary,
            },
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {**item, "summary": [{"type": "summary_text", "text": summary}]},
            },
        ]
        output.append(item)
        out_index = 1

    def message(text: str) -> list[Event]:
        nonlocal out_index
        oi = out_index
        out_index += 1
        mid = f"msg_{oi}"
        msg = {
            "type": "message",
            "id": mid,
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        seq: list[Event] = [
            {"type": "response.output_item.added", "output_index": oi, "item": msg},
            {
                "type": "response.content_part.added",
                "item_id": mid,
                "output_index": oi,
                "content_index": 0,
                "part": part,
            },
        ]
        for piece in [text[i : i + 4] for i in range(0, len(text), 4)]:
            seq.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": mid,
                    "output_index": oi,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
            )
        done_part = {**part, "text": text}
        seq += [
            {
                "type": "response.output_text.done",
                "item_id": mid,
                "output_index": oi,
                "content_index": 0,
                "text": text,
                "logprobs": [],
            },
            {
                "type": "response.content_part.done",
                "item_id": mid,
                "output_index": oi,
                "content_index": 0,
                "part": done_part,
            },
            {
                "type": "response.output_item.done",
                "output_index": oi,
                "item": {**msg, "status": "completed", "content": [done_part]},
            },
        ]
        return seq

    lanes: list[list[Event]] = []
    for k, call in enumerate(calls):
        if texts[k]:
            events += message(texts[k])
        oi = call.index = out_index
        out_index += 1
        fid = f"fc_{seed}_{k}"
        item = {
            "type": "function_call",
            "id": fid,
            "call_id": call.id,
            "name": call.name,
            "arguments": "",
            "status": "in_progress",
        }
        lane: list[Event] = [
            {"type": "response.output_item.added", "output_index": oi, "item": item}
        ]
        lane += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": fid,
                "output_index": oi,
                "delta": f,
            }
            for f in call.fragments
        ]
        lane.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": fid,
                "output_index": oi,
                "arguments": call.arguments,
            }
        )
        done = {**item, "arguments": call.arguments, "status": "completed"}
        lane.append({"type": "response.output_item.done", "output_index": oi, "item": done})
        output.append(done)
        lanes.append(lane)
    events += _interleave(rng, lanes) if rng.random() < 0.6 else [e for lane in lanes for e in lane]
    if texts[-1]:
        events += message(texts[-1])
    finish = rng.choice(["completed", "completed", "max_output_tokens", "content_filter"])
    final = {
        **resp,
        "status": "completed" if finish == "completed" else "incomplete",
        "output": output,
        "usage": {
            "input_tokens": 11,
            "output_tokens": len(events),
            "total_tokens": 11 + len(events),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 3},
        },
    }
    if finish != "completed":
        final["incomplete_details"] = {"reason": finish}
    kind = "response.completed" if finish == "completed" else "response.incomplete"
    events.append({"type": kind, "response": final})
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return Generated(seed, "openai-responses", events, calls, _text_of(events), finish)


def _anthropic(rng: random.Random, seed: int, calls: list[GenCall]) -> Generated:
    texts = assistant_texts(rng, len(calls) + 1)
    events: list[Event] = [anthropic_message_start(f"msg_{seed}")]
    block = 0

    def text_block(text: str) -> list[Event]:
        nonlocal block
        b = block
        block += 1
        seq: list[Event] = [
            {
                "type": "content_block_start",
                "index": b,
                "content_block": {"type": "text", "text": ""},
            }
        ]
        seq += [
            {"type": "content_block_delta", "index": b, "delta": {"type": "text_delta", "text": p}}
            for p in [text[i : i + 3] for i in range(0, len(text), 3)]
        ]
        seq.append({"type": "content_block_stop", "index": b})
        return seq

    if rng.random() < 0.4:
        events += anthropic_thinking(0, "Hmm, 東京 😀?")
        block = 1
    lanes: list[list[Event]] = []
    for k, call in enumerate(calls):
        if texts[k]:
            events += text_block(texts[k])
        if rng.random() < 0.2:
            events.append({"type": "ping"})
        if k and rng.random() < 0.2:
            # Interleaved thinking: a thinking block between tool calls.
            events += anthropic_thinking(block, "Next, 😀.")
            block += 1
        b = call.index = block
        block += 1
        lane: list[Event] = [
            {
                "type": "content_block_start",
                "index": b,
                "content_block": {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": {},
                },
            }
        ]
        lane += [
            {
                "type": "content_block_delta",
                "index": b,
                "delta": {"type": "input_json_delta", "partial_json": f},
            }
            for f in call.fragments
        ]
        lane.append({"type": "content_block_stop", "index": b})
        lanes.append(lane)
    # Anthropic itself streams one block at a time; translators from parallel Chat calls don't.
    events += _interleave(rng, lanes) if rng.random() < 0.3 else [e for lane in lanes for e in lane]
    if texts[-1]:
        events += text_block(texts[-1])
    finish = rng.choice(["tool_use", "tool_use", "end_turn", "max_tokens", "refusal"])
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": finish, "stop_sequence": None},
            "usage": {"output_tokens": len(events)},
        }
    )
    events.append({"type": "message_stop"})
    return Generated(seed, "anthropic", events, calls, _text_of(events), finish)


# ---------------------------------------------------------------------------------------------
# Faults


def _argument_events(gen: Generated) -> list[int]:
    kinds = {"response.function_call_arguments.delta"}
    out: list[int] = []
    for i, event in enumerate(gen.events):
        if event.get("type") in kinds:
            out.append(i)
        elif (
            event.get("type") == "content_block_delta"
            and event["delta"]["type"] == "input_json_delta"
        ):
            out.append(i)
        elif (
            gen.fmt == "openai-chat"
            and event.get("choices")
            and "tool_calls" in event["choices"][0]["delta"]
        ):
            out.append(i)
    return out


def with_fault(gen: Generated, fault: str, rng: random.Random) -> Generated:
    """`gen` broken by `fault`; the expectation is then only that both paths agree, every call
    ends once, and a call that runs carries its own arguments (or, for a duplicated fragment,
    its own arguments with that fragment twice)."""
    events = [json.loads(json.dumps(e)) for e in gen.events]
    out = replace(gen, events=events, fault=fault, notes=[*gen.notes])
    args = _argument_events(gen)
    if fault == "duplicated":
        i = rng.choice(args if rng.random() < 0.7 else range(len(events)))
        events.insert(i + 1, json.loads(json.dumps(events[i])))
        out.notes.append(f"event {i} sent twice")
    elif fault == "dropped":
        i = rng.choice(args if rng.random() < 0.7 else range(1, len(events)))
        del events[i]
        out.notes.append(f"event {i} lost")
    elif fault == "truncated":
        # The stream ends cleanly (`length` and the end of the response) in the middle of a call.
        i = rng.choice(args)
        del events[i + 1 :]
        events += _clean_end(gen)
        out.notes.append(f"ended after event {i}")
    elif fault == "reset":
        body = gen.body
        at = out.drop_after = reset_point(body, adversarial_points(body), rng)
        out.notes.append(f"connection reset after {at} bytes")
    elif fault == "provider_error":
        i = end_with_error(events, PROVIDER_ERRORS[gen.fmt], rng)
        out.done = False
        out.notes.append(f"provider error after event {i}")
    else:
        raise ValueError(fault)
    return out


def reset_point(body: bytes, adversarial: Sequence[int], rng: random.Random) -> int:
    """Where the connection drops: at an adversarial point or after any byte."""
    return rng.choice([*adversarial, *range(1, len(body))])


def end_with_error(events: list[Event], error: Event, rng: random.Random) -> int:
    """Replace the events from a random one on (never the first) with the provider's error
    event; returns where they were cut."""
    i = rng.randint(1, len(events) - 1)
    del events[i:]
    events.append(json.loads(json.dumps(error)))
    return i


def _clean_end(gen: Generated) -> list[Event]:
    if gen.fmt == "openai-chat":
        return [_chat_chunk({}, "length")]
    if gen.fmt == "anthropic":
        return [
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
    final = {
        "id": "resp_t",
        "object": "response",
        "created_at": 1,
        "model": "test-model",
        "status": "incomplete",
        "output": [],
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    return [{"type": "response.incomplete", "sequence_number": 10_000, "response": final}]


def cuts_for(
    body: bytes, rng: random.Random, adversarial: Sequence[int] | None = None
) -> list[int]:
    """Where the server cuts its writes: a mix of adversarial points (by default inside UTF-8
    characters, `data:` and `event:` lines, after backslashes, between the newlines ending an
    event; for a binary body, points inside its frames), a stretch of single bytes, and random
    points."""
    if adversarial is None:
        adversarial = adversarial_points(body)
    cuts = set(rng.sample(adversarial, min(len(adversarial), rng.randint(5, 60))))
    start = rng.randrange(len(body))
    cuts.update(range(start, min(len(body), start + rng.randint(0, 80))))
    cuts.update(rng.randrange(1, len(body) + 1) for _ in range(rng.randint(0, 20)))
    cuts.add(len(body))
    return sorted(c for c in cuts if 0 < c <= len(body))
