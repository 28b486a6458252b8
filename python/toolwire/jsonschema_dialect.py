"""The `jsonschema` validator classes that validate plain-dict tools.

`jsonschema` reads some keywords differently from the JSON Schema texts that real tools carry,
and from toolwire's own pre-check, which must never reject what validation accepts:

* `multipleOf` divides binary floats: `19.99 / 0.01` is `1998.9999999999998`, so a price that
  is a whole number of cents fails `multipleOf: 0.01`.
* `pattern`, `patternProperties` (and `additionalProperties` beside it, and the members
  `unevaluatedProperties` counts as evaluated by one) and the `regex` format go through
  Python's `re`, which does not know the Unicode property classes (`\\p{L}`,
  `\\p{Lu}`, `\\P{N}`) that tool schemas written for ECMA-262 engines use: the schema itself
  is then refused at `Toolset` build. Such a pattern is compiled with the `regex` module
  instead, which reads `re`'s syntax the same way and adds property classes and ECMA's
  `(?<name>...)` groups. A pattern that neither compiles is a broken schema and is still
  refused. Python's `$` also matches before a final newline, ECMA-262's (and Pydantic's) only
  at the end: a `$` is compiled as `\\Z`, so `^[a-z]+$` refuses `"main\\n"` here too. `\\d`,
  `\\w` and `\\b` take ASCII only, and `\\s` ECMA-262's white space, as the JSON-Schema-Test-
  Suite's `ecmascript-regex.json` has them (Python's take every script's digits and letters).
  Before any engine sees it, a pattern must be ECMA-262 as JSON Schema reads it (with the `u`
  flag): the core's parser decides (`toolwire._core.pattern_error`), as it does for the
  pre-check, so `(?i)abc`, `(?P<name>x)`, `\\Z` or `a++`, which Python's engines would run with
  a meaning of their own, refuse the schema at `Toolset` build (`ForeignPatternError`). An
  escaped punctuation mark that is no syntax character (`\\@`, `\\#`, `\\-`) is the mark
  itself, as every engine reads it, though the `u` flag refuses it.
* The format checkers read most formats with a regex ending in Python's `$` too
  (`rfc3339-validator` for `date-time` and `time`, `fqdn` for `hostname` when installed), so
  `"2024-01-02T03:04:05Z\\n"` passed as a date-time. No format without line breaks in its
  grammar takes a final newline here, as Pydantic's types take none.
* OpenAPI 3.0's `nullable: true` (Gemini function declarations, schemas converted from
  OpenAPI documents) is not JSON Schema, so `jsonschema` ignores it and refuses the `null` its
  author allowed. Here it admits `null` past `type` and `enum`, as the pre-check does.
* `jsonschema` runs each pattern search to its end, and a backtracking engine may take hours on a
  few dozen bytes of model output: each search is stopped after `PATTERN_SECONDS`, all those of one
  validation after `budget_seconds` (`pattern_budget`: half a second and 10 microseconds per
  character of the call's arguments, linear in its size), and one stopped counts against the
  value: as no match for `pattern` and for `additionalProperties` beside patterns, as a match for
  `patternProperties`, whose schema then holds the member. `regex` reads its `timeout` on this
  process's CPU time (C's `clock()`), not on the wall clock: a process given a tenth of a core (a
  loaded host) searched for ten times `PATTERN_SECONDS`. A search therefore gets a tenth of its time
  first, and, if that runs out, the CPU time the process was seen to get in the wall-clock time left
  (`_bounded_search`). `regex` looks at the clock only between steps of its own, and comparing a
  long run of literal text is one: `^(?:a{2000}){1,50}$` (the 2,000 `a`s written out) took seconds
  on a few thousand characters despite the timeout, and a 50,000-character alternation of words as
  long to compile. A pattern longer than `MAX_PATTERN_CHARS`, or with a run of literal text longer
  than `MAX_PATTERN_LITERAL`, is therefore not compiled (`PatternTooLargeError`): the schema is
  refused at `Toolset` build, as one that does not compile is. So is one whose counted repeats
  unroll past `MAX_PATTERN_UNROLLED` characters, which `regex` could not even compile in bounded
  time and memory.
* A definition that reaches itself again for the same value (`A = anyOf[integer, $ref A]`,
  or `Expr` taking a `Group` that is only `anyOf: [Expr]`) sends `jsonschema` round that loop
  until Python's recursion limit. Such a reference, met again while its own evaluation on the
  same value is still running, is read as not matching: the loop can add nothing that the
  other branches do not already give, so `A` above accepts exactly the integers (the least
  reading that satisfies the schema, as a grammar reads a left-recursive rule).

One extended class per draft, shared by every tool.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import math
import os
import re
import time
import warnings
from collections.abc import Generator, Iterator
from decimal import Decimal
from typing import Any, Protocol, cast

import jsonschema
import jsonschema.validators
import regex
from referencing.jsonschema import lookup_recursive_ref

from toolwire._core import pattern_error

__all__ = [
    "ECMA_PATTERN",
    "ForeignPatternError",
    "PatternTooLargeError",
    "ReferenceLoop",
    "RefusedPatternError",
    "WrittenFloat",
    "budget_seconds",
    "check_pattern",
    "extended_validator",
    "is_multiple",
    "pattern_budget",
    "search",
]


PATTERN_SECONDS = 0.05
"""How long one search of a pattern may take. A backtracking engine takes time exponential in
the text on some patterns (`^(\\w+\\s?)*$` on a long word and a `!`), and the text is model
output: a search that runs out of time counts as no match, so the value is refused."""

PATTERN_BUDGET_SECONDS = 0.5
"""How long all the searches of a small call's validation (`pattern_budget`) may take
together; `PATTERN_BUDGET_SECONDS_PER_CHAR` more for each character of its arguments. With a
bound per search alone, a call that repeats a slow string in every item of an array costs
`PATTERN_SECONDS` per item: seconds for a few kilobytes of model output. Once it is spent,
every further search of that validation counts as run out of time without running."""

PATTERN_BUDGET_SECONDS_PER_CHAR = 10e-6
"""How much longer the searches of a validation may take for each character of the call's
arguments (the unit the searches read). A fixed budget refused large valid calls: 150,000 tags
of `"abc"` under `^[a-z]+$` (1 MB) are 150,000 searches of a few microseconds each, more on a
loaded host, and every one past the budget counted as no match, blaming valid strings. A
budget linear in the arguments still bounds what a call can cost: its searches take no more
time than a constant per character, as the rest of its validation (reading and walking 1 MB
took seconds), so model output of a given size cannot make validation take longer than a
constant factor of what reading it takes; and one slow search is still stopped after
`PATTERN_SECONDS`."""


MAX_PATTERN_CHARS = 5_000
"""The longest `pattern` (or `patternProperties` name) compiled, in characters: a longer one
(an alternation of thousands of words) takes seconds to compile and overruns the timeout of a
search."""

MAX_PATTERN_LITERAL = 256
"""The longest run of literal text a compiled pattern may hold (characters, an escaped one such
as `\\.` among them): `regex` compares such a run without looking at the clock, and a search
that repeats one overran its timeout a hundredfold from about 1,000 characters."""


MAX_PATTERN_UNROLLED = 50_000
"""The most characters a pattern's counted repeats may unroll to (`x{1000}` is 1,000, and
`(?:x{1000}){1000}` a million): `regex` compiles each repeat its least count of times, so
`x{100000000}` took gigabytes of memory to compile (a host killed the process registering the
tool), and `(?:(?:x{10}){10}){10000}` a second. A count's upper bound is not unrolled."""


