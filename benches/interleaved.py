"""Ratios measured round by round, each round timing every alternative once in shuffled order.

    python benches/interleaved.py            # about a minute; prints one table
    python benches/interleaved.py --quick    # one round per pair, to check that it runs

Why a second harness: the pytest-benchmark suites time one alternative for a whole block of
rounds, then the next. On this project's machine kind the processor's speed drifts by up to
1.6x within seconds (the baseline's own median moved that much between two runs of a few
seconds), so a ratio of two blocks measured a few seconds apart can be off by more than the
gap it is meant to show. Here the alternatives of a pair alternate within every round, each
round gives one ratio, and the median of those ratios is reported: a drift slower than a round
cancels out. Every alternative gets fresh fragment objects and an empty young generation before
it is timed, as in the suites.

Pairs (the targets of the performance issue they answer):
* final values: `toolwire feed` against `join+orjson`, per size (at most 1.2x);
* pre-check: `toolwire feed+precheck` against `toolwire feed` (at most 1.3x);
* last fragment to a model: toolwire against `model_validate_json` alone (at most 1.1x);
* progressive values: `progress_into` against `jiter` re-parsing after every fragment (at
  most 0.25x at 200 B, that is at least 4x faster);
* growth from 20 KB to 200 KB of each toolwire path: the path at 200 KB against itself at
  20 KB in the same round (between 9x and 11x), next to the growth of the baseline and of
  `model_validate_json`, which toolwire's paths cannot undercut by much. The paths include
  Vertex AI's streamed arguments (`partialArgs` pieces merged into one object), through
  `feed_chunk` and `feed_sse`, and through `feed_chunk` for one long string in pieces.
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import alternatives as a
from corpus import CASES, Document, get_case
from harness import fresh_view

import toolwire

__all__ = ["PairResult", "main", "measure_pairs"]

# A timed run: set-up (untimed) returns the callable that is timed.
Prepared = Callable[[], Callable[[], Any]]


@dataclass(frozen=True)
class PairResult:
    """One pair on one case: medians of each side and of the per-round ratio."""

    target: str
    case: str
    subject: str
    reference: str
    subject_ns: float
    reference_ns: float
    ratio: float
    rounds: int
    bounds: tuple[float, float] | None
    """The target's range for the ratio; None for a pair measured for context only."""

    @property
    def verdict(self) -> str:
        """`met`, `MISSED` or `-` (no target)."""
        if self.bounds is None:
            return "-"
        low, high = self.bounds
        return "met" if low <= self.ratio <= high else "MISSED"


@dataclass(frozen=True)
class _Pair:
    target: str
    case: str
    subject: str
    run_subject: Prepared
    reference: str
    run_reference: Prepared
    bounds: tuple[float, float] | None


def _feed_run(fn: Callable[[Any], Any], case_name: str) -> Prepared:
    case = get_case(case_name)

    def prepare() -> Callable[[], Any]:
        data = fresh_view(case, "deltas")
        return lambda: fn(data)

    return prepare


def _last_fragment_run(case_name: str) -> Prepared:
    case = get_case(case_name)
    tools = a.corpus_toolset()

    def prepare() -> Callable[[], Any]:
        deltas = fresh_view(case, "deltas")
        asm = toolwire.Assembler(tools=tools)
        for index, id_, name, frag in deltas[:-1]:
            asm.feed(index, id=id_, name=name, arguments=frag)
        index, id_, name, frag = deltas[-1]

        def run() -> Any:
            asm.feed(index, id=id_, name=name, arguments=frag)
            (call,) = asm.finish()
            return tools.validate(call).model

        return run

    return prepare


def _model_validate_run(case_name: str) -> Prepared:
    case = get_case(case_name)

    def prepare() -> Callable[[], Any]:
        # The text an accumulator would hold: this round's fresh fragments, joined (untimed).
        # A new str each round, since a str validated before keeps its UTF-8 form and would
        # spare every later round the encoding (`fresh_text`); and the fragments came and went
        # first, as toolwire's did. Creating and freeing 200 KB of fragments leaves the heap in
        # a state that makes the validation after it 15% slower, a cost the reference dodged
        # when it was handed one ready-made str.
        text = "".join(frag for _index, _id, _name, frag in fresh_view(case, "deltas"))
        return lambda: Document.model_validate_json(text)

    return prepare


def _gemini_run(fn: Callable[[Any], Any], view: str) -> Callable[[str], Prepared]:
    """A run of `fn` on a Gemini streamed-arguments view (dict chunks or SSE body) of a case."""

    def for_case(case_name: str) -> Prepared:
        data = getattr(get_case(case_name), view)
        return lambda: lambda: fn(data)

    return for_case


def _sse_run(case_name: str) -> Prepared:
    case = get_case(case_name)

    def prepare() -> Callable[[], Any]:
        pieces = fresh_view(case, "sse_pieces")
        return lambda: a.sse_toolwire_feed_sse(pieces)

    return prepare


GROWTH = (9.0, 11.0)
"""Linear growth from 20 KB to 200 KB, with room for the memory hierarchy."""


