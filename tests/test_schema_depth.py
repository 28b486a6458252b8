"""A schema nested too deeply, in its subschemas or in a value inside it, is refused by every
way in with `SchemaTooLargeError` naming the measure and the levels: never a `RecursionError`,
nor a registry that calls it text that is "not valid JSON"."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, create_model

from tests.test_shared_definitions import _chain
from toolwire import Assembler, SchemaTooLargeError, ToolRegistry, Toolset, schema_export

# What a `ToolRegistry` built directly compiles: its own limits, past the Toolset's.
REGISTRY_DEPTH = 256
REGISTRY_NESTING = 640


def _nested(levels: int, via: str) -> dict[str, Any]:
    """An object schema whose innermost subschema is `levels` levels down: its property `x`
    holds an object, an array's items or an `anyOf` member, each holding the next; or a chain
    of definitions, each a reference deeper."""
    if via in ("$ref", "properties"):
        return _chain(levels, by_ref=via == "$ref")
    node: dict[str, Any] = {"type": "integer"}
    for _ in range(levels - 1):
        node = (
            {"type": "array", "items": node}
            if via == "items"
            else {"anyOf": [{"type": "null"}, node]}
        )
    return {"type": "object", "properties": {"x": node}}


def _model_chain(levels: int) -> type[BaseModel]:
    """A model whose field holds a model whose field... `levels` levels of subschemas."""
    model: type[BaseModel] = create_model("Leaf", v=(int, ...))
    for i in range(1, levels):
        model = create_model(f"Level{i}", x=(model, ...))
    return model


def _refused(make: Callable[[], object]) -> SchemaTooLargeError:
    with pytest.raises(SchemaTooLargeError) as info:
        make()
    return info.value


def _text(schema: dict[str, Any]) -> str:
    # `json.dumps` recurses per level: the deepest test schemas need more than the default.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 30_000))
    try:
        return json.dumps(schema)
    finally:
        sys.setrecursionlimit(limit)


LEVELS = [25, 60, 300, 5000]
VIA = ["properties", "items", "anyOf", "$ref"]


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("levels", LEVELS)
def test_a_toolset_and_the_schema_helpers_refuse_a_deep_schema_by_depth(
    levels: int, via: str
) -> None:
    # At 300 levels and more the helpers ended in a bare RecursionError.
    schema = _nested(levels, via)
    limit = schema_export.MAX_SCHEMA_DEPTH
    makers: list[Callable[[], object]] = [
        lambda: Toolset([{"name": "deep", "parameters": schema}], strict=False),
        lambda: Toolset([{"type": "function", "function": {"name": "deep", "parameters": schema}}]),
        lambda: Toolset([{"name": "deep", "inputSchema": schema}]),
        lambda: schema_export.precheck_schema(schema),
        lambda: schema_export.inline_refs(schema),
        lambda: schema_export.export_schema(schema, tool="deep", strict=False),
    ]
    if via != "$ref":
        # It reads references as written, where they are shallow.
        makers.append(lambda: schema_export.as_json_schema(schema))
    for make in makers:
        error = _refused(make)
        assert (error.measure, error.size, error.limit) == ("depth", levels, limit)


@pytest.mark.parametrize("levels", [25, 60, 300])
def test_a_model_nested_too_deeply_is_refused_by_depth(levels: int) -> None:
    # From 60 levels Pydantic's own schema generation ran out of Python's stack. (Pydantic
    # takes minutes to build thousands of nested models: 300 stands for them.)
    model = _model_chain(levels)
    error = _refused(lambda: Toolset([model]))
    assert (error.measure, error.size, error.tool) == ("depth", levels, f"level{levels - 1}")
    renamed = _refused(lambda: Toolset([model], names={model: "deep"}))
    assert renamed.tool == "deep"


def test_a_model_at_the_limit_is_built() -> None:
    # The check is only a floor of the model's depth: the inliner counts the rest.
    model = _model_chain(schema_export.MAX_SCHEMA_DEPTH)
    tools = Toolset([model])
    assert tools.names() == [f"level{schema_export.MAX_SCHEMA_DEPTH - 1}"]


@pytest.mark.parametrize("via", VIA)
@pytest.mark.parametrize("levels", LEVELS)
@pytest.mark.parametrize("as_text", [False, True], ids=["dict", "text"])
def test_a_registry_refuses_a_schema_past_its_depth_by_depth(
    levels: int, via: str, as_text: bool
) -> None:
    # From about 64 levels a registry built directly said the schema was "not valid JSON"
    # (its reader's limit), from about 1,000 a dict ended in a RecursionError.
    schema = _nested(levels, via)
    given: Any = _text(schema) if as_text else schema
    if levels <= REGISTRY_DEPTH:
        registry = ToolRegistry({"deep": given})
        asm = Assembler(tools=registry)
        asm.feed(0, id="c", name="deep", arguments='{"x": "no"}')
        (call,) = asm.finish()
        assert call.error is not None and call.error.kind == "schema_violation"
        return
    error = _refused(lambda: ToolRegistry({"deep": given}))
    assert (error.measure, error.limit, error.tool) == ("depth", REGISTRY_DEPTH, "deep")
    # Through references the compiler stops one level past the limit.
    assert error.size == (REGISTRY_DEPTH + 1 if via == "$ref" else levels)


def _deep_value(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize("keyword", ["const", "default", "enum", "examples"])
@pytest.mark.parametrize("levels", [60, 500, 3000])
def test_a_value_nested_deep_inside_a_shallow_schema_is_refused_by_nesting(
    keyword: str, levels: int
) -> None:
    # The copy of the schema, and past 128 levels the registry's reader, ended in a
    # RecursionError or called the schema "not valid JSON".
    value = _deep_value(levels)
    schema = {
        "type": "object",
        "properties": {"a": {keyword: [value] if keyword in ("enum", "examples") else value}},
    }
    # The value's lists, below the root object, `properties`, `a` (and the enum's list).
    nesting = levels + 2 + (keyword in ("enum", "examples"))
    if nesting <= schema_export.MAX_SCHEMA_NESTING:
        tools = Toolset([{"name": "t", "parameters": schema}], strict=False)
        asm = Assembler(tools=tools)
        asm.feed(0, id="c", name="t", arguments=json.dumps({"a": _deep_value(levels)}))
        (call,) = asm.finish()
        assert call.ok and tools.validate(call).ok
    else:
        error = _refused(lambda: Toolset([{"name": "t", "parameters": schema}], strict=False))
        assert (error.measure, error.size) == ("nesting", nesting)
        assert error.limit == schema_export.MAX_SCHEMA_NESTING and "nests" in str(error)
    for given in (schema, _text(schema)):
        if nesting <= REGISTRY_NESTING:
            assert ToolRegistry({"t": given}).names() == ["t"]
        else:
            error = _refused(lambda given=given: ToolRegistry({"t": given}))
            assert (error.measure, error.size, error.limit) == (
                "nesting",
                nesting,
                REGISTRY_NESTING,
            )
