"""``Executor``: run validated tool calls safely.

Per call, in order: refuse calls that did not validate (as data, never raised); for writes,
derive the idempotency key and claim it in the ledger (fail closed if the ledger is down); ask the
tool's circuit breaker; run attempts under tenacity with classified retries and two budgets;
record the outcome in the ledger; emit one observability record. Everything that can go wrong
with a call comes back as an ``ExecutionResult``; only cancellation and interrupts propagate.

Design notes:
- Timeouts: async tools run in a task that is cancelled at the timeout, and awaited (for at most
  a second) so that its cleanup ends before a retry or the result; one that ignores its
  cancellation is not tried again. Sync tools with a timeout run in a daemon thread that is
  abandoned at the timeout (Python cannot kill a thread), so for a write the outcome becomes
  ``unknown_outcome``, and it is not tried again even with ``retry_ambiguous`` while that thread
  runs (the attempts would overlap); a read is retried beside it, as a read repeats safely.
  Under ``aexecute`` too, a sync attempt with a timeout (its own or the request deadline's)
  gets a daemon thread of its own: in the loop's default executor, an abandoned attempt would
  hold a worker (a hung read and its retries, several) and ``asyncio.run`` would wait for it at
  shutdown. A sync attempt without a timeout waits for a worker of the default executor, which
  bounds how many run at once (nothing abandons such an attempt while its call waits for it, so
  the bound holds; a call cancelled while its untimed tool runs leaves that worker taken until
  the tool returns, and ``asyncio.run`` waits for it at shutdown, as the interpreter does at
  exit: a sync tool that can hang needs a ``timeout``); one cancelled while it waits there is
  withdrawn and never runs,
  so it is no attempt (the write's claim is released, the breaker is not charged), as is a
  timed attempt whose thread had not picked it up at its timeout (a ``timeout`` that is not
  ambiguous, retried like a connection pool's). So is an attempt the executor cannot start
  (the pool refuses the job, no thread can be created for a timeout), which ends the call
  ``internal_error``, and arguments an ``unpack=True`` function cannot
  bind are refused before the claim (``bad_signature``). What no arguments could change (a tool
  that is not callable, or has no ``ctx`` under ``context=True``) is refused at registration.
- Blocking ledgers (SQLite, Redis) are called from a worker thread in async mode, and for a
  claim made under a request deadline in sync mode too: the claim never outlasts the deadline
  (the call ends as ``ledger_unavailable``, nothing ran). A claim that completes after the
  caller gave up or was cancelled is released so it does not linger as in-progress. Recording
  the outcome afterwards is bounded the same way (with a short grace once the deadline has
  passed): a store that stops answering cannot hold a result the tool already produced; it is
  returned with a warning that the ledger may not have recorded it. With no thread to be had
  (the process at its thread limit) a claim fails closed (``ledger_unavailable``) and an
  outcome is recorded where the call runs, unbounded, rather than lost.
- Leases: a write's claim is leased for ``in_progress_expiry`` seconds (default: every attempt
  and wait of the retry policy, plus a margin), and renewed every third of that from the claim
  until its outcome is recorded, attempts and the waits between them alike, under ``execute``
  and ``aexecute``. So a claim is found stale (and met with ``on_stale_in_progress``) only once
  its worker stopped renewing it: the process died or froze, or the store refused renewals for
  a whole lease. A write that hangs without a timeout keeps its key in progress while its call
  waits; a timeout or a request deadline bounds that. One daemon thread per executor renews
  every claim in flight and ends a second after the last of them unless another comes; a
  renewal that fails is counted in ``ledger_errors`` and logged, never failing the call. One
  that finds the claim lost (a later call acted on a lapsed lease) is counted in
  ``leases_lost`` and logged; the call makes no further attempt (``stopped: claim_lost``) and
  its outcome is recorded as for any lost claim (refused with a warning if another call took
  the claim over, kept over an assumed outcome).
- Cancellation: a call is recorded (and its claim released or settled) wherever the
  cancellation lands; once the tool has run, the cancellation is raised only after its outcome
  was saved.
- The tool result is stored and returned in its JSON-compatible form
  (``toolwire.payloads.jsonable_result``), so a first execution and a replay look the same. A
  value with no JSON form (a client object, a function) is an ``invalid_result``, never its
  ``repr``, which could hold anything (a connection URL with its password).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import copy
import hashlib
import inspect
import json
import logging
import math
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field, replace
from operator import methodcaller
from typing import Any, Literal, Protocol, TypeVar, cast

from pydantic import BaseModel, SecretBytes, SecretStr
from pydantic_core import PydanticUndefined
from tenacity import AsyncRetrying, RetryCallState, Retrying, TryAgain, stop_after_attempt

from toolwire._pickling import LiveState
from toolwire.coercion import pointer
from toolwire.execution._checks import check_seconds
from toolwire.execution.breaker import BreakerConfig, CircuitBreaker, Permit
from toolwire.execution.budget import RequestContext, RetryBudget
from toolwire.execution.classify import (
    Classification,
    DeadlineExceeded,
    classify,
    is_interrupt,
)
from toolwire.execution.clock import Clock, SystemClock
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
from toolwire.execution.idempotency import (
    MIN_FINGERPRINT_KEY_BYTES,
    derive_key,
    fingerprints,
    flat_rows,
)
from toolwire.execution.ledger import (
    DEFAULT_TTL,
    Claim,
    Ledger,
    MemoryLedger,
    StalePolicy,
)
from toolwire.execution.ledger_sqlite import SqliteLedger
from toolwire.execution.observe import ExecutionRecord, FinalState, Observer, SpanLike
from toolwire.execution.retry import RetryPolicy, RetryVerdict, StopReason, decide_retry
from toolwire.payloads import (
    FREE_FORM_TYPE,
    MAX_RESULT_CHARS,
    MESSAGES,
    Lang,
    check_cap,
    check_lang,
    compact_json,
    jsonable_result,
    text,
)
from toolwire.validation import (
    Redactor,
    dotted_without_values,
    scrubbed_text,
    secret_text,
    secret_texts,
    shown_text,
    without_values,
)

__all__ = [
    "Call",
    "ExecutionResult",
    "Executor",
    "Timings",
    "ToolContext",
    "ToolSpec",
    "ValidatedCall",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_log = logging.getLogger("toolwire.execution")

# Error slugs that mean the arguments never parsed (pydantic's and the Rust core's).
_PARSE_ERROR_TYPES = frozenset(
    {
        "json_invalid",
        "json_type",
        "invalid_json",
        "truncated",
        "incomplete",
        "unexpected_eof",
        "parse_error",
        "concatenated_values",
        "depth_limit",
        "too_deep",
        "too_large",
        "not_object",
        "invalid_utf8",
    }
)
# Failure kinds that say something about the tool's health (the breaker's "failure").
_BREAKER_FAILURES = frozenset(
    {
        "timeout",
        "rate_limited",
        "bad_gateway",
        "service_unavailable",
        "gateway_timeout",
        "connection_error",
        "server_error",
        "unknown_error",
    }
)
_MESSAGE_LIMIT = 500
# The fields a `NeedsClarification` may ask for (each name cut like any shown text).
_MAX_MISSING = 20
# Seconds a blocking ledger is given to record a call's outcome once the request deadline has
# passed (a tool stopped by the deadline still has its outcome written; a hung store does not
# hold the call).
_SETTLE_GRACE = 1.0
# Tries of a step that records a write's outcome (complete, fail, release) while the store
# fails, and the pause before the second (doubled before the third): a step left undone keeps
# the claim in progress for its whole lease and then, under `report`, unknown for good.
_SETTLE_TRIES = 3
_SETTLE_BACKOFF = 0.05
# Longest pause, in seconds, between two background tries of an outcome the store could not
# record while its call waited (see `Executor._record_later`).
_LATE_RECORD_EVERY = 5.0
# Threads that make those tries at most, per executor: a store write that hangs holds up one
# of them, not every other outcome; more hanging at once wait for one to come free.
_LATE_RECORD_WORKERS = 4
# Real seconds the interpreter's exit waits for the last try of each outcome still pending.
_LATE_RECORD_AT_EXIT = 5.0
# Errors listed in a refusal payload (as many as `Outcome.errors` holds).
_MAX_ERRORS = 5
# The tool's name in metric labels and span names for a call to a tool the executor does not
# have: a name the model made up, which would add a time series per name, without bound.
_UNREGISTERED = "(unregistered)"


class ValidatedCall(Protocol):
    """What the executor needs from a validated call (``toolwire.Outcome`` satisfies it)."""

    @property
    def tool(self) -> str:
        """Tool name."""
        ...

    @property
    def call_id(self) -> str | None:
        """Provider ``tool_call_id``."""
        ...

    @property
    def model(self) -> BaseModel | Mapping[str, Any] | None:
        """Validated arguments (a model instance or a plain mapping)."""
        ...

    @property
    def ok(self) -> bool:
        """Whether validation succeeded."""
        ...

    @property
    def kind(self) -> str:
        """``ok``, ``model_error``, ``business_error`` or ``needs_clarification``."""
        ...

    @property
    def errors(self) -> Sequence[Any]:
        """Validation errors (pydantic error-dict shape)."""
        ...


@dataclass(frozen=True, slots=True)
class Call:
    """A ready-to-run call, for callers that validated arguments themselves.

    Attributes:
        tool: Tool name.
        call_id: Provider ``tool_call_id``.
        model: Validated model or plain mapping of arguments.
        raw_arguments: The argument text as the model sent it (kept for logs and replays).
            Without ``model`` it is what the call runs with, and must read as a JSON object:
            other text (cut off, a list) is refused as ``invalid_arguments``, never run.
        ok: Always true unless built from a failed validation.
        kind: Validation outcome kind.
        errors: Validation errors.
    """

    tool: str
    call_id: str | None
    model: BaseModel | Mapping[str, Any] | None = None
    raw_arguments: str | None = None
    ok: bool = True
    kind: str = "ok"
    errors: Sequence[Any] = ()

    def __post_init__(self) -> None:
        problem = _malformed(self)
        if problem is not None:
            raise _misuse(f"Call: {problem}")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Passed to tools registered with ``context=True`` (as keyword argument ``ctx``).

    Attributes:
        tool: Tool name.
        call_id: Provider ``tool_call_id``.
        idempotency_key: Key of this write (forward it downstream, e.g. as ``Idempotency-Key``).
        request_id: Request identifier.
        session_id: Session identifier.
        attempt: 1-based attempt number.
        deadline_remaining: Seconds this attempt may take: the smaller of the tool's
            `timeout` and what is left of the request deadline (None when neither is set).
            Pass it on as the timeout of the tool's own downstream calls.
    """

    tool: str
    call_id: str | None
    idempotency_key: str | None
    request_id: str
    session_id: str
    attempt: int
    deadline_remaining: float | None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A registered tool and its execution policy.

    Attributes:
        fn: The function (sync or async).
        name: Tool name (filled in at registration).
        side_effects: True for writes: idempotency ledger, no blind re-execution.
        idempotency_key: Name of an argument field holding a business key to dedupe on, instead
            of session + ``tool_call_id``.
        timeout: Seconds per attempt (``None``: no timeout).
        in_progress_expiry: The lease of a claim: seconds after which an unfinished claim
            whose worker stopped renewing it is stale. The executor renews it every third of
            this while the call runs, so a write may run longer; a shorter lease finds a
            crashed worker sooner. Default: long enough for every attempt and wait (backoff or
            honoured ``Retry-After``), plus a margin.
        on_stale_in_progress: What a later call does with a stale claim: ``report`` (mark it
            ``unknown`` and say so; the default, nothing runs twice), ``assume_failed_and_retry``
            (execute again; only for tools whose downstream dedupes on the key) or
            ``assume_succeeded`` (answer as succeeded without a receipt).
        retry_ambiguous: Retry timeouts and resets for a write (the downstream dedupes on
            ``ctx.idempotency_key``).
        unpack: Call ``fn(**arguments)`` instead of ``fn(arguments)``.
        context: Pass a ``ToolContext`` as keyword argument ``ctx``.
        breaker: Per-tool breaker settings (``None``: the executor's default).
        record_ttl: Ledger retention for this tool (``None``: the executor's default).

    Raises:
        ValueError: An unknown ``on_stale_in_progress``, or a ``timeout``,
            ``in_progress_expiry`` or ``record_ttl`` that is not ``None`` or a finite number
            of seconds above zero.
        MisuseError: ``fn`` is not callable, or cannot be called as the executor calls it:
            ``fn(arguments)``, with ``ctx=`` under ``context=True`` (with ``unpack=True`` the
            arguments are checked against the signature per call, ``ctx`` here).
    """

    fn: Callable[..., Any]
    name: str = ""
    side_effects: bool = False
    idempotency_key: str | None = None
    timeout: float | None = None
    in_progress_expiry: float | None = None
    on_stale_in_progress: StalePolicy = "report"
    retry_ambiguous: bool = False
    unpack: bool = False
    context: bool = False
    breaker: BreakerConfig | None = None
    record_ttl: float | None = None
    is_async: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.on_stale_in_progress not in (
            "report",
            "assume_failed_and_retry",
            "assume_succeeded",
        ):
            raise ValueError(
                "on_stale_in_progress must be 'report', 'assume_failed_and_retry' or "
                f"'assume_succeeded', not {self.on_stale_in_progress!r}"
            )
        check_seconds("timeout", self.timeout)
        check_seconds("in_progress_expiry", self.in_progress_expiry)
        check_seconds("record_ttl", self.record_ttl)
        # A flag given as text reads as True (`side_effects="no"` would make a write), so each
        # must be a bool.
        for flag in ("side_effects", "retry_ambiguous", "unpack", "context"):
            value = getattr(self, flag)
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be True or False, not {type(value).__name__}")
        # Typed loosely here: the annotations say what a caller should pass, not what it did.
        key, breaker = cast(object, self.idempotency_key), cast(object, self.breaker)
        if key is not None and not isinstance(key, str):
            raise TypeError(
                "idempotency_key must be the name of an argument field (a str) or None, not "
                f"{type(key).__name__}"
            )
        if breaker is not None and not isinstance(breaker, BreakerConfig):
            raise TypeError(
                f"breaker must be a BreakerConfig or None, not {type(breaker).__name__}"
            )
        fn = self.fn
        problem = _registration_problem(fn, unpack=self.unpack, context=self.context)
        if problem is not None:
            name = self.name or getattr(fn, "__name__", None)
            raise _misuse(f"{'the tool' if not name else f'tool {name!r}'} {problem}")
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        object.__setattr__(self, "is_async", is_async)


@dataclass(frozen=True, slots=True)
class Timings:
    """Seconds spent per phase (``None`` where the caller did not measure it)."""

    parse: float | None = None
    validation: float | None = None
    execution: float = 0.0
    total: float = 0.0


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    """The outcome of one call. Exactly one per call handed to the executor.

    Attributes:
        call_id: Provider ``tool_call_id``.
        tool: Tool name.
        state: Final state.
        value: JSON-compatible tool result (also for replays), when there is one.
        error: Model-facing error payload (``type``, ``message``, ``retryable`` and details).
        attempts: Downstream attempts made by this call (0 for replays and refusals).
        idempotency_key: Ledger key for writes.
        args_hash: Fingerprint of the canonicalised arguments, secret values (``SecretStr``,
            ``SecretBytes``, those in ``Outcome.secrets``) written as one marker.
        timings: Phase timings.
        duplicate_execution: True if this call executed a write that may already have run:
            it took over a stale in-progress claim and made an attempt. The worker whose claim
            was taken over is told so in ``warnings``; its own execution was the first one.
        warnings: Non-fatal problems (e.g. the ledger could not record a success).
        unrecorded: True when this write's outcome (or the release of its claim) is not yet
            in the idempotency ledger: the store failed every try, or did not answer, within
            the time the call could wait. ``value`` and ``error`` are still what the tool did;
            a warning says why. The executor goes on trying to record it in the background
            (see ``Executor``); until it lands, an identical call finds the claim in progress
            (or, once its lease lapsed, meets the tool's stale-claim policy, which the late
            record then overrides where the policy only assumed an outcome).
        lang: The language of texts written for the model later (the executor's ``lang``).
        synthetic_id: For a call the provider sent without an id (Gemini's), the id
            toolwire answers it with, ``toolwire_<ordinal>`` (``Outcome.synthetic_id``):
            ``tool_messages`` matches the result to its call by it, in any order.
    """

    call_id: str | None
    tool: str
    state: FinalState
    value: Any = None
    error: dict[str, Any] | None = None
    attempts: int = 0
    idempotency_key: str | None = None
    args_hash: str | None = None
    timings: Timings = field(default_factory=Timings)
    duplicate_execution: bool = False
    warnings: tuple[str, ...] = ()
    exception: ExecutionError | None = field(default=None, repr=False, compare=False)
    lang: Lang = field(default="en", repr=False, compare=False)
    unrecorded: bool = False
    synthetic_id: str | None = None

    @property
    def ok(self) -> bool:
        """True when the tool's result (fresh or replayed) is available."""
        return self.error is None and self.state in ("ok", "duplicate_suppressed")

    def to_payload(self) -> dict[str, Any]:
        """The JSON-compatible body of the tool result message for the model."""
        if self.ok:
            payload: dict[str, Any] = {"ok": True, "result": self.value}
            if self.state == "duplicate_suppressed":
                payload["replayed"] = True
            return payload
        return {"ok": False, "state": self.state, "error": self.error or {}}

    def content(self, *, max_result_chars: int | None = MAX_RESULT_CHARS) -> str:
        """``to_payload()`` as compact JSON text, unless it is a result longer than
        ``max_result_chars`` characters (None: no cap): then a ``result_too_large`` error
        giving the size and the cap, as ``tool_messages`` sends (see ``message_content``)."""
        return self.message_content(max_result_chars=max_result_chars)[0]

    def message_content(
        self, *, max_result_chars: int | None = MAX_RESULT_CHARS
    ) -> tuple[str, bool]:
        """The text for the model and whether it reports a failure (Anthropic's ``is_error``).

        Args:
            max_result_chars: The cap on the text in characters (None: no cap). A result
                past it is withheld (``result_too_large``); an error payload, short by
                construction (each text the model sent is cut where it is echoed), is sent
                without its details past a smaller cap.

        Returns:
            ``(content(), True)`` for a failure or a result past the cap, else
            ``(content(), False)``.

        Raises:
            ValueError: ``max_result_chars`` is not a positive int or None.
        """
        check_cap(max_result_chars)
        content = compact_json(self.to_payload())
        if not self.ok:
            if max_result_chars is None or len(content) <= max_result_chars:
                return content, True
            # Every text the model sent is cut where it is echoed, so only a small cap gets
            # here: the details go (named in `omitted`), what failed and whether to call again
            # stay.
            error: dict[str, Any] = {}
            omitted: list[str] = []
            for name, item in (self.error or {}).items():
                if isinstance(item, str):
                    error[name] = shown_text(item)
                elif item is None or isinstance(item, (bool, int, float)):
                    error[name] = item
                else:
                    omitted.append(name)
            if omitted:
                error["omitted"] = omitted
            return compact_json({"ok": False, "state": self.state, "error": error}), True
        if max_result_chars is None or len(content) <= max_result_chars:
            return content, False
        # The tool ran; only its answer is withheld, and the model is told how much less to
        # ask for rather than handed a cut-off half of it. A write made its change: asking
        # again would make another.
        write = self.idempotency_key is not None
        key = "exec.write_result_too_large" if write else "exec.result_too_large"
        error = {
            "type": "result_too_large",
            "message": text(key, self.lang, size=len(content), limit=max_result_chars),
            "retryable": not write,
            "size": len(content),
            "limit": max_result_chars,
        }
        return compact_json({"ok": False, "state": self.state, "error": error}), True

    def raise_for_error(self) -> None:
        """Raise the typed exception behind a refused call, if there is one.

        Raises:
            IdempotencyConflict: The key was used with different arguments.
            IdempotencyInProgress: An identical call is still executing.
            LedgerUnavailable: The ledger could not be used, so the write did not run.
        """
        if self.exception is not None:
            raise self.exception


class _BreakerOpen(Exception):
    """The tool's breaker refused an attempt; the model may call again after ``retry_after``
    seconds (the rest of the open period in whole seconds, at least 1: a half-open breaker
    whose probes are taken frees up as soon as one ends)."""

    def __init__(self, tool: str, retry_after: float) -> None:
        super().__init__(tool)
        self.retry_after = retry_after


class _NotStarted(Exception):
    """An attempt whose tool never started for a reason of the executor's own (the worker
    pool refused the job, no thread could be created): it cannot have taken effect, so it is
    no attempt (see `Executor._not_started`), and the call ends with `internal_error`."""


class _OwnDeadline(DeadlineExceeded):
    """The request's deadline, as the executor itself reports it: its text is the executor's
    and may reach the model. A tool's own `DeadlineExceeded` (after a downstream call it
    timed out itself, say) is any exception's: its text can hold a URL with credentials."""


class _AttemptTimeout(TimeoutError):
    """An attempt cut off at its timeout; `still_running` when an async tool ignored its
    cancellation past the grace, or a sync tool's thread, which nothing can stop, had not
    ended (it is abandoned, as documented)."""

    def __init__(self, message: str, *, still_running: bool = False) -> None:
        super().__init__(message)
        self.still_running = still_running


@dataclass(eq=False)
class _Run:
    """Mutable state of one call while it executes."""

    spec: ToolSpec
    call: ValidatedCall
    context: RequestContext
    arguments: Any
    args_hash: str
    key: str | None
    started: float
    span: SpanLike
    parse_time: float | None
    validation_time: float | None
    coercions: int
    fingerprint: str = ""
    """The ledger's fingerprint of the arguments, secret values included (see `_prepare`); never
    shown: `args_hash` is what logs, spans and results get."""
    claim: Claim | LedgerUnavailable | None = None
    attempts: int = 0
    exec_started: float | None = None
    last: Classification | None = None
    last_exc: BaseException | None = None
    in_flight: bool = False
    maybe_applied: Classification | None = None
    """The failure of the latest attempt that may have taken effect, if one did: a later
    attempt that certainly did not (a 503 after a read timeout) leaves the write unknown."""
    breaker_rejected: bool = False
    stop_reason: StopReason | None = None
    next_wait: float = 0.0
    granted: RetryVerdict | None = None
    """A retry decided on whose attempt has not started yet (see `Executor._refund`)."""
    duplicate_execution: bool = False
    recovered: bool = False
    deposited: bool = False
    """Whether this call has made its deposit into the retry budget (see `_begin_attempt`)."""
    warnings: list[str] = field(default_factory=lambda: [])
    unrecorded: bool = False
    """The outcome's ledger step failed or did not answer in time (see `Executor._ledger_op`)."""
    breaker: CircuitBreaker | None = None
    """The breaker of the tool as registered when the call started (see `Executor._breaker_of`):
    a tool replaced meanwhile keeps its attempts out of its successor's breaker."""
    lease_lost: bool = False
    """Set by the lease keeper's thread when a renewal found the write's claim no longer
    held (see `Executor._renewer`): no further attempt is made."""
    registered: bool = True
    """Whether the executor has a tool of the call's name: if not, the name is the model's
    own, kept out of metric labels and span names (see `_UNREGISTERED`)."""


def _whole_seconds(wait: float) -> float:
    """A breaker's remaining open time as the model reads it: whole seconds, at least 1. Read
    to the millisecond first, so that float error (60.000000001 s) does not add a second."""
    return float(max(1, math.ceil(round(wait, 3))))


def _classify(exc: BaseException, now: float) -> Classification:
    """`classify`, which probes the exception's attributes; one whose attributes raise (a
    `status_code` property, say) is an unknown failure that may have been applied, so that the
    attempt still ends and its breaker permit is given back."""
    if isinstance(exc, _AttemptTimeout) and exc.still_running:
        # Another attempt would run beside the one that is still going.
        return Classification("timeout", retryable=False, ambiguous=True)
    try:
        return classify(exc, now=now)
    except Exception:
        return Classification("unknown_error", retryable=False, ambiguous=True)


def _short(exc: BaseException) -> str:
    return _cut(_whole(exc))


def _whole(exc: BaseException) -> str:
    """An exception's text, uncut (to scrub before it is cut: a cut secret would not match)."""
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # a broken __str__ must not turn a failed call into a raised one
        return type(exc).__name__


def _cut(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _shown_name(tool: object) -> str:
    """A call's tool name for a log line or a record, cut like any text a model sent: it may
    be one the model made up, of any length (and a look-alike built wrongly may hold
    anything there)."""
    return shown_text(tool if isinstance(tool, str) else _safe_repr(tool))


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _jsonable(value: Any, *, lenient: bool = False) -> Any:
    """The JSON-compatible form of a tool result (`jsonable_result`), checked to be writable
    as JSON text; `lenient` writes a value with no JSON form as its `repr` (for error details,
    which are the executor's own, never for what a tool returned).

    Raises:
        ValueError: (or another ``Exception``) if the value cannot be written: a value with no
            JSON form, a reference cycle, bytes that are not UTF-8, an integer past CPython's
            digit limit...
    """
    if lenient:
        return jsonable_result(value, fallback=_safe_repr)
    return jsonable_result(value)


class Executor(LiveState):
    """Runs validated tool calls with retries, budgets, idempotency, breakers and observability.

    Args:
        tools: Tool name to function or ``ToolSpec``.
        ledger: Idempotency ledger for writes, or a file path for a ``SqliteLedger``. Without
            one, writes use a per-executor ``MemoryLedger`` (not durable; a warning is logged).
        clock: Time source and sleeper (inject a ``FakeClock`` in tests).
        retry: Retry policy (3 attempts, full-jitter backoff).
        retry_budget: Per-process retry ratio budget; share one between executors to make it
            process-wide. Default: one per executor.
        breaker: Default breaker settings per tool; ``False`` disables breakers.
        observer: Where records, spans and counters go. Default: one per executor.
        namespace: Prefix of every idempotency key (tenant, deployment).
        fingerprint_key: A secret of the deployment (at least 16 bytes) under which the
            ledger's argument fingerprints are keyed (HMAC-SHA256), and with them the
            idempotency keys of writes sent without a call id. Without it they are plain
            sha256 digests over every argument, secret ones included: whoever sees such a key
            (a payment provider gets it as a header) and can guess the other arguments finds a
            secret of few possible values (a PIN, a CVV) by trying them all. Every process
            sharing a ledger needs the same key; changing it changes those keys.
        record_ttl: Ledger retention in seconds (default 24 h).
        redact: The redaction hook given to ``Toolset(redact=...)``: ``(json_pointer, text) ->
            text``. Exception text (in logs, warnings and the texts a tool wrote for the model)
            is scrubbed of every argument value the hook would hide (it is called with each
            string argument and its pointer), of ``SecretStr``/``SecretBytes`` values, and
            finally passed to the hook whole with the pointer ``""``.
        lang: Language of the texts written for the model (``"en"`` or ``"zh"``), as
            ``Toolset(lang=...)``.
    """

    _not_copied = (
        "it holds locks, worker threads, breakers and ledger connections. Build one in each process"
    )

    def __init__(
        self,
        tools: Mapping[str, Callable[..., Any] | ToolSpec] | None = None,
        *,
        ledger: Ledger | str | os.PathLike[str] | None = None,
        clock: Clock | None = None,
        retry: RetryPolicy | None = None,
        retry_budget: RetryBudget | None = None,
        breaker: BreakerConfig | Literal[False] | None = None,
        observer: Observer | None = None,
        namespace: str = "",
        fingerprint_key: bytes | str | None = None,
        record_ttl: float = DEFAULT_TTL,
        redact: Redactor | None = None,
        lang: Lang = "en",
    ) -> None:
        _check_settings(
            tools=tools,
            ledger=ledger,
            clock=clock,
            retry=retry,
            retry_budget=retry_budget,
            breaker=breaker,
            observer=observer,
            namespace=namespace,
            redact=redact,
            lang=lang,
        )
        self.clock: Clock = clock or SystemClock()
        self.redact = redact
        self.lang: Lang = lang
        # A ledger opened here from a path is this executor's to close (see `close`).
        owned = isinstance(ledger, (str, os.PathLike))
        if isinstance(ledger, (str, os.PathLike)):
            ledger = SqliteLedger(ledger, clock=self.clock)
        self._ledger = ledger
        self.retry = retry or RetryPolicy()
        self.retry_budget = retry_budget or RetryBudget(clock=self.clock)
        self._breaker_default: BreakerConfig | None = (
            None if breaker is False else (breaker or BreakerConfig())
        )
        self._breakers_enabled = breaker is not False
        self.observer = observer or Observer()
        self.namespace = namespace
        # Typed loosely here so that a key of another type (a memoryview) is refused at once
        # rather than by the first write that needs it.
        key = cast(object, fingerprint_key)
        if isinstance(key, str):
            key = key.encode("utf-8")
        if key is not None and not isinstance(key, bytes):
            raise TypeError(f"fingerprint_key must be bytes or str, not {type(key).__name__}")
        if key is not None and len(key) < MIN_FINGERPRINT_KEY_BYTES:
            raise ValueError(
                f"fingerprint_key must have at least {MIN_FINGERPRINT_KEY_BYTES} bytes: "
                "a short key can be guessed as a secret argument can"
            )
        self._fingerprint_key = key
        check_seconds("record_ttl", record_ttl)
        self.record_ttl = record_ttl
        self._tools: dict[str, ToolSpec] = {}
        self._breakers: dict[str, CircuitBreaker] = {}
        self._lock = threading.Lock()
        self._leases = _LeaseKeeper(self.clock, "toolwire-leases")
        # Apart from the renewals: a try stuck on a slow store must not hold up the renewal of
        # every other write in flight, whose leases would then run out and could be taken over.
        self._late_records = _LateRecords(self.clock, "toolwire-late-records", self._lost_at_exit)
        self._owns_ledger = owned
        # key -> (token, step) of each outcome this executor still has to record (see
        # `_record_later`): an identical call records it before it claims the key.
        self._unrecorded: dict[str, tuple[str, Callable[[Ledger, str, str], None]]] = {}
        # Tokens of those `close` (or the exit) gave up on and reported: each outcome has one
        # result, so a record that lands later, or an identical call's, reports nothing more.
        self._given_up: set[str] = set()
        self._renew_unsupported_logged = False
        for name, tool in (tools or {}).items():
            self.register(name, tool)

    # ---- registration -------------------------------------------------------------------

    def register(self, name: str, tool: Callable[..., Any] | ToolSpec, **options: Any) -> ToolSpec:
        """Register ``tool`` under ``name`` (options as in ``ToolSpec``) and return its spec.

        Safe from any thread, also while calls run. Registering a name again replaces its tool
        for the calls that start afterwards and gives it a fresh circuit breaker; a call
        already running keeps the spec and the breaker it started with to its end, so the old
        implementation's outcomes never count against the new one's breaker.
        """
        if not isinstance(cast(object, name), str):
            raise TypeError(f"a tool's name must be a str, not {type(name).__name__}")
        if isinstance(tool, ToolSpec):
            values = {f: getattr(tool, f) for f in ToolSpec.__dataclass_fields__ if f != "is_async"}
            values.update(options, name=name)
            spec = ToolSpec(**values)
        else:
            spec = ToolSpec(tool, name=name, **options)
        with self._lock:
            self._tools[name] = spec
            self._breakers.pop(name, None)
        return spec

    def tool(
        self,
        name: str | None = None,
        *,
        side_effects: bool = False,
        idempotency_key: str | None = None,
        timeout: float | None = None,
        in_progress_expiry: float | None = None,
        on_stale_in_progress: StalePolicy = "report",
        retry_ambiguous: bool = False,
        unpack: bool = False,
        context: bool = False,
        breaker: BreakerConfig | None = None,
        record_ttl: float | None = None,
    ) -> Callable[[F], F]:
        """Decorator registering a function as a tool (see ``ToolSpec`` for the options).

        Args:
            name: Tool name; defaults to the function's ``__name__``.
            side_effects: The tool writes; use the idempotency ledger.
            idempotency_key: Argument field holding a business key.
            timeout: Seconds per attempt.
            in_progress_expiry: The lease of a claim (renewed while the call runs).
            on_stale_in_progress: Stale-claim policy.
            retry_ambiguous: Retry ambiguous failures of a write.
            unpack: Call with keyword arguments.
            context: Pass ``ctx: ToolContext``.
            breaker: Breaker settings for this tool.
            record_ttl: Ledger retention for this tool.

        Returns:
            A decorator that registers the function and returns it unchanged.
        """

        def decorate(fn: F) -> F:
            self.register(
                name or fn.__name__,
                fn,
                side_effects=side_effects,
                idempotency_key=idempotency_key,
                timeout=timeout,
                in_progress_expiry=in_progress_expiry,
                on_stale_in_progress=on_stale_in_progress,
                retry_ambiguous=retry_ambiguous,
                unpack=unpack,
                context=context,
                breaker=breaker,
                record_ttl=record_ttl,
            )
            return fn

        return decorate

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """Registered tools by name (a snapshot: later registrations do not change it)."""
        with self._lock:
            return dict(self._tools)

    @property
    def ledger(self) -> Ledger:
        """The idempotency ledger (created on first use if none was given)."""
        with self._lock:
            if self._ledger is None:
                self.observer.log(
                    _log,
                    logging.WARNING,
                    "toolwire: no idempotency ledger configured; using an in-memory ledger "
                    "(not durable, not shared between processes)",
                )
                self._ledger = MemoryLedger(clock=self.clock)
            return self._ledger

    def close(self, timeout: float = _LATE_RECORD_AT_EXIT) -> None:
        """Record the outcomes this executor still holds, and close the ledger it opened.

        An outcome the store could not record while its call waited is tried in the
        background (see ``outcomes_recorded_late``); ``close`` tries each one once more at
        once and waits up to ``timeout`` real seconds for those tries. One still not recorded
        is given up and logged as an error (its claim is left to the tool's stale policy,
        though an identical call to this executor still records it first), never dropped in
        silence. One whose try is still under way when the wait ends (``timeout=0`` gives up
        at once) is logged the same way, saying that the try may record it yet: the report
        is the outcome's one result, and a try or identical call that records it afterwards
        reports nothing more (no second ``outcomes_recorded_late``). The interpreter's exit
        does the same, with a 5 s bound, for an executor not closed. A ledger the executor
        opened from a path is closed (it reopens on the next call); one passed in is the
        caller's to close. The executor stays usable.

        Args:
            timeout: Real seconds to wait for the outcomes still held (finite, not negative).
        """
        check_seconds("timeout", timeout, zero=True)
        for what, under_way in self._late_records.flush(timeout):
            self._lost(what, under_way, "the executor was closed")
        if self._owns_ledger and self._ledger is not None:
            self._ledger.close()

    def _lost_at_exit(self, what: str, under_way: bool) -> None:
        self._lost(what, under_way, "the interpreter exited")

    def _lost(self, what: str, under_way: bool, why: str) -> None:
        self.observer.log(
            _log,
            logging.ERROR,
            "toolwire: the outcome of %s was not recorded before %s%s; its claim is left to "
            "the tool's stale-claim policy",
            what,
            why,
            " (a try still under way may record it yet, unreported)" if under_way else "",
        )

    def _give_up(self, key: str, token: str) -> bool:
        """Take the report of ``token``'s outcome for `close` or the exit: False when it was
        recorded meanwhile (that record was its result)."""
        with self._lock:
            if self._unrecorded.get(key, ("",))[0] != token:
                return False
            self._given_up.add(token)
            return True

    def breaker_for(self, tool: str) -> CircuitBreaker | None:
        """The circuit breaker of ``tool`` (``None`` if breakers are disabled)."""
        if not self._breakers_enabled:
            return None
        with self._lock:
            return self._shared_breaker(tool, self._tools.get(tool))

    def _shared_breaker(self, tool: str, spec: ToolSpec | None) -> CircuitBreaker:
        """The breaker ``tool`` shares between its calls, made on first use (under the lock)."""
        breaker = self._breakers.get(tool)
        if breaker is None:
            config = (spec.breaker if spec else None) or self._breaker_default
            breaker = CircuitBreaker(tool, config, clock=self.clock)
            self._breakers[tool] = breaker
        return breaker

    def _breaker_of(self, spec: ToolSpec) -> CircuitBreaker | None:
        """The breaker a call of ``spec`` reports to, taken once when it starts.

        Registering a tool again gives its name a new breaker. A call of the replaced spec
        that is still running keeps the breaker it started with, or, when the spec was replaced
        before its call took one, a breaker of its own: either way the old implementation's
        failures never open (nor its successes close) the new one's breaker.
        """
        if not self._breakers_enabled:
            return None
        with self._lock:
            if self._tools.get(spec.name) is spec:
                return self._shared_breaker(spec.name, spec)
        return CircuitBreaker(spec.name, spec.breaker or self._breaker_default, clock=self.clock)

    def request(
        self,
        request_id: str | None = None,
        session_id: str = "",
        *,
        retry_budget: int = 5,
        timeout: float | None = None,
    ) -> RequestContext:
        """Create a ``RequestContext`` whose deadline is ``timeout`` seconds from now.

        Raises:
            ValueError: ``timeout`` is negative, NaN or infinite (``None`` is no deadline),
                or ``retry_budget`` is not a whole number >= 0.
            TypeError: ``request_id`` or ``session_id`` is not a str.
        """
        check_seconds("timeout", timeout, zero=True)
        return RequestContext(
            request_id=request_id or uuid.uuid4().hex,
            session_id=session_id,
            retry_budget=retry_budget,
            deadline=None if timeout is None else self.clock.monotonic() + timeout,
        )

    # ---- public execution API -------------------------------------------------------------

    def execute(
        self,
        call: ValidatedCall,
        context: RequestContext | None = None,
        *,
        parse_time: float | None = None,
        validation_time: float | None = None,
        coercions: int | None = None,
    ) -> ExecutionResult:
        """Execute one call synchronously.

        Args:
            call: The validated call (``Outcome`` or ``Call``).
            context: The user request it belongs to (budget, deadline, session).
            parse_time: Seconds spent parsing the arguments (for the record).
            validation_time: Seconds spent validating them (for the record).
            coercions: Number of type coercions validation applied (for the record).

        Returns:
            The result; failures are data, never exceptions: a call that raises instead of
            settling (a look-alike whose arguments raise when read) is ``internal_error``, as
            under ``execute_all``.

        Raises:
            TypeError: If the tool is async (use ``aexecute``).
            MisuseError: The call is not well formed: its ``tool`` is no str, or its
                ``call_id`` neither a str nor None (a look-alike of ``Call`` built wrongly;
                ``Call`` itself refuses them when built).
            KeyboardInterrupt: Propagated after recording the call; so are ``SystemExit``
                and an exception group holding either (raised by a tool's task group).
        """
        _check_call(call)  # raised, as is an async tool: the caller's mistakes
        try:
            return self._execute(call, context, parse_time, validation_time, coercions)
        except _AsyncToolInSync:
            raise
        except Exception as exc:  # e.g. a look-alike call whose arguments raise when read
            return self._internal_error(call, exc, context or self.request(), record=True)

    def _execute(
        self,
        call: ValidatedCall,
        context: RequestContext | None,
        parse_time: float | None = None,
        validation_time: float | None = None,
        coercions: int | None = None,
    ) -> ExecutionResult:
        """`execute` for a call already checked with `_check_call`."""
        with self._lock:
            spec = self._tools.get(call.tool)
        if call.ok and spec is not None and spec.is_async:
            raise _AsyncToolInSync(f"tool {spec.name!r} is async; use Executor.aexecute")
        # The spec checked above is the one that runs, whatever is registered meanwhile.
        run = self._prepare(call, context, parse_time, validation_time, coercions, spec)
        if isinstance(run, ExecutionResult):
            return run
        if run.key is not None:
            claim = self._claim_in_time(run)
            if claim is None:
                return self._late_before_claim(run)
            run.claim = claim
            early = self._claim_result(run)
            if early is not None:
                return early
        value: Any = None
        held = self._hold_lease(run)
        try:
            try:
                retrying = Retrying(
                    stop=stop_after_attempt(self.retry.max_attempts),
                    wait=lambda _: run.next_wait,
                    retry=lambda state: self._should_retry(run, state),
                    sleep=self.clock.sleep,
                    reraise=True,
                )
                for attempt in retrying:
                    with attempt, _hidden_from_tenacity():
                        value = self._attempt_sync(run)
            finally:
                # Before the outcome is recorded: a renewal after it would find the claim
                # settled and report it lost.
                self._leases.drop(held)
        except BaseException as raised:
            exc = _uncarried(raised)
            self._refund(run)
            # Nothing cancels a synchronous call from outside: a CancelledError came from the
            # tool (an event loop it ran). It ends the call with its result (for a write:
            # unknown_outcome), as any other failure of the tool does.
            own = isinstance(exc, asyncio.CancelledError)
            return self._settle_failure(run, exc, reraise=not own)
        return self._settle_success(run, value)

    async def aexecute(
        self,
        call: ValidatedCall,
        context: RequestContext | None = None,
        *,
        parse_time: float | None = None,
        validation_time: float | None = None,
        coercions: int | None = None,
    ) -> ExecutionResult:
        """Execute one call in the event loop (sync tools run in a worker thread: with a
        timeout, a daemon thread of its own, abandoned at the timeout; without, a worker of
        the loop's default executor, which ``asyncio.run`` waits for at shutdown even after
        the call was cancelled: give a sync tool that can hang a timeout).

        Args:
            call: The validated call.
            context: The user request it belongs to.
            parse_time: Seconds spent parsing the arguments.
            validation_time: Seconds spent validating them.
            coercions: Number of coercions validation applied.

        Returns:
            The result; failures are data, never exceptions. That includes a
            ``CancelledError`` the tool raised while the caller was not being cancelled (it
            awaited something another component cancelled): the call ends
            ``downstream_failed`` with type ``cancelled`` (a write: ``unknown_outcome``), as
            in ``execute`` and ``aexecute_all``.

        Raises:
            MisuseError: The call is not well formed (see ``execute``).
            asyncio.CancelledError: When the caller's task is cancelled: propagated (never
                retried) after recording the call. Telling the two apart needs
                ``Task.cancelling`` (Python 3.11+); before that, every one propagates.
            KeyboardInterrupt: As in ``execute``, with ``SystemExit`` and an exception group
                holding either.
        """
        _check_call(call)  # raised: the caller's mistake
        try:
            return await self._aexecute(call, context, parse_time, validation_time, coercions)
        except Exception as exc:  # e.g. a look-alike call whose arguments raise when read
            return self._internal_error(call, exc, context or self.request(), record=True)

    async def _aexecute(
        self,
        call: ValidatedCall,
        context: RequestContext | None,
        parse_time: float | None = None,
        validation_time: float | None = None,
        coercions: int | None = None,
    ) -> ExecutionResult:
        """`aexecute` for a call already checked with `_check_call`."""
        with self._lock:
            spec = self._tools.get(call.tool)
        run = self._prepare(call, context, parse_time, validation_time, coercions, spec)
        if isinstance(run, ExecutionResult):
            return run
        if run.key is not None:
            try:
                claim = await self._aclaim(run)
            except asyncio.CancelledError as exc:
                # Cancelled while claiming (a late claim is given back): nothing ran, but the
                # call is recorded like a cancellation at any other point.
                return self._settle_failure(run, exc)
            if claim is None:
                return self._late_before_claim(run)
            run.claim = claim
            early = self._claim_result(run)
            if early is not None:
                return early
        value: Any = None
        held = self._hold_lease(run)
        try:
            try:
                retrying = AsyncRetrying(
                    stop=stop_after_attempt(self.retry.max_attempts),
                    wait=lambda _: run.next_wait,
                    retry=lambda state: self._should_retry(run, state),
                    sleep=self.clock.asleep,
                    reraise=True,
                )
                async for attempt in retrying:
                    with attempt, _hidden_from_tenacity():
                        value = await self._attempt_async(run)
            finally:
                # Also when cancelled: dropping never waits for the store.
                self._leases.drop(held)
        except BaseException as raised:
            exc = _uncarried(raised)
            self._refund(run)
            if is_interrupt(exc):
                # The process is going down: record on this thread, awaiting nothing.
                return self._settle_failure(run, exc)
            if isinstance(exc, asyncio.CancelledError):
                # Recorded like any other failure, in a thread for a blocking ledger (a store
                # slow to answer must not stall the loop and every other request on it, least
                # of all while a client disconnects), and raised once recorded: a cancellation
                # landing meanwhile waits for the record too (see `_settle_shielded`). A
                # CancelledError the tool raised while nobody cancelled us (it awaited a task
                # someone else cancelled) ends the call with its result (for a write:
                # unknown_outcome), like any other failure of the tool: raising it would end
                # the caller's task as if the caller had been cancelled.
                own = not _being_cancelled()
                cancel = exc
                result = await self._settle_shielded(
                    run, lambda: self._settle_failure(run, cancel, reraise=False)
                )
                if own:
                    return result
                raise  # the cancellation, as it came
            failure = exc
            return await self._settle_shielded(run, lambda: self._settle_failure(run, failure))
        return await self._settle_shielded(run, lambda: self._settle_success(run, value))

    def execute_all(
        self,
        calls: Sequence[ValidatedCall],
        context: RequestContext | None = None,
        *,
        max_workers: int | None = None,
    ) -> list[ExecutionResult]:
        """Execute independent calls; one result per call, in input order.

        A failure never undoes another call's success. With ``max_workers`` > 1 the calls run
        in a thread pool (a call it cannot start a thread for runs in the caller's thread),
        otherwise one after another.
        """
        calls = _checked_calls(calls)
        ctx = context or self.request()
        if max_workers is None or max_workers <= 1 or len(calls) <= 1:
            return [self._execute_guarded(call, ctx) for call in calls]

        def one(call: ValidatedCall) -> ExecutionResult:
            return self._execute_guarded(call, ctx)

        with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="toolwire") as pool:
            running = [_submitted(pool, one, call) for call in calls]
            return [future.result() for future in running]

    async def aexecute_all(
        self,
        calls: Sequence[ValidatedCall],
        context: RequestContext | None = None,
        *,
        concurrency: int | None = None,
    ) -> list[ExecutionResult]:
        """Execute independent calls concurrently; one result per call, in input order.

        Uses ``asyncio.gather(return_exceptions=True)``: a call that raises still gets a result
        (``downstream_failed``/``internal_error``), and successes are kept. Cancelling the caller
        cancels every call and propagates.
        """
        calls = _checked_calls(calls)
        ctx = context or self.request()
        gate = asyncio.Semaphore(concurrency) if concurrency else None

        # Calls that reached `_aexecute`, which records each call however it ends.
        entered: set[int] = set()

        async def enter(i: int, call: ValidatedCall) -> ExecutionResult:
            entered.add(i)
            # A call built wrongly is answered like one that raises: one result per call.
            _check_call(call)
            return await self._aexecute(call, ctx)

        async def one(i: int, call: ValidatedCall) -> ExecutionResult:
            if gate is None:
                return await enter(i, call)
            async with gate:
                return await enter(i, call)

        try:
            outcomes = await asyncio.gather(
                *(one(i, c) for i, c in enumerate(calls)), return_exceptions=True
            )
        except asyncio.CancelledError as exc:
            # The caller was cancelled: calls still queued (or not yet started) never ran, and
            # each still gets its one record before the cancellation propagates.
            for i, call in enumerate(calls):
                if i not in entered:
                    self._internal_error(call, exc, ctx, record=True, log=False)
            raise
        results: list[ExecutionResult] = []
        for call, outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, ExecutionResult):
                results.append(outcome)
            elif is_interrupt(outcome):
                raise outcome
            else:
                # A CancelledError left the call after its record was made (or while the
                # caller was being cancelled); anything else ended it before that.
                record = not isinstance(outcome, asyncio.CancelledError)
                results.append(self._internal_error(call, outcome, ctx, record=record))
        return results

    # ---- phases ---------------------------------------------------------------------------

    def _execute_guarded(self, call: ValidatedCall, ctx: RequestContext) -> ExecutionResult:
        try:
            # A call built wrongly is answered like one that raises: one result per call.
            _check_call(call)
            return self._execute(call, ctx)
        except Exception as exc:
            return self._internal_error(call, exc, ctx, record=True)

    def _internal_error(
        self,
        call: ValidatedCall,
        exc: BaseException,
        ctx: RequestContext,
        *,
        record: bool,
        log: bool = True,
    ) -> ExecutionResult:
        """The result of a call that raised instead of settling (e.g. an async tool handed to
        ``execute_all``), or was cancelled before it started (then without ``log``); with
        ``record``, also its observability record, which it never got."""
        kind = "cancelled" if isinstance(exc, asyncio.CancelledError) else "internal_error"
        if log:
            self.observer.log(
                _log,
                logging.ERROR,
                "toolwire: call %s (%s) raised %s: %s",
                call.call_id,
                _shown_name(call.tool),
                type(exc).__name__,
                _cut(self._scrub_text(_safe_arguments(call), _whole(exc), _declared_secrets(call))),
            )
        error: dict[str, Any] = {
            "type": kind,
            "message": text(f"exec.{kind}", self.lang),
            "retryable": False,
        }
        if record:
            tool = cast(object, call.tool)  # a look-alike built wrongly may hold anything
            with self._lock:
                registered = isinstance(tool, str) and tool in self._tools
            run = _Run(
                spec=ToolSpec(_missing_tool, name=call.tool),
                call=call,
                context=ctx,
                arguments=None,
                args_hash="",
                key=None,
                started=self.clock.monotonic(),
                span=self.observer.start_span(
                    call.tool if registered else _UNREGISTERED, call.call_id
                ),
                parse_time=None,
                validation_time=None,
                coercions=0,
                registered=registered,
            )
            return self._finish(run, "downstream_failed", error=error)
        return ExecutionResult(
            call_id=call.call_id,
            tool=call.tool,
            state="downstream_failed",
            error=error,
            synthetic_id=_synthetic_id(call),
        )

    def _prepare(
        self,
        call: ValidatedCall,
        context: RequestContext | None,
        parse_time: float | None,
        validation_time: float | None,
        coercions: int | None,
        spec: ToolSpec | None,
    ) -> _Run | ExecutionResult:
        """The call's run, or its result when it is refused before any ledger step.

        ``spec``: the tool registered under the call's name, as the caller looked it up once
        (None: none is). The run keeps it, and the breaker registered with it, to its end: a tool
        registered again meanwhile serves later calls only.
        """
        started = self.clock.monotonic()
        ctx = context or self.request()
        parse_time = parse_time if parse_time is not None else _attr_float(call, "parse_time")
        if validation_time is None:
            validation_time = _attr_float(call, "validation_time")
        if coercions is None:
            raw = getattr(call, "coercions", 0)
            coercions = len(raw) if isinstance(raw, Sequence) else int(raw or 0)  # pyright: ignore[reportUnknownArgumentType]
        span = self.observer.start_span(
            call.tool if spec is not None else _UNREGISTERED, call.call_id
        )
        arguments = _arguments_of(call)
        declared = [secret_text(v) for v in _declared_secrets(call)]
        # Two digests of the arguments. The ledger gets `fingerprint`, over every value, secret
        # ones included: it keys a write sent without a call id and tells a reused key with
        # other arguments (another card token) from a replay, so calls that differ only in a
        # secret must differ there; it is stored with the receipts it guards and never shown.
        # Logs, spans and results get `args_hash`, with each secret value written as one
        # marker: unsalted, a digest over a PIN or a CVV gives it back to whoever can guess the
        # other arguments and try its few possible values.
        ledger_fingerprint = ""
        unreadable: Exception | None = None
        if call.ok:
            try:
                # Text of a call its caller built that is no JSON object (cut off, a list)
                # is refused like arguments without a canonical form.
                arguments = _arguments_of(call, strict=True)
                ledger_fingerprint, args_hash = fingerprints(
                    arguments, self._fingerprint_key, declared
                )
            except Exception as exc:  # a cycle, a value whose __repr__ raises
                unreadable, args_hash = exc, None
        else:
            raw = getattr(call, "raw_arguments", None) or getattr(call, "arguments", None)
            # An Outcome carries no argument text: report no hash rather than the hash of "",
            # which would make every refused call look like the same arguments.
            args_hash = (
                hashlib.sha256(
                    without_values(raw, declared).encode("utf-8", "surrogatepass")
                ).hexdigest()
                if isinstance(raw, str)
                else None
            )
        run = _Run(
            spec=spec or ToolSpec(_missing_tool, name=call.tool),
            call=call,
            context=ctx,
            arguments=arguments,
            args_hash=args_hash or "",
            key=None,
            started=started,
            span=span,
            parse_time=parse_time,
            validation_time=validation_time,
            coercions=coercions,
            fingerprint=ledger_fingerprint,
            registered=spec is not None,
        )
        if not call.ok:
            state, error = _refusal(call)
            return self._finish(run, state, error=error)
        if spec is None:
            return self._finish(
                run,
                "tool_unavailable",
                error={
                    "type": "unknown_tool",
                    # The name is the model's own: cut like any text it sent.
                    "message": text(
                        "exec.unknown_tool", self.lang, tool=repr(shown_text(call.tool))
                    ),
                    "retryable": False,
                },
            )
        if unreadable is not None:
            # A caller-built call whose arguments have no canonical form: a write could not
            # be keyed, and the call gets its result and its record like any refusal.
            self.observer.log(
                _log,
                logging.ERROR,
                "toolwire: call %s (%s) not run: its arguments cannot be read: %s",
                call.call_id,
                spec.name,
                type(unreadable).__name__,
            )
            return self._finish(
                run,
                "validation_failed",
                error={
                    "type": "invalid_arguments",
                    "message": text("exec.invalid_arguments", self.lang),
                    "retryable": False,
                },
            )
        unfit = _unfit_arguments(spec, arguments)
        if unfit is not None:
            # Nothing ran and nothing was claimed: the function cannot take these arguments
            # (an extra field in a call its caller built), which no attempt would change.
            self.observer.log(
                _log,
                logging.ERROR,
                "toolwire: call %s (%s) not run: its arguments do not fit the function: %s",
                call.call_id,
                spec.name,
                unfit,
            )
            return self._finish(
                run,
                "downstream_failed",
                error={
                    "type": "bad_signature",
                    "message": text("exec.bad_signature", self.lang, detail=unfit),
                    "retryable": False,
                },
            )
        if spec.side_effects:
            business = None
            if spec.idempotency_key is not None:
                business = _field(arguments, spec.idempotency_key)
            run.key = derive_key(
                tool=spec.name,
                namespace=self.namespace,
                session_id=ctx.session_id,
                call_id=call.call_id,
                business_key=business,
                request_id=ctx.request_id,
                arguments_fingerprint=ledger_fingerprint,
            )
        run.breaker = self._breaker_of(spec)
        return run

    def _lease(self, spec: ToolSpec) -> float:
        if spec.in_progress_expiry is not None:
            return spec.in_progress_expiry
        per_attempt = spec.timeout if spec.timeout is not None else 60.0
        attempts = self.retry.max_attempts
        # A wait between attempts is the backoff, added to the server's Retry-After when there
        # is one (honoured up to max_retry_after).
        wait = self.retry.backoff_max + self.retry.max_retry_after
        return per_attempt * attempts + wait * (attempts - 1) + 30.0

    def _ttl(self, spec: ToolSpec) -> float:
        return spec.record_ttl if spec.record_ttl is not None else self.record_ttl

    def _hold_lease(self, run: _Run) -> _HeldLease | None:
        """Renew the lease of the write's claim, every third of it, until the call drops it
        (before recording its outcome): a write still in flight past its lease (a slow tool
        without a timeout, long waits between retries) is not found stale by an identical
        call, which its stale policy could make run the write again."""
        claim = run.claim
        if not isinstance(claim, Claim) or claim.token is None or run.key is None:
            return None
        lease = self._lease(run.spec)
        renew = self._renewer(run, run.key, claim.token, lease)
        try:
            return self._leases.hold(renew, lease / _RENEWALS_PER_LEASE)
        except RuntimeError as exc:  # "can't start new thread": the lease runs as claimed
            self.observer.log(
                _log,
                logging.WARNING,
                "toolwire: the lease of call %s (%s) is not renewed (no thread for it): %s",
                run.call.call_id,
                run.spec.name,
                _short(exc),
            )
            return None

    def _renewer(
        self, run: _Run, key: str, token: str, lease: float
    ) -> Callable[[_HeldLease], bool]:
        """One renewal of the write's lease, for the keeper's thread; False: stop renewing.

        It never raises and never touches the call's result: a store that fails is counted in
        ``ledger_errors``, logged and tried again at the next renewal (the call goes on; two
        renewals may fail before the lease lapses). A claim no longer held is counted in
        ``leases_lost``, logged, and stops the call's retries; recording the outcome then goes
        as for any lost claim (see `decide_finish`): refused with a warning when another call
        took the claim over, kept when a stale policy only assumed an outcome.
        """
        ledger = self.ledger
        ttl = self._ttl(run.spec)
        name = run.spec.name

        def renew(held: _HeldLease) -> bool:
            try:
                ledger.renew(key, token, lease, ttl=ttl)
            except ClaimLost:
                if not held.held:
                    return False  # the call settled meanwhile: its own record ended the claim
                run.lease_lost = True
                self.observer.count("leases_lost", 1, tool=name)
                self.observer.log(
                    _log,
                    logging.WARNING,
                    "toolwire: call %s (%s) no longer holds its idempotency claim: its lease "
                    "lapsed and another call acted on it; no further attempt is made",
                    run.call.call_id,
                    name,
                )
                return False
            except NotImplementedError:
                self._renewals_unsupported(ledger)
                return False
            except Exception as exc:
                if held.held:
                    self.observer.count("ledger_errors", 1, tool=name)
                    self.observer.log(
                        _log,
                        logging.WARNING,
                        "toolwire: could not renew the lease of call %s (%s): %s",
                        run.call.call_id,
                        name,
                        self._scrubbed(run, exc),
                    )
            return True

        return renew

    def _renewals_unsupported(self, ledger: Ledger) -> None:
        with self._lock:
            if self._renew_unsupported_logged:
                return
            self._renew_unsupported_logged = True
        self.observer.log(
            _log,
            logging.WARNING,
            "toolwire: %s cannot renew leases (no Ledger.renew): a write running past its "
            "lease (in_progress_expiry) can be found stale while it runs",
            type(ledger).__name__,
        )

    def _claim(self, run: _Run) -> Claim | LedgerUnavailable:
        assert run.key is not None
        pending = self._record_pending(run)
        if pending is not None:
            return pending
        try:
            return self.ledger.claim(
                run.key,
                fingerprint=run.fingerprint,
                tool=run.spec.name,
                lease=self._lease(run.spec),
                ttl=self._ttl(run.spec),
                on_stale=run.spec.on_stale_in_progress,
            )
        except LedgerUnavailable as exc:
            return exc
        except Exception as exc:  # a broken custom ledger must fail closed as well
            # Whole: it is cut where it is shown, once scrubbed.
            return LedgerUnavailable(f"ledger error: {_whole(exc)}")

    def _record_pending(self, run: _Run) -> LedgerUnavailable | None:
        """Record the outcome of an identical call that this executor still holds (tried in
        the background by `_record_later`, or a step abandoned at the deadline that may still
        hang, see `_ledger_op_in_time`) before claiming its key; a `LedgerUnavailable` if that
        fails.

        The store knows only that the write is in progress, and once its lease lapsed, a claim
        would meet the stale policy (under ``assume_failed_and_retry``: run the write again)
        although this process knows what happened. So the outcome goes first, and while it
        cannot be recorded the call fails closed, as when the store is down.
        """
        assert run.key is not None
        with self._lock:
            pending = self._unrecorded.get(run.key)
        if pending is None:
            return None
        token, step = pending
        try:
            step(self.ledger, run.key, token)
        except ClaimLost:
            self._recorded(run.key, token)  # another call settled it: the key is claimed anew
        except Exception as exc:
            return LedgerUnavailable(
                f"the outcome of an identical call is not recorded yet: {_whole(exc)}"
            )
        else:
            if self._recorded(run.key, token):
                self.observer.count("outcomes_recorded_late", 1, tool=run.spec.name)
        return None

    def _pending(self, key: str, token: str) -> bool:
        """Whether the outcome of ``token``'s claim is still to be recorded."""
        with self._lock:
            return self._unrecorded.get(key, ("",))[0] == token

    def _recorded(self, key: str, token: str) -> bool:
        """Forget the outcome of ``token``'s claim as one to record; True when the caller is
        to report how it ended: False if it was not one to record, or if `close` already
        reported it (`_give_up`)."""
        with self._lock:
            if self._unrecorded.get(key, ("",))[0] != token:
                return False
            del self._unrecorded[key]
            if token in self._given_up:
                self._given_up.discard(token)
                return False
            return True

    def _time_left(self, run: _Run) -> float | None:
        deadline = run.context.deadline
        return None if deadline is None else deadline - self.clock.monotonic()

    def _late_before_claim(self, run: _Run) -> ExecutionResult:
        """The result of a write whose request deadline passed before its claim: nothing ran
        and the ledger was not touched (a hung store must not hold the call past it)."""
        exc = _OwnDeadline("request deadline exceeded before the call started")
        return self._settle_failure(run, exc, reraise=False)

    def _claim_timed_out(self, waited: float) -> LedgerUnavailable:
        return LedgerUnavailable(
            f"the idempotency store did not answer within the request's deadline ({waited:.3f}s)"
        )

    def _claim_in_time(self, run: _Run) -> Claim | LedgerUnavailable | None:
        """The claim, bounded by the request's deadline (``None``: no time was left for it).

        A blocking ledger is asked in a daemon thread so a store that hangs (no socket
        timeout, a stuck server) cannot hold the call past its deadline: the call ends as
        ``ledger_unavailable`` (the write did not run) and a claim landing later is released.
        """
        remaining = self._time_left(run)
        if remaining is not None and remaining <= 0:
            return None
        if remaining is None or not self.ledger.blocking:
            return self._claim(run)
        pending, abandon, start = self._claim_in_thread(run)
        try:
            start()
            return pending.result(timeout=remaining)
        except FutureTimeout:
            late = abandon()
            if late is not None:  # landed between the timeout and the abandonment
                return late
            return self._claim_timed_out(remaining)
        except BaseException:
            # Raised into the wait (SystemExit from a SIGTERM handler, KeyboardInterrupt): the
            # caller leaves, as `_aclaim`'s does when cancelled, and a claim landing later
            # must be given back, or the key of a write that never ran would stay in
            # progress for a whole lease and then be reported stale.
            late = abandon()
            if late is not None:
                self._release_late(run, late)
            raise

    async def _aclaim(self, run: _Run) -> Claim | LedgerUnavailable | None:
        remaining = self._time_left(run)
        if remaining is not None and remaining <= 0:
            return None
        if not self.ledger.blocking:
            return self._claim(run)
        # The claim may land after we gave up on it (deadline) or were cancelled; whoever sees
        # the other side gone gives it back: the worker thread if the caller left first (this
        # works even when the event loop is shutting down and cancels every task), the caller
        # if the claim was made but not yet delivered. A daemon thread rather than the loop's
        # default executor, so a hung store cannot hold up the loop's shutdown either.
        pending, abandon, start = self._claim_in_thread(run)
        start()
        waiter = asyncio.wrap_future(pending)
        try:
            done, _ = await asyncio.wait({waiter}, timeout=remaining)
        except asyncio.CancelledError:
            waiter.cancel()
            late = abandon()
            if late is not None:
                # Landed, not yet delivered: given back before the cancellation goes on (the
                # caller's retry then finds the key free), in a thread (a slow store must not
                # stall the loop meanwhile).
                claim = late
                await _through_cancellation(
                    lambda: self._release_late(run, claim), f"toolwire-release-{run.spec.name}"
                )
            raise
        if waiter in done:
            return waiter.result()
        waiter.cancel()
        late = abandon()
        if late is not None:
            return late
        assert remaining is not None
        return self._claim_timed_out(remaining)

    def _claim_in_thread(
        self, run: _Run
    ) -> tuple[
        Future[Claim | LedgerUnavailable],
        Callable[[], Claim | LedgerUnavailable | None],
        Callable[[], None],
    ]:
        """The claim in a daemon thread: returns its future, ``abandon``, which gives up on it
        and returns the claim if it already landed (the caller then owns it), and ``start``,
        which starts the thread. Started by the caller where ``abandon`` is in reach: an
        exception raised into it from the moment the thread runs (a signal handler's) must
        give the claim back."""
        lock = threading.Lock()
        box: dict[str, Any] = {}
        pending: Future[Claim | LedgerUnavailable] = Future()

        def work() -> None:
            claim = self._claim(run)
            with lock:
                if not box.get("abandoned"):
                    box["claim"] = claim
                    try:
                        pending.set_result(claim)
                    except InvalidStateError:  # the waiter was cancelled meanwhile
                        pass
                    return
            self._release_late(run, claim)

        def abandon() -> Claim | LedgerUnavailable | None:
            with lock:
                box["abandoned"] = True
                return box.pop("claim", None)

        def start() -> None:
            try:
                threading.Thread(
                    target=contextvars.copy_context().run,
                    args=(work,),
                    name=f"toolwire-claim-{run.spec.name}",
                    daemon=True,
                ).start()
            except RuntimeError as exc:  # no thread to be had: nothing was claimed, nothing runs
                pending.set_result(LedgerUnavailable(f"no thread for the claim: {exc}"))

        return pending, abandon, start

    def _release_late(self, run: _Run, claim: Claim | LedgerUnavailable) -> None:
        """Give back a claim nobody will use (it landed after the call ended). Leaves ``run``
        alone: its call has a result already, possibly being written in another thread."""
        if not isinstance(claim, Claim) or claim.status != "claimed" or claim.token is None:
            return
        assert run.key is not None
        try:
            self.ledger.release(run.key, claim.token)
        except Exception as exc:
            self.observer.count("ledger_errors", 1, tool=run.spec.name)
            self.observer.log(
                _log, logging.WARNING, "toolwire: could not release a late claim: %s", _short(exc)
            )

    async def _settle_shielded(
        self, run: _Run, settle: Callable[[], ExecutionResult]
    ) -> ExecutionResult:
        """Settle a call whose tool ran, in a thread when that writes to a blocking ledger.

        Once the tool has started, the outcome must reach the ledger and the observer however
        the caller leaves: a cancellation landing here waits for the settlement to end and is
        raised after it (a claim left in progress would answer a retry "in progress", then
        "unknown outcome", for a write that succeeded). See `_through_cancellation`.
        """
        claim = run.claim
        blocking = self._ledger is not None and self._ledger.blocking
        if not blocking or not isinstance(claim, Claim) or claim.token is None:
            return settle()  # nothing to wait for: settled before a cancellation can land
        return await _through_cancellation(settle, f"toolwire-settle-{run.spec.name}")

    def _claim_result(self, run: _Run) -> ExecutionResult | None:
        """Turn a non-``claimed`` ledger answer into the call's result (``None``: go ahead)."""
        claim = run.claim
        if isinstance(claim, LedgerUnavailable):
            return self._ledger_down(run, claim)
        try:
            return self._claim_answer(run)
        except LedgerCorrupt as exc:
            # A record whose stored result or error does not decode: fail closed, as for a
            # record that does not decode at all.
            return self._ledger_down(run, exc)

    def _ledger_down(self, run: _Run, claim: LedgerUnavailable) -> ExecutionResult:
        """The result of a call whose ledger could not be read or written."""
        self.observer.count("ledger_errors", 1, tool=run.spec.name)
        # The driver's text (hosts, ports, credentials in a DSN) is for operators only.
        self.observer.log(
            _log,
            logging.WARNING,
            "toolwire: idempotency store unavailable: %s",
            self._scrubbed(run, claim),
        )
        run.claim = None
        return self._finish(
            run,
            "tool_unavailable",
            error={
                "type": claim.slug,
                "message": text("exec.ledger_unavailable", self.lang),
                "retryable": True,
            },
            exception=claim,
        )

    def _claim_answer(self, run: _Run) -> ExecutionResult | None:
        """`_claim_result` for a ledger that answered."""
        claim = run.claim
        assert claim is not None and not isinstance(claim, LedgerUnavailable)
        record = claim.record
        if claim.status == "claimed":
            if claim.recovered:
                # Counted as a duplicate execution once an attempt starts (see _begin_attempt):
                # a takeover that ends before running anything duplicated nothing.
                self.observer.count("stale_in_progress", 1, tool=run.spec.name)
                run.recovered = True
                run.warnings.append("stale in-progress claim taken over; may execute twice")
            return None
        run.claim = None
        if claim.status == "conflict":
            return self._finish(
                run,
                "escalated",
                error={
                    "type": "idempotency_conflict",
                    "message": text("exec.idempotency_conflict", self.lang),
                    "retryable": False,
                },
                exception=IdempotencyConflict(
                    run.key or "", record.fingerprint if record else "", run.fingerprint
                ),
            )
        if claim.status == "in_progress":
            return self._finish(
                run,
                "in_progress",
                error=self._in_progress_payload(run, claim),
                exception=IdempotencyInProgress(run.key or ""),
            )
        if claim.status == "replay" and record is not None:
            if claim.recovered:
                self.observer.count("stale_in_progress", 1, tool=run.spec.name)
            error = record.error_value() if record.state == "failed" else None
            if error is None and record.assumed:
                run.warnings.append("success assumed after a stale in-progress claim")
            return self._finish(
                run, "duplicate_suppressed", value=record.receipt_value(), error=error
            )
        if claim.status == "stale":
            self.observer.count("stale_in_progress", 1, tool=run.spec.name)
        stored = record.error_value() if record is not None else None
        return self._finish(
            run,
            "unknown_outcome",
            error={
                "type": "unknown_outcome",
                "message": text("exec.unknown_outcome", self.lang),
                "retryable": False,
                **({"cause": stored} if stored else {}),
            },
        )

    def _in_progress_payload(self, run: _Run, claim: Claim) -> dict[str, Any]:
        """What the model reads when an identical call holds the claim.

        ``retryable`` means "calling again can help". The model calls again with a new
        ``tool_call_id``: when the key comes from a business key (or from the arguments, for a
        call without an id), that lands on this very record and gets the holder's outcome once
        it is recorded, so it is retryable after ``retry_after`` (the end of the holder's lease:
        by then it has finished, renewed the lease while still running, or is stale). Keyed by
        call id, a new call gets a new key and would run the write a second time beside the one
        still executing: not retryable.
        """
        spec = run.spec
        business = spec.idempotency_key is not None and (
            _field(run.arguments, spec.idempotency_key) is not None
        )
        same_key = business or not run.call.call_id
        payload: dict[str, Any] = {"type": "in_progress"}
        if same_key:
            payload["message"] = text("exec.in_progress_retry", self.lang)
            payload["retryable"] = True
            left = claim.lease_remaining
            if left is None:
                # A custom ledger that does not measure it: our clock against its timestamp.
                record = claim.record
                left = 0.0 if record is None else record.lease_expires_at - self.clock.time()
            payload["retry_after"] = round(max(0.0, left), 3)
        else:
            payload["message"] = text("exec.in_progress_wait", self.lang)
            payload["retryable"] = False
        return payload

    def _should_retry(self, run: _Run, state: RetryCallState) -> bool:
        outcome = state.outcome
        if outcome is None or not outcome.failed:
            return False
        exc = outcome.exception()
        exc = None if exc is None else _uncarried(exc)
        if isinstance(exc, _BreakerOpen) or run.last is None or exc is not run.last_exc:
            return False
        if run.lease_lost:
            # The write's claim went stale and a later call acted on it (ran it again, or told
            # its caller the outcome): another attempt would add to what that call did.
            run.stop_reason = "claim_lost"
            return False
        breaker = run.breaker
        verdict = decide_retry(
            policy=self.retry,
            state=state,
            classification=run.last,
            side_effects=run.spec.side_effects,
            retry_ambiguous=run.spec.retry_ambiguous,
            now=self.clock.monotonic(),
            context=run.context,
            budget=self.retry_budget,
            breaker_wait=0.0 if breaker is None else breaker.admission_wait(),
        )
        run.stop_reason = verdict.reason
        run.next_wait = verdict.wait
        run.granted = verdict if verdict.retry else None
        if verdict.retry:
            run.span.add_event("retry", {"attempt": state.attempt_number, "wait": verdict.wait})
        return verdict.retry

    def _begin_attempt(self, run: _Run) -> tuple[Permit | None, float | None, bool]:
        """Breaker and deadline checks; returns (permit, timeout, timeout_is_deadline)."""
        if run.exec_started is None:
            run.exec_started = self.clock.monotonic()
        if run.lease_lost and run.last_exc is not None:
            # Lost during the wait for this retry, after `_should_retry` granted it: the call
            # ends on the failure before, as if the loss had been seen then.
            self._refund(run)
            run.stop_reason = "claim_lost"
            raise run.last_exc
        deadline = run.context.deadline
        remaining = None if deadline is None else deadline - self.clock.monotonic()
        if remaining is not None and remaining <= 0:
            self._refund(run)
            exc = _OwnDeadline("request deadline exceeded before the attempt started")
            run.last, run.last_exc = _classify(exc, self.clock.time()), exc
            raise exc
        breaker = run.breaker
        permit = None
        if breaker is not None:
            permit = breaker.acquire()
            if permit is None:
                self._refund(run)
                run.breaker_rejected = True
                wait = _whole_seconds(breaker.open_remaining())
                raise _BreakerOpen(run.spec.name, wait)
        timeout = run.spec.timeout
        by_deadline = False
        if remaining is not None and (timeout is None or remaining < timeout):
            timeout, by_deadline = remaining, True
        run.granted = None
        if not run.deposited:
            # Deposits into the process budget come from calls that run: a breaker refusing
            # calls through an outage must not bank a burst of retries for its recovery. Once
            # per call, though an attempt that never started gives its count back.
            self.retry_budget.record_call()
            run.deposited = True
        run.attempts += 1
        run.in_flight = True
        # This execution may repeat the one whose stale claim was taken over: the one
        # duplicate a takeover can cause, counted here and only here (never again by the
        # worker that lost the claim, whose execution was the first).
        run.duplicate_execution = run.recovered
        return permit, timeout, by_deadline

    def _refund(self, run: _Run) -> None:
        """Gives back what a retry took from the budgets when its attempt never starts: it was
        cancelled during the backoff, or the breaker or the deadline turned it away."""
        granted, run.granted = run.granted, None
        if granted is None:
            return
        if granted.ticket is not None:
            self.retry_budget.refund(granted.ticket)
        if granted.request_spent:
            run.context.refund_retry()

    def _not_started(
        self, run: _Run, permit: Permit | None, in_flight: bool, granted: RetryVerdict | None
    ) -> None:
        """Undo `_begin_attempt` for an attempt whose tool never started: no attempt was made,
        so it cannot have taken effect (a write's claim is released, not left as an unknown
        outcome that a retry could never clear), says nothing of the tool's health and gives
        back the retry it was (`granted`). ``in_flight`` is what the attempts before it left
        (one of them may have taken effect)."""
        run.attempts -= 1
        run.in_flight = in_flight
        run.granted = granted
        self._refund(run)
        breaker = run.breaker
        if breaker is not None and permit is not None:
            breaker.release(permit)

    def _never_ran(
        self,
        run: _Run,
        permit: Permit | None,
        in_flight: bool,
        granted: RetryVerdict | None,
        exc: _NotStarted,
    ) -> None:
        """`_not_started` for an attempt the executor itself could not start: final (what
        stopped it would stop a retry too), and it may have taken effect only through an
        earlier attempt."""
        self._not_started(run, permit, in_flight, granted)
        run.last = Classification("unknown_error", retryable=False, ambiguous=False)
        run.last_exc = exc

    def _end_attempt(
        self, run: _Run, permit: Permit | None, started: float, exc: BaseException | None
    ) -> None:
        duration = self.clock.monotonic() - started
        breaker = run.breaker
        if exc is None:
            run.in_flight = False
            if breaker is not None and permit is not None:
                breaker.record(permit, failure=False, duration=duration)
            return
        cls = _classify(exc, self.clock.time())
        run.last, run.last_exc = cls, exc
        run.in_flight = cls.ambiguous
        if cls.ambiguous:
            run.maybe_applied = cls
        run.span.add_event("attempt_failed", {"attempt": run.attempts, "kind": cls.kind})
        if breaker is not None and permit is not None:
            if cls.kind == "deadline_exceeded" and duration >= breaker.config.slow_call_duration:
                # Cut by the request's deadline, not by its own timeout, but it ran that long:
                # a slow call all the same, or a hanging tool would never trip its breaker.
                breaker.record(permit, failure=False, duration=duration)
            elif cls.propagate or cls.kind == "deadline_exceeded":
                breaker.release(permit)
            else:
                breaker.record(permit, failure=cls.kind in _BREAKER_FAILURES, duration=duration)

    def _context_for(self, run: _Run, timeout: float | None) -> ToolContext:
        return ToolContext(
            tool=run.spec.name,
            call_id=run.call.call_id,
            idempotency_key=run.key,
            request_id=run.context.request_id,
            session_id=run.context.session_id,
            attempt=run.attempts,
            deadline_remaining=timeout,
        )

    def _invoker(self, run: _Run, timeout: float | None) -> Callable[[], Any]:
        spec = run.spec
        kwargs: dict[str, Any] = {}
        if spec.context:
            kwargs["ctx"] = self._context_for(run, timeout)
        arguments = _own_copy(run.arguments)
        if spec.unpack:
            fields = _fields_of(arguments)
            return lambda: _drained(spec.fn(**fields, **kwargs))
        return lambda: _drained(spec.fn(arguments, **kwargs))

    def _attempt_invoker(
        self,
        run: _Run,
        timeout: float | None,
        permit: Permit | None,
        in_flight: bool,
        granted: RetryVerdict | None,
    ) -> Callable[[], Any]:
        """`_invoker` for an attempt `_begin_attempt` started: one whose arguments cannot be
        read (a model's field that raises, under ``unpack``) never ran, and gives back what
        its start took, a half-open breaker's probe permit above all (kept, it would hold
        the breaker half-open with no probe left to close it)."""
        try:
            return self._invoker(run, timeout)
        except Exception as exc:
            refused = _NotStarted(f"the call's arguments could not be read: {_whole(exc)}")
            self._never_ran(run, permit, in_flight, granted, refused)
            raise refused from exc
        except BaseException:
            self._not_started(run, permit, in_flight, granted)
            raise

    def _attempt_sync(self, run: _Run) -> Any:
        in_flight, granted = run.in_flight, run.granted
        permit, timeout, by_deadline = self._begin_attempt(run)
        invoke = self._attempt_invoker(run, timeout, permit, in_flight, granted)
        started = self.clock.monotonic()
        try:
            value = _call_with_timeout(invoke, timeout, run.spec.name)
        except _NotStarted as exc:
            self._never_ran(run, permit, in_flight, granted, exc)
            raise
        except _AttemptTimeout as exc:
            err: BaseException = (
                _OwnDeadline(str(exc))
                if by_deadline
                else exc
                if run.spec.side_effects
                # A read repeats safely beside its abandoned thread, which may be what hangs.
                else _AttemptTimeout(str(exc))
            )
            self._end_attempt(run, permit, started, err)
            raise err from None
        except BaseException as exc:
            self._end_attempt(run, permit, started, exc)
            raise
        if inspect.isawaitable(value) or isinstance(value, AsyncIterator):
            # e.g. a lambda or partial around an async function: its work never started.
            close = getattr(cast(object, value), "close", None)
            if callable(close):
                closing = close()
                if inspect.iscoroutine(closing):
                    # An `async def close` only made a coroutine, which nothing here can
                    # await: closed before it runs, not left to warn when collected.
                    closing.close()
            self._not_started(run, permit, in_flight, granted)
            raise TypeError(
                f"tool {run.spec.name!r} returned an awaitable or async iterator; use aexecute"
            )
        self._end_attempt(run, permit, started, None)
        return value

    async def _attempt_async(self, run: _Run) -> Any:
        in_flight, granted = run.in_flight, run.granted
        permit, timeout, by_deadline = self._begin_attempt(run)
        invoke = self._attempt_invoker(run, timeout, permit, in_flight, granted)
        started = self.clock.monotonic()
        job = None if run.spec.is_async else _Job(_no_stop_iteration(invoke))
        try:
            if job is None:
                value = await _await_with_timeout(
                    lambda: _no_stop_async_iteration(
                        _drained_async(cast(Callable[[], Awaitable[Any]], invoke)())
                    ),
                    timeout,
                    run.spec.name,
                )
            elif timeout is None:
                # Nothing gives up on it: it may wait for a worker of the loop's default
                # executor, which bounds how many run at once.
                queued = job
                value = await _to_thread_then_await(queued)
            else:
                # Abandoned at its timeout, the attempt runs on: in a daemon thread of its own,
                # as under `execute`, not in the loop's default executor, where it would hold a
                # worker (a hung read retried beside itself, several) and `asyncio.run` would
                # wait for it at shutdown.
                owned, name = job, run.spec.name
                value = await _await_with_timeout(
                    lambda: _in_own_thread_then_await(owned, name), timeout, name
                )
        except _NotStarted as exc:
            self._never_ran(run, permit, in_flight, granted, exc)
            raise
        except _AttemptTimeout as exc:
            # Timed out before its thread picked the job up: it never ran, so unlike a tool
            # that timed out, it cannot have taken effect.
            withdrawn = job is not None and job.withdraw()
            timed_out = (
                _AttemptTimeout(f"{exc}; it never started, so it did not run")
                if withdrawn
                # A sync tool's thread goes on after the timeout: another attempt of a write
                # would run beside it, as beside an async tool that ignores its cancellation.
                else _AttemptTimeout(str(exc), still_running=True)
                if job is not None and run.spec.side_effects and job.running()
                else exc
            )
            err: BaseException = _OwnDeadline(str(timed_out)) if by_deadline else timed_out
            if withdrawn:
                self._not_started(run, permit, in_flight, granted)
                # Like a connection pool's timeout, it sent nothing: it may have taken effect
                # only through an earlier attempt (the retries and the result then stay as
                # after that one, as when the breaker turns a retry away).
                cls = replace(_classify(err, self.clock.time()), ambiguous=in_flight)
                run.last, run.last_exc = cls, err
            else:
                self._end_attempt(run, permit, started, err)
            raise err from None
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError) and job is not None and job.withdraw():
                # Cancelled while the sync tool waited for a worker thread: it never ran.
                self._not_started(run, permit, in_flight, granted)
            elif isinstance(exc, Exception) and job is not None and job.withdraw():
                # The loop's default executor refused the job (it was shut down, say, while
                # the application drained): the tool never ran.
                refused = _NotStarted(f"the worker pool refused the attempt: {_whole(exc)}")
                self._never_ran(run, permit, in_flight, granted, refused)
                raise refused from exc
            else:
                self._end_attempt(run, permit, started, exc)
            raise
        self._end_attempt(run, permit, started, None)
        return value

    # ---- settlement -------------------------------------------------------------------------

    def _ledger_op(self, run: _Run, op: Callable[[Ledger, str, str], None]) -> None:
        claim = run.claim
        if not isinstance(claim, Claim) or claim.token is None:
            return
        assert run.key is not None
        try:
            if not self._ledger_op_in_time(run, op, run.key, claim.token):
                self.observer.count("ledger_errors", 1, tool=run.spec.name)
                run.unrecorded = True
                run.warnings.append(
                    "the idempotency store did not answer within the request's deadline; "
                    "the call's outcome may not be recorded"
                )
        except ClaimLost:
            # Another worker took over our stale claim and may run the write again; that
            # worker's result reports the duplicate (and counts it), so it is counted once.
            run.warnings.append(
                "ledger claim was taken over by another worker; the write may run twice"
            )
        except Exception as exc:
            self.observer.count("ledger_errors", 1, tool=run.spec.name)
            run.unrecorded = True
            run.warnings.append(
                f"ledger update failed: {self._scrubbed(run, exc)}; "
                "the outcome is not durable yet and is retried in the background"
            )
            self._record_later(run, op, run.key, claim.token)
        finally:
            run.claim = None

    def _record_later(
        self, run: _Run, op: Callable[[Ledger, str, str], None], key: str, token: str
    ) -> None:
        """Go on trying a step that records a write's outcome after the store failed every
        try the call could wait for, or did not answer in time, in the background (see
        `_LateRecords`: one outcome's write that hangs holds up no other), every
        `_LATE_RECORD_EVERY` seconds at most (a third of the lease if shorter) until it lands,
        the claim turns out settled by another call (``ClaimLost``), or the record's retention
        is over; `close`, or the interpreter's exit, tries it once more before giving up on it.

        Left undone, the claim would stay in progress for its whole lease and then, under the
        ``report`` policy, read as an unknown outcome for good although the tool's result is
        known here. Once the store answers again the outcome is stored, so an identical call
        gets it replayed; one that came meanwhile and found the lease lapsed met the stale
        policy, whose assumed outcome (``report``, ``assume_succeeded``) the owner's record
        replaces (see `decide_finish`). An identical call to this executor records it before
        claiming the key (see `_record_pending`). Only this process holds the outcome: if it
        ends before that last try lands, the stale policy stands.
        """
        ledger = self.ledger
        name, call_id = run.spec.name, run.call.call_id
        lease = self._lease(run.spec)
        give_up = self.clock.monotonic() + lease + self._ttl(run.spec)
        with self._lock:
            self._unrecorded[key] = (token, op)

        def record() -> bool:
            if not self._pending(key, token):
                return False  # an identical call recorded it meanwhile
            try:
                op(ledger, key, token)
            except ClaimLost:
                if not self._recorded(key, token):
                    return False
                self.observer.log(
                    _log,
                    logging.WARNING,
                    "toolwire: the outcome of call %s (%s) was not recorded: another call "
                    "settled its claim meanwhile",
                    call_id,
                    name,
                )
                return False
            except Exception as exc:
                self.observer.count("ledger_errors", 1, tool=name)
                if self.clock.monotonic() < give_up:
                    return True
                if not self._recorded(key, token):
                    return False
                self.observer.log(
                    _log,
                    logging.ERROR,
                    "toolwire: gave up recording the outcome of call %s (%s): %s",
                    call_id,
                    name,
                    self._scrubbed(run, exc),
                )
                return False
            if self._recorded(key, token):
                self.observer.count("outcomes_recorded_late", 1, tool=name)
            return False

        try:
            self._late_records.hold(
                record,
                min(_LATE_RECORD_EVERY, lease / _RENEWALS_PER_LEASE),
                f"call {call_id} ({name})",
                lambda: self._give_up(key, token),
            )
        except RuntimeError as exc:  # no thread: the call's warning already says it
            self.observer.log(
                _log,
                logging.WARNING,
                "toolwire: the outcome of call %s (%s) is not retried (no thread for it): %s",
                call_id,
                name,
                _short(exc),
            )

    def _retried(
        self, op: Callable[[Ledger, str, str], None], until: float | None
    ) -> Callable[[Ledger, str, str], None]:
        """``op`` tried again while the store fails (a reset connection, a failover, a
        moment of I/O trouble): `_SETTLE_TRIES` times in all, paced by the executor's clock,
        and none begun past ``until`` (the executor clock's ``monotonic()``; None: no bound),
        when nobody waits for the step any more.

        Safe because every step is idempotent per token: a finish repeated with the same
        outcome is a no-op (see `decide_finish`), so a try that landed although it raised is
        not undone by the next. ``ClaimLost`` is an answer, not a failure: never tried again.
        """

        def retried(ledger: Ledger, key: str, token: str) -> None:
            for attempt in range(1, _SETTLE_TRIES + 1):
                try:
                    op(ledger, key, token)
                    return
                except ClaimLost:
                    raise
                except Exception:
                    pause = _SETTLE_BACKOFF * 2 ** (attempt - 1)
                    late = until is not None and self.clock.monotonic() + pause >= until
                    if attempt == _SETTLE_TRIES or late:
                        raise
                self.clock.sleep(pause)

        return retried

    def _ledger_op_in_time(
        self, run: _Run, op: Callable[[Ledger, str, str], None], key: str, token: str
    ) -> bool:
        """Run a bookkeeping step (complete, fail, release) bounded like the claim: a blocking
        ledger under a request deadline is asked in a daemon thread and given what is left of
        the deadline, at least ``_SETTLE_GRACE`` (the tool has run; its outcome deserves a
        try). A store that answered the claim and then hangs cannot hold the call's result:
        the step is abandoned (returns False) and may still land later; meanwhile the outcome
        is held as one to record late (see `_record_later`). A store that fails
        is tried again within that time (see `_retried`). Raises what the step raised when it
        answered in time."""
        remaining = self._time_left(run)
        ledger = self.ledger
        wait = None if remaining is None else max(remaining, _SETTLE_GRACE)
        step = self._retried(op, None if wait is None else self.clock.monotonic() + wait)
        if wait is None or not ledger.blocking:
            step(ledger, key, token)
            return True
        try:
            done = _in_thread(lambda: step(ledger, key, token), f"toolwire-ledger-{run.spec.name}")
        except RuntimeError:
            # No thread to be had: the step unbounded, rather than the outcome not recorded.
            step(ledger, key, token)
            return True
        try:
            done.result(timeout=wait)
        except FutureTimeout:
            # Abandoned, the step may still land, or hang for good: the one request that hangs
            # may be the only one the store does not answer. So the outcome is held as one
            # recorded late from now on, not once the step gives up: tried again in the
            # background and by an identical call before it claims (see `_record_pending`),
            # and reported by `close` or the interpreter's exit if still not recorded. A step
            # that lands settles it; the next background try then finds nothing to do.
            self._record_later(run, op, key, token)

            def settled(step: Future[None]) -> None:
                error = step.exception()
                if error is None or isinstance(error, ClaimLost):
                    self._recorded(key, token)

            done.add_done_callback(settled)
            return False
        return True

    def _release_quietly(self, run: _Run) -> None:
        self._ledger_op(run, lambda ledger, key, token: ledger.release(key, token))

    def _settle_success(self, run: _Run, value: Any) -> ExecutionResult:
        ttl = self._ttl(run.spec)
        try:
            result = _jsonable(value)
        except Exception as exc:
            # The tool ran (for a write, the side effect happened) but its result cannot be
            # stored or sent. Record that as a final, non-retryable failure so the call still
            # ends with one result and a replay never executes the write again.
            error: dict[str, Any] = {
                "type": "invalid_result",
                "message": text("exec.not_json", self.lang, kind=type(exc).__name__),
                "retryable": False,
            }
            self._ledger_op(
                run,
                lambda ledger, key, token: ledger.fail(key, token, error, retryable=False, ttl=ttl),
            )
            return self._finish(run, "downstream_failed", error=error)
        self._ledger_op(
            run, lambda ledger, key, token: ledger.complete(key, token, result, ttl=ttl)
        )
        return self._finish(run, "ok", value=result)

    def _settle_failure(
        self, run: _Run, exc: BaseException, *, reraise: bool = True
    ) -> ExecutionResult:
        cls = run.last if exc is run.last_exc and run.last is not None else None
        if cls is None and not isinstance(exc, _BreakerOpen):
            # Raised outside an attempt (e.g. cancelled during backoff): classify it now.
            cls = _classify(exc, self.clock.time())
        ttl = self._ttl(run.spec)
        propagate = cls is not None and cls.propagate
        if isinstance(exc, _BreakerOpen) and run.attempts == 0:
            self._release_quietly(run)
            return self._finish(
                run,
                "tool_unavailable",
                error={
                    "type": "circuit_open",
                    "message": text("exec.breaker_open", self.lang, tool=repr(run.spec.name)),
                    "retryable": True,
                    "retry_after": exc.retry_after,
                },
            )
        breaker_wait = exc.retry_after if isinstance(exc, _BreakerOpen) else None
        if isinstance(exc, _BreakerOpen):
            cls, exc = run.last, run.last_exc or exc
        assert cls is not None
        if breaker_wait is None and run.attempts > 0:
            # The call's last failure may have opened the breaker, whether that stopped the
            # retries (`breaker_open`) or they were over anyway: a model told only
            # "retryable" would call again into a refusal.
            # Or left it half-open with every probe taken by other calls.
            breaker = run.breaker
            left = 0.0 if breaker is None else breaker.admission_wait()
            if left is None or left > 0:
                run.breaker_rejected = True
                breaker_wait = _whole_seconds(left or 0.0)
        error = _error_payload(cls, exc, run, lambda shown: self._scrub(run, shown), self.lang)
        if breaker_wait is not None and error.get("retryable"):
            # The breaker refused the retry the policy wanted: no call can run before it lets
            # one through, whatever the last failure asked for.
            error["retry_after"] = max(breaker_wait, error.get("retry_after") or 0.0)
        self.observer.log(
            _log,
            logging.WARNING,
            "toolwire: call %s (%s) failed: %s: %s",
            run.call.call_id,
            run.spec.name,
            type(exc).__name__,
            self._scrubbed(run, exc),
        )
        # Any attempt that may have taken effect makes the write's outcome unknown, whatever
        # the attempts after it say: the model's own retry would come with a new call id, so a
        # new key, and the downstream could not tell it from the first.
        applied = cls if run.in_flight and cls.ambiguous else run.maybe_applied
        if run.spec.side_effects and applied is not None:
            error = {
                "type": "unknown_outcome",
                "message": text("exec.unknown_write_outcome", self.lang, kind=applied.kind),
                "retryable": False,
                "cause": error,
            }
            self._ledger_op(
                run,
                lambda ledger, key, token: ledger.fail(key, token, error, unknown=True, ttl=ttl),
            )
            state: FinalState = "unknown_outcome"
        elif cls.kind == "needs_clarification":
            self._release_quietly(run)
            state = "needs_clarification"
        elif run.attempts == 0 or cls.propagate or isinstance(exc, _NotStarted):
            # Also an attempt the executor could not start after earlier ones that failed
            # without taking effect: a later call may run the write.
            self._release_quietly(run)
            state = "downstream_failed"
        else:
            # Not in flight: a deadline that passed before the next attempt started; the
            # attempts made failed without taking effect, so a later call may run the write.
            retryable = cls.retryable or cls.kind == "deadline_exceeded"
            self._ledger_op(
                run,
                lambda ledger, key, token: ledger.fail(
                    key, token, error, retryable=retryable, ttl=ttl
                ),
            )
            state = "downstream_failed"
        result = self._finish(run, state, error=error)
        if propagate and reraise:
            raise exc
        return result

    def _scrubbed(self, run: _Run, exc: BaseException) -> str:
        """An exception's text for logs and warnings, scrubbed and cut (see `_scrub_text`:
        a secret the cut splits is redacted, not shown in part)."""
        return _cut(self._scrub(run, _whole(exc)))

    def _scrub(self, run: _Run, text: str) -> str:
        return self._scrub_text(run.arguments, text, _declared_secrets(run.call))

    def _scrub_text(
        self, arguments: Any, text: str, declared: Sequence[SecretStr | SecretBytes] = ()
    ) -> str:
        """``text`` (an exception's, for logs or the model) scrubbed by ``scrubbed_text``
        with this executor's ``redact`` hook; cut to the length it is shown at before it is
        scrubbed, so that a tool's megabyte of error text costs no more to scrub than a
        line (a value the cut splits is redacted, see ``scrubbed_text``)."""
        return scrubbed_text(text, arguments, declared, self.redact, limit=_MESSAGE_LIMIT - 1)

    def _finish(
        self,
        run: _Run,
        state: FinalState,
        *,
        value: Any = None,
        error: dict[str, Any] | None = None,
        args_hash: str | Literal[False] | None = False,
        exception: ExecutionError | None = None,
    ) -> ExecutionResult:
        now = self.clock.monotonic()
        execution = 0.0 if run.exec_started is None else now - run.exec_started
        timings = Timings(
            parse=run.parse_time,
            validation=run.validation_time,
            execution=execution,
            total=now - run.started,
        )
        digest = (run.args_hash or None) if args_hash is False else args_hash
        result = ExecutionResult(
            call_id=run.call.call_id,
            tool=run.call.tool,
            state=state,
            value=value,
            error=error,
            attempts=run.attempts,
            idempotency_key=run.key,
            args_hash=digest,
            timings=timings,
            duplicate_execution=run.duplicate_execution,
            warnings=tuple(run.warnings),
            exception=exception,
            lang=self.lang,
            unrecorded=run.unrecorded,
            synthetic_id=_synthetic_id(run.call),
        )
        record: ExecutionRecord = {
            "tool": run.call.tool if run.registered else _UNREGISTERED,
            "call_id": run.call.call_id,
            "request_id": run.context.request_id,
            "session_id": run.context.session_id or None,
            "args_hash": digest,
            "idempotency_key": run.key,
            "state": state,
            "error_type": None if error is None else str(error.get("type")),
            "attempts": run.attempts,
            "coercions": run.coercions,
            "parse_time": run.parse_time,
            "validation_time": run.validation_time,
            "execution_time": execution,
            "total_time": timings.total,
            "duplicate_execution": run.duplicate_execution,
            "unrecorded": run.unrecorded,
        }
        if not run.registered:
            record["requested_tool"] = _shown_name(run.call.tool)
        self.observer.finish(record, run.span)
        return result


# ---- helpers --------------------------------------------------------------------------------


def _setting_problem(name: str, value: object, wanted: str) -> TypeError:
    return TypeError(f"{name} must be {wanted}, not {type(value).__name__}")


def _check_settings(
    *,
    tools: object,
    ledger: object,
    clock: object,
    retry: object,
    retry_budget: object,
    breaker: object,
    observer: object,
    namespace: object,
    redact: object,
    lang: object,
) -> None:
    """Refuse an `Executor` setting of the wrong kind when the executor is built.

    Left to the first call, a wrong object fails where it is first used: inside a call's
    attempt (the model told the tool failed, and a write refused as if the store were down),
    or in the observer, raising out of `execute` with a call half recorded.
    """
    if tools is not None and not isinstance(tools, Mapping):
        wanted = "a mapping of tool name to function or ToolSpec"
        if hasattr(tools, "validate") and hasattr(tools, "registry"):
            wanted += (
                " (a Toolset validates calls; the executor runs them: map each name to its "
                "function)"
            )
        raise _setting_problem("tools", tools, wanted)
    for name in cast(Mapping[object, object], tools or {}):
        if not isinstance(name, str):
            raise TypeError(f"tool names must be str, not {type(name).__name__}")
    if ledger is not None and not isinstance(ledger, (Ledger, str, os.PathLike)):
        raise _setting_problem("ledger", ledger, "a Ledger or a file path for a SqliteLedger")
    if clock is not None and not isinstance(clock, Clock):
        raise _setting_problem("clock", clock, "a Clock (time, monotonic, sleep and asleep)")
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise _setting_problem("retry", retry, "a RetryPolicy")
    if retry_budget is not None and not isinstance(retry_budget, RetryBudget):
        raise _setting_problem("retry_budget", retry_budget, "a RetryBudget")
    if breaker is not None and breaker is not False and not isinstance(breaker, BreakerConfig):
        raise _setting_problem("breaker", breaker, "a BreakerConfig, or False for none")
    if observer is not None and not isinstance(observer, Observer):
        raise _setting_problem("observer", observer, "an Observer")
    if not isinstance(namespace, str):
        raise _setting_problem("namespace", namespace, "a str")
    if redact is not None and not callable(redact):
        raise _setting_problem("redact", redact, "a function (json_pointer, text) -> text")
    check_lang(lang)


def _misuse(message: str) -> Exception:
    # Imported here: the execution package imports without the compiled core.
    from toolwire._core import MisuseError

    return MisuseError(message)


def _malformed(call: object) -> str | None:
    """What makes ``call`` unusable whatever its tool (None if nothing): the name and id are
    looked up, logged, keyed and sent back to the provider as text."""
    try:
        tool: object = getattr(call, "tool", None)
        call_id: object = getattr(call, "call_id", None)
    except Exception as exc:  # a look-alike whose attribute raises
        return f"reading its tool or call_id raised {type(exc).__name__}"
    if not isinstance(tool, str):
        return f"tool must be the tool's name (a str), not {type(tool).__name__}"
    if call_id is not None and not isinstance(call_id, str):
        return f"call_id must be the provider's id (a str) or None, not {type(call_id).__name__}"
    return None


def _check_call(call: object) -> None:
    problem = _malformed(call)
    if problem is not None:
        raise _misuse(f"the call is not well formed: {problem}")


def _checked_calls(calls: object) -> list[ValidatedCall]:
    """The calls of `execute_all` as a list (a string or a mapping is no list of calls)."""
    kind = type(calls).__name__
    if isinstance(calls, (str, bytes, Mapping)) or not isinstance(calls, Iterable):
        raise TypeError(f"calls must be a list of validated calls (Outcomes), not {kind}")
    listed: list[ValidatedCall] = list(cast("Iterable[ValidatedCall]", calls))
    for i, call in enumerate(listed):
        # One built wrongly is answered with an error like any call; an object with no tool
        # and no call id at all is no call, and nothing could be answered under it.
        try:
            lacking = not (hasattr(call, "tool") and hasattr(call, "call_id"))
        except Exception:  # an attribute that raises: the call's own answer tells it
            lacking = False
        if lacking:
            raise TypeError(
                f"calls[{i}] is not a validated call (it has no tool and call_id): "
                f"{type(call).__name__}"
            )
    return listed


def _registration_problem(fn: object, *, unpack: bool, context: bool) -> str | None:
    """Why the executor could never call ``fn`` (None if it can, or if its signature cannot
    be read). Found at registration, the mistake cannot reach a call: there, a ``TypeError``
    from binding looks like any the tool raised, and a write would end as an unknown outcome
    though its body never ran (its claim kept, the breaker charged)."""
    if not callable(fn):
        return f"is not callable ({type(fn).__name__})"
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: the call will tell
        return None
    extra: dict[str, Any] = {"ctx": None} if context else {}
    how = f"fn({'**' if unpack else ''}arguments{', ctx=...' if context else ''})"
    try:
        if unpack:
            # The fields are the model's, known per call (`_unfit_arguments`); `ctx` is not.
            signature.bind_partial(**extra)
        else:
            signature.bind(None, **extra)
    except TypeError as exc:
        hint = " (add a keyword parameter `ctx`)" if context and "ctx" in str(exc) else ""
        return f"cannot be called as {how}: {exc}{hint}"
    return None


def _missing_tool(*_: Any, **__: Any) -> Any:  # pragma: no cover - never called
    raise RuntimeError("unregistered tool")


def _attr_float(obj: object, name: str) -> float | None:
    value = getattr(obj, name, None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _arguments_of(call: ValidatedCall, *, strict: bool = False) -> Any:
    """The arguments a call is run with: its model, an ``Outcome``'s plain value, else its
    argument text read as a JSON object. With ``strict`` (a call to run), text that is no
    JSON object raises ``ValueError``: run with ``{}`` instead, a cut-off write would take
    every default; otherwise (a refused call, whose text is only scrubbed) it reads as ``{}``.
    """
    model = call.model
    if model is not None:
        return model
    # toolwire.Outcome carries the plain arguments of dict tools in ``value``, and a custom
    # tool's free-form input there too, as its text.
    value = getattr(call, "value", None)
    if isinstance(value, Mapping):
        return cast(Mapping[str, Any], value)
    if isinstance(value, str) and getattr(call, "call_type", None) == FREE_FORM_TYPE:
        return value
    raw = getattr(call, "raw_arguments", None) or getattr(call, "arguments", None)
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError:
            if strict:
                raise
            return {}
        if isinstance(parsed, dict):
            return cast(dict[str, Any], parsed)
        if strict:
            raise ValueError(f"the argument text is a JSON {type(parsed).__name__}, not an object")
    return {}


def _synthetic_id(call: ValidatedCall) -> str | None:
    """The id toolwire answers a call without one with (``Outcome.synthetic_id``), carried
    to its result so that the result answers that call wherever it is given; None for a call
    with an id, or a look-alike without the attribute."""
    if call.call_id:
        return None
    try:
        own: object = getattr(call, "synthetic_id", None)
    except Exception:
        return None
    return own if isinstance(own, str) and own else None


def _declared_secrets(call: ValidatedCall) -> Sequence[SecretStr | SecretBytes]:
    """The secret values a call's validation found by its schema (``Outcome.secrets``); none
    for a look-alike call without them, or one whose attribute raises."""
    try:
        declared: object = getattr(call, "secrets", ())
    except Exception:
        return ()
    if not isinstance(declared, (tuple, list)):
        return ()
    return [v for v in cast(Sequence[object], declared) if isinstance(v, (SecretStr, SecretBytes))]


def _safe_arguments(call: ValidatedCall) -> Any:
    try:
        return _arguments_of(call)
    except Exception:  # a call object that raised already: scrub with the hook alone
        return None


def _fields_of(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, BaseModel):
        return {name: getattr(arguments, name) for name in type(arguments).model_fields}
    if isinstance(arguments, Mapping):
        return {str(k): v for k, v in cast(Mapping[Any, Any], arguments).items()}
    return {}


def _unfit_arguments(spec: ToolSpec, arguments: Any) -> str | None:
    """Why ``spec.fn`` cannot be called with ``arguments`` unpacked (None if it can, or if its
    signature cannot be read). Checked with ``Signature.bind`` before the call: a TypeError
    raised by the call could as well come from inside the tool, after it took effect."""
    if not spec.unpack:
        return None
    if isinstance(arguments, str):
        # A custom tool's free-form input has no fields to pass as keywords.
        return "a custom tool's free-form input cannot be unpacked: register it without unpack"
    try:
        signature = inspect.signature(spec.fn)
    except (TypeError, ValueError):  # a builtin without a signature: the call will tell
        return None
    extra: dict[str, Any] = {"ctx": None} if spec.context else {}
    try:
        signature.bind(**_fields_of(arguments), **extra)
    except TypeError as exc:
        # Names only (a field the model made up among them): cut like any text it sent.
        return shown_text(_whole(exc))
    return None


def _own_copy(arguments: Any) -> Any:
    """The arguments for one attempt: a deep copy, so that what a tool changes in them (an
    item popped off a list, a password taken out of the dict) reaches neither its retry,
    which would make another operation than the one the model asked for, nor the scrubbing
    of its error text, which would no longer know the value to hide. Arguments that cannot be
    copied (a caller's call holding a client object) are handed over as they are.

    Only what can change is copied: dicts, lists and models are rebuilt, values no tool can
    change in place (str, numbers, secrets...) are shared, anything else goes through
    ``copy.deepcopy``. The same guarantee as a ``deepcopy`` of the whole, for a fraction of
    its cost per call (its memo of every object dominated a no-op tool's call)."""
    try:
        return _copied(arguments)
    except Exception:  # RecursionError (a cycle) among them
        return arguments


# Values no tool can change in place: an attempt shares them with the call's arguments.
_IMMUTABLE: frozenset[type] = frozenset(
    {str, bytes, int, float, complex, bool, type(None), SecretStr, SecretBytes, uuid.UUID}
)
_COPY = methodcaller("copy")


def _copied(value: Any) -> Any:
    kind = type(value)  # pyright: ignore[reportUnknownVariableType]
    if kind in _IMMUTABLE:
        return value
    if kind is dict:
        return _copied_dict(value)
    if kind is list:
        items: list[Any] = value
        # A container of immutable values is copied in C: no Python work per value.
        kinds = set(map(type, items))
        if kinds <= _IMMUTABLE:
            return items.copy()
        # Rows of immutable values, the usual shape of a large argument: copied in C too.
        if flat_rows(items, kinds, _IMMUTABLE):
            return list(map(_COPY, items))
        return [_copied(v) for v in items]
    if kind is tuple:
        if set(map(type, value)) <= _IMMUTABLE:
            return value
        return tuple(_copied(v) for v in cast(tuple[Any, ...], value))
    if isinstance(value, BaseModel):
        # Built as pydantic's `__copy__` builds a model (a frozen one too, without validation
        # running again), with its values copied rather than shared.
        made = type(value)
        model = made.__new__(made)
        extra = value.__pydantic_extra__
        private = cast("dict[str, Any] | None", getattr(value, "__pydantic_private__", None))
        _set_slot(model, "__dict__", _copied_dict(value.__dict__))
        _set_slot(model, "__pydantic_fields_set__", set(value.__pydantic_fields_set__))
        _set_slot(
            model,
            "__pydantic_extra__",
            None if extra is None else _copied_dict(extra),
        )
        _set_slot(
            model,
            "__pydantic_private__",
            None
            if private is None
            else {k: v for k, v in private.items() if v is not PydanticUndefined},
        )
        return model
    return copy.deepcopy(value)


def _copied_dict(mapping: Mapping[Any, Any]) -> dict[Any, Any]:
    if set(map(type, mapping.values())) <= _IMMUTABLE:
        return dict(mapping)
    return {k: _copied(v) for k, v in mapping.items()}


_set_slot = object.__setattr__


def _field(arguments: Any, name: str) -> Any:
    if isinstance(arguments, BaseModel):
        return getattr(arguments, name, None)
    if isinstance(arguments, Mapping):
        return cast(Mapping[str, Any], arguments).get(name)
    return None


def _refusal(call: ValidatedCall) -> tuple[FinalState, dict[str, Any]]:
    raw_errors = list(call.errors)
    # A key the model made of a secret argument is hidden in paths, as `Outcome`'s own are:
    # a caller-built call's error dicts and fields to ask about carry it as sent.
    declared = [t for v in _declared_secrets(call) for t in secret_texts(v)]
    errors = [_error_entry(e, declared) for e in raw_errors[:_MAX_ERRORS]]
    retryable = bool(getattr(call, "retryable", False))
    kind = call.kind
    error_type = getattr(call, "error_type", None)
    if kind == "needs_clarification":
        state: FinalState = "needs_clarification"
        slug = "needs_clarification"
    elif kind == "escalated" or getattr(call, "escalated", False):
        state, slug = "escalated", "escalated"
    elif (
        getattr(call, "parse_failed", False)
        or error_type in _PARSE_ERROR_TYPES
        or any(
            isinstance(e, Mapping) and cast(Mapping[str, Any], e).get("type") in _PARSE_ERROR_TYPES
            for e in raw_errors
        )
    ):
        state, slug = "parse_failed", "parse_failed"
    elif kind == "business_error":
        state, slug = "validation_failed", "business_rule"
    else:
        state, slug = "validation_failed", "validation_failed"
    message = {
        "needs_clarification": "information only the user can provide is missing",
        "escalated": "the call was escalated and not executed",
        "parse_failed": "the arguments are not valid JSON; the call was not executed",
        "business_rule": "the arguments break a business rule; the call was not executed",
        "validation_failed": "the arguments do not match the tool's schema; "
        "the call was not executed",
    }[slug]
    given = getattr(call, "message", None)
    # A caller-built call's texts may hold what the model sent (a field's name, the tool's
    # name): each is cut, as the errors are.
    payload: dict[str, Any] = {
        "type": shown_text(error_type) if isinstance(error_type, str) and error_type else slug,
        "message": _cut(without_values(given, declared))
        if isinstance(given, str) and given
        else message,
        "retryable": retryable,
        "errors": errors,
    }
    ask_user = getattr(call, "ask_user", None)
    if isinstance(ask_user, list) and ask_user:
        asked = cast(list[Any], ask_user)[:_MAX_MISSING]
        payload["missing"] = [shown_text(dotted_without_values(str(x), declared)) for x in asked]
    # What `Outcome.to_message` tells the model next to the errors: the advice (e.g. to send
    # shorter arguments after a cut) and whether to call again or stop.
    hint = getattr(call, "hint", None)
    if isinstance(hint, str) and hint:
        payload["hint"] = _cut(hint)
    instruction = getattr(call, "instruction", None)
    said = instruction() if callable(instruction) else None
    if isinstance(said, str) and said:
        payload["instruction"] = _cut(said)
    return state, payload


def _error_entry(error: Any, secrets: Sequence[str]) -> Any:
    as_payload = getattr(error, "as_payload", None)
    value: Any
    if callable(as_payload):
        value = as_payload()
    elif isinstance(error, Mapping) and "loc" in error and "type" in error:
        # A pydantic error dict (`ValidationError.errors()`): its `input` repeats the arguments
        # (secrets included, the whole object for a missing field), `ctx` can hold the
        # validator's exception and `url` is for developers. The model gets where and what.
        details = cast(Mapping[str, Any], error)
        loc = details.get("loc")
        steps = cast(Sequence[Any], loc) if isinstance(loc, (list, tuple)) else ()
        # A key is a `str` in a `loc`, an index an `int`: only keys are hidden.
        path = pointer(without_values(s, secrets) if isinstance(s, str) else s for s in steps)
        # A key the model made up is part of the path: cut like any text it sent.
        entry = {"path": shown_text(path), "code": shown_text(str(details.get("type")))}
        msg = details.get("msg")
        if isinstance(msg, str) and msg:
            entry["message"] = (
                msg if len(msg) <= _MESSAGE_LIMIT else msg[: _MESSAGE_LIMIT - 1] + "…"
            )
        value = entry
    else:
        value = cast(Any, error)
    try:
        shown = _jsonable(value, lenient=True)
    except Exception:
        return _safe_repr(value)[:_MESSAGE_LIMIT]
    # An entry of another shape is sent as it is only while it is short.
    written = compact_json(shown)
    return shown if len(written) <= 2 * _MESSAGE_LIMIT else _cut(written)


# What the model reads about a failed tool. The text of an arbitrary exception is not sent: it
# can hold a traceback, a URL with credentials, a DSN or a downstream response body (the same
# rule as `payloads.tool_messages`). Only text written for the model (`BusinessRuleError`,
# `NeedsClarification`) or by the executor itself (its timeouts) is passed through; the rest is
# logged for operators.
def _text_of(value: object) -> str:
    """`str(value)`, or `""` when that raises: a tool's own exception must not break the
    recording of its failure."""
    if value is None:
        return ""
    try:
        return str(value)
    except Exception:
        return ""


def _items_of(value: object) -> list[object]:
    """The items of a list or tuple attribute (anything else counts as none)."""
    return (
        list(cast("list[object] | tuple[object, ...]", value))
        if isinstance(value, (list, tuple))
        else []
    )


def _reasons_of(exc: BusinessRuleError) -> list[str]:
    """A business rejection's reasons as text. A subclass that skipped `__init__` (no
    `reasons`) or set them to something else gives its own text instead."""
    raw: object = getattr(exc, "reasons", None)
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, (list, tuple)):
        return [_text_of(reason) for reason in _items_of(cast(object, raw))]
    own = _whole(exc)
    return [] if own == type(exc).__name__ else [own]


def _model_message(cls: Classification, exc: BaseException, lang: Lang) -> str:
    # A business rule's reason is the tool author's own text; the executor's own timeout or
    # deadline names its seconds (English only: other languages get the kind's text).
    if isinstance(exc, BusinessRuleError) and not "".join(_reasons_of(exc)).strip():
        # Raised without a reason: a sentence, not the class name.
        return text("msg.business_rule_unexplained", lang)
    if isinstance(exc, BusinessRuleError) or (
        lang == "en" and isinstance(exc, (_AttemptTimeout, _OwnDeadline))
    ):
        return _whole(exc)
    key = f"exec.kind.{cls.kind}"
    return text(key if key in MESSAGES else "exec.kind.unexpected", lang)


def _error_payload(
    cls: Classification, exc: BaseException, run: _Run, scrub: Callable[[str], str], lang: Lang
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": cls.kind,
        # Cut where it is scrubbed, so that a secret the cut splits is redacted too.
        "message": _cut(scrub(_model_message(cls, exc, lang))),
        "retryable": cls.retryable,
    }
    if isinstance(exc, _NotStarted):
        payload["type"] = "internal_error"
        payload["message"] = text("exec.not_started", lang)
    if cls.status_code is not None:
        payload["status_code"] = cls.status_code
    if cls.retry_after is not None:
        payload["retry_after"] = cls.retry_after
    if isinstance(exc, BusinessRuleError):
        # As many reasons, each as long, as a check's reasons get in validation's payloads.
        payload["reasons"] = [_cut(scrub(r)) for r in _reasons_of(exc)[:_MAX_ERRORS]]
    elif isinstance(exc, NeedsClarification):
        payload["message"] = _cut(scrub(_text_of(getattr(exc, "message", None)) or _whole(exc)))
        missing = _items_of(getattr(exc, "missing", None))[:_MAX_MISSING]
        # A name without text (its `str()` raises) is left out: read with `str()`, it raised
        # out of the call and left a write's claim in progress.
        named = [_text_of(name) for name in missing]
        payload["missing"] = [shown_text(scrub(name)) for name in named if name]
    if run.stop_reason not in (None, "not_retryable"):
        payload["stopped"] = run.stop_reason
    if run.breaker_rejected:
        payload["circuit_open"] = True
    return payload


class _CarriedTryAgain(Exception):
    """A ``tenacity.TryAgain`` the tool raised (say, a polling helper inside it that gave up
    with ``reraise=True``), carried past the executor's own tenacity loop. Tenacity reads a
    ``TryAgain`` as its "retry now" signal and skips the ``retry=`` predicate, where the
    classification, the write rules and the budgets live: a write would run again with no
    retry allowed. Unwrapped (`_uncarried`) wherever the executor reads an attempt's failure,
    so the tool's exception is classified, logged and settled like any other."""

    def __init__(self, exc: TryAgain) -> None:
        super().__init__(f"the tool raised {type(exc).__name__}")
        self.exc = exc


@contextlib.contextmanager
def _hidden_from_tenacity() -> Generator[None, None, None]:
    """Carry a ``TryAgain`` escaping an attempt past tenacity (see `_CarriedTryAgain`)."""
    try:
        yield
    except TryAgain as exc:
        raise _CarriedTryAgain(exc) from exc


def _uncarried(exc: BaseException) -> BaseException:
    """The exception an attempt raised, as the tool raised it."""
    return exc.exc if isinstance(exc, _CarriedTryAgain) else exc


class _AsyncToolInSync(TypeError):
    """An async tool handed to ``execute``: the caller's mistake, raised (``execute_all``
    answers it as ``internal_error``, as any call that raised)."""


class _StopIterationRaised(RuntimeError):
    """A tool raised ``StopIteration``, ``StopAsyncIteration`` or ``GeneratorExit`` (carried as
    its cause)."""


def _no_stop_iteration(invoke: Callable[[], Any]) -> Callable[[], Any]:
    # asyncio cannot set StopIteration on a future: the worker thread's exception is dropped by
    # the event loop (a TypeError is logged) and the awaiting call never finishes. Carry it in a
    # RuntimeError instead, as PEP 479 does for coroutines. GeneratorExit likewise: the task
    # throws a future's exception into the awaiting coroutines, and a thrown GeneratorExit
    # closes each of them, so the call's settled result is discarded and GeneratorExit escapes
    # `aexecute` (and `aexecute_all` records the call a second time).
    def run() -> Any:
        try:
            return invoke()
        except (StopIteration, StopAsyncIteration, GeneratorExit) as exc:
            raise _StopIterationRaised(f"the tool raised {type(exc).__name__}") from exc

    return run


async def _no_stop_async_iteration(attempt: Awaitable[Any]) -> Any:
    """`attempt`, with a ``StopAsyncIteration`` the tool raised carried in a RuntimeError: the
    retry loop is an ``async for`` over tenacity's attempts, which reads one escaping an
    attempt as the end of the loop, and the call would end as a success with no value (a
    write's record saying it succeeded). A sync tool's is carried by `_no_stop_iteration`."""
    try:
        return await attempt
    except StopAsyncIteration as exc:
        raise _StopIterationRaised("the tool raised StopAsyncIteration") from exc


def _being_cancelled() -> bool:
    """Whether the running task has a cancellation request pending (True when unknowable)."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    cancelling: Callable[[], int] | None = getattr(task, "cancelling", None)  # Python 3.11+
    return task is None or cancelling is None or cancelling() > 0


class _Job:
    """A sync tool's attempt handed to a thread (the loop's default executor, or a thread of
    its own), which can be withdrawn until the thread picks it up (it then never runs)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._state: Literal["queued", "started", "ended", "withdrawn"] = "queued"

    def __call__(self) -> Any:
        with self._lock:
            if self._state == "withdrawn":
                return None  # nobody awaits it any more
            self._state = "started"
        try:
            return self._fn()
        finally:
            with self._lock:
                self._state = "ended"

    def running(self) -> bool:
        """Whether the tool is running on its worker thread now."""
        with self._lock:
            return self._state == "started"

    def withdraw(self) -> bool:
        """Stop the job if it has not started; True if it never runs."""
        with self._lock:
            if self._state == "queued":
                self._state = "withdrawn"
            return self._state == "withdrawn"


def _submitted(
    pool: ThreadPoolExecutor,
    one: Callable[[ValidatedCall], ExecutionResult],
    call: ValidatedCall,
) -> Future[ExecutionResult]:
    """``one(call)`` handed to ``pool`` for `Executor.execute_all`, never lost: a call the
    pool cannot take runs in the caller's thread instead, and once either way.

    ``ThreadPoolExecutor.submit`` raises when it cannot start a thread (the process at its
    thread limit) after queueing the work, which a worker it already has may then run: the
    call would run while its future, its result with it, was lost. A `_Job` decides who runs
    it: the first to take it.
    """
    # Its own copy of the caller's context, taken here in the caller's thread (a pool thread
    # has a context of its own, and one context cannot be entered by two threads at once).
    context = contextvars.copy_context()
    job = _Job(lambda: context.run(one, call))
    outcome: Future[ExecutionResult] = Future()

    def work() -> None:
        try:
            result = job()
        except BaseException as exc:  # KeyboardInterrupt: raised where the result is read
            outcome.set_exception(exc)
        else:
            if result is not None:  # None: withdrawn, the caller runs it
                outcome.set_result(result)

    try:
        pool.submit(work)
    except RuntimeError:
        if job.withdraw():
            try:
                outcome.set_result(context.run(one, call))
            except BaseException as exc:
                outcome.set_exception(exc)
    return outcome


async def _to_thread_then_await(job: _Job) -> Any:
    return await _then_awaited(await asyncio.to_thread(job))


async def _in_own_thread_then_await(job: _Job, name: str) -> Any:
    """A sync tool's timed attempt under ``aexecute``, in a daemon thread of its own."""
    try:
        done = _in_thread(job, f"toolwire-{name}")
    except RuntimeError as exc:  # "can't start new thread": the tool never ran
        raise _NotStarted(f"no thread could be started for the attempt: {exc}") from exc
    return await _then_awaited(await asyncio.wrap_future(done))


async def _then_awaited(value: Any) -> Any:
    if inspect.isawaitable(value):
        # A sync callable that wraps an async function (a lambda, a partial): await its work.
        value = await value
    return await _drained_async(value)


def _drained(value: Any) -> Any:
    """A generator or other iterator a tool returned (a ``map``, a ``filter``), run to its end
    now, inside the attempt: its work is the tool's work (bound by the timeout, retried as
    the tool is, on the tool's thread), not something the result's serialisation would do
    later, outside all of that (and, for an endless one, with no timeout to stop it)."""
    return list(cast(Iterator[Any], value)) if isinstance(value, Iterator) else value


async def _drained_async(value: Any) -> Any:
    """`_drained` for `aexecute`: an awaitable is awaited and an async generator, or any other
    async iterator (a class with ``__anext__``, a driver's cursor), run to its end inside the
    attempt (reported as the object it is, it never ran at all)."""
    if inspect.isawaitable(value):
        value = await value
    if isinstance(value, AsyncIterator):
        return [item async for item in cast(AsyncIterator[Any], value)]
    return _drained(value)


def _in_thread(fn: Callable[[], T], name: str) -> Future[T]:
    """Start ``fn`` in a new daemon thread, in a copy of the caller's context (as
    ``asyncio.to_thread`` does: the current span, logging context and the like go along);
    its outcome lands in the returned future."""
    done: Future[T] = Future()
    # Running from the start: an awaiter that gives up (`asyncio.wrap_future` cancelled at a
    # timeout) cannot cancel it, so the thread's result never meets a cancelled future.
    done.set_running_or_notify_cancel()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            value = context.run(fn)
        except BaseException as exc:
            done.set_exception(exc)
        else:
            done.set_result(value)

    threading.Thread(target=work, name=name, daemon=True).start()
    return done


async def _through_cancellation(fn: Callable[[], T], name: str) -> T:
    """``fn`` in a daemon thread of its own, awaited to its end however often the caller is
    cancelled meanwhile; the cancellation is raised after it. For a blocking ledger's step
    that must be over before the caller leaves (a claim left in progress would answer its
    retry "in progress", then "unknown outcome"). Not the loop's default executor: a job
    queued there behind busy workers (sync tools) never runs once its awaiter is cancelled."""
    try:
        running = _in_thread(fn, name)
    except RuntimeError:
        # No thread to be had (the process at its thread limit): the loop waits for the
        # ledger, where giving up would lose what the step records.
        return fn()
    waiter = asyncio.wrap_future(running)
    cancelled: asyncio.CancelledError | None = None
    while not waiter.done():
        try:
            # `wait`, unlike awaiting the future, leaves it running when we are cancelled.
            await asyncio.wait({waiter})
        except asyncio.CancelledError as exc:
            cancelled = exc
    if cancelled is not None:
        raise cancelled from waiter.exception()
    return waiter.result()


def _call_with_timeout(fn: Callable[[], Any], timeout: float | None, name: str) -> Any:
    """A sync tool's attempt. It runs in a copy of the caller's context whether or not it has
    a thread of its own: it sees the caller's context variables (the current span, a tenant)
    either way, and what it sets stays its own, as with ``aexecute`` (``asyncio.to_thread``)."""
    if timeout is None:
        return contextvars.copy_context().run(fn)
    try:
        done = _in_thread(fn, f"toolwire-{name}")
    except RuntimeError as exc:  # "can't start new thread": the tool never ran
        raise _NotStarted(f"no thread could be started for the attempt: {exc}") from exc
    # Not `done.result(timeout)`: its TimeoutError is the builtin one, which the tool may raise.
    if not wait_futures([done], timeout=max(0.0, timeout)).done:
        # The thread goes on: another attempt would run beside it.
        raise _AttemptTimeout(
            f"tool {name!r} timed out after {timeout:.3f}s", still_running=not done.done()
        )
    return done.result()


async def _await_with_timeout(
    make: Callable[[], Awaitable[Any]], timeout: float | None, name: str
) -> Any:
    if timeout is None:
        return await make()
    if timeout <= 0:
        raise _AttemptTimeout(f"tool {name!r} had no time left")
    task = asyncio.ensure_future(make())
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:
        with contextlib.suppress(asyncio.CancelledError):
            await _stop(task)
        raise
    if task in done:
        return task.result()
    stopped = await _stop(task)
    if stopped and not task.cancelled() and task.exception() is None:
        # Cancelled, it finished its work instead of stopping halfway (a commit it would not
        # leave undone) and returned: the attempt's result, late as it is. Reported as a
        # timeout, a write known to have succeeded would be recorded unknown, and a read
        # would run again after each success.
        return task.result()
    raise _AttemptTimeout(
        f"tool {name!r} timed out after {timeout:.3f}s", still_running=not stopped
    )


async def _stop(task: asyncio.Future[Any]) -> bool:
    """Cancels an attempt's task and waits, at most `_SETTLE_GRACE` seconds, for it to end:
    its cleanup (which may await) must be over before the call is settled or tried again, or
    two attempts of one write would overlap. False if it is still running."""
    task.cancel()
    if not task.done():
        await asyncio.wait({task}, timeout=_SETTLE_GRACE)
    # Retrieve the task's eventual exception so asyncio does not log it as never retrieved.
    task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
    return task.done()


# Renewals per lease: a write's claim is renewed every third of its lease, so the lease still
# runs when one renewal fails (the store briefly out of reach) and the next succeeds.
_RENEWALS_PER_LEASE = 3
# Longest single wait of the lease keeper, in seconds.
_MAX_WAIT = 3600.0
# Seconds the lease keeper's thread waits for another write after the last one in flight ended.
_KEEPER_LINGER = 1.0


class _HeldLease:
    """A write's claim whose lease `_LeaseKeeper` renews until its call drops it."""

    __slots__ = ("due", "held", "interval", "renew")

    def __init__(self, renew: Callable[[_HeldLease], bool], interval: float, due: float) -> None:
        self.renew = renew
        self.interval = interval
        self.due = due
        self.held = True


class _LeaseKeeper:
    """Renews the leases of one executor's writes in flight (see `Executor._hold_lease`); a
    second keeper, with a thread of its own, paces the background tries of outcomes recorded
    late (see `_LateRecords`).

    One daemon thread renews them all, and only while one is held or was a moment ago: it ends
    `_KEEPER_LINGER` seconds after the last is dropped unless another write comes, and is
    started again by the next one, so an idle executor holds no thread and none outlives the
    calls for long, while steady traffic does not start a thread per write (that was about
    50 us of a short write's 150 us). A renewal is a ledger call in that thread, never in a
    call's own, so a slow store delays no tool and a failing one fails no call; dropping a
    lease never waits for the store (a renewal under way may still land). Renewals are paced by the
    executor's clock (`FakeClock` in tests; see ``wait_until`` in `toolwire.execution.clock`).
    """

    def __init__(self, clock: Clock, name: str) -> None:
        self._clock = clock
        self._name = name
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._held: set[_HeldLease] = set()
        self._thread: threading.Thread | None = None

    def hold(self, renew: Callable[[_HeldLease], bool], interval: float) -> _HeldLease:
        """Call ``renew`` every ``interval`` seconds from now until `drop`, or until it
        returns False.

        Raises:
            RuntimeError: No thread could be started to renew it.
        """
        lease = _HeldLease(renew, interval, self._clock.monotonic() + interval)
        with self._lock:
            if self._thread is None:
                thread = threading.Thread(target=self._keep, name=self._name, daemon=True)
                thread.start()
                self._thread = thread
            self._held.add(lease)
            self._wake.set()
        return lease

    def drop(self, lease: _HeldLease | None) -> None:
        """Stop renewing ``lease`` (None: nothing was held)."""
        if lease is None:
            return
        with self._lock:
            lease.held = False
            self._held.discard(lease)
            if not self._held:
                self._wake.set()  # the thread ends now rather than at the next renewal

    def _keep(self) -> None:
        try:
            while self._renew_due():
                pass
        finally:
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None

    def _renew_due(self) -> bool:
        """Wait for the next renewal and make it; False once nothing is held."""
        with self._lock:
            self._wake.clear()
            idle = not self._held
            now = self._clock.monotonic()
            due = [lease for lease in self._held if lease.due <= now]
            next_due = min((lease.due for lease in self._held), default=now)
        if idle:
            # Real seconds, not the executor's clock: how long an idle thread stays is about
            # this process's threads, not about leases.
            woken = self._wake.wait(_KEEPER_LINGER)
            with self._lock:
                # Woken by a write that came and went meanwhile: linger again from now.
                if self._held or woken:
                    return True
                self._thread = None
                return False
        if not due:
            _wait(self._clock, self._wake, next_due)
            return True
        for lease in due:
            try:
                keep = lease.renew(lease)
            except Exception:  # the renewer reports its own failures; keep renewing
                keep = True
            with self._lock:
                # From when it fell due, not from when the store answered: a slow answer does
                # not push the next renewal later (nor does a test moving the clock meanwhile).
                lease.due = now + lease.interval
                if not keep:
                    self._held.discard(lease)
        return True


class _LateRecord:
    """One outcome `_LateRecords` tries to record."""

    __slots__ = ("attempt", "busy", "give_up", "held", "tries", "what")

    def __init__(self, attempt: Callable[[], bool], what: str, give_up: Callable[[], bool]) -> None:
        self.attempt = attempt
        self.what = what
        self.give_up = give_up
        self.held: _HeldLease | None = None
        self.busy = False  # a try is queued or running
        self.tries = 0  # tries ended


class _LateRecords:
    """The background tries of outcomes the store could not record while their calls waited
    (see `Executor._record_later`).

    A `_LeaseKeeper` paces each outcome's tries; the tries run in worker threads, at most
    `_LATE_RECORD_WORKERS`, so that one store write that hangs holds up its own outcome only:
    a single thread making every try would leave all the others unrecorded behind it. More
    tries hanging at once than there are workers wait in turn rather than start a thread
    each, and an outcome's next try is never queued while its last is still under way. Workers
    end `_KEEPER_LINGER` real seconds after the queue runs dry, as the keeper's thread does.

    Daemon threads end with the interpreter, mid-try or before the next try is due: while an
    outcome is held, an ``atexit`` hook tries each one once more at once and waits for those
    tries up to `_LATE_RECORD_AT_EXIT` seconds (`flush`, also called by `Executor.close`);
    each one still not recorded is given up and handed to ``lost``, so none goes unreported,
    and none twice: its ``give_up`` says whether the report is still to be made (the outcome
    not recorded meanwhile), and makes a try that lands afterwards report nothing.
    The hook is registered only while something is held, so an idle executor is not kept
    alive by it.
    """

    def __init__(self, clock: Clock, name: str, lost: Callable[[str, bool], None]) -> None:
        self._name = name
        self._lost = lost
        self._keeper = _LeaseKeeper(clock, name)
        self._cond = threading.Condition()
        self._held: dict[_LateRecord, None] = {}  # insertion-ordered: tried in that order
        self._ready: deque[_LateRecord] = deque()
        self._workers = 0
        self._idle = 0

    def hold(
        self,
        attempt: Callable[[], bool],
        interval: float,
        what: str,
        give_up: Callable[[], bool],
    ) -> None:
        """Call ``attempt`` every ``interval`` seconds (the clock's), from now, until it
        returns False; ``what`` names it in a report of an outcome lost, which is made only
        if ``give_up()``, called when the outcome is given up, returns True.

        Raises:
            RuntimeError: No thread could be started to pace it.
        """
        item = _LateRecord(attempt, what, give_up)
        with self._cond:
            if not self._held:
                atexit.register(self._at_exit)
            self._held[item] = None
        try:
            item.held = self._keeper.hold(lambda _: self._due(item), interval)
        except RuntimeError:
            self._done(item)
            raise

    def flush(self, timeout: float) -> list[tuple[str, bool]]:
        """Try every outcome held once more at once, wait up to ``timeout`` real seconds for
        those tries (or for one under way), then give up on those still not recorded and
        return what names each one to report, and whether a try of it is still under way (it
        may land yet). A try queued but not started is not made."""
        deadline = time.monotonic() + timeout
        with self._cond:
            before = {item: item.tries for item in self._held}
            for item in before:
                self._queue(item)
            while True:
                waiting = [i for i, n in before.items() if i in self._held and i.tries == n]
                left = deadline - time.monotonic()
                if not waiting or left <= 0:
                    break
                self._cond.wait(left)
            left_over = list(self._held)
            for item in left_over:
                if item in self._ready:
                    self._ready.remove(item)
                    item.busy = False
            under_way = {item for item in left_over if item.busy}
        reports: list[tuple[str, bool]] = []
        for item in left_over:
            self._done(item)
            # After `_done`, so that no try is queued for it any more; a try under way that
            # lands before this call is the outcome's result, and `give_up` says so.
            if item.give_up():
                reports.append((item.what, item in under_way))
        return reports

    def _at_exit(self) -> None:
        for what, under_way in self.flush(_LATE_RECORD_AT_EXIT):
            self._lost(what, under_way)

    def _due(self, item: _LateRecord) -> bool:
        """The keeper's turn for ``item``: queue a try; False once it is recorded."""
        with self._cond:
            if item not in self._held:
                return False
            self._queue(item)
            return True

    def _queue(self, item: _LateRecord) -> None:
        # Called with the lock held.
        if item.busy:
            return
        item.busy = True
        self._ready.append(item)
        # Idle workers take what is ready only once they wake: count them against it, or two
        # tries queued at once could both fall to one worker, the second behind a hung first.
        if len(self._ready) > self._idle and self._workers < _LATE_RECORD_WORKERS:
            try:
                worker = threading.Thread(target=self._work, name=f"{self._name}-try", daemon=True)
                worker.start()
            except RuntimeError:
                # No thread to be had: a worker already running takes it in turn; with none,
                # it is tried here and now rather than left in a queue nobody reads.
                if self._workers == 0:
                    self._ready.remove(item)
                    item.busy = False
                    self._run(item)
                    return
            else:
                self._workers += 1
        self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._ready:
                    self._idle += 1
                    woken = self._cond.wait(_KEEPER_LINGER)  # real seconds: about threads
                    self._idle -= 1
                    if not woken and not self._ready:
                        self._workers -= 1
                        return
                item = self._ready.popleft()
            self._run(item)

    def _run(self, item: _LateRecord) -> None:
        try:
            again = item.attempt()
        except Exception:  # the attempt reports its own failures; try again later
            again = True
        with self._cond:
            item.busy = False
            item.tries += 1
            self._cond.notify_all()
        if not again:
            self._done(item)

    def _done(self, item: _LateRecord) -> None:
        with self._cond:
            was_held = item in self._held
            self._held.pop(item, None)
            if was_held and not self._held:
                atexit.unregister(self._at_exit)
            self._cond.notify_all()
        self._keeper.drop(item.held)


def _wait(clock: Clock, event: threading.Event, deadline: float) -> None:
    """``clock.wait_until(event, deadline)`` where the clock has it (see
    `toolwire.execution.clock`), else ``event.wait`` in real seconds; at most `_MAX_WAIT` at a
    time (the keeper then looks again)."""
    deadline = min(deadline, clock.monotonic() + _MAX_WAIT)
    wait_until: Callable[[threading.Event, float], object] | None = getattr(
        clock, "wait_until", None
    )
    try:
        if wait_until is not None:
            wait_until(event, deadline)
            return
    except Exception:  # a clock's own failure must not stop the renewals
        pass
    event.wait(max(0.0, deadline - clock.monotonic()))
