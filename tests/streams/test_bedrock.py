"""`toolwire.assemble` over the real boto3 `bedrock-runtime` client (ConverseStream), and the
same event dicts through `Assembler.feed_chunk`.

The loopback server answers `converse-stream` with AWS event-stream binary, cut into writes
inside every message in the adversarial mode; boto3 decodes it with its own `EventStream`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

import botocore.eventstream
import botocore.exceptions
import urllib3.exceptions

from toolwire import MisuseError, Toolset
from toolwire.assembler import Assembler
from toolwire.events import CallStarted, StreamEnded, TextDelta
from toolwire.formats import detect_format, make_adapter
from toolwire.recorder import Recorder
from toolwire.replay import load_corpus, replay, verdict
from toolwire.stream import aassemble, assemble

from .bedrockkit import (
    USAGE,
    DictRun,
    assemble_bedrock,
    block_stop,
    converse_events,
    converse_response,
    converse_stream,
    event_message,
    eventstream_body,
    feed_dicts,
    frame_points,
    message_stop,
    metadata,
    serve,
    shown,
    text_block,
    tool_block,
    tool_input,
    tool_start,
    via_dicts,
)
from .conftest import SSEServer
from .streamkit import Call, pieces

WEATHER = Call("get_weather", '{"city": "Paris", "days": 3}')
PARALLEL = [
    WEATHER,
    Call("get_time", '{"tz": "Europe/Paris"}'),
    Call("search", '{"q": ["a", "b"], "limit": 2}'),
]
TEXT = "Let me check that for you."
ERROR = {"modelStreamErrorException": {"message": "stream broke", "originalStatusCode": 500}}


def both(server: SSEServer, events: list[dict[str, Any]], split: str = "whole") -> Any:
    """boto3 through `assemble`, then the same dicts through `feed_chunk`: the same calls."""
    _, stream = assemble_bedrock(serve(server, events, split=split))
    asm, calls = via_dicts(events)
    assert shown(calls) == shown(stream.calls)
    assert asm.chunk_format == stream.format == "bedrock-converse"
    return stream


def ended_by(server: SSEServer, events: list[dict[str, Any]], end: str) -> tuple[Any, DictRun]:
    """`events` ended by an exception event (`exception`), a dropped connection (`drop`) or
    `messageStop` with the stop reason `end`, through boto3 (cut inside every frame) and as
    dicts."""
    drop_after = None
    if end == "exception":
        events = [*events, ERROR]
    elif end == "drop":
        drop_after = len(eventstream_body(events))
    else:
        events = [*events, message_stop(end), metadata()]
    route = serve(server, events, split="adversarial", drop_after=drop_after)
    _, stream = assemble_bedrock(route)
    return stream, feed_dicts(events, interrupted=drop_after is not None)


# --- The test encoder -------------------------------------------------------------------------


def test_encoder_round_trips_through_botocores_decoder() -> None:
    events = [*converse_events(PARALLEL[:1], text="東京 😀"), ERROR]
    body = eventstream_body(events)
    buffer = botocore.eventstream.EventStreamBuffer()
    decoded: list[Any] = []
    for piece in pieces(body, frame_points(body)):
        buffer.add_data(piece)
        decoded += list(buffer)
    assert len(decoded) == len(events)
    for message, event in zip(decoded, events, strict=True):
        ((kind, payload),) = event.items()
        failed = kind.endswith("Exception")
        assert message.headers[":message-type"] == ("exception" if failed else "event")
        assert message.headers[":exception-type" if failed else ":event-type"] == kind
        assert message.headers[":content-type"] == "application/json"
        value = json.loads(message.payload)
        assert value.pop("p") and value == payload
    # botocore checks both CRCs: a flipped payload byte is refused.
    frame = bytearray(event_message(events[0]))
    frame[-6] ^= 1
    buffer = botocore.eventstream.EventStreamBuffer()
    buffer.add_data(bytes(frame))
    with pytest.raises(botocore.eventstream.ChecksumMismatch):
        list(buffer)


# --- Through the real client ------------------------------------------------------------------


def test_one_call(sse_server: SSEServer, split: str) -> None:
    events = converse_events([WEATHER])
    route = serve(sse_server, events, split=split)
    out, stream = assemble_bedrock(route)
    (call,) = stream.calls
    assert (call.ordinal, call.index, call.id, call.name) == (0, 0, "tooluse_0", "get_weather")
    assert call.ok and call.value == {"city": "Paris", "days": 3}
    assert [e.name for e in out if isinstance(e, CallStarted)] == ["get_weather"]
    assert stream.finish_reason == "tool_use" and stream.transport_error is None
    assert route.requests[0]["path"] == "/model/test-model/converse-stream"
    assert route.requests[0]["json"]["messages"][0]["content"] == [
        {"text": "What is the weather in Paris?"}
    ]


def test_tool_blocks_after_reasoning_and_text(sse_server: SSEServer, split: str) -> None:
    events = converse_events(PARALLEL, text=TEXT, reasoning=True, size=4)
    out, stream = assemble_bedrock(serve(sse_server, events, split=split))
    # Block indexes count the reasoning and text blocks, which have no start; ordinals are dense.
    assert [c.index for c in stream.calls] == [2, 3, 4]
    assert [c.ordinal for c in stream.calls] == [0, 1, 2]
    assert [c.value for c in stream.calls] == [c.value for c in PARALLEL]
    assert [c.id for c in stream.calls] == ["tooluse_0", "tooluse_1", "tooluse_2"]
    # Reasoning is not assistant text.
    assert stream.text == TEXT == "".join(e.text for e in out if isinstance(e, TextDelta))
    assert shown(via_dicts(events)[1]) == shown(stream.calls)


def test_input_as_an_object(sse_server: SSEServer, split: str) -> None:
    # Quirk 23: boto3 passes an object `input` through as a dict; it is the complete value.
    events = [
        {"messageStart": {"role": "assistant"}},
        tool_start(0, WEATHER),
        tool_input(0, {"city": "Oslo", "days": 2}),
        block_stop(0),
        message_stop("tool_use"),
    ]
    stream = both(sse_server, events, split)
    (call,) = stream.calls
    assert call.ok and call.value == {"city": "Oslo", "days": 2}


def test_non_ascii_and_escapes_in_input(sse_server: SSEServer, split: str) -> None:
    arguments = json.dumps({"q": '東京 😀 "quoted" \\ é\n', "e": "\u00e9\ud83d\ude00"})
    escaped = arguments.replace("é", "\\u00e9")  # a JSON escape the model wrote itself
    events = converse_events([Call("search", escaped)], size=3)
    stream = both(sse_server, events, split)
    (call,) = stream.calls
    assert call.ok and call.value == json.loads(arguments) and call.arguments == escaped


def test_a_surrogate_pair_split_between_deltas(sse_server: SSEServer, split: str) -> None:
    # Quirk 41: a UTF-16 producer sends each half as its own escape; boto3 decodes each event
    # alone and hands over lone surrogates.
    events = [
        {"messageStart": {"role": "assistant"}},
        tool_start(0, WEATHER),
        tool_input(0, '{"city": "Oslo \ud83d'),
        tool_input(0, '\ude00"}'),
        block_stop(0),
        message_stop("tool_use"),
    ]
    stream = both(sse_server, events, split)
    (call,) = stream.calls
    assert call.ok and call.value == {"city": "Oslo 😀"}


def test_a_tool_without_parameters_is_an_empty_object(sse_server: SSEServer) -> None:
    stream = both(sse_server, converse_events([Call("list_files", "")]))
    (call,) = stream.calls
    assert call.ok and call.value == {} and call.arguments == "{}"


def test_max_tokens_cuts_the_last_call(sse_server: SSEServer, split: str) -> None:
    events = converse_events([WEATHER, Call("f", '{"path": "x", "content": "abcdef"}')], size=5)
    stop = max(i for i, e in enumerate(events) if "contentBlockStop" in e)
    events = [*events[: stop - 2], *events[stop:-2], message_stop("max_tokens"), metadata()]
    out, stream = assemble_bedrock(serve(sse_server, events, split=split))
    first, second = stream.calls
    assert first.ok
    assert second.error is not None and second.error.kind == "truncated"
    end = out[-1]
    assert isinstance(end, StreamEnded) and end.finish_reason == "max_tokens"
    assert shown(via_dicts(events)[1]) == shown(stream.calls)


@pytest.mark.parametrize("reason", ["max_tokens", "model_context_window_exceeded"])
def test_a_block_stopped_without_input_at_the_limit_is_truncated(
    sse_server: SSEServer, reason: str
) -> None:
    # Bedrock ends the block before it reports the limit: the model never wrote the input, so
    # the call is not a call without parameters.
    events = converse_events([WEATHER, Call("list_files", "")], stop_reason=reason)
    stream = both(sse_server, events)
    assert [c.error.kind if c.error else None for c in stream.calls] == [None, "truncated"]
    assert stream.finish_reason == reason


@pytest.mark.parametrize("reason", ["guardrail_intervened", "content_filtered"])
def test_a_guardrail_stops_the_open_call(sse_server: SSEServer, split: str, reason: str) -> None:
    events = converse_events([WEATHER, Call("f", '{"a": 1}')], stop_reason=reason)
    del events[max(i for i, e in enumerate(events) if "contentBlockStop" in e)]
    stream = both(sse_server, events, split)
    assert [(c.name, c.error.kind if c.error else None) for c in stream.calls] == [
        ("get_weather", None),
        ("f", "filtered"),
    ]
    assert stream.finish_reason == reason


@pytest.mark.parametrize("reason", ["malformed_tool_use", "MALFORMED_MODEL_OUTPUT"])
def test_a_malformed_output_stops_every_call(
    sse_server: SSEServer, split: str, reason: str
) -> None:
    # Every block ended with a whole value, yet Bedrock says a tool use (or the output) was
    # malformed without saying which: none may run.
    events = converse_events([WEATHER, Call("f", '{"a": 1}')], stop_reason=reason)
    stream = both(sse_server, events, split)
    assert [(c.name, c.error.kind if c.error else None) for c in stream.calls] == [
        ("get_weather", "filtered"),
        ("f", "filtered"),
    ]
    assert all(reason in c.error.message for c in stream.calls if c.error)
    assert stream.finish_reason == reason


@pytest.mark.parametrize("complete", [True, False])
def test_an_exception_event_mid_stream(sse_server: SSEServer, split: str, complete: bool) -> None:
    events = converse_events([WEATHER, Call("f", '{"a": 1}')], size=3)
    cut = max(i for i, e in enumerate(events) if "contentBlockStop" in e)
    if not complete:
        cut -= 1  # the last input fragment never arrives
    events = [*events[:cut], ERROR]
    out, stream = assemble_bedrock(serve(sse_server, events, split=split))
    error = stream.transport_error
    assert isinstance(error, botocore.exceptions.EventStreamError)
    assert error.response["Error"]["Code"] == "modelStreamErrorException"
    first, second = stream.calls
    assert first.ok
    # The provider gave up before the block's stop: even a value whose JSON closed does not run.
    assert second.error is not None and second.error.kind == "filtered"
    assert out[-1].finish_reason == "error" == stream.finish_reason
    assert shown(via_dicts(events)[1]) == shown(stream.calls)
    with pytest.raises(botocore.exceptions.EventStreamError):
        stream.raise_for_transport_error()


def test_an_exception_right_after_a_block_without_input(sse_server: SSEServer) -> None:
    # The block stopped, but the response did not go on: not known to be a call without
    # parameters, on the boto3 path (which raises) and the dict path alike.
    events = [*converse_events([Call("list_files", "")])[:-2], ERROR]
    stream = both(sse_server, events)
    assert [c.error.kind if c.error else None for c in stream.calls] == ["filtered"]


@pytest.mark.parametrize(
    ("end", "kind"),
    [
        ("tool_use", None),
        ("max_tokens", "truncated"),
        ("exception", "filtered"),
        ("drop", "truncated"),
    ],
)
def test_a_block_with_only_whitespace_input_is_a_block_without_input(
    sse_server: SSEServer, end: str, kind: str | None
) -> None:
    # Found by the generated corpus: the model began the input with whitespace and was cut
    # right there, and the block still stopped. The core reads blank arguments as `{}`, so
    # such a block must wait for the response to go on, as one without input does; ended at
    # its stop, it ran as a call without parameters after the limit, an exception or a drop.
    events = [{"messageStart": {"role": "assistant"}}, tool_start(0, WEATHER)]
    events += [tool_input(0, "\n"), tool_input(0, " \t"), block_stop(0)]
    stream, run = ended_by(sse_server, events, end)
    want = [(kind, "" if kind == "truncated" else "{}")]
    assert [(c.error and c.error.kind, c.arguments) for c in stream.calls] == want
    assert shown(run.calls) == shown(stream.calls)


@pytest.mark.parametrize("stopped", [True, False])
@pytest.mark.parametrize("end", ["exception", "max_tokens", "drop"])
def test_a_whole_input_after_whitespace_survives_the_end(
    sse_server: SSEServer, end: str, stopped: bool
) -> None:
    # Found by the generated corpus: `" "` then `" {}"` (a fragment that starts with the whole
    # text so far, which the core holds as a possible cumulative resend). Decided only at
    # finish, the value read as blank or incomplete when the stream ended: an exception
    # stopped the call its block had ended, the limit or a drop cut one that was whole.
    events = [{"messageStart": {"role": "assistant"}}, tool_start(0, WEATHER)]
    events += [tool_input(0, " "), tool_input(0, " {}")]
    if stopped:
        events.append(block_stop(0))
    stream, run = ended_by(sse_server, events, end)
    # An exception stops a call its block had not ended; otherwise the value is whole.
    kind = "filtered" if end == "exception" and not stopped else None
    assert [(c.error and c.error.kind, c.arguments) for c in stream.calls] == [(kind, "  {}")]
    assert shown(run.calls) == shown(stream.calls)


@pytest.mark.parametrize("split", ["whole", "adversarial"])
def test_a_dropped_connection(sse_server: SSEServer, split: str) -> None:
    events = converse_events([Call("f", '{"a": 1}'), Call("g", '{"b": "xyz"}')], size=3)
    body = eventstream_body(events)
    route = serve(sse_server, events, split=split, drop_after=body.index(b'"xy') + 2)
    out, stream = assemble_bedrock(route)
    first, second = stream.calls
    assert first.ok and first.value == {"a": 1}
    assert second.error is not None and second.error.kind == "truncated"
    # boto3 lets urllib3's own error through.
    assert isinstance(stream.transport_error, urllib3.exceptions.ProtocolError)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        stream.raise_for_transport_error()
    assert out[-1].finish_reason is None


def test_a_message_botocore_cannot_decode(sse_server: SSEServer) -> None:
    events = converse_events([Call("f", '{"a": 1}'), Call("g", '{"b": "xyz"}')], size=3)
    body = bytearray(eventstream_body(events))
    body[body.index(b'"xy')] ^= 1  # the message CRC no longer matches
    route = sse_server.register(bytes(body), content_type="application/vnd.amazon.eventstream")
    _, stream = assemble_bedrock(route)
    assert isinstance(stream.transport_error, botocore.eventstream.ChecksumMismatch)
    assert [c.ok for c in stream.calls] == [True, False]
    assert stream.calls[1].error is not None and stream.calls[1].error.kind == "truncated"


def test_usage(sse_server: SSEServer, split: str) -> None:
    out, stream = assemble_bedrock(serve(sse_server, converse_events([WEATHER]), split=split))
    end = out[-1]
    assert isinstance(end, StreamEnded) and end.usage == USAGE == stream.usage


def test_usage_members_are_merged() -> None:
    # Cache counters (newer than the oldest boto3 the tests support, which drops members its
    # model does not know) pass through as sent; a `null` never erases a known count.
    cache = {"cacheReadInputTokens": 5, "cacheWriteInputTokens": 0}
    events = converse_events([WEATHER], usage={**USAGE, **cache})
    events.append({"metadata": {"usage": {"outputTokens": 50, "inputTokens": None}}})
    asm = Assembler()
    infos = [asm.feed_chunk(event) for event in events]
    assert infos[-2].usage == {**USAGE, **cache}
    assert infos[-1].usage == {**USAGE, **cache, "outputTokens": 50}


def test_closing_early_closes_the_boto3_stream(sse_server: SSEServer) -> None:
    route = serve(sse_server, converse_events(PARALLEL, size=2))
    with converse_stream(route) as source:
        with assemble(source) as stream:
            first = next(iter(stream))
            assert isinstance(first, CallStarted)
        assert source._raw_stream.closed
    assert stream.calls and not any(c.ok for c in stream.calls)


def test_a_recording_stream_closes_the_boto3_stream_too(
    sse_server: SSEServer, tmp_path: Path
) -> None:
    # The recorder reads the SDK stream through a tee of its own; closing must still reach
    # the SDK stream, or its connection is left to the garbage collector.
    route = serve(sse_server, converse_events(PARALLEL, size=2))
    recorder = Recorder(tmp_path / "corpus.jsonl", streams="all")
    with converse_response(route) as response:
        with recorder.assemble(response) as stream:
            assert isinstance(next(iter(stream)), CallStarted)
        assert response["stream"]._raw_stream.closed
    assert stream.calls and not any(c.ok for c in stream.calls)


def test_the_whole_boto3_response_stands_for_its_stream(sse_server: SSEServer) -> None:
    route = serve(sse_server, converse_events([WEATHER]))
    with converse_response(route) as response, assemble(response) as stream:
        list(stream)
    (call,) = stream.calls
    assert call.ok and call.value == {"city": "Paris", "days": 3}


@pytest.mark.parametrize(
    "source", [{"messageStart": {"role": "assistant"}}, {"stream": "abc"}, "{}", b"data: {}"]
)
def test_one_chunk_or_text_is_not_a_stream(source: Any) -> None:
    # Iterated, each would give keys or characters: no calls and no error.
    with pytest.raises(MisuseError, match="stream of chunks"):
        assemble(source)
    with pytest.raises(MisuseError, match="stream of chunks"):
        aassemble(source)


def test_a_server_side_tool_is_not_assembled() -> None:
    # As dicts: `toolUse.type` is newer than the oldest boto3 the tests support.
    hosted = tool_start(0, Call("web_search", ""))
    hosted["contentBlockStart"]["start"]["toolUse"]["type"] = "server_tool_use"
    events = [
        {"messageStart": {"role": "assistant"}},
        hosted,
        tool_input(0, '{"query": "weather"}'),
        block_stop(0),
        *text_block(1, TEXT),
        *tool_block(2, WEATHER),
        message_stop("tool_use"),
    ]
    _, calls = via_dicts(events)
    assert [(c.index, c.name, c.value) for c in calls] == [(2, "get_weather", WEATHER.value)]


# --- Plain dicts ------------------------------------------------------------------------------


def test_dicts_through_feed_chunk() -> None:
    events = converse_events(PARALLEL[:2], text=TEXT, reasoning=True, size=5)
    asm = Assembler()
    infos = [asm.feed_chunk(event) for event in events]
    assert asm.chunk_format == "bedrock-converse"
    assert "".join(i.text for i in infos) == TEXT
    assert [i.finish_reason for i in infos if i.finish_reason] == ["tool_use"]
    usage = infos[-1].usage
    assert usage == USAGE
    usage["outputTokens"] = 0  # the caller's own copy
    assert [r.name for i in infos for r in i.feeds if r.name] == ["get_weather", "get_time"]
    calls = asm.finish()
    assert [(c.index, c.value) for c in calls] == [(2, PARALLEL[0].value), (3, PARALLEL[1].value)]


@pytest.mark.parametrize(
    "error",
    # An exception member newer than botocore's model ends the response all the same.
    [ERROR, {"throttlingException": {"message": "slow down"}}, {"quotaException": {}}],
)
def test_an_exception_event_as_a_dict_runs_no_open_call(error: dict[str, Any]) -> None:
    events = [*converse_events([WEATHER])[:-3], error, *tool_block(5, Call("late", "{}"))]
    asm = Assembler()
    infos = [asm.feed_chunk(event) for event in events]
    assert infos[-4].finish_reason == "error"
    assert infos[-4].error == error
    # Told as the other formats' provider errors are, at its chunk.
    assert [(kind, event) for kind, event, _ in asm.stream_errors()] == [
        ("provider_error", len(events) - 3)
    ]
    assert [(c.name, c.error and c.error.kind) for c in asm.finish()] == [
        ("get_weather", "filtered"),
        ("late", "filtered"),
    ]


@pytest.mark.parametrize(
    "event",
    [
        {"messageStart": {"role": "assistant"}},
        tool_start(3, WEATHER),
        tool_input(3, "{"),
        block_stop(3),
        message_stop("end_turn"),
        metadata(),
        ERROR,
        {"throttlingException": {"message": "slow down"}},
    ],
)
def test_detect_format(event: dict[str, Any]) -> None:
    assert detect_format(event) == "bedrock-converse"
    # `metadata` is too common a key to tell the format without the usage it carries.
    assert detect_format({"metadata": {"user": "x"}}) is None


def test_make_adapter() -> None:
    assert make_adapter("bedrock-converse").format == "bedrock-converse"
    with pytest.raises(ValueError, match="bedrock-converse"):
        make_adapter("bedrock")  # type: ignore[arg-type]


# --- Recorded and replayed ----------------------------------------------------------------------

REDACTED = {
    "contentBlockDelta": {
        "delta": {"reasoningContent": {"redactedContent": "c2VjcmV0"}},
        "contentBlockIndex": 0,
    }
}


@pytest.mark.parametrize("end", ["exception", "dropped", "clean"])
def test_a_recorded_stream_replays_as_it_ended_live(
    sse_server: SSEServer, tmp_path: Path, end: str
) -> None:
    # boto3 raises an exception event instead of yielding it, a dropped connection leaves no
    # event, and a redacted reasoning block reaches the recorder as bytes: the recording must
    # still load and end its calls as the live stream did.
    calls = [WEATHER, Call("lookup", '{"q": [1, 2]}')]
    events = converse_events(calls, size=4)
    events.insert(1, REDACTED)
    stop = max(i for i, e in enumerate(events) if "contentBlockStop" in e)
    drop_after = None
    if end == "exception":
        events = [*events[:stop], ERROR]
    elif end == "dropped":
        drop_after = len(eventstream_body(events[:stop])) - 3
    route = serve(sse_server, events, drop_after=drop_after)
    # Open objects: `{"type": "object"}` alone is a tool without parameters.
    anything = {"type": "object", "additionalProperties": True}
    tools = Toolset(
        [
            {"name": "get_weather", "parameters": anything},
            {"name": "lookup", "parameters": anything},
        ]
    )
    recorder = Recorder(tmp_path / "corpus.jsonl", toolset=tools, streams="all")
    with converse_stream(route) as source, recorder.assemble(source) as live:
        list(live)
    verdicts = [verdict(c, o) for c, o in zip(live.calls, live.outcomes, strict=True)]
    assert [state for state, _ in verdicts] == (
        ["ok", "ok"] if end == "clean" else ["ok", "model_error"]
    )
    (record,) = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert record["format"] == "bedrock-converse"
    assert REDACTED in record["chunks"]
    (case,) = replay(load_corpus([tmp_path / "corpus.jsonl"]), tools).cases
    assert [(c.state, c.code) for c in case.calls] == verdicts


def test_a_response_replayed_from_its_start_is_read_once() -> None:
    # A retry after a break inside a tool call sends the response again from `messageStart`.
    # The call's text was doubled (`{"ci{"city":"Paris"}`, no call ran) and the text kept
    # twice, where the same stream in Anthropic's shape is read as a replay.
    rendition = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hi "}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather"}},
                "contentBlockIndex": 1,
            }
        },
        {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"ci'}}, "contentBlockIndex": 1}},
        {
            "contentBlockDelta": {
                "delta": {"toolUse": {"input": 'ty":"Paris"}'}},
                "contentBlockIndex": 1,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 1}},
    ]
    end = [{"messageStop": {"stopReason": "tool_use"}}]
    asm = Assembler()
    text = "".join(asm.feed_chunk(e).text for e in [*rendition[:5], *rendition, *end])
    (call,) = asm.finish()
    assert (call.name, call.value, call.error) == ("get_weather", {"city": "Paris"}, None)
    assert "replay_dropped" in call.warnings
    assert text == "Hi "
