"""Turn a tool's JSON Schema into the self-contained shapes that providers accept.

Three shapes come out of one source schema (Pydantic's `model_json_schema()` or a plain tool
definition):

* the **pre-check schema** (`precheck_schema`): `$ref`s inlined (but recursive and shared
  definitions, see below), `additionalProperties: false` added to every object that declares
  a property and does not say otherwise, and to the root of a tool without parameters (see
  `_with_closed_objects`), `default: null` dropped. The `required`
  list is the model's own, so optional fields stay optional. This is what the Rust pre-check
  compiles and what Anthropic's `input_schema` receives.
* the **OpenAI strict schema** (`strict_schema`): the pre-check schema plus every property
  listed in `required` (optional fields keep their nullable `anyOf`), every `default` removed
  and discriminated `oneOf` rewritten as `anyOf`. Anything outside the strict subset raises
  `SchemaExportError` naming the field.
* the **relaxed schema** (`export_schema(..., strict=False)`): the pre-check schema, marked
  non-strict, together with the list of `Relaxation`s that kept it from being strict.

Design notes:

* `openai.lib._pydantic.to_strict_json_schema` only inlines a `$ref` that has sibling keys and
  keeps `$defs` otherwise. We inline every non-recursive `$ref` so a tool definition can be read
  (and checked by the Rust pre-check) without a resolver; a recursive model keeps a
  `{"$ref": "#/$defs/Name"}` to a `$defs` entry that stays in the schema. So does a definition
  used in several places whose copies would each be longer than `SHARED_DEFINITION_CHARS`
  (`_shared_definitions`): copied along every path, definitions shared at several levels (a
  DAG, as OpenAPI-derived tools have) grew the schema exponentially. A kept definition is
  closed once per way a reference uses it (`Name`, `Name_partial`, `Name_open`, see
  `_with_closed_definitions`), the strict export flattens an `allOf` member that is one as it
  flattened its copy, and a schema still past `MAX_INLINED_CHARS`, or nesting deeper than
  `MAX_SCHEMA_DEPTH` with its references followed, is refused (`SchemaTooLargeError`,
  counted without recursion before the inliner's walk). A reference that
  names its target by URI (an `$anchor`, an embedded `$id`) is first written as the pointer
  to it, found with `referencing`, which is how `jsonschema` would resolve it.
* Non-null defaults are removed in strict mode although the openai helper keeps them: Azure
  OpenAI rejects them ("'default' is not permitted", dotnet/extensions#6196) and
  openai-agents-python strips them too (PR #4529). In strict mode the model must send every
  field anyway, so a default tells it nothing it can act on.
* A `format` outside the strict subset's list (Pydantic's `uri` for URLs, `password` for
  `SecretStr`, `ipvanyaddress`, ...) is dropped from the strict schema: OpenAI refuses the
  whole request otherwise ("'uri' is not a valid format"), and validation still checks the
  value. The relaxed and Anthropic schemas keep it.
* Key order follows the source schema, and keys we add go last, so output is deterministic.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import referencing
import referencing.exceptions
import referencing.jsonschema
import regex

from toolwire._pickling import RebuiltWhole
from toolwire.jsonschema_dialect import ForeignPatternError, check_pattern
from toolwire.subschemas import (
    NOWHERE,
    inner_any,
    is_marked_secret,
    lookup,
    pointer_tokens,
    same_value,
)

__all__ = [
    "ExportedSchema",
    "InvalidSchemaError",
    "Relaxation",
    "SchemaExportError",
    "SchemaTooLargeError",
    "accepts_null",
    "as_json_schema",
    "closing_splits_one_of",
    "export_schema",
    "inline_refs",
    "invalid_pattern",
    "precheck_schema",
    "self_reference_loop",
    "shown_got",
    "strict_problems",
    "strict_schema",
    "with_object_root",
    "without_keywords",
]

JsonSchema = dict[str, Any]

# Published OpenAI Structured Outputs limits ("Supported schemas", structured-outputs guide).
MAX_OBJECT_DEPTH = 10
MAX_PROPERTIES = 5000
# Enum values across the whole schema.
MAX_ENUM_VALUES = 1000
# Characters of one enum's string values, once it has more than `LARGE_ENUM_VALUES` of them.
MAX_LARGE_ENUM_CHARS = 15_000
LARGE_ENUM_VALUES = 250
# Characters of every property name, definition name, enum value and const value together.
MAX_SCHEMA_CHARS = 120_000

# Keywords the strict subset rejects outright, with the reason we report.
_UNSUPPORTED: dict[str, str] = {
    "not": "`not` is not supported",
    "if": "`if`/`then`/`else` is not supported",
    "then": "`if`/`then`/`else` is not supported",
    "else": "`if`/`then`/`else` is not supported",
    "dependentRequired": "`dependentRequired` is not supported",
    "dependentSchemas": "`dependentSchemas` is not supported",
    "patternProperties": "`patternProperties` (an open object) is not supported",
    "propertyNames": "`propertyNames` (an open object) is not supported",
    "unevaluatedProperties": "`unevaluatedProperties` is not supported",
    "unevaluatedItems": "`unevaluatedItems` is not supported",
    "contains": "`contains` is not supported",
    "prefixItems": "tuples (`prefixItems`) are not supported",
    "uniqueItems": "`uniqueItems` (a set) is not supported",
    "minContains": "`minContains` is not supported",
    "maxContains": "`maxContains` is not supported",
    "minProperties": "`minProperties` is not supported",
    "maxProperties": "`maxProperties` is not supported",
}
# The `format` values the strict subset accepts ("Supported schemas", structured-outputs guide).
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# A schema node must say what it is: OpenAI rejects a node with none of these ("schema must
# have a 'type' key"), which is what an `Any` field or a bare `list` item exports as.
_TYPED_BY = ("type", "anyOf", "enum", "const", "$ref")


# Keywords that judge what the other keywords of their schema object evaluated.
_UNEVALUATED = ("unevaluatedProperties", "unevaluatedItems")

# Keywords that assert nothing about an instance.
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)


class SchemaExportError(RebuiltWhole, ValueError):
    """A tool schema cannot be expressed in the OpenAI strict subset.

    Attributes:
        tool: The tool name.
        path: The field path (`order.items[].sku`; `(root)` for the top level).
        keyword: The JSON Schema keyword at fault.
        reason: What is wrong, in words.
    """

    def __init__(self, tool: str, path: str, keyword: str, reason: str) -> None:
        super().__init__(
            f"tool {tool!r}: field {path!r}: {reason} in OpenAI strict mode; "
            "pass strict=False to export a non-strict schema"
        )
        self.tool = tool
        self.path = path
        self.keyword = keyword
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Relaxation:
    """One thing that kept a tool's schema from being exported as strict.

    Attributes:
        tool: The tool name.
        path: The field path (`(root)` for the top level).
        keyword: The JSON Schema keyword at fault.
        reason: What is wrong, in words.
    """

    tool: str
    path: str
    keyword: str
    reason: str


@dataclass(frozen=True, slots=True)
class ExportedSchema:
    """A schema ready to send, and whether it is strict.

    Attributes:
        schema: The JSON Schema (a fresh dict the caller may keep).
        strict: True if the schema follows the OpenAI strict subset.
        relaxations: Why the schema is not strict; empty when `strict` is true.
    """

    schema: JsonSchema
    strict: bool
    relaxations: tuple[Relaxation, ...] = ()


def _as_dict(value: object) -> JsonSchema | None:
    return cast(JsonSchema, value) if isinstance(value, dict) else None


def _as_list(value: object) -> list[Any] | None:
    return cast(list[Any], value) if isinstance(value, list) else None


def _pointer_tokens(ref: str) -> list[str]:
    """The reference tokens of a local `$ref` (`#` is the root: no tokens)."""
    tokens = pointer_tokens(ref)
    if tokens is None:
        raise ValueError(
            f"unsupported $ref {ref!r}: only references into the schema itself (a JSON Pointer,"
            " an `$anchor` or an embedded `$id`) can be inlined"
        )
    return tokens


# The keywords that name a place in a schema by URI rather than by its position.
_NAMING_KEYWORDS = {"$id", "$anchor"}
_LEGACY_NAMING_KEYWORDS = {"id"}


def _names_places(node: Any, root: bool, naming: set[str]) -> tuple[bool, bool]:
    """Whether `node` names places by URI (an `$anchor`, an `$id` below the root, a `$ref`
    that is not a local JSON Pointer), and whether it holds a dynamic reference."""
    as_dict = _as_dict(node)
    if as_dict is None:
        listed = _as_list(node)
        found = [_names_places(item, root, naming) for item in listed or []]
        return any(n for n, _ in found), any(d for _, d in found)
    named = not root and any(isinstance(as_dict.get(k), str) for k in naming)
    named |= "$anchor" in as_dict
    ref = as_dict.get("$ref")
    named |= isinstance(ref, str) and pointer_tokens(ref) is None
    dynamic = "$dynamicRef" in as_dict or "$recursiveRef" in as_dict
    for key, value in as_dict.items():
        subs: list[Any] = []
        if key in _NAMED_SUBSCHEMAS and _as_dict(value) is not None:
            subs = list(value.values())
        elif key in _SUBSCHEMAS:
            subs = [value]
        for sub in subs:
            sub_named, sub_dynamic = _names_places(sub, False, naming)
            named |= sub_named
            dynamic |= sub_dynamic
    return named, dynamic


def _with_pointer_refs(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with each `$ref` that names its target by URI (`#pos` for an `$anchor`,
    `user.json` for a subschema whose `$id` is that, relative to the root's `$id` if any)
    written as the JSON Pointer from the root to that target, and the `$id`s and `$anchor`s
    then left out; `schema` itself when no reference needs it.

    The inliner, the Rust pre-check and the strict exports all read a `$ref` as a pointer from
    the root. `referencing` (what `jsonschema` resolves with) finds the target, so a reference
    resolves as `jsonschema` reads it, a pointer inside an embedded resource included (from
    that resource, not the root). The naming keywords must go with the rewrite: an inlined
    copy of an `$id` resource would still move the base of the pointers left in it, and the
    pre-check leaves an embedded resource unchecked. A schema with `$dynamicRef` or
    `$recursiveRef` is left as written: those resolve through the `$id`s at validation time.

    Raises:
        ValueError: On a reference to something outside the schema or to no target in it.
    """
    declared = schema.get("$schema")
    spec = referencing.jsonschema.specification_with(
        declared if isinstance(declared, str) else "",
        default=referencing.jsonschema.DRAFT202012,
    )
    legacy = spec in (referencing.jsonschema.DRAFT3, referencing.jsonschema.DRAFT4)
    naming = _LEGACY_NAMING_KEYWORDS if legacy else _NAMING_KEYWORDS
    named, dynamic = _names_places(schema, True, naming)
    if not named or dynamic:
        return schema
    # Where each object sits, found by identity: `referencing` hands back the very objects of
    # the schema it was given.
    places: dict[int, list[str]] = {}
    todo: list[tuple[Any, list[str]]] = [(schema, [])]
    while todo:
        node, tokens = todo.pop()
        as_dict, as_list = _as_dict(node), _as_list(node)
        if as_dict is not None:
            places.setdefault(id(node), tokens)
            todo.extend((v, [*tokens, k]) for k, v in as_dict.items())
        elif as_list is not None:
            todo.extend((v, [*tokens, str(i)]) for i, v in enumerate(as_list))
    root = spec.create_resource(schema)
    base = root.id() or ""
    resolver: Any = referencing.Registry[Any]().with_resource(base, root).resolver(base)

    def pointer(ref: str, scope: Any) -> str:
        document, _, fragment = ref.partition("#")
        try:
            if not fragment or fragment.startswith("/"):
                # A pointer, from the resource the reference names: the resource is found
                # by identity and the pointer appended, as a pointer may reach a boolean.
                found = scope.lookup(f"{document}#").contents
                tokens = [*places[id(found)], *(pointer_tokens(f"#{fragment}") or [])]
            else:
                tokens = places[id(scope.lookup(ref).contents)]
        except (referencing.exceptions.Unresolvable, KeyError):
            raise ValueError(
                f"unsupported $ref {ref!r}: only references into the schema itself (a JSON"
                " Pointer, an `$anchor` or an embedded `$id`) can be inlined"
            ) from None
        # Percent-escaped too: the pointer is read back through `unquote`.
        return "#" + "".join(f"/{_pointer_escape(t).replace('%', '%25')}" for t in tokens)

    def walk(node: Any, scope: Any) -> Any:
        as_list = _as_list(node)
        if as_list is not None:
            return [walk(item, scope) for item in as_list]
        as_dict = _as_dict(node)
        if as_dict is None:
            return node
        if as_dict is not schema:
            scope = scope.in_subresource(spec.create_resource(as_dict))
        out: JsonSchema = {}
        for key, value in as_dict.items():
            if key in naming or key == "$anchor":
                continue
            if key == "$ref" and isinstance(value, str):
                out[key] = pointer(value, scope)
            else:
                out[key] = _with_subschemas_mapped(key, value, lambda sub, _: walk(sub, scope))
        return out

    return cast(JsonSchema, walk(schema, resolver))


