"""Gemini and Bedrock streams on which the SDK path (`assemble` over google-genai or boto3),
`feed_chunk` and, for Gemini, `feed_sse` once disagreed, or on which a path lost calls: each
must give the same calls on every path, and no started call may vanish.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("toolwire._core")
pytest.importorskip("boto3")

from .bedrockkit import (
    assemble_bedrock,
    block_stop,
    feed_dicts,
    message_stop,
    metadata,
    serve,
    shown,
    tool_block,
    tool_input,
    tool_start,
)
from .conftest import SSEServer
from .streamkit import Call


@pytest.mark.parametrize(
    "unfit",
    [
        # A structure sent as a string, a boolean, or with two members of a union: botocore's
        # parser raises AttributeError, TypeError or its ResponseParserError from inside the
        # iteration, and the stream cannot go on.
        {"contentBlockDelta": {"delta": "x", "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"toolUse": True}, "contentBlockIndex": 1}},
        {"contentBlockDelta": {"delta": {"text": "a", "toolUse": {"input": "b"}}}},
        {"contentBlockStart": {"start": {"toolUse": "x"}, "contentBlockIndex": 2}},
        {"metadata": {"usage": [1]}},
    ],
)
def test_an_event_botocore_cannot_model_ends_as_a_broken_stream(
    sse_server: SSEServer, unfit: dict[str, Any]
) -> None:
    # The calls of the response must not be lost with botocore's exception: the finished call
    # is kept and the open one is cut off, as when the connection breaks at that event.
    before = [
        {"messageStart": {"role": "assistant"}},
        *tool_block(0, Call("f", '{"a":1}', "t1")),
        tool_start(1, Call("g", "", "t2")),
        tool_input(1, '{"b":'),
    ]
    _, stream = assemble_bedrock(serve(sse_server, [*before, unfit], split="adversarial"))
    assert stream.transport_error is not None
    first, second = stream.calls
    assert first.ok and first.value == {"a": 1}
    assert second.error is not None and second.error.kind == "truncated"
    assert shown(stream.calls) == shown(feed_dicts(before, interrupted=True).calls)


def _unnamed_start(start: Any) -> list[dict[str, Any]]:
    event: dict[str, Any] = {"contentBlockIndex": 0}
    if start != "missing":
        event["start"] = start
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": event},
        tool_input(0, '{"a":'),
        tool_input(0, "1}"),
        block_stop(0),
        *tool_block(1, Call("g", '{"b":2}', "t2")),
        message_stop("tool_use"),
        metadata(),
    ]


def _kept_as_a_lost_start(calls: list[Any]) -> None:
    first, second = calls
    assert first.error is not None and first.error.kind == "missing_name"
    assert first.arguments == '{"a":1}'
    assert second.ok and second.value == {"b": 2}


@pytest.mark.parametrize("start", ["missing", None, {}, {"toolUse": None}])
def test_a_block_start_that_names_no_kind_keeps_its_fragments(start: Any) -> None:
    # Taken for a block that lives on Bedrock's side, its `toolUse` fragments vanished without
    # a word. They are kept as those of a block whose start was lost: the call fails.
    _kept_as_a_lost_start(feed_dicts(_unnamed_start(start)).calls)


@pytest.mark.parametrize("start", ["missing", None])
def test_a_block_start_that_names_no_kind_agrees_through_boto3(
    sse_server: SSEServer, start: Any
) -> None:
    # (botocore itself refuses an empty `start`: that stream ends as broken at that event.)
    events = _unnamed_start(start)
    _, stream = assemble_bedrock(serve(sse_server, events, split="adversarial"))
    _kept_as_a_lost_start(stream.calls)
    assert shown(stream.calls) == shown(feed_dicts(events).calls)
