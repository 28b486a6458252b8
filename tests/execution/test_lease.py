"""Lease renewal: a write in flight keeps its claim live however long it runs or waits.

The executor renews a write's lease every third of it from one keeper thread, paced by its
clock: these tests move a `FakeClock` by hand and wait (in real time, briefly) for each renewal
to land in the store before they look, so nothing depends on how fast the machine is. The
background tries of outcomes recorded late are paced the same way, and tested so at the end.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolwire.execution.executor as executor_module
from toolwire.execution import (
    Call,
    Clock,
    Executor,
    FakeClock,
    Ledger,
    LedgerUnavailable,
    MemoryLedger,
    RequestContext,
    SqliteLedger,
    SystemClock,
    derive_key,
)

LedgerFactory = Callable[[Clock | None], Ledger]
LEASE = 10.0
KEY = derive_key(tool="w", session_id="s", call_id="c")


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


def lease_end(ledger: Ledger) -> float:
    record = ledger.get(KEY)
    assert record is not None and record.state == "in_progress"
    return record.lease_expires_at


def outlive_the_lease(clock: FakeClock, ledger: Ledger, steps: int = 4) -> None:
    """Move the clock past the first lease by steps just over a renewal interval, waiting
    after each for the keeper's renewal to land in the store."""
    first_end = lease_end(ledger)
    for _ in range(steps):
        clock.advance(LEASE / 3 + 0.5)
        # Redis keeps milliseconds.
        target = clock.time() + LEASE - 0.01
        wait_until(lambda t=target: lease_end(ledger) >= t, "the lease to be renewed")
    assert clock.time() > first_end


def keepers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "toolwire-leases" and t.is_alive()}


def slow_write(release: threading.Event, entered: threading.Event, runs: list[str]) -> Any:
    def write(arguments: Any) -> dict[str, int]:
        runs.append("run")
        entered.set()
        assert release.wait(10)
        return {"ticket": len(runs)}

    return write


def test_a_write_running_past_its_lease_is_not_found_stale(
    make_ledger: LedgerFactory, clock: FakeClock
) -> None:
    # The defect: the lease was never renewed, so an identical call made while the first one
    # still ran found it stale, and `assume_failed_and_retry` executed the write a second time.
    ledger = make_ledger(clock)
    before = keepers()
    entered, release, runs = threading.Event(), threading.Event(), []
    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register(
        "w",
        slow_write(release, entered, runs),
        side_effects=True,
        in_progress_expiry=LEASE,
        on_stale_in_progress="assume_failed_and_retry",
    )
    ctx = RequestContext("r", "s")
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(ex.execute(Call("w", "c", {}), ctx)))
    worker.start()
    try:
        assert entered.wait(5)
        outlive_the_lease(clock, ledger)
        second = ex.execute(Call("w", "c", {}), ctx)
    finally:
        release.set()
        worker.join(5)
    assert second.state == "in_progress" and not second.duplicate_execution
    assert results[0].state == "ok" and results[0].warnings == () and runs == ["run"]
    assert ex.observer.counts["stale_in_progress"] == 0
    assert ex.observer.counts["ledger_errors"] == 0
    record = ledger.get(KEY)
    assert record is not None and record.state == "succeeded" and record.executions == 1
    wait_until(lambda: keepers() <= before, "the keeper thread to end")


@pytest.mark.parametrize("kind", ["async", "sync", "sync_timed"])
async def test_an_async_call_renews_its_lease_too(clock: FakeClock, kind: str) -> None:
    ledger = MemoryLedger(clock=clock)
    before = keepers()
    entered, release, runs = threading.Event(), threading.Event(), []
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    async def async_write(arguments: Any) -> str:
        runs.append("run")
        entered.set()
        await done.wait()
        return "written"

    tool = async_write if kind == "async" else slow_write(release, entered, runs)
    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register(
        "w",
        tool,
        side_effects=True,
        in_progress_expiry=LEASE,
        on_stale_in_progress="assume_failed_and_retry",
        timeout=30.0 if kind == "sync_timed" else None,  # real seconds: never reached here
    )
    ctx = RequestContext("r", "s")
    first = asyncio.ensure_future(ex.aexecute(Call("w", "c", {}), ctx))
    try:
        assert await loop.run_in_executor(None, entered.wait, 5)
        # The renewals come from the keeper's thread: the loop is free meanwhile.
        await loop.run_in_executor(None, outlive_the_lease, clock, ledger)
        second = await ex.aexecute(Call("w", "c", {}), ctx)
    finally:
        release.set()
        done.set()
    result = await first
    assert second.state == "in_progress" and runs == ["run"]
    assert result.state == "ok" and not result.duplicate_execution
    await loop.run_in_executor(None, wait_until, lambda: keepers() <= before, "the keeper")


