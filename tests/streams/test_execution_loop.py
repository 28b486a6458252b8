"""The whole loop through the real SDKs: stream -> validate -> execute -> the next request.

The local server streams parallel calls (one valid read, one with a wrong type, one for an
unknown tool, one write whose tool fails), the executor runs them, `tool_messages` answers them,
and the real client sends the answers back; the server records the request body the SDK wrote.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("toolwire._core")

from toolwire import Toolset, assemble, call_id_for, tool_messages
from toolwire.execution import Executor, MemoryLedger, Observer, ToolSpec
from toolwire.payloads import Style

from .clients import open_sync, sync_client
from .conftest import SSEServer
from .streamkit import Call, anthropic_stream, chat_stream, responses_stream

STYLES: tuple[Style, ...] = ("openai-chat", "openai-responses", "anthropic")
SECRET = "postgres://admin:hunter2@db.internal/prod"


class Lookup(BaseModel):
    """Look up an order."""

    order_id: int


class Refund(BaseModel):
    """Refund an order."""

    order_id: int


CALLS = [
    Call("lookup", '{"order_id": 7}', "c_ok"),
    Call("lookup", '{"order_id": "seven"}', "c_type"),
    Call("launch", '{"n": 1}', "c_unknown"),
    Call("refund", '{"order_id": 9}', "c_fail"),
]


def stream_events(fmt: str) -> list[Any]:
    if fmt == "openai-chat":
        return chat_stream(CALLS, interleave=True)
    if fmt == "openai-responses":
        return responses_stream(CALLS, interleave=True)
    return anthropic_stream(CALLS)


def refund(args: Refund) -> Any:
    raise RuntimeError(f"{SECRET} refused the refund of {args.order_id}")


def executor() -> Executor:
    logger = logging.getLogger("toolwire.execution.test-loop")
    logger.setLevel(logging.CRITICAL)
    logger.propagate = False
    return Executor(
        {
            "lookup": lambda args: {"order": args.order_id},
            "refund": ToolSpec(refund, side_effects=True),
        },
        ledger=MemoryLedger(),
        observer=Observer(logger=logger, otel=False),
    )


def send_next(client: Any, fmt: str, calls: list[Any], messages: list[dict[str, Any]]) -> None:
    """Send the history with the answers, as an application does, through the real SDK."""
    if fmt == "openai-chat":
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id_for(c),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ],
        }
        history = [{"role": "user", "content": "refund 9"}, assistant, *messages]
        stream = client.chat.completions.create(model="m", messages=history, stream=True)
    elif fmt == "openai-responses":
        items = [
            {
                "type": "function_call",
                "call_id": call_id_for(c),
                "name": c.name,
                "arguments": c.arguments,
            }
            for c in calls
        ]
        stream = client.responses.create(model="m", input=[*items, *messages], stream=True)
    else:
        uses = [
            {
                "type": "tool_use",
                "id": call_id_for(c),
                "name": c.name,
                "input": c.value if c.ok else {},
            }
            for c in calls
        ]
        history = [
            {"role": "user", "content": "refund 9"},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": messages},
        ]
        stream = client.messages.create(model="m", max_tokens=64, messages=history, stream=True)
    stream.close()


def answers_in(fmt: str, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(call id, content, is_error) of each tool result the server received."""
    if fmt == "openai-chat":
        return [
            (m["tool_call_id"], m["content"], False)
            for m in body["messages"]
            if m.get("role") == "tool"
        ]
    if fmt == "openai-responses":
        return [
            (item["call_id"], item["output"], False)
            for item in body["input"]
            if item.get("type") == "function_call_output"
        ]
    (last,) = [m for m in body["messages"][-1:] if m["role"] == "user"]
    return [
        (b["tool_use_id"], b["content"], bool(b.get("is_error")))
        for b in last["content"]
        if b["type"] == "tool_result"
    ]


@pytest.mark.parametrize("fmt", STYLES)
def test_executor_results_go_back_as_one_provider_result_per_call(
    sse_server: SSEServer, fmt: Style
) -> None:
    route = sse_server.register_events(stream_events(fmt), fmt)
    tools = Toolset([Lookup, Refund])
    ex = executor()
    with sync_client(route, fmt) as client:
        with assemble(open_sync(client, fmt), tools) as stream:
            for _ in stream:
                pass
        results = ex.execute_all(stream.outcomes)
        messages = tool_messages(stream.calls, results, style=fmt)
        send_next(client, fmt, stream.calls, messages)
    assert [r.state for r in results] == [
        "ok",
        "validation_failed",
        "validation_failed",
        "unknown_outcome",
    ]
    answers = answers_in(fmt, route.requests[-1]["json"])
    assert [a[0] for a in answers] == ["c_ok", "c_type", "c_unknown", "c_fail"]
    for (_, content, is_error), result in zip(answers, results, strict=True):
        assert json.loads(content) == result.to_payload()
        if fmt == "anthropic":
            assert is_error == (not result.ok)
        # What the executor keeps for operators never reaches the model.
        for internal in ("idempotency_key", "args_hash", "timings", "warnings", "hunter2"):
            assert internal not in content
