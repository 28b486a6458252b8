"""Definitions shared at several levels (a DAG) stay references: sizes stay linear, and the
pre-check and validation read the schema as they read it fully inlined."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from toolwire import Assembler, SchemaTooLargeError, Toolset, schema_export
from toolwire.schema_export import closing_splits_one_of, precheck_schema, secret_patterns


def _binary(depth: int) -> dict[str, Any]:
    """Each level holds the one below it twice: `depth` levels, 2**depth leaves inlined."""
    defs: dict[str, Any] = {"L0": {"type": "object", "properties": {"v": {"type": "string"}}}}
    for i in range(1, depth + 1):
        below = {"$ref": f"#/$defs/L{i - 1}"}
        defs[f"L{i}"] = {"type": "object", "properties": {"left": below, "right": below}}
    return {
        "type": "object",
        "properties": {"root": {"$ref": f"#/$defs/L{depth}"}},
        "$defs": defs,
    }


def _openapi(fan: int, depth: int) -> dict[str, Any]:
    """OpenAPI-style components: each holds some fields and `fan` of the one below it."""
    defs: dict[str, Any] = {
        "L0": {"type": "object", "properties": {f"f{j}": {"type": "string"} for j in range(10)}}
    }
    for i in range(1, depth + 1):
        props: dict[str, Any] = {f"f{j}": {"type": "string"} for j in range(5)}
        props.update({f"r{j}": {"$ref": f"#/$defs/L{i - 1}"} for j in range(fan)})
        defs[f"L{i}"] = {"type": "object", "properties": props, "required": ["f0"]}
    return {
        "type": "object",
        "properties": {"root": {"$ref": f"#/$defs/L{depth}"}},
        "required": ["root"],
        "$defs": defs,
    }


def _chars(schema: Any) -> int:
    return len(json.dumps(schema))


def _inlined(schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The pre-check schema with every non-recursive reference inlined (as before)."""
    with monkeypatch.context() as patch:
        patch.setattr(schema_export, "SHARED_DEFINITION_CHARS", 10**18, raising=False)
        return precheck_schema(schema)


