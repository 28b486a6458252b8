"""Type stubs and documentation of toolwire's native module."""

__all__ = [
    "NO_VALUE",
    "Assembler",
    "CallError",
    "DirectValidation",
    "JsonError",
    "LosslessFloat",
    "MisuseError",
    "NoValue",
    "PartialNode",
    "Scanner",
    "ToolCall",
    "ToolRegistry",
    "ToolwireError",
    "__version__",
    "_install_feed",
    "capped_path",
    "pattern_error",
    "same_tokens",
]

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, ClassVar, Final, Literal, NoReturn, SupportsIndex, final

from typing_extensions import Self, disjoint_base

__version__: Final[str]

def pattern_error(pattern: str, /) -> str | None:
    """Why `pattern` is no ECMA-262 regular expression as JSON Schema reads one (with the `u`
    flag), or None when it is one.

    The pre-check refuses a schema with such a pattern anywhere, and validation asks this
    function too, so both refuse the same patterns: `(?i)abc`, `(?P<name>x)`, `\\Z`, `a++` or a
    lone `{`, which engines other than ECMA-262's read each in their own way. An escaped
    punctuation mark that is no syntax character (`\\@`, `\\#`, `\\-`, an escaped space) is
    taken as the mark itself, as every engine reads it, though the `u` flag refuses it.

    Args:
        pattern: The pattern's source, as the schema writes it.

    Returns:
        The parser's reason (`"Invalid character escape"`), or None.
    """

def capped_path(path: str, /) -> str:
    """The JSON Pointer `path` with each key longer than 200 characters cut as a `CallError`'s
    path is: its first 200 characters (one fewer where the cut would split a `~` escape), then
    `…(N chars)`, N the key's whole length. Validation's errors are cut by the same rule.

    Args:
        path: A JSON Pointer (RFC 6901).

    Returns:
        The pointer, each long key cut; `path` itself when none is.
    """

def same_tokens(a: bytes, b: bytes, /) -> bool:
    """Whether two JSON texts are the same tokens, the whitespace between tokens aside
    (`{"a": 1}` and `{"a":1}`); two valid texts that are have equal values."""

def _install_feed(cls: type[Assembler], /) -> None:
    """Gives `cls`, a subclass of `Assembler` without a `feed` of its own, the core class's
    `feed` as its own: called through the core class's, every call checked the assembler
    against that class by walking the subclass's MRO.

    Raises:
        TypeError: `cls` is not a subclass of `Assembler`.
        ValueError: `cls` defines `feed` itself.
    """

class ToolwireError(ValueError):
    """Base class of toolwire's exceptions."""

class MisuseError(ToolwireError):
    """The API was used wrongly: feeding after `finish`, a wrong argument type, a bad setting.

    Never raised because of model output.
    """

class JsonError(ToolwireError):
    """`Scanner.finish` rejected the text; `error` holds the details."""

    error: CallError

@final
class NoValue:
    """The type of `NO_VALUE`: nothing is reportable yet (spec rule R7). It is falsy."""

    def __bool__(self) -> bool: ...
    def __reduce__(self) -> str:
        """`NO_VALUE`'s name in this module: a copy or an unpickled one is `NO_VALUE` itself."""

NO_VALUE: Final[NoValue]
"""Returned by `partial` before any value is reportable."""

@final
class LosslessFloat:
    """A JSON number kept as the exact text the model wrote (`floats="lossless"`).

    Nothing is rounded until asked: `float(x)` gives the nearest double (`1e400` is `inf`),
    `as_decimal()` the exact value. Two are equal when their texts are (`1.0` and `1.00` are
    not), and hash as their text does.

    Args:
        lexeme: One JSON number, as `str` or `bytes`, with nothing around it.

    Raises:
        MisuseError: `lexeme` is not exactly one JSON number.
    """

    def __new__(cls, lexeme: str | bytes, /) -> Self: ...
    def __float__(self) -> float:
        """The nearest double, as `float()` of the text gives."""
    def __str__(self) -> str:
        """The exact text."""
    def __bytes__(self) -> bytes:
        """The text as ASCII bytes."""
    def as_decimal(self) -> Decimal:
        """`decimal.Decimal` of the exact text; for an exponent past what a `Decimal` holds
        (beyond about 10^18 either way), the infinity or zero of its sign, as `float()` gives."""
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __getnewargs__(self) -> tuple[str]:
        """The text, for `copy` and `pickle`."""

@final
class PartialNode:
    """A node of a partial value shown with completeness flags (`partial(flags=True)`).

    A node is incomplete exactly when the text ended inside it, so later text may still extend
    it: an open object or array, an open string (shown with `strings="trailing"`), a number
    touching the end (shown with `eager_numbers=True`). Closed containers, closed strings,
    delimited numbers and literals are complete, and so is every node of a complete text.

    Args:
        value: For an object, a dict of member nodes; for an array, a list of element nodes;
            for a scalar, the value itself.
        complete: Whether the node is complete.

    Attributes:
        value: As above.
        complete: As above.
    """

    __hash__: ClassVar[None]  # type: ignore[assignment]
    def __new__(cls, value: Any, /, *, complete: bool) -> Self: ...
    @property
    def value(self) -> Any: ...
    @property
    def complete(self) -> bool: ...
    def plain(self) -> Any:
        """The value without flags: what `partial` gives with `flags=False`.

        Raises:
            RecursionError: The tree is nested more than 1000 deep (only a tree made or
                changed by hand can be).
        """
    def __eq__(self, other: object, /) -> bool:
        """Equal values and equal flags, node by node."""
    def __getnewargs_ex__(self) -> tuple[tuple[Any], dict[str, bool]]:
        """The value and the flag, for `copy` and `pickle`."""

