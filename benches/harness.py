"""Helpers the suites share: the quick/full switch, case parameters and report labels.

The suites never assert timings: each test checks that its alternative produces exactly the
expected arguments (before timing it), then hands the timing to pytest-benchmark with labels in
`extra_info` that `benches/report.py` turns into one comparison table.

Quick mode (CI): `--benchmark-max-time` under 0.5 s, or benchmarks disabled. It leaves out the
"heavy" combinations, the alternatives that re-parse the whole buffer after every fragment on
the largest streams, which cost seconds to minutes per run; the full run includes all of them
that finish in reasonable time. `TOOLWIRE_BENCH_FULL=1` (or `0`) overrides the choice.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pytest
from corpus import SIZES, Case, get_case

__all__ = ["Alt", "case_params", "full_run", "label", "rounds", "run_alternative"]


def full_run(config: pytest.Config) -> bool:
    """True unless this is the quick CI pass (or benchmarks are disabled)."""
    forced = os.environ.get("TOOLWIRE_BENCH_FULL")
    if forced is not None:
        return forced == "1"
    if config.getoption("benchmark_disable", default=False) and not config.getoption(
        "benchmark_enable", default=False
    ):
        return False
    max_time = config.getoption("benchmark_max_time", default=1.0)
    return float(max_time) >= 0.5


def rounds(config: pytest.Config, full: int) -> int:
    """Rounds for `benchmark.pedantic` (set-up per round): `full`, or 1 in quick mode."""
    return full if full_run(config) else 1


def label(
    benchmark: Any,
    *,
    suite: str,
    case: Case,
    alt: str,
    baseline: str,
    **extra: Any,
) -> None:
    """Names a benchmark for the report: its suite, case, alternative and the suite's baseline.

    Args:
        benchmark: The pytest-benchmark fixture.
        suite: `final`, `progressive`, `raw_sse`, `validation`, `memory` or `threads`.
        case: The corpus case measured.
        alt: The alternative's display name.
        baseline: The display name of the alternative the suite's ratios are taken against.
        **extra: More figures to carry into the JSON output (memory sizes, thread counts).
    """
    benchmark.group = f"{suite} {case.name}"
    benchmark.extra_info.update(
        {
            "suite": suite,
            "case": case.name,
            "size": case.size,
            "calls": case.calls,
            "fragments": case.fragments,
            "arg_bytes": case.arg_bytes,
            "alt": alt,
            "baseline": baseline,
            **extra,
        }
    )


def case_params(
    config: pytest.Config,
    cases: Iterable[str],
    alternatives: dict[str, dict[str, Any]],
) -> list[Any]:
    """`pytest.param(case, alt)` for every combination the current mode runs.

    Each alternative may say `max_quick` / `max_full`: the largest per-call size (a `SIZES`
    label) it runs at in quick and full mode, and `single_only` for alternatives that cannot
    take interleaved parallel calls. Combinations left out are not collected at all (they are
    listed, with the reason, in the module docstrings and in the report's notes).
    """
    order = list(SIZES)
    full = full_run(config)
    out: list[Any] = []
    for case_name in cases:
        size = case_name.split("-", 1)[1]
        parallel = case_name.startswith("parallel")
        for alt, spec in alternatives.items():
            limit = spec.get("max_full" if full else "max_quick", "200KB")
            if limit is None or order.index(size) > order.index(limit):
                continue
            if parallel and spec.get("single_only", False):
                continue
            out.append(pytest.param(case_name, alt, id=f"{case_name}-{alt}"))
    return out


# Round budget of the full run, as pytest-benchmark's default `--benchmark-max-time`.
ROUND_BUDGET_SECONDS = 1.0


@dataclass(frozen=True)
class Alt:
    """One alternative as a suite runs it.

    Attributes:
        fn: Takes the case view and returns what `check` compares with the case.
        view: The `Case` attribute it reads (`deltas`, `byte_deltas`, `chunks`, ...).
        max_quick: Largest per-call size it runs at in quick mode (None: never).
        max_full: Largest per-call size it runs at in the full run.
        single_only: Leave out the interleaved parallel cases.
        check: Turns the result into the values compared with `Case.expected` (identity for
            most alternatives).
    """

    fn: Callable[[Any], Any]
    view: str = "deltas"
    max_quick: str | None = "200KB"
    max_full: str = "200KB"
    single_only: bool = False
    check: Callable[[Any], list[Any]] | None = None

    @property
    def spec(self) -> dict[str, Any]:
        """The limits in the form `case_params` reads."""
        return {
            "max_quick": self.max_quick,
            "max_full": self.max_full,
            "single_only": self.single_only,
        }


def fresh_text(fragment: str) -> str:
    """A new str object with the same text.

    CPython caches a str's UTF-8 form inside the object the first time C code asks for it
    (`PyUnicode_AsUTF8AndSize`, which toolwire and orjson call). A stream's fragments are new
    objects every time, so reusing one set across rounds would let every round after the first
    skip the UTF-8 encoding of non-ASCII fragments, flattering whoever encodes per fragment.
    """
    return (fragment + " ")[:-1]


def fresh_view(case: Case, view: str) -> Any:
    """The case view with new fragment objects where it matters (str deltas), else as is."""
    data = getattr(case, view)
    if view == "deltas":
        return [(index, id_, name, fresh_text(frag)) for index, id_, name, frag in data]
    return data


def run_alternative(
    benchmark: Any,
    request: pytest.FixtureRequest,
    *,
    suite: str,
    baseline: str,
    alts: dict[str, Alt],
    case_name: str,
    alt: str,
) -> None:
    """Checks one alternative on one case, then times it.

    Every round gets fresh fragment objects from an untimed set-up (see `fresh_text`), so the
    timing uses `benchmark.pedantic` with one iteration per round. The check runs first and
    doubles as a cost probe that sets the number of rounds: about `ROUND_BUDGET_SECONDS` of
    rounds, between 3 and 2,000, in the full run; one round in quick mode.
    """
    case = get_case(case_name)
    spec = alts[alt]
    data = fresh_view(case, spec.view)
    started = time.perf_counter()
    result = spec.fn(data)
    elapsed = time.perf_counter() - started
    values = spec.check(result) if spec.check else result
    assert values == list(case.expected), f"{alt} gave different arguments on {case_name}"
    # The size of what the alternative reads, for throughput: the SSE body on the raw path.
    extra = {"input_bytes": sum(map(len, data))} if spec.view == "sse_pieces" else {}
    label(benchmark, suite=suite, case=case, alt=alt, baseline=baseline, **extra)
    wanted = max(3, min(2000, int(ROUND_BUDGET_SECONDS / max(elapsed, 1e-6))))

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        data = fresh_view(case, spec.view)
        # Start each round with an empty young generation, so that a collection triggered by
        # the set-up's own allocations does not land inside the timed call.
        gc.collect(0)
        return (data,), {}

    benchmark.pedantic(spec.fn, setup=setup, rounds=rounds(request.config, wanted), iterations=1)
