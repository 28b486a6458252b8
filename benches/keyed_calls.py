"""Times `Toolset.validate` against pydantic's `model_validate_json` on large calls to tools
with integer-keyed dict fields or set fields, which go through the coercion walk.

    python benches/keyed_calls.py [SIZE ...]     (default sizes: 1000 10000 100000)

prints one line per case and size: pydantic's time, toolwire's, and their ratio (best of
several runs each, calls assembled with the pre-check as a stream would). Both run with the
cyclic garbage collector paused, as `Toolset.validate` pauses it for a large call: otherwise
pydantic's figure at 100,000 items is mostly collections. Not a test: no
figure is asserted, but every case checks that toolwire accepts the call and records the
coercions it should, before timing it.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from toolwire import Assembler, Toolset


class Item(BaseModel):
    """A small object, thousands of which make a large call."""

    name: str
    qty: int


class Labelled(BaseModel):
    """Many items beside one small integer-keyed dict."""

    items: list[Item]
    labels: dict[int, str]


class ById(BaseModel):
    """One large integer-keyed dict."""

    by_id: dict[int, str]


class Tagged(BaseModel):
    """Many items beside one small set."""

    items: list[Item]
    tags: set[str]


class Row(BaseModel):
    """An item that holds an integer-keyed dict of its own."""

    name: str
    cells: dict[int, str]


class Grid(BaseModel):
    """Integer-keyed dicts inside list items: everything is to be walked."""

    rows: list[Row]


def _items(n: int) -> list[dict[str, Any]]:
    return [{"name": f"item {i}", "qty": i} for i in range(n)]


# name -> (model, arguments for n items, rules the coercions recorded must follow)
CASES: dict[str, tuple[type[BaseModel], Callable[[int], dict[str, Any]], list[str]]] = {
    "list + small dict[int, str]": (
        Labelled,
        lambda n: {"items": _items(n), "labels": {"1": "a", "2": "b"}},
        [],
    ),
    "dict[int, str]": (ById, lambda n: {"by_id": {str(i): f"v{i}" for i in range(n)}}, []),
    "list + small set (no repeats)": (
        Tagged,
        lambda n: {"items": _items(n), "tags": ["a", "b"]},
        [],
    ),
    "list + small set (one repeat)": (
        Tagged,
        lambda n: {"items": _items(n), "tags": ["a", "b", "a"]},
        ["set_duplicates"],
    ),
    "list of items with dict[int, str]": (
        Grid,
        lambda n: {"rows": [{"name": f"r{i}", "cells": {str(i): "x"}} for i in range(n)]},
        [],
    ),
}


def best(run: Callable[[], object], budget: float = 2.0, most: int = 20) -> float:
    """The fastest of up to `most` runs of `run` within about `budget` seconds, each with the
    garbage collector paused."""
    times: list[float] = []
    spent = 0.0
    while len(times) < most and (spent < budget or len(times) < 3):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            run()
            took = time.perf_counter() - start
        finally:
            gc.enable()
        times.append(took)
        spent += took
    return min(times)


def main(sizes: list[int]) -> None:
    """Times every case at every size and prints one line each."""
    print(f"{'case':36} {'items':>7} {'pydantic':>10} {'toolwire':>10} {'ratio':>7}")
    for label, (model, build, rules) in CASES.items():
        tools = Toolset([model])
        name = tools.names()[0]
        for n in sizes:
            text = json.dumps(build(n))
            asm = Assembler(tools=tools)
            asm.feed(0, id="call_1", name=name, arguments=text)
            (call,) = asm.finish()
            outcome = tools.validate(call)
            assert outcome.ok, outcome.errors[:3]
            assert [c.rule for c in outcome.coercions] == rules, outcome.coercions
            ours = best(lambda call=call, tools=tools: tools.validate(call))
            theirs = best(lambda text=text, model=model: model.model_validate_json(text))
            print(
                f"{label:36} {n:>7} {theirs * 1e3:>8.2f}ms {ours * 1e3:>8.2f}ms"
                f" {ours / theirs:>6.1f}x"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000, 100000])
