"""Covers simulator.store (identity, merge, transfer, wire; the memory and SQLite stores): one or
more tests per identity clause U1–U10; each fails when its guarantee is broken.

Tests taking the ``store`` fixture run against both MemoryStore and SQLiteStore.
"""

from __future__ import annotations

import copy
import io
import re
import sqlite3
import uuid

import pytest

from simulator.host.abc import ContextEngine
from simulator.provider.core import Provider
from simulator.store.identity import record_absorbed_message
from simulator.store.merge import fold_into, repair_message_sequence
from simulator.store.sqlite import SQLiteStore
from simulator.store.transfer import export_jsonl, import_jsonl
from simulator.store.wire import PERSISTENCE_ONLY_MESSAGE_FIELDS, strip_persistence_fields

from .helpers import assistant, copy_v30_fixture, tool, user

HEX32 = re.compile(r"^[0-9a-f]{32}$")


def uids(messages):
    return [m.get("message_uid") for m in messages]


def turn(store, sid, text="q", calls=("call_a",)):
    """Flush one user/assistant(tool_calls)/tool.../assistant turn; return the dicts."""
    msgs = (
        [user(text), assistant(None, list(calls))]
        + [tool(c, f"r-{c}") for c in calls]
        + [assistant("done")]
    )
    store.append(sid, msgs)
    return msgs


# ---------------------------------------------------------------- U1
def test_u1_uid_minted_at_first_insert_is_uuid4_hex(store):
    sid = store.create_session()
    msgs = turn(store, sid)
    for m in msgs:
        assert HEX32.match(m["message_uid"]), m
        assert uuid.UUID(hex=m["message_uid"]).version == 4
    assert len(set(uids(msgs))) == len(msgs)
    assert uids(store.load(sid)) == uids(msgs)


def test_u1_uid_is_stored_in_the_message_uid_column(sqlite_store):
    sid = sqlite_store.create_session()
    msgs = turn(sqlite_store, sid)
    conn = sqlite3.connect(sqlite_store.path)
    col = [
        r[0]
        for r in conn.execute(
            "SELECT message_uid FROM messages WHERE session_id=? ORDER BY position", (sid,)
        )
    ]
    conn.close()
    assert col == uids(msgs)


def test_u1_uid_minted_once_not_per_insert(store):
    sid = store.create_session()
    m = user("same dict flushed twice")
    store.append(sid, [m])
    first = m["message_uid"]
    store.append(sid, [m])
    assert m["message_uid"] == first
    assert uids(store.load(sid)) == [first, first]


def test_u1_insert_trigger_mints_for_rows_written_without_uid(sqlite_store):
    sid = sqlite_store.create_session()
    conn = sqlite3.connect(sqlite_store.path)
    with conn:
        conn.execute(
            (
                "INSERT INTO messages (session_id, generation, position, "
                "role, content) VALUES (?, 0, 0, 'user', '\"old build\"')"
            ),
            (sid,),
        )
        conn.execute("UPDATE sessions SET length = 1 WHERE id = ?", (sid,))
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    conn.close()
    assert "messages_message_uid_insert" in names
    (row,) = sqlite_store.load(sid)
    assert HEX32.match(row["message_uid"]) and uuid.UUID(hex=row["message_uid"]).version == 4


def test_u1_trigger_uids_differ_per_row(sqlite_store):
    sid = sqlite_store.create_session()
    conn = sqlite3.connect(sqlite_store.path)
    with conn:
        conn.executemany(
            (
                "INSERT INTO messages (session_id, generation, position, "
                "role, content) VALUES (?, 0, ?, 'user', '\"x\"')"
            ),
            [(sid, i) for i in range(50)],
        )
        got = [r[0] for r in conn.execute("SELECT message_uid FROM messages")]
    conn.close()
    assert len(set(got)) == 50


