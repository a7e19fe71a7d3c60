"""Which :class:`~simulator.llm.engine_llm.EngineLLM` backs ``call_llm`` right now.

One process-wide setting, not a per-thread one: engines call their LLM from the host's
pool threads (TS1), which must see the LLM the check or scenario chose.
``with use_llm(llm):`` makes ``llm`` current for the block (nesting restores the outer one;
blocks opened by different threads may end in any order); ``use_llm(None)`` makes
``call_llm`` fail as hermes-agent 0.19.0 does with no provider configured. Outside any
block the process default (:func:`default_llm`, summariser mode, seed 0) answers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from simulator.llm.engine_llm import EngineLLM

_lock = threading.Lock()
_stack: list[tuple[object, EngineLLM | None]] = []
_default: EngineLLM | None = None


def default_llm() -> EngineLLM:
    """The process default LLM (created on first use)."""
    global _default
    with _lock:
        if _default is None:
            _default = EngineLLM()
        return _default


def current_llm() -> EngineLLM | None:
    """The LLM ``call_llm`` uses now: the innermost active :func:`use_llm`, else the default.

    None means "no provider configured" (``use_llm(None)``).
    """
    with _lock:
        if _stack:
            return _stack[-1][1]
    return default_llm()


@contextmanager
def use_llm(llm: EngineLLM | None) -> Iterator[EngineLLM | None]:
    """Serve ``llm`` to every ``call_llm`` in the process (any thread) while the block runs.

    Args:
        llm: the LLM, or None for "no provider configured" (``call_llm`` raises Hermes'
            ``RuntimeError("No LLM provider configured ...")``).
    """
    token = object()
    with _lock:
        _stack.append((token, llm))
    try:
        yield llm
    finally:
        with _lock:
            _stack[:] = [entry for entry in _stack if entry[0] is not token]
