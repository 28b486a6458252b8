"""The repair loop: rounds per logical call, latest error only, escalation and the budget."""

from __future__ import annotations

import json
import math
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from toolwire import Assembler, MisuseError, ToolCall
from toolwire.payloads import tool_messages
from toolwire.repair import Escalation, Proceed, RepairPolicy, Retry
from toolwire.toolset import Toolset


class Transfer(BaseModel):
    """Send money."""

    amount: int = Field(gt=0)
    currency: Literal["EUR", "USD"]
    recipient: str = Field(json_schema_extra={"x-user-supplied": True})


TOOLS = Toolset(
    [Transfer],
    checks={"transfer": lambda t: "daily limit exceeded" if t.amount > 1000 else None},
)


def attempt(arguments: str, call_id: str = "call_1", name: str = "transfer") -> ToolCall:
    asm = Assembler()
    asm.feed(0, id=call_id, name=name, arguments=arguments)
    (call,) = asm.finish()
    return call


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_two_rounds_then_escalation_with_a_message_for_every_call() -> None:
    policy = RepairPolicy(max_rounds=2)
    bad = '{"amount": -1, "currency": "EUR", "recipient": "bob"}'
    decisions = []
    for n in range(3):
        call = attempt(bad, call_id=f"call_{n}")
        decision = policy.decide(TOOLS.validate(call), lineage="conv-1")
        decisions.append(decision)
        message = decision.to_message(call, "openai-chat")
        assert message["tool_call_id"] == f"call_{n}"
    assert [type(d) for d in decisions] == [Retry, Retry, Escalation]
    first, second, last = decisions
    assert isinstance(first, Retry) and (first.attempt, first.rounds_left) == (1, 1)
    assert isinstance(second, Retry) and (second.attempt, second.rounds_left) == (2, 0)
    assert isinstance(last, Escalation)
    assert last.reason == "max_rounds" and last.attempts == 3
    payload = json.loads(last.to_message(attempt(bad, call_id="call_2"), "openai-chat")["content"])
    assert payload["error_type"] == "escalated" and payload["retryable"] is False
    assert payload["instruction"].startswith('Stop calling "transfer"')
    assert "transfer" in last.question
    # The logical call is closed: a new attempt starts a fresh count.
    assert policy.attempts("transfer", lineage="conv-1") == 0


def test_success_resets_and_reports_the_attempt() -> None:
    policy = RepairPolicy()
    policy.decide(TOOLS.validate(attempt('{"amount": "x", "currency": "EUR", "recipient": "b"}')))
    assert policy.attempts("transfer") == 1
    decision = policy.decide(
        TOOLS.validate(attempt('{"amount": 5, "currency": "EUR", "recipient": "b"}'))
    )
    assert isinstance(decision, Proceed) and decision.attempt == 2
    assert policy.attempts("transfer") == 0
    message = decision.to_message(attempt("{}"), "anthropic", result="sent")
    assert message == {"type": "tool_result", "tool_use_id": "call_1", "content": "sent"}


def test_only_the_latest_error_is_fed_back_and_every_attempt_is_fresh() -> None:
    policy = RepairPolicy()
    one = policy.decide(
        TOOLS.validate(attempt('{"amount": 0, "currency": "EUR", "recipient": "b"}'))
    )
    two = policy.decide(
        TOOLS.validate(attempt('{"amount": 5, "currency": "GBP", "recipient": "b"}'))
    )
    assert isinstance(one, Retry) and isinstance(two, Retry)
    body = json.loads(two.to_message(attempt("{}"))["content"])
    assert [e["path"] for e in body["errors"]] == ["/currency"]
    assert body["attempt"] == 2
    assert "/amount" not in json.dumps(body)


def test_missing_user_supplied_field_escalates_immediately() -> None:
    policy = RepairPolicy()
    decision = policy.decide(TOOLS.validate(attempt('{"amount": 5, "currency": "EUR"}')))
    assert isinstance(decision, Escalation)
    assert decision.reason == "needs_clarification" and decision.attempts == 1
    assert decision.question == "Please provide recipient."
    payload = json.loads(decision.to_message(attempt("{}"), "openai-responses")["output"])
    assert payload["error_type"] == "needs_clarification"
    assert payload["instruction"].startswith("Ask the user for recipient")


