"""Provider quirks of the argument payload, finish and encoding families on the Anthropic and
Responses wire formats, through both ways in on the very same bytes.

`test_quirks.py` covers each quirk on Chat Completions. The ones below can occur on every format
(a translator or a local server behind an Anthropic- or Responses-compatible endpoint sends the
same defects), so each is served to the real SDK client over HTTP and read with `assemble`, and
`assemble_both` then feeds the identical body to `feed_sse`, cut every way a gateway may see it
(the server's writes, byte by byte, inside `\\uXXXX` escapes and `data:`, CRLF line ends split):
both must give the same calls, and every call ends with exactly one result.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler

from .clients import assemble_both, assemble_sync
from .conftest import SSEServer
from .streamkit import Call, anthropic_stream, chat_chunk, sse_body, tc, tool_delta

FORMATS = ("anthropic", "openai-responses")

Spec = tuple[str, list[str]]  # a tool name and the argument fragments as the provider sends them


def events_for(
    fmt: str, calls: list[Spec], *, end: str = "ok", summary: str | None = None
) -> list[Any]:
    """A stream of `calls`, each sent as the given fragments; `end` is "ok", "stop" (a natural
    end although tools were called, quirk 34) or "length".

    Responses' `function_call_arguments.done` carries `summary` if given, else the fragments
    joined (what the server believes it sent)."""
    if fmt == "anthropic":
        head, *_ = anthropic_stream([])
        events: list[Any] = [head]
        for k, (name, frags) in enumerate(calls):
            block = {"type": "tool_use", "id": f"toolu_{k}", "name": name, "input": {}}
            events.append({"type": "content_block_start", "index": k, "content_block": block})
            events += [
                {
                    "type": "content_block_delta",
                    "index": k,
                    "delta": {"type": "input_json_delta", "partial_json": f},
                }
                for f in frags
            ]
            events.append({"type": "content_block_stop", "index": k})
        reason = {"ok": "tool_use", "stop": "end_turn", "length": "max_tokens"}[end]
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": 9},
            }
        )
        events.append({"type": "message_stop"})
        return events
    resp = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m"}
    events = [{"type": "response.created", "response": {**resp, "status": "in_progress"}}]
    output = []
    for k, (name, frags) in enumerate(calls):
        item = {"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}", "name": name}
        args = "".join(frags) if summary is None else summary
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": k,
                "item": {**item, "arguments": "", "status": "in_progress"},
            }
        )
        events += [
            {
                "type": "response.function_call_arguments.delta",
                "item_id": f"fc_{k}",
                "output_index": k,
                "delta": f,
            }
            for f in frags
        ]
        done = {**item, "arguments": args, "status": "completed"}
        events.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": f"fc_{k}",
                "output_index": k,
                "arguments": args,
            }
        )
        events.append({"type": "response.output_item.done", "output_index": k, "item": done})
        output.append(done)
    final: dict[str, Any] = {**resp, "status": "completed", "output": output}
    kind = "response.completed"
    if end == "length":
        final = {
            **final,
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        }
        kind = "response.incomplete"
    events.append({"type": kind, "response": final})
    for n, e in enumerate(events):
        e["sequence_number"] = n
    return events


def run(server: SSEServer, split: str, fmt: str, events: list[Any], **options: Any) -> Any:
    _, stream = assemble_both(server.register_events(events, fmt, split=split), fmt, **options)
    return stream


def kinds(calls: list[Any]) -> list[str | None]:
    return [c.error.kind if c.error else None for c in calls]


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_19_cumulative_arguments(sse_server: SSEServer, split: str, fmt: str) -> None:
    full = '{"city":"東京","days":3}'
    frags = [full[:6], full[:12], full]
    events = events_for(fmt, [("f", frags)], summary=full)
    s = run(sse_server, split, fmt, events)
    assert [c.value for c in s.calls] == [json.loads(full)]
    # Responses' summary equals the whole text the call holds: nothing was lost, so no repeat
    # is dropped and no mismatch reported (the raw path compared it with the deltas joined).
    assert s.calls[0].warnings == ["cumulative_arguments"]
    raw = Assembler()
    raw.feed_sse(sse_body(events, fmt))
    assert raw.finish()[0].warnings == ["cumulative_arguments"] and raw.stream_errors() == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_20_consolidated_repeat(sse_server: SSEServer, split: str, fmt: str) -> None:
    frags = ['{"a":', "1}", '{"a":1}']
    s = run(sse_server, split, fmt, events_for(fmt, [("f", frags)], summary='{"a":1}'))
    assert [c.value for c in s.calls] == [{"a": 1}]
    assert "repeat_dropped" in s.calls[0].warnings


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_21_concatenated_objects(sse_server: SSEServer, split: str, fmt: str) -> None:
    s = run(sse_server, split, fmt, events_for(fmt, [("f", ['{"q":"a"}', '{"q":"b"}'])]))
    assert kinds(s.calls) == ["concatenated_values"] and s.calls[0].value is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_25_26_empty_and_no_arguments(sse_server: SSEServer, split: str, fmt: str) -> None:
    s = run(sse_server, split, fmt, events_for(fmt, [("a", []), ("b", ["", "", ""])]))
    assert [(c.name, c.value, c.ok) for c in s.calls] == [("a", {}, True), ("b", {}, True)]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("end", ["ok", "stop", "length"])
@pytest.mark.parametrize("cut", ['{"s": "ab', '{"s": "\\u00', '{"n": 12.', '{"a":', '{"a": [1, 2'])
def test_quirk_34_to_37_truncated_arguments(
    sse_server: SSEServer, split: str, fmt: str, end: str, cut: str
) -> None:
    s = run(
        sse_server, split, fmt, events_for(fmt, [("f", [cut]), ("g", ['{"ok": true}'])], end=end)
    )
    first, second = s.calls
    assert first.error.kind == "truncated" and first.arguments == cut and first.value is None
    assert second.ok or end == "length"


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_19_a_look_alike_resend_cut_by_the_limit_is_not_run(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # Appended, the text is cut off; resent, it is a whole value. Anthropic ends the block and
    # then says `max_tokens`; Responses' summary repeats the appended text. Either way the call
    # was cut and must not run as the resend.
    pieces = ['{"children": [', '{"children": [], "name": "leaf"}']
    s = run(sse_server, split, fmt, events_for(fmt, [("f", pieces)], end="length"))
    (call,) = s.calls
    assert not call.ok and call.arguments == "".join(pieces)
    assert call.error.kind == "truncated"


def test_an_anthropic_block_start_without_its_index_keeps_its_deltas(
    sse_server: SSEServer, split: str
) -> None:
    # The second block's start lost its index; its deltas and stop keep theirs. Read as the
    # number of blocks open (0), the start made `g` a call with no input, run as `{}`, and its
    # input a nameless call of its own.
    events = events_for("anthropic", [("f", ['{"q":', '"ab"}']), ("g", ['{"k":', '"v"}'])])
    for event in events:
        if event["type"] == "content_block_start" and event["index"] == 1:
            event["index"] = None
    s = run(sse_server, split, "anthropic", events)
    assert [(c.name, c.value, c.ok) for c in s.calls] == [
        ("f", {"q": "ab"}, True),
        ("g", {"k": "v"}, True),
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_02_25_calls_without_input_under_one_key(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # A translator puts every call under one key (block index 0, output_index 0), each
    # announced before any input; the second has no item id on Responses. They once became
    # one call with the names run together, and the others got no result.
    events = events_for(fmt, [("g", []), ("h", []), ("f", ['{"a":1}'])])
    for event in events:
        if event["type"] in ("content_block_start", "content_block_delta", "content_block_stop"):
            event["index"] = 0
        if "output_index" in event:
            event["output_index"] = 0
        if event["type"] == "content_block_stop" and event is not events[-3]:
            event["type"] = "ping"
        item = event.get("item")
        if item is not None and item["call_id"] == "call_1":
            item["id"] = ""
    s = run(sse_server, split, fmt, events)
    assert [(c.name, c.value, c.ok) for c in s.calls] == [
        ("g", {}, True),
        ("h", {}, True),
        ("f", {"a": 1}, True),
    ]


_MALFORMED = {
    "anthropic": [
        {"type": "content_block_delta", "index": 0, "delta": "zz"},
        {"type": "content_block_delta", "index": "zero", "delta": {"type": "input_json_delta"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": 5}},
    ],
    "openai-responses": [
        {"type": "response.output_item.added", "output_index": 1, "item": "zz"},
        {"type": "response.output_item.added", "output_index": 1, "item": {"name": 5}},
        {"type": "response.function_call_arguments.delta", "output_index": "zero", "delta": ""},
    ],
}


@pytest.mark.parametrize(("fmt", "case"), [(f, c) for f in FORMATS for c in range(3)])
def test_an_event_of_a_shape_no_stream_sends_loses_the_open_call(
    sse_server: SSEServer, split: str, fmt: str, case: int
) -> None:
    # The raw path cannot read such an event, which may have carried part of the call: the
    # call must not run. `feed_chunk` (and the SDK path, whose events are not validated)
    # skipped it and ran the call with what it had.
    events = events_for(fmt, [("f", ['{"x": ', "1}"])])
    first_delta = next(
        i for i, e in enumerate(events) if e["type"].endswith(("_delta", "arguments.delta"))
    )
    events.insert(first_delta + 1, {**_MALFORMED[fmt][case], "sequence_number": 999})
    s = run(sse_server, split, fmt, events)
    assert kinds(s.calls) == ["lost_event"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_38_connection_drop(sse_server: SSEServer, fmt: str) -> None:
    events = events_for(fmt, [("f", ['{"a":1}']), ("g", ['{"b":"lo', 'ng"}'])])
    body = sse_body(events, fmt)
    route = sse_server.register(body, drop_after=body.index(b'ng\\"}'))
    _, s = assemble_both(route, fmt)
    assert kinds(s.calls) == [None, "truncated"] and s.transport_error is not None


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_39_40_utf8_and_replacement_character(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    text = json.dumps({"t": "東京 🌸 ñ", "r": "ab\ufffdc"}, ensure_ascii=False)
    frags = [text[i : i + 3] for i in range(0, len(text), 3)]
    s = run(sse_server, split, fmt, events_for(fmt, [("f", frags)]))
    (call,) = s.calls
    assert call.value == json.loads(text) and call.arguments == text
    assert "replacement_character" in call.warnings


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_41_42_escapes_split_between_deltas(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    frags = ['{"e":"\\ud83d', '\\ude00","p":"C:\\', '\\dir","u":"\\u00', 'e9"}']
    s = run(sse_server, split, fmt, events_for(fmt, [("f", frags)]))
    assert [c.value for c in s.calls] == [{"e": "😀", "p": "C:\\dir", "u": "é"}]


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_43_44_bad_escapes_end_their_call_only(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    calls = [("f", ['{"ns":"App\\', 'Http"}']), ("g", ['{"s":"\\ud800"}']), ("h", ["{}"])]
    s = run(sse_server, split, fmt, events_for(fmt, calls))
    assert kinds(s.calls) == ["invalid_escape", "lone_surrogate", None]
    assert s.calls[0].error.offset == len('{"ns":"App\\')


@pytest.mark.parametrize("fmt", FORMATS)
def test_quirk_45_46_47_garbled_server_deltas(sse_server: SSEServer, split: str, fmt: str) -> None:
    calls = [("f", ['{"a": 1}', '"}']), ("g", ['{"a": {"b": 1', "}"]), ("h", ['city": "Paris"}'])]
    s = run(sse_server, split, fmt, events_for(fmt, calls))
    assert [c.value for c in s.calls] == [None, None, None]
    assert kinds(s.calls)[1:] == ["truncated", "unexpected_byte"]


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_quirk_23_whole_object_arguments_read_the_same_on_both_paths(
    sse_server: SSEServer, split: str, fmt: str
) -> None:
    # A Python server's default `json.dumps` (", " and ": " separators, `\uXXXX` for non-ASCII)
    # and a Go server's (`\u003c` for `<`) put the arguments object on the wire with spaces and
    # escapes. The SDK decodes the event and toolwire serializes the dict compactly; the raw path
    # used to keep the object's wire text, so `arguments` differed between the two ways in.
    value = {"city": "Zürich <b>", "n": [1, {"x": None}], "s": 'a"b\\c\n\u001f/😀'}
    if fmt == "openai-chat":
        entry = {"index": 0, "id": "a", "type": "function"}
        entry["function"] = {"name": "f", "arguments": value}
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [entry]}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    else:
        events = anthropic_stream([Call("f", "{}")])
        start = next(e for e in events if e["type"] == "content_block_start")
        start["content_block"]["input"] = value
        events = [e for e in events if e["type"] != "content_block_delta"]
    go_escape = "\\u003c"
    body = "".join(
        (f"event: {e['type']}\n" if fmt == "anthropic" else "")
        + "data: "
        + json.dumps(e).replace("<", go_escape)
        + "\n\n"
        for e in events
    )
    body += "data: [DONE]\n\n" if fmt == "openai-chat" else ""
    assert "\\u00fc" in body and "\\u003c" in body and '"city": ' in body
    _, s = assemble_both(sse_server.register(body.encode(), split=split), fmt)
    (call,) = s.calls
    assert call.ok and call.value == value
    assert call.arguments == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _two_calls_with(fmt: str, inserted: bytes) -> bytes:
    """The body of two calls, `f` whole and `g` open, with `inserted` before `g`'s end."""
    if fmt == "openai-chat":
        events = [chat_chunk(tool_delta(tc(0, id="a", name="f", arguments='{"a":1}')))]
        events += [chat_chunk(tool_delta(tc(1, id="b", name="g", arguments='{"b":')))]
        events += [chat_chunk(tool_delta(tc(1, arguments="2}")))]
    else:
        events = events_for(fmt, [("f", ['{"a":1}']), ("g", ['{"b":', "2}"])])
    body = sse_body(events, fmt)
    cut = body.rindex(b"\n\n", 0, body.index(b'"2}"')) + 2
    return body[:cut] + inserted + body[cut:]


