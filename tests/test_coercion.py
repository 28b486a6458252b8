"""Safe coercion: each rule, each refusal, opt-ins, and exact numbers on the coercion path."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
)

from toolwire import Assembler, InvalidSchemaError, ToolCall
from toolwire.coercion import (
    SAFE_RULES,
    coerce_arguments,
    dumps_exact,
    loads_exact,
    quote_decimals,
    resolve_rules,
)
from toolwire.toolset import Toolset


def call(name: str, arguments: str, call_id: str = "call_1") -> ToolCall:
    """A call assembled by the core (no pre-check, so Pydantic sees every error)."""
    asm = Assembler()
    asm.feed(0, id=call_id, name=name)
    for start in range(0, len(arguments), 3):
        asm.feed(0, arguments=arguments[start : start + 3])
    (done,) = asm.finish()
    return done


class Priority(str, Enum):
    LOW = "low"
    HIGH = "high"


class Order(BaseModel):
    """Place an order."""

    quantity: int
    price: Decimal = Field(default=Decimal("0"), multiple_of=Decimal("0.01"))
    ratio: float = 0.0
    gift: bool = False
    priority: Priority = Priority.LOW
    mode: Literal["fast", "slow"] = "slow"
    # One member: Pydantic gives it as `const`, not `enum`.
    channel: Literal["web"] = "web"
    items: list[int] = []
    meta: dict[str, int] | None = None
    created: int = Field(default=0, json_schema_extra={"x-unit": "unix-seconds"})
    created_f: float = Field(default=0, json_schema_extra={"x-unit": "unix-seconds"})
    confirm: bool = Field(default=False, json_schema_extra={"x-toolwire-coerce": ["bool_word"]})


TOOLS = Toolset([Order])


def validate(arguments: str, toolset: Toolset = TOOLS) -> Any:
    return toolset.validate(call("order", arguments))


@pytest.mark.parametrize(
    ("arguments", "field", "value", "rule"),
    [
        ('{"quantity": "30"}', "quantity", 30, "number_string"),
        ('{"quantity": " -4 "}', "quantity", -4, "number_string"),
        ('{"quantity": "30.0"}', "quantity", 30, "number_string"),
        ('{"quantity": 30.0}', "quantity", 30, "integral_number"),
        ('{"quantity": 1, "price": "19.99"}', "price", Decimal("19.99"), None),
        ('{"quantity": 1, "ratio": "0.25"}', "ratio", 0.25, "number_string"),
        ('{"quantity": 1, "gift": "true"}', "gift", True, "bool_string"),
        ('{"quantity": 1, "gift": "False"}', "gift", False, "bool_string"),
        ('{"quantity": 1, "items": "[1, 2]"}', "items", [1, 2], "json_string"),
        ('{"quantity": 1, "meta": "{\\"a\\": 1}"}', "meta", {"a": 1}, "json_string"),
        ('{"quantity": 1, "priority": "HIGH"}', "priority", Priority.HIGH, "enum_case"),
        ('{"quantity": 1, "mode": "Fast"}', "mode", "fast", "enum_case"),
        ('{"quantity": 1, "channel": "WEB"}', "channel", "web", "enum_case"),
        ('{"quantity": 1, "created": 1700000000000}', "created", 1700000000, "unix_ms"),
        ('{"quantity": 1, "created_f": 1700000000123}', "created_f", 1700000000.123, "unix_ms"),
        ('{"quantity": 1, "confirm": "yes"}', "confirm", True, "bool_word"),
        ('{"quantity": 1, "confirm": 0}', "confirm", False, "bool_word"),
    ],
)
def test_each_rule_applies_and_is_recorded(
    arguments: str, field: str, value: Any, rule: str | None
) -> None:
    outcome = validate(arguments)
    assert outcome.ok, outcome.errors
    assert getattr(outcome.model, field) == value
    if rule is None:
        # Pydantic's strict JSON mode takes a numeric string for Decimal itself: no coercion.
        assert outcome.coercions == []
    else:
        assert [c.rule for c in outcome.coercions] == [rule]
        assert outcome.coercions[0].path == f"/{field}"


class Event(BaseModel):
    """Log an event."""

    at: int | None = Field(default=None, json_schema_extra={"x-unit": "unix-seconds"})
    at_f: float | None = Field(default=None, json_schema_extra={"x-unit": "unix-seconds"})


@pytest.mark.parametrize(
    ("arguments", "field", "value", "rules"),
    [
        ('{"at": 1700000000000}', "at", 1700000000, ["unix_ms"]),
        ('{"at": 1700000000}', "at", 1700000000, []),
        ('{"at": null}', "at", None, []),
        ('{"at_f": 1700000000123}', "at_f", 1700000000.123, ["unix_ms"]),
    ],
)
def test_an_optional_unix_seconds_field_reads_milliseconds_as_a_plain_one_does(
    arguments: str, field: str, value: Any, rules: list[str]
) -> None:
    # Pydantic writes an `Optional` field's extra beside its `anyOf`: the unit holds for the
    # number branch all the same.
    tools = Toolset([Event])
    outcome = tools.validate(call("event", arguments))
    assert outcome.ok, outcome.errors
    assert getattr(outcome.model, field) == value
    assert [c.rule for c in outcome.coercions] == rules
    refused = tools.validate(call("event", '{"at": 1700000000123}'))
    assert not refused.ok and "milliseconds" in (refused.errors[0].hint or "")


def test_coercion_record_shows_from_and_to() -> None:
    outcome = validate('{"quantity": "30", "gift": "true"}')
    assert [(c.path, c.from_, c.to, c.rule) for c in outcome.coercions] == [
        ("/quantity", '"30"', "30", "number_string"),
        ("/gift", '"true"', "true", "bool_string"),
    ]


@pytest.mark.parametrize(
    ("arguments", "path", "code", "hint_word"),
    [
        ('{"quantity": "30.5"}', "/quantity", "type", "whole number"),
        ('{"quantity": 30.5}', "/quantity", "type", None),
        ('{"quantity": 1, "gift": "yes"}', "/gift", "type", None),
        ('{"quantity": 1, "gift": "1"}', "/gift", "type", None),
        ('{"quantity": 1, "gift": 1}', "/gift", "type", None),
        ('{"quantity": 1, "priority": "urgent"}', "/priority", "enum", None),
        ('{"quantity": 1, "created": 1700000000123}', "/created", "type", "milliseconds"),
        ('{"quantity": "thirty"}', "/quantity", "type", None),
        ('{"quantity": "1e400"}', "/quantity", "type", None),
        ('{"quantity": "NaN"}', "/quantity", "type", None),
        ('{"quantity": 1, "ratio": "1e999"}', "/ratio", "type", "too large"),
        ('{"quantity": 1, "ratio": "-1e999"}', "/ratio", "type", "too large"),
        # Too small for a float: it would silently become 0.0.
        ('{"quantity": 1, "ratio": "1e-400"}', "/ratio", "type", "too small"),
        ('{"quantity": 1, "ratio": "-0.1e-330"}', "/ratio", "type", "too small"),
    ],
)
def test_refusals_never_guess(arguments: str, path: str, code: str, hint_word: str | None) -> None:
    outcome = validate(arguments)
    assert not outcome.ok
    error = next(e for e in outcome.errors if e.path == path)
    assert error.code == code
    if hint_word:
        assert error.hint is not None and hint_word in error.hint


def test_ambiguous_enum_is_an_error_with_the_candidates() -> None:
    class Shade(BaseModel):
        shade: Literal["Red", "red", "blue"]

    toolset = Toolset([Shade])
    outcome = toolset.validate(call("shade", '{"shade": "RED"}'))
    assert not outcome.ok
    (error,) = outcome.errors
    assert error.code == "ambiguous"
    assert error.hint is not None and '"Red", "red"' in error.hint
    # An exact match is not ambiguous.
    assert toolset.validate(call("shade", '{"shade": "red"}')).ok


def test_unwrap_lone_params_object() -> None:
    for key in ("params", "parameters", "arguments"):
        outcome = validate(f'{{"{key}": {{"quantity": 2}}}}')
        assert outcome.ok and outcome.model.quantity == 2
        assert [c.rule for c in outcome.coercions] == ["unwrap"]
        assert outcome.coercions[0].path == ""


class _Search(BaseModel):
    q: str
    limit: int = 10


class _Inner(BaseModel):
    k: int


class _Outer(BaseModel):
    inner: _Inner


@pytest.mark.parametrize("precheck", [False, True])
def test_a_misspelled_field_a_coercion_brings_into_view_is_refused(precheck: bool) -> None:
    # Under `extra="ignore"` the misspelled `limt` would be dropped and the call run with
    # `limit=10`; found directly it is refused, and so it is inside a wrapper or a JSON string.
    toolset = Toolset([_Search, _Outer])
    for name, arguments, path in (
        ("search", '{"params": {"q": "x", "limt": 50}}', "/limt"),
        ("outer", '{"inner": "{\\"k\\": 1, \\"typo\\": 2}"}', "/inner/typo"),
    ):
        asm = Assembler(tools=toolset) if precheck else Assembler()
        asm.feed(0, id="c", name=name, arguments=arguments)
        (done,) = asm.finish()
        outcome = toolset.validate(done)
        assert not outcome.ok, (name, outcome)
        assert [(e.path, e.code) for e in outcome.errors] == [(path, "unknown_field")]


def test_no_unwrap_when_the_wrapper_has_company_or_is_a_real_field() -> None:
    outcome = validate('{"params": {"quantity": 2}, "gift": true}')
    assert not outcome.ok
    assert outcome.errors[0].path == "/quantity" and outcome.errors[0].code == "missing"

    class Query(BaseModel):
        params: dict[str, int]

    toolset = Toolset([Query])
    outcome = toolset.validate(call("query", '{"params": {"a": 1}}'))
    assert outcome.ok and outcome.coercions == []


_OPEN_Q = {"type": "object", "properties": {"q": {"type": "string"}}}


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize(
    ("parameters", "arguments", "value"),
    [
        # An open object, a map of objects, a map of strings (environment variables): a
        # wrapper key is one of its members like any other, and the call is valid as sent.
        ({**_OPEN_Q, "additionalProperties": True}, '{"input": {"q": "x"}}', None),
        ({"type": "object", "additionalProperties": {"type": "object"}}, '{"args": {}}', None),
        (
            {"type": "object", "additionalProperties": {"type": "object"}},
            '{"input": {"q": "x"}}',
            None,
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            '{"input": "{\\"DEBUG\\": \\"1\\"}"}',
            None,
        ),
        # No `additionalProperties` and no `properties`, but a key it requires: an open
        # object (left open; one that declares nothing is a tool without parameters).
        ({"type": "object", "required": ["params"]}, '{"params": {"q": "x"}}', None),
        # A pattern takes the key, beside `additionalProperties: false`.
        (
            {**_OPEN_Q, "patternProperties": {"^in": {}}, "additionalProperties": False},
            '{"input": {"q": "x"}}',
            None,
        ),
        # A property of an `allOf` member is one of the object's own.
        (
            {
                "type": "object",
                "allOf": [{"properties": {"args": {"type": "object"}}}],
                "unevaluatedProperties": False,
            },
            '{"args": {"q": "x"}}',
            None,
        ),
        # Closed, the key is no member: the lone wrapper still reads as the arguments.
        ({**_OPEN_Q, "additionalProperties": False}, '{"input": {"q": "x"}}', {"q": "x"}),
        (
            {**_OPEN_Q, "patternProperties": {"^x-": {}}, "additionalProperties": False},
            '{"params": {"q": "x"}}',
            {"q": "x"},
        ),
        (
            {"anyOf": [{**_OPEN_Q, "additionalProperties": False}, {"type": "null"}]},
            '{"params": {"q": "x"}}',
            {"q": "x"},
        ),
        (
            {"type": "object", "allOf": [_OPEN_Q], "unevaluatedProperties": False},
            '{"params": {"q": "x"}}',
            {"q": "x"},
        ),
    ],
)
def test_unwrap_only_a_key_the_schema_does_not_take(
    precheck: bool, parameters: dict[str, Any], arguments: str, value: Any
) -> None:
    # A call valid as sent is taken as sent: unwrapping a member of an open map (or parsing
    # the JSON text inside it) would run the tool with other arguments than the model's.
    toolset = Toolset([{"name": "run", "parameters": parameters}])
    asm = Assembler(tools=toolset) if precheck else Assembler()
    asm.feed(0, id="c", name="run", arguments=arguments)
    early = asm.drain_errors()
    # The pre-check agrees: silent on a call valid as sent.
    assert early == [] or value is not None
    (done,) = asm.finish()
    outcome = toolset.validate(done)
    assert outcome.ok, outcome.errors
    if value is None:
        assert outcome.value == json.loads(arguments)
        assert outcome.coercions == []
    else:
        assert outcome.value == value
        assert [c.rule for c in outcome.coercions] == ["unwrap"]


def test_no_unwrap_for_a_model_that_takes_extra_fields() -> None:
    class Loose(BaseModel):
        model_config = ConfigDict(extra="allow")
        q: str

    toolset = Toolset([Loose])
    outcome = toolset.validate(call("loose", '{"params": {"q": "x"}}'))
    # `params` is an extra field the model keeps: what is missing is `q`, not a wrapper.
    assert not outcome.ok and outcome.coercions == []
    assert [(e.path, e.code) for e in outcome.errors] == [("/q", "missing")]
    outcome = toolset.validate(call("loose", '{"params": {"q": "x"}, "q": "y"}'))
    assert outcome.ok and outcome.model is not None and outcome.model.q == "y"


def test_double_encoded_arguments_object() -> None:
    outcome = validate('"{\\"quantity\\": 3}"')
    assert outcome.ok and outcome.model.quantity == 3
    assert [c.rule for c in outcome.coercions] == ["json_string"]


def test_coercion_none_disables_everything_but_field_opt_ins() -> None:
    strict = Toolset([Order], coercion="none")
    assert not validate('{"quantity": "30"}', strict).ok
    assert not validate('{"quantity": 1, "priority": "HIGH"}', strict).ok
    outcome = validate('{"quantity": 1, "confirm": "yes"}', strict)
    assert outcome.ok and [c.rule for c in outcome.coercions] == ["bool_word"]


def test_custom_rule_set() -> None:
    only_numbers = Toolset([Order], coercion=["number_string"])
    assert validate('{"quantity": "30"}', only_numbers).ok
    assert not validate('{"quantity": 1, "gift": "true"}', only_numbers).ok
    assert resolve_rules("safe") == SAFE_RULES
    assert resolve_rules("none") == frozenset()


@pytest.mark.parametrize("spec", [None, 5, {"bool_word": True}])
def test_a_rule_set_of_the_wrong_kind_is_refused_by_name(spec: object) -> None:
    # None and a number failed as "object is not iterable"; a mapping's keys were taken as
    # the rules, whatever it said of them.
    with pytest.raises(TypeError, match="coercion must be 'safe', 'none' or a set of rule"):
        Toolset([Order], coercion=spec)  # pyright: ignore[reportArgumentType]


class _MisspeltRule(BaseModel):
    confirm: bool = Field(default=False, json_schema_extra={"x-toolwire-coerce": ["bool_words"]})


@pytest.mark.parametrize(
    ("tool", "path", "got"),
    [
        # A misspelt rule: the field took no `"yes"`, without a word on why.
        (_MisspeltRule, "/properties/confirm/x-toolwire-coerce", '["bool_words"]'),
        # A name rather than a list of names: read as its letters, none a rule.
        (
            {
                "name": "confirm",
                "parameters": {
                    "type": "object",
                    "properties": {"ok": {"type": "boolean", "x-toolwire-coerce": "bool_word"}},
                },
            },
            "/properties/ok/x-toolwire-coerce",
            '"bool_word"',
        ),
        (
            {
                "name": "confirm",
                "parameters": {
                    "type": "object",
                    "properties": {"ok": {"$ref": "#/$defs/flag"}},
                    "$defs": {"flag": {"type": "boolean", "x-toolwire-coerce": [1]}},
                },
            },
            "/$defs/flag/x-toolwire-coerce",
            "[1]",
        ),
    ],
)
def test_a_field_opting_in_to_no_rule_is_refused_at_build(tool: Any, path: str, got: str) -> None:
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([tool])
    assert (info.value.path, info.value.keyword, info.value.got) == (
        path,
        "x-toolwire-coerce",
        got,
    )
    assert "bool_word" in info.value.expected


class _Wire(BaseModel):
    account: StrictInt = 0
    amount_cents: int = Field(default=0, strict=True)
    confirm: StrictBool = False
    reference: StrictInt | None = None
    tags: list[StrictBool] = []
    count: int = 0


class _Branch(BaseModel):
    code: int = 0


class _WireStrict(BaseModel):
    model_config = ConfigDict(strict=True)

    account: int = 0
    mode: Literal["fast", "slow"] = "slow"
    # A model's `strict` is its own: the fields of a model inside it are not strict.
    branch: _Branch = _Branch()
    # A field that opts in to a rule by name gets it, strict model or not.
    confirm: bool = Field(default=False, json_schema_extra={"x-toolwire-coerce": ["bool_string"]})


STRICT_TOOLS = Toolset([_Wire, _WireStrict])


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("name", "arguments", "path"),
    [
        ("wire", '{"account": "12345"}', "/account"),
        ("wire", '{"account": 12345.0}', "/account"),
        ("wire", '{"amount_cents": "900"}', "/amount_cents"),
        ("wire", '{"confirm": "TRUE"}', "/confirm"),
        ("wire", '{"reference": "7"}', "/reference"),
        ("wire", '{"tags": ["true"]}', "/tags/0"),
        ("wire_strict", '{"account": "12345"}', "/account"),
        ("wire_strict", '{"mode": "FAST"}', "/mode"),
    ],
)
def test_a_value_declared_strict_is_refused_not_coerced(
    name: str, arguments: str, path: str, precheck: bool
) -> None:
    assembler = Assembler(tools=STRICT_TOOLS) if precheck else Assembler()
    assembler.feed(0, id="call_1", name=name, arguments=arguments)
    (done,) = assembler.finish()
    outcome = STRICT_TOOLS.validate(done)
    assert not outcome.ok and outcome.coercions == []
    assert [e.path for e in outcome.errors] == [path]
    assert outcome.errors[0].code in ("type", "enum")


@pytest.mark.parametrize(
    ("name", "arguments", "path", "rule"),
    [
        ("wire", '{"count": "3"}', "/count", "number_string"),
        ("wire_strict", '{"branch": {"code": "3"}}', "/branch/code", "number_string"),
        ("wire_strict", '{"confirm": "true"}', "/confirm", "bool_string"),
    ],
)
def test_what_is_not_declared_strict_beside_it_is_still_coerced(
    name: str, arguments: str, path: str, rule: str
) -> None:
    outcome = STRICT_TOOLS.validate(call(name, arguments))
    assert outcome.ok
    assert [(c.path, c.rule) for c in outcome.coercions] == [(path, rule)]


def test_null_for_optional_non_nullable_field_means_absent() -> None:
    outcome = validate('{"quantity": 1, "gift": null, "meta": null}')
    assert outcome.ok
    assert outcome.model.gift is False and outcome.model.meta is None
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/gift", "null_as_absent")]
    # Null for a required field is still an error.
    assert not validate('{"quantity": null}').ok


class _Account(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    user_id: int = Field(alias="userId")
    account: str = Field(alias="accountNo", json_schema_extra={"x-user-supplied": True})
    ref: int = Field(validation_alias=AliasChoices("ref", "reference"))
    note: str = Field(default="", alias="noteText")


class _ClosedAccount(_Account):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


GOOD_ACCOUNT = {"userId": 1, "accountNo": "A1", "ref": 2}


@pytest.mark.parametrize("model", [_Account, _ClosedAccount])
@pytest.mark.parametrize("key", ["userId", "user_id", "accountNo", "account", "ref", "reference"])
def test_null_for_a_required_field_read_under_several_keys_is_a_wrong_value(
    model: type[BaseModel], key: str
) -> None:
    # Such a field is in no `required` list (any one of its keys supplies it), yet it is
    # required: a null there is a wrong value, as for a field without an alias, not an absent
    # one. The model's mistake to fix, but for a field the user supplies: the model had no
    # value to give, and the user is asked, as when the field is left out.
    others = {"user_id": "userId", "account": "accountNo", "reference": "ref"}
    body = {k: v for k, v in GOOD_ACCOUNT.items() if k != others.get(key, key)}
    tools = Toolset([model])
    outcome = tools.validate(call(tools.names()[0], json.dumps({**body, key: None})))
    if key in ("account", "accountNo"):
        assert outcome.kind == "needs_clarification" and not outcome.retryable
        assert outcome.ask_user == [key]
    else:
        assert outcome.kind == "model_error" and outcome.retryable
    assert [(e.path, e.code, e.got) for e in outcome.errors] == [(f"/{key}", "type", "null")]
    assert outcome.coercions == []


@pytest.mark.parametrize("key", ["noteText", "note"])
def test_null_for_an_optional_field_read_under_several_keys_means_absent(key: str) -> None:
    tools = Toolset([_Account])
    outcome = tools.validate(call("account", json.dumps({**GOOD_ACCOUNT, key: None})))
    assert outcome.ok and outcome.model.note == ""
    assert [(c.path, c.rule) for c in outcome.coercions] == [(f"/{key}", "null_as_absent")]


# ------------------------------------------------------------------------------------------
# Exact numbers


class Invoice(BaseModel):
    amount: Decimal = Field(multiple_of=Decimal("0.01"), decimal_places=2)
    lines: list[Decimal] = []
    count: int = 0


def test_decimal_gets_the_exact_digits_on_both_paths() -> None:
    toolset = Toolset([Invoice])
    direct = toolset.validate(call("invoice", '{"amount": 19.99}'))
    assert direct.coercions == [] and direct.model.amount == Decimal("19.99")
    assert str(direct.model.amount) == "19.99"
    # Force the coercion path with a numeric string elsewhere: digits must survive it.
    coerced = toolset.validate(
        call("invoice", '{"amount": 19.99, "lines": [0.1, 1.10], "count": "2"}')
    )
    assert coerced.ok and [c.rule for c in coerced.coercions] == ["number_string"]
    assert str(coerced.model.amount) == "19.99"
    assert [str(x) for x in coerced.model.lines] == ["0.1", "1.10"]


@pytest.mark.parametrize("amount", ["19.999", "0.001", "1e-3"])
def test_money_precision_enforced(amount: str) -> None:
    outcome = Toolset([Invoice]).validate(call("invoice", f'{{"amount": {amount}}}'))
    assert not outcome.ok
    assert outcome.errors[0].code in ("multiple_of", "decimal")


class Cents(BaseModel):
    """Pay a whole number of cents."""

    amount: Decimal = Field(multiple_of=Decimal("0.01"))
    tip: Decimal | None = Field(default=None, multiple_of=Decimal("0.01"))


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("amount", "multiple"),
    [
        ("0.001", False),
        ("1e-1000", False),
        # Past Decimal's default exponent range: a remainder there rounded to 0, a multiple.
        ("1e-1100000", False),
        ("3e-999999999", False),
        ("-5e-1000000000", False),
        ('"1e-1100000"', False),
        ("12.34", True),
        ("1234e-2", True),
        ("0e-1100000", True),
    ],
)
def test_a_decimal_step_is_checked_exactly_at_any_exponent(
    precheck: bool, amount: str, multiple: bool
) -> None:
    toolset = Toolset([Cents])
    for arguments, path in (
        (f'{{"amount": {amount}}}', "/amount"),
        (f'{{"amount": 1, "tip": {amount}}}', "/tip"),
    ):
        asm = Assembler(tools=toolset) if precheck else Assembler()
        asm.feed(0, id="call_1", name="cents", arguments=arguments)
        (done,) = asm.finish()
        outcome = toolset.validate(done)
        assert outcome.ok is multiple, (arguments, outcome)
        assert [(e.path, e.code) for e in outcome.errors] == (
            [] if multiple else [(path, "multiple_of")]
        )


class Payment(BaseModel):
    """Pay."""

    amount: Decimal
    tip: Decimal | None = None
    lines: list[Decimal] = []
    memo: Decimal | str = ""
    count: int = 0
    ratio: float = 0.0


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        # Python's Decimal() reads these; JSON has no such numbers.
        ('{"amount": "1_000"}', "/amount"),
        ('{"amount": "1_000.50"}', "/amount"),
        ('{"amount": "\u0661\u0660\u0660"}', "/amount"),  # Arabic-Indic digits
        ('{"amount": "+5"}', "/amount"),
        ('{"amount": "1,000"}', "/amount"),
        ('{"amount": 1, "tip": "2_5"}', "/tip"),
        ('{"amount": 1, "lines": ["1", "2_0"]}', "/lines/1"),
        # int() and float() read underscores too: the number_string rule must not.
        ('{"amount": 1, "count": "1_000"}', "/count"),
        ('{"amount": 1, "ratio": "1_000.5"}', "/ratio"),
        ('{"amount": 1, "count": "\u0661\u0662"}', "/count"),
    ],
)
def test_number_text_must_be_json_shaped(arguments: str, path: str, precheck: bool) -> None:
    toolset = Toolset([Payment])
    asm = Assembler(tools=toolset) if precheck else Assembler()
    asm.feed(0, id="call_1", name="payment", arguments=arguments)
    (done,) = asm.finish()
    outcome = toolset.validate(done)
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [(path, "type")]
    assert outcome.coercions == []


@pytest.mark.parametrize(
    ("arguments", "amount"),
    [
        ('{"amount": "1000"}', Decimal("1000")),
        ('{"amount": " 12.50 "}', Decimal("12.50")),
        ('{"amount": "-0.5"}', Decimal("-0.5")),
        ('{"amount": "1e3"}', Decimal("1e3")),
        ('{"amount": 1, "memo": "1_000"}', Decimal("1")),  # a plain string is allowed there
    ],
)
def test_json_shaped_number_text_is_still_taken(arguments: str, amount: Decimal) -> None:
    outcome = Toolset([Payment]).validate(call("payment", arguments))
    assert outcome.ok, outcome.errors
    assert outcome.model.amount == amount


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "path", "value"),
    [
        ('{"amount": " 1.5"}', "/amount", Decimal("1.5")),
        ('{"amount": "12.50 "}', "/amount", Decimal("12.50")),
        ('{"amount": 1, "tip": "\\t2"}', "/tip", Decimal("2")),
        ('{"amount": 1, "lines": ["1", " 2e1 "]}', "/lines/1", [Decimal("1"), Decimal("2e1")]),
    ],
)
def test_white_space_around_decimal_text_is_a_recorded_coercion(
    arguments: str, path: str, value: Any, precheck: bool
) -> None:
    # Pydantic strips it without a word; a float field records the same text as
    # `number_string`, and so does a `Decimal` one now. `"1.5"` itself is a Decimal's own form.
    toolset = Toolset([Payment])
    asm = Assembler(tools=toolset) if precheck else Assembler()
    asm.feed(0, id="call_1", name="payment", arguments=arguments)
    (done,) = asm.finish()
    outcome = toolset.validate(done)
    assert outcome.ok, outcome.errors
    field = path.split("/")[1]
    assert getattr(outcome.model, field) == value
    assert [(c.rule, c.path) for c in outcome.coercions] == [("number_string", path)]
    # Without the rule, refused as the float field's text is.
    held = Toolset([Payment], coercion="none").validate(done)
    assert not held.ok and [e.path for e in held.errors] == [path]
    assert Toolset([Payment]).validate(call("payment", '{"amount": "1.5"}')).coercions == []


@given(
    st.decimals(min_value=Decimal("-1e12"), max_value=Decimal("1e12"), places=2, allow_nan=False)
)
def test_dumps_exact_round_trips_decimals(value: Decimal) -> None:
    text = dumps_exact({"v": value, "l": [value]})
    assert loads_exact(text) == {"v": value, "l": [value]}
    assert str(loads_exact(text)["v"]) == str(value)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(_JSON)
def test_dumps_exact_writes_plain_data_as_json_dumps_does(value: Any) -> None:
    # Strings, integers and literals skip `json.dumps` (a new encoder for each one cost a
    # large call most of its time): what is written must not change.
    import json

    assert dumps_exact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# A number with a fraction or an exponent as `loads_exact` reads it, and as `dumps_exact`
# writes it back for validation.
_EXACT_TEXTS = {
    "1.10": "1.10",
    "9e0": "9.0",
    "-0.0": "-0.0",
    "1e309": "1E+309",
    "12345678901234567.89": "12345678901234567.89",
}


@given(_JSON, st.sampled_from(sorted(_EXACT_TEXTS)))
def test_dumps_exact_writes_a_decimal_anywhere_digit_for_digit(value: Any, number: str) -> None:
    # Plain data goes to the standard encoder, which stops at a `Decimal`: wherever one is,
    # the whole value is written exactly, the plain parts as `json.dumps` writes them.
    import json

    plain = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    exact, written = loads_exact(number), _EXACT_TEXTS[number]
    assert dumps_exact([value, exact]) == f"[{plain},{written}]"
    assert dumps_exact({"a": exact, "b": [value]}) == f'{{"a":{written},"b":[{plain}]}}'


# Pydantic's `Decimal | None` as validation reads it (a number, a numeric string or null).
_PRICED = {
    "type": "object",
    "properties": {
        "price": {
            "anyOf": [
                {"type": "number"},
                {"type": "string", "pattern": r"^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$"},
                {"type": "null"},
            ]
        },
        "rows": {"type": "array", "items": {"type": "integer"}},
        "extra": {},
    },
}


def test_quoting_decimals_leaves_what_holds_none_as_it_was() -> None:
    # A large value under a node with no `Decimal` below it is not walked item by item, and
    # a call whose `Decimal` field is absent is validated from its text as it came.
    schema = _PRICED
    value = loads_exact('{"rows": [1, 2, 3], "extra": [[1.5, {"a": 2}]]}')
    assert quote_decimals(value, schema) is value
    priced = loads_exact('{"price": 1.10, "rows": [1, 2], "extra": [1.5]}')
    quoted = quote_decimals(priced, schema)
    assert quoted == {"price": "1.10", "rows": [1, 2], "extra": [Decimal("1.5")]}
    assert quoted["rows"] is priced["rows"] and quoted["extra"] is priced["extra"]
    assert priced["price"] == Decimal("1.10")  # the input is not modified


# ------------------------------------------------------------------------------------------
# Timestamps


class Meeting(BaseModel):
    start: datetime
    end: datetime | None = None


def test_naive_datetime_is_an_error_without_a_default_timezone() -> None:
    outcome = Toolset([Meeting]).validate(call("meeting", '{"start": "2024-03-05T10:00:00"}'))
    assert not outcome.ok
    (error,) = outcome.errors
    assert error.path == "/start" and error.code == "timezone_required"
    assert error.expected is not None and "offset" in error.expected


def test_aware_datetime_passes_untouched() -> None:
    outcome = Toolset([Meeting]).validate(call("meeting", '{"start": "2024-03-05T10:00:00Z"}'))
    assert outcome.ok and outcome.coercions == []
    assert outcome.model.start.utcoffset() == timedelta(0)


def test_default_timezone_is_applied_and_recorded() -> None:
    toolset = Toolset([Meeting], default_tz={"meeting": ZoneInfo("Europe/Paris")})
    outcome = toolset.validate(
        call("meeting", '{"start": "2024-03-05T10:00:00", "end": "2024-07-05T10:00:00"}')
    )
    assert outcome.ok
    assert outcome.model.start.utcoffset() == timedelta(hours=1)  # CET
    assert outcome.model.end is not None
    assert outcome.model.end.utcoffset() == timedelta(hours=2)  # CEST: per-date offset
    assert [(c.path, c.rule) for c in outcome.coercions] == [
        ("/start", "default_timezone"),
        ("/end", "default_timezone"),
    ]
    assert outcome.coercions[0].to == '"2024-03-05T10:00:00+01:00"'


def test_default_timezone_with_a_fixed_offset_and_coercion_off() -> None:
    toolset = Toolset([Meeting], default_tz={"meeting": timezone.utc}, coercion="none")
    outcome = toolset.validate(call("meeting", '{"start": "2024-03-05T10:00:00"}'))
    assert outcome.ok and outcome.model.start.tzinfo is not None


@pytest.mark.parametrize("day", ["2024/03/05", "05.03.2024", "2024-3-5", "2024-03-05T00:00:00"])
def test_dates_are_parsed_strictly(day: str) -> None:
    from datetime import date

    class Trip(BaseModel):
        day: date

    outcome = Toolset([Trip]).validate(call("trip", f'{{"day": "{day}"}}'))
    assert not outcome.ok
    assert outcome.errors[0].code == "format"
    assert outcome.errors[0].expected is not None and "YYYY-MM-DD" in outcome.errors[0].expected


# ------------------------------------------------------------------------------------------
# The engine on plain schemas


def test_coerce_arguments_on_a_plain_schema_leaves_input_untouched() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "boolean"}},
        },
    }
    source = {"n": "7", "tags": ["true", False]}
    result = coerce_arguments(source, schema, rules=SAFE_RULES)
    assert result.value == {"n": 7, "tags": [True, False]}
    assert source == {"n": "7", "tags": ["true", False]}
    assert [(c.path, c.rule) for c in result.coercions] == [
        ("/n", "number_string"),
        ("/tags/0", "bool_string"),
    ]


def _plain_outcome(schema: dict[str, Any], arguments: Any, **options: Any) -> Any:
    """`arguments` streamed through the pre-check of a one-tool plain toolset, validated."""
    tools = Toolset([{"name": "tool", "parameters": schema}], **options)
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
    (done,) = assembler.finish()
    return tools.validate(done)


@pytest.mark.parametrize(
    ("rule", "sent", "coercion"),
    [
        ({"type": "integer"}, "3", "safe"),
        ({"type": "integer"}, " -4 ", "safe"),
        ({"type": "number"}, "2.50", "safe"),
        ({"type": "boolean"}, "True", "safe"),
        ({"type": "array", "items": {"type": "integer"}}, '["1", 2]', "safe"),
        ({"enum": ["low", "high"]}, "HIGH", "safe"),
        # Refused, not rounded; left as sent without the rules.
        ({"type": "integer"}, "3.5", "safe"),
        ({"type": "integer"}, "3", "none"),
    ],
)
def test_a_value_under_a_pattern_key_is_coerced_as_under_a_property(
    rule: dict[str, Any], sent: str, coercion: str
) -> None:
    # `"3"` under a key a `patternProperties` pattern names was never read as 3, while the
    # same value under `properties` was, and recorded: the rules are the field's, however
    # the schema names its key.
    def outcome(schema: dict[str, Any]) -> tuple[Any, ...]:
        found = _plain_outcome(schema, {"q_1": sent}, coercion=coercion)
        return (
            found.ok,
            found.value,
            [(c.path, c.from_, c.to, c.rule) for c in found.coercions],
            [(e.path, e.code, e.expected) for e in found.errors],
        )

    named = outcome({"type": "object", "properties": {"q_1": rule}})
    for patterns in (
        {"patternProperties": {"^q_": rule}},
        {"patternProperties": {"^q_": rule}, "additionalProperties": False},
        # The pattern's schema, not `additionalProperties`, is what the key's value is read by.
        {"patternProperties": {"^q_": rule}, "additionalProperties": {"type": "string"}},
        # A pattern that adds no type of its own beside it leaves the reading as it is.
        {"patternProperties": {"^q_": rule, "_1$": {"not": {"type": "null"}}}},
    ):
        assert outcome({"type": "object", **patterns}) == named
    assert named[0] == (coercion == "safe" and sent != "3.5")


def test_a_key_two_patterns_read_differently_is_left_to_validation() -> None:
    # No reading satisfies an integer pattern and a string pattern at once: nothing is changed
    # or recorded, and validation refuses the value as sent.
    schema = {
        "type": "object",
        "patternProperties": {"^q_": {"type": "integer"}, "_s$": {"type": "string"}},
    }
    found = _plain_outcome(schema, {"q_s": "3", "q_n": "4"})
    assert not found.ok and [(c.path, c.rule) for c in found.coercions] == [
        ("/q_n", "number_string")
    ]
    assert [(e.path, e.code) for e in found.errors] == [("/q_s", "type")]
    # A key no pattern names stays under `additionalProperties`.
    schema = {**schema, "additionalProperties": {"type": "boolean"}}
    found = _plain_outcome(schema, {"flag": "true", "q_n": "4"})
    assert found.ok and found.value == {"flag": True, "q_n": 4}


_QKey = Annotated[str, StringConstraints(pattern=r"^q_")]


class Tallies(BaseModel):
    counts: dict[str, int] = {}
    by_pattern: dict[_QKey, int] = {}
    ids: dict[str, dict[int, str]] = {}
    ids_by_pattern: dict[_QKey, dict[int, str]] = {}


@pytest.mark.parametrize(
    ("field", "sent", "read"),
    [
        ("counts", {"q_a": "3"}, {"q_a": 3}),
        ("ids", {"q_a": {"1": "x"}}, {"q_a": {1: "x"}}),
        ("ids", {"q_a": {"01": "x"}}, None),
    ],
)
def test_a_model_dict_whose_keys_a_pattern_holds_is_coerced_as_a_plain_one(
    field: str, sent: dict[str, Any], read: dict[str, Any] | None
) -> None:
    # Pydantic writes a `dict` with constrained keys as `patternProperties`: its values were
    # neither coerced nor their keys checked, where the same dict with plain keys was.
    tools = Toolset([Tallies])
    found = []
    for name in (field, {"counts": "by_pattern", "ids": "ids_by_pattern"}[field]):
        outcome = tools.validate(call("tallies", json.dumps({name: sent})))
        found.append(
            (
                outcome.ok,
                getattr(outcome.model, name, None),
                [(c.path.split("/", 2)[-1], c.rule) for c in outcome.coercions],
                [(e.path.split("/", 2)[-1], e.code) for e in outcome.errors],
            )
        )
    assert found[0] == found[1]
    assert found[0][1] == read


class Ledger(BaseModel):
    by_name: dict[str, Decimal] = {}
    by_pattern: dict[_QKey, Decimal] = {}


@pytest.mark.parametrize("field", ["by_name", "by_pattern"])
@pytest.mark.parametrize("written", ["0.1000000000000000000001", "12345678901234567.89", '"1_0"'])
def test_decimal_digits_under_a_pattern_key_are_kept_as_under_any_key(
    field: str, written: str
) -> None:
    # Pydantic reads a JSON number for a `Decimal` through a float unless it is quoted first;
    # the quoting, and the check of a numeric string's text, missed dict values whose keys a
    # pattern constrains (`0.1000000000000000000001` became `Decimal("0.1")` there).
    outcome = Toolset([Ledger]).validate(call("ledger", f'{{"{field}": {{"q_a": {written}}}}}'))
    if written.startswith('"'):
        assert not outcome.ok and [(e.path, e.code) for e in outcome.errors] == [
            (f"/{field}/q_a", "type")
        ]
    else:
        assert outcome.ok and getattr(outcome.model, field) == {"q_a": Decimal(written)}
        assert str(getattr(outcome.model, field)["q_a"]) == written


def test_union_coercion_only_when_all_readings_agree() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "number"}]},
            "b": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        },
    }
    result = coerce_arguments({"a": "5", "b": "true"}, schema, rules=SAFE_RULES)
    assert result.value == {"a": 5, "b": True}
    assert result.problems == ()


class Embedded(BaseModel):
    """Take JSON that a model may double-encode."""

    values: list[float] = []
    counts: dict[str, int] | None = None


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"values": "[NaN]"}', "/values"),
        ('{"values": "[1, Infinity]"}', "/values"),
        ('{"values": "[-Infinity]"}', "/values"),
        ('{"counts": "{\\"a\\": 1, \\"a\\": 2}"}', "/counts"),
        ('{"counts": "{\\"a\\\\ud800\\": 1}"}', "/counts"),
        ('{"values": "' + "[" * 65 + "]" * 65 + '"}', "/values"),
        ('{"values": "' + "[" * 5000 + "]" * 5000 + '"}', "/values"),
    ],
)
def test_json_in_a_string_must_be_json_by_the_core_rules(arguments: str, path: str) -> None:
    # Not JSON (NaN, Infinity), a value lost to a repeated key, a lone surrogate or nesting past
    # the depth limit: the string is left as it is and reported, never read leniently (or crash).
    outcome = Toolset([Embedded]).validate(call("embedded", arguments))
    assert not outcome.ok
    assert outcome.coercions == []
    assert [(e.path, e.code) for e in outcome.errors] == [(path, "type")]


def test_json_in_a_string_within_the_depth_limit_is_read() -> None:
    nested = "[" * 3 + "]" * 3
    schema = {"type": "object", "properties": {"a": {"type": "array"}}}
    result = coerce_arguments({"a": nested}, schema, rules=SAFE_RULES)
    assert result.value == {"a": [[[]]]}
    assert [c.rule for c in result.coercions] == ["json_string"]


class Numbered(BaseModel):
    x: int
    kind: Literal["a"] = "a"


class Named(BaseModel):
    x: str
    kind: Literal["b"] = "b"


class Pick(BaseModel):
    """Pick one item."""

    item: Numbered | Named
    tagged: Numbered | Named = Field(default=Numbered(x=0), discriminator="kind")
    size: int | float = 0
    count: int = 0


@pytest.mark.parametrize(
    ("arguments", "item", "size", "paths"),
    [
        # `Named` takes the item as it is: coercing it toward `Numbered` changed its meaning.
        ('{"item": {"x": "5"}, "count": "3"}', Named(x="5"), 0, ["/count"]),
        ('{"item": {"x": "5", "kind": "b"}, "count": "3"}', Named(x="5"), 0, ["/count"]),
        # The constant says `Numbered`: there the coercion is the only reading.
        (
            '{"item": {"x": "5", "kind": "a"}, "count": "3"}',
            Numbered(x=5),
            0,
            ["/item/x", "/count"],
        ),
        # A float that strict validation takes as it is stays a float.
        ('{"item": {"x": 1}, "size": 5.0, "count": "3"}', Numbered(x=1), 5.0, ["/count"]),
    ],
)
def test_union_branch_is_not_forced_by_a_coercion_elsewhere(
    arguments: str, item: BaseModel, size: float, paths: list[str]
) -> None:
    # Coercion runs only because `count` needs it; the union values must come out exactly as
    # strict validation would read them on their own.
    outcome = Toolset([Pick]).validate(call("pick", arguments))
    assert outcome.ok, outcome.errors
    assert isinstance(outcome.model, Pick)
    assert outcome.model.item == item
    assert type(outcome.model.size) is type(size) and outcome.model.size == size
    assert [c.path for c in outcome.coercions] == paths


def test_union_member_with_a_tag_is_coerced_toward_its_own_branch() -> None:
    outcome = Toolset([Pick]).validate(
        call("pick", '{"item": {"x": 1}, "tagged": {"x": "5", "kind": "b"}, "count": "3"}')
    )
    assert outcome.ok, outcome.errors
    assert isinstance(outcome.model, Pick)
    assert outcome.model.tagged == Named(x="5")


@pytest.mark.parametrize(
    ("zone", "start"),
    [
        ("Europe/Paris", "2024-10-27T02:30:00"),  # 02:30 twice that night (clocks go back)
        ("Europe/Paris", "2024-03-31T02:30:00"),  # and never at all in spring (clocks go forward)
        # Local mean time, +00:19:32: no timestamp the validator reads can carry the seconds.
        ("Europe/Amsterdam", "1930-05-01T12:00:00"),
    ],
)
def test_default_timezone_refuses_a_wall_time_that_is_not_one_instant(
    zone: str, start: str
) -> None:
    toolset = Toolset([Meeting], default_tz={"meeting": ZoneInfo(zone)})
    outcome = toolset.validate(call("meeting", f'{{"start": "{start}"}}'))
    assert not outcome.ok
    assert outcome.coercions == []
    (error,) = outcome.errors
    assert (error.path, error.code, error.got) == ("/start", "timezone_required", f'"{start}"')


@pytest.mark.parametrize(
    ("start", "to"),
    [
        ("2024-03-05 10:00", '"2024-03-05 10:00+01:00"'),
        ("2024-03-05T10:00:00.1234567", '"2024-03-05T10:00:00.1234567+01:00"'),
    ],
)
def test_default_timezone_only_adds_the_offset(start: str, to: str) -> None:
    toolset = Toolset([Meeting], default_tz={"meeting": ZoneInfo("Europe/Paris")})
    outcome = toolset.validate(call("meeting", f'{{"start": "{start}"}}'))
    assert outcome.ok
    assert [(c.path, c.to, c.rule) for c in outcome.coercions] == [
        ("/start", to, "default_timezone")
    ]


@pytest.mark.parametrize("start", ["2024-W10-2T10:00", "2024-03-05T10", "2024-065T10:00"])
def test_default_timezone_does_not_rewrite_other_formats(start: str) -> None:
    # Python reads these (an ISO week date, an hour alone, an ordinal date); the tool's
    # validator does not, with or without an offset: they are format errors, not coercions.
    toolset = Toolset([Meeting], default_tz={"meeting": ZoneInfo("Europe/Paris")})
    outcome = toolset.validate(call("meeting", f'{{"start": "{start}"}}'))
    assert not outcome.ok
    assert outcome.coercions == []
    assert [(e.path, e.code) for e in outcome.errors] == [("/start", "format")]


@pytest.mark.parametrize(
    "arguments",
    [
        '{"item": {"x": "5", "kind": "a"}}',
        '{"item": {"x": 1}, "tagged": {"x": "5", "kind": "a"}}',
    ],
)
def test_precheck_finding_inside_a_repaired_union_member_does_not_stand(arguments: str) -> None:
    # The pre-check reports a union by the last branch it tried (`kind` is not "b"); once a
    # coercion has repaired the member for its own branch, that finding says nothing more.
    toolset = Toolset([Pick])
    asm = Assembler(tools=toolset)
    asm.feed(0, id="call_1", name="pick", arguments=arguments)
    (done,) = asm.finish()
    assert done.error is not None and done.error.kind == "schema_violation"
    outcome = toolset.validate(done)
    assert outcome.ok, outcome.errors
    assert [c.rule for c in outcome.coercions] == ["number_string"]


def test_precheck_finding_outside_the_coerced_value_still_stands() -> None:
    class Closed(BaseModel):
        count: int = 0

    toolset = Toolset([Closed])
    asm = Assembler(tools=toolset)
    asm.feed(0, id="call_1", name="closed", arguments='{"cuont": 1, "count": "3"}')
    (done,) = asm.finish()
    outcome = toolset.validate(done)
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [("/cuont", "unknown_field")]


def test_unknown_fields_after_the_first_precheck_finding_are_reported() -> None:
    # The pre-check stops at `count`; Pydantic's default `extra="ignore"` would drop the
    # misspelt keys after it, and the coerced call would run without them.
    class Line(BaseModel):
        sku: str = ""

    class Basket(BaseModel):
        count: int = 0
        lines: list[Line] = []

    toolset = Toolset([Basket])
    asm = Assembler(tools=toolset)
    asm.feed(
        0,
        id="call_1",
        name="basket",
        arguments='{"count": "3", "cuont": 4, "lines": [{"sku": "a", "qty": 2}]}',
    )
    (done,) = asm.finish()
    assert done.error is not None and done.error.path == "/count"
    outcome = toolset.validate(done)
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [
        ("/cuont", "unknown_field"),
        ("/lines/0/qty", "unknown_field"),
    ]


class Reading(BaseModel):
    """Record a reading."""

    value: float = 0.0
    samples: list[float] = []
    total: Decimal = Decimal(0)
    note: str = ""


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"value": 1e400}', "/value"),
        ('{"value": -1e400}', "/value"),
        ('{"value": 1' + "0" * 400 + "}", "/value"),
        ('{"value": 1e-400}', "/value"),
        ('{"value": 1.7976931348623159e308}', "/value"),
        ('{"samples": [1.5, 2.5e-999]}', "/samples/1"),
    ],
)
def test_a_float_field_never_turns_a_number_into_infinity_or_zero(
    arguments: str, path: str
) -> None:
    # Valid JSON numbers that a float cannot hold: Pydantic reads them as inf or 0.0.
    for toolset in (Toolset([Reading]), Toolset([Reading], coercion="none")):
        outcome = toolset.validate(call("reading", arguments))
        assert not outcome.ok
        assert [(e.path, e.code) for e in outcome.errors] == [(path, "type")]
        assert (
            outcome.errors[0].hint is not None
            and "too large or too small" in outcome.errors[0].hint
        )


def test_a_dict_tool_never_turns_a_number_into_infinity() -> None:
    tool = {
        "name": "reading",
        "parameters": {"type": "object", "properties": {"value": {"type": "number"}}},
    }
    outcome = Toolset([tool]).validate(call("reading", '{"value": 1e400}'))
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [("/value", "type")]


@pytest.mark.parametrize(
    ("arguments", "total", "value"),
    [
        ('{"total": 1e400}', Decimal("1e400"), 0.0),  # a Decimal holds it exactly
        ('{"value": 1e300, "note": "code e123"}', Decimal(0), 1e300),
        ('{"value": 5e-324}', Decimal(0), 5e-324),
        # Above the largest double but below the midpoint to 2**1024: a float rounds it down.
        ('{"value": 1.7976931348623158e308}', Decimal(0), 1.7976931348623157e308),
        ('{"value": -1797693134862315807' + "0" * 290 + "}", Decimal(0), -1.7976931348623157e308),
    ],
)
def test_numbers_that_fit_are_left_alone(arguments: str, total: Decimal, value: float) -> None:
    outcome = Toolset([Reading]).validate(call("reading", arguments))
    assert outcome.ok, outcome.errors
    assert isinstance(outcome.model, Reading)
    assert (outcome.model.total, outcome.model.value) == (total, value)
    assert outcome.coercions == []


def test_union_trials_stay_linear_in_a_recursive_schema() -> None:
    # An expression tree: every level is a union of object branches, each tried in turn.
    schema: dict[str, Any] = {
        "$defs": {
            "Add": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "op": {"const": "add"},
                    "args": {"type": "array", "items": {"$ref": "#/$defs/Expr"}},
                },
            },
            "Mul": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "op": {"const": "mul"},
                    "args": {"type": "array", "items": {"$ref": "#/$defs/Expr"}},
                },
            },
            "Lit": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"value": {"type": "integer"}},
                "required": ["value"],
            },
            "Expr": {
                "anyOf": [{"$ref": "#/$defs/Add"}, {"$ref": "#/$defs/Mul"}, {"$ref": "#/$defs/Lit"}]
            },
        },
        "type": "object",
        "properties": {"expr": {"$ref": "#/$defs/Expr"}},
    }
    tree: dict[str, Any] = {"value": "1"}
    for _ in range(40):
        tree = {"args": [tree, {"value": 2}]}
    started = time.perf_counter()
    result = coerce_arguments({"expr": tree}, schema, rules=SAFE_RULES)
    assert time.perf_counter() - started < 5  # exponential trials took hours here
    assert [c.rule for c in result.coercions] == ["number_string"]
    assert result.coercions[0].path == "/expr" + "/args/0" * 40 + "/value"


class Street(BaseModel):
    kind: Literal["straße", "file"]


@pytest.mark.parametrize("sent", ["strasse", "STRASSE", "ﬁle"])
def test_enum_case_rule_changes_case_only_not_letters(sent: str) -> None:
    # Case folding equates different letters (ß and ss, the ﬁ ligature and fi); the rule may
    # only fix a difference of case.
    outcome = Toolset([Street]).validate(call("street", f'{{"kind": "{sent}"}}'))
    assert not outcome.ok and outcome.coercions == []


def test_enum_case_rule_still_fixes_case() -> None:
    outcome = Toolset([Street]).validate(call("street", '{"kind": "STRAẞE"}'))
    assert outcome.ok and outcome.model is not None and outcome.model.kind == "straße"
    assert [c.rule for c in outcome.coercions] == ["enum_case"]


class _Level(IntEnum):
    LOW = 1
    HIGH = 2


class _Tagged(BaseModel):
    v: Literal[1]
    size: int


class _Other(BaseModel):
    v: Literal[2]
    name: str


class Levels(BaseModel):
    level: _Level = _Level.LOW
    pick: Literal[1, 2] = 1
    on: Literal[True] = True
    spec: Annotated[_Tagged | _Other, Field(discriminator="v")] | None = None


@pytest.mark.parametrize(
    "rules", ["safe", ["number_string", "bool_string"], ["number_string", "enum_case"]]
)
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"level": "2"}', "/level"),
        ('{"pick": "2"}', "/pick"),
        ('{"on": "true"}', "/on"),
        ('{"spec": {"v": "1", "size": 1}}', "/spec/v"),
    ],
)
def test_a_string_is_no_enum_member_whether_or_not_enum_case_is_on(
    rules: Any, arguments: str, path: str
) -> None:
    # Only a difference of case makes a string a member: `number_string` and `bool_string`
    # took `"2"` and `"true"` as soon as `enum_case` was off, which the default rules refuse.
    outcome = Toolset([Levels], coercion=rules).validate(call("levels", arguments))
    assert [(e.path, e.code) for e in outcome.errors] == [(path, "enum")]
    assert outcome.coercions == []


_Cents = Annotated[Decimal, Field(decimal_places=2, max_digits=4)]


class _Line(BaseModel):
    amount: _Cents


class _Invoice(BaseModel):
    line: _Line | None = None
    pair: tuple[_Cents, str] = (Decimal(0), "")
    either: str | Decimal = ""


def test_decimal_digits_are_kept_inside_optional_models_and_tuples_and_unions_are_pydantics() -> (
    None
):
    # A value that breaks `decimal_places` is refused wherever it sits, never rounded to fit;
    # and a number under `Union[str, Decimal]` is the Decimal Pydantic makes of it, not the
    # string that quoting it would have made.
    toolset = Toolset([_Invoice])
    for arguments, path in (
        ('{"line": {"amount": 19.999999999999999999}}', "/line/amount"),
        ('{"pair": [19.999999999999999999, "a"]}', "/pair/0"),
    ):
        outcome = toolset.validate(call("invoice", arguments))
        assert not outcome.ok and [e.path for e in outcome.errors] == [path]
    outcome = toolset.validate(call("invoice", '{"line": {"amount": 19.99}, "either": 5}'))
    assert outcome.ok and outcome.model is not None
    assert outcome.model.line == _Line(amount=Decimal("19.99"))
    assert outcome.model.either == Decimal(5)


class _Reading(BaseModel):
    value: float | Decimal = 0
    exact: Decimal | float | None = None
    amount: Decimal = Decimal(0)


@pytest.mark.parametrize(
    "arguments",
    [
        '{"value": 1.5}',
        '{"value": 0.1, "exact": 2.25}',
        '{"value": "1.5"}',
        '{"exact": null, "amount": 19.99}',
    ],
)
def test_a_union_of_float_and_decimal_is_read_as_pydantic_reads_it(arguments: str) -> None:
    # Its schema is a lone Decimal's (a number or a numeric string): quoting its numbers to keep
    # their digits made them Decimals where Pydantic takes the float branch.
    toolset = Toolset([_Reading])
    outcome = toolset.validate(call("reading", arguments))
    assert outcome.ok and outcome.model is not None, outcome.errors
    expected = _Reading.model_validate_json(arguments)
    assert outcome.model == expected
    assert [type(outcome.model.value), type(outcome.model.exact)] == [
        type(expected.value),
        type(expected.exact),
    ]
    # A lone Decimal beside it keeps every digit.
    outcome = toolset.validate(call("reading", '{"amount": 12345678901234567.89}'))
    assert outcome.model is not None and outcome.model.amount == Decimal("12345678901234567.89")


class _Count(BaseModel):
    """Count or measure something."""

    quantity: int | Decimal = 0
    maybe: Decimal | int | None = None


@pytest.mark.parametrize(
    ("arguments", "quantity", "maybe"),
    [
        (
            '{"quantity": 123456789012345678901234567890.123}',
            "123456789012345678901234567890.123",
            None,
        ),
        ('{"maybe": 0.30000000000000000001}', 0, "0.30000000000000000001"),
        ('{"quantity": 2.50, "maybe": 1e400}', "2.50", "1E+400"),
        ('{"quantity": 7, "maybe": 8}', 7, 8),
    ],
)
def test_a_decimal_beside_an_integer_keeps_the_digits_a_lone_decimal_keeps(
    arguments: str, quantity: str | int, maybe: str | int | None
) -> None:
    # Pydantic merges `int | Decimal` into one `anyOf` with the integer: a number with a
    # fraction there is the Decimal's, and was read through a float (its digits lost, `1e400`
    # refused as past a float's range), where a lone Decimal keeps them. An integer stays the
    # int it is.
    tools = Toolset([_Count])
    for done in (call("count", arguments), _prechecked(tools, "count", arguments)):
        outcome = tools.validate(done)
        assert outcome.ok and isinstance(outcome.model, _Count), outcome.errors
        for got, wanted in ((outcome.model.quantity, quantity), (outcome.model.maybe, maybe)):
            if isinstance(wanted, str):
                assert isinstance(got, Decimal) and str(got) == str(Decimal(wanted))
            else:
                assert got == wanted and type(got) is type(wanted)
        assert outcome.coercions == []


def test_text_that_is_no_number_for_an_int_or_decimal_is_refused_by_type() -> None:
    # The union's numeric string only quotes the Decimal's number: the model is told a number,
    # not the pattern that string branch holds.
    tools = Toolset([_Count])
    outcome = tools.validate(call("count", '{"quantity": "abc", "maybe": "x"}'))
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [
        ("/quantity", "type", "an integer or a number"),
        ("/maybe", "type", "a number or an integer or null"),
    ]


class _Stock(BaseModel):
    units: int


def test_an_integral_number_past_any_float_is_not_made_an_int() -> None:
    # `1e3` for an int field is 1000, but `1e400` would be a 401-digit integer, which
    # `model_validate_json` refuses (it reads infinity): coercion refuses it too.
    toolset = Toolset([_Stock])
    assert toolset.validate(call("stock", '{"units": 1e3}')).model == _Stock(units=1000)
    outcome = toolset.validate(call("stock", '{"units": 1e400}'))
    assert not outcome.ok and [e.path for e in outcome.errors] == ["/units"]


@pytest.mark.parametrize("number", ["1e3", "1E3", "1.5e3", "30.0", "10e-1"])
def test_a_whole_number_in_a_string_is_read_as_the_same_number_sent_bare(number: str) -> None:
    # `1e3` is 1000 (`integral_number`); `"1e3"` was refused with no hint, though `"30.0"`
    # was taken: the quotes alone changed the verdict.
    toolset = Toolset([_Stock])
    bare = toolset.validate(call("stock", f'{{"units": {number}}}'))
    quoted = toolset.validate(call("stock", f'{{"units": "{number}"}}'))
    assert bare.ok and quoted.ok and quoted.model == bare.model
    assert [(c.rule, c.path) for c in quoted.coercions] == [("number_string", "/units")]


class _Tally(BaseModel):
    units: int
    spare: int | None = None
    share: int | float = 0


@pytest.mark.parametrize("number", ["2.5", "2.5e0", "25e-1", "-0.5"])
@pytest.mark.parametrize("field", ["units", "spare"])
def test_a_fraction_for_an_integer_is_told_why_sent_bare_or_quoted(number: str, field: str) -> None:
    # `"2.5e0"` had the "whole number" advice and `2.5e0` a type error with no hint.
    toolset = Toolset([_Tally])
    rest = "" if field == "units" else '"units": 1, '
    errors: list[tuple[str | None, str | None]] = []
    for written in (number, f'"{number}"'):
        outcome = toolset.validate(call("tally", f'{{{rest}"{field}": {written}}}'))
        assert not outcome.ok and outcome.retryable
        (error,) = outcome.errors
        assert error.path == f"/{field}" and error.hint is not None
        assert "whole number" in error.hint
        errors.append((error.expected, error.hint))
    assert errors[0] == errors[1]


def test_a_plain_tools_integer_given_a_fraction_is_told_why() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tools = Toolset([{"name": "plain", "parameters": schema}])
    (error,) = tools.validate(call("plain", '{"n": 2.5e0}')).errors
    assert error.hint is not None and "whole number" in error.hint


def test_a_fraction_where_a_number_goes_too_is_taken() -> None:
    outcome = Toolset([_Tally]).validate(call("tally", '{"units": 1, "share": 2.5e0}'))
    assert outcome.ok and outcome.model == _Tally(units=1, share=2.5)


class _Level(BaseModel):
    value: int | float


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1e-400", "1e" + "9" * 5000])
def test_a_number_in_a_string_a_union_cannot_hold_is_told_why_as_sent_bare(number: str) -> None:
    # `1e400` for an `int | float` had the float-range advice, `"1e400"` a type error with no
    # hint: every branch refused it, and the refusals were dropped.
    toolset = Toolset([_Level])
    quoted = toolset.validate(call("level", f'{{"value": "{number}"}}'))
    bare = toolset.validate(call("level", f'{{"value": {number}}}'))
    assert not quoted.ok and quoted.retryable
    (error,) = quoted.errors
    assert error.path == "/value" and error.hint is not None and "too large" in error.hint
    assert (error.expected, error.hint) == (bare.errors[0].expected, bare.errors[0].hint)


@pytest.mark.parametrize(
    ("number", "advice"),
    [
        ("1e400", "too large or too small"),
        ("-1e400", "too large or too small"),
        ("1e" + "9" * 5000, "too large or too small"),
        ("1e-400", "whole number"),
        ("2.5e0", "whole number"),
        ("1e-" + "9" * 5000, "whole number"),
    ],
)
def test_a_number_in_a_string_an_integer_field_cannot_take_is_told_why(
    number: str, advice: str
) -> None:
    # A 5000-digit exponent, which no `Decimal` holds, and `"1e3"`'s kin had no hint at all.
    toolset = Toolset([_Stock])
    outcome = toolset.validate(call("stock", f'{{"units": "{number}"}}'))
    assert not outcome.ok and outcome.retryable
    (error,) = outcome.errors
    assert error.path == "/units" and error.hint is not None and advice in error.hint
    if advice.startswith("too"):  # as the same number sent bare is told
        bare = toolset.validate(call("stock", f'{{"units": {number}}}'))
        assert (error.expected, error.hint) == (bare.errors[0].expected, bare.errors[0].hint)


@pytest.mark.parametrize("number", ["5.0000000000000001", "999.9999999999999999", "1e-400"])
def test_a_fraction_a_float_rounds_to_a_whole_number_is_refused_with_advice(number: str) -> None:
    # Strict Pydantic refuses it already; the model hears why, as for a plain tool: a float
    # would round it to a whole number, and rounding is for the model to decide.
    for toolset in (Toolset([_Stock]), Toolset([_Stock], coercion="none")):
        outcome = toolset.validate(call("stock", f'{{"units": {number}}}'))
        assert not outcome.ok
        (error,) = outcome.errors
        assert (error.path, error.code, error.got) == ("/units", "type", number)
        assert error.hint is not None and "do not round" in error.hint


class _IntX(BaseModel):
    x: int


class _BoolX(BaseModel):
    x: bool


class _StrX(BaseModel):
    x: str


class Either(BaseModel):
    """Two object branches that differ in a field's type."""

    v: _IntX | _BoolX
    w: _IntX | _StrX | None = None


