"""Mutants (and their correct twins) of the invariants every engine keeps on realistic sessions
(conformance.checks.sessions): each fault is written the way plugin authors write it.

- ``PasteTailByTokens``: tail walked back by a token budget; a long pasted ask does not fit (A8);
  twin ``TokenTailKeepsAsk``.
- ``LastRowsInToolLoop``: the last four rows kept; a long tool loop pushes the ask out (A8); twin
  ``LastRowsKeepAsk``.
- ``NoteWhenNothingDropped``: a "compacted" marker row added even when nothing was dropped (A9);
  twin ``NoNoteWhenNothingDropped``.
- ``OverlappingHeadTail``: head and tail protected with no guard for a short history (V2); twin
  ``HeadTailNoOverlap``.
- ``CapsInUtf16Units``: summary lines capped in UTF-16 code units (ported from TypeScript) (V6);
  twin ``CapsInCodePoints``.
- ``RebuildsKeptRows``: kept rows rebuilt from the engine's own record (V7); twin
  ``CopiesKeptRows``.
- ``ArgumentsAsDict``: kept tool calls' arguments parsed for the index and written back (V7); twin
  ``ParsesArgumentsAside``.
- ``CutsLongArguments``: long tool-call arguments of kept rows cut mid-JSON (V7); twin
  ``ShrinksArgumentsInJson``.
- ``FlattensKeptParts``: kept list-of-parts content joined into one string (V7); twin
  ``KeepsKeptParts``.
- ``ForgetsOldSummary``: the previous summary is skipped when the next one is written (A10); twin
  ``FoldsOldSummary``.
- ``GrowingSummary``: every summary appended to the previous one, never capped (A11); twin
  ``BudgetedSummary``.
- ``EditsEarlierTurns``: dicts kept from on_turn_complete trimmed in place at the next turn (H5);
  twin ``TrimsOwnCopies``.
- ``PreflightCountsJson``: preflight estimate = len(json.dumps(messages)) / 4 (O7); twin
  ``PreflightCountsText``.
- ``SummaryTakesFirstUid``: the summary carries the uid of the first row it replaced (U6); twin
  ``SummaryDerivedUid``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from reference_engines.mutants._base import (
    SUMMARY_PREFIX,
    HookedEngine,
    MinimalEngine,
    live_turn_start,
    safe_tail_start,
    spaced_text,
)
from simulator.provider.tokens import count_message, count_messages

# --- A8: the live ask ---------------------------------------------------------------------------


class PasteTailByTokens(MinimalEngine):
    """A8 mutant: the tail is walked back from the end while it fits 20 % of the threshold (the
    built-in's tail budget); a live ask that is a long paste does not fit, so it is summarised
    away with the rest of the middle."""

    mutant_of = "A8"
    tail_ratio = 0.2

    def _tail_start(self, body: list[dict[str, Any]]) -> int:
        budget = int(self.threshold_tokens * self.tail_ratio)
        used, i = 0, len(body)
        while i > 0 and used + count_message(body[i - 1]) <= budget:
            used += count_message(body[i - 1])
            i -= 1
        return safe_tail_start(body, i)

    def _compress(self, messages):
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = self._tail_start(body)
        if body and body[-1].get("role") == "tool":  # mid tool chain: the newest chain stays whole
            start = min(start, safe_tail_start(body, len(body) - 1))
        if start == 0:
            return list(messages)
        tail = [dict(m) for m in body[start:]]
        role = "user" if not tail or tail[0].get("role") != "user" else "assistant"
        summary = {"role": role, "content": f"{SUMMARY_PREFIX} {start} earlier messages."}
        return head + [summary] + tail


class TokenTailKeepsAsk(PasteTailByTokens):
    """Twin: the same token-budget tail, moved back to the live ask whatever its size."""

    mutant_of = None

    def _tail_start(self, body):
        start = super()._tail_start(body)
        return min(start, live_turn_start(body, start))


class LastRowsInToolLoop(MinimalEngine):
    """A8 mutant: keeps the last four rows (moved back off tool results); in a long tool loop
    the ask is one of the summarised rows."""

    mutant_of = "A8"

    def _start(self, body):
        return safe_tail_start(body, len(body) - self.keep_last)

    def _compress(self, messages):
        self.compression_count += 1
        head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        if len(body) <= self.keep_last + 1 or count_messages(messages) < self.threshold_tokens:
            return list(messages)
        start = self._start(body)
        if start == 0:
            return list(messages)
        role = "user" if body[start].get("role") != "user" else "assistant"
        summary = {"role": role, "content": f"{SUMMARY_PREFIX} {start} earlier messages."}
        return head + [summary] + [dict(m) for m in body[start:]]


class LastRowsKeepAsk(LastRowsInToolLoop):
    """Twin: the same, with the tail reaching back to the live ask."""

    mutant_of = None

    def _start(self, body):
        start = super()._start(body)
        return min(start, live_turn_start(body, start))


# --- A9: never more tokens ----------------------------------------------------------------------


class NoteWhenNothingDropped(MinimalEngine):
    """A9 mutant: when the history is too short to drop anything, it still adds a marker row
    ("compaction ran, nothing to drop") in front of the kept messages."""

    mutant_of = "A9"
    keeps_smaller_input = False

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) == len(messages) and count_messages(messages) >= self.threshold_tokens:
            head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
            body = [dict(m) for m in messages[len(head) :]]
            role = "assistant" if body and body[0].get("role") == "user" else "user"
            marker = (
                f"{SUMMARY_PREFIX} Compaction ran at {count_messages(messages)} tokens; "
                f"all {len(body)} messages are recent and were kept as they are."
            )
            return head + [{"role": role, "content": marker}] + body
        return out


class NoNoteWhenNothingDropped(MinimalEngine):
    """Twin: returns its input when there is nothing to drop (MinimalEngine's behaviour)."""


# --- V2: head/tail overlap ----------------------------------------------------------------------


class OverlappingHeadTail(MinimalEngine):
    """V2 mutant: protects the first two rows after the system prompt (moved past their tool
    results) and the last six (moved off tool results, opening on an assistant row),
    summarising what lies between; on a history shorter than both, the two ranges overlap and
    rows come out twice."""

    mutant_of = "V2"
    keep_first = 2
    keep_tail = 6
    #: its own guard (:meth:`_not_worth_it`) decides when a compaction is not worth it
    keeps_smaller_input = False

    def _bounds(self, body):
        head_end = min(self.keep_first, len(body))
        while head_end < len(body) and body[head_end].get("role") == "tool":
            head_end += 1
        start = safe_tail_start(body, max(len(body) - self.keep_tail, 0))
        return head_end, min(start, live_turn_start(body, start))

    def _compress(self, messages):
        self.compression_count += 1
        sys_row = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
        body = messages[len(sys_row) :]
        if count_messages(messages) < self.threshold_tokens:
            return list(messages)
        head_end, start = self._bounds(body)
        if head_end < start < len(body) and body[start].get("role") == "user":
            start = safe_tail_start(body, start - 1)  # the tail opens on an assistant row
        # the head closes on an assistant reply or a tool result, never on a user row
        while head_end < start and (
            body[head_end - 1].get("role") == "user" or body[head_end - 1].get("tool_calls")
        ):
            head_end += 1
        while head_end < start and body[head_end].get("role") == "tool":
            head_end += 1
        role = "user" if start < len(body) and body[start].get("role") != "user" else "assistant"
        middle = body[head_end:start]
        summary = {
            "role": role,
            "content": f"{SUMMARY_PREFIX} {len(middle)} earlier messages "
            f"(compaction {self.compression_count}).",
        }
        if self._not_worth_it(middle, summary, head_end, start):
            return list(messages)
        return (
            sys_row
            + [dict(m) for m in body[:head_end]]
            + [summary]
            + [dict(m) for m in body[start:]]
        )

    def _not_worth_it(self, middle, summary, head_end=0, start=0) -> bool:
        """Nothing between head and tail, or a small middle, is not worth a summary (the
        guard tests ``start == head_end``: a tail that starts inside the head slips through)."""
        if start == head_end:
            return True
        return 0 < len(middle) and count_messages(middle) <= 2 * count_message(summary)


class HeadTailNoOverlap(OverlappingHeadTail):
    """Twin: an empty middle (the tail starts inside the head) is not compacted either."""

    mutant_of = None

    def _not_worth_it(self, middle, summary, head_end=0, start=0) -> bool:
        return start <= head_end or count_messages(middle) <= 2 * count_message(summary)


# --- V6: valid Unicode ----------------------------------------------------------------------------


class CapsInUtf16Units(MinimalEngine):
    """V6 mutant: the summary lists the opening of each summarised message, capped at 80 UTF-16
    code units (the limit of the TypeScript version it was ported from, ``text.slice(0, 80)``);
    a cut inside an astral character leaves a lone surrogate."""

    mutant_of = "V6"
    cap = 80

    def _opening(self, text: str) -> str:
        units = text.encode("utf-16-le", "surrogatepass")[: 2 * self.cap]
        return units.decode("utf-16-le", "surrogatepass")

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) == len(messages):
            return out
        head_n = 1 if messages and messages[0].get("role") == "system" else 0
        removed = messages[head_n : len(messages) - (len(out) - head_n - 1)]
        lines = []
        for m in removed:
            text = spaced_text(m)
            if text.startswith(SUMMARY_PREFIX):  # the previous summary: its lines carry over
                lines += [ln for ln in text.splitlines()[1:] if ln.startswith("- ")]
            elif m.get("role") in ("user", "assistant") and text:
                lines.append("- " + self._opening(text))
        summary = dict(out[head_n])
        summary["content"] = summary["content"] + "\n" + "\n".join(lines[:12])
        return out[:head_n] + [summary] + out[head_n + 1 :]


class CapsInCodePoints(CapsInUtf16Units):
    """Twin: the same summary, capped at 80 code points (``text[:80]``)."""

    mutant_of = None

    def _opening(self, text: str) -> str:
        return text[: self.cap]


# --- V7: kept rows keep their fields ------------------------------------------------------------


class RebuildsKeptRows(MinimalEngine):
    """V7 mutant: kept rows are rebuilt from the engine's own record of each message (role,
    content, tool calls, ids); provider fields such as ``reasoning_content`` are lost."""

    mutant_of = "V7"
    RECORD = ("role", "content", "tool_calls", "tool_call_id", "message_uid")

    def _keep(self, m: dict[str, Any]) -> dict[str, Any]:
        return {k: m[k] for k in self.RECORD if k in m}

    @staticmethod
    def _with_arguments(m: dict[str, Any], change: Any) -> dict[str, Any]:
        """A copy of row ``m`` whose tool calls' ``function.arguments`` are ``change(arguments)``
        (the row's other fields and the calls' other keys as they were)."""
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [
                {
                    **c,
                    "function": {**c["function"], "arguments": change(c["function"]["arguments"])},
                }
                for c in m["tool_calls"]
            ]
        return m

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) == len(messages):
            return out
        n = 1 if messages and messages[0].get("role") == "system" else 0
        # the running turn (after the last user message) is left alone: indexed next time
        last_user = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=n)
        kept = [self._keep(m) if i < last_user else m for i, m in enumerate(out[n + 1 :], n + 1)]
        return out[: n + 1] + kept


