"""Field access that works the same on SDK pydantic objects and on plain dicts.

The SDKs build their event objects with `construct()` (no validation), so a field the provider
left out reads as `None`, an unexpected type is kept as sent, and fields the SDK does not know
land in `model_extra`. Reading through these helpers keeps both the quirks and the provider
extras (Gemini's `extra_content`) visible to the adapters.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, cast

from pydantic import BaseModel

from ._utf16 import replace_lone_surrogates, surrogate_in

__all__ = [
    "arguments_of",
    "copy_usage",
    "extras",
    "get",
    "index_of",
    "merge_usage",
    "plain",
    "sdk_index_of",
    "str_or_none",
]


_NOT_PYDANTIC = object()
_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1


def get(obj: object, name: str) -> object:
    """Read `name` from a mapping, an SDK model field or an SDK model extra; `None` if absent."""
    # This runs a dozen times per chunk: plain dicts and pydantic models take direct paths,
    # avoiding the ABC `isinstance(obj, Mapping)` check and `__getattr__` misses, which cost
    # microseconds per chunk.
    if type(obj) is dict:
        return cast("dict[str, object]", obj).get(name)
    if obj is None:
        return None
    extra: object = getattr(obj, "__pydantic_extra__", _NOT_PYDANTIC)
    if extra is not _NOT_PYDANTIC:
        fields = cast("dict[str, object]", getattr(obj, "__dict__", {}))
        value = fields.get(name)
        if value is None and isinstance(extra, dict):
            # Fields the SDK does not know (Gemini's `extra_content`) live in the extras.
            return cast("dict[str, object]", extra).get(name)
        return value
    if isinstance(obj, Mapping):
        return cast("Mapping[str, object]", obj).get(name)
    return getattr(obj, name, None)


def extras(obj: object, known: frozenset[str]) -> dict[str, object]:
    """Fields of `obj` outside `known`: `model_extra` for SDK models, other keys for dicts."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        items = cast("Mapping[str, object]", obj).items()
        return {k: v for k, v in items if k not in known and v is not None}
    extra = getattr(obj, "model_extra", None)
    if isinstance(extra, dict):
        typed = cast("dict[str, object]", extra)
        return {k: v for k, v in typed.items() if k not in known and v is not None}
    return {}


def str_or_none(value: object) -> str | None:
    """`value` if it is a string, else `None` (providers send `null`, numbers, or nothing)."""
    return value if isinstance(value, str) else None


def index_of(value: object) -> int | None:
    """A wire index as an opaque integer key; anything that is not an integer is "missing".

    So is an integer outside the signed 64-bit range the core keys calls by: passed on, it
    would make `feed` raise and end the whole stream (the raw SSE path reads it as missing too).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and _I64_MIN <= value <= _I64_MAX:
        return value
    return None


# See `position_of`.
_POSITION_LIMIT = 1 << 53


def position_of(value: object) -> int | None:
    """A position in a response's output (Responses `output_index`, an Anthropic block `index`),
    as the SDKs read it into their models (`sdk_index_of`: `1.0`, `true` and `"1"` are 1, where
    a strict reading lost the call such an event started); one from 2**53 on is missing, as on
    the raw SSE path: a position is numbered on from (`index + 1`), which past the signed 64-bit
    range would end the stream."""
    index = sdk_index_of(value)
    return None if index is None or index >= _POSITION_LIMIT else index


# pydantic's lax integer in a string, as the `openai` SDK reads a tool call's `index`.
_LAX_INTEGER = re.compile(r"[ \t\n\r\x0b\x0c]*([+-]?[0-9]+(?:_[0-9]+)*)(?:\.0+)?[ \t\n\r\x0b\x0c]*")


def sdk_index_of(value: object) -> int | None:
    """A Chat tool call's `index` as the `openai` SDK reads it from the wire: `index_of`, with
    a boolean, a float without fraction and a string holding an integer read as that integer
    (`rust/src/envelope.rs` `wire_index` does the same for the raw SSE path).

    Read as missing on a dict while the SDK object routed by it, two interleaved calls under
    `"0"` and `"1"` had their fragments mixed into one.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if value.is_integer() and _I64_MIN <= value <= _I64_MAX:
            return int(value)
        return None
    if isinstance(value, str):
        match = _LAX_INTEGER.fullmatch(value)
        return index_of(int(match.group(1).replace("_", ""))) if match else None
    return index_of(value)