class RefusedPatternError(regex.error):
    """A pattern validation refuses to compile, with `reason`, what a pattern there must be. A
    `regex.error`, so it refuses the schema where a pattern that does not compile is refused."""

    def __init__(self, message: str, pattern: str, reason: str) -> None:
        super().__init__(message, pattern)
        self.reason = reason


class PatternTooLargeError(RefusedPatternError):
    """A pattern longer than `MAX_PATTERN_CHARS`, with a run of literal text longer than
    `MAX_PATTERN_LITERAL`, or whose counted repeats unroll past `MAX_PATTERN_UNROLLED`: no
    search of it could be stopped in time, or it could not even be compiled so."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"{reason}: no search of it could be stopped in time", pattern, reason)


ECMA_PATTERN = "an ECMA-262 regular expression (JSON Schema's dialect, read with the `u` flag)"
"""What a pattern must be, in the words of a refusal."""


class ForeignPatternError(RefusedPatternError):
    """A pattern that is no ECMA-262 regular expression as JSON Schema reads one (with the `u`
    flag), though Python's engines may compile it: `(?i)abc`, `(?P<name>x)`, `\\Z`, `a++`.
    Each engine gives such syntax a meaning of its own, so the pre-check and validation would
    read the author's pattern apart; the core's parser decides (`toolwire._core.pattern_error`),
    so both refuse the same patterns. An escaped punctuation mark that is no syntax character
    (`\\@`, `\\:`) is no such pattern: every engine reads the mark itself."""

    def __init__(self, pattern: str, why: str) -> None:
        super().__init__(f"not {ECMA_PATTERN}: {why.lower()}", pattern, ECMA_PATTERN)


def _refuse_too_large(pattern: str) -> None:
    """Raise `PatternTooLargeError` for a pattern past `MAX_PATTERN_CHARS`,
    `MAX_PATTERN_LITERAL` or `MAX_PATTERN_UNROLLED`."""
    if len(pattern) > MAX_PATTERN_CHARS:
        reason = f"a pattern of at most {MAX_PATTERN_CHARS:,} characters (it has {len(pattern):,})"
        raise PatternTooLargeError(pattern, reason)
    longest = run = 0
    # The unrolled size of each group open at `i` (the pattern's own first), and of the atom
    # a quantifier there repeats.
    sizes = [0]
    last = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        repeat = _REPEAT.match(pattern, i) if c == "{" else None
        if repeat is not None:
            least = repeat.group(1) or "0"
            # Past nine digits no count is compiled; `int` refuses texts past 4,300 digits.
            times = max(int(least), 1) if len(least) <= 9 else MAX_PATTERN_UNROLLED + 1
            sizes[-1] += last * (times - 1)
            last *= times
            run, i = 0, repeat.end()
            if sum(sizes) > MAX_PATTERN_UNROLLED:
                break
            continue
        last = 1
        if c == "\\" and pattern[i + 1 : i + 2] in _LITERAL_ESCAPES:
            run, i = run + 1, i + 2
        elif c == "\\" or c in "^$.|?*+()[]{}":
            # A class, an anchor, a group or a quantifier ends the run (a set is one step).
            run, i = 0, i + (2 if c == "\\" else 1)
            # The brace first: after a `\\` that ends the pattern, `i` is past its end.
            if c == "\\" and pattern.startswith("{", i) and pattern[i - 1] in "upP":
                # `\\u{1F600}`, `\\p{L}`: one character, its braces no count.
                i = max(pattern.find("}", i) + 1, i)
            elif c == "[":
                i = _set_end(pattern, i)
            elif c == "(":
                sizes.append(0)
                if pattern.startswith("?", i):
                    i = _group_body(pattern, i + 1)
            elif c == ")" and len(sizes) > 1:
                last = sizes.pop()
            elif c in "^$|?*+":
                last = 0
        else:
            run, i = run + 1, i + 1
        sizes[-1] += last
        longest = max(longest, run)
    if longest > MAX_PATTERN_LITERAL:
        reason = (
            f"a pattern whose runs of literal text are at most {MAX_PATTERN_LITERAL:,}"
            f" characters (one has {longest:,})"
        )
        raise PatternTooLargeError(pattern, reason)
    if sum(sizes) > MAX_PATTERN_UNROLLED:
        reason = (
            f"a pattern whose counted repeats (`{{n}}`, `{{n,m}}`) come to at most"
            f" {MAX_PATTERN_UNROLLED:,} characters"
        )
        raise PatternTooLargeError(pattern, reason)


# A counted repeat: `{n}`, `{n,}`, `{n,m}` and Python's `{,m}`; its least count first.
_REPEAT = re.compile(r"\{(?:(\d+),?\d*|,\d+)\}")


# Escapes of a character that stands for itself (a `\.`, a `\/`): anything but a letter or a
# digit, which name a class, an anchor, a code point or a backreference.
_LITERAL_ESCAPES = frozenset(".\\/-^$|?*+()[]{}#&~ '\"!%,:;<=>@_`")


def _set_end(pattern: str, i: int) -> int:
    """The index after the `]` that closes the set opened just before `i`."""
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _group_body(pattern: str, i: int) -> int:
    """The index where the body of the group whose `(?` ends just before `i` starts: after
    `:`, `=`, `!`, `>`, `<=`, `<!` or a `<name>` (flags such as `i)` are left to the scan)."""
    if pattern.startswith(("<=", "<!"), i):
        return i + 2
    if pattern.startswith(("<", "P<"), i):
        end = pattern.find(">", i)
        return i + 1 if end < 0 else end + 1
    return i + 1 if pattern[i : i + 1] in (":", "=", "!", ">") else i


def _clock() -> float:
    """The clock budgets are read on (a test replaces it)."""
    return time.monotonic()


class _Budget:
    """The time left for the searches of one validation: what they spend, not the time since
    the validation began (a deadline let the rest of the walk of a large call, or a loaded
    host, spend it, and every later search then counted as run out of time)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def left(self) -> float:
        return self.seconds

    def spend(self, seconds: float) -> None:
        self.seconds -= seconds


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar(
    "toolwire_pattern_budget", default=None
)
"""The budget of the validation running in this context, if any: context-local, so that
threads and tasks validating at once each spend their own."""


