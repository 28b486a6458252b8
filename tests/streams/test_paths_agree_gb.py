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
    feed_dicts,
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
