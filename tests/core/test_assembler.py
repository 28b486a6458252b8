"""Behaviour of the assembler through the public API, in every feed mode."""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import subprocess
import sys
import threading
import tracemalloc
import weakref
from collections.abc import Callable, ItemsView, Iterator
from decimal import Decimal
from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import Splitter
from toolwire import (
    NO_VALUE,
    Assembler,
    CallError,
    MisuseError,
    Scanner,
    ToolCall,
    ToolRegistry,
    Toolset,
    _core,
    assemble,
    call_id_for,
    tool_messages,
)
from toolwire.events import ArgumentsProgress, CallCompleted, PrecheckError


def feed_call(
    a: Assembler,
    index: int | None,
    text: str | bytes,
    splitter: Splitter,
    *,
    name: str | None = None,
    id: str | None = None,
) -> None:
    data = text.encode() if isinstance(text, str) else text
    first = True
    for piece in splitter(data):
        a.feed(index, id=id if first else None, name=name if first else None, arguments=piece)
        first = False
    if first:
        a.feed(index, id=id, name=name)


def one(a: Assembler) -> ToolCall:
    calls = a.finish()
    assert len(calls) == 1
    return calls[0]


def test_simple_call(splitter: Splitter) -> None:
    a = Assembler()
    feed_call(a, 0, '{"city": "Paris", "days": 3}', splitter, name="get_weather", id="call_1")
    call = one(a)
    assert (call.ordinal, call.index, call.id, call.name) == (0, 0, "call_1", "get_weather")
    assert call.arguments == '{"city": "Paris", "days": 3}'
    assert call.value == {"city": "Paris", "days": 3}
    assert call.error is None and call.ok


def test_str_fragments_are_accepted_too() -> None:
    a = Assembler()
    a.feed(0, name="t", arguments='{"a": "é')
    a.feed(0, arguments='"}')
    assert one(a).value == {"a": "é"}


def test_arguments_so_far_is_the_text_appended_so_far() -> None:
    asm = Assembler()
    asm.feed(0, id="c1", name="f", arguments='{"city": "Zü')
    asm.feed(0, arguments=b"\xc3\xbcrich")
    assert asm.arguments_so_far(0) == '{"city": "Züürich'.encode()
    with pytest.raises(MisuseError):
        asm.arguments_so_far(1)


def test_name_split_across_fragments() -> None:
    a = Assembler()
    a.feed(0, id="call_1", name="get_")
    a.feed(0, name="weather")
    a.feed(0, arguments='{"city": "Oslo"}')
    assert one(a).name == "get_weather"


def test_full_name_repeated_in_every_chunk_is_not_doubled(splitter: Splitter) -> None:
    a = Assembler()
    for piece in splitter(b'{"path": "/tmp/x"}'):
        a.feed(0, name="read_file", id="call_9", arguments=piece)
    call = one(a)
    assert call.name == "read_file"
    assert call.id == "call_9"
    assert call.value == {"path": "/tmp/x"}


def test_two_parallel_calls_to_the_same_tool(splitter: Splitter) -> None:
    a = Assembler()
    first = list(splitter(b'{"city": "Paris"}'))
    second = list(splitter(b'{"city": "Tokyo"}'))
    a.feed(0, id="call_a", name="get_weather")
    a.feed(1, id="call_b", name="get_weather")
    for i in range(max(len(first), len(second))):
        if i < len(first):
            a.feed(0, arguments=first[i])
        if i < len(second):
            a.feed(1, arguments=second[i])
    calls = a.finish()
    assert [(c.id, c.value) for c in calls] == [
        ("call_a", {"city": "Paris"}),
        ("call_b", {"city": "Tokyo"}),
    ]


def test_interleaved_calls_0_1_0_2_1() -> None:
    a = Assembler()
    a.feed(0, id="a", name="f", arguments='{"x":')
    a.feed(1, id="b", name="g", arguments='{"y":')
    a.feed(0, arguments="1}")
    a.feed(2, id="c", name="h", arguments="{}")
    a.feed(1, arguments="2}")
    assert [(c.name, c.value) for c in a.finish()] == [("f", {"x": 1}), ("g", {"y": 2}), ("h", {})]


def test_same_index_for_every_parallel_call() -> None:
    a = Assembler()
    a.feed(0, id="a", name="get_weather", arguments='{"city": "Paris"}')
    a.feed(0, id="b", name="get_time", arguments='{"tz": "UTC"}')
    a.feed(0, id="c", name="get_time", arguments='{"tz": "CET"}')
    calls = a.finish()
    assert [(c.id, c.name, c.value) for c in calls] == [
        ("a", "get_weather", {"city": "Paris"}),
        ("b", "get_time", {"tz": "UTC"}),
        ("c", "get_time", {"tz": "CET"}),
    ]


@pytest.mark.parametrize("index", [None, 1, 7, -1])
def test_index_is_an_opaque_key(index: int | None) -> None:
    a = Assembler()
    a.feed(index, id="call_1", name="f", arguments='{"a"')
    a.feed(index, arguments=": 1}")
    call = one(a)
    assert (call.ordinal, call.index, call.value) == (0, index, {"a": 1})


def test_index_is_read_at_every_fragment() -> None:
    """An object whose `__index__` answers differently is asked again at each fragment, and
    equal ints that are distinct objects name the same call."""

    class Alternating:
        def __init__(self) -> None:
            self.reads = 0

        def __index__(self) -> int:
            self.reads += 1
            return (self.reads - 1) % 2

    a = Assembler()
    index = Alternating()
    key = cast(int, index)
    assert a.feed(key, id="a", name="f", arguments='{"x": ') == 0
    assert a.feed(key, id="b", name="g", arguments='{"y": ') == 1
    assert a.feed(key, arguments="1}") == 0
    assert a.feed(key, arguments="2}") == 1
    big = 10**12
    assert a.feed(big, id="c", name="h", arguments='{"z": ') == 2
    assert a.feed(int(str(big)), arguments="3") == 2
    assert a.feed(big + 1, id="d", name="k", arguments="{}") == 3
    assert a.feed(big, arguments="}") == 2
    assert index.reads == 4
    assert [(c.name, c.value) for c in a.finish()] == [
        ("f", {"x": 1}),
        ("g", {"y": 2}),
        ("h", {"z": 3}),
        ("k", {}),
    ]


def test_missing_index_with_a_new_name_starts_a_new_call() -> None:
    a = Assembler()
    a.feed(None, id="a", name="f", arguments='{"a": 1}')
    a.feed(None, id="b", name="g", arguments='{"b": 2}')
    assert [(c.name, c.value) for c in a.finish()] == [("f", {"a": 1}), ("g", {"b": 2})]


@pytest.mark.parametrize("blank", ["", "null", "  "])
def test_blank_and_null_ids_are_absent(blank: str) -> None:
    a = Assembler()
    a.feed(0, id="call_1", name="f", arguments='{"a":')
    a.feed(0, id=blank, name="", arguments=" 1}")
    call = one(a)
    assert call.id == "call_1"
    assert call.name == "f"


def test_a_changing_id_on_continuation_keeps_the_first() -> None:
    a = Assembler()
    a.feed(0, id="call_1", name="f", arguments='{"a":')
    a.feed(0, id="call_2", arguments=" 1}")
    call = one(a)
    assert (call.id, call.value) == ("call_1", {"a": 1})


def test_cut_inside_an_escaped_quote(splitter: Splitter) -> None:
    text = r'{"q": "say \"hi\" now"}'
    for cut in range(1, len(text)):
        a = Assembler()
        a.feed(0, name="f", arguments=text[:cut])
        a.feed(0, arguments=text[cut:])
        assert one(a).value == {"q": 'say "hi" now'}


def test_cut_inside_a_unicode_escape() -> None:
    text = r'{"q": "caf\u00e9"}'
    for cut in range(1, len(text)):
        a = Assembler()
        a.feed(0, name="f", arguments=text[:cut])
        partial = a.partial(0)
        if isinstance(partial, dict) and "q" in partial:
            assert partial["q"] in ("", "c", "ca", "caf", "café")
        a.feed(0, arguments=text[cut:])
        assert one(a).value == {"q": "café"}


def test_cut_between_surrogate_halves() -> None:
    text = r'{"q": "\ud83d\ude00!"}'
    for cut in range(1, len(text)):
        a = Assembler()
        a.feed(0, name="f", arguments=text[:cut])
        partial = a.partial(0)
        if isinstance(partial, dict) and "q" in partial:
            assert partial["q"] in ("", "😀", "😀!")
        a.feed(0, arguments=text[cut:])
        assert one(a).value == {"q": "😀!"}


@pytest.mark.parametrize(
    "piece",
    ["ascii", "café ÿ", "東京 名前", "emoji 😀 𝄞", "mixed é 東 😀", "\x7f\x80\u07ff\u0800\uffff"],
)
def test_str_fragments_of_every_storage_kind_arrive_as_their_utf8(piece: str) -> None:
    # CPython stores str as 1, 2 or 4 bytes per code point; each is encoded without its cache.
    text = json.dumps({"s": piece, "t": [piece, piece[::-1]]}, ensure_ascii=False)
    a = Assembler()
    a.feed(0, name="f")
    for i in range(0, len(text), 3):
        a.feed(0, arguments="".join(list(text[i : i + 3])))
    call = one(a)
    assert call.arguments_bytes == text.encode()
    assert call.value == json.loads(text)


