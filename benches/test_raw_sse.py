"""Raw SSE: from the bytes of an OpenAI Chat Completions response body to parsed arguments.

The body is the corpus stream as `data: {chunk}` events, handed over in network-sized pieces
(256 B - 4 KB, cut anywhere). The baseline lets the `openai` SDK decode the bytes with its own
`Stream` and accumulates with `join+orjson`; the SDK's full path adds its stream helper
(`ChatCompletionStreamState`, strict tool). toolwire's raw path is `Assembler.feed_sse`.

Left out: `openai Stream+StreamState` on interleaved parallel calls (it raises, see
`test_final_values`); in quick mode, every path through the SDK's `Stream` at 200 KB (it
spends about 170 us per chunk building chunk objects, about 3 s per run).
"""

from __future__ import annotations

from typing import Any

import alternatives as a
import pytest
from corpus import CASES
from harness import Alt, case_params, run_alternative

BASELINE = "openai Stream+join+orjson"
FEED_SSE = "toolwire feed_sse"

ALTERNATIVES: dict[str, Alt] = {
    BASELINE: Alt(a.sse_openai_join_orjson, view="sse_pieces", max_quick="20KB"),
    "openai Stream+StreamState": Alt(
        a.sse_openai_state, view="sse_pieces", max_quick="20KB", single_only=True
    ),
    "openai Stream+toolwire feed_chunk": Alt(
        a.sse_openai_toolwire_chunks, view="sse_pieces", max_quick="20KB"
    ),
    FEED_SSE: Alt(a.sse_toolwire_feed_sse, view="sse_pieces"),
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrises over (case, alternative) for the current mode (see `harness`)."""
    if "alt" in metafunc.fixturenames:
        params = case_params(metafunc.config, CASES, {k: v.spec for k, v in ALTERNATIVES.items()})
        metafunc.parametrize(("case_name", "alt"), params)


def test_raw_sse(benchmark: Any, request: pytest.FixtureRequest, case_name: str, alt: str) -> None:
    """Each path decodes the same bytes into exactly the expected arguments; then it is timed."""
    run_alternative(
        benchmark,
        request,
        suite="raw_sse",
        baseline=BASELINE,
        alts=ALTERNATIVES,
        case_name=case_name,
        alt=alt,
    )
