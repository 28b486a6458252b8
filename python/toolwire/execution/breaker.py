"""A small per-tool circuit breaker on an injectable clock.

Why not a library: pybreaker 1.4 and purgatory 3.0 (their source was read) both trip on N
*consecutive* failures, read the wall clock directly, have no minimum-calls guard, no slow-call
rate, no jitter on the open duration, and let any number of calls through in half-open (pybreaker
counts successes but does not bound concurrent probes). This module follows resilience4j's
semantics instead: a failure *rate* over a sliding window (by count or by time), evaluated only
once ``minimum_calls`` are in the window, a slow-call rate, a bounded number of half-open probes,
and an open duration with jitter so breakers of many workers do not re-probe in lockstep.

Record and snapshot are O(1) for the count window; the time window keeps one bucket per second,
so a record costs O(1) amortised (stale buckets are cleared as the clock passes them).
"""

from __future__ import annotations

import math
import random
import threading
from collections import deque
from dataclasses import dataclass
from typing import Literal

from toolwire._pickling import LiveState
from toolwire.execution._checks import check_count, check_number, check_seconds
from toolwire.execution.clock import Clock, SystemClock

__all__ = ["BreakerConfig", "BreakerSnapshot", "BreakerState", "CircuitBreaker", "Permit"]

BreakerState = Literal["closed", "open", "half_open"]


@dataclass(frozen=True, slots=True)
class BreakerConfig:
    """Circuit breaker settings (resilience4j names, tool-call sized defaults).

    Attributes:
        failure_rate_threshold: Trip when failures / calls in the window reach this (0..1).
        slow_call_rate_threshold: Trip when slow calls / calls reach this; above 1 disables.
        slow_call_duration: A call at least this long (seconds) is slow. resilience4j's 60 s:
            tools that search, browse or run code take tens of seconds when healthy, and a
            breaker that opens on them tells the model a working tool failed.
        window_type: ``count`` (last ``window_size`` calls) or ``time`` (last ``window_size`` s).
        window_size: Calls or seconds in the sliding window.
        minimum_calls: No decision before this many calls are in the window (for a count
            window, at most ``window_size``: the window never holds more, as in resilience4j).
        open_duration: Base seconds to stay open before probing.
        open_jitter: Open duration is multiplied by a uniform factor in ``1 +- open_jitter``.
        half_open_probes: Calls let through while half-open; all must succeed to close.

    Raises:
        ValueError: A setting out of its range: a rate threshold that is no number above 0
            (the failure rate's at most 1), a count that is not a whole number >= 1, a
            duration that is negative, NaN or infinite, an unknown ``window_type``.
    """

    failure_rate_threshold: float = 0.5
    slow_call_rate_threshold: float = 1.0
    slow_call_duration: float = 60.0
    window_type: Literal["count", "time"] = "count"
    window_size: int = 100
    minimum_calls: int = 20
    open_duration: float = 30.0
    open_jitter: float = 0.2
    half_open_probes: int = 3

    def __post_init__(self) -> None:
        check_number(
            "failure_rate_threshold", self.failure_rate_threshold, low_inclusive=False, high=1.0
        )
        # Above 1 (infinity too) disables the slow-call rule.
        check_number(
            "slow_call_rate_threshold",
            self.slow_call_rate_threshold,
            low_inclusive=False,
            finite=False,
        )
        check_seconds("slow_call_duration", self.slow_call_duration)
        if self.window_type not in ("count", "time"):
            raise ValueError(f"window_type must be 'count' or 'time', not {self.window_type!r}")
        check_count("window_size", self.window_size)
        check_count("minimum_calls", self.minimum_calls)
        check_count("half_open_probes", self.half_open_probes)
        check_seconds("open_duration", self.open_duration, zero=True)
        check_number("open_jitter", self.open_jitter)
        if not 0.0 <= self.open_jitter < 1.0:
            raise ValueError("open_jitter must be in [0, 1)")


@dataclass(frozen=True, slots=True)
class Permit:
    """Ticket returned by ``acquire``; pass it back to ``record`` or ``release``."""

    epoch: int
    probe: bool


