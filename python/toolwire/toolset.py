"""`Toolset`: one definition per tool, every provider's format, and call validation.

A tool is either a Pydantic model class (its fields are the arguments) or a plain tool
definition in any of the shapes providers and MCP servers use:

* `{"name", "description", "parameters"}` (an OpenAI `function` object),
* `{"type": "function", "function": {...}}` (a Chat Completions tool),
* `{"type": "function", "name", "description", "parameters"}` (a Responses tool),
* `{"name", "description", "input_schema"}` (an Anthropic tool),
* `{"name", "description", "inputSchema"}` (an MCP tool).

Naming a model tool, first match wins:

1. the `names` mapping passed to `Toolset` (keyed by the model class),
2. a `__tool_name__` class attribute,
3. `model_config["title"]`, only when set explicitly,
4. the class name in snake_case (`GetWeather` → `get_weather`): tool names read as function
   names, and models of the same family then agree with hand-written tools. A parametrized
   generic model's brackets become underscores (`Page[Issue]` → `page_issue`).

Every name must match `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's rule, the strictest provider's).
A model's description is its docstring, cleaned with `inspect.cleandoc`; field descriptions come
through the JSON Schema.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gc
import inspect
import json
import logging
import math
import re
import typing
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import tzinfo
from typing import TYPE_CHECKING, Any, cast

import jsonschema
import jsonschema.validators
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from toolwire import _core
from toolwire._core import DirectValidation, ToolCall, pattern_error
from toolwire._pickling import RebuiltWhole
from toolwire.coercion import (
    ALL_RULES,
    COERCE_KEY,
    KEYS_KEY,
    REQUIRED_SPELLINGS_KEY,
    SPELLINGS_KEY,
    STRICT_KEY,
    CoercionSpec,
    float_risk,
    is_untyped,
    loads_exact,
    pointer,
    resolve_rules,
)
from toolwire.jsonschema_dialect import RefusedPatternError, extended_validator
from toolwire.payloads import (
    FREE_FORM_TYPE,
    Lang,
    check_lang,
    is_free_form,
    require_call,
    sendable_text,
)
from toolwire.schema_export import (
    MAX_SCHEMA_DEPTH,
    InvalidSchemaError,
    Relaxation,
    SchemaTooLargeError,
    accepts_null,
    as_json_schema,
    export_schema,
    invalid_pattern,
    post_order,
    precheck_schema,
    refuse_too_deep,
    secret_patterns,
    self_reference_loop,
    shown_got,
    strict_problems,
    subschemas,
    unresolvable_dynamic_ref,
    with_object_root,
    with_referrers,
)
from toolwire.subschemas import pointer_tokens
from toolwire.validation import (
    GC_PAUSE_MIN_BYTES,
    SUCCESS_PER_CALL,
    CallErrorLike,
    CallLike,
    Check,
    FieldError,
    Outcome,
    Redactor,
    ToolValidator,
    outcome_for_call_error,
    pause_gc,
    scrubbed_text,
    success_outcome,
    success_template,
    with_synthetic_id,
    with_wire_id,
    wrong_tool_type_outcome,
)

if TYPE_CHECKING:
    from pydantic._internal._core_utils import CoreSchemaOrField

    from toolwire._core import ToolRegistry

__all__ = [
    "CustomToolDefinition",
    "ToolDefinition",
    "ToolInput",
    "Toolset",
    "UnknownToolError",
    "snake_case",
]


class UnknownToolError(RebuiltWhole, KeyError):
    """A tool name a `Toolset` lookup (`tool`, `model`, `schema`, `custom_tool`) does not
    know: a `KeyError` (code that caught the bare one still does), whose text names the tool
    and the ones registered.

    Attributes:
        name: The name asked for.
        available: The names registered of the kind asked for (custom tools for
            `custom_tool`), in registration order.
    """

    def __init__(self, name: object, available: Sequence[str], *, custom: bool = False) -> None:
        kind = "custom tool" if custom else "tool"
        listed = ", ".join(repr(n) for n in available) if available else f"no {kind}s"
        super().__init__(f"no {kind} named {name!r}; registered: {listed}")
        self.name = name
        self.available = list(available)

    def __str__(self) -> str:
        # `KeyError` shows its argument's repr, quotes and escapes included.
        return str(self.args[0]) if self.args else ""


# A tool whose calls Pydantic alone validates: its validator, Pydantic's `validate_json`, the
# `strict` it is called with, and whether the tool has float fields and secret values.
_DirectTool = tuple[ToolValidator, Callable[..., BaseModel], bool | None, bool, bool]

# Pydantic key schemas whose texts `coercion.check_keys` holds to JSON's form of the type.
_KEY_KINDS = {
    "int": "integer",
    "float": "number",
    "decimal": "decimal",
    "bool": "boolean",
    # Held to what a value of the type is held to (`coercion.check_keys`).
    "datetime": "date-time",
    "uuid": "uuid",
}


# Keywords whose value is a list of schemas: as below `_SCHEMA_MAPS`, a step below them is a
# subschema's place, not a keyword.
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
# Keywords whose value maps property names to lists of names (draft 7's `dependencies` to
# schemas too): a step below them is a name, as below `_SCHEMA_MAPS`, not a keyword.
_NAME_MAPS = frozenset({"dependentRequired", "dependencies"})
_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}
_BOUND_WORDS = {
    "minimum": "a number of at least {}",
    "maximum": "a number of at most {}",
    "exclusiveMinimum": "a number above {}",
    "exclusiveMaximum": "a number below {}",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "minLength": "at least {} characters",
    "format": "a valid {}",
}


def _keyword_at(steps: Sequence[str | int]) -> str | None:
    """The keyword the place `steps` in a schema is under, or None where the value there is a
    whole subschema (`/properties/a`)."""
    keyword: str | None = None
    for at, step in enumerate(steps):
        parent = steps[at - 1] if at else None
        if isinstance(step, str) and parent not in _SCHEMA_MAPS and parent not in _NAME_MAPS:
            keyword = step
    if steps:
        last, parent = steps[-1], steps[-2] if len(steps) > 1 else None
        if parent in _SCHEMA_MAPS or (isinstance(last, int) and parent in _SCHEMA_LISTS):
            keyword = None  # the value at fault is a whole subschema
    return keyword


_WHOLE_CHARACTERS = "text without a lone surrogate (JSON text is UTF-8)"


def _has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a surrogate half alone, which no UTF-8 JSON text can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refuse_non_json(schema: Mapping[str, Any], tool: str) -> None:
    """Refuse a schema holding what JSON cannot: a key that is no string, a set, an infinite or
    NaN number, text with a lone surrogate (`"\\ud800"` read by `json.loads`), or an object
    of another kind (a `Decimal`).

    A Python dict can hold them (`json.loads` reads `1e400` as infinity; YAML reads an unquoted
    `200` key as an int), and `jsonschema` takes most of them, but the pre-check and the
    provider receive the schema as JSON text: left in, they broke the first assembler given
    the toolset, far from the schema, or a provider's request. Found without recursion, the
    first in document order.

    Raises:
        InvalidSchemaError: With the place and what belongs there.
    """
    todo: list[tuple[object, tuple[str | int, ...]]] = [(schema, ())]
    while todo:
        value, steps = todo.pop()
        expected: str | None = None
        if isinstance(value, dict):
            items = cast(dict[object, object], value).items()
            stray = next(
                (k for k, _ in items if not isinstance(k, str) or _has_lone_surrogate(k)), None
            )
            if stray is not None:
                where = pointer(list(steps))
                text_key = isinstance(stray, str)
                raise InvalidSchemaError(
                    tool,
                    where,
                    _keyword_at(steps),
                    f"an object with the key {stray!r}"[:80],
                    _WHOLE_CHARACTERS if text_key else "an object whose keys are strings",
                    f"the key {stray!r} at {where or '/'} holds a lone surrogate"
                    if text_key
                    else f"JSON object keys are strings; the key {stray!r} at {where or '/'} "
                    f"is a {type(stray).__name__}",
                )
            todo.extend((item, (*steps, cast(str, key))) for key, item in reversed(items))
            continue
        if isinstance(value, list | tuple):
            # A tuple is written as an array; where the metaschema wants a list it says so.
            entries = list(enumerate(cast(Sequence[object], value)))
            todo.extend((item, (*steps, at)) for at, item in reversed(entries))
            continue
        if isinstance(value, float) and not math.isfinite(value):
            expected = "a finite number (JSON has no infinity or NaN)"
        elif isinstance(value, set | frozenset):
            expected = "a JSON array (a list)"
        elif isinstance(value, str) and _has_lone_surrogate(value):
            # The pre-check and the provider get the schema as UTF-8 JSON text.
            expected = _WHOLE_CHARACTERS
        elif value is not None and not isinstance(value, str | int | float):
            expected = "JSON data (an object, array, string, number, boolean or null)"
        if expected is not None:
            where = pointer(list(steps))
            got = repr(cast(object, value))
            kind = type(cast(object, value)).__name__
            raise InvalidSchemaError(
                tool,
                where,
                _keyword_at(steps),
                shown_got(got),
                expected,
                f"{kind} at {where or '/'} has no JSON form",
            )


def _refuse_unresolvable_dynamic_ref(schema: Mapping[str, Any], tool: str) -> None:
    """Refuse a `$dynamicRef` or `$recursiveRef` that names no target (see
    `unresolvable_dynamic_ref`): the schema was built, and every call then failed with an
    internal error, as no `$ref` naming nothing is let through.

    Raises:
        InvalidSchemaError: With the place of the reference.
    """
    found = unresolvable_dynamic_ref(schema)
    if found is None:
        return
    steps, keyword, reference = found
    where = pointer(steps)
    expected = (
        '"#", the only value draft 2019-09 defines'
        if keyword == "$recursiveRef"
        else "a reference to a subschema of this schema (a `$dynamicAnchor`, an `$anchor` or"
        " a JSON Pointer to one)"
    )
    got = json.dumps(reference, ensure_ascii=False)
    raise InvalidSchemaError(
        tool,
        where,
        keyword,
        shown_got(got),
        expected,
        f"{keyword} {got} at {where} resolves to nothing",
    )


def _refuse_invalid_pattern(schema: Mapping[str, Any], tool: str, *, model: bool) -> None:
    """Refuse a regular expression validation cannot run that the metaschema let through (see
    `invalid_pattern`), at its own place. A model's pattern in another dialect than ECMA-262
    (`(?i)abc`) stands: the model's own engine runs it (see `_without_foreign_patterns`).

    Raises:
        InvalidSchemaError: With the place of the pattern.
    """
    found = invalid_pattern(schema, ecma_only=not model)
    if found is None:
        return
    steps, keyword, source, refused = found
    got = json.dumps(source, ensure_ascii=False)
    raise InvalidSchemaError(
        tool,
        pointer(steps),
        keyword,
        shown_got(got),
        refused.reason if isinstance(refused, RefusedPatternError) else "a valid regex",
        f"{keyword} {got} at {pointer(steps)} does not compile: {refused}",
    )


def _refuse_self_reference_loop(schema: Mapping[str, Any], tool: str) -> None:
    """Refuse a `$ref` that comes back to itself on the same value with no way out (see
    `self_reference_loop`): the schema was built, and every value it judges was then refused
    as `invalid`, with nothing said about the schema.

    Raises:
        InvalidSchemaError: At the reference.
    """
    found = self_reference_loop(schema)
    if found is None:
        return
    steps, reference = found
    where = pointer(steps)
    got = json.dumps(reference, ensure_ascii=False)
    raise InvalidSchemaError(
        tool,
        where,
        "$ref",
        shown_got(got),
        "a reference that reaches a constraint, not one that comes back to itself on the"
        " same value (no value could ever be validated)",
        f"$ref {got} at {where} leads back to itself on the same value, with no branch out",
    )


def _refuse_unknown_coercion_rules(schema: Mapping[str, Any], tool: str) -> None:
    """Refuse an `x-toolwire-coerce` that is not a list of rule names: coercion reads only the
    names it knows, so a misspelt rule (`bool_words`) or a name given alone (read as its
    letters) left the field without the rule its author asked for, and without a word.

    Raises:
        InvalidSchemaError: At the keyword, listing the rules.
    """
    for node, tokens in subschemas(schema):
        named: object = node.get(COERCE_KEY, [])
        if isinstance(named, list) and all(
            isinstance(rule, str) and rule in ALL_RULES for rule in cast(list[object], named)
        ):
            continue
        where = pointer([*tokens, COERCE_KEY])
        got = json.dumps(named, ensure_ascii=False, default=repr)
        raise InvalidSchemaError(
            tool,
            where,
            COERCE_KEY,
            shown_got(got),
            "a list of coercion rule names: " + ", ".join(sorted(ALL_RULES)),
            f"{COERCE_KEY} {got} at {where} names no coercion rule of toolwire's",
        )


def _refuse_lone_surrogate_description(tool: str, description: str) -> None:
    """Refuse a tool description holding a lone surrogate: every export sends it, and no UTF-8
    request body can carry it, so the provider request failed far from the tool's definition.

    Raises:
        ValueError: Naming the tool.
    """
    if _has_lone_surrogate(description):
        raise ValueError(
            f"tool {tool!r}: 'description' holds a lone surrogate, which no UTF-8 JSON text "
            "can carry"
        )


def _require_call_types(call: object) -> None:
    """Raise `TypeError` naming the attribute of a call of the application's own that holds
    the wrong kind of value: an `arguments` dict (Anthropic's `input`) got an `internal_error`
    outcome, and an `id` that is no string raised from deep inside with an index error's text.

    Raises:
        TypeError: With the attribute, what belongs there and what it holds.
    """
    wanted: tuple[tuple[str, tuple[type, ...], str], ...] = (
        ("arguments", (str, bytes), "the arguments' JSON text (a str; json.dumps a dict)"),
        ("name", (str, type(None)), "a str or None"),
        ("id", (str, type(None)), "a str or None"),
    )
    for attribute, kinds, expected in wanted:
        held: object = getattr(call, attribute)
        if not isinstance(held, kinds):
            raise TypeError(
                f"validate's call.{attribute} must be {expected}, not {type(held).__name__}"
            )


def _refuse_unread_draft(schema: Mapping[str, Any], tool: str) -> None:
    """Refuse a `$schema` that is no URI, or that names draft 3, which neither `jsonschema`'s
    extended reading nor the pre-check reads (its `required: true` on a property, its
    `divisibleBy`): such a schema failed at build with the text of an internal error.

    Raises:
        InvalidSchemaError: With what belongs there.
    """
    declared: object = schema.get("$schema")
    if declared is None:
        return
    if not isinstance(declared, str):
        got = repr(declared)
        raise InvalidSchemaError(
            tool,
            "/$schema",
            "$schema",
            shown_got(got),
            "a URI naming a JSON Schema draft",
            f"$schema is a {type(declared).__name__}, not a URI",
        )
    found = jsonschema.validators.validator_for(
        {"$schema": declared}, default=jsonschema.Draft202012Validator
    )
    if found is jsonschema.Draft3Validator:
        raise InvalidSchemaError(
            tool,
            "/$schema",
            "$schema",
            json.dumps(declared),
            "a JSON Schema draft from draft 4 on",
            "draft 3 is not read",
        )


def _refuse_what_the_metaschema_refuses(schema: Mapping[str, Any], tool: str) -> None:
    """Refuse a plain tool's schema its draft's metaschema refuses, read as written (OpenAPI's
    spellings read as JSON Schema), before anything is inlined or closed.

    Validation checks its own schema again, but that one has its references inlined: a
    definition's fault was told where the definition is used, a definition nothing uses and an
    `$anchor` nothing names were not checked at all, and a value that is no schema (`"required":
    [{}]`, a definition that is a list) broke the inliner first with an internal error's text.

    Raises:
        InvalidSchemaError: With the place as written and what belongs there.
    """
    cls = extended_validator(
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    )
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise _invalid_schema(tool, exc) from exc


def _invalid_schema(tool: str, exc: jsonschema.SchemaError) -> InvalidSchemaError:
    """The metaschema's refusal of a tool's schema, said in one line: the place, the keyword,
    the value and what belongs there (its own message, with the metaschema's subschema, is a
    screenful and names the metaschema's places rather than the tool's)."""
    steps = list(exc.absolute_path)
    keyword = _keyword_at(steps)
    rule = exc.validator
    value: Any = exc.validator_value
    if rule == "format" and value == "regex" and steps[-1:] == ["patternProperties"]:
        # The metaschema checks the names with `propertyNames` and names their object: the
        # place at fault is the name itself.
        steps.append(str(exc.instance))
        keyword = "patternProperties"
    if isinstance(exc.cause, RefusedPatternError):
        expected = exc.cause.reason
    elif rule == "type":
        names = [value] if isinstance(value, str) else list(cast(list[str], value))
        if set(names) == {"object", "boolean"}:
            expected = "a schema (an object or a boolean)"
        else:
            expected = " or ".join(_TYPE_WORDS.get(n, n) for n in names)
    elif rule in _BOUND_WORDS:
        expected = _BOUND_WORDS[str(rule)].format(value)
    elif rule == "uniqueItems":
        expected = "no repeated items"
    elif rule == "enum":
        expected = "one of " + ", ".join(json.dumps(v) for v in cast(list[Any], value))
    elif rule in ("anyOf", "oneOf") and keyword == "type" and steps[-1] == "type":
        expected = (
            "a type name ('array', 'boolean', 'integer', 'null', 'number', 'object',"
            " 'string') or a list of them"
        )
    else:
        expected = f"what the metaschema allows ({exc.message})"
    try:
        got = json.dumps(exc.instance, ensure_ascii=False)
    except (TypeError, ValueError):
        got = repr(exc.instance)
    return InvalidSchemaError(tool, pointer(steps), keyword, shown_got(got), expected, str(exc))


class _ModelSchema(GenerateJsonSchema):
    """Pydantic's schema with a structure that has no fields closed.

    Pydantic writes a model, `TypedDict` or dataclass without fields as `"properties": {}`
    and drops any key sent to it (unless its config allows extra keys, which its schema then
    says). A plain schema's `"properties": {}` below the root is a free-form object, as JSON
    Schema reads it (see `schema_export._with_closed_objects`); a model's is a structure that
    takes no field, so that a key sent to it is refused as unknown, as it is for a model with
    fields, instead of being dropped without a word.
    """

    # Whether such a structure is closed (not where nothing is, see `_FieldsTypedSchema`).
    _closes_fieldless = True

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The model's schema, closed if it has no fields."""
        return self._closed_if_fieldless(super().model_schema(schema))

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        """The `TypedDict`'s schema, closed if it has no fields."""
        return self._closed_if_fieldless(super().typed_dict_schema(schema))

    def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
        """The dataclass's schema, closed if it has no fields."""
        return self._closed_if_fieldless(super().dataclass_schema(schema))

    def _closed_if_fieldless(self, out: JsonSchemaValue) -> JsonSchemaValue:
        if self._closes_fieldless and out.get("properties") == {}:
            out.setdefault("additionalProperties", False)
        return out


class _DecimalSchema(_ModelSchema):
    """Pydantic's schema with `Decimal` fields recognisable again.

    Up to pydantic 2.13 the string branch of a `Decimal` field carried a numeric `pattern`; later
    versions dropped it, which makes `Decimal` and `float | str` look alike. Validation needs to
    tell them apart (JSON numbers for `Decimal` fields are quoted so no digit is lost), so the
    schema used for validation puts the pattern back. Exports do not use it (see
    `_ExportSchema`). Coercion walks this schema too, so it names every key a field is read
    from, as the pre-check's does (see `_PrecheckSchema`).
    """

    def generate_inner(self, schema: CoreSchemaOrField) -> JsonSchemaValue:
        """Any schema, marked (`coercion.STRICT_KEY`) where the field declares `strict`."""
        out = super().generate_inner(schema)
        node = cast(Mapping[str, Any], schema)
        strict: object = node.get("strict")
        # A model's own `strict` is about instances of its class, not its fields (see
        # `model_schema`); a `$ref` is resolved before any key beside it is read.
        if isinstance(strict, bool) and node.get("type") != "model" and "$ref" not in out:
            out[STRICT_KEY] = strict
        return out

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The model's schema with every key its fields are read from, marked with whether
        its config makes its fields strict: that holds for them alone, not for the fields of
        a model nested in it, so every model says."""
        out = super().model_schema(schema)
        config = cast(Mapping[str, Any], schema.get("config") or {})
        _add_alternate_keys(out, schema, config, describe_every_key=True)
        out[STRICT_KEY] = config.get("strict") is True
        return out

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        """The timestamp's schema; a `NaiveDatetime` is no RFC 3339 `date-time`.

        Its format is named `naive-date-time` instead, which no JSON Schema reader knows and
        nothing here asserts: without a format, the model whose value it refuses would be told
        it expected "a string" (or, when the field is missing, "required: a string").
        """
        out = _naive_without_format(schema, super().datetime_schema(schema))
        if schema.get("tz_constraint") == "naive":
            out["format"] = "naive-date-time"
        return out

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        """The dict's schema, marked with the JSON type its keys stand for when they are not
        strings (see `coercion.KEYS_KEY`): Pydantic converts key texts laxly."""
        out = super().dict_schema(schema)
        keys = cast(Mapping[str, Any], schema.get("keys_schema") or {})
        key_type = str(keys.get("type"))
        if key_type == "enum":
            # An enum of ints or floats reads its key texts as its values' type does (Pydantic
            # took `"2.0"` for `IntEnum` member 2).
            key_type = str(keys.get("sub_type"))
        kind = _KEY_KINDS.get(key_type)
        if key_type == "datetime" and keys.get("tz_constraint") == "naive":
            kind = "naive-date-time"
        if kind is not None:
            out[KEYS_KEY] = kind
        return out

    def union_schema(self, schema: core_schema.UnionSchema) -> JsonSchemaValue:
        """The union's schema; a union of `float` and `Decimal` is no `Decimal` field.

        Pydantic merges the two into the same `anyOf` as a lone `Decimal`, but places a JSON
        number in the `float` branch, and a number quoted to keep its digits would land in the
        `Decimal` one: without the numeric pattern its numbers are left as they are."""
        out = super().union_schema(schema)
        kinds = {_choice_type(choice) for choice in schema.get("choices", [])}
        if {"float", "decimal"} <= kinds:
            for branch in cast(list[dict[str, Any]], out.get("anyOf") or []):
                if branch.get("type") == "string" and branch.get("pattern") == _NUMERIC_PATTERN:
                    del branch["pattern"]
        return out

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        """The `Decimal` schema with a numeric pattern on its string branch."""
        out = super().decimal_schema(schema)
        for branch in cast(list[dict[str, Any]], out.get("anyOf") or []):
            if branch.get("type") == "string" and "pattern" not in branch:
                branch["pattern"] = _NUMERIC_PATTERN
        return out


# The numeric pattern Pydantic gave a `Decimal` field's string branch up to 2.13.
_NUMERIC_PATTERN = r"^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$"


def _choice_type(choice: object) -> str | None:
    """The core schema type of a union choice (a schema, or a (schema, label) pair)."""
    if isinstance(choice, tuple):
        choice = cast(tuple[object, ...], choice)[0]
    return cast(Mapping[str, Any], choice).get("type") if isinstance(choice, Mapping) else None


class _ExportSchema(_ModelSchema):
    """Pydantic's schema with the string branch of a `Decimal` field held to a JSON number.

    Pydantic writes `Decimal` as a number or any string (from 2.14 on; before, a pattern that
    also takes `.5`, `+5` or `007`), while validation takes only a number as JSON writes it
    there. A strict export binds the model to the schema it is sent, so a string it allows must
    be one validation accepts. For the same reason a `NaiveDatetime` is exported without
    `format: date-time`, which no value it accepts satisfies (see `_naive_without_format`).
    """

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        """The timestamp's schema; a `NaiveDatetime` is no RFC 3339 `date-time`."""
        return _naive_without_format(schema, super().datetime_schema(schema))

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        """The `Decimal` schema, its string branch held to a JSON number."""
        out = super().decimal_schema(schema)
        for branch in cast(list[dict[str, Any]], out.get("anyOf") or []):
            if branch.get("type") == "string":
                branch["pattern"] = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
        return out


# Validators that see a value before Pydantic's checks (see `_PrecheckSchema`).
_FREE_INPUT = ("function-before", "function-wrap")


class _PrecheckSchema(_ModelSchema):
    """Pydantic's schema as the streaming pre-check may read it.

    Pydantic strips some strings before it checks their length and pattern (`strip_whitespace`,
    or the model's `str_strip_whitespace`), so `" abc "` passes `max_length=3`: the text as the
    model sent it may break `maxLength` and `pattern`, so those two are left to validation for
    such strings. (`to_lower` and `to_upper` apply after the checks and change nothing here.)
    Exports keep Pydantic's own schema.

    Pydantic's schema also names each field by one key, while a model may read it under
    several: by name as well as by alias (`populate_by_name` / `validate_by_name`), or under
    each of an `AliasChoices`, an `AliasPath`'s first key holding the value deeper down. Every
    such key is a property here, and a required field read under several keys is required
    under none of them, since any one of them supplies it: one of them must come instead
    (`_REQUIRED_ANY_KEY`), and a null under one of them is no absent field, as it is for
    validation, which refuses it unless the field takes null. Pydantic ignores the value under a
    later key when an earlier one is present (`{"userName": "a", "user_name": 5}` is valid to
    it), but validation refuses two of a field's keys together, so the value under each key is
    checked against the field's schema (an `AliasPath` key's along its path) whatever else
    comes: a key another field also reads is the only one that takes any value.

    A `mode="before"` or `mode="wrap"` validator (on a field, through `BeforeValidator`, or on
    the whole model) sees the value before Pydantic's own checks and may turn any input into a
    valid one (`"a,b"` into `["a", "b"]`), so the value it guards is left to validation, unless
    the validator declares the input it takes (`json_schema_input_type`).
    """

    _FIELD_FLAGS = ("strip_whitespace",)
    _MODEL_FLAGS = ("str_strip_whitespace",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Whether the model whose fields are being written transforms every string.
        self._transforming: list[bool] = [False]

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The model's schema, its own string configuration in force for its fields."""
        config = cast(Mapping[str, Any], schema.get("config") or {})
        inner = cast(Mapping[str, Any], schema["schema"])
        if inner.get("type") in _FREE_INPUT and not inner.get("json_schema_input_schema"):
            # A model validator before the fields: no key or value can be ruled out.
            return {}
        self._transforming.append(any(config.get(flag) for flag in self._MODEL_FLAGS))
        try:
            out = super().model_schema(schema)
        finally:
            self._transforming.pop()
        _add_alternate_keys(out, schema, config)
        return out

    def function_before_schema(
        self, schema: core_schema.BeforeValidatorFunctionSchema
    ) -> JsonSchemaValue:
        """Any value, unless the validator declares its input."""
        if schema.get("json_schema_input_schema"):
            return super().function_before_schema(schema)
        return {}

    def function_wrap_schema(
        self, schema: core_schema.WrapValidatorFunctionSchema
    ) -> JsonSchemaValue:
        """Any value, unless the validator declares its input."""
        if schema.get("json_schema_input_schema"):
            return super().function_wrap_schema(schema)
        return {}

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        """The timestamp's schema; a `NaiveDatetime` is no RFC 3339 `date-time`."""
        return _naive_without_format(schema, super().datetime_schema(schema))

    def set_schema(self, schema: core_schema.SetSchema) -> JsonSchemaValue:
        """The set's schema, its size limit left to validation (see `_without_max_items`)."""
        return _without_max_items(super().set_schema(schema))

    def frozenset_schema(self, schema: core_schema.FrozenSetSchema) -> JsonSchemaValue:
        """The frozenset's schema, its size limit left to validation."""
        return _without_max_items(super().frozenset_schema(schema))

    def str_schema(self, schema: core_schema.StringSchema) -> JsonSchemaValue:
        """The string's schema, without the keywords a transformed string may break."""
        out = super().str_schema(schema)
        if self._transforming[-1] or any(schema.get(flag) for flag in self._FIELD_FLAGS):
            out.pop("maxLength", None)
            out.pop("pattern", None)
        return out


def _naive_without_format(
    schema: core_schema.DatetimeSchema, out: JsonSchemaValue
) -> JsonSchemaValue:
    """A `NaiveDatetime`'s schema without `format: date-time`.

    Pydantic writes it as any timestamp, but RFC 3339 (which the pre-check asserts and coercion
    completes with a default zone or refuses as `timezone_required`) needs an offset, the one
    thing such a field refuses: left as it is, the field could take no value at all.
    """
    if schema.get("tz_constraint") == "naive":
        out.pop("format", None)
    return out


def _without_max_items(out: JsonSchemaValue) -> JsonSchemaValue:
    """A set's schema without `maxItems`: Pydantic counts the set, duplicates dropped, so
    `[1, 1, 1]` passes `max_length=2` although the array it came from has three items."""
    out.pop("maxItems", None)
    return out


def _may_be_object(schema: object) -> bool:
    """Whether a schema may allow a JSON object, by its `type` and the branches of its
    `anyOf`, `oneOf` and `allOf` (a `$ref`, or anything else, is taken as allowing one)."""
    if not isinstance(schema, dict):
        return schema is not False
    node = cast(Mapping[str, Any], schema)
    kind: object = node.get("type")
    if isinstance(kind, str) and kind != "object":
        return False
    if isinstance(kind, list) and "object" not in cast(list[object], kind):
        return False
    for keyword in ("anyOf", "oneOf"):
        branches: object = node.get(keyword)
        if isinstance(branches, list) and branches:
            if not any(_may_be_object(b) for b in cast(list[object], branches)):
                return False
    members: object = node.get("allOf")
    if isinstance(members, list):
        return all(_may_be_object(m) for m in cast(list[object], members))
    return True


# Where a schema holds subschemas: one, a list of them, or a map of names to them.
_ONE_SUBSCHEMA = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_SUBSCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")


class _FieldsTypedSchema(_PrecheckSchema):
    """The pre-check's schema, with the fields of a model that has a `mode="before"` or
    `mode="wrap"` validator of its own still typed.

    What a model with such validators is held to before lax mode reads a call that strict mode
    refused (see `ToolValidator`): a value a field's validator sees first stays free, as the
    validator may turn any input into a valid one, while a model validator, which most often
    renames keys or fills in fields, leaves each field's value held to the field's type.
    """

    # Nothing is closed in this schema (`precheck_schema(..., closed=False)`).
    _closes_fieldless = False

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        """The model's schema, as if its own validators were not there."""
        inner = cast(Mapping[str, Any], schema["schema"])
        while inner.get("type") in _FREE_INPUT and isinstance(inner.get("schema"), Mapping):
            inner = cast(Mapping[str, Any], inner["schema"])
        return super().model_schema(cast(core_schema.ModelSchema, {**schema, "schema": inner}))


def _leaves_free(check: object, typed: object) -> bool:
    """Whether the pre-check's schema `check` takes any value somewhere the validation schema
    `typed`, written from the same model, gives a type: a value a `mode="before"` validator
    sees first, or a later key a field is read from (see `_PrecheckSchema`)."""
    if not isinstance(check, dict) or not isinstance(typed, dict):
        return False
    check_node, typed_node = cast(dict[str, Any], check), cast(dict[str, Any], typed)
    if is_untyped(check_node):
        return not is_untyped(typed_node)
    pairs: list[tuple[object, object]] = [
        (check_node[key], typed_node[key])
        for key in _ONE_SUBSCHEMA
        if key in check_node and key in typed_node
    ]
    for key in _SUBSCHEMA_LISTS:
        checks, types = check_node.get(key), typed_node.get(key)
        if isinstance(checks, list) and isinstance(types, list):
            pairs.extend(zip(cast(list[object], checks), cast(list[object], types), strict=False))
    for key in _SUBSCHEMA_MAPS:
        checks, types = check_node.get(key), typed_node.get(key)
        if isinstance(checks, dict) and isinstance(types, dict):
            named = cast(dict[str, object], types)
            pairs.extend(
                (sub, named[name])
                for name, sub in cast(dict[str, object], checks).items()
                if name in named
            )
    return any(_leaves_free(a, b) for a, b in pairs)


def _has_free_input(model: type[BaseModel]) -> bool:
    """Whether the model (or a model, field or item inside it) has a `mode="before"` or
    `mode="wrap"` validator of its own, which hands Pydantic Python objects to check (see
    `ToolValidator`); Pydantic's own wrappers of its types are not counted."""
    pending: list[object] = [model.__pydantic_core_schema__]
    seen: set[int] = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Mapping):
            entries = cast(Mapping[str, object], node)
            if entries.get("type") in _FREE_INPUT:
                holder = entries.get("function")
                function = (
                    cast(Mapping[str, object], holder).get("function")
                    if isinstance(holder, Mapping)
                    else None
                )
                module = getattr(function, "__module__", None) or ""
                if not (module == "pydantic" or module.startswith("pydantic.")):
                    return True
            pending.extend(entries.values())
        elif isinstance(node, (list, tuple)):
            pending.extend(cast(Sequence[object], node))
    return False


def _free_input_schema(model: type[BaseModel] | None) -> dict[str, Any] | None:
    """For a model with a `mode="before"` or `mode="wrap"` validator of its own, what holds
    each value present to its field's JSON type and form, whichever fields are there (see
    `ToolValidator`'s `free_input`); None for any other tool."""
    if model is None or not _has_free_input(model):
        return None
    source = model.model_json_schema(schema_generator=_FieldsTypedSchema)
    schema = precheck_schema(source, closed=False)
    pending: list[object] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            entries = cast(dict[str, object], node)
            if isinstance(entries.get("required"), list):
                del entries["required"]
            pending.extend(entries.values())
        elif isinstance(node, list):
            pending.extend(cast(list[object], node))
    return schema


class _UnreadKeyError(ValueError):
    """A field the published schema names by a key Pydantic never reads it from.

    Pydantic writes a field read only along `AliasPath`s under its name, which no JSON Schema
    key can be made to mean the path: the model, held to the schema (strict exports require
    the key and forbid any other), sends the value there, where it was dropped without a word
    for the field's default, or refused as unknown, every time.
    """

    def __init__(
        self, schema: core_schema.ModelSchema, field: str, key: str, paths: list[list[object]]
    ) -> None:
        model = getattr(schema.get("cls"), "__name__", "the model")
        read = ", ".join("AliasPath(" + ", ".join(map(repr, path)) + ")" for path in paths)
        super().__init__(
            f"field {field!r} of {model} is read only along {read}, but its schema names it "
            f"{key!r}, a key Pydantic does not read it from, so the value the model sends "
            f"there would be lost: read it from {key!r} too (AliasChoices({key!r}, ...)) or "
            "set validate_by_name=True"
        )


def _add_alternate_keys(
    out: JsonSchemaValue,
    schema: core_schema.ModelSchema,
    config: Mapping[str, Any],
    *,
    describe_every_key: bool = False,
) -> None:
    """Adds to a model's object schema `out` every other key Pydantic reads a field from.

    Each key holds the field's schema, or, for an `AliasPath`'s first key, a schema that
    holds the value along the path to it (see `_along`): the pre-check checks the value under
    any key as it streams, and validation (`describe_every_key`) coerces and describes it
    there. Validation is also told the paths each field is read from (`SPELLINGS_KEY`), two of
    which it refuses together.
    """
    fields_schema = cast(Mapping[str, Any], schema["schema"])
    # A `model_validator` wraps the fields in function schemas.
    while fields_schema.get("type") != "model-fields" and "schema" in fields_schema:
        fields_schema = cast(Mapping[str, Any], fields_schema["schema"])
    props = out.get("properties")
    if fields_schema.get("type") != "model-fields" or not isinstance(props, dict):
        return
    props = cast(dict[str, Any], props)
    by_alias = config.get("validate_by_alias", True) is not False
    by_name = bool(config.get("validate_by_name") or config.get("populate_by_name"))
    required = cast(list[str], out.get("required") or [])
    # Each field's name, the keys it is read from (see below), and every path it is read from,
    # in the order Pydantic tries them.
    read: list[tuple[str, dict[str, list[list[object]]], list[list[object]]]] = []
    for name, field in cast(Mapping[str, Mapping[str, Any]], fields_schema["fields"]).items():
        alias: object = field.get("validation_alias")
        # Each key the field is read from, with the rest of each path starting there (an empty
        # one where the value under the key is the field's own).
        keys: dict[str, list[list[object]]] = {}
        tried: list[list[object]] = []
        if by_alias and isinstance(alias, str):
            keys[alias] = [[]]
            tried.append([alias])
        elif by_alias and isinstance(alias, list):
            paths = cast(list[object], alias)
            # One `AliasPath` is a list of keys; `AliasChoices` a list of such lists.
            if not all(isinstance(path, list) for path in paths):
                paths = [paths]
            for path in cast(list[list[object]], paths):
                if path and isinstance(path[0], str):
                    keys.setdefault(path[0], []).append(path[1:])
                    tried.append(list(path))
        if by_name or alias is None or not by_alias:
            if [name] not in tried:
                keys.setdefault(name, []).append([])
                tried.append([name])
        read.append((name, keys, tried))
    # A key two fields read (one's alias, the other's name) may feed either or both: it takes
    # any value, and validation judges it.
    readers = Counter(key for _, keys, _ in read for key in keys)
    shared = {key for key, count in readers.items() if count > 1}
    # The paths each field is read from, where there are several, less those through a
    # shared key, which another field may have read.
    spellings = [
        own_paths
        for own_paths in ([p for p in tried if p[0] not in shared] for _, _, tried in read)
        if len(own_paths) > 1
    ]
    if describe_every_key and spellings:
        # Pydantic takes the first path present and drops the values under the others without
        # a word (`forbid` refuses them as extra inputs, which reads as "no such field" for a
        # key the field is read from): coercion refuses two of them together.
        out[SPELLINGS_KEY] = spellings
    original = dict(props)
    required_keys: list[str] = []
    # The keys of each required field read under several: one of them must come.
    groups: list[list[str]] = []
    for name, keys, tried in read:
        # Pydantic shows the field by name where no alias key is a plain one (an `AliasPath`).
        shown = next((k for k in keys if k in original), name if name in original else None)
        if shown is None:
            continue
        if list(keys) == [shown] and keys[shown] == [[]]:
            if shown in shared:
                props[shown] = {}
            continue
        own = original[shown]
        if shown not in keys:
            # Shown by name, but read only along its `AliasPath`s: Pydantic ignores the name.
            if describe_every_key:
                raise _UnreadKeyError(schema, name, shown, tried)
            props[shown] = {}
        # Past a path through a shared key, which the field may have read first, a value is
        # the field's only if that path holds none: the pre-check cannot know that yet, while
        # validation, which sees the whole call, describes it by the field's schema.
        past = next((i for i, path in enumerate(tried) if path[0] in shared), len(tried))
        if describe_every_key:
            past = len(tried)
        for key, rests in keys.items():
            # Pydantic reads the first path present, in the order given, and ignores the others
            # (as extra inputs, which only `forbid` refuses); validation refuses two of them
            # together (`SPELLINGS_KEY`), so whatever other key comes, the value found along
            # any path must be the field's. Validation, which coerces and describes a value by
            # one schema, reads a key that holds the value itself by the field's.
            if key in shared or any(tried.index([key, *rest]) > past for rest in rests):
                props[key] = {}
            elif describe_every_key and [] in rests:
                props[key] = copy.deepcopy(own)
            else:
                found = [_along(path, own, null_is_value=describe_every_key) for path in rests]
                props[key] = _all_of([s for s in found if s is not None])
        if shown in required:
            required.remove(shown)
            required_keys.extend(keys)
            groups.append(list(keys))
    if "required" in out and not required:
        del out["required"]
    if describe_every_key and required_keys:
        out[REQUIRED_SPELLINGS_KEY] = required_keys
    elif groups:
        out[_REQUIRED_ANY_KEY] = groups


def _along(path: list[object], own: Any, *, null_is_value: bool = False) -> Any:
    """A schema that holds the value at `path` (the rest of an `AliasPath`, below its first
    key) to `own` and takes anything else, or None where no schema the pre-check reads can
    say so.

    Pydantic follows a string step into an object only and a whole-number step into an array
    only, and a path it cannot follow gives no value: that is no error here either, so the
    object stays open and a shorter array passes. A step from the end (a negative index) has
    no such schema. With `null_is_value` (for validation), a null at a step is the field's
    value, as Pydantic reads it, not an absent member (`REQUIRED_SPELLINGS_KEY`)."""
    schema: Any = copy.deepcopy(own)
    for step in reversed(path):
        if isinstance(step, str):
            schema = {"properties": {step: schema}, "additionalProperties": True}
            if null_is_value:
                schema[REQUIRED_SPELLINGS_KEY] = [step]
        elif isinstance(step, int) and not isinstance(step, bool) and step >= 0:
            before: list[Any] = [{}] * step
            schema = {"prefixItems": [*before, schema]}
        else:
            return None
    return schema


def _all_of(schemas: list[Any]) -> Any:
    """A schema that takes what each of `schemas` takes (any value for none)."""
    if len(schemas) == 1:
        return schemas[0]
    return {"allOf": schemas} if schemas else {}


ToolInput = type[BaseModel] | Mapping[str, Any]
"""What `Toolset` accepts per tool: a Pydantic model class or a plain tool definition."""

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_UNNAMEABLE = re.compile(r"[^a-zA-Z0-9_-]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """`GetWeather` → `get_weather`, `HTTPRequest` → `http_request`."""
    return _CAMEL.sub("_", name).lower()


@dataclass(frozen=True, slots=True, eq=False)
class ToolDefinition:
    """One registered tool.

    Attributes:
        name: The tool name.
        description: What the tool does, for the model.
        model: The Pydantic model, or None for a plain-dict tool.
        source_schema: The parameter schema as given (Pydantic's `model_json_schema()` for
            models, where a model, `TypedDict` or dataclass without fields says
            `additionalProperties: false`).
        schema: The self-contained schema the pre-check compiles.
        problems: What keeps the schema out of the OpenAI strict subset (empty if nothing).
    """

    name: str
    description: str
    model: type[BaseModel] | None
    source_schema: dict[str, Any]
    schema: dict[str, Any]
    problems: tuple[Relaxation, ...]
    validator: ToolValidator


@dataclass(frozen=True, slots=True, eq=False)
class CustomToolDefinition:
    """One registered custom tool: its calls carry free-form text (type `custom`), not JSON
    arguments, which no schema checks; the provider holds the text to `format`.

    Attributes:
        name: The tool name.
        description: What the tool does, for the model.
        format: The input format as the Responses API writes it: `{"type": "text"}`, or
            `{"type": "grammar", "syntax": "lark" | "regex", "definition": ...}`.
    """

    name: str
    description: str
    format: dict[str, Any]


_GRAMMAR_SYNTAXES = ("lark", "regex")

# What the stream did to a function call, told before its being of the wrong kind for a custom
# tool: sent again, it is read whole, and only then is its kind the model's to fix.
_BEFORE_TOOL_TYPE = frozenset({"filtered", "lost_event", "arguments_mismatch", "missing_name"})


def _is_custom_definition(tool: Mapping[str, Any]) -> bool:
    """Whether a definition dict is a custom tool's (`"type": "custom"`, either API's shape)."""
    return tool.get("type") == "custom"


def _custom_parts(tool: Mapping[str, Any]) -> CustomToolDefinition:
    """A custom tool from its definition in the Responses shape (`{"type": "custom", "name",
    "description", "format"}`) or the Chat Completions one (`{"type": "custom", "custom":
    {...}}`, its grammar nested under `grammar`)."""
    inner = tool.get("custom")
    if isinstance(inner, Mapping):
        tool = cast(Mapping[str, Any], inner)
    name, description = _name_and_description(tool)
    given: object = tool.get("format")
    if given is None:
        return CustomToolDefinition(name, description, {"type": "text"})
    if not isinstance(given, Mapping):
        raise ValueError(f"tool {name!r}: 'format' must be an object")
    fmt = cast(Mapping[str, Any], given)
    if fmt.get("type") == "text":
        return CustomToolDefinition(name, description, {"type": "text"})
    if fmt.get("type") != "grammar":
        raise ValueError(f"tool {name!r}: 'format' type must be 'text' or 'grammar'")
    nested: object = fmt.get("grammar")
    grammar = cast(Mapping[str, Any], nested) if isinstance(nested, Mapping) else fmt
    syntax, definition = grammar.get("syntax"), grammar.get("definition")
    if syntax not in _GRAMMAR_SYNTAXES:
        raise ValueError(f"tool {name!r}: a grammar's 'syntax' must be 'lark' or 'regex'")
    if not isinstance(definition, str) or not definition:
        raise ValueError(f"tool {name!r}: a grammar needs its 'definition' as a string")
    return CustomToolDefinition(
        name, description, {"type": "grammar", "syntax": syntax, "definition": definition}
    )


def _custom_entry(tool: CustomToolDefinition) -> dict[str, Any]:
    """A custom tool's properties as both APIs write them, its format as Responses does."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["format"] = dict(tool.format)
    return out


def _name_and_description(tool: Mapping[str, Any]) -> tuple[str, str]:
    name = tool.get("name")
    if not isinstance(name, str):
        raise ValueError(f"a tool definition needs a string 'name': {dict(tool)!r:.200}")
    description = tool.get("description") or ""
    if not isinstance(description, str):
        raise ValueError(f"tool {name!r}: 'description' must be a string")
    _refuse_lone_surrogate_description(name, description)
    return name, description


def _plain_parts(tool: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    inner = tool.get("function")
    if tool.get("type") == "function" and isinstance(inner, Mapping):
        tool = cast(Mapping[str, Any], inner)
    name, description = _name_and_description(tool)
    # An MCP tool (`tools/list`, or the `mcp` SDK's `Tool.model_dump()`) spells it `inputSchema`.
    params: object = tool.get("parameters", tool.get("input_schema", tool.get("inputSchema")))
    if params is None:
        return name, description, {"type": "object", "properties": {}}
    if not isinstance(params, Mapping):
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema object")
    # Before the copy below, which recurses.
    refuse_too_deep(params, name)
    _refuse_non_json(cast(Mapping[str, Any], params), name)
    _refuse_unread_draft(cast(Mapping[str, Any], params), name)
    try:
        schema = as_json_schema(copy.deepcopy(dict(cast(Mapping[str, Any], params))))
    except ValueError as exc:
        raise ValueError(f"tool {name!r}: {exc}") from None
    _refuse_what_the_metaschema_refuses(schema, name)
    _refuse_unknown_coercion_rules(schema, name)
    _refuse_self_reference_loop(schema, name)
    # Arguments are always an object (anything else is `not_object`), and Anthropic refuses
    # an `input_schema` whose root does not say so; a reference to the root stays to the
    # schema as written.
    return name, description, with_object_root(schema)


# The `format`s the pre-check may assert for a plain-dict tool, whose validation is
# `jsonschema`'s format checker: those where that checker is at least as strict as the
# pre-check. Its `email` only asks for an `@`, its `uuid` takes extra dashes, and `hostname`,
# `duration` or `uri` are checked only with optional packages, by their own rules.
_PLAIN_PRECHECK_FORMATS = frozenset({"date", "date-time", "time", "ipv4", "ipv6"})


# Keywords whose value maps names to subschemas: the names are data, not keywords.
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# The pre-check's mark of a model's object whose required fields are read under several keys:
# a list of such fields' keys, one of which must come for each (see `_PrecheckSchema`). It
# stands for an `anyOf` of `required` lists, written only once objects are closed
# (`_with_required_keys`): beside the object's own keywords it would keep the object open.
_REQUIRED_ANY_KEY = "x-toolwire-required-any"
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", _REQUIRED_ANY_KEY})


def _without_formats(
    node: Any, *, drop: Container[str] = (), keep: Container[str] | None = None
) -> Any:
    """The schema without every `format` named in `drop` or, when `keep` is given, not named in
    `keep` (values under `enum`, `const`, `default` and `examples` are data and stay).

    Leaving a format out must only ever accept more; see `_loosened`.
    """

    def dropped(value: object) -> bool:
        return isinstance(value, str) and (
            value in drop or (keep is not None and value not in keep)
        )

    return _without_keyword(node, "format", dropped)


def _without_patterns(node: Any) -> Any:
    """The schema without its `pattern`s (values under data keywords stay; see `_loosened`)."""
    return _without_keyword(node, "pattern", lambda _: True)


def _without_foreign_patterns(node: Any) -> Any:
    """The schema without the `pattern`s and `patternProperties` names that are no ECMA-262
    regular expression.

    A model's `Field(pattern="(?i)abc")` (on a value, or on a `dict`'s keys) is run by
    Pydantic's engine, which reads its syntax: the model's validator gives it its meaning, and
    the pre-check, which reads ECMA-262 (and refuses a schema holding such a pattern), leaves it
    to the final validation. Without the name, its keys would fall to `additionalProperties` or
    `unevaluatedProperties` beside it, so those go too.
    """

    def foreign(source: object) -> bool:
        return isinstance(source, str) and pattern_error(source) is not None

    def edit(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        names: object = schema.get("patternProperties")
        keyed = isinstance(names, dict) and any(map(foreign, cast(dict[str, Any], names)))
        if not keyed and not foreign(schema.get("pattern")):
            return schema, False
        out = {k: v for k, v in schema.items() if k != "pattern" or not foreign(v)}
        if keyed:
            kept = {k: v for k, v in cast(dict[str, Any], names).items() if not foreign(k)}
            out["patternProperties"] = kept
            out.pop("additionalProperties", None)
            out.pop("unevaluatedProperties", None)
        return out, True

    return _loosened_schema(node, edit)


def _without_keyword(node: Any, keyword: str, dropped: Callable[[object], bool]) -> Any:
    """The schema without each `keyword` whose value `dropped` picks (see `_loosened`)."""

    def edit(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        if keyword not in schema or not dropped(schema[keyword]):
            return schema, False
        return {k: v for k, v in schema.items() if k != keyword}, True

    return _loosened_schema(node, edit)


def _with_null_as_absent(node: Any) -> Any:
    """The schema with `null` admitted for every optional property.

    Validation reads a `null` for an optional property whose schema does not admit it as
    "absent" (the `null_as_absent` rule, always on), and strict exports of plain tools offer
    exactly that null; the pre-check must not refuse it.
    """

    def edit(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        props = schema.get("properties")
        if not isinstance(props, dict):
            return schema, False
        listed: object = schema.get("required")
        required: set[Any] = set(cast(list[Any], listed)) if isinstance(listed, list) else set()
        # A key a required field is read under holds that field when it comes: validation
        # refuses a null there (unless the field takes one) rather than reading it as absent.
        for group in cast(list[Any], schema.get(_REQUIRED_ANY_KEY) or []):
            required.update(cast(list[Any], group))
        wrapped: dict[str, Any] = {}
        changed = False
        for name, sub in cast(dict[str, Any], props).items():
            if name not in required and isinstance(sub, dict):
                node = cast(dict[str, Any], sub)
                if not accepts_null(node):
                    sub = {"anyOf": [node, {"type": "null"}]}
                    if node.get(_LOOSENED_ONE_OF) or ("oneOf" in node and "anyOf" not in node):
                        # The pre-check's errors name the keyword the schema has.
                        sub = {**sub, _LOOSENED_ONE_OF: True}
                    changed = True
            wrapped[name] = sub
        return ({**schema, "properties": wrapped}, True) if changed else (schema, False)

    return _loosened_schema(node, edit)


def _with_required_keys(node: Any) -> Any:
    """The schema with each `_REQUIRED_ANY_KEY` mark written as what it means: for each field,
    an `anyOf` of one `required` key per key the field is read under (in an `allOf` where
    there are several such fields or an `anyOf` already).

    Pydantic finds a required field only under one of its keys, so a call with none of them
    is refused: this only ever refuses what validation refuses."""

    def expand(schema: dict[str, Any]) -> dict[str, Any]:
        groups = cast(list[list[str]], schema.pop(_REQUIRED_ANY_KEY, None) or [])
        alternatives = [{"anyOf": [{"required": [key]} for key in group]} for group in groups]
        if len(alternatives) == 1 and "anyOf" not in schema:
            schema.update(alternatives[0])
        elif alternatives:
            schema["allOf"] = [*cast(list[Any], schema.get("allOf", [])), *alternatives]
        return schema

    return _rebuilt(node, expand)


# The `format` under which the pre-check reads `time` with its offset required (RFC 3339's
# full-time); the native `format` module names it alike.
_TIME_WITH_OFFSET = "x-toolwire-time-with-offset"


def _with_offset_times(node: Any) -> Any:
    """The schema with each `format: time` asking for the offset a plain tool's validation
    requires (jsonschema reads `time` as RFC 3339's full-time), where the pre-check's own
    reading, made for Pydantic's `time` fields, leaves it optional. Errors still name `time`.
    """

    def offset(schema: dict[str, Any]) -> dict[str, Any]:
        if schema.get("format") == "time":
            schema["format"] = _TIME_WITH_OFFSET
        return schema

    return _rebuilt(node, offset)


def _rebuilt(node: Any, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of the schema with `edit` applied to each subschema, innermost first (`edit`
    gets a fresh dict it may change). Values under data keywords are copied as they are."""
    if isinstance(node, list):
        return [_rebuilt(item, edit) for item in cast(list[Any], node)]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in cast(dict[str, Any], node).items():
        if key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            named = cast(dict[str, Any], value)
            out[key] = {name: _rebuilt(sub, edit) for name, sub in named.items()}
        else:
            out[key] = _rebuilt(value, edit)
    return edit(out)


def _loosened_schema(
    node: Any, edit: Callable[[dict[str, Any]], tuple[dict[str, Any], bool]]
) -> Any:
    """`_loosened` for a whole schema: a `$ref` to a definition that the edit loosened, or that
    references one, counts as loosened where it is (in a `oneOf` branch, say), as its inlined
    copy would."""
    defs: object = cast(dict[str, Any], node).get("$defs") if isinstance(node, dict) else None
    if not isinstance(defs, dict) or not defs:
        return _loosened(node, edit)[0]
    bodies = cast(dict[str, Any], defs)
    changed = {name for name, body in bodies.items() if _loosened(body, edit)[1]}
    referrers: dict[str, list[str]] = {}
    for name, body in bodies.items():
        for target in _definitions_named(body):
            referrers.setdefault(target, []).append(name)
    return _loosened(node, edit, with_referrers(changed, referrers))[0]


def _definitions_named(node: Any) -> set[str]:
    """The definitions `$ref`s anywhere in `node` name (`#/$defs/Name`)."""
    out: set[str] = set()
    todo: list[Any] = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            todo.extend(cast(list[Any], item))
        elif isinstance(item, dict):
            as_dict = cast(dict[str, Any], item)
            ref = as_dict.get("$ref")
            tokens = pointer_tokens(ref) if isinstance(ref, str) else None
            if tokens is not None and len(tokens) == 2 and tokens[0] == "$defs":
                out.add(tokens[1])
            todo.extend(as_dict.values())
    return out


# Beside an `anyOf` that `_loosened` made of a `oneOf`: the pre-check names `oneOf` in its
# errors there (the core reads the mark; it is no keyword to `jsonschema`).
_LOOSENED_ONE_OF = "x-toolwire-one-of"


def _loosened(
    node: Any,
    edit: Callable[[dict[str, Any]], tuple[dict[str, Any], bool]],
    loosened_defs: Container[str] = (),
) -> tuple[Any, bool]:
    """`node` with `edit` applied to each of its subschemas, and whether anything changed.

    `edit` must only make a subschema accept more. Where a looser subschema would refuse more,
    the keyword around it is loosened too: `oneOf` becomes `anyOf` (two branches that differed
    by the edit would both match), a `not` is left to validation, and an `if` whose condition
    changed gives way to `anyOf` of its `then` and `else`. A `$ref` to one of `loosened_defs`
    counts as changed.
    """
    if not isinstance(node, dict):
        return node, False
    edited, changed = edit(cast(dict[str, Any], node))
    ref: object = edited.get("$ref")
    tokens = pointer_tokens(ref) if isinstance(ref, str) and loosened_defs else None
    if tokens is not None and len(tokens) == 2 and tokens[0] == "$defs":
        changed |= tokens[1] in loosened_defs
    out: dict[str, Any] = {}
    extra: list[dict[str, Any]] = []
    loose_if = False
    for key, value in edited.items():
        if key in _DATA_KEYWORDS or not isinstance(value, dict | list):
            out[key] = value
            continue
        sub_changed = False
        new: Any
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            new = {}
            for name, sub in cast(dict[str, Any], value).items():
                new[name], moved = _loosened(sub, edit, loosened_defs)
                sub_changed |= moved
        elif isinstance(value, list):
            pairs = [_loosened(item, edit, loosened_defs) for item in cast(list[Any], value)]
            new = [item for item, _ in pairs]
            sub_changed = any(moved for _, moved in pairs)
        else:
            new, sub_changed = _loosened(value, edit, loosened_defs)
        changed |= sub_changed
        if sub_changed and key == "not":
            continue
        if sub_changed and key == "oneOf":
            # The pre-check's errors still name the keyword the schema has.
            extra.append({"anyOf": new, _LOOSENED_ONE_OF: True})
            continue
        loose_if |= sub_changed and key == "if"
        out[key] = new
    if loose_if:
        del out["if"]
        extra.append({"anyOf": [out.pop("then", True), out.pop("else", True)]})
    if len(extra) == 1 and "anyOf" not in out:
        out.update(extra[0])
    elif extra:
        out["allOf"] = [*cast(list[Any], out.get("allOf", [])), *extra]
    return out, changed


def _named_precheck(name: str, source: Mapping[str, Any]) -> dict[str, Any]:
    """`precheck_schema(source)`, a schema too large to inline refused under the tool's name."""
    try:
        return precheck_schema(source)
    except SchemaTooLargeError as exc:
        raise SchemaTooLargeError(exc.size, exc.limit, tool=name, measure=exc.measure) from None
    except ValueError as exc:
        if type(exc) is not ValueError:
            raise
        # A reference the inliner cannot follow, told with the tool it is in.
        raise ValueError(f"tool {name!r}: {exc}") from None


def _model_depth(model: type[BaseModel]) -> int:
    """The levels of subschemas a model's schema nests at the least: one per field, below it
    those of the models its annotation names (in a list, a union...), found without recursion.
    A model met again inside itself (a recursive one, kept as a reference) adds nothing."""
    heights: dict[type[BaseModel], int] = {}
    for current in post_order([model], _field_models):
        heights[current] = (
            max(
                (1 + max((heights.get(m, 0) for m in models), default=0))
                for models in _models_by_field(current)
            )
            if current.model_fields
            else 0
        )
    return heights[model]


def _models_by_field(model: type[BaseModel]) -> list[list[type[BaseModel]]]:
    """The models each field's annotation names, anywhere in it (`list[Item] | None`)."""
    out: list[list[type[BaseModel]]] = []
    for field in model.model_fields.values():
        found: list[type[BaseModel]] = []
        todo: list[object] = [field.annotation]
        while todo:
            item = todo.pop()
            if isinstance(item, type) and issubclass(item, BaseModel):
                found.append(item)
            else:
                todo.extend(typing.get_args(item))
        out.append(found)
    return out


def _field_models(model: type[BaseModel]) -> list[type[BaseModel]]:
    return [m for models in _models_by_field(model) for m in models]


def _not_a_tool(tool: object) -> TypeError:
    """The error for a tool that is neither a Pydantic model class nor a definition dict."""
    hint = " (declare its fields on a pydantic BaseModel)" if isinstance(tool, type) else ""
    return TypeError(
        f"a tool must be a Pydantic model class or a tool definition dict, not {tool!r:.100}{hint}"
    )


def _model_name(model: type[BaseModel]) -> str:
    explicit = getattr(model, "__tool_name__", None)
    if isinstance(explicit, str):
        return explicit
    title = model.model_config.get("title")
    if isinstance(title, str):
        return title
    # A parametrized generic model is named `Page[int]`: its brackets and commas would make
    # an invalid tool name, so each run of characters a name cannot hold becomes one `_`.
    return _UNNAMEABLE.sub("_", snake_case(model.__name__)).strip("_")


def _check_options(**options: object) -> None:
    """Refuse a `Toolset` option of the wrong kind by name (`names=["a"]` failed inside as an
    `AttributeError`; `strict="no"` read as true)."""
    for name, value in options.items():
        if name == "strict":
            if not isinstance(value, bool):
                raise TypeError(f"strict must be True or False, not {type(value).__name__}")
        elif value is not None and not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a mapping keyed by tool, not {type(value).__name__}")
        elif isinstance(value, Mapping):
            # A value of the wrong kind was taken and then failed every call of its tool as
            # an `internal_error` (a zone given by its name, a check that is no function).
            for tool, entry in cast(Mapping[object, object], value).items():
                if name == "default_tz" and not isinstance(entry, tzinfo):
                    raise TypeError(
                        f"default_tz[{tool!r}] must be a tzinfo such as "
                        f"zoneinfo.ZoneInfo('Europe/Paris'), not {type(entry).__name__}"
                    )
                if name == "checks" and not callable(entry):
                    raise TypeError(
                        f"checks[{tool!r}] must be a function of the validated arguments, "
                        f"not {type(entry).__name__}"
                    )


class Toolset:
    """A registry of tools: provider exports, the pre-check schemas and call validation.

    Args:
        tools: Pydantic model classes and plain tool definitions, in any mix. A definition
            with `"type": "custom"` (as the Responses API writes it, `{"type": "custom",
            "name", "description", "format"}`, or as Chat Completions does, under `custom`)
            registers a custom tool: its calls carry free-form text, maybe held to a grammar
            (`format`), which is never parsed as JSON nor pre-checked; `validate` passes it as
            the outcome's `value` (a `str`), and the executor runs the tool registered under
            its name with that text (`fn(text)`).
        names: Explicit names, keyed by model class or by a plain tool's own name.
        strict: If true (the default), `openai()` and `responses()` raise `SchemaExportError`
            for a tool the strict subset cannot express; if false, such tools are exported
            with `"strict": false` and listed in `relaxations`.
        coercion: `"safe"` (the default), `"none"`, or a set of rule names from
            `toolwire.coercion`. Fields can opt in to more with `x-toolwire-coerce`.
        default_tz: A default time zone per tool name. A `datetime` without an offset is an
            error unless its tool has one here; with one, the zone is attached and recorded as
            a `default_timezone` coercion.
        checks: A business check per tool name: called with the validated model (or dict) and
            returning None (accept), a reason or a list of reasons, or raising
            `BusinessRuleError`. A rejection is a `business_error` outcome; another verdict
            (a bool: `False` is no pass) makes the call an `internal_error`.
        redact: A hook `(json_pointer, text) -> text` applied to every argument value shown to
            the model, after the built-in redaction of `x-secret` fields and `SecretStr`.
        lang: Language of model-facing text: `"en"` or `"zh"`.

    A Toolset has no namespaces: a Responses call of a tool declared inside a `namespace` tool
    names the tool by its bare name, which is what the Toolset matches (the call keeps the
    namespace as `metadata["namespace"]`). Tools of two namespaces that share a name need one
    Toolset each, picked by the call's namespace.

    Raises:
        ValueError: On a duplicate or invalid tool name, a malformed definition, an invalid
            schema, an unknown coercion rule, or a `names`/`default_tz`/`checks` key that names
            no tool.
        TypeError: On a tool that is neither a Pydantic model class nor a definition dict (a
            pydantic dataclass or a `TypedDict` included), or an option of the wrong kind
            (`names`, `default_tz` or `checks` not a mapping, a `default_tz` value that is no
            `tzinfo`, a `checks` value or `redact` not callable, `strict` not a bool,
            `coercion` neither a preset nor a collection of rule names).
    """

    def __init__(
        self,
        tools: Iterable[ToolInput],
        *,
        names: Mapping[type[BaseModel] | str, str] | None = None,
        strict: bool = True,
        coercion: CoercionSpec = "safe",
        default_tz: Mapping[str, tzinfo] | None = None,
        checks: Mapping[str, Check] | None = None,
        redact: Redactor | None = None,
        lang: Lang = "en",
    ) -> None:
        check_lang(lang)
        _check_options(names=names, default_tz=default_tz, checks=checks, strict=strict)
        if redact is not None and not callable(redact):
            kind = type(redact).__name__
            raise TypeError(f"redact must be a function (json_pointer, text) -> text, not {kind}")
        self._strict = strict
        self._rules = resolve_rules(coercion)
        # Tools whose naive timestamps validation completes with a default zone.
        self._naive_ok = frozenset(default_tz or {})
        self._redact = redact
        self._lang: Lang = lang
        rename: dict[object, str] = {}
        for rename_key, rename_to in (names or {}).items():
            rename[rename_key] = rename_to
        used_rename: set[object] = set()
        parsed: list[tuple[str, str, type[BaseModel] | None, dict[str, Any]]] = []
        customs: list[CustomToolDefinition] = []
        validation_sources: dict[str, dict[str, Any]] = {}
        # Model tools whose pre-check must leave some string keywords to validation.
        check_sources: dict[str, dict[str, Any]] = {}
        for tool in tools:
            if isinstance(tool, type) and not issubclass(cast(type, tool), BaseModel):
                # A pydantic dataclass or a TypedDict describes arguments too, but naming,
                # exports and validation all read a model's `model_config` and schema methods.
                raise _not_a_tool(tool)
            if isinstance(tool, type):
                key: object = tool
                name = _model_name(tool)
                description = inspect.cleandoc(tool.__doc__) if tool.__doc__ else ""
                # Pydantic's schema generation recurses per nested model, and runs out of
                # Python's stack far before the inliner would refuse the schema.
                depth = _model_depth(tool)
                if depth > MAX_SCHEMA_DEPTH:
                    named = rename.get(tool, name)
                    raise SchemaTooLargeError(depth, MAX_SCHEMA_DEPTH, named, measure="depth")
                source = tool.model_json_schema(schema_generator=_ModelSchema)
                # A default of `float("inf")` or a description with a lone surrogate reaches
                # the schema as Pydantic wrote it: refused here, not by the first assembler.
                _refuse_non_json(source, rename.get(tool, name))
                _refuse_unknown_coercion_rules(source, rename.get(tool, name))
                _refuse_self_reference_loop(source, rename.get(tool, name))
                model: type[BaseModel] | None = tool
                # Validation must know which fields are `Decimal` to keep their digits; the
                # plain schema no longer says so from pydantic 2.14 on (see _DecimalSchema).
                try:
                    typed_source = tool.model_json_schema(schema_generator=_DecimalSchema)
                except _UnreadKeyError as exc:
                    raise ValueError(f"tool {rename.get(tool, name)!r}: {exc}") from None
                validation_sources[name] = typed_source
                check_source = tool.model_json_schema(schema_generator=_PrecheckSchema)
                if check_source != source:
                    check_sources[name] = check_source
            elif isinstance(cast(object, tool), Mapping) and _is_custom_definition(tool):
                custom = _custom_parts(tool)
                if custom.name in rename:
                    used_rename.add(custom.name)
                    custom = dataclasses.replace(custom, name=rename[custom.name])
                customs.append(custom)
                continue
            elif isinstance(cast(object, tool), Mapping):
                name, description, source = _plain_parts(tool)
                key, model = name, None
            else:
                raise _not_a_tool(tool)
            if key in rename:
                if name in validation_sources:
                    validation_sources[rename[key]] = validation_sources.pop(name)
                if name in check_sources:
                    check_sources[rename[key]] = check_sources.pop(name)
                name = rename[key]
                used_rename.add(key)
            parsed.append((name, description, model, source))
        unused = [k for k in rename if k not in used_rename]
        if unused:
            raise ValueError(f"names has keys that match no tool: {unused!r}")
        known = {p[0] for p in parsed}
        self._custom: dict[str, CustomToolDefinition] = {}
        for custom in customs:
            if not _NAME.match(custom.name):
                raise ValueError(f"invalid tool name {custom.name!r}: use 1-64 of [a-zA-Z0-9_-]")
            if custom.name in known or custom.name in self._custom:
                raise ValueError(f"duplicate tool name {custom.name!r}")
            self._custom[custom.name] = custom
        for label, mapping in (("default_tz", default_tz), ("checks", checks)):
            stray = sorted(set(mapping or {}) - known)
            if stray:
                raise ValueError(f"{label} names unknown tools: {stray}")
        self._tools: dict[str, ToolDefinition] = {}
        # Model tools whose OpenAI exports hold `Decimal` strings to JSON numbers.
        self._export_sources: dict[str, dict[str, Any]] = {}
        self._check_schemas = {
            name: _named_precheck(name, src) for name, src in check_sources.items()
        }
        for name, description, model, source in parsed:
            if not _NAME.match(name):
                raise ValueError(f"invalid tool name {name!r}: use 1-64 of [a-zA-Z0-9_-]")
            if name in self._tools:
                raise ValueError(f"duplicate tool name {name!r}")
            schema = _named_precheck(name, source)
            if not _may_be_object(schema):
                # Every provider sends a call's arguments as one JSON object: no call could pass.
                raise ValueError(f"tool {name!r}: its parameters must allow a JSON object")
            typed = validation_sources.get(name)
            # Whether the pre-check leaves free a value validation's schema types.
            leaves_free = typed is not None and _leaves_free(check_sources.get(name, source), typed)
            try:
                validator = ToolValidator(
                    name,
                    precheck_schema(typed) if typed is not None else schema,
                    model,
                    rules=self._rules,
                    default_tz=(default_tz or {}).get(name),
                    check=(checks or {}).get(name),
                    written=precheck_schema(source, closed=False) if model is None else None,
                    typed_precheck=typed is not None and not leaves_free,
                    free_input=_free_input_schema(model),
                    published=self._check_schemas.get(name, schema) if leaves_free else None,
                )
            except jsonschema.SchemaError as exc:
                raise _invalid_schema(name, exc) from exc
            except Exception as exc:  # a reference `jsonschema` cannot resolve, and friends
                raise ValueError(f"tool {name!r}: invalid parameter schema: {exc}") from exc
            if model is None:
                # Past the metaschema, which refuses an `$id` that is no string first.
                _refuse_unresolvable_dynamic_ref(source, name)
            # The schema as written, not the pre-check's, which keeps only the definitions a
            # reference reaches: a pattern no engine can run is a broken schema wherever it is.
            _refuse_invalid_pattern(source, name, model=model is not None)
            self._tools[name] = ToolDefinition(
                name=name,
                description=description,
                model=model,
                source_schema=source,
                schema=schema,
                problems=tuple(strict_problems(source, tool=name)),
                validator=validator,
            )
            if model is not None:
                export_source = model.model_json_schema(schema_generator=_ExportSchema)
                if export_source != source:
                    self._export_sources[name] = export_source
        self._direct = self._direct_tools()
        self._shortcut = self._native_shortcut()

    def _direct_tools(self) -> dict[str | None, _DirectTool]:
        """Tools whose calls Pydantic alone validates, for the inline path of `validate`."""
        out: dict[str | None, _DirectTool] = {}
        for name, tool in self._tools.items():
            validator = tool.validator
            direct = validator.direct_json
            if direct is not None:
                out[name] = (
                    validator,
                    direct,
                    validator.strict_argument,
                    validator.floats,
                    validator.holds_secrets,
                )
        return out

    def _native_shortcut(self) -> DirectValidation:
        """The inline path's common case, native: tools whose successes hold no secrets."""
        return DirectValidation(
            Outcome,
            success_template(self._lang),
            SUCCESS_PER_CALL,
            [
                (name, direct, strict, floats)
                for name, (_, direct, strict, floats, secret) in self._direct.items()
                if name is not None and not secret
            ],
            GC_PAUSE_MIN_BYTES,
        )

    def __getstate__(self) -> dict[str, Any]:
        # The native shortcut cannot be pickled or copied: it is made again from the rest. The
        # pre-check registry is left out too (its schemas are the toolset's own), compiled
        # again when it is next read.
        state = dict(self.__dict__)
        del state["_shortcut"]
        # Pydantic's bound `validate_json` pickles its whole core schema, which holds local
        # functions for some field types: the tools' validators take it from their models again.
        del state["_direct"]
        state.pop("registry", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._direct = self._direct_tools()
        self._shortcut = self._native_shortcut()

    # Registry ---------------------------------------------------------------------------

    def names(self) -> list[str]:
        """The names of the JSON tools (those with parameters), in registration order."""
        return list(self._tools)

    def custom_names(self) -> list[str]:
        """The names of the custom tools (free-form input), in registration order."""
        return list(self._custom)

    def _callable_names(self) -> list[str]:
        # What a payload for a call to no tool lists: a custom tool is one the model may call
        # too, and a toolset of custom tools alone would list none.
        return self.names() + self.custom_names()

    def custom_tool(self, name: str) -> CustomToolDefinition:
        """The registered definition of one custom tool.

        Raises:
            UnknownToolError: If no custom tool has that name (a `KeyError`).
        """
        found = self._custom.get(name)
        if found is None:
            raise UnknownToolError(name, list(self._custom), custom=True)
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        if self._custom:
            return f"Toolset({self.names()!r}, custom={self.custom_names()!r})"
        return f"Toolset({self.names()!r})"

    def tool(self, name: str) -> ToolDefinition:
        """The registered definition of one tool.

        Raises:
            UnknownToolError: If no tool has that name (a `KeyError`).
        """
        return self._known(name)

    def model(self, name: str) -> type[BaseModel] | None:
        """The Pydantic model of a tool (None for a plain-dict tool).

        Raises:
            UnknownToolError: If no tool has that name (a `KeyError`).
        """
        return self._known(name).model

    def schema(self, name: str) -> dict[str, Any]:
        """The self-contained JSON Schema the pre-check compiles for a tool (a fresh copy).

        `$ref`s are inlined (a recursive model keeps a `$ref` into `$defs`, as does a large
        definition used in several places, closed per use: see `schema_export`), every object
        that declares a property and does not say otherwise gets `additionalProperties: false`,
        and `required` is the model's own: optional fields stay optional, so calls from
        non-strict providers pass. The parameters of a tool without any (a root that declares
        nothing about its properties: `{}`, `{"type": "object"}` as MCP servers write it, or
        `"properties": {}`) are closed too, so that a key sent is refused as `unknown_field`,
        as the strict export tells the provider (`"additionalProperties": true` keeps them
        open, and outside the strict subset). Below the root, an object that declares no
        property (`"properties": {}`, as OpenAPI-derived tools write a free-form object, or no
        `properties` keyword) is free-form and stays open, as JSON Schema reads it, but for a
        Pydantic model, `TypedDict` or dataclass without fields, which takes none. An object
        composed from subschemas stays open too (an `allOf` member, or the owner of one, may
        name only some of its properties), and so does every object under `not`, `if` and
        `contains`, which test a value rather than describe its fields.
        For a tool with a `default_tz`, the pre-check leaves out `format: date-time`
        (validation gives a timestamp without an offset the default zone); for a plain-dict
        tool, it leaves out the formats that `jsonschema`'s checker reads more loosely than
        the pre-check would (`email`, `uuid`, `hostname`, ...).

        Raises:
            UnknownToolError: If no tool has that name (a `KeyError`).
        """
        return copy.deepcopy(self._known(name).schema)

    def _known(self, name: str) -> ToolDefinition:
        """The tool of that name, or `UnknownToolError` naming the registered ones."""
        found = self._tools.get(name)
        if found is None:
            raise UnknownToolError(name, list(self._tools))
        return found

    def schemas(self) -> dict[str, dict[str, Any]]:
        """`{name: schema(name)}` for every tool."""
        return {name: self.schema(name) for name in self._tools}

    @property
    def lang(self) -> Lang:
        """The language of the texts this toolset's payloads are written in (`lang=`)."""
        return self._lang

    @property
    def relaxations(self) -> list[Relaxation]:
        """What keeps tools out of the OpenAI strict subset, for every tool.

        With `strict=False` the tools listed here are exported with `"strict": false`; with
        `strict=True` exporting them raises `SchemaExportError`.
        """
        return [r for tool in self._tools.values() for r in tool.problems]

    # Cached in the instance dict, so the attribute read that every `Assembler(tools=...)`
    # makes finds the registry without running a Python frame.
    @functools.cached_property
    def registry(self) -> ToolRegistry:
        """The compiled pre-check registry, built once; `Assembler(tools=toolset)` uses it."""
        from toolwire._core import ToolRegistry

        schemas = self.schemas()
        schemas.update(copy.deepcopy(self._check_schemas))
        # The pre-check's errors (early ones shown in UIs and logs) hide secret values, as
        # validation's do: read before the formats a plain tool leaves to validation go, as
        # `format: password` marks a secret.
        secrets = {name: secret_patterns(schema) for name, schema in schemas.items()}
        for name, tool in self._tools.items():
            # Validation attaches the tool's default zone to a timestamp without an offset, so
            # the pre-check must not refuse one.
            drop = ("date-time",) if name in self._naive_ok else ()
            # A plain-dict tool: a format its validation does not check as strictly as the
            # pre-check would is left to validation, which must not find a call valid that the
            # pre-check has already failed.
            checked = tool.validator.checked_formats
            keep = None if checked is None else checked & _PLAIN_PRECHECK_FORMATS
            if drop or keep is not None:
                schemas[name] = _without_formats(schemas[name], drop=drop, keep=keep)
            if keep is not None and "time" in keep:
                schemas[name] = _with_offset_times(schemas[name])
            engine = None if tool.model is None else tool.model.model_config.get("regex_engine")
            if engine == "python-re":
                # Python's `$` also matches before a final newline; the pre-check reads patterns
                # as ECMA-262 does (and Pydantic's default engine), where it does not.
                schemas[name] = _without_patterns(schemas[name])
            elif tool.model is not None:
                schemas[name] = _without_foreign_patterns(schemas[name])
            schemas[name] = _with_required_keys(_with_null_as_absent(schemas[name]))
        registry = ToolRegistry(schemas, secrets={k: v for k, v in secrets.items() if v})
        # The native shortcut counts on a call's pre-check only when this registry made it.
        self._shortcut._trust(registry)
        return registry

    # Exports ----------------------------------------------------------------------------

    def _exported(self, strict: bool | None) -> list[tuple[ToolDefinition, dict[str, Any], bool]]:
        want = self._strict if strict is None else strict
        out: list[tuple[ToolDefinition, dict[str, Any], bool]] = []
        for tool in self._tools.values():
            exported = export_schema(
                self._export_sources.get(tool.name, tool.source_schema),
                tool=tool.name,
                strict=want,
                nullable_optional=tool.model is None,
            )
            out.append((tool, exported.schema, exported.strict))
        return out

    def openai(self, strict: bool | None = None) -> list[dict[str, Any]]:
        """Chat Completions `tools=`: `{"type": "function", "function": {...}}` per tool,
        then `{"type": "custom", "custom": {"name", "description", "format"}}` per custom
        tool (a grammar under `format.grammar`, as Chat Completions nests it).

        Args:
            strict: Overrides the toolset's `strict` for this export.

        Returns:
            The tool list (fresh dicts).

        Raises:
            SchemaExportError: If strict and a tool cannot be expressed in the strict subset.
        """
        customs: list[dict[str, Any]] = []
        for custom in self._custom.values():
            entry = _custom_entry(custom)
            fmt = entry["format"]
            if fmt["type"] == "grammar":
                grammar = {"definition": fmt["definition"], "syntax": fmt["syntax"]}
                entry["format"] = {"type": "grammar", "grammar": grammar}
            customs.append({"type": "custom", "custom": entry})
        return [
            {"type": "function", "function": _function(tool, schema, is_strict)}
            for tool, schema, is_strict in self._exported(strict)
        ] + customs

    def responses(self, strict: bool | None = None) -> list[dict[str, Any]]:
        """Responses API `tools=`: `{"type": "function", "name", ..., "strict"}` per tool,
        then `{"type": "custom", "name", "description", "format"}` per custom tool.

        Args:
            strict: Overrides the toolset's `strict` for this export.

        Returns:
            The tool list (fresh dicts).

        Raises:
            SchemaExportError: If strict and a tool cannot be expressed in the strict subset.
        """
        return [
            {"type": "function", **_function(tool, schema, is_strict)}
            for tool, schema, is_strict in self._exported(strict)
        ] + [{"type": "custom", **_custom_entry(custom)} for custom in self._custom.values()]

    def anthropic(self) -> list[dict[str, Any]]:
        """Anthropic Messages `tools=`: `{"name", "description", "input_schema"}` per tool.

        `input_schema` is the pre-check schema: optional fields stay optional and defaults
        other than null are kept, since Anthropic does not require every property. As in the
        OpenAI exports, the string a `Decimal` field allows is a number as JSON writes it: the
        schema is all the model knows of the field, and validation takes no other string.

        Returns:
            The tool list (fresh dicts).

        Raises:
            ValueError: The toolset has a custom tool, which Anthropic's API cannot take.
        """
        if self._custom:
            raise ValueError(
                f"custom tools {self.custom_names()!r} take free-form input, which only OpenAI's "
                "APIs offer: export them with openai() or responses()"
            )
        out: list[dict[str, Any]] = []
        for tool in self._tools.values():
            entry: dict[str, Any] = {"name": tool.name}
            if tool.description:
                entry["description"] = tool.description
            export_source = self._export_sources.get(tool.name)
            entry["input_schema"] = (
                copy.deepcopy(tool.schema)
                if export_source is None
                else precheck_schema(export_source)
            )
            out.append(entry)
        return out

    # Validation -------------------------------------------------------------------------

    def validate(self, call: CallLike) -> Outcome:
        """Validate one completed call against its tool.

        Args:
            call: A `toolwire.ToolCall` (or anything with the same attributes; one without
                a true `prechecked` is checked as a call assembled without the pre-check, and
                one without an `error` has its text read as an assembler reads it).

        Returns:
            The outcome: `ok` with the model, or the errors and what to tell the model. When
            the application's own code raises (a Pydantic validator raising anything but
            `ValueError` or `AssertionError`, a check, the redaction hook), the call gets a
            non-retryable `internal_error` outcome and the exception is logged by type: one
            call's failure never costs the others their outcomes, as in `assemble`. A
            validator's refusal whose message Pydantic cannot encode (a lone surrogate) is a
            retryable `validation` error at its field, its message made sendable.

        Raises:
            TypeError: `call` is not a call, or a call of the application's own holds the
                wrong kind of value (`arguments` not text, `name` or `id` not a str or None).
        """
        try:
            done = self._shortcut.outcome(call)
        except ValidationError as exc:
            done = self._rejected(call, exc)
        except Exception as exc:
            # The native path runs Pydantic, so the model's own validators. A refusal Pydantic
            # could not write down is read again by the general path, which finds its field.
            done = None if _unwritable_refusal(exc) is not None else self._failed(call, exc)
        # The rest in a method of its own: a frame with the general path's two dozen locals
        # costs the common case time to set up and clear.
        if done is None:
            done = self._validate_general(call)
            # One whose repeated id the assembler renamed carries the id the provider sent,
            # which Gemini gets back. The native path leaves every such call to this one.
            done = with_wire_id(done, call)
        # A call without an id (Gemini's) is answered as `toolwire_<ordinal>`: its outcome
        # says so, and carries it to the executor's result.
        return done if done.call_id else with_synthetic_id(done, call)

    def _rejected(self, call: CallLike, exc: ValidationError) -> Outcome:
        """The outcome of a call the native path's Pydantic refused."""
        # Only a tool of `_direct` is validated there.
        validator = self._direct[call.name][0]
        try:
            return validator.rejected(call, exc, lang=self._lang, redact=self._redact)
        except Exception as failure:
            return self._failed(call, failure)

    def _validate_general(self, call: CallLike) -> Outcome:
        """`validate` for every call the native path leaves to Python."""
        if not isinstance(call, ToolCall):
            # The caller's mistake, raised; what fails past this is the application's code.
            require_call(call, ("error", "name", "id", "arguments"), what="validate's call")
            _require_call_types(call)
        free_form = is_free_form(call)
        if free_form or call.name in self._custom:
            return self._validate_custom(call, free_form)
        try:
            return self._validate_python(call)
        except Exception as exc:
            return self._failed(call, exc)

    def _failed(self, call: CallLike, exc: Exception) -> Outcome:
        """The outcome of a call whose validation raised `exc`: `internal_error`, unless
        Pydantic itself could not write down a validator's refusal (see `_unwritable_refusal`).
        """
        refusal = _unwritable_refusal(exc)
        if refusal is None:
            return internal_error(call, exc, self._lang)
        try:
            shown = self.scrub(call, refusal)
        except Exception as failure:
            return internal_error(call, failure, self._lang)
        failed = Outcome.failure(
            call, call.name or "", "validation", lang=self._lang, retryable=True
        )
        return dataclasses.replace(failed, errors=[FieldError(path="", code="value", hint=shown)])

    def _validate_custom(self, call: CallLike, free_form: bool) -> Outcome:
        """`validate` for a custom tool's call (`free_form`: type `custom`) or a call that names
        a custom tool. Its text is the tool's input as sent: never parsed, never pre-checked.
        A call of the other kind than its tool's is a retryable `wrong_tool_type` error; one
        that the stream stopped, cut or broke says so first."""
        error = call.error
        kind = error.kind if error is not None else None
        name = call.name or ""
        names = self._callable_names()
        told_first = kind != "free_form_call" if free_form else kind in _BEFORE_TOOL_TYPE
        early = (
            outcome_for_call_error(call, error, tools=names, lang=self._lang)
            if error is not None and told_first
            else None
        )
        if early is not None:
            done = early
        elif free_form and name in self._custom:
            done = Outcome.success(call, name, value=call.arguments, lang=self._lang)
        elif name in self._custom or name in self._tools:
            done = wrong_tool_type_outcome(call, custom=name in self._custom, lang=self._lang)
        else:
            # A custom tool this toolset does not have: nothing here can run free text.
            done = outcome_for_call_error(
                call, error or _KindOnly("free_form_call"), tools=names, lang=self._lang
            )
        done = with_wire_id(cast(Outcome, done), call)
        return dataclasses.replace(done, call_type=FREE_FORM_TYPE) if free_form else done

    def _validate_python(self, call: CallLike) -> Outcome:
        """`_validate_general` for a call known to be one."""
        if isinstance(call, ToolCall):
            # Pre-checked here only if by this toolset's own registry: another registry's tool
            # of the same name may be looser (extra keys allowed) than this one.
            error, prechecked, name, call_id, raw, plain_numbers = call._validation_fields(
                self.__dict__.get("registry")
            )
        else:
            # A call the application built (from a response it did not stream, from its logs)
            # was pre-checked only if it says so: Pydantic alone would drop an unknown field and
            # let a lax model convert a value unrecorded.
            error, prechecked, name = call.error, getattr(call, "prechecked", False), call.name
            call_id, raw = call.id, _raw_arguments(call)
            plain_numbers = getattr(call, "plain_numbers", False)
            # Nor has its text been read as an assembler reads it: a repeated key (which
            # Pydantic and `json` keep the last of), a cut-off or doubled value.
            read = _read_text(raw if raw is not None else call.arguments) if error is None else None
            if read is not None and read.error is not None:
                call, error = _WithViolation(call, read.error), read.error
            elif read is not None and raw is None and read.arguments != call.arguments:
                # The fields the text does not change are the call's own (`__getattr__`).
                call = cast(CallLike, _AsRead(call, read))
        # Whether the whole text is known to have passed this toolset's pre-check.
        checked = prechecked is True
        if error is None and not checked:
            # A call assembled without the pre-check: find what it would have found, so that a
            # call gets the same verdict whichever way it was assembled (an unknown field, a
            # value a lax model would convert silently).
            found = self._schema_violation(call, raw)
            if found is not None:
                call, error = _WithViolation(call, found), found
            else:
                checked = True
        if error is None:
            direct = self._direct.get(name)
            # The common case, inline: Pydantic alone decides (see `direct_json`). Blank
            # arguments (`{}` to the validator) and look-alike calls without raw bytes take the
            # general path.
            if direct is not None and raw is not None:
                validator, validate_json, strict, floats, secret = direct
                lang = self._lang
                paused = len(raw) >= GC_PAUSE_MIN_BYTES and pause_gc()
                try:
                    try:
                        instance = validate_json(raw, strict=strict)
                    except ValidationError as exc:
                        return validator.rejected(call, exc, lang=lang, redact=self._redact)
                    except UnicodeEncodeError as exc:
                        if _unwritable_refusal(exc) is None:
                            raise
                        # A refusal Pydantic could not write down: the validator reads the
                        # text again so that it can (see `ToolValidator._refuse_writably`).
                        return validator.validate(
                            call, lang=lang, redact=self._redact, prechecked=checked
                        )
                    # The core flags long numbers while scanning; only then is the text read.
                    if floats and not plain_numbers and float_risk(raw):
                        # A number a float field may read as infinity or zero: look closer.
                        return validator.validate(
                            call, lang=lang, redact=self._redact, prechecked=checked
                        )
                    secrets = validator.secrets_of(instance) if secret else ()
                    return success_outcome(
                        call_id, validator.tool, instance, None, [], lang, None, secrets
                    )
                finally:
                    if paused:
                        gc.enable()
        else:
            early = outcome_for_call_error(
                call, error, tools=self._callable_names(), lang=self._lang
            )
            if early is not None:
                return early
        name = call.name
        tool = self._tools.get(name) if name is not None else None
        if tool is None:
            kind = "missing_name" if not name else "unknown_tool"
            return cast(
                Outcome,
                outcome_for_call_error(
                    call, _KindOnly(kind), tools=self._callable_names(), lang=self._lang
                ),
            )
        return tool.validator.validate(
            call, lang=self._lang, redact=self._redact, prechecked=checked
        )

    def _schema_violation(self, call: CallLike, raw: bytes | None) -> CallErrorLike | None:
        """The first violation the pre-check finds in a complete call to a known tool; `raw`
        is its argument bytes already read (None when blank or not at hand)."""
        name = call.name
        if name is None or name not in self._tools:
            return None
        if raw is None:
            held: object = getattr(call, "arguments_bytes", None)
            raw = held if isinstance(held, bytes) else call.arguments.encode()
        # Read as the call was: a scan under `error` stops at a duplicate key that `last_wins`
        # let through, and one under the default limits at a value deeper or a number longer
        # than they allow but the call's assembler took; either would miss what follows.
        limits = call.limits if isinstance(call, ToolCall) else {}
        last_wins = limits.get("duplicate_keys") == "last_wins"
        return self.registry.check(
            name,
            raw,
            duplicate_keys="last_wins" if last_wins else "error",
            **{key: int(limits[key]) for key in _SCAN_LIMITS if key in limits},
        )

    def scrub(self, call: CallLike, text: str) -> str:
        """`text`, which may quote `call`'s arguments (a tool's `BusinessRuleError`), with
        what validation's payloads hide hidden: each value the tool's schema marks secret
        (`x-secret`, `SecretStr`), in the forms an exception quotes it in, then the `redact`
        hook on every argument value and on the whole text. `tool_messages(..., toolset=)`
        scrubs every text a tool wrote for the model with it.

        Args:
            call: The call whose arguments the text may quote.
            text: The text.

        Returns:
            The scrubbed text (`"[redaction failed]"` when the hook raised, or returned
            something other than a str).

        Raises:
            TypeError: `call` is not a call (None, a dict), or `text` is not a str.
        """
        require_call(call, ("name",), what="scrub's call")
        if not isinstance(cast(object, text), str):
            raise TypeError(f"scrub's text must be a str, not {type(text).__name__}")
        tool = self._tools.get(call.name) if call.name is not None else None
        sent: object = getattr(call, "arguments", None)
        if not isinstance(sent, str):  # a look-alike call without its text: the hook alone
            tool, sent = None, ""
        declared = [SecretStr(v) for v in tool.validator.call_secrets(call)] if tool else []
        arguments: Any = None
        if self._redact is not None:
            try:
                arguments = loads_exact(sent)
            except ValueError:
                arguments = None
        return scrubbed_text(text, arguments, declared, self._redact)

    def validate_all(self, calls: Iterable[CallLike]) -> list[Outcome]:
        """`validate` for each call, in order."""
        return [self.validate(call) for call in calls]


def _unwritable_refusal(exc: Exception) -> str | None:
    """The message, made sendable, of a validator's refusal that Pydantic could not write
    down, or None when `exc` is no such failure.

    A validator raising `ValueError` with a lone surrogate in its message makes pydantic-core
    raise `UnicodeEncodeError` in place of the `ValidationError` (it cannot encode the text,
    and the field it was at is lost with it). That is the model's value refused, not a bug:
    the call is retryable. The validator reads such a call again where its refusal can be
    written down, at its field (`ToolValidator._refuse_writably`); this is what is left where
    that reading does not refuse it again. Pydantic catches a `UnicodeEncodeError` the
    application's own code raises while validating (it is a `ValueError`), so one raised from
    native code directly under a toolwire frame is Pydantic's; a check's or the redaction
    hook's own stays an `internal_error`.
    """
    if not (isinstance(exc, UnicodeEncodeError) and exc.reason == "surrogates not allowed"):
        return None
    trace = exc.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is None or trace.tb_frame.f_globals.get("__name__", "").split(".")[0] != "toolwire":
        return None
    return sendable_text(exc.object)


def internal_error(call: CallLike, exc: Exception, lang: Lang) -> Outcome:
    """The outcome of a call whose validation raised in the application's own code.

    A bug or an outage on the application's side, not the model's: the call must not run, and
    the model must not be told to fix arguments it may have sent correctly. Only the
    exception's type is logged, and the model reads a fixed message: the exception's text can
    hold the argument values the redaction hook exists to hide.
    """
    _log.error(
        "toolwire: validating call %s (%s) raised %s; the call will not run",
        getattr(call, "id", None),
        getattr(call, "name", None),
        type(exc).__name__,
    )
    return Outcome.failure(call, getattr(call, "name", None) or "", "internal_error", lang=lang)


_log = logging.getLogger(__name__)

_SCAN_LIMITS = ("max_depth", "max_bytes", "max_number_digits")
"""The assembler limits a call's text was read under (`ToolCall.limits`) that
`ToolRegistry.check` takes."""


def _read_text(text: str | bytes) -> ToolCall | None:
    """A call's whole argument text as an assembler reads it, under its default limits: its
    `error` is what is wrong with it as JSON, and its `arguments` the text with a surrogate
    pair a str holds as two halves joined (only `feed` reads a str's halves). None for blank
    text, a call without parameters as for an assembled call."""
    if not text or text.isspace():
        return None
    reader = _core.Assembler()
    reader.feed(0, name="_", arguments=text)
    (read,) = reader.finish()
    return read


def _raw_arguments(call: CallLike) -> bytes | None:
    """A look-alike call's raw argument bytes, or None when it has none or they are blank."""
    raw: object = getattr(call, "arguments_bytes", None)
    if isinstance(raw, bytes) and raw and not raw.isspace():
        return raw
    return None


def _function(tool: ToolDefinition, schema: dict[str, Any], is_strict: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = schema
    out["strict"] = is_strict
    return out


_NO_VALUE = object()


class _WithViolation:
    """A call assembled without the pre-check, carrying the violation it would have found."""

    __slots__ = ("_call", "_error")

    def __init__(self, call: CallLike, error: CallErrorLike) -> None:
        self._call = call
        self._error = error

    @property
    def ordinal(self) -> int:
        """As the call's."""
        return self._call.ordinal

    @property
    def index(self) -> int | None:
        """As the call's."""
        return self._call.index

    @property
    def id(self) -> str | None:
        """As the call's."""
        return self._call.id

    @property
    def name(self) -> str | None:
        """As the call's."""
        return self._call.name

    @property
    def arguments(self) -> str:
        """As the call's."""
        return self._call.arguments

    @property
    def value(self) -> object:
        """As the call's; the arguments as an assembler reads them where the call has no
        `value` (one of the application's own with the attributes `validate` asks for):
        validation of a model tool reads it to report every violation, not just this one."""
        held: object = getattr(self._call, "value", _NO_VALUE)
        if held is not _NO_VALUE:
            return held
        read = _read_text(self._call.arguments)
        return read.value if read is not None else None

    @property
    def error(self) -> CallErrorLike:
        """The violation the pre-check finds in the arguments."""
        return self._error

    def __getattr__(self, name: str) -> Any:
        # The optional attributes validation reads (`arguments_bytes`, `plain_numbers`, ...).
        return getattr(self._call, name)


class _AsRead:
    """A call of the application's own whose text holds a surrogate pair as two halves, with
    its text as an assembler reads it (the pair joined), which JSON readers take; every other
    field is the call's own."""

    __slots__ = ("_call", "_read")

    def __init__(self, call: CallLike, read: ToolCall) -> None:
        self._call = call
        self._read = read

    def __getattr__(self, name: str) -> Any:
        return getattr(self._read if name in _TEXT_FIELDS else self._call, name)


# What `_AsRead` takes from the text as the assembler read it.
_TEXT_FIELDS = frozenset({"arguments", "arguments_bytes", "value"})


@dataclass(frozen=True, slots=True)
class _KindOnly:
    """A stand-in error for conditions the toolset detects itself (an unknown tool name)."""

    kind: str
    message: str = ""
    offset: int = 0
    path: str = ""
    keyword: str | None = None
    expected: str | None = None
    got: str | None = None
