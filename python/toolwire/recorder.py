"""Record failed tool calls (and optionally whole streams) into a replayable JSONL corpus.

Hooks, from most to least automatic:

* `Recorder.assemble(source, tools)` is `toolwire.assemble` with recording: it tees the chunks
  and records when the stream ends (or is closed early).
* `Recorder.observe(event)` for callers that iterate `toolwire.assemble` themselves: pass every
  event; `CallCompleted` events of failed calls are recorded.
* `recorder(call, outcome)` is a plain callable for an executor pipeline or any other place that
  holds a call and its outcome; it records the call when it failed.

Each line is one corpus record (`toolwire.replay` documents the format) with `schema_version`,
the tool's `schema_hash` and what was `observed`. Records carry no `expect`: a recorded failure
is an observation, not a specification; triage adds `expect` (or a `--baseline` run tracks it).

Redaction: every value validation would show as `"[redacted]"` in an error becomes
`"[redacted]"` in the raw argument text (validation's own rule, `hidden_values`: values at
`x-secret` / `SecretStr` fields, a string or number where secrets belong, a key the schema does
not place next to secrets), then the `redact` hook (`(json_pointer, text) -> text`, the same
signature as `Toolset(redact=...)`) is applied to every other string value. Both edit the raw
text in place, so a truncated or invalid text stays truncated or invalid; a value that is both
secret and malformed loses its malformation (secrecy wins). A call of no tool the toolset knows
(no name, or an unknown one) has every value hidden while any tool declares a secret. A key
that quotes a hidden value (the model sent a secret again as a key) is hidden within it, and
so is the recorded error path's; the record still fails where the call did.

Whole streams are recorded only when nothing would need redacting, since a secret may be cut
across chunks: while the toolset declares any secret, only a raw body read in full (no event
skipped unread, no stream limit passed, per `stream_errors`), each of its calls named as a
tool that declares none. Otherwise the stream's failed calls are recorded one by one, redacted.

Size cap: before a record would push `corpus.jsonl` past `max_bytes`, the file is rotated to
`corpus.1.jsonl` (`corpus.1` to `corpus.2`, ...), keeping `backups` old files.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import hashlib
import json
import re
import threading
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from toolwire._pickling import LiveState
from toolwire.coercion import pointer
from toolwire.events import CallCompleted, StreamEnded
from toolwire.formats._fields import get, plain
from toolwire.payloads import FREE_FORM_TYPE, compact_json, is_free_form, require_call
from toolwire.replay import (
    CORPUS_SCHEMA_VERSION,
    STREAM_LIMIT_DEFAULTS,
    raw_bytes,
    schema_hash,
    verdict,
)
from toolwire.schema_export import secret_patterns
from toolwire.stream import AssemblerLimits, ToolStream, is_provider_error
from toolwire.subschemas import SECRET_KEY, is_marked_secret, resolve, same_value
from toolwire.validation import (
    REDACTED,
    Redactor,
    hidden_values,
    path_without_values,
    without_values,
)

if TYPE_CHECKING:
    from toolwire._core import ToolCall
    from toolwire.events import Event
    from toolwire.toolset import Toolset
    from toolwire.validation import Outcome

__all__ = [
    "Recorder",
    "RecordingToolStream",
    "StreamPolicy",
    "hidden_texts",
    "redact_arguments",
    "redaction_schema",
    "schema_hash",
    "secret_pointers",
]

StreamPolicy: TypeAlias = Literal["off", "failed", "all"]
"""Which whole streams to record: none, those with a failed call, or every stream."""
Path_: TypeAlias = list[str | int]

DEFAULT_MAX_BYTES = 10_000_000
DEFAULT_BACKUPS = 5


# --------------------------------------------------------------------------------------------
# Redaction


def _same(root: Mapping[str, Any], node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`node` and every schema that describes the same value (nested, local references
    followed, each once)."""
    out: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        out.append(current)
        ref = current.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            seen.add(ref)
            target = resolve(root, ref)
            if target is not None:
                pending.append(target)
        pending += same_value(current)
    return out


