"""The summary DAG: leaf summaries over chunks of messages, condensed upward.

Pure functions; nothing here touches the database. A node is a dict:

``node_id``       ``lcm_`` + 24 hex chars, a hash of kind, level, children and summary
                  (content-addressed: the same input gives the same id in every process).
``kind``          ``leaf`` (children are ``[msg_key, version_hash]`` refs to verbatim
                  messages), ``condensed`` (children are node ids), or ``top`` (one per pass,
                  over the frontier; its summary is what the carrier shows, steered by
                  ``focus_topic``, A5).
``level``         0 for leaves; a condensed or top node is one above its highest child.
``summary``       text from the summariser.
``message_count`` verbatim messages reachable below the node.
``first_key``, ``last_key``  keys of the first and last covered message.

Condensation keeps the frontier like a base-``fanout`` counter: whenever the last
``fanout`` frontier nodes share a level they are replaced by one node a level up. Each
message is summarised once in a leaf and each node once in a parent, so a pass costs time
linear in the number of new messages, and the frontier stays at most
``(fanout - 1) * levels`` nodes long.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .messages import canonical_json

#: Summariser signature:
#: ``summarise(text, *, focus_topic=None, max_chars=int, previous_summary=None) -> str``.
Summariser = Callable[..., str]


@dataclass(frozen=True)
class DagParams:
    """Sizes of the DAG (messages, tokens, characters; all > 0).

    Attributes:
        leaf_chunk_messages: most messages under one leaf.
        leaf_chunk_tokens: most tokens under one leaf (a single larger message still forms a leaf).
        condense_fanout: nodes of one level folded into one parent (>= 2).
        leaf_summary_chars: cap on a leaf summary, in characters.
        condensed_summary_chars: cap on a condensed node's summary, in characters.
    """

    leaf_chunk_messages: int = 8
    leaf_chunk_tokens: int = 4000
    condense_fanout: int = 4
    leaf_summary_chars: int = 700
    condensed_summary_chars: int = 1000

    def __post_init__(self) -> None:
        for name in (
            "leaf_chunk_messages",
            "leaf_chunk_tokens",
            "leaf_summary_chars",
            "condensed_summary_chars",
        ):
            if int(getattr(self, name)) <= 0:
                raise ValueError(
                    f"DagParams.{name} must be a positive integer, got {getattr(self, name)!r}"
                )
        if int(self.condense_fanout) < 2:
            raise ValueError(
                f"DagParams.condense_fanout must be >= 2, got {self.condense_fanout!r}"
            )


_SENTENCE = re.compile(r"[^.!?\n]{3,}[.!?]?")


def fallback_summary(
    text: str, *, max_chars: int = 1000, focus_topic: str | None = None, **_: Any
) -> str:
    """Deterministic extractive summary used when no summariser is available or it fails.

    Keeps sentences mentioning ``focus_topic`` first, then the first and last sentences;
    at most ``max_chars`` characters. Linear in ``len(text)``.
    """
    sentences = [s.strip() for s in _SENTENCE.findall(text[:100_000]) if s.strip()]
    picked: list[str] = []
    if focus_topic:
        needle = focus_topic.lower()
        picked += [s for s in sentences if needle in s.lower()][:6]
    picked += sentences[:4] + sentences[-2:]
    seen = set()
    lines = []
    for s in picked:
        if s not in seen:
            seen.add(s)
            lines.append(f"- {s}")
    return "\n".join(lines)[:max_chars] or "(empty)"


_PLACEHOLDER = re.compile(r"^\(?(none|nothing|no goal|empty)\b|^continue from:\s*(\(|-|$)", re.I)


def summary_facts(summary: str) -> str:
    """The fact lines of a summary, as input for a summary one level up.

    Drops headings (``## ...``), placeholders (``(none)``, ``Continue from: (start)``) and
    bullet markers, and removes repeated lines, so summaries of summaries stay readable.
    One fact per line. Linear in ``len(summary)``.
    """
    out: list[str] = []
    seen = set()
    for raw in summary.splitlines():
        line = raw.strip()
        while line.startswith(("- ", "-\t")) or line == "-":
            line = line[1:].strip()
        if not line or line.startswith("#") or line in ("...", "…") or _PLACEHOLDER.search(line):
            continue
        if line not in seen:
            seen.add(line)
            out.append(line)
    return "\n".join(out)


def safe_summarise(
    summariser: Summariser | None,
    text: str,
    *,
    max_chars: int,
    focus_topic: str | None = None,
    previous_summary: str | None = None,
) -> str:
    """Call ``summariser``; on any exception or a non-string result use :func:`fallback_summary`.

    The result is cut to ``max_chars`` characters. A failing summariser never loses
    messages: they stay verbatim in the store whatever the summary says.
    """
    if summariser is not None:
        try:
            kwargs: dict[str, Any] = {"max_chars": max_chars}
            if focus_topic:
                kwargs["focus_topic"] = focus_topic
            if previous_summary:
                kwargs["previous_summary"] = previous_summary
            out = summariser(text, **kwargs)
            if isinstance(out, str) and out.strip():
                return out[:max_chars]
        except Exception:
            pass
    return fallback_summary(text, max_chars=max_chars, focus_topic=focus_topic)


def node_id_for(kind: str, level: int, children: Sequence[Any], summary: str) -> str:
    """Content-addressed node id: ``lcm_`` + 24 hex chars of sha256(kind, level, children,
    summary)."""
    digest = hashlib.sha256(canonical_json([kind, level, list(children), summary]).encode("utf-8"))
    return "lcm_" + digest.hexdigest()[:24]


def make_node(
    kind: str,
    level: int,
    children: Sequence[Any],
    summary: str,
    message_count: int,
    first_key: str | None,
    last_key: str | None,
    *,
    session_id: str | None = None,
    focus_topic: str | None = None,
    pass_uid: str | None = None,
) -> dict[str, Any]:
    """Build a node dict (see the module docstring for the fields)."""
    children = [list(c) if isinstance(c, (list, tuple)) else c for c in children]
    return {
        "node_id": node_id_for(kind, level, children, summary),
        "kind": kind,
        "level": int(level),
        "children": children,
        "summary": summary,
        "message_count": int(message_count),
        "first_key": first_key,
        "last_key": last_key,
        "session_id": session_id,
        "focus_topic": focus_topic,
        "pass_uid": pass_uid,
    }


def chunk_entries(
    entries: Sequence[tuple[Mapping[str, Any], int]], params: DagParams
) -> list[list[int]]:
    """Split message indexes into leaf chunks by message count and tokens.

    ``entries`` are ``(message, tokens)`` pairs in order. A chunk never starts with a
    ``tool`` message (it stays with the call that precedes it), so a tool pair is
    summarised inside one leaf. Returns lists of indexes into ``entries``.
    """
    chunks: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, (msg, tokens) in enumerate(entries):
        full = len(current) >= params.leaf_chunk_messages or (
            current and used + tokens > params.leaf_chunk_tokens
        )
        if current and full and msg.get("role") != "tool":
            chunks.append(current)
            current, used = [], 0
        current.append(i)
        used += tokens
    if current:
        chunks.append(current)
    return chunks


def condense(
    frontier: list[dict[str, Any]],
    params: DagParams,
    summariser: Summariser | None,
    *,
    session_id: str | None = None,
    pass_uid: str | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Fold the frontier upward; returns ``(new frontier, nodes created)``.

    ``frontier`` holds node dicts, oldest first. Each time the last ``condense_fanout``
    nodes share a level they become children of one ``condensed`` node a level up.
    """
    stack: list[dict[str, Any]] = []
    created: list[dict[str, Any]] = []
    fan = params.condense_fanout
    for node in frontier:
        stack.append(node)
        while len(stack) >= fan and all(n["level"] == stack[-1]["level"] for n in stack[-fan:]):
            group = stack[-fan:]
            del stack[-fan:]
            text = "\n".join(summary_facts(n["summary"]) for n in group)
            summary = safe_summarise(summariser, text, max_chars=params.condensed_summary_chars)
            parent = make_node(
                "condensed",
                group[0]["level"] + 1,
                [n["node_id"] for n in group],
                summary,
                sum(n["message_count"] for n in group),
                group[0].get("first_key"),
                group[-1].get("last_key"),
                session_id=session_id,
                pass_uid=pass_uid,
            )
            created.append(parent)
            stack.append(parent)
    return stack, created