def budget_seconds(size: int) -> float:
    """The time all the searches of the validation of a call whose argument text has `size`
    characters may take together: `PATTERN_BUDGET_SECONDS`, and
    `PATTERN_BUDGET_SECONDS_PER_CHAR` for each character."""
    return PATTERN_BUDGET_SECONDS + PATTERN_BUDGET_SECONDS_PER_CHAR * size


@contextlib.contextmanager
def pattern_budget(size: int = 0) -> Generator[None, None, None]:
    """Bounds the total time of the pattern searches made inside the block to
    `budget_seconds(size)`, `size` the characters of the call's argument text. A block opened inside
    another spends the outer one's budget: a validation that validates again (a value as
    written) is still one validation."""
    if _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set(_Budget(budget_seconds(size)))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _engine_search(compiled: Any, text: str, timeout: float) -> bool:
    """One search by `regex`, stopped after `timeout` seconds of this process's CPU time (a
    test replaces it).

    Raises:
        TimeoutError: The search ran out of time.
    """
    return compiled.search(text, timeout=timeout) is not None


_FIRST_SLICE = 0.1
"""The share of a search's wall-clock time given as CPU time to its first try."""

_CORES = float(os.cpu_count() or 1)


def _bounded_search(compiled: Any, text: str, seconds: float) -> bool:
    """One search stopped after about `seconds` of wall-clock time.

    `regex` stops a search after a CPU time, and a process given a share of a core spends it
    in that time divided by the share. The first try gets `_FIRST_SLICE` of `seconds`: a
    search that finds its answer in that (the usual case) runs once. One that runs out shows
    the share (the CPU time it was given over the wall-clock time it took), and the second,
    last try gets the CPU time that share gives in the wall-clock time left. It starts over,
    so it runs only when it gets more than the first did; at a full share a search is given
    all but nothing of `seconds` in all, at a tenth of a core it ends after about `seconds`.

    Raises:
        TimeoutError: The search ran out of time.
    """
    started = _clock()
    first = seconds * _FIRST_SLICE
    try:
        return _engine_search(compiled, text, first)
    except TimeoutError:
        took = _clock() - started
    left = seconds - took
    # The share exceeds 1 when other threads of the process spend CPU time meanwhile (the
    # clock counts theirs too); it cannot exceed the number of cores.
    share = min(first / took, _CORES) if took > 0 else 1.0
    rest = left * share
    if rest <= first:
        # A try no longer than the one that ran out would run out again.
        raise TimeoutError
    return _engine_search(compiled, text, rest)


