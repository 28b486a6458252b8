"""Seeded instance generation for the tool corpus: a value meant to satisfy a JSON schema, and
near misses of it (the slips models make: `"30"` for 30, case drift, extra or missing keys,
bounds, huge numbers, unicode and escapes)."""

from __future__ import annotations

import copy
import random
import re
from typing import Any

_FORMATS: dict[str, list[str]] = {
    "date-time": [
        "2024-03-05T14:30:00Z",
        "2024-03-05T14:30:00+01:00",
        "2024-03-05T14:30:00.250Z",
        "2024-03-05T14:30:00",
    ],
    "date": ["2024-03-05", "1999-12-31"],
    "time": ["14:30:00Z", "07:05:00+02:00"],
    "duration": ["P1D", "PT1H30M", "P1W"],
    "email": ["ada@example.com", "o.brien+x@mail.example.org"],
    "uri": ["https://example.com/a?b=1", "http://localhost:8080/"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000"],
    "ipv4": ["10.0.0.1", "192.168.1.254"],
    "ipv6": ["::1", "2001:db8::2"],
    "hostname": ["example.com", "db-1.internal"],
}
_FORMAT_MISSES: dict[str, list[str]] = {
    "date-time": ["2024-03-05", "2024-13-05T14:30:00Z", "yesterday", "1700000000"],
    "date": ["2024-02-30", "05/03/2024", "2024-03-05T00:00:00Z"],
    "time": ["25:00:00Z", "noon"],
    "duration": ["1 hour", "P"],
    "email": ["not-an-email", "a@"],
    "uri": ["example.com", "://x"],
    "uuid": ["123e4567e89b12d3a456426614174000x", "nope"],
    "ipv4": ["256.1.1.1", "10.0.0"],
    "ipv6": [":::1"],
    "hostname": ["-bad-.com", "a..b"],
}
# Strings tried against a `pattern` when nothing better is known.
_PATTERN_CANDIDATES = [
    "abc",
    "ABC",
    "main",
    "feature/x-1",
    "US",
    "DE89370400440532013000",
    "C0123ABCD",
    "1712345678.123456",
    "thumbsup",
    "u_0123abcd",
    "ORD-7",
    "PROJ",
    "PROJ-12",
    "0644",
    "123456",
    "API_KEY",
    "cus_abc123",
    "ch_123",
    "SAVE2024",
    "12.50",
    "en",
    "en-US",
    "report.pdf",
    "nginx:1.25",
    "+4915112345678",
    "+15551234567",
    "AAPL",
    "09:30",
    "unlimited",
    "arn:aws:s3:::bucket",
    "a-1",
    "xyz",
    "0123456789abcdef0123456789abcdef01234567",
    "123e4567-e89b-12d3-a456-426614174000",
    "Zoë",
    "3",
    "app-name",
    "my_table",
    "A_B",
    "x",
    "https://example.com",
]
# What secret fields are given; no payload for the model may show it.
SECRET = "sk-live-SECRETVALUE-0042"
_WORDS = [
    "hello",
    "Zoë",
    "東京",
    'a"quote',
    "back\\slash",
    "line\nbreak",
    "tab\t",
    "😀",
    "x" * 40,
    "",
]


class Gen:
    """Values for one tool schema; `root` resolves local `$ref`s."""

    def __init__(self, root: dict[str, Any], rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    def deref(self, node: Any, seen: int = 0) -> Any:
        while isinstance(node, dict) and "$ref" in node and seen < 20:
            ref = node["$ref"]
            target: Any = self.root
            for part in ref.lstrip("#").split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part, {}) if isinstance(target, dict) else {}
            node = target
            seen += 1
        return node

    def valid(self, node: Any, depth: int = 0) -> Any:
        node = self.deref(node)
        rng = self.rng
        if node is True or node == {} or not isinstance(node, dict):
            return rng.choice([1, "x", None, {"k": [1]}, True])
        if "const" in node:
            return copy.deepcopy(node["const"])
        if "enum" in node:
            return copy.deepcopy(rng.choice(node["enum"]))
        for key in ("oneOf", "anyOf"):
            if key in node:
                branches = node[key]
                if depth > 3:
                    for b in branches:
                        if self.deref(b).get("type") == "null":
                            return None
                branch = rng.choice(branches)
                merged = {
                    k: v for k, v in node.items() if k not in ("oneOf", "anyOf", "discriminator")
                }
                return self.valid(
                    {**merged, **self.deref(branch)} if merged.get("type") is None else branch,
                    depth + 1,
                )
        if "allOf" in node:
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for part in node["allOf"]:
                merged.update(self.deref(part))
            return self.valid(merged, depth + 1)
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null" or rng.random() < 0.2] or kind
            kind = rng.choice(kinds)
        if kind is None:
            if "properties" in node:
                kind = "object"
            elif "items" in node or "prefixItems" in node:
                kind = "array"
            else:
                return rng.choice(["free", 3, None])
        if kind == "null":
            return None
        if kind == "boolean":
            return rng.random() < 0.5
        if kind in ("integer", "number"):
            return self.number(node, kind)
        if kind == "string":
            return self.string(node)
        if kind == "array":
            return self.array(node, depth)
        return self.object(node, depth)

    def number(self, node: dict[str, Any], kind: str) -> Any:
        lo = node.get("minimum", node.get("exclusiveMinimum", -50))
        hi = node.get(
            "maximum",
            node.get("exclusiveMaximum", lo + 100 if isinstance(lo, (int, float)) else 100),
        )
        if isinstance(lo, bool):
            lo = node.get("minimum", -50)
        if isinstance(hi, bool):
            hi = node.get("maximum", 100)
        lo, hi = float(lo), float(hi)
        if hi - lo > 1e6:
            lo, hi = max(lo, -1e6), min(hi, 1e6)
        step = node.get("multipleOf")
        for _ in range(20):
            if kind == "integer":
                value: Any = (
                    self.rng.randint(int(lo) + 1, max(int(lo) + 1, int(hi) - 1))
                    if hi - lo > 2
                    else round((lo + hi) / 2)
                )
            else:
                value = round(self.rng.uniform(lo, hi), 2)
                if hi - lo < 1e-3:
                    value = (lo + hi) / 2
            if step:
                value = round(value / step) * step
                value = (
                    int(value)
                    if kind == "integer" or (float(value).is_integer() and step >= 1)
                    else round(value, 2)
                )
            if lo <= value <= hi:
                return value
        return value

    def string(self, node: dict[str, Any]) -> str:
        fmt = node.get("format")
        pattern = node.get("pattern")
        if fmt == "password" or node.get("writeOnly"):
            return SECRET
        if fmt in _FORMATS:
            return self.rng.choice(_FORMATS[fmt])
        lo = node.get("minLength", 0)
        hi = node.get("maxLength", 30)
        if pattern:
            try:
                rx = re.compile(pattern)
            except re.error:
                rx = None
            good = [
                c
                for c in _PATTERN_CANDIDATES
                if rx is not None and rx.search(c) and lo <= len(c) <= hi
            ]
            if good:
                return self.rng.choice(good)
        base = self.rng.choice([*_WORDS[:8], "report", "ABC", "owner"])
        while len(base) < lo:
            base += "ab"
        return base[:hi] if hi >= lo else base

    def array(self, node: dict[str, Any], depth: int) -> list[Any]:
        prefix = node.get("prefixItems")
        items = node.get("items", {})
        if isinstance(items, list):
            prefix, items = items, node.get("additionalItems", {})
        out: list[Any] = []
        if prefix:
            out = [self.valid(p, depth + 1) for p in prefix]
        lo = node.get("minItems", 0)
        hi = node.get("maxItems", 3 if depth < 3 else 1)
        if items is not False and not prefix:
            count = self.rng.randint(min(lo, hi), max(min(lo, hi), min(hi, lo + 2)))
            for _ in range(count):
                out.append(self.valid(items, depth + 1))
        if node.get("uniqueItems"):
            unique: list[Any] = []
            for v in out:
                if v not in unique:
                    unique.append(v)
            out = unique
        return out

    def object(self, node: dict[str, Any], depth: int) -> dict[str, Any]:
        props: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", []))
        out: dict[str, Any] = {}
        for key, sub in props.items():
            if key in required or (depth < 3 and self.rng.random() < 0.5):
                out[key] = self.valid(sub, depth + 1)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra and self.rng.random() < 0.7:
            names = node.get("propertyNames", {})
            key = "team-a" if names else "extra_key"
            out[key] = self.valid(extra, depth + 1)
        for pat, sub in node.get("patternProperties", {}).items():
            for cand in ("API_KEY", "en", "x-note", "de"):
                if re.search(pat, cand):
                    out[cand] = self.valid(sub, depth + 1)
                    break
        lo = node.get("minProperties", 0)
        while len(out) < lo:
            out[f"k{len(out)}"] = "v"
        return out

    # --- near misses ---------------------------------------------------------------------

    def mutate(self, schema: dict[str, Any], value: Any) -> Any:
        """`value` with one slip at a random place."""
        value = copy.deepcopy(value)
        spots = list(self._spots(schema, value, []))
        if not spots:
            return {"unexpected": 1}
        path, node = self.rng.choice(spots)
        current = _get(value, path)
        return _set(value, path, self._slip(self.deref(node), current))

    def _spots(self, node: Any, value: Any, path: list[Any]) -> Any:
        node = self.deref(node)
        yield path, node
        if not isinstance(node, dict):
            return
        if isinstance(value, dict):
            props = node.get("properties", {})
            for k, v in value.items():
                yield from self._spots(props.get(k, {}), v, [*path, k])
        elif isinstance(value, list):
            items = node.get("items", {})
            for i, v in enumerate(value):
                sub = items[i] if isinstance(items, list) and i < len(items) else items
                if isinstance(node.get("prefixItems"), list) and i < len(node["prefixItems"]):
                    sub = node["prefixItems"][i]
                yield from self._spots(sub if isinstance(sub, (dict, bool)) else {}, v, [*path, i])

    def _slip(self, node: Any, current: Any) -> Any:
        rng = self.rng
        options: list[Any] = []
        if isinstance(current, bool):
            options += [str(current).lower(), "True", 1, None]
        elif isinstance(current, int):
            options += [
                str(current),
                current + 0.5,
                float(current),
                -current - 1,
                10**25,
                -(10**19),
                1e400,
                str(current) + " ",
                None,
            ]
            if isinstance(node, dict):
                for k in ("minimum", "exclusiveMinimum"):
                    if isinstance(node.get(k), (int, float)) and not isinstance(node.get(k), bool):
                        options.append(node[k] - 1)
                        options.append(node[k])
                for k in ("maximum", "exclusiveMaximum"):
                    if isinstance(node.get(k), (int, float)) and not isinstance(node.get(k), bool):
                        options.append(node[k] + 1)
                        options.append(node[k])
                if node.get("multipleOf"):
                    options.append(current + node["multipleOf"] / 2)
        elif isinstance(current, float):
            options += [
                str(current),
                1e400,
                -1e-400,
                123456789012345678901234567890.5,
                round(current) if current == current else 0,
                0.1 + 0.2,
                None,
            ]
        elif isinstance(current, str):
            options += [
                current.upper(),
                current.capitalize(),
                current + "é😀",
                current + '\\"\n',
                "",
                " " + current,
                30,
                None,
                "x" * 300,
                "\u0000" + current,
            ]
            if current.isdigit() or current.replace(".", "", 1).isdigit():
                options.append(float(current) if "." in current else int(current))
            fmt = node.get("format") if isinstance(node, dict) else None
            if fmt in _FORMAT_MISSES:
                options += _FORMAT_MISSES[fmt] * 2
        elif isinstance(current, list):
            options += [[], current + current, current[:1] * 2, {"items": current}, "[]", None]
            if current:
                options.append([*current, current[0]])
        elif isinstance(current, dict):
            options += [{**current, "extra_field": "x"}, {**current, "Extra": None}, "{}", [], None]
            if current:
                key = rng.choice(list(current))
                options.append({k: v for k, v in current.items() if k != key})
                options.append({(k.upper() if k == key else k): v for k, v in current.items()})
        else:
            options += [0, "null", False, {}]
        return rng.choice(options)


def _get(value: Any, path: list[Any]) -> Any:
    for p in path:
        value = value[p]
    return value


def _set(value: Any, path: list[Any], new: Any) -> Any:
    if not path:
        return new
    parent = _get(value, path[:-1])
    parent[path[-1]] = new
    return value