class _GatedClock(FakeClock):
    """A fake clock whose `sleep` (the executor's wait between retries) blocks until the test
    lets it go, the test moving the time meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeping = threading.Event()
        self.proceed = threading.Event()

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.sleeping.set()
        assert self.proceed.wait(10)


@pytest.mark.parametrize("api", ["execute", "aexecute"])
def test_the_lease_is_renewed_through_the_wait_between_retries(api: str) -> None:
    clock = _GatedClock()
    ledger = MemoryLedger(clock=clock)
    request = httpx.Request("POST", "http://127.0.0.1/")
    runs: list[int] = []

    def write(arguments: Any) -> str:
        runs.append(1)
        if len(runs) == 1:
            limited = httpx.Response(429, headers={"Retry-After": "25"}, request=request)
            raise httpx.HTTPStatusError("429", request=request, response=limited)
        return "written"

    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register(
        "w",
        write,
        side_effects=True,
        in_progress_expiry=LEASE,
        on_stale_in_progress="assume_failed_and_retry",
    )
    ctx = RequestContext("r", "s")
    results: list[Any] = []

    def call() -> None:
        if api == "execute":
            results.append(ex.execute(Call("w", "c", {}), ctx))
        else:  # its own loop: the gated sleep blocks the thread it runs on
            results.append(asyncio.run(ex.aexecute(Call("w", "c", {}), ctx)))

    worker = threading.Thread(target=call)
    worker.start()
    try:
        assert clock.sleeping.wait(5) and runs == [1]
        outlive_the_lease(clock, ledger)
        second = ex.execute(Call("w", "c", {}), ctx)
    finally:
        clock.proceed.set()
        worker.join(5)
    assert second.state == "in_progress" and runs == [1, 1]
    assert results[0].state == "ok" and results[0].attempts == 2
    assert not results[0].duplicate_execution


class _FlakyRenewals(MemoryLedger):
    """A store that refuses renewals while ``down`` (claims and outcomes still land)."""

    down = True

    def renew(self, key: str, token: str, lease: float, *, ttl: float = 86400.0) -> None:
        if self.down:
            raise LedgerUnavailable("the store timed out")
        super().renew(key, token, lease, ttl=ttl)


def test_failed_renewals_are_counted_and_never_fail_the_call(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = _FlakyRenewals(clock=clock)
    entered, release, runs = threading.Event(), threading.Event(), []
    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register(
        "w", slow_write(release, entered, runs), side_effects=True, in_progress_expiry=LEASE
    )
    ctx = RequestContext("r", "s")
    results: list[Any] = []
    worker = threading.Thread(target=lambda: results.append(ex.execute(Call("w", "c", {}), ctx)))
    caplog.set_level(logging.WARNING, logger="toolwire.execution")
    worker.start()
    try:
        assert entered.wait(5)
        for failures in (1, 2):
            clock.advance(LEASE / 3 + 0.5)
            wait_until(lambda: ex.observer.counts["ledger_errors"] >= failures, "a failed renewal")  # noqa: B023
        # The store is back: the next renewal lands (the lease lapsed meanwhile, but no call
        # acted on it, so it is still this call's).
        ledger.down = False
        outlive_the_lease(clock, ledger)
        assert ex.execute(Call("w", "c", {}), ctx).state == "in_progress"
    finally:
        release.set()
        worker.join(5)
    assert results[0].state == "ok" and runs == ["run"] and results[0].warnings == ()
    assert ex.observer.counts["ledger_errors"] == 2
    logged = [r.getMessage() for r in caplog.records if "renew" in r.getMessage()]
    assert len(logged) == 2 and all("timed out" in m for m in logged)


@pytest.mark.parametrize("policy", ["assume_failed_and_retry", "report"])
def test_a_claim_lost_while_in_flight_stops_the_retries(
    clock: FakeClock, policy: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # The first worker could not renew for a whole lease; an identical call on another worker
    # then acted on the stale claim. When the first worker's renewal gets through, it learns
    # it lost the claim: it makes no further attempt (one would add to what the other call
    # did), and its outcome is recorded as the ledger allows for a lost claim.
    ledger = _FlakyRenewals(clock=clock)
    request = httpx.Request("POST", "http://127.0.0.1/")
    entered, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def first_write(arguments: Any) -> str:
        runs.append("first")
        entered.set()
        assert release.wait(10)
        unavailable = httpx.Response(503, request=request)  # retryable, never ran
        raise httpx.HTTPStatusError("503", request=request, response=unavailable)

    def other_write(arguments: Any) -> str:
        runs.append("other")
        return "written"

    first_ex = Executor(clock=clock, ledger=ledger, breaker=False)
    first_ex.register("w", first_write, side_effects=True, in_progress_expiry=LEASE)
    other_ex = Executor(clock=clock, ledger=ledger, breaker=False)
    other_ex.register(
        "w", other_write, side_effects=True, in_progress_expiry=LEASE, on_stale_in_progress=policy
    )
    ctx = RequestContext("r", "s")
    results: list[Any] = []
    worker = threading.Thread(
        target=lambda: results.append(first_ex.execute(Call("w", "c", {}), ctx))
    )
    caplog.set_level(logging.WARNING, logger="toolwire.execution")
    worker.start()
    try:
        assert entered.wait(5)
        clock.advance(LEASE + 1)
        other = other_ex.execute(Call("w", "c", {}), ctx)
        ledger.down = False
        clock.advance(LEASE / 3 + 0.5)
        wait_until(lambda: first_ex.observer.counts["leases_lost"] == 1, "the lost claim")
        clock.advance(LEASE)  # no renewal after that
        time.sleep(0.05)
    finally:
        release.set()
        worker.join(5)
    first = results[0]
    assert first.attempts == 1 and first.error is not None
    assert first.error["stopped"] == "claim_lost"
    assert first_ex.observer.counts["leases_lost"] == 1
    assert any("no longer holds its idempotency claim" in r.getMessage() for r in caplog.records)
    record = ledger.get(KEY)
    assert record is not None
    if policy == "assume_failed_and_retry":
        assert other.state == "ok" and other.duplicate_execution and runs == ["first", "other"]
        # The ledger keeps the taker's outcome; the first worker is told its claim was lost.
        assert record.state == "succeeded" and record.receipt_value() == "written"
        assert any("taken over" in w for w in first.warnings)
    else:
        assert other.state == "unknown_outcome" and runs == ["first"]
        # Only assumed: what the first worker observed (its attempt failed, nothing was
        # applied) replaces the assumption, and a later call may run the write.
        assert record.state == "failed" and record.retryable and not record.assumed
        assert first.warnings == ()


async def test_a_cancelled_call_stops_renewing(clock: FakeClock) -> None:
    ledger = MemoryLedger(clock=clock)
    before = keepers()
    started = asyncio.Event()

    async def hangs(arguments: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register("w", hangs, side_effects=True, in_progress_expiry=LEASE)
    task = asyncio.ensure_future(ex.aexecute(Call("w", "c", {}), RequestContext("r", "s")))
    await started.wait()
    assert keepers() - before
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    record = ledger.get(KEY)
    assert record is not None and record.state == "unknown"  # settled, not renewed on
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, wait_until, lambda: keepers() <= before, "the keeper")
    clock.advance(LEASE)
    await asyncio.sleep(0.05)
    after = ledger.get(KEY)
    assert after == record


def test_an_abandoned_attempt_stops_renewing(clock: FakeClock) -> None:
    # A sync write cut off at its (real) timeout: its thread goes on, the call does not, and
    # neither do its renewals; its outcome is recorded unknown.
    ledger = MemoryLedger(clock=clock)
    before = keepers()
    release = threading.Event()
    renewing: list[set[threading.Thread]] = []

    def write(arguments: Any) -> str:
        renewing.append(keepers() - before)
        assert release.wait(10)
        return "late"

    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register("w", write, side_effects=True, in_progress_expiry=LEASE, timeout=0.05)
    try:
        result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
        assert result.state == "unknown_outcome" and result.attempts == 1
        wait_until(lambda: keepers() <= before, "the keeper thread to end")
        record = ledger.get(KEY)
        assert record is not None and record.state == "unknown"
    finally:
        release.set()
    assert len(renewing) == 1 and len(renewing[0]) == 1  # it was renewed while it ran


def test_one_keeper_thread_serves_every_write_in_flight(clock: FakeClock) -> None:
    ledger = MemoryLedger(clock=clock)
    before = keepers()
    release = threading.Event()
    entered = [threading.Event() for _ in range(4)]

    def write(arguments: Any) -> int:
        entered[arguments["i"]].set()
        assert release.wait(10)
        return arguments["i"]

    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register("w", write, side_effects=True, in_progress_expiry=LEASE)
    ctx = RequestContext("r", "s")
    calls = [Call("w", f"c{i}", {"i": i}) for i in range(4)]
    workers = [threading.Thread(target=ex.execute, args=(call, ctx)) for call in calls]
    for worker in workers:
        worker.start()
    try:
        for event in entered:
            assert event.wait(5)
        assert len(keepers() - before) == 1
    finally:
        release.set()
        for worker in workers:
            worker.join(5)
    wait_until(lambda: keepers() <= before, "the keeper thread to end")


def test_writes_one_after_another_share_one_keeper_thread(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Starting a keeper thread per write was a third of a short write's cost: the thread
    # waits a moment for the next write before it ends.
    from toolwire.execution import executor as executor_module

    monkeypatch.setattr(executor_module, "_KEEPER_LINGER", 5.0)
    before = keepers()
    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("w", lambda arguments: 1, side_effects=True, in_progress_expiry=LEASE)
    ctx = RequestContext("r", "s")
    ex.execute(Call("w", "c0", {}), ctx)
    (keeper,) = keepers() - before
    for i in range(1, 10):
        time.sleep(0.05)  # time for a keeper with nothing to renew to end, were it to
        assert ex.execute(Call("w", f"c{i}", {}), ctx).state == "ok"
        assert keepers() - before == {keeper}
    wait_until(lambda: keepers() <= before, "the keeper thread to end", timeout=15)


def test_a_ledger_without_renew_still_runs_writes(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # A custom ledger written before `renew` existed: writes work as they did, and the
    # executor says once that their leases are not extended.
    class Plain(Ledger):
        def __init__(self) -> None:
            self.inner = MemoryLedger(clock=clock)

        def claim(self, key: str, **options: Any) -> Any:
            return self.inner.claim(key, **options)

        def _finish(self, key: str, token: str, ttl: float, state: Any, **options: Any) -> None:
            self.inner._finish(key, token, ttl, state, **options)  # pyright: ignore[reportPrivateUsage]

        def get(self, key: str) -> Any:
            return self.inner.get(key)

    entered, release, runs = threading.Event(), threading.Event(), []
    ex = Executor(clock=clock, ledger=Plain(), breaker=False)
    ex.register(
        "w", slow_write(release, entered, runs), side_effects=True, in_progress_expiry=LEASE
    )
    caplog.set_level(logging.WARNING, logger="toolwire.execution")
    results: list[Any] = []
    for call_id in ("a", "b"):
        entered.clear()
        worker = threading.Thread(
            target=lambda c=call_id: results.append(
                ex.execute(Call("w", c, {}), RequestContext("r", "s"))
            )
        )
        worker.start()
        assert entered.wait(5)
        clock.advance(LEASE / 3 + 0.5)
        wait_until(lambda: any("cannot renew" in r.getMessage() for r in caplog.records), "log")
        release.set()
        worker.join(5)
        release.clear()
    assert [r.state for r in results] == ["ok", "ok"]
    assert sum("cannot renew" in r.getMessage() for r in caplog.records) == 1


def test_a_lease_of_years_is_held_without_overflowing_a_wait() -> None:
    # Renewals a third of 30,000 years apart: past a lock's longest timeout (about 292 years
    # on Linux), which the clock caps instead of raising OverflowError in the keeper's thread.
    ex = Executor(ledger=MemoryLedger(), breaker=False)
    ex.register("w", lambda arguments: "done", side_effects=True, in_progress_expiry=1e12)
    before = keepers()
    assert ex.execute(Call("w", "c", {}), RequestContext("r", "s")).state == "ok"
    wait_until(lambda: keepers() <= before, "the keeper thread to end")
    event = threading.Event()
    threading.Timer(0.05, event.set).start()
    assert SystemClock().wait_until(event, time.monotonic() + 1e12)


def test_a_fake_clock_is_waited_for_until_someone_moves_it() -> None:
    clock = FakeClock()
    event = threading.Event()
    woke: list[bool] = []
    waiter = threading.Thread(
        target=lambda: woke.append(clock.wait_until(event, clock.monotonic() + 10))
    )
    waiter.start()
    clock.advance(5)
    time.sleep(0.05)
    assert woke == []  # halfway: still waiting
    clock.advance(5)
    waiter.join(5)
    assert woke == [False] and clock.sleeps == []  # the deadline, not a sleep of its own
    threading.Timer(0.02, event.set).start()
    assert clock.wait_until(event, clock.monotonic() + 10)


def test_renewals_go_on_while_a_late_record_waits_for_the_store(clock: FakeClock) -> None:
    # An outcome the store could not record is tried again in the background. Those tries
    # shared the lease keeper's thread: one stuck on a slow store held up the renewals of every
    # other write in flight, whose leases then ran out and could be taken over.
    late_key = derive_key(tool="w", session_id="s", call_id="late")
    stuck, unstick = threading.Event(), threading.Event()

    class SlowForOneKey(MemoryLedger):
        failing = True
        renewals = 0

        def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
            if key == late_key and self.failing:
                raise LedgerUnavailable("connection reset by peer")
            if key == late_key:
                stuck.set()
                assert unstick.wait(10)  # a store that takes its time to answer
            super()._finish(key, token, ttl, state, **kwargs)

        def renew(self, key: str, token: str, lease: float, *, ttl: float = 86400.0) -> None:
            super().renew(key, token, lease, ttl=ttl)
            self.renewals += 1

    ledger = SlowForOneKey(clock=clock)
    release, entered, runs = threading.Event(), threading.Event(), list[str]()
    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register("w", slow_write(release, entered, runs), side_effects=True, in_progress_expiry=60)
    ctx = RequestContext("r", "s")
    release.set()
    late = ex.execute(Call("w", "late", {}), ctx)
    assert late.unrecorded, "left to the background"
    ledger.failing = False
    release.clear()
    writing = threading.Thread(target=ex.execute, args=(Call("w", "c", {}), ctx))
    writing.start()
    try:
        assert entered.wait(5)
        clock.advance(5)  # the late record's next try: it waits for the store
        assert stuck.wait(5)
        clock.advance(20)  # a third of the running write's lease
        wait_until(lambda: ledger.renewals >= 1, "the running write's lease to be renewed")
    finally:
        unstick.set()
        release.set()
        writing.join(5)
    wait_until(lambda: ex.observer.counts["outcomes_recorded_late"] == 1, "the late record")
    record = ledger.get(late_key)
    assert record is not None and record.state == "succeeded"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_claim_lost_during_the_wait_between_attempts_stops_the_next(mode: str) -> None:
    # The renewal that finds the claim lost can land while the call waits to retry, after
    # the retry was decided: the next attempt then ran beside the call that took it over.
    others: list[Any] = []

    class LoseItWhileWaiting(FakeClock):
        def sleep(self, seconds: float) -> None:
            self.advance(LEASE + 1)  # renewals refused for a whole lease: it lapses
            others.append(other_ex.execute(Call("w", "c", {}), RequestContext("r", "s")))
            ledger.down = False
            self.advance(LEASE / 3 + 0.5)
            wait_until(lambda: first_ex.observer.counts["leases_lost"] == 1, "the lost claim")
            super().sleep(seconds)

    clock = LoseItWhileWaiting()
    ledger = _FlakyRenewals(clock=clock)
    request = httpx.Request("POST", "http://127.0.0.1/")
    runs: list[str] = []

    def first_write(arguments: Any) -> str:
        runs.append("first")
        unavailable = httpx.Response(503, request=request)  # retryable, never ran
        raise httpx.HTTPStatusError("503", request=request, response=unavailable)

    async def first_async(arguments: Any) -> str:
        return first_write(arguments)

    def other_write(arguments: Any) -> str:
        runs.append("other")
        return "written"

    first_ex = Executor(clock=clock, ledger=ledger, breaker=False)
    first_ex.register(
        "w",
        first_write if mode == "sync" else first_async,
        side_effects=True,
        in_progress_expiry=LEASE,
    )
    other_ex = Executor(clock=clock, ledger=ledger, breaker=False)
    other_ex.register(
        "w",
        other_write,
        side_effects=True,
        in_progress_expiry=LEASE,
        on_stale_in_progress="assume_failed_and_retry",
    )
    call, ctx = Call("w", "c", {}), RequestContext("r", "s")
    if mode == "sync":
        first = first_ex.execute(call, ctx)
    else:
        first = asyncio.run(first_ex.aexecute(call, ctx))
    assert others[0].state == "ok" and runs == ["first", "other"], "no second attempt"
    assert first.attempts == 1 and first.error is not None
    assert first.error["stopped"] == "claim_lost"
    record = ledger.get(KEY)
    assert record is not None and record.state == "succeeded"


# ---- outcomes recorded late: each in a try of its own, bounded, not lost at close or exit ----

WORKERS = 4  # the executor's bound on threads making late tries


def key(call_id: str) -> str:
    return derive_key(tool="w", session_id="s", call_id=call_id)


class Store(MemoryLedger):
    """Down while ``down``; up again, an outcome of a key in ``hang`` waits for ``unstick``."""

    def __init__(self, clock: FakeClock, hang: frozenset[str] = frozenset()) -> None:
        super().__init__(clock=clock)
        self.down = True
        self.hang = hang
        self.unstick = threading.Event()
        self.stuck = 0
        self._count = threading.Lock()

    def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
        if self.down:
            raise LedgerUnavailable("connection reset by peer")
        if key in self.hang:
            with self._count:
                self.stuck += 1
            assert self.unstick.wait(10)  # a store that takes its time to answer
        super()._finish(key, token, ttl, state, **kwargs)

    def state(self, call_id: str) -> str | None:
        record = self.get(key(call_id))
        return None if record is None else record.state


def executor(clock: FakeClock, ledger: MemoryLedger) -> Executor:
    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register("w", lambda args: "written", side_effects=True, in_progress_expiry=60)
    return ex


def unrecorded(ex: Executor, ledger: Store, call_id: str) -> None:
    """Run a write whose outcome the store cannot record while its call waits."""
    ledger.down = True
    assert ex.execute(Call("w", call_id, {}), RequestContext("r", "s")).unrecorded
    ledger.down = False


def late_tries() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "toolwire-late-records-try")


def stuck_on_the_store(clock: FakeClock) -> tuple[Store, Executor]:
    """An executor whose late try of call a's outcome is under way, stuck on the store until
    ``unstick``."""
    ledger = Store(clock, hang=frozenset({key("a")}))
    ex = executor(clock, ledger)
    unrecorded(ex, ledger, "a")
    clock.advance(5)  # a's next try: it waits for the store
    wait_until(lambda: ledger.stuck == 1, "a's try to reach the store")
    return ledger, ex


def test_a_late_record_stuck_on_the_store_holds_up_no_other(clock: FakeClock) -> None:
    ledger, ex = stuck_on_the_store(clock)
    try:
        unrecorded(ex, ledger, "b")
        clock.advance(5)  # b's next try, while a's is still under way
        wait_until(lambda: ledger.state("b") == "succeeded", "b's late record")
        assert ledger.state("a") == "in_progress" and ledger.stuck == 1, "a is tried once at a time"
    finally:
        ledger.unstick.set()
    wait_until(lambda: ex.observer.counts["outcomes_recorded_late"] == 2, "a's late record")
    assert ledger.state("a") == "succeeded"


def test_late_records_stuck_on_the_store_take_a_bounded_number_of_threads(
    clock: FakeClock,
) -> None:
    wait_until(lambda: late_tries() == 0, "other tests' idle workers to end", timeout=10)
    calls = [f"c{i}" for i in range(WORKERS + 2)]
    ledger = Store(clock, hang=frozenset(key(c) for c in calls))
    ex = executor(clock, ledger)
    for call_id in calls:
        unrecorded(ex, ledger, call_id)
    try:
        clock.advance(5)  # every one's next try falls due at once
        wait_until(lambda: ledger.stuck == WORKERS, "a try in every worker")
        time.sleep(0.05)  # room for a thread too many to show up
        assert ledger.stuck == WORKERS and late_tries() == WORKERS
    finally:
        ledger.unstick.set()
    wait_until(lambda: ex.observer.counts["outcomes_recorded_late"] == len(calls), "the rest")
    assert all(ledger.state(c) == "succeeded" for c in calls)
    wait_until(lambda: late_tries() == 0, "idle workers to end", timeout=10)


def test_close_records_the_outcomes_still_held(clock: FakeClock) -> None:
    ledger = Store(clock)
    ex = executor(clock, ledger)
    unrecorded(ex, ledger, "a")
    ex.close(timeout=5)  # the next try was 5 s of the clock away: close makes it now
    assert ledger.state("a") == "succeeded"
    assert ex.observer.counts["outcomes_recorded_late"] == 1


def closed_with_the_store_down(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, timeout: float
) -> tuple[Store, Executor, list[str]]:
    """Close, waiting up to ``timeout``, an executor that holds call a's outcome while the store
    is down; returns the store, the executor and the outcomes reported lost."""
    ledger = Store(clock)
    ex = executor(clock, ledger)
    unrecorded(ex, ledger, "a")
    ledger.down = True
    with caplog.at_level(logging.ERROR, logger="toolwire"):
        ex.close(timeout=timeout)
    lost = [r.getMessage() for r in caplog.records if "was not recorded before" in r.getMessage()]
    return ledger, ex, lost


def test_close_reports_an_outcome_it_could_not_record(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    ledger, ex, lost = closed_with_the_store_down(clock, caplog, timeout=5)
    assert ledger.state("a") == "in_progress"
    assert len(lost) == 1 and "call a (w)" in lost[0] and "executor was closed" in lost[0]
    ledger.down = False
    clock.advance(60)  # given up: no background try any more
    time.sleep(0.05)
    assert ledger.state("a") == "in_progress"
    # An identical call to this executor still records the outcome before it claims the key.
    again = ex.execute(Call("w", "a", {}), RequestContext("r", "s"))
    assert again.state == "duplicate_suppressed" and again.value == "written"
    with pytest.raises(ValueError, match="timeout"):
        ex.close(timeout=-1)


def test_close_without_waiting_reports_an_outcome_still_held(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Documented as "not negative": zero gives up at once, the last try left to run alone.
    _, _, lost = closed_with_the_store_down(clock, caplog, timeout=0)
    assert len(lost) == 1 and "call a (w)" in lost[0]


def test_close_without_waiting_reports_a_try_under_way_once(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # A try of the outcome was stuck on the store when `close(timeout=0)` gave up on it: close
    # reported it not recorded, then the try landed and counted it recorded late as well, two
    # results for one outcome.
    ledger, ex = stuck_on_the_store(clock)
    try:
        with caplog.at_level(logging.ERROR, logger="toolwire"):
            ex.close(timeout=0)
    finally:
        ledger.unstick.set()
    wait_until(lambda: ledger.state("a") == "succeeded", "the try under way to land")
    time.sleep(0.05)  # room for a second result to show up
    lost = [r.getMessage() for r in caplog.records if "was not recorded before" in r.getMessage()]
    assert len(lost) == 1 and "call a (w)" in lost[0] and "still under way" in lost[0], lost
    assert ex.observer.counts["outcomes_recorded_late"] == 0
    # Nor does an identical call, which finds the outcome recorded, report it again.
    again = ex.execute(Call("w", "a", {}), RequestContext("r", "s"))
    assert again.state == "duplicate_suppressed" and again.value == "written"
    assert ex.observer.counts["outcomes_recorded_late"] == 0


def test_an_outcome_given_up_by_close_is_reported_once_even_if_recorded_later(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Reported not recorded by close, it was counted recorded late too when an identical call
    # recorded it before claiming the key.
    ledger, ex, lost = closed_with_the_store_down(clock, caplog, timeout=0)
    assert len(lost) == 1 and "still under way" not in lost[0]
    ledger.down = False
    again = ex.execute(Call("w", "a", {}), RequestContext("r", "s"))
    assert again.state == "duplicate_suppressed" and again.value == "written"
    assert ledger.state("a") == "succeeded"
    assert ex.observer.counts["outcomes_recorded_late"] == 0


class Hangs(Store):
    """A blocking store on which the first ``hanging`` requests to record an outcome hang
    until ``unstick`` (a dead connection without a socket timeout); the others are answered."""

    blocking = True

    def __init__(self, clock: FakeClock, hanging: int) -> None:
        super().__init__(clock)
        self.down = False
        self.hanging = hanging

    def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
        with self._count:
            hangs = self.stuck < self.hanging
            self.stuck += hangs
        if hangs:
            assert self.unstick.wait(10)
        super()._finish(key, token, ttl, state, **kwargs)


def abandoned(ex: Executor, clock: FakeClock, call_id: str) -> None:
    """Run a write whose outcome step hangs past the request's deadline and is abandoned."""
    deadline = clock.monotonic() + 0.01
    result = ex.execute(Call("w", call_id, {}), RequestContext("r", "s", deadline=deadline))
    assert result.state == "ok" and result.unrecorded


