"""Generated streams, differential: the real SDK path, `feed_sse` and the expected calls agree.

Every stream comes from `streamgen.generate` with a fixed seed, so a failure names the seed
that reproduces it. A valid stream must give exactly its calls (name, id, index, arguments,
value, no error, or `filtered` after a content filter or a refusal) and its text, whatever the
cut points; `assemble_both` runs the SDK client over HTTP with the server cutting its writes at
adversarial points, then `feed_sse` on the same bytes cut every way a gateway sees them (every
byte alone, inside every escape, between CR and LF), and compares everything both report. A
broken stream must still end every started call exactly once, on both paths alike, and a call
that runs carries only its own arguments.

Bedrock ConverseStream streams come from `bedrockgen`: the real boto3 client over the same
server (its writes cut inside event-stream frames) and the same event dicts through
`feed_chunk` must both give what `bedrockgen.expected` says, faults included.
"""

from __future__ import annotations

import base64
import json
import random
import re
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

import botocore.exceptions
import botocore.session
import urllib3.exceptions
from botocore.validate import ParamValidator

from . import bedrockgen
from .bedrockgen import BedrockGenerated, Want
from .bedrockkit import (
    CONTENT_TYPE,
    DictRun,
    assemble_bedrock,
    block_stop,
    converse_stream,
    feed_dicts,
)
from .clients import assemble_both
from .conftest import SSEServer
from .streamgen import (
    FAULTS,
    FORMATS,
    GenCall,
    Generated,
    cuts_for,
    generate,
    with_fault,
)
from .streamkit import joined_text

VALID_SEEDS = range(40)
FAULT_SEEDS = range(10)


def _run(sse_server: SSEServer, gen: Generated, seed: int) -> Any:
    body = gen.body
    rng = random.Random(f"cuts/{gen.fmt}/{seed}/{gen.fault}")
    route = sse_server.register(body, split=cuts_for(body, rng), drop_after=gen.drop_after)
    _, stream = assemble_both(route, gen.fmt)
    return stream


