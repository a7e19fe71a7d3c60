"""Prompt cache control (stage 4 of the pipeline): strategy system_and_3 (P1, P2, P4).

At most 4 ``cache_control`` breakpoints: the system message (index 0, if its role is
system) and the last ``4 - used`` non-system messages that can carry a marker. The
marker is ``{"type": "ephemeral"}``, plus ``"ttl": "1h"`` when the TTL is 1h (P1).
Placement (P2, Hermes ``_apply_cache_marker``):

- native Anthropic ``role: tool`` -> on the message;
- empty content -> on the message (on the OpenAI-compatible "envelope" layout empty tool
  and assistant rows cannot carry one and are skipped);
- string content -> a one-part text list carrying the marker;
- list content -> on its last part (if that part is a dict).

The input is never mutated: marked rows are copies; other rows are the same objects.
"""

from __future__ import annotations

import copy
from typing import Any

TTL_5M = "5m"
TTL_1H = "1h"
MAX_BREAKPOINTS = 4

Message = dict[str, Any]


def marker(ttl: str = TTL_5M) -> dict[str, str]:
    """The P1 marker for ``ttl`` ("5m" or "1h").

    Raises:
        ValueError: any other TTL; use "5m" or "1h".
    """
    if ttl == TTL_5M:
        return {"type": "ephemeral"}
    if ttl == TTL_1H:
        return {"type": "ephemeral", "ttl": "1h"}
    raise ValueError(f"cache TTL {ttl!r} is not supported; use '5m' or '1h' (P1)")


def _empty(content: Any) -> bool:
    return content is None or content == "" or content == []


def can_carry_marker(message: Message, *, native_anthropic: bool) -> bool:
    """Whether a marker can be placed on ``message`` (P2)."""
    content = message.get("content")
    if native_anthropic:
        return True
    if _empty(content):
        return message.get("role") not in ("tool", "assistant")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and isinstance(content[-1], dict)


def place_marker(message: Message, mark: dict[str, str], *, native_anthropic: bool) -> Message:
    """A copy of ``message`` carrying ``mark`` where P2 puts it."""
    m = copy.deepcopy(message)
    content = m.get("content")
    if native_anthropic and m.get("role") == "tool":
        m["cache_control"] = dict(mark)
    elif _empty(content):
        m["cache_control"] = dict(mark)
    elif isinstance(content, str):
        m["content"] = [{"type": "text", "text": content, "cache_control": dict(mark)}]
    elif isinstance(content, list) and isinstance(content[-1], dict):
        content[-1]["cache_control"] = dict(mark)
    return m


def apply_cache_control(
    messages: list[Message], *, ttl: str = TTL_5M, native_anthropic: bool = False
) -> list[Message]:
    """Stage 4: system_and_3 (P1) with P2 placement; returns a new list.

    Args:
        messages: the request messages (not mutated).
        ttl: "5m" (default) or "1h".
        native_anthropic: the native Anthropic layout (tool rows carry message markers).
    """
    mark = marker(ttl)
    out = list(messages)
    used = 0
    if out and isinstance(out[0], dict) and out[0].get("role") == "system":
        out[0] = place_marker(out[0], mark, native_anthropic=native_anthropic)
        used = 1
    remaining = MAX_BREAKPOINTS - used
    for i in range(len(out) - 1, -1, -1):
        if remaining <= 0:
            break
        m = out[i]
        if not isinstance(m, dict) or m.get("role") == "system":
            continue
        if can_carry_marker(m, native_anthropic=native_anthropic):
            out[i] = place_marker(m, mark, native_anthropic=native_anthropic)
            remaining -= 1
    return out


def count_markers(messages: list[Message]) -> int:
    """Number of ``cache_control`` markers in ``messages`` (on messages and on parts)."""
    n = 0
    for m in messages:
        if not isinstance(m, dict):
            continue
        n += "cache_control" in m
        if isinstance(m.get("content"), list):
            n += sum(1 for p in m["content"] if isinstance(p, dict) and "cache_control" in p)
    return n
