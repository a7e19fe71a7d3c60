"""Turn a :class:`~conformance.runner.Result` into a pytest outcome."""

from __future__ import annotations

import pytest


class ConformanceFailure(AssertionError):
    """A check failed; the message is the kit's one-paragraph grammar (no kit traceback)."""


class ConformanceError(Exception):
    """A check could not complete (engine unavailable, hostile engine, kit error)."""


def raise_for_result(result, *, strict: bool = False) -> None:
    """passed -> return; failed -> ConformanceFailure; skipped -> skip; xfailed -> xfail; ..."""
    __tracebackhide__ = True
    if result.outcome == "passed":
        return
    if result.outcome == "failed":
        raise ConformanceFailure(result.message)
    if result.outcome == "skipped":
        pytest.skip(result.message)
    if result.outcome == "xfailed":
        pytest.xfail(result.message)
    if result.outcome == "xpassed":
        if strict:
            raise ConformanceFailure(
                f"[{result.clause} {result.level}] XPASS(strict): {result.message}"
            )
        return
    raise ConformanceError(result.message)
