"""Breaks R6: engine.name differs from the folder (context.engine) name."""

from reference_engines.mutants._base import MinimalEngine


class FolderEngine(MinimalEngine):
    @property
    def name(self):
        return "minimal"
