"""Reply modes of the provider simulator: scripted, echo, summariser.

A reply is a pure function of (seed, request, simulator state): no wall clock, no global
``random``. ``SUMMARY_SECTIONS`` is the structured template of contract clause B4.

Echo replies follow the provider's *reply key mode* (:data:`REPLY_KEY_MODES`):

- ``"request"`` (default): the echo digest is a function of the seed and the request
  alone (its number of messages and its last user text), so the same request gets the
  same reply whatever arrived before it: retries, replays and concurrent clients see
  stable answers, and two sessions that differ only in the order of earlier messages
  get the same replies.
- ``"sequence"``: the digest mixes in the 0-based request index instead of the message
  count (the simulator's original behaviour), so two identical requests in a row get
  different replies; for scripted sessions that want every request's text distinct.

The provider announces the mode to the policy it calls through :func:`reply_context`
(``"request"`` outside a provider). Scripted replies, tool scripts and tool-call ids
are not affected by the mode.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

#: Reply key modes: ``"request"`` (reply = f(seed, request)) or ``"sequence"`` (+ index).
REPLY_KEY_MODES = ("request", "sequence")


@dataclass(frozen=True)
class ReplyContext:
    """What the provider tells reply policies about the request being answered.

    Attributes:
        mode: one of :data:`REPLY_KEY_MODES`.
    """

    mode: str


_CONTEXT: contextvars.ContextVar[ReplyContext | None] = contextvars.ContextVar(
    "reply_context", default=None
)


@contextmanager
def reply_context(mode: str) -> Iterator[ReplyContext]:
    """Within the block, :func:`current_context` is ``ReplyContext(mode)`` (this thread).

    Raises:
        ValueError: ``mode`` is not one of :data:`REPLY_KEY_MODES`.
    """
    if mode not in REPLY_KEY_MODES:
        raise ValueError(f"reply mode {mode!r} is unknown; use one of {REPLY_KEY_MODES}")
    ctx = ReplyContext(mode)
    token = _CONTEXT.set(ctx)
    try:
        yield ctx
    finally:
        _CONTEXT.reset(token)


def current_context() -> ReplyContext | None:
    """The :class:`ReplyContext` of the request being answered, or None outside a provider."""
    return _CONTEXT.get()


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
_BLOCKED_RE = re.compile(r"\b(blocked|cannot|can't|failed|failing|error)\b", re.I)
_SENTENCE_RE = re.compile(r"[^.!?\n。！？]{4,}[.!?。！？]?")


@dataclass
class Reply:
    """One assistant reply: text ``content`` and/or ``tool_calls``, plus a ``finish_reason``.

    ``tool_calls`` are OpenAI-format dicts (``{"id", "type": "function", "function":
    {"name", "arguments"}}``); the shorthand ``{"name": ..., "arguments": dict | str}`` is
    accepted, and a missing ``id`` is filled deterministically by :meth:`with_ids`.
    """

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None

    def message(self) -> dict[str, Any]:
        """The assistant message dict (OpenAI format)."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                normalise_tool_call(c, f"call_{n}") for n, c in enumerate(self.tool_calls)
            ]
        return msg

    def finish(self) -> str:
        """``finish_reason``: given, else ``"tool_calls"`` with calls, else ``"stop"``."""
        if self.finish_reason:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"

    def with_ids(self, seed: int, index: int) -> Reply:
        """A copy whose tool calls all carry ids, minted from (seed, request index, position)."""
        if not self.tool_calls:
            return self
        calls = []
        for n, c in enumerate(self.tool_calls):
            default = "call_" + hashlib.sha256(f"{seed}:{index}:{n}".encode()).hexdigest()[:24]
            calls.append(normalise_tool_call(c, default))
        return Reply(content=self.content, tool_calls=calls, finish_reason=self.finish_reason)


