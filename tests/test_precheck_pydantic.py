"""The pre-check on schemas Pydantic generates: what Pydantic writes and reads must pass."""

from __future__ import annotations

import itertools
import json
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import IntEnum
from ipaddress import IPv6Address
from typing import Annotated, Any, Literal
from uuid import UUID
from zoneinfo import ZoneInfo

import jsonschema
import pytest
from pydantic import (
    AliasChoices,
    AliasPath,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    NaiveDatetime,
    SecretStr,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from toolwire import Assembler, Outcome, Toolset


def stream(toolset: Toolset, name: str, arguments: str) -> tuple[list[str], Outcome]:
    """Feeds the arguments cut at every point, as str and as bytes; returns every error seen
    (early or on the finished call) and the last outcome."""
    errors: list[str] = []
    outcomes: list[Outcome] = []
    for cut in range(1, len(arguments)):
        for data in (arguments, arguments.encode()):
            assembler = Assembler(tools=toolset)
            assembler.feed(0, id="call_1", name=name, arguments=data[:cut])
            assembler.feed(0, arguments=data[cut:])
            errors += [e.message for _, e in assembler.drain_errors()]
            (call,) = assembler.finish()
            if call.error is not None:
                errors.append(call.error.message)
            outcomes.append(toolset.validate(call))
    assert len({o.ok for o in outcomes}) == 1
    return errors, outcomes[-1]


class Alarm(BaseModel):
    at: time
    snooze: timedelta | None = None
    created: AwareDatetime | None = None


@pytest.mark.parametrize(
    "value",
    [
        Alarm(at=time(7, 30)),
        Alarm(at=time(7, 30, 5, 250), snooze=timedelta(minutes=-5)),
        Alarm(at=time(7, 30, tzinfo=timezone.utc), snooze=timedelta(days=-1, seconds=5)),
    ],
)
def test_times_and_durations_as_pydantic_writes_them(value: Alarm) -> None:
    # A naive `time` is written without an offset and a negative `timedelta` with a sign.
    errors, outcome = stream(Toolset([Alarm]), "alarm", value.model_dump_json())
    assert errors == []
    assert outcome.ok and outcome.model == value


@pytest.mark.parametrize(
    "arguments",
    [
        {"at": "07:30"},
        {"at": "07:30:00+0100"},
        {"at": "07:30:00", "snooze": "P1W1D"},
        {"at": "07:30:00", "created": "2024-03-05 14:30:00Z"},
        {"at": "07:30:00", "created": "2024-03-05T14:30+01:00"},
        {"at": "07:30:00", "created": "2024-03-05T14:30:00+0100"},
        {"at": "07:30:00", "snooze": "01:30:00"},
        {"at": "07:30:00", "snooze": "1 day, 01:02:03"},
        {"at": "07:30:00", "snooze": "2d"},
        {"at": "07:30:00,5"},
        {"at": "07:30:00", "created": "2024-03-05T14:30:00,25Z"},
    ],
)
def test_forms_pydantic_reads_are_not_rejected_early(arguments: dict[str, str]) -> None:
    toolset = Toolset([Alarm])
    errors, outcome = stream(toolset, "alarm", json.dumps(arguments))
    assert errors == []
    assert outcome.ok


def test_malformed_times_are_still_rejected_early() -> None:
    toolset = Toolset([Alarm])
    for bad in ({"at": "7:30"}, {"at": "07:30:00", "snooze": "1 week"}):
        errors, outcome = stream(toolset, "alarm", json.dumps(bad))
        assert errors and not outcome.ok


def test_naive_datetime_without_a_default_zone_is_still_an_early_error() -> None:
    arguments = '{"at": "07:30", "created": "2024-03-05T14:30:00"}'
    errors, outcome = stream(Toolset([Alarm]), "alarm", arguments)
    assert errors and not outcome.ok


class Signup(BaseModel):
    username: Annotated[str, Field(pattern=r"^\w+$")]
    pin: Annotated[str, Field(pattern=r"^\d{4}$")]
    phone: Annotated[str, Field(pattern=r"^\+?[1-9]\d{1,14}$")] = "+15550100"


@pytest.mark.parametrize(
    "value",
    [
        Signup(username="José", pin="1234"),
        Signup(username="日本語", pin="١٢٣٤", phone="+1٢٣"),
    ],
)
def test_pattern_classes_are_as_wide_as_the_validators(value: Signup) -> None:
    # Pydantic (and Python's re, which jsonschema uses) read \w and \d Unicode-wide.
    toolset = Toolset([Signup])
    errors, outcome = stream(toolset, "signup", value.model_dump_json())
    assert errors == []
    assert outcome.ok and outcome.model == value
    assert jsonschema.Draft202012Validator(toolset.schema("signup")).is_valid(value.model_dump())


def test_pattern_classes_still_reject_early() -> None:
    errors, outcome = stream(Toolset([Signup]), "signup", '{"username": "a b", "pin": "12a4"}')
    assert errors and not outcome.ok


class Price(BaseModel):
    amount: Annotated[float, Field(multiple_of=0.01)]


def test_float_multiple_of_takes_floating_point_rounding_as_pydantic_does() -> None:
    value = Price(amount=57 * 0.01)  # 0.5700000000000001
    errors, outcome = stream(Toolset([Price]), "price", value.model_dump_json())
    assert errors == []
    assert outcome.ok and outcome.model == value
    errors, outcome = stream(Toolset([Price]), "price", '{"amount": 0.575}')
    assert errors and not outcome.ok


class Dose(BaseModel):
    amount: Annotated[float, Field(gt=0.1, le=100)]
    unit: Annotated[int, Field(le=3)] = 1


@pytest.mark.parametrize(
    "arguments",
    [
        '{"amount": 100.000000000000000001}',
        '{"amount": 1.00000000000000000001e2, "unit": 3}',
        '{"amount": 99.9999999999999999999}',
    ],
)
def test_digits_beyond_a_double_are_read_as_pydantic_reads_them(arguments: str) -> None:
    # Exactly these numbers break a bound; as floats they do not, and Pydantic accepts them.
    errors, outcome = stream(Toolset([Dose]), "dose", arguments)
    assert errors == []
    assert outcome.ok


def test_bounds_broken_as_floats_are_still_early_errors() -> None:
    errors, outcome = stream(Toolset([Dose]), "dose", '{"amount": 100.0000000001}')
    assert errors and not outcome.ok


class Recipe(BaseModel):
    model_config = ConfigDict(regex_engine="python-re")
    amount: Annotated[str, Field(pattern=r"^\w+$")]


def test_pattern_word_class_is_as_wide_as_pythons() -> None:
    # Python's \w (str.isalnum) takes numerics such as "½", which Rust's \w does not.
    value = Recipe(amount="1½")
    errors, outcome = stream(Toolset([Recipe]), "recipe", value.model_dump_json())
    assert errors == []
    assert outcome.ok and outcome.model == value


class Branch(BaseModel):
    name: Annotated[str, Field(pattern=r"^[a-z0-9/_-]+$")]


class PythonBranch(Branch):
    model_config = ConfigDict(regex_engine="python-re")


def test_pattern_dollar_is_the_end_of_the_text_unless_the_model_reads_it_as_python() -> None:
    # ECMA-262 and Pydantic's default engine: "main\n" breaks the pattern, and the pre-check
    # says so while it streams. On `python-re`, `$` also holds before a final newline: the
    # pre-check leaves the model's patterns to it.
    arguments = json.dumps({"name": "main\n"})
    errors, outcome = stream(Toolset([Branch]), "branch", arguments)
    assert errors and not outcome.ok and outcome.errors[0].code == "pattern"
    errors, outcome = stream(Toolset([PythonBranch]), "python_branch", arguments)
    assert errors == []
    assert outcome.ok and outcome.model == PythonBranch(name="main\n")
    errors, outcome = stream(Toolset([PythonBranch]), "python_branch", '{"name": "a b"}')
    assert errors == [] and not outcome.ok


class Meeting(BaseModel):
    start: datetime
    tags: list[str] = []


def test_naive_datetime_with_a_default_zone_is_not_an_early_error() -> None:
    # Validation attaches the tool's default zone, so the pre-check must not refuse (or
    # signal `failed` for) a timestamp without an offset.
    toolset = Toolset([Meeting], default_tz={"meeting": timezone.utc})
    arguments = '{"start": "2024-03-05T10:00:00", "tags": ["a"]}'
    errors, outcome = stream(toolset, "meeting", arguments)
    assert errors == []
    assert outcome.ok and [c.rule for c in outcome.coercions] == ["default_timezone"]
    assembler = Assembler(tools=toolset)
    assembler.feed(0, id="call_1", name="meeting", arguments=arguments)
    assert not assembler.failed
    # Other tools, and other formats, are still checked early.
    errors, outcome = stream(Toolset([Meeting]), "meeting", arguments)
    assert errors and not outcome.ok
    errors, _ = stream(toolset, "meeting", '{"start": "2024-03-05T10:00:00", "tags": 1}')
    assert errors


class Lookup(BaseModel):
    id: UUID


@pytest.mark.parametrize(
    "value",
    [
        "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
        "2EB8AA08AA9811EAB4AA73B441D16380",
        "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}",
        "urn:uuid:2eb8aa08-aa98-11ea-b4aa-73b441d16380",
    ],
)
def test_uuid_forms_pydantic_reads_are_not_rejected_early(value: str) -> None:
    errors, outcome = stream(Toolset([Lookup]), "lookup", json.dumps({"id": value}))
    assert errors == []
    assert outcome.ok and outcome.model == Lookup(id=UUID("2eb8aa08-aa98-11ea-b4aa-73b441d16380"))


@pytest.mark.parametrize(
    "value", ["2eb8aa08aa9811eab4aa73b441d1638", "{2eb8aa08aa9811eab4aa73b441d16380}"]
)
def test_malformed_uuids_are_still_rejected_early(value: str) -> None:
    errors, outcome = stream(Toolset([Lookup]), "lookup", json.dumps({"id": value}))
    assert errors and not outcome.ok


class Booking(BaseModel):
    start: datetime
    day: date | None = None
    nights: list[date] = []


@pytest.mark.parametrize(
    "arguments",
    [
        {"start": "1700000000"},  # seconds or milliseconds? Pydantic picks by magnitude
        {"start": "1700000000000"},
        {"start": "20240305"},  # a compact date, which Pydantic reads as seconds in 1970
        {"start": "1700000000.5"},
        {"start": "-5"},
        {"start": "2024-03-05T14:30:00Z", "day": "1709596800"},
        {"start": "2024-03-05T14:30:00Z", "nights": ["2024-03-05", "-0"]},
    ],
)
def test_unix_time_as_text_in_a_date_field_is_refused_with_and_without_precheck(
    arguments: dict[str, Any],
) -> None:
    text = json.dumps(arguments)
    toolset = Toolset([Booking])
    errors, outcome = stream(toolset, "booking", text)
    assert errors and not outcome.ok
    # Without the pre-check (a provider whose stream bypassed it) the outcome is the same.
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="booking", arguments=text)
    (call,) = assembler.finish()
    direct = toolset.validate(call)
    assert not direct.ok and direct.coercions == []
    assert [e.code for e in direct.errors] == ["format"]
    assert direct.errors[0].hint is not None and "Unix" in direct.errors[0].hint
    # Also through a tool with a default time zone, where the pre-check leaves date-time out.
    zoned = Toolset([Booking], default_tz={"booking": ZoneInfo("Europe/Paris")})
    refused = zoned.validate(call)
    assert [e.code for e in refused.errors] == ["format"]


