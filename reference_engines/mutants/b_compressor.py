"""Mutants of section B (B1-B6, REG-h, REG-i), on :class:`MiniCompressor`. Each breaks one
clause."""

from __future__ import annotations

from reference_engines.mutants._compressor_base import SUMMARY_PREFIX, MiniCompressor, text_of


class ThresholdSeventyFive(MiniCompressor):
    """Breaks B1: the threshold default is 0.75 of the window, not 0.50."""

    mutant_of = "B1"
    threshold_percent = 0.75  # the defect


class KeepsOldToolOutput(MiniCompressor):
    """Breaks B2: tool results outside the protected tail keep their full text."""

    mutant_of = "B2"

    def prune(self, m):
        return m  # the defect


class HeadDecays(MiniCompressor):
    """Breaks B3 (seeds): after the first compaction only the system prompt is protected (Hermes
    MAIN)."""

    mutant_of = "B3"

    def head_end(self, messages):
        if any(text_of(m).startswith(SUMMARY_PREFIX) for m in messages):
            return 1  # the defect: head decay without declaring 'head-decay'
        return super().head_end(messages)


class DeclaresHeadDecayButKeepsHead(MiniCompressor):
    """Breaks B3 (REG-i): declares 'head-decay' but keeps the first user message forever."""

    mutant_of = "B3"
    conformance_capabilities = frozenset(
        {"compressor", "focus", "head-decay"}
    )  # the defect: a false claim


class PlainSummary(MiniCompressor):
    """Breaks B4: the summary drops the template headings."""

    mutant_of = "B4"

    def summary_text(self, middle):
        text = super().summary_text(middle)
        return "\n".join(
            line for line in text.splitlines() if not line.startswith("#")
        )  # the defect


class NoteEveryTime(MiniCompressor):
    """Breaks B5: the compaction note is appended on every compaction."""

    mutant_of = "B5"

    def note(self, system):
        return dict(
            system,
            content=text_of(system) + "\n\n" + "[Note: Some earlier conversation turns have been "
            "compacted into a handoff summary to preserve context space.]",
        )  # the defect


class SummaryAlwaysUser(MiniCompressor):
    """Breaks B5 (REG-h): the summary is always a user message, even next to a user message."""

    mutant_of = "B5"

    def summary_role(self, before, after):
        return "user"  # the defect


class StartsOver(MiniCompressor):
    """Breaks B6: a later compaction drops the previous summary and starts over."""

    mutant_of = "B6"

    def summary_text(self, middle):
        return super().summary_text(
            [m for m in middle if not text_of(m).startswith(SUMMARY_PREFIX)]
        )  # the defect


def _asks(middle):
    """(ask text, answered) for each user message of ``middle``: answered when an assistant
    message with text of its own follows it there."""
    out = []
    for i, m in enumerate(middle):
        if m.get("role") != "user" or text_of(m).startswith(SUMMARY_PREFIX):
            continue
        answered = any(n.get("role") == "assistant" and text_of(n).strip() for n in middle[i + 1 :])
        out.append((text_of(m)[:160].replace("\n", " "), answered))
    return out[-20:]


class FallbackReopensAnsweredAsks(MiniCompressor):
    """Breaks B4 (SHOULD): its deterministic fallback summary lists every user request of the
    removed turns under Next Steps, answered or not, so the agent redoes them
    (docs/contract-notes.md 6.13)."""

    mutant_of = "B4"

    def summary_text(self, middle):
        text = super().summary_text(middle)
        todo = "\n".join(f"- Open request: {a}" for a, _ in _asks(middle))  # the defect
        return text.replace("## Next Steps", "## Next Steps\n" + todo, 1)


class FallbackRecordsAnsweredAsks(MiniCompressor):
    """Correct twin of :class:`FallbackReopensAnsweredAsks`: an answered request goes under
    Done, only an unanswered one under Next Steps (the fix: look at what followed the ask)."""

    def summary_text(self, middle):
        text = super().summary_text(middle)
        asks = _asks(middle)
        done = "\n".join(f"- Answered request: {a}" for a, ok in asks if ok)
        todo = "\n".join(f"- Open request: {a}" for a, ok in asks if not ok)
        if done:
            text = text.replace("### Done", "### Done\n" + done, 1)
        if todo:
            text = text.replace("## Next Steps", "## Next Steps\n" + todo, 1)
        return text
