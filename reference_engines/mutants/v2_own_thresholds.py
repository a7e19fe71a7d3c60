"""V2 on an engine's own thresholds: a lossless-context-style engine (LCM) that compacts only
once the rows before its fresh tail hold a whole leaf (``leaf_tokens``, its own setting, not a
share of the window), and its correct twin.

Histories sized from ``threshold_tokens`` never reach its leaf size, so a V2 fault in its cut
hides from drawn examples; the kit first probes where the engine compacts and tries that size
(conformance.checks.engine_calls.compaction_point).
"""

from __future__ import annotations

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine, safe_tail_start
from simulator.provider.tokens import count_messages


class LeafTailEngine(MinimalEngine):
    """Correct: compacts the rows before a fresh tail of ``fresh_tail`` messages into one leaf
    summary once they hold at least ``leaf_tokens`` tokens (else it declines: the input list
    back); the tail never starts on a tool result cut from its call (V2)."""

    leaf_tokens = 20_000
    fresh_tail = 12

    @property
    def name(self) -> str:
        return "leaf-tail"

    def _cut(self, body):
        """Where the fresh tail starts in ``body`` (the rows after the system prompt)."""
        return safe_tail_start(body, len(body) - self.fresh_tail)

    def _compress(self, messages):
        self.compression_count += 1  # A6 (seeds): counts every call
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        older = body[: -self.fresh_tail]
        if len(body) <= self.fresh_tail or count_messages(older) < self.leaf_tokens:
            return messages  # declined: no whole leaf before the fresh tail yet
        start = self._cut(body)
        if start <= 0:
            return messages
        tail = [dict(m) for m in body[start:]]
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        leaf = {"role": role, "content": f"{SUMMARY_PREFIX} leaf of {start} earlier messages."}
        return head + [leaf] + tail


class LeafCutSplitsToolTurn(LeafTailEngine):
    """Breaks V2 only: the fresh tail is cut exactly ``fresh_tail`` messages from the end, so
    when that falls between a call and its result the tail starts on an orphan tool result."""

    mutant_of = "V2"

    def _cut(self, body):
        return len(body) - self.fresh_tail  # the defect: no safe_tail_start()
