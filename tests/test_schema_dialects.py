"""Plain tool schemas written for other readers than JSON Schema 2020-12 (Gemini and Vertex AI
declarations, OpenAPI 3.0 conversions) or naming their parts by URI (`$anchor`, embedded `$id`
resources): they register, the pre-check checks them exactly while streaming, and a call gets
the verdict `jsonschema` gives on the schema as its own dialect reads it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.conftest import Splitter, streamed_call
from toolwire import Assembler, InvalidSchemaError, Toolset


def _verdicts(tools: Toolset, arguments: Any, splitter: Splitter) -> tuple[bool, bool, list[str]]:
    """Whether the pre-check let the streamed call through, whether validation accepts it, and
    validation's error codes."""
    prechecked, outcome = streamed_call(tools, arguments, splitter)
    return prechecked, outcome.ok, [e.code for e in outcome.errors]


def _agrees_with(
    oracle: Any, schema: dict[str, Any], instances: list[Any], splitter: Splitter
) -> None:
    """`schema` registers with nothing but OpenAPI's `nullable` left unchecked by the pre-check,
    and each instance is accepted exactly when `oracle` accepts it, by the pre-check and by
    validation alike."""
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assert [k for _, k, _ in tools.registry.unsupported if k != "nullable"] == []
    for instance in instances:
        expected = oracle.is_valid(instance)
        prechecked, ok, codes = _verdicts(tools, instance, splitter)
        assert (prechecked, ok) == (expected, expected), (instance, codes)


_UPPERCASE = {
    "type": "OBJECT",
    "properties": {
        "location": {"type": "STRING", "description": "City name"},
        "days": {"type": "INTEGER", "minimum": 1},
        "ratio": {"type": "NUMBER", "nullable": True},
        "metric": {"type": "BOOLEAN"},
        "stops": {"type": "ARRAY", "items": {"type": "STRING"}},
        "either": {"type": ["STRING", "NULL"]},
    },
    "required": ["location"],
}


def test_gemini_uppercase_types_read_as_json_schema_types(splitter: Splitter) -> None:
    # google-genai's `Type` enum serialises as OpenAPI's uppercase names (Vertex AI REST).
    lowercase = json.loads(
        json.dumps(_UPPERCASE)
        .replace('"OBJECT"', '"object"')
        .replace('"STRING"', '"string"')
        .replace('"INTEGER"', '"integer"')
        .replace('"NUMBER"', '"number"')
        .replace('"BOOLEAN"', '"boolean"')
        .replace('"ARRAY"', '"array"')
        .replace('"NULL"', '"null"')
    )
    # `nullable` is OpenAPI's: the oracle spells the null it admits the JSON Schema way.
    lowercase["properties"]["ratio"]["type"] = ["number", "null"]
    oracle = jsonschema.Draft202012Validator(lowercase)
    instances: list[Any] = [
        {"location": "Paris"},
        {"location": "Paris", "days": 3, "ratio": None, "metric": True, "stops": ["Lyon"]},
        {"location": "Paris", "either": None},
        {},
        {"location": 7},
        {"location": "Paris", "days": 0},
        {"location": "Paris", "days": 1.5},
        {"location": "Paris", "metric": "yes"},
        {"location": "Paris", "stops": ["Lyon", 2]},
        {"location": "Paris", "either": 1},
    ]
    _agrees_with(oracle, _UPPERCASE, instances, splitter)
    exported = Toolset([{"name": "tool", "parameters": _UPPERCASE}]).schema("tool")
    assert exported["type"] == "object"
    assert exported["properties"]["stops"] == {
        "type": "array",
        "items": {"type": "string"},
    }


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "Object"}, r"unknown type 'Object' at /type \(did you mean 'object'\?\)"),
        (
            {"type": "object", "properties": {"n": {"type": "str"}}},
            "unknown type 'str' at /properties/n/type: JSON Schema's types are",
        ),
        (
            {"type": "OBJECT", "properties": {"n": {"type": ["STRING", "TYPE_UNSPECIFIED"]}}},
            "unknown type 'TYPE_UNSPECIFIED' at /properties/n/type",
        ),
    ],
)
def test_a_type_no_dialect_knows_is_refused_by_name(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"tool 'tool': {message}"):
        Toolset([{"name": "tool", "parameters": schema}])


def test_a_property_named_type_is_a_field_not_a_keyword() -> None:
    schema = {"type": "OBJECT", "properties": {"type": {"type": "STRING", "enum": ["A", "B"]}}}
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assert tools.schema("tool")["properties"]["type"]["type"] == "string"


