"""Result messages: secrets kept out of every message built for the model, user-supplied
values asked of the user, ids that answer the calls they belong to, and the assistant turn."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import pytest
from pydantic import BaseModel, Field, SecretStr, TypeAdapter

from tests.test_payloads import calls, content_of, id_of
from toolwire import Assembler, Executor, MisuseError, ToolCall, assistant_turn
from toolwire.execution import NeedsClarification
from toolwire.payloads import (
    MAX_RESULT_CHARS,
    NAMELESS_CALL,
    STYLES,
    Style,
    call_id_for,
    tool_messages,
    wrap_message,
)
from toolwire.repair import Escalation, Proceed, RepairPolicy
from toolwire.toolset import Toolset
from toolwire.validation import BusinessRuleError, Outcome


class Login(BaseModel):
    """Log in."""

    user: str
    password: SecretStr


CHARGE = {
    "name": "charge",
    "description": "Charge a card.",
    "parameters": {
        "type": "object",
        "properties": {"card": {"type": "string", "x-secret": True}, "amount": {"type": "integer"}},
        "required": ["card", "amount"],
    },
}
PASSWORD = "hunter2-secret"
CARD = "4111111111111111"


def _login_and_charge() -> list[ToolCall]:
    return calls(
        ("c1", "login", json.dumps({"user": "ada", "password": PASSWORD})),
        ("c2", "charge", json.dumps({"card": CARD, "amount": 5})),
    )


def _rejections() -> list[BusinessRuleError]:
    # A tool that quotes the value it refused, as `str(exc)` of a downstream error often does.
    return [
        BusinessRuleError(f"password {PASSWORD!r} has expired"),
        BusinessRuleError(f"card {CARD} was declined", f"retry with a card other than {CARD}"),
    ]


# ---------------------------------------------------------------------------------------------
# Secrets


@pytest.mark.parametrize("style", STYLES)
def test_tool_messages_hides_the_secrets_a_business_rule_error_quotes(style: Style) -> None:
    tools = Toolset([Login, CHARGE])
    made = _login_and_charge()
    messages = tool_messages(made, _rejections(), style=style, toolset=tools)
    for message in messages:
        content = content_of(message)
        assert PASSWORD not in content and CARD not in content
        assert "[redacted]" in content
        assert json.loads(content)["error_type"] == "business_rule"


@pytest.mark.parametrize("style", STYLES)
def test_outcome_and_proceed_hide_the_secrets_a_business_rule_error_quotes(style: Style) -> None:
    tools = Toolset([Login, CHARGE])
    made = _login_and_charge()
    outcomes = tools.validate_all(made)
    decisions = RepairPolicy().decide_turn(outcomes)
    rows = zip(made, outcomes, decisions, _rejections(), strict=True)
    for call, outcome, decision, error in rows:
        assert isinstance(decision, Proceed)
        for message in (
            outcome.to_message(call, style, result=error),
            decision.to_message(call, style, result=error),
        ):
            content = content_of(message)
            assert PASSWORD not in content and CARD not in content
            assert "was declined" in content or "has expired" in content


def test_tool_messages_applies_the_toolsets_redaction_hook_to_what_a_tool_quotes() -> None:
    def hook(path: str, text: str) -> str:
        return "[account]" if path == "/user" else text

    tools = Toolset([Login, CHARGE], redact=hook)
    made = _login_and_charge()
    locked = BusinessRuleError("user ada is locked")
    (message, _) = tool_messages(made, [locked, "ok"], toolset=tools)
    said = json.loads(message["content"])["message"]
    assert said == "The request was rejected: user [account] is locked"


def test_the_executor_and_an_escalation_hide_the_secrets_they_quote() -> None:
    # The executor's payload and a check's rejection escalated by the policy were already
    # scrubbed; kept here beside the paths above so that every way to the model is covered.
    def check(args: Any) -> str:
        return f"card {args['card']} is blocked"

    tools = Toolset([CHARGE], checks={"charge": check})
    (call,) = calls(("c2", "charge", json.dumps({"card": CARD, "amount": 5})))
    decision = RepairPolicy().decide(tools.validate(call))
    assert isinstance(decision, Escalation)
    for style in STYLES:
        assert CARD not in content_of(decision.to_message(call, style))
    assert CARD not in decision.question

    def charge(args: Any) -> None:
        raise BusinessRuleError(f"card {args['card']} was declined")

    result = Executor({"charge": charge}, breaker=False).execute(Toolset([CHARGE]).validate(call))
    for style in STYLES:
        (message,) = tool_messages([call], [result], style=style)
        assert CARD not in content_of(message)


# ---------------------------------------------------------------------------------------------
# x-user-supplied


class Transfer(BaseModel):
    """Move money."""

    account: str = Field(json_schema_extra={"x-user-supplied": True})
    amount: int


class Wrapper(BaseModel):
    """A transfer inside an object."""

    transfer: Transfer


BOOK = {
    "name": "book",
    "description": "Book a table.",
    "parameters": {
        "type": "object",
        "properties": {
            "date": {"type": "string", "x-user-supplied": True},
            "seats": {"type": "integer"},
        },
        "required": ["date"],
    },
}


@pytest.mark.parametrize(
    ("name", "missing", "null", "field"),
    [
        ("transfer", '{"amount": 1}', '{"account": null, "amount": 1}', "account"),
        ("book", "{}", '{"date": null}', "date"),
        (
            "wrapper",
            '{"transfer": {"amount": 1}}',
            '{"transfer": {"account": null, "amount": 1}}',
            "transfer.account",
        ),
    ],
)
@pytest.mark.parametrize("prechecked", [False, True], ids=["plain", "prechecked"])
def test_null_for_a_user_supplied_field_asks_the_user_as_a_missing_one_does(
    name: str, missing: str, null: str, field: str, prechecked: bool
) -> None:
    tools = Toolset([Transfer, Wrapper, BOOK])
    asm = Assembler(tools=tools.registry) if prechecked else Assembler()
    asm.feed(0, id="a", name=name, arguments=missing)
    asm.feed(1, id="b", name=name, arguments=null)
    absent, given_null = tools.validate_all(asm.finish())
    assert absent.kind == "needs_clarification" and absent.ask_user == [field]
    assert given_null.kind == "needs_clarification", given_null
    assert given_null.ask_user == [field] and not given_null.retryable
    assert given_null.errors[0].hint == absent.errors[0].hint
    decision = RepairPolicy().decide(given_null)
    assert isinstance(decision, Escalation) and decision.reason == "needs_clarification"


def test_null_for_a_user_supplied_field_is_asked_first_among_other_errors() -> None:
    tools = Toolset([BOOK])
    (call,) = calls(("a", "book", '{"date": null, "seats": "four"}'))
    outcome = tools.validate(call)
    assert outcome.kind == "needs_clarification" and outcome.ask_user == ["date"]
    assert [e.path for e in outcome.errors] == ["/date", "/seats"]


def test_null_where_a_user_supplied_field_allows_it_is_a_value() -> None:
    optional = {
        "name": "note",
        "description": "Note.",
        "parameters": {
            "type": "object",
            "properties": {"date": {"type": ["string", "null"], "x-user-supplied": True}},
            "required": ["date"],
        },
    }
    (call,) = calls(("a", "note", '{"date": null}'))
    assert Toolset([optional]).validate(call).ok


# ---------------------------------------------------------------------------------------------
# Calls without an id

PING = {
    "name": "ping",
    "description": "Ping.",
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
}


def _pings(count: int) -> list[ToolCall]:
    return calls(*[(None, "ping", json.dumps({"n": n})) for n in range(count)])


@pytest.mark.parametrize("style", STYLES)
def test_executor_results_of_calls_without_an_id_answer_their_own_calls(style: Style) -> None:
    # Gemini sends no ids: results gathered as they completed were paired by position, so a
    # call got another call's result.
    made = _pings(3)
    outcomes = Toolset([PING]).validate_all(made)
    executor = Executor({"ping": lambda args: {"n": args["n"]}}, breaker=False)
    results = [executor.execute(outcome) for outcome in outcomes]
    answers = [call_id_for(call) for call in made]
    assert [o.synthetic_id for o in outcomes] == [r.synthetic_id for r in results] == answers
    assert all(r.call_id is None for r in results)  # the provider's id stays what it was
    messages = tool_messages(made, list(reversed(results)), style=style)
    assert [json.loads(content_of(m))["result"]["n"] for m in messages] == [0, 1, 2]
    if style != "gemini":  # Gemini is answered by name: it never saw toolwire's ids
        assert [id_of(m) for m in messages] == answers
    with pytest.raises(MisuseError, match="toolwire_2"):
        tool_messages(made[:2], results)
    first = outcomes[0]
    assert first.to_message(None, style, result=1) == first.to_message(made[0], style, result=1)
    with pytest.raises(MisuseError, match="'toolwire_0' does not answer call 'toolwire_1'"):
        first.to_message(made[1], style, result=1)
    with pytest.raises(MisuseError, match="'toolwire_0' does not answer call 'toolwire_1'"):
        first.to_message(made[1], style, result=results[0])


# ---------------------------------------------------------------------------------------------
# Bedrock's status


def _bedrock_request_errors(messages: list[dict[str, Any]]) -> str:
    """What botocore's own validator finds wrong in a Converse request of these messages."""
    from botocore.session import get_session
    from botocore.validate import ParamValidator

    shape = get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    request = {"modelId": "m", "messages": messages}
    report = ParamValidator().validate(request, shape.input_shape)
    return report.generate_report() if report.has_errors() else ""


