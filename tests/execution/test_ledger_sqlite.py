"""SQLite ledger: durability, cross-process atomicity, crash recovery, failing closed."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from toolwire.execution import (
    Call,
    Executor,
    FakeClock,
    LedgerCorrupt,
    LedgerRecord,
    LedgerUnavailable,
    RequestContext,
    SqliteLedger,
    StalePolicy,
)

SPAWN = multiprocessing.get_context("spawn")


def test_records_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    first = SqliteLedger(path)
    claim = first.claim("k", fingerprint="f", tool="t", lease=60)
    assert claim.token is not None
    first.complete("k", claim.token, {"receipt": [1, 2, 3]})
    first.close()
    reopened = SqliteLedger(path)
    replay = reopened.claim("k", fingerprint="f", tool="t", lease=60)
    assert replay.status == "replay" and replay.record is not None
    assert replay.record.receipt_value() == {"receipt": [1, 2, 3]}
    reopened.close()


def test_executor_replays_after_restart(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    runs: list[int] = []

    def charge(args: Any) -> dict[str, int]:
        runs.append(1)
        return {"charge": len(runs)}

    ctx = RequestContext("r", "s")
    before = Executor(ledger=path)
    before.register("charge", charge, side_effects=True)
    assert before.execute(Call("charge", "call_1", {"cents": 5}), ctx).state == "ok"
    before.ledger.close()
    after = Executor(ledger=str(path))  # a path string also selects SqliteLedger
    after.register("charge", charge, side_effects=True)
    result = after.execute(Call("charge", "call_1", {"cents": 5}), ctx)
    assert result.state == "duplicate_suppressed" and result.value == {"charge": 1}
    assert len(runs) == 1


def test_uses_wal_and_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = SqliteLedger(path, busy_timeout=2.5)
    ledger.get("anything")
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT COUNT(*) FROM toolwire_ledger").fetchone()[0] == 0
    ledger.close()


def _claim_worker(path: str, keys: list[str], barrier: Any, results: Any, index: int) -> None:
    ledger = SqliteLedger(path, busy_timeout=30)
    barrier.wait()  # every process starts racing at once
    executed = []
    # Each process walks the keys from a different starting point, so they collide all along.
    for key in keys[index * 20 :] + keys[: index * 20]:
        claim = ledger.claim(key, fingerprint="f", tool="t", lease=60)
        if claim.status == "claimed":
            assert claim.token is not None
            executed.append(key)
            time.sleep(0.001)  # the "side effect", so no process can sweep every key alone
            ledger.complete(key, claim.token, key)
    ledger.close()
    results.put(executed)


def test_processes_claim_each_key_exactly_once(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    SqliteLedger(path).close()  # create the schema before the race
    keys = [f"key-{i}" for i in range(80)]
    barrier, results = SPAWN.Barrier(4), SPAWN.Queue()
    workers = [
        SPAWN.Process(target=_claim_worker, args=(path, keys, barrier, results, i))
        for i in range(4)
    ]
    for worker in workers:
        worker.start()
    per_process = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(10)
        assert worker.exitcode == 0
    executed = [key for chunk in per_process for key in chunk]
    assert sorted(executed) == sorted(keys)  # every key once, none twice
    assert sum(1 for chunk in per_process if chunk) >= 2  # the processes really competed


POLICIES = ["report", "assume_failed_and_retry", "assume_succeeded"]


def _crash_after_side_effects(path: str, markers: str) -> None:
    """Start one write per policy; kill the process once every side effect has happened."""
    ex = Executor(ledger=SqliteLedger(path))
    lock, done = threading.Lock(), []

    def charge(args: Any) -> None:
        Path(markers, args["id"]).write_text("charged")
        with lock:
            done.append(args["id"])
            if len(done) == len(POLICIES):
                os._exit(17)  # killed between the side effects and the ledger updates
        threading.Event().wait()

    ex.register("charge", charge, side_effects=True, in_progress_expiry=30)
    ctx = RequestContext("r", "s")
    threads = [
        threading.Thread(target=ex.execute, args=(Call("charge", p, {"id": p, "cents": 5}), ctx))
        for p in POLICIES
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """A ledger left behind by a process killed after its side effects (one spawn per module)."""
    directory = tmp_path_factory.mktemp("crash")
    path = str(directory / "ledger.db")
    child = SPAWN.Process(target=_crash_after_side_effects, args=(path, str(directory)))
    child.start()
    child.join(60)
    assert child.exitcode == 17
    return path, directory


@pytest.mark.parametrize(
    ("policy", "state", "reruns"),
    [
        ("report", "unknown_outcome", 0),
        ("assume_failed_and_retry", "ok", 1),
        ("assume_succeeded", "duplicate_suppressed", 0),
    ],
)
def test_crash_between_side_effect_and_ledger_update_recovers_by_policy(
    crashed: tuple[str, Path], policy: StalePolicy, state: str, reruns: int
) -> None:
    path, markers = crashed
    assert (markers / policy).read_text() == "charged"
    clock = FakeClock(start=time.time())
    reruns_seen: list[int] = []
    ex = Executor(clock=clock, ledger=SqliteLedger(path, clock=clock))
    ex.register(
        "charge",
        lambda args: reruns_seen.append(1),
        side_effects=True,
        in_progress_expiry=30,
        on_stale_in_progress=policy,
    )
    call, ctx = Call("charge", policy, {"id": policy, "cents": 5}), RequestContext("r", "s")
    # Before the expiry the crashed claim still looks like a live execution.
    assert ex.execute(call, ctx).state == "in_progress"
    clock.advance(31)
    result = ex.execute(call, ctx)
    assert result.state == state and len(reruns_seen) == reruns
    assert ex.observer.counts["stale_in_progress"] == 1  # visible in metrics
    assert result.duplicate_execution is (policy == "assume_failed_and_retry")
    assert ex.observer.counts["duplicate_executions"] == reruns
    # The recovery is durable: asking again does not run the tool again.
    again = ex.execute(call, ctx)
    assert len(reruns_seen) == reruns
    assert again.state == ("unknown_outcome" if policy == "report" else "duplicate_suppressed")


def _write_executor(ledger: SqliteLedger, runs: list[int]) -> Executor:
    ex = Executor(ledger=ledger)
    ex.register("w", lambda args: runs.append(1), side_effects=True)
    return ex


def test_locked_database_fails_closed_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    runs: list[int] = []
    ex = _write_executor(SqliteLedger(path, busy_timeout=0.05), runs)
    ex.ledger.get("warm-up")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    result = ex.execute(Call("w", "c1", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable" and runs == []
    assert result.error is not None and result.error["type"] == "ledger_unavailable"
    assert result.error["retryable"] is True
    assert ex.observer.counts["ledger_errors"] == 1
    with pytest.raises(LedgerUnavailable):
        result.raise_for_error()
    blocker.execute("ROLLBACK")
    blocker.close()
    assert ex.execute(Call("w", "c1", {}), RequestContext("r", "s")).state == "ok"
    assert runs == [1]


def test_unopenable_path_fails_closed(tmp_path: Path) -> None:
    runs: list[int] = []
    ex = _write_executor(SqliteLedger(tmp_path / "missing-dir" / "ledger.db"), runs)
    result = ex.execute(Call("w", "c1", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable" and runs == []


def test_corrupt_file_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    path.write_bytes(b"this is not a database" * 100)
    runs: list[int] = []
    ex = _write_executor(SqliteLedger(path), runs)
    result = ex.execute(Call("w", "c1", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable" and runs == []
    with pytest.raises(LedgerUnavailable):
        SqliteLedger(path).get("k")


def test_corrupt_record_fails_closed(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    runs: list[int] = []
    ex = _write_executor(SqliteLedger(path), runs)
    key = ex.execute(Call("w", "c0", {}), RequestContext("r", "s")).idempotency_key
    assert key is not None
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE toolwire_ledger SET record = '{\"state\": 1' WHERE key = ?", (key,))
    result = ex.execute(Call("w", "c0", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable" and runs == [1]
    assert result.error is not None and result.error["type"] == "ledger_corrupt"
    with pytest.raises(LedgerCorrupt):
        ex.ledger.get(key)


def _rewrite_record(path: Path, key: str, changes: dict[str, Any]) -> None:
    """Changes fields of a stored record that still decodes as a whole."""
    with closing(sqlite3.connect(path)) as conn, conn:
        query = "SELECT record FROM toolwire_ledger WHERE key = ?"
        (text,) = conn.execute(query, (key,)).fetchone()
        record = {**json.loads(text), **changes}
        conn.execute(
            "UPDATE toolwire_ledger SET record = ? WHERE key = ?", (json.dumps(record), key)
        )


@pytest.mark.parametrize(
    "changes",
    [
        {"state": "succeeded", "receipt": "{not json"},
        {"state": "failed", "error": "{not json"},
        {"state": "unknown", "error": "{not json"},
        # Read as the text "None", it would pass for another call's arguments: a conflict.
        {"fingerprint": None},
        # Replayed, these would tell the model that a refused write succeeded.
        {"state": "failed", "error": None},
        {"state": "succeeded", "receipt": None, "assumed": False},
        # JSON text no receipt is written as (NaN, an infinity) or an error that says nothing.
        {"state": "succeeded", "receipt": "NaN"},
        {"state": "succeeded", "receipt": "1e999"},
        {"state": "failed", "error": "null"},
    ],
)
@pytest.mark.parametrize("api", ["execute", "aexecute", "execute_all"])
def test_a_record_that_decodes_with_a_corrupt_field_fails_closed(
    tmp_path: Path, changes: dict[str, Any], api: str
) -> None:
    path = tmp_path / "ledger.db"
    runs: list[int] = []
    ex = _write_executor(SqliteLedger(path), runs)
    call, ctx = Call("w", "c0", {}), RequestContext("r", "s")
    key = ex.execute(call, ctx).idempotency_key
    assert key is not None
    _rewrite_record(path, key, changes)
    before = ex.observer.counts["calls"]
    if api == "execute":
        result = ex.execute(call, ctx)
    elif api == "aexecute":
        result = asyncio.run(ex.aexecute(call, ctx))
    else:
        (result,) = ex.execute_all([call], ctx)
    assert result.state == "tool_unavailable" and runs == [1]
    assert result.error is not None and result.error["type"] == "ledger_corrupt"
    assert ex.observer.counts["calls"] == before + 1


def test_expired_records_are_purged(tmp_path: Path) -> None:
    clock = FakeClock()
    ledger = SqliteLedger(tmp_path / "ledger.db", clock=clock)
    for i in range(300):
        claim = ledger.claim(f"k{i}", fingerprint="f", tool="t", lease=1, ttl=10)
        assert claim.token is not None
        ledger.complete(f"k{i}", claim.token, i, ttl=10)
    clock.advance(20)
    for i in range(300):  # claims trigger the amortised purge
        ledger.claim(f"n{i}", fingerprint="f", tool="t", lease=1, ttl=10)
    with closing(sqlite3.connect(tmp_path / "ledger.db")) as conn:
        (old,) = conn.execute("SELECT COUNT(*) FROM toolwire_ledger WHERE key LIKE 'k%'").fetchone()
    assert old == 0
    ledger.close()


def test_a_claim_abandoned_at_its_deadline_does_not_make_the_next_call_wait_twice(
    tmp_path: Path,
) -> None:
    # The abandoned claim kept the ledger's process lock while SQLite waited out its busy
    # timeout for another process's write lock; the next call waited for that lock without
    # a bound, then for the busy timeout of its own: 3.5 s with busy_timeout=2. The wait for
    # the process lock now counts against the busy timeout.
    path = tmp_path / "ledger.db"
    runs: list[int] = []
    busy = 2.0
    ex = _write_executor(SqliteLedger(path, busy_timeout=busy), runs)
    ex.ledger.get("warm-up")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        soon = time.monotonic() + 0.2
        late = ex.execute(Call("w", "c1", {}), RequestContext("r", "s", deadline=soon))
        assert late.state != "ok"
        started = time.monotonic()
        behind = ex.execute(Call("w", "c2", {}), RequestContext("r", "s"))
        waited = time.monotonic() - started
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert behind.state == "tool_unavailable" and runs == []
    assert behind.error is not None and behind.error["type"] == "ledger_unavailable"
    # At most its own busy timeout; behind the abandoned claim it was that plus most of
    # another (the margin is for a loaded machine).
    assert waited < busy + 0.8
    assert ex.execute(Call("w", "c3", {}), RequestContext("r", "s")).state == "ok"


SHORT_LEASE = 0.5


def _die_while_writing(path: str) -> None:
    """Claim a write's key with a short lease and die in the write, leaving the claim."""

    def write(args: Any) -> None:
        os._exit(17)

    ex = Executor(ledger=SqliteLedger(path), breaker=False)
    ex.register("w", write, side_effects=True, in_progress_expiry=SHORT_LEASE)
    ex.execute(Call("w", "c", {}), RequestContext("r", "s"))


def test_a_process_restarted_after_a_claimer_died_does_not_wait_a_lease_of_its_own(
    tmp_path: Path,
) -> None:
    # The defect: the restarted process, first to look at the dead claim, watched its
    # heartbeat for a whole lease of its own before calling it stale, although the lease
    # had run out in real time that processes of this machine measure alike.
    path = str(tmp_path / "ledger.db")
    child = SPAWN.Process(target=_die_while_writing, args=(path,))
    child.start()
    child.join(60)
    assert child.exitcode == 17
    ledger = SqliteLedger(path)
    ex = Executor(ledger=ledger, breaker=False)
    runs: list[int] = []
    ex.register("w", lambda args: runs.append(1), side_effects=True, in_progress_expiry=30)
    with closing(sqlite3.connect(path)) as conn:
        (stored,) = conn.execute("SELECT record FROM toolwire_ledger").fetchall()
    held = LedgerRecord.from_json(stored[0])
    assert held.state == "in_progress"
    # Past the lease as the dead claimer wrote it, by the wall clock that did not step.
    time.sleep(max(0.0, held.lease_expires_at - time.time()) + 0.05)
    result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert result.state == "unknown_outcome" and runs == []
    assert ex.observer.counts["stale_in_progress"] == 1
