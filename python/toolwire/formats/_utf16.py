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
  resend); while held, its bytes count toward `max_stream_bytes` (`Sink._hold_fragment`),
  given back just before they are fed or dropped, and one the core will not let be held (the
  response is refused, or it alone passes `max_bytes`) is handed on at once, its half written
  back as an escape, so that a stream cannot make us hold more than its limit;
- a surrogate left unpaired (the call ended, the stream finished, or no partner came) is written
  back into the argument text as its `\\uXXXX` escape, so the core reports `lone_surrogate` at
  its offset; a half held when a delta starts another call under the same key goes back to
  the call it came from;
- in ids, names and assistant text, which are not JSON text, an unpaired surrogate becomes
  U+FFFD; so it does in a custom tool's free-form input (`feed(..., text=True)`), held and
  joined as arguments are.

The usual fragment costs one dictionary truth test: the work starts only when the core refuses a
fragment, or while a half is held.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from toolwire.formats._types import Arguments, Sink

__all__ = [
    "Utf16",
    "escape_lone_surrogates",
    "join_pairs",
    "replace_lone_surrogates",
    "string_piece",
    "surrogate_in",
    "text_piece",
]

_LONE = re.compile("[\ud800-\udfff]")


def join_pairs(text: str) -> str:
    """`text` with each high and low surrogate that follow each other made one character."""
    # UTF-16 with surrogatepass joins each high/low pair into one code point and keeps the rest.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape(text: str) -> str:
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def escape_lone_surrogates(text: str) -> str:
    """`text` with its pairs joined and every unpaired surrogate written as a `\\uXXXX` escape."""
    return _escape(join_pairs(text))


def _replace_lone(text: str) -> str:
    return _LONE.sub("\ufffd", text)


def _replace(text: str | None) -> str | None:
    if text is None or text.isascii():
        return text
    return _LONE.sub("\ufffd", join_pairs(text))


def replace_lone_surrogates(text: str) -> str:
    """`text` with its pairs joined and every unpaired surrogate made U+FFFD, as the raw SSE
    path reads a lone `\\uXXXX` escape in a text that is not JSON (a finish reason)."""
    return _LONE.sub("\ufffd", join_pairs(text)) if not text.isascii() else text


def surrogate_in(text: object) -> bool:
    """Whether `text` is a `str` holding a surrogate code point (`isascii` is a flag read)."""
    return isinstance(text, str) and not text.isascii() and _LONE.search(text) is not None


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


def _fed_bytes(before: str, lone: Callable[[str], str]) -> int:
    """The length of `before` (pairs joined) as it will be fed: UTF-8, each unpaired surrogate
    written by `lone` (its 6-byte escape, or U+FFFD), as the raw SSE path holds it."""
    if before.isascii():
        return len(before)
    return len(lone(before).encode())


