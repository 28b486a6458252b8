"""The executor end to end: registration, call styles, refusals, parallel calls, 64-way races."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import time
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from pydantic import BaseModel, SecretStr, ValidationError

from toolwire import MisuseError
from toolwire.execution import (
    BreakerConfig,
    BusinessRuleError,
    Call,
    Claim,
    Clock,
    DeadlineExceeded,
    ExecutionResult,
    Executor,
    FakeClock,
    Ledger,
    MemoryLedger,
    NeedsClarification,
    Observer,
    RequestContext,
    RetryPolicy,
    SqliteLedger,
    ToolContext,
    ToolSpec,
)
from toolwire.execution.idempotency import derive_key, fingerprint
from toolwire.payloads import MESSAGES, tool_messages
from toolwire.validation import FieldError, Outcome

LedgerFactory = Callable[[Clock | None], Ledger]
CONCURRENCY = 64
#: Rounds of the 64-way race per backend; raise it for a soak run (e.g. 10000).
RACE_ROUNDS = int(os.environ.get("TOOLWIRE_RACE_ROUNDS", "200"))


class Ticket(BaseModel):
    title: str
    priority: int = 3


@dataclass(frozen=True)
class Sent:
    """The part of a streamed call `tool_messages` reads."""

    id: str
    ordinal: int = 0
    name: str = "stats"


def quiet_observer() -> Observer:
    logger = logging.getLogger("toolwire.execution.test-quiet")
    logger.setLevel(logging.CRITICAL)
    logger.propagate = False
    return Observer(logger=logger, otel=False)


# ---- registration and call styles ---------------------------------------------------------------


def test_tools_from_a_mapping_and_a_decorator() -> None:
    ex = Executor({"echo": lambda args: dict(args)})

    @ex.tool(side_effects=True, timeout=5.0)
    def create_ticket(ticket: Ticket) -> dict[str, Any]:
        return {"title": ticket.title, "priority": ticket.priority}

    assert set(ex.tools) == {"echo", "create_ticket"}
    assert ex.tools["create_ticket"].side_effects and ex.tools["create_ticket"].timeout == 5.0
    ctx = RequestContext("r", "s")
    assert ex.execute(Call("echo", "c1", {"a": 1}), ctx).value == {"a": 1}
    result = ex.execute(Call("create_ticket", "c2", Ticket(title="x")), ctx)
    assert result.value == {"title": "x", "priority": 3}


def test_toolspec_registration_keeps_options() -> None:
    spec = ToolSpec(lambda args: "ok", side_effects=True, on_stale_in_progress="assume_succeeded")
    ex = Executor({"w": spec})
    assert ex.tools["w"].name == "w" and ex.tools["w"].on_stale_in_progress == "assume_succeeded"
    with pytest.raises(ValueError, match="on_stale_in_progress"):
        ToolSpec(lambda args: None, on_stale_in_progress="hope")  # type: ignore[arg-type]


@pytest.mark.parametrize("setting", ["timeout", "in_progress_expiry", "record_ttl"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 0.0, "5"])
def test_seconds_out_of_range_are_refused_at_registration(setting: str, value: Any) -> None:
    # Taken silently, a NaN timeout read as zero under `execute` (a write lost the race and
    # became an unknown outcome) and -1 failed every call "for want of a worker thread".
    with pytest.raises(ValueError, match=setting):
        ToolSpec(lambda args: None, **{setting: value})
    ex = Executor()
    with pytest.raises(ValueError, match=setting):
        ex.register("t", lambda args: None, **{setting: value})
    assert "t" not in ex.tools


@pytest.mark.parametrize("value", [float("nan"), -1.0, 0])
def test_an_executor_record_ttl_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="record_ttl"):
        Executor(record_ttl=value)


def _refund(args: Any) -> str:  # no `ctx` parameter
    return "refunded"


def _refund_fields(order_id: int) -> str:
    return "refunded"


def _takes_nothing() -> str:
    return "refunded"


@pytest.mark.parametrize(
    ("fn", "options", "says"),
    [
        (_refund, {"context": True}, "ctx"),
        (_refund_fields, {"context": True, "unpack": True}, "ctx"),
        (_takes_nothing, {}, "fn\\(arguments\\)"),
        (123, {}, "not callable"),
        ("refund", {"context": True}, "not callable"),
    ],
)
def test_a_tool_the_executor_could_never_call_is_refused_at_registration(
    fn: Any, options: dict[str, Any], says: str
) -> None:
    # A write registered with context=True whose function has no `ctx` never ran, yet ended
    # as an unknown outcome: the key blocked for good and the breaker charged.
    with pytest.raises(MisuseError, match=says):
        ToolSpec(fn, side_effects=True, **options)
    ex = Executor()
    with pytest.raises(MisuseError, match=says):
        ex.register("refund", fn, side_effects=True, **options)
    assert "refund" not in ex.tools
    if not options:
        with pytest.raises(MisuseError, match=says):
            Executor({"refund": fn})


@pytest.mark.parametrize(
    ("fn", "options"),
    [
        (lambda args, *, ctx: "ok", {"context": True}),
        (lambda args, **kwargs: "ok", {"context": True}),
        (lambda *, ctx, **fields: "ok", {"context": True, "unpack": True}),
        (lambda order_id: "ok", {"unpack": True}),  # the fields are checked per call
        (lambda *args: "ok", {}),
        (print, {}),
    ],
)
def test_a_tool_the_executor_can_call_is_registered(fn: Any, options: dict[str, Any]) -> None:
    assert Executor({"t": ToolSpec(fn, **options)}).tools["t"].fn is fn


def test_unpack_and_context() -> None:
    seen: list[ToolContext] = []
    ex = Executor()

    @ex.tool("pay", side_effects=True, unpack=True, context=True)
    def pay(amount: int, to: str, *, ctx: ToolContext) -> str:
        seen.append(ctx)
        return f"{amount}->{to}"

    result = ex.execute(Call("pay", "call_9", {"amount": 5, "to": "bob"}), RequestContext("r", "s"))
    assert result.value == "5->bob"
    assert seen[0].idempotency_key == result.idempotency_key and seen[0].attempt == 1
    assert seen[0].call_id == "call_9" and seen[0].session_id == "s"


def test_context_deadline_remaining_is_the_attempts_budget() -> None:
    # What the tool may spend on its own downstream calls: its timeout, or less when the
    # request deadline is nearer; None when neither is set.
    seen: list[float | None] = []
    ex = Executor(breaker=False)

    @ex.tool("slow", context=True, timeout=5.0)
    def slow(args: Any, *, ctx: ToolContext) -> str:
        seen.append(ctx.deadline_remaining)
        return "ok"

    @ex.tool("free", context=True)
    def free(args: Any, *, ctx: ToolContext) -> str:
        seen.append(ctx.deadline_remaining)
        return "ok"

    ex.execute(Call("slow", "c1", {}), RequestContext("r", "s"))
    ex.execute(Call("slow", "c2", {}), ex.request("r", "s", timeout=1.0))
    ex.execute(Call("free", "c3", {}), RequestContext("r", "s"))
    assert seen[0] == 5.0
    assert seen[1] is not None and 0.5 < seen[1] <= 1.0
    assert seen[2] is None


def test_unpack_a_model() -> None:
    ex = Executor()
    ex.register("t", lambda title, priority: f"{title}/{priority}", unpack=True)
    assert ex.execute(Call("t", "c", Ticket(title="a"))).value == "a/3"


async def test_async_tools_and_sync_tools_in_a_thread() -> None:
    ex = Executor()

    @ex.tool()
    async def fetch(args: Any) -> str:
        await asyncio.sleep(0)
        return "async"

    @ex.tool()
    def compute(args: Any) -> str:
        return threading.current_thread().name

    assert (await ex.aexecute(Call("fetch", "a", {}))).value == "async"
    thread_name = (await ex.aexecute(Call("compute", "b", {}))).value
    assert thread_name != threading.main_thread().name
    with pytest.raises(TypeError, match="aexecute"):
        ex.execute(Call("fetch", "c", {}))


async def test_async_timeout_cancels_the_tool() -> None:
    cancelled = asyncio.Event()

    async def hang(args: Any) -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    ex = Executor(breaker=False)
    ex.register("w", hang, side_effects=True, timeout=0.02)
    result = await ex.aexecute(Call("w", "c", {}), RequestContext("r", "s"))
    assert result.state == "unknown_outcome" and result.attempts == 1
    await asyncio.wait_for(cancelled.wait(), 1)


@pytest.mark.parametrize("side_effects", [False, True])
async def test_an_attempt_that_completes_when_cancelled_at_its_timeout_keeps_its_value(
    side_effects: bool,
) -> None:
    # A tool that finishes its commit rather than leave it halfway when it is cancelled, and
    # returns: the write is known to have succeeded (not unknown), the read not run again.
    runs: list[int] = []

    async def commit(args: Any) -> dict[str, bool]:
        runs.append(1)
        try:
            await asyncio.Event().wait()  # slower than its timeout
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # the commit's last step
        return {"committed": True}

    ex = Executor(ledger=MemoryLedger(), breaker=False)
    ex.register("commit", commit, side_effects=side_effects, timeout=0.02)
    result = await ex.aexecute(Call("commit", "c", {}), RequestContext("r", "s"))
    assert result.state == "ok" and result.value == {"committed": True}
    assert result.attempts == 1 and runs == [1]
    again = await ex.aexecute(Call("commit", "c", {}), RequestContext("r", "s"))
    assert again.value == {"committed": True}
    assert again.state == ("duplicate_suppressed" if side_effects else "ok")


async def test_a_timed_out_attempt_ends_before_the_next_one_or_the_result() -> None:
    # The cancelled attempt's cleanup awaits: the retry must not start beside it, nor the
    # result be settled while it still runs.
    live: list[int] = []
    running = 0

    async def charge(args: Any) -> None:
        nonlocal running
        running += 1
        live.append(running)
        try:
            await asyncio.sleep(10)
        finally:
            await asyncio.sleep(0.05)
            running -= 1

    ex = Executor(retry=RetryPolicy(backoff_base=0.001, backoff_max=0.001), breaker=False)
    ex.register("charge", charge, side_effects=True, retry_ambiguous=True, timeout=0.02)
    result = await ex.aexecute(Call("charge", "c", {}), RequestContext("r", "s"))
    assert result.attempts == 3 and result.state == "unknown_outcome"
    assert live == [1, 1, 1] and running == 0


async def test_an_attempt_that_ignores_its_cancellation_is_not_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolwire.execution.executor as executor_module

    monkeypatch.setattr(executor_module, "_SETTLE_GRACE", 0.05)
    stop = asyncio.Event()
    attempts = 0

    async def stubborn(args: Any) -> None:
        nonlocal attempts
        attempts += 1
        while not stop.is_set():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                await asyncio.sleep(0.2)  # keeps going however often it is cancelled

    ex = Executor(retry=RetryPolicy(backoff_base=0.001, backoff_max=0.001), breaker=False)
    ex.register("read", stubborn, timeout=0.02)
    result = await ex.aexecute(Call("read", "c", {}), RequestContext("r", "s"))
    assert result.attempts == 1 and attempts == 1 and not result.ok
    stop.set()


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize("side_effects", [False, True])
async def test_a_sync_write_still_running_at_its_timeout_is_not_tried_again(
    asynchronous: bool, side_effects: bool
) -> None:
    # Nothing stops a sync tool's thread: a retry after its timeout ran beside it, three
    # attempts of one write at once with `retry_ambiguous`. A read is retried beside it (the
    # hung attempt may be what a fresh one gets past).
    lock, release = threading.Lock(), threading.Event()
    running = most = starts = 0

    def slow(args: Any) -> str:
        nonlocal running, most, starts
        with lock:
            running, starts = running + 1, starts + 1
            most = max(most, running)
        release.wait(2)
        with lock:
            running -= 1
        return "late"

    ex = Executor(retry=RetryPolicy(backoff_base=0.001, backoff_max=0.001), breaker=False)
    ex.register("t", slow, side_effects=side_effects, retry_ambiguous=True, timeout=0.05)
    call = Call("t", "c", {})
    result = await ex.aexecute(call) if asynchronous else ex.execute(call)
    release.set()
    if side_effects:
        assert result.attempts == 1 and starts == 1 and most == 1
        assert result.state == "unknown_outcome"
    else:
        assert result.attempts == starts == most == 3 and result.state == "downstream_failed"


def test_result_payloads_are_json() -> None:
    ex = Executor({"t": lambda args: {"n": 1}})
    ok = ex.execute(Call("t", "c", {}))
    assert json.loads(ok.content()) == {"ok": True, "result": {"n": 1}}
    missing = ex.execute(Call("nope", "c2", {}))
    assert missing.state == "tool_unavailable"
    body = json.loads(missing.content())
    assert body["ok"] is False and body["error"]["type"] == "unknown_tool"


def _cyclic() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


class _Client:
    """An object returned by mistake, whose repr holds a credential."""

    def __repr__(self) -> str:
        return "<Client postgres://app:hunter2@db/prod>"

    __str__ = __repr__


def test_a_range_or_a_nan_decimal_result_is_written_as_json_reads_it() -> None:
    # A range is a sequence (it was `invalid_result`), a `Decimal("NaN")` null as a float
    # NaN is (it was `"NaN"`), a `None` key `"null"` (it was `"None"`).
    ex = Executor(breaker=False)
    ex.register("r", lambda args: {"pages": range(2), "level": Decimal("NaN"), None: 1})
    result = ex.execute(Call("r", "c0", {}), RequestContext("r", "s"))
    assert result.state == "ok"
    sent = json.loads(result.content())["result"]
    assert sent == {"pages": [0, 1], "level": None, "null": 1}


@pytest.mark.parametrize(
    "make",
    [
        _cyclic,
        lambda: 10**5000,
        lambda: b"\xff\xfe",
        _Client,
        lambda: {"rows": [1], "conn": _Client()},
        lambda: {_Client(): 1},
        lambda: print,
        # Two keys JSON writes as one ("1"): one entry was dropped without a word.
        lambda: {1: "a", "1": "b"},
        lambda: {"rows": [{True: 1, "true": 2}]},
    ],
    ids=[
        "cycle",
        "int-past-digit-limit",
        "non-utf8-bytes",
        "object",
        "object-inside",
        "object-key",
        "function",
        "keys-one-in-json",
        "keys-one-in-json-inside",
    ],
)
def test_unwritable_result_is_a_result_and_never_reruns_the_write(make: Callable[[], Any]) -> None:
    runs: list[int] = []

    def write(args: Any) -> Any:
        runs.append(1)
        return make()

    ledger = MemoryLedger()
    ex = Executor({"w": ToolSpec(write, side_effects=True)}, ledger=ledger, breaker=False)
    ex.register("r", lambda args: make())
    ctx = RequestContext("r", "s")
    read = ex.execute(Call("r", "c0", {}), ctx)
    first = ex.execute(Call("w", "c1", {}), ctx)
    for result in (read, first):
        assert result.state == "downstream_failed"
        body = json.loads(result.content())
        assert body["error"]["type"] == "invalid_result" and body["error"]["retryable"] is False
        # An object's repr was sent as the result: text the tool never meant for the model.
        assert "hunter2" not in result.content()
    (message,) = tool_messages([Sent("c0")], [make()])
    assert json.loads(message["content"])["error_type"] == "invalid_result"
    assert "hunter2" not in message["content"]
    record = ledger.get(first.idempotency_key or "")
    assert record is not None and record.state == "failed"  # not left in progress
    again = ex.execute(Call("w", "c1", {}), ctx)
    assert again.state == "duplicate_suppressed" and not again.ok and runs == [1]


def test_non_finite_floats_in_a_result_are_sent_and_stored_as_null() -> None:
    def reject(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    def stats(args: Any) -> dict[str, Any]:
        return {"mean": float("nan"), "range": [float("-inf"), float("inf")], "label": "NaN"}

    ex = Executor({"stats": ToolSpec(stats, side_effects=True)}, ledger=MemoryLedger())
    first = ex.execute(Call("stats", "c", {}))
    replay = ex.execute(Call("stats", "c", {}))
    expected = {"mean": None, "range": [None, None], "label": "NaN"}
    for result in (first, replay):
        assert json.loads(result.content(), parse_constant=reject)["result"] == expected
    (message,) = tool_messages([Sent("c")], [stats({})])
    assert json.loads(message["content"], parse_constant=reject) == expected


def test_exception_with_a_broken_str_is_a_result() -> None:
    def boom(args: Any) -> None:
        raise _Unprintable

    result = Executor({"t": boom}, breaker=False).execute(Call("t", "c", {}))
    assert result.state == "downstream_failed"
    assert json.loads(result.content())["error"]["type"] == "unknown_error"


class _DownLedger(MemoryLedger):
    def claim(self, key: str, **kwargs: Any) -> Any:
        raise ConnectionError("could not connect to postgres://app:hunter2@db.internal:5432/x")


def test_an_unavailable_ledger_keeps_its_driver_text_from_the_model(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ex = Executor({"w": ToolSpec(lambda args: {}, side_effects=True)}, ledger=_DownLedger())
    with caplog.at_level(logging.WARNING, logger="toolwire.execution"):
        result = ex.execute(Call("w", "c1", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable"
    assert "hunter2" not in result.content() and "db.internal" not in result.content()
    assert "db.internal" in caplog.text, "operators still see it"


class _UnprobeableStatus(Exception):
    @property
    def status_code(self) -> int:
        raise RuntimeError("no status here")


def test_exception_whose_attributes_raise_is_a_result_and_frees_the_breaker() -> None:
    calls: list[int] = []

    def flaky(args: Any) -> dict[str, int]:
        calls.append(1)
        if len(calls) == 1:
            raise _UnprobeableStatus
        return {"n": len(calls)}

    ex = Executor({"t": flaky})
    failed = ex.execute(Call("t", "c1", {}))
    assert failed.state == "downstream_failed"
    assert json.loads(failed.content())["error"]["type"] == "unknown_error"
    breaker = ex.breaker_for("t")
    assert breaker is not None and breaker.snapshot().calls == 1, "the attempt was recorded"
    assert ex.execute(Call("t", "c2", {})).ok


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError(
            'Traceback (most recent call last):\n  File "app.py", line 3\n'
            "Authorization: Bearer sk-live-SECRET"
        ),
        httpx.HTTPStatusError(
            "Server error '503' for url 'https://api.example.com/v1?api_key=SECRET'",
            request=httpx.Request("GET", "https://api.example.com/v1?api_key=SECRET"),
            response=httpx.Response(503),
        ),
        ConnectionRefusedError("connect to postgresql://admin:SECRET@db:5432 refused"),
    ],
    ids=["traceback", "http-status-url", "dsn"],
)
def test_exception_text_never_reaches_the_model(
    exc: BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    def tool(args: Any) -> None:
        raise exc

    ex = Executor({"t": tool}, breaker=False, clock=FakeClock())
    with caplog.at_level(logging.WARNING, logger="toolwire.execution"):
        result = ex.execute(Call("t", "c", {}))
    content = result.content()
    assert "SECRET" not in content and "Traceback" not in content
    body = json.loads(content)["error"]
    assert body["type"] != "" and isinstance(body["message"], str) and body["message"]
    assert "SECRET" in caplog.text  # operators still see what happened


def test_business_rule_text_still_reaches_the_model() -> None:
    def tool(args: Any) -> None:
        raise BusinessRuleError("refund exceeds the order total", "max 20 EUR")

    body = json.loads(Executor({"t": tool}).execute(Call("t", "c", {})).content())["error"]
    assert body["message"] == "refund exceeds the order total; max 20 EUR"
    assert body["reasons"] == ["refund exceeds the order total", "max 20 EUR"]


def test_business_rule_raised_without_a_reason_reads_as_a_sentence() -> None:
    def tool(args: Any) -> None:
        raise BusinessRuleError()

    body = json.loads(Executor({"t": tool}).execute(Call("t", "c", {})).content())["error"]
    assert body["type"] == "business_rule" and body["retryable"] is False
    assert body["message"] == "The request was rejected." and body["reasons"] == []


async def test_sync_callable_returning_a_coroutine_is_never_reported_done() -> None:
    ran: list[int] = []

    async def work(args: Any) -> str:
        ran.append(1)
        return "done"

    ex = Executor(breaker=False)
    ex.register("t", lambda args: work(args))  # looks sync, returns a coroutine
    assert (await ex.aexecute(Call("t", "a", {}))).value == "done" and ran == [1]
    refused = ex.execute(Call("t", "b", {}))
    assert refused.state == "downstream_failed" and not refused.ok
    assert ran == [1]


@pytest.mark.parametrize("timeout", [None, 5.0])
async def test_sync_tool_raising_stop_iteration_in_aexecute_ends_its_call(
    timeout: float | None,
) -> None:
    # asyncio cannot put StopIteration into a future: without care the worker thread's
    # exception is dropped and the call hangs (or, with a timeout, is retried as a timeout).
    runs: list[int] = []

    def tool(args: Any) -> Any:
        runs.append(1)
        return next(iter(()))  # StopIteration, as a stray next() in a tool raises it

    ex = Executor({"t": ToolSpec(tool, timeout=timeout)}, breaker=False)
    result = await asyncio.wait_for(ex.aexecute(Call("t", "c", {})), 2.0)
    assert result.state == "downstream_failed" and result.attempts == 1 and runs == [1]
    assert result.error is not None and result.error["type"] == "unknown_error"


@pytest.mark.parametrize("timeout", [None, 5.0])
@pytest.mark.parametrize("is_async", [True, False])
async def test_a_tool_raising_stop_async_iteration_fails_in_aexecute(
    timeout: float | None, is_async: bool
) -> None:
    # `await anext(rows)` on an empty stream: escaping an attempt of tenacity's `async for`,
    # it ended the retry loop as if the attempts were over, and the call came back `ok` with
    # no value, a write recorded as succeeded (and every replay answered `ok`).
    runs: list[int] = []

    async def empty() -> AsyncGenerator[int, None]:
        return
        yield

    async def read_async(args: Any) -> Any:
        runs.append(1)
        return await anext(empty())

    def read_sync(args: Any) -> Any:
        runs.append(1)
        raise StopAsyncIteration

    tool = read_async if is_async else read_sync
    ex = Executor(
        {
            "read": ToolSpec(tool, timeout=timeout),
            "write": ToolSpec(tool, timeout=timeout, side_effects=True),
        },
        breaker=False,
    )
    read = await asyncio.wait_for(ex.aexecute(Call("read", "c1", {})), 2.0)
    assert read.state == "downstream_failed" and not read.ok and read.attempts == 1
    assert read.error is not None and read.error["type"] == "unknown_error"
    write = await asyncio.wait_for(ex.aexecute(Call("write", "c2", {})), 2.0)
    assert write.state == "unknown_outcome" and not write.ok
    again = await asyncio.wait_for(ex.aexecute(Call("write", "c2", {})), 2.0)
    assert again.state == "unknown_outcome" and runs == [1, 1]


@pytest.mark.parametrize("timeout", [None, 5.0])
async def test_sync_tool_raising_generator_exit_in_aexecute_all_ends_with_one_result(
    timeout: float | None,
) -> None:
    # A GeneratorExit thrown into the awaiting coroutines closes them: without care the settled
    # result is dropped, the exception escapes and the call is recorded twice.
    def tool(args: Any) -> Any:
        raise GeneratorExit

    ex = Executor({"t": ToolSpec(tool, timeout=timeout), "ok": lambda args: 1}, breaker=False)
    alone = await asyncio.wait_for(ex.aexecute(Call("t", "c0", {})), 2.0)
    assert alone.state == "downstream_failed" and alone.attempts == 1
    results = await asyncio.wait_for(
        ex.aexecute_all([Call("t", "c1", {}), Call("ok", "c2", {})]), 2.0
    )
    assert [r.state for r in results] == ["downstream_failed", "ok"]
    assert results[0].error is not None and results[0].error["type"] == "unknown_error"
    assert ex.observer.counts["calls"] == 3


def test_timings_and_coercions_are_passed_through() -> None:
    ex = Executor({"t": lambda args: 1})
    result = ex.execute(Call("t", "c", {}), parse_time=0.001, validation_time=0.002, coercions=2)
    assert result.timings.parse == 0.001 and result.timings.validation == 0.002
    assert result.timings.total >= result.timings.execution >= 0


# ---- the validation layer's Outcome -----------------------------------------------------------


def test_accepts_the_validation_outcome() -> None:
    runs: list[Any] = []
    ex = Executor({"create": lambda args: runs.append(args) or "made", "plain": dict})
    model_call = Outcome(ok=True, kind="ok", tool="create", call_id="c1", model=Ticket(title="t"))
    assert ex.execute(model_call).value == "made" and isinstance(runs[0], Ticket)
    dict_call = Outcome(ok=True, kind="ok", tool="plain", call_id="c2", value={"a": 1})
    assert ex.execute(dict_call).value == {"a": 1}


@pytest.mark.parametrize(
    ("outcome", "state", "slug"),
    [
        (
            Outcome(ok=False, kind="model_error", tool="t", call_id="c", error_type="truncated"),
            "parse_failed",
            "truncated",
        ),
        (
            Outcome(
                ok=False,
                kind="model_error",
                tool="t",
                call_id="c",
                error_type="validation",
                errors=[FieldError(path="/priority", code="type", expected="integer")],
                retryable=True,
            ),
            "validation_failed",
            "validation",
        ),
        (
            Outcome(
                ok=False,
                kind="needs_clarification",
                tool="t",
                call_id="c",
                error_type="needs_clarification",
                ask_user=["account_id"],
            ),
            "needs_clarification",
            "needs_clarification",
        ),
        (
            Outcome(
                ok=False, kind="business_error", tool="t", call_id="c", error_type="business_rule"
            ),
            "validation_failed",
            "business_rule",
        ),
        (
            Call(
                "t",
                "c",
                None,
                raw_arguments='{"a": ',
                ok=False,
                kind="model_error",
                errors=[{"type": "json_invalid", "loc": (), "msg": "EOF"}],
            ),
            "parse_failed",
            "parse_failed",
        ),
    ],
)
def test_refused_calls_are_never_executed(outcome: Any, state: str, slug: str) -> None:
    runs: list[Any] = []
    ex = Executor({"t": lambda args: runs.append(args)})
    result = ex.execute(outcome)
    assert result.state == state and runs == [] and result.attempts == 0
    assert result.error is not None and result.error["type"] == slug
    if state == "needs_clarification":
        assert result.error["missing"] == ["account_id"]
    if slug == "validation":
        assert result.error["errors"] == [
            {"path": "/priority", "code": "type", "expected": "integer"}
        ]
        assert result.error["retryable"] is True


def test_refusal_of_an_outcome_keeps_its_hint_and_instruction() -> None:
    from toolwire import Assembler, Toolset

    tools = Toolset([Ticket])
    asm = Assembler(tools=tools)
    asm.feed(0, id="c", name="ticket", arguments='{"title": "Printer j')  # cut by max_tokens
    outcome = tools.validate(asm.finish()[0])
    result = Executor({"ticket": lambda args: None}).execute(outcome)
    assert result.state == "parse_failed" and result.error is not None
    sent = json.loads(outcome.to_message(style="openai-chat")["content"])
    assert result.error["hint"] == sent["hint"] and "shorter" in sent["hint"]
    assert result.error["instruction"] == sent["instruction"]


def test_refusal_from_pydantic_errors_is_short_and_keeps_the_arguments_out() -> None:
    class Login(BaseModel):
        user: str
        password: SecretStr
        pin: int

    raw = json.dumps({"user": "bob", "password": "hunter2", "note": "x" * 2000})
    with pytest.raises(ValidationError) as info:
        Login.model_validate_json(raw)
    call = Call(
        "login", "c", raw_arguments=raw, ok=False, kind="model_error", errors=info.value.errors()
    )
    result = Executor({"login": lambda args: None}).execute(call)
    assert result.state == "validation_failed" and result.error is not None
    assert result.error["errors"] == [
        {"path": "/pin", "code": "missing", "message": "Field required"}
    ]
    content = result.content()
    assert "hunter2" not in content and "errors.pydantic.dev" not in content
    assert len(content) < 400


@dataclass(frozen=True)
class _CheckedElsewhere:
    """A call validated by the application, with the secrets its own schema declares."""

    tool: str
    call_id: str | None
    errors: list[dict[str, Any]]
    ask_user: list[str]
    secrets: tuple[SecretStr, ...]
    model: Any = None
    ok: bool = False
    kind: str = "model_error"


def test_refusal_hides_a_secret_sent_again_as_a_key(caplog: pytest.LogCaptureFixture) -> None:
    # `Outcome`'s own paths hide such a key; a call the application validated carries its
    # error dicts' `loc` and the fields to ask about as the model sent them.
    call = _CheckedElsewhere(
        "login",
        "c",
        errors=[
            {"type": "extra_forbidden", "loc": ("sk-live-9999",), "msg": "Extra inputs"},
            {"type": "int_type", "loc": ("pins", 0), "msg": "Input should be an integer"},
        ],
        ask_user=["contact.sk-live-9999", "pins.0"],
        secrets=(SecretStr("sk-live-9999"), SecretStr("0")),
    )
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        result = Executor({"login": lambda args: None}).execute(call)
    assert result.state == "validation_failed" and result.error is not None
    # An index stays, though it is a short secret's text: only keys quote what was sent.
    paths = [e["path"] for e in result.error["errors"]]
    assert paths == ["/[redacted]", "/pins/0"]
    assert result.error["missing"] == ["contact.[redacted]", "pins.0"]
    assert "9999" not in result.content() + caplog.text


# ---- parallel calls -----------------------------------------------------------------------------


def mixed_executor() -> Executor:
    req = httpx.Request("POST", "http://127.0.0.1/")

    def reject(args: Any) -> None:
        raise httpx.HTTPStatusError("422", request=req, response=httpx.Response(422, request=req))

    ex = Executor(breaker=False)
    ex.register("ok", lambda args: args["n"])
    ex.register("bad", reject)
    ex.register("write", lambda args: args["n"], side_effects=True)
    return ex


CALLS = [
    Call("ok", "a", {"n": 1}),
    Call("bad", "b", {"n": 2}),
    Call("write", "c", {"n": 3}),
    Call("missing", "d", {"n": 4}),
    Call("ok", "e", {"n": 5}),
]


@pytest.mark.parametrize("workers", [None, 4])
def test_execute_all_one_result_per_call_in_order(workers: int | None) -> None:
    results = mixed_executor().execute_all(CALLS, RequestContext("r", "s"), max_workers=workers)
    assert [r.call_id for r in results] == ["a", "b", "c", "d", "e"]
    assert [r.state for r in results] == [
        "ok",
        "downstream_failed",
        "ok",
        "tool_unavailable",
        "ok",
    ]
    assert [r.value for r in results if r.ok] == [1, 3, 5]  # failures roll nothing back


@pytest.mark.parametrize("threads", [0, 1])
def test_execute_all_without_threads_to_be_had_still_answers_every_call_once(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    # The process at its thread limit: the pool starts `threads` workers, then `submit`
    # raises after queueing the call (which a worker may still take). Each call runs once,
    # in the pool or in the caller's thread, and has its result.
    start = threading.Thread.start
    started: list[str] = []

    def limited(thread: threading.Thread) -> None:
        if thread.name.startswith("toolwire_"):
            if len(started) == threads:
                raise RuntimeError("can't start new thread")
            started.append(thread.name)
        start(thread)

    runs: list[int] = []
    lock = threading.Lock()

    def write(args: Any) -> int:
        with lock:
            runs.append(args["n"])
        return args["n"]

    ex = Executor(breaker=False, ledger=MemoryLedger())
    ex.register("w", write, side_effects=True)
    calls = [Call("w", f"c{n}", {"n": n}) for n in range(6)]
    monkeypatch.setattr(threading.Thread, "start", limited)
    results = ex.execute_all(calls, RequestContext("r", "s"), max_workers=4)
    monkeypatch.undo()
    assert [(r.call_id, r.state, r.value) for r in results] == [
        (f"c{n}", "ok", n) for n in range(6)
    ]
    assert sorted(runs) == list(range(6)) and ex.observer.counts["calls"] == 6


@pytest.mark.parametrize("workers", [None, 4])
def test_execute_all_answers_a_sync_tool_that_raised_cancelled_error(workers: int | None) -> None:
    # A sync tool running its own event loop can raise CancelledError; nobody cancelled the
    # synchronous caller, so every call still gets its result (a write: unknown outcome).
    runs: list[str] = []

    def inner_cancelled(args: Any) -> None:
        runs.append(args["n"])

        async def work() -> None:
            raise asyncio.CancelledError

        asyncio.run(work())

    ex = mixed_executor()
    ex.register("cancelled", inner_cancelled)
    ex.register("cancelled_write", inner_cancelled, side_effects=True)
    calls = [*CALLS, Call("cancelled", "f", {"n": "f"}), Call("cancelled_write", "g", {"n": "g"})]
    results = ex.execute_all([calls[5], *calls[:5], calls[6]], max_workers=workers)
    assert [r.call_id for r in results] == ["f", "a", "b", "c", "d", "e", "g"]
    assert [r.state for r in results] == [
        "downstream_failed",
        "ok",
        "downstream_failed",
        "ok",
        "tool_unavailable",
        "ok",
        "unknown_outcome",
    ]
    assert results[0].error is not None and results[0].error["type"] == "cancelled"
    assert sorted(runs) == ["f", "g"] and ex.observer.counts["calls"] == 7
    again = ex.execute(Call("cancelled_write", "g", {"n": "g"}))
    assert again.state == "unknown_outcome" and sorted(runs) == ["f", "g"]
    # `execute` alone answers it too: nothing cancels a synchronous caller from outside.
    alone = ex.execute(Call("cancelled", "h", {"n": "h"}))
    assert alone.state == "downstream_failed" and sorted(runs) == ["f", "g", "h"]


async def test_aexecute_all_one_result_per_call_in_order() -> None:
    ex = mixed_executor()

    async def explode(args: Any) -> None:
        raise asyncio.CancelledError  # a tool cancelling itself is not our caller's cancel

    ex.register("explode", explode)
    calls = [*CALLS, Call("explode", "f", {})]
    results = await ex.aexecute_all(calls, RequestContext("r", "s"))
    assert [r.call_id for r in results] == ["a", "b", "c", "d", "e", "f"]
    assert [r.state for r in results][:5] == [
        "ok",
        "downstream_failed",
        "ok",
        "tool_unavailable",
        "ok",
    ]
    assert results[5].state == "downstream_failed"
    assert results[5].error is not None and results[5].error["type"] == "cancelled"


@pytest.mark.skipif(
    not hasattr(asyncio.Task, "cancelling"), reason="needs Task.cancelling (Python 3.11+)"
)
@pytest.mark.parametrize("entry", ["aexecute", "aexecute_all"])
async def test_write_whose_tool_raises_cancelled_error_is_an_unknown_outcome(entry: str) -> None:
    # The tool awaits work someone else cancelled; our caller was not cancelled. The write may
    # have happened, so the model must hear "unknown outcome", not just "cancelled".
    shared = asyncio.get_running_loop().create_future()
    shared.cancel()
    runs: list[int] = []

    async def charge(args: Any) -> None:
        runs.append(1)
        await shared

    ex = Executor({"charge": ToolSpec(charge, side_effects=True)}, ledger=MemoryLedger())
    call = Call("charge", "c", {"amount": 5})
    result = await ex.aexecute(call) if entry == "aexecute" else (await ex.aexecute_all([call]))[0]
    assert result.state == "unknown_outcome" and result.attempts == 1 and runs == [1]
    again = await ex.aexecute(Call("charge", "c", {"amount": 5}))
    assert again.state == "unknown_outcome" and runs == [1]  # settled, not left claimed


@pytest.mark.skipif(
    not hasattr(asyncio.Task, "cancelling"), reason="needs Task.cancelling (Python 3.11+)"
)
@pytest.mark.parametrize("timeout", [None, 5.0])
async def test_aexecute_answers_a_tool_that_raised_cancelled_error(timeout: float | None) -> None:
    # Another component cancels what the tool awaits (a closed HTTP pool, a torn-down shared
    # task). Nobody cancelled the caller: it gets the call's result, as from `execute` and
    # `aexecute_all`, and its task goes on. Cancelling the caller still propagates.
    async def lookup(args: Any) -> None:
        awaited = asyncio.get_running_loop().create_future()
        if args["torn_down"]:
            asyncio.get_running_loop().call_soon(awaited.cancel)
        await awaited

    ex = Executor({"lookup": ToolSpec(lookup, timeout=timeout)}, observer=quiet_observer())
    result = await ex.aexecute(Call("lookup", "c1", {"torn_down": True}))
    assert (result.state, result.attempts) == ("downstream_failed", 1)
    assert result.error is not None and result.error["type"] == "cancelled"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # not cancelled: the caller goes on
    caller = asyncio.ensure_future(ex.aexecute(Call("lookup", "c2", {"torn_down": False})))
    await asyncio.sleep(0.01)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert ex.observer.counts["calls.downstream_failed"] == 2


async def test_aexecute_all_caller_cancellation_propagates() -> None:
    ex = Executor()

    async def slow(args: Any) -> None:
        await asyncio.sleep(10)

    ex.register("slow", slow)
    task = asyncio.create_task(ex.aexecute_all([Call("slow", str(i), {}) for i in range(5)]))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("concurrency", [None, 3])
async def test_cancelling_aexecute_all_records_every_call_once(
    concurrency: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    # With a concurrency limit most calls are still queued when the caller is cancelled.
    ex = Executor(breaker=False)

    async def slow(args: Any) -> None:
        await asyncio.sleep(10)

    ex.register("slow", slow)
    calls = [Call("slow", f"c{i}", {}) for i in range(12)]
    task = asyncio.create_task(ex.aexecute_all(calls, concurrency=concurrency))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ex.observer.counts["calls"] == len(calls)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_claim_landing_after_cancel_is_released_even_when_the_loop_ends(tmp_path: Path) -> None:
    # The caller is cancelled while a blocking ledger is still claiming; then the event loop
    # ends (asyncio.run cancels every task left). The claim must not stay in progress: its
    # lease would expire into an "unknown outcome" for a write that never ran.
    class SlowClaims(SqliteLedger):
        def claim(self, key: str, **options: Any) -> Claim:
            time.sleep(0.2)
            return super().claim(key, **options)

    def tool(args: Any) -> int:
        return 1

    path = tmp_path / "ledger.db"
    ex = Executor({"w": ToolSpec(tool, side_effects=True)}, ledger=SlowClaims(path))

    async def cancel_during_claim() -> None:
        task = asyncio.ensure_future(ex.aexecute(Call("w", "c", {})))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_during_claim())
    result = Executor({"w": ToolSpec(tool, side_effects=True)}, ledger=SqliteLedger(path)).execute(
        Call("w", "c", {})
    )
    assert result.state == "ok" and result.attempts == 1


async def test_cancellation_during_the_claim_is_recorded_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class SlowClaims(SqliteLedger):
        def claim(self, key: str, **options: Any) -> Claim:
            time.sleep(0.1)
            return super().claim(key, **options)

    async def tool(args: Any) -> int:
        return 1

    ex = Executor({"w": ToolSpec(tool, side_effects=True)}, ledger=SlowClaims(tmp_path / "l.db"))
    with caplog.at_level(logging.INFO, logger="toolwire.execution"):
        task = asyncio.ensure_future(ex.aexecute(Call("w", "c", {})))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    records = [r.__dict__["toolwire"] for r in caplog.records if hasattr(r, "toolwire")]
    assert [(r["call_id"], r["state"], r["error_type"], r["attempts"]) for r in records] == [
        ("c", "downstream_failed", "cancelled", 0)
    ]
    await asyncio.sleep(0.15)  # the claim landing late is given back by its thread
    result = await ex.aexecute(Call("w", "c", {}))
    assert result.state == "ok" and result.attempts == 1


# ---- 64 concurrent executions of one call key, per backend ------------------------------------


class Effect:
    """A side effect that counts its executions per key, thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, int] = {}

    def __call__(self, args: Any) -> str:
        key = args["round"]
        with self.lock:
            self.runs[key] = self.runs.get(key, 0) + 1
        return key


