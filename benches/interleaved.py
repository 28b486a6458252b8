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
* last fragment to a model: toolwire against `model_validate_json` alone (at most 1.1x).
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
    text = get_case(case_name).texts[0]

    def prepare() -> Callable[[], Any]:
        return lambda: Document.model_validate_json(text)

    return prepare


def _pairs() -> list[tuple[str, str, str, Prepared, str, Prepared]]:
    """(target, case, subject, its run, reference, its run) for every pair measured."""
    out: list[tuple[str, str, str, Prepared, str, Prepared]] = []
    for case in CASES:
        feed = _feed_run(a.toolwire_feed, case)
        out.append(
            (
                "final <= 1.2x",
                case,
                "toolwire feed",
                feed,
                "join+orjson",
                _feed_run(a.baseline_join_orjson, case),
            )
        )
        out.append(
            (
                "pre-check <= 1.3x",
                case,
                "toolwire feed+precheck",
                _feed_run(a.toolwire_feed_prechecked, case),
                "toolwire feed",
                feed,
            )
        )
        if case.startswith("single-"):
            out.append(
                (
                    "last fragment -> model <= 1.1x",
                    case,
                    "toolwire last fragment->model",
                    _last_fragment_run(case),
                    "model_validate_json",
                    _model_validate_run(case),
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
    for target, case, subject, run_subject, reference, run_reference in _pairs():
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
                target=target,
                case=case,
                subject=subject,
                reference=reference,
                subject_ns=statistics.median(subject_ns),
                reference_ns=statistics.median(reference_ns),
                ratio=statistics.median(ratios),
                rounds=len(ratios),
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
    print(f"{'target':32} {'case':16} {'subject':>12} {'reference':>12} {'ratio':>7} rounds")
    for r in results:
        print(
            f"{r.target:32} {r.case:16} {_human(r.subject_ns):>12} "
            f"{_human(r.reference_ns):>12} {r.ratio:6.2f}x {r.rounds:6d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