class _Compiled(Protocol):
    def search(self, string: str, /) -> object: ...


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> tuple[_Compiled, bool]:
    """`pattern` compiled, and whether its searches can be stopped in time.

    `regex` reads `re`'s syntax the same way, adds what ECMA-262 patterns use, and can stop a
    search; `re` compiles the rare pattern `regex` refuses. Raises `regex.error` when neither
    engine compiles it, `PatternTooLargeError` for one too large to search in bounded time,
    `ForeignPatternError` for one that is no ECMA-262 regular expression.
    """
    _refuse_too_large(pattern)
    foreign = pattern_error(pattern)
    if foreign is not None:
        raise ForeignPatternError(pattern, foreign)
    # Both engines warn of syntax they may read differently one day (`[[:alpha:]]` is a
    # "possible nested set"). The pattern is the tool author's data, read today as ECMA-262
    # engines read it, and the warning would reach the caller's warning filters: under
    # `-W error` (as test suites often run) building the toolset would fail. The compiled
    # pattern is cached, so this runs once per pattern.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ecma = _ecma_reading(pattern)
        try:
            return regex.compile(ecma), True
        except regex.error as refused:
            try:
                return re.compile(ecma), False
            except re.error:
                raise refused from None


# An inline flag group that turns multiline mode on (`(?m)`, `(?im:...)`): `$` is then an end
# of line in every engine, and is left as written.
_MULTILINE_FLAG = re.compile(r"\(\?[a-zA-Z]*m[a-zA-Z]*[):-]")


# An inline flag group that turns dot-all mode on (`(?s)`): `.` is then any character.
_DOTALL_FLAG = re.compile(r"\(\?[a-zA-Z]*s[a-zA-Z]*[):-]")

_BRACED_CODE_POINT = re.compile(r"\\u\{([0-9a-fA-F]{1,6})\}")
_SURROGATE_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE)


def _code_point(pattern: str, i: int) -> tuple[int, int] | None:
    """The code point of a `\\u{...}` or of a surrogate pair of `\\uXXXX` escapes at `i`, and
    the index after it; None for any other escape."""
    braced = _BRACED_CODE_POINT.match(pattern, i)
    if braced is not None and int(braced.group(1), 16) <= 0x10FFFF:
        return int(braced.group(1), 16), braced.end()
    pair = _SURROGATE_PAIR.match(pattern, i)
    if pair is not None:
        high, low = int(pair.group(1), 16), int(pair.group(2), 16)
        return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), pair.end()
    return None