def assert_round(results: list[ExecutionResult], effect: Effect, key: str) -> None:
    assert effect.runs.get(key) == 1, f"round {key}: {effect.runs.get(key)} executions"
    states = sorted(r.state for r in results)
    assert states.count("ok") == 1
    assert set(states) <= {"ok", "in_progress", "duplicate_suppressed"}
    winner = next(r for r in results if r.state == "ok")
    assert all(r.value == winner.value for r in results if r.state == "duplicate_suppressed")


def test_64_threads_execute_one_key_exactly_once(make_ledger: LedgerFactory) -> None:
    effect = Effect()
    ex = Executor(ledger=make_ledger(None), observer=quiet_observer(), breaker=False)
    ex.register("charge", effect, side_effects=True)
    ctx = RequestContext("r", "session")
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        for n in range(RACE_ROUNDS):
            key = f"r{n}"
            barrier = threading.Barrier(CONCURRENCY)

            def run(key: str = key, barrier: threading.Barrier = barrier) -> ExecutionResult:
                barrier.wait()
                return ex.execute(Call("charge", f"call_{key}", {"round": key}), ctx)

            results = list(pool.map(lambda _: run(), range(CONCURRENCY)))
            assert_round(results, effect, key)
    assert sum(effect.runs.values()) == RACE_ROUNDS


