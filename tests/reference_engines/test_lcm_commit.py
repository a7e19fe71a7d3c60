"""Covers reference_engines.lcm.engine and reference_engines.lcm.store (staged publish): TS2, a
pass writes nothing durable; it is published only once the host shows it committed.

The four observation points: a later compress() input, on_turn_complete, on_session_end,
and handle_tool_call(messages=). A pass the host discarded leaves nothing in the database.
"""

from __future__ import annotations

import copy
import json
import sqlite3

import pytest

from reference_engines.lcm import LCMEngine

from .test_lcm_helpers import carrier_of, conversation, expand_all, top_node_id, turn


def table_counts(path):
    """Row counts straight from the SQLite file (a second, independent connection)."""
    if not path.exists():
        return {"messages": 0, "nodes": 0, "passes": 0}
    db = sqlite3.connect(path)
    try:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return {
            t: (db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] if t in names else 0)
            for t in ("messages", "nodes", "passes")
        }
    finally:
        db.close()


@pytest.fixture
def engine(tmp_path):
    e = LCMEngine(tmp_path / "lcm.sqlite3")
    e.update_model("m", 3000)
    e.on_session_start("s1")
    yield e
    e.close()


def test_compress_alone_writes_nothing(engine):
    """Not even the database file: a focused pass over a history quoting a carrier only reads."""
    msgs = conversation(1, 40)
    msgs[9]["content"] = "[LCM summary] pasted by the user"
    out = engine.compress(msgs, focus_topic="kubernetes")
    assert carrier_of(out) is not None
    assert not engine.db_path.exists() and list(engine.db_path.parent.iterdir()) == []
    assert json.loads(
        engine.handle_tool_call("lcm_grep", {"pattern": "kubernetes", "scope": "messages"})
    )
    assert not engine.db_path.exists()
    assert engine.get_status()["staged_passes"] == 1


@pytest.mark.parametrize("point", ["turn_complete", "session_end", "tool_call", "next_compress"])
def test_published_once_carrier_is_seen(engine, point):
    out = engine.compress(conversation(2, 40))
    carrier = carrier_of(out)
    if point == "turn_complete":
        engine.on_turn_complete(list(out), usage={"prompt_tokens": 1})
    elif point == "session_end":
        engine.on_session_end("s1", list(out))
    elif point == "tool_call":
        reply = json.loads(
            engine.handle_tool_call(
                "lcm_describe", {"id": top_node_id(carrier)}, messages=list(out)
            )
        )
        assert reply["committed"] is True
    else:
        more = list(out) + conversation(3, 40, system=False)
        engine.compress(more)
    counts = table_counts(engine.db_path)
    assert counts["passes"] >= 1 and counts["nodes"] > 0 and counts["messages"] > 0
    assert engine.get_status()["published_passes"] >= 1


def test_discarded_pass_leaves_nothing(engine):
    """The host timed out: its next compress() input still holds the originals, no carrier."""
    msgs = conversation(4, 40)
    discarded = engine.compress(copy.deepcopy(msgs))
    discarded_top = top_node_id(carrier_of(discarded))
    engine.on_turn_complete(list(msgs))  # the host kept the original history
    assert engine.get_status()["staged_passes"] == 0
    assert table_counts(engine.db_path)["nodes"] == 0
    reply = json.loads(engine.handle_tool_call("lcm_describe", {"id": discarded_top}))
    assert "error" in reply
    # a later pass that does commit is published normally, and nothing of the first appears
    kept = engine.compress(copy.deepcopy(msgs))
    engine.on_turn_complete(list(kept))
    counts = table_counts(engine.db_path)
    assert counts["passes"] == 1
    db = sqlite3.connect(engine.db_path)
    assert (
        db.execute(
            "SELECT COUNT(*) FROM passes WHERE carrier_uid=?",
            (carrier_of(discarded)["message_uid"],),
        ).fetchone()[0]
        == 0
    )


def test_late_pass_after_timeout_is_never_published(engine):
    """A timed-out pass that finishes after the host moved on is dropped at the next observation."""
    msgs = conversation(5, 40)
    engine.on_turn_complete(list(msgs))  # nothing staged yet: a no-op
    late = engine.compress(copy.deepcopy(msgs))  # finishes after the host gave up
    more = msgs + turn(__import__("random").Random(1), 99, with_tool=False)
    engine.on_turn_complete(list(more))
    assert engine.get_status()["staged_passes"] == 0
    assert table_counts(engine.db_path)["passes"] == 0
    assert carrier_of(late)["message_uid"] not in {m.get("message_uid") for m in more}


def test_on_session_end_after_compaction_with_old_messages_does_not_discard(engine):
    """0.19.0 calls on_session_end with the pre-compression messages right after a commit:
    that must not drop the committed pass, which is published when its carrier is seen."""
    msgs = conversation(6, 40)
    out = engine.compress(copy.deepcopy(msgs))
    engine.on_session_end("s1", list(msgs))
    assert engine.get_status()["staged_passes"] == 1
    engine.on_session_start("s1", boundary_reason="compression", old_session_id="s1")
    engine.on_turn_complete(list(out))
    assert table_counts(engine.db_path)["passes"] == 1
    got = expand_all(engine, top_node_id(carrier_of(out)))
    assert got and all(m in msgs for m in got)


def test_on_session_end_flushes_transcript(engine):
    msgs = conversation(7, 5)
    engine.on_session_end("s1", msgs)
    assert table_counts(engine.db_path)["messages"] == len(msgs)
    reply = json.loads(engine.handle_tool_call("lcm_grep", {"pattern": "Turn 3:"}))
    want = [m["message_uid"] for m in msgs if str(m.get("content")).startswith("Turn 3:")]
    assert [m["message_uid"] for m in reply["matches"]] == want and len(want) == 1


def test_retried_pass_supersedes_the_first(engine, monkeypatch):
    """A timed-out pass that stages late, next to the retry the host committed: committing the
    retry drops it. (Its input was read before the retry was staged, so it saw nothing.)"""
    msgs = conversation(8, 40)
    retry = engine.compress(copy.deepcopy(msgs))
    with monkeypatch.context() as m:
        m.setattr(engine, "_observe", lambda *a, **k: None)  # the late pass observed too early
        late = engine.compress(copy.deepcopy(msgs))
    assert engine.get_status()["staged_passes"] == 2
    engine.on_turn_complete(list(retry))
    assert engine.get_status()["staged_passes"] == 0
    db = sqlite3.connect(engine.db_path)
    carriers = {r[0] for r in db.execute("SELECT carrier_uid FROM passes")}
    assert carriers == {carrier_of(retry)["message_uid"]}
    assert carrier_of(late)["message_uid"] not in carriers


def test_second_pass_over_same_input_shows_first_discarded(engine):
    msgs = conversation(9, 40)
    engine.compress(copy.deepcopy(msgs))
    engine.compress(copy.deepcopy(msgs))  # its input still holds the originals
    assert engine.get_status()["staged_passes"] == 1
