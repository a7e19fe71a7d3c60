"""A correct plugin folder: exports a ContextEngine subclass named like the folder."""

from reference_engines.mutants._base import MinimalEngine


class FolderEngine(MinimalEngine):
    @property
    def name(self):
        return "minimal"