def _is_schema(value: object) -> bool:
    """Whether `value` can be a schema: an object or a boolean."""
    return isinstance(value, dict | bool)


def _shown_target(value: object) -> str:
    """A reference's target that is no schema, for an error message."""
    return shown_got(json.dumps(value, ensure_ascii=False, default=repr))


def shown_got(text: str) -> str:
    """`text`, the value at fault, as `InvalidSchemaError.got` shows it: cut to 80 characters."""
    return text if len(text) <= 80 else text[:77] + "..."


def _subschemas_at(node: Mapping[str, Any], tokens: list[str]) -> list[tuple[Any, list[str]]]:
    """The values right below `node` that hold subschemas (a list of them whole), each with
    its pointer tokens, `tokens` being those of `node`; definitions included."""
    subs: list[tuple[Any, list[str]]] = []
    for key, value in node.items():
        if key in _NAMED_SUBSCHEMAS and _as_dict(value) is not None:
            subs.extend((sub, [*tokens, key, name]) for name, sub in value.items())
        elif key in _SUBSCHEMAS:
            subs.append((value, [*tokens, key]))
    return subs


def unresolvable_dynamic_ref(schema: Mapping[str, Any]) -> tuple[list[str], str, str] | None:
    """The first `$dynamicRef` (draft 2020-12) or `$recursiveRef` (draft 2019-09) in `schema`
    that names no target, as (pointer tokens to it, keyword, reference); None if all resolve.

    `jsonschema` resolves these only while validating, so one naming nothing (`#meta` with no
    such anchor) made every call of the tool end `internal_error`. A `$dynamicRef` first
    resolves as a `$ref` from where it is written, and the dynamic scope only swaps that
    target for a matching `$dynamicAnchor` further out: resolved here in its lexical scope,
    with `referencing` as `jsonschema` does, it resolves at validation too. `jsonschema`
    reads every `$recursiveRef` as `"#"`, the only value draft 2019-09 defines: another one
    would be read as something its author did not write.
    """
    declared = schema.get("$schema")
    root_spec = referencing.jsonschema.specification_with(
        declared if isinstance(declared, str) else "",
        default=referencing.jsonschema.DRAFT202012,
    )
    root = root_spec.create_resource(schema)
    resolver: Any = referencing.Registry[Any]().with_resource(root.id() or "", root)
    resolver = resolver.resolver(root.id() or "")
    todo: list[tuple[Any, list[str], Any, Any]] = [(schema, [], resolver, root_spec)]
    while todo:
        node, tokens, scope, spec = todo.pop()
        as_list = _as_list(node)
        if as_list is not None:
            entries = list(enumerate(as_list))
            todo.extend((item, [*tokens, str(i)], scope, spec) for i, item in reversed(entries))
            continue
        as_dict = _as_dict(node)
        if as_dict is None:
            continue
        if as_dict is not schema:
            inner = as_dict.get("$schema")
            if isinstance(inner, str):
                spec = referencing.jsonschema.specification_with(inner, default=spec)
            scope = scope.in_subresource(spec.create_resource(as_dict))
        dynamic = as_dict.get("$dynamicRef")
        if spec is referencing.jsonschema.DRAFT202012 and isinstance(dynamic, str):
            try:
                target = scope.lookup(dynamic).contents
            except referencing.exceptions.Unresolvable:
                target = None
            if not _is_schema(target):
                # A value that is no schema (`#/required/0`) fails `jsonschema` as nothing does.
                return [*tokens, "$dynamicRef"], "$dynamicRef", dynamic
        recursive = as_dict.get("$recursiveRef")
        if spec is referencing.jsonschema.DRAFT201909 and isinstance(recursive, str):
            if recursive != "#":
                return [*tokens, "$recursiveRef"], "$recursiveRef", recursive
        subs = _subschemas_at(as_dict, tokens)
        todo.extend((sub, steps, scope, spec) for sub, steps in reversed(subs))
    return None


def invalid_pattern(
    schema: Mapping[str, Any], *, ecma_only: bool = True
) -> tuple[list[str], str, str, regex.error] | None:
    """The first regular expression in `schema` that validation cannot run, a `pattern` or a
    `patternProperties` name that compiles in no engine or is too large to search in bounded
    time, as (pointer tokens to it, keyword, pattern, the engine's refusal); None when all run.

    With `ecma_only` (a plain tool's schema), a pattern that is no ECMA-262 regular expression
    (`ForeignPatternError`) is one too; without it (a Pydantic model's, whose own engine runs
    its patterns and gives `(?i)` its meaning), such a pattern is passed over.

    The metaschema checks them only where it gives them the `regex` format: draft 4 has no
    `propertyNames`, so there a `patternProperties` name that compiles nowhere passed, and
    every call of the tool then ended `internal_error`; the later drafts name the whole
    `patternProperties` object, not the name at fault.
    """
    for as_dict, tokens in subschemas(schema):
        written: list[tuple[list[str], str, str]] = []
        pattern = as_dict.get("pattern")
        if isinstance(pattern, str):
            written.append(([*tokens, "pattern"], "pattern", pattern))
        names = _as_dict(as_dict.get("patternProperties")) or {}
        written += [
            ([*tokens, "patternProperties", name], "patternProperties", name) for name in names
        ]
        for steps, keyword, source in written:
            try:
                check_pattern(source)
            except ForeignPatternError as refused:
                if ecma_only:
                    return steps, keyword, source, refused
            except regex.error as refused:
                return steps, keyword, source, refused
    return None


def _loop_groups(node: Mapping[str, Any], root: Mapping[str, Any]) -> list[list[int]]:
    """What judges the very value `node` judges, by identity, in groups: `node` loops when
    every schema of one group loops. A `$ref` target, an `allOf` member and the `not` operand
    are each a group of one; the branches of an `anyOf` or a `oneOf` one group, as a branch
    that does not loop is a base case (`anyOf: [{"type": "integer"}, {"$ref": "#"}]`).

    A boolean member, or a reference that is no local JSON Pointer, does not loop."""
    groups: list[list[int]] = []
    ref = node.get("$ref")
    if isinstance(ref, str):
        tokens = pointer_tokens(ref)
        target: object = NOWHERE if tokens is None else lookup(root, tokens)
        if _is_dict(target):
            groups.append([id(target)])
    conjuncts: list[object] = _as_list(node.get("allOf")) or []
    groups += [[id(m)] for m in conjuncts if _is_dict(m)]
    operand: object = node.get("not")
    if _is_dict(operand):
        groups.append([id(operand)])
    for key in ("anyOf", "oneOf"):
        members: list[object] = _as_list(node.get(key)) or []
        if members and all(_is_dict(m) for m in members):
            groups.append([id(m) for m in members])
    return groups


def _is_dict(value: object) -> bool:
    return isinstance(value, dict)


def self_reference_loop(schema: Mapping[str, Any]) -> tuple[list[str], str] | None:
    """The first `$ref` in `schema` (document order) that comes back to itself on the same
    value through nothing but references and `allOf`/`anyOf`/`oneOf`/`not`, with no branch
    out (`{"$defs": {"a": {"$ref": "#/$defs/a"}}}`), as (pointer tokens to it, the
    reference); None when there is none.

    `jsonschema` follows such a reference until Python's stack runs out: the schema was
    built, and then every value it judges was refused as `invalid`. A reference through a
    property or an item is no loop (each step is a smaller value: a tree), nor is one with
    a branch that does not come back (a base case).
    """
    nodes = list(subschemas(schema))
    groups = {id(node): _loop_groups(node, schema) for node, _ in nodes}
    # The greatest set closed under "some group of it lies wholly inside": start from every
    # node with a group and drop, through the nodes that name it, each one that escapes.
    looping = {key for key, found in groups.items() if found}
    named_by: dict[int, list[int]] = {}
    for key in looping:
        for member in {m for group in groups[key] for m in group}:
            named_by.setdefault(member, []).append(key)
    todo = [key for key in looping if not any(set(g) <= looping for g in groups[key])]
    while todo:
        key = todo.pop()
        if key not in looping or any(set(g) <= looping for g in groups[key]):
            continue
        looping.discard(key)
        todo += [k for k in named_by.get(key, ()) if k in looping]
    if not looping:
        return None
    for node, tokens in nodes:
        ref = node.get("$ref")
        if id(node) in looping and isinstance(ref, str):
            ref_tokens = pointer_tokens(ref)
            target: object = NOWHERE if ref_tokens is None else lookup(schema, ref_tokens)
            if _comes_back(id(node), id(target), looping, groups):
                return [*tokens, "$ref"], ref
    return None


def _comes_back(
    start: int, first: int, looping: set[int], groups: dict[int, list[list[int]]]
) -> bool:
    """Whether the schema `start` is reached from `first` through looping schemas."""
    seen: set[int] = set()
    todo = [first]
    while todo:
        key = todo.pop()
        if key == start:
            return True
        if key in seen or key not in looping:
            continue
        seen.add(key)
        todo += [m for group in groups[key] for m in group]
    return False


def subschemas(schema: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], list[str]]]:
    """Each schema object in `schema`, itself first, with its pointer tokens, in document
    order and without recursion (definitions included; values under `enum`, `const` and the
    other data keywords are data, not schemas)."""
    todo: list[tuple[Any, list[str]]] = [(schema, [])]
    while todo:
        node, tokens = todo.pop()
        as_list = _as_list(node)
        if as_list is not None:
            entries = list(enumerate(as_list))
            todo.extend((item, [*tokens, str(i)]) for i, item in reversed(entries))
            continue
        as_dict = _as_dict(node)
        if as_dict is None:
            continue
        yield as_dict, tokens
        todo.extend(reversed(_subschemas_at(as_dict, tokens)))