@final
class CallError:
    """Why a call must not be executed: a stable `kind`, where, and (for schema violations) what
    was expected.

    Attributes:
        kind: Stable slug, e.g. `truncated`, `invalid_escape`, `not_object`, `unknown_tool`,
            `schema_violation`, `free_form_call` (a custom tool's free-form input).
        message: Short lowercase English description, cut to 500 characters.
        offset: Byte offset in the argument text where the problem became certain.
        path: JSON Pointer (RFC 6901) of the value concerned, `""` for the root; a key
            longer than 200 characters is cut.
        keyword: The schema keyword that failed (schema violations and unknown tools).
        expected: What was expected, in words built from the schema, cut to 500 characters.
        got: The offending value, cut to 200 characters (a secret's is `[redacted]`).

    A cut text keeps its start and ends `…(N chars)`, N the length of the whole: a key, a
    tool name or a schema's `const` can be as long as a whole call, and the error reaches
    logs, exceptions and the application's code.
    """

    @property
    def kind(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def offset(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def keyword(self) -> str | None: ...
    @property
    def expected(self) -> str | None: ...
    @property
    def got(self) -> str | None: ...
    @property
    def incomplete(self) -> bool:
        """True when the text stopped early (`truncated`, `empty`) rather than being invalid."""
    def __eq__(self, other: object, /) -> bool: ...
    @classmethod
    def _rebuild(
        cls,
        kind: str,
        message: str,
        offset: int,
        path: str,
        keyword: str | None,
        expected: str | None,
        got: str | None,
        /,
    ) -> Self:
        """An error made again from its attributes (`copy`, `pickle`).

        Raises:
            MisuseError: An unknown `kind`, or `keyword`, `expected` and `got` not all given
                or all None.
        """
    def __reduce__(
        self,
    ) -> tuple[
        Callable[..., CallError],
        tuple[str, str, int, str, str | None, str | None, str | None],
    ]: ...

@final
class DirectValidation:
    """The common case of `Toolset.validate` in one native call (internal to `Toolset`)."""

    def __new__(
        cls,
        outcome_type: type,
        template: dict[str, Any],
        per_call: tuple[tuple[str, str], ...],
        tools: list[tuple[str, Callable[..., Any], bool | None, bool]],
        max_bytes: int,
    ) -> Self: ...
    def _trust(self, registry: ToolRegistry, /) -> bool:
        """Trust the pre-check of `registry` (the toolset's own) from now on; True when it is
        the registry trusted (the first one given stays)."""
    def outcome(self, call: object, /) -> Any | None:
        """The successful outcome of `call`, or None when `validate`'s general path decides
        (among others, a call the trusted registry did not pre-check, or one whose repeated
        id the assembler renamed); raises what Pydantic raises."""

@final
class ToolCall:
    """A finished tool call, as returned by `Assembler.finish`.

    Attributes:
        ordinal: Dense position in order of first appearance, from 0.
        index: The wire index of the call's first delta (may be None).
        id: The call id, if the provider sent one, made unique within the stream: a repeated
            one is renamed `<id>_<ordinal>` (warning `duplicate_id`, the id sent in
            `metadata["wire_id"]`), cut to stay within the 40 or 64 characters the id sent
            was within, so that the provider it came from takes it back; an id of Mistral's
            shape (nine ASCII letters and digits) stays nine letters and digits, its last
            ones the digits of the ordinal.
        name: The tool name.
        type: The call type (`function`), if sent; `custom` for a Responses custom tool's call,
            whose `arguments` are its free-form input, never read as JSON: it ends as a
            `free_form_call` error (unless stopped, cut or too large first).
        arguments: The raw argument text as received (`"{}"` when nothing arrived; a custom
            tool's input as sent, `""` included).
        arguments_bytes: The same as UTF-8 bytes.
        value: The parsed arguments, equal to `json.loads(arguments)`, or None when they are
            not one complete JSON value. Built on first access.
        error: None, or why the call must not be executed.
        ok: True when `error` is None.
        metadata: Opaque provider fields kept for the next turn.
        warnings: Anomalies that were handled (`cumulative_arguments`, `repeat_dropped`,
            `replay_dropped`, `late_fragment_dropped`, `duplicate_id`, `empty_arguments`,
            `replacement_character`, `metadata_dropped`).

    A call pickles and copies with every attribute as it was. Two calls are equal (`==`) when
    every attribute above is (`prechecked` as the flag; `value` follows from `arguments` and
    `limits`), so a pickled, copied or replayed call equals the original. A call hashes by
    its `ordinal`, `id` and `name`, which never change: it can be a dict key or a set member.
    """

    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    @property
    def ordinal(self) -> int: ...
    @property
    def index(self) -> int | None: ...
    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def type(self) -> str | None: ...
    @property
    def arguments(self) -> str: ...
    @property
    def arguments_bytes(self) -> bytes: ...
    @property
    def plain_numbers(self) -> bool:
        """True when every number is short with a short exponent (no float overflow)."""
    @property
    def prechecked(self) -> bool:
        """True when the arguments were checked against the tool's schema while they
        streamed (the assembler had tools): a violation would be in `error`. `Toolset.validate`
        counts on it only when the toolset's own registry did the check."""
    @property
    def stop_reason(self) -> str | None:
        """Why the provider stopped the call (`content_filter`, a refusal, ...), when it did:
        its error is then `filtered`. None otherwise."""
    @property
    def limits(self) -> dict[str, int | str]:
        """The limits of the call's assembler that differ from the defaults, as `Assembler`
        keyword arguments (`max_depth`, `max_bytes`, `max_number_digits`, `duplicate_keys`,
        and the response's `max_calls` and `max_stream_bytes`): `Assembler(**call.limits)`
        reads the same text the same way (replay relies on it)."""
    @property
    def value(self) -> Any: ...
    @property
    def error(self) -> CallError | None: ...
    def _validation_fields(
        self, registry: ToolRegistry | None, /
    ) -> tuple[CallError | None, bool, str | None, str | None, bytes | None, bool]:
        """`(error, prechecked, name, id, arguments_bytes or None when blank, plain_numbers)`
        in one call, for `Toolset.validate`; `prechecked` is whether `registry` itself
        pre-checked the call."""
    @property
    def ok(self) -> bool: ...
    @property
    def metadata(self) -> dict[str, Any]: ...
    @property
    def warnings(self) -> list[str]: ...
    @classmethod
    def _rebuild(
        cls,
        ordinal: int,
        index: int | None,
        id: str | None,
        name: str | None,
        kind: str | None,
        stop_reason: str | None,
        arguments: bytes,
        metadata: list[tuple[str, str]],
        warnings: list[str],
        limits: tuple[int, int, int, str, int, int],
        prechecked: bool,
        verdict: tuple[CallError | None, bool, bool] | None,
        /,
    ) -> Self:
        """A call made again from its parts (`copy`, `pickle`): `metadata` as (key, JSON
        text), `limits` as `(max_depth, max_bytes, max_number_digits, duplicate_keys,
        max_calls, max_stream_bytes)`, `verdict` as `(error, complete, plain_numbers)`, or None
        for a text not yet scanned. A `prechecked` call counts as checked by no toolset's
        registry: `Toolset.validate` checks it again.

        Raises:
            MisuseError: An unknown warning, or limits out of their ranges.
        """
    def __reduce__(self) -> tuple[Callable[..., ToolCall], tuple[Any, ...]]: ...

@final
class Scanner:
    """A resumable, strict (RFC 8259) parser for one JSON text of any kind.

    Push the text in pieces cut anywhere, then `finish`. Each byte is examined once.

    Args:
        max_depth: Maximum nesting depth (1 to 128).
        max_bytes: Maximum size of the text.
        max_number_digits: Maximum digits in a number's integer part.
        duplicate_keys: `"error"` (default) or `"last_wins"` (as `json.loads`).

    Raises:
        MisuseError: From any method or property, when another thread's call is still inside
            this scanner (the first `finish` in a process imports orjson, which lets other
            threads run). One scanner reads one text at a time.
    """

    def __new__(
        cls,
        *,
        max_depth: int = 64,
        max_bytes: int = 8_388_608,
        max_number_digits: int = 4300,
        duplicate_keys: Literal["error", "last_wins"] = "error",
    ) -> Self: ...
    def push(self, data: str | bytes, /) -> Literal["incomplete", "complete", "invalid"]:
        """Feeds the next piece; returns where the text stands."""
    def finish(self, *, floats: Literal["float", "decimal", "lossless"] = "float") -> Any:
        """Ends the text and returns its value.

        Args:
            floats: How numbers that are not integers are handed over: `"float"` (as
                `json.loads`), `"decimal"` (`decimal.Decimal` of the exact text; an exponent
                past what a `Decimal` holds gives the infinity or zero of its sign) or
                `"lossless"` (`LosslessFloat`). Integers are `int` in every mode.

        Raises:
            JsonError: The text is not one valid JSON value (`.error` says why and where).
            MisuseError: An unknown `floats` mode.
        """
    def partial(
        self,
        *,
        strings: Literal["trailing", "off"] = "trailing",
        eager_numbers: bool = False,
        floats: Literal["float", "decimal", "lossless"] = "float",
        flags: bool = False,
    ) -> Any:
        """The value read so far (spec rules R2-R9), or `NO_VALUE`. Costs O(size) per call.

        Args:
            strings: `"trailing"` shows the open string as decoded so far; `"off"` hides it.
            eager_numbers: Show a number touching the end of the text (its longest valid
                prefix) instead of holding it back.
            floats: As in `finish`.
            flags: Return a tree of `PartialNode`s that says which nodes are complete.

        Raises:
            MisuseError: An unknown `strings` or `floats` mode.
        """
    @property
    def error(self) -> CallError | None:
        """The first error, once known."""
    @property
    def complete(self) -> bool:
        """True once one complete value has been read."""
    @property
    def text(self) -> bytes:
        """Everything pushed so far."""
    def __reduce_ex__(self, protocol: SupportsIndex, /) -> NoReturn:
        """Refuses `pickle` and `copy`: make a `Scanner` in each process and push the text.

        Raises:
            TypeError: Always.
        """

@final
class ToolRegistry:
    """Tool definitions compiled once for the pre-check; frozen and shared by every stream.

    Args:
        schemas: Tool name to its JSON Schema (a dict, or its JSON text).
        secrets: Tool name to the JSON Pointers of its secret values (`*` matches any one
            token): a violation at or under one reports its `got` as `[redacted]`.

    Raises:
        SchemaTooLargeError: A schema whose subschemas nest more than 256 levels (as written,
            or with its references followed: `measure="depth"`), or whose JSON nests more than
            640 (a `const` or `enum` value nested that deep: `measure="nesting"`).
        MisuseError: A schema that is not valid JSON or cannot be compiled, a name that is not
            a str, or a `secrets` key that names no tool in `schemas`.
    """

    def __new__(
        cls,
        schemas: Mapping[str, Any],
        /,
        *,
        secrets: Mapping[str, list[str]] | None = None,
    ) -> Self: ...
    @property
    def unsupported(self) -> list[tuple[str, str, str]]:
        """Keywords the pre-check leaves to the final validation: (tool, keyword, pointer)."""
    def names(self) -> list[str]:
        """Registered tool names, sorted."""
    def __contains__(self, name: str, /) -> bool: ...
    def __getnewargs_ex__(
        self,
    ) -> tuple[tuple[dict[str, str]], dict[str, dict[str, list[str]]]]:
        """The schemas as JSON text and the secrets, for `copy` and `pickle`: a copy is
        compiled again from them."""
    def check(
        self,
        name: str,
        arguments: bytes,
        /,
        *,
        duplicate_keys: Literal["error", "last_wins"] = "error",
        max_depth: int = 64,
        max_bytes: int = 8388608,
        max_number_digits: int = 4300,
    ) -> CallError | None:
        """The first schema violation of a complete argument text, as the pre-check reports
        it while a call streams; for calls assembled without the pre-check. Only violations
        of the schema: what makes the text unreadable (invalid JSON, a duplicate key under
        `duplicate_keys="error"`) is the assembler's to report, on `ToolCall.error`.

        Args:
            name: A registered tool name.
            arguments: The call's complete argument text.
            duplicate_keys: The policy the call was assembled with; under `last_wins` the
                violation is about the value the text stands for (each repeated key with its
                last value).
            max_depth: The call's assembler's `max_depth` (see `ToolCall.limits`).
            max_bytes: Its `max_bytes`.
            max_number_digits: Its `max_number_digits`: a text its assembler took is checked
                to its end under the same limits.

        Returns:
            The violation, or None.
        """

@disjoint_base
class Assembler:
    """Assembles the tool calls of one response stream from their fragments.

    Args:
        tools: A `Toolset` or `ToolRegistry`: turns the schema pre-check on.
        max_depth: Maximum nesting depth of one call's arguments (1 to 128).
        max_bytes: Maximum size of one call's arguments.
        max_number_digits: Maximum digits in a number's integer part.
        duplicate_keys: `"error"` (default) or `"last_wins"`.
        track_progress: Record (path, appended text) items for `drain_progress`.
        progress_into: A list that every progress item is appended to, as
            (ordinal, JSON Pointer, appended text), by the call that fed it (`feed`, `feed_sse`,
            `end`, `interrupt`, `stop`, `finish`): after each fragment the list already holds
            what changed, without a `drain_progress` call per fragment. Turns `track_progress`
            on; `drain_progress` then returns nothing. The list must not hold the assembler.
        max_calls: Most calls one response may start (at least 1).
        max_stream_bytes: Most bytes of argument text, all calls together, of the reasoning
            kept (`reasoning`), and on the raw SSE path of assistant text, one
            response may send (at least 1). A response past either
            limit is refused whole: nothing more of it is kept, every call fails `too_large`
            (none runs), and `stream_errors` has a `stream_limit` entry.

    Raises:
        MisuseError: From any method or property, when another call is still inside this
            assembler: one made by another thread (`feed_sse` lets other threads run while it
            decodes a large piece) or by Python code it runs (a dict subclass's `items` when
            `feed` writes dict arguments out). One assembler serves one stream at a time.
    """

    def __new__(
        cls,
        *,
        tools: Any = None,
        max_depth: int = 64,
        max_bytes: int = 8_388_608,
        max_number_digits: int = 4300,
        duplicate_keys: Literal["error", "last_wins"] = "error",
        track_progress: bool = False,
        progress_into: list[tuple[int, str, str]] | None = None,
        max_calls: int = 1024,
        max_stream_bytes: int = 33_554_432,
    ) -> Self: ...
    def feed(
        self,
        index: int | None,
        /,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | bytes | dict[str, Any] | list[Any] | int | float | None = None,
        type: str | None = None,
        start: bool = False,
    ) -> int:
        """Feeds one tool-call delta and returns the ordinal of the call it went to.

        Args:
            index: The wire index, used as an opaque key (None when the provider omits it).
            id: The call id, when this delta carries one (blank and `"null"` are ignored).
            name: The name or a fragment of it (a repeat of the stored name is ignored).
            arguments: A text fragment (str or bytes, cut anywhere), or a dict, list, number or
                bool sent as the complete value (one that is no object is `not_object`; one
                after text fragments, `mixed_arguments`).
            type: The call type, assigned once.
            start: The delta comes from an event that starts a call (a Responses
                `output_item.added`, an Anthropic `content_block_start`). A header (id and
                name) equal to the last call's under `index` is then that call sent again by a
                replayed stream, even while it is open: the text it already has is dropped as
                it comes again (warning `replay_dropped`). Without `start`, only a call whose
                value is whole, or that was ended, is recognised as sent again.

        Raises:
            MisuseError: After `finish`, or for a wrong argument type.
            UnicodeEncodeError: A `str` holds a lone surrogate (half of a pair a UTF-16
                producer split between two events), which UTF-8 cannot hold; nothing was fed.
                `feed_chunk` joins such halves across chunks; a caller of `feed` can do the
                same or pass the bytes it has.
        """
    def end(self, index: int | None, /) -> None:
        """A per-call stop event: the open call under `index` is complete."""
    def set_metadata(self, index: int | None, key: str, value: Any, /) -> None:
        """Keeps an opaque, JSON-serialisable provider field on the call under `index`.

        When no call is open under `index` yet, the field waits for the next call there: a
        metadata-only delta never starts a call.

        A value nested past what `json.dumps` can write (its recursion limit, about 1,000
        levels), or holding an integer longer than it writes (`sys.get_int_max_str_digits()`
        digits), is provider data no use to the next turn in part: it is not kept, nothing is
        raised, and the call (or the next one to start under `index`) gets the warning
        `metadata_dropped`.

        Raises:
            MisuseError: After `finish`, or for a value that is not JSON data (a set, say).
        """
    def interrupt(self, reason: str, /) -> None:
        """The transport broke off: calls with no argument text yet become `truncated`, and
        fragments an open call still holds two ways are read as appended."""
    def starts_call(
        self,
        index: int | None,
        /,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | None = None,
    ) -> bool:
        """Whether `feed` would start a new call for this delta rather than continue one."""
    def name(self, ordinal: int, /) -> str | None:
        """The name received so far for a call."""
    def id(self, ordinal: int, /) -> str | None:
        """The id of a call, if one arrived."""
    def arguments_so_far(self, ordinal: int, /) -> bytes:
        """The argument bytes a call holds so far, as appended (UTF-8).

        Raises:
            MisuseError: No call has that ordinal.
        """
    def stop(self, reason: str, /) -> None:
        """The provider stopped the stream (content filter, refusal): open calls are `filtered`."""
    def stop_all(self, reason: str, /) -> None:
        """The provider said the calls it sent are malformed: every call is `filtered`, even one
        it had ended with a complete value (nothing tells which call it judged)."""
    def lose_event(self, reason: str, /) -> None:
        """An event that may have carried part of a call could not be read: every call whose
        arguments were still open (not one complete value, not ended by the provider) becomes
        a `lost_event` error, never executed.

        Raises:
            MisuseError: After `finish`.
        """
    def _stream_error(self, kind: str, event: int, message: str, /) -> None:
        """A problem of a stream read outside the core (`feed_chunk`), at its 1-based event
        number: `stream_errors` tells it as it tells the raw path's own.

        Raises:
            MisuseError: `kind` is no `stream_errors` kind.
        """
    def _other_choice(self, event: int, chosen: int, index: int, /) -> None:
        """Choice `index` of a Chat stream read outside the core (`feed_chunk`) carried text or
        tool calls at event `event`, while choice `chosen` is assembled: `stream_errors` tells
        it as `other_choice`, as the raw path tells it."""
    def lose_arguments(self, ordinal: int, reason: str, /) -> None:
        """The call at `ordinal` lost part of its arguments (an event that carried them could
        not be read): it becomes a `lost_event` error, never executed, whatever it holds.

        Raises:
            MisuseError: After `finish`, or for an unknown ordinal.
        """
    def limit_reached(self) -> None:
        """The output limit was reached: the last call started, if not ended and with no
        argument text, becomes `truncated` at finish rather than `{}`; fragments it still
        holds two ways (appended, or resending the text so far) are read as appended."""
    def drain_errors(self) -> list[tuple[int, CallError]]:
        """Errors that became certain since the last drain, as (ordinal, error).

        In ordinal order, each call's in the order found: one drain after a `feed_sse` piece
        that carried events of several calls does not tell which call's error came first on
        the wire (drain after each `feed` to follow the stream's own order). An error found
        inside a key or string still open comes at once, as it read at the deciding byte.
        A drain looks only at the calls changed since the last one, so draining after every
        chunk costs no more with many calls open. With `tools`, a key that holds a secret value
        complete before it in the text (the model sent the secret again as a key) reads
        `[redacted]` in the error's `path`, `message` and `got`; the call's own `error` keeps
        the exact path.
        """
    def drain_progress(self) -> list[tuple[int, str, str]]:
        """With `track_progress`: (ordinal, JSON Pointer, appended text) since the last drain.

        A value's first item announces it (its text may be empty: `""`, or a string whose first
        character is still cut); every later item of the value adds text. After `finish`, the
        first drain gives the items `finish` released (the last fragments', fragments held to
        tell a resend from new text included).
        With `tools`, an item at or under a secret value reads `[redacted]`, so does a key in
        an item's pointer that holds a secret value complete before it, and the items of
        a call whose name may still become a tool with secret values wait until it is final
        (or the call ends, or the stream finishes). Looks only at the calls changed since the
        last drain.
        Empty when the assembler was made with `progress_into`: its items are in that list.
        """
    @property
    def finished(self) -> bool:
        """True once `finish` ran; the assembler then takes nothing more."""
    @property
    def failed(self) -> bool:
        """True when some call already has an error that no later input can fix; after
        `finish`, when some call it returned has an error. Like `drain_errors`, it looks only
        at the calls changed since it last ran."""
    def partial(
        self,
        ordinal: int,
        /,
        *,
        strings: Literal["trailing", "off"] = "trailing",
        eager_numbers: bool = False,
        floats: Literal["float", "decimal", "lossless"] = "float",
        flags: bool = False,
    ) -> Any:
        """The partial value of a call's arguments, or `NO_VALUE`.

        Args:
            ordinal: The call's ordinal.
            strings: `"trailing"` shows the open string as decoded so far; `"off"` hides it.
            eager_numbers: Show a number touching the end of the text instead of holding it
                back.
            floats: How numbers that are not integers are handed over: `"float"`, `"decimal"`
                (`decimal.Decimal` of the exact text) or `"lossless"` (`LosslessFloat`).
            flags: Return a tree of `PartialNode`s that says which nodes are complete; once
                the call's text is one complete value, every node is.

        Raises:
            MisuseError: No call has that ordinal, or an unknown `strings` or `floats` mode.
        """
    def feed_sse(self, data: bytes, /) -> None:
        """Feeds raw SSE bytes of the HTTP response body, split anywhere (the gateway path).

        Frames events per the WHATWG rules, detects the format per event (Chat Completions,
        Responses, Anthropic Messages, Gemini `GenerateContentResponse` chunks) and assembles the
        calls in Rust, creating no Python object per chunk. Releases the GIL for pieces of 1 KiB
        or more. A body that is one JSON document (its first byte after white space and a BOM
        is `{` or `[`: a server that ignored the request to stream) is held, counted toward
        `max_stream_bytes`, and read when `finish` comes as the events of the same response: a
        `ChatCompletion`, `Response`, `Message`, Gemini `GenerateContentResponse` (or a JSON
        array of them) or `{"error": ...}`; `stream_errors()` says `truncated_body` for another
        document, `stream_limit` for one past the limit (no more of it is held).

        Raises:
            MisuseError: After `finish`, or when `data` is not bytes.
        """
    @property
    def text(self) -> str:
        """Assistant text seen on the raw SSE path."""
    @property
    def usage(self) -> dict[str, Any] | None:
        """The last usage object seen on the raw SSE path."""
    @property
    def container(self) -> str | None:
        """The id of the code-execution container the response ran in, on the raw SSE path
        (Anthropic's `container`, on `message_start`'s message or `message_delta`'s delta, the
        last one named; `feed_chunk` tells it as `ChunkInfo.container`): continue a
        `pause_turn` with `container=` this id. None when the stream named none."""
    @property
    def reasoning(self) -> list[dict[str, Any]]:
        """The reasoning the next request must send back with the turn's tool calls
        (`assistant_turn(..., reasoning=...)`), on every path of its format, in output order,
        as the provider takes it back:

        - Anthropic (`feed_sse`, `feed_chunk`): each `thinking` block (`{"type": "thinking",
          "thinking": ..., "signature": ...}`) and `redacted_thinking` block (`{"type":
          "redacted_thinking", "data": ...}`) that ended whole. A block is kept once its
          `content_block_stop` came, a `thinking` block only if signed: one cut off (the
          stream ended first) or unsigned is left out. With them, in block order, each block
          of another kind than text and `tool_use` that stopped, whole as the API sent it: a
          server tool's call (`server_tool_use`, `mcp_tool_use`, with the `input` its
          `input_json_delta`s wrote, never checked against a client tool's schema) and its
          result (`web_search_tool_result`, `code_execution_tool_result`...), a
          `container_upload`... Anthropic ran it: it is no call (nothing runs it, `finish`
          does not return it), and a call after it counts it in `reasoning_before`, so that
          the next turn keeps its place. One whose input is no JSON value is left out.
        - OpenAI Responses (`feed_sse`, `feed_chunk`): each `reasoning` item that finished,
          whole as its `response.output_item.done` carried it (`{"type": "reasoning", "id":
          ..., "summary": [...], "encrypted_content": ...}`), or in the finished response's
          `output` when no `output_item.done` brought it, once per `id`; an item that never
          finished is left out. A stateless request (`store=False`) must carry each right
          before the item that followed it in the output, with
          `include=["reasoning.encrypted_content"]`: a call after one gets its `id` as
          metadata `reasoning_id`, and one followed by an item the next turn does not send
          (another reasoning item, the response's end) is let go, as the API refuses it
          alone. With them, in output order, each hosted item that finished, kept the same
          way: every output item with an `id` (the API takes none back without one) that is
          no call, no `message` and no `reasoning` item (a hosted tool's call such as
          `web_search_call`, `file_search_call`, `code_interpreter_call`,
          `image_generation_call`, `mcp_call`, `mcp_list_tools`, or one the application
          answers itself, `computer_call`, `local_shell_call`, `mcp_approval_request`...),
          which the reasoning item before it goes back with. It
          is no call (nothing runs it, `finish` does not return it); a call after some gets
          their number as metadata `hosted_before`, so that the next turn keeps their places.
          The finished response's `output` is read for them only when it holds more items
          than `output_item.done` events came.
        - Bedrock Converse (`feed_chunk`): each `reasoningContent` block that stopped, as
          `{"reasoningContent": {"reasoningText": {"text": ..., "signature": ...}}}` (no
          `signature` when the model signs none) or `{"reasoningContent": {"redactedContent":
          bytes}}`; one cut off is left out. With them, in block order, each server tool's
          block that stopped (`toolUse` of `type` `server_tool_use`, `toolResult`) and each
          `image` block the model wrote that stopped whole, as `{"image": {"format": ...,
          "source": {"bytes": bytes}}}` (its `bytes` deltas joined; an `s3Location` source
          as sent): the next turn sends it back in its place. An image whose delta says
          `error`, or that never stopped, is left out.
        - Gemini (`feed_sse`, `feed_chunk`): each thought, `{"text": ..., "thought": True,
          "thoughtSignature": ...}` (no `thoughtSignature` when it came with none): the
          `thought` parts in a row, their text joined, until a part that is no thought, a
          signature on one (it goes on that thought, which Gemini wants back on its part), the
          finish reason or the end of the body; an error chunk lets the one streaming go. A
          call after some gets their number as metadata `reasoning_before`, so that the next
          turn keeps their places.

        Their bytes count toward `max_stream_bytes` as assistant text does, a block's from its
        first delta; a response past the limit keeps nothing that had not ended by then. A
        response replayed from its start (`message_start`, `response.created`, `messageStart`)
        lets its first rendition's reasoning go. A new list each time.
        """
    @property
    def finish_reason(self) -> str | None:
        """The finish reason as sent (raw SSE path); None when the stream ended without one."""
    @property
    def finish_reason_normalized(
        self,
    ) -> Literal["stop", "tool_calls", "length", "content_filter", "refusal", "other"] | None:
        """The finish reason mapped onto one vocabulary for every provider."""
    @property
    def format(self) -> Literal["openai-chat", "openai-responses", "anthropic", "gemini"] | None:
        """The wire format detected on the raw SSE path."""
    def stream_errors(self) -> list[tuple[str, int, str]]:
        """Problems of the stream itself (malformed events, provider error events), as
        (kind, event number, message); they never stop the assembly."""
    def __len__(self) -> int: ...
    def _flush_before_finish(self, hook: Callable[[Any], object]) -> None:
        """Registers `hook`, called once with the assembler when `finish` starts (it must not
        refer to the assembler, which does not traverse it for the garbage collector)."""
    def _may_hold(self, n: int, /) -> bool:
        """Whether `n` bytes an adapter holds for an open call fit beside what the response has
        kept under `max_stream_bytes`; False once the response is over its limit."""
    def _tracks_progress(self) -> bool:
        """Whether progress items are recorded (`track_progress` or `progress_into`): an
        adapter that reads arguments as values records them itself only then."""
    def _record_progress(
        self, index: int | None, path: str, text: str, string: bool, ends: bool, /
    ) -> None:
        """Records a progress item of the call open under wire key `index` whose arguments an
        adapter reads as values (Vertex AI `partialArgs` pieces): `text` appended to the string
        at JSON Pointer `path` (`string`; `ends` when no more of it comes), or the JSON text of
        the number or literal there. From the first one on, the call's own text adds no items."""
    def _stop_progress(self, index: int | None, /) -> None:
        """Records no more progress items for the call open under wire key `index`, from
        values or from its text: the values an adapter reads its arguments as do not make what
        the call will hold."""
    def _set_aside(
        self,
        index: int | None,
        arguments: str | bytes | dict[str, Any] | list[Any] | int | float,
        /,
    ) -> int | None:
        """Sets aside `arguments` (as `feed` takes them) for the call open under wire key
        `index`, used only if its own fragments never come: the bytes counted toward
        `max_stream_bytes` until `_release` gives them back, or None when they must not be kept
        (past `max_bytes` the call is `too_large` now; past the stream limit the response is
        refused whole)."""
    def _hold_fragment(self, n: int, /) -> bool:
        """Counts `n` bytes of an argument fragment held for its call's next fragment (it ends
        in a surrogate half) toward `max_stream_bytes` until `_release` gives them back; False
        (nothing counted) when they must not be held, and the fragment is handed on at once."""
    def _release(self, n: int, /) -> None:
        """Gives back `n` bytes counted by `_set_aside`: let go, or about to be fed."""
    def _keep_text(self, n: int, /) -> bool:
        """Counts `n` bytes of assistant text `feed_chunk` read toward `max_stream_bytes`, as
        the raw SSE path counts the text it reads; False (nothing counted) once the response is
        past a limit, when the text is not kept. Reasoning text is counted the same way."""
    def _keep_reasoning(self, text: str, signature: str | None, /) -> None:
        """Keeps an Anthropic reasoning block `feed_chunk` read whole, its bytes already counted
        (`_keep_text`): a `thinking` block, or with no `signature` a `redacted_thinking` block
        whose data is `text`.

        Raises:
            MisuseError: After `finish`.
        """
    def _keep_reasoning_item(self, json: str, before: int = 0, /) -> None:
        """Keeps a Responses `reasoning` or hosted item, or an Anthropic server block, that
        `feed_chunk` read finished, as JSON text written as the raw SSE path writes it, its bytes
        already counted (`_keep_text`), before the last `before` items kept (those that came
        after it in the output: a stream joined part way, where the items before the join come
        only in the finished response).

        Raises:
            MisuseError: After `finish`.
        """
    def _keep_converse_reasoning(
        self, text: str, signature: str | None, redacted: bytes | None, /
    ) -> None:
        """Keeps a Bedrock `reasoningContent` block `feed_chunk` read whole, its bytes already
        counted (`_keep_text`): its `reasoningText` (`text`, `signature`), or with `redacted` its
        `redactedContent`.

        Raises:
            MisuseError: After `finish`.
        """
    def _keep_converse_image(self, format: str, data: bytes, /) -> None:
        """Keeps a Bedrock `image` block `feed_chunk` read whole, in its place among the
        reasoning blocks, its bytes already counted (`_keep_text`: its `format`, then its data).

        Raises:
            MisuseError: After `finish`.
        """
    def _keep_gemini_thought(self, text: str, signature: str | None, /) -> None:
        """Keeps a Gemini thought (a run of `thought` parts) `feed_chunk` read, its bytes
        already counted (`_keep_text`): its text and its `thoughtSignature`, if it came with one.

        Raises:
            MisuseError: After `finish`.
        """
    def _drop_reasoning(self) -> None:
        """Lets go of the reasoning item `feed_chunk` kept last, its bytes given back: the item
        after it is not one the next turn sends, and the API refuses it alone.

        Raises:
            MisuseError: After `finish`.
        """
    @property
    def text_places(self) -> list[list[int | str | list[dict[str, Any]]]] | None:
        """Where each text block of a turn with no call began, once `finish` returned: a list
        of `[characters of assistant text before the block, reasoning blocks kept before it]`
        (`assistant_turn(..., text_places=...)`), the places a turn with calls writes on them
        (metadata `text_before`, `text_after`): Responses `message` items among `reasoning`
        and hosted items, Anthropic text blocks among thinking and server blocks (a
        `pause_turn` after a server tool), Gemini text parts. On every path (`feed_sse`,
        `feed_chunk`). What goes back on a block follows its counts in its entry, as in the
        metadata: a Gemini text part's thought signature (a string), an Anthropic or Bedrock
        text block's citations (a list of objects). A response replayed from its start keeps
        the places it had (the blocks sent again matched by their order, their citations kept
        once). `None` before `finish`, with calls, without text, or past 1024 blocks."""
    def _forget_reasoning(self) -> None:
        """The response `feed_chunk` reads starts again (a replay): the reasoning blocks kept so
        far are let go.

        Raises:
            MisuseError: After `finish`.
        """
    def _mark_text_block(self, at: int, /) -> None:
        """A text block starts in the response `feed_chunk` reads, after `at` characters of the
        assistant text it handed out: its place among the calls and reasoning blocks goes on
        the calls at `finish`, as metadata `text_before` (on the call after it) or `text_after`
        (on the last call), each block as `[at, reasoning blocks kept before it]`, unless the
        text is one block right before the first call.

        Raises:
            MisuseError: After `finish`.
        """
    def _sign_text_block(self, signature: str, /) -> None:
        """The text block `feed_chunk` began last carries this Gemini thought signature (base64
        text): it goes with the block's place (`text_places`, metadata `text_before`,
        `text_after`), third in its entry, and back on its part in the next turn.

        Raises:
            MisuseError: After `finish`.
        """
    def _keep_citation(self, json: str, /) -> bool:
        """Keeps a citation (JSON text of an object, written as the raw SSE path writes it) of
        the Anthropic or Bedrock text block that `feed_chunk` read start last
        (`_mark_text_block`): it goes with the block's place (`text_places`, metadata
        `text_before`, `text_after`), in a list after the entry's counts (and signature),
        and back on the block in the next turn; False when it does not fit
        `max_stream_bytes`. One with no text block's place (none started, none begun again
        since a replay started, or too many blocks) is not kept.

        Raises:
            MisuseError: After `finish`.
        """
    def _check_summary(
        self, ordinal: int, full: bytes, /
    ) -> Literal["same", "fill", "extend", "mismatch"]:
        """Compares `full` (a Responses `.done` summary) with the call's text: `same` when the
        call already holds its JSON tokens (held fragments are decided by the reading it
        matches), `fill` when the call has no text yet (feed `full` as a fragment then),
        `extend` when `full` starts with the call's text (its last deltas were lost: `full`
        completed it), `mismatch` when the call holds other text: it became an
        `arguments_mismatch` error, its text kept."""
    def _replace_free_form(self, ordinal: int, full: bytes, /) -> bool:
        """`full` (a Responses custom tool call's finished item) replaces the free-form text
        of the call at `ordinal` when it differs (warning `input_mismatch`); returns whether
        it did. False, changing nothing, for a call that is not free-form, has no text yet,
        has ended or is past a per-stream limit."""
    @property
    def _chat_ended_calls(self) -> int | None:
        """How many calls a Chat choice's finish reason (`stop`, `tool_calls`) ended on the raw
        path, the latest such reason before any provider error: a break or a provider error
        after it cuts or stops only the calls that started after it. None otherwise."""
    def _interrupt_from(self, first: int, reason: str, /) -> None:
        """`interrupt` for the calls from ordinal `first` on: the calls before it had ended.

        Raises:
            MisuseError: After `finish`.
        """
    def _stop_call(self, ordinal: int, reason: str, /) -> None:
        """The provider stopped the call at `ordinal` alone (sent after it gave up): the call
        is `filtered`, never executed, whatever it holds; one already stopped keeps its reason.

        Raises:
            MisuseError: After `finish`, or for an unknown ordinal.
        """
    def _mismatch_arguments(self, ordinal: int, message: str, /) -> None:
        """The call at `ordinal` becomes an `arguments_mismatch` error with `message` (a
        recorded call replayed), never executed, whatever it holds.

        Raises:
            MisuseError: After `finish`, or for an unknown ordinal.
        """
    def _set_index(self, ordinal: int, index: int | None, /) -> None:
        """Sets the index the call at `ordinal` reports when it is routed by another key (a
        Responses item keyed apart from another item sent under the same `output_index`)."""
    def finish(self) -> list[ToolCall]:
        """Ends the stream: every started call exactly once, in ordinal order.

        Raises:
            MisuseError: When called twice.
        """
    def release_finished(self) -> None:
        """Frees the finished calls' working state (scanners, pre-check and progress state),
        which `finish` leaves to be freed with the assembler so that the calls come out sooner:
        for an assembler kept after its stream ended. What `finish` returned and what the
        assembler still reports stay; before `finish` it does nothing."""
