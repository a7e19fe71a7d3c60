"""Phase 2 of the reference compressor: head and tail boundaries (contract B3).

All functions take the message list and, where tokens matter, a callable
``tokens_of(i) -> int`` giving the cl100k tokens of row ``i`` (cached by the caller).
They only read rows and walk from the end, so their cost is bounded by the tail, not
by the history (except :func:`last_real_user`, a backward scan that stops at its hit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reference_engines._compressor.constants import MIN_MIDDLE_ROWS
from reference_engines._compressor.messages import is_real_user

Rows = Sequence[Mapping[str, Any]]
TokensOf = Callable[[int], int]


def align_forward(messages: Rows, idx: int) -> int:
    """B3: move a boundary forward past ``tool`` rows so no group is split at ``idx``."""
    n = len(messages)
    while idx < n and messages[idx].get("role") == "tool":
        idx += 1
    return idx


def align_backward(messages: Rows, idx: int) -> int:
    """B3: move a tail boundary back before the assistant whose tool results precede it.

    If the rows just before ``idx`` are tool results (or ``idx`` itself is one) and they
    answer an assistant ``tool_calls`` row, the boundary moves to that assistant row,
    so the whole call/result group lands on one side.
    """
    n = len(messages)
    if idx <= 0 or idx > n:
        return idx
    check = idx - 1
    while check >= 0 and messages[check].get("role") == "tool":
        check -= 1
    if (
        check >= 0
        and messages[check].get("role") == "assistant"
        and messages[check].get("tool_calls")
    ):
        if check < idx - 1 or (idx < n and messages[idx].get("role") == "tool"):
            return check
    return idx


def head_end(messages: Rows, protect_first_n: int) -> int:
    """B3 (seeds): index of the first row after the protected head, ``0 <= head <= n``.

    Head = the first ``protect_first_n`` rows, the system prompt included (seed 002:
    "[0..2] <- protect_first_n (system + first exchange)"; docs/contract-notes.md 1.5).
    When the row at the boundary is a ``tool`` result, the head shrinks back to before
    the assistant ``tool_calls`` row it answers, so a call/result group is never split
    and the head never exceeds ``protect_first_n`` rows. A system prompt at row 0 is
    always kept (V4), even with ``protect_first_n`` 0.
    """
    n = len(messages)
    end = min(n, max(0, protect_first_n))
    while 0 < end < n and messages[end].get("role") == "tool":
        end -= 1
    if n and messages[0].get("role") == "system":
        end = max(end, 1)
    return end


def head_end_decaying(messages: Rows, protect_first_n: int) -> int:
    """B3 host practice (Hermes MAIN, opt-in ``head_decay``): first row after the head.

    Head = the system prompt (if it is row 0) + ``protect_first_n`` further rows,
    extended forward past tool results so a call and its results stay together (the
    caller passes 0 after the first compaction, as Hermes MAIN does: docs/host.md).
    """
    n = len(messages)
    start = 1 if n and messages[0].get("role") == "system" else 0
    return align_forward(messages, min(n, start + max(0, protect_first_n)))


def first_summary_in(
    messages: Rows, stop: int, summary_of: Callable[[Mapping[str, Any]], Any]
) -> int:
    """B3/B6: index of the first row before ``stop`` that ``summary_of`` recognises, or -1.

    A summary is never kept as part of the protected head: the head ends before it, so
    it is updated (B6) instead of being kept verbatim next to its own update.
    """
    for i in range(min(stop, len(messages))):
        m = messages[i]
        if m.get("role") in ("user", "assistant") and summary_of(m) is not None:
            return i
    return -1


def protected_tail_start(n: int, tokens_of: TokensOf, budget: int, floor: int) -> int:
    """B2: first row of the tail that Phase 1 protects from pruning.

    Walks back from the end summing ``tokens_of`` until adding a row would pass
    ``budget`` tokens, keeping at least ``min(floor, n)`` rows.
    """
    floor = min(max(0, floor), n)
    acc = 0
    start = n
    for i in range(n - 1, -1, -1):
        t = tokens_of(i)
        if acc + t > budget and (n - i - 1) >= floor:
            break
        acc += t
        start = i
    return start


def tail_floor(available: int, protect_last_n: int) -> int:
    """B3 (seeds): rows the tail keeps whatever the token budget, given ``available`` rows after
    the head.

    ``protect_last_n`` itself, uncapped, whenever more rows than that follow the head
    (seed 002: protect_last_n = "minimum number of recent messages always kept
    unchanged"; docs/contract-notes.md 1.6), even if that leaves one row to summarise.
    With ``protect_last_n`` rows or fewer after the head the seeds say nothing; the
    engine then leaves 2 rows to summarise (one summary row replacing one row would not
    shorten the history), or keeps none when only 1 or 2 rows follow the head.
    """
    if available > protect_last_n:
        return protect_last_n
    return max(0, available - MIN_MIDDLE_ROWS)


def tail_cut(
    messages: Rows, head: int, tokens_of: TokensOf, budget: int, protect_last_n: int
) -> int:
    """B3: index where the verbatim tail starts (``head <= cut <= len(messages)``).

    Walk back from the end accumulating ``tokens_of`` until the next row would pass
    ``budget`` tokens; fall back to the :func:`tail_floor` count if the budget would
    protect fewer rows (seed 002: "falls back to the fixed protect_last_n count if the
    budget would protect fewer messages"). When everything fits the budget, the cut
    falls back to the floor so a compaction still makes progress. The cut is aligned
    backward so it never splits an assistant ``tool_calls`` row from its results (the
    tail only grows), and never reaches into the head. If that alignment leaves no row
    between head and tail while the floor is the seeds' ``protect_last_n``, the answer is
    ``head`` (nothing to compact: the floor wins); below that floor the cut moves forward
    past the group instead.
    """
    n = len(messages)
    available = n - head
    if available <= 0:
        return n
    min_tail = tail_floor(available, protect_last_n)
    acc = 0
    cut = n
    for i in range(n - 1, head - 1, -1):
        t = tokens_of(i)
        if acc + t > budget and (n - i - 1) >= min_tail:
            break
        acc += t
        cut = i
    cut = min(cut, n - min_tail)
    if cut <= head:
        cut = max(n - min_tail, head + 1)
    cut = align_backward(messages, cut)
    if cut <= head:
        if min_tail >= protect_last_n:
            return head
        cut = align_forward(messages, head + 1)
    return min(cut, n)


def trailing_chain_start(messages: Rows) -> int:
    """V2/B3: index of the newest tool chain when the history ends mid chain, else ``n``.

    The history ends mid chain when its last assistant row carries ``tool_calls`` and only
    ``tool`` results (possibly none) follow it: the host compacts right after a tool result
    (its post-tool check) or while those calls still run. That chain stays verbatim in the
    tail, so the tail never starts after it.
    """
    n = len(messages)
    k = n
    while k > 0 and messages[k - 1].get("role") == "tool":
        k -= 1
    if k > 0 and messages[k - 1].get("role") == "assistant" and messages[k - 1].get("tool_calls"):
        return k - 1
    return n


def calls_in_flight(messages: Rows) -> bool:
    """V2: True when the newest tool chain (:func:`trailing_chain_start`) has a call whose result
    is not appended yet: that call is in flight, not an orphan, and gets no stub result."""
    start = trailing_chain_start(messages)
    if start >= len(messages):
        return False
    owed = [c.get("id") for c in messages[start].get("tool_calls") or () if isinstance(c, Mapping)]
    for m in messages[start + 1 :]:
        if m.get("tool_call_id") in owed:
            owed.remove(m.get("tool_call_id"))
    return bool(owed)


def last_real_user(messages: Rows, lower: int) -> int:
    """B3: index of the last real user row at or after ``lower`` (summary rows skipped), or -1."""
    for i in range(len(messages) - 1, lower - 1, -1):
        if is_real_user(messages[i]):
            return i
    return -1


def latest_summary(messages: Rows, summary_of: Callable[[Mapping[str, Any]], Any]) -> int:
    """B6: index of the newest row that ``summary_of`` recognises as a summary, or -1."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") in ("user", "assistant") and summary_of(m) is not None:
            return i
    return -1


def indices(start: int, stop: int, skip: list[int]) -> list[int]:
    """Row indices ``start..stop-1`` without those in ``skip``."""
    skipped = set(skip)
    return [i for i in range(start, stop) if i not in skipped]
