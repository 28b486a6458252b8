"""Dict keys that are not strings and set fields, wherever they sit in a call.

A tool with a `dict[int, ...]` or a `set[...]` field has every call walked for its keys and
repeated items. These tests pin what that walk records and refuses when such fields sit inside
list items, nested and recursive models (`$ref` / `$defs`), unions and `Optional`s, beside
parts of the call that hold neither, so that a faster walk keeps every verdict.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, field_validator

from toolwire import Assembler, Outcome, Toolset
from toolwire.coercion import SAFE_RULES, CoercionResult, coerce_arguments, loads_exact


class Item(BaseModel):
    """A small object with nothing to check."""

    name: str
    qty: int


class Cell(BaseModel):
    """Notes by line number and marked columns."""

    notes: dict[int, str] = {}
    marks: set[int] = set()


class Other(BaseModel):
    """An object branch beside `Cell` in a union."""

    tags: set[str]
    name: str = ""


class Tree(BaseModel):
    """A recursive model with a keyed dict at every depth."""

    label: dict[int, str] = {}
    children: list[Tree] = []


class Sheet(BaseModel):
    """A sheet with keyed dicts and sets at every depth."""

    rows: list[Cell] = []
    by_row: dict[int, Cell] = {}
    maybe: Cell | None = None
    either: dict[int, str] | list[str] = []
    pick: Cell | Other | None = None
    mixed: Item | Other | None = None
    opt_tags: frozenset[str] | None = None
    plain: list[Item] = []
    tree: Tree | None = None
    when: datetime | None = None


class LaxSheet(Sheet):
    """`Sheet` in Pydantic's lax mode."""

    model_config = ConfigDict(strict=False)


_PARIS = ZoneInfo("Europe/Paris")
TOOLS = Toolset([Sheet, LaxSheet], default_tz={"sheet": _PARIS, "lax_sheet": _PARIS})
UNCOERCED = Toolset([Sheet], coercion="none", default_tz={"sheet": _PARIS})

_PLAIN = ',"plain":[{"name":"a","qty":1},{"name":"b","qty":2},{"name":"c","qty":3}]'


def validate(
    arguments: str, *, precheck: bool, tools: Toolset = TOOLS, name: str = "sheet"
) -> Outcome:
    """The outcome of one call assembled with or without the pre-check."""
    asm = Assembler(tools=tools if precheck else None)
    asm.feed(0, id="call_1", name=name, arguments=arguments)
    (done,) = asm.finish()
    return tools.validate(done)


