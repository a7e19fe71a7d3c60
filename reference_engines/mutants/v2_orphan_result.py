"""Mutant for V2: cuts the tail exactly ``keep_last`` from the end, even inside a tool group."""

from reference_engines.mutants._base import SUMMARY_PREFIX, MinimalEngine, live_turn_start
from simulator.provider.tokens import count_messages


class OrphanToolResult(MinimalEngine):
    """Breaks V2 only: a tail may start with tool results whose assistant call was summarised."""

    mutant_of = "V2"

    def _compress(self, messages):
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = len(body) - self.keep_last  # the defect: no safe_tail_start()
        for back in range(4):  # prefer a cut right at a nearby tool result, so the defect shows
            if start - back > 0 and body[start - back].get("role") == "tool":
                start -= back
                break
        tail = [dict(m) for m in body[start:]]
        ask = live_turn_start(body, len(body))
        if ask < start:  # the live ask stays verbatim (A8): only V2 is broken
            tail = [dict(body[ask])] + tail
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        return (
            head + [{"role": role, "content": f"{SUMMARY_PREFIX} {start} earlier messages."}] + tail
        )
