"""A5 (focus topic) for an engine that writes its own summary prompt to the host's LLM.

``FocusInPrompt`` (the correct twin) is the fail-closed LLM summariser of
:mod:`reference_engines.mutants.a4_summary_failure` that declares ``focus`` and tells the
model the topic (``Focus on: TOPIC. Keep every fact about it.``), as authors write it.
``ForgetsFocusInPrompt`` (the mutant) declares ``focus`` too but builds the same prompt
without the topic: ``compress(focus_topic=...)`` is accepted and ignored, so a fact about the
topic deep in the middle is summarised like any other sentence and lost.
"""

from __future__ import annotations

from typing import Any

from agent.auxiliary_client import call_llm

from reference_engines.mutants._base import spaced_text
from reference_engines.mutants.a4_summary_failure import PROMPT, FailClosedSummariser


class FocusInPrompt(FailClosedSummariser):
    """Correct twin: the focus topic goes into the summary prompt."""

    conformance_capabilities = frozenset({"focus"})

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        """Keep ``focus_topic`` for the summary prompt of this pass (A5), then compact."""
        self._focus = focus_topic
        try:
            return super().compress(messages, current_tokens, focus_topic, **kwargs)
        finally:
            self._focus = None

    def focus_line(self) -> str:
        """The prompt's focus instruction ("" without a topic)."""
        topic = getattr(self, "_focus", None)
        return f"Focus on: {topic}. Keep every fact about it.\n\n" if topic else ""

    def summarise(self, middle: list[dict[str, Any]]) -> str:
        """The summary of ``middle`` from the host's LLM, told the focus topic."""
        prompt = (
            PROMPT
            + self.focus_line()
            + "\n\n".join(f"[{m.get('role')}]: {spaced_text(m)}" for m in middle)
        )
        response = call_llm(task="compression", messages=[{"role": "user", "content": prompt}])
        text = (response.choices[0].message.content or "").strip()
        if not text:
            raise RuntimeError("the summary model returned empty content")
        return text


class ForgetsFocusInPrompt(FocusInPrompt):
    """Breaks A5 (SHOULD) only: declares ``focus`` and accepts the topic, but its prompt never
    names it."""

    mutant_of = "A5"

    def focus_line(self) -> str:
        return ""  # the defect: the topic never reaches the model