def test_dates_written_as_text_still_pass() -> None:
    value = Booking(
        start=datetime(2024, 3, 5, 14, 30, tzinfo=timezone.utc),
        day=date(2024, 3, 5),
        nights=[date(2024, 3, 5)],
    )
    errors, outcome = stream(Toolset([Booking]), "booking", value.model_dump_json())
    assert errors == [] and outcome.ok and outcome.model == value


class Peer(BaseModel):
    address: IPv6Address


@pytest.mark.parametrize("value", ["fe80::1%eth0", "fe80::1%1", "::ffff:192.168.0.1%en0"])
def test_ipv6_zone_ids_pydantic_reads_are_not_rejected_early(value: str) -> None:
    errors, outcome = stream(Toolset([Peer]), "peer", json.dumps({"address": value}))
    assert errors == []
    assert outcome.ok and outcome.model == Peer(address=IPv6Address(value))


@pytest.mark.parametrize("value", ["fe80::1%", "fe80::1%eth%0", "fe80::1%a/b", "fe80::g%eth0"])
def test_malformed_ipv6_addresses_are_still_rejected_early(value: str) -> None:
    errors, outcome = stream(Toolset([Peer]), "peer", json.dumps({"address": value}))
    assert errors and not outcome.ok


def test_plain_tools_still_refuse_ipv6_zone_ids_in_validation() -> None:
    # jsonschema's ipv6 refuses a zone id: the pre-check lets it through, validation decides,
    # and the outcome is the same with or without the pre-check.
    schema = {"type": "object", "properties": {"address": {"type": "string", "format": "ipv6"}}}
    toolset = Toolset([{"name": "peer", "parameters": schema}])
    errors, outcome = stream(toolset, "peer", json.dumps({"address": "fe80::1%eth0"}))
    assert not outcome.ok and [e.code for e in outcome.errors] == ["format"]
    errors, outcome = stream(toolset, "peer", json.dumps({"address": "fe80::1"}))
    assert errors == [] and outcome.ok


