"""Scenario 18: classification, retries, Retry-After, cancellation, deadlines, budgets."""

from __future__ import annotations

import asyncio
import builtins
import email.utils
import errno
import json
import logging
import random
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from email.message import Message
from typing import Any, cast

import httpx
import openai
import pytest
import tenacity
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from tests.conftest import python_calls
from toolwire.execution import (
    BreakerConfig,
    BusinessRuleError,
    Call,
    DeadlineExceeded,
    Executor,
    FakeClock,
    MemoryLedger,
    NeedsClarification,
    RequestContext,
    RetryBudget,
    RetryPolicy,
    SystemClock,
    classify,
)
from toolwire.execution.classify import parse_retry_after

NOW = 1_700_000_000.0
REQ = httpx.Request("POST", "http://127.0.0.1/api")


def http_status(code: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(code, headers=headers or {}, request=REQ)
    return httpx.HTTPStatusError(f"status {code}", request=REQ, response=response)


def openai_status(code: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response = httpx.Response(code, headers=headers or {}, request=REQ)
    return openai.APIStatusError(f"status {code}", response=response, body=None)


class PlainStatus(Exception):
    def __init__(self, status_code: int, retry_after: float | None = None) -> None:
        super().__init__(f"plain {status_code}")
        self.status_code = status_code
        self.retry_after = retry_after


def urllib_status(code: int) -> urllib.error.HTTPError:
    headers = Message()
    headers["Retry-After"] = "3"
    return urllib.error.HTTPError("http://127.0.0.1/", code, "x", headers, None)


# (exception factory, kind, retryable, ambiguous)
TABLE: list[tuple[Callable[[], BaseException], str, bool, bool]] = [
    (TimeoutError, "timeout", True, True),
    (lambda: asyncio.TimeoutError(), "timeout", True, True),
    (lambda: httpx.ReadTimeout("read", request=REQ), "timeout", True, True),
    (lambda: httpx.ConnectTimeout("connect", request=REQ), "timeout", True, False),
    (lambda: openai.APITimeoutError(request=REQ), "timeout", True, True),
    (ConnectionResetError, "connection_error", True, True),
    (ConnectionRefusedError, "connection_error", True, False),
    (lambda: ConnectionError("generic"), "connection_error", True, True),
    (lambda: httpx.ConnectError("refused", request=REQ), "connection_error", True, False),
    (lambda: httpx.RemoteProtocolError("reset", request=REQ), "connection_error", True, True),
    (lambda: openai.APIConnectionError(request=REQ), "connection_error", True, True),
    (lambda: http_status(429), "rate_limited", True, False),
    (lambda: openai_status(429), "rate_limited", True, False),
    (lambda: PlainStatus(429), "rate_limited", True, False),
    (lambda: http_status(502), "bad_gateway", True, True),
    (lambda: http_status(503), "service_unavailable", True, False),
    (lambda: openai_status(504), "gateway_timeout", True, True),
    (lambda: urllib_status(503), "service_unavailable", True, False),
    (lambda: http_status(400), "bad_request", False, False),
    (lambda: openai_status(422), "unprocessable", False, False),
    (lambda: PlainStatus(403), "forbidden", False, False),
    (lambda: http_status(404), "not_found", False, False),
    (lambda: http_status(500), "server_error", False, True),
    (lambda: http_status(418), "client_error", False, False),
    (lambda: BusinessRuleError("closed"), "business_rule", False, False),
    (lambda: NeedsClarification("which account?"), "needs_clarification", False, False),
    (lambda: DeadlineExceeded("late"), "deadline_exceeded", False, True),
    (lambda: ValueError("bug"), "unknown_error", False, True),
]


# requests' and urllib3's shapes, by name (the classifier imports neither): requests raises its
# own ConnectionError, an OSError that is not the builtin one, around urllib3's error; urllib3's
# MaxRetryError keeps the last error in `reason`.
class RequestException(OSError):
    pass


# Named like requests' class without shadowing the builtin in this module.
RequestsConnectionError = type("ConnectionError", (RequestException,), {})


class HTTPError(Exception):  # urllib3.exceptions.HTTPError
    pass


class ProtocolError(HTTPError):
    pass


class ConnectTimeoutError(HTTPError):
    pass


class NewConnectionError(ConnectTimeoutError):
    pass


class MaxRetryError(HTTPError):
    def __init__(self, reason: BaseException) -> None:
        super().__init__("Max retries exceeded")
        self.reason = reason


REQUESTS_TABLE: list[tuple[Callable[[], BaseException], bool]] = [
    # connection refused: nothing was sent, so a write may be retried too
    (lambda: RequestsConnectionError(MaxRetryError(NewConnectionError("refused"))), False),
    # reset after the request went out
    (
        lambda: RequestsConnectionError(
            ProtocolError("Connection aborted.", ConnectionResetError())
        ),
        True,
    ),
    (lambda: RequestsConnectionError("no wrapped error"), True),
]


@pytest.mark.parametrize(("make", "ambiguous"), REQUESTS_TABLE)
def test_requests_connection_errors_are_retried(
    make: Callable[[], BaseException], ambiguous: bool
) -> None:
    c = classify(make(), now=NOW)
    assert (c.kind, c.retryable, c.ambiguous) == ("connection_error", True, ambiguous)


def test_a_wrapped_connection_error_alone_does_not_make_a_failure_retryable() -> None:
    class ToolFailed(Exception):
        pass

    c = classify(ToolFailed(MaxRetryError(NewConnectionError("refused"))), now=NOW)
    assert (c.kind, c.retryable) == ("unknown_error", False)


@pytest.mark.parametrize(("make", "kind", "retryable", "ambiguous"), TABLE)
def test_classification_table(
    make: Callable[[], BaseException], kind: str, retryable: bool, ambiguous: bool
) -> None:
    c = classify(make(), now=NOW)
    assert (c.kind, c.retryable, c.ambiguous, c.propagate) == (kind, retryable, ambiguous, False)


@pytest.mark.parametrize("exc", [asyncio.CancelledError(), KeyboardInterrupt(), SystemExit(1)])
def test_cancellation_and_interrupts_propagate_and_never_retry(exc: BaseException) -> None:
    c = classify(exc, now=NOW)
    assert c.propagate and not c.retryable


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: http_status(429, {"Retry-After": "7"}), 7.0),
        (lambda: openai_status(429, {"retry-after-ms": "1500", "retry-after": "9"}), 1.5),
        (lambda: PlainStatus(503, retry_after=2.5), 2.5),
        (lambda: urllib_status(503), 3.0),
        (
            lambda: http_status(
                503, {"Retry-After": email.utils.formatdate(NOW + 12, usegmt=True)}
            ),
            12.0,
        ),
        (lambda: http_status(429, {"Retry-After": "soon"}), None),
    ],
)
def test_retry_after_sources(make: Callable[[], BaseException], expected: float | None) -> None:
    assert classify(make(), now=NOW).retry_after == expected


