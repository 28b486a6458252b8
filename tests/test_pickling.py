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
    Assembler,
    AsyncToolStream,
    BreakerConfig,
    CircuitBreaker,
    IdempotencyConflict,
    IdempotencyInProgress,
    InvalidSchemaError,
    MemoryLedger,
    Outcome,
    Recorder,
    RepairPolicy,
    RequestContext,
    SchemaExportError,
    SchemaTooLargeError,
    SqliteLedger,
    ToolCall,
    Toolset,
    ToolStream,
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
