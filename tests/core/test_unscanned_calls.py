"""Calls nobody read while they streamed are scanned only when read, and `.value` read first
settles them with orjson plus the text's outline. Whichever is read first, a call must end
exactly as a call scanned while it streamed: same error, same value, same number flag."""

from __future__ import annotations

import gc
import json
import sys
import threading
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import Assembler

TEXTS = [
    # Repeated keys, which orjson takes silently: top level, nested, in arrays, escaped.
    '{"a": 1, "a": 2}',
    '{"a": {"b": 1, "b": 1}}',
    '{"a": [{"x": 1}, {"x": 1, "y": 2, "x": 3}]}',
    '{"a": 1, "\\u0061": 2}',
    '{"\\"": 1, "\\"": 2}',
    '{"k": 1, "K": 2}',
    # Nothing repeated, but colons and braces inside strings.
    '{"a:b": "c:d", "e": "{[:]}", "f\\"": ":", "g": "\\\\"}',
    # Depth: the outline must stop what orjson's own limit lets through.
    '{"a": ' + "[" * 70 + "]" * 70 + "}",
    '{"a": ' + "[" * 62 + "]" * 62 + "}",
    # Numbers orjson reads differently from json.loads, or not at all.
    '{"n": 12345678901234567890}',
    '{"n": -1234567890123456789}',
    '{"n": 1e400}',
    '{"n": 1e-400}',
    '{"n": 1.5e10, "m": -0, "o": 0.000001}',
    '{"n": 123456789012345678}',
    # Not an object, not JSON, or not finished.
    "[1, 2]",
    '"text"',
    "   ",
    '{"a": 1}{"b": 2}',
    '{"a": 1} x',
    '{"a": tru}',
    '{"a": "\\ud800"}',
    '{"a": "\\udd1e\\ud834"}',
    '{"a": "\x01"}',
    '{"a": 01}',
    '{"a": 1,}',
    '{"a": 1',
    '{"a": "b',
    '\ufeff{"a": 1}',
    '{"a": NaN}',
    # Valid, with everything orjson must build exactly.
    '{"s": "東🚀\\"x\\n\\u0007", "t": ["é", null, true, false], "u": {"w": 1.5, "h": 2.0}}',
    "{}",
    ' \t\n{"a": []}\r\n',
]


def verdict(
    text: str | bytes, value_first: bool, **options: object
) -> tuple[object, object, bool, bool]:
    assembler = Assembler(**options)  # type: ignore[arg-type]
    assembler.feed(0, id="call_1", name="tool", arguments=text)
    (call,) = assembler.finish()
    value = call.value if value_first else None
    error = call.error
    if not value_first:
        value = call.value
    shown = None if error is None else (error.kind, error.offset, error.message)
    return shown, value, call.plain_numbers, call.ok


def eager(text: str | bytes, **options: object) -> tuple[object, object, bool, bool]:
    # A call that tracks progress is scanned fragment by fragment while it streams.
    return verdict(text, False, track_progress=True, **options)


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("duplicate_keys", ["error", "last_wins"])
def test_value_first_or_error_first_ends_as_an_eager_scan(text: str, duplicate_keys: str) -> None:
    expected = eager(text, duplicate_keys=duplicate_keys)
    assert verdict(text, True, duplicate_keys=duplicate_keys) == expected
    assert verdict(text, False, duplicate_keys=duplicate_keys) == expected


def test_repeated_keys_are_found_when_the_value_is_read_first() -> None:
    shown, value, _, ok = verdict('{"a": [{"x": 1, "x": 2}]}', True)
    assert not ok and value is None
    assert shown is not None and shown[0] == "duplicate_key"
    # Last wins: the value json.loads gives.
    _, value, _, ok = verdict('{"a": 1, "b": 2, "a": 3}', True, duplicate_keys="last_wins")
    assert ok and value == json.loads('{"a": 1, "b": 2, "a": 3}')
    assert list(value) == ["a", "b"]