@given(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.lists(st.integers(min_value=0, max_value=60), max_size=8),
)
def test_any_str_fragments_arrive_as_their_utf8(piece: str, cuts: list[int]) -> None:
    # Every code point of every storage kind, cut anywhere between code points.
    text = json.dumps({"s": piece}, ensure_ascii=False)
    a = Assembler()
    a.feed(0, name="f")
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    for start, end in itertools.pairwise(bounds):
        a.feed(0, arguments="".join(list(text[start:end])))
    call = one(a)
    assert call.arguments_bytes == text.encode()
    assert call.value == {"s": piece}


@pytest.mark.parametrize("cut", [0, 1, 2])
def test_a_surrogate_pair_split_between_str_fragments_is_joined(cut: int) -> None:
    # A JS producer splits 😀 between two deltas; the SDK hands each half over as a str with a
    # lone surrogate, which UTF-8 cannot hold. `feed` raised UnicodeEncodeError, though model
    # output never raises and `feed_chunk` joins the halves (quirk 41).
    pieces = ['{"s": "\ud83d', '\ude00!"}']
    text = "".join(pieces)
    a = Assembler()
    a.feed(0, id="c", name="f", arguments=text[: 7 + cut])
    a.feed(0, arguments=text[7 + cut :])
    call = one(a)
    assert call.error is None and call.value == {"s": "😀!"}


def test_a_lone_surrogate_in_a_str_fragment_is_a_call_error_not_an_exception() -> None:
    a = Assembler()
    a.feed(0, id="c\udc00", name="f\ud800", arguments='{"s": "')
    a.feed(0, arguments="\ud800")
    a.feed(0, arguments='ok"}')
    call = one(a)
    assert call.error is not None and call.error.kind == "lone_surrogate"
    assert (call.id, call.name) == ("c\ufffd", "f\ufffd")


def test_a_dict_value_with_a_lone_surrogate_is_a_call_error() -> None:
    # An SDK decodes `{"s": "\ud800"}` sent as an object into a str with a lone surrogate: that
    # is model output, so it must be a typed error on the call, not a UnicodeEncodeError.
    a = Assembler()
    a.feed(0, name="f", arguments={"s": "\ud800", "t": "東"})
    call = one(a)
    assert call.error is not None and call.error.kind == "lone_surrogate"
    assert json.loads(call.arguments) == {"s": "\ud800", "t": "東"}


def test_cut_inside_a_cjk_character_in_bytes_mode() -> None:
    data = '{"city": "東京"}'.encode()
    for cut in range(1, len(data)):
        a = Assembler()
        a.feed(0, name="f", arguments=data[:cut])
        partial = a.partial(0)
        if isinstance(partial, dict) and "city" in partial:
            assert "東京".startswith(partial["city"])
        a.feed(0, arguments=data[cut:])
        assert one(a).value == {"city": "東京"}


def test_arguments_pre_seeded_with_an_empty_string(splitter: Splitter) -> None:
    a = Assembler()
    a.feed(0, id="call_1", name="f", arguments="")
    feed_call(a, 0, '{"a": 1}', splitter)
    assert one(a).value == {"a": 1}


def test_empty_arguments_become_an_empty_object() -> None:
    a = Assembler()
    a.feed(0, id="call_1", name="ping")
    call = one(a)
    assert (call.arguments, call.value, call.error) == ("{}", {}, None)
    assert "empty_arguments" in call.warnings


def test_truncated_arguments_keep_raw_text_and_are_never_repaired(splitter: Splitter) -> None:
    a = Assembler()
    feed_call(a, 0, '{"city": "Par', splitter, name="get_weather")
    assert a.partial(0) == {"city": "Par"}
    call = one(a)
    assert call.arguments == '{"city": "Par'
    assert call.value is None
    assert call.error is not None
    assert (call.error.kind, call.error.offset, call.error.incomplete) == ("truncated", 13, True)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[]", "not_object"),
        ('"string"', "not_object"),
        ("42", "not_object"),
        ("null", "not_object"),
        ('"{\\"a\\": 1}"', "not_object"),
        ('```json\n{"a": 1}\n```', "unexpected_byte"),
        ('{"a": 1} thanks', "trailing_data"),
        ('{"a": 1}{"b": 2}', "concatenated_values"),
        ('{"amount": 1, "amount": 1000}', "duplicate_key"),
        ('{"a": NaN}', "unexpected_byte"),
        ('{"path": "App\\Http"}', "invalid_escape"),
    ],
)
def test_bad_arguments_become_typed_errors(text: str, kind: str, splitter: Splitter) -> None:
    a = Assembler()
    feed_call(a, 0, text, splitter, name="f")
    call = one(a)
    assert call.error is not None
    assert call.error.kind == kind
    assert call.arguments == text


def test_error_offset_and_path_do_not_depend_on_the_split(splitter: Splitter) -> None:
    text = '{"items": [{"name": "a"}, {"name": tru}]}'
    a = Assembler()
    feed_call(a, 0, text, splitter, name="f")
    err = one(a).error
    assert err is not None
    assert (err.kind, err.offset, err.path) == ("unexpected_byte", 38, "/items/1/name")


def test_a_bad_call_never_stops_the_others() -> None:
    a = Assembler()
    a.feed(0, id="a", name="f", arguments='{"a": }')
    a.feed(1, id="b", name="g", arguments='{"b": 2}')
    a.feed(2, id="c", name="h", arguments='{"c": ')
    calls = a.finish()
    assert [c.error.kind if c.error else None for c in calls] == [
        "unexpected_byte",
        None,
        "truncated",
    ]
    assert calls[1].value == {"b": 2}


def test_arguments_sent_as_an_object() -> None:
    a = Assembler()
    a.feed(0, id="a", name="f", arguments={"city": "Paris", "n": [1, 2]})
    call = one(a)
    assert call.value == {"city": "Paris", "n": [1, 2]}
    assert json.loads(call.arguments) == call.value


def test_object_then_text_is_mixed_arguments() -> None:
    a = Assembler()
    a.feed(0, id="a", name="f", arguments={"city": "Paris"})
    a.feed(0, arguments='{"x": 1}')
    err = one(a).error
    assert err is not None and err.kind == "mixed_arguments"


def test_cumulative_arguments_are_not_doubled(splitter: Splitter) -> None:
    text = '{"city": "Paris", "unit": "c"}'
    a = Assembler()
    a.feed(0, id="a", name="f")
    for end in range(2, len(text) + 1, 3):
        a.feed(0, arguments=text[:end])
    a.feed(0, arguments=text)
    call = one(a)
    assert call.value == {"city": "Paris", "unit": "c"}
    assert "cumulative_arguments" in call.warnings


def test_consolidated_repeat_after_deltas_is_dropped(splitter: Splitter) -> None:
    text = '{"city": "Paris"}'
    a = Assembler()
    feed_call(a, 0, text, splitter, name="f", id="a")
    a.feed(0, arguments=text)
    call = one(a)
    assert call.value == {"city": "Paris"}
    assert "repeat_dropped" in call.warnings


@pytest.mark.parametrize("cut", range(1, 18))
def test_cumulative_resend_then_final_repeat_wherever_the_first_cut(cut: int) -> None:
    # A cumulative stream (quirk 19) that ends with a repeat of the whole text (quirk 20): the
    # result must not depend on where the provider cut its first fragment, including just
    # before a value, where the resend also reads as a nested object.
    text = '{"q": {"a": "x"}}'
    a = Assembler()
    a.feed(0, id="a", name="f")
    a.feed(0, arguments=text[:cut])
    a.feed(0, arguments=text)
    a.feed(0, arguments=text)
    call = one(a)
    assert call.error is None, call.arguments
    assert call.value == {"q": {"a": "x"}}


@pytest.mark.parametrize(
    ("options", "levels", "kind", "offset"),
    [({}, 65, "too_deep", 320), ({"max_bytes": 100}, 30, "too_large", 100)],
)
@pytest.mark.parametrize("size", [4, 5, 6, 10])
def test_a_self_similar_value_past_a_limit_fails_the_limit_whatever_the_cut(
    options: dict[str, int], levels: int, kind: str, offset: int, size: int
) -> None:
    # `{"a":` nested past the limit, cut every 5 bytes: each fragment is the one before it
    # again, a resend as much as a continuation. Crossing the limit says nothing about which
    # reading is right, so the call fails the limit with the text sent, as every other cut
    # does, and is not read as a resend that later broke.
    text = '{"a":' * levels + "1" + "}" * levels
    a = Assembler(**options)
    a.feed(0, id="a", name="f")
    for start in range(0, len(text), size):
        a.feed(0, arguments=text[start : start + size])
    call = one(a)
    assert call.error is not None
    assert (call.error.kind, call.error.offset) == (kind, offset)
    assert call.arguments == text[: options.get("max_bytes", len(text))]
    assert call.warnings == []


def test_a_cumulative_stream_past_the_depth_limit_appended_is_still_a_resend() -> None:
    # `[`, `[[`, `[[[`, ...: appended, the snapshots nest past the depth limit long before the
    # value ends; read as resends they are one valid value.
    a = Assembler()
    a.feed(0, id="a", name="f")
    text = '{"a":' + "[" * 40 + "]" * 40 + "}"
    for end in range(1, len(text) + 1):
        a.feed(0, arguments=text[:end])
    call = one(a)
    assert call.error is None, (call.error, call.arguments)
    assert call.arguments == text
    assert "cumulative_arguments" in call.warnings


def test_missing_name_is_an_error() -> None:
    a = Assembler()
    a.feed(0, id="a", arguments='{"x": 1}')
    err = one(a).error
    assert err is not None and err.kind == "missing_name"


