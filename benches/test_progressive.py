"""Progressive: something to show after every fragment, for UIs that render arguments live.

Targets: `toolwire progress_into` (`Assembler(progress_into=items)`: each `feed` appends its
progress items to the caller's list) and `toolwire progress` (`Assembler(track_progress=True)`,
`drain_progress()` after every fragment) at most 300 ns per fragment, at least 4x faster than
`jiter per-fragment` (the baseline: what the OpenAI and Anthropic SDKs do on every chunk) at
200 B and more than 1000x at 200 KB, and 9x-11x growth from 20 KB to 200 KB.

`toolwire feed only` (feed per fragment and `finish()`, no value built) is the reference for
the per-fragment cost of progress tracking itself. `toolwire partial per-fragment` rebuilds a
whole partial value after every fragment, as jiter does: the like-for-like comparison.

Every alternative is checked first: the progress items, joined per (call, JSON Pointer), must
spell every leaf of the expected arguments exactly, and the final values must match.

Left out: `partial_json per-fragment` above 20 KB (and above 2 KB in quick mode), and the
whole-value re-parse alternatives at 200 KB in quick mode (seconds per run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import alternatives as a
import pytest
from corpus import CASES
from harness import Alt, case_params, run_alternative

BASELINE = "jiter per-fragment"


def _leaves(value: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """(JSON Pointer, scalar) for every scalar in `value`."""
    if isinstance(value, dict):
        for key, item in value.items():
            token = key.replace("~", "~0").replace("/", "~1")
            yield from _leaves(item, f"{pointer}/{token}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{pointer}/{i}")
    else:
        yield pointer, value


def _progress_values(result: tuple[list[Any], list[Any]]) -> list[Any]:
    """Checks that the progress items spell every leaf, and returns the final values."""
    items, calls = result
    values = [call.value for call in calls]
    joined: dict[tuple[int, str], str] = {}
    for ordinal, pointer, text in items:
        joined[(ordinal, pointer)] = joined.get((ordinal, pointer), "") + text
    expected = {
        (ordinal, pointer): leaf
        for ordinal, value in enumerate(values)
        for pointer, leaf in _leaves(value)
    }
    assert joined.keys() == expected.keys(), "progress items do not cover exactly the leaves"
    for key, leaf in expected.items():
        shown = joined[key] if isinstance(leaf, str) else json.loads(joined[key])
        assert shown == leaf, f"progress at {key} spells {joined[key]!r}, not {leaf!r}"
    return values


def _feed_only(deltas: Any) -> list[Any]:
    """Feed per fragment and `finish()`, building no value: the bare per-fragment cost."""
    import toolwire

    asm = toolwire.Assembler()
    for index, id_, name, frag in deltas:
        asm.feed(index, id=id_, name=name, arguments=frag)
    return asm.finish()


ALTERNATIVES: dict[str, Alt] = {
    BASELINE: Alt(a.jiter_every_fragment, max_quick="20KB"),
    "toolwire progress": Alt(a.toolwire_progress, check=_progress_values),
    "toolwire progress_into": Alt(a.toolwire_progress_into, check=_progress_values),
    "toolwire feed only": Alt(_feed_only, check=lambda calls: [c.value for c in calls]),
    "toolwire partial per-fragment": Alt(a.toolwire_partial_every_fragment, max_quick="20KB"),
    "partial_json per-fragment": Alt(
        a.partial_json_every_fragment, max_quick="2KB", max_full="20KB"
    ),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrises over (case, alternative) for the current mode (see `harness`)."""
    if "alt" in metafunc.fixturenames:
        params = case_params(metafunc.config, CASES, {k: v.spec for k, v in ALTERNATIVES.items()})
        metafunc.parametrize(("case_name", "alt"), params)


def test_progressive(
    benchmark: Any, request: pytest.FixtureRequest, case_name: str, alt: str
) -> None:
    """Each alternative shows the right thing; then it is timed."""
    run_alternative(
        benchmark,
        request,
        suite="progressive",
        baseline=BASELINE,
        alts=ALTERNATIVES,
        case_name=case_name,
        alt=alt,
    )
