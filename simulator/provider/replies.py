"""Reply modes of the provider simulator: scripted, echo, summariser.

A reply is a pure function of (seed, request, simulator state): no wall clock, no global
``random``. ``SUMMARY_SECTIONS`` is the structured template of contract clause B4.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

#: B4: the structured summary template, in order.
SUMMARY_SECTIONS = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Key Decisions",
    "Relevant Files",
    "Next Steps",
    "Critical Context",
)

#: A compaction request is recognised by this marker in its system or user text.
SUMMARY_REQUEST_MARKER = "[context-summary-request]"

_PATH_RE = re.compile(r"(?:[\w.-]+/)+[\w.-]+\.\w{1,6}")
_SENTENCE_RE = re.compile(r"[^.!?\n。！？]{4,}[.!?。！？]?")


@dataclass
class Reply:
    """One assistant reply: text content and/or tool calls, plus a finish_reason."""

    content: Optional[str] = None
    tool_calls: List[Dict[str, Any]] = field(default_factory=list)
    finish_reason: Optional[str] = None

    def message(self) -> Dict[str, Any]:
        msg: Dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [dict(c) for c in self.tool_calls]
        return msg

    def finish(self) -> str:
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return str(content)


def request_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """All text of a request's messages, in order, one message per paragraph."""
    return "\n\n".join(_text_of(m.get("content")) for m in messages)


def is_summary_request(messages: Sequence[Mapping[str, Any]]) -> bool:
    """True when a request asks for a compaction summary (carries the marker)."""
    return any(SUMMARY_REQUEST_MARKER in _text_of(m.get("content")) for m in messages[:2]) or (
        bool(messages) and SUMMARY_REQUEST_MARKER in _text_of(messages[-1].get("content"))
    )


def summarise(
    text: str,
    *,
    focus_topic: Optional[str] = None,
    max_chars: int = 4000,
    previous_summary: Optional[str] = None,
) -> str:
    """Build the B4 structured summary of ``text`` deterministically, in linear time.

    Facts are traceable: every bullet is a sentence or path copied from ``text``. With
    ``focus_topic``, sentences mentioning it are kept first under Critical Context.
    ``previous_summary`` (B6) is carried into Progress so later summaries update it.
    The result is at most ``max_chars`` characters.
    """
    sentences = [s.strip() for s in _SENTENCE_RE.findall(text[:200_000])]
    paths = sorted(set(_PATH_RE.findall(text[:200_000])))[:12]
    focus_hits: List[str] = []
    if focus_topic:
        needle = focus_topic.lower()
        focus_hits = [s for s in sentences if needle in s.lower()][:8]
    goal = sentences[0] if sentences else "(no goal stated)"
    done = sentences[1:6]
    recent = sentences[-3:] if len(sentences) > 6 else []
    lines = ["## Goal", f"- {goal}", "## Constraints & Preferences"]
    lines += [f"- {s}" for s in sentences if re.search(r"\b(must|never|always|prefer)\b", s, re.I)][:4] or ["- (none recorded)"]
    lines += ["## Progress", "### Done"]
    if previous_summary:
        lines.append(f"- Earlier: {previous_summary.strip().splitlines()[1].lstrip('- ') if len(previous_summary.splitlines()) > 1 else previous_summary.strip()[:200]}")
    lines += [f"- {s}" for s in done] or ["- (nothing yet)"]
    lines += ["### In Progress"] + ([f"- {s}" for s in recent] or ["- (none)"])
    lines += ["### Blocked", "- (none)", "## Key Decisions"]
    lines += [f"- {s}" for s in sentences if re.search(r"\b(decid|chose|use)\w*", s, re.I)][:4] or ["- (none recorded)"]
    lines += ["## Relevant Files"] + ([f"- {p}" for p in paths] or ["- (none)"])
    lines += ["## Next Steps", f"- Continue from: {sentences[-1] if sentences else '(start)'}"]
    lines += ["## Critical Context"] + ([f"- {s}" for s in focus_hits] or ["- (none)"])
    out = "\n".join(lines)
    if len(out) > max_chars:
        # keep the Critical Context (focus) section whole; trim the middle.
        tail = out[out.index("## Critical Context"):]
        out = out[: max(0, max_chars - len(tail) - 5)] + "\n...\n" + tail
        out = out[:max_chars]
    return out


class ReplyPolicy:
    """Chooses the reply for a request; subclasses are the reply modes."""

    def reply(self, request: Mapping[str, Any], index: int, seed: int) -> Reply:
        raise NotImplementedError


class EchoReplies(ReplyPolicy):
    """Echo mode: answers with a short deterministic echo of the last user text.

    Summary requests get :func:`summarise` so a host driving a compactor works unmodified.
    """

    def reply(self, request, index, seed):
        messages = request.get("messages") or []
        if is_summary_request(messages):
            return Reply(content=summarise(request_text(messages)))
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        text = _text_of(last_user.get("content")) if last_user else ""
        digest = hashlib.sha256(f"{seed}:{index}:{text}".encode()).hexdigest()[:8]
        return Reply(content=f"echo[{digest}]: {text[:200]}")


class SummariserReplies(ReplyPolicy):
    """Summariser mode: every request is answered with the B4 template of its content."""

    def reply(self, request, index, seed):
        return Reply(content=summarise(request_text(request.get("messages") or [])))


class ScriptedReplies(ReplyPolicy):
    """Scripted mode: replies are taken in order; past the end it falls back to echo."""

    def __init__(self, replies: Sequence[Reply | Mapping[str, Any] | str]):
        self._replies = [self._coerce(r) for r in replies]
        self._next = 0
        self._fallback = EchoReplies()

    @staticmethod
    def _coerce(r: Reply | Mapping[str, Any] | str) -> Reply:
        if isinstance(r, Reply):
            return r
        if isinstance(r, str):
            return Reply(content=r)
        return Reply(
            content=r.get("content"),
            tool_calls=list(r.get("tool_calls") or []),
            finish_reason=r.get("finish_reason"),
        )

    def reply(self, request, index, seed):
        if self._next < len(self._replies):
            r = self._replies[self._next]
            self._next += 1
            return r
        return self._fallback.reply(request, index, seed)


def canonical_json(value: Any) -> str:
    """Byte-stable JSON used for hashing requests."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
