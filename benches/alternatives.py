"""Every way of turning a streamed tool call into its arguments that the suites time.

Each function takes one view of a corpus `Case` (deltas, byte deltas, SDK chunks, SSE pieces,
...) and returns the parsed arguments of every call, in index order, so that the suites can
check each one against `Case.expected` before timing it. The code is what a user of each
library would write, without micro-optimisations that only a benchmark would make (no bound
method hoisting), so that the per-fragment overheads compared are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import jiter
import orjson
import partial_json_parser
from corpus import TOOL_NAME, ByteDelta, Delta, Document

import toolwire
from toolwire.assembler import Assembler as ChunkAssembler

__all__ = [
    "Values",
    "anthropic_accumulate",
    "baseline_join_orjson",
    "baseline_join_orjson_bytes",
    "dict_concat_json",
    "gemini_streamed_feed_chunk",
    "gemini_streamed_feed_sse",
    "jiter_every_fragment",
    "langchain_addition",
    "openai_sdk_stream",
    "openai_stream_state",
    "partial_json_every_fragment",
    "prechecked_values",
    "sse_openai_join_orjson",
    "sse_openai_state",
    "sse_openai_toolwire_chunks",
    "sse_toolwire_feed_sse",
    "toolwire_feed",
    "toolwire_feed_arguments_only",
    "toolwire_feed_bytes",
    "toolwire_feed_chunk",
    "toolwire_feed_prechecked",
    "toolwire_partial_every_fragment",
    "toolwire_progress",
]

Values = list[Any]
"""The parsed arguments of each call, in index order."""


# --- Final values ------------------------------------------------------------------------------


def baseline_join_orjson(deltas: Sequence[Delta]) -> Values:
    """The baseline: fragments in a list per call, `"".join` and `orjson.loads` at the end.

    It keeps each call's name too, as any real accumulator must, and checks nothing.
    """
    bufs: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    for index, _id, name, frag in deltas:
        if name is not None:
            names[index] = name
        if index in bufs:
            bufs[index].append(frag)
        else:
            bufs[index] = [frag]
    return [orjson.loads("".join(parts)) for parts in bufs.values()]


def baseline_join_orjson_bytes(deltas: Sequence[ByteDelta]) -> Values:
    """The baseline over byte fragments cut anywhere: `b"".join` then `orjson.loads`."""
    bufs: dict[int, list[bytes]] = {}
    names: dict[int, str] = {}
    for index, _id, name, frag in deltas:
        if name is not None:
            names[index] = name
        if index in bufs:
            bufs[index].append(frag)
        else:
            bufs[index] = [frag]
    return [orjson.loads(b"".join(parts)) for parts in bufs.values()]


def dict_concat_json(deltas: Sequence[Delta]) -> Values:
    """The most common hand-written accumulator: `args[index] += fragment`, `json.loads` at end."""
    args: dict[int, str] = {}
    names: dict[int, str] = {}
    for index, _id, name, frag in deltas:
        if name is not None:
            names[index] = name
        args[index] = args.get(index, "") + frag
    return [json.loads(text) for text in args.values()]


def toolwire_feed(deltas: Sequence[Delta]) -> Values:
    """toolwire: `Assembler.feed` per delta, `finish()`, `.value` of each call."""
    asm = toolwire.Assembler()
    for index, id_, name, frag in deltas:
        asm.feed(index, id=id_, name=name, arguments=frag)
    return [call.value for call in asm.finish()]


_TOOLSETS: list[toolwire.Toolset] = []


def corpus_toolset() -> toolwire.Toolset:
    """The corpus' one tool as a Toolset: compiled once, shared by every stream."""
    if not _TOOLSETS:
        _TOOLSETS.append(toolwire.Toolset([Document], names={Document: TOOL_NAME}))
    return _TOOLSETS[0]


def toolwire_feed_prechecked(deltas: Sequence[Delta]) -> tuple[list[Any], Values]:
    """`toolwire_feed` with the tool's schema checked while the arguments stream.

    Returns the finished calls with their values, so that `prechecked_values` can confirm
    outside the timed run that the pre-check passed every call: the timed work is then the
    same as `toolwire_feed`'s plus the checking itself.
    """
    asm = toolwire.Assembler(tools=corpus_toolset())
    for index, id_, name, frag in deltas:
        asm.feed(index, id=id_, name=name, arguments=frag)
    calls = asm.finish()
    return calls, [call.value for call in calls]


