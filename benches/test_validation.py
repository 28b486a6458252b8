"""Validation: from the last fragment to a validated Pydantic model.

toolwire's path: the call's last fragment goes into an `Assembler(tools=toolset)` that already
holds the rest, `finish()`, then `Toolset([Document]).validate(call)`. The baseline is
`Document.model_validate_json(text)` alone, the least any code can do with the finished text,
on the str an accumulator's join makes of the round's fresh fragments (joined untimed). Both
sides see the same fragments come and go before the timed part: creating and freeing 200 KB of
small objects slows the next validation by 15%, whoever runs it. Target: at most 1.1x.

Both are timed with `benchmark.pedantic` and a set-up per round (the assembler must be fed up
to its last fragment before each round), so both pay the same timer overhead.
`toolwire validate only` times `Toolset.validate` on a finished call, to split the cost.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
from alternatives import corpus_toolset
from corpus import SINGLE, Document, get_case
from harness import fresh_view, label, rounds

import toolwire

BASELINE = "pydantic model_validate_json"
ALTS = (BASELINE, "toolwire last fragment->model", "toolwire validate only")


def _fed_but_last(deltas: Any) -> tuple[Any, Any]:
    """An assembler holding every delta but the last, and that last delta."""
    asm = toolwire.Assembler(tools=corpus_toolset())
    for index, id_, name, frag in deltas[:-1]:
        asm.feed(index, id=id_, name=name, arguments=frag)
    return asm, deltas[-1]


def last_fragment_to_model(asm: Any, last: Any) -> Any:
    """The timed toolwire path: feed the last fragment, finish, validate."""
    index, id_, name, frag = last
    asm.feed(index, id=id_, name=name, arguments=frag)
    (call,) = asm.finish()
    return corpus_toolset().validate(call).model


def validate_only(call: Any) -> Any:
    """`Toolset.validate` alone, on a finished call."""
    return corpus_toolset().validate(call).model


@pytest.mark.parametrize("alt", ALTS)
@pytest.mark.parametrize("case_name", SINGLE)
def test_validation(
    benchmark: Any, request: pytest.FixtureRequest, case_name: str, alt: str
) -> None:
    """Both paths give the same model; then each is timed."""
    case = get_case(case_name)
    text = case.texts[0]
    expected = Document.model_validate_json(text)
    assert expected.model_dump() == case.expected[0]
    label(benchmark, suite="validation", case=case, alt=alt, baseline=BASELINE)
    n = rounds(request.config, 200 if case.size in ("200B", "2KB") else 30)
    if alt == BASELINE:

        def target(t: str) -> Any:
            return Document.model_validate_json(t)

        def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            # A new str each round (see `fresh_text`), joined as an accumulator would.
            joined = "".join(frag for _index, _id, _name, frag in fresh_view(case, "deltas"))
            gc.collect(0)
            return (joined,), {}

    elif alt == "toolwire validate only":
        asm, last = _fed_but_last(case.deltas)
        index, id_, name, frag = last
        asm.feed(index, id=id_, name=name, arguments=frag)
        (call,) = asm.finish()
        target = validate_only

        def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            gc.collect(0)
            return (call,), {}

    else:
        target = last_fragment_to_model

        def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
            fed = _fed_but_last(fresh_view(case, "deltas"))
            gc.collect(0)
            return fed, {}

    args, _ = setup()
    assert target(*args) == expected, f"{alt} gave a different model on {case_name}"
    benchmark.pedantic(target, setup=setup, rounds=n, iterations=1)
