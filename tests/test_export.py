"""Provider exports: strict-subset conversion, and agreement with openai's own helper."""

from __future__ import annotations

import copy
import json
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

import jsonschema
import openai
import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, HttpUrl, NaiveDatetime, SecretStr

from toolwire import Assembler, ToolCall
from toolwire.schema_export import (
    SchemaExportError,
    export_schema,
    inline_refs,
    precheck_schema,
    strict_problems,
    strict_schema,
)
from toolwire.toolset import Toolset

# ---------------------------------------------------------------------------------------------
# A dozen varied models


class Unit(str, Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class GetWeather(BaseModel):
    """Get the weather for a city."""

    city: str = Field(description="City name, e.g. Paris")
    unit: Unit = Unit.CELSIUS


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="City")
    zip: str | None = None


class CreateCustomer(BaseModel):
    """Create a customer record."""

    name: str
    address: Address = Field(description="Billing address")
    shipping: Address | None = None


class SearchFlights(BaseModel):
    origin: str = Field(min_length=3, max_length=3, description="IATA code")
    destination: str
    passengers: int = Field(default=1, ge=1, le=9)
    cabin: Literal["economy", "business", "first"] = "economy"


class Tag(BaseModel):
    label: str
    weight: float = 1.0


class TagItems(BaseModel):
    """Attach tags to items."""

    item_ids: list[int]
    tags: list[Tag] = Field(default_factory=list[Tag])


class Node(BaseModel):
    """A tree node."""

    value: int
    children: list[Node] = Field(default_factory=list["Node"])


class Category(BaseModel):
    name: str
    parent: Category | None = None


class Pay(BaseModel):
    """Pay an invoice."""

    amount: Decimal = Field(multiple_of=Decimal("0.01"), description="Amount in EUR")
    reference: str | None = None


class Schedule(BaseModel):
    """Schedule a meeting."""

    start: datetime = Field(description="Start time with time zone")
    day: date
    notes: str | None = Field(default=None, description="Free text")


class Matrix(BaseModel):
    rows: list[list[int]] = Field(description="Rows of numbers", max_length=10)


class Flags(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)

    verbose: bool = False
    """Print more."""
    level: int | str = 0


class Wrapper(BaseModel):
    """Nested references with descriptions."""

    primary: Address
    backups: list[Address] = []
    by_unit: Unit


TWELVE: list[type[BaseModel]] = [
    GetWeather,
    CreateCustomer,
    SearchFlights,
    TagItems,
    Node,
    Category,
    Pay,
    Schedule,
    Matrix,
    Flags,
    Wrapper,
    Address,
]


def _resolve(schema: dict[str, Any]) -> Any:
    """An independent oracle: inline every non-recursive `$ref` of an openai-helper schema."""
    defs = schema.get("$defs", {})

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(x, stack) for x in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            if name in stack:
                return {"$ref": node["$ref"]}
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[name], **rest}, (*stack, name))
        return {k: walk(v, stack) for k, v in node.items() if k != "$defs"}

    # A recursive root model is itself a definition: references to it are recursion.
    root = schema.get("title")
    return walk(schema, (root,) if root in defs else ())


def _strip(node: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_strip(x, keys) for x in node]
    if isinstance(node, dict):
        return {k: _strip(v, keys) for k, v in node.items() if k not in keys}
    return node


def _decimal_strings(node: Any) -> Any:
    """`node` with the `pattern` of every `Decimal` string branch (number or string) left out."""
    if isinstance(node, list):
        return [_decimal_strings(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _decimal_strings(v) for k, v in node.items()}
    branches = out.get("anyOf")
    if isinstance(branches, list) and any(b.get("type") == "number" for b in branches):
        out["anyOf"] = [
            {k: v for k, v in b.items() if k != "pattern"} if b.get("type") == "string" else b
            for b in branches
        ]
    return out


@pytest.mark.parametrize("model", TWELVE, ids=lambda m: m.__name__)
def test_strict_export_matches_openai_helper(model: type[BaseModel]) -> None:
    theirs = openai.pydantic_function_tool(model, name="tool")
    ours = Toolset([model], names={model: "tool"}).openai()[0]
    assert ours["type"] == theirs["type"] == "function"
    fn, their_fn = ours["function"], theirs["function"]
    assert fn["name"] == "tool" and fn["strict"] is True and their_fn["strict"] is True
    # Three documented differences: we inline `$ref`s (the helper keeps `$defs`), we drop
    # every default (the helper drops only `default: null`), and a `Decimal` string must be a
    # JSON number. Modulo those, identical.
    expected = _decimal_strings(_strip(_resolve(their_fn["parameters"]), ("default",)))
    got = _decimal_strings({k: v for k, v in fn["parameters"].items() if k != "$defs"})
    assert got == _strip(expected, ("$defs",))
    assert "default" not in json.dumps(fn["parameters"])
    if model.__doc__:
        # The helper sends the raw docstring; we send it cleaned (inspect.cleandoc).
        assert fn["description"] == " ".join(model.__doc__.split())


@pytest.mark.parametrize("model", TWELVE, ids=lambda m: m.__name__)
def test_strict_schema_matches_to_strict_json_schema(model: type[BaseModel]) -> None:
    theirs = _strip(_resolve(to_strict_json_schema(model)), ("default", "$defs"))
    ours = strict_schema(model.model_json_schema(), tool="t")
    assert _strip(ours, ("$defs",)) == theirs


def test_recursive_model_keeps_a_ref_to_a_kept_definition() -> None:
    schema = strict_schema(Node.model_json_schema(), tool="node")
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    node_def = schema["$defs"]["Node"]
    assert node_def["required"] == ["value", "children"]
    assert node_def["additionalProperties"] is False
    # Only recursive definitions stay.
    assert list(schema["$defs"]) == ["Node"]


def _ring(n: int) -> dict[str, Any]:
    """A cycle of `n` definitions, each property of the tool pointing into it (an
    OpenAPI-derived tool: an issue has a user, who has a repo, which has an org, ...)."""
    return {
        "type": "object",
        "properties": {f"p{i}": {"$ref": f"#/$defs/D{i}"} for i in range(n)},
        "$defs": {
            f"D{i}": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "next": {"$ref": f"#/$defs/D{(i + 1) % n}"},
                },
            }
            for i in range(n)
        },
    }