def with_object_root(schema: Mapping[str, Any]) -> JsonSchema:
    """`schema` with `"type": "object"` at its root, where the root does not say.

    A tool's arguments are always an object, and Anthropic refuses an `input_schema` whose
    root does not say so. Only the root is the tool's: a `$ref` to the root below it (`"#"`,
    or the root's `$id`) names the schema as written, which may take other values than an
    object (`{"properties": {"foo": {"$ref": "#"}}}` takes `{"foo": false}`). Such references
    are made references to a copy of the root as written, under `$defs`, so that what the
    pre-check compiles and what validation reads keep the added type at the root alone.

    Returns:
        A new schema; the input is not modified. One whose references cannot be read is only
        typed, for the inliner to refuse as it refuses any such reference.
    """
    if "type" in schema:
        return dict(schema)
    typed: JsonSchema = {"type": "object", **schema}
    try:
        pointed = _with_pointer_refs(schema)
    except ValueError:
        return typed
    found = False

    def walk(node: Any) -> Any:
        nonlocal found
        as_list = _as_list(node)
        if as_list is not None:
            return [walk(item) for item in as_list]
        as_dict = _as_dict(node)
        if as_dict is None:
            return node
        out: JsonSchema = {}
        for key, value in as_dict.items():
            if key == "$ref" and value == "#":
                found = True
                out[key] = "#/$defs/" + _pointer_escape(name)
            else:
                out[key] = _with_subschemas_mapped(key, value, lambda sub, _: walk(sub))
        return out

    defs = {
        **(_as_dict(pointed.get("definitions")) or {}),
        **(_as_dict(pointed.get("$defs")) or {}),
    }
    name = "root"
    while name in defs:
        name += "_"
    rewritten = cast(JsonSchema, walk(pointed))
    if not found:
        return typed
    written = {k: v for k, v in rewritten.items() if k not in ("$defs", "definitions")}
    own_defs = _as_dict(rewritten.get("$defs")) or {}
    return {"type": "object", **rewritten, "$defs": {**own_defs, name: copy.deepcopy(written)}}


def _pointer_escape(token: str) -> str:
    """`token` as one JSON Pointer reference token (`~` and `/` escaped)."""
    return token.replace("~", "~0").replace("/", "~1")


def inline_refs(schema: Mapping[str, Any]) -> JsonSchema:
    """Inline every local `$ref`, keeping only those that recurse.

    Sibling keys next to a `$ref` (a field description, say) take priority over the keys of the
    definition, as in `openai.lib._pydantic`; an assertion that both give (`properties` next to
    a base object's `$ref`) keeps both, in an `allOf`; so does one where either side has
    `unevaluatedProperties` or `unevaluatedItems`, with the target as a member beside the
    siblings, which is how such a keyword reads a `$ref`. A reference to a boolean schema is
    that boolean (`false` whatever its siblings say). A reference to a definition that is
    already being expanded stays a reference, `{"$ref": "#/$defs/Name"}` with the keys beside
    it, and that definition stays under `$defs`. So does a shared definition (see
    `_shared_definitions`) where only annotations sit beside the reference.
    Any other local JSON Pointer (`#`, the whole schema, as in OpenAI's recursive examples, or
    `#/properties/a`) is followed the same way; one that recurses is kept as a reference to a
    `$defs` entry named after it.

    Args:
        schema: A JSON Schema whose definitions live under `$defs` (or `definitions`).

    Returns:
        A new schema; the input is not modified.

    Raises:
        ValueError: On a `$ref` that is not local or points nowhere.
        SchemaTooLargeError: On a schema that would still be longer than `MAX_INLINED_CHARS`,
            or nest deeper than `MAX_SCHEMA_DEPTH` levels.
    """
    # Before anything walks it recursively (the depth with references followed is counted
    # below, once they can be).
    refuse_too_deep(schema, None)
    schema = _with_pointer_refs(schema)
    # Draft 7 and older ignore every keyword next to a `$ref`: only annotations are kept then.
    declared = schema.get("$schema")
    legacy = isinstance(declared, str) and any(
        d in declared for d in ("draft-07", "draft-06", "draft-04", "draft-03")
    )
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        found = _as_dict(schema.get(key))
        if found is not None:
            defs.update(found)
    recursive = _recursive_definitions(defs)
    shared = _shared_definitions(schema, defs, recursive, legacy=legacy)
    # Before the walk, which recurses: a deeper schema would end in a `RecursionError`.
    depth = _nesting_depth(schema, defs, recursive, shared, legacy=legacy)
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaTooLargeError(depth, MAX_SCHEMA_DEPTH, measure="depth")
    kept: dict[str, JsonSchema] = {}
    # The `$defs` name and the target of every kept reference that is not a whole definition.
    aliases: dict[str, str] = {}
    targets: dict[str, Any] = {}
    # Definitions whose body was already expanded once because a recursive reference carried
    # sibling keys; a second such expansion would never end.
    sibling_expanded: set[str] = set()
    # A dynamic reference is resolved by a validator at run time, through anchors anywhere in
    # the definitions: when one is met, every definition stays.
    dynamic = False

    def resolve(ref: str) -> tuple[str, Any]:
        """The key of what `ref` names (a definition's name, or `#` and its pointer) and it."""
        tokens = _pointer_tokens(ref)
        if len(tokens) == 2 and tokens[0] in ("$defs", "definitions"):
            if tokens[1] not in defs:
                raise ValueError(f"$ref {ref!r} names a missing definition")
            if not _is_schema(defs[tokens[1]]):
                shown = _shown_target(defs[tokens[1]])
                raise ValueError(f"$ref {ref!r} names a definition that is {shown}, not a schema")
            return tokens[1], defs[tokens[1]]
        target = lookup(schema, tokens)
        if target is NOWHERE:
            raise ValueError(f"$ref {ref!r} points nowhere")
        if not _is_schema(target):
            # Read as `{}` below, it took any value, where `jsonschema` fails on it.
            raise ValueError(f"$ref {ref!r} points to {_shown_target(target)}, not a schema")
        return "#" + "".join(f"/{_pointer_escape(t)}" for t in tokens), target

    def keep(key: str, target: Any) -> str:
        if key in defs:
            kept.setdefault(key, {})
            return key
        if key not in aliases:
            words = (re.sub(r"[^0-9A-Za-z_]", "_", t) for t in _pointer_tokens(key))
            name = "_".join(["ref", *words]) if key != "#" else "root"
            while name in defs or name in targets:
                name += "_"
            aliases[key] = name
            targets[name] = (key, target)
            kept[name] = {}
        return aliases[key]

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        nonlocal dynamic
        as_list = _as_list(node)
        if as_list is not None:
            return [walk(item, stack) for item in as_list]
        as_dict = _as_dict(node)
        if as_dict is None:
            return node
        if "$dynamicRef" in as_dict or "$recursiveRef" in as_dict:
            dynamic = True
        ref = as_dict.get("$ref")
        if isinstance(ref, str):
            key, target = resolve(ref)
            siblings = {
                k: v
                for k, v in as_dict.items()
                if k != "$ref" and (not legacy or k in _ANNOTATIONS)
            }
            # A definition on a cycle stays a reference wherever it is met (but at the root,
            # which must be the tool's own object): inlined along every path until the path
            # came back to it, a ring of n definitions grew to n^3 copies, and definitions
            # that reference each other through a union (an expression language) grew
            # exponentially.
            if key in stack or (key in recursive and as_dict is not schema):
                if not siblings or key in sibling_expanded:
                    reference = f"#/$defs/{_pointer_escape(keep(key, target))}"
                    # The keys beside it still apply, beside the reference (a conjunct).
                    return {**walk(siblings, stack), "$ref": reference}
                sibling_expanded.add(key)
            elif (
                key in shared
                and as_dict is not schema
                and _as_dict(target) is not None
                and all(k in _ANNOTATIONS for k in siblings)
            ):
                # A definition used in several places whose copies would multiply the schema's
                # size (a DAG of definitions, as OpenAPI-derived tools have) stays one
                # reference too; see `_shared_definitions`.
                reference = f"#/$defs/{_pointer_escape(keep(key, target))}"
                return {**walk(siblings, stack), "$ref": reference}
            if isinstance(target, bool):
                # A boolean schema takes part as written: `false` refuses every value whatever
                # sits beside it, `true` adds nothing to what does. Read as a dict it was `{}`,
                # and a field that may never be sent took anything.
                if target is False or not siblings:
                    return target
                return walk(siblings, stack)
            body = _as_dict(target) or {}
            rest = {k: v for k, v in siblings.items() if k not in _ANNOTATIONS}
            if rest and any(k in body or k in rest for k in _UNEVALUATED):
                # `unevaluatedProperties` (or `Items`) sees what the `$ref` beside it evaluated,
                # and one inside the target sees only the target's own: merged, or the siblings
                # moved into an `allOf` member of their own, either would see otherwise. The
                # target as an `allOf` member beside the siblings is what a `$ref` is.
                members = _as_list(siblings.get("allOf")) or []
                return walk({**siblings, "allOf": [body, *members]}, (*stack, key))
            if any(k in body and k not in _ANNOTATIONS for k in siblings):
                # Both apply: a sibling must not replace the keyword of the target it repeats
                # (`properties` next to a `$ref` to a base object), so the two go in an `allOf`.
                notes = {k: v for k, v in siblings.items() if k in _ANNOTATIONS}
                rest = {k: v for k, v in siblings.items() if k not in _ANNOTATIONS}
                return walk({"allOf": [body, rest], **notes}, (*stack, key))
            return walk({**body, **siblings}, (*stack, key))
        out: JsonSchema = {}
        for key, value in as_dict.items():
            if key not in ("$defs", "definitions"):
                out[key] = _with_subschemas_mapped(key, value, lambda sub, _: walk(sub, stack))
        return _without_discriminator_mapping(out)

    result = cast(JsonSchema, walk(schema, ("#",)))
    # A kept definition may itself reference another definition that must then be kept too.
    done: set[str] = set()
    while len(done) < len(kept):
        for name in [n for n in kept if n not in done]:
            done.add(name)
            key, target = targets.get(name, (name, defs.get(name)))
            kept[name] = cast(JsonSchema, walk(target, (key,)))
    if dynamic:
        kept = {**defs, **kept}
    if kept:
        result["$defs"] = {name: kept[name] for name in sorted(kept)}
    return result


def _definition_named(node: Mapping[str, Any]) -> str | None:
    """The name of the definition `node`'s `$ref` points at (`#/$defs/Name` or
    `#/definitions/Name`), if it points at one."""
    ref = node.get("$ref")
    tokens = pointer_tokens(ref) if isinstance(ref, str) else None
    if tokens is not None and len(tokens) == 2 and tokens[0] in ("$defs", "definitions"):
        return tokens[1]
    return None


def _subschemas(node: Mapping[str, Any], *, with_defs: bool = False) -> Iterator[Any]:
    """The subschemas right below `node` (its definitions too with `with_defs`)."""
    for key, value in node.items():
        if key in ("$defs", "definitions") and not with_defs:
            continue
        if key in _NAMED_SUBSCHEMAS:
            named = _as_dict(value)
            if named is not None:
                yield from named.values()
        elif key in _SUBSCHEMAS:
            as_list = _as_list(value)
            yield from as_list if as_list is not None else (value,)


def refuse_too_deep(schema: Any, tool: str | None) -> None:
    """Refuse a schema whose subschemas, as written (definitions as subschemas of where they
    sit, references not followed), nest deeper than `MAX_SCHEMA_DEPTH`, or whose JSON (a
    `const`, `enum`, `default` or `examples` value inside it) nests deeper than
    `MAX_SCHEMA_NESTING`, before anything copies or walks it recursively.

    Raises:
        SchemaTooLargeError: With `measure="depth"` or `measure="nesting"`.
    """
    depth, nesting = schema_nesting(schema)
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaTooLargeError(depth, MAX_SCHEMA_DEPTH, tool=tool, measure="depth")
    if nesting > MAX_SCHEMA_NESTING:
        raise SchemaTooLargeError(nesting, MAX_SCHEMA_NESTING, tool=tool, measure="nesting")


