"""Tools see the caller's context variables (current span, tenant, logging context) however they
run: in the caller's thread, in a thread of their own for a timeout or a deadline, in a pool."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolwire.execution import Call, ExecutionResult, Executor, SqliteLedger, ToolSpec

TENANT: contextvars.ContextVar[str | None] = contextvars.ContextVar("tenant", default=None)
# Timeouts and deadlines here are upper bounds only: they decide the path a call takes.
PATIENCE = 30.0


def seen_by_tool(args: Any) -> dict[str, Any]:
    seen = TENANT.get()
    TENANT.set("set by the tool")  # the tool's own: never the caller's, never the next call's
    return {"tenant": seen}


async def seen_by_async_tool(args: Any) -> dict[str, Any]:
    return seen_by_tool(args)


def executor(tmp_path: Path) -> Executor:
    return Executor(
        {
            "plain": seen_by_tool,
            "timed": ToolSpec(seen_by_tool, timeout=PATIENCE),
            "write": ToolSpec(seen_by_tool, side_effects=True, timeout=PATIENCE),
            "async_timed": ToolSpec(seen_by_async_tool, timeout=PATIENCE),
        },
        ledger=SqliteLedger(tmp_path / "ledger.db"),
        breaker=False,
    )


@pytest.fixture
def tenant() -> Iterator[None]:
    token = TENANT.set("acme")
    yield
    TENANT.reset(token)


SYNC_PATHS: dict[str, Callable[[Executor], list[ExecutionResult]]] = {
    "no timeout": lambda ex: [ex.execute(Call("plain", "c", {}))],
    "tool timeout": lambda ex: [ex.execute(Call("timed", "c", {}))],
    "request deadline": lambda ex: [
        ex.execute(Call("plain", "c", {}), ex.request(timeout=PATIENCE))
    ],
    "write under a deadline": lambda ex: [
        ex.execute(Call("write", "c", {}), ex.request(timeout=PATIENCE))
    ],
    "execute_all in a pool": lambda ex: ex.execute_all(
        [Call("plain", "a", {}), Call("timed", "b", {}), Call("write", "c", {})], max_workers=3
    ),
}


@pytest.mark.usefixtures("tenant")
@pytest.mark.parametrize("path", list(SYNC_PATHS))
def test_sync_tools_see_the_callers_context(tmp_path: Path, path: str) -> None:
    results = SYNC_PATHS[path](executor(tmp_path))
    assert [r.value for r in results] == [{"tenant": "acme"}] * len(results)
    assert TENANT.get() == "acme"


@pytest.mark.parametrize("concurrency", [None, 2])
async def test_async_calls_see_the_callers_context(tmp_path: Path, concurrency: int | None) -> None:
    TENANT.set("acme")
    ex = executor(tmp_path)
    calls = [
        Call("plain", "a", {}),
        Call("timed", "b", {}),
        Call("write", "c", {}),
        Call("async_timed", "d", {}),
    ]
    results = [await ex.aexecute(calls[1], ex.request(timeout=PATIENCE))]
    results += await ex.aexecute_all(calls, concurrency=concurrency)
    assert [r.value for r in results] == [{"tenant": "acme"}] * len(results)
    assert TENANT.get() == "acme"