def _members(ranges: list[tuple[int, int]]) -> str:
    """A set's members, each range of code points written with `\\U` escapes (which both
    engines read, in a set and out of one)."""
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The code points outside the sorted, disjoint `ranges`."""
    out: list[tuple[int, int]] = []
    start = 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= 0x10FFFF:
        out.append((start, 0x10FFFF))
    return out


_DIGITS = [(0x30, 0x39)]
_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
# ECMA-262's WhiteSpace and LineTerminator: Unicode's space separators, tab, vertical tab, form
# feed, U+FEFF, and the four line ends.
_SPACE = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
]
# ECMA-262's class escapes, as set members: ASCII digits and word characters (Python's engines
# take every script's), and its own white space (Python's lacks U+FEFF and adds U+001C-U+001F
# and U+0085).
_CLASS_ESCAPES = {
    "d": _members(_DIGITS),
    "D": _members(_complement(_DIGITS)),
    "w": _members(_WORD),
    "W": _members(_complement(_WORD)),
    "s": _members(_SPACE),
    "S": _members(_complement(_SPACE)),
}
_WORD_SET = f"[{_CLASS_ESCAPES['w']}]"
# A word boundary by ECMA-262's word characters (`[\\b]` in a set is a backspace, left alone).
_BOUNDARIES = {
    "b": f"(?:(?<={_WORD_SET})(?!{_WORD_SET})|(?<!{_WORD_SET})(?={_WORD_SET}))",
    "B": f"(?:(?<={_WORD_SET})(?={_WORD_SET})|(?<!{_WORD_SET})(?!{_WORD_SET}))",
}


def _ecma_reading(pattern: str) -> str:
    """`pattern` rewritten so that Python's engines read it as ECMA-262 does:

    * each `[` inside a set escaped. `re` and ECMA-262 read `[[:alpha:]]` as the set `[:alph`
      and a `]`; `regex` reads a POSIX class there. Escaped, all read alike.
    * ECMA-262's spellings Python lacks: `\\cX` (a control character), `\\k<name>` (a named
      backreference), `[]` (matches nothing) and `[^]` (matches any character).
    * each `$` outside a set made `\\Z`. ECMA-262's `$` matches only at the very end of the
      text; Python's also before a final newline, so `^[a-z]+$` would take `"main\\n"`, which
      Pydantic's Rust engine (and the tool's author) refuses.
    * each `.` outside a set made a set without ECMA-262's line terminators: Python's `.`
      matches all but `\\n`, so `^.$` took `"\\r"` and U+2028.
    * the class escapes `\\d \\w \\s` (and `\\D \\W \\S`, `\\b \\B`) made ECMA-262's sets: ASCII
      digits and word characters, where Python's engines take every script's (`^\\d$` took
      `"\\u07c0"`, NKO digit zero), and ECMA-262's white space, which holds U+FEFF.
    * a code point written `\\u{1F600}` (which neither engine compiles: the tool was refused),
      or as a UTF-16 surrogate pair `\\ud83d\\ude00`, which ECMA-262 reads as one character
      and Python as two halves that no text holds, written `\\U0001f600`.
    """
    end_of_text = _MULTILINE_FLAG.search(pattern) is None
    line_dot = _DOTALL_FLAG.search(pattern) is None
    out: list[str] = []
    in_set = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        written = _code_point(pattern, i) if c == "\\" else None
        if written is not None:
            code, i = written
            out.append(f"\\U{code:08x}")
            continue
        if c == "\\":
            control = pattern[i + 2 : i + 3]
            if pattern.startswith("c", i + 1) and control.isascii() and control.isalpha():
                # `\cJ`: the control character of that letter, which Python spells `\x0a`.
                out.append(f"\\x{ord(control) % 32:02x}")
                i += 3
                continue
            name_end = pattern.find(">", i + 3) if pattern.startswith("k<", i + 1) else -1
            if name_end > 0 and not in_set:
                # `\k<name>`, a backreference to a named group, which Python spells `(?P=name)`.
                out.append(f"(?P={pattern[i + 3 : name_end]})")
                i = name_end + 1
                continue
            escape = pattern[i + 1 : i + 2]
            if escape in _CLASS_ESCAPES:
                members = _CLASS_ESCAPES[escape]
                out.append(members if in_set else f"[{members}]")
            elif escape in _BOUNDARIES and not in_set:
                out.append(_BOUNDARIES[escape])
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if not in_set:
            if c == "$" and end_of_text:
                c = "\\Z"
            elif c == "." and line_dot:
                c = "[^\\n\\r\\u2028\\u2029]"
            elif c == "[":
                # A `]` right after the opening (or after `^`) ends the class in ECMA-262: `[]`
                # matches nothing and `[^]` any character. Python would read a member there.
                if pattern.startswith("]", i + 1):
                    # A group, so that a quantifier after it applies to it.
                    out.append("(?:(?!))")
                    i += 2
                elif pattern.startswith("^]", i + 1):
                    out.append("[\\s\\S]")
                    i += 3
                else:
                    in_set = True
                    out.append(c)
                    i += 1
                continue
        elif c == "]":
            in_set = False
        elif c == "[":
            c = "\\["
        out.append(c)
        i += 1
    return "".join(out)


def search(pattern: str, text: str, *, out_of_time: bool = False) -> bool:
    """Whether `pattern` matches somewhere in `text`, as JSON Schema's `pattern` asks;
    `out_of_time` when the search takes longer than `PATTERN_SECONDS`, or than what is left
    of the running `pattern_budget`.

    Raises:
        regex.error: The pattern compiles in neither `regex` nor `re`.
    """
    compiled, stoppable = _compile(pattern)
    timeout = PATTERN_SECONDS
    budget = _BUDGET.get()
    if budget is not None:
        left = budget.left()
        if left <= 0:
            # `re` could not be stopped either: once the budget is spent nothing runs.
            return out_of_time
        timeout = min(timeout, left)
    started = _clock()
    try:
        if not stoppable:
            return compiled.search(text) is not None
        return _bounded_search(compiled, text, timeout)
    except TimeoutError:
        return out_of_time
    finally:
        if budget is not None:
            budget.spend(_clock() - started)


def check_pattern(pattern: str) -> None:
    """Compile `pattern` as validation reads it (the compiled pattern is kept for the searches).

    Raises:
        regex.error: The pattern compiles in neither `regex` nor `re`; `ForeignPatternError`
            when it is no ECMA-262 regular expression; `PatternTooLargeError`
            when no search of it could be stopped in time.
    """
    _compile(pattern)


def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        check_pattern(instance)
    return True


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            # A search that runs out of time holds the value to the pattern's schema: read as
            # taking no key, it let an open map's value escape it.
            if search(pattern, key, out_of_time=True):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(original: Any) -> Any:
    def additional_properties(
        validator: Any, additional: Any, instance: Any, schema: Any
    ) -> Iterator[jsonschema.ValidationError]:
        patterns = schema.get("patternProperties")
        if not patterns or not validator.is_type(instance, "object"):
            yield from original(validator, additional, instance, schema)
            return
        known = schema.get("properties", {})
        extras = sorted(
            key
            for key in instance
            if key not in known and not any(search(pattern, key) for pattern in patterns)
        )
        if validator.is_type(additional, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif additional is False and extras:
            names = ", ".join(repr(extra) for extra in extras)
            yield jsonschema.ValidationError(
                f"{names} match no property name or pattern ({', '.join(map(repr, patterns))})"
            )

    return additional_properties


def _resolved(validator: Any, keyword: str, reference: Any) -> tuple[Any, Any] | None:
    """The validator that reads the target of a reference keyword, and the target; None for a
    keyword that is absent. Resolved as `jsonschema` resolves it while validating."""
    if reference is None:
        return None
    if keyword == "$recursiveRef":
        found = lookup_recursive_ref(validator._resolver)
    else:
        found = validator._resolver.lookup(reference)
    return validator.evolve(schema=found.contents, _resolver=found.resolver), found.contents


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The members of `instance` that `schema` or a schema applied beside it evaluates, as
    `unevaluatedProperties` reads them (draft 2020-12 section 11.3; 2019-09 reads them alike).

    `jsonschema` finds them with `re.search` on each `patternProperties` pattern: a pattern
    with `\\p{L}` raised there on every call (so the call ended `internal_error`), and
    `^[a-z]+$` took the key `"ab\\n"`. Here every pattern is read by `search`, as
    `patternProperties` itself reads it. Each schema is read once, so a reference back to
    itself ends.
    """
    keys: set[str] = set()
    seen: set[int] = set()
    pending: list[tuple[Any, Any]] = [(validator, schema)]
    while pending:
        reader, raw = pending.pop()
        if not isinstance(raw, dict):
            continue
        node = cast(dict[str, Any], raw)
        if id(node) in seen:
            continue
        seen.add(id(node))
        for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
            # Only the reference keywords of the schema's own draft.
            if keyword not in reader.VALIDATORS:
                continue
            target = _resolved(reader, keyword, node.get(keyword))
            if target is not None:
                pending.append(target)
        properties = node.get("properties")
        if isinstance(properties, dict):
            keys.update(instance.keys() & cast(dict[str, Any], properties).keys())
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            sub = node.get(keyword)
            if sub is not None:
                keys.update(
                    key
                    for key, value in instance.items()
                    if next(reader.descend(value, sub), None) is None
                )
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            patterns = cast(dict[str, Any], patterns)
            keys.update(
                key for key in instance if any(search(pattern, key) for pattern in patterns)
            )
        dependent = node.get("dependentSchemas")
        if isinstance(dependent, dict):
            named = cast(dict[str, Any], dependent).items()
            pending.extend((reader, sub) for name, sub in named if name in instance)
        for keyword in ("allOf", "oneOf", "anyOf"):
            pending.extend(
                (reader, sub)
                for sub in node.get(keyword, ())
                if next(reader.descend(instance, sub), None) is None
            )
        if "if" in node:
            if reader.evolve(schema=node["if"]).is_valid(instance):
                pending.append((reader, node["if"]))
                pending.append((reader, node.get("then")))
            else:
                pending.append((reader, node.get("else")))
    return keys


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    refused = [
        key
        for key, value in instance.items()
        if key not in evaluated
        and next(validator.descend(value, unevaluated, path=key, schema_path=key), None) is not None
    ]
    if not refused:
        return
    names = ", ".join(repr(key) for key in sorted(refused))
    if unevaluated is False:
        yield jsonschema.ValidationError(f"Unevaluated properties are not allowed ({names})")
    else:
        yield jsonschema.ValidationError(
            f"Unevaluated properties are not valid under the given schema ({names})"
        )


