# Chinese expectations use fullwidth punctuation on purpose (as payloads.MESSAGES does).
# ruff: noqa: RUF001
"""Plain JSON-schema tool dicts as users write them (OpenAI, MCP, Anthropic examples): the
pre-check while streaming and `Toolset.validate` agree with what the schema accepts."""

from __future__ import annotations

import datetime as dt
import enum
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from ipaddress import IPv4Address, IPv6Address
from types import SimpleNamespace
from typing import Any, Literal, cast
from uuid import UUID

import jsonschema._keywords
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, ValidationError, create_model

from toolwire import Assembler, InvalidSchemaError, Toolset, jsonschema_dialect
from toolwire.jsonschema_dialect import extended_validator
from toolwire.payloads import Lang
from toolwire.toolset import _PLAIN_PRECHECK_FORMATS as _PRECHECKED_FORMATS


def _run(schema: dict[str, Any], arguments: Any) -> tuple[list[str], bool, list[str]]:
    """Streams `arguments` byte by byte to a one-tool toolset: the pre-check messages, whether
    validation accepts the call, and validation's error codes."""
    tools = Toolset([{"name": "tool", "parameters": schema}])
    text = json.dumps(arguments).encode()
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments="")
    errors: list[str] = []
    for i in range(len(text)):
        assembler.feed(0, arguments=text[i : i + 1])
        errors += [e.message for _, e in assembler.drain_errors()]
    (call,) = assembler.finish()
    errors += [e.message for _, e in assembler.drain_errors()]
    outcome = tools.validate(call)
    return errors, outcome.ok, [e.code for e in outcome.errors]


def test_boolean_subschemas_validate_without_raising() -> None:
    schema = {
        "type": "object",
        "properties": {
            "anything": True,
            "never": False,
            "tags": {"type": "array", "items": True},
            "maybe": {"anyOf": [True, {"type": "null"}]},
        },
    }
    assert _run(schema, {"anything": 1, "tags": [1, "x"], "maybe": 3}) == ([], True, [])
    errors, ok, _ = _run(schema, {"never": None})
    assert errors and not ok


def test_a_reference_to_a_boolean_schema_reads_as_that_boolean() -> None:
    # Inlined as a dict, a `$ref` to `false` was `{}`: a field that may never be sent took any
    # value. It refuses, as `false` written in place does, in the pre-check and in validation.
    defs = {"$defs": {"never": False, "any": True}}
    never = {"$ref": "#/$defs/never"}
    for field in (never, {**never, "description": "Never sent"}, {**never, "type": "string"}):
        schema = {"type": "object", "properties": {"x": field}, **defs}
        assert Toolset([{"name": "tool", "parameters": schema}]).schema("tool")["properties"] == {
            "x": False
        }
        errors, ok, codes = _run(schema, {"x": "foo"})
        assert errors and not ok and codes == ["unknown_field"]
    items = {"type": "object", "properties": {"x": {"type": "array", "items": never}}, **defs}
    assert _run(items, {"x": []}) == ([], True, [])
    assert not _run(items, {"x": [1]})[1]
    union = {"type": "object", "properties": {"x": {"anyOf": [never, {"type": "string"}]}}, **defs}
    assert _run(union, {"x": "s"}) == ([], True, [])
    assert not _run(union, {"x": 1})[1]
    # `true` takes anything, and adds nothing to the keywords beside it.
    anything = {"type": "object", "properties": {"x": {"$ref": "#/$defs/any"}}, **defs}
    assert _run(anything, {"x": [1, "a"]}) == ([], True, [])
    typed = {"$ref": "#/$defs/any", "type": "integer"}
    integer = {"type": "object", "properties": {"x": typed}, **defs}
    assert _run(integer, {"x": 3}) == ([], True, [])
    assert _run(integer, {"x": "three"})[1:] == (False, ["type"])


def test_unevaluated_keywords_beside_a_ref_see_what_the_ref_evaluated() -> None:
    # JSON-Schema-Test-Suite, draft 2020-12: "unevaluatedProperties with $ref", "unevaluatedItems
    # with $ref" and "ref creates new scope when adjacent to keywords". A `$ref` is an `allOf`
    # member beside its siblings: what the target evaluates counts for an unevaluated keyword
    # beside it, and one inside the target sees the target's own keywords alone.
    beside = _obj(
        properties={"foo": {"type": "string"}},
        unevaluatedProperties=False,
        **{"$ref": "#/$defs/bar", "$defs": {"bar": {"properties": {"bar": {"type": "string"}}}}},
    )
    assert _run(beside, {"foo": "foo", "bar": "bar"}) == ([], True, [])
    assert _errors(beside, {"foo": "foo", "bar": "bar", "baz": "baz"}) == [
        ("/baz", "unknown_field", '"baz"')
    ]
    pair = {
        "type": "array",
        "$ref": "#/$defs/bar",
        "prefixItems": [{"type": "string"}],
        "unevaluatedItems": False,
    }
    tuple_defs = {"$defs": {"bar": {"prefixItems": [True, {"type": "string"}]}}}
    in_items = _obj(properties={"x": pair}, **tuple_defs)
    assert _run(in_items, {"x": ["foo", "bar"]}) == ([], True, [])
    assert not _run(in_items, {"x": ["foo", "bar", "baz"]})[1]
    inside = _obj(
        properties={"prop1": {"type": "string"}},
        **{"$ref": "#/$defs/A", "$defs": {"A": {"unevaluatedProperties": False}}},
    )
    assert not _run(inside, {"prop1": "match"})[1]
    assert _run(inside, {})[1]


def test_objects_composed_from_subschemas_stay_open() -> None:
    # Properties named in `allOf` members, in an `anyOf` branch next to the parent's own
    # properties, or in `then`, are allowed by the schema: no side may be closed.
    all_of = {
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "string"}}},
        ],
    }
    assert _run(all_of, {"a": 1, "b": "x"}) == ([], True, [])
    assert _run({"allOf": all_of["allOf"]}, {"a": 1, "b": "x"}) == ([], True, [])
    assert _run(all_of, {"a": "one"})[1:] == (False, ["type"])
    branches = {
        "type": "object",
        "properties": {"kind": {"enum": ["user", "team"]}},
        "required": ["kind"],
        "oneOf": [
            {"type": "object", "properties": {"user": {"type": "string"}}, "required": ["user"]},
            {"type": "object", "properties": {"team": {"type": "string"}}, "required": ["team"]},
        ],
    }
    assert _run(branches, {"kind": "team", "team": "core"}) == ([], True, [])
    conditional = {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "if": {"properties": {"kind": {"const": "business"}}},
        "then": {"type": "object", "properties": {"vat": {"type": "string"}}, "required": ["vat"]},
    }
    assert _run(conditional, {"kind": "business", "vat": "DE1"}) == ([], True, [])
    # The branches of a member describe the same object as the member's siblings.
    nested = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "allOf": [
            {
                "anyOf": [
                    {"type": "object", "properties": {"user": {"type": "string"}}},
                    {"type": "object", "properties": {"team": {"type": "string"}}},
                ]
            }
        ],
        "then": {
            "oneOf": [
                {"type": "object", "properties": {"vat": {"type": "string"}}, "required": ["vat"]},
                {"type": "object", "properties": {"ein": {"type": "string"}}, "required": ["ein"]},
            ]
        },
        "if": {"properties": {"id": {"const": 1}}},
    }
    assert _run(nested, {"id": 1, "user": "ann", "vat": "DE1"}) == ([], True, [])
    assert _run(nested, {"id": 2, "team": "core"}) == ([], True, [])
    # "1" is read as 1, so `then` holds, and it asks for one of its branches' fields.
    assert _errors(nested, {"id": "1", "user": "ann"}) == [("", "missing", None)]
    # A plain object still gets closed.
    errors, ok, _ = _run({"type": "object", "properties": {"a": {}}}, {"a": "x", "b": 1})
    assert errors and not ok


def test_pattern_properties_alone_leave_an_object_open() -> None:
    # Keys no pattern names fall to `additionalProperties`, which defaults to anything: only a
    # `properties` keyword closes an object.
    mapping = _obj(patternProperties={"^a": {"type": "number"}})
    tools = Toolset([{"name": "tool", "parameters": mapping}])
    assert "additionalProperties" not in tools.schema("tool")
    assert _run(mapping, {"b": 1, "a1": 2}) == ([], True, [])
    assert _run(mapping, {"a1": "x"})[1:] == (False, ["type"])
    nested = _obj(properties={"tags": mapping})
    assert _run(nested, {"tags": {"b": "x"}}) == ([], True, [])


def test_a_key_a_pattern_names_is_no_unknown_field() -> None:
    # Beside `properties` the object is closed, but a key a pattern names is judged by the
    # pattern's schema: only the key neither names is unknown.
    schema = _obj(
        properties={"x": {"type": "string"}}, patternProperties={"^a": {"type": "number"}}
    )
    assert _run(schema, {"x": "s", "a1": 1}) == ([], True, [])
    assert _errors(schema, {"x": "s", "a1": 1, "b": 2}) == [("/b", "unknown_field", "2")]
    assert _errors(schema, {"x": "s", "a1": "no"}) == [("/a1", "type", '"no"')]


@pytest.mark.parametrize(
    "pattern",
    [{"type": "string"}, {"type": "string", "pattern": "^[0-9]+$"}, {"type": ["string", "null"]}],
)
def test_a_property_coerced_for_its_own_schema_is_still_held_to_its_keys_patterns(
    pattern: dict[str, Any],
) -> None:
    # Both `properties` and a matching `patternProperties` apply to "n" (JSON Schema). Reading
    # "3" as 3 for the property alone broke the pattern's schema, and the error then showed
    # 3, a value the model never sent: no reading suits both, so the value is left as sent.
    schema = _obj(properties={"n": {"type": "integer"}}, patternProperties={"^n$": pattern})
    call, errors = _validated(schema, {"n": "3"})
    outcome = Toolset([{"name": "tool", "parameters": schema}]).validate(call)
    assert outcome.coercions == []
    assert [(e.path, e.code, e.expected, e.got) for e in errors] == [
        ("/n", "type", "an integer", '"3"')
    ]
    assert not Draft202012Validator(schema).is_valid({"n": "3"})
    # A reading every schema of the key takes is still made, and the call runs with it.
    loose = _obj(properties={"n": {"type": "integer"}}, patternProperties={"^n$": {"minimum": 0}})
    outcome = Toolset([{"name": "tool", "parameters": loose}]).validate(
        _validated(loose, {"n": "3"})[0]
    )
    assert outcome.ok and outcome.value == {"n": 3}
    assert [c.rule for c in outcome.coercions] == ["number_string"]
    assert Draft202012Validator(loose).is_valid(outcome.value)


@pytest.mark.parametrize("closed", [True, False])
def test_a_union_branch_that_takes_a_key_by_its_pattern_takes_the_value_as_it_is(
    closed: bool,
) -> None:
    # The second branch takes `"3.14"` and the `x-` key as they are: no coercion may turn the
    # amount into a number for the first branch, which then has no room for the key.
    card = _obj(properties={"amount": {"type": "number"}}, additionalProperties=False)
    custom = _obj(
        properties={"amount": {"type": "string"}},
        patternProperties={"^x-": {"type": "string"}},
        **({"additionalProperties": False} if closed else {}),
    )
    schema = _obj(properties={"price": {"anyOf": [card, custom]}}, required=["price"])
    price = {"amount": "3.14", "x-note": "promo"}
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps({"price": price}))
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert (outcome.ok, outcome.errors, outcome.coercions) == (True, [], [])
    assert outcome.value == {"price": price}
    # A value there the pattern's schema refuses is still refused, at its own key.
    assert _errors(schema, {"price": {"amount": "3.14", "x-note": 5}}) == [
        ("/price/x-note", "type", "5")
    ]


def test_objects_a_value_is_tested_against_stay_as_written() -> None:
    # `not`, `if` and `contains` test a value; they do not say which fields it may have. An
    # object closed there stops matching a value with another field, and the verdict flips.
    us = _obj(properties={"country": {"const": "US"}}, required=["country"])
    refused_us = _obj(properties={"to": {"not": us}})
    assert _run(refused_us, {"to": {"country": "US", "city": "NYC"}})[1:] == (False, ["invalid"])
    assert _run(refused_us, {"to": {"country": "CA", "city": "Toronto"}}) == ([], True, [])
    address = _obj(properties={"country": {"type": "string"}, "city": {"type": "string"}})
    shipping = _obj(
        properties={"to": address, "zip": {"type": "string"}},
        required=["to"],
        **{"if": {"properties": {"to": us}}, "then": {"required": ["zip"]}},
    )
    to_nyc = {"to": {"country": "US", "city": "NYC"}}
    assert _run(shipping, to_nyc)[1:] == (False, ["missing"])
    assert _run(shipping, {**to_nyc, "zip": "10001"}) == ([], True, [])
    zip_only_in_us = {**shipping, "else": {"properties": {"zip": False}}}
    assert _run(zip_only_in_us, {**to_nyc, "zip": "10001"}) == ([], True, [])
    primary = _obj(properties={"primary": {"const": True}}, required=["primary"])
    one_primary = _obj(properties={"xs": {"type": "array", "contains": primary}})
    two = [{"primary": True, "n": 1}, {"primary": True, "n": 2}]
    assert _run(one_primary, {"xs": two[:1]}) == ([], True, [])
    at_most_one = _obj(
        properties={
            "xs": {"type": "array", "contains": primary, "minContains": 0, "maxContains": 1}
        }
    )
    assert _run(at_most_one, {"xs": two})[1:] == (False, ["length"])


def test_null_for_an_optional_all_of_field_reads_as_absent() -> None:
    # The member refuses null, so the field does not admit it: null is "absent" (the
    # `null_as_absent` rule), for the pre-check and for validation alike.
    schema = {
        "type": "object",
        "properties": {"when": {"allOf": [{"type": "object"}], "description": "Start"}},
    }
    assert _run(schema, {"when": None}) == ([], True, [])
    assert _run(schema, {"when": 1})[1:] == (False, ["type"])


_RECURSIVE_NULLABLE = {
    "anyOf": [{"type": "null"}, {"type": "array", "items": {"$ref": "#/$defs/Nested"}}]
}


@pytest.mark.parametrize(
    "field",
    [
        {"anyOf": [True, {"type": "integer"}]},
        {"oneOf": [True, {"type": "string"}]},
        # A definition that recurses stays a `$ref` in the branch: read, it takes null.
        {"anyOf": [{"$ref": "#/$defs/Nested"}, {"type": "integer"}]},
    ],
)
def test_null_a_union_branch_takes_is_kept(field: dict[str, Any]) -> None:
    # The field admits null, so the call is valid as sent: `null_as_absent` once dropped the
    # null (the `true` branch and the `$ref` counted as refusing it), and the tool got no field.
    schema = _obj(properties={"a": field}, **{"$defs": {"Nested": _RECURSIVE_NULLABLE}})
    tools = Toolset([{"name": "tool", "parameters": schema}])
    outcome = tools.validate(_prechecked_call(tools, '{"a": null}'))
    assert (outcome.ok, outcome.value, outcome.coercions) == (True, {"a": None}, [])
    # Branches that all refuse null still read it as absent.
    refusing = _obj(properties={"a": {"anyOf": [False, {"type": "integer"}]}})
    tools = Toolset([{"name": "tool", "parameters": refusing}])
    outcome = tools.validate(_prechecked_call(tools, '{"a": null}'))
    assert outcome.ok and outcome.value == {}
    assert [c.rule for c in outcome.coercions] == ["null_as_absent"]


