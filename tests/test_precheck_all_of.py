"""`allOf` through the public API: a mistake inside a member is reported while the arguments
stream, with the instance's JSON Pointer, and `Toolset.validate` comes to the same verdict."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from toolwire import Assembler, Toolset

# An MCP server's `inputSchema`: a described `$ref` wrapped in `allOf`, and the object itself
# composed from members.
CREATE_EVENT: dict[str, Any] = {
    "name": "create_event",
    "description": "Put an event in the calendar.",
    "inputSchema": {
        "type": "object",
        "$defs": {
            "When": {
                "type": "object",
                "properties": {"day": {"type": "string"}, "minutes": {"type": "integer"}},
                "required": ["day"],
                "allOf": [{"properties": {"minutes": {"minimum": 5}}}],
            }
        },
        "properties": {
            "title": {"type": "string"},
            "when": {"allOf": [{"$ref": "#/$defs/When"}], "description": "When it starts"},
        },
        "allOf": [
            {"required": ["title"]},
            {"properties": {"visibility": {"enum": ["public", "private"]}}},
        ],
    },
}


def _early(tools: Toolset, name: str, arguments: str) -> tuple[int | None, str, str]:
    """Streams `arguments` byte by byte: the offset, path and keyword of the first pre-check
    error, which must be drained before the call finishes (offset None if there is none)."""
    text = arguments.encode()
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name=name, arguments="")
    for i in range(len(text)):
        assembler.feed(0, arguments=text[i : i + 1])
        drained = assembler.drain_errors()
        if drained:
            _, error = drained[0]
            assert error.offset <= i
            return error.offset, error.path, error.keyword or ""
    return None, "", ""


def _outcome(tools: Toolset, name: str, arguments: str) -> tuple[bool, list[tuple[str, str]]]:
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name=name, arguments=arguments)
    (call,) = assembler.finish()
    outcome = tools.validate(call)
    return outcome.ok, [(e.path, e.code) for e in outcome.errors]


def _refused(
    tools: Toolset, name: str, arguments: str, early: tuple[int, str, str]
) -> list[tuple[str, str]]:
    """Asserts that the first pre-check error is `early` (offset, path, keyword) and that
    validation refuses the call too; returns validation's (path, code) pairs."""
    assert _early(tools, name, arguments) == early
    ok, errors = _outcome(tools, name, arguments)
    assert not ok
    return errors


@pytest.mark.parametrize(
    ("arguments", "offset", "path", "keyword", "code"),
    [
        # No allowed value starts with "s": certain at that byte.
        ('{"title": "Standup", "visibility": "secret"}', 36, "/visibility", "enum", "enum"),
        ('{"visibility": "public"}', 23, "/title", "required", "missing"),
        # The bound sits in a member of the referenced definition: certain at the number's end.
        (
            '{"title": "x", "when": {"day": "mon", "minutes": 2}}',
            50,
            "/when/minutes",
            "minimum",
            "range",
        ),
        ('{"title": "x", "when": {"minutes": 30}}', 37, "/when/day", "required", "missing"),
        # Optional, so null (read as absent) is the other alternative.
        ('{"title": "x", "when": "monday"}', 23, "/when", "type", "type"),
    ],
)
def test_a_plain_tool_reports_a_mistake_inside_all_of_early(
    arguments: str, offset: int, path: str, keyword: str, code: str
) -> None:
    tools = Toolset([CREATE_EVENT])
    assert not tools.registry.unsupported
    errors = _refused(tools, "create_event", arguments, (offset, path, keyword))
    assert errors == [(path, code)]


def test_a_plain_tool_call_that_meets_every_member_passes() -> None:
    tools = Toolset([CREATE_EVENT])
    arguments = json.dumps(
        {"title": "x", "visibility": "private", "when": {"day": "mon", "minutes": 5}, "notes": 1}
    )
    assert _early(tools, "create_event", arguments) == (None, "", "")
    assert _outcome(tools, "create_event", arguments) == (True, [])


def _as_older_exporters_wrote_it(schema: dict[str, Any]) -> None:
    # Pydantic before 2.9 (and other exporters) wrapped a described `$ref` in `allOf`.
    schema["allOf"] = [{"$ref": schema.pop("$ref")}]


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")

    city: str
    country: Literal["DE", "FR"]


class Note(BaseModel):
    text: str


class Ship(BaseModel):
    """Ship an order."""

    to: Address = Field(description="Where it goes", json_schema_extra=_as_older_exporters_wrote_it)
    note: Note = Field(
        default=Note(text=""),
        description="For the driver",
        json_schema_extra=_as_older_exporters_wrote_it,
    )


@pytest.mark.parametrize(
    ("arguments", "offset", "early_path", "keyword", "path", "code"),
    [
        (
            '{"to": {"city": "Lyon", "country": "IT"}}',
            36,
            "/to/country",
            "enum",
            "/to/country",
            "enum",
        ),
        # No allowed key starts with "z": certain at that byte, and reported under the whole
        # key once it closes.
        (
            '{"to": {"city": "Lyon", "zip": "69001"}}',
            25,
            "/to/zip",
            "additionalProperties",
            "/to/zip",
            "unknown_field",
        ),
        ('{"to": {"city": 7, "country": "FR"}}', 16, "/to/city", "type", "/to/city", "type"),
        ('{"to": {"city": "Lyon"}}', 22, "/to/country", "required", "/to/country", "missing"),
    ],
)
def test_a_model_tool_reports_a_mistake_inside_all_of_early(
    arguments: str, offset: int, early_path: str, keyword: str, path: str, code: str
) -> None:
    tools = Toolset([Ship])
    assert "allOf" in Ship.model_json_schema()["properties"]["to"]
    errors = _refused(tools, "ship", arguments, (offset, early_path, keyword))
    assert (path, code) in errors


def test_a_model_tool_call_pydantic_accepts_passes_the_pre_check() -> None:
    # `Note` ignores unknown fields (Pydantic's default): an `allOf` member is part of a
    # composed object, so the pre-check leaves it open and refuses nothing Pydantic accepts.
    tools = Toolset([Ship])
    for arguments in [
        '{"to": {"city": "Lyon", "country": "FR"}}',
        # An optional field's null is read as absent, also when its schema is an `allOf`.
        '{"to": {"city": "Lyon", "country": "FR"}, "note": null}',
        '{"to": {"city": "Lyon", "country": "FR"}, "note": {"text": "ring", "by": "me"}}',
    ]:
        assert _early(tools, "ship", arguments) == (None, "", "")
        assert _outcome(tools, "ship", arguments) == (True, [])
