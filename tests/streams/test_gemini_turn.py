"""Gemini's next turn from a streamed answer, on every path (the google-genai client through
`assemble`, `feed_chunk` on its chunks and on REST dicts, `feed_sse` on the raw bytes), against
what google-genai's own chats send back: every part of the answer, thought parts too, each with
the `thoughtSignature` it came with."""

from __future__ import annotations

import base64
from typing import Any

import pytest

pytest.importorskip("toolwire._core")

from toolwire.assembler import Assembler
from toolwire.payloads import assistant_turn

from .clients import GEMINI_TOOLS, assemble_gemini, sync_client
from .conftest import Route, SSEServer
from .streamkit import gemini_call, gemini_chunk, sse_body

FMT = "gemini"


def _sdk_next_contents(route: Route) -> list[dict[str, Any]]:
    """The model contents google-genai's chat sends back in the request after the answer
    `route` serves, as they went on the wire."""
    with sync_client(route, FMT) as client:
        chat = client.chats.create(model="test-model", config={"tools": GEMINI_TOOLS})
        for _ in chat.send_message_stream("weather?"):
            pass
        for _ in chat.send_message_stream("and then?"):
            pass
    sent = route.requests[-1]["json"]["contents"]
    return [c for c in sent if c.get("role") == "model"]


def _signature(part: dict[str, Any]) -> bytes | None:
    """A part's signature as the bytes it stands for (google-genai writes them back in the
    URL-safe alphabet, the REST API sends the standard one)."""
    signature = part.get("thoughtSignature")
    return None if signature is None else base64.urlsafe_b64decode(signature.replace("+", "-"))


