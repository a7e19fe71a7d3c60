"""Mutant of section S (S0): the structural gate."""

from __future__ import annotations

from reference_engines.mutants._base import MinimalEngine


class QuacksLikeAnEngine:
    """Breaks S0: has the whole surface (delegated to a MinimalEngine) but is not a ContextEngine
    subclass."""

    mutant_of = "S0"

    def __init__(self):
        object.__setattr__(self, "_inner", MinimalEngine())

    @property
    def name(self):
        return "quacks"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return getattr(object.__getattribute__(self, "_inner"), attr)

    def __setattr__(self, attr, value):
        setattr(object.__getattribute__(self, "_inner"), attr, value)

    def update_from_response(self, usage):
        return self._inner.update_from_response(usage)

    def should_compress(self, prompt_tokens=None):
        return self._inner.should_compress(prompt_tokens)

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        return self._inner.compress(messages, current_tokens, focus_topic, **kwargs)

    def clone_for_agent(self):
        clone = QuacksLikeAnEngine()
        object.__setattr__(clone, "_inner", self._inner.clone_for_agent())
        return clone

    def __deepcopy__(self, memo):
        return self.clone_for_agent()
