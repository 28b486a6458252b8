"""Fixtures for the execution tests: fake clock, ledgers of every backend, a private redis."""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from toolwire.execution import Executor, FakeClock, Ledger, MemoryLedger, SqliteLedger
from toolwire.execution.clock import Clock
from toolwire.execution.ledger_redis import RedisLedger

LedgerFactory = Callable[[Clock | None], Ledger]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run ``async def`` tests in a fresh event loop (no asyncio plugin needed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = inspect.signature(pyfuncitem.obj).parameters
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


@pytest.fixture(autouse=True)
def executors_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Close every executor a test made once the test ends.

    Many tests leave an outcome unrecorded on purpose (a store down for good, one that hangs).
    Held by an executor nobody closes, it would be tried again by the interpreter's exit hook
    when pytest ends, seconds later, and reported lost there; closing gives it up now, within
    the test (the exit path has a test of its own, in a subprocess).
    """
    made: list[Executor] = []
    init = Executor.__init__

    def tracked(self: Executor, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Executor, "__init__", tracked)
    yield
    for executor in made:
        executor.close(timeout=0)


@dataclass
class RedisServer:
    """A redis-server process this test session started on loopback."""

    host: str
    port: int
    process: subprocess.Popen[bytes]

    def client(self, **options: float) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, **options)  # type: ignore[arg-type]

    def stop(self) -> None:
        stop_redis(self)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_redis(directory: Path) -> RedisServer:
    """Start redis-server on 127.0.0.1 and a free port; fail in CI, skip elsewhere, if missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "redis-server is not on PATH (Debian/Ubuntu package: redis-server)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    last_error = ""
    for _ in range(3):  # the free port may be taken between probing and binding
        port = _free_port()
        process = subprocess.Popen(
            [
                binary,
                "--bind", "127.0.0.1",
                "--port", str(port),
                "--dir", str(directory),
                "--save", "",
                "--appendonly", "no",
                "--daemonize", "no",
                "--loglevel", "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.5).ping():
                    return RedisServer("127.0.0.1", port, process)
            except redis.ConnectionError:
                time.sleep(0.02)
        process.kill()
        _, stderr = process.communicate(timeout=5)
        last_error = stderr.decode(errors="replace")
    pytest.fail(f"redis-server did not start: {last_error}")


def stop_redis(server: RedisServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=5)
    if server.process.stderr is not None:
        server.process.stderr.close()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server for the whole session (loopback only, data in a temp dir)."""
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server
    stop_redis(server)


@pytest.fixture
def spawn_redis(tmp_path: Path) -> Iterator[Callable[[], RedisServer]]:
    """Start extra, short-lived redis-servers (for outage tests); stopped at teardown."""
    servers: list[RedisServer] = []

    def spawn() -> RedisServer:
        directory = tmp_path / f"redis-{len(servers)}"
        directory.mkdir()
        server = start_redis(directory)
        servers.append(server)
        return server

    yield spawn
    for server in servers:
        if server.process.poll() is None:
            stop_redis(server)


@pytest.fixture
def redis_client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    client = redis_server.client(socket_timeout=5)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def make_ledger(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[LedgerFactory]:
    """Build ledgers of the parametrised backend (several may share one store)."""
    made: list[Ledger] = []
    prefix = f"t:{uuid.uuid4().hex}:"
    client: redis.Redis | None = None
    if backend == "redis":
        client = request.getfixturevalue("redis_client")

    def make(clock: Clock | None = None) -> Ledger:
        ledger: Ledger
        if backend == "memory":
            if made:  # memory ledgers cannot share a store: hand out the same one
                return made[0]
            ledger = MemoryLedger(clock=clock)
        elif backend == "sqlite":
            ledger = SqliteLedger(tmp_path / "ledger.db", clock=clock)
        else:
            assert client is not None
            ledger = RedisLedger(client, prefix=prefix, clock=clock)
        made.append(ledger)
        return ledger

    yield make
    for ledger in made:
        if not isinstance(ledger, RedisLedger):  # the redis client is closed by its fixture
            ledger.close()
