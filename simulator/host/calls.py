"""How the host calls engine methods whose signatures vary between engines (A4).

Hermes passes ``compress()`` only the optional arguments its signature accepts:
candidates ``current_tokens``, ``focus_topic``, ``force`` and ``memory_context`` (the
last only when non-empty). A ``**kwargs`` signature gets all of them; an uninspectable
one gets only ``current_tokens``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

COMPRESS_OPTIONAL_ARGS = ("current_tokens", "focus_topic", "force", "memory_context")


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
) -> dict[str, Any]:
    """The keyword arguments the host passes to ``engine.compress`` (A4)."""
    candidates: dict[str, Any] = {
        "current_tokens": current_tokens,
        "focus_topic": focus_topic,
        "force": force,
    }
    if memory_context:
        candidates["memory_context"] = memory_context
    return accepted_kwargs(engine.compress, candidates)


def call_compress(engine: Any, messages: list[dict[str, Any]], **optional: Any) -> Any:
    """Call ``engine.compress(messages, **accepted optional args)``; exceptions propagate."""
    return engine.compress(messages, **compress_kwargs(engine, **optional))