def test_u1_row_id_is_not_the_identity(sqlite_store):
    sid = sqlite_store.create_session()
    turn(sqlite_store, sid)
    child = sqlite_store.branch(sid)
    parent_rows = sqlite_store.load(sid, with_row_ids=True)
    child_rows = sqlite_store.load(child, with_row_ids=True)
    assert uids(parent_rows) == uids(child_rows)
    assert not {m["_row_id"] for m in parent_rows} & {m["_row_id"] for m in child_rows}


# ---------------------------------------------------------------- U2
def test_u2_every_restored_history_carries_uids(tmp_path):
    path = tmp_path / "s.sqlite3"
    with SQLiteStore(path) as s:
        sid = s.create_session()
        msgs = turn(s, sid) + turn(s, sid, "again", ("call_b", "call_c"))
    with SQLiteStore(path) as s:
        restored = s.load(sid)
        repaired = s.load(sid, repair_alternation=True)
    assert uids(restored) == uids(msgs)
    assert all(HEX32.match(m["message_uid"]) for m in restored + repaired)


def test_u2_legacy_rows_may_briefly_lack_uid_without_error(tmp_path):
    path = copy_v30_fixture(tmp_path)
    with SQLiteStore(path, backfill_batch_rows=2) as s:
        rows = s.load("session-1")
        assert s.backfill_pending() > 0
    assert [m.get("message_uid") is None for m in rows] == [False, False, True, True, True, True]
    assert all(m["role"] for m in rows)


# ---------------------------------------------------------------- U3
def test_u3_in_place_compaction_generation_and_tail_clones_keep_uids(store):
    sid = store.create_session()
    msgs = turn(store, sid) + turn(store, sid, "second")
    tail = copy.deepcopy(msgs[-4:])
    store.replace(sid, [user("[summary]")] + tail)
    loaded = store.load(sid)
    assert uids(loaded[1:]) == uids(msgs[-4:])
    assert store.session_info(sid).generation == 1


def test_u3_rotation_child_keeps_uids(store):
    sid = store.create_session()
    msgs = turn(store, sid)
    child = store.rotate(sid, [user("[summary]")] + copy.deepcopy(msgs[-2:]))
    info = store.session_info(child)
    assert info.parent_session_id == sid and info.kind == "rotation"
    assert store.session_info(sid).ended
    assert uids(store.load(child))[1:] == uids(msgs[-2:])


def test_u3_replace_of_the_message_list_keeps_uids(store):
    sid = store.create_session()
    msgs = turn(store, sid)
    store.replace(sid, store.load(sid))
    assert uids(store.load(sid)) == uids(msgs)


def test_u3_rewind_keeps_uids(store):
    sid = store.create_session()
    msgs = turn(store, sid) + turn(store, sid, "two")
    store.rewind(sid, 4)
    assert uids(store.load(sid)) == uids(msgs[:4])


def test_u3_export_import_keeps_all_identity_fields(store):
    sid = store.create_session()
    turn(store, sid, calls=("call_a", "call_a", "call_b"))
    buf = io.StringIO()
    export_jsonl(store, sid, buf)
    buf.seek(0)
    new = import_jsonl(store, buf)
    assert new != sid
    assert store.load(new) == store.load(sid)
    assert store.session_info(new).meta["imported_from"] == sid


def test_u3_branch_child_rows_keep_parent_uids(store):
    sid = store.create_session()
    msgs = turn(store, sid) + turn(store, sid, "two")
    child = store.branch(sid, upto=5)
    assert uids(store.load(child)) == uids(msgs[:5])
    assert store.session_info(child).kind == "branch"
    assert store.session_info(child).parent_session_id == sid


# ---------------------------------------------------------------- U4
def test_u4_save_override_and_sanitizer_rewrite_keep_uid(store):
    sid = store.create_session()
    msgs = turn(store, sid)
    before = uids(store.load(sid))
    store.rewrite(sid, 0, {"role": "user", "content": "override text"})
    store.rewrite(sid, 3, {"role": "assistant", "content": "sanitised", "message_uid": "f" * 32})
    after = store.load(sid)
    assert uids(after) == before == uids(msgs)
    assert after[0]["content"] == "override text" and after[3]["content"] == "sanitised"


