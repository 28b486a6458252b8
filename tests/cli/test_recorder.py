"""The recorder: failed calls and streams into a corpus, redaction, schema hashes, rotation."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field, SecretStr

from toolwire import Toolset
from toolwire.assembler import Assembler
from toolwire.cli import main
from toolwire.demo_tools import demo_toolset
from toolwire.events import CallCompleted, CallStarted
from toolwire.recorder import Recorder, redact_arguments, schema_hash, secret_pointers
from toolwire.replay import CorpusError, load_corpus, replay
from toolwire.stream import assemble

from .conftest import chat_call, run_module

TOOLS = "toolwire.demo_tools:demo_toolset"


class Login(BaseModel):
    """Log in."""

    user: str
    password: SecretStr
    token: str | None = Field(default=None, json_schema_extra={"x-secret": True})


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def mixed_stream() -> list[dict[str, Any]]:
    return [
        chat_call(0, '{"order_id": "ORD-1"}', id="ok1", name="lookup_order"),
        chat_call(1, '{"title": "x", "priority": "urgent"}', id="bad1", name="create_ticket"),
        chat_call(2, '{"order_id": "ORD-', id="cut1", name="lookup_order"),
    ]


def test_schema_hash_is_sha256_of_canonical_schema() -> None:
    tools = demo_toolset()
    canonical = json.dumps(
        tools.schema("lookup_order"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    assert schema_hash(tools, "lookup_order") == hashlib.sha256(canonical.encode()).hexdigest()
    assert schema_hash(tools, "lookup_order") != schema_hash(tools, "create_ticket")


def test_assemble_hook_records_failed_calls(tmp_path: Path) -> None:
    tools = demo_toolset()
    recorder = Recorder(tmp_path / "corpus.jsonl", toolset=tools)
    with recorder.assemble(mixed_stream()) as stream:
        events = list(stream)
    assert sum(isinstance(e, CallCompleted) for e in events) == 3
    written = records(tmp_path / "corpus.jsonl")
    assert [r["call_id"] for r in written] == ["bad1", "cut1"]
    first = written[0]
    assert first["toolwire"] == "call" and first["schema_version"] == 1
    assert first["schema_hash"] == schema_hash(tools, "create_ticket")
    assert first["observed"]["state"] == "model_error"
    assert first["observed"]["code"] == "enum"
    assert first["format"] == "openai-chat"
    assert "expect" not in first
    assert written[1]["observed"]["code"] == "truncated"
    # Recorded failures replay as failures (no expect), with the same codes.
    report = replay(load_corpus([tmp_path / "corpus.jsonl"]), tools)
    assert [c.calls[0].code for c in report.cases] == ["enum", "truncated"]
    assert not report.ok


def test_whole_streams_round_trip(tmp_path: Path) -> None:
    tools = demo_toolset()
    recorder = Recorder(tmp_path / "s.jsonl", toolset=tools, streams="failed")
    with recorder.assemble(mixed_stream()) as stream:
        list(stream)
    with recorder.assemble(mixed_stream()[:1]) as stream:
        list(stream)  # no failure: not recorded under "failed"
    (record,) = records(tmp_path / "s.jsonl")
    assert record["toolwire"] == "stream" and len(record["chunks"]) == 3
    assert record["observed"][1] == {
        "tool": "create_ticket",
        "state": "model_error",
        "code": "enum",
    }
    (case,) = replay(load_corpus([tmp_path / "s.jsonl"]), tools).cases
    assert [(c.state, c.code) for c in case.calls] == [
        ("ok", None),
        ("model_error", "enum"),
        ("model_error", "truncated"),
    ]


def test_closing_early_still_records(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "c.jsonl", toolset=demo_toolset(), streams="all")
    stream = recorder.assemble(iter(mixed_stream()))
    next(stream)
    stream.close()
    (record,) = records(tmp_path / "c.jsonl")
    assert record["toolwire"] == "stream"


def test_observe_and_executor_hooks(tmp_path: Path) -> None:
    tools = demo_toolset()
    recorder = Recorder(tmp_path / "o.jsonl", toolset=tools)
    for event in assemble(mixed_stream(), tools):
        recorder.observe(event)
    assert len(records(tmp_path / "o.jsonl")) == 2
    asm = Assembler(tools=tools)
    asm.feed(0, id="z", name="refund_order", arguments='{"order_id": "ORD-1", "amount": 1.234}')
    (call,) = asm.finish()
    outcome = tools.validate(call)
    assert recorder(call, outcome) is True
    assert recorder(call, outcome) is False  # deduplicated
    assert records(tmp_path / "o.jsonl")[-1]["observed"]["code"] == "decimal"


def test_redaction_of_secret_fields(tmp_path: Path) -> None:
    tools = Toolset([Login])
    assert secret_pointers(tools.schema("login")) == ["/password", "/token"]
    recorder = Recorder(tmp_path / "r.jsonl", toolset=tools, streams="all")
    chunks = [
        chat_call(0, '{"user": "ann", "password": "hunter2", ', id="l1", name="login"),
        chat_call(0, '"token": "tok-SECRET", "extra": 1}'),
        chat_call(1, '{"user": "bob", "password": "pa', id="l2", name="login"),
    ]
    with recorder.assemble(chunks) as stream:
        list(stream)
    text = (tmp_path / "r.jsonl").read_text(encoding="utf-8")
    assert "hunter2" not in text and "SECRET" not in text and '"password\\": \\"pa' not in text
    written = records(tmp_path / "r.jsonl")
    # A stream with secret fields is never stored whole: its failed calls are, redacted.
    assert [r["toolwire"] for r in written] == ["call", "call"]
    # A key the schema does not place, next to secrets, is hidden as validation hides it
    # wherever it shows the arguments around it (a model validator's error, say).
    assert written[0]["arguments"] == (
        '{"user": "ann", "password": "[redacted]", "token": "[redacted]", "extra": "[redacted]"}'
    )
    assert written[1]["arguments"] == '{"user": "bob", "password": "[redacted]'
    report = replay(load_corpus([tmp_path / "r.jsonl"]), tools)
    assert [c.calls[0].code for c in report.cases] == ["unknown_field", "truncated"]


@pytest.mark.parametrize("streams", ["off", "failed", "all"])
def test_the_stream_toolset_decides_redaction(tmp_path: Path, streams: str) -> None:
    # The recorder was built without a toolset; the stream is validated with one that marks
    # secrets. Those schemas must decide what reaches the disk, whole stream or calls.
    tools = Toolset([Login])
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path, streams=streams)  # type: ignore[arg-type]
    chunks = [
        chat_call(0, '{"user": "ann", "password": "hunter2", ', id="l1", name="login"),
        chat_call(0, '"token": "tok-SECRET", "extra": 1}'),
    ]
    with recorder.assemble(chunks, tools) as stream:
        list(stream)
    text = path.read_text(encoding="utf-8")
    assert "hunter2" not in text and "SECRET" not in text
    (written,) = records(path)
    assert written["toolwire"] == "call"
    assert written["schema_hash"] == schema_hash(tools, "login")


def test_redaction_hook_and_malformed_text() -> None:
    schema = Toolset([Login]).schema("login")
    upper = redact_arguments('{"user": "ann"}', schema, lambda ptr, text: text.upper())
    assert upper == '{"user": "ANN"}'
    assert redact_arguments('{"password": 123, "user": "x"}', schema) == (
        '{"password": "[redacted]", "user": "x"}'
    )
    assert redact_arguments('{"user": "a\\q", "password": "p\\q"}', schema) == (
        '{"user": "a\\q", "password": "[redacted]"}'
    )
    # Text whose structure no walk can read is withheld for a tool that declares secrets.
    # (`n` may begin `null`: the text is kept up to the byte that broke it.)
    assert redact_arguments("not json at all", schema) == "n[redacted]"
    assert redact_arguments("not json at all", None, lambda p, t: t) == "not json at all"
    assert redact_arguments('{"a": 1}', None) == '{"a": 1}'


def test_a_misspelt_secret_field_is_redacted_as_validation_reads_it() -> None:
    # Validation takes `Password` for `password` ("did you mean password?") and hides it.
    schema = Toolset([Login]).schema("login")
    for key in ("Password", "pasword", "PASSWORD"):
        text = json.dumps({"user": "u_a", key: "hunter2"})
        assert "hunter2" not in redact_arguments(text, schema), key
    # Any other unknown key next to secrets is hidden too: validation shows it redacted
    # wherever it shows the object around it. A declared field stays.
    assert redact_arguments('{"user": "u_a", "note": "hi"}', schema) == (
        '{"user": "u_a", "note": "[redacted]"}'
    )


def test_rotation(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    recorder = Recorder(path, max_bytes=400, backups=2, dedupe=False)
    for n in range(12):
        recorder.write({"toolwire": "call", "tool": "t", "arguments": "x" * 100, "n": n})
    assert recorder.written == 12
    assert [p.name for p in recorder.files()] == [
        "corpus.jsonl",
        "corpus.1.jsonl",
        "corpus.2.jsonl",
    ]
    assert not (tmp_path / "corpus.3.jsonl").exists()
    for file in recorder.files():
        assert file.stat().st_size <= 400
    newest = [r["n"] for r in records(path)]
    assert newest[-1] == 11
    older = [r["n"] for r in records(tmp_path / "corpus.1.jsonl")]
    assert older[-1] == newest[0] - 1


def test_recorder_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="streams"):
        Recorder(tmp_path / "x.jsonl", streams="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_bytes"):
        Recorder(tmp_path / "x.jsonl", max_bytes=0)


def sse_body() -> bytes:
    chunks = mixed_stream()
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def test_record_command_from_stdin(tmp_path: Path) -> None:
    out = tmp_path / "live.jsonl"
    done = run_module("record", str(out), "--tools", TOOLS, stdin=sse_body())
    assert done.returncode == 0, done.stderr
    assert b"3 calls, 2 failed; 1 records appended" in done.stderr
    (record,) = records(out)
    assert record["toolwire"] == "stream" and record["body"].startswith("data: ")
    assert set(record["schema_hashes"]) == {"lookup_order", "create_ticket"}
    report = replay(load_corpus([out]), demo_toolset())
    assert [c.code for c in report.cases[0].calls] == [None, "enum", "truncated"]
    # Calls only, and --tee passes the body through.
    done = run_module("record", str(out), "--streams", "off", "--tee", stdin=sse_body())
    assert done.returncode == 0, done.stderr
    assert done.stdout == sse_body()
    assert [r["toolwire"] for r in records(out)] == ["stream", "call"]  # no toolset: JSON only


def test_record_command_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    class Stdin:
        buffer = io.BytesIO(sse_body())

    monkeypatch.setattr(sys, "stdin", Stdin())
    out = tmp_path / "p.jsonl"
    assert main(["record", str(out), "--tools", TOOLS, "--streams", "failed"]) == 0
    assert "1 records appended" in capsys.readouterr().err
    assert main(["record", str(out), "--max-bytes", "0"]) == 2


def test_recorded_body_that_is_not_utf8_replays_byte_for_byte(tmp_path: Path) -> None:
    # A capture with a byte that is not UTF-8 inside an event: replacing it with U+FFFD would
    # turn the malformed event into a valid one, and the replay into something never seen.
    body = sse_body().replace(b"ORD-1", b"ORD-\xff1", 1)
    assert body != sse_body()
    out = tmp_path / "c.jsonl"
    Recorder(out, streams="all").record_stream([], body=body)
    (entry,) = load_corpus([out])
    assert entry.body == body
    direct = Assembler()
    direct.feed_sse(body)
    expected = [(c.name, c.arguments) for c in direct.finish()]
    (case,) = replay([entry]).cases
    assert [(c.tool or None, c.arguments) for c in case.calls] == expected


def test_a_record_holding_line_separators_loads_back(tmp_path: Path) -> None:
    # U+2028, U+2029 and U+0085 are text inside a JSON string, not line ends.
    path = tmp_path / "c.jsonl"
    recorder = Recorder(path)
    for text in ("line\u2028sep", "para\u2029sep", "nel\u0085x"):
        asm = Assembler()
        asm.feed(0, id="c", name="t", arguments='{"title": "' + text + '"')
        (call,) = asm.finish()
        recorder.record_call(call)
    entries = load_corpus([path])
    assert len(entries) == 3


@pytest.mark.parametrize(
    "arguments", ['{"note": "ssn 123-45-6789', '{"note": "ssn 123-45-6789 \\q"}']
)
def test_the_hook_reads_a_cut_or_badly_escaped_string_too(tmp_path: Path, arguments: str) -> None:
    def hook(pointer: str, text: str) -> str:
        return text.replace("123-45-6789", "[ssn]")

    redacted = redact_arguments(arguments, None, hook)
    assert "123-45-6789" not in redacted and "[ssn]" in redacted
    # The text stays as broken as it was, so a replay finds the same error.
    asm = Assembler()
    asm.feed(0, id="c", name="t", arguments=redacted)
    (again,) = asm.finish()
    asm = Assembler()
    asm.feed(0, id="c", name="t", arguments=arguments)
    (first,) = asm.finish()
    assert again.error is not None and first.error is not None
    assert again.error.kind == first.error.kind


def _write_many(args: tuple[str, int]) -> int:
    path, worker = args
    recorder = Recorder(path, max_bytes=5_000, backups=50)
    lost = 0
    for i in range(200):
        try:
            recorder.write(
                {"toolwire": "call", "tool": "t", "arguments": "{}", "id": f"{worker}-{i}"}
            )
        except OSError:
            lost += 1
    return lost


def test_processes_writing_one_corpus_rotate_it_without_losing_records(tmp_path: Path) -> None:
    import multiprocessing

    path = str(tmp_path / "corpus.jsonl")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        lost = pool.map(_write_many, [(path, w) for w in range(4)])
    assert lost == [0, 0, 0, 0]
    ids = [e.key.rsplit(":", 1)[-1] for e in load_corpus([tmp_path])]
    assert len(ids) == len(set(ids)) == 800


class _Creds(BaseModel):
    user: str
    password: SecretStr


class _Login(BaseModel):
    """Log in."""

    creds: _Creds
    region: str


@pytest.mark.parametrize(
    "arguments",
    [
        json.dumps({"creds": json.dumps({"user": "bob", "password": "hunter2-x"})}),
        json.dumps({"arguments": {"creds": {"user": "bob", "password": "hunter2-x"}}}),
        json.dumps([{"creds": {"user": "bob", "password": "hunter2-x"}}]),
        "{'creds': {'user': 'bob', 'password': 'hunter2-x'}}",
        '{"creds": {user: "bob", password: "hunter2-x"}}',
        '{"creds": {"user": "bob" "password": "hunter2-x"}}',
    ],
)
def test_a_secret_in_a_shape_validation_reads_is_never_recorded(
    tmp_path: Path, arguments: str
) -> None:
    # Shapes validation coerces (a JSON string, a wrapper key, a list around the arguments)
    # or that no walk reads reliably (Python quotes, bare keys, a missing comma).
    tools = Toolset([_Login])
    asm = Assembler(tools=tools)
    asm.feed(0, id="c", name="login", arguments=arguments)
    (call,) = asm.finish()
    path = tmp_path / "c.jsonl"
    Recorder(path, toolset=tools).record_call(call, tools.validate(call))
    written = path.read_text(encoding="utf-8")
    assert "hunter2" not in written and "[redacted]" in written
    # The recorded call still fails the way the live one did.
    (entry,) = load_corpus([path])
    assert entry.kind == "call"


def _stopped() -> Assembler:
    asm = Assembler()
    asm.feed(0, id="c1", name="t", arguments='{"city": "Paris"}')
    asm.stop("content_filter")
    return asm


def _cut_by_the_limit() -> Assembler:
    asm = Assembler()
    asm.feed(0, id="c2", name="t", arguments="")
    asm.limit_reached()
    return asm


def _invalid_bytes() -> Assembler:
    asm = Assembler()
    asm.feed(0, id="c4", name="t", arguments=b'{"a": "x\xffy"}')
    return asm


def _too_deep_for_its_limit() -> Assembler:
    # Valid JSON with the default limits: only the recorded limit makes it fail.
    asm = Assembler(max_depth=3)
    asm.feed(0, id="c5", name="t", arguments='{"a": {"b": {"c": [1]}}}')
    return asm


@pytest.mark.parametrize(
    "make", [_stopped, _cut_by_the_limit, _invalid_bytes, _too_deep_for_its_limit]
)
def test_a_recorded_call_replays_with_the_verdict_it_had(tmp_path: Path, make: Any) -> None:
    (call,) = make().finish()
    path = tmp_path / "c.jsonl"
    Recorder(path).record_call(call)
    observed = json.loads(path.read_text(encoding="utf-8"))["observed"]
    (case,) = replay(load_corpus([path])).cases
    (result,) = case.calls
    assert (result.state, result.code) == (observed["state"], observed["code"])
    # Without an `expect`, a recorded failure is a case still to fix.
    assert not case.passed


def test_a_recorded_stream_with_an_emoji_split_between_chunks_replays_its_text(
    tmp_path: Path,
) -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "hi \ud83d"}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {"content": "\ude00"}, "finish_reason": "stop"}]},
    ]
    path = tmp_path / "s.jsonl"
    recorder = Recorder(path, streams="all")
    with recorder.assemble(iter(chunks)) as stream:
        for _ in stream:
            pass
    (case,) = replay(load_corpus([path])).cases
    assert case.text == stream.text == "hi \U0001f600"
    assert main(["inspect", str(path)]) == 0


def test_a_baseline_follows_entries_that_rotation_moved(tmp_path: Path) -> None:
    from toolwire.replay import compare

    def stream(order_id: str) -> list[dict[str, Any]]:
        return [
            chat_call(0, json.dumps({"order_id": order_id}), id="c1", name="lookup_order"),
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]

    tools = demo_toolset()
    path = tmp_path / "corpus" / "c.jsonl"
    recorder = Recorder(path, toolset=tools, streams="all", max_bytes=600)
    for chunks in (stream("1042"), stream("ORD-7")):
        with recorder.assemble(iter(chunks), tools) as live:
            for _ in live:
                pass
        if len(recorder.files()) == 1:
            before = replay(load_corpus([path.parent]), tools).to_json()
    assert len(recorder.files()) == 2  # the first stream moved to c.1.jsonl
    diff = compare(replay(load_corpus([path.parent]), tools), before)
    assert diff.newly_failing == () and diff.newly_passing == () and len(diff.still_failing) == 1


class _Keys(BaseModel):
    """Store API keys."""

    keys: list[SecretStr]
    region: str


def test_a_stream_whose_tool_holds_secret_items_is_recorded_call_by_call(tmp_path: Path) -> None:
    tools = Toolset([_Keys])
    chunks = [
        chat_call(0, '{"keys": ["sk-LIVE-SEKRIT"]}', id="c1", name=tools.names()[0]),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    path = tmp_path / "c.jsonl"
    with Recorder(path, toolset=tools, streams="all").assemble(iter(chunks), tools) as stream:
        for _ in stream:
            pass
    assert "SEKRIT" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "arguments",
    [
        '{"creds": "\\n{\\"user\\": \\"bob\\", \\"password\\": \\"SEKRIT',
        '{"creds": "\\u007b\\"user\\": \\"bob\\", \\"password\\": \\"SEKRIT',
        '{"creds": "{\\"user\\": \\"bob\\\'s\\", \\"password\\": \\"SEKRIT\\"}", "region": "eu"}',
    ],
)
def test_an_object_in_a_string_is_hidden_however_it_is_escaped(arguments: str) -> None:
    tools = Toolset([_Login])
    schema = tools.schema(tools.names()[0])
    assert "SEKRIT" not in redact_arguments(arguments, schema)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc80"])
def test_a_hooked_string_with_a_surrogate_escape_records_and_replays_alike(
    tmp_path: Path, escape: str
) -> None:
    def hook(pointer: str, text: str) -> str:
        return text.replace("123-45-6789", "[ssn]\n")

    asm = Assembler()
    asm.feed(0, id="c", name="t", arguments='{"note": "ssn 123-45-6789 ' + escape + '"}')
    (call,) = asm.finish()
    path = tmp_path / "c.jsonl"
    Recorder(path, redact=hook).record_call(call)
    (case,) = replay(load_corpus([path])).cases
    assert call.error is not None and case.calls[0].code == call.error.kind


def test_a_recorded_stream_replays_with_the_limits_it_was_read_with(tmp_path: Path) -> None:
    chunks = [
        chat_call(0, '{"a": 1, "a": 2}', id="d1", name="t"),
        chat_call(1, '{"b": {"c": 1}}', id="d2", name="t"),
    ]
    asm = Assembler(duplicate_keys="last_wins", max_depth=1)
    for chunk in chunks:
        asm.feed_chunk(chunk)
    calls = asm.finish()
    # The repeated key is fine under last_wins; the second call is one level too deep.
    assert [c.ok for c in calls] == [True, False]
    assert calls[0].limits == {"max_depth": 1, "duplicate_keys": "last_wins"}
    path = tmp_path / "s.jsonl"
    Recorder(path, streams="failed").record_stream(calls, chunks=chunks, format="openai-chat")
    (record,) = records(path)
    assert record["limits"] == {"max_depth": 1, "duplicate_keys": "last_wins"}
    (case,) = replay(load_corpus([path])).cases
    assert [(r.state, r.code) for r in case.calls] == [("ok", None), ("model_error", "too_deep")]


def test_default_limits_are_not_recorded(tmp_path: Path) -> None:
    asm = Assembler(max_depth=64, duplicate_keys="error")
    asm.feed(0, id="c", name="t", arguments='{"a": ')
    (call,) = asm.finish()
    assert call.limits == {}
    path = tmp_path / "c.jsonl"
    Recorder(path).record_call(call)
    assert "limits" not in records(path)[0]


@pytest.mark.parametrize(
    "limits",
    [
        [3],
        {"max_depth": "3"},
        {"max_depth": True},
        {"depth": 3},
        {"duplicate_keys": "first_wins"},
        {"max_depth": 100_000},  # the right shape, out of the assembler's range
    ],
)
def test_a_record_whose_limits_cannot_be_used_is_refused(tmp_path: Path, limits: object) -> None:
    path = tmp_path / "c.jsonl"
    record = {"toolwire": "call", "tool": "t", "arguments": "{}", "limits": limits}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="limits"):
        replay(load_corpus([path]))


def _three_calls() -> list[dict[str, Any]]:
    return [
        chat_call(0, '{"x": 1}', id="r0", name="a"),
        chat_call(1, '{"y": 2}', id="r1", name="b"),
        chat_call(2, '{"z": 3}', id="r2", name="c"),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


@pytest.mark.parametrize("limits", [{"max_calls": 2}, {"max_stream_bytes": 10}])
@pytest.mark.parametrize("streams", ["all", "off"])
def test_a_response_refused_by_a_stream_limit_replays_refused(
    tmp_path: Path, limits: dict[str, int], streams: str
) -> None:
    # `ToolCall.limits` leaves the stream limits out: the refusal itself must be recorded, or
    # the replay reads with the defaults and the calls that never ran pass.
    chunks = _three_calls()
    asm = Assembler(**limits)
    for chunk in chunks:
        asm.feed_chunk(chunk)
    calls = asm.finish()
    live = [(c.name, c.error.kind if c.error else None, c.error and c.error.message) for c in calls]
    assert {kind for _, kind, _ in live} == {"too_large"}
    path = tmp_path / "c.jsonl"
    Recorder(path, streams=streams).record_stream(calls, chunks=chunks, format="openai-chat")
    assert all(r["limits"] == limits for r in records(path))
    report = replay(load_corpus([path]))
    got = [(c.tool, c.code, c.error and c.error.message) for c in report.calls]
    assert got == live
    assert not report.ok


def test_the_assemble_hook_records_the_stream_limits_it_was_given(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    recorder = Recorder(path, streams="all")
    with recorder.assemble(_three_calls(), limits={"max_calls": 2}) as stream:
        list(stream)
    assert [c.error and c.error.kind for c in stream.calls] == ["too_large", "too_large"]
    # A limit above the default refused nothing, yet the replay needs it as much.
    with recorder.assemble(_three_calls(), limits={"max_calls": 5000}) as stream:
        list(stream)
    assert [r["limits"] for r in records(path)] == [{"max_calls": 2}, {"max_calls": 5000}]
    refused, passed = replay(load_corpus([path])).cases
    assert [c.code for c in refused.calls] == ["too_large", "too_large"]
    assert passed.passed and len(passed.calls) == 3


@pytest.mark.parametrize("second", [b'"arguments":"1}"', b'"arguments":"'])
def test_a_lost_event_call_replays_lost(tmp_path: Path, second: bytes) -> None:
    # A malformed event in the middle: the call may lack a fragment, whatever its text says
    # once the stream goes on; its record must replay to the same verdict.
    head = b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c",'
    body = (
        head
        + b'"function":{"name":"f","arguments":"{\\"a\\": "}}]}}]}\n\n'
        + b"data: {not json}\n\n"
        + b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{'
        + second
        + b"}}]}}]}\n\n"
        + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    )
    live = Assembler()
    live.feed_sse(body)
    (call,) = live.finish()
    assert call.error is not None and call.error.kind == "lost_event"
    path = tmp_path / "r.jsonl"
    assert Recorder(path).record_call(call)
    (written,) = records(path)
    assert written["observed"]["code"] == "lost_event" and "lost" in written["end"]
    report = replay(load_corpus([path]))
    assert [(c.state, c.code) for case in report.cases for c in case.calls] == [
        ("model_error", "lost_event")
    ]


def test_an_arguments_mismatch_call_replays_as_one(tmp_path: Path) -> None:
    # A Responses summary that differs from the deltas: the call's text is valid JSON, so only
    # its record's `end` can make the replay fail it as the live stream did.
    item = {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f"}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"a": 2}',
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": item | {"arguments": '{"a": 1}'},
        },
        {"type": "response.completed", "response": {"status": "completed"}},
    ]
    live = Assembler()
    live.feed_sse(b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events))
    (call,) = live.finish()
    assert call.error is not None and call.error.kind == "arguments_mismatch"
    path = tmp_path / "r.jsonl"
    assert Recorder(path).record_call(call)
    (written,) = records(path)
    assert written["observed"]["code"] == "arguments_mismatch" and "mismatch" in written["end"]
    report = replay(load_corpus([path]))
    assert [(c.state, c.code) for case in report.cases for c in case.calls] == [
        ("model_error", "arguments_mismatch")
    ]


def test_record_tee_goes_on_recording_when_its_reader_leaves(tmp_path: Path) -> None:
    import subprocess
    import sys

    # A call cut off (no finish reason): recorded as a failed call.
    event = json.dumps(chat_call(0, '{"order_id": "ORD-' + "1" * 2000, id="a", name="lookup_order"))
    body = (f"data: {event}\n\n" * 400).encode()
    out = tmp_path / "t.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "record", str(out), "--tee"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(body[:10_000])
    process.stdin.flush()
    assert process.stdout.read(10)
    process.stdout.close()  # the reader downstream leaves, as `| head -c 10` does
    process.stdin.write(body[10_000:])
    process.stdin.close()
    assert process.wait(timeout=120) == 0
    assert process.stderr is not None
    with process.stderr:
        stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr
    assert out.exists() and records(out)


def test_closing_from_another_thread_records_once_what_arrived(tmp_path: Path) -> None:
    # The reader waits for a chunk while a watchdog closes the stream: the stream is recorded
    # once, when the reader ends, with the call cut off (not as an empty stream at the close).
    recorder = Recorder(tmp_path / "t.jsonl", toolset=demo_toolset(), streams="all")
    inside, more = threading.Event(), threading.Event()

    def source() -> Iterator[dict[str, Any]]:
        yield chat_call(0, '{"order_id": "ORD-', id="cut1", name="lookup_order")
        inside.set()
        more.wait(10)  # a generator cannot be closed while its reader is inside it
        yield chat_call(0, '1"}')

    stream = recorder.assemble(source())
    assert isinstance(next(stream), CallStarted)
    reader = threading.Thread(target=lambda: list(stream))
    reader.start()
    assert inside.wait(10)  # the reader is inside `next`, waiting for the source
    stream.close()
    assert not (tmp_path / "t.jsonl").exists()
    more.set()
    reader.join(10)
    assert not reader.is_alive()
    (record,) = records(tmp_path / "t.jsonl")
    assert record["toolwire"] == "stream" and len(record["chunks"]) == 1
    assert record["observed"][0]["code"] == "truncated"
    stream.close()
    assert len(records(tmp_path / "t.jsonl")) == 1


@pytest.mark.parametrize("call", [None, "c1", {"name": "f", "arguments": "{}"}])
def test_recording_what_is_no_call_says_what_to_pass(tmp_path: Path, call: Any) -> None:
    # An AttributeError ('NoneType' object has no attribute 'error') from inside.
    recorder = Recorder(tmp_path / "corpus.jsonl")
    with pytest.raises(TypeError, match=r"must be a ToolCall \(from Assembler.finish\)"):
        recorder.record_call(call)
    with pytest.raises(TypeError, match=r"must be a ToolCall \(from Assembler.finish\)"):
        recorder.call_record(call)
    with pytest.raises(TypeError, match=r"calls\[0\] must be a ToolCall"):
        recorder.record_stream([call])
    with pytest.raises(TypeError, match="calls must be a list of ToolCalls"):
        recorder.record_stream("c1")  # type: ignore[arg-type]
    assert not (tmp_path / "corpus.jsonl").exists() or not (tmp_path / "corpus.jsonl").read_text()


def test_rotation_costs_the_files_there_are_not_the_backups_allowed(tmp_path: Path) -> None:
    # Each rotation renamed every slot up to `backups`: with `backups=2**40` the first one
    # never ended.
    recorder = Recorder(tmp_path / "corpus.jsonl", max_bytes=100, backups=2**40)
    for n in range(4):
        recorder.write({"toolwire": "call", "id": str(n), "pad": "x" * 80})
    names = [p.name for p in recorder.files()]
    assert names == ["corpus.jsonl", "corpus.1.jsonl", "corpus.2.jsonl", "corpus.3.jsonl"]
    assert '"id":"3"' in (tmp_path / "corpus.jsonl").read_text().replace(" ", "")
    assert '"id":"0"' in (tmp_path / "corpus.3.jsonl").read_text().replace(" ", "")
    # The oldest is still dropped once all `backups` exist.
    kept = Recorder(tmp_path / "kept.jsonl", max_bytes=100, backups=2)
    for n in range(5):
        kept.write({"toolwire": "call", "id": str(n), "pad": "x" * 80})
    assert [p.name for p in kept.files()] == ["kept.jsonl", "kept.1.jsonl", "kept.2.jsonl"]
    assert '"id":"2"' in (tmp_path / "kept.2.jsonl").read_text().replace(" ", "")


@pytest.mark.parametrize(("setting", "value"), [("backups", 1.5), ("max_bytes", True)])
def test_a_rotation_setting_that_is_no_int_is_refused(
    tmp_path: Path, setting: str, value: object
) -> None:
    # `backups=1.5` was taken, and the first rotation raised TypeError out of `write`.
    with pytest.raises(ValueError, match=f"{setting} must be an int"):
        Recorder(tmp_path / "corpus.jsonl", **{setting: value})  # type: ignore[arg-type]
