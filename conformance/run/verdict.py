"""The verdict: outcomes per case, counts per clause, the exit rule, the JSON file.

JSON shape (``--conformance-json`` / ``context-engine-kit check --json`` /
``run_conformance(json_path=...)``; every one written by :func:`write_verdict_json`; JSON Schema
``conformance/schemas/verdict.schema.json``, checked by
:func:`conformance.run.verdict_schema.validate_verdict`)::

    {"format_version": 1,                           # VERDICT_FORMAT_VERSION, always the first key
     "engine": {"spec", "kwargs"} | {"plugin"} | null,  # as replay files name it
     "kit_version": str, "contract_version": str, "host_abc": str,
     "host_profile": str, "profile": str,           # null in an ERROR verdict when not known
     "verdict": "PASS" | "FAIL" | "PARTIAL" | "NO CHECK RAN" | "INTERRUPTED" | "ERROR",
                                                     # Verdict.word; PARTIAL: nothing failed,
                                                     # the budget cut cases short (exit 6);
                                                     # ERROR (or INTERRUPTED before the first
                                                     # case) with "error" when the run could not
                                                     # start (frontends.outputs.error_verdict)
     "error"?: str,                                  # that usage error's message
     "strict": bool,                                 # --conformance-strict was given
     "counts": {"total", "passed", "failed", "skipped", "xfailed", "xpassed", "error"},
     "partly_checked": n,                            # passed/skipped rows the budget cut short
     "failures_by_level": {"MUST": n, "SHOULD": n},  # failed + error results per level
     "other_failures": n,                            # failed non-conformance tests of the session
     "snapshot_mismatches": n,                       # failed snapshot cases (D1; they fail the run)
     "snapshot_errors": n,                           # snapshot cases that could not run
     "cases_run": n, "cases_total": n,               # an interrupted run says how far it got
     "root_causes": [{"key", "first", "cases", "clause", "level"}],  # one per root cause
     "llm": {"calls", "requests", "failed_requests", "prompt_tokens", "completion_tokens",
             "cached_tokens", "cache_write_tokens", "cost_usd"},  # the engine's own LLM calls
     "results": [{"check", "clause", "level": "MUST" | "SHOULD",
                  "outcome": "passed" | "failed" | "skipped" | "xfailed" | "xpassed" | "error",
                  "message",
                  "llm": {} | <ledger>,              # the case's engine LLM calls (Result.llm)
                  "root_cause"?: <first case>, "examples"?: {"run", "asked"},
                  "hosts"?: [<host profile>, ...],  # several hosts: who the row stands for
                  "partly_checked"?: bool}],        # with "examples": cut short
     # a run of several hosts (--host-profile=a,b / all) adds, leaving the fields above as
     # they are ("host_profile" is the first host):
     "host_profiles"?: [<host profile>, ...],
     "by_host"?: {<host profile>: {"verdict", "counts", "failures_by_level",
                                   "failing": [{"clause", "level", "cases": [<check>, ...]}]}},
     "by_host_line"?: "V2 MUST on hermes-0.19; clean on documented and hermes-0.22"}

A failure's root cause is the same engine exception from the same engine frame (or the same
hang, the same death): the verdict counts it once (``failures_by_level``), under its first
case, and the other rows point to that case. ``llm`` totals what the engine's own summary
calls (``call_llm``, answered by the kit's LLM) cost over the run
(:func:`conformance.authoring.engine_llm.summarise_ledgers`; zeros when it made none); the host's
own
provider calls are not in it.

Format version. ``format_version`` (an int, :data:`VERDICT_FORMAT_VERSION`) is the first key of
every verdict file. Within one format version a consumer may rely on: every key shown above
without ``?`` being there (a verdict whose ``"error"`` is set, the ``ERROR`` verdict of a run
that could not start, has no ``partly_checked``, ``cases_run``, ``cases_total``,
``root_causes`` or ``llm``), each key keeping its JSON type, and the ``verdict``, ``outcome``
and ``level`` words being the ones listed here, with their meaning. A removed key, a retyped
key, or a word added to, dropped from or given a new meaning in those lists bumps the version;
an added key (at the top level, in a row or in a block) does not, so a consumer ignores keys it
does not know. Files without ``format_version`` were written by a kit older than the field.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from conformance.authoring.expect import MUST, SHOULD
from conformance.clauses.catalogue import METHOD_CLAUSES, sort_key
from conformance.run.results import OUTCOMES, Result, exit_code, partly_checked, verdict_word

if TYPE_CHECKING:
    from conformance.run.options import RunOptions
    from conformance.runtime.engine_loading import EngineFactory


class VerdictSession(Protocol):
    """What the JSON verdict reads of a run (a
    :class:`~conformance.run.conformance_session.ConformanceSession`): its ``options``
    (``strict``, ``host_profile``, ``host_profiles``, ``profile``) and its engine ``factory``
    (``record()`` names the engine; None: no engine bound)."""

    @property
    def options(self) -> RunOptions: ...

    @property
    def factory(self) -> EngineFactory | None: ...


#: The JSON verdict's format version, its first key ``"format_version"``: bumped when a key is
#: removed or retyped or a ``verdict``, ``outcome`` or ``level`` word is added, dropped or
#: changes meaning; not when a key is added (module docstring).
VERDICT_FORMAT_VERSION = 1


def versioned(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (a JSON verdict's fields) with ``"format_version":``
    :data:`VERDICT_FORMAT_VERSION` as its first key, the other keys in their order; a
    ``format_version`` already in ``document`` is replaced. A new dict; ``document`` is left
    as it is."""
    rest = {k: v for k, v in document.items() if k != "format_version"}
    return {"format_version": VERDICT_FORMAT_VERSION, **rest}


