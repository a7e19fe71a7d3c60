"""The session-store interface the reference host talks to.

Messages are OpenAI-format dicts. A store mints ``message_uid`` (U1: ``uuid4().hex``) the
first time a message is persisted, writing it into the same dict object the host holds
(U10: the dict that lacked a uid receives it at the flush), and keeps it across copies.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol


class SessionStore(Protocol):
    """What the host needs from a store; :mod:`simulator.store.memory` is the simplest."""

    def create_session(self, parent_id: Optional[str] = None, **meta: Any) -> str:
        """Create a session and return its id."""

    def append(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        """Persist new messages at the end; stamp ``message_uid`` on each dict in place."""

    def replace(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        """Replace the session's message list (compaction commit); uids are kept (U3, U6)."""

    def load(self, session_id: str) -> List[Dict[str, Any]]:
        """Return the session's messages as fresh dicts, uids included (U2)."""
