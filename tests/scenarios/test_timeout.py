"""Covers conformance.scenarios.runner, the ``scenario`` command (conformance.cli) and
conformance.run.session
(the hang budget): a hanging engine in a scenario is bounded by the kit's timeout
(``--conformance-timeout`` / ``scenario --timeout``), a failure naming the method, the clause and
the limit, and the run goes on to the other scenarios and a full verdict."""

from __future__ import annotations

import time

import pytest

from conformance.run.session import scenario_results
from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios.loader import load_text
from conformance.scenarios.runner import run_scenario
from tests.conformance.test_cli import cli
from tests.scenarios import engines

HANGS = "tests.scenarios.engines:HangsOnReset"
HANG_FILE = """name: hangs
steps:
  - user: hello
  - reset: true
  - user: again
expect:
  - {id: order, clause: L1, level: MUST, call_order: [on_session_start, on_session_reset]}
  - {id: no-errors, clause: H1, level: SHOULD, no_engine_errors: true}
"""
OK_FILE = """name: fine
steps:
  - user: hello
expect:
  - {id: no-errors, clause: L1, level: MUST, no_engine_errors: true}
"""


@pytest.fixture(autouse=True)
def release_hung_threads():
    engines.RELEASE.clear()
    yield
    engines.RELEASE.set()


def test_a_hanging_method_fails_its_scenario_and_the_run_goes_on(tmp_path):
    hang, ok = tmp_path / "hang.scenario.yaml", tmp_path / "ok.scenario.yaml"
    hang.write_text(HANG_FILE, encoding="utf-8")
    ok.write_text(OK_FILE, encoding="utf-8")
    started = time.monotonic()
    proc = cli("scenario", hang.name, ok.name, "--engine", HANGS, "--timeout", "1", cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr
    # the hanging method holds for 60 s: a run that waited for it would take that long (a
    # bound on behaviour, not a speed goal: loaded machines take seconds, never a minute)
    assert time.monotonic() - started < 55
    assert "hang.scenario.yaml FF" in out and "ok.scenario.yaml ." in out  # the next one ran
    assert (
        "[L1 MUST] scenario 'hangs', expectation 'order': the run stopped at steps[1] "
        "reset: timeout: on_session_reset() did not return within 1 s"
    ) in out
    assert "[H1 SHOULD] scenario 'hangs', expectation 'no-errors'" in out
    assert f" --engine={HANGS} --conformance-timeout=1 {hang} -k 'order'" in out
    # one hang, one root cause: the verdict counts it once, under the first expectation
    assert "Same root cause as scenario:hangs:order (the verdict counts it once)" in out
    assert "verdict: FAIL - 3 cases: 1 passed, 2 failed (1 MUST, 0 SHOULD" in out


def test_the_limit_also_bounds_the_hosts_compaction_timeout():
    def host_timeout(compression: str, timeout):
        sc = load_text(
            f"name: t\nhost: {{compression: {compression}}}\nsteps:\n  - user: hi\nexpect: []\n"
        )
        run = run_scenario(
            sc,
            load_engine_factory("reference_engines.mutants._base:MinimalEngine"),
            timeout=timeout,
        )
        assert run.stopped is None and not run.timed_out
        return run.main.config.context_timeout_seconds

    assert host_timeout("{}", None) == 120.0  # the host's own default
    assert host_timeout("{}", 1.5) == 1.5
    assert host_timeout("{context_timeout_seconds: 60}", 1.5) == 1.5
    assert (
        host_timeout("{context_timeout_seconds: 0.5}", 1.5) == 0.5
    )  # a file's smaller value is kept
    assert host_timeout("{context_timeout_seconds: 0}", 1.5) == 0  # inline passes stay inline


def test_a_timed_out_run_is_a_failure_in_the_kit_grammar():
    scenario, factory = load_text(HANG_FILE, "hang.scenario.yaml"), load_engine_factory(HANGS)
    run = run_scenario(scenario, factory, timeout=1)
    assert run.timed_out and run.stopped[0] == "steps[1] reset"
    results = {r.check: r for r in scenario_results(scenario, factory, run=run, timeout=1)}
    r = results["scenario:hangs:order"]
    assert r.outcome == "failed"
    assert r.message.startswith(
        "[L1 MUST] scenario 'hangs', expectation 'order': the run stopped at steps[1] "
        "reset: timeout: on_session_reset() did not return within 1 s"
    )
    assert r.message.endswith(
        f"See docs/contract.md#l1 (context-engine-kit explain L1). Repro: pytest --engine={HANGS} "
        "--conformance-timeout=1 "
        "hang.scenario.yaml -k 'order'"
    )


def test_timeout_must_be_positive(tmp_path):
    (tmp_path / "x.scenario.yaml").write_text(OK_FILE, encoding="utf-8")
    proc = cli("scenario", "x.scenario.yaml", "--engine", HANGS, "--timeout", "0", cwd=tmp_path)
    assert proc.returncode == 4, proc.stdout[-3000:] + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # one line, no usage block
    assert "--conformance-timeout" in proc.stderr and "positive" in proc.stderr, proc.stderr


def test_a_constructor_that_hangs_mid_run_is_named():
    built = []

    def engine_factory():
        built.append(1)
        if len(built) > 1:  # the restarted process builds a new engine: that one hangs
            engines.RELEASE.wait(60)
        return engines.MinimalEngine()

    text = (
        "name: restart\nsteps:\n  - user: hello\n  - restart: true\n  - user: again\n"
        "expect:\n  - {id: no-errors, clause: L1, level: MUST, no_engine_errors: true}\n"
    )
    run = run_scenario(load_text(text, "restart.scenario.yaml"), engine_factory, timeout=1)
    assert run.timed_out
    assert "timeout: engine_factory() did not return within 1 s" in run.stopped[1], run.stopped


def test_scenario_runs_share_the_runs_timeout_cap(kit_pytester):
    for name in ("one", "two"):
        (kit_pytester.path / f"{name}.scenario.yaml").write_text(
            HANG_FILE.replace("name: hangs", f"name: {name}"), encoding="utf-8"
        )
    # the second file is not played at all (its line below says so): no wall-clock bound here,
    # this machine's load decides those; the subprocess limit only keeps a hang from lasting
    result = kit_pytester.runpytest_subprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "no:cacheprovider",
        f"--engine={HANGS}",
        "--conformance-timeout=1",
        "--conformance-max-timeouts=1",
        "one.scenario.yaml",
        "two.scenario.yaml",
        timeout=600,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert (
        "[L1 MUST] scenario 'one', expectation 'order': the run stopped at "
        "steps[1] reset: timeout: on_session_reset() did not return within 1 s"
    ) in out
    # the first file is played once and both its expectations judged on that play (the hang);
    # the second file's cases are not run (N), said once, and counted as errors
    result.stdout.fnmatch_lines(["one.scenario.yaml FF*", "two.scenario.yaml NN*"])
    assert (
        "not run: 2 case(s), shown as N above and counted as errors below: the engine hung in 1 "
        "case (on_session_reset() x1); fix the hang first, or raise "
        "--conformance-max-timeouts (now 1; 0 runs every check)"
    ) in out
    # the cases the cap kept from running share one root cause, and the expectations the hang
    # left unchecked another (the hang's): counted once each (2 MUST), not once per case
    result.stdout.fnmatch_lines(
        ["verdict: FAIL - 4 cases: 0 passed, 2 failed (2 MUST, 0 SHOULD: errors included*2 error"]
    )
