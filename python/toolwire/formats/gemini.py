"""Gemini native API (`generateContent` streaming) chunks to assembler calls.

Design notes:
- Chunks are `GenerateContentResponse` objects of the `google-genai` SDK (snake_case fields, the
  finish reason an enum, the thought signature decoded to bytes) or dicts of the REST shape
  (camelCase fields, the signature in base64). Every field is read under both spellings, so a
  dict of either shape (`model_dump()` gives snake_case) reads the same.
- Every `functionCall` part is one whole call: `args` arrives as an object and is fed as the
  complete value. Calls have no wire index, so each gets its own key (a running count) and two
  calls never merge, in one chunk or across chunks. The one exception is quirk 33: a part with
  a name and no `args`, followed by a part with `args` and no name, is one call. A name-only
  part that no such part follows is a function without parameters: `{}`, once another call
  starts or the candidate stops naturally. Cut off by the output limit or a broken stream, it
  is `truncated` (the core's `limit_reached` / `interrupt`), since its arguments may have been
  on their way. Gemini sends no index: `ToolCall.index` reports that key, the call's position
  among the answer's calls.
- Vertex AI streams the arguments of one call over several parts when asked
  (`streamFunctionCallArguments`): the first part names the call with `willContinue`, the next
  ones carry `partialArgs` (a JSON Path and a scalar, strings continued piece by piece) until a
  part without `willContinue` (as google-genai's `FunctionCall` and `PartialArg` describe it;
  not checked against a live Vertex stream). The pieces are merged into one object, fed when
  the call closes. With progress tracking, each value merged is recorded as a progress item as
  it arrives (`Sink._record_progress`: a string piece's text appended at its path's JSON
  Pointer, a number's or literal's JSON text as the merged object writes it), and the text fed
  at the close adds no items of its own. Nothing is recorded for a piece that breaks the call,
  nor after it, nor from a value with a lone surrogate (the call is `lone_surrogate`):
  `Sink._stop_progress` keeps the call's text from adding items then too. Without progress
  tracking nothing is done for it at all.
  A call still waiting for pieces when the candidate or the stream ends is fed as the text it
  has, without its closing brace, so it ends `truncated`; pieces that cannot be merged (a path
  that is not one, a value where another shape already is) end it as `mixed_arguments`. Never
  a silent `{}`.
- A thought signature (quirk 31) is kept per call as metadata `thought_signature`, in base64 as
  the REST API sends it. It sits on the call's own part (with quirk 33, on either of its two
  parts); a part that carries nothing but a signature belongs to the call before it, or, after
  text, to that text, or, when no call came yet, to the next one. One that none of them takes
  (a second one after signed text, one before text, one that no call followed when the
  candidate finished) is an empty text block of its own, signed (`_signed_part`), so that the
  next turn sends it back where it came rather than losing it. Signatures on thought parts
  are theirs, not a call's. One on a text part (or a signature-only part after text: Gemini
  signs an answer without calls on its last part) goes with the place of that part's text
  block (`Sink._sign_text_block`) and ends the block, so that the next turn sends it back on
  that part, as Gemini requires.
- Text parts make `ChunkInfo.text`; thought parts (`thought: true`) are the model's reasoning
  and are left out of it, as the Anthropic adapter leaves thinking blocks out. They are kept
  for the next turn instead (`Assembler.reasoning`), as google-genai's chats send every part
  back: the thought parts in a row are one thought, `{"text", "thought": true}` with the
  `thoughtSignature` of its last part, which ends it (Gemini wants a signature back on the
  part it came on); another part, the finish reason or the end of the stream ends it too. Its
  bytes count toward `max_stream_bytes` from its first part (`_reasoning.hold`); an error
  chunk lets the one streaming go. A call after some gets their number as metadata
  `reasoning_before`, and a text block's place counts them, so that the next turn sends each
  back where it came. The first text part,
  and the first after a call, a thought part or a signed text part, starts a block of text
  (`Sink._text_block`): its place among the calls goes on them at finish (metadata
  `text_before`, `text_after`; without calls, `Assembler.text_places`), so that the next turn
  sends text written after a call after it, each block a part of its own. Text parts in a row,
  in one chunk or across chunks, are one block: a stream cuts one text into parts.
- Only candidate 0 is assembled (a missing `index` is 0, as the REST API omits it); other
  candidates are independent answers whose calls would otherwise be merged.
- Finish reasons are reported as sent (`STOP`, `MAX_TOKENS`, ...). `STOP` comes with or without
  calls (quirk 34): whether a call is usable is decided from the call. The output limit is
  `limit_reached`; the reasons after which no call may run stop every call (see `_ABORTS` and
  `_types.STOPPING_REASONS`). A `promptFeedback.blockReason` means the prompt was blocked: it
  is the finish reason and stops every call.
- Usage (`usageMetadata`, camelCase members on both paths) is merged as the other adapters do.
- An `{"error": ...}` chunk (the SDK raises it) ends the answer: every call stops, the finish
  reason is `error`, and calls that still follow do not run either.
- `feed_sse` reads the same chunks from raw SSE bytes in Rust (`rust/src/envelope/gemini.rs`),
  feeding the core what this adapter feeds it (`partialArgs` merged in
  `rust/src/envelope/partial_args.rs`); a change here belongs there too. Where the raw path
  cannot be this adapter's twin (it keeps the numbers of a whole `args` as sent, and ends a call
  `lost_event` where a piece holds what only Python reads), its design notes say so.
"""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass, field
from enum import Enum
from itertools import pairwise
from typing import Any, cast

