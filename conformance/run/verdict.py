"""The verdict: outcomes per case, counts per clause, the exit rule, the JSON document.

:class:`Verdict` holds one :class:`~conformance.run.results.Result` per case and derives from
them the overall word, the counts, the root causes (one finding per shared engine exception,
hang or death), the per-clause and per-host tables and the JSON document
(:meth:`Verdict.to_json`). Its two renderings live beside it: the JSON file's shape, format
version and writer in :mod:`conformance.run.verdict_format` (:data:`VERDICT_FORMAT_VERSION`,
:func:`versioned` and :func:`write_verdict_json` are re-exported here), the terminal text in
:mod:`conformance.run.verdict_text` (:meth:`Verdict.summary_lines`).

A failure's root cause is the same engine exception from the same engine frame (or the same
hang, the same death): the verdict counts it once (``failures_by_level``), under its first
case, and the other rows point to that case. ``llm`` totals what the engine's own summary
calls (``call_llm``, answered by the kit's LLM) cost over the run
(:func:`conformance.authoring.engine_llm.summarise_ledgers`; zeros when it made none); the host's
own provider calls are not in it.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from conformance.authoring.expect import MUST, SHOULD
from conformance.clauses.catalogue import METHOD_CLAUSES, sort_key
from conformance.run.results import OUTCOMES, Result, exit_code, partly_checked, verdict_word
from conformance.run.verdict_format import VERDICT_FORMAT_VERSION, versioned, write_verdict_json
from conformance.run.verdict_text import summary_lines

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
        ``V2 MUST on hermes-0.19; clean on documented and hermes-0.22`` ("" for one host); a
        host where no case ran is ``nothing checked on X``, never clean."""
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
        # a host where every case was skipped is not clean: nothing was checked there
        idle = [h for h, row in table.items() if row["verdict"] == "NO CHECK RAN"]
        clean = [h for h, row in table.items() if not row["failing"] and h not in idle]
        if clean:
            parts.append(f"clean on {_and(clean)}")
        if idle:
            parts.append(f"nothing checked on {_and(idle)} (every case skipped there)")
        return "; ".join(parts)

    def summary_lines(self, *, strict: bool = False) -> list[str]:
        """The terminal summary: a row per clause, then the verdict line
        (:func:`conformance.run.verdict_text.summary_lines`)."""
        return summary_lines(self, strict=strict)

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
