"""A wall-clock step (NTP, a resumed VM) must not make a live write's claim look stale."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from toolwire.execution import (
    Call,
    Executor,
    FakeClock,
    Ledger,
    MemoryLedger,
    RequestContext,
    SqliteLedger,
)

LEASE = 30.0


def local_ledger(kind: str, clock: FakeClock, tmp_path: Path) -> Ledger:
    if kind == "memory":
        return MemoryLedger(clock=clock)
    return SqliteLedger(tmp_path / "ledger.db", clock=clock)


def test_jump_moves_only_the_wall_clock() -> None:
    clock = FakeClock(start=100.0, monotonic_start=5.0)
    clock.jump(3600)
    assert (clock.time(), clock.monotonic()) == (3700.0, 5.0)
    clock.jump(-7200)
    assert (clock.time(), clock.monotonic()) == (-3500.0, 5.0)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("jump", [LEASE * 2, 48 * 3600.0])  # past the lease; past the TTL too
def test_a_forward_jump_does_not_let_a_second_call_run_a_live_write(
    kind: str, jump: float, tmp_path: Path
) -> None:
    clock = FakeClock()
    entered, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def charge(args: Any) -> str:
        runs.append(args["order"])
        entered.set()
        assert release.wait(5)
        return "charged"

    ex = Executor(clock=clock, ledger=local_ledger(kind, clock, tmp_path), breaker=False)
    ex.register(
        "charge",
        charge,
        side_effects=True,
        idempotency_key="order",
        in_progress_expiry=LEASE,
        on_stale_in_progress="assume_failed_and_retry",
    )
    ctx = RequestContext("r", "s")
    first: list[Any] = []
    holder = threading.Thread(
        target=lambda: first.append(ex.execute(Call("charge", "c1", {"order": "o"}), ctx))
    )
    holder.start()
    try:
        assert entered.wait(5)
        clock.jump(jump)  # no time passed: the holder is as live as it was
        busy = ex.execute(Call("charge", "c2", {"order": "o"}), ctx)
    finally:
        release.set()
        holder.join(5)
    assert busy.state == "in_progress" and busy.error is not None
    assert 0 < busy.error["retry_after"] <= LEASE
    assert runs == ["o"]
    assert first[0].state == "ok" and not first[0].warnings
    again = ex.execute(Call("charge", "c3", {"order": "o"}), ctx)
    assert again.state == "duplicate_suppressed" and again.value == "charged"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_claim_nobody_renews_still_goes_stale(kind: str, tmp_path: Path) -> None:
    clock = FakeClock()
    ledger = local_ledger(kind, clock, tmp_path)
    held = ledger.claim("k", fingerprint="f", tool="t", lease=LEASE)
    assert held.status == "claimed"
    clock.advance(LEASE + 1)  # real time passed and nobody renewed: the holder is gone
    assert ledger.claim("k", fingerprint="f", tool="t", lease=LEASE).status == "stale"


def test_memory_records_read_in_unix_time_across_a_jump() -> None:
    clock = FakeClock(start=1_700_000_000.0, monotonic_start=10.0)
    ledger = MemoryLedger(clock=clock)
    claim = ledger.claim("k", fingerprint="f", tool="t", lease=LEASE)
    assert claim.record is not None and claim.record.created_at == 1_700_000_000.0
    assert claim.record.lease_expires_at == 1_700_000_000.0 + LEASE
    clock.jump(-3600)
    record = ledger.get("k")
    assert record is not None and record.created_at == 1_700_000_000.0 - 3600
