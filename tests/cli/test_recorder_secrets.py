"""A recording never holds a secret that validation would hide."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from toolwire import Assembler, Toolset
from toolwire.recorder import Recorder, redact_arguments

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
