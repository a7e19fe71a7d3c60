"""Mutant of section D (D1): output that depends on how many engines were built."""

from __future__ import annotations

import itertools

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine

_INSTANCES = itertools.count(1)


class NumberedSummaries(MinimalEngine):
    """Breaks D1 (SHOULD): each instance numbers its summaries from a process-wide counter."""

    mutant_of = "D1"

    def __init__(self):
        # the defect: output depends on how many engines were built
        self.instance = next(_INSTANCES)

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, content=m["content"] + f" (engine #{self.instance})")
            if isinstance(m.get("content"), str) and m["content"].startswith(SUMMARY_PREFIX)
            else m
            for m in out
        ]
