"""Toolset: registration, naming, lookups and the pre-check schema."""

from __future__ import annotations

import json
import math
import pickle
from dataclasses import dataclass
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, ClassVar, Generic, TypedDict, TypeVar, cast

import pytest
from pydantic import BaseModel, ConfigDict, Field, RootModel
from pydantic.dataclasses import dataclass as pydantic_dataclass

from toolwire import (
    Assembler,
    InvalidSchemaError,
    MisuseError,
    ToolCall,
    ToolRegistry,
    UnknownToolError,
)
from toolwire.schema_export import SchemaExportError
from toolwire.toolset import Toolset, snake_case


class GetWeather(BaseModel):
    """Get the weather.

    Indented continuation lines are dedented.
    """

    city: str = Field(description="City name")
    days: int = 1


class Titled(BaseModel):
    model_config = ConfigDict(title="lookup_order")
    order_id: str


class Attributed(BaseModel):
    __tool_name__: ClassVar[str] = "send_email"
    to: str


class HTTPRequest(BaseModel):
    url: str


PLAIN_OPENAI_FUNCTION = {
    "name": "search_docs",
    "description": "Search the docs.",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
}
CHAT_TOOL = {"type": "function", "function": {**PLAIN_OPENAI_FUNCTION, "name": "chat_tool"}}
RESPONSES_TOOL = {"type": "function", **{**PLAIN_OPENAI_FUNCTION, "name": "responses_tool"}}
ANTHROPIC_TOOL = {
    "name": "anthropic_tool",
    "description": "From Anthropic or MCP.",
    "input_schema": {"type": "object", "properties": {"x": {"type": "number"}}},
}


def feed(
    toolset: Toolset | None, name: str | None, arguments: str, call_id: str = "call_1"
) -> ToolCall:
    asm = Assembler(tools=toolset) if toolset is not None else Assembler()
    asm.feed(0, id=call_id, name=name)
    for start in range(0, len(arguments), 5):
        asm.feed(0, arguments=arguments[start : start + 5])
    (call,) = asm.finish()
    return call


@pytest.mark.parametrize(
    ("camel", "snake"),
    [
        ("GetWeather", "get_weather"),
        ("HTTPRequest", "http_request"),
        ("Get2FACode", "get2_fa_code"),
        ("lookup", "lookup"),
        ("SendEmailV2", "send_email_v2"),
    ],
)
def test_snake_case(camel: str, snake: str) -> None:
    assert snake_case(camel) == snake


def test_names_come_from_mapping_attribute_title_then_class_name() -> None:
    toolset = Toolset(
        [GetWeather, Titled, Attributed, HTTPRequest], names={HTTPRequest: "fetch_url"}
    )
    assert toolset.names() == ["get_weather", "lookup_order", "send_email", "fetch_url"]
    assert toolset.model("send_email") is Attributed
    # The explicit mapping beats the attribute.
    assert Toolset([Attributed], names={Attributed: "mail"}).names() == ["mail"]


Item = TypeVar("Item")


class Page(BaseModel, Generic[Item]):
    items: list[Item]
    cursor: str | None = None


def test_a_parametrized_generic_model_gets_a_valid_name() -> None:
    # Pydantic names the class `Page[int]`; brackets are not allowed in a tool name.
    toolset = Toolset([Page[int], Page[GetWeather]])
    assert toolset.names() == ["page_int", "page_get_weather"]
    assembler = Assembler(tools=toolset)
    assembler.feed(0, id="call_1", name="page_int", arguments='{"items": [1, 2]}')
    (call,) = assembler.finish()
    assert toolset.validate(call).model == Page[int](items=[1, 2])


def test_description_from_cleaned_docstring_and_field_descriptions_carried() -> None:
    toolset = Toolset([GetWeather])
    fn = toolset.openai()[0]["function"]
    assert fn["description"] == "Get the weather.\n\nIndented continuation lines are dedented."
    assert fn["parameters"]["properties"]["city"]["description"] == "City name"


