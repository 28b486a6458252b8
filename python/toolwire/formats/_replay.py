"""Assistant text of a response that a reconnect may send again from its start.

Anthropic (`message_start`) and Responses (`response.created`) open a response with one event;
a second one means the stream is being replayed, and its text comes again. The text the
response already has is dropped as it comes back, so the text is kept once, as on the raw SSE
path (`feed_sse`), which reads the same events the same way.

The text is kept as the pieces it came in and compared piece by piece: a response restarted
many times costs time in proportion to the text that comes, never to the text kept times the
restarts (joining it at every restart did).
"""

from __future__ import annotations

from bisect import bisect_right


class ReplayedText:
    """The text of one response so far, and how much of it a replay has matched."""

    __slots__ = ("_ends", "_parts", "_pos", "_started")

    def __init__(self) -> None:
        """Start before the response's first event."""
        self._parts: list[str] = []
        # Where each piece ends in the text.
        self._ends: list[int] = []
        self._started = False
        # While a replay re-treads the text: how much of it the replay has matched.
        self._pos: int | None = None

    def start(self) -> None:
        """The response's first event came; a second one starts a replay of its text."""
        if self._started and self._parts:
            self._pos = 0
        self._started = True

    def take(self, text: str, *, keep: bool = True) -> str:
        """What `text`, the next piece of assistant text, adds to the response.

        During a replay, text the response already has adds nothing; text past it is new;
        text that differs is new along with what it had matched (nothing is lost).

        Args:
            text: The piece.
            keep: False once the response is over its byte limit: what it adds is no longer
                kept (a replay past that point is not recognised).
        """
        pos = self._pos
        if pos is not None:
            total = self._ends[-1]
            if self._holds_at(pos, text):
                pos += len(text)
                self._pos = pos if pos < total else None
                return ""
            self._pos = None
            rest = total - pos
            if self._holds_at(pos, text[:rest]) and len(text) >= rest:
                text = text[rest:]
            else:
                text = self._prefix(pos) + text
        if text and keep:
            self._parts.append(text)
            self._ends.append((self._ends[-1] if self._ends else 0) + len(text))
        return text

    def _holds_at(self, pos: int, text: str) -> bool:
        """Whether the text kept has `text` at `pos`."""
        ends = self._ends
        if pos + len(text) > (ends[-1] if ends else 0):
            return False
        i = bisect_right(ends, pos)
        done = 0
        while done < len(text):
            start = ends[i - 1] if i else 0
            part = self._parts[i]
            offset = pos + done - start
            n = min(len(part) - offset, len(text) - done)
            if part[offset : offset + n] != text[done : done + n]:
                return False
            done += n
            i += 1
        return True

    def _prefix(self, pos: int) -> str:
        """The first `pos` characters of the text kept."""
        i = bisect_right(self._ends, pos)
        start = self._ends[i - 1] if i else 0
        tail = self._parts[i][: pos - start] if i < len(self._parts) else ""
        return "".join(self._parts[:i]) + tail