class CopiesKeptRows(RebuildsKeptRows):
    """Twin: kept rows are copied whole."""

    mutant_of = None

    def _keep(self, m):
        return dict(m)


class ArgumentsAsDict(RebuildsKeptRows):
    """V7 mutant: the tool calls of kept rows get their arguments parsed (the engine indexes
    file paths) and the parsed dict is written back into the row."""

    def _keep(self, m):
        def parsed(args):
            try:
                return json.loads(args)
            except (TypeError, ValueError):
                return args

        return self._with_arguments(m, parsed)


class ParsesArgumentsAside(RebuildsKeptRows):
    """Twin: the arguments are parsed into the engine's own index; the row stays as it was."""

    mutant_of = None

    def __init__(self) -> None:
        self.paths: list[str] = []

    def _keep(self, m):
        for c in m.get("tool_calls") or ():
            try:
                args = json.loads(c["function"]["arguments"])
            except (TypeError, ValueError, KeyError):
                continue
            if isinstance(args, dict) and isinstance(args.get("path"), str):
                self.paths = (self.paths + [args["path"]])[-100:]
        return dict(m)


#: Arguments longer than this (characters) get shortened by the two engines below.
ARGS_CAP = 500


class CutsLongArguments(RebuildsKeptRows):
    """V7 mutant: long tool-call arguments of kept rows (a ``write_file`` with a whole file)
    are cut to their first :data:`ARGS_CAP` characters plus a marker, to save tokens; the cut
    string no longer parses as JSON, which the provider rejects on the next request."""

    def _keep(self, m):
        def cut(args):
            if isinstance(args, str) and len(args) > ARGS_CAP:
                return args[:ARGS_CAP] + "...[truncated]"
            return args

        return self._with_arguments(m, cut)


