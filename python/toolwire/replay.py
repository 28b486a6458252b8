"""Replay a corpus of recorded streams and failed calls, and report what each one became.

A corpus is a set of files. A directory stands for the `*.jsonl` and `*.sse` files under it, at
any depth; a symbolic link to a directory is not followed (it could lead out of the tree, or
around it forever), a symbolic link to a file is read.

* **`.sse`**: one raw SSE body as captured from the wire (any of the four wire formats). An SSE
  comment line `: toolwire {...}` may carry the entry's header (`id`, `note`, `expect`); SSE
  parsers ignore comments, so the file stays a valid capture. A file in which the raw path
  finds no event of a wire format it knows (nor a provider's error event, nor an event it had
  to skip as malformed or too large) is a corpus error, not an entry of no calls that passes:
  an empty file, only comments, random bytes, a file of another kind. One whose header says
  the connection broke off (`interrupted`) may hold no event.
* **`.jsonl`**: one JSON object per line. A line with a `"toolwire"` key is a corpus record:

  - `{"toolwire": "stream", ...}` starts a stream entry. It holds its chunks inline
    (`"chunks": [...]`), a raw SSE body inline (`"body": "..."`), or neither, in which case the
    plain lines that follow, up to the next record, are its chunks. A plain line after any
    other record (a call, or a stream with inline content) belongs to no entry: a corpus
    error, never a line skipped.
  - `{"toolwire": "call", "tool": ..., "arguments": "<raw text>", ...}` is one call whose raw
    argument text is replayed as a single fragment (what the recorder writes for failed calls).
    Its `end`, when the text alone does not say how the stream ended the call, is replayed
    after it: `{"stop": reason}` (the provider stopped it: `filtered`), `{"cut": true}`
    (the stream ended before its arguments began: `truncated`), `{"lost": reason}` (an event
    that carried part of them could not be read: `lost_event`), `{"mismatch": reason}` (the
    stream's events disagreed about them: `arguments_mismatch`) or `{"refused": limit}` (the
    response passed its `max_calls` or `max_stream_bytes` limit and was refused whole:
    `too_large`; the replay takes it past the same limit again). `"type": "custom"` marks a
    custom tool's call, whose text is its free-form input: replayed as such, never as JSON
    (`free_form_call`).

  Plain lines before any record form one stream entry named after the file, so a JSONL file of
  SDK chunks or events is a corpus as it is.

Every record may carry `schema_version` (this module reads version 1), `id`, `note`,
`format` (`openai-chat`, `openai-responses`, `anthropic`, `gemini` or `fragments`; `auto` by
default), `schema_hash` / `schema_hashes` (written by the recorder) and `expect`. A stream
record may carry `interrupted` (the recorder writes the exception's class name when the
connection broke off): a broken connection leaves no chunk, so the replay interrupts the
assembler after the last chunk, as the live stream did. Any record may carry `limits`, the
recorded assembler's limits that differ from the defaults (`max_depth`, `max_bytes`,
`max_number_digits`, `duplicate_keys`, as `ToolCall.limits` gives them, and the response's
`max_calls` and `max_stream_bytes`): the replay's assembler reads with the same, so a text
reaches the verdict it had live.

`fragments` chunks are the core's own deltas, one per line:
`{"index": 0, "id": ..., "name": ..., "arguments": ..., "type": ...}`, `{"end": 0}` or
`{"stop": "content_filter"}`.

**What passes.** Each call gets a final state (`ok`, `model_error`, `business_error`,
`needs_clarification`; without a toolset, `ok` or `model_error` from the core alone) and, unless
it is ok, one error code: the first field error's code when validation produced field errors
(`enum`, `unknown_field`, `pattern`, ...), else the core error's kind (`truncated`,
`invalid_escape`, `concatenated_values`, `unknown_tool`, ...), else the outcome's `error_type`.
`expect` is a dict for a call entry and a list of dicts (one per call, in order) for a stream,
each `{"state": ..., "code": ..., "tool": ..., "coercions": [rule, ...]}` where every key but
`state` is optional; a string is shorthand for `{"state": <string>}`. An entry with `expect`
passes when every call matches and the number of calls is right; an entry without `expect`
passes when every call is ok and the raw body had no event that could not be read (a
malformed or oversized event may have held a call that is then not even listed).
"""

from __future__ import annotations

import codecs
import hashlib
import importlib
import inspect
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias, cast, get_args

from toolwire._core import MisuseError, ToolCall
from toolwire.assembler import Assembler, read_chunks_as
from toolwire.formats import WireFormat
from toolwire.payloads import FREE_FORM_TYPE
from toolwire.toolset import Toolset
from toolwire.validation import Outcome, path_without_values, without_values

__all__ = [
    "CORPUS_SCHEMA_VERSION",
    "REPORT_SCHEMA_VERSION",
    "STREAM_LIMIT_DEFAULTS",
    "BaselineDiff",
    "CallResult",
    "CaseResult",
    "CorpusError",
    "Entry",
    "ErrorSite",
    "Expectation",
    "FormatName",
    "Report",
    "Resource",
    "bundled_corpus",
    "compare",
    "entry_ident",
    "feed_sse",
    "load_bundled",
    "load_corpus",
    "load_toolset",
    "new_assembler",
    "replay",
    "replay_entry",
    "schema_hash",
    "verdict",
]

CORPUS_SCHEMA_VERSION = 1
"""The corpus record version this module reads and the recorder writes."""
REPORT_SCHEMA_VERSION = 1
"""The version of the `--json` report layout (`Report.to_json`)."""

FormatName: TypeAlias = Literal["auto", WireFormat, "fragments"]
"""How chunks are read: auto-detected, one wire format, or the core's own deltas."""
FORMATS: tuple[FormatName, ...] = get_args(FormatName)
EntryKind: TypeAlias = Literal["stream", "call"]

_SSE_HEADER = b": toolwire "
_SLOWEST = 5


class CorpusError(ValueError):
    """A corpus file cannot be read: bad JSON, an unknown record kind or a newer version."""


