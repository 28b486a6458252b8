"""Cancelling an async call wherever it is: one record per call, and no write's claim is left in
progress (released if the tool never ran, settled if it did)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from toolwire.execution import (
    BreakerConfig,
    BusinessRuleError,
    Call,
    Claim,
    Clock,
    ExecutionRecord,
    ExecutionResult,
    Executor,
    FakeClock,
    Ledger,
    MemoryLedger,
    Observer,
    RetryPolicy,
    SqliteLedger,
    ToolSpec,
    derive_key,
)
from toolwire.execution.observe import SpanLike

LedgerFactory = Callable[[Clock | None], Ledger]
# An upper bound only: no test waits this long unless it is failing.
PATIENCE = 30.0


class States(Observer):
    """Keeps the state of every record it emits."""

    def __init__(self) -> None:
        super().__init__(otel=False)
        self.states: list[str] = []

    def finish(self, record: ExecutionRecord, span: SpanLike) -> None:
        self.states.append(record["state"])
        super().finish(record, span)


class GatedLedger(SqliteLedger):
    """A SQLite ledger whose claim, or whose writes after it, wait until the test opens a gate."""

    def __init__(self, path: Path, *, gate_claim: bool = False) -> None:
        super().__init__(path)
        self.gate_claim = gate_claim
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.written = threading.Event()

    def _wait(self) -> None:
        self.entered.set()
        if not self.gate.wait(PATIENCE):
            raise TimeoutError("the test never opened the gate")

    def claim(self, key: str, **options: Any) -> Claim:
        if self.gate_claim:
            self._wait()
        return super().claim(key, **options)

    def _finish(self, key: str, token: str, ttl: float, state: Any, **options: Any) -> None:
        if not self.gate_claim:
            self._wait()
        super()._finish(key, token, ttl, state, **options)
        self.written.set()


class StuckBackoff(FakeClock):
    """A clock whose async sleep never ends: the call is cancelled during its backoff."""

    def __init__(self) -> None:
        super().__init__()
        self.stuck = True
        self.sleeping = asyncio.Event()

    async def asleep(self, seconds: float) -> None:
        if not self.stuck:
            return await super().asleep(seconds)
        self.sleep(seconds)
        self.sleeping.set()
        await asyncio.Event().wait()


class Unavailable(Exception):
    status_code = 503


async def until(condition: Callable[[], bool]) -> None:
    """Wait for a condition a worker thread makes true (bounded, so a failure cannot hang)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + PATIENCE
    while not condition():
        assert loop.time() < give_up, "the condition never came true"
        await asyncio.sleep(0.001)


