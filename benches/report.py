"""Prints one comparison table from a pytest-benchmark JSON run of `benches/`, and the targets.

    python benches/report.py .benchmarks/run.json   # read a finished run
    python benches/report.py old.json rerun.json    # later files replace the same benchmarks
    python benches/report.py                        # run the full suites first, then report

Columns: the median; the ratio to the suite's named baseline (below 1 is faster); nanoseconds
per fragment and per argument byte; and the growth from the previous size of the same
alternative (single-call cases, each size 10x the bytes of the previous, so linear is 10x).
Memory and thread figures, estimates for runs too slow to make, and a verdict on each
performance target follow the table. The script only reports: it never fails on a number.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SIZE_ORDER = ("200B", "2KB", "20KB", "200KB")
SUITE_ORDER = ("final", "value", "progressive", "raw_sse", "validation", "threads")
# Toolwire rows that re-build a whole value per fragment by design (the like-for-like
# comparison with jiter), so the 9x-11x growth target does not apply to them.
QUADRATIC_BY_DESIGN = ("toolwire partial per-fragment",)


@dataclass(frozen=True)
class Row:
    """One benchmark of the run."""

    suite: str
    case: str
    size: str
    alt: str
    baseline: str
    median: float
    fragments: int
    arg_bytes: int
    extra: dict[str, Any]

    @property
    def single(self) -> bool:
        """True for the single-call cases, the ones growth is read along."""
        return self.case.startswith("single-")


def load(path: Path) -> list[Row]:
    """The labelled benchmarks of a pytest-benchmark JSON file."""
    data = json.loads(path.read_text())
    rows: list[Row] = []
    for bench in data.get("benchmarks", []):
        info = bench.get("extra_info", {})
        if "suite" not in info:
            continue
        rows.append(
            Row(
                suite=info["suite"],
                case=info["case"],
                size=info["size"],
                alt=info["alt"],
                baseline=info["baseline"],
                # Suites that time a batch per round say so; rows are per item.
                median=float(bench["stats"]["median"]) / int(info.get("batch", 1)),
                fragments=int(info["fragments"]),
                arg_bytes=int(info["arg_bytes"]),
                extra=info,
            )
        )
    return rows


def fmt_time(seconds: float) -> str:
    """A duration with a unit that keeps three or four significant digits."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def fmt_ratio(value: float | None) -> str:
    """`1.23x`, with fewer decimals for large ratios; `-` when unknown."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}x"
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def index(rows: Iterable[Row]) -> dict[tuple[str, str, str], Row]:
    """Rows by (suite, case, alternative)."""
    return {(r.suite, r.case, r.alt): r for r in rows}


def ratio_to_baseline(row: Row, by_key: dict[tuple[str, str, str], Row]) -> float | None:
    """The row's median over its suite baseline's median on the same case."""
    base = by_key.get((row.suite, row.case, row.baseline))
    return row.median / base.median if base else None


def growth(row: Row, by_key: dict[tuple[str, str, str], Row]) -> float | None:
    """The row's median over the same alternative's median at the previous size."""
    if not row.single or row.size not in SIZE_ORDER or row.size == SIZE_ORDER[0]:
        return None
    previous = SIZE_ORDER[SIZE_ORDER.index(row.size) - 1]
    before = by_key.get((row.suite, f"single-{previous}", row.alt))
    return row.median / before.median if before else None


def case_key(case: str) -> tuple[int, int]:
    """Single cases first by size, then the parallel ones by size."""
    kind, size = case.split("-", 1)
    return (0 if kind == "single" else 1, SIZE_ORDER.index(size) if size in SIZE_ORDER else 9)


def table(rows: list[Row]) -> list[str]:
    """The comparison table, one line per timed benchmark."""
    by_key = index(rows)
    timed = [r for r in rows if r.suite in SUITE_ORDER]
    timed.sort(key=lambda r: (SUITE_ORDER.index(r.suite), case_key(r.case), r.median))
    header = (
        f"{'suite':<11} {'case':<15} {'alternative':<34} {'median':>10} {'x base':>9} "
        f"{'ns/frag':>9} {'ns/B':>8} {'growth':>8}"
    )
    lines = [header, "-" * len(header)]
    last_group = None
    for r in timed:
        group = (r.suite, r.case)
        if last_group is not None and group != last_group:
            lines.append("")
        last_group = group
        mark = "*" if r.alt == r.baseline else " "
        lines.append(
            f"{r.suite:<11} {r.case:<15} {mark}{r.alt:<33} {fmt_time(r.median):>10} "
            f"{fmt_ratio(ratio_to_baseline(r, by_key)):>9} "
            f"{r.median * 1e9 / r.fragments:>9,.0f} {r.median * 1e9 / r.arg_bytes:>8,.1f} "
            f"{fmt_ratio(growth(r, by_key)):>8}"
        )
    lines.append("(* = the suite's baseline; x base < 1 is faster than it)")
    return lines


def figures(rows: list[Row]) -> list[str]:
    """Memory, thread speed-up and estimated figures."""
    lines: list[str] = []
    memory = [r for r in rows if r.suite == "memory"]
    if memory:
        first = memory[0].extra
        lines.append(
            f"Memory, {first['streams']:,} open streams with a {memory[0].arg_bytes:,} B call "
            f"each (target for toolwire: <= {first['target_per_stream']:,} B per stream):"
        )
        for r in memory:
            lines.append(
                f"  {r.alt:<20} RSS {r.extra['rss_per_stream']:>9,.0f} B/stream  "
                f"Python heap {r.extra['python_heap_per_stream']:>8,.0f} B/stream  "
                f"open+feed all: {fmt_time(r.median)}"
            )
    threads = {r.extra.get("threads"): r for r in rows if r.suite == "threads"}
    if 1 in threads and 2 in threads:
        lines.append(
            f"Threads: two threads feeding separate assemblers run "
            f"{threads[1].median / threads[2].median:.2f}x as fast as one thread "
            f"({threads[1].extra['streams']} streams of {threads[1].case})."
        )
    for r in rows:
        if r.suite == "estimate":
            lines.append(
                f"Estimated, not run: {r.alt} on {r.case} would take about "
                f"{r.extra['estimated_seconds']:,.0f} s per run."
            )
    return lines


def verdict(ok: bool | None) -> str:
    """MET, MISSED or NOT MEASURED."""
    return "NOT MEASURED" if ok is None else ("MET" if ok else "MISSED")


def targets(rows: list[Row]) -> list[str]:
    """One line per performance target of the issue, with the numbers behind the verdict."""
    by_key = index(rows)
    lines: list[str] = []

    def ratios(suite: str, alt: str) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        for r in rows:
            if r.suite == suite and r.alt == alt:
                ratio = ratio_to_baseline(r, by_key)
                if ratio is not None:
                    out.append((r.case, ratio))
        return sorted(out, key=lambda x: case_key(x[0]))

    def check(name: str, pairs: list[tuple[str, float]], limit: float) -> None:
        if not pairs:
            lines.append(f"{verdict(None):<12} {name}")
            return
        shown = ", ".join(f"{case} {fmt_ratio(v)}" for case, v in pairs)
        lines.append(f"{verdict(all(v <= limit for _, v in pairs)):<12} {name}: {shown}")

    check("final: toolwire feed <= 1.2x join+orjson", ratios("final", "toolwire feed"), 1.2)
    prechecked = []
    for r in rows:
        if r.suite == "final" and r.alt == "toolwire feed+precheck":
            plain = by_key.get(("final", r.case, "toolwire feed"))
            if plain:
                prechecked.append((r.case, r.median / plain.median))
    check(
        "pre-check: toolwire feed+precheck <= 1.3x toolwire feed",
        sorted(prechecked, key=lambda x: case_key(x[0])),
        1.3,
    )
    check(
        "value: ToolCall.value <= 1.0x orjson.loads of the text",
        ratios("value", "toolwire .value"),
        1.0,
    )
    # Both progressive paths are judged: items appended during `feed` (`progress_into`, the
    # one to use for a UI) and a `drain_progress` call after every fragment.
    for alt in ("toolwire progress_into", "toolwire progress"):
        per_frag = [
            (r.case, r.median * 1e9 / r.fragments)
            for r in rows
            if r.suite == "progressive" and r.alt == alt
        ]
        per_frag.sort(key=lambda x: case_key(x[0]))
        if per_frag:
            ok = all(v <= 300 for _, v in per_frag)
            shown = ", ".join(f"{case} {v:,.0f} ns" for case, v in per_frag)
            lines.append(f"{verdict(ok):<12} progressive ({alt}): <= 300 ns per fragment: {shown}")
        for size, floor in (("200B", 4.0), ("200KB", 1000.0)):
            tw = by_key.get(("progressive", f"single-{size}", alt))
            jt = by_key.get(("progressive", f"single-{size}", "jiter per-fragment"))
            name = (
                f"progressive ({alt}): {'>=' if floor == 4 else '>'} {floor:,.0f}x faster than"
                f" jiter at {size}"
            )
            if tw and jt:
                speed = jt.median / tw.median
                ok = speed >= floor if floor == 4 else speed > floor
                lines.append(f"{verdict(ok):<12} {name}: {speed:,.1f}x")
            elif tw is None:
                lines.append(f"{verdict(None):<12} {name} (not in this run)")
            else:
                lines.append(f"{verdict(None):<12} {name} (a quick run leaves jiter out at 200 KB)")
    raw = [r for r in rows if r.suite == "raw_sse" and r.alt == "toolwire feed_sse"]
    raw.sort(key=lambda r: case_key(r.case))
    if raw and all("input_bytes" in r.extra for r in raw):
        speeds = [(r.case, r.extra["input_bytes"] / r.median / 1e6) for r in raw]
        shown = ", ".join(f"{case} {v:,.0f} MB/s" for case, v in speeds)
        lines.append(
            f"{verdict(all(v >= 200 for _, v in speeds)):<12} raw SSE: >= 200 MB/s: {shown}"
        )
    else:
        lines.append(f"{verdict(None):<12} raw SSE: >= 200 MB/s (no body sizes in this run)")
    # The SDK's own path is its `Stream` plus its stream helper; where the helper cannot run
    # (interleaved calls, see `test_final_values`) its `Stream` with join+orjson stands in.
    # The speed-up over the `Stream` alone is shown next to it.
    sdk_paths = ("openai Stream+StreamState", "openai Stream+join+orjson")
    speedups: list[tuple[str, float, float]] = []
    for r in raw:
        own = by_key.get(("raw_sse", r.case, sdk_paths[0])) or by_key.get(
            ("raw_sse", r.case, sdk_paths[1])
        )
        decode_only = by_key.get(("raw_sse", r.case, sdk_paths[1]))
        if own and decode_only:
            speedups.append((r.case, own.median / r.median, decode_only.median / r.median))
    name = "raw SSE: >= 100x faster than the openai SDK's own path (Stream + its stream helper)"
    if speedups:
        shown = ", ".join(
            f"{case} {v:,.0f}x ({d:,.0f}x its Stream alone)" for case, v, d in speedups
        )
        lines.append(f"{verdict(all(v >= 100 for _, v, _ in speedups)):<12} {name}: {shown}")
    else:
        lines.append(f"{verdict(None):<12} {name} (not in this run)")
    check(
        "validation: last fragment -> model <= 1.1x model_validate_json",
        ratios("validation", "toolwire last fragment->model"),
        1.1,
    )
    mem = by_key.get(("memory", "single-2KB", "toolwire"))
    if mem:
        rss, target = mem.extra["rss_per_stream"], mem.extra["target_per_stream"]
        lines.append(
            f"{verdict(rss <= target):<12} memory: <= 2x argument bytes + 2 KB per call: "
            f"{rss:,.0f} B vs {target:,} B"
        )
    growths: list[str] = []
    all_ok: bool | None = None
    for r in rows:
        if (
            r.case == "single-200KB"
            and r.alt.startswith("toolwire")
            and r.suite in SUITE_ORDER
            and r.alt not in QUADRATIC_BY_DESIGN
        ):
            g = growth(r, by_key)
            if g is None:
                continue
            ok = 9.0 <= g <= 11.0
            all_ok = ok if all_ok is None else all_ok and ok
            growths.append(f"{r.suite}/{r.alt} {g:.1f}x{'' if ok else ' (!)'}")
    lines.append(
        f"{verdict(all_ok):<12} growth 20 KB -> 200 KB in 9x-11x for every toolwire path: "
        + ", ".join(growths)
    )
    return lines


def run_suites(out: Path) -> None:
    """Runs the full benchmark suites, writing pytest-benchmark's JSON to `out`."""
    root = Path(__file__).resolve().parent.parent
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "benches",
        "-q",
        "--benchmark-enable",
        "-o",
        "testpaths=benches",
        f"--benchmark-json={out}",
    ]
    subprocess.run(command, cwd=root, check=True)


