"""Scenario 17 and 13: keys, fingerprints, the ledger contract on every backend, replays."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, SecretStr, field_serializer, model_serializer

import toolwire.execution.executor as executor_module
from tests.conftest import python_calls
from toolwire.execution import (
    BreakerConfig,
    Call,
    ClaimLost,
    Clock,
    Executor,
    FakeClock,
    IdempotencyConflict,
    IdempotencyInProgress,
    Ledger,
    LedgerCorrupt,
    LedgerRecord,
    LedgerUnavailable,
    MemoryLedger,
    NeedsClarification,
    RequestContext,
    RetryPolicy,
    canonical_json,
    derive_key,
    fingerprint,
)
from toolwire.execution.idempotency import fingerprints, redacted_fingerprint
from toolwire.execution.ledger import decide_renew

DAY = 24 * 3600.0
LedgerFactory = Callable[[Clock | None], Ledger]

# ---- canonical form and keys --------------------------------------------------------------------


def test_canonical_json_sorts_keys_and_is_compact() -> None:
    assert canonical_json({"b": [1, {"z": None, "a": True}], "a": "é"}) == (
        '{"a":"é","b":[1,{"a":true,"z":null}]}'
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (1, 1.0),
        (1, Decimal("1.00")),
        (Decimal("100"), 100),
        (Decimal("1E+2"), 100),
        (0.1, Decimal("0.1")),
        (-0.0, 0),
        (Decimal("-0"), 0),
        # Past the plain-notation limit an integer is spelled like the equal float/Decimal.
        pytest.param(10**200, 1e200, id="int-float-1e200"),
        pytest.param(10**200, Decimal("1E+200"), id="int-decimal-1e200"),
        pytest.param(-(10**150) * 7, Decimal("-7e150"), id="int-decimal--7e150"),
        pytest.param(12 * 10**300, 1.2e301, id="int-float-1.2e301"),
    ],
)
def test_equal_numbers_fingerprint_equal(left: Any, right: Any) -> None:
    assert fingerprint({"amount": left}) == fingerprint({"amount": right})


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (Decimal("0.1000000000000000000001"), Decimal("0.1")),
        (2**64 + 1, 2**64),
        (Decimal("12345678901234567890.5"), Decimal("12345678901234567890.4")),
        ("1", 1),
        (True, 1),
        (None, 0),
    ],
)
def test_different_values_fingerprint_differently(left: Any, right: Any) -> None:
    assert fingerprint({"amount": left}) != fingerprint({"amount": right})


def test_integers_past_the_digit_limit_are_fingerprinted() -> None:
    big = 10**5000 + 7  # str() refuses this many digits; a call with it must still run
    assert canonical_json(big) == "1" + "0" * 4999 + "7"
    assert fingerprint({"n": big}) != fingerprint({"n": big + 1})
    assert canonical_json(10**101 + 1) == str(10**101 + 1)


def test_decimal_is_exact_not_via_float() -> None:
    assert canonical_json(Decimal("3.14159265358979323846264338327950288")) == (
        "3.14159265358979323846264338327950288"
    )
    assert canonical_json(float("nan")) == '"NaN"' and canonical_json(Decimal("-Inf")) == (
        '"-Infinity"'
    )


class Transfer(BaseModel):
    amount: Decimal
    to: str
    memo: str = ""


def test_model_and_dict_fingerprint_alike_and_defaults_count() -> None:
    model = Transfer.model_validate_json('{"amount": "10.50", "to": "acct"}')
    assert fingerprint(model) == fingerprint({"amount": Decimal("10.5"), "to": "acct", "memo": ""})


class _MaskedTransfer(BaseModel):
    to_account: str
    amount: Decimal
    note: str = Field(default="", exclude=True)

    @field_serializer("to_account")
    def _mask(self, value: str) -> str:  # keeps account numbers out of dumps and logs
        return "****" + value[-4:]


class _Summarised(BaseModel):
    to_account: str
    amount: Decimal

    @model_serializer
    def _summary(self) -> dict[str, Any]:
        return {"amount": self.amount}


def test_the_fingerprint_skips_serializers_and_exclusions(clock: FakeClock) -> None:
    # A serializer or an exclusion made two different writes share a fingerprint: without a
    # call id (the fallback key holds the fingerprint) the second one was not executed and got
    # the first one's receipt.
    a = _MaskedTransfer(to_account="DE89370400440532013000", amount=Decimal(500))
    b = _MaskedTransfer(to_account="FR7630006000011234567893000", amount=Decimal(500))
    assert a.model_dump() == b.model_dump() and fingerprint(a) != fingerprint(b)
    assert fingerprint(a) != fingerprint(a.model_copy(update={"note": "rent"}))
    assert fingerprint(_Summarised(to_account="1", amount=Decimal(5))) != fingerprint(
        _Summarised(to_account="2", amount=Decimal(5))
    )
    # Read field by field, as `model_dump()` names them.
    assert fingerprint(a) == fingerprint(
        {"to_account": "DE89370400440532013000", "amount": 500, "note": ""}
    )
    ex, tool = writer(clock)
    ctx = RequestContext("r", "s")
    results = [ex.execute(Call("create_ticket", None, model), ctx) for model in (a, b)]
    assert [r.state for r in results] == ["ok", "ok"] and len(tool.calls) == 2


def test_duplicate_json_keys_last_wins_in_the_fingerprint() -> None:
    # Scenario 13: the validator's rule (last value wins) is the fingerprint's rule.
    model = Transfer.model_validate_json('{"amount": 1, "amount": 1000, "to": "a"}')
    assert model.amount == 1000
    assert fingerprint(model) == fingerprint({"amount": 1000, "to": "a", "memo": ""})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=8), st.randoms())
def test_fingerprint_ignores_key_order(data: dict[str, Any], rnd: random.Random) -> None:
    items = list(data.items())
    rnd.shuffle(items)
    assert fingerprint(dict(items)) == fingerprint(data)
    # The canonical text is JSON, and canonicalising what it reads back changes nothing.
    text = canonical_json(data)
    assert canonical_json(json.loads(text)) == text


def test_derived_keys_are_fixed_length_hex_and_deterministic() -> None:
    a = derive_key(tool="pay", session_id="s1", call_id="call_1")
    assert len(a) == 64 and int(a, 16) >= 0
    assert a == derive_key(tool="pay", session_id="s1", call_id="call_1")
    assert a != derive_key(tool="pay", session_id="s2", call_id="call_1")
    assert a != derive_key(tool="pay", session_id="s1", call_id="call_2")
    assert a != derive_key(tool="refund", session_id="s1", call_id="call_1")
    assert a != derive_key(tool="pay", session_id="s1", call_id="call_1", namespace="tenant")
    huge = derive_key(tool="pay", session_id="s" * 10_000, call_id="c" * 10_000)
    assert len(huge) == 64


def test_business_keys_ignore_the_session() -> None:
    one = derive_key(tool="pay", session_id="s1", call_id="a", business_key="order-7")
    two = derive_key(tool="pay", session_id="s2", call_id="b", business_key="order-7")
    assert one == two
    assert one != derive_key(tool="pay", session_id="s1", call_id="a", business_key="order-8")


def test_separator_cannot_be_forged() -> None:
    assert derive_key(tool="t", session_id="a", call_id="b\x1fc") != derive_key(
        tool="t", session_id="a\x1fb", call_id="c"
    )
    # The separator moved across the tool name, which sits between session and call id.
    assert derive_key(tool="x", session_id="s\x1fw", call_id="c") != derive_key(
        tool="w", session_id="s", call_id="x\x1fc"
    )
    assert derive_key(
        tool="t", session_id="s\x1fr", request_id="", arguments_fingerprint="f"
    ) != derive_key(tool="t", session_id="s", request_id="r\x1f", arguments_fingerprint="f")
    # Keys of ordinary ids keep their value (records already in a ledger stay reachable).
    plain = "\x1f".join(["toolwire.v1", "", "call", "s1", "pay", "call_1"])
    assert derive_key(tool="pay", session_id="s1", call_id="call_1") == (
        hashlib.sha256(plain.encode()).hexdigest()
    )


def test_lone_surrogates_in_ids_and_arguments_are_keyed_not_raised(clock: FakeClock) -> None:
    # json.loads accepts "\ud800": a Call built from it must still run once and replay.
    ex, tool = writer(clock)
    ctx = RequestContext("r", "s")
    call = Call("create_ticket", "call_\ud800", json.loads('{"t": "a\\ud800"}'))
    first = ex.execute(call, ctx)
    assert first.state == "ok" and ex.execute(call, ctx).state == "duplicate_suppressed"
    other = ex.execute(Call("create_ticket", "call_\udc00", {"t": "a\udc00"}), ctx)
    assert other.state == "ok" and len(tool.calls) == 2
    assert fingerprint({"t": "\ud83d\ude00"}) != fingerprint({"t": "\U0001f600"})


@pytest.mark.parametrize(
    "result",
    [
        {b"report_\xff.pdf".decode("utf-8", "surrogateescape"): 1024},  # in a key
        {"stored_as": "upload_\udcff.bin"},  # in a value
    ],
)
def test_a_result_holding_a_lone_surrogate_is_kept_and_sendable(
    make_ledger: LedgerFactory, clock: FakeClock, result: dict[str, Any]
) -> None:
    ex = Executor(clock=clock, ledger=make_ledger(clock), breaker=False)
    ex.register("snapshot", lambda args: result, side_effects=True)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("snapshot", "c1", {}), ctx)
    assert first.state == "ok" and first.value == result
    first.content().encode("utf-8")  # what a provider client sends
    again = ex.execute(Call("snapshot", "c1", {}), ctx)
    assert again.state == "duplicate_suppressed" and again.value == result


def test_a_custom_ledger_handing_back_a_receipt_that_is_not_text_fails_closed(
    clock: FakeClock,
) -> None:
    class DecodingLedger(MemoryLedger):
        """A ledger that decodes receipts itself, against the `LedgerRecord` contract."""

        def claim(self, key: str, **options: Any) -> Any:
            found = super().claim(key, **options)
            if found.record is not None and found.record.receipt is not None:
                record = dataclasses.replace(found.record, receipt={"id": 1})
                found = dataclasses.replace(found, record=record)
            return found

    ex = Executor(clock=clock, ledger=DecodingLedger(clock=clock), breaker=False)
    ex.register("create", lambda args: {"id": 1}, side_effects=True)
    ctx = RequestContext("r", "s")
    assert ex.execute(Call("create", "c1", {}), ctx).state == "ok"
    again = ex.execute(Call("create", "c1", {}), ctx)
    assert again.state == "tool_unavailable"
    assert again.error is not None and again.error["type"] == "ledger_corrupt"
    assert ex.observer.counts["calls"] == 2


def test_a_forged_call_id_does_not_replay_another_tools_result(clock: FakeClock) -> None:
    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("refund", lambda args: {"refunded": 100}, side_effects=True)
    ex.register("lookup", lambda args: {"found": "own data"}, side_effects=True)
    ex.execute(Call("refund", "lookup\x1fc1", {}), RequestContext("r", "alice"))
    result = ex.execute(Call("lookup", "c1", {}), RequestContext("r", "alice\x1frefund"))
    assert result.state == "ok" and result.value == {"found": "own data"}


class _Line(BaseModel):
    sku: str
    qty: int
    price: float


class _Order(BaseModel):
    customer: str
    lines: list[_Line]
    card: SecretStr
    meta: dict[str, object]


def _pinned_order() -> _Order:
    return _Order(
        customer='Zoë "Z" \n',
        lines=[_Line(sku="a-1", qty=2, price=9.5), _Line(sku="😀", qty=10**30, price=1e21)],
        card=SecretStr("4111"),
        meta={"b": [None, True, 1.0, Decimal("2.50")], "a": {"z": -0.0, "é": 2**64}},
    )


_PINNED_PLAIN = {"to": "ops@example.com", "n": [1, 2.25, "x\u2028"], "deep": {"k": {"v": False}}}


def test_keys_and_digests_of_known_arguments_never_change() -> None:
    # Ledgers written by earlier versions hold these: a digest or a key that moved would make
    # every stored write look new (run again) or conflicting.
    order = _pinned_order()
    assert canonical_json(order) == (
        '{"card":"4111","customer":"Zoë \\"Z\\" \\n","lines":[{"price":9.5,"qty":2,"sku":"a-1"},'
        '{"price":1000000000000000000000,"qty":1000000000000000000000000000000,"sku":"😀"}],'
        '"meta":{"a":{"z":0,"é":18446744073709551616},"b":[null,true,1,2.5]}}'
    )
    assert canonical_json(_PINNED_PLAIN) == (
        '{"deep":{"k":{"v":false}},"n":[1,2.25,"x\u2028"],"to":"ops@example.com"}'
    )
    assert fingerprint(order) == "d4b38e79fe251e16e59740fb39a8d695d6dee195ddbda4e44112463d61c84ffc"
    assert fingerprint(order, b"k" * 16) == (
        "652bc7972845bada96c9a9c8561bedf780b3d97a246826f0b35c281c8ece2aad"
    )
    assert fingerprint(_PINNED_PLAIN) == (
        "023b37f7bec6454e3d9f792101f5aee6b8150524e083c9e39fb2f29de891a9c5"
    )
    assert fingerprint(_PINNED_PLAIN, b"k" * 16) == (
        "1801200225d099bd3f279a98a80b13a039c904c655297060176bb6090e275f89"
    )
    assert redacted_fingerprint(_PINNED_PLAIN, ["ops@example.com"]) == (
        "efd92723c8e4d5307173c6676bec4c56c90501b8782d7754a19883711f69bdba"
    )
    ex = Executor(ledger=MemoryLedger(), breaker=False)
    ex.register("send", lambda a: "sent", side_effects=True)
    ctx = RequestContext("req-1", "sess-1")
    sent = ex.execute(Call("send", "", order), ctx)
    assert (sent.state, sent.idempotency_key, sent.args_hash) == (
        "ok",
        "cce9384f6e87a8cb062323bf1d68491bfa7dba0c4f94b160b1daf7c7a7536f40",
        "2ea1d1c10e054348a3fbf5ac9a895a3d66ad78315bec023d19d06da2f569b2cb",
    )
    sent = ex.execute(Call("send", "", _PINNED_PLAIN), ctx)
    assert (sent.state, sent.idempotency_key, sent.args_hash) == (
        "ok",
        "0cdef52d0d017bda1c1534de9447bdf6b548a00d91a9d6e9b2238eb436f23dd3",
        "023b37f7bec6454e3d9f792101f5aee6b8150524e083c9e39fb2f29de891a9c5",
    )


def test_digests_cost_python_work_per_container_not_per_value() -> None:
    # Every call takes its digests: Python work for each string and number made a no-op tool
    # with 20 KB of arguments cost milliseconds.
    def arguments(size: int) -> dict[str, Any]:
        notes = {f"k{i}": "n" * 40 for i in range(size)}
        items = [{"name": f"w-{i}", "qty": i, "ok": True, "tags": ["a", None]} for i in range(4)]
        return {"items": items, "notes": [notes], "id": 7}

    def digests(size: int) -> Callable[[], object]:
        data = arguments(size)
        return lambda: (fingerprint(data), canonical_json(data), redacted_fingerprint(data))

    assert python_calls(digests(2000)) == python_calls(digests(1))


def test_digests_of_a_list_of_flat_objects_cost_no_python_work_per_object() -> None:
    # Rows (a list of objects of plain values) are the usual shape of a large argument.
    def digests(size: int) -> Callable[[], object]:
        rows = [{"sku": f"w-{i}", "qty": i, "gift": i % 2 == 0, "note": None} for i in range(size)]
        data = {"rows": rows, "by": "ann"}
        return lambda: (fingerprint(data), redacted_fingerprint(data))

    assert python_calls(digests(2000)) == python_calls(digests(1))
    assert canonical_json({"rows": [{"b": 1, "a": "x"}, {"c": None}]}) == (
        '{"rows":[{"a":"x","b":1},{"c":null}]}'
    )


class _Point(BaseModel):
    x: float
    y: float


class _Route(BaseModel):
    points: list[_Point]


def test_a_nested_models_digest_costs_few_python_calls_per_model() -> None:
    # Every call of a model's tool takes its digests: each nested model cost pydantic's
    # `model_fields` and `model_extra` descriptors (Python calls), and each float a walk
    # through the Decimal encoder.
    def per_point(take: Callable[[Any], object]) -> float:
        def run(size: int) -> int:
            data = _Route(points=[_Point(x=i + 0.5, y=-i / 3) for i in range(size)])
            return python_calls(lambda: take(data))

        return (run(101) - run(1)) / 100

    assert per_point(lambda data: fingerprints(data)) <= 10
    data = _Route(points=[_Point(x=1.0, y=-0.0), _Point(x=1e16, y=1.5e-7)])
    assert canonical_json(data) == (
        '{"points":[{"x":1,"y":0},{"x":10000000000000000,"y":0.00000015}]}'
    )


def test_floats_are_written_as_their_shortest_repr_read_exactly() -> None:
    # The fast path writes a fixed-point repr as it stands: every other form goes through
    # the Decimal, and both agree wherever the fast path applies.
    rnd = random.Random(5)
    edges = [0.0, -0.0, 1.0, -2.0, 0.1, 1e-4, 9.999e-5, 1e15, 1e16, 9999999999999998.0]
    edges += [5e-324, 1.7976931348623157e308, 123.456, -0.5, 1e100, 1e101, 1e-101]
    drawn = [rnd.uniform(-1, 1) * 10 ** rnd.randrange(-30, 30) for _ in range(2000)]
    for value in edges + drawn:
        text = repr(value)
        exact = Decimal(text)
        assert canonical_json(value) == canonical_json(exact), text
        assert Decimal(canonical_json(value)) == exact, text
    assert canonical_json([float("nan"), float("inf"), -float("inf")]) == (
        '["NaN","Infinity","-Infinity"]'
    )


# ---- ledger contract, every backend ---------------------------------------------------------


def claim(ledger: Any, key: str = "k", fp: str = "f1", **kw: Any) -> Any:
    options: dict[str, Any] = {"lease": 60.0, "ttl": DAY}
    options.update(kw)
    return ledger.claim(key, fingerprint=fp, tool="t", **options)


def test_ledger_claim_complete_replay(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger)
    assert first.status == "claimed" and first.token
    assert claim(ledger).status == "in_progress"
    ledger.complete("k", first.token, {"id": 7, "items": [], "n": 1.5})
    replay = claim(ledger)
    assert replay.status == "replay"
    assert replay.record.receipt_value() == {"id": 7, "items": [], "n": 1.5}
    record = ledger.get("k")
    assert record is not None and record.state == "succeeded" and record.executions == 1


def test_results_with_lone_surrogates_are_stored_on_every_ledger(
    make_ledger: LedgerFactory, clock: FakeClock
) -> None:
    # A file name decoded with surrogateescape, next to text that stays UTF-8.
    odd = {"stored_as": b"upload_\xff.bin".decode("utf-8", "surrogateescape"), "city": "東京"}
    ledger = make_ledger(clock)
    first = claim(ledger)
    ledger.complete("k", first.token, odd)
    replay = claim(ledger)
    assert replay.status == "replay" and replay.record.receipt_value() == odd
    failing = claim(ledger, key="f")
    ledger.fail("f", failing.token, {"type": "x", "message": "\ud800 broke"}, retryable=False)
    record = ledger.get("f")
    assert record is not None and record.error_value() == {"type": "x", "message": "\ud800 broke"}


def test_ledger_conflict_on_different_fingerprint(
    make_ledger: LedgerFactory, clock: FakeClock
) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger)
    assert claim(ledger, fp="other").status == "conflict"
    ledger.complete("k", first.token, 1)
    assert claim(ledger, fp="other").status == "conflict"


def test_ledger_release_frees_the_key(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger)
    ledger.release("k", first.token)
    assert ledger.get("k") is None
    assert claim(ledger).status == "claimed"


def test_ledger_failed_records(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger, key="perm")
    ledger.fail("perm", first.token, {"type": "business_rule"})
    replay = claim(ledger, key="perm")
    assert replay.status == "replay" and replay.record.error_value() == {"type": "business_rule"}
    second = claim(ledger, key="transient")
    ledger.fail("transient", second.token, {"type": "rate_limited"}, retryable=True)
    again = claim(ledger, key="transient")
    assert again.status == "claimed" and again.record.executions == 2
    third = claim(ledger, key="unknown")
    ledger.fail("unknown", third.token, {"type": "timeout"}, unknown=True)
    assert claim(ledger, key="unknown").status == "unknown"


def test_ledger_rejects_foreign_tokens(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger)
    with pytest.raises(ClaimLost):
        ledger.complete("k", "not-the-token", 1)
    ledger.complete("k", first.token, 1)
    ledger.complete("k", first.token, 1)  # a retried finish is a no-op ...
    with pytest.raises(ClaimLost):  # ... but a different outcome is refused
        ledger.fail("k", first.token, {"type": "late"})
    ledger.release("gone", "x")  # releasing what is not held is a no-op
    record = ledger.get("k")
    assert record is not None and record.state == "succeeded" and record.receipt_value() == 1


def test_ledger_keeps_records_for_the_ttl_then_forgets(
    make_ledger: LedgerFactory, clock: FakeClock
) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger)
    ledger.complete("k", first.token, "r", ttl=DAY)
    clock.advance(DAY - 60)
    assert claim(ledger).status == "replay"
    clock.advance(120)
    # Replay after the TTL is treated as new (documented behaviour).
    assert ledger.get("k") is None
    assert claim(ledger).status == "claimed"


@pytest.mark.parametrize(
    ("policy", "status", "state"),
    [
        ("report", "stale", "unknown"),
        ("assume_failed_and_retry", "claimed", "in_progress"),
        ("assume_succeeded", "replay", "succeeded"),
    ],
)
def test_ledger_stale_in_progress_policies(
    make_ledger: LedgerFactory, clock: FakeClock, policy: str, status: str, state: str
) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger, lease=30.0)
    clock.advance(10)
    assert claim(ledger, lease=30.0, on_stale=policy).status == "in_progress"
    clock.advance(25)
    stale = claim(ledger, lease=30.0, on_stale=policy)
    assert stale.status == status
    assert stale.record.state == state
    record = ledger.get("k")
    assert record is not None and record.state == state
    if policy == "assume_failed_and_retry":
        assert stale.recovered and record.executions == 2
        with pytest.raises(ClaimLost):  # the crashed owner can no longer finish
            ledger.complete("k", first.token, 1)
        ledger.complete("k", stale.token, 2)
    if policy == "report":
        assert claim(ledger, lease=30.0).status == "unknown"
    if policy == "assume_succeeded":
        assert record.assumed


@pytest.mark.parametrize("policy", ["report", "assume_succeeded", "assume_failed_and_retry"])
def test_ledger_stale_claim_outlives_a_ttl_shorter_than_its_lease(
    make_ledger: LedgerFactory, clock: FakeClock, policy: str
) -> None:
    # A crashed claim must reach the stale policy, not vanish with the retention and come back
    # as a fresh claim that executes the write again unnoticed.
    ledger = make_ledger(clock)
    claim(ledger, lease=60.0, ttl=30.0)
    clock.advance(61)
    stale = claim(ledger, lease=60.0, ttl=30.0, on_stale=policy)
    assert stale.status != "claimed" or stale.recovered
    assert stale.record.executions == (2 if policy == "assume_failed_and_retry" else 1)
    clock.advance(29)  # the settled record then lives for its TTL
    assert ledger.get("k") is not None
    # A claim re-taken after a retryable failure, whose worker then crashes, is found stale too.
    first = claim(ledger, key="r", lease=60.0, ttl=30.0)
    ledger.fail("r", first.token, {"type": "rate_limited"}, retryable=True, ttl=30.0)
    assert claim(ledger, key="r", lease=60.0, ttl=30.0).status == "claimed"
    clock.advance(61)
    assert claim(ledger, key="r", lease=60.0, ttl=30.0).status == "stale"


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [
        ("report", "complete"),
        ("report", "fail"),
        ("assume_succeeded", "complete"),
        ("assume_succeeded", "fail"),
    ],
)
def test_ledger_slow_owner_records_its_outcome_over_a_stale_assumption(
    make_ledger: LedgerFactory, clock: FakeClock, policy: str, outcome: str
) -> None:
    # The owner is slow, not dead: its lease ran out and a stale-claim policy settled the record
    # by assumption, but nobody else executed. The owner's real outcome must land (no ClaimLost,
    # which the executor reports as a possible duplicate execution).
    ledger = make_ledger(clock)
    first = claim(ledger, lease=30.0)
    clock.advance(31)
    assert claim(ledger, lease=30.0, on_stale=policy).status in ("stale", "replay")
    if outcome == "complete":
        ledger.complete("k", first.token, {"id": 1})
        ledger.complete("k", first.token, {"id": 1})  # a retried finish is still a no-op
        replay = claim(ledger, on_stale=policy)
        assert replay.status == "replay" and replay.record.receipt_value() == {"id": 1}
        assert not replay.record.assumed
    else:
        ledger.fail("k", first.token, {"type": "business_rule"})
        replay = claim(ledger, on_stale=policy)
        assert replay.status == "replay" and replay.record.state == "failed"
        assert replay.record.error_value() == {"type": "business_rule"}
    with pytest.raises(ClaimLost):  # once observed, a different outcome is refused again
        ledger.release("k", first.token)


def test_ledger_renew_keeps_a_long_running_claim_live(
    make_ledger: LedgerFactory, clock: FakeClock
) -> None:
    # The owner renews at a third of its lease: past the first lease's end, an identical claim
    # still finds the write in progress, and the stale policy (which could run it again) is not
    # consulted.
    ledger = make_ledger(clock)
    first = claim(ledger, lease=30.0, ttl=60.0)
    for _ in range(6):
        clock.advance(10)
        ledger.renew("k", first.token, 30.0, ttl=60.0)
        assert claim(ledger, lease=30.0, on_stale="assume_failed_and_retry").status == (
            "in_progress"
        )
    record = ledger.get("k")
    assert record is not None and record.state == "in_progress" and record.executions == 1
    assert record.lease_expires_at == pytest.approx(clock.time() + 30.0)
    # Retention stays past the lease, as for a claim: a crash now is still found stale.
    assert record.expires_at >= record.lease_expires_at + 60.0
    clock.advance(31)
    assert claim(ledger, lease=30.0, ttl=60.0).status == "stale"


def test_ledger_renew_never_shortens_a_lease(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger, lease=60.0)
    ledger.renew("k", first.token, 5.0)
    clock.advance(30)
    assert claim(ledger, lease=60.0).status == "in_progress"


def test_ledger_renew_of_a_lapsed_lease_nobody_acted_on(
    make_ledger: LedgerFactory, clock: FakeClock
) -> None:
    # The lease ran out, but no claim saw it: nobody was told the write was stale, so its owner
    # (a paused process, say) may take it up again.
    ledger = make_ledger(clock)
    first = claim(ledger, lease=30.0)
    clock.advance(45)
    ledger.renew("k", first.token, 30.0)
    assert claim(ledger, lease=30.0, on_stale="assume_failed_and_retry").status == "in_progress"
    ledger.complete("k", first.token, {"id": 1})
    assert claim(ledger).status == "replay"


@pytest.mark.parametrize(
    "lost_by", ["foreign", "completed", "released", "taken_over", "reported", "assumed"]
)
def test_ledger_renew_refuses_a_claim_no_longer_owned(
    make_ledger: LedgerFactory, clock: FakeClock, lost_by: str
) -> None:
    ledger = make_ledger(clock)
    first = claim(ledger, lease=30.0)
    token = first.token
    if lost_by == "foreign":
        token = "not-the-token"
    elif lost_by == "completed":
        ledger.complete("k", first.token, 1)
    elif lost_by == "released":
        ledger.release("k", first.token)
    else:
        policy = {
            "taken_over": "assume_failed_and_retry",
            "reported": "report",
            "assumed": "assume_succeeded",
        }[lost_by]
        clock.advance(31)
        later = claim(ledger, lease=30.0, on_stale=policy)
        assert later.status in ("claimed", "stale", "replay")
    before = ledger.get("k")
    with pytest.raises(ClaimLost):
        ledger.renew("k", token, 30.0)
    assert ledger.get("k") == before  # refused renewals change nothing
    if lost_by == "taken_over":
        # The new owner renews; the old token can still not finish.
        assert before is not None and before.token != first.token
        ledger.renew("k", before.token, 30.0)
        with pytest.raises(ClaimLost):
            ledger.complete("k", first.token, 1)
    if lost_by in ("reported", "assumed"):
        # Settled by assumption while the owner ran: it no longer holds the key, but what it
        # observed still replaces the assumption (see decide_finish).
        ledger.complete("k", first.token, {"id": 1})
        assert claim(ledger).record.receipt_value() == {"id": 1}


def test_ledger_renew_rule_is_pure() -> None:
    record = LedgerRecord(
        key="k",
        state="in_progress",
        fingerprint="f",
        tool="t",
        token="tok",
        created_at=100.0,
        updated_at=100.0,
        lease_expires_at=130.0,
        expires_at=190.0,
    )
    renewed = decide_renew(record, key="k", token="tok", now=120.0, lease=30.0, ttl=60.0)
    assert (renewed.lease_expires_at, renewed.expires_at, renewed.updated_at) == (150, 210, 120)
    assert dataclasses.replace(
        renewed, lease_expires_at=130.0, expires_at=190.0, updated_at=100.0
    ) == (record)
    for gone in (
        None,
        dataclasses.replace(record, token="other"),
        dataclasses.replace(record, state="unknown", assumed=True),
        dataclasses.replace(record, expires_at=120.0),
    ):
        with pytest.raises(ClaimLost):
            decide_renew(gone, key="k", token="tok", now=120.0, lease=30.0, ttl=60.0)


def test_ledger_rejects_overlong_keys(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    assert claim(ledger, key="x" * 255).status == "claimed"
    with pytest.raises(ValueError, match="255"):
        claim(ledger, key="x" * 256)


def test_ledger_threads_claim_exactly_once(make_ledger: LedgerFactory, clock: FakeClock) -> None:
    ledger = make_ledger(clock)
    barrier = threading.Barrier(16)
    statuses: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        status = claim(ledger, key="race").status
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == ["claimed"] + ["in_progress"] * 15


def test_record_decoding_rejects_garbage() -> None:
    with pytest.raises(LedgerCorrupt):
        LedgerRecord.from_json("{not json")
    with pytest.raises(LedgerCorrupt):
        LedgerRecord.from_json('{"state": "exploded"}')


# ---- through the executor ---------------------------------------------------------------------


class Counter:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __call__(self, args: Any) -> dict[str, Any]:
        self.calls.append(args)
        return {"ticket": len(self.calls)}


def writer(clock: FakeClock, **options: Any) -> tuple[Executor, Counter]:
    tool = Counter()
    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("create_ticket", tool, side_effects=True, **options)
    return ex, tool


def test_same_call_twice_executes_once(clock: FakeClock) -> None:
    ex, tool = writer(clock)
    ctx = RequestContext("r1", "session-1")
    first = ex.execute(Call("create_ticket", "call_1", {"title": "a"}), ctx)
    second = ex.execute(Call("create_ticket", "call_1", {"title": "a"}), ctx)
    assert first.state == "ok" and second.state == "duplicate_suppressed"
    assert second.value == first.value == {"ticket": 1} and second.ok
    assert second.attempts == 0 and len(tool.calls) == 1
    assert first.idempotency_key == second.idempotency_key
    assert first.idempotency_key is not None and len(first.idempotency_key) == 64
    assert second.to_payload() == {"ok": True, "result": {"ticket": 1}, "replayed": True}
    assert ex.observer.counts["duplicates_suppressed"] == 1


def test_same_key_different_arguments_is_a_typed_conflict(clock: FakeClock) -> None:
    ex, tool = writer(clock)
    ctx = RequestContext("r1", "s")
    ex.execute(Call("create_ticket", "call_1", {"title": "a"}), ctx)
    result = ex.execute(Call("create_ticket", "call_1", {"title": "b"}), ctx)
    assert result.state == "escalated"
    assert result.error is not None and result.error["type"] == "idempotency_conflict"
    assert len(tool.calls) == 1
    with pytest.raises(IdempotencyConflict) as info:
        result.raise_for_error()
    assert info.value.fingerprint == result.args_hash != info.value.stored_fingerprint


def test_other_sessions_and_call_ids_execute(clock: FakeClock) -> None:
    ex, tool = writer(clock)
    ex.execute(Call("create_ticket", "call_1", {"t": 1}), RequestContext("r", "s1"))
    ex.execute(Call("create_ticket", "call_1", {"t": 1}), RequestContext("r", "s2"))
    ex.execute(Call("create_ticket", "call_2", {"t": 1}), RequestContext("r", "s1"))
    assert len(tool.calls) == 3


def test_business_key_dedupes_across_calls_and_sessions(clock: FakeClock) -> None:
    ex, tool = writer(clock, idempotency_key="order_id")
    a = ex.execute(Call("create_ticket", "c1", {"order_id": "o-9"}), RequestContext("r", "s1"))
    b = ex.execute(Call("create_ticket", "c2", {"order_id": "o-9"}), RequestContext("r", "s2"))
    assert a.state == "ok" and b.state == "duplicate_suppressed" and len(tool.calls) == 1


def test_concurrent_duplicate_gets_in_progress(clock: FakeClock) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(args: Any) -> str:
        entered.set()
        release.wait(5)
        return "done"

    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("w", slow, side_effects=True)
    ctx = RequestContext("r", "s")
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(ex.execute(Call("w", "c", {}), ctx)))
    thread.start()
    assert entered.wait(5)
    second = ex.execute(Call("w", "c", {}), ctx)
    release.set()
    thread.join()
    assert second.state == "in_progress" and second.attempts == 0
    with pytest.raises(IdempotencyInProgress):
        second.raise_for_error()
    # A model calls again with a new call id, which is a new key: the write would run twice.
    assert second.error is not None and second.error["retryable"] is False
    assert "retry_after" not in second.error
    assert results[0].state == "ok"


def test_in_progress_under_a_business_key_is_retryable_after_the_lease(
    clock: FakeClock,
) -> None:
    entered, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def slow(args: Any) -> str:
        runs.append(args["order"])
        entered.set()
        assert release.wait(5)
        return "charged"

    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("charge", slow, side_effects=True, idempotency_key="order", in_progress_expiry=40)
    ctx = RequestContext("r", "s")
    results: list[Any] = []
    thread = threading.Thread(
        target=lambda: results.append(ex.execute(Call("charge", "c1", {"order": "o-1"}), ctx))
    )
    thread.start()
    assert entered.wait(5)
    clock.advance(10)  # under a third of the lease: no renewal yet (it would move the end)
    # The model's retry has a new call id but the same order: it lands on the same record.
    busy = ex.execute(Call("charge", "c2", {"order": "o-1"}), ctx)
    assert busy.state == "in_progress" and busy.error is not None
    assert busy.error["retryable"] is True and busy.error["retry_after"] == 30.0
    release.set()
    thread.join(5)
    again = ex.execute(Call("charge", "c3", {"order": "o-1"}), ctx)
    assert again.state == "duplicate_suppressed" and again.value == "charged"
    assert results[0].state == "ok" and runs == ["o-1"]


def test_replay_after_ttl_executes_again(clock: FakeClock) -> None:
    ex, tool = writer(clock, record_ttl=DAY)
    ctx = RequestContext("r", "s")
    ex.execute(Call("create_ticket", "c", {}), ctx)
    clock.advance(DAY - 1)
    assert ex.execute(Call("create_ticket", "c", {}), ctx).state == "duplicate_suppressed"
    clock.advance(2)
    assert ex.execute(Call("create_ticket", "c", {}), ctx).state == "ok"
    assert len(tool.calls) == 2


def test_default_retention_is_at_least_24_hours(clock: FakeClock) -> None:
    ex, tool = writer(clock)
    ctx = RequestContext("r", "s")
    ex.execute(Call("create_ticket", "c", {}), ctx)
    clock.advance(DAY - 1)
    assert ex.execute(Call("create_ticket", "c", {}), ctx).state == "duplicate_suppressed"
    assert len(tool.calls) == 1


def test_business_rejection_is_replayed_not_re_executed(clock: FakeClock) -> None:
    from toolwire.execution import BusinessRuleError

    calls = 0

    def reject(args: Any) -> None:
        nonlocal calls
        calls += 1
        raise BusinessRuleError("account frozen")

    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ex.register("w", reject, side_effects=True)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("w", "c", {}), ctx)
    second = ex.execute(Call("w", "c", {}), ctx)
    assert first.state == "downstream_failed" and second.state == "duplicate_suppressed"
    assert second.error == first.error and not second.ok and calls == 1


class _BlinkingLedger(MemoryLedger):
    """Fails the first ``failures`` steps that record an outcome, as a store does through a
    reset connection or a failover."""

    def __init__(self, clock: FakeClock, failures: int) -> None:
        super().__init__(clock=clock)
        self.failures = failures
        self.tries = 0

    def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
        self.tries += 1
        if self.tries <= self.failures:
            raise LedgerUnavailable("connection reset by peer")
        super()._finish(key, token, ttl, state, **kwargs)


class _Busy(Exception):
    status_code = 503


@pytest.mark.parametrize("outcome", ["succeeded", "refused", "released"])
def test_a_blip_while_recording_the_outcome_does_not_leave_the_claim_in_progress(
    clock: FakeClock, outcome: str
) -> None:
    runs: list[int] = []

    def write(args: Any) -> str:
        runs.append(1)
        if outcome == "refused" and len(runs) == 1:
            raise _Busy("try later")  # not processed: a later call may run it
        if outcome == "released" and len(runs) == 1:
            raise NeedsClarification("which account?")  # the claim is given back
        return "written"

    ledger = _BlinkingLedger(clock, failures=2)
    ex = Executor(clock=clock, ledger=ledger, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register("w", write, side_effects=True)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("w", "c", {}), ctx)
    assert first.warnings == () and ex.observer.counts["ledger_errors"] == 0
    assert ledger.tries == 3, "tried until the store answered"
    # The same call again gets what happened, not "still executing" for a whole lease and
    # then an unknown outcome for good.
    again = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    if outcome == "succeeded":
        assert again.state == "duplicate_suppressed" and again.value == "written"
        assert runs == [1]
    else:
        assert again.state == "ok" and runs == [1, 1]


def test_a_store_down_for_good_is_tried_three_times_then_reported(clock: FakeClock) -> None:
    ledger = _BlinkingLedger(clock, failures=1000)
    ex = Executor(clock=clock, ledger=ledger, breaker=False)
    ex.register("w", lambda args: "written", side_effects=True)
    result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert result.state == "ok" and result.value == "written"
    assert len(result.warnings) == 1 and "ledger update failed" in result.warnings[0]
    assert ex.observer.counts["ledger_errors"] == 1 and ledger.tries == 3
    assert clock.sleeps == [0.05, 0.1], "paced by the executor's clock"


def _until(predicate: Callable[[], bool], clock: FakeClock, step: float) -> None:
    """Move ``clock`` by ``step`` until ``predicate`` holds, giving the executor's background
    thread a few real milliseconds after each move to act on it."""
    deadline = time.monotonic() + 10
    while not predicate():
        assert time.monotonic() < deadline, "the background retry never landed"
        clock.advance(step)
        pause = time.monotonic() + 0.2
        while not predicate() and time.monotonic() < pause:
            time.sleep(0.002)


@pytest.mark.parametrize("outcome", ["succeeded", "released"])
def test_an_outcome_the_store_could_not_record_is_kept_and_recorded_later(
    clock: FakeClock, outcome: str
) -> None:
    runs: list[int] = []

    def write(args: Any) -> str:
        runs.append(1)
        if outcome == "released" and len(runs) == 1:
            raise NeedsClarification("which account?")  # nothing ran: the claim is given back
        return "written"

    ledger = _BlinkingLedger(clock, failures=5)  # past the call's 3 tries
    ex = Executor(clock=clock, ledger=ledger, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register("w", write, side_effects=True, in_progress_expiry=60)
    first = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert first.unrecorded and ledger.tries == 3
    assert len(first.warnings) == 1 and "not durable" in first.warnings[0]
    if outcome == "succeeded":
        assert first.state == "ok" and first.value == "written", "the result is never lost"
    else:
        assert first.state == "needs_clarification"
    assert first.idempotency_key is not None
    held = ledger.get(first.idempotency_key)
    assert held is not None and held.state == "in_progress"
    # Tried again in the background until the store answers, well within the lease.
    _until(lambda: ledger.tries >= 6, clock, 5.0)
    settled = ledger.get(first.idempotency_key)
    assert ex.observer.counts["outcomes_recorded_late"] == 1
    assert clock.time() < held.lease_expires_at, "recorded before the lease ran out"
    again = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert not again.unrecorded
    if outcome == "succeeded":
        assert settled is not None and settled.state == "succeeded"
        assert again.state == "duplicate_suppressed" and again.value == "written"
        assert runs == [1]
    else:
        assert settled is None, "the claim was given back"
        assert again.state == "ok" and runs == [1, 1]


def test_an_outcome_recorded_late_replaces_the_unknown_a_stale_claim_reported(
    clock: FakeClock,
) -> None:
    ledger = _BlinkingLedger(clock, failures=10**6)  # down for longer than the lease
    ex, elsewhere = (
        Executor(clock=clock, ledger=ledger, breaker=False, retry=RetryPolicy(max_attempts=1))
        for _ in range(2)
    )
    for executor in (ex, elsewhere):
        executor.register("w", lambda args: "written", side_effects=True, in_progress_expiry=3)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("w", "c", {}), ctx)
    assert first.state == "ok" and first.value == "written" and first.unrecorded
    clock.advance(4)  # the lease lapsed while the store was down
    # Another executor (process), which does not hold the outcome, meets the stale policy.
    stale = elsewhere.execute(Call("w", "c", {}), ctx)
    assert stale.state == "unknown_outcome"
    ledger.failures = 0  # the store is back: the owner's late record tells what happened
    assert first.idempotency_key is not None
    key = first.idempotency_key

    def recorded() -> bool:
        record = ledger.get(key)
        return record is not None and record.state == "succeeded"

    _until(recorded, clock, 1.0)
    again = ex.execute(Call("w", "c", {}), ctx)
    assert again.state == "duplicate_suppressed" and again.value == "written"


def test_no_try_of_the_outcome_begins_once_nobody_waits_for_it(clock: FakeClock) -> None:
    class SlowToFail(_BlinkingLedger):
        def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
            clock.advance(0.6)  # each try takes this long to fail
            super()._finish(key, token, ttl, state, **kwargs)

    ledger = SlowToFail(clock, failures=1000)
    ex = Executor(clock=clock, ledger=ledger, breaker=False)

    def write(args: Any) -> str:
        clock.advance(1.0)  # past the deadline: the step gets the 1 s grace
        return "written"

    ex.register("w", write, side_effects=True)
    deadline = clock.monotonic() + 0.5
    result = ex.execute(Call("w", "c", {}), RequestContext("r", "s", deadline=deadline))
    assert result.state == "ok" and ledger.tries == 2, "a third try would begin past the grace"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_outcome_step_abandoned_at_the_deadline_that_fails_later_is_recorded_later(
    clock: FakeClock, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store hangs on the outcome past the request's deadline (and its grace): the call
    # returns its result, and the step it left behind fails once the store answers. The
    # outcome must then be tried again in the background until it lands.
    monkeypatch.setattr(executor_module, "_SETTLE_GRACE", 0.05)  # real seconds to wait
    gate, entered = threading.Event(), threading.Event()

    class HangsThenFails(_BlinkingLedger):
        blocking = True

        def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
            if self.tries == 0:
                entered.set()
                assert gate.wait(10)
            super()._finish(key, token, ttl, state, **kwargs)

    ledger = HangsThenFails(clock, failures=4)  # every try of the abandoned step, and one more
    ex = Executor(clock=clock, ledger=ledger, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register("w", lambda args: "written", side_effects=True, in_progress_expiry=60)
    ctx = RequestContext("r", "s", deadline=clock.monotonic() + 0.01)
    call = Call("w", "c", {})
    if mode == "sync":
        result = ex.execute(call, ctx)
    else:
        result = asyncio.run(ex.aexecute(call, ctx))
    assert entered.is_set() and result.state == "ok" and result.value == "written"
    assert result.unrecorded and ex.observer.counts["ledger_errors"] == 1
    assert len(result.warnings) == 1 and "did not answer" in result.warnings[0]
    assert result.idempotency_key is not None
    key = result.idempotency_key
    gate.set()  # the store answers the abandoned step: it fails, as do its own retries

    def recorded() -> bool:
        record = ledger.get(key)
        return record is not None and record.state == "succeeded"

    _until(recorded, clock, 5.0)
    assert ex.observer.counts["outcomes_recorded_late"] == 1
    again = ex.execute(call, RequestContext("r", "s"))
    assert again.state == "duplicate_suppressed" and again.value == "written"


def test_a_large_number_spelled_as_integer_or_exponent_is_one_argument(clock: FakeClock) -> None:
    # A dict tool gets json.loads values: "1e200" is a float, 1 and 200 zeros an int.
    ex, tool = writer(clock)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("create_ticket", "c", json.loads('{"n": 1e200}')), ctx)
    again = ex.execute(Call("create_ticket", "c", json.loads('{"n": 1%s}' % ("0" * 200))), ctx)
    assert first.state == "ok" and again.state == "duplicate_suppressed"
    assert first.args_hash == again.args_hash and len(tool.calls) == 1


def test_missing_call_id_falls_back_to_argument_fingerprint(clock: FakeClock) -> None:
    ex, tool = writer(clock)
    ctx = RequestContext("r", "s")
    ex.execute(Call("create_ticket", None, {"t": 1}), ctx)
    assert ex.execute(Call("create_ticket", None, {"t": 1}), ctx).state == "duplicate_suppressed"
    assert ex.execute(Call("create_ticket", None, {"t": 2}), ctx).state == "ok"
    assert len(tool.calls) == 2


@pytest.mark.parametrize(
    ("policy", "state", "executions"),
    [
        ("report", "unknown_outcome", 0),
        ("assume_failed_and_retry", "ok", 1),
        ("assume_succeeded", "duplicate_suppressed", 0),
    ],
)
def test_stale_claim_through_the_executor(
    clock: FakeClock, policy: Any, state: str, executions: int
) -> None:
    ex, tool = writer(clock, in_progress_expiry=60.0, on_stale_in_progress=policy)
    ctx = RequestContext("r", "s")
    key = derive_key(tool="create_ticket", session_id="s", call_id="c")
    # A crashed worker: claimed, never finished.
    ex.ledger.claim(key, fingerprint=fingerprint({}), tool="create_ticket", lease=60.0)
    assert ex.execute(Call("create_ticket", "c", {}), ctx).state == "in_progress"
    clock.advance(61)
    result = ex.execute(Call("create_ticket", "c", {}), ctx)
    assert result.state == state and len(tool.calls) == executions
    assert ex.observer.counts["stale_in_progress"] == 1
    assert result.duplicate_execution is (policy == "assume_failed_and_retry")


class _Unrenewable(MemoryLedger):
    """A store that refuses every renewal: a lease runs out as it was claimed, as it does for
    a worker that could not reach the store (or was paused) for a whole lease."""

    def renew(self, key: str, token: str, lease: float, *, ttl: float = DAY) -> None:
        raise LedgerUnavailable("renewals refused")


def _second_call_past_a_live_lease(
    clock: FakeClock, **options: Any
) -> tuple[Executor, list[int], Any, Any]:
    """A write still running past its 10 s lease, which it could not renew, and an identical
    call made meanwhile: the executor, the executions, the first call's result and the
    second call's."""
    started, release = threading.Event(), threading.Event()
    runs: list[int] = []

    def slow_write(arguments: Any) -> dict[str, int]:
        runs.append(1)
        if len(runs) == 1:
            started.set()
            assert release.wait(5)
        return {"ticket": len(runs)}

    ex = Executor(clock=clock, ledger=_Unrenewable(clock=clock), breaker=False)
    ex.register("create_ticket", slow_write, side_effects=True, in_progress_expiry=10.0, **options)
    ctx = RequestContext("r", "s")
    results: list[Any] = []
    worker = threading.Thread(
        target=lambda: results.append(ex.execute(Call("create_ticket", "c", {}), ctx))
    )
    worker.start()
    assert started.wait(5)
    clock.advance(11)
    second = ex.execute(Call("create_ticket", "c", {}), ctx)
    release.set()
    worker.join(5)
    return ex, runs, results[0], second


