"""Scenario mutant for K1: keeps the base ``update_model`` (so K2 does not apply) but
recomputes ``threshold_tokens`` from its class default percent on every usage update,
dropping the ``compression.model_thresholds`` value the host configured."""

from reference_engines.mutants._base import MinimalEngine


class RecomputesThreshold(MinimalEngine):
    """Breaks K1 only."""

    mutant_of = "K1"

    def update_from_response(self, usage):
        super().update_from_response(usage)
        self.threshold_tokens = int(
            self.context_length * type(self).threshold_percent
        )  # the defect
