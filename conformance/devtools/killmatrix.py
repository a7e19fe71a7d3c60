"""The kill matrix: every mutant against the registry's checks, every reference engine against
the whole case stream (checks and bundled scenarios), in-process.

A mutant is *killed* when a failure message of its own clause matches its pinned regex
(:data:`reference_engines.mutants.KILLS`); it is *clean* when no failure names another
clause (the structural gate S0 counts as its own when it lists ``[<clause>]``). Reference
engines must fail nothing. ``python -m conformance.devtools mutants`` prints :func:`format_matrix`.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from conformance.run.entry import run_conformance
from conformance.run.results import Result
from conformance.runtime.engine_loading import load_engine_factory

BAD = ("failed", "error")


@dataclass
class Row:
    """One mutant's outcome: killed, clean, first killing check, timings, shrunk size."""

    spec: str
    clause: str
    killed: bool
    clean: bool
    killer: str = ""
    message: str = ""
    unrelated: list[str] = field(default_factory=list)
    seconds_to_first_failure: float | None = None
    seconds_total: float = 0.0
    counterexample_messages: int | None = None
    skipped_reason: str = ""


def owns(message: str, clause: str) -> bool:
    """True when a failure message belongs to ``clause`` (its prefix, or S0 listing it)."""
    return message.startswith(f"[{clause} ") or (
        message.startswith("[S0 ") and f"[{clause}]" in message
    )


def judge(spec: str, clause: str, pattern: str, results: list[Result], elapsed: float) -> Row:
    """Build a :class:`Row` from one mutant's results."""
    bad = [r for r in results if r.outcome in BAD]
    own = [r for r in bad if owns(r.message, clause) and re.search(pattern, r.message)]
    unrelated = [f"{r.check}: {r.message[:160]}" for r in bad if not owns(r.message, clause)]
    row = Row(
        spec,
        clause,
        killed=bool(own),
        clean=not unrelated,
        unrelated=unrelated,
        seconds_total=elapsed,
    )
    if own:
        row.killer, row.message = own[0].check, own[0].message
        t = 0.0
        for r in results:
            t += r.seconds
            if r is own[0]:
                break
        row.seconds_to_first_failure = t
        sizes = [r.example_messages for r in own if r.example_messages]
        row.counterexample_messages = min(sizes) if sizes else None
    return row


def run_mutant(
    spec: str, *, profile: str = "quick", timeout: float = 60.0, shrink: bool = True
) -> Row:
    """Run every check against one mutant (a key of ``KILLS``) and judge it."""
    from reference_engines.mutants import KILLS, engine_spec

    kill = KILLS[spec]
    plugin_dir = str(kill.plugin_dir) if kill.plugin_dir else None
    started = time.perf_counter()
    # The registry's checks only: a mutant's fault also shows in scenario expectations of other
    # clauses (a compress() that returns a tuple is never committed, so "compactions >= 1"
    # fails under L1), which says nothing about which check kills it.
    results = run_conformance(
        load_engine_factory(engine_spec(spec)),
        scenarios=False,
        profile=profile,
        timeout=timeout,
        plugin_dir=plugin_dir,
        shrink=shrink,
        xfails=kill.xfails,
        host_profile=kill.host_profile,
    )
    row = judge(spec, kill.clause, kill.pattern, results, time.perf_counter() - started)
    if plugin_dir and not row.killed:
        r_results = [r for r in results if r.clause == kill.clause]
        if r_results and all(r.outcome == "skipped" for r in r_results):
            row.skipped_reason = r_results[0].message
    return row


def run_twin(spec: str, *, profile: str = "quick", timeout: float = 60.0) -> list[Result]:
    """Run the whole case stream against a correct twin (:data:`reference_engines.mutants.TWINS`):
    all must pass or skip, so the check that kills its mutant raises no false alarm."""
    return run_conformance(load_engine_factory(spec), profile=profile, timeout=timeout)