def test_stop_marks_open_calls_filtered() -> None:
    a = Assembler()
    a.feed(0, id="a", name="f", arguments='{"x": 1}')
    a.end(0)
    a.feed(1, id="b", name="g", arguments='{"note": "some')
    a.stop("content_filter")
    calls = a.finish()
    assert calls[0].error is None
    assert calls[1].error is not None and calls[1].error.kind == "filtered"
    # The reason is on the call itself, for whoever records or reports it.
    assert (calls[0].stop_reason, calls[1].stop_reason) == (None, "content_filter")


def test_end_closes_a_call_and_a_later_delta_starts_another() -> None:
    a = Assembler()
    a.feed(3, id="a", name="f", arguments="{}")
    a.end(3)
    a.feed(3, id="b", name="f", arguments="{}")
    assert [c.id for c in a.finish()] == ["a", "b"]


def test_duplicate_wire_ids_get_unique_ids() -> None:
    a = Assembler()
    a.feed(0, id="dup", name="f", arguments="{}")
    a.feed(1, id="dup", name="g", arguments="{}")
    calls = a.finish()
    assert calls[0].id == "dup"
    assert calls[1].id != "dup" and calls[1].id is not None
    assert "duplicate_id" in calls[1].warnings
    assert calls[1].metadata == {"wire_id": "dup"}


@pytest.mark.parametrize(
    "wire_ids",
    [
        ["x", "x", "x_1"],  # the derived id of the second would be the third's own
        ["x", "x", "x", "x_1", "x_2", "x_2_"],
        [None, "toolwire_0"],  # a wire id posing as an id-less call's synthetic id
        ["toolwire_1", None, "toolwire_1"],
    ],
)
def test_every_call_of_a_turn_answers_to_an_id_of_its_own(wire_ids: list[str | None]) -> None:
    a = Assembler()
    for index, wire_id in enumerate(wire_ids):
        a.feed(index, id=wire_id, name="f", arguments="{}")
    calls = a.finish()
    answered = [call_id_for(c) for c in calls]
    assert len(set(answered)) == len(calls), answered
    assert len(tool_messages(calls, ["done"] * len(calls))) == len(calls)
    # The first call to use an id keeps it.
    for call, wire_id in zip(calls, wire_ids, strict=True):
        if wire_id is not None and wire_ids.index(wire_id) == call.ordinal:
            assert call.id == wire_id or "duplicate_id" in call.warnings


def test_metadata_is_kept_per_call() -> None:
    a = Assembler()
    a.feed(0, id="a", name="f", arguments="{}")
    a.set_metadata(0, "thought_signature", {"google": {"thought_signature": "abc"}})
    assert one(a).metadata == {"thought_signature": {"google": {"thought_signature": "abc"}}}


def test_values_equal_json_loads_for_awkward_numbers_and_escapes() -> None:
    text = (
        '{"big": 123456789012345678901234567890, "neg": -0, "f": 1e400, "g": -1.5E-3,'
        ' "e": "\\u00e9\\ud834\\udd1e\\n\\t\\"\\\\\\/", "astral": "\U0001f600", "z": 0.1}'
    )
    a = Assembler()
    a.feed(0, name="f", arguments=text)
    assert one(a).value == json.loads(text)


NUMBER_EDGES = [
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678",
    "-12345678901234567",
    "1234567890123456789012",
    "1e308",
    "1.7976931348623157e308",
    "1.8e308",
    "-1e400",
    "4.9e-324",
    "2e-400",
    "0.1000000000000000055511151231257827",
    "12345678901234567.5",
    "1E+99",
    "1e-07",
]


@pytest.mark.parametrize("number", NUMBER_EDGES)
def test_numbers_at_the_edges_of_machine_precision_equal_json_loads(number: str) -> None:
    # Plain numbers take the fast builder, the others ours; both must agree with json.loads.
    for text in (f'{{"n": {number}, "s": "é"}}', f'{{"n": [1, {number}]}}'):
        a = Assembler()
        a.feed(0, name="f", arguments=text)
        value = one(a).value
        assert value == json.loads(text)
        assert type(value["n"]) is type(json.loads(text)["n"])
    scanner = Scanner()
    scanner.push(number)
    assert scanner.finish() == json.loads(number)


def test_partial_values_follow_the_spec() -> None:
    a = Assembler()
    a.feed(0, name="f")
    assert a.partial(0) is NO_VALUE
    steps = [
        ('{"a', {}),
        ('":', {}),
        (' "hel', {"a": "hel"}),
        ('lo", "n": 1', {"a": "hello"}),
        ("2", {"a": "hello"}),
        (", ", {"a": "hello", "n": 12}),
        ('"t": tr', {"a": "hello", "n": 12}),
        ("ue}", {"a": "hello", "n": 12, "t": True}),
    ]
    for piece, expected in steps:
        a.feed(0, arguments=piece)
        assert a.partial(0) == expected, piece
    assert a.partial(0, eager_numbers=True) == {"a": "hello", "n": 12, "t": True}


def test_partial_eager_numbers_and_hidden_strings() -> None:
    a = Assembler()
    a.feed(0, name="f", arguments='{"n": 12, "m": 3')
    assert a.partial(0) == {"n": 12}
    assert a.partial(0, eager_numbers=True) == {"n": 12, "m": 3}
    a.feed(0, arguments=', "s": "ab')
    assert a.partial(0, strings="off") == {"n": 12, "m": 3}


def test_progress_reports_path_and_appended_text() -> None:
    a = Assembler(track_progress=True)
    a.feed(0, name="write_file", arguments='{"path": "a.txt", "content": "line')
    a.feed(0, arguments=" one\\nline")
    items = a.drain_progress()
    assert items[0] == (0, "/path", "a.txt")
    assert "".join(t for _, p, t in items if p == "/content") == "line one\nline"
    a.feed(0, arguments=' two"}')
    assert a.drain_progress() == [(0, "/content", " two")]


def test_a_call_that_can_no_longer_run_gives_no_more_progress() -> None:
    # After a lost event the text that still comes was never one value ("pay Alice" and then
    # what followed the lost fragment); after a stop the call is filtered. Neither is shown.
    lost = Assembler(track_progress=True)
    lost.feed(0, id="c", name="pay", arguments='{"note": "pay Alice')
    lost.drain_progress()
    lost.lose_event("a malformed event")
    lost.feed(0, arguments='00 USD"}')
    assert lost.drain_progress() == []
    assert lost.failed
    stopped = Assembler(track_progress=True)
    stopped.feed(0, id="c", name="pay", arguments='{"note": "pay')
    stopped.drain_progress()
    stopped.stop("refusal")
    assert stopped.failed
    stopped.feed(0, arguments=' Bob"}')
    stopped.feed(1, id="d", name="pay", arguments='{"note": "later"}')
    assert stopped.drain_progress() == []
    assert [c.error.kind if c.error else None for c in stopped.finish()] == ["filtered"] * 2


def test_progress_leaves_out_items_that_add_nothing() -> None:
    items: list[tuple[int, str, str]] = []
    a = Assembler(progress_into=items)
    a.feed(0, name="a", arguments='{"s": "ab')
    a.feed(0, arguments='"')  # the closing quote alone adds nothing to "/s"
    a.feed(0, arguments=', "e": "')
    a.feed(0, arguments='"')
    # Another call's empty string at the same path is a new value: it is announced.
    a.feed(1, name="b", arguments='{"s": "')
    a.feed(1, arguments='"}')
    a.feed(0, arguments=', "t": true, "n": 7}')
    assert items == [
        (0, "/s", "ab"),
        (0, "/e", ""),
        (1, "/s", ""),
        (0, "/t", "true"),
        (0, "/n", "7"),
    ]
    assert [c.value for c in a.finish()] == [{"s": "ab", "e": "", "t": True, "n": 7}, {"s": ""}]


def test_progress_texts_of_one_character_and_paths_across_drains() -> None:
    """Texts of one character, below U+0100 or above it, cut between fragments or not, and the
    paths of a string over several drains, ASCII or not, read as the text wrote them."""
    items: list[tuple[int, str, str]] = []
    a = Assembler(progress_into=items)
    text = '{"a": "\\u00e9", "b": "ü\u07ff", "ключ": "x'
    for piece in [text.encode()[:9], text.encode()[9:]]:
        a.feed(0, name="f", arguments=piece)
    for piece in ["é", "y", "ß", "\u0100", '", "c": "', "\u00ff", "z", '"}']:
        a.feed(0, arguments=piece)
    assert items == [
        (0, "/a", ""),
        (0, "/a", "é"),
        (0, "/b", "ü\u07ff"),
        (0, "/ключ", "x"),
        *[(0, "/ключ", piece) for piece in ["é", "y", "ß", "\u0100"]],
        (0, "/c", ""),
        (0, "/c", "\u00ff"),
        (0, "/c", "z"),
    ]
    # A string's items over several drains share its path's `str`, whatever its characters.
    assert len({id(path) for _, path, _ in items[3:8]}) == 1
    assert len({id(path) for _, path, _ in items[8:]}) == 1
    assert [c.value for c in a.finish()] == [
        {"a": "é", "b": "ü\u07ff", "ключ": "xéyß\u0100", "c": "\u00ffz"}
    ]


