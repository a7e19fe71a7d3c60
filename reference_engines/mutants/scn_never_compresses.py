"""Scenario mutant for L1: ``should_compress`` always answers False, so the host never
compacts on its own (only a manual ``/compress`` reaches ``compress``)."""

from reference_engines.mutants._base import MinimalEngine


class NeverCompresses(MinimalEngine):
    """Breaks L1 only: the lifecycle never reaches compress() automatically."""

    mutant_of = "L1"

    def should_compress(self, prompt_tokens=None):
        return False  # the defect
