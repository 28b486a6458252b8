"""A whole JSON response where a stream was asked for, and a whole response handed over.

A server that ignores `stream=True` (a proxy, a gateway, a mock) answers one JSON document. The
openai and anthropic SDKs read that body as an event stream with no event in it and yield
nothing, so `assemble` ended empty, with no error, and every call the response carried was
lost; so did a whole `ChatCompletion`, `Response` or `Message` handed to `feed_chunk` or
`assemble`. Their calls are read now, as the stream of the same response gives them; and by
`feed_sse` from the same bytes, which a gateway sees; boto3 (a `Converse` response) and
google-genai give their calls or say why not.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

pytest.importorskip("toolwire._core")

from toolwire import aassemble, assemble, assistant_turn
from toolwire.assembler import Assembler

from .bedrockkit import assemble_bedrock
from .clients import assemble_async, assemble_sync, async_client, open_async, open_sync
from .conftest import SSEServer
from .streamkit import Call, sse_body, well_formed_stream

WEATHER = {"city": "Oslo 😀", "days": [1, 2]}
USAGE = {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}

CHAT: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "test-model",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "refusal": None,
                "tool_calls": [
                    {
                        "id": "call_w",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(WEATHER)},
                    },
                    {
                        "id": "call_t",
                        "type": "function",
                        "function": {"name": "now", "arguments": "{}"},
                    },
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": USAGE,
}

RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "status": "completed",
    "model": "test-model",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_w",
            "call_id": "call_w",
            "name": "get_weather",
            "arguments": json.dumps(WEATHER),
            "status": "completed",
        },
        {
            "type": "function_call",
            "id": "fc_t",
            "call_id": "call_t",
            "name": "now",
            "arguments": "{}",
            "status": "completed",
        },
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 3,
        "output_tokens": 5,
        "total_tokens": 8,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}

MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "test-model",
    "content": [
        {"type": "thinking", "thinking": "Let me think.", "signature": "c2ln"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "call_w", "name": "get_weather", "input": WEATHER},
        {"type": "tool_use", "id": "call_t", "name": "now", "input": {}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 5},
}

WHOLE = {"openai-chat": CHAT, "openai-responses": RESPONSE, "anthropic": MESSAGE}
REASONS = {"openai-chat": "tool_calls", "openai-responses": "completed", "anthropic": "tool_use"}
THOUGHT = [{"type": "thinking", "thinking": "Let me think.", "signature": "c2ln"}]
FORMATS = list(WHOLE)


def _sdk_object(fmt: str) -> Any:
    """The whole response as the SDK's model, as `create(...)` without `stream=True` gives it."""
    if fmt == "openai-chat":
        from openai.types.chat import ChatCompletion

        return ChatCompletion.model_validate(CHAT)
    if fmt == "openai-responses":
        from openai.types.responses import Response

        return Response.model_validate(RESPONSE)
    from anthropic.types import Message

    return Message.model_validate(MESSAGE)


def _check(calls: list[Any], text: str, reason: str | None, reasoning: list[Any], fmt: str) -> None:
    assert [(c.name, c.id, c.value, c.error) for c in calls] == [
        ("get_weather", "call_w", WEATHER, None),
        ("now", "call_t", {}, None),
    ]
    assert text == "Checking."
    assert reason == REASONS[fmt]
    assert reasoning == (THOUGHT if fmt == "anthropic" else [])


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_json_answer_to_a_stream_request_gives_its_calls(
    sse_server: SSEServer, fmt: str, indent: int | None
) -> None:
    # The real client over loopback, sync and async: it yields nothing for such a body.
    body = json.dumps(WHOLE[fmt], indent=indent, ensure_ascii=False).encode()
    for run in (assemble_sync, lambda r, f: asyncio.run(assemble_async(r, f))):
        route = sse_server.register(body, content_type="application/json; charset=utf-8")
        _, stream = run(route, fmt)
        _check(stream.calls, stream.text, stream.finish_reason, stream.reasoning, fmt)
        assert stream.transport_error is None and stream.assembler.stream_errors() == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_response_handed_over_gives_its_calls(fmt: str) -> None:
    for whole in (WHOLE[fmt], _sdk_object(fmt)):
        asm = Assembler()
        info = asm.feed_chunk(whole)
        assert info.finish_reason == REASONS[fmt]
        assert [(f.id, f.name) for f in info.feeds if f.name] == [
            ("call_w", "get_weather"),
            ("call_t", "now"),
        ]
        _check(asm.finish(), info.text, info.finish_reason, asm.reasoning, fmt)
    # `create(...)` without `stream=True` handed to `assemble`: a pydantic model iterates over
    # its fields, which were read as chunks of no format.
    with assemble(_sdk_object(fmt)) as stream:
        list(stream)
    _check(stream.calls, stream.text, stream.finish_reason, stream.reasoning, fmt)


