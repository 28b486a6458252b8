"""Shared fixtures: every behavioural test of the core runs in three feed modes."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import AnyStr, Literal

import pytest

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
