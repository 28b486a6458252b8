"""Surrogate halves that the SDKs hand over when a producer split a pair between two events.

A producer that works in UTF-16 (JavaScript) may cut an argument fragment between the two halves
of an astral character and send each half as its own `\\uXXXX` escape (quirk 41). The SDKs decode
each event on its own, so the halves arrive as lone surrogates in separate `str` fragments,
which UTF-8 (and the core's `feed`) cannot take. This mirrors what the raw SSE path does in Rust
(`rust/src/envelope.rs`), so every way in gives the same calls:

- a fragment that ends in a high surrogate is held whole per wire index until that call's next
  fragment, and pairs are joined; a next fragment that repeats the held one with the pair
  whole is a cumulative resend (quirk 19), which replaces it (handed on without its half, the
  held fragment was an exact repeat of the text so far, to which the core appended the
  resend);
- a surrogate left unpaired (the call ended, the stream finished, or no partner came) is written
  back into the argument text as its `\\uXXXX` escape, so the core reports `lone_surrogate` at
  its offset; a half held when a delta starts another call under the same key goes back to
  the call it came from;
- in ids, names and assistant text, which are not JSON text, an unpaired surrogate becomes
  U+FFFD.

The usual fragment costs one dictionary truth test: the work starts only when the core refuses a
fragment, or while a half is held.
"""

from __future__ import annotations

import re

from toolwire.formats._types import Arguments, Sink

__all__ = ["Utf16", "escape_lone_surrogates", "text_piece"]

_LONE = re.compile("[\ud800-\udfff]")


def _join_pairs(text: str) -> str:
    # UTF-16 with surrogatepass joins each high/low pair into one code point and keeps the rest.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape(text: str) -> str:
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def escape_lone_surrogates(text: str) -> str:
    """`text` with its pairs joined and every unpaired surrogate written as a `\\uXXXX` escape."""
    return _escape(_join_pairs(text))


def _replace(text: str | None) -> str | None:
    if text is None or text.isascii():
        return text
    return _LONE.sub("\ufffd", _join_pairs(text))


def _is_high(char: str) -> bool:
    return "\ud800" <= char <= "\udbff"


def _resends(half: str, before: str, text: str) -> bool:
    """Whether `text` (pairs joined) resends the fragment `before` + `half`: it starts with
    `before`, followed by `half`, now paired with its low half or again trailing."""
    if not before or not text.startswith(before) or len(text) == len(before):
        return False
    first = ord(text[len(before)])
    if first >= 0x10000:
        return 0xD800 + ((first - 0x10000) >> 10) == ord(half)
    return text[len(before) :] == half


class Utf16:
    """Per-stream state: the high surrogate held at the end of each call's last fragment, with
    the text of that fragment before it, held too."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        """Start with nothing held."""
        self.held: dict[int | None, tuple[str, str]] = {}

    def feed(
        self,
        sink: Sink,
        index: int | None,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: Arguments | None = None,
        type: str | None = None,
        start: bool = False,
    ) -> int:
        """`sink.feed` with surrogate halves joined or escaped; returns the call's ordinal.

        The usual delta goes straight to the core; the repair starts only when the core refuses
        it (`UnicodeEncodeError`, raised before any state changed) or while a half is held.
        """
        if not (self.held and isinstance(arguments, str) and index in self.held):
            try:
                return sink.feed(
                    index, id=id, name=name, arguments=arguments, type=type, start=start
                )
            except UnicodeEncodeError:
                pass
        id, name = _replace(id), _replace(name)
        if isinstance(arguments, str):
            half, before = self.held.pop(index, ("", ""))
            text = _join_pairs(arguments)
            released = 0
            if half and not _resends(half, before, text):
                joined = _join_pairs(half + arguments)
                # Unpaired, the half stays in front, and is written back as its escape.
                released = len(_escape(before)) + (6 if joined[0] == half else 0)
                text = before + joined
            if text and _is_high(text[-1]):
                self.held[index] = (text[-1], text[:-1])
                text = ""
                released = 0
            arguments = _escape(text)
            if released:
                # The held fragment belongs to the call it went to, which is still the open
                # one under this key, not to a call this delta starts (quirks 1-3 with 41).
                # Handed on first, it also counts as that call's arguments when the core
                # decides whether this delta starts another call.
                sink.feed(index, arguments=arguments[:released])
                arguments = arguments[released:]
        return sink.feed(
            index,
            id=id,
            name=name,
            arguments=arguments or None,
            type=_replace(type),
            start=start,
        )

    def forget(self, index: int | None) -> None:
        """The call under `index` is sent again from its start (a replayed stream): a half held
        from its first rendition comes again with it, and is no longer waited for."""
        self.held.pop(index, None)

    def release(self, sink: Sink, index: int | None) -> None:
        """The call under `index` ends: write back its held half as an escape."""
        if self.held:
            held = self.held.pop(index, None)
            if held is not None:
                sink.feed(index, arguments=_escape(held[1] + held[0]))

    def flush(self, sink: Sink) -> None:
        """The stream ends: write back every held half as an escape."""
        held, self.held = self.held, {}
        for index, (unit, before) in held.items():
            sink.feed(index, arguments=_escape(before + unit))


def text_piece(held: str, text: str) -> tuple[str, str]:
    """Assistant text of one chunk with the previous chunk's held half: (text, new half).

    Pairs are joined across chunks and an unpaired half becomes U+FFFD, as on the raw SSE path;
    a trailing high surrogate is held for the next chunk.
    """
    text = held + text
    half = ""
    if text and _is_high(text[-1]):
        half = text[-1]
        text = text[:-1]
    return _LONE.sub("\ufffd", _join_pairs(text)), half