_OPENAPI_BOUNDS = {
    "type": "object",
    "properties": {
        "amount": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "share": {
            "type": "number",
            "minimum": 0,
            "exclusiveMinimum": False,
            "maximum": 1,
            "exclusiveMaximum": True,
        },
        "note": {"type": "string", "nullable": True},
    },
}


def test_openapi_boolean_exclusive_bounds_read_as_draft_4(splitter: Splitter) -> None:
    # OpenAPI 3.0 writes the draft 4 form without a `$schema`; draft 4 is the oracle.
    draft_4 = {"$schema": "http://json-schema.org/draft-04/schema#", **_OPENAPI_BOUNDS}
    draft_4["properties"] = {**_OPENAPI_BOUNDS["properties"], "note": {"type": ["string", "null"]}}
    oracle = jsonschema.Draft4Validator(draft_4)
    instances: list[Any] = [
        {"amount": 0.01, "share": 0},
        {"amount": 0},
        {"amount": -1},
        {"share": 1},
        {"share": 0.999},
        {"share": -0.5},
        {"note": None},
    ]
    _agrees_with(oracle, _OPENAPI_BOUNDS, instances, splitter)
    tools = Toolset([{"name": "tool", "parameters": _OPENAPI_BOUNDS}])
    _, ok, codes = _verdicts(tools, {"amount": 0}, splitter)
    assert not ok and codes == ["range"]


def test_a_boolean_exclusive_bound_under_a_later_draft_is_still_an_error() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    with pytest.raises(ValueError, match="invalid parameter schema"):
        Toolset([{"name": "tool", "parameters": schema}])


_ANCHORED = {
    "type": "object",
    "$defs": {
        "Position": {"$anchor": "pos", "type": "integer", "minimum": 1},
        "Node": {
            "$anchor": "node",
            "type": "object",
            "properties": {"value": {"$ref": "#pos"}, "next": {"$ref": "#node"}},
            "required": ["value"],
        },
    },
    "properties": {"at": {"$ref": "#pos"}, "list": {"$ref": "#node"}},
    "required": ["at"],
}


def test_a_reference_to_an_anchor_resolves(splitter: Splitter) -> None:
    oracle = jsonschema.Draft202012Validator(_ANCHORED)
    instances: list[Any] = [
        {"at": 1},
        {"at": 3, "list": {"value": 1, "next": {"value": 2}}},
        {"at": 0},
        {"at": "first"},
        {},
        {"at": 1, "list": {"value": 1, "next": {"value": 0}}},
        {"at": 1, "list": {"value": 1, "next": {}}},
    ]
    _agrees_with(oracle, _ANCHORED, instances, splitter)


_EMBEDDED = {
    "$id": "https://example.com/tools/lookup.json",
    "type": "object",
    "$defs": {
        "User": {
            "$id": "user.json",
            "type": "object",
            # From the embedded resource, `#` is the user, not the tool.
            "properties": {"uid": {"$ref": "#/$defs/Uid"}, "manager": {"$ref": "#"}},
            "required": ["uid"],
            "$defs": {"Uid": {"type": "string", "pattern": "^u[0-9]+$"}},
        },
    },
    "properties": {
        "user": {"$ref": "user.json"},
        "uid": {"$ref": "https://example.com/tools/user.json#/$defs/Uid"},
    },
    "required": ["user"],
}


def test_a_reference_to_an_embedded_resource_resolves(splitter: Splitter) -> None:
    oracle = jsonschema.Draft202012Validator(_EMBEDDED)
    instances: list[Any] = [
        {"user": {"uid": "u1"}},
        {"user": {"uid": "u1", "manager": {"uid": "u2"}}, "uid": "u3"},
        {"user": {"uid": "x"}},
        {"user": {}},
        {"user": {"uid": "u1", "manager": {"uid": 2}}},
        {"user": {"uid": "u1"}, "uid": "nobody"},
    ]
    _agrees_with(oracle, _EMBEDDED, instances, splitter)


def test_an_embedded_resource_without_a_root_id_resolves_relative_to_nothing(
    splitter: Splitter,
) -> None:
    schema = {
        "type": "object",
        "$defs": {"Tag": {"$id": "tag.json", "type": "string", "maxLength": 3}},
        "properties": {"tag": {"$ref": "tag.json"}},
    }
    oracle = jsonschema.Draft202012Validator(schema)
    _agrees_with(oracle, schema, [{"tag": "abc"}, {"tag": "abcd"}, {"tag": 1}], splitter)