def test_bedrock_results_leave_out_status_for_models_that_do_not_take_it() -> None:
    # `status` was sent for every model; AWS documents it for Claude and Nova only.
    tools = Toolset([Login, CHARGE])
    ok_call, bad_call = calls(
        ("c1", "charge", json.dumps({"card": CARD, "amount": 5})),
        ("c2", "charge", '{"card": 1}'),
    )
    good, bad = tools.validate_all([ok_call, bad_call])
    policy = RepairPolicy(max_rounds=0)
    proceed, escalation = policy.decide(good), policy.decide(bad)
    retry = RepairPolicy().decide(tools.validate(bad_call))
    assert isinstance(proceed, Proceed) and isinstance(escalation, Escalation)
    assert not isinstance(retry, (Proceed, Escalation))
    style: Style = "bedrock-converse"
    listed = tool_messages([ok_call, bad_call], ["paid", bad], style=style, bedrock_status=False)
    made = [
        *listed,
        good.to_message(ok_call, style, result="paid", bedrock_status=False),
        proceed.to_message(ok_call, style, result="paid", bedrock_status=False),
        bad.to_message(bad_call, style, bedrock_status=False),
        retry.to_message(bad_call, style, bedrock_status=False),
        escalation.to_message(bad_call, style, bedrock_status=False),
    ]
    assert all("status" not in m["toolResult"] for m in made)
    assert _bedrock_request_errors([{"role": "user", "content": made}]) == ""
    # A failure is still told apart, by its content.
    said = [content_of(m) for m in made]
    assert said[0] == said[2] == said[3] == "paid"
    assert all(json.loads(text)["ok"] is False for text in [said[1], *said[4:]])
    # The default keeps it, for Claude and Nova.
    kept = tool_messages([ok_call, bad_call], ["paid", bad], style=style)
    assert [m["toolResult"]["status"] for m in kept] == ["success", "error"]
    assert _bedrock_request_errors([{"role": "user", "content": kept}]) == ""


# ---------------------------------------------------------------------------------------------
# Gemini: a call without a name


