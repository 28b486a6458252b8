"""Value build: from a finished call to its parsed arguments, against `orjson.loads`.

Target (native core issue): `ToolCall.value` at least as fast as `orjson.loads` on the whole
text, at every size. The baseline is `orjson.loads` of the joined text as a caller holds it (a
new `str`, so orjson encodes it to UTF-8 first); `orjson.loads bytes` is the same text already
encoded, and `json.loads` is the standard library for reference.

Each round times a batch of fresh objects (finished calls whose `.value` was never read, or new
`str`/`bytes` objects), made in an untimed set-up; the batch holds about 200 KB of arguments, so
one round is long enough to time well at every size. Medians are divided by the batch size.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from corpus import SINGLE, Case, get_case
from harness import fresh_text, label, rounds

import toolwire

BASELINE = "orjson.loads"
BATCH_BYTES = 200_000


def _finished_call(text: str) -> Any:
    asm = toolwire.Assembler()
    asm.feed(0, name="f", arguments=text)
    return asm.finish()[0]


MAKERS: dict[str, Callable[[str], Any]] = {
    BASELINE: fresh_text,
    "orjson.loads bytes": lambda text: text.encode(),
    "json.loads": fresh_text,
    "toolwire .value": _finished_call,
}

READERS: dict[str, Callable[[list[Any]], list[Any]]] = {
    BASELINE: lambda batch: [orjson.loads(text) for text in batch],
    "orjson.loads bytes": lambda batch: [orjson.loads(data) for data in batch],
    "json.loads": lambda batch: [json.loads(text) for text in batch],
    "toolwire .value": lambda batch: [call.value for call in batch],
}


@pytest.mark.parametrize("alt", list(READERS))
@pytest.mark.parametrize("case_name", SINGLE)
def test_value_build(
    benchmark: Any, request: pytest.FixtureRequest, case_name: str, alt: str
) -> None:
    """Each reader gives exactly the expected arguments; then a batch of fresh inputs is timed."""
    case: Case = get_case(case_name)
    text = case.texts[0]
    batch_size = max(1, BATCH_BYTES // case.arg_bytes)
    make, read = MAKERS[alt], READERS[alt]
    assert read([make(text)]) == [case.expected[0]], f"{alt} gave different arguments"
    label(benchmark, suite="value", case=case, alt=alt, baseline=BASELINE, batch=batch_size)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        batch = [make(text) for _ in range(batch_size)]
        gc.collect(0)
        return (batch,), {}

    benchmark.pedantic(read, setup=setup, rounds=rounds(request.config, 30), iterations=1)