def schema_nesting(schema: Any) -> tuple[int, int]:
    """How deep a schema nests, found without recursion: the levels of its subschemas as
    written (the root's properties at 1, definitions as subschemas of where they sit,
    references not followed), and the levels of its JSON (dicts and lists, the root at 1)."""
    depth = nesting = 0
    # (value, its JSON level, what it holds: "schema" one at that level, "schemas" one or a
    # list of them, "named" a dict of them, or "data" none)
    todo: list[tuple[Any, int, str, int]] = [(schema, 1, "schema", 0)]
    while todo:
        item, level, holds, sub = todo.pop()
        node = _as_dict(item)
        if node is None and not isinstance(item, (list, tuple)):
            continue
        nesting = max(nesting, level)
        if node is None:
            kind = "schema" if holds == "schemas" else "data"
            items = cast("list[Any] | tuple[Any, ...]", item)
            todo.extend((child, level + 1, kind, sub) for child in items)
        elif holds == "named":
            todo.extend((child, level + 1, "schema", sub) for child in node.values())
        elif holds in ("schema", "schemas"):
            depth = max(depth, sub)
            for key, child in node.items():
                kind = (
                    "named"
                    if key in _NAMED_SUBSCHEMAS
                    else "schemas"
                    if key in _SUBSCHEMAS
                    else "data"
                )
                todo.append((child, level + 1, kind, sub + 1))
        else:
            todo.extend((child, level + 1, "data", sub) for child in node.values())
    return depth, nesting


_Node = TypeVar("_Node", bound=Hashable)


def post_order(
    roots: Iterable[_Node], children: Callable[[_Node], Iterable[_Node]]
) -> Iterator[_Node]:
    """Each node reachable from `roots`, once, after the nodes it reaches (a node met again
    while it is still open, on a cycle, is not waited for), without recursion: a graph of
    definitions or models may be deeper than Python's recursion limit. A caller that records
    something for each node as it comes finds it recorded for the nodes that node reaches."""
    done: set[_Node] = set()
    for root in roots:
        if root in done:
            continue
        work: list[tuple[_Node, Iterator[_Node]]] = [(root, iter(children(root)))]
        opened = {root}
        while work:
            node, pending = work[-1]
            following = next((c for c in pending if c not in done and c not in opened), None)
            if following is None:
                work.pop()
                done.add(node)
                yield node
                continue
            opened.add(following)
            work.append((following, iter(children(following))))


def _nesting_depth(
    schema: Mapping[str, Any],
    defs: Mapping[str, Any],
    recursive: set[str],
    shared: set[str],
    *,
    legacy: bool,
) -> int:
    """The most levels of subschemas in `schema` as `inline_refs` writes it, given the
    definitions it keeps as references (the recursive and the shared ones): a reference to
    another definition is read as the definition (one level deeper when both go in an
    `allOf`), and each kept definition counts from its own place under `$defs`. Iterative, in
    time linear in the schema and its definitions: a schema may nest deeper than Python's
    recursion limit."""

    def targets(body: Any) -> Iterator[str]:
        todo = [body]
        while todo:
            node = _as_dict(todo.pop())
            if node is None:
                continue
            target = _definition_named(node)
            if target is not None and target in defs and target not in recursive:
                yield target
            todo.extend(_subschemas(node))

    def height(body: Any) -> int:
        best = 0
        todo: list[tuple[Any, int]] = [(body, 0)]
        while todo:
            item, level = todo.pop()
            node = _as_dict(item)
            if node is None:
                continue
            best = max(best, level)
            todo.extend((child, level + 1) for child in _subschemas(node))
            target = _definition_named(node)
            if target is None or target not in heights:
                continue
            # As `inline_refs` reads the keys beside a reference.
            siblings = [k for k in node if k != "$ref" and (not legacy or k in _ANNOTATIONS)]
            target_body = _as_dict(defs[target])
            if (
                target in kept
                and item is not body
                and target_body is not None
                and all(k in _ANNOTATIONS for k in siblings)
            ):
                continue
            rest = [k for k in siblings if k not in _ANNOTATIONS]
            wrapped = target_body is not None and (
                any(k in target_body for k in rest)
                or (bool(rest) and any(k in target_body or k in rest for k in _UNEVALUATED))
            )
            best = max(best, level + wrapped + heights[target])
        return best

    # Each definition's depth, after those it references (depth-first post-order); a
    # recursive definition is a reference wherever it is met.
    kept = recursive | shared
    heights: dict[str, int] = {}
    starts = [name for name in defs if name not in recursive]
    for name in post_order(starts, lambda name: targets(defs[name])):
        heights[name] = height(defs[name])
    written = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    return max([height(written), *(1 + height(defs[name]) for name in kept if name in defs)])


def _recursive_definitions(defs: Mapping[str, Any]) -> set[str]:
    """The definitions that reach themselves again through `$ref`s to definitions (the strongly
    connected components of that graph with a cycle), found in time linear in their size."""
    graph: dict[str, list[str]] = {name: [] for name in defs}
    for name, body in defs.items():
        todo: list[Any] = [body]
        while todo:
            node = todo.pop()
            as_list = _as_list(node)
            if as_list is not None:
                todo.extend(as_list)
                continue
            as_dict = _as_dict(node)
            if as_dict is None:
                continue
            target = _definition_named(as_dict)
            if target is not None and target in graph:
                graph[name].append(target)
            for key, value in as_dict.items():
                if key in _NAMED_SUBSCHEMAS:
                    named = _as_dict(value)
                    if named is not None:
                        todo.extend(named.values())
                elif key in _SUBSCHEMAS:
                    todo.append(value)
    # Tarjan's algorithm, iterative: a schema's definitions may chain deeper than Python's
    # recursion limit.
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    recursive: set[str] = set()
    for root in graph:
        if root in order:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            name, edge = work.pop()
            if edge == 0:
                order[name] = low[name] = len(order)
                stack.append(name)
                on_stack.add(name)
            targets = graph[name]
            if edge < len(targets):
                work.append((name, edge + 1))
                target = targets[edge]
                if target not in order:
                    work.append((target, 0))
                elif target in on_stack:
                    low[name] = min(low[name], order[target])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[name])
            if low[name] == order[name]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == name:
                        break
                if len(component) > 1 or name in graph[name]:
                    recursive.update(component)
    return recursive


# A definition referenced in several places stays a reference once its inlined copy would be
# longer than this many characters (of JSON): smaller ones are inlined as before, so a schema
# grows by at most about this much per definition (see `_shared_definitions`).
SHARED_DEFINITION_CHARS = 1000
# The most characters a tool's schema may take with its references resolved as the inliner
# resolves them; a schema past it is refused at registration (`SchemaTooLargeError`) rather
# than built for minutes.
MAX_INLINED_CHARS = 2_000_000
# What a kept reference, `{"$ref": "#/$defs/Name"}`, takes in the estimate.
_REF_CHARS = 30


# The most levels of subschemas (a property's, an item's, an `anyOf` branch's...) a tool's
# schema may nest with its references followed as the inliner follows them; a deeper one is
# refused at registration (`SchemaTooLargeError`, `measure="depth"`). Past about 30 the
# pre-check's compiled schema (closed, with absent-as-null branches: up to four levels of JSON
# per level) is deeper than its JSON reader takes, and past about 100 the inliner and
# `jsonschema` run out of Python's stack; providers take far less (OpenAI's strict mode 10
# levels of objects).
MAX_SCHEMA_DEPTH = 24
# The most levels of JSON a tool's schema may nest as written (dicts and lists, the root at 1);
# a deeper one, a `const`, `enum`, `default` or `examples` value nested hundreds of levels down,
# is refused at registration (`SchemaTooLargeError`, `measure="nesting"`) instead of exhausting
# Python's stack where it is copied or compared. Subschemas at `MAX_SCHEMA_DEPTH` take at most
# about 50 levels, and an argument nests at most 128 (the assembler's `max_depth` limit).
MAX_SCHEMA_NESTING = 128


class SchemaTooLargeError(RebuiltWhole, ValueError):
    """A tool schema too large to build: with its shared definitions kept as references, its
    remaining references (pointers into the schema, or references with assertions beside
    them) multiply it past `MAX_INLINED_CHARS` (`measure == "characters"`); or its subschemas,
    references followed, nest deeper than `MAX_SCHEMA_DEPTH` levels (`measure == "depth"`);
    or its JSON, a value inside it (`const`, `enum`, `default`, `examples`) most often, nests
    deeper than `MAX_SCHEMA_NESTING` levels (`measure == "nesting"`).

    A `ToolRegistry` built directly raises it too, against its own larger limits (the
    pre-check alone compiles deeper schemas than validation and the exports take), with
    `limit` the registry's: 256 levels of subschemas, 640 of JSON. Where its subschemas pass
    that depth only with their references followed, `size` is the level it stopped at.

    Attributes:
        tool: The tool name (None where no tool was named).
        size: The estimated size of the schema once inlined, in characters of JSON; for
            `measure == "depth"`, the levels it nests; for `"nesting"`, its levels of JSON.
        limit: `MAX_INLINED_CHARS`, `MAX_SCHEMA_DEPTH` for `measure == "depth"`, or
            `MAX_SCHEMA_NESTING` for `"nesting"` (see above for a `ToolRegistry`).
        measure: `"characters"`, `"depth"` or `"nesting"`: what `size` and `limit` count.
    """

    def __init__(
        self,
        size: int,
        limit: int,
        tool: str | None = None,
        *,
        measure: Literal["characters", "depth", "nesting"] = "characters",
    ) -> None:
        where = f"tool {tool!r}: " if tool is not None else ""
        if measure == "depth":
            reason = (
                f"the parameter schema nests {size:,} levels of subschemas with its references"
                f" followed, more than the {limit:,} allowed (MAX_SCHEMA_DEPTH): flatten it"
            )
        elif measure == "nesting":
            reason = (
                f"the parameter schema nests {size:,} levels of JSON, more than the {limit:,}"
                " allowed (MAX_SCHEMA_NESTING): a value in it (a const, enum, default or"
                " example) nested that deep can be no call's argument"
            )
        else:
            reason = (
                f"the parameter schema would take about {size:,} characters of JSON with its"
                f" references inlined, more than the {limit:,} allowed: keep definitions that"
                " are used in several places as plain `$ref`s (without assertions beside them)"
            )
        super().__init__(where + reason)
        self.tool = tool
        self.size = size
        self.limit = limit
        self.measure: Literal["characters", "depth", "nesting"] = measure


class InvalidSchemaError(RebuiltWhole, ValueError):
    """A tool's parameter schema that is not a JSON Schema (its draft's metaschema refuses
    it), refused at registration with the place and what belongs there, in one line.

    Attributes:
        tool: The tool name.
        path: JSON Pointer to the value at fault in the schema as toolwire reads it (local
            references inlined), `""` for the root.
        keyword: The keyword at fault: the last keyword `path` names (`"minLength"`), or None
            where the value at fault is a whole schema (`/properties/a`).
        got: The value at fault as JSON, cut to 80 characters.
        expected: What the metaschema takes there, in words.
        detail: The metaschema's own message, in full (the regex engine's, for a pattern
            that compiles in no engine where the metaschema does not check it).
    """

    def __init__(
        self,
        tool: str,
        path: str,
        keyword: str | None,
        got: str,
        expected: str,
        detail: str,
    ) -> None:
        where = f"'{keyword}' at {path}" if keyword is not None else f"the schema at {path or '/'}"
        super().__init__(
            f"tool {tool!r}: invalid parameter schema: {where} is {got}, expected {expected}"
        )
        self.tool = tool
        self.path = path
        self.keyword = keyword
        self.got = got
        self.expected = expected
        self.detail = detail


