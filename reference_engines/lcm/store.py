"""The LCM engine's durable backend: one SQLite file, one shared backend, one connection per engine.

- :class:`LCMBackend` is shared by an engine and all its clones (C1): the database path, a
  process-wide write lock, and the *staging area* of passes that compress() produced but the
  host has not yet shown committed (TS2). Get it with :func:`backend_for` so every engine in
  a process that names the same file shares one backend.
- :class:`LCMConnection` is owned by one engine instance: its own ``sqlite3`` connection,
  opened lazily, usable from any thread (TS1: calls come from pool threads; the connection
  is guarded by an ``RLock`` instead of thread affinity).

Tables (schema version 1):

``messages``  every version of every logical message (U1, U4, U7): ``msg_key`` is the
              ``message_uid`` (or ``anon:<hash>`` for messages without one, U2/U10),
              ``version_hash`` the hash of the content; ``seen_seq`` orders sightings, and the
              version with the highest ``seen_seq`` is the current one (U7).
``absorbed``  ``absorbed_uid -> survivor_uid`` from ``_absorbed_message_uids`` (U5).
``nodes``     the summary DAG: ``leaf`` nodes over messages, ``condensed`` nodes over nodes,
              one ``top`` node per pass.
``leaf_members`` which leaf covers which message version (reverse index for the tools).
``passes``    one row per committed pass, keyed by the carrier's ``message_uid`` (U6).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1

#: Most passes kept in the staging area; older uncommitted passes are dropped (memory only).
MAX_STAGED_PASSES = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages(
    id INTEGER PRIMARY KEY,
    msg_key TEXT NOT NULL,
    version_hash TEXT NOT NULL,
    session_id TEXT,
    role TEXT,
    text TEXT NOT NULL,
    message_json TEXT NOT NULL,
    seen_seq INTEGER NOT NULL,
    UNIQUE(msg_key, version_hash)
);
CREATE INDEX IF NOT EXISTS idx_lcm_messages_session ON messages(session_id, seen_seq);
CREATE TABLE IF NOT EXISTS absorbed(absorbed_uid TEXT PRIMARY KEY, survivor_uid TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes(
    node_id TEXT PRIMARY KEY,
    level INTEGER NOT NULL,
    kind TEXT NOT NULL,
    session_id TEXT,
    summary TEXT NOT NULL,
    children_json TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    first_key TEXT,
    last_key TEXT,
    focus_topic TEXT,
    pass_uid TEXT
);
CREATE INDEX IF NOT EXISTS idx_lcm_nodes_session ON nodes(session_id);
CREATE TABLE IF NOT EXISTS leaf_members(
    msg_key TEXT NOT NULL,
    version_hash TEXT NOT NULL,
    node_id TEXT NOT NULL,
    PRIMARY KEY(msg_key, version_hash, node_id)
);
CREATE TABLE IF NOT EXISTS passes(
    carrier_uid TEXT PRIMARY KEY,
    session_id TEXT,
    seq INTEGER NOT NULL,
    top_node_id TEXT NOT NULL,
    roots_json TEXT NOT NULL,
    carrier_hash TEXT NOT NULL,
    focus_topic TEXT
);
CREATE INDEX IF NOT EXISTS idx_lcm_passes_session ON passes(session_id);
"""


def default_db_path() -> Path:
    """``$HERMES_HOME/lcm/lcm.sqlite3`` (HERMES_HOME defaults to ``~/.hermes``), read now."""
    home = os.environ.get("HERMES_HOME") or os.path.join(os.path.expanduser("~"), ".hermes")
    return Path(home) / "lcm" / "lcm.sqlite3"


@dataclass
class MessageVersion:
    """One version of a logical message, ready to store (U4).

    Attributes:
        key: ``message_uid`` or ``anon:<hash>`` (U2).
        version_hash: hash of the content without identity fields.
        role: the OpenAI ``role``.
        text: searchable text (content plus tool call names/arguments).
        message: the verbatim message dict, identity fields included.
        session_id: the session it was seen in (informational; None when unknown).
    """

    key: str
    version_hash: str
    role: str | None
    text: str
    message: dict[str, Any]
    session_id: str | None = None