def write_verdict_json(path: str | os.PathLike, document: dict[str, Any]) -> None:
    """Write a JSON verdict file: :func:`versioned` ``document`` as UTF-8 JSON (2-space indent,
    non-ASCII kept as is, a final newline), making missing parent folders. The one writer of
    verdict files (:meth:`Verdict.write_json`,
    :func:`conformance.frontends.outputs.write_error_verdict`).

    Raises:
        OSError: ``path`` or its folder cannot be written.
        TypeError, ValueError: ``document`` holds a value JSON cannot encode (or a cycle).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(versioned(document), indent=2, ensure_ascii=False) + "\n"
    target.write_text(text, encoding="utf-8")


@dataclass
class Verdict:
    """The results of one run, and the rules that turn them into a verdict.

    Attributes:
        results: one :class:`~conformance.run.results.Result` per case.
        other_failures: failed tests of the pytest session that are not conformance cases.
        interrupted: the run was stopped (Ctrl-C) before every case ran.
        total: how many cases the run had (for an interrupted run's "N of M").
        host_order: the run's host profiles in the order given (``--host-profile=a,b``), so
            the per-host lines follow it; else the order the rows name them.
    """

    results: list[Result] = field(default_factory=list)
    other_failures: int = 0
    interrupted: bool = False
    total: int | None = None
    host_order: tuple = ()

    def add(self, result: Result) -> None:
        """Record one result."""
        self.results.append(result)

    @property
    def snapshot_mismatches(self) -> int:
        """Failed snapshot cases: counted under D1 (SHOULD), yet they fail the run, since a
        stored snapshot is the author's own regression baseline."""
        return sum(r.kind == "snapshot" and r.outcome == "failed" for r in self.results)

    @property
    def snapshot_errors(self) -> int:
        """Snapshot cases that could not run (the engine hung, or the timeout cap was reached)."""
        return sum(r.kind == "snapshot" and r.outcome == "error" for r in self.results)

    def ran_any(self) -> bool:
        """True when at least one case ran (not all skipped)."""
        return exit_code(self.results) != 5

    def has_blocking_failure(self, *, strict: bool = False) -> bool:
        """A MUST failure or error, or with ``strict`` any failure, error or XPASS."""
        return exit_code(self.results, strict=strict) == 1

    def word(self, *, strict: bool = False) -> str:
        """The overall verdict: ``"NO CHECK RAN"`` (exit 5) when no case ran; ``"FAIL"``
        (exit 1) on a blocking failure (:meth:`has_blocking_failure`), a failed
        non-conformance test or a snapshot mismatch or error; else ``"PASS"`` (exit 0, SHOULD
        failures allowed without ``strict``)."""
        if self.interrupted:
            return "INTERRUPTED"
        word = verdict_word(exit_code(self.results, strict=strict))
        blocking = self.other_failures or self.snapshot_mismatches or self.snapshot_errors
        return "FAIL" if word in ("PASS", "PARTIAL") and blocking else word

    def counts(self) -> dict[str, int]:
        """``{"total": n, <outcome>: n for each of OUTCOMES}`` over all results."""
        out = {"total": len(self.results)}
        out.update({o: sum(r.outcome == o for r in self.results) for o in OUTCOMES})
        return out

    def partly_checked(self) -> int:
        """Cases the drawing budget cut short that found nothing
        (:func:`~conformance.run.results.partly_checked`)."""
        return sum(partly_checked(r) for r in self.results)

    def root_causes(self) -> list[dict[str, Any]]:
        """One entry per root cause shared by several failures or errors: ``{"key", "first",
        "cases", "clause", "level"}``; ``first`` is the case that owns it (the one of the
        raising method's clause, else the first MUST one in contract order, else the first)."""
        groups: dict[str, list[Result]] = {}
        for r in self.results:
            if r.outcome in ("failed", "error") and r.root_cause:
                groups.setdefault(r.root_cause, []).append(r)
        out = []
        for key, rows in groups.items():
            if len(rows) < 2:
                continue
            method = key.split("|", 1)[0]
            owner = METHOD_CLAUSES.get(method)
            rows = sorted(rows, key=lambda r: sort_key(r.check))
            first = next(
                (r for r in rows if r.clause == owner),
                next((r for r in rows if r.level == MUST), rows[0]),
            )
            out.append(
                {
                    "key": key,
                    "first": first.check,
                    "cases": [r.check for r in rows],
                    "clause": first.clause,
                    "level": first.level,
                }
            )
        return sorted(out, key=lambda g: sort_key(g["first"]))

    def failures_by_level(self) -> dict[str, int]:
        """``{"MUST": n, "SHOULD": n}``: failed and errored results per level, a root cause
        shared by several failures counted once (under its first case's level)."""
        duplicates = {c for g in self.root_causes() for c in g["cases"] if c != g["first"]}
        bad = [
            r
            for r in self.results
            if r.outcome in ("failed", "error") and r.check not in duplicates
        ]
        return {MUST: sum(r.level == MUST for r in bad), SHOULD: sum(r.level != MUST for r in bad)}

    @property
    def only_conformance_failures(self) -> bool:
        """True when no non-conformance test failed and no snapshot case mismatched or erred."""
        return not (self.other_failures or self.snapshot_mismatches or self.snapshot_errors)

    def per_clause(self) -> OrderedDict[str, dict[str, int]]:
        """``{clause: {outcome: count}}`` in contract order, plus ``"partial"``: the cases the
        budget cut short (:func:`~conformance.run.results.partly_checked`), counted there and not
        as passed or skipped."""
        table: dict[str, dict[str, int]] = {}
        for r in self.results:
            row = table.setdefault(r.clause, {o: 0 for o in OUTCOMES} | {"partial": 0})
            row["partial" if partly_checked(r) else r.outcome] += 1
        return OrderedDict(sorted(table.items(), key=lambda kv: sort_key(kv[0])))

    def hosts(self) -> list[str]:
        """The host profiles of a run of several hosts, in run order ([] for a one-host run):
        the union of the rows' ``hosts``."""
        out: list[str] = []
        for r in self.results:
            out += [h for h in r.hosts if h not in out]
        if self.host_order:
            out = [h for h in self.host_order if h in out] + [
                h for h in out if h not in self.host_order
            ]
        return out

    def for_host(self, host: str) -> Verdict:
        """The verdict of one host of a run of several: the rows that stand for it."""
        rows = [r for r in self.results if host in r.hosts]
        return Verdict(rows, other_failures=self.other_failures)

    def by_host(self, *, strict: bool = False) -> dict[str, dict[str, Any]]:
        """``{host: {"verdict", "counts", "failures_by_level", "failing"}}`` for a run of several
        hosts ({} otherwise); ``failing`` lists each clause and level that failed (or errored)
        on that host, with its cases, in contract order."""
        out: dict[str, dict[str, Any]] = {}
        for host in self.hosts():
            sub = self.for_host(host)
            failing: dict[tuple[str, str], list[str]] = {}
            # a root cause is listed once, under its first case, as failures_by_level counts it
            duplicates = {c for g in sub.root_causes() for c in g["cases"] if c != g["first"]}
            for r in sub.results:
                if r.outcome in ("failed", "error") and r.check not in duplicates:
                    failing.setdefault((r.clause, r.level), []).append(r.check)
            out[host] = {
                "verdict": sub.word(strict=strict),
                "counts": sub.counts(),
                "failures_by_level": sub.failures_by_level(),
                "failing": [
                    {"clause": c, "level": lv, "cases": sorted(cases, key=sort_key)}
                    for (c, lv), cases in sorted(
                        failing.items(), key=lambda kv: (sort_key(kv[0][0]), kv[0][1])
                    )
                ],
            }
        return out

    def host_line(self, *, strict: bool = False) -> str:
        """One line per run of several hosts saying where each clause fails, e.g.
        ``V2 MUST on hermes-0.19; clean on documented and hermes-0.22`` ("" for one host)."""
        table = self.by_host(strict=strict)
        if not table:
            return ""
        where: dict[tuple[str, str], list[str]] = {}
        for host, row in table.items():
            for f in row["failing"]:
                where.setdefault((f["clause"], f["level"]), []).append(host)
        parts = [
            f"{clause} {level} on {_and(hosts)}"
            for (clause, level), hosts in sorted(
                where.items(), key=lambda kv: (kv[0][1] != MUST, sort_key(kv[0][0]))
            )
        ]
        clean = [h for h, row in table.items() if not row["failing"]]
        if clean:
            parts.append(f"clean on {_and(clean)}")
        return "; ".join(parts)

    def summary_lines(self, *, strict: bool = False) -> list[str]:
        """The terminal summary: a row per clause, then the verdict line."""
        lines = [
            "",
            "=" * 20 + " conformance verdict by clause " + "=" * 20,
            f"{'clause':<8}{'passed':>8}{'failed':>8}{'skipped':>9}{'xfailed':>9}"
            f"{'xpassed':>9}{'error':>7}{'partial':>9}",
        ]
        for clause, row in self.per_clause().items():
            lines.append(
                f"{clause:<8}{row['passed']:>8}{row['failed']:>8}{row['skipped']:>9}"
                f"{row['xfailed']:>9}{row['xpassed']:>9}{row['error']:>7}{row['partial']:>9}"
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
                f" ({self.snapshot_mismatches} snapshot mismatch(es): a changed output fails the "
                "run; accept an intended change with --snapshot-update)"
            )
        if self.snapshot_errors:
            word += f" ({self.snapshot_errors} snapshot case(s) could not run)"
        if self.interrupted:
            word += f" ({len(self.results)} of {self.total or '?'} cases ran before the stop)"
        partial = self.partly_checked()
        if word == "PARTIAL":
            word += (
                f" (no failure; {partial} case(s) partly checked: the budget cut them short, so "
                "this is not a pass)"
            )
        for group in self.root_causes():
            lines.append(
                f"root cause: {len(group['cases'])} failures share one ({group['key']}); "
                f"reported under {group['first']}, the others point to it"
            )
        skipped = [r for r in self.results if r.outcome == "skipped" and not r.budget_reached]
        if skipped:
            reasons = Counter(_skip_gist(r.message) for r in skipped)
            lines.append(
                f"skipped: {len(skipped)} case(s) that do not apply to this engine or host, most "
                "often: "
                + "; ".join(f"{reason} ({n})" for reason, n in reasons.most_common(3))
                + ". Every reason: the JSON verdict's results, or -rs"
            )
        limited = [r for r in self.results if r.budget_reached and r.outcome != "skipped"]
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
                for r in self.results
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
        llm = self.llm_totals()
        if llm["calls"]:
            scripted = sum(sum((r.llm.get("faults") or {}).values()) for r in self.results if r.llm)
            lines.append(
                f"engine LLM: {llm['calls']} call(s), {llm['requests']} request(s) "
                f"({llm['failed_requests']} failed: {scripted} of them faults the kit's checks "
                f"scripted on purpose), {llm['prompt_tokens']} prompt + "
                f"{llm['completion_tokens']} completion tokens ({llm['cached_tokens']} cached), "
                f"${llm['cost_usd']:.6f} simulated"
            )
        for host, hrow in self.by_host(strict=strict).items():
            lv = hrow["failures_by_level"]
            named = ", ".join(f"{f['clause']} {f['level']}" for f in hrow["failing"])
            lines.append(
                f"host {host}: {hrow['verdict']} - {hrow['counts']['total']} cases, "
                f"{lv[MUST]} MUST and {lv[SHOULD]} SHOULD failures"
                + (f" ({named})" if named else "")
            )
        if self.hosts():
            lines.append(f"by host: {self.host_line(strict=strict)}")
        lines.append(
            f"verdict: {word} - {len(self.results)} cases: {totals['passed']} passed, "
            f"{totals['failed']} failed ({levels[MUST]} MUST, {levels[SHOULD]} SHOULD: errors "
            f"included, one per root cause), {totals['skipped']} skipped, "
            f"{totals['xfailed']} xfailed, {totals['xpassed']} xpassed, {totals['error']} error"
        )
        return lines

    def to_json(self, *, session: VerdictSession, strict: bool | None = None) -> dict[str, Any]:
        """The JSON verdict (shape in the module docstring, :func:`versioned`: ``format_version``
        first) of ``session``'s run (a
        :class:`~conformance.run.conformance_session.ConformanceSession`); ``strict`` defaults to
        its option."""
        from conformance import CONTRACT_VERSION, __version__
        from simulator.host.shim import abc_info

        strict = session.options.strict if strict is None else strict
        factory = session.factory
        return versioned(
            {
                "engine": factory.record() if factory is not None else None,
                "kit_version": __version__,
                "contract_version": CONTRACT_VERSION,
                "host_abc": abc_info().label(),
                "host_profile": session.options.host_profile,
                "profile": session.options.profile,
                "verdict": self.word(strict=strict),
                "strict": bool(strict),
                "counts": self.counts(),
                "partly_checked": self.partly_checked(),
                "failures_by_level": self.failures_by_level(),
                "other_failures": self.other_failures,
                "snapshot_mismatches": self.snapshot_mismatches,
                "snapshot_errors": self.snapshot_errors,
                "cases_run": len(self.results),
                "cases_total": self.total if self.total is not None else len(self.results),
                "root_causes": self.root_causes(),
                "llm": self.llm_totals(),
                "results": self._rows(),
                **self._host_fields(session, strict),
            }
        )

    def _host_fields(self, session: VerdictSession, strict: bool) -> dict[str, Any]:
        """The JSON verdict's per-host section (a run of several hosts only)."""
        if not self.hosts():
            return {}
        hosts = list(getattr(session.options, "host_profiles", ()) or self.hosts())
        return {
            "host_profiles": hosts,
            "by_host": self.by_host(strict=strict),
            "by_host_line": self.host_line(strict=strict),
        }

    def llm_totals(self) -> dict[str, Any]:
        """The run's engine-LLM totals (calls, requests, tokens, ``cost_usd`` in USD) over
        every result's ``llm`` ledger
        (:func:`conformance.authoring.engine_llm.summarise_ledgers`)."""
        from conformance.authoring.engine_llm import summarise_ledgers

        return summarise_ledgers([r.llm for r in self.results if r.llm])

    def _rows(self) -> list[dict[str, Any]]:
        firsts = {c: g["first"] for g in self.root_causes() for c in g["cases"] if c != g["first"]}
        rows = []
        for r in sorted(self.results, key=lambda r: r.check):
            row = r.as_dict()
            if r.check in firsts:
                row["root_cause"] = firsts[r.check]
            rows.append(row)
        return rows

    def write_json(self, path: str | os.PathLike, **kwargs: Any) -> None:
        """Write :meth:`to_json` (``kwargs``: its ``session`` and ``strict``) to ``path`` with
        :func:`write_verdict_json`.

        Raises:
            OSError: ``path`` or its folder cannot be written.
        """
        write_verdict_json(path, self.to_json(**kwargs))


def _skip_gist(message: str) -> str:
    """A skip reason's gist: its text up to the first parenthesised remark, semicolon or
    colon."""
    gist = re.split(r"\s\(|;|:", message or "", maxsplit=1)[0].strip()
    return gist[:80] or "no reason given"


def _and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


__all__ = [
    "VERDICT_FORMAT_VERSION",
    "Verdict",
    "VerdictSession",
    "versioned",
    "write_verdict_json",
]
