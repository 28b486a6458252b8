"""Threads: two threads feeding separate assemblers, against one thread doing the same work.

The work is 40 streams of `single-20KB` (feed per fragment, `finish()`, `.value`): 20 per
thread in the two-thread run, all 40 on one thread in the other. The report divides the two
medians: the speed-up on 2 cores. `feed` keeps the GIL for its tiny deltas (attaching and
detaching would cost more than scanning 13 bytes, STYLE habit 20), so on a GIL build of CPython
the speed-up is expected near 1x; a free-threaded build (3.14t) is where it can approach 2x.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import alternatives as a
import pytest
from corpus import get_case
from harness import label, rounds

STREAMS = 40
CASE = "single-20KB"


def work(deltas: Any, streams: int) -> list[Any]:
    """Assembles `streams` copies of the stream, one assembler each."""
    return [a.toolwire_feed(deltas) for _ in range(streams)]


@pytest.mark.parametrize("threads", [1, 2])
def test_threads(benchmark: Any, request: pytest.FixtureRequest, threads: int) -> None:
    """Every thread gets exactly the expected arguments; then the run is timed."""
    case = get_case(CASE)
    deltas = case.deltas
    expected = [list(case.expected)] * (STREAMS // threads)
    with ThreadPoolExecutor(max_workers=threads) as pool:

        def run() -> list[list[Any]]:
            futures = [pool.submit(work, deltas, STREAMS // threads) for _ in range(threads)]
            return [f.result() for f in futures]

        assert run() == [expected] * threads
        label(
            benchmark,
            suite="threads",
            case=case,
            alt=f"{threads} thread{'s' if threads > 1 else ''}",
            baseline="1 thread",
            threads=threads,
            streams=STREAMS,
        )
        benchmark.pedantic(run, rounds=rounds(request.config, 10), iterations=1)
