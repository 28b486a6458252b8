"""A plain tool's report, whatever the number of its errors, is the one every error ranked gives.

The errors `jsonschema` finds stream by, and only the few hundred that rank first are held
(`validation._HELD_ERRORS`): the report must not depend on that. `tests/data/plain_reports.json`
holds the reports of `CASES` as they were when every error was kept and sorted; after a change
that means to alter reports, write it again with

    python -m tests.test_plain_reports
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest

from toolwire import Assembler, Toolset
from toolwire import validation as validation_module
from toolwire.payloads import Lang

REPORTS = Path(__file__).parent / "data" / "plain_reports.json"

ROWS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "minLength": 2,
                        "maxLength": 5,
                        "pattern": "^[a-z]+$",
                    },
                    "qty": {"type": "integer", "minimum": 1, "multipleOf": 2},
                    "who": {"type": "string", "x-user-supplied": True},
                    "kind": {"enum": ["a", "b"]},
                    "when": {"type": "string", "format": "date"},
                    "u": {
                        "anyOf": [
                            {"type": "integer"},
                            {
                                "type": "object",
                                "properties": {"z": {"type": "string"}},
                                "required": ["z"],
                                "additionalProperties": False,
                            },
                        ]
                    },
                    "o": {
                        "oneOf": [
                            {"type": "string", "maxLength": 3},
                            {"type": "string", "minLength": 2},
                        ]
                    },
                    "t": {
                        "type": "array",
                        "uniqueItems": True,
                        "maxItems": 3,
                        "items": {"type": "integer"},
                    },
                    "secret": {"type": "string", "format": "password", "minLength": 8},
                },
                "required": ["name", "qty"],
                "patternProperties": {"^x_": {"type": "integer", "maximum": 3}},
                "additionalProperties": False,
                "allOf": [
                    {"properties": {"qty": {"maximum": 50}}},
                    {"properties": {"name": {"maxLength": 4}}},
                ],
            },
        }
    },
    "required": ["rows"],
}
ASKING = {
    **ROWS,
    "properties": {
        "rows": {
            **ROWS["properties"]["rows"],
            "items": {**ROWS["properties"]["rows"]["items"], "required": ["name", "who", "qty"]},
        }
    },
}
ROW_VALUES: dict[str, list[Any]] = {
    "name": ["ab", "A", "abcdefgh", 3, "Zz9", None, "abcde"],
    "qty": [2, 0, 3, "4", 4.0, 1.5, 100, 1e300, True, "x"],
    "who": ["me", 5, None],
    "kind": ["a", "c", 1, "A"],
    "when": ["2024-01-01", "2024-13-01", 5, "yesterday"],
    "u": [1, {"z": "a"}, {"z": 1}, {"y": 1}, "s", {"z": "a", "q": 1}],
    "o": ["abc", "ab", "a", "abcd", 5],
    "t": [[1, 2], [1, 1], [1, 2, 3, 4], ["x"], "1,2"],
    "secret": ["hunter22hunter", "short", 5],
    "x_a": [1, 9, "y"],
    "bogus": [1],
    "nmae": ["ab"],
}
INTS = {
    "type": "object",
    "properties": {
        "ids": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}}
    },
    "required": ["ids"],
}
# Numbers as written: coercion refuses some (`1e400`, `"1.5"`), jsonschema the others.
NUMBER_TEXTS = ['"x"', "1.5", '"1.5"', "1e400", "2.0", '"2"', "true", "null", "-3", "12", "3"]
KEYWORDS: list[tuple[dict[str, Any], list[Any]]] = [
    (
        {"if": {"minimum": 10}, "then": {"multipleOf": 5}, "else": {"maximum": 3}},
        [12, 4, 15, 2, "s"],
    ),
    (
        {"type": "object", "dependentRequired": {"a": ["b"]}, "minProperties": 2},
        [{"a": 1}, {}, {"a": 1, "b": 2}, {"c": 1}],
    ),
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}},
            "unevaluatedProperties": False,
        },
        [{"a": 1, "b": 2}, {"a": "x"}, {"c": [1]}],
    ),
    ({"type": "array", "contains": {"const": 1}, "maxContains": 1}, [[2], [1, 1], [1], []]),
    ({"not": {"type": "string"}}, ["a", 1, None]),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [[1, 2], ["a"], [1]]),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, [3, 1.5, "x", 1]),
    # Rules of one rank failing at one field: reported in the order jsonschema gives them.
    ({"type": "string", "minLength": 3, "pattern": "^[a-z]+$", "format": "date"}, ["A", "Zz"]),
]


def _rows(rng: random.Random, count: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for _ in range(count):
        row: dict[str, Any] = {}
        for key, choices in ROW_VALUES.items():
            if rng.random() < (0.6 if key in ("name", "qty") else 0.3):
                row[key] = rng.choice(choices)
        rows.append(row)
    return rows


def _cases() -> dict[str, tuple[dict[str, Any], str, bool, Lang]]:
    """Named (schema, arguments, pre-check, language): a few errors and very many."""
    rng = random.Random(20261207)
    cases: dict[str, tuple[dict[str, Any], str, bool, Lang]] = {}
    for i, count in enumerate((1, 3, 30, 150, 400)):
        for schema, label in ((ROWS, "rows"), (ASKING, "asking")):
            arguments = json.dumps({"rows": _rows(rng, count)})
            cases[f"{label}-{count}"] = (schema, arguments, i % 2 == 1, "zh" if i == 3 else "en")
    for count in (4, 80, 600):
        items = ", ".join(rng.choice(NUMBER_TEXTS) for _ in range(count))
        cases[f"ints-{count}"] = (INTS, f'{{"ids": [{items}]}}', count == 80, "en")
    for k, (rule, values) in enumerate(KEYWORDS):
        schema = {"type": "object", "properties": {"xs": {"type": "array", "items": rule}}}
        for count in (len(values), 200):
            items = [rng.choice(values) for _ in range(count)]
            cases[f"keyword{k}-{count}"] = (schema, json.dumps({"xs": items}), False, "en")
        mapped = {"type": "object", "additionalProperties": rule}
        keyed = {f"k{i}": rng.choice(values) for i in range(120)}
        cases[f"keyword{k}-map"] = (mapped, json.dumps(keyed), True, "en")
    return cases


CASES = _cases()


def _redact(pointer: str, text: str) -> str:
    return f"<{len(text)}>" if pointer.endswith("3") else text


def _report(schema: dict[str, Any], arguments: str, precheck: bool, lang: Lang) -> str:
    tools = Toolset([{"name": "t", "parameters": schema}], lang=lang, redact=_redact)
    assembler = Assembler(tools=tools) if precheck else Assembler()
    assembler.feed(0, id="c", name="t", arguments=arguments)
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    fields = ("ok", "kind", "retryable", "error_type", "message", "ask_user", "value")
    report: dict[str, Any] = {name: getattr(outcome, name) for name in fields}
    report["errors"] = [dataclasses.asdict(e) for e in outcome.errors]
    report["coercions"] = [dataclasses.asdict(c) for c in outcome.coercions]
    return json.dumps(report, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_plain_report_is_the_one_all_errors_ranked_gave(name: str) -> None:
    expected = json.loads(REPORTS.read_text(encoding="utf-8"))[name]
    assert _report(*CASES[name]) == expected


@pytest.mark.parametrize("held", [1, 6])
@pytest.mark.parametrize(
    "name", ["rows-150", "asking-400", "ints-600", "keyword0-200", "keyword6-200", "keyword2-map"]
)
def test_a_plain_report_does_not_depend_on_how_many_errors_are_held(
    monkeypatch: pytest.MonkeyPatch, name: str, held: int
) -> None:
    # One held error is never enough (the report reaches past it, and is chosen from all of
    # them); six often are, with most of the errors let go.
    monkeypatch.setattr(validation_module, "_HELD_ERRORS", 10**9)
    every = _report(*CASES[name])
    monkeypatch.setattr(validation_module, "_HELD_ERRORS", held)
    assert _report(*CASES[name]) == every


if __name__ == "__main__":
    REPORTS.write_text(
        json.dumps({name: _report(*case) for name, case in CASES.items()}, indent=1) + "\n",
        encoding="utf-8",
    )
