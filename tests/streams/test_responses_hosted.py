"""OpenAI Responses hosted items (a hosted tool's call the server ran, `web_search_call`,
`code_interpreter_call`..., or one the application answers itself, `computer_call`...): kept
whole with the reasoning items (`Assembler.reasoning`) on every path, once each, in output
order, so that a stateless next request (`store=False`) sends each back in its place with the
reasoning item before it (the API refuses a reasoning item without the item that followed
it). They are no calls: nothing runs them, and no result answers them."""

from __future__ import annotations

import itertools
import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("toolwire._core")

from tests.test_result_messages import _taken_by_typed_dict  # pyright: ignore[reportPrivateUsage]
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler

from .clients import (
    assemble_both,
    assemble_sync,
    both_paths,
    check_reasoning,
    next_responses_input,
    sdk_chunks,
)
from .conftest import SSEServer
from .streamkit import Call, responses_stream
from .test_responses_reasoning import FIRST, SECOND, _item, _kept, _numbered, _reasoning

FMT = "openai-responses"

WEB: dict[str, Any] = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "Tokyo weather"},
}
CODE: dict[str, Any] = {
    "id": "ci_1",
    "type": "code_interpreter_call",
    "status": "completed",
    "code": "print(21 * 2)",
    "container_id": "cntr_1",
    "outputs": [{"type": "logs", "logs": "42\n"}],
}
# One of each kind the openai SDK knows, as the API sends it.
HOSTED: list[dict[str, Any]] = [
    WEB,
    CODE,
    {
        "id": "fs_1",
        "type": "file_search_call",
        "status": "completed",
        "queries": ["refund policy"],
        "results": None,
    },
    {"id": "ig_1", "type": "image_generation_call", "status": "completed", "result": "iVBORw0K"},
    {
        "id": "mcp_1",
        "type": "mcp_call",
        "server_label": "docs",
        "name": "lookup",
        "arguments": '{"q": "東京"}',
        "output": "found",
        "error": None,
        "status": "completed",
    },
    {
        "id": "mcpl_1",
        "type": "mcp_list_tools",
        "server_label": "docs",
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
    },
    {
        "id": "cu_1",
        "type": "computer_call",
        "call_id": "call_cu",
        "status": "completed",
        "action": {"type": "screenshot"},
        "pending_safety_checks": [],
    },
    {
        "id": "lsh_1",
        "type": "local_shell_call",
        "call_id": "call_sh",
        "status": "completed",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    },
]


def _hosted(index: int, item: dict[str, Any], *, done: bool = True) -> list[dict[str, Any]]:
    """A hosted item's events: added (in progress), a progress event of its own, then
    (`done`) the finished item."""
    started = {**item, "status": "in_progress"} if "status" in item else item
    progress = f"response.{item['type']}.in_progress"
    events = [
        {"type": "response.output_item.added", "output_index": index, "item": started},
        {"type": progress, "output_index": index, "item_id": item.get("id")},
    ]
    if done:
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def _mixed(*, hosted_done: bool = True, items_done: bool = True) -> list[dict[str, Any]]:
    """Reasoning, a web search, reasoning, a call, a code run, a call: the output a model
    that searches, calls, computes and calls again sends."""
    calls = responses_stream(
        [Call("get_weather", '{"city": "東京"}', "call_1"), Call("book", '{"seats": 2}', "call_2")]
    )
    created, body, completed = calls[0], calls[1:-1], calls[-1]
    first = [{**e, "output_index": 3} for e in body if e["output_index"] == 0]
    second = [{**e, "output_index": 5} for e in body if e["output_index"] == 1]
    made = completed["response"]["output"]
    output = [FIRST, WEB, SECOND, made[0], CODE, made[1]]
    final = {**completed, "response": {**completed["response"], "output": output}}
    events = [
        created,
        *_reasoning(0, FIRST, done=items_done),
        *_hosted(1, WEB, done=hosted_done),
        *_reasoning(2, SECOND, done=items_done),
        *first,
        *_hosted(4, CODE, done=hosted_done),
        *second,
        final,
    ]
    return _numbered(events)


KEPT = [FIRST, WEB, SECOND, CODE]


def _placed(calls: list[Any]) -> list[tuple[Any, Any]]:
    return [(c.metadata.get("reasoning_id"), c.metadata.get("hosted_before")) for c in calls]


