"""`toolwire.assemble` over the real google-genai client (Gemini `streamGenerateContent`), sync
and async, `feed_sse` on the same bytes cut at adversarial points, and `feed_chunk` on the same
chunks as plain dicts of the REST shape: the three ways in give the same calls (`assemble_gemini`
and `assemble_both` check every way on every stream they run)."""

from __future__ import annotations

import contextlib
import json
import math
import random
import struct
from itertools import pairwise
from pathlib import Path
from typing import Any, cast

import pytest
from google.genai import errors as genai_errors
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler
from toolwire.events import CallCompleted, CallStarted, StreamEnded, TextDelta
from toolwire.formats import detect_format
from toolwire.formats._types import LIMIT_REASONS, STOPPING_REASONS
from toolwire.stream import assemble
from toolwire.toolset import Toolset

from .clients import assemble_async, assemble_both, assemble_gemini, assemble_sync, raw_key
from .conftest import SSEServer
from .streamkit import chat_chunk, gemini_call, gemini_chunk, sse_body, tc, tool_delta

FMT = "gemini"
USAGE = {"promptTokenCount": 12, "candidatesTokenCount": 30, "totalTokenCount": 42}
TOOLS = Toolset(
    [
        {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
)


def serve(server: SSEServer, chunks: list[dict[str, Any]], split: str = "whole") -> Any:
    return server.register(sse_body(chunks, FMT), split=split)


def summary(calls: list[Any]) -> list[tuple[Any, ...]]:
    return [(c.name, c.value, c.error.kind if c.error else None) for c in calls]


def feed_dicts(chunks: list[dict[str, Any]]) -> tuple[list[Any], Assembler]:
    asm = Assembler()
    for chunk in chunks:
        asm.feed_chunk(chunk)
    return asm.finish(), asm


def feed_dicts_and_sse(chunks: list[dict[str, Any]]) -> list[Any]:
    """`feed_chunk` on the dicts and `feed_sse` on their body byte by byte: the same calls."""
    calls, dicts = feed_dicts(chunks)
    raw = Assembler()
    body = sse_body(chunks, FMT)
    for i in range(len(body)):
        raw.feed_sse(body[i : i + 1])
    raw_calls = raw.finish()
    assert raw_key(raw_calls) == raw_key(calls)
    assert [c.metadata for c in raw_calls] == [c.metadata for c in calls]
    assert raw.format == dicts.chunk_format == FMT
    return calls


PARALLEL = [
    gemini_chunk({"text": "Let me check "}, {"text": "東京 and 🌸 Rome."}),
    # Three whole calls in one chunk, two of them to the same tool (quirk 33's first half).
    gemini_chunk(
        gemini_call("get_weather", {"city": "東京", "note": '晴れ 🌸 "quoted" \\ back'}),
        gemini_call("get_weather", {"city": "Rome", "days": 3}),
        gemini_call("get_time", {"tz": "Europe/Rome"}),
    ),
    gemini_chunk(gemini_call("list_files", {}), usage=USAGE),
    gemini_chunk(finish="STOP", usage={**USAGE, "candidatesTokenCount": 31}),
]
PARALLEL_VALUES = [
    ("get_weather", {"city": "東京", "note": '晴れ 🌸 "quoted" \\ back'}, None),
    ("get_weather", {"city": "Rome", "days": 3}, None),
    ("get_time", {"tz": "Europe/Rome"}, None),
    ("list_files", {}, None),
]


def test_several_calls_in_one_chunk_sync(sse_server: SSEServer, split: str) -> None:
    route = serve(sse_server, PARALLEL, split)
    events, stream = assemble_gemini(route, PARALLEL)
    assert summary(stream.calls) == PARALLEL_VALUES
    # Gemini sends no index and (on most models) no id: each call is keyed apart.
    assert [c.index for c in stream.calls] == [0, 1, 2, 3]
    assert [c.id for c in stream.calls] == [None] * 4
    assert all(c.ok for c in stream.calls)
    assert stream.text == "Let me check 東京 and 🌸 Rome."
    assert stream.text == "".join(e.text for e in events if isinstance(e, TextDelta))
    assert stream.format == FMT
    # STOP with calls (quirk 34): the calls decide, not the reason.
    end = events[-1]
    assert isinstance(end, StreamEnded) and end.finish_reason == "STOP"
    assert end.usage == {**USAGE, "candidatesTokenCount": 31}
    assert [e.name for e in events if isinstance(e, CallStarted)] == [
        "get_weather",
        "get_weather",
        "get_time",
        "list_files",
    ]
    assert route.requests[0]["path"] == "/v1beta/models/test-model:streamGenerateContent?alt=sse"
    assert stream.transport_error is None


@pytest.mark.anyio
async def test_several_calls_in_one_chunk_async(sse_server: SSEServer, split: str) -> None:
    events, stream = await assemble_async(serve(sse_server, PARALLEL, split), FMT)
    assert summary(stream.calls) == PARALLEL_VALUES
    assert isinstance(events[-1], StreamEnded) and events[-1].finish_reason == "STOP"
    assert stream.usage == {**USAGE, "candidatesTokenCount": 31}


def test_crlf_framing_bytewise(sse_server: SSEServer) -> None:
    # Google's servers end SSE lines with CRLF; every byte its own write.
    body = sse_body(PARALLEL, FMT).replace(b"\n", b"\r\n")
    _, stream = assemble_sync(sse_server.register(body, split="bytewise"), FMT)
    assert summary(stream.calls) == PARALLEL_VALUES


def test_calls_across_chunks_never_merge(sse_server: SSEServer, split: str) -> None:
    chunks = [
        gemini_chunk(gemini_call("f", {"a": 1}, id="call-1")),
        gemini_chunk(gemini_call("f", {"a": 1}, id="call-2")),
        gemini_chunk(gemini_call("f", {"a": 1}), finish="STOP"),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert summary(stream.calls) == [("f", {"a": 1}, None)] * 3
    assert [c.id for c in stream.calls] == ["call-1", "call-2", None]


def test_the_same_call_sent_again_runs_once(sse_server: SSEServer, split: str) -> None:
    # Same id, name and arguments: a repeat (quirk 20), which ran twice under a renamed id. The
    # same id with other arguments is still a call of its own.
    chunks = [
        gemini_chunk(gemini_call("f", {"a": 1}, id="call-1")),
        gemini_chunk(gemini_call("f", {"a": 1}, id="call-1")),
        gemini_chunk(gemini_call("f", {"a": 2}, id="call-1"), finish="STOP"),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert summary(stream.calls) == [("f", {"a": 1}, None), ("f", {"a": 2}, None)]


def test_name_only_call_without_arguments_is_parameterless(
    sse_server: SSEServer, split: str
) -> None:
    # A function without parameters: a name and no `args` that no args-only part follows.
    chunks = [
        gemini_chunk(gemini_call("list_files")),
        gemini_chunk(gemini_call("get_time", {"tz": "UTC"})),
        gemini_chunk(gemini_call("refresh"), finish="STOP"),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert summary(stream.calls) == [
        ("list_files", {}, None),
        ("get_time", {"tz": "UTC"}, None),
        ("refresh", {}, None),
    ]
    assert all(c.ok for c in stream.calls)


def test_thought_parts_are_not_text(sse_server: SSEServer, split: str) -> None:
    chunks = [
        gemini_chunk({"text": "I should look it up.", "thought": True}),
        gemini_chunk({"text": "Checking."}, gemini_call("get_weather", {"city": "Oslo"})),
        gemini_chunk(finish="STOP"),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert stream.text == "Checking."
    assert summary(stream.calls) == [("get_weather", {"city": "Oslo"}, None)]


# --- Thought signatures (quirk 31) -----------------------------------------------------------


def test_thought_signatures_stay_on_their_calls(sse_server: SSEServer, split: str) -> None:
    chunks = [
        # A thought's signature is the thought's, a text's the text's (it goes with the text's
        # place): neither is a call's.
        gemini_chunk({"text": "Hmm.", "thought": True, "thoughtSignature": "dGhvdWdodA=="}),
        # A signature-only part before any call goes to the next call.
        gemini_chunk({"text": "", "thoughtSignature": "Zmlyc3Q="}),
        gemini_chunk(gemini_call("f", {"a": 1})),
        # Its own signature on the call's part.
        gemini_chunk(gemini_call("g", {"b": 2}, thoughtSignature="c2Vjb25k")),
        # A signature-only part after a call belongs to that call.
        gemini_chunk(gemini_call("h", {"c": 3}), {"thoughtSignature": "dGhpcmQ="}),
        # Quirk 33 with the signature on the second (args-only) part.
        gemini_chunk(gemini_call("k")),
        gemini_chunk(gemini_call(None, {"d": 4}, thoughtSignature="Zm91cnRo")),
        gemini_chunk({"text": "Done.", "thoughtSignature": "dGV4dA=="}, finish="STOP"),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    # Each call after the thought counts it, which the next turn sends back before them.
    after = {"reasoning_before": 1}
    assert [(c.name, c.value, c.metadata) for c in stream.calls] == [
        ("f", {"a": 1}, {"thought_signature": "Zmlyc3Q=", **after}),
        ("g", {"b": 2}, {"thought_signature": "c2Vjb25k", **after}),
        ("h", {"c": 3}, {"thought_signature": "dGhpcmQ=", **after}),
        # The text after it keeps its place there, and its signature, for the next turn.
        (
            "k",
            {"d": 4},
            {"thought_signature": "Zm91cnRo", "text_after": [[0, 1, "dGV4dA=="]], **after},
        ),
    ]
    assert stream.reasoning == [
        {"text": "Hmm.", "thought": True, "thoughtSignature": "dGhvdWdodA=="}
    ]


def test_signature_of_parallel_calls_only_on_the_first(sse_server: SSEServer, split: str) -> None:
    # Gemini signs only the first of parallel calls: the others keep no signature of their own.
    chunks = [
        gemini_chunk(
            gemini_call("f", {"a": 1}, thoughtSignature="c2ln"),
            gemini_call("f", {"a": 2}),
            finish="STOP",
        )
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert [c.metadata for c in stream.calls] == [{"thought_signature": "c2ln"}, {}]


# --- Finish reasons ----------------------------------------------------------------------------


def test_safety_finish_stops_every_call(sse_server: SSEServer, split: str) -> None:
    chunks = [
        gemini_chunk(gemini_call("f", {"a": 1})),
        gemini_chunk(gemini_call("g")),
        # When filters block the output, the streamed content is empty.
        gemini_chunk(finish="SAFETY"),
    ]
    events, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert [(c.name, c.error.kind if c.error else None, c.ok) for c in stream.calls] == [
        ("f", "filtered", False),
        ("g", "filtered", False),
    ]
    assert events[-1].finish_reason == "SAFETY"
    assert all(not e.call.ok for e in events if isinstance(e, CallCompleted))


def test_max_tokens_cuts_a_call_still_waiting_for_arguments(
    sse_server: SSEServer, split: str
) -> None:
    chunks = [
        gemini_chunk(gemini_call("f", {"a": 1}), gemini_call("g")),
        gemini_chunk(finish="MAX_TOKENS", usage=USAGE),
    ]
    events, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    # The whole call stands; the name-only one may have lost its arguments to the limit.
    assert summary(stream.calls) == [("f", {"a": 1}, None), ("g", None, "truncated")]
    assert events[-1].finish_reason == "MAX_TOKENS" and stream.usage == USAGE


@pytest.mark.parametrize(
    "reason",
    [
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "LANGUAGE",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "OTHER",
    ],
)
def test_reasons_after_which_no_call_runs(reason: str) -> None:
    calls, _ = feed_dicts([gemini_chunk(gemini_call("f", {"a": 1})), gemini_chunk(finish=reason)])
    assert [c.error.kind if c.error else None for c in calls] == ["filtered"]


@pytest.mark.parametrize("reason", ["STOP", "FINISH_REASON_UNSPECIFIED", "TOO_MANY_TOOL_CALLS"])
def test_reasons_that_leave_whole_calls_usable(reason: str) -> None:
    calls, _ = feed_dicts([gemini_chunk(gemini_call("f", {"a": 1}), finish=reason)])
    assert summary(calls) == [("f", {"a": 1}, None)]


def test_shared_reasons_read_the_same_on_the_raw_path() -> None:
    # `_types.STOPPING_REASONS` / `LIMIT_REASONS` must match `FinishReason::from_raw` in Rust.
    for reason in sorted(STOPPING_REASONS | LIMIT_REASONS):
        asm = Assembler()
        body = sse_body([chat_chunk({}, finish_reason=reason.upper())], "openai-chat")
        asm.feed_sse(body)
        want = "length" if reason in LIMIT_REASONS else "content_filter"
        if reason == "refusal":
            want = "refusal"
        assert asm.finish_reason_normalized == want, reason


def test_blocked_prompt(sse_server: SSEServer) -> None:
    chunks = [{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": USAGE}]
    events, stream = assemble_gemini(serve(sse_server, chunks), chunks)
    assert stream.calls == [] and stream.finish_reason == "PROHIBITED_CONTENT"
    assert isinstance(events[-1], StreamEnded) and events[-1].usage == USAGE


def test_calls_after_a_blocked_prompt_do_not_run() -> None:
    calls, _ = feed_dicts(
        [
            {"promptFeedback": {"blockReason": "SAFETY"}},
            gemini_chunk(gemini_call("f", {"a": 1}), finish="STOP"),
        ]
    )
    assert summary(calls) == [("f", {"a": 1}, "filtered")]


def test_only_candidate_zero_is_assembled(sse_server: SSEServer, split: str) -> None:
    chunks = [
        {
            "candidates": [
                {"content": {"parts": [gemini_call("f", {"a": 1})]}},
                {"index": 1, "content": {"parts": [gemini_call("g", {"b": 2})]}},
            ]
        },
        gemini_chunk({"text": "other answer"}, index=1, finish="SAFETY"),
        gemini_chunk(finish="STOP"),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert summary(stream.calls) == [("f", {"a": 1}, None)]
    assert stream.text == "" and stream.finish_reason == "STOP"


def test_usage_is_merged(sse_server: SSEServer) -> None:
    chunks = [
        gemini_chunk({"text": "a"}, usage={"promptTokenCount": 12}),
        gemini_chunk(
            gemini_call("f", {}),
            finish="STOP",
            usage={"candidatesTokenCount": 5, "thoughtsTokenCount": 9},
        ),
    ]
    _, stream = assemble_gemini(serve(sse_server, chunks), chunks)
    assert stream.usage == {
        "promptTokenCount": 12,
        "candidatesTokenCount": 5,
        "thoughtsTokenCount": 9,
    }


# --- Broken streams ----------------------------------------------------------------------------


def test_connection_drop_between_the_two_parts_of_a_call(sse_server: SSEServer, split: str) -> None:
    chunks = [
        gemini_chunk(gemini_call("f", {"a": 1})),
        gemini_chunk(gemini_call("g")),
        gemini_chunk(gemini_call(None, {"b": "never"}), finish="STOP"),
    ]
    body = sse_body(chunks, FMT)
    route = sse_server.register(body, split=split, drop_after=body.index(b"never"))
    events, stream = assemble_both(route, FMT)
    assert summary(stream.calls) == [("f", {"a": 1}, None), ("g", None, "truncated")]
    assert events[-1].finish_reason is None and stream.transport_error is not None


@pytest.mark.anyio
async def test_connection_drop_async(sse_server: SSEServer, split: str) -> None:
    chunks = [
        gemini_chunk(gemini_call("f", {"a": "東京"}), gemini_call("g")),
        gemini_chunk(gemini_call(None, {"b": "🌸 lost"}), finish="STOP"),
    ]
    body = sse_body(chunks, FMT)
    route = sse_server.register(body, split=split, drop_after=body.index("🌸".encode()) + 2)
    events, stream = await assemble_async(route, FMT)
    assert summary(stream.calls) == [("f", {"a": "東京"}, None), ("g", None, "truncated")]
    assert stream.transport_error is not None and events[-1].finish_reason is None


def _last_chunk_calls() -> list[dict[str, Any]]:
    return [
        gemini_chunk(gemini_call("f", {"a": 1})),
        gemini_chunk(gemini_call("get_weather", {"city": "Paris"}), finish="STOP", usage=USAGE),
    ]


@pytest.mark.parametrize("ending", ["\n", "", "\r", "\r\n"])
def test_a_last_chunk_without_its_blank_line_is_read(sse_server: SSEServer, ending: str) -> None:
    # google-genai reads the lines of a body that ends cleanly to its end, and decodes the data
    # gathered for an event there: a last chunk that the server did not close with a blank line
    # is delivered, and its call runs. The raw path dropped it as a cut event
    # (`truncated_body`), with the call and the finish reason in it.
    chunks = _last_chunk_calls()
    body = sse_body(chunks, FMT)
    assert body.endswith(b"\n\n")
    body = body[:-2] + ending.encode()
    _, stream = assemble_gemini(sse_server.register(body, split="adversarial"), chunks)
    assert summary(stream.calls) == [
        ("f", {"a": 1}, None),
        ("get_weather", {"city": "Paris"}, None),
    ]
    assert stream.finish_reason == "STOP" and stream.transport_error is None
    raw = Assembler()
    raw.feed_sse(body)
    raw.finish()
    assert raw.stream_errors() == []


def test_a_last_chunk_whose_connection_broke_is_not_read(sse_server: SSEServer) -> None:
    # The same bytes, but the transport broke off before the blank line: google-genai raises
    # and delivers nothing of the chunk it was reading, and an interrupted raw path reads
    # nothing of it either.
    body = sse_body(_last_chunk_calls(), FMT)
    route = sse_server.register(body, drop_after=len(body) - 2)
    events, stream = assemble_both(route, FMT)
    assert summary(stream.calls) == [("f", {"a": 1}, None)]
    assert stream.transport_error is not None and events[-1].finish_reason is None


def test_connection_drop_before_any_call(sse_server: SSEServer) -> None:
    body = sse_body([gemini_chunk({"text": "Let me"}), gemini_chunk({"text": " see"})], FMT)
    route = sse_server.register(body, drop_after=body.index(b" see"))
    events, stream = assemble_both(route, FMT)
    assert stream.calls == [] and stream.text == "Let me"
    assert isinstance(events[-1], StreamEnded) and events[-1].finish_reason is None


@pytest.mark.parametrize("complete", [True, False])
def test_error_chunk_mid_stream(sse_server: SSEServer, complete: bool) -> None:
    first = gemini_call("f", {"a": 1}) if complete else gemini_call("f")
    body = sse_body([gemini_chunk(first)], FMT) + (
        b'data: {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}\n\n'
    )
    events, stream = assemble_both(sse_server.register(body), FMT)
    assert isinstance(stream.transport_error, genai_errors.APIError)
    # The provider gave up on the answer: even a whole call does not run.
    assert [(c.name, c.error.kind if c.error else None, c.ok) for c in stream.calls] == [
        ("f", "filtered", False)
    ]
    assert events[-1].finish_reason == "error" == stream.finish_reason


def test_close_early_finishes_quietly(sse_server: SSEServer) -> None:
    from toolwire.stream import assemble

    from .clients import open_sync, sync_client

    route = serve(sse_server, PARALLEL, "random-1")
    with sync_client(route, FMT) as client, assemble(open_sync(client, FMT)) as stream:
        for event in stream:
            if isinstance(event, CallStarted):
                break
    assert [c.name for c in stream.calls] == ["get_weather", "get_weather", "get_time"]
    assert [c.ok for c in stream.calls] == [True, True, True]


def _socket_closed(response: Any) -> bool:
    # The socket, not `response.is_closed`: google-genai reads through httpx2 (which sets that
    # flag when the body's generator is closed) or httpx (which does not, though its connection
    # pool still closes the socket).
    sock = response.extensions["network_stream"].get_extra_info("socket")
    assert sock is not None
    return bool(sock.fileno() == -1)


@pytest.mark.parametrize("how", ["with", "close"])
def test_closing_early_closes_the_http_connection(sse_server: SSEServer, how: str) -> None:
    # google-genai's sync stream is a plain generator, not an object that holds its response:
    # closing it unwinds the SDK's generators down to the HTTP body, which closes the response.
    from google import genai
    from google.genai import types

    from toolwire.stream import assemble

    from .clients import open_sync

    # A body long enough that the break comes well before its end.
    chunks = [*PARALLEL[:2], *(gemini_chunk({"text": f"and {i} more "}) for i in range(200))]
    route = serve(sse_server, [*chunks, PARALLEL[-1]], "random-1")
    responses: list[Any] = []
    options = types.HttpOptions(
        base_url=route.gemini_base_url,
        api_version="v1beta",
        client_args={"event_hooks": {"response": [responses.append]}},
    )
    with genai.Client(api_key="test", http_options=options) as client:
        source = open_sync(client, FMT)
        stream = assemble(source)
        with stream if how == "with" else contextlib.nullcontext():
            for event in stream:
                if isinstance(event, CallStarted):
                    break
            (response,) = responses
            assert not _socket_closed(response)
        if how == "close":
            stream.close()
        assert _socket_closed(response)
        assert source.gi_frame is None, "the SDK's generator is closed"
    assert [c.name for c in stream.calls] == ["get_weather", "get_weather", "get_time"]
    assert stream.finish_reason is None


# --- Streamed arguments (Vertex AI `streamFunctionCallArguments`) ------------------------------


def _streamed(*pieces: list[dict[str, Any]], end: bool = True) -> list[dict[str, Any]]:
    chunks = [gemini_chunk(gemini_call("get_weather", willContinue=True))]
    chunks += [gemini_chunk(gemini_call(None, partialArgs=p, willContinue=True)) for p in pieces]
    if end:
        chunks.append(gemini_chunk(gemini_call(None)))
    chunks.append(gemini_chunk(finish="STOP"))
    return chunks


PIECES = (
    [{"jsonPath": "$.city", "stringValue": "東", "willContinue": True}],
    [
        {"jsonPath": "$.city", "stringValue": "京 🌸"},
        {"jsonPath": "$.days", "numberValue": 3},
        {"jsonPath": "$.units['temp unit']", "stringValue": "C"},
    ],
    [
        {"jsonPath": "$.tags[0]", "stringValue": "a"},
        {"jsonPath": "$.tags[1]", "boolValue": True},
        {"jsonPath": "$.extra", "nullValue": "NULL_VALUE"},
    ],
)


def test_streamed_argument_pieces_make_one_call(sse_server: SSEServer, split: str) -> None:
    chunks = _streamed(*PIECES)
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    assert summary(stream.calls) == [
        (
            "get_weather",
            {
                "city": "東京 🌸",
                "days": 3,
                "units": {"temp unit": "C"},
                "tags": ["a", True],
                "extra": None,
            },
            None,
        )
    ]


def test_a_null_piece_is_null_as_protobuf_json_writes_it(sse_server: SSEServer) -> None:
    # Protobuf's JSON mapping writes a `NullValue` as `null`: `"nullValue": null` is a piece
    # with the value null, not a piece without a value (which would drop the member).
    pieces = [
        {"jsonPath": "$.city", "stringValue": "Rome"},
        {"jsonPath": "$.note", "nullValue": None},
    ]
    chunks = _streamed(pieces)
    _, stream = assemble_both(serve(sse_server, chunks), FMT)
    for calls in (stream.calls, feed_dicts_and_sse(chunks)):
        (call,) = calls
        assert call.ok and call.value == {"city": "Rome", "note": None}


def test_streamed_arguments_cut_before_their_last_piece(sse_server: SSEServer, split: str) -> None:
    chunks = _streamed(*PIECES[:2], end=False)
    _, stream = assemble_gemini(serve(sse_server, chunks, split), chunks)
    (call,) = stream.calls
    # Never `{}` nor the pieces so far as if they were whole.
    assert call.error is not None and call.error.kind == "truncated" and not call.ok
    assert call.arguments == '{"city":"東京 🌸","days":3,"units":{"temp unit":"C"}'


@pytest.mark.parametrize(
    "bad",
    [
        [
            {"jsonPath": "$.city", "stringValue": "x"},
            {"jsonPath": "$.city.inner", "boolValue": True},
        ],
        [{"jsonPath": "$.city", "stringValue": "x"}, {"jsonPath": "$.city", "stringValue": "y"}],
        [{"jsonPath": "$.list[3]", "stringValue": "gap"}],
        [{"jsonPath": "city", "stringValue": "no root"}],
        [{"jsonPath": "$", "stringValue": "not an object"}],
    ],
)
def test_streamed_pieces_that_do_not_merge_are_an_error(bad: list[dict[str, Any]]) -> None:
    calls = feed_dicts_and_sse(_streamed(bad))
    assert [(c.name, c.error.kind if c.error else None, c.ok) for c in calls] == [
        ("get_weather", "mixed_arguments", False)
    ]


def _sdk_calls(chunks: list[dict[str, Any]]) -> list[Any]:
    """`feed_chunk` on the chunks as google-genai's objects (which drop fields they do not
    know, as the SDK stream yields them)."""
    asm = Assembler()
    for chunk in chunks:
        asm.feed_chunk(types.GenerateContentResponse._from_response(response=chunk, kwargs={}))
    return asm.finish()


@pytest.mark.parametrize(
    "piece",
    [
        {"jsonPath": "$.dry_run"},
        {"jsonPath": "$.dry_run", "listValue": {"values": [True]}},
        {"jsonPath": "$.limits", "structValue": {"max": 5}},
        {"jsonPath": "$.note", "stringValue": "x", "listValue": {"values": []}},
    ],
    ids=["no-value", "list", "struct", "known-and-unknown"],
)
def test_a_piece_whose_value_is_missing_or_unknown_is_an_error(piece: dict[str, Any]) -> None:
    # Skipped without a word, the call ran without that argument on every path. A piece whose
    # value is missing, or of a kind not read, breaks the call, as a piece without `jsonPath`
    # does. The SDK's objects drop a member they do not know: a piece left without a value
    # breaks the call there too, one with a value it knows is read by that value.
    chunks = _streamed([{"jsonPath": "$.to", "stringValue": "alice"}, piece])
    broken = [("get_weather", "mixed_arguments")]
    assert [(c.name, c.error.kind if c.error else None) for c in feed_dicts_and_sse(chunks)] == (
        broken
    )
    sdk = [(c.name, c.error.kind if c.error else None) for c in _sdk_calls(chunks)]
    assert sdk == (broken if "stringValue" not in piece else [("get_weather", None)])


def test_a_piece_without_a_value_ends_the_string_it_continued() -> None:
    # Protobuf's JSON leaves an empty `stringValue` out: the last piece of a string may have
    # no value, and ends it.
    pieces = [
        {"jsonPath": "$.city", "stringValue": "Ro", "willContinue": True},
        {"jsonPath": "$.city"},
        {"jsonPath": "$.days", "numberValue": 3},
    ]
    chunks = _streamed(pieces)
    for calls in (feed_dicts_and_sse(chunks), _sdk_calls(chunks)):
        assert summary(calls) == [("get_weather", {"city": "Ro", "days": 3}, None)]


def test_a_surrogate_pair_cut_between_pieces_is_one_character_in_the_text() -> None:
    # The value was one character on every path, but `feed_chunk` wrote the two halves as
    # escapes in `arguments`, where `feed_sse` wrote the character.
    chunks = _streamed(
        [{"jsonPath": "$.a", "stringValue": "x\ud83c", "willContinue": True}],
        [{"jsonPath": "$.a", "stringValue": "\udf89y"}],
    )
    for calls in (feed_dicts_and_sse(chunks), _sdk_calls(chunks)):
        assert [(c.arguments, c.ok) for c in calls] == [('{"a":"x\U0001f389y"}', True)]


@pytest.mark.parametrize("finish", [None, "MAX_TOKENS", "STOP"])
def test_a_string_going_on_where_no_string_is_breaks_a_call_that_is_cut(
    finish: str | None,
) -> None:
    # `$.a` null said to go on, then a string piece at `$.a`: the string's pieces are held
    # until it ends, and a call cut before that was judged before they were joined: the
    # Python path said `truncated` (the string dropped) where the raw path says
    # `mixed_arguments`.
    pieces = [
        {"jsonPath": "$.a", "nullValue": None, "willContinue": True},
        {"jsonPath": "$.a", "stringValue": "x", "willContinue": True},
    ]
    chunks = [
        gemini_chunk(gemini_call("f", willContinue=True)),
        gemini_chunk(gemini_call(None, partialArgs=pieces, willContinue=True)),
    ]
    if finish is not None:
        chunks.append(gemini_chunk(finish=finish))
    calls = feed_dicts_and_sse(chunks)
    assert [(c.name, c.error.kind if c.error else None) for c in calls] == [
        ("f", "mixed_arguments")
    ]


def test_streamed_pieces_after_a_name_only_part() -> None:
    # A name-only part (quirk 33) whose arguments then stream as pieces.
    calls = feed_dicts_and_sse(
        [
            gemini_chunk(gemini_call("f")),
            gemini_chunk(
                gemini_call(
                    None, partialArgs=[{"jsonPath": "$.a", "numberValue": 1.5}], willContinue=True
                )
            ),
            gemini_chunk(gemini_call(None), finish="STOP"),
        ]
    )
    assert summary(calls) == [("f", {"a": 1.5}, None)]


# --- Plain dicts and detection -----------------------------------------------------------------


def test_detect_format() -> None:
    assert detect_format(gemini_chunk({"text": "x"})) == FMT
    assert detect_format({"usageMetadata": USAGE}) == FMT
    assert detect_format({"usage_metadata": USAGE}) == FMT
    assert detect_format({"promptFeedback": {"blockReason": "SAFETY"}}) == FMT
    assert detect_format({"prompt_feedback": {"block_reason": "SAFETY"}}) == FMT
    # Chat chunks keep their format, also with fields that look like Gemini's.
    assert detect_format({"choices": [], "candidates": []}) == "openai-chat"
    assert detect_format({"modelVersion": "x"}) is None


def test_plain_dicts_of_either_spelling() -> None:
    camel = [
        gemini_chunk(gemini_call("f", {"a": [1, {"b": "東京"}]}, thoughtSignature="c2ln")),
        gemini_chunk(finish="STOP", usage={"promptTokenCount": 1}),
    ]
    snake = [
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {
                                "function_call": {"name": "f", "args": {"a": [1, {"b": "東京"}]}},
                                "thought_signature": b"sig",
                            }
                        ]
                    }
                }
            ]
        },
        {"candidates": [{"finish_reason": "STOP"}], "usage_metadata": {"promptTokenCount": 1}},
    ]
    for chunks in (camel, snake):
        asm = Assembler()
        infos = [asm.feed_chunk(chunk) for chunk in chunks]
        (call,) = asm.finish()
        assert (call.name, call.value, call.metadata) == (
            "f",
            {"a": [1, {"b": "東京"}]},
            {"thought_signature": "c2ln"},
        )
        assert call.arguments == json.dumps(call.value, ensure_ascii=False, separators=(",", ":"))
        assert asm.chunk_format == FMT
        assert infos[-1].finish_reason == "STOP"
        assert infos[-1].usage == {"promptTokenCount": 1}


def test_nameless_arguments_without_an_open_call() -> None:
    # Arguments with no name and no name-only part before them: kept, and reported.
    calls, _ = feed_dicts(
        [
            gemini_chunk(gemini_call("f", {"a": 1})),
            gemini_chunk(gemini_call(None, {"b": 2}), finish="STOP"),
        ]
    )
    assert summary(calls) == [("f", {"a": 1}, None), (None, {"b": 2}, "missing_name")]


def test_an_empty_part_does_not_close_a_split_call() -> None:
    calls, _ = feed_dicts(
        [
            gemini_chunk(gemini_call("f")),
            gemini_chunk(gemini_call(None)),
            gemini_chunk(gemini_call(None, {"a": 1}), finish="STOP"),
        ]
    )
    assert summary(calls) == [("f", {"a": 1}, None)]
    assert calls[0].warnings == []


def test_a_line_that_is_not_json_ends_as_a_broken_stream(sse_server: SSEServer) -> None:
    # google-genai raises `UnknownApiResponseError` and cannot read on: as a dropped connection.
    body = sse_body([gemini_chunk(gemini_call("f", {"a": 1}), gemini_call("g"))], FMT)
    events, stream = assemble_sync(sse_server.register(body + b"data: {oops\n\n"), FMT)
    assert isinstance(stream.transport_error, genai_errors.UnknownApiResponseError)
    assert summary(stream.calls) == [("f", {"a": 1}, None), ("g", None, "truncated")]
    assert events[-1].finish_reason is None


def _text_part(finish: object) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": finish}
        ]
    }


# Chunks that are JSON but that google-genai cannot turn into its model: it raises while reading
# (`ValidationError`, or `AttributeError` / `TypeError` from its own decoding) and cannot go on.
UNFIT: dict[str, dict[str, Any]] = {
    # Translators that copy a Chat `arguments` string send `args` as JSON text.
    "args-as-json-text": gemini_chunk({"functionCall": {"name": "h", "args": '{"y": 2}'}}),
    "args-as-list": gemini_chunk({"functionCall": {"name": "h", "args": [1]}}),
    "count-not-a-number": gemini_chunk({"text": "x"}, usage={"totalTokenCount": "many"}),
    "finish-reason-not-a-string": _text_part(7),
    "candidate-not-an-object": {"candidates": [1]},
}


def _before_the_unfit_chunk() -> bytes:
    return sse_body([gemini_chunk(gemini_call("f", {"a": 1}), gemini_call("g"))], FMT)


def _as_a_broken_stream(events: list[Any], stream: Any) -> None:
    """The stream ended where the SDK raised, as a dropped connection ends it there: the whole
    call is delivered, the open one is `truncated`, and so `feed_sse` reads those bytes."""
    from toolwire.stream import is_provider_error, is_transport_error

    assert stream.transport_error is not None
    assert is_transport_error(stream.transport_error)
    assert not is_provider_error(stream.transport_error)
    assert summary(stream.calls) == [("f", {"a": 1}, None), ("g", None, "truncated")]
    assert [type(e).__name__ for e in events[-3:]] == [
        "CallCompleted",
        "CallCompleted",
        "StreamEnded",
    ]
    assert events[-1].finish_reason is None
    raw = Assembler()
    raw.feed_sse(_before_the_unfit_chunk())
    raw.interrupt("the connection dropped")
    assert raw_key(raw.finish()) == raw_key(stream.calls)


@pytest.mark.parametrize("unfit", list(UNFIT))
def test_a_chunk_the_sdk_cannot_model_ends_as_a_broken_stream(
    sse_server: SSEServer, unfit: str
) -> None:
    body = _before_the_unfit_chunk() + sse_body([UNFIT[unfit]], FMT)
    events, stream = assemble_sync(sse_server.register(body), FMT)
    _as_a_broken_stream(events, stream)


@pytest.mark.anyio
@pytest.mark.parametrize("unfit", ["args-as-json-text", "finish-reason-not-a-string"])
async def test_a_chunk_the_sdk_cannot_model_ends_as_a_broken_stream_async(
    sse_server: SSEServer, unfit: str
) -> None:
    body = _before_the_unfit_chunk() + sse_body([UNFIT[unfit]], FMT)
    events, stream = await assemble_async(sse_server.register(body), FMT)
    _as_a_broken_stream(events, stream)


def test_a_config_the_sdk_rejects_is_the_callers_error(sse_server: SSEServer) -> None:
    # google-genai validates the request at the first read, from the same generator that
    # decodes the chunks, and raises the same `ValidationError`: a mistake, not a broken stream.
    import pydantic

    from toolwire.stream import assemble

    from .clients import sync_client

    route = serve(sse_server, PARALLEL)
    with sync_client(route, FMT) as client:
        source = client.models.generate_content_stream(
            model="test-model", contents="weather?", config={"temperature": "hot"}
        )
        with pytest.raises(pydantic.ValidationError), assemble(source) as stream:
            list(stream)


@pytest.mark.parametrize("error", [ValueError, TypeError, AttributeError])
def test_the_callers_own_errors_while_reading_chunks_propagate(error: type[Exception]) -> None:
    import pydantic

    from toolwire.stream import assemble

    class Model(pydantic.BaseModel):
        x: int

    def source() -> Any:
        yield gemini_chunk(gemini_call("f", {"a": 1}))
        if error is ValueError:
            Model.model_validate({"x": "not a number"})
        raise error("a bug in the caller's code")

    with pytest.raises(error), assemble(source()) as stream:
        list(stream)
    assert stream.transport_error is None


@pytest.mark.parametrize("ending", ["clean", "provider-error", "broken"])
def test_replay_of_a_recorded_stream_matches_live(
    sse_server: SSEServer, tmp_path: Path, ending: str
) -> None:
    from toolwire.recorder import Recorder
    from toolwire.replay import load_corpus, replay, verdict

    from .clients import open_sync, sync_client

    chunks = [
        gemini_chunk(gemini_call("get_weather", {"city": "東京"}, thoughtSignature="c2ln")),
        gemini_chunk(gemini_call("get_weather")),
    ]
    body = sse_body(chunks, FMT)
    drop_after = None
    if ending == "provider-error":
        body += b'data: {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}\n\n'
    else:
        body += sse_body([gemini_chunk(gemini_call(None, {"city": "Rome"}), finish="STOP")], FMT)
        # Broken: the connection drops inside the part that held the second call's arguments.
        drop_after = body.index(b"Rome") if ending == "broken" else None
    route = sse_server.register(body, drop_after=drop_after)
    recorder = Recorder(tmp_path / "corpus.jsonl", toolset=TOOLS, streams="all")
    with sync_client(route, FMT) as client, recorder.assemble(open_sync(client, FMT)) as live:
        list(live)
    expected = [verdict(c, o) for c, o in zip(live.calls, live.outcomes, strict=True)]
    assert len(expected) == 2
    assert (expected[1][0] == "ok") == (ending == "clean")
    (case,) = replay(load_corpus([tmp_path / "corpus.jsonl"]), TOOLS).cases
    assert [(c.state, c.code) for c in case.calls] == expected


def test_error_chunk_as_a_dict_stops_the_calls() -> None:
    calls, _ = feed_dicts(
        [
            gemini_chunk(gemini_call("f", {"a": 1})),
            {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}},
            gemini_chunk(gemini_call("g", {"b": 2}), finish="STOP"),
        ]
    )
    assert [(c.name, c.error.kind if c.error else None) for c in calls] == [
        ("f", "filtered"),
        ("g", "filtered"),
    ]


@pytest.mark.anyio
async def test_streamed_arguments_cut_by_a_dropped_connection(sse_server: SSEServer) -> None:
    chunks = _streamed(*PIECES)
    body = sse_body(chunks, FMT)
    route = sse_server.register(body, split="adversarial", drop_after=body.index(b"tags"))
    events, stream = await assemble_async(route, FMT)
    (call,) = stream.calls
    assert call.error is not None and call.error.kind == "truncated" and not call.ok
    assert stream.transport_error is not None and events[-1].finish_reason is None


# --- The raw SSE path where it cannot be the adapter's twin ------------------------------------


def _via_sse(body: bytes) -> tuple[Assembler, list[Any]]:
    asm = Assembler()
    for i in range(len(body)):
        asm.feed_sse(body[i : i + 1])
    return asm, asm.finish()


def _one_streamed(*pieces: dict[str, Any], **fields: Any) -> list[dict[str, Any]]:
    return [
        gemini_chunk(gemini_call("f", willContinue=True)),
        gemini_chunk(gemini_call(None, partialArgs=list(pieces), **fields)),
        gemini_chunk(gemini_call("g", {}), finish="STOP"),
    ]


def _string_in_pieces(path: str, text: str, size: int) -> list[dict[str, Any]]:
    cuts = range(0, len(text), size)
    return [
        {
            "jsonPath": path,
            "stringValue": text[at : at + size],
            "willContinue": at + size < len(text),
        }
        for at in cuts
    ]


_LONG = "東京 🌸 " * 300 + "end"


def _long_string_chunks() -> list[dict[str, Any]]:
    """A long string in many pieces over many parts, a string that another path ends, whole
    `args` beside the pieces, and a second call cut before its last piece."""
    pieces = _string_in_pieces("$.note", _LONG, 7)
    parts = [pieces[i : i + 5] for i in range(0, len(pieces), 5)]
    chunks = [gemini_chunk(gemini_call("f", willContinue=True))]
    chunks += [
        gemini_chunk(gemini_call(None, partialArgs=part, willContinue=True)) for part in parts
    ]
    chunks += [
        gemini_chunk(
            gemini_call(
                None,
                partialArgs=[
                    *_string_in_pieces("$.tags[0]", "abcdefghij", 3)[:-1],
                    {"jsonPath": "$.days", "numberValue": 3},
                ],
                args={"city": "Rome"},
            )
        ),
        gemini_chunk(gemini_call("g", willContinue=True)),
        gemini_chunk(
            gemini_call(
                None, partialArgs=_string_in_pieces("$.q", "x" * 50, 4)[:-1], willContinue=True
            )
        ),
    ]
    return chunks


def test_a_string_continued_over_many_pieces_and_parts_is_joined_whole() -> None:
    # Each piece of a long string used to copy the whole string so far (a 2 MB string in 10-byte
    # pieces took half a minute); the pieces are now held and joined once it ends, wherever it
    # ends: at its last piece, at another path, at whole `args` beside it, or cut by the end of
    # the stream.
    calls = feed_dicts_and_sse(_long_string_chunks())
    assert calls[0].ok and calls[0].value == {
        "note": _LONG,
        "tags": ["abcdefghi"],
        "days": 3,
        "city": "Rome",
    }
    # The second call's last piece never came: cut where it was, with every piece before.
    assert calls[1].error is not None and calls[1].error.kind == "truncated"
    assert calls[1].arguments == '{"q":"' + "x" * 48 + '"'


def _floats() -> list[float]:
    rng = random.Random(33)
    values = [
        0.0,
        -0.0,
        0.1,
        1.5,
        1e-4,
        1e-5,
        1e15,
        1e16,
        1e22,
        2.0**53,
        5e-324,
        1.7976931348623157e308,
    ]
    values += [rng.uniform(-1e6, 1e6) for _ in range(100)]
    values += [10.0 ** rng.uniform(-30, 30) for _ in range(100)]
    bits = (struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(400))
    values += [f for f in bits if math.isfinite(f)][:150]
    return values


def test_streamed_numbers_are_written_as_python_writes_them() -> None:
    # The raw path merges `partialArgs` itself, and writes the numbers as `json.dumps` writes
    # those `json.loads` made: integral doubles below 2^53 as integers, other floats with
    # Python's `repr`, in pieces and in `args` next to them.
    floats = _floats()
    pieces = [{"jsonPath": f"$.n[{i}]", "numberValue": f} for i, f in enumerate(floats)]
    args = {f"a{i}": f for i, f in enumerate(floats)}
    calls = feed_dicts_and_sse(_one_streamed(*pieces, args=args))
    assert calls[0].ok and calls[1].ok


@pytest.mark.parametrize(
    ("pieces", "args"),
    [
        # Python's `\d` takes a non-ASCII digit as an index.
        ([{"jsonPath": "$.a[\u0661]", "stringValue": "x"}], None),
        # An infinite float next to the pieces: `json.dumps` writes `Infinity`.
        ([], {"a": "INFINITY"}),
    ],
)
def test_raw_sse_never_guesses_streamed_arguments(
    pieces: list[dict[str, Any]], args: dict[str, Any] | None
) -> None:
    # Where Python reads a piece in a way Rust cannot follow, the call ends `lost_event` on the
    # raw path (never runs) and keeps its place, name and id; the calls around it agree.
    fields = {} if args is None else {"args": args}
    chunks = _one_streamed(*pieces, **fields)
    body = sse_body(chunks, FMT).replace(b'"INFINITY"', b"1e400")
    raw_asm, raw = _via_sse(body)
    dicts, _ = feed_dicts([json.loads(line[len(b"data: ") :]) for line in body.split(b"\n\n")[:-1]])
    assert raw_asm.format == FMT
    assert [(c.ordinal, c.index, c.name, c.id) for c in raw] == [
        (c.ordinal, c.index, c.name, c.id) for c in dicts
    ]
    assert raw_key([raw[1]]) == raw_key([dicts[1]])
    (first,) = raw[:1]
    assert first.error is not None and first.error.kind == "lost_event" and not first.ok
    assert "partialArgs" in first.error.message


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_a_number_past_double_range_gets_the_same_verdict_on_both_paths(number: str) -> None:
    # The parsed chunk holds infinity, which `json.dumps` writes `Infinity` (no JSON): the call
    # was refused there and taken on the raw path. Written as a number again, it is the same
    # value on both, and validation decides (a float field refuses it).
    body = sse_body([gemini_chunk(gemini_call("f", {"q": 0}), finish="STOP")], FMT)
    body = body.replace(b'"q": 0', b'"q": ' + number.encode()).replace(
        b'"q":0', b'"q":' + number.encode()
    )
    assert number.encode() in body
    _, raw = _via_sse(body)
    dicts, _ = feed_dicts([json.loads(line[len(b"data: ") :]) for line in body.split(b"\n\n")[:-1]])
    assert [c.ok for c in raw] == [c.ok for c in dicts] == [True]
    assert raw[0].value == dicts[0].value == {"q": float(number)}
    assert raw[0].arguments == '{"q":' + number + "}"


def test_raw_sse_reads_a_body_without_a_finish_reason_as_broken() -> None:
    # A name-only call with no finish reason after it: the body broke off, as `assemble` reads
    # a dropped connection; `feed_chunk` leaves that to its caller (`interrupt`).
    chunks = [gemini_chunk(gemini_call("f", {"a": 1})), gemini_chunk(gemini_call("g"))]
    _, raw = _via_sse(sse_body(chunks, FMT))
    asm = Assembler()
    for chunk in chunks:
        asm.feed_chunk(chunk)
    asm.interrupt("the connection dropped")
    assert summary(raw) == [("f", {"a": 1}, None), ("g", None, "truncated")]
    assert raw_key(raw) == raw_key(asm.finish())


def test_raw_sse_keeps_number_lexemes_as_sent() -> None:
    # The one place where the argument text may differ: `feed_chunk` gets the numbers that
    # `json.loads` made and `json.dumps` writes them again; the raw path keeps them as sent.
    body = (
        b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"f",'
        b'"args":{"x": 1e5, "y": 1.50, "z": -0.0, "s": "\\u00e9"}}}]},"finishReason":"STOP"}]}\n\n'
    )
    (raw,) = _via_sse(body)[1]
    (dicts,) = feed_dicts([json.loads(body[len(b"data: ") :])])[0]
    assert raw.arguments == '{"x":1e5,"y":1.50,"z":-0.0,"s":"é"}'
    assert dicts.arguments == '{"x":100000.0,"y":1.5,"z":-0.0,"s":"é"}'
    assert raw.value == dicts.value and raw.ok and dicts.ok


def test_raw_sse_skips_a_line_that_is_not_json() -> None:
    # google-genai raises at such a line (a broken stream: `truncated`, see above); `feed_sse`
    # skips the event and reads on, and a call it may have carried part of ends `lost_event`.
    body = sse_body([gemini_chunk(gemini_call("f", {"a": 1}), gemini_call("g"))], FMT)
    asm, calls = _via_sse(body + b"data: {oops\n\n")
    assert [(c.name, c.error.kind if c.error else None) for c in calls] == [
        ("f", None),
        ("g", "lost_event"),
    ]
    assert [kind for kind, _, _ in asm.stream_errors()] == ["malformed_event"]


def test_arguments_nested_deeper_than_python_recursion_end_as_that_call_error(
    sse_server: SSEServer,
) -> None:
    # The SDK parses 600 levels without complaint; the call must end `too_deep` and the stream
    # go on, not raise a RecursionError that loses the calls before it.
    deep = json.loads('{"a":' * 600 + "1" + "}" * 600)
    chunks = [
        gemini_chunk(gemini_call("lookup", {"id": 1})),
        gemini_chunk(gemini_call("nested", deep), finish="STOP"),
    ]
    events, stream = assemble_gemini(serve(sse_server, chunks, "whole"), chunks)
    assert [(c.name, c.error and c.error.kind) for c in stream.calls] == [
        ("lookup", None),
        ("nested", "too_deep"),
    ]
    assert isinstance(events[-1], StreamEnded)
    raw = Assembler()
    raw.feed_sse(sse_body(chunks, FMT))
    assert [(c.name, c.error and c.error.kind) for c in raw.finish()] == [
        ("lookup", None),
        ("nested", "too_deep"),
    ]


def _on_both_paths(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The calls (name, value, error kind) `feed_chunk` makes of REST-shaped chunks and of the
    google-genai objects built from them, checked equal to what `feed_sse` makes of them."""
    from google.genai import types

    results = []
    for feed in ("dicts", "objects", "sse"):
        asm = Assembler()
        if feed == "sse":
            # An infinite float on the wire is a number no double holds, as JSON writes it.
            asm.feed_sse(sse_body(chunks, "gemini").replace(b":Infinity", b":1e999"))
        for chunk in chunks if feed != "sse" else []:
            asm.feed_chunk(
                chunk if feed == "dicts" else types.GenerateContentResponse.model_validate(chunk)
            )
        results.append([(c.name, c.value, c.error and c.error.kind) for c in asm.finish()])
    assert results[0] == results[1] == results[2]
    return results[0]


def _vertex_stream(*pieces: dict[str, Any], finish: str = "STOP") -> list[dict[str, Any]]:
    def part(call: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}}]}

    chunks = [part({"name": "f", "willContinue": True})]
    chunks += [part({"partialArgs": [piece], "willContinue": True}) for piece in pieces]
    chunks.append(part({}))
    chunks[-1]["candidates"][0]["finishReason"] = finish
    return chunks


@pytest.mark.parametrize("number", [1e999, "Infinity", "NaN", "x", True, [1]])
def test_a_streamed_piece_whose_value_no_reader_holds_breaks_the_call(number: Any) -> None:
    chunks = _vertex_stream({"jsonPath": "$.a", "stringValue": "x"}, {"jsonPath": "$.n"})
    chunks[2]["candidates"][0]["content"]["parts"][0]["functionCall"]["partialArgs"][0][
        "numberValue"
    ] = number
    if number == "x" or isinstance(number, (bool, list)):
        # Of the wrong JSON type: google-genai refuses the object, so dicts and SSE only.
        asm, raw = Assembler(), Assembler()
        for chunk in chunks:
            asm.feed_chunk(chunk)
            raw.feed_sse(sse_body([chunk], "gemini"))
        for (call,) in (asm.finish(), raw.finish()):
            assert call.error is not None and call.error.kind == "mixed_arguments"
        return
    ((name, _value, kind),) = _on_both_paths(chunks)
    assert (name, kind) == ("f", "mixed_arguments")


def test_a_streamed_number_given_as_its_text_is_read_as_the_number() -> None:
    chunks = _vertex_stream(
        {"jsonPath": "$.n", "numberValue": "3"}, {"jsonPath": "$.m", "numberValue": "2.5"}
    )
    assert _on_both_paths(chunks) == [("f", {"n": 3, "m": 2.5}, None)]


def test_string_pieces_that_continue_a_number_break_the_call() -> None:
    chunks = _vertex_stream(
        {"jsonPath": "$.a", "numberValue": 5, "willContinue": True},
        {"jsonPath": "$.a", "stringValue": "abc"},
    )
    assert _on_both_paths(chunks) == [("f", {"a": 5}, "mixed_arguments")]


@pytest.mark.parametrize(
    "first, second", [({"on": True}, {"on": 1}), ({"a": 1, "b": 2}, {"b": 2, "a": 1})]
)
def test_a_whole_call_is_a_repeat_only_with_the_same_tokens(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    parts = [{"functionCall": {"id": "c1", "name": "f", "args": a}} for a in (first, second)]
    chunks = [
        {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    ]
    assert [value for _, value, _ in _on_both_paths(chunks)] == [first, second]


def test_a_streamed_path_deeper_than_json_dumps_writes_is_too_deep_on_both_paths() -> None:
    path = "$" + ".a" * 1200
    chunks = _vertex_stream({"jsonPath": path, "stringValue": "x"}, finish="MAX_TOKENS")
    asm = Assembler()
    for chunk in chunks:
        asm.feed_chunk(chunk)
    (call,) = asm.finish()
    raw = Assembler()
    raw.feed_sse(sse_body(chunks, "gemini"))
    (raw_call,) = raw.finish()
    assert call.error is not None and raw_call.error is not None
    assert call.error.kind == raw_call.error.kind == "too_deep"


def test_usage_and_errors_nested_past_the_stack_do_not_break_the_stream() -> None:
    deep: Any = 1
    for _ in range(3000):
        deep = {"a": deep}
    text = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    asm = Assembler()
    asm.feed_chunk({**text, "usageMetadata": {"promptTokenCount": 1, "x": deep}})
    info = asm.feed_chunk({"error": {"code": 500, "message": "x", "details": deep}})
    assert info.finish_reason == "error" or asm.stream_errors()
    assert asm.finish() == []


# --- Progress of streamed arguments ------------------------------------------------------------
# Each `partialArgs` piece is a progress item as it arrives, on every way in, meaning what the
# items of the same arguments sent as text mean: joined per JSON Pointer, the items of a call
# are its final value's strings, and its numbers' and literals' JSON text.

_FEEDS = ("dicts", "objects", "sse")
Joined = dict[tuple[int, str], str]


def _joined(items: list[tuple[int, str, str]]) -> Joined:
    out: Joined = {}
    for ordinal, path, text in items:
        out[ordinal, path] = out.get((ordinal, path), "") + text
    return out


def _progress_per_chunk(chunks: list[dict[str, Any]], feed: str) -> tuple[list[Joined], Any]:
    """The progress text joined per (call, pointer) after each chunk, fed as `feed` says, and
    the calls. Finishing adds no item."""
    from google.genai import types

    items: list[tuple[int, str, str]] = []
    asm = Assembler(progress_into=items)
    seen: list[Joined] = []
    for chunk in chunks:
        if feed == "sse":
            asm.feed_sse(sse_body([chunk], FMT))
        else:
            model = types.GenerateContentResponse.model_validate
            asm.feed_chunk(chunk if feed == "dicts" else model(chunk))
        seen.append(_joined(items))
    calls = asm.finish()
    assert _joined(items) == (seen[-1] if seen else {}), "finishing added items"
    return seen, calls


def _value_texts(ordinal: int, value: Any, pointer: str = "") -> Joined:
    """What the items of `value` join to: each string's text, each number's and literal's JSON
    text, at its pointer."""
    if isinstance(value, dict):
        out: Joined = {}
        for key, member in cast("dict[str, Any]", value).items():
            token = key.replace("~", "~0").replace("/", "~1")
            out.update(_value_texts(ordinal, member, f"{pointer}/{token}"))
        return out
    if isinstance(value, list):
        out = {}
        for i, item in enumerate(cast("list[Any]", value)):
            out.update(_value_texts(ordinal, item, f"{pointer}/{i}"))
        return out
    return {(ordinal, pointer): value if isinstance(value, str) else json.dumps(value)}


def _texts_of(calls: list[Any]) -> Joined:
    """What the calls' items must join to: a whole call's value; a call cut before its last
    piece, what came of it (its text without the closing brace)."""
    out: Joined = {}
    for call in calls:
        if call.ok:
            out.update(_value_texts(call.ordinal, call.value))
        elif call.error.kind == "truncated" and call.arguments.startswith("{"):
            out.update(_value_texts(call.ordinal, json.loads(call.arguments + "}")))
    return out


def _grows(seen: list[Joined]) -> None:
    """Items only ever add text: what a pointer had stays the start of what it has."""
    for before, after in pairwise(seen):
        for key, text in before.items():
            assert after.get(key, "").startswith(text), (key, text, after.get(key))


def test_streamed_arguments_report_progress_as_their_pieces_arrive() -> None:
    chunks = _streamed(*PIECES)
    expected: list[Joined] = [{}, {(0, "/city"): "東"}]
    expected.append(
        {
            (0, "/city"): "東京 🌸",
            (0, "/days"): "3",
            (0, "/units/temp unit"): "C",
        }
    )
    expected.append(
        {**expected[-1], (0, "/tags/0"): "a", (0, "/tags/1"): "true", (0, "/extra"): "null"}
    )
    # The part that closes the call, then the finish reason: the call's text adds nothing.
    expected += [expected[-1], expected[-1]]
    for feed in _FEEDS:
        seen, calls = _progress_per_chunk(chunks, feed)
        assert seen == expected, feed
        assert _texts_of(calls) == expected[-1]


def _fixture_chunks() -> list[dict[str, Any]]:
    body = (Path(__file__).parents[1] / "data" / "sse" / "gemini_partial_args.sse").read_bytes()
    return [json.loads(event[len(b"data: ") :]) for event in body.split(b"\n\n") if event]


_SAMPLES = {
    "pieces": lambda: _streamed(*PIECES),
    "null": lambda: _streamed(
        [{"jsonPath": "$.city", "stringValue": "Rome"}, {"jsonPath": "$.note", "nullValue": None}]
    ),
    "long string": _long_string_chunks,
    "recorded body": _fixture_chunks,
    "after a name-only part": lambda: [
        gemini_chunk(gemini_call("f")),
        gemini_chunk(
            gemini_call(
                None, partialArgs=[{"jsonPath": "$.a", "numberValue": 1.5}], willContinue=True
            )
        ),
        gemini_chunk(gemini_call(None), finish="STOP"),
    ],
    "numbers": lambda: _one_streamed(
        *[{"jsonPath": f"$.n[{i}]", "numberValue": f} for i, f in enumerate(_floats())],
        args={f"a{i}": f for i, f in enumerate(_floats()[:40])},
    ),
}


@pytest.mark.parametrize("sample", list(_SAMPLES))
def test_progress_of_the_sample_streams_joins_to_their_calls(sample: str) -> None:
    chunks = _SAMPLES[sample]()
    per_feed = {feed: _progress_per_chunk(chunks, feed) for feed in _FEEDS}
    for feed, (seen, calls) in per_feed.items():
        _grows(seen)
        assert seen[-1] and seen[-1] == _texts_of(calls), feed
    # Chunk by chunk, the same items on every way in.
    assert per_feed["dicts"][0] == per_feed["objects"][0] == per_feed["sse"][0]


def test_items_mean_what_the_same_arguments_sent_as_text_give() -> None:
    # The arguments of each whole call, sent again as text in 5-character fragments (as a chat
    # stream sends them): their items join to what the pieces' items join to.
    for sample in ("pieces", "long string", "recorded body", "numbers"):
        seen, calls = _progress_per_chunk(_SAMPLES[sample](), "dicts")
        items: list[tuple[int, str, str]] = []
        text = Assembler(progress_into=items)
        ordinals: dict[int, int] = {}
        for call in calls:
            if call.ok:
                for at in range(0, len(call.arguments), 5):
                    fragment = call.arguments[at : at + 5]
                    fed = text.feed(call.ordinal, name=call.name, arguments=fragment)
                    ordinals[fed] = call.ordinal
        text.finish()
        as_text = {(ordinals[o], path): t for (o, path), t in _joined(items).items()}
        whole = {key: t for key, t in seen[-1].items() if key[0] in ordinals.values()}
        assert as_text == whole, sample


_KEYS = st.sampled_from(["a", "b c", "x/y", "t~0", "東京", "q'uote", 'd"q', "n1"])
_LEAVES = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
# partialArgs carry scalars only: no container is empty.
_MEMBERS = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(_KEYS, inner, min_size=1, max_size=3)
    ),
    max_leaves=12,
)
_ARGS = st.dictionaries(_KEYS, _MEMBERS, min_size=1, max_size=4)


def _path_step(key: str) -> str:
    return f".{key}" if key.isascii() and key.isalnum() else f"[{json.dumps(key)}]"


def _pieces_of(path: str, value: Any, size: int) -> list[dict[str, Any]]:
    """The pieces of `value` at JSON Path `path`, in document order; strings in pieces of
    `size` characters."""
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return [p for k, v in items for p in _pieces_of(path + _path_step(k), v, size)]
    if isinstance(value, list):
        items = enumerate(cast("list[Any]", value))
        return [p for i, v in items for p in _pieces_of(f"{path}[{i}]", v, size)]
    if isinstance(value, str):
        starts = range(0, max(len(value), 1), size)
        return [
            {"jsonPath": path, "stringValue": value[at : at + size], "willContinue": True}
            if at + size < len(value)
            else {"jsonPath": path, "stringValue": value[at : at + size]}
            for at in starts
        ]
    if isinstance(value, bool):
        return [{"jsonPath": path, "boolValue": value}]
    if value is None:
        return [{"jsonPath": path, "nullValue": "NULL_VALUE"}]
    return [{"jsonPath": path, "numberValue": value}]


@settings(max_examples=150, deadline=None)
@given(
    args=_ARGS,
    size=st.integers(1, 5),
    per_part=st.integers(1, 3),
    cuts=st.lists(st.integers(0, 10**6), max_size=8),
)
def test_generated_streams_report_every_value_once_before_the_call_closes(
    args: dict[str, Any], size: int, per_part: int, cuts: list[int]
) -> None:
    pieces = _pieces_of("$", args, size)
    parts = [pieces[i : i + per_part] for i in range(0, len(pieces), per_part)]
    chunks = [gemini_chunk(gemini_call("f", willContinue=True))]
    chunks += [gemini_chunk(gemini_call(None, partialArgs=p, willContinue=True)) for p in parts]
    close = gemini_chunk(gemini_call(None), finish="STOP")
    seen, calls = _progress_per_chunk([*chunks, close], "dicts")
    (call,) = calls
    assert call.ok, call.error
    _grows(seen)
    # Every value was reported before the part that closes the call.
    assert seen[-2] == seen[-1] == _texts_of(calls)
    # The raw body, cut anywhere up to that part, gives the same items by then.
    body = sse_body(chunks, FMT)
    at = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    items: list[tuple[int, str, str]] = []
    raw = Assembler(progress_into=items)
    for start, end in pairwise(at):
        raw.feed_sse(body[start:end])
    assert _joined(items) == seen[-2]
    raw.feed_sse(sse_body([close], FMT))
    assert raw_key(raw.finish()) == raw_key(calls)
    assert _joined(items) == seen[-1]


@pytest.mark.parametrize(
    ("pieces", "reported"),
    [
        # A value where another shape is: the item before it stays, nothing of it or after.
        (
            [
                {"jsonPath": "$.city", "stringValue": "x"},
                {"jsonPath": "$.city.inner", "boolValue": True},
                {"jsonPath": "$.days", "numberValue": 3},
            ],
            {(0, "/city"): "x"},
        ),
        # A string sent twice, an index with a gap, a path that is none, no object.
        (
            [
                {"jsonPath": "$.city", "stringValue": "x"},
                {"jsonPath": "$.city", "stringValue": "y"},
            ],
            {(0, "/city"): "x"},
        ),
        ([{"jsonPath": "$.list[3]", "stringValue": "gap"}], {}),
        ([{"jsonPath": "city", "stringValue": "no root"}], {}),
        ([{"jsonPath": "$", "stringValue": "not an object"}], {}),
        # String pieces that go on with a number.
        (
            [
                {"jsonPath": "$.a", "numberValue": 5, "willContinue": True},
                {"jsonPath": "$.a", "stringValue": "abc"},
                {"jsonPath": "$.b", "stringValue": "d"},
            ],
            {(0, "/a"): "5"},
        ),
    ],
)
def test_a_piece_that_breaks_the_call_reports_nothing_nor_what_follows(
    pieces: list[dict[str, Any]], reported: Joined
) -> None:
    later = [{"jsonPath": "$.later", "stringValue": "z"}]
    chunks = _streamed(pieces, later)
    for feed in ("dicts", "sse"):
        seen, calls = _progress_per_chunk(chunks, feed)
        assert seen[-1] == reported, feed
        assert [(c.name, c.error and c.error.kind) for c in calls] == [
            ("get_weather", "mixed_arguments")
        ]


def test_a_path_deeper_than_max_depth_reports_nothing_more() -> None:
    chunks = _vertex_stream(
        {"jsonPath": "$.a", "stringValue": "x"},
        {"jsonPath": "$" + ".b" * 70, "numberValue": 1},
        {"jsonPath": "$.c", "stringValue": "y"},
    )
    for feed in ("dicts", "sse"):
        seen, calls = _progress_per_chunk(chunks, feed)
        assert seen[-1] == {(0, "/a"): "x"}, feed
        assert [c.error and c.error.kind for c in calls] == ["too_deep"]


@pytest.mark.parametrize("feed", ["dicts", "sse"])
def test_a_surrogate_pair_split_between_pieces_is_one_character(feed: str) -> None:
    # A pair split between two pieces of a string is one character once joined; the items give
    # it whole, on both paths (the raw path ended the call `lost_event`).
    pair = _vertex_stream(
        {"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": True},
        {"jsonPath": "$.a", "stringValue": "\ude00y\\\\ud83d", "willContinue": True},
        {"jsonPath": "$.a", "stringValue": "\ud83c", "willContinue": True},
        {"jsonPath": "$.a", "stringValue": "\udf38"},
    )
    seen, calls = _progress_per_chunk(pair, feed)
    assert seen[1] == {(0, "/a"): "x"}
    assert seen[-1] == {(0, "/a"): "x😀y\\\\ud83d🌸"} == _texts_of(calls)
    assert [c.error for c in calls] == [None]


@pytest.mark.parametrize(
    "pieces",
    [
        # A high half whose low half never comes: the string ends, another value follows, or
        # the call closes.
        [{"jsonPath": "$.a", "stringValue": "x\ud83d"}],
        [
            {"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": True},
            {"jsonPath": "$.b", "stringValue": "\ude00"},
        ],
        [{"jsonPath": "$.a", "stringValue": "x\ud83d", "willContinue": True}],
        # A low half with no high half before it.
        [
            {"jsonPath": "$.a", "stringValue": "x", "willContinue": True},
            {"jsonPath": "$.a", "stringValue": "\ude00"},
        ],
    ],
)
def test_a_surrogate_half_left_alone_in_pieces_never_runs(pieces: list[dict[str, Any]]) -> None:
    # The merged value holds a lone surrogate: `lone_surrogate` where it is, on both paths.
    errors = []
    for feed in ("dicts", "sse"):
        _, calls = _progress_per_chunk(_vertex_stream(*pieces), feed)
        errors.append([c.error and (c.error.kind, c.error.offset, c.error.path) for c in calls])
    assert errors[0] == errors[1]
    assert [kind for kind, _, _ in errors[0]] == ["lone_surrogate"]


@pytest.mark.parametrize("feed", ["dicts", "sse"])
def test_surrogate_halves_in_pieces_stop_progress(feed: str) -> None:
    # A lone half makes the call `lone_surrogate`: nothing of it or after it is reported.
    lone = _vertex_stream(
        {"jsonPath": "$.a", "stringValue": "x"},
        {"jsonPath": "$.b", "stringValue": "y\ud800"},
        {"jsonPath": "$.c", "stringValue": "z"},
    )
    seen, calls = _progress_per_chunk(lone, feed)
    assert seen[-1] == {(0, "/a"): "x"}
    assert [c.error and c.error.kind for c in calls] == ["lone_surrogate"]
    assert calls[0].arguments == '{"a":"x","b":"y\\ud800","c":"z"}'


@pytest.mark.parametrize(
    ("pieces", "args"),
    [
        # In a value, in a name (dotted and quoted), in whole arguments next to the pieces.
        ([{"jsonPath": "$.a", "stringValue": "x\ud800y"}], None),
        ([{"jsonPath": "$.k\ud800", "stringValue": "x"}], None),
        ([{"jsonPath": "$['\\udc00']", "stringValue": "x"}], None),
        ([{"jsonPath": "$.a", "stringValue": "x"}], {"b\ud800": 1}),
        ([], {"b": ["\udc00"]}),
    ],
)
def test_a_lone_surrogate_in_streamed_arguments_is_told_alike(
    pieces: list[dict[str, Any]], args: dict[str, Any] | None
) -> None:
    # A `str` holds it and `feed_chunk` wrote it as its escape (`lone_surrogate`, where it is);
    # `feed_sse` ended the call `lost_event`, blaming the transport for what the model sent.
    fields = {} if args is None else {"args": args}
    chunks = _one_streamed(*pieces, **fields)
    raw_asm, raw = _via_sse(sse_body(chunks, FMT))
    dicts, _ = feed_dicts(chunks)
    assert raw_key(raw) == raw_key(dicts)
    assert [(c.error.offset, c.error.path) for c in raw[:1] + dicts[:1] if c.error] == [
        (dicts[0].error.offset, dicts[0].error.path)
    ] * 2
    (first, second) = raw
    assert first.error is not None and first.error.kind == "lone_surrogate"
    assert second.ok and raw_asm.stream_errors() == []


def test_without_progress_tracking_the_adapter_records_nothing() -> None:
    from toolwire.formats.gemini import GeminiAdapter

    from .streamkit import RecordingSink

    sink, adapter = RecordingSink(), GeminiAdapter()
    for chunk in _long_string_chunks():
        adapter.handle(chunk, sink)
    assert not [c for c in sink.calls if c[0] == "progress"]


@pytest.mark.parametrize(
    ("chunk", "reason"),
    [
        (
            '{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},'
            '"finishReason":"ST\\ud800OP"}]}',
            "ST\ufffdOP",
        ),
        (
            '{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},'
            '"finishReason":"ST\\ud83d\\ude00OP"}]}',
            "ST\U0001f600OP",
        ),
        (
            '{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},'
            '"finish_reason":"st\\udc00op"}]}',
            "st\ufffdop",
        ),
    ],
)
def test_a_lone_surrogate_in_a_finish_reason_is_u_fffd_on_both_paths(
    chunk: str, reason: str
) -> None:
    # The raw path reads the escape as text, which holds no lone surrogate: U+FFFD, as in ids,
    # names and assistant text. `feed_chunk` kept it, so the paths told two reasons apart.
    raw = Assembler()
    raw.feed_sse(f"data: {chunk}\n\n".encode())
    raw.finish()
    chunks = Assembler()
    info = chunks.feed_chunk(json.loads(chunk))
    chunks.finish()
    assert raw.finish_reason == info.finish_reason == reason


def test_bytes_that_are_no_utf8_are_read_as_google_genai_reads_them(
    sse_server: SSEServer,
) -> None:
    # google-genai decodes every line of the body with `errors="replace"` and reads the chunk,
    # U+FFFD in place of the bytes; the raw path skipped the whole event, and with it the call
    # the chunk carried whole and the stream's finish reason.
    chunks = [
        gemini_chunk(gemini_call("get_weather", {"city": "Pa@1ris"})),
        gemini_chunk(gemini_call("look@2up", {"id": "x"}), finish="STOP", usage=USAGE),
    ]
    body = sse_body(chunks, FMT).replace(b"@1", b"\xff").replace(b"@2", b"\xe6\x9d")
    _, stream = assemble_both(sse_server.register(body), FMT)
    assert summary(stream.calls) == [
        ("get_weather", {"city": "Pa\ufffdris"}, None),
        ("look\ufffdup", {"id": "x"}, None),
    ]
    assert stream.finish_reason == "STOP" and stream.usage == USAGE
    raw = Assembler()
    raw.feed_sse(body)
    raw.finish()
    assert raw.stream_errors() == []


def test_bytes_that_are_no_utf8_leave_other_formats_events_unread() -> None:
    # Only google-genai reads such bytes: the openai SDK raises on them, and the raw path
    # still skips that event of a Chat stream (its open call ends `lost_event`).
    chunks = [
        chat_chunk(tool_delta(tc(0, id="a", name="f", arguments='{"a": "x'))),
        chat_chunk(tool_delta(tc(0, arguments='@"}'))),
        chat_chunk({}, finish_reason="tool_calls"),
    ]
    body = sse_body(chunks, "openai-chat")
    raw = Assembler()
    raw.feed_sse(body.replace(b"@", b"\xff"))
    (call,) = raw.finish()
    assert call.error is not None and call.error.kind == "lost_event"
    assert [kind for kind, _, _ in raw.stream_errors()] == ["malformed_event"]


@pytest.mark.parametrize("path", ["$['\ud83d']", "$.a\ud83d", "$.x['\udc00b']"])
def test_a_streamed_piece_whose_key_holds_a_lone_surrogate_raises_nothing(path: str) -> None:
    # With progress tracking, the item of such a piece named its key in a JSON Pointer that
    # cannot be written as UTF-8: `feed_chunk` raised, and `assemble` (which tracks progress)
    # lost the stream. The call cannot run; the items before the piece stand, on every path.
    chunks = _streamed(
        [{"jsonPath": "$.city", "stringValue": "Rome"}], [{"jsonPath": path, "stringValue": "v"}]
    )
    asm = Assembler(track_progress=True)
    for chunk in chunks:
        asm.feed_chunk(chunk)
    (call,) = asm.finish()
    assert not call.ok
    items = asm.drain_progress()
    raw = Assembler(track_progress=True)
    raw.feed_sse(sse_body(chunks, FMT))
    (raw_call,) = raw.finish()
    assert not raw_call.ok
    assert items == raw.drain_progress() == [(0, "/city", "Rome")]
    stream = assemble(iter(chunks))
    assert isinstance(list(stream)[-1], StreamEnded)
    assert not stream.calls[0].ok


def test_a_broken_piece_leaves_the_same_text_with_or_without_its_lone_surrogate() -> None:
    # A piece that breaks the call puts its value (a lone surrogate) nowhere, but the
    # containers of its path stay, a lone surrogate in a name among them: the merged text, and
    # so the errors told as it was read, are the same on both paths.
    for path, value in (("$.u[1]", "\ud83d"), ("$.t\ud83d[1]", "x")):
        chunks = _one_streamed(
            {"jsonPath": "$.a", "stringValue": "é"}, {"jsonPath": path, "stringValue": value}
        )
        raw_asm, raw = _via_sse(sse_body(chunks, FMT))
        dicts, dicts_asm = feed_dicts(chunks)
        assert raw_key(raw) == raw_key(dicts)
        assert raw[0].error is not None and raw[0].error.kind == "mixed_arguments"
        assert [(e.kind, e.offset) for _, e in raw_asm.drain_errors()] == [
            (e.kind, e.offset) for _, e in dicts_asm.drain_errors()
        ]


def _limited_both_ways(
    chunks: list[dict[str, Any]], limit: int
) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """`feed_chunk` and `feed_sse` (byte by byte) under `max_stream_bytes=limit`, progress
    recorded: checked the same both ways, the calls and progress items of `feed_chunk`."""
    seen: list[tuple[list[Any], list[tuple[int, str, str]]]] = []
    for raw in (False, True):
        progress: list[tuple[int, str, str]] = []
        asm = Assembler(max_stream_bytes=limit, progress_into=progress)
        if raw:
            body = sse_body(chunks, FMT)
            for i in range(len(body)):
                asm.feed_sse(body[i : i + 1])
        else:
            for chunk in chunks:
                asm.feed_chunk(chunk)
        seen.append((asm.finish(), progress))
    (calls, progress), (raw_calls, raw_progress) = seen
    assert raw_progress == progress
    assert [(c.name, c.arguments, c.error and c.error.kind) for c in raw_calls] == [
        (c.name, c.arguments, c.error and c.error.kind) for c in calls
    ]
    return calls, progress


def test_args_beside_pieces_past_the_stream_limit_are_not_merged() -> None:
    # The pieces pass the limit: the response is refused, and the whole `args` sent in the
    # same part are neither kept nor reported as progress, on either path.
    chunks = [
        gemini_chunk(gemini_call("f", willContinue=True)),
        gemini_chunk(
            gemini_call(
                None,
                {"q": ["x", "y"]},
                partialArgs=[{"jsonPath": "$.city", "stringValue": "Oslo Oslo Oslo Oslo"}],
                willContinue=True,
            )
        ),
        gemini_chunk(gemini_call(None)),
        gemini_chunk(finish="STOP"),
    ]
    calls, progress = _limited_both_ways(chunks, 20)
    assert not any(path.startswith("/q") for _, path, _ in progress)
    assert [c.error and c.error.kind for c in calls] == ["too_large"]
