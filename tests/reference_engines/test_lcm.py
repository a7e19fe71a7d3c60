"""Covers reference_engines.lcm.engine and reference_engines.lcm.dag: compress() shape (A4,
V1-V4, U6), budget policy (O4/K), A3, A7, O8, A5, the summariser and the DAG."""

from __future__ import annotations

import copy
import json
import os
import re
import sqlite3

import pytest

from reference_engines.lcm import CARRIER_TAG, LCMEngine
from reference_engines.lcm.dag import DagParams

from .test_lcm_helpers import carrier_of, conversation, expand_all, top_node_id, validate_sequence

UID_RE = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture
def engine(tmp_path):
    e = LCMEngine(tmp_path / "lcm.sqlite3")
    e.update_model("test-model", 4000)
    yield e
    e.close()


def test_default_db_path_is_under_hermes_home(tmp_path, monkeypatch):
    """With no args the database lives in $HERMES_HOME/lcm/lcm.sqlite3, created on first use
    only."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    e = LCMEngine()
    assert e.db_path == tmp_path / "lcm" / "lcm.sqlite3"
    assert not e.db_path.exists(), "constructing the engine must not create files"
    e.update_model("m", 4000)
    out = e.compress(conversation(1, 30))
    assert carrier_of(out) is not None
    assert not e.db_path.exists(), "compress() alone writes nothing (TS2)"
    e.on_turn_complete(out)
    assert e.db_path.exists()
    e.close()


def test_name_and_capabilities():
    assert LCMEngine.conformance_capabilities == frozenset({"focus", "tools"})
    assert LCMEngine(db_path=os.devnull + "-unused").name == "lcm"


def test_compress_shape_head_carrier_tail(engine):
    """A4/V/U6: system first, one stamped carrier, untouched tail, valid sequence, fewer tokens."""
    msgs = conversation(2, 60)
    original = copy.deepcopy(msgs)
    out = engine.compress(msgs)
    assert validate_sequence(out) == []
    assert out[0] == original[0] and out[0]["role"] == "system"
    carriers = [
        m for m in out if isinstance(m.get("content"), str) and m["content"].startswith(CARRIER_TAG)
    ]
    assert len(carriers) == 1
    carrier = carriers[0]
    assert UID_RE.match(carrier["message_uid"]), carrier["message_uid"]
    assert carrier["message_uid"] not in {m.get("message_uid") for m in original}
    idx = out.index(carrier)
    tail = out[idx + 1 :]
    assert tail == original[len(original) - len(tail) :], (
        "the tail must be the input's last messages, verbatim"
    )
    assert len(out) < len(msgs)
    assert engine.compression_count == 1
    # roles do not clash around the carrier when avoidable (B5 practice)
    assert out[idx - 1]["role"] != carrier["role"] or out[idx + 1]["role"] != carrier["role"]


def test_tool_pairs_never_split_at_any_budget(tmp_path):
    """V2: for many window sizes the cut never separates a call from its results."""
    msgs = conversation(3, 40, tool_every=1)
    for ctx in (300, 500, 800, 1200, 2000, 3000, 5000):
        e = LCMEngine(tmp_path / f"db{ctx}.sqlite3", protect_last_n=3)
        e.update_model("m", ctx)
        out = e.compress(copy.deepcopy(msgs))
        assert validate_sequence(out) == [], (ctx, validate_sequence(out))
        e.close()


def test_nothing_to_compress_returns_same_object_and_a3_blocks(engine, tmp_path):
    """A no-op pass returns the input object; two ineffective passes stop should_compress (A3)."""
    small = conversation(4, 1)
    e = LCMEngine(tmp_path / "a3.sqlite3")
    e.update_model("m", 4000)
    e.update_from_response({"prompt_tokens": 3500, "completion_tokens": 5, "total_tokens": 3505})
    assert e.should_compress() is True
    assert e.compress(small) is small
    assert e.should_compress() is True
    assert e.compress(small) is small
    assert e.should_compress() is False, (
        "after 2 ineffective passes should_compress must stop asking"
    )
    assert e.get_status()["compression_blocked"] is True
    e.update_model("m", 4000)  # a new budget lifts the block
    assert e.should_compress() is True
    e.close()


def test_a7_sentinel_never_compresses_and_status_is_clamped(engine):
    engine.update_from_response(
        {"prompt_tokens": 3900, "completion_tokens": 1, "total_tokens": 3901}
    )
    assert engine.should_compress() is True
    engine.last_prompt_tokens = -1
    assert engine.should_compress() is False
    assert engine.should_compress(prompt_tokens=-1) is False
    assert engine.should_compress(prompt_tokens=10_000) is False
    status = engine.get_status()
    assert status["last_prompt_tokens"] == 0
    engine.update_from_response(
        {"prompt_tokens": 3900, "completion_tokens": 1, "total_tokens": 3901}
    )
    assert engine.should_compress() is True


def test_get_status_fields(engine):
    """O8: required keys, usage_percent within 0-100, 0 with no window."""
    engine.update_from_response(
        {"prompt_tokens": 10_000, "completion_tokens": 1, "total_tokens": 10_001}
    )
    s = engine.get_status()
    for key in (
        "last_prompt_tokens",
        "threshold_tokens",
        "context_length",
        "usage_percent",
        "compression_count",
    ):
        assert key in s
    assert 0 <= s["usage_percent"] <= 100
    fresh = LCMEngine(engine.db_path)
    assert fresh.get_status()["usage_percent"] == 0


def test_update_from_response_a2(engine):
    engine.update_from_response(
        {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10, "cache_read_tokens": 2}
    )
    assert (engine.last_prompt_tokens, engine.last_completion_tokens, engine.last_total_tokens) == (
        7,
        3,
        10,
    )
    engine.update_from_response({"prompt_tokens": 7, "completion_tokens": 3})
    assert engine.last_total_tokens == 10


def test_update_model_budget_policy(tmp_path):
    """O4/K: threshold = int(ctx * percent), model_thresholds honoured, reply reserve kept."""
    e = LCMEngine(tmp_path / "k.sqlite3")
    e.update_model("gpt-x", 200_000)
    assert e.threshold_tokens == 150_000 and e.context_length == 200_000
    e.model_thresholds = {"gpt": 0.5, "gpt-x": 0.6}
    e.update_model("gpt-x-large", 200_000)
    assert e.threshold_tokens == 120_000  # longest match wins
    e.model_thresholds = {"gpt": 0.99}
    e.update_model("gpt-4", 100_000)
    assert e.threshold_tokens == 100_000 - LCMEngine.response_reserve_tokens
    e.model_thresholds = {}
    e.update_model("other", 100_000)
    assert e.threshold_tokens == 75_000, "the configured percent must not drift after an override"
    with pytest.raises(ValueError, match="context_length"):
        e.update_model("m", -5)
    with pytest.raises(ValueError, match="threshold_percent"):
        LCMEngine(tmp_path / "x.sqlite3", threshold_percent=1.5)


def test_focus_topic_steers_top_summary(tmp_path):
    """A5: a topic mentioned once, deep in the middle, is kept in the carrier's summary."""
    msgs = conversation(5, 80)
    needle = "The zebrafish pipeline listens on port 7421."
    filler = [f"Filler sentence number {k} about nothing in particular." for k in range(20)]
    msgs[40]["content"] = " ".join(filler[:12] + [needle] + filler[12:])
    runs = {}
    for focus in (None, "zebrafish"):
        e = LCMEngine(tmp_path / f"f{focus}.sqlite3")
        e.update_model("m", 4000)
        runs[focus] = carrier_of(e.compress(copy.deepcopy(msgs), focus_topic=focus))["content"]
        e.close()
    assert "zebrafish" not in runs[None].lower()
    assert "zebrafish pipeline listens on port 7421" in runs["zebrafish"]
    assert "Focus: zebrafish" in runs["zebrafish"]


