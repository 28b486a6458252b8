"""Float modes (spec R5) and completeness flags (spec R9) of partial and final values, through
the public API: `Scanner.finish`/`partial`, `Assembler.partial` and the streams' `partial`."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import math
import pickle
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import Splitter, cut_at
from tests.streams.streamkit import chat_chunk, tc
from toolwire import (
    NO_VALUE,
    Assembler,
    LosslessFloat,
    MisuseError,
    PartialNode,
    Scanner,
    aassemble,
    assemble,
)
from toolwire.events import CallCompleted

Floats = Literal["float", "decimal", "lossless"]

# Lexemes a float cannot keep: more digits than a double holds, past its range, a signed zero,
# an upper-case exponent.
LEXEMES = ["1.0000000000000000000001", "1e400", "-0.0", "2.5E-3", "0.1", "-1.5e-400"]
INTS = ["0", "-7", "123456789012345678901234567890"]
TEXT = "{" + ", ".join(f'"f{i}": {x}' for i, x in enumerate(LEXEMES + INTS)) + "}"


def iter_whole(data: bytes) -> Iterator[bytes]:
    yield data


def scanned(text: str | bytes, splitter: Splitter, **limits: Any) -> Scanner:
    scanner = Scanner(**limits)
    data = text.encode() if isinstance(text, str) else text
    for piece in splitter(data):
        scanner.push(piece)
    return scanner


def assert_same_decimal(got: object, lexeme: str) -> None:
    """`got` is the Decimal of `lexeme` digit for digit (sign and exponent too)."""
    assert isinstance(got, Decimal)
    assert got.as_tuple() == Decimal(lexeme).as_tuple()


def assert_lossless(got: object, lexeme: str) -> None:
    assert isinstance(got, LosslessFloat)
    assert str(got) == lexeme
    assert bytes(got) == lexeme.encode()
    expected = float(lexeme)
    assert float(got) == expected
    assert math.copysign(1.0, float(got)) == math.copysign(1.0, expected)
    assert_same_decimal(got.as_decimal(), lexeme)
    assert got == LosslessFloat(lexeme)
    assert hash(got) == hash(LosslessFloat(lexeme.encode()))


def assert_mode(value: dict[str, Any], floats: Floats) -> None:
    """Every member of `TEXT`'s value is in the form `floats` asks for; ints are ints."""
    for i, lexeme in enumerate(LEXEMES):
        got = value[f"f{i}"]
        if floats == "float":
            assert type(got) is float
            assert got == float(lexeme)
            assert math.copysign(1.0, got) == math.copysign(1.0, float(lexeme))
        elif floats == "decimal":
            assert_same_decimal(got, lexeme)
        else:
            assert_lossless(got, lexeme)
    for i, lexeme in enumerate(INTS, start=len(LEXEMES)):
        got = value[f"f{i}"]
        assert type(got) is int
        assert got == int(lexeme)


# --- float modes -----------------------------------------------------------------------------


@pytest.mark.parametrize("floats", ["float", "decimal", "lossless"])
def test_finish_hands_floats_over_in_each_mode(floats: Floats, splitter: Splitter) -> None:
    value = scanned(TEXT, splitter).finish(floats=floats)
    assert_mode(value, floats)
    if floats == "float":
        assert value == json.loads(TEXT)


@pytest.mark.parametrize("floats", ["float", "decimal", "lossless"])
def test_partial_hands_floats_over_in_each_mode(floats: Floats, splitter: Splitter) -> None:
    # The text is complete, so its partial value is its final value.
    scanner = scanned(TEXT, splitter)
    assert scanner.complete
    assert_mode(scanner.partial(floats=floats), floats)
    # An open text: delimited numbers are shown in the mode asked for; the last is pending.
    scanner = scanned('{"a": [2.5E-3, -0.0, 7, 1e400', splitter)
    shown = scanner.partial(floats=floats)
    eager = scanner.partial(floats=floats, eager_numbers=True)
    assert len(shown["a"]) == 3 and len(eager["a"]) == 4
    assert shown["a"][2] == 7 and type(shown["a"][2]) is int
    if floats == "decimal":
        assert_same_decimal(shown["a"][0], "2.5E-3")
        assert_same_decimal(eager["a"][3], "1e400")
    elif floats == "lossless":
        assert_lossless(shown["a"][1], "-0.0")
        assert_lossless(eager["a"][3], "1e400")
    else:
        assert shown["a"][:2] == [0.0025, -0.0]
        assert eager["a"][3] == math.inf


