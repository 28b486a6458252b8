"""A wall-clock step (NTP, a resumed VM) must not make a live write's claim look stale."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from toolwire.execution import (
    Call,
    Claim,
    Executor,
    FakeClock,
    Ledger,
    MemoryLedger,
    RequestContext,
    SqliteLedger,
    StalePolicy,
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


@pytest.mark.parametrize("kind", ["memory", "sqlite", "sqlite, another instance"])
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

    def executor(ledger: Ledger) -> Executor:
        ex = Executor(clock=clock, ledger=ledger, breaker=False)
        ex.register(
            "charge",
            charge,
            side_effects=True,
            idempotency_key="order",
            in_progress_expiry=LEASE,
            on_stale_in_progress="assume_failed_and_retry",
        )
        return ex

    holding = executor(local_ledger(kind, clock, tmp_path))
    # Another process on the same file (one machine: one clock) has a ledger of its own.
    ex = (
        executor(SqliteLedger(tmp_path / "ledger.db", clock=clock))
        if "another" in kind
        else holding
    )
    ctx = RequestContext("r", "s")
    first: list[Any] = []
    holder = threading.Thread(
        target=lambda: first.append(holding.execute(Call("charge", "c1", {"order": "o"}), ctx))
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


def two_instances(clock: FakeClock, tmp_path: Path) -> tuple[SqliteLedger, SqliteLedger]:
    """Two ledgers on one file, as two processes of one machine (one clock) open it."""
    path = tmp_path / "ledger.db"
    return SqliteLedger(path, clock=clock), SqliteLedger(path, clock=clock)


def claim(ledger: Ledger, policy: StalePolicy = "assume_failed_and_retry") -> Claim:
    return ledger.claim("k", fingerprint="f", tool="t", lease=LEASE, ttl=600, on_stale=policy)


@pytest.mark.parametrize("jump", [LEASE * 2, 48 * 3600.0])
def test_a_forward_jump_does_not_let_another_instance_take_a_live_claim(
    jump: float, tmp_path: Path
) -> None:
    clock = FakeClock()
    holder, other = two_instances(clock, tmp_path)
    held = claim(holder)
    assert held.token is not None
    clock.jump(jump)  # no time passed: the holder is as live as it was
    busy = claim(other)
    assert busy.status == "in_progress" and busy.token is None
    assert busy.lease_remaining is not None and 0 < busy.lease_remaining <= LEASE
    live = other.get("k")
    assert live is not None and live.state == "in_progress" and live.token == held.token
    holder.renew("k", held.token, LEASE, ttl=600)
    holder.complete("k", held.token, "charged", ttl=600)
    replay = claim(other)
    assert replay.status == "replay" and replay.record is not None
    assert replay.record.receipt_value() == "charged"


def test_another_instance_finds_a_claim_stale_a_lease_after_it_first_saw_it(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    holder, other = two_instances(clock, tmp_path)
    assert claim(holder).status == "claimed"
    clock.jump(LEASE * 2)
    assert claim(other, "report").status == "in_progress"  # first look: it may be live
    clock.advance(LEASE - 1)
    assert claim(other, "report").status == "in_progress"
    clock.advance(2)  # watched for a whole lease and nobody renewed: the holder is gone
    assert claim(other, "report").status == "stale"


def test_a_claim_whose_holder_died_a_lease_ago_is_stale_at_first_look(tmp_path: Path) -> None:
    # The defect: an instance first looking at a claim whose holder died (no renewal for a
    # whole lease of elapsed time, measured on this boot) waited a whole lease of its own
    # before acting on it. The file's clock measured that time already.
    clock = FakeClock()
    holder, other = two_instances(clock, tmp_path)
    assert claim(holder).status == "claimed"
    clock.advance(LEASE + 1)  # real time: the holder stopped renewing and is gone
    assert claim(other, "report").status == "stale"


def test_a_claim_of_the_first_write_since_a_reboot_is_timed_too(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    before = FakeClock()
    ledger = SqliteLedger(path, clock=before)
    ledger.claim("other key", fingerprint="f", tool="t", lease=LEASE)
    ledger.close()
    after = FakeClock(start=before.time() + 3600, monotonic_start=5.0)  # another boot
    # The holder's claim is its first write on this boot, and it dies right after it.
    assert claim(SqliteLedger(path, clock=after)).status == "claimed"
    after.advance(LEASE + 1)
    assert claim(SqliteLedger(path, clock=after), "report").status == "stale"


def test_a_claim_seen_first_part_way_through_its_lease_is_live_for_the_rest(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    holder, other = two_instances(clock, tmp_path)
    assert claim(holder).status == "claimed"
    clock.advance(LEASE / 2)
    clock.jump(LEASE)  # the wall clock says the lease ran out: only half of it did
    busy = claim(other, "report")
    assert busy.status == "in_progress"
    assert busy.lease_remaining == pytest.approx(LEASE / 2)
    clock.advance(LEASE / 2 + 1)
    assert claim(other, "report").status == "stale"


def test_a_renewal_restarts_another_instances_watch(tmp_path: Path) -> None:
    clock = FakeClock()
    holder, other = two_instances(clock, tmp_path)
    held = claim(holder)
    assert held.token is not None
    for _ in range(4):  # the holder renews every third of its lease, as the executor does
        assert claim(other).status == "in_progress"
        clock.advance(LEASE / 3)
        clock.jump(LEASE)  # and the wall clock keeps stepping forward meanwhile
        holder.renew("k", held.token, LEASE, ttl=600)
    assert claim(other).status == "in_progress"
    clock.advance(LEASE + 1)
    stale = claim(other)
    assert stale.status == "claimed" and stale.recovered


def test_the_purge_after_a_jump_keeps_live_claims_and_drops_dead_ones(tmp_path: Path) -> None:
    clock = FakeClock()
    holder, other = two_instances(clock, tmp_path)
    held = claim(holder)
    assert held.token is not None

    def fill(prefix: str) -> None:
        for i in range(300):  # claims trigger the amortised purge
            other.claim(f"{prefix}{i}", fingerprint="f", tool="t", lease=1, ttl=1)

    clock.jump(48 * 3600.0)
    fill("a")
    assert holder.get("k") is not None, "a live claim is not purged"
    assert claim(other).status == "in_progress"
    # Nobody renewed for a whole lease, and the claim's retention (600 s past its lease) ran
    # out in elapsed time: a jump alone would not end it.
    clock.advance(LEASE + 601)
    clock.jump(48 * 3600.0)
    fill("b")
    assert other.get("k") is None
    with closing(sqlite3.connect(tmp_path / "ledger.db")) as conn:
        (left,) = conn.execute("SELECT COUNT(*) FROM toolwire_ledger WHERE key = 'k'").fetchone()
    assert left == 0


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_get_reports_a_live_claim_after_a_jump_past_its_retention(
    kind: str, tmp_path: Path
) -> None:
    clock = FakeClock()
    ledger = local_ledger(kind, clock, tmp_path)
    held = ledger.claim("k", fingerprint="f", tool="t", lease=LEASE, ttl=60)
    assert held.token is not None
    clock.jump(48 * 3600.0)
    record = ledger.get("k")
    assert record is not None and record.state == "in_progress" and record.token == held.token
    assert record.lease_expires_at > clock.time()
    if kind == "sqlite":
        other = SqliteLedger(tmp_path / "ledger.db", clock=clock)
        seen = other.get("k")
        assert seen is not None and seen.token == held.token
    # The holder stopped renewing: the record ends with its lease and retention, as it would
    # have without the jump.
    clock.advance(LEASE + 61)
    assert ledger.get("k") is None


def test_a_file_from_before_heartbeats_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(
            "CREATE TABLE toolwire_ledger (key TEXT PRIMARY KEY, record TEXT NOT NULL,"
            " expires_at REAL NOT NULL) WITHOUT ROWID;"
        )
    clock = FakeClock()
    ledger = SqliteLedger(path, clock=clock)
    held = claim(ledger)
    assert held.token is not None
    clock.jump(48 * 3600.0)
    assert claim(SqliteLedger(path, clock=clock)).status == "in_progress"
    ledger.complete("k", held.token, 1)
    assert claim(ledger).status == "replay"


@pytest.mark.parametrize("reader", ["the same instance", "another instance", "after a restart"])
def test_a_forward_jump_past_the_ttl_does_not_run_a_finished_write_again(
    reader: str, tmp_path: Path
) -> None:
    clock = FakeClock()
    path = tmp_path / "ledger.db"
    runs: list[str] = []

    def executor(ledger: Ledger) -> Executor:
        ex = Executor(clock=clock, ledger=ledger, breaker=False)
        ex.register(
            "charge", lambda args: runs.append(args["order"]) or "charged", side_effects=True,
            idempotency_key="order", record_ttl=600,
        )  # fmt: skip
        return ex

    first = SqliteLedger(path, clock=clock)
    ctx = RequestContext("r", "s")
    assert executor(first).execute(Call("charge", "c1", {"order": "o"}), ctx).state == "ok"
    if reader == "after a restart":
        first.close()
    clock.jump(48 * 3600.0)  # no time passed: the record is as young as it was
    ledger = first if reader == "the same instance" else SqliteLedger(path, clock=clock)
    again = executor(ledger).execute(Call("charge", "c2", {"order": "o"}), ctx)
    assert again.state == "duplicate_suppressed" and again.value == "charged"
    assert runs == ["o"]


def fill(ledger: SqliteLedger, prefix: str) -> None:
    for i in range(300):  # claims trigger the amortised purge
        ledger.claim(f"{prefix}{i}", fingerprint="f", tool="t", lease=1, ttl=1)


def rows(path: Path, key: str) -> int:
    with closing(sqlite3.connect(path)) as conn:
        (count,) = conn.execute(
            "SELECT COUNT(*) FROM toolwire_ledger WHERE key = ?", (key,)
        ).fetchone()
    return int(count)


def test_a_finished_record_is_kept_its_ttl_of_elapsed_time_across_instances(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    path = tmp_path / "ledger.db"

    def instance() -> SqliteLedger:
        # A short-lived process each time, on one machine's boot: the time between them counts.
        return SqliteLedger(path, clock=clock)

    held = claim(instance())
    assert held.token is not None
    instance().complete("k", held.token, "charged", ttl=600)
    clock.jump(48 * 3600.0)
    fill(instance(), "a")
    assert rows(path, "k") == 1, "the purge keeps it"
    assert claim(instance()).status == "replay"
    clock.advance(590)
    assert claim(instance()).status == "replay"
    clock.advance(11)  # 601 s of elapsed time since it was recorded
    assert instance().get("k") is None
    fill(instance(), "b")
    assert rows(path, "k") == 0, "the purge drops it"


def test_time_nobody_measured_does_not_count_towards_retention(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    before = FakeClock()
    ledger = SqliteLedger(path, clock=before)
    held = claim(ledger)
    assert held.token is not None
    ledger.complete("k", held.token, "charged", ttl=600)
    ledger.close()
    # A reboot (another monotonic epoch) an hour later by the wall clock, which may have been
    # stepped as well: nothing tells the two apart, so the record is kept on.
    after = FakeClock(start=before.time() + 3600, monotonic_start=5.0)
    rebooted = SqliteLedger(path, clock=after)
    assert claim(rebooted).status == "replay"
    after.advance(601)  # measured from here on
    assert claim(rebooted).status == "claimed"


def test_a_backward_jump_forgets_nothing_early(tmp_path: Path) -> None:
    clock = FakeClock()
    ledger = SqliteLedger(tmp_path / "ledger.db", clock=clock)
    held = claim(ledger)
    assert held.token is not None
    ledger.complete("k", held.token, "charged", ttl=600)
    clock.jump(-3600.0)
    clock.advance(590)
    assert claim(ledger).status == "replay"
