"""Message identity fields and the pure operations on them (U1, U4, U5, U6).

A message is an OpenAI-format dict. Identity lives in four persistence-only keys:

- ``message_uid`` (str, 32 lowercase hex, ``uuid4().hex``): the logical message (U1).
- ``_absorbed_message_uids`` (list of str): uids folded into this row by a merge, in
  text order (U5).
- ``_tool_call_uids`` (dict ``{tool_call_id: uid | [uid, ...]}``) on assistant rows (U8).
- ``_tool_call_uid`` (str) on tool results (U8).

Everything here works on plain dicts, in place where the docstring says so, so both
stores (:mod:`simulator.store.memory`, :mod:`simulator.store.sqlite`) and the host share one
implementation.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

MESSAGE_UID = "message_uid"
ABSORBED_MESSAGE_UIDS = "_absorbed_message_uids"
TOOL_CALL_UIDS = "_tool_call_uids"
TOOL_CALL_UID = "_tool_call_uid"

#: The four identity fields (U9 lists them as persistence-only).
IDENTITY_FIELDS = (MESSAGE_UID, ABSORBED_MESSAGE_UIDS, TOOL_CALL_UIDS, TOOL_CALL_UID)

#: Roles a stored message may carry (V1).
ROLES = frozenset({"system", "user", "assistant", "tool"})

_UID_RE = re.compile(r"^[0-9a-f]{32}$")

#: A callable returning a fresh uid string; stores accept one so tests can be deterministic.
UidFactory = Callable[[], str]


class StoreInputError(ValueError):
    """A message or identity field handed to a store has the wrong shape.

    The message says which field was wrong, what was seen, and what to pass instead.
    """


def new_uid() -> str:
    """Return a fresh ``message_uid``: ``uuid4().hex``, 32 lowercase hex characters (U1)."""
    return uuid.uuid4().hex


def is_uid(value: Any) -> bool:
    """True when ``value`` is a minted-format uid: a str of 32 lowercase hex chars (U1)."""
    return isinstance(value, str) and bool(_UID_RE.match(value))


def message_uid_or_none(message: Mapping[str, Any]) -> str | None:
    """The message's uid if it is a non-empty, non-blank ``str``; else None (U2).

    Never coerces: an int or a blank string means "no identity yet". Engine-stamped
    uids (U6) need not be hex; any non-empty str is kept as given.
    """
    value = message.get(MESSAGE_UID)
    if isinstance(value, str) and value.strip():
        return value
    return None


def stamp_message_uid(message: MutableMapping[str, Any], uid_factory: UidFactory = new_uid) -> str:
    """Give ``message`` a uid in place if it has none, and return its uid (U1, U10).

    The uid is written into the caller's dict, so a later insert of the same dict reuses
    it. Never derived from content, timestamps or tool ids.
    """
    uid = message_uid_or_none(message)
    if uid is None:
        uid = uid_factory()
        message[MESSAGE_UID] = uid
    return uid


def copy_identity_fields(source: Mapping[str, Any], target: MutableMapping[str, Any]) -> None:
    """Copy the identity fields of ``source`` that are present and well formed onto ``target``.

    Used by copy paths (U3) that rebuild a dict rather than copying it.
    """
    uid = message_uid_or_none(source)
    if uid is not None:
        target[MESSAGE_UID] = uid
    absorbed = source.get(ABSORBED_MESSAGE_UIDS)
    if isinstance(absorbed, list) and absorbed and all(_nonempty_str(u) for u in absorbed):
        target[ABSORBED_MESSAGE_UIDS] = list(absorbed)
    tc_uids = source.get(TOOL_CALL_UIDS)
    if isinstance(tc_uids, dict) and tc_uids:
        target[TOOL_CALL_UIDS] = {
            k: (list(v) if isinstance(v, list) else v) for k, v in tc_uids.items()
        }
    tc_uid = source.get(TOOL_CALL_UID)
    if _nonempty_str(tc_uid):
        target[TOOL_CALL_UID] = tc_uid


def record_absorbed_message(
    survivor: MutableMapping[str, Any],
    dropped: Mapping[str, Any],
    *,
    dropped_leads: bool = False,
) -> None:
    """Record in place that ``dropped`` was folded into ``survivor`` (U5).

    Default (survivor's text comes first): ``_absorbed_message_uids`` becomes the
    survivor's list, then the dropped uid, then the dropped dict's own absorbed list.
    With ``dropped_leads=True`` (the dropped text comes first) the dropped uid becomes the
    survivor's uid, and the survivor's former uid follows the dropped dict's absorbed list.
    De-duplicated, never contains the survivor's own uid; dicts without a uid contribute
    nothing (a leading part without a uid leaves the survivor without one, to be minted at
    insert); an empty result leaves the survivor without the key.
    """
    s_uid = message_uid_or_none(survivor)
    d_uid = message_uid_or_none(dropped)
    s_abs = _absorbed(survivor)
    d_abs = _absorbed(dropped)
    if dropped_leads:
        leader = d_uid
        ordered = d_abs + ([s_uid] if s_uid else []) + s_abs
    else:
        leader = s_uid
        ordered = s_abs + ([d_uid] if d_uid else []) + d_abs
    if leader is not None:
        survivor[MESSAGE_UID] = leader
    else:
        # The leading part has no identity yet: it gets a fresh uid at insert (U1); the
        # others are still recorded.
        survivor.pop(MESSAGE_UID, None)
    result: list[str] = []
    for uid in ordered:
        if uid != leader and uid not in result:
            result.append(uid)
    if result:
        survivor[ABSORBED_MESSAGE_UIDS] = result
    else:
        survivor.pop(ABSORBED_MESSAGE_UIDS, None)


def validate_message(message: Any, where: str = "message") -> None:
    """Raise :class:`StoreInputError` unless ``message`` can be stored.

    Checks: a dict; ``role`` in system/user/assistant/tool; identity fields of the right
    shape when present (``_absorbed_message_uids`` a list of non-empty str;
    ``_tool_call_uids`` a dict of non-empty str keys to a non-empty str or non-empty list
    of non-empty str; ``_tool_call_uid`` a non-empty str). ``message_uid`` of another type
    is not an error: it means "no identity yet" and gets replaced at insert (U2).
    """
    if not isinstance(message, dict):
        raise StoreInputError(
            f"{where}: expected an OpenAI-format message dict, got {type(message).__name__}; "
            "pass {'role': ..., 'content': ...}"
        )
    role = message.get("role")
    if role not in ROLES:
        raise StoreInputError(
            f"{where}: role {role!r} is not one of {sorted(ROLES)}; set 'role' to one of them"
        )
    absorbed = message.get(ABSORBED_MESSAGE_UIDS)
    if absorbed is not None and not (
        isinstance(absorbed, list) and all(_nonempty_str(u) for u in absorbed)
    ):
        raise StoreInputError(
            f"{where}: {ABSORBED_MESSAGE_UIDS} must be a list of non-empty uid strings, "
            f"got {absorbed!r}; drop the key or pass e.g. ['<uid>', ...]"
        )
    tc_uids = message.get(TOOL_CALL_UIDS)
    if tc_uids is not None:
        ok = isinstance(tc_uids, dict) and all(
            _nonempty_str(k)
            and (
                _nonempty_str(v) or (isinstance(v, list) and v and all(_nonempty_str(x) for x in v))
            )
            for k, v in tc_uids.items()
        )
        if not ok:
            raise StoreInputError(
                f"{where}: {TOOL_CALL_UIDS} must map each tool_call id to a uid string or a "
                f"non-empty list of uid strings, got {tc_uids!r}"
            )
    tc_uid = message.get(TOOL_CALL_UID)
    if tc_uid is not None and not _nonempty_str(tc_uid):
        raise StoreInputError(
            f"{where}: {TOOL_CALL_UID} must be a non-empty uid string, got {tc_uid!r}; drop the key"
        )


def _absorbed(message: Mapping[str, Any]) -> list[str]:
    value = message.get(ABSORBED_MESSAGE_UIDS)
    if isinstance(value, list):
        return [u for u in value if _nonempty_str(u)]
    return []


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


__all__ = [
    "MESSAGE_UID",
    "ABSORBED_MESSAGE_UIDS",
    "TOOL_CALL_UIDS",
    "TOOL_CALL_UID",
    "IDENTITY_FIELDS",
    "ROLES",
    "StoreInputError",
    "UidFactory",
    "new_uid",
    "is_uid",
    "message_uid_or_none",
    "stamp_message_uid",
    "copy_identity_fields",
    "record_absorbed_message",
    "validate_message",
]
