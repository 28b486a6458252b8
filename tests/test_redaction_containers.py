"""Redaction of values shown to the model when the value holds secrets inside it.

A pre-check or validation error about a list, an object or a union (`maxItems`, a type
mismatch, `oneOf`) shows the whole value; a coercion that unwraps or parses a container shows
it too. Secret fields inside must stay hidden, and the redaction hook must see every value at
its own JSON Pointer, exactly as it does for a scalar error.
"""

from __future__ import annotations

import json
from typing import Annotated

import pytest
from pydantic import BaseModel, Field, SecretStr

from toolwire import Assembler, ToolCall, Toolset, tool_messages


def call(tools: Toolset, name: str, arguments: str, *, precheck: bool) -> ToolCall:
    asm = Assembler(tools=tools) if precheck else Assembler()
    asm.feed(0, id="call_1", name=name, arguments=arguments)
    (done,) = asm.finish()
    return done


class Vault(BaseModel):
    """Store keys."""

    keys: list[SecretStr] = Field(default=[], max_length=2)
    env: dict[str, SecretStr] = {}
    label: str = ""


PLAIN = {
    "type": "function",
    "function": {
        "name": "connect",
        "parameters": {
            "type": "object",
            "properties": {
                "tokens": {
                    "type": "array",
                    "maxItems": 1,
                    "items": {"type": "string", "format": "password"},
                },
                "auth": {
                    "type": "object",
                    "properties": {"token": {"type": "string", "x-secret": True}},
                    "required": ["token"],
                },
            },
        },
    },
}


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("vault", '{"keys": ["sk-live-1111", "sk-live-2222", "sk-live-3333"]}'),
        ("vault", '{"keys": "sk-live-1111"}'),
        ("vault", '{"env": "sk-live-1111"}'),
        ("vault", '{"env": ["sk-live-1111"]}'),
        ("connect", '{"tokens": ["sk-live-1111", "sk-live-2222"]}'),
        ("connect", '{"auth": ["sk-live-1111"]}'),
        ("connect", '{"auth": "sk-live-1111"}'),
    ],
)
def test_secrets_inside_a_shown_value_are_redacted(
    tool: str, arguments: str, precheck: bool
) -> None:
    toolset = Toolset([Vault, PLAIN])
    done = call(toolset, tool, arguments, precheck=precheck)
    outcome = toolset.validate(done)
    assert not outcome.ok and outcome.errors
    shown = json.dumps(tool_messages([done], [outcome])) + repr(outcome.errors)
    assert "sk-live" not in shown


def test_secret_items_are_redacted_one_by_one() -> None:
    toolset = Toolset([Vault])
    done = call(toolset, "vault", '{"keys": ["a1", "b2", "c3"]}', precheck=True)
    (error,) = toolset.validate(done).errors
    assert error.path == "/keys"
    assert error.got == '["[redacted]","[redacted]","[redacted]"]'


@pytest.mark.parametrize("precheck", [True, False])
def test_redaction_hook_sees_values_inside_a_shown_object(precheck: bool) -> None:
    seen: list[str] = []

    def redact(path: str, text: str) -> str:
        seen.append(path)
        return '"****"' if path == "/card/number" else text

    pay = {
        "name": "pay",
        "parameters": {
            "type": "object",
            "properties": {
                "card": {
                    "type": "object",
                    "properties": {"number": {"type": "string"}, "holder": {"type": "string"}},
                    "maxProperties": 1,
                }
            },
        },
    }
    toolset = Toolset([pay], redact=redact)
    arguments = '{"card": {"number": "4111111111111111", "holder": "Ann"}}'
    done = call(toolset, "pay", arguments, precheck=precheck)
    outcome = toolset.validate(done)
    (error,) = outcome.errors
    assert error.path == "/card"
    assert "4111" not in json.dumps(tool_messages([done], [outcome]))
    assert error.got == '{"number":"****","holder":"Ann"}'
    assert "/card/number" in seen


@pytest.mark.parametrize("precheck", [True, False])
def test_unwrapped_arguments_keep_secrets_out_of_coercions(precheck: bool) -> None:
    class Login(BaseModel):
        """Log in."""

        user: str
        password: SecretStr

    toolset = Toolset([Login])
    arguments = '{"params": {"user": "ann", "password": "hunter2-secret"}}'
    done = call(toolset, "login", arguments, precheck=precheck)
    outcome = toolset.validate(done)
    assert outcome.ok
    (coercion,) = outcome.coercions
    assert coercion.rule == "unwrap"
    assert "hunter2" not in coercion.from_ + coercion.to
    assert '"user":"ann"' in coercion.to


def test_json_string_object_with_secret_inside_is_not_shown() -> None:
    class Auth(BaseModel):
        token: SecretStr
        scope: str

    class Connect(BaseModel):
        """Connect."""

        auth: Auth

    toolset = Toolset([Connect])
    arguments = json.dumps({"auth": json.dumps({"token": "tok-secret-9", "scope": "read"})})
    outcome = toolset.validate(call(toolset, "connect", arguments, precheck=False))
    assert outcome.ok
    (coercion,) = outcome.coercions
    assert coercion.rule == "json_string"
    assert "tok-secret-9" not in coercion.from_ + coercion.to


class Pins(BaseModel):
    pins: list[Annotated[int, Field(json_schema_extra={"x-secret": True})]] = []
    codes: dict[str, list[Annotated[int, Field(json_schema_extra={"x-secret": True})]]] = {}


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"pins": ["12.5"]}', "/pins/0"),  # refused: fractional_integer
        ('{"pins": [1, true]}', "/pins/1"),  # a type error (the pre-check's, with it)
        ('{"codes": {"a": [1, "2.5"]}}', "/codes/a/1"),
    ],
)
def test_secret_array_items_stay_hidden_in_errors(
    arguments: str, path: str, precheck: bool
) -> None:
    # JSON Pointers spell array indices as text: the secret item must still be found.
    tools = Toolset([Pins])
    outcome = tools.validate(call(tools, "pins", arguments, precheck=precheck))
    assert not outcome.ok
    (error,) = outcome.errors
    assert error.path == path and error.got == "[redacted]"
    assert error.expected == "an integer"


def test_secret_array_items_stay_hidden_in_coercions() -> None:
    tools = Toolset([Pins])
    outcome = tools.validate(call(tools, "pins", '{"pins": ["1234"]}', precheck=True))
    assert outcome.ok
    (coercion,) = outcome.coercions
    assert coercion.path == "/pins/0"
    assert (coercion.from_, coercion.to) == ("[redacted]", "[redacted]")
