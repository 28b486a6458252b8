"""The `toolwire` command (also `python -m toolwire`).

Subcommands:

* `toolwire demo` (also `toolwire` alone, or `toolwire replay` without a corpus): replay the
  bundled corpus against the bundled demo toolset and print the summary.
* `toolwire replay CORPUS... [--tools module:toolset] [--format F] [--json OUT]
  [--baseline REPORT]`: replay recorded streams and failed calls through the assembler, the
  pre-check and validation.
* `toolwire record OUT [--tools module:toolset]`: record a raw SSE body read from stdin.
* `toolwire inspect CORPUS`: show the entries of a corpus file (or of the corpus files under a
  directory, as `replay` reads it) call by call, with where each error became certain.

Exit status: 0 when every case is as expected (with `--baseline`: when nothing newly fails),
1 when a case fails (with `--baseline`: when a case newly fails), 2 on bad usage or an unreadable
corpus, toolset or baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, cast

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from toolwire.recorder import (
    DEFAULT_BACKUPS,
    DEFAULT_MAX_BYTES,
    Recorder,
    StreamPolicy,
    redact_arguments,
    redaction_schema,
)
from toolwire.replay import (
    FORMATS,
    BaselineDiff,
    CallResult,
    CaseResult,
    CorpusError,
    Entry,
    FormatName,
    Report,
    bundled_corpus,
    compare,
    entry_ident,
    feed_sse,
    load_bundled,
    load_corpus,
    load_toolset,
    new_assembler,
    replay,
    replay_entry,
)
from toolwire.schema_export import secret_patterns
from toolwire.toolset import Toolset

__all__ = ["main", "snippet"]

DEMO_TOOLS = "toolwire.demo_tools:demo_toolset"
"""The toolset the bundled corpus is replayed against."""
_PROGRESS_MIN = 20  # below this many cases a bar only flickers
_SNIPPET_CONTEXT = 32


class _UsageError(Exception):
    """Bad input from the command line: printed, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolwire",
        description="Replay, record and inspect streamed LLM tool calls.",
    )
    sub = parser.add_subparsers(dest="command")

    sub.add_parser("demo", help="replay the bundled corpus against the bundled demo toolset")

    rp = sub.add_parser("replay", help="replay a corpus and print a summary")
    rp.add_argument("corpus", nargs="*", help="corpus files or directories (default: bundled)")
    _add_tools(rp)
    _add_format(rp)
    rp.add_argument("--json", metavar="OUT", help="write a machine-readable report to OUT")
    rp.add_argument(
        "--baseline",
        metavar="REPORT",
        help="compare with an earlier --json report; fail only on new failures",
    )
    rp.add_argument("--no-progress", action="store_true", help="never show a progress bar")

    rec = sub.add_parser("record", help="record a raw SSE body from stdin into a corpus file")
    rec.add_argument("out", help="the corpus file (JSONL), appended to")
    _add_tools(rec)
    rec.add_argument(
        "--streams",
        choices=("all", "failed", "off"),
        default="all",
        help="record the whole stream always, only when a call failed, or never (calls only)",
    )
    rec.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES, help="rotation size")
    rec.add_argument("--backups", type=int, default=DEFAULT_BACKUPS, help="rotated files kept")
    rec.add_argument("--tee", action="store_true", help="copy stdin to stdout as it is read")

    ins = sub.add_parser("inspect", help="show a recorded stream call by call")
    ins.add_argument("file", help="a corpus file (.sse or .jsonl) or a directory of them")
    _add_tools(ins)
    _add_format(ins)
    ins.add_argument("--entry", metavar="ID", help="only the entry with this id")
    return parser


def _add_tools(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tools",
        metavar="MODULE:TOOLSET",
        help="a Toolset (or a function returning one) to pre-check and validate with",
    )


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="how chunks are read when an entry does not say (default: auto-detect)",
    )


