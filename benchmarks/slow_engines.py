"""Slow engines for ``benchmarks/bench_door.py``: correct ones whose calls take real seconds (a
summary-LLM call), and one slow buggy one. Written the way plugin authors write them: a
subclass of the kit's minimal engine with a sleep where the LLM call would be.
"""

from __future__ import annotations

import time
from typing import Any

from reference_engines.mutants._base import MinimalEngine


class OneSecondCompress(MinimalEngine):
    """Correct; compress() takes 1 s (a fast summary-LLM call)."""

    @property
    def name(self) -> str:
        """The engine's name (A1: a property)."""
        return "one-second-compress"

    def compress(self, messages: list[dict[str, Any]], *a: Any, **k: Any) -> list[dict[str, Any]]:
        """MinimalEngine's compaction after a 1 s wait."""
        time.sleep(1.0)
        return super().compress(messages, *a, **k)


class SlowEverything(MinimalEngine):
    """Correct; a 1.3 s constructor (loads a tokenizer, opens a store) and a 2.8 s compress()."""

    @property
    def name(self) -> str:
        """The engine's name (A1: a property)."""
        return "slow-everything"

    def __init__(self) -> None:
        time.sleep(1.3)
        super().__init__()

    def compress(self, messages: list[dict[str, Any]], *a: Any, **k: Any) -> list[dict[str, Any]]:
        """MinimalEngine's compaction after a 2.8 s wait."""
        time.sleep(2.8)
        return super().compress(messages, *a, **k)


class DropsSystemPastForty(OneSecondCompress):
    """Buggy (V4): past 40 messages the system prompt is dropped; compress() takes 1 s."""

    @property
    def name(self) -> str:
        """The engine's name (A1: a property)."""
        return "drops-system-past-forty"

    def compress(self, messages: list[dict[str, Any]], *a: Any, **k: Any) -> list[dict[str, Any]]:
        """OneSecondCompress, minus message 0 when the input is longer than 40 messages."""
        out = super().compress(messages, *a, **k)
        if len(messages) > 40 and out and out[0].get("role") == "system":
            return out[1:]
        return out