def _definition_sites(
    node: Any, defs: Mapping[str, Any], *, legacy: bool, root: bool = False
) -> list[tuple[str, bool]]:
    """Each `$ref` to a definition in `node` (nested `$defs` aside), with whether the inliner
    must copy the definition there: a reference with assertions beside it (draft 2019-09 on),
    or the root's own."""
    out: list[tuple[str, bool]] = []
    todo: list[Any] = [node]
    while todo:
        item = todo.pop()
        as_list = _as_list(item)
        if as_list is not None:
            todo.extend(reversed(as_list))
            continue
        as_dict = _as_dict(item)
        if as_dict is None:
            continue
        target = _definition_named(as_dict)
        if target is not None and target in defs:
            asserting = not legacy and any(k != "$ref" and k not in _ANNOTATIONS for k in as_dict)
            out.append((target, asserting or (root and item is node)))
        for key, value in reversed(as_dict.items()):
            if key in ("$defs", "definitions"):
                continue
            if key in _NAMED_SUBSCHEMAS and _as_dict(value) is not None:
                todo.extend(reversed(value.values()))
            elif key in _SUBSCHEMAS:
                todo.append(value)
    return out


def _shared_definitions(
    schema: Mapping[str, Any], defs: Mapping[str, Any], recursive: set[str], *, legacy: bool
) -> set[str]:
    """The non-recursive definitions the inliner keeps as references: those that would be
    copied more than once, each copy longer than `SHARED_DEFINITION_CHARS`.

    Inlining every reference copies a definition once per path to it: definitions reused at
    several levels (a DAG, as OpenAPI-derived tools have) grew exponentially, a 1.7 KB schema
    to 240 KB. Definitions are decided from the root down, counting the copies each would have
    given what was decided above it, and sized as fully inlined, so what is inlined is either
    copied once or short, and the result stays within a constant of the source.

    Raises:
        SchemaTooLargeError: When the schema would still be longer than `MAX_INLINED_CHARS`.
    """
    sites = {name: _definition_sites(body, defs, legacy=legacy) for name, body in defs.items()}
    written = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    root_sites = _definition_sites(written, defs, legacy=legacy, root=True)
    # The non-recursive definitions, each after every one it references (depth-first
    # post-order, iterative: definitions may chain deeper than Python's recursion limit).
    order: list[str] = []
    visited: set[str] = set()
    for start in defs:
        if start in visited or start in recursive:
            continue
        visited.add(start)
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            name, edge = work.pop()
            targets = sites[name]
            while edge < len(targets) and (
                targets[edge][0] in visited or targets[edge][0] in recursive
            ):
                edge += 1
            if edge == len(targets):
                order.append(name)
                continue
            work.append((name, edge + 1))
            visited.add(targets[edge][0])
            work.append((targets[edge][0], 0))
    own = {name: len(json.dumps(defs[name], default=str)) for name in order}
    full: dict[str, int] = {}
    for name in order:
        full[name] = own[name] + sum(
            _REF_CHARS if t in recursive else full[t] for t, _ in sites[name]
        )
    # Copies of each definition, given what is decided above it.
    copies = dict.fromkeys(defs, 0)
    forced = dict.fromkeys(defs, 0)
    for listed in [root_sites, *(sites[r] for r in recursive if r in sites)]:
        for target, inlined in listed:
            copies[target] += 1
            forced[target] += inlined
    shared: set[str] = set()
    for name in reversed(order):
        times = copies[name]
        if times > 1 and full[name] > SHARED_DEFINITION_CHARS:
            shared.add(name)
            # Once under `$defs`, and wherever a reference with assertions beside it copies it.
            times = 1 + forced[name]
        for target, inlined in sites[name]:
            if target not in recursive:
                copies[target] += times
                forced[target] += times if inlined else 0
    # The size the inlined schema will have, to refuse one that is still too large.
    decided: dict[str, int] = {}

    def size(listed: list[tuple[str, bool]]) -> int:
        return sum(
            _REF_CHARS if t in recursive or (t in shared and not inlined) else decided[t]
            for t, inlined in listed
        )

    for name in order:
        decided[name] = own[name] + size(sites[name])
    total = len(json.dumps(written, default=str)) + size(root_sites)
    total += sum(decided[name] for name in shared)
    total += sum(
        len(json.dumps(defs[r], default=str)) + size(sites[r]) for r in recursive if r in defs
    )
    if total > MAX_INLINED_CHARS:
        raise SchemaTooLargeError(total, MAX_INLINED_CHARS)
    return shared


def _without_discriminator_mapping(node: JsonSchema) -> JsonSchema:
    """`node` without its OpenAPI `discriminator.mapping`, whose values are references.

    Pydantic maps each tag to `#/$defs/Branch`; once the branches are inlined those point
    nowhere, and a consumer that follows them fails. The tag `const` in each branch says the
    same, and `propertyName` stays.
    """
    discriminator = _as_dict(node.get("discriminator"))
    if (
        discriminator is None
        or not isinstance(discriminator.get("propertyName"), str)
        or _as_dict(discriminator.get("mapping")) is None
    ):
        return node
    kept = {k: v for k, v in discriminator.items() if k != "mapping"}
    return {**node, "discriminator": kept}


