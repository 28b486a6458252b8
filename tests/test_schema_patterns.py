"""Regular expressions in plain tool schemas (`pattern`, `patternProperties`, `propertyNames`)
are ECMA-262 patterns, as JSON Schema has them: every keyword that reads one, wherever it sits
in the schema, reads it the same way (Unicode property classes such as `\\p{L}`, a `$` that
holds only at the very end of the text), and a pattern no engine can run is refused when the
tool is registered, at its own place."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Splitter, streamed_call
from toolwire import InvalidSchemaError, Toolset

_DRAFT_2019 = "https://json-schema.org/draft/2019-09/schema"
_ECMA = "an ECMA-262 regular expression (JSON Schema's dialect, read with the `u` flag)"


def _outcome(
    schema: dict[str, Any], arguments: dict[str, Any], splitter: Splitter
) -> tuple[bool, bool, list[tuple[str, str]]]:
    """Whether the pre-check let the streamed call through, whether validation accepts it, and
    validation's errors as (code, pointer)."""
    tools = Toolset([{"name": "tool", "parameters": schema}])
    prechecked, outcome = streamed_call(tools, arguments, splitter)
    return prechecked, outcome.ok, [(e.code, e.path) for e in outcome.errors]


def _letters_only(draft: str | None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "patternProperties": {r"^\p{L}+$": {"type": "string"}},
        "unevaluatedProperties": False,
    }
    return schema if draft is None else {"$schema": draft, **schema}


@pytest.mark.parametrize("draft", [None, _DRAFT_2019])
def test_a_property_class_beside_unevaluated_properties_is_read_as_ecma_262(
    draft: str | None, splitter: Splitter
) -> None:
    # `jsonschema` found the members a pattern evaluates with Python's `re`, which has no
    # `\p{L}`: every call ended `internal_error`, valid or not.
    schema = _letters_only(draft)
    assert _outcome(schema, {"名前": "x", "abc": "y"}, splitter) == (True, True, [])
    assert _outcome(schema, {"abc": "y", "a1": "z"}, splitter)[1:] == (
        False,
        [("unknown_field", "/a1")],
    )


_LOWER = "^[a-z]+$"
_CLOSED_BY_UNEVALUATED: list[tuple[str, dict[str, Any]]] = [
    (
        "beside",
        {"patternProperties": {_LOWER: {}}, "unevaluatedProperties": False},
    ),
    (
        "allOf",
        {"allOf": [{"patternProperties": {_LOWER: {}}}], "unevaluatedProperties": False},
    ),
    (
        "$ref",
        {
            "$defs": {"lower": {"patternProperties": {_LOWER: {}}}},
            "$ref": "#/$defs/lower",
            "unevaluatedProperties": False,
        },
    ),
    (
        "anyOf",
        {
            "anyOf": [{"patternProperties": {_LOWER: {}}}, {"required": ["never"]}],
            "unevaluatedProperties": False,
        },
    ),
    (
        "if-then",
        {
            "if": {"type": "object"},
            "then": {"patternProperties": {_LOWER: {}}},
            "unevaluatedProperties": False,
        },
    ),
    (
        "dependentSchemas",
        {
            "properties": {"a": {}},
            "dependentSchemas": {"a": {"patternProperties": {_LOWER: {}}}},
            "unevaluatedProperties": False,
        },
    ),
    (
        "nested",
        {
            "properties": {
                "inner": {
                    "type": "object",
                    "allOf": [{"$ref": "#/$defs/lower"}],
                    "unevaluatedProperties": False,
                }
            },
            "$defs": {"lower": {"patternProperties": {_LOWER: {}}}},
        },
    ),
]


