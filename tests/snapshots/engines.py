"""Engines for snapshot tests."""

from reference_engines.mutants._base import MinimalEngine


class RaisingCompress(MinimalEngine):
    """compress() raises."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        raise ValueError("cannot compress this")