def test_plain_definitions_in_every_shape_mix_with_models() -> None:
    toolset = Toolset(
        [GetWeather, PLAIN_OPENAI_FUNCTION, CHAT_TOOL, RESPONSES_TOOL, ANTHROPIC_TOOL]
    )
    assert toolset.names() == [
        "get_weather",
        "search_docs",
        "chat_tool",
        "responses_tool",
        "anthropic_tool",
    ]
    assert toolset.model("search_docs") is None
    anthropic = {t["name"]: t for t in toolset.anthropic()}
    assert anthropic["anthropic_tool"]["description"] == "From Anthropic or MCP."
    assert anthropic["chat_tool"]["input_schema"]["required"] == ["query"]
    # A plain tool can be renamed by its own name.
    assert Toolset([PLAIN_OPENAI_FUNCTION], names={"search_docs": "find"}).names() == ["find"]


def test_tool_without_parameters_gets_an_empty_object() -> None:
    toolset = Toolset([{"name": "ping", "description": "Ping."}])
    assert toolset.schema("ping") == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


def test_lookups() -> None:
    toolset = Toolset([GetWeather, PLAIN_OPENAI_FUNCTION])
    assert "get_weather" in toolset and "nope" not in toolset
    assert list(toolset) == ["get_weather", "search_docs"]
    assert len(toolset) == 2
    assert toolset.tool("search_docs").description == "Search the docs."
    with pytest.raises(KeyError):
        toolset.schema("nope")
    with pytest.raises(KeyError):
        toolset.model("nope")


@pytest.mark.parametrize("lookup", ["schema", "tool", "model", "custom_tool"])
def test_an_unknown_tool_is_named_with_the_registered_ones(lookup: str) -> None:
    custom = {"type": "custom", "name": "run_sql", "description": "Run SQL."}
    toolset = Toolset([GetWeather, PLAIN_OPENAI_FUNCTION, custom])
    with pytest.raises(UnknownToolError) as raised:
        getattr(toolset, lookup)("nope")
    error = raised.value
    # Still a `KeyError` for code that caught the bare one, but readable: not `'nope'`.
    assert isinstance(error, KeyError) and error.name == "nope"
    registered = ["run_sql"] if lookup == "custom_tool" else ["get_weather", "search_docs"]
    assert error.available == registered
    assert str(error).startswith(
        "no custom tool named 'nope'" if lookup == "custom_tool" else "no tool named 'nope'"
    )
    assert all(repr(name) in str(error) for name in registered)
    assert pickle.loads(pickle.dumps(error)).available == registered


@pytest.mark.parametrize("call", [None, {"name": "get_weather"}, "get_weather"])
def test_scrub_refuses_what_is_no_call(call: object) -> None:
    toolset = Toolset([GetWeather])
    with pytest.raises(TypeError, match="scrub's call must be a ToolCall"):
        toolset.scrub(call, "text")  # type: ignore[arg-type]


def test_schema_is_the_precheck_schema_and_a_copy() -> None:
    class Inner(BaseModel):
        a: int

    class Outer(BaseModel):
        inner: Inner
        maybe: Inner | None = None

    toolset = Toolset([Outer])
    schema = toolset.schema("outer")
    assert "$ref" not in json.dumps(schema)
    assert schema["required"] == ["inner"]  # the model's own required list
    assert schema["additionalProperties"] is False
    assert schema["properties"]["inner"]["additionalProperties"] is False
    assert "default" not in schema["properties"]["maybe"]
    schema["properties"].clear()
    assert toolset.schema("outer")["properties"]  # callers cannot corrupt the registry
    assert toolset.schemas() == {"outer": toolset.schema("outer")}