def _inlined_tools(schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Toolset:
    with monkeypatch.context() as patch:
        patch.setattr(schema_export, "SHARED_DEFINITION_CHARS", 10**18, raising=False)
        tools = Toolset([{"name": "t", "parameters": schema}], coercion="none")
        assert tools.registry is not None
        return tools


@pytest.mark.parametrize(
    "schema",
    [_binary(14), _binary(40), _openapi(4, 4), _openapi(2, 14)],
    ids=["binary-14", "binary-40", "openapi-4x4", "openapi-2x14"],
)
def test_shared_definitions_keep_schemas_linear(schema: dict[str, Any]) -> None:
    # Inlined along every path, binary-14 took 34 s and 2.9 MB, openapi-4x4 (1.5 KB) 100 KB.
    written = _chars(schema)
    tools = Toolset([{"name": "t", "parameters": schema}], strict=False)
    bound = 2 * written + 3 * schema_export.SHARED_DEFINITION_CHARS
    assert _chars(tools.schema("t")) < bound
    assert _chars(tools.anthropic()[0]["input_schema"]) < bound
    assert _chars(tools.openai()[0]["function"]["parameters"]) < bound
    assert _chars(tools.responses()[0]["parameters"]) < bound
    # The definitions stay references, each once; the pre-check compiles them.
    assert "$ref" in json.dumps(tools.schema("t"))
    assert tools.registry.check("t", b'{"root": 5}') is not None


def test_a_strict_export_of_a_dag_stays_small_and_strict() -> None:
    schema = _openapi(3, 5)
    tools = Toolset([{"name": "t", "parameters": schema}])
    (tool,) = tools.openai()
    params = tool["function"]["parameters"]
    assert tool["function"]["strict"] is True
    assert _chars(params) < 2 * _chars(schema) + 3 * schema_export.SHARED_DEFINITION_CHARS
    assert set(params["$defs"]) >= {"L3", "L4"}
    for body in params["$defs"].values():
        # Strict: closed, every property required (optional ones a union with null).
        assert body["additionalProperties"] is False
        assert body["required"] == list(body["properties"])


def test_strict_depth_counts_through_shared_references() -> None:
    # Inlined, objects past ten levels kept a schema out of the strict subset; a reference to
    # a kept definition hides them no more.
    tools = Toolset([{"name": "t", "parameters": _binary(12)}], strict=False)
    problems = [r for r in tools.relaxations if "deeper" in r.reason]
    assert [p.path for p in problems] == ["root.left", "root.right"]
    assert "$ref" in json.dumps(tools.schema("t"))
    assert not [r for r in Toolset([{"name": "t", "parameters": _binary(7)}]).relaxations]


def _tree(depth: int, leaf: Any) -> Any:
    node: Any = leaf
    for _ in range(depth):
        node = {"left": node, "right": node}
    return node


def _binary_values(depth: int) -> list[Any]:
    good = {"root": _tree(depth, {"v": "x"})}
    return [
        good,
        {"root": _tree(depth, {})},
        {"root": _tree(depth, {"v": 5})},
        {"root": _tree(depth, {"v": "x", "w": 1})},
        {"root": {"left": _tree(depth - 1, {"v": "x"}), "right": "no"}},
        {"root": {"left": {"left": {"extra": True}}}},
        {"root": {"left": {"right": {"left": None}}}},
        {"root": _tree(depth + 1, {"v": "x"})},
        {"root": {}, "other": 1},
        {},
    ]


def _openapi_values() -> list[Any]:
    leaf = {f"f{j}": "s" for j in range(10)}

    def level(i: int, leaf_value: Any) -> Any:
        if i == 0:
            return leaf_value
        return {
            "f0": "a",
            "f4": "b",
            "r0": level(i - 1, leaf_value),
            "r2": level(i - 1, leaf_value),
        }

    return [
        {"root": level(4, leaf)},
        {"root": level(4, {**leaf, "f9": 9})},
        {"root": level(4, {**leaf, "g": "?"})},
        {"root": {"f0": "a", "r1": {"f1": "no f0"}}},
        {"root": {"f0": "a", "r3": {"f0": "a", "r0": {"f0": "a", "r0": []}}}},
        {"root": {"f0": 1}},
        {"root": {"f0": "a", "r5": {}}},
        {"root": None},
    ]


@pytest.mark.parametrize(
    ("schema", "values"),
    [(_binary(6), _binary_values(6)), (_openapi(4, 4), _openapi_values())],
    ids=["binary", "openapi"],
)
def test_verdicts_and_early_errors_match_the_inlined_schema(
    schema: dict[str, Any], values: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = Toolset([{"name": "t", "parameters": schema}], coercion="none")
    assert "$ref" in json.dumps(tools.schema("t"))
    inlined = _inlined(schema, monkeypatch)
    assert "$ref" not in json.dumps(inlined)
    judge = jsonschema.Draft202012Validator(inlined)
    old_tools = _inlined_tools(schema, monkeypatch)
    assert old_tools.schema("t") == inlined
    for value in values:
        text = json.dumps(value).encode()
        new, old = tools.registry.check("t", text), old_tools.registry.check("t", text)
        fields = ("kind", "path", "keyword", "expected", "got", "offset", "message")
        assert (new is None) == (old is None), value
        if new is not None and old is not None:
            assert [getattr(new, f) for f in fields] == [getattr(old, f) for f in fields]
        assembler = Assembler(tools=tools)
        for i in range(0, len(text), 9):
            assembler.feed(0, id="c1", name="t", arguments=text[i : i + 9].decode())
        (call,) = assembler.finish()
        outcome = tools.validate(call)
        if b"null" not in text:
            # A null for an optional field is read as absent, which `jsonschema` does not.
            assert outcome.ok is judge.is_valid(value), value
        assert (call.error is None) or not outcome.ok
        old_assembler = Assembler(tools=old_tools)
        old_assembler.feed(0, id="c1", name="t", arguments=text.decode())
        (old_call,) = old_assembler.finish()
        old_outcome = old_tools.validate(old_call)
        assert outcome.ok is old_outcome.ok
        assert outcome.errors == old_outcome.errors


def _big(name: str) -> dict[str, Any]:
    """An object longer than `SHARED_DEFINITION_CHARS`, with fields named after `name`."""
    return {
        "type": "object",
        "properties": {
            f"{name}{j}": {"type": "string", "description": "a field described at length " * 3}
            for j in range(12)
        },
    }


def test_a_shared_definition_is_closed_as_each_place_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `Base` is a property's object (closed), an `allOf` member beside other fields (left
    # open there, or those fields would be refused) and under `not` (nothing closed).
    schema = {
        "type": "object",
        "properties": {
            "plain": {"$ref": "#/$defs/Base"},
            "extended": {
                "allOf": [
                    {"$ref": "#/$defs/Base"},
                    {"type": "object", "properties": {"more": {"type": "integer"}}},
                ]
            },
            "other": {"type": "object", "not": {"$ref": "#/$defs/Base"}},
            "again": {"$ref": "#/$defs/Base"},
        },
        "$defs": {"Base": _big("b")},
    }
    tools = Toolset([{"name": "t", "parameters": schema}], coercion="none")
    out = tools.schema("t")
    assert sorted(out["$defs"]) == ["Base", "Base_open", "Base_partial"]
    assert out["$defs"]["Base"]["additionalProperties"] is False
    assert "additionalProperties" not in out["$defs"]["Base_partial"]
    assert "additionalProperties" not in out["$defs"]["Base_open"]
    judge = jsonschema.Draft202012Validator(_inlined(schema, monkeypatch))
    values = [
        {"plain": {"b0": "x"}},
        {"plain": {"b0": "x", "more": 1}},
        {"extended": {"b0": "x", "more": 1}},
        {"extended": {"b0": "x", "more": "1"}},
        {"other": {"b0": "x"}},
        {"other": {"b0": "x", "zzz": 1}},
        {"other": {"b0": 5}},
        {"again": {"b11": 5}},
    ]
    for value in values:
        text = json.dumps(value)
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="c1", name="t", arguments=text)
        (call,) = assembler.finish()
        ok = judge.is_valid(value)
        assert tools.validate(call).ok is ok, value
        if ok:
            assert call.error is None, value
    # The strict export flattens the member as it flattened its copy.
    (tool,) = Toolset(
        [
            {
                "name": "t",
                "parameters": {
                    **schema,
                    "properties": {k: v for k, v in schema["properties"].items() if k != "other"},
                },
            }
        ]
    ).openai()
    extended = tool["function"]["parameters"]["properties"]["extended"]["anyOf"][0]
    assert "allOf" not in extended
    assert set(extended["properties"]) == {*(f"b{j}" for j in range(12)), "more"}


def test_closing_a_shared_definition_in_a_one_of_is_seen_through_the_reference() -> None:
    # Open, `{"a0": "x"}` matches both branches and `oneOf` refuses it; closed, only `A` takes
    # it. Validation must hold the call to the `oneOf` as written, references or not.
    schema = {
        "type": "object",
        "properties": {
            "pick": {"oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
            "a": {"$ref": "#/$defs/A"},
            "b": {"$ref": "#/$defs/B"},
        },
        "$defs": {"A": _big("a"), "B": _big("b")},
    }
    closed, written = precheck_schema(schema), precheck_schema(schema, closed=False)
    assert closed["properties"]["pick"]["oneOf"][0] == {"$ref": "#/$defs/A"}
    assert closing_splits_one_of(closed, written)
    tools = Toolset([{"name": "t", "parameters": schema}])
    for value, ok in [({"pick": {"a0": "x"}}, False), ({"pick": {"a0": "x", "b0": "y"}}, False)]:
        assert jsonschema.Draft202012Validator(schema).is_valid(value) is ok
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="c1", name="t", arguments=json.dumps(value))
        (call,) = assembler.finish()
        assert tools.validate(call).ok is ok


def test_a_loosened_shared_definition_loosens_the_one_of_that_references_it() -> None:
    # A plain tool's pre-check leaves `email` to validation: without it both branches take
    # `{"x": "not an address"}`, so the `oneOf` naming them must be read as `anyOf` there, as
    # it was when the branches were copies. Validation, with the format, finds it valid.
    mail = _big("m")
    mail["properties"]["x"] = {"type": "string", "format": "email"}
    text = _big("t")
    text["properties"]["x"] = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {
            "to": {"oneOf": [{"$ref": "#/$defs/Mail"}, {"$ref": "#/$defs/Text"}]},
            "cc": {"$ref": "#/$defs/Mail"},
            "body": {"$ref": "#/$defs/Text"},
        },
        "$defs": {"Mail": mail, "Text": text},
    }
    tools = Toolset([{"name": "t", "parameters": schema}])
    assert "$ref" in json.dumps(tools.schema("t"))
    value = {"to": {"x": "not an address"}}
    checker = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    assert checker.is_valid(value)
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="c1", name="t", arguments=json.dumps(value))
    (call,) = assembler.finish()
    assert call.error is None
    assert tools.validate(call).ok


