"""Members of a Chat Completions tool-call entry that are not its own (`index`, `id`, `type`,
`function`): the `openai` SDK keeps them (`model_extra`) and `feed_chunk` makes them the call's
metadata, so `feed_sse` must too, with the same names, values and order, however the bytes are
cut. `feed_sse` kept only `extra_content`, and lost every other such member.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.assembler import Assembler
from toolwire.stream import assemble

from .clients import assemble_both, assemble_sync, raw_key
from .conftest import SSEServer
from .streamkit import Call, chat_chunk, chat_stream, pieces, sse_body, tc, tool_delta

SIGNATURE = {"google": {"thought_signature": "CqMDAdHtim9w"}}


def _dicts(events: list[dict[str, Any]]) -> list[Any]:
    """The calls `feed_chunk` gives for the events as dicts."""
    assembler = Assembler()
    for event in events:
        assembler.feed_chunk(event)
    return assembler.finish()


def _metadata(calls: list[Any]) -> list[list[tuple[str, Any]]]:
    """Each call's metadata with its order, which dict equality does not see."""
    return [list(c.metadata.items()) for c in calls]


def _finish() -> dict[str, Any]:
    return chat_chunk({}, finish_reason="tool_calls")


def _with_the_call() -> list[dict[str, Any]]:
    # Members beside the call's first entry and beside a later fragment: a later value of a
    # name replaces the earlier one where it first came; a `null` one sets nothing.
    return [
        chat_chunk(
            tool_delta(
                tc(0, id="c1", type="function", name="f", arguments='{"a":', foo=1),
                tc(1, id="c2", type="function", name="g", arguments="{}", extra_content=SIGNATURE),
            )
        ),
        chat_chunk(tool_delta(tc(0, arguments="1}", bar=[1, 2.5, "x"], foo={"n": None}, baz=None))),
        _finish(),
    ]


def _alone() -> list[dict[str, Any]]:
    # Members alone in an entry: kept for the call under that index, open or still to come,
    # and they never open a call (quirk 31).
    return [
        chat_chunk(tool_delta(tc(1, thought_signature="s1", extra_content=SIGNATURE))),
        chat_chunk(tool_delta(tc(0, id="c1", type="function", name="f", arguments="{}"))),
        chat_chunk(tool_delta(tc(0, trace={"span": 7}))),
        chat_chunk(tool_delta(tc(1, id="c2", type="function", name="g", arguments="{}"))),
        _finish(),
    ]


def _without_index() -> list[dict[str, Any]]:
    # Entries without `index` (quirk 1): the members go to the call the entry continues.
    return [
        chat_chunk(tool_delta(tc(None, id="c1", type="function", name="f", arguments="{", x=True))),
        chat_chunk(tool_delta(tc(None, arguments="}", y="later"))),
        _finish(),
    ]


def _function_members() -> list[dict[str, Any]]:
    # Members inside `function` are the SDK function object's extras, which the SDK path does
    # not read: no metadata on any path. The entry's own member beside them is.
    first = tc(0, id="c1", type="function", name="f", arguments="{}", foo="entry")
    first["function"].update({"thought_signature": "s", "x": {"y": 1}})
    return [chat_chunk(tool_delta(first)), _finish()]


def _unpaired_names() -> list[dict[str, Any]]:
    # `json.loads` takes a name with an unpaired surrogate half; the core's keys cannot hold
    # it, and it is U+FFFD there on every path. Two names that differ only there are then one
    # key: its first place, the last value of the names in the order the SDK keeps them.
    return [
        chat_chunk(
            tool_delta(
                tc(0, id="c1", type="function", name="f", arguments='{"a":', **{"k\ud800": 1}),
            )
        ),
        chat_chunk(tool_delta(tc(1, **{"\udc00": "alone", "s\ud800\ud800": [1]}))),
        chat_chunk(tool_delta(tc(0, arguments="1}", **{"k\ufffd": 2, "j\ud800": None}))),
        chat_chunk(
            tool_delta(tc(1, id="c2", type="function", name="g", arguments="{}", z={"y\udc00": 3}))
        ),
        # Two names, as `json.loads` keeps them (ruff reads them as one literal).
        chat_chunk(tool_delta(tc(1, **{"t\ud800": 4} | {"t\ufffd": None}))),
        _finish(),
    ]