def test_business_error_is_not_retried_by_default() -> None:
    outcome = TOOLS.validate(attempt('{"amount": 5000, "currency": "EUR", "recipient": "b"}'))
    assert outcome.kind == "business_error"
    decision = RepairPolicy().decide(outcome)
    assert isinstance(decision, Escalation) and decision.reason == "business_error"
    payload = json.loads(decision.to_message(attempt("{}"))["content"])
    assert payload["error_type"] == "business_rule"
    assert "daily limit exceeded" in payload["message"]
    retrying = RepairPolicy(retry_business_errors=True).decide(outcome)
    assert isinstance(retrying, Retry)
    # Retried, the model is told to call again with arguments the check accepts.
    payload = json.loads(retrying.to_message(attempt("{}"))["content"])
    assert payload["retryable"] is True
    assert payload["instruction"].startswith('Call "transfer" again')
    assert "daily limit exceeded" in payload["message"]


def test_not_retryable_failure_escalates() -> None:
    asm = Assembler()
    asm.feed(0, id="c", name="transfer", arguments='{"amount": 5')
    asm.stop("content_filter")
    (filtered,) = asm.finish()
    decision = RepairPolicy().decide(TOOLS.validate(filtered))
    assert isinstance(decision, Escalation) and decision.reason == "not_retryable"


def test_time_budget() -> None:
    clock = Clock()
    policy = RepairPolicy(max_rounds=5, time_budget_s=30, clock=clock)
    bad = TOOLS.validate(attempt('{"amount": 0, "currency": "EUR", "recipient": "b"}'))
    assert isinstance(policy.decide(bad), Retry)
    clock.now = 10
    assert isinstance(policy.decide(bad), Retry)
    clock.now = 31
    decision = policy.decide(bad)
    assert isinstance(decision, Escalation) and decision.reason == "time_budget"
    payload = json.loads(decision.to_message(attempt("{}"))["content"])
    assert payload["message"] == "The time allowed for correcting this call has run out."


def test_lineages_and_parallel_slots_are_counted_apart() -> None:
    policy = RepairPolicy(max_rounds=1)
    bad = TOOLS.validate(attempt('{"amount": 0, "currency": "EUR", "recipient": "b"}'))
    # Two parallel calls to the same tool in one turn: two logical calls.
    first_turn = policy.decide_turn([bad, bad], lineage="x")
    assert [type(d) for d in first_turn] == [Retry, Retry]
    assert isinstance(policy.decide(bad, lineage="y"), Retry)  # another conversation
    second_turn = policy.decide_turn([bad, bad], lineage="x")
    assert [type(d) for d in second_turn] == [Escalation, Escalation]


def test_unknown_tool_names_share_one_counter() -> None:
    policy = RepairPolicy(max_rounds=1)
    first = policy.decide(TOOLS.validate(attempt("{}", name="transfr")))
    second = policy.decide(TOOLS.validate(attempt("{}", name="send_money")))
    assert isinstance(first, Retry) and isinstance(second, Escalation)


def test_reset_and_validation_of_settings() -> None:
    policy = RepairPolicy()
    bad = TOOLS.validate(attempt('{"amount": 0, "currency": "EUR", "recipient": "b"}'))
    policy.decide(bad, lineage="a")
    policy.decide(bad, lineage="b")
    policy.reset("a")
    assert policy.attempts("transfer", lineage="a") == 0
    assert policy.attempts("transfer", lineage="b") == 1
    policy.reset()
    assert policy.attempts("transfer", lineage="b") == 0
    with pytest.raises(ValueError):
        RepairPolicy(max_rounds=-1)
    with pytest.raises(ValueError):
        RepairPolicy(time_budget_s=0)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_rounds", math.nan),
        ("max_rounds", math.inf),
        ("max_rounds", 1.5),
        ("max_rounds", True),
        ("max_rounds", "2"),
        ("time_budget_s", math.nan),
        ("time_budget_s", math.inf),
        ("time_budget_s", "30"),
    ],
)
def test_settings_that_would_not_bound_the_loop_are_refused_by_name(
    setting: str, value: object
) -> None:
    # `attempt > nan` is never true: a NaN bound let the model retry forever, and a NaN
    # budget never ran out; a string failed with a bare comparison error.
    with pytest.raises(ValueError, match=setting):
        RepairPolicy(**{setting: value})  # pyright: ignore[reportArgumentType]


