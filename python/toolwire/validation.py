"""Validation of completed tool calls: from a call to an `Outcome` the caller can act on.

The order of work for one call is fixed and cheap-first:

1. A call that already carries an error from the core (truncated, invalid JSON, unknown tool,
   filtered, ...) becomes an outcome without running Pydantic.
2. Valid argument text goes straight to `model_validate_json(text, strict=True)`: one Rust pass,
   no Python dict built, `Decimal` fields get the digits the model wrote. Strict mode keeps
   Pydantic from applying its own unrecorded lax conversions (`"yes"` → `True`, `"30"` → `30`);
   a model whose config sets `strict=False` explicitly keeps lax mode.
3. Only when that fails (or a post-check finds a timestamp without an offset, milliseconds in
   a Unix-seconds field, or a number a float field would read as infinity or zero) are the
   arguments parsed with `Decimal` floats, coerced by the rules in
   `toolwire.coercion` and validated again from the coerced text. Every change is recorded.
4. Business checks run on the validated model; a rejection is a `business_error`.

Error reports (`FieldError`) are built from the tool's JSON Schema and the stable Pydantic error
`type`, never from Pydantic's English message, so they can be translated and do not leak class
names. At most five are reported, ordered by `_RANK`: a missing required field or an unknown
field usually explains the type errors that follow it (a misspelt key is both), so those come
first, then type and enum errors, then constraint errors.

Unknown fields: the pre-check schema (`Toolset.schema`) closes every object that declares a
property, and a tool's parameters that declare none (a tool without parameters), so the Rust
pre-check (`Assembler(tools=toolset)`) reports them as `unknown_field`. Pydantic's default
`extra="ignore"` would drop them silently on calls that bypass the pre-check; give the model
`extra="forbid"` to reject them in Python as well.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import decimal
import difflib
import functools
import gc
import heapq
import json
import math
import re
import urllib.parse
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, TypeVar, cast, get_args

import jsonschema
import jsonschema.protocols
import jsonschema.validators
import regex
from pydantic import BaseModel, NaiveDatetime, SecretBytes, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError, SchemaValidator
from pydantic_core.core_schema import ErrorType

from toolwire._core import ToolRegistry, capped_path
from toolwire.coercion import (
    JSON_NUMBER,
    KEYS_KEY,
    SPELLINGS_KEY,
    UNIT_KEY,
    UNIX_MS_THRESHOLD,
    UNIX_SECONDS,
    Coercion,
    CoercionProblem,
    bool_number_swap,
    coerce_arguments,
    decimal_beside_integer,
    dumps_exact,
    enum_members,
    float_for_integer,
    float_risk,
    has_boolean_enums,
    has_decimals,
    has_floats,
    has_integer_fields,
    has_json_type,
    has_repeats,
    has_scalar_enums,
    has_timestamps,
    has_untyped,
    is_decimal_union,
    json_key,
    loads_exact,
    odd_decimal_text,
    past_float,
    pointer,
    quote_decimals,
    rounds_to_whole,
    schema_has,
    shown,
    unix_timestamp_text,
    whole_float_in_integer_enum,
)
from toolwire.jsonschema_dialect import (
    ReferenceLoop,
    WrittenFloat,
    extended_validator,
    pattern_budget,
    search,
)
from toolwire.payloads import (
    MAX_RESULT_CHARS,
    MESSAGES,
    RENAMED_END,
    Lang,
    Named,
    Style,
    answering_id,
    check_lang,
    message_for,
    sendable_text,
    text,
    wire_id_of,
)
from toolwire.schema_export import accepts_null, closing_splits_one_of, without_keywords
from toolwire.subschemas import (
    SECRET_KEY,
    inner,
    inner_all,
    meant_field,
    pointer_tokens,
    same_value,
)
from toolwire.subschemas import is_marked_secret as _is_secret

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = [
    "MAX_ERRORS",
    "BusinessRuleError",
    "CallErrorLike",
    "CallLike",
    "Check",
    "FieldError",
    "Outcome",
    "OutcomeKind",
    "Redactor",
    "ToolValidator",
]

MAX_ERRORS = 5
MAX_LISTED_TOOLS = 20
"""How many tool names an `unknown_tool` or `missing_name` payload lists at most."""
REDACTED = "[redacted]"
USER_SUPPLIED_KEY = "x-user-supplied"

OutcomeKind = Literal["ok", "model_error", "business_error", "needs_clarification"]
Check = Callable[[Any], str | Sequence[str] | None]
"""A business check: takes the validated model (or dict) and returns rejection reasons, if any."""
Redactor = Callable[[str, str], str]
"""A redaction hook: `(json_pointer, text) -> text`, applied to every value shown to the model."""


class CallErrorLike(Protocol):
    """What validation reads from an error attached to a call (`toolwire.CallError`)."""

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


class CallLike(Protocol):
    """What validation reads from a completed call (`toolwire.ToolCall`)."""

    @property
    def ordinal(self) -> int: ...
    @property
    def index(self) -> int | None: ...
    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def arguments(self) -> str: ...
    @property
    def value(self) -> object: ...
    @property
    def error(self) -> CallErrorLike | None: ...


class BusinessRuleError(Exception):
    """Raised by a business check (or a tool) to reject a well-formed request.

    Args:
        *reasons: One or more reasons, written for the model to relay to the user.
    """

    def __init__(self, *reasons: str) -> None:
        self.reasons = list(reasons)
        super().__init__("; ".join(self.reasons))

    @property
    def reasons(self) -> list[str]:
        """The reasons, as text. A subclass that did not call this class's `__init__` (it
        called `Exception.__init__` with its message) gives its message, or none."""
        try:
            return cast(list[str], self.__dict__["_reasons"])
        except KeyError:
            pass
        try:
            message = str(self)
        except Exception:  # a broken __str__ must not make reading a rejection raise
            return []
        return [message] if message else []

    @reasons.setter
    def reasons(self, value: str | Iterable[object]) -> None:
        # One str is one reason, not one per character; a reason that is not a str (an enum, a
        # number) is written as text rather than making the raise itself fail, which would turn
        # a rejection into a generic tool failure.
        items = [value] if isinstance(value, str) else list(value)
        self.__dict__["_reasons"] = [str(reason) for reason in items]


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one argument value, in words built from the tool's schema.

    Attributes:
        path: JSON Pointer of the value (`""` for the whole arguments); a key that quotes a
            secret argument of the call shows it as `[redacted]`, and one longer than 200
            characters is cut as `CallError.path` cuts it (`…(N chars)`, N its length).
        code: A stable slug: `missing`, `unknown_field`, `type`, `enum`, `format`,
            `timezone_required`, `pattern`, `range`, `multiple_of`, `decimal`, `length`, `unique`,
            `ambiguous`, `value`, `business_rule`, `schema_violation` or `invalid`. A dict key
            is reported at its object (`got` is the key): `type` when it is not written as its
            type's JSON text (a Unix time for a timestamp), `timezone_required` for a
            timestamp without an offset, `unique` when it names an entry another key names.
        expected: What the schema wants, in words (`one of "low", "high"`, `>= 1`).
        got: The value as written, compact JSON cut to 200 characters (redacted for secrets).
        hint: Extra advice for the model, when there is any.
    """

    path: str
    code: str
    expected: str | None = None
    got: str | None = None
    hint: str | None = None

    def as_payload(self) -> dict[str, str]:
        """The error as a compact dict for a model-facing payload (None values left out; a
        path through keys the model made up is cut like any text it sent)."""
        out = {"path": shown_text(self.path), "code": self.code}
        for key in ("expected", "got", "hint"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


_NO_RESULT: Any = object()
# A value that is not there (a JSON Pointer that leads nowhere), as opposed to null.
_ABSENT: Any = object()


GC_PAUSE_MIN_BYTES = 8192
"""Argument size from which Pydantic validates with the cyclic garbage collector paused."""


def pause_gc() -> bool:
    """Pauses the cyclic garbage collector for the validation of a large call; True if this
    paused it (the caller then resumes it with `gc.enable()`), False if it was already paused.

    A large call's validation allocates thousands of containers, and every 700 of them start a
    collection that walks the young objects, with older generations walked every tenth time: on
    200 KB of arguments those walks made validation grow 12x from 20 KB, where the work grows
    10x. The objects Pydantic builds from JSON form a tree, so collecting them while they are
    built finds nothing; a cycle a custom validator makes is collected after. The pause lasts
    until the outcome holds the model: its first allocation would otherwise start the walk
    over everything just built.
    """
    if not gc.isenabled():
        return False
    gc.disable()
    return True


def success_outcome(
    call_id: str | None,
    tool: str,
    model: BaseModel | None,
    value: Any,
    coercions: list[Coercion],
    lang: Lang,
    cls: type[Outcome] | None = None,
    secrets: tuple[SecretStr, ...] = (),
    synthetic_id: str | None = None,
    wire_id: str | None = None,
) -> Outcome:
    """A successful `Outcome`, built without its dataclass `__init__` (a subclass uses its own).

    A frozen dataclass's `__init__` sets each field through `object.__setattr__`: about 2 us for
    this class, most of the time spent validating a small call. Plain attribute stores on an
    object of a class with the same slots and no `__setattr__` of its own go straight to its
    slots; the object then becomes an `Outcome` by `__class__` assignment, which CPython allows
    between classes of the same layout.
    """
    if cls is not None and cls is not Outcome:
        # A subclass's own fields (and slots) need its `__init__`.
        return cls(
            ok=True,
            kind="ok",
            tool=tool,
            call_id=call_id,
            model=model,
            value=value,
            coercions=coercions,
            lang=lang,
            secrets=secrets,
            synthetic_id=synthetic_id,
            wire_id=wire_id,
        )
    draft: Any = _OutcomeDraft()
    # Every field, in declaration order, as `__init__` would leave them.
    draft.ok = True
    draft.kind = "ok"
    draft.tool = tool
    draft.call_id = call_id
    draft.model = model
    draft.value = value
    draft.errors = []
    draft.coercions = coercions
    draft.retryable = False
    draft.error_type = ""
    draft.message = None
    draft.hint = None
    draft.ask_user = []
    draft.lang = lang
    draft.secrets = secrets
    draft.synthetic_id = synthetic_id
    draft.wire_id = wire_id
    draft.call_type = None
    draft.__class__ = Outcome
    return cast(Outcome, draft)


SUCCESS_PER_CALL: tuple[tuple[str, str], ...] = (
    ("tool", "tool"),
    ("call_id", "call_id"),
    ("model", "model"),
    ("errors", "list"),
    ("coercions", "list"),
    ("ask_user", "list"),
)
"""The fields of a successful `Outcome` that natively built successes get per call: the
call's own values, and a new list for each list (an outcome's lists are its holder's)."""


def success_template(lang: Lang) -> dict[str, Any]:
    """The attributes of a successful `Outcome` in `lang`, for
    `toolwire._core.DirectValidation`, which builds the common case natively from them with
    `SUCCESS_PER_CALL` put in: made by `success_outcome`, so both paths agree."""
    success = success_outcome(None, "", None, None, [], lang)
    template = {f.name: getattr(success, f.name) for f in dataclasses.fields(Outcome)}
    per_call = {field for field, _ in SUCCESS_PER_CALL}
    shared = [name for name, value in template.items() if isinstance(value, list)]
    if not per_call.issuperset(shared):  # A list every outcome shared would leak between them.
        raise AssertionError(f"lists missing from SUCCESS_PER_CALL: {shared}")
    return template


# Slots: the native path (`toolwire._core.DirectValidation`) stores a success's fields
# straight into them, where a dict had to be copied and filled.
@dataclass(frozen=True, slots=True)
class Outcome:
    """The result of validating one call.

    Attributes:
        ok: True if the call may be executed.
        kind: `ok`, `model_error` (the model should fix its arguments), `business_error` (a
            business check rejected a well-formed request) or `needs_clarification` (a value
            only the user can give is missing).
        tool: The tool name ("" if the call had none).
        call_id: The call's id, if it had one.
        model: The validated Pydantic instance, for model tools.
        value: The validated arguments as plain JSON data, for dict tools; the free-form
            input text (a `str`, as sent), for a custom tool.
        errors: At most five errors, most useful first.
        coercions: Every coercion applied before the arguments validated.
        retryable: True if asking the model to call again can fix it.
        error_type: A stable slug for the failure (`validation`, `truncated`, `invalid_json`,
            `not_object`, `too_large`, `unknown_tool`, `missing_name`, `filtered`,
            `lost_event`, `arguments_mismatch`, `free_form_call`, `wrong_tool_type` (a
            function call to a custom tool, or a custom tool call to a JSON tool),
            `business_rule`,
            `needs_clarification`, `no_result`, `tool_failed`);
            "" when ok.
        message: One sentence about the failure for the model.
        hint: Advice for the model (and for whoever reads the logs).
        ask_user: Fields only the user can supply (for `needs_clarification`).
        lang: The language of the texts.
        secrets: The argument values the tool's schema marks secret (`x-secret`,
            `format: password`), each as a `SecretStr`, for a successful call whose tool has
            any: the executor hides them in whatever quotes them (the tool's own errors, logs).
            A plain tool's arguments are plain data, so nothing else says which are secret.
            Left out of `repr` and comparisons.
        synthetic_id: For a call the provider sent without an id (Gemini's API sends none),
            the id toolwire answers it with, `toolwire_<ordinal>` (`call_id_for`); None for a
            call with an id. The executor carries it to the call's `ExecutionResult`, so that
            `tool_messages` matches the result to its call in any order.
        wire_id: For a call whose id the assembler renamed because it repeated an earlier
            call's (warning `duplicate_id`), the id the provider sent (`metadata["wire_id"]`),
            which Gemini gets back in place of `call_id`, as does a stored Responses turn
            (`stateful`); None for every other call. Set by `Toolset.validate`, and by
            `success`, `failure` and `business_failure` from the call given.
        call_type: `custom` for a custom tool's call (free-form input), which `to_message`
            answers in kind (`custom_tool_call_output` on `openai-responses`); None for a
            function call. Set by `Toolset.validate`.
    """

    ok: bool
    kind: OutcomeKind
    tool: str
    call_id: str | None
    model: BaseModel | None = None
    value: Any = None
    errors: list[FieldError] = field(default_factory=lambda: [])
    coercions: list[Coercion] = field(default_factory=lambda: [])
    retryable: bool = False
    error_type: str = ""
    message: str | None = None
    hint: str | None = None
    ask_user: list[str] = field(default_factory=lambda: [])
    lang: Lang = "en"
    secrets: tuple[SecretStr, ...] = field(default=(), repr=False, compare=False)
    synthetic_id: str | None = None
    wire_id: str | None = None
    call_type: str | None = None

    @classmethod
    def success(
        cls,
        call: CallLike | _HasId,
        tool: str,
        *,
        model: BaseModel | None = None,
        value: Any = None,
        coercions: list[Coercion] | None = None,
        lang: Lang = "en",
        secrets: Sequence[SecretStr] = (),
    ) -> Outcome:
        """A successful outcome: the call may run with `model` (or `value`, for dict tools).

        Args:
            call: The call it belongs to: the outcome takes its id, and the id the provider
                sent for it when the assembler renamed it (`wire_id`).
            tool: The tool name.
            model: The validated Pydantic instance, for model tools.
            value: The validated arguments as plain JSON data, for dict tools.
            coercions: The coercions applied before the arguments validated.
            lang: The language of the texts.
            secrets: The argument values the tool's schema marks secret.

        Returns:
            The outcome.
        """
        coercions = [] if coercions is None else coercions
        synthetic = synthetic_id_of(call)
        return success_outcome(
            call.id,
            tool,
            model,
            value,
            coercions,
            lang,
            cls,
            tuple(secrets),
            synthetic,
            wire_id_of(call),
        )

    @property
    def executable(self) -> bool:
        """True if the tool may run with these arguments (the same as `ok`)."""
        return self.ok

    def instruction(self) -> str:
        """The instruction to the model that ends a failure payload ("" for success)."""
        tool = json.dumps(self.tool or "the tool", ensure_ascii=False)
        if self.ok:
            return ""
        if self.kind == "needs_clarification" and not self.ask_user:
            # A tool's own question that names no field (`NeedsClarification`).
            return text("instruction.ask_question", self.lang)
        if self.kind == "needs_clarification":
            return text("instruction.clarify", self.lang, fields=", ".join(self.ask_user))
        if self.error_type in ("unknown_tool", "missing_name"):
            # Calling the same (unknown or missing) name again cannot work; the message lists
            # the tools that exist.
            return text("instruction.choose_tool", self.lang)
        if self.retryable:
            return text("instruction.retry", self.lang, tool=tool)
        return text("instruction.stop", self.lang, tool=tool)

    def to_message(
        self,
        call: CallLike | None = None,
        style: Style = "openai-chat",
        *,
        attempt: int = 1,
        result: object = _NO_RESULT,
        max_result_chars: int | None = MAX_RESULT_CHARS,
        bedrock_status: bool = True,
        stateful: bool = False,
    ) -> dict[str, Any]:
        """The provider tool-result message for this outcome.

        Args:
            call: The call being answered, the one this outcome is of (its id is used;
                defaults to `call_id`, or `synthetic_id` for a call without an id; on
                Gemini, `wire_id` for a call whose repeated id the assembler renamed).
            style: `openai-chat`, `openai-responses`, `anthropic`, `gemini` or
                `bedrock-converse`.
            attempt: Which attempt at this logical call this was (1 for the first).
            result: For a successful outcome, what the tool returned (or the exception it
                raised: a `BusinessRuleError` gives its reasons and a `NeedsClarification`
                its question, with the secret arguments they quote hidden (`SecretStr`
                values and those in `secrets`), any other `tool_failed`).
            max_result_chars: The cap on the result's text in characters (None: no cap); a
                longer result answers the call with a `result_too_large` error, as
                `tool_messages` does.
            bedrock_status: Whether a Bedrock `toolResult` carries `status`; AWS documents
                it for Anthropic Claude and Amazon Nova models only (see `wrap_message`).
            stateful: The message continues a response the provider stored
                (`openai-responses` with `previous_response_id`): it answers the `call_id`
                the provider stored, `wire_id` for a call whose repeated id was renamed.

        Returns:
            The message dict, ready to append to the conversation.

        Raises:
            ValueError: If the outcome is a success and no `result` was given, or
                `stateful` is given with a style other than `openai-responses`.
            MisuseError: `call` is another call, or is left out for a call without an id.
        """
        if self.ok and result is _NO_RESULT:
            raise ValueError("a successful outcome needs the tool's result: pass result=...")
        call_id, answered = answered_call(self, call)
        arguments = self.model if self.model is not None else self.value
        return message_for(
            style,
            call_id,
            self,
            attempt=attempt,
            result=result,
            max_result_chars=max_result_chars,
            call=answered,
            scrub=lambda said: scrubbed_text(said, arguments, self.secrets),
            bedrock_status=bedrock_status,
            stateful=stateful,
        )

    @classmethod
    def failure(
        cls,
        call: CallLike | _HasId,
        tool: str,
        error_type: str,
        *,
        lang: Lang = "en",
        retryable: bool = False,
    ) -> Outcome:
        """A failure with no field errors (`no_result`, `tool_failed`, ...).

        Args:
            call: The call it belongs to (its id, and `wire_id` as for `success`).
            tool: The tool name.
            error_type: The slug; `msg.<error_type>` must exist in `MESSAGES`.
            lang: Language of the message.
            retryable: Whether calling again could help.

        Returns:
            The outcome.

        Raises:
            ValueError: `error_type` has no message (it failed as a bare `KeyError`), or
                `lang` is not a language the texts are written in.
        """
        check_lang(lang)
        if f"msg.{error_type}" not in MESSAGES:
            known = sorted(key[4:] for key in MESSAGES if key.startswith("msg."))
            raise ValueError(f"no message for error_type {error_type!r}; known: {known}")
        return cls(
            ok=False,
            kind="model_error",
            tool=tool,
            call_id=call.id,
            retryable=retryable,
            error_type=error_type,
            message=text(f"msg.{error_type}", lang),
            lang=lang,
            synthetic_id=synthetic_id_of(call),
            wire_id=wire_id_of(call),
        )

    @classmethod
    def business_failure(
        cls, call: CallLike | _HasId, tool: str, reasons: Sequence[str], *, lang: Lang = "en"
    ) -> Outcome:
        """A `business_error` outcome carrying the check's reasons.

        Args:
            call: The call it belongs to (its id, and `wire_id` as for `success`).
            tool: The tool name.
            reasons: Why the request was rejected.
            lang: Language of the message.

        Returns:
            The outcome.
        """
        # One reason given as a string is one reason, not one per character.
        listed = [reasons] if isinstance(reasons, str) else list(reasons or [])
        cut = [shown_text(str(r)) for r in listed if str(r).strip()][:MAX_ERRORS]
        message = (
            text("msg.business_rule", lang, reasons="; ".join(cut))
            if cut
            else text("msg.business_rule_unexplained", lang)
        )
        return cls(
            ok=False,
            kind="business_error",
            tool=tool,
            call_id=call.id,
            errors=[FieldError("", "business_rule", hint=r) for r in cut],
            retryable=False,
            error_type="business_rule",
            message=message,
            lang=lang,
            synthetic_id=synthetic_id_of(call),
            wire_id=wire_id_of(call),
        )


def _check_reasons(tool: str, verdict: object) -> list[object]:
    """A check's verdict as its list of reasons (empty: a pass).

    A check that returns a bool (a predicate, `lambda order: order.total < 1000`) says
    nothing this contract reads: `False`, read as no reasons, passed the very call the check
    refused. Such a verdict, or one of another kind, raises `TypeError`, and the call ends as
    an `internal_error` and does not run, as for a check that raises.

    Raises:
        TypeError: The verdict is neither None, a string nor a sequence of reasons.
    """
    if verdict is None:
        return []
    if isinstance(verdict, str):
        return [verdict]
    kind = type(verdict).__name__
    if isinstance(verdict, (bool, bytes, Mapping)) or not isinstance(verdict, Iterable):
        raise TypeError(
            f"the check of {tool!r} returned {kind}: return None to accept "
            "the call, or a reason or a list of reasons to reject it"
        )
    return list(cast(Iterable[object], verdict))


def synthetic_id_of(call: CallLike | _HasId) -> str | None:
    """The id toolwire answers a call without one with (`call_id_for`), or None for a call
    with an id, or one without an `ordinal` to make it from."""
    if call.id:
        return None
    ordinal: object = getattr(call, "ordinal", None)
    if not isinstance(ordinal, int) or isinstance(ordinal, bool):
        return None
    return f"toolwire_{ordinal}"


def with_synthetic_id(outcome: Outcome, call: CallLike) -> Outcome:
    """`outcome` with `synthetic_id` set from `call` when the call came without an id."""
    if outcome.call_id or outcome.synthetic_id is not None:
        return outcome
    synthetic = synthetic_id_of(call)
    return outcome if synthetic is None else dataclasses.replace(outcome, synthetic_id=synthetic)


def with_wire_id(outcome: Outcome, call: CallLike) -> Outcome:
    """`outcome` with `wire_id` set from `call` when the assembler renamed the call's repeated
    id (`wire_id_of`)."""
    own = outcome.call_id
    if not own or own[-1] not in RENAMED_END or outcome.wire_id is not None:
        return outcome
    wire = wire_id_of(call)
    return outcome if wire is None else dataclasses.replace(outcome, wire_id=wire)


class _OutcomeDraft:
    """A plain object that becomes an `Outcome` once its fields are set (`success_outcome`):
    the same slots, without the frozen `__setattr__`."""

    __slots__ = tuple(f.name for f in dataclasses.fields(Outcome))


@dataclass(frozen=True, slots=True)
class _NoIdCall:
    """A call known by its tool's name and the id it was sent with, if any (what
    `wrap_message` reads)."""

    name: str
    id: str | None = None
    type: str | None = None


def answered_call(outcome: Outcome, call: CallLike | None) -> tuple[str, Named]:
    """The id a message about `outcome` answers (`answering_id`) and the call it answers as
    `wrap_message` reads it: `call`, or without one the outcome's own, named as its tool, so
    that a verdict sent without its call is the message it is with it (a Gemini
    `functionResponse`, not the `text` part of a call of no name).

    Raises:
        MisuseError: As `answering_id`.
    """
    call_id = answering_id(call, outcome.call_id, outcome.synthetic_id)
    if call is not None:
        return call_id, call
    # The provider never saw a made-up id: Gemini's answer goes by the name alone; nor a
    # renamed one: it gets back the id it sent. A custom tool's call is answered with a
    # `custom_tool_call_output` (Responses).
    free_form = outcome.call_type or outcome.error_type == "free_form_call"
    kind = "custom" if free_form else None
    return call_id, _NoIdCall(outcome.tool, outcome.wire_id or outcome.call_id or None, kind)


class _HasId(Protocol):
    @property
    def id(self) -> str | None: ...


def shown_text(value: str) -> str:
    """Cut free text to 200 characters."""
    return value if len(value) <= _SHOWN else value[: _SHOWN - 1] + _ELLIPSIS


_SHOWN = 200
_ELLIPSIS = "…"


class _Shown(list[str]):
    """The pieces of a value being written for `shown_text`, and whether they already run
    past what it keeps (then the rest need not be written)."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def append(self, piece: str, /) -> None:
        super().append(piece)
        self.size += len(piece)

    @property
    def full(self) -> bool:
        return self.size > _SHOWN


# --------------------------------------------------------------------------------------------
# Schema lookups

_JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
_FORMATS = (
    "date-time",
    "date",
    "time",
    # A plain tool's `time` (see `_Schema.full_time`).
    "full-time",
    "duration",
    "uuid",
    "email",
    "uri",
    "ipv4",
    "ipv6",
    "hostname",
    # Pydantic's own string types: "a string" tells the model nothing when it sent one.
    "ipvanyaddress",
    "ipv4network",
    "ipv6network",
    "ipvanynetwork",
    "ipv4interface",
    "ipv6interface",
    "ipvanyinterface",
    "name-email",
    "multi-host-uri",
    "file-path",
    "directory-path",
    "path",
    # Validation's own name for a `NaiveDatetime` (see `toolset._DecimalSchema`).
    "naive-date-time",
)
# Byte strings the model writes encoded (Pydantic's `Base64Bytes`, `Base64UrlStr`, ...).
_ENCODINGS = ("base64", "base64url")
_TAG_TYPES = {
    "int": "integer",
    "str": "string",
    "float": "number",
    # `conint(ge=5)`, `constr(max_length=3)`, `confloat(multiple_of=5)` as union branches.
    "constrained-int": "integer",
    "constrained-str": "string",
    "constrained-float": "number",
    "bool": "boolean",
    "none": "null",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "frozenset": "array",
    "dict": "object",
}


def _d(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _l(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _is_tagged_union(node: Mapping[str, Any]) -> bool | None:
    branches = _l(node.get("anyOf")) + _l(node.get("oneOf"))
    readings = [b for b in branches if _d(b).get("type") != "null"]
    return True if len(readings) > 1 else None


def _declares(node: Mapping[str, Any], seg: str | int) -> bool:
    """Whether `node` itself describes the member `seg`: a property of that name, or items."""
    if isinstance(seg, str):
        return seg in _d(node.get("properties"))
    return "items" in node or "prefixItems" in node


def _is_object_schema(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


_ANY_INDEX: Any = object()
"""An array index in the shape of a `loc` (`_Schema.locate`)."""
# How many shapes of `loc` one tool's schema keeps the answer for: a call of 100,000 unknown
# keys has as many shapes, each asked once.
_LOCATED_SHAPES = 4096


def _shape(loc: Sequence[str | int]) -> tuple[object, ...]:
    return tuple(_ANY_INDEX if isinstance(seg, int) else seg for seg in loc)


class _Schema:
    """Lookups on one tool's self-contained schema."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.defs = _d(root.get("$defs"))
        self._marks_of: dict[str, tuple[bool, frozenset[str]]] = {}
        # `locate`'s answers by the shape of a `loc`: a walk's answer, the places in the
        # `loc` of the segments its pointer keeps, and how many the union's pointer keeps.
        self._located: dict[tuple[object, ...], tuple[_Located, tuple[int, ...], int | None]] = {}
        # `members`' answers by the identity of a union's list, kept with the list.
        self._members: dict[int, tuple[list[Any], list[dict[str, Any]], list[dict[str, Any]]]] = {}
        # No union with two readings besides null: `locate` then finds no union tag in any
        # error's path, and errors need not be located to be ranked (see `_Pending`).
        self.tagless = not schema_has(root, _is_tagged_union)
        self.asks_user = schema_has(root, lambda node: True if USER_SUPPLIED_KEY in node else None)
        # Whether `format: time` takes only a time with its offset (a plain tool's, which
        # `jsonschema` checks as RFC 3339 says), not also one without (Pydantic's `time`).
        self.full_time = False

    def __getstate__(self) -> dict[str, Any]:
        # The memos are kept by the identity of objects (a union's list, `_ANY_INDEX`) that a
        # copy of the schema, or another process, does not share: they start again.
        state = dict(self.__dict__)
        state["_located"] = {}
        state["_members"] = {}
        return state

    def deref(self, node: Mapping[str, Any]) -> dict[str, Any]:
        hops = 0
        while isinstance(node.get("$ref"), str) and hops < 32:
            node = _d(self.defs.get(str(node["$ref"]).rsplit("/", 1)[-1]))
            hops += 1
        return dict(node)

    def branches(
        self, node: Mapping[str, Any], _seen: set[str] | None = None
    ) -> list[dict[str, Any]]:
        """The leaf branches of a (possibly nested) union, dereferenced. A definition the union
        reaches again (`A = anyOf[integer, $ref A]`) adds no branch it has not given already."""
        seen: set[str] = set() if _seen is None else _seen
        out: list[dict[str, Any]] = []
        for branch in _l(node.get("anyOf")) + _l(node.get("oneOf")):
            reference = _d(branch).get("$ref")
            if isinstance(reference, str):
                if reference in seen:
                    continue
                seen.add(reference)
            resolved = self.deref(_d(branch))
            if "anyOf" in resolved or "oneOf" in resolved:
                out.extend(self.branches(resolved, seen))
            else:
                out.append(resolved)
        return out

    def members(self, listed: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The branches a union lists (`anyOf`, `oneOf`), each dereferenced, and each one's
        tags (`_tags`): worked out once per union, not once for each of thousands of items
        that fail it, which for a union of fifty branches cost more than finding the errors."""
        known = self._members.get(id(listed))
        if known is None:
            branches = [self.deref(_d(b)) for b in listed]
            known = (listed, branches, [_tags(b) for b in branches])
            if len(self._members) < _LOCATED_SHAPES:
                self._members[id(listed)] = known
        return known[1], known[2]

    def parts(self, node: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every schema that describes the same value as `node` besides its own keywords
        (union branches, `allOf` members, `if`/`then`/`else`, `dependentSchemas`), nested
        ones included, dereferenced; a definition reached twice is taken once."""
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        pending = list(same_value(self.deref(node)))
        while pending:
            part = pending.pop(0)
            ref = part.get("$ref")
            if isinstance(ref, str):
                if ref in seen:
                    continue
                seen.add(ref)
            resolved = self.deref(part)
            out.append(resolved)
            pending.extend(same_value(resolved))
        return out

    def is_secret_here(self, node: Mapping[str, Any]) -> bool:
        """Whether the value `node` describes is itself secret, by its own mark or a part's."""
        node = self.deref(node)
        return _is_secret(node) or any(_is_secret(p) for p in self.parts(node))

    def owner(self, node: dict[str, Any], seg: str | int) -> dict[str, Any] | None:
        """The `allOf` member (or `then`, `else`, `dependentSchemas` value) that declares
        `seg` when `node` itself does not, so that a field declared there is described and
        judged by its own schema."""
        if isinstance(seg, str):
            if seg in _d(node.get("properties")):
                return None
            return next((p for p in self.parts(node) if seg in _d(p.get("properties"))), None)
        if "items" in node or "prefixItems" in node:
            return None
        return next((p for p in self.parts(node) if "items" in p or "prefixItems" in p), None)

    def pick(self, branches: list[dict[str, Any]], tag: str | int) -> dict[str, Any] | None:
        for branch in branches:
            if branch.get("title") == tag:
                return branch
        for branch in branches:
            for prop in _d(branch.get("properties")).values():
                if _constant_fits(tag, _d(prop)):
                    return branch
        if isinstance(tag, int):
            return None
        kind = _TAG_TYPES.get(tag.split("[", 1)[0])
        for branch in branches:
            if kind is not None and branch.get("type") == kind:
                return branch
        return None

    def index_in(self, node: dict[str, Any], seg: str) -> str | int:
        """`seg` as an array index when `node` (or a branch of it) is an array and no object
        there has a property of that name, else as it is."""
        candidates = [node, *self.branches(node)]
        if any(seg in _d(c.get("properties")) for c in candidates):
            return seg
        arrays = any("items" in c or "prefixItems" in c for c in candidates)
        return int(seg) if arrays else seg

    def locate(self, loc: Sequence[str | int]) -> _Located:
        """Where `loc` (Pydantic's, or a JSON Pointer's segments) lies in the schema.

        A call with thousands of bad items has as many errors, whose `loc`s differ in their
        array indices alone: a walk that no index steered (see `_walk`) is kept by its `loc`
        with each index left out, and another `loc` of that shape is answered from it.
        """
        known = self._located.get(_shape(loc))
        if known is not None:
            proto, kept, union_at = known
            parts = [loc[i] for i in kept]
            union_ptr = None if union_at is None else pointer(parts[:union_at])
            return _Located(
                pointer(parts), proto.node, proto.parent, proto.secret, union_ptr, proto.tag
            )
        located, template = self._walk(loc)
        if template is not None and len(self._located) < _LOCATED_SHAPES:
            self._located[_shape(loc)] = (located, *template)
        return located

    def pointers(self, loc: Sequence[str | int]) -> tuple[str, str | None]:
        """`locate(loc)`'s pointer and union pointer, from a `loc` of that shape located
        before where there is one: no node is looked up."""
        known = self._located.get(_shape(loc))
        if known is None:
            located = self.locate(loc)
            return located.pointer, located.union_ptr
        _, kept, union_at = known
        parts = [loc[i] for i in kept]
        return pointer(parts), None if union_at is None else pointer(parts[:union_at])

    def _walk(
        self, loc: Sequence[str | int]
    ) -> tuple[_Located, tuple[tuple[int, ...], int | None] | None]:
        """`locate`'s walk, and how its answer is made for another `loc` of the same shape
        (the places in `loc` of the segments its pointer keeps, and how many of them the
        union's pointer keeps), or None where an index decided a step: a tuple position, an
        integer union tag, or a place inside a JSON string."""
        node = self.deref(self.root)
        parent: dict[str, Any] | None = None
        parts: list[str | int] = []
        secret = _is_secret(node)
        union_ptr: str | None = None
        tag: str | None = None
        inside: _Located | None = None
        kept: list[int] = []
        union_at: int | None = None
        generic = True
        for depth, seg in enumerate(loc):
            node = self.deref(node)
            secret = secret or _is_secret(node)
            text_node = next(
                (
                    b
                    for b in [node, *self.branches(node)]
                    if b.get("contentMediaType") == "application/json"
                ),
                None,
            )
            if text_node is not None:
                # Pydantic's `Json[...]` reports errors inside the JSON text the string holds,
                # a place no JSON Pointer into the arguments reaches: the string is what to fix,
                # and its description says what JSON it must hold.
                content = text_node.get("contentSchema")
                if isinstance(content, dict):
                    inner = _Schema({**cast(dict[str, Any], content), "$defs": self.defs})
                    inside = inner.locate(loc[depth:])
                generic = False
                break
            if isinstance(seg, str) and seg.isdigit():
                # A JSON Pointer (a pre-check error, a coercion) spells an array index as text.
                seg = self.index_in(node, seg)
            if "anyOf" not in node and "oneOf" not in node:
                declared = self.owner(node, seg)
                if declared is not None:
                    secret = secret or _is_secret(declared)
                    node = declared
            if "anyOf" in node or "oneOf" in node:
                branches = self.branches(node)
                # A branch may declare the member in an `allOf` member of its own (`Optional`
                # of a model written `allOf: [$ref]`, as OpenAPI generators write a reference
                # with a description): that member owns it, or the key was read as a union
                # tag and left out of the pointer.
                owner = next(
                    (
                        found
                        for b in branches
                        if (found := b if _declares(b, seg) else self.owner(b, seg)) is not None
                    ),
                    None,
                )
                if owner is not None:
                    node = owner
                elif isinstance(seg, int):
                    # The index is read as a tag: its value decides the step.
                    generic = False
                    chosen = self.pick(branches, seg)
                    if chosen is not None:
                        # A discriminated union's integer tag (`Literal[1]`), which Pydantic
                        # puts in `loc` as it puts a string tag: no branch holds items, so it
                        # is no index.
                        if union_ptr is None:
                            union_ptr, tag = pointer(parts), str(seg)
                        node = chosen
                        continue
                elif seg not in _d(node.get("properties")):
                    # A key the object declares itself beside its union (`anyOf` of
                    # `required` lists: either field will do) is that field, no union tag.
                    chosen = self.pick(branches, seg)
                    objects = [b for b in branches if _is_object_schema(b)]
                    if chosen is None and len(objects) == 1:
                        # Not a union tag but a key that no branch declares: an unknown field
                        # of the one object branch (`Optional[Model]` puts no tag in `loc`).
                        node = objects[0]
                    else:
                        if (
                            union_ptr is None
                            and len([b for b in branches if b.get("type") != "null"]) > 1
                        ):
                            union_ptr, tag = pointer(parts), seg
                            union_at = len(parts)
                        node = chosen if chosen is not None else node
                        continue
            parent = node
            parts.append(seg)
            kept.append(depth)
            if isinstance(seg, int):
                prefix = _l(node.get("prefixItems"))
                generic = generic and not prefix
                node = _d(prefix[seg]) if 0 <= seg < len(prefix) else _d(node.get("items"))
            else:
                props = _d(node.get("properties"))
                if seg in props:
                    node = _d(props[seg])
                else:
                    # A key a pattern names is described by that pattern's schema, as
                    # validation and coercion read it; `additionalProperties` has the rest.
                    named = _pattern_schema(node, seg)
                    node = named if named is not None else _d(node.get("additionalProperties"))
        node = self.deref(node)
        secret = secret or self.is_secret_here(node)
        located = _Located(pointer(parts), node, parent, secret, union_ptr, tag, inside)
        return located, ((tuple(kept), union_at) if generic else None)

    # Descriptions -----------------------------------------------------------------------

    def describe(self, node: Mapping[str, Any], lang: Lang, fmt: str | None = None) -> str:
        """What a value of `node` must be, in the model's words.

        Args:
            node: The schema node.
            lang: The language of the text.
            fmt: The format of a string whose node names none (see `_FORMAT_BY_TYPE`).

        Returns:
            The description.
        """
        node = self.deref(node)
        if isinstance(node.get("enum"), list):
            return _enum_text(_l(node["enum"]), lang)
        if "const" in node:
            return text("expected.const", lang, value=_json(node["const"]))
        branches = self.branches(node)
        if is_decimal_union(node):
            # Pydantic's `Decimal`: a number, its digits possibly quoted. "A number or a
            # string" would read as if any string did.
            kinds = ["number", *(["null"] if accepts_null(node) else [])]
            return text("join.or", lang).join(text(f"type.{k}", lang) for k in kinds)
        if decimal_beside_integer(node):
            # `int | Decimal`, merged: its numeric string is the `Decimal`'s number quoted.
            numbers = [b for b in branches if self.deref(b).get("type") != "string"]
            return self.describe({"anyOf": numbers}, lang, fmt)
        if branches:
            consts = [b["const"] for b in branches if "const" in b]
            if len(consts) == len(branches):
                return _enum_text(consts, lang)
            seen: list[str] = []
            for branch in branches:
                words = self.describe(branch, lang, fmt)
                if words not in seen:
                    seen.append(words)
            return text("join.or", lang).join(seen)
        if node.get("contentMediaType") == "application/json":
            # Pydantic's `Json[...]`: "a string" tells the model nothing when it sent one.
            inner = node.get("contentSchema")
            what = self.describe(cast(Mapping[str, Any], inner), lang) if inner else ""
            return text("expected.json_text", lang, what=what or text("type.any", lang))
        fmt_own = node.get("format")
        own = _format_text("full-time" if fmt_own == "time" and self.full_time else fmt_own, lang)
        if own is not None:
            return own
        types = node.get("type")
        names = [types] if isinstance(types, str) else [str(t) for t in _l(types)]
        # A string whose schema names no format: the error's own format says what it must
        # hold, where "a string" would tell the model nothing when it sent one.
        string = _format_text(fmt, lang)
        words = [
            string if t == "string" and string is not None else text(f"type.{t}", lang)
            for t in names
            if t in _JSON_TYPES
        ]
        return text("join.or", lang).join(words) if words else text("type.any", lang)

    def holds_secret(self, node: Mapping[str, Any]) -> bool:
        """Whether the node, or any value that can sit inside it, is secret.

        Each definition is read once, however often (or recursively) it is referenced: a
        recursive model with two self-references would otherwise be walked 2**depth times.
        """
        marked, refs = self._marks(node)
        seen: set[str] = set()
        while not marked and refs:
            name = refs.pop()
            if name not in seen:
                seen.add(name)
                marked, more = self._marks(self.defs.get(name) or {}, name)
                refs |= more - seen
        return marked

    def _marks(self, node: Mapping[str, Any], name: str | None = None) -> tuple[bool, set[str]]:
        """Whether a secret mark appears in `node` or its subschemas short of any `$ref`, and
        the definitions those references name (cached per definition)."""
        if name is not None and name in self._marks_of:
            marked, refs = self._marks_of[name]
            return marked, set(refs)
        marked, refs = False, set[str]()
        pending: list[Mapping[str, Any]] = [node]
        while pending and not marked:
            current = pending.pop()
            marked = _is_secret(current)
            ref = current.get("$ref")
            if isinstance(ref, str):
                refs.add(ref.rsplit("/", 1)[-1])
            pending += same_value(current) + inner_all(current)
        if name is not None:
            self._marks_of[name] = (marked, frozenset(refs))
        return marked, refs

    def hides(self, node: Mapping[str, Any] | None, scalar: bool) -> bool:
        """Whether a value `node` describes is shown as `[redacted]` whole: it is secret, or
        it is a scalar where secrets belong (one that cannot be taken apart may be one)."""
        if node is None:
            return False
        return self.is_secret_here(node) or (scalar and self.holds_secret(node))

    def beneath(
        self, node: Mapping[str, Any] | None, seg: str | int
    ) -> tuple[dict[str, Any] | None, bool]:
        """The schema of the value at `seg` inside a value of `node` (None where the schema
        says nothing of it), and whether that value is shown as `[redacted]` whole for where
        it sits: a key or item the schema does not place, next to secrets, may be one."""
        if node is None:
            return None, False
        child = self.child(node, seg)
        return child, child is None and self.holds_secret(node)

    def hides_at(self, path: Sequence[str | int], scalar: bool) -> bool:
        """Whether the value at `path` of the arguments is shown as `[redacted]` wherever an
        error shows it: the same steps `_scrub` takes from the root, which, with every union
        branch's view merged (`child`), hide at least what `locate` hides for any error."""
        node: Mapping[str, Any] | None = self.root
        for seg in path:
            if self.hides(node, False):
                return True
            node, hidden = self.beneath(node, seg)
            if hidden:
                return True
        return self.hides(node, scalar)

    def child(self, node: Mapping[str, Any], seg: str | int) -> dict[str, Any] | None:
        """The schema of the value at `seg` inside a value of `node` (what every part of it
        says, merged), or None where the schema describes no such value."""
        node = self.deref(node)
        found = [self.deref(sub) for part in [node, *self.parts(node)] for sub in inner(part, seg)]
        if not found:
            return None
        return found[0] if len(found) == 1 else {"anyOf": found}

    def keyword(self, node: Mapping[str, Any], key: str) -> Any:
        """A keyword from the node or the first union branch that has it."""
        node = self.deref(node)
        if key in node:
            return node[key]
        for branch in self.branches(node):
            if key in branch:
                return branch[key]
        return None


def string_leaves(
    value: Any, path: list[str | int] | None = None, *, scalars: bool = False
) -> Iterator[tuple[list[str | int], Any]]:
    """(path, value) of every string and secret in validated arguments (models, dicts, lists),
    with `scalars` every number and bool too. A model field marked `x-secret` comes as a
    `SecretStr` of its text, whatever its type, since only its schema says it is secret."""
    path = path or []
    if isinstance(value, (str, SecretStr, SecretBytes)) or (
        scalars and isinstance(value, (int, float))
    ):
        yield path, value
    elif isinstance(value, BaseModel) or _is_pydantic_dataclass(value):
        fields = cast(
            Mapping[str, FieldInfo],
            type(value).model_fields
            if isinstance(value, BaseModel)
            else cast(Any, type(value)).__pydantic_fields__,
        )
        for name, info in fields.items():
            item = getattr(value, name, None)
            extra: object = info.json_schema_extra
            if isinstance(extra, dict) and cast(dict[str, Any], extra).get(SECRET_KEY):
                for at, leaf in string_leaves(item, [*path, name], scalars=True):
                    yield (
                        at,
                        leaf
                        if isinstance(leaf, (SecretStr, SecretBytes))
                        else (SecretStr(leaf if isinstance(leaf, str) else json.dumps(leaf))),
                    )
            else:
                yield from string_leaves(item, [*path, name], scalars=scalars)
    elif isinstance(value, Mapping):
        for key, item in cast(Mapping[Any, Any], value).items():
            yield from string_leaves(item, [*path, str(key)], scalars=scalars)
    elif isinstance(value, (list, tuple, set, frozenset)):
        # A set has no order: its position stands for "an item", all a secret's path says.
        for i, item in enumerate(cast(Iterable[Any], value)):
            yield from string_leaves(item, [*path, i], scalars=scalars)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for entry in dataclasses.fields(value):
            yield from string_leaves(
                getattr(value, entry.name, None), [*path, entry.name], scalars=scalars
            )


def _is_pydantic_dataclass(value: Any) -> bool:
    """Whether `value` is an instance of a Pydantic dataclass (its fields carry `FieldInfo`)."""
    fields: object = getattr(type(cast(object, value)), "__pydantic_fields__", None)
    return not isinstance(value, type) and isinstance(fields, dict)


def hidden_values(schema: Mapping[str, Any]) -> Callable[[Sequence[str | int], bool], bool]:
    """The rule by which validation hides argument values of a tool, for anything else that
    shows them (a recording, `toolwire inspect`): one rule, so they hide what validation does.

    Args:
        schema: The tool's self-contained schema (`Toolset.schema(name)`).

    Returns:
        `hidden(path, scalar)`: whether any error would show the value at `path` (keys and
        array indexes from the root of the arguments) as `[redacted]`, either as a whole or
        inside a value around it. `scalar` says the value is a string or number, which is
        hidden too where an object or array holding secrets belongs.
    """
    return _Schema(schema).hides_at


def without_values(text: str, secrets: Sequence[str]) -> str:
    """`text` with every occurrence of each secret value redacted, longest first (a secret
    that holds another must not be left half shown), in the forms an exception's text quotes
    it in as well as verbatim: escaped as `repr` and JSON write it (a `KeyError`, a payload
    echoed in a message) and URL-quoted (a query string in a connection error). A short value
    is replaced only where it stands alone (see `_replaced`)."""
    forms = {form for secret in secrets if secret for form in _quoted_forms(secret)}
    return _without_cut_prefix(_replaced(text, forms, REDACTED), forms)


# The least of a secret's first characters that a cut text's end is taken to show.
_CUT_PREFIX = 3


def _without_cut_prefix(text: str, forms: set[str]) -> str:
    """`text`, cut by `shown_text`, with the start of a secret form that the cut left at its
    end redacted: a validator's message quoting a secret past the 200 characters kept was cut
    mid-secret, and the part shown no longer matched the whole secret (most of an API key)."""
    if not text.endswith(_ELLIPSIS):
        return text
    body = text[: -len(_ELLIPSIS)]
    shown = 0
    for form in forms:
        for n in range(min(len(form) - 1, len(body)), _CUT_PREFIX - 1, -1):
            if n > shown and body.endswith(form[:n]):
                shown = n
                break
    return text if shown == 0 else body[:-shown] + REDACTED + _ELLIPSIS


def with_value_shown_as(text: str, value: str, shown: str) -> str:
    """`text` with each occurrence of `value`, verbatim or in the quoted forms an exception's
    text writes it in (see `without_values`), replaced by `shown`."""
    return _replaced(text, _quoted_forms(value), shown)


# Below this length a secret value (a PIN, `1`) is also a part of other words and numbers.
_SHORT_SECRET = 6


def _replaced(text: str, forms: set[str], replacement: str) -> str:
    """`text` with each form replaced, longest first. A short form is replaced only where no
    letter or digit touches it: inside "at least 10 characters" the secret `1` would mangle
    the sentence, and the gaps it left would show the value anyway."""
    for form in sorted(forms, key=len, reverse=True):
        if len(form) < _SHORT_SECRET:
            alone = re.compile(rf"(?<![^\W_]){re.escape(form)}(?![^\W_])")
            text = alone.sub(lambda _: replacement, text)
        else:
            text = text.replace(form, replacement)
    return text


# A URL's %-escape; its hex digits may be written in either case (RFC 3986, section 2.1).
_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")


def _quoted_forms(secret: str) -> set[str]:
    """`secret` and the escaped or quoted texts that stand for it: as `repr`, `ascii` and JSON
    write it, as the `repr` of its UTF-8 bytes (a tool that quotes the encoded value), and as
    a URL writes it: `quote` with `safe=""` or its default `"/"` (a path segment keeps the
    slashes of a base64 token), `quote_plus` likewise, each with uppercase and lowercase
    %-escapes (both are valid, and some clients and proxies lowercase them)."""
    utf8 = secret.encode("utf-8", "surrogatepass")
    quoted = {urllib.parse.quote_from_bytes(utf8, safe=safe) for safe in ("", "/")} | {
        urllib.parse.quote_plus(utf8, safe=safe) for safe in ("", "/")
    }
    quoted |= {_PERCENT_ESCAPE.sub(lambda m: m.group().lower(), form) for form in quoted}
    forms = {
        secret,
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        repr(utf8)[2:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        *quoted,
    }
    return {form for form in forms if form}


def scrubbed_text(
    text: str,
    arguments: Any,
    declared: Sequence[SecretStr | SecretBytes] = (),
    hook: Redactor | None = None,
    *,
    limit: int | None = None,
) -> str:
    """`text` (a tool's error, or a check's reason, that may quote its call's arguments)
    without what redaction hides: each `SecretStr` / `SecretBytes` among `arguments`, each
    value in `declared` (those the tool's schema marks secret, `Outcome.secrets`), every
    argument value `hook` redacts, then `hook`'s verdict on the whole text. One rule for every
    text written for the model or the logs: the executor's, `tool_messages`' and
    `Outcome.to_message`'s. Never raises: a failing hook withholds the text instead.

    Args:
        text: The text to scrub.
        arguments: The call's arguments (a model, plain data, or None).
        declared: Secret values the schema marks secret.
        hook: The `Toolset(redact=...)` hook, if any.
        limit: Keep at most about this many characters of `text`, cut before it is scrubbed
            so that the work does not grow with the text times the values to hide (a tool's
            error of a megabyte against thousands of arguments). A hidden value the cut splits
            is withheld: the text's end that could begin one is redacted too.

    Returns:
        The scrubbed text, or `"[redaction failed]"` when the hook raised or returned
        something other than a str.
    """
    try:
        # Numbers too: the hook hides an SSN or an account number typed as an int, as the
        # Toolset's does (given the number's JSON text).
        leaves = list(string_leaves(arguments, scalars=hook is not None))
        secrets = [
            shown
            for _, value in leaves
            if isinstance(value, (SecretStr, SecretBytes))
            for shown in secret_texts(value)
        ]
        secrets += [shown for value in declared for shown in secret_texts(value)]
        cut = limit is not None and len(text) > limit
        if cut:
            text = text[: max(limit or 0, 0)]
        hidden = [form for secret in secrets if secret for form in _quoted_forms(secret)]
        text = without_values(text, secrets)
        for path, value in leaves:
            if hook is None or isinstance(value, (bool, SecretStr, SecretBytes)):
                continue
            words = value if isinstance(value, str) else json.dumps(value)
            if words:
                shown = _hook_text(hook(pointer(path), words))
                if shown != words:
                    # Quoted as `repr`, JSON or a URL writes it, too.
                    forms = _quoted_forms(words)
                    text = _replaced(text, forms, shown)
                    hidden += forms
        if cut:
            text = _without_cut_start(text, hidden) + _ELLIPSIS
        return text if hook is None else _hook_text(hook("", text))
    except Exception:
        return "[redaction failed]"


def _without_cut_start(text: str, forms: Sequence[str]) -> str:
    """`text`, cut, with its longest end that begins one of the hidden `forms` redacted: the
    value the cut split, which no longer matched it whole. Any length counts, one character
    up; each of the text's ends is looked up among the sorted forms, so the work grows with
    the (cut) text's length, not with how many values there are or how long."""
    ordered = sorted(set(forms))
    for start in range(len(text)):
        end = text[start:]
        i = bisect.bisect_left(ordered, end)
        if i < len(ordered) and ordered[i].startswith(end):
            return text[:start] + REDACTED
    return text


def _hook_text(shown: object) -> str:
    """What a redaction hook returned, which must be text. A hook that forgets to return the
    text it leaves alone gives None: that fails the redaction (the text is withheld), where
    passing it on made the caller raise (the executor's cut of a tool's error) or send it."""
    if not isinstance(shown, str):
        raise TypeError(f"the redact hook returned {type(shown).__name__}, not str")
    return shown


def secret_text(value: SecretStr | SecretBytes) -> str:
    """The text a secret value holds (bytes read as UTF-8)."""
    secret = value.get_secret_value()
    return secret.decode("utf-8", "replace") if isinstance(secret, bytes) else secret


def secret_texts(value: SecretStr | SecretBytes) -> list[str]:
    """`secret_text`, and for bytes the texts that stand for them where an exception quotes
    them: what `repr` writes between `b'` and `'`, and their hex. Bytes that are not UTF-8 (a
    binary key), read with replacement characters, match nothing a tool wrote."""
    secret = value.get_secret_value()
    if not isinstance(secret, bytes):
        return [secret]
    texts = [secret_text(value), repr(secret)[2:-1], secret.hex()]
    return list(dict.fromkeys(text for text in texts if text))


@dataclass(frozen=True, slots=True)
class _Located:
    pointer: str
    node: dict[str, Any]
    parent: dict[str, Any] | None
    secret: bool
    union_ptr: str | None
    tag: str | None
    inside: _Located | None = None
    """Where a `Json[...]` field's error lies in the JSON text its string holds."""


def _json(value: Any) -> str:
    return shown(value)


def _evaluates(
    node: Mapping[str, Any], key: str, deref: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> bool:
    """Whether an object schema, or one composed into it (`allOf`, `anyOf`, `oneOf`, `$ref`,
    `if`/`then`/`else`, `dependentSchemas`), gives member `key` a schema other than `false`:
    what `unevaluatedProperties` counts as evaluated."""
    pending: list[Mapping[str, Any]] = [node]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        sub = deref(current)
        declared = _d(sub.get("properties")).get(key, False)
        if declared is not False or inner(sub, key):
            return True
        pending.extend(same_value(sub))
    return False


def _enum_text(values: Sequence[Any], lang: Lang) -> str:
    listed = ", ".join(_json(v) for v in values[:50])
    if len(values) > 50:
        listed += ", …"
    return text("expected.enum", lang, values=shown_text(listed))


def _num(value: Any) -> str:
    return dumps_exact(value) if not isinstance(value, str) else value


def _format_text(fmt: object, lang: Lang) -> str | None:
    """The words for a string format, or None for a format that has none."""
    if not isinstance(fmt, str):
        return None
    if fmt in _FORMATS:
        return text(f"format.{fmt}", lang)
    if fmt in _ENCODINGS:
        return text("expected.encoded", lang, encoding=fmt)
    if re.fullmatch(r"uuid[1-8]", fmt):
        # Pydantic's `UUID4` and its kin: "a UUID" for a UUID of another version says nothing.
        return text("format.uuid_version", lang, n=fmt[4:])
    return None


# --------------------------------------------------------------------------------------------
# Error construction

_CODE_BY_TYPE: dict[str, str] = {
    "missing": "missing",
    "missing_argument": "missing",
    "missing_keyword_only_argument": "missing",
    "extra_forbidden": "unknown_field",
    "unexpected_keyword_argument": "unknown_field",
    "literal_error": "enum",
    "enum": "enum",
    "union_tag_invalid": "enum",
    "union_tag_not_found": "missing",
    "greater_than": "range",
    "greater_than_equal": "range",
    "less_than": "range",
    "less_than_equal": "range",
    "finite_number": "range",
    "multiple_of": "multiple_of",
    "decimal_max_places": "decimal",
    "decimal_max_digits": "decimal",
    "decimal_whole_digits": "decimal",
    "string_too_short": "length",
    "string_too_long": "length",
    "too_short": "length",
    "too_long": "length",
    "string_pattern_mismatch": "pattern",
    "timezone_aware": "timezone_required",
    "timezone_naive": "format",
    "url_scheme": "format",
    "url_syntax_violation": "format",
    "uuid_version": "format",
    "bytes_invalid_encoding": "format",
    "url_too_long": "length",
    "bytes_too_short": "length",
    "bytes_too_long": "length",
    # A date that is one, on the wrong side of today (`FutureDate`, `PastDatetime`).
    "date_future": "range",
    "date_past": "range",
    "datetime_future": "range",
    "datetime_past": "range",
    "value_error": "value",
    "assertion_error": "value",
    # Pydantic's own custom errors for its IP types: the schema's format says what is wanted.
    **{
        f"ip_{version}_{kind}": "format"
        for version in ("any", "v4", "v6")
        for kind in ("address", "interface", "network")
    },
    "json_invalid": "invalid",
}
# Length errors about one bound, whatever other bound the schema has, with Pydantic's context
# key for it: bytes count bytes ("é" is two of them), and a URL's `minLength: 1` is no news.
_ONE_BOUND: dict[str, tuple[str, str]] = {
    "bytes_too_short": ("expected.min_bytes", "min_length"),
    "bytes_too_long": ("expected.max_bytes", "max_length"),
    "url_too_long": ("expected.max_length", "max_length"),
}
_FORMAT_PREFIXES = ("date", "datetime", "time", "timedelta", "uuid", "url", "email", "ip")
# The format a Pydantic error type is about, for a string whose schema names none (a field
# given its own JSON schema, say). Timestamps are not here: whether one takes an offset is not
# in the error type.
_FORMAT_BY_TYPE: dict[str, str] = {
    **dict.fromkeys(
        ("date_parsing", "date_type", "date_from_datetime_parsing", "date_from_datetime_inexact"),
        "date",
    ),
    **dict.fromkeys(("time_parsing", "time_type"), "time"),
    **dict.fromkeys(("time_delta_parsing", "time_delta_type"), "duration"),
    **dict.fromkeys(("uuid_parsing", "uuid_type"), "uuid"),
    **dict.fromkeys(("url_parsing", "url_type", "url_syntax_violation"), "uri"),
    # Pydantic's own custom errors for its base64, path and IP types.
    "base64_decode": "base64",
    "path_not_file": "file-path",
    "path_not_directory": "directory-path",
    "ip_v4_address": "ipv4",
    "ip_v6_address": "ipv6",
    "ip_any_address": "ipvanyaddress",
    **{
        f"ip_{version}_{kind}": f"ip{prefix}{kind}"
        for version, prefix in (("v4", "v4"), ("v6", "v6"), ("any", "vany"))
        for kind in ("network", "interface")
    },
}

_RANK: dict[str, int] = {
    "missing": 0,
    "unknown_field": 1,
    "ambiguous": 2,
    "type": 2,
    "enum": 3,
    "format": 4,
    "timezone_required": 4,
    "pattern": 5,
    "range": 5,
    "multiple_of": 5,
    "decimal": 5,
    "length": 5,
    "schema_violation": 5,
    # A value no rule of one kind explains: a `not`, a `then: false`, union branches that each
    # refuse it by another rule.
    "invalid": 5,
    "unique": 5,
    "value": 6,
}
# The keywords a union branch's words name as its rules (`_ErrorBuilder._branch_needs`), next
# to the kind of value its type, format or values say.
_BRANCH_RULES = (
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
)
# Keywords whose error is one draft of `_JSON_KEYWORD_CODES`' code, whatever the value: those
# rules, and what says the kind of value.
_PLAIN_KEYWORDS = frozenset({"type", "enum", "const", "format", *_BRANCH_RULES})
_JSON_KEYWORD_CODES: dict[str, str] = {
    "type": "type",
    "enum": "enum",
    "const": "enum",
    "format": "format",
    "pattern": "pattern",
    "minimum": "range",
    "maximum": "range",
    "exclusiveMinimum": "range",
    "exclusiveMaximum": "range",
    "multipleOf": "multiple_of",
    "minLength": "length",
    "maxLength": "length",
    "minItems": "length",
    "maxItems": "length",
    "required": "missing",
    "additionalProperties": "unknown_field",
    "anyOf": "type",
    "oneOf": "type",
}


# Any other type is a validator's `PydanticCustomError`: like a `ValueError`, its message is the
# author's word on what is wrong.
_BUILT_IN_TYPES = frozenset(str(name) for name in get_args(ErrorType))


def _code_for(pydantic_type: str) -> str:
    if pydantic_type in _CODE_BY_TYPE:
        return _CODE_BY_TYPE[pydantic_type]
    if pydantic_type not in _BUILT_IN_TYPES:
        return "value"
    stem = pydantic_type.split("_", 1)[0]
    if stem in _FORMAT_PREFIXES and pydantic_type.endswith(("_parsing", "_type", "_inexact")):
        return "format"
    if pydantic_type.endswith(("_type", "_parsing", "_from_float", "_required")):
        return "type"
    return "invalid"


@dataclass(slots=True)
class _Draft:
    """A FieldError being built, with what ranking and union merging need."""

    error: FieldError
    union_ptr: str | None = None
    tag: str | None = None
    user_supplied: bool = False
    refusal: bool = False
    union_level: bool = False
    """The pre-check's finding that no branch of a union took the value: superseded by an
    error inside the value, which says what to fix."""


# Up to this many errors from one validation, each is located and rendered at once; past it,
# only as many as the report reaches (`_Pending`, `_Rest`).
_EAGER_ERRORS = 64


class _Rest:
    """A plain tool's errors of one rank whose drafts are built only when the ranking reaches
    them (see `_ranked_entries`): `_finish_errors` builds these in the order they came, where
    their rank puts them, and stops once the report is full."""

    union_ptr: str | None = None
    tag: str | None = None
    user_supplied = False
    refusal = False
    union_level = False

    def __init__(self, rank: int, items: list[Any], build: Callable[[Any], list[_Draft]]) -> None:
        self.rank = rank
        self.items = items
        self._build = build

    def drafts(self) -> Iterator[_Draft]:
        for item in self.items:
            yield from self._build(item)


# The least rank of a draft that weighing a union's branch errors makes (`_merge_unions`: the
# union's `type`, a tag's `enum`; `_unions_refused_apart`: the code of a plain keyword).
_MERGED_RANK = min(
    _RANK[code]
    for code in ("type", "enum", "invalid", *(_JSON_KEYWORD_CODES[k] for k in _PLAIN_KEYWORDS))
)

_Place = tuple[int, int]
"""Where a draft of a `_Pending` stands among its drafts: its unit's, then its own place in it."""


class _Pending:
    """Pydantic's errors of one validation, drafted only as far as the report reaches.

    A call with 100,000 bad items gives 100,000 errors (three to five an item inside a union),
    five of which are reported; locating, redaction-checking and rendering each took a hundred
    times Pydantic's own validation. The errors are cut into units: each error alone, or all
    those of one union's value together (its branches' errors are weighed against each other,
    `_unions_refused_apart` and `_merge_unions`). A unit is drafted when the ranking reaches
    the least rank its drafts can have, and its drafts then take their own places: what
    `ranked` gives is what drafting every error and sorting them all gives.
    """

    union_ptr: str | None = None
    tag: str | None = None
    user_supplied = False
    refusal = False
    union_level = False

    def __init__(self, builder: _ErrorBuilder, details: Sequence[ErrorDetails]) -> None:
        self._builder = builder
        self.details = details
        # Paths of fields sent twice: the drafts there or under them are left out (see
        # `_without_second_keys`).
        self.dropped: Collection[str] = ()
        # Where each unit starts, then the end; None when each error is a unit of its own.
        # Arrays, not lists of ints: a call gives up to hundreds of thousands of errors.
        self._starts = self._units()
        # Each unit by the least `_sort_key` its drafts can have, in their order.
        self._by_bound: dict[tuple[bool, int], array[int]] = {}
        codes: dict[str, str] = {}
        asks_user = builder.schema.asks_user
        for unit in range(self._count()):
            first, end = self._span(unit)
            bound = (True, _MERGED_RANK) if end - first > 1 else (True, 7)
            for detail in details[first:end]:
                ptype = detail["type"]
                code = codes.get(ptype)
                if code is None:
                    code = codes[ptype] = _code_for(ptype)
                # A null may be the user's to give (`asked_of_user`), and so may a missing
                # field or a union's tag.
                user = asks_user and (
                    code == "missing"
                    or detail.get("input") is None
                    or ptype.startswith("union_tag")
                )
                bound = min(bound, (not user, _RANK.get(code, 7)))
            units = self._by_bound.get(bound)
            if units is None:
                units = self._by_bound[bound] = array("q")
            units.append(unit)

    def _count(self) -> int:
        return len(self.details) if self._starts is None else len(self._starts) - 1

    def _span(self, unit: int) -> tuple[int, int]:
        if self._starts is None:
            return unit, unit + 1
        return self._starts[unit], self._starts[unit + 1]

    def _units(self) -> array[int] | None:
        """Where each unit starts, then the end: an error alone, or a run of errors that holds
        every error of each union value it reaches (Pydantic reports them together)."""
        if self._builder.schema.tagless:
            return None
        unions = [self._union_of(detail) for detail in self.details]
        last = {union: i for i, union in enumerate(unions) if union is not None}
        starts = array("q")
        end = -1
        for i, union in enumerate(unions):
            if i > end:
                starts.append(i)
            if union is not None:
                end = max(end, last[union])
        starts.append(len(unions))
        return starts

    def _union_of(self, detail: ErrorDetails) -> str | None:
        """The union whose branch errors `detail`'s draft is weighed with (`_Draft.union_ptr`)."""
        loc = detail["loc"]
        if detail["type"].startswith("union_tag") or (len(loc) >= 2 and loc[-1] == "[key]"):
            return None
        return self._builder.schema.pointers(self._builder.from_start(loc))[1]

    def without(self, dropped: Collection[str]) -> _Pending:
        """These errors less the drafts at or under the paths `dropped`."""
        out = copy.copy(self)
        out.dropped = dropped
        return out

    def _build(self, unit: int) -> list[_Draft]:
        """A unit's drafts, as the report holds them: hinted, asked of the user where theirs
        and weighed per union, as `_reject` and `_finish_errors` treat each draft."""
        builder = self._builder
        first, end = self._span(unit)
        chunk = self.details[first:end]
        drafts = [d for d in builder.drafts_of(chunk) if not _under_second_key(d, self.dropped)]
        drafts = builder.with_range_hints(drafts)
        if builder.schema.asks_user:
            drafts = [builder.asked_of_user(d) for d in drafts]
        merged = _merge_unions(list(drafts), builder.schema, builder.lang, builder.written_at)
        return cast(list[_Draft], merged)

    def ranked(self) -> Iterator[tuple[tuple[bool, int], _Place, _Draft]]:
        """Every draft with its `_sort_key` and place, in the order of the two."""
        # A unit waits under its bound, at its place before any of its drafts.
        heap: list[tuple[tuple[bool, int], _Place, _Draft | None, int]] = [
            (bound, (units[0], -1), None, 0) for bound, units in self._by_bound.items()
        ]
        heapq.heapify(heap)
        while heap:
            key, place, draft, at = heapq.heappop(heap)
            if draft is not None:
                yield key, place, draft
                continue
            units = self._by_bound[key]
            if at + 1 < len(units):
                heapq.heappush(heap, (key, (units[at + 1], -1), None, at + 1))
            unit = place[0]
            for i, built in enumerate(self._build(unit)):
                # No draft ranks before its unit's bound: it is yielded in its own place.
                heapq.heappush(heap, (_sort_key(built), (unit, i), built, 0))

    def _drafted_paths(self) -> Iterator[str]:
        """The path of each draft before union errors are weighed (where `_paths_of` would
        find it)."""
        builder = self._builder
        schema = builder.schema
        for detail in self.details:
            loc = builder.from_start(detail["loc"])
            if detail["type"].startswith("union_tag"):
                # Under the tag's key, as `_from_pydantic` puts it, where one is named.
                located = schema.locate(loc)
                value = builder.as_written(located.pointer, detail.get("input"))
                ctx = cast(Mapping[str, Any], detail.get("ctx") or {})
                key = _tag_key(ctx, value, schema.branches(located.node))
                yield located.pointer + pointer([key]) if key else located.pointer
            elif len(loc) >= 2 and loc[-1] == "[key]":
                yield schema.pointers(loc[:-2])[0]
            else:
                yield schema.pointers(loc)[0]

    def below(self, path: str) -> bool:
        """Whether one of these errors is inside the value at `path`."""
        inside = path + "/"
        return any(p.startswith(inside) for p in self._drafted_paths())

    def holds(self, path: str) -> bool:
        """Whether one of these errors is at `path`."""
        return any(p == path for p in self._drafted_paths())


_Entry = _Draft | _Rest | _Pending
"""A draft, or errors still to be built."""
_E = TypeVar("_E", _Draft, _Entry)


def _paths_of(entries: Iterable[_Entry]) -> set[str]:
    """The paths of the drafts built (a `_Pending`'s are asked with `_held` and `_below`)."""
    return {e.error.path for e in entries if isinstance(e, _Draft)}


def _held(entries: Iterable[_Entry], path: str) -> bool:
    return any(isinstance(e, _Pending) and e.holds(path) for e in entries)


def _below(entries: Iterable[_Entry], path: str) -> bool:
    return any(isinstance(e, _Pending) and e.below(path) for e in entries)


def _sort_key(entry: _Draft | _Rest) -> tuple[bool, int]:
    if isinstance(entry, _Rest):
        return (True, entry.rank)
    return (not entry.user_supplied, _RANK.get(entry.error.code, 7))


# How many of a plain tool's jsonschema errors (past those at a field only the user can give)
# are held while its report is chosen: the report reaches the first few in rank order, and a
# call of 100,000 bad items gives 100,000 errors of about a kilobyte each.
_HELD_ERRORS = 256

_Key = tuple[Any, ...]
"""Where an error's draft ranks in a report: `_sort_key`'s two terms, then 0 for a coercion
refusal (which comes first among its equals) or 1 and the error's path, its place among the
errors `iter_errors` gave and the draft's among its error's."""


class _Unseen(Exception):
    """The report reached past the jsonschema errors held: it is chosen again from them all."""


def _unseen(_: object) -> list[_Draft]:
    raise _Unseen


@dataclass(slots=True)
class _Judged:
    """What a plain tool's validator found: the drafts the report may reach, by `_Key`."""

    count: int = 0
    """How many errors the validator gave."""
    users: list[tuple[_Key, _Draft]] = field(default_factory=lambda: [])
    """Every draft of a field only the user can give: they rank first, and all are named."""
    held: list[tuple[_Key, _Draft | jsonschema.ValidationError]] = field(default_factory=lambda: [])
    """The first other drafts, an error whose one draft is built only if reached in its place."""
    horizon: _Key | None = None
    """The least key of those let go (all rank after `held`'s), or None when none was."""


def _lighten(error: jsonschema.ValidationError) -> None:
    """`error` and the branch errors in its `context`, their paths made tuples."""
    path = tuple(error.relative_path)
    schema_path = tuple(error.relative_schema_path)
    # Through `vars`: jsonschema declares these attributes deques.
    vars(error).update(
        path=path, relative_path=path, schema_path=schema_path, relative_schema_path=schema_path
    )
    error.args = ()
    for sub in error.context:
        _lighten(sub)


def _first(pair: tuple[_Key, object]) -> _Key:
    return pair[0]


def _trimmed(found: _Judged, limit: int) -> None:
    """`found.held` cut to the `limit` drafts that rank first, the least key let go kept."""
    found.held.sort(key=_first)
    if len(found.held) > limit:
        found.horizon = found.held[limit][0]
        del found.held[limit:]


def _ranked_entries(
    found: _Judged,
    refusals: Sequence[_Draft],
    build: Callable[[jsonschema.ValidationError], list[_Draft]],
) -> list[_Entry]:
    """Coercion `refusals` and `found`'s drafts as `_finish_errors` ranks them, the errors
    still to build in `_Rest`s. Past the least key let go, the report would need drafts not
    held: a `_Rest` there raises `_Unseen` if reached (the refusals after it only say which
    paths they refuse)."""
    keyed: list[tuple[_Key, _Draft | jsonschema.ValidationError]] = [
        ((not d.user_supplied, _RANK.get(d.error.code, 7), 0, i), d) for i, d in enumerate(refusals)
    ]
    out: list[_Entry] = []
    late: list[_Entry] = []
    for key, entry in sorted([*keyed, *found.users, *found.held], key=_first):
        if found.horizon is not None and key >= found.horizon:
            late.append(cast(_Draft, entry))
        elif isinstance(entry, _Draft):
            out.append(entry)
        elif out and isinstance(out[-1], _Rest) and out[-1].rank == key[1]:
            out[-1].items.append(entry)
        else:
            out.append(_Rest(key[1], [entry], build))
    if found.horizon is not None:
        out.append(_Rest(found.horizon[1], [None], _unseen))
    return out + late


class _ErrorBuilder:
    def __init__(
        self,
        schema: _Schema,
        lang: Lang,
        redact: Redactor | None,
        written: Callable[[], Any] | None = None,
    ) -> None:
        self.schema = schema
        self.lang: Lang = lang
        self.redact = redact
        # The validator whose errors `judged` describes, for a plain tool.
        self.judge: jsonschema.protocols.Validator | None = None
        # The arguments as the model wrote them (numbers exact), read when first needed.
        self._read = written
        self._written_value: Any = _ABSENT

    def _written(self) -> Any:
        if self._written_value is _ABSENT and self._read is not None:
            self._written_value = self._read()
        return self._written_value

    def written_at(self, pointer_: str) -> Any:
        """What the arguments as written hold at `pointer_`, or `_ABSENT`."""
        return self._written_at(pointer_)

    def _written_at(self, pointer_: str) -> Any:
        """What the arguments as written hold at `pointer_`, or `_ABSENT`."""
        if self._read is None:
            return _ABSENT
        try:
            return _at(self._written(), pointer_)
        except ValueError:
            return _ABSENT

    def asked_of_user(self, draft: _Draft) -> _Draft:
        """`draft` made the user's to answer when it is about a `null` the model sent for a
        field marked `x-user-supplied`: a model that writes null there has no value to give,
        and only the user can supply one, as when it leaves the field out (asking the model
        again would have it make one up)."""
        error = draft.error
        if (
            draft.user_supplied
            or error.code == "missing"
            or self._written_at(error.path) is not None
        ):
            return draft
        if not self.schema.locate(_split(error.path)).node.get(USER_SUPPLIED_KEY):
            return draft
        hint = text("hint.user_supplied", self.lang)
        return dataclasses.replace(
            draft, error=dataclasses.replace(error, hint=hint), user_supplied=True
        )

    def from_start(self, loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
        """`loc` with each index Pydantic counted from the end of its array (an `AliasPath`
        step such as -1) counted from the start, as a JSON Pointer counts, where the
        arguments as written hold that array."""
        if not any(isinstance(seg, int) and seg < 0 for seg in loc):
            return loc
        value = self._written()
        out: list[str | int] = []
        for seg in loc:
            if isinstance(seg, int) and isinstance(value, list):
                items = cast(list[Any], value)
                if -len(items) <= seg < 0:
                    seg += len(items)
                value = items[seg] if 0 <= seg < len(items) else _ABSENT
            elif isinstance(seg, str) and isinstance(value, dict):
                value = cast(dict[str, Any], value).get(seg, _ABSENT)
            else:
                value = _ABSENT
            out.append(seg)
        return tuple(out)

    def as_written(self, pointer_: str, value: Any) -> Any:
        """`value` as the model wrote it: Pydantic reports what it read, which may be a
        coercion's result (`11` for `"11"`, `[1]` for a set's `[1, 1]`), a float of the number
        (`30.0` for `30.0000000000000001`, infinity for `1e309`). A container is shown as
        written where the arguments hold one of its kind there, below the top level (which
        `unwrap` may have taken out of a wrapper); a value under a path only a coercion made is
        shown as read."""
        found = self._written_at(pointer_)
        if isinstance(value, (dict, list)):
            if pointer_ and type(found) is type(cast(Any, value)):
                return found
            return cast(Any, value)
        return value if found is _ABSENT or isinstance(found, (dict, list)) else found

    def _number_as_written(self, pointer_: str, value: Any, *, read: bool = True) -> Any:
        """A number as the model wrote the number at `pointer_`: a float is a parser's reading
        of it (`Infinity` for `1e309`, `1500.0` for `1.5e3`), and a `Decimal` may be one read
        back from text written for validation (`1E-400`), not the model's text.

        With `read` (a value validation read, not a coercion's record of a step), an int may
        be the whole number a fraction wrote (`1` for `1.00` in an integer field, read as one
        for `jsonschema`), and any number a coercion's reading of a string (`4` for `"4"`):
        the text is shown, as a model tool's error shows it. A coercion's `from_` shows the
        value the step before it left (`[1,1,2]` once `1.0` became `1`), and keeps it."""
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            return value
        found = self._written_at(pointer_)
        if read and isinstance(found, str):
            return found
        if isinstance(value, int):
            whole = read and isinstance(found, Decimal) and found == value
            return found if whole else value
        if isinstance(found, (int, Decimal)) and not isinstance(found, bool):
            return found
        return value

    def got(self, where: _Located | str, value: Any) -> str:
        located = where if isinstance(where, _Located) else self.schema.locate(_split(where))
        if located.secret:
            return REDACTED
        value = self._number_as_written(located.pointer, value)
        # Decimal digits are validated as a numeric string (see `quote_decimals`); show them
        # as the number the model wrote. Any other string there was written as one.
        if (
            isinstance(value, str)
            and is_decimal_union(located.node)
            and JSON_NUMBER.fullmatch(value)
        ):
            words = value
        elif isinstance(value, (dict, list)) or self.schema.holds_secret(located.node):
            return self.scrubbed(located, value, read=True)
        else:
            words = shown(value)
        return self.redact(located.pointer, words) if self.redact is not None else words

    def got_text(self, located: _Located, words: str, *, renumbered: bool = False) -> str:
        """A value shown as text already (the core's `got`, a coercion's `from_` / `to`), with
        the same redaction as `got` gives a parsed value. `renumbered`: its items are not at the
        places the arguments had them (`set_duplicates` dropped some), so no number in it is
        looked up there; each is shown as it stands, which is as the model wrote it."""
        if located.secret:
            return REDACTED
        if words[:1] in ("{", "["):
            try:
                return self.scrubbed(located, loads_exact(words), renumbered=renumbered)
            except ValueError:
                pass  # cut to 200 characters, or not JSON: judged as a whole below
        if self.schema.holds_secret(located.node):
            # A value where secrets belong that cannot be taken apart: it may be one.
            return REDACTED
        return self.redact(located.pointer, words) if self.redact is not None else words

    def scrubbed(
        self, located: _Located, value: Any, *, read: bool = False, renumbered: bool = False
    ) -> str:
        """A value that may hold secrets inside, shown with every secret part redacted and
        every other scalar passed through the hook at its own pointer (then the whole); with
        `read`, a value validation read, each number as `_number_as_written` shows it."""
        parts: list[str | int] = list(_split(located.pointer))
        out = _Shown()
        self._scrub(value, located.node, parts, out, read, renumbered)
        words = shown_text("".join(out))
        return self.redact(located.pointer, words) if self.redact is not None else words

    def _scrub(
        self,
        value: Any,
        node: Mapping[str, Any] | None,
        parts: list[str | int],
        out: _Shown,
        read: bool,
        renumbered: bool = False,
    ) -> None:
        if out.full:
            # Past what `shown_text` keeps: a 100,000-item array is not walked to its end.
            return
        # `_Schema.hides` and `beneath` decide what is hidden, as they do for a recording
        # (`_Schema.hides_at`): the two must not drift apart.
        if self.schema.hides(node, not isinstance(value, (dict, list))):
            out.append(json.dumps(REDACTED))
            return
        if isinstance(value, dict):
            out.append("{")
            for i, (key, item) in enumerate(cast(dict[str, Any], value).items()):
                if out.full:
                    break
                out.append("," if i else "")
                out.append(json.dumps(key, ensure_ascii=False) + ":")
                child, hidden = self.schema.beneath(node, key)
                if hidden:
                    out.append(json.dumps(REDACTED))
                else:
                    self._scrub(item, child, [*parts, key], out, read, renumbered)
            out.append("}")
        elif isinstance(value, list):
            out.append("[")
            for i, item in enumerate(cast(list[Any], value)):
                if out.full:
                    break
                out.append("," if i else "")
                child, hidden = self.schema.beneath(node, i)
                if hidden:
                    out.append(json.dumps(REDACTED))
                else:
                    self._scrub(item, child, [*parts, i], out, read, renumbered)
            out.append("]")
        else:
            where = pointer(parts)
            words = shown(value if renumbered else self._number_as_written(where, value, read=read))
            out.append(self.redact(where, words) if self.redact is not None else words)

    def with_range_hints(self, drafts: list[_E]) -> list[_E]:
        """`drafts`, each that shows a number past any float telling the model so, whatever
        the field's type: an integer, enum or string field refuses `1e309` for its type, and
        the model, which meant a number, should hear why no number that large will do (a
        `_Rest` or a `_Pending` gives its drafts this hint as it builds them)."""
        out: list[_E] = []
        for draft in drafts:
            if not isinstance(draft, _Draft):
                out.append(draft)
                continue
            error = draft.error
            hint: str | None = None
            if (
                error.hint is None
                and error.got is not None
                and error.code != "unknown_field"
                # Cheap first: most errors show no number, and need no look at the arguments.
                and JSON_NUMBER.fullmatch(error.got)
            ):
                found = self._written_at(error.path)
                # Only where the payload shows that very number (not redacted or rewritten).
                if past_float(found) and error.got == shown(found):
                    hint = text("hint.out_of_range", self.lang)
                    hinted = dataclasses.replace(error, hint=hint)
                    out.append(cast(_E, dataclasses.replace(draft, error=hinted)))
                    continue
                read = self._rounded_past_bound(error, found)
                if read is not None:
                    hint = text("hint.float_digits", self.lang, read=read)
                elif self._fraction_for_integer(error, found):
                    # As `"2.5"` is told by coercion (`fractional_integer`): do not round.
                    hint = text("hint.fractional_integer", self.lang)
                if hint is not None:
                    hinted = dataclasses.replace(error, hint=hint)
                    out.append(cast(_E, dataclasses.replace(draft, error=hinted)))
                    continue
            out.append(draft)
        return out

    def _fraction_for_integer(self, error: FieldError, found: Any) -> bool:
        """Whether a type error shows a number with a fraction (`2.5`, `2.5e0`), as written,
        where only an integer goes (beside null at most)."""
        if error.code != "type" or not isinstance(found, Decimal) or error.got != shown(found):
            return False
        if not found.is_finite() or found == found.to_integral_value():
            return False
        node = self.schema.locate(_split(error.path)).node
        kinds: set[str] = set()
        for rule in [node, *self.schema.branches(node)]:
            kind = rule.get("type")
            kinds.update([kind] if isinstance(kind, str) else map(str, _l(kind)))
        return "integer" in kinds and kinds <= {"integer", "null"}

    def _rounded_past_bound(self, error: FieldError, found: Any) -> str | None:
        """The float a `range` error's number is read as, when the number as written is
        within the bounds there and only that reading breaks one, else None.

        `0.99999999999999999999` is below 1 as written, and `1.0` as a float reads it: "< 1,
        got 0.99999999999999999999" tells the model that its own number is wrong, and it
        sends it again."""
        if error.code != "range" or not isinstance(found, Decimal) or error.got != shown(found):
            return None
        read = float(found)
        if not math.isfinite(read) or Decimal(read) == found:
            return None
        node = self.schema.locate(_split(error.path)).node
        for rule in [node, *self.schema.branches(node)]:
            bounds = [rule.get(key) for key in _BOUND_KEYS]
            if not any(isinstance(b, (int, float)) for b in bounds):
                continue
            if _within(found, rule) and not _within(Decimal(read), rule):
                return repr(read)
        return None

    def range_text(self, node: Mapping[str, Any], ctx: Mapping[str, Any]) -> str:
        bounds: list[str] = []
        for key, sign, ctx_key in (
            ("minimum", ">=", "ge"),
            ("exclusiveMinimum", ">", "gt"),
            ("maximum", "<=", "le"),
            ("exclusiveMaximum", "<", "lt"),
        ):
            value = self.schema.keyword(node, key)
            if value is None:
                value = ctx.get(ctx_key)
            if isinstance(value, bool):
                continue  # draft 4's `exclusiveMinimum: true`: it sharpens `minimum`
            if value is not None:
                if key in ("minimum", "maximum"):
                    strict = self.schema.keyword(node, f"exclusive{key[0].upper()}{key[1:]}")
                    sign = sign[0] if strict is True else sign
                bounds.append(f"{sign} {_num(value)}")
        if not bounds:
            return text("expected.finite", self.lang)
        return text("join.and", self.lang).join(bounds)

    def length_text(self, node: Mapping[str, Any], ctx: Mapping[str, Any], items: bool) -> str:
        lo_key, hi_key = ("minItems", "maxItems") if items else ("minLength", "maxLength")
        lo = self.schema.keyword(node, lo_key)
        hi = self.schema.keyword(node, hi_key)
        lo = lo if lo is not None else ctx.get("min_length")
        hi = hi if hi is not None else ctx.get("max_length")
        words: list[str] = []
        if lo is not None:
            words.append(
                text("expected.min_items" if items else "expected.min_length", self.lang, n=lo)
            )
        if hi is not None:
            words.append(
                text("expected.max_items" if items else "expected.max_length", self.lang, n=hi)
            )
        return text("join.and", self.lang).join(words) or self.schema.describe(node, self.lang)

    def expected(
        self, code: str, node: Mapping[str, Any], ctx: Mapping[str, Any], ptype: str
    ) -> str:
        lang = self.lang
        if code == "missing":
            return text("expected.required", lang, what=self.schema.describe(node, lang))
        if ptype in ("date_future", "date_past", "datetime_future", "datetime_past"):
            return text(f"expected.{ptype}", lang)
        if code == "range":
            return self.range_text(node, ctx)
        if code == "multiple_of":
            step = self.schema.keyword(node, "multipleOf")
            return text(
                "expected.multiple_of",
                lang,
                n=_num(step if step is not None else ctx.get("multiple_of")),
            )
        if code == "decimal":
            key = {
                "decimal_max_places": ("expected.decimal_places", "decimal_places"),
                "decimal_whole_digits": ("expected.whole_digits", "whole_digits"),
            }.get(ptype, ("expected.max_digits", "max_digits"))
            return text(key[0], lang, n=ctx.get(key[1], "?"))
        if ptype in _ONE_BOUND:
            key, bound = _ONE_BOUND[ptype]
            return text(key, lang, n=ctx.get(bound, "?"))
        if ptype == "bytes_invalid_encoding":
            return text("expected.encoded", lang, encoding=ctx.get("encoding", "base64"))
        if code == "length":
            # pydantic's generic too_short/too_long also cover strings (SecretStr): a string
            # field counts characters, whatever the error type says.
            items = ptype in ("too_short", "too_long") and node.get("type") != "string"
            return self.length_text(node, ctx, items=items)
        if code == "pattern":
            description = node.get("description")
            if isinstance(description, str) and description:
                return shown_text(description)
            pattern = self.schema.keyword(node, "pattern") or ctx.get("pattern", "")
            return text("expected.pattern", lang, pattern=shown_text(str(pattern)))
        if code == "timezone_required":
            return text("format.date-time", lang)
        if ptype == "timezone_naive":
            return text("format.naive-date-time", lang)
        if ptype == "url_scheme" and ctx.get("expected_schemes"):
            # `ftp://x.com` is an absolute URL already: what is wrong is its scheme.
            named = re.findall(r"'[^']*'", str(ctx["expected_schemes"]))
            schemes = text("join.or", lang).join(named) if named else str(ctx["expected_schemes"])
            return text("expected.url_scheme", lang, schemes=shown_text(schemes))
        return self.schema.describe(node, lang, _FORMAT_BY_TYPE.get(ptype))

    def unknown_field(self, located: _Located, value: Any) -> _Draft:
        parent = located.parent or {}
        # A property whose schema is `false` is named only to be forbidden.
        names = [name for name, sub in _d(parent.get("properties")).items() if sub is not False]
        key = located.pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        expected = (
            text("expected.no_field", self.lang, names=shown_text(", ".join(names)))
            if names
            else text("expected.no_fields", self.lang)
        )
        close = meant_field(key, names)
        hint = text("hint.did_you_mean", self.lang, name=close) if close else None
        meant = self.schema.deref(_d(_d(parent.get("properties")).get(close))) if close else {}
        if meant and self.schema.holds_secret(meant):
            # A misspelt secret field (`pasword`, or `AUTH` around an `api_key`) holds the
            # secret all the same: shown as the value of the field it was meant for.
            secret = self.schema.is_secret_here(meant)
            located = dataclasses.replace(located, node=meant, secret=secret)
        elif isinstance(value, dict | list) and parent and self.schema.holds_secret(parent):
            # An object under a key the schema does not place, next to secrets, may wrap the
            # object's own fields (`{"params": {"api_key": ...}}`): read as they would be.
            located = dataclasses.replace(located, node=parent)
        got = self.got(located, value)
        return _Draft(FieldError(located.pointer, "unknown_field", expected, got, hint))

    def from_pydantic(self, details: Sequence[ErrorDetails]) -> list[_Entry]:
        """The entries for Pydantic's errors: their drafts, or past `_EAGER_ERRORS` of them,
        errors drafted as the report reaches them (`_Pending`)."""
        if len(details) <= _EAGER_ERRORS:
            return list(self._from_pydantic(details))
        return [_Pending(self, details)]

    def drafts_of(self, details: Sequence[ErrorDetails]) -> list[_Draft]:
        """The drafts for Pydantic's errors `details`, each union's branch errors that refuse
        its value apart made one (see `_unions_refused_apart`)."""
        return self._from_pydantic(details)

    def _from_pydantic(self, details: Sequence[ErrorDetails]) -> list[_Draft]:
        drafts: list[_Draft] = []
        # The value Pydantic read for each union branch's error (a coercion's result, say).
        read: dict[int, Any] = {}
        for detail in details:
            ptype = detail["type"]
            loc = self.from_start(detail["loc"])
            ctx = cast(Mapping[str, Any], detail.get("ctx") or {})
            code = _code_for(ptype)
            value = detail.get("input")
            if len(loc) >= 2 and loc[-1] == "[key]":
                # A dict key of the wrong kind (`dict[int, str]` given "x"): the error is the
                # object's, and the key is the value shown.
                located = self.schema.locate(loc[:-2])
                rule = _d(located.node.get("propertyNames")) or {"type": _key_type(ptype)}
                words = self.expected(code, rule, ctx, ptype)
                expected = text("expected.key", self.lang, what=words)
                got = self.got(located, value)
                drafts.append(_Draft(FieldError(located.pointer, code, expected, got)))
                continue
            located = self.schema.locate(loc)
            value = self.as_written(located.pointer, value)
            if code == "unknown_field":
                draft = self.unknown_field(located, value)
                # A key one branch of a union forbids is that branch's finding, weighed with
                # the other branches' (see `_merge_unions`).
                draft.union_ptr, draft.tag = located.union_ptr, located.tag
                drafts.append(draft)
                continue
            branches = self.schema.branches(located.node) if ptype.startswith("union_tag") else []
            if ptype == "union_tag_not_found" and _tag_key(ctx, value, branches):
                # The object is there, its tag is not: name the tag and the values it takes.
                key = _tag_key(ctx, value, branches)
                values = _tag_values(self.schema, branches, key)
                expected = self.expected(code, {"enum": values} if values else {}, ctx, ptype)
                path = located.pointer + pointer([key])
                drafts.append(_Draft(FieldError(path, code, expected)))
                continue
            if ptype == "union_tag_not_found":
                # A callable discriminator found no tag in a value no branch holds one for:
                # the value is like none of the branches ("missing" would say it is absent),
                # each named by the fields it requires.
                words = [self._alternative_words(b) for b in branches]
                expected = text("join.or", self.lang).join(dict.fromkeys(words))
                got = self.got(located, value)
                drafts.append(_Draft(FieldError(located.pointer, "type", expected, got)))
                continue
            if ptype == "union_tag_invalid":
                key = _tag_key(ctx, value, branches)
                path = located.pointer + pointer([key]) if key else located.pointer
                # Pydantic's `expected_tags` is the tags' Python reprs (`<Channel.email:
                # 'email'>` for an enum member): the schema holds the values the model sends.
                values = _tag_values(self.schema, branches, key) if key else []
                if values:
                    expected = _enum_text(values, self.lang)
                else:
                    tags = str(ctx.get("expected_tags", "")).replace("'", '"')
                    expected = text("expected.enum", self.lang, values=tags)
                # Pydantic's `tag` is text (`'3'` for the number 3): shown so, the model would
                # hear of a quoting mistake it never made. The tag is judged by the tag's own
                # rules, not the union's: a secret in another member of a branch is no reason
                # to hide it.
                rules = [_member_rule(self.schema, b, key) for b in branches] if key else []
                node: dict[str, Any] = {"anyOf": rules}
                at = (
                    dataclasses.replace(
                        located,
                        pointer=path,
                        node=node,
                        secret=located.secret or self.schema.holds_secret(node),
                    )
                    if rules
                    else located
                )
                got = self.got(at, self.as_written(path, ctx.get("tag")))
                drafts.append(_Draft(FieldError(path, "enum", expected, got)))
                continue
            user = code == "missing" and bool(located.node.get(USER_SUPPLIED_KEY))
            hint: str | None = None
            if code == "value":
                # A `ValueError`'s own text, else the message a custom error renders
                # (Pydantic's `msg` for a `ValueError` is prefixed "Value error, ").
                own = "error" in ctx and ptype in _BUILT_IN_TYPES
                hint = str(ctx["error"] if own else detail["msg"])
                if isinstance(value, str) and value and self.got(located, value) != shown(value):
                    # A validator's message that quotes a value redaction hides.
                    hint = hint.replace(value, REDACTED)
                if self.redact is not None:
                    # The application's own words, which may quote what the hook hides (a
                    # host name in a refusal): the hook's verdict on the whole text, as on a
                    # tool's error or a check's reason (`scrubbed_text`).
                    hint = self.redact("", hint)
                hint = shown_text(hint) or None
            elif code == "timezone_required":
                hint = text("hint.timezone_required", self.lang)
            elif user:
                hint = text("hint.user_supplied", self.lang)
            if located.inside is not None:
                # The string is what the model sent: shown whole, and the place inside its JSON
                # said in the hint. "Missing" would read as the field itself being absent.
                within = self.expected(code, located.inside.node, ctx, ptype)
                words = f"{located.inside.pointer}: {within}" if located.inside.pointer else within
                hint = text("hint.json_text_at", self.lang, place=shown_text(words))
                code = "type" if code == "missing" else code
                written = self._written_at(located.pointer)
                value = value if written is _ABSENT else written
            error = FieldError(
                located.pointer,
                code,
                self.expected(code, located.node, ctx, ptype),
                None if code == "missing" else self.got(located, value),
                hint,
            )
            draft = _Draft(error, located.union_ptr, located.tag, user)
            drafts.append(draft)
            if located.tag is not None:
                read[id(draft)] = detail.get("input")
        return self._unions_refused_apart(drafts, read)

    def _unions_refused_apart(self, drafts: list[_Draft], read: Mapping[int, Any]) -> list[_Draft]:
        """`drafts` with the branch errors of each union whose branches all refused its value
        itself (no member or item of it) made one error that says what each branch needs.

        Pydantic reports each branch's refusal on its own (`('x', 'constrained-str')` for a
        pattern, again for a length): as separate errors at one field they read as if the
        value had to meet every rule, and merged by kind as a range `>= 5 and <= 1` that no
        number meets. The union's schema is read as a plain tool's union is
        (`_refused_apart`), so both say the same; where it takes the value (a rule only
        Pydantic holds) or refuses it by type alone, the errors stay as they are. `read` is
        the value Pydantic read for each branch error's draft."""
        groups: dict[str, list[_Draft]] = {}
        for draft in drafts:
            if draft.union_ptr is not None and draft.tag is not None:
                groups.setdefault(draft.union_ptr, []).append(draft)
        merged: dict[int, _Draft | None] = {}
        for union_ptr, members in groups.items():
            if len(members) < 2 or any(d.error.path != union_ptr for d in members):
                continue
            apart = self._refused_apart_at(union_ptr, read.get(id(members[0]), _ABSENT))
            if apart is not None:
                # Shown as the model wrote it, as each branch's error showed it.
                apart.error = dataclasses.replace(apart.error, got=members[0].error.got)
                merged.update((id(d), None) for d in members)
                merged[id(members[0])] = apart
        if not merged:
            return drafts
        out: list[_Draft] = []
        for draft in drafts:
            kept = merged.get(id(draft), draft)
            if kept is not None:
                out.append(kept)
        return out

    def _refused_apart_at(self, union_ptr: str, value: Any) -> _Draft | None:
        """`_refused_apart` for `value`, which Pydantic read at `union_ptr`, judged by the
        union's schema there; None where the schema takes it or has no union there."""
        if value is _ABSENT:
            return None
        path = _split(union_ptr)
        node = self.schema.locate(path).node
        if not ("anyOf" in node or "oneOf" in node):
            return None
        try:
            judged, _ = _loads_judged(dumps_exact(value))
        except (TypeError, ValueError):
            return None  # a value a validator made, which JSON cannot write
        judge = _union_judge()({**node, "$defs": self.schema.defs})
        errors = list(judge.iter_errors(judged))
        if len(errors) != 1 or errors[0].validator not in ("anyOf", "oneOf") or errors[0].path:
            return None
        return self._refused_apart(errors[0], path)

    def from_problem(self, problem: CoercionProblem) -> _Draft:
        located = self.schema.locate(_split(problem.path))
        code = problem.code
        if code in (
            "fractional_integer",
            "inexact_milliseconds",
            "number_text",
            "out_of_range",
            "bool_number",
            "whole_float",
        ):
            code = "type"
        elif code == "unix_timestamp":
            code = "format"
        elif code == "too_many_digits":
            code = "range"
        got = self.got_text(located, problem.got)
        if code == "key_text":
            # About a key of the object, as Pydantic's own key errors are (`from_pydantic`).
            kind = "number" if problem.detail == "decimal" else problem.detail
            words = text(f"key.{kind}", self.lang)
            expected = text("expected.key", self.lang, what=words)
            hint = text(f"hint.key_{kind}", self.lang)
            return _Draft(FieldError(located.pointer, "type", expected, got, hint), refusal=True)
        if code == "repeated_item":
            expected = text("expected.unique", self.lang, index=problem.detail)
            return _Draft(FieldError(located.pointer, "unique", expected, got), refusal=True)
        if code in ("duplicate_key", "duplicate_field"):
            expected = text("expected.distinct_keys", self.lang)
            hint = text(f"hint.{code}", self.lang, detail=problem.detail)
            return _Draft(FieldError(located.pointer, "unique", expected, got, hint), refusal=True)
        hint = text(f"hint.{problem.code}", self.lang, detail=problem.detail)
        if problem.code == "number_text":
            expected = text("type.number", self.lang)
        elif problem.code == "too_many_digits":
            # "An integer" is false of what the model sent, which is one: its length is wrong.
            expected = text("expected.integer_digits", self.lang, limit=problem.detail)
        elif problem.code == "out_of_range":
            # "A number" alone is false of what the model sent, which is one: too large or too
            # small for the float that would read it. The range says what will do.
            integer = located.node.get("type") == "integer"
            what = text("type.integer" if integer else "type.number", self.lang)
            expected = text("expected.within_float", self.lang, what=what)
        else:
            expected = self.expected(code, located.node, {}, "")
        return _Draft(FieldError(located.pointer, code, expected, got, hint), refusal=True)

    def from_call_error(self, error: CallErrorLike, arguments: Any = _ABSENT) -> _Draft:
        # The core cuts a long key in its path (`capped_path`): the key it was cut from is the
        # one to look up, and to dedupe with other findings on; the outcome cuts it again.
        path = error.path
        if _CUT_KEY in path:
            path = _uncut_path(path, self._written_at("") if arguments is _ABSENT else arguments)
        located = self.schema.locate(_split(path))
        keyword = error.keyword or ""
        code = _JSON_KEYWORD_CODES.get(keyword, "schema_violation")
        if code == "unknown_field":
            if not located.parent:
                return _Draft(FieldError(path, code, error.expected, None))
            value = _at(arguments, path) if arguments is not _ABSENT else _ABSENT
            draft = self.unknown_field(located, None if value is _ABSENT else value)
            if value is _ABSENT:
                # The core names the key, not its value: without the parsed arguments there is
                # no value to show.
                return _Draft(dataclasses.replace(draft.error, got=None))
            return draft
        value = _at(arguments, path) if arguments is not _ABSENT else _ABSENT
        if keyword in ("anyOf", "oneOf") and arguments is not _ABSENT:
            parts = _split(path)
            holder = _at(arguments, pointer(parts[:-1])) if parts else _ABSENT
            if (
                parts
                and error.got == parts[-1]
                and isinstance(holder, dict)
                and error.got in holder
            ):
                # The core names the key no branch left takes, at the key: the union is the
                # object's, and so is the finding.
                located, value = self.schema.locate(parts[:-1]), cast(dict[str, Any], holder)
        if keyword in ("anyOf", "oneOf") and isinstance(value, dict):
            closest = self._closest_branch(located, cast(dict[str, Any], value))
            if closest is not None:
                return closest
        # The value itself, where it is at hand, is shown as every other path shows it: the
        # core names only the type it read for these ("string", "object"), and writes a
        # string without its quotes for the rest (`green` for "green").
        sent: Any = cast(Any, value) if value is not _ABSENT else self._written_at(path)
        if keyword in ("anyOf", "oneOf") and isinstance(value, (dict, list)):
            got = self.got(located, value)
        elif code == "missing" or error.got is None:
            got = None
        elif sent is not _ABSENT:
            got = self.got(located, sent)
        else:
            got = self.got_text(located, error.got)
        # Our own words (translated, derived from the same schema) beat the core's English.
        node = located.node
        # An item count, not a string length (`expected` tells them apart by the type given).
        ptype = "too_short" if keyword in ("minItems", "maxItems") else ""
        expected = self.expected(code, node, {}, ptype) if node else error.expected
        user = code == "missing" and bool(node.get(USER_SUPPLIED_KEY))
        hint = text("hint.user_supplied", self.lang) if user else None
        return _Draft(FieldError(located.pointer, code, expected, got, hint), user_supplied=user)

    def _closest_branch(self, located: _Located, value: dict[str, Any]) -> _Draft | None:
        """For an object no union branch accepts: the first thing the branch it is closest to
        finds wrong with it, or None when no branch finds anything it can name; tagged with
        that branch (`_branch_tag`), to be weighed with what other readings find in it.

        A branch is closer when fewer of the object's fields break its constants (a tag such as
        `"kind": "cat"` says which branch the model meant), then when fewer fields are unknown
        to it, missing or of the wrong type. Between branches equally close, the one that
        declares the most of its keys, the first of those (`_undeclared_keys`). What it finds:
        an unknown field, else a missing one, else a field of the wrong type.

        A tag is a field that at least two branches hold to constants: one only a single
        branch restricts (a comparison's `op` beside `and` / `or` branches) tells no branches
        apart, and a value it does not allow is that branch's own fault, not a sign that the
        model meant another branch."""
        scored: list[tuple[tuple[int, int], int, dict[str, Any], list[str], list[str], list[str]]]
        scored = []
        objects = [b for b in self.schema.branches(located.node) if _is_object_schema(b)]
        constant_in = Counter(
            key
            for branch in objects
            for key in value
            if enum_members(self._member_schema(branch, key) or {}) is not None
        )
        for order, branch in enumerate(objects):
            props = _d(branch.get("properties"))
            patterns = _d(branch.get("patternProperties"))
            unknown = (
                [k for k in value if k not in props and not _pattern_names(patterns, k)]
                if branch.get("additionalProperties") is False
                else []
            )
            missing = [k for k in _l(branch.get("required")) if k not in value]
            tags = 0
            mistyped: list[str] = []
            for key, item in value.items():
                rule = self._member_schema(branch, key)
                if rule is None:
                    continue
                if "const" in rule or isinstance(rule.get("enum"), list):
                    tags += constant_in[key] > 1 and not _constant_fits(item, rule)
                elif not has_json_type(item, rule):
                    mistyped.append(key)
            score = (tags, len(unknown) + len(missing) + len(mistyped))
            scored.append((score, order, branch, unknown, missing, mistyped))
        if not scored:
            return None
        (tags, _), _, branch, unknown, missing, mistyped = min(
            scored, key=lambda s: (s[0], _undeclared_keys(s[2], cast(object, value)), s[1])
        )
        base = _split(located.pointer)
        if tags:
            # Every branch breaks a constant: the tag, if they share one, is what to fix.
            return self._tag_of_no_branch(located, value, [b for _, _, b, _, _, _ in scored])
        found: _Draft | None = None
        if unknown:
            key = unknown[0]
            at = dataclasses.replace(
                self.schema.locate([*base, key]), pointer=pointer([*base, key]), parent=branch
            )
            found = self.unknown_field(at, value[key])
        elif missing:
            key = missing[0]
            rule = self._member_schema(branch, key) or {}
            user = bool(rule.get(USER_SUPPLIED_KEY))
            hint = text("hint.user_supplied", self.lang) if user else None
            expected = self.expected("missing", rule, {}, "")
            error = FieldError(pointer([*base, key]), "missing", expected, None, hint)
            found = _Draft(error, user_supplied=user)
        elif mistyped:
            key = mistyped[0]
            rule = self._member_schema(branch, key) or {}
            at = dataclasses.replace(located, pointer=pointer([*base, key]), node=rule)
            expected = self.schema.describe(rule, self.lang)
            found = _Draft(FieldError(at.pointer, "type", expected, self.got(at, value[key])))
        if found is not None:
            found.union_ptr, found.tag = _branch_tag(self.schema, located.pointer, branch)
        return found

    def _member_schema(self, branch: Mapping[str, Any], key: str) -> dict[str, Any] | None:
        """The schema an object branch gives its member `key`: the property's, else that of
        the first pattern that takes the key; None when the branch names no such member."""
        props = _d(branch.get("properties"))
        if key in props:
            return self.schema.deref(_d(props[key]))
        for pattern, rule in _d(branch.get("patternProperties")).items():
            if _pattern_names({pattern: rule}, key):
                return self.schema.deref(_d(rule))
        return None

    def _tag_of_no_branch(
        self, located: _Located, value: dict[str, Any], branches: list[dict[str, Any]]
    ) -> _Draft | None:
        """The error of a member every object branch holds to constants the value breaks in
        each (a tag), listing the values of them all; None when there is no such member."""
        for key, item in value.items():
            rules = [_member_rule(self.schema, branch, key) for branch in branches]
            if all(enum_members(rule) and not _constant_fits(item, rule) for rule in rules):
                at = dataclasses.replace(located, pointer=pointer([*_split(located.pointer), key]))
                values = _tag_values(self.schema, branches, key)
                got = self.got(at, item)
                return _Draft(FieldError(at.pointer, "enum", _enum_text(values, self.lang), got))
        return None

    def judged(
        self,
        errors: Iterable[jsonschema.ValidationError],
        value: Any,
        judge: jsonschema.protocols.Validator,
        refused: Collection[str],
        held: int | None,
    ) -> _Judged:
        """The drafts for `errors`, which `judge` finds in `value`, that a report can reach.

        The report is the first `MAX_ERRORS` distinct drafts ranked by `_Key` (and every one at a
        field only the user can give): of the others, only the `held` that rank first are kept
        as `errors` streams by (all when `held` is None), so that a call with 100,000 bad items
        holds a few hundred errors, not 100,000. An error of a `_PLAIN_KEYWORDS` rule gives one
        draft of its keyword's code: it is kept undrafted, to be built only if the report
        reaches it (locating and rendering one costs more than `iter_errors` finding it).
        Drafts at a path in `refused` (a coercion refusal's, which `_finish_errors` prefers to
        them) are let go at once: held, they could fill the room of those it reports.
        """
        self.judge = judge
        found = _Judged()
        held_ = found.held
        limit = None if held is None else max(held, 1)

        def keep(key: _Key, entry: _Draft | jsonschema.ValidationError) -> None:
            held_.append((key, entry))
            if limit is not None and len(held_) >= 2 * limit:
                _trimmed(found, limit)

        asks_user = self.schema.asks_user
        for seq, error in enumerate(errors):
            found.count += 1
            # Items by their index, not its text (`/a/10` after `/a/2`); a step's kind first
            # keeps an index and a key comparable, though one container never gives both.
            path = [(isinstance(step, str), step) for step in error.absolute_path]
            keyword = str(error.validator)
            # A null may be the user's to give (`asked_of_user`): ranked when it is drafted.
            user_null = asks_user and error.instance is None
            if keyword in _PLAIN_KEYWORDS and isinstance(error.schema, dict) and not user_null:
                key: _Key = (True, _RANK.get(_keyword_code(error), 7), 1, path, seq, 0)
                if found.horizon is not None and key >= found.horizon:
                    continue
                if refused and self.schema.locate(list(error.absolute_path)).pointer in refused:
                    continue
                _lighten(error)
                keep(key, error)
                continue
            for j, drafted in enumerate(self._from_jsonschema([error], value)):
                if drafted.error.path in refused:
                    continue
                # Ranked as the user's when it is theirs to answer, before any is let go.
                draft = self.asked_of_user(drafted) if asks_user else drafted
                user = draft.user_supplied
                key = (not user, _RANK.get(draft.error.code, 7), 1, path, seq, j)
                if user:
                    found.users.append((key, draft))
                elif found.horizon is None or key < found.horizon:
                    keep(key, draft)
        if limit is not None:
            _trimmed(found, limit)
        return found

    def drafted(self, error: jsonschema.ValidationError, value: Any) -> list[_Draft]:
        """The drafts for one of `judged`'s errors left to build, with their range hints."""
        return self.with_range_hints(self._from_jsonschema([error], value))

    def _from_jsonschema(
        self, errors: Sequence[jsonschema.ValidationError], value: Any
    ) -> list[_Draft]:
        drafts: list[_Draft] = []
        for error in errors:
            path: list[str | int] = list(error.absolute_path)
            keyword = str(error.validator)
            instance: Any = error.instance
            if keyword == "required" and isinstance(instance, dict):
                for key in _l(error.validator_value):
                    if key not in instance:
                        located = self.schema.locate([*path, key])
                        user = bool(located.node.get(USER_SUPPLIED_KEY))
                        drafts.append(
                            _Draft(
                                FieldError(
                                    located.pointer,
                                    "missing",
                                    self.expected("missing", located.node, {}, ""),
                                    None,
                                    text("hint.user_supplied", self.lang) if user else None,
                                ),
                                user_supplied=user,
                            )
                        )
                continue
            if keyword == "additionalProperties" and isinstance(instance, dict):
                allowed = _d(_d(error.schema).get("properties"))
                patterns = _d(_d(error.schema).get("patternProperties"))
                for key, item in cast(dict[str, Any], instance).items():
                    if key not in allowed and not _pattern_names(patterns, key):
                        # The object's own schema: inside a union, `locate` may take the key
                        # for another branch's field.
                        located = dataclasses.replace(
                            self.schema.locate([*path, key]),
                            pointer=pointer([*path, key]),
                            parent=_d(error.schema),
                        )
                        drafts.append(self.unknown_field(located, item))
                continue
            if keyword in ("anyOf", "oneOf") and error.context:
                branch = self._aimed_branch(error)
                if branch is not None:
                    # The branch the value was aiming for says what to fix; "expected an
                    # object or an integer" does not, when the value is already one.
                    drafts.extend(self._from_jsonschema(branch, value))
                    continue
            if keyword == "oneOf" and not error.context:
                # jsonschema reports a value more than one branch takes without sub-errors.
                drafts.append(self._several_branches(path, instance, error))
                continue
            if keyword in ("anyOf", "oneOf"):
                alternatives = self._missing_alternatives(error, path)
                if alternatives is not None:
                    drafts.append(alternatives)
                    continue
                alike = self._refused_alike(error, path)
                if alike is not None:
                    drafts.append(alike)
                    continue
                apart = self._refused_apart(error, path)
                if apart is not None:
                    drafts.append(apart)
                    continue
                wrong_tag = self._wrong_tag(error, path)
                if wrong_tag is not None:
                    drafts.append(wrong_tag)
                    continue
                if isinstance(instance, dict):
                    # "Expected an object" says nothing to an object: what the branch it comes
                    # closest to finds wrong with it does.
                    closest = self._closest_branch(
                        self.schema.locate(path), cast(dict[str, Any], instance)
                    )
                    if closest is not None:
                        drafts.append(closest)
                        continue
                inner = _inner_faults(error, self.schema)
                if inner is not None:
                    # The branch closest to the object or array says what to fix in it.
                    drafts.extend(self._from_jsonschema(inner, value))
                    continue
            forbidden = self._forbidden_drafts(error, path, instance)
            if forbidden:
                drafts.extend(forbidden)
                continue
            special = self._keyword_draft(error, path, keyword)
            if special is not None:
                drafts.append(special)
                continue
            located = self.schema.locate(path)
            code = _keyword_code(error)
            ptype = "too_short" if keyword in ("minItems", "maxItems") else ""
            node = located.node
            if _under_property_names(error) and isinstance(instance, str):
                # A key breaks the object's rule for keys: the error is the object's, and the
                # key is the value shown.
                rule = _d(error.schema)
                words = self.expected(code, rule, {}, ptype) if rule else ""
                drafts.append(
                    _Draft(
                        FieldError(
                            located.pointer,
                            code,
                            text("expected.key", self.lang, what=words),
                            self.got(located, instance),
                        )
                    )
                )
                continue
            if isinstance(error.schema, dict) and (
                code in ("range", "multiple_of", "length", "pattern")
                or (
                    keyword in ("type", "enum", "const", "format", "anyOf", "oneOf")
                    and keyword in error.schema
                )
            ):
                # The bound comes from the subschema that failed (an `allOf` member, `then`, a
                # `patternProperties` pattern beside a property of the same key), which need
                # not be the value's own schema.
                node = error.schema
                if node is not located.node and self.schema.holds_secret(node):
                    # What that subschema marks secret is hidden, as at its own place.
                    located = dataclasses.replace(located, secret=True)
            hint = None
            if code == "type" and isinstance(instance, _RoundedToWhole):
                # The digits the model wrote, not the float that rounds them; and for an
                # integer where coercion does not walk (`patternProperties`, `then`, ...), the
                # advice it gives where it does (`fractional_integer`): do not round.
                instance = loads_exact(instance.text)
                rule = error.validator_value
                types = [rule] if isinstance(rule, str) else _l(rule)
                if keyword == "type" and "integer" in types:
                    hint = text("hint.fractional_integer", self.lang)
            drafts.append(
                _Draft(
                    FieldError(
                        located.pointer,
                        code,
                        self.expected(code, node, {}, ptype),
                        self.got(located, instance),
                        hint,
                    )
                )
            )
        return drafts

    def _forbidden_drafts(
        self, error: jsonschema.ValidationError, path: list[str | int], instance: Any
    ) -> list[_Draft]:
        """The members a `false` subschema (written `{"not": {}}`, see `_one_dialect`) or
        `unevaluatedProperties: false` forbids, each named at its own pointer: the error
        jsonschema gives for the latter is about the object, and "expected an object" at the
        object tells the model nothing about which field to remove."""
        if error.validator == "not" and error.validator_value == {}:
            if path and isinstance(path[-1], str):
                parent = self.schema.deref(self.schema.locate(path[:-1]).node)
                located = dataclasses.replace(
                    self.schema.locate(path), pointer=pointer(path), parent=parent
                )
                return [self.unknown_field(located, instance)]
            located = dataclasses.replace(self.schema.locate(path), pointer=pointer(path))
            nothing = text("expected.nothing", self.lang)
            return [
                _Draft(FieldError(located.pointer, "invalid", nothing, self.got(located, instance)))
            ]
        if error.validator_value is not False or not isinstance(error.schema, dict):
            return []
        node: dict[str, Any] = error.schema
        if error.validator == "unevaluatedProperties" and isinstance(instance, dict):
            members = cast(dict[str, Any], instance)
            drafts: list[_Draft] = []
            for key, item in members.items():
                if _evaluates(node, key, self.schema.deref):
                    continue
                located = dataclasses.replace(
                    self.schema.locate([*path, key]), pointer=pointer([*path, key]), parent=node
                )
                drafts.append(self.unknown_field(located, item))
            return drafts
        return []

    def _keyword_draft(
        self, error: jsonschema.ValidationError, path: list[str | int], keyword: str
    ) -> _Draft | None:
        """The error for a keyword whose failure the value's type alone does not explain
        (a repeated item, a field another one requires, a `not`, a `false` branch), or None."""
        lang = self.lang
        instance: Any = error.instance
        rule: Any = error.validator_value
        schema = _d(error.schema)
        if keyword == "uniqueItems" and isinstance(instance, list):
            seen: dict[object, int] = {}
            for index, item in enumerate(cast(list[Any], instance)):
                first = seen.setdefault(json_key(item), index)
                if first != index:
                    located = self.schema.locate([*path, index])
                    expected = text("expected.unique", lang, index=first)
                    got = self.got(located, item)
                    return _Draft(FieldError(located.pointer, "unique", expected, got))
            return None
        if keyword in ("minProperties", "maxProperties") and isinstance(rule, int):
            located = self.schema.locate(path)
            key = "expected.min_fields" if keyword == "minProperties" else "expected.max_fields"
            return _Draft(
                FieldError(
                    located.pointer, "length", text(key, lang, n=rule), self.got(located, instance)
                )
            )
        if (
            keyword in ("items", "additionalItems", "unevaluatedItems")
            and rule is False
            and isinstance(instance, list)
            and (keyword != "unevaluatedItems" or "items" not in schema)
        ):
            # No items past the tuple's positions (`prefixItems`, or draft 7's `items` list):
            # the array is too long, which "a valid value" does not tell the model.
            positions = _l(schema.get("items" if keyword == "additionalItems" else "prefixItems"))
            located = self.schema.locate(path)
            return _Draft(
                FieldError(
                    located.pointer,
                    "length",
                    text("expected.max_items", lang, n=len(positions)),
                    self.got(located, instance),
                )
            )
        if keyword in ("contains", "minContains", "maxContains"):
            located = self.schema.locate(path)
            what = self.schema.describe(_d(schema.get("contains")), lang)
            if keyword == "maxContains":
                words = text("expected.contains_max", lang, n=rule, what=what)
            else:
                least = schema.get("minContains", 1)
                words = text("expected.contains_min", lang, n=least, what=what)
            return _Draft(FieldError(located.pointer, "length", words, self.got(located, instance)))
        if keyword in ("dependentRequired", "dependencies") and isinstance(instance, dict):
            for name, needed in _d(rule).items():
                if name not in instance:
                    continue
                for key in _l(needed):
                    if key not in instance:
                        located = self.schema.locate([*path, key])
                        what = self.schema.describe(located.node, lang)
                        expected = text("expected.required_with", lang, name=name, what=what)
                        return _Draft(FieldError(located.pointer, "missing", expected, None))
            return None
        if keyword == "not":
            located = self.schema.locate(path)
            what = self._constraint_words(_d(rule))
            return _Draft(
                FieldError(
                    located.pointer,
                    "invalid",
                    text("expected.not", lang, what=what),
                    self.got(located, instance),
                )
            )
        if error.schema is False:  # a `false` subschema (`then: false`, say)
            owner = self._schema_at(list(error.absolute_schema_path))
            if owner is None or "if" not in owner:
                return None
            then_false, else_false = owner.get("then") is False, owner.get("else") is False
            if then_false == else_false:
                return None
            located = self.schema.locate(path)
            condition = self._condition_words(owner["if"])
            key = "expected.then_false" if then_false else "expected.else_false"
            return _Draft(
                FieldError(
                    located.pointer,
                    "invalid",
                    text(key, lang, condition=condition),
                    self.got(located, instance),
                )
            )
        return None

    def _schema_at(self, parts: list[Any]) -> dict[str, Any] | None:
        """The subschema at a `jsonschema` schema path (through `$ref`), or None."""
        node: Any = self.schema.root
        for part in parts:
            if isinstance(node, dict) and part == "$ref":
                node = self.schema.deref(cast(dict[str, Any], node))
            elif isinstance(node, dict):
                node = cast(dict[str, Any], node).get(str(part))
            elif isinstance(node, list) and isinstance(part, int):
                items = cast(list[Any], node)
                node = items[part] if part < len(items) else None
            else:
                return None
        return cast(dict[str, Any], node) if isinstance(node, dict) else None

    def _constraint_words(self, node: dict[str, Any]) -> str:
        node = self.schema.deref(node)
        names = [str(n) for n in _l(node.get("required"))]
        if names and not any(k in node for k in ("type", "enum", "const", "anyOf", "oneOf")):
            return text("expected.all_fields", self.lang, names=shown_text(", ".join(names)))
        return self.schema.describe(node, self.lang)

    def _condition_words(self, condition: object) -> str:
        """An `if` subschema in words, from its required fields and constant properties."""
        lang = self.lang
        node = self.schema.deref(_d(condition))
        parts = [text("condition.given", lang, name=str(n)) for n in _l(node.get("required"))]
        for name, sub in _d(node.get("properties")).items():
            sub = self.schema.deref(_d(sub))
            if "const" in sub:
                value = _json(sub["const"])
            elif isinstance(sub.get("enum"), list):
                value = _enum_text(_l(sub["enum"]), lang)
            else:
                continue
            parts.append(text("condition.is", lang, name=name, value=value))
        if not parts:
            return text("condition.schema", lang)
        return shown_text(text("join.and", lang).join(parts))

    def _several_branches(
        self, path: list[str | int], value: Any, error: jsonschema.ValidationError
    ) -> _Draft:
        """The error of a value more than one `oneOf` branch takes (exactly one must): the
        branches, in words, and what to do about it. Object branches told apart by the fields
        they require are named by them, and the fields that made several take the value are
        named in the hint: dropping some of them makes it one branch's."""
        lang = self.lang
        located = self.schema.locate(path)
        what = self.schema.describe(located.node, lang)
        hint = text("hint.one_of_several", lang)
        listed = _l(error.validator_value)
        branches = [self.schema.deref(_d(b)) for b in listed]
        if any(_requires(b) for b in branches):
            words = [self._alternative_words(b) for b in branches]
            what = text("join.or", lang).join(dict.fromkeys(words))
        if isinstance(value, dict) and self.judge is not None:
            evolve: Callable[..., jsonschema.protocols.Validator] = self.judge.evolve  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            took = [
                _requires(branch)
                for raw, branch in zip(listed, branches, strict=True)
                if evolve(schema=raw).is_valid(cast(dict[str, Any], value))
            ]
            present = [[k for k in names if k in value] for names in took]
            common = set(present[0]).intersection(*present[1:]) if present else set[str]()
            names = [k for k in dict.fromkeys(k for p in present for k in p) if k not in common]
            if len(took) > 1 and names:
                hint = text("hint.one_of_fields", lang, names=shown_text(", ".join(names)))
        return _Draft(
            FieldError(
                located.pointer,
                "ambiguous",
                text("expected.exactly_one", lang, what=what),
                self.got(located, value),
                hint,
            )
        )

    def _alternative_words(self, branch: dict[str, Any]) -> str:
        """A `oneOf` branch in words: an object branch by the fields it requires."""
        names = _requires(branch)
        if names and (_is_object_schema(branch) or "type" not in branch):
            return text("expected.object_with", self.lang, names=shown_text(", ".join(names)))
        return self.schema.describe(branch, self.lang)

    def _missing_alternatives(
        self, error: jsonschema.ValidationError, path: list[str | int]
    ) -> _Draft | None:
        """A union's error when each branch only asks for fields the object lacks ("either
        email or phone"): a `missing` error naming the alternatives. None otherwise."""
        instance: Any = error.instance
        by_branch = _branch_errors(error)
        if not isinstance(instance, dict) or len(by_branch) != len(_l(error.validator_value)):
            return None
        alternatives: list[str] = []
        for refusals in by_branch.values():
            if any(e.validator != "required" or e.relative_path for e in refusals):
                return None
            lacking = [
                str(key) for e in refusals for key in _l(e.validator_value) if key not in instance
            ]
            words = text("join.and", self.lang).join(dict.fromkeys(lacking))
            if words and words not in alternatives:
                alternatives.append(words)
        if not alternatives:
            return None
        names = shown_text(", ".join(alternatives))
        expected = text("expected.one_of_fields", self.lang, names=names)
        return _Draft(FieldError(self.schema.locate(path).pointer, "missing", expected, None))

    def _refused_alike(
        self, error: jsonschema.ValidationError, path: list[str | int]
    ) -> _Draft | None:
        """A union's error when every branch takes the value's type and refuses the value by
        the same kind of rule (strings told apart by their patterns): that rule's code, with
        what each branch asks. None otherwise, where "expected a string" would have told the
        model nothing about a value that is one."""
        by_branch = _branch_errors(error)
        if not by_branch or len(by_branch) != len(_l(error.validator_value)):
            return None
        codes: set[str] = set()
        asked: list[str] = []
        for refusals in by_branch.values():
            if len(refusals) != 1:
                return None
            (sub,) = refusals
            keyword = str(sub.validator)
            if (
                sub.relative_path
                or keyword == "type"
                or keyword not in _PLAIN_KEYWORDS
                or not isinstance(sub.schema, dict)
            ):
                return None
            code = _JSON_KEYWORD_CODES[keyword]
            ptype = "too_short" if keyword in ("minItems", "maxItems") else ""
            codes.add(code)
            words = self.expected(code, sub.schema, {}, ptype)
            if words not in asked:
                asked.append(words)
        if len(codes) != 1:
            return None
        located = self.schema.locate(path)
        expected = text("join.or", self.lang).join(asked)
        return _Draft(
            FieldError(located.pointer, codes.pop(), expected, self.got(located, error.instance))
        )

    def _refused_apart(
        self, error: jsonschema.ValidationError, path: list[str | int]
    ) -> _Draft | None:
        """A union's error when no one branch stands out and the branches refuse the value by
        rules of different kinds (one by its pattern, another by its length, a third by its
        type): what each branch needs, in words (a nested union's branches each count), under
        the code of the rules that refuse it in the branches whose type it has, `invalid` where
        those differ. "Expected a string" would have told the model nothing about a value that
        is one. None where every branch refuses the value's type alone (a type error, which the
        union's description says), or a branch refuses something inside the value."""
        refused = _value_refusals(error)
        if refused is None or decimal_beside_integer(self.schema.locate(path).node):
            # `int | Decimal` merged: its string branch only quotes the `Decimal`'s number, so
            # text that is no number is refused by type, as in a lone `Decimal` field.
            return None
        codes: set[str] = set()
        needs: list[str] = []
        for branch, refusals in refused:
            keywords = {str(sub.validator) for sub in refusals}
            if "type" not in keywords:
                codes.update(_JSON_KEYWORD_CODES[keyword] for keyword in keywords)
            words = self._branch_needs(self.schema.deref(branch), refusals)
            if words not in needs:
                needs.append(words)
        if not codes:
            return None
        code = codes.pop() if len(codes) == 1 else "invalid"
        located = self.schema.locate(path)
        expected = text("join.or", self.lang).join(needs)
        return _Draft(
            FieldError(located.pointer, code, expected, self.got(located, error.instance))
        )

    def _branch_needs(
        self, branch: dict[str, Any], refusals: Sequence[jsonschema.ValidationError]
    ) -> str:
        """What one union branch holds a value to, in words: the kind of value it takes (its
        pattern, else its type, format or values) with its bounds, those it declares itself
        and those its refusals name from elsewhere (an `allOf` member): `an integer (>= 5)`."""
        lang = self.lang
        kinds: list[str] = []
        rules: list[str] = []
        sources: list[tuple[str, Mapping[str, Any]]] = [
            (keyword, branch) for keyword in _BRANCH_RULES if keyword in branch
        ]
        sources += [
            (str(sub.validator), cast(dict[str, Any], sub.schema))
            for sub in refusals
            if sub.validator != "type"
        ]
        for keyword, node in sources:
            if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
                words, kind = self.range_text(node, {}), False
            elif keyword in ("minLength", "maxLength", "minItems", "maxItems"):
                words = self.length_text(node, {}, items=keyword.endswith("Items"))
                kind = False
            else:
                code = _JSON_KEYWORD_CODES[keyword]
                # A pattern, a format or the values allowed say what kind of value it is.
                words, kind = self.expected(code, node, {}, ""), code != "multiple_of"
            if words not in kinds and words not in rules:
                (kinds if kind else rules).append(words)
        what = kinds[0] if kinds else self.schema.describe(branch, lang)
        rules = kinds[1:] + rules
        if not rules:
            return what
        joined = text("join.and", lang).join(rules)
        if what == text("type.any", lang):
            return joined
        return text("expected.with_rules", lang, what=what, rules=joined)

    def _wrong_tag(self, error: jsonschema.ValidationError, path: list[str | int]) -> _Draft | None:
        """A tagged union's error when the value's tag names no branch: the tag is what to fix.

        Every object branch must carry a constant for the same key (a discriminator, see
        `_tags`); the value then either lacks that key or gives it a value no branch has.
        """
        instance: Any = error.instance
        if not isinstance(instance, dict):
            return None
        branches, tag_sets = self.schema.members(_l(error.validator_value))
        if not branches or not all(_is_object_schema(b) for b in branches):
            return None
        shared: set[str] = set(tag_sets[0]).intersection(*tag_sets[1:])
        value = cast(dict[str, Any], instance)
        for key in sorted(shared):
            tags = [branch_tags[key] for branch_tags in tag_sets]
            if key in value and json_key(value[key]) in {json_key(t) for t in tags}:
                continue
            located = self.schema.locate([*path, key])
            allowed = _enum_text(list({json_key(t): t for t in tags}.values()), self.lang)
            at = pointer([*path, key])
            if key not in value:
                expected = text("expected.required", self.lang, what=allowed)
                return _Draft(FieldError(at, "missing", expected, None))
            return _Draft(FieldError(at, "enum", allowed, self.got(located, value[key])))
        return None

    def _aimed_branch(
        self, error: jsonschema.ValidationError
    ) -> list[jsonschema.ValidationError] | None:
        """The errors of the one union branch the value aims at: the branch its tag names, or
        else the only branch whose type it has; None when no single branch stands out."""
        listed = _l(error.validator_value)
        by_branch = _branch_errors(error)
        if not by_branch or len(by_branch) != len(listed):
            return None  # a branch that passed (oneOf matched twice): nothing to fix in one
        branches, tag_sets = self.schema.members(listed)
        tagged = _tagged_branch(branches, error.instance, tag_sets)
        if tagged is not None:
            return by_branch[next(i for i, b in enumerate(branches) if b is tagged)]
        fits = [
            errors
            for errors in by_branch.values()
            if not _loops_only(errors)
            and not any(e.validator == "type" and not e.relative_path for e in errors)
        ]
        return fits[0] if len(fits) == 1 else None


def _branch_errors(
    error: jsonschema.ValidationError,
) -> dict[int, list[jsonschema.ValidationError]]:
    """A union error's sub-errors by the index of the branch that gave them."""
    by_branch: dict[int, list[jsonschema.ValidationError]] = {}
    for sub in error.context or []:
        index = sub.relative_schema_path[0] if sub.relative_schema_path else None
        if isinstance(index, int):
            by_branch.setdefault(index, []).append(sub)
    return by_branch


def _inner_faults(
    error: jsonschema.ValidationError, schema: _Schema
) -> list[jsonschema.ValidationError] | None:
    """For a union that refused an object or an array: the errors of the branch that comes
    closest among those of the value's own type, so that the model does not hear "expected an
    array" for the array it sent. Closest is a branch that faults only what is inside the value
    (a member's pattern, an item's own union), not the value itself (a missing or unknown field,
    its length); then the fewest errors; then the one that declares the most of the object's
    keys, the first of those (`_undeclared_keys`). None when no branch takes the value's
    type."""
    instance: object = error.instance
    if not isinstance(instance, (dict, list)):
        return None
    listed = _l(error.validator_value)
    by_branch = _branch_errors(error)
    if not by_branch or len(by_branch) != len(listed):
        return None  # a branch that passed (oneOf matched twice): nothing to fix in one
    fitting = [
        (
            not all(e.relative_path for e in errors),
            len(errors),
            _undeclared_keys(schema.deref(_d(listed[index])), cast(object, instance)),
            index,
            errors,
        )
        for index, errors in sorted(by_branch.items())
        if not _loops_only(errors)
        and not any(e.validator == "type" and not e.relative_path for e in errors)
    ]
    return min(fitting, key=lambda f: f[:4])[4] if fitting else None


def _requires(branch: Mapping[str, Any]) -> list[str]:
    """The fields an object branch requires, its `allOf` members' included."""
    names = [str(n) for n in _l(branch.get("required"))]
    for member in _l(branch.get("allOf")):
        names += [str(n) for n in _l(_d(member).get("required"))]
    return list(dict.fromkeys(names))


def _value_refusals(
    error: jsonschema.ValidationError,
) -> list[tuple[dict[str, Any], list[jsonschema.ValidationError]]] | None:
    """A union error's branches, a nested union's own branches in its place, each with the
    errors it refused the value with, where every branch refused the value itself (no member
    or item of it) by keywords that `_PLAIN_KEYWORDS` names; None otherwise."""
    listed = _l(error.validator_value)
    by_branch = _branch_errors(error)
    if not by_branch or len(by_branch) != len(listed):
        return None  # a branch that passed (oneOf matched twice): nothing to fix in one
    out: list[tuple[dict[str, Any], list[jsonschema.ValidationError]]] = []
    for index, refusals in sorted(by_branch.items()):
        (first, *others) = refusals
        if (
            not others
            and first.validator in ("anyOf", "oneOf")
            and not first.relative_path
            and first.context
        ):
            nested = _value_refusals(first)
            if nested is None:
                return None
            out += nested
            continue
        if any(
            sub.relative_path
            or str(sub.validator) not in _PLAIN_KEYWORDS
            or not isinstance(sub.schema, dict)
            for sub in refusals
        ):
            return None
        out.append((_d(listed[index]), refusals))
    return out


def _one_dialect(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` without `$schema` below its root. `jsonschema` validates a subschema that
    declares `$schema` with that draft's own class, not the extended one chosen for the root
    (so a loop, a `\\p{L}` pattern or a cent-step `multipleOf` under it would be read the plain
    way); inlining copies the root, `$schema` and all, wherever `#` is referenced.

    Only the keyword goes: a property named `$schema` (a config file's own field) or a
    `$schema` key inside a `const` or `enum` value is the tool's data."""
    # Each `false` member and tuple position is written `{"not": {}}` too: jsonschema reports
    # a `false` subschema's refusal without the value's path (its `descend` returns before
    # adding it), so the model would hear of the object, not of the member to remove.
    below = cast(
        dict[str, Any], without_keywords(schema, frozenset({"$schema"}), false_as_nothing=True)
    )
    return {"$schema": schema["$schema"], **below} if "$schema" in schema else below


class _RoundedToWhole(WrittenFloat):
    """A number written with a fraction that a float reads as a whole one (`5.0000000000000001`
    is 5.0). `jsonschema` takes a whole float for an integer by asking `is_integer`, which this
    one answers for the number as written: it is none. `text` is that number's JSON text."""

    __slots__ = ()

    def is_integer(self) -> bool:
        return False


# Up to 15 significant digits, a decimal number is the float's shortest text (a double holds
# 15 digits of any decimal): only a longer one may be rounded.
_DOUBLE_DIGITS = 15


def _rounded_by_float(lexeme: str, value: float) -> bool:
    """Whether `value`, a float read from `lexeme`, is another number than the text wrote."""
    mantissa = lexeme.split("e", 1)[0].split("E", 1)[0]
    digits = mantissa.lstrip("-").replace(".", "").lstrip("0")
    return (
        len(digits) > _DOUBLE_DIGITS
        and math.isfinite(value)
        and Decimal(lexeme) != Decimal(repr(value))
    )


@functools.cache
def _union_judge() -> Any:
    """The `jsonschema` class that reads a model's union as a plain tool's union is read (see
    `_ErrorBuilder._refused_apart_at`), made once: formats are not asserted, since a model's
    formats are its field types' to check."""
    return extended_validator(jsonschema.Draft202012Validator)


def _loads_judged(text: str) -> tuple[Any, bool]:
    """The arguments as `jsonschema` validates them, and whether any number in them is a
    `WrittenFloat` (the tool must get plain floats): one that rounds a number written with
    more digits than a float holds keeps its text (see `_multiple_of`)."""
    rounded = False

    def number(lexeme: str) -> float:
        nonlocal rounded
        value = float(lexeme)
        judged: WrittenFloat
        if value.is_integer() and rounds_to_whole(lexeme):
            judged = _RoundedToWhole(lexeme)
        elif _rounded_by_float(lexeme, value):
            judged = WrittenFloat(lexeme)
        else:
            return value
        rounded = True
        judged.text = lexeme
        return judged

    return json.loads(text, parse_float=number), rounded


def _loops_only(errors: Sequence[jsonschema.ValidationError]) -> bool:
    """Whether a union branch failed only by looping back to a reference already running for
    the value (directly, or in every branch of a union inside it): it gives nothing to fix."""
    return bool(errors) and all(
        isinstance(e, ReferenceLoop)
        or (e.validator in ("anyOf", "oneOf") and _loops_only(list(e.context or [])))
        for e in errors
    )


def _tag_key(ctx: Mapping[str, Any], value: object, branches: list[dict[str, Any]]) -> str:
    """The key of a discriminated union's tag, from a `union_tag_*` error; `""` when the
    union names none.

    Pydantic names the tag `'kind'`, or `'kind' | 'Kind'` when the field has an alias: the
    key the arguments hold is the one to name, else the alias (what the schema shows). A
    callable `Discriminator` is named by its function (`'pick_kind()'`, no key): the key is
    then the one member every branch holds to a constant, if there is exactly one.
    """
    keys = [k.strip() for k in str(ctx.get("discriminator", "")).split("|")]
    quoted = [k[1:-1] for k in keys if len(k) >= 2 and k[0] == k[-1] and k[0] in "'\""]
    present = [k for k in quoted if isinstance(value, dict) and k in value]
    if present or quoted:
        return (present or quoted)[-1]
    tag_sets = [_tags(branch) for branch in branches]
    shared = set(tag_sets[0]).intersection(*tag_sets[1:]) if tag_sets else set[str]()
    return next(iter(shared)) if len(shared) == 1 else ""


def _key_type(pydantic_type: str) -> str | None:
    """The JSON type a Pydantic error type asks for (`int_parsing`: integer), if it names one."""
    stem = pydantic_type.split("_", 1)[0]
    return {"int": "integer", "float": "number", "bool": "boolean", "string": "string"}.get(stem)


def _under_property_names(error: jsonschema.ValidationError) -> bool:
    """Whether the error is about a key (a `propertyNames` rule), not a value."""
    parts = list(error.absolute_schema_path)
    return any(
        part == "propertyNames" and (i == 0 or parts[i - 1] not in ("properties", "$defs"))
        for i, part in enumerate(parts)
    )


def _split(path: str) -> list[str | int]:
    """JSON Pointer → segments (array indices stay strings; locate handles both)."""
    if not path:
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def _at(value: Any, path: str) -> Any:
    """The value at a JSON Pointer, or `_ABSENT`."""
    for seg in _split(path):
        if isinstance(value, dict):
            value = cast(dict[str, Any], value).get(str(seg), _ABSENT)
            continue
        items = _as_items(value)
        if items is None or not str(seg).isdigit() or int(seg) >= len(items):
            return _ABSENT
        value = items[int(seg)]
    return value


def _uncut_path(path: str, value: Any) -> str:
    """`path`, a core error's JSON Pointer into `value`, with each key the core cut
    (`capped_path`) made the whole key of `value` it was cut from; `path` when a cut one
    names no key of `value` or more than one."""
    parts: list[str | int] = []
    for token in path.split("/")[1:]:
        seg = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            members = cast(dict[str, Any], value)
            if seg not in members and _CUT_KEY in seg:
                start = seg[: seg.rindex(_CUT_KEY)]
                whole = [
                    k
                    for k in members
                    if k.startswith(start) and capped_path(pointer([k])) == "/" + token
                ]
                if len(whole) != 1:
                    return path
                seg = whole[0]
            value = members.get(seg, _ABSENT)
        else:
            items = _as_items(value)
            at = int(seg) if seg.isdigit() else -1
            value = items[at] if items is not None and 0 <= at < len(items) else _ABSENT
        parts.append(seg)
    return pointer(parts)


_Pathed = TypeVar("_Pathed", FieldError, Coercion)


def _paths_cut(items: list[_Pathed]) -> list[_Pathed]:
    """`items` with each long key in their paths cut as the core cuts its own (`capped_path`):
    a key the model made up may be as long as the call. Only once the secrets in the paths
    are hidden, since a cut could leave a secret's start."""
    return [
        item
        if (cut := capped_path(item.path)) == item.path
        else dataclasses.replace(item, path=cut)
        for item in items
    ]


# What a key cut by `capped_path` holds after its first characters.
_CUT_KEY = "…("


def _keys_hidden(path: str, arguments: Any, secrets: Sequence[str]) -> str:
    """`path` with each object key in it that quotes a secret value redacted. An array's index
    stays as it is: a short secret (the PIN `1`) would otherwise hide the position."""
    parts: list[str | int] = []
    value = arguments
    for seg in map(str, _split(path)):
        items = _as_items(value)
        if items is not None and seg.isdigit():
            parts.append(seg)
            value = items[int(seg)] if int(seg) < len(items) else _ABSENT
            continue
        # A key, or a step the arguments do not hold (a missing field), read as one.
        keyed = isinstance(value, dict) or not seg.isdigit()
        parts.append(without_values(seg, secrets) if keyed else seg)
        value = (
            cast(dict[str, Any], value).get(seg, _ABSENT) if isinstance(value, dict) else _ABSENT
        )
    return pointer(parts)


def path_without_values(path: str, text: str, secrets: Sequence[str]) -> str:
    """`path`, a JSON Pointer into the argument text `text`, with each object key in it that
    quotes a secret value redacted, as in error paths: for what records or reports a core
    error's exact path (a recording, a replay report).

    Args:
        path: The JSON Pointer.
        text: The argument text it points into, possibly cut off or invalid.
        secrets: The secret values' texts.

    Returns:
        The pointer, its keys hidden. In a text that is no JSON no step is known to be an
        array's index, so each that quotes a secret is hidden, a digit too.
    """
    if not secrets:
        return path
    try:
        arguments = loads_exact(text)
    except (ValueError, RecursionError):
        return pointer(without_values(str(seg), secrets) for seg in _split(path))
    return _keys_hidden(path, arguments, secrets)


def dotted_without_values(field: str, secrets: Sequence[str]) -> str:
    """A dotted field path (`ask_user`'s `contact.email`) with each key in it that quotes a
    secret value redacted; an index stays, as in error paths.

    Args:
        field: The dotted path: the fields the schema names, a made-up key only inside a
            dict field.
        secrets: The secret values' texts.

    Returns:
        The path, its keys hidden.
    """
    return ".".join(p if p.isdigit() else without_values(p, secrets) for p in field.split("."))


def _as_items(value: object) -> list[Any] | None:
    return cast(list[Any], value) if isinstance(value, list) else None


def _as_sent(
    details: list[ErrorDetails],
    value: Any,
    kept: Mapping[tuple[str | int, ...], tuple[int, ...]],
) -> list[ErrorDetails]:
    """Pydantic's errors on `value`, coerced arguments from which `set_duplicates` dropped
    repeats, each `loc` made the place as sent (see `_sent_loc`)."""
    out: list[ErrorDetails] = []
    for detail in details:
        loc = _sent_loc(detail["loc"], value, kept)
        out.append(detail if loc is None else {**detail, "loc": loc})
    return out


def _sent_loc(
    loc: Sequence[str | int],
    value: Any,
    kept: Mapping[tuple[str | int, ...], tuple[int, ...]],
) -> tuple[str | int, ...] | None:
    """A place in `value`, coerced arguments from which `set_duplicates` dropped repeats,
    with each index into such an array made the index of that item as the model sent it
    (`CoercionResult.kept_items`), or None where no index moved: the model is told to fix its
    own item, not the one that moved into the place.

    A step of a Pydantic `loc` is a member of the value it reaches or a union's tag (not
    one): it is read as a member where the value holds one, and only indices change."""
    out = list(loc)
    here, sent = value, list[str | int]()
    changed = False
    for at, seg in enumerate(out):
        if isinstance(here, dict) and isinstance(seg, str) and seg in here:
            here = cast(dict[str, Any], here)[seg]
        elif isinstance(here, list) and isinstance(seg, int):
            items = cast(list[Any], here)
            if not 0 <= seg < len(items):
                continue
            here = items[seg]
            moved = kept.get(tuple(sent))
            if moved is not None and seg < len(moved) and moved[seg] != seg:
                out[at] = seg = moved[seg]
                changed = True
        else:
            continue
        sent.append(seg)
    return tuple(out) if changed else None


def _unchanged_at(before: Any, after: Any, path: str) -> bool:
    """Whether coercion left the value at `path` in place and as it was."""
    old = _at(before, path)
    return old is not _ABSENT and _at(after, path) == old


def _unknown_fields(
    schema: _Schema, value: object, checked: object = _ABSENT
) -> list[tuple[list[str | int], Any, dict[str, Any]]]:
    """Keys the published schema's closed objects do not define (the first `MAX_ERRORS`), with
    their values and the object schema that does not define them.

    Inside a union, an object whose tag names exactly one branch (a discriminated union) is
    that branch's; one with a tag no branch has is left to the tag's own error. Otherwise each
    branch that takes the value's JSON type is read (`Optional[Model]` has one). A branch that
    defines every key and takes every value's JSON type all the way down takes the value, and
    nothing is reported there (which branch applies is for validation to decide). Otherwise no
    branch takes it, though Pydantic may have taken one by dropping keys: the unknown keys of
    the branch whose values all fit (the fewest, if several) are reported, or, when every
    branch lacks a key, those of the branch that lacks the fewest. With `checked`, a value the
    pre-check passed whole that `value` was made from, the parts of `value` that are
    `checked`'s own at the same place are not looked at.
    """
    # A union's reading per (value, place, union): a value is read once per branch of the
    # union it is in, not once per branch of every enclosing union (exponential in depth for
    # recursive schemas). The value outlives the walk, so its id is not reused meanwhile.
    unions: dict[tuple[int, tuple[str | int, ...], int], _Reading] = {}
    # A union's branches and their tags, by the union's node (kept, so its id is not reused):
    # read once, not once for each of thousands of items in it.
    flattened: dict[int, tuple[Mapping[str, Any], list[dict[str, Any]], list[dict[str, Any]]]] = {}

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        # `_Schema.deref` copies the node; a union's memo needs the node's own identity.
        hops = 0
        while isinstance(node.get("$ref"), str) and hops < 32:
            node = _d(schema.defs.get(str(node["$ref"]).rsplit("/", 1)[-1]))
            hops += 1
        return node

    def walk(
        item: object, node: Mapping[str, Any], path: list[str | int], was: object, out: _Reading
    ) -> None:
        if item is was or len(out.unknown) >= MAX_ERRORS:
            return
        node = resolve(node)
        if "anyOf" in node or "oneOf" in node:
            if isinstance(item, (dict, list)):
                inner = union(cast(object, item), node, path, was)
                out.unknown.extend(inner.unknown[: MAX_ERRORS - len(out.unknown)])
                out.misfit = out.misfit or inner.misfit
            elif not any(has_json_type(item, b) for b in schema.branches(node)):
                out.misfit = True
            return
        if not has_json_type(item, node):
            out.misfit = True
            return
        if isinstance(item, dict):
            props = _d(node.get("properties"))
            patterns = _d(node.get("patternProperties"))
            extra = node.get("additionalProperties")
            before = cast(dict[str, Any], was) if isinstance(was, dict) else {}
            for key, sub in cast(dict[str, Any], item).items():
                if key in props:
                    walk(sub, _d(props[key]), [*path, key], before.get(key, _ABSENT), out)
                elif _pattern_names(patterns, key):
                    # Validation judges it against the pattern's schema; it is no unknown field.
                    continue
                elif extra is False:
                    # No more are shown than `MAX_ERRORS`: a call with 100,000 unknown keys
                    # must not cost 100,000 error drafts.
                    if len(out.unknown) < MAX_ERRORS:
                        out.unknown.append(([*path, key], sub, dict(node)))
                else:
                    walk(sub, _d(extra), [*path, key], before.get(key, _ABSENT), out)
        elif isinstance(item, list):
            prefix = _l(node.get("prefixItems"))
            items = _d(node.get("items"))
            earlier = cast(list[Any], was) if isinstance(was, list) else []
            for index, sub in enumerate(cast(list[Any], item)):
                walk(
                    sub,
                    _d(prefix[index]) if index < len(prefix) else items,
                    [*path, index],
                    earlier[index] if index < len(earlier) else _ABSENT,
                    out,
                )

    def union(
        item: object, node: Mapping[str, Any], path: list[str | int], was: object
    ) -> _Reading:
        key = (id(item), tuple(path), id(node))
        known = unions.get(key)
        if known is not None:
            return known
        # Reached again for the same value while reading it (`A = anyOf[array, $ref A]`): the
        # first visit reads every branch this one would.
        unions[key] = _Reading()
        known = flattened.get(id(node))
        if known is None:
            flat = schema.branches(node)
            known = flattened[id(node)] = (node, flat, [_tags(b) for b in flat])
        _, flat, tag_sets = known
        branch = _tagged_branch(flat, item, tag_sets)
        if branch is not None:
            candidates: list[Mapping[str, Any]] = [branch]
        elif any(tags for b, tags in zip(flat, tag_sets, strict=True) if _is_object_schema(b)):
            return unions[key]
        else:
            candidates = [b for b in flat if has_json_type(item, b)]
        readings: list[_Reading] = []
        for candidate in candidates:
            reading = _Reading()
            walk(item, candidate, path, was, reading)
            if not reading.unknown and not reading.misfit:
                return unions[key]
            if _lacks_required(candidate, item):
                # No reading of the value by this branch, dropping keys or not, has its
                # required fields: its unknown keys are no sign that it was meant.
                reading.misfit = True
            readings.append(reading)
        # A branch whose values all fit once its unknown keys are dropped is one Pydantic
        # may have taken without a word; with none, a branch that lacks no key but has a value
        # of the wrong type is as likely meant, and that error is Pydantic's to report.
        dropping = [r for r in readings if r.unknown and not r.misfit]
        if not dropping and all(r.unknown for r in readings):
            dropping = readings
        chosen = min(dropping, key=lambda r: len(r.unknown), default=_Reading())
        unions[key] = _Reading(chosen.unknown, misfit=True)
        return unions[key]

    found = _Reading()
    walk(value, schema.root, [], checked, found)
    return found.unknown


def _lacks_required(branch: Mapping[str, Any], item: object) -> bool:
    """Whether `item` is an object without a field `branch` requires."""
    if not isinstance(item, dict):
        return False
    sent = cast(dict[str, Any], item)
    return any(key not in sent for key in _l(branch.get("required")))


@dataclass
class _Reading:
    """What `_unknown_fields` found in one value against one schema: the keys it does not
    define, and whether a value there has a JSON type it does not take (`misfit`)."""

    unknown: list[tuple[list[str | int], Any, dict[str, Any]]] = field(default_factory=lambda: [])
    misfit: bool = False


def _tags(branch: Mapping[str, Any]) -> dict[str, Any]:
    """An object branch's tags: its properties held to one value, by a `const` or by an
    `enum` of one value (the way OpenAPI generators write a discriminator)."""
    tags: dict[str, Any] = {}
    for key, sub in _d(branch.get("properties")).items():
        rule = _d(sub)
        members = _l(rule.get("enum"))
        if "const" in rule:
            tags[key] = rule["const"]
        elif len(members) == 1:
            tags[key] = members[0]
    return tags


def _pattern_schema(node: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    """The schema of the first `patternProperties` pattern that takes `key`, or None. A
    pattern no engine compiles (one a model's `json_schema_extra` adds, which Pydantic never
    runs) takes no key."""
    for pattern, rule in _d(node.get("patternProperties")).items():
        try:
            if search(pattern, key):
                return _d(rule)
        except (regex.error, OverflowError):
            continue
    return None


def _pattern_names(patterns: Mapping[str, Any], key: str) -> bool:
    """Whether a `patternProperties` pattern takes `key`, as validation's own search reads it:
    `additionalProperties: false` beside them forbids only the keys no pattern takes."""
    return any(search(pattern, key) for pattern in patterns)


def _tagged_branch(
    branches: list[dict[str, Any]],
    item: object,
    tag_sets: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The one union branch whose tag (a property with a `const`) `item` carries, or None.

    An object branch without a tag, or an item whose tags match no branch or several, gives
    None. `tag_sets` are the branches' tags where known already.
    """
    if not isinstance(item, dict):
        return None
    value = cast(dict[str, Any], item)
    chosen: list[dict[str, Any]] = []
    for i, branch in enumerate(branches):
        if not _is_object_schema(branch):
            continue  # `null`, a string: no object goes there
        tags = _tags(branch) if tag_sets is None else tag_sets[i]
        if not tags:
            return None
        if all(
            key in value
            and value[key] == tag
            and isinstance(value[key], bool) == isinstance(tag, bool)
            for key, tag in tags.items()
        ):
            chosen.append(branch)
    return chosen[0] if len(chosen) == 1 else None


def _union_root(schema: _Schema, path: str) -> str:
    """The JSON Pointer of the outermost union value that `path` lies in (or `path` itself).

    A pre-check finding inside a union describes one branch's failure (the last one tried),
    not necessarily the value that made the union fail.
    """
    parts = _split(path)
    node = schema.deref(schema.root)
    for depth, seg in enumerate(parts):
        if "anyOf" in node or "oneOf" in node:
            return pointer(parts[:depth])
        items = _d(node.get("items"))
        if items and str(seg).isdigit():
            node = schema.deref(items)
            continue
        props = _d(node.get("properties"))
        child: object = props[seg] if seg in props else node.get("additionalProperties")
        node = schema.deref(_d(child))
    return path


def _merge_unions(
    drafts: list[_Entry],
    schema: _Schema,
    lang: Lang,
    written: Callable[[str], Any] | None = None,
) -> list[_Entry]:
    """Collapse errors from the branches of one untagged union into the closest branch's.

    `written` gives the value as the model wrote it at a pointer: between branches that fail
    equally often, the one that declares most of the value's keys is the one meant."""
    groups: dict[str, dict[str, list[_Draft]]] = {}
    for draft in drafts:
        if isinstance(draft, _Draft) and draft.union_ptr is not None and draft.tag is not None:
            groups.setdefault(draft.union_ptr, {}).setdefault(draft.tag, []).append(draft)
    if not groups:
        return drafts
    keep: set[int] = set()
    replacement: dict[int, _Draft] = {}
    for union_ptr, by_tag in groups.items():
        if len(by_tag) == 1:
            keep.update(id(d) for d in next(iter(by_tag.values())))
            continue
        members = [d for branch in by_tag.values() for d in branch]
        deeper = {t: ds for t, ds in by_tag.items() if any(d.error.path != union_ptr for d in ds)}
        specific = [d for d in members if d.error.code not in ("type", "invalid")]
        if deeper:
            # The branch that got furthest (fewest errors) is what the model was aiming for.
            fewest = min(len(ds) for ds in deeper.values())
            tied = [ds for ds in deeper.values() if len(ds) == fewest]
            tag = _tag_error(tied, union_ptr, schema, lang) if len(tied) > 1 else None
            if tag is not None:
                # No branch is closer, and each fails on the field that tells them apart (a tag
                # none of them takes): what the model must fix is that field, to any branch's
                # value; the other errors depend on which branch it means.
                replacement[id(tied[0][0])] = tag
            else:
                value = written(union_ptr) if written is not None else _ABSENT
                keep.update(id(d) for d in _closest_tied(tied, union_ptr, schema, value))
        elif specific:
            keep.add(id(specific[0]))
        else:
            first = members[0]
            located = schema.locate(_split(union_ptr))
            merged = FieldError(
                union_ptr, "type", schema.describe(located.node, lang), first.error.got
            )
            replacement[id(first)] = _Draft(merged)
    out: list[_Entry] = []
    for draft in drafts:
        if id(draft) in replacement:
            out.append(replacement[id(draft)])
        elif draft.union_ptr is None or draft.tag is None or id(draft) in keep:
            out.append(draft)
    return out


def _keyword_code(error: jsonschema.ValidationError) -> str:
    """The code of a keyword's error (`invalid` for one `_JSON_KEYWORD_CODES` lacks).

    A value of the wrong type that no member of its schema's `enum` or `const` equals (`"2"`
    for `{"type": "integer", "enum": [1, 2, 3]}`) is refused as `enum`, as Pydantic refuses it
    for an `IntEnum` or a `Literal[2]`: the members, which the error lists, say the type too,
    and no rule turns the text into a member (`enum_case` only reads a string member's case).
    """
    code = _JSON_KEYWORD_CODES.get(str(error.validator), "invalid")
    rule = error.schema
    if (
        code == "type"
        and isinstance(rule, dict)
        and enum_members(rule) is not None
        and not _constant_fits(error.instance, rule)
    ):
        return "enum"
    return code


def _constant_fits(value: Any, rule: Mapping[str, Any]) -> bool:
    """Whether `value` is the rule's `const` or one of its `enum` values, as JSON compares."""
    allowed = enum_members(rule) or []
    return any(type(value) is type(a) and value == a for a in allowed) or any(
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and isinstance(a, (int, float))
        and not isinstance(a, bool)
        and value == a
        for a in allowed
    )


def _member_rule(schema: _Schema, branch: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The schema of the member `key` of an object branch (`{}` when it declares none)."""
    return schema.deref(_d(_d(branch.get("properties")).get(key)))


def _tag_values(schema: _Schema, branches: Iterable[Mapping[str, Any]], key: str) -> list[Any]:
    """The values the member `key` takes as a constant in any of `branches`, once each."""
    values: list[Any] = []
    for branch in branches:
        for value in enum_members(_member_rule(schema, branch, key)) or []:
            if value not in values:
                values.append(value)
    return values


def _closest_tied(
    tied: list[list[_Draft]], union_ptr: str, schema: _Schema, value: Any
) -> list[_Draft]:
    """Of branches of a union that fail equally often, the errors of the one that declares
    the most keys of `value` (`_undeclared_keys`), the first of those."""
    if not isinstance(value, dict) or len(tied) < 2:
        return tied[0]
    sent = cast(dict[str, Any], value)
    branches = schema.branches(schema.locate(_split(union_ptr)).node)

    def undeclared(drafts: list[_Draft]) -> int:
        branch = schema.pick(branches, drafts[0].tag) if drafts[0].tag is not None else None
        return _undeclared_keys(branch, sent)

    return min(tied, key=undeclared)


def _branch_tag(
    schema: _Schema, union_ptr: str, branch: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """The union at `union_ptr` and the tag (the title Pydantic names it by in `loc`) of its
    object branch `branch`, for a finding in that branch's object: `_merge_unions` then weighs
    it with the branch's other errors, and drops it where another branch is the one meant (a
    report that named one branch's errors and another's keys misled). `(None, None)` where
    Pydantic's own errors there carry no such tag: a union inside another's branch (weighed
    at the outer one), `Optional[Model]`, or branches without distinct titles."""
    title = branch.get("title")
    if not isinstance(title, str) or _union_root(schema, union_ptr) != union_ptr:
        return None, None
    branches = schema.branches(schema.locate(_split(union_ptr)).node)
    if len([b for b in branches if b.get("type") != "null"]) < 2:
        return None, None
    if sum(1 for b in branches if b.get("title") == title) != 1:
        return None, None
    return union_ptr, title


def _undeclared_keys(branch: Mapping[str, Any] | None, value: object) -> int:
    """How many keys of `value` the union branch `branch` declares neither as a property nor
    by a pattern: every key and one more for a branch that takes no object (or is not known),
    none for a value that is no object.

    The one rule both model and plain tools tell union branches apart by, after the errors
    each finds: of branches that fail equally often, the one that declares the most keys
    sent is the one meant, the first of those as Pydantic tries them. Pydantic counts no key
    a branch ignores: `{"b": 2, "y": 1}` fails `A(a, x)` once (`a` missing) and `B(b, y)`
    once (`b` is no string), and the first branch told the model to add `a` to an object
    plainly meant for `B`."""
    if not isinstance(value, dict):
        return 0
    keys = cast(dict[str, Any], value).keys()
    if branch is None or not _is_object_schema(branch):
        return len(keys) + 1
    props = _d(branch.get("properties"))
    patterns = _d(branch.get("patternProperties"))
    return sum(1 for key in keys if key not in props and not _pattern_names(patterns, key))


def _tag_error(
    tied: list[list[_Draft]], union_ptr: str, schema: _Schema, lang: Lang
) -> _Draft | None:
    """For branches of a union that fail equally: when each fails a `const`/`enum` on the same
    member of the union's object (a tag such as `"kind"`), that member's error listing the
    values of every branch; else None."""
    paths: set[str] | None = None
    for branch in tied:
        mine = {d.error.path for d in branch if d.error.code == "enum"}
        paths = mine if paths is None else paths & mine
    if not paths:
        return None
    prefix = union_ptr.rstrip("/") + "/"
    members = sorted(p for p in paths if p.startswith(prefix) and "/" not in p[len(prefix) :])
    if not members:
        return None
    path = members[0]
    key = str(_split(path)[-1])
    values = _tag_values(schema, schema.branches(schema.locate(_split(union_ptr)).node), key)
    if not values:
        return None
    got = next(d.error.got for d in tied[0] if d.error.path == path)
    return _Draft(FieldError(path, "enum", _enum_text(values, lang), got))


_BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _within(number: Decimal, rule: Mapping[str, Any]) -> bool:
    """Whether `number` meets the numeric bounds of `rule`, compared exactly."""
    for key in _BOUND_KEYS:
        bound = rule.get(key)
        if isinstance(bound, bool) or not isinstance(bound, (int, float)):
            continue
        limit = Decimal(bound)
        if (
            (key == "minimum" and number < limit)
            or (key == "maximum" and number > limit)
            or (key == "exclusiveMinimum" and number <= limit)
            or (key == "exclusiveMaximum" and number >= limit)
        ):
            return False
    return True


# The codes of rules that bound a value of its type, several of which may hold it at once.
_BOUND_CODES = frozenset({"range", "length", "multiple_of", "pattern"})


def _finish_errors(
    entries: list[_Entry],
    schema: _Schema,
    lang: Lang,
    written: Callable[[str], Any] | None = None,
) -> tuple[list[FieldError], list[str]]:
    entries = _merge_unions(entries, schema, lang, written)
    # A coercion refusal explains its field better than the validator's plain error there.
    refused = {d.error.path for d in entries if isinstance(d, _Draft) and d.refusal}
    codes: set[tuple[str, str]] = set()
    # Two keywords that fail for one reason (`type` and `enum` on `"2"` for `enum: [1, 2, 3]`)
    # read alike: the model is told once, under the code that ranks first.
    words: set[tuple[str, str]] = set()
    unique: list[_Draft] = []
    # A value several subschemas bound (a property's and a matching pattern's) is told every
    # bound it breaks, in its one error of that code: `<= 10` alone hid `>= 20`.
    bounded: dict[tuple[str, str], _Draft] = {}
    for draft in _in_rank_order(entries):
        error = draft.error
        if error.path in refused and not draft.refusal:
            continue
        told = error.expected is not None and (error.path, error.expected) in words
        kept = bounded.get((error.path, error.code))
        if kept is not None and not told and error.expected is not None:
            joined = text("join.and", lang).join([cast(str, kept.error.expected), error.expected])
            kept.error = dataclasses.replace(kept.error, expected=joined)
            words.add((error.path, error.expected))
            continue
        if (error.path, error.code) not in codes and not told:
            codes.add((error.path, error.code))
            if error.expected is not None:
                words.add((error.path, error.expected))
                if error.code in _BOUND_CODES:
                    bounded[error.path, error.code] = draft
            unique.append(draft)
        if len(unique) >= MAX_ERRORS and not draft.user_supplied:
            # The fields only the user can give rank first: all are named already, and the
            # rest would not be reported (nor built, see `_Rest`).
            break
    ask_user = [d.error.path.lstrip("/").replace("/", ".") for d in unique if d.user_supplied]
    return [d.error for d in unique[:MAX_ERRORS]], ask_user


# --------------------------------------------------------------------------------------------
# The per-tool validator

_GRAMMAR_KINDS = frozenset(
    {
        "empty",
        "unexpected_byte",
        "trailing_data",
        "concatenated_values",
        "invalid_utf8",
        "control_character_in_string",
        "invalid_escape",
        "invalid_unicode_escape",
        "lone_surrogate",
        "invalid_number",
        "number_too_long",
        "duplicate_key",
        "mixed_arguments",
    }
)


# A digit followed by a fraction or an exponent: a number JSON reading makes a float (or a
# string holding one, which the closer look then reads past).
_FRACTION_OR_EXPONENT = re.compile(rb"[0-9][.eE]")
# A JSON string holding nothing but a number: the cheap test before looking for a Unix time
# written into a date or date-time field.
_QUOTED_NUMBER = re.compile(rb'"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"')


def _in_rank_order(entries: Sequence[_Entry]) -> Iterator[_Draft]:
    """The drafts of `entries` by `_sort_key`, those of a key in the order they came; a
    `_Rest` is built in its place and a `_Pending` as far as this is read."""
    built = sorted(
        (
            (_sort_key(e), (i, 0, 0), e)
            for i, e in enumerate(entries)
            if not isinstance(e, _Pending)
        ),
        key=_rank_place,
    )
    pending = [
        ((key, (i, *place), draft) for key, place, draft in e.ranked())
        for i, e in enumerate(entries)
        if isinstance(e, _Pending)
    ]
    for _, _, entry in heapq.merge(built, *pending, key=_rank_place):
        if isinstance(entry, _Rest):
            yield from entry.drafts()
        else:
            yield entry


def _rank_place(item: tuple[tuple[bool, int], tuple[int, int, int], object]) -> tuple[Any, ...]:
    return item[0], item[1]


def _second_spellings(problems: Iterable[CoercionProblem]) -> set[str]:
    """The paths of the keys refused as a field's second key (`duplicate_field`, reported at
    the object with the key as its value; a key cut short in the report is left out)."""
    paths: set[str] = set()
    for problem in problems:
        if problem.code == "duplicate_field":
            try:
                key: object = json.loads(problem.got)
            except ValueError:
                continue
            if isinstance(key, str):
                paths.add(pointer([*_split(problem.path), key]))
    return paths


def _without_second_keys(entries: Sequence[_Entry], paths: Collection[str]) -> list[_Entry]:
    """`entries` less the drafts `_under_second_key` finds at `paths`."""
    if not paths:
        return list(entries)
    return [
        e.without(paths) if isinstance(e, _Pending) else e
        for e in entries
        if not _under_second_key(e, paths)
    ]


def _under_second_key(entry: _Entry, paths: Collection[str]) -> bool:
    """Whether `entry` is an error about a field's second key at one of `paths`, or about the
    value under it: the `unique` refusal of that key is the one thing to fix there."""
    if not isinstance(entry, _Draft):
        return False
    path = entry.error.path
    return any(path == key or path.startswith(key + "/") for key in paths)


def _without_unions_above(drafts: Sequence[_E], paths: Collection[str]) -> list[_E]:
    """`drafts` less the union-level findings that some path in `paths` lies inside."""
    return [
        d
        for d in drafts
        if not (
            isinstance(d, _Draft)
            and d.union_level
            and any(p.startswith(d.error.path + "/") for p in paths)
        )
    ]


def _has_fixups(schema: Mapping[str, Any]) -> bool:
    """Whether validated values may still need the timezone or Unix-milliseconds check."""

    def verdict(node: dict[str, Any]) -> bool | None:
        fixed = node.get("format") == "date-time" or node.get(UNIT_KEY) == UNIX_SECONDS
        return True if fixed else None

    return schema_has(schema, verdict)


def _unit_of(info: Any) -> object:
    extra = getattr(info, "json_schema_extra", None)
    return cast(dict[str, Any], extra).get(UNIT_KEY) if isinstance(extra, dict) else None


def _raw_bytes(call: CallLike) -> bytes:
    raw: object = getattr(call, "arguments_bytes", None)
    return raw if isinstance(raw, bytes) else call.arguments.encode("utf-8", "surrogatepass")


def _argument_text(call: CallLike) -> str:
    """The call's argument text as validated: `{}` when nothing but whitespace arrived."""
    arguments = call.arguments
    return arguments if arguments.strip() else "{}"


def _wants_naive(annotation: Any) -> bool:
    """Whether a field's type holds a `NaiveDatetime`, which must stay without an offset."""
    return annotation is NaiveDatetime or any(_wants_naive(a) for a in get_args(annotation))


def _needs_fixup(value: Any, unix: bool = False, naive_ok: bool = False) -> bool:
    """Walk a validated model for a naive datetime or milliseconds in a Unix-seconds field."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        return any(
            _needs_fixup(
                getattr(value, name), _unit_of(info) == UNIX_SECONDS, _wants_naive(info.annotation)
            )
            for name, info in fields.items()
        )
    if isinstance(value, datetime):
        return value.tzinfo is None and not naive_ok
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_needs_fixup(item, unix, naive_ok) for item in cast(list[Any], value))
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).values()
        return any(_needs_fixup(item, unix, naive_ok) for item in items)
    if unix and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value > UNIX_MS_THRESHOLD
    return False


class ToolValidator:
    """Validates calls for one tool; built once per tool by `Toolset`.

    Args:
        tool: The tool name.
        schema: The tool's self-contained schema (`Toolset.schema(name)`).
        model: The Pydantic model, or None for a plain-dict tool (validated with `jsonschema`).
        rules: Coercion rules enabled for the whole tool.
        default_tz: Time zone given to timestamps without an offset; None makes them errors.
        check: Business check run on the validated model or dict.
        written: For a plain-dict tool, `schema` with its objects as written (not closed):
            a value must pass its `oneOf`s too (see `_as_written`).
        typed_precheck: Whether the pre-check holds every value to the type `schema` gives it
            (it leaves none free that `schema` types, as it does a value a `mode="before"`
            validator sees first): only then does a call it passed need no coercion outside
            dict keys and sets once Pydantic took it.
        free_input: For a model with a `mode="before"` or `mode="wrap"` validator of its own,
            its validation schema with objects open and no field required (see
            `_read_free_input`); None otherwise.
        published: The pre-check's schema where it leaves free a value `schema` types (a
            value a `mode="before"` validator sees first, under a key the validator reads):
            unknown fields are judged by it, as the pre-check judges them; None when it
            types every value `schema` does.
    """

    def __init__(
        self,
        tool: str,
        schema: Mapping[str, Any],
        model: type[BaseModel] | None,
        *,
        rules: frozenset[str],
        default_tz: tzinfo | None = None,
        check: Check | None = None,
        written: Mapping[str, Any] | None = None,
        typed_precheck: bool = False,
        free_input: Mapping[str, Any] | None = None,
        published: Mapping[str, Any] | None = None,
    ) -> None:
        self.tool = tool
        self.schema = dict(schema)
        self.model = model
        self.rules = rules
        self.default_tz = default_tz
        self.check = check
        self._lookup = _Schema(self.schema)
        # What unknown fields are judged by: the schema the pre-check holds calls to.
        self._published = self._lookup if published is None else _Schema(dict(published))
        self._holds_secrets = self._lookup.holds_secret(self.schema)
        self._fixups = _has_fixups(self.schema)
        self._decimals = model is not None and has_decimals(self.schema)
        # Untyped positions (`Any`, a bare `list` or `dict`) read a fraction or an exponent
        # as a float too.
        self._floats = model is not None and (has_floats(self.schema) or has_untyped(self.schema))
        self._timestamps = model is not None and has_timestamps(self.schema)
        # Dict fields whose keys Pydantic converts from text: every call goes through the
        # coercion walk, which holds the key texts to their type's JSON form.
        self._keyed_dicts = model is not None and schema_has(
            self.schema, lambda node: True if KEYS_KEY in node else None
        )
        # Set fields (`uniqueItems`): Pydantic drops repeated items without a word, so a call
        # with any repeat is walked, where `set_duplicates` records the drop or refuses it.
        self._sets = model is not None and schema_has(
            self.schema, lambda node: True if node.get("uniqueItems") is True else None
        )
        # Fields read under several keys: Pydantic keeps the first key's value and drops the
        # others' without a word, so every call is walked, where two of them are refused.
        self._spellings = model is not None and schema_has(
            self.schema, lambda node: True if SPELLINGS_KEY in node else None
        )
        self._typed_precheck = typed_precheck
        self._scalar_enums = model is not None and has_scalar_enums(self.schema)
        # Numeric enums alone can only be swapped by a `true` or `false` in the text.
        self._boolean_enums = self._scalar_enums and has_boolean_enums(self.schema)
        self._validate_json = None if model is None else model.__pydantic_validator__.validate_json
        self._strict = model is None or model.model_config.get("strict") is not False
        # A strict model with a validator of its own that sees the input first (see
        # `_read_free_input`) may be read in lax mode too.
        self._free_input = free_input if model is not None and self._strict else None
        self._typed_check: ToolRegistry | None = None
        # Pydantic's `validate_json` of a copy of the model's core schema whose validators'
        # refusals Pydantic can always write down (see `_refuse_writably`), made when first needed.
        self._writable: Callable[..., Any] | None = None
        # A lax model reads a number written with a fraction or an exponent (`30.0`,
        # `4.9999999999999999`) into an int field as a float and keeps the int of it without
        # a word; a strict one refuses it, and coercion records a whole one or refuses the rest.
        self._lax_integers = (
            not self._strict or self._free_input is not None
        ) and has_integer_fields(self.schema)
        self._jsonschema: jsonschema.protocols.Validator | None = None
        # Closed objects (what makes an unknown field an error) also make `oneOf` branches that
        # differ by a field exclusive: a value both open branches take, which the schema
        # refuses, would pass. Where closing changed a `oneOf`, the value must also pass the
        # schema as written.
        self._as_written: jsonschema.protocols.Validator | None = None
        self._formats: frozenset[str] | None = None
        # The schema as written, kept only where `_as_written` is needed, to compile it again.
        self._written: Mapping[str, Any] | None = None
        if model is None:
            if written is not None and closing_splits_one_of(self.schema, written):
                self._written = written
            self._compile_plain(check=True)

    def _compile_plain(self, *, check: bool) -> None:
        """Build a plain tool's `jsonschema` validators: at registration (`check` refuses a
        schema its metaschema refuses), and again in a copy or an unpickled toolset, since the
        classes `jsonschema` makes are local to a function and cannot be pickled."""
        cls = jsonschema.validators.validator_for(
            self.schema, default=jsonschema.Draft202012Validator
        )
        cls = extended_validator(cls)
        if check:
            cls.check_schema(self.schema)
        checker = cls.FORMAT_CHECKER
        self._jsonschema = cls(_one_dialect(self.schema), format_checker=checker)
        if self._written is not None:
            self._as_written = cls(_one_dialect(self._written), format_checker=checker)
        self._formats = frozenset(cls.FORMAT_CHECKER.checkers)
        # `jsonschema` reads `time` as RFC 3339's full-time: the offset is part of it.
        self._lookup.full_time = "time" in self._formats

    def validate(
        self,
        call: CallLike,
        *,
        lang: Lang = "en",
        redact: Redactor | None = None,
        prechecked: bool | None = None,
    ) -> Outcome:
        """Validate one call for this tool.

        Args:
            call: The completed call (its `error`, if any, is honoured first).
            lang: Language of the texts in the outcome.
            redact: Redaction hook for values shown to the model.
            prechecked: Whether the call's whole text passed the pre-check; None takes the
                call's own `prechecked` (False for a call that does not say).

        Returns:
            The outcome.
        """
        error = call.error
        paused = False
        try:
            if error is None and self._validate_json is not None:
                # The common case first, with nothing built that only a failure needs.
                given = self._exact_input(call)
                paused = len(given) >= GC_PAUSE_MIN_BYTES and pause_gc()
                try:
                    instance = self._model_of(given)
                except ValidationError as exc:
                    return self.rejected(call, exc, lang=lang, redact=redact)
                if (
                    not (self._fixups and _needs_fixup(instance))
                    and not (
                        self._floats
                        and not getattr(call, "plain_numbers", False)
                        and float_risk(_raw_bytes(call))
                    )
                    and not (self._decimals and self._odd_decimal_text(call))
                    and not (self._timestamps and self._unix_timestamp_text(call))
                    and not (self._scalar_enums and self._strict and self._bool_number_swap(call))
                    and not (self._scalar_enums and self._whole_float_in_enum(call))
                    and not (self._lax_integers and self._float_for_integer(call))
                ):
                    if not (self._keyed_dicts or self._sets or self._spellings):
                        return self._accept(call, instance, None, [], lang)
                    if prechecked is None:
                        prechecked = getattr(call, "prechecked", False) is True
                    if prechecked and self._typed_precheck:
                        # Every value has its schema's JSON type, Pydantic took the call as it
                        # is and no check above found a value it reads otherwise than as
                        # written: what is left is the dict keys Pydantic converts from text
                        # and the repeats a set drops, and only the parts of the call that can
                        # hold them are walked.
                        return self._validate_further(call, None, [], lang, redact, taken=instance)
                    # Otherwise Pydantic may have taken a value of another type (a lax model's
                    # `"3"` for an integer, a string a custom validator reads), which the
                    # whole walk records: such a call is walked whole, if at all.
                    if (
                        not self._keyed_dicts
                        and not self._spellings
                        and not has_repeats(call.value)
                    ):
                        return self._accept(call, instance, None, [], lang)
            return self._validate_further(call, error, [], lang, redact)
        finally:
            if paused:
                gc.enable()

    def _model_of(self, text_in: str | bytes) -> BaseModel:
        """The model Pydantic makes of argument text (`model_validate_json` minus its Python
        wrapper, a tenth of a small call).

        Raises:
            ValidationError: When Pydantic refuses the text.
        """
        assert self._validate_json is not None
        if not self._decimals:
            return self._read(text_in)
        # Pydantic checks a `Decimal` field's `multiple_of` (and counts its digits) with the
        # arithmetic of the current decimal context, whose exponent range (from -999999)
        # rounds the remainder of `1e-1100000` by 0.01 to 0: a multiple. The widest range
        # rounds no exponent a JSON number can carry; the precision stays the context's.
        context = decimal.getcontext().copy()
        context.Emin, context.Emax = decimal.MIN_EMIN, decimal.MAX_EMAX
        with decimal.localcontext(context):
            return self._read(text_in)

    def _read(self, text_in: str | bytes) -> BaseModel:
        """`validate_json` of the text in this tool's mode, or, for a model with a validator
        that sees the input first, in lax mode where strict mode refuses (see
        `_read_free_input`)."""
        assert self._validate_json is not None
        try:
            if self._free_input is None:
                return self._validate_json(text_in, strict=self.strict_argument)
            try:
                return self._validate_json(text_in, strict=True)
            except ValidationError as exc:
                return self._read_free_input(text_in, exc)
        except UnicodeEncodeError as exc:
            if exc.reason != "surrogates not allowed":
                raise
            self._refuse_writably(text_in, exc)

    def _refuse_writably(self, text_in: str | bytes, refused: UnicodeEncodeError) -> NoReturn:
        """`_read` for a text that made one of the model's validators refuse it with a message
        holding a lone surrogate: pydantic-core cannot encode such a message, and raises
        `UnicodeEncodeError` in place of the `ValidationError`, with the field it was at and
        every other error lost. The text is read again by a validator of the same core schema
        whose validator functions give such a refusal's message with each lone surrogate
        replaced (`sendable_text`): the refusal is then Pydantic's own, at its field.

        Raises:
            ValidationError: Pydantic's refusal, every message sendable.
            UnicodeEncodeError: `refused`, where the copy does not refuse the text that way.
        """
        assert self.model is not None
        try:
            if self._writable is None:
                core = self.model.__pydantic_core_schema__
                config = cast(Any, core).get("config") if core.get("type") == "model" else None
                writable = SchemaValidator(cast(Any, _refusals_sendable(core)), config)
                self._writable = writable.validate_json
            # A model with a validator that sees the input first is read in lax mode, where
            # strict mode would refuse the valid values too (see `_read_free_input`).
            lax = self._free_input is not None
            self._writable(text_in, strict=None if lax else self.strict_argument)
        except ValidationError:
            raise
        except Exception:
            # A validator that needs what the copy lacks, or a schema it cannot build: the
            # refusal as Pydantic left it.
            raise refused from None
        # Taken where it was refused (a validator that refuses only sometimes): as refused.
        raise refused

    def _read_free_input(self, text_in: str | bytes, refused: ValidationError) -> BaseModel:
        """The model of a text that strict mode `refused`, for a model with a validator of its
        own that sees the input first.

        A `mode="before"` or `mode="wrap"` validator (of the model, or of a field) hands
        Pydantic Python objects, not JSON: what it passes on is checked in Python mode, where
        strict mode takes no text for a `date`, `datetime`, `UUID` or `Decimal`, no list for
        a tuple or a set and no text for an integer dict key, so strict validation would
        refuse every call, the valid ones too, with errors that are not true of the text.
        Lax mode reads those as JSON mode does. It also converts what strict mode refuses
        rightly (`"30"` for an integer, a Unix time for a date), so its model is taken only
        when every value has the JSON type and form the validation schema gives its field
        (the fields a validator reads under other keys are not held to be there); otherwise
        the refusal stands, with only its errors at the value that breaks the schema, for
        coercion to record or refuse. The checks after Pydantic (a float for an integer
        field) apply as to a lax model.

        Raises:
            ValidationError: Lax mode's own, or `refused` cut to the value at fault.
        """
        assert self._validate_json is not None and self._free_input is not None
        instance = self._validate_json(text_in, strict=None)
        raw = text_in.encode("utf-8", "surrogatepass") if isinstance(text_in, str) else text_in
        try:
            if self._typed_check is None:
                self._typed_check = ToolRegistry({self.tool: self._free_input})
            found = self._typed_check.check(self.tool, raw, duplicate_keys="last_wins")
        except ValueError:
            # A schema the pre-check cannot compile, or a text it cannot read: unproven.
            raise refused from None
        if found is None:
            return instance
        at = tuple(pointer_tokens("#" + found.path) or ())
        kept = [
            cast(Any, e)
            for e in refused.errors(include_url=False)
            if tuple(str(part) for part in e["loc"][: len(at)]) == at
        ]
        if not kept:
            raise refused
        try:
            cut = ValidationError.from_exception_data(refused.title, kept)
        except Exception:  # an error type Pydantic cannot build again: the whole refusal
            raise refused from None
        raise cut

    def __getstate__(self) -> dict[str, Any]:
        # Pydantic's bound `validate_json` pickles its whole core schema, which holds local
        # functions for some field types (enums, secrets): it is taken from the model again.
        # The compiled schema is built again when first needed.
        # A plain tool's `jsonschema` validators, whose classes cannot be pickled, are compiled
        # again from its schemas.
        state = dict(self.__dict__)
        state["_validate_json"] = None
        state["_typed_check"] = None
        state["_writable"] = None
        state["_jsonschema"] = None
        state["_as_written"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.model is not None:
            self._validate_json = self.model.__pydantic_validator__.validate_json
        else:
            self._compile_plain(check=False)

    @property
    def checked_formats(self) -> frozenset[str] | None:
        """The `format` names validation asserts for a plain-dict tool (`jsonschema`'s format
        checker), or None for a model tool, whose field types decide."""
        return self._formats

    @property
    def direct_json(self) -> Callable[..., BaseModel] | None:
        """Pydantic's `validate_json` when it alone decides a call without a core error.

        That is a model tool whose raw bytes Pydantic may read as they are (no `Decimal` digits
        to protect), with no timestamp fix-up and no business check: `Toolset.validate` then
        calls it straight, and hands a `ValidationError` to `rejected`.
        """
        if (
            self._decimals
            or self._fixups
            or self._timestamps
            or self._scalar_enums
            or self._keyed_dicts
            or self._sets
            or self._spellings
            or self._lax_integers
            or self._free_input is not None
            or self.check is not None
        ):
            return None
        return self._validate_json

    @property
    def floats(self) -> bool:
        """Whether the tool has float fields: a success from `direct_json` then stands only if
        `toolwire.coercion.float_risk` finds no suspect number (otherwise `validate` decides)."""
        return self._floats

    @property
    def holds_secrets(self) -> bool:
        """Whether the tool's schema marks any value secret (see `secrets_of`)."""
        return self._holds_secrets

    @property
    def strict(self) -> bool:
        """Whether Pydantic validates this tool's arguments in strict mode."""
        return self._strict

    @property
    def strict_argument(self) -> bool | None:
        """The `strict` Pydantic's validation calls get: True, or None for a model that opts
        out of strict mode (its config and fields then decide: an explicit False would also
        lift a field's own `strict=True`)."""
        return True if self._strict else None

    def rejected(
        self,
        call: CallLike,
        exc: ValidationError,
        *,
        lang: Lang = "en",
        redact: Redactor | None = None,
    ) -> Outcome:
        """The outcome for a call without a core error that Pydantic rejected with `exc`.

        Coercion may still repair it; otherwise the outcome lists what the model must fix.
        """
        return self._validate_further(call, None, exc.errors(include_url=False), lang, redact)

    def _validate_further(
        self,
        call: CallLike,
        error: CallErrorLike | None,
        pydantic_errors: list[Any],
        lang: Lang,
        redact: Redactor | None,
        taken: BaseModel | None = None,
    ) -> Outcome:
        """`_examine`, with arguments too deep for Python's stack refused as `too_large`.

        `taken` is the model Pydantic made of a call it took as it is, whose whole text passed
        the pre-check: only the walk for dict keys and set items may still change or refuse it
        (see `validate`)."""
        try:
            # A plain tool's patterns run in Python's backtracking engines, on model output:
            # the whole validation shares one bound, however many strings the call repeats.
            if self.model is None:
                with pattern_budget(len(call.arguments)):
                    return self._examine(call, error, pydantic_errors, lang, redact, taken)
            return self._examine(call, error, pydantic_errors, lang, redact, taken)
        except BaseException as exc:
            # Nested deeper than the stack allows (an assembler made with a `max_depth` above
            # the default), or a schema loop no reading can cut (`unevaluatedProperties` beside
            # one): the call cannot be checked, so it must not run. A Rust extension under
            # `jsonschema` (`rpds`) reports the recursion limit as a panic. Anything else goes on.
            # And a number with more digits than Python converts to an int (an assembler made
            # with a `max_number_digits` above CPython's own limit).
            if (
                not isinstance(exc, RecursionError)
                and type(exc).__name__ != "PanicException"
                and not _past_int_digit_limit(exc)
            ):
                raise
            return Outcome.failure(call, self.tool, "too_large", lang=lang)

    def _examine(
        self,
        call: CallLike,
        error: CallErrorLike | None,
        pydantic_errors: list[Any],
        lang: Lang,
        redact: Redactor | None,
        taken: BaseModel | None = None,
    ) -> Outcome:
        text_in = _argument_text(call)
        if _unreadable_json(pydantic_errors, text_in):
            return Outcome.failure(call, self.tool, "too_large", lang=lang)
        builder = _ErrorBuilder(self._lookup, lang, redact, lambda: loads_exact(text_in))
        initial: list[_Entry] = builder.from_pydantic(pydantic_errors) if pydantic_errors else []
        # A pre-check finding that Pydantic does not report (an unknown field under the default
        # `extra="ignore"`): coercions elsewhere must not make it disappear.
        precheck_only: list[_Draft] = []
        if error is not None:
            # Only a schema violation or a non-object (a double-encoded object, say) reaches
            # here: coercion may still fix those; every other core error is final.
            if error.kind == "not_object":
                return self._repair(call, text_in, [], builder, lang)
            if error.kind != "schema_violation" or self.model is None or call.value is None:
                initial = [builder.from_call_error(error)]
            else:
                # The pre-check stops at its first violation; the model should hear about all
                # of them in one round, so the complete JSON is validated in full.
                # The published schema (closed objects, say) is the contract, so the
                # pre-check's own finding stays even where the model is more lenient.
                found = builder.from_call_error(error, call.value)
                found.union_level = error.keyword in ("anyOf", "oneOf")
                try:
                    self._model_of(self._exact(text_in))
                except ValidationError as exc:
                    found_by_pydantic = exc.errors(include_url=False)
                    if _unreadable_json(found_by_pydantic, text_in):
                        # As without the pre-check: what Pydantic cannot read is too large.
                        return Outcome.failure(call, self.tool, "too_large", lang=lang)
                    initial = builder.from_pydantic(found_by_pydantic)
                # The pre-check stops at its first violation: unknown fields after it (which
                # Pydantic's default `extra="ignore"` would drop) are found here.
                unknown = self._unknown_drafts(builder, call.value)
                for twin in unknown:
                    if twin.error.path == found.error.path and found.error.code == twin.error.code:
                        # The pre-check's own finding of that key: weighed as the walk's is.
                        found.union_ptr, found.tag = twin.union_ptr, twin.tag
                # The union failed on a value inside it (a tag, a field its tagged branch does
                # not define): that error says what to fix, "expected an object" at the union
                # does not.
                drafts = [found, *unknown]
                if any(d.union_level for d in drafts):
                    inside = _paths_of(initial) | _paths_of(unknown)
                    drafts = [
                        d
                        for d in _without_unions_above(drafts, inside)
                        if not (d.union_level and _below(initial, d.error.path))
                    ]
                # A set: a call with thousands of unknown fields has as many drafts.
                seen = _paths_of(initial)
                for draft in drafts:
                    if draft.error.path not in seen and not _held(initial, draft.error.path):
                        seen.add(draft.error.path)
                        initial.append(draft)
                        precheck_only.append(draft)
        # Pydantic took the call as it is: the walk repairs nothing, it records.
        took = error is None and not pydantic_errors
        return self._repair(call, text_in, initial, builder, lang, precheck_only, taken, took)

    def _unknown_drafts(
        self,
        builder: _ErrorBuilder,
        value: Any,
        checked: object = _ABSENT,
        kept: Mapping[tuple[str | int, ...], tuple[int, ...]] | None = None,
    ) -> list[_Draft]:
        """An `unknown_field` draft for each member the published schema does not allow (the
        parts of `value` that are `checked`'s own left out, see `_unknown_fields`), at its
        place as sent where `set_duplicates` dropped repeats before it (`kept`)."""
        # The object's own schema, not what `locate` makes of the key inside a union.
        drafts: list[_Draft] = []
        for parts, item, parent in _unknown_fields(self._published, value, checked):
            located = self._lookup.locate(parts)
            draft = builder.unknown_field(
                dataclasses.replace(
                    located,
                    pointer=pointer((_sent_loc(parts, value, kept) if kept else None) or parts),
                    parent=parent,
                ),
                item,
            )
            draft.union_ptr, draft.tag = _branch_tag(self._lookup, pointer(parts[:-1]), parent)
            drafts.append(draft)
        return drafts

    def _odd_decimal_text(self, call: CallLike) -> bool:
        """Whether a `Decimal` field holds a string Pydantic read that is not a JSON number
        (`"1_000"`): coercion refuses it, where Pydantic would have taken it silently."""
        try:
            return odd_decimal_text(loads_exact(_argument_text(call)), self.schema)
        except ValueError:
            return False

    def _bool_number_swap(self, call: CallLike) -> bool:
        """Whether an enum or const of numbers got `true`/`false`, or one of booleans got a
        number: strict Pydantic equates them (`Literal[1]` takes `true` as `1`); coercion
        refuses it, as the pre-check does."""
        raw = _raw_bytes(call)
        if not self._boolean_enums and b"true" not in raw and b"false" not in raw:
            return False
        try:
            return bool_number_swap(loads_exact(_argument_text(call)), self.schema)
        except ValueError:
            return False

    def _whole_float_in_enum(self, call: CallLike) -> bool:
        """Whether an integer enum or const got a whole number written as a float (`2.0`),
        which strict Pydantic takes as the member: coercion records it as `integral_number`,
        as it does for an integer field, or refuses it with that rule off."""
        return self._found_in(call, _FRACTION_OR_EXPONENT, whole_float_in_integer_enum)

    def _float_for_integer(self, call: CallLike) -> bool:
        """Whether a lax model's integer field got a number written as a float, which it
        would round into an int without a word."""
        return self._found_in(call, _FRACTION_OR_EXPONENT, float_for_integer)

    def _unix_timestamp_text(self, call: CallLike) -> bool:
        """Whether a date or date-time field holds a number as text (`"1700000000"`), which
        Pydantic took as a Unix time: coercion refuses it, as the pre-check does."""
        return self._found_in(call, _QUOTED_NUMBER, unix_timestamp_text)

    def _found_in(
        self,
        call: CallLike,
        hint: re.Pattern[bytes],
        found: Callable[[Any, Mapping[str, Any]], bool],
    ) -> bool:
        """`found(arguments, schema)`, the arguments read only when `hint` matches their raw
        text (a cheap test that most calls fail)."""
        if hint.search(_raw_bytes(call)) is None:
            return False
        try:
            return found(loads_exact(_argument_text(call)), self.schema)
        except ValueError:
            return False

    def _exact_input(self, call: CallLike) -> str | bytes:
        """What Pydantic validates for a call without a core error: its raw bytes when no digit
        needs protecting (a `str` would be re-encoded to UTF-8 by pydantic-core first)."""
        if not self._decimals:
            raw: object = getattr(call, "arguments_bytes", None)
            # `isspace` stops at the first other byte; `strip` would copy the whole text.
            if isinstance(raw, bytes) and raw and not raw.isspace():
                return raw
        return self._exact(_argument_text(call))

    def _exact(self, text_in: str) -> str:
        """The text Pydantic validates: the raw text, or with `Decimal` digits quoted."""
        if not self._decimals:
            return text_in
        # pydantic-core reads JSON numbers for Decimal fields through a float, so tools with
        # Decimal fields pay one exact parse per call to keep every digit the model wrote.
        try:
            value = loads_exact(text_in)
            quoted = quote_decimals(value, self.schema)
        except ValueError:
            return text_in
        # Nothing in a `Decimal` field (one left out, or set to null): the text as it came.
        return text_in if quoted is value else dumps_exact(quoted)

    def _repair(
        self,
        call: CallLike,
        text_in: str,
        initial: list[_Entry],
        builder: _ErrorBuilder,
        lang: Lang,
        precheck_only: Sequence[_Draft] = (),
        taken: BaseModel | None = None,
        took: bool = False,
    ) -> Outcome:
        try:
            value = loads_exact(text_in)
        except ValueError:
            value = call.value
            taken = None  # not read exactly: walked whole, as any call is
        result = coerce_arguments(
            value,
            self.schema,
            rules=self.rules,
            default_tz=self.default_tz,
            sets=self.model is not None,
            exact_ints=self.model is None,
            # A call Pydantic took as it is: only what can hold dict keys or sets is walked.
            focus=taken is not None,
            repairing=not took,
        )
        raw: object = result.value
        if not isinstance(raw, dict):
            # Still not an object (a bare string, an array, a number): nothing to validate.
            return not_object_outcome(call, lang=lang)
        fixed = cast(dict[str, Any], raw)
        if taken is not None and fixed is value and not result.coercions and not result.problems:
            # Every key and set as it should be: the model Pydantic made stands.
            return self._accept(call, taken, None, [], lang)
        drafts = [builder.from_problem(p) for p in result.problems]
        twice = _second_spellings(result.problems)
        if twice:
            # The `unique` refusal of a field's second key says what to fix there. A model
            # that forbids extra inputs also refuses the key as one ("no such field", which
            # would contradict the fields it lists), and the pre-check checks the value under
            # it: "send the field once" makes both moot, whether forbidden or not.
            initial = _without_second_keys(initial, twice)
            precheck_only = [d for d in precheck_only if not _under_second_key(d, twice)]
        if drafts:
            # A refusal inside a union's value (a naive timestamp in the tagged branch) is why
            # no branch took it: "expected an object" at the union would mislead.
            inside = [d.error.path for d in drafts]
            initial = _without_unions_above(initial, inside)
            precheck_only = _without_unions_above(precheck_only, inside)
        coercions = self._without_secret_keys(
            call, [self._redacted(c, builder) for c in result.coercions]
        )
        if not result.coercions and self.model is not None and initial:
            # Refusals come first: for the same field they carry a hint the plain error lacks.
            return self._reject(call, drafts + initial, coercions, lang, builder)
        if self.model is not None:
            try:
                instance = (
                    # Nothing changed in a call Pydantic took: the model it made.
                    taken
                    if taken is not None and fixed is value
                    else self._model_of(dumps_exact(quote_decimals(fixed, self.schema)))
                )
            except ValidationError as exc:
                found = exc.errors(include_url=False)
                if result.kept_items:
                    found = _as_sent(found, fixed, result.kept_items)
                drafts = drafts + _without_second_keys(builder.from_pydantic(found), twice)
                return self._reject(call, drafts, coercions, lang, builder)
            # Only Pydantic's errors were re-checked: a pre-check finding stands unless a
            # coercion changed or removed the value it is about (`unwrap` moves the fields);
            # inside a union, that value is the whole union member.
            drafts += [
                d
                for d in precheck_only
                if _unchanged_at(value, fixed, _union_root(self._lookup, d.error.path))
            ]
            if result.coercions:
                # A coercion may have brought members into view that nothing checked yet (an
                # object unwrapped from a wrapper key or read from a JSON string): a misspelled
                # field there would otherwise be dropped by `extra="ignore"` and the call run
                # with the default. In a call Pydantic took (whose whole text passed the
                # pre-check), the parts the coercions left as they were have none: only the rest
                # is read.
                checked = value if taken is not None else _ABSENT
                seen = {d.error.path for d in drafts}
                drafts += [
                    d
                    for d in self._unknown_drafts(builder, fixed, checked, result.kept_items)
                    if d.error.path not in seen
                ]
            if drafts:
                return self._reject(call, drafts, coercions, lang, builder)
            return self._accept(call, instance, None, coercions, lang)
        # Judged on the numbers as written: a float would make `999.9999999999999999` the
        # integer 1000 (coercion refuses it where it walks; this holds everywhere).
        fixed_text = dumps_exact(fixed)
        judged, rounded = _loads_judged(fixed_text)
        entries = self._judged_entries(judged, drafts, builder, _HELD_ERRORS)
        if entries:
            try:
                return self._reject(call, entries, coercions, lang, builder)
            except _Unseen:
                # More drafts at the fields reported than were held (many rules failing at
                # one field, or errors alike at many fields that read as one): from them all.
                again = [dataclasses.replace(d) for d in drafts]
                entries = self._judged_entries(judged, again, builder, None)
                return self._reject(call, entries, coercions, lang, builder)
        plain = json.loads(fixed_text) if rounded else judged
        return self._accept(call, None, plain, coercions, lang)

    def _judged_entries(
        self, judged: Any, refusals: list[_Draft], builder: _ErrorBuilder, held: int | None
    ) -> list[_Entry]:
        """The entries of a plain tool's report: the coercion `refusals` and the drafts for
        what its validator finds in `judged` that the report can reach (`_ErrorBuilder.judged`,
        `held` of them); none when both are none."""
        refused = {d.error.path for d in refusals if d.refusal}
        judge = self._jsonschema
        assert judge is not None
        found = builder.judged(judge.iter_errors(judged), judged, judge, refused, held)
        if not found.count and self._as_written is not None:
            # No unknown field; a `oneOf` whose open branches both take the value still
            # refuses it (`ambiguous`).
            judge = self._as_written
            found = builder.judged(judge.iter_errors(judged), judged, judge, refused, held)
        if not (refusals or found.users or found.held):
            return []
        return _ranked_entries(found, refusals, lambda error: builder.drafted(error, judged))

    def _redacted(self, coercion: Coercion, builder: _ErrorBuilder) -> Coercion:
        if (
            not self._holds_secrets
            and builder.redact is None
            and coercion.from_[:1] not in ("{", "[")
            and coercion.to[:1] not in ("{", "[")
        ):
            # Nothing to hide and no hook to call: the texts stand as written, and a call
            # with 100,000 coerced items is not located 100,000 times to learn that.
            return coercion
        located = self._lookup.locate(_split(coercion.path))
        if located.secret:
            return Coercion(coercion.path, REDACTED, REDACTED, coercion.rule)
        before = located
        if coercion.rule == "unwrap":
            # `{"params": {...}}`: the arguments one level down, under any wrapper key.
            wrapper = {"type": "object", "additionalProperties": located.node}
            before = dataclasses.replace(located, node=wrapper)
        return Coercion(
            coercion.path,
            builder.got_text(before, coercion.from_),
            builder.got_text(located, coercion.to, renumbered=coercion.rule == "set_duplicates"),
            coercion.rule,
        )

    def _accept(
        self,
        call: CallLike,
        instance: BaseModel | None,
        plain: Any,
        coercions: list[Coercion],
        lang: Lang,
    ) -> Outcome:
        if self.check is not None:
            arguments = instance if instance is not None else plain
            rejected = False
            try:
                verdict = self.check(arguments)
            except BusinessRuleError as exc:
                # A raise rejects, with or without reasons; only a returned verdict can pass.
                verdict, rejected = exc.reasons, True
            reasons = _check_reasons(self.tool, verdict)
            # A blank reason says nothing: returned alone, it is a pass, as `None` or `""` is.
            reasons = [reason for reason in reasons if str(reason).strip()]
            if reasons or rejected:
                secrets = self._secret_texts(arguments)
                return Outcome.business_failure(
                    call,
                    self.tool,
                    [without_values(str(reason), secrets) for reason in reasons],
                    lang=lang,
                )
        return Outcome.success(
            call,
            self.tool,
            model=instance,
            value=plain,
            coercions=coercions,
            lang=lang,
            secrets=self.secrets_of(instance if instance is not None else plain),
        )

    def secrets_of(self, arguments: Any) -> tuple[SecretStr, ...]:
        """The secret values of validated `arguments`, for `Outcome.secrets`: () unless the
        tool's schema marks something secret (then the arguments are walked once).

        Args:
            arguments: The validated model instance or plain data.

        Returns:
            Each secret value's text as a `SecretStr`.
        """
        if not self._holds_secrets:
            return ()
        return tuple(SecretStr(secret) for secret in self._secret_texts(arguments))

    def _secret_texts(self, arguments: Any) -> list[str]:
        """The text of every secret value in validated `arguments`: a `SecretStr`'s, and any
        value the schema marks secret (a plain tool's, or an item of a marked list). A check or
        a tool may quote the value it refused (`password ... is expired`)."""
        secrets: list[str] = []
        for path, value in string_leaves(arguments, scalars=True):
            if isinstance(value, (SecretStr, SecretBytes)):
                secrets.extend(secret_texts(value))
            elif value != "" and self._lookup.locate(path).secret:
                secrets.append(value if isinstance(value, str) else json.dumps(value))
        return secrets

    def call_secrets(self, call: CallLike) -> list[str]:
        """The text of every value the tool's schema marks secret in the arguments `call`
        sent, read as written (none when they are no JSON): what a tool's error quoting them
        must hide, whether or not the call validated.

        Args:
            call: A call to this tool.

        Returns:
            The secret values' texts.
        """
        return self._call_secrets(call)[1]

    def _call_secrets(self, call: CallLike) -> tuple[Any, list[str]]:
        """The call's arguments as written (`_ABSENT` when they are no JSON) and `call_secrets`."""
        if not self._holds_secrets:
            return _ABSENT, []
        try:
            arguments = loads_exact(_argument_text(call))
        except ValueError:
            return _ABSENT, []
        return arguments, self._secret_texts(arguments)

    def _without_secret_values(
        self, call: CallLike, errors: list[FieldError], ask_user: list[str]
    ) -> tuple[list[FieldError], list[str]]:
        """`errors` and `ask_user` with every secret value of the call's arguments hidden
        wherever it shows: a validator may quote it in its message (`hint`), and the model may
        send it again under an unknown key (`got`) or as a key (`path`), where the field's own
        redaction does not reach. `expected` is left whole: it is the schema's own words, which
        the model has been shown, and a short secret (`a`) would cut into them (`[redacted]
        string matching`)."""
        arguments, secrets = self._call_secrets(call)
        if not secrets:
            return errors, ask_user

        def hide(text: str | None) -> str | None:
            return None if text is None else without_values(text, secrets)

        hidden = [
            dataclasses.replace(
                e,
                path=_keys_hidden(e.path, arguments, secrets),
                got=hide(e.got),
                hint=hide(e.hint),
            )
            for e in errors
        ]
        asked = [dotted_without_values(field, secrets) for field in ask_user]
        return hidden, asked

    def _without_secret_keys(self, call: CallLike, coercions: list[Coercion]) -> list[Coercion]:
        """`coercions` with each key in their paths that quotes a secret of the call hidden,
        as in error paths (`{"sk-live-1": "5"}` for a `dict[str, int]` beside the key), and
        each long key cut as there."""
        arguments, secrets = self._call_secrets(call) if coercions else (_ABSENT, [])
        if secrets:
            coercions = [
                dataclasses.replace(c, path=_keys_hidden(c.path, arguments, secrets))
                for c in coercions
            ]
        return _paths_cut(coercions)

    def _reject(
        self,
        call: CallLike,
        drafts: Sequence[_Entry],
        coercions: list[Coercion],
        lang: Lang,
        builder: _ErrorBuilder,
    ) -> Outcome:
        entries: list[_Entry] = builder.with_range_hints(list(drafts))
        if self._lookup.asks_user:
            entries = [builder.asked_of_user(e) if isinstance(e, _Draft) else e for e in entries]
        errors, ask_user = _finish_errors(entries, self._lookup, lang, builder.written_at)
        errors, ask_user = self._without_secret_values(call, errors, ask_user)
        errors = _paths_cut(errors)
        if ask_user:
            return Outcome(
                ok=False,
                kind="needs_clarification",
                tool=self.tool,
                call_id=call.id,
                errors=errors,
                coercions=coercions,
                retryable=False,
                error_type="needs_clarification",
                message=text("msg.needs_clarification", lang, fields=", ".join(ask_user)),
                ask_user=ask_user,
                lang=lang,
            )
        return Outcome(
            ok=False,
            kind="model_error",
            tool=self.tool,
            call_id=call.id,
            errors=errors,
            coercions=coercions,
            retryable=True,
            error_type="validation",
            message=text("msg.validation", lang),
            lang=lang,
        )


_FUNCTION_SCHEMAS = frozenset(
    {"function-before", "function-after", "function-plain", "function-wrap"}
)


def _refusals_sendable(schema: object) -> object:
    """A copy of a Pydantic core schema with each validator function wrapped by
    `_sendable_refusal` (serializers, under `serialization`, left as they are)."""
    if isinstance(schema, list):
        return [_refusals_sendable(item) for item in cast(list[object], schema)]
    if not isinstance(schema, dict):
        return schema
    node = cast(dict[str, Any], schema)
    copied = {
        key: item if key == "serialization" else _refusals_sendable(item)
        for key, item in node.items()
    }
    function = node.get("function")
    kind = node.get("type")
    if kind in _FUNCTION_SCHEMAS and isinstance(function, dict):
        own = cast(dict[str, Any], function)
        copied["function"] = {**own, "function": _sendable_refusal(own["function"])}
    elif kind == "model" and isinstance(node.get("cls"), type):
        # pydantic-core takes a built model's own validator (its `__pydantic_validator__`, the
        # functions unwrapped) for a model node whose class is complete: the copy builds its
        # instances as a plain class of the same name. A validator that needs the model's
        # methods then fails, and the refusal stays where it was found (`_refuse_writably`).
        model = cast(type, node["cls"])
        names = {"__module__": model.__module__, "__qualname__": model.__qualname__}
        copied["cls"] = type(model.__name__, (), names)
    elif kind == "dataclass":
        # Likewise for a built Pydantic dataclass, which a `generic_origin` keeps from it.
        copied["generic_origin"] = node.get("generic_origin") or node.get("cls")
    return copied


def _sendable_refusal(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` (a validator) with a refusal whose message holds a lone surrogate raised
    again with the message made sendable, as the same kind of refusal to Pydantic."""

    def validator(*args: Any) -> Any:
        try:
            return function(*args)
        except ValidationError:
            raise  # a wrap validator's handler: the inner validators' refusals, already seen to
        except (ValueError, AssertionError) as exc:
            sendable = _sendable_error(exc)
            if sendable is None:
                raise
        # Raised here, not in the handler: pydantic-core writes down the exception it handled
        # as well (`__context__`), which holds the message it cannot encode.
        raise sendable

    return validator


def _sendable_error(exc: ValueError | AssertionError) -> Exception | None:
    """The same kind of refusal as `exc` with each lone surrogate in its message replaced, or
    None when pydantic-core can write `exc` down as it is."""
    if isinstance(exc, PydanticCustomError):
        if _encodable(exc.message()):
            return None
        context = {
            key: sendable_text(item) if isinstance(item, str) else item
            for key, item in (exc.context or {}).items()
        }
        # The type and template are the application's own, made sendable (not literals).
        kind: Any = exc.type
        template: Any = sendable_text(exc.message_template)
        return PydanticCustomError(kind, template, context)
    message = str(exc)
    if _encodable(message):
        return None
    return (AssertionError if isinstance(exc, AssertionError) else ValueError)(
        sendable_text(message)
    )


def _encodable(message: str) -> bool:
    """Whether pydantic-core can write `message` down (it holds no lone surrogate)."""
    return sendable_text(message) is message


def _unreadable_json(pydantic_errors: Sequence[Any], text: str) -> bool:
    """Whether Pydantic could not read `text` though it is JSON (nested past its recursion
    limit, a number its float cannot hold): the call is then too large for it, not invalid in
    a way the model could fix by reading the raw text back. At the root only: a `Json[...]`
    field's own text is the model's to fix."""
    unreadable = any(e.get("type") == "json_invalid" and not e.get("loc") for e in pydantic_errors)
    return unreadable and _is_json(text)


def _is_json(text: str) -> bool:
    """Whether `text` is JSON (a text too deep for Python's own parser counts as JSON, and so
    does one with an integer longer than Python turns into an int from text)."""
    try:
        loads_exact(text)
    except RecursionError:
        return True
    except ValueError as exc:
        return _past_int_digit_limit(exc)
    return True


def _past_int_digit_limit(exc: BaseException) -> bool:
    """Whether `exc` is CPython refusing to turn a long run of digits into an int (4,300 unless
    set otherwise), which an assembler with a higher `max_number_digits` lets through."""
    return isinstance(exc, ValueError) and "integer string conversion" in str(exc)


def _listed_tools(tools: Sequence[str], name: str, lang: Lang) -> str:
    """The tool names a payload lists: all of them up to `MAX_LISTED_TOOLS`, else those closest
    to `name` (the name the model got wrong), closest first, and how many are left out. Every
    name is in the request's tool list already; a payload that repeated 300 of them was 20 KB,
    sent again in every repair round."""
    chosen = list(tools)
    if len(chosen) > MAX_LISTED_TOOLS:
        if name:
            cut = shown_text(name)  # a name of megabytes would take seconds to compare
            chosen = difflib.get_close_matches(cut, chosen, n=MAX_LISTED_TOOLS, cutoff=0)
        else:
            chosen = chosen[:MAX_LISTED_TOOLS]
    listed = ", ".join(json.dumps(n, ensure_ascii=False) for n in chosen)
    left = len(tools) - len(chosen)
    return listed + text("list.more", lang, count=left) if left else listed


def outcome_for_call_error(
    call: CallLike, error: CallErrorLike, *, tools: Sequence[str], lang: Lang = "en"
) -> Outcome | None:
    """The outcome for a core error that needs no schema, or None for schema-level errors.

    Args:
        call: The call.
        error: Its error.
        tools: The available tool names (listed for `unknown_tool` and `missing_name`).
        lang: Language of the texts.

    Returns:
        The outcome, or None when validation must look at the schema (`schema_violation`,
        `not_object`).
    """
    kind = error.kind
    tool = call.name or ""
    names = _listed_tools(tools, tool, lang)

    def fail(
        error_type: str,
        message: str,
        *,
        retryable: bool = True,
        hint: str | None = None,
        errors: Sequence[FieldError] = (),
    ) -> Outcome:
        return Outcome(
            ok=False,
            kind="model_error",
            tool=tool,
            call_id=call.id,
            retryable=retryable,
            error_type=error_type,
            message=message,
            hint=hint,
            errors=list(errors),
            lang=lang,
        )

    if kind == "truncated":
        return fail("truncated", text("msg.truncated", lang), hint=text("hint.truncated", lang))
    if kind == "filtered":
        return fail("filtered", text("msg.filtered", lang), retryable=False)
    if kind == "lost_event":
        # Nothing the model did: the same call sent again is the fix.
        return fail("lost_event", text("msg.lost_event", lang))
    if kind == "arguments_mismatch":
        # The stream contradicted itself about the arguments, not the model: sent again, the
        # call is read whole.
        return fail("arguments_mismatch", text("msg.arguments_mismatch", lang))
    if kind == "free_form_call":
        # A custom tool's free-form input (Responses `custom_tool_call`): no JSON-schema tool
        # of the toolset takes it, and calling it again cannot change that.
        name = json.dumps(shown_text(tool), ensure_ascii=False)
        return fail("free_form_call", text("msg.free_form_call", lang, name=name), retryable=False)
    if kind == "unknown_tool":
        name = json.dumps(shown_text(tool), ensure_ascii=False)
        return fail("unknown_tool", text("msg.unknown_tool", lang, name=name, names=names))
    if kind == "missing_name":
        return fail("missing_name", text("msg.missing_name", lang, names=names))
    if kind in ("too_deep", "too_large"):
        return fail("too_large", text("msg.too_large", lang), hint=text("hint.too_large", lang))
    if kind in _GRAMMAR_KINDS:
        key = f"json.{kind}"
        detail = text(key if key in _MESSAGE_KEYS else "json.invalid", lang)
        # A repeated key is the one grammar error with a field to name: the member written
        # twice, which the model can write once.
        named = (
            [FieldError(error.path, "unique", text("expected.distinct_keys", lang))]
            if kind == "duplicate_key" and error.path
            else []
        )
        return fail(
            "invalid_json",
            text("msg.invalid_json", lang, detail=detail, offset=error.offset),
            errors=named,
        )
    if kind in ("schema_violation", "not_object"):
        return None
    return fail(
        "invalid_json",
        text("msg.invalid_json", lang, detail=text("json.invalid", lang), offset=error.offset),
    )


def wrong_tool_type_outcome(call: CallLike, *, custom: bool, lang: Lang = "en") -> Outcome:
    """The outcome for a call of the other kind than its tool's: a function call (JSON
    arguments) to a custom tool (`custom`: free-form input), or a custom tool call to a JSON
    tool. The model can call the tool again the right way."""
    name = json.dumps(shown_text(call.name or ""), ensure_ascii=False)
    key = "msg.takes_free_form" if custom else "msg.takes_json"
    return _retryable_error(call, "wrong_tool_type", text(key, lang, name=name), lang)


def not_object_outcome(call: CallLike, *, lang: Lang = "en") -> Outcome:
    """The outcome for arguments that are valid JSON but not an object."""
    return _retryable_error(call, "not_object", text("msg.not_object", lang), lang)


def _retryable_error(call: CallLike, error_type: str, message: str, lang: Lang) -> Outcome:
    """A model error about the whole call, which the model can fix by calling again."""
    return Outcome(
        ok=False,
        kind="model_error",
        tool=call.name or "",
        call_id=call.id,
        retryable=True,
        error_type=error_type,
        message=message,
        lang=lang,
    )


def _message_keys() -> frozenset[str]:
    from toolwire.payloads import MESSAGES

    return frozenset(MESSAGES)


_MESSAGE_KEYS = _message_keys()