@pytest.mark.parametrize(
    ("tools", "kwargs", "message"),
    [
        ([GetWeather, GetWeather], {}, "duplicate tool name 'get_weather'"),
        ([GetWeather, {**PLAIN_OPENAI_FUNCTION, "name": "get_weather"}], {}, "duplicate"),
        ([GetWeather], {"names": {GetWeather: "bad name!"}}, "invalid tool name"),
        ([GetWeather], {"names": {HTTPRequest: "x"}}, "match no tool"),
        ([GetWeather], {"checks": {"nope": lambda m: None}}, "checks names unknown tools"),
        ([{"description": "no name"}], {}, "needs a string 'name'"),
        ([{"name": "x", "parameters": {"type": 5}}], {}, "invalid parameter schema"),
        ([GetWeather], {"coercion": "lenient"}, "coercion must be"),
        ([GetWeather], {"coercion": ["number_string", "guess"]}, "unknown coercion rule"),
        ([GetWeather], {"lang": "fr"}, "lang must be"),
    ],
)
def test_misuse_raises(tools: list[Any], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Toolset(tools, **kwargs)


@pytest.mark.parametrize(
    ("schema", "message", "path", "keyword"),
    [
        (
            {"type": "object", "properties": {"a": {"minLength": -1}}},
            "'minLength' at /properties/a/minLength is -1, expected a number of at least 0",
            "/properties/a/minLength",
            "minLength",
        ),
        (
            {"type": "object", "required": "a"},
            "'required' at /required is \"a\", expected an array",
            "/required",
            "required",
        ),
        # The property's name is data, not the keyword (`'a' at /dependentRequired/a`).
        (
            {"type": "object", "dependentRequired": {"a": "b"}},
            "'dependentRequired' at /dependentRequired/a is \"b\", expected an array",
            "/dependentRequired/a",
            "dependentRequired",
        ),
        (
            {"type": "object", "dependentRequired": {"a": [1]}},
            "'dependentRequired' at /dependentRequired/a/0 is 1, expected a string",
            "/dependentRequired/a/0",
            "dependentRequired",
        ),
        (
            {"type": "object", "properties": {"a": 5}},
            "the schema at /properties/a is 5, expected a schema (an object or a boolean)",
            "/properties/a",
            None,
        ),
        (
            {"type": 5},
            "'type' at /type is 5, expected a type name ('array', 'boolean', 'integer',"
            " 'null', 'number', 'object', 'string') or a list of them",
            "/type",
            "type",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "(x"}}},
            "'pattern' at /properties/a/pattern is \"(x\", expected an ECMA-262 regular"
            " expression (JSON Schema's dialect, read with the `u` flag)",
            "/properties/a/pattern",
            "pattern",
        ),
    ],
)
def test_a_schema_the_metaschema_refuses_is_told_in_one_line(
    schema: dict[str, Any], message: str, path: str, keyword: str | None
) -> None:
    # The metaschema's own message is a screenful quoting its subschemas and its own places
    # (`metaschema['allOf'][1]['properties']...`); it stays on the exception as `detail`.
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "x", "parameters": schema}])
    assert str(info.value) == f"tool 'x': invalid parameter schema: {message}"
    assert (info.value.tool, info.value.path, info.value.keyword) == ("x", path, keyword)
    assert "Failed validating" in info.value.detail
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("schema", "path", "keyword", "got"),
    [
        # Told at the property that uses the definition (`/properties/p/minItems`).
        (
            {
                "type": "object",
                "properties": {"p": {"$ref": "#/$defs/d0"}},
                "$defs": {"d0": {"type": "null", "minItems": "string"}},
            },
            "/$defs/d0/minItems",
            "minItems",
            '"string"',
        ),
        # Built: a definition nothing uses, and an `$anchor` no reference names, were never
        # checked.
        (
            {"type": "object", "$defs": {"unused": {"minLength": -1}}},
            "/$defs/unused/minLength",
            "minLength",
            "-1",
        ),
        (
            {"type": "object", "properties": {"p": {"$anchor": "a b"}}},
            "/properties/p/$anchor",
            "$anchor",
            '"a b"',
        ),
        # Refused with an internal error's text (`TypeError`, `AttributeError`).
        (
            {"type": "object", "properties": {"p": {"type": "string"}}, "required": [{}]},
            "/required/0",
            "required",
            "{}",
        ),
        (
            {
                "type": "object",
                "properties": {"p": {"$ref": "other.json"}},
                "$defs": {"d1": ["x"]},
            },
            "/$defs/d1",
            None,
            '["x"]',
        ),
    ],
)
def test_a_schema_the_metaschema_refuses_is_refused_where_it_is_written(
    schema: dict[str, Any], path: str, keyword: str | None, got: str
) -> None:
    # The metaschema read the schema once its references were inlined and its objects closed:
    # a definition's fault was told where it is used, an unused one was not read at all, and a
    # value that is no schema broke the inliner first.
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "x", "parameters": schema}])
    assert (info.value.tool, info.value.path, info.value.keyword) == ("x", path, keyword)
    assert info.value.got == got


