"""Threads: two threads feeding separate assemblers through the raw path, against one thread.

The work is 40 streams of `single-20KB` as a gateway sees them: the SSE body in network-sized
pieces (256 B - 4 KB) through `feed_sse`, then `finish()` and `.value`; 20 streams per thread in
the two-thread run, all 40 on one thread in the other. The report divides the two medians: the
speed-up on 2 cores. `feed_sse` decodes pieces of 1 KiB and more with the GIL released, so the
other thread runs meanwhile; smaller pieces, the per-call overhead and `.value` (which makes
Python objects) hold the GIL and bound the speed-up below 2x on a GIL build of CPython.
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


def work(pieces: Any, streams: int) -> list[Any]:
    """Assembles `streams` copies of the stream, one assembler each."""
    return [a.sse_toolwire_feed_sse(pieces) for _ in range(streams)]


@pytest.mark.parametrize("threads", [1, 2])
def test_threads(benchmark: Any, request: pytest.FixtureRequest, threads: int) -> None:
    """Every thread gets exactly the expected arguments; then the run is timed."""
    case = get_case(CASE)
    pieces = case.sse_pieces
    expected = [list(case.expected)] * (STREAMS // threads)
    with ThreadPoolExecutor(max_workers=threads) as pool:

        def run() -> list[list[Any]]:
            futures = [pool.submit(work, pieces, STREAMS // threads) for _ in range(threads)]
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
