"""L1 (compaction boundaries): after a committed compaction Hermes calls ``on_session_end`` and
then ``on_session_start(boundary_reason="compression", old_session_id=...)``, with the same id
in place and a new id on rotation. That is not a new conversation.

``KeepsStateAcrossBoundary`` (the correct twin, the fix as shipped in hermes-lcm: a boundary
start continues ``old_session_id``) keeps a rolling summary: each compaction's summary carries
the previous one (held in ``self.previous_summary``, the way LCM-style engines hold their DAG),
and only ``on_session_reset()`` (``/new``, ``/reset``) clears it.
``ResetsOnSessionStart`` (the mutant) treats every ``on_session_start`` as a new
conversation: it zeroes ``compression_count`` and forgets the previous summary, so the
compaction after a boundary starts over.
"""

from __future__ import annotations

from typing import Any

from reference_engines.mutants._base import (
    MinimalEngine,
    live_turn_start,
    safe_tail_start,
    spaced_text,
)
from simulator.provider.tokens import count_messages

SUMMARY_PREFIX = "[Rolling summary]"


class KeepsStateAcrossBoundary(MinimalEngine):
    """Correct twin: system + rolling summary (previous summary + this pass's digest) + last 4."""

    def __init__(self) -> None:
        self.previous_summary: str | None = None
        self.session_id: str | None = None

    @property
    def name(self) -> str:
        return "rolling-summary"

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id  # a compression boundary continues old_session_id

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self.previous_summary = None

    def digest(self, middle: list[dict[str, Any]]) -> str:
        """One line per summarised pass: its size and the first words of its first user row."""
        first = next((spaced_text(m) for m in middle if m.get("role") == "user"), "")
        words = " ".join(
            first.replace(SUMMARY_PREFIX, "").split()[:8]
        )  # previous summaries are not re-digested
        return f"pass {self.compression_count}: {len(middle)} messages from '{words}'"

    def _compress(self, messages):
        self.compression_count += 1  # A6 (seeds): counts every call
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = min(
            safe_tail_start(body, len(body) - self.keep_last), live_turn_start(body, len(body))
        )  # the live ask stays verbatim (A8)
        if start == 0:
            return list(messages)
        middle = [m for m in body[:start] if not spaced_text(m).startswith(SUMMARY_PREFIX)]
        lines = [self.previous_summary] if self.previous_summary else []
        summary = "\n".join(lines + [self.digest(middle)])
        self.previous_summary = summary
        tail = [dict(m) for m in body[start:]]
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return head + [{"role": role, "content": f"{SUMMARY_PREFIX}\n{summary}"}] + tail


class ResetsOnSessionStart(KeepsStateAcrossBoundary):
    """Breaks L1 only: every on_session_start is taken for a new conversation."""

    mutant_of = "L1"

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self.session_id = session_id
        self.compression_count = 0  # the defect: the boundary resets the engine
        self.previous_summary = None


class NamesItsSession(KeepsStateAcrossBoundary):
    """Correct twin: its summary names the session it was written in, as engines that link a
    summary to the store's session do. On rotation that is the new id; the conversation is the
    same, and so is everything else in the next compaction."""

    def _compress(self, messages):
        out = super()._compress(messages)
        if out is not messages and self.session_id:
            for row in out:
                if str(row.get("content", "")).startswith(SUMMARY_PREFIX):
                    row["content"] += f"\n(written in session {self.session_id})"
        return out


class AnchorsItsSummary(KeepsStateAcrossBoundary):
    """Correct twin: its summary row gets a fresh uid of its own (U6: a row the engine makes
    carries the engine's uid), and the engine keeps that uid under a private ``_anchor_uid``
    key too (the host strips ``_`` keys before the wire), to find its summary again."""

    def _compress(self, messages):
        import uuid

        out = super()._compress(messages)
        for row in out:
            if str(row.get("content", "")).startswith(SUMMARY_PREFIX) and "message_uid" not in row:
                uid = uuid.uuid4().hex
                row["message_uid"] = uid
                row["_anchor_uid"] = uid
        return out