def _pairs() -> list[_Pair]:
    """Every pair measured, in order."""
    out: list[_Pair] = []
    for case in CASES:
        feed = _feed_run(a.toolwire_feed, case)
        baseline = _feed_run(a.baseline_join_orjson, case)
        out.append(
            _Pair("final <= 1.2x", case, "toolwire feed", feed, "join+orjson", baseline, (0, 1.2))
        )
        out.append(
            _Pair(
                "pre-check <= 1.3x",
                case,
                "toolwire feed+precheck",
                _feed_run(a.toolwire_feed_prechecked, case),
                "toolwire feed",
                feed,
                (0, 1.3),
            )
        )
        if case.startswith("single-"):
            out.append(
                _Pair(
                    "last fragment -> model <= 1.1x",
                    case,
                    "toolwire last fragment->model",
                    _last_fragment_run(case),
                    "model_validate_json",
                    _model_validate_run(case),
                    (0, 1.1),
                )
            )
    for case, bounds in (("single-200B", (0.0, 0.25)), ("single-2KB", None)):
        out.append(
            _Pair(
                "progressive <= 0.25x jiter",
                case,
                "toolwire progress_into",
                _feed_run(a.toolwire_progress_into, case),
                "jiter every fragment",
                _feed_run(a.jiter_every_fragment, case),
                bounds,
            )
        )
    growth: list[tuple[str, Callable[[str], Prepared], bool]] = [
        ("toolwire feed", lambda c: _feed_run(a.toolwire_feed, c), True),
        ("toolwire feed+precheck", lambda c: _feed_run(a.toolwire_feed_prechecked, c), True),
        ("toolwire progress_into", lambda c: _feed_run(a.toolwire_progress_into, c), True),
        ("toolwire feed_sse", _sse_run, True),
        ("toolwire last fragment->model", _last_fragment_run, True),
        (
            "toolwire Gemini feed_chunk",
            _gemini_run(a.gemini_streamed_feed_chunk, "gemini_streamed"),
            True,
        ),
        (
            "toolwire Gemini feed_sse",
            _gemini_run(a.gemini_streamed_feed_sse, "gemini_sse_body"),
            True,
        ),
        (
            "toolwire Gemini one string",
            _gemini_run(a.gemini_streamed_feed_chunk, "gemini_long_string"),
            True,
        ),
        ("join+orjson", lambda c: _feed_run(a.baseline_join_orjson, c), False),
        ("model_validate_json", _model_validate_run, False),
    ]
    for name, run, is_target in growth:
        out.append(
            _Pair(
                "growth 20KB->200KB 9x-11x",
                "single-200KB",
                name,
                run("single-200KB"),
                "same at 20KB",
                run("single-20KB"),
                GROWTH if is_target else None,
            )
        )
    return out


def _time_once(prepare: Prepared) -> int:
    run = prepare()
    gc.collect(0)
    started = time.perf_counter_ns()
    run()
    return time.perf_counter_ns() - started


def measure_pairs(budget_seconds: float = 1.5, max_rounds: int = 400) -> list[PairResult]:
    """Measures every pair, alternating its two sides within each round.

    Args:
        budget_seconds: About how long each pair may take.
        max_rounds: The most rounds per pair (at least one round always runs).

    Returns:
        One result per pair and case.
    """
    rng = random.Random(20261201)
    results: list[PairResult] = []
    for pair in _pairs():
        run_subject, run_reference = pair.run_subject, pair.run_reference
        subject_ns: list[int] = []
        reference_ns: list[int] = []
        ratios: list[float] = []
        # A first run of each side fills caches and lazy state (compiled schemas, imports).
        _time_once(run_subject)
        _time_once(run_reference)
        deadline = time.perf_counter() + budget_seconds
        while not ratios or (len(ratios) < max_rounds and time.perf_counter() < deadline):
            if rng.random() < 0.5:
                s, r = _time_once(run_subject), _time_once(run_reference)
            else:
                r, s = _time_once(run_reference), _time_once(run_subject)
            subject_ns.append(s)
            reference_ns.append(r)
            ratios.append(s / max(r, 1))
        results.append(
            PairResult(
                target=pair.target,
                case=pair.case,
                subject=pair.subject,
                reference=pair.reference,
                subject_ns=statistics.median(subject_ns),
                reference_ns=statistics.median(reference_ns),
                ratio=statistics.median(ratios),
                rounds=len(ratios),
                bounds=pair.bounds,
            )
        )
    return results


def _human(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def main(argv: list[str]) -> int:
    """Prints the table of interleaved ratios."""
    quick = "--quick" in argv
    results = measure_pairs(budget_seconds=0.0, max_rounds=1) if quick else measure_pairs()
    print(
        f"{'target':32} {'case':14} {'subject':30} {'median':>9} {'reference':22} "
        f"{'median':>9} {'ratio':>7} rounds verdict"
    )
    for r in results:
        print(
            f"{r.target:32} {r.case:14} {r.subject:30} {_human(r.subject_ns):>9} "
            f"{r.reference:22} {_human(r.reference_ns):>9} {r.ratio:6.2f}x {r.rounds:6d} "
            f"{r.verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
