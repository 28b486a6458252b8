"""The `toolwire` command (also `python -m toolwire`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

from toolwire._core import Assembler, ToolCall


def _feed_chat_chunk(assembler: Assembler, chunk: dict[str, Any]) -> str | None:
    """Feeds one Chat Completions chunk (as a dict); returns its finish reason, if any."""
    finish: str | None = None
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            assembler.feed(
                call.get("index"),
                id=call.get("id"),
                name=function.get("name"),
                arguments=function.get("arguments"),
                type=call.get("type"),
            )
        finish = choice.get("finish_reason") or finish
    return finish


def _describe(call: ToolCall) -> str:
    head = f"#{call.ordinal} {call.name or '<no name>'} (id {call.id or '-'})"
    if call.error is None:
        return f"{head}: ok {json.dumps(call.value, ensure_ascii=False)}"
    err = call.error
    where = f" at byte {err.offset}" + (f", path {err.path}" if err.path else "")
    return f"{head}: {err.kind}{where}: {err.message}\n    raw: {call.arguments}"


def demo(lines: Iterable[str]) -> int:
    """Assembles a recorded Chat Completions stream and prints every call."""
    assembler = Assembler()
    finish: str | None = None
    for line in lines:
        if line.strip():
            finish = _feed_chat_chunk(assembler, json.loads(line)) or finish
    calls = assembler.finish()
    print(f"stream ended with finish_reason={finish!r}; {len(calls)} tool calls")
    for call in calls:
        print(_describe(call))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `toolwire` command."""
    parser = argparse.ArgumentParser(prog="toolwire", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("demo", help="assemble the bundled sample stream and print the calls")
    run.add_argument("file", nargs="?", help="a JSONL file of Chat Completions chunks")
    args = parser.parse_args(argv)
    if args.command in (None, "demo"):
        path = getattr(args, "file", None)
        if path:
            with open(path, encoding="utf-8") as f:
                return demo(f)
        sample = resources.files("toolwire").joinpath("samples/demo_stream.jsonl")
        return demo(sample.read_text(encoding="utf-8").splitlines())
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
