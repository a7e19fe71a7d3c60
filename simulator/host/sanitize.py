"""Request sanitizers (stage 3 of the pipeline, H4): tool-pair repair, alternation repair, U9.

Each sanitizer is copy-on-write: it never mutates its input list or the dicts in it (a
select_context replacement may be an object the engine keeps, H6), and returns the
same list object when it changed nothing. Behaviour follows Hermes'
``repair_message_sequence``:

- :func:`repair_tool_pairs`: a ``tool`` result whose ``tool_call_id`` no preceding
  assistant call (since the last user message) names, or whose id was already answered,
  is dropped; an assistant call left without a result gets a stub result right after the
  call's results, so the provider never sees an orphan either way (V2).
- :func:`repair_alternation`: consecutive assistant rows merge (tool_calls unioned in
  order, string contents joined with "\\n"); consecutive user rows with string content
  merge with "\\n\\n" (multimodal rows are never merged).
- :func:`strip_persistence_fields`: U9 fields (``message_uid``, ``_absorbed_message_uids``,
  ``_tool_call_uids``, ``_tool_call_uid``) and, with ``strip_underscore=True``, every
  top-level key starting with ``_`` (Hermes' wire rule) never reach the wire.
"""

from __future__ import annotations

import logging
from typing import Any

from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS

log = logging.getLogger("simulator.host")

#: Content of the stub result the host adds for an assistant call that has none (V2).
MISSING_TOOL_RESULT = "[No tool output recorded for this call]"

Message = dict[str, Any]


def _call_ids(message: Message) -> list[str]:
    ids = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and call.get("id"):
            ids.append(str(call["id"]))
    return ids


def repair_tool_pairs(messages: list[Message]) -> list[Message]:
    """V2 on the wire: drop orphan/duplicate tool results, stub missing ones.

    Args:
        messages: the request messages (not mutated).
    Returns:
        The same list when nothing changed, else a new list (tokens are not counted here).
    """
    out: list[Message] = []
    pending: list[str] = []  # ids of the latest assistant's calls still unanswered, in order
    known: set = set()
    changed = False

    def flush_pending() -> None:
        nonlocal changed
        for cid in pending:
            out.append({"role": "tool", "tool_call_id": cid, "content": MISSING_TOOL_RESULT})
            changed = True
        pending.clear()

    for m in messages:
        role = m.get("role") if isinstance(m, dict) else None
        if role == "tool":
            cid = str(m.get("tool_call_id") or "")
            if cid in known and cid in pending:
                pending.remove(cid)
                out.append(m)
            else:
                changed = True  # stray or duplicate result: dropped
            continue
        flush_pending()
        if role == "user":
            known = set()
        if role == "assistant":
            ids = _call_ids(m)
            known = set(ids)
            pending = list(
                ids
            )  # per occurrence: a repeated id is owed one result each (seeds U8, V2)
        out.append(m)
    flush_pending()
    if changed:
        log.info("Repaired orphaned tool call/result pairs before request")
        return out
    return messages


def _join(a: Any, b: Any, sep: str) -> Any:
    if isinstance(a, str) and isinstance(b, str):
        a, b = a.strip(), b.strip()
        return sep.join(x for x in (a, b) if x)
    if a in (None, ""):
        return b
    return a  # one side is a list: keep the existing content (Hermes)


def repair_alternation(messages: list[Message]) -> list[Message]:
    """Merge consecutive same-role user/assistant rows (Hermes' alternation repair).

    Returns the same list when nothing changed, else a new list whose merged rows are new
    dicts (the inputs are never mutated).
    """
    out: list[Message] = []
    repairs = 0
    for m in messages:
        prev = out[-1] if out else None
        role = m.get("role") if isinstance(m, dict) else None
        if prev is not None and role == prev.get("role") == "assistant":
            merged = dict(prev)
            calls = list(prev.get("tool_calls") or []) + list(m.get("tool_calls") or [])
            if calls:
                merged["tool_calls"] = calls
            merged["content"] = _join(prev.get("content"), m.get("content"), "\n")
            out[-1] = merged
            repairs += 1
            continue
        if (
            prev is not None
            and role == prev.get("role") == "user"
            and isinstance(m.get("content"), str)
            and isinstance(prev.get("content"), str)
        ):
            merged = dict(prev)
            merged["content"] = _join(prev["content"], m["content"], "\n\n")
            merged.pop("api_content", None)
            out[-1] = merged
            repairs += 1
            continue
        out.append(m)
    if repairs:
        log.info("Repaired %d message-alternation violations before request", repairs)
        return out
    return messages


def strip_persistence_fields(
    messages: list[Message], *, strip_underscore: bool = True
) -> list[Message]:
    """U9: copies without persistence-only fields (and ``_*`` keys when ``strip_underscore``).

    Rows that carry none of them are kept as the same dict objects.
    """
    out = []
    for m in messages:
        if isinstance(m, dict) and any(
            k in PERSISTENCE_ONLY_FIELDS or (strip_underscore and k.startswith("_")) for k in m
        ):
            m = {
                k: v
                for k, v in m.items()
                if k not in PERSISTENCE_ONLY_FIELDS and not (strip_underscore and k.startswith("_"))
            }
        out.append(m)
    return out


#: Reasoning keys only an assistant row may carry (docs/host.md, "One provider request").
REASONING_KEYS = frozenset(
    {
        "reasoning",
        "reasoning_content",
        "reasoning_details",
        "_reasoning_route",
        "anthropic_content_blocks",
    }
)


def strip_foreign_reasoning(messages: list[Message]) -> list[Message]:
    """Reasoning re-validation: non-assistant rows lose reasoning keys (an engine's
    replacement cannot smuggle reasoning onto a user/tool/system row). Copy-on-write."""
    out, changed = [], False
    for m in messages:
        if isinstance(m, dict) and m.get("role") != "assistant" and REASONING_KEYS.intersection(m):
            m = {k: v for k, v in m.items() if k not in REASONING_KEYS}
            changed = True
        out.append(m)
    return out if changed else messages


def sanitize(messages: list[Message], *, strip_underscore: bool = True) -> list[Message]:
    """Stage 3, in Hermes' order: reasoning re-validation, tool-pair repair, alternation
    repair, U9 stripping."""
    messages = strip_foreign_reasoning(messages)
    messages = repair_tool_pairs(messages)
    messages = repair_alternation(messages)
    return strip_persistence_fields(messages, strip_underscore=strip_underscore)
