"""The whole repair loop against a scripted model, with the real `openai` client.

Run it with `python -m toolwire.examples.repair_loop`. A tiny "model" serves
`POST /v1/chat/completions` as an SSE stream on 127.0.0.1 (a free port, nothing else on the
network). It plays a fixed script and, like a real provider, rejects a request whose tool
messages do not answer the previous turn's calls one for one. Two conversations run:

1. The model calls `create_ticket` with `"priority": "urgent"` (not an allowed value) and a
   field the tool does not have; toolwire's error payload goes back as the tool message, and
   the model calls again with corrected arguments, which run.
2. The model keeps sending invalid priorities: after two repair rounds `RepairPolicy`
   escalates instead of allowing a third, and the model is told to stop and ask the user.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar, Literal, cast

import openai
from pydantic import BaseModel, ConfigDict

from toolwire import (
    PrecheckError,
    Proceed,
    RepairPolicy,
    Retry,
    Toolset,
    assemble,
    assistant_turn,
)

__all__ = [
    "Call",
    "CreateTicket",
    "ScriptError",
    "ScriptServer",
    "main",
    "repair_loop",
    "run_scenario",
    "serve_script",
]


class CreateTicket(BaseModel):
    """Open a support ticket."""

    model_config = ConfigDict(extra="forbid")

    title: str
    priority: Literal["low", "high"]


def open_ticket(ticket: CreateTicket) -> dict[str, str]:
    """The tool itself: a stand-in for a real ticket system."""
    return {"ticket_id": "T-1001", "priority": ticket.priority}


# --------------------------------------------------------------------------------------------
# The scripted model


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model makes."""

    id: str
    name: str
    arguments: dict[str, Any]


Turn = str | tuple[Call, ...]
"""One model reply: a text answer, or tool calls."""

# Toolwire's failure payload: compact JSON with these keys, in this order.
PAYLOAD_KEYS = (
    "ok",
    "error_type",
    "message",
    "errors",
    "hint",
    "retryable",
    "attempt",
    "instruction",
)


class ScriptError(Exception):
    """A request the scripted model refuses (answered with HTTP 400, as a provider would)."""


