"""Covers conformance.devtools.killmatrix and reference_engines.mutants: every mutant fails its
own clause, with its message pinned by regex, and nothing unrelated; the reference engines fail
nothing, over the whole case stream (checks and bundled scenarios). In-process, quick profile.

Marked ``slow`` (the whole stream once per mutant, twin and reference engine: most of the
suite's CPU); ``.ci/run`` runs it with the other slow tests. Shrinking is off here (the first
failing example is enough to prove a kill); ``benchmarks/bench_conformance.py`` measures shrunk
counterexamples.
"""

from __future__ import annotations

import functools
import re

import pytest

from conformance.authoring import registry
from conformance.clauses import catalogue
from conformance.devtools.killmatrix import (
    format_matrix,
    judge,
    owns,
    run_mutant,
    run_reference,
    run_twin,
)
from conformance.run.session import Result
from reference_engines.mutants import KILLS, KNOWN_FINDINGS, REFERENCES, TWINS, optional_references

pytestmark = pytest.mark.slow

#: Engine-facing clauses and the kit clauses (the catalogue's, less permission-only ones); each
#: needs a check and a mutant.
ENGINE_FACING = [
    c.id
    for c in catalogue.CLAUSES.values()
    if c.side in (catalogue.ENGINE, catalogue.KIT) and not c.permission_only
]


@functools.cache
def _row(spec):
    """The mutant's row, computed once per process (each test asks for its own, so xdist
    workers share the mutants out instead of each running all of them)."""
    return run_mutant(spec, profile="quick", shrink=False)


@pytest.fixture(scope="module")
def matrix():
    """Rows by mutant spec, computed on first use."""

    class Rows(dict):
        def __missing__(self, spec):
            return _row(spec)

    return Rows()


@pytest.mark.parametrize(
    "spec", list(KILLS), ids=[s.replace("reference_engines.mutants.", "") for s in KILLS]
)
def test_mutant_is_killed_by_its_own_clause_only(spec, matrix):
    row = matrix[spec]
    if row.skipped_reason:
        pytest.skip(f"{spec}: {row.skipped_reason}")
    kill = KILLS[spec]
    assert row.killed, f"{spec} ({kill.clause}) was not killed:\n" + "\n".join(format_matrix([row]))
    assert re.search(kill.pattern, row.message)
    assert row.message.startswith(f"[{kill.clause} ") or row.message.startswith("[S0 ")
    assert row.clean, f"{spec} also failed unrelated checks:\n" + "\n".join(row.unrelated)


@pytest.mark.parametrize("spec", list(REFERENCES) + optional_references())
def test_reference_engine_fails_nothing(spec):
    results = run_reference(spec, profile="quick")
    bad = [
        (r.check, r.message[:300])
        for r in results
        if r.outcome not in ("passed", "skipped", "xfailed")
    ]
    assert bad == []
    # known findings (reported to the engine's owner) must still be there: strict expected failures
    assert sorted(r.check for r in results if r.outcome == "xfailed") == sorted(
        KNOWN_FINDINGS.get(spec, {})
    )
    assert sum(r.outcome == "passed" for r in results) >= 30


@pytest.mark.parametrize("twin", sorted(TWINS))
def test_correct_twin_fails_nothing(twin):
    """The fixed twin of a mutant passes clean on every case (no false alarm of the check that
    kills the mutant), and its mutant is in the matrix."""
    assert TWINS[twin] in KILLS, twin
    bad = [
        (r.check, r.message[:300])
        for r in run_twin(twin, profile="quick")
        if r.outcome not in ("passed", "skipped")
    ]
    assert bad == [], twin


def test_every_engine_facing_clause_has_a_check_and_a_mutant():
    checked = {c.clause for c in registry.all_checks()}
    killed = {k.clause for k in KILLS.values()}
    assert [c for c in ENGINE_FACING if c not in checked] == []
    assert [
        c for c in ENGINE_FACING if c not in killed and c != "H6"
    ] == []  # H6: also the host's router mutant
    assert "H6" in killed


def test_judge_rules():
    ok = Result(
        "V2-x", "V2", "MUST", "failed", "[V2 MUST] compress() output: expected no orphan, got one."
    )
    other = Result(
        "A6-x", "A6", "MUST", "failed", "[A6 MUST] compression_count: expected 1, got 0."
    )
    gate = Result(
        "S0-structural-gate",
        "S0",
        "MUST",
        "failed",
        "[S0 MUST] surface: ... [A1] 'name' is a method",
    )
    assert owns(gate.message, "A1") and not owns(gate.message, "V2")
    row = judge("m", "V2", r"orphan", [ok, other], 1.0)
    assert row.killed and not row.clean and row.unrelated[0].startswith("A6-x")
    row = judge("m", "V2", r"never matches", [ok], 1.0)
    assert not row.killed