# --------------------------------------------------------------------------------------------
# Corpus entries


@dataclass(frozen=True, slots=True)
class Expectation:
    """What one call of a corpus entry must become.

    Attributes:
        state: The final state (`ok`, `model_error`, `business_error`, `needs_clarification`).
        code: The error code, if checked.
        tool: The tool name, if checked.
        coercions: The coercion rules applied (compared as a sorted list), if checked.
    """

    state: str
    code: str | None = None
    tool: str | None = None
    coercions: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, raw: object) -> Expectation:
        """Read one expectation from its JSON form (a dict, or a state string).

        A lone surrogate escape in a string is made text (`\\ud800`): no call holds one,
        so it matches nothing either way, and the expectation stays printable and writable.

        Raises:
            CorpusError: The value has the wrong shape.
        """
        if isinstance(raw, str):
            return cls(_printable(raw))
        data: Mapping[str, Any] = cast("Mapping[str, Any]", raw) if isinstance(raw, Mapping) else {}
        state = data.get("state")
        if not isinstance(state, str):
            raise CorpusError(f"an expect item needs a string 'state': {raw!r:.200}")
        code, tool, rules = data.get("code"), data.get("tool"), data.get("coercions")
        return cls(
            state=_printable(state),
            code=_printable(code) if isinstance(code, str) else None,
            tool=_printable(tool) if isinstance(tool, str) else None,
            coercions=(
                tuple(sorted(_printable(str(r)) for r in cast("list[object]", rules)))
                if isinstance(rules, list)
                else None
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """The expectation as written in a corpus (unchecked keys left out)."""
        out: dict[str, Any] = {"state": self.state}
        if self.code is not None:
            out["code"] = self.code
        if self.tool is not None:
            out["tool"] = self.tool
        if self.coercions is not None:
            out["coercions"] = list(self.coercions)
        return out


@dataclass(frozen=True, slots=True)
class Entry:
    """One replayable corpus entry: a recorded stream or one recorded call.

    Attributes:
        key: Stable identity for reports and baselines: `<source>:<id>`.
        source: The file as named on the command line (bundled files: `samples/<name>`).
        kind: `stream` or `call`.
        format: How chunks are read.
        chunks: The stream's chunks (JSONL streams).
        body: The stream's raw SSE bytes (`.sse` files and `body` records).
        tool: The tool name (call entries).
        call_id: The call id (call entries).
        call_type: The call type when it is `custom` (a custom tool's call, whose arguments
            are its free-form input: call entries), else None.
        arguments: The raw argument text (call entries).
        expect: One expectation per call, or None when the entry carries no `expect`.
        schema_hashes: Tool name to the schema hash recorded with the entry.
        note: Free text from the record.
        interrupted: Why the recorded connection broke off (stream entries), or None.
        end: How the stream ended a recorded call, when its text alone does not say
            (call entries): `{"stop": reason}`, `{"cut": true}`, `{"lost": reason}` or
            `{"mismatch": reason}`.
        limits: The recorded assembler's limits that differ from the defaults.
    """

    key: str
    source: str
    kind: EntryKind
    format: FormatName = "auto"
    chunks: tuple[Any, ...] = ()
    body: bytes | None = None
    tool: str | None = None
    call_id: str | None = None
    call_type: str | None = None
    arguments: str = ""
    expect: tuple[Expectation, ...] | None = None
    schema_hashes: Mapping[str, str] = field(default_factory=lambda: {})
    note: str = ""
    interrupted: str | None = None
    end: Mapping[str, Any] | None = None
    limits: Mapping[str, int | str] = field(default_factory=lambda: {})


_LIMIT_NAMES = ("max_depth", "max_bytes", "max_number_digits", "max_calls", "max_stream_bytes")
STREAM_LIMIT_DEFAULTS: dict[str, int] = {
    name: cast("int", inspect.signature(Assembler).parameters[name].default)
    for name in ("max_calls", "max_stream_bytes")
}
"""The limits that bound a whole response rather than one call, with the assembler's
defaults; a call record replays a refusal by either."""
# Replaying a refusal by `max_calls` starts that many calls: a response refused past more
# calls than this is no recording, it is a damaged record.
_MOST_CALLS_REFUSED = 1_000_000


def _parse_limits(raw: object, where: str) -> dict[str, int | str]:
    """A record's `limits`, checked for shape (the assembler checks the ranges)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: 'limits' must be an object")
    limits: dict[str, int | str] = {}
    for name, value in cast("dict[str, object]", raw).items():
        if name in _LIMIT_NAMES and isinstance(value, int) and not isinstance(value, bool):
            limits[name] = value
        elif name == "duplicate_keys" and value in ("error", "last_wins"):
            limits[name] = cast(str, value)
        else:
            raise CorpusError(
                f"{where}: 'limits' holds {name!r}: {value!r:.50}; expected "
                "max_depth, max_bytes, max_number_digits, max_calls or max_stream_bytes "
                "(integers) or duplicate_keys ('error' or 'last_wins')"
            )
    return limits


def _parse_end(raw: object, where: str) -> dict[str, Any] | None:
    """A call record's `end`, as the one form replay acts on."""
    if raw is None:
        return None
    if isinstance(raw, dict):
        end = cast("dict[str, object]", raw)
        for form in ("stop", "lost", "mismatch"):
            reason = end.get(form)
            if isinstance(reason, str):
                # Handed to the assembler and printed: a lone surrogate escape is made text,
                # as the recorder, writing a reason the core gave, never writes one.
                return {form: _printable(reason)}
        refused = end.get("refused")
        if isinstance(refused, str) and refused in STREAM_LIMIT_DEFAULTS:
            return {"refused": refused}
        if end.get("cut") is True:
            return {"cut": True}
    forms = (
        '{"stop": reason}, {"cut": true}, {"lost": reason}, {"mismatch": reason} or '
        '{"refused": "max_calls" or "max_stream_bytes"}'
    )
    raise CorpusError(f"{where}: 'end' must be {forms}")


def _parse_expect(raw: object, kind: EntryKind, where: str) -> tuple[Expectation, ...] | None:
    if raw is None:
        return None
    try:
        if kind == "call" or not isinstance(raw, list):
            return (Expectation.parse(raw),)
        return tuple(Expectation.parse(item) for item in cast("list[object]", raw))
    except CorpusError as exc:
        # `Expectation.parse` reads one value and knows no place; the corpus does.
        raise CorpusError(f"{where}: {exc}") from exc


def _format_of(raw: object, default: FormatName, where: str) -> FormatName:
    if raw is None:
        return default
    if raw not in FORMATS:
        raise CorpusError(f"{where}: unknown format {raw!r}; expected one of {list(FORMATS)}")
    return raw


def _paired(text: str) -> str:
    """`text` with surrogate halves that chunks split apart joined again, and any half left
    alone made U+FFFD, as `Assembler.feed_chunk` gives it: printable and writable."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _reason(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _check_version(record: Mapping[str, Any], where: str) -> None:
    version = record.get("schema_version", CORPUS_SCHEMA_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CorpusError(f"{where}: schema_version {version!r} is not a version number")
    if version > CORPUS_SCHEMA_VERSION:
        raise CorpusError(
            f"{where}: schema_version {version!r} is newer than this toolwire reads "
            f"({CORPUS_SCHEMA_VERSION})"
        )


class _KeyMaker:
    """Unique entry keys within one load (a repeated id gets `~2`, `~3`, ...)."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def __call__(self, source: str, ident: str) -> str:
        # A lone surrogate (from a JSON escape) cannot be printed or written as UTF-8. A file
        # the recorder rotated (`corpus.2.jsonl`) keys its entries as the current one does, so
        # a baseline follows an entry that rotation moved.
        key = _printable(f"{_unrotated(source)}:{ident}")
        self.seen[key] += 1
        n = self.seen[key]
        return key if n == 1 else f"{key}~{n}"


def entry_ident(entry: Entry) -> str:
    """The id part of an entry's key (`<file>:<id>`, the id possibly holding colons)."""
    return entry.key.removeprefix(f"{_printable(_unrotated(entry.source))}:")


def _unrotated(source: str) -> str:
    """`dir/corpus.jsonl` for `dir/corpus.<n>.jsonl`, the name of a rotated corpus file."""
    return re.sub(r"\.[1-9][0-9]*(\.jsonl)\Z", r"\1", source)


def _printable(text: str) -> str:
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


def raw_bytes(text: str) -> bytes:
    """The bytes a corpus string stands for, even when it holds lone surrogates.

    The recorder writes bytes that are not UTF-8 as `surrogateescape` code points (`\\udcXX`
    escapes in the JSON), so they come back exactly; any other lone surrogate becomes its
    (invalid) UTF-8 form, which the core then reports like any invalid UTF-8 from the wire.
    """
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="surrogatepass")


def _hashes(record: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    many = record.get("schema_hashes")
    if isinstance(many, Mapping):
        out.update({str(k): str(v) for k, v in cast("Mapping[object, object]", many).items()})
    one = record.get("schema_hash")
    tool = record.get("tool")
    if isinstance(one, str) and isinstance(tool, str):
        out[tool] = one
    return out


def _entry_from_record(
    record: Mapping[str, Any],
    chunks: list[Any],
    *,
    source: str,
    line: int,
    fmt: FormatName,
    keys: _KeyMaker,
    raw_body: bytes | None = None,
) -> Entry:
    where = f"{source}:{line}"
    _check_version(record, where)
    kind = record.get("toolwire")
    ident = str(record.get("id") or f"L{line}")
    # Printed by `inspect` and written to the report: a lone surrogate escape is made text.
    note = _printable(str(record.get("note") or ""))
    if kind == "call":
        arguments = record.get("arguments")
        tool = record.get("tool")
        if not isinstance(arguments, str) or not (tool is None or isinstance(tool, str)):
            raise CorpusError(f"{where}: a call record needs string 'tool' and 'arguments'")
        call_id = record.get("call_id")
        call_type = record.get("type")
        if call_type is not None and call_type != FREE_FORM_TYPE:
            raise CorpusError(f"{where}: a call record's 'type' may only be {FREE_FORM_TYPE!r}")
        end = _parse_end(record.get("end"), where)
        return Entry(
            key=keys(source, ident),
            source=source,
            kind="call",
            tool=tool,
            call_id=call_id if isinstance(call_id, str) else None,
            call_type=call_type,
            arguments=arguments,
            end=end,
            expect=_parse_expect(record.get("expect"), "call", where),
            schema_hashes=_hashes(record),
            note=note,
            limits=_parse_limits(record.get("limits"), where),
        )
    if kind != "stream":
        raise CorpusError(f"{where}: unknown record kind {kind!r}; expected 'stream' or 'call'")
    inline = record.get("chunks")
    body = record.get("body")
    if inline is not None and not isinstance(inline, list):
        raise CorpusError(f"{where}: 'chunks' must be a list of chunks")
    if body is not None and not isinstance(body, str):
        raise CorpusError(f"{where}: 'body' must be the raw SSE body as a string")
    # A chunk is an object (a provider event, or a `fragments` delta); anything else is a
    # damaged record, which would otherwise replay as a stream without calls.
    for at, chunk in enumerate(cast("list[Any]", inline) if inline is not None else chunks):
        if not isinstance(chunk, dict):
            raise CorpusError(f"{where}: chunk {at} is not a JSON object: {chunk!r:.100}")
    if raw_body is None and isinstance(body, str):
        raw_body = raw_bytes(body)
    return Entry(
        key=keys(source, ident),
        source=source,
        kind="stream",
        format=_format_of(record.get("format"), fmt, where),
        chunks=tuple(cast("list[Any]", inline)) if isinstance(inline, list) else tuple(chunks),
        body=raw_body,
        expect=_parse_expect(record.get("expect"), "stream", where),
        schema_hashes=_hashes(record),
        note=note,
        # Printed and handed to the assembler: a lone surrogate escape there is made text.
        interrupted=_printable(str(interrupted))
        if (interrupted := record.get("interrupted"))
        else None,
        limits=_parse_limits(record.get("limits"), where),
    )


def _load_jsonl(text: str, source: str, fmt: FormatName, keys: _KeyMaker) -> list[Entry]:
    entries: list[Entry] = []
    # (record, first line, chunks) of the entry being read; a file of bare chunks gets an
    # implicit stream record named after the file.
    stem = Path(source).stem
    current: tuple[dict[str, Any], int, list[Any]] | None = None

    def close() -> None:
        if current is not None:
            record, line, chunks = current
            entries.append(
                _entry_from_record(record, chunks, source=source, line=line, fmt=fmt, keys=keys)
            )

    # Records are split on "\n" only: `splitlines` also splits on U+2028, U+2029 and U+0085,
    # which JSON text may hold raw inside a string.
    for number, raw_line in enumerate(text.split("\n"), start=1):
        if not raw_line.strip():
            continue
        try:
            item: object = json.loads(raw_line)
        except (ValueError, RecursionError) as exc:
            # JSONDecodeError, an integer past CPython's digit limit, nesting past the stack.
            raise CorpusError(f"{source}:{number}: not JSON: {_reason(exc)}") from exc
        if isinstance(item, dict) and "toolwire" in item:
            close()
            current = (cast("dict[str, Any]", item), number, [])
        elif current is None:
            current = ({"toolwire": "stream", "id": stem}, number, [item])
        else:
            record, line, _ = current
            held = next((k for k in ("chunks", "body") if record.get(k) is not None), None)
            if record.get("toolwire") == "call" or held is not None:
                # Only a stream record without inline content takes the lines that follow:
                # these would be no part of any entry (two files joined, a capture appended).
                what = "a call record" if held is None else f"a stream record with inline {held}"
                raise CorpusError(
                    f"{source}:{number}: a plain line follows {what} (line {line}), which takes "
                    "none; a stream's chunks need a stream record of their own before them"
                )
            current[2].append(item)
    close()
    return entries


def _load_sse(data: bytes, source: str, fmt: FormatName, keys: _KeyMaker) -> Entry:
    header: dict[str, Any] = {"toolwire": "stream", "id": Path(source).stem}
    for number, line in enumerate(data.splitlines()):
        # A body may open with a byte order mark (the SSE framer skips it too).
        if number == 0 and line.startswith(codecs.BOM_UTF8):
            line = line[len(codecs.BOM_UTF8) :]
        if line.startswith(_SSE_HEADER):
            try:
                parsed: object = json.loads(line[len(_SSE_HEADER) :])
            except (ValueError, RecursionError) as exc:
                header_name = _SSE_HEADER.decode()
                raise CorpusError(f"{source}: bad '{header_name}' header: {_reason(exc)}") from exc
            if not isinstance(parsed, dict):
                raise CorpusError(f"{source}: the toolwire header must be a JSON object")
            header.update(cast("dict[str, Any]", parsed))
            header["toolwire"] = "stream"
            break
    header.pop("chunks", None)
    header.pop("body", None)
    if not header.get("interrupted"):
        _check_events(data, source)
    # The exact bytes: a capture may hold invalid UTF-8 on purpose.
    return _entry_from_record(header, [], source=source, line=1, fmt=fmt, keys=keys, raw_body=data)


def _check_events(data: bytes, source: str) -> None:
    """Raises CorpusError when the raw path reads no event from `data`: none of a wire format it
    knows, no provider error event, and none it framed but had to skip (malformed, too large;
    a case fails on such an event, as on any stream that lost one). Replayed, such a file
    would be an entry of no calls that passes, whatever it holds: random bytes, a file of
    another kind, only comments, nothing at all."""
    asm = Assembler()
    asm.feed_sse(data)
    asm.finish()
    errors = asm.stream_errors()
    if (
        asm.format is not None
        or len(asm)
        or any(kind == "provider_error" or kind in _UNREAD_EVENTS for kind, _, _ in errors)
    ):
        return
    problems = [message for _, _, message in errors[:1]]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"not UTF-8: {exc}")
    detail = f" ({'; '.join(problems)})" if problems else ""
    raise CorpusError(f"{source}: no SSE event of a known wire format could be read{detail}")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        # `**` never enters a symbolic link to a directory (a loop, or a way out of the tree).
        found = [p for p in path.rglob("*") if p.suffix in (".jsonl", ".sse") and p.is_file()]
        return sorted(found)
    return [path]


def load_corpus(paths: Iterable[str | Path], *, fmt: FormatName = "auto") -> list[Entry]:
    """Read corpus files and directories into entries, in file then line order.

    Args:
        paths: Files or directories (searched at any depth for `*.jsonl` and `*.sse`;
            symbolic links to directories are not followed).
        fmt: The default format for entries that do not name one.

    Returns:
        The entries.

    Raises:
        CorpusError: A file is unreadable or malformed.
    """
    targets: list[tuple[str, bytes]] = []
    for item in paths:
        for file in _files(Path(item)):
            try:
                targets.append((str(file), file.read_bytes()))
            except OSError as exc:
                raise CorpusError(f"cannot read {file}: {exc.strerror or exc}") from exc
    return _load_all(targets, fmt)


def load_bundled(fmt: FormatName = "auto") -> list[Entry]:
    """The entries of the corpus shipped in `toolwire/samples/` (sources named `samples/...`).

    Replay it against `toolwire.demo_tools.demo_toolset()`; every entry carries its `expect`.
    """
    return _load_all(list(_bundled_files(bundled_corpus())), fmt)


def _load_all(targets: list[tuple[str, bytes]], fmt: FormatName) -> list[Entry]:
    keys = _KeyMaker()
    entries: list[Entry] = []
    for source, data in targets:
        if source.endswith(".sse"):
            entries.append(_load_sse(data, source, fmt, keys))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorpusError(f"{source}: not UTF-8: {exc}") from exc
        entries.extend(_load_jsonl(text, source, fmt, keys))
    return entries


class Resource(Protocol):
    """A bundled file or directory (what `importlib.resources.files` returns)."""

    @property
    def name(self) -> str:
        """The last path component."""
        ...

    def is_dir(self) -> bool:
        """Whether it is a directory."""
        ...

    def is_file(self) -> bool:
        """Whether it is a file."""
        ...

    def iterdir(self) -> Iterator[Resource]:
        """The children of a directory."""
        ...

    def read_bytes(self) -> bytes:
        """The content of a file."""
        ...


def _bundled_files(root: Resource) -> Iterator[tuple[str, bytes]]:
    children = sorted(root.iterdir(), key=lambda t: t.name) if root.is_dir() else [root]
    for child in children:
        if child.is_file() and child.name.endswith((".jsonl", ".sse")):
            yield f"samples/{child.name}", child.read_bytes()


def bundled_corpus() -> Resource:
    """The corpus shipped in `toolwire/samples/` (replayed against `demo_tools.demo_toolset`)."""
    return cast("Resource", resources.files("toolwire").joinpath("samples"))


def load_toolset(spec: str) -> Toolset:
    """Import a toolset named `module:attribute`.

    Args:
        spec: `package.module:name`, where `name` is a `Toolset` or a callable returning one.

    Returns:
        The toolset.

    Raises:
        ValueError: The spec is malformed, its module cannot be imported (or raises when it
            is), or it does not name a toolset.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--tools wants 'module:attribute', not {spec!r}")
    if module_name.startswith("."):
        # `importlib` would want a package to resolve it against and raise TypeError.
        raise ValueError(f"cannot import {module_name!r}: --tools wants an absolute module name")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    except Exception as exc:
        # The module's own code failed (a missing setting, a syntax error): the user's module,
        # so its error is the message, not a traceback through toolwire.
        raise ValueError(
            f"cannot import {module_name!r}: it raised {type(exc).__name__}: {exc}"
        ) from exc
    found: object = module
    for part in attr.split("."):
        try:
            found = getattr(found, part, None)
        except Exception as exc:  # a module `__getattr__` or a property that raises
            raise ValueError(
                f"{module_name!r} raised {type(exc).__name__} looking up {attr!r}: {exc}"
            ) from exc
        if found is None:
            raise ValueError(f"{module_name!r} has no attribute {attr!r}")
    if isinstance(found, type) and not issubclass(found, Toolset):
        # A class (a Pydantic model, say) is no factory of toolsets: calling it would fail
        # with its own error about missing fields.
        raise ValueError(f"{spec!r} is a class, not a Toolset; wrap it: Toolset([{attr}])")
    if not isinstance(found, Toolset) and callable(found):
        try:
            found = cast("Callable[[], object]", found)()
        except Exception as exc:
            raise ValueError(f"{spec!r} raised {type(exc).__name__} when called: {exc}") from exc
    if not isinstance(found, Toolset):
        raise ValueError(f"{spec!r} is not a Toolset (got {type(found).__name__})")
    return found


# --------------------------------------------------------------------------------------------
# Feeding


def new_assembler(
    toolset: Toolset | None = None, limits: Mapping[str, int | str] | None = None
) -> Assembler:
    """A fresh `toolwire.assembler.Assembler`, pre-checking against `toolset` if given.

    Args:
        toolset: Tools to pre-check against.
        limits: Assembler limits other than the defaults (`ToolCall.limits`).

    Returns:
        The assembler.

    Raises:
        MisuseError: A limit is out of range.
    """
    if not limits:
        return Assembler(tools=toolset)
    return Assembler(tools=toolset, **cast("dict[str, Any]", dict(limits)))


def _feed_chunk(asm: Assembler, chunk: object, fmt: FormatName) -> str:
    """Feed one chunk; returns its assistant text."""
    if fmt == "fragments":
        _feed_fragment(asm, chunk)
        return ""
    return asm.feed_chunk(chunk).text


def _feed_fragment(asm: Assembler, chunk: object) -> None:
    if not isinstance(chunk, Mapping):
        raise CorpusError(f"a fragments line must be an object: {chunk!r:.100}")
    delta = cast("Mapping[str, Any]", chunk)
    if "end" in delta:
        asm.end(delta["end"])
    elif "stop" in delta:
        asm.stop(str(delta["stop"]))
    else:
        asm.feed(
            delta.get("index"),
            id=delta.get("id"),
            name=delta.get("name"),
            arguments=delta.get("arguments"),
            type=delta.get("type"),
        )


def feed_sse(asm: Assembler, body: bytes, fmt: FormatName = "auto") -> str:
    """Feed one raw SSE body to `asm` through the core's raw path (`Assembler.feed_sse`).

    The core detects the wire format per event, so `fmt` only documents what the caller
    expects; a body in another format is still read correctly.

    Args:
        asm: A fresh assembler.
        body: The raw bytes, as captured.
        fmt: The wire format, or `auto`.

    Returns:
        The assistant text of the stream.
    """
    del fmt  # detected per event by the core
    asm.feed_sse(body)
    return asm.text


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True, slots=True)
class ErrorSite:
    """Where a core error became certain.

    Attributes:
        kind: The core error kind.
        message: Its message.
        offset: Byte offset in the argument text.
        path: JSON Pointer of the value concerned.
        chunk: The 0-based chunk after which the pre-check reported it, when known.
    """

    kind: str
    message: str
    offset: int
    path: str
    chunk: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The site as a JSON-ready dict."""
        return {
            "kind": self.kind,
            "message": self.message,
            "offset": self.offset,
            "path": self.path,
            "chunk": self.chunk,
        }


@dataclass(frozen=True, slots=True)
class CallResult:
    """What one replayed call became, and whether that is what the corpus expects.

    Attributes:
        ordinal: The call's ordinal in its entry.
        tool: The tool name ("" when none arrived).
        call_id: The call id.
        arguments: The raw argument text.
        state: The final state.
        code: The error code (None when ok).
        error: Where the core error became certain, if the core reported one.
        field_errors: The validation errors, as payload dicts.
        coercions: The coercions applied, as dicts (`path`, `rule`, `from`, `to`).
        expect: The expectation, if the entry has one for this call.
        passed: Whether the call is as expected.
        reason: Why it did not pass.
    """

    ordinal: int
    tool: str
    call_id: str | None
    arguments: str
    state: str
    code: str | None
    error: ErrorSite | None
    field_errors: tuple[dict[str, str], ...]
    coercions: tuple[dict[str, Any], ...]
    expect: Expectation | None
    passed: bool
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        """The call as a JSON-ready dict (the report's `cases[].calls[]` item)."""
        return {
            "ordinal": self.ordinal,
            "tool": self.tool,
            "call_id": self.call_id,
            "state": self.state,
            "code": self.code,
            "error": None if self.error is None else self.error.to_json(),
            "errors": list(self.field_errors),
            "coercions": list(self.coercions),
            "expect": None if self.expect is None else self.expect.to_json(),
            "passed": self.passed,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One replayed corpus entry.

    Attributes:
        entry: The entry.
        calls: Its calls' results, in ordinal order.
        seconds: Time spent assembling, pre-checking and validating it.
        passed: Whether every call is as expected (and the call count matches).
        reason: Why the case failed, in one line.
        schema_changed: Tools whose schema hash differs from the one recorded with the entry.
        text: Assistant text seen in the stream.
    """

    entry: Entry
    calls: tuple[CallResult, ...]
    seconds: float
    passed: bool
    reason: str | None
    schema_changed: tuple[str, ...] = ()
    text: str = ""

    def to_json(self) -> dict[str, Any]:
        """The case as a JSON-ready dict (the report's `cases[]` item)."""
        entry = self.entry
        return {
            "key": entry.key,
            "source": _printable(entry.source),
            "kind": entry.kind,
            "format": entry.format,
            "note": entry.note,
            "ms": round(self.seconds * 1000, 3),
            "passed": self.passed,
            "reason": self.reason,
            "schema_changed": list(self.schema_changed),
            "calls": [c.to_json() for c in self.calls],
        }


def verdict(call: ToolCall, outcome: Outcome | None) -> tuple[str, str | None]:
    """The final state and error code of a call (see the module docs for the rules).

    Args:
        call: The assembled call.
        outcome: Its validation outcome, or None when replaying without a toolset.

    Returns:
        `(state, code)`; `code` is None for an ok call.
    """
    if outcome is None:
        error = call.error
        return ("ok", None) if error is None else ("model_error", error.kind)
    if outcome.ok:
        return "ok", None
    if outcome.errors:
        return outcome.kind, outcome.errors[0].code
    if call.error is not None:
        return outcome.kind, call.error.kind
    return outcome.kind, outcome.error_type or None


def _mismatch(expect: Expectation, result: CallResult) -> str | None:
    got = f"{result.state}/{result.code}" if result.code else result.state
    if expect.state != result.state or (expect.code is not None and expect.code != result.code):
        want = f"{expect.state}/{expect.code}" if expect.code else expect.state
        return f"expected {want}, got {got}"
    if expect.tool is not None and expect.tool != result.tool:
        return f"expected tool {expect.tool!r}, got {result.tool!r}"
    if expect.coercions is not None:
        rules = tuple(sorted(str(c["rule"]) for c in result.coercions))
        if rules != expect.coercions:
            return f"expected coercions {list(expect.coercions)}, got {list(rules)}"
    return None


def schema_hash(toolset: Toolset, name: str) -> str:
    """The sha256 (hex) of the canonical JSON of `toolset.schema(name)`.

    Canonical: keys sorted, no whitespace, non-ASCII kept as UTF-8, so the hash changes exactly
    when the pre-check schema does.

    Raises:
        KeyError: If no tool has that name.
    """
    canonical = json.dumps(
        toolset.schema(name), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _site(call: ToolCall, toolset: Toolset | None, chunk: int | None) -> ErrorSite | None:
    """Where the call's core error became certain, with a secret the recorder would hide
    hidden in its message and path too: a key the model made of a secret argument is quoted
    there exactly (`unexpected property "sk-..."`), and a report is shown and stored as a
    recording is (a hand-written corpus holds secrets a recording would not)."""
    from toolwire.recorder import hidden_texts, redaction_schema

    err = call.error
    if err is None:
        return None
    schema = redaction_schema(call.name, toolset)
    secrets = [] if schema is None else hidden_texts(call.arguments, schema)
    message = without_values(err.message, secrets) if secrets else err.message
    path = path_without_values(err.path, call.arguments, secrets)
    return ErrorSite(err.kind, message, err.offset, path, chunk)


def replay_entry(entry: Entry, toolset: Toolset | None = None) -> CaseResult:
    """Replay one entry through the assembler, the pre-check and validation.

    Args:
        entry: The corpus entry.
        toolset: Tools to pre-check and validate against; None checks JSON only.

    Returns:
        The case result.
    """
    started = time.perf_counter()
    try:
        asm = new_assembler(toolset, entry.limits)
    except MisuseError as exc:
        raise CorpusError(f"{entry.key}: its limits cannot be used: {exc}") from exc
    sites: dict[int, int] = {}  # ordinal -> chunk after which the pre-check flagged it
    text_parts: list[str] = []
    if entry.kind == "call":
        try:
            asm.feed(
                0,
                id=entry.call_id,
                name=entry.tool,
                type=entry.call_type,
                arguments=raw_bytes(entry.arguments),
            )
            end = entry.end or {}
            if "stop" in end:
                asm.stop(end["stop"])
            elif "lost" in end:
                asm.lose_arguments(0, end["lost"])
            elif "mismatch" in end:
                asm._mismatch_arguments(0, end["mismatch"])  # pyright: ignore[reportPrivateUsage]
            elif "refused" in end:
                _refuse(asm, entry)
            elif end:
                asm.limit_reached()
        except _UNREPLAYABLE as exc:
            raise CorpusError(f"{entry.key}: the call cannot be replayed: {exc}") from exc
    elif entry.body is not None:
        text_parts.append(feed_sse(asm, entry.body, entry.format))
    else:
        if entry.format not in ("auto", "fragments"):
            # The recorded format, not a guess from the first chunk; the stream is read as
            # `feed_chunk` reads it live, end-of-stream rules included.
            read_chunks_as(asm, entry.format)
        for number, chunk in enumerate(entry.chunks):
            try:
                text_parts.append(_feed_chunk(asm, chunk, entry.format))
            except _UNREPLAYABLE as exc:
                raise CorpusError(
                    f"{entry.key}: chunk {number} cannot be replayed: {exc}: {chunk!r:.200}"
                ) from exc
            for ordinal, _ in asm.drain_errors():
                sites.setdefault(ordinal, number)
    if entry.interrupted is not None:
        # The live connection broke off here: calls still open end as they did live.
        asm.interrupt(entry.interrupted)
    calls = asm.finish()
    if entry.kind == "call":
        # Only the recorded call: others `_refuse` started stand for the rest of the response.
        calls = calls[:1]
    # Events the raw path could not read: whatever they held is gone (a call may be missing).
    unread = [e for e in asm.stream_errors() if e[0] in _UNREAD_EVENTS]
    outcomes = [None if toolset is None else toolset.validate(c) for c in calls]
    seconds = time.perf_counter() - started
    expects = entry.expect
    results: list[CallResult] = []
    for call, outcome in zip(calls, outcomes, strict=True):
        state, code = verdict(call, outcome)
        site = _site(call, toolset, sites.get(call.ordinal))
        expect = None
        if expects is not None and call.ordinal < len(expects):
            expect = expects[call.ordinal]
        result = CallResult(
            ordinal=call.ordinal,
            tool=call.name or "",
            call_id=call.id,
            arguments=call.arguments,
            state=state,
            code=code,
            error=site,
            field_errors=tuple(e.as_payload() for e in (outcome.errors if outcome else [])),
            coercions=tuple(
                {"path": c.path, "rule": c.rule, "from": c.from_, "to": c.to}
                for c in (outcome.coercions if outcome else [])
            ),
            expect=expect,
            passed=False,
            reason=None,
        )
        if expect is not None:
            reason = _mismatch(expect, result)
        elif expects is not None:
            reason = "not in expect"
        else:
            reason = None if state == "ok" else f"not ok: {state}/{code}"
        results.append(_with(result, passed=reason is None, reason=reason))
    failing = [r for r in results if not r.passed]
    reason: str | None = None
    if expects is not None and len(expects) != len(calls):
        reason = f"expected {len(expects)} calls, got {len(calls)}"
    elif expects is None and unread:
        # Without an `expect` the case asks for clean calls, and a call an unread event held
        # would not even be listed: the stream's own errors fail it.
        kind, number, message = unread[0]
        reason = f"event {number} could not be read ({kind}: {message})"
        if len(unread) > 1:
            reason += f" (+{len(unread) - 1} more)"
    elif failing:
        first = failing[0]
        reason = f"#{first.ordinal} {first.tool or '<no name>'}: {first.reason}"
        if len(failing) > 1:
            reason += f" (+{len(failing) - 1} more)"
    changed: list[str] = []
    if toolset is not None:
        for name, recorded in sorted(entry.schema_hashes.items()):
            if name in toolset and schema_hash(toolset, name) != recorded:
                changed.append(name)
    return CaseResult(
        entry=entry,
        calls=tuple(results),
        seconds=seconds,
        passed=reason is None,
        # It may quote an `expect` holding a lone surrogate escape: printable either way.
        reason=None if reason is None else _printable(reason),
        schema_changed=tuple(changed),
        text=_paired("".join(text_parts)),
    )


# What the assembler raises for a value a record holds that no stream could have sent: of the
# wrong type, an integer past its range, a string UTF-8 cannot hold (a lone surrogate escape).
_UNREPLAYABLE = (MisuseError, TypeError, OverflowError, UnicodeError)


def _refuse(asm: Assembler, entry: Entry) -> None:
    """Takes the response of a recorded call past the stream limit that refused it live, so
    that it is refused whole again, with the same message: the rest of the response that
    took it there is not in a call record."""
    name = str((entry.end or {})["refused"])
    limit = entry.limits.get(name, STREAM_LIMIT_DEFAULTS[name])
    if not isinstance(limit, int):
        raise CorpusError(f"{entry.key}: its {name} limit is not a number: {limit!r:.50}")
    if name == "max_stream_bytes":
        # Text counts toward the limit as arguments do.
        asm._keep_text(limit + 1)  # pyright: ignore[reportPrivateUsage]
        return
    if limit > _MOST_CALLS_REFUSED:
        raise CorpusError(
            f"{entry.key}: a refusal by max_calls of {limit} calls cannot be replayed "
            f"(at most {_MOST_CALLS_REFUSED})"
        )
    for index in range(1, limit + 1):
        # Wire keys no recorded call uses: each starts a call of its own.
        asm.feed(-index)


# `stream_errors` kinds after which data is missing: the event was skipped unread.
_UNREAD_EVENTS = frozenset({"malformed_event", "event_too_large"})


def _with(result: CallResult, *, passed: bool, reason: str | None) -> CallResult:
    fields = {name: getattr(result, name) for name in CallResult.__slots__}
    fields.update(passed=passed, reason=None if reason is None else _printable(reason))
    return CallResult(**fields)


# --------------------------------------------------------------------------------------------
# Reports


@dataclass(frozen=True, slots=True)
class Report:
    """The result of replaying a corpus.

    Attributes:
        cases: One result per entry, in corpus order.
        tools: How the toolset was named (`module:attribute`), or None.
        seconds: Wall time of the whole replay.
    """

    cases: tuple[CaseResult, ...]
    tools: str | None = None
    seconds: float = 0.0

    @property
    def calls(self) -> list[CallResult]:
        """Every call of every case."""
        return [call for case in self.cases for call in case.calls]

    @property
    def failures(self) -> list[CaseResult]:
        """The cases that are not as expected."""
        return [case for case in self.cases if not case.passed]

    @property
    def ok(self) -> bool:
        """True when every case is as expected."""
        return all(case.passed for case in self.cases)

    def by_state(self) -> dict[str, int]:
        """Calls per final state."""
        return dict(Counter(c.state for c in self.calls).most_common())

    def by_code(self) -> dict[str, int]:
        """Calls per error code (ok calls are not counted)."""
        return dict(Counter(c.code for c in self.calls if c.code).most_common())

    def by_tool(self) -> dict[str, dict[str, int]]:
        """Calls per tool and final state."""
        out: dict[str, Counter[str]] = {}
        for call in self.calls:
            out.setdefault(call.tool or "<no name>", Counter())[call.state] += 1
        return {tool: dict(counts) for tool, counts in sorted(out.items())}

    def coercions(self) -> dict[str, int]:
        """Coercions applied, per rule."""
        rules = Counter(str(c["rule"]) for call in self.calls for c in call.coercions)
        return dict(rules.most_common())

    def slowest(self, n: int = _SLOWEST) -> list[CaseResult]:
        """The `n` cases that took longest."""
        return sorted(self.cases, key=lambda c: c.seconds, reverse=True)[:n]

    def to_json(self) -> dict[str, Any]:
        """The machine-readable report (`--json`); its layout is `REPORT_SCHEMA_VERSION`."""
        from toolwire import __version__

        calls = self.calls
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "toolwire_version": __version__,
            "tools": self.tools,
            "ok": self.ok,
            "totals": {
                "cases": len(self.cases),
                "passed": sum(1 for c in self.cases if c.passed),
                "failed": sum(1 for c in self.cases if not c.passed),
                "calls": len(calls),
                "ms": round(self.seconds * 1000, 3),
            },
            "by_state": self.by_state(),
            "by_tool": self.by_tool(),
            "by_code": self.by_code(),
            "coercions": self.coercions(),
            "slowest": [
                {"key": c.entry.key, "ms": round(c.seconds * 1000, 3)} for c in self.slowest()
            ],
            "cases": [case.to_json() for case in self.cases],
        }


def replay(
    entries: Sequence[Entry],
    toolset: Toolset | None = None,
    *,
    tools: str | None = None,
    on_case: Callable[[CaseResult], None] | None = None,
) -> Report:
    """Replay every entry and collect the report.

    Args:
        entries: The corpus entries.
        toolset: Tools to pre-check and validate against; None checks JSON only.
        tools: How the toolset is named, for the report.
        on_case: Called after each case (progress bars).

    Returns:
        The report.
    """
    if isinstance(entries, (str, bytes, os.PathLike)):
        raise TypeError(
            "replay takes corpus entries, not a path: replay(load_corpus(path)) reads a file"
        )
    entries = list(entries)
    for index, entry in enumerate(entries):
        if not isinstance(cast(object, entry), Entry):
            raise TypeError(
                f"entries[{index}] must be an Entry (from load_corpus), not {type(entry).__name__}"
            )
    started = time.perf_counter()
    cases: list[CaseResult] = []
    for entry in entries:
        case = replay_entry(entry, toolset)
        cases.append(case)
        if on_case is not None:
            on_case(case)
    return Report(tuple(cases), tools=tools, seconds=time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class BaselineDiff:
    """How a report differs from an earlier one, by case key.

    Attributes:
        newly_failing: Cases that fail now and passed in the baseline (or were not in it).
        newly_passing: Cases that pass now and failed in the baseline.
        still_failing: Cases that fail in both.
        missing: Cases of the baseline that this run did not replay.
    """

    newly_failing: tuple[str, ...]
    newly_passing: tuple[str, ...]
    still_failing: tuple[str, ...]
    missing: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        """The diff as a JSON-ready dict (the report's `baseline` member)."""
        return {
            "newly_failing": list(self.newly_failing),
            "newly_passing": list(self.newly_passing),
            "still_failing": list(self.still_failing),
            "missing": list(self.missing),
        }


def compare(report: Report, baseline: Mapping[str, Any]) -> BaselineDiff:
    """Compare a report with an earlier `--json` report.

    A case that fails now and was absent from the baseline counts as newly failing: a new
    corpus entry that fails is a regression CI should see.

    Args:
        report: This run.
        baseline: The earlier report, as parsed JSON.

    Returns:
        The differences.

    Raises:
        CorpusError: The baseline is not a report this toolwire can read.
    """
    if not isinstance(cast(object, report), Report):
        raise TypeError(f"report must be the Report of replay, not {type(report).__name__}")
    if not isinstance(cast(object, baseline), Mapping):
        hint = " (pass its to_json())" if isinstance(baseline, Report) else ""
        raise CorpusError(
            "the baseline must be an earlier report as parsed JSON (a dict), not "
            f"{type(baseline).__name__}{hint}"
        )
    version = baseline.get("schema_version")
    cases = baseline.get("cases")
    if version != REPORT_SCHEMA_VERSION or not isinstance(cases, list):
        raise CorpusError(
            f"the baseline is not a toolwire report of schema_version {REPORT_SCHEMA_VERSION}"
        )
    before: dict[str, bool] = {}
    for item in cast("list[object]", cases):
        if isinstance(item, Mapping):
            case = cast("Mapping[str, Any]", item)
            before[str(case.get("key"))] = bool(case.get("passed"))
    now = {case.entry.key: case.passed for case in report.cases}
    return BaselineDiff(
        newly_failing=tuple(k for k, ok in now.items() if not ok and before.get(k, True)),
        newly_passing=tuple(k for k, ok in now.items() if ok and before.get(k) is False),
        still_failing=tuple(k for k, ok in now.items() if not ok and before.get(k) is False),
        missing=tuple(k for k in before if k not in now),
    )
