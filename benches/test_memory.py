"""Memory: 10,000 concurrent streams, each with a ~2 KB call in flight (fed, not finished).

Target: toolwire retains at most 2x the argument bytes + 2 KB per call (6,048 B for the 2,000 B
call of `single-2KB`). The figure is RSS growth per stream, measured by `memory_probe.py` in a
fresh interpreter per mode (toolwire's state is on the Rust heap, which tracemalloc cannot see);
tracemalloc's Python-heap figure is recorded beside it. The list-of-fragments baseline keeps
every fragment object alive, as the `join+orjson` accumulator does until the call ends.

The timed body opens the same 10,000 streams in this process: the cost of opening and feeding
that many streams, for the record; the memory figures are in `extra_info` and in the report.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from corpus import get_case
from harness import label, rounds

import toolwire

STREAMS = 10_000
PROBE = Path(__file__).with_name("memory_probe.py")
BASELINE = "list-of-fragments"


def probe(mode: str, *, trace: bool) -> dict[str, Any]:
    """Runs `memory_probe.py` in a fresh interpreter and returns its JSON answer."""
    command = [sys.executable, str(PROBE), mode, str(STREAMS)]
    if trace:
        command.append("--tracemalloc")
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def open_streams(mode: str) -> list[Any]:
    """Opens `STREAMS` streams and feeds each the 2 KB call, as the probe does."""
    deltas = get_case("single-2KB").deltas
    held: list[Any] = []
    for _ in range(STREAMS):
        if mode == BASELINE:
            held.append([frag for _i, _d, _n, frag in deltas])
            continue
        asm = toolwire.Assembler(track_progress=mode == "toolwire-progress")
        for index, id_, name, frag in deltas:
            asm.feed(index, id=id_, name=name, arguments=frag)
            if mode == "toolwire-progress":
                asm.drain_progress()
        held.append(asm)
    return held


@pytest.mark.parametrize("mode", ["toolwire", "toolwire-progress", BASELINE])
def test_memory(benchmark: Any, request: pytest.FixtureRequest, mode: str) -> None:
    """Every stream is really open and holds its call; the figures go to the report."""
    case = get_case("single-2KB")
    if mode != BASELINE:
        # A stream opened this way holds exactly the call's text: finish one to check.
        asm = toolwire.Assembler(track_progress=mode == "toolwire-progress")
        for index, id_, name, frag in case.deltas:
            asm.feed(index, id=id_, name=name, arguments=frag)
        (call,) = asm.finish()
        assert call.value == case.expected[0]
    rss = probe(mode, trace=False)["rss_per_stream"]
    python_heap = probe(mode, trace=True)["python_heap_per_stream"]
    label(
        benchmark,
        suite="memory",
        case=case,
        alt=mode,
        baseline=BASELINE,
        streams=STREAMS,
        rss_per_stream=rss,
        python_heap_per_stream=python_heap,
        target_per_stream=2 * case.arg_bytes + 2048,
    )
    benchmark.pedantic(open_streams, args=(mode,), rounds=rounds(request.config, 3), iterations=1)
