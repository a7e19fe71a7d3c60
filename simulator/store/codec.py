"""Message dict <-> ``messages`` row, losslessly (U2: every identity field comes back).

Columns: ``role``; ``content`` (JSON of the value, NULL when the key is absent, so str,
list of parts and None all round-trip); ``tool_calls`` (JSON, NULL when absent);
``tool_call_id`` (when a str); ``extra`` (JSON object of every other key); and the four
identity columns ``message_uid``, ``absorbed_message_uids`` (JSON list),
``tool_call_uids`` (JSON object), ``tool_call_uid``. ``_row_id`` is the row's id, issued
per row, never stored as data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .identity import (
    ABSORBED_MESSAGE_UIDS,
    MESSAGE_UID,
    TOOL_CALL_UID,
    TOOL_CALL_UIDS,
    StoreInputError,
    message_uid_or_none,
)

ROW_ID = "_row_id"

#: Column order used by :func:`encode_message` and expected by :func:`decode_row`.
DATA_COLUMNS = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "extra",
    "message_uid",
    "absorbed_message_uids",
    "tool_call_uids",
    "tool_call_uid",
)

_SPECIAL = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        ROW_ID,
        MESSAGE_UID,
        ABSORBED_MESSAGE_UIDS,
        TOOL_CALL_UIDS,
        TOOL_CALL_UID,
    }
)


def _dumps(value: Any, field: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    except (TypeError, ValueError) as exc:
        raise StoreInputError(
            f"field {field!r} cannot be stored as JSON ({exc}); pass JSON-compatible values"
        ) from None


def encode_message(m: Mapping[str, Any]) -> tuple[Any, ...]:
    """Return the values of :data:`DATA_COLUMNS` for message ``m`` (already validated/stamped).

    Raises :class:`~simulator.store.identity.StoreInputError` if a value is not JSON-compatible.
    """
    content = _dumps(m["content"], "content") if "content" in m else None
    tool_calls = _dumps(m["tool_calls"], "tool_calls") if "tool_calls" in m else None
    tcid = m.get("tool_call_id")
    extra: dict[str, Any] = {k: v for k, v in m.items() if k not in _SPECIAL}
    if "tool_call_id" in m and not isinstance(tcid, str):
        extra["tool_call_id"] = tcid
    absorbed = m.get(ABSORBED_MESSAGE_UIDS)
    tc_uids = m.get(TOOL_CALL_UIDS)
    return (
        m["role"],
        content,
        tool_calls,
        tcid if isinstance(tcid, str) else None,
        _dumps(extra, "extra fields") if extra else None,
        message_uid_or_none(m),
        _dumps(absorbed, ABSORBED_MESSAGE_UIDS) if absorbed else None,
        _dumps(tc_uids, TOOL_CALL_UIDS) if tc_uids else None,
        m.get(TOOL_CALL_UID) or None,
    )


def decode_row(row: Sequence[Any], row_id: int | None = None) -> dict[str, Any]:
    """Rebuild a fresh message dict from :data:`DATA_COLUMNS` values (and ``_row_id`` if given)."""
    role, content, tool_calls, tcid, extra, uid, absorbed, tc_uids, tc_uid = row
    m: dict[str, Any] = {"role": role}
    if content is not None:
        m["content"] = json.loads(content)
    if tool_calls is not None:
        m["tool_calls"] = json.loads(tool_calls)
    if tcid is not None:
        m["tool_call_id"] = tcid
    if extra:
        m.update(json.loads(extra))
    if uid:
        m[MESSAGE_UID] = uid
    if absorbed:
        m[ABSORBED_MESSAGE_UIDS] = json.loads(absorbed)
    if tc_uids:
        m[TOOL_CALL_UIDS] = json.loads(tc_uids)
    if tc_uid:
        m[TOOL_CALL_UID] = tc_uid
    if row_id is not None:
        m[ROW_ID] = row_id
    return m


__all__ = ["ROW_ID", "DATA_COLUMNS", "encode_message", "decode_row"]