@pytest.mark.parametrize(
    ("arguments", "expected", "rules"),
    [
        # Only one branch can take the value once coerced: that reading is taken.
        ('{"v": {"x": "true"}}', Either(v=_BoolX(x=True)), ["bool_string"]),
        ('{"v": {"x": "1"}}', Either(v=_IntX(x=1)), ["number_string"]),
        # A branch takes the value as it is: nothing changes.
        ('{"v": {"x": 1}, "w": {"x": "5"}}', Either(v=_IntX(x=1), w=_StrX(x="5")), []),
        ('{"v": {"x": true}}', Either(v=_BoolX(x=True)), []),
    ],
)
def test_a_union_of_objects_takes_the_one_reading_a_branch_accepts(
    arguments: str, expected: Either, rules: list[str]
) -> None:
    outcome = Toolset([Either]).validate(call("either", arguments))
    assert outcome.ok, outcome.errors
    assert outcome.model == expected
    assert [c.rule for c in outcome.coercions] == rules


class _Cat(BaseModel):
    kind: Literal["cat"]
    at: datetime


class _Dog(BaseModel):
    kind: Literal["dog"]
    at: datetime


class Adopt(BaseModel):
    """A union of models holding a timestamp."""

    pet: _Cat | _Dog


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "errors"),
    [
        (
            '{"pet": {"kind": "cat", "at": "2024-01-01T00:00:00"}}',
            [("/pet/at", "timezone_required")],
        ),
        ('{"pet": {"kind": "cow", "at": "2024-01-01T00:00:00Z"}}', [("/pet/kind", "enum")]),
        ('{"pet": 5}', [("/pet", "type")]),
    ],
)
def test_a_refusal_inside_a_union_member_is_the_only_error(
    precheck: bool, arguments: str, errors: list[tuple[str, str]]
) -> None:
    # The pre-check finds that no branch takes the member (its timestamp has no offset); the
    # refusal inside says what to fix, "expected an object" at the union would mislead.
    tools = Toolset([Adopt])
    asm = Assembler(tools=tools if precheck else None)
    asm.feed(0, id="c", name="adopt", arguments=arguments)
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert [(e.path, e.code) for e in outcome.errors] == errors