def test_a_gemini_call_without_a_name_is_answered_with_text_not_a_nameless_response() -> None:
    # It was answered with `functionResponse.name: ""`, which names no function the model
    # called: Gemini pairs responses with calls by name.
    from google.genai import types

    tools = Toolset([PING])
    nameless, named = calls((None, None, '{"n": 1}'), (None, "ping", '{"n": 2}'))
    outcomes = tools.validate_all([nameless, named])
    assert outcomes[0].error_type == "missing_name"
    parts = tool_messages([nameless, named], [outcomes[0], "pong"], style="gemini")
    content = types.Content.model_validate({"role": "user", "parts": parts})
    (text_part, response_part) = content.parts or []
    assert text_part.function_response is None and text_part.text is not None
    assert json.loads(text_part.text)["error_type"] == "missing_name"
    assert response_part.function_response is not None
    assert response_part.function_response.name == "ping"
    # Every path that answers it says the same.
    assert outcomes[0].to_message(nameless, "gemini") == parts[0]
    assert outcomes[0].to_message(None, "gemini") == parts[0]
    retry = RepairPolicy().decide(outcomes[0])
    escalation = RepairPolicy(max_rounds=0).decide(outcomes[0])
    assert not isinstance(retry, (Proceed, Escalation)) and isinstance(escalation, Escalation)
    assert retry.to_message(nameless, "gemini") == parts[0]
    assert set(escalation.to_message(nameless, "gemini")) == {"text"}


# ---------------------------------------------------------------------------------------------
# The assistant turn


def _materialised(value: Any) -> Any:
    """A value a TypeAdapter of the SDK's TypedDicts gave back, its lazy iterables read."""
    if isinstance(value, dict):
        return {k: _materialised(v) for k, v in cast(dict[str, Any], value).items()}
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return value
    return [_materialised(v) for v in cast(Iterable[Any], value)]


def _taken_by_typed_dict(kind: Any, given: Any) -> None:
    """`given` validates as the SDK's request type, every key one it declares (its
    TypedDicts drop a key they do not know, so what they read must equal what was given)."""
    read = TypeAdapter(kind).validate_python(given)
    assert _materialised(read) == given


def _sdk_takes(style: Style, turn: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    """The next request's conversation, checked against the provider SDK's own types."""
    if style == "openai-chat":
        from openai.types.chat import ChatCompletionMessageParam

        user = {"role": "user", "content": "Ping them."}
        _taken_by_typed_dict(list[ChatCompletionMessageParam], [user, *turn, *results])
    elif style == "openai-responses":
        from openai.types.responses import ResponseInputParam

        user = {"role": "user", "content": "Ping them."}
        _taken_by_typed_dict(ResponseInputParam, [user, *turn, *results])
    elif style == "anthropic":
        from anthropic.types import (
            MessageParam,
            TextBlockParam,
            ToolResultBlockParam,
            ToolUseBlockParam,
        )

        user = {"role": "user", "content": "Ping them."}
        answer = {"role": "user", "content": results}
        TypeAdapter(list[MessageParam]).validate_python([user, *turn, answer])
        # Block by block: reading the message's lazy list of blocks back panics in
        # pydantic-core (a union of recursive definitions).
        (message,) = turn
        assert set(message) == {"role", "content"}
        for block in message["content"]:
            kind = TextBlockParam if block["type"] == "text" else ToolUseBlockParam
            _taken_by_typed_dict(kind, block)
        for block in results:
            _taken_by_typed_dict(ToolResultBlockParam, block)
    elif style == "gemini":
        from google.genai import types

        for content in [*turn, {"role": "user", "parts": results}]:
            types.Content.model_validate(content)  # the SDK's models forbid unknown keys
    else:
        user = {"role": "user", "content": [{"text": "Ping them."}]}
        answer = {"role": "user", "content": results}
        assert _bedrock_request_errors([user, *turn, answer]) == ""


def _turn_ids(style: Style, turn: list[dict[str, Any]]) -> list[str | None]:
    if style == "openai-chat":
        return [c["id"] for c in turn[0]["tool_calls"]]
    if style == "openai-responses":
        return [i["call_id"] for i in turn if i.get("type") == "function_call"]
    if style == "anthropic":
        return [b["id"] for b in turn[0]["content"] if b["type"] == "tool_use"]
    if style == "gemini":
        calls_made = [p["functionCall"] for p in turn[0]["parts"] if "functionCall" in p]
        return [c.get("id") for c in calls_made]
    return [b["toolUse"]["toolUseId"] for b in turn[0]["content"] if "toolUse" in b]


def _result_ids(style: Style, results: list[dict[str, Any]]) -> list[str | None]:
    if style == "gemini":
        return [m["functionResponse"].get("id") for m in results]
    return [id_of(m) for m in results]


@pytest.mark.parametrize("style", STYLES)
def test_the_assistant_turn_is_what_each_sdk_takes_under_the_ids_its_results_answer(
    style: Style,
) -> None:
    # There was no helper: the turn was rebuilt by hand, and an id that differed from the
    # one `tool_messages` answered with broke the next request.
    made = calls(
        ("call_1", "ping", '{"n": 1}'),
        (None, "ping", '{"n": 2}'),  # Gemini's: no id
        ("call_1", "ping", '{"n": 3}'),  # a repeated id, renamed by the assembler
        ("call_4", "ping", '{"n": 4, "big": 1e400'),  # cut off
    )
    assert len({call_id_for(c) for c in made}) == 4
    outcomes = Toolset([PING]).validate_all(made)
    turn = assistant_turn(made, style=style, text="Pinging.")
    results = tool_messages(made, [{"pong": 1}, {"pong": 2}, {"pong": 3}, outcomes[3]], style=style)
    _sdk_takes(style, turn, results)
    assert _turn_ids(style, turn) == _result_ids(style, results)
    if style == "gemini":
        # Gemini gets back the ids it sent, the repeated one too: it never saw the renamed.
        assert _turn_ids(style, turn) == ["call_1", None, "call_1", "call_4"]
    else:
        assert _turn_ids(style, turn) == [call_id_for(c) for c in made]


def test_the_assistant_turn_keeps_what_the_provider_needs_back() -> None:
    from google.genai import types

    asm = Assembler()
    asm.feed_chunk(
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [
                            {"text": "Let me check."},
                            {
                                "functionCall": {"name": "ping", "args": {"n": 1}},
                                "thoughtSignature": "AQJzaWc=",
                            },
                            {"functionCall": {"args": {"n": 2}}},  # no name
                        ],
                    },
                    "finishReason": "STOP",
                }
            ]
        }
    )
    signed, nameless = asm.finish()
    (turn,) = assistant_turn([signed, nameless], style="gemini", text="Let me check.")
    content = types.Content.model_validate(turn)
    parts = content.parts or []
    assert [p.text for p in parts] == ["Let me check.", None, '{"n":2}']
    assert parts[1].thought_signature == b"\x01\x02sig"
    assert parts[1].function_call is not None and parts[1].function_call.args == {"n": 1}
    # One response per function call, and the nameless call still gets its one answer.
    outcomes = Toolset([PING]).validate_all([signed, nameless])
    answers = tool_messages([signed, nameless], ["pong", outcomes[1]], style="gemini")
    assert [set(a) for a in answers] == [{"functionResponse"}, {"text"}]

    chat = Assembler()
    entry = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "ping", "arguments": "{}"},
        "extra_content": {"google": {"thought_signature": "AQJz"}},
    }
    delta = {"tool_calls": [entry]}
    chat.feed_chunk({"choices": [{"index": 0, "delta": delta, "finish_reason": "tool_calls"}]})
    (message,) = assistant_turn(chat.finish())
    assert message["tool_calls"][0]["extra_content"] == entry["extra_content"]


