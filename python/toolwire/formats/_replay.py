"""Assistant text of a response that a reconnect may send again from its start.

Anthropic (`message_start`) and Responses (`response.created`) open a response with one event;
a second one means the stream is being replayed, and its text comes again. The text the
response already has is dropped as it comes back, so the text is kept once, as on the raw SSE
path (`feed_sse`), which reads the same events the same way.
"""

from __future__ import annotations


class ReplayedText:
    """The text of one response so far, and how much of it a replay has matched."""

    __slots__ = ("_parts", "_pos", "_so_far", "_started")

    def __init__(self) -> None:
        """Start before the response's first event."""
        self._parts: list[str] = []
        self._started = False
        self._so_far = ""
        # While a replay re-treads the text: how much of `_so_far` it has matched.
        self._pos: int | None = None

    def start(self) -> None:
        """The response's first event came; a second one starts a replay of its text."""
        if self._started and self._parts:
            self._so_far = "".join(self._parts)
            self._parts = [self._so_far]
            self._pos = 0
        self._started = True

    def take(self, text: str) -> str:
        """What `text`, the next piece of assistant text, adds to the response.

        During a replay, text the response already has adds nothing; text past it is new;
        text that differs is new along with what it had matched (nothing is lost).
        """
        pos = self._pos
        if pos is not None:
            so_far = self._so_far
            if so_far.startswith(text, pos):
                pos += len(text)
                self._pos = pos if pos < len(so_far) else None
                return ""
            self._pos = None
            rest = so_far[pos:]
            text = text[len(rest) :] if text.startswith(rest) else so_far[:pos] + text
        if text:
            self._parts.append(text)
        return text
