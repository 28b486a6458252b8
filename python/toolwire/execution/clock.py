"""Injectable time sources, so retries, budgets, breakers and ledgers can be tested without waiting.

Two readings are kept apart on purpose: ``monotonic()`` for durations, deadlines and rate windows
(never jumps), and ``time()`` (Unix seconds) for ledger timestamps that other processes must
understand. A ledger that no other process reads (``MemoryLedger``) runs its leases on
``monotonic()`` too, and ``SqliteLedger`` times with it how long a claim's heartbeat stood
still, so a step of the wall clock (``FakeClock.jump`` in tests) cannot make a running write's
claim look stale to any process.

A clock may also offer ``boot() -> str | None``: what names the epoch of its ``monotonic()``
readings, the same in every process that reads the same monotonic clock (the machine's boot),
``None`` where it cannot tell. ``SqliteLedger`` then counts the time between one process's
write and another's read by the monotonic clock too, not by the wall clock alone. A clock
without it is read as ``None``.

A clock may also offer ``wait_until(event, deadline) -> bool``: block until the
``threading.Event`` is set (True) or this clock's ``monotonic()`` reaches ``deadline`` (False).
The executor paces the renewal of its write leases with it, from a thread of its own; both
clocks here have it, and a clock without it is waited for in real seconds (``event.wait``). A
deadline rather than a duration: a clock that moves between reading it and waiting (a test
advancing a ``FakeClock``) cannot push the end of the wait further away.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import threading
import time as _time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "SystemClock"]

# Real seconds between two looks at a FakeClock by a thread waiting for it to move.
_WAIT_POLL = 0.005


@runtime_checkable
class Clock(Protocol):
    """Where the execution layer reads time and how it waits."""

    def time(self) -> float:
        """Return wall-clock Unix time in seconds (shared with other processes)."""
        ...

    def monotonic(self) -> float:
        """Return a monotonic reading in seconds, for durations and windows."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds``."""
        ...

    async def asleep(self, seconds: float) -> None:
        """Suspend the calling task for ``seconds``."""
        ...


class SystemClock:
    """The real clock: ``time.time``, ``time.monotonic``, ``time.sleep`` and ``asyncio.sleep``."""

    def time(self) -> float:
        """Return ``time.time()``."""
        return _time.time()

    def monotonic(self) -> float:
        """Return ``time.monotonic()``."""
        return _time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Call ``time.sleep``."""
        _time.sleep(max(0.0, seconds))

    async def asleep(self, seconds: float) -> None:
        """Await ``asyncio.sleep``."""
        await asyncio.sleep(max(0.0, seconds))

    def boot(self) -> str | None:
        """Return the kernel's boot id on Linux, where ``time.monotonic()`` counts from the
        boot in every process; ``None`` elsewhere, or where it cannot be read."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
                return file.read().strip() or None
        except OSError:
            return None

    def wait_until(self, event: threading.Event, deadline: float) -> bool:
        """Return ``event.wait`` until the ``time.monotonic()`` reading ``deadline`` (at most
        ``threading.TIMEOUT_MAX`` seconds: a lock's timeout cannot be longer)."""
        left = min(max(0.0, deadline - _time.monotonic()), threading.TIMEOUT_MAX)
        return event.wait(left)


class FakeClock:
    """A manual clock for tests: sleeping advances it instantly and records the requested delay.

    Args:
        start: Initial wall-clock reading (Unix seconds).
        monotonic_start: Initial monotonic reading.
        advance_on_sleep: If false, ``sleep`` records the delay but does not move time.
    """

    def __init__(
        self,
        start: float = 1_700_000_000.0,
        *,
        monotonic_start: float = 1_000.0,
        advance_on_sleep: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self._wall = start
        self._mono = monotonic_start
        self.advance_on_sleep = advance_on_sleep
        self.sleeps: list[float] = []
        self._boot = f"fake-{secrets.token_hex(8)}"

    def time(self) -> float:
        """Return the fake wall-clock reading."""
        with self._lock:
            return self._wall

    def monotonic(self) -> float:
        """Return the fake monotonic reading."""
        with self._lock:
            return self._mono

    def advance(self, seconds: float) -> None:
        """Move both readings forward by ``seconds``."""
        with self._lock:
            self._wall += seconds
            self._mono += seconds

    def boot(self) -> str:
        """Return an epoch name of this clock's own: everything reading this clock shares
        its monotonic readings, as the processes of one machine's boot do."""
        return self._boot

    def jump(self, seconds: float) -> None:
        """Step the wall-clock reading by ``seconds`` (either way), as NTP or a resumed VM
        does, leaving the monotonic reading where it is: no time passed."""
        with self._lock:
            self._wall += seconds

    def sleep(self, seconds: float) -> None:
        """Record the delay and, unless disabled, advance time by it."""
        with self._lock:
            self.sleeps.append(seconds)
            if self.advance_on_sleep:
                self._wall += max(0.0, seconds)
                self._mono += max(0.0, seconds)

    async def asleep(self, seconds: float) -> None:
        """Like ``sleep``, then yield to the event loop once so cancellation can land."""
        self.sleep(seconds)
        await asyncio.sleep(0)

    def wait_until(self, event: threading.Event, deadline: float) -> bool:
        """Block until ``event`` is set (True) or someone else moved the monotonic reading to
        ``deadline`` (False: a test's ``advance``, another thread's ``sleep``). It never moves
        the clock itself nor records a sleep; it looks every few real milliseconds."""
        while not event.wait(_WAIT_POLL):
            if self.monotonic() >= deadline:
                return False
        return True