from toolwire.coercion import JSON_NUMBER
from toolwire.formats._fields import (
    arguments_of,
    copy_usage,
    get,
    index_of,
    merge_usage,
    plain,
    str_or_none,
)
from toolwire.formats._reasoning import Thought, close, drop, sign, think
from toolwire.formats._types import (
    Arguments,
    ChunkInfo,
    FeedRecord,
    Sink,
    WireFormat,
    after_provider_error,
    folded_reason,
    gave_up,
    is_limit,
    stops_calls,
)
from toolwire.formats._utf16 import Utf16, join_pairs, string_piece, surrogate_in

__all__ = ["GeminiAdapter"]

# Gemini's own finish reasons after which no call may run, beyond the filters every format
# shares (`_types.STOPPING_REASONS`: `safety`, `recitation`, `blocklist`, ...):
_ABORTS = frozenset(
    {
        # The model wrote a call that could not be parsed: what arrived of it is not the call.
        "malformed_function_call",
        # A call to a tool that was not offered (or with tools off): it must not run.
        "unexpected_tool_call",
        # The server rejected the turn (a signature of an earlier call was not sent back).
        "missing_thought_signature",
        # The server could not produce a well-formed response.
        "malformed_response",
        # Stopped for a reason Gemini does not state: nothing says the answer is whole.
        "other",
        "image_other",
    }
)
# Decided from the calls instead (quirk 34): `STOP` (a natural end, with or without calls),
# `TOO_MANY_TOOL_CALLS` (the server's own tool loop stopped; the calls that came are whole),
# `NO_IMAGE` (an image was expected; calls are unaffected). `MAX_TOKENS` and `CONTINUATION`
# are the output limit (`_types.LIMIT_REASONS`).
# `*_UNSPECIFIED` is the enum's zero value: no reason at all.
_UNSPECIFIED = frozenset({"finish_reason_unspecified", "blocked_reason_unspecified"})
# Part fields that make a part more than a carrier of a signature.
_CONTENT = (
    ("inline_data", "inlineData"),
    ("file_data", "fileData"),
    ("executable_code", "executableCode"),
    ("code_execution_result", "codeExecutionResult"),
    ("function_response", "functionResponse"),
)
_CAMEL = re.compile(r"_([a-z0-9])")
# One step of an RFC 9535 normalized path: `.name`, `['name']`, `["name"]` or `[0]`.
_STEP = re.compile(r"""\.([^.\[\]'"]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]""")


def _field(obj: object, snake: str, camel: str) -> object:
    """A field under its SDK (snake_case) or REST (camelCase) name."""
    value = get(obj, snake)
    return get(obj, camel) if value is None else value


def _reason(value: object) -> str | None:
    """A finish or block reason as sent: the SDK's enum by its value, `None` for none."""
    if isinstance(value, Enum):
        value = value.value
    reason = str_or_none(value)
    if not reason or folded_reason(reason) in _UNSPECIFIED:
        return None
    return reason


# Deeper than usage is ever read (`merge_usage` drops what nests past 128 levels): the names
# below are left as they are, and the walk stays far from Python's recursion limit.
_REST_NAMES_DEPTH = 130


def _rest_names(value: object, depth: int = 0) -> object:
    """Member names as the REST API (and the SDK objects, dumped by alias) spell them: a
    snake_case dict (`model_dump()`) gives the same usage as the chunk it came from."""
    if depth > _REST_NAMES_DEPTH:
        return value
    if isinstance(value, dict):
        items = cast("dict[str, object]", value).items()
        return {
            _CAMEL.sub(lambda m: m.group(1).upper(), k): _rest_names(v, depth + 1) for k, v in items
        }
    if isinstance(value, list):
        return [_rest_names(v, depth + 1) for v in cast("list[object]", value)]
    return value