def test_slow_write_past_its_lease_is_not_reported_as_a_duplicate(clock: FakeClock) -> None:
    # Under the default `report` policy a second call finds the first one's lease expired and
    # answers unknown_outcome without executing: the write ran once, and its success is kept.
    ex, runs, first, second = _second_call_past_a_live_lease(clock)
    assert second.state == "unknown_outcome"
    assert first.state == "ok" and not first.duplicate_execution and first.warnings == ()
    assert ex.observer.counts["duplicate_executions"] == 0 and len(runs) == 1
    again = ex.execute(Call("create_ticket", "c", {}), RequestContext("r", "s"))
    assert again.state == "duplicate_suppressed" and again.value == {"ticket": 1}


def test_crashed_write_with_short_retention_is_reported_not_rerun(clock: FakeClock) -> None:
    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False, record_ttl=30.0)
    runs: list[int] = []
    ex.register("w", lambda _: runs.append(1), side_effects=True, in_progress_expiry=60.0)
    key = derive_key(tool="w", session_id="s", call_id="c")
    # A worker claimed, ran the side effect and crashed before recording it.
    ex.ledger.claim(key, fingerprint=fingerprint({}), tool="w", lease=60.0, ttl=30.0)
    clock.advance(61)
    result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert result.state == "unknown_outcome" and runs == []
    assert ex.observer.counts["stale_in_progress"] == 1


