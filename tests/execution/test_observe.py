"""One structured record per call: logging, spans and counters, with no global state."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import pytest
from pydantic import BaseModel, SecretBytes, SecretStr

from toolwire.execution import (
    BusinessRuleError,
    Call,
    Executor,
    FakeClock,
    MemoryLedger,
    Observer,
    RequestContext,
    ToolSpec,
    fingerprint,
)

RECORD_KEYS = {
    "tool",
    "call_id",
    "request_id",
    "session_id",
    "args_hash",
    "idempotency_key",
    "state",
    "error_type",
    "attempts",
    "coercions",
    "parse_time",
    "validation_time",
    "execution_time",
    "total_time",
    "duplicate_execution",
    "unrecorded",
}


class FakeSpan:
    def __init__(self, name: str, attributes: Mapping[str, Any] | None) -> None:
        self.name = name
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.ended = False

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def add_event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        self.events.append((name, dict(attributes or {})))

    def end(self) -> None:
        self.ended = True


class FakeTracer:
    def __init__(self) -> None:
        self.spans: list[FakeSpan] = []

    def start_span(self, name: str, *, attributes: Mapping[str, Any] | None = None) -> FakeSpan:
        span = FakeSpan(name, attributes)
        self.spans.append(span)
        return span


class FakeInstrument:
    def __init__(self) -> None:
        self.points: list[tuple[float, dict[str, Any]]] = []

    def add(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        self.points.append((amount, dict(attributes or {})))

    def record(self, amount: float, attributes: Mapping[str, Any] | None = None) -> None:
        self.points.append((amount, dict(attributes or {})))

    @property
    def total(self) -> float:
        return sum(amount for amount, _ in self.points)


class FakeMeter:
    def __init__(self) -> None:
        self.instruments: dict[str, FakeInstrument] = {}

    def create_counter(self, name: str, unit: str = "", description: str = "") -> FakeInstrument:
        return self.instruments.setdefault(name, FakeInstrument())

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> FakeInstrument:
        return self.instruments.setdefault(name, FakeInstrument())


@pytest.fixture
def otel() -> tuple[FakeTracer, FakeMeter]:
    return FakeTracer(), FakeMeter()


def observed(otel: tuple[FakeTracer, FakeMeter], clock: FakeClock) -> Executor:
    tracer, meter = otel
    ex = Executor(
        clock=clock,
        ledger=MemoryLedger(clock=clock),
        observer=Observer(tracer=tracer, meter=meter),
        breaker=False,
    )
    attempts = {"n": 0}

    def flaky(args: Any) -> str:
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise ConnectionRefusedError
        return "done"

    ex.register("write", flaky, side_effects=True)
    ex.register("read", lambda args: "r")
    return ex


def test_one_structured_log_record_per_call(
    otel: tuple[FakeTracer, FakeMeter], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    ex = observed(otel, clock)
    ctx = RequestContext("req-1", "sess-1")
    with caplog.at_level(logging.INFO, logger="toolwire.execution"):
        ex.execute(
            Call("write", "c1", {"a": 1}), ctx, parse_time=0.0001, validation_time=0.0002,
            coercions=1,
        )  # fmt: skip
        ex.execute(Call("write", "c1", {"a": 1}), ctx)
        ex.execute(Call("read", "c2", {}), ctx)
    records = [r for r in caplog.records if r.name == "toolwire.execution"]
    assert len(records) == 3
    first: dict[str, Any] = records[0].__dict__["toolwire"]
    assert set(first) == RECORD_KEYS
    json.dumps(first)  # JSON-friendly as is
    assert first["tool"] == "write" and first["call_id"] == "c1"
    assert first["request_id"] == "req-1" and first["session_id"] == "sess-1"
    assert first["state"] == "ok" and first["attempts"] == 2 and first["coercions"] == 1
    assert first["parse_time"] == 0.0001 and first["validation_time"] == 0.0002
    assert first["args_hash"] is not None and len(first["args_hash"]) == 64
    assert first["idempotency_key"] is not None
    second: dict[str, Any] = records[1].__dict__["toolwire"]
    assert second["state"] == "duplicate_suppressed" and second["attempts"] == 0
    assert second["args_hash"] == first["args_hash"]
    assert records[2].__dict__["toolwire"]["idempotency_key"] is None  # reads have no key


class _UnreadableCall:
    """A caller's look-alike call whose arguments raise when read: the call ends in
    internal_error rather than settling."""

    def __init__(self, tool: str) -> None:
        self.tool, self.call_id, self.ok, self.kind, self.errors = tool, "c1", True, "ok", ()

    @property
    def model(self) -> Any:
        raise RuntimeError("arguments unavailable")


def test_the_internal_error_line_cuts_a_made_up_tool_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The line for a call that raised instead of settling printed the tool name the call
    # asked for as it came: a made-up name of 10,000 characters went whole into the log.
    name = "x" * 10_000
    ex = Executor()
    with caplog.at_level(logging.ERROR, logger="toolwire.execution"):
        (sync,) = ex.execute_all([_UnreadableCall(name)])
        (in_async,) = asyncio.run(ex.aexecute_all([_UnreadableCall(name)]))
    for result in (sync, in_async):
        assert result.error is not None and result.error["type"] == "internal_error"
    lines = [r.getMessage() for r in caplog.records if "raised RuntimeError" in r.getMessage()]
    assert len(lines) == 2
    for line in lines:
        assert "x" * 199 in line and "x" * 200 not in line and len(line) < 400


def test_a_call_that_raises_instead_of_settling_is_an_internal_error_one_by_one_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # `execute_all` answered such a call as `internal_error`, but `execute` and `aexecute`,
    # whose failures are data too, let the exception out to the caller.
    ex = Executor()
    with caplog.at_level(logging.ERROR, logger="toolwire.execution"):
        sync = ex.execute(_UnreadableCall("read"))
        in_async = asyncio.run(ex.aexecute(_UnreadableCall("read")))
    for result in (sync, in_async):
        assert result.state == "downstream_failed"
        assert result.error is not None and result.error["type"] == "internal_error"
    lines = [r.getMessage() for r in caplog.records if "raised RuntimeError" in r.getMessage()]
    assert len(lines) == 2


def test_tool_names_the_model_made_up_stay_out_of_metric_labels_and_span_names(
    otel: tuple[FakeTracer, FakeMeter], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Each name a model made up became a label value of every counter and the histogram, and
    # a span name, at any length: one more time series per hallucinated name, without bound.
    tracer, meter = otel
    ex = observed(otel, clock)
    made_up = [f"get_weather_{i}" for i in range(20)] + ["x" * 10_000]
    calls = [Call(name, f"c{i}", {}) for i, name in enumerate(made_up)]
    refused = Call("lookup_" * 50, "r1", None, ok=False, kind="model_error")
    with caplog.at_level(logging.INFO, logger="toolwire.execution"):
        results = ex.execute_all([*calls, refused, Call("read", "ok1", {})])
    # The calls are answered as before, each with the name it asked for.
    assert [r.tool for r in results] == [*made_up, "lookup_" * 50, "read"]
    assert [r.state for r in results][-3:] == ["tool_unavailable", "validation_failed", "ok"]
    labels = {
        point[1]["tool"]
        for instrument in meter.instruments.values()
        for point in instrument.points
        if "tool" in point[1]
    }
    assert labels == {"(unregistered)", "read"}
    assert {span.name for span in tracer.spans} == {
        "toolwire.execute (unregistered)",
        "toolwire.execute read",
    }
    # The log record still names what the model asked for, cut.
    logged = [r.__dict__["toolwire"] for r in caplog.records if hasattr(r, "toolwire")]
    asked = [record.get("requested_tool") for record in logged if record["call_id"] == "c20"]
    assert asked == ["x" * 199 + "…"]
    assert all(len(record.get("requested_tool", "")) <= 200 for record in logged)
    assert [record["tool"] for record in logged if record["call_id"] == "ok1"] == ["read"]


def test_failures_log_at_warning(clock: FakeClock, caplog: pytest.LogCaptureFixture) -> None:
    ex = Executor({"t": lambda args: 1}, clock=clock, observer=Observer(otel=False))
    with caplog.at_level(logging.INFO, logger="toolwire.execution"):
        ex.execute(Call("t", "ok", {}))
        ex.execute(Call("missing", "bad", {}))
    levels = {r.__dict__["toolwire"]["state"]: r.levelno for r in caplog.records}
    assert levels == {"ok": logging.INFO, "tool_unavailable": logging.WARNING}


def test_spans_and_counters(otel: tuple[FakeTracer, FakeMeter], clock: FakeClock) -> None:
    tracer, meter = otel
    ex = observed(otel, clock)
    ctx = RequestContext("r", "s")
    ex.execute(Call("write", "c1", {}), ctx)
    ex.execute(Call("write", "c1", {}), ctx)
    parse_failure = Call("read", "c3", None, raw_arguments='{"a"', ok=False, kind="model_error",
                         errors=[{"type": "json_invalid"}])  # fmt: skip
    ex.execute(parse_failure, ctx)
    assert len(tracer.spans) == 3 and all(s.ended for s in tracer.spans)
    span = tracer.spans[0]
    assert span.name == "toolwire.execute write"
    assert span.attributes["toolwire.state"] == "ok" and span.attributes["toolwire.attempts"] == 2
    assert [name for name, _ in span.events] == ["attempt_failed", "retry"]
    counters = meter.instruments
    assert counters["toolwire.execution.calls"].total == 3
    assert counters["toolwire.execution.attempts"].total == 2
    assert counters["toolwire.execution.retries"].total == 1
    assert counters["toolwire.execution.parse_failures"].total == 1
    assert counters["toolwire.execution.duplicates_suppressed"].total == 1
    assert counters["toolwire.execution.duplicate_executions"].total == 0
    assert len(counters["toolwire.execution.duration"].points) == 3
    states = [attrs["state"] for _, attrs in counters["toolwire.execution.calls"].points]
    assert states == ["ok", "duplicate_suppressed", "parse_failed"]


def test_no_state_is_shared_between_executors(clock: FakeClock) -> None:
    a = Executor({"t": lambda args: 1}, clock=clock)
    b = Executor({"t": lambda args: 1}, clock=clock)
    a.execute(Call("t", "c", {}))
    assert a.observer.counts["calls.ok"] == 1 and b.observer.counts["calls.ok"] == 0
    assert a.observer is not b.observer and a.retry_budget is not b.retry_budget


def test_real_opentelemetry_api_without_sdk_is_a_no_op(clock: FakeClock) -> None:
    pytest.importorskip("opentelemetry")
    ex = Executor({"t": lambda args: 1}, clock=clock, observer=Observer())
    assert ex.execute(Call("t", "c", {})).state == "ok"
    assert ex.observer.counts["calls"] == 1


def test_refused_outcomes_do_not_share_the_hash_of_empty_arguments() -> None:
    import hashlib

    from pydantic import BaseModel

    from toolwire import Assembler, Toolset

    class Lookup(BaseModel):
        order_id: int

    tools = Toolset([Lookup])
    asm = Assembler()
    asm.feed(0, id="a", name="lookup", arguments='{"order_id": "x"}')
    asm.feed(1, id="b", name="lookup", arguments='{"order_id": [1]}')
    ex = Executor({"lookup": lambda args: 1}, observer=Observer(otel=False))
    results = [ex.execute(tools.validate(call)) for call in asm.finish()]
    assert [r.state for r in results] == ["validation_failed", "validation_failed"]
    empty = hashlib.sha256(b"").hexdigest()
    assert all(r.args_hash != empty for r in results)


@pytest.mark.parametrize("workers", [None, 2])
def test_execute_all_records_a_call_that_raised_instead_of_settling(
    otel: tuple[FakeTracer, FakeMeter],
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    workers: int | None,
) -> None:
    tracer, _ = otel
    ex = observed(otel, clock)

    async def async_read(args: Any) -> str:  # execute_all is synchronous: this call cannot run
        return "never"

    ex.register("async_read", async_read)
    calls = [Call("read", "c1", {}), Call("async_read", "c2", {}), Call("read", "c3", {})]
    with caplog.at_level(logging.INFO, logger="toolwire.execution"):
        results = ex.execute_all(calls, RequestContext("req-1", "s"), max_workers=workers)
    assert [r.state for r in results] == ["ok", "downstream_failed", "ok"]
    logged = [r.__dict__["toolwire"] for r in caplog.records if hasattr(r, "toolwire")]
    assert sorted(record["call_id"] for record in logged) == ["c1", "c2", "c3"]
    (raised,) = [record for record in logged if record["call_id"] == "c2"]
    assert set(raised) == RECORD_KEYS and raised["request_id"] == "req-1"
    assert raised["state"] == "downstream_failed" and raised["error_type"] == "internal_error"
    assert ex.observer.counts["calls"] == 3
    assert len(tracer.spans) == 3 and all(span.ended for span in tracer.spans)


CARD = "4111111111111111"


def _hide_card(path: str, text: str) -> str:
    return "[card]" if path == "/card" else text.replace("sk-live-123", "[key]")


def test_exception_text_is_logged_through_the_redaction_hook(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The same hook as Toolset(redact=...): what it hides from the model must not reach the logs
    # because a tool put the argument (or a credential) into its exception text.
    def charge(args: Any) -> None:
        raise RuntimeError(f"gateway declined card {args['card']} (api key sk-live-123)")

    def refuse(args: Any) -> None:
        raise BusinessRuleError(f"card {args['card']} is blocked")

    ex = Executor(clock=FakeClock(), breaker=False, redact=_hide_card)
    ex.register("charge", charge)
    ex.register("refuse", refuse)
    ctx = RequestContext("r", "s")
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        failed = ex.execute(Call("charge", "c1", {"card": CARD, "cents": 5}), ctx)
        refused = ex.execute(Call("refuse", "c2", {"card": CARD}), ctx)
    assert failed.state == "downstream_failed" and refused.state == "downstream_failed"
    logged = caplog.text + json.dumps([r.__dict__.get("toolwire") for r in caplog.records])
    assert "gateway declined card [card] (api key [key])" in caplog.text
    assert CARD not in logged and "sk-live-123" not in logged
    # Text a tool wrote for the model goes through the same redaction.
    assert refused.error is not None and CARD not in refused.content()
    assert refused.error["reasons"] == ["card [card] is blocked"]


def _hide_card_only(path: str, text: str) -> str:
    # A hook that forgets to hand back the text it does not hide: it returns None for it.
    if path == "/card":
        return "[card]"
    return None  # type: ignore[return-value]


@pytest.mark.parametrize(
    "hook", [_hide_card_only, lambda path, text: text.encode() if path == "" else "[hidden]"]
)
def test_a_hook_that_returns_no_text_withholds_the_text_and_the_call_ends(
    hook: Callable[[str, str], str], caplog: pytest.LogCaptureFixture
) -> None:
    # Its None reached the cut of the exception's text: `execute` raised TypeError instead of
    # returning the tool's failure, and a write's claim was left in progress.
    def charge(args: Any) -> None:
        raise RuntimeError(f"gateway declined card {args['card']}")

    def refuse(args: Any) -> None:
        raise BusinessRuleError(f"card {args['card']} is blocked")

    ex = Executor(clock=FakeClock(), breaker=False, redact=hook, ledger=MemoryLedger())
    ex.register("charge", charge, side_effects=True)
    ex.register("refuse", refuse)
    ctx = RequestContext("r", "s")
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        failed = ex.execute(Call("charge", "c1", {"card": CARD}), ctx)
        refused = ex.execute(Call("refuse", "c2", {"card": CARD}), ctx)
    assert failed.state == "unknown_outcome" and refused.state == "downstream_failed"
    assert refused.error is not None and refused.error["message"] == "[redaction failed]"
    assert CARD not in caplog.text + failed.content() + refused.content()
    assert "[redaction failed]" in caplog.text
    # The write's outcome was recorded: the same call is answered from the ledger.
    assert ex.execute(Call("charge", "c1", {"card": CARD}), ctx).state == "unknown_outcome"


def test_a_number_the_hook_hides_is_hidden_too(caplog: pytest.LogCaptureFixture) -> None:
    # The hook saw only string arguments: an SSN or an account number typed as an int reached
    # the model and the logs, where `Toolset(redact=...)` hides it.
    class Verify(BaseModel):
        name: str
        ssn: int
        rate: float
        active: bool

    def hide(path: str, text: str) -> str:
        return "[hidden]" if path in ("/ssn", "/rate", "/name") else text

    def verify(args: Verify) -> None:
        raise BusinessRuleError(f"no customer {args.name} with SSN {args.ssn} at {args.rate}")

    ex = Executor(clock=FakeClock(), breaker=False, redact=hide)
    ex.register("verify", verify)
    args = Verify(name="Jane Roe", ssn=123456789, rate=0.0425, active=True)
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        result = ex.execute(Call("verify", "c1", args), RequestContext("r", "s"))
    assert result.error is not None
    assert result.error["reasons"] == ["no customer [hidden] with SSN [hidden] at [hidden]"]
    for shown in ("123456789", "0.0425", "Jane Roe"):
        assert shown not in result.content() + caplog.text, shown


def _hide_email(path: str, text: str) -> str:
    return "[email]" if path == "/email" else text


def test_a_value_the_hook_hides_is_hidden_quoted_too(caplog: pytest.LogCaptureFixture) -> None:
    # A tool quoting the value as `repr`, JSON or a URL writes it: only the plain text was
    # replaced, and the escaped forms reached the model and the logs.
    email = 'jörg+"test"@example.com'

    def refuse(args: Any) -> None:
        raise BusinessRuleError(f"no account for {args['email']!r}", json.dumps(args))

    def lookup(args: Any) -> None:
        raise ConnectionError(f"GET /v1/users?email={quote(args['email'], safe='')} failed")

    ex = Executor(clock=FakeClock(), breaker=False, redact=_hide_email)
    ex.register("refuse", refuse)
    ex.register("lookup", lookup)
    ctx = RequestContext("r", "s")
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        refused = ex.execute(Call("refuse", "c1", {"email": email}), ctx)
        failed = ex.execute(Call("lookup", "c2", {"email": email}), ctx)
    shown = refused.content() + failed.content() + caplog.text
    for form in (repr(email)[1:-1], json.dumps(email)[1:-1], quote(email, safe="")):
        assert form not in shown, form
    assert "[email]" in refused.content()


@pytest.mark.parametrize(
    "raw", [b"utf8-signing-key-123", b"\x8f\x01signing-key", bytes(range(200, 216))]
)
def test_a_binary_secret_is_hidden_as_a_tool_quotes_it(
    raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    # Bytes that are not UTF-8 (a binary key) were looked for as their UTF-8 reading with
    # replacement characters, which no exception text holds: quoted as `repr` or hex, they
    # reached the model and the logs.
    class Signed(BaseModel):
        key: SecretBytes

    def sign(args: Signed) -> None:
        key = args.key.get_secret_value()
        raise BusinessRuleError(f"key {key!r} ({key.hex()}) is not authorised")

    ex = Executor(clock=FakeClock(), breaker=False)
    ex.register("sign", sign)
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        result = ex.execute(
            Call("sign", "c1", Signed(key=SecretBytes(raw))), RequestContext("r", "s")
        )
    shown = result.content() + caplog.text
    assert repr(raw)[2:-1] not in shown and raw.hex() not in shown
    assert result.error is not None and "[redacted]" in result.error["message"]


def test_secret_arguments_are_kept_out_of_logged_exception_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Login(BaseModel):
        user: str
        password: SecretStr

    def login(args: Login) -> None:
        raise ConnectionError(f"auth failed for {args.user}:{args.password.get_secret_value()}")

    ex = Executor(clock=FakeClock(), breaker=False)
    ex.register("login", login)
    args = Login(user="ann", password=SecretStr("hunter2"))
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        result = ex.execute(Call("login", "c1", args), RequestContext("r", "s"))
    assert result.state == "downstream_failed"
    assert "auth failed for ann:[redacted]" in caplog.text and "hunter2" not in caplog.text


def test_a_secret_across_the_cut_of_a_logged_exception_is_not_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Login(BaseModel):
        password: SecretStr

    def login(args: Login) -> None:
        # The 500-character cut falls inside the secret: scrubbing after it would miss it.
        raise ConnectionError("x" * 494 + f" {args.password.get_secret_value()} refused")

    ex = Executor(clock=FakeClock(), breaker=False)
    ex.register("login", login)
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        ex.execute(Call("login", "c1", Login(password=SecretStr("hunter2-9"))), RequestContext("r"))
    logged = [r.getMessage() for r in caplog.records if "failed: ConnectionError" in r.getMessage()]
    # Cut (so the cut was exercised), and no part of the secret before it.
    assert logged and all(m.endswith("…") and "hunt" not in m for m in logged)


# ---- a telemetry hook that raises --------------------------------------------------------------


class ExporterDown(Exception):
    pass


def exporter_down(*args: Any, **kwargs: Any) -> Any:
    raise ExporterDown("collector unreachable")


class RaisingFilter(logging.Filter):
    def __init__(self, fail: Callable[..., Any] = exporter_down) -> None:
        super().__init__()
        self.fail = fail

    def filter(self, record: logging.LogRecord) -> bool:
        return self.fail()


class BrokenSpans(FakeTracer):
    """A tracer whose spans raise from one method."""

    def __init__(self, method: str, fail: Callable[..., Any]) -> None:
        super().__init__()
        self.method = method
        self.fail = fail

    def start_span(self, name: str, *, attributes: Mapping[str, Any] | None = None) -> FakeSpan:
        span = super().start_span(name, attributes=attributes)
        setattr(span, self.method, self.fail)
        return span


def observer_with_broken(hook: str, fail: Callable[..., Any] = exporter_down) -> Observer:
    """An observer whose `hook` raises on every use (through `fail`)."""
    tracer: FakeTracer = (
        BrokenSpans(hook, fail) if hook in ("set_attribute", "add_event", "end") else FakeTracer()
    )
    if hook == "start_span":
        tracer.start_span = fail  # type: ignore[method-assign]
    meter = FakeMeter()
    logger = logging.getLogger(f"toolwire.execution.test-broken-{hook}")
    logger.filters.clear()
    logger.setLevel(logging.INFO)  # every record is written: a broken filter sees each one
    logger.propagate = False
    if hook == "logger_filter":
        logger.addFilter(RaisingFilter(fail))
    observer = Observer(tracer=tracer, meter=meter, logger=logger)
    for name, instrument in meter.instruments.items():
        if hook == ("histogram" if name.endswith(".duration") else "counter"):
            instrument.add = instrument.record = fail  # type: ignore[method-assign]
    return observer


BROKEN_HOOKS = ["start_span", "set_attribute", "add_event", "end", "counter", "histogram",
                "logger_filter"]  # fmt: skip


@pytest.mark.parametrize("entry", ["execute", "execute_all", "execute_all_threads", "aexecute_all"])
@pytest.mark.parametrize("hook", BROKEN_HOOKS)
def test_a_raising_hook_changes_no_result_and_is_reported_once(
    hook: str, entry: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # An exporter that is down must not turn a write that ran (and was recorded) into an
    # exception, nor cost the other calls of a batch their results.
    runs: list[str] = []

    def charge(args: Any) -> str:
        runs.append(args["id"])
        if runs.count(args["id"]) == 1:
            raise ConnectionRefusedError  # a retry: the span gets its events
        return args["id"]

    ex = Executor(
        clock=clock, ledger=MemoryLedger(clock=clock), observer=observer_with_broken(hook)
    )
    ex.register("charge", charge, side_effects=True)
    ex.register("read", lambda args: "r")
    calls = [
        Call("charge", "c1", {"id": "A"}),
        Call("read", "c2", {}),
        Call("charge", "c3", {"id": "B"}),
    ]
    ctx = RequestContext("r", "s")
    with caplog.at_level(logging.WARNING, logger="toolwire.execution.observe"):
        for _ in range(2):  # the second round replays the writes
            if entry == "execute":
                results = [ex.execute(call, ctx) for call in calls]
            elif entry == "aexecute_all":
                results = asyncio.run(ex.aexecute_all(calls, ctx))
            else:
                workers = 3 if entry == "execute_all_threads" else None
                results = ex.execute_all(calls, ctx, max_workers=workers)
            assert [r.value for r in results] == ["A", "r", "B"]
    assert sorted(runs) == ["A", "A", "B", "B"]  # each write ran once, after a refused attempt
    assert ex.observer.counts["calls"] == 6 and ex.observer.counts["observer_errors"] >= 2
    reports = [r for r in caplog.records if r.name == "toolwire.execution.observe"]
    assert len(reports) == 1 and reports[0].levelno == logging.WARNING
    assert reports[0].exc_info is not None and reports[0].exc_info[0] is ExporterDown


class _PartlyBrokenMeter(FakeMeter):
    """A meter whose exporter is misconfigured for some instruments."""

    def __init__(self, broken: str) -> None:
        super().__init__()
        self.broken = broken

    def create_counter(self, name: str, unit: str = "", description: str = "") -> FakeInstrument:
        if self.broken in ("all", "counters") or (
            self.broken == "one counter" and name.endswith(".calls")
        ):
            raise ExporterDown("exporter misconfigured")
        return super().create_counter(name, unit, description)

    def create_histogram(self, name: str, unit: str = "", description: str = "") -> FakeInstrument:
        if self.broken in ("all", "histogram"):
            raise ExporterDown("exporter misconfigured")
        return super().create_histogram(name, unit, description)


@pytest.mark.parametrize("broken", ["all", "counters", "histogram", "one counter"])
def test_a_meter_that_cannot_create_instruments_does_not_stop_the_executor(
    broken: str, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # Observer(meter=...) raised what the meter raised, so the executor could not be built.
    meter = _PartlyBrokenMeter(broken)
    with caplog.at_level(logging.WARNING, logger="toolwire.execution.observe"):
        observer = Observer(meter=meter, tracer=FakeTracer())
        ex = Executor({"read": lambda args: "r"}, clock=clock, observer=observer)
        results = [ex.execute(Call("read", f"c{i}", {})) for i in range(2)]
    assert [r.value for r in results] == ["r", "r"]
    whole = FakeMeter()
    Observer(meter=whole, tracer=FakeTracer())
    counters = len(whole.instruments) - 1  # and the duration histogram
    failures = {"all": counters + 1, "counters": counters}
    assert observer.counts["observer_errors"] == failures.get(broken, 1)
    assert observer.counts["calls"] == 2  # in-process tallies are kept
    reports = [r for r in caplog.records if r.name == "toolwire.execution.observe"]
    assert len(reports) == 1 and "meter" in reports[0].getMessage()
    made = set(meter.instruments)
    if broken == "one counter":
        assert "toolwire.execution.calls" not in made
        assert meter.instruments["toolwire.execution.attempts"].total == 2
        assert meter.instruments["toolwire.execution.observer_errors"].total == 1
    if broken == "histogram":
        assert "toolwire.execution.duration" not in made and len(made) == counters


def test_a_raising_filter_on_the_execution_logger_changes_no_result(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The executor's own diagnostics (a failed call, the in-memory ledger notice) go to the
    # same logger as the records: its broken filter must not break a failed call's result.
    def charge(args: Any) -> None:
        raise ValueError("odd answer")

    ex = Executor({"charge": ToolSpec(charge, side_effects=True)}, clock=clock,
                  observer=Observer(otel=False))  # fmt: skip
    execution = logging.getLogger("toolwire.execution")
    broken = RaisingFilter()
    execution.addFilter(broken)
    try:
        with caplog.at_level(logging.WARNING, logger="toolwire.execution.observe"):
            results = [ex.execute(Call("charge", f"c{i}", {})) for i in range(3)]
    finally:
        execution.removeFilter(broken)
    assert [r.state for r in results] == ["unknown_outcome"] * 3
    assert ex.observer.counts["calls.unknown_outcome"] == 3
    reports = [r for r in caplog.records if r.name == "toolwire.execution.observe"]
    assert len(reports) == 1 and "logger" in reports[0].getMessage()


def test_when_logging_itself_fails_the_report_is_a_warning(clock: FakeClock) -> None:
    # A handler whose filter raises fails the report too: it is issued as a warning instead.
    execution = logging.getLogger("toolwire.execution")
    handler = logging.StreamHandler(io.StringIO())
    handler.addFilter(RaisingFilter())
    execution.addHandler(handler)

    def read(args: Any) -> None:
        raise ValueError("odd answer")  # logged at warning level, so through the handler

    ex = Executor({"read": read}, clock=clock, observer=Observer(otel=False))
    try:
        with pytest.warns(RuntimeWarning, match="logger raised ExporterDown"):
            results = [ex.execute(Call("read", f"c{i}", {})) for i in range(3)]
    finally:
        execution.removeHandler(handler)
    assert [r.state for r in results] == ["downstream_failed"] * 3
    assert ex.observer.counts["observer_errors"] >= 3


class _VerifyCard(BaseModel):
    card_last4: str
    cvv: SecretStr


_PLAIN_CARD = {
    "type": "function",
    "function": {
        "name": "verify_plain",
        "parameters": {
            "type": "object",
            "properties": {
                "card_last4": {"type": "string"},
                "cvv": {"type": "string", "x-secret": True},
            },
            "required": ["card_last4", "cvv"],
            "additionalProperties": False,
        },
    },
}


def test_the_args_hash_shown_does_not_depend_on_secret_values(
    otel: tuple[FakeTracer, FakeMeter], clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # An unsalted digest over the arguments gave a CVV back to whoever read a log record or a
    # span and tried its thousand values with the other arguments.
    from toolwire import Assembler, Toolset

    tracer, meter = otel
    tools = Toolset([_VerifyCard, _PLAIN_CARD])
    asm = Assembler(tools=tools)
    names = [(name, cvv) for cvv in ("731", "732") for name in ("verify_card", "verify_plain")]
    for index, (name, cvv) in enumerate(names):
        asm.feed(index, name=name, arguments=json.dumps({"card_last4": "4242", "cvv": cvv}))
    outcomes = [tools.validate(call) for call in asm.finish()]
    assert all(o.ok for o in outcomes)
    ran: list[str] = []
    ex = Executor(
        clock=clock,
        ledger=MemoryLedger(clock=clock),
        observer=Observer(tracer=tracer, meter=meter),
        breaker=False,
    )
    for name in ("verify_card", "verify_plain"):
        ex.register(name, lambda args, name=name: ran.append(name), side_effects=True)
    with caplog.at_level(logging.INFO, logger="toolwire.execution"):
        results = [ex.execute(o, RequestContext("r", "s")) for o in outcomes]
    # Writes without call ids that differ only in the secret are still two operations.
    assert [r.state for r in results] == ["ok"] * 4 and len(ran) == 4
    records = [r.__dict__["toolwire"] for r in caplog.records if "toolwire" in r.__dict__]
    shown = [record["args_hash"] for record in records]
    shown += [span.attributes["toolwire.args_hash"] for span in tracer.spans]
    shown += [result.args_hash for result in results]
    assert len(shown) == 12 and len(set(shown)) == 1
    assert not {fingerprint({"card_last4": "4242", "cvv": cvv}) for cvv in ("731", "732")} & set(
        shown
    )


class _HookTimeout(BaseException):
    """What a green-thread timeout (``gevent.Timeout``) is: no ``Exception``."""


@pytest.mark.parametrize("raised", [asyncio.CancelledError, _HookTimeout])
@pytest.mark.parametrize("hook", ["start_span", "end", "counter", "histogram", "logger_filter"])
def test_a_hook_raising_a_base_exception_changes_no_result(
    hook: str, raised: type[BaseException], clock: FakeClock
) -> None:
    # A span whose end() raised CancelledError (an exporter's cancelled future) escaped
    # `execute` after the write had run and was recorded: its caller got no result.
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise raised

    sent: list[Any] = []
    ex = Executor(
        clock=clock, ledger=MemoryLedger(clock=clock), observer=observer_with_broken(hook, fail)
    )
    ex.register("send", lambda args: sent.append(args) or "sent", side_effects=True)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("send", "c1", {"to": "x"}), ctx)
    second = asyncio.run(ex.aexecute(Call("send", "c2", {"to": "y"}), ctx))
    assert first.value == second.value == "sent" and len(sent) == 2
    assert ex.observer.counts["observer_errors"] >= 2


def test_a_hook_raising_an_interrupt_still_stops_the_call(clock: FakeClock) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    ex = Executor(clock=clock, observer=observer_with_broken("end", fail))
    ex.register("read", lambda args: "r")
    with pytest.raises(KeyboardInterrupt):
        ex.execute(Call("read", "c1", {}))


TOKEN = "tok-9f8e7d6c5b4a"


@pytest.mark.parametrize("shown", range(1, len(TOKEN)))
def test_a_secret_the_cut_of_an_error_splits_never_shows(
    caplog: pytest.LogCaptureFixture, shown: int
) -> None:
    # The error text is now cut before it is scrubbed: a hidden value that the cut splits no
    # longer matches whole, and its start, however short, must not reach the log.
    def hide(path: str, value: str) -> str:
        return "[hidden]" if path == "/token" else value

    def fail(args: dict[str, str]) -> None:
        raise ValueError("y" * (499 - len("ValueError: ") - shown) + args["token"] + "z" * 600)

    ex = Executor(redact=hide)
    ex.register("fail", fail)
    with caplog.at_level(logging.WARNING, logger="toolwire.execution"):
        result = ex.execute(Call("fail", "c1", {"token": TOKEN}))
    assert result.state == "downstream_failed"
    (line,) = [r.getMessage() for r in caplog.records if "failed: ValueError" in r.getMessage()]
    shown_part = line.split("y" * 20)[-1].lstrip("y")
    assert "t" not in shown_part.replace("[redacted]", "") and "tok" not in line


def test_scrubbing_a_huge_error_reads_a_bounded_part_of_it() -> None:
    # Every hidden argument was searched for through the whole error text, and the hook then
    # read all of it: 5,000 hidden strings against a 1 MB error took 12 s of CPU. The text is
    # cut to what is shown first, so the hook never sees more than that, whatever its size.
    seen: list[int] = []

    def hide(path: str, value: str) -> str:
        if path == "":
            seen.append(len(value))
        return "[hidden]" if path.startswith("/items") else value

    def fail(args: dict[str, list[str]]) -> None:
        raise ValueError("x" * 1_000_000)

    ex = Executor(redact=hide)
    ex.register("fail", fail)
    result = ex.execute(Call("fail", "c1", {"items": [f"item-{i:05d}" for i in range(5000)]}))
    assert result.state == "downstream_failed"
    assert seen and max(seen) <= 500