def test_scenario_16_schema_problems_end_with_a_message_per_call() -> None:
    """faults.md scenario 16: coercible type, bad enum, extra property, missing user field."""
    toolset = Toolset([Transfer])
    policy = RepairPolicy(max_rounds=2)
    turn = [
        attempt('{"amount": "5", "currency": "EUR", "recipient": "b"}', "c1"),
        attempt('{"amount": 5, "currency": "GBP", "recipient": "b"}', "c2"),
        attempt('{"amount": 5, "currency": "EUR", "recipient": "b", "memo": 1}', "c3"),
        attempt('{"amount": 5, "currency": "EUR"}', "c4"),
    ]
    outcomes = toolset.validate_all(turn)
    assert outcomes[0].ok and [c.rule for c in outcomes[0].coercions] == ["number_string"]
    assert outcomes[1].errors[0].code == "enum"
    assert outcomes[3].kind == "needs_clarification"
    decisions = policy.decide_turn(outcomes, lineage="s16")
    assert isinstance(decisions[0], Proceed)
    assert isinstance(decisions[1], Retry)
    assert isinstance(decisions[3], Escalation) and decisions[3].reason == "needs_clarification"
    results: dict[str | int, object] = {"c1": "ok"}
    results.update({o.call_id or "": o for o in outcomes[1:] if not o.ok})
    messages = tool_messages(turn, results)
    assert [m["tool_call_id"] for m in messages] == ["c1", "c2", "c3", "c4"]
    # Round after round the enum stays wrong: escalation after two repair rounds.
    for _ in range(2):
        decision = policy.decide(toolset.validate(turn[1]), lineage="s16", slot=1)
    assert isinstance(decision, Escalation) and decision.attempts == 3


def test_a_call_reissued_alone_keeps_its_count_after_a_sibling_succeeded() -> None:
    # Two parallel calls to one tool; the model fixes the first and keeps failing the second.
    # It re-issues only the failing call (the other one has its result), so that call is the
    # first to the tool in its turn: it must still be escalated after `max_rounds` rounds.
    policy = RepairPolicy(max_rounds=2)
    good = TOOLS.validate(attempt('{"amount": 5, "currency": "EUR", "recipient": "b"}'))
    bad = TOOLS.validate(attempt('{"amount": 0, "currency": "EUR", "recipient": "b"}'))
    kinds = [type(d) for d in policy.decide_turn([bad, bad], lineage="p")]
    assert kinds == [Retry, Retry]
    assert [type(d) for d in policy.decide_turn([good, bad], lineage="p")] == [Proceed, Retry]
    (last,) = policy.decide_turn([bad], lineage="p")
    assert isinstance(last, Escalation) and last.reason == "max_rounds" and last.attempts == 3


def test_reissued_calls_are_matched_to_the_open_logical_calls_in_order() -> None:
    policy = RepairPolicy(max_rounds=1)
    good = TOOLS.validate(attempt('{"amount": 5, "currency": "EUR", "recipient": "b"}'))
    bad = TOOLS.validate(attempt('{"amount": 0, "currency": "EUR", "recipient": "b"}'))
    assert [type(d) for d in policy.decide_turn([good, bad, bad], lineage="q")] == [
        Proceed,
        Retry,
        Retry,
    ]
    # The two failing calls come back (the first is fixed), plus a new third call.
    decisions = policy.decide_turn([good, bad, bad], lineage="q")
    assert [type(d) for d in decisions] == [Proceed, Escalation, Retry]
    assert isinstance(decisions[2], Retry) and decisions[2].attempt == 1


def test_payloads_stay_short_whatever_the_model_or_the_tool_sent() -> None:
    from toolwire.execution import BusinessRuleError, Executor

    asm = Assembler(tools=TOOLS)
    huge_key = "k" * 100_000
    asm.feed(0, id="c0", name="transfer", arguments=f'{{"{huge_key}": 1}}')
    asm.feed(1, id="c1", name="n" * 100_000, arguments="{}")
    asm.feed(
        2, id="c2", name="transfer", arguments='{"amount": 5, "currency": "EUR", "recipient": "b"}'
    )
    unknown_key, unknown_tool, _ = calls = asm.finish()
    limit = 4_000
    assert len(TOOLS.validate(unknown_key).to_message(unknown_key)["content"]) < limit
    policy = RepairPolicy()
    for _ in range(3):
        decision = policy.decide(TOOLS.validate(unknown_tool), lineage="L")
    assert isinstance(decision, Escalation)
    assert len(decision.to_message(unknown_tool)["content"]) < limit
    assert len(decision.question) < limit
    # An escalation's question quotes the errors: their paths hold the model's keys.
    decision = RepairPolicy(max_rounds=0).decide(TOOLS.validate(unknown_key))
    assert isinstance(decision, Escalation) and len(decision.question) < limit

    def refuse(args: object) -> None:
        raise BusinessRuleError(*[f"slot taken {'z' * 5_000}" for _ in range(50)])

    executor = Executor({"transfer": refuse})
    outcome = TOOLS.validate(calls[2])
    assert outcome.ok
    result = executor.execute(outcome)
    assert len(tool_messages([calls[2]], [result])[0]["content"]) < limit