def test_a_json_answer_that_is_no_response_is_told(sse_server: SSEServer) -> None:
    # Not a response of any format: no call, and the stream says why rather than ending empty,
    # with the kind `feed_sse` tells for the same bytes.
    body = b'{"hello": "world"}'
    _, stream = assemble_sync(
        sse_server.register(body, content_type="application/json"), "openai-chat"
    )
    assert stream.calls == [] and stream.finish_reason is None
    raw = Assembler()
    raw.feed_sse(body)
    assert raw.finish() == []
    kinds = [[k for k, _, _ in a.stream_errors()] for a in (stream.assembler, raw)]
    assert kinds == [["truncated_body"], ["truncated_body"]]
    # JSON that does not parse is the transport error the SDK's own decoding would raise.
    route = sse_server.register(b'{"choices": [', content_type="application/json")
    _, cut = assemble_sync(route, "openai-chat")
    assert isinstance(cut.transport_error, json.JSONDecodeError) and cut.finish_reason is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_error_document_answered_with_200_ends_the_stream_as_an_error(
    sse_server: SSEServer, fmt: str
) -> None:
    body = b'{"error": {"message": "overloaded", "type": "server_error"}}'
    route = sse_server.register(body, content_type="application/json")
    _, stream = assemble_sync(route, fmt)
    assert stream.calls == [] and stream.finish_reason == "error"
    assert [k for k, _, _ in stream.assembler.stream_errors()] == ["provider_error"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_event_stream_labelled_json_is_still_read_as_events(
    sse_server: SSEServer, fmt: str
) -> None:
    # The SDKs read the body as events whatever its label: so does the wrapper, from the body
    # it read to tell.
    calls = [Call("get_weather", json.dumps(WEATHER), "call_w")]
    body = sse_body(well_formed_stream(fmt, calls, size=4), fmt)
    for run in (assemble_sync, lambda r, f: asyncio.run(assemble_async(r, f))):
        _, stream = run(sse_server.register(body, content_type="application/json"), fmt)
        assert [(c.name, c.value, c.error) for c in stream.calls] == [
            ("get_weather", WEATHER, None)
        ]


def test_the_async_wrapper_closes_the_answer_it_read(sse_server: SSEServer) -> None:
    async def main() -> Any:
        route = sse_server.register(json.dumps(CHAT).encode(), content_type="application/json")
        async with async_client(route, "openai-chat") as client:
            source = await open_async(client, "openai-chat")
            async with aassemble(source) as stream:
                events = [event async for event in stream]
            return events, source.response.is_closed, stream

    events, closed, stream = asyncio.run(main())
    assert closed and len(stream.calls) == 2 and type(events[-1]).__name__ == "StreamEnded"


@pytest.mark.parametrize(("reason", "kind"), [("tool_use", None), ("max_tokens", "truncated")])
def test_a_whole_message_s_empty_tool_input_is_read_as_its_stream_reads_it(
    reason: str, kind: str | None
) -> None:
    # A tool block with no input is a call without parameters when the message goes on, and
    # cut when the message stopped at the output limit, as the block's stream says it.
    block = {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}}
    message = {**MESSAGE, "content": [block], "stop_reason": reason}
    asm = Assembler()
    asm.feed_chunk(message)
    (call,) = asm.finish()
    assert (call.error.kind if call.error else None) == kind
    assert call.ok == (kind is None)