def test_u4_interrupted_stream_backfill_keeps_uid_and_stamps_new_calls(store):
    sid = store.create_session()
    store.append(sid, [user("go")])
    partial = {"role": "assistant", "content": "Let me ch"}
    store.append(sid, [partial])
    full = assistant("Let me check.", ["call_z"])
    store.rewrite(sid, 1, full)
    assert full["message_uid"] == partial["message_uid"]
    result = tool("call_z")
    store.append(sid, [result])
    loaded = store.load(sid)
    assert loaded[1]["message_uid"] == partial["message_uid"]
    assert loaded[2]["_tool_call_uid"] == loaded[1]["_tool_call_uids"]["call_z"]


def test_u4_rewrite_survives_restart(tmp_path):
    path = tmp_path / "s.sqlite3"
    with SQLiteStore(path) as s:
        sid = s.create_session()
        m = user("v1")
        s.append(sid, [m])
        s.rewrite(sid, 0, user("v2"))
    with SQLiteStore(path) as s:
        (row,) = s.load(sid)
    assert row == {"role": "user", "content": "v2", "message_uid": m["message_uid"]}


# ---------------------------------------------------------------- U5
def test_u5_restore_with_repair_alternation_records_absorbed_in_text_order(store):
    sid = store.create_session()
    a, b, c = user("first"), user("second"), user("third")
    store.append(sid, [a, b, c])
    (merged,) = store.load(sid, repair_alternation=True)
    assert merged["content"] == "first\n\nsecond\n\nthird"
    assert merged["message_uid"] == a["message_uid"]
    assert merged["_absorbed_message_uids"] == [b["message_uid"], c["message_uid"]]
    assert len(store.load(sid)) == 3  # the durable transcript keeps the violation


def test_u5_merged_row_persisted_and_restored(tmp_path):
    path = tmp_path / "s.sqlite3"
    with SQLiteStore(path) as s:
        sid = s.create_session()
        a, b = assistant("one"), assistant("two")
        s.append(sid, [user("q"), a, b])
        live = s.load(sid)
        repair_message_sequence(live)
        s.replace(sid, live)
    with SQLiteStore(path) as s:
        rows = s.load(sid)
    assert rows[1]["content"] == "one\ntwo"
    assert rows[1]["message_uid"] == a["message_uid"]
    assert rows[1]["_absorbed_message_uids"] == [b["message_uid"]]


def test_u5_dropped_rows_are_not_recorded(store):
    sid = store.create_session()
    msgs = [
        user("q"),
        assistant(None, ["call_a"]),
        tool("call_a"),
        tool("call_a", "dup"),
        tool("call_stray"),
    ]
    store.append(sid, msgs)
    repaired = store.load(sid, repair_alternation=True)
    assert [m["role"] for m in repaired] == ["user", "assistant", "tool"]
    recorded = {u for m in repaired for u in m.get("_absorbed_message_uids", [])}
    assert not recorded & {msgs[3]["message_uid"], msgs[4]["message_uid"]}


def test_u5_fold_into_summary_carrier_both_orders():
    carrier = {"role": "user", "content": "[summary]", "message_uid": "c" * 32}
    task = {
        "role": "user",
        "content": "do X",
        "message_uid": "d" * 32,
        "_absorbed_message_uids": ["e" * 32],
    }
    survivor = copy.deepcopy(carrier)
    fold_into(survivor, copy.deepcopy(task))
    assert survivor["message_uid"] == "c" * 32
    assert survivor["_absorbed_message_uids"] == ["d" * 32, "e" * 32]
    leads = copy.deepcopy(carrier)
    fold_into(leads, copy.deepcopy(task), dropped_leads=True)
    assert leads["content"] == "do X\n\n[summary]"
    assert leads["message_uid"] == "d" * 32
    assert leads["_absorbed_message_uids"] == ["e" * 32, "c" * 32]


