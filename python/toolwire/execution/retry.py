"""Retry policy: which failures get another attempt, and how long to wait before it.

Attempts are driven by tenacity (``Retrying``/``AsyncRetrying``) with a retry predicate that
owns the whole decision, because the decision needs more than the exception: the attempt count,
the request deadline, the ``Retry-After`` the server sent, whether a write's outcome is ambiguous,
and two budgets that are spent only when a retry really happens. The wait is full-jitter
exponential backoff (tenacity's ``wait_random_exponential``), never shorter than ``Retry-After``.

Cancellation, ``KeyboardInterrupt`` and an exceeded deadline are classified as non-retryable, so
the predicate returns False and tenacity re-raises them after exactly one attempt (tenacity#529
was ``CancelledError`` being retried by a predicate that matched ``BaseException``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from tenacity import RetryCallState, wait_random_exponential

from toolwire.execution._checks import check_count, check_number
from toolwire.execution.budget import RequestContext, RetryBudget, RetryTicket
from toolwire.execution.classify import Classification

__all__ = ["RetryPolicy", "RetryVerdict", "StopReason", "decide_retry"]

StopReason = Literal[
    "not_retryable",
    "ambiguous_write",
    "max_attempts",
    "deadline",
    "retry_after_too_long",
    "breaker_open",
    "request_budget",
    "process_budget",
    "claim_lost",
]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How the executor retries.

    Attributes:
        max_attempts: Attempts per call, first one included (SRE book: at most 3).
        backoff_base: Initial full-jitter window in seconds (doubles each retry).
        backoff_max: Largest backoff window in seconds.
        max_retry_after: A ``Retry-After`` longer than this is not waited for; the call fails
            with the value in its payload so the agent can decide.

    Raises:
        ValueError: ``max_attempts`` is not a whole number >= 1, or a number of seconds is
            negative, NaN or infinite.
    """

    max_attempts: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0
    _jitter: Callable[[RetryCallState], float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_count("max_attempts", self.max_attempts)
        check_number("backoff_base", self.backoff_base)
        check_number("backoff_max", self.backoff_max)
        check_number("max_retry_after", self.max_retry_after)
        object.__setattr__(
            self,
            "_jitter",
            wait_random_exponential(multiplier=self.backoff_base, max=self.backoff_max),
        )

    def backoff(self, state: RetryCallState) -> float:
        """Full-jitter exponential wait after attempt ``state.attempt_number``."""
        return float(self._jitter(state))


@dataclass(frozen=True, slots=True)
class RetryVerdict:
    """The outcome of ``decide_retry``: retry after ``wait`` seconds, or stop for ``reason``.

    A retry carries what it took from the process budget (``ticket``, None without one) and
    from the request's (``request_spent``): the caller gives both back if the retry never runs.
    """

    retry: bool
    wait: float = 0.0
    reason: StopReason | None = None
    ticket: RetryTicket | None = None
    request_spent: bool = False


def decide_retry(
    *,
    policy: RetryPolicy,
    state: RetryCallState,
    classification: Classification,
    side_effects: bool,
    retry_ambiguous: bool,
    now: float,
    context: RequestContext | None,
    budget: RetryBudget | None,
    breaker_wait: float | None = 0.0,
) -> RetryVerdict:
    """Decide whether a failed attempt is retried; spends budgets only on a "yes".

    Args:
        policy: Retry settings.
        state: tenacity's state (attempt number so far).
        classification: Classification of the failure.
        side_effects: Whether the tool writes.
        retry_ambiguous: Whether the tool forwards its idempotency key downstream.
        now: Monotonic time, compared with the request deadline.
        context: The request (deadline, per-request budget).
        budget: The per-process ratio budget.
        breaker_wait: Seconds before the tool's circuit breaker lets a call through (0.0 when
            it lets one through now; None when it is half-open with every probe taken, so that
            no time is known). A retry it would refuse after the backoff is not made: no
            budget is spent and no backoff slept for an attempt that cannot run.
    """
    if not classification.retryable:
        return RetryVerdict(False, reason="not_retryable")
    if side_effects and classification.ambiguous and not retry_ambiguous:
        return RetryVerdict(False, reason="ambiguous_write")
    if state.attempt_number >= policy.max_attempts:
        return RetryVerdict(False, reason="max_attempts")
    retry_after = classification.retry_after
    if retry_after is not None and retry_after > policy.max_retry_after:
        return RetryVerdict(False, reason="retry_after_too_long")
    # Retry-After is the earliest moment, not the moment: callers the same limit turned away
    # together must not all come back in the same instant, so the jitter is added to it.
    wait = (retry_after or 0.0) + policy.backoff(state)
    if context is not None and context.deadline is not None and now + wait >= context.deadline:
        return RetryVerdict(False, reason="deadline")
    if breaker_wait is None or breaker_wait > wait:
        return RetryVerdict(False, wait=breaker_wait or 0.0, reason="breaker_open")
    if context is not None and not context.try_spend_retry():
        return RetryVerdict(False, reason="request_budget")
    ticket = None if budget is None else budget.take_retry()
    if budget is not None and ticket is None:
        if context is not None:
            context.refund_retry()
        return RetryVerdict(False, reason="process_budget")
    return RetryVerdict(True, wait=wait, ticket=ticket, request_spent=context is not None)
