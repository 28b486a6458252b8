"""Per-stream limits (fault 14): a response with too many calls or too many bytes is refused
whole, on the SDK path and the raw SSE path alike, and nothing more of it is kept."""

from __future__ import annotations

import itertools
import json
import threading
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import assemble_async, assemble_both, assemble_sync
from .conftest import SSEServer
from .streamkit import (
    Call,
    anthropic_message_start,
    anthropic_stream,
    chat_chunk,
    chat_stream,
    gemini_call,
    gemini_chunk,
    responses_stream,
    sse_body,
    tc,
    tool_delta,
)

GENERATORS = {
    "openai-chat": chat_stream,
    "openai-responses": responses_stream,
    "anthropic": anthropic_stream,
}


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_ten_thousand_calls_are_refused_whole(fmt: str) -> None:
    # The default `max_calls` is 1,024: the calls kept all fail, none runs, and what the calls
    # past the limit carried (ids, metadata) is not kept on any of them.
    events = GENERATORS[fmt]([Call("f", '{"a": 1}') for _ in range(10_000)], size=64)
    raw = Assembler()
    raw.feed_sse(sse_body(events, fmt))
    sdk = Assembler()
    for event in events:
        sdk.feed_chunk(event)
    assert [kind for kind, _, _ in raw.stream_errors()] == ["stream_limit"]
    # Both name the event that took the response past the limit (`feed_chunk` said event 0).
    assert sdk.stream_errors() == raw.stream_errors()
    assert raw.stream_errors()[0][1] > 1024
    kept = [raw.finish(), sdk.finish()]
    for calls in kept:
        assert len(calls) == 1024
        assert {c.error.kind for c in calls if c.error} == {"too_large"}
        assert calls[-1].id is not None and calls[-1].id.endswith("1023")
    assert [(c.id, c.metadata) for c in kept[0]] == [(c.id, c.metadata) for c in kept[1]]


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_calls_past_the_limit_through_the_sdk(sse_server: SSEServer, fmt: str) -> None:
    calls = [Call("f", '{"a": 1}') for _ in range(1030)]
    route = sse_server.register(sse_body(GENERATORS[fmt](calls, size=64), fmt))
    _, s = assemble_both(route, fmt)
    assert len(s.calls) == 1024
    assert not any(c.ok for c in s.calls)
    assert not any(o.ok for o in s.outcomes)


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_bytes_past_the_stream_limit_are_not_kept(fmt: str) -> None:
    calls = [Call("write", '{"text": "' + "x" * 5000 + '"}') for _ in range(3)]
    events = GENERATORS[fmt](calls, size=100)
    raw = Assembler(max_stream_bytes=8000)
    raw.feed_sse(sse_body(events, fmt))
    sdk = Assembler(max_stream_bytes=8000)
    for event in events:
        sdk.feed_chunk(event)
    for done in (raw.finish(), sdk.finish()):
        # Calls whose start came after the limit are not read at all.
        assert 1 <= len(done) <= 3
        # What is kept is counted after it is kept: at most one fragment (100 bytes) past.
        assert sum(len(c.arguments) for c in done) <= 8000 + 100
        assert all(c.error is not None and c.error.kind == "too_large" for c in done)
        assert "max_stream_bytes" in done[0].error.message


def test_limits_are_checked() -> None:
    from toolwire import MisuseError

    with pytest.raises(MisuseError):
        Assembler(max_calls=0)
    with pytest.raises((MisuseError, OverflowError, ValueError)):
        Assembler(max_stream_bytes=-1)


def _gemini_pieces(count: int) -> Iterator[dict[str, Any]]:
    """One Vertex AI call streaming `count` pieces of 100 bytes: one string continued over the
    first half, a member of its own for each piece of the second (what is merged grows by paths
    as well as text), then a whole call and the finish."""
    yield gemini_chunk(gemini_call("write", willContinue=True))
    half = count // 2
    for n in range(count):
        if n < half:
            piece = {"jsonPath": "$.text", "stringValue": "x" * 100, "willContinue": n + 1 < half}
        else:
            piece = {"jsonPath": f"$.part{n}", "stringValue": "y" * 100}
        yield gemini_chunk(gemini_call(None, partialArgs=[piece], willContinue=True))
    yield gemini_chunk(gemini_call(None, partialArgs=[{"jsonPath": "$.end", "boolValue": True}]))
    yield gemini_chunk(gemini_call("after", {"a": 1}), finish="STOP")