def _freed_in_cycle(tie: Callable[[Assembler, list[tuple[int, str, str]]], object]) -> bool:
    """Whether an assembler with a call in flight is freed by the collector once dropped,
    after `tie` put it in a reference cycle (it gets the assembler and its `progress_into`)."""
    items: list[tuple[int, str, str]] = []
    asm = Assembler(progress_into=items)
    asm.feed(0, id="a", name="f", arguments='{"s": "' + "x" * 20_000)
    tie(asm, items)
    freed = weakref.ref(asm)
    del asm, items
    gc.collect()
    return freed() is None


def test_an_assembler_in_a_cycle_through_what_it_holds_is_freed() -> None:
    # The `progress_into` list and the `finish` hook are the caller's objects: a list that
    # holds the assembler, a hook that closes over it, made cycles the collector could not
    # see through, and each kept the assembler and its calls' state until the process ended.
    assert _freed_in_cycle(lambda asm, items: cast(list[object], items).append(asm))
    assert _freed_in_cycle(lambda asm, _: asm._flush_before_finish(lambda _: asm))
    # The check itself: an assembler nothing ties is freed.
    assert _freed_in_cycle(lambda asm, _: None)


class _Marker:
    """Something a weak reference can follow, stored beside the call in its value."""


@pytest.mark.parametrize("where", ["dict", "list", "none"])
def test_a_call_stored_in_its_own_value_is_freed(where: str) -> None:
    # `.value` is the caller's to change, and the call a natural thing to keep with it (a
    # result cache keyed by call, say): the collector could not see from the call to its
    # value, so such a cycle, and the value with it, lived until the process ended.
    asm = Assembler()
    asm.feed(0, id="a", name="f", arguments='{"xs": [1]}')
    (call,) = asm.finish()
    marker = _Marker()
    value = call.value
    if where == "dict":
        value["call"] = call
        value["marker"] = marker
    elif where == "list":
        value["xs"].extend([call, marker])
    else:
        value["marker"] = marker  # the check itself: no cycle
    freed = weakref.ref(marker)
    del asm, call, value, marker
    gc.collect()
    assert freed() is None


# A fragment that starts with all the text before it may be a resend of the whole arguments:
# it is held until the next fragment, `end` or `finish` decides. Here it is a resend: only
# that reading is one whole value when the stream ends. (Appended, the text would be read as
# soon as a fragment closed it, and such a fragment breaks the resend reading: no hold.)
HELD = ['{"nodes":[', '{"nodes":[],"title":"a"}']


def test_items_finish_releases_reach_drain_progress_as_they_reach_progress_into() -> None:
    into: list[tuple[int, str, str]] = []
    pushed = Assembler(progress_into=into)
    drained = Assembler(track_progress=True)
    for piece in HELD:
        pushed.feed(0, name="t", arguments=piece)
        drained.feed(0, name="t", arguments=piece)
    assert into == [] and drained.drain_progress() == []
    pushed.finish()
    assert [c.value for c in drained.finish()] == [{"nodes": [], "title": "a"}]
    assert drained.drain_progress() == into == [(0, "/title", "a")]
    assert drained.drain_progress() == []


def test_items_left_undrained_at_finish_are_kept_for_the_next_drain() -> None:
    a = Assembler(track_progress=True)
    a.feed(0, name="t", arguments='{"a": "x"')
    a.interrupt("the connection dropped")
    a.finish()
    assert a.drain_progress() == [(0, "/a", "x")]


@pytest.mark.parametrize("tools", [False, True])
@pytest.mark.parametrize("pieces", [["12", "3"], ["-1", ".5e3"], ["  7"]])
def test_a_number_ending_the_text_reaches_progress_at_the_end(
    pieces: list[str], tools: bool
) -> None:
    # A number is pending until a delimiter or the end of the text: once no byte can follow,
    # progress and the partial value show it, as the finished call's text has it.
    registry = ToolRegistry({"t": {"type": "object"}}) if tools else None
    items: list[tuple[int, str, str]] = []
    pushed = Assembler(progress_into=items, tools=registry)
    ended = Assembler(track_progress=True, tools=registry)
    for i, piece in enumerate(pieces):
        names = {"id": "c", "name": "t"} if i == 0 else {}
        pushed.feed(0, arguments=piece, **names)
        ended.feed(0, arguments=piece, **names)
    assert items == [] and ended.drain_progress() == []
    assert ended.partial(0) is NO_VALUE
    ended.end(0)
    lexeme = "".join(pieces).strip()
    assert ended.drain_progress() == [(0, "", lexeme)]
    assert ended.partial(0) == json.loads(lexeme)
    (call,) = ended.finish()
    assert ended.drain_progress() == []
    (pushed_call,) = pushed.finish()
    assert items == [(0, "", lexeme)]
    assert call.error is not None and pushed_call.error is not None
    assert call.error.kind == pushed_call.error.kind == "not_object"


def test_assemble_reports_the_progress_finish_releases() -> None:
    def chunk(arguments: str, first: bool) -> dict[str, object]:
        function = {"name": "t", "arguments": arguments} if first else {"arguments": arguments}
        call = {"index": 0, "function": function, **({"id": "c1"} if first else {})}
        return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}

    chunks = [chunk(HELD[0], True), chunk(HELD[1], False)]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    events = list(assemble(chunks))
    progress = [(e.ordinal, e.path, e.text) for e in events if isinstance(e, ArgumentsProgress)]
    assert progress == [(0, "/title", "a")]
    completed = [e for e in events if isinstance(e, CallCompleted)]
    assert events.index(completed[0]) > max(
        i for i, e in enumerate(events) if isinstance(e, ArgumentsProgress)
    )


def test_misuse_raises_value_error_subclass() -> None:
    a = Assembler()
    a.finish()
    with pytest.raises(MisuseError):
        a.feed(0, arguments="{}")
    with pytest.raises(MisuseError):
        a.finish()
    with pytest.raises(ValueError):
        Assembler().feed(0, arguments={1, 2})  # type: ignore[arg-type]
    with pytest.raises(MisuseError):
        Assembler(max_depth=0)
    # The spec's bound on nesting (faults.md: configurable up to 128).
    Assembler(max_depth=128)
    with pytest.raises(MisuseError, match="between 1 and 128"):
        Assembler(max_depth=129)
    with pytest.raises(MisuseError):
        Assembler(duplicate_keys="first")


def test_feed_matches_arguments_like_a_python_signature() -> None:
    """`feed` reads its arguments itself; they must behave as its signature says."""
    a = Assembler()
    # Keyword names built at run time are equal to the parameter names but not the same
    # (interned) objects: they still match, by value.
    names = {"".join(("i", "d")): "c1", "".join(("na", "me")): "f"}
    assert a.feed(0, **names) == 0
    assert a.feed(0, **{"".join(("argu", "ments")): '{"a": 1}'}) == 0
    assert a.feed(None, type="function", name="g") == 1
    assert [(c.id, c.name, c.value) for c in a.finish()] == [("c1", "f", {"a": 1}), (None, "g", {})]
    b = Assembler()
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'index'"):
        b.feed()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        b.feed(0, "f")  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'names'"):
        b.feed(0, names="f")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional-only arguments passed as keyword"):
        b.feed(index=0)  # type: ignore[call-arg]
    with pytest.raises(MisuseError, match="index must be int or None"):
        b.feed("0", arguments="{}")  # type: ignore[arg-type]
    with pytest.raises(MisuseError, match="name must be str or None"):
        b.feed(0, name=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Assembler.feed(object(), 0)  # type: ignore[arg-type]
    # None means absent, as for any keyword with a None default.
    assert b.feed(0, id=None, name=None, arguments=None, type=None) == 0
    assert b.feed(0, name="f", arguments="{}") == 0
    assert one(b).value == {}


def test_feed_keywords_are_matched_at_every_call_site() -> None:
    """Each call site passes its own keyword names, in its own order: `feed` remembers the last
    site's names, and a site that differs (or a keyword it refuses) is matched afresh."""
    a = Assembler()

    def by_site(order: int, index: int, text: str) -> int:
        if order == 0:
            return a.feed(index, id=None, name=None, arguments=text)
        if order == 1:
            return a.feed(index, arguments=text, name=None, id=None)
        return a.feed(index, arguments=text)

    assert a.feed(0, name="f", id="c0", arguments='{"a": ') == 0
    assert a.feed(1, arguments='{"b": ', id="c1", name="g") == 1
    for step, (index, text) in enumerate([(0, "[1"), (1, '"x'), (0, ", 2"), (1, 'y"'), (0, "]}")]):
        assert by_site(step % 3, index, text) == index
    with pytest.raises(TypeError, match="unexpected keyword argument 'names'"):
        a.feed(1, names="f")  # type: ignore[call-arg]
    assert by_site(2, 1, "}") == 1
    # The keyword errors come before the assembler is found in use, as the signature's would.
    seen: list[str] = []

    class Reentrant:
        def __index__(self) -> int:
            for call in (lambda: a.feed(0, names="f"), lambda: a.feed(0, arguments="")):  # type: ignore[call-arg]
                try:
                    call()
                except (TypeError, MisuseError) as err:
                    seen.append(type(err).__name__)
            return 2

    assert a.feed(cast(int, Reentrant()), name="h", arguments="{}") == 2
    assert seen == ["TypeError", "MisuseError"]
    assert [(c.name, c.value) for c in a.finish()] == [
        ("f", {"a": [1, 2]}),
        ("g", {"b": "xy"}),
        ("h", {}),
    ]


def test_feed_is_the_public_class_own_and_a_subclass_override_still_wins() -> None:
    """`Assembler.feed` is the core's `feed` made for the public class itself; a subclass of
    it that defines `feed` keeps its own, and one that does not feeds as the public class."""
    assert "feed" in Assembler.__dict__
    assert Assembler.__dict__["feed"].__objclass__ is Assembler

    class Counting(Assembler):
        fed = 0

        def feed(self, index: int | None, /, **kw: object) -> int:  # type: ignore[override]
            type(self).fed += 1
            return super().feed(index, **kw)  # type: ignore[arg-type]

    class Plain(Assembler):
        pass

    for cls in (Counting, Plain):
        a = cls()
        a.feed(0, id="c1", name="f", arguments='{"a": ')
        a.feed(0, arguments="1}")
        assert [(c.id, c.value) for c in a.finish()] == [("c1", {"a": 1})]
    assert Counting.fed == 2
    with pytest.raises(TypeError, match="not a subclass of Assembler"):
        _core._install_feed(int)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="defines feed itself"):
        _core._install_feed(Counting)


