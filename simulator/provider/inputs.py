"""Validation of simulator configuration values (admin routes and in-process constructors).

Each checker returns the value (normalised where stated) or raises :class:`InputError`,
a :class:`ValueError` whose message says which field was wrong, what it got and what is
accepted, e.g. ``"faults[0].status: got 'abc'; accepted: an integer from 400 to 599"``.
JSON booleans are never accepted as numbers, and numbers must be finite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


class InputError(ValueError):
    """A configuration value was rejected.

    Attributes:
        field: dotted path of the value (``"faults[0].status"``, ``"advance"``).
        accepted: what the field accepts, in words.
    """

    def __init__(self, field: str, problem: str, accepted: str) -> None:
        super().__init__(f"{field}: {problem}; accepted: {accepted}")
        self.field = field
        self.accepted = accepted


def shown(value: Any) -> str:
    """A short repr of ``value`` for error messages (at most 60 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_int(value: Any, field: str, lo: int, hi: int) -> int:
    """``value`` if it is an integer (not a bool) in ``[lo, hi]``.

    Raises:
        InputError: wrong type or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InputError(field, f"got {shown(value)}", f"an integer from {lo} to {hi}")
    return value


def check_number(value: Any, field: str, lo: float, hi: float) -> float:
    """``value`` as a float if it is a finite number (not a bool) in ``[lo, hi]``.

    Raises:
        InputError: wrong type, NaN or infinite, or out of range.
    """
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        try:
            number = float(value)
        except OverflowError:  # an int too large for a float
            ok = False
        else:
            ok = math.isfinite(number) and lo <= number <= hi
    if not ok:
        raise InputError(field, f"got {shown(value)}", f"a finite number from {lo:g} to {hi:g}")
    return number


def check_bool(value: Any, field: str) -> bool:
    """``value`` if it is ``True`` or ``False``.

    Raises:
        InputError: anything else (including 0, 1 and strings).
    """
    if not isinstance(value, bool):
        raise InputError(field, f"got {shown(value)}", "true or false")
    return value


def check_str(value: Any, field: str, max_len: int = 10_000, allow_empty: bool = False) -> str:
    """``value`` if it is a string of valid Unicode, at most ``max_len`` characters.

    Raises:
        InputError: not a string, empty (unless ``allow_empty``), too long, or holding a
            lone UTF-16 surrogate.
    """
    ok = isinstance(value, str) and (allow_empty or value) and len(value) <= max_len
    if ok:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            ok = False
    if not ok:
        what = "a" if allow_empty else "a non-empty"
        raise InputError(
            field, f"got {shown(value)}", f"{what} string of valid Unicode, <= {max_len} chars"
        )
    return value


def check_choice(value: Any, field: str, choices: Iterable[Any]) -> Any:
    """``value`` if it equals one of ``choices`` (compared by type too: ``True`` is not ``1``).

    Raises:
        InputError: not one of them.
    """
    options = list(choices)
    if not any(type(value) is type(c) and value == c for c in options):
        raise InputError(
            field, f"got {shown(value)}", "one of " + ", ".join(repr(c) for c in options)
        )
    return value


def check_object(value: Any, field: str, allowed: Iterable[str]) -> Mapping[str, Any]:
    """``value`` if it is a JSON object whose keys are all in ``allowed``.

    Raises:
        InputError: not an object, or an unknown key (named in the message).
    """
    keys = sorted(allowed)
    if not isinstance(value, Mapping):
        raise InputError(field, f"got {shown(value)}", "an object with keys " + ", ".join(keys))
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise InputError(
            field, f"unknown key(s) {unknown}", "an object with keys " + ", ".join(keys)
        )
    return value
