"""Covers conformance.scenarios.runner, conformance.scenarios.run and
conformance.scenarios.expectations (through conformance.run.session.scenario_results): what
failures say (step, expectation, observation), stopped runs, determinism."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conformance.clauses.errors import strip_repro
from conformance.run.session import scenario_results
from conformance.runtime.engine_loading import load_engine_factory
from conformance.scenarios import LIBRARY_DIR as LIBRARY
from conformance.scenarios.loader import load_scenario, load_text
from conformance.scenarios.runner import run_scenario
from reference_engines.compressor import ReferenceCompressor
from tests.conftest import REPO_ROOT

MINIMAL = "reference_engines.mutants._base:MinimalEngine"


def run(text: str, spec: str = MINIMAL):
    sc = load_text(textwrap.dedent(text), "t.scenario.yaml")
    factory = load_engine_factory(spec)
    r = run_scenario(sc, factory, builtin_factory=ReferenceCompressor)
    results = scenario_results(sc, factory, run=r)
    return r, {res.check.rpartition(":")[2]: res for res in results}


def test_a_failure_names_the_step_the_expectation_and_what_was_observed():
    sc = load_scenario(LIBRARY / "v2_tool_heavy.scenario.yaml")
    spec = "reference_engines.mutants.v2_orphan_result:OrphanToolResult"
    res = {x.check.rpartition(":")[2]: x for x in scenario_results(sc, load_engine_factory(spec))}
    msg = res["pairs-intact"].message
    assert res["pairs-intact"].outcome == "failed"
    assert msg.startswith(
        "[V2 MUST] scenario 'v2-tool-heavy', expectation 'pairs-intact' at steps["
    )
    assert "main transcript (" in msg and "which no earlier assistant message calls" in msg
    assert strip_repro(msg).endswith("See docs/contract.md#v2 (context-engine-kit explain V2).")
    assert msg.endswith(f" Repro: pytest --engine={spec} {sc.source} -k 'pairs-intact'")


def test_an_engine_that_raises_stops_the_run_and_every_expectation_names_the_step():
    r, res = run(
        """
        name: raises
        steps:
          - user: hi
          - user: again
        expect:
          - {id: count, clause: L1, level: MUST, compressions: {max: 5}}
          - {id: order, clause: L1, level: SHOULD,
             call_order: [on_session_start, update_from_response]}
    """,
        "tests.scenarios.engines:RaisesOnUsage",
    )
    assert r.stopped is not None and r.stopped[0] == "steps[0] user 'hi'"
    for exp_id in ("count", "order"):
        assert res[exp_id].outcome == "error"
        assert (
            "the run stopped at steps[0] user 'hi': RuntimeError: usage store offline"
            in res[exp_id].message
        )
        assert res[exp_id].message.endswith(  # an error outcome says where to read and rerun
            "See docs/contract.md#l1 (context-engine-kit explain L1). Repro: pytest "
            "--engine=tests.scenarios.engines:RaisesOnUsage "
            f"t.scenario.yaml -k '{exp_id}'"
        )


def test_check_steps_are_evaluated_in_place_and_report_their_step():
    _, res = run("""
        name: checks
        host: {context_length: 10000}
        steps:
          - check: {id: window, clause: O4, level: MUST,
                    engine_attr: {name: context_length, equals: 10000}}
          - model: {name: other, context_length: 5000}
          - check: {id: stale, clause: O4, level: MUST,
                    engine_attr: {name: context_length, equals: 10000}}
        expect: []
    """)
    assert res["window"].outcome == "passed"
    assert res["stale"].outcome == "failed"
    assert res["stale"].message == (
        "[O4 MUST] scenario 'checks', expectation 'stale' at steps[2] check: "
        "expected context_length == 10000, got 5000. See docs/contract.md#o4 "
        "(context-engine-kit explain O4). "
        f"Repro: pytest --engine={MINIMAL} t.scenario.yaml -k 'stale'"
    )


def test_faults_are_retried_and_recorded_per_provider_call():
    r, res = run("""
        name: faults
        host: {max_retries: 1}
        steps:
          - user: one
          - fault: {kind: rate_limit, retry_after: 3}
          - user: two
          - fault: {kind: terminal}
          - user: three
        expect:
          - {id: failed, clause: L1, level: MUST, turns_failed: {max: 0}}
    """)
    assert [c.step for c in r.recorder.provider_calls] == [
        "steps[0] user 'one'",
        "steps[2] user 'two'",
    ]
    assert res["failed"].outcome == "failed"
    assert (
        "at steps[4] user 'three': expected at most 0 failed turns, got 1" in res["failed"].message
    )


def test_the_same_scenario_gives_the_same_numbers_in_another_process():
    path = "conformance/scenarios/library/u3_restore_branch_rotate.scenario.yaml"
    code = textwrap.dedent(f"""
        import json
        from conformance.runtime.engine_loading import load_engine_factory
        from conformance.scenarios.loader import load_scenario
        from conformance.scenarios.runner import run_scenario
        r = run_scenario(
            load_scenario({path!r}),
            load_engine_factory("reference_engines.router:ReferenceRouter"),
        )
        print(json.dumps(
            [[c.prompt_tokens, c.cache_read_tokens, c.step] for c in r.recorder.provider_calls]
            + [[e.tokens_in, e.tokens_out, e.step] for e in r.recorder.compactions]
        ))
    """)
    outs = [
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(REPO_ROOT), "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    ]
    assert outs[0] == outs[1] and len(json.loads(outs[0])) > 10
