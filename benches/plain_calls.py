"""Times `Toolset.validate` of large calls to plain-dict tools (validated with `jsonschema`)
whose cost once grew faster than their size: an array with `uniqueItems` over objects, and
an array whose every string makes a backtracking pattern run out of time.

    python benches/plain_calls.py [SIZE ...]     (default sizes: 1000 4000 16000)

prints one line per case and size: the argument bytes, validate's best time of three, and the
time per item. Not a test: no figure is asserted, but each case checks the verdict first.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from toolwire import Assembler, Toolset

_ITEM = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
CASES: dict[str, tuple[dict[str, Any], Any, bool]] = {
    # Distinct objects: the whole array must be compared, and it is valid.
    "unique objects": (
        {"type": "array", "uniqueItems": True, "items": _ITEM},
        lambda n: [{"a": str(i)} for i in range(n)],
        True,
    ),
    # Every item runs out of time: bounded by one budget per validation, not per item.
    "slow pattern": (
        {"type": "array", "items": {"type": "string", "pattern": "^(a|a)+$"}},
        lambda n: ["a" * 30 + "!"] * n,
        False,
    ),
}


def main(sizes: list[int]) -> None:
    for name, (field, make, ok) in CASES.items():
        schema = {"type": "object", "properties": {"x": field}, "required": ["x"]}
        tools = Toolset([{"name": "t", "parameters": schema}])
        for size in sizes:
            text = json.dumps({"x": make(size)})
            assembler = Assembler(tools=tools)
            assembler.feed(0, id="c", name="t", arguments=text)
            (call,) = assembler.finish()
            assert tools.validate(call).ok is ok, (name, size)
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                tools.validate(call)
                best = min(best, time.perf_counter() - started)
            print(
                f"{name:>15} {size:>6} items {len(text):>8} B  {best * 1e3:8.1f} ms"
                f"  {best / size * 1e6:6.1f} us/item"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 4000, 16000])