def test_64_tasks_execute_one_key_exactly_once(make_ledger: LedgerFactory) -> None:
    effect = Effect()
    ex = Executor(ledger=make_ledger(None), observer=quiet_observer(), breaker=False)

    async def charge(args: Any) -> str:
        await asyncio.sleep(0)  # let the other tasks race while this one "executes"
        return effect(args)

    ex.register("charge", charge, side_effects=True)
    ctx = RequestContext("r", "session")

    async def rounds() -> None:
        for n in range(RACE_ROUNDS):
            key = f"r{n}"
            call = Call("charge", f"call_{key}", {"round": key})
            results = await asyncio.gather(*(ex.aexecute(call, ctx) for _ in range(CONCURRENCY)))
            assert_round(list(results), effect, key)

    asyncio.run(rounds())
    assert sum(effect.runs.values()) == RACE_ROUNDS


def test_memory_ledger_default_is_announced(caplog: pytest.LogCaptureFixture) -> None:
    ex = Executor({"w": ToolSpec(lambda args: 1, side_effects=True)})
    with caplog.at_level(logging.WARNING, logger="toolwire.execution"):
        ex.execute(Call("w", "c", {}))
    assert isinstance(ex.ledger, MemoryLedger)
    assert any("no idempotency ledger" in r.getMessage() for r in caplog.records)


def test_fake_clock_sleeps_are_recorded() -> None:
    clock = FakeClock()
    clock.sleep(2.0)
    assert clock.sleeps == [2.0] and clock.monotonic() == 1002.0


async def test_sync_wrapper_around_an_async_write_under_execute_runs_nothing() -> None:
    # A lambda around an async function looks synchronous; under execute() its coroutine is
    # closed unstarted. That is no attempt: the key stays free for aexecute, which runs it once.
    runs: list[int] = []

    async def charge(args: Any) -> str:
        runs.append(args["amount"])
        return "charged"

    breaker = BreakerConfig(minimum_calls=1, window_size=1)
    ex = Executor(ledger=MemoryLedger(), breaker=breaker)
    ex.register("charge", lambda args: charge(args), side_effects=True)
    misused = ex.execute(Call("charge", "c", {"amount": 5}))
    assert misused.state == "downstream_failed" and misused.attempts == 0 and runs == []
    assert not misused.duplicate_execution
    breaker_for = ex.breaker_for("charge")
    assert breaker_for is not None and breaker_for.state == "closed"
    result = await ex.aexecute(Call("charge", "c", {"amount": 5}))
    assert result.state == "ok" and result.value == "charged" and runs == [5]


def test_texts_for_the_model_follow_the_executor_language() -> None:
    # A zh deployment gets zh validation payloads from its Toolset; the executor's own texts
    # (unknown tool, a failing downstream, a timeout) must not switch back to English.
    def flaky(args: Any) -> None:
        raise httpx.ConnectError("refused")

    def slow(args: Any) -> None:
        time.sleep(0.5)

    tools = {"flaky": flaky, "slow": ToolSpec(slow, timeout=0.05)}
    zh = Executor(tools, lang="zh", breaker=False, observer=quiet_observer())
    en = Executor(tools, breaker=False, observer=quiet_observer())
    for name in ("nope", "flaky", "slow"):
        zh_body = json.loads(zh.execute(Call(name, "c", {})).content())["error"]
        en_body = json.loads(en.execute(Call(name, "c", {})).content())["error"]
        assert zh_body["type"] == en_body["type"]
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh_body["message"]), zh_body
        assert zh_body["message"] != en_body["message"]