def test_a_secret_in_a_shared_definition_is_hidden_everywhere() -> None:
    # Reached along 2**12 paths, the secret's pointers are too many to list: every value of
    # the tool counts as secret in the pre-check's errors instead.
    schema = _binary(12)
    schema["$defs"]["L0"]["properties"]["v"] = {"type": "string", "x-secret": True}
    tools = Toolset([{"name": "t", "parameters": schema}])
    assert secret_patterns(tools.schema("t")) == [""]
    error = tools.registry.check("t", b'{"root": {"left": {"left": 7}}}')
    assert error is not None and "7" not in (error.got or "")


def test_a_schema_still_too_large_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reference with an assertion beside it is still copied: a DAG of those grows as before,
    # and past the limit registration says so at once rather than building it.
    schema = _binary(12)
    for i in range(1, 13):
        below = {"$ref": f"#/$defs/L{i - 1}", "minProperties": 0}
        schema["$defs"][f"L{i}"]["properties"] = {"left": below, "right": below}
    monkeypatch.setattr(schema_export, "MAX_INLINED_CHARS", 200_000, raising=False)
    with pytest.raises(SchemaTooLargeError) as info:
        Toolset([{"name": "wide", "parameters": schema}])
    assert info.value.tool == "wide"
    assert info.value.size > info.value.limit == 200_000
    assert "wide" in str(info.value)
    assert info.value.measure == "characters"