class Agenda(BaseModel):
    meeting: Meeting | None = None
    meetings: list[Meeting] | None = None
    pet: _Cat | _Dog | None = None


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("field", "sent", "path"),
    [
        ("meeting", {"start": "2024-01-01T10:00:00"}, "/meeting/start"),
        (
            "meetings",
            [{"start": "2024-01-01T10:00:00Z"}, {"start": "2024-01-01T10:00:00"}],
            "/meetings/1/start",
        ),
        ("pet", {"kind": "dog", "at": "2024-01-01T10:00:00"}, "/pet/at"),
    ],
)
def test_a_refusal_inside_a_json_string_in_a_union_names_the_value_inside(
    precheck: bool, field: str, sent: Any, path: str
) -> None:
    # Only one branch reads the string as its value: its refusal is what the model must fix,
    # as it is for the same string without the union, not "expected an object or null".
    tools = Toolset([Agenda])
    asm = Assembler(tools=tools if precheck else None)
    asm.feed(0, id="c", name="agenda", arguments=json.dumps({field: json.dumps(sent)}))
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert [(e.path, e.code) for e in outcome.errors] == [(path, "timezone_required")]
    assert [(c.path, c.rule) for c in outcome.coercions] == [(f"/{field}", "json_string")]


class Keyed(BaseModel):
    """Dicts whose keys are not strings."""

    by_id: dict[int, str] = {}
    by_ratio: dict[float, str] = {}
    by_flag: dict[bool, int] = {}
    by_price: dict[Decimal, int] = {}
    nested: list[dict[int, int]] | None = None
    by_name: dict[str, int] = {}


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "error", "hint_word"),
    [
        # Pydantic would read both as key 1, and one value would be lost.
        ('{"by_id": {"1": "a", "01": "b"}}', ("/by_id", "type", '"01"'), "integer"),
        ('{"by_id": {"1_000": "a"}}', ("/by_id", "type", '"1_000"'), "integer"),
        ('{"by_id": {" 1 ": "a"}}', ("/by_id", "type", '" 1 "'), "integer"),
        ('{"by_ratio": {"nan": "a"}}', ("/by_ratio", "type", '"nan"'), "number"),
        ('{"by_ratio": {"1e400": "a"}}', ("/by_ratio", "type", '"1e400"'), "number"),
        ('{"by_ratio": {"1": "a", "1.0": "b"}}', ("/by_ratio", "unique", '"1.0"'), '"1"'),
        ('{"by_flag": {"yes": 1}}', ("/by_flag", "type", '"yes"'), "true or false"),
        ('{"by_price": {"1.0": 1, "1.00": 2}}', ("/by_price", "unique", '"1.00"'), '"1.0"'),
        ('{"nested": [{"7": 1, "+7": 2}]}', ("/nested/0", "type", '"+7"'), "integer"),
    ],
)
def test_a_dict_key_must_be_written_as_its_type_and_name_one_entry(
    precheck: bool, arguments: str, error: tuple[str, str, str], hint_word: str
) -> None:
    tools = Toolset([Keyed])
    asm = Assembler(tools=tools if precheck else None)
    asm.feed(0, id="c", name="keyed", arguments=arguments)
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert not outcome.ok and [(e.path, e.code, e.got) for e in outcome.errors] == [error]
    assert hint_word in (outcome.errors[0].hint or "")


