"""SQLite schema of the session store, its migrations, and the batched uid back-fill (U1, U10).

Versions (numbered after Hermes' ``SCHEMA_VERSION``):

- **30**, "pre-uid": ``sessions`` and ``messages`` without identity columns. Kept as DDL so
  tests can build old-schema databases (``tests/store/fixtures/make_v30_fixture.py``).
- **31**: adds ``messages.message_uid``, ``absorbed_message_uids`` (JSON list),
  ``tool_call_uids`` (JSON object), ``tool_call_uid``; the index
  ``idx_messages_session_uid`` (not unique: two live rows may share a uid, U7); the insert
  trigger ``messages_message_uid_insert`` that mints a uid for any row written without
  one (e.g. by an older build); and ``uid_backfill``, the cursor of the back-fill.

Back-fill: migrating to 31 records ``high_water`` = the largest existing row id. Each
open of the store then gives uids to at most ``batch_rows`` legacy rows (ids up to the
high-water mark, in id order), so a large store is back-filled over the next few opens
and a small one at the first. Each legacy row receives exactly one uid, once. Until
then such a row loads without ``message_uid`` ("no identity yet", U2). Tool-call maps
are not back-filled: a legacy call pairs its result with nothing (U8).
"""

from __future__ import annotations

import sqlite3

#: The schema version this build writes.
SCHEMA_VERSION = 31
#: The last schema without identity columns.
PRE_UID_SCHEMA_VERSION = 30

#: Rows back-filled per open when the caller does not say (a "large store" needs several opens).
DEFAULT_BACKFILL_BATCH_ROWS = 50_000

#: SQL expression for a fresh uuid4 hex (32 lowercase hex, version nibble 4, variant 8-b).
#: Every ``randomblob``/``random`` call is evaluated per row, so it is safe in UPDATEs.
#: (``random() & 3`` rather than ``abs(random()) % 4``: abs() overflows on the minimum int64.)
SQL_NEW_UID = (
    "(lower(hex(randomblob(6))) || '4' || substr(lower(hex(randomblob(2))), 2)"
    " || substr('89ab', 1 + (random() & 3), 1) || substr(lower(hex(randomblob(8))), 2))"
)

V30_DDL = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    parent_session_id TEXT REFERENCES sessions(id),
    kind TEXT NOT NULL DEFAULT 'root',
    generation INTEGER NOT NULL DEFAULT 0,
    length INTEGER NOT NULL DEFAULT 0,
    ended INTEGER NOT NULL DEFAULT 0,
    meta TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    generation INTEGER NOT NULL,
    position INTEGER NOT NULL,
    role TEXT NOT NULL,
    content TEXT,
    tool_calls TEXT,
    tool_call_id TEXT,
    extra TEXT
);
CREATE INDEX idx_messages_session_pos ON messages(session_id, generation, position);
INSERT INTO schema_version (version) VALUES (30);
"""

V31_MIGRATION = f"""
ALTER TABLE messages ADD COLUMN message_uid TEXT;
ALTER TABLE messages ADD COLUMN absorbed_message_uids TEXT;
ALTER TABLE messages ADD COLUMN tool_call_uids TEXT;
ALTER TABLE messages ADD COLUMN tool_call_uid TEXT;
CREATE INDEX idx_messages_session_uid ON messages(session_id, message_uid);
CREATE TRIGGER messages_message_uid_insert AFTER INSERT ON messages
WHEN NEW.message_uid IS NULL OR NEW.message_uid = ''
BEGIN
    UPDATE messages SET message_uid = {SQL_NEW_UID} WHERE id = NEW.id;
END;
CREATE TABLE uid_backfill (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    cursor INTEGER NOT NULL,
    high_water INTEGER NOT NULL
);
INSERT INTO uid_backfill (id, cursor, high_water)
    VALUES (1, 0, (SELECT COALESCE(MAX(id), 0) FROM messages));