def test_default_lease_covers_retries_that_honour_retry_after(clock: FakeClock) -> None:
    # Two 429s asking for 29 s each (under max_retry_after), attempts near their 5 s timeout:
    # the owner is still within its retry policy, so an identical call must see it in progress
    # rather than a stale claim (which assume_failed_and_retry would execute a second time).
    request = httpx.Request("POST", "http://127.0.0.1/")
    runs: list[str] = []
    ex = Executor(clock=clock, ledger=MemoryLedger(clock=clock), breaker=False)
    ctx = RequestContext("r", "s")

    def charge(args: Any) -> str:
        runs.append("attempt")
        clock.advance(4.9)
        if len(runs) < 3:
            limited = httpx.Response(429, headers={"Retry-After": "29"}, request=request)
            raise httpx.HTTPStatusError("429", request=request, response=limited)
        if len(runs) == 3:
            runs.append(ex.execute(Call("charge", "c", {}), ctx).state)
        return "charged"

    ex.register(
        "charge",
        charge,
        side_effects=True,
        timeout=5.0,
        on_stale_in_progress="assume_failed_and_retry",
    )
    result = ex.execute(Call("charge", "c", {}), ctx)
    assert result.state == "ok" and result.attempts == 3 and not result.duplicate_execution
    assert runs == ["attempt", "attempt", "attempt", "in_progress"] and len(clock.sleeps) == 2
    assert all(29 <= s <= 29 + ex.retry.backoff_max for s in clock.sleeps)