def test_dict_keys_written_as_their_type_are_taken() -> None:
    outcome = Toolset([Keyed]).validate(
        call(
            "keyed",
            '{"by_id": {"-5": "a", "12": "b"}, "by_ratio": {"1.5": "x", "2e3": "y"},'
            ' "by_flag": {"true": 1, "false": 0}, "by_price": {"19.99": 1},'
            ' "nested": [{"7": 1}], "by_name": {"01": 1, "1": 2}}',
        )
    )
    assert outcome.ok, outcome.errors
    assert outcome.model == Keyed(
        by_id={-5: "a", 12: "b"},
        by_ratio={1.5: "x", 2000.0: "y"},
        by_flag={True: 1, False: 0},
        by_price={Decimal("19.99"): 1},
        nested=[{7: 1}],
        by_name={"01": 1, "1": 2},
    )
    assert outcome.coercions == []


class _WholeNumbers(BaseModel):
    """Integer fields of the shapes a huge exponent once broke."""

    limit: int | None = None
    either: int | str = 0
    count: int = 0


_HUGE_TOOLS = Toolset(
    [
        _WholeNumbers,
        {
            "name": "plain",
            "parameters": {
                "type": "object",
                "properties": {
                    "page": {"type": "integer"},
                    "since": {"type": "integer", "x-unit": "unix-seconds"},
                    "at": {"type": "number", "x-unit": "unix-seconds"},
                    "pages": {"type": "array", "items": {"type": "integer"}},
                },
            },
        },
    ]
)