def arguments_of(
    value: object,
) -> str | bytes | dict[str, Any] | list[Any] | int | float | None:
    """Arguments as the core takes them: text fragments as text, any other JSON value whole.

    Scalars (a provider sending `42` or `true` as "arguments") are values too, as on the raw
    SSE path: alone the core reports them as a non-object, and after text fragments as mixed
    arguments, never spliced into the text. Anything else goes as the JSON value it dumps to.
    """
    if value is None or isinstance(value, (str, bytes, int, float)):
        return value
    if isinstance(value, Mapping):
        return dict(cast("Mapping[str, Any]", value))
    if isinstance(value, list):
        return cast("list[Any]", value)
    dumped = plain(value)
    if dumped is None or isinstance(dumped, (str, bytes, int, float, dict, list)):
        return cast("str | bytes | dict[str, Any] | list[Any] | int | float | None", dumped)
    # No JSON value at all: its text, which the core reports as not an object.
    return json.dumps(str(dumped))


def plain(value: object) -> Any:
    """Convert SDK models (at any depth) to JSON-shaped Python values; leave the rest alone.

    A loop with its own stack, not recursion: a model's arguments may nest deeper than
    Python's recursion limit allows a recursive walk (the SDK parsed them without one), and
    the core reports nesting beyond its own limit as the call's error.
    """
    done: list[Any] = [None]
    # (value to convert, container its conversion goes into, key or index there); pushed in
    # reverse so that members are converted in order and a later duplicate key wins.
    pending: list[tuple[object, Any, Any]] = [(value, done, 0)]
    while pending:
        item, into, at = pending.pop()
        made: Any
        if isinstance(item, Mapping):
            members = [(str(k), v) for k, v in cast("Mapping[object, object]", item).items()]
            made = dict.fromkeys(key for key, _ in members)
            pending.extend((v, made, key) for key, v in reversed(members))
        elif isinstance(item, (list, tuple)):
            items = cast("list[object]", item)
            made = [None] * len(items)
            pending.extend((v, made, i) for i, v in reversed(list(enumerate(items))))
        else:
            dump = getattr(item, "model_dump", None)
            # warnings=False: construct()-built models may hold values of unexpected types,
            # which pydantic would otherwise report as serialization warnings (errors under
            # pytest -W error).
            try:
                made = (
                    dump(mode="json", by_alias=True, exclude_none=True, warnings=False)
                    if callable(dump)
                    else item
                )
            except UnicodeEncodeError:
                # A member name with an unpaired surrogate half (`json.loads` takes it), which
                # pydantic cannot write: the model's members are read one by one instead.
                members = _members(item)
                made = dict.fromkeys(key for key, _ in members)
                pending.extend((v, made, key) for key, v in reversed(members))
        into[at] = made
    return done[0]


def _members(model: object) -> list[tuple[str, object]]:
    """A pydantic model's members that are not `None`, as `model_dump(by_alias=True,
    exclude_none=True)` names them: its fields, then its extras."""
    fields = cast("dict[str, Any]", getattr(type(model), "model_fields", {}))
    members = [
        (getattr(info, "alias", None) or name, getattr(model, name, None))
        for name, info in fields.items()
    ]
    extra = getattr(model, "model_extra", None)
    if isinstance(extra, dict):
        members += [(str(k), v) for k, v in cast("dict[object, object]", extra).items()]
    return [(k, v) for k, v in members if v is not None]


def merge_usage(known: dict[str, Any] | None, usage: object) -> dict[str, Any] | None:
    """`known` with the members of one more usage object merged in, later values winning.

    Providers split usage over events (Anthropic: input tokens in `message_start`, output tokens
    in `message_delta`; some Chat servers: one count per chunk). A member sent as `null` is no
    count: it is left out at any depth and never erases a known one, as the SDK objects (which
    drop `None` members) and the raw SSE path read it.

    Usage is a handful of counts; a provider's is never near these bounds, and what passes them
    is left out, as on the raw SSE path, so that a stream of usage objects costs time in
    proportion to what each brings: an object nested deeper than `_USAGE_MAX_DEPTH` or whose
    JSON text is longer than `_USAGE_MAX_BYTES` counts nothing, nor does one holding an integer
    too long for Python to write, and members past the first `_USAGE_MAX_MEMBERS` are not
    added (those known are still updated). An unpaired surrogate in a name or a string is
    U+FFFD, as the raw SSE path reads it.

    Args:
        known: The usage merged so far (not modified), or `None`.
        usage: The usage object of the event: an SDK model or a dict.

    Returns:
        The merged usage; `known` when `usage` is not an object (it counts nothing).
    """
    raw = plain(usage)
    if not isinstance(raw, dict) or not _nested_within(raw, _USAGE_MAX_DEPTH):
        return known
    try:
        text = json.dumps(raw, ensure_ascii=False, separators=(",", ":"), default=str)
    except ValueError:
        # An integer longer than Python writes (`sys.get_int_max_str_digits()`): as on the raw
        # SSE path, whose text of it `json.loads` would refuse, the object counts nothing.
        return known
    if len(text.encode(errors="surrogatepass")) > _USAGE_MAX_BYTES:
        return known
    if surrogate_in(text):
        raw = _whole_text(raw)
    fresh = cast("dict[str, Any]", _without_none(raw))
    merged = dict(known or {})
    for key, value in fresh.items():
        if len(merged) < _USAGE_MAX_MEMBERS or key in merged:
            merged[key] = value
    return merged


