"""Wrap an SDK stream (sync or async) and yield typed tool-call events.

Design notes:
- One `_Driver` holds the per-stream policy (which events to emit, in which order, how a stream
  that breaks off ends); `ToolStream` and `AsyncToolStream` only differ in how they pull chunks
  and close the source, so the two paths cannot drift apart.
- A transport failure is not an exception for the consumer: the calls assembled so far are still
  delivered (unfinished ones are not executable), the stream ends with
  `StreamEnded(finish_reason=None)`, and the exception is kept on `.transport_error`.
  `raise_for_transport_error()` re-raises it for callers who want the exception. Every other
  exception (a bug, `KeyboardInterrupt`, cancellation) propagates unchanged; `.calls` is whole
  then, and a reader that comes back gets the end events a close gives.
- An error the provider reported inside the stream, which the SDKs raise, ends it as that event
  does on the raw SSE path: open calls stop (none of them runs) and the finish reason is
  `error`; the exception is kept on `.transport_error` too.
- Closing early (leaving the `with` block, `close()`, `break` then close) closes the SDK stream,
  which releases its HTTP connection, and finishes the assembler quietly so `.calls` still holds
  every call that had started.
- `close()`/`aclose()` may come from another thread or task while the consumer is inside
  `next`/`__anext__`, blocked on a server that stopped sending. The generator cannot be closed
  there, so the close sets a flag and closes the source under the reader (shutting the socket
  it reads down first: closing a socket does not wake a thread blocked reading it; an SDK
  stream that is itself an async generator, google-genai's, cannot be closed under its reader,
  whose task the close wakes with a cancellation it then takes back). The reader's read then
  fails or ends, and whatever it raised, it ends as an early close ends the stream, yielding
  the completions of open calls and `StreamEnded`. Only one reader at a time:
  a second is a `MisuseError`, not Python's "generator already executing".
- A source of the wrong kind (async for `assemble`, sync for `aassemble`, a coroutine not
  awaited) is refused when the wrapper is built, like a dict or a helper's manager.
- Validation runs the application's own code (Pydantic validators, business checks, the
  redaction hook). If that raises for one call, `Toolset.validate` gives the call a
  non-retryable `internal_error` outcome (it must not run) and logs the exception's type; the
  other calls and `StreamEnded` are still delivered, so `.outcomes` stays aligned with `.calls`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import socket
import sys
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Generator,
    Iterable,
    Iterator,
    Mapping,
)
from types import CodeType, FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from toolwire._core import MisuseError, Scanner
from toolwire._pickling import LiveState
from toolwire.assembler import (
    Assembler,
    chat_ended_calls,
    chat_reopened_calls,
    fed_past_limit,
    note_limit,
)
from toolwire.events import (
    ArgumentsProgress,
    CallCompleted,
    CallStarted,
    Event,
    PrecheckError,
    StreamEnded,
    TextDelta,
)
from toolwire.formats import detect_format, is_error_event
from toolwire.formats._types import stop_open_calls
from toolwire.formats.whole import aws_error_event, is_json_media, whole_response_events
from toolwire.toolset import internal_error
from toolwire.validation import Outcome

if TYPE_CHECKING:
    from typing_extensions import Self

    from toolwire._core import ToolCall
    from toolwire.formats import WireFormat
    from toolwire.toolset import Toolset

__all__ = ["AssemblerLimits", "AsyncToolStream", "ToolStream", "aassemble", "assemble"]


class AssemblerLimits(TypedDict, total=False):
    """The limits of the `Assembler` a stream wrapper makes: its keyword arguments of the same
    names and meanings (each defaults as there)."""

    max_depth: int
    max_bytes: int
    max_number_digits: int
    duplicate_keys: Literal["error", "last_wins"]
    max_calls: int
    max_stream_bytes: int


# The limits an `Assembler` shares with a `Scanner`.
_SCANNER_LIMITS = frozenset(("max_depth", "max_bytes", "max_number_digits", "duplicate_keys"))

_log = logging.getLogger("toolwire.stream")

# Exceptions that mean "the connection or the provider ended the stream early", looked up in
# sys.modules so that toolwire imports no SDK: if an SDK raised it, its module is loaded.
_TRANSPORT_ERRORS: tuple[tuple[str, str], ...] = (
    ("httpx", "TransportError"),
    ("httpx2", "TransportError"),
    ("httpcore", "NetworkError"),
    ("httpcore", "RemoteProtocolError"),
    ("httpcore", "TimeoutException"),
    ("openai", "APIError"),
    ("anthropic", "APIError"),
    ("google.genai.errors", "APIError"),
    # google-genai's error for a line of the body that is not JSON (its stream cannot go on).
    ("google.genai.errors", "UnknownApiResponseError"),
    ("aiohttp", "ClientError"),
    # boto3 (Bedrock): a connection that broke off or timed out is urllib3's own error during
    # iteration, a frame that cannot be decoded botocore's `ParserError` (the stream cannot go
    # on after it), an exception event `EventStreamError`.
    ("urllib3.exceptions", "ProtocolError"),
    ("urllib3.exceptions", "TimeoutError"),
    ("botocore.exceptions", "HTTPClientError"),
    ("botocore.eventstream", "ParserError"),
    ("botocore.exceptions", "EventStreamError"),
    # botocore's parser refusing an event's payload that does not fit its model (see
    # `_botocore_could_not_decode` for the built-in errors it raises then).
    ("botocore.parsers", "ResponseParserError"),
)


def _sdk_class(module_name: str, class_name: str) -> type | None:
    # Looked up in sys.modules so that toolwire imports no SDK: if an SDK raised it, its
    # module is loaded.
    module = sys.modules.get(module_name)
    cls: object = getattr(module, class_name, None) if module is not None else None
    return cls if isinstance(cls, type) else None


# google-genai turns each chunk into its pydantic model as it reads it: a chunk that does not fit
# (`args` sent as a JSON string, a count that is no number, a `finishReason` that is no string)
# raises `ValidationError`, `TypeError` or `AttributeError` from inside these functions, and the
# stream cannot go on. The exception type alone does not tell that from the caller's mistake: a
# `config` that does not validate raises the same `ValidationError` at the first read, from the
# same generator. So the frames the exception passed through decide: the base `_from_response`
# (the subclass's own, of the same name, also runs the caller's `response_schema`) and the
# converters of the REST response.
_GENAI_DECODERS: frozenset[tuple[str, str]] = frozenset(
    {
        ("google.genai._common", "_from_response"),
        ("google.genai.models", "_GenerateContentResponse_from_mldev"),
        ("google.genai.models", "_GenerateContentResponse_from_vertex"),
    }
)


def _frames_passed(error: BaseException) -> Iterator[FrameType]:
    """The frames `error` passed through on its way up, outermost first."""
    tb = error.__traceback__
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _genai_could_not_decode(error: BaseException) -> bool:
    """Whether google-genai raised `error` while turning a chunk it read into its model."""
    return isinstance(error, (ValueError, TypeError, AttributeError)) and any(
        (frame.f_globals.get("__name__"), frame.f_code.co_name) in _GENAI_DECODERS
        for frame in _frames_passed(error)
    )


def _raised_in(error: BaseException, module: str) -> bool:
    """Whether `error` passed through a frame of `module` on its way up."""
    return any(frame.f_globals.get("__name__") == module for frame in _frames_passed(error))


def _json_could_not_decode(error: BaseException) -> bool:
    """Whether `error` is a `ValueError` the standard `json` decoder raised for an event the
    SDK read (an integer longer than `sys.get_int_max_str_digits()`): no `JSONDecodeError`, yet
    the same event the SDK cannot decode, and its stream cannot go on after it."""
    return isinstance(error, ValueError) and _raised_in(error, "json.decoder")


def _botocore_could_not_decode(error: BaseException) -> bool:
    """Whether botocore raised `error` while turning a ConverseStream event's payload into its
    model: a member of the wrong JSON type (a string or a list where its model has a
    structure) makes its shape parser raise `AttributeError` or `TypeError` rather than its
    own `ResponseParserError`, and the stream cannot go on. Nothing the caller gave runs in
    those frames, so the frames decide, as for google-genai."""
    return isinstance(error, (ValueError, TypeError, AttributeError, LookupError)) and _raised_in(
        error, "botocore.parsers"
    )


def is_transport_error(error: BaseException) -> bool:
    """True when `error` means the stream was cut off rather than misused.

    Connection resets and timeouts (`OSError`, httpx/httpcore and urllib3 transport errors),
    the SDKs' `APIConnectionError` / `APITimeoutError`, provider errors reported inside the
    stream (`openai.APIError`, `anthropic.APIError`, `google.genai.errors.APIError`, botocore's
    `EventStreamError`) and an event the SDK could not decode (`json.JSONDecodeError`: a proxy's
    error page or a cut-off line in the body; `UnicodeDecodeError`: bytes in the body that
    are not UTF-8, which the SDKs decode line by line; `RecursionError`: an event nested deeper
    than Python's JSON decoder goes; the `ValueError` that decoder raises for an integer longer
    than Python's limit for converting one; google-genai's `UnknownApiResponseError`, and the
    `ValidationError`, `TypeError` or `AttributeError` it raises from its own decoding of a
    chunk that does not fit its model; botocore's event-stream `ParserError`, and what its
    shape parser raises for an event whose payload does not fit its model; the SDK's stream
    cannot go on after it) count; programming errors do not, the caller's own `ValidationError`
    (a request `config` google-genai rejects at the first read) among them.

    Args:
        error: The exception raised while reading the stream.

    Returns:
        Whether a tool stream should end gracefully with this error kept.
    """
    if isinstance(error, (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError)):
        return True
    for module_name, class_name in _TRANSPORT_ERRORS:
        cls = _sdk_class(module_name, class_name)
        if cls is not None and isinstance(error, cls):
            return True
    return (
        _json_could_not_decode(error)
        or _genai_could_not_decode(error)
        or _botocore_could_not_decode(error)
    )


def is_provider_error(error: BaseException) -> bool:
    """True when an SDK raised an error the provider reported inside the stream.

    The openai SDK raises `APIError` for a Chat `{"error": ...}` line and the anthropic SDK an
    `APIStatusError` for an `error` event, google-genai an `APIError` for an `{"error": ...}`
    chunk; their `APIConnectionError` (a dropped or timed-out connection) is not one. boto3
    raises `botocore.exceptions.EventStreamError` for a Bedrock exception event
    (`modelStreamErrorException`, `throttlingException`, ...).

    Args:
        error: The exception raised while reading the stream.

    Returns:
        Whether the provider, not the connection, ended the stream.
    """
    event_error = _sdk_class("botocore.exceptions", "EventStreamError")
    if event_error is not None and isinstance(error, event_error):
        return True
    for module_name in ("openai", "anthropic", "google.genai.errors"):
        api_error = _sdk_class(module_name, "APIError")
        # google-genai has no connection error of its own: the HTTP client's passes through.
        connection_error = _sdk_class(module_name, "APIConnectionError")
        if api_error is not None and isinstance(error, api_error):
            return connection_error is None or not isinstance(error, connection_error)
    return False


def _wire_value(value: str | None) -> str | None:
    # Only for CallStarted, which is emitted before the core has settled a call: blank and
    # "null" ids/names are absent there too (quirks 11, 14, 15). The final values come from
    # the core's ToolCall on CallCompleted.
    if value is None or not value.strip() or value == "null":
        return None
    return value


class _Driver:
    """Per-stream event policy shared by the sync and async wrappers."""

    __slots__ = (
        "assembler",
        "calls",
        "completed",
        "container",
        "done",
        "ending",
        "finish_reason",
        "limits",
        "outcomes",
        "progress",
        "reasoning",
        "started",
        "text_parts",
        "text_places",
        "toolset",
        "transport_error",
        "usage",
    )

    def __init__(
        self, toolset: Toolset | None, progress: bool, limits: AssemblerLimits | None
    ) -> None:
        # Only the limits: another `Assembler` keyword here (`progress_into`, `tools`) would
        # take over what the wrapper itself sets, and its events would vanish without a word.
        unknown = sorted(set(limits or {}) - set(AssemblerLimits.__annotations__))
        if unknown:
            raise TypeError(
                f"limits takes only {', '.join(AssemblerLimits.__annotations__)}; "
                f"got {', '.join(unknown)}"
            )
        self.assembler = Assembler(tools=toolset, track_progress=progress, **(limits or {}))
        self.limits: AssemblerLimits = limits or {}
        self.toolset = toolset
        self.progress = progress
        self.started: set[int] = set()
        self.text_parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.container: str | None = None
        self.reasoning: list[dict[str, Any]] = []
        self.text_places: list[list[int | str | list[dict[str, Any]]]] | None = None
        self.calls: list[ToolCall] = []
        self.outcomes: list[Outcome] = []
        self.transport_error: BaseException | None = None
        self.done = False
        # The end's events not yet given out, and how many calls they completed: a
        # `KeyboardInterrupt` in a validator stops the end midway, and the next `end` goes on.
        self.ending: list[Event] | None = None
        self.completed = 0

    def _start(self, ordinal: int, id: str | None, name: str | None, out: list[Event]) -> None:
        if ordinal not in self.started:
            self.started.add(ordinal)
            out.append(CallStarted(ordinal, _wire_value(id), _wire_value(name)))

    def chunk(self, chunk: object) -> list[Event]:
        asm = self.assembler
        info = asm.feed_chunk(chunk)
        out: list[Event] = []
        if info.text:
            self.text_parts.append(info.text)
            out.append(TextDelta(info.text))
        for record in info.feeds:
            self._start(record.ordinal, record.id, record.name, out)
        if info.finish_reason is not None:
            self.finish_reason = info.finish_reason
        if info.usage is not None:
            self.usage = info.usage
        if info.container is not None:
            self.container = info.container
        self._drain_progress(out)
        self._drain_errors(out)
        return out

    def _drain_progress(self, out: list[Event]) -> None:
        if self.progress:
            for ordinal, path, text in self.assembler.drain_progress():
                self._start(ordinal, None, None, out)
                out.append(ArgumentsProgress(ordinal, path, text))

    def _drain_errors(self, out: list[Event]) -> None:
        for ordinal, error in self.assembler.drain_errors():
            self._start(ordinal, None, None, out)
            out.append(PrecheckError(ordinal, error))

    def end(self, error: BaseException | None = None, *, interrupted: bool = False) -> list[Event]:
        """Finish the assembler once; `error`/`interrupted` mean the stream did not end cleanly.

        An exception that is no `Exception` (`KeyboardInterrupt`) from the application's
        validation stops it midway; the next call completes the calls left (validating the
        interrupted one again) and gives every event not yet given, so that each call that
        started still completes once and `.outcomes` stays aligned with `.calls`.
        """
        if self.done:
            return self._complete()
        self.done = True
        asm = self.assembler
        out: list[Event] = []
        provider = error is not None and is_provider_error(error)
        if error is not None or interrupted:
            self.transport_error = error
            if provider:
                # The provider gave up on the response and the SDK raised its error event: as
                # when that event is fed (raw SSE or a dict chunk), calls it had not ended must
                # not run, and the finish reason says why. A Chat finish reason that ended the
                # choice as a whole answer ended every call there was: an error after it stops
                # only a call that started later.
                ended, reopened = chat_ended_calls(asm), chat_reopened_calls(asm)
                stop_open_calls(asm, ended, "error", reopened)
                self.finish_reason = "error"
            else:
                _interrupt(asm, "the stream ended early" if error is None else type(error).__name__)
                # A stream that broke off has no finish reason, whatever arrived before.
                self.finish_reason = None
            self._drain_errors(out)
        tail = asm.text_tail()
        if tail:
            self.text_parts.append(tail)
            out.append(TextDelta(tail))
        calls = asm.finish()
        self.calls = calls
        self.reasoning = asm.reasoning
        # Read only for a turn with no call: with calls, they carry the places.
        self.text_places = None if calls else asm.text_places
        # What the last fragments wrote (a fragment held to tell a resend from new text is
        # decided only now), and the violations that only that decision made certain, come
        # before the calls complete.
        self._drain_progress(out)
        self._drain_errors(out)
        self.ending = out
        return self._complete()

    def _complete(self) -> list[Event]:
        """Complete the calls `end` left, then end the stream; [] once that was given out."""
        out = self.ending
        if out is None:
            return []
        calls = self.calls
        toolset = self.toolset
        while self.completed < len(calls):
            call = calls[self.completed]
            self._start(call.ordinal, call.id, call.name, out)
            outcome = None if toolset is None else _validate(toolset, call)
            if outcome is not None:
                self.outcomes.append(outcome)
            out.append(CallCompleted(call, outcome))
            self.completed += 1
        reasoning = tuple(self.reasoning)
        out.append(
            StreamEnded(
                self.finish_reason,
                self.usage,
                tuple(calls),
                reasoning,
                self.text_places,
                self.container,
            )
        )
        self.ending = None
        return out


def _validate(toolset: Toolset, call: ToolCall) -> Outcome:
    try:
        return toolset.validate(call)
    except Exception as exc:
        # `Toolset.validate` turns what the application's code raises into an `internal_error`
        # outcome itself; this is for a subclass's own `validate`, judged the same way.
        lang: Any = getattr(toolset, "_lang", "en")
        return internal_error(call, exc, lang)


def _interrupt(asm: Assembler, reason: str) -> None:
    # The stream broke off: calls still open must not come back as usable. The core's
    # `interrupt` marks open calls whose arguments are empty or incomplete as truncated and keeps
    # calls whose value is complete. Cores without it still flag incomplete JSON as truncated at
    # finish; only calls with no argument text at all would then read as `{}`.
    interrupt: Any = getattr(asm, "interrupt", None)
    if callable(interrupt):
        interrupt(reason)


# The SDKs' stream helpers, by the public module that exports them (read from its `__dict__`:
# openai.lib.streaming imports its Assistants classes lazily, on first attribute access).
# Each keeps a snapshot of the message as it goes and raises from inside the iteration when it
# cannot: tool arguments that are not JSON (anthropic always, openai's chat helper for a strict
# tool and its Responses helper at `response.completed`), events in an order it does not expect.
# The stream would end there, the calls after it lost, and a call that is the model's error read
# as cut off. So toolwire reads the provider's events under the helper, where that call is
# reported with its own error; none of them offers those but as `_raw_stream`.
_STREAM_HELPERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai.lib.streaming.chat", ("ChatCompletionStream", "AsyncChatCompletionStream")),
    ("openai.lib.streaming.responses", ("ResponseStream", "AsyncResponseStream")),
    (
        "anthropic.lib.streaming",
        ("MessageStream", "AsyncMessageStream", "BetaMessageStream", "BetaAsyncMessageStream"),
    ),
)

# What a helper's `.stream(...)` returns: the request is sent, and the stream made, only by
# `with ... as stream`. Iterating it would fail at the first read, far from the mistake.
_HELPER_MANAGERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "openai.lib.streaming.chat",
        ("ChatCompletionStreamManager", "AsyncChatCompletionStreamManager"),
    ),
    ("openai.lib.streaming.responses", ("ResponseStreamManager", "AsyncResponseStreamManager")),
    (
        "anthropic.lib.streaming",
        (
            "MessageStreamManager",
            "AsyncMessageStreamManager",
            "BetaMessageStreamManager",
            "BetaAsyncMessageStreamManager",
        ),
    ),
)

# The Assistants API's run streams: their events carry tool calls in a shape no adapter reads,
# so they would give no calls and no error.
_ASSISTANT_STREAMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "openai.lib.streaming",
        (
            "AssistantEventHandler",
            "AsyncAssistantEventHandler",
            "AssistantStreamManager",
            "AsyncAssistantStreamManager",
        ),
    ),
)


# What `with_raw_response` and `with_streaming_response` give: the HTTP response, kept for its
# headers (request id, rate limits); its stream is what `.parse()` makes of it.
_RAW_RESPONSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai._legacy_response", ("LegacyAPIResponse",)),
    ("openai._response", ("BaseAPIResponse",)),
    ("anthropic._legacy_response", ("LegacyAPIResponse",)),
    ("anthropic._response", ("BaseAPIResponse",)),
)


# The SDKs' streams over an httpx response (`create(..., stream=True)`), whose `response` tells
# what the server answered.
_HTTP_STREAMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai._streaming", ("Stream", "AsyncStream")),
    ("anthropic._streaming", ("Stream", "AsyncStream")),
)

# Whole, non-streamed responses (`create(...)` without `stream=True`): a pydantic model is
# iterable over its fields, which would be read as chunks of no format, and every call lost.
_WHOLE_RESPONSES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai.types.chat.chat_completion", ("ChatCompletion",)),
    ("openai.types.responses.response", ("Response",)),
    ("anthropic.types.message", ("Message",)),
    ("anthropic.types.beta.beta_message", ("BetaMessage",)),
)


# boto3's ConverseStream: the urllib3 response under it is its `_raw_stream` (it shows no other).
_EVENT_STREAMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("botocore.eventstream", ("EventStream",)),
)


def _json_answer(source: object) -> Any:
    """The HTTP response under an SDK stream when the server answered a JSON document (it
    ignored the request to stream: a proxy, a gateway, a mock), still unread; None otherwise.
    The openai and anthropic SDKs read such a body as an event stream with no event in it, and
    yield nothing; boto3 as event-stream frames, which it cannot decode."""
    response: Any
    if _sdk_instance(source, _HTTP_STREAMS) is not None:
        response = getattr(source, "response", None)
    elif _sdk_instance(source, _EVENT_STREAMS) is not None:
        response = getattr(source, "_raw_stream", None)
        if not _labelled_json(response):
            return _json_under_event_stream(source, response)
    else:
        return None
    return response if _labelled_json(response) else None


def _labelled_json(response: object) -> bool:
    """Whether an HTTP response's `content-type` names JSON."""
    headers: object = getattr(response, "headers", None)
    kind = (
        cast("Mapping[str, object]", headers).get("content-type")
        if isinstance(headers, Mapping)
        else None
    )
    return is_json_media(kind)