@pytest.mark.parametrize("number", ["1e1000000", "-1.0e1000000", "1e1000000000000"])
@pytest.mark.parametrize(
    ("tool", "template"),
    [
        ("whole_numbers", '{"limit": %s}'),
        ("whole_numbers", '{"either": %s}'),
        ("whole_numbers", '{"count": %s}'),
        ("whole_numbers", '{"count": "%s"}'),
        ("plain", '{"page": %s}'),
        ("plain", '{"since": %s}'),
        ("plain", '{"at": %s}'),
        ("plain", '{"pages": "[%s]"}'),
    ],
)
def test_a_huge_exponent_is_refused_not_raised(tool: str, template: str, number: str) -> None:
    # A few bytes of exponent once let `decimal.Overflow` escape validation (arithmetic past the
    # context's exponents), or made an `int` of 10**1000000 first: a minute of one worker.
    asm = Assembler(tools=_HUGE_TOOLS)
    asm.feed(0, id="c", name=tool, arguments=template % number)
    (call,) = asm.finish()
    outcome = _HUGE_TOOLS.validate(call)
    assert not outcome.ok
    assert outcome.kind == "model_error"
    field = template.split('"')[1]
    assert [e.path.split("/")[1] for e in outcome.errors] == [field]


class _Untyped(BaseModel):
    """Fields that take any data: Pydantic's `Any`, a bare `list` and a bare `dict`."""

    anything: Any = None
    items: list = []  # type: ignore[type-arg]
    mapping: dict = {}  # type: ignore[type-arg]