@pytest.mark.parametrize("seed", VALID_SEEDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_generated_valid_stream(sse_server: SSEServer, fmt: str, seed: int) -> None:
    gen = generate(seed, fmt)
    stream = _run(sse_server, gen, seed)
    kind = "filtered" if gen.stopped else None
    body = gen.body
    # Calls come back in order of first appearance.
    order = sorted(gen.calls, key=lambda c: body.find(c.id.encode()))
    # A call that may not run shows no value.
    want = [(c.index, c.name, c.id, c.expected_arguments, _value(c, kind), kind) for c in order]
    last = order[-1]
    if gen.fmt == "openai-chat" and gen.finish == "length" and not last.arguments:
        # The limit reached with the last call still empty reads as a call cut before its
        # arguments, not as one without parameters (Chat never ends a call before the finish).
        want[-1] = (last.index, last.name, last.id, "", None, "truncated")
    got = [
        (c.index, c.name, c.id, c.arguments, c.value if c.ok else None, _kind(c))
        for c in stream.calls
    ]
    assert got == want
    assert stream.text == gen.text


def _value(call: GenCall, kind: str | None) -> Any:
    return None if kind else json.loads(call.expected_arguments)


def _kind(call: Any) -> str | None:
    return call.error.kind if call.error else None


def _delivered(gen: Generated) -> bytes:
    """The whole events the client received."""
    body = gen.body
    if gen.drop_after is not None:
        body = body[: gen.drop_after]
    end = body.rfind(b"\n\n")
    return body[: end + 2] if end >= 0 else b""


@pytest.mark.parametrize("seed", FAULT_SEEDS)
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_generated_faulty_stream(sse_server: SSEServer, fmt: str, fault: str, seed: int) -> None:
    rng = random.Random(f"fault/{fmt}/{fault}/{seed}")
    gen = with_fault(generate(100 + seed, fmt), fault, rng)
    stream = _run(sse_server, gen, seed)
    by_id = {c.id: c for c in gen.calls}
    seen = _delivered(gen)
    started = [c.id for c in gen.calls if c.id.encode() in seen]
    # Nothing dropped silently: every call whose start reached the client comes back.
    assert set(started) <= {c.id for c in stream.calls}, gen.notes
    for call in stream.calls:
        if not call.ok:
            continue
        # A start event sent twice starts a second call under the same wire id (quirks 2-3),
        # which gets a unique id (quirk 16).
        own = by_id[call.id if call.id in by_id else call.id.removesuffix(f"_{call.ordinal}")]
        allowed = {own.expected_arguments}
        f, n = own.fragments, len(own.fragments)
        # One event may carry several fragments of a call (quirk 6): a run of them.
        runs = [(i, j) for i in range(n) for j in range(i + 1, n + 1)]
        if fault in ("truncated", "reset"):
            # Cut in the whitespace after a complete value: the same value.
            allowed.add(own.expected_arguments.rstrip())
        if fault == "truncated" and call.ordinal < len(stream.calls) - 1:
            # Interleaved Chat calls that the limit cut before an earlier one's first argument
            # byte: on the wire that call is a call without parameters, followed by another.
            if "empty_arguments" in call.warnings:
                allowed.add("{}")
        if fault == "duplicated":
            allowed |= {_joined(f[:j] + f[i:j] + f[j:]) for i, j in runs}
        if fault == "dropped":
            # A lost event that is not malformed cannot be noticed (no SDK notices it either).
            allowed |= {_joined(f[:i] + f[j:]) for i, j in runs}
        # A call that runs carries its own arguments, never another call's.
        assert call.arguments in allowed, gen.notes


def _joined(fragments: list[str]) -> str:
    """The fragments' text as a call carries it, blank text as `{}`."""
    text = joined_text(fragments)
    return text if text.strip() else "{}"


# --- Bedrock ConverseStream -------------------------------------------------------------------
#
# The body is AWS event-stream binary, so the dicts boto3 yields through `feed_chunk` stand
# where `feed_sse` stands for the SSE formats.

BEDROCK_VALID_SEEDS = range(60)
BEDROCK_FAULT_SEEDS = range(20)


def _run_bedrock(sse_server: SSEServer, gen: BedrockGenerated, seed: int) -> tuple[Any, DictRun]:
    rng = random.Random(f"cuts/{bedrockgen.FORMAT}/{seed}/{gen.fault}")
    route = sse_server.register(
        gen.body, split=gen.cuts(rng), drop_after=gen.drop_after, content_type=CONTENT_TYPE
    )
    _, stream = assemble_bedrock(route)
    dicts = feed_dicts(gen.delivered, interrupted=gen.drop_after is not None)
    return stream, dicts


def _wants(calls: list[Any]) -> list[Want]:
    return [
        Want(c.index, c.name, c.id, c.arguments, c.value if c.ok else None, _kind(c)) for c in calls
    ]


@pytest.mark.parametrize("seed", BEDROCK_VALID_SEEDS)
def test_generated_bedrock_stream(sse_server: SSEServer, seed: int) -> None:
    gen = bedrockgen.generate(seed)
    stream, dicts = _run_bedrock(sse_server, gen, seed)
    want = [
        Want(c.index, c.name, c.id, c.expected_arguments, json.loads(c.expected_arguments), None)
        for c in gen.calls
    ]
    last = gen.calls[-1]
    if gen.finish in bedrockgen.LIMITS and gen.events[-3] == block_stop(last.index):
        if not last.arguments:
            # The last block stopped with no input and the limit came next: the model was cut
            # before it wrote the input, so this is not a call without parameters.
            want[-1] = Want(last.index, last.name, last.id, "", None, "truncated")
    assert bedrockgen.expected(gen) == want
    assert _wants(stream.calls) == want
    assert _wants(dicts.calls) == want
    assert stream.text == dicts.text == bedrockgen.expected_text(gen)
    assert stream.finish_reason == dicts.finish_reason == gen.finish
    assert stream.usage == dicts.usage == bedrockgen.expected_usage(gen) is not None
    assert stream.transport_error is None


@pytest.mark.parametrize("seed", BEDROCK_FAULT_SEEDS)
@pytest.mark.parametrize("fault", bedrockgen.FAULTS)
def test_generated_bedrock_faulty_stream(sse_server: SSEServer, fault: str, seed: int) -> None:
    rng = random.Random(f"fault/{bedrockgen.FORMAT}/{fault}/{seed}")
    gen = bedrockgen.with_fault(bedrockgen.generate(100 + seed), fault, rng)
    stream, dicts = _run_bedrock(sse_server, gen, seed)
    # Every call whose start reached the client comes back, once, as the faults leave it.
    want = bedrockgen.expected(gen)
    assert _wants(stream.calls) == want, gen.notes
    assert _wants(dicts.calls) == want, gen.notes
    assert stream.text == dicts.text == bedrockgen.expected_text(gen), gen.notes
    assert stream.usage == dicts.usage == bedrockgen.expected_usage(gen), gen.notes
    error = stream.transport_error
    if fault == "reset":
        # A stream that broke off has no finish reason, whatever arrived before.
        assert stream.finish_reason is None, gen.notes
        assert isinstance(error, urllib3.exceptions.ProtocolError), gen.notes
        return
    assert stream.finish_reason == dicts.finish_reason == gen.finish, gen.notes
    if fault == "provider_error":
        assert isinstance(error, botocore.exceptions.EventStreamError), gen.notes
        assert error.response["Error"]["Code"] == next(iter(gen.events[-1])), gen.notes
    else:
        assert error is None, gen.notes


def _variants(seed: int) -> list[BedrockGenerated]:
    gen = bedrockgen.generate(seed)
    rng = random.Random(f"variants/{seed}")
    return [gen, *(bedrockgen.with_fault(gen, fault, rng) for fault in bedrockgen.FAULTS)]


def test_generated_bedrock_events_fit_botocores_model() -> None:
    # boto3 validates requests, not what it reads: the generator's shapes are checked against
    # the service model here (members, required members, types, unions set once; the enums
    # and the id and name patterns, which the validator leaves out, by hand).
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    output = model.operation_model("ConverseStream").output_shape
    assert output is not None
    members = output.members["stream"].members
    tool = members["contentBlockStart"].members["start"].members["toolUse"].members
    validator = ParamValidator()
    for seed in range(200):
        for gen in _variants(seed):
            for event in gen.events:
                ((kind, body),) = event.items()
                report = validator.validate(body, members[kind])
                assert not report.has_errors(), (seed, report.generate_report())
                for key in ("role", "stopReason"):
                    if key in body:
                        assert body[key] in members[kind].members[key].enum, (seed, body)
            for call in gen.calls:
                for value, key in ((call.id, "toolUseId"), (call.name, "name")):
                    assert re.fullmatch(tool[key].metadata["pattern"], value), (seed, value)


@pytest.mark.parametrize("seed", range(0, 60, 6))
def test_boto3_yields_the_generated_events(sse_server: SSEServer, seed: int) -> None:
    # What the dict path is fed is what boto3 itself yields for the body (botocore's parser
    # drops members its model does not know, so a shape it would not read shows here too).
    gen = bedrockgen.generate(seed)
    route = sse_server.register(
        gen.body, split=gen.cuts(random.Random(seed)), content_type=CONTENT_TYPE
    )
    with converse_stream(route) as source:
        got = list(source)
    for event in gen.events:
        reasoning = event.get("contentBlockDelta", {}).get("delta", {}).get("reasoningContent")
        if reasoning and "redactedContent" in reasoning:
            # A blob: base64 on the wire, bytes from boto3.
            reasoning["redactedContent"] = base64.b64decode(reasoning["redactedContent"])
    assert got == gen.events
