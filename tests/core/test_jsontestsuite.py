"""JSONTestSuite: what the scanner must accept and reject, fed whole, byte by byte and split at
every position. The data is read from the shared folder beside the project, never copied."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from toolwire import Assembler, JsonError, Scanner

SUITE = Path(
    os.environ.get(
        "TOOLWIRE_JSONTESTSUITE",
        Path(__file__).resolve().parents[2] / ".." / "shared" / "jsontestsuite",
    )
)
PARSING = SUITE / "test_parsing"
DOC = Path(__file__).resolve().parents[2] / "docs" / "json-conformance.md"

if not PARSING.is_dir():  # pragma: no cover - a broken checkout must fail loudly, not skip
    raise RuntimeError(f"JSONTestSuite not found at {PARSING}; set TOOLWIRE_JSONTESTSUITE")

FILES = sorted(PARSING.glob("*.json"))
BIG = 4096


def scan(data: bytes, cuts: list[int]) -> tuple[object, tuple[str, int] | None]:
    scanner = Scanner(duplicate_keys="last_wins")
    last = 0
    for cut in cuts:
        scanner.push(data[last:cut])
        last = cut
    scanner.push(data[last:])
    try:
        return scanner.finish(), None
    except JsonError as e:
        err = e.error  # type: ignore[attr-defined]
        return None, (err.kind, err.offset)


def split_points(data: bytes) -> list[list[int]]:
    """Whole, byte by byte, and every single cut (sampled for the few large files)."""
    n = len(data)
    singles = range(1, n) if n <= BIG else range(1, n, max(1, n // 257))
    return [[], list(range(1, n)), *([c] for c in singles)]


def test_suite_is_complete() -> None:
    assert len([f for f in FILES if f.name.startswith("y_")]) >= 90
    assert len([f for f in FILES if f.name.startswith("n_")]) >= 180


@pytest.mark.parametrize(
    "path", [f for f in FILES if f.name.startswith("y_")], ids=lambda p: p.name
)
def test_accepted_with_json_loads_value(path: Path) -> None:
    data = path.read_bytes()
    expected = json.loads(data)
    for cuts in split_points(data):
        value, error = scan(data, cuts)
        assert error is None, (cuts[:3], error)
        assert value == expected
        assert type(value) is type(expected)


@pytest.mark.parametrize(
    "path", [f for f in FILES if f.name.startswith("n_")], ids=lambda p: p.name
)
def test_rejected_with_the_same_offset_for_every_split(path: Path) -> None:
    data = path.read_bytes()
    _, whole = scan(data, [])
    assert whole is not None, "accepted an n_ file"
    for cuts in split_points(data):
        _, error = scan(data, cuts)
        assert error == whole, cuts[:3]


def documented_decisions() -> dict[str, str]:
    rows = re.findall(
        r"^\| `(i_[^`]+)` \| (accepted|rejected: [a-z_0-9]+) \|", DOC.read_text(), re.M
    )
    return dict(rows)


def decision(path: Path) -> str:
    data = path.read_bytes()
    _, error = scan(data, [])
    return "accepted" if error is None else f"rejected: {error[0]}"


@pytest.mark.parametrize(
    "path", [f for f in FILES if f.name.startswith("i_")], ids=lambda p: p.name
)
def test_implementation_defined_cases_match_the_documented_table(path: Path) -> None:
    table = documented_decisions()
    assert path.name in table, f"{path.name} is missing from {DOC.name}"
    assert decision(path) == table[path.name]
    data = path.read_bytes()
    _, whole = scan(data, [])
    for cuts in split_points(data):
        assert scan(data, cuts)[1] == whole


def finished_call(
    data: bytes, cuts: list[int], *, value_first: bool = False, **options: object
) -> tuple[object, ...]:
    """The verdict and value of one call fed `data` cut at `cuts`.

    With `value_first`, `.value` is read before anything else: a call nobody scanned while it
    streamed is then settled by orjson plus the text's outline instead of by the scanner.
    """
    assembler = Assembler(**options)  # type: ignore[arg-type]
    last = 0
    for cut in [*cuts, len(data)]:
        assembler.feed(0, id="call_1", name="tool", arguments=data[last:cut])
        last = cut
    (call,) = assembler.finish()
    value = call.value if value_first else None
    error = call.error
    shown = None if error is None else (error.kind, error.offset, error.message)
    if not value_first:
        value = call.value
    return shown, call.ok, call.plain_numbers, value if error is None else None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("duplicate_keys", ["error", "last_wins"])
def test_a_call_read_only_at_its_end_gets_the_verdict_of_eager_scanning(
    path: Path, duplicate_keys: str
) -> None:
    # Nobody read this call while it streamed, so its text is scanned in one pass at the
    # end; a call tracking progress is scanned fragment by fragment. Both must end the same:
    # same error, offset, message and value.
    data = path.read_bytes()
    n = len(data)
    for cuts in ([], [n // 2], list(range(7, n, 7))):
        deferred = finished_call(data, cuts, duplicate_keys=duplicate_keys)
        eager = finished_call(data, cuts, duplicate_keys=duplicate_keys, track_progress=True)
        assert deferred == eager, cuts[:3]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("duplicate_keys", ["error", "last_wins"])
@pytest.mark.parametrize("wrap", [False, True], ids=["as is", "in an object"])
def test_reading_the_value_first_gets_the_verdict_of_a_scan(
    path: Path, duplicate_keys: str, wrap: bool
) -> None:
    # `.value` read first settles an unscanned call with orjson and the text's outline; it
    # must agree with the scanner on every file: error, offset, message, value and whether
    # the numbers are plain. Wrapped in an object, every file takes that path as far as
    # orjson lets it (arguments are objects).
    data = path.read_bytes()
    if wrap:
        data = b'{"k": ' + data + b"}"
    for max_depth in (64, 3):
        options = {"duplicate_keys": duplicate_keys, "max_depth": max_depth}
        by_value = finished_call(data, [], value_first=True, **options)
        by_scan = finished_call(data, [], **options)
        assert by_value == by_scan
