"""Format adapters on SDK objects received over real HTTP, checked against a recording sink.

These tests need no compiled core: they pin down exactly which `feed` / `end` / `set_metadata` /
`stop` calls each envelope turns into, and that SDK pydantic objects and plain dicts of the same
shape give identical calls (provider extras included).
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from toolwire import Assembler, MisuseError
from toolwire.formats import ChunkInfo, detect_format, make_adapter

from .clients import sdk_chunks, sdk_chunks_async
from .conftest import SSEServer
from .streamkit import (
    Call,
    RecordingSink,
    anthropic_stream,
    chat_chunk,
    chat_stream,
    fixture_names,
    load_events,
    responses_stream,
    sse_body,
    tc,
    tool_delta,
)

FIXTURES = fixture_names()


def run(fmt: str, chunks: list[Any]) -> tuple[RecordingSink, list[ChunkInfo]]:
    adapter = make_adapter(detect_format(chunks[0]) or fmt)  # type: ignore[arg-type]
    assert adapter.format == fmt
    sink = RecordingSink()
    return sink, [adapter.handle(chunk, sink) for chunk in chunks]


def summary(infos: list[ChunkInfo]) -> tuple[str, list[str], list[Any]]:
    text = "".join(i.text for i in infos)
    reasons = [i.finish_reason for i in infos if i.finish_reason is not None]
    usages = [i.usage for i in infos if i.usage is not None]
    return text, reasons, usages


@pytest.mark.parametrize("name", FIXTURES)
def test_sdk_objects_and_dicts_feed_identically(
    sse_server: SSEServer, split: str, name: str
) -> None:
    fmt, events = load_events(name)
    route = sse_server.register_events(events, fmt, split=split)
    objects = sdk_chunks(route, fmt)
    assert len(objects) == len(events) - (
        1 if fmt == "anthropic" and any(e["type"] == "ping" for e in events) else 0
    )
    sink_sdk, infos_sdk = run(fmt, objects)
    sink_dict, infos_dict = run(fmt, [e for e in events if e.get("type") != "ping"])
    assert sink_sdk.calls == sink_dict.calls
    assert summary(infos_sdk) == summary(infos_dict)
    assert sink_sdk.calls, "every fixture has tool calls"


@pytest.mark.anyio
@pytest.mark.parametrize("name", FIXTURES)
async def test_async_sdk_objects_feed_like_sync(sse_server: SSEServer, name: str) -> None:
    fmt, events = load_events(name)
    route = sse_server.register_events(events, fmt, split="random-2")
    objects = await sdk_chunks_async(route, fmt)
    sink_async, infos_async = run(fmt, objects)
    sink_dict, infos_dict = run(fmt, [e for e in events if e.get("type") != "ping"])
    assert sink_async.calls == sink_dict.calls
    assert summary(infos_async) == summary(infos_dict)


def test_gemini_extra_content_survives_the_sdk(sse_server: SSEServer) -> None:
    fmt, events = load_events("openai_chat_gemini_compat")
    objects = sdk_chunks(sse_server.register_events(events, fmt), fmt)
    sink, infos = run(fmt, objects)
    assert (
        "set_metadata",
        None,
        "extra_content",
        {"google": {"thought_signature": "CiQBVKhc7Lr0a9Yh"}},
    ) in sink.calls
    feeds = [c for c in sink.calls if c[0] == "feed"]
    assert [f[1] for f in feeds] == [None, None], "missing index stays missing, never 0"
    assert summary(infos)[1] == ["stop"]


# --- Chat Completions -------------------------------------------------------------------------


def test_chat_metadata_only_delta_never_feeds() -> None:
    sig = {"google": {"thought_signature": "abc"}}
    sink, _ = run(
        "openai-chat",
        [
            chat_chunk(tool_delta(tc(0, id="c1", name="f", arguments="{}"))),
            chat_chunk(tool_delta({"index": 0, "extra_content": sig})),
        ],
    )
    assert sink.calls == [
        ("feed", 0, "c1", "f", "{}", None),
        ("set_metadata", 0, "extra_content", sig),
    ]


def test_chat_only_first_choice_is_assembled() -> None:
    sink, infos = run(
        "openai-chat",
        [
            chat_chunk(
                choices=[
                    {"index": 1, "delta": {"content": "B", "tool_calls": [tc(0, name="g")]}},
                    {"index": 0, "delta": {"content": "A", "tool_calls": [tc(0, name="f")]}},
                ]
            )
        ],
    )
    assert sink.calls == [("feed", 0, None, "f", None, None)]
    assert summary(infos)[0] == "A"


def test_chat_a_single_choice_numbered_other_than_zero_is_assembled() -> None:
    # A translator numbered the only choice 1: its calls were dropped without a word.
    sink, infos = run(
        "openai-chat",
        [
            chat_chunk(
                choices=[{"index": 1, "delta": {"content": "A", "tool_calls": [tc(0, name="f")]}}]
            ),
            chat_chunk(
                choices=[{"index": 0, "delta": {"content": "B", "tool_calls": [tc(0, name="g")]}}]
            ),
        ],
    )
    assert sink.calls == [("feed", 0, None, "f", None, None)]
    assert summary(infos)[0] == "A"


def test_chat_several_entries_in_one_chunk_are_fed_in_order() -> None:
    sink, _ = run(
        "openai-chat",
        [
            chat_chunk(
                tool_delta(
                    tc(0, arguments='{"a"'),
                    tc(0, arguments=":1}"),
                    tc(1, name="g"),
                )
            )
        ],
    )
    assert [c[1:5] for c in sink.calls] == [
        (0, None, None, '{"a"'),
        (0, None, None, ":1}"),
        (1, None, "g", None),
    ]


def test_chat_content_filter_stops_and_other_reasons_do_not() -> None:
    sink, infos = run(
        "openai-chat",
        [
            chat_chunk(tool_delta(tc(0, name="f", arguments='{"a":'))),
            chat_chunk({}, finish_reason="content_filter"),
        ],
    )
    assert sink.calls[-1] == ("stop", "content_filter")
    assert summary(infos)[1] == ["content_filter"]
    for reason in ("stop", "length", "tool_calls"):
        sink, _ = run("openai-chat", [chat_chunk({}, finish_reason=reason)])
        # The output limit stops no call; it marks where the last call was cut.
        assert sink.calls == ([("limit_reached",)] if reason == "length" else [])


def test_chat_arguments_object_passes_as_value() -> None:
    sink, _ = run("openai-chat", [chat_chunk(tool_delta(tc(0, name="f", arguments={"x": [1]})))])
    assert sink.calls == [("feed", 0, None, "f", {"x": [1]}, None)]


def test_chat_legacy_function_call_delta() -> None:
    sink, _ = run(
        "openai-chat",
        [
            chat_chunk({"function_call": {"name": "f", "arguments": ""}}),
            chat_chunk({"function_call": {"arguments": "{}"}}),
        ],
    )
    assert sink.calls == [
        ("feed", None, None, "f", "", None),
        ("feed", None, None, None, "{}", None),
    ]


def test_chat_annotation_and_usage_chunks_feed_nothing() -> None:
    _, events = load_events("openai_chat_azure_filters")
    sink, infos = run("openai-chat", [events[0], events[-2]])
    assert sink.calls == []
    assert summary(infos) == ("", [], [])
    sink, infos = run("openai-chat", [chat_chunk(choices=[], usage={"total_tokens": 3})])
    assert sink.calls == [] and infos[0].usage == {"total_tokens": 3}


# --- Responses --------------------------------------------------------------------------------


def test_responses_summaries_are_not_fed_after_deltas() -> None:
    events = responses_stream([Call("f", '{"a":1}')], size=3)
    sink, infos = run("openai-responses", events)
    assert sink.calls == [
        ("feed", 0, "call_0", "f", None, None),
        ("set_metadata", 0, "item_id", "fc_0"),
        ("feed", 0, None, None, '{"a', None),
        ("feed", 0, None, None, '":1', None),
        ("feed", 0, None, None, "}", None),
        ("end", 0),
    ]
    _text, reasons, usages = summary(infos)
    assert reasons == ["completed"] and usages[0]["total_tokens"] == 33


def test_responses_done_summary_is_used_when_no_delta_came() -> None:
    events = [
        e
        for e in responses_stream([Call("f", '{"a":1}')])
        if e["type"] != "response.function_call_arguments.delta"
    ]
    sink, _ = run("openai-responses", events)
    assert sink.arguments(0) == '{"a":1}'
    only_done = [
        e for e in events if e["type"] in ("response.created", "response.output_item.done")
    ]
    sink, _ = run("openai-responses", only_done)
    assert sink.calls == [
        ("feed", 0, "call_0", "f", None, None),
        ("set_metadata", 0, "item_id", "fc_0"),
        ("feed", 0, None, None, '{"a":1}', None),
        ("end", 0),
    ]


def test_responses_delta_routed_by_item_id_and_empty_delta_ignored() -> None:
    events = responses_stream([Call("f", "{}")], size=2)
    for e in events:
        if e["type"] == "response.function_call_arguments.delta":
            del e["output_index"]
    events.insert(
        3,
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_0",
            "output_index": 0,
            "delta": "",
            "sequence_number": 99,
        },
    )
    sink, _ = run("openai-responses", events)
    assert sink.arguments(0) == "{}"
    assert ("feed", 0, None, None, "", None) not in sink.calls


@pytest.mark.parametrize(
    ("status", "reason", "stopped"),
    [
        ("incomplete", "content_filter", "content_filter"),
        ("incomplete", "max_output_tokens", None),
        ("failed", None, "failed"),
    ],
)
def test_responses_endings(status: str, reason: str | None, stopped: str | None) -> None:
    events = responses_stream([Call("f", '{"a":1}')], status=status, incomplete_reason=reason)
    sink, infos = run("openai-responses", events)
    stops = [c for c in sink.calls if c[0] == "stop"]
    assert stops == ([("stop", stopped)] if stopped else [])
    assert summary(infos)[1] == [reason or status]


# --- Anthropic --------------------------------------------------------------------------------


def test_anthropic_placeholder_input_is_not_arguments_when_deltas_follow() -> None:
    sink, infos = run(
        "anthropic", anthropic_stream([Call("f", '{"a":1}')], thinking=True, text="hi", size=4)
    )
    assert sink.calls == [
        # The thinking block, kept for the next request.
        ("reasoning", "Let me think.", "c2ln"),
        # The text block's start, whose place the next turn keeps.
        ("text_block",),
        ("feed", 2, "toolu_0", "f", None, None),
        # The call knows its place after it, for the next request.
        ("set_metadata", 2, "reasoning_before", 1),
        ("feed", 2, None, None, '{"a"', None),
        ("feed", 2, None, None, ":1}", None),
        ("end", 2),
    ]
    text, reasons, usages = summary(infos)
    assert text == "hi" and reasons == ["tool_use"]
    assert usages[-1] == {"input_tokens": 17, "output_tokens": 42}


def test_anthropic_start_input_is_the_value_when_no_delta_follows() -> None:
    events = anthropic_stream([Call("f", "{}")], empty_first_delta=True)
    events = [e for e in events if not (e["type"] == "content_block_delta")]
    events[1]["content_block"]["input"] = {"city": "Paris"}
    sink, _ = run("anthropic", events)
    assert sink.calls == [
        ("feed", 0, "toolu_0", "f", None, None),
        ("feed", 0, None, None, {"city": "Paris"}, None),
        ("end", 0),
    ]


def test_anthropic_refusal_stops() -> None:
    sink, _ = run("anthropic", anthropic_stream([Call("f", '{"a":1}')], stop_reason="refusal"))
    assert sink.calls[-1] == ("stop", "refusal")


def test_anthropic_server_tool_use_is_not_a_client_call() -> None:
    events = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"query":"x"}'},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    sink, _ = run("anthropic", events)
    # Nothing fed, nothing ended: the block is only kept, whole, for the next turn.
    kept = '{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}'
    assert sink.calls == [("reasoning_item", kept)]


# --- Detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chunk", "fmt"),
    [
        ({"choices": []}, "openai-chat"),
        ({"object": "chat.completion.chunk"}, "openai-chat"),
        ({"type": "response.created"}, "openai-responses"),
        ({"type": "message_start"}, "anthropic"),
        ({"type": "ping"}, "anthropic"),
        ({"type": "error", "error": {}}, None),
        ({}, None),
        ("data: x", None),
    ],
)
def test_detect_format(chunk: object, fmt: str | None) -> None:
    assert detect_format(chunk) == fmt


def test_make_adapter_rejects_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown wire format"):
        make_adapter("no-such-format")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fmt", "events"),
    [
        (
            "openai-chat",
            [
                chat_chunk(choices=[], usage={"prompt_tokens": 5, "details": {"cached": 1}}),
                chat_chunk(choices=[], usage={"completion_tokens": 7}),
            ],
        ),
        ("openai-responses", responses_stream([Call("f", "{}")])),
        ("anthropic", anthropic_stream([Call("f", "{}")])),
    ],
    ids=["openai-chat", "openai-responses", "anthropic"],
)
def test_usage_handed_out_is_the_callers_to_change(fmt: str, events: list[Any]) -> None:
    # A caller that edits the usage of one chunk (adds its own cost, pops a member) must not
    # change what the adapter merges into the usage of the chunks after it.
    adapter = make_adapter(fmt)  # type: ignore[arg-type]
    sink = RecordingSink()
    untouched = [adapter.handle(e, sink).usage for e in events]
    adapter = make_adapter(fmt)  # type: ignore[arg-type]
    edited: list[Any] = []
    for e in events:
        usage = adapter.handle(e, sink).usage
        edited.append(copy.deepcopy(usage))
        if isinstance(usage, dict):
            usage.clear()
            usage["cost"] = 1
    assert [u for u in untouched if u] and edited == untouched


@pytest.mark.parametrize(
    "chunk",
    [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"type": "response.output_text.delta", "delta": "hi"},
        {"type": "ping"},
    ],
)
def test_any_chunk_after_finish_is_misuse(chunk: dict[str, Any]) -> None:
    # A chunk that touches no call (text alone, a ping) once slipped through after `finish`,
    # its text handed back as if the stream went on.
    from toolwire import MisuseError
    from toolwire.assembler import Assembler

    asm = Assembler()
    asm.feed_chunk(chunk)
    asm.finish()
    assert asm.finished
    with pytest.raises(MisuseError, match="already finished"):
        asm.feed_chunk(chunk)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
@pytest.mark.parametrize("first", [True, False])
def test_raw_bytes_given_as_a_chunk_are_misuse(kind: type[Any], first: bool) -> None:
    # `feed_chunk(response.read())`, or `assemble(response.iter_bytes())`: the body of an SSE
    # stream, which only `feed_sse` reads. Read as a chunk of no known format it was dropped
    # without a word, and the stream ended with no call at all.
    events = chat_stream([Call("f", '{"a": 1}', "c1")])
    body = sse_body(events, "openai-chat")
    asm = Assembler()
    if not first:
        asm.feed_chunk(events[1])
    with pytest.raises(MisuseError, match="feed_sse"):
        asm.feed_chunk(kind(body))
    # Refused before it was counted or read: the stream goes on with its real chunks.
    for event in events if first else events[2:]:
        asm.feed_chunk(event)
    (call,) = asm.finish()
    assert (call.name, call.value, call.error) == ("f", {"a": 1}, None)
    assert asm.stream_errors() == []


def test_assemble_over_raw_bytes_is_misuse() -> None:
    from toolwire import assemble

    body = sse_body(chat_stream([Call("f", '{"a": 1}', "c1")]), "openai-chat")
    with pytest.raises(MisuseError, match="feed_sse"), assemble(iter([body])) as stream:
        list(stream)


def test_feed_chunk_while_another_thread_is_inside_it_is_a_misuse() -> None:
    # The adapter's state is Python's, out of the core's borrow check: a second thread inside
    # `feed_chunk` at once interleaved two chunks silently instead of raising MisuseError.
    entered, release = threading.Event(), threading.Event()

    class SlowChunk:
        """A chunk whose `candidates` is read while the test holds the first thread inside."""

        @property
        def candidates(self) -> list[dict[str, Any]]:
            entered.set()
            release.wait(5)
            return [{"content": {"parts": [{"functionCall": {"name": "f", "args": {"a": 1}}}]}}]

    asm = Assembler()
    asm.feed_chunk({"candidates": [{"content": {"parts": [{"text": "hi"}]}}]})
    first = threading.Thread(target=asm.feed_chunk, args=(SlowChunk(),))
    first.start()
    assert entered.wait(5)
    try:
        with pytest.raises(MisuseError, match="another thread"):
            asm.feed_chunk({"candidates": [{"content": {"parts": [{"text": "x"}]}}]})
    finally:
        release.set()
        first.join(5)
    # The first call ran to its end, and the assembler serves the stream again.
    asm.feed_chunk({"candidates": [{"content": {"parts": [{"text": "!"}]}}]})
    (call,) = asm.finish()
    assert (call.name, call.value) == ("f", {"a": 1})