def test_every_execution_text_has_each_language() -> None:
    keys = [k for k in MESSAGES if k.startswith("exec.")]
    assert len(keys) > 20
    assert all(set(MESSAGES[k]) == {"en", "zh"} for k in keys)


class _Login(BaseModel):
    user: str
    password: SecretStr


@pytest.mark.parametrize(
    ("secret", "fail"),
    [
        # `KeyError` quotes its key with `repr`: backslashes doubled.
        (r"C:\vault\k3y", lambda s: KeyError(s)),
        # A JSON payload echoed in a business rule: quote and non-ASCII escaped.
        ('pa"ss-wörd', lambda s: BusinessRuleError("rejected: " + json.dumps({"password": s}))),
        # A connection error naming the URL it tried: the secret URL-quoted.
        ("ab+c/d=", lambda s: ConnectionError("GET https://x/?k=" + quote(s, safe=""))),
        # In a path: `quote`'s default keeps the slashes of a base64-style token.
        ("tok_9f8e/7d6c+5b4a==", lambda s: BusinessRuleError("declined by https://x/" + quote(s))),
        # With lowercase %-escapes, as some clients and proxies write them.
        ("ab+c/d=", lambda s: ConnectionError("GET https://x/?k=" + _lower_escapes(quote(s)))),
        # The bytes of a non-ASCII secret, as a tool that encodes it quotes them.
        ("pässwört-1", lambda s: ValueError(f"bad key {s.encode()!r}")),
    ],
)
def test_a_secret_quoted_or_escaped_is_scrubbed_too(
    secret: str, fail: Callable[[str], Exception], caplog: pytest.LogCaptureFixture
) -> None:
    def tool(args: _Login) -> None:
        raise fail(args.password.get_secret_value())

    executor = Executor({"login": tool}, breaker=False)
    with caplog.at_level(logging.DEBUG, logger="toolwire"):
        result = executor.execute(
            Call("login", "c1", _Login(user="ann", password=SecretStr(secret))),
            RequestContext("r"),
        )
    shown = caplog.text + json.dumps(result.content())
    for form in (
        secret,
        repr(secret)[1:-1],
        json.dumps(secret)[1:-1],
        quote(secret, safe=""),
        quote(secret),
        _lower_escapes(quote(secret)),
        repr(secret.encode())[2:-1],
    ):
        assert form not in shown
    assert "[redacted]" in shown


