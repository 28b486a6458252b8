"""The workload a profile-guided build of the native module learns from (`bash .ci/run pgo`).

    python benches/pgo_train.py            # about 15 s on the plain build
    python benches/pgo_train.py --quick    # a tenth of it (CI)

A profile-guided build lays the native code out, and decides what to inline, after how a run
of the instrumented module used it: the paths a run takes often are kept together and
straight, the rest moved aside. So the run must do what users do, in proportion. It drives
every native path a user reaches: `str` and `bytes` fragments, with and without the schema
pre-check, progress items, partial values, raw SSE in the Chat Completions and Anthropic
formats, SDK objects through `assemble`, validation, and the bundled corpus of every wire
format with its failed calls. One stream in eight is broken (cut short, or a value of the wrong
type) so that error paths are in the profile at about their real weight, not absent.

The streams are the benchmark corpus' kind, built with other seeds (`Case(name, variant)`): the
profile is of the work, not of the bytes the benchmarks time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import alternatives as a
from corpus import CASES, SIZES, TOOL_NAME, Case, Delta

import toolwire
from toolwire.demo_tools import demo_toolset
from toolwire.replay import load_corpus, replay

__all__ = ["main", "train"]

TRAINING_BYTES = 3_000_000
"""Argument bytes each path is driven with per case size (a tenth with `--quick`)."""

_VARIANTS = 4
"""Distinct streams per case: enough that no one stream's cuts shape the profile."""

SAMPLES = Path(toolwire.__file__).parent / "samples"


def _anthropic_sse(case: Case) -> bytes:
    """The case's calls as an Anthropic Messages SSE body (the gateway's second format)."""
    out = bytearray()
    for event in case.anthropic_events:
        data = event.model_dump_json(exclude_none=False)
        out += f"event: {event.type}\ndata: {data}\n\n".encode()
    return bytes(out)


def _pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def _broken(deltas: Sequence[Delta], variant: int) -> list[Delta]:
    """A stream with something wrong: cut short, an unknown field, or not an object."""
    if variant % 2:
        return list(deltas[: max(1, len(deltas) * 2 // 3)])
    index, id_, name, frag = deltas[0]
    # A field the tool does not have, or an array where the arguments object belongs.
    head = frag.replace("{", '{"unexpected":1,', 1) if variant % 4 else frag.replace("{", "[7,", 1)
    return [(index, id_, name, head), *deltas[1:]]


def _stream_paths(toolset: toolwire.Toolset) -> list[Callable[[Case, int], Any]]:
    def feed(case: Case, variant: int) -> Any:
        deltas = case.deltas if variant % 8 else _broken(case.deltas, variant // 8)
        asm = toolwire.Assembler()
        for index, id_, name, frag in deltas:
            asm.feed(index, id=id_, name=name, arguments=frag)
        return [call.value if call.error is None else call.error for call in asm.finish()]

    def feed_bytes(case: Case, variant: int) -> Any:
        asm = toolwire.Assembler()
        for index, id_, name, frag in case.byte_deltas:
            asm.feed(index, id=id_, name=name, arguments=frag)
        return [call.value for call in asm.finish()]

    def prechecked(case: Case, variant: int) -> Any:
        deltas = case.deltas if variant % 8 else _broken(case.deltas, variant // 8)
        asm = toolwire.Assembler(tools=toolset)
        for index, id_, name, frag in deltas:
            asm.feed(index, id=id_, name=name, arguments=frag)
        return [toolset.validate(call) for call in asm.finish()]

    def progress(case: Case, variant: int) -> Any:
        items: list[Any] = []
        asm = toolwire.Assembler(progress_into=items)
        for n, (index, id_, name, frag) in enumerate(case.deltas):
            ordinal = asm.feed(index, id=id_, name=name, arguments=frag)
            if n % 64 == 63:
                # Now and then a whole partial value, as a UI that redraws does.
                asm.partial(ordinal)
        return items, asm.finish()

    def sse_chat(case: Case, variant: int) -> Any:
        return a.sse_toolwire_feed_sse(case.sse_pieces)

    def sse_anthropic(case: Case, variant: int) -> Any:
        asm = toolwire.Assembler(tools=toolset)
        for piece in _pieces(_anthropic_sse(case), 1_500 + 500 * variant):
            asm.feed_sse(piece)
        return asm.finish()

    def sdk_chunks(case: Case, variant: int) -> Any:
        return list(toolwire.assemble(case.chunks, toolset))

    return [feed, feed_bytes, prechecked, progress, sse_chat, sse_anthropic, sdk_chunks]


def train(quick: bool = False) -> int:
    """Drives every path; returns the number of streams run."""
    budget = TRAINING_BYTES // (10 if quick else 1)
    toolset = a.corpus_toolset()
    paths = _stream_paths(toolset)
    streams = 0
    for name in CASES:
        cases = [Case(name, variant) for variant in range(1, _VARIANTS + 1)]
        rounds = max(2, budget // (cases[0].arg_bytes * len(paths)))
        for n in range(rounds):
            case = cases[n % len(cases)]
            for path in paths:
                path(case, n)
                streams += 1
    demo = demo_toolset()
    entries = load_corpus([SAMPLES])
    for _ in range(2 if quick else 20):
        replay(entries, demo)
        streams += len(entries)
    return streams


def main(argv: list[str]) -> int:
    """`python benches/pgo_train.py [--quick]`."""
    if argv not in ([], ["--quick"]):
        print("usage: python benches/pgo_train.py [--quick]", file=sys.stderr)
        return 2
    streams = train(quick=bool(argv))
    sizes = ", ".join(SIZES)
    print(f"pgo training: {streams} streams ({sizes}; every path; tool {TOOL_NAME!r} and demo)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
