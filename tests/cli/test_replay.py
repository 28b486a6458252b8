"""`toolwire replay`: corpus formats, expectations, the JSON report and baseline diffs."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from toolwire import Assembler
from toolwire.cli import main
from toolwire.demo_tools import demo_toolset
from toolwire.replay import (
    REPORT_SCHEMA_VERSION,
    CorpusError,
    bundled_corpus,
    compare,
    load_bundled,
    load_corpus,
    replay,
    replay_entry,
)

from .conftest import chat_call, run_module, write_jsonl

TOOLS = "toolwire.demo_tools:demo_toolset"


def stream(ident: str, expect: Any = None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"toolwire": "stream", "schema_version": 1, "id": ident, **extra}
    if expect is not None:
        record["expect"] = expect
    return record


def call(ident: str, tool: str, arguments: str, expect: Any = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "toolwire": "call",
        "schema_version": 1,
        "id": ident,
        "tool": tool,
        "arguments": arguments,
    }
    if expect is not None:
        record["expect"] = expect
    return record


def read_report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small corpus: two streams and two calls, all as expected under the demo toolset."""
    return write_jsonl(
        tmp_path / "corpus.jsonl",
        [
            stream("ok-stream", [{"tool": "lookup_order", "state": "ok"}]),
            chat_call(0, '{"order_id": "ORD-1"}', id="c1", name="lookup_order"),
            stream("cut", [{"state": "model_error", "code": "truncated"}]),
            chat_call(0, '{"order_id": "ORD-', id="c2", name="lookup_order"),
            call("enum", "create_ticket", '{"title": "t", "priority": "urgent"}', "model_error"),
            call(
                "drift",
                "create_ticket",
                '{"title": "t", "priority": "LOW"}',
                {
                    "state": "ok",
                    "coercions": ["enum_case"],
                },
            ),
        ],
    )


