"""Scenario 19: breaker transitions on a mock clock, count- and time-based windows."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from toolwire.execution import (
    BreakerConfig,
    Call,
    CircuitBreaker,
    Executor,
    FakeClock,
    RequestContext,
    RetryBudget,
    RetryPolicy,
    ToolSpec,
)

WINDOWS = ["count", "time"]


def breaker(window: str, clock: FakeClock, **overrides: Any) -> CircuitBreaker:
    options: dict[str, Any] = {
        "window_type": window,
        "window_size": 100 if window == "count" else 60,
        "minimum_calls": 10,
        "failure_rate_threshold": 0.5,
        "open_duration": 30.0,
        "open_jitter": 0.2,
        "half_open_probes": 3,
    }
    options.update(overrides)
    return CircuitBreaker("t", BreakerConfig(**options), clock=clock, rng=random.Random(7))


def call(b: CircuitBreaker, *, failure: bool, duration: float = 0.01) -> bool:
    permit = b.acquire()
    if permit is None:
        return False
    b.record(permit, failure=failure, duration=duration)
    return True


@pytest.mark.parametrize("window", WINDOWS)
def test_failure_rate_below_minimum_calls_does_not_trip(window: str, clock: FakeClock) -> None:
    b = breaker(window, clock)
    for i in range(9):  # 5 of 9 fail (> 50 %), but the minimum is 10
        call(b, failure=i % 2 == 0)
    assert b.state == "closed" and b.snapshot().failure_rate > 0.5


@pytest.mark.parametrize("window", WINDOWS)
def test_trips_within_one_call_once_minimum_is_reached(window: str, clock: FakeClock) -> None:
    b = breaker(window, clock)
    for i in range(9):
        call(b, failure=i % 2 == 0)
    call(b, failure=True)  # the 10th call: minimum reached, rate 60 %
    assert b.state == "open"
    assert b.acquire() is None


@pytest.mark.parametrize("window", WINDOWS)
def test_half_open_lets_only_the_configured_probes_through(window: str, clock: FakeClock) -> None:
    b = breaker(window, clock)
    for _ in range(10):
        call(b, failure=True)
    assert b.state == "open"
    clock.advance(30 * 1.2 + 0.01)  # past the longest jittered open duration
    permits = [b.acquire() for _ in range(5)]
    assert b.state == "half_open"
    assert sum(p is not None for p in permits) == 3
    granted = [p for p in permits if p is not None]
    for p in granted:
        b.record(p, failure=False, duration=0.01)
    assert b.state == "closed" and b.snapshot().calls == 0


@pytest.mark.parametrize("window", WINDOWS)
def test_released_probe_frees_its_slot(window: str, clock: FakeClock) -> None:
    b = breaker(window, clock, half_open_probes=1)
    for _ in range(10):
        call(b, failure=True)
    clock.advance(40)
    probe = b.acquire()
    assert probe is not None and b.acquire() is None
    b.release(probe)  # e.g. the probe call was cancelled
    assert b.acquire() is not None


@pytest.mark.parametrize("window", WINDOWS)
def test_probe_failure_reopens_with_jittered_duration(window: str, clock: FakeClock) -> None:
    durations = set()
    for seed in range(20):
        b = CircuitBreaker(
            "t",
            BreakerConfig(window_type=window, window_size=60, minimum_calls=10, open_jitter=0.2),
            clock=clock,
            rng=random.Random(seed),
        )
        for _ in range(10):
            call(b, failure=True)
        clock.advance(40)
        probe = b.acquire()
        assert probe is not None
        b.record(probe, failure=True, duration=0.01)
        snap = b.snapshot()
        assert snap.state == "open" and snap.open_until is not None
        duration = snap.open_until - clock.monotonic()
        assert 30 * 0.8 <= duration <= 30 * 1.2
        durations.add(round(duration, 6))
        assert list(b.transitions)[-2:] == [("open", "half_open"), ("half_open", "open")]
    assert len(durations) > 10  # jittered, not lockstep


@pytest.mark.parametrize("window", WINDOWS)
def test_slow_calls_trip_on_the_slow_call_rate(window: str, clock: FakeClock) -> None:
    b = breaker(window, clock, slow_call_duration=2.0, slow_call_rate_threshold=0.8)
    for i in range(10):
        call(b, failure=False, duration=3.0 if i < 8 else 0.1)
    assert b.state == "open"
    b2 = breaker(window, clock, slow_call_duration=2.0, slow_call_rate_threshold=0.8)
    for i in range(10):
        call(b2, failure=False, duration=3.0 if i < 7 else 0.1)
    assert b2.state == "closed"


def test_count_window_slides_by_calls(clock: FakeClock) -> None:
    b = breaker("count", clock, window_size=10, minimum_calls=10)
    for _ in range(4):
        call(b, failure=True)
    for _ in range(100):
        call(b, failure=False)
    snap = b.snapshot()
    assert (snap.calls, snap.failures) == (10, 0)  # old failures slid out
    for _ in range(5):
        call(b, failure=True)
    assert b.state == "open"


def test_count_window_smaller_than_the_minimum_still_trips(clock: FakeClock) -> None:
    # The window never holds more than window_size calls; a larger minimum_calls (20 by
    # default) would keep the breaker closed through any number of failures. As in
    # resilience4j, a count window caps the minimum at its size.
    b = CircuitBreaker("t", BreakerConfig(window_size=10), clock=clock)
    for _ in range(9):
        call(b, failure=True)
    assert b.state == "closed"
    call(b, failure=True)
    assert b.state == "open"


def test_time_window_slides_by_seconds(clock: FakeClock) -> None:
    b = breaker("time", clock, window_size=10, minimum_calls=10)
    for _ in range(9):
        call(b, failure=True)
    clock.advance(11)  # the failures age out of the 10 s window
    assert b.snapshot().calls == 0
    for failed in [True, False, True, False, False, True, False, False, True, False]:
        call(b, failure=failed)  # 40 % < 50 %
    assert b.state == "closed" and b.snapshot().failures == 4
    clock.advance(1000)  # a long idle gap clears every bucket
    snap = b.snapshot()
    assert (snap.calls, snap.failures, snap.slow) == (0, 0, 0)


def test_stale_permits_do_not_count(clock: FakeClock) -> None:
    b = breaker("count", clock)
    early = b.acquire()
    assert early is not None
    for _ in range(10):
        call(b, failure=True)
    clock.advance(40)
    b.record(early, failure=False, duration=0.01)  # from before the trip: ignored
    assert b.state == "half_open"


def test_record_and_snapshot_are_constant_time(clock: FakeClock) -> None:
    import time

    b = breaker("count", clock, window_size=1000, minimum_calls=10**9)
    small = breaker("count", clock, window_size=10, minimum_calls=10**9)
    for brk in (b, small):
        for _ in range(2000):
            call(brk, failure=True)

    def cost(brk: CircuitBreaker) -> float:
        start = time.perf_counter()
        for _ in range(5000):
            call(brk, failure=False)
            brk.snapshot()
        return time.perf_counter() - start

    assert cost(b) < 3 * cost(small)  # window size does not change the per-call cost


# ---- in the executor ------------------------------------------------------------------------


def test_open_breaker_answers_immediately_and_other_tools_keep_working(clock: FakeClock) -> None:
    flaky_calls = 0

    def flaky(args: Any) -> None:
        nonlocal flaky_calls
        flaky_calls += 1
        raise ConnectionResetError

    ex = Executor(
        clock=clock,
        breaker=BreakerConfig(minimum_calls=5, window_size=10, open_duration=60),
    )
    ex.register("flaky", flaky)
    ex.register("healthy", lambda args: "fine")
    for i in range(3):
        ex.execute(Call("flaky", f"c{i}", {}), RequestContext("r", "s", retry_budget=100))
    breaker_state = ex.breaker_for("flaky")
    assert breaker_state is not None and breaker_state.state == "open"
    before = flaky_calls
    result = ex.execute(Call("flaky", "late", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable" and flaky_calls == before
    assert result.error is not None and result.error["type"] == "circuit_open"
    assert result.attempts == 0
    assert ex.execute(Call("healthy", "h", {}), RequestContext("r", "s")).state == "ok"


def test_client_errors_do_not_trip_the_breaker(clock: FakeClock) -> None:
    req = httpx.Request("GET", "http://127.0.0.1/")

    def bad_request(args: Any) -> None:
        response = httpx.Response(400, request=req)
        raise httpx.HTTPStatusError("400", request=req, response=response)

    ex = Executor(clock=clock, breaker=BreakerConfig(minimum_calls=5))
    ex.register("t", bad_request)
    for i in range(20):
        ex.execute(Call("t", f"c{i}", {}), RequestContext("r", "s"))
    b = ex.breaker_for("t")
    assert b is not None and b.state == "closed" and b.snapshot().failures == 0


def test_breaker_opening_mid_retries_stops_them(clock: FakeClock) -> None:
    calls = 0

    def down(args: Any) -> None:
        nonlocal calls
        calls += 1
        raise TimeoutError

    ex = Executor(clock=clock, breaker=BreakerConfig(minimum_calls=2, window_size=10))
    ex.register("t", down)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert calls == 2 and result.state == "downstream_failed"
    assert result.error is not None and result.error["circuit_open"] is True
    assert result.error["type"] == "timeout"


async def _run_without_retry(ex: Executor, clock: FakeClock, asynchronous: bool) -> Any:
    """Runs one call to `t` that fails once and must not be retried: no backoff slept and
    neither retry budget spent."""
    context = RequestContext("r", "s")
    call_ = Call("t", "c", {})
    result = await ex.aexecute(call_, context) if asynchronous else ex.execute(call_, context)
    assert result.state == "downstream_failed"
    assert clock.sleeps == []
    assert context.retries_used == 0
    assert ex.retry_budget.retries == 0 and ex.retry_budget.denied == 0
    return result


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_retry_the_breaker_would_refuse_is_not_made(
    clock: FakeClock, asynchronous: bool
) -> None:
    """The attempt whose failure opens the breaker ends the call at once: no backoff is slept
    and neither retry budget is spent for a retry that could not run."""
    calls = 0

    def down(args: Any) -> None:
        nonlocal calls
        calls += 1
        raise TimeoutError

    config = BreakerConfig(minimum_calls=1, window_size=10, open_duration=30, open_jitter=0.0)
    ex = Executor(clock=clock, breaker=config)
    ex.register("t", down)
    result = await _run_without_retry(ex, clock, asynchronous)
    assert calls == 1 and result.error is not None
    assert result.error["type"] == "timeout" and result.error["circuit_open"] is True
    assert result.error["stopped"] == "breaker_open"
    assert result.error["retryable"] is True and result.error["retry_after"] == 30


def test_a_retry_after_the_open_period_is_still_made(clock: FakeClock) -> None:
    """An open period shorter than the backoff ends before the retry: the retry is a probe."""
    calls = 0

    def flaky(args: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise TimeoutError
        return "ok"

    # Open for 0.001 s at most: any backoff of the default policy outlasts it.
    config = BreakerConfig(minimum_calls=1, window_size=10, open_duration=0.001)
    ex = Executor(clock=clock, breaker=config)
    ex.register("t", flaky)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert calls == 2 and result.ok and len(clock.sleeps) == 1


def test_a_breaker_the_last_failure_opened_is_reported(clock: FakeClock) -> None:
    """The retries are spent and the last failure opens the breaker: the model is told the
    circuit is open and when to come back, not just that the failure was retryable."""

    def down(args: Any) -> None:
        raise TimeoutError

    config = BreakerConfig(minimum_calls=3, window_size=10, open_duration=30, open_jitter=0.0)
    ex = Executor(clock=clock, breaker=config)
    ex.register("t", down)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.attempts == 3
    assert result.error is not None and result.error["stopped"] == "max_attempts"
    assert result.error["circuit_open"] is True and result.error["retry_after"] == 30
    # A breaker still closed adds nothing.
    ex2 = Executor(clock=clock, breaker=BreakerConfig(minimum_calls=10))
    ex2.register("t", down)
    other = ex2.execute(Call("t", "c2", {}), RequestContext("r", "s"))
    assert other.error is not None and "circuit_open" not in other.error


def test_calls_an_open_breaker_refuses_do_not_fill_the_retry_budget(clock: FakeClock) -> None:
    def down(args: Any) -> None:
        raise TimeoutError

    budget = RetryBudget(ratio=0.1, min_per_second=0.0, clock=clock)
    config = BreakerConfig(minimum_calls=1, window_size=10, open_duration=60)
    ex = Executor(clock=clock, breaker=config, retry_budget=budget)
    ex.register("t", down)
    results = ex.execute_all([Call("t", f"c{i}", {}) for i in range(100)])
    assert sum(r.attempts for r in results) == 1
    assert budget.calls == 1


def test_invalid_config_is_rejected() -> None:
    with pytest.raises(ValueError, match="open_jitter"):
        BreakerConfig(open_jitter=1.5)
    with pytest.raises(ValueError, match="minimum_calls"):
        BreakerConfig(minimum_calls=0)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        # A NaN passes every `<` check and then never trips (or always does): each was taken.
        ("failure_rate_threshold", -1.0),
        ("failure_rate_threshold", 0.0),
        ("failure_rate_threshold", 1.5),
        ("failure_rate_threshold", math.nan),
        ("slow_call_rate_threshold", math.nan),
        ("slow_call_rate_threshold", 0.0),
        ("slow_call_duration", math.nan),
        ("slow_call_duration", -1.0),
        ("open_duration", math.nan),
        ("open_duration", -5.0),
        ("open_duration", math.inf),
        ("open_jitter", math.nan),
        ("window_size", 2.5),
        ("minimum_calls", 1.5),
        ("half_open_probes", True),
        ("window_type", "sliding"),
    ],
)
def test_a_setting_out_of_range_is_refused_when_built(setting: str, value: Any) -> None:
    with pytest.raises(ValueError, match=setting):
        BreakerConfig(**{setting: value})


@pytest.mark.parametrize("setting", ["ratio", "min_per_second", "ratio_cap"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -0.5])
def test_a_retry_budget_parameter_out_of_range_is_refused(setting: str, value: float) -> None:
    with pytest.raises(ValueError, match=setting):
        RetryBudget(**{setting: value})


def test_settings_at_their_bounds_are_taken() -> None:
    BreakerConfig(failure_rate_threshold=1.0, slow_call_rate_threshold=math.inf, open_duration=0)
    RetryBudget(ratio=0, min_per_second=0, ratio_cap=0)


class _Unavailable(Exception):
    status_code = 503


def _refusals(results: list[Any]) -> list[dict[str, Any]]:
    """The error payloads (as the model reads them) of calls the open breaker refused."""
    import json

    errors = [json.loads(r.content())["error"] for r in results if not r.ok]
    return [e for e in errors if e["type"] == "circuit_open" or e.get("circuit_open")]


@pytest.mark.parametrize("jitter", [0.0, 0.2])
def test_open_breaker_tells_the_model_when_to_retry(clock: FakeClock, jitter: float) -> None:
    def get(args: Any) -> None:
        raise _Unavailable("down")

    config = BreakerConfig(minimum_calls=2, window_size=4, open_duration=60, open_jitter=jitter)
    ex = Executor({"get": get}, clock=clock, breaker=config)
    results = ex.execute_all([Call("get", f"c{i}", {}) for i in range(6)])
    refused = _refusals(results)
    # The retry that tripped the breaker is refused as well as the calls after it.
    assert len(refused) >= 5 and any(e["type"] == "circuit_open" for e in refused)
    for error in refused:
        assert error["retryable"] is True
        # Whole seconds, at least 1, never past the longest possible open period.
        assert error["retry_after"] == int(error["retry_after"]) >= 1
        assert error["retry_after"] <= math.ceil(60 * (1 + jitter))
    # The time left shrinks as the clock runs, and never reads 0 while still open.
    breaker_now = ex.breaker_for("get")
    assert breaker_now is not None
    assert refused[-1]["retry_after"] == math.ceil(round(breaker_now.open_remaining(), 3))
    clock.advance(breaker_now.open_remaining() - 0.5)
    [late] = _refusals(ex.execute_all([Call("get", "late", {})]))
    assert late["type"] == "circuit_open" and late["retry_after"] == 1


async def test_open_breaker_tells_the_model_when_to_retry_async(clock: FakeClock) -> None:
    async def get(args: Any) -> None:
        raise _Unavailable("down")

    config = BreakerConfig(minimum_calls=2, window_size=4, open_duration=60, open_jitter=0.0)
    ex = Executor({"get": get}, clock=clock, breaker=config)
    results = await ex.aexecute_all([Call("get", f"c{i}", {}) for i in range(6)], concurrency=1)
    refused = _refusals(results)
    assert len(refused) >= 5
    assert all(e["retryable"] is True and e["retry_after"] == 60 for e in refused)
    breaker_now = ex.breaker_for("get")
    assert breaker_now is not None
    clock.advance(breaker_now.open_remaining() - 0.25)
    [late] = _refusals([await ex.aexecute(Call("get", "late", {}))])
    assert late["type"] == "circuit_open" and late["retry_after"] == 1


def test_half_open_breaker_with_its_probes_taken_asks_for_a_retry_soon(clock: FakeClock) -> None:
    b = CircuitBreaker("t", BreakerConfig(minimum_calls=1, half_open_probes=1), clock=clock)
    call(b, failure=True)
    assert b.state == "open" and b.open_remaining() > 0
    clock.advance(b.open_remaining())
    assert b.acquire() is not None  # the probe
    assert b.state == "half_open" and b.open_remaining() == 0.0


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_retry_into_a_half_open_breaker_with_its_probes_taken_is_not_made(
    clock: FakeClock, asynchronous: bool
) -> None:
    """While the attempt runs, other calls open the breaker, its open period ends, and another
    call takes the one probe: the retry would be refused whatever the backoff, so it is not
    made, no budget is spent and no backoff slept, and the model is told to come back soon."""
    config = BreakerConfig(minimum_calls=1, window_size=10, open_duration=5, half_open_probes=1)
    ex = Executor(clock=clock, breaker=config)
    calls = 0

    def down(args: Any) -> None:
        nonlocal calls
        calls += 1
        breaker_now = ex.breaker_for("t")
        assert breaker_now is not None
        assert call(breaker_now, failure=True)  # another call opens it
        clock.advance(breaker_now.open_remaining())
        assert breaker_now.acquire() is not None  # another call takes the probe
        raise TimeoutError

    ex.register("t", down)
    result = await _run_without_retry(ex, clock, asynchronous)
    assert calls == 1 and result.error is not None
    assert result.error["stopped"] == "breaker_open"
    assert result.error["circuit_open"] is True and result.error["retry_after"] == 1


def test_admission_wait_tells_open_half_open_and_full(clock: FakeClock) -> None:
    b = CircuitBreaker(
        "t", BreakerConfig(minimum_calls=1, half_open_probes=1, open_jitter=0.0), clock=clock
    )
    assert b.admission_wait() == 0.0
    call(b, failure=True)
    assert b.admission_wait() == 30.0
    clock.advance(30.0)
    assert b.admission_wait() == 0.0
    permit = b.acquire()
    assert permit is not None and b.admission_wait() is None
    b.release(permit)
    assert b.admission_wait() == 0.0


async def test_a_tool_cut_off_by_the_request_deadline_counts_as_slow() -> None:
    async def hung(args: Any) -> None:
        await asyncio.sleep(3600)

    config = BreakerConfig(minimum_calls=5, slow_call_duration=0.02, slow_call_rate_threshold=0.5)
    ex = Executor({"t": ToolSpec(hung)}, retry=RetryPolicy(max_attempts=1), breaker=config)
    for i in range(5):
        await ex.aexecute(Call("t", f"c{i}", {}), ex.request(timeout=0.03))
    breaker = ex.breaker_for("t")
    assert breaker is not None and breaker.state == "open"
    refused = await ex.aexecute(Call("t", "c5", {}), ex.request(timeout=0.03))
    assert refused.state == "tool_unavailable" and refused.attempts == 0


async def test_a_call_the_deadline_refuses_at_once_leaves_the_breaker_alone() -> None:
    async def quick(args: Any) -> int:
        return 1

    config = BreakerConfig(minimum_calls=1, slow_call_duration=0.02, slow_call_rate_threshold=0.5)
    ex = Executor({"t": ToolSpec(quick)}, retry=RetryPolicy(max_attempts=1), breaker=config)
    result = await ex.aexecute(Call("t", "c", {}), ex.request(timeout=0.0))
    breaker = ex.breaker_for("t")
    assert not result.ok and breaker is not None and breaker.state == "closed"
    assert breaker.snapshot().calls == 0


@pytest.mark.parametrize("window", WINDOWS)
def test_default_config_keeps_a_slow_healthy_tool_closed(window: str, clock: FakeClock) -> None:
    # A tool that answers in 12-50 s every time (search, browsing, code runs) is healthy: the
    # default slow-call duration must not count it, or the model is told a working tool failed.
    b = CircuitBreaker("t", BreakerConfig(window_type=window), clock=clock, rng=random.Random(7))
    for i in range(200):
        duration = 12.0 + (i % 39)
        clock.advance(duration)
        assert call(b, failure=False, duration=duration)
    assert b.state == "closed"
    # Every call past a minute, concurrent ones ending a second apart: slow by the default.
    for _ in range(100):
        clock.advance(1.0)
        call(b, failure=False, duration=61.0)
    assert b.state == "open"


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_arguments_that_cannot_be_read_give_back_the_half_open_probe(
    clock: FakeClock, asynchronous: bool
) -> None:
    # Under `unpack`, a model's field read raised after the attempt took the breaker's one
    # half-open probe permit: it was never given back, and the breaker turned every later
    # call away as circuit_open although no probe was running.
    readable: list[object] = []

    class Unreadable(BaseModel):
        x: int

        def __getattribute__(self, name: str) -> Any:
            # Readable for the executor's checks, not in the copy the attempt is handed.
            if name == "x" and not any(self is ok for ok in readable):
                raise RuntimeError("field read failed")
            return super().__getattribute__(name)

    failing = True

    def tool(x: int) -> int:
        if failing:
            raise TimeoutError
        return x

    config = BreakerConfig(minimum_calls=1, window_size=1, open_jitter=0, half_open_probes=1)
    ex = Executor(clock=clock, breaker=config, retry=RetryPolicy(max_attempts=1))
    ex.register("t", tool, unpack=True)

    async def run(call_id: str, arguments: Any) -> Any:
        call_ = Call("t", call_id, arguments)
        if asynchronous:
            return await ex.aexecute(call_, RequestContext("r", "s"))
        return ex.execute(call_, RequestContext("r", "s"))

    assert (await run("trip", {"x": 1})).state == "downstream_failed"
    breaker_ = ex.breaker_for("t")
    assert breaker_ is not None and breaker_.state == "open"
    clock.advance(config.open_duration + 1)
    sent = Unreadable(x=2)
    readable.append(sent)
    unread = await run("unread", sent)
    assert unread.state == "downstream_failed" and unread.attempts == 0
    assert unread.error is not None and unread.error["type"] == "internal_error"
    failing = False
    probe = await run("probe", {"x": 3})
    assert (probe.state, probe.value) == ("ok", 3)
    assert breaker_.state == "closed"