def _parts(contents: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The parts of the model contents as one answer: text parts in a row of one kind (thought
    or not) are one, up to the one that carries a signature; a signature-only part signs the
    text before it, or the call before it; an empty part says nothing."""
    out: list[list[Any]] = []
    for content in contents:
        for part in content.get("parts", []):
            signature = _signature(part)
            call = part.get("functionCall")
            if call is not None:
                out.append(["call", call.get("name"), call.get("args") or {}, signature])
                continue
            text = part.get("text") or ""
            thought = part.get("thought") is True
            last = out[-1] if out else None
            joins = last is not None and last[0] == "text" and last[3] is None
            if joins and last is not None and (last[1] == thought or (not text and not thought)):
                last[2] += text
                last[3] = signature
            elif not text and not thought and signature is not None and last and last[0] == "call":
                last[3] = last[3] or signature
            elif text or signature is not None:
                out.append(["text", thought, text, signature])
    return [tuple(p) for p in out]


def _our_parts(turn: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    assert [c["role"] for c in turn] == ["model"] * len(turn)
    return _parts(turn)


def _turn(stream: Any) -> list[dict[str, Any]]:
    return assistant_turn(
        stream.calls,
        style=FMT,
        text=stream.text,
        reasoning=stream.reasoning,
        text_places=stream.text_places,
    )


def _raw_turn(body: bytes, step: int) -> list[dict[str, Any]]:
    """The turn `feed_sse` gives on `body` fed `step` bytes at a time."""
    asm = Assembler()
    for at in range(0, len(body), step):
        asm.feed_sse(body[at : at + step])
    calls = asm.finish()
    text = asm.text or ""
    places = None if calls else asm.text_places
    return assistant_turn(calls, style=FMT, text=text, reasoning=asm.reasoning, text_places=places)


def _chunk_turn(chunks: list[Any]) -> list[dict[str, Any]]:
    asm = Assembler()
    text = "".join(asm.feed_chunk(chunk).text for chunk in chunks)
    calls = asm.finish()
    places = None if calls else asm.text_places
    return assistant_turn(calls, style=FMT, text=text, reasoning=asm.reasoning, text_places=places)


def _every_path_alike(sse_server: SSEServer, chunks: list[dict[str, Any]]) -> list[Any]:
    """The turn of `chunks` on every path, which must all be the same; returns it."""
    route = sse_server.register(sse_body(chunks, FMT))
    _, stream = assemble_gemini(route, chunks)
    turn = _turn(stream)
    body = sse_body(chunks, FMT)
    assert _raw_turn(body, len(body)) == turn
    assert _raw_turn(body, 1) == turn
    assert _chunk_turn(chunks) == turn
    assert _our_parts(turn) == _parts(_sdk_next_contents(route))
    return turn


THINKING = [
    gemini_chunk({"text": "I should look ", "thought": True}),
    gemini_chunk({"text": "it up.", "thought": True, "thoughtSignature": "dGhvdWdodA=="}),
    gemini_chunk({"text": "More thinking.", "thought": True}),
    gemini_chunk({"text": "Checking."}, gemini_call("get_weather", {"city": "Oslo"})),
    gemini_chunk({"text": "Then: ", "thought": True}, {"text": "done."}, finish="STOP"),
]


def test_thought_parts_go_back_in_their_places_with_their_signatures(
    sse_server: SSEServer,
) -> None:
    turn = _every_path_alike(sse_server, THINKING)
    assert turn == [
        {
            "role": "model",
            "parts": [
                {
                    "text": "I should look it up.",
                    "thought": True,
                    "thoughtSignature": "dGhvdWdodA==",
                },
                {"text": "More thinking.", "thought": True},
                {"text": "Checking."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
                {"text": "Then: ", "thought": True},
                {"text": "done."},
            ],
        }
    ]


def test_thoughts_without_calls_keep_their_places(sse_server: SSEServer) -> None:
    chunks = [
        gemini_chunk({"text": "Plan.", "thought": True}),
        gemini_chunk({"text": "Answer one."}),
        gemini_chunk({"thought": True, "text": "Again.", "thoughtSignature": "c2ln"}),
        gemini_chunk({"text": "Answer two."}, finish="STOP"),
    ]
    turn = _every_path_alike(sse_server, chunks)
    assert turn[0]["parts"] == [
        {"text": "Plan.", "thought": True},
        {"text": "Answer one."},
        {"text": "Again.", "thought": True, "thoughtSignature": "c2ln"},
        {"text": "Answer two."},
    ]


def test_a_second_signature_only_part_after_signed_text_is_kept(sse_server: SSEServer) -> None:
    chunks = [
        gemini_chunk({"text": "The answer", "thoughtSignature": "Zmlyc3Q="}),
        gemini_chunk({"text": "", "thoughtSignature": "c2Vjb25k"}, finish="STOP"),
    ]
    turn = _every_path_alike(sse_server, chunks)
    assert turn[0]["parts"] == [
        {"text": "The answer", "thoughtSignature": "Zmlyc3Q="},
        {"text": "", "thoughtSignature": "c2Vjb25k"},
    ]


def test_signature_only_parts_after_text_and_before_it(sse_server: SSEServer) -> None:
    chunks = [
        # Before any call or text: a part of its own before the text that follows.
        gemini_chunk({"text": "", "thoughtSignature": "MA=="}),
        gemini_chunk({"text": "Part one"}),
        # Signs the text before it, then one of its own.
        gemini_chunk({"text": "", "thoughtSignature": "MQ=="}, {"thoughtSignature": "Mg=="}),
        gemini_chunk({"text": "part two."}, finish="STOP"),
    ]
    turn = _every_path_alike(sse_server, chunks)
    assert turn[0]["parts"] == [
        {"text": "", "thoughtSignature": "MA=="},
        {"text": "Part one", "thoughtSignature": "MQ=="},
        {"text": "", "thoughtSignature": "Mg=="},
        {"text": "part two."},
    ]


def test_thoughts_count_toward_the_stream_limit() -> None:
    # A thought past `max_stream_bytes` refuses the response, as assistant text does, and is
    # not kept, on both paths.
    chunks = [
        gemini_chunk({"text": "x" * 64, "thought": True}),
        gemini_chunk({"text": "y" * 64, "thought": True}),
        gemini_chunk(gemini_call("get_weather", {"city": "Oslo"}), finish="STOP"),
    ]
    body = sse_body(chunks, FMT)
    raw, chunked = Assembler(max_stream_bytes=100), Assembler(max_stream_bytes=100)
    raw.feed_sse(body)
    for chunk in chunks:
        chunked.feed_chunk(chunk)
    assert raw.finish()[0].arguments == chunked.finish()[0].arguments
    assert raw.reasoning == chunked.reasoning == []
    assert [k for k, _, _ in raw.stream_errors()] == ["stream_limit"]


def test_an_error_chunk_lets_the_thought_streaming_go() -> None:
    chunks = [
        gemini_chunk({"text": "Hmm", "thought": True}),
        {"error": {"code": 500, "message": "internal", "status": "INTERNAL"}},
    ]
    raw, chunked = Assembler(), Assembler()
    raw.feed_sse(sse_body(chunks, FMT))
    for chunk in chunks:
        chunked.feed_chunk(chunk)
    raw.finish()
    chunked.finish()
    assert raw.reasoning == chunked.reasoning == []


def test_assistant_turn_refuses_what_is_no_thought_part() -> None:
    with pytest.raises(TypeError, match="no thought part"):
        assistant_turn([], style=FMT, text="hi", reasoning=[{"text": "x"}])
