"""Shared fixtures: every behavioural test of the core runs in three feed modes."""

from __future__ import annotations

import gc
import json
import random
import sys
from collections.abc import Callable, Iterator
from typing import AnyStr, Literal

import pytest

from toolwire import Assembler, Outcome, Toolset

FeedMode = Literal["whole", "bytewise", "random"]
Splitter = Callable[[bytes], Iterator[bytes]]


def split(data: bytes, mode: FeedMode, seed: int = 0) -> Iterator[bytes]:
    """Cuts `data` the way `mode` says: whole, one byte at a time, or at random points."""
    if mode == "whole":
        yield data
    elif mode == "bytewise":
        for i in range(len(data)):
            yield data[i : i + 1]
    else:
        rng = random.Random(seed * 7919 + len(data))
        i = 0
        while i < len(data):
            n = rng.randint(1, 12)
            yield data[i : i + n]
            i += n


def cut_at(data: AnyStr, points: list[int]) -> list[AnyStr]:
    """Cuts `data` at `points` (taken modulo its length plus one, as hypothesis draws them)."""
    at = sorted({p % (len(data) + 1) for p in points})
    pieces, last = [], 0
    for p in at:
        pieces.append(data[last:p])
        last = p
    pieces.append(data[last:])
    return pieces


@pytest.fixture(params=["whole", "bytewise", "random"])
def feed_mode(request: pytest.FixtureRequest) -> FeedMode:
    """The way fragments are cut (see pydantic-core's `py_and_json` for the idea)."""
    mode: FeedMode = request.param
    return mode


@pytest.fixture
def splitter(feed_mode: FeedMode) -> Splitter:
    """A function cutting bytes in the current feed mode."""

    def cut(data: bytes) -> Iterator[bytes]:
        return split(data, feed_mode)

    return cut


def streamed_call(tools: Toolset, arguments: object, splitter: Splitter) -> tuple[bool, Outcome]:
    """One call of the tool `tool` with `arguments` as JSON, streamed in pieces `splitter`
    cuts: whether the pre-check let it through, and validation's outcome."""
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments="")
    for piece in splitter(json.dumps(arguments).encode()):
        assembler.feed(0, arguments=piece)
    (call,) = assembler.finish()
    return call.error is None, tools.validate(call)


def python_calls(run: Callable[[], object]) -> int:
    """How many Python functions ``run`` calls: work that grows with the size of an input when
    it should not shows here as a count, which a shared machine cannot blur as it does time."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    # A collection would run other objects' finalizers inside the count.
    gc.collect()
    gc.disable()
    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls
