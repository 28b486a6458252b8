"""Generated Bedrock ConverseStream streams for the generated corpus, with the faults that fit it.

`generate(seed)` builds one response from the same calls, arguments and fragments as
`streamgen.generate` (exponents, big integers, raw and escaped CJK and emoji, surrogate halves
split between fragments as a UTF-16 producer cuts them, every short escape, calls without
parameters): `messageStart`, reasoning blocks (some redacted, some between calls), text blocks
before, between and after the calls (no `contentBlockStart`, quirk 32), one tool block per call
(`contentBlockStart` with `toolUse{toolUseId,name}`, `toolUse.input` string fragments,
`contentBlockStop`), `contentBlockIndex` counting every block, `messageStop` with a
`stopReason`, then `metadata` with usage. Bedrock streams one block at a time, so calls never
interleave. The shapes are botocore's `bedrock-runtime` service model
(`ConverseStreamOutput`), which `test_generated.py` checks the generated events against.

`with_fault` then breaks a response the ways a ConverseStream breaks: the output limit cutting
the last call (`truncated`, `max_tokens` or `model_context_window_exceeded`), a guardrail
stopping it (`guardrail`), the connection dropping inside a frame (`reset`), an exception
event mid-stream (`provider_error`, which boto3 raises as `EventStreamError`). `expected`
says what a correct assembler gives back for what reached the client.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from .bedrockkit import (
    EXCEPTIONS,
    block_stop,
    event_message,
    eventstream_body,
    frame_points,
    message_stop,
    metadata,
    reasoning_block,
    text_block,
    tool_input,
    tool_start,
)
from .streamgen import (
    GenCall,
    assistant_texts,
    cuts_for,
    end_with_error,
    new_calls,
    reset_point,
)
from .streamkit import Call, Event, joined_text

FORMAT = "bedrock-converse"
# `duplicated` and `dropped` (an event sent twice, an event lost whole) are left out: they stand
# for events repeated or lost between a provider and its SDK, which SSE allows (a reconnect
# replays from `Last-Event-ID`, a Responses stream resumes from a `sequence_number`, gateways
# re-emit events). ConverseStream has no such path: its events carry no id or sequence number,
# the protocol has no resumption, botocore never retries a stream it has begun to read, and a
# frame broken in transit fails its length or CRC check (`test_a_message_botocore_cannot_decode`)
# rather than going missing; so a test here would stand for nothing a Bedrock stream does.
FAULTS = ("truncated", "guardrail", "reset", "provider_error")

_STOP_REASONS = (
    "tool_use",
    "tool_use",
    "tool_use",
    "end_turn",
    "stop_sequence",
    "max_tokens",
    "model_context_window_exceeded",
    "guardrail_intervened",
    "content_filtered",
)
LIMITS = ("max_tokens", "model_context_window_exceeded")
_STOPPING = ("guardrail_intervened", "content_filtered")
_ID_CHARS = string.ascii_letters + string.digits + "_-"


@dataclass
class Want:
    """What a correct assembler returns for one call."""

    index: int
    name: str
    id: str
    arguments: str
    value: Any
    kind: str | None


@dataclass
class BedrockGenerated:
    """A ConverseStream response, its events, and how it ends."""

    seed: int
    events: list[Event]
    calls: list[GenCall]
    finish: str
    fault: str | None = None
    #: The connection drops after this many body bytes.
    drop_after: int | None = None
    notes: list[str] = field(default_factory=list[str])

    @property
    def body(self) -> bytes:
        return eventstream_body(self.events)

    @property
    def delivered(self) -> list[Event]:
        """The events boto3 decodes: those whose whole frame arrived before any drop."""
        if self.drop_after is None:
            return self.events
        ends = accumulate(len(event_message(e)) for e in self.events)
        return [e for e, end in zip(self.events, ends, strict=True) if end <= self.drop_after]

    def cuts(self, rng: random.Random) -> list[int]:
        """Where the server cuts its writes: mostly inside frames (prelude, CRCs, headers,
        payload, inside UTF-8 characters and after backslashes), a stretch of single bytes,
        random points."""
        body = self.body
        return cuts_for(body, rng, frame_points(body))


def _tool_use_id(rng: random.Random) -> str:
    # As Bedrock writes them: `tooluse_` and 22 characters of `[A-Za-z0-9_-]`.
    return "tooluse_" + "".join(rng.choice(_ID_CHARS) for _ in range(22))


def generate(seed: int) -> BedrockGenerated:
    """A well-formed ConverseStream response built from `seed` alone."""
    rng = random.Random(f"{FORMAT}/{seed}")
    calls = new_calls(rng, seed)
    texts = assistant_texts(rng, len(calls) + 1)
    events: list[Event] = [{"messageStart": {"role": "assistant"}}]
    block = 0

    def reasoning(thought: str) -> None:
        nonlocal block
        size = rng.choice([2, 6, 40])
        events.extend(reasoning_block(block, thought, size=size, redacted=rng.random() < 0.15))
        block += 1

    def text(words: str) -> None:
        nonlocal block
        events.extend(text_block(block, words, size=rng.choice([1, 3, 5, 8, 64])))
        block += 1

    if rng.random() < 0.4:
        reasoning("Thinking about 東京 😀.")
    for k, call in enumerate(calls):
        call.id = _tool_use_id(rng)
        if call.arguments and rng.random() < 0.2:
            # Whitespace before the value in a fragment of its own, as some models write it:
            # until the value begins, the call cannot be told from one without parameters.
            pad = rng.choice([" ", "\n", "\n  "])
            call.arguments = pad + call.arguments
            call.fragments = [pad, *call.fragments]
        if texts[k]:
            text(texts[k])
        if k and rng.random() < 0.2:
            # Interleaved thinking: a reasoning block between tool blocks.
            reasoning("Next, 😀.")
        call.index = block
        block += 1
        # A call without parameters has one empty `input` or none at all.
        fragments = call.fragments if call.arguments or rng.random() < 0.5 else []
        events.append(tool_start(call.index, Call(call.name, call.arguments, call.id)))
        events += [tool_input(call.index, f) for f in fragments]
        events.append(block_stop(call.index))
    if texts[-1]:
        text(texts[-1])
    finish = rng.choice(_STOP_REASONS)
    events.append(message_stop(finish))
    events.append(_metadata(rng, len(events)))
    return BedrockGenerated(seed, events, calls, finish)


def _metadata(rng: random.Random, output_tokens: int) -> Event:
    usage = {"inputTokens": 17, "outputTokens": output_tokens, "totalTokens": 17 + output_tokens}
    event = metadata(usage)
    event["metadata"]["metrics"]["latencyMs"] = rng.randint(50, 5000)
    return event


def with_fault(gen: BedrockGenerated, fault: str, rng: random.Random) -> BedrockGenerated:
    """`gen` broken by `fault`; `expected` tells what must then come back."""
    events = [json.loads(json.dumps(e)) for e in gen.events]
    out = BedrockGenerated(gen.seed, events, gen.calls, gen.finish, fault, notes=[*gen.notes])
    if fault in ("truncated", "guardrail"):
        reason = rng.choice(LIMITS if fault == "truncated" else _STOPPING)
        i = _cut_in_a_tool_block(events, rng)
        events += [message_stop(reason), _metadata(rng, i)]
        out.finish = reason
        out.notes.append(f"{reason} after event {i}")
    elif fault == "reset":
        body = gen.body
        at = out.drop_after = reset_point(body, frame_points(body), rng)
        out.notes.append(f"connection reset after {at} bytes")
    elif fault == "provider_error":
        error = rng.choice(EXCEPTIONS)
        i = end_with_error(events, error, rng)
        out.finish = "error"
        out.notes.append(f"{next(iter(error))} after event {i}")
    else:
        raise ValueError(fault)
    return out


def _cut_in_a_tool_block(events: list[Event], rng: random.Random) -> int:
    """Cut `events` inside a tool block: right after its start or one of its fragments, or
    right after the stop of a block without input; the block's stop (which a model behind
    Bedrock may still send at the limit or a guardrail, as Anthropic's does) is kept at times.
    Cuts where the input so far is blank (none, empty or whitespace) are favoured: there a
    call without parameters and a call cut before its input look alike.
    Returns the position of the last event kept from the block."""
    tools = {
        e["contentBlockStart"]["contentBlockIndex"] for e in events if "contentBlockStart" in e
    }
    points: list[tuple[int, int]] = []
    text: dict[int, str] = {}
    for i, event in enumerate(events):
        ((kind, body),) = event.items()
        key = body.get("contentBlockIndex")
        if key not in tools:
            continue
        if kind == "contentBlockDelta":
            text[key] = text.get(key, "") + body["delta"]["toolUse"]["input"]
        blank = not text.get(key, "").strip()
        if kind != "contentBlockStop" or blank:
            points += [(i, key)] * (3 if blank else 1)
    i, key = rng.choice(points)
    stopped = "contentBlockStop" in events[i]
    del events[i + 1 :]
    if not stopped and rng.random() < 0.4:
        events.append(block_stop(key))
    return i


# ---------------------------------------------------------------------------------------------
# What a correct assembler returns


@dataclass
class _Block:
    call: GenCall
    fragments: list[str] = field(default_factory=list[str])
    #: The position of the block's stop among the delivered events.
    stop: int | None = None


def expected(gen: BedrockGenerated) -> list[Want]:
    """Every call whose start reached the client, as a correct assembler returns it.

    - A tool block the provider stopped is ended, with its arguments as sent; one that stopped
      with no input is a call without parameters (`{}`) only once the response goes on past
      its stop with anything but the output limit or an exception: a limit right there means
      the model was cut before it wrote the input, and neither an exception nor a dropped
      connection says the call was whole.
    - An exception event, or a `guardrail_intervened` / `content_filtered` stop, means no call
      the provider had not ended whole may run: `filtered`.
    - Otherwise a call whose arguments are one complete value keeps it, even with its block's
      stop lost; incomplete arguments are `truncated`, and so are blank ones the output limit
      or a dropped connection cut before they began.
    """
    delivered = gen.delivered
    by_id = {c.id: c for c in gen.calls}
    blocks: dict[int, _Block] = {}
    stopped = False
    # The output limit or a dropped connection cut the call still open (the last one).
    cut = gen.drop_after is not None
    for n, event in enumerate(delivered):
        ((kind, body),) = event.items()
        if kind == "contentBlockStart":
            blocks[body["contentBlockIndex"]] = _Block(by_id[body["start"]["toolUse"]["toolUseId"]])
        elif kind == "contentBlockDelta" and "toolUse" in body["delta"]:
            blocks[body["contentBlockIndex"]].fragments.append(body["delta"]["toolUse"]["input"])
        elif kind == "contentBlockStop" and body["contentBlockIndex"] in blocks:
            blocks[body["contentBlockIndex"]].stop = n
        elif kind.endswith("Exception") or (kind == "messageStop" and _stops(body)):
            stopped = True
        elif kind == "messageStop" and body["stopReason"] in LIMITS:
            cut = True
    out: list[Want] = []
    for block in blocks.values():
        call = block.call
        text = joined_text(block.fragments)
        blank = not text.strip()
        try:
            json.loads(text)
            complete = True
        except ValueError:
            complete = False
        after = delivered[block.stop + 1 :] if block.stop is not None else []
        ended = block.stop is not None and (not blank or (after != [] and _goes_on(after[0])))
        if stopped:
            kind = None if ended and (complete or blank) else "filtered"
        elif complete or (blank and (ended or not cut)):
            kind = None
        else:
            kind = "truncated"
        # Blank arguments stand in as `{}`, but not for a call cut before they began.
        arguments = text
        if blank:
            arguments = "" if kind == "truncated" else "{}"
        value = json.loads(arguments) if kind is None else None
        out.append(Want(call.index, call.name, call.id, arguments, value, kind))
    return out


def _stops(body: dict[str, Any]) -> bool:
    return body["stopReason"] in _STOPPING


def _goes_on(event: Event) -> bool:
    """Whether the response goes on normally with this event (neither the limit nor an
    exception)."""
    ((kind, body),) = event.items()
    if kind == "messageStop":
        return body["stopReason"] not in LIMITS
    return not kind.endswith("Exception")


def expected_text(gen: BedrockGenerated) -> str:
    """The assistant text that reached the client (reasoning is not assistant text)."""
    return "".join(
        e["contentBlockDelta"]["delta"].get("text", "")
        for e in gen.delivered
        if "contentBlockDelta" in e
    )


def expected_usage(gen: BedrockGenerated) -> dict[str, Any] | None:
    """The usage of the last `metadata` that reached the client."""
    usage = [e["metadata"]["usage"] for e in gen.delivered if "metadata" in e]
    return usage[-1] if usage else None
