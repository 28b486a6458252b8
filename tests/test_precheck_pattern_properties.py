"""`patternProperties` in the streaming pre-check, through the public API: a member whose key a
pattern takes meets that pattern's schema (and its property's, when it has one), a key neither
names is refused beside `additionalProperties: false`, and a key the pattern dialects read apart
is left to validation. Every early error agrees with `Toolset.validate`, which reads the
schema with `jsonschema`; an unknown key is reported by its whole name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Splitter
from toolwire import Assembler, Toolset

# A tool whose extra settings are named by prefix, as configuration-style tools do.
CONFIGURE: dict[str, Any] = {
    "name": "configure",
    "description": "Set options.",
    "parameters": {
        "type": "object",
        "properties": {
            "n_retries": {"type": "integer", "minimum": 0},
            "color": {"type": "string"},
        },
        "patternProperties": {
            "^n_": {"type": "integer", "maximum": 10},
            "^x-": {"type": "string"},
            r"^\d+$": {"type": "boolean"},
        },
        "additionalProperties": False,
    },
}


@pytest.fixture(scope="module")
def tools() -> Toolset:
    return Toolset([CONFIGURE])


def _stream(
    tools: Toolset, arguments: str, splitter: Splitter
) -> tuple[list[tuple[str, str | None, str | None]], Any]:
    """Streams `arguments` cut by `splitter`: the early errors (path, keyword, expected) and
    the call's `Toolset.validate` outcome."""
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="configure", arguments="")
    early: list[tuple[str, str | None, str | None]] = []
    for piece in splitter(arguments.encode()):
        assembler.feed(0, arguments=piece)
        early += [(e.path, e.keyword, e.expected) for _, e in assembler.drain_errors()]
    (call,) = assembler.finish()
    early += [(e.path, e.keyword, e.expected) for _, e in assembler.drain_errors()]
    return early, tools.validate(call)


def test_the_pre_check_leaves_nothing_of_pattern_properties_to_validation(
    tools: Toolset,
) -> None:
    assert tools.registry.unsupported == []


@pytest.mark.parametrize(
    "arguments",
    [
        '{"n_retries": 3, "n_pages": 10, "x-trace": "on", "42": true, "color": "red"}',
        "{}",
    ],
)
def test_arguments_validation_accepts_get_no_early_error(
    tools: Toolset, splitter: Splitter, arguments: str
) -> None:
    early, outcome = _stream(tools, arguments, splitter)
    assert outcome.ok, outcome.errors
    assert early == []


def test_a_key_the_dialects_read_apart_is_left_to_validation(
    tools: Toolset, splitter: Splitter
) -> None:
    # ECMA-262's `\d` takes ASCII digits only, and so does validation; a model tool's engine
    # takes Arabic-Indic ones too, so the pre-check, shared by both, refuses nothing early.
    early, outcome = _stream(tools, '{"٤٢": true}', splitter)
    assert early == []
    assert [(e.path, e.code) for e in outcome.errors] == [("/٤٢", "unknown_field")]


@pytest.mark.parametrize(
    ("arguments", "path", "keyword"),
    [
        # The pattern's schema, for a key no property names.
        ('{"n_pages": 11}', "/n_pages", "maximum"),
        ('{"x-trace": 1}', "/x-trace", "type"),
        ('{"42": "yes"}', "/42", "type"),
        # The property's schema and the pattern's, for a key both name.
        ('{"n_retries": -1}', "/n_retries", "minimum"),
        ('{"n_retries": 11}', "/n_retries", "maximum"),
        # A key neither names, by its whole name, not the prefix that decided it.
        ('{"colour": "red"}', "/colour", "additionalProperties"),
        ('{"color": "red", "verbose": true}', "/verbose", "additionalProperties"),
    ],
)
def test_each_early_error_is_the_one_validation_reports(
    tools: Toolset, splitter: Splitter, arguments: str, path: str, keyword: str
) -> None:
    early, outcome = _stream(tools, arguments, splitter)
    assert not outcome.ok
    assert [p for p, _, _ in early] == [path]
    assert early[0][1] == keyword
    assert [e.path for e in outcome.errors] == [path]


def test_a_value_both_bounds_refuse_hears_both_early_as_in_validation(
    tools: Toolset, splitter: Splitter
) -> None:
    schema = json.loads(json.dumps(CONFIGURE))
    schema["parameters"]["patternProperties"]["^n_"]["minimum"] = 2
    strict = Toolset([schema])
    early, outcome = _stream(strict, '{"n_retries": -1}', splitter)
    assert early == [("/n_retries", "minimum", "a number >= 0 and >= 2 and <= 10")]
    assert [(e.path, e.code, e.expected) for e in outcome.errors] == [
        ("/n_retries", "range", ">= 0 and >= 2 and <= 10")
    ]


def test_an_unknown_key_without_patterns_is_reported_whole_once_it_closes(
    splitter: Splitter,
) -> None:
    tools = Toolset(
        [
            {
                "name": "configure",
                "description": "Set options.",
                "parameters": {"type": "object", "properties": {"color": {"type": "string"}}},
            }
        ]
    )
    early, outcome = _stream(tools, '{"colour": "red"}', splitter)
    assert early == [("/colour", "additionalProperties", 'no properties other than "color"')]
    assert [(e.path, e.code) for e in outcome.errors] == [("/colour", "unknown_field")]