def _nullable(original: Any) -> Any:
    def keyword(
        validator: Any, value: Any, instance: Any, schema: Any
    ) -> Iterator[jsonschema.ValidationError]:
        if instance is None and schema.get("nullable") is True:
            return
        yield from original(validator, value, instance, schema)

    return keyword


class WrittenFloat(float):
    """A float that rounds the number the JSON text wrote (`2.4000000000000000001` is 2.4),
    with that text: `multipleOf` divides the number as written, as the README promises."""

    __slots__ = ("text",)
    text: str


def is_multiple(number: Decimal, step: Decimal) -> bool | None:
    """Whether `number` is a whole multiple of `step`, exactly, at any exponent; None for an
    infinity, a NaN or a zero step.

    Decimal arithmetic in a context rounds: a remainder below its exponent range (`1e-1100000`
    divided by 0.01) became 0, a multiple, and a quotient longer than its precision cannot be
    divided. Both are written as an integer times a power of ten, `n·10^a` and `s·10^b`, and
    the number is a multiple when `s` divides `n·10^(a-b)`: a power taken modulo `s` where
    `a >= b`, and otherwise `n` must hold the `b-a` trailing zeros (it has as many digits as
    the model wrote, which the scanner bounds) before `s` divides the rest.
    """
    if not (number.is_finite() and step.is_finite()) or not step:
        return None
    _, digits, exponent = number.as_tuple()
    _, step_digits, step_exponent = step.as_tuple()
    # From the digits as a tuple: exact, with no context and no limit on `int`'s text.
    n = int(Decimal((0, digits, 0)))
    s = int(Decimal((0, step_digits, 0)))
    if not n:
        return True
    shift = cast(int, exponent) - cast(int, step_exponent)
    if shift >= 0:
        return n * pow(10, shift, s) % s == 0
    if -shift > len(digits):
        # `n` is below `10^(b-a)`: the quotient is a non-zero fraction below 1.
        return False
    return n % (s * 10**-shift) == 0