def _secret_here(root: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    return any(is_marked_secret(n) for n in _same(root, node))


def _end_of(call: ToolCall) -> dict[str, Any] | None:
    """How the stream ended the call, when its text alone does not say: the provider stopped
    it (`stop`, with the reason), the stream broke off before its arguments began (`cut`), an
    event that carried part of them could not be read (`lost`, with the error's message), the
    stream's events disagreed about them (`mismatch`, with the error's message), or
    the response passed a stream limit and was refused whole (`refused`, with the limit's
    name). Replay ends the call the same way."""
    error = call.error
    if error is None:
        return None
    refused = _refusal(call)
    if refused is not None:
        return {"refused": refused[0]}
    if error.kind == "lost_event":
        return {"lost": error.message}
    if error.kind == "arguments_mismatch":
        return {"mismatch": error.message}
    if error.kind == "filtered":
        reason: object = getattr(call, "stop_reason", None)
        return {"stop": reason if isinstance(reason, str) else "recorded"}
    if error.kind == "truncated" and not call.arguments_bytes.strip():
        return {"cut": True}
    return None


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def _holds_json(token: str, closed: bool) -> bool:
    """Whether a string token holds a JSON object or array (which validation may parse), read
    leniently: cut off, or with an escape JSON does not have, it may still be one."""
    raw = token[1:-1] if closed else token[1:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an invalid escape, which this reading allows
            decoded = codecs.decode(raw, "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        decoded = raw
    return decoded.lstrip()[:1] in ("{", "[")


def _broken_at(text: str) -> int | None:
    """Where `text` stops being readable JSON structure, as an index into the text; None when
    its structure holds (it may still be cut off or hold a bad escape)."""
    from toolwire._core import JsonError, Scanner

    scanner = Scanner()
    data = text.encode("utf-8", "surrogatepass")
    try:
        scanner.push(data)
        scanner.finish()
    except JsonError as exc:
        # Only a byte that breaks the structure: inside well-delimited strings (a bad escape,
        # a raw control character) the walk still knows every path.
        if exc.error.kind not in ("unexpected_byte", "trailing_data"):
            return None
        return len(data[: exc.error.offset].decode("utf-8", "ignore"))
    return None


def _refusal(call: object) -> tuple[str, int] | None:
    """The stream limit that refused the call's response whole, and its value, if one did:
    its `too_large` error names the setting as its keyword (the `too_large` of one call past
    `max_bytes` names none), and `ToolCall.limits` holds the value when not the default."""
    error: object = getattr(call, "error", None)
    setting: object = getattr(error, "keyword", None)
    if getattr(error, "kind", None) != "too_large" or not isinstance(setting, str):
        return None
    default = STREAM_LIMIT_DEFAULTS.get(setting)
    if default is None:
        return None
    limits: object = getattr(call, "limits", None)
    value = cast("dict[str, object]", limits).get(setting) if isinstance(limits, dict) else None
    return setting, value if isinstance(value, int) else default


def limits_of(
    calls: Iterable[object], limits: Mapping[str, object] | None = None
) -> dict[str, int | str]:
    """The assembler limits the calls were read with, where they differ from the defaults:
    replay reads with the same.

    Args:
        calls: The calls of one stream (they share `ToolCall.limits`, the response's
            `max_calls` and `max_stream_bytes` included).
        limits: The limits the stream's assembler was made with, when the caller knows them
            (`AssemblerLimits`): for calls that do not say theirs (look-alikes of
            `ToolCall`, a stream that ended with no call).

    Returns:
        The limits, as `Assembler` keyword arguments.
    """
    out: dict[str, int | str] = {}
    for name, default in STREAM_LIMIT_DEFAULTS.items():
        value = (limits or {}).get(name)
        if isinstance(value, int) and value != default:
            out[name] = value
    for call in calls:
        found: object = getattr(call, "limits", None)
        if isinstance(found, dict):
            out.update(cast("dict[str, int | str]", found))
            break
    return out


def secret_pointers(schema: Mapping[str, Any]) -> list[str]:
    """JSON Pointers of the secret properties declared in a tool schema (for docs and tests).

    Args:
        schema: A tool schema (`Toolset.schema(name)`).

    Returns:
        The pointers of `x-secret` / `SecretStr` properties, depth first.
    """
    out: list[str] = []

    def walk(node: Mapping[str, Any], prefix: str, refs: frozenset[str]) -> None:
        candidates = _same(schema, node)
        for candidate in candidates:
            ref = candidate.get("$ref")
            if isinstance(ref, str) and ref in refs:
                # A recursive definition: its fields were listed where it first appeared.
                return
            if isinstance(ref, str):
                refs |= {ref}
        for candidate in candidates:
            props = candidate.get("properties")
            if not isinstance(props, Mapping):
                continue
            for key, child in cast("Mapping[str, object]", props).items():
                if not isinstance(child, Mapping):
                    continue
                sub = cast("Mapping[str, Any]", child)
                ptr = f"{prefix}/{key.replace('~', '~0').replace('/', '~1')}"
                if _secret_here(schema, sub):
                    if ptr not in out:
                        out.append(ptr)
                else:
                    walk(sub, ptr, refs)

    walk(schema, "", frozenset())
    return out


def redaction_schema(tool: str | None, toolset: Toolset | None) -> Mapping[str, Any] | None:
    """The schema a call's arguments are redacted by (for `redact_arguments`), or None.

    A call of no tool the toolset knows (its name lost with a malformed event, or misspelt)
    may be a call of one that declares secrets: while any tool does, every value of it is
    hidden, keys and structure kept, as no schema says which of its values are safe to keep.

    Args:
        tool: The call's tool name, if it has one.
        toolset: The toolset the call was validated with.
    """
    if toolset is None:
        return None
    if tool is not None and tool in toolset:
        return toolset.schema(tool)
    if any(secret_patterns(toolset.schema(name)) for name in toolset.names()):
        return _UNKNOWN_TOOL
    return None


def redact_arguments(
    text: str,
    schema: Mapping[str, Any] | None,
    redact: Redactor | None = None,
) -> str:
    """Redact a raw argument text in place, keeping everything else byte for byte.

    A small tolerant walk over the text (it never fails: after malformed input it copies the
    rest), run only on failed calls being recorded, never on the streaming path.

    Args:
        text: The raw argument text, possibly truncated or invalid.
        schema: The tool's schema; values at its secret fields become `"[redacted]"`.
        redact: Hook applied to every other string value (`(json_pointer, text) -> text`).

    What is secret is decided by validation's own rule (`toolwire.validation.hidden_values`),
    so a record hides at least what an error payload hides: a value at or under a secret
    field, a string or number where secrets belong (`"tokens": "x"` for a list of them), and
    any value under a key or index the schema does not place next to secrets (a misspelt
    secret field, the arguments under a wrapper key). `null`, `true` and `false` stay where
    secrets only may sit. A tool that declares secrets gets more: validation also reads
    arguments in shapes the schema does not describe, so a string holding a JSON object or
    array becomes `"[redacted]"` too, and the text past the first byte that breaks JSON
    (Python quotes, bare keys), which no walk can read reliably, becomes `[redacted]`. A key
    that quotes a hidden value (`{"token": "sk-1", "sk-1": 1}`) is hidden in it, as in error
    paths: the key stays, so the record still fails where the call did.

    Returns:
        The redacted text.
    """
    return _redacted(text, schema, redact)[0]


def hidden_texts(text: str, schema: Mapping[str, Any]) -> list[str]:
    """The texts of the values `redact_arguments` hides in `text`: what a key, a path or an
    error message quoting the arguments must hide too.

    Args:
        text: The raw argument text, possibly truncated or invalid.
        schema: The tool's schema (`redaction_schema`).

    Returns:
        The hidden values' texts, as the arguments wrote them (strings decoded).
    """
    return _redacted(text, schema, None)[1]


def _redacted(
    text: str, schema: Mapping[str, Any] | None, redact: Redactor | None
) -> tuple[str, list[str]]:
    """`redact_arguments`, and the texts of the values it hid, which a key or a path built
    from the text must not show either."""
    if schema is None and redact is None:
        return text, []
    secretive = schema is not None and bool(secret_patterns(schema))
    if secretive:
        broken = _broken_at(text)
        if broken is not None:
            head, hid = _redacted(text[:broken], schema, redact)
            return head + REDACTED, hid
    # Validation's own rule: a record must hide at least what an error payload hides.
    hidden = None if schema is None else hidden_values(schema)
    out: list[str] = []
    # Keys are written as they come and hidden once every hidden value is known: a key may
    # quote a value sent after it. `keys` holds each key's place in `out`, decoded.
    keys: list[tuple[int, str | None]] = []
    hid: list[str] = []
    # Frames: [is_object, key or index, expecting_key]
    stack: list[list[Any]] = []
    i, n = 0, len(text)

    def here() -> Path_:
        return [frame[1] for frame in stack if frame[1] is not None]

    def value_path() -> Path_ | None:
        if stack and stack[-1][0] and stack[-1][2]:
            return None  # this string is a key
        return here()

    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            closed = j < n
            token = text[i : min(j + 1, n)]
            path = value_path()
            if path is None:
                try:
                    stack[-1][1] = json.loads(token) if closed else token[1:]
                    keys.append((len(out), stack[-1][1] if closed else None))
                except ValueError:
                    stack[-1][1] = token[1:-1]
                    keys.append((len(out), None))
                stack[-1][2] = False
                out.append(token)
            elif hidden is not None and (
                hidden(path, True) or (secretive and _holds_json(token, closed))
            ):
                hid.append(_token_text(token, closed))
                out.append(f'"{REDACTED}"' if closed else f'"{REDACTED}')
            elif redact is not None:
                try:
                    decoded: object = json.loads(token) if closed else None
                except ValueError:
                    decoded = None
                if isinstance(decoded, str):
                    new = redact(pointer(path), decoded)
                    # A lone surrogate the text escaped stays an escape (`compact_json`).
                    out.append(token if new == decoded else compact_json(new))
                else:
                    # Cut off, or an escape JSON does not have: the hook still reads the text
                    # as it stands (the failures recorded most are cut-off calls).
                    raw = token[1:-1] if closed else token[1:]
                    new = redact(pointer(path), raw)
                    # The text's own escapes stay as they were (an invalid one must still
                    # be invalid on replay); a quote the hook wrote must not end the string.
                    body = re.sub(r'(?<!\\)"', r'\\"', new)
                    # Nor may a control character the hook wrote change the error.
                    body = re.sub(r"[\x00-\x1f]", lambda m: json.dumps(m.group())[1:-1], body)
                    out.append(f'"{body}"' if closed else f'"{body}')
            else:
                out.append(token)
            i = min(j + 1, n)
            continue
        if ch in "{[":
            stack.append([ch == "{", None if ch == "{" else 0, ch == "{"])
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == "," and stack:
            if stack[-1][0]:
                stack[-1][1], stack[-1][2] = None, True
            else:
                stack[-1][1] = int(stack[-1][1] or 0) + 1
        elif ch not in " \t\r\n:" and hidden is not None:
            # A bare scalar (number, literal): redact it too when it sits at a secret path.
            j = i
            while j < n and text[j] not in ' \t\r\n,:]}"[{':
                j += 1
            path = value_path()
            # `null`, `true` and `false` (or the start of one, cut off) hold no text to hide
            # where secrets only may sit (a list of them given `null`): kept, so the record
            # replays as it failed.
            literal = any(word.startswith(text[i:j]) for word in ("null", "true", "false"))
            if path is not None and hidden(path, not literal):
                hid.append(text[i:j])
                out.append(f'"{REDACTED}"')
            else:
                out.append(text[i:j])
            i = max(j, i + 1)
            continue
        out.append(ch)
        i += 1
    for at, key in keys if hid else ():
        out[at] = _key_hidden(out[at], key, hid)
    return "".join(out), hid


def _token_text(token: str, closed: bool) -> str:
    """The text a string token holds, decoded when it can be (a key quoting it is decoded)."""
    try:
        decoded: object = json.loads(token) if closed else None
    except ValueError:
        decoded = None
    return decoded if isinstance(decoded, str) else token[1:-1] if closed else token[1:]


def _key_hidden(token: str, key: str | None, secrets: Sequence[str]) -> str:
    """A key's token with each secret it quotes hidden, as validation hides it in a path:
    decoded when it can be (an escape must not keep a secret out of sight), else as written,
    its own escapes kept (a cut-off key stays cut off)."""
    if key is not None:
        shown = without_values(key, secrets)
        return token if shown == key else compact_json(shown)
    return without_values(token, secrets)


# --------------------------------------------------------------------------------------------
# The recorder


@contextlib.contextmanager
def _file_lock(path: Path) -> Generator[None, None, None]:
    """Hold an advisory lock beside `path` while a line is appended: processes writing one
    corpus must not rotate a file from under each other (each rename would race with the
    others, and a record would be lost). Without `fcntl` (Windows) only threads are ordered."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(f"{path}.lock", "ab") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# What a record is made of: a call of another kind is refused with what to pass.
_RECORDED = ("arguments_bytes", "name", "id", "error")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Recorder(LiveState):
    """Appends failed calls, and optionally whole streams, to a JSONL corpus file.

    Thread-safe; one instance per corpus file. Nothing is opened until the first record.

    Args:
        path: The corpus file (`corpus.jsonl`); created with its directory if missing.
        toolset: Gives schema hashes and the secret fields to redact.
        redact: Extra redaction hook `(json_pointer, text) -> text` for string values.
        streams: Which whole streams to record (`off`, `failed`, `all`).
        max_bytes: Rotate before the file would grow past this size.
        backups: How many rotated files to keep (`corpus.1.jsonl` ... `corpus.N.jsonl`).
        dedupe: Skip a call already recorded by this instance (same tool and arguments).
        clock: Returns the `recorded_at` timestamp (ISO 8601, UTC).

    Raises:
        ValueError: On a bad `streams`, `max_bytes` or `backups`.
    """

    _not_copied = (
        "it appends to its file under a lock of this process. "
        "Open one in each process, on a file of its own"
    )

    def __init__(
        self,
        path: str | Path,
        *,
        toolset: Toolset | None = None,
        redact: Redactor | None = None,
        streams: StreamPolicy = "off",
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        dedupe: bool = True,
        clock: Callable[[], str] = _now,
    ) -> None:
        if streams not in ("off", "failed", "all"):
            raise ValueError(f"streams must be 'off', 'failed' or 'all', not {streams!r}")
        for name, value in (("max_bytes", max_bytes), ("backups", backups)):
            number = cast(object, value)
            if isinstance(number, bool) or not isinstance(number, int):
                # `backups=1.5` was taken, and the first rotation raised out of `write`.
                raise ValueError(f"{name} must be an int, not {type(number).__name__}")
        if max_bytes < 1 or backups < 0:
            raise ValueError("max_bytes must be positive and backups not negative")
        self.path = Path(path)
        self.toolset = toolset
        self.redact = redact
        self.streams: StreamPolicy = streams
        self.max_bytes = max_bytes
        self.backups = backups
        self.dedupe = dedupe
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self.written = 0
        """Records written by this instance."""

    # Files --------------------------------------------------------------------------------

    def rotated(self, n: int) -> Path:
        """The path of the `n`-th rotated file (`corpus.jsonl` -> `corpus.<n>.jsonl`)."""
        return self.path.with_name(f"{self.path.stem}.{n}{self.path.suffix}")

    def files(self) -> list[Path]:
        """The corpus files that exist, current file first."""
        # Found by listing the directory, not by trying each of `backups` names: the work
        # follows the files there are, whatever `backups` allows.
        shape = re.compile(
            rf"{re.escape(self.path.stem)}\.([1-9][0-9]*){re.escape(self.path.suffix)}"
        )
        rotated: list[tuple[int, Path]] = []
        with contextlib.suppress(OSError):
            for entry in self.path.parent.iterdir():
                found = shape.fullmatch(entry.name)
                if found is not None and int(found.group(1)) <= self.backups:
                    rotated.append((int(found.group(1)), entry))
        current = [self.path] if self.path.exists() else []
        return current + [p for _, p in sorted(rotated)]

    def _rotate(self) -> None:
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        # The rotated files run from 1 without a gap (as rotation makes them): shift those
        # that exist, the oldest dropped when all `backups` do, so a rotation costs what is
        # there (a `backups` of a billion took a billion renames and hung the write).
        last = 0
        while last < self.backups and self.rotated(last + 1).exists():
            last += 1
        if last == self.backups:
            self.rotated(last).unlink(missing_ok=True)
            last -= 1
        for k in range(last, 0, -1):
            with contextlib.suppress(FileNotFoundError):
                self.rotated(k).replace(self.rotated(k + 1))
        with contextlib.suppress(FileNotFoundError):
            self.path.replace(self.rotated(1))

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record (a JSON object) as one line, rotating first if needed.

        Args:
            record: The record; `schema_version` and `recorded_at` are added when missing.
        """
        full = {"schema_version": CORPUS_SCHEMA_VERSION, **record}
        full.setdefault("recorded_at", self.clock())
        # Lone surrogates (a body's bytes that are not UTF-8) go out as `\udcXX` escapes.
        line = (compact_json(full, default=_blob) + "\n").encode()
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _file_lock(self.path):
                self._append(line)

    def _append(self, line: bytes) -> None:
        """Rotate if `line` would pass the cap, then append it; under both locks."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if size and size + len(line) > self.max_bytes:
            self._rotate()
        # One write per line, opened for append each time: whole lines, and no handle
        # outlives the call.
        with self.path.open("ab") as f:
            f.write(line)
        self.written += 1

    # Records ------------------------------------------------------------------------------

    def _schema(self, tool: str | None, toolset: Toolset | None = None) -> Mapping[str, Any] | None:
        toolset = self.toolset if toolset is None else toolset
        if toolset is None or tool is None or tool not in toolset:
            return None
        return toolset.schema(tool)

    def _hash(self, tool: str | None, toolset: Toolset | None = None) -> str | None:
        toolset = self.toolset if toolset is None else toolset
        if toolset is None or tool is None or tool not in toolset:
            return None
        return schema_hash(toolset, tool)

    def _secret_tools(self, toolset: Toolset | None) -> set[str]:
        """The tools of the toolset whose schemas declare a secret anywhere."""
        toolset = self.toolset if toolset is None else toolset
        if toolset is None:
            return set()
        return {name for name in toolset.names() if secret_patterns(toolset.schema(name))}

    def _redaction_schema(
        self, tool: str | None, toolset: Toolset | None
    ) -> Mapping[str, Any] | None:
        return redaction_schema(tool, self.toolset if toolset is None else toolset)

    def _whole_is_safe(
        self,
        calls: Sequence[ToolCall],
        stream_errors: Iterable[tuple[str, int, str]] | None,
        *,
        raw: bool,
        toolset: Toolset | None,
    ) -> bool:
        """Whether a stream may be stored as received: nothing in it needs redacting.

        The body may hold what no listed call shows: an event skipped unread (a call in it is
        not listed at all), a call refused past a stream limit, a call whose name was lost. So
        while the toolset declares any secret, only a raw body whose stream errors say every
        event was read, each call named as a tool that declares none, is stored whole. The
        chunk path does not report a chunk it could not read, so it never qualifies.
        """
        if self.redact is not None:
            return False
        secret = self._secret_tools(toolset)
        if not secret:
            return True
        if not raw or stream_errors is None:
            return False
        if any(kind not in _READ_STREAM_ERRORS for kind, _, _ in stream_errors):
            return False
        toolset = self.toolset if toolset is None else toolset
        known: set[str] = set() if toolset is None else set(toolset.names())
        return all(c.name in known and c.name not in secret for c in calls)

    def call_record(
        self,
        call: ToolCall,
        outcome: Outcome | None = None,
        *,
        format: str | None = None,
        toolset: Toolset | None = None,
        limits: AssemblerLimits | None = None,
    ) -> dict[str, Any]:
        """The corpus record of one call (redacted), without writing it.

        Args:
            call: The assembled call.
            outcome: Its validation outcome, if any.
            format: The wire format it came in, for the record.
            toolset: The toolset the call was validated with, when not the recorder's: its
                schemas say what to redact and give the schema hash.
            limits: The limits its assembler was made with (`AssemblerLimits`), for the
                record: `max_calls` and `max_stream_bytes` are not on the call.

        Returns:
            A `call` record.
        """
        require_call(call, _RECORDED)
        state, code = verdict(call, outcome)
        # The bytes as received: bytes that are not UTF-8 stay `surrogateescape` code points
        # (written as `\udcXX`), which replay turns back into the same bytes.
        raw = call.arguments_bytes.decode("utf-8", "surrogateescape")
        schema = self._redaction_schema(call.name, toolset)
        arguments, hid = _redacted(raw, schema, self.redact)
        digest = _digest(raw_bytes(f"{call.name}\0{arguments}"))
        record: dict[str, Any] = {
            "toolwire": "call",
            "id": f"{call.name or 'unnamed'}-{digest}",
            "tool": call.name,
            "call_id": call.id,
            "arguments": arguments,
        }
        if is_free_form(call):
            # A custom tool's free-form input: replayed as JSON arguments it would read as
            # invalid JSON rather than as the `free_form_call` it was.
            record["type"] = FREE_FORM_TYPE
        schema_digest = self._hash(call.name, toolset)
        if schema_digest is not None:
            record["schema_hash"] = schema_digest
        if format is not None:
            record["format"] = format
        recorded_limits = limits_of([call], limits)
        if recorded_limits:
            record["limits"] = recorded_limits
        observed: dict[str, Any] = {"state": state}
        if code is not None:
            observed["code"] = code
        if call.error is not None:
            observed["offset"] = call.error.offset
            # The core's exact locator: a key in it may quote a secret the text hid.
            observed["path"] = path_without_values(call.error.path, raw, hid)
        record["observed"] = observed
        end = _end_of(call)
        if end is not None:
            # A reason read from the stream's events may quote the arguments.
            record["end"] = {
                k: without_values(v, hid) if isinstance(v, str) else v for k, v in end.items()
            }
        return record

    def record_call(
        self,
        call: ToolCall,
        outcome: Outcome | None = None,
        *,
        format: str | None = None,
        toolset: Toolset | None = None,
        limits: AssemblerLimits | None = None,
    ) -> bool:
        """Record `call` if it failed (its outcome is not ok, or without one, it has an error).

        Args:
            call: The assembled call.
            outcome: Its validation outcome, if any.
            format: The wire format it came in, for the record.
            toolset: The toolset the call was validated with, when not the recorder's.
            limits: The limits its assembler was made with (`AssemblerLimits`), if known.

        Returns:
            True if a record was written.
        """
        require_call(call, _RECORDED)
        failed = (not outcome.ok) if outcome is not None else call.error is not None
        if not failed:
            return False
        record = self.call_record(call, outcome, format=format, toolset=toolset, limits=limits)
        if self.dedupe:
            with self._lock:
                if record["id"] in self._seen:
                    return False
                self._seen.add(record["id"])
        self.write(record)
        return True

    def __call__(self, call: ToolCall, outcome: Outcome | None = None) -> bool:
        """Executor hook: `recorder(call, outcome)` records the call if it failed."""
        return self.record_call(call, outcome)

    def record_stream(
        self,
        calls: Sequence[ToolCall],
        outcomes: Sequence[Outcome | None] = (),
        *,
        chunks: Sequence[object] | None = None,
        body: bytes | None = None,
        format: str | None = None,
        policy: StreamPolicy | None = None,
        interrupted: str | None = None,
        toolset: Toolset | None = None,
        stream_errors: Iterable[tuple[str, int, str]] | None = None,
        limits: AssemblerLimits | None = None,
    ) -> int:
        """Record one finished stream: as a whole (per `policy`) or its failed calls.

        While the toolset declares any secret, a stream is stored whole only when nothing in
        it can need redacting: a raw `body` whose `stream_errors` are given and show every
        event read, each call named as a tool that declares no secret. Otherwise its failed
        calls are recorded one by one, redacted.

        Args:
            calls: The stream's calls (`ToolStream.calls` / `Assembler.finish()`).
            outcomes: Their outcomes, aligned with `calls` (empty without a toolset).
            chunks: The chunks as received (SDK objects or dicts).
            body: The raw SSE body, instead of chunks.
            format: The wire format.
            policy: Overrides the recorder's `streams` setting.
            interrupted: Why the connection broke off, when it did (the exception's class
                name): a broken connection leaves no chunk behind, so the record says it and
                the replay interrupts the assembler where the live stream did.
            toolset: The toolset the stream was validated with, when not the recorder's:
                its schemas say what to redact.
            stream_errors: `Assembler.stream_errors()` of the assembler that read `body`:
                without them, nothing says that no event was skipped unread.
            limits: The limits the stream's assembler was made with (`AssemblerLimits`),
                if known: a recording replays under the same (a limit that refused the
                response is recorded either way).

        Returns:
            The number of records written.
        """
        policy = self.streams if policy is None else policy
        given, kind = cast(object, calls), type(calls).__name__
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Sequence):
            raise TypeError(f"calls must be a list of ToolCalls, not {kind}")
        for index, call in enumerate(calls):
            require_call(call, _RECORDED, what=f"calls[{index}]")
        padded = list(outcomes) + [None] * (len(calls) - len(outcomes))
        pairs = list(zip(calls, padded, strict=True))
        verdicts = [verdict(c, o) for c, o in pairs]
        failed = any(state != "ok" for state, _ in verdicts)
        whole = (policy == "all" or (policy == "failed" and failed)) and (
            chunks is not None or body is not None
        )
        raw = body is not None
        if whole and self._whole_is_safe(calls, stream_errors, raw=raw, toolset=toolset):
            record: dict[str, Any] = {"toolwire": "stream"}
            if format is not None:
                record["format"] = format
            if interrupted is not None:
                record["interrupted"] = interrupted
            recorded_limits = limits_of(calls, limits)
            if recorded_limits:
                record["limits"] = recorded_limits
            hashes = {n: h for c in calls if (h := self._hash(n := c.name, toolset)) is not None}
            if hashes:
                record["schema_hashes"] = dict(sorted(hashes.items()))
            record["observed"] = [
                {"tool": c.name, "state": s, **({"code": k} if k else {})}
                for c, (s, k) in zip(calls, verdicts, strict=True)
            ]
            if body is not None:
                # Bytes that are not UTF-8 are kept as surrogateescape code points, which the
                # replay turns back into the same bytes: the recording replays as captured.
                record["body"] = body.decode("utf-8", errors="surrogateescape")
                content = body
            else:
                record["chunks"] = [plain(chunk) for chunk in chunks or ()]
                content = raw_bytes(json.dumps(record["chunks"], sort_keys=True, default=str))
            # Named by what it holds, not by where it sits: a baseline keeps knowing it when
            # rotation moves it to another file or line.
            record = {"toolwire": "stream", "id": f"stream-{_digest(content)}", **record}
            self.write(record)
            return 1
        return sum(
            self.record_call(c, o, format=format, toolset=toolset, limits=limits) for c, o in pairs
        )

    # Stream hooks -------------------------------------------------------------------------

    def observe(self, event: Event, *, format: str | None = None) -> None:
        """Event hook: pass every event of a `toolwire.assemble` stream; failed calls are kept.

        Args:
            event: One stream event.
            format: The wire format, for the record.
        """
        if isinstance(event, CallCompleted):
            self.record_call(event.call, event.outcome, format=format)

    def assemble(
        self,
        stream: Iterable[object],
        tools: Toolset | None = None,
        *,
        progress: bool = True,
        limits: AssemblerLimits | None = None,
    ) -> RecordingToolStream:
        """`toolwire.assemble` that records the stream when it ends.

        Args:
            stream: The SDK stream (or any iterable of chunks).
            tools: The toolset to validate with; defaults to the recorder's.
            progress: Emit `ArgumentsProgress` events.
            limits: The limits of the stream's `Assembler`, as `toolwire.assemble` takes
                them; they are recorded, and the replay reads with the same.

        Returns:
            A `ToolStream` (same events, same attributes) that records on its last event or
            when closed early.
        """
        return RecordingToolStream(
            stream,
            tools if tools is not None else self.toolset,
            recorder=self,
            progress=progress,
            limits=limits,
        )


# `stream_errors` kinds of events that were read (the others were skipped unread, or the
# response was refused past a limit): a provider's error event is read, and replays as it came.
_READ_STREAM_ERRORS = frozenset({"provider_error"})

# Redacts every value: stands for the schema of a call of a tool the toolset does not know.
_UNKNOWN_TOOL: Mapping[str, Any] = {SECRET_KEY: True}


def _blob(value: object) -> str:
    # boto3 decodes the base64 of a blob member (Bedrock's `redactedContent`) into bytes: a
    # chunk is recorded with the base64 text the wire carried.
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _error_chunk(error: BaseException, fmt: str | None) -> dict[str, Any]:
    """The chunk a provider error raised by an SDK stands for, in the stream's wire format."""
    if fmt == "bedrock-converse":
        # botocore's EventStreamError: the exception member is the event's `:exception-type`.
        failure = get(getattr(error, "response", None), "Error")
        code, text = get(failure, "Code"), get(failure, "Message")
        kind = code if isinstance(code, str) and code.endswith("Exception") else None
        return {kind or "internalServerException": {"message": str(text or error)}}
    body: object = getattr(error, "body", None)
    message = str(getattr(error, "message", "") or error)
    if type(error).__module__.split(".", 1)[0] == "anthropic" or fmt == "anthropic":
        if isinstance(body, Mapping) and cast("Mapping[str, Any]", body).get("type") == "error":
            return dict(cast("Mapping[str, Any]", body))
        inner: dict[str, Any] = (
            dict(cast("Mapping[str, Any]", body))
            if isinstance(body, Mapping)
            else {"message": message}
        )
        return {"type": "error", "error": inner}
    detail: dict[str, Any] = (
        dict(cast("Mapping[str, Any]", body)) if isinstance(body, Mapping) else {}
    )
    detail.setdefault("message", message)
    if fmt == "openai-responses":
        return {"type": "error", "code": detail.get("code"), "message": detail["message"]}
    return {"error": detail}


class RecordingToolStream(ToolStream):
    """A `ToolStream` that hands its chunks and calls to a `Recorder` once it is over."""

    __slots__ = ("_chunks", "_recorded", "_recorder", "_tools")

    def __init__(
        self,
        source: Iterable[object],
        tools: Toolset | None = None,
        *,
        recorder: Recorder,
        progress: bool = True,
        limits: AssemblerLimits | None = None,
    ) -> None:
        """Wrap `source` (see `ToolStream`).

        Args:
            source: The SDK stream.
            tools: The toolset.
            recorder: Where the stream goes when it ends.
            progress: Emit `ArgumentsProgress` events.
            limits: The assembler's limits (`AssemblerLimits`), recorded with the stream.

        Raises:
            MisuseError: See `ToolStream`.
        """
        self._chunks: list[object] = []
        self._recorder = recorder
        # Redaction follows the schemas the stream is validated with.
        self._tools = tools
        self._recorded = False
        # The SDK stream stays the source `close` closes; `_chunks_of` keeps its chunks.
        super().__init__(source, tools, progress=progress, limits=limits)

    def _chunks_of(self, source: Iterable[object]) -> Iterator[object]:
        """The SDK stream's chunks, each kept for the record as it passes."""
        try:
            for chunk in source:
                self._chunks.append(chunk)
                yield chunk
        except Exception as error:
            if is_provider_error(error):
                # The SDK raised the provider's error chunk instead of yielding it: record it
                # as the wire carried it, so the replay ends the calls as the live stream did.
                self._chunks.append(_error_chunk(error, self.format))
            raise

    def _record(self) -> None:
        if not self._recorded:
            self._recorded = True
            error = self.transport_error
            broken = error is not None and not is_provider_error(error)
            self._recorder.record_stream(
                self.calls,
                self.outcomes,
                chunks=self._chunks,
                format=self.format,
                interrupted=type(error).__name__ if broken else None,
                toolset=self._tools,
                limits=self._driver.limits,
            )

    def __next__(self) -> Event:
        event = super().__next__()
        if isinstance(event, StreamEnded):
            self._record()
        return event

    def close(self) -> None:
        """Stop reading, then record what arrived (see `ToolStream.close`)."""
        super().close()
        if self._driver.done:
            self._record()
        # Otherwise another thread is reading: it records at the `StreamEnded` it gets next.