def _expressions(kinds: int) -> dict[str, Any]:
    """An expression language: node kinds that hold each other through a union."""
    defs: dict[str, Any] = {"Expr": {"anyOf": [{"$ref": f"#/$defs/N{i}"} for i in range(kinds)]}}
    for i in range(kinds):
        defs[f"N{i}"] = {
            "type": "object",
            "properties": {
                "op": {"const": f"op{i}"},
                "args": {"type": "array", "items": {"$ref": "#/$defs/Expr"}},
                "left": {"$ref": f"#/$defs/N{(i + 1) % kinds}"},
            },
            "required": ["op"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": {"filter": {"$ref": "#/$defs/Expr"}},
        "required": ["filter"],
        "$defs": defs,
    }


@pytest.mark.parametrize("big", [_ring(60), _expressions(16)], ids=["ring", "expressions"])
def test_mutually_recursive_definitions_stay_references(big: dict[str, Any]) -> None:
    # Inlined along every path until it came back to where it started, a ring of n definitions
    # grew to n^3 copies (from 40 it no longer compiled) and an expression language grew
    # exponentially with its kinds. Each definition on a cycle is now kept once.
    ours = precheck_schema(big)
    assert len(json.dumps(ours)) < 2 * len(json.dumps(big))
    assert sorted(ours["$defs"]) == sorted(big["$defs"])
    # Verdicts against `jsonschema`, which tries every branch of a union in full: fewer kinds.
    schema = big if "p0" in big["properties"] else _expressions(4)
    tools = Toolset([{"name": "t", "parameters": schema}])
    validator = jsonschema.Draft202012Validator(schema)
    if "filter" in schema["properties"]:
        deep: Any = {"op": "op3", "args": []}
        for depth in range(6):
            kind = depth % 4
            deep = {"op": f"op{kind}", "args": [deep], "left": {"op": f"op{(kind + 1) % 4}"}}
        good, bad = {"filter": deep}, {"filter": {"op": "op1", "args": [{"op": "op99"}]}}
    else:
        chain: Any = {"name": "end"}
        for _ in range(50):
            chain = {"name": "x", "next": chain}
        good, bad = {"p0": chain}, {"p7": {"next": {"next": {"name": 5}}}}
    for value, ok in [(good, True), (bad, False)]:
        assert validator.is_valid(value) is ok
        asm = Assembler(tools=tools)
        text = json.dumps(value)
        for i in range(0, len(text), 7):
            asm.feed(0, id="c1", name="t", arguments=text[i : i + 7])
        (call,) = asm.finish()
        assert (call.error is None) is ok, call.error
        assert tools.validate(call).ok is ok


def test_a_recursive_root_is_still_the_tools_own_object() -> None:
    # The whole tool schema a reference to a recursive definition: the root is that object,
    # and only the references inside it stay.
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    ours = precheck_schema(schema)
    assert ours["type"] == "object"
    assert ours["properties"]["kids"]["items"] == {"$ref": "#/$defs/Node"}


def test_self_contained_schema_has_no_refs_when_not_recursive() -> None:
    schema = Toolset([CreateCustomer]).openai()[0]["function"]["parameters"]
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    assert schema["properties"]["address"]["description"] == "Billing address"
    assert schema["properties"]["address"]["properties"]["city"]["description"] == "City"
    shipping = schema["properties"]["shipping"]["anyOf"]
    assert shipping[1] == {"type": "null"}
    assert shipping[0]["additionalProperties"] is False
    assert shipping[0]["required"] == ["street", "city", "zip"]


def test_every_object_closed_and_every_property_required() -> None:
    def check(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert node["required"] == list(node.get("properties", {}))
            for value in node.values():
                check(value)
        elif isinstance(node, list):
            for value in node:
                check(value)

    for tool in Toolset(TWELVE).openai():
        check(tool["function"]["parameters"])


def test_optional_field_is_nullable_union_and_required() -> None:
    schema = strict_schema(Schedule.model_json_schema(), tool="s")
    assert schema["properties"]["notes"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "Free text",
        "title": "Notes",
    }
    assert "notes" in schema["required"]


def test_decimal_and_datetime_shapes() -> None:
    pay = strict_schema(Pay.model_json_schema(), tool="pay")
    number = pay["properties"]["amount"]["anyOf"][0]
    assert number == {"multipleOf": 0.01, "type": "number"}
    sched = strict_schema(Schedule.model_json_schema(), tool="s")
    assert sched["properties"]["start"]["format"] == "date-time"
    assert sched["properties"]["day"]["format"] == "date"


def test_output_is_deterministic() -> None:
    first = json.dumps(Toolset(TWELVE).openai())
    second = json.dumps(Toolset(list(TWELVE)).openai())
    assert first == second
    # Key order inside a function object is fixed.
    assert list(Toolset([GetWeather]).openai()[0]["function"]) == [
        "name",
        "description",
        "parameters",
        "strict",
    ]


def test_export_does_not_mutate_the_source() -> None:
    source = Node.model_json_schema()
    before = copy.deepcopy(source)
    strict_schema(source, tool="n")
    precheck_schema(source)
    inline_refs(source)
    assert source == before


# ---------------------------------------------------------------------------------------------
# Responses and Anthropic shapes


def test_responses_shape() -> None:
    tool = Toolset([GetWeather]).responses()[0]
    assert list(tool) == ["type", "name", "description", "parameters", "strict"]
    assert tool["type"] == "function" and tool["name"] == "get_weather"
    assert tool["strict"] is True
    helper = openai.pydantic_function_tool(GetWeather, name="get_weather")["function"]
    assert tool["parameters"] == _strip(_resolve(helper["parameters"]), ("default", "$defs"))


def test_anthropic_shape_keeps_optional_fields_optional() -> None:
    tool = Toolset([SearchFlights]).anthropic()[0]
    assert list(tool) == ["name", "input_schema"]  # no docstring, so no description
    schema = tool["input_schema"]
    assert schema["required"] == ["origin", "destination"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["passengers"]["default"] == 1
    assert schema["properties"]["passengers"]["minimum"] == 1


def test_anthropic_description_from_docstring() -> None:
    tool = Toolset([CreateCustomer]).anthropic()[0]
    assert tool["description"] == "Create a customer record."
    assert "$ref" not in json.dumps(tool)


# ---------------------------------------------------------------------------------------------
# What the strict subset cannot express


class OpenDict(BaseModel):
    labels: dict[str, str]


class ExtraAllowed(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


class Inner(BaseModel):
    scores: dict[str, int]


class Outer(BaseModel):
    items: list[Inner]


class Pair(BaseModel):
    point: tuple[int, int]


@pytest.mark.parametrize(
    ("model", "path", "keyword"),
    [
        (OpenDict, "labels", "additionalProperties"),
        (ExtraAllowed, "(root)", "additionalProperties"),
        (Outer, "items[].scores", "additionalProperties"),
        (Pair, "point", "prefixItems"),
    ],
)
def test_inexpressible_model_raises_naming_the_field(
    model: type[BaseModel], path: str, keyword: str
) -> None:
    toolset = Toolset([model])
    with pytest.raises(SchemaExportError) as info:
        toolset.openai()
    assert info.value.path == path
    assert info.value.keyword == keyword
    assert path in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(SchemaExportError):
        toolset.responses()


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}}, "not"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "if": {"required": ["a"]},
                "then": {"required": ["a"]},
            },
            "if",
        ),
        ({"type": "object", "patternProperties": {"^x": {"type": "string"}}}, "patternProperties"),
        ({"type": "object", "additionalProperties": True}, "additionalProperties"),
        (
            {
                "type": "object",
                "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
            },
            "oneOf",
        ),
        ({"anyOf": [{"type": "object"}, {"type": "null"}]}, "type"),
        (
            {
                "type": "object",
                "properties": {
                    "a": {
                        "allOf": [
                            {"type": "object", "properties": {"x": {"type": "string"}}},
                            {"type": "object", "properties": {"x": {"type": "integer"}}},
                        ]
                    }
                },
            },
            "allOf",
        ),
    ],
)
def test_unsupported_keywords(schema: dict[str, Any], keyword: str) -> None:
    with pytest.raises(SchemaExportError) as info:
        strict_schema(schema, tool="t")
    assert info.value.keyword == keyword
    relaxed = export_schema(schema, tool="t", strict=False)
    assert relaxed.strict is False
    assert relaxed.relaxations[0].keyword == keyword


