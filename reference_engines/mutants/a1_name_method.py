"""Mutant for A1: ``name`` is a plain method, so ``engine.name`` is a bound method, not a str."""

from reference_engines.mutants._base import MinimalEngine


class NameIsMethod(MinimalEngine):
    """Breaks A1 only."""

    mutant_of = "A1"

    def name(self):  # type: ignore[override]  - the defect: not a property
        return "name-is-method"