def _lower_escapes(url: str) -> str:
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), url)


class _Declined(BusinessRuleError):
    """A subclass that skips `BusinessRuleError.__init__`: it has no `reasons`."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)


class _Which(NeedsClarification):
    """A subclass that skips `NeedsClarification.__init__`: no `message`, no `missing`."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)


@pytest.mark.parametrize("raised", [_Declined("card declined"), _Which("which city?")])
def test_a_rejection_subclass_without_its_fields_is_recorded_not_raised(
    raised: Exception,
) -> None:
    # Reading the missing fields raised out of `execute` and left the write's claim in progress,
    # so the same call was answered `in_progress` forever after.
    ex = Executor(ledger=MemoryLedger())

    def tool(args: Any) -> None:
        raise raised

    ex.register("t", tool, side_effects=True)
    first = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    body = json.loads(first.content())["error"]
    assert body["message"] == str(raised)
    again = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert again.state != "in_progress"


class _Unprintable:
    """A value whose text cannot be had: ``str()`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_a_missing_field_without_text_is_recorded_not_raised() -> None:
    # A `NeedsClarification` naming a field whose `str()` raises (a tool passing its field
    # objects, not their names) raised out of `execute` and left the write's claim in
    # progress, so the same call was answered `in_progress` until the lease ran out.
    ex = Executor(ledger=MemoryLedger())
    asked: list[int] = []

    def tool(args: Any) -> str:
        asked.append(1)
        if len(asked) == 1:
            raise NeedsClarification("which account?", missing=[_Unprintable(), "account_id"])  # type: ignore[list-item]
        return "done"

    ex.register("t", tool, side_effects=True)
    first = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert first.state == "needs_clarification"
    assert first.error is not None and first.error["missing"] == ["account_id"]
    # Nothing was written: the claim was given back, and the same call runs once answered.
    again = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert (again.state, again.value) == ("ok", "done")


async def test_a_generator_a_tool_returns_runs_inside_its_attempt(clock: FakeClock) -> None:
    # Its work is the tool's: bound by the timeout and retried, not run later when the result
    # is written (which took 1 s past a 0.1 s timeout and reported success).
    def slow_rows(args: Any) -> Any:
        def rows() -> Any:
            time.sleep(0.5)
            yield {"row": 1}

        return rows()

    ran: list[int] = []

    async def charge(args: Any) -> Any:
        ran.append(1)
        yield {"charged": True}

    ex = Executor(clock=clock, breaker=False)
    ex.register("rows", slow_rows, timeout=0.05)
    ex.register("quick", lambda args: (n for n in (1, 2)))
    ex.register("charge", charge, side_effects=True)
    assert ex.execute(Call("rows", "a", {})).state == "downstream_failed"
    assert json.loads(ex.execute(Call("quick", "b", {})).content())["result"] == [1, 2]
    # An async generator never starts under `execute` (as a returned coroutine), and runs to
    # its end under `aexecute`.
    assert ex.execute(Call("charge", "c", {})).state == "downstream_failed" and ran == []
    done = await ex.aexecute(Call("charge", "d", {}))
    assert done.ok and done.value == [{"charged": True}] and ran == [1]


async def test_a_lazy_iterator_a_tool_returns_runs_inside_its_attempt(clock: FakeClock) -> None:
    # Only generators were run inside the attempt: a `map` (or `filter`, `iter(...)`) holding
    # the tool's work ran when the result was written, past the timeout, and the call
    # reported success after it.
    def slow(row: int) -> dict[str, int]:
        time.sleep(0.3)
        return {"row": row}

    ex = Executor(clock=clock, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register("rows", lambda args: map(slow, [1, 2, 3]), timeout=0.05)
    ex.register("quick", lambda args: filter(None, [0, 1, 2]))
    for result in (
        ex.execute(Call("rows", "a", {})),
        await ex.aexecute(Call("rows", "b", {})),
    ):
        assert result.state == "downstream_failed" and result.error is not None
        assert result.error["type"] == "timeout"
    assert ex.execute(Call("quick", "c", {})).value == [1, 2]
    assert (await ex.aexecute(Call("quick", "d", {}))).value == [1, 2]


async def test_an_async_iterator_a_tool_returns_runs_inside_its_attempt(clock: FakeClock) -> None:
    # Only async generators were drained: a class with `__aiter__`/`__anext__` (a driver's
    # cursor) was taken for the result itself and ended as invalid_result, its rows unread.
    class Rows:
        def __init__(self, slow: bool) -> None:
            self.left, self.slow = [1, 2, 3], slow

        def __aiter__(self) -> Rows:
            return self

        async def __anext__(self) -> dict[str, int]:
            if not self.left:
                raise StopAsyncIteration
            if self.slow:
                await asyncio.sleep(0.3)
            return {"row": self.left.pop(0)}

    async def rows(args: dict[str, bool]) -> Rows:
        return Rows(args["slow"])

    ex = Executor(clock=clock, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register("rows", rows, timeout=0.05)
    ex.register("sync_rows", lambda args: Rows(False))
    quick = await ex.aexecute(Call("rows", "a", {"slow": False}))
    assert (quick.state, quick.value) == ("ok", [{"row": 1}, {"row": 2}, {"row": 3}])
    assert (await ex.aexecute(Call("sync_rows", "b", {}))).value == [
        {"row": 1},
        {"row": 2},
        {"row": 3},
    ]
    slow = await ex.aexecute(Call("rows", "c", {"slow": True}))
    assert slow.state == "downstream_failed" and slow.error is not None
    assert slow.error["type"] == "timeout"


def test_an_async_iterator_refused_under_execute_is_closed_without_a_stray_coroutine(
    clock: FakeClock,
) -> None:
    # A sync `execute` refuses an async iterator and closes it; a driver's cursor whose
    # `close` is `async def` only made a coroutine there, left pending (a RuntimeWarning when
    # collected, "never awaited").
    made: list[Any] = []

    class Cursor:
        def __aiter__(self) -> Cursor:
            return self

        async def __anext__(self) -> int:
            raise StopAsyncIteration

        def close(self) -> Any:
            async def closing() -> None:
                return None

            made.append(closing())
            return made[-1]

    ex = Executor(clock=clock, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register("cursor", lambda args: Cursor())
    result = ex.execute(Call("cursor", "a", {}))
    assert result.state == "downstream_failed" and result.error is not None
    (coroutine,) = made
    # Closed, not left pending: a coroutine closed before it ran has no frame.
    assert coroutine.cr_frame is None


class Charge(BaseModel):
    amount: int
    pin: SecretStr


def test_a_fingerprint_key_keeps_keys_and_fingerprints_unguessable() -> None:
    # Without a call id, a write's key comes from its arguments' fingerprint: unkeyed, whoever
    # sees the key can try the 10,000 PINs against it; under a deployment key they cannot.
    ctx = RequestContext("req", "sess")
    arguments = Charge(amount=5, pin=SecretStr("4821"))
    runs: list[int] = []

    def charge(args: Charge) -> str:
        runs.append(args.amount)
        return "charged"

    def run(key: bytes | None) -> tuple[ExecutionResult, ExecutionResult, MemoryLedger]:
        ledger = MemoryLedger()
        ex = Executor(
            {"charge": ToolSpec(charge, side_effects=True)},
            ledger=ledger,
            breaker=False,
            fingerprint_key=key,
        )
        return (
            ex.execute(Call("charge", None, arguments), ctx),
            ex.execute(Call("charge", None, arguments), ctx),
            ledger,
        )

    plain_first, plain_again, _ = run(None)
    keyed_first, keyed_again, ledger = run(b"k" * 32)
    assert plain_first.ok and keyed_first.ok
    # Deduplication works the same way with the key.
    assert plain_again.state == keyed_again.state == "duplicate_suppressed"
    assert runs == [5, 5]

    def guessed_key(pin: str) -> str:
        guess = fingerprint({"amount": 5, "pin": pin})
        return derive_key(
            tool="charge", session_id="sess", request_id="req", arguments_fingerprint=guess
        )

    assert plain_first.idempotency_key == guessed_key("4821")  # what the key fixes
    assert keyed_first.idempotency_key not in {guessed_key(f"{n:04d}") for n in range(10_000)}
    record = ledger.get(keyed_first.idempotency_key or "")
    assert record is not None
    assert record.fingerprint != fingerprint({"amount": 5, "pin": "4821"})
    assert record.fingerprint == fingerprint({"amount": 5, "pin": "4821"}, b"k" * 32)


@pytest.mark.parametrize("key", [b"short", "short"])
def test_a_short_fingerprint_key_is_refused(key: bytes | str) -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        Executor(fingerprint_key=key)


def test_a_fingerprint_key_of_another_type_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="bytes or str"):
        Executor(fingerprint_key=memoryview(b"k" * 32))  # type: ignore[arg-type]


# ---- what the model sent is echoed bounded ----------------------------------------------------


def test_an_error_payload_echoes_what_the_model_sent_bounded() -> None:
    # A 300 KB tool name, or a 300 KB unknown key in a pydantic error path, came back to the
    # model whole, and `tool_messages` sent it whole: its cap applied to results only.
    ex = Executor({"lookup": lambda args: {"n": 1}}, observer=quiet_observer())
    name = "lookup_" + "A" * 300_000
    unknown = ex.execute(Call(name, "c1", {"q": 1}))
    assert unknown.state == "tool_unavailable" and len(unknown.content()) < 1_000
    assert "A" * 150 in unknown.content() and "…" in unknown.content()

    class Lookup(BaseModel):
        model_config = {"extra": "forbid"}
        q: int

    text = '{"q": 1, "' + "k" * 300_000 + '": 0}'
    with pytest.raises(ValidationError) as info:
        Lookup.model_validate_json(text)
    refused = ex.execute(
        Call("lookup", "c2", raw_arguments=text, ok=False, errors=info.value.errors())
    )
    assert refused.state == "validation_failed" and len(refused.content()) < 2_000
    [error] = json.loads(refused.content())["error"]["errors"]
    assert error["path"].startswith("/kkk") and error["path"].endswith("…")
    sent = [Sent("c1", 0, name), Sent("c2", 1, "lookup")]
    for message in tool_messages(sent, [unknown, refused]):
        assert len(message["content"]) < 2_000
    # The tool's name is echoed in the instructions of what `tool_messages` writes itself.
    for entry in (RuntimeError("boom"), "r" * 200_000, None):
        (message,) = tool_messages(sent[:1], [entry] if entry is not None else [])
        assert len(message["content"]) < 1_000


def test_the_cap_applies_to_an_error_payload_too() -> None:
    ex = Executor({"lookup": lambda args: {"n": 1}}, observer=quiet_observer())
    refused = ex.execute(
        Call(
            "lookup",
            "c1",
            raw_arguments="{}",
            ok=False,
            errors=[
                {"type": "missing", "loc": (f"field_{n}",), "msg": "x" * 400} for n in range(5)
            ],
        )
    )
    whole = refused.content(max_result_chars=None)
    assert len(whole) > 2_000
    short = json.loads(refused.content(max_result_chars=1_000))
    assert short["ok"] is False and short["state"] == "validation_failed"
    assert short["error"]["type"] == "validation_failed" and short["error"]["retryable"] is False
    assert short["error"]["omitted"] == ["errors"]
    sent = [Sent("c1", 0, "lookup")]
    (message,) = tool_messages(sent, [refused], max_result_chars=1_000, style="anthropic")
    assert len(message["content"]) <= 1_000 and message["is_error"] is True
    outcome = Outcome(
        ok=False,
        kind="model_error",
        tool="lookup",
        call_id="c1",
        error_type="validation",
        errors=[
            FieldError(f"/f{n}", "missing", expected="y" * 190, hint="z" * 190) for n in range(5)
        ],
    )
    assert len(tool_messages(sent, [outcome])[0]["content"]) > 1_000
    (capped,) = tool_messages(sent, [outcome], max_result_chars=1_000)
    body = json.loads(capped["content"])
    assert len(capped["content"]) <= 1_000 and body["error_type"] == "validation"
    assert "errors" not in body and body["instruction"]


# ---- a write the executor could not start is no attempt ------------------------------------


def _never_started(ex: Executor, result: ExecutionResult, ran: list[Any], slug: str) -> None:
    assert not ran and result.state == "downstream_failed" and result.attempts == 0
    assert result.error is not None and result.error["type"] == slug
    assert result.error["retryable"] is False
    key = derive_key(tool="transfer", session_id="s", call_id="c1")
    assert ex.ledger.get(key) is None  # released: a later call may run the write
    breaker = ex.breaker_for("transfer")
    assert breaker is not None and breaker.snapshot().failures == 0


async def test_a_write_the_worker_pool_refuses_never_ran() -> None:
    # `aexecute` of a sync tool when the loop's default executor is shut down (an application
    # draining): the write was recorded unknown_outcome forever and charged to the breaker.
    ran: list[Any] = []
    pool = ThreadPoolExecutor(1)
    asyncio.get_running_loop().set_default_executor(pool)
    pool.shutdown()
    ex = Executor(observer=quiet_observer())
    ex.register("transfer", lambda args: ran.append(args) or "done", side_effects=True)
    call = Call("transfer", "c1", {"amount": 1})
    result = await ex.aexecute(call, ex.request(session_id="s"))
    _never_started(ex, result, ran, "internal_error")
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
    again = await ex.aexecute(call, ex.request(session_id="s"))
    assert again.ok and ran == [{"amount": 1}]


@pytest.mark.parametrize("entry", ["execute", "aexecute"])
def test_a_write_with_no_thread_for_its_timeout_never_ran(
    monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    # At the process's thread limit a timed attempt's thread cannot be created (under
    # `aexecute` too, where a timed sync attempt has a thread of its own).
    ran: list[Any] = []
    ex = Executor(observer=quiet_observer())
    ex.register("transfer", lambda args: ran.append(args) or "done", side_effects=True, timeout=5)
    call = Call("transfer", "c1", {"amount": 1})

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", no_thread)
        ctx = ex.request(session_id="s")
        if entry == "execute":
            result = ex.execute(call, ctx)
        else:
            result = asyncio.run(ex.aexecute(call, ctx))
    _never_started(ex, result, ran, "internal_error")
    assert ex.execute(call, ex.request(session_id="s")).ok and len(ran) == 1


@pytest.mark.parametrize("context", [False, True])
def test_arguments_that_do_not_fit_an_unpacked_function_never_run(context: bool) -> None:
    ran: list[Any] = []

    def transfer(to: str, amount: int, **kwargs: Any) -> str:
        ran.append((to, amount))
        return "done"

    def strict(to: str, amount: int, ctx: Any = None) -> str:
        ran.append((to, amount))
        return "done"

    ex = Executor(observer=quiet_observer())
    ex.register("transfer", strict, side_effects=True, unpack=True, context=context)
    extra = Call("transfer", "c1", {"to": "a", "amount": 1, "memo": "rent"})
    result = ex.execute(extra, ex.request(session_id="s"))
    _never_started(ex, result, ran, "bad_signature")
    assert result.error is not None and "memo" in result.error["message"]
    # A function that takes the field runs.
    ex.register("transfer", transfer, side_effects=True, unpack=True, context=context)
    assert ex.execute(extra, ex.request(session_id="s")).ok and ran == [("a", 1)]


@pytest.mark.parametrize("raised", [DeadlineExceeded, TimeoutError])
def test_a_deadline_the_tool_raised_keeps_its_text_from_the_model(
    raised: type[Exception],
) -> None:
    # Only the executor's own deadline and timeout texts are its own words; a tool's
    # DeadlineExceeded went to the model verbatim, credentials and traceback included.
    leaked = "GET https://svc:s3cr3t@internal.example/reports timed out\nTraceback (most recent"

    def fetch(args: Any) -> None:
        raise raised(leaked)

    ex = Executor({"fetch": fetch}, observer=quiet_observer(), breaker=False)
    result = ex.execute(Call("fetch", "c1", {}))
    assert result.state == "downstream_failed" and result.error is not None
    assert "s3cr3t" not in result.content() and "Traceback" not in result.content()
    late = ex.execute(Call("fetch", "c2", {}), RequestContext("r", deadline=-1.0))
    assert late.error is not None and late.error["message"].startswith("request deadline")


class _NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize("arguments", [_cyclic(), {"handle": _NoRepr()}])
@pytest.mark.parametrize("side_effects", [False, True])
def test_arguments_that_cannot_be_fingerprinted_are_refused_as_data(
    arguments: dict[str, Any], side_effects: bool
) -> None:
    # `execute` and `aexecute` raised from the fingerprint, with no record, where
    # `aexecute_all` answered internal_error for the same call.
    ran: list[Any] = []
    ex = Executor(observer=quiet_observer())
    ex.register("search", lambda args: ran.append(args) or "ran", side_effects=side_effects)
    call = Call("search", "c1", arguments)
    results = [
        ex.execute(call),
        asyncio.run(ex.aexecute(call)),
        *asyncio.run(ex.aexecute_all([call])),
    ]
    for result in results:
        assert result.state == "validation_failed" and result.error is not None
        assert result.error["type"] == "invalid_arguments" and result.attempts == 0
    assert not ran and ex.observer.counts["calls"] == 3


@pytest.mark.parametrize("raw", ['{"amount": 10', "[10]", "null", "refund everything"])
@pytest.mark.parametrize("side_effects", [False, True])
def test_argument_text_that_is_no_json_object_is_refused_not_run_with_nothing(
    raw: str, side_effects: bool
) -> None:
    # A call built from its text alone was run with `{}` when that text did not read as a JSON
    # object (cut off, a list): a write then took every default, never asked for.
    ran: list[Any] = []
    ex = Executor(observer=quiet_observer())
    ex.register("refund", lambda args: ran.append(args) or "ran", side_effects=side_effects)
    call = Call("refund", "c1", raw_arguments=raw)
    results = [ex.execute(call), *asyncio.run(ex.aexecute_all([call]))]
    for result in results:
        assert result.state == "validation_failed" and result.error is not None
        assert result.error["type"] == "invalid_arguments" and result.attempts == 0
    assert not ran
    # Text that reads as an object still runs.
    assert ex.execute(Call("refund", "c2", raw_arguments='{"amount": 10}')).value == "ran"
    assert ran == [{"amount": 10}]


@dataclass
class _LookAlike:
    """A caller's own call type (the executor takes any `ValidatedCall`), built wrongly."""

    tool: Any
    call_id: Any
    model: Any = None
    ok: bool = True
    kind: str = "ok"
    errors: tuple[Any, ...] = ()


