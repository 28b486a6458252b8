"""Differential test over a corpus of realistic tool definitions (`tool_corpus.py`).

For every tool, seeded valid instances and near misses (`corpus_gen.py`) are streamed through
`Assembler(tools=toolset)` cut at random points, as str or bytes fragments, and three verdicts
are compared: the streaming pre-check (`drain_errors()` and `call.error`), `Toolset.validate`,
and Pydantic (model tools) or `jsonschema` (plain tools) directly. The payload for the model is
checked for secrets and size, and each tool's exports for the OpenAI strict subset.

Left out on purpose, as documented contracts:
* a value a recorded coercion repairs (`"30"` for 30, `"High"` for `"high"`) is flagged while
  streaming, then accepted by validation (the README's `enum_case` example);
* a number a float field would read as infinity (`1e400`) is refused though Pydantic and
  `jsonschema` take it (`coercion` module docs), and a `Decimal` field reads it exactly.

`TOOLWIRE_CORPUS_INSTANCES` sets the instances per tool (40 by default; more for a long hunt).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from tests.corpus_gen import SECRET, Gen
from tests.tool_corpus import MODELS, PLAIN
from toolwire import Assembler, ToolCall, Toolset
from toolwire.coercion import SAFE_RULES
from toolwire.jsonschema_dialect import extended_validator
from toolwire.schema_export import STRICT_FORMATS

# Rules a safe toolset may record besides `SAFE_RULES` (documented as always on).
ALLOWED_RULES = SAFE_RULES | {"null_as_absent", "default_timezone"}
INSTANCES_PER_TOOL = int(os.environ.get("TOOLWIRE_CORPUS_INSTANCES", "40"))
OVERFLOW = "1e400"


class _Raw:
    """A number written as is (JSON has no infinity: `json.dumps` would write `Infinity`)."""

    def __init__(self, text: str) -> None:
        self.text = text


def dumps(value: Any, rng: random.Random) -> str:
    """JSON text for `value`, an infinite float written as a number past a double's range."""

    def walk(v: Any) -> Any:
        if isinstance(v, float) and math.isinf(v):
            return _Raw(OVERFLOW if v > 0 else "-" + OVERFLOW)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    def raw(v: object) -> str:
        assert isinstance(v, _Raw)
        return f"\x01{v.text}\x01"

    text = json.dumps(walk(value), ensure_ascii=rng.random() < 0.3, default=raw)
    return text.replace('"\\u0001', "").replace('\\u0001"', "")


def stream(
    toolset: Toolset, name: str, text: str, rng: random.Random
) -> tuple[list[str], ToolCall]:
    """Feeds `text` cut at random points; every pre-check error seen, and the finished call."""
    data: str | bytes = text.encode() if rng.random() < 0.5 else text
    assembler = Assembler(tools=toolset)
    assembler.feed(0, id="call_1", name=name, arguments="")
    errors: list[str] = []
    i = 0
    while i < len(data):
        n = rng.choice([1, 2, 3, 5, 8, 13, 40])
        assembler.feed(0, arguments=data[i : i + n])
        i += n
        errors += [f"{e.path}: {e.message}" for _, e in assembler.drain_errors()]
    (call,) = assembler.finish()
    errors += [f"{e.path}: {e.message}" for _, e in assembler.drain_errors()]
    if call.error is not None:
        errors.append(f"{call.error.path}: {call.error.kind}: {call.error.message}")
    return errors, call


def by_name(model: type[BaseModel], value: Any) -> Any:
    """`value` with top-level aliases spelt as field names, where the model reads those."""
    config = model.model_config
    if not isinstance(value, dict) or not (
        config.get("validate_by_name") or config.get("populate_by_name")
    ):
        return value
    names = {f.alias: n for n, f in model.model_fields.items() if f.alias}
    return {names.get(k, k): v for k, v in value.items()}


