"""Generated streams, differential: the real SDK path, `feed_sse` and the expected calls agree.

Every stream comes from `streamgen.generate` with a fixed seed, so a failure names the seed
that reproduces it. A valid stream must give exactly its calls (name, id, index, arguments,
value, no error, or `filtered` after a content filter or a refusal) and its text, whatever the
cut points; `assemble_both` runs the SDK client over HTTP with the server cutting its writes at
adversarial points, then `feed_sse` on the same bytes cut every way a gateway sees them (every
byte alone, inside every escape, between CR and LF), and compares everything both report. A
broken stream must still end every started call exactly once, on both paths alike, and a call
that runs carries only its own arguments.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from .clients import assemble_both
from .conftest import SSEServer
from .streamgen import FAULTS, FORMATS, GenCall, Generated, cuts_for, generate, with_fault
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