@pytest.mark.parametrize(
    ("tool", "call_id", "says"),
    [(None, "c1", "tool must be"), (["w"], "c1", "tool must be"), ("w", 5, "call_id must be")],
)
def test_a_call_built_wrongly_is_misuse(tool: Any, call_id: Any, says: str) -> None:
    # `execute` raised a bare TypeError from deep inside (`len(None)`, a key derived from an
    # int id); `Call` now refuses it where it is built, and the executor any look-alike.
    ran: list[Any] = []
    ex = Executor(observer=quiet_observer())
    ex.register("w", lambda args: ran.append(args) or "done", side_effects=True)
    with pytest.raises(MisuseError, match=says):
        Call(tool, call_id, {})
    call = _LookAlike(tool, call_id, {})
    with pytest.raises(MisuseError, match=says):
        ex.execute(call)
    with pytest.raises(MisuseError, match=says):
        asyncio.run(ex.aexecute(call))
    # The batch entry points still answer every call.
    (result,) = ex.execute_all([call])
    assert result.state == "downstream_failed" and result.error is not None
    (result,) = asyncio.run(ex.aexecute_all([call]))
    assert result.state == "downstream_failed" and not ran


def test_each_entry_point_checks_a_call_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # `execute` and `aexecute` checked the call, then checked it again on the way in.
    import toolwire.execution.executor as executor_module

    checked: list[object] = []
    check = executor_module._malformed

    def counted(call: object) -> str | None:
        checked.append(call)
        return check(call)

    one, two = Call("w", "c1", {}), Call("w", "c2", {})  # `Call` checks itself when built
    monkeypatch.setattr(executor_module, "_malformed", counted)
    ex = Executor(observer=quiet_observer())
    ex.register("w", lambda args: "done")
    assert ex.execute(one).state == "ok"
    assert checked == [one]
    checked.clear()
    assert asyncio.run(ex.aexecute(one)).state == "ok"
    assert checked == [one]
    checked.clear()
    assert [r.state for r in ex.execute_all([one, two])] == ["ok", "ok"]
    assert checked == [one, two]
    checked.clear()
    assert [r.state for r in asyncio.run(ex.aexecute_all([one, two]))] == ["ok", "ok"]
    assert checked == [one, two]