def _toolset(spec: str | None) -> Toolset | None:
    if spec is None:
        return None
    try:
        return load_toolset(spec)
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `toolwire` command.

    Args:
        argv: The arguments after the program name (default: `sys.argv[1:]`).

    Returns:
        The exit status: 0 all as expected, 1 failures (new failures with `--baseline`),
        2 bad usage or unreadable input.
    """
    args = _parser().parse_args(argv)
    # soft_wrap: long lines (snippets with their caret line, case keys) must never be folded.
    # No emoji codes: `:fire:` in a tool's arguments is text, and the caret under it must
    # land where the text says.
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True, emoji=False)
    err = Console(file=sys.stderr, highlight=False, soft_wrap=True, emoji=False)
    try:
        if args.command == "record":
            return _record(args, err)
        if args.command == "inspect":
            return _inspect(args, out)
        return _replay(args, out)
    except (_UsageError, CorpusError) as exc:
        err.print(f"toolwire: error: {escape(str(exc))}")
        return 2


# --------------------------------------------------------------------------------------------
# replay / demo


def _replay(args: argparse.Namespace, out: Console) -> int:
    corpus: list[str] = list(getattr(args, "corpus", None) or [])
    fmt = cast("FormatName", getattr(args, "format", "auto"))
    tools_spec: str | None = getattr(args, "tools", None)
    if tools_spec is None and (not corpus or all(_is_bundled(p) for p in corpus)):
        # The bundled corpus is written for the demo toolset, also when its files are named.
        tools_spec = DEMO_TOOLS
    # Loaded before anything is printed: a bad `--tools` is an error alone, not a banner then one.
    toolset = _toolset(tools_spec)
    if not corpus:
        entries = load_bundled(fmt)
        out.print(
            "The bundled corpus: recorded streams in every wire format (OpenAI Chat SSE and "
            "chunks, Responses events, Anthropic events) and failed calls, each with the "
            "outcome it must get.\n"
        )
    else:
        entries = _load(corpus, fmt)
    baseline = _read_baseline(getattr(args, "baseline", None))
    show_bar = (
        out.is_terminal
        and not getattr(args, "no_progress", False)
        and len(entries) >= _PROGRESS_MIN
    )
    if show_bar:
        with Progress(
            TextColumn("replaying"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=out,
            transient=True,
        ) as bar:
            task = bar.add_task("replay", total=len(entries))
            report = replay(entries, toolset, tools=tools_spec, on_case=lambda _: bar.advance(task))
    else:
        report = replay(entries, toolset, tools=tools_spec)
    diff = None if baseline is None else _compare(report, baseline)
    _print_summary(report, out, diff)
    json_out: str | None = getattr(args, "json", None)
    if json_out:
        data = report.to_json()
        if diff is not None:
            data["baseline"] = diff.to_json()
        try:
            Path(json_out).write_text(
                json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
            )
        except OSError as exc:
            raise _UsageError(f"cannot write {json_out}: {exc.strerror or exc}") from exc
    if diff is not None:
        return 1 if diff.newly_failing else 0
    return 0 if report.ok else 1


def _is_bundled(path: str) -> bool:
    """Whether `path` is the bundled corpus or a file in it."""
    try:
        samples = Path(str(bundled_corpus())).resolve()
        target = Path(path).resolve()
    except (OSError, RuntimeError):
        return False
    return target == samples or samples in target.parents


def _load(corpus: list[str], fmt: FormatName) -> list[Entry]:
    """The entries of the corpus files and directories named on the command line."""
    missing = [p for p in corpus if not Path(p).exists()]
    if missing:
        raise _UsageError(f"no such file or directory: {', '.join(missing)}")
    entries = load_corpus(corpus, fmt=fmt)
    if not entries:
        # A run over nothing would pass: a wrong path in CI must not look like success.
        raise _UsageError(f"no corpus entries in {', '.join(corpus)} (*.jsonl, *.sse)")
    return entries


def _read_baseline(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data: object = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise _UsageError(f"cannot read baseline {path}: {exc.strerror or exc}") from exc
    except (ValueError, RecursionError) as exc:
        raise _UsageError(f"baseline {path} is not JSON: {exc.__class__.__name__}") from exc
    if not isinstance(data, dict):
        raise _UsageError(f"baseline {path} is not a toolwire report")
    return cast("dict[str, Any]", data)


def _compare(report: Report, baseline: dict[str, Any]) -> BaselineDiff:
    try:
        return compare(report, baseline)
    except CorpusError as exc:
        raise _UsageError(str(exc)) from exc


def _counts(title: str, head: str, counts: dict[str, int]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column(head)
    table.add_column("calls", justify="right")
    for key, value in counts.items():
        table.add_row(escape(key), str(value))
    return table


def _print_summary(report: Report, out: Console, diff: BaselineDiff | None) -> None:
    calls = report.calls
    tools = report.tools or "none (JSON checks only)"
    out.print(
        f"Replayed {len(report.cases)} cases ({len(calls)} calls) "
        f"in {report.seconds * 1000:.1f} ms; tools: {escape(tools)}"
    )
    out.print()
    states = report.by_state()
    out.print(_counts("Final states", "state", states))
    out.print()
    by_tool = Table(title="By tool", title_justify="left", show_edge=False)
    by_tool.add_column("tool")
    columns = list(states)
    for state in columns:
        by_tool.add_column(state, justify="right")
    for tool, counts in report.by_tool().items():
        by_tool.add_row(escape(tool), *(str(counts.get(s, 0)) for s in columns))
    out.print(by_tool)
    codes = report.by_code()
    if codes:
        out.print()
        out.print(_counts("Error codes", "code", codes))
    coercions = report.coercions()
    if coercions:
        out.print()
        table = Table(title="Coercions applied", title_justify="left", show_edge=False)
        table.add_column("rule")
        table.add_column("count", justify="right")
        table.add_column("example")
        examples = {
            str(c["rule"]): f"{call.tool} {c['path']}: {c['from']} -> {c['to']}"
            for call in reversed(calls)
            for c in call.coercions
        }
        for rule, count in coercions.items():
            table.add_row(escape(rule), str(count), escape(examples.get(rule, "")))
        out.print(table)
    out.print()
    slow = Table(title="Slowest cases", title_justify="left", show_edge=False)
    slow.add_column("case")
    slow.add_column("ms", justify="right")
    for case in report.slowest():
        slow.add_row(escape(case.entry.key), f"{case.seconds * 1000:.2f}")
    out.print(slow)
    failures = report.failures
    out.print()
    if failures:
        out.print(f"[bold red]{len(failures)} of {len(report.cases)} cases failed:[/]")
        for case in failures:
            out.print(f"  {escape(case.entry.key)}: {escape(case.reason or '')}")
        if report.tools is None and any(c.expect is not None for f in failures for c in f.calls):
            # Without a toolset only the core's outcomes can happen: an entry recorded with
            # tools expects validation's (unknown tools, field errors, coercions).
            out.print(
                "Replayed without --tools, so only JSON checks ran: expectations of validation "
                "(unknown tools, field errors, coercions) cannot be met. Pass the toolset the "
                "entries were recorded with: --tools MODULE:TOOLSET."
            )
    else:
        out.print(f"[bold green]All {len(report.cases)} cases as expected.[/]")
    changed = [case.entry.key for case in report.cases if case.schema_changed]
    if changed:
        out.print(f"{len(changed)} cases were recorded against an older schema:")
        for key in changed:
            out.print(f"  {escape(key)}")
    if diff is not None:
        out.print()
        out.print(
            f"Against the baseline: {len(diff.newly_failing)} newly failing, "
            f"{len(diff.newly_passing)} newly passing, {len(diff.still_failing)} still failing, "
            f"{len(diff.missing)} missing"
        )
        for label, keys in (
            ("newly failing", diff.newly_failing),
            ("newly passing", diff.newly_passing),
            ("missing", diff.missing),
        ):
            for key in keys:
                out.print(f"  {label}: {escape(key)}")


# --------------------------------------------------------------------------------------------
# record


def _record(args: argparse.Namespace, err: Console) -> int:
    toolset = _toolset(args.tools)
    try:
        recorder = Recorder(
            args.out,
            toolset=toolset,
            streams=cast("StreamPolicy", args.streams),
            max_bytes=args.max_bytes,
            backups=args.backups,
        )
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    body = _read_stdin(args.tee)
    asm = new_assembler(toolset)
    feed_sse(asm, body)
    calls = asm.finish()
    outcomes = [None if toolset is None else toolset.validate(c) for c in calls]
    fmt: object = getattr(asm, "format", None) or asm.chunk_format
    try:
        written = recorder.record_stream(
            calls,
            outcomes,
            body=body,
            format=fmt if isinstance(fmt, str) else None,
            stream_errors=asm.stream_errors(),
        )
    except OSError as exc:
        raise _UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from exc
    failed = sum(1 for c, o in zip(calls, outcomes, strict=True) if not (o.ok if o else c.ok))
    err.print(
        f"toolwire: {len(calls)} calls, {failed} failed; {written} records appended to "
        f"{escape(args.out)}"
    )
    return 0


def _read_stdin(tee: bool) -> bytes:
    source: IO[bytes] = sys.stdin.buffer
    if not tee:
        return source.read()
    parts: list[bytes] = []
    sink = sys.stdout.buffer
    # read1 returns what has arrived, so a live body is passed on as it streams.
    read: Callable[[int], bytes] = getattr(source, "read1", source.read)
    passing = True
    while piece := read(65536):
        parts.append(piece)
        if passing:
            try:
                sink.write(piece)
                sink.flush()
            except BrokenPipeError:
                # The reader downstream left (`| head`): the recording goes on without it.
                # stdout is pointed at /dev/null so that closing it at exit raises nothing.
                passing = False
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
    return b"".join(parts)


# --------------------------------------------------------------------------------------------
# inspect


def snippet(arguments: bytes, offset: int, context: int = _SNIPPET_CONTEXT) -> tuple[str, str]:
    """The raw text around a byte offset, and a caret line pointing at it.

    Control characters are shown as `\\n`-style escapes and the caret column counts terminal
    cells, so wide characters (CJK, emoji) keep it aligned.

    Args:
        arguments: The raw argument bytes.
        offset: The byte offset of the problem.
        context: How many characters to show on each side.

    Returns:
        `(text_line, caret_line)`.
    """
    offset = max(0, min(offset, len(arguments)))
    before = arguments[:offset].decode("utf-8", errors="replace")
    after = arguments[offset:].decode("utf-8", errors="replace")
    head = before[-context:]
    tail = after[:context]
    lead = "…" if len(before) > context else ""
    trail = "…" if len(after) > context else ""
    shown_head = lead + _visible(head)
    return shown_head + _visible(tail) + trail, " " * cell_len(shown_head) + "^"


def _visible(text: str) -> str:
    return "".join(
        json.dumps(ch)[1:-1] if _CONTROL.fullmatch(ch) else ch  # `\u001b`, never a raw ESC
        for ch in text
    )


# C0 and C1 control characters and DEL: a terminal acts on them (`\x1b[2J` clears it).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def escape(text: str) -> str:
    """Text from a stream or a corpus, printable as it is: rich markup escaped, and control
    characters written as escapes so that a tool name or a note cannot drive the terminal."""
    return _markup_escape(_visible(text) if _CONTROL.search(text) else text)


def _inspect(args: argparse.Namespace, out: Console) -> int:
    entries = _load([args.file], cast("FormatName", args.format))
    if args.entry is not None:
        # The key is `<source>:<id>`, and an id may hold colons itself.
        entries = [e for e in entries if entry_ident(e) == args.entry]
        if not entries:
            raise _UsageError(f"no entry {args.entry!r} in {args.file}")
    toolset = _toolset(args.tools)
    all_passed = True
    for number, entry in enumerate(entries):
        if number:
            out.print()
        case = replay_entry(entry, toolset)
        all_passed = all_passed and case.passed
        _print_case(entry, case, out, toolset)
    return 0 if all_passed else 1


def _print_case(
    entry: Entry, case: CaseResult, out: Console, toolset: Toolset | None = None
) -> None:
    source = f"{len(entry.chunks)} chunks" if entry.body is None else "raw SSE"
    if entry.kind == "call":
        source = "one recorded call"
    verdict = "[green]as expected[/]" if case.passed else f"[red]{escape(case.reason or '')}[/]"
    out.print(f"[bold]{escape(entry.key)}[/] ({source}, {len(case.calls)} calls): {verdict}")
    if entry.note:
        out.print(f"  {escape(entry.note)}")
    if case.text:
        out.print(f"  text: {escape(json.dumps(case.text, ensure_ascii=False))}")
    for call in case.calls:
        _print_call(call, out, toolset)


def _shown_arguments(call: CallResult, toolset: Toolset | None) -> str:
    """The call's arguments as they may be printed: redacted as the recorder redacts them,
    for a tool that declares secrets and for a call of no known tool beside one that does
    (a hand-written corpus is not redacted already)."""
    schema = redaction_schema(call.tool, toolset)
    if schema is None or not secret_patterns(schema):
        return call.arguments
    return redact_arguments(call.arguments, schema)


def _print_call(call: CallResult, out: Console, toolset: Toolset | None = None) -> None:
    outcome = call.state if call.code is None else f"{call.state}/{call.code}"
    mark = "" if call.passed else f"  [red]<- {escape(call.reason or '')}[/]"
    out.print(
        f"  #{call.ordinal} {escape(call.tool or '<no name>')} (id {escape(call.call_id or '-')}): "
        f"{escape(outcome)}{mark}"
    )
    raw = call.arguments.encode("utf-8", errors="surrogatepass")
    shown = _shown_arguments(call, toolset)
    site = call.error
    if site is not None:
        when = "" if site.chunk is None else f", reported after chunk {site.chunk}"
        out.print(
            f"     {escape(site.kind)}: {escape(site.message)}; certain at byte {site.offset}, "
            f"path {escape(json.dumps(site.path))}{when}"
        )
        if shown == call.arguments:
            line, caret = snippet(raw, site.offset)
            out.print(f"       {escape(line)}")
            out.print(f"       {caret}")
        else:
            # Offsets are into the raw text, which holds secrets: the redacted text instead.
            out.print(f"     arguments (secrets redacted): {escape(shown)}")
    for error in call.field_errors:
        details = [f"{key} {error[key]}" for key in ("expected", "got", "hint") if key in error]
        head = f"{error['path'] or '/'} {error['code']}"
        out.print(f"     {escape(head + (': ' + ', '.join(details) if details else ''))}")
    for coercion in call.coercions:
        out.print(
            f"     coerced {escape(str(coercion['path']))} ({escape(str(coercion['rule']))}): "
            f"{escape(str(coercion['from']))} -> {escape(str(coercion['to']))}"
        )
    if site is None:
        out.print(f"     arguments: {escape(shown)}")


if __name__ == "__main__":
    sys.exit(main())