@pytest.mark.parametrize("path", ["sdk", "raw"])
def test_streamed_gemini_pieces_past_the_stream_limit_are_let_go(path: str) -> None:
    # Vertex AI's `partialArgs` pieces are merged and held until their call closes: they count
    # against `max_stream_bytes` as they arrive, and past it the response is refused whole and
    # nothing more of it is held (20 MB of pieces, a limit of 200 KB).
    asm = Assembler(max_stream_bytes=200_000)
    tracemalloc.start()
    try:
        for chunk in _gemini_pieces(200_000):
            if path == "sdk":
                asm.feed_chunk(chunk)
            else:
                asm.feed_sse(sse_body([chunk], "gemini"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [kind for kind, _, _ in asm.stream_errors()] == ["stream_limit"]
    done = asm.finish()
    assert done and all(c.error is not None and c.error.kind == "too_large" for c in done)
    # Python's own allocations (the SDK path's adapter); the raw path holds its pieces in Rust,
    # where the limit is checked by the decoder itself.
    assert peak < 5_000_000, peak


@pytest.mark.parametrize("closes", [True, False])
def test_a_streamed_gemini_call_cut_by_the_stream_limit_ends_alike_on_every_path(
    sse_server: SSEServer, closes: bool
) -> None:
    # Pieces pass the limit: the response is refused, and nothing that comes after is kept, as
    # in every format. The wrapper reads no further; `feed_chunk` and `feed_sse`, which read on,
    # must not then feed the call the arguments its last piece closes: it keeps none on every
    # path (it held `{}` on those two, where `assemble` left it empty).
    piece = {"jsonPath": "$.a", "stringValue": "x" * 150}
    chunks = [
        gemini_chunk(gemini_call("write", willContinue=True)),
        gemini_chunk(gemini_call(None, partialArgs=[piece], willContinue=True)),
    ]
    if closes:
        chunks.append(gemini_chunk(gemini_call(None)))
    chunks.append(gemini_chunk(gemini_call("after", {"b": 1}), finish="STOP"))
    assert _ended_on_every_path(sse_server, chunks, "gemini") == [[("write", "", "too_large")]] * 3


def test_a_call_without_text_at_the_stream_limit_keeps_none_on_every_path(
    sse_server: SSEServer,
) -> None:
    # The same rule in Chat: text passes the limit before the call's arguments come. A reader
    # that reads on to the finish reason (which ends the call) must not make it `{}`, the
    # stand-in of a call without parameters, where the wrapper, stopped at the limit, has none.
    chunks = [
        chat_chunk(tool_delta(tc(0, id="c1", name="write"))),
        chat_chunk({"content": "z" * 200}),
        chat_chunk(tool_delta(tc(0, arguments='{"a": 1}'))),
        chat_chunk(finish_reason="tool_calls"),
    ]
    ended = _ended_on_every_path(sse_server, chunks, "openai-chat")
    assert ended == [[("write", "", "too_large")]] * 3


def _ended_on_every_path(
    sse_server: SSEServer, chunks: list[Any], fmt: str, limit: int = 100
) -> list[list[tuple[str | None, str, str | None]]]:
    """The calls (name, arguments, error kind) each path ends `chunks` with under
    `max_stream_bytes=limit`: the SDK wrapper over HTTP, `feed_chunk` and `feed_sse`."""
    limits = {"max_stream_bytes": limit}
    route = sse_server.register(sse_body(chunks, fmt))
    _, stream = assemble_sync(route, fmt, limits=limits)
    chunked, raw = Assembler(**limits), Assembler(**limits)
    for chunk in chunks:
        chunked.feed_chunk(chunk)
    raw.feed_sse(route.body)
    return [
        [(c.name, c.arguments, c.error and c.error.kind) for c in calls]
        for calls in (stream.calls, chunked.finish(), raw.finish())
    ]


def test_a_string_in_many_tiny_pieces_is_held_compactly() -> None:
    # One string of Vertex AI pieces is held until it ends. Held as a str per piece, 60,000
    # pieces of two characters took some 3.5 MB of Python memory for 120 KB of text.
    asm = Assembler()
    asm.feed_chunk(gemini_chunk(gemini_call("f", willContinue=True)))

    def pieces() -> None:
        for n in range(60_000):
            piece = {"jsonPath": "$.s", "stringValue": f"{n % 10}x", "willContinue": True}
            asm.feed_chunk(gemini_chunk(gemini_call(None, partialArgs=[piece], willContinue=True)))

    held, _ = _held_while(pieces)
    assert held < 1_000_000, held
    asm.feed_chunk(
        gemini_chunk(gemini_call(None, partialArgs=[{"jsonPath": "$.s", "stringValue": "!"}]))
    )
    asm.feed_chunk(gemini_chunk(finish="STOP"))
    (call,) = asm.finish()
    assert call.error is None
    assert call.value == {"s": "".join(f"{n % 10}x" for n in range(60_000)) + "!"}


def test_streamed_gemini_pieces_within_the_limit_are_merged_on_both_paths() -> None:
    chunks = list(_gemini_pieces(300))
    raw = Assembler(max_stream_bytes=200_000)
    raw.feed_sse(sse_body(chunks, "gemini"))
    sdk = Assembler(max_stream_bytes=200_000)
    for chunk in chunks:
        sdk.feed_chunk(chunk)
    for asm in (raw, sdk):
        assert asm.stream_errors() == []
        first, second = asm.finish()
        assert first.ok and isinstance(first.value, dict)
        assert len(first.value["text"]) == 100 * 150 and first.value["part299"] == "y" * 100
        assert second.ok and second.value == {"a": 1}


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", sorted(GENERATORS))
async def test_the_stream_wrappers_take_the_assembler_limits(
    sse_server: SSEServer, fmt: str
) -> None:
    # Through the real SDK clients: a gateway that caps a response below the defaults says so
    # once, to `assemble` or `aassemble`, and the response is refused whole at that cap.
    calls = [Call("f", '{"a": 1}') for _ in range(5)]
    route = sse_server.register(sse_body(GENERATORS[fmt](calls, size=64), fmt))
    _, synced = assemble_sync(route, fmt, limits={"max_calls": 3})
    _, awaited = await assemble_async(route, fmt, limits={"max_calls": 3})
    for stream in (synced, awaited):
        assert len(stream.calls) == 3
        assert not any(c.ok for c in stream.calls)
        assert [kind for kind, _, _ in stream.assembler.stream_errors()] == ["stream_limit"]


def test_a_limit_out_of_range_is_refused_when_the_wrapper_is_made() -> None:
    from toolwire import MisuseError, assemble

    with pytest.raises(MisuseError):
        assemble([], limits={"max_calls": 0})


@pytest.mark.parametrize("keyword", ["progress_into", "tools", "track_progress", "max_call"])
def test_limits_take_only_the_limits(keyword: str) -> None:
    # `progress_into` was taken: the wrapper's own progress items went to that list, and its
    # argument-progress events vanished without a word.
    from toolwire import aassemble, assemble

    limits: Any = {keyword: []}
    with pytest.raises(TypeError, match=keyword):
        assemble([], limits=limits)
    with pytest.raises(TypeError, match=keyword):
        aassemble(_no_chunks(), limits=limits)


async def _no_chunks() -> AsyncIterator[Any]:
    return
    yield


def _usage_chunk(usage: Any) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion.chunk", "choices": [], "usage": usage}


def test_usage_is_bounded_and_read_alike_on_both_paths() -> None:
    # Usage is a handful of counts: a stream of usage objects that each bring new members, one
    # with a huge member, one nested past any reader, must cost time in proportion to each
    # object (they were merged whole, again and again) and keep no more than the bounds.
    deep: Any = 1
    for _ in range(600):
        deep = {"a": deep}
    usages: list[Any] = [{"prompt_tokens": 3, "details": {"cached": None, "hit": 1}}]
    usages += [{f"k{i}_{j}": j for j in range(20)} for i in range(10)]
    usages += [{"prompt_tokens": 5, "huge": "v" * 10_000}, {"deep": deep}, {"completion_tokens": 7}]
    chunks = [_usage_chunk(u) for u in usages]
    raw = Assembler()
    raw.feed_sse(sse_body(chunks, "openai-chat"))
    dicts = Assembler()
    infos = [dicts.feed_chunk(chunk) for chunk in chunks]
    usage = raw.usage
    assert usage is not None and usage == infos[-1].usage
    assert len(usage) == 64 and usage["prompt_tokens"] == 3 and usage["details"] == {"hit": 1}
    assert "huge" not in usage and "deep" not in usage and "completion_tokens" not in usage


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_text_past_the_stream_limit_is_kept_on_neither_path(
    sse_server: SSEServer, fmt: str
) -> None:
    # The raw path reads no text once the response is past its limit; `feed_chunk` and the
    # SDK wrapper went on keeping (and announcing) every later piece, without bound. The piece
    # that crosses the limit is not kept either: one event may carry megabytes.
    events = GENERATORS[fmt]([Call("f", '{"a": 1}')], text="part of a long answer. " * 40)
    raw = Assembler(max_stream_bytes=30)
    raw.feed_sse(sse_body(events, fmt))
    dicts = Assembler(max_stream_bytes=30)
    dict_text = "".join(dicts.feed_chunk(event).text for event in events)
    route = sse_server.register(sse_body(events, fmt))
    _, sdk = assemble_sync(route, fmt, limits={"max_stream_bytes": 30})
    assert 0 < len(raw.text) <= 30
    assert dict_text == raw.text == sdk.text
    for asm in (raw, dicts):
        assert [kind for kind, _, _ in asm.stream_errors()] == ["stream_limit"]
        assert [c.error.kind if c.error else None for c in asm.finish()] == ["too_large"]


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_one_event_of_text_past_the_limit_is_not_kept(fmt: str) -> None:
    # The raw path kept the whole text of the event that crossed the limit: 5 MB under a
    # limit of 1,000 bytes, bounded only by the event size cap.
    events = GENERATORS[fmt]([Call("f", '{"a": 1}')], text="Z")
    events = json.loads(json.dumps(events).replace('"Z"', '"' + "y" * 5_000_000 + '"'))
    raw = Assembler(max_stream_bytes=1000)
    raw.feed_sse(sse_body(events, fmt))
    dicts = Assembler(max_stream_bytes=1000)
    dict_text = "".join(dicts.feed_chunk(event).text for event in events)
    assert raw.text == dict_text == ""
    assert [kind for kind, _, _ in raw.stream_errors()] == ["stream_limit"]


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_assistant_text_counts_toward_the_stream_limit_on_both_paths(fmt: str) -> None:
    # `feed_chunk` neither counted the text nor stopped keeping it (Anthropic and Responses
    # keep it to recognise a replay): 200 MiB of it was held, and the raw path refused the
    # response where `feed_chunk` ran it.
    events = GENERATORS[fmt]([Call("f", '{"a": 1}')], text="long answer " * 200, size=8)
    raw = Assembler(max_stream_bytes=1000)
    raw.feed_sse(sse_body(events, fmt))
    dicts = Assembler(max_stream_bytes=1000)
    for event in events:
        dicts.feed_chunk(event)
    calls = raw.finish(), dicts.finish()
    assert [[c.error.kind if c.error else None for c in run] for run in calls] == [
        ["too_large"],
        ["too_large"],
    ]
    assert raw.stream_errors()[0][0] == "stream_limit"
    assert dicts.stream_errors() == raw.stream_errors()


# ---------------------------------------------------------------------------------------------
# Arguments set aside outside the calls: an Anthropic block's `input` at its start, a Responses
# `output_item.added`'s `arguments`. Used only if the call's own fragments never come, they are
# held until the call ends, and count toward the limits while they are held.

MiB = 1 << 20


def _feed(asm: Assembler, events: Iterable[dict[str, Any]], path: str, fmt: str) -> None:
    """Feed events one at a time (made one at a time: nothing here keeps them alive)."""
    for event in events:
        if path == "sdk":
            asm.feed_chunk(event)
        else:
            # One event at a time: Chat's `[DONE]` belongs after the last one only.
            asm.feed_sse(sse_body([event], fmt).removesuffix(b"data: [DONE]\n\n"))


def _held_while(feed: Callable[[], None]) -> tuple[int, int]:
    """The Python memory still allocated after `feed`, and its peak, as tracemalloc sees it."""
    tracemalloc.start()
    try:
        feed()
        return tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()


def _block_start(index: int, arguments: object, *, id: str | None = None) -> dict[str, Any]:
    return {
        "type": "content_block_start",
        "index": index,
        "content_block": {
            "type": "tool_use",
            "id": id or f"toolu_{index}",
            "name": "write",
            "input": arguments,
        },
    }


def _block_rest(index: int, *fragments: str) -> list[dict[str, Any]]:
    return [
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": f},
            }
            for f in fragments
        ),
        {"type": "content_block_stop", "index": index},
    ]