@pytest.mark.parametrize("floats", ["float", "decimal", "lossless"])
def test_assembler_partial_hands_floats_over_in_each_mode(
    floats: Floats, splitter: Splitter
) -> None:
    asm = Assembler()
    for piece in splitter(TEXT.encode()):
        asm.feed(0, name="tool", arguments=piece)
    assert_mode(asm.partial(0, floats=floats), floats)
    asm = Assembler()
    for piece in splitter(b'{"x": 1.0000000000000000000001, "y": 2.5E-3'):
        asm.feed(0, name="tool", arguments=piece)
    value = asm.partial(0, floats=floats)
    assert list(value) == ["x"]
    if floats == "float":
        assert value["x"] == 1.0
    elif floats == "decimal":
        assert_same_decimal(value["x"], "1.0000000000000000000001")
    else:
        assert_lossless(value["x"], "1.0000000000000000000001")
        assert_lossless(asm.partial(0, floats=floats, eager_numbers=True)["y"], "2.5E-3")


@pytest.mark.parametrize("floats", ["float", "decimal", "lossless"])
def test_a_top_level_number_and_short_plain_floats(floats: Floats) -> None:
    # A whole text of one float; then short floats, which the default mode reads with orjson.
    top = scanned("2.5E-3", iter_whole).finish(floats=floats)
    x = scanned('{"x": 1.5, "n": -3}', iter_whole).finish(floats=floats)
    if floats == "float":
        assert (top, x["x"]) == (0.0025, 1.5)
    elif floats == "decimal":
        assert_same_decimal(top, "2.5E-3")
        assert_same_decimal(x["x"], "1.5")
    else:
        assert_lossless(top, "2.5E-3")
        assert_lossless(x["x"], "1.5")
    assert x["n"] == -3 and type(x["n"]) is int
    assert scanned("-12", iter_whole).finish(floats=floats) == -12


def test_a_repeated_key_keeps_its_last_value_in_every_mode() -> None:
    text = '{"a": 1.25, "b": 2, "a": 2.50}'
    scanner = scanned(text, iter_whole, duplicate_keys="last_wins")
    assert scanner.finish(floats="decimal") == {"a": Decimal("2.50"), "b": 2}
    assert scanned(text, iter_whole, duplicate_keys="last_wins").finish(floats="lossless") == {
        "a": LosslessFloat("2.50"),
        "b": 2,
    }


def test_the_default_mode_is_unchanged() -> None:
    scanner = scanned(TEXT, iter_whole)
    assert scanner.partial() == scanner.partial(floats="float") == json.loads(TEXT)
    assert scanned(TEXT, iter_whole).finish() == json.loads(TEXT)


@pytest.mark.parametrize("bad", ["double", "lossless-float", "", True, None, 1])
def test_an_unknown_float_mode_is_misuse(bad: Any) -> None:
    scanner = scanned("[1.5]", iter_whole)
    with pytest.raises(MisuseError, match="'float', 'decimal' or 'lossless'"):
        scanner.partial(floats=bad)
    asm = Assembler()
    asm.feed(0, name="t", arguments="{}")
    with pytest.raises(MisuseError, match="'float', 'decimal' or 'lossless'"):
        asm.partial(0, floats=bad)
    with pytest.raises(MisuseError, match="'float', 'decimal' or 'lossless'"):
        scanner.finish(floats=bad)


