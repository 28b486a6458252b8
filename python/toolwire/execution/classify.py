"""Classify an exception from a tool into "retry or not" and "could it have taken effect".

The classifier duck-types instead of importing HTTP clients, so it works with ``httpx``,
``openai``-style ``APIStatusError`` (``.status_code`` and ``.response.headers``), ``urllib``'s
``HTTPError``, its ``URLError`` (read by the ``reason`` inside) and plain exceptions that carry
``status_code``/``retry_after`` attributes, without making any of them a dependency.

``ambiguous`` matters for writes: a read timeout or a 502/504 may come after the downstream applied
the change, so a side-effecting tool is not retried on it unless it forwards the idempotency key
downstream (``retry_ambiguous=True``). Connection refused, 408, 429 and 503 mean the request was
not processed, so they are retried for writes as well.
"""

from __future__ import annotations

import asyncio
import builtins
import datetime as dt
import email.utils
import errno
import math
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from toolwire.execution.errors import BusinessRuleError, NeedsClarification

__all__ = ["Classification", "DeadlineExceeded", "FailureKind", "classify", "parse_retry_after"]

FailureKind = Literal[
    "timeout",
    "rate_limited",
    "bad_gateway",
    "service_unavailable",
    "gateway_timeout",
    "connection_error",
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "conflict",
    "unprocessable",
    "client_error",
    "server_error",
    "business_rule",
    "needs_clarification",
    "cancelled",
    "interrupted",
    "deadline_exceeded",
    "unknown_error",
]


class DeadlineExceeded(TimeoutError):
    """The request's deadline passed; raised inside the executor and never retried."""


@dataclass(frozen=True, slots=True)
class Classification:
    """What the executor should do with one failed attempt.

    Attributes:
        kind: Stable slug of the failure, used in payloads and metrics.
        retryable: Whether another attempt may succeed.
        ambiguous: Whether the downstream may have applied the call anyway.
        status_code: HTTP status if one was found on the exception.
        retry_after: Seconds the server asked us to wait, if it said so.
        propagate: Whether the exception must be re-raised (cancellation, interrupts).
    """

    kind: FailureKind
    retryable: bool
    ambiguous: bool
    status_code: int | None = None
    retry_after: float | None = None
    propagate: bool = False


# status -> (kind, retryable, ambiguous)
_STATUS: dict[int, tuple[FailureKind, bool, bool]] = {
    400: ("bad_request", False, False),
    401: ("unauthorized", False, False),
    403: ("forbidden", False, False),
    404: ("not_found", False, False),
    408: ("timeout", True, False),
    409: ("conflict", False, False),
    422: ("unprocessable", False, False),
    429: ("rate_limited", True, False),
    502: ("bad_gateway", True, True),
    503: ("service_unavailable", True, False),
    504: ("gateway_timeout", True, True),
}

# Class names from httpx, httpcore, openai, requests and urllib3, matched along the MRO so none
# of them has to be imported. The first set never reached the server.
_NOT_SENT_TIMEOUTS = frozenset({"ConnectTimeout", "PoolTimeout", "ConnectTimeoutError"})
_NOT_SENT_CONNECTION = frozenset({"ConnectError", "NewConnectionError"})
_UNREACHABLE = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH})
_TIMEOUTS = frozenset(
    {"TimeoutException", "ReadTimeout", "WriteTimeout", "APITimeoutError", "ReadTimeoutError"}
)
_CONNECTION = frozenset(
    {
        "ConnectionError",  # requests' own class (an OSError, not the builtin ConnectionError)
        "RemoteProtocolError",
        "ReadError",
        "WriteError",
        "NetworkError",
        "APIConnectionError",
        "ProtocolError",
        "ChunkedEncodingError",
    }
)