_ANTHROPIC_END = [
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]


def _item_added(index: int, arguments: str) -> dict[str, Any]:
    return {
        "type": "response.output_item.added",
        "output_index": index,
        "item": {
            "type": "function_call",
            "id": f"fc_{index}",
            "call_id": f"call_{index}",
            "name": "write",
            "arguments": arguments,
        },
    }


def _item_done(index: int) -> dict[str, Any]:
    return {
        "type": "response.output_item.done",
        "output_index": index,
        "item": {"type": "function_call", "id": f"fc_{index}", "call_id": f"call_{index}"},
    }


def _item_delta(index: int, delta: str) -> dict[str, Any]:
    return {
        "type": "response.function_call_arguments.delta",
        "item_id": f"fc_{index}",
        "output_index": index,
        "delta": delta,
    }


_RESPONSES_END = [{"type": "response.completed", "response": {"status": "completed"}}]


def _outcome(asm: Assembler) -> list[tuple[Any, ...]]:
    return [
        (c.ordinal, c.id, c.name, c.arguments, c.error.kind if c.error else None)
        for c in asm.finish()
    ] + [(kind,) for kind, _, _ in asm.stream_errors()]


def _anthropic_inputs(count: int, size: int) -> Iterator[dict[str, Any]]:
    """Tool blocks whose start carries `size` bytes of input and that never stop."""
    yield anthropic_message_start()
    for i in range(count):
        yield _block_start(i, {"text": f"{i:08d}" + "x" * size})


