"""In-memory session store: the same behaviour as :class:`~simulator.store.sqlite.SQLiteStore`
without a file (U1–U8, U10), for hosts and tests that need no persistence.

Shares the stamping, pairing and merge code with the SQLite store, so uid behaviour is
identical; only restart and migration are SQLite-only.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from .base import SessionInfo, UnknownSession
from .identity import StoreInputError, UidFactory, new_uid
from .merge import repair_message_sequence
from .stamping import prepare_for_insert, prepare_rewrite
from .toolcalls import pair_tool_results


class _Session:
    def __init__(self, sid: str, parent: str | None, kind: str, meta: dict[str, Any]) -> None:
        self.id = sid
        self.parent_session_id = parent
        self.kind = kind
        self.meta = meta
        self.generation = 0
        self.ended = False
        self.rows: list[dict[str, Any]] = []
        #: Earlier generations, oldest first (index = generation number); kept, never read
        #: by :meth:`MemoryStore.load`.
        self.previous: list[list[dict[str, Any]]] = []


class MemoryStore:
    """Keeps sessions in dicts; mints uids on first insert (U1) and keeps them (U3, U6).

    ``uid_factory`` mints uids (default ``uuid4().hex``); ``id_prefix`` starts the session ids
    it mints (``<prefix>-<n>``; give each store its own when engines keep durable state keyed
    by session id across stores, as Hermes' ids never repeat). Methods and errors match
    :class:`~simulator.store.sqlite.SQLiteStore` (:class:`~simulator.store.base.UnknownSession`
    for an unknown session).
    """

    def __init__(self, *, uid_factory: UidFactory = new_uid, id_prefix: str = "session") -> None:
        self._sessions: dict[str, _Session] = {}
        self._ids = itertools.count(1)
        self._uid_factory = uid_factory
        self._prefix = str(id_prefix)

    def _get(self, session_id: str) -> _Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UnknownSession(
                f"no session {session_id!r}; create it with create_session()"
            ) from None

    def create_session(
        self,
        parent_id: str | None = None,
        *,
        session_id: str | None = None,
        kind: str | None = None,
        **meta: Any,
    ) -> str:
        """Create an empty session; return its id (``<id_prefix>-<n>`` unless given). See
        SQLiteStore."""
        if parent_id is not None:
            self._get(parent_id)
        if session_id is None:
            session_id = f"{self._prefix}-{next(self._ids)}"
            while session_id in self._sessions:
                session_id = f"{self._prefix}-{next(self._ids)}"
        elif session_id in self._sessions:
            raise StoreInputError(f"session id {session_id!r} is taken; pick another or omit it")
        self._sessions[session_id] = _Session(
            session_id, parent_id, kind or ("rotation" if parent_id else "root"), dict(meta)
        )
        return session_id

    def session_info(self, session_id: str) -> SessionInfo:
        """The :class:`~simulator.store.base.SessionInfo` of the session."""
        s = self._get(session_id)
        return SessionInfo(
            s.id, s.parent_session_id, s.kind, s.generation, len(s.rows), s.ended, dict(s.meta)
        )

    def end_session(self, session_id: str) -> None:
        """Mark the session ended."""
        self._get(session_id).ended = True

    def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Flush new messages; stamp uids and tool-call uids on the caller's dicts (U1, U8, U10)."""
        s = self._get(session_id)
        start = 0
        for i in range(len(s.rows) - 1, -1, -1):
            if s.rows[i].get("role") == "user":
                start = i
                break
        prepare_for_insert(messages, s.rows[start:], self._uid_factory)
        s.rows.extend(copy.deepcopy(messages))

    def replace(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Make ``messages`` the session's new generation, keeping given uids (U3, U6).

        The previous generation is kept (as SQLite keeps its rows): :meth:`generations` returns
        it, :meth:`load` does not.
        """
        s = self._get(session_id)
        prepare_for_insert(messages, (), self._uid_factory)
        s.previous.append(s.rows)
        s.rows = copy.deepcopy(messages)
        s.generation += 1

    def load(
        self, session_id: str, *, repair_alternation: bool = False, with_row_ids: bool = False
    ) -> list[dict[str, Any]]:
        """Fresh copies of the session's messages with identity (U2, U8; U5 when repairing).

        ``with_row_ids`` is accepted for interface parity and ignored (no row ids here).
        """
        messages = copy.deepcopy(self._get(session_id).rows)
        pair_tool_results(messages)
        if repair_alternation:
            repair_message_sequence(messages)
        return messages

    def rewrite(self, session_id: str, index: int, message: dict[str, Any]) -> None:
        """Rewrite row ``index`` keeping its identity (U4). See SQLiteStore.rewrite."""
        s = self._get(session_id)
        if not 0 <= index < len(s.rows):
            raise IndexError(
                f"rewrite index {index} is outside session {session_id!r} (length {len(s.rows)})"
            )
        prepare_rewrite(s.rows[index], message, self._uid_factory)
        s.rows[index] = copy.deepcopy(message)

    def rotate(self, session_id: str, messages: list[dict[str, Any]], **meta: Any) -> str:
        """End the session and start a child holding ``messages`` (U3, U6); return the child id."""
        parent = self._get(session_id)
        prepare_for_insert(messages, (), self._uid_factory)
        child = self.create_session(session_id, kind="rotation", **meta)
        self._sessions[child].rows = copy.deepcopy(messages)
        parent.ended = True
        return child

    def branch(self, session_id: str, upto: int | None = None, **meta: Any) -> str:
        """Copy the first ``upto`` rows into a child session keeping uids (U3); return its id."""
        s = self._get(session_id)
        upto = len(s.rows) if upto is None else upto
        if not 0 <= upto <= len(s.rows):
            raise IndexError(
                f"branch upto={upto} is outside session {session_id!r} (length {len(s.rows)})"
            )
        child = self.create_session(session_id, kind="branch", **meta)
        self._sessions[child].rows = copy.deepcopy(s.rows[:upto])
        return child

    def rewind(self, session_id: str, keep: int) -> None:
        """Keep the first ``keep`` rows as a new generation (U3)."""
        s = self._get(session_id)
        if not 0 <= keep <= len(s.rows):
            raise IndexError(
                f"rewind keep={keep} is outside session {session_id!r} (length {len(s.rows)})"
            )
        s.previous.append(s.rows)
        s.rows = copy.deepcopy(s.rows[:keep])
        s.generation += 1

    def generations(self, session_id: str) -> list[list[dict[str, Any]]]:
        """Every generation of the session, oldest first: ``out[g]`` holds fresh copies of the
        rows of generation ``g`` (uids included), ``out[-1]`` is the active one (what
        :meth:`load` returns, unpaired). An in-place compaction (:meth:`replace`) or a
        :meth:`rewind` starts a generation; the earlier ones are never discarded.
        """
        s = self._get(session_id)
        return [copy.deepcopy(rows) for rows in s.previous] + [copy.deepcopy(s.rows)]


__all__ = ["MemoryStore", "new_uid"]