def _signature(value: object) -> str | None:
    """A thought signature in base64, as the REST API sends it (the SDK decodes it to bytes)."""
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return str_or_none(value) or None


def _path(text: str) -> list[str | int] | None:
    """The steps of a JSON Path such as `$.a.b[0]`, or `None` when it is not one."""
    if not text.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    while pos < len(text):
        match = _STEP.match(text, pos)
        if match is None:
            return None
        name, number, single, double = match.groups()
        if number is not None:
            steps.append(int(number))
        elif name is not None:
            steps.append(name)
        else:
            quoted = double if double is not None else single.replace("\\'", "'")
            try:
                steps.append(str(json.loads(f'"{quoted}"')))
            except ValueError:
                return None
        pos = match.end()
    return steps


# What `_scalar` gives for a value member no reader holds: a number no double holds, or a
# member of the wrong type. Dropped, the member would be missing from a call that runs.
_BROKEN = object()


# The value members a piece is read by; any other member named like one (`listValue`) is a
# value of a kind not read here, which breaks the call (see `_BROKEN`). The SDK's model drops
# such a member, and its piece then has no value, which breaks the call too.
_KNOWN_VALUES = frozenset(
    {
        "stringValue",
        "boolValue",
        "numberValue",
        "nullValue",
        "string_value",
        "bool_value",
        "number_value",
        "null_value",
    }
)


def _other_value(piece: object) -> bool:
    """Whether a dict piece has a value member of a kind `_scalar` does not read."""
    if not isinstance(piece, dict):
        return False
    return any(
        isinstance(key, str) and key.endswith(("Value", "_value")) and key not in _KNOWN_VALUES
        for key in cast("dict[object, object]", piece)
    )


def _scalar(piece: object) -> tuple[bool, object]:
    """The value of one partial argument: (has a value, value); the value is `_BROKEN` for a
    value member that cannot be read (see `_BROKEN`). The raw path's `scalar` is its twin."""
    if _other_value(piece):
        return True, _BROKEN
    text = _field(piece, "string_value", "stringValue")
    if text is not None:
        return True, text if isinstance(text, str) else _BROKEN
    flag = _field(piece, "bool_value", "boolValue")
    if flag is not None:
        return True, flag if isinstance(flag, bool) else _BROKEN
    number = _field(piece, "number_value", "numberValue")
    if isinstance(number, str):
        # Protobuf's JSON may write a double as a string: its number text (or "Infinity").
        number = json.loads(number) if JSON_NUMBER.fullmatch(number) else _BROKEN
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        # A protobuf number is a double; the SDK reads `3` as `3.0` where a dict keeps `3`.
        if isinstance(number, float) and number.is_integer() and abs(number) < 2**53:
            return True, int(number)
        return True, number if math.isfinite(number) else _BROKEN
    if number is not None:
        return True, _BROKEN
    if _field(piece, "null_value", "nullValue") is not None or _null_sent(piece):
        return True, None
    return False, None


def _null_sent(piece: object) -> bool:
    """Whether the piece says `null` as protobuf's JSON writes a `NullValue`: `"nullValue":
    null`. A REST dict has the member; the SDK, which reads it as `None`, keeps it among the
    fields that were set. (A snake_case dict from `model_dump()` has every field, set or not:
    only a value there says null.)"""
    if isinstance(piece, dict):
        return "nullValue" in piece
    fields_set: object = getattr(piece, "model_fields_set", None)
    return isinstance(fields_set, (set, frozenset)) and "null_value" in fields_set