_DEEP = '{"a":' * 1000 + "1" + "}" * 1000


@pytest.mark.parametrize(
    ("fmt", "inserted", "error"),
    [
        # The SDKs json-decode every event and raise JSONDecodeError on one that is not JSON (a
        # proxy's HTML error page, a cut-off line); their stream cannot go on after it.
        *[
            (fmt, b"event: x\ndata: <html>bad gateway</html>\n\n", json.JSONDecodeError)
            for fmt in ("openai-chat", "anthropic", "openai-responses")
        ],
        # Arguments sent as an object (quirk 23) a thousand levels deep: the SDK's decoder
        # raises RecursionError on the event.
        (
            "openai-chat",
            b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"c",'
            + b'"function":{"name":"h","arguments":'
            + _DEEP.encode()
            + b"}}]}}]}\n\n",
            RecursionError,
        ),
        (
            "anthropic",
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"x":'
            + _DEEP.encode()
            + b"}\n\n",
            RecursionError,
        ),
        # An integer longer than Python's limit for int parsing (4300 digits), in a field no
        # one reads: `json.loads` raises a plain ValueError, no JSONDecodeError.
        *[
            (
                fmt,
                b'event: x\ndata: {"type":"ping","n":1' + b"0" * 5000 + b"}\n\n",
                ValueError,
            )
            for fmt in ("openai-chat", "anthropic", "openai-responses")
        ],
    ],
)
def test_an_event_the_sdk_cannot_decode_ends_the_stream_without_raising(
    sse_server: SSEServer, fmt: str, inserted: bytes, error: type[Exception]
) -> None:
    # Raised from `assemble`, it used to kill the consumer's loop: the calls already started got
    # no CallCompleted. It now ends the stream as a broken connection does.
    events_out, s = assemble_sync(sse_server.register(_two_calls_with(fmt, inserted)), fmt)
    assert isinstance(s.transport_error, error)
    assert [c.name for c in s.calls] == ["f", "g"]
    assert kinds(s.calls) == [None, "truncated"]
    assert events_out[-1].finish_reason is None