@pytest.mark.parametrize(
    ("tag", "sent"),
    [({"const": 0.1}, 0.1), ({"enum": [0.1, 0.2]}, 0.2), ({"const": [0.1]}, [0.1])],
)
def test_a_branch_whose_constant_a_float_holds_inexactly_takes_its_value_as_it_is(
    tag: dict[str, Any], sent: Any
) -> None:
    # `0.1` as written is no float's exact value: the constant once refused it where union
    # branches are weighed, so the first branch's reading (`"5"` as 5) rewrote a valid call.
    schema = _obj(
        anyOf=[
            {"properties": {"n": {"type": "integer"}}},
            {"properties": {"b": tag, "n": {"type": "string"}}, "required": ["b"]},
        ]
    )
    tools = Toolset([{"name": "tool", "parameters": schema}])
    arguments = {"b": sent, "n": "5"}
    outcome = tools.validate(_prechecked_call(tools, json.dumps(arguments)))
    assert (outcome.ok, outcome.value, outcome.coercions) == (True, arguments, [])


def test_a_null_for_a_field_a_closed_member_forbids_is_refused() -> None:
    # `abc` is declared by one member and refused by the other, closed one, whatever its
    # value: the pre-check refuses the key, and validation once dropped its null as absent
    # (`null_as_absent`) and took the call.
    schema = _obj(
        allOf=[
            {"properties": {"abc": {"type": "string"}}},
            {"properties": {"ab": {}}, "additionalProperties": False},
        ]
    )
    errors, ok, codes = _run(schema, {"abc": None})
    assert errors == ['unexpected property "abc"']
    assert not ok and "unknown_field" in codes
    assert _run(schema, {"ab": None}) == ([], True, [])


def test_fields_declared_in_all_of_members_are_the_objects_fields() -> None:
    # The strict export merges the members into one object and offers null for the optional
    # field; validation must read that null as absent, and coerce toward the member's schema.
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "allOf": [
            {"properties": {"due": {"type": "string"}, "count": {"type": "integer"}}},
            {"allOf": [{"properties": {"owner": {"type": "string"}}, "required": ["owner"]}]},
        ],
        "required": ["title"],
    }
    tools = Toolset([{"name": "tool", "parameters": schema}])
    exported = tools.openai()[0]["function"]["parameters"]["properties"]
    # Required by the object itself or by a member (nested too): never offered as null.
    assert {"type": "null"} in exported["due"]["anyOf"]
    assert exported["title"] == {"type": "string"} and exported["owner"] == {"type": "string"}
    assert _run(schema, {"title": "x", "due": None, "owner": "ann"}) == ([], True, [])
    errors, ok, codes = _run(schema, {"title": "x", "owner": None})
    assert errors and not ok and codes == ["type"]
    assembler = Assembler(tools=tools)
    assembler.feed(
        0, id="call_1", name="tool", arguments='{"title": "x", "count": "3", "owner": "ann"}'
    )
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert outcome.ok and [(c.path, c.rule) for c in outcome.coercions] == [
        ("/count", "number_string")
    ]


def test_a_required_field_the_properties_leave_out_can_still_be_sent() -> None:
    # Closed, the object would require `ticket` and refuse it as unknown: no call could pass.
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}},
        "required": ["title", "ticket"],
    }
    errors, ok, codes = _run(schema, {"title": "x", "ticket": 7})
    assert errors == [] and ok and codes == []
    errors, ok, codes = _run(schema, {"title": "x"})
    assert not ok and codes == ["missing"]
    # Strict mode admits only declared properties, so the tool cannot be strict.
    tools = Toolset([{"name": "tool", "parameters": schema}], strict=False)
    assert [(r.keyword, r.path) for r in tools.relaxations] == [("required", "(root)")]
    function = tools.openai()[0]["function"]
    assert function["strict"] is False
    assert function["parameters"]["required"] == ["title", "ticket"]


def test_formats_validation_reads_loosely_are_left_to_it() -> None:
    # `jsonschema`'s checker takes any email with an `@` and does not check `hostname` or
    # `duration` without optional packages: the pre-check must not fail what validation passes.
    for fmt, value in [
        ("email", "joe..bloggs@example.com"),
        ("email", "@example.com"),
        ("hostname", "-bad.example"),
        ("duration", "1 week"),
        ("uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380-"),
    ]:
        schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
        assert _run(schema, {"v": value}) == ([], True, []), (fmt, value)
    # A format that validation checks at least as strictly is still pre-checked.
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": "date"}}}
    errors, ok, codes = _run(schema, {"v": "2023-02-29"})
    assert errors == ["string is not a valid date"] and not ok and codes == ["format"]


def test_local_refs_other_than_defs_register_and_check() -> None:
    # OpenAI's recursive schemas refer to the whole schema with `#`; other local JSON
    # Pointers (`#/properties/a`) are valid too.
    linked_list = {
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
        },
        "required": ["value", "next"],
        "additionalProperties": False,
    }
    nested = {"value": 1, "next": {"value": 2, "next": None}}
    assert _run(linked_list, nested) == ([], True, [])
    errors, ok, _ = _run(linked_list, {"value": 1, "next": {"value": "two", "next": None}})
    assert errors and not ok
    same_as = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 2}, "b": {"$ref": "#/properties/a"}},
    }
    assert _run(same_as, {"a": "xy", "b": "zw"}) == ([], True, [])
    errors, ok, _ = _run(same_as, {"a": "xy", "b": "z"})
    assert errors and not ok


def test_validation_checks_the_formats_the_pre_check_asserts() -> None:
    # A declared dependency, not whatever the machine has, decides which formats validation
    # checks; without it `date-time` went unchecked on a fresh install.
    from jsonschema import Draft202012Validator

    checked = Draft202012Validator.FORMAT_CHECKER.checkers
    assert {"date", "date-time", "time", "ipv4", "ipv6"} <= checked.keys()


@pytest.mark.parametrize(
    ("pattern", "value", "ok"),
    [
        (r"^[a-z0-9/_-]+$", "main\n", False),
        (r"^[a-z0-9/_-]+$", "main", True),
        (r"^(a|b)$|^c$", "a\n", False),
        # A `$` escaped or in a set is the character.
        (r"^\$[0-9]+$", "$5", True),
        (r"^[$]+$", "$$", True),
        # Multiline mode, turned on for a group (ECMA-262's modifiers), keeps `$` an end of line.
        (r"(?m:^a$)", "a\nb", True),
    ],
)
def test_a_pattern_dollar_matches_only_at_the_end_of_the_text(
    pattern: str, value: str, ok: bool
) -> None:
    # ECMA-262, which JSON Schema patterns follow, and Pydantic's Rust engine read `$` so;
    # Python's `$` also matches before a final newline, which let a plain tool take
    # `"main\n"` where a Pydantic tool with the same pattern refuses it.
    schema = {"type": "object", "properties": {"branch": {"type": "string", "pattern": pattern}}}
    assert _run(schema, {"branch": value})[1:] == (ok, [] if ok else ["pattern"])
    model = create_model("Branch", branch=(str, Field(pattern=pattern)))
    assert _pydantic_accepts(model, json.dumps({"branch": value})) is ok


def _pydantic_accepts(model: type[BaseModel], text: str) -> bool:
    try:
        model.model_validate_json(text)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("value", ["14:30:00", "14:30", "25:00:00Z", 1430])
def test_a_plain_time_is_asked_for_with_its_offset(value: Any) -> None:
    # A plain tool's `format: time` is RFC 3339's full-time, as JSON Schema says and
    # `jsonschema` checks: the offset is part of it. The payload says so, rather than show
    # "14:30:00" as the example of what the model has just sent.
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "time"}}}
    tools = Toolset([{"name": "alarm", "parameters": schema}])
    for precheck in (True, False):
        asm = Assembler(tools=tools) if precheck else Assembler()
        asm.feed(0, id="call_1", name="alarm", arguments=json.dumps({"at": value}))
        (call,) = asm.finish()
        outcome = tools.validate(call)
        ((path, expected),) = [(e.path, e.expected) for e in outcome.errors]
        assert path == "/at" and "offset" in expected and "14:30:00+01:00" in expected
    for sent in ("14:30:00Z", "14:30:00+01:00", "14:30:00.5-05:00"):
        assert _run(schema, {"at": sent}) == ([], True, [])


def test_a_plain_time_without_its_offset_is_refused_while_it_streams() -> None:
    # The pre-check reads a plain tool's `time` as its validation does, offset required, and
    # says so before the call ends; a model's `time` field keeps the offset optional.
    schema = {
        "type": "object",
        "properties": {"at": {"type": "string", "format": "time"}, "note": {"type": "string"}},
    }
    plain = Toolset([{"name": "alarm", "parameters": schema}])
    model = Toolset([create_model("alarm", at=(dt.time, ...), note=(str, ""))])

    def early(tools: Toolset, at: str) -> list[tuple[str, str | None, str | None]]:
        asm = Assembler(tools=tools)
        asm.feed(0, id="call_1", name="alarm", arguments='{"at": "' + at + '", ')
        shown = [(e.path, e.keyword, e.expected) for _, e in asm.drain_errors()]
        asm.feed(0, arguments='"note": "x"}')
        asm.finish()
        return shown

    ((path, keyword, expected),) = early(plain, "14:30:00")
    assert (path, keyword) == ("/at", "format") and expected is not None
    assert "offset" in expected and "optional" not in expected
    assert early(plain, "14:30:00Z") == early(plain, "14:30:00+01:00") == []
    assert early(model, "14:30:00") == []


def test_a_model_time_is_asked_for_as_pydantic_reads_it() -> None:
    # Pydantic's `time` takes no offset as well as one: its example needs none.
    tools = Toolset([create_model("Alarm", at=(dt.time, ...))])
    for value, errors in (("14:30:00", []), ("25:00", ["a time HH:MM[:SS], e.g. 14:30:00"])):
        asm = Assembler(tools=tools)
        asm.feed(0, id="call_1", name="alarm", arguments=json.dumps({"at": value}))
        (call,) = asm.finish()
        assert [e.expected for e in tools.validate(call).errors] == errors


@pytest.mark.parametrize(
    ("fmt", "value", "python_type"),
    [
        ("date-time", "2024-01-01T10:00:00Z", dt.datetime),
        ("time", "10:00:00Z", dt.time),
        ("date", "2024-01-01", dt.date),
        ("uuid", "2eb8aa08-aa98-11ea-b4aa-73b441d16380", UUID),
        ("ipv4", "192.168.0.1", IPv4Address),
        ("ipv6", "::ffff:192.168.0.1", IPv6Address),
    ],
)
def test_a_format_value_takes_no_final_newline(
    fmt: str, value: str, python_type: type[object]
) -> None:
    # rfc3339-validator reads date-times (and times through them) with a regex ending in
    # Python's `$`, which also holds before a final newline: a plain tool took
    # `"2024-01-01T10:00:00Z\n"`, which a Pydantic tool with a `datetime` field refuses.
    schema = {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    model = create_model("Value", v=(python_type, ...))
    assert _run(schema, {"v": value})[1:] == (True, [])
    for text in (f"{value}\n", f"{value}\n\n"):
        early, ok, codes = _run(schema, {"v": text})
        assert (ok, codes) == (False, ["format"]), repr(text)
        # The pre-check, where it checks the format, says so while the call streams.
        assert early or fmt not in _PRECHECKED_FORMATS, repr(text)
        assert not _pydantic_accepts(model, json.dumps({"v": text}))


def test_multiple_of_a_decimal_step_is_exact() -> None:
    # jsonschema divides binary floats (19.99 / 0.01 == 1998.9999999999998): a whole number
    # of cents must pass validation, as it passes the pre-check.
    price = {"type": "object", "properties": {"price": {"type": "number", "multipleOf": 0.01}}}
    for value in (19.99, 0.07, 1e308, 3):
        assert _run(price, {"price": value}) == ([], True, []), value
    errors, ok, codes = _run(price, {"price": 19.995})
    assert errors and not ok and codes == ["multiple_of"]


@pytest.mark.parametrize("coercion", ["safe", "none"])
def test_multiple_of_divides_the_digits_a_float_cannot_hold(
    coercion: Literal["safe", "none"],
) -> None:
    # A float reads 2.4000000000000000001 as 2.4, a multiple of 0.1; the number as written is
    # none. Alone, under `not` and in a `oneOf`, it is judged the same way, as written.
    long_one = "2.4000000000000000001"

    def judged(rule: dict[str, Any], number: str) -> Any:
        return _numbers_checked(_obj(properties={"x": rule}), f'{{"x": {number}}}', coercion)

    step = {"multipleOf": 0.1}
    refused = judged(step, long_one)
    assert [(e.path, e.code, e.got) for e in refused.errors] == [("/x", "multiple_of", long_one)]
    assert judged({"not": step}, long_one).ok
    # The pre-check does not judge `oneOf` here (its own matter): validation alone is asked.
    tools = Toolset([{"name": "tool", "parameters": _obj(properties={"x": {"oneOf": [{}, step]}})}])
    arguments = f'{{"x": {long_one}}}'
    call = SimpleNamespace(
        ordinal=0, index=0, id="call_1", name="tool", arguments=arguments, error=None
    )
    outcome = tools.validate(call)
    assert outcome.ok and outcome.value == {"x": float(long_one)}
    # Digits a float holds, or zeros past them, are the float's own number.
    for number in ("2.4", "2.40000000000000000000", "-0.30000000000000000000"):
        assert judged(step, number).ok and not judged({"not": step}, number).ok


@pytest.mark.parametrize(
    ("number", "step", "multiple"),
    [
        # Remainders past `Decimal`'s default exponent range were rounded to 0: a multiple.
        ("1e-1100000", 0.01, False),
        ("3e-999999999", 0.01, False),
        ("-5e-1000000000", 0.01, False),
        ("2.5e-1000000", 0.5, False),
        ("1e-2", 0.01, True),
        ("1e1000000", 0.01, True),
        ("1e999999999", 0.3, False),
        ("3e999999999", 0.3, True),
        ("1e999999999", 2.0, True),
        ("12.34e999999999", 0.01, True),
        # An integer step divides the text too, not the float that rounds it.
        ("5.0000000000000000001", 5, False),
        ("1e-1100000", 5, False),
        ("1e1000000", 5, True),
    ],
)
def test_multiple_of_is_exact_at_any_exponent(number: str, step: float, multiple: bool) -> None:
    # The numbers a float cannot hold keep their text (`WrittenFloat`), which is divided.
    written = jsonschema_dialect.WrittenFloat(number)
    written.text = number
    validator = extended_validator(Draft202012Validator)({"multipleOf": step})
    assert validator.is_valid(written) is multiple
    # In a call, as a pattern's value (where a number a float reads as zero or infinity may
    # also be refused as such): no multiple passes.
    schema = _obj(patternProperties={"^a": {"type": "number", "multipleOf": step}})
    outcome = _numbers_checked(schema, f'{{"a": {number}}}', "none")
    assert multiple or not outcome.ok


@pytest.mark.parametrize("digits", [30, 998, 999, 1500, 4300])
@pytest.mark.parametrize("step", [0.01, 0.1, 0.3])
def test_multiple_of_a_float_step_judges_a_long_integer_exactly(digits: int, step: float) -> None:
    # An integer too long for a float: `Decimal` at a precision capped below its length could
    # not divide, and `jsonschema`'s float division raised OverflowError out of `validate`.
    schema = {"type": "object", "properties": {"amount": {"type": "number", "multipleOf": step}}}
    for number in ("1" + "9" * (digits - 1), "1" + "0" * (digits - 1)):
        outcome = _numbers_checked(schema, f'{{"amount": {number}}}', "safe")
        multiple = Fraction(number) % Fraction(repr(step)) == 0
        assert outcome.ok is multiple, (digits, step, number[:5])
        assert [e.code for e in outcome.errors] == ([] if multiple else ["multiple_of"])
    # Untyped, inside `anyOf`, and a boolean, which is no number to `multipleOf`.
    for schema in (
        _obj(properties={"a": {"multipleOf": 0.3}}),
        _obj(
            properties={"a": {"anyOf": [{"type": "number", "multipleOf": 0.3}, {"type": "null"}]}}
        ),
    ):
        long_one = "1" + "0" * 999
        assert not _numbers_checked(schema, f'{{"a": {long_one}}}', "safe").ok
        assert _numbers_checked(schema, '{"a": ' + "3" * 1000 + "}", "safe").ok
    assert _numbers_checked(_obj(properties={"a": {"multipleOf": 0.3}}), '{"a": true}', "safe").ok


def test_draft_7_ignores_the_keywords_next_to_a_ref() -> None:
    # MCP servers often declare draft-07, where a `$ref` replaces its siblings.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"name": {"type": "string"}},
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/name", "maxLength": 2}},
    }
    assert _run(schema, {"a": "abcdef"}) == ([], True, [])
    errors, ok, _ = _run(schema, {"a": 1})
    assert errors and not ok
    schema.pop("$schema")
    errors, ok, _ = _run(schema, {"a": "abcdef"})
    assert errors and not ok