def run_reference(spec: str, *, profile: str = "quick", timeout: float = 60.0) -> list[Result]:
    """Run every check against a reference engine; returns its results (all must pass or skip)."""
    from reference_engines.mutants import KNOWN_FINDINGS, REFERENCES

    plugin_dir = REFERENCES.get(spec)
    return run_conformance(
        load_engine_factory(spec),
        profile=profile,
        timeout=timeout,
        plugin_dir=str(plugin_dir) if plugin_dir else None,
        xfails=KNOWN_FINDINGS.get(spec),
    )


def run_matrix(
    specs: Iterable[str] | None = None, *, profile: str = "quick", shrink: bool = True
) -> list[Row]:
    """Rows for every mutant (or ``specs``), in KILLS order."""
    from reference_engines.mutants import KILLS

    return [
        run_mutant(s, profile=profile, shrink=shrink)
        for s in (list(specs) if specs else list(KILLS))
    ]


def format_matrix(rows: list[Row]) -> list[str]:
    """The matrix as text lines: clause, mutant, killed by, time to first failure, shrunk size."""
    lines = [
        f"{'clause':<7} {'mutant':<52} {'result':<9} {'first failure':<46} {'t(s)':>6} {'msgs':>5}"
    ]
    for r in rows:
        result = (
            "KILLED"
            if r.killed and r.clean
            else ("DIRTY" if r.killed else ("SKIPPED" if r.skipped_reason else "ALIVE"))
        )
        t = f"{r.seconds_to_first_failure:.2f}" if r.seconds_to_first_failure is not None else "-"
        n = str(r.counterexample_messages) if r.counterexample_messages is not None else "-"
        lines.append(
            f"{r.clause:<7} {r.spec.replace('reference_engines.mutants.', ''):<52} {result:<9} "
            f"{r.killer[:46]:<46} {t:>6} {n:>5}"
        )
        for u in r.unrelated[:3]:
            lines.append(f"{'':<7}   unrelated failure: {u}")
        if r.skipped_reason:
            lines.append(f"{'':<7}   skipped: {r.skipped_reason}")
    killed = sum(1 for r in rows if r.killed and r.clean)
    counted = [r for r in rows if not r.skipped_reason]
    sizes = [r.counterexample_messages for r in rows if r.counterexample_messages]
    lines.append(
        f"killed {killed}/{len(counted)} mutants cleanly "
        f"({len(rows) - len(counted)} skipped: host feature missing); median "
        f"shrunk counterexample {statistics.median(sizes) if sizes else '-'} "
        f"messages over {len(sizes)} mutants with a transcript"
    )
    return lines


def main(argv: list[str]) -> int:
    """``python -m conformance.devtools mutants [SPEC...] [--profile P] [--shrink]``: print the
    kill matrix; exit 1 unless every mutant is killed by its own clause and by nothing else, 2
    for an unknown mutant (and argparse's 2 for a bad option)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m conformance.devtools mutants",
        description="Run every mutant engine through the checks and print the "
        "kill matrix: clause, mutant, the check that killed it, time "
        "to first failure, shrunk counterexample size. Exit 1 unless "
        "every mutant is killed by its own clause and by nothing else.",
    )
    parser.add_argument("only", nargs="*", help="mutant specs (module:Class) to run; default all")
    parser.add_argument("--profile", default="quick", choices=("quick", "default", "thorough"))
    parser.add_argument(
        "--shrink",
        action="store_true",
        help="shrink counterexamples (slower; gives the shrunk sizes)",
    )
    args = parser.parse_args(argv)
    from reference_engines.mutants import KILLS

    unknown = [s for s in args.only if s not in KILLS]
    if unknown:
        print(
            "python -m conformance.devtools mutants: error: unknown mutant(s) "
            f"{', '.join(unknown)}; known: " + ", ".join(sorted(KILLS)),
            file=sys.stderr,
        )
        return 2
    rows = run_matrix(args.only or None, profile=args.profile, shrink=args.shrink)
    for line in format_matrix(rows):
        print(line)
    bad = [r for r in rows if not r.skipped_reason and not (r.killed and r.clean)]
    return 1 if bad else 0
