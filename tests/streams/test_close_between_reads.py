"""A close that comes while nobody is reading (between two reads, or before the first).

Another thread or task may close a stream while its reader is busy with the last event: the
reader must still get every call's end. `.calls` is whole as soon as the close returns, and a
reader that comes back gets what the last chunk had not yet given, then each call that had
started completed (cut off) and `StreamEnded`, each call completed exactly once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from toolwire.events import CallCompleted, CallStarted, Event, StreamEnded
from toolwire.stream import aassemble, assemble
from toolwire.toolset import Toolset

from .streamkit import chat_chunk, tc

# One chunk finishes call 0 and starts call 1; call 1 is still open when the close comes.
CHUNKS: list[dict[str, Any]] = [
    chat_chunk({"tool_calls": [tc(0, id="a", name="get_weather", arguments='{"city": "Pa')]}),
    chat_chunk(
        {
            "tool_calls": [
                tc(0, arguments='ris"}'),
                tc(1, id="b", name="get_time", arguments='{"zone": "UT'),
            ]
        }
    ),
    chat_chunk({"tool_calls": [tc(1, arguments='C"}')]}),
    chat_chunk(finish_reason="tool_calls"),
]


class _Source:
    """A chunk iterator that records whether it was closed (as an SDK stream is)."""

    def __init__(self) -> None:
        self.closed = False
        self._chunks = iter(CHUNKS)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        if self.closed:
            raise StopIteration
        return next(self._chunks)

    def close(self) -> None:
        self.closed = True


class _AsyncSource:
    def __init__(self) -> None:
        self.closed = False
        self._chunks = iter(CHUNKS)

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self.closed:
            raise StopAsyncIteration
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self.closed = True


def _check_ended_by_close(events: list[Event], calls: list[Any]) -> None:
    started = [e.ordinal for e in events if isinstance(e, CallStarted)]
    completed = [e.call.ordinal for e in events if isinstance(e, CallCompleted)]
    assert sorted(completed) == sorted(started) == [c.ordinal for c in calls] == [0, 1]
    assert isinstance(events[-1], StreamEnded) and events[-1].finish_reason is None
    assert sum(isinstance(e, StreamEnded) for e in events) == 1
    first, second = calls
    assert first.ok and first.value == {"city": "Paris"}
    assert second.error is not None and second.error.kind == "truncated"


def _read_until_second_started(stream: Any) -> list[Event]:
    events: list[Event] = []
    for event in stream:
        events.append(event)
        if isinstance(event, CallStarted) and event.ordinal == 1:
            return events
    raise AssertionError("the second call never started")


def test_a_close_from_another_thread_between_reads_leaves_the_reader_every_end() -> None:
    source = _Source()
    stream = assemble(source)
    events = _read_until_second_started(stream)
    # Call 0's completion is still in the chunk being given out when the close comes.
    assert not any(isinstance(e, CallCompleted) for e in events)
    closer = threading.Thread(target=stream.close)
    closer.start()
    closer.join(5)
    assert source.closed
    # Whole at once, before anyone reads on.
    assert [c.ordinal for c in stream.calls] == [0, 1]
    assert stream.calls[1].error is not None
    events.extend(stream)
    _check_ended_by_close(events, stream.calls)
    stream.close()  # a second close changes nothing
    assert list(stream) == []


def test_a_reader_that_comes_back_while_a_close_validates_waits_for_its_end() -> None:
    # The close ends the calls, and so runs the application's validators, holding the
    # reader's lock: the reader that comes back meanwhile is the stream's one reader, not a
    # second one, and gets the ends once the close is done.
    validating = threading.Event()

    class GetWeather(BaseModel):
        city: str

        @field_validator("city")
        @classmethod
        def slow(cls, city: str) -> str:
            validating.set()
            time.sleep(0.2)  # the reader comes back meanwhile
            return city

    class GetTime(BaseModel):
        zone: str

    stream = assemble(_Source(), Toolset([GetWeather, GetTime]))
    events = _read_until_second_started(stream)
    closer = threading.Thread(target=stream.close)
    closer.start()
    assert validating.wait(5)
    events.extend(stream)
    closer.join(5)
    _check_ended_by_close(events, stream.calls)
    assert stream.outcomes[0].ok


def test_a_close_before_the_first_read_ends_the_stream_for_a_later_reader() -> None:
    source = _Source()
    stream = assemble(source)
    stream.close()
    assert source.closed and stream.calls == []
    events = list(stream)
    assert len(events) == 1 and isinstance(events[0], StreamEnded)


@pytest.mark.anyio
async def test_an_aclose_from_another_task_between_reads_leaves_the_reader_every_end() -> None:
    source = _AsyncSource()
    stream = aassemble(source)
    events: list[Event] = []
    async for event in stream:
        events.append(event)
        if isinstance(event, CallStarted) and event.ordinal == 1:
            break
    assert not any(isinstance(e, CallCompleted) for e in events)
    await asyncio.ensure_future(stream.aclose())
    assert source.closed
    assert [c.ordinal for c in stream.calls] == [0, 1]
    events.extend([event async for event in stream])
    _check_ended_by_close(events, stream.calls)


# A read that does not end as the stream does (an error of the source's own, no transport
# error, or a per-read timeout's cancellation) goes up to the reader, as before; a reader that
# comes back gets what a close would have given it, where it got nothing: the calls it saw
# start never completed.


class _SourceBug(Exception):
    """An error of the source's own: no transport error, so it goes up to the reader."""


def test_an_error_of_the_source_leaves_a_reader_that_comes_back_every_end() -> None:
    def source() -> Iterator[dict[str, Any]]:
        yield from CHUNKS[:2]
        raise _SourceBug

    stream = assemble(source())
    events: list[Event] = []
    with pytest.raises(_SourceBug):
        events.extend(stream)  # the second call started before the error
    assert [e.ordinal for e in events if isinstance(e, CallStarted)] == [0, 1]
    assert [c.ordinal for c in stream.calls] == [0, 1]
    events.extend(stream)
    _check_ended_by_close(events, stream.calls)
    assert list(stream) == []


@pytest.mark.anyio
async def test_a_read_cut_by_a_timeout_leaves_a_reader_that_comes_back_every_end() -> None:
    more = asyncio.Event()

    async def source() -> AsyncIterator[dict[str, Any]]:
        for chunk in CHUNKS[:2]:
            yield chunk
        await more.wait()  # a server that stopped sending
        for chunk in CHUNKS[2:]:
            yield chunk

    stream = aassemble(source())
    events: list[Event] = []
    with pytest.raises(TimeoutError):
        while True:  # the second call starts before the server stops sending
            events.append(await asyncio.wait_for(stream.__anext__(), 0.05))
    assert [e.ordinal for e in events if isinstance(e, CallStarted)] == [0, 1]
    assert [c.ordinal for c in stream.calls] == [0, 1]
    events.extend([event async for event in stream])
    _check_ended_by_close(events, stream.calls)
    assert [event async for event in stream] == []
