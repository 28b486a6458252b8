"""`ReplayedText` (the assistant text a restarted Anthropic or Responses stream sends again),
against the plain reading of its rule: kept text joined whole at every restart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from toolwire.formats._replay import ReplayedText


class _Joined:
    """The rule read plainly: the text so far as one string, joined at each restart."""

    def __init__(self) -> None:
        self.text = ""
        self.pos: int | None = None
        self.started = False

    def start(self) -> None:
        if self.started and self.text:
            self.pos = 0
        self.started = True

    def take(self, piece: str) -> str:
        if self.pos is not None:
            if self.text.startswith(piece, self.pos):
                self.pos += len(piece)
                if self.pos >= len(self.text):
                    self.pos = None
                return ""
            rest = self.text[self.pos :]
            piece = piece[len(rest) :] if piece.startswith(rest) else self.text[: self.pos] + piece
            self.pos = None
        self.text += piece
        return piece


_events = st.lists(st.one_of(st.just(None), st.text(alphabet="ab\u00e9", max_size=6)), max_size=40)


@given(_events)
def test_pieces_compared_across_their_boundaries_read_as_the_joined_text(
    events: list[str | None],
) -> None:
    # None is a restart (`message_start`, `response.created`); replays re-send the text cut
    # anywhere, which the small alphabet makes frequent.
    kept, joined = ReplayedText(), _Joined()
    kept.start()
    joined.start()
    for event in events:
        if event is None:
            kept.start()
            joined.start()
        else:
            assert kept.take(event) == joined.take(event)


def test_a_replay_cut_otherwise_than_the_first_rendition_adds_nothing() -> None:
    text = ReplayedText()
    text.start()
    assert [text.take(p) for p in ["Hel", "lo, w", "orld"]] == ["Hel", "lo, w", "orld"]
    text.start()
    assert [text.take(p) for p in ["H", "ello, wo", "rl", "d!"]] == ["", "", "", "!"]
    text.start()
    assert text.take("Hello, there") == "Hello, there"


def test_text_past_the_limit_is_not_kept() -> None:
    text = ReplayedText()
    text.start()
    assert text.take("abc") == "abc" and text.take("def", keep=False) == "def"
    text.start()
    assert text.take("abc") == "" and text.take("def") == "def"