def test_lossless_float_is_a_small_value_type() -> None:
    x = LosslessFloat("2.5E-3")
    assert repr(x) == "LosslessFloat('2.5E-3')"
    assert eval(repr(x), {"LosslessFloat": LosslessFloat}) == x
    assert str(x) == "2.5E-3" and bytes(x) == b"2.5E-3" and float(x) == 0.0025
    assert x.as_decimal() == Decimal("0.0025")
    # Equal by text: the same number written another way is another lexeme.
    assert x != LosslessFloat("0.0025")
    assert x != 0.0025 and x != "2.5E-3"
    assert len({x, LosslessFloat(b"2.5E-3"), LosslessFloat("0.0025")}) == 2
    assert copy.copy(x) == x and copy.deepcopy(x) == x
    assert pickle.loads(pickle.dumps(x)) == x
    with pytest.raises(AttributeError):
        x.lexeme = "1"  # type: ignore[attr-defined]
    assert LosslessFloat("7") == LosslessFloat("7") and float(LosslessFloat("7")) == 7.0


@pytest.mark.parametrize("bad", ["", "1.", ".5", "+1", " 1", "1 ", "NaN", "Infinity", "01", "1e"])
def test_lossless_float_takes_only_one_json_number(bad: str) -> None:
    with pytest.raises(MisuseError, match="not a JSON number"):
        LosslessFloat(bad)


# --- completeness flags ----------------------------------------------------------------------


def marks(node: object) -> str:
    """Compact JSON of a flagged tree with `~` after every incomplete node (as the Rust tests
    render it)."""
    assert isinstance(node, PartialNode)
    value = node.value
    if isinstance(value, dict):
        members = [f"{json.dumps(k)}:{marks(v)}" for k, v in value.items()]
        body = "{" + ",".join(members) + "}"
    elif isinstance(value, list):
        body = "[" + ",".join(marks(v) for v in value) + "]"
    else:
        body = str(value) if isinstance(value, LosslessFloat) else json.dumps(value)
    return body if node.complete else body + "~"


SPEC_TABLE: list[tuple[bytes, str | None]] = [
    (b"", None),
    (b'{"a', "{}~"),
    (b'{"a":', "{}~"),
    (b'{"a": "hel', '{"a":"hel"~}~'),
    (b'{"a": "x\\', '{"a":"x"~}~'),
    (b'{"a": "hello \\u00', '{"a":"hello "~}~'),
    (b'{"a": "ab\\ud83d', '{"a":"ab"~}~'),
    (b'{"a": "\\ud83d\\ude00', '{"a":"\\ud83d\\ude00"~}~'),
    ('{"a": "é'.encode()[:-1], '{"a":""~}~'),
    (b'{"a": 1', "{}~"),
    (b'{"a": 1,', '{"a":1}~'),
    (b'{"a": 1.', "{}~"),
    (b'{"a": -', "{}~"),
    (b'{"a": tr', "{}~"),
    (b'{"a": true', '{"a":true}~'),
    (b"[1, 2", "[1]~"),
    (b"[1, 2,", "[1,2]~"),
    (b'["x", "y', '["x","y"~]~'),
    (b'{"a": {"b": [1, {"c": "d', '{"a":{"b":[1,{"c":"d"~}~]~}~}~'),
]


@pytest.mark.parametrize(("prefix", "expected"), SPEC_TABLE)
def test_flags_on_the_spec_example_prefixes(
    prefix: bytes, expected: str | None, splitter: Splitter
) -> None:
    scanner = scanned(prefix, splitter)
    flagged = scanner.partial(flags=True)
    if expected is None:
        assert flagged is NO_VALUE
        return
    assert marks(flagged) == expected
    assert flagged.plain() == scanner.partial()
    if prefix.startswith(b"{"):
        asm = Assembler()
        for piece in splitter(prefix):
            asm.feed(0, name="tool", arguments=piece)
        assert asm.partial(0, flags=True) == flagged


def test_flags_with_strings_off_and_eager_numbers() -> None:
    scanner = scanned('{"n": 12, "s": ["x", "y', iter_whole)
    assert marks(scanner.partial(flags=True, strings="off")) == '{"n":12,"s":["x"]~}~'
    scanner = scanned('{"n": 12, "m": [1.5e3', iter_whole)
    assert marks(scanner.partial(flags=True)) == '{"n":12,"m":[]~}~'
    assert marks(scanner.partial(flags=True, eager_numbers=True)) == '{"n":12,"m":[1500.0~]~}~'
    assert (
        marks(scanner.partial(flags=True, eager_numbers=True, floats="lossless"))
        == '{"n":12,"m":[1.5e3~]~}~'
    )
    scanner.push(" ")
    assert marks(scanner.partial(flags=True)) == '{"n":12,"m":[1500.0]~}~'


