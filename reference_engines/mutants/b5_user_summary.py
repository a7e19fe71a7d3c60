"""Mutant of B5 for engines that are not compressors (REG-h's SHOULD variant), with its twin.

Providers such as Anthropic want the first message after the system prompt to be a user turn,
so engines put the summary there as a user message. The tail then decides whether two user
messages touch: an engine that keeps a fixed number of trailing messages meets a user message
there for one parity of the history only (REG-h draws both).
"""

from __future__ import annotations

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine


class UserSummaryAfterSystem(MinimalEngine):
    """Breaks B5 (REG-h, SHOULD): the summary is always a user message, even when the kept
    tail starts with one."""

    mutant_of = "B5"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, role="user")  # the defect: a user turn first, whatever follows it
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
            else m
            for m in out
        ]


class UserSummaryMergedIntoUser(MinimalEngine):
    """Correct twin of :class:`UserSummaryAfterSystem`: still a user turn first, but when the
    kept tail starts with a user message the summary goes in front of its text instead (the
    fix Hermes shipped: merge into the first tail message)."""

    def _compress(self, messages):
        out = super()._compress(messages)
        for i, m in enumerate(out):
            if not (isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)):
                continue
            nxt = out[i + 1] if i + 1 < len(out) else None
            if nxt is not None and nxt.get("role") == "user":
                content = nxt.get("content")
                merged = (
                    [{"type": "text", "text": m["content"]}] + list(content)
                    if isinstance(content, list)
                    else f"{m['content']}\n\n{content or ''}"
                )
                return out[:i] + [dict(nxt, content=merged)] + out[i + 2 :]
            return out[:i] + [dict(m, role="user")] + out[i + 1 :]
        return out
