"""Per-request and per-turn hooks: identity skipping (H2) and fail-open calls (H1, H3, H5).

``overrides(engine, name)`` follows Hermes' ``_engine_overrides_hook``: a hook counts as
overridden unless its underlying function *is* the ABC's default. An instance-attribute
function counts as an override; an engine that is not a ContextEngine but has a
callable hook is called. Log lines are Hermes' own wording (docs/host.md).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from simulator.host import calls, shim

log = logging.getLogger("simulator.host")

SELECT_CONTEXT_FAILED = (
    "Context engine select_context hook failed; using unmodified request messages (session=%s)"
)
SELECT_CONTEXT_INVALID = (
    "Context engine select_context returned an invalid value (not a non-empty list of dicts); "
    "ignoring (session=%s)"
)
ON_TURN_COMPLETE_FAILED = "Context engine on_turn_complete hook failed (session=%s)"


_BASE: Any = None


def _abc_default(name: str) -> Any:
    """The ABC's function for ``name`` (the base class is looked up once, then cached)."""
    global _BASE
    if _BASE is None:
        _BASE = shim.context_engine_base()
    return getattr(_BASE, name, None)


def overrides(engine: Any, name: str) -> bool:
    """H2: True when ``engine.<name>`` is callable and is not the ABC's default function."""
    if engine is None:
        return False
    hook = getattr(engine, name, None)
    if not callable(hook):
        return False
    default = _abc_default(name)
    if default is None:
        return True
    return getattr(hook, "__func__", None) is not default


def valid_selection(selected: Any) -> bool:
    """H3: a replacement is accepted only as a non-empty list of dicts."""
    return (
        isinstance(selected, list) and bool(selected) and all(isinstance(m, dict) for m in selected)
    )


def apply_select_context(
    engine: Any,
    request_messages: list[dict[str, Any]],
    *,
    conversation_messages: list[dict[str, Any]] | None,
    incoming_message: dict[str, Any] | None,
    budget_tokens: int,
    recorder: Any = None,
    session_id: str = "",
) -> list[dict[str, Any]]:
    """H1-H3: return the messages for one provider call.

    Skipped by identity when the engine keeps the ABC default (H2): the very same list
    object comes back and nothing is copied. Otherwise the engine gets structural (deep)
    copies of the persisted history and the incoming message, so it cannot corrupt them,
    and ``budget_tokens`` (the context length, tokens). Outcomes: None -> the same object,
    silently; an exception, ``[]``, a non-list or a list holding a non-dict -> the same
    object and one WARNING (fail-open, H1/H3); a non-empty list of dicts -> returned as
    is, for this one call only (the caller never persists it).
    """
    if not overrides(engine, "select_context"):
        return request_messages
    conv = (
        [copy.deepcopy(m) for m in conversation_messages]
        if conversation_messages is not None
        else None
    )
    incoming = (
        copy.deepcopy(incoming_message) if isinstance(incoming_message, dict) else incoming_message
    )
    call = recorder.call if recorder is not None else _plain_call
    try:
        selected = call(
            engine,
            "select_context",
            request_messages,
            **calls.select_context_kwargs(
                conversation_messages=conv, incoming_message=incoming, budget_tokens=budget_tokens
            ),
        )
    except Exception:
        log.warning(SELECT_CONTEXT_FAILED, session_id, exc_info=True)
        return request_messages
    if selected is None:
        return request_messages
    if valid_selection(selected):
        return selected
    log.warning(SELECT_CONTEXT_INVALID, session_id)
    return request_messages


def fire_on_turn_complete(
    engine: Any,
    transcript: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    recorder: Any = None,
    session_id: str = "",
    usage_keyword: bool = False,
    **meta: Any,
) -> bool:
    """H5: hand the engine a copy of the final transcript; swallow and log errors.

    The list is new and each message is a structural clone (what current Hermes passes;
    the documented promise is a read-only shallow copy, so this is at least as
    safe). ``meta`` carries turn_id, task_id, api_call_count, interrupted, failed and
    turn_exit_reason. ``usage`` goes positionally (documented) or as ``usage=`` when
    ``usage_keyword`` (what Hermes 0.22 does). Returns True when the hook was called (False:
    skipped by identity).
    """
    if not overrides(engine, "on_turn_complete"):
        return False
    call = recorder.call if recorder is not None else _plain_call
    try:
        rows = [copy.deepcopy(m) for m in transcript]
        if usage_keyword:
            call(
                engine,
                "on_turn_complete",
                rows,
                usage=usage,
                **calls.on_turn_complete_kwargs(**meta),
            )
        else:
            call(engine, "on_turn_complete", rows, usage, **calls.on_turn_complete_kwargs(**meta))
    except Exception:
        log.warning(ON_TURN_COMPLETE_FAILED, session_id, exc_info=True)
    return True


def _plain_call(engine: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    return getattr(engine, method)(*args, **kwargs)