class ShrinksArgumentsInJson(RebuildsKeptRows):
    """Twin: long string values inside the parsed arguments are shortened and the arguments
    written back as JSON (what Hermes' own compressor does to old tool calls): still valid."""

    mutant_of = None

    def _keep(self, m):
        def shrink(args):
            if not (isinstance(args, str) and len(args) > ARGS_CAP):
                return args
            try:
                parsed = json.loads(args)
            except ValueError:
                return args
            if not isinstance(parsed, dict):
                return args
            short = {
                k: v[:200] + "...[truncated]" if isinstance(v, str) and len(v) > 200 else v
                for k, v in parsed.items()
            }
            return json.dumps(short, ensure_ascii=False)

        return self._with_arguments(m, shrink)


class FlattensKeptParts(RebuildsKeptRows):
    """V7 (SHOULD) mutant: kept rows with list-of-parts content get it joined into one string
    (the engine stores plain text), so a pasted screenshot is lost."""

    def _keep(self, m):
        m = dict(m)
        if isinstance(m.get("content"), list):
            m["content"] = "\n".join(p.get("text", "") for p in m["content"] if isinstance(p, dict))
        return m


class KeepsKeptParts(RebuildsKeptRows):
    """Twin: flattens only for its own token estimate; the row keeps its parts."""

    mutant_of = None

    def _keep(self, m):
        self.last_text_chars = len(spaced_text(m))
        return dict(m)