# Keywords whose subschemas describe the same object as their parent: properties named there
# are not "additional" to the parent, so neither the parent nor (for the keys listed second)
# the subschema itself may be closed without rejecting what the schema accepts.
_SAME_OBJECT = ("allOf", "anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "$ref")
_PARTIAL_MEMBERS = ("allOf", "if", "then", "else", "dependentSchemas")
# Keywords whose subschema is a test put to the value, not a description of the fields it may
# have: a match refuses it (`not`), picks `then` over `else` (`if`), or is counted
# (`contains`). An object closed there turns "has another field" into "does not match", which
# flips the verdict either way, so nothing under them is closed.
_TESTS = ("not", "if", "contains")


# What a kept definition is closed for where a `$ref` names it: as a property's object, as
# a member that may name only some of its object's properties, or not at all (under `not`,
# `if`, `contains`, or in the schema as written).
_CLOSED, _PARTIAL, _OPEN = "closed", "partial", "open"


def _with_closed_definitions(schema: Any, *, strip_null_default: bool, closing: bool) -> Any:
    """`_with_closed_objects` for a whole schema, `$defs` included.

    Inlined, a definition is closed as the place it is copied to asks. Kept as a reference (a
    recursive or shared one), it is closed once for each way it is used: under its own name
    as a property's object (or as written, when nothing is closed), and as
    `Name_partial` (an `allOf` member, say) or `Name_open` (under `not`) where a reference
    asks for that, which then names the copy.
    """
    as_dict = _as_dict(schema)
    defs = None if as_dict is None else _as_dict(as_dict.get("$defs"))
    if as_dict is None or defs is None:
        return _with_closed_objects(
            schema, strip_null_default=strip_null_default, closing=closing, root=True
        )
    base = _CLOSED if closing else _OPEN
    names: dict[tuple[str, str], str] = {(name, base): name for name in defs}
    todo = list(names)
    taken = set(defs)

    def variant(ref: str, closable: bool, closing: bool) -> str:
        tokens = pointer_tokens(ref)
        if tokens is None or len(tokens) != 2 or tokens[0] != "$defs" or tokens[1] not in defs:
            return ref
        kind = _OPEN if not closing else _CLOSED if closable else _PARTIAL
        key = (tokens[1], kind)
        if key not in names:
            name = f"{tokens[1]}_{kind}"
            while name in taken:
                name += "_"
            taken.add(name)
            names[key] = name
            todo.append(key)
        return "#/$defs/" + _pointer_escape(names[key])

    written = {k: v for k, v in as_dict.items() if k != "$defs"}
    out = _with_closed_objects(
        written, strip_null_default=strip_null_default, closing=closing, refs=variant, root=True
    )
    bodies: dict[str, Any] = {}
    done = 0
    while done < len(todo):
        name, kind = todo[done]
        done += 1
        bodies[names[name, kind]] = _with_closed_objects(
            defs[name],
            strip_null_default=strip_null_default,
            closable=kind == _CLOSED,
            closing=kind != _OPEN,
            refs=variant,
        )
    out["$defs"] = {name: bodies[name] for name in sorted(bodies)}
    return out


def _with_closed_objects(
    node: Any,
    *,
    strip_null_default: bool,
    closable: bool = True,
    closing: bool = True,
    refs: Callable[[str, bool, bool], str] | None = None,
    root: bool = False,
) -> Any:
    """Add `additionalProperties: false` where an object says nothing, drop `default: null`.

    With `closing` false (under `not`, `if` or `contains`, see `_TESTS`, or for the schema as
    written) no object is closed.

    Only an object that declares a property is closed: one that declares none (`{"type":
    "object"}`, `"properties": {}`, or only `required`) is a free-form object, as JSON Schema
    reads it and OpenAPI-derived tools write one, and closing it would leave `{}` as its only
    value; one with only `patternProperties` is a map whose keys need not match any
    pattern (`additionalProperties` defaults to anything), and closing it would refuse every
    key its patterns do not name. The tool's own parameters (`root`) are the exception: a
    root that declares nothing about its properties is a tool without parameters (MCP
    servers declare one as `{"type": "object"}`), closed so that every export, the pre-check
    and validation agree that it takes none; `"additionalProperties": true` keeps it open.
    (A Pydantic structure without fields says `additionalProperties: false` itself, see
    `toolset._ModelSchema`.) An object whose properties may come from elsewhere stays
    open too: one with `allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`, `dependentSchemas` or
    `$ref` next to its own keywords, a member of `allOf`, `if`/`then`/`else`,
    `dependentSchemas` or draft 7's `dependencies` (`closable=False`), and an `anyOf` or
    `oneOf` branch whose parent declares properties or pattern properties of its own or is
    such a member itself (the branches of an `allOf` member describe the same object as its
    siblings). Closing those would reject every property
    named on the other side, which the schema allows. An object whose `required` names a
    property that `properties` does not declare stays open as well (and one whose other
    keywords expect undeclared properties, see `_expects_undeclared`): closed, that property
    would be required and refused at once, and no call could pass.

    `refs` gives the reference to write for a `$ref`, from the reference and how its target
    must be closed (whether it may be, and whether anything is), for
    `_with_closed_definitions`."""

    def walk(sub: Any, closable: bool, closing: bool = closing) -> Any:
        return _with_closed_objects(
            sub,
            strip_null_default=strip_null_default,
            closable=closable,
            closing=closing,
            refs=refs,
        )

    as_list = _as_list(node)
    if as_list is not None:
        return [walk(item, closable) for item in as_list]
    as_dict = _as_dict(node)
    if as_dict is None:
        return node
    own_properties = any(k in as_dict for k in ("properties", "patternProperties"))
    out: JsonSchema = {}
    for key, value in as_dict.items():
        named = _as_dict(value) if key in _NAMED_SUBSCHEMAS else None
        if named is not None:
            # The names are data (a property may be called `type`); each value is a schema.
            # Those of `dependentSchemas` and draft 7's `dependencies` describe the same
            # object as their owner, so they are partial members.
            partial = key in ("dependentSchemas", "dependencies")
            out[key] = {k: walk(v, not partial) for k, v in named.items()}
        elif key in _SUBSCHEMAS:
            member_closable = key not in _PARTIAL_MEMBERS and not (
                key in ("anyOf", "oneOf") and (own_properties or not closable)
            )
            out[key] = walk(value, member_closable, closing and key not in _TESTS)
        elif key == "$ref" and refs is not None and isinstance(value, str):
            # The target describes this object: closed as it would be, copied here, unless
            # an assertion beside the reference may name properties of its own.
            alone = all(k == "$ref" or k in _ANNOTATIONS for k in as_dict)
            out[key] = refs(value, closable and alone, closing)
        else:
            # Data (`enum`, `const`, `default`, `examples`, an `x-` extension): an object in
            # it is a value, not a schema to close.
            out[key] = copy.deepcopy(value)
    if strip_null_default and "default" in out and out["default"] is None:
        del out["default"]
    if _is_secret(out):
        # A secret's default or example is a secret too (or `SecretStr`'s mask, which a model
        # would copy as the value): neither goes to a provider.
        out.pop("default", None)
        out.pop("examples", None)
    declares = bool(_as_dict(out.get("properties"))) or (root and "patternProperties" not in out)
    if (
        closing
        and closable
        and declares
        and _is_object(out)
        and "additionalProperties" not in out
        and not any(k in out for k in _SAME_OBJECT)
        and not _expects_undeclared(out)
    ):
        out["additionalProperties"] = False
    return out


# Keywords that govern, or name, properties beyond those an object declares.
_OPEN_OBJECT = ("unevaluatedProperties", "propertyNames", "dependencies")


def _expects_undeclared(node: Mapping[str, Any]) -> bool:
    """Whether an object's other keywords expect properties `properties` does not declare:
    `required` or `dependentRequired` naming one, more `minProperties` than it declares, or
    a keyword about the other properties (`unevaluatedProperties`, `propertyNames`,
    draft 7's `dependencies`). Closed, such an object would refuse what its schema asks for."""
    if any(k in node for k in _OPEN_OBJECT):
        return True
    declared = _as_dict(node.get("properties")) or {}
    if any(name not in declared for name in _as_list(node.get("required")) or []):
        return True
    for key, names in (_as_dict(node.get("dependentRequired")) or {}).items():
        if key not in declared or any(n not in declared for n in _as_list(names) or []):
            return True
    minimum = node.get("minProperties")
    return isinstance(minimum, int) and minimum > len(declared) and "patternProperties" not in node


def _is_secret(node: Mapping[str, Any]) -> bool:
    """Whether a node, or a union branch of it, holds a secret: `x-secret` (toolwire's mark) or
    `SecretStr`'s `format: password` / `writeOnly`, the marks redaction honours."""
    if is_marked_secret(node):
        return True
    for key in ("anyOf", "oneOf"):
        for branch in _as_list(node.get(key)) or []:
            as_dict = _as_dict(branch)
            if as_dict is not None and _is_secret(as_dict):
                return True
    return False


def secret_patterns(schema: Mapping[str, Any]) -> list[str]:
    """JSON Pointers of every secret value a schema declares, for the pre-check's errors:
    `*` stands for any array item or additional property. Local `$ref`s are followed (each
    definition once on a path, so a recursive one ends; where a recursive definition that holds
    a secret comes back, the whole value there counts as secret), and union branches, `allOf`
    members and the other schemas of the same value are searched.

    Args:
        schema: A self-contained tool schema.

    Returns:
        The pointers, depth first (a secret's own children are not listed); `[""]`, every
        value, where there would be more than `MAX_SECRET_POINTERS` (a definition holding a
        secret, kept once and reached along exponentially many paths).
    """
    defs = _as_dict(schema.get("$defs")) or {}
    out: list[str] = []
    holding = _definitions_holding_secrets(defs)

    class _TooMany(Exception):
        pass

    def collect(
        node: Mapping[str, Any], prefix: str, seen: frozenset[str], into: list[str]
    ) -> None:
        if is_marked_secret(node):
            if prefix not in into:
                into.append(prefix)
                if len(into) > MAX_SECRET_POINTERS:
                    raise _TooMany
            return
        ref = node.get("$ref")
        name = ref.removeprefix(_DEFS) if isinstance(ref, str) else ""
        # Only a definition that holds a secret somewhere is entered: entered on every path,
        # definitions that reference each other (an expression language) took exponential time.
        if isinstance(ref, str) and ref.startswith(_DEFS) and name in holding:
            target = _as_dict(defs.get(name))
            if target is not None and ref not in seen:
                collect(target, prefix, seen | {ref}, into)
            elif target is not None:
                # A recursive definition seen again on this path: its secrets lie at every
                # depth, which no finite list of pointers names, so all of it counts.
                if prefix not in into:
                    into.append(prefix)
                    if len(into) > MAX_SECRET_POINTERS:
                        raise _TooMany
                return
        for step, child in _secret_search_steps(node):
            collect(child, prefix + step, seen, into)

    try:
        collect(schema, "", frozenset(), out)
    except _TooMany:
        return [""]
    return out


# Secret pointers one tool's pre-check is given before it counts every value as secret.
MAX_SECRET_POINTERS = 256


# Where a local `$ref` to a definition points.
_DEFS = "#/$defs/"


def _secret_search_steps(node: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The schemas a secret search goes on to from `node` (`$ref` unresolved), each with the
    JSON Pointer step to the value it describes: `""` for another schema of the same value, a
    property's token, an array index, or `/*` for any item or additional property."""
    steps: list[tuple[str, Mapping[str, Any]]] = [("", part) for part in same_value(node)]
    for name, child in (_as_dict(node.get("properties")) or {}).items():
        as_dict = _as_dict(child)
        if as_dict is not None:
            steps.append(("/" + _pointer_escape(name), as_dict))
    items = node.get("items")
    listed = [*(_as_list(node.get("prefixItems")) or []), *(_as_list(items) or [])]
    for index, child in enumerate(listed):
        as_dict = _as_dict(child)
        if as_dict is not None:
            steps.append((f"/{index}", as_dict))
    steps += [("/*", child) for child in inner_any(node)]
    return steps


def _definitions_holding_secrets(defs: Mapping[str, Any]) -> set[str]:
    """The definitions that declare a secret anywhere inside, through the definitions they
    reference too: each body read once, then what references a holder holds one."""
    marked: set[str] = set()
    referrers: dict[str, list[str]] = {}
    for name, body in defs.items():
        first = _as_dict(body)
        todo = [] if first is None else [first]
        while todo:
            node = todo.pop()
            if is_marked_secret(node):
                marked.add(name)
                break
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_DEFS):
                referrers.setdefault(ref.removeprefix(_DEFS), []).append(name)
            todo += [child for _, child in _secret_search_steps(node)]
    return with_referrers(marked, referrers)


def with_referrers(names: set[str], referrers: Mapping[str, list[str]]) -> set[str]:
    """`names` with every definition that references one of them, directly or through other
    definitions (`referrers`: each definition's name to those whose bodies reference it)."""
    found = set(names)
    todo = list(names)
    while todo:
        for referrer in referrers.get(todo.pop(), []):
            if referrer not in found:
                found.add(referrer)
                todo.append(referrer)
    return found


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "object":
        return True
    kinds = _as_list(kind)
    return kinds is not None and "object" in kinds


def precheck_schema(schema: Mapping[str, Any], *, closed: bool = True) -> JsonSchema:
    """The self-contained schema that the pre-check compiles and Anthropic receives.

    Args:
        schema: A tool's parameter schema.
        closed: False leaves every object as written (validation reads `oneOf` that way: see
            `closing_splits_one_of`).

    Returns:
        A new schema with `$ref`s inlined, `additionalProperties: false` on every object that
        declares a property and does not set it (outside `not`, `if` and `contains`) and on a
        root that declares nothing (a tool without parameters), and `default: null` removed.
        `required` is left as the source has it.
    """
    out = _with_closed_definitions(inline_refs(schema), strip_null_default=True, closing=closed)
    return cast(JsonSchema, out)


def closing_splits_one_of(closed: Any, written: Any) -> bool:
    """Whether closing objects changed a `oneOf` branch: `closed` is `written` with objects
    closed (`precheck_schema` both ways).

    Two open branches that both take a value make `oneOf` refuse it; closed, they may differ by
    a field one of them does not name, and the value passes. Such a schema must also be held to
    its `oneOf`s as written.
    """
    closed_defs = _as_dict(_as_dict(closed) and closed.get("$defs")) or {}
    written_defs = _as_dict(_as_dict(written) and written.get("$defs")) or {}
    # Pairs of kept definitions (the closed copy's name, the written one's) being compared,
    # taken as equal when met again inside (two recursive copies are equal where no finite
    # path tells them apart), and the verdicts that hold: any difference, and an equality
    # found with no such assumption open.
    open_pairs: set[tuple[str, str]] = set()
    known: dict[tuple[str, str], bool] = {}

    def target(ref: object, defs: Mapping[str, Any]) -> str | None:
        tokens = pointer_tokens(ref) if isinstance(ref, str) else None
        if tokens is None or len(tokens) != 2 or tokens[0] != "$defs" or tokens[1] not in defs:
            return None
        return tokens[1]

    def same(closed: Any, written: Any) -> bool:
        """Whether two subschemas are equal, read through the references in them."""
        closed_node, written_node = _as_dict(closed), _as_dict(written)
        if closed_node is not None and written_node is not None:
            if closed_node.keys() != written_node.keys():
                return False
            closed_end = target(closed_node.get("$ref"), closed_defs)
            written_end = target(written_node.get("$ref"), written_defs)
            for key, value in written_node.items():
                if key == "$ref" and closed_end is not None and written_end is not None:
                    continue
                if not same(closed_node[key], value):
                    return False
            if closed_end is None or written_end is None:
                return True
            pair = (closed_end, written_end)
            if pair in open_pairs:
                return True
            if pair in known:
                return known[pair]
            open_pairs.add(pair)
            verdict = same(closed_defs[closed_end], written_defs[written_end])
            open_pairs.discard(pair)
            if not verdict or not open_pairs:
                known[pair] = verdict
            return verdict
        closed_list, written_list = _as_list(closed), _as_list(written)
        if closed_list is not None and written_list is not None:
            return len(closed_list) == len(written_list) and all(
                same(c, w) for c, w in zip(closed_list, written_list, strict=True)
            )
        return closed == written

    return _splits_one_of(closed, written, closed_defs, written_defs, same, set())


def _splits_one_of(
    closed: Any,
    written: Any,
    closed_defs: Mapping[str, Any],
    written_defs: Mapping[str, Any],
    same: Callable[[Any, Any], bool],
    seen: set[tuple[str, str]],
) -> bool:
    """`closing_splits_one_of` below one pair of subschemas, a kept definition's pair of
    copies looked into once (`seen`) where a reference names it."""
    closed_node, written_node = _as_dict(closed), _as_dict(written)
    if closed_node is None or written_node is None:
        return False
    if "oneOf" in written_node and not same(closed_node.get("oneOf"), written_node["oneOf"]):
        return True
    closed_ref, written_ref = closed_node.get("$ref"), written_node.get("$ref")
    if isinstance(closed_ref, str) and isinstance(written_ref, str):
        pair = ((pointer_tokens(closed_ref) or [""])[-1], (pointer_tokens(written_ref) or [""])[-1])
        if pair[0] in closed_defs and pair[1] in written_defs and pair not in seen:
            seen.add(pair)
            if _splits_one_of(
                closed_defs[pair[0]], written_defs[pair[1]], closed_defs, written_defs, same, seen
            ):
                return True
    for key, value in written_node.items():
        other: Any = closed_node.get(key)
        pairs: list[tuple[Any, Any]]
        named, other_named = _as_dict(value), _as_dict(other)
        listed, other_listed = _as_list(value), _as_list(other)
        if key in _NAMED_SUBSCHEMAS and named is not None and other_named is not None:
            pairs = [(other_named.get(name), sub) for name, sub in named.items()]
        elif key in _SUBSCHEMAS and listed is not None and other_listed is not None:
            pairs = list(zip(other_listed, listed, strict=False))
        elif key in _SUBSCHEMAS:
            pairs = [(other, value)]
        else:
            continue
        if any(_splits_one_of(c, w, closed_defs, written_defs, same, seen) for c, w in pairs):
            return True
    return False


class _StrictWalker:
    """Rewrites a pre-check schema into the strict subset and collects what does not fit."""

    def __init__(
        self, tool: str, *, nullable_optional: bool, defs: Mapping[str, Any] | None = None
    ) -> None:
        self.tool = tool
        self.nullable_optional = nullable_optional
        # The kept definitions, and those of them that recurse: a shared definition kept as a
        # reference is read through it as its inlined copy was (an `allOf` member flattened, its
        # objects counted towards the depth of the place that references it).
        self.defs: Mapping[str, Any] = defs or {}
        self.recursive = _recursive_definitions(self.defs)
        self.heights: dict[str, int] = {}
        self.at_root = True
        self.problems: list[Relaxation] = []
        self.property_count = 0
        self.enum_values = 0
        # Characters of names, enum and const values (see `MAX_SCHEMA_CHARS`).
        self.chars = 0

    def problem(self, path: str, keyword: str, reason: str) -> None:
        self.problems.append(Relaxation(self.tool, path or "(root)", keyword, reason))

    def walk(self, node: Any, path: str, depth: int) -> Any:
        as_dict = _as_dict(node)
        if as_dict is None:
            # A boolean schema: `true` is a value of any type, as `{}` is; `false` admits
            # nothing. Neither has the `type` key OpenAI asks of every node.
            if node is True:
                self.problem(path, "type", "a value of any type (no `type`, as for `Any`)")
            elif node is False:
                self.problem(path, "type", "a schema that admits no value (`false`)")
            return node
        if "$ref" in as_dict:
            target = self._shared(as_dict["$ref"])
            if (
                self.at_root
                and target is not None
                and depth <= MAX_OBJECT_DEPTH < depth + self._height(target)
            ):
                self.problem(path, "type", f"objects nested deeper than {MAX_OBJECT_DEPTH} levels")
            return {"$ref": as_dict["$ref"]}
        out: JsonSchema = dict(as_dict)
        out.pop("default", None)
        # Gemini's key order for its own output: it asserts nothing, and OpenAI's strict
        # subset does not know it (tools written for Gemini are exported to OpenAI too).
        out.pop("propertyOrdering", None)
        _numeric_exclusive_bounds(out)
        if isinstance(out.get("format"), str) and out["format"] not in STRICT_FORMATS:
            del out["format"]
        self._flatten_all_of(out, path)
        self._rewrite_one_of(out, path)
        for key, reason in _UNSUPPORTED.items():
            if key in out:
                self.problem(path, key, reason)
        if not any(key in out for key in _TYPED_BY) and "allOf" not in out:
            self.problem(path, "type", "a value of any type (no `type`, as for `Any`)")
        self._count_enum(out, path)
        if _is_object(out) or "properties" in out:
            depth += 1
            if depth == MAX_OBJECT_DEPTH + 1:
                self.problem(path, "type", f"objects nested deeper than {MAX_OBJECT_DEPTH} levels")
            # An object that names no properties (`"properties": {}` names none) is free-form
            # unless it says otherwise, as the pre-check schema reads it.
            names_properties = bool(_as_dict(out.get("properties"))) or "patternProperties" in out
            extra = out.get("additionalProperties", not names_properties)
            if extra is not False:
                self.problem(
                    path,
                    "additionalProperties",
                    "an open object (a dict, extra='allow', or a free-form object, which"
                    " declares no property)",
                )
            props = _as_dict(out.get("properties")) or {}
            required = set(_as_list(out.get("required")) or [])
            for name in sorted(str(r) for r in required if r not in props):
                # Strict mode admits only the declared properties: this one could never be sent.
                self.problem(path, "required", f"required field {name!r} is not in `properties`")
            self.property_count += len(props)
            self.chars += sum(len(name) for name in props)
            out["properties"] = {
                key: self._property(sub, f"{path}.{key}" if path else key, depth, key in required)
                for key, sub in props.items()
            }
            out["required"] = list(props)
            # Keep additionalProperties after properties/required: the order pydantic and the
            # openai helper produce, so exported JSON diffs cleanly against theirs.
            out["additionalProperties"] = out.pop("additionalProperties", False)
        if _as_list(out.get("items")) is not None:
            # Draft 2019-09 and older write a tuple as a list of `items`.
            self.problem(path, "items", "tuples (`items` as a list) are not supported")
        elif "items" in out:
            out["items"] = self.walk(out["items"], f"{path}[]", depth)
            # Read only beside a list of `items`: with one schema it asserts nothing.
            out.pop("additionalItems", None)
        for key in ("anyOf", "allOf"):
            branches = _as_list(out.get(key))
            if branches is not None:
                out[key] = [self.walk(branch, path, depth) for branch in branches]
        return out

    def _shared(self, ref: object) -> str | None:
        """The kept definition that is not recursive a `$ref` names, or None."""
        tokens = pointer_tokens(ref) if isinstance(ref, str) else None
        if tokens is None or len(tokens) != 2 or tokens[0] != "$defs":
            return None
        name = tokens[1]
        return name if name in self.defs and name not in self.recursive else None

    def _height(self, name: str) -> int:
        """How many levels of objects a kept definition that is not recursive nests, as `walk`
        counts them (a recursive one below it counts none, as where it is walked)."""
        if name not in self.heights:
            self.heights[name] = 0
            self.heights[name] = self._node_height(self.defs[name])
        return self.heights[name]

    def _node_height(self, node: Any) -> int:
        as_dict = _as_dict(node)
        if as_dict is None:
            return 0
        if "$ref" in as_dict:
            target = self._shared(as_dict["$ref"])
            return 0 if target is None else self._height(target)
        own = 1 if _is_object(as_dict) or "properties" in as_dict else 0
        inside: list[Any] = list((_as_dict(as_dict.get("properties")) or {}).values())
        for key in ("items", "anyOf"):
            value = as_dict.get(key)
            inside += _as_list(value) or ([] if value is None else [value])
        below = max((self._node_height(sub) for sub in inside), default=0)
        # An `allOf` member is flattened into its owner: its objects are the owner's level.
        members = max(
            (self._node_height(m) for m in _as_list(as_dict.get("allOf")) or []), default=0
        )
        return max(own + below, members, own)

    def _count_enum(self, out: JsonSchema, path: str) -> None:
        """Counts `enum` and `const` towards the schema's limits; one enum's own limit here."""
        enum = _as_list(out.get("enum")) or []
        own_chars = sum(len(v) for v in enum if isinstance(v, str))
        const = out.get("const")
        self.chars += own_chars + (len(const) if isinstance(const, str) else 0)
        before = self.enum_values
        self.enum_values += len(enum)
        if before <= MAX_ENUM_VALUES < self.enum_values:
            self.problem(path, "enum", f"more than {MAX_ENUM_VALUES} enum values in all")
        if len(enum) > LARGE_ENUM_VALUES and own_chars > MAX_LARGE_ENUM_CHARS:
            self.problem(
                path,
                "enum",
                f"more than {LARGE_ENUM_VALUES} enum values with more than"
                f" {MAX_LARGE_ENUM_CHARS:,} characters in all",
            )

    def _property(self, node: Any, path: str, depth: int, required: bool) -> Any:
        out = self.walk(node, path, depth)
        as_dict = _as_dict(out)
        if required or not self.nullable_optional or as_dict is None or accepts_null(as_dict):
            return out
        # OpenAI's documented way to express an optional parameter in strict mode: a union
        # with null. Validation reads a null there as "absent" (the `null_as_absent` rule).
        outer = {k: as_dict.pop(k) for k in ("title", "description") if k in as_dict}
        return {"anyOf": [as_dict, {"type": "null"}], **outer}

    def _flatten_all_of(self, out: JsonSchema, path: str) -> None:
        branches = _as_list(out.get("allOf"))
        if branches is None:
            return
        merged: JsonSchema = {}
        props: JsonSchema = {}
        # The object's own required names stay required next to the members'.
        own_required = _as_list(out.get("required")) or []
        required: list[str] = [r for r in own_required if isinstance(r, str)]
        for branch in branches:
            as_dict = _as_dict(branch)
            shared = None if as_dict is None else self._shared(as_dict.get("$ref"))
            if shared is not None and as_dict is not None:
                # A shared definition kept as a reference: its copy, as it was inlined (only
                # annotations are ever beside such a reference).
                notes = {k: v for k, v in as_dict.items() if k != "$ref"}
                as_dict = {**(_as_dict(self.defs[shared]) or {}), **notes}
            if as_dict is None or "$ref" in as_dict:
                self.problem(
                    path, "allOf", "`allOf` over a recursive reference cannot be flattened"
                )
                return
            if "allOf" in as_dict:
                # A member made of members (nested composition) is one object too.
                as_dict = dict(as_dict)
                self._flatten_all_of(as_dict, path)
                if "allOf" in as_dict:
                    return
            for key, value in as_dict.items():
                if key == "properties":
                    for name, sub in (_as_dict(value) or {}).items():
                        if name in props and props[name] != sub:
                            self.problem(path, "allOf", f"`allOf` branches disagree on {name!r}")
                            return
                        props[name] = sub
                elif key == "required":
                    required.extend(r for r in value if r not in required)
                elif key in merged and merged[key] != value:
                    self.problem(path, "allOf", f"`allOf` branches disagree on `{key}`")
                    return
                else:
                    merged[key] = value
        del out["allOf"]
        for key, value in merged.items():
            out.setdefault(key, value)
        if props:
            out["properties"] = {**(_as_dict(out.get("properties")) or {}), **props}
        if required:
            out["required"] = required

    def _rewrite_one_of(self, out: JsonSchema, path: str) -> None:
        branches = out.get("oneOf")
        if branches is None:
            return
        if "discriminator" in out and "anyOf" not in out:
            # The discriminator's const tags make the branches mutually exclusive, so `anyOf`
            # accepts exactly what `oneOf` accepted, and the strict subset knows `anyOf`.
            del out["discriminator"]
            out["anyOf"] = out.pop("oneOf")
        else:
            self.problem(path, "oneOf", "`oneOf` without a discriminator is not supported")


def _numeric_exclusive_bounds(out: JsonSchema) -> None:
    """Rewrites draft 4's boolean `exclusiveMinimum` / `exclusiveMaximum` in place.

    Draft 4 marks `minimum` as exclusive with `exclusiveMinimum: true`; later drafts, and
    OpenAI's strict subset, take the bound itself as the keyword's number (a boolean there is
    a schema error).
    """
    for exclusive, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = out.get(exclusive)
        if not isinstance(flag, bool):
            continue
        del out[exclusive]
        if flag and isinstance(out.get(bound), (int, float)) and bound in out:
            out[exclusive] = out.pop(bound)


# OpenAPI 3.0's type names as google-genai's `Type` enum writes them (Gemini and Vertex AI
# function declarations), and the JSON Schema types they stand for.
_OPENAPI_TYPES = {
    "OBJECT": "object",
    "STRING": "string",
    "INTEGER": "integer",
    "NUMBER": "number",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "NULL": "null",
}
_JSON_TYPES = frozenset(_OPENAPI_TYPES.values())


def _json_type(kind: object, at: str) -> object:
    """`kind` (a `type` value) with OpenAPI's uppercase names in JSON Schema's spelling."""
    if isinstance(kind, list):
        return [_json_type(k, at) for k in cast(list[object], kind)]
    if not isinstance(kind, str) or kind in _JSON_TYPES:
        return kind
    if kind in _OPENAPI_TYPES:
        return _OPENAPI_TYPES[kind]
    known = ", ".join(repr(k) for k in sorted(_JSON_TYPES))
    hint = f" (did you mean {kind.lower()!r}?)" if kind.lower() in _JSON_TYPES else ""
    raise ValueError(
        f"unknown type {kind!r} at {at}{hint}: JSON Schema's types are {known}"
        " (or OpenAPI's uppercase names of them, 'OBJECT', 'STRING', ...)"
    )


def as_json_schema(schema: Mapping[str, Any]) -> JsonSchema:
    """A plain tool's parameter schema with the OpenAPI 3.0 spellings it may carry read as
    JSON Schema, which is what validation and the pre-check read.

    Gemini and Vertex AI declarations, and schemas converted from OpenAPI documents, are
    OpenAPI's schema objects: their `type` may be written `"OBJECT"`, `"STRING"`, ... (the
    names of google-genai's `Type` enum), which becomes the lowercase JSON Schema type.
    Without a `$schema`, a boolean `exclusiveMinimum` / `exclusiveMaximum` is read as OpenAPI
    3.0 and draft 4 read it: `true` makes the `minimum` / `maximum` beside it exclusive, and
    `false` (or `true` with no bound to make exclusive) adds nothing. A declared `$schema`
    keeps its own reading, so draft 4's is left to `jsonschema`'s draft 4 class, and a boolean
    under a later draft stays the schema error it is there. Under draft 2019-09 a boolean
    `items` is written as the object schema it stands for (`{}`, `{"not": {}}`), which
    `jsonschema`'s `unevaluatedItems` of that draft reads where it raises on a boolean.

    Returns:
        A new schema; the input is not modified.

    Raises:
        ValueError: On a `type` that names no JSON Schema type and no OpenAPI one.
        SchemaTooLargeError: On a schema nested past `MAX_SCHEMA_DEPTH` or
            `MAX_SCHEMA_NESTING` (the walk recurses).
    """
    refuse_too_deep(schema, None)
    openapi = "$schema" not in schema
    declared = schema.get("$schema")
    draft_2019 = isinstance(declared, str) and "2019-09" in declared

    def walk(node: Any, at: str) -> Any:
        as_list = _as_list(node)
        if as_list is not None:
            return [walk(item, f"{at}/{i}") for i, item in enumerate(as_list)]
        as_dict = _as_dict(node)
        if as_dict is None:
            return node
        out: JsonSchema = {}
        for key, value in as_dict.items():
            if key == "type":
                out[key] = _json_type(value, f"{at}/{_pointer_escape(key)}")
            elif key == "items" and draft_2019 and isinstance(value, bool):
                # The same schema as an object: `jsonschema`'s draft 2019-09
                # `unevaluatedItems` takes a boolean `items` for a list and raises.
                out[key] = {} if value else {"not": {}}
            else:
                out[key] = _with_subschemas_mapped(
                    key,
                    value,
                    lambda sub, tokens: walk(
                        sub, at + "".join(f"/{_pointer_escape(t)}" for t in tokens)
                    ),
                )
        if openapi:
            _numeric_exclusive_bounds(out)
        return out

    return cast(JsonSchema, walk(schema, ""))


def accepts_null(
    node: Mapping[str, Any],
    *,
    openapi: bool = False,
    deref: Callable[[Mapping[str, Any]], object] | None = None,
) -> bool:
    """Whether a (dereferenced) schema node obviously admits `null`: every keyword of it that
    judges null lets it pass. With `openapi`, OpenAPI 3.0's `nullable: true` lets null past
    `type` and `enum`, as validation reads it (exports do not: a provider that does not know
    the keyword would refuse the null); it does not override `const` or a union. A `$ref`
    counts as refusing null unless `deref` is given, which reads it as the schema it names
    (a definition that recurses stays a `$ref` in a union branch).
    """
    return _accepts_null(node, openapi, deref, set())


def _accepts_null(
    node: Mapping[str, Any],
    openapi: bool,
    deref: Callable[[Mapping[str, Any]], object] | None,
    open_refs: set[int],
) -> bool:
    def takes(sub: object) -> bool:
        # `true` takes anything, null too; `false` nothing.
        as_dict = _as_dict(sub)
        if as_dict is None:
            return sub is True
        return _accepts_null(as_dict, openapi, deref, open_refs)

    # Every `allOf` member applies to the same value: one that refuses null (the described
    # `{"allOf": [{"$ref": ...}]}` of older exporters) refuses it for the node.
    if not all(takes(member) for member in _as_list(node.get("allOf")) or []):
        return False
    if "$ref" in node:
        # A reference met again inside its own reading adds nothing: it refuses.
        if deref is None or id(node) in open_refs:
            return False
        open_refs.add(id(node))
        try:
            if not takes(deref(node)):
                return False
        finally:
            open_refs.discard(id(node))
    if "const" in node and node["const"] is not None:
        return False
    nullable = openapi and node.get("nullable") is True
    enum = _as_list(node.get("enum"))
    if enum is not None and None not in enum and not nullable:
        return False
    kind = node.get("type")
    kinds = [kind] if isinstance(kind, str) else _as_list(kind)
    if kinds is not None and "null" not in kinds and not nullable:
        return False
    for key in ("anyOf", "oneOf"):
        branches = _as_list(node.get(key))
        if branches is not None and not any(takes(b) for b in branches):
            return False
    return True


def strict_problems(schema: Mapping[str, Any], *, tool: str) -> list[Relaxation]:
    """List everything that keeps a schema out of the OpenAI strict subset.

    Args:
        schema: A tool's parameter schema.
        tool: The tool name, for the report.

    Returns:
        One `Relaxation` per problem, in schema order; empty if the schema can be strict.
    """
    return _strict(schema, tool, nullable_optional=False)[1]


# Keywords only toolwire reads (`x-secret` and `x-user-supplied` in validation, `x-unit` and
# `x-toolwire-coerce` in coercion). A strict export leaves them out: OpenAI's strict mode
# refuses keywords outside its subset, and these mean nothing to a provider.
TOOLWIRE_KEYWORDS = frozenset({"x-secret", "x-user-supplied", "x-unit", "x-toolwire-coerce"})
# Keywords whose value maps names to subschemas, and those whose value is a subschema or a
# list of them; every other keyword's value is data (`enum`, `default`, `examples`, ...).
_NAMED_SUBSCHEMAS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)
_SUBSCHEMAS = (
    "items",
    "prefixItems",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "contentSchema",
)