def prechecked_values(result: tuple[list[Any], Values]) -> Values:
    """The values of `toolwire_feed_prechecked`, once its calls are known to carry no error."""
    calls, values = result
    assert all(call.error is None for call in calls), "the corpus satisfies its schema"
    return values


def toolwire_feed_arguments_only(deltas: Sequence[Delta]) -> Values:
    """toolwire, passing `id`/`name` only when present: isolates keyword-argument overhead."""
    asm = toolwire.Assembler()
    for index, id_, name, frag in deltas:
        if id_ is None:
            asm.feed(index, arguments=frag)
        else:
            asm.feed(index, id=id_, name=name, arguments=frag)
    return [call.value for call in asm.finish()]


def toolwire_feed_bytes(deltas: Sequence[ByteDelta]) -> Values:
    """toolwire over byte fragments cut anywhere, inside UTF-8 characters too."""
    asm = toolwire.Assembler()
    for index, id_, name, frag in deltas:
        asm.feed(index, id=id_, name=name, arguments=frag)
    return [call.value for call in asm.finish()]


def toolwire_feed_chunk(chunks: Iterable[Any]) -> Values:
    """toolwire's `feed_chunk` over real `ChatCompletionChunk` objects (the SDK-object path)."""
    asm = ChunkAssembler()
    for chunk in chunks:
        asm.feed_chunk(chunk)
    return [call.value for call in asm.finish()]


_OPENAI_TOOLS: list[Any] = []


def _openai_tools() -> list[Any]:
    """`[pydantic_function_tool(Document)]`: a strict tool, built once."""
    if not _OPENAI_TOOLS:
        import openai

        _OPENAI_TOOLS.append(openai.pydantic_function_tool(Document, name=TOOL_NAME))
    return _OPENAI_TOOLS


def openai_stream_state(chunks: Iterable[Any]) -> Values:
    """The `openai` SDK's own accumulator with a strict tool, as `client.chat.completions.stream`
    uses it: it re-parses the whole arguments buffer with jiter on every chunk.
    """
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState(input_tools=_openai_tools())
    for chunk in chunks:
        state.handle_chunk(chunk)
    message = state.get_final_completion().choices[0].message
    return [call.function.parsed_arguments.model_dump() for call in message.tool_calls]


def anthropic_accumulate(events: Iterable[Any]) -> Values:
    """The `anthropic` SDK's event accumulation (`MessageStream` calls this per event): it
    re-parses the growing input JSON with jiter on every `input_json_delta`.
    """
    from anthropic.lib.streaming._messages import accumulate_event

    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    return [block.input for block in snapshot.content]


def langchain_addition(chunks: Sequence[Any]) -> Values:
    """LangChain: `AIMessageChunk` addition; each sum re-parses the merged `tool_call_chunks`."""
    acc = chunks[0]
    for chunk in chunks[1:]:
        acc = acc + chunk
    return [call["args"] for call in acc.tool_calls]


# --- Progressive (a value or a preview after every fragment) ------------------------------------


def jiter_every_fragment(deltas: Sequence[Delta]) -> Values:
    """`jiter.from_json(buffer, partial_mode="trailing-strings")` after every fragment: what the
    OpenAI and Anthropic SDKs do, without their per-chunk model rebuilding.
    """
    bufs: dict[int, str] = {}
    latest: dict[int, Any] = {}
    for index, _id, _name, frag in deltas:
        buf = bufs.get(index, "") + frag
        bufs[index] = buf
        latest[index] = jiter.from_json(buf.encode(), partial_mode="trailing-strings")
    return list(latest.values())


def partial_json_every_fragment(deltas: Sequence[Delta]) -> Values:
    """`partial_json_parser.loads(buffer)` after every fragment (pure Python)."""
    bufs: dict[int, str] = {}
    latest: dict[int, Any] = {}
    for index, _id, _name, frag in deltas:
        buf = bufs.get(index, "") + frag
        bufs[index] = buf
        latest[index] = partial_json_parser.loads(buf)
    return list(latest.values())


def toolwire_progress(deltas: Sequence[Delta]) -> tuple[list[Any], list[Any]]:
    """toolwire with `track_progress=True`: `drain_progress()` after every fragment.

    Returns the progress items and the finished calls; values are not built (a progressive UI
    shows the items, and a caller who wants the value reads `.value`, timed elsewhere).
    """
    asm = toolwire.Assembler(track_progress=True)
    items: list[Any] = []
    for index, id_, name, frag in deltas:
        asm.feed(index, id=id_, name=name, arguments=frag)
        items.extend(asm.drain_progress())
    return items, asm.finish()