def _multiple_of(original: Any) -> Any:
    def multiple_of(
        validator: Any, divisor: Any, instance: Any, schema: Any
    ) -> Iterator[jsonschema.ValidationError]:
        # A float reads back as the shortest decimal text that round-trips, the digits the
        # model wrote, unless it had more than a float holds: then its text is divided, or a
        # number a digit past 2.4 would pass where `2.4` does (and fail under `not`). It is
        # divided exactly (`is_multiple`), at any exponent. What `Decimal` cannot read is left
        # to `jsonschema`, except infinity (a number past a double's range, `1e400`), which
        # `jsonschema` turns into an OverflowError for a float divisor: it is no multiple.
        written = instance.text if isinstance(instance, WrittenFloat) else None
        if written is None and isinstance(instance, float) and not math.isfinite(instance):
            yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor}")
            return
        if (
            isinstance(divisor, int | float)
            and not isinstance(divisor, bool)
            and isinstance(instance, int | float)
            and not isinstance(instance, bool)  # not a number to `multipleOf`
        ):
            try:
                # An int converts exactly as it is (its `repr` is limited to 4300 digits).
                exact = (
                    instance
                    if isinstance(instance, int)
                    else written
                    if written is not None
                    else repr(instance)
                )
                step = Decimal(divisor if isinstance(divisor, int) else repr(divisor))
                multiple = is_multiple(Decimal(exact), step)
            except ArithmeticError:  # InvalidOperation for a text `Decimal` cannot read
                multiple = None
            if multiple is not None:
                if not multiple:
                    yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor}")
                return
        try:
            yield from original(validator, divisor, instance, schema)
        except OverflowError:
            # Model output must get an answer, not an exception: a number too large to divide
            # as a float is not shown to be a multiple.
            yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor}")

    return multiple_of


def _unique_items(
    validator: Any, unique: Any, instance: Any, schema: Any
) -> Iterator[jsonschema.ValidationError]:
    # `jsonschema` compares an array of objects or arrays item against item, time quadratic
    # in the items a model sends: each item's JSON key (equal exactly when the items are
    # equal as JSON Schema compares them) is hashed once instead.
    if not unique or not validator.is_type(instance, "array"):
        return
    # Imported here: `coercion` imports the modules that import this one.
    from toolwire.coercion import json_key

    items = cast(list[object], instance)
    if len({json_key(item) for item in items}) < len(items):
        yield jsonschema.ValidationError(f"{instance!r} has non-unique elements")


