"""Mutants and correct twins for the methods Hermes 0.22's ABC added (O12-O14, host practice).

- O12 ``should_compress_info``: ``InfoWithBlockReason`` reports why an over-threshold
  compaction is blocked (its anti-thrashing guard) and otherwise answers as should_compress;
  ``InfoIgnoresPromptTokens`` wrote the info later and re-derived the condition from the last
  usage only, so it disagrees with should_compress(prompt_tokens).
- O13 ``prune_tool_results_only``: ``PrunesOldToolOutputs`` replaces the text of old, long tool
  results with a one-line marker (copies, tail and live turn untouched);
  ``DropsOldToolRows`` drops those tool rows instead, leaving their calls unanswered.
- O14 ``has_content_to_compress``: ``KnowsWhenNothingToCompress`` answers False exactly when
  its compress() would keep every row; ``CountsExchanges`` hard-codes "at least 10
  exchanges", while its compress() compacts any long history.
"""

from __future__ import annotations

from typing import Any

from reference_engines.mutants._base import MinimalEngine, safe_tail_start, spaced_text


class InfoWithBlockReason(MinimalEngine):
    """Correct twin (O12): the info's bool is should_compress's; a reason only when blocked."""

    def should_compress_info(self, prompt_tokens: int | None = None):
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        over = tokens >= self.threshold_tokens > 0
        if over and self.ineffective_passes >= self.max_ineffective:
            return False, f"anti_thrash: {self.ineffective_passes} passes did not shrink it"
        return over, None


class InfoIgnoresPromptTokens(InfoWithBlockReason):
    """Breaks O12 only: the info looks at the last usage, never at ``prompt_tokens``."""

    mutant_of = "O12"

    def should_compress_info(self, prompt_tokens: int | None = None):
        over = self.last_prompt_tokens >= self.threshold_tokens > 0  # the defect
        if over and self.ineffective_passes >= self.max_ineffective:
            return False, "anti_thrash"
        return over, None


#: Tool results longer than this (characters) are pruned when old.
PRUNE_MIN_CHARS = 200


def _last_user(messages: list[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)


class PrunesOldToolOutputs(MinimalEngine):
    """Correct twin (O13): old long tool results become a marker (new dicts); the protected
    tail and the live turn are left alone; nothing pruned is ``(messages, 0)``."""

    def prune_tool_results_only(self, messages, current_tokens=None):
        cut = min(len(messages) - self.keep_last, _last_user(messages))
        out, pruned = [], 0
        for i, m in enumerate(messages):
            text = spaced_text(m)
            if i < cut and m.get("role") == "tool" and len(text) > PRUNE_MIN_CHARS:
                m = {**m, "content": f"[old tool output pruned: {len(text)} chars]"}
                pruned += 1
            out.append(m)
        return (out, pruned) if pruned else (messages, 0)


class DropsOldToolRows(PrunesOldToolOutputs):
    """Breaks O13 only: old long tool results are dropped, so their calls go unanswered."""

    mutant_of = "O13"

    def prune_tool_results_only(self, messages, current_tokens=None):
        cut = min(len(messages) - self.keep_last, _last_user(messages))
        out, pruned = [], 0
        for i, m in enumerate(messages):
            if i < cut and m.get("role") == "tool" and len(spaced_text(m)) > PRUNE_MIN_CHARS:
                pruned += 1
                continue  # the defect: the row goes, its tool call stays
            out.append(m)
        return (out, pruned) if pruned else (messages, 0)


class KnowsWhenNothingToCompress(MinimalEngine):
    """Correct twin (O14): False exactly when its compress() would keep every row."""

    def has_content_to_compress(self, messages):
        head = 1 if messages and messages[0].get("role") == "system" else 0
        body = messages[head:]
        if len(body) <= self.keep_last + 1:
            return False
        return safe_tail_start(body, len(body) - self.keep_last) > 0


class CountsExchanges(KnowsWhenNothingToCompress):
    """Breaks O14 only: "nothing to compress" below 10 exchanges, whatever their size."""

    mutant_of = "O14"

    def has_content_to_compress(self, messages):
        return len(messages) > 20  # the defect: a count, not what compress() would do