@pytest.mark.parametrize(
    "schema", [s for _, s in _CLOSED_BY_UNEVALUATED], ids=[n for n, _ in _CLOSED_BY_UNEVALUATED]
)
def test_a_key_ending_in_a_newline_is_not_taken_by_a_dollar_for_unevaluated_properties(
    schema: dict[str, Any], splitter: Splitter
) -> None:
    # ECMA-262's `$` holds only at the end of the text; Python's `re` also before a final
    # newline, so `^[a-z]+$` counted the member `"ab\n"` as evaluated and it passed.
    schema = {"type": "object", **schema}
    nested = "inner" in schema.get("properties", {})
    members: dict[str, Any] = {"a": 1, "ab": 2}
    good = {"inner": members} if nested else members
    bad = {"inner": {**members, "ab\n": 3}} if nested else {**members, "ab\n": 3}
    at = "/inner/ab\n" if nested else "/ab\n"
    assert _outcome(schema, good, splitter)[1:] == (True, [])
    assert _outcome(schema, bad, splitter)[1:] == (False, [("unknown_field", at)])


@pytest.mark.parametrize(
    "schema",
    [
        {"patternProperties": {_LOWER: {}}, "additionalProperties": False},
        {"propertyNames": {"pattern": _LOWER}},
        {"propertyNames": {"$ref": "#/$defs/name"}, "$defs": {"name": {"pattern": _LOWER}}},
        {"properties": {"s": {"anyOf": [{"type": "integer"}, {"pattern": _LOWER}]}}},
    ],
    ids=["additionalProperties", "propertyNames", "propertyNames-$ref", "pattern-anyOf"],
)
def test_every_other_keyword_reads_a_dollar_as_the_end_of_the_text(
    schema: dict[str, Any], splitter: Splitter
) -> None:
    schema = {"type": "object", **schema}
    value = "ab\n"
    arguments = {"s": value} if "properties" in schema else {value: 1}
    ok, errors = _outcome(schema, arguments, splitter)[1:]
    assert not ok
    assert errors
    assert "internal_error" not in [code for code, _ in errors]
    assert _outcome(schema, {"s": "ab"} if "properties" in schema else {"ab": 1}, splitter) == (
        True,
        True,
        [],
    )


_DRAFT_4 = "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize(
    ("schema", "path", "keyword", "got"),
    [
        # Draft 4's metaschema has no `propertyNames` to check the names with: the toolset was
        # built and every call ended `internal_error`.
        (
            {"$schema": _DRAFT_4, "type": "object", "patternProperties": {"^(a": {}}},
            "/patternProperties/^(a",
            "patternProperties",
            '"^(a"',
        ),
        # The later drafts named the whole object (`/patternProperties`), not the name.
        (
            {"type": "object", "patternProperties": {"^a": {}, "[b": {}}},
            "/patternProperties/[b",
            "patternProperties",
            '"[b"',
        ),
        (
            {
                "type": "object",
                "properties": {"m": {"type": "array", "items": {"patternProperties": {"a/(": {}}}}},
            },
            "/properties/m/items/patternProperties/a~1(",
            "patternProperties",
            '"a/("',
        ),
        (
            {
                "$schema": _DRAFT_4,
                "type": "object",
                "properties": {"s": {"allOf": [{"type": "string"}, {"pattern": "\\p{Nope}"}]}},
            },
            "/properties/s/allOf/1/pattern",
            "pattern",
            '"\\\\p{Nope}"',
        ),
    ],
)
def test_a_pattern_no_engine_runs_is_refused_at_registration_at_its_place(
    schema: dict[str, Any], path: str, keyword: str, got: str
) -> None:
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    refused = info.value
    assert (refused.tool, refused.path, refused.keyword, refused.got) == (
        "tool",
        path,
        keyword,
        got,
    )
    # No engine runs it, and it is no ECMA-262 pattern either: what it must be is said.
    assert refused.expected == _ECMA


