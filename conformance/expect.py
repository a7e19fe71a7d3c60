"""Assertion helpers and the one message grammar of the kit.

Every failure reads::

    [V2 MUST] compress() output: tool message at index 3 answers 'call_7', which no
    earlier assistant message calls (history of 14 messages). See docs/contract.md#v2.

and the runner appends ``Repro: <command>``. :class:`ContractViolation` carries the
clause, the level and, when there is one, the offending example (for replay files).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

from simulator.contract import clause_link

MUST = "MUST"
SHOULD = "SHOULD"
ROLES = ("system", "user", "assistant", "tool")


class ContractViolation(AssertionError):
    """An engine broke a contract clause.

    Attributes:
        clause: clause id, e.g. ``"V2"``.
        level: ``"MUST"`` or ``"SHOULD"``.
        detail: the human-readable part after the ``[CLAUSE LEVEL]`` prefix.
        example: the offending input (e.g. ``{"history": [...]}``), JSON-serialisable.
    """

    def __init__(self, clause: str, level: str, detail: str, example: Optional[Dict[str, Any]] = None):
        self.clause = clause
        self.level = level
        self.detail = detail
        self.example = example
        super().__init__(self.render())

    def render(self) -> str:
        return f"[{self.clause} {self.level}] {self.detail} See {clause_link(self.clause)}."


def fail(clause: str, level: str, what: str, *, expected: str, got: str, context: str = "",
         example: Optional[Dict[str, Any]] = None) -> None:
    """Raise a :class:`ContractViolation` in the kit's grammar: what, expected vs got, context."""
    __tracebackhide__ = True
    ctx = f" ({context})" if context else ""
    raise ContractViolation(clause, level, f"{what}: expected {expected}, got {got}{ctx}.", example)


def short(value: Any, limit: int = 160) -> str:
    """A bounded repr for messages: never prints more than ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except Exception:
        text = object.__repr__(value)
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
        extra = " calls " + ",".join(str(c.get("id")) for c in message["tool_calls"] if isinstance(c, Mapping))
    if role == "tool":
        extra = f" {message.get('tool_call_id')!r}"
    return f"<{role}{extra} {size}>"


# --- V: validity of an OpenAI-format message sequence ---------------------------------

def v1_problems(messages: Any) -> List[str]:
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


def v2_problems(messages: Sequence[Mapping[str, Any]]) -> List[str]:
    """V2: every tool call answered once after it; every tool result answers a prior call.

    Pairing is per occurrence (seeds, U8): an id that occurs k times in one assistant
    message's ``tool_calls`` needs k results, and a later assistant message may reuse an
    id that was already answered.
    """
    out: List[str] = []
    outstanding: Dict[str, List[int]] = {}  # id -> indexes of assistant messages still owed a result
    answered: Dict[str, int] = {}
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
                out.append(f"tool message at index {i} answers {cid!r} a second time (first at index {answered[cid]})")
            else:
                out.append(f"tool message at index {i} answers {cid!r}, which no earlier assistant message calls")
    for cid, owed in outstanding.items():
        for idx in owed:
            out.append(f"assistant message at index {idx} calls {cid!r}, which has no tool result after it")
    return out


def v3_problems(messages: Sequence[Mapping[str, Any]]) -> List[str]:
    """V3: content is a str, a list of parts, or None/absent only on an assistant with tool_calls."""
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        content = m.get("content")
        if isinstance(content, str):
            continue
        if isinstance(content, list):
            bad = [j for j, p in enumerate(content) if not (isinstance(p, Mapping) and isinstance(p.get("type"), str))]
            if bad:
                out.append(f"message {i} has content part {bad[0]} that is not a dict with a 'type'")
            continue
        if content is None:
            if m.get("role") == "assistant" and m.get("tool_calls"):
                continue
            out.append(f"message {i} ({m.get('role')}) has content None/absent, allowed only on an assistant with tool_calls")
            continue
        out.append(f"message {i} has content of type {type(content).__name__}")
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def v4_problems(before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]) -> List[str]:
    """V4: if ``before`` starts with a system prompt, ``after`` starts with it too (a note may be appended)."""
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