def _refuse_toolwire_threads(patched: pytest.MonkeyPatch) -> None:
    """The process at its thread limit, for the executor's own threads."""
    start = threading.Thread.start

    def refuse(self: threading.Thread) -> None:
        if self.name.startswith("toolwire"):
            raise RuntimeError("can't start new thread")
        start(self)

    patched.setattr(threading.Thread, "start", refuse)


def test_a_write_that_ran_is_settled_with_no_thread_to_settle_it(tmp_path: Path) -> None:
    # `aexecute` settles a blocking ledger in a thread of its own; when none could start, the
    # call raised after the card was charged, its claim left in progress and no record made.
    charged: list[int] = []
    patched = pytest.MonkeyPatch()

    async def charge(args: Any) -> dict[str, int]:
        charged.append(args["amount"])
        _refuse_toolwire_threads(patched)  # meanwhile the process reaches its thread limit
        return {"charged": args["amount"]}

    ex = Executor(ledger=SqliteLedger(tmp_path / "l.db"), observer=quiet_observer())
    ex.register("charge", charge, side_effects=True)
    call = Call("charge", "c1", {"amount": 5})
    try:
        result = asyncio.run(ex.aexecute(call, ex.request(session_id="s")))
    finally:
        patched.undo()
    again = asyncio.run(ex.aexecute(call, ex.request(session_id="s")))
    assert result.ok and result.value == {"charged": 5} and ex.observer.counts["calls"] == 2
    assert again.state == "duplicate_suppressed" and charged == [5]
    # A claim under a request deadline has no thread either: the store is unavailable.
    with pytest.MonkeyPatch.context() as refused:
        _refuse_toolwire_threads(refused)
        ex.register("refund", lambda args: charged.append(-1), side_effects=True)
        late = ex.execute(Call("refund", "c2", {"amount": 6}), ex.request(timeout=30))
    assert late.state == "tool_unavailable" and charged == [5]


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    [
        ("retry", "3", "retry must be a RetryPolicy"),
        ("retry_budget", 0.1, "retry_budget must be a RetryBudget"),
        ("breaker", {"failure_rate_threshold": 0.5}, "breaker must be a BreakerConfig"),
        ("observer", logging.getLogger("x"), "observer must be an Observer"),
        ("clock", 0.0, "clock must be a Clock"),
        ("ledger", {}, "ledger must be a Ledger or a file path"),
        ("namespace", 7, "namespace must be a str"),
        ("redact", "***", "redact must be a function"),
        ("tools", [len], "tools must be a mapping"),
        ("tools", {1: len}, "tool names must be str"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_refused_when_built(
    setting: str, value: object, says: str
) -> None:
    # Each was taken and failed at the first call that used it: `retry="3"` failed every call
    # as an unexpected error of the tool, `ledger={}` refused every write as if the store were
    # down, `observer=<Logger>` raised AttributeError out of `execute`.
    with pytest.raises(TypeError, match=says):
        Executor(**{setting: value})


def test_an_unknown_language_is_refused_as_toolset_refuses_it() -> None:
    with pytest.raises(ValueError, match="lang must be 'en' or 'zh', not 'fr'"):
        Executor(lang="fr")  # type: ignore[arg-type]


def test_a_toolset_given_as_the_tools_says_what_the_executor_takes() -> None:
    from toolwire import Toolset

    class Weather(BaseModel):
        city: str

    with pytest.raises(TypeError, match="a Toolset validates calls; the executor runs them"):
        Executor(Toolset([Weather]))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("side_effects", "no", "side_effects must be True or False"),
        ("unpack", 1, "unpack must be True or False"),
        ("retry_ambiguous", None, "retry_ambiguous must be True or False"),
        ("idempotency_key", 5, "idempotency_key must be the name of an argument field"),
        ("breaker", "off", "breaker must be a BreakerConfig or None"),
    ],
)
def test_a_tool_option_of_the_wrong_kind_is_refused(option: str, value: object, says: str) -> None:
    # `side_effects="no"` read as True made a read a write; `breaker="off"` failed each call.
    with pytest.raises(TypeError, match=says):
        Executor().register("t", lambda args: None, **{option: value})
    with pytest.raises(TypeError, match="a tool's name must be a str"):
        Executor().register(5, lambda args: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("calls", ["c1", b"c1", {"c1": 1}, 5])
def test_execute_all_refuses_what_is_no_list_of_calls(calls: object) -> None:
    with pytest.raises(TypeError, match="calls must be a list of validated calls"):
        Executor().execute_all(calls)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="calls must be a list of validated calls"):
        asyncio.run(Executor().aexecute_all(calls))  # type: ignore[arg-type]


def test_execute_all_refuses_an_item_that_is_no_call_before_any_runs() -> None:
    # A string in the list raised AttributeError while its error was being recorded, after the
    # calls before it had run.
    ran: list[Any] = []
    ex = Executor({"t": lambda args: ran.append(args)}, observer=quiet_observer())
    good = Call("t", "c1", {})
    with pytest.raises(TypeError, match=r"calls\[1\] is not a validated call"):
        ex.execute_all([good, "c2"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"calls\[1\] is not a validated call"):
        asyncio.run(ex.aexecute_all([good, "c2"]))  # type: ignore[list-item]
    assert not ran


@pytest.mark.parametrize(
    ("field", "value"), [("session_id", None), ("session_id", 5), ("request_id", b"r")]
)
def test_a_request_id_or_session_id_that_is_no_str_is_refused(field: str, value: object) -> None:
    # `session_id=None` was taken, and every write then failed with "argument of type
    # 'NoneType' is not iterable" where its idempotency key was derived.
    with pytest.raises(TypeError, match=f"{field} must be a str"):
        Executor().request(**{field: value})
    with pytest.raises(TypeError, match=f"{field} must be a str"):
        RequestContext(**{field: value})