_UNTYPED_TOOLS = Toolset(
    [
        _Untyped,
        {
            "name": "plain",
            "parameters": {
                "type": "object",
                "properties": {"anything": {}, "items": {"type": "array"}},
            },
        },
    ]
)


@pytest.mark.parametrize("tool", ["untyped", "plain"])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"anything": 1e309}', "/anything"),
        ('{"anything": {"deep": [-1e400]}}', "/anything/deep/0"),
        ('{"anything": 1e-400}', "/anything"),
        ('{"items": [1, 1e999]}', "/items/1"),
    ],
)
def test_a_number_past_any_float_in_untyped_data_is_refused(
    tool: str, arguments: str, path: str
) -> None:
    # Data without a schema is what JSON reading makes of it: the tool once got `inf` or `0.0`
    # for what the model wrote.
    asm = Assembler(tools=_UNTYPED_TOOLS)
    asm.feed(0, id="c", name=tool, arguments=arguments)
    (call,) = asm.finish()
    outcome = _UNTYPED_TOOLS.validate(call)
    assert not outcome.ok
    assert [e.path for e in outcome.errors] == [path]
    assert outcome.errors[0].hint is not None and "too large or too small" in outcome.errors[0].hint


@pytest.mark.parametrize("tool", ["untyped", "plain"])
def test_untyped_data_keeps_numbers_a_float_holds(tool: str) -> None:
    asm = Assembler(tools=_UNTYPED_TOOLS)
    asm.feed(
        0, id="c", name=tool, arguments='{"anything": [1.5e3, 123456789012345678901234567890]}'
    )
    (call,) = asm.finish()
    outcome = _UNTYPED_TOOLS.validate(call)
    assert outcome.ok
    data = outcome.model.model_dump() if outcome.model is not None else outcome.value
    assert data["anything"] == [1500.0, 123456789012345678901234567890]