def test_one_takeover_of_a_live_claim_counts_one_duplicate_execution(clock: FakeClock) -> None:
    # The first worker outlives its lease; a second takes the claim over and runs the write
    # again. That is one repeated execution: the taker reports it, and the first worker, whose
    # execution came first and who then finds its claim lost, must not count it a second time.
    ex, runs, first, taker = _second_call_past_a_live_lease(
        clock, on_stale_in_progress="assume_failed_and_retry"
    )
    assert taker.state == "ok" and taker.duplicate_execution and len(runs) == 2
    assert first.state == "ok" and not first.duplicate_execution
    assert any("taken over" in w for w in first.warnings)
    assert ex.observer.counts["duplicate_executions"] == 1
    assert ex.observer.counts["stale_in_progress"] == 1


def test_takeover_that_runs_nothing_is_no_duplicate_execution(clock: FakeClock) -> None:
    # A stale claim taken over by a call that the open breaker stops: nothing ran again.
    runs: list[str] = []

    def write(arguments: Any) -> str:
        runs.append(arguments["id"])
        if arguments["id"] == "trip":
            raise ConnectionError("down")
        return "written"

    ex = Executor(
        clock=clock,
        ledger=MemoryLedger(clock=clock),
        breaker=BreakerConfig(minimum_calls=1, window_size=1, open_duration=600),
    )
    ex.register(
        "w",
        write,
        side_effects=True,
        in_progress_expiry=60.0,
        on_stale_in_progress="assume_failed_and_retry",
    )
    ctx = RequestContext("r", "s")
    key = derive_key(tool="w", session_id="s", call_id="c")
    ex.ledger.claim(key, fingerprint=fingerprint({"id": "c"}), tool="w", lease=60.0)
    clock.advance(61)
    assert ex.execute(Call("w", "t", {"id": "trip"}), ctx).state == "unknown_outcome"
    result = ex.execute(Call("w", "c", {"id": "c"}), ctx)
    assert result.state == "tool_unavailable" and runs == ["trip"]
    assert not result.duplicate_execution
    assert ex.observer.counts["stale_in_progress"] == 1
    assert ex.observer.counts["duplicate_executions"] == 0