@dataclass(frozen=True, slots=True)
class BreakerSnapshot:
    """A consistent view of a breaker, for metrics and tests."""

    state: BreakerState
    calls: int
    failures: int
    slow: int
    failure_rate: float
    slow_rate: float
    open_until: float | None
    probes_in_flight: int


class _CountWindow:
    __slots__ = ("_fail", "_i", "_slow", "calls", "failures", "slow")

    def __init__(self, size: int) -> None:
        self._fail = [False] * size
        self._slow = [False] * size
        self._i = 0
        self.calls = self.failures = self.slow = 0

    def add(self, failed: bool, slow: bool, now: float) -> None:
        size = len(self._fail)
        if self.calls == size:
            self.failures -= self._fail[self._i]
            self.slow -= self._slow[self._i]
        else:
            self.calls += 1
        self._fail[self._i] = failed
        self._slow[self._i] = slow
        self.failures += failed
        self.slow += slow
        self._i = (self._i + 1) % size

    def advance(self, now: float) -> None:
        pass

    def reset(self) -> None:
        size = len(self._fail)
        self._fail = [False] * size
        self._slow = [False] * size
        self._i = 0
        self.calls = self.failures = self.slow = 0


class _TimeWindow:
    __slots__ = ("_buckets", "_head", "calls", "failures", "slow")

    def __init__(self, seconds: int) -> None:
        self._buckets = [[0, 0, 0] for _ in range(seconds)]  # calls, failures, slow
        self._head: int | None = None
        self.calls = self.failures = self.slow = 0

    def advance(self, now: float) -> None:
        sec = math.floor(now)
        n = len(self._buckets)
        if self._head is None:
            self._head = sec
            return
        if sec <= self._head:
            return
        for s in range(max(self._head + 1, sec - n + 1), sec + 1):
            bucket = self._buckets[s % n]
            self.calls -= bucket[0]
            self.failures -= bucket[1]
            self.slow -= bucket[2]
            bucket[0] = bucket[1] = bucket[2] = 0
        self._head = sec

    def add(self, failed: bool, slow: bool, now: float) -> None:
        self.advance(now)
        bucket = self._buckets[math.floor(now) % len(self._buckets)]
        bucket[0] += 1
        bucket[1] += failed
        bucket[2] += slow
        self.calls += 1
        self.failures += failed
        self.slow += slow

    def reset(self) -> None:
        for bucket in self._buckets:
            bucket[0] = bucket[1] = bucket[2] = 0
        self._head = None
        self.calls = self.failures = self.slow = 0


