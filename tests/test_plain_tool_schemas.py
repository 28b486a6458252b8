"""Plain JSON-schema tool dicts as users write them (OpenAI, MCP, Anthropic examples): the
pre-check while streaming and `Toolset.validate` agree with what the schema accepts."""

from __future__ import annotations

import json
from typing import Any

from toolwire import Assembler, Toolset


def _run(schema: dict[str, Any], arguments: Any) -> tuple[list[str], bool, list[str]]:
    """Streams `arguments` byte by byte to a one-tool toolset: the pre-check messages, whether
    validation accepts the call, and validation's error codes."""
    tools = Toolset([{"name": "tool", "parameters": schema}])
    text = json.dumps(arguments).encode()
    assembler = Assembler(tools=tools)
    assembler.feed(0, id="call_1", name="tool", arguments="")
    errors: list[str] = []
    for i in range(len(text)):
        assembler.feed(0, arguments=text[i : i + 1])
        errors += [e.message for _, e in assembler.drain_errors()]
    (call,) = assembler.finish()
    errors += [e.message for _, e in assembler.drain_errors()]
    outcome = tools.validate(call)
    return errors, outcome.ok, [e.code for e in outcome.errors]


def test_boolean_subschemas_validate_without_raising() -> None:
    schema = {
        "type": "object",
        "properties": {
            "anything": True,
            "never": False,
            "tags": {"type": "array", "items": True},
            "maybe": {"anyOf": [True, {"type": "null"}]},
        },
    }
    assert _run(schema, {"anything": 1, "tags": [1, "x"], "maybe": 3}) == ([], True, [])
    errors, ok, _ = _run(schema, {"never": None})
    assert errors and not ok
