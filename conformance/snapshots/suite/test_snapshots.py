"""Snapshot tier: compress() and select_context() output over the seeded corpus, diffed by syrupy.

One test per corpus case; the snapshot lives in ``.conformance/snapshots/<engine>/<case>.json``
of the project under test. ``--snapshot-update`` creates and refreshes them.
"""

from __future__ import annotations

import pytest

from conformance.snapshots import corpus
from conformance.snapshots.canonical import snapshot_text
from conformance.snapshots.capture import capture_case


@pytest.mark.parametrize("case_id", corpus.CASES)
def test_compression_snapshot(case_id, conformance_engine_factory, conformance_snapshot):
    """The engine's output for corpus case ``case_id`` matches its stored snapshot."""
    text = snapshot_text(capture_case(conformance_engine_factory, corpus.get(case_id)))
    assert conformance_snapshot == text