def test_a_keyword_next_to_a_ref_and_in_its_target_keeps_both() -> None:
    # 2020-12 applies a `$ref` and its siblings together: extending a base object's
    # properties must not drop the base's.
    schema = {
        "$defs": {
            "base": {
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
            }
        },
        "$ref": "#/$defs/base",
        "properties": {"note": {"type": "string"}},
    }
    assert _run(schema, {"id": "x", "note": "y"}) == ([], True, [])
    assert _run(schema, {"note": "y"})[1:] == (False, ["missing"])


def test_unicode_property_patterns_build_and_validate() -> None:
    # ECMA-262 tool schemas use `\p{..}`; Python's `re` refuses it, which made the schema fail
    # the meta-schema's `regex` format and the whole Toolset raise.
    name = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": r"^\p{Lu}\p{L}*$"}},
    }
    assert _run(name, {"name": "Élodie"}) == ([], True, [])
    assert _run(name, {"name": "Zoë"}) == ([], True, [])
    _, ok, codes = _run(name, {"name": "élodie"})
    assert not ok and codes == ["pattern"]
    # ECMA's named groups, which `re` spells `(?P<name>...)`.
    sku = {
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": r"^(?<kind>[A-Z]+)-\d+$"}},
    }
    assert _run(sku, {"sku": "AB-12"}) == ([], True, [])
    assert not _run(sku, {"sku": "ab-12"})[1]


@pytest.mark.parametrize(
    "pattern, accepted, refused",
    [
        # A control escape, inside a class too.
        (r"^a\cJb$", ["a\nb"], ["aJb", "a\\cJb"]),
        (r"^[\cA-\cZ]+$", ["\x01\x1a"], ["A"]),
        # `[^]` is any character, line breaks included; `[]` none, even repeated.
        (r"^[^]*$", ["", "a\nb"], []),
        (r"^a[]*b$", ["ab"], ["a]b"]),
        (r"^a[]b$", [], ["ab", "a]b"]),
        # A named backreference.
        ("^(?<q>['\"]).*\\k<q>$", ["'x'", '"y"'], ["'x\""]),
    ],
)
def test_ecma_spellings_python_lacks_build_and_validate(
    pattern: str, accepted: list[str], refused: list[str]
) -> None:
    # Each made the meta-schema's `regex` format refuse the schema, and the whole Toolset
    # raise, where the pre-check's registry took it.
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    for text in accepted:
        assert _run(schema, {"s": text}) == ([], True, []), text
    for text in refused:
        assert _run(schema, {"s": text})[1:] == (False, ["pattern"]), text


def test_unicode_property_pattern_properties_close_the_object() -> None:
    schema = {
        "type": "object",
        "properties": {
            "scores": {
                "type": "object",
                "patternProperties": {r"^\p{L}+$": {"type": "integer"}},
                "additionalProperties": False,
            }
        },
    }
    assert _run(schema, {"scores": {"ü": 1, "東京": 2}})[1]
    assert not _run(schema, {"scores": {"ü": "x"}})[1]
    assert not _run(schema, {"scores": {"a1": 1}})[1]


def test_a_pattern_no_engine_compiles_is_refused_at_build() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(unclosed"}}}
    with pytest.raises(ValueError, match="invalid parameter schema"):
        Toolset([{"name": "tool", "parameters": schema}])


def test_openapi_nullable_admits_null_in_validation_as_in_the_pre_check() -> None:
    # Gemini declarations and OpenAPI 3.0 conversions mark optional values `nullable`.
    schema = {
        "type": "object",
        "properties": {
            "status": {"type": "string", "nullable": True, "enum": ["open", "closed"]},
            "limit": {"type": "integer", "nullable": True},
        },
        "required": ["status", "limit"],
    }
    assert _run(schema, {"status": None, "limit": None}) == ([], True, [])
    assert _run(schema, {"status": "open", "limit": 3}) == ([], True, [])
    errors, ok, codes = _run(schema, {"status": "pending", "limit": None})
    assert errors and not ok and codes == ["enum"]
    errors, ok, _ = _run(schema, {"status": "open", "limit": "many"})
    assert not ok
    strict = {"type": "object", "properties": {"limit": {"type": "integer"}}, "required": ["limit"]}
    errors, ok, _ = _run(strict, {"limit": None})
    assert errors and not ok


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e999"])
def test_a_number_past_a_double_with_a_float_step_is_an_error_not_a_crash(
    precheck: bool, number: str
) -> None:
    # json reads it as infinity, which `jsonschema`'s multipleOf cannot turn into a fraction.
    schema = {"type": "object", "properties": {"v": {"type": "number", "multipleOf": 0.5}}}
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools) if precheck else Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=f'{{"v": {number}}}')
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [("/v", "type")]


def test_properties_named_like_keywords_are_fields() -> None:
    # `format` and `not` are common parameter names: the pre-check schema is built around them.
    schema = {
        "type": "object",
        "properties": {
            "format": {"type": "string", "enum": ["json", "csv"]},
            "not": {"type": "string", "format": "email"},
            "enum": {"type": "string", "format": "email"},
        },
        "required": ["format"],
    }
    assert _run(schema, {"format": "csv", "not": "a@b.co", "enum": "c@d.co"}) == ([], True, [])
    errors, ok, codes = _run(schema, {"format": "xml"})
    assert errors and not ok and codes == ["enum"]


def _validated(schema: dict[str, Any], arguments: Any, lang: Lang = "en") -> tuple[Any, list[Any]]:
    """`arguments` in one fragment to a one-tool toolset: the call and validation's errors."""
    tools = Toolset([{"name": "tool", "parameters": schema}], lang=lang)
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
    (call,) = assembler.finish()
    return call, tools.validate(call).errors


def _errors(schema: dict[str, Any], arguments: Any) -> list[tuple[str, str, str | None]]:
    """Validation's errors for `arguments`: (path, code, got)."""
    return [(e.path, e.code, e.got) for e in _validated(schema, arguments)[1]]


def test_two_keywords_failing_alike_are_one_error() -> None:
    # `type` and `enum` both fail on "2", and both are described by the enum's values.
    level = {"type": "object", "properties": {"level": {"type": "integer", "enum": [1, 2, 3]}}}
    _, errors = _validated(level, {"level": "2"})
    assert [(e.path, e.code, e.expected) for e in errors] == [("/level", "enum", "one of 1, 2, 3")]


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class _Mode(str, enum.Enum):
    FAST = "fast"
    SLOW = "slow"


@pytest.mark.parametrize("annotation", [_Level, _Mode, Literal[2]])
@pytest.mark.parametrize("sent", ["2", "two", 2.5, 7, None, [2]])
def test_a_value_no_member_equals_is_refused_alike_by_model_and_plain_tools(
    annotation: Any, sent: Any
) -> None:
    # A plain tool reported `"2"` for `{"type": "integer", "enum": [1, 2]}` as `type`, where
    # the model it was exported from reported `enum`: no rule makes the text a member, and
    # the members the error lists say the type too. Both paths now say `enum` in one payload.
    model = create_model("Pick", level=(annotation, ...))
    tools = Toolset([model])
    plain = Toolset([{"name": "pick", "parameters": tools.schema("pick")}])
    payloads: list[list[dict[str, str]]] = []
    for toolset in (tools, plain):
        assembler = Assembler(tools=toolset)
        assembler.feed(0, id="call_1", name="pick", arguments=json.dumps({"level": sent}))
        (call,) = assembler.finish()
        payloads.append([e.as_payload() for e in toolset.validate(call).errors])
    assert payloads[0] == payloads[1]
    assert [(e["path"], e["code"], e["got"]) for e in payloads[0]] == [
        ("/level", "enum", json.dumps(sent))
    ]


def test_a_union_of_objects_names_what_the_closest_branch_finds() -> None:
    # Both branches are closed objects: "expected an object" would not tell the model that the
    # field it added is what no branch takes, nor which field has the wrong type.
    schema = {
        "type": "object",
        "properties": {
            "target": {
                "oneOf": [
                    {"type": "object", "properties": {"user": {"type": "integer"}}},
                    {"type": "object", "properties": {"team": {"type": "string"}}},
                ]
            }
        },
    }
    assert _errors(schema, {"target": {"usr": 1}}) == [("/target/usr", "unknown_field", "1")]
    assert _errors(schema, {"target": {"user": "x"}}) == [("/target/user", "type", '"x"')]
    any_of = {
        "type": "object",
        "properties": {"target": {"anyOf": schema["properties"]["target"]["oneOf"]}},
    }
    assert _errors(any_of, {"target": {"user": "x"}}) == [("/target/user", "type", '"x"')]


_PAYMENT = {
    "type": "object",
    "properties": {
        "payment": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"card_number": {"type": "string"}, "expiry": {"type": "string"}},
                    "required": ["card_number"],
                },
                {
                    "type": "object",
                    "properties": {
                        "invoice_id": {"type": "integer"},
                        "due_days": {"type": "integer"},
                    },
                    "required": ["invoice_id"],
                },
            ]
        }
    },
}


@pytest.mark.parametrize("prechecked", [True, False])
def test_branches_equally_close_are_told_apart_by_the_keys_sent(prechecked: bool) -> None:
    # The card branch finds three faults (two unknown fields, `card_number` missing), the
    # invoice branch three (`expiry` unknown, two numbers sent as text): the first branch won
    # the tie, and the model was told to drop the invoice's own fields. Model tools break such
    # a tie by the keys the object names, and so do plain ones now.
    arguments = {"payment": {"invoice_id": "INV-7", "due_days": "14", "expiry": "05/30"}}
    tools = Toolset([{"name": "tool", "parameters": _PAYMENT}])
    assembler = Assembler(tools=tools) if prechecked else Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
    (call,) = assembler.finish()
    (error,) = tools.validate(call).errors
    assert (error.path, error.code) == ("/payment/expiry", "unknown_field")
    assert error.expected == "no such field; allowed fields: invoice_id, due_days"


def test_a_union_branch_that_takes_the_object_names_the_member_it_refuses() -> None:
    # A Jira-style `issuetype`, given by id or by name: the id branch takes the object and only
    # its member's pattern fails, which is what to fix; "expected an object" for an object
    # gave the model nothing.
    schema = {
        "type": "object",
        "properties": {
            "issuetype": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"id": {"type": "string", "pattern": "^\\d+$"}},
                        "required": ["id"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                ]
            },
            "points": {
                "anyOf": [
                    {"type": "array", "items": {"type": "integer"}},
                    {"type": "string", "enum": ["all"]},
                ]
            },
        },
    }
    assert _errors(schema, {"issuetype": {"id": "x"}}) == [("/issuetype/id", "pattern", '"x"')]
    assert _errors(schema, {"points": [1, "2x"]}) == [("/points/1", "type", '"2x"')]


def test_a_union_of_arrays_says_what_the_closest_branch_finds_in_the_array() -> None:
    # A point as `[lat, lon]` or as one place name: every branch takes an array, so "expected
    # an array" for `[1, 2, 3]` told the model nothing; the pair's length is what to fix.
    schema = {
        "type": "object",
        "properties": {
            "at": {
                "anyOf": [
                    {
                        "type": "array",
                        "prefixItems": [{"type": "number"}, {"type": "number"}],
                        "items": False,
                        "minItems": 2,
                    },
                    {"type": "array", "items": {"type": "string"}, "maxItems": 1},
                ]
            }
        },
    }
    _, errors = _validated(schema, {"at": [1, 2, 3]})
    assert [(e.path, e.code, e.expected) for e in errors] == [("/at", "length", "at most 2 items")]
    # A value of no branch's type still hears the types.
    _, errors = _validated(schema, {"at": 5})
    assert [(e.path, e.code, e.expected) for e in errors] == [("/at", "type", "an array")]


_FILTER = {
    "type": "object",
    "properties": {"filter": {"$ref": "#/$defs/expr"}},
    "required": ["filter"],
    "$defs": {
        "expr": {
            "oneOf": [
                {"$ref": "#/$defs/cmp"},
                {
                    "type": "object",
                    "properties": {"and": {"type": "array", "items": {"$ref": "#/$defs/expr"}}},
                    "required": ["and"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"not": {"$ref": "#/$defs/expr"}},
                    "required": ["not"],
                    "additionalProperties": False,
                },
            ]
        },
        "cmp": {
            "type": "object",
            "properties": {
                "field": {"type": "string"},
                "op": {"enum": ["=", "!=", "<", ">"]},
                "value": {"type": ["string", "number"]},
            },
            "required": ["field", "op", "value"],
            "additionalProperties": False,
        },
    },
}


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"filter": {"field": "a", "op": "==", "value": 1}}, "/filter/op"),
        ({"filter": {"and": [{"field": "a", "op": "==", "value": 1}]}}, "/filter/and/0/op"),
        (
            {"filter": {"not": {"and": [{"field": "a", "op": "==", "value": 1}]}}},
            "/filter/not/and/0/op",
        ),
    ],
)
def test_a_recursive_filter_names_the_comparison_operator_it_refuses(
    arguments: dict[str, Any], path: str
) -> None:
    # `op` is a field of the comparison branch alone, not a tag telling branches apart: its
    # wrong value used to send the model to the `and` branch ("field is unknown; allowed
    # fields: and"), and inside `and` or `not` the finding read "expected an object".
    assert _errors(_FILTER, arguments) == [(path, "enum", '"=="')]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_value_several_one_of_branches_take_is_ambiguous(lang: Lang) -> None:
    # Not a type error: 5 is a number. Exactly one branch must take it, and two do.
    schema = {
        "type": "object",
        "properties": {"n": {"oneOf": [{"type": "number"}, {"type": "integer"}]}},
    }
    call, (error,) = _validated(schema, {"n": 5}, lang)
    assert call.error is not None and call.error.keyword == "oneOf"
    assert (error.path, error.code, error.got) == ("/n", "ambiguous", "5")
    assert error.expected and error.hint
    if lang == "en":
        assert "exactly one" in error.expected and "number" in error.expected
    assert _run(schema, {"n": 5.5}) == ([], True, [])


def test_one_of_is_judged_as_written_though_its_branches_are_closed() -> None:
    # Closed, the branches differ by the field each names; as written, each takes an object
    # with the other's field too, so both take these and `oneOf` refuses them. Closing objects
    # must only add the unknown-field rule, never let through what the schema refuses.
    target = {
        "oneOf": [
            _obj(properties={"user_id": {"type": "string"}}),
            _obj(properties={"email": {"type": "string"}}),
        ]
    }
    schema = _obj(properties={"target": target}, required=["target"])
    for value in ({"user_id": "u1"}, {"email": "a@b.c"}):
        assert not Draft202012Validator(schema).is_valid({"target": value})
        assert _run(schema, {"target": value})[1:] == (False, ["ambiguous"])
    # Branches told apart as written (by their required fields) still take their own values,
    # and still refuse unknown fields.
    for branch, name in zip(target["oneOf"], ("user_id", "email"), strict=True):
        branch["required"] = [name]
    assert _run(schema, {"target": {"user_id": "u1"}}) == ([], True, [])
    errors, ok, codes = _run(schema, {"target": {"user_id": "u1", "zzz": 1}})
    assert errors and (ok, codes) == (False, ["unknown_field"])