@pytest.mark.parametrize(
    ("schema", "path", "keyword"),
    [
        (
            {"type": "object", "properties": {"a": {"pattern": "^(?:(?:x{10}){10}){10000}$"}}},
            "/properties/a/pattern",
            "pattern",
        ),
        (
            {"type": "object", "patternProperties": {"^k{60000}$": {}}},
            "/patternProperties/^k{60000}$",
            "patternProperties",
        ),
        (
            {"$schema": _DRAFT_4, "type": "object", "patternProperties": {"^k{60000}$": {}}},
            "/patternProperties/^k{60000}$",
            "patternProperties",
        ),
    ],
)
def test_a_pattern_whose_counts_unroll_past_the_bound_is_refused_at_registration(
    schema: dict[str, Any], path: str, keyword: str
) -> None:
    # `regex` compiles a repeat its least count of times: this one took a second to compile,
    # and `x{100000000}` gigabytes of memory, enough for a host to kill the process.
    with pytest.raises(InvalidSchemaError) as info:
        Toolset([{"name": "tool", "parameters": schema}])
    assert (info.value.path, info.value.keyword) == (path, keyword)
    assert info.value.expected.startswith("a pattern whose counted repeats")


def test_a_long_counted_range_is_no_unrolled_repeat(splitter: Splitter) -> None:
    # Only the least count is unrolled: a bound of any size costs nothing.
    schema = {"type": "object", "properties": {"a": {"pattern": "^x{2,100000000}$"}}}
    assert _outcome(schema, {"a": "xxx"}, splitter) == (True, True, [])
    assert _outcome(schema, {"a": "x"}, splitter)[1:] == (False, [("pattern", "/a")])


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        # ECMA-262's `.` takes no line terminator; Python's took all but `\n`.
        ("^a.c$", ["abc", "a c", "aéc"], ["a\rc", "a\u2028c", "a\u2029c", "a\nc"]),
        # A code point in braces: neither Python engine compiled it, so the tool was refused.
        ("^\\u{1F600}+$", ["\U0001f600", "\U0001f600\U0001f600"], ["x", "\U0001f601"]),
        # A surrogate pair is one character to ECMA-262; to Python two halves no text holds.
        ("^\\ud83d\\ude00$", ["\U0001f600"], ["\U0001f601", "x"]),
        ("^[\\ud83d\\ude00-\\ud83d\\ude02]$", ["\U0001f601"], ["\U0001f603"]),
    ],
)
def test_a_pattern_reads_characters_as_ecma_262_does(
    pattern: str, good: list[str], bad: list[str], splitter: Splitter
) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    for text in good:
        assert _outcome(schema, {"s": text}, splitter) == (True, True, []), text
    for text in bad:
        assert _outcome(schema, {"s": text}, splitter)[1:] == (False, [("pattern", "/s")]), text


def test_a_key_pattern_reads_a_dot_as_ecma_262_in_the_pre_check_too(splitter: Splitter) -> None:
    # The pre-check took `"\r"` as surely matched by `^.$`, so it held the member to the
    # pattern's `integer` where validation (ECMA-262: no match) reads `additionalProperties`.
    schema = {
        "type": "object",
        "patternProperties": {"^.$": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    }
    assert _outcome(schema, {"a": 1, "\r": "x", "\u2028": "y"}, splitter) == (True, True, [])
    assert _outcome(schema, {"\r": 1}, splitter)[1:] == (False, [("type", "/\r")])
    assert _outcome(schema, {"a": "x"}, splitter)[0:2] == (False, False)


# --------------------------------------------------------------------------------------------
# Patterns are ECMA-262 with the `u` flag: what that refuses is refused at registration.

# Syntax of other dialects, which Python's engines (and the pre-check's) compiled with a
# meaning of their own, and ECMA-262 syntax valid only without the `u` flag (an identity
# escape `\Z` meaning `Z`), which JSON Schema's Unicode reading refuses.
_FOREIGN = [
    "(?i)abc",
    "(?ims)abc",
    "\\Z",
    "\\A",
    "(?P<name>x)",
    "(?P<n>a)(?P=n)",
    "(?#comment)a",
    "a++",
    "\\h",
    "\\a",
    "\\q",
    "a{",
    "[[:alpha:]]",
    "[\\d-z]",
]


def _tool(parameters: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "tool", "parameters": parameters}]


