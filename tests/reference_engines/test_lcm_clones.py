"""Covers reference_engines.lcm.engine across agents, threads and sessions: C1, C2, TS1, TS3 and
lifecycle (O1-O3, L1) for the LCM engine."""

from __future__ import annotations

import copy
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from reference_engines.lcm import LCMEngine

from .test_lcm_helpers import carrier_of, conversation, expand_all, top_node_id, validate_sequence


@pytest.fixture
def parent(tmp_path):
    e = LCMEngine(tmp_path / "lcm.sqlite3")
    e.model_thresholds = {"big": 0.5}
    e.update_model("big-model", 1_000_000)
    yield e
    e.close()


def test_clone_shares_backend_own_connection_budget_only(parent):
    """C1: same backend and file, a different connection object, budget copied, counters fresh."""
    parent.update_from_response(
        {"prompt_tokens": 5000, "completion_tokens": 10, "total_tokens": 5010}
    )
    parent.compression_count = 4
    child = parent.clone_for_agent()
    assert (
        child is not parent
        and child._backend is parent._backend
        and child.db_path == parent.db_path
    )
    assert child._conn is not parent._conn
    assert (child.context_length, child.threshold_tokens) == (
        parent.context_length,
        parent.threshold_tokens,
    )
    assert child.last_prompt_tokens == 0 and child.compression_count == 0
    assert (
        child.model_thresholds == parent.model_thresholds
        and child.model_thresholds is not parent.model_thresholds
    )


def test_child_update_model_never_changes_parent(parent):
    """C2: the kit's sizes (1,000,000 at 0.20 against a child at 204,800)."""
    p = LCMEngine(parent.db_path, threshold_percent=0.20)
    p.update_model("m", 1_000_000)
    child = p.clone_for_agent()
    child.update_model("m", 204_800)
    child.model_thresholds["m"] = 0.9
    assert (p.context_length, p.threshold_tokens) == (1_000_000, 200_000)
    assert p.model_thresholds == {}
    assert child.threshold_tokens == int(204_800 * 0.20)


def test_deepcopy_is_a_safe_clone(parent):
    """0.19.0 deepcopies the engine: locks and connections must not break it."""
    parent._conn._db()  # an open sqlite3 connection and RLocks inside
    twin = copy.deepcopy(parent)
    assert twin._backend is parent._backend and twin._conn is not parent._conn
    assert twin.threshold_tokens == parent.threshold_tokens


def test_clone_publishes_a_pass_staged_by_the_parent(tmp_path):
    """The staging area is part of the shared backend: any clone can see the commit."""
    a = LCMEngine(tmp_path / "lcm.sqlite3")
    a.update_model("m", 3000)
    out = a.compress(conversation(1, 40))
    b = a.clone_for_agent()
    b.on_turn_complete(list(out))
    assert (
        json.loads(a.handle_tool_call("lcm_describe", {"id": top_node_id(carrier_of(out))}))[
            "committed"
        ]
        is True
    )


def test_parallel_sessions_on_clones_and_on_one_shared_instance(tmp_path):
    """TS1/TS3: passes of different sessions run concurrently on pool threads, on clones and
    on one shared instance; every pass stays valid and lossless."""
    proto = LCMEngine(tmp_path / "lcm.sqlite3")
    proto.update_model("m", 3000)
    shared = proto.clone_for_agent()
    barrier = threading.Barrier(4)

    def session(k: int):
        engine = proto.clone_for_agent() if k % 2 == 0 else shared
        engine.update_model("m", 3000)
        msgs = conversation(100 + k, 50)
        barrier.wait()
        results = []
        for _ in range(3):
            out = engine.compress(copy.deepcopy(msgs))
            assert validate_sequence(out) == []
            engine.on_turn_complete(list(out))
            results.append((msgs, out))
            msgs = out + conversation(200 + k, 20, system=False)
        return engine, results

    with ThreadPoolExecutor(max_workers=4) as pool:
        done = list(pool.map(session, range(4)))
    for engine, results in done:
        final = results[-1][1]
        recovered = expand_all(engine, top_node_id(carrier_of(final))) + final
        originals = [
            m
            for msgs, _ in results
            for m in msgs
            if not str(m.get("content")).startswith("[LCM summary]")
        ]
        assert all(m in recovered for m in originals), "a parallel session lost messages"


def test_lifecycle_session_start_reset_end(tmp_path):
    """O1 loads (committed pass count), O3 zeroes counters, O2 flushes; compression boundary keeps
    counters."""
    e = LCMEngine(tmp_path / "lcm.sqlite3")
    e.update_model("m", 3000)
    e.on_session_start("s1")
    out = e.compress(conversation(1, 40))
    e.on_session_start("s1", boundary_reason="compression", old_session_id="s1")
    assert e.compression_count == 1
    e.on_session_end("s1", list(out))
    e.update_from_response({"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102})
    e.on_session_reset()
    assert (
        e.last_prompt_tokens,
        e.last_completion_tokens,
        e.last_total_tokens,
        e.compression_count,
    ) == (0, 0, 0, 0)
    e.on_session_start("s2")
    assert e.compression_count == 0
    e.on_session_start("s1")  # resuming s1 loads its committed passes
    assert e.compression_count == 1
    fresh = LCMEngine(tmp_path / "lcm.sqlite3")
    fresh.on_session_start("s1")
    assert fresh.compression_count == 1