def test_formats_left_to_validation_loosen_one_of_not_and_if() -> None:
    # Without their formats, `oneOf` branches would both match, a `not` would refuse more and an
    # `if` would pick the other branch: the pre-check must still never refuse a valid call.
    user = {
        "type": "object",
        "properties": {
            "user": {
                "oneOf": [
                    {"type": "string", "format": "email"},
                    {"type": "string", "format": "uuid"},
                ]
            }
        },
        "required": ["user"],
    }
    assert _run(user, {"user": "ann@example.com"}) == ([], True, [])
    assert _run(user, {"user": "123e4567-e89b-12d3-a456-426614174000"}) == ([], True, [])
    errors, ok, _ = _run(user, {"user": 5})
    assert errors and not ok

    not_email = {"type": "object", "properties": {"handle": {"not": {"format": "email"}}}}
    assert _run(not_email, {"handle": "ann"}) == ([], True, [])

    contact = {
        "type": "object",
        "properties": {"contact": {"type": "string"}, "name": {"type": "string"}},
        "if": {"properties": {"contact": {"format": "email"}}},
        "then": {"required": ["name"]},
        "else": {"properties": {"name": {"maxLength": 0}}},
    }
    assert _run(contact, {"contact": "+47 555", "name": ""}) == ([], True, [])
    assert _run(contact, {"contact": "ann@example.com", "name": "Ann"}) == ([], True, [])


def test_a_bound_is_described_from_the_subschema_that_holds_it() -> None:
    # The bound sits in an `allOf` member (or reads as draft 4's boolean `exclusiveMinimum`),
    # not in the value's own schema: the payload still says which bound was missed.
    tools = Toolset(
        [
            {
                "name": "tool",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "n": {"allOf": [{"type": "integer"}, {"minimum": 3}]},
                        "s": {"type": "string", "allOf": [{"maxLength": 2}]},
                    },
                },
            },
            {
                "name": "old",
                "parameters": {
                    "$schema": "http://json-schema.org/draft-04/schema#",
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}
                    },
                },
            },
        ]
    )
    for name, arguments, expected in [
        ("tool", '{"n": 2}', ">= 3"),
        ("tool", '{"s": "abc"}', "at most 2 characters"),
        ("old", '{"n": 0}', "> 0"),
    ]:
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="call_1", name=name, arguments=arguments)
        (call,) = assembler.finish()
        outcome = tools.validate(call)
        assert not outcome.ok
        assert [e.expected for e in outcome.errors] == [expected]


def test_a_union_error_comes_from_the_branch_the_value_aims_at() -> None:
    # "expected an integer or a string" for 4 or an object tells the model nothing: the branch
    # its tag (or its type) picks says what is wrong.
    pet = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "cat"}, "meow": {"type": "integer"}},
                "required": ["kind"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "dog"}, "bark": {"type": "string"}},
                "required": ["kind"],
                "additionalProperties": False,
            },
        ]
    }
    schema = {
        "type": "object",
        "properties": {
            "pet": pet,
            "t": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
        },
    }
    tools = Toolset([{"name": "tool", "parameters": schema}])
    for arguments, expected in [
        ('{"t": 4}', [("/t", "range", ">= 5")]),
        (
            '{"pet": {"kind": "dog", "meow": 1}}',
            [("/pet/meow", "unknown_field", "no such field; allowed fields: kind, bark")],
        ),
    ]:
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="call_1", name="tool", arguments=arguments)
        (call,) = assembler.finish()
        outcome = tools.validate(call)
        assert [(e.path, e.code, e.expected) for e in outcome.errors] == expected


@pytest.mark.parametrize("union", ["oneOf", "anyOf"])
@pytest.mark.parametrize("nested", [False, True])
def test_either_field_of_an_object_is_named_at_its_own_path(union: str, nested: bool) -> None:
    # "Either email or phone": the fields are the object's own, the union only says which
    # must be there. A wrong field was reported on the whole object, and an empty object as
    # "type: a valid value", which names neither field.
    contact = _obj(
        properties={
            "email": {"type": "string"},
            "phone": {"type": "string"},
            "name": {"type": "string"},
        },
        **{union: [{"required": ["email"]}, {"required": ["phone", "name"]}]},
    )
    schema = _obj(properties={"contact": contact}, required=["contact"]) if nested else contact
    at = "/contact" if nested else ""

    def errors(value: dict[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
        arguments = {"contact": value} if nested else value
        found: list[tuple[str, str, str | None, str | None]] = []
        for precheck in (True, False):
            tools = Toolset([{"name": "tool", "parameters": schema}])
            assembler = Assembler(tools=tools if precheck else None)
            assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
            (call,) = assembler.finish()
            mine = [(e.path, e.code, e.expected, e.got) for e in tools.validate(call).errors]
            assert not found or mine == found
            found = mine
        return found

    assert errors({"email": 5}) == [(f"{at}/email", "type", "a string", "5")]
    assert errors({}) == [(at, "missing", "one of these fields: email, phone and name", None)]
    assert errors({"phone": "1"}) == [(at, "missing", "one of these fields: email, name", None)]
    assert errors({"phone": "1", "name": "Ann"}) == []


@pytest.mark.parametrize("union", ["oneOf", "anyOf"])
def test_string_branches_told_apart_by_pattern_name_every_pattern(union: str) -> None:
    # "expected a string" for a string told the model nothing: each branch's pattern does.
    ref = {
        union: [
            {"type": "string", "pattern": "^ORD-\\d+$"},
            {"type": "string", "pattern": "^CUS-\\d+$"},
        ]
    }
    schema = _obj(properties={"ref": ref}, required=["ref"])
    for precheck in (True, False):
        tools = Toolset([{"name": "tool", "parameters": schema}])
        assembler = Assembler(tools=tools if precheck else None)
        assembler.feed(0, id="call_1", name="tool", arguments='{"ref": "order 42"}')
        (call,) = assembler.finish()
        errors = tools.validate(call).errors
        assert [(e.path, e.code, e.expected, e.got) for e in errors] == [
            (
                "/ref",
                "pattern",
                "a string matching ^ORD-\\d+$ or a string matching ^CUS-\\d+$",
                '"order 42"',
            )
        ]
    # A branch with a description of its own is named by it, as a field's pattern is.
    ref[union][1]["description"] = "a customer id such as CUS-7"
    (error,) = _validated(schema, {"ref": "order 42"}, "zh")[1]
    assert (error.code, error.expected) == (
        "pattern",
        "匹配 ^ORD-\\d+$ 的字符串 或 a customer id such as CUS-7",
    )
    assert _run(schema, {"ref": "CUS-7"}) == ([], True, [])


# (branches, value sent, code, English `expected`): no single branch stands out, and the
# branches refuse the value by rules of different kinds. "type: a string" for a string told the
# model nothing; each branch's need does.
MIXED_REFUSALS: list[tuple[list[dict[str, Any]], Any, str, str]] = [
    (
        [{"type": "string", "pattern": "^ORD-[0-9]+$"}, {"type": "string", "maxLength": 3}],
        "order 44",
        "invalid",
        "a string matching ^ORD-[0-9]+$ or a string (at most 3 characters)",
    ),
    # The branches the value's type fits refuse it by one kind of rule: that kind, with the
    # branch of another type named too.
    (
        [
            {"type": "integer", "minimum": 5},
            {"type": "integer", "maximum": 1},
            {"type": "string", "pattern": "^[A-Z]+$"},
        ],
        3,
        "range",
        "an integer (>= 5) or an integer (<= 1) or a string matching ^[A-Z]+$",
    ),
    (
        [{"type": "number", "multipleOf": 5}, {"type": "number", "minimum": 100}],
        7,
        "invalid",
        "a number (a multiple of 5) or a number (>= 100)",
    ),
    (
        [{"type": "string", "enum": ["a", "b"]}, {"type": "string", "pattern": "^x"}],
        "c",
        "invalid",
        'one of "a", "b" or a string matching ^x',
    ),
    # A branch refusing the value twice needs both; a bound from an `allOf` member counts.
    (
        [
            {"type": "string", "pattern": "^a"},
            {"type": "string", "pattern": "^b", "allOf": [{"minLength": 3}]},
        ],
        "c",
        "invalid",
        "a string matching ^a or a string matching ^b (at least 3 characters)",
    ),
    # A nested union's branches are branches too; a `$ref` is read where it points.
    (
        [
            {"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer"}]},
            {"$ref": "#/$defs/code"},
        ],
        "y",
        "invalid",
        "a string (at least 3 characters) or an integer or a string matching ^x",
    ),
]


@pytest.mark.parametrize("union", ["oneOf", "anyOf"])
@pytest.mark.parametrize(
    ("branches", "sent", "code", "expected"),
    MIXED_REFUSALS,
    ids=["pattern-length", "range-type", "step-range", "enum-pattern", "two-rules", "nested"],
)
def test_branches_refusing_by_different_rules_each_say_what_they_need(
    union: str, branches: list[dict[str, Any]], sent: Any, code: str, expected: str
) -> None:
    schema = _obj(
        properties={"ref": {union: branches}},
        required=["ref"],
        **{"$defs": {"code": {"type": "string", "pattern": "^x"}}},
    )
    for precheck in (True, False):
        tools = Toolset([{"name": "tool", "parameters": schema}])
        assembler = Assembler(tools=tools if precheck else None)
        assembler.feed(0, id="call_1", name="tool", arguments=json.dumps({"ref": sent}))
        (call,) = assembler.finish()
        errors = tools.validate(call).errors
        assert [(e.path, e.code, e.expected, e.got) for e in errors] == [
            ("/ref", code, expected, json.dumps(sent))
        ]


def test_branches_refusing_by_different_rules_are_described_in_chinese() -> None:
    ref = {"anyOf": [{"type": "string", "pattern": "^ORD-"}, {"type": "string", "maxLength": 3}]}
    (error,) = _validated(_obj(properties={"ref": ref}), {"ref": "order 44"}, "zh")[1]
    assert (error.code, error.expected) == (
        "invalid",
        "匹配 ^ORD- 的字符串 或 字符串（最多 3 个字符）",
    )
    # A value no branch's type fits is still a type error.
    (error,) = _validated(_obj(properties={"ref": ref}), {"ref": 5}, "en")[1]
    assert (error.code, error.expected) == ("type", "a string")


@pytest.mark.parametrize("union", ["oneOf", "anyOf"])
@pytest.mark.parametrize(
    "tag",
    [
        lambda value: {"const": value},
        # OpenAPI generators write a discriminator as an enum of one value.
        lambda value: {"enum": [value]},
        lambda value: {"type": "string", "enum": [value]},
    ],
    ids=["const", "enum", "typed_enum"],
)
@pytest.mark.parametrize(
    ("radius", "sent", "code", "expected"),
    [
        ({"type": "number", "minimum": 0}, -1, "range", ">= 0"),
        ({"type": "string", "maxLength": 2}, "abc", "length", "at most 2 characters"),
        ({"enum": ["s", "m"]}, "xl", "enum", 'one of "s", "m"'),
        ({"type": "string", "pattern": "^a"}, "b", "pattern", "a string matching ^a"),
        (
            {"type": "string", "format": "date"},
            "nope",
            "format",
            "a date YYYY-MM-DD, e.g. 2024-03-05",
        ),
        ({"type": "array", "minItems": 2}, [1], "length", "at least 2 items"),
    ],
)
def test_the_branch_a_one_value_tag_names_says_what_to_fix(
    union: str,
    tag: Callable[[str], dict[str, Any]],
    radius: dict[str, Any],
    sent: Any,
    code: str,
    expected: str,
) -> None:
    # An error inside the branch the tag picks was "/shape type: an object" with an enum tag.
    circle = _obj(properties={"type": tag("circle"), "radius": radius}, required=["type", "radius"])
    rect = _obj(properties={"type": tag("rect"), "w": {"type": "number"}}, required=["type", "w"])
    schema = _obj(properties={"shape": {union: [circle, rect]}}, required=["shape"])
    arguments = {"shape": {"type": "circle", "radius": sent}}
    for precheck in (True, False):
        tools = Toolset([{"name": "tool", "parameters": schema}])
        assembler = Assembler(tools=tools if precheck else None)
        assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
        (call,) = assembler.finish()
        errors = tools.validate(call).errors
        assert [(e.path, e.code, e.expected) for e in errors] == [("/shape/radius", code, expected)]


@pytest.mark.parametrize(
    "field",
    [
        {"type": "object"},
        {"type": "object", "required": ["id"]},
        {"type": "object", "minProperties": 1},
        {"type": ["object", "null"]},
    ],
)
def test_an_object_that_names_no_properties_is_free_form(field: dict[str, Any]) -> None:
    # `{"type": "object"}` is how real tools declare headers, filters or metadata. Closing it
    # like an object with named properties would leave `{}` as its only accepted value.
    schema = {"type": "object", "properties": {"options": field}}
    arguments = {"options": {"id": 7, "nested": {"deep": [1, "x"]}}}
    assert _run(schema, arguments) == ([], True, [])
    # The object that names its properties still refuses a field it does not name.
    early, ok, codes = _run(schema, {**arguments, "invented": 1})
    assert early and not ok and codes == ["unknown_field"]


def test_a_free_form_object_keeps_a_tool_out_of_strict_mode() -> None:
    # OpenAI's strict mode closes every object, so it cannot express a free-form one: the tool
    # must be exported non-strict (and listed), never narrowed to `{}` in silence.
    schema = {"type": "object", "properties": {"options": {"type": "object"}}}
    tools = Toolset([{"name": "tool", "parameters": schema}], strict=False)
    assert [(r.path, r.keyword) for r in tools.relaxations] == [("options", "additionalProperties")]
    (function,) = [tool["function"] for tool in tools.openai()]
    assert function["strict"] is False
    assert "additionalProperties" not in function["parameters"]["properties"]["options"]


def _payloads(schema: dict[str, Any], arguments: Any, lang: Lang = "en") -> list[dict[str, str]]:
    """The `errors` entries of the payload a plain tool's refusal sends to the model."""
    tools = Toolset([{"name": "tool", "parameters": schema}], lang=lang)
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert not outcome.ok
    return json.loads(outcome.to_message(call)["content"])["errors"]


def _obj(**keywords: Any) -> dict[str, Any]:
    return {"type": "object", **keywords}


_BY_ID = {"required": ["id"]}
_BY_LOGIN = {"required": ["login"]}
_USER_FIELDS = {"id": {"type": "integer"}, "login": {"type": "string"}, "email": {"type": "string"}}


@pytest.mark.parametrize(
    ("schema", "at"),
    [
        # Object branches told apart by the fields they require.
        (
            _obj(
                properties={
                    "user": {
                        "oneOf": [
                            _obj(properties=_USER_FIELDS, **_BY_ID),
                            _obj(properties=_USER_FIELDS, **_BY_LOGIN),
                            _obj(properties=_USER_FIELDS, required=["email"]),
                        ]
                    }
                },
                required=["user"],
            ),
            "/user",
        ),
        # The arguments themselves: "send exactly one of id or login".
        (_obj(properties=_USER_FIELDS, oneOf=[_BY_ID, _BY_LOGIN]), ""),
        # Branches behind references.
        (
            _obj(
                properties={
                    "user": {"oneOf": [{"$ref": "#/$defs/by_id"}, {"$ref": "#/$defs/by_login"}]}
                },
                **{
                    "$defs": {
                        "by_id": _obj(properties=_USER_FIELDS, **_BY_ID),
                        "by_login": _obj(properties=_USER_FIELDS, **_BY_LOGIN),
                    }
                },
            ),
            "/user",
        ),
    ],
    ids=["branches", "root", "refs"],
)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_value_one_of_branches_take_by_their_fields_names_those_fields(
    schema: dict[str, Any], at: str, lang: Lang
) -> None:
    # "Exactly one of the alternatives: an object" told the model neither which fields made
    # more than one branch take the value nor that dropping one of them would do.
    user = {"id": 1, "login": "ann"}
    arguments = {"user": user} if at else user
    for precheck in (True, False):
        tools = Toolset([{"name": "tool", "parameters": schema}], lang=lang)
        assembler = Assembler(tools=tools if precheck else None)
        assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
        (call,) = assembler.finish()
        (error,) = tools.validate(call).errors
        assert (error.path, error.code) == (at, "ambiguous")
        assert error.expected is not None and error.hint is not None
        # Both fields, and not `email`, which no branch that took the value asked for.
        assert "id, login" in error.hint and "email" not in error.hint
        if lang == "en":
            assert "exactly one of the alternatives: an object with id or an object with login" in (
                error.expected
            )
            assert "send the fields of only one of them" in error.hint
    # Either field alone is taken.
    for key in ("id", "login"):
        single = {key: user[key]}
        assert _run(schema, {"user": single} if at else single) == ([], True, [])