def main(argv: list[str]) -> int:
    """Reads (or first makes) one or more runs and prints the report.

    With several files, a benchmark in a later file replaces the same (suite, case,
    alternative) from an earlier one: re-run a subset with `-k` and pass both files.
    """
    if any(arg.startswith("-") for arg in argv):
        print("usage: python benches/report.py [RUN.json ...]", file=sys.stderr)
        return 2
    paths = [Path(arg) for arg in argv]
    if not paths:
        paths = [Path(__file__).resolve().parent.parent / ".benchmarks" / "run.json"]
        run_suites(paths[0])
    merged: dict[tuple[str, str, str], Row] = {}
    for path in paths:
        merged.update(index(load(path)))
    rows = list(merged.values())
    if not rows:
        print(f"no labelled benchmarks in {', '.join(map(str, paths))}", file=sys.stderr)
        return 1
    data = json.loads(paths[-1].read_text())
    machine = data.get("machine_info", {})
    print(
        f"toolwire benchmarks: Python {machine.get('python_version', '?')}, "
        f"{machine.get('cpu', {}).get('brand_raw', '?')}, {data.get('datetime', '')}"
    )
    print()
    print("\n".join(table(rows)))
    print()
    print("\n".join(figures(rows)))
    print()
    print("Targets:")
    print("\n".join(targets(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