def _nested(depth: int) -> dict[str, Any]:
    """`{"a": {"a": ... {}}}` with `depth` objects inside the outer one, built without
    recursion."""
    nested: dict[str, Any] = {}
    inner = nested
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return nested


def test_feed_chunk_of_metadata_nested_past_json_dumps_is_dropped_not_raised() -> None:
    # Opaque provider fields kept for the next turn (quirk 31) are no use in part; the call's
    # warning says that one was not kept (it was dropped without a word).
    nested = _nested(2000)
    entry = tc(0, id="a", name="f", arguments="{}", extra_content=nested)
    asm = Assembler()
    asm.feed_chunk(chat_chunk(tool_delta(entry)))
    (call,) = asm.finish()
    assert call.ok and call.metadata == {} and call.warnings == ["metadata_dropped"]


def test_feed_chunk_of_arguments_nested_past_json_dumps_is_too_deep_as_their_text() -> None:
    # A gateway's parser hands over the object; `json.dumps` cannot write it back.
    nested = _nested(1500)
    chunk = chat_chunk(tool_delta(tc(0, id="a", name="f", arguments=nested)))
    from_object = Assembler()
    from_object.feed_chunk(chunk)
    text = '{"a":' * 1500 + "{}" + "}" * 1500
    from_text = Assembler()
    from_text.feed(0, id="a", name="f", arguments=text)
    (call,), (expected,) = from_object.finish(), from_text.finish()
    assert call.error is not None and expected.error is not None
    assert (call.error.kind, call.error.offset, call.error.path) == (
        expected.error.kind,
        expected.error.offset,
        expected.error.path,
    ) and call.error.kind == "too_deep"


