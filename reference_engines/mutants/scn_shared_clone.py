"""Scenario mutant for C2: ``clone_for_agent`` returns the registered instance itself,
so a subagent's ``update_model`` changes the parent's budget."""

from reference_engines.mutants._base import MinimalEngine


class SharedClone(MinimalEngine):
    """Breaks C2 only (every agent shares one mutable budget)."""

    mutant_of = "C2"

    def clone_for_agent(self):
        return self  # the defect