# --- A10 / A11: summaries over many compactions ---------------------------------------------------


class _DigestEngine(MinimalEngine):
    """A MinimalEngine whose summary lists one line per summarised user/assistant message
    (its first 120 characters) under the summary prefix; a previous summary in the middle is
    carried over by :meth:`_merge`."""

    def _lines(self, middle):
        previous, fresh = [], []
        for m in middle:
            text = spaced_text(m)
            if text.startswith(SUMMARY_PREFIX):
                previous += [ln for ln in text.splitlines()[1:] if ln.startswith("- ")]
            elif m.get("role") in ("user", "assistant") and text:
                fresh.append(f"- {m['role']}: {' '.join(text.split())[:120]}")
        return self._merge(previous, fresh)

    def _merge(self, previous, fresh):
        raise NotImplementedError

    def _compress(self, messages):
        out = super()._compress(messages)
        if len(out) == len(messages):
            return out
        n = 1 if messages and messages[0].get("role") == "system" else 0
        middle = messages[n : len(messages) - (len(out) - n - 1)]
        summary = dict(out[n])
        summary["content"] = SUMMARY_PREFIX + "\n" + "\n".join(self._lines(middle))
        return out[:n] + [summary] + out[n + 1 :]


class ForgetsOldSummary(_DigestEngine):
    """A10 mutant: "never summarise a summary": the previous summary row is skipped when the
    next one is written, so everything from before the last compaction is forgotten."""

    mutant_of = "A10"

    def _merge(self, previous, fresh):
        return fresh