@pytest.mark.parametrize(
    ("deltas", "summary", "want"),
    [
        (['{"e":"\ud83d'], '{"e":"\ud83d"}', ('{"e":"\\ud83d"}', "lone_surrogate")),
        (['{"e":"\ud83d'], '{"e":"😀"}', ('{"e":"😀"}', None)),
        (['{"e":"x\ud83d'], '{"e":"x\ud83d', ('{"e":"x\\ud83d', "truncated")),
        (['{"e":"', "\ud83d"], '{"e":"\ud83d\ude00"}', ('{"e":"😀"}', None)),
    ],
)
def test_quirk_41_responses_summary_while_a_surrogate_half_is_held(
    sse_server: SSEServer, split: str, deltas: list[str], summary: str, want: tuple[str, str]
) -> None:
    # The last delta ends with the high half of a pair (quirk 41) and the delta with its other
    # half is lost; `function_call_arguments.done` has the whole text. The raw path let the
    # summary supersede the half; `feed_chunk` skipped the summary while a half was held and
    # returned the cut text, or, for a summary ending in a half, fed it as a fragment after
    # the text so far.
    fmt = "openai-responses"
    events = events_for(fmt, [("f", deltas)], summary=summary)
    body = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    _, s = assemble_both(sse_server.register(body, split=split), fmt)
    assert [(c.arguments, c.error.kind if c.error else None) for c in s.calls] == [want]