@pytest.mark.parametrize(
    "value",
    [
        " ada@example.com ",
        "\tada@example.com",
        "Ada Lovelace <ada@example.com>",
        '"Lovelace, Ada" <ada@example.com>',
    ],
)
def test_email_forms_pydantic_reads_are_not_rejected_early(value: str) -> None:
    # `EmailStr` strips whitespace and reads the address out of a display-name form.
    pytest.importorskip("email_validator")
    from pydantic import EmailStr

    class Invite(BaseModel):
        email: EmailStr

    errors, outcome = stream(Toolset([Invite]), "invite", json.dumps({"email": value}))
    assert errors == []
    assert outcome.ok and outcome.model == Invite(email="ada@example.com")


@pytest.mark.parametrize("value", ["ada@", "Ada <ada.example.com>", "Ada <ada@example.com"])
def test_malformed_emails_are_still_rejected_early(value: str) -> None:
    pytest.importorskip("email_validator")
    from pydantic import EmailStr

    class Invite(BaseModel):
        email: EmailStr

    errors, outcome = stream(Toolset([Invite]), "invite", json.dumps({"email": value}))
    assert errors and not outcome.ok


class Stripped(BaseModel):
    code: Annotated[str, StringConstraints(strip_whitespace=True, max_length=3)]
    word: Annotated[str, StringConstraints(strip_whitespace=True, pattern=r"^[a-z]+$")]
    raw: Annotated[str, StringConstraints(max_length=3)] = "x"


class StrippedByConfig(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)
    code: Annotated[str, StringConstraints(max_length=2)]
    inner: Annotated[str, StringConstraints(to_lower=True, pattern=r"^[a-z]+$")] = "a"


def test_strings_pydantic_strips_before_checking_are_not_rejected_early() -> None:
    # Pydantic strips first, then checks length and pattern: " abc " is three letters to it.
    tools = Toolset([Stripped, StrippedByConfig])
    errors, outcome = stream(tools, "stripped", '{"code": " abc ", "word": "  ok "}')
    assert errors == [] and outcome.ok
    errors, outcome = stream(tools, "stripped_by_config", '{"code": " ab "}')
    assert errors == [] and outcome.ok
    # Strings Pydantic checks as sent are still checked while streaming; the export is intact.
    errors, outcome = stream(tools, "stripped", '{"code": "a", "word": "b", "raw": "long"}')
    assert errors and not outcome.ok
    # Every string of a stripping model is left to validation, which still refuses this one.
    _, outcome = stream(tools, "stripped_by_config", '{"code": "ab", "inner": "ABC"}')
    assert not outcome.ok
    exported = tools.anthropic()[0]["input_schema"]["properties"]["code"]
    assert exported["maxLength"] == 3


class Level(IntEnum):
    LOW = 1
    HIGH = 2


class Switches(BaseModel):
    size: Literal[1, 2] = 1
    on: Literal[True] = True
    level: Level = Level.LOW
    either: int | bool = 0


@pytest.mark.parametrize(
    ("arguments", "ok"),
    [
        ('{"size": true}', False),
        ('{"on": 1}', False),
        ('{"level": true}', False),
        ('{"size": 2, "on": true, "level": 2}', True),
        ('{"size": 1.0}', True),
        ('{"either": true}', True),
    ],
)
def test_booleans_and_numbers_in_enums_are_told_apart_with_or_without_precheck(
    arguments: str, ok: bool
) -> None:
    # Strict Pydantic takes `true` for `Literal[1]` (True == 1 in Python); JSON and the
    # pre-check do not. The outcome must not depend on whether the pre-check ran.
    tools = Toolset([Switches])
    errors, outcome = stream(tools, "switches", arguments)
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="switches", arguments=arguments)
    (call,) = assembler.finish()
    unchecked = tools.validate(call)
    assert outcome.ok is unchecked.ok is ok
    assert bool(errors) is not ok
    if not ok:
        assert [e.code for e in unchecked.errors] == ["type"]


class Cat(BaseModel):
    kind: Literal["cat"]
    meow: int = 0


class Dog(BaseModel):
    kind: Literal["dog"]
    bark: str = ""