@pytest.mark.parametrize("pattern", _FOREIGN)
@pytest.mark.parametrize(
    ("place", "path"),
    [
        ("pattern", "/properties/s/pattern"),
        ("patternProperties", "/patternProperties/{}"),
        # A definition no `$ref` names: the pre-check's schema leaves it out, but it is still
        # the author's schema, broken there.
        ("unused definition", "/$defs/never/pattern"),
        ("unused definition's names", "/$defs/never/patternProperties/{}"),
    ],
)
def test_a_pattern_ecma_262_refuses_is_refused_at_registration_at_its_place(
    pattern: str, place: str, path: str
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"s": {"type": "string"}}}
    if place == "pattern":
        schema["properties"]["s"]["pattern"] = pattern
    elif place == "patternProperties":
        schema["patternProperties"] = {pattern: {"type": "string"}}
    elif place == "unused definition":
        schema["$defs"] = {"never": {"type": "string", "pattern": pattern}}
    else:
        schema["$defs"] = {"never": {"patternProperties": {pattern: {}}}}
    with pytest.raises(InvalidSchemaError) as info:
        Toolset(_tool(schema))
    token = pattern.replace("~", "~0").replace("/", "~1")
    assert info.value.path == path.format(token)
    assert info.value.keyword == path.split("/")[-2 if "{}" in path else -1]
    assert info.value.expected == _ECMA


@pytest.mark.parametrize(
    ("pattern", "taken", "refused"),
    [
        ("(?i)^abc$", "ABC", "abd"),
        ("\\A[[:alpha:]]+\\z", "abc", "ab1"),
        ("^(?P<n>a)b$", "ab", "ba"),
    ],
)
def test_a_model_field_pattern_in_its_engine_s_dialect_is_left_to_the_model(
    pattern: str, taken: str, refused: str, splitter: Splitter
) -> None:
    # Pydantic's own engine runs a model's patterns and reads this syntax: refusing the model
    # at registration broke tools whose models work. The pre-check leaves the pattern alone.
    from pydantic import BaseModel, Field

    class Tool(BaseModel):
        code: str = Field(pattern=pattern)

    tools = Toolset([Tool])
    prechecked, outcome = streamed_call(tools, {"code": taken}, splitter)
    assert (prechecked, outcome.ok) == (True, True)
    prechecked, outcome = streamed_call(tools, {"code": refused}, splitter)
    assert prechecked
    assert [e.path for e in outcome.errors] == ["/code"]


def test_a_model_dict_key_pattern_in_its_engine_s_dialect_is_left_to_the_model(
    splitter: Splitter,
) -> None:
    # Pydantic writes a pattern on a dict's keys as a `patternProperties` name.
    from typing import Annotated

    from pydantic import BaseModel, Field

    class Tool(BaseModel):
        counts: dict[Annotated[str, Field(pattern="(?i)^ab$")], int]

    tools = Toolset([Tool])
    prechecked, outcome = streamed_call(tools, {"counts": {"AB": 1}}, splitter)
    assert (prechecked, outcome.ok) == (True, True)
    prechecked, outcome = streamed_call(tools, {"counts": {"zz": 1}}, splitter)
    assert prechecked
    assert not outcome.ok


@pytest.mark.parametrize("pattern", [*_FOREIGN, "*a", "[z-a]", "\\8"])
def test_the_pre_check_refuses_the_patterns_validation_refuses(pattern: str) -> None:
    # One parser decides for both, so a registry built without a `Toolset` refuses alike.
    from toolwire._core import ToolRegistry, pattern_error

    assert pattern_error(pattern) is not None
    schema = {"type": "object", "$defs": {"x": {"pattern": pattern}}}
    with pytest.raises(ValueError, match="ECMA-262"):
        ToolRegistry({"tool": schema})


