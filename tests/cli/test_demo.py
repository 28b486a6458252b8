"""The bundled demo: every bundled entry gets exactly the outcome its `expect` names."""

from __future__ import annotations

import pytest

from toolwire.cli import main
from toolwire.demo_tools import demo_toolset
from toolwire.replay import Entry, load_bundled, replay, replay_entry

from .conftest import run_module

BUNDLED = load_bundled()


def test_every_bundled_entry_has_an_expectation() -> None:
    assert BUNDLED
    for entry in BUNDLED:
        assert entry.expect is not None, entry.key


@pytest.mark.parametrize("entry", BUNDLED, ids=[e.key for e in BUNDLED])
def test_bundled_entry_meets_its_expectation(entry: Entry) -> None:
    case = replay_entry(entry, demo_toolset())
    assert entry.expect is not None
    assert len(case.calls) == len(entry.expect)
    for call, expect in zip(case.calls, entry.expect, strict=True):
        assert call.state == expect.state, call
        if expect.code is not None:
            assert call.code == expect.code
        if expect.tool is not None:
            assert call.tool == expect.tool
        if expect.coercions is not None:
            assert sorted(c["rule"] for c in call.coercions) == list(expect.coercions)
    assert case.passed, case.reason


def test_bundled_corpus_covers_every_failure_class_and_format() -> None:
    report = replay(BUNDLED, demo_toolset())
    codes = set(report.by_code())
    assert {
        "truncated",
        "invalid_escape",
        "concatenated_values",
        "unknown_tool",
        "unknown_field",
        "enum",
        "pattern",
        "decimal",
        "business_rule",
    } <= codes
    assert {"enum_case", "number_string"} <= set(report.coercions())
    sources = {e.source for e in BUNDLED}
    assert {
        "samples/openai_chat.sse",
        "samples/openai_chat.jsonl",
        "samples/openai_responses.jsonl",
        "samples/anthropic.jsonl",
        "samples/failed_calls.jsonl",
    } <= sources
    # Interleaved parallel calls and a name repeated in every chunk assemble cleanly.
    parallel = next(c for c in report.cases if c.entry.key.endswith(":parallel-interleaved"))
    assert [c.tool for c in parallel.calls] == ["create_ticket", "lookup_order", "refund_order"]
    assert report.ok


@pytest.mark.parametrize("argv", [[], ["demo"], ["replay"]])
def test_demo_commands_exit_zero(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"All {len(BUNDLED)} cases as expected." in out
    assert "Final states" in out and "Error codes" in out and "Coercions applied" in out


def test_demo_through_python_dash_m() -> None:
    done = run_module("demo")
    assert done.returncode == 0, done.stderr
    assert b"cases as expected" in done.stdout
    bare = run_module()
    assert bare.returncode == 0, bare.stderr
