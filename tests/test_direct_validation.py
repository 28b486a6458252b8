"""The native path of `Toolset.validate` (`toolwire._core.DirectValidation`): a pre-checked call
to a tool Pydantic alone decides gets the same outcome the Python path builds."""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import pickle
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from pydantic import BaseModel, SecretStr, field_validator

from toolwire import Assembler, ToolCall
from toolwire._core import DirectValidation
from toolwire.toolset import Toolset
from toolwire.validation import SUCCESS_PER_CALL, Outcome, success_outcome, success_template


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


def _fields(outcome: Outcome) -> dict[str, object]:
    """Every field of an outcome by name, in declaration order."""
    return {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome)}


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
    python_success = success_outcome("call_7", "ticket", native.model, None, [], "en")
    assert _fields(native) == _fields(python_success)


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


def test_the_template_is_a_python_success_in_the_outcome_language() -> None:
    template = success_template("zh")
    assert list(template) == [f.name for f in dataclasses.fields(Outcome)]
    assert template == _fields(success_outcome(None, "", None, None, [], "zh"))
    outcome = Toolset([Ticket], lang="zh").validate(_call("ticket", TICKET))
    assert outcome.ok and outcome.lang == "zh"


def test_a_success_has_every_slot_set_and_no_dict() -> None:
    outcome = TOOLS.validate(_call("ticket", TICKET))
    assert not hasattr(outcome, "__dict__")
    assert list(_fields(outcome)) == [f.name for f in dataclasses.fields(Outcome)]
    assert outcome.secrets == () and outcome.hint is None and outcome.lang == "en"


def test_a_class_without_slots_for_its_fields_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        ok: bool = True

    with pytest.raises(ValueError, match="not an object slot"):
        DirectValidation(Plain, {"ok": True}, (), [], 1024)

    class Computed:
        __slots__ = ()
        ok = property(lambda self: True)

    with pytest.raises(ValueError, match="not an object slot"):
        DirectValidation(Computed, {"ok": True}, (), [], 1024)


def test_a_list_field_missing_from_the_per_call_fields_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolwire.validation as validation

    monkeypatch.setattr(validation, "SUCCESS_PER_CALL", SUCCESS_PER_CALL[:-1])
    with pytest.raises(AssertionError, match="ask_user"):
        validation.success_template("en")


def test_an_unknown_slot_or_field_is_refused() -> None:
    template = success_template("en")
    with pytest.raises(ValueError, match="unknown outcome slot"):
        DirectValidation(Outcome, template, (("ok", "sometimes"),), [], 1024)
    with pytest.raises(ValueError, match="no field"):
        DirectValidation(Outcome, template, (("okay", "tool"),), [], 1024)


def test_anything_but_a_tool_call_is_left_to_python() -> None:
    shortcut = DirectValidation(Outcome, success_template("en"), SUCCESS_PER_CALL, [], 1024)
    assert shortcut.outcome(SimpleNamespace(name="ticket")) is None
    assert shortcut.outcome(_call("ticket", TICKET)) is None  # no direct tool registered


@pytest.mark.parametrize(
    "duplicate", [copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))]
)
def test_a_copied_or_pickled_toolset_keeps_the_native_path(
    duplicate: Callable[[Toolset], Toolset],
) -> None:
    tools = Toolset([Ticket], lang="zh")
    Assembler(tools=tools)  # reads (and caches) the native pre-check registry
    again = duplicate(tools)
    call = _call("ticket", TICKET)
    assert again.validate(call) == tools.validate(call)
    assert again.validate(call).lang == "zh"
    refused = _call("ticket", json.dumps({"title": " ", "priority": 1, "tags": []}))
    assert again.validate(refused) == tools.validate(refused)


class Shade(enum.Enum):
    """A colour shade."""

    LIGHT = "light"
    DARK = "dark"


class Paint(BaseModel):
    """Paint a wall."""

    shade: Shade


def test_a_toolset_with_enum_and_secret_fields_pickles() -> None:
    # Pydantic's validators of such models hold local functions and cannot be pickled.
    tools = Toolset([Ticket, Login, Paint])
    Assembler(tools=tools)
    again = pickle.loads(pickle.dumps(tools))
    for name, arguments in [
        ("login", '{"user": "ann", "password": "hunter2"}'),
        ("paint", '{"shade": "dark"}'),
        ("paint", '{"shade": "DARK"}'),
        ("ticket", TICKET),
    ]:
        call = _call(name, arguments, tools=tools)
        assert again.validate(call) == tools.validate(call)
    painted = again.validate(_call("paint", '{"shade": "dark"}', tools=again))
    assert painted.model == Paint(shade=Shade.DARK)