# The bytes a JSON document may start with: white space, a byte order mark's first, `{`, `[`.
_JSON_OPENERS = frozenset(b" \t\r\n\xef{[")


class _ReadAhead:
    """urllib3's response under boto3's `EventStream` (its `_raw_stream`), whose first piece
    was read to tell a JSON answer from events: `stream` gives that piece, then the rest;
    anything else is the response's own (`close`, `headers`...)."""

    __slots__ = ("_first", "_rest", "response")

    def __init__(self, response: Any, first: bytes, rest: Iterator[bytes]) -> None:
        self.response = response
        self._first = first
        self._rest = rest

    def stream(self, *_: object, **__: object) -> Iterator[bytes]:
        """The body's pieces, the one read ahead first (in the size it was read in: urllib3's
        default, which botocore reads in too)."""
        if self._first:
            first, self._first = self._first, b""
            yield first
        yield from self._rest

    def __getattr__(self, name: str) -> Any:
        return getattr(self.response, name)


def _json_under_event_stream(source: Any, response: Any) -> _ReadAhead | None:
    """The body under boto3's `EventStream` when it is a JSON document whatever its label says
    (a proxy's `Converse` answer or AWS error under the event-stream label), read ahead; None
    for events, which `source` then reads from the piece read ahead on. botocore read such a
    body as frames and failed at the first (`ChecksumMismatch`), every call it held lost. An
    event-stream message starts with its length (4 bytes, big endian, at most botocore's
    16 MiB and some headers): its first byte is 0 or 1, never one a JSON document starts with.
    Not asked once the body was read from (the caller read events itself), where the next
    byte is no message's start, nor of a source that is no urllib3 response."""
    tell: Any = getattr(response, "tell", None)
    pieces: Any = getattr(response, "stream", None)
    if not (callable(tell) and callable(pieces)) or tell() != 0:
        return None
    rest = iter(cast("Iterable[bytes]", pieces()))
    first = next(rest, b"")
    ahead = _ReadAhead(response, first, rest)
    if first[:1] and first[0] in _JSON_OPENERS:
        return ahead
    source._raw_stream = ahead
    return None


