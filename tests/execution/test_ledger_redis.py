"""Redis ledger: server time, crash recovery, outages, slow servers, corrupt records (#20)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from toolwire.execution import (
    Call,
    ClaimLost,
    Executor,
    FakeClock,
    LedgerCorrupt,
    LedgerUnavailable,
    RequestContext,
    StalePolicy,
)
from toolwire.execution.ledger_redis import RedisLedger

SPAWN = multiprocessing.get_context("spawn")


def fail_fast(server: Any, timeout: float = 0.5) -> redis.Redis:
    """A client that does not retry, so an outage shows at once instead of after ~5 s."""
    return redis.Redis(
        host=server.host,
        port=server.port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def test_records_live_on_the_server(redis_client: redis.Redis, redis_server: Any) -> None:
    first = RedisLedger(redis_client)
    claim = first.claim("k", fingerprint="f", tool="t", lease=60, ttl=3600)
    assert claim.token is not None
    first.complete("k", claim.token, {"id": 1}, ttl=3600)
    other = RedisLedger(redis_server.client())  # another process would see the same
    replay = other.claim("k", fingerprint="f", tool="t", lease=60)
    assert replay.status == "replay" and replay.record is not None
    assert replay.record.receipt_value() == {"id": 1}
    # Retention is enforced by the server as well.
    assert 3590_000 < redis_client.pttl("toolwire:ledger:k") <= 3600_000
    other.close()


def test_server_time_makes_client_clock_skew_harmless(redis_client: redis.Redis) -> None:
    on_server_time = RedisLedger(redis_client)  # the default: Redis TIME
    assert on_server_time.claim("demo", fingerprint="f", tool="t", lease=60).status == "claimed"
    assert on_server_time.claim("k", fingerprint="f", tool="t", lease=60).status == "claimed"
    # The hazard: an instance trusting its own clock, an hour ahead, sees a live claim as stale.
    ahead = RedisLedger(redis_client, clock=FakeClock(start=time.time() + 3600))
    assert ahead.claim("demo", fingerprint="f", tool="t", lease=60).status == "stale"
    # Instances on server time agree the claim is live, whatever their own clocks say.
    for _ in range(3):
        status = RedisLedger(redis_client).claim("k", fingerprint="f", tool="t", lease=60).status
        assert status == "in_progress"


def test_stale_detection_on_server_time(redis_client: redis.Redis) -> None:
    ledger = RedisLedger(redis_client)
    ledger.claim("k", fingerprint="f", tool="t", lease=0.2)
    assert ledger.claim("k", fingerprint="f", tool="t", lease=0.2).status == "in_progress"
    time.sleep(0.3)
    stale = ledger.claim("k", fingerprint="f", tool="t", lease=0.2, on_stale="report")
    assert stale.status == "stale"
    record = ledger.get("k")
    assert record is not None and record.state == "unknown"
    assert record.error_value() is not None


@pytest.mark.parametrize("skew", [3600.0, -3600.0])
def test_in_progress_retry_after_is_measured_on_server_time(
    redis_client: redis.Redis, skew: float
) -> None:
    # The executor's clock is an hour off the server's: the wait it gives the model for a claim
    # in progress must still be what is left of the holder's lease, as the server counts it.
    entered, release = threading.Event(), threading.Event()

    def slow(args: Any) -> str:
        entered.set()
        assert release.wait(5)
        return "charged"

    clock = FakeClock(start=time.time() + skew)
    ex = Executor(clock=clock, ledger=RedisLedger(redis_client), breaker=False)
    ex.register("charge", slow, side_effects=True, idempotency_key="order", in_progress_expiry=40)
    ctx = RequestContext("r", "s")
    holder = threading.Thread(target=ex.execute, args=(Call("charge", "c1", {"order": "o"}), ctx))
    holder.start()
    try:
        assert entered.wait(5)
        busy = ex.execute(Call("charge", "c2", {"order": "o"}), ctx)
    finally:
        release.set()
        holder.join(5)
    assert busy.state == "in_progress" and busy.error is not None
    assert 35.0 < busy.error["retry_after"] <= 40.0


def test_claim_reports_the_lease_left_on_server_time(redis_client: redis.Redis) -> None:
    RedisLedger(redis_client).claim("k", fingerprint="f", tool="t", lease=30)
    skewed = RedisLedger(redis_client)
    busy = skewed.claim("k", fingerprint="f", tool="t", lease=30)
    assert busy.status == "in_progress" and busy.lease_remaining is not None
    assert 25.0 < busy.lease_remaining <= 30.0
    assert skewed.claim("other", fingerprint="f", tool="t", lease=30).lease_remaining is None


def test_renewal_on_server_time_moves_the_keys_expiry(redis_client: redis.Redis) -> None:
    # The Lua script reads the server's TIME like the claim, and moves the key's PEXPIRE with
    # the lease, so the server cannot forget a record whose owner is still renewing it.
    ledger = RedisLedger(redis_client)
    claim = ledger.claim("k", fingerprint="f", tool="t", lease=0.2, ttl=0.2)
    assert claim.token is not None
    assert redis_client.pttl("toolwire:ledger:k") <= 400
    ledger.renew("k", claim.token, 60, ttl=3600)
    assert 3650_000 < redis_client.pttl("toolwire:ledger:k") <= 3660_000
    time.sleep(0.5)  # the first lease and its retention are over
    assert ledger.claim("k", fingerprint="f", tool="t", lease=0.2).status == "in_progress"
    record = ledger.get("k")
    assert record is not None and record.lease_expires_at > time.time() + 50


def test_renewal_of_a_corrupt_record_fails_closed(redis_client: redis.Redis) -> None:
    ledger = RedisLedger(redis_client)
    redis_client.hset("toolwire:ledger:partial", mapping={"state": "in_progress"})
    with pytest.raises(LedgerCorrupt):
        ledger.renew("partial", "token", 60)
    redis_client.set("toolwire:ledger:wrongtype", "x")
    with pytest.raises(LedgerCorrupt):
        ledger.renew("wrongtype", "token", 60)


POLICIES = ["report", "assume_failed_and_retry", "assume_succeeded"]
CRASH_DB = 1  # the per-test fixture flushes db 0; the crashed claims live in db 1
LEASE = 0.5


def _crash_after_side_effects(host: str, port: int, markers: str) -> None:
    """Start one write per policy; kill the process once every side effect has happened."""
    ex = Executor(ledger=RedisLedger(redis.Redis(host=host, port=port, db=CRASH_DB)))
    lock, done = threading.Lock(), []

    def charge(args: Any) -> None:
        Path(markers, args["id"]).write_text("charged")
        with lock:
            done.append(args["id"])
            if len(done) == len(POLICIES):
                os._exit(17)
        threading.Event().wait()

    ex.register("charge", charge, side_effects=True, in_progress_expiry=LEASE)
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
def crashed(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """Claims left in Redis by a process killed after its side effects (one spawn per module)."""
    redis_server.client(db=CRASH_DB).flushdb()
    markers = tmp_path_factory.mktemp("crash")
    child = SPAWN.Process(
        target=_crash_after_side_effects,
        args=(redis_server.host, redis_server.port, str(markers)),
    )
    child.start()
    child.join(60)
    assert child.exitcode == 17
    return markers, time.monotonic()


@pytest.mark.parametrize(
    ("policy", "state", "reruns"),
    [
        ("report", "unknown_outcome", 0),
        ("assume_failed_and_retry", "ok", 1),
        ("assume_succeeded", "duplicate_suppressed", 0),
    ],
)
def test_crash_between_side_effect_and_ledger_update_recovers_by_policy(
    redis_server: Any,
    crashed: tuple[Path, float],
    policy: StalePolicy,
    state: str,
    reruns: int,
) -> None:
    markers, crashed_at = crashed
    assert (markers / policy).read_text() == "charged"
    runs: list[int] = []
    client = redis_server.client(db=CRASH_DB)
    ex = Executor(ledger=RedisLedger(client))
    ex.register(
        "charge",
        lambda args: runs.append(1),
        side_effects=True,
        in_progress_expiry=LEASE,
        on_stale_in_progress=policy,
    )
    call, ctx = Call("charge", policy, {"id": policy, "cents": 5}), RequestContext("r", "s")
    time.sleep(max(0.0, crashed_at + LEASE + 0.1 - time.monotonic()))  # server-clock lease
    result = ex.execute(call, ctx)
    assert result.state == state and len(runs) == reruns
    assert ex.observer.counts["stale_in_progress"] == 1
    assert ex.execute(call, ctx).state in ("unknown_outcome", "duplicate_suppressed")
    assert len(runs) == reruns
    client.close()


def test_server_down_fails_closed(spawn_redis: Any) -> None:
    server = spawn_redis()
    runs: list[int] = []
    client = fail_fast(server)
    ex = Executor(ledger=RedisLedger(client))
    ex.register("w", lambda args: runs.append(1), side_effects=True)
    ctx = RequestContext("r", "s")
    assert ex.execute(Call("w", "c1", {}), ctx).state == "ok"
    server.stop()
    result = ex.execute(Call("w", "c2", {}), ctx)
    assert result.state == "tool_unavailable" and runs == [1]
    assert result.error is not None and result.error["type"] == "ledger_unavailable"
    # A read-only tool does not need the ledger and keeps working.
    ex.register("r", lambda args: "read")
    assert ex.execute(Call("r", "c3", {}), ctx).state == "ok"
    client.close()


def test_server_dies_between_claim_and_completion(spawn_redis: Any) -> None:
    server = spawn_redis()
    client = fail_fast(server)
    ex = Executor(ledger=RedisLedger(client))

    def write(args: Any) -> str:
        server.stop()  # the store fails over mid-call
        return "written"

    ex.register("w", write, side_effects=True)
    result = ex.execute(Call("w", "c1", {}), RequestContext("r", "s"))
    # The side effect happened, so the result says so; the ledger problem is reported.
    assert result.state == "ok" and result.value == "written"
    assert any("ledger update failed" in w for w in result.warnings)
    assert ex.observer.counts["ledger_errors"] == 1
    client.close()


def test_slow_server_past_the_deadline_fails_closed(redis_server: Any) -> None:
    admin = redis_server.client()
    slow = fail_fast(redis_server, timeout=0.1)
    ledger = RedisLedger(slow, prefix=f"slow:{time.time_ns()}:")
    ledger.get("warm-up")
    runs: list[int] = []
    ex = Executor(ledger=ledger)
    ex.register("w", lambda args: runs.append(1), side_effects=True)
    admin.client_pause(400)  # every client blocks for 400 ms
    try:
        result = ex.execute(Call("w", "c1", {}), RequestContext("r", "s"))
    finally:
        admin.client_unpause()
    assert result.state == "tool_unavailable" and runs == []
    with pytest.raises(LedgerUnavailable):
        admin.client_pause(300)
        try:
            ledger.claim("k", fingerprint="f", tool="t", lease=1)
        finally:
            admin.client_unpause()
    admin.close()
    slow.close()


def test_corrupt_records_fail_closed(redis_client: redis.Redis) -> None:
    ledger = RedisLedger(redis_client)
    redis_client.set("toolwire:ledger:wrongtype", "x")
    with pytest.raises(LedgerCorrupt):
        ledger.claim("wrongtype", fingerprint="f", tool="t", lease=1)
    redis_client.hset("toolwire:ledger:partial", mapping={"state": "in_progress"})
    with pytest.raises(LedgerCorrupt):
        ledger.claim("partial", fingerprint="f", tool="t", lease=1)
    with pytest.raises(LedgerCorrupt):
        ledger.get("partial")
    runs: list[int] = []
    ex = Executor(ledger=ledger)
    ex.register("w", lambda args: runs.append(1), side_effects=True)
    key = ex.execute(Call("w", "c", {}), RequestContext("r", "s")).idempotency_key
    redis_client.hset(f"toolwire:ledger:{key}", "state", "exploded")
    result = ex.execute(Call("w", "c", {}), RequestContext("r", "s"))
    assert result.state == "tool_unavailable" and runs == [1]
    assert result.error is not None and result.error["type"] == "ledger_corrupt"


def test_retried_claims_and_finishes_are_recognised(redis_client: redis.Redis) -> None:
    ledger = RedisLedger(redis_client)
    script_args = ["f", "t", "token-1", 60_000, 3_600_000, "report", ""]
    # What a client-side retry does: the same script, the same token, twice.
    first = ledger._claim_script(keys=["toolwire:ledger:k"], args=script_args)
    second = ledger._claim_script(keys=["toolwire:ledger:k"], args=script_args)
    assert first[0] == second[0] == b"claimed"
    ledger.complete("k", "token-1", "r")
    ledger.complete("k", "token-1", "r")
    record = ledger.get("k")
    assert record is not None and record.state == "succeeded" and record.executions == 1


class LosesOneAnswer(redis.Redis):
    """A client whose next script answer is lost on the way back (a timeout after the server
    ran it), with ``meanwhile`` run before the loss: redis-py then sends the script again."""

    meanwhile: Callable[[], object] | None = None

    def parse_response(self, connection: Any, command_name: Any, **options: Any) -> Any:
        response = super().parse_response(connection, command_name, **options)
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None and command_name == "EVALSHA":
            meanwhile()
            raise redis.TimeoutError("the answer was lost")
        return response


def test_a_release_sent_again_after_the_key_was_claimed_again_is_no_takeover(
    redis_server: Any, redis_client: redis.Redis
) -> None:
    client = LosesOneAnswer(
        host=redis_server.host, port=redis_server.port, retry=Retry(NoBackoff(), 1)
    )
    ledger, other = RedisLedger(client), RedisLedger(redis_client)
    mine = ledger.claim("k", fingerprint="f", tool="t", lease=60)
    assert mine.token is not None
    theirs: list[str | None] = []
    client.meanwhile = lambda: theirs.append(
        other.claim("k", fingerprint="f", tool="t", lease=60).token
    )
    ledger.release("k", mine.token)  # landed, answer lost, sent again: nothing was lost
    assert client.meanwhile is None and theirs[0] is not None
    record = other.get("k")
    assert record is not None and record.state == "in_progress" and record.token == theirs[0]
    # Released, then the other call finished: a late retry of the release changes nothing.
    other.complete("k", theirs[0], "done")
    ledger.release("k", mine.token)
    replay = other.claim("k", fingerprint="f", tool="t", lease=60)
    assert replay.status == "replay" and replay.record is not None
    assert replay.record.receipt_value() == "done"
    client.close()


def test_a_release_of_a_claim_taken_over_is_still_a_lost_claim(redis_client: redis.Redis) -> None:
    ledger = RedisLedger(redis_client)
    first = ledger.claim("k", fingerprint="f", tool="t", lease=0.05)
    assert first.token is not None
    time.sleep(0.1)  # the lease runs out on the server's clock
    taken = ledger.claim(
        "k", fingerprint="f", tool="t", lease=60, on_stale="assume_failed_and_retry"
    )
    assert taken.status == "claimed" and taken.recovered
    with pytest.raises(ClaimLost):
        ledger.release("k", first.token)
    # A released key reads as no record to every operation.
    assert taken.token is not None
    ledger.release("k", taken.token)
    assert ledger.get("k") is None
    with pytest.raises(ClaimLost):
        ledger.renew("k", taken.token, 60)
    with pytest.raises(ClaimLost):
        ledger.complete("k", taken.token, "late")
    assert ledger.claim("k", fingerprint="other", tool="t", lease=60).status == "claimed"


def test_a_wall_clock_step_on_one_client_takes_no_live_claim(redis_client: redis.Redis) -> None:
    clock = FakeClock(start=time.time())
    holder, other = RedisLedger(redis_client, clock=clock), RedisLedger(redis_client, clock=clock)

    def claim(ledger: RedisLedger) -> Any:
        return ledger.claim(
            "k", fingerprint="f", tool="t", lease=30, ttl=600, on_stale="assume_failed_and_retry"
        )

    held = claim(holder)
    assert held.token is not None
    clock.jump(2 * 3600.0)  # NTP, a resumed VM: no time passed
    busy = claim(other)
    assert busy.status == "in_progress" and busy.lease_remaining == pytest.approx(30, abs=1)
    holder.complete("k", held.token, "charged", ttl=600)
    clock.jump(3600.0)  # past the retention on the wall clock, not in elapsed time
    replay = claim(other)
    assert replay.status == "replay" and replay.record is not None
    assert replay.record.receipt_value() == "charged"
    clock.advance(601)  # elapsed time does end the retention
    assert other.get("k") is None


def test_claims_are_atomic_across_clients(redis_server: Any) -> None:
    clients = [redis_server.client() for _ in range(8)]
    ledgers = [RedisLedger(c, prefix="atomic:") for c in clients]
    statuses: list[str] = []
    barrier = threading.Barrier(len(ledgers))

    def worker(ledger: RedisLedger) -> None:
        barrier.wait()
        statuses.append(ledger.claim("k", fingerprint="f", tool="t", lease=5).status)

    threads = [threading.Thread(target=worker, args=(ledger,)) for ledger in ledgers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == ["claimed"] + ["in_progress"] * 7
    for c in clients:
        c.close()


@contextlib.contextmanager
def hung_redis() -> Iterator[tuple[str, int]]:
    """A TCP server on loopback that accepts connections and never answers (a stuck Redis)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()
    finally:
        stop.set()
        acceptor.join(5)
        for conn in accepted:  # the abandoned claim's read fails, and its thread ends
            conn.close()
        listener.close()


