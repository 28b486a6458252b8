"""Final values: from a stream of fragments to every call's parsed arguments.

Target: `toolwire feed` (feed per fragment, `finish()`, `.value`) at most 1.2x the baseline
(`join+orjson`) at every size, and 9x-11x growth from 20 KB to 200 KB. `toolwire feed+precheck`
is the same path with the tool's schema checked while streaming: the pre-check target is at most
1.3x `toolwire feed` (the report prints that ratio).

Left out, with the reason:

* `openai StreamState` on the interleaved parallel cases: the SDK's helper assumes a call is
  done when another index appears and validates its unfinished arguments, so it raises a
  `ValidationError` on interleaved parallel calls with a strict tool; there is nothing correct
  to time.
* `langchain chunk+` and `partial_json per-fragment` at 200 KB (both re-parse the whole buffer
  in pure Python after every fragment: one run takes about 15-30 minutes), and above 2 KB in
  quick mode. `test_quadratic_estimates` records what one run would cost instead.
* The other re-parse-per-fragment alternatives (jiter, openai, anthropic) at 200 KB in quick
  mode: seconds per run.
"""

from __future__ import annotations

import time
from typing import Any

import alternatives as a
import partial_json_parser
import pytest
from corpus import CASES, get_case
from harness import Alt, case_params, label, run_alternative
from langchain_core.utils.json import parse_partial_json

BASELINE = "join+orjson"

ALTERNATIVES: dict[str, Alt] = {
    BASELINE: Alt(a.baseline_join_orjson),
    "dict+=json.loads": Alt(a.dict_concat_json),
    "toolwire feed": Alt(a.toolwire_feed),
    "toolwire feed lean-kwargs": Alt(a.toolwire_feed_arguments_only),
    "toolwire feed+precheck": Alt(a.toolwire_feed_prechecked, check=a.prechecked_values),
    "join+orjson bytes": Alt(a.baseline_join_orjson_bytes, view="byte_deltas"),
    "toolwire feed bytes": Alt(a.toolwire_feed_bytes, view="byte_deltas"),
    "toolwire feed_chunk": Alt(a.toolwire_feed_chunk, view="chunks"),
    "openai StreamState": Alt(
        a.openai_stream_state, view="chunks", max_quick="20KB", single_only=True
    ),
    "anthropic accumulate": Alt(a.anthropic_accumulate, view="anthropic_events", max_quick="20KB"),
    "jiter per-fragment": Alt(a.jiter_every_fragment, max_quick="20KB"),
    "langchain chunk+": Alt(
        a.langchain_addition, view="langchain_chunks", max_quick="2KB", max_full="20KB"
    ),
    "partial_json per-fragment": Alt(
        a.partial_json_every_fragment, max_quick="2KB", max_full="20KB"
    ),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrises over (case, alternative) for the current mode (see `harness`)."""
    if "alt" in metafunc.fixturenames:
        params = case_params(metafunc.config, CASES, {k: v.spec for k, v in ALTERNATIVES.items()})
        metafunc.parametrize(("case_name", "alt"), params)


def test_final_values(
    benchmark: Any, request: pytest.FixtureRequest, case_name: str, alt: str
) -> None:
    """Each alternative gives exactly the expected arguments; then it is timed."""
    run_alternative(
        benchmark,
        request,
        suite="final",
        baseline=BASELINE,
        alts=ALTERNATIVES,
        case_name=case_name,
        alt=alt,
    )


@pytest.mark.parametrize(
    "parser",
    [
        pytest.param(partial_json_parser.loads, id="partial_json"),
        pytest.param(parse_partial_json, id="langchain"),
    ],
)
def test_quadratic_estimates(benchmark: Any, parser: Any) -> None:
    """What one 200 KB run of a pure-Python re-parse-per-fragment alternative would cost.

    One parse of the buffer at each tenth of the stream, times the fragments in that tenth: the
    parse cost grows with the buffer, so this tracks the real run within a few percent. The
    timed body is one mid-stream parse; the estimate goes into `extra_info`.
    """
    case = get_case("single-200KB")
    text = case.texts[0]
    fragments = case.fragments
    total = 0.0
    for tenth in range(10):
        prefix = text[: len(text) * (2 * tenth + 1) // 20]
        started = time.perf_counter()
        parser(prefix)
        total += (time.perf_counter() - started) * fragments / 10
    name = "partial_json per-fragment" if parser is partial_json_parser.loads else "langchain"
    label(
        benchmark,
        suite="estimate",
        case=case,
        alt=f"{name} (estimated)",
        baseline=BASELINE,
        estimated_seconds=total,
    )
    benchmark.pedantic(parser, args=(text[: len(text) // 2],), rounds=1, iterations=1)
