"""Measures the memory of N concurrent streams with ~2 KB of arguments in flight each.

Run by `test_memory.py` in a fresh interpreter per measurement (RSS only says something about
the allocations of one experiment when nothing else has run in the process), and usable alone:

    python benches/memory_probe.py toolwire 10000 [--tracemalloc]

prints one JSON object: RSS growth (or, with `--tracemalloc`, tracemalloc's count of Python-heap
growth) in bytes per stream. toolwire's call state lives on the Rust heap (plain malloc), which
tracemalloc does not see, so RSS is the figure that counts; tracemalloc shows the Python part.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from corpus import get_case

MODES = ("toolwire", "toolwire-progress", "list-of-fragments")


def rss_bytes() -> int:
    """Resident set size now (Linux `/proc`; 0 where it is not available)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def fresh(fragment: str) -> str:
    """A new str object with the same text: a real stream's fragments are all distinct objects."""
    return (fragment + " ")[:-1]


def measure(mode: str, streams: int, *, trace: bool) -> dict[str, Any]:
    """Opens `streams` streams in `mode` and feeds each the `single-2KB` call, leaving it open.

    With `trace`, counts Python-heap growth with tracemalloc instead of RSS growth (tracemalloc
    keeps its own records on the C heap, which would inflate RSS, so the two are separate runs).
    """
    import toolwire

    case = get_case("single-2KB")
    deltas = case.deltas
    holders: list[Any] = []
    gc.collect()
    if trace:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0] if trace else rss_bytes()
    for _ in range(streams):
        # Each fragment is a fresh object, as the network layer would hand over: toolwire copies
        # its bytes and drops it, the list-of-fragments baseline keeps it alive.
        if mode == "list-of-fragments":
            parts: list[str] = []
            for _index, _id, _name, frag in deltas:
                parts.append(fresh(frag))
            holders.append(parts)
        elif mode == "toolwire-progress":
            # A progressive UI drains after every fragment; items it has shown are gone.
            asm = toolwire.Assembler(track_progress=True)
            for index, id_, name, frag in deltas:
                asm.feed(index, id=id_, name=name, arguments=fresh(frag))
                asm.drain_progress()
            holders.append(asm)
        else:
            asm = toolwire.Assembler()
            for index, id_, name, frag in deltas:
                asm.feed(index, id=id_, name=name, arguments=fresh(frag))
            holders.append(asm)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0] if trace else rss_bytes()
    if trace:
        tracemalloc.stop()
    return {
        "mode": mode,
        "streams": streams,
        "arg_bytes_per_stream": case.arg_bytes,
        ("python_heap_per_stream" if trace else "rss_per_stream"): (after - before) / streams,
    }


def main(argv: list[str]) -> int:
    """`memory_probe.py MODE STREAMS [--tracemalloc]`: prints the measurement as JSON."""
    trace = "--tracemalloc" in argv
    args = [arg for arg in argv if arg != "--tracemalloc"]
    if len(args) != 2 or args[0] not in MODES:
        usage = f"usage: python memory_probe.py {{{'|'.join(MODES)}}} STREAMS [--tracemalloc]"
        print(usage, file=sys.stderr)
        return 2
    print(json.dumps(measure(args[0], int(args[1]), trace=trace)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