# An escaped punctuation mark that is no syntax character: the `u` flag refuses it, every
# engine reads the mark itself, and real schemas (OpenAPI-derived, hand-written) carry it.
_ESCAPED_MARKS: list[tuple[str, str, str]] = [
    ("^[\\w.\\-+\\@]+$", "a.b-c+d@e", "a b"),
    ("^\\#[0-9a-f]{6}$", "#00ff00", "00ff00"),
    ("^[^\\:]+$", "host", "host:80"),
    ("^a\\-b\\ c$", "a-b c", "a\\-b c"),
    ("^(\\=|\\!|\\<|\\>)$", ">", "?"),
    ("^[\\'\\\"\\,\\;\\%\\&\\~\\`]+$", "'\",;%&~`", "a"),
]


@pytest.mark.parametrize(("pattern", "taken", "refused"), _ESCAPED_MARKS)
def test_an_escaped_punctuation_mark_is_the_mark_itself(
    pattern: str, taken: str, refused: str, splitter: Splitter
) -> None:
    value = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    assert _outcome(value, {"s": taken}, splitter) == (True, True, [])
    assert _outcome(value, {"s": refused}, splitter) == (False, False, [("pattern", "/s")])
    key = {"type": "object", "patternProperties": {pattern: {}}, "additionalProperties": False}
    assert _outcome(key, {taken: 1}, splitter) == (True, True, [])
    assert _outcome(key, {refused: 1}, splitter)[1] is False


@pytest.mark.parametrize(
    "pattern",
    [
        "(?<name>x)",
        "(?<n>a)\\k<n>",
        "(?<=a+)b",
        "[]",
        "[^]",
        "\\cA",
        "[\\-]",
        "\\/",
        "a{2,3}",
        "a+?",
        "",
        "\\p{Letter}cole",
        "^\\p{digit}+$",
        "(?i:abc)",
    ],
)
def test_ecma_262_syntax_is_kept(pattern: str) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    tools = Toolset(_tool(schema))
    assert tools.registry is not None


# JSON-Schema-Test-Suite, draft2020-12/optional/ecmascript-regex.json: each pattern with its
# instances and verdicts (`\a`, which the file refuses as a pattern, is in `_FOREIGN`).
_LATIN = "l'ecole, l'eglise"
_ACCENTED = "l'école, l'église"
_SPACES = [" ", "\t", "\u000b", "\u000c", "\u00a0", "\ufeff", "\n", "\u2029", "\u2003"]
_SUITE_PATTERNS: list[tuple[str, list[tuple[str, bool]]]] = [
    ("^abc$", [("abc\\n", False), ("abc", True), ("abc\n", False)]),
    ("^\\t$", [("\\t", False), ("\t", True)]),
    ("^\\cC$", [("\\cC", False), ("\u0003", True)]),
    ("^\\cc$", [("\\cc", False), ("\u0003", True)]),
    ("^\\d$", [("0", True), ("\u07c0", False)]),
    ("^\\D$", [("0", False), ("\u07c0", True)]),
    ("^\\w$", [("a", True), ("é", False)]),
    ("^\\W$", [("a", False), ("é", True)]),
    ("^\\s$", [(s, True) for s in _SPACES] + [("\u0001", False), ("\u2013", False)]),
    ("^\\S$", [(s, False) for s in _SPACES] + [("\u0001", True), ("\u2013", True)]),
    ("\\p{Letter}cole", [(_LATIN, True), (_ACCENTED, True), (_ACCENTED.upper(), False)]),
    ("\\wcole", [(_LATIN, True), (_ACCENTED, False), (_ACCENTED.upper(), False)]),
    ("[a-z]cole", [(_ACCENTED, False), (_LATIN, True)]),
    ("^\\d+$", [("42", True), ("-%#", False), ("\u09ea\u09e8", False)]),
    ("^\\p{digit}+$", [("42", True), ("-%#", False), ("\u09ea\u09e8", True)]),
]


