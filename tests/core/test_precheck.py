"""The schema pre-check through the public API: violations reported at the first byte no
continuation can fix, identical for every split, never for a valid call."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from tests.conftest import Splitter
from toolwire import Assembler, MisuseError, ToolRegistry

TICKET: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "maxLength": 40},
        "priority": {"type": "string", "enum": ["low", "high"]},
        "assignee": {"type": ["string", "null"], "pattern": "^u_[0-9a-f]{8}$"},
        "days": {"type": "integer", "minimum": 1, "maximum": 30},
        "amount": {"type": "number", "multipleOf": 0.01},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
    "required": ["title", "priority"],
    "additionalProperties": False,
}
REGISTRY = ToolRegistry({"create_ticket": TICKET, "lookup_order": {"type": "object"}})


def run(text: str, splitter: Splitter, name: str = "create_ticket") -> tuple[Any, list[Any]]:
    a = Assembler(tools=REGISTRY)
    early: list[Any] = []
    first = True
    for piece in splitter(text.encode()):
        a.feed(0, id="c1", name=name if first else None, arguments=piece)
        first = False
        early.extend(e for _, e in a.drain_errors())
    (call,) = a.finish()
    return call, early


def test_valid_call_has_no_error(splitter: Splitter) -> None:
    text = '{"title": "Printer", "priority": "high", "amount": 19.99, "tags": ["a"]}'
    call, early = run(text, splitter)
    assert call.error is None and early == []
    assert call.value["amount"] == 19.99


def at(text: str, marker: str, shift: int = 0) -> tuple[str, int]:
    """The text and the offset of `marker` in it (plus `shift`)."""
    return text, text.index(marker) + shift


@pytest.mark.parametrize(
    ("case", "keyword", "path"),
    [
        # An enum string fails at its first byte no allowed value starts with.
        (at('{"title": "x", "priority": "urgent"}', "urgent"), "enum", "/priority"),
        # An unknown key fails at its first byte no allowed key starts with.
        (
            at('{"title": "x", "priority": "low", "colour": 1}', "colour"),
            "additionalProperties",
            "/colour",
        ),
        # A wrong type fails at the value's first byte.
        (at('{"title": 5, "priority": "low"}', "5"), "type", "/title"),
        # Integer or not, bounds and multipleOf are known when the number ends.
        (at('{"title": "x", "priority": "low", "days": 3.5}', "}"), "type", "/days"),
        (at('{"title": "x", "priority": "low", "days": 31}', "}"), "maximum", "/days"),
        (at('{"title": "x", "priority": "low", "amount": 1.005}', "}"), "multipleOf", "/amount"),
        # A pattern is known at the closing quote.
        (at('{"title": "x", "priority": "low", "assignee": "bob"}', '"}'), "pattern", "/assignee"),
        # maxItems fails when the extra element starts.
        (
            at('{"title": "x", "priority": "low", "tags": ["a", "b", "c"]}', '"c"'),
            "maxItems",
            "/tags",
        ),
        # required is known when the object closes.
        (at('{"title": "x"}', "}"), "required", "/priority"),
    ],
)
def test_violation_is_reported_early_at_a_stable_offset(
    case: tuple[str, int], keyword: str, path: str, splitter: Splitter
) -> None:
    text, offset = case
    call, early = run(text, splitter)
    assert call.error is not None
    assert (call.error.kind, call.error.keyword, call.error.path, call.error.offset) == (
        "schema_violation",
        keyword,
        path,
        offset,
    )
    assert early, "the violation is known before finish()"
    assert (early[0].kind, early[0].keyword, early[0].offset) == (
        "schema_violation",
        keyword,
        offset,
    )
    assert call.value is not None, "the JSON itself was complete"


def test_enum_error_names_the_allowed_values(splitter: Splitter) -> None:
    call, _ = run('{"title": "x", "priority": "High"}', splitter)
    assert call.error is not None
    assert call.error.expected is not None and '"low"' in call.error.expected
    assert call.error.got == "High"


def test_unknown_tool_is_reported_as_soon_as_no_name_can_match(splitter: Splitter) -> None:
    call, early = run('{"a": 1}', splitter, name="create_tic_ket")
    assert call.error is not None and call.error.kind == "unknown_tool"
    assert early and early[0].kind == "unknown_tool"
    assert call.error.expected is not None and "create_ticket" in call.error.expected


def test_name_after_arguments_still_gets_checked() -> None:
    a = Assembler(tools=REGISTRY)
    a.feed(0, arguments='{"title": "x", "priority": "meh"}')
    a.feed(0, id="c1", name="create_ticket")
    (call,) = a.finish()
    assert call.error is not None and call.error.keyword == "enum"


def test_failed_flag_signals_a_certain_error_early() -> None:
    a = Assembler(tools=REGISTRY)
    a.feed(0, name="create_ticket", arguments='{"title": "x", "colour"')
    assert a.failed
    a.feed(0, arguments=': 1, "priority": "low"}')
    (call,) = a.finish()
    assert call.error is not None and call.error.keyword == "additionalProperties"


def test_empty_arguments_are_checked_as_an_empty_object() -> None:
    a = Assembler(tools=REGISTRY)
    a.feed(0, name="create_ticket")
    (call,) = a.finish()
    assert call.error is not None and call.error.keyword == "required"


def test_registry_reports_unsupported_keywords() -> None:
    reg = ToolRegistry({"t": {"type": "object", "not": {"required": ["a"]}}})
    assert ("t", "not", "") in reg.unsupported
    assert reg.names() == ["t"]
    with pytest.raises(MisuseError):
        ToolRegistry({"t": "{not json"})


@pytest.mark.parametrize("when", ["before_finish", "after_finish"])
def test_a_possible_resend_that_breaks_both_readings_fails_early(when: str) -> None:
    # `{"b": ` then `{"b": 1}`: the second fragment could be a cumulative resend or an ordinary
    # continuation, so it waits for the next fragment to decide. Either way `b` is no array:
    # the call is certain to fail now and `failed` must not wait for the decision. The two
    # readings break differently (an object, a number), so no error is drained until one is
    # picked: one from the reading a later fragment drops would be an error the call never has.
    registry = ToolRegistry({"t": {"type": "object", "properties": {"b": {"type": "array"}}}})
    a = Assembler(tools=registry)
    a.feed(0, id="c1", name="t", arguments='{"b": ')
    a.feed(0, arguments='{"b": 1}')
    if when == "after_finish":
        [call] = a.finish()
        assert call.error is not None and call.error.path == "/b"
        return
    assert a.failed
    assert a.drain_errors() == []
    [call] = a.finish()
    # Decided at the end: only the resend reading is one complete value.
    assert call.arguments == '{"b": 1}'
    assert call.error is not None and (call.error.kind, call.error.path) == (
        "schema_violation",
        "/b",
    )


def test_an_early_error_of_a_dropped_reading_is_never_drained() -> None:
    # As above, then the next fragment extends the held one: a cumulative stream, whose text
    # is `{"b": 1} `. Only that text's errors are drained, never the appended reading's.
    registry = ToolRegistry({"t": {"type": "object", "properties": {"b": {"type": "array"}}}})
    a = Assembler(tools=registry)
    drained: list[tuple[str, str, str]] = []
    for fragment in ('{"b": ', '{"b": 1}', '{"b": 1} '):
        a.feed(0, id="c1", name="t", arguments=fragment)
        drained += [(e.kind, e.path, e.message) for _, e in a.drain_errors()]
    [call] = a.finish()
    assert call.arguments == '{"b": 1} '
    assert all("object" not in message for _, _, message in drained), drained
    assert ("schema_violation", "/b") in [(k, p) for k, p, _ in drained]


def test_a_fragment_that_breaks_the_resend_reading_is_plain_text() -> None:
    # `{"b": ` then `{"b": 1}}`: read as a resend, the text has a `}` too many, so it is no
    # resend (as a later fragment that broke that reading would show): the text is appended,
    # and its error is drained at once.
    registry = ToolRegistry({"t": {"type": "object", "properties": {"b": {"type": "array"}}}})
    a = Assembler(tools=registry)
    a.feed(0, id="c1", name="t", arguments='{"b": ')
    a.feed(0, arguments='{"b": 1}}')
    assert a.failed
    assert [(e.kind, e.path) for _, e in a.drain_errors()] == [("schema_violation", "/b")]
    [call] = a.finish()
    assert call.arguments == '{"b": {"b": 1}}'


def test_errors_do_not_wait_for_a_resend_reading_the_fragment_already_broke() -> None:
    # Cut right after `{"node": `, the next fragment starts with the text so far, so it may be
    # a resend; but its `}}` and the text after break that reading at once. Its errors were
    # held until `finish`, where a cut a byte earlier drained them while streaming.
    node = {"node": {"type": "object"}, "limit": {"type": "integer"}}
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "node": {"type": "object", "additionalProperties": False, "properties": node}
        },
    }
    registry = ToolRegistry({"walk": schema})
    text = '{"node": {"node": 5, "limit": "ten"}, "padding": "' + "x" * 200 + '"}'

    def drained(cut: int) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
        a = Assembler(tools=registry)
        streaming: list[tuple[str, int]] = []
        for k, piece in enumerate((text[:cut], text[cut:])):
            a.feed(0, id="c1", name="walk" if k == 0 else None, arguments=piece)
            streaming += [(e.path, e.offset) for _, e in a.drain_errors()]
        a.finish()
        return streaming, [(e.path, e.offset) for _, e in a.drain_errors()]

    want = ([("/node/node", 18), ("/node/limit", 30), ("/padding", 39)], [])
    assert drained(7) == want
    assert drained(9) == want


@pytest.mark.parametrize(
    "pieces",
    [['  {"unit": "kelvin"}'], [" ", ' {"unit": "kelvin"}'], ["\n", '\n{"unit": "kelvin"}', ""]],
)
def test_a_violation_in_a_last_fragment_that_could_be_a_resend_is_an_event(
    pieces: list[str],
) -> None:
    # The last fragment starts with all the text before it: whether it is a resend is decided
    # only at the end, and the violation it carries is a `PrecheckError` then, before the call
    # completes, as for any other cut of the same text.
    from toolwire import CallCompleted, PrecheckError, Toolset, assemble

    tools = Toolset(
        [
            {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"unit": {"enum": ["celsius", "fahrenheit"]}},
                },
            }
        ]
    )

    def chunks() -> Any:
        for i, piece in enumerate(pieces):
            call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
            if i == 0:
                call.update(id="c1", type="function")
                call["function"]["name"] = "get_weather"
            delta = {"tool_calls": [call]}
            yield {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
        done = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
        yield {"object": "chat.completion.chunk", "choices": [done]}

    with assemble(chunks(), tools) as stream:
        events = list(stream)
    kinds = [type(e).__name__ for e in events if isinstance(e, PrecheckError | CallCompleted)]
    assert kinds == ["PrecheckError", "CallCompleted"]
    (error,) = [e.error for e in events if isinstance(e, PrecheckError)]
    assert (error.kind, error.path) == ("schema_violation", "/unit")


def test_failed_stays_true_after_finish() -> None:
    # The fail-fast signal read after `finish` said no failure once the calls were handed over.
    a = Assembler(tools=ToolRegistry({"f": {"type": "object", "additionalProperties": False}}))
    a.feed(0, id="c1", name="f", arguments='{"x": 1}')
    assert a.failed
    (call,) = a.finish()
    assert call.error is not None and a.failed
    b = Assembler()
    b.feed(0, id="c1", name="f", arguments="{}")
    b.finish()
    assert not b.failed


def test_secrets_of_a_tool_that_is_not_there_are_refused() -> None:
    # A misspelt tool name was taken without a word, and the tool meant showed its secret
    # values in every violation's `got`.
    schema = {"type": "object", "properties": {"pin": {"type": "string", "maxLength": 4}}}
    with pytest.raises(MisuseError, match='secrets names no tool: "trasfer"'):
        ToolRegistry({"transfer": schema}, secrets={"trasfer": ["/pin"]})
    registry = ToolRegistry({"transfer": schema}, secrets={"transfer": ["/pin"]})
    error = registry.check("transfer", b'{"pin": "123456"}')
    assert error is not None and error.got == "[redacted]"


BIG = 12345678901234567890  # past 2**53: its neighbours share its nearest double


@pytest.mark.parametrize(
    ("rule", "written"),
    [
        ({"const": BIG}, "12345678901234567891"),
        ({"const": BIG}, "12345678901234567890"),
        ({"const": BIG}, "12345678901234567891.0"),
        ({"const": BIG}, "1.2345678901234567e19"),
        ({"enum": [BIG, "a"]}, "12345678901234567891"),
        ({"enum": [[BIG]]}, "[12345678901234567891]"),
        ({"enum": [[BIG]]}, "[12345678901234567890]"),
        ({"type": "integer", "maximum": 2**53}, "9007199254740993"),
        ({"type": "integer", "minimum": 2**53 + 1}, "9007199254740992"),
        ({"type": "integer", "exclusiveMaximum": 2**53 + 1}, "9007199254740993"),
        ({"type": "integer", "multipleOf": 3}, "9007199254740995"),
        ({"oneOf": [{"const": BIG}, {"type": "number", "multipleOf": 0.5}]}, f"{BIG}.0"),
        ({"oneOf": [{"const": BIG}, {"type": "number", "multipleOf": 0.5}]}, f"{BIG}"),
    ],
)
def test_integers_past_a_doubles_precision_are_judged_as_jsonschema_judges_them(
    rule: dict[str, Any], written: str, splitter: Splitter
) -> None:
    # Python reads an integer as an exact `int`: `...891` is no `...890` there, though both
    # are the same float; a float written for it is the float Python reads.
    schema = {"type": "object", "properties": {"x": rule}}
    text = f'{{"x": {written}}}'
    a = Assembler(tools=ToolRegistry({"t": schema}))
    for i, piece in enumerate(splitter(text.encode())):
        a.feed(0, id="c1", name="t" if i == 0 else None, arguments=piece)
    (call,) = a.finish()
    valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
    assert (call.error is None) == valid, call.error