class Adopt(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    backup: Cat | Dog | None = None


@pytest.mark.parametrize(
    ("arguments", "path", "allowed"),
    [
        ('{"pet": {"kind": "cat", "bark": "x"}}', "/pet/bark", "kind, meow"),
        (
            '{"pet": {"kind": "dog", "bark": "x"}, "backup": {"kind": "cat", "bark": "y"}}',
            "/backup/bark",
            "kind, meow",
        ),
    ],
)
def test_a_field_the_tagged_branch_lacks_is_named(arguments: str, path: str, allowed: str) -> None:
    # The tag picks the branch: the payload names the stray field and that branch's fields,
    # not "expected an object" at the union.
    errors, outcome = stream(Toolset([Adopt]), "adopt", arguments)
    assert errors and not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [(path, "unknown_field")]
    assert outcome.errors[0].expected is not None and allowed in outcome.errors[0].expected


class Segment(BaseModel):
    span: tuple[int, str]
    rest: tuple[int, ...] = ()


def test_tuple_positions_coerce_and_explain_like_list_items() -> None:
    # `1.0` in an integer position is recorded and accepted, as in a `list[int]`; a wrong
    # value there is described by that position's own schema.
    toolset = Toolset([Segment])
    errors, outcome = stream(toolset, "segment", '{"span": [2.0, "a"], "rest": [3.0]}')
    assert errors == []
    assert outcome.ok and outcome.model == Segment(span=(2, "a"), rest=(3,))
    assert [(c.path, c.rule) for c in outcome.coercions] == [
        ("/span/0", "integral_number"),
        ("/rest/0", "integral_number"),
    ]
    errors, outcome = stream(toolset, "segment", '{"span": [1.5, 2]}')
    assert errors and not outcome.ok
    assert [(e.path, e.expected) for e in outcome.errors] == [
        ("/span/0", "an integer"),
        ("/span/1", "a string"),
    ]


def test_a_tuple_too_short_says_how_many_items_it_needs() -> None:
    # Pydantic names the missing position; the pre-check's item count, kept beside it, must
    # say how many items the tuple takes, not "expected an array" for an array.
    errors, outcome = stream(Toolset([Segment]), "segment", '{"span": [1]}')
    assert errors and not outcome.ok
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [
        ("/span/1", "missing", "required: a string"),
        ("/span", "length", "at least 2 items and at most 2 items"),
    ]


class Invoice(BaseModel):
    quantity: int
    total: Decimal


@pytest.mark.parametrize("quantity", ["9.0", "9e0", "9E0", "90e-1"])
def test_an_integral_fraction_is_recorded_beside_a_decimal_field(quantity: str) -> None:
    # A tool with a Decimal field has its numbers re-read exactly: `9e0` must stay the
    # fraction the model wrote, so turning it into the integer 9 is listed like `9.0` is.
    arguments = f'{{"quantity": {quantity}, "total": 19.99}}'
    errors, outcome = stream(Toolset([Invoice]), "invoice", arguments)
    assert errors == []
    assert outcome.ok and outcome.model == Invoice(quantity=9, total=Decimal("19.99"))
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/quantity", "integral_number")]


def assert_read_as_pydantic_reads(model: type[BaseModel], arguments: str) -> None:
    """Streams `arguments` to a toolset of `model`: no early error, and Pydantic's model."""
    toolset = Toolset([model])
    (name,) = toolset.names()
    errors, outcome = stream(toolset, name, arguments)
    assert errors == []
    assert outcome.ok and outcome.model == model.model_validate_json(arguments)


class MoveFile(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel)

    source_path: str
    dry_run: bool = False


class Rename(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(validation_alias=AliasChoices("name", "title"))
    folder: str = Field(
        default="/", validation_alias=AliasChoices("folder", AliasPath("target", "folder"))
    )


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (MoveFile, '{"source_path": "/a", "dry_run": true}'),
        (MoveFile, '{"sourcePath": "/a", "dry_run": true}'),
        (Rename, '{"title": "report"}'),
        (Rename, '{"name": "report", "target": {"folder": "/tmp"}}'),
    ],
)
def test_every_key_pydantic_reads_a_field_from_is_allowed(
    model: type[BaseModel], arguments: str
) -> None:
    # By name next to the alias, each of an `AliasChoices`, an `AliasPath`'s first key: the
    # schema Pydantic writes names one key per field, yet the model reads all of them.
    assert_read_as_pydantic_reads(model, arguments)


class _FolderByPath(BaseModel):
    name: str
    folder: str = Field(default="/", validation_alias=AliasPath("target", "folder"))