def test_non_strict_toolset_relaxes_only_the_tools_that_need_it() -> None:
    toolset = Toolset([GetWeather, OpenDict], strict=False)
    exported = {t["function"]["name"]: t["function"] for t in toolset.openai()}
    assert exported["get_weather"]["strict"] is True
    assert exported["open_dict"]["strict"] is False
    # The relaxed schema keeps the dict open and optional fields optional.
    assert exported["open_dict"]["parameters"]["properties"]["labels"]["additionalProperties"] == {
        "type": "string"
    }
    assert [(r.tool, r.path, r.keyword) for r in toolset.relaxations] == [
        ("open_dict", "labels", "additionalProperties")
    ]
    # The same toolset can still be forced strict per export, which then raises.
    with pytest.raises(SchemaExportError):
        toolset.openai(strict=True)
    assert Toolset([GetWeather]).relaxations == []


def test_strict_override_false_on_a_strict_toolset() -> None:
    tool = Toolset([OpenDict]).openai(strict=False)[0]["function"]
    assert tool["strict"] is False


def test_flattenable_all_of_is_flattened() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {
                "allOf": [
                    {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
                    {"properties": {"y": {"type": "integer"}}},
                ]
            }
        },
    }
    out = strict_schema(schema, tool="t")
    a = out["properties"]["a"]
    assert "allOf" not in a
    assert a["properties"] == {"x": {"type": "string"}, "y": {"type": "integer"}}
    assert a["required"] == ["x", "y"] and a["additionalProperties"] is False


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Adopt(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


def test_discriminated_union_becomes_any_of() -> None:
    schema = strict_schema(Adopt.model_json_schema(), tool="adopt")
    pet = schema["properties"]["pet"]
    assert "oneOf" not in pet and "discriminator" not in pet
    assert [b["properties"]["kind"]["const"] for b in pet["anyOf"]] == ["cat", "dog"]
    assert strict_problems(Adopt.model_json_schema(), tool="adopt") == []


class Shelter(BaseModel):
    """Pets, one of them picked by its tag, at two depths."""

    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    waiting: list[Annotated[Cat | Dog, Field(discriminator="kind")]] = []


def _references(node: Any) -> list[str]:
    """Every `$ref` and every `discriminator.mapping` value under `node`."""
    found: list[str] = []
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.append(node["$ref"])
        disc = node.get("discriminator")
        if isinstance(disc, dict) and isinstance(disc.get("mapping"), dict):
            found.extend(disc["mapping"].values())
        for value in node.values():
            found.extend(_references(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_references(item))
    return found


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    target: Any = schema
    for token in ref.removeprefix("#/").split("/") if ref != "#" else []:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or token not in target:
            return False
        target = target[token]
    return True


@pytest.mark.parametrize("model", [Shelter, Adopt])
def test_no_export_points_at_an_inlined_definition(model: type[BaseModel]) -> None:
    # Pydantic's discriminator maps each tag to `#/$defs/Cat`; once the branches are inlined,
    # such a pointer leads nowhere, and a provider or tool that follows it fails.
    tools = Toolset([model])
    anthropic = tools.anthropic()[0]["input_schema"]
    openai_params = tools.openai()[0]["function"]["parameters"]
    responses = tools.responses()[0]["parameters"]
    for schema in (anthropic, openai_params, responses, inline_refs(model.model_json_schema())):
        refs = _references(schema)
        assert all(_resolves(schema, ref) for ref in refs), refs
    pet = anthropic["properties"]["pet"]
    assert pet["discriminator"] == {"propertyName": "kind"}
    assert [b["properties"]["kind"]["const"] for b in pet["oneOf"]] == ["cat", "dog"]
    jsonschema.Draft202012Validator(anthropic).validate({"pet": {"kind": "dog", "good": True}})


class Marked(BaseModel):
    """Fields carrying toolwire's own keywords, and a property named like one."""

    flag: bool = Field(json_schema_extra={"x-toolwire-coerce": ["bool_word"]})
    since: int = Field(json_schema_extra={"x-unit": "unix-seconds"})
    token: SecretStr = Field(json_schema_extra={"x-secret": True})
    phone: str = Field(json_schema_extra={"x-user-supplied": True})
    tags: list[Annotated[str, Field(json_schema_extra={"x-unit": "tag"})]]
    unit: str = Field(alias="x-unit", json_schema_extra={"examples": [{"x-unit": "data"}]})


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(*(_keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_keys(v) for v in node))
    return set()


def test_strict_exports_leave_out_toolwire_keywords() -> None:
    # OpenAI's strict mode refuses keywords outside its subset; these only mean something to
    # toolwire, which reads them from its own copy of the schema.
    from toolwire import coercion, subschemas, validation
    from toolwire.schema_export import TOOLWIRE_KEYWORDS

    assert {
        subschemas.SECRET_KEY,
        validation.USER_SUPPLIED_KEY,
        coercion.UNIT_KEY,
        coercion.COERCE_KEY,
    } == TOOLWIRE_KEYWORDS
    tools = Toolset([Marked])
    for schema in (
        tools.openai()[0]["function"]["parameters"],
        tools.responses()[0]["parameters"],
        strict_schema(Marked.model_json_schema(), tool="marked"),
    ):
        properties = schema["properties"]
        assert "x-unit" in properties  # a property name, not a keyword
        assert properties["x-unit"]["examples"] == [{"x-unit": "data"}]  # data, kept as is
        keywords = _keys({k: v for k, v in properties.items() if k != "x-unit"})
        assert not keywords & TOOLWIRE_KEYWORDS, keywords & TOOLWIRE_KEYWORDS
    # toolwire itself still reads them: the word is coerced, the secret stays out of payloads.
    assembler = Assembler(tools=tools)
    arguments = (
        '{"flag": "yes", "since": 1700000000, "token": "s3cr3t", "phone": "1", "tags": [],'
        ' "x-unit": "kg"}'
    )
    assembler.feed(0, id="call_1", name="marked", arguments=arguments)
    outcome = tools.validate(assembler.finish()[0])
    assert outcome.ok and outcome.model is not None and outcome.model.flag is True
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/flag", "bool_word")]


def test_nesting_limit() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    node = schema
    for _ in range(11):
        # Closed: one that declares no property is free-form, itself outside the subset.
        child: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
        node["properties"]["x"] = child
        node = child
    problems = strict_problems(schema, tool="deep")
    assert [p.keyword for p in problems] == ["type"]
    assert problems[0].path.count("x") == 10


def test_enum_limit() -> None:
    schema = {"type": "object", "properties": {"e": {"enum": list(range(1001))}}}
    assert [p.keyword for p in strict_problems(schema, tool="t")] == ["enum"]


def test_enum_values_count_across_the_whole_schema() -> None:
    # OpenAI's limit is on enum values across all enum properties, not on each one.
    def with_enums(sizes: list[int]) -> dict[str, Any]:
        props = {f"e{i}": {"type": "integer", "enum": list(range(n))} for i, n in enumerate(sizes)}
        return {"type": "object", "properties": props}

    assert strict_problems(with_enums([500, 500]), tool="t") == []
    problems = strict_problems(with_enums([500, 400, 101, 7]), tool="t")
    assert [(p.path, p.keyword) for p in problems] == [("e2", "enum")]


def test_large_string_enums_and_long_names_are_outside_the_strict_subset() -> None:
    # More than 250 string values may hold at most 15,000 characters together.
    words = [f"{i:03d}" + "x" * 57 for i in range(251)]  # 251 values of 60 characters
    large = {"type": "object", "properties": {"w": {"type": "string", "enum": words}}}
    assert [p.keyword for p in strict_problems(large, tool="t")] == ["enum"]
    short = {"type": "object", "properties": {"w": {"type": "string", "enum": words[:250]}}}
    assert strict_problems(short, tool="t") == []
    # Names, enum and const values: at most 120,000 characters in all.
    names = {f"{i:04d}" + "n" * 196: {"type": "string"} for i in range(601)}
    wide = {"type": "object", "properties": names}
    assert [p.keyword for p in strict_problems(wide, tool="t")] == ["properties"]
    tools = Toolset([{"name": "wide", "parameters": wide}], strict=False)
    assert tools.openai()[0]["function"]["strict"] is False


def test_plain_dict_tool_export_round_trip() -> None:
    mcp_tool = {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
    }
    toolset = Toolset([mcp_tool])
    fn = toolset.openai()[0]["function"]
    assert fn["parameters"]["required"] == ["path", "limit"]
    assert fn["parameters"]["additionalProperties"] is False
    # Optional in the source: offered as a union with null (OpenAI's optional-parameter idiom).
    assert fn["parameters"]["properties"]["limit"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}]
    }
    assert fn["parameters"]["properties"]["path"] == {"type": "string"}
    assert toolset.anthropic()[0]["input_schema"]["required"] == ["path"]