def _responses_added(count: int, size: int) -> Iterator[dict[str, Any]]:
    """Items announced with `size` bytes of arguments that no delta replaces."""
    for i in range(count):
        yield _item_added(i, json.dumps({"text": f"{i:08d}" + "x" * size}))


# Each format's calls with their stream limit: Responses' is one that each call fits alone.
_SET_ASIDE = {
    "anthropic": (_anthropic_inputs, 64 * 1024),
    "openai-responses": (_responses_added, MiB),
}


@pytest.mark.parametrize("path", ["sdk", "raw"])
@pytest.mark.parametrize("fmt", sorted(_SET_ASIDE))
def test_set_aside_arguments_count_toward_the_stream_limit(fmt: str, path: str) -> None:
    # 200 calls whose start carries 256 KiB of arguments, never replaced and never ended:
    # Anthropic's inputs were counted against no limit; Responses' `added` arguments were
    # checked one at a time (each fits 1 MiB) but never summed. All of them were held (50 MiB on
    # either path).
    calls, limit = _SET_ASIDE[fmt]
    asm = Assembler(max_stream_bytes=limit)
    _, peak = _held_while(lambda: _feed(asm, calls(200, 256 * 1024), path, fmt))
    assert [kind for kind, _, _ in asm.stream_errors()] == ["stream_limit"]
    done = asm.finish()
    assert 1 <= len(done) <= 4
    assert all(c.error is not None and c.error.kind == "too_large" for c in done)
    # Python's own allocations: the SDK path's adapter held each start's arguments.
    assert peak < 5 * MiB, peak


@pytest.mark.parametrize("fmt", sorted(_SET_ASIDE))
def test_set_aside_arguments_past_the_stream_limit_alike_on_both_paths(fmt: str) -> None:
    calls, limit = _SET_ASIDE[fmt]
    outcomes = []
    for path in ("sdk", "raw"):
        asm = Assembler(max_stream_bytes=limit)
        _feed(asm, calls(40, 256 * 1024), path, fmt)
        outcomes.append(_outcome(asm))
    assert outcomes[0] == outcomes[1]