def _whole_body(asm: Assembler, body: bytes, *, events: bool = True) -> list[object] | None:
    """The one chunk a JSON answer to a stream request stands for: the whole response it holds
    (`feed_chunk` reads its calls) or the provider's error; None for a body that is no JSON
    document but events (a server that labels its event stream JSON), which the SDK stream
    then reads from the body kept, if `events`. One `feed_chunk` cannot read (another
    document, or no JSON where the body cannot be read again) is told as the raw SSE path
    tells these bytes, `truncated_body`, so that the stream does not end empty without a word;
    JSON that does not parse raises `json.JSONDecodeError`, a transport error, as an SDK's own
    decoding would."""
    if not body.lstrip(b" \t\r\n\xef\xbb\xbf").startswith((b"{", b"[")):
        if events:
            return None
        value: object = None
    else:
        value = json.loads(body)
    # An array of them (Gemini's `streamGenerateContent` without `alt=sse`) is read one by one,
    # as the raw SSE path reads it.
    documents = cast("list[object]", value) if isinstance(value, list) else [value]
    documents = [aws_error_event(document) or document for document in documents]
    if not (documents and all(map(_known_document, documents))):
        asm._stream_error(  # pyright: ignore[reportPrivateUsage]
            "truncated_body",
            0,
            f"the server answered a JSON document, not an event stream ({len(body)} bytes): "
            "no event was read",
        )
        return []
    return documents