class AnyField(BaseModel):
    payload: Any


class BareList(BaseModel):
    values: list[Any]


class OptionalAny(BaseModel):
    extra: Any | None = None


class UniqueTags(BaseModel):
    tags: set[str]


@pytest.mark.parametrize(
    ("model", "path", "keyword"),
    [
        (AnyField, "payload", "type"),
        (BareList, "values[]", "type"),
        (OptionalAny, "extra", "type"),
        (UniqueTags, "tags", "uniqueItems"),
    ],
)
def test_keywords_outside_the_strict_subset_raise_naming_the_field(
    model: type[BaseModel], path: str, keyword: str
) -> None:
    # OpenAI rejects a node without a type ("schema must have a 'type' key") and
    # `uniqueItems`; an export that passed them on would fail at request time instead.
    with pytest.raises(SchemaExportError) as info:
        Toolset([model]).openai()
    assert (info.value.path, info.value.keyword) == (path, keyword)
    relaxed = Toolset([model], strict=False).openai()[0]["function"]
    assert relaxed["strict"] is False


def test_recursive_references_with_slash_and_tilde_names_stay_valid_pointers() -> None:
    # A definition named `a/b` is `#/$defs/a~1b`; a kept reference must spell it that way, and
    # two pointers that differ only by an escaped `/` must not share a definition.
    node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/a~1b"}}}
    schema = {
        "$defs": {"a/b": node},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/a~1b"}},
    }
    out = inline_refs(schema)
    assert out["$defs"]["a/b"]["properties"]["next"] == {"$ref": "#/$defs/a~1b"}
    tools = Toolset([{"name": "chain", "parameters": schema}])
    assert tools.validate(_finished(tools, '{"n": {"next": {"next": {}}}}')).ok
    assert not tools.validate(_finished(tools, '{"n": {"next": 3}}')).ok
    twins = {
        "type": "object",
        "properties": {
            "x/y": {"type": "object", "properties": {"me": {"$ref": "#/properties/x~1y"}}},
            "x": {
                "type": "object",
                "properties": {
                    "y": {"type": "array", "items": {"$ref": "#/properties/x/properties/y"}}
                },
            },
        },
    }
    kept = inline_refs(twins)["$defs"]
    assert len(kept) == 2
    assert {d.get("type") for d in kept.values()} == {"object", "array"}


