"""Mutant of section L (L1): the engine stays closed after on_session_end."""

from __future__ import annotations

from reference_engines.mutants._base import MinimalEngine


class ClosedAfterSessionEnd(MinimalEngine):
    """Breaks L1: after on_session_end the engine stays closed, even for the next session."""

    mutant_of = "L1"

    def on_session_end(self, session_id, messages):
        self.closed = True

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        if getattr(self, "closed", False):
            raise RuntimeError("engine closed")  # the defect: on_session_start does not reopen it
        return super().compress(messages, current_tokens, focus_topic, **kwargs)
