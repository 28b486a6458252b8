"""SQLite ledger: the embedded default, durable across restarts and safe across processes.

Design notes:
- WAL journal so readers never block the single writer; ``BEGIN IMMEDIATE`` takes the write lock
  before reading the record, which makes read-decide-write one atomic step across processes
  (a plain ``BEGIN`` would let two processes read "absent" and both insert).
- ``busy_timeout`` makes a waiting process sleep inside SQLite instead of failing at once. Its
  busy handler backs off in steps of several milliseconds, so threads of *one* process are
  serialised on a Python lock first and only processes contend inside SQLite.
- ``synchronous=NORMAL`` (default) survives process crashes, which is what the in-progress
  recovery relies on; pass ``synchronous="FULL"`` to survive power loss as well.
- Any SQLite error (locked past the timeout, unwritable file, not a database) becomes
  ``LedgerUnavailable`` and the connection is reopened on the next call.
- Do not share one instance across ``fork``; open a ledger per process.
- Records carry wall-clock (Unix) times, the only time processes share. A forward step of the
  wall clock (NTP, a resumed VM) would make every live lease look run out, and an identical
  call in any process could act on it (under ``assume_failed_and_retry``: run the write a
  second time). So each row also carries a heartbeat, ``beat``: a random stamp rewritten with
  every change of an ``in_progress`` row (its claim, each renewal), with the reading of the
  file's clock (below) when it was written. A claim whose wall-clock lease ran out is stale
  only once its stamp has stood for a whole lease (the stored lease's length) of measured
  time: by the file's clock since it was written, or by this instance's own watch (every
  instance remembers, for each ``in_progress`` row it looked at, the stamp it saw and when on
  its own ``monotonic()`` clock it first saw it). Until then the rules read it as live, its
  lease (and retention) running on for what is left, whatever step the wall clock took. A
  live holder renews every third of its lease, so its stamp never stands that long; a crashed
  one's does. So a process restarted after a claimer died acts on the dead claim as soon as
  its lease has run out in time measured on this boot, not one lease after it first looks;
  only time nobody measured (across a reboot, or on a platform whose clock names no boot)
  still costs an instance that first looks at a crashed claim one lease of its own watch.
  The amortised purge deletes an expired ``in_progress`` row by the same judgement, never by
  the wall clock alone.
- Retention is kept on the file's own clock, not on the wall clock: a forward step of the wall
  clock past a finished record's TTL would otherwise forget it, and a replay would run the
  write again. The file holds one clock row, a reading that only ever moves on by time some
  instance measured on a monotonic clock: its own, since it last saw the row unchanged, or,
  from a row another process wrote on the same boot (the clock's ``boot()``), that process's
  monotonic reading then against this one's now, never more than the wall clock moved
  meanwhile (a process in a time namespace of its own reads another offset). Each row keeps
  ``kept_until`` on that clock, and is forgotten only once both it and its wall-clock
  ``expires_at`` passed: a record is kept at least its TTL of real elapsed time, whatever
  step the wall clock takes either way. The cost: time nobody measured does not count. A
  reboot (a new boot id, or a platform without one) starts the count again from where the
  file's clock stood, so a record written before it is kept its TTL plus the time the
  machine was down; rows written by a version without ``kept_until`` keep the wall-clock
  rule they were written under.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import sqlite3
import threading
import time
from collections.abc import Generator
from dataclasses import replace
from typing import Any, Literal

from toolwire._pickling import LiveState
from toolwire.execution.clock import Clock, SystemClock
from toolwire.execution.errors import LedgerCorrupt, LedgerUnavailable
from toolwire.execution.ledger import (
    DEFAULT_TTL,
    Claim,
    Ledger,
    LedgerRecord,
    LedgerState,
    StalePolicy,
    check_key,
    decide_claim,
    decide_finish,
    decide_renew,
    new_token,
)

__all__ = ["SqliteLedger"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolwire_ledger (
    key TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    expires_at REAL NOT NULL,
    beat TEXT,
    kept_until REAL,
    beat_tick REAL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS toolwire_ledger_expires ON toolwire_ledger (expires_at);
CREATE TABLE IF NOT EXISTS toolwire_clock (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    reading REAL NOT NULL,
    stamp TEXT NOT NULL,
    boot TEXT,
    monotonic REAL NOT NULL,
    wall REAL NOT NULL
);
"""
# A file written before rows carried a heartbeat, a retention on the file's clock, or the file
# clock's reading at the heartbeat, gets the column (NULL: rows written by an older version,
# judged as that version did).
_ADDED_COLUMNS = (("beat", "TEXT"), ("kept_until", "REAL"), ("beat_tick", "REAL"))
_KEPT_INDEX = "CREATE INDEX IF NOT EXISTS toolwire_ledger_kept ON toolwire_ledger (kept_until)"
_PURGE_EVERY = 256
# Keys per query when the purge checks which rows it saw are still as it saw them.
_PURGE_CHUNK = 500
# A row as `_read` returns it: the record, its heartbeat stamp, the file clock's reading until
# which it is kept, and the file clock's reading when its heartbeat was written.
_Stored = tuple[LedgerRecord | None, str | None, float | None, float | None]


