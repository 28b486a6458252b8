"""Custom tools (free-form input) registered, exported, validated and run, on Responses and
Chat Completions.

A custom tool could not be registered: its calls all ended `free_form_call`, and no
application could run one through the toolset and the executor. On Chat Completions a custom
tool's call (`tool_calls[].type == "custom"`, its name and input under `custom`) lost its name
and input on every path. On Responses a finished item that restated another input than its
`custom_tool_call_input.done` lost to it without a word. Each stream is served to the real
`openai` client over HTTP; `assemble_both` feeds the same body to `feed_sse` cut every way a
gateway may see it, and the property tests cut it anywhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import Toolset, assistant_turn, tool_messages
from toolwire.assembler import Assembler
from toolwire.execution import Executor

from .clients import assemble_both, assemble_sync
from .conftest import SSEServer
from .streamkit import chat_chunk, pieces, sse_body

# Quotes, a backslash, a newline and non-ASCII text: the input is no JSON, and is kept as sent.
INPUT = "SELECT \"name\" FROM t WHERE x = 'a\\b';\n-- é 😀"
SQL = {
    "type": "custom",
    "name": "run_sql",
    "description": "Run one SQL query",
    "format": {"type": "grammar", "syntax": "lark", "definition": "start: /SELECT .+/s"},
}
LOOKUP = {
    "name": "lookup",
    "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}},
}
TOOLS = Toolset([LOOKUP, SQL])


def _executor() -> Executor:
    return Executor(
        {"run_sql": lambda sql: f"ran {sql}", "lookup": lambda args: {"found": args["q"]}},
        breaker=False,
    )


# ---------------------------------------------------------------------------------------------
# Responses


def _responses_body(events: list[dict[str, Any]]) -> bytes:
    numbered = [{**e, "sequence_number": n} for n, e in enumerate(events)]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in numbered)


def _custom_item(name: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_sql", "name": name}


def _custom_events(
    text: str, *, done: str | None = None, name: str = "run_sql"
) -> list[dict[str, Any]]:
    where = {"output_index": 0, "item_id": "ctc_1"}
    item = _custom_item(name)
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "input": ""}},
        {"type": "response.custom_tool_call_input.delta", **where, "delta": text[:4]},
        {"type": "response.custom_tool_call_input.delta", **where, "delta": text[4:]},
        {
            "type": "response.custom_tool_call_input.done",
            **where,
            "input": text if done is None else done,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "input": text}},
    ]


def _function_events(name: str = "lookup") -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_f", "name": name}
    return [
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**item, "arguments": ""},
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "fc_1",
            "delta": '{"q": 1}',
        },
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {**item, "arguments": '{"q": 1}'},
        },
    ]


_CREATED = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
_COMPLETED = {"type": "response.completed", "response": {"id": "r", "status": "completed"}}


def test_a_registered_custom_tool_runs_and_is_answered_in_kind(
    sse_server: SSEServer, split: str
) -> None:
    events = [_CREATED, *_custom_events(INPUT), *_function_events(), _COMPLETED]
    route = sse_server.register(_responses_body(events), split=split)
    _, s = assemble_both(route, "openai-responses", tools=TOOLS)
    custom = s.calls[0]
    outcome = s.outcomes[0]
    # Its input as sent, never read as JSON: the tool's own text.
    assert (outcome.ok, outcome.value, outcome.call_type) == (True, INPUT, "custom")
    assert (custom.type, custom.arguments) == ("custom", INPUT)
    assert s.outcomes[1].ok and s.outcomes[1].call_type is None
    executor = _executor()
    results = [executor.execute(o) for o in s.outcomes]
    assert [r.value for r in results] == [f"ran {INPUT}", {"found": 1}]
    messages = tool_messages(s.calls, results, style="openai-responses")
    assert [(m["type"], m["call_id"]) for m in messages] == [
        ("custom_tool_call_output", "call_sql"),
        ("function_call_output", "call_f"),
    ]
    assert json.loads(messages[0]["output"]) == {"ok": True, "result": f"ran {INPUT}"}
    # The outcome alone answers its call in kind, a success as a failure.
    alone = outcome.to_message(style="openai-responses", result="3 rows")
    assert (alone["type"], alone["call_id"]) == ("custom_tool_call_output", "call_sql")
    assert assistant_turn([custom], style="openai-responses") == [
        {"type": "custom_tool_call", "call_id": "call_sql", "name": "run_sql", "input": INPUT}
    ]


def test_a_call_of_the_other_kind_than_its_tool_is_a_typed_error(sse_server: SSEServer) -> None:
    # A custom call to the JSON tool, a function call to the custom tool: both retryable,
    # each telling the model how its tool is called; neither runs.
    events = [
        _CREATED,
        *_custom_events('{"q": 1}', name="lookup"),
        *_function_events(name="run_sql"),
        _COMPLETED,
    ]
    _, s = assemble_both(
        sse_server.register(_responses_body(events)), "openai-responses", tools=TOOLS
    )
    to_json, to_custom = s.outcomes
    assert [(o.ok, o.error_type, o.retryable) for o in s.outcomes] == [
        (False, "wrong_tool_type", True),
        (False, "wrong_tool_type", True),
    ]
    assert "takes JSON arguments" in (to_json.message or "")
    assert "takes free-form text input" in (to_custom.message or "")
    assert (to_json.call_type, to_custom.call_type) == ("custom", None)
    executor = _executor()
    results = [executor.execute(o) for o in s.outcomes]
    assert [r.state for r in results] == ["validation_failed", "validation_failed"]
    assert [r.attempts for r in results] == [0, 0]
    # Answered in kind, even without its call at hand.
    alone = to_json.to_message(style="openai-responses")
    assert alone["type"] == "custom_tool_call_output"
    # So are they without the pre-check: a look-alike call read by a toolset alone.
    plain = Assembler()
    plain.feed_sse(_responses_body(events))
    assert [TOOLS.validate(c).error_type for c in plain.finish()] == ["wrong_tool_type"] * 2


def test_a_custom_call_the_stream_cut_off_is_told_as_cut(sse_server: SSEServer) -> None:
    body = _responses_body([_CREATED, *_custom_events(INPUT)[:2]])
    route = sse_server.register(body, drop_after=len(body))
    _, s = assemble_both(route, "openai-responses", tools=TOOLS)
    (outcome,) = s.outcomes
    assert (outcome.ok, outcome.error_type, outcome.call_type) == (False, "truncated", "custom")


def test_a_finished_item_that_restates_another_input_wins_and_is_told(
    sse_server: SSEServer, split: str
) -> None:
    # The `.done` event says one thing, the finished item (what the provider keeps as the
    # call, and what the next turn holds) another: the item's text is the call's.
    events = [_CREATED, *_custom_events("SELECT 2", done="SELECT 1"), _COMPLETED]
    body = _responses_body(events)
    _, s = assemble_both(sse_server.register(body, split=split), "openai-responses", tools=TOOLS)
    (call,) = s.calls
    assert (call.arguments, call.warnings) == ("SELECT 2", ["input_mismatch"])
    assert s.outcomes[0].value == "SELECT 2"
    raw, chunks = Assembler(), Assembler()
    raw.feed_sse(body)
    for event in events:
        chunks.feed_chunk({**event, "sequence_number": events.index(event)})
    told = [(kind, message) for kind, _, message in raw.stream_errors()]
    assert told == [(kind, message) for kind, _, message in chunks.stream_errors()]
    assert told == [
        (
            "arguments_mismatch",
            "final input of the custom tool call at output_index 0 differs from its "
            "custom_tool_call_input.done: the finished item's was kept",
        )
    ]
    assert [c.arguments for c in chunks.finish()] == [c.arguments for c in raw.finish()]


def test_a_finished_item_that_agrees_tells_nothing() -> None:
    raw = Assembler()
    raw.feed_sse(_responses_body([_CREATED, *_custom_events("SELECT 1"), _COMPLETED]))
    (call,) = raw.finish()
    assert (call.arguments, call.warnings, raw.stream_errors()) == ("SELECT 1", [], [])


# ---------------------------------------------------------------------------------------------
# Chat Completions


def _chat_custom(index: int, *, call_id: str | None = None, **custom: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "custom": custom}
    if call_id is not None:
        entry.update(id=call_id, type="custom")
    return chat_chunk({"tool_calls": [entry]})


def _chat_events(parts: list[str], *, name: str = "run_sql") -> list[dict[str, Any]]:
    function = {"name": "lookup", "arguments": '{"q": 1}'}
    return [
        chat_chunk({"role": "assistant", "content": None}),
        _chat_custom(0, call_id="call_sql", name=name, input=""),
        *[_chat_custom(0, input=part) for part in parts],
        chat_chunk(
            {"tool_calls": [{"index": 1, "id": "call_f", "type": "function", "function": function}]}
        ),
        chat_chunk({}, finish_reason="tool_calls"),
    ]


def _cut(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_a_chat_custom_tool_call_is_assembled_run_and_sent_back(
    sse_server: SSEServer, split: str
) -> None:
    route = sse_server.register(sse_body(_chat_events(_cut(INPUT, 5)), "openai-chat"), split=split)
    _, s = assemble_both(route, "openai-chat", tools=TOOLS)
    custom, function = s.calls
    assert (custom.name, custom.id, custom.type, custom.arguments, custom.metadata) == (
        "run_sql",
        "call_sql",
        "custom",
        INPUT,
        {},
    )
    assert function.ok and function.value == {"q": 1}
    assert [(o.ok, o.value) for o in s.outcomes] == [(True, INPUT), (True, {"q": 1})]
    executor = _executor()
    results = [executor.execute(o) for o in s.outcomes]
    assert tool_messages(s.calls, results, style="openai-chat") == [
        {
            "role": "tool",
            "tool_call_id": "call_sql",
            "content": json.dumps(
                {"ok": True, "result": f"ran {INPUT}"}, separators=(",", ":"), ensure_ascii=False
            ),
        },
        {"role": "tool", "tool_call_id": "call_f", "content": '{"ok":true,"result":{"found":1}}'},
    ]
    (turn,) = assistant_turn(s.calls, style="openai-chat")
    assert turn["tool_calls"] == [
        {"id": "call_sql", "type": "custom", "custom": {"name": "run_sql", "input": INPUT}},
        {
            "id": "call_f",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": 1}'},
        },
    ]


def test_chat_custom_input_pieces_are_joined_as_sent() -> None:
    # Pieces that repeat or extend the text before them are more free text, not a JSON
    # provider's resend: "a", "a" is "aa"; "SELECT", "SELECT 1" is both.
    for parts in (["a", "a"], ["SELECT", "SELECT 1"], ['"x"', " y"], ["{}", "{}"]):
        for feed in ("sse", "chunk"):
            asm = Assembler(tools=TOOLS)
            events = _chat_events(parts)
            if feed == "sse":
                asm.feed_sse(sse_body(events, "openai-chat"))
            else:
                for event in events:
                    asm.feed_chunk(event)
            custom, _ = asm.finish()
            assert (custom.arguments, custom.warnings) == ("".join(parts), []), (parts, feed)


@pytest.mark.parametrize(
    ("parts", "want"),
    [
        (["a\ud83d b"], "a\ufffd b"),
        (["SELECT \ud83d", "\ude00"], "SELECT \U0001f600"),
        (["SELECT \ud83d", "1"], "SELECT \ufffd1"),
        (["SELECT \udc00", "x\ud83d"], "SELECT \ufffdx\ufffd"),
    ],
)
def test_a_chat_custom_input_s_unpaired_surrogate_reads_as_a_responses_one(
    sse_server: SSEServer, split: str, parts: list[str], want: str
) -> None:
    # Free-form text, not JSON: an unpaired half is U+FFFD with `replacement_character`, as a
    # Responses custom call's input gives it, on every Chat path (the SDK, `feed_chunk` on the
    # dicts, `feed_sse` however the bytes are cut); a pair split between chunks is joined.
    # Both Chat paths kept the half's `\uXXXX` escape as typed text.
    warnings = ["replacement_character"] if "\ufffd" in want else []
    events = _chat_events(parts)
    route = sse_server.register(sse_body(events, "openai-chat"), split=split)
    _, stream = assemble_both(route, "openai-chat", tools=TOOLS)
    chunks = Assembler(tools=TOOLS)
    for event in events:
        chunks.feed_chunk(event)
    for calls in (stream.calls, chunks.finish()):
        assert [(c.arguments, c.warnings) for c in calls] == [(want, warnings), ('{"q": 1}', [])]
    responses = Assembler(tools=TOOLS)
    responses.feed_sse(_responses_body([_CREATED, *_custom_events("".join(parts)), _COMPLETED]))
    assert [(c.arguments, c.warnings) for c in responses.finish()] == [(want, warnings)]


def test_a_chat_custom_call_to_a_json_tool_is_a_typed_error(sse_server: SSEServer) -> None:
    route = sse_server.register(sse_body(_chat_events(["{}"], name="lookup"), "openai-chat"))
    _, s = assemble_both(route, "openai-chat", tools=TOOLS)
    assert [(o.ok, o.error_type) for o in s.outcomes] == [(False, "wrong_tool_type"), (True, "")]


# ---------------------------------------------------------------------------------------------
# The toolset


def test_custom_tools_are_exported_in_each_api_shape() -> None:
    assert TOOLS.names() == ["lookup"]
    assert TOOLS.custom_names() == ["run_sql"]
    assert TOOLS.responses()[1] == SQL
    assert TOOLS.openai()[1] == {
        "type": "custom",
        "custom": {
            "name": "run_sql",
            "description": "Run one SQL query",
            "format": {
                "type": "grammar",
                "grammar": {"definition": "start: /SELECT .+/s", "syntax": "lark"},
            },
        },
    }
    # The Chat shape registers the same tool; a tool without a format takes plain text.
    assert Toolset([TOOLS.openai()[1]]).responses() == [SQL]
    bare = Toolset([{"type": "custom", "name": "note"}])
    assert bare.responses() == [{"type": "custom", "name": "note", "format": {"type": "text"}}]
    with pytest.raises(ValueError, match="only OpenAI"):
        TOOLS.anthropic()


@pytest.mark.parametrize(
    ("definition", "match"),
    [
        ({"type": "custom"}, "needs a string 'name'"),
        ({**SQL, "format": {"type": "json"}}, "'text' or 'grammar'"),
        ({**SQL, "format": {"type": "grammar", "syntax": "pcre", "definition": "x"}}, "syntax"),
        ({**SQL, "format": {"type": "grammar", "syntax": "lark"}}, "definition"),
        ({**SQL, "name": "lookup"}, "duplicate tool name"),
        ({**SQL, "name": "bad name"}, "invalid tool name"),
    ],
)
def test_a_malformed_custom_tool_is_refused_at_registration(
    definition: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        Toolset([LOOKUP, definition])


def test_a_custom_tool_cannot_be_run_unpacked() -> None:
    asm = Assembler(tools=TOOLS)
    for event in _chat_events(["SELECT 1"]):
        asm.feed_chunk(event)
    outcome = TOOLS.validate(asm.finish()[0])
    executor = Executor({"run_sql": lambda sql: sql}, breaker=False)
    executor.register("run_sql", lambda **fields: fields, unpack=True)
    result = executor.execute(outcome)
    assert result.attempts == 0 and result.error is not None
    assert result.error["type"] == "bad_signature"


# ---------------------------------------------------------------------------------------------
# Split anywhere

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)


def _key(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (c.index, c.name, c.id, c.type, c.arguments, c.warnings, c.error.kind if c.error else None)
        for c in calls
    ]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(_TEXT, max_size=6), data=st.data())
def test_property_chat_custom_input_split_anywhere_reads_alike(
    sse_server: SSEServer, parts: list[str], data: st.DataObject
) -> None:
    # Any input in any pieces, the body cut anywhere: the real SDK, SDK-shaped dicts and
    # `feed_sse` give the same calls, the input joined as sent.
    events = _chat_events(parts)
    body = sse_body(events, "openai-chat")
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body)), max_size=12))))
    _, stream = assemble_sync(sse_server.register(body, split=[*cuts, len(body)]), "openai-chat")
    raw = Assembler()
    for piece in pieces(body, cuts):
        raw.feed_sse(piece)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    calls = raw.finish()
    assert _key(stream.calls) == _key(calls) == _key(dicts.finish())
    assert (calls[0].type, calls[0].arguments) == ("custom", "".join(parts))


@settings(max_examples=30, deadline=None)
@given(done=_TEXT, final=_TEXT, data=st.data())
def test_property_responses_final_input_wins_split_anywhere(
    done: str, final: str, data: st.DataObject
) -> None:
    events = [_CREATED, *_custom_events(final, done=done), _COMPLETED]
    body = _responses_body(events)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body)), max_size=12))))
    raw = Assembler()
    for piece in pieces(body, cuts):
        raw.feed_sse(piece)
    (call,) = raw.finish()
    assert call.arguments == final
    assert ("input_mismatch" in call.warnings) == (done != final)
    assert len(raw.stream_errors()) == (done != final)


@pytest.mark.parametrize("name", ["run_sq1", ""])
def test_a_function_call_to_no_tool_lists_the_custom_tools_too(
    sse_server: SSEServer, name: str
) -> None:
    # The payload for a call to no tool (a name the model got wrong, or none) lists the tools
    # to call instead: the custom ones are tools the model may call too, and a toolset of
    # custom tools alone listed none ("Available tools: .").
    events = [_CREATED, *_function_events(name=name), _COMPLETED]
    for tools, listed in (
        (TOOLS, '"lookup", "run_sql"'),
        (Toolset([SQL]), '"run_sql"'),
    ):
        _, s = assemble_sync(
            sse_server.register(_responses_body(events)), "openai-responses", tools=tools
        )
        (outcome,) = s.outcomes
        assert outcome.error_type == ("unknown_tool" if name else "missing_name")
        assert (outcome.message or "").endswith(f"Available tools: {listed}.")
        # The executor sends the same list back.
        (result,) = _executor().execute_all(s.outcomes)
        (message,) = tool_messages(s.calls, [result], style="openai-responses")
        assert f"Available tools: {listed}." in json.loads(message["output"])["error"]["message"]
