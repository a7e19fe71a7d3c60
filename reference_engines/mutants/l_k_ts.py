"""Mutants of sections L, K and TS (L1, K1, TS1-TS3). Each breaks one clause."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time

from reference_engines.mutants._base import MinimalEngine


class ClosedAfterSessionEnd(MinimalEngine):
    """Breaks L1: after on_session_end the engine stays closed, even for the next session."""

    mutant_of = "L1"

    def on_session_end(self, session_id, messages):
        self.closed = True

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        if getattr(self, "closed", False):
            raise RuntimeError("engine closed")  # the defect: on_session_start does not reopen it
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class _IgnoresAssignment:
    def __get__(self, obj, owner=None):
        return {}

    def __set__(self, obj, value):
        pass  # the defect: the host's map is dropped


class DropsModelThresholds(MinimalEngine):
    """Breaks K1: the host's model_thresholds assignment is silently dropped."""

    mutant_of = "K1"
    model_thresholds = _IgnoresAssignment()


class ThreadAffine(MinimalEngine):
    """Breaks TS1: compress() behaves differently off the thread that built the engine."""

    mutant_of = "TS1"

    def __init__(self):
        self.creator = threading.get_ident()

    def _compress(self, messages):
        saved = self.keep_last
        if threading.get_ident() != self.creator:
            self.keep_last = 2  # the defect: thread affinity
        try:
            return super()._compress(messages)
        finally:
            self.keep_last = saved


class LeaksThreads(MinimalEngine):
    """Breaks TS1 (SHOULD): compress() leaves a worker thread running behind it."""

    mutant_of = "TS1"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        threading.Thread(
            target=time.sleep, args=(2.0,), name="leaky-indexer", daemon=True
        ).start()  # the defect
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class WritesDuringPass(MinimalEngine):
    """Breaks TS2: every compress() pass publishes a state file under $HERMES_HOME at once."""

    mutant_of = "TS2"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        home = os.environ.get("HERMES_HOME") or tempfile.gettempdir()
        path = os.path.join(home, f"ts2-mutant-{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as fh:  # the defect: no staging until commit
            json.dump({"compressions": self.compression_count}, fh)
        return out


class RacyInstance(MinimalEngine):
    """Breaks TS3: keeps the messages being compressed on the instance, so parallel sessions mix."""

    mutant_of = "TS3"

    def _compress(self, messages):
        self.current = messages  # the defect: shared per-instance scratch state
        time.sleep(0.01)
        return super()._compress(self.current)
