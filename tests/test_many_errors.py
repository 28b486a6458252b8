"""A call with thousands of bad items: only the errors the report reaches are rendered.

Each error was located, redaction-checked and rendered though at most five are reported, a
hundred times Pydantic's own validation per item (`benches/many_errors.py` times it). These
tests hold the mechanism (how many errors are built) and that the report is the one building
every error gives.
"""

from __future__ import annotations

import copy
import gc
import json
import pickle
import tracemalloc
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolwire import Assembler, Toolset
from toolwire import validation as validation_module
from toolwire.validation import Outcome, _ErrorBuilder


class Batch(BaseModel):
    ids: list[int]


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    qty: int = Field(ge=1)


class Order(BaseModel):
    items: list[Item]
    note: str | None = None


class Cat(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["cat"]
    name: str
    lives: int = Field(default=9, ge=1)


class Dog(BaseModel):
    kind: Literal["dog"]
    name: str


class Bird(BaseModel):
    kind: Literal["bird"]
    name: str


class Zoo(BaseModel):
    animals: list[Cat | Dog | Bird]


class Tagged(BaseModel):
    animals: list[Annotated[Cat | Dog | Bird, Field(discriminator="kind")]]


class Asked(BaseModel):
    animals: list[Cat | Dog]
    owner: str = Field(json_schema_extra={"x-user-supplied": True})


PLAIN = {
    "name": "batch",
    "description": "Ids in a batch.",
    "parameters": {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
        "required": ["ids"],
    },
}


def _outcome(tools: Toolset, name: str, arguments: str, precheck: bool) -> Outcome:
    assembler = Assembler(tools=tools) if precheck else Assembler()
    assembler.feed(0, id="c", name=name, arguments=arguments)
    (call,) = assembler.finish()
    return tools.validate(call)


def _report(outcome: Outcome) -> Any:
    return (outcome.kind, [e.as_payload() for e in outcome.errors], outcome.ask_user)


def _mixed_order() -> str:
    items: list[Any] = []
    for i in range(400):
        kind = i % 5
        if kind == 0:
            items.append({"name": "a", "qty": "x"})
        elif kind == 1:
            items.append({"qty": 0})
        elif kind == 2:
            items.append({"name": 3, "qty": 2, "nmae": "b"})
        elif kind == 3:
            items.append({"name": "ok", "qty": 1})
        else:
            items.append("not an item")
    # A missing field far down ranks first: it must be found past the first errors.
    items.append({"name": "late"})
    return json.dumps({"items": items, "note": 5})


def _animals(count: int, missing_late: bool = False) -> list[Any]:
    """Items that fail every branch of a union in different ways (each union's branch errors
    are weighed against each other), a valid one among them."""
    kinds: list[Any] = [
        {"kind": "bird", "name": 5},
        {"kind": "cat", "name": "x", "lives": 0},
        {"kind": "cat", "name": "x", "extra": 1},
        {"kind": "fish", "name": "y"},
        {"name": "no kind"},
        "not an animal",
        None,
        {"kind": "BIRD", "name": "case"},
        {"kind": "dog", "name": "ok"},
    ]
    items = [kinds[i % len(kinds)] for i in range(count)]
    # A missing field far down ranks first: it must be found past the first errors.
    return [*items, {"kind": "dog"}] if missing_late else items


CASES = [
    (lambda: Toolset([Batch]), "batch", json.dumps({"ids": ["x"] * 300})),
    (lambda: Toolset([Zoo]), "zoo", json.dumps({"animals": [{"kind": "bird", "name": 5}] * 90})),
    (lambda: Toolset([Zoo]), "zoo", json.dumps({"animals": _animals(200, missing_late=True)})),
    (lambda: Toolset([Tagged]), "tagged", json.dumps({"animals": _animals(200, True)})),
    (lambda: Toolset([Asked]), "asked", json.dumps({"animals": _animals(200), "owner": None})),
    (lambda: Toolset([Batch]), "batch", json.dumps({"ids": [1.5, "x", None, True] * 80})),
    (lambda: Toolset([Order]), "order", _mixed_order()),
    (lambda: Toolset([PLAIN]), "batch", json.dumps({"ids": ["x", 1.5, None] * 100})),
    (lambda: Toolset([PLAIN]), "batch", json.dumps({"ids": [*(["x"] * 200), 2, {"a": 1}]})),
]


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize(("make", "name", "arguments"), CASES)
def test_report_is_what_building_every_error_gives(
    monkeypatch: pytest.MonkeyPatch, make: Any, name: str, arguments: str, precheck: bool
) -> None:
    lazy = _report(_outcome(make(), name, arguments, precheck))
    monkeypatch.setattr(validation_module, "_EAGER_ERRORS", 10**9)
    monkeypatch.setattr(validation_module, "_HELD_ERRORS", 10**9)
    eager = _report(_outcome(make(), name, arguments, precheck))
    assert lazy == eager
    assert len(lazy[1]) == validation_module.MAX_ERRORS


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize(("tool", "name"), [(PLAIN, "batch"), (Batch, "batch")])
def test_items_are_reported_in_the_order_they_stand(tool: Any, name: str, precheck: bool) -> None:
    # A plain tool ranked its items by their index as text: `/ids/10` and `/ids/11` came before
    # `/ids/2`, where a model tool's report names the first five items.
    outcome = _outcome(Toolset([tool]), name, json.dumps({"ids": ["x"] * 12}), precheck)
    assert [e.path for e in outcome.errors] == [f"/ids/{i}" for i in range(5)]


def _count_built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    built = [0]
    each_pydantic = _ErrorBuilder._from_pydantic  # pyright: ignore[reportPrivateUsage]
    each_jsonschema = _ErrorBuilder._from_jsonschema  # pyright: ignore[reportPrivateUsage]

    def from_pydantic(self: _ErrorBuilder, details: Any) -> Any:
        built[0] += len(details)
        return each_pydantic(self, details)

    def from_jsonschema(self: _ErrorBuilder, errors: Any, value: Any) -> Any:
        built[0] += len(errors)
        return each_jsonschema(self, errors, value)

    monkeypatch.setattr(_ErrorBuilder, "_from_pydantic", from_pydantic)
    monkeypatch.setattr(_ErrorBuilder, "_from_jsonschema", from_jsonschema)
    return built


@pytest.mark.parametrize("precheck", [False, True])
@pytest.mark.parametrize("tool", [Batch, PLAIN])
def test_only_reported_errors_are_built(
    monkeypatch: pytest.MonkeyPatch, tool: Any, precheck: bool
) -> None:
    built = _count_built(monkeypatch)
    outcome = _outcome(Toolset([tool]), "batch", json.dumps({"ids": ["x"] * 5000}), precheck)
    assert outcome.kind == "model_error"
    assert len(outcome.errors) == validation_module.MAX_ERRORS
    assert built[0] <= validation_module.MAX_ERRORS


def _union_call(tool: type[BaseModel], items: list[Any]) -> Outcome:
    return _outcome(Toolset([tool]), tool.__name__.lower(), json.dumps({"animals": items}), False)


@pytest.mark.parametrize("tool", [Zoo, Tagged])
def test_union_errors_are_built_only_as_far_as_the_report_reaches(
    monkeypatch: pytest.MonkeyPatch, tool: type[BaseModel]
) -> None:
    # Each item fails the union's three branches (five errors an item untagged, one tagged),
    # which are weighed against each other before ranking: every error was drafted, at any
    # count, where only a union's own errors need drafting together.
    built = _count_built(monkeypatch)
    counts: list[int] = []
    for count in (500, 4000):
        built[0] = 0
        outcome = _union_call(tool, [{"kind": "bird", "name": 5}] * count)
        assert outcome.kind == "model_error"
        assert [e.path for e in outcome.errors] == [f"/animals/{i}/name" for i in range(5)]
        counts.append(built[0])
    # Five units (one an item) of at most five errors reach the report.
    assert counts[0] == counts[1] <= 5 * validation_module.MAX_ERRORS


@pytest.mark.parametrize("tool", [Zoo, Tagged])
def test_union_items_fixed_by_coercion_are_not_drafted(
    monkeypatch: pytest.MonkeyPatch, tool: type[BaseModel]
) -> None:
    # Pydantic refuses each `"BIRD"`; coercion reads it as `"bird"` and the call passes:
    # the refusals are never reported, and were drafted one by one all the same.
    built = _count_built(monkeypatch)
    # The coerced items are read again for unknown fields, each against the branch its tag
    # names: the branches' tags were read again for every item.
    read = _count_tag_reads(monkeypatch)
    outcome = _union_call(tool, [{"kind": "BIRD", "name": "x"}] * 3000)
    assert outcome.ok and len(outcome.coercions) == 3000
    assert {c.rule for c in outcome.coercions} == {"enum_case"}
    assert built[0] == 0
    assert read[0] <= 3 * 3


def _count_schema_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """A counter of the calls to the schema lookup's method `name`."""
    calls = [0]
    schema_class: Any = validation_module._Schema  # pyright: ignore[reportPrivateUsage]
    method = getattr(schema_class, name)

    def counting(self: Any, loc: Any) -> Any:
        calls[0] += 1
        return method(self, loc)

    monkeypatch.setattr(schema_class, name, counting)
    return calls


def test_union_errors_of_one_shape_are_located_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Errors whose `loc`s differ only in their indices lie in the same place of the schema:
    # the walk there is made once, not once for each error of the call.
    walks = _count_schema_calls(monkeypatch, "_walk")
    counts: list[int] = []
    for count in (300, 3000):
        walks[0] = 0
        # A fresh tool each time: what one call located does not help the next.
        outcome = _union_call(Zoo, _animals(count))
        assert outcome.kind == "model_error"
        counts.append(walks[0])
    assert counts[0] == counts[1] < 100


def _count_tag_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of the times a union branch's tags are read."""
    read = [0]
    tags_of = validation_module._tags  # pyright: ignore[reportPrivateUsage]

    def counting(branch: Any) -> Any:
        read[0] += 1
        return tags_of(branch)

    monkeypatch.setattr(validation_module, "_tags", counting)
    return read


def _tagged_plain(branches: int) -> dict[str, Any]:
    """A plain tool whose array items are a union of `branches` objects, each tagged."""
    members = [
        {
            "type": "object",
            "properties": {"kind": {"const": f"k{i}"}, "v": {"type": "integer"}},
            "required": ["kind", "v"],
        }
        for i in range(branches)
    ]
    return {
        "name": "tagged",
        "parameters": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"anyOf": members}}},
        },
    }


