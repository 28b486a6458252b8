"""Chat calls that start after the finish reason that ended the choice as a whole answer.

Chat has no end event per call: `tool_calls` (or `stop`) ends every call there is, so neither
a break nor a provider error after it cuts or stops one of them. A call that starts after that
reason is in no answer that ended: a break cut nothing, so such a call with no arguments yet
ran as `{}`, and an error stopped either none of the calls or, through the call, every one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import agree_on_every_path, assemble_async, assemble_sync
from .conftest import SSEServer
from .streamkit import PROVIDER_ERRORS, Call, chat_chunk, chat_stream, sse_body

CALLS = [Call("get_weather", '{"city": "Oslo"}', "call_w"), Call("now", "", "call_n")]
FINISHED = [("get_weather", '{"city": "Oslo"}', None), ("now", "{}", None)]


def _late(arguments: str) -> dict[str, Any]:
    entry = {"index": 5, "id": "late", "type": "function"}
    return chat_chunk(
        {"tool_calls": [{**entry, "function": {"name": "delete_all", "arguments": arguments}}]}
    )


def _key(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.name, c.arguments, c.error.kind if c.error else None) for c in calls]


@pytest.mark.parametrize("reason", ["tool_calls", "stop"])
def test_a_break_after_the_finish_reason_cuts_only_a_call_that_started_after_it(
    sse_server: SSEServer, reason: str
) -> None:
    events = [*chat_stream(CALLS, size=4, finish_reason=reason), _late("")]
    expected = [*FINISHED, ("delete_all", "", "truncated")]
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    dicts.interrupt("the connection dropped")
    body = sse_body(events, "openai-chat").removesuffix(b"data: [DONE]\n\n")
    for parts in ([body], [body[i : i + 1] for i in range(len(body))]):
        raw = Assembler()
        for part in parts:
            raw.feed_sse(part)
        raw.interrupt("the connection dropped")
        assert _key(raw.finish()) == expected
    assert _key(dicts.finish()) == expected
    # The real client, its connection dropped before `[DONE]`, sync and async.
    for run in (assemble_sync, lambda r, f: asyncio.run(assemble_async(r, f))):
        stream = run(
            sse_server.register(body + b"data: ", drop_after=len(body) + 3), "openai-chat"
        )[1]
        assert stream.transport_error is not None and stream.finish_reason is None
        assert _key(stream.calls) == expected


@pytest.mark.parametrize("errors", [1, 2])
def test_an_error_after_a_late_call_stops_that_call_only(
    sse_server: SSEServer, errors: int
) -> None:
    # The finish reason, a call that starts after it, then the provider's error (twice: each
    # stopped every call before).
    events = [
        *chat_stream(CALLS, size=4),
        _late('{"q": 1}'),
        *[PROVIDER_ERRORS["openai-chat"]] * errors,
    ]
    seen = agree_on_every_path(events, "openai-chat")
    expected = [*FINISHED, ("delete_all", '{"q": 1}', "filtered")]
    assert [(name, arguments, kind) for name, _, arguments, kind, _ in seen[0]] == expected
    assert seen[1] == "error"
    # The real client raises at the error, after it showed the late call.
    route = sse_server.register(sse_body(events, "openai-chat"))
    _, stream = assemble_sync(route, "openai-chat")
    assert stream.finish_reason == "error" and _key(stream.calls) == expected


@pytest.mark.parametrize(
    ("late", "expected"),
    [
        # The call was cut at the finish reason and its text came on after it: the reason did
        # not end it, so the error after that text stops it, as any call it had not ended.
        ("1}", ("f", '{"a":1}', "filtered")),
        (' "b"}', ("f", '{"a": "b"}', "filtered")),
        # White space adds nothing to the call: the reason still ended it, and it runs.
        ("\n ", ("f", '{"a": 1}', None)),
    ],
)
def test_an_error_after_text_for_an_ended_call_stops_that_call(
    sse_server: SSEServer, late: str, expected: tuple[Any, ...]
) -> None:
    cut = expected[2] is not None
    call = Call("f", '{"a":' if cut else '{"a": 1}', "call_f")
    events = [
        *chat_stream([call], size=4),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": late}}]}),
        PROVIDER_ERRORS["openai-chat"],
    ]
    seen = agree_on_every_path(events, "openai-chat")
    shown = [(name, arguments.strip(), kind) for name, _, arguments, kind, _ in seen[0]]
    assert shown == [expected] and seen[1] == "error"
    route = sse_server.register(sse_body(events, "openai-chat"))
    _, stream = assemble_sync(route, "openai-chat")
    assert [(name, arguments.strip(), kind) for name, arguments, kind in _key(stream.calls)] == [
        expected
    ]


def test_text_for_an_ended_call_without_an_error_completes_it(sse_server: SSEServer) -> None:
    # The finish reason says nothing of the calls (quirks 34, 35): text after it is the
    # call's, and the call is decided from its text, on every path.
    events = [
        *chat_stream([Call("f", '{"a":', "call_f")], size=4),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
    ]
    seen = agree_on_every_path(events, "openai-chat")
    assert [(name, arguments, kind) for name, _, arguments, kind, _ in seen[0]] == [
        ("f", '{"a":1}', None)
    ]
    route = sse_server.register(sse_body(events, "openai-chat"))
    _, stream = assemble_sync(route, "openai-chat")
    assert _key(stream.calls) == [("f", '{"a":1}', None)]