class SqliteLedger(Ledger, LiveState):
    """Ledger in a SQLite file.

    Args:
        path: Database file (created if missing; its directory must exist).
        clock: Time source; ``time()`` stamps records (one machine, so one clock), and
            ``monotonic()`` times how long a claim's heartbeat stood still and moves the
            file's retention clock on, so that a step of the wall clock makes no live claim
            look stale and forgets no record before its TTL (see the design notes).
        busy_timeout: Seconds to wait for another process's write lock before giving up; a
            call's wait for another call of this instance (which may be waiting for that
            lock) counts against it, so no call waits longer.
        synchronous: SQLite ``synchronous`` pragma (``NORMAL`` or ``FULL``).
    """

    _not_copied = (
        "it holds a database connection and a lock. Open one in each process on the same path"
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        self.path = os.fspath(path)
        self._clock = clock or SystemClock()
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        # The connection's busy_timeout in milliseconds, as last set (see `_waits_until`).
        self._busy_ms = int(busy_timeout * 1000)
        self._claims = 0
        # key -> (heartbeat stamp, monotonic reading when this instance first saw it), for the
        # ``in_progress`` rows it looked at (see the design notes).
        self._seen: dict[str, tuple[str, float]] = {}
        # (stamp, monotonic reading) of the file's clock row when this instance last saw it.
        self._ticked: tuple[str, float] | None = None
        boot: object = getattr(self._clock, "boot", None)
        self._boot: str | None = None
        if callable(boot):
            named = boot()
            self._boot = named if isinstance(named, str) else None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,  # we issue BEGIN IMMEDIATE ourselves
                check_same_thread=False,  # guarded by self._lock
            )
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
                self._busy_ms = int(self._busy_timeout * 1000)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                conn.executescript(_SCHEMA)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(toolwire_ledger)")}
                for name, kind in _ADDED_COLUMNS:
                    if name in columns:
                        continue
                    try:
                        conn.execute(f"ALTER TABLE toolwire_ledger ADD COLUMN {name} {kind}")
                    except sqlite3.OperationalError as exc:
                        if "duplicate column" not in str(exc):  # another process added it
                            raise
                conn.execute(_KEPT_INDEX)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None

    def _tick(self, conn: sqlite3.Connection, now: float, mono: float, *, write: bool) -> float:
        """Read the file's clock (see the design notes), moved on by the time measured since
        it was written, and with ``write`` store that reading for the other instances."""
        row = conn.execute(
            "SELECT reading, stamp, boot, monotonic, wall FROM toolwire_clock WHERE id = 0"
        ).fetchone()
        if row is None:
            reading, elapsed = now, 0.0  # the first reading: any will do, this one is legible
        else:
            reading, stamp, boot, then_mono, then_wall = row
            if self._ticked is not None and self._ticked[0] == stamp:
                elapsed = mono - self._ticked[1]
            elif boot is not None and boot == self._boot:
                elapsed = min(mono - then_mono, now - then_wall)
            else:
                elapsed = 0.0  # nobody measured this gap
            # A row of another boot is stored again under this one, even with nothing to add:
            # the other processes of this boot can then measure from it (a claimer that dies
            # after its first write since a reboot leaves a heartbeat they can time).
            if elapsed <= 0 and (not write or boot == self._boot or self._boot is None):
                # Nothing to store: from now on this instance measures from this row.
                if self._ticked is None or self._ticked[0] != stamp:
                    self._ticked = (stamp, mono)
                return float(reading)
            reading = float(reading) + max(elapsed, 0.0)
        if write:
            stamp = secrets.token_hex(8)
            conn.execute(
                "INSERT OR REPLACE INTO toolwire_clock (id, reading, stamp, boot, monotonic, wall)"
                " VALUES (0, ?, ?, ?, ?, ?)",
                (reading, stamp, self._boot, mono, now),
            )
            self._ticked = (stamp, mono)
        return reading

    def _read(self, conn: sqlite3.Connection, key: str) -> _Stored:
        """The record of ``key``, its heartbeat stamp, how long it is kept and the reading
        its heartbeat was written at (both on the file's clock)."""
        row = conn.execute(
            "SELECT record, beat, kept_until, beat_tick FROM toolwire_ledger WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None, None, None, None
        return LedgerRecord.from_json(row[0]), row[1], row[2], row[3]

    def _write(
        self, conn: sqlite3.Connection, record: LedgerRecord, now: float, mono: float, tick: float
    ) -> None:
        """Store ``record``, kept as long from the file clock's ``tick`` as its ``expires_at``
        is from the wall clock's ``now``; an ``in_progress`` one with a fresh heartbeat stamp,
        written at ``tick``, which this instance has seen from now (it wrote it)."""
        beat = secrets.token_hex(8) if record.state == "in_progress" else None
        conn.execute(
            "INSERT OR REPLACE INTO toolwire_ledger"
            " (key, record, expires_at, beat, kept_until, beat_tick) VALUES (?, ?, ?, ?, ?, ?)",
            (
                record.key,
                record.to_json(),
                record.expires_at,
                beat,
                tick + record.expires_at - now,
                None if beat is None else tick,
            ),
        )
        if beat is None:
            self._seen.pop(record.key, None)
        else:
            self._seen[record.key] = (beat, mono)

    def _judged(
        self,
        key: str,
        stored: _Stored,
        now: float,
        mono: float,
        tick: float,
    ) -> LedgerRecord | None:
        """The stored record as the decision rules should read it, with the wall clock at
        ``now``: kept for what is left of its retention on the file's clock (at ``tick``), and
        an ``in_progress`` one whose heartbeat has not stood still for a whole lease of
        measured time live, its lease (and retention) running on for what is left of it,
        whatever step the wall clock took (see the design notes)."""
        existing, beat, kept_until, beat_tick = stored
        if existing is not None and kept_until is not None and kept_until - tick > 0:
            existing = replace(
                existing, expires_at=max(existing.expires_at, now + kept_until - tick)
            )
        if existing is None or existing.state != "in_progress" or beat is None:
            self._seen.pop(key, None)
            return existing
        seen = self._seen.get(key)
        if seen is None or seen[0] != beat:
            seen = (beat, mono)
            self._seen[key] = seen
        # Both ends were written from one reading of the wall clock: a length, not a time.
        lease = existing.lease_expires_at - existing.updated_at
        # Two measures of how long the stamp stood, each counting only time a monotonic clock
        # measured: this instance's own watch, and the file's clock since the stamp was
        # written (time other processes of this boot measured: a claimer that died before
        # this instance first looked is not waited for a whole lease once more).
        stood = mono - seen[1]
        if beat_tick is not None:
            stood = max(stood, tick - beat_tick)
        left = lease - stood
        if left <= 0:
            return existing  # no renewal for a whole lease: its wall-clock lease decides
        live_until = now + left
        return replace(
            existing,
            lease_expires_at=max(existing.lease_expires_at, live_until),
            expires_at=max(existing.expires_at, live_until),
        )

    def _purge(self, conn: sqlite3.Connection, now: float, mono: float, tick: float) -> None:
        """Delete records expired on both clocks, an ``in_progress`` one only once judged so
        (a step of the wall clock expires every live claim on it), and forget what was seen of
        rows since changed or gone."""
        expired = "expires_at <= ? AND (kept_until IS NULL OR kept_until <= ?)"
        conn.execute(f"DELETE FROM toolwire_ledger WHERE {expired} AND beat IS NULL", (now, tick))
        rows = conn.execute(
            f"SELECT key, record, beat, beat_tick FROM toolwire_ledger WHERE {expired}",
            (now, tick),
        ).fetchall()
        for key, text, beat, beat_tick in rows:
            try:
                record = self._judged(
                    key, (LedgerRecord.from_json(text), beat, None, beat_tick), now, mono, tick
                )
            except LedgerCorrupt:
                record = None  # expired by its column, as any other record
            if record is None or record.expires_at <= now:
                conn.execute("DELETE FROM toolwire_ledger WHERE key = ?", (key,))
                self._seen.pop(key, None)
        keys = list(self._seen)
        for i in range(0, len(keys), _PURGE_CHUNK):
            chunk = keys[i : i + _PURGE_CHUNK]
            marks = ",".join("?" * len(chunk))
            beats = dict(
                conn.execute(
                    f"SELECT key, beat FROM toolwire_ledger WHERE key IN ({marks})", chunk
                ).fetchall()
            )
            for key in chunk:
                if beats.get(key) != self._seen[key][0]:
                    del self._seen[key]

    @contextlib.contextmanager
    def _held(self, deadline: float) -> Generator[None, None, None]:
        """This instance's lock, waited for no longer than ``deadline``: the wait for it is
        part of the busy timeout. A call ahead of this one (a claim abandoned at its request's
        deadline, say) holds it while SQLite waits for another process's write lock; waited
        for without a bound, each call behind it waited that out and then its own timeout."""
        if not self._lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise LedgerUnavailable(
                "sqlite ledger unavailable: another call in this process held it past the "
                "busy timeout (another process holds the database's write lock?)"
            )
        try:
            yield
        finally:
            self._lock.release()

    def _waits_until(self, conn: sqlite3.Connection, deadline: float) -> None:
        """SQLite's own wait for the write lock, cut to what is left of the busy timeout."""
        busy = max(int((deadline - time.monotonic()) * 1000), 0)
        if busy != self._busy_ms:
            conn.execute(f"PRAGMA busy_timeout = {busy}")
            self._busy_ms = busy

    def _transaction(self, body: Any) -> Any:
        deadline = time.monotonic() + self._busy_timeout
        with self._held(deadline):
            while True:
                try:
                    conn = self._connect()
                    self._waits_until(conn, deadline)
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = body(conn)
                    except BaseException:
                        conn.execute("ROLLBACK")
                        raise
                    conn.execute("COMMIT")
                    return result
                except sqlite3.OperationalError as exc:
                    self._drop()
                    # SQLite returns "locked" without calling the busy handler in a few WAL
                    # cases (another process recovering or opening the WAL index); those pass
                    # in milliseconds, so they are retried until the busy timeout is spent.
                    transient = "locked" in str(exc) or "busy" in str(exc)
                    if not transient or time.monotonic() >= deadline:
                        raise LedgerUnavailable(f"sqlite ledger unavailable: {exc}") from exc
                    time.sleep(random.uniform(0.002, 0.02))
                except sqlite3.Error as exc:
                    self._drop()
                    raise LedgerUnavailable(f"sqlite ledger unavailable: {exc}") from exc

    def claim(
        self,
        key: str,
        *,
        fingerprint: str,
        tool: str,
        lease: float,
        ttl: float = DEFAULT_TTL,
        on_stale: StalePolicy = "report",
    ) -> Claim:
        """See ``Ledger.claim``."""
        check_key(key)

        def body(conn: sqlite3.Connection) -> Claim:
            now, mono = self._clock.time(), self._clock.monotonic()
            tick = self._tick(conn, now, mono, write=True)
            self._claims += 1
            if self._claims % _PURGE_EVERY == 0:
                self._purge(conn, now, mono, tick)
            claim, record = decide_claim(
                self._judged(key, self._read(conn, key), now, mono, tick),
                key=key,
                fingerprint=fingerprint,
                tool=tool,
                now=now,
                token=new_token(),
                lease=lease,
                ttl=ttl,
                on_stale=on_stale,
            )
            if record is not None:
                self._write(conn, record, now, mono, tick)
            return claim

        result: Claim = self._transaction(body)
        return result

    def _finish(
        self,
        key: str,
        token: str,
        ttl: float,
        state: LedgerState | None,
        *,
        receipt: str | None = None,
        error: str | None = None,
        retryable: bool = False,
    ) -> None:
        def body(conn: sqlite3.Connection) -> None:
            now, mono = self._clock.time(), self._clock.monotonic()
            tick = self._tick(conn, now, mono, write=True)
            record = decide_finish(
                self._judged(key, self._read(conn, key), now, mono, tick),
                key=key,
                token=token,
                now=now,
                ttl=ttl,
                state=state,
                receipt=receipt,
                error=error,
                retryable=retryable,
            )
            if record is None:
                conn.execute("DELETE FROM toolwire_ledger WHERE key = ?", (key,))
                self._seen.pop(key, None)
            else:
                self._write(conn, record, now, mono, tick)

        self._transaction(body)

    def renew(self, key: str, token: str, lease: float, *, ttl: float = DEFAULT_TTL) -> None:
        """See ``Ledger.renew``."""

        def body(conn: sqlite3.Connection) -> None:
            now, mono = self._clock.time(), self._clock.monotonic()
            tick = self._tick(conn, now, mono, write=True)
            record = decide_renew(
                self._judged(key, self._read(conn, key), now, mono, tick),
                key=key,
                token=token,
                now=now,
                lease=lease,
                ttl=ttl,
            )
            self._write(conn, record, now, mono, tick)

        self._transaction(body)

    def get(self, key: str) -> LedgerRecord | None:
        """See ``Ledger.get``; a record this instance judges kept, or a claim it judges live
        (see the design notes), is returned whatever step the wall clock took, with the
        lease and retention it is read with."""
        with self._held(time.monotonic() + self._busy_timeout):
            now, mono = self._clock.time(), self._clock.monotonic()
            try:
                conn = self._connect()
                tick = self._tick(conn, now, mono, write=False)
                stored = self._read(conn, key)
            except sqlite3.Error as exc:
                self._drop()
                raise LedgerUnavailable(f"sqlite ledger unavailable: {exc}") from exc
            record = self._judged(key, stored, now, mono, tick)
        if record is None or record.expires_at <= now:
            return None
        return record

    def close(self) -> None:
        """Close the connection (it is reopened on the next call)."""
        with self._lock:
            self._drop()

    def __del__(self) -> None:
        # Python 3.13 warns about connections left to the garbage collector; close ours.
        conn = getattr(self, "_conn", None)
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass
