"""Idempotency keys and argument fingerprints.

Canonical form (what the fingerprint hashes): JSON with sorted keys and no whitespace; numbers
written exactly from their value, not their spelling, so ``1``, ``1.0``, ``Decimal("1.00")`` and
``1e0`` are one argument while ``Decimal("0.1")`` and the float ``0.1`` differ only if their values
differ (the float is read through its shortest ``repr``, which is what the model sent). ``-0`` is
``0``; NaN and infinities become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

The fingerprint is taken over the *validated* arguments, so the rule for duplicate JSON keys is
the validator's (last one wins, as in pydantic/jiter and ``json.loads``) and defaults filled in by
validation count as sent. A model is read field by field (its ``model_fields``, then any extra
fields), as ``model_dump()`` names them but without its serializers: those are written for
output, not identity, and may drop what tells two operations apart (a ``field_serializer`` that
masks an account number, ``Field(exclude=True)``, a ``model_serializer``). Computed fields are
left out as well: they follow from the fields. A model with none of these gets the fingerprint
of its ``model_dump()``.

``redacted_fingerprint`` is the same digest with every secret value written as one marker: the
``args_hash`` that logs, spans and results show. ``fingerprint`` itself, which the ledger keeps,
depends on secret values, so that calls differing only in one are different operations.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import hashlib
import hmac
import json
import math
import uuid
from collections.abc import Callable, Collection, Mapping
from decimal import Decimal
from itertools import chain
from operator import methodcaller
from typing import Any, cast

from pydantic import BaseModel, RootModel, SecretBytes, SecretStr
from pydantic_core import to_jsonable_python

__all__ = [
    "KEY_VERSION",
    "MIN_FINGERPRINT_KEY_BYTES",
    "canonical_json",
    "derive_key",
    "fingerprint",
    "fingerprints",
    "redacted_fingerprint",
]

KEY_VERSION = "toolwire.v1"
# What `redacted_fingerprint` writes for a secret value.
_HIDDEN_JSON = '"[redacted]"'
# The secret texts to hide while encoding (`SecretStr`s too whenever it is not None).
_Hidden = frozenset[str] | None
_SEP = "\x1f"  # unit separator between the parts of a key
_PLAIN_EXPONENT = 100
# Integers below this have at most _PLAIN_EXPONENT trailing zeros: str() is their canonical form.
_PLAIN_INT = 10 ** (_PLAIN_EXPONENT + 1)


def _number(value: Decimal) -> str:
    if value.is_nan():
        return '"NaN"'
    if value.is_infinite():
        return '"-Infinity"' if value < 0 else '"Infinity"'
    if value.is_zero():
        return "0"
    # Strip trailing zeros by hand: Decimal.normalize() rounds to the context precision (28
    # digits), which would make distinct amounts collide.
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    text: str
    if exponent > _PLAIN_EXPONENT or exponent < -_PLAIN_EXPONENT:
        # "1e999999999" must not expand to a billion digits; the choice depends only on the
        # value, so the form stays canonical.
        text = f"{digits}e{exponent}"
    elif exponent >= 0:
        text = digits + "0" * exponent
    else:
        point = len(digits) + exponent
        text = f"{digits[:point]}.{digits[point:]}" if point > 0 else "0." + "0" * -point + digits
    return "-" + text if sign else text


def _float(value: float) -> str:
    """The canonical text of a float: its shortest ``repr`` read as a Decimal (what the model
    sent). A float's fixed-point repr (no exponent: 1e-4 <= |value| < 1e16) is that text
    already, but for the ".0" of a whole number and the sign of -0.0: written without the
    Decimal, which costs more than the rest of a float's encoding."""
    text = repr(value)
    if type(value) is float and "e" not in text and "n" not in text:
        if text.endswith(".0"):
            return "0" if text == "-0.0" else text[:-2]
        return text
    if math.isnan(value) or math.isinf(value):
        return _number(Decimal(value))
    return _number(Decimal(text))


