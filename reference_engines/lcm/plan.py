"""Where a pass cuts the transcript: head, compressible middle, tail (A4, V2, V4).

``split`` is pure and linear: it reads each message's token count once.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, List, Optional, Sequence

from .messages import pair_safe_end, pair_safe_start


@dataclass(frozen=True)
class Split:
    """Cut points of one pass: ``messages[:head_end]`` head, ``[head_end:tail_start]`` middle,
    ``[tail_start:]`` tail. ``head_end <= tail_start``."""

    head_end: int
    tail_start: int

    @property
    def middle_len(self) -> int:
        """Number of messages in the compressible middle."""
        return self.tail_start - self.head_end


def split(
    messages: Sequence[Mapping[str, Any]],
    tokens: Sequence[int],
    *,
    protect_first_n: int,
    protect_last_n: int,
    tail_budget: Optional[int],
    tail_hard_cap: Optional[int],
    has_summary: bool,
    last_carrier_index: Optional[int],
) -> Split:
    """Choose the head and tail of a pass.

    - Head (V4): a leading system message stays first. Before the first compaction the
      first ``protect_first_n`` messages after it are kept too; once a summary exists
      (``has_summary``) only the system message is, so old openings do not stay verbatim
      forever (same rule as B3). The head never ends between a call and its results (V2).
    - Tail: walks back from the end, keeping at least ``protect_last_n`` messages while
      they fit ``tail_hard_cap`` tokens (always at least one), then more while the total
      fits ``tail_budget`` tokens. With no budget (no update_model yet) it keeps exactly
      ``protect_last_n``. The tail never starts on a ``tool`` message (V2): it moves
      forward past the results, or back to their call when nothing would remain.
    - A previous summary carrier never stays in the tail: the tail starts after it.

    Args:
        messages: the compress() input, in order.
        tokens: token count of each message (same length as ``messages``).
    Returns:
        :class:`Split`.
    """
    n = len(messages)
    head = 1 if n and messages[0].get("role") == "system" else 0
    if not has_summary:
        head = min(n, head + max(0, int(protect_first_n)))
        head = pair_safe_end(messages, head)
    i = n
    used = 0
    kept = 0
    while i > head:
        t = tokens[i - 1]
        if kept < protect_last_n:
            if kept >= 1 and tail_hard_cap is not None and used + t > tail_hard_cap:
                break
        elif tail_budget is None or used + t > tail_budget:
            break
        used += t
        kept += 1
        i -= 1
    tail = i
    if last_carrier_index is not None and last_carrier_index >= tail:
        tail = last_carrier_index + 1
    if tail < n and messages[tail].get("role") == "tool":
        forward = pair_safe_end(messages, tail)
        tail = forward if forward < n else pair_safe_start(messages, tail, head)
        if last_carrier_index is not None and tail <= last_carrier_index:
            tail = forward
    return Split(head_end=head, tail_start=max(head, tail))


def tool_pairs_ok(messages: Sequence[Mapping[str, Any]]) -> List[str]:
    """Problems with tool pairing (V2) in ``messages``; [] when every call and result match.

    Used by the engine's self-check and by tests. Each problem is a sentence naming the index.
    """
    problems: List[str] = []
    open_calls: dict = {}
    for idx, m in enumerate(messages):
        role = m.get("role")
        if role == "assistant":
            for call in m.get("tool_calls") or ():
                cid = call.get("id") if isinstance(call, Mapping) else None
                if cid is not None:
                    open_calls[cid] = open_calls.get(cid, 0) + 1
        elif role == "tool":
            cid = m.get("tool_call_id")
            if open_calls.get(cid, 0) <= 0:
                problems.append(f"tool message at index {idx} answers {cid!r}, which no earlier assistant call awaits")
            else:
                open_calls[cid] -= 1
    for cid, count in open_calls.items():
        if count > 0:
            problems.append(f"assistant call {cid!r} has no tool result")
    return problems