def _finished(tools: Toolset, arguments: str) -> ToolCall:
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="chain", arguments=arguments)
    (call,) = assembler.finish()
    return call


class Paging(BaseModel):
    path: str
    limit: int = 5


def test_null_for_an_optional_field_passes_the_pre_check() -> None:
    # A strict export offers null for a plain tool's optional parameter, and validation reads
    # that null (or one a non-strict model sends for a field with a default) as "absent": the
    # streaming pre-check must not fail the call first.
    plain = {
        "name": "read_file",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer"},
                "opts": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                    "required": ["a"],
                },
            },
            "required": ["path"],
        },
    }
    arguments = '{"path": "x", "limit": null, "opts": {"a": 1, "b": null}}'
    for tools, name in ((Toolset([plain]), "read_file"), (Toolset([Paging]), "paging")):
        if name == "read_file":
            parameters = tools.openai()[0]["function"]["parameters"]
            assert parameters["properties"]["limit"]["anyOf"][1] == {"type": "null"}
        else:
            arguments = '{"path": "x", "limit": null}'
        assembler = Assembler(tools=tools)
        assembler.feed(0, id="call_1", name=name, arguments=arguments)
        assert assembler.drain_errors() == []
        assert not assembler.failed
        (call,) = assembler.finish()
        assert call.error is None
        assert tools.validate(call).ok
    # A wrong value there is still refused while streaming.
    assembler = Assembler(tools=Toolset([plain]))
    assembler.feed(0, id="call_1", name="read_file", arguments='{"path": "x", "limit": "many"')
    assert assembler.failed


