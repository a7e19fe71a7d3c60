"""Five held-out engines written the way plugin authors write them, each with its fixed twin.

They are not the kit's mutants (reference_engines/mutants/sessions.py) and not derived from
them: each is a small engine of its own, the kind a plugin author writes in an afternoon, with
one fault a real session exposes. ``tests/heldout_sessions/test_heldout_sessions.py`` runs the
kit on each pair and records what it caught.

- ``QuoteClipper`` quotes the user's earlier messages in its summary, each clipped to 160 bytes
  with ``errors="surrogateescape"`` (V6); ``QuoteClipperFixed`` decodes with ``errors="ignore"``.
- ``AskFolder`` folds the live ask into the summary ("Current request: ...", first 1 000
  characters) and drops the ask row (A8); ``AskFolderFixed`` keeps the ask row.
- ``ReasoningStripper`` drops ``reasoning_content`` / ``reasoning_details`` from every row it
  keeps, "reasoning is expensive" (V7); ``ReasoningStripperFixed`` strips only what it
  summarises.
- ``InPlaceMarker`` keeps the rows on_turn_complete() gave it and, at the next compress(), tags
  those it summarised with ``_compacted = True`` (H5 across calls); ``InPlaceMarkerFixed`` keeps
  the tags in a set of uids.
- ``LastUidSummary`` stamps its summary with the message_uid of the last row it replaced (U6);
  ``LastUidSummaryFixed`` derives a fresh uid from it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agent.context_engine import ContextEngine

from simulator.provider.tokens import count_messages


def _text(m: dict[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, list):
        return " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return c if isinstance(c, str) else ""


class _AuthorsEngine(ContextEngine):
    """The author's own engine: system prompt, one summary row, the last user turn whole (the
    ask and every row after it) plus the two rows before it; threshold 60 % of the window."""

    threshold_percent = 0.6

    @property
    def name(self) -> str:
        return "heldout"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return self.threshold_tokens > 0 and tokens >= self.threshold_tokens

    # -- the pieces the faults live in ------------------------------------------------------
    def _split(self, messages):
        """(system rows, middle, tail): the tail starts two rows before the last user message,
        moved back off tool results."""
        sys_n = 1 if messages and messages[0].get("role") == "system" else 0
        last_user = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), default=sys_n
        )
        start = max(sys_n, last_user - 2)
        while start > sys_n and messages[start].get("role") == "tool":
            start -= 1
        return messages[:sys_n], messages[sys_n:start], messages[start:]

    def _quote(self, text: str) -> str:
        return text[:160]

    def _summary_text(self, middle) -> str:
        quotes = [f"- {self._quote(_text(m))}" for m in middle if m.get("role") == "user"]
        return f"[Earlier conversation, {len(middle)} messages]\n" + "\n".join(quotes[:10])

    def _keep(self, m):
        return dict(m)

    def _summary(self, middle, tail):
        role = "assistant" if tail and tail[0].get("role") == "user" else "user"
        return {"role": role, "content": self._summary_text(middle)}

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1
        head, middle, tail = self._split(messages)
        if len(middle) < 2 or count_messages(middle) < 200:
            return messages
        return (
            [dict(m) for m in head] + [self._summary(middle, tail)] + [self._keep(m) for m in tail]
        )


class QuoteClipper(_AuthorsEngine):
    """V6 fault: quotes clipped to 160 UTF-8 bytes, decoded with ``surrogateescape`` (so the
    cut never raises)."""

    def _quote(self, text):
        return text.encode("utf-8")[:160].decode("utf-8", errors="surrogateescape")


class QuoteClipperFixed(_AuthorsEngine):
    """Fixed: the cut part of a character is dropped (``errors="ignore"``)."""

    def _quote(self, text):
        return text.encode("utf-8")[:160].decode("utf-8", errors="ignore")


class AskFolder(_AuthorsEngine):
    """A8 fault: "one message is enough": the live ask is folded into the summary (its first
    1 000 characters) and the ask row is dropped."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        if out is messages:
            return out
        ask_at = max(i for i, m in enumerate(out) if m.get("role") == "user")
        summary_at = 1 if out[0].get("role") == "system" else 0
        if ask_at == summary_at:
            return out
        ask = out.pop(ask_at)
        out[summary_at] = dict(
            out[summary_at],
            role="user",
            content=_text(out[summary_at]) + "\n\nCurrent request: " + _text(ask)[:1000],
        )
        return out


class AskFolderFixed(_AuthorsEngine):
    """Fixed: the ask stays its own row (the base engine)."""


class ReasoningStripper(_AuthorsEngine):
    """V7 fault: kept assistant rows lose their reasoning fields ("reasoning tokens are
    expensive and the model does not need them again")."""

    def _keep(self, m):
        m = dict(m)
        for key in ("reasoning_content", "reasoning_details", "reasoning"):
            m.pop(key, None)
        return m


class ReasoningStripperFixed(_AuthorsEngine):
    """Fixed: reasoning is dropped only with the rows that are summarised (the base engine)."""


class InPlaceMarker(_AuthorsEngine):
    """H5 fault (across calls): keeps the rows on_turn_complete() gave it and tags the ones a
    later compress() summarised, in place."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self.seen = list(messages)

    def _mark(self, row) -> None:
        row["_compacted"] = True

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        dropped = {m.get("message_uid") for m in messages} - {m.get("message_uid") for m in out}
        for row in self.seen:
            if row.get("message_uid") in dropped:
                self._mark(row)
        return out


class InPlaceMarkerFixed(InPlaceMarker):
    """Fixed: the tags go into the engine's own set of uids."""

    def __init__(self) -> None:
        super().__init__()
        self.compacted: set[str] = set()

    def _mark(self, row) -> None:
        self.compacted.add(row.get("message_uid"))


class LastUidSummary(_AuthorsEngine):
    """U6 fault: the summary is stamped with the message_uid of the last row it replaced ("so
    the summary sorts where the middle ended")."""

    def _uid(self, uid: str) -> str:
        return uid

    def _summary(self, middle, tail):
        row = super()._summary(middle, tail)
        if middle and middle[-1].get("message_uid"):
            row["message_uid"] = self._uid(middle[-1]["message_uid"])
        return row


class LastUidSummaryFixed(LastUidSummary):
    """Fixed: a fresh uid derived from the last replaced one."""

    def _uid(self, uid: str) -> str:
        return hashlib.sha256(f"summary-of:{uid}".encode()).hexdigest()[:32]


#: fault -> (fixed twin, the clause whose finding names the fault)
PAIRS = {
    "QuoteClipper": ("QuoteClipperFixed", "V6"),
    "AskFolder": ("AskFolderFixed", "A8"),
    "ReasoningStripper": ("ReasoningStripperFixed", "V7"),
    "InPlaceMarker": ("InPlaceMarkerFixed", "H5"),
    "LastUidSummary": ("LastUidSummaryFixed", "U6"),
}