def test_limits_are_typed_errors() -> None:
    a = Assembler(max_bytes=100)
    a.feed(0, name="f", arguments='{"a": "' + "x" * 200 + '"}')
    err = one(a).error
    assert err is not None and (err.kind, err.offset) == ("too_large", 100)
    a = Assembler()
    a.feed(0, name="f", arguments='{"a":' + "[" * 10_000)
    err = one(a).error
    assert err is not None and err.kind == "too_deep"


def test_threads_feeding_separate_assemblers() -> None:
    text = json.dumps({"items": [{"n": i, "s": "é" * i} for i in range(200)]})
    results: list[object] = []

    def work() -> None:
        for _ in range(20):
            a = Assembler()
            for i in range(0, len(text), 7):
                a.feed(0, name="f", arguments=text[i : i + 7])
            results.append(a.finish()[0].value)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80
    assert all(r == json.loads(text) for r in results)


def test_building_a_value_leaves_the_garbage_collector_as_it_was() -> None:
    import gc

    a = Assembler()
    a.feed(0, name="f", arguments='{"a": [1, {"b": "c"}]}')
    (call,) = a.finish()
    assert gc.isenabled()
    assert call.value == {"a": [1, {"b": "c"}]}
    assert gc.isenabled()
    gc.disable()
    try:
        s = Scanner()
        s.push(b'[{"x": 1}]')
        assert s.finish() == [{"x": 1}]
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("arguments", "plain"),
    [
        ('{"a": 1.5, "b": -2e10, "c": "1e400"}', True),
        ('{"a": 1e400}', False),
        ('{"a": 1E-400}', False),
        ('{"a": 1234567890123456789}', False),
    ],
)
def test_plain_numbers_tells_whether_a_float_reads_every_number_as_written(
    arguments: str, plain: bool
) -> None:
    a = Assembler()
    a.feed(0, name="f", arguments=arguments)
    assert one(a).plain_numbers is plain


def _chat_sse(index: int, name: str | None, arguments: str) -> bytes:
    """One OpenAI Chat Completions SSE event with one tool-call delta."""
    function: dict[str, str] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    delta = {"tool_calls": [{"index": index, "function": function}]}
    chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


def test_progress_into_a_list_is_filled_by_raw_sse_too() -> None:
    text = '{"city": "東京", "days": [1, 22]}'
    body = _chat_sse(0, "weather", "") + b"".join(
        _chat_sse(0, None, text[i : i + 4]) for i in range(0, len(text), 4)
    )
    drained = Assembler(track_progress=True)
    expected: list[tuple[int, str, str]] = []
    items: list[tuple[int, str, str]] = []
    pushed = Assembler(progress_into=items)
    for i in range(0, len(body), 7):
        drained.feed_sse(body[i : i + 7])
        expected.extend(drained.drain_progress())
        pushed.feed_sse(body[i : i + 7])
        assert items == expected
    assert {p for _, p, _ in items} == {"/city", "/days/0", "/days/1"}
    assert pushed.finish()[0].value == {"city": "東京", "days": [1, 22]}


def test_progress_items_are_left_out_of_cyclic_garbage_collection() -> None:
    # An item holds an int and two strs: it cannot be part of a cycle, so the collector must
    # not walk the many items a long stream leaves in the caller's list. They are still freed
    # by reference counting, and both ways of getting them agree.
    items: list[tuple[int, str, str]] = []
    into = Assembler(progress_into=items)
    drained = Assembler(track_progress=True)
    got: list[tuple[int, str, str]] = []
    for fragment in ['{"city": "東', '京", "days": [1, 2', "2]}"]:
        into.feed(0, id="call_1", name="tool", arguments=fragment)
        drained.feed(0, id="call_1", name="tool", arguments=fragment)
        got.extend(drained.drain_progress())
    assert items == got
    assert items == [
        (0, "/city", "東"),
        (0, "/city", "京"),
        (0, "/days/0", "1"),
        (0, "/days/1", "22"),
    ]
    assert not any(gc.is_tracked(item) for item in items + got)


def test_progress_items_a_caller_dropped_are_freed_while_the_stream_runs() -> None:
    # Each leaf gets a new pointer string. One the caller no longer holds must be freed at
    # once, not kept until the stream ends: a long call would otherwise hold every pointer it
    # ever showed.
    items: list[tuple[int, str, str]] = []
    asm = Assembler(progress_into=items)
    asm.feed(0, id="call_1", name="tool", arguments="{")
    tracemalloc.start()
    try:
        for i in range(5000):
            asm.feed(0, arguments=f'"key{i}": {i}, ')
            items.clear()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 50_000


@pytest.mark.parametrize("scalar", [7, 2.5, True, False])
def test_a_scalar_is_a_value_never_text(scalar: object) -> None:
    alone = Assembler()
    alone.feed(0, id="a", name="f", arguments=scalar)  # type: ignore[arg-type]
    (call,) = alone.finish()
    assert call.error is not None and call.error.kind == "not_object"
    mixed = Assembler()
    mixed.feed(0, id="a", name="f", arguments='{"n": ')
    mixed.feed(0, arguments=scalar)  # type: ignore[arg-type]
    mixed.feed(0, arguments="}")
    (call,) = mixed.finish()
    assert call.error is not None and call.error.kind == "mixed_arguments"
    assert call.arguments == '{"n": }'


@pytest.mark.parametrize(
    ("pieces", "expected", "decided_at_end"),
    [
        # Each last fragment starts with all the text so far: held until a fragment tells a
        # cumulative resend from a continuation, and no fragment follows. The end of the call
        # decides it at once when appending gives a whole value; when only the resend does,
        # the decision waits for the stream's end, whose stop reason may say the output was
        # cut there (then the unfinished, appended reading is the one sent).
        ([" ", ' {"a": "xy"}'], [(0, "/a", "xy")], True),
        (['{"a": [', '{"a": [{"b": 1}]}'], [(0, "/a/0/b", "1")], False),
    ],
)
def test_a_fragment_held_when_the_call_ends_reaches_progress_and_partial(
    pieces: list[str], expected: list[tuple[int, str, str]], decided_at_end: bool
) -> None:
    items: list[tuple[int, str, str]] = []
    fed = Assembler(progress_into=items)
    ended = Assembler(track_progress=True)
    for i, piece in enumerate(pieces):
        names = {"id": "c", "name": "t"} if i == 0 else {}
        fed.feed(0, arguments=piece, **names)
        ended.feed(0, arguments=piece, **names)
    ended.end(0)
    at_end = ended.drain_progress()
    value = ended.partial(0)
    (call,) = ended.finish()
    assert at_end + ended.drain_progress() == expected
    assert (at_end == expected) is decided_at_end
    assert (value == call.value) is decided_at_end
    assert call.value == fed.finish()[0].value
    assert items == expected


@pytest.mark.parametrize("cut", ["limit", "interrupt", "none"])
def test_held_fragments_of_a_cut_call_are_appended(cut: str) -> None:
    # Appended, the text is unfinished; resent, it is a whole value. A stream cut by the output
    # limit (after the provider ended the call, as Anthropic and Bedrock do) or by the
    # transport (before it ended) sent the unfinished one; only a stream that ends normally
    # reads the resend.
    pieces = ['{"children": [', '{"children": [], "name": "leaf"}']
    a = Assembler()
    a.feed(0, id="c", name="t", arguments=pieces[0])
    a.feed(0, arguments=pieces[1])
    if cut != "interrupt":
        # A drop after the provider ended the call cuts nothing of it.
        a.end(0)
    if cut == "limit":
        a.limit_reached()
    elif cut == "interrupt":
        a.interrupt("connection dropped")
    (call,) = a.finish()
    if cut == "none":
        assert call.ok and call.value == {"children": [], "name": "leaf"}
    else:
        assert not call.ok and call.arguments == "".join(pieces)


@pytest.mark.parametrize("value", [object(), 10**5000], ids=["object", "huge_int"])
def test_arguments_that_are_no_json_data_are_misuse(value: object) -> None:
    assembler = Assembler()
    with pytest.raises(MisuseError, match="not JSON data"):
        assembler.feed(0, name="f", arguments={"a": value})  # type: ignore[dict-item]
    if not isinstance(value, int):
        with pytest.raises(MisuseError, match="not JSON data"):
            assembler.set_metadata(0, "k", value)
    assembler.feed(0, id="c", name="f", arguments="{}")
    assert [call.value for call in assembler.finish()] == [{}]


