"""The session-store interface the reference host talks to.

Messages are OpenAI-format dicts. A store mints ``message_uid`` (U1: ``uuid4().hex``) the
first time a message is persisted, writing it into the same dict object the host holds
(U10: the dict that lacked a uid receives it at the flush), and keeps it across copies.

:class:`SessionStore` is the minimum the host needs; :class:`FullSessionStore` adds the
copy paths and rewrites that both bundled stores (:class:`~simulator.store.memory.MemoryStore`,
:class:`~simulator.store.sqlite.SQLiteStore`) implement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


class UnknownSession(KeyError):
    """No session with that id exists in this store."""


@dataclass
class SessionInfo:
    """One session: ``id``, ``parent_session_id`` (None for a root), ``kind``
    (``root``/``rotation``/``branch``/``import``), active ``generation`` (bumped by each
    in-place compaction or rewind), ``length`` (messages in it), ``ended`` and the
    free-form ``meta`` dict given at creation."""

    id: str
    parent_session_id: str | None
    kind: str
    generation: int
    length: int
    ended: bool
    meta: dict[str, Any] = field(default_factory=dict)


class SessionStore(Protocol):
    """What the host needs from a store; :mod:`simulator.store.memory` is the simplest."""

    def create_session(self, parent_id: str | None = None, **meta: Any) -> str:
        """Create a session and return its id."""

    def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Persist new messages at the end; stamp ``message_uid`` on each dict in place."""

    def replace(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        """Replace the session's message list (compaction commit); uids are kept (U3, U6)."""

    def load(self, session_id: str) -> list[dict[str, Any]]:
        """Return the session's messages as fresh dicts, uids included (U2)."""


class FullSessionStore(SessionStore, Protocol):
    """:class:`SessionStore` plus the copy paths (U3), rewrites (U4) and restore repair (U5)."""

    def load(  # type: ignore[override]
        self, session_id: str, *, repair_alternation: bool = False, with_row_ids: bool = False
    ) -> list[dict[str, Any]]:
        """Restore messages (U2); ``repair_alternation=True`` merges with uid witnesses (U5)."""

    def rewrite(self, session_id: str, index: int, message: dict[str, Any]) -> None:
        """Rewrite the row at ``index`` keeping its ``message_uid`` (U4)."""

    def rotate(self, session_id: str, messages: list[dict[str, Any]], **meta: Any) -> str:
        """End the session; return a child session holding ``messages`` (U3, U6)."""

    def branch(self, session_id: str, upto: int | None = None, **meta: Any) -> str:
        """Return a child session copying the first ``upto`` rows with their uids (U3)."""

    def rewind(self, session_id: str, keep: int) -> None:
        """Keep the first ``keep`` rows, as copies keeping their uids (U3)."""

    def generations(self, session_id: str) -> list[list[dict[str, Any]]]:
        """Every generation's rows, oldest first; the last is the active one (U3: in-place
        compaction keeps the originals)."""

    def session_info(self, session_id: str) -> SessionInfo:
        """The session's :class:`SessionInfo`."""

    def end_session(self, session_id: str) -> None:
        """Mark the session ended."""