class _Charge(BaseModel):
    order_id: str
    card_token: SecretStr


def test_calls_differing_only_in_a_secret_are_different_writes() -> None:
    # Pydantic writes every SecretStr as the same mask: fingerprinted so, a second charge with
    # another card was answered with the first charge's result.
    assert fingerprint({"k": SecretStr("a")}) != fingerprint({"k": SecretStr("b")})
    assert fingerprint({"k": SecretStr("a")}) == fingerprint({"k": "a"})
    charged: list[str] = []

    def charge(args: _Charge) -> dict[str, int]:
        charged.append(args.card_token.get_secret_value())
        return {"charged": len(charged)}

    executor = Executor(breaker=False)
    executor.register("charge", charge, side_effects=True, idempotency_key="order_id")
    ctx = RequestContext("r", "s")
    first = executor.execute(
        Call("charge", "c1", _Charge(order_id="O-1", card_token=SecretStr("A"))), ctx
    )
    other = executor.execute(
        Call("charge", "c2", _Charge(order_id="O-1", card_token=SecretStr("B"))), ctx
    )
    again = executor.execute(
        Call("charge", "c3", _Charge(order_id="O-1", card_token=SecretStr("A"))), ctx
    )
    assert first.state == "ok"
    assert other.error is not None and other.error["type"] == "idempotency_conflict"
    assert again.state == "duplicate_suppressed"
    assert charged == ["A"]


