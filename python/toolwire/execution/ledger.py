"""The idempotency ledger: one record per idempotency key, and the in-memory backend.

Record life cycle::

                          .-renew-.  (same token: the lease moves on)
                          v       |
    (none) --claim--> in_progress --complete--> succeeded   (replayed until the TTL ends)
                          |  \\------fail-----> failed      (replayed; re-claimable if retryable)
                          |   \\---fail(unknown)-> unknown  (never re-executed automatically)
                          |    \\--release----> (none)      (nothing ran; the key is free again)
                          \\--lease expired--> stale: the tool's ``on_stale_in_progress`` policy

Leases: a claim holds the key for ``lease`` seconds; its owner extends that with ``renew`` while
it works (the executor does so at a third of the lease, from the claim until the outcome is
recorded), so a record goes stale only once its owner stopped renewing: it crashed, hung
outside the executor's reach, or could not reach the store for a whole lease. ``renew``
succeeds only for the token that still owns the ``in_progress`` record; once a later claim
acted on the lapsed lease (took it over, or settled it by the stale policy) it raises
``ClaimLost``, as ``complete``/``fail``/``release`` do for a token that lost its record. A lease
that ran out but that no claim has looked at yet is still its owner's to renew.

Retention: a record expires ``ttl`` seconds after its last change (default 24 h), an
``in_progress`` record ``ttl`` seconds after its lease ends, so a crashed claim is always found
stale and handled by the stale policy, however short the TTL; a claim that finds an expired record
treats the key as new, so a replay after the TTL executes again. This is the documented trade-off
of every TTL-based idempotency store (Stripe, Powertools). The TTL is elapsed time: no backend
forgets a record early because a wall clock stepped forward (``MemoryLedger`` counts on the
monotonic clock, ``SqliteLedger`` on a clock of the file's own, ``RedisLedger`` on the
server's, which no client's step reaches); ``SqliteLedger`` may keep a record longer, by
time no process measured (a reboot's downtime).

Every backend applies the same decision rules; memory and SQLite share ``decide_claim``,
``decide_finish`` and ``decide_renew`` below, and Redis runs the same rules in Lua scripts.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, get_args

from toolwire._pickling import LiveState
from toolwire.execution.clock import Clock, SystemClock
from toolwire.execution.errors import ClaimLost, LedgerCorrupt
from toolwire.payloads import compact_json

__all__ = [
    "DEFAULT_TTL",
    "Claim",
    "ClaimStatus",
    "Ledger",
    "LedgerRecord",
    "LedgerState",
    "MemoryLedger",
    "StalePolicy",
    "check_key",
    "decide_claim",
    "decide_finish",
    "decide_renew",
    "dumps_compact",
    "new_token",
]

DEFAULT_TTL = 24 * 3600.0

LedgerState = Literal["in_progress", "succeeded", "failed", "unknown"]
StalePolicy = Literal["report", "assume_failed_and_retry", "assume_succeeded"]
ClaimStatus = Literal["claimed", "replay", "conflict", "in_progress", "unknown", "stale"]
_STATES: frozenset[str] = frozenset(get_args(LedgerState))


def new_token() -> str:
    """Return a random owner token for a claim."""
    return secrets.token_hex(16)


def _decoded(text: object, what: str) -> Any:
    """A stored JSON text, decoded; a record that decodes while its payload does not (or a
    custom ledger's payload that is not text) is as corrupt as one that does not decode."""
    if not isinstance(text, str | bytes):
        raise LedgerCorrupt(f"ledger {what} is not text: {type(text).__name__}")
    try:
        # Receipts are written without NaN or infinities: one read back is corrupt.
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except ValueError as exc:
        raise LedgerCorrupt(f"undecodable ledger {what}: {exc}") from exc


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is not a finite number")
    return value


@dataclass(frozen=True, slots=True)
class LedgerRecord:
    """One idempotency record.

    Attributes:
        key: The idempotency key.
        state: Life-cycle state.
        fingerprint: sha256 of the canonicalised arguments of the first use.
        tool: Tool name.
        token: Owner token of the latest claim.
        created_at: Unix time of the first claim.
        updated_at: Unix time of the last change.
        lease_expires_at: Unix time after which an ``in_progress`` record is stale.
        expires_at: Unix time after which the record is forgotten.
        receipt: JSON text of the tool's result (``succeeded`` only).
        error: JSON text of the error payload (``failed``/``unknown``).
        retryable: For ``failed``: whether a later claim may execute again.
        executions: How many times the key was claimed for execution (> 1 means recovery).
        assumed: True when a stale-claim policy set the state (``unknown`` under ``report``,
            ``succeeded`` under ``assume_succeeded``), not an observed outcome; the claim's
            owner may still record what really happened.
    """

    key: str
    state: LedgerState
    fingerprint: str
    tool: str
    token: str
    created_at: float
    updated_at: float
    lease_expires_at: float
    expires_at: float
    receipt: str | None = None
    error: str | None = None
    retryable: bool = False
    executions: int = 1
    assumed: bool = False

    def receipt_value(self) -> Any:
        """Decode the stored result (``None`` if there is none).

        Raises:
            LedgerCorrupt: If the stored text is not JSON, or a ``succeeded`` record observed
                (not ``assumed``) holds none: a result of ``None`` is stored as ``null``.
        """
        if self.receipt is None:
            if self.state == "succeeded" and not self.assumed:
                raise LedgerCorrupt("a succeeded ledger record holds no result")
            return None
        return _decoded(self.receipt, "receipt")

    def error_value(self) -> dict[str, Any] | None:
        """Decode the stored error payload (``None`` if there is none).

        Raises:
            LedgerCorrupt: If the stored text is not JSON, or a ``failed`` record holds none
                (`Ledger.fail` always stores one).
        """
        if self.error is None:
            if self.state == "failed":
                raise LedgerCorrupt("a failed ledger record holds no error")
            return None
        value = _decoded(self.error, "error")
        if value is None and self.state == "failed":
            raise LedgerCorrupt("a failed ledger record holds no error")
        return value if isinstance(value, dict) else {"message": value}  # pyright: ignore[reportUnknownVariableType]

    def to_json(self) -> str:
        """Serialise for storage."""
        return json.dumps(
            {
                "key": self.key,
                "state": self.state,
                "fingerprint": self.fingerprint,
                "tool": self.tool,
                "token": self.token,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "lease_expires_at": self.lease_expires_at,
                "expires_at": self.expires_at,
                "receipt": self.receipt,
                "error": self.error,
                "retryable": self.retryable,
                "executions": self.executions,
                "assumed": self.assumed,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> LedgerRecord:
        """Decode a stored record.

        Raises:
            LedgerCorrupt: If the text is not a well-formed record.
        """
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError("record is not an object")
            d: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
            state = d["state"]
            if state not in _STATES:
                raise ValueError(f"unknown state {state!r}")
            for name in ("key", "fingerprint", "tool", "token"):
                # A null fingerprint read as the text "None" would pass for a different
                # call's arguments (a conflict) instead of the corruption it is.
                if not isinstance(d[name], str):
                    raise TypeError(f"{name} is not a string")
            return cls(
                key=d["key"],
                state=state,
                fingerprint=d["fingerprint"],
                tool=d["tool"],
                token=d["token"],
                created_at=float(d["created_at"]),
                updated_at=float(d["updated_at"]),
                lease_expires_at=float(d["lease_expires_at"]),
                expires_at=float(d["expires_at"]),
                receipt=None if d.get("receipt") is None else str(d["receipt"]),
                error=None if d.get("error") is None else str(d["error"]),
                retryable=bool(d.get("retryable", False)),
                executions=int(d.get("executions", 1)),
                assumed=bool(d.get("assumed", False)),
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise LedgerCorrupt(f"undecodable ledger record: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer to ``Ledger.claim``.

    Attributes:
        status: ``claimed`` (execute now, then ``complete``/``fail``/``release`` with ``token``),
            ``replay`` (a stored outcome), ``conflict`` (different arguments), ``in_progress``
            (someone else holds a live claim), ``unknown`` (a previous outcome is unknown) or
            ``stale`` (a stale claim was just marked ``unknown`` under the ``report`` policy).
        record: The record as it stands after the claim.
        token: The owner token, when ``claimed``.
        recovered: True when this claim resolved a stale in-progress record by policy (for
            ``claimed``: the side effect may run twice).
        lease_remaining: For ``in_progress``: seconds left on the holder's lease, measured by
            the store's own clock when it answered (the Redis server's ``TIME``), so that a
            caller whose clock is skewed against the store's still reads the right wait.
            ``None`` for the other statuses, and from a custom ledger that does not set it
            (the executor then compares ``record.lease_expires_at`` with its own clock).
    """

    status: ClaimStatus
    record: LedgerRecord | None
    token: str | None = None
    recovered: bool = False
    lease_remaining: float | None = None


def decide_claim(
    existing: LedgerRecord | None,
    *,
    key: str,
    fingerprint: str,
    tool: str,
    now: float,
    token: str,
    lease: float,
    ttl: float,
    on_stale: StalePolicy,
    wall_offset: float = 0.0,
) -> tuple[Claim, LedgerRecord | None]:
    """Pure claim rule shared by the backends.

    ``now`` and the record's timestamps are readings of one clock, the store's. A store that
    keeps a monotonic clock's readings (see `MemoryLedger`) passes ``wall_offset``, what to add
    to one to get Unix time, for the one timestamp the rule writes into a payload.

    Returns:
        The claim answer and the record to store (``None`` when nothing changes).
    """
    if existing is None or existing.expires_at <= now:
        record = LedgerRecord(
            key=key,
            state="in_progress",
            fingerprint=fingerprint,
            tool=tool,
            token=token,
            created_at=now,
            updated_at=now,
            lease_expires_at=now + lease,
            expires_at=now + lease + ttl,
        )
        return Claim("claimed", record, token), record
    if existing.fingerprint != fingerprint:
        return Claim("conflict", existing), None
    if existing.state == "in_progress" and existing.token == token:
        # A client-side retry of this very claim (Redis clients retry timeouts): already ours.
        return Claim("claimed", existing, token), None
    if existing.state == "succeeded":
        return Claim("replay", existing), None
    if existing.state == "unknown":
        return Claim("unknown", existing), None
    if existing.state == "failed":
        if not existing.retryable:
            return Claim("replay", existing), None
        record = replace(
            existing,
            state="in_progress",
            token=token,
            updated_at=now,
            lease_expires_at=now + lease,
            expires_at=max(existing.expires_at, now + lease + ttl),
            error=None,
            retryable=False,
            executions=existing.executions + 1,
        )
        return Claim("claimed", record, token), record
    # in_progress
    if existing.lease_expires_at > now:
        return Claim("in_progress", existing, lease_remaining=existing.lease_expires_at - now), None
    if on_stale == "assume_failed_and_retry":
        record = replace(
            existing,
            token=token,
            updated_at=now,
            lease_expires_at=now + lease,
            expires_at=max(existing.expires_at, now + lease + ttl),
            executions=existing.executions + 1,
        )
        return Claim("claimed", record, token, recovered=True), record
    if on_stale == "assume_succeeded":
        record = replace(
            existing, state="succeeded", updated_at=now, expires_at=now + ttl, assumed=True
        )
        return Claim("replay", record, recovered=True), record
    error = json.dumps(
        {
            "type": "stale_in_progress",
            "message": "a previous execution started but never recorded its outcome",
            "claimed_at": existing.created_at + wall_offset,
        },
        separators=(",", ":"),
    )
    record = replace(
        existing, state="unknown", updated_at=now, expires_at=now + ttl, error=error, assumed=True
    )
    return Claim("stale", record), record


def decide_finish(
    existing: LedgerRecord | None,
    *,
    key: str,
    token: str,
    now: float,
    ttl: float,
    state: LedgerState | None,
    receipt: str | None = None,
    error: str | None = None,
    retryable: bool = False,
) -> LedgerRecord | None:
    """Pure rule for ``complete``/``fail`` (``state`` given) and ``release`` (``state=None``).

    A repeated finish with the same token and outcome is a no-op, so a client that retries a
    timed-out request does not turn its own success into a "lost claim".

    Returns:
        The record to store (unchanged when repeated), or ``None`` to delete it.

    Raises:
        ClaimLost: If the record is gone, finished differently or owned by another token.
    """
    owned = existing is not None and existing.token == token and existing.expires_at > now
    if existing is not None and owned and not existing.assumed:
        if state is not None and existing.state == state:
            return existing
    if state is None and existing is None:
        return None  # releasing twice: the key is free either way
    if existing is None or not owned or (existing.state != "in_progress" and not existing.assumed):
        # An assumed record was settled by a stale-claim policy (`report`, `assume_succeeded`)
        # while its owner was still running, and nobody else was let in (the token did not
        # change): what the owner observed replaces the assumption, so a side effect that ran
        # once is recorded, not reported as a duplicate.
        raise ClaimLost(key)
    if state is None:
        return None
    return replace(
        existing,
        state=state,
        updated_at=now,
        expires_at=now + ttl,
        receipt=receipt,
        error=error,
        retryable=retryable,
        assumed=False,
    )


def decide_renew(
    existing: LedgerRecord | None,
    *,
    key: str,
    token: str,
    now: float,
    lease: float,
    ttl: float,
) -> LedgerRecord:
    """Pure rule for ``renew``: the lease of an ``in_progress`` record that ``token`` still owns
    ends ``lease`` seconds from ``now`` (never earlier than it did), and the record is kept
    ``ttl`` seconds past that, as a claim keeps it.

    A lease that already ran out is renewed as long as no claim acted on it: the token and the
    state are unchanged, so nobody was told the write was stale. A repeated renewal (a client
    retrying a timed-out request) extends the lease again, which is harmless.

    Returns:
        The record to store.

    Raises:
        ClaimLost: If the record is gone or expired, owned by another token (a stale claim taken
            over), or no longer ``in_progress`` (finished, or settled by a stale-claim policy:
            the owner may still record its outcome, but no longer holds the key).
    """
    if (
        existing is None
        or existing.token != token
        or existing.expires_at <= now
        or existing.state != "in_progress"
    ):
        raise ClaimLost(key)
    lease_end = max(existing.lease_expires_at, now + lease)
    return replace(
        existing,
        updated_at=now,
        lease_expires_at=lease_end,
        expires_at=max(existing.expires_at, lease_end + ttl),
    )


def dumps_compact(value: Any) -> str:
    """JSON text used for receipts and error payloads (compact, UTF-8 kept, a lone surrogate
    escaped: see `compact_json`, which a store of UTF-8 text such as Redis needs)."""
    return compact_json(value, default=str)


class Ledger(ABC):
    """The store behind idempotent writes. Every method is atomic with respect to others.

    Implementations raise ``LedgerUnavailable`` (or ``LedgerCorrupt``) when the store cannot be
    used; the executor then fails closed for writes.
    """

    #: Whether calls may block on I/O; the async executor runs blocking ledgers in a thread.
    blocking: ClassVar[bool] = True

    @abstractmethod
    def claim(
        self,
        key: str,
        *,
        fingerprint: str,
        tool: str,
        lease: float,
        ttl: float = DEFAULT_TTL,
        on_stale: StalePolicy = "report",
    ) -> Claim:
        """Atomically claim ``key`` for execution, or report why not.

        Args:
            key: Idempotency key (at most 255 characters).
            fingerprint: Fingerprint of the canonicalised arguments.
            tool: Tool name (stored for operators).
            lease: Seconds after which an unfinished claim counts as stale, unless its owner
                extends them with ``renew``.
            ttl: Seconds to keep the record after its last change.
            on_stale: What to do, atomically, with a stale ``in_progress`` record.
        """

    def complete(self, key: str, token: str, receipt: Any, *, ttl: float = DEFAULT_TTL) -> None:
        """Record success with a JSON-compatible ``receipt``. Raises ``ClaimLost`` if not owner."""
        self._finish(key, token, ttl, "succeeded", receipt=dumps_compact(receipt))

    def fail(
        self,
        key: str,
        token: str,
        error: Mapping[str, Any],
        *,
        retryable: bool = False,
        unknown: bool = False,
        ttl: float = DEFAULT_TTL,
    ) -> None:
        """Record a failure (``unknown=True``: the outcome is unknown). Raises ``ClaimLost``."""
        self._finish(
            key,
            token,
            ttl,
            "unknown" if unknown else "failed",
            error=dumps_compact(dict(error)),
            retryable=retryable and not unknown,
        )

    def release(self, key: str, token: str) -> None:
        """Delete an ``in_progress`` claim whose tool never ran. Raises ``ClaimLost``."""
        self._finish(key, token, DEFAULT_TTL, None)

    def renew(self, key: str, token: str, lease: float, *, ttl: float = DEFAULT_TTL) -> None:
        """Extend the lease of the ``in_progress`` claim ``token`` still owns to ``lease``
        seconds from now (see ``decide_renew``), so a claim whose work outlasts its first lease
        is not found stale while it runs.

        The executor calls it while a write is in flight. A custom ledger that does not
        implement it raises ``NotImplementedError``: its leases are then never extended (the
        executor logs that once and goes on), and a write running past its lease can be found
        stale.

        Raises:
            ClaimLost: ``token`` no longer owns an ``in_progress`` record for ``key``.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot renew leases")

    @abstractmethod
    def _finish(
        self,
        key: str,
        token: str,
        ttl: float,
        state: LedgerState | None,
        *,
        receipt: str | None = None,
        error: str | None = None,
        retryable: bool = False,
    ) -> None:
        """Apply ``decide_finish`` atomically in the store (``state=None``: release).

        ``complete``, ``fail`` and ``release`` differ only in these arguments, so each backend
        implements this one operation.
        """

    @abstractmethod
    def get(self, key: str) -> LedgerRecord | None:
        """Return the live record for ``key`` (``None`` if absent or expired)."""

    def close(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release connections held by the ledger."""


_PURGE_EVERY = 1024


def check_key(key: str) -> None:
    if not key or len(key) > 255:
        raise ValueError("idempotency keys must be 1 to 255 characters long")


class MemoryLedger(Ledger, LiveState):
    """Thread-safe in-process ledger (tests, single-process tools, no durability).

    Leases and retention run on the clock's ``monotonic()`` reading: one process needs no
    time shared with others, and a step of the wall clock (NTP, a resumed VM) then neither
    makes a live claim look stale, which could run its write twice, nor keeps a stale one
    alive. The records it hands out read in Unix time as of the moment they are read
    (``time()`` minus ``monotonic()`` added to each stored reading), as another backend's do.

    Args:
        clock: Time source: ``monotonic()`` for leases and retention, ``time()`` to show them.
    """

    _not_copied = (
        "its records live in this process, under a lock. Use SqliteLedger or RedisLedger to share"
        " records between processes"
    )

    blocking: ClassVar[bool] = False

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._records: dict[str, LedgerRecord] = {}
        self._claims = 0

    def _offset(self) -> float:
        """What turns a stored (monotonic) reading into Unix time, now."""
        return self._clock.time() - self._clock.monotonic()

    def _shown(self, record: LedgerRecord, offset: float) -> LedgerRecord:
        return replace(
            record,
            created_at=record.created_at + offset,
            updated_at=record.updated_at + offset,
            lease_expires_at=record.lease_expires_at + offset,
            expires_at=record.expires_at + offset,
        )

    def claim(
        self,
        key: str,
        *,
        fingerprint: str,
        tool: str,
        lease: float,
        ttl: float = DEFAULT_TTL,
        on_stale: StalePolicy = "report",
    ) -> Claim:
        """See ``Ledger.claim``."""
        check_key(key)
        with self._lock:
            now = self._clock.monotonic()
            offset = self._offset()
            self._claims += 1
            if self._claims % _PURGE_EVERY == 0:
                # Amortised sweep so a long-lived process does not keep every key forever.
                for stale in [k for k, r in self._records.items() if r.expires_at <= now]:
                    del self._records[stale]
            claim, record = decide_claim(
                self._records.get(key),
                key=key,
                fingerprint=fingerprint,
                tool=tool,
                now=now,
                token=new_token(),
                lease=lease,
                ttl=ttl,
                on_stale=on_stale,
                wall_offset=offset,
            )
            if record is not None:
                self._records[key] = record
            if claim.record is None:
                return claim
            return replace(claim, record=self._shown(claim.record, offset))

    def _finish(
        self,
        key: str,
        token: str,
        ttl: float,
        state: LedgerState | None,
        *,
        receipt: str | None = None,
        error: str | None = None,
        retryable: bool = False,
    ) -> None:
        with self._lock:
            record = decide_finish(
                self._records.get(key),
                key=key,
                token=token,
                now=self._clock.monotonic(),
                ttl=ttl,
                state=state,
                receipt=receipt,
                error=error,
                retryable=retryable,
            )
            if record is None:
                self._records.pop(key, None)
            else:
                self._records[key] = record

    def renew(self, key: str, token: str, lease: float, *, ttl: float = DEFAULT_TTL) -> None:
        """See ``Ledger.renew``."""
        with self._lock:
            self._records[key] = decide_renew(
                self._records.get(key),
                key=key,
                token=token,
                now=self._clock.monotonic(),
                lease=lease,
                ttl=ttl,
            )

    def get(self, key: str) -> LedgerRecord | None:
        """See ``Ledger.get``."""
        with self._lock:
            record = self._records.get(key)
            if record is None or record.expires_at <= self._clock.monotonic():
                return None
            return self._shown(record, self._offset())

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)