@pytest.mark.parametrize("fmt", ["openai-chat", *FORMATS])
@pytest.mark.parametrize(
    "frags",
    [
        ["", '{"k": "\ud834', '{"k": "\ud834\udd1e"}'],
        ['{"a": 1, "k": "x\ud834', '{"a": 1, "k": "x\ud834\udd1ey\ud834', '{"a": 1, "k": "x𝄞y𝄞"}'],
        # The text before the half was handed on alone: an exact repeat of the text so far,
        # to which the core appended the next resend (`{"k": "{"k": "{"k": "𝄞"}`).
        ['{"k": "', '{"k": "\ud834', '{"k": "\ud834\udd1e"}'],
        ['{"k": "x', '{"k": "x\ud834', '{"k": "x\ud834\udd1e"}'],
        ['{"k": "\ud834', '{"k": "\ud834', '{"k": "\ud834\udd1e"}'],
    ],
)
def test_quirk_19_41_cumulative_arguments_resend_a_split_surrogate_pair(
    sse_server: SSEServer, split: str, fmt: str, frags: list[str]
) -> None:
    # A JS producer resends the whole arguments so far (quirk 19), and one resend ends between
    # the two halves of a pair (quirk 41); the next resend has the pair whole. The half held
    # from the first used to be written back in front of the resend, which then no longer
    # extended the text so far: `lone_surrogate` on both paths instead of the value.
    full = frags[-1].encode("utf-16", "surrogatepass").decode("utf-16")  # the pair joined
    if fmt == "openai-chat":
        events: list[Any] = [
            chat_chunk(tool_delta(tc(0, id="a", name="f", arguments=frags[0])))
        ] + [chat_chunk(tool_delta(tc(0, arguments=f))) for f in frags[1:]]
        events.append(chat_chunk({}, finish_reason="tool_calls"))
    else:
        events = events_for(fmt, [("f", frags)], summary=full)
    data = [json.dumps(e) for e in events]  # `ensure_ascii`: a lone half is a `\uXXXX` escape
    if fmt == "openai-chat":
        body = "".join(f"data: {d}\n\n" for d in data) + "data: [DONE]\n\n"
    else:
        named = zip(events, data, strict=True)
        body = "".join(f"event: {e['type']}\ndata: {d}\n\n" for e, d in named)
    assert "\\ud834" in body
    _, s = assemble_both(sse_server.register(body.encode(), split=split), fmt)
    dicts = Assembler()
    for event in events:
        dicts.feed_chunk(event)
    for calls in (s.calls, dicts.finish()):
        assert [(c.arguments, c.value, kinds(calls)[0]) for c in calls] == [
            (full, json.loads(full), None)
        ]
        # Held whole, a fragment that ends in a half never reaches the core, which sees a
        # resend only of a fragment it was handed.
        handed = [f for f in frags[:-1] if f and not "\ud800" <= f[-1] <= "\udbff"]
        assert ("cumulative_arguments" in calls[0].warnings) == bool(handed)