@pytest.mark.parametrize(("pattern", "cases"), _SUITE_PATTERNS)
def test_the_suite_s_ecma_262_patterns_read_as_the_suite_says(
    pattern: str, cases: list[tuple[str, bool]], splitter: Splitter
) -> None:
    # Validation reads each as ECMA-262 does; the pre-check, which must not refuse what a
    # model tool's Unicode-wide engine takes, never refuses a valid one.
    values = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    keys = {"type": "object", "patternProperties": {pattern: True}, "additionalProperties": False}
    for text, valid in cases:
        prechecked, ok, _ = _outcome(values, {"s": text}, splitter)
        assert (ok, prechecked or not valid) == (valid, True), (pattern, text)
        prechecked, ok, _ = _outcome(keys, {text: "x"}, splitter)
        assert (ok, prechecked or not valid) == (valid, True), (pattern, text)


@pytest.mark.parametrize(
    ("definitions", "path", "keyword"),
    [
        ({"$defs": {"never": {"pattern": "*a"}}}, "/$defs/never/pattern", "pattern"),
        (
            {"definitions": {"old": {"items": {"pattern": "[z-a]"}}}},
            "/definitions/old/items/pattern",
            "pattern",
        ),
        (
            {"$defs": {"map": {"patternProperties": {"^(a": {}}}}},
            "/$defs/map/patternProperties/^(a",
            "patternProperties",
        ),
    ],
)
def test_a_broken_pattern_in_a_definition_no_ref_names_is_refused_at_registration(
    definitions: dict[str, Any], path: str, keyword: str
) -> None:
    # The pre-check's schema keeps only the definitions a reference reaches, and the check
    # read that one: a broken schema was registered because the broken part was unused.
    schema = {"type": "object", "properties": {"s": {"type": "string"}}, **definitions}
    with pytest.raises(InvalidSchemaError) as info:
        Toolset(_tool(schema))
    assert (info.value.path, info.value.keyword) == (path, keyword)


@pytest.mark.parametrize(
    ("pattern", "value"),
    [(r"^\d$", "\u0663"), (r"^\s$", "\u0085"), (r"^a.b$", "a\rb")],
)
def test_a_one_of_branch_whose_pattern_engines_read_apart_is_no_certain_match(
    pattern: str, value: str, splitter: Splitter
) -> None:
    # ECMA-262 refuses the value that some other engine's reading of the pattern takes: only
    # the second branch matches, which the pre-check must not call "more than one".
    field = {"oneOf": [{"type": "string", "pattern": pattern}, {"type": "string"}]}
    tools = Toolset(_tool({"type": "object", "properties": {"v": field}, "required": ["v"]}))
    prechecked, outcome = streamed_call(tools, {"v": value}, splitter)
    assert (prechecked, outcome.ok) == (True, True), outcome.errors


@pytest.mark.parametrize("value", ["\\", "a\\", "(", "(?i)a"])
def test_a_regex_format_value_that_is_no_pattern_is_the_model_s_format_error(
    value: str, splitter: Splitter
) -> None:
    # A trailing backslash once made validation raise, and the call ended as an internal
    # error, which tells the model nothing to fix.
    schema = {
        "type": "object",
        "properties": {"p": {"type": "string", "format": "regex"}},
        "required": ["p"],
    }
    _, outcome = streamed_call(Toolset(_tool(schema)), {"p": value}, splitter)
    assert [(e.code, e.path) for e in outcome.errors] == [("format", "/p")]
    _, outcome = streamed_call(Toolset(_tool(schema)), {"p": "^a\\\\$"}, splitter)
    assert outcome.ok, outcome.errors