@dataclass
class ScriptServer:
    """A running scripted model and what it received.

    Attributes:
        base_url: The `base_url` for `openai.OpenAI`.
        turns: The replies, one per request, in order.
        requests: Every request body received.
        answers: Per request, the tool messages that answered the previous turn: call id to
            parsed payload (empty for the first request).
    """

    base_url: str
    turns: Sequence[Turn]
    requests: list[dict[str, Any]] = field(default_factory=lambda: [])
    answers: list[dict[str, dict[str, Any]]] = field(default_factory=lambda: [])

    def reply(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Check one request and return the chunks of the next scripted turn.

        Raises:
            ScriptError: If the request breaks the protocol or the script has ended.
        """
        turn_no = len(self.requests)
        self.requests.append(request)
        if turn_no >= len(self.turns):
            raise ScriptError("the script has no turn left")
        if request.get("stream") is not True:
            raise ScriptError("this model only streams")
        previous = self.turns[turn_no - 1] if turn_no else ""
        expected = [] if isinstance(previous, str) else [c.id for c in previous]
        self.answers.append(check_tool_messages(request.get("messages", []), expected))
        return chunks(self.turns[turn_no])


def check_tool_messages(
    messages: list[dict[str, Any]], expected: list[str]
) -> dict[str, dict[str, Any]]:
    """Check that the conversation ends with one tool message per call id of the last turn.

    Returns:
        Call id to parsed payload.

    Raises:
        ScriptError: On a missing, extra or repeated answer, or a payload that is not
            toolwire's compact JSON.
    """
    tail: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        tail.insert(0, message)
    ids = [str(m.get("tool_call_id")) for m in tail]
    if sorted(ids) != sorted(expected) or len(set(ids)) != len(ids):
        raise ScriptError(f"expected one tool message per call id {expected}, got {ids}")
    if expected:
        calls: list[dict[str, Any]] = messages[-len(tail) - 1].get("tool_calls") or []
        if [c.get("id") for c in calls] != expected:
            raise ScriptError("the assistant message before the tool messages lacks the calls")
    return {str(m["tool_call_id"]): parse_payload(str(m["content"])) for m in tail}


def parse_payload(content: str) -> dict[str, Any]:
    """Parse a tool message's content, insisting on compact JSON and the fixed key order.

    Raises:
        ScriptError: If the content is not what toolwire produces.
    """
    payload: object = json.loads(content)
    if not isinstance(payload, dict):
        raise ScriptError(f"not a JSON object: {content}")
    payload = cast(dict[str, Any], payload)
    if json.dumps(payload, ensure_ascii=False, separators=(",", ":")) != content:
        raise ScriptError(f"not compact JSON: {content}")
    if payload.get("ok") is False and list(payload) != [k for k in PAYLOAD_KEYS if k in payload]:
        raise ScriptError(f"not toolwire's failure payload: {content}")
    return payload


def chunks(turn: Turn) -> list[dict[str, Any]]:
    """A turn as Chat Completions stream chunks (arguments cut into 9-byte fragments)."""

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted",
            "choices": [choice],
        }

    if isinstance(turn, str):
        return [chunk({"role": "assistant", "content": turn}), chunk({}, "stop")]
    out = [chunk({"role": "assistant", "content": None})]
    for index, call in enumerate(turn):
        function = {"name": call.name, "arguments": ""}
        opening = {"index": index, "id": call.id, "type": "function", "function": function}
        out.append(chunk({"tool_calls": [opening]}))
        text = json.dumps(call.arguments)
        for cut in range(0, len(text), 9):
            fragment = {"arguments": text[cut : cut + 9]}
            out.append(chunk({"tool_calls": [{"index": index, "function": fragment}]}))
    out.append(chunk({}, "tool_calls"))
    return out


class _Handler(BaseHTTPRequestHandler):
    script: ClassVar[ScriptServer]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": {"message": "not found", "type": "not_found"}})
        try:
            events = self.script.reply(json.loads(body))
        except ScriptError as error:
            return self._send(400, {"error": {"message": str(error), "type": "invalid_request"}})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the transcript clean


@contextmanager
def serve_script(turns: Sequence[Turn]) -> Generator[ScriptServer, None, None]:
    """Serve `turns` on 127.0.0.1 (a free port) until the block ends.

    Args:
        turns: The model's replies, one per request.

    Yields:
        The running server: its `base_url` and what it received.
    """
    httpd = HTTPServer(("127.0.0.1", 0), _Handler)
    script = ScriptServer(f"http://127.0.0.1:{httpd.server_address[1]}/v1", turns)
    httpd.RequestHandlerClass = type("Handler", (_Handler,), {"script": script})
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield script
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# --------------------------------------------------------------------------------------------
# The repair loop


def repair_loop(
    client: openai.OpenAI, tools: Toolset, policy: RepairPolicy, *, lineage: str, request: str
) -> str:
    """Run one user request to the model's final answer, repairing invalid calls on the way.

    Args:
        client: The OpenAI client.
        tools: The tools the model may call.
        policy: Decides, per attempt, whether to run, retry or escalate.
        lineage: Names this chain of attempts for the policy (conversation + user message).
        request: The user's message.

    Returns:
        The model's final text: its answer, or after an escalation its question to the user.
    """
    print(f"user: {request}")
    specs: list[Any] = tools.openai()  # plain dicts: list[Any] satisfies the SDK's TypedDicts
    messages: list[Any] = [{"role": "user", "content": request}]
    escalated = False
    while True:
        source = client.chat.completions.create(
            model="scripted",
            messages=messages,
            tools=specs,
            tool_choice="none" if escalated else "auto",
            stream=True,
        )
        with assemble(source, tools) as stream:
            for event in stream:
                if isinstance(event, PrecheckError):  # known before the call finished
                    print(f"  pre-check: {event.error.path} {event.error.message}")
        if escalated or not stream.calls:
            print(f"model: {stream.text}")
            return stream.text
        messages += assistant_turn(stream.calls, text=stream.text)  # the calls as sent
        decisions = policy.decide_turn(stream.outcomes, lineage=lineage)
        for call, decision in zip(stream.calls, decisions, strict=True):
            print(f"model -> {call.name} {call.arguments}")
            if isinstance(decision, Proceed):
                result = open_ticket(cast(CreateTicket, decision.outcome.model))
                print(f"  proceed on attempt {decision.attempt}: {result}")
                messages.append(decision.outcome.to_message(call, result=result))
            elif isinstance(decision, Retry):
                print(f"  retry {decision.attempt} of {policy.max_rounds}: {problems(decision)}")
                messages.append(decision.outcome.to_message(call, attempt=decision.attempt))
            else:
                print(f"  escalate after {decision.attempts} attempts: {decision.question}")
                messages.append(decision.to_message(call))
                escalated = True


def problems(decision: Retry) -> str:
    """The errors sent to the model, one short line."""
    return "; ".join(f"{e.path} {e.code} (got {e.got})" for e in decision.outcome.errors)


# --------------------------------------------------------------------------------------------
# The two conversations

REQUEST = "Open a ticket: the printer on floor 3 is jammed, it's urgent."
TITLE = "Printer jammed on floor 3"

FIXED_ON_RETRY: list[Turn] = [
    (Call("call_1", "create_ticket", {"title": TITLE, "priority": "urgent", "floor": 3}),),
    (Call("call_2", "create_ticket", {"title": TITLE, "priority": "high"}),),
    "Ticket T-1001 is open with high priority.",
]
KEEPS_FAILING: list[Turn] = [
    (Call("call_1", "create_ticket", {"title": TITLE, "priority": "urgent"}),),
    (Call("call_2", "create_ticket", {"title": TITLE, "priority": "critical"}),),
    (Call("call_3", "create_ticket", {"title": TITLE, "priority": "asap"}),),
    "I could not open the ticket: its priority must be low or high. Which one should I use?",
]
SCENARIOS: dict[str, list[Turn]] = {
    "the model fixes its arguments": FIXED_ON_RETRY,
    "the model keeps failing and the policy escalates": KEEPS_FAILING,
}


def run_scenario(name: str, turns: Sequence[Turn]) -> ScriptServer:
    """Play one conversation against a fresh scripted model; returns what the model received."""
    tools = Toolset([CreateTicket])
    with (
        serve_script(turns) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
    ):
        repair_loop(client, tools, RepairPolicy(max_rounds=2), lineage=name, request=REQUEST)
    return server


def main() -> int:
    """Play both conversations and print their transcripts."""
    for number, (name, turns) in enumerate(SCENARIOS.items(), 1):
        print(f"== {number}. {name}")
        server = run_scenario(name, turns)
        answered = sum(len(answers) for answers in server.answers)
        print(f"server: {len(server.requests)} requests, {answered} tool messages, one per call id")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