def _with_subschemas_mapped(
    key: str, value: Any, walk: Callable[[Any, tuple[str, ...]], Any]
) -> Any:
    """The value of keyword `key` with `walk` applied to each subschema it holds, given the
    pointer tokens from the object to that subschema (a list of them is walked whole); the
    value of a keyword that holds none (a default, an enum, an `x-` extension) as it is: a
    `$ref` or a `$defs` key inside it is data."""
    if key in _NAMED_SUBSCHEMAS and _as_dict(value) is not None:
        # Names of properties (or dependencies) may be any text, `$defs` included.
        return {name: walk(sub, (key, name)) for name, sub in value.items()}
    if key in _SUBSCHEMAS:
        return walk(value, (key,))
    return value


def without_keywords(node: Any, keywords: frozenset[str], *, false_as_nothing: bool = False) -> Any:
    """`node` without `keywords` in any subschema. Only schema positions are touched: a
    property named like one of them, or a key inside an `enum`, `const`, `default` or
    `examples` value, is data and stays. With `false_as_nothing`, a member's or a tuple
    position's `false` schema is written `{"not": {}}`, which refuses the same values (the
    `false` of `items`, `additionalProperties` and the like stays)."""
    as_dict = _as_dict(node)
    if as_dict is None:
        return node

    def inside(sub: Any, member: bool) -> Any:
        if member and false_as_nothing and sub is False:
            return {"not": {}}
        return without_keywords(sub, keywords, false_as_nothing=false_as_nothing)

    out: dict[str, Any] = {}
    for key, value in as_dict.items():
        if key in keywords:
            continue
        named = _as_dict(value) if key in _NAMED_SUBSCHEMAS else None
        listed = _as_list(value) if key in _SUBSCHEMAS else None
        if named is not None:
            out[key] = {name: inside(sub, True) for name, sub in named.items()}
        elif listed is not None:
            out[key] = [inside(sub, key == "prefixItems") for sub in listed]
        elif key in _SUBSCHEMAS:
            out[key] = inside(value, False)
        else:
            out[key] = value
    return out


