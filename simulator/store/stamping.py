"""What every store does to messages at insert: uids minted in place, tool results paired.

One function, :func:`prepare_for_insert`, shared by :class:`~simulator.store.memory.MemoryStore`
and :class:`~simulator.store.sqlite.SQLiteStore`, so both carry out U1, U6, U8 and U10 alike.
"""

from __future__ import annotations

from typing import Any, Dict, List, MutableMapping, Sequence

from .identity import UidFactory, message_uid_or_none, new_uid, stamp_message_uid, validate_message
from .toolcalls import pair_tool_results, stamp_tool_call_uids


def prepare_for_insert(
    batch: Sequence[MutableMapping[str, Any]],
    context: Sequence[MutableMapping[str, Any]] = (),
    uid_factory: UidFactory = new_uid,
) -> None:
    """Validate and stamp ``batch`` in place before its rows are inserted.

    - Every dict without a usable ``message_uid`` gets a fresh one; existing uids
      (copies, engine-stamped rows) are kept (U1, U3, U6). The caller's dict object is
      the one stamped (U10).
    - Every assistant row inserted for the first time (it had no uid) gets a uid for
      each provider id of its tool_calls; duplicates inside the row share one (U8). A copy
      of a known message (it has a uid) keeps its map as it is: a legacy call stored
      without tool-call uids stays without, and its results pair with nothing.
    - Every tool result lacking ``_tool_call_uid`` is paired with the nearest preceding
      call, looking through ``context`` (the stored rows just before the batch, from the
      last user or assistant row on) and the batch itself (U8).
    Raises :class:`~simulator.store.identity.StoreInputError` for a malformed message,
    before anything is stamped.
    """
    for i, m in enumerate(batch):
        validate_message(m, where=f"message {i} of the batch")
    for m in batch:
        first_insert = message_uid_or_none(m) is None
        stamp_message_uid(m, uid_factory)
        if first_insert and m.get("role") == "assistant":
            stamp_tool_call_uids(m, uid_factory)
    ctx: List[Dict[str, Any]] = [dict(c) for c in context]
    pair_tool_results(ctx + list(batch), start=len(ctx))  # type: ignore[operator]


__all__ = ["prepare_for_insert"]
