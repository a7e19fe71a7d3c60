"""A3 (should_compress's answer): the threshold after a model switch, and the argument.

``should_compress(prompt_tokens)`` answers for ``prompt_tokens`` when the host passes it (its
pre-call estimate) and for the last real usage otherwise, against the threshold of the model
now in use. Two ways authors get it wrong, each with its fix:

- ``CachesFirstThreshold`` (mutant) computes its trigger once, at the first
  ``update_model()``, and keeps it after a switch to a smaller model (``threshold_tokens``
  itself follows the switch, so a check reading only the attribute passes).
  ``ThresholdFromUpdateModel`` (its twin) recomputes the trigger at every update_model().
- ``IgnoresPromptTokens`` (mutant) always answers for ``last_prompt_tokens``, the previous
  call's usage, whatever the host's estimate says. ``HonoursPromptTokens`` (its twin) uses
  the argument when given.
"""

from __future__ import annotations

from reference_engines.mutants._base import MinimalEngine


class ThresholdFromUpdateModel(MinimalEngine):
    """Correct twin: its own trigger, recomputed at every update_model()."""

    trigger: int = 0

    @property
    def name(self) -> str:
        return "own-trigger"

    def update_model(self, model, context_length, **kwargs):
        super().update_model(model, context_length, **kwargs)
        self.trigger = self.threshold_tokens

    def should_compress(self, prompt_tokens=None):
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if self.ineffective_passes >= self.max_ineffective:
            return False
        return tokens >= self.trigger > 0


class CachesFirstThreshold(ThresholdFromUpdateModel):
    """Breaks A3 only: the trigger of the first model survives a model switch."""

    mutant_of = "A3"

    def update_model(self, model, context_length, **kwargs):
        MinimalEngine.update_model(self, model, context_length, **kwargs)
        if not self.trigger:  # the defect: computed once
            self.trigger = self.threshold_tokens


class HonoursPromptTokens(MinimalEngine):
    """Correct twin: the host's estimate wins when it is passed."""

    @property
    def name(self) -> str:
        return "estimate-aware"


class IgnoresPromptTokens(HonoursPromptTokens):
    """Breaks A3 only: should_compress reads the previous usage, never its argument."""

    mutant_of = "A3"

    def should_compress(self, prompt_tokens=None):
        if self.ineffective_passes >= self.max_ineffective:
            return False
        return self.last_prompt_tokens >= self.threshold_tokens > 0  # the defect