def test_the_assistant_turn_refuses_what_no_provider_takes() -> None:
    with pytest.raises(ValueError, match="style must be one of"):
        assistant_turn([], style="cohere")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="calls must be a list"):
        assistant_turn("ping")  # type: ignore[arg-type]
    assert all(assistant_turn([], style=style) == [] for style in STYLES)


@pytest.mark.parametrize("style", ["anthropic", "bedrock-converse"])
def test_the_assistant_turn_sends_no_blank_text_block(style: Style) -> None:
    # Both refuse a text block of white space alone ("must contain non-whitespace text").
    (message,) = assistant_turn(_pings(1), style=style, text=" \n")
    assert len(message["content"]) == 1 and "text" not in message["content"][0]


# ---------------------------------------------------------------------------------------------
# A tool's question


def test_a_tools_question_given_as_a_result_is_relayed_without_the_secrets_it_quotes() -> None:
    # `NeedsClarification` was answered as a generic `tool_failed`: the question was lost.
    tools = Toolset([CHARGE])
    (call,) = calls(("c2", "charge", json.dumps({"card": CARD, "amount": 5})))
    asked = NeedsClarification(f"Card {CARD} is blocked: which card?", missing=["card"])
    outcome = tools.validate(call)
    for message in (
        tool_messages([call], [asked], toolset=tools)[0],
        outcome.to_message(call, result=asked),
    ):
        payload = json.loads(content_of(message))
        assert payload["error_type"] == "needs_clarification"
        assert payload["message"] == "Card [redacted] is blocked: which card?"
        assert payload["instruction"].startswith("Ask the user for card.")
    plain = json.loads(tool_messages([call], [NeedsClarification("Which card?")])[0]["content"])
    assert plain["message"] == "Which card?"
    assert plain["instruction"].startswith("Put the question in message to the user.")


# ---------------------------------------------------------------------------------------------
# Calls without a name, repeated ids and verdicts: the turn and every path to a result agree

_PROVIDER_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")  # every provider's pattern for a tool name


def _turn_names(style: Style, turn: list[dict[str, Any]]) -> list[str]:
    if style == "openai-chat":
        return [c["function"]["name"] for c in turn[0]["tool_calls"]]
    if style == "openai-responses":
        return [i["name"] for i in turn if i.get("type") == "function_call"]
    if style == "anthropic":
        return [b["name"] for b in turn[0]["content"] if b["type"] == "tool_use"]
    if style == "gemini":
        return [p["functionCall"]["name"] for p in turn[0]["parts"] if "functionCall" in p]
    return [b["toolUse"]["name"] for b in turn[0]["content"] if "toolUse" in b]


def _nameless_stream() -> list[ToolCall]:
    """A Chat stream whose first call never got its name (the event that carried it was lost),
    a named call, and a call with neither a name nor an id."""
    asm = Assembler()
    deltas = [
        {"index": 0, "id": "call_a", "type": "function", "function": {"arguments": '{"n": 1}'}},
        {"index": 1, "id": "call_b", "type": "function"},
        {"index": 1, "function": {"name": "ping", "arguments": '{"n": 2}'}},
        {"index": 2, "function": {"arguments": "{}"}},
    ]
    for delta in deltas:
        chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [delta]}}]}
        asm.feed_chunk(chunk)
    asm.feed_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return asm.finish()


@pytest.mark.parametrize("style", STYLES)
def test_a_call_without_a_name_goes_back_under_a_name_its_result_answers(style: Style) -> None:
    # It went back as `name: ""`, which botocore's validator and the providers refuse.
    made = _nameless_stream()
    assert [c.name for c in made] == [None, "ping", None]
    outcomes = Toolset([PING]).validate_all(made)
    assert [o.error_type for o in outcomes] == ["missing_name", "", "missing_name"]
    turn = assistant_turn(made, style=style, text="Pinging.")
    results = tool_messages(made, [outcomes[0], "pong", outcomes[2]], style=style)
    _sdk_takes(style, turn, results)
    names = _turn_names(style, turn)
    assert all(_PROVIDER_NAME.fullmatch(name) for name in names), names
    # Every call is answered once, and says what went wrong.
    assert len(results) == 3
    said = [content_of(m) if "text" not in m else m["text"] for m in results]
    assert [json.loads(s).get("error_type") for s in said[::2]] == ["missing_name"] * 2
    if style == "gemini":
        # Paired by name: a call of no name is left out, and answered with text.
        assert names == ["ping"]
        assert [set(m) for m in results] == [{"text"}, {"functionResponse"}, {"text"}]
        assert _turn_ids(style, turn) == ["call_b"]
    else:
        assert names == [NAMELESS_CALL, "ping", NAMELESS_CALL]
        assert _turn_ids(style, turn) == _result_ids(style, results)
        assert _turn_ids(style, turn) == ["call_a", "call_b", call_id_for(made[2])]


