"""The shapes of the host's calls into an engine, built in one place (A4, O4, H3, H5).

The reference host, the conformance checks, the scenarios and the snapshot tier all call
engines through these shapes, so every caller passes what Hermes passes:

- ``compress(messages, **compress_kwargs(...))``: Hermes passes only the optional arguments
  the signature accepts: candidates ``current_tokens``, ``focus_topic``, ``force`` and
  ``memory_context`` (the last only when non-empty). A ``**kwargs`` signature gets all of
  them; an uninspectable one gets only ``current_tokens`` (A4).
- ``update_model(**update_model_kwargs(model, context_length, ...))`` with Hermes' six
  keywords (O4, K1).
- ``select_context(request_messages, **select_context_kwargs(...))`` (H3).
- ``on_turn_complete(messages, usage, **on_turn_complete_kwargs(...))`` (H5).
- ``prune_tool_results_only(messages, **prune_tool_results_only_kwargs(...))`` (O13) and
  ``get_automatic_compaction_status_message(**status_message_kwargs(...))``: the calls Hermes
  0.22 added (the ``hermes-0.22`` profile's host makes them; O13's check uses the first).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

#: The keyword arguments ``on_turn_complete`` may receive (H5).
TURN_COMPLETE_KWARGS = (
    "turn_id",
    "task_id",
    "api_call_count",
    "interrupted",
    "failed",
    "turn_exit_reason",
)


def accepted_kwargs(fn: Callable[..., Any], candidates: dict[str, Any]) -> dict[str, Any]:
    """Filter ``candidates`` down to the keyword arguments ``fn`` accepts (A4)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {k: v for k, v in candidates.items() if k == "current_tokens"}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(candidates)
    return {
        k: v
        for k, v in candidates.items()
        if k in params
        and params[k].kind
        in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }


def compress_kwargs(
    engine: Any,
    *,
    current_tokens: int | None = None,
    focus_topic: str | None = None,
    force: bool = False,
    memory_context: str = "",
    bypass_cooldown: bool = False,
) -> dict[str, Any]:
    """The keyword arguments the host passes to ``engine.compress`` (A4; tokens).

    ``bypass_cooldown=True`` is a candidate only when given (Hermes 0.22 passes it on
    overflow recovery and on the stall retry); like every candidate it reaches the engine
    only when the signature accepts it."""
    candidates: dict[str, Any] = {
        "current_tokens": current_tokens,
        "focus_topic": focus_topic,
        "force": force,
    }
    if memory_context:
        candidates["memory_context"] = memory_context
    if bypass_cooldown:
        candidates["bypass_cooldown"] = True
    return accepted_kwargs(engine.compress, candidates)


def update_model_kwargs(
    model: str,
    context_length: int,
    *,
    base_url: str = "",
    api_key: str = "",
    provider: str = "",
    api_mode: str = "chat_completions",
) -> dict[str, Any]:
    """O4/K1: the keyword arguments of one ``update_model`` call (context_length in tokens)."""
    return {
        "model": model,
        "context_length": int(context_length),
        "base_url": base_url,
        "api_key": api_key,
        "provider": provider,
        "api_mode": api_mode,
    }


def select_context_kwargs(
    *,
    conversation_messages: list[dict[str, Any]] | None,
    incoming_message: dict[str, Any] | None,
    budget_tokens: int,
) -> dict[str, Any]:
    """H3: the keyword arguments after ``request_messages`` (budget in tokens)."""
    return {
        "conversation_messages": conversation_messages,
        "incoming_message": incoming_message,
        "budget_tokens": int(budget_tokens),
    }


def on_turn_complete_kwargs(**meta: Any) -> dict[str, Any]:
    """H5: the keyword arguments after ``(messages, usage)``: :data:`TURN_COMPLETE_KWARGS` only.

    Raises:
        TypeError: a keyword Hermes does not pass (a kit bug).
    """
    unknown = sorted(set(meta) - set(TURN_COMPLETE_KWARGS))
    if unknown:
        raise TypeError(f"on_turn_complete gets no {unknown}; known: {TURN_COMPLETE_KWARGS}")
    return dict(meta)


def prune_tool_results_only_kwargs(current_tokens: int | None) -> dict[str, Any]:
    """O13: the keyword argument after ``messages`` (Hermes 0.22 passes ``current_tokens=``
    by keyword: its real prompt tokens)."""
    return {"current_tokens": None if current_tokens is None else int(current_tokens)}


def status_message_kwargs(
    *, phase: str, default_message: str, approx_tokens: int, threshold_tokens: int
) -> dict[str, Any]:
    """The keyword arguments of ``get_automatic_compaction_status_message`` (Hermes 0.22, via
    ``automatic_compaction_status_message``): ``phase`` is ``"preflight"`` or ``"compress"``,
    then the best-effort context ``approx_tokens`` / ``threshold_tokens`` (tokens).

    Raises:
        ValueError: an unknown phase (a kit bug).
    """
    if phase not in ("preflight", "compress"):
        raise ValueError(f"phase must be 'preflight' or 'compress', got {phase!r}")
    return {
        "phase": phase,
        "default_message": default_message,
        "approx_tokens": int(approx_tokens),
        "threshold_tokens": int(threshold_tokens),
    }
