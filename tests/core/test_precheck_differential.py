"""Differential test of the streaming pre-check against `jsonschema` on generated schemas and
instances: the verdicts must agree (the pre-check never rejects a valid instance, and catches
every invalid one for the keywords it supports), for any cut of the text."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import Assembler, ToolRegistry

names = st.sampled_from(["a", "b", "ab", "c", "é", "a/b"])
strings = st.text(alphabet='abcé😀"\\', max_size=5)


def scalar_schemas() -> st.SearchStrategy[dict[str, Any]]:
    # multipleOf divisors are exact in binary: `jsonschema` divides floats, so 0.3 against 0.1
    # is "not a multiple" there, while the pre-check's exact decimal arithmetic says it is.
    return st.one_of(
        st.builds(
            lambda t: {"type": t},
            st.sampled_from(["string", "integer", "number", "boolean", "null"]),
        ),
        st.builds(
            lambda lo, hi: {"type": "integer", "minimum": lo, "maximum": lo + hi},
            st.integers(-5, 5),
            st.integers(0, 10),
        ),
        st.builds(lambda m: {"type": "number", "multipleOf": m}, st.sampled_from([0.5, 0.25, 3])),
        st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 4)),
        st.builds(lambda n: {"type": "string", "minLength": n}, st.integers(0, 4)),
        st.builds(
            lambda vs: {"enum": vs},
            st.lists(st.one_of(strings, st.integers(-3, 3), st.none()), min_size=1, max_size=4),
        ),
        st.builds(lambda v: {"const": v}, st.one_of(strings, st.integers(-3, 3), st.booleans())),
        st.builds(
            lambda p: {"type": "string", "pattern": p},
            st.sampled_from(["^a", "b$", "^[a-c]*$", "é"]),
        ),
        st.just({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}),
        st.just({"type": ["integer", "string"]}),
    )


def object_schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda props, req, closed: {
            "type": "object",
            "properties": props,
            "required": sorted(set(req) & set(props)),
            **({"additionalProperties": False} if closed else {}),
        },
        st.dictionaries(names, inner, max_size=3),
        st.lists(names, max_size=3),
        st.booleans(),
    )


schemas = st.recursive(
    scalar_schemas(),
    lambda inner: st.one_of(
        object_schemas(inner),
        st.builds(
            lambda items, hi: {"type": "array", "items": items, "maxItems": hi},
            inner,
            st.integers(0, 3),
        ),
        # Conjunctions, nested and around branches; `oneOf` counts only exact matches.
        st.builds(lambda members: {"allOf": members}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(
            lambda a, b: {"anyOf": [{"allOf": [a, b]}, {"type": "null"}]},
            inner,
            inner,
        ),
        st.builds(lambda a, b: {"oneOf": [{"allOf": [a]}, b]}, inner, inner),
    ),
    max_leaves=6,
)

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-12, 12),
        st.sampled_from([0.5, 1.0, 0.3, 2.5, 1e2]),
        strings,
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(names, inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=1500, deadline=None)
@given(
    props=st.dictionaries(names, schemas, max_size=3),
    closed=st.booleans(),
    members=st.lists(object_schemas(schemas), max_size=2),
    instance=st.dictionaries(names, values, max_size=3),
    cuts=st.lists(st.integers(1, 200), max_size=6),
)
def test_precheck_agrees_with_jsonschema(
    props: dict[str, Any],
    closed: bool,
    members: list[dict[str, Any]],
    instance: dict[str, Any],
    cuts: list[int],
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if closed:
        schema["additionalProperties"] = False
    if members:
        # Objects composed from members: each member's `additionalProperties` sees only its
        # own `properties`.
        schema["allOf"] = members
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    text = json.dumps(instance, ensure_ascii=False).encode()
    a = Assembler(tools=ToolRegistry({"t": schema}))
    last = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        a.feed(0, name="t", arguments=text[last:cut])
        last = max(last, cut)
    a.feed(0, name="t", arguments=text[last:])
    (call,) = a.finish()
    if expected:
        assert call.error is None, (schema, instance, call.error)
    else:
        assert call.error is not None and call.error.kind == "schema_violation", (schema, instance)
