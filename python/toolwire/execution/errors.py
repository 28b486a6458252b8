"""Typed exceptions of the execution layer.

Tools raise ``BusinessRuleError`` (the validation layer's class, re-exported here) and
``NeedsClarification`` to say "do not retry, tell the model".
The executor never raises the ledger exceptions at callers: it turns them into result states, but
they stay importable so ledger users (and tests) can catch them directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolwire._pickling import RebuiltWhole

# One class for "rejected by a business rule", whether a validation check or a tool raises it.
from toolwire.validation import BusinessRuleError

__all__ = [
    "BusinessRuleError",
    "ClaimLost",
    "ExecutionError",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "LedgerCorrupt",
    "LedgerUnavailable",
    "NeedsClarification",
]


class ExecutionError(RebuiltWhole, Exception):
    """Base class of every exception defined by ``toolwire.execution``."""

    slug: str = "execution_error"


class NeedsClarification(ExecutionError):
    """Raised by a tool when information only the user can give is missing. Never retried.

    Args:
        message: The question or explanation to relay to the user.
        missing: Names of the missing fields.
    """

    slug = "needs_clarification"

    def __init__(self, message: str, *, missing: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.missing = list(missing)


class IdempotencyConflict(ExecutionError, ValueError):
    """The idempotency key was already used with different (canonicalised) arguments.

    Args:
        key: The idempotency key.
        stored_fingerprint: Fingerprint recorded with the first use.
        fingerprint: Fingerprint of the rejected call.

    Both are the ledger's fingerprints, taken over secret values too (so that a key reused with
    another card token is a conflict): compare them, do not log them.
    """

    slug = "idempotency_conflict"

    def __init__(self, key: str, stored_fingerprint: str, fingerprint: str) -> None:
        super().__init__(f"idempotency key reused with different arguments: {key}")
        self.key = key
        self.stored_fingerprint = stored_fingerprint
        self.fingerprint = fingerprint


class IdempotencyInProgress(ExecutionError):
    """Another execution holds the claim for this key and has not finished yet."""

    slug = "in_progress"

    def __init__(self, key: str) -> None:
        super().__init__(f"an execution with this idempotency key is in progress: {key}")
        self.key = key


class ClaimLost(ExecutionError):
    """``complete``/``fail``/``release``/``renew`` was called with a token that no longer owns
    the record (for ``renew``: no longer owns it ``in_progress``).

    This happens when the claim went stale and another worker took it over: the caller's side
    effect may then run twice. The executor reports that duplicate on the worker that took the
    claim over (its execution is the repeat), and warns the worker that lost it.
    """

    slug = "claim_lost"

    def __init__(self, key: str) -> None:
        super().__init__(f"claim no longer owned: {key}")
        self.key = key


class LedgerUnavailable(ExecutionError):
    """The ledger store could not be read or written (down, locked, slow, unwritable).

    Writes fail closed on this: the tool is not executed.
    """

    slug = "ledger_unavailable"


class LedgerCorrupt(LedgerUnavailable):
    """A ledger record exists but cannot be decoded; treated as an outage (fail closed)."""

    slug = "ledger_corrupt"