class Labels(BaseModel):
    """Label a document."""

    tags: set[str]
    codes: frozenset[int] = frozenset()
    maybe: set[str] | None = None
    groups: list[Labels] = []
    ordered: list[str] = []


@pytest.mark.parametrize("prechecked", [False, True])
def test_repeated_items_of_a_set_field_are_a_recorded_coercion(prechecked: bool) -> None:
    tools = Toolset([Labels])
    arguments = (
        '{"tags": ["a", "b", "a"], "codes": [1, 1.0, 2], "maybe": ["x", "x"],'
        ' "groups": [{"tags": ["q", "q"]}], "ordered": ["z", "z"]}'
    )
    if prechecked:
        asm = Assembler(tools=tools)
        asm.feed(0, id="call_1", name="labels", arguments=arguments)
        (done,) = asm.finish()
    else:
        done = call("labels", arguments)
    outcome = tools.validate(done)
    assert outcome.ok, outcome.errors
    assert outcome.model is not None
    assert outcome.model.tags == {"a", "b"}
    assert [(c.path, c.from_, c.to, c.rule) for c in outcome.coercions] == [
        ("/tags", '["a","b","a"]', '["a","b"]', "set_duplicates"),
        ("/codes/1", "1.0", "1", "integral_number"),
        ("/codes", "[1,1,2]", "[1,2]", "set_duplicates"),
        ("/maybe", '["x","x"]', '["x"]', "set_duplicates"),
        ("/groups/0/tags", '["q","q"]', '["q"]', "set_duplicates"),
    ]
    # A list keeps its repeats, and a set without repeats is no coercion.
    assert outcome.model.ordered == ["z", "z"]
    clean = tools.validate(call("labels", '{"tags": ["a", "b"], "ordered": ["z", "z"]}'))
    assert clean.ok and clean.coercions == []