def test_a_whole_response_s_messages_keep_their_places_as_its_stream_s_do() -> None:
    # A message after a call goes back after it, as from the stream of the same response:
    # the whole response's events must start each message item where its stream starts it.
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ping"}
    response = {
        **RESPONSE,
        "output": [
            {**call, "arguments": "{}", "status": "completed"},
            _message("msg_1", "Pinged."),
            _message("msg_2", "Anything else?"),
        ],
    }
    message = {
        **MESSAGE,
        "content": [
            {"type": "tool_use", "id": "call_1", "name": "ping", "input": {"n": 1}},
            {"type": "text", "text": "Pinged."},
        ],
    }
    for whole, style, shape in (
        (response, "openai-responses", ["call_1", "Pinged.", "Anything else?"]),
        (message, "anthropic", ["tool_use", "text"]),
    ):
        asm = Assembler()
        text = asm.feed_chunk(whole).text
        turn = assistant_turn(asm.finish(), style=style, text=text, reasoning=asm.reasoning)
        if style == "anthropic":
            assert [block["type"] for block in turn[0]["content"]] == shape
        else:
            assert [item.get("call_id") or item.get("content") for item in turn] == shape


def _message(msg_id: str, text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": msg_id,
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }


GEMINI: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Checking."},
                    {"functionCall": {"name": "get_weather", "args": WEATHER}},
                    {"functionCall": {"name": "now", "args": {}}},
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5, "totalTokenCount": 8},
}
ERROR = {"error": {"message": "overloaded", "type": "server_error"}}


def _read_raw(body: bytes, size: int, **limits: Any) -> Assembler:
    """`body` through `feed_sse` in pieces of `size` bytes, as a gateway sees it, finished."""
    asm = Assembler(**limits)
    for start in range(0, len(body), size):
        asm.feed_sse(body[start : start + size])
    asm.calls = asm.finish()  # type: ignore[attr-defined]
    return asm


def _shown(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.name, c.id if c.id else None, c.value, c.error) for c in calls]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("fmt", [*FORMATS, "gemini", "error"])
def test_feed_sse_reads_a_json_answer_as_assemble_does(
    sse_server: SSEServer, fmt: str, indent: int | None
) -> None:
    # A gateway sees the very bytes the SDK read: the same calls, text, reasoning, finish
    # reason, usage and stream errors, however the body was cut.
    whole = {**WHOLE, "gemini": GEMINI, "error": ERROR}[fmt]
    # White space and a BOM before the document (google-genai reads none of them).
    lead = b"" if fmt == "gemini" else b"\xef\xbb\xbf \r\n"
    body = lead + json.dumps(whole, indent=indent, ensure_ascii=False).encode()
    route = sse_server.register(body, content_type="application/json")
    _, stream = assemble_sync(route, "openai-chat" if fmt == "error" else fmt)
    if fmt == "error":
        assert stream.finish_reason == "error" and stream.calls == []
    else:
        assert [c.name for c in stream.calls] == ["get_weather", "now"]
    for size in (len(body), 7, 1):
        raw = _read_raw(body, size)
        assert _shown(raw.calls) == _shown(stream.calls), size  # type: ignore[attr-defined]
        assert raw.text == stream.text
        assert raw.finish_reason == stream.finish_reason
        assert raw.reasoning == stream.reasoning
        assert raw.usage == stream.usage
        assert [k for k, _, _ in raw.stream_errors()] == (
            ["provider_error"] if fmt == "error" else []
        )