def test_a_plain_unions_branches_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each failing item's union error was drafted by dereferencing and reading the tags of
    # every branch again: for fifty branches that cost more than `jsonschema` finding it.
    read = _count_tag_reads(monkeypatch)
    counts: list[int] = []
    for count in (100, 1000):
        read[0] = 0
        tools = Toolset([_tagged_plain(20)])
        arguments = json.dumps({"items": [{"kind": "kX", "v": "a"}] * count})
        outcome = _outcome(tools, "tagged", arguments, False)
        assert len(outcome.errors) == validation_module.MAX_ERRORS
        assert all(e.code == "enum" and e.path.endswith("/kind") for e in outcome.errors)
        counts.append(read[0])
    assert counts[0] == counts[1] <= 2 * 20


COPIED_CALLS = [
    ("zoo", json.dumps({"animals": _animals(300, missing_late=True)})),
    ("tagged", json.dumps({"items": [{"kind": "kX", "v": "a"}] * 300})),
]


@pytest.mark.parametrize(
    ("duplicate", "calls"),
    [
        (copy.deepcopy, COPIED_CALLS),
        # A plain tool's compiled `jsonschema` validator is a local class: it does not pickle.
        (lambda tools: pickle.loads(pickle.dumps(tools)), COPIED_CALLS[:1]),
    ],
)
def test_a_copied_toolset_reports_as_the_original(duplicate: Any, calls: Any) -> None:
    # What the schema lookups keep by the identity of a union's list or of an index marker
    # belongs to the original: a copy starts again, and reports as the original does.
    tools = Toolset([Zoo, _tagged_plain(20)] if len(calls) > 1 else [Zoo])
    reports = [_report(_outcome(tools, name, arguments, False)) for name, arguments in calls]
    again = duplicate(tools)
    del tools
    gc.collect()
    assert [_report(_outcome(again, name, arguments, False)) for name, arguments in calls] == (
        reports
    )


