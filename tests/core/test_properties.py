"""Property tests: any split of any JSON text gives `json.loads`'s value, and partial values
never take anything back."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import cut_at
from toolwire import NO_VALUE, Assembler, Scanner

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
    | st.sampled_from(['"', "\\", "/", "\n", "\u2028", "é", "😀", "東京", "\x00", "\x1f"])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=30,
)
objects = st.dictionaries(st.text(max_size=6), json_values, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    value=objects,
    ensure_ascii=st.booleans(),
    as_bytes=st.booleans(),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=15),
)
def test_any_split_gives_json_loads_value(
    value: dict[str, Any], ensure_ascii: bool, as_bytes: bool, points: list[int]
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    data: bytes | str = text.encode() if as_bytes else text
    a = Assembler()
    for piece in cut_at(data, points):
        a.feed(0, name="tool", arguments=piece)
    call = a.finish()[0]
    assert call.error is None
    assert call.value == json.loads(text)
    assert call.arguments == text


@settings(max_examples=150, deadline=None)
@given(value=json_values, ensure_ascii=st.booleans())
def test_scanner_any_json_text(value: Any, ensure_ascii: bool) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    s = Scanner()
    for i in range(0, len(text), 3):
        s.push(text[i : i + 3])
    assert s.finish() == json.loads(text)


def contained(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return all(k in b and contained(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) <= len(b) and all(contained(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, str) and isinstance(b, str):
        return b.startswith(a)
    return type(a) is type(b) and a == b


@settings(max_examples=120, deadline=None)
@given(value=objects, ensure_ascii=st.booleans())
def test_partial_values_are_monotone(value: dict[str, Any], ensure_ascii: bool) -> None:
    data = json.dumps(value, ensure_ascii=ensure_ascii).encode()
    final = json.loads(data)
    a = Assembler()
    a.feed(0, name="tool")
    previous: Any = NO_VALUE
    for i in range(len(data)):
        a.feed(0, arguments=data[i : i + 1])
        now = a.partial(0)
        if previous is not NO_VALUE:
            assert now is not NO_VALUE
            assert contained(previous, now)
        if now is not NO_VALUE:
            assert contained(now, final)
        previous = now


def _leaves(value: Any, pointer: str = "") -> list[tuple[str, Any]]:
    """(JSON Pointer, scalar) for every scalar of `value`, in document order."""
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for key, item in value.items():
            token = key.replace("~", "~0").replace("/", "~1")
            out.extend(_leaves(item, f"{pointer}/{token}"))
        return out
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, f"{pointer}/{i}")]
    return [(pointer, value)]


@settings(max_examples=300, deadline=None)
@given(
    value=objects,
    ensure_ascii=st.booleans(),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=15),
    drains=st.lists(st.booleans(), min_size=16, max_size=16),
)
def test_progress_items_spell_every_leaf_under_any_split(
    value: dict[str, Any], ensure_ascii: bool, points: list[int], drains: list[bool]
) -> None:
    """Bytes cut anywhere (inside UTF-8 characters and escapes too), drained after some
    fragments and not others: the items, joined per path, spell each leaf exactly once."""
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    a = Assembler(track_progress=True)
    items: list[tuple[int, str, str]] = []
    for i, piece in enumerate(cut_at(text.encode(), points)):
        a.feed(0, name="tool", arguments=piece)
        if drains[i % len(drains)]:
            items.extend(a.drain_progress())
            # A drain with nothing new (another call's fragment came in between, in a parallel
            # stream) must keep a character the previous drain cut.
            items.extend(a.drain_progress())
    items.extend(a.drain_progress())
    assert a.finish()[0].value == value
    joined: dict[str, str] = {}
    order: list[str] = []
    for ordinal, pointer, piece in items:
        assert ordinal == 0
        if pointer not in joined:
            order.append(pointer)
        else:
            # Only a value's first item may be empty (it announces the value).
            assert piece, f"an item adds nothing to {pointer}"
        joined[pointer] = joined.get(pointer, "") + piece
    leaves = _leaves(value)
    assert order == [p for p, _ in leaves]
    for pointer, leaf in leaves:
        shown = joined[pointer] if isinstance(leaf, str) else json.loads(joined[pointer])
        assert shown == leaf, (pointer, joined[pointer], leaf)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(objects, min_size=2, max_size=3),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    drains=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_progress_of_interleaved_parallel_calls(
    values: list[dict[str, Any]], points: list[int], drains: list[bool]
) -> None:
    """Parallel calls whose byte fragments interleave round-robin, drained at arbitrary points:
    each call's items spell its own leaves exactly (a drain often finds nothing new for a call
    whose fragment did not come in since the last one)."""
    pieces = [cut_at(json.dumps(v, ensure_ascii=False).encode(), points) for v in values]
    a = Assembler(track_progress=True)
    items: list[tuple[int, str, str]] = []
    step = 0
    for round_ in range(max(len(p) for p in pieces)):
        for index, call_pieces in enumerate(pieces):
            if round_ < len(call_pieces):
                a.feed(index, name=f"tool{index}", arguments=call_pieces[round_])
                if drains[step % len(drains)]:
                    items.extend(a.drain_progress())
                step += 1
    items.extend(a.drain_progress())
    assert [c.value for c in a.finish()] == values
    joined: dict[tuple[int, str], str] = {}
    for ordinal, pointer, piece in items:
        # Only a value's first item may be empty, whatever another call's last item was.
        assert piece or (ordinal, pointer) not in joined, (ordinal, pointer)
        joined[(ordinal, pointer)] = joined.get((ordinal, pointer), "") + piece
    for ordinal, value in enumerate(values):
        for pointer, leaf in _leaves(value):
            text = joined[(ordinal, pointer)]
            assert (text if isinstance(leaf, str) else json.loads(text)) == leaf


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(objects, min_size=1, max_size=3),
    points=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_progress_into_a_list_gives_the_items_of_a_drain_after_every_fragment(
    values: list[dict[str, Any]], points: list[int]
) -> None:
    """`progress_into` appends, during each `feed`, exactly what a drain right after it gives."""
    pieces = [cut_at(json.dumps(v, ensure_ascii=False).encode(), points) for v in values]
    drained = Assembler(track_progress=True)
    expected: list[tuple[int, str, str]] = []
    items: list[tuple[int, str, str]] = []
    pushed = Assembler(progress_into=items)
    for round_ in range(max(len(p) for p in pieces)):
        for index, call_pieces in enumerate(pieces):
            if round_ < len(call_pieces):
                for a in (drained, pushed):
                    a.feed(index, name=f"tool{index}", arguments=call_pieces[round_])
                expected.extend(drained.drain_progress())
                assert items == expected
                assert pushed.drain_progress() == []
    assert [c.value for c in pushed.finish()] == [c.value for c in drained.finish()] == values
    assert items == expected


@settings(max_examples=200, deadline=None)
@given(piece=st.text(st.characters(exclude_categories=("Cs",)), max_size=30))
def test_strings_built_by_toolwire_are_python_strings_of_the_same_kind(piece: str) -> None:
    """Progress pieces and partial-value strings are built straight into CPython's storage:
    they must equal, hash and look up like the str Python makes (same storage kind)."""
    text = json.dumps({"k": piece}, ensure_ascii=False)
    items: list[tuple[int, str, str]] = []
    a = Assembler(progress_into=items)
    for i in range(0, len(text), 3):
        a.feed(0, name="tool", arguments=text[i : i + 3])
    partial = a.partial(0)
    pieces = [t for _, pointer, t in items if pointer == "/k"]
    assert "".join(pieces) == piece
    built = partial["k"]
    assert built == piece and hash(built) == hash(piece) and {piece: 1}[built] == 1
    for t in pieces:
        # `"".join(list(t))` is the same text as Python builds it, in its canonical kind.
        same = "".join(list(t))
        assert t == same and hash(t) == hash(same) and {same: 1}[t] == 1
