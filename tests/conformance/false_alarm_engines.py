"""Engines of the shapes that showed false alarms (and one root cause counted many times), each
written the way plugin authors write them, for tests/conformance/test_false_alarms.py: the
correct engine of each shape, and a faulty one the kit must still catch."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine, safe_tail_start
from simulator.provider.tokens import count_messages

#: A real folder outside any sandbox, taken at import (before any case runs).
REAL_TMP = Path(tempfile.gettempdir())


class PassThrough(MinimalEngine):
    """Correct: never compacts (a select_context-less pass-through); compress() hands back an
    equal copy."""

    @property
    def name(self) -> str:
        return "pass-through"

    def should_compress(self, prompt_tokens=None) -> bool:
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        return list(messages)


class AsksButNeverShrinks(MinimalEngine):
    """Faulty (B7): asks to compact over its threshold, then hands back an equal copy, so the
    gateway's hygiene pass leaves the history over the 85 % line."""

    @property
    def name(self) -> str:
        return "never-shrinks"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1
        return list(messages)


class TiktokenWhenAvailable(MinimalEngine):
    """Correct: counts with tiktoken's cl100k_base when tiktoken is installed."""

    def __init__(self) -> None:
        try:
            import tiktoken

            self._encoding = tiktoken.get_encoding("cl100k_base")
        except ImportError:
            self._encoding = None

    @property
    def name(self) -> str:
        return "tiktoken-counter"


class TiktokenO200kWhenAvailable(MinimalEngine):
    """Reaches for the network: o200k_base is not served by the kit (only cl100k_base is), so
    tiktoken tries to download it (E1); the engine falls back quietly."""

    def __init__(self) -> None:
        try:
            import tiktoken

            self._encoding = tiktoken.get_encoding("o200k_base")
        except Exception:
            self._encoding = None

    @property
    def name(self) -> str:
        return "tiktoken-o200k"


class TempDirJobs(MinimalEngine):
    """Correct: each compaction starts a daemon summariser job that works in a
    ``tempfile.TemporaryDirectory()`` for a while after compress() returned."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        def job() -> None:
            for _ in range(15):
                try:
                    with tempfile.TemporaryDirectory() as folder:
                        Path(folder, "notes.txt").write_text("draft", encoding="utf-8")
                        time.sleep(0.01)
                except OSError:
                    return  # its case's home is gone: the job ends

        threading.Thread(target=job, name="summariser-job", daemon=True).start()
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class TempJobsInRealTmp(MinimalEngine):
    """Faulty (E1): its daemon job writes to the machine's temp folder by a path taken at
    import, outside its home."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        def job() -> None:
            try:
                (REAL_TMP / f"engine-job-{os.getpid()}.txt").write_text("x", encoding="utf-8")
            except OSError:
                pass

        thread = threading.Thread(target=job, daemon=True)
        thread.start()
        thread.join()
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class PhonesHomeInConstructor(MinimalEngine):
    """Faulty (E1, once): its constructor looks up a licence server and swallows the error."""

    def __init__(self) -> None:
        try:
            socket.create_connection(("licence.example.com", 443), timeout=0.5).close()
        except OSError:
            pass

    @property
    def name(self) -> str:
        return "phones-home"


class RaisesInConstructor(MinimalEngine):
    """Faulty: its constructor raises (a missing model file)."""

    def __init__(self) -> None:
        raise FileNotFoundError("model.bin")


class LowerCasesContent(MinimalEngine):
    """Faulty (A4): lower-cases every message's text to index it, which breaks on list content
    (``'list' object has no attribute 'lower'``)."""

    def _compress(self, messages):
        self.index = [(m.get("content") or "").lower() for m in messages]
        return super()._compress(messages)


class FloatThreshold(MinimalEngine):
    """Faulty (A6): ``threshold_tokens = context_length * 0.5``, a float."""

    def update_model(self, model, context_length, *args, **kwargs):
        super().update_model(model, context_length, *args, **kwargs)
        self.threshold_tokens = context_length * self.threshold_percent


class GeneratorCompress(MinimalEngine):
    """Faulty (A4): compress() is a generator function (``yield`` instead of ``return``)."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        yield from super().compress(messages, current_tokens, focus_topic, **kwargs)


class FastSummarise(MinimalEngine):
    """Correct: a fast engine with a ``summarise`` seam; a stand-in when the summary fails."""

    @property
    def name(self) -> str:
        return "fast-summarise"

    def summarise(self, messages):
        return "; ".join(str(m.get("content") or "")[:40] for m in messages[:8])

    def _compress(self, messages):
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = safe_tail_start(body, len(body) - self.keep_last)
        if start == 0:
            return list(messages)
        try:
            text = self.summarise(body[:start])
        except Exception as exc:
            text = f"the summary failed ({type(exc).__name__}); {start} messages were dropped"
        text = text or f"the summary came back empty; {start} messages were dropped"
        tail = [dict(m) for m in body[start:]]
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return head + [{"role": role, "content": f"{SUMMARY_PREFIX} {text}"}] + tail


class SlowSummarise(FastSummarise):
    """A slow engine (each compress() sleeps 0.4 s): its budget share still runs out."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        time.sleep(0.4)
        return super().compress(messages, current_tokens, focus_topic, **kwargs)


class PrunesForHermes022(MinimalEngine):
    """Written for Hermes 0.22 and installed next to 0.19.0: its prune_tool_results_only()
    override logs and defers to the ABC's, which 0.19.0's ABC does not have. 0.19.0 never
    calls it, so on that ABC it is dead code, not a fault (O13)."""

    def prune_tool_results_only(self, messages, current_tokens=None):
        self.pruned_calls = getattr(self, "pruned_calls", 0) + 1
        return super().prune_tool_results_only(messages, current_tokens)