def _known_document(value: object) -> bool:
    """Whether `feed_chunk` reads `value` as a response, a chunk or the provider's error."""
    if not isinstance(value, dict):
        return False
    document = cast("dict[str, object]", value)
    return (
        detect_format(document) is not None
        or whole_response_events(document) is not None
        or is_error_event(document)
    )


# How much of a urllib3 response (boto3's) is read at a time.
_PIECE = 65_536


class _AnswerBody:
    """A JSON answer's body as it is read, counted toward `max_stream_bytes` as the raw SSE path
    counts it: a body past the limit is refused as a response past it is (`stream_limit`, the
    SDK stream closed unread), never held whole."""

    __slots__ = ("_asm", "_pieces", "_size")

    def __init__(self, asm: Assembler) -> None:
        self._asm = asm
        self._pieces: list[bytes] = []
        self._size = 0

    def take(self, piece: bytes) -> bool:
        """Keeps `piece`; False (and the limit told) once the body passed the limit."""
        if not self._asm._keep_text(len(piece)):  # pyright: ignore[reportPrivateUsage]
            self._pieces.clear()
            note_limit(self._asm, 0)
            return False
        self._pieces.append(piece)
        self._size += len(piece)
        return True

    def chunks(self, response: Any) -> list[object] | None:
        """What the whole body stands for (see `_whole_body`). Its bytes are given back to the
        count, which the text read from them takes again; and to an httpx response, as its
        `read()` keeps them, for the SDK stream that reads a body of events labelled JSON."""
        self._asm._release(self._size)  # pyright: ignore[reportPrivateUsage]
        body = b"".join(self._pieces)
        if not hasattr(response, "iter_bytes"):
            # urllib3's (boto3) cannot give the body again: what is no JSON is told here.
            return _whole_body(self._asm, body, events=False)
        response._content = body
        return _whole_body(self._asm, body)


def _read_answer(asm: Assembler, response: Any) -> list[object] | None:
    """The chunks a JSON answer to a stream request stands for (`_AnswerBody`); none once its
    body passed `max_stream_bytes`."""
    body = _AnswerBody(asm)
    httpx = hasattr(response, "iter_bytes")
    for piece in response.iter_bytes() if httpx else response.stream(_PIECE):
        if not body.take(piece):
            return []
    return body.chunks(response)


async def _aread_answer(asm: Assembler, response: Any) -> list[object] | None:
    """`_read_answer` for an async SDK stream's response."""
    body = _AnswerBody(asm)
    async for piece in response.aiter_bytes():
        if not body.take(piece):
            return []
    return body.chunks(response)


async def _each(chunks: list[object]) -> AsyncIterator[object]:
    """`chunks` as an async stream: what an async SDK stream's JSON answer stands for."""
    for chunk in chunks:
        yield chunk


def _refuse_raw_response(source: object, wrapper: str) -> None:
    """`MisuseError` for an SDK's raw HTTP response, naming the `.parse()` that gives its
    stream; nothing for anything else. Refused unread, the response stays the caller's."""
    name = _sdk_instance(source, _RAW_RESPONSES)
    if name is None:
        return
    parse: object = getattr(source, "parse", None)
    awaited = "await " if inspect.iscoroutinefunction(parse) else ""
    raise MisuseError(
        f"{wrapper} takes the stream that .parse() makes of a {name} "
        f"(with_raw_response, with_streaming_response), not the response: "
        f"{wrapper}({awaited}response.parse())"
    )


