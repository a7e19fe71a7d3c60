"""The HTML report (``--conformance-report=report.html``; ``scenario --report`` is short for it).

:func:`write_report` writes one self-contained file: the verdict table by clause, every
result, and per scenario a matplotlib SVG plot of prompt tokens per provider call with
threshold and context-window lines, compression events and cache read/write tokens.
Without matplotlib (optional extra ``report``) the plots are replaced by a note and
tables of the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.report import plots
from conformance.report.html import render


def write_report(
    path: Path,
    results: Iterable[Any],
    runs: Iterable[Any],
    *,
    engine: str = "",
    strict: bool = False,
) -> str:
    """Write the report to ``path`` (UTF-8); returns a note ("" when plots were drawn).

    Args:
        path: the output file (parents are created).
        results: :class:`~conformance.run.results.Result` objects.
        runs: ScenarioRun objects (one plot each).
        engine: label of the engine under test.
        strict: the verdict line follows the strict exit rule.
    """
    runs = list(runs)
    svgs = {run.scenario.name: plots.run_svg(run) for run in runs} if plots.AVAILABLE else {}
    note = "" if plots.AVAILABLE else plots.MISSING_NOTE
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        render(results, runs, engine=engine, svgs=svgs, note=note, strict=strict), encoding="utf-8"
    )
    return note


__all__ = ["write_report", "render"]
