"""Safe execution of validated tool calls: classified retries, budgets, idempotent writes,
circuit breakers and one observability record per call.

The package imports without the compiled core (``toolwire._core``); it only needs pydantic,
tenacity and, for ``RedisLedger``, the ``redis`` client (imported lazily).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolwire.execution.breaker import BreakerConfig, BreakerSnapshot, CircuitBreaker
from toolwire.execution.budget import RequestContext, RetryBudget, RetryTicket
from toolwire.execution.classify import Classification, DeadlineExceeded, classify
from toolwire.execution.clock import Clock, FakeClock, SystemClock
from toolwire.execution.errors import (
    BusinessRuleError,
    ClaimLost,
    ExecutionError,
    IdempotencyConflict,
    IdempotencyInProgress,
    LedgerCorrupt,
    LedgerUnavailable,
    NeedsClarification,
)
from toolwire.execution.executor import (
    Call,
    ExecutionResult,
    Executor,
    Timings,
    ToolContext,
    ToolSpec,
    ValidatedCall,
)
from toolwire.execution.idempotency import canonical_json, derive_key, fingerprint
from toolwire.execution.ledger import Claim, Ledger, LedgerRecord, MemoryLedger, StalePolicy
from toolwire.execution.ledger_sqlite import SqliteLedger
from toolwire.execution.observe import ExecutionRecord, FinalState, Observer
from toolwire.execution.retry import RetryPolicy

if TYPE_CHECKING:
    from toolwire.execution.ledger_redis import RedisLedger

__all__ = [
    "BreakerConfig",
    "BreakerSnapshot",
    "BusinessRuleError",
    "Call",
    "CircuitBreaker",
    "Claim",
    "ClaimLost",
    "Classification",
    "Clock",
    "DeadlineExceeded",
    "ExecutionError",
    "ExecutionRecord",
    "ExecutionResult",
    "Executor",
    "FakeClock",
    "FinalState",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "Ledger",
    "LedgerCorrupt",
    "LedgerRecord",
    "LedgerUnavailable",
    "MemoryLedger",
    "NeedsClarification",
    "Observer",
    "RedisLedger",
    "RequestContext",
    "RetryBudget",
    "RetryPolicy",
    "RetryTicket",
    "SqliteLedger",
    "StalePolicy",
    "SystemClock",
    "Timings",
    "ToolContext",
    "ToolSpec",
    "ValidatedCall",
    "canonical_json",
    "classify",
    "derive_key",
    "fingerprint",
]


def __getattr__(name: str) -> Any:
    # RedisLedger is imported on first use so the redis client stays an optional dependency.
    if name == "RedisLedger":
        from toolwire.execution.ledger_redis import RedisLedger

        return RedisLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