def _gemini_repeated_id() -> list[ToolCall]:
    """Two Gemini calls under one id, the second renamed by the assembler."""
    asm = Assembler()
    parts = [
        {"functionCall": {"id": "fc1", "name": "ping", "args": {"n": 1}}},
        {"functionCall": {"id": "fc1", "name": "ping", "args": {"n": "two"}}},
    ]
    content = {"role": "model", "parts": parts}
    asm.feed_chunk({"candidates": [{"content": content, "finishReason": "STOP"}]})
    return asm.finish()


def test_gemini_gets_back_the_id_it_sent_for_a_call_whose_repeated_id_was_renamed() -> None:
    # The renamed id (`fc1_1`) went back as `functionCall.id` and `functionResponse.id`: an id
    # Gemini never sent, which pairs with none of its calls.
    from google.genai import types

    first, second = made = _gemini_repeated_id()
    assert first.id == "fc1" and second.id != "fc1"
    assert "duplicate_id" in second.warnings
    outcomes = Toolset([PING]).validate_all(made)
    assert outcomes[0].ok and not outcomes[1].ok
    turn = assistant_turn(made, style="gemini")
    retry = RepairPolicy().decide(outcomes[1])
    escalation = RepairPolicy(max_rounds=0).decide(outcomes[1])
    answers = [
        tool_messages(made, ["pong", outcomes[1]], style="gemini"),
        tool_messages(made, ["pong", retry], style="gemini"),
        tool_messages(made, ["pong", escalation], style="gemini"),
        [
            outcomes[0].to_message(first, "gemini", result="pong"),
            outcomes[1].to_message(second, "gemini"),
        ],
        [retry.to_message(second, "gemini"), escalation.to_message(second, "gemini")],
    ]
    _sdk_takes("gemini", turn, answers[0])
    assert _turn_ids("gemini", turn) == ["fc1", "fc1"]
    for results in answers:
        assert [m["functionResponse"]["id"] for m in results] == ["fc1", "fc1"]
        for message in results:
            types.Part.model_validate(message)
    # The calls are told apart by their order, which every answer keeps.
    assert content_of(answers[0][0]) == "pong"
    failed = json.loads(content_of(answers[0][1]))
    assert failed["ok"] is False and failed["errors"][0]["path"] == "/n"
    # The shapes that pair by the ids in the request itself keep them distinct.
    for style in STYLES:
        if style != "gemini":
            ids = _turn_ids(style, assistant_turn(made, style=style))
            assert (
                ids
                == ["fc1", second.id]
                == _result_ids(style, tool_messages(made, ["pong", outcomes[1]], style=style))
            )


def _verdicts() -> tuple[list[ToolCall], list[Any]]:
    """Calls (with an id, without, without a name) and one verdict of each kind on them."""
    made = calls(
        ("c1", "ping", '{"n": "one"}'),
        (None, "ping", '{"n": "two"}'),
        ("c3", None, "{}"),
        ("c4", "ping", '{"n": "four"}'),
        ("c5", "ping", '{"n": "five"}'),
    )
    outcomes = Toolset([PING]).validate_all(made)
    assert not any(o.ok for o in outcomes)
    retry = RepairPolicy().decide(outcomes[3])
    escalation = RepairPolicy(max_rounds=0).decide(outcomes[4])
    assert not isinstance(retry, (Proceed, Escalation)) and isinstance(escalation, Escalation)
    nameless = RepairPolicy(max_rounds=0).decide(outcomes[2])
    return made, [outcomes[0], RepairPolicy().decide(outcomes[1]), nameless, retry, escalation]


@pytest.mark.parametrize("cap", [None, MAX_RESULT_CHARS, 150], ids=["uncapped", "default", "small"])
@pytest.mark.parametrize("style", STYLES)
def test_tool_messages_sends_each_verdict_as_its_own_to_message(
    style: Style, cap: int | None
) -> None:
    # A `Retry` or an `Escalation` was written by `tool_messages` itself: an escalation past
    # the cap was sent whole there, and a retry's own message knew no cap but the default.
    made, verdicts = _verdicts()
    sent = tool_messages(made, verdicts, style=style, attempt=2, max_result_chars=cap)
    own = [
        v.to_message(c, style, attempt=2, max_result_chars=cap)
        if isinstance(v, Outcome)
        else v.to_message(c, style, max_result_chars=cap)
        for c, v in zip(made, verdicts, strict=True)
    ]
    assert sent == own
    _sdk_takes(style, assistant_turn(made, style=style), sent)
    said = [json.loads(content_of(m) if "text" not in m else m["text"]) for m in sent]
    assert said[0]["attempt"] == 2  # an outcome is the attempt `tool_messages` is told
    assert said[4]["error_type"] == "escalated"
    with_errors = [s for index, s in enumerate(said) if index != 2]  # a name has no field
    # Past the cap, a failure goes without its details: the escalation too.
    assert all(("errors" in s) == (cap != 150) for s in with_errors)


@pytest.mark.parametrize("style", STYLES)
def test_a_verdict_sent_without_its_call_is_the_message_sent_with_it(style: Style) -> None:
    # An `Escalation` without its call was a Gemini `text` part, the answer of a call of no
    # name: Gemini then had one response fewer than the calls of its turn.
    made, verdicts = _verdicts()
    for call, verdict in zip(made, verdicts, strict=True):
        assert verdict.to_message(None, style) == verdict.to_message(call, style)


@pytest.mark.parametrize("style", STYLES)
def test_tool_messages_writes_in_the_toolsets_language_unless_told_another(style: Style) -> None:
    # The toolset's language was ignored: a tool's exception came out in English there and in
    # Chinese through the outcome's own `to_message`.
    from toolwire.payloads import text

    tools = Toolset([PING], lang="zh")
    made = calls(("c1", "ping", '{"n": 1}'), ("c2", "ping", '{"n": 2}'))
    failed = made[0]
    outcome = tools.validate(failed)
    sent = tool_messages(made, [RuntimeError("boom")], style=style, toolset=tools)
    assert sent[0] == outcome.to_message(failed, style, result=RuntimeError("boom"))
    said = [json.loads(content_of(m)) for m in sent]
    assert said[0]["message"] == text("msg.tool_failed", "zh")
    assert said[1]["message"] == text("msg.no_result", "zh")
    english = tool_messages(made, [RuntimeError("boom")], style=style, toolset=tools, lang="en")
    assert json.loads(content_of(english[0]))["message"] == text("msg.tool_failed", "en")
    plain = tool_messages(made, [RuntimeError("boom")], style=style)
    assert json.loads(content_of(plain[1]))["message"] == text("msg.no_result", "en")
    with pytest.raises(ValueError, match="lang must be"):
        tool_messages(made, [], style=style, toolset=tools, lang=cast(Any, None))


