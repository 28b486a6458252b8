"""The interleaved-ratio probe (`benches/interleaved.py`) runs, so that it cannot rot."""

from __future__ import annotations

from interleaved import measure_pairs


def test_every_pair_is_measured_once() -> None:
    results = measure_pairs(budget_seconds=0.0, max_rounds=1)
    assert {r.target for r in results} == {
        "final <= 1.2x",
        "pre-check <= 1.3x",
        "last fragment -> model <= 1.1x",
    }
    assert all(r.rounds == 1 and r.ratio > 0 and r.reference_ns > 0 for r in results)
