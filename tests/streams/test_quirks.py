"""One named test per applicable provider quirk (spec/provider-quirks.md), through real SDKs.

Each stream is served over HTTP by the local server (in every split mode) and read with the real
OpenAI, Anthropic or google-genai client wrapped by `toolwire.assemble`, or for quirk 32
(Bedrock ConverseStream) with the real boto3 client (more Bedrock cases, quirk 23 among them, are
in `test_bedrock.py`); quirk 33 (Gemini native API) is read through google-genai (more Gemini
cases in `test_gemini.py`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from pydantic import BaseModel

from toolwire.events import CallCompleted, PrecheckError
from toolwire.toolset import Toolset

from . import bedrockkit as bedrock
from .clients import assemble_async, assemble_both, assemble_gemini
from .conftest import SSEServer
from .streamkit import (
    Call,
    anthropic_stream,
    before_the_end,
    chat_chunk,
    gemini_call,
    gemini_chunk,
    load_events,
    responses_stream,
    sse_body,
    tc,
    tool_delta,
    well_formed_stream,
)

CHAT = "openai-chat"


def chat(
    server: SSEServer,
    split: str,
    deltas: list[Any],
    *,
    finish: str | None = "tool_calls",
    **options: Any,
) -> tuple[list[Any], Any]:
    """Serve tool-call deltas (lists of entries per chunk, or whole chunks) and assemble them."""
    chunks = [chat_chunk({"role": "assistant"})]
    for d in deltas:
        chunks.append(d if "choices" in d else chat_chunk(d))
    if finish is not None:
        chunks.append(chat_chunk({}, finish_reason=finish))
    return assemble_both(server.register_events(chunks, CHAT, split=split), CHAT, **options)


def td(*entries: dict[str, Any]) -> dict[str, Any]:
    return tool_delta(*entries)


def summary(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.name, c.value, c.error.kind if c.error else None) for c in calls]


class GetWeather(BaseModel):
    """Current weather for a city."""

    city: str
    days: int = 1


TOOLS = Toolset([GetWeather])


# --- Index problems ---------------------------------------------------------------------------


def test_quirk_01_missing_index(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(None, id="a", name="get_weather", arguments='{"city":')),
            td(tc(None, arguments='"Oslo"}')),
            td(tc(None, id="b", name="get_time", arguments='{"tz":"CET"}')),
        ],
    )
    assert summary(s.calls) == [
        ("get_weather", {"city": "Oslo"}, None),
        ("get_time", {"tz": "CET"}, None),
    ]
    assert [c.index for c in s.calls] == [None, None]


def test_quirk_01_07_interleaved_calls_without_index_follow_their_ids(
    sse_server: SSEServer, split: str
) -> None:
    # The id is the only key: routed to "the last call", the first call's rows would go to the
    # second, which the output limit leaves whole, and `archive_rows` would run with row 1.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(None, id="a", name="delete_rows", arguments='{"ids":[')),
            td(tc(None, id="b", name="archive_rows", arguments='{"ids":[')),
            td(tc(None, id="a", arguments="1,")),
            td(tc(None, id="b", arguments="2]}")),
        ],
        finish="length",
    )
    assert [(c.id, c.name, c.arguments) for c in s.calls] == [
        ("a", "delete_rows", '{"ids":[1,'),
        ("b", "archive_rows", '{"ids":[2]}'),
    ]
    assert s.calls[0].error is not None and s.calls[0].error.kind == "truncated"
    assert s.calls[1].error is None


def test_quirk_02_same_index_parallel_calls(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="get_weather", arguments='{"city":"Oslo"}')),
            td(tc(0, id="b", name="get_weather", arguments='{"city":')),
            td(tc(0, arguments='"Rome"}')),
        ],
    )
    assert summary(s.calls) == [
        ("get_weather", {"city": "Oslo"}, None),
        ("get_weather", {"city": "Rome"}, None),
    ]
    assert [c.id for c in s.calls] == ["a", "b"]


def test_quirk_03_whole_calls_same_index(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="x1", name="get_weather", arguments='{"city":"Oslo"}')),
            td(tc(0, id="x2", name="get_weather", arguments='{"city":"Rome"}')),
            td(tc(0, id="x3", name="get_time", arguments="{}")),
        ],
    )
    assert [c.value for c in s.calls] == [{"city": "Oslo"}, {"city": "Rome"}, {}]


def test_quirk_02_25_a_call_without_arguments_then_another_under_the_same_index(
    sse_server: SSEServer, split: str
) -> None:
    # A tool without parameters sends no text before the next call's header: the two once
    # became one call, named `get_timeget_weather`, and `b` got no result at all.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="get_time", arguments="")),
            td(tc(0, id="b", name="get_weather", arguments='{"city":"Paris"}')),
            td(tc(0, id="c", name="get_time")),
        ],
    )
    assert summary(s.calls) == [
        ("get_time", {}, None),
        ("get_weather", {"city": "Paris"}, None),
        ("get_time", {}, None),
    ]
    assert [c.id for c in s.calls] == ["a", "b", "c"]


def test_quirk_04_index_offset(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(1, id="a", name="f", arguments='{"n":')),
            td(tc(1, arguments="1}")),
            td(tc(2, id="b", name="g", arguments='{"n":2}')),
        ],
    )
    assert [(c.ordinal, c.index, c.value) for c in s.calls] == [(0, 1, {"n": 1}), (1, 2, {"n": 2})]


def test_quirk_05_negative_index(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(-1, id="a", name="f", arguments='{"n":')),
            td(tc(-1, arguments="-1}")),
        ],
    )
    assert [(c.index, c.value) for c in s.calls] == [(-1, {"n": -1})]


def test_quirk_06_several_fragments_one_chunk(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(
                tc(0, id="a", name="f", arguments='{"a"'),
                tc(0, arguments=":1,"),
                tc(0, arguments='"b":2}'),
                tc(1, id="b", name="g", arguments="{}"),
            ),
        ],
    )
    assert summary(s.calls) == [("f", {"a": 1, "b": 2}, None), ("g", {}, None)]


def test_quirk_07_interleaved_parallel_calls(sse_server: SSEServer, split: str) -> None:
    # Fault scenario 6: indexes 0, 1, 0, 2, 1, and an index that skips a value (3 is missing).
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"x":')),
            td(tc(1, id="b", name="g", arguments='{"y":')),
            td(tc(0, arguments="1}")),
            td(tc(4, id="c", name="h", arguments='{"z":3}')),
            td(tc(1, arguments="2}")),
        ],
    )
    assert summary(s.calls) == [("f", {"x": 1}, None), ("g", {"y": 2}, None), ("h", {"z": 3}, None)]


# --- Name, id and type fields -------------------------------------------------------------------


def test_quirk_08_name_repeated_every_chunk(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="read_file", arguments='{"p":')),
            td(tc(0, name="read_file", arguments='"a.txt"')),
            td(tc(0, name="read_file", arguments="}")),
        ],
    )
    assert summary(s.calls) == [("read_file", {"p": "a.txt"}, None)]


def test_quirk_08_12_header_repeated_with_a_trailing_newline(
    sse_server: SSEServer, split: str
) -> None:
    # Name and id in every chunk, and the model's last token a newline after the closing
    # brace: whitespace of the one call, never a second call with `{}` that would run.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="get_weather", arguments='{"city": ')),
            td(tc(0, id="a", name="get_weather", arguments='"Paris"}')),
            td(tc(0, id="a", name="get_weather", arguments="\n")),
        ],
        tools=TOOLS,
    )
    assert summary(s.calls) == [("get_weather", {"city": "Paris"}, None)]
    assert s.calls[0].warnings == []


def test_quirk_09_name_in_fragments(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="get_")),
            td(tc(0, name="weather")),
            td(tc(0, arguments='{"city":"Oslo"}')),
        ],
        tools=TOOLS,
    )
    assert summary(s.calls) == [("get_weather", {"city": "Oslo"}, None)]
    assert s.outcomes[0].ok


def test_quirk_10_name_arrives_late(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, arguments='{"city":')),
            td(tc(0, id="a", name="get_weather")),
            td(tc(0, arguments='"Oslo"}')),
        ],
    )
    assert summary(s.calls) == [("get_weather", {"city": "Oslo"}, None)]


def test_quirk_10_name_never_arrives(sse_server: SSEServer, split: str) -> None:
    _, s = chat(sse_server, split, [td(tc(0, id="a", arguments='{"city":"Oslo"}'))])
    assert s.calls[0].error.kind == "missing_name"


def test_quirk_11_blank_name_on_continuation(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"a":')),
            td(tc(0, name="", arguments="1}")),
        ],
    )
    assert summary(s.calls) == [("f", {"a": 1}, None)]


def test_quirk_12_same_id_every_chunk(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="call_9", name="f", arguments='{"a":')),
            td(tc(0, id="call_9", arguments="1}")),
        ],
    )
    assert [(c.id, c.value) for c in s.calls] == [("call_9", {"a": 1})]


def test_quirk_13_changing_id_on_continuation(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="first", name="f", arguments='{"a":')),
            td(tc(0, id="second", arguments="1")),
            td(tc(0, id="third", arguments="}")),
        ],
    )
    assert [(c.id, c.value) for c in s.calls] == [("first", {"a": 1})]


def test_quirk_14_empty_id_on_continuation(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="call_1", name="f", arguments='{"a":')),
            td(tc(0, id="", arguments="1}")),
        ],
    )
    assert [(c.id, c.value) for c in s.calls] == [("call_1", {"a": 1})]


def test_quirk_15_null_string_id(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="null", name="f", arguments='{"a":')),
            td(tc(0, id="call_7", arguments="1}")),
        ],
    )
    assert [(c.id, c.value) for c in s.calls] == [("call_7", {"a": 1})]


def test_quirk_16_same_wire_id_on_parallel_calls(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="dup", name="f", arguments="{}")),
            td(tc(1, id="dup", name="g", arguments="{}")),
        ],
    )
    first, second = s.calls
    assert first.id == "dup" and second.id is not None and second.id != "dup"
    assert "duplicate_id" in second.warnings


def test_quirk_17_type_repeated(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", type="function", name="f", arguments='{"a":')),
            td(tc(0, type="function", arguments="1}")),
        ],
    )
    assert [(c.type, c.value) for c in s.calls] == [("function", {"a": 1})]


def test_quirk_18_chunk_id_changes_every_chunk(sse_server: SSEServer, split: str) -> None:
    chunks = [
        chat_chunk(td(tc(0, id="a", name="f", arguments='{"a":')), chunk_id="c1"),
        chat_chunk(td(tc(0, arguments="1}")), chunk_id="c2"),
        chat_chunk({}, finish_reason="tool_calls", chunk_id="c3"),
    ]
    _, s = chat(sse_server, split, chunks, finish=None)
    assert summary(s.calls) == [("f", {"a": 1}, None)]


# --- Argument payload shapes --------------------------------------------------------------------


def test_quirk_19_cumulative_arguments(sse_server: SSEServer, split: str) -> None:
    full = '{"city":"東京","days":3}'
    deltas = [td(tc(0, id="a", name="get_weather", arguments=full[:k])) for k in (6, 12, len(full))]
    _, s = chat(sse_server, split, deltas)
    assert summary(s.calls) == [("get_weather", json.loads(full), None)]
    assert "cumulative_arguments" in s.calls[0].warnings


@pytest.mark.parametrize("name_every_chunk", [False, True])
def test_quirk_19_a_self_similar_value_is_not_taken_for_a_resend(
    sse_server: SSEServer, split: str, name_every_chunk: bool
) -> None:
    # Each chunk starts with the one before, as a resending provider's would, and both
    # readings stay valid for three chunks; the fourth breaks the resend reading. Deciding on
    # the third ran `{"a": []}` (named chunks) or failed the call.
    pieces = ['{"a":', '{"a":[', '{"a":[]}', "]}}"]
    deltas = [
        td(
            tc(
                0,
                id="a" if i == 0 else None,
                name="f" if i == 0 or name_every_chunk else None,
                arguments=piece,
            )
        )
        for i, piece in enumerate(pieces)
    ]
    _, s = chat(sse_server, split, deltas)
    assert summary(s.calls) == [("f", {"a": {"a": [{"a": []}]}}, None)]
    assert s.calls[0].warnings == []


@pytest.mark.parametrize("finish", ["tool_calls", "length"])
def test_quirk_19_a_look_alike_resend_cut_by_the_limit_is_not_run(
    sse_server: SSEServer, split: str, finish: str
) -> None:
    # Appended, the text is cut off; resent, it is a whole value. A stream the output limit
    # cut sent the unfinished one: running the resend would run arguments never sent.
    pieces = ['{"children": [', '{"children": [], "name": "leaf"}']
    deltas = [td(tc(0, id="a", name="f", arguments=pieces[0])), td(tc(0, arguments=pieces[1]))]
    _, s = chat(sse_server, split, deltas, finish=finish)
    (call,) = s.calls
    if finish == "length":
        assert not call.ok and call.arguments == "".join(pieces)
    else:
        assert call.value == {"children": [], "name": "leaf"}


def test_a_null_tool_call_entry_is_skipped_on_both_paths(sse_server: SSEServer, split: str) -> None:
    # A malformed `null` entry beside a real one: no call made up for it, none lost.
    entry = tc(0, id="a", name="f", arguments="{}")
    _, s = chat(sse_server, split, [{"tool_calls": [None, entry]}])
    assert summary(s.calls) == [("f", {}, None)]


def test_quirk_20_consolidated_repeat(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"a":')),
            td(tc(0, arguments="1}")),
            td(tc(0, arguments='{"a":1}')),
        ],
    )
    assert summary(s.calls) == [("f", {"a": 1}, None)]
    assert "repeat_dropped" in s.calls[0].warnings


def test_quirk_20_consolidated_repeat_spaced_otherwise(sse_server: SSEServer, split: str) -> None:
    # An adapter that re-serializes the parsed arguments for its repeat: the same tokens.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"city": "Paris", ')),
            td(tc(0, arguments='"unit": "c"}')),
            td(tc(0, arguments='{"city":"Paris","unit":"c"}')),
        ],
    )
    assert summary(s.calls) == [("f", {"city": "Paris", "unit": "c"}, None)]
    assert "repeat_dropped" in s.calls[0].warnings


def test_quirk_21_concatenated_objects(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="search", arguments='{"q":"a"}')),
            td(tc(0, arguments='{"q":"b"}')),
        ],
    )
    (call,) = s.calls
    assert call.error.kind == "concatenated_values" and call.value is None
    assert call.arguments == '{"q":"a"}{"q":"b"}'


def test_quirk_22_whole_call_in_one_chunk(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server, split, [td(tc(0, id="a", name="f", arguments='{"a":[1,2,{"b":null}]}'))]
    )
    assert summary(s.calls) == [("f", {"a": [1, 2, {"b": None}]}, None)]


def test_quirk_23_arguments_as_object(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments={"city": "Oslo", "n": [1]})),
            td(tc(1, id="b", name="g", arguments={"x": 1})),
            td(tc(1, arguments='{"x": 2}')),
        ],
    )
    first, second = s.calls
    assert first.ok and first.value == {"city": "Oslo", "n": [1]}
    assert second.error.kind == "mixed_arguments"


@pytest.mark.parametrize("scalar", [1000, True, 2.5])
def test_quirk_23_a_scalar_among_text_fragments_is_never_spliced(
    sse_server: SSEServer, split: str, scalar: object
) -> None:
    # `{"amount": ` then the number 1000 then `}`: the SDK path used to write the number into
    # the text and run `{"amount": 1000}`, which the raw path refuses as mixed arguments.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="set_limit", arguments='{"amount": ')),
            td(tc(0, arguments=scalar)),
            td(tc(0, arguments="}")),
            td(tc(1, id="b", name="ping", arguments=7)),
        ],
    )
    assert [(c.name, c.error.kind if c.error else None) for c in s.calls] == [
        ("set_limit", "mixed_arguments"),
        ("ping", "not_object"),
    ]


def test_quirk_23_a_responses_delta_that_is_no_string(sse_server: SSEServer) -> None:
    events = responses_stream([Call("set_limit", '{"amount": 5}')], size=11)
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    deltas[0]["delta"] = 1000
    events = [e for e in events if e["type"] != "response.function_call_arguments.done"]
    events = [e for e in events if e["type"] != "response.output_item.done"]
    _, s = assemble_both(sse_server.register_events(events, "openai-responses"), "openai-responses")
    assert [c.error.kind if c.error else None for c in s.calls] == ["mixed_arguments"]


def test_quirk_24_null_arguments_first(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td({"index": 0, "id": "a", "function": {"name": "f", "arguments": None}}),
            td(tc(0, arguments='{"location":"Oslo"}')),
        ],
    )
    assert summary(s.calls) == [("f", {"location": "Oslo"}, None)]
    assert s.calls[0].arguments == '{"location":"Oslo"}'


def _with_added_arguments(events: list[Any], arguments: str) -> list[Any]:
    """`events` with `arguments` in every `output_item.added` of a function call."""
    return [
        {**e, "item": {**e["item"], "arguments": arguments}}
        if e["type"] == "response.output_item.added"
        else e
        for e in events
    ]


@pytest.mark.parametrize("placeholder", ["{}", '{"a":0}'])
def test_quirk_24_responses_item_added_with_placeholder_arguments(
    sse_server: SSEServer, split: str, placeholder: str
) -> None:
    # Deltas that follow are the arguments: what `added` carried is not their start.
    events = _with_added_arguments(responses_stream([Call("f", '{"a":1}')], size=2), placeholder)
    route = sse_server.register_events(events, "openai-responses", split=split)
    _, s = assemble_both(route, "openai-responses")
    assert summary(s.calls) == [("f", {"a": 1}, None)]
    assert s.calls[0].arguments == '{"a":1}'


@pytest.mark.parametrize(
    ("dropped", "ends"),
    [
        # Nothing else brings them: the item's own arguments, at its end or the response's.
        (("response.function_call_arguments.delta", "response.function_call_arguments.done"), None),
        (
            (
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
            ),
            None,
        ),
        # Cut short (no `response.completed`): the call did not get its arguments.
        (
            (
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ),
            "truncated",
        ),
    ],
)
def test_quirk_24_responses_arguments_only_in_item_added(
    sse_server: SSEServer, dropped: tuple[str, ...], ends: str | None
) -> None:
    events = _with_added_arguments(responses_stream([Call("f", '{"a":1}')], size=2), '{"a":1}')
    events = [
        {**e, "item": {**e["item"], "arguments": ""}}
        if e["type"] == "response.output_item.done"
        else e
        for e in events
        if e["type"] not in dropped
    ]
    route = sse_server.register_events(events, "openai-responses")
    _, s = assemble_both(route, "openai-responses")
    (call,) = s.calls
    if ends is None:
        assert call.ok and call.arguments == '{"a":1}'
    else:
        assert call.error is not None and call.error.kind == ends


def test_quirk_25_empty_arguments(sse_server: SSEServer, split: str) -> None:
    _, s = chat(sse_server, split, [td(tc(0, id="a", name="list_files", arguments=""))])
    (call,) = s.calls
    assert call.ok and call.arguments == "{}" and call.value == {}
    assert "empty_arguments" in call.warnings


def test_quirk_26_empty_delta_string_responses(sse_server: SSEServer, split: str) -> None:
    events = responses_stream([Call("f", '{"a":1}')], size=2)
    at = next(
        i for i, e in enumerate(events) if e["type"] == "response.function_call_arguments.delta"
    )
    for k in range(3):
        events.insert(at + 2 * k, {**events[at], "delta": "", "sequence_number": 900 + k})
    route = sse_server.register_events(events, "openai-responses", split=split)
    _, s = assemble_both(route, "openai-responses")
    assert summary(s.calls) == [("f", {"a": 1}, None)]


def test_quirk_27_wrong_value_type(sse_server: SSEServer, split: str) -> None:
    events, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="get_weather", arguments='{"city":"Oslo","days":')),
            td(tc(0, arguments='"3"}')),
        ],
        tools=TOOLS,
    )
    # Reported while streaming, before the call completes ...
    early = [i for i, e in enumerate(events) if isinstance(e, PrecheckError)]
    assert early and events[early[0]].error.path == "/days"
    assert early[0] < next(i for i, e in enumerate(events) if isinstance(e, CallCompleted))
    # ... and never coerced silently: rejected, or accepted with the coercion on record.
    outcome = s.outcomes[0]
    assert not outcome.ok or [c.path for c in outcome.coercions] == ["/days"]


def test_quirk_28_control_markers(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="get_weather</tool_call>", arguments='{"city":"Oslo"}')),
            td(tc(1, id="b", name="get_weather", arguments='[ARGS]{"city":"Oslo"}')),
        ],
        tools=TOOLS,
    )
    first, second = s.calls
    assert first.error.kind == "unknown_tool"
    # `[` opens an array; the marker's first letter is where the JSON breaks.
    assert (second.error.kind, second.error.offset, second.error.path) == (
        "unexpected_byte",
        1,
        "/0",
    )
    assert [o.ok for o in s.outcomes] == [False, False]


# --- Stream framing and non-tool chunks --------------------------------------------------------


def test_quirk_29_empty_choices(sse_server: SSEServer, split: str) -> None:
    chunks = [
        chat_chunk(choices=[]),
        td(tc(0, id="a", name="f", arguments="{}")),
        chat_chunk({}, finish_reason="tool_calls"),
        chat_chunk(
            choices=[], usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        ),
    ]
    events, s = chat(sse_server, split, chunks, finish=None)
    assert summary(s.calls) == [("f", {}, None)]
    assert events[-1].usage == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    assert events[-1].finish_reason == "tool_calls"


def test_quirk_30_filter_annotations_without_delta(sse_server: SSEServer, split: str) -> None:
    _, chunks = load_events("openai_chat_azure_filters")
    _, s = assemble_both(sse_server.register_events(chunks, CHAT, split=split), CHAT)
    assert summary(s.calls) == [("get_weather", {"city": "東京", "unit": "celsius"}, None)]
    assert s.text == "Sure."


def test_quirk_31_gemini_thought_signature(sse_server: SSEServer, split: str) -> None:
    _, chunks = load_events("openai_chat_gemini_compat")
    chunks.insert(2, chat_chunk(td({"extra_content": {"google": {"thought_signature": "later"}}})))
    _events, s = assemble_both(sse_server.register_events(chunks, CHAT, split=split), CHAT)
    first, second = s.calls
    # The metadata-only delta updated the open call; it did not start a third one.
    assert len(s.calls) == 2
    assert first.metadata == {"extra_content": {"google": {"thought_signature": "later"}}}
    assert second.metadata == {}
    assert [c.value for c in s.calls] == [{"city": "Paris"}, {"city": "Rome"}]


def test_quirk_31_metadata_before_its_call_opens(sse_server: SSEServer, split: str) -> None:
    # The signature for index 0 comes before index 0's first named delta, and another call
    # opens in between. The raw path used to open a nameless call for the metadata-only delta,
    # which took ordinal 0 and, with nothing else for that index, ended as `missing_name`.
    signature = {"extra_content": {"google": {"thought_signature": "s0"}}}
    chunks = [
        td({"index": 0, **signature}),
        td(tc(1, id="b", name="g", arguments="{}")),
        td(tc(0, id="a", name="f", arguments='{"x":1}')),
        td({"index": 2, **signature}),
    ]
    _, s = chat(sse_server, split, chunks)
    assert [(c.ordinal, c.index, c.name, c.ok) for c in s.calls] == [
        (0, 1, "g", True),
        (1, 0, "f", True),
    ]
    assert [c.metadata for c in s.calls] == [{}, signature]


def test_quirk_31_metadata_on_a_delta_without_index(sse_server: SSEServer, split: str) -> None:
    # Quirk 1 and 31 together: a continuation without index carries the signature. It belongs
    # to the call the delta continues; `feed_chunk` kept it for a call without index that never
    # came, so the signature was lost on the SDK path only.
    signature = {"extra_content": {"google": {"thought_signature": "s0"}}}
    chunks = [
        td(tc(0, id="a", name="f", arguments='{"x":')),
        td({**tc(None, arguments="1}"), **signature}),
        td(tc(1, id="b", name="g", arguments="{}")),
    ]
    _, s = chat(sse_server, split, chunks)
    assert [(c.name, c.value, c.metadata) for c in s.calls] == [
        ("f", {"x": 1}, signature),
        ("g", {}, {}),
    ]


def test_quirk_32_bedrock_blocks_counted_across_text(sse_server: SSEServer, split: str) -> None:
    # Text and reasoning blocks have no `contentBlockStart` but take a `contentBlockIndex`.
    calls = [Call("get_weather", '{"city": "Oslo"}'), Call("get_time", '{"tz": "CET"}')]
    events = bedrock.converse_events(calls, text="Checking.", reasoning=True, size=4)
    _, s = bedrock.assemble_bedrock(bedrock.serve(sse_server, events, split=split))
    assert summary(s.calls) == [
        ("get_weather", {"city": "Oslo"}, None),
        ("get_time", {"tz": "CET"}, None),
    ]
    assert [(c.ordinal, c.index) for c in s.calls] == [(0, 2), (1, 3)]
    assert s.text == "Checking."


def test_quirk_32_bedrock_tool_delta_without_start(sse_server: SSEServer, split: str) -> None:
    # The second call's `contentBlockStart` is lost: its input is kept under its block index
    # and the call reports the missing name instead of vanishing or joining the first call.
    calls = [Call("get_weather", '{"city": "Oslo"}'), Call("get_time", '{"tz": "CET"}')]
    events = bedrock.converse_events(calls, text="Checking.", size=4)
    del events[next(i for i, e in enumerate(events) if e == bedrock.tool_start(2, calls[1], 1))]
    _, s = bedrock.assemble_bedrock(bedrock.serve(sse_server, events, split=split))
    assert summary(s.calls) == [
        ("get_weather", {"city": "Oslo"}, None),
        (None, {"tz": "CET"}, "missing_name"),
    ]
    assert [(c.ordinal, c.index, c.id) for c in s.calls] == [(0, 1, "tooluse_0"), (1, 2, None)]
    assert bedrock.shown(bedrock.via_dicts(events)[1]) == bedrock.shown(s.calls)


def test_quirk_33_gemini_several_calls_and_split_call(sse_server: SSEServer, split: str) -> None:
    # Several `functionCall` parts in one chunk, then a name-only part followed by an args-only
    # part without a name: every part is read, and the nameless args join the open call.
    chunks = [
        gemini_chunk(
            gemini_call("get_weather", {"city": "Oslo"}),
            gemini_call("get_weather", {"city": "Rome"}),
        ),
        gemini_chunk(gemini_call("get_weather")),
        gemini_chunk(gemini_call(None, {"city": "東京", "days": 2})),
        gemini_chunk(gemini_call("get_weather", {"city": "Lima"}), gemini_call("get_time")),
        gemini_chunk(gemini_call(None, {"tz": "UTC"}), finish="STOP"),
    ]
    route = sse_server.register(sse_body(chunks, "gemini"), split=split)
    _, s = assemble_gemini(route, chunks, tools=TOOLS)
    assert summary(s.calls) == [
        ("get_weather", {"city": "Oslo"}, None),
        ("get_weather", {"city": "Rome"}, None),
        ("get_weather", {"city": "東京", "days": 2}, None),
        ("get_weather", {"city": "Lima"}, None),
        ("get_time", {"tz": "UTC"}, "unknown_tool"),
    ]
    assert [o.ok for o in s.outcomes] == [True, True, True, True, False]


# --- Finish reasons and truncation -------------------------------------------------------------


def test_quirk_34_stop_with_tool_calls(sse_server: SSEServer, split: str) -> None:
    events, s = chat(
        sse_server, split, [td(tc(0, id="a", name="f", arguments='{"a":1}'))], finish="stop"
    )
    assert s.calls[0].ok and events[-1].finish_reason == "stop"


@pytest.mark.parametrize(
    "malformed",
    [
        {"tool_calls": "garbage"},
        {"tool_calls": [{"index": 0, "function": "zz"}]},
        {"tool_calls": [5]},
        [1],
    ],
)
def test_a_chunk_of_a_shape_no_stream_sends_loses_the_open_call(
    sse_server: SSEServer, split: str, malformed: Any
) -> None:
    # The raw path cannot read such an event, which may have carried part of the call: the
    # call must not run. `feed_chunk` (and the SDK path, whose chunks are not validated)
    # skipped it and ran the call with what it had.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"x": ')),
            chat_chunk(malformed),
            td(tc(0, arguments="1}")),
        ],
    )
    assert [(c.name, c.error.kind if c.error else None) for c in s.calls] == [("f", "lost_event")]


def test_a_call_started_after_a_content_filter_does_not_run(
    sse_server: SSEServer, split: str
) -> None:
    # The provider stopped the response; a call sent after that is in no answer it gave. It
    # once ran as if the stop had not happened, on every path.
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"x":1}')),
            chat_chunk({}, finish_reason="content_filter"),
            td(tc(1, id="b", name="g", arguments='{"y":2}')),
        ],
        finish=None,
    )
    assert [(c.name, c.ok) for c in s.calls] == [("f", False), ("g", False)]
    assert [c.stop_reason for c in s.calls] == ["content_filter", "content_filter"]


def test_quirk_35_tool_calls_reason_with_cut_arguments(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [td(tc(0, id="a", name="f", arguments='{"city": "Par'))],
        finish="tool_calls",
    )
    assert s.calls[0].error.kind == "truncated" and s.calls[0].value is None


@pytest.mark.parametrize("cut", ['{"s": "ab', '{"s": "\\u00', '{"n": 12.', '{"a":'])
def test_quirk_36_length_truncation(sse_server: SSEServer, split: str, cut: str) -> None:
    _, s = chat(sse_server, split, [td(tc(0, id="a", name="f", arguments=cut))], finish="length")
    (call,) = s.calls
    assert call.error.kind == "truncated" and call.arguments == cut and not call.ok


def test_quirk_37_no_lenient_repair(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [td(tc(0, id="a", name="get_weather", arguments='{"city": "Oslo", "days": [1, 2'))],
        tools=TOOLS,
    )
    assert s.calls[0].value is None and not s.outcomes[0].ok


def test_quirk_38_connection_drop_without_finish_reason(sse_server: SSEServer) -> None:
    chunks = [
        chat_chunk(td(tc(0, id="a", name="f", arguments='{"a":1}'))),
        chat_chunk(td(tc(1, id="b", name="g", arguments='{"b":"lo'))),
        chat_chunk(td(tc(1, arguments='ng"}'))),
    ]
    body = sse_body(chunks, CHAT)
    route = sse_server.register(body, drop_after=body.index(b'ng\\"}'))
    events, s = assemble_both(route, CHAT)
    assert summary(s.calls) == [("f", {"a": 1}, None), ("g", None, "truncated")]
    assert events[-1].finish_reason is None and s.transport_error is not None


@pytest.mark.parametrize("lost", ["done", "usage_and_done"])
def test_quirk_38_a_drop_after_the_finish_reason_cuts_no_call(
    sse_server: SSEServer, lost: str
) -> None:
    # OpenAI sends the finish reason, then the usage chunk (`include_usage`), then `[DONE]`.
    # Chat has no end event per call: its finish reason ends them all, so a connection lost
    # after it cuts none, as one lost after Anthropic's `message_delta` or Gemini's last chunk
    # does not. The call without parameters was cut off (never run) although the model had
    # finished it.
    calls = [Call("f", '{"a": 1}', "call_f"), Call("transfer", "", "call_t")]
    usage = chat_chunk(choices=[], usage={"prompt_tokens": 5, "completion_tokens": 9})
    body = sse_body([*well_formed_stream(CHAT, calls), usage], CHAT)
    end = body.index(b"data: [DONE]") if lost == "done" else body.rindex(b"data: {")
    events, s = assemble_both(sse_server.register(body, drop_after=end), CHAT)
    assert summary(s.calls) == [("f", {"a": 1}, None), ("transfer", {}, None)]
    assert events[-1].finish_reason is None and s.transport_error is not None
    # The same stream lost before its finish reason: the last call may have been cut.
    cut = body.index(b'"finish_reason":"tool_calls"')
    cut = body.rindex(b"data:", 0, cut)
    _, s = assemble_both(sse_server.register(body, drop_after=cut), CHAT)
    assert summary(s.calls) == [("f", {"a": 1}, None), ("transfer", None, "truncated")]


@pytest.mark.anyio
async def test_quirk_38_a_drop_after_the_finish_reason_cuts_no_call_async(
    sse_server: SSEServer,
) -> None:
    calls = [Call("f", '{"a": 1}', "call_f"), Call("transfer", "", "call_t")]
    body = sse_body(well_formed_stream(CHAT, calls), CHAT)
    route = sse_server.register(body, drop_after=body.index(b"data: [DONE]"))
    _, s = await assemble_async(route, CHAT)
    assert summary(s.calls) == [("f", {"a": 1}, None), ("transfer", {}, None)]
    assert s.finish_reason is None and s.transport_error is not None


@pytest.mark.parametrize("fmt", [CHAT, "openai-responses", "anthropic"])
def test_quirk_38_a_body_closed_cleanly_without_finish_reason(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # The transport ends normally (a proxy closed a cut stream), but no finish reason came: a
    # call whose arguments never began is not a call without parameters, and never runs. A call
    # whose value is complete is kept, as after a dropped connection.
    events = well_formed_stream(fmt, [Call("f", '{"a": 1}'), Call("transfer", "")])
    events = before_the_end(events, fmt)
    _, s = assemble_both(sse_server.register_events(events, fmt, split=split), fmt)
    assert summary(s.calls) == [("f", {"a": 1}, None), ("transfer", None, "truncated")]
    assert s.finish_reason is None and s.transport_error is None


def test_quirk_38_gemini_name_only_call_at_a_clean_end(sse_server: SSEServer) -> None:
    chunks = [gemini_chunk(gemini_call("f", {"a": 1})), gemini_chunk(gemini_call("transfer"))]
    route = sse_server.register(sse_body(chunks, "gemini"))
    _, s = assemble_gemini(route, chunks)
    assert summary(s.calls) == [("f", {"a": 1}, None), ("transfer", None, "truncated")]


# --- Encoding and escapes ----------------------------------------------------------------------


def test_quirk_39_utf8_split_across_transport_chunks(sse_server: SSEServer) -> None:
    text = "東京 🌸 ñ"
    chunks = [
        chat_chunk({"content": text}),
        chat_chunk(
            td(tc(0, id="a", name="f", arguments=json.dumps({"t": text}, ensure_ascii=False)))
        ),
    ]
    _, s = chat(sse_server, "bytewise", chunks)
    assert s.text == text and s.calls[0].value == {"t": text}
    assert "\ufffd" not in s.calls[0].arguments


def test_quirk_40_replacement_character_in_data(sse_server: SSEServer, split: str) -> None:
    _, s = chat(sse_server, split, [td(tc(0, id="a", name="f", arguments='{"t":"ab\ufffdc"}'))])
    assert s.calls[0].ok and "replacement_character" in s.calls[0].warnings


def test_quirk_41_surrogate_pair_split_between_deltas(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"e":"\\ud83d')),
            td(tc(0, arguments='\\ude00"}')),
        ],
    )
    assert s.calls[0].value == {"e": "😀"}


def _utf16_units(text: str) -> list[str]:
    """`text` cut into UTF-16 code units, as a JS producer may cut it (halves stay lone)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i : i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(data), 2)]