@pytest.mark.parametrize(
    ("properties", "path"),
    [
        ({"x": True}, "x"),
        ({"x": False}, "x"),
        ({"x": {"type": "array", "items": True}}, "x[]"),
        ({"x": {"anyOf": [True, {"type": "null"}]}}, "x"),
    ],
)
def test_boolean_schemas_are_outside_the_strict_subset(
    properties: dict[str, Any], path: str
) -> None:
    # `true` means any value, as `{}` does, and OpenAI asks every node for a `type`: an export
    # that passed the boolean on would be refused at request time.
    tool = {"name": "t", "parameters": {"type": "object", "properties": properties}}
    with pytest.raises(SchemaExportError) as info:
        Toolset([tool]).openai()
    assert (info.value.path, info.value.keyword) == (path, "type")
    relaxed = Toolset([tool], strict=False).openai()[0]["function"]
    assert relaxed["strict"] is False


class Invoice(BaseModel):
    amount: Decimal
    tip: Decimal | None = None
    lines: list[Decimal] = []


def _invoice_accepted(tools: Toolset, arguments: str) -> bool:
    """Whether an `invoice` call with these arguments, streamed and validated, may run."""
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="invoice", arguments=arguments)
    (call,) = assembler.finish()
    return tools.validate(call).ok


def test_strict_decimal_strings_are_the_numbers_validation_accepts() -> None:
    # A strict export binds the model to the schema: every `Decimal` string it allows must be
    # one validation accepts (a number as JSON writes it), and those must all still be allowed.
    tools = Toolset([Invoice])
    parameters = tools.openai()[0]["function"]["parameters"]
    checker = jsonschema.Draft202012Validator(parameters)
    for text in ("12.50", "-0.5", "1e3", "0", "12,50", "$5", "abc", ".5", "+5", "007", "1_000"):
        arguments = json.dumps({"amount": text, "tip": None, "lines": [text]})
        accepted = _invoice_accepted(tools, arguments)
        assert checker.is_valid(json.loads(arguments)) == accepted, text
        assert accepted == (text in ("12.50", "-0.5", "1e3", "0")), text
    assert tools.responses()[0]["parameters"] == parameters


def test_anthropic_decimal_strings_are_the_numbers_validation_accepts() -> None:
    # The input schema is all the model knows of the field: a string it allows there must be
    # one validation accepts, as in the OpenAI exports.
    tools = Toolset([Invoice])
    checker = jsonschema.Draft202012Validator(tools.anthropic()[0]["input_schema"])
    for text in ("12.50", "-0.5", "1e3", "0", "12,50", "$5", "abc", ".5", "+5", "007", "1_000"):
        arguments = json.dumps({"amount": text, "tip": text, "lines": [text]})
        accepted = _invoice_accepted(tools, arguments)
        assert checker.is_valid(json.loads(arguments)) == accepted, text
    assert checker.is_valid({"amount": 12.5})


class Crawl(BaseModel):
    page: HttpUrl
    token: SecretStr
    since: datetime | None = None


FETCH = {
    "name": "fetch",
    "inputSchema": {
        "type": "object",
        "properties": {"url": {"type": "string", "format": "uri", "minLength": 1}},
        "required": ["url"],
    },
}


def test_strict_exports_leave_out_formats_openai_refuses() -> None:
    # OpenAI refuses a strict tool whose schema names another format ("'uri' is not a valid
    # format"): the whole request fails. Validation still checks the value.
    tools = Toolset([Crawl, FETCH])
    crawl, fetch = (t["function"] for t in tools.openai())
    assert crawl["strict"] is True and fetch["strict"] is True
    props = crawl["parameters"]["properties"]
    assert "format" not in props["page"] and "format" not in props["token"]
    assert props["since"]["anyOf"][0]["format"] == "date-time"
    assert "format" not in fetch["parameters"]["properties"]["url"]
    assert tools.responses()[0]["parameters"] == crawl["parameters"]
    # Schemas that are not strict keep them.
    assert tools.anthropic()[0]["input_schema"]["properties"]["page"]["format"] == "uri"
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="crawl", arguments='{"page": "not a url", "token": "t"}')
    (call,) = assembler.finish()
    assert [e.path for e in tools.validate(call).errors] == ["/page"]