class CircuitBreaker(LiveState):
    """Rate-based circuit breaker for one tool. Thread-safe.

    Args:
        name: Tool name (for snapshots and logs).
        config: Thresholds and windows.
        clock: Time source (``monotonic()``).
        rng: Random source for the open-duration jitter.
    """

    _not_copied = (
        "its counts are shared by the calls it guards, under a lock. Build one in each process "
        "from its BreakerConfig"
    )

    def __init__(
        self,
        name: str,
        config: BreakerConfig | None = None,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.config = config or BreakerConfig()
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._window: _CountWindow | _TimeWindow = (
            _CountWindow(self.config.window_size)
            if self.config.window_type == "count"
            else _TimeWindow(self.config.window_size)
        )
        # A count window holds at most window_size calls: a larger minimum would never be met.
        self._minimum_calls = (
            min(self.config.minimum_calls, self.config.window_size)
            if self.config.window_type == "count"
            else self.config.minimum_calls
        )
        self._state: BreakerState = "closed"
        self._epoch = 0
        self._open_until: float | None = None
        self._probes_issued = 0
        self._probes_done = 0
        self._probes_slow = 0
        # Bounded so a flapping breaker in a long-lived process does not grow memory.
        self.transitions: deque[tuple[BreakerState, BreakerState]] = deque(maxlen=64)

    def _move(self, state: BreakerState, now: float) -> None:
        self.transitions.append((self._state, state))
        self._state = state
        self._epoch += 1
        self._probes_issued = self._probes_done = self._probes_slow = 0
        if state == "open":
            jitter = self.config.open_jitter
            factor = self._rng.uniform(1.0 - jitter, 1.0 + jitter) if jitter else 1.0
            self._open_until = now + self.config.open_duration * factor
        else:
            self._open_until = None
        if state == "closed":
            self._window.reset()

    def _maybe_half_open(self, now: float) -> None:
        if self._state == "open" and self._open_until is not None and now >= self._open_until:
            self._move("half_open", now)

    @property
    def state(self) -> BreakerState:
        """Current state (an elapsed open period reads as ``half_open``)."""
        with self._lock:
            self._maybe_half_open(self._clock.monotonic())
            return self._state

    def acquire(self) -> Permit | None:
        """Ask to make one call; ``None`` means rejected (open, or half-open probes taken)."""
        with self._lock:
            self._maybe_half_open(self._clock.monotonic())
            if self._state == "closed":
                return Permit(self._epoch, probe=False)
            if self._state == "half_open" and self._probes_issued < self.config.half_open_probes:
                self._probes_issued += 1
                return Permit(self._epoch, probe=True)
            return None

    def open_remaining(self) -> float:
        """Seconds until an open breaker lets a probe through (0.0 when it is not open)."""
        with self._lock:
            now = self._clock.monotonic()
            self._maybe_half_open(now)
            if self._state != "open" or self._open_until is None:
                return 0.0
            return max(0.0, self._open_until - now)

    def admission_wait(self) -> float | None:
        """Seconds until ``acquire`` can let a call through: 0.0 when it can now, the rest of
        the open period when open, and ``None`` when half-open with every probe taken (the
        probes in flight decide, at no time this breaker can tell)."""
        with self._lock:
            now = self._clock.monotonic()
            self._maybe_half_open(now)
            if self._state == "closed":
                return 0.0
            if self._state == "half_open":
                return 0.0 if self._probes_issued < self.config.half_open_probes else None
            return max(0.0, (self._open_until or now) - now)

    def release(self, permit: Permit) -> None:
        """Return a permit whose call produced no verdict (cancelled, or a caller error)."""
        with self._lock:
            if permit.probe and permit.epoch == self._epoch and self._state == "half_open":
                self._probes_issued -= 1

    def record(self, permit: Permit, *, failure: bool, duration: float) -> None:
        """Record the outcome of a call made under ``permit``.

        Args:
            permit: The permit from ``acquire``; outcomes from an earlier state are ignored.
            failure: Whether the call failed in a way that indicates an unhealthy tool.
            duration: Seconds the call took (for the slow-call rate).
        """
        cfg = self.config
        slow = duration >= cfg.slow_call_duration
        with self._lock:
            now = self._clock.monotonic()
            if permit.epoch != self._epoch:
                return
            if self._state == "closed":
                w = self._window
                w.add(failure, slow, now)
                if w.calls >= self._minimum_calls and (
                    w.failures >= cfg.failure_rate_threshold * w.calls
                    or w.slow >= cfg.slow_call_rate_threshold * w.calls
                ):
                    self._move("open", now)
            elif self._state == "half_open" and permit.probe:
                if failure:
                    self._move("open", now)
                    return
                self._probes_done += 1
                self._probes_slow += slow
                if self._probes_done >= cfg.half_open_probes:
                    if self._probes_slow >= cfg.slow_call_rate_threshold * self._probes_done:
                        self._move("open", now)
                    else:
                        self._move("closed", now)

    def snapshot(self) -> BreakerSnapshot:
        """Return counters and rates of the current window."""
        with self._lock:
            now = self._clock.monotonic()
            self._maybe_half_open(now)
            self._window.advance(now)
            w = self._window
            return BreakerSnapshot(
                state=self._state,
                calls=w.calls,
                failures=w.failures,
                slow=w.slow,
                failure_rate=w.failures / w.calls if w.calls else 0.0,
                slow_rate=w.slow / w.calls if w.calls else 0.0,
                open_until=self._open_until,
                probes_in_flight=self._probes_issued - self._probes_done,
            )