class _Nested(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inner: _FolderByPath


@pytest.mark.parametrize("model", [_FolderByPath, _Nested])
def test_a_field_read_only_along_a_path_is_refused_at_build(model: type[BaseModel]) -> None:
    # Pydantic writes the field under its name, a key it never reads: the model, held to
    # that schema, sent `"folder": "/x"`, and the call ran with the default "/" (under
    # `extra="forbid"` it was refused as unknown, "did you mean folder?", every time).
    with pytest.raises(ValueError, match=r"field 'folder' of _FolderByPath is read only along"):
        Toolset([model])


def test_a_field_read_along_a_path_and_by_its_name_is_kept() -> None:
    class ByName(_FolderByPath):
        model_config = ConfigDict(validate_by_name=True)

    toolset = Toolset([ByName])
    _, outcome = stream(toolset, "by_name", '{"name": "a", "folder": "/x"}')
    assert outcome.ok and outcome.model == ByName(name="a", folder="/x")


class Profile(BaseModel):
    # Extra inputs ignored: a key Pydantic does not read for the field is no error.
    model_config = ConfigDict(populate_by_name=True, alias_generator=to_camel)

    user_name: str
    title: str = Field(default="", validation_alias=AliasChoices("title", "heading"))


@pytest.mark.parametrize(
    ("arguments", "early"),
    [
        ('{"userName": "ada", "user_name": 7}', True),
        ('{"user_name": 7, "userName": "ada"}', True),
        ('{"user_name": "ada", "heading": 3, "title": "x"}', True),
        ('{"userName": "ada", "user_name": "bob"}', False),
        ('{"user_name": "ada", "heading": "h", "title": "x"}', False),
    ],
)
def test_a_later_key_beside_the_first_is_checked_early_and_refused(
    arguments: str, early: bool
) -> None:
    # Pydantic takes the alias (or the first choice) and drops the value under the other key
    # without a word, but validation refuses the call whatever the values: which one the model
    # meant is a guess. So the value under the later key is checked as it streams, as any
    # value of the field is: a wrong one is an early error, which the call is refused for
    # anyway.
    toolset = Toolset([Profile])
    errors, outcome = stream(toolset, "profile", arguments)
    assert bool(errors) is early
    assert outcome.kind == "model_error"
    # The model is told the one thing to fix, with extra inputs forbidden or not: send the
    # field once (a wrong value under the key it drops is moot then).
    assert [(e.path, e.code) for e in outcome.errors] == [("", "unique")]


class Transfer(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    amount_cents: int = Field(alias="amountCents")


class Refund(BaseModel):
    amount: int = Field(validation_alias=AliasChoices("amount", AliasPath("money", "cents")))


class Transfers(BaseModel):
    items: list[Transfer]


@pytest.mark.parametrize(
    ("model", "arguments", "path", "got", "first"),
    [
        (
            Transfer,
            '{"amountCents": 100, "amount_cents": 500000}',
            "",
            "amount_cents",
            "amountCents",
        ),
        (
            Transfer,
            '{"amount_cents": 500000, "amountCents": 100}',
            "",
            "amount_cents",
            "amountCents",
        ),
        (Refund, '{"amount": 5, "money": {"cents": 5000}}', "", "money", "amount"),
        # Forbidding extra inputs, Pydantic refuses the second key as one: no "no such field"
        # for a key the field is read from.
        (MoveFile, '{"sourcePath": "/a", "source_path": "/b"}', "", "source_path", "sourcePath"),
        (
            Transfers,
            '{"items": [{"amountCents": 1}, {"amountCents": 2, "amount_cents": 3}]}',
            "/items/1",
            "amount_cents",
            "amountCents",
        ),
    ],
)
def test_two_keys_of_one_field_are_refused_not_one_dropped(
    model: type[BaseModel], arguments: str, path: str, got: str, first: str
) -> None:
    toolset = Toolset([model])
    (name,) = toolset.names()
    for precheck in (True, False):
        assembler = Assembler(tools=toolset) if precheck else Assembler()
        assembler.feed(0, id="call_1", name=name, arguments=arguments)
        (call,) = assembler.finish()
        outcome = toolset.validate(call)
        assert not outcome.ok
        (error,) = outcome.errors
        assert (error.path, error.code, error.got) == (path, "unique", json.dumps(got))
        assert error.hint is not None and json.dumps(first) in error.hint


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (Transfer, '{"amount_cents": 500}'),
        (Transfer, '{"amountCents": 500}'),
        (Refund, '{"money": {"cents": 5}}'),
        # `money` without the path's last key holds no value for the field.
        (Refund, '{"amount": 5, "money": {"euros": 5}}'),
    ],
)
def test_one_key_of_several_is_read_as_pydantic_reads_it(
    model: type[BaseModel], arguments: str
) -> None:
    assert_read_as_pydantic_reads(model, arguments)


class SharedKeys(BaseModel):
    # "x" is the second choice of `x` and the first of `y`: a key two fields read.
    model_config = ConfigDict(extra="forbid")

    x: int = Field(validation_alias=AliasChoices("k", "x"))
    y: str = Field(default="", validation_alias=AliasChoices("x", "y"))


class Swapped(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    a: int = Field(alias="b")
    b: str = Field(default="d", alias="a")


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (SharedKeys, '{"k": 1, "y": "s"}'),
        (SharedKeys, '{"k": 1, "x": "s"}'),
        (Swapped, '{"b": 1, "a": "s"}'),
    ],
)
def test_a_key_two_fields_read_is_checked_against_neither(
    model: type[BaseModel], arguments: str
) -> None:
    # Which field (or both) takes the value depends on the other keys: validation judges it.
    assert_read_as_pydantic_reads(model, arguments)


class ByName(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    user_id: int = Field(alias="userId")
    note: str = Field(default="", alias="noteText")


class ByNameForbid(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_by_name=True, alias_generator=to_camel)

    user_id: int
    org_id: int
    page_size: int = 10


class ByChoice(BaseModel):
    user_id: int = Field(validation_alias=AliasChoices("userId", "uid"))


class ByNameNullable(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    user_id: int | None = Field(alias="userId")


class HoldsByName(BaseModel):
    owner: ByName
    others: list[ByChoice] = []


# Each model, with the keys its required fields are read from, then those of an optional
# field or one the model does not read.
_READ_UNDER_SEVERAL_KEYS = [
    (ByName, [["userId", "user_id"]], ["noteText", "note", "uid"]),
    (ByNameForbid, [["userId", "user_id"], ["orgId", "org_id"]], ["pageSize", "page_size"]),
    (ByChoice, [["userId", "uid"]], ["user_id"]),
    (ByNameNullable, [["userId", "user_id"]], ["uid"]),
]


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (ByName, "{}"),
        (ByName, '{"noteText": "x"}'),
        (ByName, '{"userId": null}'),
        (ByNameForbid, "{}"),
        (ByNameForbid, '{"userId": null, "orgId": 1}'),
        (ByNameForbid, '{"user_id": null, "org_id": 1}'),
        (ByNameForbid, '{"pageSize": 5, "orgId": 1}'),
        (ByNameForbid, '{"user_id": 5}'),
        (ByChoice, "{}"),
        (ByChoice, '{"userId": null}'),
        (ByNameNullable, "{}"),
        (HoldsByName, '{"owner": {}}'),
        (HoldsByName, '{"owner": {"userId": null}}'),
        (HoldsByName, '{"owner": {"userId": 1}, "others": [{"uid": 2}, {}]}'),
    ],
)
def test_a_required_field_read_under_several_keys_is_missed_early(
    model: type[BaseModel], arguments: str
) -> None:
    # A required field Pydantic reads by name as well as by alias (or under each of an
    # `AliasChoices`) was required under none of its keys in the pre-check, and its alias took
    # null as "absent" there: the pre-check let through, to the end, a call that validation
    # refuses for that field, which a field read under one key is refused for early.
    toolset = Toolset([model])
    (name,) = toolset.names()
    errors, outcome = stream(toolset, name, arguments)
    assert errors and not outcome.ok
    # The model hears what validation alone finds: the early finding adds nothing to it.
    late = toolset.validate(_assembled(None, name, arguments))
    assert [(e.path, e.code) for e in outcome.errors] == [(e.path, e.code) for e in late.errors]


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (ByName, '{"userId": 1}'),
        (ByName, '{"user_id": 1}'),
        (ByName, '{"user_id": 1, "note": null}'),
        (ByName, '{"userId": 1, "noteText": null}'),
        (ByNameForbid, '{"userId": 1, "org_id": 2}'),
        (ByNameForbid, '{"user_id": 1, "orgId": 2, "page_size": 5}'),
        (ByNameForbid, '{"userId": 1, "orgId": 2, "pageSize": null}'),
        (ByChoice, '{"userId": 1}'),
        (ByChoice, '{"uid": 1}'),
        (ByNameNullable, '{"userId": null}'),
        (ByNameNullable, '{"user_id": null}'),
        (HoldsByName, '{"owner": {"user_id": 1}, "others": [{"uid": 2}, {"userId": 3}]}'),
    ],
)
def test_a_required_field_read_under_any_of_its_keys_passes_early(
    model: type[BaseModel], arguments: str
) -> None:
    # The other direction: whichever key supplies the field, the pre-check takes the call (a
    # null for an optional field, under any of its keys, reads as absent).
    toolset = Toolset([model])
    (name,) = toolset.names()
    errors, outcome = stream(toolset, name, arguments)
    assert errors == [] and outcome.ok


