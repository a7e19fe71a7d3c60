"""Covers conformance.scenarios.expectations (finding_clause, METHOD_CLAUSES; judged through
conformance.run.session.scenario_results): scenario findings weigh what the checks of the same
clause weigh.

An engine error seen in a scenario is reported under the clause of the method that raised,
at that clause's registry level (never above the expectation's own level); bundled
expectations are never stronger than the registry's level for their clause.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.authoring import registry
from conformance.clauses.catalogue import METHOD_CLAUSES
from conformance.clauses.errors import strip_repro
from conformance.run.session import scenario_results
from conformance.scenarios import library_paths
from conformance.scenarios.loader import load_scenario, load_text
from tests.scenarios.engines import SelectRaises, SessionStartRaises

LIBRARY = Path(__file__).resolve().parents[2] / "conformance" / "scenarios" / "library"

#: Bundled expectations allowed to be stronger than the registry's level for their clause
#: (and clauses no check serves), with the reason. Host-side clauses have no check; the
#: scenario is where the kit tests them end to end, at the contract's own word.
STRONGER_BY_DESIGN = {
    "B7": (
        "host-side clause (gateway hygiene, docs/coverage.md): "
        "no engine check; the scenario is its end-to-end test"
    ),
    "U3": (
        "host-side clause (uids kept across host copies): no engine check; compress() "
        "keeping message_uid on the rows it keeps is what the scenario observes"
    ),
}

#: Expectations that observe exactly what one registered check observes: same level.
SAME_AS_CHECK = {
    ("h3-history-untouched", "history-not-rewritten"): "H3-select-context-leaves-inputs-alone",
    ("l1-reset-new", "reset-zeroes-compression-count"): "O3-reset-zeroes-compression-count",
    ("l1-reset-new", "new-zeroes-compression-count"): "O3-reset-zeroes-compression-count",
    ("l1-reset-new", "reset-zeroes-last-prompt-tokens"): "O3-reset-zeroes-token-counters",
    ("c1-subagents", "parent-window-unchanged"): "C2-child-update-model-isolated",
}


def _bundled():
    for path in library_paths():
        scenario = load_scenario(path)
        for exp in scenario.expectations:
            yield scenario.name, exp


def test_no_bundled_expectation_is_stronger_than_the_registry():
    bad = []
    for name, exp in _bundled():
        level = registry.clause_level(exp.clause)
        if level is None or (exp.level == "MUST" and level == "SHOULD"):
            if exp.clause not in STRONGER_BY_DESIGN:
                bad.append(f"{name}:{exp.id} is [{exp.clause} {exp.level}], registry level {level}")
    assert not bad, "\n".join(bad)


def test_expectations_that_mirror_a_check_have_its_level():
    levels = {(name, exp.id): exp.level for name, exp in _bundled()}
    for key, check_id in SAME_AS_CHECK.items():
        assert key in levels, key
        assert levels[key] == registry.get(check_id).level, (key, check_id)


def test_every_method_clause_has_checks():
    for method, clause in METHOD_CLAUSES.items():
        assert registry.clause_level(clause) is not None, (method, clause)


class BothRaise(SelectRaises, SessionStartRaises):
    """A hook error (SHOULD) and a lifecycle error (MUST): the MUST one is reported."""


def _errors_result(engine, file="h3_history_untouched.scenario.yaml"):
    results = scenario_results(load_scenario(LIBRARY / file), engine)
    return next(r for r in results if r.check.endswith(":no-engine-errors")), results


@pytest.mark.parametrize(
    "file", ["h3_history_untouched.scenario.yaml", "c1_subagents.scenario.yaml"]
)
def test_a_raising_hook_is_h1_should_in_every_scenario(file):
    result, results = _errors_result(SelectRaises, file)
    assert result.outcome == "failed"
    assert (result.clause, result.level) == ("H1", "SHOULD")
    assert result.message.startswith("[H1 SHOULD] scenario ")
    assert "select_context() raised ValueError: selector broke" in result.message
    assert "the host fails open" in result.message
    assert not [r for r in results if r.outcome == "failed" and r.level == "MUST"], [
        r.message for r in results if r.outcome == "failed"
    ]


def test_a_raising_session_start_is_o1_must():
    result, _ = _errors_result(SessionStartRaises)
    assert (result.outcome, result.clause, result.level) == ("failed", "O1", "MUST")
    assert "on_session_start() raised RuntimeError" in result.message


def test_the_weightiest_error_is_reported():
    result, _ = _errors_result(BothRaise)
    assert (result.clause, result.level) == ("O1", "MUST")
    assert "the first under O1 shown" in result.message


def test_a_should_expectation_caps_the_level():
    text = """
name: capped
seed: 1
host: {context_length: 8000}
steps:
  - user: {topic: deploy, words: 50}
expect:
  - {id: errors, clause: L1, level: SHOULD, no_engine_errors: true}
"""
    result = scenario_results(load_text(text), SessionStartRaises)[0]
    assert (result.outcome, result.clause, result.level) == ("failed", "O1", "SHOULD")


def test_an_expected_failure_by_the_finding_clause_covers_it():
    results = scenario_results(
        load_scenario(LIBRARY / "h3_history_untouched.scenario.yaml"),
        SelectRaises,
        xfails={"H1": "selector is being rewritten"},
    )
    result = next(r for r in results if r.check.endswith(":no-engine-errors"))
    assert (
        result.outcome == "xfailed"
        and "[expected failure: selector is being rewritten]" in result.message
    )


def test_an_h3_finding_shows_the_changed_text_with_its_ellipsis():
    from reference_engines.mutants.scn_select_mutates import SelectMutatesInPlace

    results = scenario_results(
        load_scenario(LIBRARY / "h3_history_untouched.scenario.yaml"), SelectMutatesInPlace
    )
    result = next(r for r in results if r.check.endswith(":history-not-rewritten"))
    assert result.outcome == "failed" and result.level == "SHOULD"
    message = strip_repro(result.message)
    assert "(at character " in message and ': "...' in message, message
    assert "..." in message.split("(at character", 1)[1]
    assert message.endswith(". See docs/contract.md#h3 (context-engine-kit explain H3).")
