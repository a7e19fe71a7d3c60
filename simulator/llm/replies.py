"""The engine LLM's reply mode: the provider's summariser, aware of compaction prompts.

Every request is answered with the deterministic B4 structured summary
(:func:`simulator.provider.replies.summarise`: Goal, Constraints & Preferences, Progress,
Key Decisions, Relevant Files, Next Steps, Critical Context). When the prompt is
hermes-agent 0.19.0's compaction prompt (``ContextCompressor._generate_summary``), only
the turns it carries are summarised, not its instructions: the text after ``TURNS TO
SUMMARIZE:`` (or ``NEW TURNS TO INCORPORATE:``) up to the memory block or the template
(``Use this exact structure:`` / ``Update the summary using this exact structure``); a
``PREVIOUS SUMMARY:`` block becomes ``previous_summary`` (B6) and ``FOCUS TOPIC: "..."``
becomes ``focus_topic`` (A5). Any other prompt (an engine's own) is summarised whole, and a
focus topic written the way authors write one (``Focus on: TOPIC``, ``Focus topic: "TOPIC"``,
``FOCUS: TOPIC``, up to the end of its sentence or line) is honoured the same way: the
sentences that mention it are kept under Critical Context. Same request, same bytes.
"""

from __future__ import annotations

import re
from typing import Any

from simulator.provider.replies import Reply, SummariserReplies, request_text, summarise

_TURNS_HEADINGS = ("TURNS TO SUMMARIZE:", "NEW TURNS TO INCORPORATE:")
_TURNS_ENDS = (
    "\n\nMEMORY PROVIDER CONTEXT:",
    "\n\nUse this exact structure:",
    "\n\nUpdate the summary using this exact structure",
)
_PREVIOUS_HEADING = "PREVIOUS SUMMARY:"
_FOCUS_RE = re.compile(r'\n\nFOCUS TOPIC: "(.*?)"\n')
#: A focus topic in an engine's own prompt: ``Focus on: database migration.``,
#: ``focus topic: "billing"``, ``FOCUS: the deploy`` (to the end of the sentence or line).
_LOOSE_FOCUS_RE = re.compile(
    r"(?im)^[ \t]*(?:please[ \t]+)?focus(?:[ \t]+topic)?(?:[ \t]+on)?[ \t]*:"
    r'[ \t]*"?([^"\n.]+?)"?[ \t]*(?:\.|$)'
)


def split_compaction_prompt(text: str) -> tuple[str, str | None, str | None]:
    """``(turns, previous_summary, focus_topic)`` of a compaction prompt ``text``.

    ``turns`` is ``text`` itself when no turns heading is found; the other two are None
    when absent.
    """
    focus_match = _FOCUS_RE.search(text) or _LOOSE_FOCUS_RE.search(text[:4000])
    focus = focus_match.group(1).strip() or None if focus_match else None
    start = -1
    heading = ""
    for candidate in _TURNS_HEADINGS:
        start = text.find(candidate)
        if start >= 0:
            heading = candidate
            break
    if start < 0:
        return text, None, focus
    previous = None
    if heading == "NEW TURNS TO INCORPORATE:":
        p = text.find(_PREVIOUS_HEADING)
        if 0 <= p < start:
            previous = text[p + len(_PREVIOUS_HEADING) : start].strip() or None
    body = text[start + len(heading) :]
    ends = [i for i in (body.find(e) for e in _TURNS_ENDS) if i >= 0]
    if ends:
        body = body[: min(ends)]
    return body.strip(), previous, focus


class EngineSummaryReplies(SummariserReplies):
    """Summariser mode for the engine's LLM (contract clause B4; B6 previous summary; A5 focus).

    Args:
        max_chars: largest summary, in characters.
    """

    def reply(self, request: Any, index: int, seed: int) -> Reply:
        """The B4 summary of the request's turns (see the module doc)."""
        turns, previous, focus = split_compaction_prompt(
            request_text(request.get("messages") or [])
        )
        return Reply(
            content=summarise(
                turns, focus_topic=focus, max_chars=self.max_chars, previous_summary=previous
            )
        )
