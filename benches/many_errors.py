"""Times `Toolset.validate` against pydantic's `model_validate_json` on calls whose list items
all fail (`"x"` for `list[int]`) or all need a coercion (`"1"`), side by side in one run.

    python benches/many_errors.py [ITEMS ...]     (default: 5000 50000)

prints one line per case: pydantic's time (lax, as a caller would run it; raising for the
failing items), toolwire's, and their ratio, best of three each, for the model tool and the
plain (JSON Schema) tool, with the pre-check (`Assembler(tools=...)`) and without. A plain
tool's line also gives, as `own`, its time for a valid call of as many integers: jsonschema
walks every item in Python, which bounds that path whatever the errors. Not a test: no figure
is asserted (`tests/test_many_errors.py` holds the mechanism).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

from pydantic import BaseModel, ValidationError

from toolwire import Assembler, Toolset


class Batch(BaseModel):
    """Ids in a batch."""

    ids: list[int]


PLAIN = {
    "name": "batch",
    "description": "Ids in a batch.",
    "parameters": {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "integer"}}},
        "required": ["ids"],
    },
}


def best(run: Callable[[], object], rounds: int = 3) -> float:
    times: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def pydantic_side(arguments: str) -> None:
    try:
        Batch.model_validate_json(arguments)
    except ValidationError:
        pass


def main(sizes: list[int]) -> None:
    for size in sizes:
        for label, item in (("failing", "x"), ("coercible", "1")):
            arguments = json.dumps({"ids": [item] * size})
            valid = json.dumps({"ids": [1] * size})
            reference = best(lambda a=arguments: pydantic_side(a))
            for kind, tools in (("model", Toolset([Batch])), ("plain", Toolset([PLAIN]))):
                for precheck in (False, True):
                    assembler = Assembler(tools=tools) if precheck else Assembler()
                    assembler.feed(0, id="c", name="batch", arguments=arguments)
                    (call,) = assembler.finish()
                    outcome = tools.validate(call)
                    assert outcome.ok == (label == "coercible"), outcome
                    ours = best(lambda t=tools, c=call: t.validate(c))
                    own = ""
                    if kind == "plain":
                        plain = Assembler()
                        plain.feed(0, id="v", name="batch", arguments=valid)
                        (good,) = plain.finish()
                        own = f"  own {best(lambda t=tools, c=good: t.validate(c)) * 1e3:8.1f} ms"
                    print(
                        f"{label:9} {kind:5} pre-check={'yes' if precheck else 'no ':3} "
                        f"{size:>7} items: pydantic {reference * 1e3:7.1f} ms  "
                        f"toolwire {ours * 1e3:8.1f} ms  {ours / reference:6.1f}x{own}",
                        flush=True,
                    )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5000, 50000])
