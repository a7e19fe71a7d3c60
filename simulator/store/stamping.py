"""What every store does to messages at insert: uids minted in place, tool results paired.

One function, :func:`prepare_for_insert`, shared by :class:`~simulator.store.memory.MemoryStore`
and :class:`~simulator.store.sqlite.SQLiteStore`, so both carry out U1, U6, U8 and U10 alike.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from .identity import (
    ABSORBED_MESSAGE_UIDS,
    MESSAGE_UID,
    TOOL_CALL_UID,
    TOOL_CALL_UIDS,
    UidFactory,
    message_uid_or_none,
    new_uid,
    stamp_message_uid,
    validate_message,
)
from .toolcalls import pair_tool_results, stamp_tool_call_uids, tool_call_ids


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
    ctx: list[dict[str, Any]] = [dict(c) for c in context]
    pair_tool_results(ctx + list(batch), start=len(ctx))  # type: ignore[operator]


def prepare_rewrite(
    old: Mapping[str, Any],
    message: MutableMapping[str, Any],
    uid_factory: UidFactory = new_uid,
) -> None:
    """Carry the stored row ``old``'s identity onto its rewrite ``message``, in place (U4, U8).

    The row keeps its ``message_uid`` (replacing any other value in ``message``); its
    ``_absorbed_message_uids`` and ``_tool_call_uid`` unless ``message`` brings its own;
    its ``_tool_call_uids`` entries, plus those ``message`` brings; tool calls that the
    rewrite adds (e.g. the back-fill of an interrupted stream) get fresh uids, while calls
    the old row had without a uid stay without. Raises
    :class:`~simulator.store.identity.StoreInputError` for a malformed ``message``.
    """
    validate_message(message, where="rewrite message")
    if MESSAGE_UID in old:
        message[MESSAGE_UID] = old[MESSAGE_UID]
    for key in (ABSORBED_MESSAGE_UIDS, TOOL_CALL_UID):
        if key not in message and key in old:
            message[key] = copy.deepcopy(old[key])
    if message.get("role") == "assistant":
        merged = copy.deepcopy(old.get(TOOL_CALL_UIDS) or {})
        merged.update(message.get(TOOL_CALL_UIDS) or {})
        if merged:
            message[TOOL_CALL_UIDS] = merged
        added = set(tool_call_ids(message)) - set(tool_call_ids(old))
        stamp_tool_call_uids(message, uid_factory, only=added)


__all__ = ["prepare_for_insert", "prepare_rewrite"]
