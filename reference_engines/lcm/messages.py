"""Message helpers for the LCM engine: identity keys, versions, text, tool pairing, tokens.

Everything here is a pure function of OpenAI-format message dicts (``role``, ``content``,
``tool_calls``, ``tool_call_id``) plus the persistence-only identity fields of contract
section U (``message_uid``, ``_absorbed_message_uids``, ``_tool_call_uids``,
``_tool_call_uid``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MESSAGE_UID = "message_uid"
ABSORBED_MESSAGE_UIDS = "_absorbed_message_uids"

#: Fields that are identity/persistence metadata, never part of a message's version (U4, U9).
IDENTITY_FIELDS = frozenset(
    {"message_uid", "_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid", "_row_id"}
)

#: Prefix of the key under which a message without ``message_uid`` is stored (U2, U10).
ANON_KEY_PREFIX = "anon:"


def uid_of(message: Mapping[str, Any]) -> str | None:
    """The message's ``message_uid`` if it is a non-empty string, else None (U1, U2).

    A missing, blank or non-string uid means "no identity yet", never an error (U2, U10).
    """
    uid = message.get(MESSAGE_UID) if isinstance(message, Mapping) else None
    return uid if isinstance(uid, str) and uid else None


def absorbed_of(message: Mapping[str, Any]) -> list[str]:
    """The uids folded into ``message`` by a merge, in text order (U5); [] when none.

    Non-string or blank entries are ignored rather than raising.
    """
    raw = message.get(ABSORBED_MESSAGE_UIDS) if isinstance(message, Mapping) else None
    if not isinstance(raw, (list, tuple)):
        return []
    return [u for u in raw if isinstance(u, str) and u]


def identities_of(message: Mapping[str, Any]) -> list[str]:
    """``message_uid`` followed by the absorbed uids: every logical message this row carries."""
    uid = uid_of(message)
    return ([uid] if uid else []) + absorbed_of(message)


def canonical_json(value: Any) -> str:
    """Byte-stable JSON (sorted keys, no spaces, UTF-8 kept) used for hashing and storage."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def version_body(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message without identity fields: what a *version* of a logical message is (U4)."""
    return {k: v for k, v in message.items() if k not in IDENTITY_FIELDS}


def version_hash(message: Mapping[str, Any]) -> str:
    """sha256 (hex, 32 chars) of the canonical version body; equal content → equal hash (U4)."""
    return hashlib.sha256(canonical_json(version_body(message)).encode("utf-8")).hexdigest()[:32]


def message_key(message: Mapping[str, Any], vhash: str | None = None) -> str:
    """Storage key of a logical message: its uid, or ``anon:<version hash>`` without one (U2)."""
    uid = uid_of(message)
    if uid:
        return uid
    return ANON_KEY_PREFIX + (vhash or version_hash(message))


def content_text(content: Any) -> str:
    """Plain text of a ``content`` value: a string, a list of parts (text parts joined), or None."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, Mapping):
                if part.get("type") == "text":
                    out.append(str(part.get("text") or ""))
                elif "text" in part:
                    out.append(str(part.get("text") or ""))
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    return str(content)


def searchable_text(message: Mapping[str, Any]) -> str:
    """Text that ``lcm_grep`` searches and summaries read: content plus tool call names/args."""
    parts = [content_text(message.get("content"))]
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping):
            fn = call.get("function") or {}
            if isinstance(fn, Mapping):
                parts.append(f"{fn.get('name') or ''}({fn.get('arguments') or ''})")
    return "\n".join(p for p in parts if p)


def transcript_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """``role: text`` paragraphs of ``messages``, the input of a leaf summary."""
    lines = []
    for m in messages:
        role = m.get("role") or "?"
        text = searchable_text(m)
        if role == "tool":
            lines.append(f"tool result: {text}")
        else:
            lines.append(f"{role}: {text}")
    return "\n\n".join(lines)


def call_ids(message: Mapping[str, Any]) -> list[str]:
    """Provider ids of an assistant message's ``tool_calls`` (empty for other roles)."""
    if message.get("role") != "assistant":
        return []
    out = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            out.append(call["id"])
    return out


def pair_safe_start(messages: Sequence[Mapping[str, Any]], index: int, lower: int) -> int:
    """A cut index at or before ``index`` (not below ``lower``) that splits no tool pair (V2).

    A cut before a ``tool`` message would orphan it from its call, so the cut moves back
    over tool results to their assistant ``tool_calls`` message. Returns ``lower`` when no
    earlier safe cut exists.
    """
    i = index
    while i > lower and i < len(messages) and messages[i].get("role") == "tool":
        i -= 1
    return max(i, lower)


def pair_safe_end(messages: Sequence[Mapping[str, Any]], index: int) -> int:
    """A cut index at or after ``index`` that splits no tool pair (V2): skips tool results."""
    i = index
    while i < len(messages) and messages[i].get("role") == "tool":
        i += 1
    return i


def carrier_role(prev_role: str | None, next_role: str | None) -> str:
    """Role for the summary carrier so that no two same roles touch, when possible (B5, V1).

    Tries ``user`` then ``assistant``; a system or missing neighbour constrains nothing.
    When both roles clash (``user`` before, ``assistant`` after), ``user`` is used only if the
    previous message is not a user message, else ``assistant``; the host's alternation
    repair may then merge it (U5), which the engine follows.
    """

    def clashes(role: str) -> bool:
        return role == prev_role or role == next_role

    for role in ("user", "assistant"):
        if not clashes(role):
            return role
    return "assistant" if prev_role == "user" else "user"


def _fallback_count(message: Mapping[str, Any]) -> int:
    return 3 + (len(searchable_text(message)) + 3) // 4


try:  # the reference engines' offline cl100k counter; the folder installed on its own (a
    # Hermes plugin outside the reference_engines package) counts ~4 characters per token.
    from reference_engines.tokens import count_message as _count_message
except Exception:  # pragma: no cover - exercised only outside the reference_engines package
    _count_message = None


def count_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one message (cl100k via :mod:`reference_engines.tokens` when importable, else
    ~4 characters per token)."""
    if _count_message is not None:
        try:
            return int(_count_message(message))
        except Exception:
            return _fallback_count(message)
    return _fallback_count(message)