CASES = {
    "with-the-call": (
        _with_the_call,
        [[("foo", {"n": None}), ("bar", [1, 2.5, "x"])], [("extra_content", SIGNATURE)]],
    ),
    "alone": (
        _alone,
        [
            [("trace", {"span": 7})],
            [("thought_signature", "s1"), ("extra_content", SIGNATURE)],
        ],
    ),
    "without-index": (_without_index, [[("x", True), ("y", "later")]]),
    "function-members": (_function_members, [[("foo", "entry")]]),
    "unpaired-names": (
        _unpaired_names,
        [
            [("k\ufffd", 2)],
            [("\ufffd", "alone"), ("s\ufffd\ufffd", [1]), ("z", {"y\udc00": 3}), ("t\ufffd", 4)],
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_entry_s_other_members_are_its_call_s_metadata_on_every_path(
    sse_server: SSEServer, case: str
) -> None:
    make, want = CASES[case]
    events = make()
    route = sse_server.register_events(events, "openai-chat", split="adversarial")
    # The real SDK through `assemble`, and `feed_sse` on the same bytes cut every way.
    _, stream = assemble_both(route, "openai-chat")
    dicts = _dicts(events)
    assert raw_key(dicts) == raw_key(stream.calls)
    assert _metadata(stream.calls) == _metadata(dicts) == want
    raw = Assembler()
    raw.feed_sse(route.body)
    assert _metadata(raw.finish()) == want
    assert raw.stream_errors() == []


def test_a_repeated_member_keeps_its_first_place_and_last_value(sse_server: SSEServer) -> None:
    # As `json.loads` reads the entry: a name sent twice stays where it first came, with its
    # last value; one whose last value is `null` is not kept. Names are read unescaped, and an
    # escaped name of the entry's own (`\u0069d`) is that member, not metadata.
    entry = (
        r'{"index":0,"b":1,"\u0069d":"c1","type":"function","a":"x",'
        r'"function":{"name":"f","arguments":"{}"},"b":2,"a":null,"c":null,"c":[3],"d\u00e9":4}'
    )
    chunk = chat_chunk(tool_delta({"index": 0}))
    body = sse_body([chunk, _finish()], "openai-chat").replace(b'{"index":0}', entry.encode(), 1)
    _, stream = assemble_both(sse_server.register(body, split="adversarial"), "openai-chat")
    (call,) = stream.calls
    assert call.id == "c1" and call.ok
    assert list(call.metadata.items()) == [("b", 2), ("c", [3]), ("dé", 4)]


_NAMES = st.one_of(
    st.sampled_from(["extra_content", "thought_signature", "foo"]),
    # Names with unpaired surrogate halves, and one each may stand for (U+FFFD).
    st.sampled_from(["k\ud800", "\udc00", "\ud800\ud800", "k\ufffd", "\ufffd"]),
    st.text(max_size=4).filter(lambda n: n not in {"index", "id", "type", "function"}),
)
_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def _streams(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[int]]:
    calls = [Call("f", '{"a":[1,2,3],"b":"xyz"}'), Call("g", '{"c":true}')]
    events = chat_stream(calls, size=draw(st.integers(2, 12)), interleave=draw(st.booleans()))
    for event in events:
        for entry in event["choices"][0]["delta"].get("tool_calls", []):
            entry.update(draw(st.dictionaries(_NAMES, _VALUES, max_size=2)))
    for _ in range(draw(st.integers(0, 2))):
        # An entry of members alone, anywhere after the first chunk.
        members = draw(st.dictionaries(_NAMES, _VALUES, min_size=1, max_size=2))
        at = draw(st.integers(1, len(events) - 1))
        events.insert(at, chat_chunk(tool_delta(tc(draw(st.integers(0, 1)), **members))))
    body_len = len(sse_body(events, "openai-chat"))
    cuts = sorted(set(draw(st.lists(st.integers(1, body_len), max_size=12))))
    return events, [*cuts, body_len]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_streams())
def test_property_entry_members_agree_under_any_split(
    sse_server: SSEServer, case: tuple[list[dict[str, Any]], list[int]]
) -> None:
    events, cuts = case
    body = sse_body(events, "openai-chat")
    _, stream = assemble_sync(sse_server.register(body, split=cuts), "openai-chat")
    raw = Assembler()
    for piece in pieces(body, cuts):
        raw.feed_sse(piece)
    calls = raw.finish()
    dicts = _dicts(events)
    assert raw_key(calls) == raw_key(stream.calls) == raw_key(dicts)
    assert _metadata(calls) == _metadata(stream.calls) == _metadata(dicts)


@pytest.mark.parametrize("member", ["x\ud83d", "index\udc00"])
def test_a_member_whose_name_holds_a_lone_surrogate_raises_nothing(member: str) -> None:
    # Kept as metadata as sent, such a member's name could not be written as UTF-8:
    # `feed_chunk` raised, and `assemble` lost the stream, while the raw path dropped the
    # event. On every path the call now runs, the member kept with U+FFFD for the half.
    start = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f"}}
    start["function"]["arguments"] = '{"a"'
    rest = {"index": 0, "function": {"arguments": ": 1}"}, member: 1}
    events = [
        chat_chunk({"tool_calls": [start]}),
        chat_chunk({"tool_calls": [rest]}),
        chat_chunk({}, finish_reason="tool_calls"),
    ]
    kept = member.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    chunks = Assembler()
    for event in events:
        chunks.feed_chunk(event)
    raw = Assembler()
    raw.feed_sse(sse_body(events, "openai-chat"))
    stream = assemble(iter(events))
    list(stream)
    for assembler_calls, errors in (
        (chunks.finish(), chunks.stream_errors()),
        (raw.finish(), raw.stream_errors()),
        (stream.calls, []),
    ):
        (call,) = assembler_calls
        assert call.error is None and call.value == {"a": 1}
        assert call.metadata == {kept: 1}
        assert errors == []