def test_metadata_with_an_integer_longer_than_python_writes_is_dropped_on_the_record() -> None:
    # Provider data like the value nested too deeply below (and the raw path's integer too
    # long to read back): `json.dumps`' ValueError made it a MisuseError, raised mid-stream.
    huge = 10 ** (sys.get_int_max_str_digits() + 1)
    fine = 10 ** (sys.get_int_max_str_digits() - 1)
    assembler = Assembler()
    assembler.feed(0, id="a", name="f", arguments="{}")
    assembler.set_metadata(0, "kept", {"n": [fine]})
    assembler.set_metadata(0, "huge", {"google": [1, {"n": huge}]})
    assembler.set_metadata(1, "huge", (huge,))  # held for a call not started yet
    assembler.feed(1, id="b", name="f", arguments="{}")
    # Another ValueError stays the caller's: a value that holds itself.
    cycle: list[object] = [1, [fine]]
    cycle.append(cycle)
    with pytest.raises(MisuseError, match="not JSON data"):
        assembler.set_metadata(1, "cycle", cycle)
    calls = assembler.finish()
    assert [(c.metadata, c.warnings) for c in calls] == [
        ({"kept": {"n": [fine]}}, ["metadata_dropped"]),
        ({}, ["metadata_dropped"]),
    ]


def test_metadata_nested_past_what_json_dumps_writes_is_dropped_on_the_record() -> None:
    # It was dropped without a word, and the next turn lacked a field the caller had set.
    deep: list[object] = []
    inner = deep
    for _ in range(sys.getrecursionlimit() + 100):
        inner.append([])
        inner = cast("list[object]", inner[0])
    assembler = Assembler()
    assembler.feed(0, id="a", name="f", arguments="{}")
    assembler.set_metadata(0, "kept", [[1]])
    assembler.set_metadata(0, "deep", deep)
    assembler.set_metadata(1, "deep", deep)  # before its call starts: it gets the warning
    assembler.set_metadata(1, "again", deep)
    assembler.feed(1, id="b", name="f", arguments="{}")
    assembler.feed(2, id="c", name="f", arguments="{}")
    calls = assembler.finish()
    assert [(c.metadata, c.warnings) for c in calls] == [
        ({"kept": [[1]]}, ["metadata_dropped"]),
        ({}, ["metadata_dropped"]),
        ({}, []),
    ]
    with pytest.raises(MisuseError, match="already finished"):
        assembler.set_metadata(0, "deep", deep)


def test_a_negative_count_or_ordinal_is_misuse() -> None:
    # `-1` for "no limit" is the caller's mistake: a MisuseError naming it, not the
    # OverflowError of an unsigned conversion.
    for make in (
        lambda: Assembler(max_bytes=-1),
        lambda: Assembler(max_depth=-1),
        lambda: Scanner(max_number_digits=-1),
        lambda: Assembler().partial(-1),
        lambda: Assembler().name(-1),
        lambda: Assembler().arguments_so_far(-1),
    ):
        with pytest.raises(MisuseError, match="-1 is not a count"):
            make()


def test_a_bool_count_or_ordinal_is_misuse() -> None:
    # A bool is an int to Python: `max_bytes=True` was a limit of one byte, failing every call
    # `too_large`, and `name(True)` read call 1.
    for make in (
        lambda: Assembler(max_bytes=True),
        lambda: Assembler(max_stream_bytes=True),
        lambda: Scanner(max_depth=True),
        lambda: Assembler().name(True),
        lambda: Assembler().partial(False),
    ):
        with pytest.raises(MisuseError, match="is not a count: pass an int"):
            make()


def test_an_assembler_used_from_two_threads_at_once_says_so() -> None:
    # `feed_sse` releases the GIL while it decodes a large body: a `finish` from another thread
    # meanwhile must be a MisuseError, never a panic (a BaseException no handler expects).
    def event(obj: object) -> bytes:
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    start = {"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a": "'}}
    more = {"index": 0, "function": {"arguments": "x" * 1000}}
    body = (
        event({"choices": [{"index": 0, "delta": {"tool_calls": [start]}}]})
        + event({"choices": [{"index": 0, "delta": {"tool_calls": [more]}}]}) * 3000
    )
    for _ in range(20):
        asm = Assembler()
        failures: list[BaseException] = []

        def feed(asm: Assembler = asm, failures: list[BaseException] = failures) -> None:
            try:
                asm.feed_sse(body)
            except BaseException as exc:
                failures.append(exc)

        thread = threading.Thread(target=feed)
        thread.start()
        try:
            asm.finish()
        except BaseException as exc:
            failures.append(exc)
        thread.join()
        assert all(isinstance(f, MisuseError) for f in failures), failures


class _BlockingArguments(dict[str, object]):
    """Dict arguments whose writing out waits for `release`: `feed` holds its assembler all the
    while, since it writes dict arguments with `json.dumps`, which calls a subclass's `items`."""

    def __init__(self) -> None:
        super().__init__(a=1)
        self.entered = threading.Event()
        self.release = threading.Event()

    def items(self) -> ItemsView[str, object]:  # type: ignore[override]
        self.entered.set()
        self.release.wait(timeout=60)
        return super().items()


@contextlib.contextmanager
def _in_use_by_another_thread() -> Iterator[Assembler]:
    """An assembler that another thread is inside `feed` of, until the block ends."""
    asm = Assembler()
    arguments = _BlockingArguments()
    failures: list[BaseException] = []

    def feed() -> None:
        try:
            asm.feed(0, id="c", name="f", arguments=arguments)
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=feed)
    thread.start()
    try:
        assert arguments.entered.wait(timeout=60)
        yield asm
    finally:
        arguments.release.set()
        thread.join()
    assert failures == []


# Every method of the assembler, called as a stream would, but while another call holds it.
_WHILE_IN_USE: dict[str, Callable[[Assembler], object]] = {
    "feed": lambda a: a.feed(0, arguments="x"),
    "feed_sse": lambda a: a.feed_sse(b'data: {"choices": []}\n\n'),
    "feed_chunk": lambda a: a.feed_chunk({"choices": []}),
    "finish": lambda a: a.finish(),
    "release_finished": lambda a: a.release_finished(),
    "end": lambda a: a.end(0),
    "set_metadata": lambda a: a.set_metadata(0, "k", 1),
    "interrupt": lambda a: a.interrupt("dropped"),
    "starts_call": lambda a: a.starts_call(0, id="d"),
    "name": lambda a: a.name(0),
    "id": lambda a: a.id(0),
    "arguments_so_far": lambda a: a.arguments_so_far(0),
    "lose_event": lambda a: a.lose_event("unreadable"),
    "lose_arguments": lambda a: a.lose_arguments(0, "unreadable"),
    "limit_reached": lambda a: a.limit_reached(),
    "stop": lambda a: a.stop("filtered"),
    "stop_all": lambda a: a.stop_all("filtered"),
    "drain_errors": lambda a: a.drain_errors(),
    "drain_progress": lambda a: a.drain_progress(),
    "partial": lambda a: a.partial(0),
    "stream_errors": lambda a: a.stream_errors(),
    "len": len,
    "finished": lambda a: a.finished,
    "failed": lambda a: a.failed,
    "text": lambda a: a.text,
    "usage": lambda a: a.usage,
    "finish_reason": lambda a: a.finish_reason,
    "finish_reason_normalized": lambda a: a.finish_reason_normalized,
    "format": lambda a: a.format,
    "reasoning": lambda a: a.reasoning,
    "container": lambda a: a.container,
    "_flush_before_finish": lambda a: a._flush_before_finish(lambda _: None),
    "_may_hold": lambda a: a._may_hold(1),
    "_tracks_progress": lambda a: a._tracks_progress(),
    "_record_progress": lambda a: a._record_progress(0, "/b", "x", True, True),
    "_stop_progress": lambda a: a._stop_progress(0),
    "_keep_text": lambda a: a._keep_text(1),
    "_keep_reasoning": lambda a: a._keep_reasoning("thought", "sig"),
    "_keep_reasoning_item": lambda a: a._keep_reasoning_item('{"type":"reasoning"}'),
    "_keep_converse_reasoning": lambda a: a._keep_converse_reasoning("thought", None, None),
    "_keep_gemini_thought": lambda a: a._keep_gemini_thought("thought", None),
    "_keep_converse_image": lambda a: a._keep_converse_image("png", b"\x89PNG"),
    "_drop_reasoning": lambda a: a._drop_reasoning(),
    "_forget_reasoning": lambda a: a._forget_reasoning(),
    "_mark_text_block": lambda a: a._mark_text_block(0),
    "_sign_text_block": lambda a: a._sign_text_block("c2ln"),
    "text_places": lambda a: a.text_places,
    "_keep_citation": lambda a: a._keep_citation('{"type":"char_location"}'),
    "_set_aside": lambda a: a._set_aside(0, '{"b": 2}'),
    "_hold_fragment": lambda a: a._hold_fragment(1),
    "_release": lambda a: a._release(1),
    "_check_summary": lambda a: a._check_summary(0, b"{}"),
    "_mismatch_arguments": lambda a: a._mismatch_arguments(0, "two versions"),
    "_stop_call": lambda a: a._stop_call(0, "error"),
    "_interrupt_from": lambda a: a._interrupt_from(0, "dropped"),
    "_chat_ended_calls": lambda a: a._chat_ended_calls,
    "_set_index": lambda a: a._set_index(0, 1),
    "_stream_error": lambda a: a._stream_error("provider_error", 1, "{}"),
    "_other_choice": lambda a: a._other_choice(1, 0, 1),
    "_replace_free_form": lambda a: a._replace_free_form(0, b"x"),
}