def _escaped_body(events: list[dict[str, Any]], fmt: str) -> bytes:
    """SSE with `ensure_ascii` JSON: a lone surrogate goes on the wire as its `\\uXXXX` escape."""
    out = [
        (b"" if fmt == CHAT else f"event: {e['type']}\n".encode())
        + f"data: {json.dumps(e)}\n\n".encode()
        for e in events
    ]
    return b"".join(out) + (b"data: [DONE]\n\n" if fmt == CHAT else b"")


@pytest.mark.parametrize("fmt", [CHAT, "anthropic"])
def test_quirk_41_surrogate_pair_split_between_events(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # The SDKs decode each event alone, so each half of the pair arrives as a lone surrogate in
    # its own `str`, which has no UTF-8 form: `feed_chunk` used to raise UnicodeEncodeError.
    from toolwire.assembler import Assembler

    if fmt == CHAT:
        events = [chat_chunk({"role": "assistant"})]
        events += [chat_chunk({"content": u}) for u in _utf16_units("hi 😀!")]
        events += [
            chat_chunk(td(tc(0, id="a", name="f", arguments='{"e":"x\ud83d'))),
            chat_chunk(td(tc(1, id="b", name="g", arguments='{"e":"\ud83d'))),
            chat_chunk(td(tc(0, arguments='\ude00y"}'))),
            chat_chunk(td(tc(1, arguments='\ude00"}'))),
            chat_chunk({}, finish_reason="tool_calls"),
        ]
    else:
        calls = [Call("f", '{"e":"x😀y"}'), Call("g", '{"e":"😀"}')]
        events = []
        for e in anthropic_stream(calls, text="hi 😀!", size=100):
            delta = e.get("delta", {})
            field = next((f for f in ("partial_json", "text") if delta.get(f)), None)
            if field is None:
                events.append(e)
                continue
            events += [{**e, "delta": {**delta, field: u}} for u in _utf16_units(delta[field])]
    body = _escaped_body(events, fmt)
    assert b"\\ud83d" in body and b"\\ude00" in body
    _, s = assemble_both(sse_server.register(body, split=split), fmt)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    raw = Assembler()
    raw.feed_sse(body)
    want = [("f", {"e": "x😀y"}, None), ("g", {"e": "😀"}, None)]
    assert summary(s.calls) == summary(dicts.finish()) == summary(raw.finish()) == want
    assert s.text == raw.text == "hi 😀!"


def test_quirk_41_surrogate_half_that_never_pairs(sse_server: SSEServer, split: str) -> None:
    # A half left unpaired (another character follows, or the stream ends) is written back as
    # its escape, as on the raw SSE path: the call gets a typed error and nothing raises. In
    # names and text, which are not JSON, it becomes U+FFFD.
    from toolwire.assembler import Assembler

    events = [
        chat_chunk({"content": "a\ud83d"}),
        chat_chunk(td(tc(0, id="a", name="f\udc00", arguments='{"e":"\ud83d'))),
        chat_chunk(td(tc(0, arguments='z"}'))),
        chat_chunk(td(tc(1, id="b", name="g", arguments='{"e":"\ude00"}'))),
        chat_chunk(td(tc(2, id="c", name="h", arguments={"e": "\ud800"}))),
        chat_chunk(td(tc(3, id="d", name="k", arguments='{"e":"\ud83d'))),
    ]
    body = _escaped_body(events, CHAT)
    _, s = assemble_both(sse_server.register(body, split=split), CHAT)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    raw = Assembler()
    raw.feed_sse(body)
    for calls in (s.calls, dicts.finish(), raw.finish()):
        assert [c.error.kind for c in calls] == ["lone_surrogate"] * 3 + ["truncated"]
        assert calls[0].name == "f\ufffd"
        assert calls[0].arguments == '{"e":"\\ud83dz"}'
        assert calls[1].arguments == '{"e":"\\ude00"}'
        assert calls[3].arguments == '{"e":"\\ud83d'
    assert s.text == raw.text == "a\ufffd"


@pytest.mark.parametrize("index", [0, None])
def test_quirk_41_half_held_when_another_call_starts_under_its_key(
    sse_server: SSEServer, split: str, index: int | None
) -> None:
    # Quirks 2 / 1 with 41: a call's last fragment ends in half of a pair and the next delta
    # under the same key (or without one) starts another call. The half was held per key and
    # written back in front of the new call's arguments, which broke that call; it belongs to
    # the call it came from. A repeated header (quirk 8) still continues the call: its pair
    # is joined.
    from toolwire.assembler import Assembler

    events = [
        chat_chunk(td(tc(index, id="a", name="f", arguments='{"e":"\ud83d'))),
        chat_chunk(td(tc(index, id="b", name="g", arguments='{"x":1}'))),
        chat_chunk(td(tc(index, id="c", name="h", arguments='{"e":"x\ud83d'))),
        chat_chunk(td(tc(index, name="h", arguments='\ude00"}'))),
        chat_chunk({}, finish_reason="tool_calls"),
    ]
    body = _escaped_body(events, CHAT)
    _, s = assemble_both(sse_server.register(body, split=split), CHAT)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    want = [
        ("f", '{"e":"\\ud83d', "truncated"),
        ("g", '{"x":1}', None),
        ("h", '{"e":"x😀"}', None),
    ]
    for calls in (s.calls, dicts.finish()):
        assert [(c.name, c.arguments, c.error.kind if c.error else None) for c in calls] == want


def test_quirk_42_escape_split_at_delta_boundary(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"p":"C:\\')),
            td(tc(0, arguments='\\dir","u":"\\u00')),
            td(tc(0, arguments='e9"}')),
        ],
    )
    assert s.calls[0].value == {"p": "C:\\dir", "u": "é"}


