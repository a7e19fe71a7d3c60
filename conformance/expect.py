"""Assertion helpers and the one message grammar of the kit.

Every failure reads::

    [V2 MUST] compress() output: tool message at index 3 answers 'call_7', which no
    earlier assistant message calls (history of 14 messages). See docs/contract.md#v2.

:func:`fail` raises it as a :class:`~conformance.errors.ContractViolation` (which carries the
clause, the level and the offending example, for failure files); the session renders it and
appends ``Repro: <command>`` (:func:`conformance.errors.render`).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.errors import ContractViolation

MUST = "MUST"
SHOULD = "SHOULD"
ROLES = ("system", "user", "assistant", "tool")


HOST_PRACTICE = "host practice"
#: The case being run on this thread (set by the session), read by :func:`fail`.
CURRENT_CASE: contextvars.ContextVar = contextvars.ContextVar("conformance_case", default=None)


def fail(
    clause: str,
    level: str,
    what: str,
    *,
    expected: str,
    got: str,
    context: str = "",
    example: dict[str, Any] | None = None,
    host_practice: bool = False,
) -> None:
    """Raise a :class:`ContractViolation` in the kit's grammar: what, expected vs got, context.

    ``host_practice`` marks rules that come from Hermes' code rather than its docs: the
    message then says "(host practice)". A finding of the running case's own clause says so
    too when the case is registered with ``practice="host"``.
    """
    __tracebackhide__ = True
    case = CURRENT_CASE.get()
    if getattr(case, "practice", None) == "host" and getattr(case, "clause", None) == clause:
        host_practice = True
    if host_practice and HOST_PRACTICE not in context:
        context = f"{context}; host practice" if context else HOST_PRACTICE
    ctx = f" ({context})" if context else ""
    raise ContractViolation(clause, level, f"{what}: expected {expected}, got {got}{ctx}.", example)


#: Values larger than this (approximate bytes) are never copied, printed or serialised.
MAX_VALUE_BYTES = 32 * 1024 * 1024


def approx_size(value: Any, limit: int = MAX_VALUE_BYTES) -> int:
    """Approximate size in bytes of a JSON-like value, walking at most until ``limit`` is passed.

    Strings count their length, containers their items (plus 8 per slot); the walk stops
    as soon as the running total exceeds ``limit``, so a 256 MB value costs little.
    """
    total = 0
    stack = [value]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        if isinstance(v, (str, bytes, bytearray)):
            total += len(v)
        elif isinstance(v, Mapping):
            total += 8 * len(v)
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple, set, frozenset)):
            total += 8 * len(v)
            if total <= limit:
                stack.extend(v)
        else:
            total += 8
        if total > limit or seen > 2_000_000:
            return max(total, limit + 1)
    return total


def short(value: Any, limit: int = 160) -> str:
    """A bounded repr for messages: never prints more than ``limit`` characters, never
    serialises a huge value (checked with :func:`approx_size` first). JSON text, except that
    a tuple or set is named (``a tuple ({...})``), not shown as a JSON list."""
    if approx_size(value, 1_000_000) > 1_000_000:
        return f"<{type(value).__name__} of more than 1 MB>"
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except Exception:
        text = object.__repr__(value)
    if isinstance(
        value, (tuple, set, frozenset)
    ):  # json.dumps shows these as a list: say what they are
        text = (
            f"a {type(value).__name__} ({text[1:-1]})"
            if isinstance(value, tuple)
            else f"a {type(value).__name__} {text[1:-1]}"
        )
    if len(text) > limit:
        text = text[: limit - 20] + f"...<{len(text)} chars>"
    return text


def describe(message: Any) -> str:
    """One-line summary of a message for failure texts, e.g. ``<tool 'call_7' 12 chars>``."""
    if not isinstance(message, Mapping):
        return f"<{type(message).__name__}>"
    role = message.get("role")
    content = message.get("content")
    size = len(content) if isinstance(content, (str, list)) else 0
    extra = ""
    if message.get("tool_calls"):
        extra = " calls " + ",".join(
            str(c.get("id")) for c in message["tool_calls"] if isinstance(c, Mapping)
        )
    if role == "tool":
        extra = f" {message.get('tool_call_id')!r}"
    return f"<{role}{extra} {size}>"


# --- what a compaction removed (A4) ---------------------------------------------------


def row_key(m: Any) -> tuple:
    """What identifies a row across compress(): ``(role, text, tool-call ids)``; a tool result
    is ``("tool", tool_call_id)`` (a result whose output was cleared is still the same row)."""
    if not isinstance(m, dict):
        return ("?",)
    calls = tuple(str(c.get("id")) for c in m.get("tool_calls") or () if isinstance(c, dict))
    if m.get("role") == "tool":
        return ("tool", str(m.get("tool_call_id")))
    content = m.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return (m.get("role"), content if isinstance(content, str) else "", calls)


def removed_and_new(before: list[dict], after: list[dict]) -> tuple[int, list[int]]:
    """(how many non-system input rows are missing from ``after``, indexes of ``after`` rows
    that are no input row): what a compaction dropped and what it put in (A4)."""
    kept = {}
    for m in after:
        kept[row_key(m)] = kept.get(row_key(m), 0) + 1
    removed = 0
    for m in before:
        if isinstance(m, dict) and m.get("role") == "system":
            continue
        key = row_key(m)
        if kept.get(key):
            kept[key] -= 1
        else:
            removed += 1
    inputs = {row_key(m) for m in before}
    new = [
        i
        for i, m in enumerate(after)
        if row_key(m) not in inputs
        and not (i == 0 and isinstance(m, dict) and m.get("role") == "system")
    ]
    return removed, new


def declined(before: list[dict], after: Any) -> bool:
    """True when a compress() pass removed no input row (A4: it declined; returning the input
    list itself is the host's no-op signal, and a pass that only cleared old tool outputs
    dropped nothing either). Nothing to judge as a compaction."""
    return isinstance(after, list) and (after is before or removed_and_new(before, after)[0] == 0)


# --- V: validity of an OpenAI-format message sequence ---------------------------------


def v1_problems(messages: Any) -> list[str]:
    """V1: a list of dicts, each with a role in system/user/assistant/tool."""
    if not isinstance(messages, list):
        return [f"a list, got {type(messages).__name__}"]
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            out.append(f"item {i} is {type(m).__name__}, not a dict")
        elif m.get("role") not in ROLES:
            out.append(f"message {i} has role {short(m.get('role'), 40)}")
    return out


def v2_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """V2: every tool call answered once after it; every tool result answers a prior call.

    Pairing is per occurrence (seeds, U8): an id that occurs k times in one assistant
    message's ``tool_calls`` needs k results, and a later assistant message may reuse an
    id that was already answered.
    """
    out: list[str] = []
    outstanding: dict[
        str, list[int]
    ] = {}  # id -> indexes of assistant messages still owed a result
    answered: dict[str, int] = {}
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or ():
                cid = call.get("id") if isinstance(call, Mapping) else None
                if cid is not None:
                    outstanding.setdefault(cid, []).append(i)
        elif m.get("role") == "tool":
            cid = m.get("tool_call_id")
            if outstanding.get(cid):
                outstanding[cid].pop(0)
                answered[cid] = i
            elif cid in answered:
                out.append(
                    f"tool message at index {i} answers {cid!r} a "
                    f"second time (first at index {answered[cid]})"
                )
            else:
                out.append(
                    f"tool message at index {i} answers {cid!r}, "
                    "which no earlier assistant message calls"
                )
    for cid, owed in outstanding.items():
        for idx in owed:
            out.append(
                f"assistant message at index {idx} calls {cid!r}, which has no tool result after it"
            )
    return out


def v3_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """V3: content is a str, a list of parts, or None/absent only on an assistant with
    tool_calls."""
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        content = m.get("content")
        if isinstance(content, str):
            continue
        if isinstance(content, list):
            bad = [
                j
                for j, p in enumerate(content)
                if not (isinstance(p, Mapping) and isinstance(p.get("type"), str))
            ]
            if bad:
                out.append(
                    f"message {i} has content part {bad[0]} that is not a dict with a 'type'"
                )
            continue
        if content is None:
            if m.get("role") == "assistant" and m.get("tool_calls"):
                continue
            out.append(
                f"message {i} ({m.get('role')}) has content None/absent, "
                "allowed only on an assistant with tool_calls"
            )
            continue
        out.append(f"message {i} has content of type {type(content).__name__}")
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def v4_problems(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[str]:
    """V4: if ``before`` starts with a system prompt, ``after`` starts with it too (a note may be
    appended)."""
    if not before or not isinstance(before[0], Mapping) or before[0].get("role") != "system":
        return []
    if not after or not isinstance(after[0], Mapping) or after[0].get("role") != "system":
        first = describe(after[0]) if after else "an empty list"
        return [f"message 0 is {first}, not the system prompt"]
    original = _text(before[0].get("content"))
    kept = _text(after[0].get("content"))
    if original and not kept.startswith(original[: min(len(original), 200)]):
        return ["a system message 0 whose text does not start with the original system prompt"]
    return []