@dataclass(slots=True)
class _Open:
    """A call that may still receive arguments from a later part."""

    key: int
    # Arguments streamed as partial pieces (Vertex AI); `None` for a name-only part (quirk 33).
    value: dict[str, Any] | None = None
    # The path of a string piece that said another piece of it follows.
    continuing: tuple[str | int, ...] | None = None
    # The pieces of that string after the one in `value`, joined once it ends: appending each
    # to the string in place would copy the whole string per piece. Neighbours of like size are
    # joined as they come (`_add_piece`), so the list stays short however many pieces come.
    tail: list[str] = field(default_factory=lambda: [])
    broken: bool = False
    # Bytes of the pieces merged (see `merge`), held until the call closes.
    kept: int = 0
    # Whether progress items are recorded for the call: asked of the sink once, and False from a
    # value on that the call cannot hold as UTF-8 text.
    progress: bool | None = None
    # Whether the value at `continuing` is a string (pieces of it are then progress items).
    continuing_str: bool = False
    # A high surrogate that ended the last piece of the string at `continuing`, held from its
    # progress item until the next piece pairs it.
    half: str = ""

    def merge(self, pieces: list[object], sink: Sink | None = None) -> None:
        """Merge partial pieces in order; a piece that cannot be merged breaks the call.

        Each piece merged adds its path and, for a string, its text to `kept`, in UTF-8 bytes
        (the raw path's `Streamed::kept`). With a `sink`, each value merged into a call not
        broken is recorded as a progress item."""
        root = self.value if self.value is not None else {}
        self.value = root
        for piece in pieces:
            path_text = str_or_none(_field(piece, "json_path", "jsonPath"))
            steps = _path(path_text) if path_text is not None else None
            has_value, value = _scalar(piece)
            more = _field(piece, "will_continue", "willContinue") is True
            if steps is None or not steps or not isinstance(steps[0], str) or value is _BROKEN:
                self.broken = True
                return
            if not has_value:
                # No value starts a string that more pieces continue, or ends the one they
                # continued (protobuf's JSON leaves an empty `stringValue` out). Anywhere else
                # the value is missing (or of a kind the SDK dropped): the call must not run
                # without it. As the raw path reads it.
                if not more and self.continuing != tuple(steps):
                    self.broken = True
                    return
                value = ""
            self.kept += _utf8_len(cast(str, path_text))
            if isinstance(value, str):
                self.kept += _utf8_len(value)
            path = tuple(steps)
            goes_on = self.continuing == path and isinstance(value, str)
            if goes_on:
                _add_piece(self.tail, cast(str, value))
            else:
                self.join_tail()
                if not _put(root, steps, value, append=False):
                    self.broken = True
                    return
            if sink is not None:
                if not goes_on:
                    self.continuing_str = isinstance(value, str)
                if self.continuing_str or not goes_on:
                    # Pieces that go on with a number or literal break the call when joined.
                    self.report(sink, path, value, goes_on=goes_on, more=more)
            if not more:
                self.join_tail()
            self.continuing = path if more else None

    def report(
        self,
        sink: Sink,
        steps: tuple[str | int, ...],
        value: object,
        *,
        goes_on: bool,
        more: bool,
    ) -> None:
        """Records the progress item of a value just merged at `steps` (the raw path's
        `item_of`): a string piece's text (`goes_on`: it continues the string there), or a
        number's or literal's JSON text."""
        if not self.progress or self.broken:
            return
        held, self.half = self.half, ""
        pointer = _pointer(steps)
        if (held and not goes_on) or surrogate_in(pointer):
            # The string before ended on half a pair, or a key holds one: the call cannot hold
            # it as text (and no item can name that key).
            self.progress = False
            return
        if isinstance(value, str):
            piece = string_piece(held, value, more=more)
            if piece is None:
                self.progress = False
                return
            text, self.half = piece
            sink._record_progress(self.key, pointer, text, True, not more)  # pyright: ignore[reportPrivateUsage]
        else:
            sink._record_progress(self.key, pointer, json.dumps(value), False, True)  # pyright: ignore[reportPrivateUsage]

    def join_tail(self) -> None:
        """Appends the pieces held in `tail` to their string in `value`; string pieces that
        continue a value that is no string (a number said to go on) break the call."""
        if self.tail and self.value is not None and self.continuing is not None:
            if not _put(self.value, list(self.continuing), "".join(self.tail), append=True):
                self.broken = True
        self.tail.clear()

    def merged(self) -> dict[str, Any] | None:
        """The arguments merged so far, every piece included."""
        self.join_tail()
        return self.value

    def merge_object(self, args: object, sink: Sink | None = None) -> None:
        """Merge whole arguments sent next to the pieces; a member already there breaks it.
        With a `sink`, each member merged into a call not broken is recorded as progress items,
        one per string, number or literal in it."""
        self.join_tail()
        root = self.value if self.value is not None else {}
        self.value = root
        values = plain(args)
        if not isinstance(values, dict):
            self.broken = True
            return
        for key, value in cast("dict[str, Any]", values).items():
            if key in root:
                self.broken = True
                return
            root[key] = value
            if sink is not None and self.progress and not self.broken:
                self.report_values(sink, key, value)

    def report_values(self, sink: Sink, key: object, value: object) -> None:
        """Records every string, number and literal in the member `key` of whole arguments, in
        document order (the raw path's `report_values`); stops recording at what is no JSON the
        call can hold as text (a lone surrogate, a float that is not finite, a key that is no
        string, an object of no JSON type)."""
        if not isinstance(key, str):
            self.progress = False
            return
        stack: list[tuple[tuple[str | int, ...], object]] = [((key,), value)]
        while stack:
            steps, item = stack.pop()
            if isinstance(item, dict):
                members = list(cast("dict[object, object]", item).items())
                if not all(isinstance(k, str) for k, _ in members):
                    self.progress = False
                    return
                stack.extend(((*steps, cast(str, k)), v) for k, v in reversed(members))
            elif isinstance(item, (list, tuple)):
                items = list(enumerate(cast("list[object]", item)))
                stack.extend(((*steps, i), v) for i, v in reversed(items))
            elif (isinstance(item, (str, bool, int)) or item is None) or (
                isinstance(item, float) and math.isfinite(item)
            ):
                self.report(sink, steps, item, goes_on=False, more=False)
                if not self.progress:
                    return
            else:
                self.progress = False
                return