def test_injected_summariser_and_failing_summariser(tmp_path):
    calls = []

    def summariser(text, *, max_chars, focus_topic=None, previous_summary=None):
        calls.append(len(text))
        return f"SUMMARY({len(text)})"

    e = LCMEngine(tmp_path / "s.sqlite3", summariser=summariser)
    e.update_model("m", 4000)
    out = e.compress(conversation(6, 40))
    assert calls and "SUMMARY(" in carrier_of(out)["content"]

    def broken(text, **kw):
        raise RuntimeError("summary model down")

    b = LCMEngine(tmp_path / "b.sqlite3", summariser=broken)
    b.update_model("m", 4000)
    msgs = conversation(7, 40)
    out = b.compress(copy.deepcopy(msgs))
    carrier = carrier_of(out)
    assert validate_sequence(out) == []
    b.on_turn_complete(out)
    got = expand_all(b, top_node_id(carrier))
    head = out.index(carrier)
    assert got and got == msgs[head : head + len(got)], (
        "a failing summariser must not lose messages"
    )
    assert out[head + 1 :] == msgs[head + len(got) :]


def test_messages_without_uid_are_tolerated(tmp_path):
    """U2/U10: rows with no uid (or a blank/non-string uid) are summarised and recoverable."""
    msgs = conversation(8, 30)
    for i, m in enumerate(msgs):
        if i % 3 == 0:
            m.pop("message_uid")
        elif i % 7 == 0:
            m["message_uid"] = ""
        elif i % 11 == 0:
            m["message_uid"] = 12345
    original = copy.deepcopy(msgs)
    e = LCMEngine(tmp_path / "u.sqlite3")
    e.update_model("m", 3000)
    out = e.compress(msgs)
    assert validate_sequence(out) == []
    e.on_turn_complete(out)
    carrier = carrier_of(out)
    got = expand_all(e, top_node_id(carrier))
    head = out.index(carrier)
    assert got and got == original[head : head + len(got)]
    assert out[head + 1 :] == original[head + len(got) :]