def normalise_tool_call(call: Mapping[str, Any], default_id: str) -> dict[str, Any]:
    """An OpenAI tool call dict from ``call`` (full form or ``{"name", "arguments"}`` shorthand).

    Raises:
        ValueError: no function name given.
    """
    fn = call.get("function")
    if isinstance(fn, Mapping):
        name, args = fn.get("name"), fn.get("arguments", "{}")
    else:
        name, args = call.get("name"), call.get("arguments", "{}")
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"tool call {dict(call)!r} has no function name; give "
            f"{{'name': ..., 'arguments': {{...}}}}"
        )
    if not isinstance(args, str):
        args = json.dumps(args, sort_keys=True, ensure_ascii=False)
    return {
        "id": call.get("id") or default_id,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


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


def is_summary_request(messages: Sequence[Mapping[str, Any]]) -> bool:
    """True when a request asks for a compaction summary (carries the marker)."""
    return any(SUMMARY_REQUEST_MARKER in _text_of(m.get("content")) for m in messages[:2]) or (
        bool(messages) and SUMMARY_REQUEST_MARKER in _text_of(messages[-1].get("content"))
    )


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


class ReplyPolicy:
    """Chooses the reply for a request; subclasses are the reply modes.

    ``reply(request, index, seed)`` gets the request in OpenAI chat shape (Anthropic
    requests are shown converted), its 0-based journal ``index`` and the provider seed,
    and returns a :class:`Reply`. It must not read the wall clock or global ``random``.
    """

    def reply(self, request: Mapping[str, Any], index: int, seed: int) -> Reply:
        """The :class:`Reply` for ``request`` (see class doc)."""
        raise NotImplementedError

    def reset(self) -> None:
        """Return to the policy's initial state (a full simulator reset); stateless: no-op."""


class EchoReplies(ReplyPolicy):
    """Echo mode: answers with a short deterministic echo of the last user text.

    The 8-hex digest depends on the seed, the message count and the echoed text (reply
    key mode ``"request"``) or on the seed, the request index and the text
    (``"sequence"``); see the module doc. Summary requests
    get :func:`summarise` so a host driving a compactor works unmodified.
    """

    def reply(self, request, index, seed):
        """Echo of the last user text (``echo[<8 hex>]: <text>``), or the B4 summary it asks for."""
        messages = request.get("messages") or []
        if is_summary_request(messages):
            return Reply(content=summarise(request_text(messages)))
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        text = _text_of(last_user.get("content")) if last_user else ""
        ctx = _CONTEXT.get()
        position = index if ctx is not None and ctx.mode == "sequence" else f"n{len(messages)}"
        data = f"{seed}:{position}:{text}".encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()[:8]
        return Reply(content=f"echo[{digest}]: {text[:200]}")


class SummariserReplies(ReplyPolicy):
    """Summariser mode: every request is answered with the B4 template of its content.

    Args:
        max_chars: largest summary, in characters.
    """

    def __init__(self, max_chars: int = 4000) -> None:
        self.max_chars = max_chars

    def reply(self, request, index, seed):
        """The B4 summary (:func:`summarise`) of all the request's text."""
        return Reply(
            content=summarise(request_text(request.get("messages") or []), max_chars=self.max_chars)
        )


class ScriptedReplies(ReplyPolicy):
    """Scripted mode: replies are taken in order; past the end it falls back to echo.

    Items are :class:`Reply`, a string (text reply) or a dict with ``content``,
    ``tool_calls`` (full or ``{"name", "arguments"}`` shorthand) and ``finish_reason``.
    Requests answered by a fault do not consume an item.
    """

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

    def reset(self) -> None:
        """Rewind the script to its first reply."""
        self._next = 0

    def reply(self, request, index, seed):
        """The next scripted reply, or an echo once the script is used up."""
        if self._next < len(self._replies):
            r = self._replies[self._next]
            self._next += 1
            return r
        return self._fallback.reply(request, index, seed)


class ToolScriptReplies(ReplyPolicy):
    """Tool-calling script: a pure function of the request, so retries replay the same step.

    Counts the assistant ``tool_calls`` rounds after the last real user message; while
    that count is below ``len(rounds)`` it answers with the next round's calls, then with
    ``final`` (text). Each round is a list of ``{"name", "arguments"}`` (or full OpenAI
    tool call dicts). Ids are minted from (seed, request index, position).

    Args:
        rounds: the tool-call rounds of one user turn, in order.
        final: the closing assistant text (after the last round's results).

    Raises:
        ValueError: a round is empty or a call has no name.
    """

    def __init__(self, rounds: Sequence[Sequence[Mapping[str, Any]]], final: str = "Done.") -> None:
        self.rounds = [list(r) for r in rounds]
        for n, r in enumerate(self.rounds):
            if not r:
                raise ValueError(
                    f"ToolScriptReplies round {n} is empty; give at least one call per round"
                )
            for c in r:
                normalise_tool_call(c, "check")
        self.final = final

    def reply(self, request, index, seed):
        """The next round's tool calls, or ``final`` once every round has been answered."""
        messages = request.get("messages") or []
        done = 0
        for m in reversed(messages):
            role = m.get("role")
            if role == "user":
                break
            if role == "assistant" and m.get("tool_calls"):
                done += 1
        if done < len(self.rounds):
            return Reply(tool_calls=self.rounds[done]).with_ids(seed, index)
        return Reply(content=self.final)


def canonical_json(value: Any) -> str:
    """Byte-stable JSON used for hashing requests."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