# ---------------------------------------------------------------------------------------------
# Ids a provider refuses

_ID_LIMITS: dict[Style, tuple[int | None, str | None]] = {
    # Anthropic's pattern; Bedrock's service model (botocore checks the pattern, not the
    # length). Chat ids go as they came: the servers that send ids over OpenAI's 40
    # characters take them back, and so must find them in results of an application that
    # sends the model's turn itself.
    "anthropic": (None, r"[a-zA-Z0-9_-]+"),
    "bedrock-converse": (64, r"[a-zA-Z0-9_.:-]+"),
}


@pytest.mark.parametrize("style", STYLES)
def test_every_id_goes_as_one_the_provider_takes_and_its_results_answer(style: Style) -> None:
    # A repeated 64-character id was renamed to 66 characters, past Bedrock's 64; an
    # OpenAI-compatible server's id with a `.` or `:` went to Anthropic as it was, outside its
    # pattern. A vLLM id (46 characters) goes back to Chat as it came.
    long_id, chat_long = "a" * 64, "chatcmpl-tool-" + "b" * 32
    made = calls(
        ("call_1", "ping", '{"n": 1}'),
        ("functions.ping:0", "ping", '{"n": 2}'),
        ("functions.ping;0", "ping", '{"n": 3}'),
        (long_id, "ping", '{"n": 4}'),
        (long_id, "ping", '{"n": 5}'),  # renamed by the assembler, within 64 still
        (chat_long, "ping", '{"n": 6}'),
        (chat_long, "ping", '{"n": "seven"}'),
    )
    assert len(made[4].id or "") == 64 and "duplicate_id" in made[4].warnings
    outcomes = Toolset([PING]).validate_all(made)
    turn = assistant_turn(made, style=style, text="Pinging.")
    results = tool_messages(made, [*range(6), outcomes[6]], style=style)
    _sdk_takes(style, turn, results)
    sent = _turn_ids(style, turn)
    assert sent == _result_ids(style, results)
    # Every path to a result sends the id the turn gave its call.
    assert _result_ids(style, [outcomes[6].to_message(made[6], style)]) == [sent[6]]
    assert _result_ids(style, [outcomes[0].to_message(None, style, result=0)]) == [sent[0]]
    if style == "gemini":
        return
    assert len(set(sent)) == len(made)
    limit, pattern = _ID_LIMITS.get(style, (None, None))
    for call, given in zip(made, sent, strict=True):
        wire = call_id_for(call)
        fits = (limit is None or len(wire) <= limit) and (
            pattern is None or re.fullmatch(pattern, wire)
        )
        assert (given == wire) == bool(fits), (wire, given)
        assert given is not None
        assert limit is None or len(given) <= limit
        assert pattern is None or re.fullmatch(pattern, given)


def test_a_gemini_turn_of_nameless_calls_alone_is_a_model_turn_with_their_signature() -> None:
    # The turn was `[]`: its results then followed the user's message as a second `user`
    # content in a row, which Gemini refuses, and the signature the call carried was lost.
    from google.genai import types

    asm = Assembler()
    part = {"functionCall": {"args": {"n": 1}}, "thoughtSignature": "AQJzaWc="}
    content = {"role": "model", "parts": [part]}
    asm.feed_chunk({"candidates": [{"content": content, "finishReason": "STOP"}]})
    made = asm.finish()
    assert [c.name for c in made] == [None]
    (turn,) = assistant_turn(made, style="gemini")
    results = tool_messages(made, Toolset([PING]).validate_all(made), style="gemini")
    _sdk_takes("gemini", [turn], results)
    (sent,) = types.Content.model_validate(turn).parts or []
    assert sent.function_call is None and json.loads(sent.text or "") == {"n": 1}
    assert sent.thought_signature == b"\x01\x02sig"
    assert [set(m) for m in results] == [{"text"}]


class _Ping(BaseModel):
    n: int


def test_a_pre_checked_call_whose_repeated_id_was_renamed_carries_the_id_sent() -> None:
    # A model tool's call pre-checked by the toolset's own registry is validated on the
    # native path, which gives the outcome its own id only: a renamed call goes the general
    # way, which adds the id Gemini sent.
    tools = Toolset([_Ping])
    asm = Assembler(tools=tools)
    parts = [{"functionCall": {"id": "fc1", "name": "ping", "args": {"n": n}}} for n in (1, 2)]
    content = {"role": "model", "parts": parts}
    asm.feed_chunk({"candidates": [{"content": content, "finishReason": "STOP"}]})
    first, second = tools.validate_all(asm.finish())
    assert first.ok and second.ok
    assert (first.call_id, first.wire_id) == ("fc1", None)
    assert second.call_id != "fc1" and second.wire_id == "fc1"
    assert second.to_message(None, "gemini", result=2)["functionResponse"]["id"] == "fc1"


def test_gemini_gets_back_the_id_it_sent_from_a_verdict_sent_without_its_call() -> None:
    # Without the call, the outcome knew only the renamed id (`fc1_1`), which went back as
    # `functionResponse.id`: an id Gemini never sent.
    first, second = made = _gemini_repeated_id()
    outcomes = Toolset([PING]).validate_all(made)
    assert [o.wire_id for o in outcomes] == [None, "fc1"]
    assert outcomes[1].call_id == second.id != "fc1"
    retry = RepairPolicy().decide(outcomes[1])
    escalation = RepairPolicy(max_rounds=0).decide(outcomes[1])
    for style in STYLES:
        pairs = [
            (
                outcomes[0].to_message(None, style, result=1),
                outcomes[0].to_message(first, style, result=1),
            ),
            (outcomes[1].to_message(None, style), outcomes[1].to_message(second, style)),
            (retry.to_message(None, style), retry.to_message(second, style)),
            (escalation.to_message(None, style), escalation.to_message(second, style)),
        ]
        for alone, with_call in pairs:
            assert alone == with_call
    assert outcomes[1].to_message(None, "gemini")["functionResponse"]["id"] == "fc1"
    # An id that merely looks renamed is its call's own.
    (plain,) = calls(("fc_1", "ping", '{"n": 1}'))
    assert Toolset([PING]).validate(plain).wire_id is None


