"""When the application's own code raises during `Toolset.validate` (a Pydantic validator
raising anything but `ValueError`/`AssertionError`, a check, the redaction hook), the call gets
the `internal_error` outcome `assemble` gives it, on every path, and the other calls of the turn
keep theirs."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr, field_validator, model_validator

from toolwire import Assembler, ToolCall, Toolset

LEAK = "postgres://admin:hunter2@db"


class Lookup(BaseModel):
    """Look up an order (the native path: no secrets, no floats)."""

    order_id: int

    @field_validator("order_id")
    @classmethod
    def _known(cls, value: int) -> int:
        if value == 13:
            raise KeyError(f"no table for {value}: {LEAK}")
        return value


class Login(BaseModel):
    """Log in (the Python inline path: a secret field)."""

    user: str
    password: SecretStr

    @field_validator("user")
    @classmethod
    def _known(cls, value: str) -> str:
        if value == "ghost":
            raise TypeError(f"user {value} at {LEAK}")
        return value


class Measure(BaseModel):
    """Record a measurement (a float field: long numbers are looked at closer)."""

    value: float
    count: int

    @model_validator(mode="after")
    def _ratio(self) -> Measure:
        self.value / self.count  # ZeroDivisionError for a count of 0
        return self


def _call(tools: Toolset | None, name: str, arguments: str, call_id: str = "c_bug") -> ToolCall:
    asm = Assembler(tools=tools)
    asm.feed(0, id=call_id, name=name, arguments=arguments)
    (call,) = asm.finish()
    return call


def _look_alike(call: ToolCall) -> SimpleNamespace:
    return SimpleNamespace(
        ordinal=call.ordinal,
        index=call.index,
        name=call.name,
        id=call.id,
        arguments=call.arguments,
        error=call.error,
        prechecked=True,
    )


def _assert_internal_error(outcome: Any, call: Any, caplog: pytest.LogCaptureFixture) -> None:
    assert not outcome.ok
    assert outcome.error_type == "internal_error" and not outcome.retryable
    assert outcome.call_id == call.id and outcome.tool == call.name
    sent = json.dumps(outcome.to_message(call))
    assert "internal_error" in sent
    # Neither the model nor the log reads the exception's text, which may quote arguments.
    assert LEAK not in sent and "hunter2" not in caplog.text
    assert call.id in caplog.text


TOOLS = Toolset([Lookup, Login, Measure])

CASES = {
    # The native path (`DirectValidation`): Pydantic's own call raises.
    "native": (TOOLS, "lookup", '{"order_id": 13}'),
    # Pydantic in Python, inline (a tool with secrets).
    "inline": (TOOLS, "login", '{"user": "ghost", "password": "pw"}'),
    # Assembled without the pre-check: the general path looks first.
    "unchecked": (None, "lookup", '{"order_id": 13}'),
    # A float field with a long number: the closer look of the tool's own validator.
    "closer look": (
        Toolset([Measure]),
        "measure",
        '{"value": 1.00000000000000000000000000001, "count": 0}',
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("look_alike", [False, True])
def test_a_validator_that_raises_fails_its_call(
    case: str, look_alike: bool, caplog: pytest.LogCaptureFixture
) -> None:
    tools, name, arguments = CASES[case]
    validating = tools or TOOLS
    call: Any = _call(tools, name, arguments)
    if look_alike:
        call = _look_alike(call)
    with caplog.at_level(logging.ERROR, logger="toolwire"):
        outcome = validating.validate(call)
    _assert_internal_error(outcome, call, caplog)


def test_a_check_that_raises_fails_its_call(caplog: pytest.LogCaptureFixture) -> None:
    def check(order: Lookup) -> None:
        raise RuntimeError(f"order service down: {LEAK}")

    tools = Toolset([Lookup], checks={"lookup": check})
    call = _call(tools, "lookup", '{"order_id": 7}')
    with caplog.at_level(logging.ERROR, logger="toolwire"):
        outcome = tools.validate(call)
    _assert_internal_error(outcome, call, caplog)


@pytest.mark.parametrize("tool_name", ["lookup", "login"])
def test_a_redaction_hook_that_raises_fails_its_call(
    tool_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    def redact(path: str, text: str) -> str:
        raise LookupError(f"{path}: {LEAK}")

    tools = Toolset([Lookup, Login], redact=redact)
    # Refused by Pydantic: on the native path (`lookup`) and in Python (`login`).
    arguments = {"lookup": '{"order_id": 1.5}', "login": '{"user": 5, "password": "pw"}'}
    call = _call(None, tool_name, arguments[tool_name])
    for done in (call, _call(tools, tool_name, arguments[tool_name])):
        with caplog.at_level(logging.ERROR, logger="toolwire"):
            outcome = tools.validate(done)
        _assert_internal_error(outcome, done, caplog)


def test_validate_all_keeps_the_other_calls_of_the_turn() -> None:
    calls = [
        _call(TOOLS, "lookup", '{"order_id": 7}', "c_1"),
        _call(TOOLS, "lookup", '{"order_id": 13}', "c_2"),
        _call(TOOLS, "lookup", '{"order_id": "x"}', "c_3"),
    ]
    first, bug, wrong = TOOLS.validate_all(calls)
    assert first.ok and first.model == Lookup(order_id=7)
    assert bug.error_type == "internal_error"
    assert wrong.error_type == "validation" and wrong.retryable


def test_a_call_that_is_no_call_is_still_refused() -> None:
    # The caller's mistake is raised, not answered as the application's failure.
    with pytest.raises(TypeError, match="validate's call must be a ToolCall"):
        TOOLS.validate(object())  # type: ignore[arg-type]


class Label(BaseModel):
    """Label a parcel (a validator whose refusal quotes text with a lone surrogate)."""

    text: str
    token: SecretStr

    @field_validator("text")
    @classmethod
    def _printable(cls, value: str) -> str:
        if value.startswith("bad"):
            # A message built from bytes a tool decoded with `surrogateescape`, say.
            raise ValueError(f"cannot print {value!r} \udcff near {LEAK}")
        return value


class Tag(BaseModel):
    """Tag a parcel (the native path: no secrets, no floats)."""

    tag: str

    @field_validator("tag")
    @classmethod
    def _known(cls, value: str) -> str:
        raise ValueError("unknown tag \ud800")


@pytest.mark.parametrize("tool_name", ["label", "tag"])
@pytest.mark.parametrize("look_alike", [False, True])
def test_a_refusal_pydantic_cannot_encode_is_still_a_refusal(
    tool_name: str, look_alike: bool
) -> None:
    # pydantic-core raises `UnicodeEncodeError` for such a message: the model's value was
    # refused, so the model gets a retryable validation error, its text sendable, at the field
    # refused (pydantic-core loses it: the error was at the root).
    tools = Toolset([Label, Tag], redact=lambda path, text: text.replace(LEAK, "[db]"))
    arguments = {"label": '{"text": "bad", "token": "sk-1"}', "tag": '{"tag": "x"}'}
    for prechecked in (tools, None):
        call: Any = _call(prechecked, tool_name, arguments[tool_name])
        if look_alike:
            call = _look_alike(call)
        outcome = tools.validate(call)
        assert not outcome.ok and outcome.retryable
        assert outcome.error_type == "validation"
        (error,) = outcome.errors
        assert error.path == {"label": "/text", "tag": "/tag"}[tool_name]
        assert error.code == "value" and error.hint is not None
        assert "\ufffd" in error.hint and (
            "cannot print" in error.hint or "unknown tag" in error.hint
        )
        assert LEAK not in error.hint
        sent = json.dumps(outcome.to_message(call), ensure_ascii=False)
        sent.encode("utf-8")
        assert "internal_error" not in sent


class Parcel(BaseModel):
    """Ship parcels (an unencodable refusal deep inside, beside another error)."""

    count: int
    labels: list[Label]


def test_an_unencodable_refusal_deep_inside_keeps_its_place_and_the_other_errors() -> None:
    tools = Toolset([Parcel])
    arguments = (
        '{"count": "x", "labels": [{"text": "ok", "token": "a"}, {"text": "bad", "token": "b"}]}'
    )
    for prechecked in (tools, None):
        outcome = tools.validate(_call(prechecked, "parcel", arguments))
        assert outcome.error_type == "validation" and outcome.retryable
        assert [(e.path, e.code) for e in outcome.errors] == [
            ("/count", "type"),
            ("/labels/1/text", "value"),
        ]


def test_a_check_raising_unicode_encode_error_is_still_the_application_s() -> None:
    def check(tag: Tag) -> None:
        "\ud800".encode()

    class Plain(BaseModel):
        tag: str

    tools = Toolset([Plain], checks={"plain": check})
    outcome = tools.validate(_call(tools, "plain", '{"tag": "x"}'))
    assert outcome.error_type == "internal_error" and not outcome.retryable