class ReferenceLoop(jsonschema.ValidationError):
    """A reference met again for the same value while its own evaluation runs: the branch
    that holds it gives nothing (error reports skip such a branch when naming what to fix)."""


_REFERENCES_RUNNING: contextvars.ContextVar[frozenset[tuple[str, str, int]]] = (
    contextvars.ContextVar("toolwire_references_running", default=frozenset())
)
"""The references being evaluated: (base URI, reference, identity of the value). A JSON value
read by `json.loads` never contains itself, so meeting a triple again on the way down means
the schema went round a loop without reading into the value. Context-local, so that threads
and tasks validating at once do not see each other's evaluations."""


def _acyclic(keyword: Any) -> Any:
    """A reference keyword (`$ref`, `$dynamicRef`, `$recursiveRef`) that reads a loop back to
    itself on the same value as a mismatch (see the module doc)."""

    def evaluate(validator: Any, reference: Any, instance: Any, schema: Any) -> list[Any]:
        # The reference as written and the base it is read against name its target, wherever
        # it is written: `Expr -> Group -> Expr` is caught when `Expr` comes round again.
        base = getattr(getattr(validator, "_resolver", None), "_base_uri", "")
        key = (str(base), str(reference), id(instance))
        running = _REFERENCES_RUNNING.get()
        if key in running:
            return [
                ReferenceLoop(
                    f"{reference!r} refers back to itself for the same value",
                    validator="$ref",
                    validator_value=reference,
                    instance=instance,
                    schema=schema,
                )
            ]
        token = _REFERENCES_RUNNING.set(running | {key})
        try:
            # Consumed here, not yielded lazily: the set must hold exactly while the
            # reference's own evaluation runs.
            return list(keyword(validator, reference, instance, schema) or ())
        finally:
            _REFERENCES_RUNNING.reset(token)

    return evaluate


# The formats whose values never hold a line break. `regex` and the JSON Pointers are left out
# (a pointer's tokens may hold any character), and so are `email` and `idn-email`: their
# checker asks only for an `@`, and Pydantic's `EmailStr` strips the whitespace around an
# address, so a final newline is no mismatch there.
_SINGLE_LINE_FORMATS = frozenset(
    {
        "date-time",
        "date",
        "time",
        "duration",
        "uuid",
        "ipv4",
        "ipv6",
        "ip-address",
        "hostname",
        "host-name",
        "idn-hostname",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uri-template",
        "color",
    }
)


def _single_line(check: Any) -> Any:
    """`check`, refusing a string that ends with a newline before the library's `$` can take it
    (see the module doc)."""

    def single_line(instance: object) -> bool:
        if isinstance(instance, str) and instance.endswith("\n"):
            return False
        return bool(check(instance))

    return single_line


@functools.cache
def extended_validator(cls: Any) -> Any:
    """`cls` (a `jsonschema` validator class) with the readings described in the module doc.

    Its `FORMAT_CHECKER` checks the `regex` format the same way, and `check_schema` uses it, so
    a schema with `"pattern": "^\\\\p{L}+$"` passes the meta-schema; it refuses a final newline
    in the formats that have no line breaks.
    """
    checker = copy.deepcopy(cls.FORMAT_CHECKER)
    checker.checks("regex", raises=(re.error, regex.error))(_is_regex)
    # Only what this draft's checker already asserts: a format left unchecked (its optional
    # package missing, or not in this draft) stays an annotation.
    for name, (check, raises) in list(checker.checkers.items()):
        if name in _SINGLE_LINE_FORMATS:
            checker.checks(name, raises=raises)(_single_line(check))
    extend: Any = jsonschema.validators.extend  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    extended = extend(
        cls,
        {
            "multipleOf": _multiple_of(cls.VALIDATORS["multipleOf"]),
            "pattern": _pattern,
            "type": _nullable(cls.VALIDATORS["type"]),
            "enum": _nullable(cls.VALIDATORS["enum"]),
            "additionalProperties": _additional_properties(cls.VALIDATORS["additionalProperties"]),
            "patternProperties": _pattern_properties,
            **(
                {"unevaluatedProperties": _unevaluated_properties}
                if "unevaluatedProperties" in cls.VALIDATORS
                else {}
            ),
            "uniqueItems": _unique_items,
            **{
                name: _acyclic(cls.VALIDATORS[name])
                for name in ("$ref", "$dynamicRef", "$recursiveRef")
                if name in cls.VALIDATORS
            },
        },
        format_checker=checker,
    )
    meta: Any = jsonschema.validators.validator_for(cls.META_SCHEMA, default=cls)

    def check_schema(schema: Any, format_checker: Any = None) -> None:
        validator = meta(meta.META_SCHEMA, format_checker=format_checker or checker)
        for error in validator.iter_errors(schema):
            raise jsonschema.SchemaError.create_from(error)

    extended.check_schema = staticmethod(check_schema)
    return extended