def test_feed_sse_still_frames_an_event_stream_that_opens_with_blank_lines() -> None:
    calls = [Call("get_weather", json.dumps(WEATHER), "call_w")]
    body = b"\r\n\n" + sse_body(well_formed_stream("anthropic", calls, size=4), "anthropic")
    raw = _read_raw(body, 1)
    assert _shown(raw.calls) == [("get_weather", "call_w", WEATHER, None)]  # type: ignore[attr-defined]
    assert raw.stream_errors() == []


def test_a_json_answer_past_max_stream_bytes_is_refused_unread(sse_server: SSEServer) -> None:
    # A server that sends a JSON document without end: the wrapper reads it only up to the
    # limit, then ends the stream as a response past it ends (no call, no finish reason,
    # `stream_limit`); it used to read the whole body first, here until the read timed out.
    body = json.dumps({**CHAT, "pad": "x" * 1_000_000}).encode()
    route = sse_server.register(
        body, content_type="application/json", drop_after=200_000, stall=True
    )
    client = openai.OpenAI(
        base_url=route.openai_base_url, api_key="test", max_retries=0, timeout=10
    )
    try:
        with (
            client,
            assemble(
                open_sync(client, "openai-chat"), limits={"max_stream_bytes": 50_000}
            ) as stream,
        ):
            events = list(stream)
    finally:
        route.release.set()
    assert stream.transport_error is None and stream.calls == []
    assert type(events[-1]).__name__ == "StreamEnded" and stream.finish_reason is None
    assert [k for k, _, _ in stream.assembler.stream_errors()] == ["stream_limit"]
    # The raw path refuses the same body the same way, and holds none of it.
    raw = _read_raw(body, 4096, max_stream_bytes=50_000)
    assert raw.calls == [] and raw.finish_reason is None  # type: ignore[attr-defined]
    assert [k for k, _, _ in raw.stream_errors()] == ["stream_limit"]


def test_the_async_wrapper_bounds_a_json_answer_too(sse_server: SSEServer) -> None:
    body = json.dumps({**CHAT, "pad": "x" * 200_000}).encode()
    route = sse_server.register(body, content_type="application/json")
    _, stream = asyncio.run(
        assemble_async(route, "openai-chat", limits={"max_stream_bytes": 50_000})
    )
    assert stream.calls == [] and stream.finish_reason is None
    assert [k for k, _, _ in stream.assembler.stream_errors()] == ["stream_limit"]
    # Under the limit the body is read whole, its bytes given back to the count.
    _, read = asyncio.run(
        assemble_async(route, "openai-chat", limits={"max_stream_bytes": 300_000})
    )
    assert len(read.calls) == 2 and read.assembler.stream_errors() == []


CONVERSE: dict[str, Any] = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Let me think.", "signature": "c2ln"}
                    }
                },
                {"text": "Checking."},
                {"toolUse": {"toolUseId": "call_w", "name": "get_weather", "input": WEATHER}},
                {"toolUse": {"toolUseId": "call_t", "name": "now", "input": {}}},
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8},
    "metrics": {"latencyMs": 1},
}


def test_boto3_gives_the_calls_of_a_converse_answer_to_converse_stream(
    sse_server: SSEServer,
) -> None:
    # boto3 reads a JSON body as event-stream frames and raises a checksum error, which told
    # nothing of the calls the answer carried.
    body = json.dumps(CONVERSE, ensure_ascii=False).encode()
    _, stream = assemble_bedrock(sse_server.register(body, content_type="application/json"))
    assert _shown(stream.calls) == [
        ("get_weather", "call_w", WEATHER, None),
        ("now", "call_t", {}, None),
    ]
    assert stream.text == "Checking." and stream.finish_reason == "tool_use"
    assert stream.usage == CONVERSE["usage"] and stream.transport_error is None
    reasoning = {"reasoningText": {"text": "Let me think.", "signature": "c2ln"}}
    assert stream.reasoning == [{"reasoningContent": reasoning}]
    # Another document is told, not read as an empty stream.
    route = sse_server.register(b'{"hello": "no"}', content_type="application/json")
    _, other = assemble_bedrock(route)
    assert other.calls == [] and other.transport_error is None
    assert [k for k, _, _ in other.assembler.stream_errors()] == ["truncated_body"]


