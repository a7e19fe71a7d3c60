"""In-memory session store: the first cut behind :class:`simulator.store.base.SessionStore`."""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Any, Dict, List, Optional


def new_uid() -> str:
    """A fresh ``message_uid``: 32 lowercase hex characters (U1)."""
    return uuid.uuid4().hex


class MemoryStore:
    """Keeps sessions in dicts; mints uids on first append (U1) and keeps them (U3, U6)."""

    def __init__(self) -> None:
        self._sessions: Dict[str, List[Dict[str, Any]]] = {}
        self._parents: Dict[str, Optional[str]] = {}
        self._ids = itertools.count(1)

    def create_session(self, parent_id: Optional[str] = None, **meta: Any) -> str:
        sid = f"session-{next(self._ids)}"
        self._sessions[sid] = []
        self._parents[sid] = parent_id
        return sid

    def append(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        rows = self._sessions[session_id]
        for m in messages:
            if not m.get("message_uid"):
                m["message_uid"] = new_uid()
            rows.append(copy.deepcopy(m))

    def replace(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        for m in messages:
            if not m.get("message_uid"):
                m["message_uid"] = new_uid()
        self._sessions[session_id] = copy.deepcopy(messages)

    def load(self, session_id: str) -> List[Dict[str, Any]]:
        return copy.deepcopy(self._sessions[session_id])
