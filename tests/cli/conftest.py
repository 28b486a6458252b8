"""Helpers shared by the command-line tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolwire

SAMPLES = Path(toolwire.__file__).parent / "samples"


def run_module(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> Any:
    """`python -m toolwire ARGS` in a subprocess; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def write_jsonl(path: Path, items: list[Any]) -> Path:
    """Write one JSON value per line."""
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def chat_call(
    index: int, arguments: str, *, id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """A Chat Completions chunk carrying one tool-call delta."""
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}],
    }


@pytest.fixture
def samples() -> Path:
    """The bundled corpus directory."""
    return SAMPLES
