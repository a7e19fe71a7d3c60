"""Scenario mutant for O3: ``on_session_reset`` does nothing, so /reset and /new keep the
old session's token counters and compression_count."""

from reference_engines.mutants._base import MinimalEngine


class ResetKeepsCounters(MinimalEngine):
    """Breaks O3 only."""

    mutant_of = "O3"

    def on_session_reset(self):
        return None  # the defect: counters are not reset
