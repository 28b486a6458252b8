"""Large calls are validated with the cyclic garbage collector paused, and it is restored."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, field_validator

from toolwire import Assembler, ToolCall
from toolwire.toolset import Toolset
from toolwire.validation import GC_PAUSE_MIN_BYTES

# What the collector's state was each time a field was validated.
SEEN: list[bool] = []


class Notes(BaseModel):
    """Store notes."""

    notes: list[str]

    @field_validator("notes")
    @classmethod
    def _record(cls, value: list[str]) -> list[str]:
        SEEN.append(gc.isenabled())
        return value


class Tagged(BaseModel):
    """Store notes with a tag that must not be blank."""

    notes: list[str]
    tag: str

    @field_validator("tag")
    @classmethod
    def _tag(cls, value: str) -> str:
        SEEN.append(gc.isenabled())
        if not value:
            raise ValueError("the tag must not be blank")
        return value


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    SEEN.clear()
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def _call(tools: Toolset, name: str, arguments: dict[str, object]) -> ToolCall:
    asm = Assembler(tools=tools)
    asm.feed(0, id="call_1", name=name, arguments=json.dumps(arguments))
    (call,) = asm.finish()
    return call


def _notes(size: int) -> list[str]:
    return ["x" * 60] * (size // 64 + 1)


@pytest.mark.parametrize("via_validator", [False, True])
def test_a_large_call_is_validated_with_the_collector_paused(via_validator: bool) -> None:
    tools = Toolset([Notes])
    call = _call(tools, "notes", {"notes": _notes(GC_PAUSE_MIN_BYTES)})
    assert len(call.arguments_bytes) >= GC_PAUSE_MIN_BYTES
    if via_validator:
        outcome = tools.tool("notes").validator.validate(call)
    else:
        outcome = tools.validate(call)
    assert outcome.ok
    assert SEEN == [False]
    assert gc.isenabled()


def test_a_small_call_leaves_the_collector_alone() -> None:
    tools = Toolset([Notes])
    outcome = tools.validate(_call(tools, "notes", {"notes": ["a", "b"]}))
    assert outcome.ok
    assert SEEN == [True]
    assert gc.isenabled()


def test_the_collector_is_restored_after_a_refused_large_call() -> None:
    tools = Toolset([Tagged])
    outcome = tools.validate(_call(tools, "tagged", {"notes": _notes(20_000), "tag": ""}))
    assert not outcome.ok
    assert outcome.errors[0].path == "/tag"
    assert SEEN == [False]
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused() -> None:
    tools = Toolset([Notes])
    call = _call(tools, "notes", {"notes": _notes(20_000)})
    gc.disable()
    assert tools.validate(call).ok
    assert not gc.isenabled()