def _sdk_instance(source: object, classes: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    """The name of the SDK class in `classes` that `source` is an instance of, if any."""
    for module_name, names in classes:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        members = vars(module)
        for name in names:
            cls = members.get(name)
            if isinstance(cls, type) and isinstance(source, cls):
                return name
    return None


def chunk_source(source: Any) -> Any:
    """The chunk stream inside `source`, or `MisuseError` for what is not a stream of chunks.

    A dict, str or bytes is iterable too, but over keys or characters: read as a stream, it
    would give no calls and no error; so would a tool stream's events. boto3's
    `converse_stream` response is a dict whose `stream` member is the stream, and is taken as
    such. An SDK stream helper stands for the provider's events under it.
    """
    if _sdk_instance(source, _WHOLE_RESPONSES) is not None:
        # `create(...)` without `stream=True`: the whole response is the stream's one chunk.
        return [source]
    if _sdk_instance(source, _STREAM_HELPERS) is not None:
        # An SDK that no longer has it: the helper's own events are read (`feed_chunk` takes
        # the chunks out of openai's `chunk` events and skips the events derived from them).
        raw: object = getattr(source, "_raw_stream", None)
        return source if raw is None else raw
    if isinstance(source, _StreamBase):
        # Its items are events, which `feed_chunk` skips as chunks of no format it knows: the
        # outer stream would give no calls and no error, and the inner's events would be gone.
        raise MisuseError(
            f"assemble takes an SDK stream, not a tool stream ({type(source).__name__}): "
            "its items are events, not chunks; read the events of that one"
        )
    manager = _sdk_instance(source, _HELPER_MANAGERS)
    if manager is not None:
        raise MisuseError(
            f"assemble takes the stream a {manager} gives when entered, not the manager: "
            "with client.<...>.stream(...) as stream: assemble(stream)"
        )
    assistants = _sdk_instance(source, _ASSISTANT_STREAMS)
    if assistants is not None:
        raise MisuseError(
            f"assemble does not read Assistants run events ({assistants}): "
            "stream with chat.completions.create or responses.create instead"
        )
    if isinstance(source, Mapping):
        inner = cast("Mapping[object, object]", source).get("stream")
        if inner is not None and not isinstance(inner, Mapping | str | bytes):
            return inner
        raise MisuseError(
            "assemble takes a stream of chunks, not a dict; for a boto3 converse_stream "
            "response pass response['stream']"
        )
    if isinstance(source, str | bytes | bytearray | memoryview):
        kind = type(cast("object", source)).__name__
        raise MisuseError(
            f"assemble takes a stream of chunks, not {kind}; "
            "for raw SSE bytes use Assembler.feed_sse"
        )
    return source


def _iterable(source: object) -> bool:
    cls = type(source)
    return callable(getattr(cls, "__iter__", None)) or callable(getattr(cls, "__getitem__", None))


def _async_iterable(source: object) -> bool:
    return callable(getattr(type(source), "__aiter__", None))


def _kind(source: object) -> str:
    return type(source).__name__


def _awaitable_kind(source: object) -> str:
    return "a coroutine" if inspect.iscoroutine(source) else f"an awaitable ({_kind(source)})"


def _discard(awaitable: object) -> None:
    # A coroutine refused unawaited: its work never starts (for an SDK's `create`, no request
    # was sent), and closing it spares the caller a "never awaited" warning on top of the error.
    if inspect.iscoroutine(awaitable):
        awaitable.close()


def _sync_source(source: Any) -> Any:
    """`source` if `assemble` can iterate it; otherwise a `MisuseError` that names the fix.

    Iterated, an async stream or a coroutine raises a bare `TypeError` at the first read, far
    from the mistake, and a `with` block would call the async stream's `close` unawaited,
    leaving its response open.
    """
    _refuse_raw_response(source, "assemble")
    if _iterable(source):
        return source
    if _async_iterable(source):
        raise MisuseError(
            f"assemble takes a sync stream; {_kind(source)} is async: "
            "read it with aassemble (async for / async with)"
        )
    if inspect.isawaitable(source):
        _discard(source)
        raise MisuseError(
            f"assemble takes a stream, not {_awaitable_kind(source)}: an async client's "
            "create(..., stream=True) must be awaited, and its stream read with aassemble"
        )
    raise MisuseError(f"assemble takes a stream of chunks; {_kind(source)} is not iterable")


def _async_source(source: Any) -> Any:
    """`source` if `aassemble` can iterate it; otherwise a `MisuseError` that names the fix."""
    _refuse_raw_response(source, "aassemble")
    if _async_iterable(source):
        return source
    if inspect.isawaitable(source):
        _discard(source)
        raise MisuseError(
            f"aassemble takes the stream, not {_awaitable_kind(source)}: did you forget await? "
            "aassemble(await client....create(..., stream=True))"
        )
    if _iterable(source):
        raise MisuseError(
            f"aassemble takes an async stream; {_kind(source)} is sync: read it with assemble"
        )
    raise MisuseError(
        f"aassemble takes an async stream of chunks; {_kind(source)} is not async iterable"
    )


def _current_task() -> asyncio.Task[Any] | None:
    """The running asyncio task; None outside one (trio under anyio, a plain coroutine)."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


def _running(events: object) -> bool:
    """Whether an async generator is running: a task is inside its `__anext__`."""
    return inspect.isasyncgen(events) and events.ag_running


def _response_socket(source: object) -> socket.socket | None:
    """The socket under an httpx-based SDK stream (openai's, anthropic's), if it can be found."""
    try:
        response = getattr(source, "response", None)
        extensions: object = getattr(response, "extensions", None)
        if not isinstance(extensions, Mapping):
            return None
        stream = cast("Mapping[str, object]", extensions).get("network_stream")
        get_extra_info: Any = getattr(stream, "get_extra_info", None)
        sock: object = get_extra_info("socket") if callable(get_extra_info) else None
    except Exception:  # an attribute of someone else's object that raises: only close it
        return None
    return sock if isinstance(sock, socket.socket) else None


def _socket_being_read(thread_id: int, stream: object, read: CodeType) -> socket.socket | None:
    """The socket that thread `thread_id` is reading the source of `stream` from, if any.

    A source that does not show its response (google-genai's stream is a generator, boto3's
    `EventStream` keeps a urllib3 response) is read by the HTTP client's own frames, down to one
    whose `self` is the socket or holds it as `_sock` (the socket module's `SocketIO`,
    httpcore's `SyncStream`). That socket counts only if the first frame of `stream` above it
    runs `read`, the loop over the source: one that the application's own validator reads (the
    stream validates calls on the same thread) is none of the stream's. The frames above are the
    consumer's, and not looked at.
    """
    frame = sys._current_frames().get(thread_id)  # pyright: ignore[reportPrivateUsage]
    found: socket.socket | None = None
    while frame is not None:
        try:
            owner = frame.f_locals.get("self")
            if owner is stream:
                return found if frame.f_code is read else None
            sock: object = (
                owner if isinstance(owner, socket.socket) else getattr(owner, "_sock", None)
            )
        except Exception:  # someone else's object: look further up
            sock = None
        if found is None and isinstance(sock, socket.socket):
            found = sock
        frame = frame.f_back
    return None


def _shut_down(sock: socket.socket | None) -> None:
    """Shut `sock` down: a thread blocked reading it wakes at once. Closing the response alone
    closes the socket, which does not wake a read already waiting on it (it would wait for the
    client's read timeout: ten minutes for openai's, none at all for google-genai's), and
    boto3's close even waits for that read to end."""
    if sock is not None:
        with contextlib.suppress(OSError):
            # The plain socket's shutdown, also for TLS: `SSLSocket.shutdown` would first drop
            # the TLS state the reading thread is using.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _SourceCloser:
    """Closes a stream's source once, from whichever thread or task gets there first."""

    __slots__ = ("_closed", "_lock", "_source")

    def __init__(self, source: object) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._closed = False

    def _claim(self, source: object) -> bool:
        if (inspect.isgenerator(source) and source.gi_running) or (
            inspect.isasyncgen(source) and source.ag_running
        ):
            # A generator cannot be closed while it runs (its reader is inside it); the reader
            # closes it when it stops, at the next chunk.
            return False
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            return True

    def close(self, *, concurrent: bool = False, reading: socket.socket | None = None) -> None:
        """Close the source; with `concurrent`, a thread is reading it, perhaps blocked on
        `reading` (the socket it reads, if known), and is woken first. Best effort: a source
        whose socket is not found is only closed."""
        source = self._source
        if concurrent:
            _shut_down(_response_socket(source) or reading)
        if not self._claim(source):
            return
        close: Any = getattr(source, "close", None)
        if not callable(close) or inspect.iscoroutinefunction(close):
            return
        if not concurrent:
            close()
            return
        try:
            close()
        except Exception as exc:
            # Closed under its reader, an SDK stream may trip over the read it cut short; the
            # reader ends either way, as a close ends the stream.
            _log.debug("toolwire: closing the stream under its reader raised %r", exc)

    async def aclose(self) -> None:
        source = self._source
        if not self._claim(source):
            return
        close: Any = getattr(source, "aclose", None) or getattr(source, "close", None)
        if callable(close):
            result = close()
            if inspect.isawaitable(result):
                await result


class _StreamBase(LiveState):
    """Results shared by `ToolStream` and `AsyncToolStream`."""

    _not_copied = "it reads a live provider stream. Pickle the events or calls it gives instead"

    __slots__ = ("_driver", "_ended_by_close")

    def __init__(
        self, tools: Toolset | None, progress: bool, limits: AssemblerLimits | None
    ) -> None:
        self._driver = _Driver(tools, progress, limits)
        # The events of a close that came while nobody was reading, kept for the reader.
        self._ended_by_close: list[Event] = []

    def _end_for_close(self) -> None:
        """End the calls now, for a close that came while nobody was reading (between two
        reads, or before the first): `.calls` is whole at once, and the events of that end
        wait for a reader that comes back (another thread or task may have closed the stream
        between two of its reads), after what the last chunk had not yet given."""
        self._ended_by_close = self._driver.end(interrupted=True)
        self._driver.assembler.release_finished()

    def _end_unread(self) -> None:
        """End the calls when the stream's generator stops before it gave their end: an
        exception that is no transport error, or a cancellation (a per-read timeout), went up
        from the read. `.calls` is whole at once, and a reader that comes back gets the end
        events, as after a close, so that each call that started completes exactly once."""
        events = self._driver.end(interrupted=True)
        if events:
            self._ended_by_close = events

    def _unread_end(self) -> Event | None:
        """The next end event `_end_unread` kept, once the generator is done."""
        return self._ended_by_close.pop(0) if self._ended_by_close else None

    def _end_events(self, error: BaseException | None, *, interrupted: bool) -> list[Event]:
        """The events that end the stream: those a close already made, or the driver's end."""
        if self._ended_by_close:
            events, self._ended_by_close = self._ended_by_close, []
            return events
        return self._driver.end(error, interrupted=interrupted)

    @property
    def assembler(self) -> Assembler:
        """The stream's `Assembler` (for `partial`, or to inspect state while streaming)."""
        return self._driver.assembler

    @property
    def calls(self) -> list[ToolCall]:
        """Every call in ordinal order; complete once iteration ended (what `finish()` returned)."""
        return self._driver.calls

    @property
    def outcomes(self) -> list[Outcome]:
        """The toolset's verdict for each call, in call order; empty without tools."""
        return self._driver.outcomes

    @property
    def text(self) -> str:
        """The assistant text received so far."""
        return "".join(self._driver.text_parts)

    @property
    def reasoning(self) -> list[dict[str, Any]]:
        """The reasoning that ended whole so far (`Assembler.reasoning`: Anthropic's thinking
        blocks, Responses `reasoning` and hosted items, Bedrock `reasoningContent` blocks, Gemini
        thought parts), to send back with the calls:
        `assistant_turn(calls, style=..., text=..., reasoning=stream.reasoning)`."""
        driver = self._driver
        return driver.reasoning if driver.done else driver.assembler.reasoning

    @property
    def text_places(self) -> list[list[int | str | list[dict[str, Any]]]] | None:
        """Where each text block of a turn with no call began (`Assembler.text_places`), once
        the stream ended, to send its text back in its blocks and places:
        `assistant_turn([], style=..., text=..., reasoning=..., text_places=stream.text_places)`.
        `None` with calls (they carry the places), or before the end."""
        return self._driver.text_places

    @property
    def finish_reason(self) -> str | None:
        """The provider's stop reason as sent, `None` before it arrives or if the stream broke."""
        return self._driver.finish_reason

    @property
    def usage(self) -> dict[str, Any] | None:
        """Token usage as a plain dict, if the provider sent it."""
        return self._driver.usage

    @property
    def container(self) -> str | None:
        """The id of the code-execution container the response runs in (Anthropic's
        `container`), `None` until the stream names one: continue a `pause_turn` with
        `container=stream.container`."""
        return self._driver.container

    @property
    def format(self) -> WireFormat | None:
        """The detected wire format, `None` until the first telling chunk."""
        return self._driver.assembler.chunk_format

    @property
    def transport_error(self) -> BaseException | None:
        """The exception that cut the stream off (connection drop, timeout, provider error)."""
        return self._driver.transport_error

    def raise_for_transport_error(self) -> None:
        """Re-raise `transport_error` if the stream was cut off; do nothing otherwise.

        Raises:
            BaseException: The exception the SDK raised while the stream was read.
        """
        error = self._driver.transport_error
        if error is not None:
            raise error

    def partial(
        self,
        ordinal: int,
        *,
        floats: Literal["float", "decimal", "lossless"] = "float",
        flags: bool = False,
    ) -> object:
        """The partial arguments value of a call (`toolwire.NO_VALUE` if none).

        Once the stream ended (the last `ArgumentsProgress` items and every `CallCompleted`
        come after that), the value of the finished call: its `value`, or for a call that
        ended with an error, what its text held before it.

        Args:
            ordinal: The call's ordinal from `CallStarted`.
            floats: How numbers that are not integers are handed over: `"float"`, `"decimal"`
                (`decimal.Decimal` of the exact text) or `"lossless"` (`LosslessFloat`).
                Integers are `int` in every mode.
            flags: Return a tree of `PartialNode`s, each with its `value` and whether it is
                `complete` (the text did not end inside it); `plain()` gives the value without
                them. Every node of a call that finished without error is complete.

        Returns:
            A value that later chunks only extend, never take back.

        Raises:
            MisuseError: If no call has that ordinal, or for an unknown `floats` mode.
        """
        driver = self._driver
        calls = driver.calls
        if not isinstance(cast(object, ordinal), int) or isinstance(ordinal, bool):
            # The core's own refusal; after the end, a comparison below would raise a bare
            # `'<=' not supported` instead.
            return driver.assembler.partial(ordinal, floats=floats, flags=flags)
        if driver.assembler.finished and ordinal >= len(calls):
            # The assembler's "already finished" would send the caller to a `finish` the
            # stream made, for a call that never was.
            raise MisuseError(f"no call with ordinal {ordinal}: the stream had {len(calls)}")
        if not driver.assembler.finished or not 0 <= ordinal < len(calls):
            return driver.assembler.partial(ordinal, floats=floats, flags=flags)
        call = calls[ordinal]
        if call.error is None and floats == "float" and not flags:
            return call.value
        # The text read as the stream's assembler read it (its defaults are the same); a call
        # that finished without error has its whole text, so the scanner calls it complete.
        shared: Any = {k: v for k, v in driver.limits.items() if k in _SCANNER_LIMITS}
        scanner = Scanner(**shared)
        scanner.push(call.arguments)
        return scanner.partial(floats=floats, flags=flags)


class ToolStream(_StreamBase):
    """Events from a synchronous SDK stream; iterate once, use as a context manager.

    Example:
        >>> source = client.chat.completions.create(..., stream=True)  # doctest: +SKIP
        >>> with assemble(source) as stream:  # doctest: +SKIP
        ...     for event in stream:
        ...         ...
        >>> stream.calls  # doctest: +SKIP
    """

    __slots__ = (
        "_closer",
        "_closing",
        "_ending",
        "_events",
        "_reader",
        "_reading",
        "_source",
    )

    def __init__(
        self,
        source: Iterable[object],
        tools: Toolset | None = None,
        *,
        progress: bool = True,
        limits: AssemblerLimits | None = None,
    ) -> None:
        """Wrap `source`; nothing is read until iteration starts.

        Args:
            source: What `create(..., stream=True)` returned, an SDK stream helper entered
                with `with client....stream(...) as source`, or any iterable of chunks;
                boto3's `converse_stream` response dict stands for its `stream` member.
            tools: A `Toolset` to pre-check and validate calls against.
            progress: Emit `ArgumentsProgress` events.
            limits: The assembler's limits (`AssemblerLimits`), where the defaults do not fit.

        Raises:
            MisuseError: `source` is a dict (other than a boto3 response), str or bytes, a
                stream helper's manager not yet entered or an Assistants run stream, an async
                stream or a coroutine (use `aassemble`), or not iterable at all; or a limit is
                out of range.
        """
        super().__init__(tools, progress, limits)
        self._source: Iterable[object] = _sync_source(chunk_source(source))
        # Held by the thread inside `__next__`: a second reader is refused, and `close` from
        # another thread knows it cannot close the generator that thread is running.
        self._reading = threading.Lock()
        # The thread inside `__next__`: a close from another thread wakes it from its read.
        self._reader: int | None = None
        # The thread of a close that holds the reading lock while it ends the calls.
        self._ending: int | None = None
        self._closing = False
        self._closer = _SourceCloser(self._source)
        self._events = self._run()

    def _run(self) -> Generator[Event, None, None]:
        driver = self._driver
        try:
            error: Exception | None = None
            try:
                for chunk in self._chunks_of(self._until_closed()):
                    yield from driver.chunk(chunk)
                    if fed_past_limit(driver.assembler):
                        break
            except Exception as exc:
                # Whatever a source closed under its reader raises, the close caused it.
                if not (self._closing or is_transport_error(exc)):
                    raise
                error = exc
            if fed_past_limit(driver.assembler):
                # Nothing more of the response is kept and every call fails: reading on would
                # only download (and bill) a runaway response to its end for its usage.
                self._closer.close()
            if self._closing:
                yield from self._end_events(None, interrupted=True)
            else:
                yield from self._end_events(error, interrupted=False)
        finally:
            # Reached without end() when the consumer closed early or a non-transport error
            # propagated: finish quietly so .calls is complete and no call reads as usable.
            self._end_unread()
            # The stream object (and its assembler) may be kept long after; the last events
            # are already out, so freeing the calls' working state here delays nothing.
            driver.assembler.release_finished()
            if self._closing:
                # Closed from another thread: the source is closed here too, by its reader.
                self._closer.close()

    def _until_closed(self) -> Iterator[object]:
        answer = _json_answer(self._source)
        whole = None if answer is None else _read_answer(self._driver.assembler, answer)
        if whole is not None:
            yield from whole
            return
        # A chunk that arrives once `close` was called (from another thread) is not read.
        for chunk in self._source:
            if self._closing:
                return
            yield chunk

    def _chunks_of(self, source: Iterable[object]) -> Iterable[object]:
        """The chunks read from the SDK stream (a subclass may watch them pass)."""
        return source

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if not self._reading.acquire(blocking=False) and not self._wait_for_close():
            raise MisuseError(
                "this stream is being read by another thread (or from inside its own "
                "iteration); read it from one thread (close() may come from any)"
            )
        self._reader = threading.get_ident()
        try:
            return next(self._events)
        except StopIteration:
            event = self._unread_end()
            if event is None:
                raise
            return event
        finally:
            self._reader = None
            self._reading.release()

    def _wait_for_close(self) -> bool:
        """Take the reading lock from a close that holds it, once that close is done.

        A close that finds nobody reading holds the lock while it ends the calls, which runs
        the application's validators and may take a while: the reader that comes back
        meanwhile is the stream's one reader, and gets the ends the close leaves. A lock held
        by a reader (`_reader` set) is a second reader's mistake, and a read from inside that
        close (a validator that reads the stream) would wait for itself; False then.
        """
        if not self._closing or self._reader is not None or self._ending == threading.get_ident():
            return False
        self._reading.acquire()
        return True

    def close(self) -> None:
        """Stop reading: close the SDK stream (releasing its connection) and finish quietly.

        It may be called from any thread, and more than once. `.calls` is complete when it
        returns, unless another thread is inside `next` then: the close cuts that read short
        and returns at once, and `.calls` is complete when that reader gets its first end
        event. A reader that goes on (another thread waiting in `next` for a chunk, whose
        wait is cut short, or one that comes back after the close) gets what the last chunk had
        not yet given, then the events an early close gives: each call that had started
        completes, cut off, then `StreamEnded` without a finish reason; one that comes back
        while the close ends the calls waits for it.
        """
        self._closing = True
        if self._reading.acquire(blocking=False):
            self._ending = threading.get_ident()
            try:
                if not self._driver.done:
                    self._end_for_close()
            finally:
                self._ending = None
                self._reading.release()
            self._closer.close()
        else:
            # The generator runs on another thread, perhaps blocked in a read of the socket,
            # which closing the response there does not wake: shut the socket down first.
            reader = self._reader
            reading = (
                None
                if reader is None
                else _socket_being_read(reader, self, ToolStream._until_closed.__code__)
            )
            self._closer.close(concurrent=True, reading=reading)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncToolStream(_StreamBase):
    """Events from an asynchronous SDK stream; iterate once, use as an async context manager."""

    __slots__ = ("_closer", "_closing", "_events", "_reader", "_source", "_waking")

    def __init__(
        self,
        source: AsyncIterable[object],
        tools: Toolset | None = None,
        *,
        progress: bool = True,
        limits: AssemblerLimits | None = None,
    ) -> None:
        """Wrap `source`; nothing is read until iteration starts.

        Args:
            source: What `await create(..., stream=True)` returned, an SDK stream helper
                entered with `async with client....stream(...) as source`, or any async
                iterable.
            tools: A `Toolset` to pre-check and validate calls against.
            progress: Emit `ArgumentsProgress` events.
            limits: The assembler's limits (`AssemblerLimits`), where the defaults do not fit.

        Raises:
            MisuseError: `source` is a dict, str or bytes, a stream helper's manager not yet
                entered or an Assistants run stream, a coroutine not awaited, a sync stream
                (use `assemble`) or no async iterable at all; or a limit is out of range.
        """
        super().__init__(tools, progress, limits)
        self._source: AsyncIterable[object] = _async_source(chunk_source(source))
        self._closing = False
        self._closer = _SourceCloser(self._source)
        # The task inside `__anext__`, and whether a close cancelled it to wake it (see `aclose`).
        self._reader: asyncio.Task[Any] | None = None
        self._waking = False
        self._events = self._run()

    async def _run(self) -> AsyncGenerator[Event, None]:
        driver = self._driver
        try:
            error: Exception | None = None
            woken = False
            try:
                try:
                    answer = _json_answer(self._source)
                    whole = (
                        None if answer is None else await _aread_answer(driver.assembler, answer)
                    )
                    async for chunk in self._source if whole is None else _each(whole):
                        if self._closing:
                            break
                        for event in driver.chunk(chunk):
                            yield event
                        if fed_past_limit(driver.assembler):
                            break
                finally:
                    woken = self._withdraw_wake()
            except asyncio.CancelledError:
                # The cancellation that `aclose` sent to wake this read ends the stream as the
                # close does; anyone else's goes on up.
                if not woken:
                    raise
            except Exception as exc:
                # Whatever a source closed under its reader raises, the close caused it.
                if not (self._closing or is_transport_error(exc)):
                    raise
                error = exc
            if fed_past_limit(driver.assembler):
                # As in `ToolStream`: the rest of a runaway response is not downloaded.
                await self._closer.aclose()
            for event in self._end_events(
                None if self._closing else error, interrupted=self._closing
            ):
                yield event
        finally:
            self._end_unread()
            driver.assembler.release_finished()
            if self._closing:
                await self._closer.aclose()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        if _running(self._events):
            raise MisuseError(
                "this stream is being read by another task; read it from one task "
                "(aclose() may come from any)"
            )
        self._reader = _current_task()
        try:
            return await self._events.__anext__()
        except StopAsyncIteration:
            event = self._unread_end()
            if event is None:
                raise
            return event
        finally:
            self._reader = None

    def _wake_reader(self) -> None:
        """Cancel the reading task's wait in a source that a close cannot reach: an async
        generator (google-genai's stream) cannot be closed while the reader is inside it, nor
        does it show its response. `_run` takes that cancellation back and ends the stream as
        the close does. Only where asyncio can take it back (`Task.uncancel`, Python 3.11+);
        elsewhere the reader goes on until the source gives its next chunk."""
        reader = self._reader
        if (
            reader is None
            or reader is _current_task()
            or not hasattr(reader, "uncancel")
            or self._driver.done
            or not (_running(self._events) and _running(self._source))
        ):
            return
        self._waking = True
        reader.cancel()

    def _withdraw_wake(self) -> bool:
        """Take back the cancellation `_wake_reader` sent, if it did (the source may have
        swallowed it, or given its chunk first); True if no other cancellation is pending."""
        if not self._waking:
            return False
        self._waking = False
        task = _current_task()
        uncancel: Any = getattr(task, "uncancel", None)
        return callable(uncancel) and uncancel() == 0

    async def aclose(self) -> None:
        """Stop reading: close the SDK stream (releasing its connection) and finish quietly.

        It may be awaited from any task of the stream's event loop, and more than once.
        `.calls` is complete when it returns, unless another task is inside `__anext__` then:
        the close cuts that read short and returns, and `.calls` is complete when that reader
        gets its first end event. A reader that goes on (another task waiting in
        `__anext__` for a chunk, whose wait is cut short, or one that comes back after the
        close) gets what the last chunk had not yet given, then the events an early close
        gives: each call that had started completes, cut off, then `StreamEnded` without a
        finish reason.
        """
        self._closing = True
        if not _running(self._events) and not self._driver.done:
            self._end_for_close()
        # Closing the source under a reading task wakes it (the read fails); one that cannot be
        # closed under it is woken by a cancellation.
        self._wake_reader()
        await self._closer.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def assemble(
    stream: Iterable[object],
    tools: Toolset | None = None,
    *,
    progress: bool = True,
    limits: AssemblerLimits | None = None,
) -> ToolStream:
    """Wrap a synchronous SDK stream and yield `toolwire.events` as chunks arrive.

    Accepts what `client.chat.completions.create(..., stream=True)`,
    `client.responses.create(..., stream=True)`, Anthropic's
    `client.messages.create(..., stream=True)` and google-genai's
    `client.models.generate_content_stream(...)` return, boto3's Bedrock
    `client.converse_stream(...)` response (or its `["stream"]`), or any iterable of such chunks
    or dicts. The SDKs' stream helpers (`with client.chat.completions.stream(...) as s`,
    `client.responses.stream(...)`, Anthropic's `client.messages.stream(...)`, and their `beta`
    spellings) are read through the provider's events under them, which give the same calls as
    `create(..., stream=True)`; the helper's own snapshot (`get_final_message()`,
    `get_final_completion()`, `get_final_response()`) is then not built. Where the server
    answered a stream request with one JSON document (the openai and anthropic SDK streams
    yield nothing for it, boto3's cannot decode it), the body is read as the whole response
    it holds (a Bedrock `Converse` response too), counted toward `max_stream_bytes` as it is
    read: one past the limit is not read on. A whole response handed over (`create(...)`
    without `stream=True`) is read the same way.

    Args:
        stream: The SDK stream.
        tools: A `Toolset`; when given, calls are pre-checked while streaming and each
            `CallCompleted` carries `tools.validate(call)`.
        progress: Emit `ArgumentsProgress` events (decoded argument text per JSON Pointer).
        limits: The limits of the stream's `Assembler`, under its keyword names
            (`{"max_stream_bytes": 4_000_000}`); the others keep their defaults. Once a chunk
            takes the response past one, the SDK stream is closed unread (a runaway response
            is not downloaded to its end): the stream ends with no finish reason and only the
            usage that had arrived.

    Returns:
        A single-use iterator of events and a context manager that closes the SDK stream.

    Raises:
        MisuseError: `stream` is one dict (other than boto3's `converse_stream` response,
            which stands for its `stream`), a str or bytes, a stream helper's manager not yet
            entered (`client.messages.stream(...)` without `with`), an Assistants run stream,
            a tool stream or the HTTP response `with_raw_response` / `with_streaming_response`
            give (pass its `.parse()`): not a stream of chunks; an async stream or a coroutine
            (use `aassemble`), or not iterable at all; or a limit is out of range.
    """
    return ToolStream(stream, tools, progress=progress, limits=limits)


def aassemble(
    stream: AsyncIterable[object],
    tools: Toolset | None = None,
    *,
    progress: bool = True,
    limits: AssemblerLimits | None = None,
) -> AsyncToolStream:
    """Async twin of `assemble` for `AsyncOpenAI` / `AsyncAnthropic` streams (and their stream
    helpers, entered with `async with`) and google-genai's
    `await client.aio.models.generate_content_stream(...)`.

    Args:
        stream: The async SDK stream (already awaited: `await client...create(stream=True)`).
        tools: A `Toolset`; see `assemble`.
        progress: Emit `ArgumentsProgress` events.
        limits: The limits of the stream's `Assembler`; see `assemble`.

    Returns:
        A single-use async iterator of events and an async context manager.

    Raises:
        MisuseError: `stream` is a dict, str or bytes, a stream helper's manager not yet
            entered, an Assistants run stream, a tool stream or an HTTP response (pass its
            `.parse()`): not a stream of chunks; a coroutine not awaited, a sync stream (use
            `assemble`) or no async iterable at all; or a limit is out of range.
    """
    return AsyncToolStream(stream, tools, progress=progress, limits=limits)