def test_a_complete_text_is_complete_everywhere() -> None:
    scanner = scanned('{"a": [1, {"b": "c"}, 2.5], "d": null}', iter_whole)
    assert marks(scanner.partial(flags=True)) == '{"a":[1,{"b":"c"},2.5],"d":null}'
    # A top-level number is complete only once the text ends.
    scanner = scanned("12", iter_whole)
    assert scanner.partial(flags=True) is NO_VALUE
    assert scanner.partial(flags=True, eager_numbers=True) == PartialNode(12, complete=False)
    assert scanner.finish() == 12
    assert scanner.partial(flags=True) == PartialNode(12, complete=True)
    asm = Assembler()
    asm.feed(0, name="t", arguments='{"x": [true, "y"]')
    assert marks(asm.partial(0, flags=True)) == '{"x":[true,"y"]}~'
    asm.feed(0, arguments="}")
    assert marks(asm.partial(0, flags=True)) == '{"x":[true,"y"]}'


def test_partial_node_compares_prints_and_unwraps() -> None:
    scanner = scanned('{"a": [1.5, "x"], "b": "he', iter_whole)
    node = scanner.partial(flags=True)
    expected = PartialNode(
        {
            "a": PartialNode(
                [PartialNode(1.5, complete=True), PartialNode("x", complete=True)], complete=True
            ),
            "b": PartialNode("he", complete=False),
        },
        complete=False,
    )
    assert node == expected
    assert not node != expected
    assert node != PartialNode(expected.value, complete=True)
    assert node != expected.plain() and node != 1
    assert repr(node) == (
        "PartialNode({'a': PartialNode([PartialNode(1.5, complete=True), "
        "PartialNode('x', complete=True)], complete=True), "
        "'b': PartialNode('he', complete=False)}, complete=False)"
    )
    assert node.plain() == {"a": [1.5, "x"], "b": "he"}
    # plain() builds new containers: changing them leaves the tree as it was.
    plain = node.plain()
    plain["a"].append(2)
    assert node == expected
    with pytest.raises(TypeError):
        hash(node)
    with pytest.raises(AttributeError):
        node.complete = True  # type: ignore[misc]


def test_plain_keeps_hand_made_members_and_stops_at_a_cycle() -> None:
    node = PartialNode(
        {"a": 1, "b": PartialNode([PartialNode(2, complete=True)], complete=True)}, complete=False
    )
    assert node.plain() == {"a": 1, "b": [2]}
    looped = PartialNode([], complete=False)
    looped.value.append(looped)
    with pytest.raises(RecursionError):
        looped.plain()
    assert repr(looped) == "PartialNode([PartialNode([...], complete=False)], complete=False)"


def test_a_node_in_a_cycle_is_collected() -> None:
    def alive() -> int:
        return sum(type(o) is PartialNode for o in gc.get_objects())

    gc.collect()
    before = alive()
    looped = PartialNode({}, complete=False)
    looped.value["self"] = looped
    assert alive() == before + 1
    del looped
    gc.collect()
    assert alive() == before


def test_flags_and_floats_on_a_stream() -> None:
    chunks = [
        chat_chunk({"tool_calls": [tc(0, id="a", name="t", arguments='{"x": 1.10, "y": [')]}),
        chat_chunk({"tool_calls": [tc(0, arguments='"z"]}')]}),
        chat_chunk({"tool_calls": [tc(1, id="b", name="t", arguments='{"p": 2.50, "q": "r')]}),
        chat_chunk({}, finish_reason="length"),
    ]
    seen: list[str] = []
    with assemble(chunks) as stream:
        for event in stream:
            if isinstance(event, CallCompleted):
                seen.append(marks(stream.partial(event.call.ordinal, flags=True)))
                continue
            ordinal = getattr(event, "ordinal", None)
            if ordinal is not None and stream.assembler.partial(ordinal) is not NO_VALUE:
                seen.append(marks(stream.partial(ordinal, flags=True, floats="lossless")))
    assert '{"x":1.10,"y":[]~}~' in seen
    # After the end: the finished call is complete everywhere; the cut one keeps its open path.
    assert seen[-2:] == ['{"x":1.1,"y":["z"]}', '{"p":2.5,"q":"r"~}~']
    assert stream.partial(0, floats="decimal") == {"x": Decimal("1.10"), "y": ["z"]}
    assert stream.partial(0) == {"x": 1.1, "y": ["z"]}
    assert stream.partial(1, floats="lossless", flags=True).plain() == {
        "p": LosslessFloat("2.50"),
        "q": "r",
    }
    with pytest.raises(MisuseError):
        stream.partial(0, floats="double")  # type: ignore[arg-type]