# ---------------------------------------------------------------------------------------------
# Renamed ids: within the provider's limits, carried by hand-built outcomes, and answered as
# stored on a stateful Responses continuation


@pytest.mark.parametrize(
    ("wire", "limit"),
    [("a" * 64, 64), ("b" * 40, 40), ("chatcmpl-tool-" + "c" * 32, 64), ("d" * 39, 40)],
)
def test_a_renamed_id_stays_within_every_limit_its_wire_id_was_within(
    wire: str, limit: int
) -> None:
    # A repeated 64-character id was renamed `<64 characters>_1`: an application that sends
    # its own copy of the turn under `call.id` got Bedrock's ValidationException (and a
    # repeated 40-character one OpenAI Chat's "string too long"), and toolwire's results,
    # which mapped the long id, answered none of its calls.
    made = calls(*[(wire, "ping", json.dumps({"n": n})) for n in range(3)])
    ids = [c.id or "" for c in made]
    assert ids[0] == wire and len(set(ids)) == 3
    assert all(len(i) <= limit for i in ids), ids
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in ids)  # Anthropic's pattern
    own_turn = {
        "role": "assistant",
        "content": [
            {"toolUse": {"toolUseId": c.id, "name": c.name, "input": json.loads(c.arguments)}}
            for c in made
        ],
    }
    results = tool_messages(made, [1, 2, 3], style="bedrock-converse")
    assert [m["toolResult"]["toolUseId"] for m in results] == ids
    user = {"role": "user", "content": [{"text": "Ping them."}]}
    assert _bedrock_request_errors([user, own_turn, {"role": "user", "content": results}]) == ""
    for style in ("openai-chat", "anthropic"):
        assert _result_ids(style, tool_messages(made, [1, 2, 3], style=style)) == ids
        assert _turn_ids(style, assistant_turn(made, style=style)) == ids


def test_a_repeated_mistral_id_is_renamed_to_one_mistral_takes_back() -> None:
    # Mistral sends ids of nine letters and digits and refuses any other back ("must be a-z,
    # A-Z, 0-9, with a length of 9"): a repeated one was renamed `<id>_1`.
    wire = "aB3xK9mP2"
    made = calls(
        *[(wire, "ping", json.dumps({"n": n})) for n in range(3)], ("aB3xK9mP1", "ping", "{}")
    )
    ids = [c.id or "" for c in made]
    assert ids[0] == wire and ids[3] == "aB3xK9mP1" and len(set(ids)) == 4, ids
    assert all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in ids), ids
    assert [c.warnings for c in made] == [[], ["duplicate_id"], ["duplicate_id"], []]
    outcomes = Toolset([PING]).validate_all(made)
    assert [o.wire_id for o in outcomes] == [None, wire, wire, None]
    turn = assistant_turn(made, style="openai-chat")
    results = tool_messages(made, [1, 2, 3, 4], style="openai-chat")
    assert _turn_ids("openai-chat", turn) == _result_ids("openai-chat", results) == ids


def test_outcomes_built_by_hand_from_a_renamed_call_carry_the_id_the_provider_sent() -> None:
    # `Outcome.success`, `failure` and `business_failure` took the renamed id alone: sent
    # without the call, their message answered Gemini with `fc1_1`, an id it never sent.
    first, second = _gemini_repeated_id()
    built = [
        Outcome.success(second, "ping", value={"n": 2}),
        Outcome.failure(second, "ping", "tool_failed"),
        Outcome.business_failure(second, "ping", ["not now"]),
    ]
    for outcome in built:
        assert (outcome.call_id, outcome.wire_id) == (second.id, "fc1")
        result = {"result": 2} if outcome.ok else {}
        alone = outcome.to_message(None, "gemini", **result)
        assert alone == outcome.to_message(second, "gemini", **result)
        assert alone["functionResponse"]["id"] == "fc1"
    # A call that was not renamed gives none, nor does a bare id.
    assert Outcome.failure(first, "ping", "tool_failed").wire_id is None
    assert Toolset([PING]).validate(second).wire_id == "fc1"


def _responses_repeated_call_id() -> list[ToolCall]:
    """Two Responses function calls under one `call_id` (as a compatible server sent them),
    items of their own: the second is renamed by the assembler."""
    return _responses_calls("call_1", "call_1")


def _responses_calls(*call_ids: str) -> list[ToolCall]:
    """Responses function calls of `ping` under `call_ids`, items of their own, the first with
    valid arguments and the second not."""
    asm = Assembler()
    texts = ('{"n": 1}', '{"n": "two"}')[: len(call_ids)]
    for at, (call_id, arguments) in enumerate(zip(call_ids, texts, strict=True)):
        item = {"type": "function_call", "id": f"fc_{at}", "call_id": call_id, "name": "ping"}
        for event in (
            {
                "type": "response.output_item.added",
                "output_index": at,
                "item": {**item, "arguments": ""},
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": at,
                "item_id": f"fc_{at}",
                "delta": arguments,
            },
            {
                "type": "response.output_item.done",
                "output_index": at,
                "item": {**item, "arguments": arguments, "status": "completed"},
            },
        ):
            asm.feed_chunk(event)
    return asm.finish()


