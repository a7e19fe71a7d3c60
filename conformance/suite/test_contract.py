"""One parametrized test, one item per registered check (ids are the check ids)."""

from __future__ import annotations

import pytest

from conformance import registry
from conformance.outcome import raise_for_result
from conformance.runner import clear_replay, run_check
from simulator.host import shim

# The conftest route (a conftest's conformance_engine_factory fixture, this test imported into a test
# module): engines imported from here on resolve `from agent.context_engine import ContextEngine`.
shim.install()

_CHECKS = registry.all_checks()


@pytest.mark.parametrize("check_id", [c.id for c in _CHECKS], ids=[c.id for c in _CHECKS])
def test_contract(check_id, conformance_context, conformance_run_options):
    """Run the registered check ``check_id`` against the engine under test."""
    chk = registry.get(check_id)
    options = conformance_run_options(chk)
    result = run_check(chk, conformance_context, **options)
    if result.outcome in ("passed", "xpassed") and conformance_context.replay is None:
        clear_replay(
            chk, options["failures_dir"]
        )  # a failure file from an earlier run is stale now
    raise_for_result(result, strict=conformance_run_options.strict)