def test_every_method_of_the_assembler_is_tried_in_use() -> None:
    methods = {name for name in vars(_core.Assembler) if not name.startswith("__")}
    assert set(_WHILE_IN_USE) == methods | {"len", "feed_chunk"}


@pytest.mark.parametrize("method", list(_WHILE_IN_USE))
def test_every_method_of_an_assembler_in_use_elsewhere_says_so(method: str) -> None:
    # Not pyo3's bare RuntimeError ("Already borrowed"): the same MisuseError as `feed`.
    with _in_use_by_another_thread() as asm:
        with pytest.raises(MisuseError, match="in use by another call"):
            _WHILE_IN_USE[method](asm)
    # The refused call did nothing: the other thread's call went through, and nothing else.
    (call,) = asm.finish()
    assert call.ok and call.value == {"a": 1}


def test_a_scanner_in_use_elsewhere_says_so() -> None:
    # `Scanner.finish` first looks orjson up with the scanner held, and the import runs Python
    # code (here: a finder that waits) with the GIL let go. A fresh process, since the lookup
    # happens once per process.
    script = """
import json, sys, threading
from toolwire import Scanner

assert "orjson" not in sys.modules
entered, release = threading.Event(), threading.Event()

class SlowFinder:
    def find_spec(self, name, path=None, target=None):
        if name == "orjson":
            entered.set()
            release.wait(timeout=60)

sys.meta_path.insert(0, SlowFinder())
scanner = Scanner()
scanner.push(b'{"a": 1}')
values = []
thread = threading.Thread(target=lambda: values.append(scanner.finish()))
thread.start()
assert entered.wait(timeout=60)
outcomes = {}
for name, call in {
    "push": lambda: scanner.push(b" "),
    "finish": scanner.finish,
    "partial": scanner.partial,
    "error": lambda: scanner.error,
    "complete": lambda: scanner.complete,
    "text": lambda: scanner.text,
}.items():
    try:
        call()
        outcomes[name] = "no error"
    except Exception as exc:
        outcomes[name] = f"{type(exc).__name__}: {exc}"
release.set()
thread.join()
print(json.dumps({"outcomes": outcomes, "values": values}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    in_use = (
        "MisuseError: the scanner is in use by another call (another thread?): "
        "one scanner reads one text at a time"
    )
    assert report == {
        "outcomes": dict.fromkeys(
            ["push", "finish", "partial", "error", "complete", "text"], in_use
        ),
        "values": [{"a": 1}],
    }


def test_metadata_values_are_written_out_before_the_assembler_is_taken() -> None:
    # Writing the value out runs the caller's code (a dict subclass's `items`), which may read
    # the assembler: it is not held yet.
    asm = Assembler()
    asm.feed(0, id="c", name="f", arguments="{}")
    lengths: list[int] = []

    class Reading(dict[str, object]):
        def items(self) -> ItemsView[str, object]:  # type: ignore[override]
            lengths.append(len(asm))
            return super().items()

    asm.set_metadata(0, "k", Reading(x=1))
    assert lengths == [1]
    (call,) = asm.finish()
    assert call.metadata == {"k": {"x": 1}}


def test_usage_is_parsed_once_the_assembler_is_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    asm = Assembler()
    asm.feed_sse(b'data: {"choices": [], "usage": {"prompt_tokens": 3}}\n\n')
    loads = json.loads

    def loads_and_feed(text: str) -> object:
        asm.feed_sse(b": keep-alive\n\n")
        return loads(text)

    monkeypatch.setattr(json, "loads", loads_and_feed)
    assert asm.usage == {"prompt_tokens": 3}


def test_a_replaced_finish_hook_is_let_go_after_the_assembler() -> None:
    # The hook's last reference goes with it, and so its finalizer runs: the assembler is free.
    asm = Assembler()
    lengths: list[int] = []

    class Hook:
        def __call__(self, asm: Assembler) -> None:
            pass

        def __del__(self) -> None:
            lengths.append(len(asm))

    asm._flush_before_finish(Hook())
    asm._flush_before_finish(lambda _: None)
    assert lengths == [0]


def test_partial_after_finish_says_the_stream_is_finished() -> None:
    asm = Assembler()
    asm.feed(0, id="c", name="f", arguments='{"a": 1}')
    asm.finish()
    with pytest.raises(MisuseError, match=r"already finished: .*ToolCall that finish"):
        asm.partial(0)


@pytest.mark.parametrize(
    ("method", "args"),
    [
        ("end", (0,)),
        ("end", (7,)),
        ("set_metadata", (7, "k", "v")),
        ("stop", ("content_filter",)),
        ("interrupt", ("reset",)),
        ("feed_sse", (b"data: {}\n\n",)),
        ("feed", (0,)),
    ],
)
def test_every_change_after_finish_is_a_misuse(method: str, args: tuple[object, ...]) -> None:
    # `end` of a key no call had was accepted silently after `finish`, where every other
    # change raises: a caller that ends calls late was never told its stream was over.
    asm = Assembler()
    asm.feed(0, id="a", name="f", arguments="{}")
    asm.finish()
    with pytest.raises(MisuseError, match="already finished"):
        getattr(asm, method)(*args)


@pytest.mark.parametrize("sign", ["", "-"])
def test_an_integer_past_the_int_text_limit_is_read_when_the_digit_limit_allows(
    sign: str,
) -> None:
    # CPython refuses to turn more than 4,300 digits of text into an int; a raised
    # `max_number_digits` lets such a number through, and its value must still be built.
    digits = "7" * 5000
    text = f'{{"n": {sign}{digits}, "m": [{"3" * 4400}, 1.5]}}'
    asm = Assembler(max_number_digits=6000)
    asm.feed(0, id="a", name="t", arguments=text)
    (call,) = asm.finish()
    assert call.error is None
    value = call.value
    assert value["n"] == int(sign + "1") * int(Decimal(digits))
    assert value["m"] == [int(Decimal("3" * 4400)), 1.5]
    scanner = Scanner(max_number_digits=6000)
    scanner.push(text)
    assert scanner.finish() == value


def test_release_finished_keeps_everything_the_assembler_reports() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": False,
    }
    asm = Assembler(tools=ToolRegistry({"f": schema}), track_progress=True)
    asm.release_finished()  # before `finish`: nothing to free
    asm.feed(0, id="c1", name="f", arguments='{"a": 1, "b": 2}')
    asm.feed(1, id="c2", name="f", arguments='{"a": "x"')
    calls = asm.finish()
    asm.release_finished()
    asm.release_finished()
    assert [(c.ok, c.value) for c in calls] == [(False, {"a": 1, "b": 2}), (False, None)]
    assert [ordinal for ordinal, _ in asm.drain_errors()] == [0, 1]
    assert asm.drain_progress()
    assert asm.finished and asm.failed
    with pytest.raises(MisuseError):
        asm.finish()


@pytest.mark.parametrize(
    ("arguments", "failed"),
    [('{"city": "Par', True), ('{"a": x}', True), ("[1]", True), ('{"a": 1}', False)],
)
def test_failed_after_finish_knows_the_calls_finish_left_unscanned(
    arguments: str, failed: bool
) -> None:
    # Without a pre-check, `finish` leaves a call's text unscanned until it is read; `failed`
    # answered False for a call whose error the caller could already see, unless it had been
    # read once before `finish`.
    body = (
        "data: "
        + json.dumps(
            {
                "object": "chat.completion.chunk",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "c",
                                    "function": {"name": "f", "arguments": arguments},
                                }
                            ]
                        },
                    }
                ],
            }
        )
        + "\n\ndata: [DONE]\n\n"
    ).encode()
    for path in ("feed", "feed_sse"):
        a = Assembler()
        if path == "feed":
            a.feed(0, id="c", name="f", arguments=arguments)
        else:
            a.feed_sse(body)
        calls = a.finish()
        assert a.failed is failed, path
        assert (calls[0].error is not None) is failed
        assert a.failed is failed, path


def test_metadata_sent_again_counts_toward_the_stream_limit_only_for_what_it_adds() -> None:
    # The stream keeps one value per key, but every resend counted whole: a provider that
    # repeats a 10 KB signature with each chunk had its response refused whole after 100.
    assembler = Assembler(max_stream_bytes=1_000_000)
    assembler.feed(0, id="c", name="f", arguments="{")
    for _ in range(300):
        assembler.set_metadata(0, "thought_signature", "s" * 10_000)
    assembler.feed(0, arguments="}")
    assert not assembler.failed and assembler.stream_errors() == []
    (call,) = assembler.finish()
    assert call.ok and call.metadata == {"thought_signature": "s" * 10_000}
    # What is kept still counts: distinct keys past the limit refuse the response.
    assembler = Assembler(max_stream_bytes=1_000_000)
    assembler.feed(0, id="c", name="f", arguments="{")
    for n in range(300):
        assembler.set_metadata(0, f"k{n}", "s" * 10_000)
    assert assembler.failed and assembler.stream_errors()[0][0] == "stream_limit"


def test_a_calls_repr_names_its_arguments_by_size_only() -> None:
    # A repr ends up in logs (through a stream event's too): the arguments may quote what the
    # user typed, and may be megabytes long.
    assembler = Assembler()
    assembler.feed(0, id="call_1", name="login", arguments='{"password": "hunter2"}')
    (call,) = assembler.finish()
    assert (
        repr(call)
        == 'ToolCall(ordinal=0, id="call_1", name="login", arguments=<23 bytes>, error=None)'
    )
    assert "hunter2" not in repr(CallCompleted(call=call, outcome=None))


def test_progress_items_hide_a_secret_value_as_a_precheck_error_does() -> None:
    from pydantic import BaseModel, Field, SecretStr

    from toolwire import Toolset

    class Login(BaseModel):
        user: str
        password: SecretStr
        pin: int = Field(json_schema_extra={"x-secret": True})

    tools = Toolset([Login], names={Login: "login"})
    text = '{"user": "ada", "password": "hunter2-and-more", "pin": 4321}'
    for size in (1, 3, len(text)):
        items: list[tuple[int, str, str]] = []
        assembler = Assembler(tools=tools, progress_into=items)
        for start in range(0, len(text), size):
            part = text[start : start + size]
            assembler.feed(0, id="call_1", name="login" if start == 0 else None, arguments=part)
        (call,) = assembler.finish()
        assert call.ok and call.value["password"] == "hunter2-and-more"
        shown = "".join(t for _, _, t in items)
        assert "hunter" not in shown and "4321" not in shown and "21" not in shown
        # The secret values are announced once each, hidden; the rest is as written.
        assert [(p, t) for _, p, t in items if p != "/user"] == [
            ("/password", "[redacted]"),
            ("/pin", "[redacted]"),
        ]
        assert "".join(t for _, p, t in items if p == "/user") == "ada"
    # Without tools nothing says what is secret: the text is shown as it came.
    items = []
    assembler = Assembler(progress_into=items)
    assembler.feed(0, id="call_1", name="login", arguments=text)
    assembler.finish()
    assert ("/password", "hunter2-and-more") in [(p, t) for _, p, t in items]


def _login_tools() -> Toolset:
    from pydantic import BaseModel, Field, SecretStr

    class Login(BaseModel):
        user: str
        password: SecretStr
        pin: int = Field(json_schema_extra={"x-secret": True})

    return Toolset([Login], names={Login: "login"})


_LOGIN_TEXT = '{"user": "ada", "password": "hunter2-and-more", "pin": 4321}'
_LOGIN_SHOWN = [(0, "/user", "ada"), (0, "/password", "[redacted]"), (0, "/pin", "[redacted]")]


def _merged(items: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """Items with the pieces of one value joined, as a UI shows them."""
    out: list[tuple[int, str, str]] = []
    for ordinal, path, text in items:
        if out and out[-1][:2] == (ordinal, path):
            out[-1] = (ordinal, path, out[-1][2] + text)
        else:
            out.append((ordinal, path, text))
    return out


def _shows_no_secret(items: list[tuple[int, str, str]]) -> bool:
    shown = "".join(text for _, _, text in items)
    return not any(secret in shown for secret in ("hunter", "more", "4321", "21"))


def test_progress_items_wait_for_the_name_that_says_what_is_secret() -> None:
    # Quirk 10: the name arrives after some argument text. Until then nothing says which
    # values are secret, so no item of the call may go out; once it is known, they go out
    # hidden as they would have been.
    tools = _login_tools()
    for size in (1, 3, 7, len(_LOGIN_TEXT)):
        pieces = [_LOGIN_TEXT[i : i + size] for i in range(0, len(_LOGIN_TEXT), size)]
        # The name comes after the first piece, the second, the middle one or the last.
        named_ats = {1, 2, len(pieces) // 2, len(pieces)} & set(range(1, len(pieces) + 1))
        for named_at in sorted(named_ats):
            items: list[tuple[int, str, str]] = []
            assembler = Assembler(tools=tools, progress_into=items)
            for k, piece in enumerate(pieces):
                assembler.feed(0, id="call_1", arguments=piece)
                if k + 1 == named_at:
                    assembler.feed(0, name="login")
                assert _shows_no_secret(items), (size, named_at, items)
                if k + 1 < named_at:
                    assert items == []
            (call,) = assembler.finish()
            assert call.ok and call.name == "login"
            assert call.value["password"] == "hunter2-and-more"
            assert _merged(items) == _LOGIN_SHOWN, (size, named_at)


def test_progress_of_a_call_named_too_late_waits_through_every_reader() -> None:
    tools = _login_tools()
    head = {"index": 0, "id": "call_1", "type": "function"}
    deltas: list[dict[str, object]] = [
        {**head, "function": {"arguments": _LOGIN_TEXT[:35]}},
        {"index": 0, "function": {"name": "login", "arguments": _LOGIN_TEXT[35:]}},
    ]
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}],
        }
        for delta in deltas
    ]
    # The stream wrapper's `ArgumentsProgress` events.
    with assemble(iter(chunks), tools) as stream:
        events = list(stream)
    progress = [(e.ordinal, e.path, e.text) for e in events if isinstance(e, ArgumentsProgress)]
    assert _merged(progress) == _LOGIN_SHOWN
    # `drain_progress` after each event of a raw body, cut anywhere.
    body = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks)
    for cut in range(1, len(body), 9):
        assembler = Assembler(tools=tools, track_progress=True)
        drained: list[tuple[int, str, str]] = []
        for part in (body[:cut], body[cut:]):
            assembler.feed_sse(part)
            drained += assembler.drain_progress()
            assert _shows_no_secret(drained), cut
        assembler.finish()
        drained += assembler.drain_progress()
        assert _merged(drained) == _LOGIN_SHOWN, cut


_SECRET_KEY_TEXT = '{"token": "sk-live-9999", "note": "hi", "sk-live-9999": 1}'


def _secret_tool_schema(marked: bool) -> dict[str, object]:
    token: dict[str, object] = {"type": "string"}
    if marked:
        token["x-secret"] = True
    return {
        "type": "object",
        "properties": {"token": token, "note": {"type": "string"}},
        "additionalProperties": False,
    }


def _secret_tools() -> list[Toolset | ToolRegistry]:
    """The tool whose `token` is secret, marked in its schema and configured in a registry."""
    return [
        Toolset([{"name": "tool", "parameters": _secret_tool_schema(True)}]),
        ToolRegistry({"tool": _secret_tool_schema(False)}, secrets={"tool": ["/token"]}),
    ]


def _chat_chunks(text: str, size: int) -> list[dict[str, object]]:
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    head = {"index": 0, "id": "call_1", "type": "function"}
    deltas = [
        {**head, "function": {"name": "tool", "arguments": piece}}
        if k == 0
        else {"index": 0, "function": {"arguments": piece}}
        for k, piece in enumerate(pieces)
    ]
    return [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}],
        }
        for delta in deltas
    ]


@pytest.mark.parametrize("tools", _secret_tools(), ids=["x-secret", "registry"])
def test_a_secret_sent_again_as_a_key_is_hidden_in_what_the_stream_hands_out(
    tools: Toolset | ToolRegistry,
) -> None:
    # The pre-check's error and the progress items carried the key as the core read it:
    # `unexpected property "sk-live-9999"` at `/sk-live-9999`, where validation, the recorder
    # and the executor hide it. The value was complete before the key: the key is known secret.
    for size in (1, 4, len(_SECRET_KEY_TEXT)):
        items: list[tuple[int, str, str]] = []
        assembler = Assembler(tools=tools, progress_into=items)
        errors: list[CallError] = []
        for chunk in _chat_chunks(_SECRET_KEY_TEXT, size):
            assembler.feed_chunk(chunk)
            errors += [e for _, e in assembler.drain_errors()]
        (call,) = assembler.finish()
        errors += [e for _, e in assembler.drain_errors()]
        (error,) = errors
        assert (error.path, error.keyword) == ("/[redacted]", "additionalProperties")
        assert error.message == 'unexpected property "[redacted]"', size
        assert "9999" not in repr(error) and "9999" not in repr(items), size
        assert _merged(items) == [
            (0, "/token", "[redacted]"),
            (0, "/note", "hi"),
            (0, "/[redacted]", "1"),
        ]
        # The call's own error is the application's exact locator, as its text is.
        assert call.error is not None and call.error.path == "/sk-live-9999"
    if isinstance(tools, Toolset):
        with assemble(iter(_chat_chunks(_SECRET_KEY_TEXT, 3)), tools) as stream:
            events = list(stream)
        shown = [e for e in events if isinstance(e, PrecheckError | ArgumentsProgress)]
        assert shown and "9999" not in repr(shown)
        assert [e.error.path for e in shown if isinstance(e, PrecheckError)] == ["/[redacted]"]


def test_a_key_read_before_the_secret_it_repeats_is_not_known_to_be_one() -> None:
    # What goes out while the text streams cannot depend on what comes after it: the key,
    # read before any secret value, goes out as the model wrote it, however the text is cut.
    text = '{"sk-live-9999": 1, "token": "sk-live-9999"}'
    for tools in _secret_tools():
        for size in (1, len(text)):
            items: list[tuple[int, str, str]] = []
            assembler = Assembler(tools=tools, progress_into=items)
            for chunk in _chat_chunks(text, size):
                assembler.feed_chunk(chunk)
            assembler.finish()
            ((_, error),) = assembler.drain_errors()
            assert error.path == "/sk-live-9999"
            assert _merged(items) == [(0, "/sk-live-9999", "1"), (0, "/token", "[redacted]")]


def test_progress_of_a_call_whose_name_never_comes_is_released_at_the_end() -> None:
    # Nothing is lost: at the end no name can follow, and a call of no tool has no secret.
    items: list[tuple[int, str, str]] = []
    assembler = Assembler(tools=_login_tools(), progress_into=items)
    assembler.feed(0, id="call_1", arguments='{"user": "ada"}')
    assert items == []
    (call,) = assembler.finish()
    assert not call.ok
    assert items == [(0, "/user", "ada")]