def test_a_stateful_responses_continuation_answers_the_call_ids_the_provider_stored() -> None:
    # With `previous_response_id` the API holds the turn as it sent it, both calls under
    # `call_1`: the result sent as `call_1_1` answered no call it had.
    from openai.types.responses import ResponseInputParam

    first, second = made = _responses_repeated_call_id()
    assert first.id == "call_1" and second.id != "call_1"
    outcomes = Toolset([PING]).validate_all(made)
    assert outcomes[0].ok and not outcomes[1].ok
    style: Style = "openai-responses"
    retry = RepairPolicy().decide(outcomes[1])
    escalation = RepairPolicy(max_rounds=0).decide(outcomes[1])
    proceed = RepairPolicy().decide(outcomes[0])
    assert isinstance(proceed, Proceed)
    answers = [
        tool_messages(made, ["pong", outcomes[1]], style=style, stateful=True),
        tool_messages(made, ["pong", retry], style=style, stateful=True),
        tool_messages(made, ["pong", escalation], style=style, stateful=True),
        [
            outcomes[0].to_message(first, style, result="pong", stateful=True),
            outcomes[1].to_message(second, style, stateful=True),
        ],
        [
            proceed.to_message(None, style, result="pong", stateful=True),
            outcomes[1].to_message(None, style, stateful=True),
        ],
        [
            proceed.to_message(first, style, result="pong", stateful=True),
            retry.to_message(None, style, stateful=True),
        ],
        [
            Outcome.failure(first, "ping", "no_result").to_message(None, style, stateful=True),
            escalation.to_message(second, style, stateful=True),
        ],
        [
            Outcome.failure(first, "ping", "no_result").to_message(first, style, stateful=True),
            Outcome.failure(second, "ping", "no_result").to_message(None, style, stateful=True),
        ],
    ]
    for results in answers:
        assert [m["call_id"] for m in results] == ["call_1", "call_1"]
        _taken_by_typed_dict(ResponseInputParam, results)
    # The two are told apart by their order, which every answer keeps.
    assert content_of(answers[0][0]) == "pong"
    assert json.loads(content_of(answers[0][1]))["ok"] is False
    # Sent with the turn (`assistant_turn`, or the application's own copy under `call.id`),
    # the results answer the distinct ids, as before.
    plain = tool_messages(made, ["pong", outcomes[1]], style=style)
    assert _result_ids(style, plain) == _turn_ids(style, assistant_turn(made, style=style))
    assert _result_ids(style, plain) == ["call_1", second.id]


def test_a_responses_call_id_over_64_characters_goes_back_within_64() -> None:
    # The Codex backend sends `call_id`s of 69 to 116 characters, and the Responses API refuses
    # any over 64 in `input[]` (`string_above_max_length`): the turn and its results went back
    # with them as sent. A stored turn (`stateful`) still answers the ids the server sent.
    from openai.types.responses import ResponseInputParam

    style: Style = "openai-responses"
    long_ids = ("call_" + "x" * 81, "call_" + "x" * 80 + "y")
    made = _responses_calls(*long_ids)
    assert [c.id for c in made] == list(long_ids)
    outcomes = Toolset([PING]).validate_all(made)
    turn = assistant_turn(made, style=style)
    results = tool_messages(made, ["pong", outcomes[1]], style=style)
    sent = _turn_ids(style, turn)
    assert _result_ids(style, results) == sent
    assert all(len(i or "") <= 64 for i in sent) and len(set(sent)) == 2, sent
    _taken_by_typed_dict(ResponseInputParam, [*turn, *results])
    # Every path to a result answers the id the turn sent.
    assert _result_ids(style, [outcomes[1].to_message(made[1], style)]) == [sent[1]]
    assert _result_ids(style, [outcomes[1].to_message(None, style)]) == [sent[1]]
    assert _result_ids(style, [wrap_message(style, long_ids[0], "pong", is_error=False)]) == [
        sent[0]
    ]
    # An id within 64 goes as it came.
    short = _responses_calls("call_" + "z" * 59)
    assert _turn_ids(style, assistant_turn(short, style=style)) == [short[0].id]
    stored = [
        *tool_messages(made, ["pong", outcomes[1]], style=style, stateful=True),
        outcomes[1].to_message(None, style, stateful=True),
        outcomes[1].to_message(made[1], style, stateful=True),
        wrap_message(style, long_ids[0], "pong", is_error=False, stateful=True),
        wrap_message(style, long_ids[0], "pong", is_error=False, call=made[0], stateful=True),
    ]
    assert [m["call_id"] for m in stored] == [
        *long_ids,
        long_ids[1],
        long_ids[1],
        *long_ids[:1] * 2,
    ]


@pytest.mark.parametrize("style", [s for s in STYLES if s != "openai-responses"])
def test_stateful_is_refused_where_no_provider_stores_the_turn(style: Style) -> None:
    made = _responses_repeated_call_id()
    outcome = Toolset([PING]).validate(made[1])
    with pytest.raises(ValueError, match="stateful=True is for openai-responses"):
        tool_messages(made, [], style=style, stateful=True)
    with pytest.raises(ValueError, match="stateful=True is for openai-responses"):
        outcome.to_message(made[1], style, stateful=True)
    with pytest.raises(ValueError, match="stateful=True is for openai-responses"):
        RepairPolicy(max_rounds=0).decide(outcome).to_message(None, style, stateful=True)


@dataclass
class _CallCopy:
    """A call as an application may keep one (`Named`, with metadata and warnings)."""

    id: str | None
    name: str
    metadata: dict[str, Any]
    warnings: list[str]
    type: str | None = None
    ordinal: int = 0
    arguments: str = "{}"


def test_a_result_with_its_call_and_one_without_answer_gemini_with_one_id() -> None:
    # Two readers of `metadata["wire_id"]`: the one for a result sent with its call took it
    # whenever it was there, the one for the outcome alone (`Outcome.wire_id`) only from a
    # call renamed for a repeated id (`duplicate_id`), so the two results differed.
    renamed = _CallCopy("fc1_1", "ping", {"wire_id": "fc1"}, ["duplicate_id"])
    unrenamed = _CallCopy("fc1_1", "ping", {"wire_id": "fc1"}, [])
    for call, expected in ((renamed, "fc1"), (unrenamed, "fc1_1")):
        outcome = Outcome.failure(call, "ping", "tool_failed")
        alone = outcome.to_message(None, "gemini")
        assert alone == outcome.to_message(call, "gemini")
        assert alone["functionResponse"]["id"] == expected
        (turn,) = assistant_turn([call], style="gemini")
        assert turn["parts"][0]["functionCall"]["id"] == expected
