"""The verdict: outcomes per check, counts per clause, the exit rule, the JSON file.

JSON shape (``--conformance-json`` / ``context-engine-kit check --json``)::

    {"engine", "kit_version", "contract_version", "host_abc", "host_profile",
     "results": [{"check", "clause", "level", "outcome", "message"}]}
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List

from conformance.expect import MUST
from conformance.runner import OUTCOMES, Result


def _clause_key(clause: str):
    m = re.match(r"^([A-Z]+)(\d*)", clause)
    return (m.group(1), int(m.group(2) or 0)) if m else (clause, 0)


@dataclass
class Verdict:
    """Collected results of one run."""

    results: List[Result] = field(default_factory=list)
    other_failures: int = 0

    def add(self, result: Result) -> None:
        """Record one result."""
        self.results.append(result)

    def record_report(self, report: Any, props: Dict[str, str]) -> None:
        """Fold a pytest report of a conformance item into a :class:`Result` (one per item)."""
        when = report.when
        outcome = None
        if report.skipped:
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.failed:
            outcome = getattr(report, "conformance_outcome", None) or ("error" if when != "call" else "failed")
        elif when == "call":
            outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
        if outcome is None:
            return
        message = ""
        if outcome in ("failed", "error"):
            message = _failure_text(report)
        elif outcome == "skipped" and isinstance(report.longrepr, tuple):
            message = str(report.longrepr[2]).removeprefix("Skipped: ")
        elif outcome == "xfailed":
            message = str(getattr(report, "wasxfail", ""))
        self.results.append(Result(props["conformance_check"], props["clause"], props["level"], outcome, message))

    def extend(self, results: Iterable[Result]) -> None:
        """Record several results."""
        self.results.extend(results)

    def ran_any(self) -> bool:
        """True when at least one check ran (not all skipped)."""
        return any(r.outcome in ("passed", "failed", "error", "xfailed", "xpassed") for r in self.results)

    def has_blocking_failure(self, *, strict: bool = False) -> bool:
        """A MUST failure or error, or with ``strict`` any failure, error or XPASS."""
        for r in self.results:
            if r.outcome in ("failed", "error") and (strict or r.level == MUST):
                return True
            if strict and r.outcome == "xpassed":
                return True
        return False

    @property
    def only_conformance_failures(self) -> bool:
        """True when no non-conformance test failed in the session."""
        return self.other_failures == 0

    def per_clause(self) -> "OrderedDict[str, Dict[str, int]]":
        """``{clause: {outcome: count}}`` in contract order."""
        table: Dict[str, Dict[str, int]] = {}
        for r in self.results:
            row = table.setdefault(r.clause, {o: 0 for o in OUTCOMES})
            row[r.outcome] += 1
        return OrderedDict(sorted(table.items(), key=lambda kv: _clause_key(kv[0])))

    def summary_lines(self, *, strict: bool = False) -> List[str]:
        """The terminal summary: a row per clause, then the verdict line."""
        lines = ["", "=" * 20 + " conformance verdict by clause " + "=" * 20,
                 f"{'clause':<8}{'passed':>8}{'failed':>8}{'skipped':>9}{'xfailed':>9}{'xpassed':>9}{'error':>7}"]
        totals = {o: 0 for o in OUTCOMES}
        for clause, row in self.per_clause().items():
            lines.append(f"{clause:<8}{row['passed']:>8}{row['failed']:>8}{row['skipped']:>9}"
                         f"{row['xfailed']:>9}{row['xpassed']:>9}{row['error']:>7}")
            for o in OUTCOMES:
                totals[o] += row[o]
        must_fail = sum(1 for r in self.results if r.outcome in ("failed", "error") and r.level == MUST)
        should_fail = sum(1 for r in self.results if r.outcome in ("failed", "error") and r.level != MUST)
        if not self.ran_any():
            word = "NO CHECK RAN"
        elif self.has_blocking_failure(strict=strict):
            word = "FAIL"
        else:
            word = "PASS" + (" (with SHOULD failures)" if should_fail else "")
        lines.append(f"verdict: {word} - {len(self.results)} checks: {totals['passed']} passed, "
                     f"{totals['failed']} failed ({must_fail} MUST, {should_fail} SHOULD incl. errors), "
                     f"{totals['skipped']} skipped, {totals['xfailed']} xfailed, {totals['xpassed']} xpassed, "
                     f"{totals['error']} error")
        return lines

    def to_json(self, *, engine: Any, host_profile: str = "documented") -> Dict[str, Any]:
        """The JSON verdict (shape in the module docstring)."""
        from conformance import CONTRACT_VERSION, __version__
        from simulator.host.shim import abc_info

        spec = engine.spec if hasattr(engine, "spec") else str(engine)
        return {
            "engine": spec,
            "kit_version": __version__,
            "contract_version": CONTRACT_VERSION,
            "host_abc": abc_info().label(),
            "host_profile": host_profile,
            "results": [r.as_dict() for r in sorted(self.results, key=lambda r: r.check)],
        }

    def write_json(self, path: Path, **kwargs: Any) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8, indented)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(**kwargs), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _failure_text(report: Any) -> str:
    """Our one-paragraph message, or the last line of a foreign traceback."""
    if isinstance(report.longrepr, str):
        return report.longrepr
    text = str(report.longreprtext or "").strip()
    return text.splitlines()[-1] if text else ""