def _whole_text(value: Any) -> Any:
    """`value` with an unpaired surrogate in any name or string made U+FFFD, as the raw SSE
    path reads usage (serde_json takes no unpaired half); a name that becomes another's keeps
    the first one's place and the later value, as a repeated JSON name does."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, member in cast("dict[str, Any]", value).items():
            out[replace_lone_surrogates(key)] = _whole_text(member)
        return out
    if isinstance(value, list):
        return [_whole_text(item) for item in cast("list[Any]", value)]
    return replace_lone_surrogates(value) if isinstance(value, str) else value


def copy_usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """A copy of merged usage for one chunk's `ChunkInfo`, nested objects included.

    The adapter keeps merging into its own dict; a caller that edits the usage it was handed
    (adds a cost, pops a member) must not change the counts of the chunks that follow.
    """
    return copy.deepcopy(usage)


# As the raw SSE path bounds usage (its JSON reader nests 128 deep at most).
_USAGE_MAX_DEPTH = 128
_USAGE_MAX_BYTES = 8 * 1024
_USAGE_MAX_MEMBERS = 64


def _nested_within(value: Any, limit: int) -> bool:
    """Whether `value` holds no object or array more than `limit` levels deep."""
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            if depth == limit:
                return False
            children: Iterable[Any] = (
                cast("dict[str, Any]", item).values()
                if isinstance(item, dict)
                else cast("list[Any]", item)
            )
            todo.extend((child, depth + 1) for child in children)
    return True


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        items = cast("dict[str, Any]", value).items()
        return {k: _without_none(v) for k, v in items if v is not None}
    return value


def is_object(value: object) -> bool:
    """A JSON object as a chunk holds one: a dict, or an SDK model built from one."""
    return isinstance(value, (dict, BaseModel))


def malformed_record(value: object, strings: tuple[str, ...]) -> bool:
    """Whether `value`, where the raw SSE path's decoder reads an object whose fields `strings`
    are strings, is one it refuses: present but no object, or one of those fields present but
    no string. `None` is an absent record, which it takes."""
    if value is None:
        return False
    if not is_object(value):
        return True
    return any(
        (field := get(value, name)) is not None and not isinstance(field, str) for name in strings
    )


def malformed_envelope(chunk: object) -> bool:
    """Whether a chunk has a shape the raw SSE path's decoder refuses in every format
    (`rust/src/envelope.rs`, whose envelope types these fields whatever the format): an `index`
    or `output_index` that is not an integer, or Chat `choices` that are not an array, a
    choice that is not an object or whose `index` is not an integer, a `delta`, `tool_calls`
    entry or `function` that is not an object, or `tool_calls` that is not an array. The SDKs
    build their chunks without validating them, so such a chunk reaches `feed_chunk` as it was
    sent; the raw path cannot read it, and the calls it may have carried part of must not run.
    """
    for name in ("index", "output_index"):
        position = get(chunk, name)
        if position is not None and sdk_index_of(position) is None:
            return True
    return _malformed_choices(get(chunk, "choices"))


def _malformed_choices(choices: object) -> bool:
    if choices is None:
        return False
    if not isinstance(choices, list):
        return True
    for choice in cast("list[object]", choices):
        if not is_object(choice):
            return True
        index = get(choice, "index")
        if index is not None and sdk_index_of(index) is None:
            return True
        delta = get(choice, "delta")
        if delta is None:
            continue
        if not is_object(delta):
            return True
        tool_calls = get(delta, "tool_calls")
        if tool_calls is None:
            continue
        if not isinstance(tool_calls, list):
            return True
        for entry in cast("list[object]", tool_calls):
            if entry is None:
                continue
            if not is_object(entry):
                return True
            function = get(entry, "function")
            if function is not None and not is_object(function):
                return True
    return False