def test_the_depth_limit_holds_when_the_value_is_read_first() -> None:
    text = '{"a": [[{"b": [1]}]]}'
    shown, value, _, ok = verdict(text, True, max_depth=4)
    assert not ok and value is None
    assert shown is not None and shown[0] == "too_deep"
    assert verdict(text, True, max_depth=5)[1] == json.loads(text)


def test_long_numbers_keep_their_exact_value_when_read_first() -> None:
    _, value, plain, ok = verdict('{"n": 123456789012345678901234567890, "f": 0.1}', True)
    assert ok and not plain
    assert value == {"n": 123456789012345678901234567890, "f": 0.1}
    assert isinstance(value["n"], int)


def test_threads_reading_one_call_agree() -> None:
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments='{"a": [1, {"b": "c"}], "d": "e"}')
    (call,) = assembler.finish()
    seen: list[object] = []
    readers = [
        threading.Thread(target=lambda: seen.append(call.value)),
        threading.Thread(target=lambda: seen.append(call.error)),
        threading.Thread(target=lambda: seen.append(call.value)),
    ]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert call.error is None and call.ok
    assert [s for s in seen if s is not None] == [{"a": [1, {"b": "c"}], "d": "e"}] * 2


# JSON-ish texts built from the pieces where orjson and the scanner could part ways.
_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        " ",
        '"a"',
        '"b"',
        '"\\u0061"',
        '"\\""',
        '"x:y"',
        "1",
        "-0",
        "1e400",
        "12345678901234567890",
        "1.5",
        "true",
        "null",
        '"\\ud800"',
        '"é"',
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    body=st.lists(_PIECES, max_size=24),
    duplicate_keys=st.sampled_from(["error", "last_wins"]),
    max_depth=st.sampled_from([2, 64]),
)
def test_any_text_ends_the_same_whichever_is_read_first(
    body: list[str], duplicate_keys: str, max_depth: int
) -> None:
    text = "{" + "".join(body)
    options = {"duplicate_keys": duplicate_keys, "max_depth": max_depth}
    expected = eager(text, **options)
    assert verdict(text, True, **options) == expected
    assert verdict(text, False, **options) == expected


@settings(max_examples=300, deadline=None)
@given(
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(st.characters(exclude_categories=("Cs",))),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.text(st.characters(exclude_categories=("Cs",)), max_size=4), children, max_size=4
            )
        ),
        max_leaves=20,
    )
)
def test_valid_objects_read_value_first_equal_json_loads(value: object) -> None:
    text = json.dumps({"v": value, "w": [value]}, ensure_ascii=False)
    shown, built, _, ok = verdict(text, True)
    assert shown is None and ok
    assert built == json.loads(text)
    assert verdict(text, True) == eager(text)


def test_a_digit_limit_below_plain_numbers_holds_when_the_value_is_read_first() -> None:
    # A plain number (up to 18 characters) may still break a lower `max_number_digits`.
    for text in ('{"amount": 123456}', '{"amount": 123456.789e5}'):
        shown, value, _, ok = verdict(text, True, max_number_digits=3)
        assert not ok and value is None
        assert shown is not None and shown[0] == "number_too_long"
        assert verdict(text, False, max_number_digits=3)[0] == shown
    assert verdict('{"amount": 123}', True, max_number_digits=3)[1] == {"amount": 123}


def test_value_is_one_object_that_the_call_keeps_and_lets_go() -> None:
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments='{"a": [1, {"b": "c"}]}')
    (call,) = assembler.finish()
    value = call.value
    assert call.value is value
    held = sys.getrefcount(value)
    del call, assembler
    gc.collect()
    assert sys.getrefcount(value) == held - 1


def test_a_value_that_holds_its_call_is_collected() -> None:
    class Marker:
        pass

    assembler = Assembler()
    assembler.feed(0, id="call_1", name="tool", arguments='{"a": 1}')
    (call,) = assembler.finish()
    marker = Marker()
    alive = weakref.ref(marker)
    call.value["marker"] = marker
    call.value["call"] = call
    del marker, call, assembler
    gc.collect()
    assert alive() is None
