"""Assertion helpers and the one message grammar of the kit.

Every failure reads::

    [V2 MUST] compress() output: tool message at index 3 answers 'call_7', which no
    earlier assistant message calls (history of 14 messages). See docs/contract.md#v2.

:func:`fail` raises it as a :class:`~conformance.clauses.errors.ContractViolation` (which carries
the
clause, the level and the offending example, for failure files); the session renders it and
appends ``Repro: <command>`` (:func:`conformance.clauses.errors.render`).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.clauses.errors import ContractViolation
from simulator.host.sanitize import REASONING_KEYS
from simulator.provider.fields import OPENAI_MESSAGE_KEYS
from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS

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
    root_cause: str = "",
) -> None:
    """Raise a :class:`ContractViolation` in the kit's grammar: what, expected vs got, context.

    ``host_practice`` marks rules that come from Hermes' code rather than its docs: the
    message then says "(host practice)". A finding of the running case's own clause says so
    too when the case is registered with ``practice="host"``. ``root_cause`` names the one
    fault several checks see (``threshold_tokens|not-an-int|float``): the verdict counts
    the findings that share it once (:mod:`conformance.run.verdict`).
    """
    __tracebackhide__ = True
    case = CURRENT_CASE.get()
    if getattr(case, "practice", None) == "host" and getattr(case, "clause", None) == clause:
        host_practice = True
    if host_practice and HOST_PRACTICE not in context:
        context = f"{context}; host practice" if context else HOST_PRACTICE
    ctx = f" ({context})" if context else ""
    violation = ContractViolation(
        clause, level, f"{what}: expected {expected}, got {got}{ctx}.", example
    )
    if root_cause:
        violation.root_cause = root_cause
    raise violation


def not_an_int(attr: str, value: Any) -> str:
    """The root-cause key of an engine attribute the host reads as an int that is not one
    (``threshold_tokens|not-an-int|float``): A6, L1's state machine and O4 all see a float
    ``threshold_tokens``; it is one fault."""
    return f"{attr}|not-an-int|{type(value).__name__}"


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
    kept: dict[Any, int] = {}
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


def in_flight_calls(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """V2's exception: the call ids of ``messages``' trailing tool chain still in flight.

    A history whose last assistant message carries ``tool_calls`` and is followed only by
    ``tool`` results (possibly none) is mid tool chain: the host compacts right after a tool
    result (its post-tool check) or while the calls are still running. The ids of that
    message's calls that have no result yet, per occurrence, in ``tool_calls`` order, are in
    flight: their results are not appended yet, so they are not orphans. Returns ``[]`` when
    the history does not end mid tool chain or every call of its last one is answered.
    """
    chain = trailing_chain(messages)
    if not chain:
        return []
    owed: list[Any] = [
        c.get("id")
        for c in chain[0].get("tool_calls") or ()
        if isinstance(c, Mapping) and c.get("id")
    ]
    for m in chain[1:]:
        cid = m.get("tool_call_id")
        if cid in owed:
            owed.remove(cid)
    return owed


def trailing_chain(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """V2: the newest tool chain at the end of ``messages``: the last assistant ``tool_calls``
    message and the ``tool`` results after it, when only results follow it; else ``[]``."""
    k = len(messages)
    while k > 0 and isinstance(messages[k - 1], Mapping) and messages[k - 1].get("role") == "tool":
        k -= 1
    if k == 0 or not isinstance(messages[k - 1], Mapping):
        return []
    last = messages[k - 1]
    if last.get("role") != "assistant" or not last.get("tool_calls"):
        return []
    return list(messages[k - 1 :])


def v2_problems(
    messages: Sequence[Mapping[str, Any]], *, in_flight: Sequence[str] = ()
) -> list[str]:
    """V2: every tool call answered once after it; every tool result answers a prior call.

    Pairing is per occurrence (seeds, U8): an id that occurs k times in one assistant
    message's ``tool_calls`` needs k results, and a later assistant message may reuse an
    id that was already answered. ``in_flight`` (from :func:`in_flight_calls` of the input
    the output was made from) names calls still running when the host compacted: when
    ``messages`` end on that chain, those calls of its last assistant message owe no result.
    """
    out: list[str] = []
    # id (any JSON value an engine put there) -> indexes of assistant messages owed a result
    outstanding: dict[Any, list[int]] = {}
    answered: dict[Any, int] = {}
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
    chain = trailing_chain(messages)
    trailing = len(messages) - len(chain) if chain else -1
    running = list(in_flight)
    for cid, owed in outstanding.items():
        for idx in owed:
            if idx == trailing and cid in running:
                running.remove(cid)  # in flight: its result is not appended yet
                continue
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
    """V4: if ``before`` starts with a system prompt, ``after`` starts with it too, the whole
    original text as a prefix of message 0's text (a note may be appended)."""
    if not before or not isinstance(before[0], Mapping) or before[0].get("role") != "system":
        return []
    if not after or not isinstance(after[0], Mapping) or after[0].get("role") != "system":
        first = describe(after[0]) if after else "an empty list"
        return [f"message 0 is {first}, not the system prompt"]
    original = _text(before[0].get("content"))
    kept = _text(after[0].get("content"))
    if original and not kept.startswith(original):
        same = 0
        for a, b in zip(original, kept, strict=False):
            if a != b:
                break
            same += 1
        return [
            "a system message 0 whose text does not start with the whole original system prompt "
            f"(the first {same} of its {len(original)} characters kept; message 0 now holds "
            f"{len(kept)})"
        ]
    return []


