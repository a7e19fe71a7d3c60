"""A deterministic extractive summary in the B4 template, with no model (stdlib only).

The reference engines' default summariser: every bullet is a sentence or a path copied
from the text, so a run is reproducible without an LLM. A plugin author would put a model
call here (``agent.auxiliary_client.call_llm``); the engines take any summariser as an
argument. The text is the same as the provider simulator's summariser mode
(``simulator/provider/replies.py``, ``summarise``), so the kit's simulated LLM and the
engines' default agree; ``tests/reference_engines/test_tokens.py`` keeps the two equal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: A compaction request is recognised by this marker in its system or user text.
SUMMARY_REQUEST_MARKER = "[context-summary-request]"

_PATH_RE = re.compile(r"(?:[\w.-]+/)+[\w.-]+\.\w{1,6}")
_BLOCKED_RE = re.compile(r"\b(blocked|cannot|can't|failed|failing|error)\b", re.I)
_SENTENCE_RE = re.compile(r"[^.!?\n。！？]{4,}[.!?。！？]?")


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return str(content)


def request_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """All text of a request's messages, in order, one message per paragraph."""
    return "\n\n".join(_text_of(m.get("content")) for m in messages)


#: Key Decisions: sentences with a decision verb (not the "user:" role prefix of every user line).
_DECISION_RE = re.compile(
    r"\b(decid(?:e|ed|es|ing)|decision|chose|chosen|use|uses|used|using)\b", re.I
)


def summarise(
    text: str,
    *,
    focus_topic: str | None = None,
    max_chars: int = 4000,
    previous_summary: str | None = None,
) -> str:
    """Build the B4 structured summary of ``text`` deterministically, in linear time.

    Facts are traceable: every bullet is a sentence or path copied from ``text``. With
    ``focus_topic``, sentences mentioning it are kept first under Critical Context.
    ``previous_summary`` (B6) is carried into Progress so later summaries update it.
    The result is at most ``max_chars`` characters.
    """
    sentences = [s.strip() for s in _SENTENCE_RE.findall(text[:200_000])]
    paths = sorted(set(_PATH_RE.findall(text[:200_000])))[:12]
    focus_hits: list[str] = []
    if focus_topic:
        needle = focus_topic.lower()
        focus_hits = [s for s in sentences if needle in s.lower()][:8]
    goal = sentences[0] if sentences else "(no goal stated)"
    done = sentences[1:6]
    recent = sentences[-3:] if len(sentences) > 6 else []
    lines = ["## Goal", f"- {goal}", "## Constraints & Preferences"]
    lines += [f"- {s}" for s in sentences if re.search(r"\b(must|never|always|prefer)\b", s, re.I)][
        :4
    ] or ["- (none recorded)"]
    lines += ["## Progress", "### Done"]
    if previous_summary:
        earlier = [
            ln.strip()[2:] for ln in previous_summary.splitlines() if ln.strip().startswith("- ")
        ]
        earlier = [e for e in earlier if not e.startswith("(")][:4]
        lines += [f"- Earlier: {e[:200]}" for e in earlier] or [
            f"- Earlier: {previous_summary.strip()[:200]}"
        ]
    lines += [f"- {s}" for s in done] or ["- (nothing yet)"]
    lines += ["### In Progress"] + ([f"- {s}" for s in recent] or ["- (none)"])
    blocked = [s for s in sentences if _BLOCKED_RE.search(s)][:3]
    lines += ["### Blocked"] + ([f"- {s}" for s in blocked] or ["- (none)"]) + ["## Key Decisions"]
    lines += [f"- {s}" for s in sentences if _DECISION_RE.search(s)][:4] or ["- (none recorded)"]
    lines += ["## Relevant Files"] + ([f"- {p}" for p in paths] or ["- (none)"])
    lines += ["## Next Steps", f"- Continue from: {sentences[-1] if sentences else '(start)'}"]
    lines += ["## Critical Context"] + ([f"- {s}" for s in focus_hits] or ["- (none)"])
    out = "\n".join(lines)
    if len(out) > max_chars:
        # keep the Critical Context (focus) section whole; trim the middle.
        tail = out[out.index("## Critical Context") :]
        out = out[: max(0, max_chars - len(tail) - 5)] + "\n...\n" + tail
        out = out[:max_chars]
    return out
