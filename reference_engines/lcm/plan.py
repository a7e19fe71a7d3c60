"""Where a pass cuts the transcript: head, compressible middle, tail (A4, V2, V4).

``split`` is pure and linear: it reads each message's token count once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    tail_budget: int | None,
    tail_hard_cap: int | None,
    has_summary: bool,
    last_carrier_index: int | None,
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


def tool_pairs_ok(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Problems with tool pairing (V2) in ``messages``; [] when every call and result match.

    Used by the engine's self-check and by tests. Each problem is a sentence naming the index.
    """
    problems: list[str] = []
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
                problems.append(
                    f"tool message at index {idx} answers {cid!r}, "
                    "which no earlier assistant call awaits"
                )
            else:
                open_calls[cid] -= 1
    for cid, count in open_calls.items():
        if count > 0:
            problems.append(f"assistant call {cid!r} has no tool result")
    return problems


_TURN_ROLES = ("user", "assistant")


def roles_clash(prev_role: str | None, next_role: str | None) -> bool:
    """True when no carrier role fits between ``prev_role`` and ``next_role`` (B5).

    That is the case exactly when both neighbours are turn roles (``user``/``assistant``)
    and differ: a ``user`` carrier would touch one, an ``assistant`` carrier the other.
    """
    return prev_role in _TURN_ROLES and next_role in _TURN_ROLES and prev_role != next_role


def align_roles(
    messages: Sequence[Mapping[str, Any]],
    tokens: Sequence[int],
    cut: Split,
    *,
    tail_budget: int | None,
    last_carrier_index: int | None,
) -> Split:
    """Move the tail start so the summary carrier can take a role that touches neither
    neighbour (B5: no two same-role messages adjacent around the summary).

    When the head ends on one turn role and the tail starts on the other
    (:func:`roles_clash`), the tail must start on the head's last role instead, so the
    carrier takes the remaining role. Candidates are message indices with that role (a
    ``user`` message, or an ``assistant`` message whose results follow it, so V2 holds):

    1. backward, into the middle, the nearest one that leaves the middle non-empty, stays
       after any previous carrier and keeps the tail within ``tail_budget`` tokens;
    2. forward, into the tail, the nearest one that keeps a ``user`` message in the tail
       when the tail had one (the latest ask is never summarised);
    3. backward again, ignoring the budget.

    With no candidate (e.g. a tail of one tool loop after a head ending on its user
    message) the cut is returned unchanged; the carrier then touches an assistant
    message that carries ``tool_calls``, or the host's alternation repair merges it (U5).

    Args:
        messages: the compress() input; ``tokens``: cl100k count of each message.
        cut: the :func:`split` result.
        tail_budget: tail token budget (None: unbounded).
        last_carrier_index: index of the latest previous carrier in ``messages``, if any.
    Returns:
        :class:`Split` with the same ``head_end`` and a possibly moved ``tail_start``.
    """
    n = len(messages)
    head, tail = cut.head_end, cut.tail_start
    if head <= 0 or tail >= n or tail <= head:
        return cut
    want = messages[head - 1].get("role")
    if not roles_clash(want, messages[tail].get("role")):
        return cut
    lowest = head + 1
    if last_carrier_index is not None:
        lowest = max(lowest, last_carrier_index + 1)
    tail_tokens = sum(tokens[tail:])
    backward = [j for j in range(tail - 1, lowest - 1, -1) if messages[j].get("role") == want]
    for j in backward:
        if tail_budget is None or tail_tokens + sum(tokens[j:tail]) <= tail_budget:
            return Split(head_end=head, tail_start=j)
        break  # farther candidates only cost more
    last_user = max((k for k in range(tail, n) if messages[k].get("role") == "user"), default=None)
    for j in range(tail + 1, n):
        if messages[j].get("role") == want and (last_user is None or j <= last_user):
            return Split(head_end=head, tail_start=j)
    if backward:
        return Split(head_end=head, tail_start=backward[0])
    return cut