def _both_paths(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The calls `feed_chunk` makes of `events` as dicts, checked equal to what `feed_sse`
    makes of the same events as one SSE body, with the finish reason each path read."""
    by_chunk = Assembler()
    for event in events:
        by_chunk.feed_chunk(event)
    chunk_calls = [(c.name, c.ok, c.error and c.error.kind, c.arguments) for c in by_chunk.finish()]
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    by_sse = Assembler()
    by_sse.feed_sse(body)
    sse_calls = [(c.name, c.ok, c.error and c.error.kind, c.arguments) for c in by_sse.finish()]
    assert sse_calls == chunk_calls
    return [*sse_calls, by_sse.finish_reason]


def test_a_blank_chat_finish_reason_is_no_finish_on_both_paths() -> None:
    # Some compatible servers send "" for null; the stream then ends without a reason, so the
    # call (no arguments yet) must not run as `{}`.
    def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return {"id": "c", "object": "chat.completion.chunk", "choices": [choice]}

    header = {"index": 0, "id": "call_1", "type": "function"}
    header["function"] = {"name": "delete_all", "arguments": ""}
    events = [chunk({"tool_calls": [header]}, None), chunk({}, "")]
    assert _both_paths(events) == [("delete_all", False, "truncated", ""), None]


def test_a_responses_completed_event_without_its_response_still_completes() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ping"}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.completed"},
    ]
    # The item was never ended (no `.done`, no `output_item.done`): cut before its arguments,
    # as it is when another call of the response was ended.
    assert _both_paths(events) == [("ping", False, "truncated", ""), "completed"]


def test_responses_calls_cut_by_the_output_limit_before_any_ended_are_all_cut() -> None:
    # Two items announced, neither given arguments nor ended, then the output limit: only the
    # last was cut, and the first ran as `{}` (a cut connection cut both). A format that ends
    # its calls is known from its start events, before any call ended.
    items = [
        {"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}", "name": name}
        for k, name in enumerate(["delete_all_files", "notify"])
    ]
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": k, "item": item}
        for k, item in enumerate(items)
    ]
    events.append(
        {
            "type": "response.incomplete",
            "response": {
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "output": [{**item, "status": "incomplete"} for item in items],
            },
        }
    )
    assert _both_paths(events)[:-1] == [
        ("delete_all_files", False, "truncated", ""),
        ("notify", False, "truncated", ""),
    ]


@pytest.mark.parametrize("block", ["missing", "null"])
def test_an_anthropic_start_without_its_block_keeps_the_deltas_that_follow(block: str) -> None:
    start: dict[str, Any] = {"type": "content_block_start", "index": 0}
    if block == "null":
        start["content_block"] = None
    delta = {"type": "input_json_delta", "partial_json": '{"path": "/tmp/x"}'}
    events = [
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "content": []}},
        start,
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
    ]
    calls = _both_paths(events)[:-1]
    assert calls == [(None, False, "missing_name", '{"path": "/tmp/x"}')]


def test_responses_calls_sent_only_in_the_finished_response_are_read(
    sse_server: SSEServer, split: str
) -> None:
    # A bridge that streams text and lists the function calls only in `response.completed`'s
    # `output`: they were dropped without a word, the finish reason `completed` as if the
    # model had only talked. They are read as their `output_item.done` would have been.
    def call_item(n: int, name: str, arguments: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": name,
            "arguments": arguments,
            "status": "completed",
        }

    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "On it.", "annotations": []}],
            },
            call_item(1, "lookup", '{"q": "东京"}'),
            call_item(2, "ping", "{}"),
        ],
        "tool_choice": "auto",
        "tools": [],
        "parallel_tool_calls": True,
    }
    events = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**response, "output": [], "status": "in_progress"},
        },
        {
            "type": "response.output_text.delta",
            "sequence_number": 1,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "On it.",
        },
        {"type": "response.completed", "sequence_number": 2, "response": response},
    ]
    s = run(sse_server, split, "openai-responses", events)
    assert [(c.id, c.name, c.value, c.index) for c in s.calls] == [
        ("call_1", "lookup", {"q": "东京"}, 1),
        ("call_2", "ping", {}, 2),
    ]
    assert s.text == "On it."
