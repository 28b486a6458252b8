"""Pickling and copying: what production code hands between processes (multiprocessing,
`ProcessPoolExecutor`, job queues, caches) or copies, and what refuses it with a clear error."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, SecretStr

from toolwire import (
    NO_VALUE,
    Assembler,
    AsyncToolStream,
    BreakerConfig,
    CallCompleted,
    CallError,
    CircuitBreaker,
    IdempotencyConflict,
    IdempotencyInProgress,
    InvalidSchemaError,
    JsonError,
    MemoryLedger,
    Outcome,
    PartialNode,
    PrecheckError,
    Recorder,
    RepairPolicy,
    RequestContext,
    Scanner,
    SchemaExportError,
    SchemaTooLargeError,
    SqliteLedger,
    StreamEnded,
    ToolCall,
    ToolRegistry,
    Toolset,
    ToolStream,
    assemble,
)
from toolwire.execution import ClaimLost, Executor, NeedsClarification


class CreateTicket(BaseModel):
    """Open a support ticket."""

    title: str = Field(max_length=20)
    priority: Literal["low", "high"]
    token: SecretStr | None = None


# A plain tool whose `oneOf` only the schema as written decides (closing its objects makes the
# branches exclusive), with a secret field and a format `jsonschema` checks.
LOOKUP: dict[str, Any] = {
    "name": "lookup",
    "description": "Look an order up.",
    "parameters": {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "pattern": "^ORD-"},
            "pin": {"type": "string", "x-secret": True, "minLength": 4},
            "since": {"type": "string", "format": "date"},
            "filter": {
                "oneOf": [
                    {"type": "object", "properties": {"a": {"type": "integer"}}},
                    {"type": "object", "properties": {"b": {"type": "integer"}}},
                ]
            },
        },
        "required": ["order_id"],
    },
}

CALLS = [
    ("c1", "create_ticket", '{"title": "Printer jam", "priority": "High"}'),
    ("c2", "create_ticket", '{"title": "x", "priority": "urgent", "token": "s3cret"}'),
    ("c3", "lookup", '{"order_id": "ORD-1", "since": "2024-02-30"}'),
    ("c4", "lookup", '{"order_id": "X", "pin": "12"}'),
    ("c5", "lookup", '{"order_id": "ORD-2", "filter": {"a": 1}}'),
    ("c6", "lookup", '{"order_id": "ORD-3", "since": "2024-02-03", "filter": {"b": 2, "c": 3}}'),
]


def _toolset(lang: Literal["en", "zh"] = "en") -> Toolset:
    return Toolset([CreateTicket, LOOKUP], lang=lang, strict=False)


def _calls(tools: Toolset) -> list[ToolCall]:
    assembler = Assembler(tools=tools)
    for index, (call_id, name, arguments) in enumerate(CALLS):
        assembler.feed(index, id=call_id, name=name, arguments=arguments)
    return assembler.finish()


def _reports(tools: Toolset, calls: list[ToolCall]) -> list[tuple[Outcome, Any]]:
    return [
        (outcome, outcome.to_message(call, style="openai-chat", result="done"))
        for call, outcome in zip(calls, tools.validate_all(calls), strict=True)
    ]


def _pickled(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("copier", [_pickled, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_toolset_with_plain_tools_copies_and_validates_identically(
    lang: Literal["en", "zh"], copier: Callable[[Toolset], Toolset]
) -> None:
    tools = _toolset(lang)
    assert tools.registry is not None  # compiled now: a copy builds its own again
    copied = copier(tools)
    calls = _calls(tools)
    expected = _reports(tools, calls)
    kinds = [outcome.kind for outcome, _ in expected]
    assert kinds == [
        "ok",
        "model_error",
        "model_error",
        "model_error",
        "model_error",
        "model_error",
    ]
    assert _reports(copied, calls) == expected
    # The copy's own pre-check judges streamed calls as the original's does.
    assert _reports(copied, _calls(copied)) == expected
    assert copied.openai() == tools.openai() and copied.relaxations == tools.relaxations


def _same_exception(before: BaseException, after: BaseException) -> None:
    assert type(after) is type(before)
    assert str(after) == str(before)
    assert after.args == before.args
    assert vars(after) == vars(before)


def _invalid_schema_error() -> InvalidSchemaError:
    with pytest.raises(InvalidSchemaError) as caught:
        Toolset([{"name": "t", "parameters": {"type": "object", "minProperties": "x"}}])
    return caught.value


EXCEPTIONS: list[Callable[[], BaseException]] = [
    lambda: IdempotencyConflict("key-1", "fp-a", "fp-b"),
    lambda: IdempotencyInProgress("key-2"),
    lambda: ClaimLost("key-3"),
    lambda: NeedsClarification("Which order?", missing=["order_id"]),
    lambda: SchemaExportError("t", "order.items[].sku", "anyOf", "a union is not allowed"),
    lambda: SchemaTooLargeError(300, 128, "t", measure="nesting"),
    lambda: SchemaTooLargeError(10_000_000, 200_000),
    _invalid_schema_error,
]


@pytest.mark.parametrize("make", EXCEPTIONS)
@pytest.mark.parametrize("copier", [_pickled, copy.deepcopy, copy.copy])
def test_exceptions_copy_with_their_attributes(
    make: Callable[[], BaseException], copier: Callable[[BaseException], BaseException]
) -> None:
    error = make()
    error.add_note("raised in a worker")
    _same_exception(error, copier(error))


async def _no_chunks() -> AsyncIterator[object]:
    for chunk in ():
        yield chunk


def _live_objects(tmp_path: Path) -> Iterator[object]:
    yield Assembler()
    yield Scanner()
    yield ToolStream(iter(()))
    yield AsyncToolStream(_no_chunks())
    yield Executor()
    yield CircuitBreaker(BreakerConfig())
    yield RequestContext("r", "s")
    yield MemoryLedger()
    ledger = SqliteLedger(str(tmp_path / "ledger.db"))
    yield ledger
    ledger.close()
    yield Recorder(tmp_path / "stream.jsonl")
    yield RepairPolicy()


@pytest.mark.parametrize("copier", [pickle.dumps, copy.copy, copy.deepcopy])
def test_objects_with_live_state_refuse_copies_saying_why(
    tmp_path: Path, copier: Callable[[object], object]
) -> None:
    for live in _live_objects(tmp_path):
        name = type(live).__name__
        with pytest.raises(TypeError, match=f"^cannot pickle or copy {name}: its? "):
            copier(live)


def _validate_in_worker(tools: Toolset) -> list[tuple[Outcome, Any]]:
    return _reports(tools, _calls(tools))


def _raise_in_worker() -> None:
    raise IdempotencyConflict("key-1", "fp-a", "fp-b")


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    # A fresh interpreter: nothing compiled in this process reaches the worker but by pickle.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as workers:
        yield workers


def test_toolset_validates_in_a_worker_process(pool: ProcessPoolExecutor) -> None:
    tools = _toolset("zh")
    assert pool.submit(_validate_in_worker, tools).result(timeout=60) == _validate_in_worker(tools)


def test_exception_raised_in_a_worker_reaches_the_parent_whole(pool: ProcessPoolExecutor) -> None:
    with pytest.raises(IdempotencyConflict) as caught:
        pool.submit(_raise_in_worker).result(timeout=60)
    assert (caught.value.key, caught.value.stored_fingerprint, caught.value.fingerprint) == (
        "key-1",
        "fp-a",
        "fp-b",
    )
    assert str(caught.value) == "idempotency key reused with different arguments: key-1"


# Native values ------------------------------------------------------------------------------
# A finished call, its error and what holds them cross processes (a worker's result, an event
# sent to another process) and get copied: every attribute the same, `NO_VALUE` the same object.


def _pickled_with(protocol: int) -> Callable[[Any], Any]:
    def pickled(value: Any) -> Any:
        return pickle.loads(pickle.dumps(value, protocol=protocol))

    pickled.__name__ = f"pickle{protocol}"
    return pickled


COPIERS: list[Callable[[Any], Any]] = [
    *(_pickled_with(protocol) for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1)),
    copy.copy,
    copy.deepcopy,
]
COPIER_IDS = [getattr(c, "__name__", "copier") for c in COPIERS]

CALL_ATTRIBUTES = (
    "ordinal index id name type arguments arguments_bytes plain_numbers prechecked stop_reason "
    "limits value error ok metadata warnings"
).split()
ERROR_ATTRIBUTES = "kind message offset path keyword expected got incomplete".split()


def _error_attributes(error: CallError | None) -> Any:
    if error is None:
        return None
    return {name: getattr(error, name) for name in ERROR_ATTRIBUTES} | {
        "str": str(error),
        "repr": repr(error),
    }


def _call_attributes(call: ToolCall) -> dict[str, Any]:
    read = {name: getattr(call, name) for name in CALL_ATTRIBUTES}
    read["error"] = _error_attributes(call.error)
    read["repr"] = repr(call)
    return read


def _calls_of_every_kind() -> list[ToolCall]:
    """Calls pre-checked by a toolset (valid, a schema violation, an unknown tool, cut short),
    calls nobody has read yet (their text not scanned), provider metadata and warnings, limits
    other than the defaults, a call the provider stopped, and arguments that are not UTF-8."""
    checked = Assembler(tools=_toolset())
    checked.feed(0, id="c0", name="create_ticket", arguments='{"title": "ok", "priority": "low"}')
    for index, (call_id, name, arguments) in enumerate(CALLS[1:4], start=1):
        checked.feed(index, id=call_id, name=name, arguments=arguments)
    checked.feed(4, id="c9", name="no_such_tool", arguments="{}")
    checked.feed(5, id="c10", name="lookup", arguments='{"order_id": "ORD-')
    unread = Assembler(max_depth=8, max_calls=50, duplicate_keys="last_wins")
    unread.feed(0, id="u1", name="lookup", arguments='{"a": 1, "a": 2.5e3}')
    unread.feed(1, id="u1", name="lookup", arguments='{"a": [1,')
    unread.set_metadata(1, "thought_signature", {"sig": [1, "x"]})
    unread.feed(2, id="u3", name="lookup", arguments=b'{"k": "\xff"}')
    stopped = Assembler()
    stopped.feed(0, id="s1", name="lookup", arguments='{"a": 1')
    stopped.stop("content_filter")
    return [*checked.finish(), *unread.finish(), *stopped.finish()]


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_tool_calls_copy_with_every_attribute(copier: Callable[[Any], Any]) -> None:
    calls = _calls_of_every_kind()
    # Copied before anything read them: the copies scan their text as the originals do.
    copies = [copier(call) for call in calls]
    assert [type(c) for c in copies] == [ToolCall] * len(calls)
    expected = [_call_attributes(call) for call in calls]
    assert [_call_attributes(c) for c in copies] == expected
    # Copied once read (their verdict settled, their value built).
    assert [_call_attributes(copier(call)) for call in calls] == expected
    kinds = [e and e["kind"] for e in (a["error"] for a in expected)]
    assert kinds == [
        None,
        "schema_violation",
        "schema_violation",
        "schema_violation",
        "unknown_tool",
        "truncated",
        None,
        "truncated",
        "invalid_utf8",
        "filtered",
    ]
    assert [a["warnings"] for a in expected][6:8] == [[], ["duplicate_id"]]
    assert expected[7]["metadata"]["thought_signature"] == {"sig": [1, "x"]}
    assert expected[6]["limits"] == {"max_depth": 8, "duplicate_keys": "last_wins", "max_calls": 50}
    assert expected[9]["stop_reason"] == "content_filter"


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_copied_and_replayed_calls_equal_the_originals(copier: Callable[[Any], Any]) -> None:
    # A call had no `==`: a copy, or the same stream assembled again, compared unequal to the
    # original although every attribute was the same.
    calls = _calls_of_every_kind()
    copies = [copier(call) for call in calls]
    again = _calls_of_every_kind()
    for call, copied, replayed in zip(calls, copies, again, strict=True):
        assert copied == call and replayed == call and not copied != call
        assert hash(copied) == hash(call) == hash(replayed)
    # Read first or not, and read one way or another, a call is the same call.
    for call in calls:
        _ = call.value
    assert [c.error for c in copies] == [c.error for c in calls]
    assert copies == calls == again
    assert {call: at for at, call in enumerate(calls)}[copies[3]] == 3
    # Calls that differ in anything compare unequal, and a call equals nothing else.
    assert all(a != b for i, a in enumerate(calls) for b in calls[i + 1 :])
    assert calls[0] != _call_attributes(calls[0]) and calls[0] != None  # noqa: E711


def _one_call(**options: Any) -> ToolCall:
    made = Assembler(**{k: v for k, v in options.items() if k == "max_depth"})
    made.feed(
        0,
        id=options.get("id", "c1"),
        name=options.get("name", "lookup"),
        arguments=options.get("arguments", '{"order_id": "ORD-1"}'),
    )
    for key, value in options.get("metadata", {}).items():
        made.set_metadata(0, key, value)
    (call,) = made.finish()
    return call


def test_calls_equal_only_when_every_attribute_is() -> None:
    base = _one_call(metadata={"a": 1, "b": 2})
    assert base == _one_call(metadata={"a": 1, "b": 2})
    # `metadata` is a dict: the order its keys were set in is no part of it.
    assert base == _one_call(metadata={"b": 2, "a": 1})
    for differing in (
        {"id": "c2"},
        {"name": "ping"},
        {"arguments": '{"order_id": "ORD-2"}'},
        {"arguments": '{"order_id":"ORD-1"}'},
        {"max_depth": 8},
        {"metadata": {"a": 1}},
        {"metadata": {"a": 1, "b": 3}},
    ):
        other = _one_call(**{"metadata": {"a": 1, "b": 2}, **differing})
        assert base != other, differing
    checked = Assembler(tools=_toolset())
    checked.feed(0, id="c1", name="lookup", arguments='{"order_id": "ORD-1"}')
    (prechecked,) = checked.finish()
    assert prechecked.prechecked and not _one_call().prechecked
    assert prechecked != _one_call()


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_copied_calls_validate_as_the_originals(copier: Callable[[Any], Any]) -> None:
    tools = _toolset()
    calls = _calls(tools)
    copies = [copier(call) for call in calls]
    assert [c.prechecked for c in copies] == [True] * len(calls)
    # The copies were not checked by this toolset's registry: it checks them again, and
    # reaches the same verdicts.
    assert _reports(tools, copies) == _reports(tools, calls)


def _partial_tree() -> Any:
    scanner = Scanner()
    scanner.push('{"a": [1, {"b": "x"}], "c": "hel')
    return scanner.partial(flags=True)


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_call_errors_partial_nodes_and_no_value_copy(copier: Callable[[Any], Any]) -> None:
    errors = [call.error for call in _calls_of_every_kind() if call.error is not None]
    copied = [copier(error) for error in errors]
    assert [_error_attributes(e) for e in copied] == [_error_attributes(e) for e in errors]
    assert copied == errors
    tree = _partial_tree()
    assert isinstance(tree, PartialNode) and not tree.complete
    copied_tree = copier(tree)
    assert type(copied_tree) is PartialNode
    assert copied_tree == tree and copied_tree.plain() == tree.plain()
    assert copied_tree.value["a"].complete and not copied_tree.value["c"].complete
    # The one marker: `is NO_VALUE` holds of a copy, alone or inside another value.
    assert copier(NO_VALUE) is NO_VALUE
    assert Scanner().partial() is NO_VALUE
    assert copier([NO_VALUE, {"v": NO_VALUE}])[1]["v"] is NO_VALUE


def _registry() -> ToolRegistry:
    lookup = LOOKUP["parameters"]
    return ToolRegistry(
        {"lookup": lookup, "ping": '{"type": "object", "maxProperties": 0}'},
        secrets={"lookup": ["/pin"]},
    )


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_tool_registry_copies_compiled_again_from_its_schemas(
    copier: Callable[[Any], Any],
) -> None:
    registry = _registry()
    copied = copier(registry)
    assert type(copied) is ToolRegistry and copied is not registry
    assert copied.names() == registry.names() == ["lookup", "ping"]
    assert copied.unsupported == registry.unsupported and registry.unsupported
    texts = [
        ("lookup", b'{"order_id": "ORD-1", "pin": "12"}'),
        ("lookup", b'{"order_id": 5}'),
        ("ping", b'{"a": 1}'),
        ("ping", b"{}"),
    ]
    checks = [registry.check(name, text) for name, text in texts]
    assert [copied.check(name, text) for name, text in texts] == checks
    assert [c and c.got for c in checks][:1] == ["[redacted]"]
    # A copy pre-checks streams as the original does.
    assembler = Assembler(tools=copied)
    assembler.feed(0, id="c1", name="lookup", arguments='{"order_id": 5}')
    (call,) = assembler.finish()
    assert call.prechecked and call.error == checks[1]


def _json_error() -> JsonError:
    scanner = Scanner()
    scanner.push('{"a": tru')
    with pytest.raises(JsonError) as caught:
        scanner.finish()
    return caught.value


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_json_error_copies_with_its_call_error(copier: Callable[[Any], Any]) -> None:
    error = _json_error()
    copied = copier(error)
    _same_exception(error, copied)
    assert copied.error.kind == "truncated" and copied.error == error.error


def _events() -> list[Any]:
    chunks: list[dict[str, Any]] = [
        _chat_delta(
            {
                "index": 0,
                "id": "c1",
                "type": "function",
                "function": {
                    "name": "create_ticket",
                    "arguments": '{"title": "x", "priority": "urgent"',
                },
            }
        ),
        _chat_delta({"index": 0, "function": {"arguments": "}"}}),
        _chat_delta(
            {
                "index": 1,
                "id": "c2",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"order_id": "ORD-1"}'},
            }
        ),
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 3},
        },
    ]
    with assemble(chunks, _toolset()) as stream:
        return [e for e in stream if isinstance(e, PrecheckError | CallCompleted | StreamEnded)]


def _chat_delta(call: dict[str, Any]) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


def _event_attributes(event: Any) -> dict[str, Any]:
    read: dict[str, Any] = {"type": type(event)}
    for name in event.__slots__:
        value = getattr(event, name)
        if isinstance(value, ToolCall):
            value = _call_attributes(value)
        elif isinstance(value, CallError):
            value = _error_attributes(value)
        elif name == "calls":
            value = [_call_attributes(c) for c in value]
        read[name] = value
    return read


@pytest.mark.parametrize("copier", COPIERS, ids=COPIER_IDS)
def test_stream_events_holding_calls_copy(copier: Callable[[Any], Any]) -> None:
    events = _events()
    assert [type(e) for e in events] == [PrecheckError, CallCompleted, CallCompleted, StreamEnded]
    assert [_event_attributes(copier(e)) for e in events] == [_event_attributes(e) for e in events]
    # Sent together, the stream's last event and a call's event still share their call.
    completed, ended = copier((events[1], events[3]))
    assert completed.call is ended.calls[0]


def _assemble_in_worker() -> ToolCall:
    return _calls(_toolset())[1]


def _finish_in_worker(text: str) -> object:
    scanner = Scanner()
    scanner.push(text)
    return scanner.finish()


def _read_in_worker(call: ToolCall) -> tuple[dict[str, Any], Outcome]:
    return _call_attributes(call), _toolset().validate(call)


def test_call_crosses_worker_processes_whole(pool: ProcessPoolExecutor) -> None:
    local = _calls(_toolset())[1]
    made_there = pool.submit(_assemble_in_worker).result(timeout=60)
    assert _call_attributes(made_there) == _call_attributes(local)
    read_there = pool.submit(_read_in_worker, local).result(timeout=60)
    assert read_there == (_call_attributes(local), _toolset().validate(local))


def test_json_error_raised_in_a_worker_reaches_the_parent_whole(
    pool: ProcessPoolExecutor,
) -> None:
    with pytest.raises(JsonError) as caught:
        pool.submit(_finish_in_worker, '{"a": [1, 2}').result(timeout=60)
    error = caught.value.error
    assert (error.kind, error.offset, error.path) == ("unexpected_byte", 11, "/a/1")
    assert str(caught.value) == str(error)
