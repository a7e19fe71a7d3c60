"""Helpers checks use to drive an engine the way the host does.

Engine exceptions become :class:`~conformance.expect.ContractViolation` of the clause
being checked (an engine that raises where the contract expects a value breaks it).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Dict, List, Optional

from conformance.expect import ContractViolation, fail, short
from simulator.host import calls, hooks
from simulator.provider.tokens import count_messages


def invoke(clause: str, level: str, engine: Any, method: str, *args: Any,
           example: Optional[Dict[str, Any]] = None, **kwargs: Any) -> Any:
    """Call ``engine.<method>``; an exception is a violation of ``clause``."""
    __tracebackhide__ = True
    try:
        return getattr(engine, method)(*args, **kwargs)
    except ContractViolation:
        raise
    except Exception as exc:
        fail(clause, level, f"{method}() raised", expected="a normal return",
             got=f"{type(exc).__name__}: {short(str(exc), 200)}", example=example)


def compress_like_host(clause: str, level: str, engine: Any, history: List[Dict[str, Any]], *,
                       focus_topic: Optional[str] = None, force: bool = False) -> Any:
    """compress() on a deep snapshot with the kwargs the host would pass (A4)."""
    snapshot = copy.deepcopy(history)
    kwargs = calls.compress_kwargs(engine, current_tokens=count_messages(history),
                                   focus_topic=focus_topic, force=force)
    return invoke(clause, level, engine, "compress", snapshot, example={"history": history}, **kwargs)


def select_like_host(clause: str, level: str, engine: Any, history: List[Dict[str, Any]]) -> Any:
    """select_context() with the arguments the host passes (H3): request = history."""
    request = copy.deepcopy(history)
    incoming = next((copy.deepcopy(m) for m in reversed(history) if m.get("role") == "user"), None)
    return invoke(clause, level, engine, "select_context", request,
                  conversation_messages=copy.deepcopy(history), incoming_message=incoming,
                  budget_tokens=int(getattr(engine, "context_length", 0) or 0),
                  example={"history": history})


def overrides_select_context(engine: Any) -> bool:
    """H2: whether the host would call ``select_context`` at all."""
    return hooks.overrides(engine, "select_context")


def signature_of(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(uninspectable)"
