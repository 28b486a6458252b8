"""Safe, recorded coercion of tool-call arguments toward a tool's JSON Schema.

Coercion runs only after strict validation of the raw argument text has failed (or when a
post-validation check found a naive timestamp or a millisecond value in a Unix-seconds field).
It walks the parsed arguments alongside the tool's self-contained schema and applies a small set
of rules, each of which changes a value only when there is exactly one sensible reading. Every
change is returned as a `Coercion`; every refusal that the model should hear about is returned
as a `CoercionProblem` with a hint. Nothing is ever guessed.

Rules (names are stable; `SAFE_RULES` is the default set):

* `number_string`: `"30"` → `30` for integer fields (`"30.5"` is refused, never rounded),
  `"19.99"` → `19.99` for number fields, digits kept exactly (`Decimal`; for a `Decimal`
  field, whose own form is such text, only white space around it is, `" 19.99"`). A string
  is read as the same number sent bare is: `"1e3"` and `"30.0"` are 1000 and 30 for an
  integer field, as `1e3` and `30.0` are, and `"1e400"` is refused as out of range, as
  `1e400` is, for an integer, a number or a union of both alike.
* `integral_number`: `30.0` → `30` for integer fields.
* `bool_string`: `"true"` / `"false"` (any case) → boolean.
* `json_string`: a string holding a JSON array or object where one is expected (JSON by the
  core's rules: no `NaN`, no repeated key, no lone surrogate, at most 64 levels deep).
* `unix_ms`: a value above 10^12 in a field marked `"x-unit": "unix-seconds"` is read as
  milliseconds and divided by 1000, for integer fields only when the division is exact.
* `enum_case`: a string that equals exactly one allowed enum value ignoring case. It is the
  only rule that turns a string into an enum or const member: `"2"` for an `IntEnum` or a
  `Literal[2]` (a union's tag too) and `"true"` for a `Literal[True]` are refused (`enum`)
  whatever the rule set, as JSON Schema's `enum` never equals a string with a number or a
  boolean, and the model is shown the members as they are written (a whole float, `2.0`, is
  the member `2` by `integral_number`, as JSON Schema compares numbers by value).
* `unwrap`: top-level arguments that are one lone `params` / `parameters` / `arguments` /
  `args` / `input` object are replaced by that object, when the schema does not take that key
  (no property or pattern names it, and `additionalProperties` is `false`): in an open map
  it is a member like any other, and the call is taken as sent.
* `set_duplicates`: an array with repeated items for a model's `set[...]` or `frozenset[...]`
  field (`uniqueItems` in its schema) keeps each item's first occurrence, as the set would.
  Pydantic drops the repeats silently; this rule makes that a recorded change, and without it
  the repeats are refused (`unique`). Items are compared as the set holds them once read, by
  Python's equality: `1`, `1.0` and `true` are one member of a `set[int | bool]`, `"1.0"` and
  `"1.00"` of a `set[Decimal]`, two offsets of one instant of a `set[datetime]`, two spellings
  of one UUID of a `set[UUID]`, and two integers a float reads alike of a `set[float]`. An
  item of a type the set does not hold (`true` beside `1` in a `set[int]`) repeats nothing:
  it is refused where it stands, as it is in a plain field. A plain-dict tool's
  `uniqueItems` is a constraint, never a set: its repeats are refused whatever the rules.
* `bool_word` (opt-in only): `"yes"`/`"no"`, `"y"`/`"n"`, `"on"`/`"off"`, `"1"`/`"0"`, `1`/`0`.
* `default_timezone`: a timestamp without an offset gets the tool's declared default time zone.
  It is not part of the rule set: it applies exactly when the tool declares a time zone. Only
  the offset is appended to the text as written (an RFC 3339 date and time); a wall time the
  zone skips or passes twice is refused (`timezone_required`), as either instant is a guess.
* `null_as_absent`: `null` for an optional field whose schema does not admit null is dropped,
  so the field's default applies. Always on: strict exports of plain tools offer exactly that
  null (OpenAI's way of writing an optional parameter), and non-strict models send it too.

A string holding a number in a `date-time` or `date` field (`"1700000000"`) is refused as
`unix_timestamp` whatever the rule set: Pydantic would read it as Unix seconds or, past a
threshold of its own, as milliseconds, a guess the model should not leave to the reader (and
the pre-check, which asserts RFC 3339, refuses it too).

A JSON number that a float field would read as infinity (or, non-zero, as zero) is refused as
`out_of_range` whatever the rule set: no coercion could keep it. Likewise a number with a
fraction that a float reads as a whole one (`5.0000000000000001` is 5.0) is refused for an
integer field as `fractional_integer`: it is no integer, and the reading that makes it one
rounds what the model wrote. Any other fraction there (`2.5`) is left to validation, whose
type error gives the same advice.

A member an object names by a `patternProperties` pattern (a Pydantic `dict` whose keys are
constrained, a plain tool's map) is read by the rules as a property is, toward that pattern's
schema, not `additionalProperties`; where several patterns name its key (or a pattern and a
property, both of which hold its value), a change must suit them all, or the value is left to
validation as sent.

A field opts in to extra rules with `json_schema_extra={"x-toolwire-coerce": ["bool_word"]}`;
the rules then apply to that field and everything inside it. Anything but a list of rule names
there is refused at build (`InvalidSchemaError`).

A value the developer declared strict (`StrictInt`, `Field(strict=True)`, or any field of a
model whose config says `strict=True`; a model nested in it has its own config) gets none of
the rules that change a value (all but `set_duplicates` and `unwrap`): `"12345"` for a
`StrictInt` is refused as the type error it is, unless the field opts in to a rule by name.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, tzinfo
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, NoReturn, TypeGuard, cast
from uuid import UUID

import regex

from toolwire.jsonschema_dialect import search
from toolwire.schema_export import accepts_null

__all__ = [
    "ALL_RULES",
    "COERCE_KEY",
    "JSON_NUMBER",
    "REQUIRED_SPELLINGS_KEY",
    "SAFE_RULES",
    "SPELLINGS_KEY",
    "STRICT_KEY",
    "Coercion",
    "CoercionProblem",
    "CoercionResult",
    "CoercionSpec",
    "coerce_arguments",
    "decimal_beside_integer",
    "dumps_exact",
    "float_risk",
    "has_decimals",
    "has_floats",
    "has_repeats",
    "has_untyped",
    "is_decimal_union",
    "json_key",
    "loads_exact",
    "past_float",
    "quote_decimals",
    "resolve_rules",
    "rounds_to_whole",
]

CoercionSpec = Literal["safe", "none"] | Iterable[str]
"""What `Toolset(coercion=...)` accepts: a preset name or an explicit set of rule names."""

SAFE_RULES: frozenset[str] = frozenset(
    {
        "number_string",
        "integral_number",
        "bool_string",
        "json_string",
        "unix_ms",
        "enum_case",
        "unwrap",
        "set_duplicates",
    }
)
ALL_RULES: frozenset[str] = SAFE_RULES | {"bool_word"}

# The rules that read a value as another type or text, which a strict field refuses; dropping
# a set's repeats (as the set itself does) and unwrapping the whole arguments are not.
_CONVERTING = ALL_RULES - {"set_duplicates", "unwrap"}
# Under a strict field or model, each converting rule in force is kept as `_HELD + name` (no
# rule matches it), so that a model below that is not strict gets them back, opt-ins from
# `COERCE_KEY` above included; `_HELD` alone says that some are held.
_HELD = "held:"


def _held(rules: frozenset[str]) -> frozenset[str]:
    """`rules` under a strict field or model: the converting ones held."""
    held = rules & _CONVERTING
    if not held:
        return rules
    return (rules - held) | {_HELD + rule for rule in held} | {_HELD}


def _released(rules: frozenset[str]) -> frozenset[str]:
    """`rules` under a model that is not strict, inside one that is: the held ones back."""
    return frozenset(
        rule[len(_HELD) :] if rule.startswith(_HELD) else rule for rule in rules if rule != _HELD
    )


UNIX_MS_THRESHOLD = 10**12
"""Values above this in a Unix-seconds field are read as milliseconds (after 2001-09-09)."""

UNIT_KEY = "x-unit"
UNIX_SECONDS = "unix-seconds"
COERCE_KEY = "x-toolwire-coerce"
# Written by `Toolset` into the validation schema of a dict field whose keys are not strings:
# the JSON type each key's text stands for (`integer`, `number`, `decimal`, `boolean`), or the
# format (`date-time`, `naive-date-time`, `uuid`).
KEYS_KEY = "x-toolwire-keys"
# Written by `Toolset` into the validation schema where the developer said whether values are
# strict: `true` on a field or type declared strict (`StrictInt`, `Field(strict=True)`) and on
# a model whose config is, `false` on every other model (a model's `strict` is not its nested
# models'). Where true, the rules that change a value (`_CONVERTING`) do not apply.
STRICT_KEY = "x-toolwire-strict"
# Written by `Toolset` into the validation schema of a model read under several keys for one
# field (an alias and the field's name, an `AliasChoices`): for each such field, the paths it is
# read from, in the order Pydantic tries them.
SPELLINGS_KEY = "x-toolwire-spellings"
# Written by `Toolset` beside `required` in the validation schema of a model: the keys of its
# required fields read under several keys, which `required` cannot list (any one of them
# supplies the field). A null under one is the field's wrong value, never "absent".
REQUIRED_SPELLINGS_KEY = "x-toolwire-required-spellings"
WRAPPER_KEYS = ("params", "parameters", "arguments", "args", "input")
MAX_SHOWN = 200
# The core's default `max_depth`: JSON held in a string may nest no deeper than the arguments.
MAX_EMBEDDED_DEPTH = 64

# A number as JSON writes it (RFC 8259), the only text a numeric string is read as.
JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SURROGATE = re.compile("[\ud800-\udfff]")
# A local timestamp as RFC 3339 writes it (ASCII digits), which `default_timezone` completes.
_LOCAL_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt _][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?"
)
# A number as Pydantic's date and date-time parsers read one from a string (as a Unix time):
# a sign, digits with an optional fraction, an optional exponent. Generous on purpose: a string
# like this is no RFC 3339 text, so refusing one Pydantic would not read costs nothing.
_UNIX_TEXT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_TIMESTAMP_FORMATS = ("date-time", "date")
_TZ_SUFFIX = re.compile(r"(?:[zZ]|[-+]\d\d(?::?\d\d)?)$")
_BOOL_WORDS = {"yes": True, "no": False, "y": True, "n": False, "on": True, "off": False}
_BOOL_WORDS.update({"1": True, "0": False})
# Python's int() refuses longer digit strings (CPython's 4,300-digit cap); a coerced integer
# that long would fail there, so such strings are left for validation to reject.
_MAX_INT_DIGITS = 4300


@dataclass(frozen=True, slots=True)
class Coercion:
    """One change made to the arguments before they were validated again.

    Attributes:
        path: JSON Pointer of the changed value (`""` for the whole arguments).
        from_: The value as the model wrote it, as compact JSON cut to 200 characters.
        to: The value after the change, in the same form.
        rule: The rule that applied (see the module docs).
    """

    path: str
    from_: str
    to: str
    rule: str


@dataclass(frozen=True, slots=True)
class CoercionProblem:
    """A value that a rule recognised but refused to change, with advice for the model.

    Attributes:
        path: JSON Pointer of the value.
        code: `"ambiguous"`, `"fractional_integer"`, `"inexact_milliseconds"`,
            `"number_text"`, `"out_of_range"`, `"too_many_digits"` (an integer longer than
            the 4,300 digits Pydantic reads), `"timezone_required"`, `"unix_timestamp"`,
            `"bool_number"`, `"whole_float"` (`2.0` for an integer enum member with
            `integral_number` off), `"key_text"` or `"duplicate_key"` (a dict key, see
            `KEYS_KEY`), `"duplicate_field"` (a second key one field is read from, see
            `SPELLINGS_KEY`), or `"repeated_item"` (an item of a set field repeating an
            earlier one).
        got: The value as written, compact JSON cut to 200 characters.
        detail: Rule-specific words used in the hint (the candidate values, say; for
            `repeated_item`, the index of the item it repeats).
    """

    path: str
    code: str
    got: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class CoercionResult:
    """What `coerce_arguments` did.

    Attributes:
        value: The arguments after all coercions (the input object if nothing changed).
        coercions: Every change, in document order.
        problems: Every refusal, in document order.
        kept_items: For each array whose repeats `set_duplicates` dropped, keyed by its path
            (array indices as sent, keys as in `value`), the index as sent of each item
            `value` keeps: what an error at `/ids/1` of `value` is about in the call as sent.
    """

    value: Any
    coercions: tuple[Coercion, ...]
    problems: tuple[CoercionProblem, ...]
    kept_items: Mapping[tuple[str | int, ...], tuple[int, ...]] = field(
        default_factory=dict[tuple[str | int, ...], tuple[int, ...]]
    )


def resolve_rules(spec: CoercionSpec) -> frozenset[str]:
    """Turn `Toolset(coercion=...)` into a set of rule names.

    Args:
        spec: `"safe"`, `"none"` or an iterable of rule names.

    Returns:
        The rule names.

    Raises:
        ValueError: On an unknown preset or rule name.
        TypeError: On a spec that is no preset and no collection of rule names (`None`, a
            number: it failed as "object is not iterable"; a mapping, whose keys were read
            as the rules).
    """
    if spec == "safe":
        return SAFE_RULES
    if spec == "none":
        return frozenset()
    if isinstance(spec, str):
        raise ValueError(f"coercion must be 'safe', 'none' or a set of rule names, not {spec!r}")
    given = cast(object, spec)
    kind = type(given).__name__
    if isinstance(given, Mapping) or not isinstance(given, Iterable):
        raise TypeError(f"coercion must be 'safe', 'none' or a set of rule names, not {kind}")
    rules = frozenset(spec)
    unknown = rules - ALL_RULES
    if unknown:
        raise ValueError(
            f"unknown coercion rule(s) {sorted(unknown)}; valid rules: {sorted(ALL_RULES)}"
        )
    return rules


def loads_exact(text: str) -> Any:
    """Parse JSON keeping every non-integer number as an exact `Decimal`.

    Args:
        text: JSON text.

    Returns:
        The parsed value.

    Raises:
        ValueError: If the text is not JSON (or holds an integer past CPython's digit cap).
    """
    return json.loads(text, parse_float=_exact_number)


class _Fraction(Decimal):
    """A number the JSON text wrote with a fraction or an exponent (`9.0`, `9e0`), which
    `dumps_exact` writes back as one: the integer/fraction distinction is what validation
    and coercion (`integral_number`) read. It keeps its text as written, which `shown`
    repeats to the model (`1e309`, not `1E+309`)."""

    __slots__ = ("text",)
    text: str


# Far past a float's range either way, and within a `Decimal`'s whatever the digits before it.
_EXPONENT_CAP = 10**17


class _Unbounded(_Fraction):
    """A number whose exponent no `Decimal` holds (`1e9999999999999999999`), kept with its
    exponent capped and its text as written: no field can take it faithfully, so coercion
    refuses it as out of range wherever it is, and nothing reads it as infinity, zero or a
    number it is not."""

    __slots__ = ()


def _exact_number(text: str) -> _Fraction:
    """A JSON number with a fraction or an exponent, exactly (see `_Unbounded`)."""
    try:
        number = _Fraction(text)
    except InvalidOperation:
        digits, _, exponent = text.lower().partition("e")
        sign = "-" if exponent.startswith("-") else ""
        number = _Unbounded(f"{digits}e{sign}{_EXPONENT_CAP}")
    number.text = text
    return number


def dumps_exact(value: Any) -> str:
    """Write a parsed value back as compact JSON, `Decimal`s digit for digit.

    `json.dumps` would turn a `Decimal` into a float first (or refuse it); re-validation must
    see the digits the model wrote, so numbers are written from their exact text.

    Args:
        value: Nested dicts, lists, str, int, Decimal, float, bool and None.

    Returns:
        Compact JSON text.
    """
    try:
        # Data without a `Decimal` (a call whose numbers are all integers) is written by the
        # C encoder, as `json.dumps` writes it: 100,000 small objects in a tenth of the time
        # the walk below takes. A `Decimal` stops it where it is met; the walk then writes
        # everything, so a call with one costs at most one aborted pass more than before.
        return _plain_json(value)
    except _NotPlain:
        pass
    parts: list[str] = []
    _dump(value, parts, written=False)
    return "".join(parts)


class _NotPlain(Exception):
    """A value the standard encoder would write differently from `dumps_exact` (a `Decimal`)."""


def _not_plain(_value: object) -> NoReturn:
    raise _NotPlain


_plain_json: Callable[[object], str] = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=_not_plain
).encode


# `json.dumps(text, ensure_ascii=False)` without building an encoder for each string: a
# quarter of a microsecond instead of several, for each of the thousands of strings and numbers
# of a large call.
_quoted: Callable[[str], str] = json.encoder.encode_basestring
_LITERALS: dict[object, str] = {True: "true", False: "false", None: "null"}


def _dump(value: Any, parts: list[str], *, written: bool) -> None:
    kind: type[object] = type(cast(object, value))
    if kind is str:
        parts.append(_quoted(value))
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is bool or value is None:
        parts.append(_LITERALS[value])
    elif isinstance(value, dict):
        parts.append("{")
        for i, (key, item) in enumerate(cast(dict[str, Any], value).items()):
            if i:
                parts.append(",")
            parts.append(_quoted(key) if type(key) is str else json.dumps(key, ensure_ascii=False))
            parts.append(":")
            _dump(item, parts, written=written)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for i, item in enumerate(cast(list[Any], value)):
            if i:
                parts.append(",")
            _dump(item, parts, written=written)
        parts.append("]")
    elif written and isinstance(value, _Fraction) and hasattr(value, "text"):
        # Shown to the model as it wrote it. (A copy or a pickle of the number has lost the
        # text; its digits are then shown as validation reads them.)
        parts.append(value.text)
    elif isinstance(value, _Fraction) and value.is_finite() and value.as_tuple().exponent == 0:
        # `9e0` reads as `Decimal("9")`, whose text is the integer 9: written back as one,
        # validation would see an integer the model never wrote.
        parts.append(f"{value}.0")
    elif isinstance(value, Decimal):
        parts.append(str(value) if value.is_finite() else "null")
    else:
        parts.append(json.dumps(value, ensure_ascii=False))


def shown(value: Any) -> str:
    """Compact JSON of a value, cut to 200 characters (for reports, never for validation).

    A number parsed by `loads_exact` is written as the model wrote it: `1E+309` or `1.5E+3`
    would quote the model something it never sent.
    """
    try:
        parts: list[str] = []
        _dump(value, parts, written=True)
        text = "".join(parts)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def pointer(parts: Iterable[str | int]) -> str:
    """A JSON Pointer (RFC 6901) from path segments."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _one_number(readings: Mapping[str, tuple[Any, object]]) -> str | None:
    """The key of the reading that keeps the numbers' digits as written (the `Decimal`s of
    `number_string`) when every reading is the same value but for how its numbers are typed,
    else None: `"3.0"` read as `3` and as `3.0` is one value, and so is `["3.0"]` read as `[3]`
    and as `[3.0]`; the model's spelling decides, as the raw `3.0` would."""
    values = [r for r, _ in readings.values()]
    if not all(_same_but_number_types(values[0], v) for v in values[1:]):
        return None
    kept = max(readings, key=lambda k: _decimals(readings[k][0]))
    return kept if _decimals(readings[kept][0]) else None


def _is_number(value: Any) -> TypeGuard[int | Decimal]:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def _same_but_number_types(a: Any, b: Any) -> bool:
    """Whether two readings are one value, an integer and a `Decimal` of equal value alike."""
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = cast(dict[Any, Any], a), cast(dict[Any, Any], b)
        return left.keys() == right.keys() and all(
            _same_but_number_types(v, right[k]) for k, v in left.items()
        )
    if isinstance(a, list) and isinstance(b, list):
        left_items, right_items = cast(list[Any], a), cast(list[Any], b)
        return len(left_items) == len(right_items) and all(
            map(_same_but_number_types, left_items, right_items)
        )
    if _is_number(a) and _is_number(b):
        return Decimal(a) == Decimal(b)
    return type(cast(object, a)) is type(cast(object, b)) and a == b


def _decimals(value: Any) -> int:
    """How many numbers in a reading are `Decimal`s (digits kept as written)."""
    if isinstance(value, Decimal):
        return 1
    if isinstance(value, dict):
        return sum(map(_decimals, cast(dict[Any, Any], value).values()))
    if isinstance(value, list):
        return sum(map(_decimals, cast(list[Any], value)))
    return 0


def past_float(value: Any) -> bool:
    """Whether a parsed value is a number with a fraction or an exponent that a float cannot
    hold: JSON parsers (Pydantic's among them) read it as infinity, or a non-zero one as zero.

    Args:
        value: A value parsed by `loads_exact`.

    Returns:
        True for such a number.
    """
    return isinstance(value, Decimal) and _beyond_float(value)


def _beyond_float(value: Decimal) -> bool:
    """Whether a float would read this number as infinity, or a non-zero one as zero.

    Read as a float reads it (rounded to nearest): a number a little above the largest double
    but below the midpoint to the next power of two is that double, not infinity."""
    as_float = float(value)
    return math.isinf(as_float) or (bool(value) and not as_float)


def schema_has(schema: Mapping[str, Any], verdict: Callable[[dict[str, Any]], bool | None]) -> bool:
    """Whether some subschema is found: `verdict` says True (found), False (not below this
    node) or None (look inside)."""

    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            as_dict = cast(dict[str, Any], node)
            said = verdict(as_dict)
            if said is not None:
                return said
            return any(walk(value) for value in as_dict.values())
        if isinstance(node, list):
            return any(walk(value) for value in cast(list[Any], node))
        return False

    return walk(schema)


def _reaches(
    node: Mapping[str, Any], defs: Mapping[str, Any], found: Callable[[Mapping[str, Any]], bool]
) -> bool:
    """Whether `found` holds for `node` or any subschema below it, local `$ref`s to `defs`
    followed (each definition once)."""
    seen: set[int] = set()

    def walk(item: object) -> bool:
        if isinstance(item, list):
            return any(walk(sub) for sub in cast(list[object], item))
        if not isinstance(item, dict):
            return False
        as_dict = cast(dict[str, object], item)
        if id(as_dict) in seen:
            return False
        seen.add(id(as_dict))
        if found(as_dict):
            return True
        ref = as_dict.get("$ref")
        if isinstance(ref, str) and walk(defs.get(ref.rsplit("/", 1)[-1])):
            return True
        return any(walk(sub) for key, sub in as_dict.items() if key != "$defs")

    return walk(node)


def has_floats(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has a float (`"type": "number"`) position outside `Decimal` fields."""

    def verdict(node: dict[str, Any]) -> bool | None:
        if is_decimal_union(node):
            return False
        return True if "number" in _types(node) else None

    return schema_has(schema, verdict)


# Keywords that give a value a schema of its own; a node with none of them takes any data.
_SHAPING = frozenset(
    (
        "type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf", "not", "if",
        "properties", "patternProperties", "additionalProperties", "items", "prefixItems",
    )
)  # fmt: skip


def is_untyped(node: Mapping[str, Any]) -> bool:
    """Whether a schema node takes any JSON data (`{}`, or only annotations): Pydantic's `Any`."""
    return _SHAPING.isdisjoint(node)


def has_untyped(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has a position that takes any data: an untyped node, an array without
    an item schema, or an object open to members no schema describes."""

    def visit(node: Any) -> bool:
        if not isinstance(node, dict):
            return False
        as_dict = cast(dict[str, Any], node)
        if is_untyped(as_dict):
            return True
        kinds = _types(as_dict)
        if "array" in kinds and not isinstance(as_dict.get("items"), dict):
            return True
        extra = as_dict.get("additionalProperties", True)
        if "object" in kinds and extra is True and not as_dict.get("patternProperties"):
            return True
        nested: list[Any] = [as_dict.get("items"), as_dict.get("additionalProperties")]
        for key in ("properties", "$defs", "definitions", "patternProperties"):
            members = as_dict.get(key)
            if isinstance(members, dict):
                nested.extend(cast(dict[str, Any], members).values())
        for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
            branches = as_dict.get(key)
            if isinstance(branches, list):
                nested.extend(cast(list[Any], branches))
        return any(visit(sub) for sub in nested)

    return visit(schema)


_LONG_EXPONENT = re.compile(rb"[0-9][eE][-+]?[0-9]{3}")
_DIGIT_RUN = re.compile(rb"[0-9]{309}")


def float_risk(raw: bytes) -> bool:
    """Whether JSON text may hold a number a float cannot hold (one it reads as infinity, or
    as zero): such a number has a three-digit exponent or at least 309 digits in a row.
    Cheap enough for every call (two scans; an alternation would be slower)."""
    return _LONG_EXPONENT.search(raw) is not None or (
        len(raw) > 309 and _DIGIT_RUN.search(raw) is not None
    )


def _offset_text(offset: timedelta) -> str:
    """`+HH:MM` for a UTC offset (seconds kept when a zone has them)."""
    sign = "-" if offset < timedelta(0) else "+"
    seconds = int(abs(offset).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{sign}{hours:02d}:{minutes:02d}"
    return out + f":{seconds:02d}" if seconds else out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate key")
    return out


def _well_formed(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest at most `limit` levels and no string holds a lone
    surrogate (`"\\ud800"` decodes to one; it cannot be encoded as UTF-8). No recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return False
            continue
        if isinstance(item, dict):
            as_dict = cast(dict[str, Any], item)
            if any(_SURROGATE.search(key) for key in as_dict):
                return False
            children: Iterable[Any] = as_dict.values()
        elif isinstance(item, list):
            children = cast(list[Any], item)
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


_NOT_A_KEY: Any = object()
_INTEGER_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")


# Key kinds (`KEYS_KEY`) of a `datetime` key, aware or not, and what makes a key unread.
_TIMESTAMP_KEYS = ("date-time", "naive-date-time")
_UNREAD: Any = object()


def _timestamp_key(text: str) -> Any:
    """The instant (or wall time) a timestamp key names, or `_UNREAD`."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return _UNREAD


def _key_value(key: str, kind: str) -> Any:
    """The entry a dict key's text names once Pydantic converts it, or `_NOT_A_KEY` when the
    text is not how JSON writes a value of `kind` (`_UNREAD` for a UUID Python cannot read,
    which Pydantic refuses itself)."""
    if kind == "uuid":
        try:
            return UUID(key).int
        except ValueError:
            return _UNREAD
    if kind == "boolean":
        return {"true": True, "false": False}.get(key, _NOT_A_KEY)
    if kind == "integer":
        return int(key) if _INTEGER_TEXT.fullmatch(key) and len(key) <= 4300 else _NOT_A_KEY
    if not JSON_NUMBER.fullmatch(key):
        return _NOT_A_KEY
    exact = Decimal(key)
    if kind == "decimal":
        return exact
    # A float key: read as Pydantic reads it, so that two texts of one float are one entry.
    return _NOT_A_KEY if _beyond_float(exact) else float(exact)


def _holds_path(value: Any, path: list[Any]) -> bool:
    """Whether `value` has something at `path` (keys of objects, indexes of arrays), as a
    Pydantic `AliasPath` reads it."""
    for step in path:
        if isinstance(value, dict) and isinstance(step, str) and step in value:
            value = cast(dict[str, Any], value)[step]
        elif (
            isinstance(value, list)
            and isinstance(step, int)
            and -len(cast(list[Any], value)) <= step < len(cast(list[Any], value))
        ):
            value = cast(list[Any], value)[step]
        else:
            return False
    return True


def _plain_integer_keys(keys: Mapping[str, Any]) -> bool:
    """Whether every key is an integer as JSON writes one, each a different integer: the
    common case of `check_keys`, asked of 100,000 keys in C-level loops, not one at a time.

    Two such texts name one integer only as `"-0"` and `"0"` do, and a text with more digits
    than Python converts is no key (`_key_value`): either leaves the answer to that loop."""
    return (
        all(map(_INTEGER_TEXT.fullmatch, keys))
        and max(map(len, keys), default=0) <= _MAX_INT_DIGITS
        and "-0" not in keys
    )


def _position_schema(node: Mapping[str, Any], at: int) -> object:
    """The schema of item `at` of an array: its `prefixItems` entry, else `items`."""
    prefix = node.get("prefixItems")
    if isinstance(prefix, list) and at < len(cast(list[object], prefix)):
        return cast(list[object], prefix)[at]
    return node.get("items")


def _pattern_schemas(node: Mapping[str, Any], key: str) -> list[Any]:
    """The `patternProperties` schemas whose pattern takes `key`, searched as validation
    searches them: `additionalProperties: false` beside them forbids only the keys none takes.
    A plain tool's patterns all compile (its schema is checked when it is built); a pattern a
    model's `json_schema_extra` adds, which Pydantic never runs, may not, and names no key."""
    patterns = node.get("patternProperties")
    if not isinstance(patterns, dict):
        return []
    found: list[Any] = []
    for pattern, schema in cast(dict[str, Any], patterns).items():
        try:
            if search(pattern, key):
                found.append(schema)
        except (regex.error, OverflowError):
            continue
    return found


def _member_schemas(node: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The schemas an object's member `key` is validated against: its property's, else those
    of the patterns that name it, else `additionalProperties` (when it is a schema)."""
    props = node.get("properties")
    if isinstance(props, dict) and key in props:
        found: list[Any] = [cast(dict[str, Any], props)[key]]
    else:
        found = _pattern_schemas(node, key) or [node.get("additionalProperties")]
    return [cast(Mapping[str, Any], rule) for rule in found if isinstance(rule, dict)]


def _name_allowed(names: object, key: str) -> bool:
    """Whether a `propertyNames` schema takes `key`, by its `const`, `enum` and `pattern`
    (a keyword it cannot read takes it)."""
    if names is False:
        return False
    if not isinstance(names, dict):
        return True
    schema = cast(dict[str, Any], names)
    if "const" in schema and schema["const"] != key:
        return False
    enum = schema.get("enum")
    if isinstance(enum, list) and key not in cast(list[Any], enum):
        return False
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            return bool(search(pattern, key))
        except (regex.error, OverflowError):
            return True
    return True


def _types(node: Mapping[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in cast(list[Any], kind)}
    return set()


def _matches(value: Any, node: Mapping[str, Any]) -> bool:
    """Whether a value already has a type the node allows (ignoring other keywords)."""
    members = enum_members(node)
    if members is not None and not _is_member(value, members):
        return False
    return has_json_type(value, node)


def _is_member(value: Any, members: list[Any]) -> bool:
    """Whether `value` is one of `members` as validation compares them: a number written with
    a fraction or an exponent (an exact `Decimal` here) is the float it reads as, in a
    container too. `0.1` is the member `0.1`, which no `Decimal` equals: a union branch with
    that constant was passed over, and another branch's coercion rewrote a valid call."""
    if value in members:
        return True
    read = _as_floats(value)
    return read is not value and read in members


def _as_floats(value: Any) -> Any:
    """`value` with each `Decimal` in it a float (`value` itself when it holds none)."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        items = cast(list[Any], value)
        read = [_as_floats(item) for item in items]
        return items if all(a is b for a, b in zip(read, items, strict=True)) else read
    if isinstance(value, dict):
        members = cast(dict[str, Any], value)
        pairs = {key: _as_floats(item) for key, item in members.items()}
        return members if all(pairs[k] is v for k, v in members.items()) else pairs
    return value


def has_json_type(value: Any, node: Mapping[str, Any]) -> bool:
    """Whether a parsed value has a JSON type the node's `type` allows (any, without one)."""
    types = _types(node)
    if not types:
        return True
    if value is None:
        return "null" in types
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return bool(types & {"integer", "number"})
    if isinstance(value, (float, Decimal)):
        if "number" in types:
            return True
        return "integer" in types and _is_whole(value)
    if isinstance(value, str):
        return "string" in types
    if isinstance(value, list):
        return "array" in types
    if isinstance(value, dict):
        return "object" in types
    return False


def _is_whole(value: float | Decimal) -> bool:
    """Whether a number is whole, without making it an `int`: `1e300000` would take seconds
    to become one, and a `Decimal` past the context's exponents raises in arithmetic."""
    if not isinstance(value, Decimal):
        return float(value).is_integer()
    if not value.is_finite():
        return False
    _sign, digits, exponent = value.as_tuple()
    exponent = cast(int, exponent)
    # The digits after the point (all of them when the point is left of the first) are zeros.
    return exponent >= 0 or not any(digits[exponent:])


def _integral(value: Decimal) -> int | None:
    # Asked by the exponent first: arithmetic on a number past the context's exponents
    # (`1e1000000`) raises `decimal.Overflow`.
    if (
        not value.is_finite()
        or value.adjusted() > _FLOAT_MAX_EXPONENT
        or (value.copy_abs() > _FLOAT_MAX)
    ):
        # Past any float (`1e400`): Pydantic reads it as infinity and refuses it for an int, so
        # coercion does not make a 400-digit integer of it either (and an exponent past the
        # context's, asked for its integral value, would raise).
        return None
    if value != value.to_integral_value():
        return None
    if (
        len(value.as_tuple().digits) + max(cast(int, value.as_tuple().exponent), 0)
        > _MAX_INT_DIGITS
    ):
        return None
    return int(value)


_FLOAT_MAX = Decimal(sys.float_info.max)
_FLOAT_MAX_EXPONENT = sys.float_info.max_10_exp


def rounds_to_whole(value: Decimal | float | str) -> bool:
    """Whether a float rounds a number that is not whole to a whole one
    (`999.9999999999999999` reads as 1000.0, `1e-400` as 0.0).

    Args:
        value: The number exactly, or its JSON text.

    Returns:
        True when a float rounds it to a whole number it is not.
    """
    as_float = float(value)
    if not as_float.is_integer():  # infinity and NaN included
        return False
    exact = Decimal(value)
    return exact != exact.to_integral_value()


_TrialKey = tuple[int, tuple[str | int, ...], int, frozenset[str]]
"""A union trial: the value's id, its path, the branch's id and the rule set."""


def json_key(value: Any) -> Any:
    """A hashable key that two values share exactly when they are equal as JSON: `1` and
    `1.0` are one number, `true` is not `1`, member order does not count."""
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float, Decimal)):
        # Python's numbers hash and compare by value across int, float and Decimal.
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    if value is None:
        return (0,)
    if isinstance(value, list):
        return (4, tuple(json_key(item) for item in cast(list[Any], value)))
    if isinstance(value, dict):
        members = cast(dict[str, Any], value)
        return (5, frozenset((key, json_key(item)) for key, item in members.items()))
    return (6, repr(value))


def has_repeats(value: Any) -> bool:
    """Whether any array in `value` may hold two items a set would hold as one: equal as
    JSON, or under any reading `_set_key` knows (a string read as a number, a timestamp or a
    UUID, a number read as a float). It may say so of items no set would merge: the walk that
    follows decides by the items' schema."""
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(cast(dict[str, Any], item).values())
        elif isinstance(item, list):
            items = cast(list[Any], item)
            if len(items) > 1 and len({_set_key(inner, None) for inner in items}) < len(items):
                return True
            pending.extend(items)
    return False


def _formats_and_types(node: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """The `format`s and JSON types a (resolved) item schema names, its union's branches
    included (inline ones: a `$ref` branch names none)."""
    nodes = [node]
    branches = node.get("anyOf") or node.get("oneOf")
    if isinstance(branches, list):
        nodes += [b for b in cast(list[Any], branches) if isinstance(b, dict)]
    formats = {str(n["format"]) for n in nodes if "format" in n}
    types: set[str] = set()
    for n in nodes:
        types |= _types(n)
    return formats, types


def _set_key(item: Any, node: Mapping[str, Any] | None) -> Any:
    """A hashable key that two items of a set share when the set holds them as one member,
    read as the item schema `node` says (None: under every reading, for a first look).

    A set compares its members with Python's equality once Pydantic read them: `1` and `true`
    are one (as are `1` and `1.0`), a `Decimal` compares by value (`"1.0"` and `"1.00"`), a
    timestamp by instant, a UUID by its 128 bits, and a float field reads two integers past
    2**53 as one float. Anything else is compared as JSON (`json_key`).
    """
    if isinstance(item, (dict, list)):
        return json_key(item)
    formats: set[str] = set()
    types: set[str] = set()
    if node is not None:
        formats, types = _formats_and_types(node)
    if isinstance(item, (bool, int, float, Decimal)):
        # A float field reads every number as a float; in a union with an integer branch an
        # integer stays an int (and `true` stays a bool, equal to 1 all the same).
        floats = node is None or (types <= {"number", "null"} and not is_decimal_union(node))
        if floats and not isinstance(item, bool):
            try:
                return (2, float(item))
            except OverflowError:
                pass
        return (2, item)
    if not isinstance(item, str):
        return json_key(item)
    text = item.strip()
    if node is None or is_decimal_union(node):
        if JSON_NUMBER.fullmatch(text):
            number = Decimal(text)
            return (2, number if node is not None else float(number))
    if node is None or "date-time" in formats:
        try:
            return (7, datetime.fromisoformat(text))
        except ValueError:
            pass
    if node is None or "date" in formats:
        try:
            return (7, date.fromisoformat(text))
        except ValueError:
            pass
    if node is None or "uuid" in formats or any(f.startswith("uuid") for f in formats):
        try:
            return (8, UUID(text).int)
        except ValueError:
            pass
    return json_key(item)


class _Coercer:
    def __init__(
        self,
        root: Mapping[str, Any],
        rules: frozenset[str],
        default_tz: tzinfo | None,
        sets: bool = False,
        exact_ints: bool = False,
        focus: bool = False,
        repairing: bool = True,
    ) -> None:
        self.defs = cast(dict[str, Any], root.get("$defs") or {})
        self.rules = rules
        self.default_tz = default_tz
        self.sets = sets
        self.exact_ints = exact_ints
        # Whether a strict field's value is left as it is (see `coerce_arguments`).
        self.repairing = repairing
        # Walk only what may hold a dict with keys to check or a set (see `coerce_arguments`).
        self.focus = focus
        # Whether a node holds one, at or below it, by the node's identity (the node is kept
        # with its answer, so that its id is not reused meanwhile).
        self.holding: dict[int, tuple[Mapping[str, Any], bool]] = {}
        self.coercions: list[Coercion] = []
        self.problems: list[CoercionProblem] = []
        self.memo: dict[_TrialKey, tuple[Any, Any, _Coercer]] = {}
        self.unions_open: set[tuple[int, int, tuple[str | int, ...]]] = set()
        self.unit_unions: dict[int, tuple[Any, list[Mapping[str, Any]]]] = {}
        self.accepting: set[tuple[int, int]] = set()
        self.kept_items: dict[tuple[str | int, ...], tuple[int, ...]] = {}

    def deref(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        # A dict is asked first: `Mapping`'s check goes through `abc`, a tenth of the time
        # of a walk over 100,000 small objects.
        if not isinstance(cast(object, node), dict) and not isinstance(cast(object, node), Mapping):
            # A boolean subschema (`true`, `false`): nothing to coerce toward.
            return {}
        seen = 0
        while isinstance(node.get("$ref"), str) and seen < 32:
            name = str(node["$ref"]).rsplit("/", 1)[-1]
            node = cast(Mapping[str, Any], self.defs.get(name, {}))
            seen += 1
        return node

    def holds_keys_or_sets(self, node: Mapping[str, Any]) -> bool:
        """Whether a dict whose keys are not strings (`KEYS_KEY`) or, with `sets`, a set is at
        or below `node` (a resolved node)."""
        if not node:
            # Any data, or no schema at all (`deref` makes a new `{}` for each, not kept).
            return False
        known = self.holding.get(id(node))
        if known is None:
            sets = self.sets

            def found(sub: Mapping[str, Any]) -> bool:
                return (
                    KEYS_KEY in sub
                    or SPELLINGS_KEY in sub
                    or (sets and sub.get("uniqueItems") is True)
                )

            known = self.holding[id(node)] = (node, _reaches(node, self.defs, found))
        return known[1]

    def skips(self, node: object) -> bool:
        """Whether a focused walk leaves the value at `node` (a subschema, or no schema at all)
        as it is, unread."""
        return self.focus and not self.holds_keys_or_sets(self.deref(cast(Any, node)))

    def record(self, path: list[str | int], before: Any, after: Any, rule: str) -> Any:
        self.coercions.append(Coercion(pointer(path), shown(before), shown(after), rule))
        return after

    def refuse(self, path: list[str | int], code: str, got: Any, detail: str = "") -> None:
        self.problems.append(CoercionProblem(pointer(path), code, shown(got), detail))

    def walk(
        self, value: Any, node: Mapping[str, Any], path: list[str | int], rules: frozenset[str]
    ) -> Any:
        node = self.deref(node)
        if self.focus and not self.holds_keys_or_sets(node):
            return value
        if is_decimal_union(node):
            # A `Decimal` takes a number or a numeric string as it is, digit for digit.
            spaced = _spaced_number(value, node)
            if spaced is not None:
                # Pydantic strips the white space without a word, where a float field records
                # the same text as `number_string`.
                if "number_string" in rules:
                    return self.record(path, value, spaced, "number_string")
                self.refuse(path, "number_text", value)
            elif isinstance(value, str) and not decimal_text_ok(value, node):
                self.refuse(path, "number_text", value)
            return value
        if isinstance(value, Decimal) and decimal_beside_integer(node):
            # Past a float's range too (`1e400`): the `Decimal` takes it, as it does alone.
            return value
        strict = node.get(STRICT_KEY) if self.repairing else None
        if strict is True:
            rules = _held(rules)
        elif strict is False and _HELD in rules:
            rules = _released(rules)
        # After `strict`: a field that opts in to a rule by name gets it even where it is.
        extra = node.get(COERCE_KEY)
        if isinstance(extra, list):
            rules = rules | {str(r) for r in cast(list[Any], extra)}
        branches = node.get("anyOf") or node.get("oneOf")
        if isinstance(branches, list):
            union = cast(list[Mapping[str, Any]], branches)
            if UNIT_KEY in node:
                union = self.with_unit(union, node[UNIT_KEY])
            return self.walk_union(value, union, path, rules)
        if not isinstance(cast(object, value), (dict, list)):
            # An object or an array is no scalar any rule reads (a string may become one).
            value = self.scalar(value, node, path, rules)
        if is_untyped(node):
            self.refuse_past_float(value, path)
            return value
        if isinstance(value, list) and (
            node.get("prefixItems") or isinstance(node.get("items"), dict)
        ):
            # A tuple's positions each have their own schema, then `items` (if any) the rest.
            given = cast(list[Any], value)
            if not node.get("prefixItems") and self.skips(node["items"]):
                # No item holds a key or a set (a set of strings): only the set is looked at.
                return self.as_set(given, node, path, rules)
            items = [
                self.walk(item, cast(Mapping[str, Any], sub), [*path, i], rules)
                if isinstance(sub := _position_schema(node, i), Mapping)
                else item
                for i, item in enumerate(given)
            ]
            if all(new is old for new, old in zip(items, given, strict=True)):
                items = given  # nothing changed: the input's own list, not a copy
            return self.as_set(items, node, path, rules)
        if isinstance(value, list):
            # Items without a schema of their own.
            self.refuse_past_float(value, path)
            return self.as_set(cast(list[Any], value), node, path, rules)
        if isinstance(value, dict):
            return self.walk_object(cast(dict[str, Any], value), node, path, rules)
        return value

    def as_set(
        self,
        items: list[Any],
        node: Mapping[str, Any],
        path: list[str | int],
        rules: frozenset[str],
    ) -> list[Any]:
        """A set field's items without repeats (`set_duplicates`), or refused when repeated."""
        if not self.sets or node.get("uniqueItems") is not True or len(items) < 2:
            return items
        first_at: dict[Any, int] = {}
        kept: list[Any] = []
        kept_at: list[int] = []
        repeats: list[tuple[int, int, Any]] = []
        item_node = self.deref(cast(Mapping[str, Any], node.get("items") or {}))
        # Whether an item has a type the set's items may have, asked only of items that
        # meet an equal one: `true` equals `1` in Python, yet it is no repeat of `1` in a
        # `set[int]`, but a value of another type for validation to refuse where it stands.
        typed: dict[int, bool] = {}

        def fits(at: int) -> bool:
            if at not in typed:
                typed[at] = self.accepts(items[at], item_node)
            return typed[at]

        for i, item in enumerate(items):
            key = _set_key(item, item_node)
            first = first_at.get(key)
            if first is not None and fits(first) and fits(i):
                repeats.append((i, first, item))
                continue
            if first is None or not fits(first):
                first_at[key] = i
            kept.append(item)
            kept_at.append(i)
        if not repeats:
            return items
        if "set_duplicates" in rules:
            self.kept_items[tuple(path)] = tuple(kept_at)
            return cast(list[Any], self.record(path, items, kept, "set_duplicates"))
        for i, first, item in repeats:
            self.refuse([*path, i], "repeated_item", item, str(first))
        return items

    def refuse_past_float(self, value: Any, path: list[str | int]) -> None:
        """Refuses each number in data without a schema that a float reads as infinity or as
        zero. Such data is what JSON reading makes of it, where a fraction or an exponent is a
        float: the tool would get `inf` or `0.0` for what the model wrote."""
        pending: list[tuple[Any, list[str | int]]] = [(value, path)]
        while pending:
            item, at = pending.pop()
            if past_float(item):
                self.refuse(at, "out_of_range", item)
            elif isinstance(item, dict):
                members = cast(dict[str, Any], item)
                pending.extend((inner, [*at, key]) for key, inner in members.items())
            elif isinstance(item, list):
                pending.extend((inner, [*at, i]) for i, inner in enumerate(cast(list[Any], item)))

    def with_unit(self, branches: list[Mapping[str, Any]], unit: Any) -> list[Mapping[str, Any]]:
        """The branches of a union marked with a unit (`Optional[int]` with `x-unit`: Pydantic
        puts the field's extra beside `anyOf`), each inline branch marked too.

        Made once per union and kept, so that each branch keeps one identity for the trials'
        memo (an id of a dropped copy could be reused by another).
        """
        known = self.unit_unions.get(id(branches))
        if known is None:
            # A boolean branch (`false` in a plain tool's `anyOf`) has no keywords to mark.
            marked = [
                b
                if not isinstance(cast(object, b), Mapping) or "$ref" in b or UNIT_KEY in b
                else {**b, UNIT_KEY: unit}
                for b in branches
            ]
            known = self.unit_unions[id(branches)] = (branches, marked)
        return known[1]

    def walk_union(
        self,
        value: Any,
        branches: list[Mapping[str, Any]],
        path: list[str | int],
        rules: frozenset[str],
    ) -> Any:
        # A union reached again for the same value at the same place (`A = anyOf[int,
        # $ref A]`) has nothing to add the first visit does not.
        visit = (id(branches), id(value), tuple(path))
        if visit in self.unions_open:
            return value
        self.unions_open.add(visit)
        try:
            return self.walk_branches(value, branches, path, rules)
        finally:
            self.unions_open.discard(visit)

    def walk_branches(
        self,
        value: Any,
        branches: list[Mapping[str, Any]],
        path: list[str | int],
        rules: frozenset[str],
    ) -> Any:
        resolved = [self.deref(b) for b in branches]
        if past_float(value) and any(_types(b) & {"number", "integer"} for b in resolved):
            # Every numeric branch reads this number as a float, infinity or zero (an integer
            # branch then refuses it): no branch can keep what the model wrote.
            self.refuse(path, "out_of_range", value)
            return value
        matching = [b for b in resolved if _matches(value, b)]
        if len(matching) == 1:
            return self.walk(value, matching[0], path, rules)
        if self.focus:
            # Several readings are weighed below, each a trial of a branch in full: a branch
            # Pydantic did not take may need a change where no key or set is, which decides
            # between the readings. The value is walked as a whole, as without focus.
            self.focus = False
            try:
                return self.walk_branches(value, branches, path, rules)
            finally:
                self.focus = True
        if matching:
            return self.walk_matching(value, matching, path, rules)
        # No branch takes the value as it is: coerce toward each branch on a scratch recorder
        # and accept only if every successful reading agrees.
        outcomes: dict[str, tuple[Any, list[Coercion]]] = {}
        unseen: list[CoercionProblem] = []
        refused: list[tuple[Any, _Coercer]] = []
        # Refusals of the value itself as past a float's range, by the numeric branches.
        beyond: list[CoercionProblem] = []
        here = pointer(path)
        for branch in resolved:
            if _types(branch) == {"null"}:
                continue
            result, trial = self.trial(value, branch, path, rules)
            if _types(branch) & {"number", "integer"}:
                beyond.extend(
                    [p for p in trial.problems if p.code == "out_of_range" and p.path == here][:1]
                )
            if trial.coercions and _matches(result, branch):
                if not trial.problems:
                    outcomes.setdefault(dumps_exact(result), (result, trial.coercions))
                elif self.fits(result, branch):
                    refused.append((result, trial))
            unseen.extend(p for p in trial.problems if p.code in _UNSEEN_BY_PYDANTIC)
        if len(outcomes) > 1:
            # `"3.0"` for an `int | float` is `3` to the integer branch and `3.0` to the
            # number branch: one number, spelt two ways, not two readings to choose from.
            written = _one_number(outcomes)
            if written is not None:
                outcomes = {written: outcomes[written]}
        if len(outcomes) == 1:
            result, applied = next(iter(outcomes.values()))
            self.coercions.extend(applied)
            return result
        if len(outcomes) > 1:
            self.refuse(path, "ambiguous", value, " or ".join(outcomes))
        elif len(refused) == 1:
            # One branch alone reads the value (an object sent as a JSON string, its tag and
            # fields that branch's) and refuses something inside it (a timestamp without an
            # offset): that is what the model must fix, as it is without the union, not the
            # type of the value as sent.
            result, trial = refused[0]
            self.coercions.extend(trial.coercions)
            self.problems.extend(trial.problems)
            return result
        elif beyond:
            # A number in a string (`"1e400"`, `"1e-400"` for an `int | float`) a numeric
            # branch reads past a float's range, and no branch takes: refused as the same
            # number sent bare is (`walk_branches`), not as a type.
            self.problems.append(beyond[0])
        elif unseen:
            # No branch takes the value, and strict Pydantic would let it into one anyway
            # (`2.0000000000000001` into `Optional[IntEnum]`): the branch's refusal stands.
            self.problems.append(unseen[0])
        return value

    def trial(
        self, value: Any, branch: Mapping[str, Any], path: list[str | int], rules: frozenset[str]
    ) -> tuple[Any, _Coercer]:
        """Coerce toward one branch on a scratch recorder.

        Trials are remembered for the whole call: a union nested in a union member is tried
        once per branch, not once per branch of every enclosing union (exponential in depth
        for recursive schemas such as expression trees).
        """
        key = (id(value), tuple(path), id(branch), rules)
        known = self.memo.get(key)
        if known is not None:
            return known[1], known[2]
        scratch = _Coercer(
            {},
            rules,
            self.default_tz,
            self.sets,
            exact_ints=self.exact_ints,
            repairing=self.repairing,
        )
        scratch.defs = self.defs
        scratch.memo = self.memo
        scratch.unions_open = self.unions_open
        scratch.unit_unions = self.unit_unions
        result = scratch.walk(value, branch, path, rules)
        # The value is kept alive with its entry, so its id cannot be reused meanwhile.
        self.memo[key] = (value, result, scratch)
        return result, scratch

    def walk_matching(
        self,
        value: Any,
        branches: list[Mapping[str, Any]],
        path: list[str | int],
        rules: frozenset[str],
    ) -> Any:
        """A value whose type several branches take (two object branches, `int | float`).

        The first such branch is not necessarily the one the value is meant for: coercing
        toward it could turn a value another branch takes as it is into a different one
        (`{"x": "5"}` meant for `B{x: str}` made `{"x": 5}` for `A{x: int}`). Branches whose
        constants, required fields or closed field set the value contradicts are left out;
        if a remaining branch needs no change the value stays as it is, otherwise every
        remaining reading must agree (or only one branch may remain).
        """
        trials = [(b, *self.trial(value, b, path, rules)) for b in branches]
        plausible = [t for t in trials if self.fits(t[1], t[0])]
        if not plausible:
            return self.walk(value, branches[0], path, rules)
        # A branch needs no change only if it takes the value: a trial that coerced nothing
        # may just have found nothing to coerce (`{"x": "true"}` toward `A{x: int}`).
        if any(
            not scratch.coercions and not scratch.problems and self.accepts(result, branch)
            for branch, result, scratch in plausible
        ):
            return value
        if len(plausible) == 1:
            _, result, scratch = plausible[0]
            self.coercions.extend(scratch.coercions)
            self.problems.extend(scratch.problems)
            return result
        readings = {
            dumps_exact(result): (result, scratch)
            for branch, result, scratch in plausible
            if not scratch.problems and self.accepts(result, branch)
        }
        if len(readings) > 1:
            # `["3.0"]` for `list[int] | list[float]`, as `"3.0"` for `int | float`.
            written = _one_number(readings)
            if written is not None:
                readings = {written: readings[written]}
        if len(readings) == 1:
            result, scratch = next(iter(readings.values()))
            self.coercions.extend(scratch.coercions)
            return result
        if len(readings) > 1:
            self.refuse(path, "ambiguous", value, " or ".join(readings))
        return value

    def walk_every(
        self,
        value: Any,
        schemas: list[Any],
        path: list[str | int],
        rules: frozenset[str],
    ) -> Any:
        """A value several schemas hold at once (each `patternProperties` pattern that names
        its key): a refusal toward any of them stands; otherwise it is changed only to the one
        reading that every trial which changed it agrees on and that every schema takes as it
        is (by the types, constants and fields `accepts` reads), else left to validation."""
        trials = [self.trial(value, cast(Mapping[str, Any], s), path, rules) for s in schemas]
        for _, scratch in trials:
            if scratch.problems:
                self.problems.extend(scratch.problems)
                return value
        readings = {
            dumps_exact(result): (result, scratch)
            for result, scratch in trials
            if scratch.coercions
        }
        if len(readings) != 1:
            return value
        result, scratch = next(iter(readings.values()))
        if not all(self.accepts(result, cast(Mapping[str, Any], s)) for s in schemas):
            return value
        self.coercions.extend(scratch.coercions)
        return result

    def accepts(self, value: Any, node: Mapping[str, Any]) -> bool:
        """Whether a schema takes a value as it is, by the types, constants and fields it
        states all the way down (other constraints are left to validation)."""
        node = self.deref(node)
        branches: object = node.get("anyOf") or node.get("oneOf")
        if isinstance(branches, list):
            # A union reached again for the same value (`Group = anyOf[$ref Expr]` inside
            # `Expr`) adds no way to match that the first visit does not try.
            union = cast(list[Mapping[str, Any]], branches)
            visit = (id(union), id(value))
            if visit in self.accepting:
                return False
            self.accepting.add(visit)
            try:
                return any(self.accepts(value, b) for b in union)
            finally:
                self.accepting.discard(visit)
        members: object = node.get("allOf")
        if isinstance(members, list):
            # Reached again for the same value, `allOf` adds no constraint it has not checked.
            group = cast(list[Mapping[str, Any]], members)
            visit = (id(group), id(value))
            if visit not in self.accepting:
                self.accepting.add(visit)
                try:
                    if not all(self.accepts(value, m) for m in group):
                        return False
                finally:
                    self.accepting.discard(visit)
        if not _matches(value, node):
            return False
        if isinstance(value, dict):
            item = cast(dict[str, Any], value)
            if not self.fits(item, node):
                return False
            props = cast(Mapping[str, Any], node.get("properties") or {})
            extra = node.get("additionalProperties")
            for key, sub in item.items():
                # A key is held to its property's schema and to that of every pattern naming
                # it, and to `additionalProperties` only when none of them names it.
                schemas: list[Any] = [props[key]] if key in props else []
                schemas += _pattern_schemas(node, key)
                schemas = schemas or [extra]
                if not all(
                    self.accepts(sub, cast(Mapping[str, Any], schema))
                    for schema in schemas
                    if isinstance(schema, dict)
                ):
                    return False
        elif isinstance(value, list):
            for at, sub in enumerate(cast(list[Any], value)):
                schema = _position_schema(node, at)
                if isinstance(schema, dict) and not self.accepts(sub, cast(Any, schema)):
                    return False
        return True

    def fits(self, value: Any, node: Mapping[str, Any]) -> bool:
        """Whether an object does not contradict an object branch's constants and fields."""
        if not isinstance(value, dict):
            return True
        item = cast(dict[str, Any], value)
        props = cast(Mapping[str, Any], node.get("properties") or {})
        if any(key not in item for key in cast(list[str], node.get("required") or [])):
            return False
        if node.get("additionalProperties") is False and any(
            key not in props and not _pattern_schemas(node, key) for key in item
        ):
            return False
        for key, sub in props.items():
            if key in item:
                resolved = self.deref(cast(Mapping[str, Any], sub))
                constant = "const" in resolved or isinstance(resolved.get("enum"), list)
                if constant and not _matches(item[key], resolved):
                    return False
        return True

    def takes_key(self, node: Mapping[str, Any], key: str, depth: int) -> bool:
        """Whether an object at `node` may have a member named `key`, by the keywords that
        name members: a property of its own, a key one of its `patternProperties` takes, or
        else `additionalProperties` (anything when absent; with `unevaluatedProperties:
        false`, only what an `allOf` member or a union branch takes). `propertyNames`, every
        `allOf` member and one `anyOf` / `oneOf` branch must take it too. What the keywords
        leave undecided reads as taken: the call then goes to validation as it was sent."""
        node = self.deref(node)
        if depth > MAX_EMBEDDED_DEPTH:
            return True
        kinds = _types(node)
        if kinds and "object" not in kinds:
            return False
        if not self.names_key(node, key):
            extra = node.get("additionalProperties")
            if extra is False:
                return False
            if extra is None and node.get("unevaluatedProperties") is False:
                members = [
                    self.deref(cast(Mapping[str, Any], m))
                    for word in ("allOf", "anyOf", "oneOf")
                    for m in cast(list[Any], node.get(word) or [])
                ]
                if not any(
                    self.names_key(m, key) or m.get("additionalProperties") not in (None, False)
                    for m in members
                ):
                    return False
        if not _name_allowed(node.get("propertyNames", True), key):
            return False
        members = cast(list[Any], node.get("allOf") or [])
        if not all(self.takes_key(m, key, depth + 1) for m in members):
            return False
        for word in ("anyOf", "oneOf"):
            branches = node.get(word)
            if isinstance(branches, list) and not any(
                self.takes_key(b, key, depth + 1) for b in cast(list[Any], branches)
            ):
                return False
        return True

    @staticmethod
    def names_key(node: Mapping[str, Any], key: str) -> bool:
        """Whether `node` names `key` as a member: a property (a model's field lists each key
        it is read from) or a key one of its patterns takes."""
        props = node.get("properties")
        if isinstance(props, dict) and key in props:
            return True
        return bool(_pattern_schemas(node, key))

    def walk_object(
        self,
        value: dict[str, Any],
        node: Mapping[str, Any],
        path: list[str | int],
        rules: frozenset[str],
    ) -> Any:
        props = cast(Mapping[str, Any], node.get("properties") or {})
        if not path and "unwrap" in rules and len(value) == 1:
            ((key, inner),) = value.items()
            # Only a key the schema refuses: in an open map, `{"input": {...}}` is a call
            # valid as sent, and the tool must get it as sent.
            if key in WRAPPER_KEYS and not self.takes_key(node, key, 0):
                if isinstance(inner, str) and "json_string" in rules:
                    inner = self.parse_container(inner)
                if isinstance(inner, dict):
                    self.record(path, value, inner, "unwrap")
                    return self.walk_object(cast(dict[str, Any], inner), node, path, rules)
        kind = node.get(KEYS_KEY)
        if isinstance(kind, str):
            renamed = self.check_keys(value, kind, path)
            if renamed:
                value = {renamed.get(key, key): item for key, item in value.items()}
        spellings = node.get(SPELLINGS_KEY)
        if isinstance(spellings, list):
            self.check_spellings(value, cast(list[list[list[Any]]], spellings), path)
        extra = node.get("additionalProperties")
        required = set(cast(list[str], node.get("required") or []))
        required.update(cast(list[str], node.get(REQUIRED_SPELLINGS_KEY) or []))
        member_props, member_required = self.member_fields(node, 0)
        if member_props:
            # Fields declared in `allOf` members are the object's fields too: the strict
            # export merges them into one object, offering null for the optional ones.
            props = {**member_props, **props}
        required |= member_required
        by_pattern = cast(Mapping[str, Any], node.get("patternProperties") or {})
        if (
            self.focus
            and not props
            and self.skips(extra)
            and all(self.skips(sub) for sub in by_pattern.values())
        ):
            # A dict whose values hold no key or set (`dict[int, str]`): its keys were all.
            return value
        out: dict[str, Any] = {}
        changed = False
        for key, item in value.items():
            sub = props.get(key)
            # A key the object refuses (a closed `allOf` member that does not name it) stays
            # for validation to refuse: the pre-check already has, whatever its value.
            if (
                item is None
                and sub is not None
                and key not in required
                and self.takes_key(node, key, 0)
            ):
                resolved = self.deref(cast(Mapping[str, Any], sub))
                # A branch that recurses is still a `$ref`: read, it may take the null.
                if not accepts_null(resolved, openapi=True, deref=self.deref):
                    # A strict export offers null for optional fields; null means "absent".
                    self.coercions.append(
                        Coercion(pointer([*path, key]), "null", "(absent)", "null_as_absent")
                    )
                    changed = True
                    continue
            named = _pattern_schemas(node, key) if by_pattern else []
            if sub is not None and named:
                # A property's value is held to the patterns that name its key too: a change
                # made for the property alone (`"3"` read as 3) could break one of them, and
                # the model would then be shown a value it never sent.
                named = [sub, *named]
            if len(named) > 1:
                # Every schema that names the key holds its value (and `additionalProperties`
                # none of them): the value is read as all of them allow.
                if all(self.skips(pattern) for pattern in named):
                    out[key] = item
                else:
                    out[key] = new = self.walk_every(item, named, [*path, key], rules)
                    changed = changed or new is not item
                continue
            if named:
                sub = cast(Mapping[str, Any], named[0])
            elif sub is None and isinstance(extra, dict):
                sub = cast(Mapping[str, Any], extra)
            if sub is None:
                if extra in (None, True) and not node.get("patternProperties") and not self.focus:
                    # A member no schema describes (an open object's): data as JSON reads it.
                    self.refuse_past_float(item, [*path, key])
                out[key] = item
            elif self.skips(sub):
                out[key] = item
            else:
                out[key] = new = self.walk(item, sub, [*path, key], rules)
                changed = changed or new is not item
        # Nothing changed: the input's own object, not a copy.
        return out if changed else value

    def check_keys(self, value: dict[str, Any], kind: str, path: list[str | int]) -> dict[str, str]:
        """The keys of a dict field whose keys are not strings (`dict[int, str]`); returns
        the keys a rule rewrote, with their new text.

        A JSON key is always a string, so Pydantic converts each key's text, laxly even in
        strict mode: `"01"` and `"+1"` become 1 like `"1"` (one of their values is lost),
        `"1_000"` becomes 1000, `"yes"` becomes True, `"nan"` a float key. Each key must be
        written as JSON writes a value of its type, and no two keys may name the same entry.
        A timestamp key is held to what a timestamp value is: no Unix time in a string, an
        offset unless the tool has a default zone (given as `default_timezone`, recorded);
        two keys naming one instant, or one UUID, are one entry.
        """
        if kind == "integer" and _plain_integer_keys(value):
            return {}
        renamed: dict[str, str] = {}
        seen: dict[Any, str] = {}
        for key in value:
            if kind in _TIMESTAMP_KEYS:
                if _UNIX_TEXT.fullmatch(key):
                    self.refuse(path, "key_text", key, "date-time")
                    continue
                text = key
                if kind == "date-time":
                    # Reported at the object, with the key, as the other key findings are.
                    refused = len(self.problems)
                    text = cast(str, self.timestamp(key, path))
                    if len(self.problems) > refused:
                        continue
                    if text != key:
                        renamed[key] = text
                read = _timestamp_key(text)
            else:
                read = _key_value(key, kind)
            # Reported at the object, as Pydantic's own key errors are: no value is at the key.
            if read is _NOT_A_KEY:
                self.refuse(path, "key_text", key, kind)
                continue
            if read is _UNREAD:
                # Not a text this check reads: Pydantic's own error, if any, says what is wrong.
                continue
            first = seen.setdefault(read, key)
            if first != key:
                self.refuse(path, "duplicate_key", key, json.dumps(first))
        return renamed

    def check_spellings(
        self, value: dict[str, Any], fields: list[list[list[Any]]], path: list[str | int]
    ) -> None:
        """The keys of a model's object that one field is read from (`SPELLINGS_KEY`).

        Pydantic takes the value under the first one present and drops the others without a
        word: `{"amountCents": 100, "amount_cents": 500000}` runs with 100. Which one the model
        meant is a guess, so two of them together are refused, as two keys naming one entry
        of a dict are.
        """
        for spellings in fields:
            present = [p for p in spellings if p and _holds_path(value, p)]
            for later in present[1:]:
                # Reported at the object, as a dict's duplicate keys are.
                self.refuse(path, "duplicate_field", later[0], json.dumps(present[0][0]))

    def member_fields(self, node: Mapping[str, Any], depth: int) -> tuple[dict[str, Any], set[str]]:
        """The properties and required names that `node`'s `allOf` members declare.

        A property declared by two members with different schemas is left out: no one schema
        says what it takes, so nothing is coerced toward either.
        """
        members = node.get("allOf")
        if not isinstance(members, list) or depth > MAX_EMBEDDED_DEPTH:
            return {}, set()
        props: dict[str, Any] = {}
        clashing: set[str] = set()
        required: set[str] = set()
        for member in cast(list[Any], members):
            resolved = self.deref(cast(Mapping[str, Any], member))
            nested_props, nested_required = self.member_fields(resolved, depth + 1)
            own = cast(Mapping[str, Any], resolved.get("properties") or {})
            for name, sub in {**nested_props, **own}.items():
                if name in props and props[name] != sub:
                    clashing.add(name)
                props.setdefault(name, sub)
            listed = resolved.get("required")
            if isinstance(listed, list):
                required |= {str(n) for n in cast(list[Any], listed)}
            required |= nested_required
        return {k: v for k, v in props.items() if k not in clashing}, required

    @staticmethod
    def parse_container(text: str) -> Any:
        stripped = text.strip()
        if not stripped or stripped[0] not in "[{":
            return None
        # The text inside the string must be JSON by the same rules the core applies to the
        # arguments themselves: `NaN` / `Infinity` are not JSON, a repeated key would silently
        # lose a value, a lone surrogate is not text, and nesting past the core's depth limit is
        # refused (deeper text would exhaust Python's recursion limit here or while validating).
        try:
            parsed = json.loads(
                stripped,
                parse_float=_exact_number,
                parse_constant=_reject_constant,
                object_pairs_hook=_unique_keys,
            )
        except (ValueError, RecursionError):
            return None
        return parsed if _well_formed(parsed, MAX_EMBEDDED_DEPTH) else None

    def scalar(
        self, value: Any, node: Mapping[str, Any], path: list[str | int], rules: frozenset[str]
    ) -> Any:
        if _swaps_bool_and_number(value, node):
            # Strict Pydantic would take `true` for `1` here; no rule turns one into the other.
            self.refuse(path, "bool_number", value)
            return value
        if isinstance(value, _Unbounded):
            self.refuse(path, "out_of_range", value)
            return value
        types = _types(node)
        if isinstance(value, str):
            value = self.from_string(value, node, types, path, rules)
        # An enum mixing integers with other members has no `type`: a float reading that is one
        # of its integers is read as an integer field's is (`Literal[1, "a"]` takes `1.0` as
        # `1` in strict Pydantic). Other numbers are left as written, for the enum to refuse.
        integral = "integer" in types or (
            "number" not in types and _whole_float_in_integer_enum(value, node)
        )
        if integral and isinstance(value, (float, Decimal)):
            whole = _integral(Decimal(value))
            if whole is not None and "integral_number" in rules:
                value = self.record(path, value, whole, "integral_number")
            elif whole is not None and enum_members(node) is not None and not self.exact_ints:
                # Strict Pydantic takes `2.0` as the member `2` (it refuses it for a plain
                # integer): without the rule that reads it as an integer, refuse it here. A
                # plain tool's `jsonschema` compares numbers by value, as JSON Schema does, and
                # hands the tool the number as written: nothing is read otherwise, nor refused.
                self.refuse(path, "whole_float", value)
                return value
            elif whole is None and "number" not in types and rounds_to_whole(value):
                # Not a rule but a refusal whatever the rule set, as `out_of_range` is: the
                # float reading is a whole number, so the model is told not to round.
                self.refuse(path, "fractional_integer", value)
                return value
        if (
            isinstance(value, (int, Decimal))
            and not isinstance(value, bool)
            and _beyond_float(Decimal(value))
            and (
                # A plain tool's integer stays an exact int whatever the type says.
                ("number" in types and "integer" not in types and not self.exact_ints)
                # A fraction or an exponent is read as a float even where an integer is
                # allowed too (`int | float`, `["integer", "number"]`), and where no `type`
                # says which (`allOf`, `not`, `if` beside it): the tool gets the float.
                or (
                    isinstance(value, Decimal)
                    and (not types or bool(types & {"number", "integer"}))
                )
            )
        ):
            # A float field would read this JSON number as infinity or as zero. Not a rule:
            # a refusal whatever the rule set, as no coercion could keep the value.
            self.refuse(path, "out_of_range", value)
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if "boolean" in types and "bool_word" in rules and value in (0, 1):
                return self.record(path, value, value == 1, "bool_word")
            if (
                node.get(UNIT_KEY) == UNIX_SECONDS
                and value > UNIX_MS_THRESHOLD
                and "unix_ms" in rules
            ):
                if value % 1000 == 0:
                    return self.record(path, value, value // 1000, "unix_ms")
                if "integer" in types:
                    self.refuse(path, "inexact_milliseconds", value)
                else:
                    return self.record(path, value, Decimal(value).scaleb(-3), "unix_ms")
        if isinstance(value, Decimal) and node.get(UNIT_KEY) == UNIX_SECONDS:
            # No instant is past any float: a larger number is left to validation to refuse
            # (scaled, one past the context's exponents would raise).
            if (
                UNIX_MS_THRESHOLD < value
                and value.adjusted() <= _FLOAT_MAX_EXPONENT
                and "unix_ms" in rules
            ):
                return self.record(path, value, value.scaleb(-3), "unix_ms")
        return value

    def from_string(
        self,
        value: str,
        node: Mapping[str, Any],
        types: set[str],
        path: list[str | int],
        rules: frozenset[str],
    ) -> Any:
        # A `const` is a one-member enum (Pydantic gives `Literal["fast"]` as one).
        enum = enum_members(node)
        if enum is not None and value not in enum:
            # A member is matched as written, whatever else the rules allow: only a difference
            # of case is read (`enum_case`). `"2"` is never the member `2`, nor `"true"` the
            # member `true` (JSON Schema's `enum` never equals a string with a number), so the
            # verdict does not hang on whether `enum_case` is on.
            if "enum_case" in rules:
                # A difference of case only: `casefold` would also equate different letters
                # ("straße" and "strasse", the "ﬁ" ligature and "fi").
                folded = value.lower()
                hits = [e for e in enum if isinstance(e, str) and e.lower() == folded]
                if len(hits) == 1:
                    return self.record(path, value, hits[0], "enum_case")
                if len(hits) > 1:
                    self.refuse(path, "ambiguous", value, ", ".join(json.dumps(h) for h in hits))
            return value
        if "string" in types:
            if node.get("format") in _TIMESTAMP_FORMATS and _UNIX_TEXT.fullmatch(value):
                # Pydantic reads it as Unix seconds or milliseconds: a guess either way.
                self.refuse(path, "unix_timestamp", value)
                return value
            if node.get("format") == "date-time":
                return self.timestamp(value, path)
            return value
        if types & {"array", "object"} and "json_string" in rules:
            parsed = self.parse_container(value)
            if (isinstance(parsed, list) and "array" in types) or (
                isinstance(parsed, dict) and "object" in types
            ):
                return self.record(path, value, parsed, "json_string")
            return value
        if types & {"integer", "number"} and "number_string" in rules:
            stripped = value.strip()
            if JSON_NUMBER.fullmatch(stripped):
                # Written with a fraction or an exponent, it stays one (`"-0e0"`, `"1e0"`), as
                # the same number sent bare is read: a float's `-0.0`, not the int 0. An
                # exponent no `Decimal` holds is kept capped, to be refused as out of range.
                integer = _INTEGER_TEXT.fullmatch(stripped)
                exact = Decimal(stripped) if integer else _exact_number(stripped)
                if "integer" in types:
                    if integer and len(stripped.lstrip("-")) <= _MAX_INT_DIGITS:
                        # Digits alone are an exact integer however far past a float (as
                        # Pydantic reads them), not a float reading to refuse.
                        return self.record(path, value, int(exact), "number_string")
                    # Read as the same number sent bare is (`integral_number`): `"1e3"` is
                    # 1000 as `1e3` is, `"1e400"` past what a float holds as `1e400` is.
                    whole = None if integer else _integral(exact)
                    if whole is not None:
                        return self.record(path, value, whole, "number_string")
                    if "number" not in types:
                        if integer:
                            # An integer all the same: "do not round" would be false advice.
                            self.refuse(path, "too_many_digits", value, str(_MAX_INT_DIGITS))
                        elif exact.adjusted() >= 0 and _beyond_float(exact):
                            # Too large: a fraction too small (`"1e-400"`) is no whole number.
                            self.refuse(path, "out_of_range", value)
                        else:
                            self.refuse(path, "fractional_integer", value)
                        return value
                if _beyond_float(exact):
                    # A float field would read it as infinity, or as zero when it is too small
                    # for a float: no faithful number to give.
                    self.refuse(path, "out_of_range", value)
                    return value
                return self.record(path, value, exact, "number_string")
            return value
        if "boolean" in types:
            folded = value.strip().casefold()
            if folded in ("true", "false") and "bool_string" in rules:
                return self.record(path, value, folded == "true", "bool_string")
            if folded in _BOOL_WORDS and "bool_word" in rules:
                return self.record(path, value, _BOOL_WORDS[folded], "bool_word")
        return value

    def timestamp(self, value: str, path: list[str | int]) -> Any:
        text = value.strip()
        if _TZ_SUFFIX.search(text) or not _LOCAL_TIMESTAMP.fullmatch(text):
            # An offset is there, or it is not a timestamp in the accepted format (a week date,
            # an hour alone): validation judges the text as written.
            return value
        try:
            naive = datetime.fromisoformat(text.replace(",", "."))
        except ValueError:
            # Not a timestamp Python can read; validation reports the format error.
            return value
        if naive.tzinfo is not None:
            return value
        if self.default_tz is None:
            self.refuse(path, "timezone_required", value)
            return value
        local = naive.replace(tzinfo=self.default_tz)
        offset = local.utcoffset()
        if (
            offset is None
            or local.replace(fold=1).utcoffset() != offset
            or offset.total_seconds() % 60
        ):
            # A wall time the zone passes twice (clocks going back) or skips (going forward):
            # either instant would be a guess, so the model has to give the offset. So too an
            # offset of seconds (a zone's local mean time before standard time, +00:19:32):
            # no RFC 3339 timestamp, nor Pydantic, can write it.
            self.refuse(path, "timezone_required", value)
            return value
        # The offset goes after the text as written: no digit of it is reformatted or lost.
        return self.record(path, value, text + _offset_text(offset), "default_timezone")


def is_decimal_union(node: Mapping[str, Any]) -> bool:
    """Pydantic's `Decimal` schema: a number or a numeric string (plus null when optional)."""
    branches = node.get("anyOf")
    if not isinstance(branches, list):
        return False
    kinds: set[str] = set()
    numeric_string = False
    for branch in cast(list[Any], branches):
        if not isinstance(branch, dict):
            return False
        as_dict = cast(dict[str, Any], branch)
        kind = as_dict.get("type")
        if not isinstance(kind, str):
            return False
        kinds.add(kind)
        pattern = as_dict.get("pattern")
        numeric = isinstance(pattern, str) and "\\d" in pattern
        if kind == "string" and not numeric:
            # A plain string branch beside it (`Union[str, Decimal]`): a number there is
            # Pydantic's to place, and quoted it would become the str.
            return False
        numeric_string |= kind == "string" and numeric
    return numeric_string and kinds - {"null"} == {"number", "string"}


def decimal_beside_integer(node: Mapping[str, Any]) -> bool:
    """`int | Decimal` (`Optional` too): Pydantic merges the `Decimal`'s number and numeric
    string into the union's `anyOf`, beside the integer. A number written with a fraction or an
    exponent is the `Decimal`'s there, as Pydantic places it, and read through a float unless
    quoted, as in a lone `Decimal` field."""
    listed = node.get("anyOf")
    if not isinstance(listed, list):
        return False
    branches = cast(list[Any], listed)
    rest: list[Any] = [
        b for b in branches if not (isinstance(b, dict) and _types(cast(Any, b)) == {"integer"})
    ]
    return len(rest) < len(branches) and is_decimal_union({"anyOf": rest})


def _holds_decimal(node: Mapping[str, Any]) -> bool:
    return is_decimal_union(node) or decimal_beside_integer(node)


def decimal_text_ok(text: str, node: Mapping[str, Any]) -> bool:
    """Whether a string in a `Decimal` field (`node`) is a number as JSON writes it (surrounding
    whitespace aside), or not a finite number at all (validation reports that itself).

    Python's `Decimal` reads far more than JSON numbers: `"1_000"`, `"+5"`, `".5"`, and digits
    in other scripts (Arabic-Indic, say). The model wrote something odd there; its value is a
    guess.
    A field that also takes plain strings (`Decimal | str`) takes any text.
    """
    for branch in cast(list[Any], node.get("anyOf") or []):
        if cast(dict[str, Any], branch).get("type") == "string" and "pattern" not in branch:
            return True
    stripped = text.strip()
    if JSON_NUMBER.fullmatch(stripped):
        return True
    try:
        return not Decimal(stripped).is_finite()
    except (InvalidOperation, ValueError):
        return True


def _spaced_number(value: Any, node: Mapping[str, Any]) -> Decimal | None:
    """The number a `Decimal` field's string holds when it is a JSON number with white space
    around it (`" 1.5"`), which a field that takes no plain text reads only once stripped;
    None for anything else."""
    if not isinstance(value, str) or not _holds_decimal(node):
        return None
    stripped = value.strip()
    if stripped == value or not JSON_NUMBER.fullmatch(stripped):
        return None
    for branch in cast(list[Any], node.get("anyOf") or []):
        if cast(dict[str, Any], branch).get("type") == "string" and "pattern" not in branch:
            return None  # `Decimal | str`: the text is a string as sent
    return Decimal(stripped) if _INTEGER_TEXT.fullmatch(stripped) else _exact_number(stripped)


def odd_decimal_text(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether a `Decimal` field holds a string that `decimal_text_ok` refuses.

    Args:
        value: Parsed arguments (`loads_exact`).
        schema: The tool's self-contained schema.

    Returns:
        True if some `Decimal` field's string is not a JSON number, or is one with white
        space around it (which coercion records as `number_string`).
    """
    found = False

    def check(item: Any, node: Mapping[str, Any]) -> Any:
        nonlocal found
        if isinstance(item, str) and (
            not decimal_text_ok(item, node) or _spaced_number(item, node) is not None
        ):
            found = True
        return item

    _map_decimals(value, schema, check)
    return found


def has_timestamps(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has a `date-time` or `date` string anywhere."""
    return schema_has(
        schema, lambda node: True if node.get("format") in _TIMESTAMP_FORMATS else None
    )


def unix_timestamp_text(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether some string that may sit in a `date-time` or `date` field holds a number
    (`"1700000000"`), which Pydantic would read as a Unix time and coercion refuses.

    Any union branch counts: the coercion walk decides which branch the value is for.

    Args:
        value: Parsed arguments.
        schema: The tool's self-contained schema.

    Returns:
        True if such a string is found.
    """

    def unix_text(item: Any, node: Mapping[str, Any]) -> bool:
        return (
            isinstance(item, str)
            and node.get("format") in _TIMESTAMP_FORMATS
            and bool(_UNIX_TEXT.fullmatch(item))
        )

    return _any_leaf(value, schema, unix_text)


def enum_members(node: Mapping[str, Any]) -> list[Any] | None:
    """The values a node's `enum` allows, or its `const` as a one-member enum; None for
    neither."""
    enum = node.get("enum")
    if isinstance(enum, list):
        return cast(list[Any], enum)
    return [node["const"]] if "const" in node else None


def _swaps_bool_and_number(value: Any, node: Mapping[str, Any]) -> bool:
    """Whether `value` equals a member of the node's enum or const only the way Python equates
    `True` and `1`: a boolean where the members are numbers, or a number where they are
    booleans. JSON (and the pre-check) tells them apart; strict Pydantic does not."""
    members = enum_members(node)
    if members is None or not isinstance(value, (bool, int, float, Decimal)):
        return False
    is_bool = isinstance(value, bool)
    if any(isinstance(m, bool) == is_bool and isinstance(m, (int, float)) for m in members):
        return False
    return any(isinstance(m, (int, float)) and m == value for m in members)


# Refusals of values strict Pydantic would take without a word (a float reading that makes a
# member, `true` for `1`): a union branch that refuses one must not be passed over.
_UNSEEN_BY_PYDANTIC = frozenset({"fractional_integer", "whole_float", "bool_number"})


def _whole_float_in_integer_enum(value: Any, node: Mapping[str, Any]) -> bool:
    """Whether `value`, a number written with a fraction or an exponent, reads as a float
    equal to an integer member of the node's enum or const (`2.0`, and `2.0000000000000001`,
    which is not one but which Pydantic's float reading makes one), or is that member as
    written (`12345678901234567890.0`, whose float reading is another integer)."""
    members = enum_members(node)
    if members is None or isinstance(value, bool) or not isinstance(value, (float, Decimal)):
        return False
    if isinstance(value, Decimal) and not value.is_finite():
        return False
    read = float(value)
    return any(
        isinstance(m, int) and not isinstance(m, bool) and (m == read or m == value)
        for m in members
    )


def _float_for_integer(value: Any, node: Mapping[str, Any]) -> bool:
    """Whether `value`, a number written with a fraction or an exponent, sits where only an
    integer goes (an integer type and not a number one)."""
    if isinstance(value, bool) or not isinstance(value, (float, Decimal)):
        return False
    types = _types(node)
    return "integer" in types and "number" not in types


def float_for_integer(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether some integer field got a number written with a fraction or an exponent (`30.0`,
    `4.9999999999999999`): lax Pydantic reads it as a float and makes an int of it without a
    word, rounding what the model wrote, where the `integral_number` rule records a whole one
    and a fractional one is refused.

    Args:
        value: Parsed arguments (`loads_exact`).
        schema: The tool's self-contained schema.

    Returns:
        True if such a value is found.
    """
    return _any_leaf(value, schema, _float_for_integer)


def has_integer_fields(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has an integer type anywhere."""

    def verdict(node: dict[str, Any]) -> bool | None:
        return True if "integer" in _types(node) else None

    return schema_has(schema, verdict)


def whole_float_in_integer_enum(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether some value of an integer enum or const was written as a float (`2.0`):
    strict Pydantic takes it as the member without a word, where for an integer field the
    `integral_number` rule records it (or, off, it is refused).

    Args:
        value: Parsed arguments (`loads_exact`).
        schema: The tool's self-contained schema.

    Returns:
        True if such a value is found.
    """
    return _any_leaf(value, schema, _whole_float_in_integer_enum)


def has_scalar_enums(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has an enum or const with a number or a boolean anywhere."""

    def verdict(node: dict[str, Any]) -> bool | None:
        members = enum_members(node)
        return True if members and any(isinstance(m, (int, float)) for m in members) else None

    return schema_has(schema, verdict)


def has_boolean_enums(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has an enum or const with a boolean anywhere (`Literal[True]`)."""

    def verdict(node: dict[str, Any]) -> bool | None:
        members = enum_members(node)
        return True if members and any(isinstance(m, bool) for m in members) else None

    return schema_has(schema, verdict)


def bool_number_swap(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether some value sits in an enum or const only as `true` equals `1` (see
    `_swaps_bool_and_number`). Any union branch counts: the coercion walk decides.

    Args:
        value: Parsed arguments.
        schema: The tool's self-contained schema.

    Returns:
        True if such a value is found.
    """
    return _any_leaf(value, schema, _swaps_bool_and_number)


def _any_leaf(
    value: Any, schema: Mapping[str, Any], test: Callable[[Any, Mapping[str, Any]], bool]
) -> bool:
    """Whether `test(item, node)` holds for some scalar of `value` and a schema node (any
    union branch) it may be validated against."""
    defs = cast(dict[str, Any], schema.get("$defs") or {})

    def walk(item: Any, node: Any, depth: int) -> bool:
        if not isinstance(node, dict) or depth > MAX_EMBEDDED_DEPTH:
            return False
        as_dict = cast(dict[str, Any], node)
        hops = 0
        while isinstance(as_dict.get("$ref"), str) and hops < 32:
            target: object = defs.get(str(as_dict["$ref"]).rsplit("/", 1)[-1])
            if not isinstance(target, dict):
                return False
            as_dict = cast(dict[str, Any], target)
            hops += 1
        for keyword in ("anyOf", "oneOf", "allOf"):
            branches = as_dict.get(keyword)
            if isinstance(branches, list):
                for branch in cast(list[Any], branches):
                    if walk(item, branch, depth + 1):
                        return True
        if isinstance(item, dict):
            return any(
                walk(sub, rule, depth + 1)
                for key, sub in cast(dict[str, Any], item).items()
                for rule in _member_schemas(as_dict, key)
            )
        if isinstance(item, list):
            return any(
                walk(sub, _position_schema(as_dict, i), depth + 1)
                for i, sub in enumerate(cast(list[Any], item))
            )
        return test(item, as_dict)

    return walk(value, schema, 0)


def has_decimals(schema: Mapping[str, Any]) -> bool:
    """Whether a schema has a Pydantic `Decimal` field anywhere."""
    return schema_has(schema, lambda node: True if _holds_decimal(node) else None)


def quote_decimals(value: Any, schema: Mapping[str, Any]) -> Any:
    """Turn numbers in `Decimal` fields into numeric strings, digit for digit.

    pydantic-core reads a JSON number for a `Decimal` field through a float
    (`12345678901234567.89` becomes `12345678901234568`, `1.10` becomes `1.1`), while a numeric
    string keeps every digit. Rewriting only those positions keeps money exact.

    Args:
        value: Parsed arguments (`loads_exact`).
        schema: The tool's self-contained schema.

    Returns:
        The value with those numbers quoted, sharing what it left as it was with the input
        (the input itself when nothing was quoted); the input is not modified.
    """

    def quote(item: Any, _node: Mapping[str, Any]) -> Any:
        if isinstance(item, _Unbounded):
            # As written, which no Decimal holds: refused, never taken as the capped number.
            return item.text
        if isinstance(item, (int, Decimal)) and not isinstance(item, bool):
            return str(item)
        return item

    return _map_decimals(value, schema, quote)


def _map_decimals(
    value: Any, schema: Mapping[str, Any], apply: Callable[[Any, Mapping[str, Any]], Any]
) -> Any:
    """`value` with `apply(item, node)` run on the value of every `Decimal` field: the parts
    nothing changed in are the input's own (`value` itself when nothing changed)."""
    defs = cast(dict[str, Any], schema.get("$defs") or {})

    def deref(node: Mapping[str, Any]) -> Mapping[str, Any]:
        hops = 0
        while isinstance(node.get("$ref"), str) and hops < 32:
            node = cast(Mapping[str, Any], defs.get(str(node["$ref"]).rsplit("/", 1)[-1], {}))
            hops += 1
        return node

    # Whether a `Decimal` field is anywhere below a node, by the node's identity: a large
    # value under a node without one (an `Any` field, a list of ints) is not walked item by
    # item for nothing.
    below: dict[int, bool] = {}

    def has_decimals(node: Mapping[str, Any]) -> bool:
        found = below.get(id(node))
        if found is None:
            found = below[id(node)] = _reaches(node, defs, _holds_decimal)
        return found

    def walk(item: Any, node: Mapping[str, Any]) -> Any:
        node = deref(node)
        if is_decimal_union(node):
            return apply(item, node)
        if isinstance(item, Decimal) and decimal_beside_integer(node):
            # An integer is left as written: the `int` branch takes it, quoted the `Decimal`.
            return apply(item, node)
        if not has_decimals(node):
            return item
        branches = node.get("anyOf") or node.get("oneOf")
        if isinstance(branches, list) and isinstance(item, (dict, list)):
            # `Optional[Model]`, a recursive model, a list or None: the one branch of the
            # item's own JSON type is the schema it is read by; with several, Pydantic picks
            # and nothing is quoted.
            kind = "object" if isinstance(item, dict) else "array"
            resolved = [
                deref(cast(Mapping[str, Any], b))
                for b in cast(list[Any], branches)
                if isinstance(b, dict)
            ]
            fits = [b for b in resolved if b.get("type") == kind]
            return walk(item, fits[0]) if len(fits) == 1 else cast(Any, item)
        if isinstance(item, dict):
            out: dict[str, Any] = {}
            changed = False
            for key, sub in cast(dict[str, Any], item).items():
                # The first schema that holds the member: a `Decimal` dict's one pattern.
                sub_node = next(iter(_member_schemas(node, key)), None)
                out[key] = walk(sub, sub_node) if sub_node else sub
                changed = changed or out[key] is not sub
            return out if changed else cast(Any, item)
        if isinstance(item, list):
            items = cast(list[Any], item)
            mapped = [
                walk(x, cast(Mapping[str, Any], sub))
                if isinstance(sub := _position_schema(node, at), dict)
                else x
                for at, x in enumerate(items)
            ]
            unchanged = all(m is x for m, x in zip(mapped, items, strict=True))
            return cast(Any, items) if unchanged else mapped
        branches = node.get("anyOf") or node.get("oneOf")
        if isinstance(branches, list) and isinstance(item, (int, Decimal)):
            for branch in cast(list[Any], branches):
                if isinstance(branch, dict) and is_decimal_union(deref(cast(Any, branch))):
                    return apply(item, deref(cast(Any, branch)))
        return item

    return walk(value, schema)


def coerce_arguments(
    value: Any,
    schema: Mapping[str, Any],
    *,
    rules: frozenset[str],
    default_tz: tzinfo | None = None,
    sets: bool = False,
    exact_ints: bool = False,
    focus: bool = False,
    repairing: bool = True,
) -> CoercionResult:
    """Apply the allowed coercion rules to parsed arguments.

    Args:
        value: The arguments as parsed by `loads_exact` (numbers with fractions as `Decimal`).
        schema: The tool's self-contained schema (`Toolset.schema(name)`).
        rules: The rule names enabled for the whole tool; fields may add more.
        default_tz: The tool's default time zone for timestamps without an offset.
        sets: Whether an array whose schema has `uniqueItems` is a set (a model's `set[...]`
            field), whose repeated items `set_duplicates` drops or refuses.
        exact_ints: Whether an integer reaches the tool as an exact `int` even where the schema
            says `number` (a plain tool's value), so that one past a float's range is kept;
            a model's `float` field would read it as infinity. Such a value is judged by
            `jsonschema`, numbers by value: a whole float for an integer enum is not refused.
        focus: Walk only the parts of `value` whose schema holds, at or below it, a dict whose
            keys are not strings (`KEYS_KEY`) or, with `sets`, a set; the rest is left as it
            is, unread (a value several union branches take is still walked whole). For
            arguments validation has taken as they are, where a key's text and a set's repeats
            are all that is left to look at: the work is then in proportion to those parts.
        repairing: Whether validation refused `value`, which the walk then repairs: a value
            the developer declared strict (`STRICT_KEY`) is not converted, and validation
            refuses it. False for arguments validation took as they are, where a change the
            walk makes is a reading Pydantic made itself (a strict model's field validator
            that reads `"3"` as 3), which is only recorded.

    Returns:
        The coerced value with every coercion and every refusal; the parts nothing changed in
        are the input's own (`value` itself when nothing changed).
    """
    coercer = _Coercer(
        schema, rules, default_tz, sets, exact_ints=exact_ints, focus=focus, repairing=repairing
    )
    out = coercer.walk(value, schema, [], rules)
    return CoercionResult(
        out, tuple(coercer.coercions), tuple(coercer.problems), coercer.kept_items
    )
