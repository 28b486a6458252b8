"""Regenerate tests/data/streams (from the repo root: python -m tests.streams.make_fixtures).

The shapes follow what the providers send (field order, envelopes, empty placeholders, usage
chunks); the content is chosen to stress the assembler: parallel interleaved calls, CJK and
emoji (raw and as surrogate-pair escapes), escapes split across deltas, and ~200 KB arguments.
"""

from __future__ import annotations

import json

from .streamkit import (
    Call,
    anthropic_stream,
    chat_chunk,
    chat_stream,
    responses_stream,
    tc,
    tool_delta,
    write_events,
)

PARALLEL = [
    Call("get_weather", json.dumps({"city": "東京", "unit": "celsius"}, ensure_ascii=False)),
    Call("get_weather", json.dumps({"city": "Paris 🇫🇷", "unit": "fahrenheit"}, ensure_ascii=False)),
    Call("search_docs", json.dumps({"query": 'emoji 😀 and "quotes"\nnew line', "k": 5})),
    Call(
        "write_file",
        json.dumps(
            {"path": "notes/日本語.md", "content": "第一行\n第二行 🚀\\"}, ensure_ascii=False
        ),
    ),
]
TEXT = "Checking 天气 for you 🌦️ — one moment."


def large_arguments(target: int = 200_000) -> str:
    line = '第{n}行: héllo wörld 🚀 "quoted" back\\slash\ttab — 日本語テキスト 😀\n'
    parts: list[str] = []
    size = 0
    n = 0
    while size < target:
        piece = line.format(n=n)
        parts.append(piece)
        size += len(piece.encode())
        n += 1
    content = "".join(parts)
    return (
        '{"path":"docs/大きい.md","escaped":'
        + json.dumps("emoji 😀 e\u0301 日本", ensure_ascii=True)
        + ',"content":'
        + json.dumps(content, ensure_ascii=False)
        + ',"lines":'
        + str(n)
        + "}"
    )


def main() -> None:
    usage = {"prompt_tokens": 50, "completion_tokens": 80, "total_tokens": 130}
    write_events(
        "openai_chat_parallel4_interleaved",
        "openai-chat",
        chat_stream(PARALLEL, text=TEXT, size=5, interleave=True, usage=usage),
        "4 parallel calls, fragments interleaved 0,1,2,3,0,1,...; CJK/emoji; usage-only chunk",
    )
    write_events(
        "openai_chat_large_200k",
        "openai-chat",
        chat_stream([Call("write_file", large_arguments())], size=509),
        "one call with ~200 KB arguments in 509-character deltas (cuts escapes and pairs)",
    )
    sig = {"google": {"thought_signature": "CiQBVKhc7Lr0a9Yh"}}
    write_events(
        "openai_chat_gemini_compat",
        "openai-chat",
        [
            chat_chunk({"role": "assistant", "content": ""}),
            chat_chunk(
                tool_delta(
                    tc(
                        None,
                        id="function-call-1",
                        type="function",
                        name="get_weather",
                        arguments='{"city":"Paris"}',
                        extra_content=sig,
                    )
                )
            ),
            chat_chunk(
                tool_delta(
                    tc(
                        None,
                        id="function-call-2",
                        type="function",
                        name="get_weather",
                        arguments='{"city":"Rome"}',
                    )
                )
            ),
            chat_chunk({}, finish_reason="stop"),
        ],
        "Gemini OpenAI-compat: no index, whole calls, thought signature, finish_reason stop",
    )
    write_events(
        "openai_chat_azure_filters",
        "openai-chat",
        [
            {
                "id": "",
                "object": "",
                "created": 0,
                "model": "",
                "choices": [],
                "prompt_filter_results": [
                    {
                        "prompt_index": 0,
                        "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
                    }
                ],
            },
            *chat_stream([PARALLEL[0]], text="Sure.", size=6)[:-1],
            {
                "id": "",
                "object": "",
                "created": 0,
                "model": "",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "content_filter_offsets": {
                            "check_offset": 0,
                            "start_offset": 0,
                            "end_offset": 20,
                        },
                        "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
                    }
                ],
            },
            chat_chunk({}, finish_reason="tool_calls"),
        ],
        "Azure: prompt-filter chunk with empty choices, async filter annotation without delta",
    )
    write_events(
        "openai_responses_parallel4",
        "openai-responses",
        responses_stream(PARALLEL, text=TEXT, size=5, interleave=True),
        "Responses API: text item then 4 function_call items with interleaved deltas",
    )
    write_events(
        "openai_responses_single",
        "openai-responses",
        responses_stream([PARALLEL[0]], size=3),
        "Responses API: one function call",
    )
    write_events(
        "anthropic_thinking_text_tools",
        "anthropic",
        anthropic_stream(PARALLEL[:2], text=TEXT, thinking=True, size=4),
        "Anthropic: thinking block, text block, two tool_use blocks (block indexes 2 and 3)",
    )
    write_events(
        "anthropic_parallel4",
        "anthropic",
        anthropic_stream(PARALLEL, size=6),
        "Anthropic: four tool_use blocks",
    )


if __name__ == "__main__":
    main()
