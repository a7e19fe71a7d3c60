"""Covers simulator.store.sqlite and simulator.store.schema: SQLite-specific behaviour (schema,
migration, errors, round-trips, threads)."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from simulator.store.base import UnknownSession
from simulator.store.identity import StoreInputError
from simulator.store.schema import SCHEMA_VERSION, SchemaError
from simulator.store.sqlite import SQLiteStore

from .fixtures.make_v30_fixture import FIXTURE_ROWS, build
from .helpers import V30_FIXTURE, assistant, copy_v30_fixture, tool, user


def columns(path, table):
    conn = sqlite3.connect(path)
    cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    conn.close()
    return cols


def test_fresh_store_is_v31_wal_with_identity_columns(sqlite_store):
    assert sqlite_store.schema_version() == SCHEMA_VERSION == 31
    assert sqlite_store.schema_version_found == 0
    cols = columns(sqlite_store.path, "messages")
    for c in ("message_uid", "absorbed_message_uids", "tool_call_uids", "tool_call_uid"):
        assert c in cols
    assert "parent_session_id" in columns(sqlite_store.path, "sessions")
    conn = sqlite3.connect(sqlite_store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_identity_columns_hold_json(sqlite_store):
    sid = sqlite_store.create_session()
    a = assistant(None, ["x", "x"])
    a["_absorbed_message_uids"] = ["e" * 32]
    sqlite_store.append(sid, [user("q"), a, tool("x")])
    conn = sqlite3.connect(sqlite_store.path)
    rows = conn.execute(
        "SELECT absorbed_message_uids, tool_call_uids, "
        "tool_call_uid FROM messages ORDER BY position"
    ).fetchall()
    conn.close()
    assert json.loads(rows[1][0]) == ["e" * 32]
    assert json.loads(rows[1][1]) == a["_tool_call_uids"]
    assert rows[2][2] == a["_tool_call_uids"]["x"]


def test_fixture_matches_its_builder(tmp_path):
    rebuilt = tmp_path / "rebuilt.sqlite3"
    build(rebuilt)

    def dump(p):
        conn = sqlite3.connect(p)
        out = list(conn.iterdump())
        conn.close()
        return out

    assert dump(rebuilt) == dump(V30_FIXTURE)
    assert "message_uid" not in columns(V30_FIXTURE, "messages")


def test_migration_from_v30_keeps_rows_and_links(tmp_path):
    path = copy_v30_fixture(tmp_path)
    with SQLiteStore(path) as s:
        assert s.schema_version_found == 30 and s.schema_version() == 31
        assert s.backfilled_at_open == len(FIXTURE_ROWS) and s.backfill_pending() == 0
        rows = s.load("session-1")
        assert [m["role"] for m in rows] == [r[1] for r in FIXTURE_ROWS if r[0] == "session-1"]
        assert rows[2]["tool_calls"][0]["id"] == "call_legacy1"
        assert s.session_info("session-2").parent_session_id == "session-1"
        assert s.integrity_check() == "ok"
        conn = sqlite3.connect(path)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        conn.close()
        assert {"messages_message_uid_insert", "idx_messages_session_uid", "uid_backfill"} <= names


def test_unsupported_schema_versions_are_refused(tmp_path):
    for version in (5, 99):
        path = tmp_path / f"v{version}.sqlite3"
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
        conn.commit()
        conn.close()
        with pytest.raises(SchemaError, match=f"version {version} is not supported"):
            SQLiteStore(path)


def test_bad_message_is_rejected_and_nothing_written(sqlite_store):
    sid = sqlite_store.create_session()
    good = user("fine")
    with pytest.raises(StoreInputError, match="message 1 of the batch: role 'robot'"):
        sqlite_store.append(sid, [good, {"role": "robot", "content": "x"}])
    assert "message_uid" not in good
    with pytest.raises(StoreInputError, match="_absorbed_message_uids must be a list"):
        sqlite_store.append(sid, [dict(user("x"), _absorbed_message_uids="nope")])
    with pytest.raises(StoreInputError, match="_tool_call_uids must map"):
        sqlite_store.append(sid, [dict(assistant(None, ["c"]), _tool_call_uids={"c": []})])
    with pytest.raises(StoreInputError, match="cannot be stored as JSON"):
        sqlite_store.append(sid, [dict(user("x"), extra_field=object())])
    assert sqlite_store.load(sid) == []
    assert sqlite_store.session_info(sid).length == 0


def test_non_string_uid_means_no_identity_and_is_replaced(sqlite_store):
    sid = sqlite_store.create_session()
    m = dict(user("x"), message_uid=42)
    sqlite_store.append(sid, [m])
    assert isinstance(m["message_uid"], str) and len(m["message_uid"]) == 32


def test_unknown_session_index_errors_and_closed_store(sqlite_store, tmp_path):
    with pytest.raises(UnknownSession, match="no session 'nope'"):
        sqlite_store.load("nope")
    sid = sqlite_store.create_session()
    sqlite_store.append(sid, [user("x")])
    with pytest.raises(IndexError):
        sqlite_store.rewrite(sid, 5, user("y"))
    with pytest.raises(IndexError):
        sqlite_store.branch(sid, 3)
    with pytest.raises(IndexError):
        sqlite_store.rewind(sid, -1)
    with pytest.raises(StoreInputError, match="taken"):
        sqlite_store.create_session(session_id=sid)
    s2 = SQLiteStore(tmp_path / "other.sqlite3")
    s2.close()
    with pytest.raises(RuntimeError, match="closed"):
        s2.load(sid)


def test_round_trip_of_content_shapes_and_extra_fields(sqlite_store):
    sid = sqlite_store.create_session()
    msgs = [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "pic"},
                {"type": "image_url", "image_url": {"url": "data:x"}},
            ],
        },
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
            "reasoning_content": "r",
        },
        {"role": "tool", "tool_call_id": "c", "content": "", "name": "f"},
        {"role": "assistant", "content": None, "finish_reason": "stop", "timestamp": 12.5},
    ]
    sqlite_store.append(sid, msgs)
    assert sqlite_store.load(sid) == msgs


def test_late_result_pairs_after_restart(tmp_path):
    path = tmp_path / "s.sqlite3"
    with SQLiteStore(path) as s:
        sid = s.create_session()
        a = assistant(None, ["c1", "c2"])
        s.append(sid, [user("q"), a, tool("c1")])
    with SQLiteStore(path) as s:
        r = tool("c2")
        s.append(sid, [r])
    assert r["_tool_call_uid"] == a["_tool_call_uids"]["c2"]


def test_generations_keep_old_rows(sqlite_store):
    sid = sqlite_store.create_session()
    sqlite_store.append(sid, [user("a"), user("b")])
    sqlite_store.replace(sid, [user("summary")])
    sqlite_store.rewind(sid, 0)
    conn = sqlite3.connect(sqlite_store.path)
    (n,) = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,)).fetchone()
    conn.close()
    assert (
        n == 3 and sqlite_store.load(sid) == [] and sqlite_store.session_info(sid).generation == 2
    )


def test_concurrent_appends_from_threads(sqlite_store):
    sid = sqlite_store.create_session()
    errors = []

    def writer(k):
        try:
            for i in range(25):
                sqlite_store.append(sid, [user(f"{k}-{i}")])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = sqlite_store.load(sid)
    assert len(rows) == 100 and len({m["message_uid"] for m in rows}) == 100


def test_second_connection_sees_committed_rows(tmp_path):
    path = tmp_path / "s.sqlite3"
    a = SQLiteStore(path)
    b = SQLiteStore(path)
    sid = a.create_session()
    m = user("hi")
    a.append(sid, [m])
    assert b.load(sid)[0]["message_uid"] == m["message_uid"]
    a.close()
    b.close()


def test_sql_uid_expression_is_uuid4_hex_per_row():
    import uuid

    from simulator.store.schema import SQL_NEW_UID

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (u TEXT)")
    conn.executemany("INSERT INTO t VALUES (NULL)", [()] * 500)
    conn.execute(f"UPDATE t SET u = {SQL_NEW_UID}")
    got = [r[0] for r in conn.execute("SELECT u FROM t")]
    conn.close()
    assert len(set(got)) == 500
    for u in got:
        parsed = uuid.UUID(hex=u)
        assert u == parsed.hex and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_both_stores_offer_the_full_interface_with_the_same_parameters():
    import inspect

    from simulator.store.base import FullSessionStore
    from simulator.store.memory import MemoryStore

    names = [n for n, v in vars(FullSessionStore).items() if callable(v) and not n.startswith("_")]
    names += [
        n
        for n, v in vars(FullSessionStore.__mro__[1]).items()
        if callable(v) and not n.startswith("_")
    ]
    assert {"append", "replace", "load", "rewrite", "rotate", "branch", "rewind"} <= set(names)
    for name in set(names):
        params = [
            list(inspect.signature(getattr(cls, name)).parameters)
            for cls in (MemoryStore, SQLiteStore)
        ]
        assert params[0] == params[1], f"{name}: {params}"


def test_checkpoint_modes(sqlite_store):
    sid = sqlite_store.create_session()
    sqlite_store.append(sid, [user("x")])
    sqlite_store.checkpoint()
    sqlite_store.checkpoint("passive")
    with pytest.raises(ValueError, match="not PASSIVE"):
        sqlite_store.checkpoint("bogus")
    assert sqlite_store.load(sid)[0]["content"] == "x"


def test_generations_keep_every_replaced_generation(tmp_path):
    """U3: replace() and rewind() start a generation; generations() returns them all, oldest
    first, the active one last, for both stores."""
    from simulator.store.memory import MemoryStore
    from simulator.store.sqlite import SQLiteStore

    for store in (MemoryStore(), SQLiteStore(tmp_path / "g.sqlite3")):
        sid = store.create_session()
        rows = [{"role": "user", "content": f"m{i}"} for i in range(4)]
        store.append(sid, rows)
        first = store.load(sid)
        store.replace(sid, [dict(first[0]), {"role": "assistant", "content": "summary"}])
        second = store.load(sid)
        store.rewind(sid, 1)
        gens = store.generations(sid)
        assert [len(g) for g in gens] == [4, 2, 1], type(store).__name__
        assert gens[0] == first and gens[1] == second and gens[2] == store.load(sid)
        assert gens[1][0]["message_uid"] == first[0]["message_uid"]  # U3 across generations
