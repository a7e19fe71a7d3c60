"""Mutants of section V (V1, V3; V2 and V4 have their own files)."""

from __future__ import annotations

from reference_engines.mutants._base import MinimalEngine


class DeveloperRoleSummary(MinimalEngine):
    """Breaks V1: the summary message has role "developer"."""

    mutant_of = "V1"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, role="developer")
            if m.get("content", "").__class__ is str and m["content"].startswith("[Summary")
            else m
            for m in out
        ]  # the defect


class DictContentSummary(MinimalEngine):
    """Breaks V3: the summary's content is a dict, not a str or a list of parts."""

    mutant_of = "V3"

    def _compress(self, messages):
        out = super()._compress(messages)
        return [
            dict(m, content={"text": m["content"]})
            if isinstance(m.get("content"), str) and m["content"].startswith("[Summary")
            else m
            for m in out
        ]  # the defect