def _strict(
    schema: Mapping[str, Any], tool: str, *, nullable_optional: bool
) -> tuple[JsonSchema, list[Relaxation]]:
    refuse_too_deep(schema, tool)
    base = precheck_schema(schema)
    walker = _StrictWalker(
        tool, nullable_optional=nullable_optional, defs=_as_dict(base.get("$defs")) or {}
    )
    if not _is_object(base) or "anyOf" in base:
        walker.problem("", "type", "the top level must be an object, not a union or a scalar")
    out = cast(JsonSchema, walker.walk(base, "", 0))
    # The strict schema is written in OpenAI's dialect (draft 4's boolean bounds rewritten,
    # refs inlined as a draft 7 reads them): a declared older draft no longer describes it.
    out.pop("$schema", None)
    defs = _as_dict(out.get("$defs"))
    if defs is not None:
        # Their depth below the references to them was counted where those are.
        walker.at_root = False
        out["$defs"] = {name: walker.walk(sub, name, 0) for name, sub in defs.items()}
    if walker.property_count > MAX_PROPERTIES:
        walker.problem("", "properties", f"more than {MAX_PROPERTIES} object properties in all")
    walker.chars += sum(len(name) for name in _as_dict(out.get("$defs")) or {})
    if walker.chars > MAX_SCHEMA_CHARS:
        walker.problem(
            "",
            "properties",
            f"more than {MAX_SCHEMA_CHARS:,} characters of property names, definition names,"
            " enum and const values",
        )
    return cast(JsonSchema, without_keywords(out, TOOLWIRE_KEYWORDS)), walker.problems


def strict_schema(
    schema: Mapping[str, Any], *, tool: str, nullable_optional: bool = False
) -> JsonSchema:
    """The OpenAI strict-mode schema for a tool.

    Args:
        schema: A tool's parameter schema.
        tool: The tool name, for error messages.
        nullable_optional: Turn each property that is not required (and does not admit null)
            into a union with null, so the model can leave it out by sending null. Used for
            plain tool definitions; Pydantic models keep the openai helper's behaviour (a
            field with a default becomes required with its own type).

    Returns:
        A new, self-contained schema in the strict subset.

    Raises:
        SchemaExportError: For the first construct the strict subset cannot express.
    """
    out, problems = _strict(schema, tool, nullable_optional=nullable_optional)
    if problems:
        first = problems[0]
        raise SchemaExportError(tool, first.path, first.keyword, first.reason)
    return out


def export_schema(
    schema: Mapping[str, Any], *, tool: str, strict: bool, nullable_optional: bool = False
) -> ExportedSchema:
    """Export a tool schema, strict if asked, degrading to non-strict when allowed.

    Args:
        schema: A tool's parameter schema.
        tool: The tool name.
        strict: If true, raise when the schema cannot be strict; if false, fall back to the
            pre-check schema and report what was relaxed.
        nullable_optional: See `strict_schema`.

    Returns:
        The schema with its strictness and relaxations.

    Raises:
        SchemaExportError: When `strict` is true and the schema cannot be strict.
    """
    out, problems = _strict(schema, tool, nullable_optional=nullable_optional)
    if not problems:
        return ExportedSchema(out, True)
    if strict:
        first = problems[0]
        raise SchemaExportError(tool, first.path, first.keyword, first.reason)
    return ExportedSchema(precheck_schema(schema), False, tuple(problems))
