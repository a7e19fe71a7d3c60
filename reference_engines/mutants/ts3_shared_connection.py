"""TS3 on a shared SQLite connection: an engine that keeps one ``sqlite3`` connection for every
session (clones share it, as C1 asks of durable backends) and writes each compaction's summary
as a row, then reads the row it just wrote back by ``last_insert_rowid()``, and its correct
twin.

``last_insert_rowid()`` is per connection: two sessions compacting at once on the shared
connection can each read the other's row. The fault shows only when the two inserts meet;
the kit's TS3 check makes them meet (it holds the sessions together at each sqlite3 call).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

from reference_engines.mutants._base import (
    MinimalEngine,
    live_turn_start,
    safe_tail_start,
    spaced_text,
)
from simulator.provider.tokens import count_messages


class SharedConnectionLocked(MinimalEngine):
    """Correct: one connection shared by every session and clone, each write-and-read-back
    under one lock (TS3)."""

    def __init__(self, db_path: str = ":memory:") -> None:
        self._db = sqlite3.connect(db_path, check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS summaries (id INTEGER PRIMARY KEY, session TEXT, body TEXT)"
        )
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "shared-connection"

    def clone_for_agent(self):
        """C1: a new engine on the same connection and lock (the durable backend)."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.last_prompt_tokens = clone.last_completion_tokens = clone.last_total_tokens = 0
        clone.compression_count = 0
        clone.ineffective_passes = 0
        return clone

    def _guard(self):
        """What serialises a write and its read-back (the twin and the mutant differ here)."""
        return self._lock

    def _store(self, session: str, body: str) -> str:
        """Write one summary row and read it back (the text the output carries)."""
        with self._guard():
            self._db.execute("INSERT INTO summaries (session, body) VALUES (?, ?)", (session, body))
            (row_id,) = self._db.execute("SELECT last_insert_rowid()").fetchone()
            (text,) = self._db.execute(
                "SELECT body FROM summaries WHERE id = ?", (row_id,)
            ).fetchone()
            self._db.commit()
        return text

    def _compress(self, messages):
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = min(
            safe_tail_start(body, len(body) - self.keep_last), live_turn_start(body, len(body))
        )  # the live ask stays verbatim (A8)
        if start == 0:
            return list(messages)
        tail = [dict(m) for m in body[start:]]
        first_user = next((spaced_text(m) for m in body[:start] if m.get("role") == "user"), "")
        text = self._store(spaced_text(head[0]) if head else "", f"Summary: {first_user[:120]}")
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return head + [{"role": role, "content": text}] + tail


class SharedConnectionUnlocked(SharedConnectionLocked):
    """Breaks TS3 only: the same engine without the lock; two sessions compacting at once can
    read each other's row back through the shared connection's ``last_insert_rowid()``."""

    mutant_of = "TS3"

    def _guard(self):
        return contextlib.nullcontext()  # the defect: no lock around write and read-back
