"""The request pipeline: the stages of one provider call, in order (H4).

``build_request`` runs, in this order and visible here in one place:

1. :func:`assemble` - system prompt + persisted history + incoming message, as per-call
   clones (the persisted dicts are never handed to later stages);
2. :func:`simulator.host.hooks.apply_select_context` - request-only replacement (H1-H3);
3. :func:`sanitize` - U9 stripping (persistence-only fields never reach the wire);
4. :func:`apply_cache_control` - prompt-cache markers (P1, P2);

and the caller sends the result to the provider (stage 5).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional

from simulator.host import hooks
from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS


def assemble(
    system_prompt: Optional[str],
    history: List[Dict[str, Any]],
    incoming: Optional[Dict[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Stage 1: the assembled request as per-call deep clones.

    ``history`` is the persisted transcript; if its first message is already the system
    prompt it is used as is, otherwise ``system_prompt`` (when given) is prepended.
    ``incoming`` is appended when it is not already the last history message.
    """
    out = [copy.deepcopy(m) for m in history]
    if system_prompt and not (out and out[0].get("role") == "system"):
        out.insert(0, {"role": "system", "content": system_prompt})
    if incoming is not None and not (history and history[-1] is incoming):
        out.append(copy.deepcopy(incoming))
    return out


def strip_persistence_fields(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """U9: copies of ``messages`` without ``message_uid`` and the other persistence-only fields."""
    return [
        {k: v for k, v in m.items() if k not in PERSISTENCE_ONLY_FIELDS} if isinstance(m, dict) else m
        for m in messages
    ]


def sanitize(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Stage 3: request sanitizers. First cut: U9 stripping only."""
    return strip_persistence_fields(messages)


def apply_cache_control(messages: List[Dict[str, Any]], *, enabled: bool = False) -> List[Dict[str, Any]]:
    """Stage 4: prompt-cache markers (P1, P2). First cut: off unless ``enabled``.

    When enabled, strategy system_and_3: the system prompt and the last 3 non-system
    messages get ``{"type": "ephemeral"}``; string content becomes a one-part text list
    carrying the marker, list content gets it on its last part, empty content on the message.
    """
    if not enabled:
        return messages
    out = [dict(m) for m in messages]
    targets = [i for i, m in enumerate(out) if m.get("role") == "system"][:1]
    targets += [i for i, m in enumerate(out) if m.get("role") != "system"][-3:]
    for i in targets:
        m = out[i]
        marker = {"type": "ephemeral"}
        content = m.get("content")
        if isinstance(content, str) and content:
            m["content"] = [{"type": "text", "text": content, "cache_control": marker}]
        elif isinstance(content, list) and content:
            parts = [dict(p) if isinstance(p, dict) else p for p in content]
            if isinstance(parts[-1], dict):
                parts[-1]["cache_control"] = marker
            m["content"] = parts
        else:
            m["cache_control"] = marker
    return out


def build_request(
    engine: Any,
    *,
    system_prompt: Optional[str],
    history: List[Dict[str, Any]],
    incoming: Optional[Dict[str, Any]],
    budget_tokens: int,
    cache_control: bool = False,
    recorder: Any = None,
) -> List[Dict[str, Any]]:
    """Stages 1-4 in order; returns the ``messages`` to send to the provider (H4)."""
    request = assemble(system_prompt, history, incoming)
    request = hooks.apply_select_context(
        engine,
        request,
        conversation_messages=history,
        incoming_message=incoming,
        budget_tokens=budget_tokens,
        recorder=recorder,
    )
    request = sanitize(request)
    return apply_cache_control(request, enabled=cache_control)
