"""Merges that fold one message into another, with the uid witness (U5), and alternation repair.

:func:`repair_message_sequence` follows Hermes' ``repair_message_sequence``,
with Hermes MAIN's witness recording: a survivor keeps the uid of the part whose text
comes first and lists the others in ``_absorbed_message_uids`` in text order. Rows that
are dropped rather than folded in (stray or duplicate tool results, a superseded
verification candidate, the content of a multimodal assistant row that cannot be
joined) are not recorded.

It is used in three places: the host's per-request sanitizer (on a copy), the store's
restore with ``repair_alternation=True``, and any host path that persists a merged row.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from .identity import TOOL_CALL_UIDS, record_absorbed_message
from .toolcalls import build_tool_call_uids, occurrence_uids

#: finish_reason values marking a verification candidate that a later row replaces.
VERIFICATION_FINISH_REASONS = frozenset({"verification_required", "verify_hook_continue"})

Message = MutableMapping[str, Any]


def fold_into(
    survivor: Message,
    dropped: Message,
    *,
    separator: str = "\n\n",
    dropped_leads: bool = False,
) -> None:
    """Fold ``dropped``'s string content into ``survivor`` in place and record its uid (U5).

    The text of ``survivor`` comes first unless ``dropped_leads`` (then the dropped text
    comes first, and its uid becomes the survivor's, e.g. the real user anchor folded
    into a scaffolding turn, or a summary carrier restating the in-flight task after it).
    Raises :class:`TypeError` if either content is not a str (multimodal content is never
    joined; drop the row instead, which records nothing).
    """
    a, b = survivor.get("content"), dropped.get("content")
    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError(
            "fold_into joins string contents only; got "
            f"{type(a).__name__} and {type(b).__name__} (multimodal rows are never joined)"
        )
    survivor["content"] = separator.join([b, a] if dropped_leads else [a, b])
    record_absorbed_message(survivor, dropped, dropped_leads=dropped_leads)


def merge_assistant_rows(earlier: Message, later: Message) -> bool:
    """Merge ``later`` into ``earlier`` in place (Pass 0 of the alternation repair).

    Tool calls are unioned in order and their uids follow their occurrences (a list of
    uids where one id now occurs for two turns, U8). String contents are stripped and
    joined with "\\n" and the later uid is recorded (U5); if either content is a list
    (multimodal) the earlier content is kept and nothing is recorded, because the later
    text was discarded, not folded in. ``reasoning_content`` is carried over only if the
    earlier row lacks it. Returns True when the later uid was recorded.
    """
    calls_a = list(earlier.get("tool_calls") or [])
    calls_b = list(later.get("tool_calls") or [])
    if calls_b:
        uids = occurrence_uids(earlier) + occurrence_uids(later)
        merged_calls = calls_a + calls_b
        earlier["tool_calls"] = merged_calls
        mapping = build_tool_call_uids(merged_calls, uids)
        if mapping:
            earlier[TOOL_CALL_UIDS] = mapping
        else:
            earlier.pop(TOOL_CALL_UIDS, None)
    if not earlier.get("reasoning_content") and later.get("reasoning_content"):
        earlier["reasoning_content"] = later["reasoning_content"]
    a, b = earlier.get("content"), later.get("content")
    if isinstance(a, list) or isinstance(b, list):
        return False
    parts = [t.strip() for t in (a, b) if isinstance(t, str) and t.strip()]
    earlier["content"] = "\n".join(parts) if parts else (a if a is not None else b)
    record_absorbed_message(earlier, later)
    return True


def repair_message_sequence(messages: list[Message]) -> int:
    """Repair role alternation in place; return the number of repairs (U5).

    Pass 0 merges consecutive assistant rows (Codex interim rows exempt; a verification
    candidate is replaced by the later row). Pass 1 drops tool results that answer none
    of the calls of the most recent assistant, and results beyond the number of
    occurrences of their id in its tool_calls (each occurrence is answered once, so a
    response repeating an id keeps one result per occurrence; a user turn resets). Pass 2
    merges consecutive user rows with string content using "\\n\\n" and drops their stale
    ``api_content``.
    Mutates ``messages`` and the surviving dicts: pass copies to keep the originals.
    """
    repairs = 0
    # Pass 0: consecutive assistants.
    out: list[Message] = []
    for m in messages:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.get("role") == "assistant"
            and m.get("role") == "assistant"
            and not _codex_interim(prev)
            and not _codex_interim(m)
        ):
            repairs += 1
            if prev.get("finish_reason") in VERIFICATION_FINISH_REASONS:
                out[-1] = m  # superseded candidate: dropped, not recorded
            else:
                merge_assistant_rows(prev, m)
            continue
        out.append(m)
    # Pass 1: stray and duplicate tool results.
    kept: list[Message] = []
    open_calls: dict[str, int] = {}  # provider id -> results still expected
    for m in out:
        role = m.get("role")
        if role == "user":
            open_calls = {}
        elif role == "assistant":
            open_calls = {}
            for call in m.get("tool_calls") or []:
                if isinstance(call, dict):
                    for key in ("id", "call_id"):
                        if isinstance(call.get(key), str):
                            open_calls[call[key]] = open_calls.get(call[key], 0) + 1
        elif role == "tool":
            pid = m.get("tool_call_id")
            if open_calls.get(pid, 0) <= 0:
                repairs += 1
                continue
            open_calls[pid] -= 1
        kept.append(m)
    # Pass 2: consecutive users with string content.
    final: list[Message] = []
    for m in kept:
        prev = final[-1] if final else None
        if (
            prev is not None
            and prev.get("role") == "user"
            and m.get("role") == "user"
            and isinstance(prev.get("content"), str)
            and isinstance(m.get("content"), str)
        ):
            fold_into(prev, m, separator="\n\n")
            prev.pop("api_content", None)
            repairs += 1
            continue
        final.append(m)
    messages[:] = final
    return repairs


def _codex_interim(m: Message) -> bool:
    return bool(
        m.get("codex_reasoning_items")
        or m.get("codex_message_items")
        or m.get("finish_reason") == "incomplete"
    )


__all__ = [
    "VERIFICATION_FINISH_REASONS",
    "fold_into",
    "merge_assistant_rows",
    "repair_message_sequence",
]
