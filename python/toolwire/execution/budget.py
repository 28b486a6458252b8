"""Retry budgets: one per user request, and one ratio budget per process (or per Executor).

The ratio budget follows Finagle/Envoy/SRE practice: every call deposits ``ratio`` of a token and
every retry withdraws a whole one, so retries stay below ``ratio`` of calls in steady state. A
separate reserve refilled at ``min_per_second`` keeps low-traffic processes able to retry at all.
Both buckets are capped so a long healthy period cannot bank a retry storm for the next outage.

Bounds. A retry needs a whole token in one bucket and takes it, so over any history retries
never exceed what the buckets took in: ``calls * ratio + min_per_second * (elapsed seconds + 1)``.
At a steady rate the reserve is a floor, not an addition (Envoy's ``min_retry_concurrency``):
every retry draws on both buckets, the ratio bucket owing up to ``min_per_second`` for retries
the reserve allowed, so retries per second follow whichever allows more, never their sum. The
debt is bounded so that reserve retries of a quiet hour do not starve the next busy minute;
the price is that a quiet period and then a burst can together reach the sum above.
"""

from __future__ import annotations

import math
import threading
import uuid
from dataclasses import dataclass, field

from toolwire._pickling import LiveState
from toolwire.execution._checks import check_count, check_number
from toolwire.execution.clock import Clock, SystemClock

__all__ = ["RequestContext", "RetryBudget", "RetryTicket"]


@dataclass(eq=False)
class RequestContext(LiveState):
    """Everything shared by the tool calls of one user request.

    Args:
        request_id: Identifier of the user request (logged and traced).
        session_id: Conversation/session identifier; scopes derived idempotency keys.
        retry_budget: Retries (not attempts) allowed across all calls of this request.
        deadline: Absolute deadline on the executor clock's ``monotonic()`` scale, or ``None``.

    Raises:
        ValueError: ``retry_budget`` is not a whole number >= 0, or ``deadline`` is NaN or
            infinite.
        TypeError: ``request_id`` or ``session_id`` is not a str.
    """

    _not_copied = (
        "its deadline and retry budget are shared by the calls of one request, under a lock. "
        "Build one in each process from its values"
    )

    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    session_id: str = ""
    retry_budget: int = 5
    deadline: float | None = None
    _used: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        # Both go into idempotency keys and logs as text: `session_id=None` failed each write
        # with "argument of type 'NoneType' is not iterable" when its key was derived.
        for name in ("request_id", "session_id"):
            value: object = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        check_count("retry_budget", self.retry_budget, low=0)
        if self.deadline is not None:
            # NaN is never reached: every comparison with it is false.
            check_number("deadline", self.deadline, low=-math.inf)

    @property
    def retries_used(self) -> int:
        """Retries already spent by calls of this request."""
        with self._lock:
            return self._used

    @property
    def retries_left(self) -> int:
        """Retries still available to calls of this request."""
        with self._lock:
            return max(0, self.retry_budget - self._used)

    def try_spend_retry(self) -> bool:
        """Take one retry from the request budget; return False when it is used up."""
        with self._lock:
            if self._used >= self.retry_budget:
                return False
            self._used += 1
            return True

    def refund_retry(self) -> None:
        """Give back a retry taken by ``try_spend_retry`` that was not used."""
        with self._lock:
            self._used = max(0, self._used - 1)


@dataclass(frozen=True, slots=True)
class RetryTicket:
    """What one retry took from a `RetryBudget`'s two buckets, so that a retry that never ran
    (cancelled during its backoff, refused by the breaker) gives back exactly that."""

    balance: float
    reserve: float


class RetryBudget:
    """Per-process retry ratio budget (token bucket), thread-safe and O(1).

    Args:
        ratio: Tokens deposited per call; a retry costs one token (0.1 = retries <= 10 % of calls).
        min_per_second: Reserve refill rate, so a quiet process may still retry this often
            (0.5: one retry every two seconds).
        ratio_cap: Largest ratio balance that can be banked.
        clock: Time source (monotonic reading used for the reserve refill).

    A retry takes a whole token, so each bucket holds at least one when it can hold anything:
    a cap below one (a ``min_per_second`` or ``ratio_cap`` between 0 and 1) would never let a
    retry through. It then takes ``1 / min_per_second`` seconds, or ``1 / ratio`` calls, to
    earn one. Zero still turns a bucket off.

    Raises:
        ValueError: A parameter is negative, NaN or infinite.
    """

    def __init__(
        self,
        *,
        ratio: float = 0.1,
        min_per_second: float = 3.0,
        ratio_cap: float = 10.0,
        clock: Clock | None = None,
    ) -> None:
        check_number("ratio", ratio)
        check_number("min_per_second", min_per_second)
        check_number("ratio_cap", ratio_cap)
        self.ratio = ratio
        self.min_per_second = min_per_second
        self.ratio_cap = ratio_cap
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        # The buckets' caps: what the parameters say, but never below a whole token unless zero.
        self._ratio_cap = max(1.0, ratio_cap) if ratio_cap > 0 else 0.0
        self._reserve_cap = max(1.0, min_per_second)
        self._balance = 0.0
        self._reserve = min_per_second
        self._last = self._clock.monotonic()
        self.calls = 0
        self.retries = 0
        self.denied = 0

    def _refill(self) -> None:
        now = self._clock.monotonic()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._reserve = min(self._reserve_cap, self._reserve + elapsed * self.min_per_second)

    def record_call(self) -> None:
        """Deposit for one new call (first attempts only)."""
        with self._lock:
            self.calls += 1
            self._balance = min(self._ratio_cap, self._balance + self.ratio)

    def try_spend_retry(self) -> bool:
        """Withdraw one retry; return False (and count a denial) if the budget is exhausted."""
        return self.take_retry() is not None

    def take_retry(self) -> RetryTicket | None:
        """Withdraw one retry, or None (and count a denial) if the budget is exhausted.

        Returns:
            What was taken, for `refund` if the retry does not run after all.
        """
        with self._lock:
            self._refill()
            if self._balance < 1.0 and self._reserve < 1.0:
                self.denied += 1
                return None
            # A retry the reserve allows still costs the ratio bucket, which may owe up to one
            # second of reserve: on a busy process the reserve then adds nothing to the ratio.
            balance = max(-self.min_per_second, self._balance - 1.0)
            reserve = max(0.0, self._reserve - 1.0)
            ticket = RetryTicket(self._balance - balance, self._reserve - reserve)
            self._balance, self._reserve = balance, reserve
            self.retries += 1
            return ticket

    def refund(self, ticket: RetryTicket) -> None:
        """Give back a retry `take_retry` granted that never ran (within the buckets' caps)."""
        with self._lock:
            self._balance = min(self._ratio_cap, self._balance + ticket.balance)
            self._reserve = min(self._reserve_cap, self._reserve + ticket.reserve)
            self.retries = max(0, self.retries - 1)
