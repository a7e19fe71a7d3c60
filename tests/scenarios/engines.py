"""Small engines for scenario tests."""

import threading

from reference_engines.mutants._base import MinimalEngine

#: Frees the threads a hanging engine left behind (tests set it when they are done).
RELEASE = threading.Event()


class RaisesOnUsage(MinimalEngine):
    """update_from_response raises (the host does not catch it): the run stops at that step."""

    def update_from_response(self, usage):
        raise RuntimeError("usage store offline")


class HangsOnReset(MinimalEngine):
    """on_session_reset blocks until :data:`RELEASE` is set (at most 60 s): a hanging engine."""

    def on_session_reset(self):
        RELEASE.wait(60)
        super().on_session_reset()


class SelectRaises(MinimalEngine):
    """Only fault: select_context raises (the host fails open; H1 SHOULD in the checks)."""

    def select_context(self, request_messages, **kwargs):
        raise ValueError("selector broke")


class SessionStartRaises(MinimalEngine):
    """on_session_start raises (O1 MUST in the checks)."""

    def on_session_start(self, session_id, **kwargs):
        raise RuntimeError("db not reachable")