def test_hosted_items_are_kept_whole_in_output_order_on_every_path(
    sse_server: SSEServer, split: str
) -> None:
    route = sse_server.register_events(_mixed(), FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way.
    events, stream = assemble_both(route, FMT)
    # Only the function calls are calls; the hosted items go with the reasoning.
    check_reasoning(events, stream, ["get_weather", "book"], KEPT, "")
    # Each call knows the reasoning item right before it, and how many hosted items came
    # before it.
    assert _placed(stream.calls) == [("rs_2", 1), (None, 2)]
    objects, dicts = Assembler(), Assembler()
    for chunk in sdk_chunks(route, FMT):
        objects.feed_chunk(chunk)
    for event in _mixed():
        dicts.feed_chunk(event)
    assert objects.reasoning == dicts.reasoning == KEPT
    assert _placed(objects.finish()) == _placed(dicts.finish()) == [("rs_2", 1), (None, 2)]


def test_the_next_stateless_turn_sends_them_back_in_place(sse_server: SSEServer) -> None:
    from openai.types.responses import ResponseInputParam

    route = sse_server.register_events(_mixed(), FMT)
    _, stream = assemble_sync(route, FMT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turn = assistant_turn(stream.calls, style=FMT, text="On it.", reasoning=stream.reasoning)
    # The output's order: each reasoning item right before what followed it, the text right
    # before the first call.
    assert [item.get("id", item.get("role")) for item in turn] == [
        "rs_1",
        "ws_1",
        "assistant",
        "rs_2",
        "fc_0",
        "ci_1",
        None,
    ]
    assert [turn[0], turn[1], turn[3], turn[5]] == KEPT
    # Only the calls are answered: the server ran its tools.
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=FMT)
    assert [r["call_id"] for r in results] == ["call_1", "call_2"]
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    _taken_by_typed_dict(ResponseInputParam, [user, *turn, *results])


def test_the_next_request_goes_through_the_sdk_with_them(sse_server: SSEServer) -> None:
    route = sse_server.register_events(_mixed(), FMT)
    _, stream = assemble_sync(route, FMT)
    turn = assistant_turn(stream.calls, style=FMT, reasoning=stream.reasoning)
    results = tool_messages(stream.calls, [{"temp": 21}, {"ok": True}], style=FMT)
    user = {"role": "user", "content": "Weather in Tokyo, and book."}
    sent = next_responses_input(sse_server, [user, *turn, *results])
    assert [(item["type"], item.get("id")) for item in sent[1:]] == [
        ("reasoning", "rs_1"),
        ("web_search_call", "ws_1"),
        ("reasoning", "rs_2"),
        ("function_call", "fc_0"),
        ("code_interpreter_call", "ci_1"),
        ("function_call", None),
        ("function_call_output", None),
        ("function_call_output", None),
    ]
    assert [sent[1], sent[2], sent[3], sent[5]] == KEPT


@pytest.mark.parametrize("hosted", HOSTED, ids=[item["type"] for item in HOSTED])
def test_each_kind_goes_back_as_the_sdk_types_take_it(
    sse_server: SSEServer, hosted: dict[str, Any]
) -> None:
    from openai.types.responses import ResponseInputItemParam, ResponseInputParam

    text = responses_stream([], text="Here.")
    created, said, completed = text[0], text[1:-1], text[-1]
    moved = [{**e, "output_index": 2} for e in said]
    events = _numbered([created, *_reasoning(0, FIRST), *_hosted(1, hosted), *moved, completed])
    route = sse_server.register_events(events, FMT)
    _, stream = assemble_both(route, FMT)
    # No call: the item is none, and the stream has nothing to run.
    assert stream.calls == [] and stream.finish_reason == "completed"
    assert stream.reasoning == [FIRST, hosted]
    for asm in both_paths(events, FMT):
        assert asm.reasoning == [FIRST, hosted]
        assert asm.stream_errors() == []
    _taken_by_typed_dict(ResponseInputItemParam, hosted)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turn = assistant_turn([], style=FMT, text=stream.text, reasoning=stream.reasoning)
    assert turn == [FIRST, hosted, {"role": "assistant", "content": "Here."}]
    _taken_by_typed_dict(ResponseInputParam, [{"role": "user", "content": "Hi."}, *turn])


def test_items_only_in_the_finished_response_are_kept_once_in_place() -> None:
    # A bridge that sends the finished response alone, and one whose items' `done` were
    # lost (read once more from the finished response).
    created, final = _mixed()[0], _mixed()[-1]
    lost_done = [
        e
        for e in _mixed()
        if not (e["type"] == "response.output_item.done" and e["item"]["type"] != "function_call")
    ]
    for events in (_numbered([created, final]), _numbered(lost_done)):
        for asm, calls in _kept(events):
            assert asm.reasoning == KEPT
            assert _placed(calls) == [("rs_2", 1), (None, 2)]
            turn = assistant_turn(calls, style=FMT, reasoning=asm.reasoning)
            assert [item.get("id") for item in turn] == [
                "rs_1",
                "ws_1",
                "rs_2",
                "fc_0",
                "ci_1",
                None,
            ]


def test_an_item_cut_off_is_not_kept_nor_the_reasoning_it_would_follow() -> None:
    events = _mixed(hosted_done=False)
    # The search never finished: the reasoning item before it has no follower, and goes.
    for asm, calls in _kept(events[:-1]):
        assert asm.reasoning == [SECOND]
        assert _placed(calls) == [("rs_2", None), (None, None)]


def test_an_item_without_its_id_is_not_kept_nor_the_reasoning_before_it() -> None:
    # The API takes no hosted item back without its id: sent, the turn would be refused.
    bare = {key: value for key, value in WEB.items() if key != "id"}
    text = responses_stream([], text="Hm.")
    said = [{**e, "output_index": 2} for e in text[1:-1]]
    final = {**text[-1], "response": {**text[-1]["response"], "output": [FIRST, bare]}}
    events = _numbered([text[0], *_reasoning(0, FIRST), *_hosted(1, bare), *said, final])
    for asm in both_paths(events, FMT):
        assert asm.reasoning == []
        assert asm.stream_errors() == []
    with pytest.raises(TypeError, match=r"reasoning\[0\] is no reasoning or hosted item"):
        assistant_turn([], style=FMT, reasoning=[bare])


def test_hosted_items_count_toward_the_stream_byte_limit() -> None:
    big = {**WEB, "action": {"type": "search", "query": "x" * 6_000}}
    small = _item("rs_1", ["Short."], "e")
    text = responses_stream([], text="Hm.")
    events = _numbered(
        [text[0], *_reasoning(0, small), *_hosted(1, big), *text[1:-1], *_hosted(3, CODE)]
    )
    for asm in both_paths(events, FMT, limit=4_000):
        # Past the limit the response is refused whole: nothing more is kept.
        assert asm.reasoning == [small]
        assert "stream_limit" in [kind for kind, _, _ in asm.stream_errors()]
    for asm in both_paths(events, FMT, limit=10_000):
        assert asm.reasoning == [small, big, CODE]
        assert asm.stream_errors() == []


def test_a_replayed_or_repeated_item_is_kept_once() -> None:
    created = responses_stream([])[0]
    once = [created, *_reasoning(0, FIRST), *_hosted(1, WEB)]
    replayed = [*_numbered(once), *_numbered(once)]
    # Finished twice in a stream that numbers no events.
    repeated = [*once, once[-1]]
    for events in (replayed, repeated):
        for asm in both_paths(events, FMT):
            assert asm.reasoning == [FIRST, WEB]


def test_calls_made_by_hand_go_before_the_hosted_items() -> None:
    asm = Assembler()
    asm.feed(0, id="call_1", name="ping", arguments="{}")
    (call,) = asm.finish()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turn = assistant_turn([call], style=FMT, text="Hi.", reasoning=[FIRST, WEB])
    # A call that says no place came before every hosted item; the text before it.
    assert [item.get("id", item.get("role")) for item in turn] == [
        "assistant",
        None,
        "rs_1",
        "ws_1",
    ]
    with pytest.raises(TypeError, match=r"reasoning\[1\] is no reasoning or hosted item"):
        assistant_turn([call], style=FMT, reasoning=[FIRST, {"type": "function_call"}])


_PIECES = st.lists(
    st.tuples(
        st.sampled_from(["reasoning", "hosted", "bare", "call", "text"]),
        # Its `output_item.done` came (else only the finished response has it), and the
        # finished response lists it.
        st.booleans(),
        st.booleans(),
    ),
    max_size=7,
)


@settings(max_examples=60, deadline=None)
@given(pieces=_PIECES, completed=st.booleans(), cuts=st.lists(st.integers(0, 10**6), max_size=6))
def test_any_mix_of_items_is_read_alike_on_both_paths(
    pieces: list[tuple[str, bool, bool]], completed: bool, cuts: list[int]
) -> None:
    events: list[dict[str, Any]] = [responses_stream([])[0]]
    output: list[dict[str, Any]] = []
    for at, (kind, done, listed) in enumerate(pieces):
        if kind == "reasoning":
            item = _item(f"rs_{at}", ["Hm."], "e")
            part = _reasoning(at, item, done=done)
        elif kind in ("hosted", "bare"):
            item = {**WEB, "id": f"ws_{at}"} if kind == "hosted" else {"type": "mcp_list_tools"}
            part = _hosted(at, item, done=done)
        else:
            call = [Call("f", '{"a": 1}', f"call_{at}")] if kind == "call" else []
            made = responses_stream(call, text="" if call else "Hi.")
            part = [{**e, "output_index": at} for e in made[1:-1]]
            item = part[-1]["item"]
            if not done:
                part = part[:-1]
        events += part
        if listed:
            output.append(item)
    if completed:
        events.append({"type": "response.completed", "response": {"output": output}})
    events = json.loads(json.dumps(_numbered(events)))
    chunks, raw = both_paths(events, FMT, cuts=cuts)
    assert raw.reasoning == chunks.reasoning
    (_, made), (_, other) = _kept(events)
    assert _placed(made) == _placed(other)
    with warnings.catch_warnings():
        # Reasoning items after the text's several messages: all but the last go.
        warnings.simplefilter("ignore")
        turn = assistant_turn(made, style=FMT, text=raw.text, reasoning=raw.reasoning)
    hosted = [item for item in raw.reasoning if item["type"] != "reasoning"]
    assert [item for item in turn if item.get("type") in ("web_search_call",)] == hosted
    # The API's rule: each reasoning item right before an item of another kind.
    for item, after in itertools.pairwise([*turn, {"type": "end"}]):
        if item.get("type") == "reasoning":
            assert after.get("type") not in ("reasoning", "end")


def _joined(*, call: bool = True) -> list[dict[str, Any]]:
    """A background response resumed part way (`starting_after`): reasoning and a web search
    came before the join, and only the finished response's `output` has them; the code run
    and (`call`) a call after it came streamed."""
    calls = responses_stream([Call("get_weather", '{"city": "東京"}', "call_1")] if call else [])
    created, body, completed = calls[0], calls[1:-1], calls[-1]
    streamed = [{**e, "output_index": 3} for e in body]
    made = completed["response"]["output"]
    final = {
        **completed,
        "response": {**completed["response"], "output": [FIRST, WEB, CODE, *made]},
    }
    return _numbered([created, *_hosted(2, CODE), *streamed, final])


def test_items_before_the_join_of_a_resumed_stream_keep_their_places(
    sse_server: SSEServer, split: str
) -> None:
    # Kept after the code run the stream brought, the search and the reasoning before it went
    # back after it, and the call counted one hosted item before it, not two.
    kept = [FIRST, WEB, CODE]
    route = sse_server.register_events(_joined(), FMT, split=split)
    # The real SDK through `assemble`, then `feed_sse` on the same bytes cut every way.
    events, stream = assemble_both(route, FMT)
    check_reasoning(events, stream, ["get_weather"], kept, "")
    assert _placed(stream.calls) == [(None, 2)]
    objects = Assembler()
    for chunk in sdk_chunks(route, FMT):
        objects.feed_chunk(chunk)
    assert objects.reasoning == kept
    assert _placed(objects.finish()) == [(None, 2)]
    for asm, calls in _kept(_joined()):
        assert asm.reasoning == kept
        assert _placed(calls) == [(None, 2)]
        turn = assistant_turn(calls, style=FMT, reasoning=asm.reasoning)
        assert [item.get("id") for item in turn] == ["rs_1", "ws_1", "ci_1", None]
    # The order the report gave: a code run streamed, a search before it only in `output`.
    created = responses_stream([])[0]
    final = {"type": "response.completed", "response": {"output": [WEB, CODE]}}
    for asm in both_paths(_numbered([created, *_hosted(1, CODE), final]), FMT):
        assert asm.reasoning == [WEB, CODE]


def test_a_reasoning_item_before_the_join_that_is_let_go_leaves_the_rest_in_place() -> None:
    # Reasoning right before more reasoning has no follower the next turn sends: the first
    # one, read from `output` before the streamed code run, is let go, not the code run.
    created = responses_stream([])[0]
    output = [FIRST, SECOND, WEB, CODE]
    final = {"type": "response.completed", "response": {"output": output}}
    events = _numbered([created, *_hosted(3, CODE), final])
    for cuts in ([], list(range(0, 4000, 3))):
        for asm in both_paths(events, FMT, cuts=cuts):
            assert asm.reasoning == [SECOND, WEB, CODE]


def test_a_hosted_item_with_an_unpaired_surrogate_in_a_name_is_kept_on_both_paths() -> None:
    # `json.loads` takes a name holding an unpaired surrogate escape, so `feed_chunk` kept
    # the item from the finished response; the raw path refused it there, and lost it with
    # the call's count of hosted items before it.
    odd = {**WEB, "\ud800note": "Tokyo"}
    calls = responses_stream([Call("get_weather", '{"city": "東京"}', "call_1")])
    created, body, completed = calls[0], calls[1:-1], calls[-1]
    streamed = [{**e, "output_index": 1} for e in body]
    output = [odd, *completed["response"]["output"]]
    final = {**completed, "response": {**completed["response"], "output": output}}
    events = json.loads(json.dumps(_numbered([created, *streamed, final])))
    for cuts in ([], list(range(0, 3000, 5))):
        chunks, raw = both_paths(events, FMT, cuts=cuts)
        assert chunks.reasoning == raw.reasoning == [odd]
    for asm, made in _kept(events):
        assert asm.reasoning == [odd]
        assert _placed(made) == [(None, 1)]