class _Few(BaseModel):
    tags: set[int] = Field(max_length=1)
    counts: list[int] = Field(default=[], max_length=1)
    where: Annotated[dict[str, int], Field(max_length=1)] = {}


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("arguments", "path", "got"),
    [
        ('{"tags": [1, 1, 2]}', "/tags", "[1,1,2]"),
        ('{"tags": [1], "counts": ["1", "2"]}', "/counts", '["1","2"]'),
        ('{"tags": [1], "where": {"a": "1", "b": "2"}}', "/where", '{"a":"1","b":"2"}'),
    ],
)
def test_a_container_is_shown_as_the_model_sent_it(
    prechecked: bool, arguments: str, path: str, got: str
) -> None:
    # Pydantic's input is the value the coercions made (`[1,2]` once `set_duplicates` dropped
    # the repeat, `[1,2]` for `["1","2"]`): the model would not recognise its own value.
    tools = Toolset([_Few])
    if prechecked:
        asm = Assembler(tools=tools)
        asm.feed(0, id="call_1", name="few", arguments=arguments)
        (done,) = asm.finish()
    else:
        done = call("few", arguments)
    outcome = tools.validate(done)
    assert [(e.path, e.code, e.got) for e in outcome.errors] == [(path, "length", got)]


def test_repeated_items_of_a_set_field_are_refused_without_the_rule() -> None:
    tools = Toolset([Labels], coercion="none")
    outcome = tools.validate(call("labels", '{"tags": ["a", "b", "a", "b"]}'))
    assert not outcome.ok
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [
        ("/tags/2", "unique", "no repeated items; this item repeats item 0"),
        ("/tags/3", "unique", "no repeated items; this item repeats item 1"),
    ]


def test_a_plain_tool_unique_items_constraint_is_never_deduplicated() -> None:
    tool = {
        "name": "label",
        "parameters": {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
            },
        },
    }
    outcome = Toolset([tool]).validate(call("label", '{"tags": ["a", "a"]}'))
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [("/tags/1", "unique")]
    assert outcome.coercions == []


class Measure(BaseModel):
    """Record a measure."""

    x: int | float = Field(ge=0)
    maybe: int | float | None = None
    series: list[int | float] = []


@pytest.mark.parametrize(
    "arguments, path",
    [
        ('{"x": 1e400}', "/x"),
        ('{"x": 1, "maybe": -1e400}', "/maybe"),
        ('{"x": 1, "series": [1, 2.5e-400]}', "/series/1"),
    ],
)
def test_a_number_no_float_holds_is_refused_where_an_integer_is_allowed_too(
    arguments: str, path: str
) -> None:
    tools = Toolset([Measure])
    for done in (call("measure", arguments), _prechecked(tools, "measure", arguments)):
        outcome = tools.validate(done)
        assert not outcome.ok, outcome.model
        assert [(e.path, e.code) for e in outcome.errors] == [(path, "type")]
        assert "too large or too small" in (outcome.errors[0].hint or "")


@pytest.mark.parametrize("kind", ["list", "anyOf"])
def test_a_plain_integer_or_number_position_refuses_what_a_float_cannot_hold(kind: str) -> None:
    position: dict[str, Any] = (
        {"type": ["integer", "number"]}
        if kind == "list"
        else {"anyOf": [{"type": "integer"}, {"type": "number"}]}
    )
    tool = {"name": "t", "parameters": {"type": "object", "properties": {"x": position}}}
    tools = Toolset([tool])
    for text in ('{"x": 1e400}', '{"x": 1e-400}'):
        outcome = tools.validate(_prechecked(tools, "t", text))
        assert not outcome.ok and [e.path for e in outcome.errors] == ["/x"], text
    # Numbers a float holds, and an integer written out in full, stay as written.
    big = "9" * 400
    for text, expected in (('{"x": 1e20}', 1e20), (f'{{"x": {big}}}', int(big))):
        outcome = tools.validate(_prechecked(tools, "t", text))
        assert outcome.ok and outcome.value == {"x": expected}, text


@pytest.mark.parametrize(
    ("written", "number"),
    [("3.0", 3.0), ("0.0", 0.0), ("-0.0", -0.0), ("3", 3), ("1.5", 1.5)],
)
def test_a_number_string_for_an_int_or_float_union_is_read_as_written(
    written: str, number: float
) -> None:
    # `"3.0"` is `3` to the integer branch and `3.0` to the number branch: one number, not
    # two readings, so it is read as the raw `3.0` is (a float), not refused as ambiguous.
    arguments = json.dumps({"x": 1, "maybe": written, "series": [written]})
    plain = {
        "name": "m",
        "parameters": {
            "type": "object",
            "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "number"}]}},
        },
    }
    tools = Toolset([Measure, plain])
    for done in (call("measure", arguments), _prechecked(tools, "measure", arguments)):
        outcome = tools.validate(done)
        assert outcome.ok, outcome.errors
        assert isinstance(outcome.model, Measure)
        for got in (outcome.model.maybe, outcome.model.series[0]):
            assert type(got) is type(number) and repr(got) == repr(number)
        assert [(c.path, c.rule) for c in outcome.coercions] == [
            ("/maybe", "number_string"),
            ("/series/0", "number_string"),
        ]
    outcome = tools.validate(_prechecked(tools, "m", json.dumps({"n": written})))
    assert outcome.ok, outcome.errors
    assert outcome.value == {"n": number} and type(outcome.value["n"]) is type(number)


class _Sample(BaseModel):
    """Record a sample."""

    level: float = 1.0
    either: int | float = 1


@pytest.mark.parametrize("written", ["-0e0", "-0.000e+3", "1e0", "-0.0", "2.50", "3", "-5", "1E+2"])
@pytest.mark.parametrize("field", ["level", "either"])
def test_a_number_string_is_read_as_the_same_number_sent_bare(field: str, written: str) -> None:
    # `"-0e0"` was written back as the integer `-0` (a float's `0.0`, its sign lost), and
    # `"1e0"` for an `int | float` as the integer `1`, where the number sent bare is a float.
    bare = _Sample.model_validate_json(f'{{"{field}": {written}}}')
    outcome = Toolset([_Sample]).validate(call("sample", json.dumps({field: written})))
    assert outcome.ok and isinstance(outcome.model, _Sample), outcome.errors
    got, wanted = getattr(outcome.model, field), getattr(bare, field)
    assert type(got) is type(wanted) and repr(got) == repr(wanted)
    assert [(c.path, c.rule) for c in outcome.coercions] == [(f"/{field}", "number_string")]


def _prechecked(tools: Toolset, name: str, arguments: str) -> ToolCall:
    asm = Assembler(tools=tools, max_number_digits=1000)
    asm.feed(0, id="call_1", name=name, arguments=arguments)
    (done,) = asm.finish()
    return done


@pytest.mark.parametrize(
    "arguments", ['{"since": "2024-01-02T03:04:05Z"}', '{"since": 5}', '{"since": "x"}']
)
def test_a_unit_beside_a_union_with_a_boolean_branch_is_read_as_without_it(arguments: str) -> None:
    # The unit is marked on each branch of the union, and a `false` branch, no mapping, made
    # every call with a value there end `internal_error` (TypeError).
    def outcome(branches: list[Any]) -> Any:
        since = {"anyOf": branches, "x-unit": "unix-seconds"}
        schema = {"type": "object", "properties": {"since": since}}
        tools = Toolset([{"name": "plain", "parameters": schema}])
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="call_1", name="plain", arguments=arguments)
        (call,) = assembler.finish()
        return tools.validate(call)

    with_false = outcome([False, {"type": "integer"}])
    alone = outcome([{"type": "integer"}])
    assert with_false.error_type != "internal_error"
    assert (with_false.ok, with_false.value, [e.code for e in with_false.errors]) == (
        alone.ok,
        alone.value,
        [e.code for e in alone.errors],
    )
    assert [c.rule for c in with_false.coercions] == [c.rule for c in alone.coercions]
