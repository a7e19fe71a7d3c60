"""Session stores behind one small interface (:class:`simulator.store.base.SessionStore`).

- :class:`~simulator.store.sqlite.SQLiteStore`: the embedded default (stdlib sqlite3, WAL).
- :class:`~simulator.store.memory.MemoryStore`: the same uid behaviour in memory.
- Pure helpers the host pipeline uses: :func:`~simulator.store.wire.strip_persistence_fields`
  (U9), :func:`~simulator.store.merge.repair_message_sequence` (U5),
  :mod:`~simulator.store.identity` (U1, U5, U6), :mod:`~simulator.store.toolcalls` (U8),
  :mod:`~simulator.store.transfer` (JSONL export/import, U3).
"""

from .base import FullSessionStore, SessionInfo, SessionStore, UnknownSession
from .identity import StoreInputError, new_uid
from .memory import MemoryStore
from .merge import fold_into, repair_message_sequence
from .sqlite import SQLiteStore
from .transfer import export_jsonl, import_jsonl
from .wire import PERSISTENCE_ONLY_MESSAGE_FIELDS, strip_persistence_fields

__all__ = [
    "FullSessionStore",
    "SessionInfo",
    "SessionStore",
    "UnknownSession",
    "StoreInputError",
    "new_uid",
    "MemoryStore",
    "SQLiteStore",
    "fold_into",
    "repair_message_sequence",
    "export_jsonl",
    "import_jsonl",
    "PERSISTENCE_ONLY_MESSAGE_FIELDS",
    "strip_persistence_fields",
]
