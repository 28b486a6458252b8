"""The repair-loop example: its transcript, and what the scripted model received."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import openai
import pytest

from toolwire.examples.repair_loop import (
    FIXED_ON_RETRY,
    KEEPS_FAILING,
    Call,
    ScriptServer,
    main,
    run_scenario,
    serve_script,
)

KEY_LINES = [
    "== 1. the model fixes its arguments",
    'model -> create_ticket {"title": "Printer jammed on floor 3", "priority": "urgent", '
    '"floor": 3}',
    'model -> create_ticket {"title": "Printer jammed on floor 3", "priority": "high"}',
    "  proceed on attempt 2: {'ticket_id': 'T-1001', 'priority': 'high'}",
    "model: Ticket T-1001 is open with high priority.",
    "server: 3 requests, 2 tool messages, one per call id",
    "== 2. the model keeps failing and the policy escalates",
    '  retry 2 of 2: /priority enum (got "critical")',
    "  escalate after 3 attempts: I could not complete create_ticket: "
    '/priority one of "low", "high". How should I proceed?',
    "model: I could not open the ticket: its priority must be low or high. Which one should I use?",
    "server: 4 requests, 3 tool messages, one per call id",
]


def check_transcript(out: str) -> None:
    lines = out.splitlines()
    missing = [line for line in KEY_LINES if line not in lines]
    assert not missing, out
    # Key lines appear in this order.
    positions = [lines.index(line) for line in KEY_LINES]
    assert positions == sorted(positions), out
    retries = [line for line in lines if line.startswith("  retry ")]
    # The model is told about the invalid priority in each repair round.
    assert [line.split(":")[0] for line in retries] == [
        "  retry 1 of 2",
        "  retry 1 of 2",
        "  retry 2 of 2",
    ], out
    assert all("/priority enum" in line for line in retries), out
    # Every problem of a round is reported at once, not only the pre-check's first one.
    assert "/floor unknown_field" in retries[0], out
    assert "retry 3" not in out


def repair_rounds(server: ScriptServer) -> int:
    """Requests that carried a retryable error payload back to the model."""
    return sum(
        any(p.get("ok") is False and p.get("retryable") for p in answers.values())
        for answers in server.answers
    )


def test_main_prints_the_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    assert main() == 0
    captured = capsys.readouterr()
    check_transcript(captured.out)
    assert captured.err == ""


def test_runs_as_a_module_without_warnings() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-m", "toolwire.examples.repair_loop"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    check_transcript(done.stdout)


def test_fixed_on_retry_answers_each_call_once() -> None:
    server = run_scenario("fixed", FIXED_ON_RETRY)
    assert len(server.requests) == 3
    assert [sorted(a) for a in server.answers] == [[], ["call_1"], ["call_2"]]
    error = server.answers[1]["call_1"]
    assert error["ok"] is False
    assert error["error_type"] == "validation"
    assert error["retryable"] is True
    assert error["attempt"] == 1
    reported = {(e["path"], e["code"]) for e in error["errors"]}
    assert {("/priority", "enum"), ("/floor", "unknown_field")} <= reported
    assert error["instruction"].startswith('Call "create_ticket" again')
    assert server.answers[2]["call_2"] == {"ticket_id": "T-1001", "priority": "high"}
    assert repair_rounds(server) == 1
    assert [r["tool_choice"] for r in server.requests] == ["auto"] * 3
    # The history carries the calls exactly as the model sent them, before their answers.
    history = server.requests[2]["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "tool"]
    assert '"floor": 3' in history[1]["tool_calls"][0]["function"]["arguments"]


def test_keeps_failing_escalates_after_two_rounds() -> None:
    server = run_scenario("failing", KEEPS_FAILING)
    assert len(server.requests) == 4
    assert [sorted(a) for a in server.answers] == [[], ["call_1"], ["call_2"], ["call_3"]]
    assert repair_rounds(server) == 2
    attempts = [server.answers[n][f"call_{n}"] for n in (1, 2, 3)]
    assert [(p["error_type"], p["retryable"], p["attempt"]) for p in attempts] == [
        ("validation", True, 1),
        ("validation", True, 2),
        ("escalated", False, 3),
    ]
    stop = 'Stop calling "create_ticket". Ask the user how to proceed.'
    assert attempts[2]["instruction"] == stop
    # After the escalation the model may only answer in text.
    assert [r["tool_choice"] for r in server.requests] == ["auto", "auto", "auto", "none"]


TWO_TURNS = [(Call("call_1", "create_ticket", {"title": "t", "priority": "low"}),), "done"]
ASSISTANT: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "create_ticket", "arguments": "{}"},
        }
    ],
}


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        ([], "one tool message per call id"),
        ([tool("call_1", "{}"), tool("call_1", "{}")], "one tool message per call id"),
        ([tool("call_9", "{}")], "one tool message per call id"),
        ([tool("call_1", '{"ok": true}')], "not compact JSON"),
        ([tool("call_1", '{"error_type":"x","ok":false}')], "not toolwire's failure payload"),
        ([{"role": "assistant", "content": "?"}, tool("call_1", "{}")], "lacks the calls"),
    ],
    ids=["missing", "twice", "wrong-id", "not-compact", "key-order", "no-assistant-calls"],
)
def test_the_scripted_model_rejects_bad_answers(
    answers: list[dict[str, Any]], problem: str
) -> None:
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    with (
        serve_script(TWO_TURNS) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
    ):
        with client.chat.completions.create(
            model="scripted", messages=messages, stream=True
        ) as first:
            assert [c.choices[0].finish_reason for c in first][-1] == "tool_calls"
        history: list[Any] = [*messages, ASSISTANT, *answers]
        with pytest.raises(openai.BadRequestError, match=problem):
            client.chat.completions.create(model="scripted", messages=history, stream=True)
    assert len(server.requests) == 2
