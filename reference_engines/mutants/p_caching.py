"""Mutant of section P (P5: cache markers are the host's), with its correct twin."""

from __future__ import annotations

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine


class CacheMarkedSummary(MinimalEngine):
    """Breaks P5: marks its summary with ``cache_control`` to have it cached; with the host's
    four breakpoints (P1) the request has five and Anthropic answers 400 (docs/contract-notes.md
    6.9)."""

    mutant_of = "P5"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(
                m,
                content=[
                    {"type": "text", "text": m["content"], "cache_control": {"type": "ephemeral"}}
                ],  # the defect
            )
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
            else m
            for m in out
        ]


class UnmarkedSummary(MinimalEngine):
    """Correct twin of :class:`CacheMarkedSummary`: the same summary as a text part, no marker
    (the host's cache control places the breakpoints)."""

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, content=[{"type": "text", "text": m["content"]}])
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
            else m
            for m in out
        ]
