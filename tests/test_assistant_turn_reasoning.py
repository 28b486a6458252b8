"""`assistant_turn(..., reasoning=...)`: Anthropic's thinking blocks go back first, as the API
requires of an extended-thinking turn with tool use."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic import TypeAdapter

from tests.test_payloads import calls
from toolwire import assistant_turn, tool_messages
from toolwire.assembler import Assembler

THINKING = {"type": "thinking", "thinking": "Ping both.", "signature": "EqQBCgIYAhIM"}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"}


def sdk_takes_anthropic_turn(turn: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """`turn`, then `results`, validate as the anthropic SDK's request types: each block as
    its own param type, every key one it declares (its TypedDicts drop unknown keys)."""
    from anthropic.types import (
        MessageParam,
        RedactedThinkingBlockParam,
        TextBlockParam,
        ThinkingBlockParam,
        ToolResultBlockParam,
        ToolUseBlockParam,
    )

    kinds: dict[str, Any] = {
        "thinking": ThinkingBlockParam,
        "redacted_thinking": RedactedThinkingBlockParam,
        "text": TextBlockParam,
        "tool_use": ToolUseBlockParam,
    }
    for block in turn["content"]:
        assert dict(TypeAdapter(kinds[block["type"]]).validate_python(block)) == block
    for block in results:
        assert dict(TypeAdapter(ToolResultBlockParam).validate_python(block)) == block
    user = {"role": "user", "content": "Ping them."}
    TypeAdapter(list[MessageParam]).validate_python(
        [user, turn, {"role": "user", "content": results}]
    )


def test_thinking_blocks_go_first_as_the_sdk_types_take_them() -> None:
    made = calls(("toolu_1", "ping", '{"n": 1}'), ("toolu_2", "ping", '{"n": 2}'))
    given = [THINKING, REDACTED]
    (turn,) = assistant_turn(made, style="anthropic", text="Pinging.", reasoning=given)
    content = turn["content"]
    # Thinking first, then the text, then the calls (the API refuses another order).
    assert [b["type"] for b in content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
        "tool_use",
    ]
    assert content[:2] == given
    # Copies: the caller's blocks are not the turn's.
    assert content[0] is not THINKING
    sdk_takes_anthropic_turn(turn, tool_messages(made, [{"pong": 1}, 2], style="anthropic"))


def test_reasoning_it_cannot_send_is_refused() -> None:
    with pytest.raises(ValueError, match="only with style='anthropic'"):
        assistant_turn([], style="openai-chat", reasoning=[THINKING])
    with pytest.raises(TypeError, match="reasoning must be a list"):
        assistant_turn([], style="anthropic", reasoning=THINKING)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"reasoning\[0\]"):
        assistant_turn([], style="anthropic", reasoning=[{"type": "text", "text": "t"}])
    # None, or no blocks, changes nothing.
    assert assistant_turn([], style="gemini", reasoning=[]) == []
    made = calls(("toolu_1", "ping", "{}"))
    assert assistant_turn(made, style="anthropic", reasoning=None) == assistant_turn(
        made, style="anthropic"
    )


ITEM = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
CONVERSE = {"reasoningContent": {"redactedContent": b"secret"}}


def test_each_style_takes_its_own_reasoning_and_only_that() -> None:
    made = calls(("call_1", "ping", "{}"))
    # Responses items and Bedrock blocks go first too, copied.
    items = assistant_turn(made, style="openai-responses", text="Hi.", reasoning=[ITEM])
    assert [item.get("type", "message") for item in items] == [
        "reasoning",
        "message",
        "function_call",
    ]
    assert items[0] == ITEM and items[0]["summary"] is not ITEM["summary"]
    (turn,) = assistant_turn(made, style="bedrock-converse", reasoning=[CONVERSE])
    assert turn["content"][0] == CONVERSE and "toolUse" in turn["content"][1]
    # Another provider's block would be refused by the API: it is refused here.
    for style, block in [
        ("openai-responses", THINKING),
        ("anthropic", ITEM),
        ("bedrock-converse", ITEM),
        ("bedrock-converse", {**CONVERSE, "text": "two members"}),
        ("bedrock-converse", {}),
        ("gemini", ITEM),
        ("gemini", {"text": "no thought"}),
    ]:
        with pytest.raises(TypeError, match=r"reasoning\[0\] is no"):
            assistant_turn(made, style=style, reasoning=[block])
    with pytest.raises(ValueError, match="not 'openai-chat'"):
        assistant_turn(made, style="openai-chat", reasoning=[ITEM])


def _paired(*specs: tuple[str, str | None]) -> list[Any]:
    """Calls `call_k` of items `fc_k`, each with the reasoning item (`id`) right before it in
    the output, if any, as the assembler records them."""
    asm = Assembler()
    for index, (_, rs_id) in enumerate(specs):
        asm.feed(index, id=f"call_{index}", name="ping", arguments="{}")
        asm.set_metadata(index, "item_id", f"fc_{index}")
        if rs_id is not None:
            asm.set_metadata(index, "reasoning_id", rs_id)
    return asm.finish()


def _rs(rs_id: str) -> dict[str, Any]:
    return {**ITEM, "id": rs_id}


def test_responses_items_go_right_before_the_item_that_followed_them() -> None:
    made = _paired(("a", "rs_a"), ("b", None), ("c", "rs_c"))
    given = [_rs("rs_m"), _rs("rs_a"), _rs("rs_c")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turn = assistant_turn(made, style="openai-responses", text="Hi.", reasoning=given)
    assert [item.get("id", item.get("role")) for item in turn] == [
        # The item no call names followed the text's message.
        "rs_m",
        "assistant",
        "rs_a",
        "fc_0",
        # A call with no reasoning item before it keeps no item id, which the API would
        # pair with a reasoning item the turn lacks.
        None,
        "rs_c",
        "fc_2",
    ]
    assert turn[4]["call_id"] == "call_1"


def test_responses_items_without_their_follower_are_left_out_with_a_warning() -> None:
    made = _paired(("a", "rs_a"))
    # The item before the text, with no text; an item whose call is not in the turn.
    given = [_rs("rs_m"), _rs("rs_a"), _rs("rs_gone")]
    with pytest.warns(RuntimeWarning, match="2 reasoning item"):
        turn = assistant_turn(made, style="openai-responses", reasoning=given)
    assert [item.get("id") for item in turn] == ["rs_a", "fc_0"]
    # With the text, only one item goes before its message: two in a row are refused.
    with pytest.warns(RuntimeWarning, match="1 reasoning item"):
        turn = assistant_turn(made, style="openai-responses", text="Hi.", reasoning=given)
    assert [item.get("id", item.get("role")) for item in turn] == [
        "rs_gone",
        "assistant",
        "rs_a",
        "fc_0",
    ]


def test_anthropic_blocks_go_back_where_each_call_says_they_were() -> None:
    asm = Assembler()
    # Thinking, a call, a call, thinking, a call, thinking at the end: the counts the
    # assembler gives such a message (the second call has none of its own).
    for index, count in enumerate((1, None, 2)):
        asm.feed(index, id=f"toolu_{index}", name="ping", arguments="{}")
        if count is not None:
            asm.set_metadata(index, "reasoning_before", count)
    made = asm.finish()
    second = {**THINKING, "thinking": "Then the last."}
    given = [THINKING, second, REDACTED]
    (turn,) = assistant_turn(made, style="anthropic", text="Pinging.", reasoning=given)
    content = turn["content"]
    assert [(b["type"], b.get("id")) for b in content] == [
        ("thinking", None),
        ("text", None),
        ("tool_use", "toolu_0"),
        ("tool_use", "toolu_1"),
        ("thinking", None),
        ("tool_use", "toolu_2"),
        ("redacted_thinking", None),
    ]
    assert [content[0], content[4], content[6]] == given
    sdk_takes_anthropic_turn(turn, tool_messages(made, [1, 2, 3], style="anthropic"))
    # A count past the blocks given sends them all, once, before that call.
    (turn,) = assistant_turn(made[2:], style="anthropic", reasoning=[THINKING])
    assert [b["type"] for b in turn["content"]] == ["thinking", "tool_use"]
