"""The native path of `Toolset.validate` (`toolwire._core.DirectValidation`): a pre-checked call
to a tool Pydantic alone decides gets the same outcome the Python path builds."""

from __future__ import annotations

import dataclasses
import json
import pickle
from types import SimpleNamespace

import pytest
from pydantic import BaseModel, SecretStr, field_validator

from toolwire import Assembler, ToolCall
from toolwire._core import DirectValidation
from toolwire.toolset import Toolset
from toolwire.validation import Outcome, success_outcome, success_plan


class Ticket(BaseModel):
    """Open a ticket."""

    title: str
    priority: int
    tags: list[str]

    @field_validator("title")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the title must not be blank")
        return value


class Login(BaseModel):
    """Log in."""

    user: str
    password: SecretStr


class Measure(BaseModel):
    """Record a measurement."""

    value: float


TOOLS = Toolset([Ticket, Login, Measure])


def _call(name: str, arguments: str, *, tools: Toolset | None = TOOLS) -> ToolCall:
    asm = Assembler(tools=tools)
    asm.feed(0, id="call_7", name=name, arguments=arguments)
    (call,) = asm.finish()
    return call


def _look_alike(call: ToolCall) -> SimpleNamespace:
    """The same call as a plain object, which only the Python path reads."""
    return SimpleNamespace(
        name=call.name, id=call.id, arguments=call.arguments, error=call.error, prechecked=True
    )


TICKET = json.dumps({"title": "Printer on fire", "priority": 2, "tags": ["hw", "東京"]})


def test_a_success_is_the_outcome_the_python_path_builds() -> None:
    call = _call("ticket", TICKET)
    native = TOOLS.validate(call)
    python = TOOLS.validate(_look_alike(call))
    assert type(native) is Outcome
    assert native.ok and native.model == Ticket(
        title="Printer on fire", priority=2, tags=["hw", "東京"]
    )
    assert native == python
    assert repr(native) == repr(python)
    assert list(vars(native)) == [f.name for f in dataclasses.fields(Outcome)]
    assert vars(native) == vars(success_outcome("call_7", "ticket", native.model, None, [], "en"))


def test_each_success_has_lists_of_its_own() -> None:
    first, second = (TOOLS.validate(_call("ticket", TICKET)) for _ in range(2))
    first.errors.append("x")
    first.coercions.append("y")  # type: ignore[arg-type]
    first.ask_user.append("z")  # type: ignore[arg-type]
    assert (second.errors, second.coercions, second.ask_user) == ([], [], [])
    assert first.errors is not first.coercions


def test_a_success_stays_a_frozen_dataclass() -> None:
    outcome = TOOLS.validate(_call("ticket", TICKET))
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.ok = False  # type: ignore[misc]
    assert dataclasses.replace(outcome, hint="h").hint == "h"
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    assert outcome.executable and outcome.to_message(result="done")["tool_call_id"] == "call_7"


def test_a_refusal_by_pydantic_becomes_the_model_payload() -> None:
    call = _call("ticket", json.dumps({"title": "  ", "priority": 1, "tags": []}))
    outcome = TOOLS.validate(call)
    assert not outcome.ok and outcome.kind == "model_error"
    assert outcome == TOOLS.validate(_look_alike(call))
    assert "/title" in outcome.to_message()["content"]


def test_a_tool_with_secrets_keeps_them_recorded() -> None:
    outcome = TOOLS.validate(_call("login", '{"user": "ann", "password": "hunter2"}'))
    assert outcome.ok
    assert [secret.get_secret_value() for secret in outcome.secrets] == ["hunter2"]


def test_a_long_number_for_a_float_field_is_still_refused() -> None:
    outcome = TOOLS.validate(_call("measure", '{"value": 1e400}'))
    assert not outcome.ok


@pytest.mark.parametrize("arguments", ["", "  "])
def test_blank_arguments_take_the_general_path(arguments: str) -> None:
    outcome = TOOLS.validate(_call("ticket", arguments))
    assert not outcome.ok  # `{}` lacks every required field
    assert {e.path for e in outcome.errors} >= {"/title"}


def test_a_call_assembled_without_the_pre_check_gets_the_same_outcome() -> None:
    plain = TOOLS.validate(_call("ticket", TICKET, tools=None))
    assert plain == TOOLS.validate(_call("ticket", TICKET))


def test_the_plan_describes_every_outcome_field_in_order() -> None:
    plan = success_plan("de")
    assert [field for field, _, _ in plan] == [f.name for f in dataclasses.fields(Outcome)]
    built = success_outcome("id", "tool", None, None, [], "de")
    for field, what, constant in plan:
        if what == "constant":
            assert getattr(built, field) == constant, field


def test_an_unknown_slot_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown outcome slot"):
        DirectValidation(Outcome, (("ok", "sometimes", None),), [], 1024)


def test_anything_but_a_tool_call_is_left_to_python() -> None:
    shortcut = DirectValidation(Outcome, success_plan("en"), [], 1024)
    assert shortcut.outcome(SimpleNamespace(name="ticket")) is None
    assert shortcut.outcome(_call("ticket", TICKET)) is None  # no direct tool registered
