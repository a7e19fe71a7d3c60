"""A4 (summary failure): an engine that summarises the middle with the host's LLM, as plugin
authors write one, and what it does when the summary call fails.

``FailClosedSummariser`` (the correct twin, the fix as shipped: fail closed) calls
``agent.auxiliary_client.call_llm(task="compression", ...)`` for the summary of the middle;
when the call raises (the summary model's context is too small, a 5xx after Hermes'
retries, a timeout) or answers with no text, it logs a warning and returns its input list
itself, the host's no-op signal: nothing is lost and the host commits nothing.

``DropsMiddleOnFailure`` (the mutant) does what seed 002's B4 text described and Hermes main
replaced: on a failed summary it returns the head and the tail with nothing for the middle,
so the conversation silently loses everything in between. ``EmptySummaryOnFailure`` (the
mutant as authors write it) catches the failure and carries on with an empty summary: the
carrier message is there, with its heading and nothing else. ``StandInOnFailure`` (its
correct twin) puts a deterministic stand-in there that says what was removed and why.
"""

from __future__ import annotations

import logging
from typing import Any

from agent.auxiliary_client import call_llm

from reference_engines.mutants._base import (
    MinimalEngine,
    live_turn_start,
    safe_tail_start,
    spaced_text,
)
from simulator.provider.tokens import count_messages

log = logging.getLogger("reference_engines.mutants.a4_summary_failure")

SUMMARY_PREFIX = "[Summary of earlier turns]"
PROMPT = (
    "Summarise these conversation turns for a handoff. Keep decisions, files and open "
    "questions.\n\n"
)

EARLIER = "\n\nEarlier summary:\n"


def previous_summary(rows: list[dict[str, Any]]) -> str:
    """The text the last summary among ``rows`` wrote itself (without the earlier summary it
    carried), or ""."""
    for m in reversed(rows):
        content = m.get("content")
        if isinstance(content, str) and content.startswith(SUMMARY_PREFIX):
            return content[len(SUMMARY_PREFIX) :].strip().split(EARLIER.strip("\n"))[0].strip()
    return ""


class FailClosedSummariser(MinimalEngine):
    """Correct twin: system prompt + an LLM summary of the middle + the last 4 messages; a
    failed summary call returns the input list itself (declined, nothing lost)."""

    @property
    def name(self) -> str:
        return "llm-summary"

    def summarise(self, middle: list[dict[str, Any]]) -> str:
        """The summary of ``middle`` from the host's LLM (``call_llm(task="compression")``).

        Raises:
            Exception: whatever the call raises; RuntimeError for an empty reply.
        """
        prompt = PROMPT + "\n\n".join(f"[{m.get('role')}]: {spaced_text(m)}" for m in middle)
        response = call_llm(task="compression", messages=[{"role": "user", "content": prompt}])
        text = (response.choices[0].message.content or "").strip()
        if not text:
            raise RuntimeError("the summary model returned empty content")
        return text

    def on_summary_failure(self, messages, head, tail, exc):
        """A failed summary: decline (the input list itself, the host's no-op signal)."""
        log.warning("summary failed (%s); compaction declined, nothing dropped", exc)
        return messages

    def _compress(self, messages):
        self.compression_count += 1  # A6 (seeds): counts every call
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return messages
        start = min(
            safe_tail_start(body, len(body) - self.keep_last), live_turn_start(body, len(body))
        )  # the live ask stays verbatim (A8)
        if start == 0:
            return messages
        tail = [dict(m) for m in body[start:]]
        try:
            text = self.summarise(body[:start])
        except Exception as exc:  # noqa: BLE001  (any failure of the summary call)
            return self.on_summary_failure(messages, head, tail, exc)
        earlier = previous_summary(body[:start])
        if earlier:  # the previous summary's own text goes on (A10), once (A11 stays bounded)
            text += EARLIER + earlier
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return head + [{"role": role, "content": f"{SUMMARY_PREFIX}\n{text}"}] + tail


class DropsMiddleOnFailure(FailClosedSummariser):
    """Breaks A4 only: a failed summary drops the middle with nothing in its place."""

    mutant_of = "A4"

    def on_summary_failure(self, messages, head, tail, exc):
        log.warning("summary failed (%s); dropping the middle with no summary", exc)
        return head + tail  # the defect: head + tail, nothing for the middle


class EmptySummaryOnFailure(FailClosedSummariser):
    """Breaks A4 only: a failed summary becomes an empty one, so the carrier message holds
    only its heading (``[Summary of earlier turns]``) where the removed messages were."""

    mutant_of = "A4"

    def on_summary_failure(self, messages, head, tail, exc):
        log.warning("summary failed (%s); continuing with an empty summary", exc)
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return head + [{"role": role, "content": f"{SUMMARY_PREFIX}\n"}] + tail  # the defect


class StandInOnFailure(FailClosedSummariser):
    """Correct twin: a failed summary puts a deterministic stand-in where the middle was,
    saying how many messages were removed and why (the range is covered, nothing silent)."""

    def on_summary_failure(self, messages, head, tail, exc):
        log.warning("summary failed (%s); a stand-in replaces the middle", exc)
        removed = len(messages) - len(head) - len(tail)
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        text = (
            f"{SUMMARY_PREFIX}\nSummary unavailable: {removed} earlier messages were removed "
            f"because the summary model failed ({type(exc).__name__}). Ask the user to restate "
            "anything from them that still matters."
        )
        return head + [{"role": role, "content": text}] + tail
