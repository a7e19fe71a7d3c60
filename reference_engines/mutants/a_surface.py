"""Mutants of section A (A2-A5, A7; A1 and A6 have their own files). Each breaks one clause;
the correct twins of faults plugin authors shipped (A4 in place, A5 openings) are here too."""

from __future__ import annotations

import copy

from reference_engines.mutants._base import MinimalEngine
from reference_engines.mutants._compressor_base import MiniCompressor, text_of


class DropsCompletionTokens(MinimalEngine):
    """Breaks A2: last_completion_tokens is never updated."""

    mutant_of = "A2"

    def update_from_response(self, usage):
        super().update_from_response(usage)
        self.last_completion_tokens = 0  # the defect


class ShouldCompressReturnsInt(MinimalEngine):
    """Breaks A3: should_compress() returns 1/0 instead of a bool."""

    mutant_of = "A3"

    def should_compress(self, prompt_tokens=None):
        return int(super().should_compress(prompt_tokens))  # the defect


class CompressReturnsTuple(MinimalEngine):
    """Breaks A4: compress() returns a tuple, not a list."""

    mutant_of = "A4"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        return tuple(
            super().compress(messages, current_tokens, focus_topic, **kwargs)
        )  # the defect


class TypeErrorOnFocus(MinimalEngine):
    """Breaks A4 (REG-g): a TypeError raised inside compress() when /compress passes a topic."""

    mutant_of = "A4"

    def compress(self, messages, current_tokens=None, **kwargs):
        if kwargs.get("focus_topic"):
            raise TypeError("compress() got an unexpected focus_topic")  # the defect
        return super().compress(messages, current_tokens)


class IgnoresFocus(MiniCompressor):
    """Breaks A5: declares 'focus' but never passes the topic on to its summary."""

    mutant_of = "A5"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        return super().compress(messages, current_tokens, None, **kwargs)  # the defect


class CompressesOnSentinel(MinimalEngine):
    """Breaks A7: treats last_prompt_tokens == -1 as "unknown, compress to be safe"."""

    mutant_of = "A7"

    def should_compress(self, prompt_tokens=None):
        if prompt_tokens is None and self.last_prompt_tokens < 0:
            return True  # the defect
        return super().should_compress(prompt_tokens)

    def should_compress_preflight(self, messages):
        return self.last_prompt_tokens < 0  # the defect, on the next turn's preflight too


class ThrashesWhenIneffective(MinimalEngine):
    """Breaks A3 (REG-j, SHOULD): keeps asking for compaction although it cannot help."""

    mutant_of = "A3"
    max_ineffective = 10**9  # the defect: no anti-thrash


class EditsInputInPlace(MinimalEngine):
    """Breaks A4: writes the compacted history into the list it was handed and returns that
    list; the host reads "the same object" as "nothing to compact", so nothing ever commits."""

    mutant_of = "A4"

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        messages[:] = out  # the defect
        return messages


class ReturnsNewList(MinimalEngine):
    """Correct twin of :class:`EditsInputInPlace`: the same pass, returning the new list (the
    input list is returned only when nothing changed, the host's no-op signal)."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = super().compress(messages, current_tokens, focus_topic, **kwargs)
        return messages if out == messages else out


def _openings(middle, chars=80):
    return "\n".join(f"- {m.get('role')}: {text_of(m)[:chars]}" for m in middle if text_of(m))


class KeepsMessageOpenings(MiniCompressor):
    """Breaks A5 (SHOULD): declares 'focus', but its summary keeps the first 80 characters of
    every summarised message instead of what the topic needs (a fact deep in a long message is
    lost; the old A5 check planted it at character 60 of a short one)."""

    mutant_of = "A5"

    def summary_text(self, middle):
        self._focus = None  # the defect: the topic is not passed on, only openings are kept
        text = super().summary_text(middle)
        return text.replace("## Critical Context", "## Critical Context\n" + _openings(middle), 1)


class KeepsOpeningsAndTopic(MiniCompressor):
    """Correct twin of :class:`KeepsMessageOpenings`: the same openings, and the topic passed on
    to the summary, which keeps every sentence about it."""

    def summary_text(self, middle):
        text = super().summary_text(middle)
        return text.replace("## Critical Context", "## Critical Context\n" + _openings(middle), 1)


__all__ = ["copy"]