UPDATE schema_version SET version = 31;
"""


class SchemaError(RuntimeError):
    """The database's schema cannot be used by this build (e.g. written by a newer one)."""


def read_version(conn: sqlite3.Connection) -> int:
    """The database's schema version; 0 for an empty database (no ``schema_version`` table)."""
    row = conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='schema_version'"
    ).fetchone()
    if row is None:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    # executescript() would COMMIT the caller's transaction; run statement by statement.
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            conn.execute(buf)
            buf = ""
    if buf.strip():
        raise SchemaError(f"incomplete SQL statement in schema script: {buf!r}")


def create_v30(conn: sqlite3.Connection) -> None:
    """Create the pre-uid (v30) schema in an empty database, inside one transaction.

    For tests and fixtures that need an old-schema store; the store itself migrates on.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        _run_script(conn, V30_DDL)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def ensure_schema(conn: sqlite3.Connection) -> tuple[int, int]:
    """Bring the database to :data:`SCHEMA_VERSION`; return ``(version_found, version_now)``.

    Runs in one write transaction (``conn`` must be in autocommit mode,
    ``isolation_level=None``). An empty database gets v30 then the v31 migration, so
    new and migrated stores have exactly the same shape. Raises :class:`SchemaError`
    for a version this build does not know.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = read_version(conn)
        if found > SCHEMA_VERSION or (0 < found < PRE_UID_SCHEMA_VERSION):
            raise SchemaError(
                f"database schema version {found} is not supported (this build reads "
                f"{PRE_UID_SCHEMA_VERSION}..{SCHEMA_VERSION}); open it with a matching build"
            )
        if found == 0:
            _run_script(conn, V30_DDL)
        if found < SCHEMA_VERSION:
            _run_script(conn, V31_MIGRATION)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return found, SCHEMA_VERSION


def backfill_pending(conn: sqlite3.Connection) -> int:
    """How many legacy rows (ids up to the high-water mark) still lack a uid."""
    cursor, high = conn.execute("SELECT cursor, high_water FROM uid_backfill").fetchone()
    if cursor >= high:
        return 0
    (n,) = conn.execute(
        "SELECT COUNT(*) FROM messages WHERE id > ? AND id <= ? AND message_uid IS NULL",
        (cursor, high),
    ).fetchone()
    return int(n)


def backfill_batch(conn: sqlite3.Connection, batch_rows: int) -> int:
    """Give a uid to up to ``batch_rows`` legacy rows, in id order; return how many got one.

    Must run inside the caller's write transaction. Rows that already have a uid are
    never touched, so each legacy row is back-filled once (U10). ``batch_rows`` must be
    positive (:class:`ValueError` otherwise).
    """
    if batch_rows <= 0:
        raise ValueError(f"batch_rows must be a positive number of rows, got {batch_rows}")
    cursor, high = conn.execute("SELECT cursor, high_water FROM uid_backfill").fetchone()
    if cursor >= high:
        return 0
    row = conn.execute(
        (
            "SELECT MAX(id) FROM (SELECT id FROM messages "
            "WHERE id > ? AND id <= ? ORDER BY id LIMIT ?)"
        ),
        (cursor, high, batch_rows),
    ).fetchone()
    upto = row[0] if row and row[0] is not None else high
    changed = conn.execute(
        f"UPDATE messages SET message_uid = {SQL_NEW_UID} "
        "WHERE id > ? AND id <= ? AND (message_uid IS NULL OR message_uid = '')",
        (cursor, upto),
    ).rowcount
    conn.execute("UPDATE uid_backfill SET cursor = ?", (upto,))
    return int(changed)


__all__ = [
    "SCHEMA_VERSION",
    "PRE_UID_SCHEMA_VERSION",
    "DEFAULT_BACKFILL_BATCH_ROWS",
    "SQL_NEW_UID",
    "V30_DDL",
    "V31_MIGRATION",
    "SchemaError",
    "read_version",
    "create_v30",
    "ensure_schema",
    "backfill_pending",
    "backfill_batch",
]
