"""A provider error inside the stream, through the real SDK clients and on the raw SSE path.

The openai SDK raises a Chat `{"error": ...}` line and the anthropic SDK an `error` event; the
Responses client yields its `error` event. Every path must end the response the same way: the
calls the provider had not ended do not run (even one whose JSON happens to be complete), and
the finish reason is `error`.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire import assemble, tool_messages
from toolwire.assembler import Assembler
from toolwire.events import CallCompleted

from .clients import agree_on_every_path, assemble_both, assemble_sync
from .conftest import SSEServer
from .streamkit import (
    PROVIDER_ERRORS,
    Call,
    anthropic_stream,
    before_the_end,
    chat_chunk,
    chat_stream,
    gemini_call,
    gemini_chunk,
    sse_body,
    well_formed_stream,
)

CALLS = [Call("get_weather", '{"city": "Oslo 😀"}'), Call("lookup", '{"q": [1, 2')]


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_a_provider_error_mid_stream_runs_no_call(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    events = [*before_the_end(well_formed_stream(fmt, CALLS, size=4), fmt), PROVIDER_ERRORS[fmt]]
    body = sse_body(events, fmt)
    if fmt == "openai-chat":
        body = body.removesuffix(b"data: [DONE]\n\n")
    _, stream = assemble_both(sse_server.register(body, split=split), fmt)
    assert [c.name for c in stream.calls] == ["get_weather", "lookup"]
    assert all(not c.ok and c.error is not None for c in stream.calls)
    assert stream.finish_reason == "error"
    messages = tool_messages(stream.calls, [None, None])
    assert [m["tool_call_id"] for m in messages] == [c.id for c in stream.calls]


def _late_call(fmt: str) -> list[dict[str, Any]]:
    """Events of a complete, ended call that starts after the provider error."""
    if fmt == "anthropic":
        return [
            {
                "type": "content_block_start",
                "index": 5,
                "content_block": {"type": "tool_use", "id": "toolu_late", "name": "lookup"},
            },
            {
                "type": "content_block_delta",
                "index": 5,
                "delta": {"type": "input_json_delta", "partial_json": '{"q": [3]}'},
            },
            {"type": "content_block_stop", "index": 5},
        ]
    if fmt == "openai-responses":
        item = {"type": "function_call", "id": "fc_late", "call_id": "late", "name": "lookup"}
        return [
            {"type": "response.output_item.added", "output_index": 5, "item": item},
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 5,
                "item_id": "fc_late",
                "delta": '{"q": [3]}',
            },
            {
                "type": "response.output_item.done",
                "output_index": 5,
                "item": {**item, "arguments": '{"q": [3]}', "status": "completed"},
            },
        ]
    entry = {"index": 5, "id": "late", "type": "function", "function": {"name": "lookup"}}
    return [
        chat_chunk({"tool_calls": [{**entry, "function": {**entry["function"], "arguments": ""}}]}),
        chat_chunk({"tool_calls": [{"index": 5, "function": {"arguments": '{"q": [3]}'}}]}),
    ]


@pytest.mark.parametrize("late", [False, True])
@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat"])
def test_what_follows_a_provider_error_does_not_undo_it(
    sse_server: SSEServer, fmt: str, late: bool
) -> None:
    # After the error the stream goes on as if nothing happened: the calls' own ends, maybe a
    # new call, and the finish reason (`tool_calls`, `tool_use`, `completed`). The finish reason
    # stays `error` on the dict and raw SSE paths alike, and no call runs.
    full = well_formed_stream(fmt, CALLS, size=4)
    head = before_the_end(full, fmt)
    tail = [e for e in full if e not in head]
    events = [*head, PROVIDER_ERRORS[fmt], *(_late_call(fmt) if late else []), *tail]
    body = sse_body(events, fmt)
    dicts = Assembler()
    reasons = [dicts.feed_chunk(event).finish_reason for event in events]
    dict_calls = dicts.finish()
    assert [r for r in reasons if r is not None][-1] == "error"
    raw = Assembler()
    raw.feed_sse(body)
    raw_calls = raw.finish()
    assert raw.finish_reason == "error"
    for calls in (dict_calls, raw_calls):
        assert [c.name for c in calls] == ["get_weather", "lookup"] + (["lookup"] if late else [])
        assert all(not c.ok for c in calls), [(c.name, c.error) for c in calls]
    assert [key(c) for c in dict_calls] == [key(c) for c in raw_calls]
    # Both tell the provider's error, at the same event, with the same text.
    assert dicts.stream_errors() == raw.stream_errors()
    assert [kind for kind, _, _ in raw.stream_errors()] == ["provider_error"]
    if fmt == "openai-responses":
        # The Responses client yields its `error` event and every event after it (the Chat
        # and Anthropic SDKs raise and read no further): the SDK path agrees as well.
        _, stream = assemble_both(sse_server.register(body), fmt)
        assert stream.finish_reason == "error"
        assert all(not c.ok for c in stream.calls)


@pytest.mark.parametrize("ping", [False, True])
@pytest.mark.parametrize(("blank", "first_delta"), [("", False), ("", True), ("  ", True)])
def test_an_anthropic_tool_block_closed_empty_just_before_an_error_does_not_run(
    sse_server: SSEServer, blank: str, first_delta: bool, ping: bool
) -> None:
    # A tool block that stops with no input is a call without parameters only when the message
    # goes on; the provider giving up next says it did not, and the error stops the block as
    # every call it had not ended. The SDK raises the error, so it saw the same; the dict and
    # raw paths used to run the call as `{}`. A `ping` in between tells nothing either way.
    full = anthropic_stream([Call("get_time", blank)], empty_first_delta=first_delta)
    stop = next(i for i, e in enumerate(full) if e["type"] == "content_block_stop")
    events = [
        *full[: stop + 1],
        *([{"type": "ping"}] if ping else []),
        PROVIDER_ERRORS["anthropic"],
    ]
    # The SDK path against `feed_sse` on the same bytes, cut every way.
    _, stream = assemble_both(sse_server.register(sse_body(events, "anthropic")), "anthropic")
    assert stream.finish_reason == "error"
    # The dict path agrees, and what only it and `feed_sse` see after the error (the message
    # going on) does not make the block a call either.
    for tail in ([], full[stop + 1 :]):
        dicts = Assembler()
        for event in [*events, *tail]:
            dicts.feed_chunk(event)
        raw = Assembler()
        raw.feed_sse(sse_body([*events, *tail], "anthropic"))
        dict_calls = dicts.finish()
        assert [key(c) for c in dict_calls] == [key(c) for c in raw.finish()]
        assert [key(c) for c in dict_calls] == [key(c) for c in stream.calls]
        assert [(c.error.kind if c.error else None, c.stop_reason) for c in dict_calls] == [
            ("filtered", "error")
        ]


GEMINI_ERROR = {"error": {"code": 500, "message": "busy", "status": "INTERNAL"}}


@pytest.mark.parametrize("fmt", ["anthropic", "openai-responses", "openai-chat", "gemini"])
def test_a_provider_error_before_the_format_is_known_runs_no_call(fmt: str) -> None:
    # An error chunk first does not tell its format; `feed_chunk` ignored it and ran the calls
    # that followed, while the raw path stops them, as an SDK (which raises there) shows none.
    if fmt == "gemini":
        events = [
            GEMINI_ERROR,
            gemini_chunk(gemini_call("delete_file", {"path": "/tmp/x"})),
            gemini_chunk(finish="STOP"),
        ]
    else:
        events = [PROVIDER_ERRORS[fmt], *well_formed_stream(fmt, CALLS[:1], size=4)]
    dicts = Assembler()
    reasons = [dicts.feed_chunk(event).finish_reason for event in events]
    raw = Assembler()
    raw.feed_sse(sse_body(events, fmt))
    assert reasons[0] == "error"
    assert [r for r in reasons if r is not None][-1] == "error"
    assert raw.finish_reason == "error"
    dict_calls, raw_calls = dicts.finish(), raw.finish()
    assert [key(c) for c in dict_calls] == [key(c) for c in raw_calls]
    assert [c.error.kind if c.error else None for c in dict_calls] == ["filtered"]
    assert dicts.stream_errors() == raw.stream_errors()
    assert [kind for kind, event, _ in raw.stream_errors()] == ["provider_error"]


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat"])
def test_a_stop_after_a_provider_error_keeps_the_error_as_the_reason(fmt: str) -> None:
    # The call open at the error stopped there; a refusal or content filter the provider sends
    # after it renamed the reason on the dict path, while the raw path kept `error`.
    head = before_the_end(well_formed_stream(fmt, CALLS[1:], size=4), fmt)
    if fmt == "anthropic":
        stop: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": "refusal", "stop_sequence": None},
            "usage": {"output_tokens": 5},
        }
    else:
        stop = chat_chunk({}, finish_reason="content_filter")
    events = [*head, PROVIDER_ERRORS[fmt], stop]
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    raw = Assembler()
    raw.feed_sse(sse_body(events, fmt))
    for calls in (dicts.finish(), raw.finish()):
        assert [(c.error.kind if c.error else None, c.stop_reason) for c in calls] == [
            ("filtered", "error")
        ]


def key(call: Any) -> tuple[Any, ...]:
    return (call.name, call.id, call.arguments, call.error.kind if call.error else None)


def test_a_failed_response_and_a_gemini_error_are_told_as_on_the_raw_path() -> None:
    failed = {
        "type": "response.failed",
        "response": {
            "id": "resp_1",
            "status": "failed",
            "error": {"code": "server_error", "message": "boom"},
        },
    }
    responses = [
        *before_the_end(well_formed_stream("openai-responses", CALLS, size=4), "openai-responses"),
        failed,
    ]
    gemini = [gemini_chunk(gemini_call("delete_file", {"path": "/tmp/x"})), GEMINI_ERROR]
    for fmt, events, error in [
        ("openai-responses", responses, failed["response"]["error"]),
        ("gemini", gemini, GEMINI_ERROR["error"]),
    ]:
        dicts = Assembler()
        infos = [dicts.feed_chunk(event) for event in events]
        assert infos[-1].error == error and all(info.error is None for info in infos[:-1])
        raw = Assembler()
        raw.feed_sse(sse_body(events, fmt))
        assert dicts.stream_errors() == raw.stream_errors()
        assert [(kind, event) for kind, event, _ in raw.stream_errors()] == [
            ("provider_error", len(events))
        ]
        assert [key(c) for c in dicts.finish()] == [key(c) for c in raw.finish()]


def test_a_chat_error_after_the_finish_reason_stops_no_finished_call(
    sse_server: SSEServer, split: str
) -> None:
    # Chat has no end event per call: the finish reason (`tool_calls`) ends them all, so a
    # provider error after it (before the usage chunk or `[DONE]`) stops none, as an Anthropic
    # error after `content_block_stop` stops no ended block. Every call came back `filtered`,
    # the finished ones too. The stream still tells the error, and a call whose arguments were
    # cut is still not runnable.
    calls = [
        Call("get_weather", '{"city": "Oslo 😀"}', "call_w"),
        Call("transfer", "", "call_t"),
        Call("lookup", '{"q": [1, 2', "call_l"),
    ]
    events = [*well_formed_stream("openai-chat", calls, size=4), PROVIDER_ERRORS["openai-chat"]]
    body = sse_body(events, "openai-chat").removesuffix(b"data: [DONE]\n\n")
    _, stream = assemble_both(sse_server.register(body, split=split), "openai-chat")
    assert stream.transport_error is not None and stream.finish_reason == "error"
    dicts, raw = Assembler(), Assembler()
    reasons = [dicts.feed_chunk(event).finish_reason for event in events]
    raw.feed_sse(body)
    assert [r for r in reasons if r is not None][-1] == raw.finish_reason == "error"
    assert dicts.stream_errors() == raw.stream_errors()
    assert [kind for kind, _, _ in raw.stream_errors()] == ["provider_error"]
    kept = [("get_weather", {"city": "Oslo 😀"}), ("transfer", {})]
    for done in (dicts.finish(), raw.finish(), stream.calls):
        assert [(c.name, c.value) for c in done if c.ok] == kept
        (cut,) = [c for c in done if not c.ok]
        assert cut.name == "lookup" and cut.error is not None and cut.error.kind != "filtered"


@pytest.mark.parametrize("reason", ["tool_calls", "stop"])
def test_a_chat_call_after_the_finish_reason_and_an_error_stops_only_itself(
    sse_server: SSEServer, reason: str
) -> None:
    # The finish reason ended the choice as a whole answer, and the provider's error after it
    # stops none of its calls; a call that then still starts (a new index) is in no answer the
    # provider gave and must not run. It stopped every call, the finished ones too, on the
    # dict, SDK-object and raw SSE paths alike.
    import openai.types.chat as chat_types

    calls = [Call("get_weather", '{"city": "Oslo 😀"}', "call_w"), Call("transfer", "", "call_t")]
    head = chat_stream(calls, size=4, finish_reason=reason)
    events = [*head, PROVIDER_ERRORS["openai-chat"], *_late_call("openai-chat")]
    seen = agree_on_every_path(events, "openai-chat")
    expected = [
        ("get_weather", "call_w", '{"city": "Oslo 😀"}', None),
        ("transfer", "call_t", "{}", None),
        ("lookup", "late", '{"q": [3]}', "filtered"),
    ]
    assert [c[:4] for c in seen[0]] == expected
    assert seen[1] == "error"
    assert [kind for kind, _, _ in seen[4]] == ["provider_error"]
    # SDK objects (the error line as the SDK's model would hold it) and `assemble` over them.
    objects = [chat_types.ChatCompletionChunk.model_construct(**e) for e in events]
    sdk = Assembler()
    for chunk in objects:
        sdk.feed_chunk(chunk)
    sdk_calls = sdk.finish()
    with assemble(iter(objects)) as stream:
        ended = [e for e in stream if isinstance(e, CallCompleted)]
    for done in (sdk_calls, stream.calls):
        assert [(c.name, c.id, c.arguments, c.error and c.error.kind) for c in done] == expected
        (late,) = [c for c in done if not c.ok]
        assert late.stop_reason == "error"
    # Every call ends exactly once, the late one included.
    assert [e.call.ordinal for e in ended] == [0, 1, 2]
    assert stream.finish_reason == "error"
    # The real client raises at the error line and never shows the late call: the finished
    # calls stay runnable there too.
    route = sse_server.register(sse_body(events, "openai-chat"))
    _, real = assemble_sync(route, "openai-chat")
    assert real.transport_error is not None and real.finish_reason == "error"
    assert [(c.name, c.ok) for c in real.calls] == [("get_weather", True), ("transfer", True)]
