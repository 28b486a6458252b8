"""Responses calls of tools declared inside a `namespace` tool keep their namespace.

A tool declared in `{"type": "namespace", "name": "crm", "tools": [...]}` is called by an item
that names it by its bare `name` and carries `"namespace": "crm"`. The namespace was dropped on
every path: the call came back as plain `lookup`, and `assistant_turn` sent it back without
it, so the next request named another tool (or none). Each stream is served to the real
`openai` client over HTTP and read with `assemble` (SDK objects through `feed_chunk`);
`assemble_both` feeds the identical body to `feed_sse`, whole and cut every way, and
`_both_paths` feeds the events as dicts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from openai.types.responses import ResponseCustomToolCallParam, ResponseFunctionToolCallParam
from pydantic import TypeAdapter

from toolwire import Toolset, assistant_turn
from toolwire.assembler import Assembler

from .clients import assemble_both
from .conftest import SSEServer
from .streamkit import pieces, sse_body

FMT = "openai-responses"
TOOLS = Toolset(
    [{"name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}}}]
)
_CREATED = {"type": "response.created", "response": {"id": "r", "status": "in_progress"}}
_COMPLETED = {"type": "response.completed", "response": {"id": "r", "status": "completed"}}


def _item_events(at: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """A function call's events (its arguments `{"q": 1}`), or a custom tool call's (its
    input `SELECT 1`), at `output_index` `at`."""
    custom = item["type"] == "custom_tool_call"
    field, text = ("input", "SELECT 1") if custom else ("arguments", '{"q": 1}')
    middle = "custom_tool_call_input.done" if custom else "function_call_arguments.delta"
    where = {"output_index": at, "item_id": item["id"]}
    return [
        {"type": "response.output_item.added", "output_index": at, "item": {**item, field: ""}},
        {"type": f"response.{middle}", **where, ("input" if custom else "delta"): text},
        {"type": "response.output_item.done", "output_index": at, "item": {**item, field: text}},
    ]


_CRM = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup"}
_EVENTS = [
    _CREATED,
    *_item_events(0, {**_CRM, "namespace": "crm"}),
    *_item_events(1, {**_CRM, "id": "fc_2", "call_id": "call_2"}),
    *_item_events(
        2,
        {
            "type": "custom_tool_call",
            "id": "ctc_1",
            "call_id": "call_3",
            "name": "run_sql",
            "namespace": "db",
        },
    ),
    _COMPLETED,
]


def _both_paths(events: list[dict[str, Any]], cuts: range = range(0)) -> list[list[Any]]:
    """The calls of the events fed as dicts through `feed_chunk`, and of their SSE body through
    `feed_sse` cut at `cuts`."""
    chunks, raw = Assembler(), Assembler()
    for event in events:
        chunks.feed_chunk(event)
    body = sse_body(events, FMT)
    for part in pieces(body, [c for c in cuts if c < len(body)]):
        raw.feed_sse(part)
    return [chunks.finish(), raw.finish()]


def _body(events: list[dict[str, Any]]) -> bytes:
    numbered = [{**e, "sequence_number": n} for n, e in enumerate(events)]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in numbered)


def test_a_namespaced_call_keeps_its_namespace_on_every_path(
    sse_server: SSEServer, split: str
) -> None:
    route = sse_server.register(_body(_EVENTS), split=split)
    # `assemble_both` checks that `feed_sse`, whole and cut at every byte, keeps the same
    # metadata as the SDK's objects through `feed_chunk`.
    _, s = assemble_both(route, FMT, tools=TOOLS)
    crm, plain, sql = s.calls
    assert (crm.name, crm.id, crm.metadata) == (
        "lookup",
        "call_1",
        {"item_id": "fc_1", "namespace": "crm"},
    )
    assert (plain.name, plain.metadata) == ("lookup", {"item_id": "fc_2"})
    assert (sql.name, sql.metadata) == ("run_sql", {"item_id": "ctc_1", "namespace": "db"})
    # The Toolset has no namespaces: the bare name is the tool it runs.
    assert s.outcomes[0].ok and s.outcomes[1].ok
    for calls in _both_paths(_EVENTS, range(1, 4000, 7)):
        assert [c.metadata for c in calls] == [c.metadata for c in s.calls]


def test_a_namespaced_call_goes_back_with_its_namespace() -> None:
    for calls in _both_paths(_EVENTS):
        crm, plain, sql = assistant_turn(calls, style="openai-responses")
        assert crm == {
            "type": "function_call",
            "call_id": "call_1",
            "name": "lookup",
            "arguments": '{"q": 1}',
            "namespace": "crm",
        }
        assert "namespace" not in plain
        assert sql["namespace"] == "db"
        # Every key one the SDK's request types declare (their TypedDicts drop unknown keys).
        assert TypeAdapter(ResponseFunctionToolCallParam).validate_python(crm) == crm
        assert TypeAdapter(ResponseCustomToolCallParam).validate_python(sql) == sql


def test_a_namespace_that_is_no_string_is_no_namespace() -> None:
    # A broken bridge's value: neither path reads it as a namespace, nor drops the call.
    events = [_CREATED, *_item_events(0, {**_CRM, "namespace": 7}), _COMPLETED]
    for calls in _both_paths(events):
        (call,) = calls
        assert call.ok and call.metadata == {"item_id": "fc_1"}


def _said_late(where: str) -> list[dict[str, Any]]:
    """The namespaced call, its `added` without the `namespace`: said by its finished item
    (`done`), or only by the finished response's `output` (`output`)."""
    added, delta, done = _item_events(0, _CRM)
    if where == "done":
        done = {**done, "item": {**done["item"], "namespace": "crm"}}
    item = {**done["item"], "namespace": "crm"}
    completed = {**_COMPLETED, "response": {**_COMPLETED["response"], "output": [item]}}
    return [_CREATED, added, delta, done, completed]


@pytest.mark.parametrize("where", ["done", "output"])
def test_a_namespace_only_the_finished_item_says_is_kept(
    sse_server: SSEServer, split: str, where: str
) -> None:
    events = _said_late(where)
    route = sse_server.register(_body(events), split=split)
    # The SDK's objects through `feed_chunk`, and `feed_sse` whole and cut at every byte.
    _, s = assemble_both(route, FMT, tools=TOOLS)
    (call,) = s.calls
    assert call.metadata == {"item_id": "fc_1", "namespace": "crm"}
    for calls in _both_paths(events, range(1, 2000, 3)):
        (call,) = calls
        assert call.metadata == {"item_id": "fc_1", "namespace": "crm"}
        (sent,) = assistant_turn(calls, style="openai-responses")
        assert sent["namespace"] == "crm"