# --- keys of the rows an engine returns (V5, P5) ---------------------------------------

#: V5: message keys the host knows: the OpenAI message schema, the U identity fields and the
#: reasoning fields the host passes through on assistant rows (docs/host.md, "One provider
#: request"). Keys starting with ``_`` are the host's too: it strips them before the wire.
KNOWN_MESSAGE_KEYS = (
    (OPENAI_MESSAGE_KEYS - {"cache_control"}) | PERSISTENCE_ONLY_FIELDS | REASONING_KEYS
)
CACHE_CONTROL = "cache_control"


def unknown_key_problems(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[str]:
    """V5: top-level keys of ``after``'s rows that the host does not know
    (:data:`KNOWN_MESSAGE_KEYS`, ``_``-prefixed keys) and no row of ``before`` carried (a key
    passed through from the input is the host's own). ``cache_control`` is P5's."""
    seen = {k for m in before if isinstance(m, Mapping) for k in m}
    out = []
    for i, m in enumerate(after):
        if not isinstance(m, Mapping):
            continue
        extra = sorted(
            str(k)
            for k in m
            if k not in KNOWN_MESSAGE_KEYS
            and k != CACHE_CONTROL
            and k not in seen
            and not str(k).startswith("_")
        )
        if extra:
            out.append(f"message {i} ({m.get('role')}) carries {', '.join(map(repr, extra))}")
    return out


def _markers(m: Mapping[str, Any]) -> list[str]:
    """Where ``m`` carries ``cache_control``: ``"the message"`` and/or ``"content part k"``."""
    where = ["the message"] if CACHE_CONTROL in m else []
    content = m.get("content")
    if isinstance(content, list):
        where += [
            f"content part {k}"
            for k, p in enumerate(content)
            if isinstance(p, Mapping) and CACHE_CONTROL in p
        ]
    return where


def cache_marker_problems(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[str]:
    """P5: ``cache_control`` markers on ``after``'s rows (on a row or a content part) that are
    not on an equal row of ``before`` (cache markers are the host's, P1)."""
    marked_input = [m for m in before if isinstance(m, Mapping) and _markers(m)]
    out = []
    for i, m in enumerate(after):
        if not isinstance(m, Mapping) or m in marked_input:
            continue
        where = _markers(m)
        if where:
            out.append(f"message {i} ({m.get('role')}) carries cache_control on {', '.join(where)}")
    return out