def test_coerced_items_are_not_located_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    located = _count_schema_calls(monkeypatch, "locate")
    outcome = _outcome(Toolset([Batch]), "batch", json.dumps({"ids": ["1"] * 5000}), False)
    assert outcome.ok and outcome.model == Batch(ids=[1] * 5000)
    assert len(outcome.coercions) == 5000
    assert outcome.coercions[7].path == "/ids/7" and outcome.coercions[7].from_ == '"1"'
    assert located[0] <= 10


ORDER = {
    "name": "order",
    "parameters": {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "qty": {"type": "integer", "minimum": 1},
                    },
                    "required": ["name", "qty"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["items"],
    },
}


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (PLAIN, json.dumps({"ids": ["x"] * 20_000})),
        # Three errors an item, two of them (`required`, `additionalProperties`) drafted at once.
        (ORDER, json.dumps({"items": [{"qty": 0, "nmae": "b"}] * 5_000})),
    ],
)
def test_a_plain_tool_holds_its_many_errors_in_little_memory(tool: Any, arguments: str) -> None:
    # Every jsonschema error was kept and sorted before the report took five: about 1.1 KB
    # each, 215 times the argument bytes (21 MB for each of these calls), gigabytes for a call
    # near the 8 MB limit. Only the few hundred that rank first are held now; what is left
    # grows with the arguments (their copies), 20 to 30 times their bytes.
    tools = Toolset([tool])
    assembler = Assembler()
    assembler.feed(0, id="c", name=tool["name"], arguments=arguments)
    (call,) = assembler.finish()
    tracemalloc.start()
    try:
        outcome = tools.validate(call)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(outcome.errors) == validation_module.MAX_ERRORS
    assert peak < 80 * len(arguments), peak


