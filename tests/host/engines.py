"""Small engines the host tests drive: a good baseline and engines that misbehave in one way."""

from __future__ import annotations

import threading
from typing import Any

from reference_engines.mutants._base import MinimalEngine


class Plain(MinimalEngine):
    """Overrides neither select_context nor on_turn_complete (H2: both skipped)."""


class FixedThreshold(MinimalEngine):
    """Compresses whenever asked by the host at or over ``threshold_tokens``."""


class Selecting(MinimalEngine):
    """select_context returns ``self.answer`` (or calls it when callable) and counts calls."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.select_calls: list[dict[str, Any]] = []

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        **kwargs,
    ):
        self.select_calls.append(
            {
                "request": request_messages,
                "conversation": conversation_messages,
                "incoming": incoming_message,
                "budget": budget_tokens,
            }
        )
        if callable(self.answer):
            return self.answer(request_messages, conversation_messages, incoming_message)
        return self.answer


class Observing(MinimalEngine):
    """on_turn_complete records its arguments; ``raise_in_hook`` makes it raise."""

    def __init__(self, raise_in_hook: bool = False, mutate: bool = False) -> None:
        self.raise_in_hook = raise_in_hook
        self.mutate = mutate
        self.turns: list[dict[str, Any]] = []

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self.turns.append({"messages": messages, "usage": usage, "kwargs": kwargs})
        if self.mutate:
            messages[-1]["content"] = "EDITED BY ENGINE"
            messages.append({"role": "user", "content": "injected"})
        if self.raise_in_hook:
            raise RuntimeError("observer exploded")


class Hanging(MinimalEngine):
    """compress() blocks until ``release`` is set (TS1/TS2 timeouts), then compacts."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.finished = threading.Event()

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.entered.set()
        self.release.wait(10)
        try:
            return [messages[0], {"role": "user", "content": "late summary"}, messages[-1]]
        finally:
            self.finished.set()


class Mutating(MinimalEngine):
    """compress() edits its input in place, then returns ``result`` (default: the input object)."""

    def __init__(self, commit: bool = False) -> None:
        self.commit = commit

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        for m in messages:
            if m.get("role") == "user":
                m["content"] = "MUTATED"
        if self.commit:
            return [dict(m) for m in messages[:1]] + [dict(messages[-1])]
        return messages


class Locked(MinimalEngine):
    """Holds a lock: ``copy.deepcopy`` fails (C3 without a clone hook)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()


class RaisingClone(MinimalEngine):
    """clone_for_agent raises (C3)."""

    def clone_for_agent(self):
        raise RuntimeError("cannot clone: holds a live connection")


class CountingClone(MinimalEngine):
    """clone_for_agent counts its calls and returns a fresh instance."""

    clones = 0

    def clone_for_agent(self):
        type(self).clones += 1
        return CountingClone()


class PolicyOwner(MinimalEngine):
    """K2: overrides update_model and ignores model_thresholds (owns its policy)."""

    def update_model(
        self, model, context_length, base_url="", api_key="", provider="", api_mode="", **kw
    ):
        self.context_length = int(context_length)
        self.threshold_tokens = int(context_length * 0.6)


def always_compress(engine: Any) -> Any:
    """Make ``engine.should_compress`` say True on every call with a positive figure, and its
    compress() compact whatever the size (a tiny threshold), so every pass moves rows."""
    engine.should_compress = lambda prompt_tokens=None: bool(prompt_tokens and prompt_tokens > 0)
    engine.threshold_percent = 1e-4
    return engine
