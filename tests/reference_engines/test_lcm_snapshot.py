"""Covers reference_engines.lcm.engine and reference_engines.lcm.dag with syrupy snapshots: what
LCM emits for a fixed session, the compress() output of two passes and the DAG node that the
second carrier names. A change in the carrier text, the cut points, node ids or summaries
shows up as a snapshot diff (update with --snapshot-update).

The summariser is LCM's own extractive ``fallback_summary``, so the snapshot changes only
when LCM changes, not when the provider simulator's summariser does."""

from __future__ import annotations

import copy
import json
import random

from reference_engines.lcm import LCMEngine
from reference_engines.lcm.dag import fallback_summary

from .test_lcm_helpers import carrier_of, conversation, top_node_id, uid


def test_two_passes_snapshot(tmp_path, snapshot):
    rng = random.Random(2024)
    engine = LCMEngine(
        tmp_path / "lcm.sqlite3", summariser=fallback_summary, uid_factory=lambda: uid(rng)
    )
    engine.update_model("snapshot-model", 3000)
    engine.on_session_start("snap")
    first = engine.compress(conversation(42, 30))
    engine.on_turn_complete(list(first))
    second = engine.compress(
        copy.deepcopy(first) + conversation(43, 30, system=False), focus_topic="kubernetes"
    )
    engine.on_turn_complete(list(second))
    top = json.loads(
        engine.handle_tool_call("lcm_describe", {"id": top_node_id(carrier_of(second))})
    )
    assert {"first": first, "second": second, "top": top} == snapshot