def test_flags_and_floats_on_an_async_stream() -> None:
    chunks = [
        chat_chunk({"tool_calls": [tc(0, id="a", name="t", arguments='{"x": 2.5E-3}')]}),
        chat_chunk({}, finish_reason="tool_calls"),
    ]

    async def source() -> AsyncIterator[object]:
        for chunk in chunks:
            yield chunk

    async def run() -> tuple[Any, Any]:
        async with aassemble(source()) as stream:
            async for _ in stream:
                pass
        return stream.partial(0, floats="lossless"), stream.partial(0, flags=True)

    lossless, flagged = asyncio.run(run())
    assert lossless == {"x": LosslessFloat("2.5E-3")}
    assert marks(flagged) == '{"x":0.0025}'


# --- properties ------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)

Path = tuple[str | int, ...]


def dump(value: Any, ensure_ascii: bool) -> tuple[bytes, dict[Path, tuple[int, int, bool]]]:
    """`value` as JSON text, with each node's byte span and whether it is a number: the oracle
    for which nodes a prefix has closed."""
    out = bytearray()
    spans: dict[Path, tuple[int, int, bool]] = {}

    def walk(v: Any, path: Path) -> None:
        start = len(out)
        if isinstance(v, dict):
            out.extend(b"{")
            for i, (key, item) in enumerate(v.items()):
                out.extend(b", " if i else b"")
                out.extend(json.dumps(key, ensure_ascii=ensure_ascii).encode() + b": ")
                walk(item, (*path, key))
            out.extend(b"}")
        elif isinstance(v, list):
            out.extend(b"[")
            for i, item in enumerate(v):
                out.extend(b", " if i else b"")
                walk(item, (*path, i))
            out.extend(b"]")
        else:
            out.extend(json.dumps(v, ensure_ascii=ensure_ascii).encode())
        number = isinstance(v, int | float) and not isinstance(v, bool)
        spans[path] = (start, len(out), number)

    walk(value, ())
    return bytes(out), spans


