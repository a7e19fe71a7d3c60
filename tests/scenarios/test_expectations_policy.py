"""Covers conformance.scenarios.expectations (judge_expectation, via
conformance.run.session.scenario_results) and conformance.scenarios.runner: a
`compressions: {min: N}` expectation cannot fail an engine whose own threshold (K2) was never
reached by the scenario's prompts: it is skipped with the figures (kit fairness); a hostile
engine's SystemExit stops the scenario, not the process."""

from __future__ import annotations

from pathlib import Path

from conformance.run.session import scenario_results
from conformance.scenarios.loader import load_scenario
from conformance.scenarios.runner import run_scenario
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


def _library(name, engine):
    scenario = load_scenario(LIBRARY / f"{name}.scenario.yaml")
    return {r.check.rpartition(":")[2]: r for r in scenario_results(scenario, engine)}


class NeverCompacts(MinimalEngine):
    """A select_context-only engine: never asks to compact, compress() returns its input."""

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1
        return messages


def test_an_engine_that_never_compacts_skips_the_compaction_expectations():
    """No clause asks an engine to compact: `compressions` and `compression_count >= n` skip
    with the reason, the call orders judge the rest, nothing fails."""
    lifecycle = _library("l1_lifecycle", NeverCompacts)
    assert lifecycle["automatic-and-manual-compaction"].outcome == "skipped"
    assert "never compacts" in lifecycle["automatic-and-manual-compaction"].message
    assert lifecycle["lifecycle-order"].outcome == "passed"
    reset = _library("l1_reset_new", NeverCompacts)
    assert reset["compacted-before-reset"].outcome == "skipped"
    assert reset["reset-and-new-order"].outcome == "passed"
    assert all(r.outcome in ("passed", "skipped") for r in reset.values())


class DeclinesSometimes(MinimalEngine):
    """Compacts, but its manual passes decline (the input back): a decline is legal."""

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, **kw):
        if force:
            self.compression_count += 1
            return messages
        return super().compress(messages, current_tokens, focus_topic, **kw)


def test_a_declined_pass_counts_for_the_compaction_minimum():
    results = _library("l1_lifecycle", DeclinesSometimes)
    assert results["automatic-and-manual-compaction"].outcome == "passed"


class CountsOnlyCompactions(MinimalEngine):
    """Counts compactions only (Hermes' rule), and its compress() never compacts on its own."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        return messages


def test_counting_a_pass_that_changed_nothing_is_a6_should():
    """compression_count >= 1 after passes that all declined: A6's SHOULD rule, not L1's MUST."""
    results = _library("l1_reset_new", CountsOnlyCompactions)
    r = results["compacted-before-reset"]
    assert r.outcome == "failed" and r.clause == "A6" and r.level == "SHOULD", r.message
    assert "changed nothing" in r.message


class RaisingCompress(MinimalEngine):
    """compress() always raises (a real fault, reported by no-engine-errors)."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        raise TypeError("summary() takes 1 positional argument")


def test_a_count_after_raising_passes_says_they_raised_not_that_they_changed_nothing():
    results = _library("l1_reset_new", RaisingCompress)
    r = results["compacted-before-reset"]
    assert r.outcome == "failed" and "raised or returned no list" in r.message, r.message
    assert "that all changed nothing" not in r.message
    # one root cause, the exception's (A4's finding), not "compress returned NoneType"
    errors = results["no-engine-errors"]
    assert r.root_cause and r.root_cause == errors.root_cause, (r.root_cause, errors.root_cause)
    assert "returned" not in r.root_cause


class RaisingHighThreshold(RaisingCompress):
    """compress() raises, and the threshold sits above the scenario's prompts."""

    threshold_percent = 0.99


def test_a_shortfall_after_a_failed_manual_pass_is_not_put_on_the_threshold():
    """A manual /compress reaches compress() below the threshold: when that pass raised, the
    missing compaction is its failure, not the threshold policy's (it was skipped as out of
    the scenario's reach); the same threshold with a working compress() still skips (twin:
    test_unreached_threshold_skips_the_compaction_count)."""
    results = _results(RaisingHighThreshold)
    r = next(r for k, r in results.items() if k.endswith("automatic-and-manual-compaction"))
    assert r.outcome == "failed", r.message
    assert "never reached the engine's own threshold_tokens" not in r.message


def test_a_size_bound_with_no_pass_to_measure_is_skipped_not_passed():
    """tokens_after_compaction holds every handed-back pass to a bound: where every pass raised
    there is nothing to measure, so it is skipped (it passed with nothing checked); the same
    bound on an engine whose passes ran is judged (its twin)."""
    failing = _library("v2_tool_heavy", RaisingCompress)["fits-after-compaction"]
    assert failing.outcome == "skipped", failing.message
    assert "no compress() pass of this run handed back messages to measure" in failing.message
    working = _library("v2_tool_heavy", ReferenceCompressor)["fits-after-compaction"]
    assert working.outcome == "passed", working.message


def test_rotation_mode_scenario_rotates_mid_session_and_keeps_uids(tmp_path):
    """`host.compression.in_place: false`: automatic compactions rotate the session (a child per
    commit, boundary callbacks with the child's id); uids stay stable along the lineage."""
    path = tmp_path / "rot.scenario.yaml"
    path.write_text(
        "name: rotation-mode\nseed: 3\nhost:\n  context_length: 8000\n"
        "  compression: {in_place: false}\nsteps:\n"
        "  - user: {topic: deploy, words: 500, repeat: 10}\n"
        "expect:\n"
        "  - {id: compacted, clause: L1, level: MUST, compressions: {min: 1}}\n"
        "  - {id: uids, clause: U3, level: MUST, uids_stable: true}\n"
        "  - {id: errors, clause: L1, level: MUST, no_engine_errors: true}\n"
    )
    scenario = load_scenario(path)
    run = run_scenario(scenario, MinimalEngine)
    main = run.main
    first = next(s for s in run.sessions)[1]
    assert main.store.session_info(main.session_id).parent_session_id is not None
    assert first.compactions >= 1
    starts = [c for c in run.recorder.calls if c.method == "on_session_start"]
    assert len(starts) >= 2
    results = scenario_results(scenario, MinimalEngine, run=run)
    assert all(r.outcome == "passed" for r in results), [r.message for r in results]


class CloneFails(MinimalEngine):
    """A C1 fault: clone_for_agent() raises, so every agent runs the host's built-in (C3)."""

    def clone_for_agent(self):
        raise RuntimeError("holds a connection that cannot be copied")


def test_a_fallen_back_agent_is_judged_only_by_the_fallback_expectations():
    # the host's own minimal built-in ran in the engine's place: l1-reset-new's
    # compacted-before-reset would read the built-in's compression_count (it does not count
    # passes that changed nothing), and any pass would credit the engine with the built-in's work
    results = _library("l1_reset_new", CloneFails)
    errors = results["no-engine-errors"]
    assert errors.outcome == "failed" and errors.clause == "C1"
    rest = [r for k, r in results.items() if k != "no-engine-errors"]
    assert rest and all(r.outcome == "skipped" for r in rest), [(r.check, r.outcome) for r in rest]
    assert all("built-in compressor in place of this engine" in r.message for r in rest)
    assert "holds a connection that cannot be copied" in rest[0].message


def test_an_engine_whose_clone_works_is_judged_on_every_expectation():
    # the twin: the same engine with a working clone_for_agent is judged as before
    results = _library("l1_reset_new", MinimalEngine)
    assert all(r.outcome == "passed" for r in results.values()), [
        (r.check, r.outcome, r.message) for r in results.values() if r.outcome != "passed"
    ]
