"""Covers conformance.checks.engine_calls and conformance.run.session on hostile engines: a hang,
SystemExit, ~256 MB output, leaked threads and input mutation each give a failure naming the
method and the clause, and the run still reaches a full verdict over the registry's checks;
Ctrl-C (KeyboardInterrupt) still stops the run."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import pytest

from conformance import run_conformance
from conformance.authoring import registry
from conformance.authoring.expect import MAX_VALUE_BYTES, approx_size
from conformance.runtime.sandbox import CASE_PARENT, CASE_PREFIX
from reference_engines.mutants._base import MinimalEngine

RELEASE = threading.Event()


class HangsInPreflight(MinimalEngine):
    """should_compress_preflight blocks (until the test releases it)."""

    def should_compress_preflight(self, messages):
        RELEASE.wait(60)
        return False


class ExitsOnUsage(MinimalEngine):
    def update_from_response(self, usage):
        raise SystemExit(3)


class HugeSchemas(MinimalEngine):
    def get_tool_schemas(self):
        return [
            {
                "name": "big",
                "description": "x" * (256 * 1024 * 1024),
                "parameters": {"type": "object"},
            }
        ]


class InterruptsOnCompress(MinimalEngine):
    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        raise KeyboardInterrupt


MARK = f"dies-mid-case-{uuid.uuid4().hex}"


class DiesMidCase(MinimalEngine):
    """Leaves a mark in its home, then ends its process (a crash, an OOM kill) in compress()."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        Path(os.environ["HERMES_HOME"], f"{MARK}-{type(self).__name__}").write_text("x")
        os._exit(3)


class ClosesItsCase(DiesMidCase):
    """The twin: leaves the same mark and returns, so its case closes normally."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        Path(os.environ["HERMES_HOME"], f"{MARK}-{type(self).__name__}").write_text("x")
        return list(messages)


def _full(results):
    assert len(results) == len(registry.all_checks())
    return {r.check: r for r in results}


def test_hanging_method_times_out_and_the_run_continues():
    RELEASE.clear()
    try:
        results = _full(
            run_conformance(
                HangsInPreflight, profile="quick", timeout=1.0, shrink=False, scenarios=False
            )
        )
    finally:
        RELEASE.set()
    r = results["O7-preflight-returns-bool"]
    assert r.outcome == "failed"
    assert r.message.startswith("[O7 MUST] should_compress_preflight(): did not return within 1 s")
    assert results["A2-usage-updates-counters"].outcome == "passed"  # later checks still ran


def test_system_exit_is_a_failure_not_the_end():
    results = _full(run_conformance(ExitsOnUsage, profile="quick", shrink=False, scenarios=False))
    r = results["A2-usage-updates-counters"]
    assert r.outcome == "failed"
    assert r.message.startswith("[A2 MUST] update_from_response(): raised SystemExit(3)")
    assert results["A1-name-is-short-identifier"].outcome == "passed"


@pytest.mark.parametrize("engine", [DiesMidCase, ClosesItsCase])
def test_a_child_that_dies_mid_case_leaves_no_case_folder_in_the_temp_folder(engine):
    """A case child that ends without closing its sandbox (``os._exit``, a signal, the memory
    cap) used to leave its case root in the real temp folder, one per case, run after run."""
    results = run_conformance(
        engine, profile="quick", shrink=False, scenarios=False, only=["A4-compress-returns-list"]
    )
    assert results and (results[0].outcome == "failed") == (engine is DiesMidCase), results
    assert not list(
        Path(CASE_PARENT).glob(f"{CASE_PREFIX}*/engine-*/hermes/{MARK}-{engine.__name__}")
    )


@pytest.mark.slow
def test_huge_output_is_measured_before_it_is_copied():
    results = _full(run_conformance(HugeSchemas, profile="quick", shrink=False, scenarios=False))
    r = results["O5-tool-schemas-is-list"]
    assert r.outcome == "failed"
    assert r.message.startswith("[O5 MUST] get_tool_schemas(): returned a list of more than 32 MB")
    assert len(r.message) < 1_000


def test_approx_size_stops_early():
    big = ["x" * 1024] * (MAX_VALUE_BYTES // 1024 + 10)
    assert approx_size(big) > MAX_VALUE_BYTES
    assert approx_size({"a": ["b", {"c": "d"}]}) < 100


@pytest.mark.parametrize(
    "spec, check, needle",
    [
        (
            "reference_engines.mutants.ts_threads:LeaksThreads",
            "TS1-no-leaked-threads",
            "[TS1 SHOULD] compress(): expected no threads left running",
        ),
        (
            "reference_engines.mutants.h_hooks:TurnCompleteStripsUids",
            "H5-turn-complete-does-not-mutate",
            "[H5 MUST] on_turn_complete() on the host's message",
        ),
    ],
)
@pytest.mark.slow
def test_leaks_and_input_mutation_name_method_and_clause(spec, check, needle):
    from conformance.runtime.engine_loading import load_engine_factory

    results = _full(
        run_conformance(load_engine_factory(spec), profile="quick", shrink=False, scenarios=False)
    )
    assert results[check].outcome == "failed"
    assert results[check].message.startswith(needle)


def test_keyboard_interrupt_from_the_engine_is_a_finding_and_ctrl_c_still_stops_an_inprocess_run():
    """In its supervised child a case ignores SIGINT, so a KeyboardInterrupt there is the
    engine's own: a finding, and the run goes on. Without the child (``inprocess``) it cannot be
    told from Ctrl-C, which still stops the run."""
    results = _full(
        run_conformance(InterruptsOnCompress, profile="quick", shrink=False, scenarios=False)
    )
    r = results["A4-compress-returns-list"]
    assert r.outcome == "failed" and "raised KeyboardInterrupt()" in r.message, r.message
    with pytest.raises(KeyboardInterrupt):
        run_conformance(
            InterruptsOnCompress,
            profile="quick",
            shrink=False,
            scenarios=False,
            isolation="inprocess",
        )
