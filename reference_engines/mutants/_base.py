"""A small, correct engine that mutants derive from, each breaking exactly one clause.

``MinimalEngine`` keeps the system prompt, replaces the middle with one summary message
and keeps a tail that never starts on an orphan tool result (V2). It passes every check
that applies to it; a mutant overrides one method to break one clause.
"""

from __future__ import annotations

from typing import Any

from agent.context_engine import ContextEngine

from simulator.provider.tokens import count_messages

SUMMARY_PREFIX = "[Summary of earlier conversation]"


def spaced_text(m: dict[str, Any]) -> str:
    """The text of a message's content: a string, or its text parts joined by spaces."""
    c = m.get("content")
    if isinstance(c, list):
        return " ".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return c if isinstance(c, str) else ""


def safe_tail_start(messages: list[dict[str, Any]], start: int) -> int:
    """Move ``start`` back so the tail does not begin with tool results cut from their call (V2)."""
    while 0 < start < len(messages) and messages[start].get("role") == "tool":
        start -= 1
    return start


def live_turn_start(messages: list[dict[str, Any]], default: int) -> int:
    """Index of the live ask (A8): the last user message when no plain assistant reply follows
    it (the turn is still running: the history ends on the ask or on its tool loop); else
    ``default``."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user":
            return i
        if m.get("role") == "assistant" and not m.get("tool_calls"):
            return default
    return default


class MinimalEngine(ContextEngine):
    """Correct minimal engine: threshold 0.5, keeps system + a summary + the last 4 messages
    (more when they would start on a tool result)."""

    conformance_capabilities = frozenset()
    threshold_percent = 0.5
    keep_last = 4

    @property
    def name(self) -> str:
        return "minimal"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)

    #: A3 (host practice): stop asking after this many ineffective passes in a row.
    max_ineffective = 2
    ineffective_passes = 0

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if self.ineffective_passes >= self.max_ineffective:
            return False
        return tokens >= self.threshold_tokens > 0

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self.ineffective_passes = 0

    #: A9: a compaction that would count more tokens than its input is not committed (the
    #: input comes back unchanged). The A9 mutant turns this off.
    keeps_smaller_input = True

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = self._compress(messages)
        before = count_messages(messages)
        after = count_messages(out) if isinstance(out, list) else None
        if self.keeps_smaller_input and after is not None and after > before:
            out, after = list(messages), before
        if before >= self.threshold_tokens > 0:  # an attempt over the threshold: did it help?
            after = count_messages(out) if after is None else after
            self.ineffective_passes = self.ineffective_passes + 1 if after > 0.9 * before else 0
        return out

    def _compress(self, messages):
        """The compaction itself (mutants override this); returns the new list."""
        self.compression_count += 1  # A6 (seeds): counts every call
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = min(
            safe_tail_start(body, len(body) - self.keep_last), live_turn_start(body, len(body))
        )
        tail = [dict(m) for m in body[start:]]
        if start == 0:
            return list(messages)
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        summary = {
            "role": role,
            "content": f"{SUMMARY_PREFIX} {start} earlier messages were compacted.",
        }
        return head + [summary] + tail


class HookedEngine(MinimalEngine):
    """MinimalEngine plus the optional hooks and one tool, all correct (base for H/O/T mutants).

    - select_context (H3, H6): for requests of more than 8 messages, the system prompt plus
      a tail of at least 6 messages (never starting on a tool result); None otherwise. The tail's
      first message moves in steps of ``window_step`` messages, so the request's prefix stays
      the same for several turns and the provider's prompt cache keeps hitting (H6); a window
      that slid by one message every turn would re-write the cache every turn.
    - on_turn_complete (H5): counts turns and records the uids seen, read-only.
    - get_tool_schemas / handle_tool_call (T1, T2): one tool, ``context_recall(query)``.
    """

    keep_selected = 6
    window_step = 8

    def __init__(self) -> None:
        self.turns_seen = 0
        self.uids_seen: list[str] = []

    @property
    def name(self) -> str:
        return "hooked"

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        **kwargs,
    ):
        if len(request_messages) <= 8:
            return None
        head = [dict(request_messages[0])] if request_messages[0].get("role") == "system" else []
        body = request_messages[len(head) :]
        latest = max(len(body) - self.keep_selected, 0)
        start = safe_tail_start(body, latest - latest % self.window_step)
        return head + [dict(m) for m in body[start:]]

    def on_turn_complete(self, messages, usage=None, **kwargs):
        self.turns_seen += 1
        self.uids_seen.extend(
            m["message_uid"] for m in messages if isinstance(m, dict) and "message_uid" in m
        )
        del self.uids_seen[:-1000]

    def tool_parameters(self) -> dict[str, Any]:
        """JSON Schema of ``context_recall`` arguments (T1)."""
        return {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what to recall"}},
            "required": ["query"],
        }

    def get_tool_schemas(self):
        return [
            {
                "name": "context_recall",
                "description": "Search the compacted conversation.",
                "parameters": self.tool_parameters(),
            }
        ]

    def handle_tool_call(self, name, args, **kwargs):
        import json

        if name == "context_recall":
            return json.dumps({"query": args.get("query"), "matches": []})
        return json.dumps({"error": f"Unknown tool: {name}"})