def test_parse_retry_after_never_negative() -> None:
    past = email.utils.formatdate(NOW - 100, usegmt=True)
    assert parse_retry_after(past, now=NOW) == 0.0
    assert parse_retry_after("-3", now=NOW) == 0.0
    assert parse_retry_after(None, now=NOW) is None


@pytest.mark.parametrize(
    "value",
    ["1e400", "nan", "inf", float("inf"), float("nan"), 10**400],
    ids=["text-overflow", "text-nan", "text-inf", "inf", "nan", "int-overflow"],
)
def test_parse_retry_after_rejects_non_finite(value: str | float) -> None:
    assert parse_retry_after(value, now=NOW) is None


def test_huge_retry_after_attribute_is_classified_and_payload_is_json() -> None:
    class Limited(Exception):
        status_code = 429
        retry_after = 10**400

    assert classify(Limited(), now=NOW).kind == "rate_limited"
    result = Executor({"t": _raise(Limited())}, breaker=False, clock=FakeClock()).execute(
        Call("t", "c", {})
    )
    body = json.loads(result.content(), parse_constant=_reject_constant)
    assert body["error"]["type"] == "rate_limited"


def test_a_status_whose_headers_cannot_be_read_is_still_classified_by_the_status() -> None:
    class Limited(Exception):
        status_code = 429

        @property
        def headers(self) -> dict[str, str]:
            raise RuntimeError("the response is closed")

    cls = classify(Limited("slow down"), now=NOW)
    assert (cls.kind, cls.retryable, cls.ambiguous, cls.retry_after) == (
        "rate_limited",
        True,
        False,
        None,
    )
    # A write refused that way certainly did not run: not an unknown outcome.
    clock = FakeClock()
    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("w", _raise(Limited("slow down")), side_effects=True)
    result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert result.state == "downstream_failed" and result.attempts == 3
    assert result.error is not None and result.error["type"] == "rate_limited"


@pytest.mark.parametrize("millis", ["inf", "1e400", "nan", "-inf"])
def test_non_finite_retry_after_ms_is_unreadable_and_payload_is_json(millis: str) -> None:
    # OpenAI-style millisecond header: unreadable values fall back to Retry-After, like the
    # standard header's own unreadable values, and never reach the model as `Infinity`.
    headers = {"retry-after-ms": millis, "retry-after": "4"}
    assert classify(openai_status(429, headers), now=NOW).retry_after == 4.0
    assert classify(openai_status(429, {"retry-after-ms": millis}), now=NOW).retry_after is None
    ex = Executor({"t": _raise(http_status(429, {"retry-after-ms": millis}))}, clock=FakeClock())
    result = ex.execute(Call("t", "c", {}))
    body = json.loads(result.content(), parse_constant=_reject_constant)
    assert body["error"]["type"] == "rate_limited" and "retry_after" not in body["error"]


def _raise(exc: BaseException) -> Callable[[Any], Any]:
    def tool(args: Any) -> Any:
        raise exc

    return tool


def _reject_constant(name: str) -> Any:
    raise AssertionError(f"non-standard JSON constant {name} in a model-facing payload")


# ---- executor behaviour ---------------------------------------------------------------------