def test_u5_absorbed_never_contains_survivor_uid_and_dedupes():
    s = {
        "role": "user",
        "content": "a",
        "message_uid": "a" * 32,
        "_absorbed_message_uids": ["b" * 32],
    }
    d = {
        "role": "user",
        "content": "b",
        "message_uid": "b" * 32,
        "_absorbed_message_uids": ["a" * 32],
    }
    record_absorbed_message(s, d)
    assert s["_absorbed_message_uids"] == ["b" * 32]


# ---------------------------------------------------------------- U6
@pytest.mark.parametrize("path", ["in_place", "rotation"])
def test_u6_engine_stamped_uid_committed_and_restored(store, path):
    sid = store.create_session()
    msgs = turn(store, sid)
    carrier = {"role": "user", "content": "[summary]", "message_uid": "engine-summary-0001"}
    fresh = {"role": "assistant", "content": "engine note"}
    output = [carrier, fresh] + copy.deepcopy(msgs[-1:])
    target = sid
    if path == "in_place":
        store.replace(sid, output)
    else:
        target = store.rotate(sid, output)
    loaded = store.load(target)
    assert loaded[0]["message_uid"] == "engine-summary-0001"
    assert (
        HEX32.match(loaded[1]["message_uid"]) and fresh["message_uid"] == loaded[1]["message_uid"]
    )
    assert loaded[2]["message_uid"] == msgs[-1]["message_uid"]
    child = store.branch(target)
    assert store.load(child)[0]["message_uid"] == "engine-summary-0001"


def test_u6_engine_uid_survives_restart(tmp_path):
    path = tmp_path / "s.sqlite3"
    with SQLiteStore(path) as s:
        sid = s.create_session()
        s.append(sid, [user("q")])
        child = s.rotate(sid, [{"role": "user", "content": "[summary]", "message_uid": "9" * 32}])
    with SQLiteStore(path) as s:
        assert s.load(child)[0]["message_uid"] == "9" * 32


# ---------------------------------------------------------------- U7
def test_u7_compaction_output_repeating_a_message_gives_two_live_rows(store):
    sid = store.create_session()
    msgs = turn(store, sid)
    current = copy.deepcopy(msgs[0])
    output = [copy.deepcopy(msgs[0]), {"role": "assistant", "content": "[summary]"}, current]
    store.replace(sid, output)
    loaded = store.load(sid)  # what the host hands the next compress()
    assert loaded[0]["message_uid"] == loaded[2]["message_uid"] == msgs[0]["message_uid"]


def test_u7_importing_twice_gives_live_rows_sharing_uids(store):
    sid = store.create_session()
    turn(store, sid)
    buf = io.StringIO()
    export_jsonl(store, sid, buf)
    first = import_jsonl(store, io.StringIO(buf.getvalue()))
    second = import_jsonl(store, io.StringIO(buf.getvalue()))
    assert uids(store.load(first)) == uids(store.load(second)) == uids(store.load(sid))


class RecordingEngine(ContextEngine):
    """Minimal engine: records what compress() receives, returns it unchanged."""

    def __init__(self):
        self.seen = []

    @property
    def name(self):
        return "recording"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, **kwargs):
        self.seen.append(copy.deepcopy(messages))
        return messages


def test_u7_save_override_on_a_restored_list_leaves_two_live_rows_engine_sees_both(store):
    sid = store.create_session()
    turn(store, sid)
    restored = store.load(sid)
    edited = dict(restored[3], content="done (edited by a save override)")
    store.append(sid, [edited])  # re-appended next to the still-active earlier row
    engine = RecordingEngine()
    engine.compress(store.load(sid))
    (seen,) = engine.seen
    same = [m for m in seen if m["message_uid"] == restored[3]["message_uid"]]
    assert [m["content"] for m in same] == ["done", "done (edited by a save override)"]