class Login(BaseModel):
    """Log in."""

    user: str = Field(examples=["ada"])
    password: str = Field("hunter2", examples=["s3cret"], json_schema_extra={"x-secret": True})
    token: SecretStr = SecretStr("sk-live-123")
    backup: SecretStr | None = SecretStr("sk-live-456")


def test_secret_defaults_and_examples_stay_out_of_every_export() -> None:
    # Redaction keeps these values out of logs and model messages; the tool definitions sent
    # to providers must not carry them either (nor SecretStr's mask, which a model would copy).
    tools = Toolset([Login])
    sent = [
        tools.anthropic(),
        tools.openai(),
        tools.openai(strict=False),
        tools.responses(),
        [export_schema(Login.model_json_schema(), tool="login", strict=False).schema],
        [precheck_schema(Login.model_json_schema())],
    ]
    for exported in sent:
        text = json.dumps(exported)
        for secret in ("hunter2", "s3cret", "*****"):
            assert secret not in text
    assert tools.anthropic()[0]["input_schema"]["properties"]["user"]["examples"] == ["ada"]


def test_an_extension_keywords_value_is_data_left_as_written() -> None:
    # An `x-` keyword holds the author's data, even one shaped like a schema: nothing in it is
    # closed or dropped.
    ui = {"type": "object", "properties": {"width": {}}, "default": None}
    schema = {"type": "object", "properties": {"a": {"type": "string", "x-ui": ui}}}
    tools = Toolset([{"name": "t", "parameters": schema}])
    assert tools.schema("t")["properties"]["a"]["x-ui"] == ui
    assert tools.anthropic()[0]["input_schema"]["properties"]["a"]["x-ui"] == ui


def test_a_draft_7_tuple_is_exported_non_strict() -> None:
    # A list of `items` is a tuple before draft 2020-12; OpenAI takes one schema there.
    rgb = {
        "name": "set_color",
        "parameters": {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "rgb": {
                    "type": "array",
                    "items": [{"type": "integer"}] * 3,
                    "additionalItems": False,
                }
            },
            "required": ["rgb"],
        },
    }
    tools = Toolset([rgb], strict=False)
    (exported,) = tools.openai()
    assert exported["function"]["strict"] is False
    assert [r.keyword for r in tools.relaxations] == ["items"]
    with pytest.raises(SchemaExportError, match="tuples"):
        Toolset([rgb]).openai()


def test_draft_4_exclusive_bounds_are_exported_as_numbers() -> None:
    # Draft 4 marks `minimum` exclusive with a boolean; OpenAI's subset wants the bound itself.
    old = {
        "name": "page",
        "parameters": {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object",
            "properties": {
                "size": {"type": "integer", "minimum": 0, "exclusiveMinimum": True},
                "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": False},
            },
            "required": ["size", "ratio"],
        },
    }
    (exported,) = Toolset([old]).openai()
    parameters = exported["function"]["parameters"]
    assert exported["function"]["strict"] is True and "$schema" not in parameters
    assert parameters["properties"]["size"] == {"type": "integer", "exclusiveMinimum": 0}
    assert parameters["properties"]["ratio"] == {"type": "number", "maximum": 1}
    validator = jsonschema.Draft202012Validator(parameters)
    assert not validator.is_valid({"size": 0, "ratio": 1})
    assert validator.is_valid({"size": 1, "ratio": 1})


def test_gemini_property_ordering_is_left_out_of_strict_exports() -> None:
    flight = {
        "name": "book_flight",
        "parameters": {
            "type": "object",
            "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}},
            "required": ["origin", "destination"],
            "propertyOrdering": ["origin", "destination"],
        },
    }
    (exported,) = Toolset([flight]).openai()
    assert exported["function"]["strict"] is True
    assert "propertyOrdering" not in exported["function"]["parameters"]
    (anthropic,) = Toolset([flight]).anthropic()
    assert anthropic["input_schema"]["propertyOrdering"] == ["origin", "destination"]


class BookRoom(BaseModel):
    """Book a room at local wall-clock time."""

    starts_at: NaiveDatetime
    confirmed_at: AwareDatetime | None = None


@pytest.mark.parametrize("export", ["openai", "responses", "anthropic"])
def test_a_naive_timestamp_is_exported_as_a_value_it_accepts(export: str) -> None:
    # RFC 3339's `date-time` needs an offset, which a NaiveDatetime refuses: exported with
    # that format, the field could take no value at all.
    tools = Toolset([BookRoom])
    exported = getattr(tools, export)()[0]
    schema = (
        exported.get("input_schema")
        or exported.get("parameters")
        or exported["function"]["parameters"]
    )
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
    naive = {"starts_at": "2024-05-01T09:00:00", "confirmed_at": None}
    assert validator.is_valid(naive)
    asm = Assembler(tools=tools)
    asm.feed(0, id="c1", name="book_room", arguments=json.dumps(naive))
    (done,) = asm.finish()
    assert tools.validate(done).ok
    # An aware timestamp keeps its format.
    assert not validator.is_valid({**naive, "confirmed_at": "2024-05-01T09:00:00"})


def _verdict(tools: Toolset, name: str, arguments: str, *, prechecked: bool) -> Any:
    """The outcome of one call, assembled with the toolset's pre-check or without any."""
    assembler = Assembler(tools=tools if prechecked else None)
    assembler.feed(0, id="call_1", name=name, arguments=arguments)
    (call,) = assembler.finish()
    return call, tools.validate(call)