def test_close_reports_an_outcome_whose_abandoned_step_still_hangs(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor_module, "_SETTLE_GRACE", 0.05)  # real seconds to wait
    ledger = Hangs(clock, hanging=2)  # the abandoned step, and close's try
    ex = executor(clock, ledger)
    try:
        abandoned(ex, clock, "a")
        with caplog.at_level(logging.ERROR, logger="toolwire"):
            ex.close(timeout=0.2)
        assert ledger.state("a") == "in_progress" and ledger.stuck == 2
    finally:
        ledger.unstick.set()
    lost = [r.getMessage() for r in caplog.records if "was not recorded before" in r.getMessage()]
    assert len(lost) == 1 and "call a (w)" in lost[0] and "executor was closed" in lost[0]


def test_an_outcome_whose_abandoned_step_still_hangs_is_recorded_once_the_store_answers(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(executor_module, "_SETTLE_GRACE", 0.05)  # real seconds to wait
    ledger = Hangs(clock, hanging=1)  # only the abandoned step's request hangs
    ex = executor(clock, ledger)
    try:
        abandoned(ex, clock, "a")
        clock.advance(5)  # the next background try
        wait_until(lambda: ledger.state("a") == "succeeded", "a's late record")
        assert ex.observer.counts["outcomes_recorded_late"] == 1
    finally:
        ledger.unstick.set()
    again = ex.execute(Call("w", "a", {}), RequestContext("r", "s"))
    assert again.state == "duplicate_suppressed" and again.value == "written"


_EXITS_WITH_AN_OUTCOME_HELD = """
import sys
from toolwire.execution import Call, Executor, LedgerUnavailable, RequestContext, SqliteLedger

class Blinking(SqliteLedger):
    failures = 3  # every try the call waits for

    def _finish(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise LedgerUnavailable("connection reset by peer")
        super()._finish(*args, **kwargs)

ex = Executor(ledger=Blinking(sys.argv[1]), breaker=False)
ex.register("w", lambda args: "written", side_effects=True)
result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
assert result.unrecorded, result
# The interpreter exits now; the next background try was 5 s away.
"""


def run_script(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter (it exits when the script ends), with our path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_the_interpreter_exit_records_the_outcomes_still_held(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    run_script(_EXITS_WITH_AN_OUTCOME_HELD, str(path))
    record = SqliteLedger(path).get(key("c"))
    assert record is not None and record.state == "succeeded"
    assert record.receipt_value() == "written"


_EXITS_WITH_AN_ABANDONED_STEP_HANGING = """
import threading
import toolwire.execution.executor as executor_module
from toolwire.execution import Call, Executor, MemoryLedger, RequestContext

executor_module._SETTLE_GRACE = 0.05  # real seconds the call waits for its outcome step
executor_module._LATE_RECORD_AT_EXIT = 0.2  # and the exit for the last try

class Hangs(MemoryLedger):
    blocking = True

    def _finish(self, *args, **kwargs):
        threading.Event().wait()  # a dead connection without a socket timeout

ex = Executor(ledger=Hangs(), breaker=False)
ex.register("w", lambda args: "written", side_effects=True)
ctx = RequestContext("r", "s", deadline=ex.clock.monotonic() + 1.0)
result = ex.execute(Call("w", "c", {}), ctx)
assert result.state == "ok" and result.unrecorded, result
# The interpreter exits now, the abandoned step still hanging in its thread.
"""


def test_the_interpreter_exit_reports_an_outcome_whose_abandoned_step_still_hangs() -> None:
    done = run_script(_EXITS_WITH_AN_ABANDONED_STEP_HANGING)
    lost = [line for line in done.stderr.splitlines() if "was not recorded before" in line]
    assert len(lost) == 1, done.stderr
    assert "call c (w)" in lost[0] and "the interpreter exited" in lost[0]