def toolwire_progress_into(deltas: Sequence[Delta]) -> tuple[list[Any], list[Any]]:
    """toolwire with `progress_into`: each `feed` appends its progress items to the caller's
    list, so after every fragment the list already holds what changed (no call to drain it).
    """
    items: list[Any] = []
    asm = toolwire.Assembler(progress_into=items)
    for index, id_, name, frag in deltas:
        asm.feed(index, id=id_, name=name, arguments=frag)
    return items, asm.finish()


def toolwire_partial_every_fragment(deltas: Sequence[Delta]) -> Values:
    """toolwire's `partial(ordinal)` after every fragment: a whole partial value each time, as
    jiter gives, built from already-validated bytes (O(size) per call, by design).
    """
    asm = toolwire.Assembler()
    latest: dict[int, Any] = {}
    for index, id_, name, frag in deltas:
        ordinal = asm.feed(index, id=id_, name=name, arguments=frag)
        latest[ordinal] = asm.partial(ordinal)
    asm.finish()
    return list(latest.values())


def gemini_streamed_feed_chunk(chunks: Iterable[dict[str, Any]]) -> Values:
    """toolwire's `feed_chunk` over Vertex AI streamed-argument chunks (`partialArgs`)."""
    asm = ChunkAssembler()
    for chunk in chunks:
        asm.feed_chunk(chunk)
    return [call.value for call in asm.finish()]


def gemini_streamed_feed_sse(body: bytes) -> Values:
    """toolwire's `feed_sse` over the same chunks as an SSE body, in one piece."""
    asm = toolwire.Assembler()
    asm.feed_sse(body)
    return [call.value for call in asm.finish()]


# --- Raw SSE bytes ------------------------------------------------------------------------------


def _http_module() -> Any:
    """The HTTP library the installed `openai` builds responses with (httpx, or httpx2 in
    releases that moved to it): the benchmark must hand `openai.Stream` its own type.
    """
    import openai._streaming as streaming

    module = getattr(streaming, "httpx2", None) or getattr(streaming, "httpx", None)
    if module is None:
        raise RuntimeError("cannot tell which HTTP library openai uses")
    return module


_CLIENT: list[Any] = []


def openai_sdk_stream(pieces: Sequence[bytes]) -> Iterable[Any]:
    """An `openai.Stream[ChatCompletionChunk]` decoding `pieces` as a response body.

    The response is built in memory, so nothing is sent anywhere; the client is only there
    because `Stream` asks it for its SSE decoder and chunk constructor.
    """
    import openai
    from openai.types.chat import ChatCompletionChunk

    http = _http_module()
    if not _CLIENT:
        _CLIENT.append(openai.OpenAI(api_key="bench", base_url="http://127.0.0.1:9/v1"))
    request = http.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    response = http.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=iter(pieces),
        request=request,
    )
    return openai.Stream(cast_to=ChatCompletionChunk, response=response, client=_CLIENT[0])


def _deltas_of(chunks: Iterable[Any]) -> Iterable[Delta]:
    for chunk in chunks:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                fn = call.function
                yield (call.index, call.id, fn.name if fn else None, fn.arguments if fn else "")


def sse_openai_join_orjson(pieces: Sequence[bytes]) -> Values:
    """The SDK decodes the SSE bytes into chunks; the baseline accumulator joins and parses."""
    return baseline_join_orjson(list(_deltas_of(openai_sdk_stream(pieces))))


def sse_openai_state(pieces: Sequence[bytes]) -> Values:
    """The SDK's `Stream` plus its stream helper (`ChatCompletionStreamState`, strict tool)."""
    return openai_stream_state(openai_sdk_stream(pieces))


def sse_openai_toolwire_chunks(pieces: Sequence[bytes]) -> Values:
    """The SDK's `Stream` plus toolwire's `feed_chunk` (toolwire's path until `feed_sse`)."""
    return toolwire_feed_chunk(openai_sdk_stream(pieces))


def sse_toolwire_feed_sse(pieces: Sequence[bytes]) -> Values:
    """toolwire's raw path: `Assembler.feed_sse(bytes)` per network read, then `finish()`."""
    asm: Any = toolwire.Assembler()
    for piece in pieces:
        asm.feed_sse(piece)
    return [call.value for call in asm.finish()]