_NO_PARAMETERS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


@pytest.mark.parametrize(
    "declared",
    [{"type": "object"}, {}, {"type": "object", "properties": {}}],
    ids=["object", "empty", "no-properties"],
)
def test_an_mcp_tool_without_parameters_exports_strict_and_refuses_a_key(
    declared: dict[str, Any],
) -> None:
    # MCP servers declare a tool without parameters as `{"type": "object"}` (or `{}`): a
    # gateway exporting them under the default strict mode must not fail on them, and what
    # toolwire then accepts must be what it told the provider, an object with no key.
    tools = Toolset([{"name": "list_rooms", "description": "List.", "inputSchema": declared}])
    (chat,) = tools.openai()
    (responses,) = tools.responses()
    assert chat["function"]["strict"] is True and responses["strict"] is True
    assert chat["function"]["parameters"] == _NO_PARAMETERS == responses["parameters"]
    assert tools.anthropic()[0]["input_schema"]["additionalProperties"] is False
    for prechecked in (True, False):
        call, outcome = _verdict(tools, "list_rooms", "{}", prechecked=prechecked)
        assert outcome.ok and call.error is None
        call, outcome = _verdict(tools, "list_rooms", '{"floor": 2}', prechecked=prechecked)
        assert not outcome.ok and outcome.kind == "model_error"
        assert [(e.path, e.code) for e in outcome.errors] == [("/floor", "unknown_field")]
        # The pre-check refuses it as it streams, before validation does.
        assert (call.error is not None) == prechecked


def test_a_root_declared_open_stays_open_and_strict_export_refuses_it() -> None:
    # `additionalProperties: true` says the tool takes any key: not a tool without parameters.
    tool = {"name": "log", "parameters": {"type": "object", "additionalProperties": True}}
    with pytest.raises(SchemaExportError) as caught:
        Toolset([tool]).openai()
    assert (caught.value.path, caught.value.keyword) == ("(root)", "additionalProperties")
    with pytest.raises(SchemaExportError):
        Toolset([tool]).responses()
    tools = Toolset([tool], strict=False)
    (chat,) = tools.openai()
    assert chat["function"]["strict"] is False
    assert chat["function"]["parameters"] == {"type": "object", "additionalProperties": True}
    for prechecked in (True, False):
        _, outcome = _verdict(tools, "log", '{"level": "info"}', prechecked=prechecked)
        assert outcome.ok


def test_a_nested_object_without_declared_properties_is_free_form() -> None:
    # OpenAPI-derived tools write a free-form object as `"properties": {}`: JSON Schema takes
    # any key there, and so do the pre-check, validation and the exports that keep it.
    parameters = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "metadata": {"type": "object", "properties": {}, "description": "Any labels."},
        },
        "required": ["name"],
    }
    tool = {"name": "create_item", "parameters": parameters}
    tools = Toolset([tool], strict=False)
    sent = {"name": "a", "metadata": {"team": "ops", "cost": {"cents": 5}}}
    jsonschema.validate(sent, parameters)
    for prechecked in (True, False):
        call, outcome = _verdict(tools, "create_item", json.dumps(sent), prechecked=prechecked)
        assert outcome.ok and call.error is None
        assert call.value == sent
    for exported in (
        tools.schema("create_item"),
        tools.anthropic()[0]["input_schema"],
        tools.openai()[0]["function"]["parameters"],
    ):
        jsonschema.validate(sent, exported)
        assert "additionalProperties" not in exported["properties"]["metadata"]
        # The parameters themselves declare properties and stay closed.
        assert exported["additionalProperties"] is False
    _, outcome = _verdict(tools, "create_item", '{"name": "a", "nam": 1}', prechecked=True)
    assert [(e.path, e.code) for e in outcome.errors] == [("/nam", "unknown_field")]
    # OpenAI's strict subset has no open object: refused by name, not closed behind the
    # author's back (the model could then send no label at all).
    with pytest.raises(SchemaExportError) as caught:
        Toolset([tool]).openai()
    assert (caught.value.path, caught.value.keyword) == ("metadata", "additionalProperties")
    assert tools.openai()[0]["function"]["strict"] is False


class NoOptions(BaseModel):
    pass


class Restart(BaseModel):
    """Restart a service."""

    service: str
    options: NoOptions


def test_a_nested_model_without_fields_stays_closed() -> None:
    # Pydantic writes a model without fields as `"properties": {}` too, and drops any key sent
    # to it: toolwire refuses such a key as it does for a model with fields.
    tools = Toolset([Restart])
    parameters = tools.openai()[0]["function"]["parameters"]
    assert tools.openai()[0]["function"]["strict"] is True
    assert parameters["properties"]["options"]["additionalProperties"] is False
    assert tools.schema("restart")["properties"]["options"]["additionalProperties"] is False
    for prechecked in (True, False):
        arguments = '{"service": "db", "options": {}}'
        _, outcome = _verdict(tools, "restart", arguments, prechecked=prechecked)
        assert outcome.ok
        _, outcome = _verdict(
            tools, "restart", '{"service": "db", "options": {"force": true}}', prechecked=prechecked
        )
        assert [(e.path, e.code) for e in outcome.errors] == [("/options/force", "unknown_field")]