class FoldsOldSummary(_DigestEngine):
    """Twin: the previous summary's lines come first; at most 16 lines (the first 4, the
    session's opening, and the newest 12)."""

    mutant_of = None

    def _merge(self, previous, fresh):
        lines = previous + fresh
        return lines if len(lines) <= 16 else lines[:4] + lines[-12:]


class GrowingSummary(_DigestEngine):
    """A11 mutant: each summary is the previous one plus the new lines, never capped."""

    mutant_of = "A11"

    def _merge(self, previous, fresh):
        return previous + fresh


class BudgetedSummary(_DigestEngine):
    """Twin: the previous lines plus the new ones, then the oldest lines after the first four
    are dropped until the summary fits 600 tokens."""

    mutant_of = None

    def _merge(self, previous, fresh):
        lines = previous + fresh
        while (
            len(lines) > 5 and count_messages([{"role": "user", "content": "\n".join(lines)}]) > 600
        ):
            del lines[4]
        return lines


# --- H5 across calls --------------------------------------------------------------------------


class EditsEarlierTurns(HookedEngine):
    """H5 mutant: keeps the messages of the last turn and, at the next turn, trims the long
    texts of the ones it kept (to save memory), in place: the host's own dicts."""

    mutant_of = "H5"

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[dict[str, Any]] = []

    def _remember(self, messages):
        return list(messages)

    def on_turn_complete(self, messages, usage=None, **kwargs):
        super().on_turn_complete(messages, usage, **kwargs)
        for m in self.kept:
            if isinstance(m.get("content"), str) and len(m["content"]) > 200:
                m["content"] = m["content"][:200]
        self.kept = self._remember(messages)


class TrimsOwnCopies(EditsEarlierTurns):
    """Twin: keeps copies of the dicts and trims the copies."""

    mutant_of = None

    def _remember(self, messages):
        return [dict(m) for m in messages]


# --- O7: preflight and images ---------------------------------------------------------------------


class PreflightCountsJson(MinimalEngine):
    """O7 (SHOULD) mutant: the preflight estimate is the serialised request's length / 4, so a
    pasted screenshot's base64 bytes count as text."""

    mutant_of = "O7"

    def should_compress_preflight(self, messages) -> bool:
        if self.last_prompt_tokens < 0:  # A7: a compaction just ran
            return False
        return len(json.dumps(messages)) // 4 >= self.threshold_tokens > 0


class PreflightCountsText(MinimalEngine):
    """Twin: counts text parts (4 characters a token), tool call arguments and 85 per image."""

    def should_compress_preflight(self, messages) -> bool:
        if self.last_prompt_tokens < 0:  # A7: a compaction just ran
            return False
        chars, images = 0, 0
        for m in messages:
            content = m.get("content")
            if isinstance(content, str):
                chars += len(content)
            elif isinstance(content, list):
                for p in content:
                    if isinstance(p, dict) and p.get("type") == "text":
                        chars += len(str(p.get("text", "")))
                    elif isinstance(p, dict):
                        images += 1
            for c in m.get("tool_calls") or ():
                chars += len(str((c.get("function") or {}).get("arguments", "")))
        return chars // 4 + 85 * images >= self.threshold_tokens > 0


# --- U6: summary uid ---------------------------------------------------------------------


class SummaryTakesFirstUid(MinimalEngine):
    """U6 (SHOULD) mutant: "keep the lineage": the summary row is stamped with the
    message_uid of the first message it replaced."""

    mutant_of = "U6"

    def _uid(self, first_uid: str) -> str:
        return first_uid

    def _compress(self, messages):
        out = super()._compress(messages)
        n = 1 if messages and messages[0].get("role") == "system" else 0
        if len(out) < len(messages) and messages[n].get("message_uid"):
            out[n] = dict(out[n], message_uid=self._uid(messages[n]["message_uid"]))
        return out


class SummaryDerivedUid(SummaryTakesFirstUid):
    """Twin: the summary gets its own uid, derived from the first replaced one (U6: a fresh
    32-hex value the host commits)."""

    mutant_of = None

    def _uid(self, first_uid: str) -> str:
        return hashlib.sha256(f"summary:{first_uid}".encode()).hexdigest()[:32]
