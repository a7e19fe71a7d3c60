"""Scenario mutant for C1: ``clone_for_agent`` raises, so every agent falls back to the
built-in compressor (C3) and the engine never runs."""

from reference_engines.mutants._base import MinimalEngine


class CloneRaises(MinimalEngine):
    """Breaks C1 only."""

    mutant_of = "C1"

    def clone_for_agent(self):
        raise RuntimeError("this engine holds a connection that cannot be copied")  # the defect
