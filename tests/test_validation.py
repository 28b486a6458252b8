# Chinese expectations use fullwidth punctuation on purpose (as payloads.MESSAGES does).
# ruff: noqa: RUF001
"""Toolset.validate: core errors, field errors from the schema, redaction, checks, plain tools."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from enum import Enum
from ipaddress import IPv4Interface
from typing import Annotated, Any, Literal
from uuid import UUID, uuid4

import pytest
from pydantic import (
    UUID4,
    AfterValidator,
    AliasChoices,
    AnyUrl,
    Base64Bytes,
    Base64UrlStr,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    FilePath,
    FutureDatetime,
    HttpUrl,
    IPvAnyAddress,
    IPvAnyNetwork,
    Json,
    NaiveDatetime,
    PastDate,
    SecretStr,
    Tag,
    UrlConstraints,
    WithJsonSchema,
    confloat,
    conint,
    constr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from toolwire import Assembler, ToolCall
from toolwire.toolset import Toolset
from toolwire.validation import MAX_ERRORS, BusinessRuleError, Outcome


def call(
    name: str | None, arguments: str, call_id: str = "call_1", *, tools: Toolset | None = None
) -> ToolCall:
    """A call assembled by the core, fed in 4-byte pieces."""
    asm = Assembler(tools=tools) if tools is not None else Assembler()
    asm.feed(0, id=call_id, name=name)
    for start in range(0, len(arguments), 4):
        asm.feed(0, arguments=arguments[start : start + 4])
    (done,) = asm.finish()
    return done


class Address(BaseModel):
    street: str
    city: str


class Booking(BaseModel):
    """Book a table."""

    model_config = ConfigDict(extra="forbid")

    guests: int = Field(ge=1, le=12, description="Number of guests")
    name: str = Field(json_schema_extra={"x-user-supplied": True})
    phone: str = Field(pattern=r"^\+\d{6,15}$", description="Phone in E.164, e.g. +33123456789")
    seating: Literal["inside", "terrace"] = "inside"
    address: Address | None = None
    note: str = Field(default="", max_length=20)
    password: SecretStr | None = None
    api_key: str = Field(default="", json_schema_extra={"x-secret": True})


TOOLS = Toolset([Booking])
GOOD = {"guests": 2, "name": "Ada", "phone": "+33123456789"}


def args(**changes: object) -> str:
    body = {**GOOD, **changes}
    return json.dumps({k: v for k, v in body.items() if v is not ...})


def test_valid_call() -> None:
    outcome = TOOLS.validate(call("booking", args()))
    assert outcome.ok and outcome.kind == "ok" and outcome.executable
    assert outcome.model == Booking(guests=2, name="Ada", phone="+33123456789")
    assert outcome.call_id == "call_1" and outcome.tool == "booking"
    assert outcome.errors == [] and outcome.coercions == [] and outcome.error_type == ""
    # Built without the dataclass `__init__`, it is still an equal, frozen dataclass.
    assert outcome == Outcome(
        ok=True, kind="ok", tool="booking", call_id="call_1", model=outcome.model
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.ok = False  # type: ignore[misc]
    assert dataclasses.replace(outcome, call_id="call_2").call_id == "call_2"


def test_valid_call_with_the_precheck() -> None:
    outcome = TOOLS.validate(call("booking", args(), tools=TOOLS))
    assert outcome.ok


@pytest.mark.parametrize(
    ("changes", "path", "code", "expected"),
    [
        ({"guests": 0}, "/guests", "range", ">= 1 and <= 12"),
        ({"guests": "many"}, "/guests", "type", "an integer"),
        ({"seating": "roof"}, "/seating", "enum", 'one of "inside", "terrace"'),
        ({"phone": "0612"}, "/phone", "pattern", "Phone in E.164, e.g. +33123456789"),
        ({"note": "x" * 30}, "/note", "length", "at most 20 characters"),
        ({"address": {"street": "Main"}}, "/address/city", "missing", "required: a string"),
        ({"address": "Main St"}, "/address", "type", "an object or null"),
        ({"extra": 1}, "/extra", "unknown_field", "no such field; allowed fields: guests"),
    ],
)
def test_field_errors_are_built_from_the_schema(
    changes: dict[str, object], path: str, code: str, expected: str
) -> None:
    outcome = TOOLS.validate(call("booking", args(**changes)))
    assert not outcome.ok and outcome.kind == "model_error" and outcome.retryable
    assert outcome.error_type == "validation"
    error = outcome.errors[0]
    assert (error.path, error.code) == (path, code)
    assert error.expected is not None and error.expected.startswith(expected)
    # Never Pydantic's English or internal names.
    text = json.dumps([e.as_payload() for e in outcome.errors])
    assert "Input should" not in text and "Booking" not in text and "pydantic" not in text


def test_unknown_field_hint_suggests_the_close_name() -> None:
    outcome = TOOLS.validate(call("booking", args(gusts=2, guests=...)))
    paths = [(e.path, e.code) for e in outcome.errors]
    assert paths == [("/guests", "missing"), ("/gusts", "unknown_field")]
    assert outcome.errors[1].hint == "did you mean guests?"


def test_missing_user_supplied_field_needs_clarification() -> None:
    outcome = TOOLS.validate(call("booking", args(name=..., guests=0)))
    assert outcome.kind == "needs_clarification" and not outcome.retryable
    assert outcome.ask_user == ["name"]
    assert outcome.errors[0].path == "/name" and outcome.errors[0].code == "missing"
    assert "ask the user" in outcome.instruction().lower()


def test_errors_are_capped_ranked_and_cut() -> None:
    outcome = TOOLS.validate(
        call(
            "booking",
            json.dumps(
                {
                    "guests": 99,
                    "phone": "x" * 500,
                    "seating": "roof",
                    "note": 5,
                    "address": 1,
                    "bogus": True,
                }
            ),
        )
    )
    assert len(outcome.errors) == MAX_ERRORS
    codes = [e.code for e in outcome.errors]
    # Missing and unknown fields first, then type and enum errors, then constraints.
    assert codes[:2] == ["missing", "unknown_field"]
    assert codes.index("type") < codes.index("enum")
    assert all(len(e.got or "") <= 200 for e in outcome.errors)


def test_long_values_are_cut_to_200_characters() -> None:
    outcome = TOOLS.validate(call("booking", args(phone="9" * 1000)))
    (error,) = outcome.errors
    assert error.got is not None and len(error.got) == 200 and error.got.endswith("…")


@pytest.mark.parametrize(
    ("changes", "path"),
    [({"password": 12345}, "/password"), ({"api_key": 987654}, "/api_key")],
)
def test_secret_values_are_redacted(changes: dict[str, object], path: str) -> None:
    outcome = TOOLS.validate(call("booking", args(**changes)))
    (error,) = outcome.errors
    assert error.path == path and error.got == "[redacted]"
    assert "12345" not in json.dumps(outcome.to_message(None, "openai-chat"))


@pytest.mark.parametrize("tools", [None, TOOLS])
@pytest.mark.parametrize("key", ["pasword", "apikey", "PASSWORD", "API_KEY"])
def test_a_misspelt_secret_field_keeps_its_value_hidden(tools: Toolset | None, key: str) -> None:
    outcome = TOOLS.validate(call("booking", args(**{key: "hunter2-s3cret"}), tools=tools))
    (error,) = (e for e in outcome.errors if e.code == "unknown_field")
    assert error.path == f"/{key}" and error.got == "[redacted]" and error.hint
    assert "hunter2" not in json.dumps(outcome.to_message(None, "openai-chat"))


class Credentials(BaseModel):
    token: SecretStr
    scope: str = "read"


class Connect(BaseModel):
    account: str
    credentials: Credentials


def test_a_misspelt_object_around_a_secret_shows_only_what_is_not_secret() -> None:
    tools = Toolset([Connect])
    arguments = '{"account": "acme", "Credentials": {"token": "hunter2-s3cret", "scope": "all"}}'
    outcome = tools.validate(call("connect", arguments, tools=tools))
    (error,) = (e for e in outcome.errors if e.code == "unknown_field")
    assert error.got == '{"token":"[redacted]","scope":"all"}'


@pytest.mark.parametrize("precheck", [False, True])
def test_redaction_hook_sees_every_shown_value(precheck: bool) -> None:
    seen: list[tuple[str, str]] = []

    def redact(path: str, text: str) -> str:
        seen.append((path, text))
        return text.replace("0612", "****")

    toolset = Toolset([Booking], redact=redact)
    done = call("booking", args(phone="0612"), tools=toolset if precheck else None)
    outcome = toolset.validate(done)
    assert outcome.errors[0].got == '"****"'
    # The value for the pre-check's finding, then for Pydantic's: shown alike, as JSON.
    assert seen == [("/phone", '"0612"'), ("/phone", '"0612"')]
    assert "0612" not in json.dumps(outcome.to_message(done))


def test_chinese_messages() -> None:
    toolset = Toolset([Booking], lang="zh")
    outcome = toolset.validate(call("booking", args(seating="roof")))
    assert outcome.errors[0].expected == '以下值之一："inside", "terrace"'
    content = json.loads(outcome.to_message(None)["content"])
    assert content["instruction"].startswith("请用修正后的参数再次调用")


def test_custom_validator_message_becomes_a_hint() -> None:
    class Transfer(BaseModel):
        iban: str

        @field_validator("iban")
        @classmethod
        def checksum(cls, value: str) -> str:
            if not value.startswith("FR"):
                raise ValueError("only French IBANs are accepted")
            return value

    outcome = Toolset([Transfer]).validate(call("transfer", '{"iban": "DE12"}'))
    (error,) = outcome.errors
    assert error.code == "value" and error.hint == "only French IBANs are accepted"


# ---------------------------------------------------------------------------------------------
# Unions


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Adopt(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    size: int | str = 0
    home: Address | Cat | None = None


ADOPT = Toolset([Adopt])


def test_discriminated_union_errors_point_into_the_chosen_branch() -> None:
    outcome = ADOPT.validate(call("adopt", '{"pet": {"kind": "cat", "lives": "nine"}}'))
    (error,) = outcome.errors
    assert (error.path, error.code, error.expected) == ("/pet/lives", "type", "an integer")


def test_bad_discriminator_tag() -> None:
    outcome = ADOPT.validate(call("adopt", '{"pet": {"kind": "cow"}}'))
    (error,) = outcome.errors
    assert (error.path, error.code) == ("/pet/kind", "enum")
    assert error.expected == 'one of "cat", "dog"' and error.got == '"cow"'


class Channel(str, Enum):
    email = "email"
    sms = "sms"


class EmailTarget(BaseModel):
    channel: Literal[Channel.email]
    address: str


class SmsTarget(BaseModel):
    channel: Literal[Channel.sms]
    phone: str


class Notify(BaseModel):
    target: Annotated[EmailTarget | SmsTarget, Field(discriminator="channel")]


@pytest.mark.parametrize("tools", [None, Toolset([Notify])])
def test_enum_member_tags_are_listed_as_the_values_the_model_sends(
    tools: Toolset | None,
) -> None:
    # Pydantic's own list of tags is their Python reprs (`<Channel.email: 'email'>`).
    arguments = '{"target": {"channel": "fax", "phone": "+15551234"}}'
    outcome = Toolset([Notify]).validate(call("notify", arguments, tools=tools))
    (error,) = outcome.errors
    assert (error.path, error.code) == ("/target/channel", "enum")
    assert error.expected == 'one of "email", "sms"' and error.got == '"fax"'


class Bird(BaseModel):
    kind: Literal["bird"] = Field(alias="petKind")
    wings: int = 2


class Fish(BaseModel):
    kind: Literal["fish", "eel"] = Field(alias="petKind")


class Aquarium(BaseModel):
    pets: list[Annotated[Bird | Fish, Field(discriminator="kind")]]


@pytest.mark.parametrize("tools", [None, Toolset([Aquarium])])
@pytest.mark.parametrize(
    ("pet", "path", "code", "expected"),
    [
        # Pydantic names an aliased tag `'kind' | 'petKind'`: the key the model must send is
        # the alias, and a path naming both keys at once points nowhere.
        ({"petKind": "cow"}, "/pets/0/petKind", "enum", 'one of "bird", "fish", "eel"'),
        # An object without its tag: the tag is what is missing, not the object.
        ({"wings": 2}, "/pets/0/petKind", "missing", 'required: one of "bird", "fish", "eel"'),
    ],
)
def test_a_bad_or_missing_tag_is_named_by_the_key_to_send(
    tools: Toolset | None, pet: dict[str, object], path: str, code: str, expected: str
) -> None:
    arguments = json.dumps({"pets": [pet]})
    outcome = Toolset([Aquarium]).validate(call("aquarium", arguments, tools=tools))
    (error,) = outcome.errors
    assert (error.path, error.code, error.expected) == (path, code, expected)


class Version1(BaseModel):
    v: Literal[1]
    size: int


class Version2(BaseModel):
    v: Literal[2]
    name: str


class Versioned(BaseModel):
    spec: Annotated[Version1 | Version2, Field(discriminator="v")]
    extra: list[Annotated[Version1 | Version2, Field(discriminator="v")]] | None = None


VERSIONED = Toolset([Versioned])


@pytest.mark.parametrize("tools", [None, VERSIONED])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"spec": {"v": 1, "size": "big"}}', "/spec/size"),
        ('{"spec": {"v": 2, "name": "a"}, "extra": [{"v": 1, "size": "big"}]}', "/extra/0/size"),
    ],
)
def test_an_integer_tag_is_no_index_in_the_path(
    tools: Toolset | None, arguments: str, path: str
) -> None:
    # Pydantic's `loc` holds the tag (`("spec", 1, "size")`), as it holds a string tag.
    outcome = VERSIONED.validate(call("versioned", arguments, tools=tools))
    assert [(e.path, e.code, e.expected, e.got) for e in outcome.errors] == [
        (path, "type", "an integer", '"big"')
    ]


@pytest.mark.parametrize("tools", [None, VERSIONED])
@pytest.mark.parametrize(("tag", "got"), [("3", "3"), ('"1"', '"1"'), ("2.5", "2.5")])
def test_an_unknown_tag_is_shown_as_the_model_wrote_it(
    tools: Toolset | None, tag: str, got: str
) -> None:
    arguments = f'{{"spec": {{"v": {tag}, "size": 1}}}}'
    outcome = VERSIONED.validate(call("versioned", arguments, tools=tools))
    assert [(e.path, e.code, e.expected, e.got) for e in outcome.errors] == [
        ("/spec/v", "enum", "one of 1, 2", got)
    ]


class _Card(BaseModel):
    kind: Literal["card"]
    pin: SecretStr


class _Cash(BaseModel):
    kind: Literal["cash"]
    amount: int


class _Hidden(BaseModel):
    kind: Annotated[Literal["code"], Field(json_schema_extra={"x-secret": True})]


class _Pay(BaseModel):
    pay: Annotated[_Card | _Cash, Field(discriminator="kind")]
    odd: Annotated[_Cash | _Hidden, Field(discriminator="kind")] | None = None
    vault: (
        Annotated[_Card | _Cash, Field(discriminator="kind", json_schema_extra={"x-secret": True})]
        | None
    ) = None


PAY = Toolset([_Pay])


@pytest.mark.parametrize("tools", [None, PAY])
@pytest.mark.parametrize(
    ("arguments", "path", "got"),
    [
        ('{"pay": {"kind": "cheque", "pin": "1234"}}', "/pay/kind", '"cheque"'),
        ('{"pay": {"kind": 3, "amount": 1}}', "/pay/kind", "3"),
        # A tag a branch itself declares secret, or a union under a secret field, stays hidden.
        ('{"pay": {"kind": "cash", "amount": 1}, "odd": {"kind": "x"}}', "/odd/kind", "[redacted]"),
        (
            '{"pay": {"kind": "cash", "amount": 1}, "vault": {"kind": "x"}}',
            "/vault/kind",
            "[redacted]",
        ),
    ],
)
def test_an_unknown_tag_is_no_secret_for_a_secret_beside_it(
    tools: Toolset | None, arguments: str, path: str, got: str
) -> None:
    # Another member of a branch (`pin`) is secret; the tag is not, and the model must see it
    # to correct it.
    outcome = PAY.validate(call("pay", arguments, tools=tools))
    assert [(e.path, e.code, e.got) for e in outcome.errors] == [(path, "enum", got)]


def test_untagged_union_type_error_is_one_error() -> None:
    outcome = ADOPT.validate(call("adopt", '{"pet": {"kind": "dog", "good": true}, "size": 1.5}'))
    (error,) = outcome.errors
    assert (error.path, error.code, error.expected) == ("/size", "type", "an integer or a string")


class Pin(BaseModel):
    lat: float


class Refs(BaseModel):
    order: constr(pattern=r"^ORD-[0-9]+$") | constr(max_length=3) = "ORD-1"
    near: Pin | constr(max_length=3) = "x"
    level: conint(ge=5) | conint(le=1) | str = 0
    step: confloat(multiple_of=5) | confloat(ge=100) = 100
    codes: list[conint(ge=5) | conint(le=1)] = []
    maybe: constr(pattern=r"^ORD-[0-9]+$") | constr(max_length=3) | None = None


@pytest.mark.parametrize("tools", [None, Toolset([Refs])])
@pytest.mark.parametrize(
    ("arguments", "path", "code", "expected"),
    [
        (
            '{"order": "order 44"}',
            "/order",
            "invalid",
            "a string matching ^ORD-[0-9]+$ or a string (at most 3 characters)",
        ),
        (
            '{"level": 3}',
            "/level",
            "range",
            "an integer (>= 5) or an integer (<= 1) or a string",
        ),
        ('{"step": 7}', "/step", "invalid", "a number (a multiple of 5) or a number (>= 100)"),
        ('{"codes": [6, 3]}', "/codes/1", "range", "an integer (>= 5) or an integer (<= 1)"),
        (
            '{"maybe": "order 44"}',
            "/maybe",
            "invalid",
            "a string matching ^ORD-[0-9]+$ or a string (at most 3 characters) or null",
        ),
        # Judged as Pydantic read it, once coerced; shown as the model wrote it.
        ('{"codes": ["3"]}', "/codes/0", "range", "an integer (>= 5) or an integer (<= 1)"),
        # Pydantic's tag of a constrained branch beside a model is no field of the model.
        ('{"near": "toolong"}', "/near", "length", "an object or a string (at most 3 characters)"),
        # A value no branch's type fits is still one type error.
        ('{"level": 3.5}', "/level", "type", "an integer or a string"),
        ('{"near": 5}', "/near", "type", "an object or a string"),
    ],
)
def test_union_branches_refusing_by_different_rules_each_say_what_they_need(
    tools: Toolset | None, arguments: str, path: str, code: str, expected: str
) -> None:
    # Pydantic reports each branch's refusal apart (`('order', 'constrained-str')` twice):
    # two errors at one field read as if the value had to meet both rules, and a range
    # `>= 5 and <= 1` that no number meets. One error says what each branch needs, as for a
    # plain tool's union.
    outcome = Toolset([Refs]).validate(call("refs", arguments, tools=tools))
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [(path, code, expected)]
    sent = json.loads(arguments)
    for part in path.split("/")[1:]:
        sent = sent[int(part)] if isinstance(sent, list) else sent[part]
    assert outcome.errors[0].got == json.dumps(sent)


def test_union_branches_refusing_by_different_rules_are_described_in_chinese() -> None:
    outcome = Toolset([Refs], lang="zh").validate(call("refs", '{"order": "order 44"}'))
    assert [(e.code, e.expected) for e in outcome.errors] == [
        ("invalid", "匹配 ^ORD-[0-9]+$ 的字符串 或 字符串（最多 3 个字符）")
    ]


def test_union_of_models_reports_the_closest_branch() -> None:
    outcome = ADOPT.validate(
        call("adopt", '{"pet": {"kind": "dog", "good": true}, "home": {"street": "Main"}}')
    )
    assert [(e.path, e.code) for e in outcome.errors] == [("/home/city", "missing")]


class Keep(BaseModel):
    kind: Literal["cat", "kitten"]
    lives: int


class Walk(BaseModel):
    kind: Literal["dog"]
    good: bool


class Shelter(BaseModel):
    """An untagged union (no discriminator) of models told apart by one field."""

    pet: Keep | Walk | None = None
    pets: list[Keep | Walk] = []


@pytest.mark.parametrize("tools", [None, Toolset([Shelter])])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"pet": {"kind": "cow"}}', "/pet/kind"),
        ('{"pets": [{"kind": "cat", "lives": 9}, {"kind": "cow"}]}', "/pets/1/kind"),
    ],
)
def test_an_untagged_union_tie_on_its_tag_names_the_tag_with_every_branchs_values(
    tools: Toolset | None, arguments: str, path: str
) -> None:
    # Both branches fail alike (the tag, and a required field that depends on it): reporting
    # the first branch's errors told the model to send "cat" and "lives" when "dog" was allowed.
    outcome = Toolset([Shelter]).validate(call("shelter", arguments, tools=tools))
    (error,) = outcome.errors
    assert (error.path, error.code, error.got) == (path, "enum", '"cow"')
    assert error.expected == 'one of "cat", "kitten", "dog"'


def test_an_untagged_union_closer_to_one_branch_keeps_that_branchs_errors() -> None:
    outcome = Toolset([Shelter]).validate(call("shelter", '{"pet": {"kind": "dog", "good": 3}}'))
    assert [(e.path, e.code) for e in outcome.errors] == [("/pet/good", "type")]
    outcome = Toolset([Shelter]).validate(call("shelter", '{"pet": {"kind": "cow", "lives": 1}}'))
    assert [(e.path, e.expected) for e in outcome.errors] == [
        ("/pet/kind", 'one of "cat", "kitten"')
    ]


# ---------------------------------------------------------------------------------------------
# Core errors become outcomes without running Pydantic


def test_truncated_call() -> None:
    asm = Assembler()
    asm.feed(0, id="c", name="booking", arguments='{"guests": 2, "name": "Ad')
    (truncated,) = asm.finish()
    assert truncated.error is not None and truncated.error.kind == "truncated"
    outcome = TOOLS.validate(truncated)
    assert outcome.kind == "model_error" and outcome.retryable
    assert outcome.error_type == "truncated"
    assert outcome.hint is not None and "max_tokens" in outcome.hint


@pytest.mark.parametrize(
    ("arguments", "error_type"),
    [
        ('{"guests": 2}{"guests": 3}', "invalid_json"),
        ('{"guests": 2} trailing', "invalid_json"),
        ('{"guests": 01}', "invalid_json"),
        ('{"guests": 1, "guests": 2}', "invalid_json"),
        ("[1, 2]", "not_object"),
        ("42", "not_object"),
    ],
)
def test_grammar_and_shape_errors(arguments: str, error_type: str) -> None:
    outcome = TOOLS.validate(call("booking", arguments))
    assert not outcome.ok and outcome.retryable
    assert outcome.error_type == error_type
    # A repeated key is the one such error with a field to name (the member written twice).
    named = [("/guests", "unique")] if 'guests": 1, "guests' in arguments else []
    assert [(e.path, e.code) for e in outcome.errors] == named


def test_filtered_call_is_not_executable_and_not_retryable() -> None:
    asm = Assembler()
    asm.feed(0, id="c", name="booking", arguments='{"guests": 2')
    asm.stop("content_filter")
    (stopped,) = asm.finish()
    outcome = TOOLS.validate(stopped)
    assert outcome.error_type == "filtered"
    assert not outcome.ok and not outcome.executable and not outcome.retryable
    message = outcome.to_message(stopped, "anthropic")
    assert message["is_error"] is True


def test_missing_name() -> None:
    outcome = TOOLS.validate(call(None, args()))
    assert outcome.error_type == "missing_name" and outcome.retryable
    assert outcome.message is not None and '"booking"' in outcome.message


def test_empty_arguments_for_a_tool_without_parameters() -> None:
    toolset = Toolset([{"name": "ping", "description": "Ping."}])
    assert toolset.validate(call("ping", "")).ok


@dataclass(frozen=True)
class SchemaError:
    """A stand-in for a pre-check violation, to pin the schema_violation conversion."""

    kind: str = "schema_violation"
    message: str = "arguments do not match the tool schema"
    offset: int = 12
    path: str = "/seating"
    keyword: str | None = "enum"
    expected: str | None = 'one of "inside", "terrace"'
    got: str | None = '"roof"'


@dataclass(frozen=True)
class FakeCall:
    arguments: str
    error: SchemaError | None
    name: str | None = "booking"
    id: str | None = "c9"
    ordinal: int = 0
    index: int | None = 0
    value: object = None


def test_schema_violation_from_the_precheck_becomes_a_field_error() -> None:
    outcome = TOOLS.validate(FakeCall(args(seating="roof"), SchemaError()))
    (error,) = outcome.errors
    assert (error.path, error.code, error.got) == ("/seating", "enum", '"roof"')
    assert error.expected == 'one of "inside", "terrace"'


def test_schema_violation_that_coercion_fixes() -> None:
    violation = SchemaError(path="/guests", keyword="type", expected="integer", got='"2"')
    outcome = TOOLS.validate(FakeCall(args(guests="2"), violation))
    assert outcome.ok and outcome.model is not None and outcome.model.guests == 2
    assert [c.rule for c in outcome.coercions] == ["number_string"]


# ---------------------------------------------------------------------------------------------
# Business checks


def test_business_check_returning_reasons() -> None:
    toolset = Toolset(
        [Booking],
        checks={
            "booking": lambda b: "we are full on the terrace" if b.seating == "terrace" else None
        },
    )
    assert toolset.validate(call("booking", args())).ok
    outcome = toolset.validate(call("booking", args(seating="terrace")))
    assert outcome.kind == "business_error" and not outcome.retryable
    assert outcome.error_type == "business_rule"
    assert outcome.errors[0].hint == "we are full on the terrace"


def test_business_check_raising() -> None:
    def check(booking: Booking) -> None:
        if booking.guests > 8:
            raise BusinessRuleError("groups above 8 must call", "deposit required")

    toolset = Toolset([Booking], checks={"booking": check})
    outcome = toolset.validate(call("booking", args(guests=10)))
    assert outcome.kind == "business_error"
    assert [e.hint for e in outcome.errors] == ["groups above 8 must call", "deposit required"]


def test_business_rejection_without_reasons_or_with_non_text_ones() -> None:
    # Raised bare, the model reads a whole sentence, not "rejected: " and nothing; a reason
    # that is not a str is written as text, so the raise itself cannot fail.
    def check(booking: Booking) -> None:
        if booking.guests > 8:
            raise BusinessRuleError()
        if booking.guests > 4:
            raise BusinessRuleError(8, "  ")  # type: ignore[arg-type]

    toolset = Toolset([Booking], checks={"booking": check})
    bare = toolset.validate(call("booking", args(guests=10)))
    assert bare.kind == "business_error" and bare.errors == []
    assert bare.message == "The request was rejected."
    numbered = toolset.validate(call("booking", args(guests=6)))
    assert [e.hint for e in numbered.errors] == ["8"]
    assert numbered.message == "The request was rejected: 8"


@pytest.mark.parametrize("verdict", [False, True, 0, {"guests": "too many"}])
def test_a_check_returning_no_reasons_contract_does_not_pass_the_call(verdict: object) -> None:
    # A predicate's `False`, read as "no reasons", passed the call its check refused; `True`
    # failed inside; a dict was read as a list of its keys.
    toolset = Toolset([Booking], checks={"booking": lambda _: verdict})
    outcome = toolset.validate(call("booking", args()))
    assert not outcome.ok and outcome.error_type == "internal_error"
    assert not outcome.retryable and outcome.errors == []


def test_one_reason_given_to_business_failure_as_a_string_is_one_reason() -> None:
    # It was read as a list of its characters: "The request was rejected: d; a; i; l; y".
    outcome = Outcome.business_failure(call("booking", args()), "booking", "daily limit")
    assert [e.hint for e in outcome.errors] == ["daily limit"]
    assert outcome.message == "The request was rejected: daily limit"


@pytest.mark.parametrize(
    ("options", "says"),
    [({"error_type": "quota"}, "no message for error_type 'quota'"), ({"lang": "fr"}, "lang")],
)
def test_a_failure_built_with_an_unknown_slug_or_language_says_so(
    options: dict[str, Any], says: str
) -> None:
    # An unknown slug raised a bare KeyError('msg.quota'); an unknown language wrote English.
    given: dict[str, Any] = {"error_type": "tool_failed", **options}
    with pytest.raises(ValueError, match=says):
        Outcome.failure(call("booking", args()), "booking", **given)


# ---------------------------------------------------------------------------------------------
# Plain-dict tools use jsonschema


def _business_day(day: str) -> str:
    if day.endswith(("-06", "-07")):
        raise PydanticCustomError("weekend", "{day} is not a business day", {"day": day})
    return day


class BookSlot(BaseModel):
    day: Annotated[str, AfterValidator(_business_day)]


def test_a_custom_error_message_becomes_a_hint() -> None:
    # A type Pydantic does not know is the validator author's, as a ValueError is.
    outcome = Toolset([BookSlot]).validate(call("book_slot", '{"day": "2024-01-06"}'))
    (error,) = outcome.errors
    assert (error.code, error.hint) == ("value", "2024-01-06 is not a business day")


def test_a_custom_error_message_is_redacted_as_the_value_is() -> None:
    def redact(path: str, words: str) -> str:
        return "[hidden]" if path == "/day" else words

    outcome = Toolset([BookSlot], redact=redact).validate(
        call("book_slot", '{"day": "2024-01-06"}')
    )
    (error,) = outcome.errors
    assert error.got == "[hidden]" and error.hint == "[redacted] is not a business day"


SEARCH = {
    "name": "search",
    "description": "Search.",
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 2},
            "limit": {"type": "integer", "maximum": 50},
            "sort": {"enum": ["new", "top"]},
            "token": {"type": "string", "x-secret": True},
            "owner": {"type": "string", "x-user-supplied": True},
        },
        "required": ["query"],
    },
}


def test_plain_tool_valid_and_coerced() -> None:
    toolset = Toolset([SEARCH])
    outcome = toolset.validate(call("search", '{"query": "rust", "limit": "10", "sort": "TOP"}'))
    assert outcome.ok and outcome.model is None
    assert outcome.value == {"query": "rust", "limit": 10, "sort": "top"}
    assert [c.rule for c in outcome.coercions] == ["number_string", "enum_case"]


def test_plain_tool_optional_null_means_absent() -> None:
    outcome = Toolset([SEARCH]).validate(call("search", '{"query": "rust", "limit": null}'))
    assert outcome.ok and outcome.value == {"query": "rust"}


@pytest.mark.parametrize(
    ("arguments", "path", "code"),
    [
        ('{"limit": 5}', "/query", "missing"),
        ('{"query": "r"}', "/query", "length"),
        ('{"query": "rust", "limit": 99}', "/limit", "range"),
        ('{"query": "rust", "sort": "old"}', "/sort", "enum"),
        ('{"query": "rust", "x": 1}', "/x", "unknown_field"),
    ],
)
def test_plain_tool_errors(arguments: str, path: str, code: str) -> None:
    outcome = Toolset([SEARCH]).validate(call("search", arguments))
    assert not outcome.ok
    assert (outcome.errors[0].path, outcome.errors[0].code) == (path, code)


def test_plain_tool_secret_and_user_supplied() -> None:
    toolset = Toolset([{**SEARCH, "parameters": {**SEARCH["parameters"], "required": ["owner"]}}])
    outcome = toolset.validate(call("search", '{"token": 12345}'))
    assert outcome.kind == "needs_clarification" and outcome.ask_user == ["owner"]
    token_error = next(e for e in outcome.errors if e.path == "/token")
    assert token_error.got == "[redacted]"


@pytest.mark.parametrize("precheck", [True, False])
def test_secret_string_length_is_counted_in_characters(precheck: bool) -> None:
    class Login(BaseModel):
        password: SecretStr = Field(min_length=8, max_length=12)
        codes: list[str] = Field(default=[], max_length=2)

    toolset = Toolset([Login])
    arguments = '{"password": "hunter2-is-too-long", "codes": ["a", "b", "c"]}'
    if precheck:
        asm = Assembler(tools=toolset)
        asm.feed(0, id="c", name="login", arguments=arguments)
        (done,) = asm.finish()
        outcome = toolset.validate(done)
    else:
        outcome = toolset.validate(call("login", arguments))
    by_path = {e.path: e for e in outcome.errors}
    assert by_path["/password"].expected == "at least 8 characters and at most 12 characters"
    assert by_path["/password"].got == "[redacted]"
    if "/codes" in by_path:
        assert by_path["/codes"].expected == "at most 2 items"


def test_outcome_success_is_the_dataclass_outcome_with_every_field() -> None:
    outcome = TOOLS.validate(call("booking", args()))
    assert outcome.ok and outcome.model is not None
    built = Outcome(
        ok=True,
        kind="ok",
        tool=outcome.tool,
        call_id=outcome.call_id,
        model=outcome.model,
        coercions=outcome.coercions,
    )
    assert outcome == built
    assert dataclasses.asdict(outcome).keys() == dataclasses.asdict(built).keys()
    with pytest.raises(AttributeError):
        outcome.kind = "model_error"  # type: ignore[misc]


def test_a_fast_built_outcome_behaves_like_any_other() -> None:
    # `success_outcome` builds the instance as another class and then assigns `__class__`.
    outcome = TOOLS.validate(call("booking", args()))
    assert type(outcome) is Outcome
    assert pickle.loads(pickle.dumps(outcome)) == outcome
    changed = dataclasses.replace(outcome, hint="h")
    assert changed.hint == "h" and changed.model == outcome.model
    assert repr(outcome).startswith("Outcome(ok=True, kind='ok'")

    @dataclass(frozen=True)
    class Tagged(Outcome):
        tag: str = "t"

    @dataclass(frozen=True, slots=True)
    class Slotted(Outcome):
        extra: int = 1

    for cls in (Tagged, Slotted):
        sub = cls.success(call("booking", args()), "booking", lang="fr")
        assert type(sub) is cls and sub.ok and sub.lang == "fr" and sub.errors == []


def test_outcome_is_frozen() -> None:
    outcome = TOOLS.validate(call("booking", args()))
    with pytest.raises(AttributeError):
        outcome.ok = False  # type: ignore[misc]
    assert isinstance(outcome, Outcome)


@pytest.mark.parametrize(
    "arguments",
    [
        args(),
        args(guests="2"),
        args(guests=40, seating="roof"),
        args(nickname="x"),
        "",
        "  \n",
        json.dumps({"guests": 2, "name": "Ada", "phone": "+33123456789", "note": "é" * 30}),
    ],
)
def test_toolset_validate_agrees_with_the_tool_validator(arguments: str) -> None:
    # `Toolset.validate` settles most calls inline; it must say what the tool's full
    # validator says, for assembled calls and for look-alike calls without raw bytes.
    # (A call with a core error is answered by the toolset itself, before any validator.)
    validator = TOOLS.tool("booking").validator
    assembled = call("booking", arguments)
    assert assembled.error is None
    assert TOOLS.validate(assembled) == validator.validate(assembled)
    lookalike = FakeCall(assembled.arguments, None, value=assembled.value)
    assert TOOLS.validate(lookalike) == validator.validate(lookalike)


def test_successful_outcomes_do_not_share_their_lists() -> None:
    first, second = (TOOLS.validate(call("booking", args())) for _ in range(2))
    assert first == second
    first.errors.append(first.errors[0] if first.errors else None)  # type: ignore[arg-type]
    first.coercions.clear()
    first.ask_user.append("x")
    assert second.errors == [] and second.ask_user == []
    assert Outcome.success(call("booking", args()), "booking").errors == []


class StrictAddress(BaseModel):
    model_config = ConfigDict(extra="forbid")
    city: str


class Profile(BaseModel):
    home: StrictAddress | None = None
    status: Literal["active", "away"] | None = None


@pytest.mark.parametrize("precheck", [False, True])
def test_unknown_field_inside_an_optional_model_names_its_own_path(precheck: bool) -> None:
    # Optional[Model] is `anyOf: [object, null]` and Pydantic puts no union tag in `loc`: the
    # unknown key is a key of the object branch, not a tag to skip.
    tools = Toolset([Profile])
    arguments = '{"home": {"city": "Oslo", "zip_code": "0150"}, "status": "urgent"}'
    outcome = tools.validate(call("profile", arguments, tools=tools if precheck else None))
    assert not outcome.ok
    by_path = {e.path: e for e in outcome.errors}
    assert set(by_path) == {"/home/zip_code", "/status"}
    unknown = by_path["/home/zip_code"]
    assert unknown.code == "unknown_field" and unknown.got == '"0150"'
    assert unknown.expected is not None and "city" in unknown.expected
    assert by_path["/status"].got == '"urgent"'


class Shipping(BaseModel):
    city: str
    days: int = 3
    speed: Literal["slow", "fast"] = "slow"


class Pickup(BaseModel):
    store: str
    days: int = 1


class Parcel(BaseModel):
    kind: Literal["parcel"]
    weight: int


class Letter(BaseModel):
    kind: Literal["letter"]
    pages: int = 1


class Leg(BaseModel):
    ship_to: Shipping | None = None


class Order(BaseModel):
    ship_to: Shipping | None = None
    stops: list[Shipping] | None = None
    by_name: dict[str, Shipping] | None = None
    where: Shipping | Pickup | None = None
    item: Annotated[Parcel | Letter, Field(discriminator="kind")] | None = None
    legs: list[Leg] | None = None
    place_or_count: Shipping | int = 0


def _place(**fields: Any) -> dict[str, Any]:
    return {"city": "Oslo", **fields}


# Each shape: the arguments, given the members to add to the object inside the union (the
# unknown field, or none), where that object is, and the coercion the call needs.
_UNION_SHAPES: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str, str]] = {
    "optional": (lambda x: {"ship_to": _place(days="2", **x)}, "/ship_to", "number_string"),
    "optional_enum": (lambda x: {"ship_to": _place(speed="Fast", **x)}, "/ship_to", "enum_case"),
    "optional_json_string": (
        lambda x: {"ship_to": json.dumps(_place(**x))},
        "/ship_to",
        "json_string",
    ),
    "optional_list": (
        lambda x: {"stops": [_place(), _place(days="2", **x)]},
        "/stops/1",
        "number_string",
    ),
    "optional_list_json_string": (
        lambda x: {"stops": json.dumps([_place(**x)])},
        "/stops/0",
        "json_string",
    ),
    "optional_dict": (
        lambda x: {"by_name": {"home": _place(days="2", **x)}},
        "/by_name/home",
        "number_string",
    ),
    "union_first": (lambda x: {"where": _place(days="2", **x)}, "/where", "number_string"),
    "union_second": (
        lambda x: {"where": {"store": "Oslo S", "days": "2", **x}},
        "/where",
        "number_string",
    ),
    "discriminated": (
        lambda x: {"item": {"kind": "parcel", "weight": "2", **x}},
        "/item",
        "number_string",
    ),
    "nested": (
        lambda x: {"legs": [{"ship_to": _place(days="2", **x)}]},
        "/legs/0/ship_to",
        "number_string",
    ),
    "model_or_int_json_string": (
        lambda x: {"place_or_count": json.dumps(_place(**x))},
        "/place_or_count",
        "json_string",
    ),
}


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize("shape", list(_UNION_SHAPES))
def test_an_unknown_field_in_a_union_member_is_refused_beside_a_coercion(
    precheck: bool, shape: str
) -> None:
    # The coercion changes the union's value, so the pre-check's finding about it no longer
    # stands and the coerced value is read again: that reading must go into the branch the
    # object belongs to, or Pydantic's `extra="ignore"` drops the field and the call runs.
    arguments, path, rule = _UNION_SHAPES[shape]
    tools = Toolset([Order])
    checked = tools if precheck else None
    outcome = tools.validate(
        call("order", json.dumps(arguments({"signature_required": True})), tools=checked)
    )
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [
        (f"{path}/signature_required", "unknown_field")
    ]
    # Without the unknown field the same call is taken, the coercion recorded.
    taken = tools.validate(call("order", json.dumps(arguments({})), tools=checked))
    assert taken.ok, taken.errors
    assert rule in [c.rule for c in taken.coercions]


class Full(BaseModel):
    x: int
    y: str


class Short(BaseModel):
    x: int


class Either(BaseModel):
    v: Full | Short


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize(
    ("v", "errors", "taken"),
    [
        # The branch that defines `y` refuses its value, so Pydantic takes the other one and
        # drops `y`: the coerced value fits no branch of the published schema.
        ({"x": "1", "y": 5}, [("/v/y", "unknown_field")], None),
        ({"x": "1", "y": "a"}, [], Full(x=1, y="a")),
        ({"x": "1"}, [], Short(x=1)),
    ],
)
def test_a_field_a_union_branch_refuses_is_not_dropped_for_another_branch(
    precheck: bool, v: dict[str, Any], errors: list[tuple[str, str]], taken: BaseModel | None
) -> None:
    tools = Toolset([Either])
    arguments = json.dumps({"v": v})
    outcome = tools.validate(call("either", arguments, tools=tools if precheck else None))
    assert [(e.path, e.code) for e in outcome.errors] == errors
    assert [c.rule for c in outcome.coercions] == ["number_string"]
    assert outcome.model == (None if taken is None else Either(v=taken))


class Reading(BaseModel):
    count: int
    value: int | float = 0


@pytest.mark.parametrize(
    "arguments",
    ['{"count": 2.0, "note": "x"}', '{"count": 2, "value": 30.0, "note": "x"}'],
)
def test_unknown_field_found_by_the_precheck_survives_other_coercions(arguments: str) -> None:
    # The model ignores extra fields, so only the pre-check sees "note"; a coercion elsewhere
    # in the call (30.0 -> 30) must not turn the rejection into an accepted call.
    tools = Toolset([Reading])
    outcome = tools.validate(call("reading", arguments, tools=tools))
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [("/note", "unknown_field")]


def test_unwrapped_arguments_drop_the_wrapper_finding() -> None:
    tools = Toolset([Reading])
    outcome = tools.validate(call("reading", '{"params": {"count": 2}}', tools=tools))
    assert outcome.ok and [c.rule for c in outcome.coercions] == ["unwrap"]


class Lenient(BaseModel):
    i: int


def test_unknown_field_found_only_by_the_precheck_shows_its_value() -> None:
    # Pydantic ignores extra fields here; the published schema closes the object, so the
    # pre-check's finding is reported, with the value the model sent (not `null`).
    tools = Toolset([Lenient])
    outcome = tools.validate(call("lenient", '{"i": 1, "zz": {"a": 1}}', tools=tools))
    (error,) = outcome.errors
    assert (error.path, error.code, error.got) == ("/zz", "unknown_field", '{"a":1}')


class Themed(BaseModel):
    color: str = Field(json_schema_extra={"enum": ["red", "blue"]})


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize(("color", "got"), [("green", '"green"'), ('say "hi"', '"say \\"hi\\""')])
def test_a_value_only_the_published_schema_refuses_is_shown_as_json(
    precheck: bool, color: str, got: str
) -> None:
    # The enum is the schema's alone, so the pre-check's finding is the error: its value
    # reads as every other error's does, not as the bare text of the string.
    tools = Toolset([Themed])
    arguments = json.dumps({"color": color})
    outcome = tools.validate(call("themed", arguments, tools=tools if precheck else None))
    (error,) = outcome.errors
    assert (error.path, error.code, error.got) == ("/color", "enum", got)


class Keyed(BaseModel):
    """Scores by player number."""

    scores: dict[int, str]
    levels: dict[Literal["low", "high"], int] = {}


KEYED = Toolset([Keyed])
KEYED_ZH = Toolset([Keyed], lang="zh")


def test_a_wrong_dict_key_is_the_objects_error_naming_the_key() -> None:
    # Pydantic places a key's error at `scores/x/[key]`, a path no value has.
    arguments = '{"scores": {"1": "a", "x": "b"}, "levels": {"mid": 1}}'
    errors = [e.as_payload() for e in KEYED.validate(call("keyed", arguments)).errors]
    assert errors == [
        {
            "path": "/scores",
            "code": "type",
            "expected": "field names must be an integer",
            "got": '"x"',
            "hint": "write the key as a plain integer, e.g. 7 (no leading zeros, +, spaces or _)",
        },
        {
            "path": "/levels",
            "code": "enum",
            "expected": 'field names must be one of "low", "high"',
            "got": '"mid"',
        },
    ]
    zh = KEYED_ZH.validate(call("keyed", arguments)).errors
    assert [e.expected for e in zh] == ["字段名必须是整数", '字段名必须是以下值之一："low", "high"']


class Tabby(BaseModel):
    lives: int


class Hound(BaseModel):
    breed: str


class Key(BaseModel):
    kid: str
    token: SecretStr


class Rehome(BaseModel):
    """Rehome a pet."""

    pet: Tabby | Hound
    lock: Tabby | Key | None = None


REHOME = Toolset([Rehome])


def test_union_refused_only_by_the_published_schema_names_the_field() -> None:
    # Pydantic ignores the extra key, the published (closed) schema does not: the pre-check's
    # union finding used to read "expected an object, got object".
    arguments = '{"pet": {"lives": 9, "colour": "black"}}'
    (error,) = REHOME.validate(call("rehome", arguments, tools=REHOME)).errors
    assert error.as_payload() == {
        "path": "/pet/colour",
        "code": "unknown_field",
        "expected": "no such field; allowed fields: lives",
        "got": '"black"',
    }


def test_union_findings_never_show_a_secret_meant_for_another_branch() -> None:
    arguments = '{"pet": {"lives": 9}, "lock": {"lives": 1, "token": "hunter2"}}'
    (error,) = REHOME.validate(call("rehome", arguments, tools=REHOME)).errors
    assert (error.path, error.code, error.got) == ("/lock/token", "unknown_field", "[redacted]")
    arguments = '{"pet": {"lives": 9}, "lock": {"lives": 1, "kid": "k", "token": "hunter2"}}'
    (error,) = REHOME.validate(call("rehome", arguments, tools=REHOME)).errors
    assert (error.path, error.code, error.got) == ("/lock/lives", "unknown_field", "1")


def test_union_with_branches_equally_close_names_what_the_first_finds() -> None:
    # "Expected an object" for an object gave nothing to fix: between branches as close as each
    # other, the first one's finding (as Pydantic tries them in order) is one fix that works.
    arguments = '{"pet": {"lives": 9, "breed": "x"}}'
    (error,) = REHOME.validate(call("rehome", arguments, tools=REHOME)).errors
    assert error.as_payload() == {
        "path": "/pet/breed",
        "code": "unknown_field",
        "expected": "no such field; allowed fields: lives",
        "got": '"x"',
    }


class ByNumber(BaseModel):
    ref: int
    strict_match: bool = False


class ByCode(BaseModel):
    ref: str
    region: str = "eu"


class Find(BaseModel):
    order: ByNumber | ByCode | None = None


@pytest.mark.parametrize("tools", [None, Toolset([Find])])
@pytest.mark.parametrize(
    ("arguments", "path", "code"),
    [
        # As close to ByNumber (`region` unknown) as to ByCode (`ref` no string): ByCode
        # declares every key sent, so its finding is the one to fix, as for plain tools.
        ('{"order": {"ref": 42, "region": "us"}}', "/order/ref", "type"),
        # A field of the wrong type where no field is unknown: the type error, with its words.
        ('{"order": {"ref": [1]}}', "/order/ref", "type"),
    ],
)
def test_a_union_of_models_names_what_the_closest_branch_finds(
    tools: Toolset | None, arguments: str, path: str, code: str
) -> None:
    (error,) = Toolset([Find]).validate(call("find", arguments, tools=tools)).errors
    assert (error.path, error.code) == (path, code)
    assert "object" not in error.expected


class PayByCard(BaseModel):
    card_number: str
    expiry: str = ""


class PayByInvoice(BaseModel):
    invoice_id: int
    due_days: int = 30


class Checkout(BaseModel):
    payment: PayByCard | PayByInvoice | None = None
    payments: list[PayByCard | PayByInvoice] = []


@pytest.mark.parametrize("tools", [None, Toolset([Checkout])])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"payment": {"invoice_id": "INV-7", "due_days": 14}}', "/payment/invoice_id"),
        ('{"payment": {"invoice_id": "INV-7"}}', "/payment/invoice_id"),
        # Past the errors drafted at once: each item's branch errors are weighed as they are.
        (json.dumps({"payments": [{"invoice_id": "INV-7", "due_days": 14}] * 70}), None),
    ],
)
def test_branches_failing_equally_often_are_told_apart_by_the_keys_sent(
    tools: Toolset | None, arguments: str, path: str | None
) -> None:
    # Pydantic counts no key a branch ignores: both branches fail once, and the first one's
    # errors told the model to add `card_number` and drop `due_days` ("allowed fields:
    # card_number, expiry") from an object that names only the invoice branch's fields.
    outcome = Toolset([Checkout]).validate(call("checkout", arguments, tools=tools))
    errors = outcome.errors[:1] if path is None else outcome.errors
    (error,) = errors
    assert (error.path, error.code, error.expected) == (
        path or "/payments/0/invoice_id",
        "type",
        "an integer",
    )
    assert all(e.path.endswith("/invoice_id") for e in outcome.errors)


class ByName(BaseModel):
    handle: str
    page: int = 0


class ByRank(BaseModel):
    handle: Annotated[int, Field(ge=10)]
    rank: Annotated[int, Field(ge=10)] = 10


class Seek(BaseModel):
    who: ByName | ByRank


@pytest.mark.parametrize("tools", [None, Toolset([Seek])])
def test_a_union_reports_the_unknown_keys_of_the_branch_it_names(tools: Toolset | None) -> None:
    # Pydantic finds one fault in `ByName` (the handle is no string) and two in `ByRank`
    # (both numbers too small): the report named `ByName`'s error, and beside it the key
    # `ByRank` does not define, listing `ByRank`'s fields ("allowed fields: handle, rank").
    arguments = '{"who": {"handle": 1, "rank": 2, "extra": "z"}}'
    outcome = Toolset([Seek]).validate(call("seek", arguments, tools=tools))
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [
        ("/who/handle", "type", "a string")
    ]


class Moggy(BaseModel):
    kind: Literal["cat"]
    lives: int = 9


class Mutt(BaseModel):
    kind: Literal["dog"]
    tags: list[str] = []


class Kennel(BaseModel):
    pets: list[Annotated[Moggy | Mutt, Field(discriminator="kind")]] = []


@pytest.mark.parametrize("tools", [None, Toolset([Kennel])])
def test_a_field_of_another_branch_is_unknown_to_the_tagged_one(tools: Toolset | None) -> None:
    # The pre-check names the key no branch left takes; the finding is the object's, in the
    # branch its tag chose (it used to read "expected an array" for the array sent).
    arguments = '{"pets": [{"kind": "cat", "tags": ["a"]}]}'
    (error,) = Toolset([Kennel]).validate(call("kennel", arguments, tools=tools)).errors
    assert error.as_payload() == {
        "path": "/pets/0/tags",
        "code": "unknown_field",
        "expected": "no such field; allowed fields: kind, lives",
        "got": '["a"]',
    }


class Route(BaseModel):
    gateway: IPvAnyAddress
    subnet: IPvAnyNetwork | None = None
    interface: IPv4Interface | None = None


@pytest.mark.parametrize(
    ("arguments", "path", "expected"),
    [
        ('{"gateway": "router"}', "/gateway", "an IPv4 or IPv6 address"),
        (
            '{"gateway": "10.0.0.1", "subnet": "lan"}',
            "/subnet",
            "an IPv4 or IPv6 network, e.g. 192.168.0.0/24 or null",
        ),
        (
            '{"gateway": "10.0.0.1", "interface": "eth0"}',
            "/interface",
            "an IPv4 address with a prefix length, e.g. 192.168.0.1/24 or null",
        ),
    ],
)
@pytest.mark.parametrize("precheck", [False, True])
def test_pydantic_string_types_say_what_string_they_take(
    arguments: str, path: str, expected: str, precheck: bool
) -> None:
    # "expected a string" for a string the model did send tells it nothing.
    tools = Toolset([Route])
    outcome = tools.validate(call("route", arguments, tools=tools if precheck else None))
    assert [(e.path, e.expected) for e in outcome.errors] == [(path, expected)]


class Schedule(BaseModel):
    at: NaiveDatetime
    blob: Base64Bytes | None = None
    token: Base64UrlStr | None = None
    report: FilePath | None = None
    every: int | NaiveDatetime = 0


_NAIVE = "a date-time without a time zone offset, e.g. 2024-03-05T14:30:00"


@pytest.mark.parametrize(
    ("arguments", "path", "expected"),
    [
        ('{"at": "next tuesday"}', "/at", _NAIVE),
        ('{"at": "P1D"}', "/at", _NAIVE),
        ('{"at": "2024-01-02T03:04:05", "blob": "abc"}', "/blob", "base64-encoded data or null"),
        (
            '{"at": "2024-01-02T03:04:05", "token": "a"}',
            "/token",
            "base64url-encoded data or null",
        ),
        (
            '{"at": "2024-01-02T03:04:05", "report": "/no/such/file"}',
            "/report",
            "the path of an existing file or null",
        ),
        ("{}", "/at", f"required: {_NAIVE}"),
        ('{"at": "2024-01-02T03:04:05", "every": [1]}', "/every", f"an integer or {_NAIVE}"),
    ],
)
@pytest.mark.parametrize("precheck", [False, True])
def test_a_string_of_a_pydantic_type_without_a_checked_format_says_what_it_holds(
    arguments: str, path: str, expected: str, precheck: bool
) -> None:
    # A `NaiveDatetime` carries no `format` in the schema (no RFC 3339 date-time is naive),
    # and base64 and path formats had no words: the model was told "a string" for a string.
    tools = Toolset([Schedule])
    done = call("schedule", arguments, tools=tools if precheck else None)
    content = json.loads(tools.validate(done).to_message(done, style="openai-chat")["content"])
    assert [(e["path"], e["expected"]) for e in content["errors"]] == [(path, expected)]


class OwnSchemas(BaseModel):
    # Fields whose JSON schema their author wrote: the error type says what the string holds.
    room: Annotated[UUID, WithJsonSchema({"type": "string"})] | None = None
    day: Annotated[date, WithJsonSchema({"type": "string"})] | None = None
    host: Annotated[IPvAnyAddress, WithJsonSchema({"type": "string"})] | None = None


@pytest.mark.parametrize(
    ("field", "expected", "expected_zh"),
    [
        ("room", "a UUID or null", "UUID 或 null"),
        (
            "day",
            "a date YYYY-MM-DD, e.g. 2024-03-05 or null",
            "日期 YYYY-MM-DD，例如 2024-03-05 或 null",
        ),
        ("host", "an IPv4 or IPv6 address or null", "IPv4 或 IPv6 地址 或 null"),
    ],
)
def test_a_string_whose_schema_names_no_format_is_described_by_its_error(
    field: str, expected: str, expected_zh: str
) -> None:
    arguments = json.dumps({field: "soon"})
    (error,) = Toolset([OwnSchemas]).validate(call("own_schemas", arguments)).errors
    (error_zh,) = Toolset([OwnSchemas], lang="zh").validate(call("own_schemas", arguments)).errors
    assert (error.path, error.expected, error_zh.expected) == (f"/{field}", expected, expected_zh)


class Meeting(BaseModel):
    start: FutureDatetime | None = None
    born: PastDate | None = None
    room: UUID4 = Field(default_factory=uuid4)
    link: Annotated[AnyUrl, UrlConstraints(max_length=20)] | None = None
    blob: Annotated[bytes, Field(max_length=3)] | None = None


@pytest.mark.parametrize(
    ("field", "value", "code", "expected", "expected_zh"),
    [
        ("start", "2001-01-01T10:00:00Z", "range", "a date-time in the future", "将来的日期时间"),
        ("born", "2999-01-01", "range", "a date in the past", "过去的日期"),
        (
            "room",
            "a8098c1a-f86e-11da-bd1a-00112444be1e",
            "format",
            "a version-4 UUID",
            "版本 4 的 UUID",
        ),
        ("link", "https://example.com/long", "length", "at most 20 characters", "最多 20 个字符"),
        # Bytes, not characters: the model counts what the field counts.
        ("blob", "éé", "length", "at most 3 bytes", "最多 3 个字节"),
    ],
)
def test_pydantic_constraints_on_a_well_formed_value_say_what_is_wrong_with_it(
    field: str, value: str, code: str, expected: str, expected_zh: str
) -> None:
    # The value has the right form already: describing the form ("a date-time with a time
    # zone offset") does not tell the model what to change.
    arguments = json.dumps({field: value})
    (error,) = Toolset([Meeting]).validate(call("meeting", arguments)).errors
    (error_zh,) = Toolset([Meeting], lang="zh").validate(call("meeting", arguments)).errors
    assert (error.path, error.code, error.expected) == (f"/{field}", code, expected)
    assert error_zh.expected == expected_zh


class Upload(BaseModel):
    model_config = ConfigDict(val_json_bytes="base64")

    data: bytes


def test_bytes_in_a_text_encoding_name_the_encoding() -> None:
    (error,) = Toolset([Upload]).validate(call("upload", '{"data": "!!!"}')).errors
    assert (error.code, error.expected) == ("format", "base64-encoded data")


def test_a_hostname_field_of_a_plain_tool_is_described() -> None:
    schema = {"type": "object", "properties": {"host": {"type": "string", "format": "hostname"}}}
    tools = Toolset([{"name": "ping", "parameters": schema}])
    outcome = tools.validate(call("ping", '{"host": 5}'))
    assert [(e.path, e.expected) for e in outcome.errors] == [("/host", "a host name")]


class Payout(BaseModel):
    amount: Decimal
    fee: Decimal | None = None


@pytest.mark.parametrize(
    ("arguments", "path", "expected", "got"),
    [
        ('{"amount": "ten"}', "/amount", "a number", '"ten"'),
        ('{"amount": true}', "/amount", "a number", "true"),
        ('{"amount": 1, "fee": "none"}', "/fee", "a number or null", '"none"'),
    ],
)
@pytest.mark.parametrize("precheck", [False, True])
def test_a_decimal_field_asks_for_a_number_not_any_string(
    arguments: str, path: str, expected: str, got: str, precheck: bool
) -> None:
    # Pydantic writes `Decimal` as a number or a string, but only digits validate: "expected
    # a number or a string" for a string sent (shown unquoted) gives the model nothing to fix.
    tools = Toolset([Payout])
    outcome = tools.validate(call("payout", arguments, tools=tools if precheck else None))
    assert [(e.path, e.expected, e.got) for e in outcome.errors] == [(path, expected, got)]


class Query(BaseModel):
    ids: Json[list[int]]


@pytest.mark.parametrize(
    ("arguments", "path", "expected"),
    [
        ('{"ids": "[1,"}', "/ids", "a string holding JSON text of an array"),
        ('{"ids": [1, 2]}', "/ids", "a string holding JSON text of an array"),
        ('{"ids": "[1, \\"a\\"]"}', "/ids", "a string holding JSON text of an array"),
    ],
)
@pytest.mark.parametrize("precheck", [False, True])
def test_a_json_text_field_says_it_takes_json_in_a_string(
    arguments: str, path: str, expected: str, precheck: bool
) -> None:
    tools = Toolset([Query])
    outcome = tools.validate(call("query", arguments, tools=tools if precheck else None))
    assert [(e.path, e.expected) for e in outcome.errors] == [(path, expected)]


class _Limits(BaseModel):
    low: int


class _Report(BaseModel):
    ids: Json[list[int]] | None = None
    limits: Json[_Limits] = Field(default_factory=lambda: _Limits(low=0))


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize(
    ("arguments", "path", "expected", "hint"),
    [
        (
            {"ids": '[1, "a"]'},
            "/ids",
            "a string holding JSON text of an array or null",
            "inside the string's JSON text, /1: an integer",
        ),
        (
            {"limits": "{}"},
            "/limits",
            "a string holding JSON text of an object",
            "inside the string's JSON text, /low: required: an integer",
        ),
    ],
)
def test_an_error_inside_a_json_text_is_the_strings_and_the_hint_says_where(
    arguments: dict[str, str], path: str, expected: str, hint: str, precheck: bool
) -> None:
    # Pydantic's `loc` goes on into the JSON text (`("ids", 1)`), which no JSON Pointer into
    # the arguments reaches; and a field missing in there is not the string missing.
    tools = Toolset([_Report])
    given = call("report", json.dumps(arguments), tools=tools if precheck else None)
    (error,) = tools.validate(given).errors
    (sent,) = arguments.values()
    assert (error.path, error.code, error.expected) == (path, "type", expected)
    assert (error.got, error.hint) == (json.dumps(sent), hint)


class _Series(BaseModel):
    series: list[int] | list[float] = []
    table: dict[str, int] | dict[str, float] = {}


@pytest.mark.parametrize("precheck", [False, True])
def test_one_number_string_in_a_union_of_containers_is_one_reading(precheck: bool) -> None:
    # `["3.0"]` is `[3]` to `list[int]` and `[3.0]` to `list[float]`: one value spelt two ways,
    # read as the raw `[3.0]` is, not refused as ambiguous beside an error saying it is no
    # integer.
    tools = Toolset([_Series])

    def validated(arguments: object) -> Outcome:
        return tools.validate(
            call("series", json.dumps(arguments), tools=tools if precheck else None)
        )

    outcome = validated({"series": ["3.0", "-0.0"], "table": {"a": "2.0"}})
    assert outcome.ok, outcome.errors
    assert isinstance(outcome.model, _Series)
    assert outcome.model == _Series(series=[3.0, -0.0], table={"a": 2.0})
    numbers = [*outcome.model.series, *outcome.model.table.values()]
    assert all(type(n) is float for n in numbers)
    assert math.copysign(1, outcome.model.series[1]) == -1
    # Integers spelt as integers stay integers, as `"3"` does for `int | float`.
    outcome = validated({"series": ["3", "4"]})
    assert isinstance(outcome.model, _Series)
    assert [type(n) for n in outcome.model.series] == [int, int]


class _Count(BaseModel):
    n: int


@pytest.mark.parametrize("number", ["9" * 5000, "7" * 4400 + ".5"])
@pytest.mark.parametrize("precheck", [False, True])
def test_a_number_past_pythons_digit_limit_is_too_large_not_an_exception(
    precheck: bool, number: str
) -> None:
    # An assembler may allow more digits than CPython converts to an int (4,300): validation
    # answers `too_large` rather than raising out of `validate`, whether or not the pre-check
    # found the fraction an integer field refuses (Pydantic cannot read the text either way).
    toolset = Toolset([_Count])
    asm = Assembler(tools=toolset if precheck else None, max_number_digits=10_000)
    asm.feed(0, id="c", name="count", arguments='{"n": ' + number + "}")
    (done,) = asm.finish()
    outcome = toolset.validate(done)
    assert not outcome.ok and outcome.error_type == "too_large"
    assert outcome.errors == []


@pytest.mark.parametrize("precheck", [False, True])
def test_an_integer_string_past_the_digit_limit_is_refused_for_its_length(precheck: bool) -> None:
    # "An integer" (and "do not round") was false of it: it is one, only too long to read.
    toolset = Toolset([_Count])

    def validated(digits: str) -> Outcome:
        asm = Assembler(tools=toolset if precheck else None)
        asm.feed(0, id="c", name="count", arguments=json.dumps({"n": digits}))
        (done,) = asm.finish()
        return toolset.validate(done)

    for digits in ("1" * 5000, "-" + "9" * 4301):
        (error,) = validated(digits).errors
        assert (error.path, error.code) == ("/n", "range")
        assert error.expected == "an integer of at most 4300 digits"
        assert error.hint is not None and "digits" in error.hint and "round" not in error.hint
    # Digits past any float but within the limit are the integer they spell, as bare ones are.
    for digits in ("1" * 400, "-" + "7" * 4300):
        outcome = validated(digits)
        assert outcome.ok and outcome.model == _Count(n=int(digits)), outcome.errors


class _Deep(BaseModel):
    x: Any


def test_json_too_deep_for_pydantic_is_too_large_not_its_raw_text() -> None:
    # Pydantic's parser stops at its recursion limit: the payload said "expected an object"
    # and quoted the raw bytes (`b'{"x": [[[...`) back to the model.
    # The assembler stops at 128 levels; a call from elsewhere may be deeper.
    toolset = Toolset([_Deep])
    outcome = toolset.validate(_call("deep", '{"x": ' + "[" * 300 + "]" * 300 + "}"))
    assert not outcome.ok and outcome.error_type == "too_large"


@dataclass
class _GivenCall:
    """A completed call that did not come through an assembler (a stored one)."""

    name: str
    arguments: str
    ordinal: int = 0
    index: int | None = 0
    id: str | None = "c"
    error: None = None

    @property
    def value(self) -> Any:
        return json.loads(self.arguments)


def _call(name: str, arguments: str) -> _GivenCall:
    return _GivenCall(name, arguments)


class _ByName(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    user_id: int = Field(alias="userId")


class _Either(BaseModel):
    v: int = Field(validation_alias=AliasChoices("val", "value"))


@pytest.mark.parametrize(
    ("model", "arguments", "path"),
    [
        (_ByName, '{"user_id": "x"}', "/user_id"),
        (_ByName, '{"userId": "x"}', "/userId"),
        (_Either, '{"value": "x"}', "/value"),
    ],
)
def test_an_error_under_any_key_a_field_is_read_from_names_its_type(
    model: type[BaseModel], arguments: str, path: str
) -> None:
    tools = Toolset([model])
    outcome = tools.validate(call(tools.names()[0], arguments))
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [(path, "type", "an integer")]


class _Link(BaseModel):
    url: HttpUrl


def test_a_url_with_another_scheme_is_told_the_schemes_it_may_use() -> None:
    tools = Toolset([_Link])
    (error,) = tools.validate(call("link", '{"url": "ftp://x.com"}')).errors
    assert (error.path, error.code) == ("/url", "format")
    assert error.expected == "a URL whose scheme is 'http' or 'https'"
    zh = Toolset([_Link], lang="zh").validate(call("link", '{"url": "ftp://x.com"}')).errors
    assert zh[0].expected == "协议为 'http' 或 'https' 的 URL"


class _Count(BaseModel):
    n: int
    ratios: list[float] = []


@pytest.mark.parametrize(
    ("arguments", "path", "got"),
    [('{"n": 1e309}', "/n", "1e309"), ('{"n": 1, "ratios": [1, -1e400]}', "/ratios/1", "-1e400")],
)
def test_a_number_past_a_float_is_shown_as_written_not_as_infinity(
    arguments: str, path: str, got: str
) -> None:
    # Pydantic reads it as infinity; the model wrote a (very large) number.
    tools = Toolset([_Count])
    errors = tools.validate(call("count", arguments)).errors
    assert [(e.path, e.got) for e in errors] == [(path, got)]


_PAST_FLOAT_FIELDS = {
    "count": {"type": "integer"},
    "ratio": {"type": "number"},
    "level": {"enum": [1, 2, 3]},
    "note": {"type": "string"},
    "done": {"type": "boolean"},
    "pages": {"type": "array", "items": {"type": "integer"}},
}


class _PastFloat(BaseModel):
    count: int = 0
    ratio: float = 0
    level: Literal[1, 2, 3] = 1
    note: str = ""
    done: bool = False
    pages: list[int] = []


@pytest.mark.parametrize(
    "tool",
    [_PastFloat, {"name": "past_float", "parameters": {"properties": _PAST_FLOAT_FIELDS}}],
)
@pytest.mark.parametrize(
    ("field", "number"),
    [
        *((field, "1e309") for field in _PAST_FLOAT_FIELDS),
        ("count", "-1E+400"),
        ("done", "1e-400"),
        ("note", "2.5e-400"),
        ("pages", "[1, 1e309]"),
        ("level", "1e9999999999999999999"),
    ],
)
@pytest.mark.parametrize("precheck", [False, True])
def test_a_number_past_a_float_is_quoted_as_written_and_told_out_of_range_in_any_field(
    tool: Any, field: str, number: str, precheck: bool
) -> None:
    # `got` was `Infinity` (not even JSON) or `1E+309` for the `1e309` the model wrote, and
    # only a number field said why: what a float cannot hold no field of any type takes.
    tools = Toolset([tool])
    done = call("past_float", f'{{"{field}": {number}}}', tools=tools if precheck else None)
    content = json.loads(tools.validate(done).to_message(done, style="openai-chat")["content"])
    written = number.strip("[]").split(", ")[-1]
    path = f"/{field}/1" if number.startswith("[") else f"/{field}"
    hint = "this number is too large or too small to be stored; send the intended value"
    assert [(e["path"], e["got"], e["hint"]) for e in content["errors"]] == [(path, written, hint)]


def test_a_number_is_quoted_as_written_where_a_float_holds_it_too() -> None:
    # A float reads `1.5e3` as 1500.0: the model is shown its own text, with no hint.
    tools = Toolset([{"name": "past_float", "parameters": {"properties": _PAST_FLOAT_FIELDS}}])
    (error,) = tools.validate(call("past_float", '{"level": 1.5e3}')).errors
    assert (error.got, error.hint) == ("1.5e3", None)


class _Fraction(BaseModel):
    share: float = Field(lt=1)
    limit: float | None = Field(default=None, ge=0, le=0.5)


_FRACTION_PLAIN = {
    "name": "fraction",
    "parameters": {"properties": {"share": {"type": "number", "exclusiveMaximum": 1}}},
}


@pytest.mark.parametrize("tool", [_Fraction, _FRACTION_PLAIN])
@pytest.mark.parametrize("precheck", [False, True])
def test_a_number_within_range_as_written_is_told_it_rounds_out_of_it(
    tool: Any, precheck: bool
) -> None:
    # "< 1, got 0.99999999999999999999" told the model its own number was out of range,
    # though it is below 1: only its reading as a float, 1.0, is not.
    tools = Toolset([tool])
    arguments = '{"share": 0.99999999999999999999}'
    (error,) = tools.validate(call("fraction", arguments, tools=tools if precheck else None)).errors
    assert (error.path, error.code, error.expected) == ("/share", "range", "< 1")
    assert error.hint is not None and "read as 1.0" in error.hint


def test_a_number_out_of_range_as_written_gets_no_rounding_hint() -> None:
    tools = Toolset([_Fraction])
    (far,) = tools.validate(call("fraction", '{"share": 5.00000000000000000001}')).errors
    arguments = '{"share": 0.5, "limit": 0.60000000000000000001}'
    (near,) = tools.validate(call("fraction", arguments)).errors
    assert (far.code, far.hint, near.path, near.code, near.hint) == (
        "range",
        None,
        "/limit",
        "range",
        None,
    )


class _IntN(BaseModel):
    n: int


class _FloatN(BaseModel):
    n: float


class _DecimalN(BaseModel):
    n: Decimal


class _OptionalDecimalN(BaseModel):
    n: Decimal | None = None


class _StrN(BaseModel):
    n: str


_PLAIN_NUMBER_TOOL = {
    "type": "function",
    "function": {
        "name": "plain",
        "parameters": {"type": "object", "properties": {"n": {"type": "number"}}},
    },
}


@pytest.mark.parametrize(
    "tool", [_IntN, _FloatN, _DecimalN, _OptionalDecimalN, _StrN, _PLAIN_NUMBER_TOOL]
)
@pytest.mark.parametrize(
    "number",
    [
        "1e9999999999999999999",
        "-1e9999999999999999999",
        "1e-9999999999999999999",
        "2.5E+" + "9" * 5000,
    ],
)
@pytest.mark.parametrize("prechecked", [True, False])
def test_exponent_no_decimal_holds_is_a_model_error(
    tool: Any, number: str, prechecked: bool
) -> None:
    # Fault 10: such a number once raised `decimal.InvalidOperation` out of `validate` (or
    # `Overflow` for an int field); capped, it must not be taken as the number it became.
    tools = Toolset([tool])
    name = tools.names()[0]
    asm = Assembler(tools=tools if prechecked else None)
    asm.feed(0, id="c", name=name, arguments=f'{{"n": {number}}}')
    (call,) = asm.finish()
    outcome = tools.validate(call)
    assert outcome.kind == "model_error"
    assert [e.path for e in outcome.errors] == ["/n"]


class OnlyA(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int


class OnlyB(BaseModel):
    model_config = ConfigDict(extra="forbid")
    b: int


class PickOne(BaseModel):
    v: OnlyA | OnlyB


@pytest.mark.parametrize("tools", [None, Toolset([PickOne])])
@pytest.mark.parametrize(
    ("arguments", "found"),
    [
        ('{"v": {"a": "x"}}', [("/v/a", "type")]),
        ('{"v": {"a": 1, "c": 2}}', [("/v/c", "unknown_field")]),
    ],
)
def test_a_key_one_branch_forbids_is_weighed_with_the_other_branches(
    tools: Toolset | None, arguments: str, found: list[tuple[str, str]]
) -> None:
    # Pydantic reports every branch's errors; a key `extra="forbid"` refuses in one branch was
    # kept beside the closer branch's findings ("a: no such field" and "a: an integer").
    outcome = Toolset([PickOne]).validate(call("pick_one", arguments, tools=tools))
    assert [(e.path, e.code) for e in outcome.errors] == found


class Stay(BaseModel):
    nights: int = Field(ge=1, le=10)


class LaxFlags(BaseModel):
    model_config = ConfigDict(strict=False)
    notify: bool = False


class LaxButCounted(BaseModel):
    """A lax model with one field held strict."""

    model_config = ConfigDict(strict=False)
    count: int = Field(strict=True)
    label: str = ""


@pytest.mark.parametrize("prechecked", [False, True])
def test_a_lax_model_keeps_the_strict_mode_of_its_own_fields(prechecked: bool) -> None:
    # An explicit `strict=False` in Pydantic's call would lift the field's own strict mode.
    # With `integral_number` off, Pydantic alone judges `5.0` for the strict integer field.
    tools = Toolset([LaxButCounted], coercion="none")
    name = tools.names()[0]
    outcome = tools.validate(call(name, '{"count": 5.0}', tools=tools if prechecked else None))
    assert not outcome.ok
    assert [e.path for e in outcome.errors] == ["/count"]
    assert tools.validate(call(name, '{"count": 5}', tools=tools if prechecked else None)).ok


class Store(BaseModel):
    """Store a document."""

    model_config = ConfigDict(strict=False)
    overwrite: bool = False
    count: int = 0
    doc: Any = None


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("arguments", "duplicate_keys", "errors", "rules"),
    [
        ('{"doc": %s, "overwrit": true}', "error", [("/overwrit", "unknown_field")], []),
        ('{"doc": %s, "count": "30"}', "error", [], ["number_string"]),
        ('{"doc": %s, "count": "x", "count": "30"}', "last_wins", [], ["number_string"]),
        (
            '{"doc": %s, "count": 1, "overwrit": 1, "count": 2}',
            "last_wins",
            [("/overwrit", "unknown_field")],
            [],
        ),
    ],
)
def test_a_call_past_the_default_depth_gets_the_same_verdict_without_the_pre_check(
    arguments: str,
    duplicate_keys: str,
    errors: list[tuple[str, str]],
    rules: list[str],
    prechecked: bool,
) -> None:
    # An assembler may take values deeper than the default limit: the check of a call
    # assembled without the pre-check read its text under the default, and stopped at the deep
    # value, so what followed went unseen (a misspelt key dropped, a lax conversion
    # unrecorded); so did the check of the value a repeated key leaves, with the pre-check too.
    tools = Toolset([Store])
    text = arguments % ("[" * 70 + "]" * 70)
    asm = Assembler(
        tools=tools if prechecked else None, max_depth=128, duplicate_keys=duplicate_keys
    )
    asm.feed(0, id="call_1", name="store", arguments=text)
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert [(e.path, e.code) for e in outcome.errors] == errors
    assert [c.rule for c in outcome.coercions] == rules


class LaxOrder(BaseModel):
    """A lax model with integers in several places."""

    model_config = ConfigDict(strict=False)
    units: int
    sizes: list[int] = []
    stock: dict[str, int] = {}
    limit: int | None = None
    price: float | int = 0


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("arguments", "units", "rules", "refused"),
    [
        ('{"units": 30.0}', 30, ["integral_number"], []),
        ('{"units": 3e1}', 30, ["integral_number"], []),
        ('{"units": 9007199254740993.0}', 9007199254740993, ["integral_number"], []),
        ('{"units": 4.9999999999999999}', None, [], ["/units"]),
        ('{"units": 1, "sizes": [2, 3.5]}', None, [], ["/sizes/1"]),
        ('{"units": 1, "stock": {"a": 2.00000000000000001}}', None, [], ["/stock/a"]),
        ('{"units": 1, "limit": 7.5}', None, [], ["/limit"]),
        ('{"units": 1, "price": 2.5, "sizes": [1]}', 1, [], []),
    ],
)
def test_a_lax_model_does_not_round_a_float_into_an_integer_field(
    arguments: str, units: int | None, rules: list[str], refused: list[str], prechecked: bool
) -> None:
    # Lax Pydantic reads `4.9999999999999999` as the float 5.0 and keeps 5, and
    # `9007199254740993.0` as 9007199254740992, without a word: as for a strict model, a whole
    # number is a recorded `integral_number` with every digit kept, and the rest is refused.
    tools = Toolset([LaxOrder])
    outcome = tools.validate(call("lax_order", arguments, tools=tools if prechecked else None))
    assert [e.path for e in outcome.errors] == refused
    assert [c.rule for c in outcome.coercions] == rules
    assert (outcome.model.units if outcome.model is not None else None) == units
    if outcome.ok:
        assert outcome.model is not None and outcome.model.price in (0, 2.5)


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("model", "arguments", "got"),
    [
        # Pydantic reports what it read: a float of the number, a coercion's result, and the
        # pre-check the JSON type it read. The model is shown what it sent.
        (Stay, '{"nights": 30.0000000000000001}', "30.0000000000000001"),
        (Stay, '{"nights": "11"}', '"11"'),
        (LaxFlags, '{"notify": "yes"}', '"yes"'),
        (LaxFlags, '{"notify": 1}', "1"),
    ],
)
def test_got_is_the_value_as_the_model_wrote_it(
    model: type[BaseModel], arguments: str, got: str, prechecked: bool
) -> None:
    tools = Toolset([model])
    name = tools.names()[0]
    (error,) = tools.validate(call(name, arguments, tools=tools if prechecked else None)).errors
    assert error.got == got


class Level(int, Enum):
    LOW = 1
    HIGH = 2


class PickLevel(BaseModel):
    """Pick a level and a count."""

    level: Level
    count: Literal[1, 2]


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [('{"level": 2.0, "count": 2}', "/level"), ('{"level": 2, "count": 2e0}', "/count")],
)
def test_a_whole_float_for_an_integer_enum_is_a_recorded_coercion(
    arguments: str, path: str, prechecked: bool
) -> None:
    # Strict Pydantic takes 2.0 as the member 2 without a word; an integer field records it.
    tools = Toolset([PickLevel])
    outcome = tools.validate(call("pick_level", arguments, tools=tools if prechecked else None))
    assert outcome.ok and outcome.model == PickLevel(level=Level.HIGH, count=2)
    assert [(c.path, c.rule) for c in outcome.coercions] == [(path, "integral_number")]

    strict = Toolset([PickLevel], coercion="none")
    refused = strict.validate(call("pick_level", arguments, tools=strict if prechecked else None))
    assert not refused.ok
    assert [(e.path, e.code) for e in refused.errors] == [(path, "type")]
    assert "2.0" in (refused.errors[0].hint or "")


def test_an_integer_enum_member_as_written_needs_no_coercion() -> None:
    tools = Toolset([PickLevel])
    outcome = tools.validate(call("pick_level", '{"level": 2, "count": 1}', tools=tools))
    assert outcome.ok and outcome.coercions == []


class MaybeLevel(BaseModel):
    """Pick an optional level or a mixed literal."""

    level: Level | None = None
    count: Literal[1, 2] | None = None
    mixed: Literal[1, "a"] | None = None


@pytest.mark.parametrize("coercion", ["safe", "none"])
@pytest.mark.parametrize(
    "arguments",
    ['{"level": 2.0000000000000001}', '{"count": 1.9999999999999999999}'],
)
def test_a_number_that_only_rounds_to_an_enum_member_is_refused(
    arguments: str, coercion: str
) -> None:
    # Pydantic's float reading makes these members; they are not, as for an integer field.
    tools = Toolset([MaybeLevel], coercion=coercion)
    outcome = tools.validate(call("maybe_level", arguments, tools=tools))
    assert not outcome.ok
    assert [e.code for e in outcome.errors] == ["type"]


def test_a_whole_float_for_a_mixed_literal_is_read_as_for_an_integer() -> None:
    safe = Toolset([MaybeLevel])
    outcome = safe.validate(call("maybe_level", '{"mixed": 1.0}', tools=safe))
    assert outcome.ok and outcome.model == MaybeLevel(mixed=1)
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/mixed", "integral_number")]
    strict = Toolset([MaybeLevel], coercion="none")
    refused = strict.validate(call("maybe_level", '{"mixed": 1.0}', tools=strict))
    assert [(e.path, e.code) for e in refused.errors] == [("/mixed", "type")]
    assert strict.validate(call("maybe_level", '{"mixed": "a"}', tools=strict)).ok


def _picking(rule: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"pick": rule}, "required": ["pick"]}


class LongLiteral(BaseModel):
    """Pick a long number or a word."""

    pick: Literal[12345678901234567890, "a"]


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    "tool",
    [
        {"name": "pick", "parameters": _picking({"const": 12345678901234567890})},
        {"name": "pick", "parameters": _picking({"enum": [12345678901234567890, "a"]})},
        LongLiteral,
    ],
)
@pytest.mark.parametrize("written", ["12345678901234567890.0", "1.234567890123456789e19"])
def test_a_whole_float_for_an_integer_member_past_a_doubles_precision_is_that_member(
    tool: Any, written: str, prechecked: bool
) -> None:
    # Compared as its float reading (12345678901234567168), the number the model wrote was no
    # member, and the call was refused with "exactly 12345678901234567890", which it is.
    tools = Toolset([tool])
    name = tools.names()[0]
    arguments = f'{{"pick": {written}}}'
    outcome = tools.validate(call(name, arguments, tools=tools if prechecked else None))
    assert outcome.ok, outcome.errors
    assert [(c.path, c.rule, c.to) for c in outcome.coercions] == [
        ("/pick", "integral_number", "12345678901234567890")
    ]
    picked = outcome.value["pick"] if outcome.model is None else outcome.model.pick
    assert picked == 12345678901234567890 and type(picked) is int


class LevelCounts(BaseModel):
    """Count per level."""

    counts: dict[Level, int]


@pytest.mark.parametrize("coercion", ["safe", "none"])
def test_an_integer_enum_key_is_held_to_its_integer_text(coercion: str) -> None:
    tools = Toolset([LevelCounts], coercion=coercion)
    ok = tools.validate(call("level_counts", '{"counts": {"2": 5}}', tools=tools))
    assert ok.ok and ok.model == LevelCounts(counts={Level.HIGH: 5})
    refused = tools.validate(call("level_counts", '{"counts": {"2.0": 5}}', tools=tools))
    assert [(e.path, e.code) for e in refused.errors] == [("/counts", "type")]


class StayDates(BaseModel):
    """Book a stay; a model validator sees the arguments first."""

    check_in: date
    nights: int
    guest: UUID
    rooms: tuple[int, str]
    tags: set[str] = set()

    @model_validator(mode="before")
    @classmethod
    def read_as_sent(cls, data: Any) -> Any:
        return data


class StayDay(BaseModel):
    """A field validator sees the day first."""

    day: Annotated[date, BeforeValidator(lambda v: v)]
    rate: Annotated[Decimal, Field(decimal_places=2)]


_STAY = {
    "check_in": "2024-05-01",
    "nights": 2,
    "guest": "12345678-1234-5678-1234-567812345678",
    "rooms": [1, "a"],
}


@pytest.mark.parametrize("precheck", [True, False])
def test_a_validator_that_sees_the_input_first_does_not_make_json_forms_fail(
    precheck: bool,
) -> None:
    # Behind a `mode="before"` validator Pydantic checks Python objects, and strict mode takes
    # no text for a date or a UUID and no list for a tuple: valid calls were refused.
    tools = Toolset([StayDates, StayDay])
    given = tools if precheck else None
    outcome = tools.validate(call("stay_dates", json.dumps(_STAY), tools=given))
    assert outcome.ok and outcome.model == StayDates.model_validate_json(json.dumps(_STAY))
    assert outcome.coercions == []
    day = tools.validate(call("stay_day", '{"day": "2024-05-01", "rate": 19.99}', tools=given))
    assert day.ok and day.model == StayDay(day=date(2024, 5, 1), rate=Decimal("19.99"))


@pytest.mark.parametrize("precheck", [True, False])
def test_behind_such_a_validator_lax_conversions_are_still_recorded_or_refused(
    precheck: bool,
) -> None:
    tools = Toolset([StayDates])
    given = tools if precheck else None

    def check(**changes: Any) -> Outcome:
        return tools.validate(call("stay_dates", json.dumps({**_STAY, **changes}), tools=given))

    recorded = check(nights="2", tags=["x", "x"])
    assert recorded.ok and recorded.model is not None and recorded.model.nights == 2
    assert [(c.path, c.rule) for c in recorded.coercions] == [
        ("/nights", "number_string"),
        ("/tags", "set_duplicates"),
    ]
    whole = check(nights=2.0)
    assert whole.ok and [(c.path, c.rule) for c in whole.coercions] == [
        ("/nights", "integral_number")
    ]
    # A Unix time for a date, or a date and time for a date, is no date as JSON writes one;
    # only the value at fault is reported, not the valid ones strict mode refused beside it.
    for bad in (1700000000, "2024-05-01T00:00:00"):
        refused = check(check_in=bad)
        assert [(e.path, e.code) for e in refused.errors] == [("/check_in", "format")]
    fraction = check(nights=2.5)
    assert [(e.path, e.code) for e in fraction.errors] == [("/nights", "type")]


def _step_kind(value: Any) -> str | None:
    return value.get("op") if isinstance(value, dict) else getattr(value, "op", None)


class MoveStep(BaseModel):
    op: Literal["move"]
    to: str


class WaitStep(BaseModel):
    op: Literal["wait"]
    seconds: int


class RunSteps(BaseModel):
    """Steps told apart by a function."""

    steps: list[
        Annotated[
            Annotated[MoveStep, Tag("move")] | Annotated[WaitStep, Tag("wait")],
            Discriminator(_step_kind),
        ]
    ]


def _shape_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        return "circle" if "radius" in value else "square" if "side" in value else None
    return "circle" if isinstance(value, CircleShape) else "square"


class CircleShape(BaseModel):
    radius: float


class SquareShape(BaseModel):
    side: float


class DrawShape(BaseModel):
    """A shape told apart by the fields it has."""

    shape: Annotated[
        Annotated[CircleShape, Tag("circle")] | Annotated[SquareShape, Tag("square")],
        Discriminator(_shape_kind),
    ]


@pytest.mark.parametrize("precheck", [True, False])
def test_a_callable_discriminator_is_reported_at_the_tag_the_branches_share(
    precheck: bool,
) -> None:
    # Pydantic names a callable discriminator by its function (`_step_kind()`), which is no
    # key of the arguments: it was reported as the path `/steps/0/_step_kind()`.
    tools = Toolset([RunSteps, DrawShape])
    given = tools if precheck else None
    wrong = tools.validate(call("run_steps", '{"steps": [{"op": "jump"}]}', tools=given))
    assert [e.as_payload() for e in wrong.errors] == [
        {
            "path": "/steps/0/op",
            "code": "enum",
            "expected": 'one of "move", "wait"',
            "got": '"jump"',
        }
    ]
    absent = tools.validate(call("run_steps", '{"steps": [{"to": "a"}]}', tools=given))
    assert [(e.path, e.code, e.expected) for e in absent.errors] == [
        ("/steps/0/op", "missing", 'required: one of "move", "wait"')
    ]
    # No member holds a constant in every branch: the value itself is what to fix.
    shapeless = tools.validate(call("draw_shape", '{"shape": {}}', tools=given))
    assert "()" not in json.dumps([e.as_payload() for e in shapeless.errors])
    assert ("/shape", "type", "an object with radius or an object with side") in [
        (e.path, e.code, e.expected) for e in shapeless.errors
    ]


class SlashedDay(BaseModel):
    """A field validator that reads the day in another spelling."""

    day: Annotated[
        date, BeforeValidator(lambda v: v.replace("/", "-") if isinstance(v, str) else v)
    ]
    count: int


@pytest.mark.parametrize("precheck", [True, False])
def test_a_field_validator_may_take_what_its_type_alone_would_not(precheck: bool) -> None:
    # The value a field's own validator sees first is free, as in the pre-check; a model
    # validator leaves each field held to its type (`check_in` above).
    tools = Toolset([SlashedDay])
    given = tools if precheck else None
    outcome = tools.validate(
        call("slashed_day", '{"day": "2024/05/01", "count": "2"}', tools=given)
    )
    assert outcome.ok and outcome.model == SlashedDay(day=date(2024, 5, 1), count=2)
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/count", "number_string")]


class LegacyKeys(BaseModel):
    """A model validator that reads an old key."""

    day: str
    count: int

    @model_validator(mode="before")
    @classmethod
    def read_old_key(cls, data: Any) -> Any:
        if isinstance(data, dict) and "date" in data:
            data = {k: v for k, v in data.items() if k != "date"} | {"day": data["date"]}
        return data


@pytest.mark.parametrize("precheck", [True, False])
def test_a_key_a_model_validator_reads_is_no_unknown_field_after_a_coercion(
    precheck: bool,
) -> None:
    # The pre-check leaves such a model's keys free; after a coercion elsewhere, the key the
    # validator reads was refused as an unknown field of the closed validation schema.
    tools = Toolset([LegacyKeys])
    given = tools if precheck else None
    outcome = tools.validate(call("legacy_keys", '{"date": "May 1", "count": "2"}', tools=given))
    assert outcome.ok and outcome.model == LegacyKeys(day="May 1", count=2)
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/count", "number_string")]
