"""The verdict's terminal text: the per-clause table and the lines under it.

:func:`summary_lines` renders what every front end prints at the end of a run (the pytest
plugin's terminal summary, ``context-engine-kit check`` and ``scenario``): a row per clause
(passed, failed, skipped, xfailed, xpassed, error, partial), then the root causes, the skip
reasons, the budget's cuts, the engine's own LLM calls, the per-host lines of a run of several
hosts, and the verdict line.

It reads the verdict through :class:`VerdictFigures`, the figures a
:class:`conformance.run.verdict.Verdict` offers, so this module does not import the verdict
(``Verdict.summary_lines`` calls it with itself).
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from typing import TYPE_CHECKING, Any, Protocol

from conformance.authoring.expect import MUST, SHOULD

if TYPE_CHECKING:
    from conformance.run.results import Result


class VerdictFigures(Protocol):
    """What the terminal summary reads of a verdict (a :class:`conformance.run.verdict.Verdict`):
    its rows and flags, and the figures it derives from them (each documented on ``Verdict``)."""

    @property
    def results(self) -> list[Result]: ...

    @property
    def other_failures(self) -> int: ...

    @property
    def interrupted(self) -> bool: ...

    @property
    def total(self) -> int | None: ...

    @property
    def snapshot_mismatches(self) -> int: ...

    @property
    def snapshot_errors(self) -> int: ...

    def word(self, *, strict: bool = False) -> str: ...

    def counts(self) -> dict[str, int]: ...

    def partly_checked(self) -> int: ...

    def root_causes(self) -> list[dict[str, Any]]: ...

    def failures_by_level(self) -> dict[str, int]: ...

    def per_clause(self) -> OrderedDict[str, dict[str, int]]: ...

    def hosts(self) -> list[str]: ...

    def by_host(self, *, strict: bool = False) -> dict[str, dict[str, Any]]: ...

    def host_line(self, *, strict: bool = False) -> str: ...

    def llm_totals(self) -> dict[str, Any]: ...


def summary_lines(verdict: VerdictFigures, *, strict: bool = False) -> list[str]:
    """The terminal summary of ``verdict``: a blank line, the heading, a row per clause in
    contract order, the notes (root causes, skip reasons, the budget's cuts, engine LLM calls,
    one line per host of a run of several), then the verdict line. ``strict``
    (``--conformance-strict``) makes SHOULD failures fail. Lines without newlines."""
    lines = [
        "",
        "=" * 20 + " conformance verdict by clause " + "=" * 20,
        f"{'clause':<8}{'passed':>8}{'failed':>8}{'skipped':>9}{'xfailed':>9}"
        f"{'xpassed':>9}{'error':>7}{'partial':>9}",
    ]
    for clause, row in verdict.per_clause().items():
        lines.append(
            f"{clause:<8}{row['passed']:>8}{row['failed']:>8}{row['skipped']:>9}"
            f"{row['xfailed']:>9}{row['xpassed']:>9}{row['error']:>7}{row['partial']:>9}"
        )
    totals = verdict.counts()
    levels = verdict.failures_by_level()
    word = verdict.word(strict=strict)
    if word == "PASS" and levels[SHOULD]:
        word += " (with SHOULD failures)"
    if verdict.other_failures:
        word += f" ({verdict.other_failures} non-conformance test(s) failed)"
    if verdict.snapshot_mismatches:
        word += (
            f" ({verdict.snapshot_mismatches} snapshot mismatch(es): a changed output fails the "
            "run; accept an intended change with --snapshot-update)"
        )
    if verdict.snapshot_errors:
        word += f" ({verdict.snapshot_errors} snapshot case(s) could not run)"
    if verdict.interrupted:
        word += f" ({len(verdict.results)} of {verdict.total or '?'} cases ran before the stop)"
    partial = verdict.partly_checked()
    if word == "PARTIAL":
        word += (
            f" (no failure; {partial} case(s) partly checked: the budget cut them short, so "
            "this is not a pass)"
        )
    for group in verdict.root_causes():
        lines.append(
            f"root cause: {len(group['cases'])} failures share one ({group['key']}); "
            f"reported under {group['first']}, the others point to it"
        )
    skipped = [r for r in verdict.results if r.outcome == "skipped" and not r.budget_reached]
    if skipped:
        reasons = Counter(_skip_gist(r.message) for r in skipped)
        lines.append(
            f"skipped: {len(skipped)} case(s) that do not apply to this engine or host, most "
            "often: "
            + "; ".join(f"{reason} ({n})" for reason, n in reasons.most_common(3))
            + ". Every reason: the JSON verdict's results, or -rs"
        )
    limited = [r for r in verdict.results if r.budget_reached and r.outcome != "skipped"]
    if limited:
        lines.append(
            f"budget: {len(limited)} check(s) ran fewer examples than the profile asks, "
            "partly checked, not passed (--conformance-budget; slow engine calls; "
            "--conformance-budget=0 draws them all): "
            + ", ".join(f"{r.check} {r.examples_run}/{r.examples_asked}" for r in limited[:6])
            + (" ..." if len(limited) > 6 else "")
        )
    unplayed = sorted(
        {
            r.check.split(":")[1]
            for r in verdict.results
            if r.budget_reached and r.kind == "scenario"
        }
    )
    if unplayed:
        lines.append(
            f"budget: {len(unplayed)} scenario file(s) not played, their expectations "
            "skipped (--conformance-budget; slow engine calls): "
            + ", ".join(unplayed[:6])
            + (" ..." if len(unplayed) > 6 else "")
        )
    llm = verdict.llm_totals()
    if llm["calls"]:
        scripted = sum(sum((r.llm.get("faults") or {}).values()) for r in verdict.results if r.llm)
        lines.append(
            f"engine LLM: {llm['calls']} call(s), {llm['requests']} request(s) "
            f"({llm['failed_requests']} failed: {scripted} of them faults the kit's checks "
            f"scripted on purpose), {llm['prompt_tokens']} prompt + "
            f"{llm['completion_tokens']} completion tokens ({llm['cached_tokens']} cached), "
            f"${llm['cost_usd']:.6f} simulated"
        )
    for host, hrow in verdict.by_host(strict=strict).items():
        lv = hrow["failures_by_level"]
        named = ", ".join(f"{f['clause']} {f['level']}" for f in hrow["failing"])
        lines.append(
            f"host {host}: {hrow['verdict']} - {hrow['counts']['total']} cases, "
            f"{lv[MUST]} MUST and {lv[SHOULD]} SHOULD failures" + (f" ({named})" if named else "")
        )
    if verdict.hosts():
        lines.append(f"by host: {verdict.host_line(strict=strict)}")
    lines.append(
        f"verdict: {word} - {len(verdict.results)} cases: {totals['passed']} passed, "
        f"{totals['failed']} failed ({levels[MUST]} MUST, {levels[SHOULD]} SHOULD: errors "
        f"included, one per root cause), {totals['skipped']} skipped, "
        f"{totals['xfailed']} xfailed, {totals['xpassed']} xpassed, {totals['error']} error"
    )
    return lines


def _skip_gist(message: str) -> str:
    """A skip reason's gist: its text up to the first parenthesised remark, semicolon or
    colon."""
    gist = re.split(r"\s\(|;|:", message or "", maxsplit=1)[0].strip()
    return gist[:80] or "no reason given"


__all__ = ["VerdictFigures", "summary_lines"]