EVENT_STREAM = "application/vnd.amazon.eventstream"


@pytest.mark.parametrize("lead", [b"", b"\xef\xbb\xbf\r\n "])
def test_boto3_reads_a_converse_answer_labelled_as_an_event_stream(
    sse_server: SSEServer, lead: bytes
) -> None:
    # A proxy that answers `converse-stream` with a `Converse` response under the event-stream
    # label: boto3 read it as frames and raised `ChecksumMismatch`, every call lost.
    body = lead + json.dumps(CONVERSE, ensure_ascii=False).encode()
    _, stream = assemble_bedrock(sse_server.register(body, content_type=EVENT_STREAM))
    assert stream.transport_error is None
    assert _shown(stream.calls) == [
        ("get_weather", "call_w", WEATHER, None),
        ("now", "call_t", {}, None),
    ]
    assert stream.text == "Checking." and stream.finish_reason == "tool_use"
    assert stream.usage == CONVERSE["usage"] and stream.assembler.stream_errors() == []


AWS_ERROR = {"message": "The security token included in the request is invalid."}


@pytest.mark.parametrize("label", ["application/json", EVENT_STREAM])
@pytest.mark.parametrize(
    "document", [AWS_ERROR, {"__type": "ThrottlingException", "Message": "Rate exceeded"}]
)
def test_an_aws_error_answered_with_200_is_the_provider_s_error(
    sse_server: SSEServer, label: str, document: dict[str, str]
) -> None:
    # AWS's JSON error shape was told as `truncated_body`: it is the provider's error, and says
    # why, on boto3's wrapper and on `feed_sse` alike.
    body = json.dumps(document).encode()
    said = json.dumps(document, separators=(",", ":"))
    _, stream = assemble_bedrock(sse_server.register(body, content_type=label))
    assert stream.calls == [] and stream.transport_error is None
    assert stream.finish_reason == "error"
    assert [(k, m) for k, _, m in stream.assembler.stream_errors()] == [("provider_error", said)]
    for size in (len(body), 3):
        raw = _read_raw(body, size)
        assert raw.finish_reason == "error"
        assert [(k, m) for k, _, m in raw.stream_errors()] == [("provider_error", said)]


def test_a_gateway_s_aws_error_ends_an_sdk_stream_as_the_provider_s_error(
    sse_server: SSEServer,
) -> None:
    # API Gateway in front of a model server answers its own errors so, whatever the SDK.
    route = sse_server.register(json.dumps(AWS_ERROR).encode(), content_type="application/json")
    _, stream = assemble_sync(route, "openai-chat")
    assert stream.calls == [] and stream.finish_reason == "error"
    assert [k for k, _, _ in stream.assembler.stream_errors()] == ["provider_error"]


@pytest.mark.parametrize("document", [[GEMINI], {"hello": "world"}])
def test_google_genai_s_empty_reading_of_a_json_answer_is_told(
    sse_server: SSEServer, document: object
) -> None:
    # google-genai yields a response with nothing in it for a JSON array of chunks (what
    # `streamGenerateContent` answers without `alt=sse`) or another document: the stream said
    # nothing of it. The raw path reads the array's chunks.
    body = json.dumps(document).encode()
    for run in (assemble_sync, lambda r, f: asyncio.run(assemble_async(r, f))):
        _, stream = run(sse_server.register(body, content_type="application/json"), "gemini")
        assert stream.calls == [] and stream.finish_reason is None
        assert [k for k, _, _ in stream.assembler.stream_errors()] == ["truncated_body"]
    raw = _read_raw(body, 5)
    names = [c.name for c in raw.calls]  # type: ignore[attr-defined]
    assert names == (["get_weather", "now"] if isinstance(document, list) else [])
