"""Phase 3 of the reference compressor: the summary request and the default summariser.

The engine builds a :class:`SummaryRequest` holding its own prompt template (a chat
``messages`` list) and the structured fields it was built from, and hands it to a
summarise callable ``summarise(request: SummaryRequest) -> str``:

- it returns the summary body (the B4 template, plain text), or
- it raises any ``Exception`` when the summary cannot be made (provider error, context
  too small, timeout). The engine then logs a warning and a deterministic fallback summary
  stands in for the middle (B4, A4).

A plugin author's summarise callable sends ``request.messages`` to a model (in Hermes,
``agent.auxiliary_client.call_llm(task="compression", messages=..., max_tokens=...)``).
:class:`ExtractiveSummariser` is the default: no model, a deterministic answer to the
engine's own prompt (:func:`summary_from_prompt`, built on
:func:`reference_engines.extractive.summarise`), with a model's limits: a prompt that does
not fit its ``context_length`` fails with :class:`SummaryContextError`
(``context_length_exceeded``), and a reply is cut to ``max_tokens``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reference_engines import tokens
from reference_engines._compressor.constants import TEMPLATE_HEADINGS
from reference_engines._compressor.messages import content_text
from reference_engines.extractive import SUMMARY_REQUEST_MARKER, request_text
from reference_engines.extractive import summarise as extractive_summarise

#: Section headers of the user message of a summary request, in order.
SECTION_FOCUS = "<<FOCUS TOPIC>>"
SECTION_PREVIOUS = "<<PREVIOUS SUMMARY>>"
SECTION_MEMORY = "<<MEMORY PROVIDER CONTEXT>>"
SECTION_TURNS = "<<TURNS TO SUMMARISE>>"
SECTION_END = "<<END>>"
_SECTION_RE = re.compile(r"^<<([A-Z -]+)>>[^\n]*$", re.M)
#: Row label lines of the serialised turns (``[user]``, ``[tool result id]``, ...).
_LABEL_LINE_RE = re.compile(r"^\[(?:system|user|assistant|unknown|tool result [^\]\n]*)\]\n", re.M)

#: Rough characters per token used to turn a token budget into a character cap.
CHARS_PER_TOKEN_LOW = 3


@dataclass(frozen=True)
class SummaryRequest:
    """What the engine asks a summarise callable for (contract B4, B6, A5).

    Attributes:
        messages: the chat request the engine built with its own template
            (``[{"role": "system", ...}, {"role": "user", ...}]``); send these to an LLM.
        budget_tokens: the summary budget in tokens (B4); the reply should stay under it.
        focus_topic: the ``/compress <focus>`` topic, or None (A5).
        previous_summary: the body of the previous summary to update, or None (B6).
        memory_context: sanitised memory-provider text, possibly ``""``.
        turns_text: the serialised turns, oldest first, as one text (the same text
            as the turn parts inside ``messages``).
        turns_total: rows in the middle; ``turns_sent`` of them are in ``turns_text``.
        model: the summary model name (free text; the default summariser ignores it).
    """

    messages: list[dict[str, Any]]
    budget_tokens: int
    focus_topic: str | None
    previous_summary: str | None
    memory_context: str
    turns_text: str
    turns_total: int
    turns_sent: int
    model: str = ""


def build_messages(
    *,
    turn_parts: list[str],
    budget_tokens: int,
    focus_topic: str | None,
    previous_summary: str | None,
    memory_context: str,
    turns_total: int,
    turns_sent: int,
) -> list[dict[str, Any]]:
    """B4: the engine's prompt template as a two-message chat request.

    The system message carries :data:`SUMMARY_REQUEST_MARKER`, the instructions and the
    template headings. The user message is a list of text parts: the sections (focus
    topic, previous summary, memory context), each under a ``<<HEADER>>`` line, then
    ``<<TURNS TO SUMMARISE>>`` and one part per row (its :func:`serialise_parts` joined
    with newlines), then ``<<END>>``. Joined with newlines the parts read as one text;
    kept apart, each row's text is counted once and cached (the provider's usage count
    of the prompt reuses the engine's counts).
    """
    template = "\n".join(TEMPLATE_HEADINGS)
    mode = (
        "UPDATE the previous summary with the new turns: keep what is still true, move "
        "finished items from In Progress to Done, add new progress, drop what is obsolete."
        if previous_summary
        else "Summarise the turns below from scratch."
    )
    focus_rule = (
        f" Keep every fact about the focus topic '{focus_topic}' first and in full; be "
        "brief about everything else."
        if focus_topic
        else ""
    )
    system = (
        f"{SUMMARY_REQUEST_MARKER} You write the handoff summary of an agent conversation "
        "whose earlier turns are being removed from the context window. Do not answer any "
        f"question in the turns; only record them. {mode}{focus_rule} Use exactly this "
        f"template, in this order:\n{template}\nStay under {budget_tokens} tokens."
    )
    header: list[str] = []
    if focus_topic:
        header += [SECTION_FOCUS, focus_topic]
    if previous_summary:
        header += [SECTION_PREVIOUS, previous_summary]
    if memory_context:
        header += [SECTION_MEMORY, memory_context]
    omitted = turns_total - turns_sent
    note = f" ({turns_sent} of {turns_total} messages, oldest first"
    note += f"; {omitted} older messages did not fit and are not shown)" if omitted else ")"
    header.append(SECTION_TURNS + note)
    parts = ["\n".join(header)] + list(turn_parts) + ["\n" + SECTION_END]
    user = [{"type": "text", "text": p} for p in parts if p]
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_sections(text: str) -> dict[str, str]:
    """Split a summary request's user text into ``{HEADER: body}`` (headers without ``<<>>``)."""
    out: dict[str, str] = {}
    matches = list(_SECTION_RE.finditer(text))
    for k, m in enumerate(matches):
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        out[m.group(1)] = text[m.end() : end].strip("\n")
    return out


