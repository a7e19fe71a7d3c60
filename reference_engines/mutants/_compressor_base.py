"""``MiniCompressor``: a small, correct engine with the ``compressor`` and ``focus``
capabilities (contract B1-B6, seeds' reading), the base of the B mutants.

Head = the first protect_first_n messages (system prompt included), extended forward over
tool results so a tool group is never split, kept on every compaction (seeds). Tail =
walk back by token budget (threshold x target_ratio), at least protect_last_n + 1
messages, never starting on a tool result. The middle goes to the simulator's
deterministic summariser (the B4 template), tool results over 200 characters cleared
first (B2); the previous summary is passed on (B6); the note is appended to the system
prompt once (B5); the summary's role avoids touching a same-role neighbour, else it is
merged into the first tail message (B5).
"""

from __future__ import annotations

import copy
from typing import Any

from reference_engines.mutants._base import MinimalEngine
from simulator.provider.replies import summarise
from simulator.provider.tokens import count_message, count_messages

NOTE = (
    "[Note: Some earlier conversation turns have been compacted into a handoff summary to preserve "
    "context space.]"
)
SUMMARY_PREFIX = "[CONTEXT COMPACTION] Earlier turns were compacted into the summary below."
PRUNED = "[Old tool output cleared to save context space]"


def text_of(m: dict[str, Any]) -> str:
    """The text of a message content (str, or the text parts of a list)."""
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return ""


class MiniCompressor(MinimalEngine):
    """Correct small compressor (B1-B6 by the seeds)."""

    conformance_capabilities = frozenset({"compressor", "focus"})
    threshold_percent = 0.5
    target_ratio = 0.2
    protect_first_n = 3
    protect_last_n = 20
    summary_max_chars = 3_000

    @property
    def name(self) -> str:
        return "mini-compressor"

    def should_compress_preflight(self, messages):
        return (
            count_messages(messages) >= self.threshold_tokens > 0
            and self.ineffective_passes < self.max_ineffective
        )

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self._focus = focus_topic
        return super().compress(messages, current_tokens, focus_topic, **kwargs)

    # -- phases ----------------------------------------------------------------------
    def head_end(self, messages: list[dict[str, Any]]) -> int:
        """B3: end of the head (protect_first_n), extended over tool results."""
        end = min(self.protect_first_n, len(messages))
        while end < len(messages) and messages[end].get("role") == "tool":
            end += 1
        return end

    def tail_start(self, messages: list[dict[str, Any]], head_end: int) -> int:
        """B3: start of the tail by token budget, at least protect_last_n + 1 rows, not on a tool
        result."""
        budget = int(self.threshold_tokens * self.target_ratio)
        start, used = len(messages), 0
        while start > head_end:
            cost = count_message(messages[start - 1])
            if used + cost > budget:
                break
            used += cost
            start -= 1
        start = min(start, len(messages) - self.protect_last_n - 1)
        # B3: the last real user message stays in the tail (a long tool loop after it too)
        asks = [i for i in range(head_end, len(messages)) if messages[i].get("role") == "user"]
        if asks:
            start = min(start, asks[-1])
        while start > head_end and messages[start].get("role") == "tool":
            start -= 1
        return start

    def prune(self, m: dict[str, Any]) -> dict[str, Any]:
        """B2: a tool result over 200 characters becomes the placeholder."""
        if m.get("role") == "tool" and len(text_of(m)) > 200:
            m = dict(m)
            m["content"] = PRUNED
        return m

    def note(self, system: dict[str, Any]) -> dict[str, Any]:
        """B5: the note, appended once."""
        system = dict(system)
        if NOTE not in text_of(system):
            system["content"] = text_of(system) + "\n\n" + NOTE
        return system

    def summary_text(self, middle: list[dict[str, Any]]) -> str:
        """B4/B6: the summary of the middle, updating the previous summary found there."""
        previous = next((text_of(m) for m in middle if text_of(m).startswith(SUMMARY_PREFIX)), None)
        rest = [self.prune(m) for m in middle if not text_of(m).startswith(SUMMARY_PREFIX)]
        text = "\n".join(f"{m.get('role')}: {text_of(m)}" for m in rest)
        body = summarise(
            text,
            focus_topic=getattr(self, "_focus", None),
            max_chars=self.summary_max_chars,
            previous_summary=previous[len(SUMMARY_PREFIX) :].strip() if previous else None,
        )
        return SUMMARY_PREFIX + "\n" + body

    def summary_role(
        self, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> str | None:
        """B5: a role unlike both neighbours, or None (merge into the first tail row)."""
        taken = {m.get("role") for m in (before, after) if m is not None}
        for role in ("user", "assistant"):
            if role not in taken:
                return role
        return None

    def _compress(self, messages):
        self.compression_count += 1
        messages = [copy.deepcopy(m) for m in messages]
        if len(messages) <= self.protect_first_n + self.protect_last_n + 1:
            return messages
        h = self.head_end(messages)
        t = self.tail_start(messages, h)
        if t <= h:
            return messages
        head = [self.prune(m) for m in messages[:h]]
        if head and head[0].get("role") == "system":
            head[0] = self.note(head[0])
        tail = messages[t:]
        text = self.summary_text(messages[h:t])
        role = self.summary_role(head[-1] if head else None, tail[0] if tail else None)
        if role is None:
            first = dict(tail[0])
            first["content"] = text + "\n\n" + text_of(first)
            return head + [first] + tail[1:]
        return head + [{"role": role, "content": text}] + tail