def test_keys_with_one_text_do_not_make_the_fingerprint_compare_values() -> None:
    # `1` and `"1"` are written alike; sorting the pairs compared the two dicts and raised
    # TypeError out of `execute`.
    assert len(fingerprint({1: {"a": 1}, "1": {"b": 2}})) == 64


def _rerunning_writer(clock: FakeClock, ledger: Ledger, runs: list[int]) -> Executor:
    """An executor whose write, once its lease lapsed, an identical call would run again."""

    def write(args: Any) -> str:
        runs.append(1)
        return "written"

    ex = Executor(clock=clock, ledger=ledger, breaker=False, retry=RetryPolicy(max_attempts=1))
    ex.register(
        "w",
        write,
        side_effects=True,
        in_progress_expiry=3,
        on_stale_in_progress="assume_failed_and_retry",
    )
    return ex


def test_an_identical_call_records_the_outcome_still_pending_before_it_claims(
    clock: FakeClock,
) -> None:
    # The store could not record the first call's outcome; by the time it answers again the
    # lease has lapsed. An identical call in this same process, which holds the outcome, came
    # before the background try and found the claim stale: under assume_failed_and_retry it
    # ran the write a second time.
    runs: list[int] = []
    ledger = _BlinkingLedger(clock, failures=10**6)
    ex = _rerunning_writer(clock, ledger, runs)
    ctx = RequestContext("r", "s")
    first = ex.execute(Call("w", "c", {}), ctx)
    assert first.state == "ok" and first.unrecorded
    clock.advance(4)  # the lease lapsed while the store was down
    down = ex.execute(Call("w", "c", {}), ctx)
    assert down.state == "tool_unavailable" and runs == [1], "not run while unrecorded"
    assert down.error is not None and down.error["type"] == "ledger_unavailable"
    ledger.failures = 0  # the store is back, before the background try
    again = ex.execute(Call("w", "c", {}), ctx)
    assert again.state == "duplicate_suppressed" and again.value == "written"
    assert runs == [1] and ex.observer.counts["outcomes_recorded_late"] == 1


