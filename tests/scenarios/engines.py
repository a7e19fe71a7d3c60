"""Small engines for scenario tests."""

from reference_engines.mutants._base import MinimalEngine


class RaisesOnUsage(MinimalEngine):
    """update_from_response raises (the host does not catch it): the run stops at that step."""

    def update_from_response(self, usage):
        raise RuntimeError("usage store offline")
