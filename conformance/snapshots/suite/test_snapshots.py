"""Snapshot tier: compress() and select_context() output over the seeded corpus, diffed by syrupy.

One test per corpus case; the snapshot lives in ``.conformance/snapshots/<engine>/<case>.json``
of the project under test. ``--snapshot-update`` creates and refreshes them.
"""

from __future__ import annotations

import pytest

from conformance.outcome import ConformanceError
from conformance.plugin import engine_spec
from conformance.snapshots import corpus
from conformance.snapshots.canonical import snapshot_text
from conformance.snapshots.capture import capture_case
from conformance.snapshots.mismatch import assert_snapshot, engine_args


@pytest.mark.parametrize("case_id", corpus.CASES)
def test_compression_snapshot(
    case_id, conformance_engine_factory, conformance_snapshot, pytestconfig
):
    """The engine's output for corpus case ``case_id`` matches its stored snapshot (D1, SHOULD: a
    mismatch is a D1 failure in the kit's grammar, followed by syrupy's diff)."""
    from conformance.plugin import check_timeout, hang_budget
    from conformance.timeouts import EngineTimeout, call_with_timeout

    budget, limit = hang_budget(pytestconfig), check_timeout(pytestconfig)
    if budget is not None and budget.exhausted():  # not run: an error, not a snapshot mismatch
        raise ConformanceError(f"[D1 SHOULD] snapshot case {case_id}: {budget.reason()}.")
    hung = None
    try:
        captured = call_with_timeout(
            lambda: capture_case(conformance_engine_factory, corpus.get(case_id)),
            limit,
            lambda: (
                f"[D1 SHOULD] snapshot case {case_id}: the engine did not return within "
                f"{limit:g} s (--conformance-timeout; its constructor, update_model(), "
                "compress() or select_context() hangs); the call was abandoned."
            ),
        )
    except EngineTimeout as exc:
        hung = str(exc)
    if hung is not None:
        if budget is not None:
            budget.record(None)
        raise ConformanceError(hung)  # the engine hung: an error, not a snapshot mismatch
    text = snapshot_text(captured)
    spec = engine_spec(pytestconfig) or "MODULE:ATTR"
    assert_snapshot(
        pytestconfig,
        conformance_snapshot,
        case_id,
        text,
        engine_args(conformance_engine_factory, spec),
    )
