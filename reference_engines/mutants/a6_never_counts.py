"""Mutant for A6: compacts the history but never increments ``compression_count``."""

from reference_engines.mutants._base import MinimalEngine


class NeverCounts(MinimalEngine):
    """Breaks A6 only."""

    mutant_of = "A6"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        before = self.compression_count
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        self.compression_count = before  # the defect
        return out