def test_replay_passes_and_writes_a_stable_report(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    assert main(["replay", str(corpus), "--tools", TOOLS, "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "All 4 cases as expected." in text
    report = read_report(out)
    assert report["schema_version"] == REPORT_SCHEMA_VERSION
    assert report["ok"] is True
    assert report["tools"] == TOOLS
    assert report["totals"] | {"ms": 0} == {
        "cases": 4,
        "passed": 4,
        "failed": 0,
        "calls": 4,
        "ms": 0,
    }
    assert report["by_state"] == {"ok": 2, "model_error": 2}
    assert report["by_code"] == {"truncated": 1, "enum": 1}
    assert report["by_tool"] == {
        "create_ticket": {"model_error": 1, "ok": 1},
        "lookup_order": {"ok": 1, "model_error": 1},
    }
    assert report["coercions"] == {"enum_case": 1}
    assert len(report["slowest"]) == 4
    keys = [case["key"] for case in report["cases"]]
    assert keys == [f"{corpus}:ok-stream", f"{corpus}:cut", f"{corpus}:enum", f"{corpus}:drift"]
    cut = report["cases"][1]["calls"][0]
    assert cut["error"] == {
        "kind": "truncated",
        "message": cut["error"]["message"],
        "offset": 18,
        "path": "/order_id",
        "chunk": None,
    }
    drift = report["cases"][3]["calls"][0]
    assert drift["coercions"] == [
        {"path": "/priority", "rule": "enum_case", "from": '"LOW"', "to": '"low"'}
    ]


def test_entries_without_expect_fail_when_not_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = write_jsonl(
        tmp_path / "bare.jsonl",
        [
            chat_call(0, '{"order_id": "ORD-1"}', id="a", name="lookup_order"),
            chat_call(1, '{"order_id": 7}', id="b", name="lookup_order"),
        ],
    )
    assert main(["replay", str(bare), "--tools", TOOLS]) == 1
    out = capsys.readouterr().out
    assert "1 of 1 cases failed" in out
    assert "#1 lookup_order: not ok: model_error/type" in out
    # Without a toolset only the JSON is checked, and both calls are well-formed.
    assert main(["replay", str(bare)]) == 0


def test_bundled_sample_files_named_alone_replay_against_the_demo_toolset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = Path(str(bundled_corpus()))
    # Their expectations (unknown tools, field errors) need the toolset they were written for.
    assert main(["replay", str(samples / "anthropic.jsonl"), "--no-progress"]) == 0
    assert f"tools: {TOOLS}" in capsys.readouterr().out
    assert main(["replay", str(samples), "--no-progress"]) == 0
    capsys.readouterr()
    # A copy outside the package is someone's corpus: replayed as asked, without tools, it
    # fails, and the summary says why and what to pass.
    copy = tmp_path / "anthropic.jsonl"
    copy.write_bytes((samples / "anthropic.jsonl").read_bytes())
    assert main(["replay", str(copy), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "expected model_error/unknown_tool, got ok" in out
    assert "Replayed without --tools" in out
    assert "--tools MODULE:TOOLSET" in out
    assert main(["replay", str(copy), "--tools", TOOLS, "--no-progress"]) == 0


def test_expectation_mismatches_fail(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "wrong.jsonl",
        [
            call("state", "lookup_order", '{"order_id": "ORD-1"}', "model_error"),
            call(
                "code", "lookup_order", '{"order_id": "1"}', {"state": "model_error", "code": "x"}
            ),
            call("tool", "lookup_order", '{"order_id": "ORD-1"}', {"state": "ok", "tool": "y"}),
            call(
                "rules",
                "lookup_order",
                '{"order_id": "ORD-1"}',
                {"state": "ok", "coercions": ["a"]},
            ),
            stream("count", [{"state": "ok"}, {"state": "ok"}]),
            chat_call(0, '{"order_id": "ORD-1"}', id="c", name="lookup_order"),
        ],
    )
    report = replay(load_corpus([path]), demo_toolset())
    reasons = {case.entry.key.rsplit(":", 1)[1]: case.reason for case in report.cases}
    assert reasons == {
        "state": "#0 lookup_order: expected model_error, got ok",
        "code": "#0 lookup_order: expected model_error/x, got model_error/pattern",
        "tool": "#0 lookup_order: expected tool 'y', got 'lookup_order'",
        "rules": "#0 lookup_order: expected coercions ['a'], got []",
        "count": "expected 2 calls, got 1",
    }
    assert not report.ok


def test_a_stream_with_an_event_that_could_not_be_read_fails_without_expect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The one event that carried the whole call is not UTF-8: no call is assembled, and a
    # replay that counted only the calls it saw would pass.
    event = json.dumps(chat_call(0, '{"order_id": "ORD-1"}', id="a", name="lookup_order"))
    broken = event.encode().replace(b"ORD-1", b"ORD-\xff")
    (tmp_path / "lost.sse").write_bytes(b"data: " + broken + b"\n\ndata: [DONE]\n\n")
    assert main(["replay", str(tmp_path / "lost.sse")]) == 1
    assert "could not be read (malformed_event" in capsys.readouterr().out
    # An `expect` that describes the calls is the recording's own account of them.
    header = json.dumps({"id": "lost", "expect": []}).encode()
    body = (tmp_path / "lost.sse").read_bytes()
    (tmp_path / "lost.sse").write_bytes(b": toolwire " + header + b"\n\n" + body)
    assert main(["replay", str(tmp_path / "lost.sse")]) == 0


def test_an_sse_file_opening_with_a_byte_order_mark_keeps_its_header(tmp_path: Path) -> None:
    chunks = [chat_call(0, '{"order_id": "ORD-2"}', id="c1", name="lookup_order")]
    header = json.dumps({"id": "bom", "expect": [{"state": "model_error"}]})
    body = f": toolwire {header}\n\n" + "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    path = tmp_path / "bom.sse"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode() + b"data: [DONE]\n\n")
    (entry,) = load_corpus([path])
    assert entry.key.endswith("bom.sse:bom") and entry.expect is not None
    # The header's expectation is applied: the call is ok, so the case fails.
    assert not replay([entry], demo_toolset()).ok


@pytest.mark.parametrize(
    "line",
    [
        '{"toolwire": "stream", "body": 5}',
        '{"toolwire": "stream", "chunks": "abc"}',
        '{"toolwire": "stream", "chunks": [1, 2, 3]}',
        "[1, 2]",
    ],
)
def test_a_damaged_record_is_a_corpus_error_not_an_empty_stream(tmp_path: Path, line: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(CorpusError):
        load_corpus([path])
    assert main(["replay", str(path)]) == 2


@pytest.mark.parametrize(
    ("record", "what"),
    [
        (call("c", "lookup_order", '{"order_id": "ORD-1"}'), "a call record"),
        (stream("s", chunks=[]), "a stream record with inline chunks"),
        (stream("b", body=""), "a stream record with inline body"),
    ],
)
def test_plain_lines_after_a_record_that_takes_none_are_a_corpus_error(
    tmp_path: Path, record: dict[str, Any], what: str
) -> None:
    # Two failing calls in lines no entry holds: skipped, they would let the run pass.
    path = write_jsonl(
        tmp_path / "joined.jsonl",
        [
            record,
            chat_call(0, '{"order_id": 5', id="x", name="lookup_order"),
            chat_call(1, "{", id="y", name="nosuch"),
        ],
    )
    with pytest.raises(CorpusError, match=f"joined.jsonl:2: a plain line follows {what} "):
        load_corpus([path])
    done = run_module("replay", str(path), "--tools", TOOLS)
    assert done.returncode == 2
    assert b"toolwire: error: " in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize("expect", [5, {"code": "enum"}, [{"state": "ok"}, {"state": 5}]])
def test_a_malformed_expect_names_the_file_and_line(tmp_path: Path, expect: object) -> None:
    path = write_jsonl(tmp_path / "e.jsonl", [stream("ok"), stream("bad", expect)])
    with pytest.raises(CorpusError, match=r"e\.jsonl:2: an expect item needs a string 'state'"):
        load_corpus([path])


def test_a_lone_surrogate_in_a_note_or_expect_is_written_to_the_report_as_text(
    tmp_path: Path,
) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            call("n", "a", "{}") | {"note": "bad \ud800 note"},
            call("t", "a", "{}", {"state": "ok", "tool": "\udc80", "coercions": ["\ud801"]}),
            call("s", "a", "{}", "\ud802"),
        ],
    )
    out = tmp_path / "r.json"
    done = run_module("replay", str(path), "--json", str(out))
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    cases = read_report(out)["cases"]
    assert cases[0]["note"] == "bad \\ud800 note"
    assert cases[1]["calls"][0]["expect"] == {
        "state": "ok",
        "tool": "\\udc80",
        "coercions": ["\\ud801"],
    }
    assert cases[2]["calls"][0]["expect"] == {"state": "\\ud802"}


def test_a_corpus_without_entries_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    assert main(["replay", str(tmp_path / "empty.jsonl")]) == 2
    assert main(["replay", str(tmp_path)]) == 2


@pytest.mark.parametrize(
    ("body", "says"),
    [
        # What a `.sse` name on random bytes gave: "raw SSE, 0 calls: as expected".
        (random.Random(7).randbytes(300), "not UTF-8: 'utf-8' codec can't decode"),
        (b"", ""),
        (b"\n\n\n", ""),
        (b': a comment\n\n: toolwire {"id": "x"}\n\n', ""),
        (b"just some text\n", ""),
        (b'data: {"not": "a chunk of any wire format"}\n\n', "(unknown event)"),
        (b"data: [DONE]\n\n", ""),
        (b"data: " + json.dumps(chat_call(0, "{}", id="c", name="x")).encode(), "inside an event"),
    ],
    ids=["random", "empty", "blank", "comments", "text", "unknown", "done", "cut"],
)
def test_an_sse_file_in_which_no_event_can_be_read_is_a_corpus_error(
    tmp_path: Path, body: bytes, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.sse"
    path.write_bytes(body)
    for command in ("replay", "inspect"):
        assert main([command, str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        head = f"toolwire: error: {path}: no SSE event of a known wire format could be read"
        assert captured.err.startswith(head) and says in captured.err


def test_an_sse_file_of_events_loads_whatever_else_it_holds(tmp_path: Path) -> None:
    event = json.dumps(chat_call(0, '{"order_id": "ORD-1"}', id="a", name="lookup_order"))
    bodies = {
        # Only a provider's error event: the stream failed before anything else came.
        "error": b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
        b'"message": "Overloaded"}}\n\n',
        # An event that is not UTF-8 is the capture's own defect: read, reported, failed on.
        "broken": b"data: " + event.encode().replace(b"ORD-1", b"ORD-\xff") + b"\n\n",
        # The recorded connection broke off inside its first event.
        "cut": b': toolwire {"interrupted": "ReadTimeout"}\n\ndata: ' + event.encode()[:30],
    }
    for name, body in bodies.items():
        (tmp_path / f"{name}.sse").write_bytes(body)
    reasons = {
        case.entry.key.rsplit(":", 1)[1]: case.reason
        for case in replay(load_corpus([tmp_path]), demo_toolset()).cases
    }
    assert reasons.keys() == {"error", "broken", "cut"}
    assert (reasons["broken"] or "").startswith("event 1 could not be read (malformed_event")


def test_sse_files_and_fragments(tmp_path: Path) -> None:
    chunks = [chat_call(0, '{"order_id": "ORD-', id="c1", name="lookup_order"), chat_call(0, '2"}')]
    header = json.dumps({"id": "sse", "expect": [{"tool": "lookup_order", "state": "ok"}]})
    body = f": toolwire {header}\n\n" + "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    (tmp_path / "a.sse").write_text(body + "data: [DONE]\n\n", encoding="utf-8")
    write_jsonl(
        tmp_path / "b.jsonl",
        [
            stream(
                "frag",
                [{"state": "ok"}, {"state": "model_error", "code": "truncated"}],
                format="fragments",
            ),
            {"index": 0, "id": "x", "name": "lookup_order", "arguments": '{"order_id"'},
            {"index": 1, "id": "y", "name": "lookup_order", "arguments": '{"order_id": "ORD-'},
            {"index": 0, "arguments": ': "ORD-3"}'},
            {"end": 0},
            stream("inline", [{"state": "ok"}], body=body),
        ],
    )
    entries = load_corpus([tmp_path])
    assert [e.key.rsplit("/", 1)[1] for e in entries] == [
        "a.sse:sse",
        "b.jsonl:frag",
        "b.jsonl:inline",
    ]
    report = replay(entries, demo_toolset())
    assert report.ok, [c.reason for c in report.failures]


def test_forced_format_reads_chunks_with_that_adapter(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [chat_call(0, "{}", id="a", name="lookup_order")])
    (entry,) = load_corpus([path], fmt="openai-chat")
    assert entry.format == "openai-chat"
    assert [c.code for c in replay_entry(entry, demo_toolset()).calls] == ["missing"]


def test_corpus_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newer = write_jsonl(tmp_path / "newer.jsonl", [stream("x") | {"schema_version": 99}])
    with pytest.raises(CorpusError, match="schema_version 99"):
        load_corpus([newer])
    assert main(["replay", str(newer)]) == 2
    assert "schema_version 99" in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text("{not json\n", encoding="utf-8")
    assert main(["replay", str(tmp_path / "bad.jsonl")]) == 2
    assert main(["replay", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["replay", "--tools", "no_such_module_xyz:tools"]) == 2
    assert main(["replay", "--tools", "toolwire.demo_tools:CreateTicket"]) == 2
    kinds = write_jsonl(tmp_path / "kind.jsonl", [{"toolwire": "mystery"}])
    with pytest.raises(CorpusError, match="unknown record kind"):
        load_corpus([kinds])


def test_baseline_lists_new_failures_and_new_passes(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base.json"
    assert main(["replay", str(corpus), "--tools", TOOLS, "--json", str(base)]) == 0
    lines = corpus.read_text(encoding="utf-8").splitlines()
    # "enum" now expects ok (fails), "cut" is dropped, a failing new entry appears.
    enum = json.loads(lines[4])
    enum["expect"] = "ok"
    lines[4] = json.dumps(enum)
    new = call("new", "lookup_order", '{"order_id": 1}', "ok")
    corpus.write_text("\n".join([*lines[:2], lines[4], lines[5], json.dumps(new)]) + "\n")
    second = tmp_path / "second.json"
    code = main(
        ["replay", str(corpus), "--tools", TOOLS, "--baseline", str(base), "--json", str(second)]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert f"newly failing: {corpus}:enum" in out
    diff = read_report(second)["baseline"]
    assert diff == {
        "newly_failing": [f"{corpus}:enum", f"{corpus}:new"],
        "newly_passing": [],
        "still_failing": [],
        "missing": [f"{corpus}:cut"],
    }
    # Against the second run, fixing "enum" is a new pass and "new" still fails: exit 0.
    enum["expect"] = "model_error"
    corpus.write_text("\n".join([*lines[:2], json.dumps(enum), lines[5], json.dumps(new)]) + "\n")
    third = tmp_path / "third.json"
    args = ["replay", str(corpus), "--tools", TOOLS, "--baseline", str(second)]
    assert main([*args, "--json", str(third)]) == 0
    assert read_report(third)["baseline"] == {
        "newly_failing": [],
        "newly_passing": [f"{corpus}:enum"],
        "still_failing": [f"{corpus}:new"],
        "missing": [],
    }


def test_baseline_must_be_a_report(corpus: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"schema_version": 0}', encoding="utf-8")
    assert main(["replay", str(corpus), "--tools", TOOLS, "--baseline", str(bogus)]) == 2
    bogus.write_text("nope", encoding="utf-8")
    assert main(["replay", str(corpus), "--tools", TOOLS, "--baseline", str(bogus)]) == 2


def test_replay_through_python_dash_m(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = run_module("replay", str(corpus), "--tools", TOOLS, "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert read_report(out)["totals"]["cases"] == 4
    failing = write_jsonl(tmp_path / "f.jsonl", [call("x", "lookup_order", "{", "ok")])
    assert run_module("replay", str(failing), "--tools", TOOLS).returncode == 1
    assert run_module("replay", str(tmp_path / "none.jsonl")).returncode == 2


def test_schema_change_is_flagged(tmp_path: Path) -> None:
    record = call("old", "lookup_order", '{"order_id": "1"}', "model_error")
    record["schema_hash"] = "0" * 64
    path = write_jsonl(tmp_path / "old.jsonl", [record])
    (case,) = replay(load_corpus([path]), demo_toolset()).cases
    assert case.schema_changed == ("lookup_order",)


def test_bundled_keys_are_machine_independent() -> None:
    assert all(e.key.startswith("samples/") for e in load_bundled())


@pytest.mark.parametrize(
    "line",
    [
        {"index": [1], "arguments": "{}"},
        {"index": 0, "name": 5},
        {"end": [1]},
        {"end": 10**23},
        {"index": 10**23, "arguments": "{}"},
        {"stop": "\ud800"},
    ],
)
def test_bad_fragments_line_is_a_usage_error_not_a_traceback(
    tmp_path: Path, line: dict[str, Any]
) -> None:
    path = write_jsonl(tmp_path / "f.jsonl", [stream("s", format="fragments"), line])
    with pytest.raises(CorpusError, match="chunk 0 cannot be replayed"):
        replay(load_corpus([path]))
    done = run_module("replay", str(path))
    assert done.returncode == 2
    assert b"toolwire: error: " in done.stderr and b"Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("form", "code"),
    [("stop", "filtered"), ("lost", "lost_event"), ("mismatch", "arguments_mismatch")],
)
def test_a_call_ended_for_a_reason_with_a_lone_surrogate_replays_it_as_text(
    tmp_path: Path, form: str, code: str
) -> None:
    record = call("c", "lookup_order", '{"order_id": "ORD-1"}') | {"end": {form: "\ud800"}}
    path = write_jsonl(tmp_path / "c.jsonl", [record])
    (entry,) = load_corpus([path])
    assert entry.end == {form: "\\ud800"}
    (result,) = replay_entry(entry).calls
    assert result.code == code
    done = run_module("replay", str(path))
    assert done.returncode == 1 and b"Traceback" not in done.stderr


@pytest.mark.parametrize("end", [{"refused": []}, {"refused": "max_depth"}, {"cut": 1}, []])
def test_a_call_end_of_no_known_form_is_a_corpus_error(tmp_path: Path, end: object) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [call("c", "t", "{") | {"end": end}])
    with pytest.raises(CorpusError, match=r"c\.jsonl:1: 'end' must be"):
        load_corpus([path])


def test_lone_surrogates_in_a_corpus_replay_as_invalid_utf8(tmp_path: Path) -> None:
    # JSON may escape a lone surrogate; it stands for bytes that are not UTF-8, and replays
    # like them (the same error every time), never as an encoding crash.
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"toolwire": "call", "id": "a\\ud800", "tool": "lookup_order",'
        ' "arguments": "{\\"order_id\\": \\"ORD-\\ud800\\"}"}\n'
        '{"toolwire": "stream", "id": "b", "body": "data: {\\"x\\": \\"\\udcff\\"}\\n\\n"}\n',
        encoding="utf-8",
    )
    entries = load_corpus([path])
    assert entries[1].body == b'data: {"x": "\xff"}\n\n'
    report = replay(entries)
    assert [(c.state, c.code) for c in report.cases[0].calls] == [("model_error", "invalid_utf8")]
    again = replay(entries)
    assert [c.to_json() for c in report.calls] == [c.to_json() for c in again.calls]
    done = run_module("inspect", str(path))
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr and b"invalid_utf8" in done.stdout


_CUT_OFF = {
    "anthropic": [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "x",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "delete_all", "input": {}},
        },
    ],
    "openai-chat": [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": None,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "delete_all", "arguments": ""},
                            }
                        ]
                    },
                }
            ],
        }
    ],
}


@pytest.mark.parametrize("fmt", sorted(_CUT_OFF))
def test_a_recorded_stream_without_a_finish_reason_replays_truncated(
    tmp_path: Path, fmt: str
) -> None:
    # Live, a call whose arguments never began in a stream that never finished is cut off;
    # read with its recorded format, the replay must not make it `{}` and runnable.
    head = {"toolwire": "stream", "schema_version": 1, "id": "cut", "format": fmt}
    lines = [head, *_CUT_OFF[fmt]]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    live = Assembler()
    for chunk in _CUT_OFF[fmt]:
        live.feed_chunk(chunk)
    assert [(c.name, c.error and c.error.kind) for c in live.finish()] == [
        ("delete_all", "truncated")
    ]
    report = replay(load_corpus([path]))
    assert [(c.tool, c.state, c.code) for case in report.cases for c in case.calls] == [
        ("delete_all", "model_error", "truncated")
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (".tools:toolset", "wants an absolute module name"),
        ("raising_tools_mod:toolset", "it raised RuntimeError: config missing"),
        ("broken_syntax_mod:toolset", "it raised SyntaxError"),
    ],
)
def test_tools_whose_module_cannot_be_imported_is_a_usage_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    spec: str,
    message: str,
) -> None:
    (tmp_path / "raising_tools_mod.py").write_text(
        "raise RuntimeError('config missing')\n", encoding="utf-8"
    )
    (tmp_path / "broken_syntax_mod.py").write_text("def (:\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    corpus = write_jsonl(tmp_path / "c.jsonl", [call("c", "a", "{}")])
    assert main(["replay", str(corpus), "--tools", spec]) == 2
    err = capsys.readouterr().err
    assert "toolwire: error: cannot import " in err and message in err


@pytest.mark.parametrize("spec", ["bad:thing", "toolwire.demo_tools:no_such_toolset"])
def test_a_bad_tools_spec_is_an_error_with_nothing_printed_before_it(
    spec: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "--tools", spec]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("toolwire: error:")


def test_replay_given_a_path_or_what_is_no_entry_says_what_to_pass(tmp_path: Path) -> None:
    # `replay("corpus.jsonl")` read each character as an entry: AttributeError
    # ('str' object has no attribute 'limits').
    with pytest.raises(TypeError, match=r"not a path: replay\(load_corpus\(path\)\)"):
        replay(str(tmp_path / "corpus.jsonl"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"entries\[0\] must be an Entry"):
        replay([{"toolwire": "call"}])  # type: ignore[list-item]


def test_compare_given_what_is_no_report_says_so() -> None:
    report = replay(load_bundled()[:1])
    # A Report as the baseline raised AttributeError ('Report' object has no attribute 'get').
    with pytest.raises(CorpusError, match=r"as parsed JSON \(a dict\), not Report \(pass its"):
        compare(report, report)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="report must be the Report of replay"):
        compare(report.to_json(), report.to_json())  # type: ignore[arg-type]
    assert not compare(report, report.to_json()).newly_failing