def _encode(value: Any, out: list[str], hidden: _Hidden = None) -> None:
    if hidden is not None and _is_hidden(value, hidden):
        out.append(_HIDDEN_JSON)
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        # A larger integer is written like the equal float or Decimal ("1e200"), and without
        # str(), which refuses integers past CPython's 4,300-digit limit.
        out.append(str(value) if -_PLAIN_INT < value < _PLAIN_INT else _number(Decimal(value)))
    elif isinstance(value, float):
        out.append(_float(value))
    elif isinstance(value, Decimal):
        out.append(_number(value))
    elif isinstance(value, RootModel):
        _encode(cast(RootModel[Any], value).root, out, hidden)
    elif isinstance(value, BaseModel):
        _encode(_model_fields(value), out, hidden)
    elif isinstance(value, Mapping):
        mapping = cast(Mapping[Any, Any], value)
        # Ordered by key alone: two keys with one text (`1` and `"1"`) must not make the sort
        # compare their values, which may not be comparable (two dicts).
        items = sorted(((str(k), v) for k, v in mapping.items()), key=lambda kv: kv[0])
        out.append("{")
        for i, (key, item) in enumerate(items):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(item, out, hidden)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if i:
                out.append(",")
            _encode(item, out, hidden)
        out.append("]")
    elif isinstance(value, (set, frozenset)):
        _encode(sorted(_canonical(v, hidden) for v in value), out, hidden)  # pyright: ignore[reportUnknownVariableType]
    elif isinstance(value, enum.Enum):
        _encode(value.value, out, hidden)
    elif isinstance(value, (dt.datetime, dt.date, dt.time)):
        out.append(json.dumps(value.isoformat()))
    elif isinstance(value, uuid.UUID):
        out.append(json.dumps(str(value)))
    elif isinstance(value, (bytes, bytearray)):
        out.append(json.dumps(base64.b64encode(bytes(value)).decode("ascii")))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Field by field, as a model (a pydantic dataclass's serializers are skipped too).
        _encode({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, out, hidden)
    elif isinstance(value, (SecretStr, SecretBytes)):
        # Its value, as for a secret sent as a plain str: pydantic's JSON form is the same mask
        # for every secret, and two calls that differ only in a card token would share a
        # fingerprint, the second answered with the first's result. Only the digest is kept.
        _encode(value.get_secret_value(), out, hidden)
    else:
        _encode(to_jsonable_python(value, fallback=repr), out, hidden)


def _model_fields(model: BaseModel) -> dict[str, Any]:
    """A model's validated values by field name, extra fields included, read from the instance
    and not through ``model_dump``: a serializer or an exclusion would make two different
    operations one (see the module docstring)."""
    # The class's `__pydantic_fields__` and the instance's `__pydantic_extra__`: what
    # `model_fields` and `model_extra` return, without their descriptors' Python calls.
    fields: dict[str, Any] = getattr(type(model), "__pydantic_fields__", {})
    values = {name: getattr(model, name) for name in fields}
    extra = model.__pydantic_extra__
    if extra:
        values.update({k: v for k, v in extra.items() if k not in values})
    return values


def _canonical(value: Any, hidden: _Hidden) -> str:
    out: list[str] = []
    _encode(value, out, hidden)
    return "".join(out)


# Types orjson writes exactly as `_encode` does (strings escaped as `json.dumps` does with
# ensure_ascii=False, integers in its 64-bit range as `str`; past it orjson raises and
# `_canonical_bytes` falls back). Exact types only: a subclass may mean more (an IntEnum).
_ORJSON_LEAVES = frozenset({str, int, bool, type(None)})
_STR: frozenset[type] = frozenset({str})
_DICT: frozenset[type] = frozenset({dict})
_VALUES = methodcaller("values")


def flat_rows(
    rows: list[Any], kinds: set[type], values: frozenset[type], keys: frozenset[type] | None = None
) -> bool:
    """Whether ``rows``, a list whose items are of the types ``kinds``, holds dicts only, with
    values of the types ``values`` only (and keys of the types ``keys``). Found by C-level
    scans with no Python step per value: a list of flat objects is the usual shape of a tool's
    rows, and the digest and the copy of arguments take it as a whole."""
    return (
        kinds <= _DICT
        and (keys is None or set(map(type, chain.from_iterable(rows))) <= keys)
        and set(map(type, chain.from_iterable(map(_VALUES, rows)))) <= values
    )


def _plain(value: Any, slow: list[Any], fragment: Callable[[str | bytes], Any]) -> Any:
    """``value``, or a copy of what differs, that ``orjson.dumps(OPT_SORT_KEYS)`` writes as its
    canonical text: what orjson would write otherwise (a float, a model, a non-str key) becomes
    a ``fragment`` (``orjson.Fragment``) of `_encode`'s text, and but for a float is appended to
    ``slow``. Parts that need no change are shared, so plain JSON-like arguments cost one
    C-level type scan per container."""
    kind = type(value)  # pyright: ignore[reportUnknownVariableType]
    if kind in _ORJSON_LEAVES:
        return value
    if kind is dict:
        mapping: dict[Any, Any] = value
        if set(map(type, mapping)) <= _STR:
            if set(map(type, mapping.values())) <= _ORJSON_LEAVES:
                return mapping
            changed: dict[Any, Any] | None = None
            for key, item in mapping.items():
                # A float, the usual value to change, without a call of its own.
                if type(item) is float:
                    new = fragment(_float(item))
                elif type(item) in _ORJSON_LEAVES:
                    continue
                else:
                    new = _plain(item, slow, fragment)
                if new is not item:
                    if changed is None:
                        changed = dict(mapping)
                    changed[key] = new
            return mapping if changed is None else changed
    elif kind is list or kind is tuple:
        items: list[Any] = value
        kinds = set(map(type, items))
        if kinds <= _ORJSON_LEAVES:
            return items
        if flat_rows(items, kinds, _ORJSON_LEAVES, _STR):
            return items
        return [
            item
            if type(item) in _ORJSON_LEAVES
            else fragment(_float(item))
            if type(item) is float
            else _plain(item, slow, fragment)
            for item in items
        ]
    elif kind is float:
        return fragment(_float(value))
    elif isinstance(value, BaseModel) and not isinstance(value, RootModel):
        return _plain(_model_fields(value), slow, fragment)
    slow.append(value)
    return fragment(_utf8(_canonical(value, None)))


def _canonical_bytes(value: Any) -> tuple[bytes, bool]:
    """``_utf8(canonical_json(value))``, and whether every value in it is one `_encode` writes
    without looking at secrets (no `SecretStr`, nothing but JSON-like values and models): the
    redacted text with no declared secrets is then the same."""
    # Imported at first use, as the core looks orjson up: importing toolwire loads no JSON
    # library it may not need (a process that never executes a tool).
    import orjson

    slow: list[Any] = []
    try:
        plain = _plain(value, slow, orjson.Fragment)
        return orjson.dumps(plain, option=orjson.OPT_SORT_KEYS), not slow
    except Exception:
        # orjson refuses what its fast path cannot write exactly (an integer past 64 bits, a lone
        # surrogate, nesting past 255): the encoder gives the text, or the error, as before.
        return _utf8(_canonical(value, None)), False


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of ``value`` (see the module docstring for the rules).

    Args:
        value: A pydantic model, a mapping, or any JSON-like Python value.

    Returns:
        Compact JSON with sorted keys and exact numbers.
    """
    return _canonical_bytes(value)[0].decode("utf-8", "surrogatepass")


MIN_FINGERPRINT_KEY_BYTES = 16
"""The shortest `fingerprint` key accepted (128 bits)."""


def fingerprint(arguments: Any, key: bytes | None = None) -> str:
    """Return the sha256 hex digest of ``canonical_json(arguments)`` (64 characters).

    Args:
        arguments: The validated arguments.
        key: A secret of the deployment: the digest is then an HMAC-SHA256 under it, which
            nobody without the key can recompute from guessed arguments (a secret argument of
            few possible values, a PIN, cannot be found by trying them all against it).
    """
    return _keyed(_canonical_bytes(arguments)[0], key)


def _keyed(data: bytes, key: bytes | None) -> str:
    if key is None:
        return hashlib.sha256(data).hexdigest()
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def fingerprints(
    arguments: Any, key: bytes | None = None, secrets: Collection[str] = ()
) -> tuple[str, str]:
    """``(fingerprint(arguments, key), redacted_fingerprint(arguments, secrets))``, from one
    reading of the arguments when nothing in them is secret.
    """
    data, plain = _canonical_bytes(arguments)
    keyed = _keyed(data, key)
    if plain and not secrets:
        # Without a key both digests are the sha256 of the same bytes: hashed once.
        return keyed, keyed if key is None else hashlib.sha256(data).hexdigest()
    return keyed, redacted_fingerprint(arguments, secrets)


def redacted_fingerprint(arguments: Any, secrets: Collection[str] = ()) -> str:
    """``fingerprint`` with every secret value written as the same marker: a digest that may be
    shown (logs, spans, results) without giving away a secret to whoever can guess the other
    arguments and try the few values a PIN or a CVV can take.

    Args:
        arguments: As for ``fingerprint``.
        secrets: The text of values that are secret besides ``SecretStr``/``SecretBytes`` ones
            (a plain tool's ``x-secret`` values, as ``Outcome.secrets`` holds them): a string
            equal to one, or a number written as one, is hidden.

    Returns:
        A sha256 hex digest, equal to ``fingerprint(arguments)`` when nothing is secret.
    """
    if not secrets:
        data, plain = _canonical_bytes(arguments)
        if plain:
            return hashlib.sha256(data).hexdigest()
    text = _canonical(arguments, frozenset(secrets))
    return hashlib.sha256(_utf8(text)).hexdigest()


def _is_hidden(value: Any, hidden: frozenset[str]) -> bool:
    if isinstance(value, (SecretStr, SecretBytes)):
        return True
    if not hidden or isinstance(value, bool):
        return False
    if isinstance(value, str):
        return value in hidden
    if isinstance(value, (int, float)):
        # A plain tool's secret number is known by its JSON text.
        return json.dumps(value) in hidden
    if isinstance(value, Decimal):
        return str(value) in hidden
    return False


def _utf8(text: str) -> bytes:
    # A lone surrogate (json.loads accepts "\ud800") is written as its 3-byte form, which no
    # valid text encodes to: still one digest per text, and no UnicodeEncodeError.
    return text.encode("utf-8", "surrogatepass")


def derive_key(
    *,
    tool: str,
    namespace: str = "",
    session_id: str = "",
    call_id: str | None = None,
    business_key: Any = None,
    request_id: str = "",
    arguments_fingerprint: str | None = None,
) -> str:
    """Derive a fixed-length (64 hex chars) idempotency key.

    Precedence: a business key value (scoped to namespace and tool, not to the session, so the
    same order id from two conversations is one operation); else session + ``tool_call_id``; else,
    when the provider gave no call id, session + request + argument fingerprint, so identical
    writes in one request are treated as one (duplicate events are far more common than a model
    asking twice for the very same write in one turn).

    Args:
        tool: Tool name.
        namespace: Tenant or deployment scope, prefixed to every key.
        session_id: Session identifier.
        call_id: Provider ``tool_call_id``.
        business_key: Value of the tool's business key field, if it declares one.
        request_id: Request identifier (used only for the fallback).
        arguments_fingerprint: Argument fingerprint (used only for the fallback).

    Returns:
        A lowercase sha256 hex digest.
    """
    if business_key is not None:
        parts = [KEY_VERSION, namespace, "business", tool, canonical_json(business_key)]
    elif call_id:
        parts = [KEY_VERSION, namespace, "call", session_id, tool, call_id]
    else:
        parts = [
            KEY_VERSION,
            namespace,
            "args",
            session_id,
            request_id,
            tool,
            arguments_fingerprint or "",
        ]
    if any(_SEP in part for part in parts):
        # An id holding the separator would let two different sets of parts join to one text
        # (session "s\x1fw" + tool "x" and session "s" + tool "w", call "x\x1f..."): such parts
        # are written as a JSON array, which escapes it and cannot equal a plain join (that
        # starts with KEY_VERSION). Keys of ordinary ids are unchanged.
        return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()
    return hashlib.sha256(_utf8(_SEP.join(parts))).hexdigest()