def test_compress_rejects_bad_input(engine):
    with pytest.raises(TypeError, match="list of message dicts"):
        engine.compress("not a list")
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        engine.compress([{"role": "user", "content": "x"}, "oops"])


def test_compress_without_update_model_keeps_protect_last_n(tmp_path):
    """With no budget yet the tail is exactly protect_last_n messages (adjusted for pairs)."""
    e = LCMEngine(tmp_path / "n.sqlite3", protect_last_n=4)
    msgs = conversation(9, 20, tool_every=100)
    out = e.compress(copy.deepcopy(msgs))
    assert out[-4:] == msgs[-4:]
    assert out[-5]["content"].startswith(CARRIER_TAG)


def test_dag_params_validation():
    with pytest.raises(ValueError, match="condense_fanout"):
        DagParams(condense_fanout=1)
    with pytest.raises(ValueError, match="leaf_chunk_messages"):
        DagParams(leaf_chunk_messages=0)


def test_dag_is_condensed_upward(tmp_path):
    """Leaves over chunks, condensed nodes above: the frontier stays short for long histories."""
    e = LCMEngine(
        tmp_path / "d.sqlite3", dag_params=DagParams(leaf_chunk_messages=4, condense_fanout=3)
    )
    e.update_model("m", 3000)
    msgs = conversation(10, 120)
    out = e.compress(msgs)
    e.on_turn_complete(out)
    top = json.loads(e.handle_tool_call("lcm_describe", {"id": top_node_id(carrier_of(out))}))
    assert top["type"] == "top" and top["level"] >= 3
    assert len(top["children"]) <= 2 * top["level"]
    child = json.loads(e.handle_tool_call("lcm_describe", {"id": top["children"][0]["node_id"]}))
    assert child["type"] == "condensed" and len(child["children"]) == 3
    db = sqlite3.connect(e.db_path)
    kinds = dict(db.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind").fetchall())
    assert (
        kinds["leaf"] >= top["message_count"] // 6 and kinds["condensed"] >= 1 and kinds["top"] == 1
    )


def test_memory_context_and_force_are_accepted(engine):
    """A4: newer hosts pass force and memory_context; the memory note reaches the top summary
    only."""
    import inspect

    params = inspect.signature(engine.compress).parameters
    assert {"current_tokens", "focus_topic", "force", "memory_context"} <= set(params)
    msgs = conversation(11, 40)
    out = engine.compress(
        copy.deepcopy(msgs), force=True, memory_context="The user prefers tabs over spaces."
    )
    assert "prefers tabs over spaces" in carrier_of(out)["content"]
    engine.on_turn_complete(out)
    got = expand_all(engine, top_node_id(carrier_of(out)))
    assert all("prefers tabs" not in str(m.get("content")) for m in got)


def test_should_compress_preflight(engine):
    """O7: a cheap estimate against threshold_tokens; False with no budget."""
    big = conversation(12, 200)
    assert engine.should_compress_preflight(big) is True
    assert engine.should_compress_preflight(conversation(12, 2)) is False
    assert LCMEngine(engine.db_path).should_compress_preflight(big) is False
