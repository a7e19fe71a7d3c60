"""A starter context engine: the system prompt, one summary message, the last messages.

Copy it and change what you need. It passes every check of the kit on the documented host and
the Hermes 0.19 and 0.22 host profiles (tests/docs/test_starter_engine.py runs it), and shows
the points that the kit's checks most often find missing in a first engine:

- the tail never starts on a tool result, and keeps the live ask (the last user message)
  verbatim (V2, A8);
- kept rows are copied whole, every provider field included (V7), never rebuilt;
- a pass that would not shrink the history declines and returns its input, and after two
  ineffective passes the engine stops asking for compaction (A3, A9);
- the summary folds the previous one in and keeps only its newest lines, so it stays bounded
  over many compactions (A10, A11);
- the summary's role never repeats its neighbour's (B5).

Run the kit on it: ``context-engine-kit check starter_engine:StarterEngine`` with this folder
on ``PYTHONPATH``.
"""

from __future__ import annotations

import copy
from typing import Any

from agent.context_engine import ContextEngine

try:
    import tiktoken

    _ENC = tiktoken.get_encoding("cl100k_base")

    def count_text(text: str) -> int:
        return len(_ENC.encode(text, disallowed_special=()))
except Exception:  # pragma: no cover - tiktoken missing: a rough count

    def count_text(text: str) -> int:
        return len(text) // 4 + 1


SUMMARY_PREFIX = "[Summary of earlier conversation]"


def text_of(msg: dict[str, Any]) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return " ".join(
            p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def count_msg(msg: dict[str, Any]) -> int:
    n = 4 + count_text(text_of(msg))
    for tc in msg.get("tool_calls") or []:
        fn = tc.get("function") or {}
        n += count_text(str(fn.get("name", ""))) + count_text(str(fn.get("arguments", "")))
    return n


class StarterEngine(ContextEngine):
    """Keep the system prompt and the last ``keep_last`` messages; summarise the middle."""

    def __init__(self, keep_last: int = 6, line_chars: int = 100, max_lines: int = 24) -> None:
        self.max_lines = max_lines
        self._judge_next_usage = False
        self.keep_last = keep_last
        self.protect_last_n = keep_last
        self.protect_first_n = 1
        self.line_chars = line_chars
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.threshold_tokens = 0
        self.context_length = 0
        self.compression_count = 0
        self._ineffective = 0

    @property
    def name(self) -> str:
        return "starter"

    def update_from_response(self, usage: dict[str, Any]) -> None:
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
        self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)
        if self._judge_next_usage and self.threshold_tokens:
            # the first real usage after a compaction judges it
            if self.last_prompt_tokens >= self.threshold_tokens:
                self._ineffective += 1
            else:
                self._ineffective = 0
            self._judge_next_usage = False

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if tokens is None or tokens < 0 or self.threshold_tokens <= 0:
            return False
        if self._ineffective >= 2:
            return False
        return tokens >= self.threshold_tokens

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self._ineffective = 0

    def update_model(self, *args: Any, **kwargs: Any) -> None:
        super().update_model(*args, **kwargs)
        self._ineffective = 0

    # -- compress -------------------------------------------------------------
    def _tail_start(self, messages: list[dict[str, Any]], first: int) -> int:
        start = max(first, len(messages) - self.keep_last)
        # never start the tail on a tool result: move back to its assistant call
        while start > first and messages[start].get("role") == "tool":
            start -= 1
        # keep the last user message (the live ask) verbatim
        for i in range(len(messages) - 1, first - 1, -1):
            if messages[i].get("role") == "user":
                start = min(start, i)
                break
        return start

    def _summarise(self, middle: list[dict[str, Any]]) -> str:
        head = [SUMMARY_PREFIX, f"{len(middle)} earlier messages were condensed:"]
        lines: list[str] = []
        for m in middle:
            t = text_of(m)
            if t.startswith(SUMMARY_PREFIX):
                # fold a previous summary in whole (its facts carry forward)
                lines.extend(line for line in t.splitlines()[2:] if line.strip())
                continue
            role = m.get("role", "?")
            if m.get("tool_calls"):
                names = ", ".join(
                    (tc.get("function") or {}).get("name", "?") for tc in m["tool_calls"]
                )
                t = (t + f" (called: {names})").strip()
            t = " ".join(t.split())[: self.line_chars]
            if t:
                lines.append(f"- {role}: {t}")
        # bounded: keep the newest max_lines items
        return "\n".join(head + lines[-self.max_lines :])

    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        self.compression_count += 1
        first = 1 if messages and messages[0].get("role") == "system" else 0
        start = self._tail_start(messages, first)
        middle = messages[first:start]
        if not middle:
            self._ineffective += 1
            return messages  # nothing to compact: decline (counts as ineffective)
        summary = self._summarise(middle)
        if count_text(summary) + 4 >= sum(count_msg(m) for m in middle):
            self._ineffective += 1
            return messages  # nothing to gain: decline
        tail = messages[start:]
        before = messages[first - 1]["role"] if first else None
        after = tail[0].get("role") if tail else None
        role = "assistant" if after == "user" else "user"
        if role == before:
            role = "assistant" if role == "user" else "user"
        self._judge_next_usage = True
        out = [copy.deepcopy(m) for m in messages[:first]]
        out.append({"role": role, "content": summary})
        out.extend(copy.deepcopy(m) for m in tail)
        return out
