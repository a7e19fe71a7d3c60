"""Covers the invariants on realistic sessions (conformance.checks.sessions) against engines
the kit's authors did not write as mutants: five held-out pairs (tests/heldout_sessions/
engines.py), each fault caught with a finding of its clause, each fixed twin free of MUST
failures over the whole case stream. Marked ``slow`` (the whole stream per engine)."""

from __future__ import annotations

import pytest

from conformance.run.session import run_conformance
from conformance.runtime.engine_loading import load_engine_factory
from tests.heldout_sessions.engines import PAIRS

pytestmark = pytest.mark.slow

MODULE = "tests.heldout_sessions.engines:"


def _failures(spec):
    results = run_conformance(load_engine_factory(MODULE + spec), profile="quick", shrink=False)
    return [r for r in results if r.outcome in ("failed", "error")]


@pytest.mark.parametrize("fault", list(PAIRS))
def test_heldout_fault_is_caught_by_its_clause(fault):
    clause = PAIRS[fault][1]
    failures = _failures(fault)
    assert any(r.clause == clause for r in failures), (
        f"{fault}: no {clause} finding; got {[(r.check, r.message[:120]) for r in failures]}"
    )


@pytest.mark.parametrize("fault", list(PAIRS))
def test_heldout_fixed_twin_is_must_clean(fault):
    twin = PAIRS[fault][0]
    must = [r for r in _failures(twin) if r.level == "MUST"]
    assert not must, f"{twin}: {[(r.check, r.message[:200]) for r in must]}"
