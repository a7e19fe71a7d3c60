"""Mutants of section TS (TS1-TS3): threads and timeouts. Each breaks one clause."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time

from reference_engines.mutants._base import MinimalEngine


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