@dataclass
class StagedPass:
    """What one compress() pass produced, held in memory until the host commits it (TS2).

    Attributes:
        carrier_uid: the ``message_uid`` stamped on the summary carrier (U6).
        carrier_hash: version hash of the carrier as returned (to recognise it unmodified).
        session_id: the engine's session when the pass ran (may be None).
        top_node_id: id of the pass's top node.
        roots: ids of the DAG frontier after this pass, oldest first.
        nodes: node dicts created by the pass (see :func:`node_row`).
        versions: message versions the pass summarised (and any modified carrier).
        absorbed: ``(absorbed_uid, survivor_uid)`` pairs seen in the pass input (U5).
        middle_uids: uids of the summarised messages: seeing one of them without the
            carrier in a later compress() input or on_turn_complete shows the pass discarded.
        focus_topic: the focus of the pass (A5), or None.
    """

    carrier_uid: str
    carrier_hash: str
    session_id: str | None
    top_node_id: str
    roots: list[str]
    nodes: list[dict[str, Any]]
    versions: list[MessageVersion]
    absorbed: list[tuple[str, str]]
    middle_uids: frozenset
    focus_topic: str | None = None
    node_index: dict[str, dict[str, Any]] = field(default_factory=dict)
    version_index: dict[tuple[str, str], MessageVersion] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.node_index = {n["node_id"]: n for n in self.nodes}
        self.version_index = {(v.key, v.version_hash): v for v in self.versions}