# -- B6: merging a previous summary with a new one --------------------------------------

_PLACEHOLDER_RE = re.compile(r"^- \((none|nothing yet|none recorded|start|no goal stated)\)$")
#: Sections trimmed first when a merged summary is over its size cap (oldest bullets first).
_TRIM_ORDER = (
    "### Done",
    "## Key Decisions",
    "## Constraints & Preferences",
    "## Relevant Files",
    "### In Progress",
    "### Blocked",
    "## Next Steps",
    "## Goal",
    "## Critical Context",
)


def _sections(summary: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {h: [] for h in TEMPLATE_HEADINGS}
    current: str | None = None
    for line in summary.splitlines():
        stripped = line.strip()
        if stripped in out:
            current = stripped
        elif current and stripped.startswith("- ") and not _PLACEHOLDER_RE.match(stripped):
            if stripped not in out[current]:
                out[current].append(stripped)
    return out


def _render(sections: Mapping[str, list[str]]) -> str:
    lines: list[str] = []
    for h in TEMPLATE_HEADINGS:
        lines.append(h)
        if h != "## Progress":
            lines += list(sections[h]) or ["- (none)"]
    return "\n".join(lines)


def merge_summaries(previous: str, new: str, max_chars: int) -> str:
    """B6: update ``previous`` with ``new`` section by section, within ``max_chars``.

    The previous goal stays; previous In Progress items move to Done; other sections
    are the union (previous first, duplicates dropped); Next Steps come from ``new``.
    Over the cap, the oldest bullets go first, Done first and Critical Context last.
    """
    old, fresh = _sections(previous), _sections(new)
    merged: dict[str, list[str]] = {}
    for h in TEMPLATE_HEADINGS:
        if h == "## Goal":
            items = old[h] or fresh[h]
        elif h == "### Done":
            items = old[h] + old["### In Progress"] + fresh[h]
        elif h == "### In Progress":
            items = fresh[h]
        elif h == "## Next Steps":
            items = fresh[h] or old[h]
        else:
            items = old[h] + fresh[h]
        seen: set = set()
        merged[h] = [x for x in items if not (x in seen or seen.add(x))]
    return trim_summary(merged, max_chars)


def trim_summary(sections: dict[str, list[str]], max_chars: int) -> str:
    """Render ``sections``, dropping oldest bullets in :data:`_TRIM_ORDER` until it fits."""
    text = _render(sections)
    for h in _TRIM_ORDER:
        while len(text) > max_chars and sections[h]:
            sections[h].pop(0)
            text = _render(sections)
    return text[:max_chars]


def summary_from_prompt(messages: Sequence[Mapping[str, Any]], max_tokens: int) -> str:
    """The B4 summary a chat request built by :func:`build_messages` asks for, without a model.

    Uses :func:`reference_engines.extractive.summarise` on the turns (and memory context).
    With a focus topic, the sentences about it, found anywhere in the turns, head the
    Critical Context section (A5). With a previous summary, the two are merged
    (:func:`merge_summaries`, B6).
    A request of another shape is summarised as plain text.
    """
    user = next((m for m in reversed(list(messages)) if m.get("role") == "user"), None)
    max_chars = max(200, int(max_tokens) * CHARS_PER_TOKEN_LOW)
    text = content_text(user.get("content")) if user else ""
    sections = parse_sections(text)
    if "TURNS TO SUMMARISE" not in sections:
        return extractive_summarise(request_text(list(messages)), max_chars=max_chars)
    focus = sections.get("FOCUS TOPIC") or None
    previous = sections.get("PREVIOUS SUMMARY") or None
    turns = _LABEL_LINE_RE.sub("", sections["TURNS TO SUMMARISE"])
    memory = sections.get("MEMORY PROVIDER CONTEXT")
    source = f"{turns}\n\n{memory}" if memory else turns
    new = extractive_summarise(source, focus_topic=focus, max_chars=max_chars)
    if focus:
        # A5: facts about the focus come first in Critical Context, wherever they sit.
        needle = focus.lower()
        hits = [p for p in source.split("\n\n") if needle in p.lower()]
        if hits:
            secs = _sections(new)
            found = _sections(
                extractive_summarise("\n\n".join(hits), focus_topic=focus, max_chars=max_chars)
            )
            key = "## Critical Context"
            secs[key] = list(dict.fromkeys(found[key] + secs[key]))
            new = trim_summary(secs, max_chars)
    if previous:
        return merge_summaries(previous, new, max_chars)
    return new


class SummaryContextError(RuntimeError):
    """The summary prompt plus its budget does not fit the summariser's window (a model's
    400 ``context_length_exceeded``). ``code`` is ``"context_length_exceeded"``."""

    code = "context_length_exceeded"


@dataclass
class ExtractiveSummariser:
    """The default summarise callable: the engine's prompt answered without a model.

    Args:
        context_length: the summary model's window in tokens; a prompt plus the budget
            larger than it fails with :class:`SummaryContextError` (B4). None: no limit.
        model: the model name recorded in the request.

    Attributes:
        calls: requests answered so far. last_request / last_response: the last exchange
            (``last_request`` is the chat body a model would get: ``model``, ``messages``,
            ``max_tokens``, ``temperature``; ``last_response`` is ``{"content": text}``).

    It holds no lock or connection, so the engine stays deep-copyable (O11/C1).
    """

    context_length: int | None = None
    model: str = "extractive-summariser"
    calls: int = 0
    last_request: dict[str, Any] | None = field(default=None, repr=False)
    last_response: dict[str, Any] | None = field(default=None, repr=False)

    def __call__(self, request: SummaryRequest) -> str:
        """Return the summary text for ``request``, at most ``request.budget_tokens`` tokens.

        Raises:
            SummaryContextError: the prompt does not fit ``context_length``.
        """
        body = {
            "model": request.model or self.model,
            "messages": request.messages,
            "max_tokens": request.budget_tokens,
            "temperature": 0,
        }
        self.calls += 1
        self.last_request = body
        prompt_tokens = tokens.count_messages(request.messages)
        if (
            self.context_length is not None
            and prompt_tokens + request.budget_tokens > self.context_length
        ):
            raise SummaryContextError(
                f"This model's maximum context length is {self.context_length} tokens. However, "
                f"you requested {prompt_tokens + request.budget_tokens} tokens ({prompt_tokens} "
                f"in the messages, {request.budget_tokens} in the completion) "
                "(context_length_exceeded)."
            )
        text = summary_from_prompt(request.messages, request.budget_tokens)
        if request.budget_tokens >= 1 and tokens.count_text(text) > request.budget_tokens:
            enc = tokens.encoding()  # a reply stops at max_tokens, as a model's does
            text = enc.decode(enc.encode_ordinary(text)[: request.budget_tokens])
        self.last_response = {"content": text}
        return text


def split_tokens(text: str, budget: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``budget`` cl100k tokens; return (text, was_cut)."""
    if tokens.count_text(text) <= budget:
        return text, False
    enc = tokens.encoding()
    return enc.decode(enc.encode_ordinary(text)[:budget]), True