class Flaky:
    """A tool that raises the given exceptions in turn, then returns ``{"ok": n}``."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self, args: Any) -> dict[str, int]:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return {"ok": self.calls}


def executor_with(fn: Callable[..., Any], clock: FakeClock, **options: Any) -> Executor:
    ex = Executor(
        clock=clock,
        ledger=MemoryLedger(clock=clock),
        retry_budget=RetryBudget(ratio=1.0, min_per_second=1000, ratio_cap=1000, clock=clock),
        breaker=False,
    )
    ex.register("t", fn, **options)
    return ex


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_attempts", 0),
        ("max_attempts", 1.5),
        ("max_attempts", True),
        ("backoff_base", -1.0),
        ("backoff_base", float("nan")),
        ("backoff_max", float("nan")),
        ("backoff_max", float("inf")),
        ("max_retry_after", float("nan")),
    ],
)
def test_a_retry_policy_out_of_range_is_refused_when_built(setting: str, value: Any) -> None:
    # Taken silently, 1.5 attempts made two and a NaN backoff slept NaN seconds.
    with pytest.raises(ValueError, match=setting):
        RetryPolicy(**{setting: value})


@pytest.mark.parametrize(
    ("options", "setting"),
    [
        ({"retry_budget": -1}, "retry_budget"),
        ({"retry_budget": 2.5}, "retry_budget"),
        ({"deadline": float("nan")}, "deadline"),
        ({"deadline": float("inf")}, "deadline"),
    ],
)
def test_a_request_context_out_of_range_is_refused(options: dict[str, Any], setting: str) -> None:
    # A NaN deadline is never reached: every comparison with it is false.
    with pytest.raises(ValueError, match=setting):
        RequestContext("r", "s", **options)


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0])
def test_a_request_timeout_out_of_range_is_refused(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        Executor().request(timeout=timeout)
    # Zero is a deadline that has passed: taken, and the call does not start.
    ctx = Executor().request(timeout=0)
    assert ctx.deadline is not None


@pytest.mark.parametrize(
    "make",
    [
        TimeoutError,
        ConnectionResetError,
        lambda: http_status(429),
        lambda: http_status(502),
        lambda: http_status(503),
        lambda: http_status(504),
    ],
)
def test_retryable_failures_get_at_most_three_attempts(
    make: Callable[[], BaseException], clock: FakeClock
) -> None:
    tool = Flaky(make(), make(), make(), make())
    result = executor_with(tool, clock).execute(Call("t", "c1", {}), RequestContext("r", "s"))
    assert result.state == "downstream_failed"
    assert tool.calls == 3 and result.attempts == 3
    assert len(clock.sleeps) == 2
    assert all(0 <= s <= 8.0 for s in clock.sleeps)
    assert result.error is not None and result.error["stopped"] == "max_attempts"


def test_retry_then_success(clock: FakeClock) -> None:
    tool = Flaky(http_status(503), ConnectionResetError())
    result = executor_with(tool, clock).execute(Call("t", "c1", {}), RequestContext("r", "s"))
    assert result.state == "ok" and result.value == {"ok": 3} and result.attempts == 3


class Ticket(BaseModel):
    items: list[str]


@pytest.mark.parametrize("sent", [{"items": ["a", "b"]}, Ticket(items=["a", "b"])])
async def test_a_retry_gets_the_arguments_the_model_sent_not_what_a_try_left(
    sent: Any, clock: FakeClock
) -> None:
    # Every attempt was handed the same object: a try that popped an item and then met a 503
    # left its retry the rest, which sent "a" where the model asked for "b" (another
    # operation than the call's, under the same idempotency key).
    seen: list[list[str]] = []

    def send(args: Any) -> str:
        items = args["items"] if isinstance(args, dict) else args.items
        seen.append(list(items))
        item = items.pop()
        if len(seen) == 1:
            raise http_status(503)
        return item

    async def asend(args: Any) -> str:
        return send(args)

    for tool in (send, asend):
        seen.clear()
        ex = Executor(clock=clock, breaker=False)
        ex.register("send", tool, side_effects=True)
        call = Call("send", "c1", sent)
        if tool is send:
            result = ex.execute(call, RequestContext("r", "s"))
        else:
            result = await ex.aexecute(call, RequestContext("r", "s"))
        assert (result.state, result.value, result.attempts) == ("ok", "b", 2)
        assert seen == [["a", "b"], ["a", "b"]]
    # The caller's arguments are left as they were sent.
    assert (sent["items"] if isinstance(sent, dict) else sent.items) == ["a", "b"]


class _Line(BaseModel):
    sku: str
    tags: list[str]


class _Order(BaseModel, frozen=True, extra="allow"):
    pin: SecretStr
    lines: list[_Line]


def test_an_attempt_copies_what_it_can_change_and_shares_the_rest(clock: FakeClock) -> None:
    # Each attempt got a `copy.deepcopy` of the arguments: its memo of every object cost a
    # no-op tool's call about a fifth of the executor's own work. Values no tool can change
    # in place are now shared, and only lists, dicts and models rebuilt.
    sent = _Order.model_validate(
        {"pin": "4821", "lines": [{"sku": "a", "tags": ["x"]}], "note": {"gift": ["wrap"]}}
    )
    seen: list[_Order] = []

    def order(args: _Order) -> str:
        seen.append(args)
        args.lines[0].tags.append("changed")
        cast(dict[str, list[str]], args.model_extra)["note"]["gift"].clear()
        if len(seen) == 1:
            raise http_status(503)
        return "ok"

    ex = Executor(clock=clock, breaker=False)
    ex.register("order", order)
    assert ex.execute(Call("order", "c1", sent)).state == "ok"
    first, second = seen
    assert first is not sent and second is not first
    assert first.pin is sent.pin and first.lines[0].sku is sent.lines[0].sku
    assert second.lines[0].tags == ["x", "changed"] and sent.lines[0].tags == ["x"]
    assert sent.model_extra == {"note": {"gift": ["wrap"]}}
    assert second.model_fields_set == sent.model_fields_set


def test_an_attempt_copies_its_arguments_with_python_work_per_container_not_per_value(
    clock: FakeClock,
) -> None:
    # The copy is made on every attempt: rebuilding each dict value by value made it cost
    # Python work for every string and number of the arguments.
    ex = Executor(clock=clock, breaker=False)
    seen: list[Any] = []
    ex.register("read", seen.append)

    def call(size: int) -> Callable[[], object]:
        notes = {f"k{i}": "n" * 40 for i in range(size)}
        rows = [{"sku": f"w-{i}", "qty": i, "gift": True} for i in range(size)]
        arguments = {"items": [{"name": "w", "tags": ["a", None]}], "notes": notes, "rows": rows}
        return lambda: ex.execute(Call("read", "c1", arguments))

    call(1)()
    assert python_calls(call(2000)) == python_calls(call(1))
    sent = {"notes": {"a": "x"}, "tags": ["a", 1], "rows": [{"a": 1}, {"b": "x"}]}
    ex.execute(Call("read", "c2", sent))
    copied = seen[-1]
    assert copied == sent and copied["notes"] is not sent["notes"]
    assert copied["tags"] is not sent["tags"] and copied["rows"] is not sent["rows"]
    pairs = zip(copied["rows"], sent["rows"], strict=True)
    assert all(mine is not theirs for mine, theirs in pairs)


def test_a_value_a_tool_takes_out_of_its_arguments_is_still_scrubbed(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # The redaction hook was asked about the arguments after the tool ran: a password the
    # tool popped off them was no longer among them, and its error text showed it.
    def login(args: dict[str, str]) -> None:
        password = args.pop("password")
        raise ConnectionRefusedError(f"auth failed for {args['user']}:{password}")

    def hide(path: str, text: str) -> str:
        return "[hidden]" if path == "/password" else text

    ex = Executor(clock=clock, breaker=False, redact=hide, retry=RetryPolicy(max_attempts=1))
    ex.register("login", login)
    with caplog.at_level(logging.DEBUG, logger="toolwire.execution"):
        result = ex.execute(Call("login", "c1", {"user": "ann", "password": "hunter2"}))
    assert result.state == "downstream_failed"
    assert "auth failed for ann:[hidden]" in caplog.text and "hunter2" not in caplog.text


def test_backoff_is_full_jitter_exponential(clock: FakeClock) -> None:
    windows = []
    for _ in range(200):
        clock.sleeps.clear()
        executor_with(Flaky(TimeoutError(), TimeoutError()), clock).execute(
            Call("t", "c", {}), RequestContext("r", "s")
        )
        windows.append(tuple(clock.sleeps))
    first = [w[0] for w in windows]
    second = [w[1] for w in windows]
    # Full jitter: uniform in [0, 0.5 * 2**n]; spread over the window, not pinned at its top.
    assert max(first) <= 1.0 and max(second) <= 2.0
    assert min(first) < 0.2 and min(second) < 0.4
    assert len(set(first)) > 150


def test_retry_after_is_honoured(clock: FakeClock) -> None:
    tool = Flaky(http_status(429, {"Retry-After": "6"}))
    result = executor_with(tool, clock).execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "ok"
    assert clock.sleeps[0] >= 6.0


def test_callers_turned_away_together_by_retry_after_come_back_spread() -> None:
    waits: list[float] = []
    for i in range(50):
        clock = FakeClock()
        tool = Flaky(http_status(429, {"Retry-After": "2"}))
        executor_with(tool, clock).execute(Call("t", f"c{i}", {}), RequestContext("r", "s"))
        waits.extend(clock.sleeps)
    assert all(w >= 2.0 for w in waits)
    assert len(set(waits)) > 40


def test_retry_after_beyond_limit_is_not_waited_for(clock: FakeClock) -> None:
    tool = Flaky(http_status(429, {"Retry-After": "600"}))
    ex = executor_with(tool, clock)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "downstream_failed" and tool.calls == 1 and clock.sleeps == []
    assert result.error is not None
    assert result.error["retry_after"] == 600.0
    assert result.error["stopped"] == "retry_after_too_long"


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda: http_status(400), "bad_request"),
        (lambda: http_status(422), "unprocessable"),
        (lambda: http_status(403), "forbidden"),
        (lambda: BusinessRuleError("ticket is closed"), "business_rule"),
    ],
)
def test_client_errors_and_business_rejections_are_never_retried(
    make: Callable[[], BaseException], kind: str, clock: FakeClock
) -> None:
    tool = Flaky(make())
    result = executor_with(tool, clock).execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert tool.calls == 1 and result.attempts == 1 and clock.sleeps == []
    assert result.state == "downstream_failed"
    assert result.error is not None and result.error["type"] == kind
    assert result.error["retryable"] is False
    if kind == "business_rule":
        assert result.error["reasons"] == ["ticket is closed"]


def test_missing_user_information_is_needs_clarification(clock: FakeClock) -> None:
    tool = Flaky(NeedsClarification("Which account?", missing=["account_id"]))
    result = executor_with(tool, clock).execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "needs_clarification" and tool.calls == 1
    assert result.error is not None and result.error["missing"] == ["account_id"]


def test_keyboard_interrupt_makes_one_attempt_and_propagates(clock: FakeClock) -> None:
    tool = Flaky(KeyboardInterrupt())
    ex = executor_with(tool, clock)
    with pytest.raises(KeyboardInterrupt):
        ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert tool.calls == 1 and clock.sleeps == []
    assert ex.observer.counts["calls.downstream_failed"] == 1


GROUP: Any = getattr(builtins, "BaseExceptionGroup", None)


@pytest.mark.skipif(GROUP is None, reason="BaseExceptionGroup is Python 3.11+")
@pytest.mark.parametrize("inner", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("mode", ["execute", "aexecute", "aexecute_all", "execute_all"])
async def test_an_exception_group_holding_an_interrupt_propagates_like_one(
    clock: FakeClock, inner: type[BaseException], mode: str
) -> None:
    # A tool's task group interrupted in one of its tasks raises a BaseExceptionGroup: it was
    # classified unknown_error and the call returned data, so Ctrl-C (or the SystemExit of a
    # SIGTERM handler) was swallowed. It is recorded and re-raised, as the bare one is.
    def group() -> BaseException:
        return GROUP("tasks", [GROUP("inner", [ValueError("x"), inner()])])

    calls = 0

    def tool(args: Any) -> None:
        nonlocal calls
        calls += 1
        raise group()

    async def atool(args: Any) -> None:
        tool(args)

    ex = executor_with(atool if mode.startswith("a") else tool, clock)
    call = Call("t", "c", {})
    with pytest.raises(GROUP) as raised:
        if mode == "execute":
            ex.execute(call, RequestContext("r", "s"))
        elif mode == "execute_all":
            ex.execute_all([call, Call("t", "d", {})], RequestContext("r", "s"), max_workers=2)
        elif mode == "aexecute":
            await ex.aexecute(call, RequestContext("r", "s"))
        else:
            await ex.aexecute_all([call], RequestContext("r", "s"))
    assert cast(Any, raised.value).subgroup(inner) is not None
    assert calls >= 1 and clock.sleeps == []
    assert ex.observer.counts["calls.downstream_failed"] == calls
    assert classify(group(), now=NOW).propagate


@pytest.mark.skipif(
    not hasattr(asyncio.Task, "cancelling"), reason="needs Task.cancelling (Python 3.11+)"
)
async def test_cancelled_error_raised_by_tool_is_not_retried(clock: FakeClock) -> None:
    calls = 0

    async def tool(args: Any) -> None:
        nonlocal calls
        calls += 1
        raise asyncio.CancelledError

    ex = executor_with(tool, clock)
    # Nobody cancelled the caller: the call ends with its result (see test_executor).
    result = await ex.aexecute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.error is not None and result.error["type"] == "cancelled"
    assert calls == 1 and clock.sleeps == []


async def test_outer_cancellation_stops_after_one_attempt(clock: FakeClock) -> None:
    started = asyncio.Event()
    calls = 0

    async def tool(args: Any) -> None:
        nonlocal calls
        calls += 1
        started.set()
        await asyncio.sleep(10)

    ex = executor_with(tool, clock)
    task = asyncio.create_task(ex.aexecute(Call("t", "c", {}), RequestContext("r", "s")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.01)
    assert calls == 1 and clock.sleeps == []


async def test_cancellation_during_backoff_is_not_retried() -> None:
    calls = 0

    async def tool(args: Any) -> None:
        nonlocal calls
        calls += 1
        raise http_status(503, {"Retry-After": "5"})  # forces a 5 s backoff

    ex = Executor({"t": tool}, breaker=False)
    task = asyncio.create_task(ex.aexecute(Call("t", "c", {}), RequestContext("r", "s")))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert calls == 1


def test_exceeded_deadline_makes_exactly_one_attempt_sync() -> None:
    calls = 0

    def tool(args: Any) -> None:
        nonlocal calls
        calls += 1
        time.sleep(0.5)

    ex = Executor({"t": tool}, breaker=False)
    ctx = ex.request("r", "s", timeout=0.05)
    started = time.monotonic()
    result = ex.execute(Call("t", "c", {}), ctx)
    elapsed = time.monotonic() - started
    assert result.state == "downstream_failed"
    assert result.error is not None and result.error["type"] == "deadline_exceeded"
    assert calls == 1 and result.attempts == 1
    assert elapsed < 0.3  # honoured promptly, not after the tool finished


async def test_exceeded_deadline_makes_exactly_one_attempt_async() -> None:
    calls = 0

    async def tool(args: Any) -> None:
        nonlocal calls
        calls += 1
        await asyncio.sleep(5)

    ex = Executor({"t": tool}, breaker=False)
    ctx = ex.request("r", "s", timeout=0.05)
    started = time.monotonic()
    result = await ex.aexecute(Call("t", "c", {}), ctx)
    assert time.monotonic() - started < 0.06 + 0.05  # within one scheduling tick or so
    assert result.error is not None and result.error["type"] == "deadline_exceeded"
    assert calls == 1


def test_deadline_stops_retries_whose_wait_would_pass_it(clock: FakeClock) -> None:
    tool = Flaky(http_status(429, {"Retry-After": "5"}))
    ex = executor_with(tool, clock)
    ctx = RequestContext("r", "s", deadline=clock.monotonic() + 2.0)
    result = ex.execute(Call("t", "c", {}), ctx)
    assert tool.calls == 1 and result.error is not None
    assert result.error["stopped"] == "deadline"


class LateWakingClock(FakeClock):
    """Sleeps end a second late, as on a loaded event loop or machine."""

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds + 1.0)


def test_write_whose_deadline_passes_during_backoff_stays_retryable_in_the_ledger() -> None:
    # The 503 did not take effect and the retry never started: the key must not be stuck on a
    # non-retryable "deadline exceeded" for the retention period.
    clock = LateWakingClock()
    tool = Flaky(http_status(503, {"Retry-After": "2"}))
    ex = executor_with(tool, clock, side_effects=True)
    late = RequestContext("r", "s", deadline=clock.monotonic() + 2.5)
    first = ex.execute(Call("t", "c", {}), late)
    assert first.state == "downstream_failed" and tool.calls == 1
    assert first.error is not None and first.error["type"] == "deadline_exceeded"
    again = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert again.state == "ok" and tool.calls == 2


def test_per_attempt_timeout_is_retried_for_reads() -> None:
    calls = 0

    def tool(args: Any) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            time.sleep(0.3)
        return "done"

    ex = Executor(breaker=False, retry=RetryPolicy(backoff_base=0.001, backoff_max=0.001))
    ex.register("t", tool, timeout=0.05)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "ok" and result.value == "done" and calls == 2


# ---- budgets ----------------------------------------------------------------------------------


def test_request_budget_is_shared_by_all_calls_of_a_request(clock: FakeClock) -> None:
    attempts = 0

    def tool(args: Any) -> None:
        nonlocal attempts
        attempts += 1
        raise http_status(503)

    ex = executor_with(tool, clock)
    ctx = RequestContext("r", "s", retry_budget=5)
    results = ex.execute_all([Call("t", f"c{i}", {}) for i in range(4)], ctx)
    # 4 first attempts + 5 retries: the budget, not 4 * 2 retries.
    assert attempts == 9 and ctx.retries_left == 0
    assert [r.attempts for r in results] == [3, 3, 2, 1]
    assert results[-1].error is not None and results[-1].error["stopped"] == "request_budget"


class _Outage:
    """An executor whose one tool always answers 503, and the attempts it made."""

    def __init__(self, clock: FakeClock) -> None:
        self.budget = RetryBudget(clock=clock)  # 10 %, minimum 3 per second
        self.attempts = 0
        self.executor = Executor(
            {"t": self._tool}, clock=clock, retry_budget=self.budget, breaker=False
        )

    def _tool(self, args: Any) -> None:
        self.attempts += 1
        raise http_status(503)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("advance", [False, True])
def test_outage_amplification_is_bounded(advance: bool, seed: int) -> None:
    # The backoff's jitter comes from `random`: seeded, so that the run is the same whatever
    # ran before it, and restored after.
    saved = random.getstate()
    random.seed(seed)
    try:
        clock = FakeClock(advance_on_sleep=advance)
        outage = _Outage(clock)
        calls = 2000
        start = clock.monotonic()
        for i in range(calls):
            # Every call is its own user request, so only the process budget can stop the storm.
            outage.executor.execute(
                Call("t", f"c{i}", {}), RequestContext(f"r{i}", "s", retry_budget=100)
            )
        elapsed = clock.monotonic() - start
    finally:
        random.setstate(saved)
    # Retries never exceed what the two buckets took in (the bound `RetryBudget` documents).
    budget = outage.budget
    bound = calls + 0.1 * calls + budget.min_per_second * (elapsed + 1)
    assert outage.attempts <= bound + 1e-9
    assert outage.attempts >= calls
    assert outage.budget.denied > 0
    if not advance:
        assert outage.attempts <= 1.1 * calls + 3


def test_outage_amplification_stays_under_ten_percent_at_any_rate() -> None:
    for per_second in (30, 100, 300):
        clock = FakeClock(advance_on_sleep=False)
        outage = _Outage(clock)
        calls = 0
        for second in range(20):
            for i in range(per_second):
                outage.executor.execute(
                    Call("t", f"c{second}-{i}", {}), RequestContext(session_id="s")
                )
                calls += 1
            clock.advance(1.0)
        # 30 calls a second is where the 3-a-second floor meets the 10 %.
        ratio = outage.attempts / calls
        assert outage.attempts <= 1.1 * calls + outage.budget.min_per_second, (per_second, ratio)


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.just("call"),
            st.just("retry"),
            st.sampled_from([0.01, 0.1, 0.5, 1.0, 7.0]),
        ),
        max_size=400,
    ),
    ratio=st.sampled_from([0.0, 0.05, 0.1, 0.5, 1.0]),
    min_per_second=st.sampled_from([0.0, 0.5, 3.0, 10.0]),
    ratio_cap=st.sampled_from([0.0, 0.5, 1.0, 10.0]),
)
def test_process_budget_never_gives_more_than_it_took_in(
    steps: list[str | float], ratio: float, min_per_second: float, ratio_cap: float
) -> None:
    clock = FakeClock(advance_on_sleep=False)
    budget = RetryBudget(
        ratio=ratio, min_per_second=min_per_second, ratio_cap=ratio_cap, clock=clock
    )
    start = clock.monotonic()
    for step in steps:
        if step == "call":
            budget.record_call()
        elif step == "retry":
            budget.try_spend_retry()
        else:
            clock.advance(float(step))
        elapsed = clock.monotonic() - start
        took_in = budget.calls * ratio + min_per_second * (elapsed + 1)
        assert budget.retries <= took_in + 1e-9


def test_process_budget_reserve_is_a_floor_at_a_steady_rate() -> None:
    # One call a second, each retried as often as allowed, for ten minutes: the reserve's
    # three a second, not three plus the ratio's tenth.
    clock = FakeClock(advance_on_sleep=False)
    budget = RetryBudget(ratio=0.1, min_per_second=3.0, ratio_cap=10.0, clock=clock)
    for _ in range(600):
        budget.record_call()
        while budget.try_spend_retry():
            pass
        clock.advance(1.0)
    assert budget.retries <= 3.0 * 600 + budget.ratio_cap + budget.min_per_second


def test_process_budget_allows_minimum_retries_per_second() -> None:
    clock = FakeClock(advance_on_sleep=False)
    budget = RetryBudget(ratio=0.0, min_per_second=3, clock=clock)
    assert [budget.try_spend_retry() for _ in range(4)] == [True, True, True, False]
    clock.advance(1.0)
    assert [budget.try_spend_retry() for _ in range(4)] == [True, True, True, False]


@pytest.mark.parametrize("rate", [0.5, 0.25])
def test_process_budget_below_one_retry_a_second_still_retries(rate: float) -> None:
    # The reserve was capped at the rate, below the whole token a retry takes: never a retry.
    clock = FakeClock(advance_on_sleep=False)
    budget = RetryBudget(ratio=0.0, min_per_second=rate, clock=clock)
    granted = 0
    for _ in range(120):  # two minutes, a retry wanted every second
        clock.advance(1.0)
        granted += budget.try_spend_retry()
    assert granted == rate * 120


def test_process_budget_ratio_cap_below_one_still_banks_a_retry() -> None:
    clock = FakeClock(advance_on_sleep=False)
    budget = RetryBudget(ratio=0.25, min_per_second=0, ratio_cap=0.5, clock=clock)
    granted = 0
    for _ in range(100):
        budget.record_call()
        granted += budget.try_spend_retry()
    assert granted == 25
    # Zero still banks nothing.
    off = RetryBudget(ratio=0.25, min_per_second=0, ratio_cap=0.0, clock=clock)
    for _ in range(100):
        off.record_call()
    assert not off.try_spend_retry()


def test_process_budget_ratio_and_cap() -> None:
    clock = FakeClock(advance_on_sleep=False)
    budget = RetryBudget(ratio=0.1, min_per_second=0, ratio_cap=2.0, clock=clock)
    for _ in range(1000):
        budget.record_call()
    # 1000 healthy calls bank only the cap, so an outage cannot start with a burst.
    assert sum(budget.try_spend_retry() for _ in range(10)) == 2


def test_writes_retry_definite_failures(clock: FakeClock) -> None:
    tool = Flaky(http_status(503), ConnectionRefusedError())
    ex = executor_with(tool, clock, side_effects=True)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "ok" and tool.calls == 3


@pytest.mark.parametrize(
    "make", [TimeoutError, ConnectionResetError, lambda: http_status(504), lambda: ValueError()]
)
def test_writes_never_retry_ambiguous_failures(
    make: Callable[[], BaseException], clock: FakeClock
) -> None:
    tool = Flaky(make(), make())
    ex = executor_with(tool, clock, side_effects=True)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "unknown_outcome" and tool.calls == 1
    # ... and never re-executed blindly afterwards.
    again = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert again.state == "unknown_outcome" and tool.calls == 1
    assert result.idempotency_key is not None
    record = ex.ledger.get(result.idempotency_key)
    assert record is not None and record.state == "unknown"


def test_writes_that_forward_the_key_may_retry_ambiguous_failures(clock: FakeClock) -> None:
    tool = Flaky(TimeoutError())
    ex = executor_with(tool, clock, side_effects=True, retry_ambiguous=True)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "ok" and tool.calls == 2


@pytest.mark.parametrize(
    "later",
    [lambda: http_status(503), ConnectionRefusedError, lambda: BusinessRuleError("no")],
)
def test_a_write_stays_unknown_once_any_attempt_may_have_taken_effect(
    later: Callable[[], BaseException], clock: FakeClock
) -> None:
    # The first attempt timed out after its request went out; the later ones certainly did not
    # apply. Only the last was remembered: the model was told to retry, with a new call id, so
    # a new key the downstream could not dedupe on.
    tool = Flaky(TimeoutError("read timed out"), later(), later(), later())
    ex = executor_with(tool, clock, side_effects=True, retry_ambiguous=True)
    result = ex.execute(Call("t", "c", {}), RequestContext("r", "s"))
    assert result.state == "unknown_outcome"
    assert result.error is not None and result.error["retryable"] is False
    assert "(timeout)" in result.error["message"]
    assert result.idempotency_key is not None
    record = ex.ledger.get(result.idempotency_key)
    assert record is not None and record.state == "unknown" and not record.retryable


def test_system_clock_is_the_default() -> None:
    assert isinstance(Executor().clock, SystemClock)


@pytest.mark.parametrize(
    ("reason", "kind", "ambiguous"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "connection_error", False),
        (socket.gaierror(-2, "Name or service not known"), "connection_error", False),
        (ConnectionResetError(104, "Connection reset by peer"), "connection_error", True),
        (TimeoutError("timed out"), "timeout", True),
        (OSError(errno.ENETUNREACH, "Network is unreachable"), "connection_error", False),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "connection_error", False),
    ],
)
def test_urllib_failures_are_read_by_their_reason(
    reason: BaseException, kind: str, ambiguous: bool
) -> None:
    found = classify(urllib.error.URLError(reason), now=NOW)
    assert (found.kind, found.retryable, found.ambiguous) == (kind, True, ambiguous)
    # Without an exception inside, nothing says what happened.
    assert classify(urllib.error.URLError("unknown url type: x"), now=NOW).kind == "unknown_error"


def test_a_write_over_urllib_to_a_closed_port_is_retried() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/charge"
    attempts: list[int] = []

    def charge(args: Any) -> bytes:
        attempts.append(1)
        return urllib.request.urlopen(urllib.request.Request(url, data=b"{}"), timeout=2).read()

    ex = Executor(clock=FakeClock(), breaker=False)
    ex.register("charge", charge, side_effects=True)
    result = ex.execute(Call("charge", "call_1", {"amount": 5}), RequestContext("r", "s"))
    assert result.state == "downstream_failed" and len(attempts) == 3
    assert result.error is not None and result.error["type"] == "connection_error"


@pytest.mark.parametrize("zone", ["UTC", "America/New_York", "Asia/Tokyo"])
def test_an_http_date_without_a_zone_is_gmt(zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The asctime form carries no zone and `-0000` reads as none: both are GMT, whatever the
    # host's zone, as the `GMT` form already was.
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        when = time.gmtime(NOW + 20)
        forms = [
            time.strftime("%a %b %e %H:%M:%S %Y", when),
            time.strftime("%a, %d %b %Y %H:%M:%S -0000", when),
            time.strftime("%a, %d %b %Y %H:%M:%S GMT", when),
        ]
        assert [parse_retry_after(form, now=NOW) for form in forms] == [20.0, 20.0, 20.0]
    finally:
        monkeypatch.undo()
        time.tzset()


# ---- a retry that never runs gives its budget back ---------------------------------------------


class _StuckBackoff(FakeClock):
    """A clock whose async sleep never ends: the test cancels the call during its backoff."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeping = asyncio.Event()

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
        self.sleeping.set()
        await asyncio.Event().wait()