async def cancelled(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def start(
    ex: Executor, call: Call, entry: str
) -> asyncio.Task[ExecutionResult | list[ExecutionResult]]:
    run: Awaitable[ExecutionResult | list[ExecutionResult]] = (
        ex.aexecute(call) if entry == "aexecute" else ex.aexecute_all([call])
    )
    return asyncio.ensure_future(run)


# The tool's outcome, the record's state, and what a retry of the same call then gets.
OUTCOMES = {
    "ok": ("ok", "duplicate_suppressed", {"refunded": 5}),
    "business_rule": ("downstream_failed", "duplicate_suppressed", None),
    "error": ("unknown_outcome", "unknown_outcome", None),
}


def refund_tool(outcome: str, finished: asyncio.Event) -> Callable[[Any], Awaitable[Any]]:
    async def refund(args: Any) -> Any:
        finished.set()
        if outcome == "business_rule":
            raise BusinessRuleError("order already refunded")
        if outcome == "error":
            raise ValueError("downstream said something odd")
        return {"refunded": args["amount"]}

    return refund


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
@pytest.mark.parametrize("outcome", list(OUTCOMES))
@pytest.mark.parametrize("entry", ["aexecute", "aexecute_all"])
async def test_cancelled_just_after_the_tool_ran_the_outcome_is_saved_first(
    make_ledger: LedgerFactory, outcome: str, entry: str
) -> None:
    # The loop's default executor is busy (a sync tool runs in it). Saving the outcome must not
    # queue behind it: a queued job never runs once its awaiter is cancelled.
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    busy = threading.Event()
    occupied = loop.run_in_executor(None, busy.wait)
    try:
        finished = asyncio.Event()
        observer = States()
        spec = ToolSpec(refund_tool(outcome, finished), side_effects=True)
        ex = Executor({"refund": spec}, ledger=make_ledger(None), observer=observer)
        call = Call("refund", "call_1", {"amount": 5})
        task = start(ex, call, entry)
        await finished.wait()
        # The call is now saving its outcome (nothing else awaits after the tool).
        await cancelled(task)
        state, replayed, value = OUTCOMES[outcome]
        assert observer.states == [state]  # recorded before the cancellation propagated
        again = await ex.aexecute(call)
        assert (again.state, again.value, again.attempts) == (replayed, value, 0)
    finally:
        busy.set()
        await occupied


@pytest.mark.parametrize("outcome", list(OUTCOMES))
async def test_cancellations_while_the_outcome_is_written_wait_for_it(
    tmp_path: Path, outcome: str
) -> None:
    ledger = GatedLedger(tmp_path / "ledger.db")
    finished = asyncio.Event()
    observer = States()
    spec = ToolSpec(refund_tool(outcome, finished), side_effects=True)
    ex = Executor({"refund": spec}, ledger=ledger, observer=observer)
    call = Call("refund", "call_1", {"amount": 5})
    task = start(ex, call, "aexecute")
    await until(ledger.entered.is_set)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # cancelled again while it waits: it still waits
    done, _ = await asyncio.wait({task}, timeout=0.05)
    assert not done and observer.states == []
    ledger.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    state, replayed, value = OUTCOMES[outcome]
    assert observer.states == [state]
    again = await ex.aexecute(call)
    assert (again.state, again.value) == (replayed, value)


async def test_cancelled_during_the_claim_nothing_runs_and_the_claim_is_given_back(
    tmp_path: Path,
) -> None:
    ledger = GatedLedger(tmp_path / "ledger.db", gate_claim=True)
    runs: list[int] = []

    async def refund(args: Any) -> int:
        runs.append(1)
        return 1

    observer = States()
    ex = Executor({"refund": ToolSpec(refund, side_effects=True)}, ledger=ledger, observer=observer)
    call = Call("refund", "call_1", {})
    task = start(ex, call, "aexecute")
    await until(ledger.entered.is_set)
    await cancelled(task)
    assert observer.states == ["downstream_failed"] and runs == []
    ledger.gate.set()  # the claim lands after the caller left; its thread gives it back
    await until(ledger.written.is_set)
    again = await ex.aexecute(call)
    assert again.state == "ok" and runs == [1]


@pytest.mark.parametrize("entry", ["aexecute", "aexecute_all"])
async def test_cancelled_during_the_tool_the_write_is_an_unknown_outcome(
    tmp_path: Path, entry: str
) -> None:
    started = asyncio.Event()

    async def refund(args: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    observer = States()
    ledger = SqliteLedger(tmp_path / "ledger.db")
    ex = Executor({"refund": ToolSpec(refund, side_effects=True)}, ledger=ledger, observer=observer)
    call = Call("refund", "call_1", {})
    task = start(ex, call, entry)
    await started.wait()
    await cancelled(task)
    assert observer.states == ["unknown_outcome"]
    # The write may have happened: a retry is told so, it is not told "in progress".
    again = await ex.aexecute(call)
    assert again.state == "unknown_outcome" and again.attempts == 0


@pytest.mark.parametrize(
    ("failure", "state", "then"),
    [
        # The failed attempt took no effect: the claim is given back and a retry runs.
        (Unavailable, "downstream_failed", "ok"),
        # It may have taken effect (a retry of an ambiguous failure was waiting).
        (ConnectionResetError, "unknown_outcome", "unknown_outcome"),
    ],
)
async def test_cancelled_during_the_backoff(
    tmp_path: Path, failure: type[Exception], state: str, then: str
) -> None:
    runs: list[int] = []

    async def refund(args: Any) -> str:
        runs.append(1)
        if len(runs) == 1:
            raise failure("first attempt fails")
        return "done"

    clock = StuckBackoff()
    observer = States()
    ex = Executor(
        {"refund": ToolSpec(refund, side_effects=True, retry_ambiguous=True)},
        ledger=SqliteLedger(tmp_path / "ledger.db", clock=clock),
        clock=clock,
        retry=RetryPolicy(max_attempts=3),
        observer=observer,
        breaker=False,
    )
    call = Call("refund", "call_1", {})
    task = start(ex, call, "aexecute")
    await clock.sleeping.wait()
    await cancelled(task)
    assert observer.states == [state] and runs == [1]
    clock.stuck = False
    again = await ex.aexecute(call)
    assert again.state == then


@contextlib.asynccontextmanager
async def default_pool_busy() -> AsyncIterator[None]:
    """The loop's default executor has one worker, taken until the block ends: a sync tool's
    job waits in its queue meanwhile."""
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    busy = threading.Event()
    occupied = loop.run_in_executor(None, busy.wait)
    try:
        yield
    finally:
        busy.set()
        await occupied


def refund_counted(runs: list[int]) -> Callable[[Any], str]:
    """A sync write that notes each run in ``runs``."""

    def refund(args: Any) -> str:
        runs.append(1)
        return "done"

    return refund


def refund_held(started: threading.Event, release: threading.Event) -> Callable[[Any], str]:
    """A sync write that says it started, then holds its thread until ``release``."""

    def refund(args: Any) -> str:
        started.set()
        release.wait(PATIENCE)
        return "done"

    return refund


async def test_cancelled_while_a_sync_tool_waits_for_a_thread_the_claim_is_given_back() -> None:
    # The loop's default executor is busy: the sync tool's job is queued, and a cancellation
    # takes it back before it starts. Nothing ran, so a retry may run the write.
    runs: list[int] = []
    observer = States()
    spec = ToolSpec(refund_counted(runs), side_effects=True)
    ex = Executor({"refund": spec}, ledger=MemoryLedger(), observer=observer, breaker=False)
    call = Call("refund", "call_1", {})
    async with default_pool_busy():
        task = start(ex, call, "aexecute")
        # A memory ledger claims in place: the task's first suspension is the queued job.
        await asyncio.sleep(0)
        await cancelled(task)
    assert observer.states == ["downstream_failed"]
    again = await ex.aexecute(call)
    assert (again.state, again.value, runs) == ("ok", "done", [1])


async def test_cancelled_while_a_sync_tool_runs_the_write_is_an_unknown_outcome() -> None:
    started, release = threading.Event(), threading.Event()
    refund = refund_held(started, release)
    observer = States()
    spec = ToolSpec(refund, side_effects=True)
    ex = Executor({"refund": spec}, ledger=MemoryLedger(), observer=observer, breaker=False)
    call = Call("refund", "call_1", {})
    task = start(ex, call, "aexecute")
    try:
        await until(started.is_set)
        await cancelled(task)
    finally:
        release.set()
    assert observer.states == ["unknown_outcome"]
    again = await ex.aexecute(call)
    assert again.state == "unknown_outcome" and again.attempts == 0


@contextlib.contextmanager
def attempts_held(tool: str, *, after: int = 0) -> Iterator[None]:
    """The threads of a sync tool's timed attempts start, but do not pick their job up until
    the block ends (the first ``after`` of them run as usual): an attempt whose thread the OS
    has not scheduled by its timeout."""
    gate = threading.Event()
    start = threading.Thread.start
    seen: list[threading.Thread] = []

    def held_start(thread: threading.Thread) -> None:
        if thread.name == f"toolwire-{tool}":
            seen.append(thread)
            if len(seen) > after:
                run = thread.run

                def late() -> None:
                    gate.wait(PATIENCE)
                    run()

                thread.run = late  # type: ignore[method-assign]
        start(thread)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(threading.Thread, "start", held_start)
        try:
            yield
        finally:
            gate.set()
    for thread in seen:
        thread.join(PATIENCE)


@pytest.mark.parametrize("entry", ["aexecute", "aexecute_all"])
async def test_a_sync_write_that_times_out_before_its_thread_took_it_did_not_run(
    entry: str,
) -> None:
    # The attempt's thread had not picked the job up at the timeout: the job is withdrawn
    # unstarted. No attempt was made, so the write is no unknown outcome (which would refuse
    # every later execution of the call until the record expires) and the breaker is not told
    # the tool failed; the model may call again.
    runs: list[int] = []
    observer = States()
    once = RetryPolicy(max_attempts=1)
    tripwire = BreakerConfig(minimum_calls=1, window_size=1)  # one failure would open it
    spec = ToolSpec(refund_counted(runs), side_effects=True, timeout=0.05, breaker=tripwire)
    ex = Executor({"refund": spec}, ledger=MemoryLedger(), observer=observer, retry=once)
    call = Call("refund", "call_1", {})
    with attempts_held("refund"):
        result = await start(ex, call, entry)
    (result,) = result if isinstance(result, list) else [result]
    assert (result.state, result.attempts, runs) == ("downstream_failed", 0, [])
    assert result.error is not None and result.error["type"] == "timeout"
    assert result.error["retryable"] and "never started" in result.error["message"]
    assert observer.states == ["downstream_failed"]
    breaker = ex.breaker_for("refund")
    assert breaker is not None and breaker.snapshot().calls == 0
    again = await ex.aexecute(call)
    assert (again.state, again.value, again.attempts, runs) == ("ok", "done", 1, [1])


@pytest.mark.parametrize("entry", ["aexecute", "aexecute_all"])
async def test_a_timed_sync_tool_does_not_wait_for_the_default_executor(entry: str) -> None:
    # A timed attempt has a thread of its own: a busy default executor does not hold it up.
    runs: list[int] = []
    spec = ToolSpec(refund_counted(runs), side_effects=True, timeout=PATIENCE)
    ex = Executor({"refund": spec}, ledger=MemoryLedger(), observer=States())
    async with default_pool_busy():
        result = await asyncio.wait_for(start(ex, Call("refund", "c1", {}), entry), PATIENCE)
    (result,) = result if isinstance(result, list) else [result]
    assert (result.state, result.value, runs) == ("ok", "done", [1])


def test_a_sync_tool_abandoned_at_its_timeout_does_not_hold_up_the_loop_shutdown() -> None:
    # Under `aexecute` the abandoned attempt held a worker of the loop's default executor,
    # which `asyncio.run` joins at shutdown: it returned only once the hung tool did.
    release = threading.Event()

    def hung(args: Any) -> str:
        release.wait(PATIENCE)
        return "done"

    once = RetryPolicy(max_attempts=1)
    ex = Executor({"hung": ToolSpec(hung, timeout=0.05)}, retry=once, observer=States())
    began = time.monotonic()
    try:
        result = asyncio.run(ex.aexecute(Call("hung", "c1", {})))
        took = time.monotonic() - began
    finally:
        release.set()
    assert result.error is not None and result.error["type"] == "timeout"
    assert took < PATIENCE / 2


def test_an_untimed_sync_write_cancelled_while_it_runs_is_waited_for_at_shutdown() -> None:
    # The documented trade-off of a sync tool without a timeout under `aexecute`: its attempt
    # runs in a worker of the loop's default executor (which bounds how many run at once, and
    # takes a queued job back on cancellation), so once its call is cancelled the attempt still
    # holds that worker, and `asyncio.run` returns only when the tool does. The call itself is
    # over: its write is recorded as an unknown outcome and its lease no longer renewed. A
    # `timeout` gives the attempt a daemon thread instead (see the test above).
    hold = 0.5
    started = threading.Event()

    def slow(args: Any) -> str:
        started.set()
        time.sleep(hold)
        return "done"

    ledger = MemoryLedger()
    ex = Executor({"slow": ToolSpec(slow, side_effects=True)}, ledger=ledger, observer=States())
    states: list[str | None] = []

    async def cancel_midway() -> None:
        task = start(ex, Call("slow", "c1", {}), "aexecute")
        await until(started.is_set)
        await cancelled(task)
        record = ledger.get(derive_key(tool="slow", session_id="", call_id="c1"))
        states.append(None if record is None else record.state)

    began = time.monotonic()
    asyncio.run(cancel_midway())
    assert time.monotonic() - began >= hold
    assert states == ["unknown"]


async def test_hung_reads_leave_the_default_executor_to_other_tools() -> None:
    # Each hung read and each of its retries held a worker: two of them took the whole pool,
    # and a healthy sync tool after them failed "no worker thread was free" or waited.
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    release = threading.Event()

    def hung(args: Any) -> str:
        release.wait(PATIENCE)
        return "done"

    quick = RetryPolicy(backoff_base=0.001, backoff_max=0.001)
    tools = {"hung": ToolSpec(hung, timeout=0.02), "fine": ToolSpec(lambda args: "fine")}
    ex = Executor(tools, retry=quick, breaker=False, observer=States())
    try:
        stuck = await ex.aexecute_all([Call("hung", f"c{i}", {}) for i in range(2)])
        healthy = await asyncio.wait_for(ex.aexecute(Call("fine", "c9", {})), PATIENCE / 2)
    finally:
        release.set()
    assert all(r.error is not None and r.error["type"] == "timeout" for r in stuck)
    assert sum(r.attempts for r in stuck) > 2  # retried beside the hung threads
    assert (healthy.state, healthy.value) == ("ok", "fine")


async def test_a_sync_write_that_started_then_timed_out_is_an_unknown_outcome() -> None:
    # The contrast: once its thread picked the job up, the write may have happened.
    started, release = threading.Event(), threading.Event()
    refund = refund_held(started, release)
    observer = States()
    tripwire = BreakerConfig(minimum_calls=1, window_size=1)
    spec = ToolSpec(refund, side_effects=True, timeout=0.05, breaker=tripwire)
    ex = Executor({"refund": spec}, ledger=MemoryLedger(), observer=observer)
    call = Call("refund", "call_1", {})
    try:
        result = await ex.aexecute(call)
    finally:
        release.set()
    assert started.is_set() and (result.state, result.attempts) == ("unknown_outcome", 1)
    assert observer.states == ["unknown_outcome"]
    breaker = ex.breaker_for("refund")
    assert breaker is not None and breaker.snapshot().failures == 1
    again = await ex.aexecute(call)
    assert again.state == "unknown_outcome" and again.attempts == 0


async def test_a_retry_that_never_started_keeps_the_earlier_attempt_unknown() -> None:
    # The first attempt was reset (it may have taken effect) and its retry timed out before
    # its thread took the job: the retry ran nothing, but the first attempt stays unknown.
    runs: list[int] = []

    def charge(args: Any) -> str:
        runs.append(1)
        raise ConnectionResetError("reset by peer")

    quick = RetryPolicy(max_attempts=2, backoff_base=0.001, backoff_max=0.001)
    spec = ToolSpec(charge, side_effects=True, retry_ambiguous=True, timeout=0.05)
    ex = Executor({"charge": spec}, ledger=MemoryLedger(), retry=quick, breaker=False)
    ctx = ex.request(retry_budget=5)
    with attempts_held("charge", after=1):
        result = await ex.aexecute(Call("charge", "call_1", {}), ctx)
    assert (result.state, result.attempts, runs) == ("unknown_outcome", 1, [1])
    assert ctx.retries_used == 0  # the retry that never ran gave its budget back


class LoopProbe(SqliteLedger):
    """A SQLite ledger whose writes after the claim wait (two seconds at most) for the event
    loop to answer, and note whether it did: it cannot while the write blocks its thread."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered = threading.Event()
        self.answered = threading.Event()
        self.loop_ran: list[bool] = []

    def _finish(self, key: str, token: str, ttl: float, state: Any, **options: Any) -> None:
        self.entered.set()
        self.loop_ran.append(self.answered.wait(2.0))
        super()._finish(key, token, ttl, state, **options)


@pytest.mark.parametrize("timeout", [None, 60.0])
async def test_a_cancelled_write_is_recorded_off_the_event_loop(
    tmp_path: Path, timeout: float | None
) -> None:
    # Recording the cancelled call wrote to the blocking store on the loop's thread (or, under
    # a deadline, waited there for the thread that wrote): a store slow to answer (a write
    # lock held elsewhere) stalled every other task on the loop.
    started = asyncio.Event()

    async def refund(args: Any) -> None:
        started.set()
        await asyncio.Event().wait()

    async def answer() -> None:
        await until(ledger.entered.is_set)
        ledger.answered.set()

    observer = States()
    ledger = LoopProbe(tmp_path / "ledger.db")
    ex = Executor({"refund": ToolSpec(refund, side_effects=True)}, ledger=ledger, observer=observer)
    call = Call("refund", "call_1", {})
    task = asyncio.ensure_future(ex.aexecute(call, ex.request(timeout=timeout)))
    await started.wait()
    answering = asyncio.ensure_future(answer())
    await cancelled(task)
    await answering
    assert ledger.loop_ran == [True]
    assert observer.states == ["unknown_outcome"]
    again = await ex.aexecute(call)
    assert again.state == "unknown_outcome" and again.attempts == 0


def test_an_exit_raised_while_execute_waits_for_its_claim_gives_the_claim_back() -> None:
    # A SIGTERM handler raising SystemExit while `execute` waits for a slow store's claim:
    # the claim lands after the caller left. Nothing ran, so it is released, not left in
    # progress for a whole lease and then reported stale.
    main = threading.get_ident()
    landing = threading.Event()

    class SlowClaims(MemoryLedger):
        blocking = True

        def claim(self, key: str, **options: Any) -> Claim:
            if not landing.is_set():
                signal.pthread_kill(main, signal.SIGUSR1)  # the signal comes while it claims
                landing.wait(PATIENCE)
            return super().claim(key, **options)

    def exit_now(signum: int, frame: object) -> None:
        raise SystemExit("terminated")

    ledger = SlowClaims()
    runs: list[int] = []
    ex = Executor(ledger=ledger)
    ex.register("w", lambda args: runs.append(1), side_effects=True)
    previous = signal.signal(signal.SIGUSR1, exit_now)
    try:
        with pytest.raises(SystemExit):
            ex.execute(Call("w", "c1", {}), ex.request("r", "s", timeout=PATIENCE))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    landing.set()
    for thread in threading.enumerate():
        if thread.name == "toolwire-claim-w":
            thread.join(PATIENCE)
    assert runs == [] and ledger.get(derive_key(tool="w", session_id="s", call_id="c1")) is None
    again = ex.execute(Call("w", "c1", {}), ex.request("r", "s", timeout=PATIENCE))
    assert again.state == "ok" and runs == [1]


async def test_a_claim_landing_as_aexecute_is_cancelled_is_given_back_off_the_loop() -> None:
    # The claim has landed but not yet reached the waiting task when it is cancelled: the
    # task gives it back before it leaves (its caller's retry finds the key free), in a
    # thread (a blocking store's call on the loop would stall every request on it).
    go, opened = threading.Event(), threading.Event()
    releasers: list[threading.Thread] = []

    class Held(MemoryLedger):
        blocking = True

        def claim(self, key: str, **options: Any) -> Claim:
            go.wait(PATIENCE)
            return super().claim(key, **options)

        def release(self, key: str, token: str) -> None:
            releasers.append(threading.current_thread())
            opened.wait(2.0)  # a slow store
            super().release(key, token)

    ledger = Held()
    runs: list[int] = []
    ex = Executor(ledger=ledger)
    ex.register("w", lambda args: runs.append(1), side_effects=True)
    task = asyncio.ensure_future(ex.aexecute(Call("w", "c1", {}), ex.request("r", "s")))
    while not any(t.name == "toolwire-claim-w" for t in threading.enumerate()):
        await asyncio.sleep(0)
    go.set()
    for thread in threading.enumerate():
        if thread.name == "toolwire-claim-w":
            thread.join(PATIENCE)  # landed; its delivery waits for the loop
    task.cancel()
    # The loop goes on while the store is slow, and the cancelled call waits for the release.
    done, _ = await asyncio.wait({task}, timeout=0.1)
    assert not done and releasers and releasers[0] is not threading.current_thread()
    opened.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ledger.get(derive_key(tool="w", session_id="s", call_id="c1")) is None
    assert (await ex.aexecute(Call("w", "c1", {}), ex.request("r", "s"))).state == "ok"
    assert runs == [1] and len(releasers) == 1
