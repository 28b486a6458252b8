"""Where a JSON Schema can describe a value: the walk every secret-redaction path shares.

A secret must be found wherever a schema can declare one, so validation's payloads, the
pre-check's secret pointers and the recorder's redaction all ask this module the same two
questions:

* which schemas describe the *same* value as a node: its `anyOf`/`oneOf` branches, its `allOf`
  members, `if`/`then`/`else` and the `dependentSchemas` (`dependencies`) values;
* which schemas describe a value *inside* it: `properties`, `patternProperties`,
  `additionalProperties`, `items`, `prefixItems` and their draft-7 spellings, `contains`.

Design notes:
- Missing a place means a leak, taking in one too many only redacts more, so the walk errs on
  the wide side: a `then` counts even when its `if` may not hold, and a `patternProperties`
  pattern that compiles in no engine, or whose search runs out of time, is taken to match
  every key.
- `$ref` is left to the caller, which knows where its definitions live; `resolve` follows a
  local one from the schema's root.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import unquote

import regex

from toolwire.jsonschema_dialect import search

__all__ = [
    "NOWHERE",
    "SECRET_KEY",
    "inner",
    "inner_all",
    "inner_any",
    "is_marked_secret",
    "lookup",
    "meant_field",
    "pointer_tokens",
    "resolve",
    "same_value",
]

SECRET_KEY = "x-secret"
"""The schema extension that marks a field secret (next to `SecretStr`'s own marks)."""


def meant_field(key: str, names: Iterable[str]) -> str | None:
    """The declared name an unknown key was most likely meant as (`pasword` for `password`),
    or None. Case drift (`PASSWORD`) is the commonest slip: names are compared ignoring case.

    Validation names it in its hint and hides the value if that field is secret; the
    recorder redacts by the same match.
    """
    lowered = {name.lower(): name for name in names}
    close = difflib.get_close_matches(key.lower(), list(lowered), n=1)
    return lowered[close[0]] if close else None


_SAME_VALUE_LISTS = ("anyOf", "oneOf", "allOf")
_SAME_VALUE_SINGLE = ("if", "then", "else")
_SAME_VALUE_MAPS = ("dependentSchemas", "dependencies")
_INNER_SINGLE = (
    "additionalProperties",
    "unevaluatedProperties",
    "contains",
    "additionalItems",
    "unevaluatedItems",
)


def is_marked_secret(node: Mapping[str, Any]) -> bool:
    """Whether the node itself carries a secret mark: `x-secret`, or the `format: password` /
    `writeOnly` that Pydantic writes for `SecretStr` and `SecretBytes`."""
    return (
        bool(node.get(SECRET_KEY))
        or node.get("format") == "password"
        or bool(node.get("writeOnly"))
    )


def _single(value: object) -> list[Mapping[str, Any]]:
    """`value` when it is one schema (not a list of them)."""
    return [cast(Mapping[str, Any], value)] if isinstance(value, Mapping) else []


def _listed(value: object) -> list[Mapping[str, Any]]:
    """The schemas of `value` when it is a list of them."""
    if not isinstance(value, list):
        return []
    return [cast(Mapping[str, Any], v) for v in cast(list[object], value) if isinstance(v, Mapping)]


def _schemas(value: object) -> list[Mapping[str, Any]]:
    """One schema or a list of them, as a list."""
    return _single(value) + _listed(value)


def _map_values(value: object) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    if isinstance(value, Mapping):
        # `dependencies` mixes schemas with lists of names; a list of names yields nothing.
        for item in cast(Mapping[str, object], value).values():
            out += _schemas(item)
    return out


def same_value(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The schemas next to `node` that describe the same value (one level, `$ref` unresolved)."""
    out: list[Mapping[str, Any]] = []
    for key in (*_SAME_VALUE_LISTS, *_SAME_VALUE_SINGLE):
        out += _schemas(node.get(key))
    for key in _SAME_VALUE_MAPS:
        out += _map_values(node.get(key))
    return out


def _matches(source: str, key: str) -> bool:
    """Whether a `patternProperties` pattern takes `key`. A pattern that compiles nowhere, or
    a search that runs out of time (the key is model output), counts as taking it: the walks
    that ask look for what a value may be (a secret, say), and must not miss a subschema."""
    try:
        return search(source, key, out_of_time=True)
    except (regex.error, OverflowError):
        return True


def inner(node: Mapping[str, Any], seg: str | int) -> list[Mapping[str, Any]]:
    """The schemas `node` itself gives the value at `seg` inside its value (a property name
    or an array index), `$ref` unresolved; empty where it says nothing of that value."""
    if isinstance(seg, int):
        prefix = node.get("prefixItems")
        items = node.get("items")
        if isinstance(prefix, list):
            listed = cast(list[object], prefix)
            if seg < len(listed):
                return _schemas(listed[seg])
            return _single(items)
        if isinstance(items, list):
            # Draft 7's tuple form: `items` is the list, `additionalItems` the rest.
            listed = cast(list[object], items)
            return (
                _schemas(listed[seg])
                if seg < len(listed)
                else _schemas(node.get("additionalItems"))
            )
        return _schemas(items) + _schemas(node.get("contains"))
    props = node.get("properties")
    if isinstance(props, Mapping) and seg in props:
        return _schemas(cast(Mapping[str, object], props)[seg])
    patterns = node.get("patternProperties")
    matched: list[Mapping[str, Any]] = []
    if isinstance(patterns, Mapping):
        for source, schema in cast(Mapping[str, object], patterns).items():
            if _matches(source, seg):
                matched += _schemas(schema)
    if matched:
        return matched
    return _schemas(node.get("additionalProperties")) or _schemas(node.get("unevaluatedProperties"))


def inner_any(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The schemas `node` gives values inside its value that it does not name: pattern and
    additional properties, and items past any listed ones (`$ref` unresolved)."""
    items = node.get("items")
    out = _map_values(node.get("patternProperties"))
    out += _single(items)
    for key in _INNER_SINGLE:
        out += _schemas(node.get(key))
    return out


def inner_all(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every schema `node` itself gives a value inside its value, `$ref` unresolved."""
    out = _map_values(node.get("properties")) + _schemas(node.get("prefixItems"))
    out += _listed(node.get("items"))
    return out + inner_any(node)


def pointer_tokens(ref: str) -> list[str] | None:
    """The reference tokens of a local `$ref` (`#` is the root: no tokens), percent-decoded and
    unescaped; None for a reference that is not a local JSON Pointer."""
    pointer = unquote(ref[1:]) if ref.startswith("#") else None
    if pointer is None or (pointer and not pointer.startswith("/")):
        return None
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


NOWHERE: Any = object()
"""What `lookup` gives for tokens that lead nowhere."""


def lookup(root: object, tokens: list[str]) -> Any:
    """What `tokens` lead to from `root` through objects and arrays, or `NOWHERE`."""
    target = root
    for token in tokens:
        if isinstance(target, Mapping) and token in target:
            target = cast(Mapping[str, object], target)[token]
        elif isinstance(target, list) and token.isdigit():
            listed = cast(list[object], target)
            if int(token) >= len(listed):
                return NOWHERE
            target = listed[int(token)]
        else:
            return NOWHERE
    return target


def resolve(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    """The schema a local `$ref` (`#`, `#/$defs/Name`, any JSON Pointer from the root) names,
    or None when it names nothing there."""
    tokens = pointer_tokens(ref)
    target = NOWHERE if tokens is None else lookup(root, tokens)
    return cast(Mapping[str, Any], target) if isinstance(target, Mapping) else None
