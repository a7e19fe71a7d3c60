"""The reference host's embedded session store: stdlib ``sqlite3`` in WAL mode (U1–U10).

Layout (see :mod:`simulator.store.schema`): ``sessions`` rows carry a parent link
(``kind`` ``rotation``, ``branch`` or ``import``) and the number of the session's active
*generation*; ``messages`` rows belong to one generation and sit at ``position``
0..length-1 in it. An in-place compaction (:meth:`SQLiteStore.replace`) or a
:meth:`~SQLiteStore.rewind` writes a new generation and leaves the old rows in place.

Per-turn work is O(new rows): :meth:`~SQLiteStore.append` reads only the stored tail since
the last user row (to pair late tool results) and inserts the batch;
:meth:`~SQLiteStore.rewrite` touches one row. Loading is O(session length).

Every write is one ``BEGIN IMMEDIATE`` transaction, so a crash leaves either all of a
flush or none of it. One connection is shared by the host's threads behind a lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from . import schema
from .base import SessionInfo, UnknownSession
from .codec import DATA_COLUMNS, decode_row, encode_message
from .identity import StoreInputError, UidFactory, new_uid
from .merge import repair_message_sequence
from .stamping import prepare_for_insert, prepare_rewrite
from .toolcalls import pair_tool_results

#: Upper bound on stored rows read back to pair a late tool result (rows since the last user row).
PAIRING_LOOKBACK_ROWS = 4096

_COLS = ", ".join(DATA_COLUMNS)
_PLACEHOLDERS = ", ".join("?" for _ in DATA_COLUMNS)


class SQLiteStore:
    """A :class:`~simulator.store.base.SessionStore` on one SQLite file (U1–U10).

    ``path``: file path (``":memory:"`` works but has no WAL). ``uid_factory``: mints
    uids in Python (default ``uuid4().hex``; pass a seeded one for deterministic runs).
    ``backfill_batch_rows``: legacy rows back-filled per open after a v30→v31 migration.
    Raises :class:`~simulator.store.schema.SchemaError` for an unsupported schema version.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        uid_factory: UidFactory = new_uid,
        backfill_batch_rows: int = schema.DEFAULT_BACKFILL_BATCH_ROWS,
        timeout: float = 30.0,
    ) -> None:
        if backfill_batch_rows <= 0:
            raise ValueError(f"backfill_batch_rows must be positive, got {backfill_batch_rows}")
        self.path = os.fspath(path)
        self._uid_factory = uid_factory
        self._backfill_batch_rows = backfill_batch_rows
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=timeout
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self.schema_version_found, _ = schema.ensure_schema(self._conn)
        #: Legacy rows given a uid during this open (0 when nothing was pending).
        self.backfilled_at_open = self.backfill_step()

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        """Close the connection (idempotent). Committed data is durable."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._require_conn()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._require_conn()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def _require_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the store is closed; open a new SQLiteStore(path)")
        return self._conn

    def _session(self, conn: sqlite3.Connection, session_id: str) -> SessionInfo:
        row = conn.execute(
            (
                "SELECT id, parent_session_id, kind, generation, "
                "length, ended, meta FROM sessions WHERE id = ?"
            ),
            (session_id,),
        ).fetchone()
        if row is None:
            raise UnknownSession(
                f"no session {session_id!r} in {self.path}; create it with create_session()"
            )
        return SessionInfo(row[0], row[1], row[2], row[3], row[4], bool(row[5]), json.loads(row[6]))

    # ------------------------------------------------------------------ sessions
    def create_session(
        self,
        parent_id: str | None = None,
        *,
        session_id: str | None = None,
        kind: str | None = None,
        **meta: Any,
    ) -> str:
        """Create an empty session and return its id (``session-<n>`` unless ``session_id``).

        ``parent_id`` links a child (``kind`` defaults to ``rotation`` with a parent, else
        ``root``). Raises :class:`StoreInputError` for a taken ``session_id`` and
        :class:`UnknownSession` for a missing parent.
        """
        with self._write() as conn:
            return self._create_session(conn, parent_id, session_id, kind, meta)

    def _create_session(
        self,
        conn: sqlite3.Connection,
        parent_id: str | None,
        session_id: str | None,
        kind: str | None,
        meta: dict[str, Any],
    ) -> str:
        if parent_id is not None:
            self._session(conn, parent_id)
        if session_id is None:
            (n,) = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM sessions").fetchone()
            session_id = f"session-{n}"
            while conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
                n += 1
                session_id = f"session-{n}"
        elif conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
            raise StoreInputError(f"session id {session_id!r} is taken; pick another or omit it")
        conn.execute(
            "INSERT INTO sessions (id, parent_session_id, kind, meta) VALUES (?, ?, ?, ?)",
            (
                session_id,
                parent_id,
                kind or ("rotation" if parent_id else "root"),
                json.dumps(meta, ensure_ascii=False, sort_keys=True),
            ),
        )
        return session_id

    def session_info(self, session_id: str) -> SessionInfo:
        """The :class:`SessionInfo` of ``session_id`` (raises :class:`UnknownSession`)."""
        with self._read() as conn:
            return self._session(conn, session_id)

    def list_sessions(self) -> list[SessionInfo]:
        """Every session, in creation order."""
        with self._read() as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM sessions ORDER BY seq")]
            return [self._session(conn, i) for i in ids]

    def end_session(self, session_id: str) -> None:
        """Mark the session ended (rotation does this to the parent). Rows are kept."""
        with self._write() as conn:
            self._session(conn, session_id)
            conn.execute("UPDATE sessions SET ended = 1 WHERE id = ?", (session_id,))

    # ------------------------------------------------------------------ messages
    def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Flush new messages at the end of the session's active generation (U1, U8, U10).

        Stamps the caller's dicts in place before inserting: ``message_uid`` where missing,
        ``_tool_call_uids`` on assistant rows, ``_tool_call_uid`` on results whose call is in
        this batch or already stored. Cost: O(len(messages) + rows since the last user
        row). Raises :class:`StoreInputError` (nothing written) for malformed messages.
        """
        if not messages:
            return
        with self._write() as conn:
            s = self._session(conn, session_id)
            context = self._pairing_context(conn, s)
            prepare_for_insert(messages, context, self._uid_factory)
            self._insert(conn, session_id, s.generation, s.length, messages)
            conn.execute(
                "UPDATE sessions SET length = ? WHERE id = ?",
                (s.length + len(messages), session_id),
            )

    def replace(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Commit ``messages`` as the session's new generation (in-place compaction; U3, U6).

        Rows carrying a uid keep it (tail clones, engine-stamped summary carriers); rows
        without one get a fresh uid, written into the caller's dict. Old generations stay
        in the file. Cost: O(len(messages)).
        """
        with self._write() as conn:
            s = self._session(conn, session_id)
            prepare_for_insert(messages, (), self._uid_factory)
            gen = s.generation + 1
            self._insert(conn, session_id, gen, 0, messages)
            conn.execute(
                "UPDATE sessions SET generation = ?, length = ? WHERE id = ?",
                (gen, len(messages), session_id),
            )

    def load(
        self,
        session_id: str,
        *,
        repair_alternation: bool = False,
        with_row_ids: bool = False,
    ) -> list[dict[str, Any]]:
        """Restore the session's active messages as fresh dicts, identity included (U2).

        Tool results stored without ``_tool_call_uid`` are paired from the preceding
        assistant row (U8). ``repair_alternation=True`` runs
        :func:`~simulator.store.merge.repair_message_sequence` on the restored list,
        recording merged uids (U5); the stored rows are not changed.
        ``with_row_ids=True`` adds ``_row_id`` (a row id, not an identity).
        """
        with self._read() as conn:
            s = self._session(conn, session_id)
            rows = conn.execute(
                (
                    f"SELECT id, {_COLS} FROM messages "
                    "WHERE session_id = ? AND generation = ? ORDER BY position"
                ),
                (session_id, s.generation),
            ).fetchall()
        messages = [decode_row(r[1:], r[0] if with_row_ids else None) for r in rows]
        pair_tool_results(messages)
        if repair_alternation:
            repair_message_sequence(messages)
        return messages

    def rewrite(self, session_id: str, index: int, message: dict[str, Any]) -> None:
        """Rewrite the content of the active row at ``index``, keeping its identity (U4).

        For a save override, a sanitizer's row rewrite, or the back-fill of an
        interrupted stream. The row keeps its ``message_uid`` (written into ``message``
        in place, replacing any other value), its absorbed list and tool-call uids unless
        ``message`` brings its own; tool calls the rewrite adds get fresh uids (see
        :func:`~simulator.store.stamping.prepare_rewrite`). Raises :class:`IndexError` for an
        index outside the session, :class:`StoreInputError` for a malformed message.
        """
        with self._write() as conn:
            s = self._session(conn, session_id)
            if not 0 <= index < s.length:
                raise IndexError(
                    f"rewrite index {index} is outside session {session_id!r} (length {s.length})"
                )
            row = conn.execute(
                (
                    f"SELECT id, {_COLS} FROM messages "
                    "WHERE session_id = ? AND generation = ? AND position = ?"
                ),
                (session_id, s.generation, index),
            ).fetchone()
            prepare_rewrite(decode_row(row[1:]), message, self._uid_factory)
            values = encode_message(message)
            assignments = ", ".join(f"{c} = ?" for c in DATA_COLUMNS)
            conn.execute(f"UPDATE messages SET {assignments} WHERE id = ?", (*values, row[0]))

    def generations(self, session_id: str) -> list[list[dict[str, Any]]]:
        """Every generation of the session, oldest first: ``out[g]`` holds the rows of
        generation ``g`` as fresh dicts (identity included), ``out[-1]`` the active one (what
        :meth:`load` returns, unpaired). In-place compactions (:meth:`replace`) and
        :meth:`rewind` start a generation and leave the earlier rows in the file; a generation
        with no rows is an empty list. Cost: O(rows of the session, all generations).
        """
        with self._read() as conn:
            s = self._session(conn, session_id)
            rows = conn.execute(
                (
                    f"SELECT generation, {_COLS} FROM messages "
                    "WHERE session_id = ? ORDER BY generation, position"
                ),
                (session_id,),
            ).fetchall()
        out: list[list[dict[str, Any]]] = [[] for _ in range(s.generation + 1)]
        for r in rows:
            if 0 <= r[0] <= s.generation:
                out[r[0]].append(decode_row(r[1:]))
        return out

    # ------------------------------------------------------------------ copy paths (U3)
    def rotate(self, session_id: str, messages: list[dict[str, Any]], **meta: Any) -> str:
        """End ``session_id`` and start a child session holding ``messages`` (U3, U6).

        The compaction output's uids are committed as given (tail copies keep theirs, an
        engine-stamped carrier keeps the engine's); missing ones are minted in place.
        Returns the child's id.
        """
        with self._write() as conn:
            self._session(conn, session_id)
            child = self._create_session(conn, session_id, None, "rotation", meta)
            prepare_for_insert(messages, (), self._uid_factory)
            self._insert(conn, child, 0, 0, messages)
            conn.execute("UPDATE sessions SET length = ? WHERE id = ?", (len(messages), child))
            conn.execute("UPDATE sessions SET ended = 1 WHERE id = ?", (session_id,))
        return child

    def branch(self, session_id: str, upto: int | None = None, **meta: Any) -> str:
        """Copy the first ``upto`` active rows (all by default) into a new child session (U3).

        The child's rows keep the parent's uids and every other identity field. The parent
        stays live. Returns the child's id. Raises :class:`IndexError` for a bad ``upto``.
        """
        with self._write() as conn:
            s = self._session(conn, session_id)
            upto = s.length if upto is None else upto
            if not 0 <= upto <= s.length:
                raise IndexError(
                    f"branch upto={upto} is outside session {session_id!r} (length {s.length})"
                )
            child = self._create_session(conn, session_id, None, "branch", meta)
            self._copy_rows(conn, session_id, s.generation, upto, child, 0)
            conn.execute("UPDATE sessions SET length = ? WHERE id = ?", (upto, child))
        return child

    def rewind(self, session_id: str, keep: int) -> None:
        """Rewind the session to its first ``keep`` messages as a new generation (U3).

        The kept rows are copied with their uids; later rows stay in the old generation.
        Raises :class:`IndexError` for ``keep`` outside 0..length.
        """
        with self._write() as conn:
            s = self._session(conn, session_id)
            if not 0 <= keep <= s.length:
                raise IndexError(
                    f"rewind keep={keep} is outside session {session_id!r} (length {s.length})"
                )
            self._copy_rows(conn, session_id, s.generation, keep, session_id, s.generation + 1)
            conn.execute(
                "UPDATE sessions SET generation = ?, length = ? WHERE id = ?",
                (s.generation + 1, keep, session_id),
            )

    # ------------------------------------------------------------------ migration
    def backfill_step(self, rows: int | None = None) -> int:
        """Back-fill uids onto up to ``rows`` legacy rows (default: the open batch size).

        Returns how many rows got a uid. Runs automatically once per open (U10).
        """
        with self._write() as conn:
            return schema.backfill_batch(conn, rows or self._backfill_batch_rows)

    def backfill_pending(self) -> int:
        """Legacy rows still without a uid (0 once the back-fill is done)."""
        with self._read() as conn:
            return schema.backfill_pending(conn)

    def schema_version(self) -> int:
        """The schema version of the open database
        (:data:`~simulator.store.schema.SCHEMA_VERSION`)."""
        with self._read() as conn:
            return schema.read_version(conn)

    def checkpoint(self, mode: str = "TRUNCATE") -> None:
        """Copy the WAL into the main file now (``PRAGMA wal_checkpoint(mode)``).

        ``mode`` is one of PASSIVE, FULL, RESTART, TRUNCATE (:class:`ValueError` otherwise).
        SQLite also checkpoints on its own every ~1000 WAL pages; calling this after a bulk
        load keeps that work out of the following turns.
        """
        mode = mode.upper()
        if mode not in ("PASSIVE", "FULL", "RESTART", "TRUNCATE"):
            raise ValueError(f"checkpoint mode {mode!r} is not PASSIVE, FULL, RESTART or TRUNCATE")
        with self._lock:
            self._require_conn().execute(f"PRAGMA wal_checkpoint({mode})")

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` result: ``"ok"`` for a sound file."""
        with self._lock:
            return "; ".join(r[0] for r in self._require_conn().execute("PRAGMA integrity_check"))

    # ------------------------------------------------------------------ internals
    def _insert(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        generation: int,
        start: int,
        messages: Sequence[dict[str, Any]],
    ) -> None:
        conn.executemany(
            f"INSERT INTO messages (session_id, generation, position, {_COLS}) "
            f"VALUES (?, ?, ?, {_PLACEHOLDERS})",
            [
                (session_id, generation, start + i, *encode_message(m))
                for i, m in enumerate(messages)
            ],
        )

    def _copy_rows(
        self,
        conn: sqlite3.Connection,
        src: str,
        src_gen: int,
        count: int,
        dst: str,
        dst_gen: int,
    ) -> None:
        # A legacy row not back-filled yet gets its uid now, so source and copy share it (U3).
        conn.execute(
            (
                f"UPDATE messages SET message_uid = {schema.SQL_NEW_UID} "
                "WHERE session_id = ? AND generation = ? AND position < ? "
                "AND (message_uid IS NULL OR message_uid = '')"
            ),
            (src, src_gen, count),
        )
        conn.execute(
            f"INSERT INTO messages (session_id, generation, position, {_COLS}) "
            f"SELECT ?, ?, position, {_COLS} FROM messages "
            "WHERE session_id = ? AND generation = ? AND position < ? ORDER BY position",
            (dst, dst_gen, src, src_gen, count),
        )

    def _pairing_context(self, conn: sqlite3.Connection, s: SessionInfo) -> list[dict[str, Any]]:
        """Stored rows from the last user row (or the lookback bound) to the end."""
        if s.length == 0:
            return []
        low = max(0, s.length - PAIRING_LOOKBACK_ROWS)
        row = conn.execute(
            "SELECT position FROM messages WHERE session_id = ? AND generation = ? "
            "AND position >= ? AND role = 'user' ORDER BY position DESC LIMIT 1",
            (s.id, s.generation, low),
        ).fetchone()
        start = row[0] if row and row[0] is not None else low
        rows = conn.execute(
            (
                f"SELECT {_COLS} FROM messages WHERE session_id = ? AND "
                "generation = ? AND position >= ? ORDER BY position"
            ),
            (s.id, s.generation, start),
        ).fetchall()
        return [decode_row(r) for r in rows]


__all__ = ["SQLiteStore", "SessionInfo", "UnknownSession", "PAIRING_LOOKBACK_ROWS"]