def _writer_on(
    host: str, port: int, *, socket_timeout: float | None = None
) -> tuple[Executor, list[int]]:
    """A write tool `w` (it charges 42) over a Redis ledger at `host:port`, and its runs.

    What users configure: a plain client whose own socket timeout, if any, is long; only the
    request has a deadline that should bound the call.
    """
    client = redis.Redis(
        host=host, port=port, socket_timeout=socket_timeout, retry=Retry(NoBackoff(), 0)
    )
    runs: list[int] = []
    ex = Executor(ledger=RedisLedger(client))

    def write(args: Any) -> dict[str, int]:
        runs.append(1)
        return {"charged": 42}

    ex.register("w", write, side_effects=True)
    return ex, runs


def _assert_ended_unavailable(ex: Executor, result: Any, runs: list[int], took: float) -> None:
    assert took < 3.0, f"the claim held the call {took:.1f}s past a 0.3 s deadline"
    assert result.state == "tool_unavailable" and runs == []
    assert result.error is not None and result.error["type"] == "ledger_unavailable"
    assert result.error["retryable"] is True
    with pytest.raises(LedgerUnavailable):
        result.raise_for_error()
    assert ex.observer.counts["calls.tool_unavailable"] == 1


def test_hung_store_cannot_hold_a_write_past_the_request_deadline() -> None:
    with hung_redis() as (host, port):
        ex, runs = _writer_on(host, port)
        started = time.monotonic()
        result = ex.execute(Call("w", "c1", {}), ex.request("r", "s", timeout=0.3))
        _assert_ended_unavailable(ex, result, runs, time.monotonic() - started)