def check_flags(
    node: object, spans: dict[Path, tuple[int, int, bool]], fed: int, whole: bool, path: Path = ()
) -> None:
    """Each node is complete exactly when the prefix of `fed` bytes has closed it (a number
    needs the delimiter after it), or the whole text is complete."""
    assert isinstance(node, PartialNode), path
    _, end, number = spans[path]
    closed = end < fed if number else end <= fed
    assert node.complete == (closed or whole), (path, fed)
    value = node.value
    if isinstance(value, dict):
        for key, child in value.items():
            check_flags(child, spans, fed, whole, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            check_flags(child, spans, fed, whole, (*path, i))


def check_view(
    flagged: Any, plain: Any, spans: dict[Path, tuple[int, int, bool]], fed: int, whole: bool
) -> None:
    """The flagged view of a prefix is the plain one with the open path marked."""
    if plain is NO_VALUE:
        assert flagged is NO_VALUE
        return
    assert flagged.plain() == plain
    check_flags(flagged, spans, fed, whole)


VIEWS: list[dict[str, Any]] = [
    {"strings": strings, "eager_numbers": eager}
    for strings in ("trailing", "off")
    for eager in (False, True)
]


@settings(max_examples=150, deadline=None)
@given(
    value=json_values,
    ensure_ascii=st.booleans(),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_scanner_flags_mark_exactly_the_open_path(
    value: Any, ensure_ascii: bool, points: list[int]
) -> None:
    text, spans = dump(value, ensure_ascii)
    scanner = Scanner()
    fed = 0
    for piece in cut_at(text, points):
        scanner.push(piece)
        fed += len(piece)
        for view in VIEWS:
            check_view(
                scanner.partial(flags=True, **view),
                scanner.partial(**view),
                spans,
                fed,
                scanner.complete,
            )
    scanner.finish()
    flagged = scanner.partial(flags=True)
    check_flags(flagged, spans, len(text), True)
    assert flagged.plain() == json.loads(text)


@settings(max_examples=150, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=4), json_values, max_size=5),
    ensure_ascii=st.booleans(),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_assembler_flags_mark_exactly_the_open_path(
    value: dict[str, Any], ensure_ascii: bool, points: list[int]
) -> None:
    text, spans = dump(value, ensure_ascii)
    asm = Assembler()
    asm.feed(0, name="tool")
    fed = 0
    for piece in cut_at(text, points):
        asm.feed(0, arguments=piece)
        fed += len(piece)
        for view in VIEWS:
            check_view(
                asm.partial(0, flags=True, **view), asm.partial(0, **view), spans, fed, False
            )
    # The call's text is whole: every node is complete, and the value is the final one.
    flagged = asm.partial(0, flags=True, floats="lossless")
    check_flags(flagged, spans, len(text), True)
    assert asm.finish()[0].value == asm_value(flagged)


def asm_value(flagged: PartialNode) -> Any:
    """The flag-free value with each `LosslessFloat` read as `float`, as `json.loads` reads it."""

    def floats(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: floats(x) for k, x in v.items()}
        if isinstance(v, list):
            return [floats(x) for x in v]
        return float(v) if isinstance(v, LosslessFloat) else v

    return floats(flagged.plain())


@settings(max_examples=100, deadline=None)
@given(value=json_values)
def test_every_float_mode_reads_the_same_numbers(value: Any) -> None:
    text = json.dumps(value).encode()
    expected = json.loads(text)
    scanner = scanned(text, iter_whole)
    assert scanner.finish(floats="float") == expected
    for floats, read in (("decimal", Decimal), ("lossless", LosslessFloat)):
        got = scanned(text, iter_whole).finish(floats=floats)
        assert same_numbers(got, expected, read)


def same_numbers(got: Any, expected: Any, read: type) -> bool:
    """`got` is `expected` with each float as `read` of its exact text, ints untouched."""
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and list(got) == list(expected)
            and all(same_numbers(got[k], v, read) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(same_numbers(g, e, read) for g, e in zip(got, expected, strict=True))
        )
    if isinstance(expected, float):
        return (
            type(got) is read
            and float(got) == expected
            and (read is not LosslessFloat or str(got) == json.dumps(expected))
        )
    return type(got) is type(expected) and got == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e99999999999999999999", "Infinity"),
        ("-1E+99999999999999999999", "-Infinity"),
        ("1.5e-99999999999999999999", "0"),
        ("-2e-99999999999999999999", "-0"),
        ("0e99999999999999999999", "0"),
    ],
)
def test_decimal_of_an_exponent_no_decimal_holds_is_what_a_float_reads(
    text: str, expected: str
) -> None:
    # `Decimal(text)` raises `InvalidOperation` past an exponent of about 10^18: model output
    # made `partial(floats="decimal")` and `finish` raise it, and `as_decimal()` too.
    scanner = Scanner()
    scanner.push(f'{{"a": {text}}}')
    want = Decimal(expected)
    for got in (scanner.partial(floats="decimal"), scanner.finish(floats="decimal")):
        value = got["a"]
        assert isinstance(value, Decimal) and str(value) == str(want)
    assert str(LosslessFloat(text).as_decimal()) == str(want)
    assembler = Assembler()
    assembler.feed(0, id="c", name="f", arguments=f'{{"a": {text}}}')
    assert str(assembler.partial(0, floats="decimal")["a"]) == str(want)
    # Numbers a Decimal holds stay exact.
    scanner = Scanner()
    scanner.push("[1e999999999999999999, 2.50]")
    assert scanner.finish(floats="decimal") == [Decimal("1e999999999999999999"), Decimal("2.50")]
