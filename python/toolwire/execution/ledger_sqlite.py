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
  call could act on it (under ``assume_failed_and_retry``: run the write a second time). So the
  instance also keeps, for each claim it handed out and that is not finished, the lease's end
  on the clock's ``monotonic()`` reading, renewed with it: the rules read a claim that is live
  by that count as live on the wall clock too (``in_progress`` to an identical call, its
  owner's renewal and outcome accepted), whatever step the wall clock took. This fences the
  claims of this instance only (the writes of this process's executor); another process sees
  the stored wall-clock lease, until the holder's next renewal restamps it from the new time.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from dataclasses import replace
from typing import Any, Literal

from toolwire.execution.clock import Clock, SystemClock
from toolwire.execution.errors import ClaimLost, LedgerUnavailable
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
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS toolwire_ledger_expires ON toolwire_ledger (expires_at);
"""
_PURGE_EVERY = 256


class SqliteLedger(Ledger):
    """Ledger in a SQLite file.

    Args:
        path: Database file (created if missing; its directory must exist).
        clock: Time source; ``time()`` stamps records (one machine, so one clock), and
            ``monotonic()`` fences this instance's own live claims against a step of it.
        busy_timeout: Seconds to wait for another process's write lock before giving up.
        synchronous: SQLite ``synchronous`` pragma (``NORMAL`` or ``FULL``).
    """

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
        self._claims = 0
        # key -> (token, monotonic end of its lease) for the claims this instance holds.
        self._held: dict[str, tuple[str, float]] = {}

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
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA synchronous = {self._synchronous}")
                conn.executescript(_SCHEMA)
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

    def _read(self, conn: sqlite3.Connection, key: str) -> LedgerRecord | None:
        row = conn.execute("SELECT record FROM toolwire_ledger WHERE key = ?", (key,)).fetchone()
        return None if row is None else LedgerRecord.from_json(row[0])

    def _write(self, conn: sqlite3.Connection, record: LedgerRecord) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO toolwire_ledger (key, record, expires_at) VALUES (?, ?, ?)",
            (record.key, record.to_json(), record.expires_at),
        )

    def _fenced(
        self, key: str, existing: LedgerRecord | None, now: float, mono: float
    ) -> LedgerRecord | None:
        """``existing`` as the decision rules should read it: when it is a claim this instance
        holds and whose lease runs on by the monotonic clock, its lease (and retention) run at
        least that long from ``now`` on the wall clock too, whatever step that clock took."""
        held = self._held.get(key)
        if existing is None or held is None:
            return existing
        token, end = held
        if existing.state != "in_progress" or existing.token != token or end <= mono:
            return existing
        live_until = now + (end - mono)
        return replace(
            existing,
            lease_expires_at=max(existing.lease_expires_at, live_until),
            expires_at=max(existing.expires_at, live_until),
        )

    def _forget(self, key: str, token: str) -> None:
        """This instance no longer holds ``token``'s claim (finished, released or lost)."""
        if self._held.get(key, ("", 0.0))[0] == token:
            del self._held[key]

    def _transaction(self, body: Any) -> Any:
        with self._lock:
            deadline = time.monotonic() + self._busy_timeout
            while True:
                try:
                    conn = self._connect()
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
            now = self._clock.time()
            mono = self._clock.monotonic()
            self._claims += 1
            if self._claims % _PURGE_EVERY == 0:
                conn.execute("DELETE FROM toolwire_ledger WHERE expires_at <= ?", (now,))
                self._held = {k: h for k, h in self._held.items() if h[1] > mono}
            token = new_token()
            claim, record = decide_claim(
                self._fenced(key, self._read(conn, key), now, mono),
                key=key,
                fingerprint=fingerprint,
                tool=tool,
                now=now,
                token=token,
                lease=lease,
                ttl=ttl,
                on_stale=on_stale,
            )
            if record is not None:
                self._write(conn, record)
            if claim.token == token:
                self._held[key] = (token, mono + lease)
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
            now = self._clock.time()
            existing = self._fenced(key, self._read(conn, key), now, self._clock.monotonic())
            record = decide_finish(
                existing,
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
            else:
                self._write(conn, record)

        try:
            self._transaction(body)
        except ClaimLost:
            with self._lock:
                self._forget(key, token)
            raise
        # Only once it is stored: a claim whose outcome the store refused is still held.
        with self._lock:
            self._forget(key, token)

    def renew(self, key: str, token: str, lease: float, *, ttl: float = DEFAULT_TTL) -> None:
        """See ``Ledger.renew``."""

        def body(conn: sqlite3.Connection) -> None:
            now, mono = self._clock.time(), self._clock.monotonic()
            try:
                record = decide_renew(
                    self._fenced(key, self._read(conn, key), now, mono),
                    key=key,
                    token=token,
                    now=now,
                    lease=lease,
                    ttl=ttl,
                )
            except ClaimLost:
                self._forget(key, token)
                raise
            self._write(conn, record)
            held = self._held.get(key)
            if held is not None and held[0] == token:
                self._held[key] = (token, max(held[1], mono + lease))

        self._transaction(body)

    def get(self, key: str) -> LedgerRecord | None:
        """See ``Ledger.get``."""
        with self._lock:
            try:
                record = self._read(self._connect(), key)
            except sqlite3.Error as exc:
                self._drop()
                raise LedgerUnavailable(f"sqlite ledger unavailable: {exc}") from exc
        if record is None or record.expires_at <= self._clock.time():
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