@pytest.mark.parametrize(
    ("schema", "path", "keyword", "got"),
    [
        # `json.loads` reads a bound written `1e400` as infinity.
        (
            json.loads('{"type": "object", "properties": {"a": {"maximum": 1e400}}}'),
            "/properties/a/maximum",
            "maximum",
            "inf",
        ),
        (
            {"type": "object", "properties": {"a": {"minimum": -math.inf}}},
            "/properties/a/minimum",
            "minimum",
            "-inf",
        ),
        (
            {"type": "object", "properties": {"a": {"default": math.nan}}},
            "/properties/a/default",
            "default",
            "nan",
        ),
        (
            {"type": "object", "properties": {"a": {"maximum": Decimal("0.5")}}},
            "/properties/a/maximum",
            "maximum",
            "Decimal('0.5')",
        ),
        (
            {"type": "object", "properties": {"a": {"enum": {1, 2}}}},
            "/properties/a/enum",
            "enum",
            "{1, 2}",
        ),
        # YAML reads an unquoted `200` key as an int.
        (
            {"type": "object", "properties": {200: {"type": "string"}}},
            "/properties",
            "properties",
            "an object with the key 200",
        ),
        # `json.loads` reads `"\ud800"` as a lone surrogate, which no UTF-8 text holds.
        (
            json.loads('{"type": "object", "properties": {"a": {"const": "\\ud800"}}}'),
            "/properties/a/const",
            "const",
            "'\\ud800'",
        ),
        (
            json.loads('{"type": "object", "properties": {"\\udc00a": {"type": "string"}}}'),
            "/properties",
            "properties",
            "an object with the key '\\udc00a'",
        ),
    ],
)
def test_a_schema_holding_what_json_cannot_is_refused_at_build(
    schema: dict[str, Any], path: str, keyword: str, got: str
) -> None:
    # Such a schema passed the metaschema, and the toolset was built; the first assembler given
    # it then failed (`MisuseError`: the pre-check's schema is JSON text), or the build itself
    # with an `AttributeError` for the key.
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "x", "parameters": schema}])
    assert (info.value.tool, info.value.path, info.value.keyword) == ("x", path, keyword)
    assert info.value.got == got
    assert str(info.value).startswith(f"tool 'x': invalid parameter schema: '{keyword}' at {path}")


class _InfiniteDefault(BaseModel):
    """Scale a reading."""

    factor: float = math.inf


class _BrokenDescription(BaseModel):
    """Label a reading."""

    label: str = Field(description="name \udc00")


@pytest.mark.parametrize(
    ("model", "path", "keyword"),
    [
        (_InfiniteDefault, "/properties/factor/default", "default"),
        (_BrokenDescription, "/properties/label/description", "description"),
    ],
)
def test_a_model_whose_schema_json_cannot_hold_is_refused_at_build(
    model: type[BaseModel], path: str, keyword: str
) -> None:
    # Pydantic writes the default and the description as given: the toolset was built, and
    # the first assembler given it raised `MisuseError` (its schema is no JSON text).
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([model])
    assert (info.value.path, info.value.keyword) == (path, keyword)


def test_a_tool_description_with_a_lone_surrogate_is_refused_at_build() -> None:
    # Every export carries the description: the toolset was built, and the provider request
    # could not be encoded as UTF-8.
    tool = {"name": "label", "description": "Label \ud800", "parameters": {}}
    with pytest.raises(ValueError, match="'description' holds a lone surrogate"):
        Toolset([tool])


def test_not_a_tool_raises_type_error() -> None:
    with pytest.raises(TypeError):
        Toolset([42])  # type: ignore[list-item]


class _LookupOrderTyped(TypedDict):
    order_id: str


@pydantic_dataclass
class _LookupOrderData:
    order_id: str


@pytest.mark.parametrize("tool", [_LookupOrderData, _LookupOrderTyped])
def test_a_class_that_is_no_model_raises_type_error(tool: Any) -> None:
    # Both describe arguments to Pydantic, but are no `BaseModel`: refused as any other
    # input that is not a tool, not with an AttributeError from inside.
    with pytest.raises(TypeError, match="a tool must be a Pydantic model class"):
        Toolset([tool])


def test_registry_feeds_the_assembler() -> None:
    toolset = Toolset([GetWeather, PLAIN_OPENAI_FUNCTION])
    registry = toolset.registry
    assert isinstance(registry, ToolRegistry)
    assert registry is toolset.registry  # built once
    assert sorted(registry.names()) == ["get_weather", "search_docs"]
    call = feed(toolset, "get_weather", '{"city": "Paris"}')
    outcome = toolset.validate(call)
    assert outcome.ok and outcome.model == GetWeather(city="Paris")


def test_unknown_tool_through_the_precheck_lists_available_names() -> None:
    toolset = Toolset([GetWeather, PLAIN_OPENAI_FUNCTION])
    call = feed(toolset, "get_wether", '{"city": "Paris"}')
    outcome = toolset.validate(call)
    assert not outcome.ok and outcome.error_type == "unknown_tool"
    assert outcome.retryable
    assert outcome.message is not None
    assert '"get_wether"' in outcome.message
    assert '"get_weather", "search_docs"' in outcome.message


def test_unknown_tool_without_the_precheck() -> None:
    toolset = Toolset([GetWeather])
    outcome = toolset.validate(feed(None, "weather", "{}"))
    assert outcome.error_type == "unknown_tool" and not outcome.ok


def test_strict_toolset_raises_only_on_openai_exports() -> None:
    class Labels(BaseModel):
        labels: dict[str, str]

    toolset = Toolset([Labels])  # construction succeeds: Anthropic can take it
    assert toolset.anthropic()[0]["input_schema"]["properties"]["labels"]["additionalProperties"]
    with pytest.raises(SchemaExportError, match="labels"):
        toolset.openai()
    call = feed(None, "labels", '{"labels": {"a": "b"}}')
    assert toolset.validate(call).ok


def test_validate_all_keeps_order() -> None:
    toolset = Toolset([GetWeather])
    asm = Assembler()
    asm.feed(0, id="a", name="get_weather", arguments='{"city": "Oslo"}')
    asm.feed(1, id="b", name="get_weather", arguments='{"city": 5}')
    outcomes = toolset.validate_all(asm.finish())
    assert [(o.call_id, o.ok) for o in outcomes] == [("a", True), ("b", False)]


def test_mcp_tool_parameters_are_read_from_input_schema_camel_case() -> None:
    # MCP's `tools/list` (and the mcp SDK's `Tool.model_dump()`) spell it `inputSchema`; read
    # as a tool without parameters, every call would validate and the exports would offer none.
    mcp_tool = {
        "name": "search",
        "description": "Search the docs.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    }
    tools = Toolset([mcp_tool])
    assert tools.anthropic()[0]["input_schema"]["required"] == ["query"]
    assert tools.openai()[0]["function"]["parameters"]["properties"] == {
        "query": {"type": "string"}
    }
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="search", arguments="{}")
    (call,) = assembler.finish()
    assert not tools.validate(call).ok


def test_a_root_without_a_type_is_exported_as_an_object() -> None:
    # Anthropic refuses an input_schema whose root does not say `"type": "object"`; arguments
    # are always an object anyway.
    schema = {"properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = Toolset([{"name": "t", "input_schema": schema}], strict=False)
    assert tools.anthropic()[0]["input_schema"]["type"] == "object"
    assert tools.openai()[0]["function"]["parameters"]["type"] == "object"
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="t", arguments='{"q": "x"}')
    (call,) = assembler.finish()
    assert tools.validate(call).ok


class _LaxFlag(BaseModel):
    """A model that lets Pydantic convert on its own."""

    model_config = ConfigDict(strict=False)
    flag: bool
    count: int = 0


def _outcomes_both_ways(tools: Toolset, name: str, arguments: str) -> list[Any]:
    """The outcome of one call assembled without and with the pre-check, and whether each
    call says it was pre-checked."""
    out: list[Any] = []
    for assembler in (Assembler(), Assembler(tools=tools)):
        assembler.feed(0, id="call_1", name=name, arguments=arguments)
        (call,) = assembler.finish()
        outcome = tools.validate(call)
        codes = [e.code for e in outcome.errors]
        out.append((call.prechecked, outcome.ok, codes, [c.rule for c in outcome.coercions]))
    return out


