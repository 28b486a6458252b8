"""`toolwire inspect`: a recorded stream call by call, with where each error became certain."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.cli import main, snippet

from .conftest import chat_call, run_module, write_jsonl


def test_snippet_puts_the_caret_under_the_offset() -> None:
    raw = b'{"title": "App\\Http"}'
    line, caret = snippet(raw, 15)
    assert line == raw.decode()
    assert caret.index("^") == 15
    assert line[15] == "H"


def test_snippet_cuts_long_text_and_counts_wide_characters() -> None:
    raw = ('{"t": "' + "東" * 50 + '\\x"}').encode()
    offset = raw.index(b"\\x") + 1
    line, caret = snippet(raw, offset, context=4)
    assert line.startswith("…") and line.endswith("…") is False
    # Four wide characters before the caret (two cells each) plus the ellipsis and backslash.
    assert line == '…東東東\\x"}'
    assert caret == " " * (1 + 6 + 1) + "^"


def test_snippet_escapes_control_characters() -> None:
    line, caret = snippet(b'{"a":\n"b', 6)
    assert line == '{"a":\\n"b'
    assert caret.index("^") == len('{"a":\\n')


def test_inspect_shows_offset_path_and_caret(
    samples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "inspect",
            str(samples / "openai_chat.jsonl"),
            "--tools",
            "toolwire.demo_tools:demo_toolset",
            "--entry",
            "invalid-escape",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "invalid-escape" in out and "model_error/invalid_escape" in out
    assert 'certain at byte 26, path "/title", reported after chunk 0' in out
    lines = out.splitlines()
    caret_at = next(i for i, line in enumerate(lines) if line.strip() == "^")
    text, caret = lines[caret_at - 1], lines[caret_at]
    assert text[caret.index("^")] == "U"  # the byte after the backslash decides
    assert "concatenated-objects" not in out


def test_inspect_lists_every_entry_and_field_errors(
    samples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["inspect", str(samples / "anthropic.jsonl"), "--tools", "toolwire.demo_tools:demo_toolset"]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "parallel-tool-use" in out and "cut-by-max-tokens" in out
    assert "/amount decimal: expected at most 2 decimal places, got 12.505" in out
    assert 'text: "Let me take care of that."' in out


def test_inspect_exit_code_follows_expectations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_jsonl(tmp_path / "cut.jsonl", [chat_call(0, '{"a": 1', id="c1", name="x")])
    assert main(["inspect", str(corpus)]) == 1
    out = capsys.readouterr().out
    assert "model_error/truncated" in out and "certain at byte 7" in out


def test_inspect_errors(tmp_path: Path, samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "nope.jsonl")]) == 2
    assert main(["inspect", str(samples / "anthropic.jsonl"), "--entry", "nope"]) == 2
    assert "no entry 'nope'" in capsys.readouterr().err


def test_inspect_through_python_dash_m(samples: Path) -> None:
    done = run_module(
        "inspect", str(samples / "openai_chat.sse"), "--tools", "toolwire.demo_tools:demo_toolset"
    )
    assert done.returncode == 0, done.stderr
    assert b"parallel-interleaved" in done.stdout
    assert b"coerced /priority (enum_case)" in done.stdout


def test_inspect_shows_text_as_it_is_and_finds_an_id_with_colons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = {
        "toolwire": "call",
        "id": "bug:42",
        "tool": "lookup_order",
        "arguments": '{"order_id": "ORD-1:fire:2"}',
    }
    path = write_jsonl(tmp_path / "c.jsonl", [record])
    tools = "toolwire.demo_tools:demo_toolset"
    # Found (not a usage error); the call fails its default expectation.
    assert main(["inspect", str(path), "--tools", tools, "--entry", "bug:42"]) == 1
    out = capsys.readouterr().out
    # `:fire:` is text, not an emoji code, and the caret stays under the byte that decided.
    assert ":fire:" in out and "bug:42" in out
    lines = out.splitlines()
    caret_at = next(i for i, line in enumerate(lines) if line.strip() == "^")
    text, at = lines[caret_at - 1], lines[caret_at].index("^")
    assert text[at - 1 : at + 1] == '2"'  # the closing quote decides the pattern


@pytest.mark.parametrize(
    "line",
    [
        '{"toolwire":"call","tool":"t","arguments":"{}","note":' + "1" * 5000 + "}",
        "[" * 100_000 + "]" * 100_000,
        '{"toolwire":"call","tool":"t","arguments":"{}","schema_version":true}',
    ],
)
def test_an_unreadable_corpus_line_is_a_usage_error(
    tmp_path: Path, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    assert main(["inspect", str(path)]) == 2
    assert "toolwire: error:" in capsys.readouterr().err


_SECRET_TOOLS = '''
from pydantic import BaseModel, Field, SecretStr

from toolwire import Toolset


class Login(BaseModel):
    """Log in."""

    user: str = Field(pattern="^u_[a-z]+$")
    password: SecretStr


tools = Toolset([Login])
'''


def test_inspect_never_prints_a_secret_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "secret_tools_mod.py").write_text(_SECRET_TOOLS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    records = [
        {"toolwire": "call", "id": "bad", "tool": "login",
         "arguments": '{"user": "bad user", "password": "hunter2SECRET"}'},
        {"toolwire": "call", "id": "ok", "tool": "login",
         "arguments": '{"user": "u_ok", "password": "hunter2SECRET"}'},
        # A misspelt name (or none) may be a call of a tool with secrets: a hand-written
        # corpus is not redacted, and these were printed as they were.
        {"toolwire": "call", "id": "typo", "tool": "log_in",
         "arguments": '{"password": "hunter2SECRET"}'},
        {"toolwire": "call", "id": "nameless", "arguments": '{"password": "hunter2SECRET"}'},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "c.jsonl", records)
    main(["inspect", str(path), "--tools", "secret_tools_mod:tools"])
    captured = capsys.readouterr()
    out = captured.out
    assert "hunter2" not in out + captured.err, captured.err
    assert '"user": "bad user"' in out and "[redacted]" in out


def test_control_characters_from_a_stream_never_reach_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        {"toolwire": "call", "id": "e\x1b[2J", "tool": "look\x1b[2Jup", "arguments": "{}",
         "note": "clear \x9b2J", "call_id": "c\x1b]0;x\x07"},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "c.jsonl", records)
    main(["inspect", str(path)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out
    assert "look\\u001b[2Jup" in out


def test_tools_naming_a_model_class_or_a_failing_factory_is_a_clear_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolwire.replay import load_toolset

    source = _SECRET_TOOLS + "\n\ndef broken():\n    raise RuntimeError('no tools today')\n"
    (tmp_path / "class_tools_mod.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="is a class, not a Toolset"):
        load_toolset("class_tools_mod:Login")
    with pytest.raises(ValueError, match="raised RuntimeError when called"):
        load_toolset("class_tools_mod:broken")
    assert load_toolset("class_tools_mod:tools").names() == ["login"]


def test_a_note_holding_a_lone_surrogate_is_printed_escaped(tmp_path: Path) -> None:
    # Valid JSON, yet no terminal can be written a lone surrogate: shown as its escape.
    path = tmp_path / "n.jsonl"
    path.write_text(
        '{"toolwire": "call", "id": "n", "tool": "a", "arguments": "{}", '
        '"note": "bad \\ud800 note", "expect": {"state": "ok", "tool": "\\udc80"}}\n',
        encoding="utf-8",
    )
    done = run_module("inspect", str(path))
    assert b"Traceback" not in done.stderr
    assert b"bad \\ud800 note" in done.stdout
    assert b"expected tool '\\\\udc80'" in done.stdout


@pytest.mark.parametrize("name", ["empty.jsonl", "blank.jsonl", "dir"])
def test_inspect_of_input_without_entries_is_an_error_as_for_replay(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Nothing shown and exit 0 would read as "every entry as expected": a wrong path in CI.
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "blank.jsonl").write_text("\n \n\n", encoding="utf-8")
    (tmp_path / "dir").mkdir()
    target = str(tmp_path / name)
    for command in ("inspect", "replay"):
        assert main([command, target]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert (
            captured.err.strip()
            == f"toolwire: error: no corpus entries in {target} (*.jsonl, *.sse)"
        )


def test_inspect_reads_a_directory_as_replay_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "deep").mkdir(parents=True)
    write_jsonl(corpus / "deep" / "a.jsonl", [chat_call(0, "{}", id="c1", name="x")])
    (corpus / "notes.txt").write_text("not a corpus file\n", encoding="utf-8")
    # A link to a directory is not entered: it may lead out of the tree, or round it forever.
    outside = tmp_path / "outside"
    outside.mkdir()
    write_jsonl(outside / "b.jsonl", [chat_call(0, '{"a": 1', id="c2", name="y")])
    (corpus / "link").symlink_to(outside, target_is_directory=True)
    (corpus / "loop").symlink_to(corpus, target_is_directory=True)
    assert main(["inspect", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "a.jsonl:a (1 chunks, 1 calls): as expected" in out
    assert "b.jsonl" not in out and out.count("a.jsonl:a") == 1
