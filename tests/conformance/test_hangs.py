"""Covers conformance.runtime.timeouts and the hang rules of conformance.run.session: a
constructor or
update_model that hangs is reported naming it, every engine call the kit makes is under
--conformance-timeout, a run stops running checks after --conformance-max-timeouts timeouts, the
method in flight on a thread a check spawned is named, and a check's draws do not depend on which
other modules the run loaded."""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
import threading
import time

import pytest
from hypothesis import strategies as st

from conformance import run_conformance
from conformance.authoring import registry
from conformance.run.session import ConformanceSession, RunOptions
from conformance.runtime.timeouts import HangBudget
from reference_engines.mutants._base import MinimalEngine

RELEASE = threading.Event()


class SlowInit(MinimalEngine):
    """The constructor blocks (until the test releases it)."""

    def __init__(self):
        RELEASE.wait(60)
        super().__init__()


class SlowUpdateModel(MinimalEngine):
    """update_model blocks: the setup of every check's engine hangs."""

    def update_model(self, *args, **kwargs):
        RELEASE.wait(60)


class HangsInCompress(MinimalEngine):
    """compress blocks, also when called from a thread the check spawned (TS3, L1's other
    session)."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        RELEASE.wait(60)
        return list(messages)


@pytest.fixture
def released():
    """Clear the shared event for the test; release every blocked engine call afterwards."""
    RELEASE.clear()
    yield
    RELEASE.set()


def test_constructor_that_hangs_in_the_capabilities_probe_is_named(released):
    start = time.monotonic()
    results = run_conformance(
        SlowInit, only=["A2-usage-updates-counters", "A3"], timeout=1.0, profile="quick"
    )
    assert results and all(r.outcome == "error" for r in results)
    assert all(
        "engine not available: SlowInit() did not return within 1 s" in r.message for r in results
    )
    assert time.monotonic() - start < 10  # the probe waits once, not once per check


def test_constructor_that_hangs_inside_a_check_names_the_constructor(released):
    calls = []

    def later_hangs():
        calls.append(1)
        if len(calls) > 1:  # the session's one probe gets an engine; the check's own hangs
            RELEASE.wait(60)
        return MinimalEngine()

    [r] = run_conformance(
        later_hangs, only=["A2-usage-updates-counters"], timeout=1.0, profile="quick"
    )
    assert r.outcome == "failed"
    assert r.message.startswith("[A2 MUST] later_hangs(): did not return within 1 s"), r.message


def test_update_model_that_hangs_during_setup_is_named(released):
    [r] = run_conformance(
        SlowUpdateModel, only=["A2-usage-updates-counters"], timeout=1.0, profile="quick"
    )
    assert r.outcome == "failed"
    assert r.message.startswith("[A2 MUST] update_model(): did not return within 1 s"), r.message


def test_method_in_flight_on_a_thread_the_check_spawned_is_named(released):
    only = ["TS3-parallel-sessions-isolated", "TS2-no-writes-from-timed-out-pass"]
    results = run_conformance(
        HangsInCompress, only=only, timeout=1.0, profile="quick", max_timeouts=0
    )
    assert {r.check for r in results} == set(only)
    for r in results:
        assert r.outcome == "failed"
        assert r.message.startswith(f"[{r.clause} MUST] compress(): did not return within 1 s"), (
            r.message
        )


def test_after_max_timeouts_the_remaining_checks_are_not_run(released):
    start = time.monotonic()
    results = run_conformance(
        HangsInCompress, timeout=1.0, profile="quick", max_timeouts=2, scenarios=False, shrink=False
    )
    elapsed = time.monotonic() - start
    hung = [r for r in results if "did not return within 1 s" in r.message]
    not_run = [r for r in results if r.outcome == "error"]
    assert len(hung) == 2 and all(r.outcome == "failed" for r in hung)
    assert not_run, "checks after the second timeout were run"
    for r in not_run:
        assert r.message.startswith(
            f"[{r.clause} {r.level}] not run: the engine hung in 2 cases (compress() x2); fix the "
            "hang first, or raise --conformance-max-timeouts (now 2; 0 runs every check). See "
        )
        assert " Repro: pytest --engine=" in r.message
    last_hung = max(results.index(r) for r in hung)
    assert all(r.outcome in ("error", "skipped") for r in results[last_hung + 1 :])
    assert elapsed < 30, f"a hanging run took {elapsed:.0f} s"


def test_hang_budget_counts_methods():
    budget = HangBudget(3)
    for method in ("compress", "compress", None):
        assert not budget.exhausted()
        budget.record(method)
    assert budget.exhausted()
    assert "hung in 3 cases (compress() x2, an unnamed call x1)" in budget.reason()
    assert not HangBudget(0).exhausted()


def test_draws_do_not_depend_on_the_modules_loaded(tmp_path, monkeypatch):
    """Hypothesis mixes constants of loaded local modules into its draws; a check must draw the
    same examples whether or not other modules (scenarios, plugins, the user's) were imported."""
    base = registry.get("A2-usage-updates-counters")
    draws = []

    def drawing_check(ctx):
        def body(draw):
            draws[-1].append(draw(st.lists(st.integers(0, 10_000), min_size=30, max_size=30), "xs"))

        ctx.examples(body)

    chk = dataclasses.replace(base, id="TEST-draws", func=drawing_check, params=(), examples=15)

    def run_once():
        draws.append([])
        session = ConformanceSession(RunOptions(profile="default"), MinimalEngine)
        assert session.run_case(chk).outcome == "passed"
        return draws[-1]

    first = run_once()
    numbers = ", ".join(
        str(1000 + 37 * i) for i in range(200)
    )  # in range, not in the kit's sources
    (tmp_path / "many_constants_mod.py").write_text(f"VALUES = [{numbers}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("many_constants_mod")
    try:
        assert run_once() == first
    finally:
        sys.modules.pop("many_constants_mod", None)


def test_hanging_constructor_is_a_usage_error_after_the_header(kit_pytester):
    kit_pytester.makepyfile(
        slow_init="""
import time
from reference_engines.mutants._base import MinimalEngine

class SlowInit(MinimalEngine):
    def __init__(self):
        time.sleep(3600)
"""
    )
    start = time.monotonic()
    result = kit_pytester.runpytest_subprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "no:cacheprovider",
        "--engine=slow_init:SlowInit",
        "--conformance-timeout=1",
    )
    assert time.monotonic() - start < 30
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["*test session starts*", "conformance: engine --engine=slow_init:SlowInit*"]
    )
    result.stderr.fnmatch_lines(
        ["*SlowInit() did not return within 1 s (--conformance-timeout)*No check was run*"]
    )