def _anthropic_past_max_bytes(size: int) -> Iterator[dict[str, Any]]:
    yield anthropic_message_start()
    yield _block_start(0, {"text": "x" * size})


def _anthropic_after_past_max_bytes() -> list[dict[str, Any]]:
    return [
        *_block_rest(0),
        _block_start(1, {}),
        *_block_rest(1, "", '{"a": 1}'),
        *_ANTHROPIC_END,
    ]


def _responses_past_max_bytes(size: int) -> Iterator[dict[str, Any]]:
    yield {"type": "response.created", "response": {"status": "in_progress"}}
    yield _item_added(0, json.dumps({"text": "x" * size}))


def _responses_after_past_max_bytes() -> list[dict[str, Any]]:
    return [
        _item_done(0),
        _item_added(1, ""),
        _item_delta(1, '{"a": 1}'),
        _item_done(1),
        *_RESPONSES_END,
    ]


_PAST_MAX_BYTES = {
    "anthropic": (_anthropic_past_max_bytes, _anthropic_after_past_max_bytes),
    "openai-responses": (_responses_past_max_bytes, _responses_after_past_max_bytes),
}


@pytest.mark.parametrize("path", ["sdk", "raw"])
@pytest.mark.parametrize("fmt", sorted(_PAST_MAX_BYTES))
def test_set_aside_arguments_past_max_bytes_fail_their_call_at_once(fmt: str, path: str) -> None:
    # Arguments at a call's start larger than one call may hold: that call is `too_large` at
    # once (they were held until the call ended, then fed), they are not kept, and the
    # response goes on.
    start, rest = _PAST_MAX_BYTES[fmt]
    asm = Assembler(max_bytes=MiB)
    held, _ = _held_while(lambda: _feed(asm, start(2 * MiB), path, fmt))
    assert [(ordinal, e.kind) for ordinal, e in asm.drain_errors()] == [(0, "too_large")]
    assert held < MiB // 2, held
    _feed(asm, rest(), path, fmt)
    assert asm.stream_errors() == []
    first, second = asm.finish()
    assert first.error is not None and first.error.kind == "too_large"
    assert first.arguments == "{}"
    assert second.ok and second.value == {"a": 1}


