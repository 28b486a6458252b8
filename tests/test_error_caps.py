"""A call error's texts stay bounded however long the key, name or schema value it quotes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from toolwire import Assembler, CallError, JsonError, Scanner, Toolset

_LONG = 102_400


def _errors(schema: dict[str, Any], arguments: str, name: str = "tool") -> list[CallError]:
    """Every pre-check error of one call (early and final), fed whole."""
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name=name, arguments=arguments)
    (call,) = assembler.finish()
    found = [e for _, e in assembler.drain_errors()]
    assert call.error is not None
    return [*found, call.error]


def _cut(start: str, whole: int) -> str:
    return f"{start}…({whole} chars)"


def test_an_unknown_key_is_cut_in_the_message_and_the_path() -> None:
    key = "k" * _LONG
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    schema["additionalProperties"] = False
    for error in _errors(schema, json.dumps({key: 1})):
        assert error.path == "/" + _cut("k" * 200, _LONG)
        message = f'unexpected property "{key}"'
        assert error.message == _cut(message[:500], len(message))
        assert len(repr(error)) < 2_000


def test_a_long_key_is_cut_wherever_it_stands_in_the_path() -> None:
    key = "k/" * (_LONG // 2)  # written `k~1` in a pointer
    schema = {"type": "object", "additionalProperties": {"type": "array", "items": True}}
    schema["additionalProperties"]["maxItems"] = 0
    (error, *_) = _errors(schema, json.dumps({key: [1]}))
    escaped = key.replace("/", "~1")
    # A cut never keeps half of an escape.
    assert error.path == "/" + _cut(escaped[:199], len(escaped))


@pytest.mark.parametrize("keyword", ["const", "enum"])
def test_a_long_schema_value_is_cut_in_expected(keyword: str) -> None:
    value = "v" * _LONG
    allowed = {keyword: value} if keyword == "const" else {keyword: [value, "w"]}
    schema = {"type": "object", "properties": {"a": allowed}}
    for error in _errors(schema, json.dumps({"a": "x"})):
        assert error.expected is not None
        assert error.expected.endswith(" chars)") and len(error.expected) < 530
        assert value[:400] in error.expected


def test_a_long_tool_name_is_cut_in_the_message() -> None:
    name = "n" * _LONG
    (*_, error) = _errors({"type": "object"}, "{}", name=name)
    assert error.kind == "unknown_tool"
    assert error.message.endswith(f"…({_LONG + 15} chars)") and len(error.message) < 530
    assert error.got is not None and len(error.got) <= 201


def test_a_secret_is_never_in_a_cut_error() -> None:
    # A secret is found by the whole path, which a cut key no longer matches.
    secret = "hunter2-" * (_LONG // 8)
    field = {"type": "string", "x-secret": True, "maxLength": 3, "pattern": "^[a-z]+$"}
    by_pattern = {"type": "object", "patternProperties": {"^k+$": field}}
    nested = {"type": "object", "additionalProperties": field}
    schema = {"type": "object", "properties": {"s": field, "n": nested, "p": by_pattern}}
    tools = Toolset([{"name": "tool", "parameters": schema}])
    arguments = json.dumps({"s": secret, "n": {"k" * 300: secret}, "p": {"k" * 300: secret}})
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments=arguments)
    (call,) = assembler.finish()
    errors = [e for _, e in assembler.drain_errors()]
    assert {e.path for e in errors} >= {"/s", "/n/" + _cut("k" * 200, 300)}
    for error in [*errors, call.error]:
        assert error is not None
        shown = [error.message, error.path, error.expected, error.got, repr(error)]
        assert not any("hunter2" in (text or "") for text in shown), shown
    outcome = tools.validate(call)
    assert not outcome.ok and "hunter2" not in repr(outcome)


def test_a_json_error_in_a_long_key_is_cut() -> None:
    key = "k" * _LONG
    scanner = Scanner()
    scanner.push(f'{{"{key}": tru}}')
    with pytest.raises(JsonError) as info:
        scanner.finish()
    assert info.value.error.path == "/" + _cut("k" * 200, _LONG)
    assert len(str(info.value)) < 1_000


@pytest.mark.parametrize("precheck", [True, False])
def test_validation_cuts_a_long_key_in_its_paths_as_the_core_does(precheck: bool) -> None:
    # `CallError.path` cut a 100 KB key, but validation's `FieldError.path` kept it whole:
    # every log line or exception quoting the outcome carried the whole key.
    key = "k" * _LONG
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    schema["additionalProperties"] = False
    tools = Toolset([{"name": "tool", "parameters": schema}])
    assembler = Assembler(tools=tools) if precheck else Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments=json.dumps({key: 1}))
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    (error,) = outcome.errors
    assert (error.path, error.code) == ("/" + _cut("k" * 200, _LONG), "unknown_field")
    if precheck:
        assert call.error is not None and call.error.path == error.path


def test_a_finding_under_a_cut_key_names_the_value_sent_there_once() -> None:
    # The pre-check's path has the key cut: looked up as it reads, it named no value, so
    # validation showed the core's word for the value (`string`) and, not knowing the path
    # for the one Pydantic found, told the model of one mistake twice.
    class Tags(BaseModel):
        model_config = ConfigDict(extra="forbid")
        counts: dict[str, int]

    key = "k~/" * 100
    tools = Toolset([Tags])
    assembler = Assembler(tools=tools)
    arguments = json.dumps({"counts": {"a": 1, key: "x"}})
    assembler.feed(0, id="call_1", name=tools.names()[0], arguments=arguments)
    (call,) = assembler.finish()
    assert call.error is not None and "…(" in call.error.path
    outcome = tools.validate(call)
    (error,) = outcome.errors
    assert (error.path, error.code, error.got) == (call.error.path, "type", '"x"')


def test_a_coercion_under_a_long_key_has_its_path_cut_as_errors_do() -> None:
    # Coercions recorded under a key the model made up kept the whole key in their path, while
    # the errors of the same call cut it: a 100 KB key went whole into every log of them.
    class Counts(BaseModel):
        counts: dict[str, int]

    tools = Toolset([Counts])
    assembler = Assembler(tools=tools)
    key = "k" * _LONG
    arguments = json.dumps({"counts": {key: "5"}})
    assembler.feed(0, id="call_1", name=tools.names()[0], arguments=arguments)
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    assert outcome.ok and outcome.model == Counts(counts={key: 5})
    (coercion,) = outcome.coercions
    assert coercion.path == "/counts/" + _cut("k" * 200, _LONG)
