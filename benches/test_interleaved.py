"""The interleaved-ratio probe (`benches/interleaved.py`) runs, so that it cannot rot."""

from __future__ import annotations

import alternatives as a
import pytest
from corpus import CASES, get_case
from interleaved import measure_pairs


def test_every_pair_is_measured_once() -> None:
    results = measure_pairs(budget_seconds=0.0, max_rounds=1)
    assert {r.target for r in results} == {
        "final <= 1.2x",
        "pre-check <= 1.3x",
        "last fragment -> model <= 1.1x",
        "progressive <= 0.25x jiter",
        "growth 20KB->200KB 9x-11x",
    }
    assert all(r.rounds == 1 and r.ratio > 0 and r.reference_ns > 0 for r in results)
    assert {r.verdict for r in results} <= {"met", "MISSED", "-"}
    growth = [r for r in results if r.target.startswith("growth")]
    # Every toolwire path has a growth target; the baseline and pydantic are context.
    assert {r.subject for r in growth if r.bounds is not None} == {
        "toolwire feed",
        "toolwire feed+precheck",
        "toolwire progress_into",
        "toolwire feed_sse",
        "toolwire last fragment->model",
        "toolwire Gemini feed_chunk",
        "toolwire Gemini feed_sse",
        "toolwire Gemini one string",
    }


@pytest.mark.parametrize("case_name", [name for name in CASES if name.startswith("single-")])
def test_gemini_streamed_pieces_give_the_arguments(case_name: str) -> None:
    """The Gemini growth rows time paths that produce the arguments the pieces carry."""
    case = get_case(case_name)
    assert a.gemini_streamed_feed_chunk(case.gemini_streamed) == case.gemini_expected
    assert a.gemini_streamed_feed_sse(case.gemini_sse_body) == case.gemini_expected
    assert a.gemini_streamed_feed_chunk(case.gemini_long_string) == case.gemini_long_expected
