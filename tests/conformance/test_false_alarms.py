"""Covers the false alarms a correct engine met and the faults counted many times, each on the
engine shape that showed it (tests/conformance/false_alarm_engines.py): the correct engine of
that shape stays clean, a faulty one is still caught, and one root cause is one finding.

- B7's hygiene expectation on a pass-through engine (conformance.scenarios.expectations);
- tiktoken's cl100k_base served offline from the kit's verified file (conformance.runtime.sandbox);
- daemon threads that use ``tempfile`` after their case (conformance.runtime.sandbox, case folders);
- one root cause, one finding: a constructor's E1, a constructor that raises, a compress()
  crash on list content (A4 first), a float threshold_tokens, a generator compress()
  (conformance.run.session, conformance.run.verdict, conformance.checks.engine_calls);
- the kit's own time never charged to an engine's budget share
(conformance.runtime.timeouts.kit_time);
- ``Repro:`` lines that run as printed without an activated virtualenv
  (conformance.clauses.errors.pytest_command);
- V2 where the engine compacts by its own thresholds, TS3's race forced at every sqlite3 call
  (conformance.checks.engine_calls.compaction_point, conformance.checks.ts_threads.Rendezvous).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conformance import run_conformance
from conformance.clauses.errors import pytest_command
from conformance.run.verdict import Verdict
from conformance.runtime.engine_loading import load_engine_factory
from conformance.runtime.sandbox import CASE_PARENT, Sandbox
from conformance.runtime.timeouts import calling, engine_seconds, kit_time
from tests.conformance import false_alarm_engines as fa

ROOT = Path(__file__).resolve().parents[2]
M = "reference_engines.mutants."


def _run(engine, only, **kwargs):
    if isinstance(engine, str):
        engine = load_engine_factory(engine)
    kwargs.setdefault("profile", "quick")
    results = run_conformance(engine, only=only, **kwargs)
    return results, Verdict(results, total=len(results))


def _bad(results):
    return [r for r in results if r.outcome in ("failed", "error")]


# -- B7: a pass-through engine -------------------------------------------------------------


def test_b7_hygiene_skips_a_pass_through_engine_and_still_fails_one_that_asks():
    results, _ = _run(fa.PassThrough, ["scenario:b7-gateway-hygiene"])
    assert not _bad(results), [r.message for r in _bad(results)]
    under = next(r for r in results if r.check.endswith("hygiene-brings-history-under-85-percent"))
    assert under.outcome == "skipped" and "never compacts" in under.message

    results, _ = _run(fa.AsksButNeverShrinks, ["scenario:b7-gateway-hygiene"])
    failed = [r for r in _bad(results) if r.clause == "B7"]
    assert failed and "expected at most 5950 tokens after a compaction" in failed[0].message


# -- E1: tiktoken in the kit's own venv ---------------------------------------------------------


def test_tiktoken_cl100k_loads_offline_in_the_sandbox_and_other_downloads_stay_blocked():
    results, _ = _run(fa.TiktokenWhenAvailable, ["A1", "A6-counters-are-ints"])
    assert results and not _bad(results), [r.message for r in _bad(results)]

    results, _ = _run(fa.TiktokenO200kWhenAvailable, ["A1-name-is-property"])
    (row,) = _bad(results)
    assert row.clause == "E1" and "openaipublic.blob.core.windows.net" in row.message


def test_tiktoken_cache_holds_the_verified_file_under_tiktokens_own_name():
    import tiktoken.load

    sandbox = Sandbox()
    try:
        sandbox.new_home()
        folder = Path(os.environ["TIKTOKEN_CACHE_DIR"])
        assert folder.parent == sandbox.root
        url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
        data = tiktoken.load.read_file_cached(url)  # no network: the cache answers
        assert data.startswith(b"IQ== 0")
    finally:
        sandbox.close()
    assert "TIKTOKEN_CACHE_DIR" not in os.environ or os.environ["TIKTOKEN_CACHE_DIR"] != str(folder)


# -- daemon threads that use tempfile -------------------------------------------------------------


def test_daemon_threads_using_tempfile_move_no_case_folder_and_raise_no_e1():
    results, _ = _run(fa.TempDirJobs, ["A4", "A6", "V1"], isolation="fork")
    assert results and not _bad(results), [r.message[:300] for r in _bad(results)]
    assert Path(CASE_PARENT) == Path(tempfile.gettempdir())
    assert not list(Path(CASE_PARENT).glob("conformance-idle-*/conformance-case-*"))


def test_a_daemon_thread_writing_to_the_real_temp_folder_is_still_e1():
    results, _ = _run(fa.TempJobsInRealTmp, ["A4-compress-returns-list"], isolation="fork")
    (row,) = _bad(results)
    assert row.clause == "E1" and str(fa.REAL_TMP) in row.message


def test_case_roots_have_an_explicit_parent_whatever_tempfile_cached():
    saved = tempfile.tempdir
    elsewhere = tempfile.mkdtemp()
    try:
        tempfile.tempdir = elsewhere  # what a daemon thread's TemporaryDirectory() can leave
        sandbox = Sandbox()
        try:
            assert sandbox.root.parent == Path(CASE_PARENT).resolve()
        finally:
            sandbox.close()
    finally:
        tempfile.tempdir = saved
        os.rmdir(elsewhere)


# -- one root cause, one finding ----------------------------------------------------------------


def test_a_constructor_e1_is_one_finding_and_every_other_clause_is_judged():
    results, verdict = _run(fa.PhonesHomeInConstructor, ["A1", "A3", "A6"])
    (row,) = _bad(results)
    assert row.clause == "E1" and "licence.example.com" in row.message
    passed = [r for r in results if r.outcome == "passed"]
    assert len(passed) >= 4 and all("reported under" in r.message for r in passed)
    assert verdict.failures_by_level()["MUST"] == 1
    results, _ = _run(fa.PassThrough, ["A1", "A3", "A6-counters-are-ints"])
    assert not _bad(results)  # the same selection on a correct engine


def test_a_constructor_that_raises_is_one_root_cause_counted_once_at_must():
    results, verdict = _run(fa.RaisesInConstructor, ["A1", "A6"])
    assert len(results) > 2 and all(r.outcome == "error" for r in results)
    (group,) = verdict.root_causes()
    assert group["level"] == "MUST" and len(group["cases"]) == len(results)
    assert verdict.failures_by_level() == {"MUST": 1, "SHOULD": 0}
    assert sum("Same root cause as" in r.message for r in results) == len(results) - 1


def test_a_crash_on_list_content_is_an_a4_finding_first():
    only = ["A4-compress-returns-list", "P5", "V4-system-prompt-first", "V1"]
    results, verdict = _run(fa.LowerCasesContent, only)
    a4 = next(r for r in results if r.check == "A4-compress-returns-list")
    assert a4.outcome == "failed" and "'list' object has no attribute 'lower'" in a4.message
    groups = verdict.root_causes()
    assert [g["first"] for g in groups] == ["A4-compress-returns-list"] or len(_bad(results)) == 1
    assert verdict.failures_by_level()["MUST"] == 1
    results, _ = _run(fa.PassThrough, only)
    assert not _bad(results)


def test_a_float_threshold_is_one_root_cause_under_a6():
    only = ["A6-counters-are-ints", "O4-update-model-sets-window", "L1-lifecycle-state-machine"]
    results, verdict = _run(fa.FloatThreshold, only)
    bad = _bad(results)
    assert len(bad) == 3 and {r.root_cause for r in bad} == {"threshold_tokens|not-an-int|float"}
    (group,) = verdict.root_causes()
    assert group["first"] == "A6-counters-are-ints"
    assert verdict.failures_by_level() == {"MUST": 1, "SHOULD": 0}


def test_a_generator_compress_is_one_a4_finding_not_randomness():
    only = ["A4-compress-returns-list", "A6-compression-count", "D1-same-input-same-output"]
    results, verdict = _run(fa.GeneratorCompress, only)
    bad = _bad(results)
    assert bad and all(r.clause == "A4" for r in bad)
    assert {r.root_cause for r in bad} == {"compress|returned|generator"}
    assert not any("random" in r.message for r in bad)
    assert verdict.failures_by_level() == {"MUST": 1, "SHOULD": 0}


def test_a_generator_compress_makes_missing_compactions_point_to_a4():
    results, _ = _run(fa.GeneratorCompress, ["scenario:l1-lifecycle"])
    missing = [r for r in _bad(results) if "committed compactions" in r.message]
    assert missing and {r.root_cause for r in missing} == {"compress|returned|generator"}


# -- the kit's time is not the engine's -------------------------------------------------------


def test_kit_time_inside_an_engine_call_is_not_engine_time():
    before = engine_seconds()
    with calling("compress"):
        with kit_time():
            time.sleep(0.3)
    assert engine_seconds() - before < 0.3


def test_the_simulated_llm_answers_under_kit_time():
    import conformance.authoring.engine_llm  # noqa: F401 - registers the hook
    from simulator.llm.engine_llm import ANSWER_HOOKS

    assert kit_time in ANSWER_HOOKS


def test_a4_summary_failure_draws_every_example_on_a_fast_engine_and_fewer_on_a_slow_one():
    results, _ = _run(
        fa.FastSummarise, ["A4-summary-failure-not-silent"], profile="default", budget=1.0
    )
    (row,) = results
    assert row.outcome == "passed" and not row.budget_reached, row.message
    results, _ = _run(
        fa.SlowSummarise, ["A4-summary-failure-not-silent"], profile="default", budget=1.0
    )
    (row,) = results
    assert row.outcome == "passed" and row.budget_reached
    assert row.examples_run < row.examples_asked


# -- Repro lines run as printed ------------------------------------------------------------------


def test_pytest_command_without_an_activated_venv(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    command = pytest_command()
    assert command.endswith(" -m pytest") and "python" in command
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    assert pytest_command() == "pytest"


@pytest.mark.slow
def test_a_repro_line_runs_as_printed_after_the_readmes_commands(tmp_path):
    """As after the README's commands: the venv is used by path, never activated, so PATH has
    no pytest of it; the printed Repro: line, pasted into a shell, reruns the failure."""
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    spec = M + "a1_name_method:NameIsMethod"
    cli = [sys.executable, "-m", "conformance.cli", "check", spec, "-k", "A1-name-is-short"]
    proc = subprocess.run(cli, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    line = next(ln for ln in proc.stdout.splitlines() if "Repro: " in ln)
    repro = line.split("Repro: ", 1)[1].strip()
    assert not repro.startswith("pytest "), repro
    rerun = subprocess.run(
        repro, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert rerun.returncode == 1 and "[A1 " in rerun.stdout, rerun.stdout[-2000:] + rerun.stderr


# -- V2 and TS3 on the engine's own thresholds ----------------------------------------------------


def test_v2_is_found_where_the_engine_compacts_by_its_own_thresholds():
    only = ["V2-in-flight-chain-kept", "V2-tool-results-paired[compress]"]
    results, _ = _run(M + "v2_own_thresholds:LeafCutSplitsToolTurn", only)
    bad = _bad(results)
    assert len(bad) == 2 and all(
        "which no earlier assistant message calls" in r.message for r in bad
    )
    results, _ = _run(M + "v2_own_thresholds:LeafTailEngine", only)
    assert not _bad(results)


@pytest.mark.parametrize("attempt", range(3))
def test_ts3_race_on_a_shared_connection_is_caught_on_every_run(attempt):
    results, _ = _run(M + "ts3_shared_connection:SharedConnectionUnlocked", ["TS3"])
    (row,) = results
    assert row.outcome == "failed" and row.clause == "TS3"
    # the two sessions' statements met on the one connection: one read the other's row,
    # committed its transaction, or began its own inside the other's (which one wins the race
    # is the scheduler's choice; each is the shared connection's fault)
    symptoms = (
        "message(s) of another session",
        "cannot commit",
        "cannot start a transaction within a transaction",
    )
    assert any(symptom in row.message for symptom in symptoms), row.message
    results, _ = _run(M + "ts3_shared_connection:SharedConnectionLocked", ["TS3"])
    assert results[0].outcome == "passed"


def test_o13_skips_where_the_host_abc_has_no_prune_tool_results_only(monkeypatch):
    """An engine written for Hermes 0.22 overrides prune_tool_results_only() and defers to the
    ABC's; next to hermes-agent 0.19.0 (whose ABC has no such method, so its host never calls
    it) that is dead code: O13 skips, naming the ABC. On an ABC that has it, O13 judges the
    engine (clean here), and the O13 mutant is still caught there."""
    from simulator.host import shim

    only = ["O13"]
    [judged] = run_conformance(
        fa.PrunesForHermes022, profile="quick", only=only, scenarios=False, isolation="inprocess"
    )
    assert judged.outcome == "passed", judged.message
    [mutant] = run_conformance(
        load_engine_factory(M + "o_new_methods:DropsOldToolRows"),
        profile="quick",
        only=only,
        scenarios=False,
        isolation="inprocess",
    )
    assert mutant.outcome == "failed" and mutant.clause == "O13", mutant.message

    old_abc = type("ContextEngine", (), {})  # an ABC that predates the method (0.19.0's)
    monkeypatch.setattr(shim, "context_engine_base", lambda: old_abc)
    [skipped] = run_conformance(
        fa.PrunesForHermes022, profile="quick", only=only, scenarios=False, isolation="inprocess"
    )
    assert skipped.outcome == "skipped", skipped.message
    assert "has no prune_tool_results_only(), so its host never calls the engine's own" in (
        skipped.message
    )