@pytest.mark.parametrize(
    ("arguments", "ok", "codes", "rules"),
    [
        # A lax model would read 1 as True silently: not a safe coercion.
        ('{"flag": 1}', False, ["type"], []),
        # The published schema closes the object: an unknown field is the model's mistake.
        ('{"flag": true, "zz": 2}', False, ["unknown_field"], []),
        # A safe coercion is applied and recorded either way.
        ('{"flag": true, "count": "3"}', True, [], ["number_string"]),
        ('{"flag": false}', True, [], []),
    ],
)
def test_a_call_gets_one_verdict_with_or_without_the_precheck(
    arguments: str, ok: bool, codes: list[str], rules: list[str]
) -> None:
    tools = Toolset([_LaxFlag], names={_LaxFlag: "set_flag"})
    without, with_precheck = _outcomes_both_ways(tools, "set_flag", arguments)
    assert without == (False, ok, codes, rules)
    assert with_precheck == (True, ok, codes, rules)
    # A call the application built itself (from a response that was not streamed, from its
    # logs) says nothing of a pre-check: it is checked as a call assembled without one is.
    outcome = tools.validate(_CallOfYourOwn("set_flag", arguments))
    assert (outcome.ok, [e.code for e in outcome.errors]) == (ok, codes)
    assert [c.rule for c in outcome.coercions] == rules


@pytest.mark.parametrize(
    "arguments",
    [
        # Pydantic and `json` would keep the last value without a word.
        '{"flag": true, "flag": false}',
        # Not "not an object": cut off, and two values.
        '{"flag": ',
        '{"flag": true} {"flag": false}',
        '{"flag": NaN}',
        # Half of a surrogate pair, which a str can hold and UTF-8 cannot.
        '{"flag": "\ud800"}',
    ],
)
def test_a_call_of_your_own_has_its_text_read_as_an_assembler_reads_it(arguments: str) -> None:
    tools = Toolset([_LaxFlag], names={_LaxFlag: "set_flag"})
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="set_flag", arguments=arguments)
    (call,) = assembler.finish()
    want = tools.validate(call)
    outcome = tools.validate(_CallOfYourOwn("set_flag", arguments))
    assert not outcome.ok
    assert (outcome.error_type, outcome.message, outcome.errors) == (
        want.error_type,
        want.message,
        want.errors,
    )


def test_a_call_of_your_own_may_hold_a_surrogate_pair_as_two_halves() -> None:
    # As a UTF-16 producer's text decoded half by half leaves it: the assembler joins them.
    tools = Toolset([{"name": "note", "parameters": {"properties": {"text": {"type": "string"}}}}])
    outcome = tools.validate(_CallOfYourOwn("note", '{"text": "\ud83d\ude00"}'))
    assert outcome.ok, outcome.errors
    assert outcome.value == {"text": "\U0001f600"}


@dataclass(frozen=True)
class _CallOfYourOwn:
    """A completed call as `Toolset.validate` reads one, without a `prechecked` of its own."""

    name: str
    arguments: str
    id: str | None = "call_1"
    ordinal: int = 0
    index: int | None = 0
    error: None = None

    @property
    def value(self) -> Any:
        return json.loads(self.arguments)


@pytest.mark.parametrize("arguments", ['{"n": "x", "zz": 1}', '{"n": 1.5}', '{"n": 2}'])
def test_an_own_call_without_a_value_gets_the_assembled_calls_verdict(arguments: str) -> None:
    # `validate` asks an own call for its `id`, `name`, `arguments` and `error` only; a model
    # tool's call that broke its schema then read `value` for the full report, and ended
    # `internal_error` (AttributeError) instead of telling the model what to fix.
    tools = Toolset([Counter])
    own = SimpleNamespace(id="call_1", name="counter", arguments=arguments, error=None)
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="counter", arguments=arguments)
    (assembled,) = assembler.finish()
    got, expected = tools.validate(cast(Any, own)), tools.validate(assembled)
    assert got.error_type != "internal_error"
    assert (got.ok, got.errors, got.value) == (expected.ok, expected.errors, expected.value)


