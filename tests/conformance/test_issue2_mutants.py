"""The four tiny broken engines of issue 2 each fail with their own clause id, and only it."""

from __future__ import annotations

import pytest

from conformance import run_conformance
from conformance.engine_loading import load_engine_factory
from reference_engines.mutants import MUTANTS

GOOD = "reference_engines.mutants._base:MinimalEngine"


@pytest.mark.parametrize("spec", sorted(MUTANTS))
def test_mutant_fails_its_clause_and_nothing_else(spec):
    clause = MUTANTS[spec]
    results = run_conformance(load_engine_factory(spec), profile="quick")
    bad = [r for r in results if r.outcome in ("failed", "error")]
    must = [r for r in bad if r.level == "MUST"]
    assert must, f"{spec} was not killed"
    assert {r.clause for r in bad} == {clause}, [(r.check, r.message) for r in bad]
    assert all(r.message.startswith(f"[{clause} ") for r in bad)


def test_minimal_engine_fails_nothing():
    results = run_conformance(load_engine_factory(GOOD), profile="quick")
    assert [r for r in results if r.outcome not in ("passed", "skipped")] == []
