"""A recording never holds a secret that validation would hide: whole streams, calls without a
name, and values in shapes the schema does not describe."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from toolwire import Assembler, Toolset
from toolwire.cli import main
from toolwire.recorder import Recorder, StreamPolicy, redact_arguments
from toolwire.replay import load_corpus, replay

SECRET = "hunter2"


class Login(BaseModel):
    """Log in."""

    user: str
    password: SecretStr


class Ping(BaseModel):
    """Ping a host."""

    host: str


class Deploy(BaseModel):
    """Deploy."""

    env: str
    tokens: list[SecretStr] = []
    headers: dict[str, SecretStr] = {}


TOOLSET = Toolset([Login, Ping, Deploy])
"""Read by `toolwire record --tools` below."""


def _chat(index: int, name: str, arguments: str) -> str:
    call = {"index": index, "id": f"c{index}", "type": "function"}
    call["function"] = {"name": name, "arguments": arguments}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    return f"data: {json.dumps(chunk)}\n\n"


_END = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
_LOGIN = json.dumps({"user": "bob", "password": SECRET})


def _anthropic(start_index: str) -> str:
    start = {
        "type": "content_block_start",
        "index": start_index,
        "content_block": {"type": "tool_use", "id": "t", "name": "login", "input": {}},
    }
    delta = {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": _LOGIN},
    }
    events = [
        ("content_block_start", start),
        ("content_block_delta", delta),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


# Bodies that carry a login call no listed call shows with its name.
_HIDDEN_CALLS: dict[str, tuple[dict[str, Any], str]] = {
    # The login call is refused past `max_calls`: it is not listed.
    "past_max_calls": (
        {"max_calls": 1},
        _chat(0, "ping", '{"host":"a"}') + _chat(1, "login", _LOGIN),
    ),
    # Its only event is malformed (a trailing comma): skipped, so no call exists.
    "malformed_event": ({}, _chat(0, "login", _LOGIN).replace("]}\n\n", "],}\n\n")),
    # Its start event is malformed (the index a string): the call arrives without a name.
    "nameless_call": ({}, _anthropic("one")),
}


def _read(body: bytes, **limits: Any) -> Assembler:
    asm = Assembler(tools=TOOLSET, **limits)
    asm.feed_sse(body)
    return asm


@pytest.mark.parametrize("policy", ["failed", "all"])
@pytest.mark.parametrize("case", list(_HIDDEN_CALLS))
@pytest.mark.parametrize("errors_given", [True, False])
def test_a_stream_hiding_a_secret_call_is_not_recorded_whole(
    tmp_path: Path, case: str, policy: StreamPolicy, errors_given: bool
) -> None:
    limits, text = _HIDDEN_CALLS[case]
    body = (text + _END).encode()
    asm = _read(body, **limits)
    calls = asm.finish()
    path = tmp_path / "c.jsonl"
    recorder = Recorder(path, toolset=TOOLSET, streams=policy)
    stream_errors = asm.stream_errors() if errors_given else None
    outcomes = [TOOLSET.validate(c) for c in calls]
    recorder.record_stream(
        calls, outcomes, body=body, format=asm.format, stream_errors=stream_errors
    )
    written = path.read_text(encoding="utf-8") if path.exists() else ""
    assert SECRET not in written
    assert '"toolwire":"stream"' not in written


def test_a_call_without_a_name_has_every_value_hidden(tmp_path: Path) -> None:
    # No schema says which of its values are safe: it may be a call of any tool.
    body = (_anthropic("one") + _END).encode()
    (call,) = _read(body).finish()
    assert call.name is None
    path = tmp_path / "c.jsonl"
    Recorder(path, toolset=TOOLSET).record_call(call)
    (record,) = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert record["arguments"] == '{"user": "[redacted]", "password": "[redacted]"}'


def test_a_call_of_an_unknown_tool_has_every_value_hidden() -> None:
    asm = Assembler(tools=TOOLSET)
    asm.feed(0, id="c", name="logn", arguments=_LOGIN)
    (call,) = asm.finish()
    record = Recorder("unused.jsonl", toolset=TOOLSET).call_record(call, TOOLSET.validate(call))
    assert SECRET not in record["arguments"] and "bob" not in record["arguments"]


def test_a_stream_read_in_full_of_tools_without_secrets_is_still_recorded_whole(
    tmp_path: Path,
) -> None:
    body = (_chat(0, "ping", '{"host":"a"}') + _chat(1, "ping", '{"host":') + _END).encode()
    asm = _read(body)
    calls = asm.finish()
    path = tmp_path / "c.jsonl"
    recorder = Recorder(path, toolset=TOOLSET, streams="failed")
    outcomes = [TOOLSET.validate(c) for c in calls]
    recorder.record_stream(
        calls, outcomes, body=body, format=asm.format, stream_errors=asm.stream_errors()
    )
    (record,) = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert record["toolwire"] == "stream"
    # Without the stream's errors nothing says no event was skipped: its calls are recorded.
    path.unlink()
    recorder.record_stream(calls, outcomes, body=body, format=asm.format)
    (record,) = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert record["toolwire"] == "call"


@pytest.mark.parametrize(
    "chunk",
    [
        # Chunks the SDK path skips without a stream error.
        {"choices": [{"index": 0, "delta": {"tool_calls": f"login {SECRET}"}}]},
        {"weird": {"password": SECRET}},
    ],
)
def test_a_chunk_stream_with_an_unread_chunk_is_not_recorded_whole(
    tmp_path: Path, chunk: dict[str, Any]
) -> None:
    first = json.loads(_chat(0, "ping", '{"host":')[len("data: ") :])
    path = tmp_path / "c.jsonl"
    recorder = Recorder(path, toolset=TOOLSET, streams="all")
    with recorder.assemble([first, chunk]) as stream:
        list(stream)
    written = path.read_text(encoding="utf-8")
    assert SECRET not in written and '"toolwire":"call"' in written


# The command reads with the default limits.
@pytest.mark.parametrize(
    "case", [case for case, (limits, _) in _HIDDEN_CALLS.items() if not limits]
)
def test_the_record_command_keeps_a_hidden_secret_call_out(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    case: str,
) -> None:
    _, text = _HIDDEN_CALLS[case]

    class Stdin:
        buffer = io.BytesIO((text + _END).encode())

    monkeypatch.setattr(sys, "stdin", Stdin())
    out = tmp_path / "r.jsonl"
    tools = f"{__name__}:TOOLSET"
    assert main(["record", str(out), "--tools", tools, "--streams", "all"]) == 0
    capsys.readouterr()
    assert SECRET not in (out.read_text(encoding="utf-8") if out.exists() else "")


# --------------------------------------------------------------------------------------------
# Redaction hides at least what validation hides


def _recorded(tool: str, arguments: str) -> tuple[str, list[dict[str, Any]]]:
    """The recorded arguments of a call, and its validation errors as payloads."""
    asm = Assembler(tools=TOOLSET)
    asm.feed(0, id="c", name=tool, arguments=arguments)
    (call,) = asm.finish()
    outcome = TOOLSET.validate(call)
    record = Recorder("unused.jsonl", toolset=TOOLSET).call_record(call, outcome)
    return record["arguments"], [e.as_payload() for e in outcome.errors]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("deploy", '{"env":"p","tokens":"hunter2"}'),  # a string where the secret list goes
        ("deploy", '{"env":"p","headers":[{"auth":"hunter2"}]}'),  # a list for the secret map
        ("deploy", '{"env":"p","token":["hunter2"]}'),  # a misspelt secret field
        ("deploy", '{"env":"p","tokens":12345678}'),  # a number where the secret list goes
        ("login", '{"user":"x","user2":[1,2,{"password":"hunter2"}]}'),
        ("login", '{"user":"x","params":{"pass":"hunter2"}}'),
    ],
)
def test_a_value_validation_hides_is_hidden_in_the_record(tool: str, arguments: str) -> None:
    recorded, errors = _recorded(tool, arguments)
    shown = json.dumps(errors)
    assert "hunter2" not in shown and "12345678" not in shown
    assert "hunter2" not in recorded and "12345678" not in recorded
    # The structure and every key stay, so the record replays as the call failed.
    assert json.loads(recorded).keys() == json.loads(arguments).keys()


def test_inspect_shows_what_the_record_shows() -> None:
    text = '{"env":"p","headers":[{"auth":"hunter2"}]}'
    assert SECRET not in redact_arguments(text, TOOLSET.schema("deploy"))


def test_literals_where_secrets_may_sit_are_kept() -> None:
    # `null` holds no text to hide: kept, so the record fails as the call did.
    text = '{"env":"p","tokens":null,"headers":true}'
    assert redact_arguments(text, TOOLSET.schema("deploy")) == text


_KEYS = ["env", "tokens", "token", "headers", "auth", "password", "user", "user2", "params"]


def _values(marker: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        marker | st.integers(-5, 5) | st.none(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3)
        ),
        max_leaves=8,
    )


def _relabelled(value: Any, count: list[int]) -> Any:
    """`value` with each string a distinct marker, so that one shown says where it sat."""
    if isinstance(value, str):
        count[0] += 1
        return f"sec{count[0]:05d}"
    if isinstance(value, list):
        return [_relabelled(item, count) for item in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        items = value.items()  # pyright: ignore[reportUnknownVariableType]
        return {key: _relabelled(item, count) for key, item in items}  # pyright: ignore[reportUnknownVariableType]
    return value


def _markers(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            _markers(item, out)
    elif isinstance(value, dict):
        for item in value.values():  # pyright: ignore[reportUnknownVariableType]
            _markers(item, out)
    return out


def _at(value: Any, path: str) -> Any:
    """The value at a JSON Pointer, or None where the arguments as written hold none (an
    error's path may name the arguments as validation unwrapped them)."""
    for token in path.split("/")[1:] if path else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and token.isdigit() and int(token) < len(value):  # pyright: ignore[reportUnknownArgumentType]
            value = value[int(token)]  # pyright: ignore[reportUnknownVariableType]
        elif isinstance(value, dict) and token in value:
            value = value[token]  # pyright: ignore[reportUnknownVariableType]
        else:
            return None
    return value  # pyright: ignore[reportUnknownVariableType]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tool=st.sampled_from(["login", "deploy"]),
    arguments=st.dictionaries(
        st.sampled_from(_KEYS),
        _values(st.just("")),
        max_size=4,
    ),
)
def test_a_record_never_shows_a_value_an_error_hides(tool: str, arguments: dict[str, Any]) -> None:
    # Each string is a distinct marker: one that sits under an error's path but is missing
    # from what the error shows was hidden by validation, and must not be recorded either.
    arguments = _relabelled(arguments, [0])
    recorded, errors = _recorded(tool, json.dumps(arguments))
    for error in errors:
        got = error.get("got")
        if got is None or len(got) >= 190:  # cut short: a missing marker proves nothing
            continue
        for marker in _markers(_at(arguments, error["path"]), []):
            if marker not in got:
                assert marker not in recorded, (error, recorded)


