"""Per-agent engines (C1-C3): every agent init gets its own engine from the registered one.

Documented profile: ``engine.clone_for_agent()`` when callable (no deepcopy attempted),
else ``copy.deepcopy``. If that raises, the agent falls back to the built-in compressor
and the host logs ``Context engine 'X' could not be safely copied for this agent``
(C3). ``hermes-0.19``: ``copy.deepcopy`` only.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulator.host import builtin
from simulator.host.profiles import HostProfile, get_profile

log = logging.getLogger("simulator.host")

#: C3's log line (Hermes' wording); ``%s`` = engine name, then the error.
COPY_FAILED = (
    "Context engine '%s' could not be safely copied for this agent (%s) — "
    "falling back to built-in compressor"
)


@dataclass
class AgentEngine:
    """The engine one agent uses.

    Attributes:
        engine: the per-agent engine (a clone, or the built-in compressor on fallback).
        fell_back: True when cloning failed and the built-in compressor replaced it (C3).
        error: the cloning error text, or "".
        method: "clone_for_agent", "deepcopy", or "builtin" (the registered engine was
            already the built-in one and was copied).
    """

    engine: Any
    fell_back: bool = False
    error: str = ""
    method: str = ""


def engine_name(engine: Any) -> str:
    """``engine.name`` as a string, or the class name when reading it fails."""
    try:
        return str(engine.name)
    except Exception:
        return type(engine).__name__


def clone_for_agent(
    registered: Any,
    *,
    profile: Any = None,
    recorder: Any = None,
    builtin_factory: Callable[[], Any] | None = None,
) -> AgentEngine:
    """C1/C3: the engine for a new agent (parent, subagent or gateway session).

    Args:
        registered: the process-wide registered engine (never handed to an agent itself).
        profile: host profile (``clone_for_agent`` hook used only when the profile has it).
        recorder: records the ``clone_for_agent`` call when given.
        builtin_factory: the built-in compressor to fall back to (None: the host's own,
            :func:`simulator.host.builtin.new_builtin`).
    Returns:
        :class:`AgentEngine`; never raises for a failing clone (C3 falls back instead).
    """
    prof: HostProfile = get_profile(profile)
    hook = getattr(registered, "clone_for_agent", None)
    try:
        if prof.clone_for_agent and callable(hook):
            call = recorder.call if recorder is not None else (lambda e, m: getattr(e, m)())
            return AgentEngine(call(registered, "clone_for_agent"), method="clone_for_agent")
        return AgentEngine(copy.deepcopy(registered), method="deepcopy")
    except Exception as exc:  # C3
        error = f"{type(exc).__name__}: {exc}"
        log.warning(COPY_FAILED, engine_name(registered), error)
        return AgentEngine(
            builtin.new_builtin(builtin_factory), fell_back=True, error=error, method="builtin"
        )