def test_u7_merged_survivor_flushed_as_new_row(store):
    sid = store.create_session()
    a, b = user("first"), user("second")
    store.append(sid, [a, b])
    (survivor,) = store.load(sid, repair_alternation=True)
    store.append(sid, [survivor])
    rows = store.load(sid)
    assert [m["message_uid"] for m in rows] == [
        a["message_uid"],
        b["message_uid"],
        a["message_uid"],
    ]
    assert rows[2]["_absorbed_message_uids"] == [b["message_uid"]]


def test_u7_uid_index_is_not_unique(sqlite_store):
    conn = sqlite3.connect(sqlite_store.path)
    idx = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name='idx_messages_session_uid'"
    ).fetchone()[0]
    conn.close()
    assert "UNIQUE" not in idx.upper()


# ---------------------------------------------------------------- U8
def test_u8_duplicate_ids_in_one_response_share_a_uid(store):
    sid = store.create_session()
    a = assistant(None, ["call_x", "call_x", "call_y"])
    store.append(sid, [user("q"), a, tool("call_x", "1"), tool("call_x", "2"), tool("call_y")])
    loaded = store.load(sid)
    m = loaded[1]["_tool_call_uids"]
    assert set(m) == {"call_x", "call_y"} and m["call_x"] != m["call_y"]
    assert [r.get("_tool_call_uid") for r in loaded[2:]] == [m["call_x"], m["call_x"], m["call_y"]]
    assert [c["id"] for c in loaded[1]["tool_calls"]] == ["call_x", "call_x", "call_y"]


def test_u8_stamped_at_flush_in_same_batch_and_in_later_batch(store):
    sid = store.create_session()
    a = assistant(None, ["call_1", "call_2"])
    r1 = tool("call_1")
    store.append(sid, [user("q"), a, r1])
    assert r1["_tool_call_uid"] == a["_tool_call_uids"]["call_1"]
    r2 = tool("call_2")
    store.append(sid, [r2])
    assert r2["_tool_call_uid"] == a["_tool_call_uids"]["call_2"]


def test_u8_never_pairs_across_a_user_turn_and_later_call_shadows(store):
    sid = store.create_session()
    a1 = assistant(None, ["call_r"])
    a2 = assistant(None, ["call_r"])
    late = tool("call_r")
    store.append(sid, [user("1"), a1, tool("call_r"), user("2")])
    store.append(sid, [late])
    assert "_tool_call_uid" not in late
    r = tool("call_r")
    store.append(sid, [a2, r])
    assert r["_tool_call_uid"] == a2["_tool_call_uids"]["call_r"] != a1["_tool_call_uids"]["call_r"]


def test_u8_restore_pairs_results_stored_without_uid(sqlite_store):
    sid = sqlite_store.create_session()
    msgs = turn(sqlite_store, sid)
    conn = sqlite3.connect(sqlite_store.path)
    with conn:
        conn.execute("UPDATE messages SET tool_call_uid = NULL")
    conn.close()
    loaded = sqlite_store.load(sid)
    assert loaded[2]["_tool_call_uid"] == msgs[1]["_tool_call_uids"]["call_a"]


def test_u8_merge_with_repeated_id_gives_a_list_in_tool_calls_order(store):
    sid = store.create_session()
    a1, a2 = assistant(None, ["call_d"]), assistant(None, ["call_d"])
    store.append(sid, [user("q"), a1, a2])
    (_, merged) = store.load(sid, repair_alternation=True)
    assert [c["id"] for c in merged["tool_calls"]] == ["call_d", "call_d"]
    assert merged["_tool_call_uids"] == {
        "call_d": [a1["_tool_call_uids"]["call_d"], a2["_tool_call_uids"]["call_d"]]
    }
    store.replace(sid, store.load(sid, repair_alternation=True))
    r1, r2 = tool("call_d", "1"), tool("call_d", "2")
    store.append(sid, [r1, r2])
    assert [r1["_tool_call_uid"], r2["_tool_call_uid"]] == merged["_tool_call_uids"]["call_d"]


