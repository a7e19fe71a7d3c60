"""--host-profile and the host ABC decide which clauses exist (issue 2 item 2, issue 4 item 8)."""

from __future__ import annotations

from conformance import registry
from conformance.context import CheckContext
from conformance.runner import applicability, profile_skip_reason, run_conformance
from reference_engines.router import ReferenceRouter
from simulator.host.shim import AbcInfo

ABSENT_ON_019 = ("H3-", "H5-", "H6-", "O9-", "O10-", "C1-", "O11-", "K1-model-thresholds", "U2-", "U10-")


def test_hermes_019_profile_skips_the_clauses_that_host_lacks():
    results = {r.check: r for r in run_conformance(ReferenceRouter, profile="quick", host_profile="hermes-0.19",
                                                  scenarios=False, only=["H3", "H5", "C1", "U2", "A2"])}
    for check, r in results.items():
        if check.startswith("A2"):
            assert r.outcome == "passed"
        else:
            assert r.outcome == "skipped", (check, r.outcome)
            assert "host profile 'hermes-0.19'" in r.message


def test_documented_profile_runs_them():
    results = run_conformance(ReferenceRouter, profile="quick", scenarios=False, only=["H3", "H5", "C1"])
    assert results and all(r.outcome == "passed" for r in results), [(r.check, r.outcome) for r in results]


def test_an_abc_without_the_hooks_skips_with_its_version():
    ctx = CheckContext(ReferenceRouter, abc=AbcInfo("hermes-agent", "0.19.0", frozenset()))
    for chk in registry.all_checks():
        if chk.id.startswith(ABSENT_ON_019):
            reason = applicability(chk, ctx)
            assert reason and "hermes-agent 0.19.0" in reason, chk.id
    assert applicability(registry.get("A2-usage-updates-counters"), ctx) is None


def test_scenario_expectations_follow_the_profile():
    assert profile_skip_reason("K1", "hermes-0.19")
    assert profile_skip_reason("K1", "documented") is None
    assert profile_skip_reason("L1", "hermes-0.19") is None


def test_capabilities_from_the_command_line_add_to_the_engines():
    from reference_engines.mutants._base import MinimalEngine

    plain = CheckContext(MinimalEngine)
    extra = CheckContext(MinimalEngine, extra_capabilities=frozenset({"compressor"}))
    chk = next(c for c in registry.all_checks() if "compressor" in c.requires)
    assert applicability(chk, plain) and "lacks capability 'compressor'" in applicability(chk, plain)
    assert applicability(chk, extra) is None
