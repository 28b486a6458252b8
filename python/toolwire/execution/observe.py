"""One structured record per tool call: a log line, an optional span, counters.

Logging goes to the ``toolwire.execution`` logger with the record under
``extra={"toolwire": {...}}`` so JSON formatters can emit it as is. OpenTelemetry is optional:
when ``opentelemetry-api`` is importable and no tracer/meter is injected, each ``Observer`` asks
the API for its own tracer and meter (which are no-ops until the application installs an SDK).
Nothing is module-global: counters live on the ``Observer`` an ``Executor`` owns.

Telemetry never decides a call's outcome. A hook that raises (the tracer, a span, a counter or
the histogram, the logger's filters or handlers), a ``BaseException`` too (a ``CancelledError``
from an exporter's future) but an interrupt or ``SystemExit``, is contained where it is
called: the call's result is unchanged and the other channels still get the record. Each
failure is counted (``observer_errors``); the first one of each hook per ``Observer`` is logged
with its traceback to ``toolwire.execution.observe`` (or, if logging is what fails, issued as
a ``RuntimeWarning``), so a broken exporter is seen once, not once per call.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections import Counter as _Tally
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypedDict

__all__ = [
    "ExecutionRecord",
    "FinalState",
    "Hook",
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


class _RecordFields(TypedDict):
    """The fields every `ExecutionRecord` has."""

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


class ExecutionRecord(_RecordFields, total=False):
    """The observability record of one tool call (one per call id, whatever happened).

    ``unrecorded`` (optional, so records built before it still type-check; the executor always
    sets it): the write's outcome was not in the ledger when the call ended and is retried in
    the background (``ExecutionResult.unrecorded``).

    ``requested_tool`` (only for a call to a tool the executor does not have): the name the
    call asked for, cut to 200 characters. ``tool`` is then ``"(unregistered)"``, as the
    span name and the metric labels say: names a model makes up would add a time series each.
    """

    unrecorded: bool
    requested_tool: str


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
    "leases_lost": "writes whose claim was found no longer held when its lease was renewed",
    "outcomes_recorded_late": "write outcomes the ledger stored only after their call ended",
    "observer_errors": "observability hooks that raised (the calls were not affected)",
}

Hook = Literal["tracer", "span", "meter", "logger"]

# Not the observer's own logger: a filter of that logger may be the hook that failed, and a
# logger's filters do not see records that propagate up from its children.
_report_log = logging.getLogger("toolwire.execution.observe")
# What a hook may raise past its containment: the process going down. Anything else, a
# BaseException too (a `CancelledError` from an exporter's future, a `gevent.Timeout`), is the
# hook's own: a hook is called synchronously, so a cancellation of the caller's task cannot
# land inside it, and a result the tool already produced must still reach its caller.
_PASSED_ON = (KeyboardInterrupt, SystemExit)


def _default_otel() -> tuple[TracerLike | None, MeterLike | None]:
    try:
        from opentelemetry import metrics, trace
    except ImportError:  # pragma: no cover - exercised only without opentelemetry-api
        return None, None
    tracer: TracerLike = trace.get_tracer("toolwire.execution")
    meter: MeterLike = metrics.get_meter("toolwire.execution")
    return tracer, meter


class _ContainedSpan:
    """A span whose methods never raise: a failure goes to the observer's ``hook_failed``."""

    def __init__(self, span: SpanLike, observer: Observer) -> None:
        self._span = span
        self._observer = observer

    def set_attribute(self, key: str, value: AttrValue) -> None:
        try:
            self._span.set_attribute(key, value)
        except _PASSED_ON:
            raise
        except BaseException as exc:
            self._observer.hook_failed("span", exc)

    def add_event(self, name: str, attributes: Mapping[str, AttrValue] | None = None) -> None:
        try:
            self._span.add_event(name, attributes)
        except _PASSED_ON:
            raise
        except BaseException as exc:
            self._observer.hook_failed("span", exc)

    def end(self) -> None:
        try:
            self._span.end()
        except _PASSED_ON:
            raise
        except BaseException as exc:
            self._observer.hook_failed("span", exc)


