"""Mutant for V4: compacts correctly but drops the system prompt from the output."""

from reference_engines.mutants._base import MinimalEngine


class DropsSystemPrompt(MinimalEngine):
    """Breaks V4 only."""

    mutant_of = "V4"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        if (
            out is not messages
            and out
            and out[0].get("role") == "system"
            and len(out) != len(messages)
        ):
            return out[1:]  # the defect
        return out