@pytest.mark.parametrize(
    "names",
    [["transfers", "Transfer", "transfer"], ["transfer", "tranfser", "transfer"]],
)
def test_correcting_a_tool_name_does_not_start_the_count_again(names: list[str]) -> None:
    # Misnamed first, or misnamed after a first call under the right name.
    policy = RepairPolicy(max_rounds=2)
    decisions = []
    for turn, name in enumerate(names):
        asm = Assembler(tools=TOOLS)
        arguments = '{"amount": "lots", "currency": "EUR", "recipient": "b"}'
        asm.feed(0, id=f"c{turn}", name=name, arguments=arguments)
        (decision,) = policy.decide_turn([TOOLS.validate(c) for c in asm.finish()], lineage="L")
        decisions.append(decision)
    assert [type(d).__name__ for d in decisions] == ["Retry", "Retry", "Escalation"]
    assert isinstance(decisions[-1], Escalation) and decisions[-1].attempts == 3


@pytest.mark.parametrize("outcome", [None, "ok", {"ok": True}])
def test_decide_refuses_what_is_no_outcome(outcome: object) -> None:
    # An AttributeError ('NoneType' object has no attribute 'error_type') from inside.
    policy = RepairPolicy()
    with pytest.raises(TypeError, match=r"decide takes the Outcome of Toolset\.validate"):
        policy.decide(outcome)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"outcomes\[0\] must be the Outcome"):
        policy.decide_turn([outcome])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="decide_turn takes the list of the turn's Outcomes"):
        policy.decide_turn("ok")  # type: ignore[arg-type]


PAY = Toolset(
    [
        {
            "name": "pay",
            "description": "Pay.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pin": {"type": "string", "x-secret": True},
                    "n": {"type": "integer"},
                },
                "required": ["pin", "n"],
            },
        }
    ]
)


@pytest.mark.parametrize("style", ["openai-chat", "anthropic"])
def test_decisions_given_to_tool_messages_answer_as_decisions(style: str) -> None:
    # They were written as the tools' results: a dump of each outcome, the secret `pin` in
    # clear and a failed call's `Retry` not marked as an error.
    asm = Assembler()
    asm.feed(0, id="ok", name="pay", arguments='{"pin": "9876", "n": 1}')
    asm.feed(1, id="bad", name="pay", arguments='{"pin": "9876", "n": "x"}')
    calls = asm.finish()
    decisions = RepairPolicy(max_rounds=0).decide_turn([PAY.validate(call) for call in calls])
    assert [type(d) for d in decisions] == [Proceed, Escalation]
    retry = RepairPolicy().decide(PAY.validate(calls[1]))
    assert isinstance(retry, Retry)
    # In call order, or in any order: a decision carries its call's id.
    for entries in (decisions, [decisions[0], retry], [retry, decisions[0]]):
        messages = tool_messages(calls, entries, style=style)  # type: ignore[arg-type]
        assert "9876" not in json.dumps(messages)
        payloads = [json.loads(m["content"]) for m in messages]
        assert payloads[0]["error_type"] == "no_result"  # a `Proceed` is no result
        decision = entries[1] if entries[1].outcome.call_id == "bad" else entries[0]
        assert payloads[1] == json.loads(decision.to_message(calls[1])["content"])
        if style == "anthropic":
            assert all(m["is_error"] is True for m in messages)


def test_a_verdict_is_no_tool_result() -> None:
    (call,) = [attempt('{"amount": 5, "currency": "EUR", "recipient": "bob"}')]
    outcome = TOOLS.validate(call)
    decision = RepairPolicy().decide(outcome)
    assert isinstance(decision, Proceed)
    for verdict in (outcome, decision):
        with pytest.raises(MisuseError, match="verdict on a call, not what its tool returned"):
            decision.to_message(call, result=verdict)
