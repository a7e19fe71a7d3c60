"""The invariants the runner checks after every step of a scenario.

:func:`orphan_findings` (V2): every live transcript (main agent, subagent, gateway
conversations) has no orphan tool call or result. :class:`UidWatch` (U3): along the main
session's lineage, a message still present with the same role and content keeps its
message_uid. Each problem is a :class:`~conformance.scenarios.observe.Finding` naming the step;
the runner files them in the run (``orphans``, ``uid_changes``) for the expectations to judge.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.authoring.expect import v2_problems
from conformance.scenarios.observe import Finding


def orphan_findings(label: str, live: list[tuple[str, Any]]) -> list[Finding]:
    """V2 after the step ``label``: one :class:`Finding` per transcript of ``live`` (``(name,
    session)`` pairs; a session's ``messages``) that has an orphan pair, naming its first
    problem; [] when every transcript is valid."""
    out = []
    for name, s in live:
        problems = v2_problems(s.messages)
        if problems:
            out.append(
                Finding(label, f"{name} transcript ({len(s.messages)} messages): {problems[0]}")
            )
    return out


class UidWatch:
    """U3 along one session's lineage: the message_uids of its messages at the previous step,
    keyed by role, content and tool_call_id."""

    def __init__(self) -> None:
        self._prev: dict[str, tuple[str, ...]] | None = None

    def forget(self) -> None:
        """Start over (a new session: ``/new``); the next :meth:`check` only records."""
        self._prev = None

    def check(self, label: str, messages: list[dict[str, Any]]) -> Finding | None:
        """Record the uids of ``messages`` after the step ``label``; return the first message
        still present (same role and content) whose message_uid changed since the previous
        check, as a :class:`Finding`, or None."""
        finding = None
        current: dict[str, tuple[str, ...]] = {}
        for m in messages:
            uid = m.get("message_uid")
            if isinstance(uid, str) and uid:
                key = json.dumps(
                    [m.get("role"), m.get("content"), m.get("tool_call_id")],
                    sort_keys=True,
                    ensure_ascii=False,
                    default=repr,
                )
                current[key] = current.get(key, ()) + (uid,)
        prev = self._prev
        if prev is not None:
            for key, uids in current.items():
                old = prev.get(key)
                if old and not set(old) & set(uids) and len(uids) <= len(old):
                    role, content, _ = json.loads(key)
                    text = (
                        content
                        if isinstance(content, str)
                        else json.dumps(content, ensure_ascii=False)
                    )
                    finding = Finding(
                        label,
                        f"the {role} message {text[:50]!r} had message_uid "
                        f"{old[0]} and now has {uids[0]}",
                    )
                    break
        self._prev = current
        return finding


__all__ = ["UidWatch", "orphan_findings"]