def _status_of(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        if holder is None:
            continue
        for attr in ("status_code", "status"):
            value = getattr(holder, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    # urllib.error.HTTPError keeps the status in ``code`` next to ``headers``.
    code = getattr(exc, "code", None)
    if (
        isinstance(code, int)
        and not isinstance(code, bool)
        and 100 <= code <= 599
        and getattr(exc, "headers", None) is not None
    ):
        return code
    return None


def _header(headers: Any, name: str) -> str | None:
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if callable(getter):
        value = getter(name)
        if value is not None:
            return str(value)
    if isinstance(headers, Mapping):
        for key, value in headers.items():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(key, str) and key.lower() == name:
                return str(value)  # pyright: ignore[reportUnknownArgumentType]
    return None


def _seconds(value: float) -> float | None:
    # NaN, infinities and ints too large for a float are unreadable, not "wait forever": they
    # would otherwise raise inside classify or reach the model's JSON payload as `Infinity`.
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def parse_retry_after(value: str | float | None, *, now: float) -> float | None:
    """Parse a ``Retry-After`` value (delta-seconds or an HTTP date) into seconds from ``now``.

    Args:
        value: Header text or a number of seconds.
        now: Current Unix time, used for the HTTP-date form.

    Returns:
        Non-negative seconds, or ``None`` if the value is missing or unreadable.
    """
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return _seconds(value)
    text = value.strip()
    try:
        return _seconds(float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        # An HTTP date is always GMT (RFC 9110), the asctime form included, which carries no
        # zone; `-0000` and a missing zone also come back without one. Read as local time,
        # the wait would move by the host's UTC offset.
        when = when.replace(tzinfo=dt.timezone.utc)
    return max(0.0, when.timestamp() - now)


def _retry_after_of(exc: BaseException, *, now: float) -> float | None:
    attr = getattr(exc, "retry_after", None)
    if isinstance(attr, (int, float, str)) and not isinstance(attr, bool):
        parsed = parse_retry_after(attr, now=now)
        if parsed is not None:
            return parsed
    response = getattr(exc, "response", None)
    for headers in (getattr(response, "headers", None), getattr(exc, "headers", None)):
        # OpenAI sends the millisecond form next to the standard header; it is more precise.
        millis = _header(headers, "retry-after-ms")
        if millis is not None:
            try:
                seconds = _seconds(float(millis) / 1000.0)
            except ValueError:
                seconds = None
            if seconds is not None:
                return seconds
        parsed = parse_retry_after(_header(headers, "retry-after"), now=now)
        if parsed is not None:
            return parsed
    return None


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _wrapped_names(exc: BaseException) -> set[str]:
    """Class names of the errors a client wrapped in ``exc``: requests raises its
    ``ConnectionError(urllib3_error)``, and urllib3's ``MaxRetryError`` keeps the last error
    in ``reason``."""
    names: set[str] = set()
    args = exc.args
    inner = args[0] if args and isinstance(args[0], BaseException) else None
    for _ in range(2):
        if inner is None:
            break
        names |= _names(inner)
        reason = getattr(inner, "reason", None)
        inner = reason if isinstance(reason, BaseException) else None
    return names


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``KeyboardInterrupt`` or ``SystemExit``, or an exception group
    holding one (a tool's own task group, say, interrupted in one of its tasks): the process
    is going down either way, and the exception must reach the caller, not become data."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return True
    if _GROUP is not None and isinstance(exc, _GROUP):
        inner = cast("Sequence[BaseException]", getattr(exc, "exceptions", ()))
        return any(is_interrupt(one) for one in inner)
    return False


# Python 3.11's; the package supports 3.10, which has none.
_GROUP = cast("type[BaseException] | None", getattr(builtins, "BaseExceptionGroup", None))


def classify(exc: BaseException, *, now: float) -> Classification:
    """Classify one failed attempt.

    Args:
        exc: The exception the tool raised (or the executor raised around it).
        now: Current Unix time, for ``Retry-After`` given as an HTTP date.

    Returns:
        The classification; unknown exceptions are not retried and count as ambiguous.
    """
    if isinstance(exc, asyncio.CancelledError):
        return Classification("cancelled", retryable=False, ambiguous=True, propagate=True)
    if is_interrupt(exc):
        return Classification("interrupted", retryable=False, ambiguous=True, propagate=True)
    if isinstance(exc, DeadlineExceeded):
        return Classification("deadline_exceeded", retryable=False, ambiguous=True)
    if isinstance(exc, BusinessRuleError):
        return Classification("business_rule", retryable=False, ambiguous=False)
    if isinstance(exc, NeedsClarification):
        return Classification("needs_clarification", retryable=False, ambiguous=False)

    status = _status_of(exc)
    if status is not None:
        try:
            retry_after = _retry_after_of(exc, now=now)
        except Exception:
            # Headers that cannot be read (a response already closed, a property that raises):
            # the status still says what happened, only the wait is unknown. Unclassified, a
            # refused write (429, 503) would be recorded as an unknown outcome.
            retry_after = None
        known = _STATUS.get(status)
        if known is not None:
            kind, retryable, ambiguous = known
        elif status >= 500:
            kind, retryable, ambiguous = "server_error", False, True
        elif status >= 400:
            kind, retryable, ambiguous = "client_error", False, False
        else:
            kind, retryable, ambiguous = "unknown_error", False, True
        return Classification(kind, retryable, ambiguous, status, retry_after)

    names = _names(exc)
    reason = getattr(exc, "reason", None)
    if "URLError" in names and isinstance(reason, BaseException) and reason is not exc:
        # urllib wraps what failed while connecting and sending in `URLError(reason)`; the
        # reason says whether anything reached the server.
        return classify(reason, now=now)
    if names & _NOT_SENT_TIMEOUTS:
        return Classification("timeout", retryable=True, ambiguous=False)
    # A refused connection, a name that does not resolve or a host that cannot be reached:
    # nothing was sent.
    unreachable = isinstance(exc, OSError) and exc.errno in _UNREACHABLE
    if (
        isinstance(exc, (ConnectionRefusedError, socket.gaierror))
        or unreachable
        or names & _NOT_SENT_CONNECTION
    ):
        return Classification("connection_error", retryable=True, ambiguous=False)
    # asyncio.TimeoutError is only an alias of TimeoutError from 3.11 on.
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or names & _TIMEOUTS:
        return Classification("timeout", retryable=True, ambiguous=True)
    if isinstance(exc, ConnectionError) or names & _CONNECTION:
        # A connection that could not be made (wrapped by the client) sent nothing.
        not_sent = _wrapped_names(exc) & (_NOT_SENT_CONNECTION | _NOT_SENT_TIMEOUTS)
        return Classification("connection_error", retryable=True, ambiguous=not not_sent)
    return Classification("unknown_error", retryable=False, ambiguous=True)
