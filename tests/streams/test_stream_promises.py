"""Every started call ends with exactly one result, through the real SDK clients over HTTP.

Each test drives `assemble`/`aassemble` over a real openai or anthropic client talking to the
local server, then validates, executes and answers the calls, and checks that what the model
reads is one short, actionable result per call.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

pytest.importorskip("toolwire._core")

from toolwire import MisuseError, Toolset, aassemble, assemble, tool_messages
from toolwire.events import CallCompleted, CallStarted, StreamEnded
from toolwire.execution import Executor, Observer
from toolwire.payloads import Style

from .clients import async_client, check_event_order, open_async, open_sync, sync_client
from .conftest import Route, SSEServer
from .streamkit import Call, sse_body, well_formed_stream

STYLES: tuple[Style, ...] = ("openai-chat", "openai-responses", "anthropic")


class Lookup(BaseModel):
    """Look up an order."""

    order_id: int

    @field_validator("order_id")
    @classmethod
    def _reachable(cls, value: int) -> int:
        if value == 13:
            # An application validator with a bug (or an outage behind it).
            raise RuntimeError("order service down for order 13")
        return value


def quiet_executor() -> Executor:
    logger = logging.getLogger("toolwire.execution.test-promises")
    logger.setLevel(logging.CRITICAL)
    logger.propagate = False
    return Executor(
        {"lookup": lambda args: {"order": args.order_id}},
        observer=Observer(logger=logger, otel=False),
    )


def run_sync(route: Route, fmt: str, tools: Toolset) -> tuple[list[Any], Any]:
    with sync_client(route, fmt) as client, assemble(open_sync(client, fmt), tools) as stream:
        events = list(stream)
    check_event_order(events, stream)
    return events, stream


def run_async(route: Route, fmt: str, tools: Toolset) -> tuple[list[Any], Any]:
    async def main() -> tuple[list[Any], Any]:
        async with async_client(route, fmt) as client:
            source = await open_async(client, fmt)
            async with aassemble(source, tools) as stream:
                events = [event async for event in stream]
        return events, stream

    events, stream = asyncio.run(main())
    check_event_order(events, stream)
    return events, stream


def one_answer_per_call(stream: Any, fmt: Style) -> list[dict[str, Any]]:
    """Execute the calls and answer them; returns the payloads the model reads, in order."""
    assert len(stream.outcomes) == len(stream.calls)
    results = quiet_executor().execute_all(stream.outcomes)
    messages = tool_messages(stream.calls, results, style=fmt)
    assert len(messages) == len(stream.calls)
    key = {"openai-chat": "content", "openai-responses": "output", "anthropic": "content"}[fmt]
    return [json.loads(m[key]) for m in messages]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("fmt", STYLES)
def test_an_unknown_tool_is_told_to_pick_an_available_tool(
    sse_server: SSEServer, fmt: Style, mode: str
) -> None:
    calls = [Call("lookup", '{"order_id": 7}', "c_ok"), Call("launch", '{"n": 1}', "c_unknown")]
    route = sse_server.register_events(well_formed_stream(fmt, calls), fmt)
    run = run_sync if mode == "sync" else run_async
    _, stream = run(route, fmt, Toolset([Lookup]))
    ok, unknown = one_answer_per_call(stream, fmt)
    assert ok == {"ok": True, "result": {"order": 7}}
    error = unknown["error"]
    assert error["type"] == "unknown_tool" and '"lookup"' in error["message"]
    # Calling "launch" again cannot work: the model is sent to the tools that exist.
    assert "launch" not in error["instruction"]
    assert "available tools" in error["instruction"]
    sent = stream.outcomes[1].to_message(stream.calls[1])["content"]
    assert json.loads(sent)["instruction"] == error["instruction"]


def cut_after_second_start(fmt: str) -> tuple[bytes, int]:
    """A stream whose connection drops right after the second call started, before any of its
    argument text (the first call is complete)."""
    calls = [Call("lookup", '{"order_id": 7}', "c_1"), Call("lookup", '{"order_id": 8}', "c_2")]
    body = sse_body(well_formed_stream(fmt, calls), fmt)
    marker = {"openai-chat": b'"id":"c_2"', "openai-responses": b'"call_id":"c_2"'}.get(
        fmt, b'"id":"c_2"'
    )
    start = body.index(marker)
    return body, body.index(b"\n\n", start) + 2


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("fmt", STYLES)
def test_a_call_cut_before_its_arguments_reads_as_cut_off_not_as_a_missing_field(
    sse_server: SSEServer, fmt: Style, mode: str
) -> None:
    body, drop = cut_after_second_start(fmt)
    route = sse_server.register(body, split="whole", drop_after=drop)
    run = run_sync if mode == "sync" else run_async
    events, stream = run(route, fmt, Toolset([Lookup]))
    assert stream.transport_error is not None and stream.finish_reason is None
    assert sum(isinstance(e, CallStarted) for e in events) == 2
    first, second = stream.calls
    assert first.ok and second.id == "c_2"
    # The required `order_id` is not missing from what the model sent: nothing of it arrived.
    assert second.error is not None and second.error.kind == "truncated"
    assert stream.outcomes[1].error_type == "truncated"
    ok, cut = one_answer_per_call(stream, fmt)
    assert ok["ok"] is True
    assert cut["state"] == "parse_failed" and cut["error"]["type"] == "truncated"


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("fmt", STYLES)
def test_a_validator_that_raises_fails_its_call_and_not_the_stream(
    sse_server: SSEServer, fmt: Style, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    calls = [
        Call("lookup", '{"order_id": 13}', "c_bug"),
        Call("lookup", '{"order_id": 7}', "c_ok"),
    ]
    route = sse_server.register_events(well_formed_stream(fmt, calls), fmt)
    run = run_sync if mode == "sync" else run_async
    with caplog.at_level(logging.ERROR, logger="toolwire.stream"):
        events, stream = run(route, fmt, Toolset([Lookup]))
    completed = [e for e in events if isinstance(e, CallCompleted)]
    assert [e.call.id for e in completed] == ["c_bug", "c_ok"]
    assert isinstance(events[-1], StreamEnded)
    failed, good = stream.outcomes
    assert good.ok
    assert not failed.ok and failed.error_type == "internal_error" and not failed.retryable
    # Operators learn which call failed and why, without the exception's text.
    assert "c_bug" in caplog.text and "RuntimeError" in caplog.text
    assert "order service down" not in caplog.text
    bug, ok = one_answer_per_call(stream, fmt)
    assert ok == {"ok": True, "result": {"order": 7}}
    assert bug["ok"] is False and bug["error"]["type"] == "internal_error"
    assert bug["error"]["retryable"] is False
    assert "order service down" not in json.dumps(bug)


def _interrupting_toolset() -> Toolset:
    """`lookup`, whose validator raises `KeyboardInterrupt` the first time it runs (a Ctrl-C
    while the stream validates its calls)."""
    raised: list[int] = []

    class Lookup(BaseModel):
        """Look up an order."""

        order_id: int

        @field_validator("order_id")
        @classmethod
        def _interrupted_once(cls, value: int) -> int:
            if not raised:
                raised.append(value)
                raise KeyboardInterrupt
            return value

    return Toolset([Lookup])


def _two_lookups(sse_server: SSEServer, fmt: Style) -> Route:
    calls = [Call("lookup", '{"order_id": 1}', "c_1"), Call("lookup", '{"order_id": 2}', "c_2")]
    return sse_server.register_events(well_formed_stream(fmt, calls), fmt)


def _read_past_an_interrupt(events: list[Any], stream: Any) -> None:
    # Each call that started completes once, the stream ends once, and every call has its
    # outcome (the interrupted one validated again).
    assert [c.id for c in stream.calls] == ["c_1", "c_2"]
    assert [o.ok for o in stream.outcomes] == [True, True]
    completed = [e.call.id for e in events if isinstance(e, CallCompleted)]
    assert completed == ["c_1", "c_2"]
    assert sum(isinstance(e, StreamEnded) for e in events) == 1
    assert isinstance(events[-1], StreamEnded)


@pytest.mark.parametrize("fmt", STYLES)
def test_a_keyboard_interrupt_while_the_calls_validate_loses_no_call(
    sse_server: SSEServer, fmt: Style
) -> None:
    route = _two_lookups(sse_server, fmt)
    events: list[Any] = []
    with sync_client(route, fmt) as client:
        stream = assemble(open_sync(client, fmt), _interrupting_toolset())
        with pytest.raises(KeyboardInterrupt):
            events.extend(stream)
        events.extend(stream)  # a reader that comes back
    _read_past_an_interrupt(events, stream)


@pytest.mark.parametrize("fmt", STYLES)
def test_a_keyboard_interrupt_while_async_calls_validate_loses_no_call(
    sse_server: SSEServer, fmt: Style
) -> None:
    route = _two_lookups(sse_server, fmt)

    async def main() -> tuple[list[Any], Any]:
        events: list[Any] = []
        async with async_client(route, fmt) as client:
            stream = aassemble(await open_async(client, fmt), _interrupting_toolset())
            with pytest.raises(KeyboardInterrupt):
                async for event in stream:
                    events.append(event)
            events.extend([event async for event in stream])
        return events, stream

    _read_past_an_interrupt(*asyncio.run(main()))


def test_partial_after_the_end_refuses_an_unknown_ordinal_as_such() -> None:
    chunk = {
        "id": "x",
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": 1}'},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    stream = assemble([chunk])
    list(stream)
    assert stream.partial(0) == {"a": 1}
    # It said "already finished: ... the ToolCall that finish() returned", a finish the
    # caller never made, and an ordinal that is no int raised "'<=' not supported".
    with pytest.raises(MisuseError, match="no call with ordinal 1: the stream had 1"):
        stream.partial(1)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        stream.partial("0")  # type: ignore[arg-type]
