"""Tool-call identity: ``_tool_call_uids`` on assistant rows, ``_tool_call_uid`` on results (U8).

Provider ids (``tool_calls[i]["id"]``) repeat: models reuse them and a merge can put the
calls of two turns into one message. So each assistant row maps every provider id to a
uid (``{tool_call_id: uid}``); calls repeating an id inside one response share that uid;
after a merge leaves occurrences from different turns in one message the value is a
list of uids, one per occurrence, in ``tool_calls`` order. The provider id itself is
never changed.

Results are paired by walking the history forward: the nearest preceding call owns the
result, a later assistant naming the same id shadows the earlier one, results never
pair across a user turn, and a call stored without a uid map pairs with nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, MutableMapping, Sequence
from typing import Any

from .identity import TOOL_CALL_UID, TOOL_CALL_UIDS, UidFactory, new_uid

#: A ``_tool_call_uids`` value: one uid, or one uid per occurrence of the id.
UidValue = str | list[str]


def tool_call_ids(message: Mapping[str, Any]) -> list[str]:
    """The provider ids of ``message['tool_calls']`` in order (``[]`` when there are none)."""
    calls = message.get("tool_calls") or []
    return [c.get("id") for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]


def stamp_tool_call_uids(
    message: MutableMapping[str, Any],
    uid_factory: UidFactory = new_uid,
    *,
    only: Collection[str] | None = None,
) -> None:
    """Mint, in place, a uid for every tool_call id the assistant row's map lacks (U8).

    Calls that repeat an id inside this one response share one uid. Existing entries
    (copied rows, merged rows) are kept untouched. ``only`` restricts minting to those
    ids (a rewrite mints for calls it adds, not for legacy calls stored without uids).
    No-op for rows without tool_calls.
    """
    ids = tool_call_ids(message)
    if not ids:
        return
    current = message.get(TOOL_CALL_UIDS)
    mapping: dict[str, UidValue] = dict(current) if isinstance(current, dict) else {}
    changed = False
    for call_id in ids:
        if call_id not in mapping and (only is None or call_id in only):
            mapping[call_id] = uid_factory()
            changed = True
    if changed:
        message[TOOL_CALL_UIDS] = mapping


def occurrence_uids(message: Mapping[str, Any]) -> list[str | None]:
    """One entry per tool call of ``message`` in order: the uid owning that occurrence, or None.

    A str value owns every occurrence of its id; a list value gives its k-th item to the
    k-th occurrence (None once exhausted); a missing map or id gives None.
    """
    mapping = message.get(TOOL_CALL_UIDS)
    mapping = mapping if isinstance(mapping, dict) else {}
    seen: dict[str, int] = {}
    out: list[str | None] = []
    for call_id in tool_call_ids(message):
        k = seen.get(call_id, 0)
        seen[call_id] = k + 1
        out.append(_nth(mapping.get(call_id), k))
    return out


def build_tool_call_uids(
    tool_calls: Sequence[Mapping[str, Any]], uids: Sequence[str | None]
) -> dict[str, UidValue]:
    """Build a ``_tool_call_uids`` map from calls and their per-occurrence uids (U8).

    An id whose occurrences all share one uid maps to that str; an id whose occurrences
    carry different uids maps to the list of them in ``tool_calls`` order. An id with any
    occurrence lacking a uid is left out (such calls "pair with nothing").
    """
    per_id: dict[str, list[str | None]] = {}
    for call, uid in zip(tool_calls, uids, strict=False):
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if isinstance(call_id, str):
            per_id.setdefault(call_id, []).append(uid)
    out: dict[str, UidValue] = {}
    for call_id, values in per_id.items():
        if any(v is None for v in values):
            continue
        out[call_id] = values[0] if len(set(values)) == 1 else list(values)  # type: ignore[arg-type]
    return out


class ToolCallPairing:
    """Forward walker that says which tool-call uid owns each tool result (U8).

    Feed it messages in order with :meth:`feed`; it returns the uid for a tool result (or
    None) and None for other roles.
    """

    def __init__(self) -> None:
        self._owners: dict[str, UidValue | None] = {}
        self._consumed: dict[str, int] = {}

    def feed(self, message: Mapping[str, Any]) -> str | None:
        """Advance over ``message``; for a tool result, return the uid it pairs with."""
        role = message.get("role")
        if role == "user":
            self._owners.clear()
            self._consumed.clear()
            return None
        if role == "assistant":
            calls = message.get("tool_calls") or []
            mapping = message.get(TOOL_CALL_UIDS)
            mapping = mapping if isinstance(mapping, dict) else {}
            for call in calls:
                if not isinstance(call, dict):
                    continue
                for key in ("id", "call_id"):
                    pid = call.get(key)
                    if isinstance(pid, str):
                        # Shadow any earlier call with this id; a legacy call owns with None.
                        self._owners[pid] = mapping.get(call.get("id"))
                        self._consumed[pid] = 0
            return None
        if role == "tool":
            pid = message.get("tool_call_id")
            if not isinstance(pid, str) or pid not in self._owners:
                return None
            k = self._consumed.get(pid, 0)
            self._consumed[pid] = k + 1
            return _nth(self._owners[pid], k)
        return None


def pair_tool_results(
    messages: Sequence[MutableMapping[str, Any]],
    *,
    start: int = 0,
    overwrite: bool = False,
) -> int:
    """Stamp ``_tool_call_uid`` in place on tool results at index >= ``start`` (U8).

    ``messages[:start]`` is context only (e.g. the stored tail before a flush batch).
    Results already carrying a uid keep it unless ``overwrite``. Returns how many
    results were stamped.
    """
    pairing = ToolCallPairing()
    stamped = 0
    for i, m in enumerate(messages):
        uid = pairing.feed(m)
        if i < start or m.get("role") != "tool":
            continue
        if uid is not None and (overwrite or not isinstance(m.get(TOOL_CALL_UID), str)):
            m[TOOL_CALL_UID] = uid
            stamped += 1
    return stamped


def _nth(value: UidValue | None, k: int) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return value[k] if k < len(value) else None
    return None


__all__ = [
    "UidValue",
    "tool_call_ids",
    "stamp_tool_call_uids",
    "occurrence_uids",
    "build_tool_call_uids",
    "ToolCallPairing",
    "pair_tool_results",
]
