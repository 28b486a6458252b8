"""Checks of the numbers a policy is configured with, made when the policy is built.

A NaN compares false with everything, so a check written as ``if value < 0: raise`` lets it
through, and later it turns every comparison it meets into "no": a NaN deadline is never
reached, a NaN timeout reads as zero in one place and as no limit in another. A fractional
attempt count or window size works only by accident of how it is compared. Each is refused
here, with the setting's name, as the existing range checks are (``ValueError``).
"""

from __future__ import annotations

import math
from numbers import Integral, Real

__all__ = ["check_count", "check_number", "check_seconds"]


def _is_real(value: object) -> bool:
    # A bool is an int to Python, but `timeout=True` is a mistake, not one second.
    return not isinstance(value, bool) and isinstance(value, Real)


def check_number(
    name: str,
    value: object,
    *,
    low: float = 0.0,
    low_inclusive: bool = True,
    high: float | None = None,
    finite: bool = True,
) -> None:
    """Raise ``ValueError`` unless ``value`` is a real number within the bounds.

    Args:
        name: The setting's name, for the message.
        value: The value given.
        low: The smallest value allowed (or the bound it must exceed).
        low_inclusive: Whether ``low`` itself is allowed.
        high: The largest value allowed, if any.
        finite: Refuse infinities as well as NaN.

    Raises:
        ValueError: The value is no number (a bool is none), NaN, infinite where that is
            refused, or out of bounds.
    """
    if not _is_real(value):
        raise ValueError(f"{name} must be a number, not {type(value).__name__}")
    number = float(value)  # pyright: ignore[reportArgumentType]  # a Real
    if math.isnan(number) or (finite and math.isinf(number)):
        raise ValueError(f"{name} must be a finite number, not {number}")
    too_low = number < low if low_inclusive else number <= low
    if too_low or (high is not None and number > high):
        above = f">= {low:g}" if low_inclusive else f"> {low:g}"
        bounds = above if high is None else f"{above} and <= {high:g}"
        raise ValueError(f"{name} must be {bounds}, not {number:g}")


def check_seconds(name: str, value: object, *, zero: bool = False) -> None:
    """Raise ``ValueError`` unless ``value`` is ``None`` or a finite number of seconds above
    zero (or zero too, with ``zero``)."""
    if value is not None:
        check_number(name, value, low=0.0, low_inclusive=zero)


def check_count(name: str, value: object, *, low: int = 1) -> None:
    """Raise ``ValueError`` unless ``value`` is a whole number (an int, not a bool) >= ``low``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{name} must be a whole number >= {low}, not {value!r}")
    if int(value) < low:
        raise ValueError(f"{name} must be >= {low}, not {value}")