class Observer:
    """Emits the per-call record to logging, tracing and metrics.

    No method raises because a hook did (see the module notes): a failing tracer, span, meter
    instrument or logging filter or handler is counted under ``observer_errors`` and reported
    once per hook, and the call's result is unaffected. Construction does not raise either: an
    instrument the meter fails to create is skipped, its failure counted the same way. A
    subclass that overrides a method must keep that promise (call the base method, or catch
    and pass to ``hook_failed``).

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
        self._lock = threading.Lock()
        self._reported: set[Hook] = set()
        #: In-process tallies of the same counters, keyed by counter name (and state for calls).
        self.counts: _Tally[str] = _Tally()
        if otel and meter is not None:
            self._create_instruments(meter)

    def _create_instruments(self, meter: MeterLike) -> None:
        """Create the meter's instruments; one whose creation raises is left out (its counts
        stay in ``counts``) and the failure contained like any hook's, since a misconfigured
        exporter must not keep the executor from being built."""
        # ``observer_errors`` first, so that the failures of the others reach the meter too.
        names = sorted(_COUNTERS, key=lambda name: name != "observer_errors")
        for name in names:
            description = _COUNTERS[name]
            try:
                self._counters[name] = meter.create_counter(
                    f"toolwire.execution.{name}", unit="1", description=description
                )
            except _PASSED_ON:
                raise
            except BaseException as exc:
                self.hook_failed("meter", exc)
        try:
            self._duration = meter.create_histogram(
                "toolwire.execution.duration", unit="s", description="tool call wall time"
            )
        except _PASSED_ON:
            raise
        except BaseException as exc:
            self.hook_failed("meter", exc)

    def hook_failed(self, hook: Hook, exc: BaseException) -> None:
        """Contain a telemetry hook that raised: count it, and report its first failure.

        Args:
            hook: Which hook raised.
            exc: What it raised.
        """
        with self._lock:
            self.counts["observer_errors"] += 1
            first = hook not in self._reported
            self._reported.add(hook)
        counter = self._counters.get("observer_errors")
        if counter is not None:
            # The meter may be what failed: its failure to count this one is not reported again.
            try:
                counter.add(1, {"hook": hook})
            except _PASSED_ON:
                raise
            except BaseException:
                pass
        if not first:
            return
        message = (
            "toolwire: the observability %s raised %s; tool calls are not affected. Later "
            "failures of the %s are only counted (observer_errors)"
        )
        try:
            _report_log.warning(message, hook, type(exc).__name__, hook, exc_info=exc)
        except _PASSED_ON:
            raise
        except BaseException:
            # A logging filter or handler that raises: say it where logging is not involved.
            try:
                warnings.warn(
                    message % (hook, f"{type(exc).__name__}: {exc}", hook),
                    RuntimeWarning,
                    stacklevel=2,
                )
            except _PASSED_ON:
                raise
            except BaseException:  # e.g. warnings turned into errors
                pass

    def count(self, name: str, amount: int = 1, **attributes: AttrValue) -> None:
        """Add to counter ``name`` (see ``_COUNTERS``), in-process and in OpenTelemetry."""
        if amount <= 0:
            return
        with self._lock:
            self.counts[name] += amount
        counter = self._counters.get(name)
        if counter is not None:
            try:
                counter.add(amount, attributes)
            except _PASSED_ON:
                raise
            except BaseException as exc:
                self.hook_failed("meter", exc)

    def start_span(self, tool: str, call_id: str | None) -> SpanLike:
        """Start the span of one call (a no-op object without a tracer, or if it raised).

        The span returned never raises: its failures are contained like the tracer's.
        """
        if self._tracer is None:
            return _NO_SPAN
        attributes: dict[str, AttrValue] = {"toolwire.tool": tool}
        if call_id is not None:
            attributes["toolwire.call_id"] = call_id
        try:
            span = self._tracer.start_span(f"toolwire.execute {tool}", attributes=attributes)
        except _PASSED_ON:
            raise
        except BaseException as exc:
            self.hook_failed("tracer", exc)
            return _NO_SPAN
        return self._contained(span)

    def _contained(self, span: SpanLike) -> SpanLike:
        return span if isinstance(span, (_NoSpan, _ContainedSpan)) else _ContainedSpan(span, self)

    def log(self, logger: logging.Logger, level: int, msg: str, *args: object) -> None:
        """``logger.log(level, msg, *args)``, with a filter or handler that raises contained.

        Args:
            logger: Where to log (the executor's diagnostics use ``toolwire.execution``).
            level: Logging level.
            msg: Format string.
            *args: Its arguments.
        """
        try:
            logger.log(level, msg, *args, stacklevel=2)  # the caller's line, not this one
        except _PASSED_ON:
            raise
        except BaseException as exc:
            self.hook_failed("logger", exc)

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
            try:
                self._duration.record(record["total_time"], {"tool": tool, "state": state})
            except _PASSED_ON:
                raise
            except BaseException as exc:
                self.hook_failed("meter", exc)
        # Also a span the caller started itself: it must not keep the log line from being written.
        span = self._contained(span)
        for key, value in record.items():
            if value is not None and isinstance(value, (str, bool, int, float)):
                span.set_attribute(f"toolwire.{key}", value)
        span.end()
        level = logging.INFO if state in ("ok", "duplicate_suppressed") else logging.WARNING
        if self.logger.isEnabledFor(level):
            payload: dict[str, Any] = dict(record)
            try:
                self.logger.log(
                    level,
                    "tool call %s (%s): %s after %d attempt(s)",
                    record["call_id"],
                    tool,
                    state,
                    record["attempts"],
                    extra={"toolwire": payload},
                )
            except _PASSED_ON:
                raise
            except BaseException as exc:
                self.hook_failed("logger", exc)
