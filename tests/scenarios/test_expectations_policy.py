"""Covers conformance.scenarios.expectations (judge_expectation, via
conformance.session.scenario_results) and conformance.scenarios.runner: a
`compressions: {min: N}` expectation cannot fail an engine whose own threshold (K2) was never
reached by the scenario's prompts: it is skipped with the figures (kit fairness); a hostile
engine's SystemExit stops the scenario, not the process."""

from __future__ import annotations

from pathlib import Path

from conformance.scenarios.loader import load_scenario
from conformance.scenarios.runner import run_scenario
from conformance.session import scenario_results
from reference_engines.compressor import ReferenceCompressor
from reference_engines.mutants._base import MinimalEngine

LIBRARY = Path(__file__).resolve().parents[2] / "conformance" / "scenarios" / "library"


class HighThreshold(MinimalEngine):
    """A legitimate policy: compacts only at 99% of the window."""

    threshold_percent = 0.99


def _results(engine):
    scenario = load_scenario(LIBRARY / "l1_lifecycle.scenario.yaml")
    return {r.check: r for r in scenario_results(scenario, engine)}


def test_unreached_threshold_skips_the_compaction_count():
    results = _results(HighThreshold)
    counted = [r for k, r in results.items() if k.endswith("automatic-and-manual-compaction")]
    assert counted and counted[0].outcome == "skipped"
    assert "never reached the engine's own threshold_tokens" in counted[0].message


def test_reached_threshold_still_counts():
    results = _results(MinimalEngine)
    counted = [r for k, r in results.items() if k.endswith("automatic-and-manual-compaction")]
    assert counted and counted[0].outcome == "passed"


class ExitsOnCompress(MinimalEngine):
    """A hostile engine: SystemExit from compress() must stop the scenario, not the process."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        raise SystemExit(3)


def test_system_exit_from_an_engine_stops_the_scenario_not_the_process():
    scenario = load_scenario(LIBRARY / "l1_lifecycle.scenario.yaml")
    run = run_scenario(scenario, ExitsOnCompress, builtin_factory=ReferenceCompressor)
    assert run.stopped is not None and "SystemExit" in run.stopped[1]
    results = scenario_results(scenario, ExitsOnCompress, run=run)
    assert results and all(r.outcome in ("error", "passed", "failed", "skipped") for r in results)