class LCMBackend:
    """The durable backend shared by an engine and its clones (C1, TS2, TS3).

    Holds the database path, a write lock serialising this process's transactions, and the
    staging area of uncommitted passes. Thread-safe. Create through :func:`backend_for`.
    """

    def __init__(self, db_path: Path) -> None:
        self.db_path = Path(db_path)
        self.write_lock = threading.RLock()
        self._stage_lock = threading.RLock()
        self._staged: OrderedDict[str, StagedPass] = OrderedDict()
        self._schema_ready = False
        self._schema_lock = threading.Lock()

    # -- staging (TS2) -----------------------------------------------------------------
    def stage(self, staged: StagedPass) -> None:
        """Hold ``staged`` until its carrier uid shows up in host-provided messages."""
        with self._stage_lock:
            self._staged[staged.carrier_uid] = staged
            while len(self._staged) > MAX_STAGED_PASSES:
                self._staged.popitem(last=False)

    def staged_count(self) -> int:
        """Number of passes waiting for the host's commit."""
        with self._stage_lock:
            return len(self._staged)

    def staged_carriers(self) -> list[str]:
        """Carrier uids of the staged passes, oldest first."""
        with self._stage_lock:
            return list(self._staged)

    def take_committed(self, seen_uids: set[str]) -> list[StagedPass]:
        """Remove and return (oldest first) the staged passes whose carrier uid is in
        ``seen_uids``."""
        with self._stage_lock:
            hits = [uid for uid in self._staged if uid in seen_uids]
            return [self._staged.pop(uid) for uid in hits]

    def drop_discarded(self, seen_uids: set[str]) -> list[str]:
        """Drop staged passes shown discarded: a summarised uid is present, the carrier is not.

        Returns the dropped carrier uids. Nothing durable was written for them (TS2).
        """
        with self._stage_lock:
            gone = [
                uid
                for uid, p in self._staged.items()
                if uid not in seen_uids and not p.middle_uids.isdisjoint(seen_uids)
            ]
            for uid in gone:
                del self._staged[uid]
            return gone

    def drop_superseded(self, committed: Sequence[StagedPass]) -> list[str]:
        """Drop staged passes that summarised the same messages as a just-committed pass.

        They competed for the same history (e.g. a retried pass after a timeout) and lost;
        the host can no longer commit them. Returns the dropped carrier uids.
        """
        taken = set()
        for p in committed:
            taken |= p.middle_uids
        if not taken:
            return []
        with self._stage_lock:
            gone = [uid for uid, p in self._staged.items() if not p.middle_uids.isdisjoint(taken)]
            for uid in gone:
                del self._staged[uid]
            return gone

    def drop_session(self, session_id: str | None) -> int:
        """Drop every staged pass of ``session_id`` (on_session_reset); returns how many."""
        with self._stage_lock:
            gone = [uid for uid, p in self._staged.items() if p.session_id == session_id]
            for uid in gone:
                del self._staged[uid]
            return len(gone)

    def staged_pass(self, carrier_uid: str) -> StagedPass | None:
        """The staged pass with this carrier uid, or None."""
        with self._stage_lock:
            return self._staged.get(carrier_uid)

    def staged_node(self, node_id: str) -> dict[str, Any] | None:
        """A node from a staged (uncommitted) pass, or None."""
        with self._stage_lock:
            for p in self._staged.values():
                node = p.node_index.get(node_id)
                if node is not None:
                    return node
        return None

    def staged_version(self, key: str, vhash: str) -> MessageVersion | None:
        """A message version held by a staged pass, or None."""
        with self._stage_lock:
            for p in self._staged.values():
                v = p.version_index.get((key, vhash))
                if v is not None:
                    return v
        return None

    def staged_snapshot(self) -> list[StagedPass]:
        """The staged passes, oldest first (a copy of the list; the passes are shared)."""
        with self._stage_lock:
            return list(self._staged.values())

    # -- connections -------------------------------------------------------------------
    def connect(self) -> sqlite3.Connection:
        """Open a new connection to the database (creating the file and schema if needed).

        Raises:
            sqlite3.Error / OSError: the path cannot be created or opened; the message
                names the path.
        """
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                str(self.db_path), timeout=30.0, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise type(exc)(
                f"LCM could not open its database at {self.db_path}: {exc}. "
                "Pass db_path= to LCMEngine or set HERMES_HOME to a writable directory."
            ) from exc
        conn.execute("PRAGMA busy_timeout=30000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-32000")  # 32 MB page cache: index inserts stay in memory
        with self._schema_lock:
            if not self._schema_ready:
                with self.write_lock:
                    conn.executescript(_SCHEMA)
                    conn.execute(
                        "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
                    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('seq', '0')")
                self._schema_ready = True
        return conn


#: Live backends by resolved path; an entry goes away with the last engine that holds it.
_BACKENDS: weakref.WeakValueDictionary[str, LCMBackend] = weakref.WeakValueDictionary()
_BACKENDS_LOCK = threading.Lock()


def backend_for(db_path: Path) -> LCMBackend:
    """The process-wide backend for ``db_path`` (one per resolved path), created on first use."""
    key = str(Path(db_path).expanduser().resolve())
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            backend = LCMBackend(Path(key))
            _BACKENDS[key] = backend
        return backend


def node_row(node: Mapping[str, Any]) -> tuple:
    """The ``nodes`` row tuple of a node dict."""
    return (
        node["node_id"],
        int(node["level"]),
        node["kind"],
        node.get("session_id"),
        node["summary"],
        json.dumps(node["children"], separators=(",", ":")),
        int(node["message_count"]),
        node.get("first_key"),
        node.get("last_key"),
        node.get("focus_topic"),
        node.get("pass_uid"),
    )


def _node_from_row(row: Sequence[Any]) -> dict[str, Any]:
    return {
        "node_id": row[0],
        "level": row[1],
        "kind": row[2],
        "session_id": row[3],
        "summary": row[4],
        "children": json.loads(row[5]),
        "message_count": row[6],
        "first_key": row[7],
        "last_key": row[8],
        "focus_topic": row[9],
        "pass_uid": row[10],
    }


_NODE_COLUMNS = (
    "node_id, level, kind, session_id, summary, children_json, message_count, "
    "first_key, last_key, focus_topic, pass_uid"
)

_BATCH = 400  # parameters per IN (...) query, below SQLite's variable limit


def _chunks(seq: Sequence[Any], size: int = _BATCH) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


class LCMConnection:
    """One engine's own connection to the shared backend (C1). Thread-safe (TS1, TS3).

    Opens lazily on first use, so constructing or cloning an engine touches no file.
    Every write happens in one ``BEGIN IMMEDIATE`` transaction under the backend's write lock.
    """

    def __init__(self, backend: LCMBackend) -> None:
        self.backend = backend
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self.backend.connect()
        return self._conn

    def close(self) -> None:
        """Close this connection (the backend and other clones' connections stay open)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def is_open(self) -> bool:
        """True once the lazy connection has been opened and not closed."""
        return self._conn is not None

    # -- writes --------------------------------------------------------------------------
    def _write(self, fn) -> Any:
        with self._lock:
            db = self._db()  # opened before the write lock: connect() may take it for the schema
            with self.backend.write_lock:
                return self._transaction(db, fn)

    @staticmethod
    def _transaction(db: sqlite3.Connection, fn) -> Any:
        db.execute("BEGIN IMMEDIATE")
        try:
            result = fn(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return result

    @staticmethod
    def _next_seq(db: sqlite3.Connection, count: int) -> int:
        base = int(db.execute("SELECT value FROM meta WHERE key='seq'").fetchone()[0])
        db.execute("UPDATE meta SET value=? WHERE key='seq'", (str(base + count),))
        return base + 1

    @staticmethod
    def _put_versions(db: sqlite3.Connection, versions: Sequence[MessageVersion]) -> None:
        if not versions:
            return
        base = LCMConnection._next_seq(db, len(versions))
        # seen_seq follows sighting order (U7); rows go in sorted by key so the unique
        # index is filled in order (random uids would otherwise touch random pages).
        order = sorted(
            range(len(versions)), key=lambda i: (versions[i].key, versions[i].version_hash)
        )
        db.executemany(
            (
                "INSERT INTO messages(msg_key, version_hash, session_id, role, text, "
                "message_json, seen_seq) VALUES (?,?,?,?,?,?,?) ON CONFLICT(msg_key, "
                "version_hash) DO UPDATE SET seen_seq=excluded.seen_seq"
            ),
            [
                (
                    v.key,
                    v.version_hash,
                    v.session_id,
                    v.role,
                    v.text,
                    json.dumps(v.message, ensure_ascii=False, separators=(",", ":"), default=str),
                    base + i,
                )
                for i, v in ((i, versions[i]) for i in order)
            ],
        )

    @staticmethod
    def _put_absorbed(db: sqlite3.Connection, pairs: Sequence[tuple[str, str]]) -> None:
        if pairs:
            db.executemany(
                "INSERT INTO absorbed(absorbed_uid, survivor_uid) VALUES (?, ?) "
                "ON CONFLICT(absorbed_uid) DO UPDATE SET survivor_uid=excluded.survivor_uid",
                [(a, s) for a, s in pairs if a != s],
            )

    def ingest(
        self, versions: Sequence[MessageVersion], absorbed: Sequence[tuple[str, str]] = ()
    ) -> None:
        """Store committed message versions and absorbed-uid links (U4, U5, U7) in one
        transaction."""
        if not versions and not absorbed:
            return

        def run(db):
            self._put_versions(db, versions)
            self._put_absorbed(db, absorbed)

        self._write(run)

    def publish(self, passes: Sequence[StagedPass]) -> None:
        """Write committed passes (messages, nodes, leaf index, pass rows) in one transaction
        (TS2)."""
        if not passes:
            return

        def run(db):
            for p in passes:
                self._put_versions(db, p.versions)
                self._put_absorbed(db, p.absorbed)
                db.executemany(
                    f"INSERT OR IGNORE INTO nodes({_NODE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    [node_row(n) for n in p.nodes],
                )
                db.executemany(
                    (
                        "INSERT OR IGNORE INTO leaf_members(msg_key, "
                        "version_hash, node_id) VALUES (?,?,?)"
                    ),
                    sorted(
                        (ref[0], ref[1], n["node_id"])
                        for n in p.nodes
                        if n["kind"] == "leaf"
                        for ref in n["children"]
                    ),
                )
                seq = self._next_seq(db, 1)
                db.execute(
                    (
                        "INSERT OR IGNORE INTO passes(carrier_uid, "
                        "session_id, seq, top_node_id, roots_json, "
                        "carrier_hash, focus_topic) VALUES (?,?,?,?,?,?,?)"
                    ),
                    (
                        p.carrier_uid,
                        p.session_id,
                        seq,
                        p.top_node_id,
                        json.dumps(p.roots),
                        p.carrier_hash,
                        p.focus_topic,
                    ),
                )

        self._write(run)

    # -- reads ---------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Run a query; [] while the database file does not exist yet (a read never creates it,
        so a pass that is later discarded leaves no file behind, TS2)."""
        with self._lock:
            if self._conn is None and not self.backend.db_path.exists():
                return []
            return self._db().execute(sql, params).fetchall()

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> int:
        rows = self._read(sql, params)
        return int(rows[0][0]) if rows else 0

    def passes_for(self, uids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Committed passes whose carrier uid is in ``uids``: ``{carrier_uid: pass dict}``."""
        out: dict[str, dict[str, Any]] = {}
        uniq = list(dict.fromkeys(uids))
        for chunk in _chunks(uniq):
            rows = self._read(
                (
                    "SELECT carrier_uid, session_id, seq, top_node_id, "
                    "roots_json, carrier_hash, focus_topic FROM passes "
                    f"WHERE carrier_uid IN ({','.join('?' * len(chunk))})"
                ),
                chunk,
            )
            for r in rows:
                out[r[0]] = {
                    "carrier_uid": r[0],
                    "session_id": r[1],
                    "seq": r[2],
                    "top_node_id": r[3],
                    "roots": json.loads(r[4]),
                    "carrier_hash": r[5],
                    "focus_topic": r[6],
                }
        return out

    def session_pass_count(self, session_id: str | None) -> int:
        """Committed passes recorded for ``session_id``."""
        if session_id is None:
            return 0
        return self._scalar("SELECT COUNT(*) FROM passes WHERE session_id=?", (session_id,))

    def nodes(self, node_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Committed nodes by id (missing ids are simply absent from the result)."""
        out: dict[str, dict[str, Any]] = {}
        uniq = list(dict.fromkeys(node_ids))
        for chunk in _chunks(uniq):
            for r in self._read(
                (
                    f"SELECT {_NODE_COLUMNS} FROM nodes WHERE "
                    f"node_id IN ({','.join('?' * len(chunk))})"
                ),
                chunk,
            ):
                out[r[0]] = _node_from_row(r)
        return out

    def versions(self, refs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Committed message versions by ``(msg_key, version_hash)``: the verbatim dicts."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        uniq = list(dict.fromkeys((k, h) for k, h in refs))
        for chunk in _chunks(uniq, _BATCH // 2):
            where = " OR ".join("(msg_key=? AND version_hash=?)" for _ in chunk)
            params = [x for ref in chunk for x in ref]
            for k, h, js in self._read(
                f"SELECT msg_key, version_hash, message_json FROM messages WHERE {where}", params
            ):
                out[(k, h)] = json.loads(js)
        return out

    def message_history(self, key: str) -> list[dict[str, Any]]:
        """Every stored version of ``key``, oldest sighting first; the last is current (U7)."""
        rows = self._read(
            "SELECT version_hash, role, text, message_json, seen_seq, session_id FROM messages "
            "WHERE msg_key=? ORDER BY seen_seq",
            (key,),
        )
        return [
            {
                "version_hash": r[0],
                "role": r[1],
                "text": r[2],
                "message": json.loads(r[3]),
                "seen_seq": r[4],
                "session_id": r[5],
            }
            for r in rows
        ]

    def survivor_of(self, uid: str) -> str | None:
        """Follow absorbed links (U5) to the uid that now carries ``uid``'s text, or None."""
        seen = {uid}
        current = uid
        while True:
            rows = self._read("SELECT survivor_uid FROM absorbed WHERE absorbed_uid=?", (current,))
            if not rows:
                return None if current == uid else current
            current = rows[0][0]
            if current in seen:
                return current
            seen.add(current)

    def leaves_covering(self, key: str) -> list[str]:
        """Ids of committed leaf nodes that cover any version of ``key``."""
        return [
            r[0]
            for r in self._read("SELECT DISTINCT node_id FROM leaf_members WHERE msg_key=?", (key,))
        ]

    def current_seq(self, keys: Sequence[str]) -> dict[str, int]:
        """Highest ``seen_seq`` per key: the current version's sighting number (U7)."""
        out: dict[str, int] = {}
        uniq = list(dict.fromkeys(keys))
        for chunk in _chunks(uniq):
            for k, s in self._read(
                (
                    "SELECT msg_key, MAX(seen_seq) FROM messages WHERE msg_key "
                    f"IN ({','.join('?' * len(chunk))}) GROUP BY msg_key"
                ),
                chunk,
            ):
                out[k] = s
        return out

    def iter_messages(self, session_id: str | None) -> list[tuple]:
        """``(msg_key, version_hash, role, text, seen_seq, session_id)`` rows, oldest first.

        With ``session_id`` None, every session's rows.
        """
        if session_id is None:
            return self._read(
                "SELECT msg_key, version_hash, role, text, seen_seq, "
                "session_id FROM messages ORDER BY seen_seq"
            )
        return self._read(
            "SELECT msg_key, version_hash, role, text, seen_seq, session_id FROM messages "
            "WHERE session_id=? ORDER BY seen_seq",
            (session_id,),
        )

    def find_messages(self, needle: str, session_id: str | None, limit: int) -> list[tuple]:
        """Rows whose text contains ``needle`` (ASCII case-insensitive), oldest first, at most
        ``limit``."""
        sql = (
            "SELECT msg_key, version_hash, role, text, seen_seq, session_id FROM messages "
            "WHERE instr(lower(text), ?) > 0"
        )
        params: list[Any] = [needle.lower()]
        if session_id is not None:
            sql += " AND session_id=?"
            params.append(session_id)
        sql += " ORDER BY seen_seq LIMIT ?"
        params.append(int(limit))
        return self._read(sql, params)

    def iter_nodes(self, session_id: str | None) -> list[dict[str, Any]]:
        """Committed nodes (of ``session_id``, or all when None)."""
        if session_id is None:
            rows = self._read(f"SELECT {_NODE_COLUMNS} FROM nodes")
        else:
            rows = self._read(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE session_id=?", (session_id,)
            )
        return [_node_from_row(r) for r in rows]

    def counts(self) -> dict[str, int]:
        """Row counts of the main tables (for status and tests; a full scan, not per turn)."""
        out = {}
        for table in ("messages", "nodes", "passes", "absorbed"):
            out[table] = self._scalar(f"SELECT COUNT(*) FROM {table}")
        return out