@pytest.mark.parametrize(("model", "required", "others"), _READ_UNDER_SEVERAL_KEYS)
def test_the_precheck_takes_every_call_validation_takes_for_fields_read_under_several_keys(
    model: type[BaseModel], required: list[list[str]], others: list[str]
) -> None:
    # Every mix of the keys, each absent, null or a value: what validation takes, the
    # pre-check must take (a false early error is worse than a miss); a call where a required
    # field has none of its keys, it refuses.
    toolset = Toolset([model])
    (name,) = toolset.names()
    keys = [key for group in required for key in group] + others
    for choice in range(3 ** len(keys)):
        arguments: dict[str, Any] = {}
        for key in keys:
            choice, pick = divmod(choice, 3)
            if pick:
                arguments[key] = None if pick == 1 else (1 if "Text" not in key else "x")
        text = json.dumps(arguments)
        prechecked = _assembled(toolset, name, text)
        if toolset.validate(_assembled(None, name, text)).ok:
            assert prechecked.error is None, text
            assert toolset.validate(prechecked).ok, text
        if any(not any(key in arguments for key in group) for group in required):
            assert prechecked.error is not None, text


class Search(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    max_results: int = Field(default=10, le=50)
    sort_order: Literal["asc", "desc"] = "asc"
    title: str = Field(default="", max_length=3, validation_alias=AliasChoices("title", "name"))


class SearchForbid(Search):
    model_config = ConfigDict(extra="forbid")


class Window(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True)

    page_size: int | None = Field(default=None, le=5)
    start_at: int | None = Field(ge=0)


class Located(BaseModel):
    title: str = Field(
        default="",
        max_length=3,
        validation_alias=AliasChoices(
            "title", AliasPath("meta", "title"), AliasPath("tags", 1), AliasPath("last", -1)
        ),
    )


class LocatedForbid(Located):
    model_config = ConfigDict(extra="forbid")


class Counted(BaseModel):
    # Lax: Pydantic takes "3" for the integer, where coercion records it.
    model_config = ConfigDict(strict=False)

    count: int = Field(
        default=0,
        le=5,
        validation_alias=AliasChoices(
            "count", "n", AliasPath("meta", "count"), AliasPath("tags", 1)
        ),
    )


class AfterShared(BaseModel):
    # "s" is read by both fields; "k" holds `a` only where "s" is absent, which the stream
    # cannot tell yet.
    a: int = Field(default=0, le=5, validation_alias=AliasChoices("s", "k"))
    b: int = Field(default=0, validation_alias="s")


class SharedKeysIgnored(SharedKeys):
    model_config = ConfigDict(extra="ignore")


class Saved(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    saved_search: Search
    history: list[SearchForbid] = []


_GOOD, _LONG = "ab", "toolong"
# Per model, each key with the values tried under it (besides leaving it out), and the
# values among them the field refuses (what the pre-check must catch where no other key of
# the field comes).
_KEYS_AND_VALUES: list[tuple[type[BaseModel], list[list[str]], dict[str, list[Any]], list[Any]]] = [
    (
        model,
        [["maxResults", "max_results"], ["sortOrder", "sort_order"], ["title", "name"]],
        {
            "maxResults": [None, 5, 500, "many"],
            "max_results": [None, 5, 500, "many"],
            "sortOrder": [None, "asc", "random"],
            "sort_order": [None, "asc", "random"],
            "title": [None, _GOOD, _LONG],
            "name": [None, _GOOD, _LONG],
        },
        [500, "many", "random", _LONG],
    )
    for model in (Search, SearchForbid)
] + [
    (
        Window,
        [["pageSize", "page_size"], ["startAt", "start_at"]],
        {key: [None, 1, 9, -1, "x"] for key in ("pageSize", "page_size", "startAt", "start_at")},
        ["x"],
    ),
    *(
        (
            model,
            [["title", "meta", "tags"], ["last"]],
            {
                "title": [None, _GOOD, _LONG],
                "meta": [None, "x", {}, {"title": _GOOD}, {"title": _LONG, "other": 1}],
                "tags": [None, "x", [_LONG], [_LONG, _GOOD], [_GOOD, _LONG], [1, 2]],
                "last": [None, [], [_GOOD], [_GOOD, _LONG]],
            },
            [_LONG, {"title": _LONG, "other": 1}, [_GOOD, _LONG], [1, 2]],
        )
        for model in (Located, LocatedForbid)
    ),
    (
        Counted,
        [["count", "n", "meta", "tags"]],
        {
            "count": [None, 3, "3", 9, "x"],
            "n": [None, 3, "3", 9, "x"],
            "meta": [None, 7, {"count": "3"}, {"count": 9}, {"count": None}],
            "tags": [None, [], [0, "3"], [0, 9], [9], [0, None]],
        },
        [9, "x", {"count": 9}, [0, 9]],
    ),
    (AfterShared, [], {"s": [None, 1, 9, "x"], "k": [None, 1, 9, "x"]}, []),
    *(
        (model, [["k"]], {key: [None, 1, "s"] for key in ("k", "x", "y")}, ["s"])
        for model in (SharedKeys, SharedKeysIgnored)
    ),
    (
        Saved,
        [["savedSearch", "saved_search"], ["history"]],
        {
            "savedSearch": [None, {}, {"max_results": 500}, {"name": _LONG}, {"maxResults": 1}],
            "saved_search": [None, {}, {"max_results": 500}, {"name": _GOOD, "title": _GOOD}],
            "history": [None, [{"sort_order": "random"}], [{"title": _GOOD, "name": _GOOD}]],
        },
        [{"max_results": 500}, {"name": _LONG}, [{"sort_order": "random"}]],
    ),
]


@pytest.mark.parametrize(("model", "fields", "values", "refused"), _KEYS_AND_VALUES)
def test_the_value_under_every_key_of_a_field_is_checked_early(
    model: type[BaseModel],
    fields: list[list[str]],
    values: dict[str, list[Any]],
    refused: list[Any],
) -> None:
    # A value under a field's name beside its alias (`populate_by_name`), under a later
    # `AliasChoices` key or along an `AliasPath` is the field's: the pre-check checks it as it
    # checks the value under the first key. Every mix of the keys, each absent, null, a good
    # or a wrong value: the pre-check refuses no call validation takes (a false early error is
    # worse than a miss; a value validation takes only once coerced may be an early error, as
    # under the first key, but the call still passes), and flags a wrong value sent under one
    # key of its field alone (save a path from the end of an array, which it cannot follow).
    toolset = Toolset([model])
    (name,) = toolset.names()
    keys = list(values)
    for picks in itertools.product(*(range(len(values[key]) + 1) for key in keys)):
        arguments = {
            key: values[key][pick - 1] for key, pick in zip(keys, picks, strict=True) if pick
        }
        text = json.dumps(arguments)
        prechecked = _assembled(toolset, name, text)
        late = toolset.validate(_assembled(None, name, text))
        if late.ok:
            assert prechecked.error is None or late.coercions, text
            assert toolset.validate(prechecked).ok, text
        for group in fields:
            sent = [key for key in group if key in arguments]
            if len(sent) == 1 and sent[0] != "last" and arguments[sent[0]] in refused:
                assert prechecked.error is not None, text


def test_a_wrong_value_under_a_fields_name_is_an_early_error() -> None:
    toolset = Toolset([Search])
    for arguments, path, keyword in [
        ('{"max_results": 500 }', "/max_results", "maximum"),
        ('{"sort_order": "random" }', "/sort_order", "enum"),
        ('{"name": "toolong" }', "/name", "maxLength"),
    ]:
        assembler = Assembler(tools=toolset)
        assembler.feed(0, id="call_1", name="search", arguments=arguments[:-1])
        # Found before the call ends, as under the alias.
        assert [(e.path, e.keyword) for _, e in assembler.drain_errors()] == [(path, keyword)]
        assembler.feed(0, arguments=arguments[-1:])
        (call,) = assembler.finish()
        outcome = toolset.validate(call)
        assert [e.path for e in outcome.errors] == [path]


def _assembled(toolset: Toolset | None, name: str, arguments: str) -> Any:
    assembler = Assembler(tools=toolset) if toolset is not None else Assembler()
    assembler.feed(0, id="call_1", name=name, arguments=arguments)
    (call,) = assembler.finish()
    return call


def test_a_field_read_by_name_is_still_checked_and_coerced() -> None:
    toolset = Toolset([MoveFile])
    errors, outcome = stream(toolset, "move_file", '{"source_path": 7}')
    assert errors and not outcome.ok
    errors, outcome = stream(toolset, "move_file", '{"source_path": "/a", "dry_run": "true"}')
    assert outcome.ok and [c.rule for c in outcome.coercions] == ["bool_string"]
    assert outcome.model == MoveFile(source_path="/a", dry_run=True)
    errors, outcome = stream(toolset, "move_file", '{"dry_run": true}')
    assert not outcome.ok and [e.code for e in outcome.errors] == ["missing"]


def _split_commas(value: object) -> object:
    return value.split(",") if isinstance(value, str) else value


class Labels(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tags: list[str]
    owners: Annotated[list[str], BeforeValidator(_split_commas)] = []
    limit: int = 10

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        return _split_commas(value)


class Legacy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, value: Any) -> Any:
        if isinstance(value, dict) and "title" in value:
            return {"name": value["title"]}
        return value


@pytest.mark.parametrize(
    ("model", "arguments"),
    [
        (Labels, '{"tags": "a,b", "owners": "ann,bo"}'),
        (Legacy, '{"title": "report"}'),
    ],
)
def test_values_a_before_validator_reads_are_not_rejected_early(
    model: type[BaseModel], arguments: str
) -> None:
    # A validator that runs before Pydantic's checks may accept what the schema does not show.
    assert_read_as_pydantic_reads(model, arguments)


def test_fields_without_a_before_validator_are_still_checked_early() -> None:
    errors, outcome = stream(Toolset([Labels]), "labels", '{"tags": "a", "limit": "x"}')
    assert errors and not outcome.ok


class Tagging(BaseModel):
    tags: set[str] = Field(max_length=2)
    ids: frozenset[int] = Field(default=frozenset(), max_length=1)


@pytest.mark.parametrize("arguments", ['{"tags": ["a", "a", "a"]}', '{"tags": [], "ids": [7, 7]}'])
def test_a_set_counts_its_items_once_duplicates_dropped(arguments: str) -> None:
    # Pydantic checks `max_length` on the set it built, not on the array it came from.
    assert_read_as_pydantic_reads(Tagging, arguments)


def test_a_set_over_its_size_still_fails() -> None:
    _, outcome = stream(Toolset([Tagging]), "tagging", '{"tags": ["a", "b", "c"]}')
    assert not outcome.ok and [e.code for e in outcome.errors] == ["length"]


class Shift(BaseModel):
    starts: NaiveDatetime
    breaks: list[NaiveDatetime] = []
    logged: datetime | None = None


@pytest.mark.parametrize(
    "arguments",
    [
        '{"starts": "2024-03-05T09:00:00"}',
        '{"starts": "2024-03-05T09:00:00", "breaks": ["2024-03-05T12:00:00"]}',
    ],
)
def test_a_naive_datetime_field_takes_a_timestamp_without_an_offset(arguments: str) -> None:
    # RFC 3339 asks for an offset, the one thing a NaiveDatetime refuses: read as a
    # `date-time`, such a field could take no value at all.
    assert_read_as_pydantic_reads(Shift, arguments)


def test_naive_and_aware_fields_each_say_what_they_need() -> None:
    toolset = Toolset([Shift])
    _, outcome = stream(toolset, "shift", '{"starts": "2024-03-05T09:00:00Z"}')
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [
        ("/starts", "format", "a date-time without a time zone offset, e.g. 2024-03-05T14:30:00")
    ]
    arguments = '{"starts": "2024-03-05T09:00:00", "logged": "2024-03-05T09:00:00"}'
    errors, outcome = stream(toolset, "shift", arguments)
    assert errors and [(e.path, e.code) for e in outcome.errors] == [
        ("/logged", "timezone_required")
    ]


class Vault(BaseModel):
    kind: Literal["primary", "backup"]
    pin: str = Field(max_length=4, json_schema_extra={"x-secret": True})


class Login(BaseModel):
    user: str = Field(max_length=3)
    password: SecretStr = Field(min_length=20)
    keys: list[Annotated[str, Field(pattern="^k_", json_schema_extra={"x-secret": True})]] = []
    vaults: list[Vault] = []
    recovery: Vault | None = None


def test_the_precheck_never_shows_a_secret_value() -> None:
    # Early errors go to UIs and logs: a value at (or inside) an `x-secret` or `SecretStr`
    # field reads `[redacted]` there as in validation's errors, however the text was cut,
    # while other values are shown as sent.
    toolset = Toolset([Login])
    arguments = json.dumps(
        {
            "user": "mallory",
            "password": "hunter2",
            "keys": ["k_ok", "sk-live-1"],
            "vaults": [{"kind": "primary", "pin": "123456"}],
            "recovery": {"kind": "backup", "pin": "98765"},
        }
    )
    for cut in range(1, len(arguments)):
        assembler = Assembler(tools=toolset)
        assembler.feed(0, id="c", name="login", arguments=arguments[:cut])
        early = assembler.drain_errors()
        assembler.feed(0, arguments=arguments[cut:])
        early += assembler.drain_errors()
        (call,) = assembler.finish()
        got = {e.path: e.got for _, e in early}
        assert got == {
            # As it read at the deciding byte, the fourth character, for every cut.
            "/user": "mall",
            "/password": "[redacted]",
            "/keys/1": "[redacted]",
            "/vaults/0/pin": "[redacted]",
            "/recovery/pin": "[redacted]",
        }, cut
        assert call.error is not None and call.error.got == "mallory"


class Credential(BaseModel):
    """A credential tree: each node refers to its own model."""

    token: SecretStr = Field(max_length=8)
    label: str = Field(default="", max_length=3)
    children: list[Credential] = []


class Deploy(BaseModel):
    """Deploy with a credential tree."""

    root: Credential


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_the_precheck_hides_a_secret_at_any_depth_of_a_recursive_model(depth: int) -> None:
    secret = "sk-live-DO-NOT-LEAK"
    node: dict[str, Any] = {"token": secret}
    for _ in range(depth - 1):
        node = {"token": "ok", "children": [node]}
    arguments = json.dumps({"root": node})
    assembler = Assembler(tools=Toolset([Deploy]))
    assembler.feed(0, id="c", name="deploy", arguments=arguments)
    early = assembler.drain_errors()
    (call,) = assembler.finish()
    assert call.error is not None and call.error.got == "[redacted]"
    assert [e.got for _, e in early] == ["[redacted]"]
    # Where no recursion has come back yet, other values are shown as sent.
    assembler = Assembler(tools=Toolset([Deploy]))
    assembler.feed(0, id="c", name="deploy", arguments='{"root": {"token": "a", "label": "long"}}')
    (call,) = assembler.finish()
    assert call.error is not None and call.error.got == "long"


class Latest(BaseModel):
    version: str = Field(
        default="",
        max_length=3,
        validation_alias=AliasChoices("version", AliasPath("versions", -1)),
    )


def test_a_value_along_a_path_from_the_end_is_reported_at_its_index() -> None:
    # Pydantic's `loc` holds the path's step as written (-1), which no JSON Pointer names (and
    # which once failed to be located at all).
    _, outcome = stream(Toolset([Latest]), "latest", '{"versions": ["ab", "cd", "toolong"]}')
    assert [(e.path, e.code) for e in outcome.errors] == [("/versions/2", "length")]


class Reminder(BaseModel):
    minutes: int | None = None
    note: Annotated[str, Field(max_length=3)] | None = None
    tags: list[int] | None = None
    when: Alarm | None = None


@pytest.mark.parametrize(
    ("arguments", "path", "early", "final"),
    [
        ('{"minutes": "x"}', "/minutes", "integer or null, got string", "an integer or null"),
        ('{"minutes": 1.5}', "/minutes", "integer or null, got number", "an integer or null"),
        ('{"note": 5}', "/note", "string or null, got number", "a string or null"),
        ('{"tags": "x"}', "/tags", "array or null, got string", "an array or null"),
        ('{"when": "monday"}', "/when", "object with at or null, got string", "an object or null"),
    ],
)
def test_an_optional_field_of_the_wrong_type_is_a_type_error_early(
    arguments: str, path: str, early: str, final: str
) -> None:
    # The null wrapper of `X | None` is an `anyOf`: the early error said "value matches none
    # of the allowed alternatives", where the model needs the types it may send, which final
    # validation names as a `type` error.
    tools = Toolset([Reminder])
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="reminder", arguments=arguments)
    errors = [error for _, error in assembler.drain_errors()]
    (call,) = assembler.finish()
    assert [(e.path, e.keyword, f"{e.expected}, got {e.got}") for e in errors] == [
        (path, "type", early)
    ]
    assert errors[0].message == f"expected {early}"
    outcome = tools.validate(call)
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [(path, "type", final)]
    # A value of the type one branch takes is that branch's own failure, as before.
    messages, outcome = stream(tools, "reminder", '{"note": "long"}')
    assert set(messages) == {"string is too long"} and not outcome.ok