class _HookedBackoff(FakeClock):
    """A clock that runs `during` in every sleep: something happens while a retry waits."""

    def __init__(self) -> None:
        super().__init__()
        self.during: Callable[[], None] = lambda: None

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.during()


def _always_503(args: Any) -> None:
    raise http_status(503)


async def test_a_retry_cancelled_in_its_backoff_gives_its_budgets_back() -> None:
    clock = _StuckBackoff()
    budget = RetryBudget(clock=clock)
    ex = Executor({"t": _always_503}, clock=clock, retry_budget=budget, breaker=False)
    ctx = RequestContext("r", "s", retry_budget=5)
    task = asyncio.create_task(ex.aexecute(Call("t", "c", {}), ctx))
    await clock.sleeping.wait()
    assert budget.retries == 1 and ctx.retries_left == 4
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert budget.retries == 0 and ctx.retries_left == 5
    # The reserve the retry took is back: a quiet process may retry three times at once.
    assert [budget.try_spend_retry() for _ in range(4)] == [True, True, True, False]


def test_a_retry_the_breaker_turns_away_at_its_start_gives_its_budgets_back() -> None:
    clock = _HookedBackoff()
    budget = RetryBudget(clock=clock)
    config = BreakerConfig(minimum_calls=5, window_size=5, open_duration=60)
    ex = Executor({"t": _always_503}, clock=clock, retry_budget=budget, breaker=config)
    breaker = ex.breaker_for("t")
    assert breaker is not None

    def other_calls_fail() -> None:
        # Other calls of the tool fail while this one waits: the breaker opens.
        for _ in range(5):
            permit = breaker.acquire()
            if permit is not None:
                breaker.record(permit, failure=True, duration=0.0)

    clock.during = other_calls_fail
    ctx = RequestContext("r", "s", retry_budget=5)
    result = ex.execute(Call("t", "c", {}), ctx)
    assert not result.ok and result.attempts == 1
    assert budget.retries == 0 and ctx.retries_left == 5


