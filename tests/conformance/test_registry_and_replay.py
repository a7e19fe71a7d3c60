"""Covers conformance.authoring.registry, conformance.checks.s_structure,
conformance.authoring.strategies,
conformance.run.replay and conformance.devtools.coverage: registry shape, the structural gate,
strategies, failure files and docs/coverage.md."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import conformance
from conformance import run_conformance
from conformance.authoring import registry
from conformance.authoring.context import CheckContext
from conformance.authoring.expect import v1_problems, v2_problems, v3_problems, v4_problems
from conformance.authoring.strategies import compactable_histories, transcripts
from conformance.checks.s_structure import structural_problems
from conformance.clauses import catalogue
from conformance.run.session import ConformanceSession, Result, RunOptions
from reference_engines.mutants._base import MinimalEngine
from reference_engines.mutants.o_optional import ResetKeepsCompletion
from reference_engines.mutants.v4_drops_system import DropsSystemPrompt
from simulator.provider.tokens import count_messages

ID_RE = re.compile(r"^(REG-[a-j]|[A-Z]{1,3}\d+)-[a-z0-9-]+(\[[a-z0-9_-]+\])?$")


def test_ids_are_ascii_sorted_unique_and_carry_level_and_since():
    checks = registry.all_checks()
    ids = [c.id for c in checks]
    assert len(ids) == len(set(ids)) > 70
    assert ids == [c.id for c in registry.all_checks()]  # deterministic order
    assert ids == sorted(ids, key=catalogue.sort_key)
    for c in checks:
        assert c.id.isascii() and ID_RE.match(c.id), c.id
        assert c.level in ("MUST", "SHOULD") and re.match(r"^\d+\.\d+$", c.since)
    assert (
        conformance.CONTRACT_VERSION == "1.1"
        and conformance.CONTRACT_VERSION != conformance.__version__
    )


def test_structural_gate_reports_every_problem_at_once():
    class Broken(MinimalEngine):
        def name(self):  # not a property
            return "broken"

        def handle_tool_call(self, name, args):  # no **kwargs: the host passes messages=
            return "{}"

        def on_turn_complete(self, messages, usage=None):  # no **kwargs
            return None

    from agent.context_engine import ContextEngine

    problems = structural_problems(Broken(), ContextEngine)
    assert [p.split("]")[0] + "]" for p in problems] == ["[A1]", "[O6]", "[O10]"]
    results = run_conformance(Broken, profile="quick", only=["S0"])
    assert results[0].outcome == "failed"
    assert results[0].message.startswith(
        "[S0 MUST] Broken surface: expected the documented ContextEngine "
        "signatures, got 3 problem(s): [A1] 'name' is a method"
    )


@settings(max_examples=40, deadline=None, database=None)
@given(history=transcripts(uids="any", max_turns=6))
def test_transcripts_are_valid_by_construction(history):
    assert not v1_problems(history) and not v2_problems(history) and not v3_problems(history)
    assert not v4_problems(history, history)


@settings(max_examples=5, deadline=None, database=None)
@given(history=compactable_histories(min_tokens=8_000, small_tail=7))
def test_compactable_histories_cross_the_threshold_with_a_small_tail(history):
    assert count_messages(history) > 8_000
    assert history[-1]["role"] == "user" and all(len(m["content"]) < 20 for m in history[-7:])
    assert not v2_problems(history)


def test_draws_are_labelled_and_recorded():
    seen = []

    def body(draw):
        draw(st.integers(0, 3), "alpha")
        draw(st.integers(0, 3), "alpha")
        seen.append(dict(conformance.authoring.context.CURRENT_DRAWS.get()))

    CheckContext(MinimalEngine, profile="quick").examples(body)
    assert seen and set(seen[0]) == {"alpha", "alpha#2"}


def test_failure_file_replays_the_same_failure(tmp_path):
    only = ["V4-system-prompt-first[compress]"]
    first = run_conformance(DropsSystemPrompt, profile="quick", only=only, failures_dir=tmp_path)[0]
    assert first.outcome == "failed" and first.replay_file
    data = json.loads(open(first.replay_file, encoding="utf-8").read())
    assert data["check"] == only[0] and "history" in data["example"]["draws"]
    assert data["derandomize"] is True and "seed" in data
    again = run_conformance(DropsSystemPrompt, replay=first.replay_file)
    assert [r.check for r in again] == only
    assert (
        again[0].outcome == "failed"
        and again[0].message.split(" See ")[0] == first.message.split(" See ")[0]
    )
    assert first.example_messages is not None and first.example_messages <= len(
        data["example"]["draws"]["history"]
    )


def test_state_machine_failures_replay_their_steps(tmp_path):
    only = ["L1-lifecycle-state-machine"]
    first = run_conformance(
        ResetKeepsCompletion, profile="default", only=only, failures_dir=tmp_path
    )[0]
    assert first.outcome == "failed" and first.message.startswith(
        "[O3 MUST] engine.last_completion_tokens"
    )
    steps = json.loads(open(first.replay_file, encoding="utf-8").read())["example"]["draws"][
        "steps"
    ]
    assert ["reset", {}] in steps
    again = run_conformance(ResetKeepsCompletion, replay=first.replay_file)[0]
    assert again.outcome == "failed" and again.message.startswith("[O3 MUST]")
    assert run_conformance(MinimalEngine, replay=first.replay_file)[0].outcome == "passed"


def test_coverage_doc_is_generated_from_the_registry():
    from conformance.devtools.coverage import COVERAGE, render

    assert COVERAGE.read_text(encoding="utf-8") == render(), (
        "run: python -m conformance.devtools coverage"
    )
    text = render()
    for clause in ("A1", "V2", "TS3", "B6", "R4", "H2", "U9", "P1", "K2", "S0", "D1"):
        assert re.search(rf"^\| {clause} \|", text, re.M), clause
    assert "**none**" not in text


@pytest.mark.slow
def test_devtools_mutants_prints_the_matrix():
    from conformance.devtools.__main__ import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["mutants", "reference_engines.mutants.a_surface:DropsCompletionTokens"])
    assert rc == 0
    assert re.search(
        r"^A2\s+a_surface:DropsCompletionTokens\s+KILLED\s+A2-usage-updates-counters",
        out.getvalue(),
        re.M,
    )


def test_profiles_have_no_deadline_and_ci_is_derandomized(monkeypatch):
    from conformance.authoring.context import PROFILES

    assert PROFILES["quick"] < PROFILES["default"] < PROFILES["thorough"]
    ctx = CheckContext(MinimalEngine, profile="thorough", derandomize=False)
    assert ctx.settings().deadline is None and ctx.settings().max_examples == PROFILES["thorough"]
    monkeypatch.setenv("CI", "true")
    assert CheckContext(MinimalEngine, derandomize=False).derandomize is True


def test_expected_failures_are_non_strict_unless_asked():
    from conformance.run.session import exit_code

    xpass = Result("A2-x", "A2", "MUST", "xpassed", "expected failure did not happen")
    xfail = Result("V4-x", "V4", "MUST", "xfailed", "[V4 MUST] ... [expected failure: known]")
    should = Result("A1-x", "A1", "SHOULD", "failed", "[A1 SHOULD] ...")
    assert exit_code([xpass, xfail, should]) == 0
    assert exit_code([xpass], strict=True) == 1 and exit_code([should], strict=True) == 1
    engine_attr = type("E", (MinimalEngine,), {"conformance_expected_failures": {"V4": "known"}})
    results = run_conformance(
        engine_attr, profile="quick", only=["V4-system-prompt-first[compress]"]
    )
    assert (
        results[0].outcome == "xpassed"
    )  # MinimalEngine keeps the system prompt: XPASS is reported


def _l1_check_raising(clause):
    """An L1 check whose body finds a break of ``clause`` (as the L1 state machine reports V2)."""
    from conformance.clauses.errors import ContractViolation

    def body(ctx):
        raise ContractViolation(
            clause,
            "MUST",
            "compress() output in the lifecycle: expected a valid history, "
            "got an orphan tool result.",
        )

    return registry.Check(
        id="L1-synthetic", clause="L1", level="MUST", since="1.1", title="t", func=body
    )


def test_expected_failure_by_clause_covers_a_failure_of_that_clause_inside_another_check():
    def run_check(chk, xfails):
        session = ConformanceSession(RunOptions(profile="quick", xfails=xfails), MinimalEngine)
        return session.run_case(chk)

    chk = _l1_check_raising("V2")
    result = run_check(chk, xfails={"V2": "known orphan"})
    assert result.outcome == "xfailed", result
    assert result.message.startswith("[V2 MUST] compress() output in the lifecycle")
    assert result.message.endswith("[expected failure: known orphan]")
    assert (
        run_check(chk, xfails={"V4": "other"}).outcome == "failed"
    )  # another clause does not cover it
    assert run_check(chk, xfails={"V2-tool-results-paired": "a check id"}).outcome == "failed"
    assert run_check(_l1_check_raising("L1"), xfails={"V2": "x"}).outcome == "failed"


def test_xfails_file_format(tmp_path):
    from conformance.run.session import read_xfails_file, unmatched_xfails

    path = tmp_path / "x.txt"
    path.write_text(
        "# comment\n\nV2-tool-results-paired[compress]  # known orphan\n"
        "A6 counts no-op passes\nQ9\n"
    )
    got = read_xfails_file(path)
    assert got == {
        "V2-tool-results-paired[compress]": "known orphan",
        "A6": "counts no-op passes",
        "Q9": f"listed in {path}",
    }
    assert unmatched_xfails(got, registry.all_checks()) == ["Q9"]


def test_budgets_are_declared_in_the_registry_and_scaled_by_the_profile():
    from conformance.authoring.context import PROFILES, THOROUGH_SCALE, budget

    checks_dir = Path(conformance.__file__).parent / "checks"
    for path in checks_dir.glob("*.py"):  # no check caps its own examples
        assert "max_examples=min(" not in path.read_text(encoding="utf-8"), path.name
    for chk in registry.all_checks():
        quick, default, thorough = (budget(p, chk.examples) for p in PROFILES)
        assert quick <= default < thorough, chk.id
        assert thorough == (chk.examples or PROFILES["default"]) * (
            THOROUGH_SCALE if chk.examples else 5
        ), chk.id


def test_thorough_draws_more_examples_than_default_in_a_real_check():
    counts = {}
    for profile in ("default", "thorough"):
        session = ConformanceSession(RunOptions(profile=profile), MinimalEngine)
        result = session.run_case(registry.get("O8-status-keys"))
        session.close()
        assert result.outcome == "passed"
        counts[profile] = result.examples_run
    assert counts["thorough"] > counts["default"] >= registry.get("O8-status-keys").examples


def test_run_conformance_refuses_a_replay_file_for_a_check_the_kit_lacks(tmp_path):
    """A failure file for an unknown check is the same usage error in run_conformance() as in
    pytest (it ran nothing and passed before), and a file for a known check still loads."""
    from conformance.clauses.errors import KitUsageError
    from conformance.run import replay

    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"check": "Z9-renamed-long-ago", "example": {"draws": {}}}))
    with pytest.raises(KitUsageError, match="which this kit does not have"):
        run_conformance(MinimalEngine, replay=str(stale))
    known = tmp_path / "known.json"
    check_id = next(iter(registry.all_checks())).id
    known.write_text(json.dumps({"check": check_id, "example": {"draws": {}}}))
    assert replay.load(known)["check"] == check_id
