"""A small, correct engine that mutants derive from, each breaking exactly one clause.

``MinimalEngine`` keeps the system prompt, replaces the middle with one summary message
and keeps a tail that never starts on an orphan tool result (V2). It passes every check
that applies to it; a mutant overrides one method to break one clause.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from agent.context_engine import ContextEngine

from simulator.provider.tokens import count_messages

SUMMARY_PREFIX = "[Summary of earlier conversation]"


def safe_tail_start(messages: List[Dict[str, Any]], start: int) -> int:
    """Move ``start`` back so the tail does not begin with tool results cut from their call (V2)."""
    while 0 < start < len(messages) and messages[start].get("role") == "tool":
        start -= 1
    return start


class MinimalEngine(ContextEngine):
    """Correct minimal engine: threshold 0.5, keeps system + a summary + the last 4 messages."""

    conformance_capabilities = frozenset()
    threshold_percent = 0.5
    keep_last = 4

    @property
    def name(self) -> str:
        return "minimal"

    def update_from_response(self, usage: Dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)

    def should_compress(self, prompt_tokens: Optional[int] = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens > 0

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1  # A6 (seeds): counts every call
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head):]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = safe_tail_start(body, len(body) - self.keep_last)
        tail = [dict(m) for m in body[start:]]
        if start == 0:
            return list(messages)
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        summary = {"role": role, "content": f"{SUMMARY_PREFIX} {start} earlier messages were compacted."}
        return head + [summary] + tail