def _chain(levels: int, *, by_ref: bool = True) -> dict[str, Any]:
    """An object whose `x` holds an object whose `x`... `levels` levels of subschemas down to
    an integer: through a `$ref` per level, or written out."""
    if not by_ref:
        node: dict[str, Any] = {"type": "integer"}
        for _ in range(levels):
            node = {"type": "object", "properties": {"x": node}}
        return node
    count = levels - 1
    defs: dict[str, Any] = {
        f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}}}
        for i in range(count)
    }
    defs[f"d{count}"] = {"type": "integer"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}


@pytest.mark.parametrize("by_ref", [True, False])
def test_a_schema_nested_at_the_limit_is_built_and_used(by_ref: bool) -> None:
    levels = schema_export.MAX_SCHEMA_DEPTH
    tools = Toolset([{"name": "deep", "parameters": _chain(levels, by_ref=by_ref)}], strict=False)
    tools.openai()
    tools.anthropic()
    value: Any = 1
    for _ in range(levels):
        value = {"x": value}
    for arguments, ok in ((value, True), ({"x": "no"}, False)):
        asm = Assembler(tools=tools)
        asm.feed(0, id="c", name="deep", arguments=json.dumps(arguments))
        (call,) = asm.finish()
        assert tools.validate(call).ok is ok


@pytest.mark.parametrize("by_ref", [True, False])
@pytest.mark.parametrize("past", [1, 26, 76, 176, 2000])
def test_a_schema_nested_past_the_limit_is_refused_by_depth(by_ref: bool, past: int) -> None:
    # Near 50 levels the pre-check's registry called the schema "not valid JSON", near 100
    # validation's set-up raised a ValueError about Python's recursion, near 200 the inliner a
    # bare RecursionError; and the first only when the registry was first used.
    levels = schema_export.MAX_SCHEMA_DEPTH + past
    with pytest.raises(SchemaTooLargeError) as info:
        Toolset([{"name": "deep", "parameters": _chain(levels, by_ref=by_ref)}])
    error = info.value
    assert error.measure == "depth" and error.tool == "deep"
    assert error.size == levels and error.limit == schema_export.MAX_SCHEMA_DEPTH
    assert f"nests {levels:,} levels" in str(error) and "MAX_SCHEMA_DEPTH" in str(error)


def test_a_recursive_definition_counts_once() -> None:
    # A tree: the definition refers to itself, and stays a reference under `$defs`.
    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "v": {"type": "integer"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    tools = Toolset([{"name": "tree", "parameters": tree}], strict=False)
    nested: Any = {"v": 1, "kids": []}
    # Deeper than the schema's own levels: the definition recurs.
    for _ in range(20):
        nested = {"v": 1, "kids": [nested]}
    asm = Assembler(tools=tools)
    asm.feed(0, id="c", name="tree", arguments=json.dumps({"root": nested}))
    (call,) = asm.finish()
    assert tools.validate(call).ok