def instances(gen: Gen, schema: dict[str, Any], model: type[BaseModel] | None) -> Iterator[Any]:
    for i in range(INSTANCES_PER_TOOL // 2):
        value = gen.valid(schema)
        if model is not None and i % 3 == 0:
            value = by_name(model, value)
        yield value
        yield gen.mutate(schema, value)
    yield {}


def pydantic_accepts(model: type[BaseModel], text: str, *, strict: bool) -> tuple[bool, Any]:
    try:
        return True, model.model_validate_json(text, strict=strict)
    except ValidationError:
        return False, None


def documented_refusal(outcome: Any, schema: dict[str, Any]) -> bool:
    """Whether every error is one toolwire means to give though Pydantic reads the value."""

    def promised(error: Any) -> bool:
        # The published schema closes every object that does not allow extra keys, so an
        # unknown key is refused even where Pydantic would ignore it (`test_validation.py`).
        if error.code == "unknown_field":
            return True
        # A timestamp without an offset, where the tool declares no default zone (`coercion`
        # module docs, `default_timezone`): which instant it names would be a guess.
        if error.code == "timezone_required":
            return True
        got = (error.got or "").strip('"')
        number = got.lstrip("-").replace(".", "", 1).isdigit()
        # A date or timestamp as a string of digits, which Pydantic reads as Unix time
        # (`coercion` module docs: refused as `unix_timestamp` whatever the rule set).
        if error.code == "format" and number:
            return True
        # An IP address as a JSON number (Pydantic reads 30 as 0.0.0.30): the published
        # schema says string, and no safe rule reads a number as an address (the pre-check
        # reports the type it got, `number`, as `got`).
        field = schema.get("properties", {}).get(error.path.lstrip("/"), {})
        return error.code == "type" and "ip" in str(field.get("format", ""))

    return bool(outcome.errors) and all(promised(e) for e in outcome.errors)


def problems_for(
    toolset: Toolset, name: str, model: type[BaseModel] | None, seed: int
) -> list[str]:
    rng = random.Random(seed)
    schema = toolset.schema(name)
    gen = Gen(schema, rng)
    oracle = None
    if model is None:
        cls = extended_validator(
            jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        )
        oracle = cls(schema, format_checker=cls.FORMAT_CHECKER)
    found: list[str] = []
    for value in instances(gen, schema, model):
        text = dumps(value, rng)
        early, call = stream(toolset, name, text, rng)
        outcome = toolset.validate(call)
        rules = {c.rule for c in outcome.coercions}
        where = f"{name}: {text[:300]}"
        if early and outcome.ok and not rules:
            found.append(f"pre-check rejects what validation accepts: {where} -> {early[:2]}")
        if outcome.ok and not rules <= ALLOWED_RULES:
            found.append(f"unsafe coercion {rules}: {where}")
        if model is not None:
            # Strict JSON validation must be accepted; a model that asks for lax validation
            # (`strict=False`) may be given more, by Pydantic itself.
            ok, instance = pydantic_accepts(model, text, strict=True)
            lax = model.model_config.get("strict") is False
            ok_as_configured = pydantic_accepts(model, text, strict=not lax)[0]
        else:
            assert oracle is not None
            ok, instance = oracle.is_valid(json.loads(text)), None
            ok_as_configured = ok
        oracle_name = "Pydantic" if model is not None else "jsonschema"
        if (
            ok
            and not outcome.ok
            and OVERFLOW not in text
            and not documented_refusal(outcome, schema)
        ):
            codes = [(e.path, e.code) for e in outcome.errors]
            found.append(f"validation rejects what {oracle_name} accepts: {where} -> {codes}")
        if ok and model is not None and outcome.ok and not rules and outcome.model != instance:
            found.append(f"model differs from Pydantic's: {where}")
        if not ok_as_configured and outcome.ok and not rules and OVERFLOW not in text:
            found.append(
                f"validation accepts, with no coercion, what {oracle_name} rejects: {where}"
            )
        if not outcome.ok:
            for style in ("openai-chat", "openai-responses", "anthropic"):
                content = json.dumps(outcome.to_message(call, style=style))
                if SECRET.lower() in content.lower():
                    found.append(f"secret in the {style} payload: {where}")
                if len(content) > 4000:
                    found.append(f"{style} payload of {len(content)} characters: {where}")
    return found


def _tools() -> list[tuple[str, Any]]:
    return [(m.__name__, m) for m in MODELS] + [(t["name"], t) for t in PLAIN]


TOOLS = _tools()


def test_the_corpus_is_large_and_has_unique_names() -> None:
    assert len(TOOLS) >= 150
    assert len(Toolset([tool for _, tool in TOOLS], strict=False).names()) == len(TOOLS)


@pytest.mark.parametrize(("label", "tool"), TOOLS, ids=[label for label, _ in TOOLS])
def test_verdicts_agree(label: str, tool: Any) -> None:
    toolset = Toolset([tool])
    (name,) = toolset.names()
    model = tool if isinstance(tool, type) else None
    seed = sum(map(ord, label)) + int(os.environ.get("TOOLWIRE_CORPUS_SEED", "0"))
    assert problems_for(toolset, name, model, seed=seed) == []


# OpenAI's strict subset ("Supported schemas"): what a strict export may hold.
_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
        # Kept by toolset exports on purpose (see test_export.py).
        "minLength",
        "maxLength",
        "title",
        "description",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "nullable",
        "discriminator",
        "contentMediaType",
        "contentSchema",
    }
)


def strict_violations(node: Any, path: str = "") -> Iterator[str]:
    """Where `node`, a strict export's parameters, leaves OpenAI's strict subset."""
    if not isinstance(node, dict):
        yield f"{path}: a boolean or non-object schema"
        return
    for key in set(node) - _STRICT_KEYWORDS:
        yield f"{path}: keyword {key}"
    if node.get("format") not in (None, *STRICT_FORMATS):
        yield f"{path}: format {node['format']}"
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        if key in node and isinstance(node[key], bool):
            yield f"{path}: {key} is a boolean"
    if "properties" in node or node.get("type") == "object":
        if node.get("additionalProperties") is not False:
            yield f"{path}: an open object"
        if set(node.get("required", [])) != set(node.get("properties", {})):
            yield f"{path}: not every property is required"
        for key, sub in node.get("properties", {}).items():
            yield from strict_violations(sub, f"{path}/{key}")
    if "items" in node:
        yield from strict_violations(node["items"], f"{path}[]")
    for branch in node.get("anyOf", []):
        yield from strict_violations(branch, f"{path}|")
    for key, sub in node.get("$defs", {}).items():
        yield from strict_violations(sub, f"#/$defs/{key}")


@pytest.mark.parametrize(("label", "tool"), TOOLS, ids=[label for label, _ in TOOLS])
def test_exports_are_valid_for_each_provider(label: str, tool: Any) -> None:
    toolset = Toolset([tool], strict=False)

    def check_schema(schema: dict[str, Any]) -> None:
        # Read as validation reads it (`\\p{L}` is a valid pattern there, as in ECMA-262).
        default = jsonschema.Draft202012Validator
        extended_validator(
            jsonschema.validators.validator_for(schema, default=default)
        ).check_schema(schema)

    for function in [t["function"] for t in toolset.openai()] + toolset.responses():
        parameters = function["parameters"]
        check_schema(parameters)
        if function["strict"]:
            assert parameters.get("type") == "object" and "anyOf" not in parameters
            assert list(strict_violations(parameters)) == [], label
    for entry in toolset.anthropic():
        check_schema(entry["input_schema"])
        assert entry["input_schema"].get("type") == "object", label