_PET = {
    "oneOf": [
        _obj(
            properties={"kind": {"const": "cat"}, "lives": {"type": "integer"}}, required=["kind"]
        ),
        _obj(properties={"kind": {"const": "dog"}, "breed": {"type": "string"}}, required=["kind"]),
    ]
}
_MAP = {"type": "object", "additionalProperties": {"type": "integer"}}
_INTS = {"type": "array", "contains": {"type": "integer"}}
_CARD = {"card": {"type": "string"}, "cvv": {"type": "string"}}

# (schema, arguments, English error, Chinese `expected`): keywords whose failure the value's
# type does not explain used to read "invalid: expected an array" at the container.
KEYWORD_CASES: list[tuple[dict[str, Any], Any, dict[str, str], str]] = [
    (
        _obj(properties={"t": {"type": "array", "uniqueItems": True}}),
        {"t": [1, 2, 1]},
        {
            "path": "/t/2",
            "code": "unique",
            "expected": "no repeated items; this item repeats item 0",
            "got": "1",
        },
        "不能有重复项；此项与第 0 项重复",
    ),
    (
        _obj(properties={"m": {**_MAP, "minProperties": 2}}),
        {"m": {"a": 1}},
        {
            "path": "/m",
            "code": "length",
            "expected": "number of fields: at least 2",
            "got": '{"a":1}',
        },
        "字段数：至少 2",
    ),
    (
        _obj(properties={"m": {**_MAP, "maxProperties": 1}}),
        {"m": {"a": 1, "b": 2}},
        {
            "path": "/m",
            "code": "length",
            "expected": "number of fields: at most 1",
            "got": '{"a":1,"b":2}',
        },
        "字段数：最多 1",
    ),
    (
        _obj(properties={"t": _INTS}),
        {"t": ["a"]},
        {
            "path": "/t",
            "code": "length",
            "expected": "items that are an integer: at least 1",
            "got": '["a"]',
        },
        "为整数的项：至少 1 项",
    ),
    (
        _obj(properties={"t": {**_INTS, "minContains": 2}}),
        {"t": [1, "a"]},
        {
            "path": "/t",
            "code": "length",
            "expected": "items that are an integer: at least 2",
            "got": '[1,"a"]',
        },
        "为整数的项：至少 2 项",
    ),
    (
        _obj(properties={"t": {**_INTS, "maxContains": 1}}),
        {"t": [1, 2]},
        {
            "path": "/t",
            "code": "length",
            "expected": "items that are an integer: at most 1",
            "got": "[1,2]",
        },
        "为整数的项：最多 1 项",
    ),
    (
        _obj(properties=_CARD, dependentRequired={"card": ["cvv"]}),
        {"card": "4242"},
        {"path": "/cvv", "code": "missing", "expected": "required when card is given: a string"},
        "给出 card 时必填：字符串",
    ),
    (
        _obj(
            properties={"a": {"type": "integer"}, "b": {}},
            dependentSchemas={"a": {"properties": {"b": {"type": "string"}}}},
        ),
        {"a": 1, "b": 2},
        {"path": "/b", "code": "type", "expected": "a string", "got": "2"},
        "字符串",
    ),
    (
        _obj(properties={"m": {**_MAP, "propertyNames": {"pattern": "^[a-z]+$"}}}),
        {"m": {"ok": 1, "Bad Key": 2}},
        {
            "path": "/m",
            "code": "pattern",
            "expected": "field names must be a string matching ^[a-z]+$",
            "got": '"Bad Key"',
        },
        "字段名必须是匹配 ^[a-z]+$ 的字符串",
    ),
    (
        _obj(properties={"x": {"not": {"type": "string"}}}),
        {"x": "s"},
        {"path": "/x", "code": "invalid", "expected": "anything except a string", "got": '"s"'},
        "不能是字符串",
    ),
    (
        _obj(properties={"a": {}, "b": {}}, **{"not": {"required": ["a", "b"]}}),
        {"a": 1, "b": 2},
        {
            "path": "",
            "code": "invalid",
            "expected": "anything except an object with all of: a, b",
            "got": '{"a":1,"b":2}',
        },
        "不能是同时包含以下字段的对象：a, b",
    ),
    (
        _obj(properties={"a": {}, "b": {}}, **{"if": {"required": ["a"]}, "then": False}),
        {"a": 1},
        {
            "path": "",
            "code": "invalid",
            "expected": "not allowed when a is given",
            "got": '{"a":1}',
        },
        "在以下条件下不允许：给出了 a",
    ),
    (
        _obj(
            properties={"kind": {"type": "string"}, "b": {}},
            **{"if": {"properties": {"kind": {"const": "x"}}}, "else": False},
        ),
        {"kind": "y"},
        {
            "path": "",
            "code": "invalid",
            "expected": 'only allowed when kind is "x"',
            "got": '{"kind":"y"}',
        },
        '仅在以下条件下允许：kind 为 "x"',
    ),
    (
        _obj(properties={"pet": _PET}),
        {"pet": {"kind": "cow"}},
        {"path": "/pet/kind", "code": "enum", "expected": 'one of "cat", "dog"', "got": '"cow"'},
        '以下值之一："cat", "dog"',
    ),
    (
        _obj(properties={"pet": _PET}),
        {"pet": {"lives": 3}},
        {"path": "/pet/kind", "code": "missing", "expected": 'required: one of "cat", "dog"'},
        '必填：以下值之一："cat", "dog"',
    ),
    (
        _PET["oneOf"][0] | {"oneOf": _PET["oneOf"], "properties": {}},
        {"kind": "cow"},
        {"path": "/kind", "code": "enum", "expected": 'one of "cat", "dog"', "got": '"cow"'},
        '以下值之一："cat", "dog"',
    ),
    (
        _obj(properties={"point": {"prefixItems": [{"type": "number"}] * 2, "items": False}}),
        {"point": [1, 2, 3]},
        {"path": "/point", "code": "length", "expected": "at most 2 items", "got": "[1,2,3]"},
        "最多 2 项",
    ),
]


KEYWORD_IDS = [
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "not",
    "not-required",
    "then-false",
    "else-false",
    "wrong-tag",
    "missing-tag",
    "wrong-tag-at-root",
    "items-false",
]


@pytest.mark.parametrize(
    ("schema", "arguments", "english", "chinese"), KEYWORD_CASES, ids=KEYWORD_IDS
)
def test_keyword_failures_name_what_to_fix(
    schema: dict[str, Any], arguments: Any, english: dict[str, str], chinese: str
) -> None:
    assert _payloads(schema, arguments) == [english]
    (error,) = _payloads(schema, arguments, "zh")
    assert error == {**english, "expected": chinese}


def test_draft7_additional_items_false_says_how_many_items() -> None:
    schema = _obj(
        properties={"pair": {"items": [{"type": "number"}] * 2, "additionalItems": False}},
        **{"$schema": "http://json-schema.org/draft-07/schema#"},
    )
    assert _payloads(schema, {"pair": [1, 2, 3]}) == [
        {"path": "/pair", "code": "length", "expected": "at most 2 items", "got": "[1,2,3]"}
    ]


def test_keyword_failures_leave_what_is_accepted_alone() -> None:
    for schema, arguments, _, _ in KEYWORD_CASES:
        tools = Toolset([{"name": "tool", "parameters": schema}])
        validator = Draft202012Validator(tools.schema("tool"))
        assert not validator.is_valid(arguments), arguments


def test_a_repeated_secret_is_named_by_index_not_shown() -> None:
    schema = _obj(
        properties={
            "keys": {
                "type": "array",
                "items": {"type": "string", "writeOnly": True},
                "uniqueItems": True,
            }
        }
    )
    errors = _payloads(schema, {"keys": ["hunter2", "s3cret", "hunter2"]})
    assert errors == [
        {
            "path": "/keys/2",
            "code": "unique",
            "expected": "no repeated items; this item repeats item 0",
            "got": "[redacted]",
        }
    ]
    assert "hunter2" not in json.dumps(errors)


def test_draft7_dependencies_name_the_missing_field() -> None:
    schema = _obj(properties=_CARD, dependencies={"card": ["cvv"]})
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    assert _payloads(schema, {"card": "4242"}) == [
        {"path": "/cvv", "code": "missing", "expected": "required when card is given: a string"}
    ]


def test_a_draft7_dependency_schema_adds_to_its_owners_object() -> None:
    # As a `dependentSchemas` value does: closed, it would refuse the owner's own fields.
    billing = _obj(properties={"billing": {"type": "string"}}, required=["billing"])
    schema = _obj(
        properties={"name": {"type": "string"}, "card": {"type": "string"}},
        dependencies={"card": billing},
    )
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    assert _run(schema, {"name": "a", "card": "4242", "billing": "x"}) == ([], True, [])
    assert _run(schema, {"name": "a", "card": "4242"})[1:] == (False, ["missing"])


def test_unique_items_compare_as_json_does() -> None:
    # `true` and `1` are different JSON values; `1` and `1.0` are the same number.
    schema = _obj(properties={"t": {"type": "array", "uniqueItems": True}})
    (error,) = _payloads(schema, {"t": [True, 1, 2, 1.0]})
    assert (error["path"], error["expected"]) == (
        "/t/3",
        "no repeated items; this item repeats item 1",
    )


def test_unique_items_are_judged_without_comparing_every_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `jsonschema` compares unsortable items (objects, arrays) pair by pair: 4,000 objects
    # took seconds. Its check must not run at all, and the verdict and the error stay as its.
    compared: list[object] = []
    monkeypatch.setattr(jsonschema._keywords, "uniq", compared.append)  # pyright: ignore[reportPrivateUsage]
    item = _obj(properties={"a": {"type": "string"}}, additionalProperties=False)
    schema = _obj(properties={"x": {"type": "array", "uniqueItems": True, "items": item}})
    many = [{"a": str(i)} for i in range(2000)]
    assert _validated(schema, {"x": many})[1] == []
    assert _errors(schema, {"x": [*many, {"a": "7"}]}) == [("/x/2000", "unique", '{"a":"7"}')]
    assert compared == []


def _json_containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # A named function, not a lambda: hypothesis checks that `extend` uses its argument by
    # reading its source, and a multi-line lambda's source is not always found, which raised a
    # deprecation warning (an error here) in some runs.
    return st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "b"]), inner, max_size=2
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, -0.0, 1.0, 1.5]),
    _json_containers,
    max_leaves=8,
)


def _json_equal(a: Any, b: Any) -> bool:
    """JSON Schema's equality, pair by pair: numbers by value (`1` is `1.0`, `0` is `-0.0`),
    `true` apart from `1`, key order ignored, at any depth."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        pairs = zip(cast("list[Any]", a), cast("list[Any]", b), strict=False)
        return len(cast("list[Any]", a)) == len(cast("list[Any]", b)) and all(
            _json_equal(x, y) for x, y in pairs
        )
    if isinstance(a, dict) and isinstance(b, dict):
        da, db = cast("dict[str, Any]", a), cast("dict[str, Any]", b)
        return da.keys() == db.keys() and all(_json_equal(da[k], db[k]) for k in da)
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(st.lists(_JSON, max_size=5))
def test_unique_items_verdicts_are_json_schema_equality(items: list[Any]) -> None:
    # Checked against the rule itself, pair by pair: `jsonschema`'s own check sorts the items
    # with Python's `==`, where `0 == False`, and then misses repeats that sort apart
    # (it calls `[[0, false], [false, false], [0, false]]` unique).
    schema = {"type": "array", "uniqueItems": True}
    expected = not any(_json_equal(items[i], items[j]) for i in range(len(items)) for j in range(i))
    assert extended_validator(Draft202012Validator)(schema).is_valid(items) is expected


def test_unique_items_finds_a_repeat_that_sorts_apart_from_its_twin() -> None:
    schema = {"type": "array", "uniqueItems": True}
    repeated = [[0, False], [False, False], [0, False]]
    assert not extended_validator(Draft202012Validator)(schema).is_valid(repeated)
    assert extended_validator(Draft202012Validator)(schema).is_valid([[0, False], [False, 0]])


def test_a_pattern_re_warns_about_neither_raises_nor_warns() -> None:
    # `re` warns of a "possible set intersection" in `[&&a]` (ECMA-262 reads the members `&`
    # and `a`), as of a "possible nested set" in `[[:alpha:]]`, which ECMA-262 with the `u`
    # flag refuses (a lone `]`). Under `-W error`, as this suite runs, a warning escaping the
    # build would fail it.
    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^[&&a]+$"}},
    }
    assert _run(schema, {"s": "a&"}) == ([], True, [])
    errors, ok, codes = _run(schema, {"s": "abc"})
    assert errors and not ok and codes == ["pattern"]
    posix = {"type": "object", "properties": {"s": {"type": "string", "pattern": "[[:alpha:]]"}}}
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": posix}])
    assert info.value.path == "/properties/s/pattern"


@pytest.mark.parametrize("field", ["definitions", "$defs"])
@pytest.mark.parametrize("precheck", [True, False])
def test_a_property_named_like_a_definitions_keyword_keeps_its_schema(
    field: str, precheck: bool
) -> None:
    inner = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    tool = {
        "name": "set_config",
        "parameters": {
            "type": "object",
            "properties": {field: inner, "version": {"type": "integer"}},
            "required": [field, "version"],
        },
    }
    tools = Toolset([tool], strict=False)
    for schema in (
        tools.schema("set_config"),
        tools.openai()[0]["function"]["parameters"],
        tools.anthropic()[0]["input_schema"],
    ):
        assert schema["properties"][field]["required"] == ["name"]
    for arguments, ok in (
        ({field: {"name": "a"}, "version": 1}, True),
        ({field: 42, "version": 1}, False),
        ({field: {"name": 5}, "version": 1}, False),
    ):
        asm = Assembler(tools=tools) if precheck else Assembler()
        asm.feed(0, id="c1", name="set_config", arguments=json.dumps(arguments))
        (done,) = asm.finish()
        assert tools.validate(done).ok is ok, arguments


def test_a_model_field_aliased_to_a_definitions_keyword_exports_strict() -> None:
    class Form(BaseModel):
        """Save a form."""

        defs: str = Field(alias="$defs")
        definitions: int

    function = Toolset([Form]).openai()[0]["function"]
    assert function["strict"] is True
    assert set(function["parameters"]["properties"]) == {"$defs", "definitions"}


def test_values_that_look_like_references_are_data() -> None:
    looks_like = {"$ref": "#/nowhere", "definitions": {"a": 1}}
    tool = {
        "name": "t",
        "parameters": {
            "type": "object",
            "properties": {
                "a": {"type": "object", "default": looks_like, "examples": [looks_like]},
                "b": {"const": looks_like},
                "c": {"type": "string", "x-meta": looks_like, "$comment": "x"},
            },
        },
    }
    props = Toolset([tool], strict=False).schema("t")["properties"]
    assert props["a"]["default"] == looks_like
    assert props["a"]["examples"] == [looks_like]
    assert props["b"]["const"] == looks_like
    assert props["c"]["x-meta"] == looks_like


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    "nickname",
    [
        {"type": "string", "nullable": True},
        {"type": "string", "enum": ["a", "b"], "nullable": True},
        {"allOf": [{"type": "string", "nullable": True}]},
    ],
)
def test_a_null_that_openapi_nullable_admits_is_kept(
    nickname: dict[str, Any], precheck: bool
) -> None:
    # A PATCH-style tool: null clears the field, absence leaves it as it is.
    tool = {
        "name": "update_user",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "nickname": nickname},
            "required": ["id"],
        },
    }
    tools = Toolset([tool])
    asm = Assembler(tools=tools) if precheck else Assembler()
    asm.feed(0, id="c1", name="update_user", arguments='{"id": 7, "nickname": null}')
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert (outcome.ok, outcome.value, outcome.coercions) == (
        True,
        {"id": 7, "nickname": None},
        [],
    )


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    "field",
    [
        # `nullable` lets null past `type` and `enum` only: a union or a `const` still refuses
        # it, so an optional field's null is read as absent, as without `nullable`.
        {"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
        {"oneOf": [{"type": "string"}, {"type": "integer"}], "nullable": True},
        {"type": "string", "const": "x", "nullable": True},
        {"type": "string", "enum": ["a", None]},
    ],
)
def test_a_null_that_only_nullable_would_admit_past_other_keywords_is_absent(
    field: dict[str, Any], precheck: bool
) -> None:
    tool = {"name": "t", "parameters": {"type": "object", "properties": {"a": field}}}
    tools = Toolset([tool], strict=False)
    asm = Assembler(tools=tools) if precheck else Assembler()
    asm.feed(0, id="c1", name="t", arguments='{"a": null}')
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert outcome.ok and outcome.value == {}
    assert [c.rule for c in outcome.coercions] == ["null_as_absent"]


def test_a_backtracking_pattern_cannot_stall_validation() -> None:
    # `re` needs time exponential in the word's length to refuse these; the text is model
    # output, so each search is bounded and one that runs out of time refuses the value.
    for pattern, text in ((r"^(\w+\s?)*$", "a" * 60 + "!"), (r"^(a|aa)+$", "a" * 80 + "b")):
        schema = _obj(properties={"title": {"type": "string", "pattern": pattern}})
        started = time.perf_counter()
        errors, ok, codes = _run(schema, {"title": text})
        assert time.perf_counter() - started < 5
        assert errors and not ok and codes == ["pattern"]
        assert _run(schema, {"title": "a" * 8})[1]
    keyed = _obj(patternProperties={r"^(a|aa)+$": {"type": "integer"}}, additionalProperties=False)
    started = time.perf_counter()
    assert not _run(keyed, {"a" * 80 + "b": 1})[1]
    assert time.perf_counter() - started < 5


def _every_search_out_of_time(monkeypatch: pytest.MonkeyPatch) -> tuple[list[float], list[float]]:
    """A clock that moves only as the engine spends its time, and an engine whose every search
    runs out of it: the clock's reading (`[seconds]`, settable) and each search's timeout."""
    now = [0.0]
    timeouts: list[float] = []

    def out_of_time(compiled: Any, text: str, timeout: float) -> bool:
        timeouts.append(timeout)
        now[0] += timeout
        raise TimeoutError

    monkeypatch.setattr(jsonschema_dialect, "_clock", lambda: now[0])
    monkeypatch.setattr(jsonschema_dialect, "_engine_search", out_of_time)
    return now, timeouts


def test_one_validation_shares_one_bound_for_its_pattern_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each search is bounded, but a call that repeats a slow string in every item cost the
    # bound per item (seconds for a few kilobytes). Searches that all run out of time count.
    _, timeouts = _every_search_out_of_time(monkeypatch)
    item = {"type": "string", "pattern": "^(a|a)+$"}
    schema = _obj(properties={"x": {"type": "array", "items": item}}, required=["x"])
    tools = Toolset([{"name": "tool", "parameters": schema}])
    text = json.dumps({"x": ["a" * 30 + "!"] * 200})
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=text)
    (call,) = assembler.finish()
    for _ in range(2):
        timeouts.clear()
        outcome = tools.validate(call)
        assert not outcome.ok and {e.code for e in outcome.errors} == {"pattern"}
        # The first search gets its own bound (in two tries, see the next test); all of them
        # together no more than the budget, and every search after it counts as run out of
        # time without running. Each call to `validate` has a budget of its own.
        assert sum(timeouts[:2]) == pytest.approx(jsonschema_dialect.PATTERN_SECONDS)
        budget = jsonschema_dialect.budget_seconds(len(text))
        assert sum(timeouts) == pytest.approx(budget)
        # (Rounding leaves the budget a remainder of some 1e-16 s, given to a try or two.)
        real = [t for t in timeouts if t > 1e-9]
        assert len(real) <= 2 * (budget // jsonschema_dialect.PATTERN_SECONDS + 1)


def test_the_time_a_validation_spends_between_its_searches_is_not_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The budget was a deadline half a second after validation began: the rest of the walk
    # (a large call, a loaded host) spent it, and every later search then counted as run out
    # of time. 50,000 tags of "abc" under `^[a-z]+$` were refused from the 5,000th on, at
    # whatever item the clock said. A clock that moves a second between searches only:
    now = [0.0]
    searched = jsonschema_dialect.search

    def slow_between(pattern: str, text: str, *, out_of_time: bool = False) -> bool:
        now[0] += 1.0
        return searched(pattern, text, out_of_time=out_of_time)

    monkeypatch.setattr(jsonschema_dialect, "_clock", lambda: now[0])
    monkeypatch.setattr(jsonschema_dialect, "search", slow_between)
    item = {"type": "string", "pattern": "^[a-z]+$"}
    schema = _obj(properties={"tags": {"type": "array", "items": item}})
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps({"tags": ["abc"] * 3}))
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert (outcome.ok, outcome.errors) == (True, [])


def test_a_large_valid_call_is_not_refused_for_its_many_quick_searches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fixed half second for all the searches refused 150,000 tags of "abc" under
    # `^[a-z]+$` (1 MB) from about the 60,000th item: each search is quick, but they are many,
    # and every one past the budget counted as no match, blaming a valid string. The real
    # engine, on a clock that moves 50 microseconds a search (a loaded host):
    now = [0.0]
    engine = jsonschema_dialect._engine_search

    def loaded(compiled: Any, text: str, timeout: float) -> bool:
        now[0] += 50e-6
        return engine(compiled, text, timeout)

    monkeypatch.setattr(jsonschema_dialect, "_clock", lambda: now[0])
    monkeypatch.setattr(jsonschema_dialect, "_engine_search", loaded)
    item = {"type": "string", "pattern": "^[a-z]+$"}
    schema = _obj(properties={"tags": {"type": "array", "items": item}})
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler()
    count = 20_000
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps({"tags": ["abc"] * count}))
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert (outcome.ok, outcome.errors) == (True, [])
    # Past the fixed half second, within the budget of a call its size.
    assert jsonschema_dialect.PATTERN_BUDGET_SECONDS < now[0] == pytest.approx(count * 50e-6)
    assert now[0] < jsonschema_dialect.budget_seconds(len(call.arguments))


def test_the_searches_of_a_large_call_are_still_bounded_by_its_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The budget grows with the call, never past a constant per character: a call of slow
    # strings, every search of which runs out of time, spends the budget of its size and no
    # more, whatever the number of its items.
    now, timeouts = _every_search_out_of_time(monkeypatch)
    item = {"type": "string", "pattern": "^(a|a)+$"}
    schema = _obj(properties={"x": {"type": "array", "items": item}}, required=["x"])
    tools = Toolset([{"name": "tool", "parameters": schema}])
    for count in (10, 2_000):
        assembler = Assembler()
        text = json.dumps({"x": ["a" * 30 + "!"] * count})
        assembler.feed(0, id="call_1", name="tool", arguments=text)
        (call,) = assembler.finish()
        timeouts.clear()
        now[0] = 0.0
        outcome = tools.validate(call)
        assert not outcome.ok and {e.code for e in outcome.errors} == {"pattern"}
        assert max(timeouts) <= jsonschema_dialect.PATTERN_SECONDS
        budget = jsonschema_dialect.budget_seconds(len(text))
        assert now[0] == pytest.approx(min(budget, count * jsonschema_dialect.PATTERN_SECONDS))
    # 2,000 items of 34 characters: a budget of 0.5 s and 10 microseconds a character.
    assert jsonschema_dialect.budget_seconds(len(text)) == pytest.approx(0.5 + 10e-6 * len(text))


def test_a_catastrophic_pattern_on_one_long_string_is_still_stopped() -> None:
    # The budget of a large call is no licence for one search to run long: each stops after
    # `PATTERN_SECONDS`, and the value counts as not matching. On the real engine and clock,
    # a string of 100,000 characters, which gives the validation a budget of a second:
    schema = _obj(properties={"s": {"type": "string", "pattern": "^(\\w+\\s?)*$"}})
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps({"s": "a" * 99_990 + "!"}))
    (call,) = assembler.finish()
    started = time.perf_counter()
    outcome = tools.validate(call)
    assert [(e.path, e.code) for e in outcome.errors] == [("/s", "pattern")]
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("precheck", [True, False])
def test_a_key_whose_pattern_search_runs_out_of_time_is_held_to_the_patterns_schema(
    monkeypatch: pytest.MonkeyPatch, precheck: bool
) -> None:
    # A search that ran out of time (its own bound, or the validation's spent budget) read as
    # "this pattern takes no such key": in an open map the value then escaped the pattern's
    # schema, and `{"k1": "x"}` passed where `^k` holds integers, the pre-check's own refusal
    # of it overruled. An engine whose every search runs out of time:
    _every_search_out_of_time(monkeypatch)
    schema = _obj(patternProperties={"^k": {"type": "integer"}}, additionalProperties=True)
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools) if precheck else Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments='{"k1": "x"}')
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [("/k1", "type")]


@pytest.mark.parametrize("share", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("needs", [0.001, 0.04, math.inf])
def test_a_pattern_search_is_bounded_on_the_wall_clock(
    monkeypatch: pytest.MonkeyPatch, share: float, needs: float
) -> None:
    # `regex` stops a search after a CPU time (C's `clock()`), and a process given a tenth of
    # a core searched for ten times `PATTERN_SECONDS`. An engine that spends CPU time at
    # `share` of the wall clock's pace, on a search that needs `needs` of it to finish:
    now = [0.0]
    given: list[float] = []

    def engine(compiled: Any, text: str, timeout: float) -> bool:
        given.append(timeout)
        now[0] += min(needs, timeout) / share
        if needs > timeout:
            raise TimeoutError
        return True

    monkeypatch.setattr(jsonschema_dialect, "_clock", lambda: now[0])
    monkeypatch.setattr(jsonschema_dialect, "_engine_search", engine)
    seconds = jsonschema_dialect.PATTERN_SECONDS
    found = jsonschema_dialect.search("^(a|aa)+$", "a" * 60 + "!", out_of_time=False)
    assert now[0] <= seconds + 1e-9
    # A search that finds its answer in its first tenth runs once; the second try gets the
    # CPU time the share gives in the rest (at a full share, all but that tenth).
    first = seconds * jsonschema_dialect._FIRST_SLICE
    assert found == (needs <= max(first, seconds * share - first)), given
    assert len(given) == 1 if needs <= first else 1 <= len(given) <= 2


_WORDS = [f"w{i:05d}{chr(97 + i % 26)}x" for i in range(5000)]


@pytest.mark.parametrize(
    ("where", "pattern", "reason"),
    [
        # A 50,000-character alternation of words: seconds to compile, and a search on a long
        # string overran its timeout tenfold.
        ("pattern", "(?:" + "|".join(_WORDS) + ")", "at most 5,000 characters (it has 45,003)"),
        # A long literal in a repeat: one search took seconds on 5,000 characters.
        ("pattern", "^(?:" + "a" * 2000 + "){1,50}$", "at most 256 characters (one has 2,000)"),
        ("pattern", "^" + "\\." * 257 + "$", "(one has 257)"),
        ("patternProperties", "^(?<k>" + "key" * 100 + ")$", "(one has 300)"),
    ],
    ids=["alternation", "literal", "escaped", "key"],
)
def test_a_pattern_too_large_to_search_in_bounded_time_is_refused_at_build(
    where: str, pattern: str, reason: str
) -> None:
    # `regex` reads the clock only between steps of its own, and a run of literal text is one:
    # the timeout did not bound such searches. Refused as a pattern that does not compile is.
    if where == "pattern":
        schema = _obj(properties={"s": {"type": "string", "pattern": pattern}})
    else:
        schema = _obj(patternProperties={pattern: {"type": "integer"}})
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert info.value.keyword == where and reason in info.value.expected
    with pytest.raises(jsonschema_dialect.PatternTooLargeError):
        jsonschema_dialect.search(pattern, "a")


def test_a_pattern_at_the_size_limits_is_built_and_searched() -> None:
    # Repeats written as counts, classes and groups are no literal text, however long the
    # pattern they make; a run of literal text at the limit still compiles.
    literal = "ab" * (jsonschema_dialect.MAX_PATTERN_LITERAL // 2)
    for pattern, good, bad in (
        (f"^{literal}$", literal, literal + "!"),
        ("^(?:" + "a{200}[b-c]" * 200 + ")$", ("a" * 200 + "b") * 200, "a" * 5000 + "!"),
        ("^(?<v>" + "|".join(_WORDS[:400]) + ")$", _WORDS[399], _WORDS[400]),
    ):
        assert len(pattern) <= jsonschema_dialect.MAX_PATTERN_CHARS
        schema = _obj(properties={"s": {"type": "string", "pattern": pattern}}, required=["s"])
        assert _run(schema, {"s": good})[1]
        assert not _run(schema, {"s": bad})[1]


def test_a_union_that_names_itself_validates() -> None:
    # `A = anyOf[integer, $ref A]`: a union reached again for the same value adds nothing.
    looped = _obj(
        properties={"a": {"$ref": "#/$defs/A"}},
        **{"$defs": {"A": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/A"}]}}},
    )
    assert _run(looped, {"a": 1}) == ([], True, [])
    # The loop adds no way to match: what the integer branch refuses, the union refuses.
    assert _run(looped, {"a": "x"})[1:] == (False, ["type"])
    assert _run(looped, {"a": 1.5})[1:] == (False, ["type"])
    expr = _obj(
        properties={"e": {"$ref": "#/$defs/Expr"}},
        required=["e"],
        **{
            "$defs": {
                "Expr": {
                    "anyOf": [
                        {"type": "number"},
                        {"$ref": "#/$defs/Group"},
                        _obj(
                            properties={
                                "op": {"enum": ["+", "-"]},
                                "args": {"type": "array", "items": {"$ref": "#/$defs/Expr"}},
                            },
                            required=["op", "args"],
                        ),
                    ]
                },
                "Group": {"anyOf": [{"$ref": "#/$defs/Expr"}]},
            }
        },
    )
    assert _run(expr, {"e": {"op": "+", "args": [1, {"op": "-", "args": [2, 3]}]}})[1]
    assert not _run(expr, {"e": "str"})[1]
    assert not _run(expr, {"e": {"op": "*", "args": [1]}})[1]
    assert not _run(expr, {"e": {"op": "+", "args": [1, {"op": "-", "args": [2, "3"]}]}})[1]
    # The whole schema named from inside itself (OpenAI's recursive `#`), for the same value.
    rooted = {"anyOf": [_obj(properties={"x": {"type": "integer"}}, required=["x"]), {"$ref": "#"}]}
    assert _run(rooted, {"x": 1})[1:] == (True, [])
    assert not _run(rooted, {"x": "s"})[1]


def test_a_loop_through_a_reference_is_read_the_same_from_every_thread() -> None:
    # The references running are per context: threads validating at once must not take each
    # other's evaluations for loops of their own.
    looped = _obj(
        properties={"a": {"$ref": "#/$defs/A"}},
        **{"$defs": {"A": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/A"}]}}},
    )
    tools = Toolset([{"name": "tool", "parameters": looped}])

    def verdict(value: object) -> bool:
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="c", name="tool", arguments=json.dumps({"a": value}))
        (call,) = assembler.finish()
        return tools.validate(call).ok

    values = [i if i % 2 else f"s{i}" for i in range(400)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = list(pool.map(verdict, values))
    assert verdicts == [isinstance(v, int) for v in values]


def test_a_dynamic_reference_keeps_the_definitions_it_resolves_through() -> None:
    schema = _obj(
        properties={"a": {"$dynamicRef": "#meta"}},
        **{"$defs": {"X": {"$dynamicAnchor": "meta", "type": "integer"}}},
    )
    assert _run(schema, {"a": 1})[1:] == (True, [])
    assert _run(schema, {"a": "x"})[1:] == (False, ["type"])


def test_an_optional_fields_early_error_names_the_value_inside_it() -> None:
    # An optional field is `anyOf [its schema, null]` to the pre-check; once its first byte
    # has ruled out null, the error is the one inside it, as for a required field.
    schema = _obj(
        properties={
            "req": {"type": "array", "items": {"type": "integer"}},
            "opt": {"type": "array", "items": {"type": "integer"}},
            "obj": _obj(properties={"n": {"type": "integer"}}),
        },
        required=["req"],
    )
    tools = Toolset([{"name": "tool", "parameters": schema}])

    def early(arguments: str) -> list[tuple[str, str | None]]:
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="c", name="tool", arguments=arguments)
        shown = [(e.path, e.expected) for _, e in assembler.drain_errors()]
        (call,) = assembler.finish()
        assert call.error is not None and (call.error.path, call.error.expected) == shown[0]
        return shown

    assert early('{"req": [1, "x"]}') == [("/req/1", "integer")]
    assert early('{"req": [], "opt": [1, "x"]}') == [("/opt/1", "integer")]
    # `n` is optional too: its own union failed, and says what it takes.
    assert early('{"req": [], "obj": {"n": "x"}}') == [("/obj/n", "integer or null")]
    assert early('{"req": [], "opt": "x"}') == [("/opt", "array or null")]


_URN = "urn:uuid:deadbeef-1234-ffff-ffff-4321feebdaed"


@pytest.mark.parametrize(
    ("schema", "instances"),
    [
        # JSON-Schema-Test-Suite, ref.json: "root pointer ref" and "simple URN base URI with
        # $ref via the URN". The arguments are an object, so `type: object` is added to the
        # tool's root; a reference to the root below it is to the schema as written, which
        # takes other values as well.
        (
            {"properties": {"foo": {"$ref": "#"}}, "additionalProperties": False},
            [
                ({"foo": False}, True),
                ({"foo": {"foo": False}}, True),
                ({"foo": {"foo": {"foo": 1}}}, True),
                ({"bar": False}, False),
                ({"foo": {"bar": False}}, False),
            ],
        ),
        (
            {"$id": _URN, "minimum": 30, "properties": {"foo": {"$ref": _URN}}},
            [({"foo": 37}, True), ({"foo": 12}, False), ({"foo": {"foo": 31}}, True)],
        ),
        (
            {"properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}},
            [({"next": None}, True), ({"next": {"next": None}}, True), ({"next": 5}, True)],
        ),
    ],
)
def test_a_reference_to_the_root_is_to_the_schema_as_written(
    schema: dict[str, Any], instances: list[tuple[Any, bool]]
) -> None:
    oracle = Draft202012Validator(schema)
    for instance, valid in instances:
        assert oracle.is_valid(instance) is valid
        errors, ok, codes = _run(schema, instance)
        if valid:
            # Nor does the pre-check, which compiles the same prepared schema, flag it.
            assert (errors, ok, codes) == ([], True, []), instance
        else:
            assert not ok and codes, instance


def test_a_declared_draft_keeps_its_readings_under_a_reference_to_the_root() -> None:
    # Inlining copies the root, `$schema` and all, where `#` is referenced: the copy must be
    # read with the same extended validator as the root, not plain `jsonschema`.
    tree = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "price": {"type": "number", "multipleOf": 0.01},
            "name": {"type": "string", "pattern": "^\\p{L}+$"},
            "kids": {"type": "array", "items": {"$ref": "#"}},
        },
    }
    assert _run(tree, {"price": 19.99})[1:] == (True, [])
    assert _run(tree, {"kids": [{"price": 19.99}]})[1:] == (True, [])
    assert _run(tree, {"kids": [{"name": "Zoë"}]})[1:] == (True, [])
    assert not _run(tree, {"kids": [{"name": "Zoë1"}]})[1]
    looped = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"$ref": "#"}],
    }
    assert _run(looped, {"a": 1, "b": "x"})[1]
    assert not _run(looped, {"b": "x"})[1]


def test_a_dollar_schema_that_is_data_stays() -> None:
    # Only the keyword leaves the subschemas (see above): a property named `$schema` (a config
    # writer's argument) and a `$schema` key inside a `const` or `enum` value are the tool's.
    config = _obj(
        properties={"$schema": {"type": "string"}, "name": {"type": "string"}}, required=["name"]
    )
    document = {"$schema": "https://json.schemastore.org/package.json", "name": "x"}
    assert _run(config, document) == ([], True, [])
    pinned = _obj(properties={"c": {"const": {"$schema": "v1"}}, "e": {"enum": [{"$schema": 2}]}})
    assert _run(pinned, {"c": {"$schema": "v1"}, "e": {"$schema": 2}}) == ([], True, [])
    for wrong in ({"c": {}}, {"e": {}}):
        errors, ok, codes = _run(pinned, wrong)
        assert errors and (ok, codes) == (False, ["enum"])


def test_arguments_too_deep_for_validation_are_refused_with_an_outcome() -> None:
    # An assembler may allow deeper nesting than Python's stack can validate.
    node = _obj(
        properties={"v": {"type": "integer"}, "c": {"type": "array", "items": {"$ref": "#"}}}
    )
    tools = Toolset([{"name": "tool", "parameters": node}])
    value: dict[str, Any] = {"v": 1, "c": []}
    for _ in range(250):
        value = {"v": 1, "c": [value]}
    # The assembler stops at 128 levels; a call from elsewhere (a stored one) may be deeper.
    call = SimpleNamespace(
        ordinal=0, index=0, id="c", name="tool", arguments=json.dumps(value), error=None
    )
    call.value = value
    outcome = tools.validate(call)
    assert not outcome.ok and outcome.error_type == "too_large"


def test_keys_beside_a_recursive_reference_apply_at_every_depth() -> None:
    # `required` beside the reference that recurses: inlining expands the definition once,
    # then keeps the reference, and the keys beside it must stay with it.
    schema = _obj(
        properties={"root": {"$ref": "#/$defs/N"}},
        **{
            "$defs": {
                "N": _obj(
                    properties={
                        "w": {"type": "integer"},
                        "kids": {
                            "type": "array",
                            "items": {"$ref": "#/$defs/N", "required": ["w"]},
                        },
                    }
                )
            }
        },
    )
    assert _run(schema, {"root": {"kids": [{"w": 1, "kids": [{"w": 2}]}]}})[1:] == (True, [])
    assert _run(schema, {"root": {"kids": [{"w": 1, "kids": [{}]}]}})[1:] == (False, ["missing"])
    assert _run(schema, {"root": {"kids": [{"kids": []}]}})[1:] == (False, ["missing"])


def test_unevaluated_properties_beside_a_reference_loop_never_escape_validate() -> None:
    # jsonschema's walk for `unevaluatedProperties` follows the loop itself, to the recursion
    # limit (raised as a RecursionError, or as a panic of its `rpds` maps): whatever the
    # depth the validation starts at, the call gets an outcome, and a value that breaks the
    # schema is never accepted.
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "anyOf": [{"$ref": "#/$defs/L"}],
        "unevaluatedProperties": False,
        "$defs": {
            "L": {"anyOf": [{"properties": {"b": {"type": "integer"}}}, {"$ref": "#/$defs/L"}]}
        },
    }

    def at_depth(depth: int) -> bool:
        return at_depth(depth - 1) if depth else _run(schema, {"a": 1, "b": 2, "c": 3})[1]

    assert not any(at_depth(depth) for depth in range(0, 300, 25))


@pytest.mark.parametrize(
    ("keywords", "arguments"),
    [
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2}),
        ({"dependencies": {"a": ["b"]}}, {"a": 1, "b": 2}),
        ({"unevaluatedProperties": True}, {"a": 1, "z": 2}),
        ({"unevaluatedProperties": {"type": "integer"}}, {"a": 1, "z": 2}),
        ({"propertyNames": {"maxLength": 3}}, {"a": 1, "zz": 2}),
        ({"minProperties": 2}, {"a": 1, "z": 2}),
    ],
)
def test_an_object_whose_keywords_expect_other_properties_stays_open(
    keywords: dict[str, Any], arguments: dict[str, Any]
) -> None:
    # Closed, these objects would refuse the very properties their keywords ask for or allow.
    schema = _obj(properties={"a": {}}, **keywords)
    assert "additionalProperties" not in Toolset([{"name": "t", "parameters": schema}]).schema("t")
    assert _run(schema, arguments) == ([], True, [])


def test_an_object_that_asks_nothing_more_is_still_closed() -> None:
    schema = _obj(properties={"a": {}}, minProperties=1, dependentRequired={"a": ["a"]})
    assert _run(schema, {"a": 1})[1]
    assert not _run(schema, {"a": 1, "z": 2})[1]


@pytest.mark.parametrize(
    ("keywords", "value", "ok"),
    [
        ({"type": "string", "maxLength": 2**64}, "x", True),
        ({"type": "array", "maxItems": 2**70}, [1], True),
        ({"type": "string", "minLength": 2**64}, "x", False),
    ],
)
def test_a_count_past_any_reachable_one_compiles(
    keywords: dict[str, Any], value: Any, ok: bool
) -> None:
    # A bound above 2**64 - 1 is valid JSON Schema; it bounds nothing more than that one does.
    assert _run(_obj(properties={"a": keywords}), {"a": value})[1] is ok


_NO_ROUNDING = "this field takes a whole number; do not round, send the intended integer"
_OUT_OF_RANGE = "this number is too large or too small to be stored; send the intended value"


def _numbers_checked(schema: dict[str, Any], text: str, coercion: Literal["safe", "none"]) -> Any:
    """`text` in one fragment to a one-tool toolset with `coercion`: the outcome."""
    tools = Toolset([{"name": "tool", "parameters": schema}], coercion=coercion)
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=text)
    (call,) = assembler.finish()
    return tools.validate(call)


@pytest.mark.parametrize(
    ("rule", "number"),
    [
        ({"enum": [1, 1.0]}, "1.0"),
        ({"const": 1}, "1.0"),
        ({"const": 0}, "-0.0"),
        ({"enum": [0]}, "0.0"),
        ({"enum": [100]}, "1E+2"),
        ({"enum": [1, "a"]}, "1.0"),
    ],
)
def test_enum_and_const_compare_numbers_by_value_without_coercion(
    rule: dict[str, Any], number: str
) -> None:
    # JSON Schema compares numbers by value: `1.0` is the member `1`. Strict Pydantic would
    # take it as the int, which a model's tool must not get without a recorded rule; a plain
    # tool gets the number as the model wrote it, so there is nothing to refuse.
    schema = _obj(properties={"x": rule}, required=["x"])
    outcome = _numbers_checked(schema, f'{{"x": {number}}}', "none")
    assert outcome.ok and outcome.coercions == [], outcome.errors
    assert outcome.value == {"x": float(number)}
    # Another number, or a boolean, is still no member.
    assert not _numbers_checked(schema, '{"x": 1.5}', "none").ok
    assert not _numbers_checked(schema, '{"x": true}', "none").ok


@pytest.mark.parametrize("coercion", ["safe", "none"])
@pytest.mark.parametrize("number", ["5.0000000000000001", "999.9999999999999999", "1e-400"])
def test_a_fraction_a_float_rounds_to_a_whole_number_is_no_integer(
    coercion: Literal["safe", "none"], number: str
) -> None:
    # A float reads each as a whole number, which `jsonschema` takes for an integer: the tool
    # got 1000.0 for 999.9999999999999999. Judged as written, as Pydantic judges it, none is
    # one, wherever the integer is declared (coercion walks `properties` and `items`, not the
    # rest), whatever the rule set.
    count = {"type": "integer", "minimum": 0}
    cases = [
        (_obj(properties={"count": count}), '{"count": N}', "/count"),
        (
            _obj(properties={"counts": {"type": "array", "items": count}}),
            '{"counts": [1, N]}',
            "/counts/1",
        ),
        (_obj(patternProperties={"^count": count}), '{"count": N}', "/count"),
        (
            _obj(
                properties={"unit": {"type": "string"}, "count": {}},
                **{"if": {"required": ["unit"]}, "then": {"properties": {"count": count}}},
            ),
            '{"unit": "box", "count": N}',
            "/count",
        ),
    ]
    for schema, text, path in cases:
        outcome = _numbers_checked(schema, text.replace("N", number), coercion)
        assert not outcome.ok, (schema, outcome.value)
        # Where the field itself is untyped (the integer comes from `then`), a number a float
        # reads as zero is refused as past any float before anything else judges it.
        untyped = "if" in schema and number == "1e-400"
        hint = _OUT_OF_RANGE if untyped else _NO_ROUNDING
        assert [(e.path, e.code, e.got, e.hint) for e in outcome.errors] == [
            (path, "type", number, hint)
        ]


@pytest.mark.parametrize("coercion", ["safe", "none"])
def test_an_integer_past_a_float_is_an_exact_int_for_a_plain_tool(
    coercion: Literal["safe", "none"],
) -> None:
    # A plain tool's value keeps integers exact (as `jsonschema` reads them), so a `number`
    # field takes one a float would read as infinity, as an `integer` or untyped field does;
    # it was refused as a wrong type. Written with an exponent it is a float, infinity, and
    # still refused.
    big = "1" + "0" * 309
    for field in ({"type": "number"}, {"type": ["number", "null"]}, {"type": "integer"}, {}):
        schema = _obj(properties={"n": field})
        outcome = _numbers_checked(schema, f'{{"n": {big}}}', coercion)
        assert outcome.ok and outcome.value == {"n": int(big)}, field
        outcome = _numbers_checked(schema, '{"n": 1e400}', coercion)
        assert [(e.path, e.code, e.hint) for e in outcome.errors] == [
            ("/n", "type", _OUT_OF_RANGE)
        ], field


@pytest.mark.parametrize(
    ("field", "number"),
    [
        ({"type": "number"}, "1e400"),
        ({"type": "number", "minimum": 0}, "1e-400"),
        ({"type": "number", "multipleOf": 0.01}, "9" * 400 + ".25"),
        ({}, "-1e400"),
    ],
)
def test_a_number_no_float_holds_is_described_by_the_range_it_missed(
    field: dict[str, Any], number: str
) -> None:
    # Refused as the tool would get infinity or zero for it, the model was told it had sent
    # no number ("expected a number" for 1e400): it is told the range a float holds.
    outcome = _numbers_checked(_obj(properties={"x": field}), f'{{"x": {number}}}', "safe")
    (error,) = outcome.errors
    assert (error.path, error.code, error.hint) == ("/x", "type", _OUT_OF_RANGE)
    assert error.expected == (
        "a number a float can hold (at most about 1.8e308 in size, and 0 or at least 5e-324)"
    )
    tools = Toolset([{"name": "tool", "parameters": _obj(properties={"x": field})}], lang="zh")
    (error,) = tools.validate(_prechecked_call(tools, f'{{"x": {number}}}')).errors
    assert error.expected.startswith("浮点数可表示的数字")


@pytest.mark.parametrize("coercion", ["safe", "none"])
@pytest.mark.parametrize("number", ["1e400", "-1e400", "1e-400"])
@pytest.mark.parametrize(
    "field",
    [
        {"allOf": [{"type": "number"}]},
        {"allOf": [{"$ref": "#/$defs/amount"}], "description": "OpenAPI's ref with a sibling"},
        {"not": {"type": "string"}},
        {"if": {"type": "number"}, "then": {"minimum": -1e300}},
        {"type": "array", "items": {"not": {"type": "string"}}},
    ],
)
def test_a_number_no_float_holds_is_refused_where_no_type_is_beside_it(
    field: dict[str, Any], number: str, coercion: Literal["safe", "none"]
) -> None:
    # A field whose type is only inside `allOf` (or that says only what it is not) got
    # `inf` or `0.0` for what the model wrote, while `{}` and `{"type": "number"}` refused it.
    schema = _obj(properties={"x": field}, **{"$defs": {"amount": {"type": "number"}}})
    array = field.get("type") == "array"
    outcome = _numbers_checked(schema, f'{{"x": {f"[{number}]" if array else number}}}', coercion)
    assert [(e.path, e.code, e.got, e.hint) for e in outcome.errors] == [
        ("/x/0" if array else "/x", "type", number, _OUT_OF_RANGE)
    ], outcome.value


def _prechecked_call(tools: Toolset, text: str) -> Any:
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=text)
    (call,) = assembler.finish()
    return call


_NODE = {
    "type": "object",
    "properties": {
        "size": {"type": "integer"},
        "next": {"anyOf": [{"type": "null"}, {"allOf": [{"$ref": "#/$defs/Node"}]}]},
    },
    "required": ["size"],
}


@pytest.mark.parametrize(
    ("schema", "arguments", "expected"),
    [
        # OpenAPI generators write a reference with a description as `allOf: [$ref]`.
        (
            _obj(
                properties={
                    "next": {"anyOf": [{"type": "null"}, {"allOf": [{"$ref": "#/$defs/Node"}]}]}
                },
                **{"$defs": {"Node": _NODE}},
            ),
            '{"next": {"size": 1, "next": {"size": "big"}}}',
            [("/next/next/size", "type", '"big"')],
        ),
        (
            _obj(
                properties={
                    "next": {
                        "oneOf": [
                            {"type": "string"},
                            {
                                "allOf": [
                                    _obj(
                                        properties={"size": {"type": "integer"}}, required=["size"]
                                    )
                                ]
                            },
                        ]
                    }
                }
            ),
            '{"next": {}}',
            [("/next/size", "missing", None)],
        ),
        (
            _obj(
                properties={
                    "ids": {
                        "anyOf": [
                            {"type": "null"},
                            {"allOf": [{"type": "array", "items": {"type": "integer"}}]},
                        ]
                    }
                }
            ),
            '{"ids": [1, "x"]}',
            [("/ids/1", "type", '"x"')],
        ),
    ],
)
def test_a_member_an_all_of_inside_a_union_branch_declares_is_named_at_its_path(
    schema: dict[str, Any], arguments: str, expected: list[tuple[str, str, str | None]]
) -> None:
    # The member's key was read as a union tag and left out of the pointer: the model heard
    # that `/next` was "an integer", with the member's value as `got`.
    tools = Toolset([{"name": "tool", "parameters": schema}])
    outcome = tools.validate(_prechecked_call(tools, arguments))
    assert [(e.path, e.code, e.got) for e in outcome.errors] == expected


def test_whole_numbers_written_with_a_fraction_or_an_exponent_keep_their_reading() -> None:
    # `1e2`, `1.0e2` and `100.0` are the integer 100 (`integral_number`, recorded); a number
    # field takes 999.9999999999999999 as the float it reads, and hands the tool a plain one.
    schema = _obj(properties={"count": {"type": "integer"}, "ratio": {"type": "number"}})
    for number in ("1e2", "1.0e2", "100.0"):
        outcome = _numbers_checked(schema, f'{{"count": {number}}}', "safe")
        assert outcome.ok and outcome.value == {"count": 100}
        assert [c.rule for c in outcome.coercions] == ["integral_number"]
    outcome = _numbers_checked(schema, '{"ratio": 999.9999999999999999}', "safe")
    assert outcome.ok and outcome.value == {"ratio": 1000.0}
    assert type(outcome.value["ratio"]) is float


@pytest.mark.parametrize(
    ("field", "arguments"),
    [
        ({"type": "integer", "multipleOf": 3}, '{"v": 1.00}'),
        ({"type": "integer", "minimum": 5}, '{"v": 1e0}'),
        ({"type": "integer", "maximum": 1}, '{"v": 20.0E-1}'),
    ],
)
def test_a_whole_number_written_with_a_fraction_is_shown_as_written(
    field: dict[str, Any], arguments: str
) -> None:
    # An integer field reads `1.00` as the integer 1 (`integral_number`), and `got` showed
    # that `1` where the pre-check, and every other number error, shows the text the model
    # wrote: it should find its own number in the error it is asked to fix.
    written = arguments[len('{"v": ') : -1]
    tools = Toolset([{"name": "tool", "parameters": _obj(properties={"v": field})}])
    prechecked = _prechecked_call(tools, arguments)
    unchecked = SimpleNamespace(id="call_1", name="tool", arguments=arguments, error=None)
    assert prechecked.error is not None
    assert prechecked.error.got == written
    for call in (prechecked, unchecked):
        assert [(e.path, e.got) for e in tools.validate(call).errors] == [("/v", written)]


def test_numbers_a_coercion_read_are_shown_as_written_in_errors() -> None:
    # Items `1.0` and `2.00` became the integers 1 and 2, and the string `"4"` the number 4:
    # `got` showed `[1,2]` and `4`, which the model never wrote (a model tool shows `"4"`).
    schema = _obj(
        properties={
            "xs": {"type": "array", "items": {"type": "integer"}, "maxItems": 1},
            "n": {"type": "integer", "multipleOf": 3},
        }
    )
    arguments = '{"xs": [1.0, 2.00], "n": "4"}'
    tools = Toolset([{"name": "tool", "parameters": schema}])
    outcome = tools.validate(_prechecked_call(tools, arguments))
    assert [(e.path, e.got) for e in outcome.errors] == [("/n", '"4"'), ("/xs", "[1.0,2.00]")]

    class Numbers(BaseModel):
        n: int = Field(multiple_of=3)

    model_tools = Toolset([Numbers], names={Numbers: "tool"})
    sent = _prechecked_call(model_tools, '{"n": "4"}')
    assert [e.got for e in model_tools.validate(sent).errors] == ['"4"']


@pytest.mark.parametrize(
    "schema, arguments, expected",
    [
        # A member forbidden with the boolean schema `false`, at the root and nested.
        (
            {"type": "object", "properties": {"legacy_id": False, "name": {"type": "string"}}},
            {"name": "a", "legacy_id": 7},
            [("/legacy_id", "unknown_field", "no such field; allowed fields: name", "7")],
        ),
        (
            {"type": "object", "properties": {"opts": {"properties": {"debug": False}}}},
            {"opts": {"debug": "yes"}},
            [("/opts/debug", "unknown_field", "no such field", '"yes"')],
        ),
        # `unevaluatedProperties: false` closing a composed object names each stray member.
        (
            {
                "type": "object",
                "allOf": [{"properties": {"a": {"type": "string"}}}],
                "unevaluatedProperties": False,
            },
            {"a": "x", "typo_field": 1},
            [("/typo_field", "unknown_field", "no such field", "1")],
        ),
        # Items past a tuple's positions, closed with `items: false` or `unevaluatedItems`: the
        # array is too long.
        (
            {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
            [1, 2],
            [("", "length", "at most 1 items", "[1,2]")],
        ),
        (
            {"type": "array", "prefixItems": [{"type": "integer"}], "unevaluatedItems": False},
            [1, 2],
            [("", "length", "at most 1 items", "[1,2]")],
        ),
        # A tuple position forbidden outright.
        (
            {"type": "array", "prefixItems": [{"type": "integer"}, False]},
            [1, 2],
            [("/1", "invalid", "no value here", "2")],
        ),
    ],
)
def test_what_a_false_schema_forbids_is_named_at_its_own_pointer(
    schema: dict[str, Any], arguments: Any, expected: list[tuple[str, str, str, str]]
) -> None:
    wrapped = (
        schema
        if schema.get("type") == "object"
        else {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    )
    if wrapped is not schema:
        arguments = {"v": arguments}
        expected = [("/v" + path, code, words, got) for path, code, words, got in expected]
    tools = Toolset([{"name": "tool", "parameters": wrapped}])
    for with_precheck in (True, False):
        assembler = Assembler(tools=tools if with_precheck else None)
        assembler.feed(0, id="call_1", name="tool", arguments=json.dumps(arguments))
        (call,) = assembler.finish()
        outcome = tools.validate(call)
        assert not outcome.ok
        assert [(e.path, e.code, e.expected, e.got) for e in outcome.errors] == expected


_TAGGED_PAY = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"const": "card"},
                "mail": {"type": "string", "format": "email"},
            },
            "required": ["kind", "mail"],
        },
        {
            "type": "object",
            "properties": {"kind": {"const": "cash"}, "amount": {"type": "integer"}},
            "required": ["kind", "amount"],
        },
    ],
    "discriminator": {"propertyName": "kind"},
}


@pytest.mark.parametrize("required", [True, False])
@pytest.mark.parametrize(
    ("arguments", "keyword"),
    [('{"pay": {"kind": "cheque", "amount": 1}}', "oneOf"), ('{"pay": 5}', "type")],
)
def test_an_early_error_names_the_one_of_the_schema_has(
    required: bool, arguments: str, keyword: str
) -> None:
    # The pre-check reads a `oneOf` whose branch it checks less strictly (a `format` left to
    # validation), or an optional one that takes null, as an `anyOf`; its errors said so. A
    # value of a type no branch takes is a type error, as final validation reports it.
    schema = {"type": "object", "properties": {"pay": _TAGGED_PAY}}
    if required:
        schema["required"] = ["pay"]
    tools = Toolset([{"name": "pay", "parameters": schema}])
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="pay", arguments=arguments)
    early = [(e.path, e.keyword) for _, e in assembler.drain_errors()]
    (done,) = assembler.finish()
    assert early == [("/pay", keyword)]
    assert done.error is not None and done.error.keyword == keyword


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("prop", "pattern", "value", "expected", "got"),
    [
        # The property takes "x"; the pattern's union refuses it, and said "a string".
        (
            {"type": "string"},
            {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            '"x"',
            "an integer or true or false",
            '"x"',
        ),
        ({"type": "string"}, {"type": "integer"}, '"x"', "an integer", '"x"'),
        # A secret the failing pattern declares is hidden, as at its own place.
        ({"type": "integer"}, {"type": "string", "x-secret": True}, "5", "a string", "[redacted]"),
    ],
)
def test_an_error_a_pattern_finds_beside_a_property_describes_the_pattern(
    prechecked: bool,
    prop: dict[str, Any],
    pattern: dict[str, Any],
    value: str,
    expected: str,
    got: str,
) -> None:
    schema = {"type": "object", "properties": {"code": prop}, "patternProperties": {"^co": pattern}}
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools) if prechecked else Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=f'{{"code": {value}}}')
    (done,) = assembler.finish()
    outcome = tools.validate(done)
    assert [(e.path, e.expected, e.got) for e in outcome.errors] == [("/code", expected, got)]


@pytest.mark.parametrize("prechecked", [False, True])
@pytest.mark.parametrize(
    ("prop", "pattern", "value", "expected"),
    [
        ({"maximum": 10}, {"minimum": 20}, "15", [("range", "<= 10 and >= 20")]),
        ({"maximum": 10}, {"maximum": 5}, "11", [("range", "<= 10 and <= 5")]),
        (
            {"type": "string", "maxLength": 3},
            {"minLength": 5},
            '"abcd"',
            [("length", "at most 3 characters and at least 5 characters")],
        ),
        (
            {"type": "string", "pattern": "^a"},
            {"pattern": "b$"},
            '"cc"',
            [("pattern", "a string matching ^a and a string matching b$")],
        ),
        # Bounds of different kinds were each told already; one the value keeps is not named.
        (
            {"maximum": 10},
            {"multipleOf": 3},
            "11",
            [("range", "<= 10"), ("multiple_of", "a multiple of 3")],
        ),
        ({"maximum": 10}, {"minimum": 0}, "11", [("range", "<= 10")]),
    ],
)
def test_every_bound_a_property_and_its_pattern_set_is_told_at_the_value(
    prechecked: bool, prop: dict[str, Any], pattern: dict[str, Any], value: str, expected: Any
) -> None:
    # Both schemas hold "n" (JSON Schema): where both refused the value by rules of one kind,
    # only the property's bound was shown, and the model, keeping to it, failed the other.
    schema = _obj(properties={"n": prop}, patternProperties={"^n$": pattern})
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools) if prechecked else Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=f'{{"n": {value}}}')
    (done,) = assembler.finish()
    errors = tools.validate(done).errors
    assert [(e.path, e.code, e.expected, e.got) for e in errors] == [
        ("/n", code, words, value) for code, words in expected
    ]


_LOOPS = {
    "self": ({"a": {"$ref": "#/$defs/a"}}, "/$defs/a/$ref"),
    "two definitions": (
        {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}},
        "/$defs/a/allOf/0/$ref",
    ),
    "every branch": (
        {
            "a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]},
            "b": {"$ref": "#/$defs/a"},
        },
        "/$defs/a/anyOf/0/$ref",
    ),
    "negated": ({"a": {"not": {"$ref": "#/$defs/a"}}}, "/$defs/a/not/$ref"),
    "beside an assertion": (
        {"a": {"allOf": [{"type": "integer"}, {"$ref": "#/$defs/a"}]}},
        "/$defs/a/allOf/1/$ref",
    ),
}


@pytest.mark.parametrize("case", sorted(_LOOPS))
def test_a_reference_that_only_comes_back_to_itself_is_refused_at_its_place(case: str) -> None:
    # Validation followed it until the stack ran out: the tool was built, and every value of
    # `x` was then refused as `invalid`, with nothing said about the schema.
    defs, where = _LOOPS[case]
    schema = _obj(properties={"x": {"$ref": "#/$defs/a"}}, **{"$defs": defs})
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert info.value.path == where and info.value.keyword == "$ref"
    assert info.value.got == json.dumps(lookup_ref(schema, where))


def lookup_ref(schema: dict[str, Any], where: str) -> Any:
    node: Any = schema
    for token in where.split("/")[1:]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


@pytest.mark.parametrize(
    ("definition", "good", "bad"),
    [
        # A tree: each step of the recursion is a smaller value.
        (
            {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/a"}}},
            },
            {"kids": [{"kids": []}]},
            {"kids": [{"kids": 1}]},
        ),
        # A branch that does not come back is a base case.
        ({"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/a"}]}, 1, "s"),
        ({"oneOf": [{"type": "integer"}, {"$ref": "#/$defs/a"}]}, 1, "s"),
    ],
)
def test_a_recursion_with_a_way_out_is_built_and_validates(
    definition: dict[str, Any], good: Any, bad: Any
) -> None:
    schema = _obj(properties={"x": {"$ref": "#/$defs/a"}}, **{"$defs": {"a": definition}})
    assert _run(schema, {"x": good})[1]
    assert not _run(schema, {"x": bad})[1]


def test_a_draft_7_reference_loops_whatever_is_beside_it() -> None:
    # Draft 7 ignores every keyword next to a `$ref`: the `type` is no way out.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"x": {"$ref": "#/definitions/a"}},
        "definitions": {"a": {"type": "integer", "$ref": "#/definitions/a"}},
    }
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert info.value.path == "/definitions/a/$ref"


class _Node(BaseModel):
    value: int
    kids: list[_Node] = []
    parent: _Node | None = None


class _Expr(BaseModel):
    arg: int | _Expr


def test_recursive_models_still_register() -> None:
    tools = Toolset([_Node, _Expr])
    for name, arguments in (
        ("node", {"value": 1, "kids": [{"value": 2, "parent": {"value": 3}}]}),
        ("expr", {"arg": {"arg": {"arg": 1}}}),
    ):
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="call_1", name=name, arguments=json.dumps(arguments))
        (call,) = assembler.finish()
        assert tools.validate(call).ok