def test_registry_checks_a_complete_text() -> None:
    tools = Toolset([_LaxFlag], names={_LaxFlag: "set_flag"})
    error = tools.registry.check("set_flag", b'{"flag": "yes"}')
    assert error is not None and (error.kind, error.path) == ("schema_violation", "/flag")
    assert tools.registry.check("set_flag", b'{"flag": true}') is None


def test_an_assembler_shows_why_a_toolsets_registry_cannot_be_built() -> None:
    # A schema JSON cannot hold (`Infinity`) is refused when the toolset is built (above);
    # whatever else keeps the registry from being built is the error to see, not a complaint
    # about the argument's type.
    class Broken(Toolset):
        @property
        def registry(self) -> ToolRegistry:  # type: ignore[override]
            raise MisuseError('schema of "t" cannot be compiled: nested too deeply')

    with pytest.raises(MisuseError, match='schema of "t"'):
        Assembler(tools=Broken([GetWeather]))
    with pytest.raises(MisuseError, match="must be a Toolset"):
        Assembler(tools=object())  # type: ignore[arg-type]


class Counter(BaseModel):
    n: int
    mode: str = "fast"


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "error_path"),
    [
        ('{"n": "x", "n": 3}', None),
        ('{"n": 3, "n": "x"}', "/n"),
        ('{"n": 1, "n": 2, "zz": 1}', "/zz"),
        ('{"n": 1, "zz": 1, "zz": 2}', "/zz"),
    ],
)
def test_last_wins_calls_are_judged_on_the_value_they_stand_for(
    precheck: bool, arguments: str, error_path: str | None
) -> None:
    # Under `last_wins` a later duplicate key replaces the earlier value: a violation in the
    # replaced value is none, and what follows a duplicate is still checked.
    tools = Toolset([Counter])
    asm = Assembler(tools=tools if precheck else None, duplicate_keys="last_wins")
    asm.feed(0, id="c", name="counter", arguments=arguments)
    # No violation of the arguments is certain before the end: a duplicate may still come.
    assert asm.drain_errors() == []
    (call,) = asm.finish()
    outcome = tools.validate(call)
    if error_path is None:
        assert outcome.ok and outcome.model == Counter(n=3), outcome
    else:
        assert not outcome.ok and [e.path for e in outcome.errors] == [error_path], outcome
    assert outcome == tools.validate(call)
    assert call.value == json.loads(arguments)


def test_registry_check_reads_a_text_under_the_policy_given() -> None:
    registry = Toolset([Counter]).registry
    text = b'{"n": "x", "n": 3}'
    assert registry.check("counter", text) is not None
    assert registry.check("counter", text, duplicate_keys="last_wins") is None
    with pytest.raises(MisuseError):
        registry.check("counter", text, duplicate_keys="first_wins")  # type: ignore[arg-type]


class _Numbers(RootModel[list[int]]):
    """A list of numbers: no call's arguments can be one."""