def test_an_identical_call_records_an_abandoned_step_still_hanging_before_it_claims(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One request to the store hangs (a dead connection without a socket timeout) while the
    # others are answered. The call stopped waiting for its outcome; the lease then lapsed,
    # and an identical call to this executor, which holds the outcome, found the claim stale
    # and under assume_failed_and_retry ran the write a second time.
    monkeypatch.setattr(executor_module, "_SETTLE_GRACE", 0.05)  # real seconds to wait
    gate, entered = threading.Event(), threading.Event()
    runs: list[int] = []

    class OneRequestHangs(MemoryLedger):
        blocking = True
        hung = False

        def _finish(self, key: str, token: str, ttl: float, state: Any, **kwargs: Any) -> None:
            if not self.hung:
                self.hung = True
                entered.set()
                assert gate.wait(10)
                raise LedgerUnavailable("connection reset by peer")
            super()._finish(key, token, ttl, state, **kwargs)

    ex = _rerunning_writer(clock, OneRequestHangs(clock=clock), runs)
    call = Call("w", "c", {})
    try:
        first = ex.execute(call, RequestContext("r", "s", deadline=clock.monotonic() + 0.01))
        assert entered.is_set() and first.state == "ok" and first.unrecorded
        clock.advance(4)  # the lease lapsed while the step hangs
        again = ex.execute(call, RequestContext("r", "s"))
    finally:
        gate.set()
    assert again.state == "duplicate_suppressed" and again.value == "written"
    assert runs == [1]