def _anthropic_replaced(limit: int) -> list[dict[str, Any]]:
    """Blocks whose start carries more than half the limit, replaced by fragments, then one
    whose start is used."""
    big = {"text": "x" * (limit // 2 - 2)}
    events = [anthropic_message_start()]
    for i in range(5):
        events += [_block_start(i, big), *_block_rest(i, "", "{}")]
    events += [_block_start(5, big), *_block_rest(5), *_ANTHROPIC_END]
    return events


def _responses_replaced(limit: int) -> list[dict[str, Any]]:
    big = json.dumps({"text": "x" * (limit // 2 - 2)})
    events = [{"type": "response.created", "response": {"status": "in_progress"}}]
    for i in range(5):
        events += [_item_added(i, big), _item_delta(i, "{}"), _item_done(i)]
    events += [_item_added(5, big), _item_done(5), *_RESPONSES_END]
    return events


_REPLACED = {"anthropic": _anthropic_replaced, "openai-responses": _responses_replaced}


@pytest.mark.parametrize("fmt", sorted(_REPLACED))
def test_set_aside_arguments_count_only_while_held(fmt: str) -> None:
    # Each start sets aside more than half the limit: what fragments replace is given back at
    # the first fragment, what is used is counted once. Counted for good when set aside, the
    # second call would pass the limit; counted only when used, a hostile stream held any
    # number of them.
    limit = 4000
    events = _REPLACED[fmt](limit)
    outcomes = []
    for path in ("sdk", "raw"):
        asm = Assembler(max_stream_bytes=limit)
        _feed(asm, events, path, fmt)
        assert asm.stream_errors() == []
        outcomes.append(_outcome(asm))
    assert outcomes[0] == outcomes[1]
    assert [error for *_, error in outcomes[0]] == [None] * 6
    assert [json.loads(arguments) for *_, arguments, _ in outcomes[0]][4:] == [
        {},
        {"text": "x" * (limit // 2 - 2)},
    ]


# ---------------------------------------------------------------------------------------------
# After a stream limit: further events cost no memory, yet every call started ends once.


def _responses_new_items(count: int) -> Iterator[dict[str, Any]]:
    """Deltas for ever-new items (their `added` never came)."""
    for i in range(count):
        yield _item_delta(i, '{"a": "' + "x" * 100 + '"}')


def _gemini_new_calls(count: int) -> Iterator[dict[str, Any]]:
    """Whole calls with ever-new ids."""
    for i in range(count):
        yield gemini_chunk(gemini_call("write", {"a": "x" * 100}, id=f"call_{i:08d}"))


def _anthropic_new_blocks(count: int) -> Iterator[dict[str, Any]]:
    """Tool blocks that start and never stop."""
    yield anthropic_message_start()
    for i in range(count):
        yield _block_start(i, {})


_NEW_ITEMS = {
    "openai-responses": _responses_new_items,
    "gemini": _gemini_new_calls,
    "anthropic": _anthropic_new_blocks,
}


@pytest.mark.parametrize("fmt", sorted(_NEW_ITEMS))
def test_after_a_stream_limit_new_items_cost_no_memory(fmt: str) -> None:
    # Refused after a few dozen calls, a response goes on with 20,000 new items: the adapter
    # made state for each (8 MB on the SDK path, as much again in Rust on the raw path).
    limit = 4096 if fmt != "anthropic" else 256
    max_calls = 1024 if fmt != "anthropic" else 16
    asm = Assembler(max_stream_bytes=limit, max_calls=max_calls)
    items = _NEW_ITEMS[fmt](21_000)
    _feed(asm, itertools.islice(items, 1000), "sdk", fmt)
    assert [kind for kind, _, _ in asm.stream_errors()] == ["stream_limit"]
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        _feed(asm, items, "sdk", fmt)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 100_000, after - before


@pytest.mark.parametrize("fmt", sorted(_NEW_ITEMS))
def test_after_a_stream_limit_every_call_started_ends_once_on_both_paths(fmt: str) -> None:
    outcomes = []
    for path in ("sdk", "raw"):
        asm = Assembler(max_stream_bytes=4096, max_calls=16)
        _feed(asm, _NEW_ITEMS[fmt](2000), path, fmt)
        outcomes.append(_outcome(asm))
    assert outcomes[0] == outcomes[1]
    *calls, (limit,) = outcomes[0]
    assert limit == "stream_limit"
    assert calls and all(error == "too_large" for *_, error in calls)
    # One result per call started.
    assert [ordinal for ordinal, *_ in calls] == list(range(len(calls)))


# ---------------------------------------------------------------------------------------------
# Fragments held for a surrogate half (quirk 41) count toward the limit while held.

_HIGH = "\ud83d"
_LOW = "\ude00"


def _chat_fragment(index: int, fragment: str) -> dict[str, Any]:
    function = {"name": "write", "arguments": fragment}
    entry = {"index": index, "id": f"call_{index}", "type": "function", "function": function}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]}


def _anthropic_fragment(index: int, fragment: str) -> Iterator[dict[str, Any]]:
    yield _block_start(index, {})
    yield _block_rest(index, fragment)[0]


def _responses_fragment(index: int, fragment: str) -> Iterator[dict[str, Any]]:
    yield _item_added(index, "")
    yield _item_delta(index, fragment)


def _halves(fmt: str, fragments: Iterable[tuple[int, str]]) -> Iterator[dict[str, Any]]:
    """Each (wire index, fragment) as the first fragment of a new call (its start, for the
    formats that send one) or, for an index seen before, its next fragment (Chat only)."""
    if fmt == "anthropic":
        yield anthropic_message_start()
    seen: set[int] = set()
    for index, fragment in fragments:
        if fmt == "openai-chat":
            yield _chat_fragment(index, fragment)
        elif index in seen:
            yield (
                _block_rest(index, fragment)[0]
                if fmt == "anthropic"
                else _item_delta(index, fragment)
            )
        elif fmt == "anthropic":
            yield from _anthropic_fragment(index, fragment)
        else:
            yield from _responses_fragment(index, fragment)
        seen.add(index)


def _rss() -> int:
    """The process's resident memory, in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


@pytest.mark.parametrize("path", ["sdk", "raw"])
@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_fragments_held_for_a_surrogate_half_count_toward_the_stream_limit(
    fmt: str, path: str
) -> None:
    # 100 new calls whose first fragment is 1 MiB ending in a high surrogate half whose low half
    # never comes: each was held whole until its call's next fragment, counted against no
    # limit, so 100 MiB were held under a 64 KiB limit and the response was never refused.
    asm = Assembler(max_stream_bytes=64 * 1024)
    fragments = ((i, '{"text": "' + "x" * MiB + _HIGH) for i in range(100))
    rss = _rss()
    held, peak = _held_while(lambda: _feed(asm, _halves(fmt, fragments), path, fmt))
    # Rust's allocations on the raw path (the SDK path holds what it holds in Python).
    assert _rss() - rss < 32 * MiB, _rss() - rss
    assert [kind for kind, _, _ in asm.stream_errors()] == ["stream_limit"]
    done = asm.finish()
    assert done and all(c.error is not None and c.error.kind == "too_large" for c in done)
    # Python's own allocations: one event at a time, and nothing held after it.
    assert held < MiB // 2, held
    # Each 1 MiB fragment with a lone half is a 2 MiB `str`, copied a few times while read.
    assert peak < 16 * MiB, peak


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_fragments_held_for_a_surrogate_half_past_the_limit_alike_on_both_paths(fmt: str) -> None:
    # Some halves are paired by their call's next fragment (Chat), some never are; the limit
    # is passed while several are held, and a hold refused hands the fragment on at once.
    def fragments() -> Iterator[tuple[int, str]]:
        for i in range(40):
            yield i, '{"text": "' + f"{i:04d}" * 1000 + _HIGH
            if fmt == "openai-chat" and i % 2:
                yield i, _LOW + '"}'

    outcomes = []
    for path in ("sdk", "raw"):
        asm = Assembler(max_stream_bytes=64 * 1024)
        _feed(asm, _halves(fmt, fragments()), path, fmt)
        outcomes.append(_outcome(asm))
    assert outcomes[0] == outcomes[1]
    *calls, (limit,) = outcomes[0]
    assert limit == "stream_limit"
    assert calls and all(error == "too_large" for *_, error in calls)


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_fragments_held_for_a_surrogate_half_count_only_while_held(fmt: str) -> None:
    # Each call is 3,000 bytes, held at 2,900 for its half, under a limit of 7,000 that the
    # stream as sent never passes: a held fragment is given back before it is fed, and a
    # cumulative resend (quirk 19) that replaces it is counted once.
    limit = 7000
    text = '{"text": "' + "x" * 2890

    def fragments() -> Iterator[tuple[int, str]]:
        yield 0, text + _HIGH
        yield 0, _LOW + '"}'
        if fmt == "openai-chat":
            yield 1, text + _HIGH
            yield 1, text + _HIGH + _LOW + '"}'

    outcomes = []
    for path in ("sdk", "raw"):
        asm = Assembler(max_stream_bytes=limit)
        _feed(asm, _halves(fmt, fragments()), path, fmt)
        assert asm.stream_errors() == []
        outcomes.append(_outcome(asm))
    assert outcomes[0] == outcomes[1]
    assert [json.loads(arguments) for *_, arguments, _ in outcomes[0]] == [
        {"text": "x" * 2890 + "\U0001f600"}
    ] * (2 if fmt == "openai-chat" else 1)


@pytest.mark.parametrize("fmt", ["anthropic", "openai-chat"])
def test_fragments_held_as_a_possible_resend_count_only_while_held(fmt: str) -> None:
    # `{"a":` again and again is a resend as much as a continuation: both readings are kept
    # until a fragment decides, then one is let go. A response exactly at its limit is kept,
    # by `feed_chunk` too, whose short path for plain fragments counted the held copies a
    # second time once the call went on; one byte less is refused, on every path. (Responses
    # is left out only because each item's id is kept, and counted, as metadata too.)
    calls = [Call("f", '{"a":{"a":{"a":{"a":1}}}}', "c0"), Call("g", '{"b": 22}', "c1")]
    sent = sum(len(c.arguments) + len(c.name) + len(c.id) for c in calls)
    events = GENERATORS[fmt](calls, size=5)
    for limit, refused in ((sent, []), (sent - 1, ["stream_limit"])):
        outcomes = []
        for path in ("sdk", "raw"):
            asm = Assembler(max_stream_bytes=limit)
            _feed(asm, events, path, fmt)
            outcomes.append(_outcome(asm))
            assert [kind for kind, _, _ in asm.stream_errors()] == refused, (path, limit)
        assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_a_held_half_left_unpaired_where_the_limit_is_passed_is_kept_alike(fmt: str) -> None:
    # A fragment held for its low half, then one that does not pair it and passes the limit:
    # the SDK path fed the held text on its own first, so it alone passed the limit and the
    # rest was dropped (`{"text": "ab\ud83d`), where `feed_sse` feeds the two as one fragment
    # and keeps both, with the `lone_surrogate` the pre-check then sees.
    from toolwire import Toolset

    tools = Toolset([{"name": "write", "parameters": {"properties": {"text": {}}}}])
    fragments = [(0, '{"text": "ab' + _HIGH), (0, 'cd"}')]
    refused = 0
    for limit in range(1, 40):
        outcomes = []
        for path in ("sdk", "raw"):
            asm = Assembler(tools=tools, max_stream_bytes=limit)
            _feed(asm, _halves(fmt, fragments), path, fmt)
            early = [(o, e.kind, e.offset) for o, e in asm.drain_errors()]
            outcomes.append((_outcome(asm), early))
        assert outcomes[0] == outcomes[1], limit
        refused += ("stream_limit",) in outcomes[0][0]
    assert refused


def test_a_refused_call_names_the_limit_and_its_limits_say_the_value() -> None:
    # A record of a refused call once had to read the limit back out of the error's message:
    # `ToolCall.limits` left the response's limits out, and the error named no setting.
    asm = Assembler(max_calls=1, max_stream_bytes=4096)
    asm.feed(0, id="a", name="f", arguments='{"x": 1}')
    asm.feed(1, id="b", name="f", arguments='{"x": 2}')
    (call,) = asm.finish()
    assert call.error is not None and call.error.kind == "too_large"
    assert call.error.keyword == "max_calls"
    assert call.limits == {"max_calls": 1, "max_stream_bytes": 4096}
    again = Assembler(**call.limits)
    again.feed(0, id="a", name="f", arguments='{"x": 1}')
    again.feed(1, id="b", name="f", arguments='{"x": 2}')
    assert [c.error.keyword if c.error else None for c in again.finish()] == ["max_calls"]


@pytest.mark.anyio
@pytest.mark.parametrize("consumer", ["sync", "async", "closed early"])
async def test_a_finished_stream_frees_its_calls_working_state(
    monkeypatch: pytest.MonkeyPatch, consumer: str
) -> None:
    # `finish` leaves the calls' scanners and pre-check state to be freed with the assembler,
    # so that the calls come out sooner; a stream object kept after its events (and with it
    # its assembler) must not hold that state, about 3.5 KB per pre-checked 2 KB call.
    from toolwire import Toolset, aassemble, assemble

    released: list[bool] = []
    release = Assembler.release_finished

    def spy(self: Assembler) -> None:
        released.append(self.finished)
        release(self)

    monkeypatch.setattr(Assembler, "release_finished", spy)
    tools = Toolset([{"name": "f", "parameters": {"properties": {"a": {"type": "integer"}}}}])
    chunks = chat_stream([Call("f", '{"a": 1}'), Call("f", '{"a": 2}')], size=3)
    if consumer == "async":

        async def source() -> Any:
            for chunk in chunks:
                yield chunk

        async with aassemble(source(), tools) as awaited:
            events = [event async for event in awaited]
        stream: Any = awaited
    else:
        stream = assemble(chunks, tools)
        with stream:
            events = list(itertools.islice(stream, 2 if consumer == "closed early" else None))
    assert released == [True]
    assert events
    if consumer != "closed early":
        assert [(call.ok, call.value) for call in stream.calls] == [
            (True, {"a": 1}),
            (True, {"a": 2}),
        ]


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", sorted(GENERATORS))
async def test_the_wrappers_stop_reading_a_response_past_its_limit(
    sse_server: SSEServer, fmt: str
) -> None:
    # A runaway response: once past the cap nothing more of it is kept and every call fails,
    # yet the wrappers read on to the end for its usage, downloading (and paying for) the rest.
    # The server stalls after the event that starts the call past `max_calls`: a wrapper that
    # reads on waits there until the route is released, and then sees the body cut short.
    tools = [Call(f"tool{i}", '{"a": 1}') for i in range(5)]
    body = sse_body(GENERATORS[fmt](tools, size=64), fmt)
    stall_at = body.index(b"\n\n", body.index(b'"tool3"')) + 2
    for read in ("sync", "async"):
        route = sse_server.register(body, drop_after=stall_at, stall=True)
        release = threading.Timer(10, route.release.set)
        release.start()
        try:
            options: dict[str, Any] = {"limits": {"max_calls": 3}}
            if read == "sync":
                _, stream = assemble_sync(route, fmt, **options)
            else:
                _, stream = await assemble_async(route, fmt, **options)
        finally:
            release.cancel()
            route.release.set()
        assert stream.transport_error is None, read
        assert stream.finish_reason is None, read
        assert len(stream.calls) == 3 and not any(c.ok for c in stream.calls), read
        assert [kind for kind, _, _ in stream.assembler.stream_errors()] == ["stream_limit"]


def _refused(events: list[dict[str, Any]], fmt: str, path: str, limit: int) -> list[Any]:
    """The calls `path` gives for `events` under `max_bytes` 12 and `max_stream_bytes` `limit`,
    and whether the response was refused."""
    assembler = Assembler(max_bytes=12, max_stream_bytes=limit)
    if path == "feed_sse":
        assembler.feed_sse(sse_body(events, fmt))
    else:
        for event in events:
            assembler.feed_chunk(event)
    calls = [(c.arguments, c.error.kind if c.error else None) for c in assembler.finish()]
    return [calls, any(kind == "stream_limit" for kind, _, _ in assembler.stream_errors())]


@pytest.mark.parametrize("fmt", sorted(GENERATORS))
def test_bytes_past_max_bytes_count_alike_on_every_path(fmt: str) -> None:
    # A call full to `max_bytes` gets a fragment more, which it does not keep: `feed` (and so
    # `feed_chunk`) counted it toward `max_stream_bytes` anyway, and refused a response that
    # `feed_sse` kept within the limit.
    calls = [Call("f", '{"a": "0123"' + "k", "c1"), Call("g", "{}", "c2")]
    events = GENERATORS[fmt](calls, size=12)
    limit = next(n for n in range(1, 1000) if not _refused(events, fmt, "feed_sse", n)[1])
    for n in (limit - 1, limit):
        assert _refused(events, fmt, "feed_chunk", n) == _refused(events, fmt, "feed_sse", n)
    kept, refused = _refused(events, fmt, "feed_chunk", limit)
    assert not refused
    assert kept == [('{"a": "0123"', "too_large"), ("{}", None)]


@pytest.mark.parametrize("limit", [2, 4, 5, 8])
def test_text_cut_by_the_limit_inside_a_surrogate_pair_is_kept_alike(limit: int) -> None:
    # A JS producer split an emoji between two text deltas and the limit falls there: the raw
    # path counts a held half only once paired, and keeps nothing of a pair the limit cut.
    # `feed_chunk` counted the half as three bytes (refusing `ab` under a limit it fits) and
    # wrote U+FFFD for the half whose other one the limit refused.
    def delta(text: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        }

    events = anthropic_stream([], text="x", stop_reason="end_turn")
    start = next(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
    events[start : start + 1] = [delta("ab\ud83d"), delta("\ude00cd" + "x" * 50)]
    chunks = Assembler(max_stream_bytes=limit)
    said = "".join(chunks.feed_chunk(event).text for event in events) + chunks.text_tail()
    raw = Assembler(max_stream_bytes=limit)
    raw.feed_sse(sse_body(events, "anthropic"))
    assert said == raw.text == "ab"
