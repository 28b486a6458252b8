"""One structured record per tool call: a log line, an optional span, counters.

Logging goes to the ``toolwire.execution`` logger with the record under
``extra={"toolwire": {...}}`` so JSON formatters can emit it as is. OpenTelemetry is optional:
when ``opentelemetry-api`` is importable and no tracer/meter is injected, each ``Observer`` asks
the API for its own tracer and meter (which are no-ops until the application installs an SDK).
Nothing is module-global: counters live on the ``Observer`` an ``Executor`` owns.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter as _Tally
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypedDict

__all__ = [
    "ExecutionRecord",
    "FinalState",
    "MeterLike",
    "Observer",
    "SpanLike",
    "TracerLike",
]

FinalState = Literal[
    "ok",
    "validation_failed",
    "parse_failed",
    "downstream_failed",
    "needs_clarification",
    "escalated",
    "duplicate_suppressed",
    "tool_unavailable",
    "in_progress",
    "unknown_outcome",
]

AttrValue = str | bool | int | float


class ExecutionRecord(TypedDict):
    """The observability record of one tool call (one per call id, whatever happened)."""

    tool: str
    call_id: str | None
    request_id: str | None
    session_id: str | None
    args_hash: str | None
    idempotency_key: str | None
    state: FinalState
    error_type: str | None
    attempts: int
    coercions: int
    parse_time: float | None
    validation_time: float | None
    execution_time: float
    total_time: float
    duplicate_execution: bool


class SpanLike(Protocol):
    """The part of an OpenTelemetry span we use."""

    def set_attribute(self, key: str, value: AttrValue) -> None:
        """Set one attribute."""
        ...

    def add_event(self, name: str, attributes: Mapping[str, AttrValue] | None = None) -> None:
        """Add a timestamped event."""
        ...

    def end(self) -> None:
        """Finish the span."""
        ...


class TracerLike(Protocol):
    """The part of an OpenTelemetry tracer we use."""

    def start_span(
        self, name: str, *, attributes: Mapping[str, AttrValue] | None = None
    ) -> SpanLike:
        """Start a span (not made current)."""
        ...


class _CounterLike(Protocol):
    def add(
        self, amount: int | float, attributes: Mapping[str, AttrValue] | None = None
    ) -> None: ...


class _HistogramLike(Protocol):
    def record(
        self, amount: int | float, attributes: Mapping[str, AttrValue] | None = None
    ) -> None: ...


class MeterLike(Protocol):
    """The part of an OpenTelemetry meter we use."""

    def create_counter(self, name: str, unit: str = "", description: str = "") -> _CounterLike:
        """Create a monotonic counter."""
        ...

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> _HistogramLike:
        """Create a histogram."""
        ...


class _NoSpan:
    def set_attribute(self, key: str, value: AttrValue) -> None:
        pass

    def add_event(self, name: str, attributes: Mapping[str, AttrValue] | None = None) -> None:
        pass

    def end(self) -> None:
        pass


_NO_SPAN = _NoSpan()

_COUNTERS = {
    "calls": "tool calls by final state",
    "attempts": "downstream attempts",
    "retries": "retries after a failed attempt",
    "parse_failures": "calls whose arguments did not parse",
    "duplicates_suppressed": "duplicate calls answered from the idempotency ledger",
    "duplicate_executions": "executions that may repeat an earlier one (stale-claim takeover)",
    "stale_in_progress": "in-progress records found past their expiry",
    "ledger_errors": "ledger store failures",
}


def _default_otel() -> tuple[TracerLike | None, MeterLike | None]:
    try:
        from opentelemetry import metrics, trace
    except ImportError:  # pragma: no cover - exercised only without opentelemetry-api
        return None, None
    tracer: TracerLike = trace.get_tracer("toolwire.execution")
    meter: MeterLike = metrics.get_meter("toolwire.execution")
    return tracer, meter


class Observer:
    """Emits the per-call record to logging, tracing and metrics.

    Args:
        logger: Logger to write to (default ``logging.getLogger("toolwire.execution")``).
        tracer: OpenTelemetry-compatible tracer; default from the API when importable.
        meter: OpenTelemetry-compatible meter; default from the API when importable.
        otel: Set to False to skip OpenTelemetry even when it is importable.
    """

    def __init__(
        self,
        *,
        logger: logging.Logger | None = None,
        tracer: TracerLike | None = None,
        meter: MeterLike | None = None,
        otel: bool = True,
    ) -> None:
        self.logger = logger or logging.getLogger("toolwire.execution")
        if otel and (tracer is None or meter is None):
            default_tracer, default_meter = _default_otel()
            tracer = tracer or default_tracer
            meter = meter or default_meter
        self._tracer = tracer if otel else None
        self._counters: dict[str, _CounterLike] = {}
        self._duration: _HistogramLike | None = None
        if otel and meter is not None:
            for name, description in _COUNTERS.items():
                self._counters[name] = meter.create_counter(
                    f"toolwire.execution.{name}", unit="1", description=description
                )
            self._duration = meter.create_histogram(
                "toolwire.execution.duration", unit="s", description="tool call wall time"
            )
        self._lock = threading.Lock()
        #: In-process tallies of the same counters, keyed by counter name (and state for calls).
        self.counts: _Tally[str] = _Tally()

    def count(self, name: str, amount: int = 1, **attributes: AttrValue) -> None:
        """Add to counter ``name`` (see ``_COUNTERS``), in-process and in OpenTelemetry."""
        if amount <= 0:
            return
        with self._lock:
            self.counts[name] += amount
        counter = self._counters.get(name)
        if counter is not None:
            counter.add(amount, attributes)

    def start_span(self, tool: str, call_id: str | None) -> SpanLike:
        """Start the span of one call (a no-op object without a tracer)."""
        if self._tracer is None:
            return _NO_SPAN
        attributes: dict[str, AttrValue] = {"toolwire.tool": tool}
        if call_id is not None:
            attributes["toolwire.call_id"] = call_id
        return self._tracer.start_span(f"toolwire.execute {tool}", attributes=attributes)

    def finish(self, record: ExecutionRecord, span: SpanLike) -> None:
        """Emit the record: counters, span attributes, one log line."""
        state = record["state"]
        tool = record["tool"]
        self.count("calls", 1, tool=tool, state=state)
        with self._lock:
            self.counts[f"calls.{state}"] += 1
        self.count("attempts", record["attempts"], tool=tool)
        self.count("retries", max(0, record["attempts"] - 1), tool=tool)
        if state == "parse_failed":
            self.count("parse_failures", 1, tool=tool)
        if state == "duplicate_suppressed":
            self.count("duplicates_suppressed", 1, tool=tool)
        if record["duplicate_execution"]:
            self.count("duplicate_executions", 1, tool=tool)
        if self._duration is not None:
            self._duration.record(record["total_time"], {"tool": tool, "state": state})
        for key, value in record.items():
            if value is not None and isinstance(value, (str, bool, int, float)):
                span.set_attribute(f"toolwire.{key}", value)
        span.end()
        level = logging.INFO if state in ("ok", "duplicate_suppressed") else logging.WARNING
        if self.logger.isEnabledFor(level):
            payload: dict[str, Any] = dict(record)
            self.logger.log(
                level,
                "tool call %s (%s): %s after %d attempt(s)",
                record["call_id"],
                tool,
                state,
                record["attempts"],
                extra={"toolwire": payload},
            )