class Utf16:
    """Per-stream state: the high surrogate held at the end of each call's last fragment, with
    the text of that fragment before it, held too, the bytes the core counts for it, and how an
    unpaired surrogate is written in that call's text."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        """Start with nothing held."""
        # A dict: a stream may hold a half under each of many keys, and every fragment of a
        # call looks its key up while any is held.
        self.held: dict[int | None, tuple[str, str, int, Callable[[str], str]]] = {}

    def _take(self, sink: Sink, index: int | None) -> tuple[str, str, Callable[[str], str]]:
        """The half and text held for `index` (empty if none), given back to the core's count
        (they are about to be fed, or dropped), and how the call writes an unpaired half."""
        held = self.held.pop(index, None)
        if held is None:
            return "", "", _escape
        sink._release(held[2])  # pyright: ignore[reportPrivateUsage]
        return held[0], held[1], held[3]

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
        text: bool = False,
    ) -> int:
        """`sink.feed` with surrogate halves joined or escaped; returns the call's ordinal.

        The usual delta goes straight to the core; the repair starts only when a text holds a
        surrogate or while a half is held. The core would take a surrogate too, as its JSON
        escape, but the repair writes a pair whole, as the raw SSE path does. `text`: the
        arguments are free-form text (a custom tool's input), where an unpaired half is U+FFFD.
        """
        if not self._repairs(index, arguments, id, name):
            return sink.feed(index, id=id, name=name, arguments=arguments, type=type, start=start)
        id, name = _replace(id), _replace(name)
        if isinstance(arguments, str):
            lone = _replace_lone if text else _escape
            arguments, _, _ = self._repair(sink, index, arguments, lone)
        return sink.feed(
            index,
            id=id,
            name=name,
            arguments=arguments or None,
            type=_replace(type),
            start=start,
        )

    def fragment(self, sink: Sink, index: int | None, arguments: Arguments) -> int | None:
        """`feed` of a delta that is an argument fragment alone. When all of it is held, the
        core gets nothing, as on the raw SSE path, and None is returned: fed as a delta without
        arguments, it would start a call of its own (without id or name) where the key's call
        had ended, or one before its item's or block's start."""
        if not self._repairs(index, arguments, None, None):
            return sink.feed(index, arguments=arguments)
        if not isinstance(arguments, str):
            return sink.feed(index, arguments=arguments)
        # No split: a bare fragment starts no call, so the held text goes on with it in one
        # piece, as the raw SSE path feeds an Anthropic or Responses fragment; split, the held
        # part alone could cross `max_stream_bytes` and the rest be dropped where `feed_sse`
        # keeps both.
        text, _, held_all = self._repair(sink, index, arguments, _escape, split=False)
        if held_all:
            return None
        return sink.feed(index, arguments=text or None)

    def _repairs(
        self, index: int | None, arguments: object, id: str | None, name: str | None
    ) -> bool:
        """Whether a delta needs the repair: a text holds a surrogate, or a half is held."""
        return bool(self.held and isinstance(arguments, str) and index in self.held) or (
            surrogate_in(arguments) or surrogate_in(id) or surrogate_in(name)
        )

    def _repair(
        self,
        sink: Sink,
        index: int | None,
        arguments: str,
        lone: Callable[[str], str],
        *,
        split: bool = True,
    ) -> tuple[str, int | None, bool]:
        """The fragment `arguments` with the half held for `index` and its own trailing half,
        each unpaired half written by `lone`: (the text to feed now, the ordinal of what went to
        the call the held half came from, whether all of the text is held). `split`: the held
        text goes to its call first, on its own, when the delta may start another call."""
        half, before, _ = self._take(sink, index)
        text = join_pairs(arguments)
        released = 0
        first: int | None = None
        if half and not _resends(half, before, text):
            joined = join_pairs(half + arguments)
            # Unpaired, the half stays in front, and is written back by `lone`.
            released = len(lone(before)) + (len(lone(half)) if joined[0] == half else 0)
            text = before + joined
        if text and _is_high(text[-1]):
            bytes_ = _fed_bytes(text[:-1], lone)
            # Refused (the response is over its limit, or the text alone passes
            # `max_bytes`), the fragment goes on now with its half unpaired: whatever
            # comes next, the call is `too_large`, as on the raw SSE path.
            if sink._hold_fragment(bytes_):  # pyright: ignore[reportPrivateUsage]
                self.held[index] = (text[-1], text[:-1], bytes_, lone)
                return "", None, True
        escaped = lone(text)
        if released and split:
            # The held fragment belongs to the call it went to, which is still the open
            # one under this key, not to a call this delta starts (quirks 1-3 with 41).
            # Handed on first, it also counts as that call's arguments when the core
            # decides whether this delta starts another call.
            first = sink.feed(index, arguments=escaped[:released])
            escaped = escaped[released:]
        return escaped, first, False

    def forget(self, sink: Sink, index: int | None) -> None:
        """The call under `index` is sent again from its start (a replayed stream), or its
        whole text supersedes its fragments: a half held from them is no longer waited for."""
        if self.held:
            self._take(sink, index)

    def release(self, sink: Sink, index: int | None) -> None:
        """The call under `index` ends: write back its held half unpaired."""
        if self.held:
            half, before, lone = self._take(sink, index)
            if half:
                sink.feed(index, arguments=lone(before + half))

    def flush(self, sink: Sink) -> None:
        """The stream ends: write back every held half unpaired."""
        while self.held:
            index = next(iter(self.held))
            half, before, lone = self._take(sink, index)
            sink.feed(index, arguments=lone(before + half))


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
    return _LONE.sub("\ufffd", join_pairs(text)), half


def string_piece(held: str, text: str, *, more: bool) -> tuple[str, str] | None:
    """A piece of a string value, with the previous piece's held half, as UTF-8 can carry it:
    (text, new half), or None when an unpaired surrogate is left in it (the value has no UTF-8
    form, and a call holding it is `lone_surrogate`). Pairs are joined across pieces; a
    trailing high surrogate is held while `more` of the string comes."""
    if not held and text.isascii():
        return text, ""
    text = join_pairs(held + text)
    half = ""
    if more and text and _is_high(text[-1]):
        half = text[-1]
        text = text[:-1]
    return None if _LONE.search(text) else (text, half)