def _add_piece(tail: list[str], piece: str) -> None:
    """Appends `piece` to the string pieces in `tail`, joining the last two while the one
    before is no longer than the last, as a binary counter carries. A str per tiny piece held
    until the string ends cost some 60 bytes a piece (600,000 one-character pieces held 35 MB);
    this way `tail` holds O(log n) strs and each character is copied O(log n) times."""
    tail.append(piece)
    while len(tail) > 1 and len(tail[-2]) <= len(tail[-1]):
        last = tail.pop()
        tail[-1] += last


def _pointer(steps: tuple[str | int, ...]) -> str:
    """The JSON Pointer of a path's steps."""
    return "".join(
        f"/{step}" if isinstance(step, int) else "/" + step.replace("~", "~0").replace("/", "~1")
        for step in steps
    )


def _tokens(args: object) -> str | None:
    """Whole arguments as JSON tokens, to know the same call sent again as the raw path knows
    it (`same_tokens`): `true` is not `1` and members in another order are other arguments,
    where Python's `==` says both are equal. `None` when they cannot be written (nested past
    the stack), and then no call counts as their repeat."""
    try:
        return json.dumps(plain(args), ensure_ascii=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        return None


def _utf8_len(text: str) -> int:
    """The UTF-8 length of `text`, a lone surrogate counted as its three bytes."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _put(root: dict[str, Any], steps: list[str | int], value: object, *, append: bool) -> bool:
    """Set `value` at `steps` inside `root`, creating containers; False on a shape conflict."""
    node: Any = root
    for step, after in pairwise(steps):
        child = _child(node, step, {} if isinstance(after, str) else [])
        if child is None:
            return False
        node = child
    last = steps[-1]
    if isinstance(node, dict) and isinstance(last, str):
        typed = cast("dict[str, Any]", node)
        if append and isinstance(typed.get(last), str) and isinstance(value, str):
            typed[last] = _joined(typed[last], value)
        elif last in typed:
            return False
        else:
            typed[last] = value
        return True
    if isinstance(node, list) and isinstance(last, int):
        items = cast("list[Any]", node)
        if append and last < len(items) and isinstance(items[last], str):
            items[last] = _joined(items[last], cast(str, value))
        elif last == len(items):
            items.append(value)
        else:
            return False
        return True
    return False


def _joined(text: str, more: str) -> str:
    """`text` with the pieces of it that came after appended, a surrogate pair a UTF-16
    producer cut between pieces made the one character it is, as the raw path writes it."""
    joined = text + more
    return joined if joined.isascii() else join_pairs(joined)


def _child(node: object, step: str | int, empty: dict[str, Any] | list[Any]) -> object:
    """The container at `step` in `node`, created as `empty` if absent; None on a conflict."""
    if isinstance(node, dict) and isinstance(step, str):
        typed = cast("dict[str, Any]", node)
        child = typed.setdefault(step, empty)
    elif isinstance(node, list) and isinstance(step, int):
        items = cast("list[Any]", node)
        if step == len(items):
            items.append(empty)
        if step >= len(items):
            return None
        child = items[step]
    else:
        return None
    return child if type(child) is type(empty) else None


@dataclass(slots=True)
class _State:
    # The key the next call gets.
    next_key: int = 0
    # The call that may still get arguments from a later part.
    open: _Open | None = None
    # The last call, while no text came after it: a signature-only part belongs to it.
    last: int | None = None
    # A signature that came before any call, for the next call.
    held: str | None = None
    # Text came after the last call (or with none yet), whether its block is still open or not.
    after_text: bool = False
    # Text came after the last call (or with none yet): a text part continues its block.
    saying: bool = False
    # The reason the prompt was blocked: calls that follow must not run either.
    blocked: str | None = None
    usage: dict[str, Any] | None = None
    # Each whole call by its id: (name, arguments), to know a call sent again (quirk 20).
    whole: dict[str, tuple[str, str]] = field(default_factory=lambda: {})
    # A call's streamed pieces passed the stream's byte limit: none is merged any more.
    over: bool = False
    # The thought parts in a row so far: one thought, kept once another part, the finish
    # reason or the end of the stream ends it.
    thought: Thought | None = None
    # The thoughts kept: a call after them counts them in `reasoning_before`.
    kept: int = 0


class GeminiAdapter:
    """Per-stream state for Gemini `GenerateContentResponse` chunks (SDK objects or dicts)."""

    format: WireFormat = "gemini"

    __slots__ = ("_gave_up", "_state", "_utf16")

    def __init__(self) -> None:
        """Start with no calls seen."""
        self._state = _State()
        self._utf16 = Utf16()
        self._gave_up = False

    def handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        """Translate one chunk.

        Args:
            chunk: A `google.genai.types.GenerateContentResponse` or a dict of the REST shape.
            sink: Receives `feed` / `set_metadata` / `stop` / `limit_reached` calls.

        Returns:
            The chunk's text, feeds, finish reason and (merged) usage.
        """
        info = self._handle(chunk, sink)
        return after_provider_error(info, sink) if self._gave_up else info

    def _handle(self, chunk: object, sink: Sink) -> ChunkInfo:
        state = self._state
        info = ChunkInfo()
        if get(chunk, "error") is not None and get(chunk, "candidates") is None:
            # The server gave up on the answer (google-genai raises this chunk): calls it had
            # not finished must not run, as when the SDK's error ends `assemble`; the thought
            # still streaming is not kept.
            state.open = None
            if state.thought is not None:
                drop(state.thought, sink)
                state.thought = None
            gave_up(info, sink, get(chunk, "error"))
            self._gave_up = True
            return info
        usage = _field(chunk, "usage_metadata", "usageMetadata")
        if usage is not None:
            state.usage = merge_usage(state.usage, _rest_names(plain(usage)))
            info.usage = copy_usage(state.usage)
        feedback = _field(chunk, "prompt_feedback", "promptFeedback")
        blocked = _reason(_field(feedback, "block_reason", "blockReason"))
        if blocked is not None:
            # The prompt was blocked: no answer comes, and no call may run.
            state.blocked = blocked
            info.finish_reason = blocked
            state.open = None
            sink.stop(blocked)
        candidates = get(chunk, "candidates")
        if isinstance(candidates, list):
            for candidate in cast("list[object]", candidates):
                if index_of(get(candidate, "index")) in (0, None):
                    self._candidate(candidate, sink, info)
        if state.blocked is not None and info.feeds:
            sink.stop(state.blocked)
        return info

    def flush(self, sink: Sink) -> None:
        """The stream ends: a call still waiting for streamed pieces is cut there, and a
        name-only call still open had no finish reason after it: the stream broke off (as the
        raw SSE path reads the end of its body)."""
        self._end_thought(sink)
        self._cut(sink, None)
        if self._state.open is not None:
            self._state.open = None
            sink.interrupt("the body ended before the answer finished")
        self._utf16.flush(sink)

    def _candidate(self, candidate: object, sink: Sink, info: ChunkInfo) -> None:
        parts = get(get(candidate, "content"), "parts")
        if isinstance(parts, list):
            for part in cast("list[object]", parts):
                self._part(part, sink, info)
        reason = _reason(_field(candidate, "finish_reason", "finishReason"))
        if reason is None:
            return
        # The candidate ended: so did its thought, and a signature-only part that no call
        # took goes back where it came.
        self._end_thought(sink)
        if self._state.held is not None:
            self._signed_part(self._state.held, sink, info)
        info.finish_reason = reason
        if stops_calls(reason) or folded_reason(reason) in _ABORTS:
            self._state.open = None
            sink.stop(reason)
        elif is_limit(reason):
            # Pieces still streaming are cut where they are; a name-only call is left without
            # arguments, which the core makes `truncated` (they may have been on their way).
            self._cut(sink, info)
            self._state.open = None
            sink.limit_reached()
        else:
            self._settle(sink, info)

    def _part(self, part: object, sink: Sink, info: ChunkInfo) -> None:
        state = self._state
        signature = _signature(_field(part, "thought_signature", "thoughtSignature"))
        call = _field(part, "function_call", "functionCall")
        if call is not None:
            self._end_thought(sink)
            self._call(call, signature, sink, info)
            return
        text = get(part, "text")
        if get(part, "thought") is True:
            # The model's reasoning: not text, and its signature is its own; text after it is a
            # part of its own.
            state.saying = False
            self._thought(text, signature, sink)
            return
        said = isinstance(text, str) and text != ""
        content = any(_field(part, *names) is not None for names in _CONTENT)
        if said or signature is not None or content:
            # A part that says something ends the thought before it.
            self._end_thought(sink)
        if isinstance(text, str) and text:
            if state.held is not None:
                # A signature-only part that no call took goes back before the text, where it
                # came.
                self._signed_part(state.held, sink, info)
            if not state.saying:
                # The text's first part, or the first after a call: a block of its own in the
                # next turn, in its place among the calls.
                state.saying = True
                sink._text_block(len(info.text))  # pyright: ignore[reportPrivateUsage]
            info.text += text
            # What follows belongs to the text now, not to the call before it.
            state.last = None
            state.held = None
            state.after_text = True
            if signature is not None:
                # Sent back on this part, which no text after it joins.
                state.saying = False
                sink._sign_text_block(signature)  # pyright: ignore[reportPrivateUsage]
            return
        if signature is None or content:
            return
        if state.saying:
            # The last part of the text before it (Gemini signs an answer without calls there).
            state.saying = False
            sink._sign_text_block(signature)  # pyright: ignore[reportPrivateUsage]
        elif state.last is not None:
            sink.set_metadata(state.last, "thought_signature", signature)
        elif state.after_text:
            # After a signed text part (a second signature-only part): a part of its own, sent
            # back where it came.
            self._signed_part(signature, sink, info)
        else:
            state.held = signature

    def _signed_part(self, signature: str, sink: Sink, info: ChunkInfo) -> None:
        """A signature-only part that neither a call nor a text block takes: an empty text
        block of its own, at the end of the text so far, which carries it."""
        self._state.held = None
        sink._text_block(len(info.text))  # pyright: ignore[reportPrivateUsage]
        sink._sign_text_block(signature)  # pyright: ignore[reportPrivateUsage]

    def _thought(self, text: object, signature: str | None, sink: Sink) -> None:
        """A thought part: its text goes on the thought streaming, and its signature ends it."""
        state = self._state
        said = text if isinstance(text, str) else ""
        if not said and signature is None:
            return
        if state.thought is None:
            if not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
                # The response keeps nothing more.
                return
            state.thought = Thought(False)
        thought = state.thought
        if said:
            think(thought, said, sink)
        if signature is not None:
            # Sent back on this part, which no thought after it joins.
            sign(thought, signature, sink)
            self._end_thought(sink)

    def _end_thought(self, sink: Sink) -> None:
        """The thought parts in a row end: the thought is kept, with its signature. Gemini
        has no stop event to tell a whole thought, and takes it back unsigned too; one that
        holds nothing is let go."""
        state = self._state
        thought = state.thought
        if thought is None:
            return
        state.thought = None
        text = close(thought, sink)
        empty = not text and not thought.signature
        if empty or thought.dead or not sink._may_hold(0):  # pyright: ignore[reportPrivateUsage]
            drop(thought, sink)
            return
        sink._keep_gemini_thought(text, thought.signature or None)  # pyright: ignore[reportPrivateUsage]
        state.kept += 1

    def _call(self, call: object, signature: str | None, sink: Sink, info: ChunkInfo) -> None:
        state = self._state
        name = str_or_none(get(call, "name")) or None
        wire_id = str_or_none(get(call, "id")) or None
        args = get(call, "args")
        pieces = _field(call, "partial_args", "partialArgs")
        more = _field(call, "will_continue", "willContinue") is True
        opened = state.open
        if wire_id is not None and name is not None and args is not None:
            if not more and pieces is None and opened is None:
                # The same call (id, name and arguments) sent again is a repeat: run once, not
                # twice under a renamed id (quirk 20). Once the response was refused whole, none
                # of its calls runs: calls are no longer kept by their id, so that what follows
                # costs no memory, as on the raw SSE path.
                tokens = _tokens(args) if sink._may_hold(0) else None  # pyright: ignore[reportPrivateUsage]
                if tokens is not None:
                    whole = (name, tokens)
                    if state.whole.get(wire_id) == whole:
                        return
                    state.whole.setdefault(wire_id, whole)
        if opened is not None and name is None:
            # The next part of the open call: its arguments (quirk 33) or streamed pieces.
            key = opened.key
            if wire_id is not None:
                self._feed(sink, info, key, id=wire_id)
        else:
            self._settle(sink, info)
            opened = None
            key = state.next_key
            state.next_key += 1
            self._feed(sink, info, key, id=wire_id, name=name)
            if state.kept:
                # The next turn sends the thoughts before it back in their places.
                sink.set_metadata(key, "reasoning_before", state.kept)
            if signature is None:
                signature = state.held
        state.held = None
        state.last = key
        state.saying = False
        state.after_text = False
        if signature is not None:
            sink.set_metadata(key, "thought_signature", signature)
        if more or isinstance(pieces, list) or (opened is not None and opened.value is not None):
            streamed = opened or _Open(key)
            state.open = streamed
            if streamed.progress is None:
                streamed.progress = sink._tracks_progress()  # pyright: ignore[reportPrivateUsage]
            progress = sink if streamed.progress else None
            # Past the response's byte limit (refused whole), nothing more of it is held.
            if isinstance(pieces, list) and not state.over:
                before = streamed.kept
                streamed.merge(cast("list[object]", pieces), progress)
                # What the call holds must fit beside what the response kept.
                held = streamed.kept
                if held > before and not sink._may_hold(held):  # pyright: ignore[reportPrivateUsage]
                    state.over = True
                    streamed.value, streamed.continuing = {}, None
                    streamed.tail.clear()
            if args is not None and not state.over:
                streamed.merge_object(args, progress)
            if progress is not None and (streamed.broken or not streamed.progress):
                # The call never holds what its pieces say: nothing more of it is an item, not
                # even its text when it closes.
                streamed.progress = False
                sink._stop_progress(key)  # pyright: ignore[reportPrivateUsage]
            if not more:
                state.open = None
                self._close(sink, info, streamed)
        elif args is not None:
            state.open = None
            self._feed(sink, info, key, arguments=arguments_of(plain(args)))
        elif opened is None and name is not None:
            # A name and no arguments: they may follow in the next part (quirk 33).
            state.open = _Open(key)

    def _feed(
        self,
        sink: Sink,
        info: ChunkInfo | None,
        key: int,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: Arguments | None = None,
    ) -> int:
        ordinal = self._utf16.feed(sink, key, id=id, name=name, arguments=arguments)
        if info is not None:
            info.feeds.append(FeedRecord(ordinal, id, name))
        return ordinal

    def _settle(self, sink: Sink, info: ChunkInfo | None) -> None:
        """No more arguments come for the open call (another call starts, the answer ended)."""
        opened = self._state.open
        if opened is None:
            return
        self._state.open = None
        if opened.value is None:
            # A name-only part that no arguments followed: a function without parameters.
            self._feed(sink, info, opened.key, arguments={})
        else:
            self._cut_call(sink, info, opened)

    def _cut(self, sink: Sink, info: ChunkInfo | None) -> None:
        """A streamed call still waiting for pieces is cut where it is."""
        opened = self._state.open
        if opened is not None and opened.value is not None:
            self._state.open = None
            self._cut_call(sink, info, opened)

    def _close(self, sink: Sink, info: ChunkInfo | None, opened: _Open) -> None:
        """Feed the merged pieces of a streamed call whose last piece came."""
        self._feed(sink, info, opened.key, arguments=opened.merged() or {})
        if opened.broken:
            # Pieces that do not make one object: text after an object value is the core's
            # `mixed_arguments`, so the call never runs.
            self._feed(sink, info, opened.key, arguments="?")

    def _cut_call(self, sink: Sink, info: ChunkInfo | None, opened: _Open) -> None:
        # Merged first: the pieces of a string held until it ends may break the call when
        # joined (a string going on at a path that holds no string).
        merged = opened.merged()
        if opened.broken:
            self._close(sink, info, opened)
            return
        try:
            text = json.dumps(merged, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:
            # Nested deeper than `json.dumps` writes (a JSON Path of a thousand steps): fed
            # whole, the value is the core's `too_deep`, as the raw path reads it.
            self._feed(sink, info, opened.key, arguments=merged)
            return
        # Without its closing brace: the core reports the call `truncated`, with what came.
        self._feed(sink, info, opened.key, arguments=text[:-1])
