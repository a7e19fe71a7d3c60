"""Scenario mutant for TS1: keeps per-session state in a ``threading.local`` filled by
``on_session_start`` on the conversation thread; ``compress`` on a pool thread finds it
empty and raises."""

from __future__ import annotations

import threading

from reference_engines.mutants._base import MinimalEngine

_LOCAL = threading.local()


class ThreadAffine(MinimalEngine):
    """Breaks TS1 only (thread affinity)."""

    mutant_of = "TS1"

    def on_session_start(self, session_id, **kwargs):
        _LOCAL.session_id = session_id  # the defect: state bound to the calling thread

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        session_id = _LOCAL.session_id  # AttributeError on any other thread
        return (
            super().compress(messages, current_tokens, focus_topic, **kwargs)
            if session_id
            else messages
        )