def test_max_timeouts_option(kit_pytester):
    kit_pytester.makepyfile(
        hangs="""
import time
from reference_engines.mutants._base import MinimalEngine

class Hangs(MinimalEngine):
    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        time.sleep(3600)
"""
    )
    args = (
        "-p",
        "conformance.plugin",
        "-p",
        "conformance.frontends.scenario_items",
        "-p",
        "no:cacheprovider",
        "--engine=hangs:Hangs",
        "--conformance-timeout=1",
        "--conformance-no-scenarios",
        "--conformance-profile=quick",
    )
    result = kit_pytester.runpytest_subprocess(
        *args, "--conformance-max-timeouts=1", "-k", "A4 or V2"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*compress(): did not return within 1 s*",
            "not run: * the engine hung in 1 case (compress() x1)*",
        ]
    )
    result.stdout.fnmatch_lines(["verdict: FAIL*"])
    # the cases the cap kept from running are one line, not one FAILURES block each
    out = result.stdout.str()
    kept = [ln for ln in out.splitlines() if ln.startswith("not run: ")]
    assert len(kept) == 1 and "case(s), shown as N above and counted as errors" in kept[0], out
    assert out.count("the engine hung in") == 1, out
    assert re.search(r"\d+ failed, .*\d+ not run", out), out
    assert "FAILED test_contract.py" in out  # the hung cases themselves are failures
    bad = kit_pytester.runpytest_subprocess(*args, "--conformance-max-timeouts=-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--conformance-max-timeouts=-1: give 0*"])