def verdict(outcome: Outcome) -> tuple[bool, list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Whether it passed, its coercions and its errors, as plain tuples."""
    return (
        outcome.ok,
        [(c.path, c.from_, c.to, c.rule) for c in outcome.coercions],
        [(e.path, e.code, e.got or "") for e in outcome.errors],
    )


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "coercions", "errors"),
    [
        # Nothing to change, however deep the keys and sets are.
        (
            '{"rows":[{"notes":{"1":"a","-5":"b"},"marks":[1,2]},{}],'
            '"by_row":{"3":{"marks":[4]}},"maybe":{"notes":{"0":"z"}},"either":{"2":"x"},'
            '"pick":{"tags":["p"]},"opt_tags":["a","b"],'
            '"tree":{"label":{"1":"r"},"children":[{"children":[{"label":{"9":"leaf"}}]}]}'
            + _PLAIN
            + "}",
            [],
            [],
        ),
        # An integer-keyed dict inside list items.
        (
            '{"rows":[{"notes":{"1":"a"}},{"notes":{"01":"b"}}]' + _PLAIN + "}",
            [],
            [("/rows/1/notes", "type", '"01"')],
        ),
        # Two texts of one key, and a repeat in a set inside a dict's values.
        (
            '{"by_row":{"-0":{"marks":[3,3]},"0":{}}}',
            [("/by_row/-0/marks", "[3,3]", "[3]", "set_duplicates")],
            [("/by_row", "unique", '"0"')],
        ),
        # The dict branch of a union of a dict and a list.
        ('{"either":{"01":"a"}}', [], [("/either", "type", '"01"')]),
        ('{"either":["a","a"]}', [], []),
        # A union of two models, each with a set.
        (
            '{"pick":{"tags":["x","x"]}}',
            [("/pick/tags", '["x","x"]', '["x"]', "set_duplicates")],
            [],
        ),
        (
            '{"pick":{"marks":[1,1],"notes":{"1":"a"}}}',
            [("/pick/marks", "[1,1]", "[1]", "set_duplicates")],
            [],
        ),
        # Neither branch takes it: each says why.
        (
            '{"pick":{"notes":{"x":"a"}}}',
            [],
            [("/pick/tags", "missing", ""), ("/pick/notes", "type", '"x"')],
        ),
        # A union of a model with a set and one without.
        (
            '{"mixed":{"tags":["a","b","a"]}}',
            [("/mixed/tags", '["a","b","a"]', '["a","b"]', "set_duplicates")],
            [],
        ),
        ('{"mixed":{"name":"n","qty":1}}', [], []),
        # A recursive model, through `$ref`s to itself.
        (
            '{"tree":{"children":[{"children":[{"label":{"+2":"z"}}]}]}}',
            [],
            [("/tree/children/0/children/0/label", "type", '"+2"')],
        ),
        # Optional sets and an optional model.
        (
            '{"opt_tags":["a","a"],"maybe":{"marks":[5,5]}' + _PLAIN + "}",
            [
                ("/opt_tags", '["a","a"]', '["a"]', "set_duplicates"),
                ("/maybe/marks", "[5,5]", "[5]", "set_duplicates"),
            ],
            [],
        ),
        ('{"opt_tags":null,"maybe":null,"pick":null,"tree":null}', [], []),
        # A coercion where no key or set is, beside a refused key.
        (
            '{"plain":[{"name":"a","qty":"3"}],"rows":[{"notes":{"x":"y"}}]}',
            [("/plain/0/qty", '"3"', "3", "number_string")],
            [("/rows/0/notes", "type", '"x"')],
        ),
        # A timestamp completed with the tool's zone, beside keys and sets with nothing wrong.
        (
            '{"when":"2024-01-01T10:00:00","rows":[{"marks":[1],"notes":{"1":"a"}}]}',
            [("/when", '"2024-01-01T10:00:00"', '"2024-01-01T10:00:00+01:00"', "default_timezone")],
            [],
        ),
        # Arguments under a wrapper key, unwrapped first.
        (
            '{"params":{"rows":[{"marks":[2,2]}]}}',
            [
                (
                    "",
                    '{"params":{"rows":[{"marks":[2,2]}]}}',
                    '{"rows":[{"marks":[2,2]}]}',
                    "unwrap",
                ),
                ("/rows/0/marks", "[2,2]", "[2]", "set_duplicates"),
            ],
            [],
        ),
    ],
)
def test_keys_and_sets_are_checked_wherever_they_sit(
    precheck: bool,
    arguments: str,
    coercions: list[tuple[str, ...]],
    errors: list[tuple[str, ...]],
) -> None:
    outcome = validate(arguments, precheck=precheck)
    assert verdict(outcome) == (not errors, coercions, errors)


_MANY_KEYS = ",".join(f'"{i}":"v"' for i in range(-50, 50))


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("keys", "errors"),
    [
        (_MANY_KEYS, []),
        ('"-0":"z"', []),
        (_MANY_KEYS + ',"-0":"z"', [("/either", "unique", '"-0"')]),
        (_MANY_KEYS + ',"007":"z"', [("/either", "type", '"007"')]),
        ('"' + "9" * 4300 + '":"z"', []),
        # Shown cut to 200 characters.
        ('"' + "9" * 4301 + '":"z"', [("/either", "type", '"' + "9" * 198 + "…")]),
    ],
)
def test_many_integer_keys_are_each_held_to_their_text(
    precheck: bool, keys: str, errors: list[tuple[str, ...]]
) -> None:
    outcome = validate('{"either":{' + keys + "}}", precheck=precheck)
    assert verdict(outcome) == (not errors, [], errors)


@pytest.mark.parametrize("precheck", [True, False])
def test_repeats_in_nested_sets_are_refused_without_the_rule(precheck: bool) -> None:
    arguments = (
        '{"rows":[{},{"marks":[1,2,1]}],"pick":{"tags":["t","t"]},'
        '"by_row":{"4":{"marks":[7,7]}}' + _PLAIN + "}"
    )
    outcome = validate(arguments, precheck=precheck, tools=UNCOERCED)
    assert verdict(outcome) == (
        False,
        [],
        [
            ("/rows/1/marks/2", "unique", "1"),
            ("/pick/tags/1", "unique", '"t"'),
            ("/by_row/4/marks/1", "unique", "7"),
        ],
    )


@pytest.mark.parametrize("precheck", [True, False])
def test_a_large_call_keeps_its_model_and_records_what_changed(precheck: bool) -> None:
    items = ",".join(f'{{"name":"n{i}","qty":{i}}}' for i in range(2000))
    keyed = ",".join(f'"{i}":"v{i}"' for i in range(2000))
    arguments = f'{{"plain":[{items}],"either":{{{keyed}}},"opt_tags":["a","b","a"]}}'
    outcome = validate(arguments, precheck=precheck)
    assert verdict(outcome) == (
        True,
        [("/opt_tags", '["a","b","a"]', '["a","b"]', "set_duplicates")],
        [],
    )
    assert outcome.model == Sheet(
        plain=[Item(name=f"n{i}", qty=i) for i in range(2000)],
        either={i: f"v{i}" for i in range(2000)},
        opt_tags=frozenset({"a", "b"}),
    )
    clean = validate(arguments.replace(',"a"]', "]"), precheck=precheck)
    assert verdict(clean) == (True, [], [])
    assert clean.model == outcome.model


class Counted(BaseModel):
    """Counts by key, and a count a custom validator reads from text."""

    model_config = ConfigDict(strict=True)

    counts: dict[int, int] = {}
    total: int = 0

    @field_validator("total", mode="before")
    @classmethod
    def _digits(cls, value: object) -> object:
        return int(value) if isinstance(value, str) and value.isdigit() else value


@pytest.mark.parametrize("how", ["precheck", "no precheck", "look-alike", "validator alone"])
@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("lax_sheet", '{"plain":[{"name":"a","qty":"3"}],"rows":[{"notes":{"1":"a"}}]}'),
        ("counted", '{"total":"3","counts":{"1":2}}'),
    ],
)
def test_a_value_pydantic_reads_from_another_type_is_recorded_however_the_call_came(
    how: str, name: str, arguments: str
) -> None:
    # A lax model reads `"3"` for an integer itself, and so does a strict one's custom
    # validator; with a keyed dict in the tool, the walk that checks the keys records it too.
    tools = Toolset([LaxSheet, Counted])
    if how == "look-alike":
        outcome = tools.validate(LookAlike(arguments, name=name))
    elif how == "validator alone":
        bare = Assembler()
        bare.feed(0, id="call_1", name=name, arguments=arguments)
        (unchecked,) = bare.finish()
        outcome = tools.tool(name).validator.validate(unchecked)
    else:
        outcome = validate(arguments, precheck=how == "precheck", tools=tools, name=name)
    assert outcome.ok
    assert [(c.from_, c.to, c.rule) for c in outcome.coercions] == [('"3"', "3", "number_string")]


@pytest.mark.parametrize("precheck", [True, False])
def test_a_lax_model_with_keys_records_what_it_records_now(precheck: bool) -> None:
    # A lax model reads `"3"` for an integer itself; with a keyed dict in the tool, the walk
    # that checks the keys records it too.
    outcome = validate(
        '{"plain":[{"name":"a","qty":"3"}],"rows":[{"notes":{"1":"a"},"marks":[1,1]}]}',
        precheck=precheck,
        name="lax_sheet",
    )
    assert verdict(outcome) == (
        True,
        [
            ("/plain/0/qty", '"3"', "3", "number_string"),
            ("/rows/0/marks", "[1,1]", "[1]", "set_duplicates"),
        ],
        [],
    )


@dataclass(frozen=True)
class LookAlike:
    """A completed call that is not a `ToolCall` (nothing says it was pre-checked)."""

    arguments: str
    error: None = None
    name: str = "sheet"
    id: str = "call_1"
    ordinal: int = 0
    index: int = 0

    @property
    def value(self) -> Any:
        """The parsed arguments."""
        return json.loads(self.arguments)


@pytest.mark.parametrize(
    ("arguments", "coercion", "unknown"),
    [
        ('{"opt_tags":["a","a"],"bogus":1}', "/opt_tags", "/bogus"),
        (
            '{"plain":[{"name":"a","qty":1,"zzz":2}],"maybe":{"marks":[1,1]}}',
            "/maybe/marks",
            "/plain/0/zzz",
        ),
    ],
)
def test_an_unknown_field_beside_a_repeat_is_named_however_the_call_came(
    arguments: str, coercion: str, unknown: str
) -> None:
    # Pydantic ignores the unknown field; the pre-check, or the look that follows a coercion
    # for a call nothing checked, names it wherever it is.
    bare = Assembler()
    bare.feed(0, id="call_1", name="sheet", arguments=arguments)
    (unchecked,) = bare.finish()
    outcomes = [
        validate(arguments, precheck=True),
        validate(arguments, precheck=False),
        TOOLS.validate(LookAlike(arguments)),
        TOOLS.tool("sheet").validator.validate(unchecked),
    ]
    for outcome in outcomes:
        assert not outcome.ok
        assert [(c.path, c.rule) for c in outcome.coercions] == [(coercion, "set_duplicates")]
        assert [(e.path, e.code) for e in outcome.errors] == [(unknown, "unknown_field")]


# Key texts Pydantic takes for an integer key, whether or not coercion does.
_KEY = st.sampled_from(["0", "1", "-0", "01", "+2", "7", "-5", "1_0"])
_NOTES = st.dictionaries(_KEY, st.text(max_size=2), max_size=3)
_MARKS = st.lists(st.integers(0, 3), max_size=4)
_TAGS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)
_CELL = st.fixed_dictionaries({}, optional={"notes": _NOTES, "marks": _MARKS})
_OTHER = st.fixed_dictionaries({"tags": _TAGS}, optional={"name": st.text(max_size=2)})
_ITEM = st.fixed_dictionaries({"name": st.text(max_size=3), "qty": st.integers(-2, 2)})
_TREE = st.recursive(
    st.fixed_dictionaries({}, optional={"label": _NOTES}),
    lambda inner: st.fixed_dictionaries(
        {}, optional={"label": _NOTES, "children": st.lists(inner, max_size=2)}
    ),
    max_leaves=5,
)
_SHEET = st.fixed_dictionaries(
    {},
    optional={
        "rows": st.lists(_CELL, max_size=3),
        "by_row": st.dictionaries(_KEY, _CELL, max_size=2),
        "maybe": _CELL | st.none(),
        "either": _NOTES | _TAGS,
        "pick": _CELL | _OTHER | st.none(),
        "mixed": _ITEM | _OTHER | st.none(),
        "opt_tags": _TAGS | st.none(),
        "plain": st.lists(_ITEM, max_size=3),
        "tree": _TREE | st.none(),
        "when": st.sampled_from(["2024-01-01T10:00:00+02:00", "2024-06-01T00:00:00Z"]),
    },
)


@settings(max_examples=300, deadline=None)
@given(arguments=_SHEET, lax=st.booleans())
def test_a_focused_walk_finds_what_the_whole_walk_finds(
    arguments: dict[str, Any], lax: bool
) -> None:
    # On arguments the pre-check passed and Pydantic took as they are, only dict keys and
    # set items can need a look: walking just the parts that can hold them must record and
    # refuse exactly what walking everything does.
    name = "lax_sheet" if lax else "sheet"
    text = json.dumps(arguments)
    asm = Assembler(tools=TOOLS)
    asm.feed(0, id="call_1", name=name, arguments=text)
    (done,) = asm.finish()
    assert done.error is None
    tool = TOOLS.tool(name)
    assert tool.model is not None
    tool.model.model_validate_json(text, strict=None if lax else True)
    schema = tool.validator.schema

    def walk(*, focus: bool) -> CoercionResult:
        return coerce_arguments(
            loads_exact(text), schema, rules=SAFE_RULES, default_tz=_PARIS, sets=True, focus=focus
        )

    whole, focused = walk(focus=False), walk(focus=True)
    assert focused.coercions == whole.coercions
    assert focused.problems == whole.problems
    assert focused.value == whole.value


@settings(max_examples=200, deadline=None)
@given(arguments=_SHEET, lax=st.booleans(), naive=st.booleans())
def test_a_pre_checked_call_gets_what_an_unchecked_look_alike_gets(
    arguments: dict[str, Any], lax: bool, naive: bool
) -> None:
    # A call the pre-check passed takes the focused walk (unless a timestamp without an
    # offset sends it down the whole one); a look-alike call, which nothing says was
    # pre-checked, the whole walk: their outcomes must be the same.
    name = "lax_sheet" if lax else "sheet"
    text = json.dumps({**arguments, "when": "2024-01-01T10:00:00"} if naive else arguments)
    asm = Assembler(tools=TOOLS)
    asm.feed(0, id="call_1", name=name, arguments=text)
    (done,) = asm.finish()
    assert done.error is None
    assert TOOLS.validate(done) == TOOLS.validate(LookAlike(text, name=name))


class Collapsing(BaseModel):
    """Sets whose items may differ as JSON and still be one member once read."""

    flags: set[int | bool] | None = None
    amounts: set[Decimal] | None = None
    slots: frozenset[datetime] | None = None
    ids: set[UUID] | None = None
    weights: set[float] | None = None
    exact: set[int | float] | None = None


COLLAPSING = Toolset([Collapsing])
UNCOERCED_COLLAPSING = Toolset([Collapsing], coercion="none")
_UUID = "0bd5e5f0-1234-5678-9abc-def012345678"


@pytest.mark.parametrize("how", ["precheck", "no precheck", "look-alike"])
@pytest.mark.parametrize(
    ("arguments", "kept"),
    [
        ('{"flags":[1,true]}', "[1]"),
        ('{"amounts":["1.0","1.00"]}', '["1.0"]'),
        ('{"amounts":[1.0,"1"]}', "[1.0]"),
        (
            '{"slots":["2024-05-01T09:00:00Z","2024-05-01T11:00:00+02:00"]}',
            '["2024-05-01T09:00:00Z"]',
        ),
        ('{"ids":["' + _UUID + '","' + _UUID.upper().replace("-", "") + '"]}', '["' + _UUID + '"]'),
        ('{"weights":[9007199254740993,9007199254740992]}', "[9007199254740993]"),
    ],
)
def test_items_a_set_holds_as_one_once_read_are_a_recorded_drop(
    how: str, arguments: str, kept: str
) -> None:
    # Different as JSON, one member once Pydantic read them: the set drops one without a
    # word, which is recorded as any repeat is, or refused with the rule off.
    (field,) = json.loads(arguments)
    for tools, rule_on in ((COLLAPSING, True), (UNCOERCED_COLLAPSING, False)):
        if how == "look-alike":
            outcome = tools.validate(LookAlike(arguments, name="collapsing"))
        else:
            outcome = validate(
                arguments, precheck=how == "precheck", tools=tools, name="collapsing"
            )
        if rule_on:
            assert outcome.ok
            sent = json.dumps(json.loads(arguments)[field], separators=(",", ":"))
            assert [(c.path, c.from_, c.to, c.rule) for c in outcome.coercions] == [
                (f"/{field}", sent, kept, "set_duplicates")
            ]
        else:
            assert [(e.path, e.code) for e in outcome.errors] == [(f"/{field}/1", "unique")]


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("field", "sent", "kept"),
    [
        ("weights", "[2,1.5,2,3.5]", "[2,1.5,3.5]"),
        ("amounts", "[1.0,1,2.5]", "[1.0,2.5]"),
        ("exact", "[7,0.5,7,1e2,0.5]", "[7,0.5,1e2]"),
    ],
)
def test_a_dropped_repeat_is_recorded_with_the_items_the_set_keeps(
    precheck: bool, field: str, sent: str, kept: str
) -> None:
    # The kept items were shown by the numbers sent at their new places: `[2,1.5,2]`, a
    # repeat the set dropped in place of the `3.5` it kept.
    arguments = f'{{"{field}":{sent}}}'
    outcome = validate(arguments, precheck=precheck, tools=COLLAPSING, name="collapsing")
    assert outcome.ok, outcome.errors
    assert [(c.path, c.from_, c.to) for c in outcome.coercions] == [(f"/{field}", sent, kept)]


@pytest.mark.parametrize(
    "arguments",
    [
        '{"exact":[9007199254740993,9007199254740992]}',
        '{"amounts":["1.0","1.01"]}',
        '{"slots":["2024-05-01T09:00:00Z","2024-05-01T09:00:00+02:00"]}',
        '{"weights":[1,2]}',
    ],
)
def test_items_a_set_holds_apart_are_kept(arguments: str) -> None:
    for precheck in (True, False):
        outcome = validate(arguments, precheck=precheck, tools=COLLAPSING, name="collapsing")
        assert outcome.ok and outcome.coercions == []


class Numbers(BaseModel):
    """Sets of numbers, where `true` equals `1` and `false` equals `0` in Python."""

    ids: set[int] | None = None
    amounts: set[Decimal] | None = None
    weights: frozenset[float] | None = None


NUMBERS = Toolset([Numbers])
UNCOERCED_NUMBERS = Toolset([Numbers], coercion="none")


@pytest.mark.parametrize("how", ["precheck", "no precheck", "look-alike"])
@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ('{"ids":[true]}', "/ids/0"),
        ('{"ids":[1,true]}', "/ids/1"),
        ('{"ids":[0,false]}', "/ids/1"),
        ('{"ids":[true,1]}', "/ids/0"),
        ('{"ids":[true,1,2]}', "/ids/0"),
        ('{"amounts":[1,true]}', "/amounts/1"),
        ('{"amounts":["1",true]}', "/amounts/1"),
        ('{"weights":[1.0,true]}', "/weights/1"),
    ],
)
def test_a_boolean_in_a_set_of_numbers_is_refused_wherever_it_stands(
    how: str, arguments: str, path: str
) -> None:
    # A boolean is no number, as it is not for a plain integer field: one that equals an item
    # before or after it is no repeat to drop, and the set of numbers refuses it.
    for tools in (NUMBERS, UNCOERCED_NUMBERS):
        if how == "look-alike":
            outcome = tools.validate(LookAlike(arguments, name="numbers"))
        else:
            outcome = validate(arguments, precheck=how == "precheck", tools=tools, name="numbers")
        assert not outcome.ok
        assert [(e.path, e.code) for e in outcome.errors] == [(path, "type")]
        assert outcome.coercions == []


@pytest.mark.parametrize("precheck", [True, False])
def test_a_boolean_between_repeats_is_refused_and_the_repeat_dropped(precheck: bool) -> None:
    outcome = validate('{"ids":[1,true,1]}', precheck=precheck, tools=NUMBERS, name="numbers")
    assert [(e.path, e.code, e.got) for e in outcome.errors] == [("/ids/1", "type", "true")]
    outcome = validate(
        '{"ids":[1,true,1]}', precheck=precheck, tools=UNCOERCED_NUMBERS, name="numbers"
    )
    assert [(e.path, e.code) for e in outcome.errors] == [("/ids/1", "type"), ("/ids/2", "unique")]


class Point(BaseModel):
    """A hashable model, which a set may hold."""

    model_config = ConfigDict(frozen=True)
    x: int


class Labels(BaseModel):
    """Sets, sets of sets, of tuples and of models."""

    tags: frozenset[str] | None = None
    ids: set[int] | None = None
    nested: frozenset[frozenset[int]] | None = None
    pairs: frozenset[tuple[int, str]] | None = None
    points: frozenset[Point] | None = None


LABELS = Toolset([Labels])


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("tools", "name", "arguments", "errors"),
    [
        (LABELS, "labels", '{"tags":["a","a",1]}', [("/tags/2", "type", "1")]),
        (LABELS, "labels", '{"ids":[1,1,"x"]}', [("/ids/2", "type", '"x"')]),
        (LABELS, "labels", '{"ids":[5,5,5,null]}', [("/ids/3", "type", "null")]),
        (
            LABELS,
            "labels",
            '{"ids":[1,1,"x",2,2,"y"]}',
            [("/ids/2", "type", '"x"'), ("/ids/5", "type", '"y"')],
        ),
        # A set of sets: the inner repeats and the outer ones are both dropped.
        (LABELS, "labels", '{"nested":[[1],[1,1],[2,2,"x"]]}', [("/nested/2/2", "type", '"x"')]),
        (LABELS, "labels", '{"pairs":[[1,"a"],[1,"a"],[2,3]]}', [("/pairs/2/1", "type", "3")]),
        (
            LABELS,
            "labels",
            '{"points":[{"x":1},{"x":1},{"x":"a"}]}',
            [("/points/2/x", "type", '"a"')],
        ),
        (
            LABELS,
            "labels",
            '{"points":[{"x":1},{"x":1},{"x":2,"y":3}]}',
            [("/points/2/y", "unknown_field", "3")],
        ),
        # In a list of objects, and in a union's branch.
        (
            TOOLS,
            "sheet",
            '{"rows":[{"marks":[1,1,"x"]},{"marks":[2,2,"y"]}]}',
            [("/rows/0/marks/2", "type", '"x"'), ("/rows/1/marks/2", "type", '"y"')],
        ),
        (TOOLS, "sheet", '{"maybe":{"marks":[3,3,"z"]}}', [("/maybe/marks/2", "type", '"z"')]),
    ],
)
def test_an_error_after_a_dropped_repeat_names_the_item_as_sent(
    precheck: bool, tools: Toolset, name: str, arguments: str, errors: list[tuple[str, ...]]
) -> None:
    # The model is told where its own call is wrong, not where the call is once repeats were
    # dropped: there, the item at that index is another, valid one.
    outcome = validate(arguments, precheck=precheck, tools=tools, name=name)
    assert not outcome.ok
    assert [(e.path, e.code, e.got) for e in outcome.errors] == errors


class Schedule(BaseModel):
    """Dicts keyed by timestamps and UUIDs."""

    slots: dict[datetime, str] | None = None
    owners: dict[UUID, str] | None = None


SCHEDULES = Toolset([Schedule])
ZONED_SCHEDULES = Toolset([Schedule], default_tz={"schedule": ZoneInfo("UTC")})


@pytest.mark.parametrize("precheck", [True, False])
@pytest.mark.parametrize(
    ("arguments", "code", "got"),
    [
        # As a value, a Unix time in a string is refused: Pydantic would guess its unit.
        ('{"slots":{"1700000000":"standup"}}', "type", '"1700000000"'),
        # As a value, a timestamp without an offset needs the tool's default zone.
        ('{"slots":{"2024-05-01T09:00:00":"standup"}}', "timezone_required", None),
        ('{"slots":{"2024-05-01T09:00:00Z":"a","2024-05-01T11:00:00+02:00":"b"}}', "unique", None),
        (
            '{"owners":{"' + _UUID + '":"a","' + _UUID.upper().replace("-", "") + '":"b"}}',
            "unique",
            None,
        ),
    ],
)
def test_timestamp_and_uuid_keys_are_held_to_what_their_values_are(
    arguments: str, code: str, got: str | None, precheck: bool
) -> None:
    outcome = validate(arguments, precheck=precheck, tools=SCHEDULES, name="schedule")
    (field,) = json.loads(arguments)
    assert not outcome.ok
    assert [(e.path, e.code) for e in outcome.errors] == [(f"/{field}", code)]
    if got is not None:
        assert outcome.errors[0].got == got


@pytest.mark.parametrize("precheck", [True, False])
def test_a_timestamp_key_without_an_offset_takes_the_default_zone(precheck: bool) -> None:
    arguments = '{"slots":{"2024-05-01T09:00:00":"standup"}}'
    outcome = validate(arguments, precheck=precheck, tools=ZONED_SCHEDULES, name="schedule")
    nine = datetime(2024, 5, 1, 9, tzinfo=timezone.utc)
    assert outcome.ok and outcome.model.slots == {nine: "standup"}
    assert [(c.path, c.rule) for c in outcome.coercions] == [("/slots", "default_timezone")]
