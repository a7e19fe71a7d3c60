"""The verdict: outcomes per check, counts per clause, the exit rule, the JSON file.

JSON shape (``--conformance-json`` / ``context-engine-kit check --json``)::

    {"engine", "kit_version", "contract_version", "host_abc", "host_profile",
     "verdict": "PASS" | "FAIL" | "NO CHECK RAN",   # the plugin's exit rule (see Verdict.word)
     "strict": bool,                                 # --conformance-strict was given
     "counts": {"total", "passed", "failed", "skipped", "xfailed", "xpassed", "error"},
     "failures_by_level": {"MUST": n, "SHOULD": n},  # failed + error results per level
     "other_failures": n,                            # failed non-conformance tests of the session
     "snapshot_mismatches": n,                       # failed snapshot cases (D1; they fail the run)
     "snapshot_errors": n,                           # snapshot cases that could not run (a hang; fail the run)
     "results": [{"check", "clause", "level", "outcome", "message"}]}
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.expect import MUST, SHOULD
from conformance.runner import OUTCOMES, Result, exit_code, verdict_word


def _clause_key(clause: str):
    m = re.match(r"^([A-Z]+)(\d*)", clause)
    return (m.group(1), int(m.group(2) or 0)) if m else (clause, 0)


@dataclass
class Verdict:
    """Collected results of one run."""

    results: list[Result] = field(default_factory=list)
    other_failures: int = 0
    #: Failed snapshot cases: counted under D1 (SHOULD), yet they fail the run like any
    #: syrupy assertion, since a stored snapshot is the author's own regression baseline.
    snapshot_mismatches: int = 0
    #: Snapshot cases that could not run (the engine hung, or the run's timeout cap was reached).
    snapshot_errors: int = 0

    def add(self, result: Result) -> None:
        """Record one result."""
        self.results.append(result)

    def record_report(self, report: Any, props: dict[str, str]) -> None:
        """Fold a pytest report of a conformance item into a :class:`Result` (one per item)."""
        when = report.when
        outcome = None
        if report.skipped:
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.failed:
            outcome = getattr(report, "conformance_outcome", None) or (
                "error" if when != "call" else "failed"
            )
        elif when == "call":
            outcome = "xpassed" if hasattr(report, "wasxfail") else "passed"
        if outcome is None:
            return
        if props.get("kind") == "snapshot" and outcome in ("failed", "error"):
            if outcome == "failed":
                self.snapshot_mismatches += 1
            else:
                self.snapshot_errors += 1
        message = ""
        if outcome in ("failed", "error"):
            message = _failure_text(report)
        elif outcome == "skipped" and isinstance(report.longrepr, tuple):
            message = str(report.longrepr[2]).removeprefix("Skipped: ")
        elif outcome == "xfailed":
            message = str(getattr(report, "wasxfail", ""))
        self.results.append(
            Result(props["conformance_check"], props["clause"], props["level"], outcome, message)
        )

    def extend(self, results: Iterable[Result]) -> None:
        """Record several results."""
        self.results.extend(results)

    def ran_any(self) -> bool:
        """True when at least one check ran (not all skipped)."""
        return exit_code(self.results) != 5

    def has_blocking_failure(self, *, strict: bool = False) -> bool:
        """A MUST failure or error, or with ``strict`` any failure, error or XPASS."""
        return exit_code(self.results, strict=strict) == 1

    def word(self, *, strict: bool = False) -> str:
        """The overall verdict, by the plugin's exit rule: ``"NO CHECK RAN"`` (exit 5) when no check
        ran; ``"FAIL"`` (exit 1) on a blocking failure (:meth:`has_blocking_failure`) or a failed
        non-conformance test or a snapshot mismatch; else ``"PASS"`` (exit 0, SHOULD failures
        allowed without ``strict``)."""
        word = verdict_word(exit_code(self.results, strict=strict))
        blocking = self.other_failures or self.snapshot_mismatches or self.snapshot_errors
        return "FAIL" if word == "PASS" and blocking else word

    def counts(self) -> dict[str, int]:
        """``{"total": n, <outcome>: n for each of OUTCOMES}`` over all results."""
        out = {"total": len(self.results)}
        out.update({o: sum(r.outcome == o for r in self.results) for o in OUTCOMES})
        return out

    def failures_by_level(self) -> dict[str, int]:
        """``{"MUST": n, "SHOULD": n}``: failed and errored results per level."""
        bad = [r for r in self.results if r.outcome in ("failed", "error")]
        return {MUST: sum(r.level == MUST for r in bad), SHOULD: sum(r.level != MUST for r in bad)}

    @property
    def only_conformance_failures(self) -> bool:
        """True when no non-conformance test failed and no snapshot case mismatched."""
        return (
            self.other_failures == 0 and self.snapshot_mismatches == 0 and self.snapshot_errors == 0
        )

    def per_clause(self) -> OrderedDict[str, dict[str, int]]:
        """``{clause: {outcome: count}}`` in contract order."""
        table: dict[str, dict[str, int]] = {}
        for r in self.results:
            row = table.setdefault(r.clause, {o: 0 for o in OUTCOMES})
            row[r.outcome] += 1
        return OrderedDict(sorted(table.items(), key=lambda kv: _clause_key(kv[0])))

    def summary_lines(self, *, strict: bool = False) -> list[str]:
        """The terminal summary: a row per clause, then the verdict line."""
        lines = [
            "",
            "=" * 20 + " conformance verdict by clause " + "=" * 20,
            f"{'clause':<8}{'passed':>8}{'failed':>8}{'skipped':>9}{'xfailed':>9}{'xpassed':>9}{'error':>7}",
        ]
        for clause, row in self.per_clause().items():
            lines.append(
                f"{clause:<8}{row['passed']:>8}{row['failed']:>8}{row['skipped']:>9}"
                f"{row['xfailed']:>9}{row['xpassed']:>9}{row['error']:>7}"
            )
        totals = self.counts()
        levels = self.failures_by_level()
        word = self.word(strict=strict)
        if word == "PASS" and levels[SHOULD]:
            word += " (with SHOULD failures)"
        if self.other_failures:
            word += f" ({self.other_failures} non-conformance test(s) failed)"
        if self.snapshot_mismatches:
            word += (
                f" ({self.snapshot_mismatches} snapshot mismatch(es): a changed output fails the run; "
                "accept an intended change with --snapshot-update)"
            )
        if self.snapshot_errors:
            word += f" ({self.snapshot_errors} snapshot case(s) could not run)"
        lines.append(
            f"verdict: {word} - {len(self.results)} checks: {totals['passed']} passed, "
            f"{totals['failed']} failed ({levels[MUST]} MUST, {levels[SHOULD]} SHOULD incl. errors), "
            f"{totals['skipped']} skipped, {totals['xfailed']} xfailed, {totals['xpassed']} xpassed, "
            f"{totals['error']} error"
        )
        return lines

    def to_json(
        self, *, engine: Any, host_profile: str = "documented", strict: bool = False
    ) -> dict[str, Any]:
        """The JSON verdict (shape in the module docstring); ``strict`` as ``--conformance-strict``."""
        from conformance import CONTRACT_VERSION, __version__
        from simulator.host.shim import abc_info

        spec = engine.spec if hasattr(engine, "spec") else str(engine)
        return {
            "engine": spec,
            "kit_version": __version__,
            "contract_version": CONTRACT_VERSION,
            "host_abc": abc_info().label(),
            "host_profile": host_profile,
            "verdict": self.word(strict=strict),
            "strict": bool(strict),
            "counts": self.counts(),
            "failures_by_level": self.failures_by_level(),
            "other_failures": self.other_failures,
            "snapshot_mismatches": self.snapshot_mismatches,
            "snapshot_errors": self.snapshot_errors,
            "results": [r.as_dict() for r in sorted(self.results, key=lambda r: r.check)],
        }

    def write_json(self, path: Path, **kwargs: Any) -> None:
        """Write :meth:`to_json` to ``path`` (UTF-8, indented)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps(self.to_json(**kwargs), indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )


def _failure_text(report: Any) -> str:
    """Our one-paragraph message, or the last line of a foreign traceback."""
    if isinstance(report.longrepr, str):
        return report.longrepr
    text = str(report.longreprtext or "").strip()
    return text.splitlines()[-1] if text else ""
