"""Making an engine's summariser fail, for A4's summary-failure check (the two seams).

- **The host's LLM.** Engines that summarise through ``agent.auxiliary_client.call_llm`` (the
  kit's shim, or hermes-agent pointed at the kit's LLM) are served an
  :class:`~simulator.llm.engine_llm.EngineLLM` whose requests fail with a scripted
  :class:`~simulator.llm.faults.LLMFault`, delivered as Hermes delivers it (docs/host.md,
  "The engine's LLM"). An engine is on this seam when a compress() over its threshold makes
  at least one ``call_llm`` call.
- **The ``summarise`` seam.** Engines that do not call ``call_llm`` but expose a callable
  ``summarise`` attribute (the reference engines' ``summarise=`` argument, or a property
  with a setter) get it replaced, for one engine, by a callable that answers its first
  calls with the original and then fails the way the LLM would (the same exceptions,
  produced by the same faulted LLM).

Kinds drawn (:data:`KINDS`): the summary model's context too small (400
``context_length_exceeded``), a 5xx after Hermes' retries, a timeout, an empty reply.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from conformance.checks.engine_calls import compress_like_host
from simulator.llm import EngineLLM, LLMFault, collect_ledger, use_llm

#: The summary failures A4's check draws (LLMFault kinds).
KINDS = ("context_too_small", "server_error", "timeout", "empty")
#: Requests a fault covers once it starts (every retry and every later call fails).
_SPAN = 1_000
_FILLER = " ".join(["the turns to summarise"] * 60)


def fault(kind: str, first: int) -> LLMFault:
    """The :class:`LLMFault` of ``kind`` on every request from index ``first`` on."""
    extra: dict[str, Any] = {"window": 16} if kind == "context_too_small" else {}
    if kind == "server_error":
        extra["status"] = 500
    return LLMFault(kind, at=list(range(first, first + _SPAN)), **extra)


def seam_of(ctx: Any, engine: Any, history: list[dict[str, Any]], clause: str, level: str) -> str:
    """Which seam makes ``engine``'s summariser fail: ``"llm"`` when compress(``history``)
    (on ``engine``, a fresh one) calls ``call_llm``, ``"summarise"`` when the engine has a
    callable ``summarise`` attribute, else "" (it cannot be made to fail)."""
    llm = EngineLLM()
    with use_llm(llm), collect_ledger(llm) as ledger:
        compress_like_host(clause, level, engine, history)
    if ledger.as_dict().get("calls", 0) > 0:
        return "llm"
    if callable(getattr(engine, "summarise", None)):
        return "summarise"
    return ""


@contextlib.contextmanager
def failing_summariser(engine: Any, seam: str, kind: str, first: int) -> Iterator[EngineLLM]:
    """While the block runs, ``engine``'s summariser fails with ``kind`` from its call number
    ``first`` (0-based) on, through ``seam`` (:func:`seam_of`). Yields the faulted LLM (its
    ``faults`` show what fired)."""
    if seam == "llm":
        llm = EngineLLM(faults=[fault(kind, first)])
        with use_llm(llm):
            yield llm
        return
    llm = EngineLLM(faults=[fault(kind, 0)])  # its own requests: every one fails
    original = engine.summarise
    calls = [0]

    def summarise(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] <= first:
            return original(*args, **kwargs)
        from simulator.llm.auxiliary import call_llm

        with use_llm(llm):
            response = call_llm(
                task="compression",
                messages=[{"role": "user", "content": f"Summarise: {_FILLER}"}],
            )
        return response.choices[0].message.content or ""

    engine.summarise = summarise
    try:
        yield llm
    finally:
        try:
            engine.summarise = original
        except Exception:  # a read-only seam restored by the engine itself
            pass