# --------------------------------------------------------------------------------------------
# A secret the model sends again as a key


class Session(BaseModel):
    """Open a session."""

    token: SecretStr
    note: str = ""


SESSIONS = Toolset([Session])
"""Read by `toolwire replay --tools` below."""

_TOKEN = "sk-live-9999"


@pytest.mark.parametrize(
    "arguments",
    [
        '{"token":"sk-live-9999","sk-live-9999":1}',  # the key after the secret
        '{"sk-live-9999":1,"token":"sk-live-9999"}',  # before it: known only at the end
        '{"token":"sk-live-9999","x_sk-live-9999":1}',  # inside a longer key
        '{"token":"sk-live-\\u0039999","sk-live-9999":1}',  # the value escaped
        '{"token":"sk-live-9999","sk-live-\\u0039999":1}',  # the key escaped
        '{"token":"sk-live-9999","sk-live-9999":"x',  # cut off in the key's value
        '{"token":"sk-live-9999","sk-live-9999',  # cut off in the key
    ],
)
def test_a_secret_sent_again_as_a_key_is_hidden_in_the_record(
    tmp_path: Path, arguments: str
) -> None:
    asm = Assembler(tools=SESSIONS)
    asm.feed(0, id="c", name="session", arguments=arguments)
    (call,) = asm.finish()
    outcome = SESSIONS.validate(call)
    path = tmp_path / "c.jsonl"
    assert Recorder(path, toolset=SESSIONS).record_call(call, outcome)
    written = path.read_text(encoding="utf-8")
    assert "9999" not in written
    (record,) = [json.loads(line) for line in written.splitlines()]
    # The key is there, hidden: the record still fails as the call did, at the same path.
    ((case,),) = [replay(load_corpus([path]), SESSIONS).cases]
    (result,) = case.calls
    observed = record["observed"]
    assert (result.state, result.code) == (observed["state"], observed.get("code"))
    assert result.error is not None and result.error.path == observed["path"]


def test_a_replay_report_hides_a_secret_key_of_a_hand_written_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A corpus not written by the recorder holds the secret; the report quotes the core's
    # error (`unexpected property "sk-..."`, its path) and must hide it as the record would.
    corpus = tmp_path / "c.jsonl"
    arguments = json.dumps({"token": _TOKEN, _TOKEN: 1})
    record = {"toolwire": "call", "tool": "session", "arguments": arguments}
    corpus.write_text(json.dumps(record) + "\n", encoding="utf-8")
    report = replay(load_corpus([corpus]), SESSIONS)
    ((result,),) = [case.calls for case in report.cases]
    assert result.error is not None and result.error.path == "/[redacted]"
    assert "9999" not in json.dumps(report.to_json())
    out = tmp_path / "report.json"
    assert main(["replay", str(corpus), "--tools", f"{__name__}:SESSIONS", "--json", str(out)]) == 1
    assert "9999" not in capsys.readouterr().out + out.read_text(encoding="utf-8")