def test_quirk_43_invalid_escape(sse_server: SSEServer, split: str) -> None:
    events, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"ns":"App\\Http"}')),
            td(tc(1, id="b", name="g", arguments='{"ok":true}')),
        ],
    )
    first, second = s.calls
    assert first.error.kind == "invalid_escape" and first.error.offset == len('{"ns":"App\\')
    assert second.ok
    assert any(isinstance(e, PrecheckError) and e.ordinal == 0 for e in events)


def test_quirk_44_lone_surrogate(sse_server: SSEServer, split: str) -> None:
    _, s = chat(sse_server, split, [td(tc(0, id="a", name="f", arguments='{"s":"\\ud800"}'))])
    assert s.calls[0].error.kind == "lone_surrogate"


# --- Server-side parser defects ----------------------------------------------------------------


def test_quirk_45_garbled_diff(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"a": 1}')),
            td(tc(0, arguments='"}')),
        ],
    )
    assert not s.calls[0].ok and s.calls[0].value is None


def test_quirk_46_final_brace_dropped(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"a": {"b": 1')),
            td(tc(0, arguments="}")),
        ],
    )
    assert s.calls[0].error.kind == "truncated"


def test_quirk_47_anthropic_dropped_opening(sse_server: SSEServer, split: str) -> None:
    events = anthropic_stream([Call("get_weather", '{"city": "Paris"}')], size=4)
    deltas = [
        e for e in events if e["type"] == "content_block_delta" and e["delta"]["partial_json"]
    ]
    deltas[0]["delta"]["partial_json"] = deltas[0]["delta"]["partial_json"][2:]
    _, s = assemble_both(sse_server.register_events(events, "anthropic", split=split), "anthropic")
    (call,) = s.calls
    assert call.error.kind == "unexpected_byte" and call.error.offset == 0


def test_quirk_48_index_restarts_for_a_new_call(sse_server: SSEServer, split: str) -> None:
    _, s = chat(
        sse_server,
        split,
        [
            td(tc(0, id="a", name="f", arguments='{"n":1}')),
            td(tc(1, id="b", name="g", arguments="{}")),
            td(tc(0, id="c", name="h", arguments='{"n":')),
            td(tc(0, arguments="3}")),
        ],
    )
    assert summary(s.calls) == [("f", {"n": 1}, None), ("g", {}, None), ("h", {"n": 3}, None)]
