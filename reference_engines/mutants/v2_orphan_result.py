"""Mutant for V2: cuts the tail exactly ``keep_last`` from the end, even inside a tool group."""

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine
from simulator.provider.tokens import count_messages


class OrphanToolResult(MinimalEngine):
    """Breaks V2 only: a tail may start with tool results whose assistant call was summarised."""

    mutant_of = "V2"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head):]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = len(body) - self.keep_last  # the defect: no safe_tail_start()
        while start > 0 and body[start].get("role") != "tool" and any(m.get("role") == "tool" for m in body[:start]):
            start -= 1  # prefer a cut right at a tool result, so the defect shows
        tail = [dict(m) for m in body[start:]]
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return head + [{"role": role, "content": f"{SUMMARY_PREFIX} {start} earlier messages."}] + tail
