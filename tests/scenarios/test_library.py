"""Covers conformance.scenarios (the bundled library), conformance.scenarios.runner and
conformance.scenarios.expectations (through conformance.run.session.scenario_results): the library
passes on every reference engine, and each scenario fails on at least one mutant."""

from __future__ import annotations

import importlib
import re

import pytest

from conformance.clauses.errors import strip_repro
from conformance.run.session import scenario_results
from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios import library_paths
from conformance.scenarios.loader import load_scenario

REFERENCES = [
    "reference_engines.compressor:ReferenceCompressor",
    "reference_engines.router:ReferenceRouter",
    "reference_engines.mutants._base:MinimalEngine",
    "reference_engines.lcm:LCMEngine",
]

M = "reference_engines.mutants."
#: scenario name -> a mutant that must fail it, and the clause its failure names.
KILLS = {
    "b7-gateway-hygiene": (M + "scn_noop_compress:NoopCompress", "B7"),
    "c1-subagents": (M + "scn_shared_clone:SharedClone", "C2"),
    "h3-history-untouched": (M + "scn_select_mutates:SelectMutatesInPlace", "H3"),
    "h6-cache-stability": (M + "h6_reshuffle:ReshufflingRouter", "H6"),
    "k1-model-thresholds": (M + "scn_k1_recompute_threshold:RecomputesThreshold", "K1"),
    "l1-faults-fallback": (M + "scn_never_compresses:NeverCompresses", "L1"),
    "l1-lifecycle": (M + "scn_never_compresses:NeverCompresses", "L1"),
    "l1-reset-new": (M + "scn_reset_keeps_counters:ResetKeepsCounters", "O3"),
    "p5-claude-compaction": (M + "p_caching:CacheMarkedSummary", "P5"),
    "ts1-pool-thread": (M + "scn_thread_affine:ThreadAffine", "TS1"),
    "u3-restore-branch-rotate": (M + "scn_strips_uids:StripsUids", "U3"),
    "v2-tool-heavy": (M + "v2_orphan_result:OrphanToolResult", "V2"),
    # realistic session shapes (paste, astral text, a parallel batch, repeated compaction)
    "l1-realistic-session": (M + "sessions:CapsInUtf16Units", "L1"),
}

SCENARIOS = {load_scenario(p).name: load_scenario(p) for p in library_paths()}


def factory(spec: str):
    module = spec.partition(":")[0]
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            pytest.skip(f"{module} is not on this branch yet")
        raise
    return load_engine_factory(spec)


@pytest.mark.parametrize("engine", REFERENCES, ids=lambda s: s.rpartition(":")[2])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_library_scenario_passes_on_every_reference_engine(name, engine):
    results = scenario_results(SCENARIOS[name], factory(engine))
    bad = [r.message for r in results if r.outcome != "passed" and not _k2_exempt(r)]
    assert results and not bad, "\n".join(bad)


def _k2_exempt(result) -> bool:
    """A K1 step skipped because the engine overrides update_model() (K2), as the K1 check
    skips it."""
    return result.clause == "K1" and result.outcome == "skipped" and "(K2 permits" in result.message


def test_every_library_scenario_has_a_killing_mutant():
    assert sorted(KILLS) == sorted(SCENARIOS)


@pytest.mark.parametrize("name", sorted(KILLS))
def test_each_library_scenario_fails_on_its_mutant(name):
    spec, clause = KILLS[name]
    results = scenario_results(SCENARIOS[name], factory(spec))
    failed = [r for r in results if r.outcome in ("failed", "error")]  # as the kill matrix
    assert failed, f"{spec} passes scenario {name}"
    assert any(r.clause == clause and r.message.startswith(f"[{clause} ") for r in failed), [
        r.message for r in failed
    ]
    for r in failed:  # the kit's grammar: clause, level, scenario, expectation, observation, link
        assert r.message.startswith(f"[{r.clause} {r.level}] scenario '{name}', expectation '")
        # (a failure that shares another's root cause says so after the link)
        text = re.sub(r" Same root cause as \S+ \(the verdict counts it once\)\.$", "",
                      strip_repro(r.message))  # fmt: skip
        assert text.endswith(
            f"See docs/contract.md#{r.clause.lower()} (context-engine-kit explain {r.clause})."
        ), r.message
        exp_id = r.check.rpartition(":")[2]  # then the pytest command rerunning it
        assert r.message.endswith(
            f" Repro: pytest --engine={spec} {SCENARIOS[name].source} -k '{exp_id}'"
        ), r.message


def test_claude_compaction_quotes_the_providers_400_and_passes_the_unmarked_twin():
    """P5 on a Claude model that really compacts: an engine marking its summary with
    ``cache_control`` makes five breakpoints, and the finding quotes Anthropic's answer; the
    same engine without the marker (its correct twin) passes every expectation."""
    scenario = SCENARIOS["p5-claude-compaction"]
    marked = scenario_results(scenario, factory(M + "p_caching:CacheMarkedSummary"))
    p5 = [r for r in marked if r.clause == "P5" and r.outcome == "failed"]
    assert p5, [r.message for r in marked]
    assert (
        "the provider answered '400: A maximum of 4 blocks with cache_control may be provided. "
        "Found 5.'" in p5[0].message
    ), p5[0].message
    assert any(r.clause == "L1" and r.outcome == "passed" for r in marked)  # it did compact
    twin = scenario_results(scenario, factory(M + "p_caching:UnmarkedSummary"))
    assert twin and all(r.outcome == "passed" for r in twin), [r.message for r in twin]


def test_k1_scenario_exempts_an_engine_that_owns_its_threshold_policy():
    """K1/K2: an engine whose own update_model() applies the map and then its own floors (as
    Hermes 0.22's compressor does: at least 0.75 of a window under 512K tokens, 0.85 of a tiny
    one) gets the K1 steps skipped with K2's reason, not four MUST failures; the base
    update_model's mutant still fails them (test_each_library_scenario_fails_on_its_mutant)."""
    from reference_engines.mutants._base import MinimalEngine
    from simulator.host.abc import resolve_model_threshold

    class FlooredPolicy(MinimalEngine):
        def update_model(
            self, model, context_length, base_url="", api_key="", provider="", api_mode=""
        ):
            percent = resolve_model_threshold(model, getattr(self, "model_thresholds", {}), 0.5)
            if context_length < 512_000:
                percent = max(percent, 0.75)
            self.context_length = context_length
            self.threshold_tokens = max(int(context_length * percent), int(context_length * 0.85))

    results = scenario_results(SCENARIOS["k1-model-thresholds"], FlooredPolicy)
    k1 = [r for r in results if r.clause == "K1"]
    assert len(k1) == 4 and all(r.outcome == "skipped" for r in k1), [r.message for r in k1]
    assert all("K2" in r.message and "update_model()" in r.message for r in k1)
    assert [r.outcome for r in results if r.clause != "K1"] == ["passed"]
