"""U7 (store identity): an engine that keeps its own copy of the conversation, as LCM-style
plugins do, keyed by ``message_uid``.

Both engines keep a durable store (one per ``$HERMES_HOME``, shared by every instance, so
a restart sees what an earlier process stored) filled by ``on_turn_complete`` and expose the
kit's opt-in introspection hook ``conformance_stored_uids(session_id)``: the uid of every row
they hold for that session, one entry per stored row.

``UidKeyedStore`` (the correct twin) stores a row the first time its uid is seen; a replayed
transcript, the compacted output plus new turns, or a restart add each new uid once.
``PositionKeyedStore`` (the mutant, the hermes-lcm report) remembers how many rows it stored
and stores ``messages[count:]``: after the first compaction the transcript is shorter than
that count, so nothing new is stored again.
"""

from __future__ import annotations

import copy
import os
import threading
from typing import Any

from reference_engines.mutants._base import MinimalEngine

_LOCK = threading.Lock()
#: $HERMES_HOME -> session id -> stored rows, in order (the "database").
_STORES: dict[str, dict[str, list[dict[str, Any]]]] = {}


def _rows(session_id: str) -> list[dict[str, Any]]:
    home = os.environ.get("HERMES_HOME", "~/.hermes")
    return _STORES.setdefault(home, {}).setdefault(session_id, [])


class UidKeyedStore(MinimalEngine):
    """Correct twin: stores each logical message once, by message_uid (U7)."""

    def __init__(self) -> None:
        self.session_id = "default"

    @property
    def name(self) -> str:
        return "uid-store"

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id

    def store(self, messages: list[dict[str, Any]]) -> None:
        """Add the rows of ``messages`` the store does not hold yet (by uid)."""
        with _LOCK:
            rows = _rows(self.session_id)
            held = {r.get("message_uid") for r in rows}
            for m in messages:
                uid = m.get("message_uid") if isinstance(m, dict) else None
                if isinstance(uid, str) and uid and uid not in held:
                    rows.append(copy.deepcopy(m))
                    held.add(uid)

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self.store(messages)

    def conformance_stored_uids(self, session_id: str) -> list[str]:
        """The kit's store introspection hook (U7): one uid per row held for ``session_id``."""
        with _LOCK:
            return [str(r.get("message_uid")) for r in _rows(session_id)]


class PositionKeyedStore(UidKeyedStore):
    """Breaks U7 only: rows are stored by list position, so storing stops after a compaction."""

    mutant_of = "U7"

    def store(self, messages: list[dict[str, Any]]) -> None:
        with _LOCK:
            rows = _rows(self.session_id)
            rows.extend(copy.deepcopy(m) for m in messages[len(rows) :])  # the defect