@pytest.mark.parametrize(
    "tool",
    [
        _Numbers,
        {"name": "listing", "parameters": {"type": "array"}},
        {"name": "either", "parameters": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
    ],
)
def test_a_tool_whose_arguments_can_never_be_an_object_is_refused(tool: Any) -> None:
    with pytest.raises(ValueError, match="must allow a JSON object"):
        Toolset([tool])


def test_a_root_model_of_an_object_is_a_tool() -> None:
    class Inner(BaseModel):
        a: int

    class Wrapped(RootModel[Inner]):
        """A model wrapped in a root model."""

    tools = Toolset([Wrapped])
    asm = Assembler(tools=tools)
    asm.feed(0, id="c", name="wrapped", arguments='{"a": 1}')
    (done,) = asm.finish()
    outcome = tools.validate(done)
    assert outcome.ok and outcome.model == Wrapped(Inner(a=1))


class _City(BaseModel):
    city: str


@pytest.mark.parametrize("call", ["weather", None, {"name": "city", "arguments": "{}"}])
def test_validate_refuses_what_is_no_call_with_what_to_pass(call: Any) -> None:
    # An AttributeError ('str' object has no attribute 'error') from inside.
    with pytest.raises(TypeError, match=r"validate's call must be a ToolCall"):
        Toolset([_City]).validate(call)


@pytest.mark.parametrize(
    ("attribute", "value", "says"),
    [
        # Anthropic's `tool_use` block holds its arguments as a dict (`input`).
        ("arguments", {"city": "Oslo"}, r"call\.arguments must be the arguments' JSON text"),
        ("arguments", None, r"call\.arguments must be the arguments' JSON text"),
        ("name", 7, r"call\.name must be a str or None, not int"),
        ("id", 7, r"call\.id must be a str or None, not int"),
    ],
)
def test_validate_names_the_attribute_of_an_own_call_that_holds_the_wrong_kind(
    attribute: str, value: object, says: str
) -> None:
    # An `internal_error` outcome (the call never ran, the log said TypeError), or for the
    # id a TypeError from deep inside: "'int' object is not subscriptable".
    fields: dict[str, Any] = {"ordinal": 0, "index": 0, "id": "c1", "name": "city"}
    fields |= {"arguments": '{"city": "Oslo"}', "error": None, attribute: value}
    with pytest.raises(TypeError, match=says):
        Toolset([_City]).validate(cast(Any, SimpleNamespace(**fields)))


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("names", ["weather"], "names must be a mapping keyed by tool"),
        ("default_tz", "UTC", "default_tz must be a mapping keyed by tool"),
        ("checks", [print], "checks must be a mapping keyed by tool"),
        ("strict", "no", "strict must be True or False"),
        ("redact", "***", "redact must be a function"),
        # Taken whole, these failed every call of the tool as an `internal_error`.
        ("default_tz", {"city": "Europe/Paris"}, r"default_tz\['city'\] must be a tzinfo"),
        ("default_tz", {"city": None}, r"default_tz\['city'\] must be a tzinfo"),
        ("checks", {"city": "no refunds"}, r"checks\['city'\] must be a function"),
    ],
)
def test_an_option_of_the_wrong_kind_is_refused(option: str, value: object, says: str) -> None:
    # `names=[...]` raised AttributeError; `strict="no"` read as true and `redact="***"` was
    # taken, to fail at the first error shown to the model.
    with pytest.raises(TypeError, match=says):
        Toolset([_City], **{option: value})


class _Strict(BaseModel):
    a: int


_LOOSE = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "additionalProperties": True,
}


def _assembled(tools: Toolset | ToolRegistry | None, arguments: str) -> ToolCall:
    assembler = Assembler() if tools is None else Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="m", arguments=arguments)
    (call,) = assembler.finish()
    return call


@pytest.mark.parametrize(
    "strict",
    [
        Toolset([_Strict], names={_Strict: "m"}),
        Toolset(
            [
                {
                    "name": "m",
                    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
                }
            ]
        ),
    ],
    ids=["model", "plain"],
)
@pytest.mark.parametrize(
    "loose",
    [
        lambda: Toolset([{"name": "m", "parameters": _LOOSE}]),
        lambda: ToolRegistry({"m": _LOOSE}),
    ],
    ids=["toolset", "registry"],
)
def test_a_call_prechecked_against_other_schemas_is_checked_again(
    strict: Toolset, loose: Any
) -> None:
    # Pre-checked by a looser schema of the same name: that check says nothing of this
    # toolset's schema, which refuses the extra key (Pydantic alone would drop it silently).
    call = _assembled(loose(), '{"a": 1, "zzz": 2}')
    assert call.prechecked and call.ok
    outcome = strict.validate(call)
    assert not outcome.ok
    assert [(e.code, e.path) for e in outcome.errors] == [("unknown_field", "/zzz")]
    # The same verdict as without a pre-check, and as under the toolset's own (where the
    # stream's check already found it).
    assert strict.validate(_assembled(None, '{"a": 1, "zzz": 2}')).errors == outcome.errors
    own = _assembled(strict, '{"a": 1, "zzz": 2}')
    assert [e.code for e in strict.validate(own).errors] == ["unknown_field"]
    # A valid call passes whichever registry checked it.
    for checked_by in (loose(), strict, None):
        assert strict.validate(_assembled(checked_by, '{"a": 1}')).ok