@given(st.lists(st.sampled_from(["call", "retry", "tick"]), max_size=60))
@settings(max_examples=200, deadline=None)
def test_a_refunded_retry_leaves_the_budget_as_if_never_taken(history: list[str]) -> None:
    def replay(refund_each: bool) -> list[bool]:
        clock = FakeClock()
        budget = RetryBudget(ratio=0.5, min_per_second=2.0, ratio_cap=4.0, clock=clock)
        granted: list[bool] = []
        for step in history:
            if step == "call":
                budget.record_call()
            elif step == "tick":
                clock.advance(0.25)
            else:
                if refund_each:
                    ticket = budget.take_retry()
                    if ticket is not None:
                        budget.refund(ticket)
                granted.append(budget.try_spend_retry())
        return granted

    assert replay(refund_each=True) == replay(refund_each=False)


@pytest.mark.parametrize("side_effects", [True, False])
async def test_a_try_again_from_the_tool_is_classified_like_any_exception(
    side_effects: bool, clock: FakeClock
) -> None:
    # Tenacity reads TryAgain as "retry now" and skips its retry predicate: raised by a polling
    # helper inside the tool, it re-ran a write with no retry allowed by any rule or budget.
    for mode in ("sync", "async"):
        tool = Flaky(tenacity.TryAgain(), tenacity.TryAgain(), tenacity.TryAgain())
        ex = executor_with(tool, clock, side_effects=side_effects)
        call = Call("t", "c", {})
        result = (
            ex.execute(call, RequestContext("r", "s"))
            if mode == "sync"
            else await ex.aexecute(call, RequestContext("r", "s"))
        )
        # An unknown error: a write is never retried on it, a read is not retried either.
        assert tool.calls == 1 and result.attempts == 1, mode
        assert result.error is not None and result.error["retryable"] is False
        expected = "unknown_outcome" if side_effects else "downstream_failed"
        assert result.state == expected, mode