def test_a_model_tool_holds_little_beside_pydantics_errors() -> None:
    # Pydantic's `errors()` makes a dict of every error (about 650 bytes each here, 130 times
    # the argument bytes), and pydantic-core gives no way to read fewer or some of them; what
    # toolwire adds must stay small beside it. A set of every error's `loc`, built to ask
    # whether the pre-check's finding is one of them, added 15%.
    arguments = json.dumps({"ids": ["x"] * 20_000})
    with pytest.raises(ValidationError) as refused:
        Batch.model_validate_json(arguments)
    tracemalloc.start()
    try:
        refused.value.errors(include_url=False)
        _, floor = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    tools = Toolset([Batch])
    calls: list[Any] = []
    for text in ('{"ids": ["x"]}', arguments):
        assembler = Assembler()
        assembler.feed(0, id="c", name="batch", arguments=text)
        calls.extend(assembler.finish())
    # Not the errors' memory: what the first call builds once (compiled checks, caches), and
    # the call's value, which it builds when first asked.
    tools.validate(calls[0])
    assert calls[1].value is not None
    gc.collect()
    tracemalloc.start()
    try:
        outcome = tools.validate(calls[1])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(outcome.errors) == validation_module.MAX_ERRORS
    # Beside Pydantic's errors: a copy or two of the arguments.
    assert peak < floor + 10 * len(arguments), (peak, floor)