async def test_hung_store_cannot_hold_an_async_write_past_the_request_deadline() -> None:
    with hung_redis() as (host, port):
        ex, runs = _writer_on(host, port)
        started = time.monotonic()
        ctx = ex.request("r", "s", timeout=0.3)
        results = await asyncio.wait_for(
            ex.aexecute_all([Call("w", "c1", {}), Call("w", "c2", {})], ctx), timeout=10
        )
        took = time.monotonic() - started
        assert [r.call_id for r in results] == ["c1", "c2"]
        assert took < 3.0 and all(r.state == "tool_unavailable" for r in results)
        assert all(r.error is not None and r.error["retryable"] for r in results) and runs == []


def test_no_time_left_ends_the_write_without_asking_the_store() -> None:
    with hung_redis() as (host, port):
        ex, runs = _writer_on(host, port)
        clock = ex.clock
        ctx = RequestContext("r", "s", deadline=clock.monotonic() - 1)
        started = time.monotonic()
        result = ex.execute(Call("w", "c1", {}), ctx)
        assert time.monotonic() - started < 3.0
        assert result.state == "downstream_failed" and runs == []
        assert result.error is not None and result.error["type"] == "deadline_exceeded"


@contextlib.contextmanager
def redis_that_hangs_after_the_claim() -> Iterator[tuple[str, int]]:
    """A TCP server on loopback speaking just enough RESP to grant the first claim (an
    `EVALSHA` of the claim script), then never answering again (a Redis that got stuck)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def bulk(value: str | bytes) -> bytes:
        data = value.encode() if isinstance(value, str) else value
        return b"$%d\r\n%s\r\n" % (len(data), data)

    def commands(conn: socket.socket) -> Iterator[list[bytes]]:
        buf = b""
        while True:
            while True:
                parsed = _resp_command(buf)
                if parsed is None:
                    break
                command, buf = parsed
                yield command
            chunk = conn.recv(65536)
            if not chunk:
                return
            buf += chunk

    def serve(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            for command in commands(conn):
                name = command[0].upper()
                if name == b"HELLO":  # redis-py asks for RESP3; every reply below is RESP3 too
                    conn.sendall(b"%2\r\n" + bulk("server") + bulk("redis"))
                    conn.sendall(bulk("proto") + b":3\r\n")
                elif name == b"CLIENT":
                    conn.sendall(b"+OK\r\n")
                elif name == b"EVALSHA" and not stop.is_set():
                    stop.set()  # the claim is answered; nothing after it is
                    fingerprint, tool, token = command[4], command[5], command[6]
                    now = int(time.time() * 1000)
                    fields = {
                        b"state": b"in_progress",
                        b"fingerprint": fingerprint,
                        b"tool": tool,
                        b"token": token,
                        b"created_at": b"%d" % now,
                        b"lease_expires_at": b"%d" % (now + 60_000),
                        b"expires_at": b"%d" % (now + 600_000),
                    }
                    flat = b"".join(bulk(k) + bulk(v) for k, v in fields.items())
                    conn.sendall(b"*3\r\n" + bulk("claimed") + b"*14\r\n" + flat + b":0\r\n")

    closing = threading.Event()

    def accept() -> None:
        # Polled, so that the listener is closed only once nothing can accept on it: the
        # executor retries an outcome it could not record, and a connection accepted after
        # the last one was closed would be left to the garbage collector.
        listener.settimeout(0.05)
        while not closing.is_set():
            try:
                conn = listener.accept()[0]
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            accepted.append(conn)
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()
    finally:
        closing.set()
        acceptor.join(5)
        listener.close()
        for conn in accepted:
            conn.close()


def _resp_command(buf: bytes) -> tuple[list[bytes], bytes] | None:
    """One RESP array of bulk strings from the front of `buf` (None until it is complete)."""
    if not buf.startswith(b"*") or b"\r\n" not in buf:
        return None
    head, rest = buf.split(b"\r\n", 1)
    parts: list[bytes] = []
    for _ in range(int(head[1:])):
        if b"\r\n" not in rest:
            return None
        size, rest = rest.split(b"\r\n", 1)
        length = int(size[1:])
        if len(rest) < length + 2:
            return None
        parts.append(rest[:length])
        rest = rest[length + 2 :]
    return parts, rest


def _assert_result_kept(ex: Executor, result: Any, runs: list[int], took: float) -> None:
    assert took < 3.0, f"recording the outcome held the call {took:.1f}s past a 0.5 s deadline"
    assert runs == [1]
    assert result.state == "ok" and result.value == {"charged": 42}
    assert any("did not answer" in w for w in result.warnings), result.warnings
    assert ex.observer.counts["ledger_errors"] == 1


def test_store_hanging_after_the_claim_cannot_hold_the_result_past_the_deadline() -> None:
    with redis_that_hangs_after_the_claim() as (host, port):
        ex, runs = _writer_on(host, port, socket_timeout=6)
        started = time.monotonic()
        result = ex.execute(Call("w", "c1", {}), ex.request("r", "s", timeout=0.5))
        _assert_result_kept(ex, result, runs, time.monotonic() - started)


async def test_store_hanging_after_the_claim_cannot_hold_an_async_result() -> None:
    with redis_that_hangs_after_the_claim() as (host, port):
        ex, runs = _writer_on(host, port, socket_timeout=6)
        started = time.monotonic()
        ctx = ex.request("r", "s", timeout=0.5)
        result = await asyncio.wait_for(ex.aexecute(Call("w", "c1", {}), ctx), timeout=10)
        _assert_result_kept(ex, result, runs, time.monotonic() - started)