@pytest.mark.parametrize(
    "ref", ["#nowhere", "other.json", "https://example.com/elsewhere.json#/$defs/X"]
)
def test_a_reference_outside_the_schema_is_refused(ref: str) -> None:
    schema = {
        "type": "object",
        "$defs": {"P": {"$anchor": "pos", "type": "integer"}},
        "properties": {"p": {"$ref": ref}},
    }
    with pytest.raises(ValueError, match="only references into the schema itself"):
        Toolset([{"name": "tool", "parameters": schema}])


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        (5, "a URI naming a JSON Schema draft"),
        ("http://json-schema.org/draft-03/schema#", "a JSON Schema draft from draft 4 on"),
    ],
)
def test_a_schema_uri_toolwire_cannot_read_is_refused_by_name(
    declared: object, expected: str
) -> None:
    # Refused with the text of an internal error: "'int' object has no attribute 'decode'",
    # or "'multipleOf'" (draft 3 has no such keyword) for a draft-03 tool.
    schema = {"$schema": declared, "type": "object", "properties": {"n": {"type": "integer"}}}
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert (info.value.path, info.value.keyword, info.value.expected) == (
        "/$schema",
        "$schema",
        expected,
    )


_DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"
_TEST_SUITE = (
    Path(os.environ.get("TOOLWIRE_SHARED", Path(__file__).resolve().parents[1] / ".." / "shared"))
    / "json-schema-test-suite"
    / "draft2020-12"
)


@pytest.mark.parametrize(
    ("schema", "path", "keyword", "got"),
    [
        (
            {"type": "object", "properties": {"a": {"$dynamicRef": "#meta"}}},
            "/properties/a/$dynamicRef",
            "$dynamicRef",
            '"#meta"',
        ),
        (
            {"type": "object", "properties": {"a": {"items": {"$dynamicRef": "#/$defs/gone"}}}},
            "/properties/a/items/$dynamicRef",
            "$dynamicRef",
            '"#/$defs/gone"',
        ),
        # The anchor exists, but in another resource than the one the reference is read from.
        (
            {
                "type": "object",
                "$defs": {"inner": {"$id": "inner.json", "$dynamicAnchor": "node"}},
                "properties": {"a": {"anyOf": [{"type": "null"}, {"$dynamicRef": "#node"}]}},
            },
            "/properties/a/anyOf/1/$dynamicRef",
            "$dynamicRef",
            '"#node"',
        ),
        # A value that is no schema: `jsonschema` raised on it while validating.
        (
            {
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"$dynamicRef": "#/required"}},
            },
            "/properties/a/$dynamicRef",
            "$dynamicRef",
            '"#/required"',
        ),
        # `jsonschema` reads every `$recursiveRef` as `#`: this one would check the root.
        (
            {
                "$schema": _DRAFT_2019,
                "type": "object",
                "properties": {"a": {"$recursiveRef": "#/$defs/leaf"}},
            },
            "/properties/a/$recursiveRef",
            "$recursiveRef",
            '"#/$defs/leaf"',
        ),
    ],
)
def test_a_dynamic_reference_to_nothing_is_refused_at_build(
    schema: dict[str, Any], path: str, keyword: str, got: str
) -> None:
    # The toolset was built, and every call of the tool then ended `internal_error` (the
    # reference was first resolved while validating), as a `$ref` naming nothing never does.
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert (info.value.tool, info.value.path, info.value.keyword, info.value.got) == (
        "tool",
        path,
        keyword,
        got,
    )


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (
            {"type": "object", "required": ["a"], "properties": {"a": {"$ref": "#/required/0"}}},
            "tool 'tool': $ref '#/required/0' points to \"a\", not a schema",
        ),
        (
            {"type": "object", "x-limit": 5, "properties": {"a": {"$ref": "#/x-limit"}}},
            "tool 'tool': $ref '#/x-limit' points to 5, not a schema",
        ),
        (
            {"type": "object", "$defs": {"n": None}, "properties": {"a": {"$ref": "#/$defs/n"}}},
            # The metaschema refuses the definition itself, wherever it is used.
            "tool 'tool': invalid parameter schema: the schema at /$defs/n is null, expected a"
            " schema (an object or a boolean)",
        ),
    ],
)
def test_a_reference_to_a_value_that_is_no_schema_is_refused_at_build(
    schema: dict[str, Any], says: str
) -> None:
    # Inlined as `{}`, the field took any value, where `jsonschema` fails on such a reference.
    with pytest.raises(ValueError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert str(info.value) == says


def test_a_dynamic_reference_is_resolved_only_in_a_schema_the_metaschema_takes() -> None:
    # Resolving it needs each `$id` as a URI: a number there is the metaschema's to name.
    schema = {"$id": 7, "type": "object", "properties": {"a": {"$dynamicRef": "#meta"}}}
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert (info.value.path, info.value.keyword) == ("/$id", "$id")


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (
            {
                "type": "object",
                "$defs": {"meta": {"$dynamicAnchor": "meta", "type": "integer"}},
                "properties": {"a": {"$dynamicRef": "#meta"}},
            },
            {"a": 1},
            {"a": "x"},
        ),
        (
            {
                "$schema": _DRAFT_2019,
                "$recursiveAnchor": True,
                "type": "object",
                "properties": {"name": {"type": "string"}, "child": {"$recursiveRef": "#"}},
            },
            {"name": "a", "child": {"name": "b"}},
            {"name": "a", "child": {"name": 1}},
        ),
    ],
)
def test_a_dynamic_reference_that_resolves_is_built_and_read(
    schema: dict[str, Any], good: dict[str, Any], bad: dict[str, Any], splitter: Splitter
) -> None:
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assert _verdicts(tools, good, splitter)[1:] == (True, [])
    ok, codes = _verdicts(tools, bad, splitter)[1:]
    assert not ok
    assert codes
    assert "internal_error" not in codes


