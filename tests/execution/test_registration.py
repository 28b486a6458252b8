"""Registering or replacing a tool while calls run: each call keeps the tool it started with."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from toolwire.execution import (
    BreakerConfig,
    Call,
    Executor,
    FakeClock,
    RequestContext,
    RetryPolicy,
)

ONE_FAILURE_OPENS = BreakerConfig(minimum_calls=1, window_size=1, open_duration=60)


def test_a_running_call_keeps_the_tool_and_breaker_it_started_with() -> None:
    started, replaced = threading.Event(), threading.Event()

    def old(args: Any) -> str:
        started.set()
        assert replaced.wait(5)
        raise ConnectionResetError("the old backend is gone")

    ex = Executor(clock=FakeClock(), retry=RetryPolicy(max_attempts=1), breaker=ONE_FAILURE_OPENS)
    ex.register("lookup", old)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(ex.execute, Call("lookup", "c1", {}), RequestContext("r", "s"))
        assert started.wait(5)
        ex.register("lookup", lambda args: "new")
        replaced.set()
        first = running.result(timeout=5)
    # The old function ran to its end, and its failure is the old tool's: it does not open the
    # breaker of the tool that replaced it.
    assert first.state == "downstream_failed" and first.attempts == 1
    fresh = ex.execute(Call("lookup", "c2", {}), RequestContext("r", "s"))
    assert fresh.state == "ok" and fresh.value == "new"
    breaker = ex.breaker_for("lookup")
    assert breaker is not None and breaker.state == "closed"


def test_concurrent_registration_while_calls_run() -> None:
    ex = Executor(breaker=ONE_FAILURE_OPENS)
    ex.register("t", lambda args: 0)
    stop = threading.Event()

    def registrar(n: int) -> None:
        for i in range(200):
            ex.register("t", lambda args, v=n * 1000 + i: v)  # pyright: ignore[reportUnknownLambdaType]
            ex.register(f"extra-{n}-{i}", lambda args: None)
            assert "t" in ex.tools

    def caller(n: int) -> list[Any]:
        seen: list[Any] = []
        i = 0
        while not stop.is_set() or i < 50:
            result = ex.execute(Call("t", f"c{n}-{i}", {}), RequestContext("r", "s"))
            assert result.state == "ok", result
            seen.append(result.value)
            i += 1
        return seen

    with ThreadPoolExecutor(8) as pool:
        callers = [pool.submit(caller, n) for n in range(4)]
        registrars = [pool.submit(registrar, n) for n in range(4)]
        for done in registrars:
            done.result(timeout=60)
        stop.set()
        values = [v for done in callers for v in done.result(timeout=60)]
    assert all(isinstance(v, int) for v in values)
    assert len(ex.tools) == 1 + 4 * 200
    breaker = ex.breaker_for("t")
    assert breaker is not None and breaker.state == "closed"


async def test_a_running_async_call_keeps_the_tool_it_started_with() -> None:
    started, replaced = asyncio.Event(), asyncio.Event()

    async def old(args: Any) -> str:
        started.set()
        await replaced.wait()
        raise ConnectionResetError("the old backend is gone")

    async def new(args: Any) -> str:
        return "new"

    ex = Executor(clock=FakeClock(), retry=RetryPolicy(max_attempts=1), breaker=ONE_FAILURE_OPENS)
    ex.register("lookup", old)
    running = asyncio.create_task(ex.aexecute(Call("lookup", "c1", {}), RequestContext("r", "s")))
    await asyncio.wait_for(started.wait(), 5)
    ex.register("lookup", new)
    replaced.set()
    first = await asyncio.wait_for(running, 5)
    assert first.state == "downstream_failed"
    fresh = await ex.aexecute(Call("lookup", "c2", {}), RequestContext("r", "s"))
    assert fresh.state == "ok" and fresh.value == "new"
