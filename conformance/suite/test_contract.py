"""The suite: one test item per case of the run's stream (ids are the case ids).

``pytest --engine=...`` collects this module; the conftest fixture route imports it into a
test module of the user's (``from conformance.suite.test_contract import test_contract,
test_compression_snapshot``). The plugin parametrizes both tests over the session's stream
(:func:`conformance.plugin.pytest_generate_tests`).
"""

from __future__ import annotations

from conformance.frontends.pytest_session import report_result
from conformance.snapshots.mismatch import compare_with_syrupy
from simulator.host import shim

# The conftest route: engines imported from here on resolve
# `from agent.context_engine import ContextEngine`.
shim.install()


def test_contract(conformance_case, conformance_run, request):
    """Run the case ``conformance_case`` (a check or a scenario expectation) on the engine."""
    result = conformance_run.run_case(conformance_run.case(conformance_case))
    report_result(request.node, result, strict=conformance_run.options.strict)


def test_compression_snapshot(
    conformance_snapshot_case, conformance_run, conformance_snapshot, request
):
    """The engine's output for one corpus case matches its stored snapshot (kit clause D1)."""
    case = conformance_run.case(conformance_snapshot_case)
    compare = compare_with_syrupy(request.config, conformance_snapshot, case.case_id)
    result = conformance_run.run_case(case, compare=compare)
    report_result(request.node, result, strict=conformance_run.options.strict)