def test_the_suite_dynamic_references_still_register() -> None:
    # JSON-Schema-Test-Suite, dynamicRef.json: no schema there has a dynamic reference naming
    # nothing, so none may be refused for one; those toolwire builds give the suite's verdict
    # on each object instance.
    groups = json.loads((_TEST_SUITE / "dynamicRef.json").read_text())
    checked = 0
    for group in groups:
        try:
            tools = Toolset([{"name": "tool", "parameters": group["schema"]}])
        except InvalidSchemaError as exc:
            assert exc.keyword not in ("$dynamicRef", "$recursiveRef"), group["description"]
            continue
        except ValueError as exc:
            # Refusals of their own: a root that takes no object, a `$ref` by URI (`list`).
            assert re.search(r"must allow a JSON object|unsupported \$ref", str(exc)), exc
            continue
        for test in group["tests"]:
            if isinstance(test["data"], dict):
                assembler = Assembler(tools=tools)
                assembler.feed(0, id="c", name="tool", arguments=json.dumps(test["data"]))
                (call,) = assembler.finish()
                outcome = tools.validate(call)
                assert outcome.ok is test["valid"], (group["description"], test["description"])
                checked += 1
    assert len(groups) > 20
    assert checked > 0


_DRAFT_4 = "http://json-schema.org/draft-04/schema#"
_DRAFT_7 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    ("declared", "field", "instances"),
    [
        # Draft 4 has no `const`, and its `integer` takes no `1.0` or `1e2`.
        (_DRAFT_4, {"const": 1}, [1, 2, "x"]),
        (_DRAFT_4, {"oneOf": [{"type": "integer"}, {"type": "number"}]}, [1, 1.0, 100.0, "x"]),
        # `prefixItems` is 2020-12's: before it, `items` takes every element.
        (_DRAFT_7, {"type": "array", "prefixItems": [{"type": "string"}]}, [[1], ["a"], [None]]),
        (
            _DRAFT_2019,
            {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
            [[1, 2], ["a"], []],
        ),
    ],
)
def test_a_keyword_the_declared_draft_reads_otherwise_is_read_as_that_draft(
    declared: str, field: dict[str, Any], instances: list[Any], splitter: Splitter
) -> None:
    schema = {"$schema": declared, "type": "object", "properties": {"v": field}, "required": ["v"]}
    oracle = jsonschema.validators.validator_for(schema)(schema)
    tools = Toolset([{"name": "tool", "parameters": schema}])
    for value in instances:
        expected = oracle.is_valid({"v": value})
        prechecked, ok, codes = _verdicts(tools, {"v": value}, splitter)
        # The pre-check may leave a refusal to validation, never refuse what it accepts.
        assert ok == expected, (value, codes)
        assert prechecked or not expected, (value, codes)


@pytest.mark.parametrize(
    ("items", "value", "valid"),
    [(True, [1, "a"], True), (True, [], True), (False, [1], False), (False, [], True)],
)
def test_a_boolean_items_beside_unevaluated_items_in_draft_2019_is_validated(
    items: bool, value: list[Any], valid: bool, splitter: Splitter
) -> None:
    # `jsonschema`'s draft 2019-09 `unevaluatedItems` raised on a boolean `items`, and every
    # call with an array there ended as an internal error.
    field = {"type": "array", "items": items, "unevaluatedItems": False}
    schema = {"$schema": _DRAFT_2019, "type": "object", "properties": {"v": field}}
    prechecked, ok, codes = _verdicts(
        Toolset([{"name": "tool", "parameters": schema}]), {"v": value}, splitter
    )
    assert ok == valid, codes
    assert valid or codes
    assert prechecked or not valid
