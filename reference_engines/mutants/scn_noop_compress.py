"""Scenario mutant for B7: ``compress`` returns a copy of its input, so gateway hygiene
(and every compaction) leaves the history as large as it was."""

from reference_engines.mutants._base import MinimalEngine


class NoopCompress(MinimalEngine):
    """Breaks B7 (the hygiene pass cannot bring the session under 85 %)."""

    mutant_of = "B7"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1
        return [dict(m) for m in messages]  # the defect: nothing removed
