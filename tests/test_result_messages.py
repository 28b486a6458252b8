"""Result messages: secrets kept out of every message built for the model, user-supplied
values asked of the user, ids that answer the calls they belong to, and the assistant turn."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from tests.test_payloads import calls, content_of
from toolwire import Executor, ToolCall
from toolwire.payloads import STYLES, Style, tool_messages
from toolwire.repair import Escalation, Proceed, RepairPolicy
from toolwire.toolset import Toolset
from toolwire.validation import BusinessRuleError


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