def test_u8_result_of_a_call_without_uid_has_none(tmp_path):
    path = copy_v30_fixture(tmp_path)
    with SQLiteStore(path) as s:
        rows = s.load("session-1")
    assert rows[2]["tool_calls"][0]["id"] == "call_legacy1" and "_tool_call_uids" not in rows[2]
    assert "_tool_call_uid" not in rows[3]


# ---------------------------------------------------------------- U9
def test_u9_stripped_copies_carry_no_persistence_field_and_input_is_untouched(store):
    sid = store.create_session()
    turn(store, sid, calls=("call_a", "call_a"))
    store.append(sid, [user("x"), user("y")])
    history = store.load(sid, repair_alternation=True)
    snapshot = copy.deepcopy(history)
    wire = strip_persistence_fields(history)
    assert history == snapshot
    assert all(not PERSISTENCE_ONLY_MESSAGE_FIELDS & set(m) for m in wire)
    assert [m["content"] for m in wire] == [m["content"] for m in history]
    provider = Provider()
    provider.chat_completions({"model": "m", "messages": wire})
    assert provider.u9_leaks == []
    provider.chat_completions({"model": "m", "messages": history})
    assert provider.u9_leaks, "the unstripped history should have been recorded as a leak"


# ---------------------------------------------------------------- U10
def test_u10_preflight_sees_no_uid_and_the_same_dict_gets_it_at_flush(store):
    sid = store.create_session()
    turn(store, sid)
    live = store.load(sid)
    current = user("new turn")
    live.append(current)
    seen = []

    def preflight_compress(messages):
        seen.append("message_uid" in messages[-1])
        return messages

    live = preflight_compress(live)
    store.append(sid, [current])
    assert seen == [False]
    assert live[-1] is current and HEX32.match(current["message_uid"])
    assert store.load(sid)[-1]["message_uid"] == current["message_uid"]


def test_u10_migration_backfills_every_row_once_over_several_opens(tmp_path):
    path = copy_v30_fixture(tmp_path)
    seen = {}
    pending = []
    for _ in range(4):
        with SQLiteStore(path, backfill_batch_rows=4) as s:
            assert s.schema_version() == 31
            pending.append(s.backfill_pending())
            for sid in ("session-1", "session-2"):
                for i, m in enumerate(s.load(sid)):
                    if "message_uid" in m:
                        assert seen.setdefault((sid, i), m["message_uid"]) == m["message_uid"]
    assert pending == [5, 1, 0, 0]
    assert len(seen) == 9 and len(set(seen.values())) == 9
    assert all(HEX32.match(u) for u in seen.values())


def test_u8_rewrite_of_a_legacy_call_invents_no_tool_call_uid(tmp_path):
    path = copy_v30_fixture(tmp_path)
    with SQLiteStore(path) as s:
        legacy = s.load("session-1")[2]
        s.rewrite(
            "session-1",
            2,
            {"role": "assistant", "content": "now with text", "tool_calls": legacy["tool_calls"]},
        )
        rows = s.load("session-1")
    assert "_tool_call_uids" not in rows[2] and "_tool_call_uid" not in rows[3]
    assert rows[2]["message_uid"] == legacy["message_uid"]


def test_u3_branch_of_a_not_yet_backfilled_store_shares_uids_with_the_parent(tmp_path):
    path = copy_v30_fixture(tmp_path)
    with SQLiteStore(path, backfill_batch_rows=1) as s:
        assert "message_uid" not in s.load("session-1")[3]
        child = s.branch("session-1")
        parent, copy_rows = s.load("session-1"), s.load(child)
    assert uids(parent) == uids(copy_rows) and all(uids(parent))
