"""Making an engine's summariser fail, for A4's summary-failure check (the two seams).

- **The host's LLM.** Engines that summarise through ``agent.auxiliary_client.call_llm`` (the
  kit's shim, or hermes-agent pointed at the kit's LLM over loopback) reach the case's
  :class:`~simulator.llm.engine_llm.EngineLLM` (:func:`simulator.llm.current_llm`, the one the
  case serves on both paths); its requests fail with a scripted
  :class:`~simulator.llm.faults.LLMFault` added for the block, delivered as Hermes delivers it
  (docs/host.md, "The engine's LLM"). An engine is on this seam when a compress() over its
  threshold sends that LLM at least one request. Over HTTP a ``timeout`` drops the connection
  after 50 ms: Hermes' own compression deadline (at least 300 s) is longer than any per-call
  limit, and the client takes the same transient-error path for both.
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

from conformance.authoring.engine_llm import hermes_client_present
from conformance.checks.engine_calls import compress_like_host
from conformance.runtime.timeouts import kit_time
from simulator.llm import EngineLLM, LLMFault, current_llm, use_llm

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
    if kind == "timeout" and hermes_client_present():
        extra["wall_seconds"] = 0.05  # dropped, not held past the per-call limit (module doc)
    return LLMFault(kind, at=list(range(first, first + _SPAN)), **extra)


@contextlib.contextmanager
def _case_llm() -> Iterator[EngineLLM]:
    """The LLM the case serves (made current by
    :func:`conformance.authoring.engine_llm.engine_llm`), or
    a fresh one made current for the block outside a case."""
    llm = current_llm()
    if llm is not None:
        yield llm
        return
    llm = EngineLLM()
    with use_llm(llm):
        yield llm


def seam_of(ctx: Any, engine: Any, history: list[dict[str, Any]], clause: str, level: str) -> str:
    """Which seam makes ``engine``'s summariser fail: ``"llm"`` when compress(``history``)
    (on ``engine``, a fresh one) sends the case's LLM a request, ``"summarise"`` when the
    engine has a callable ``summarise`` attribute, else "" (it cannot be made to fail)."""
    with _case_llm() as llm:
        before = llm.requests
        compress_like_host(clause, level, engine, history)
        if llm.requests > before:
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
        with _case_llm() as llm:
            scripted = llm.add_fault(fault(kind, llm.requests + first))
            try:
                yield llm
            finally:
                llm.faults.remove(scripted)
        return
    llm = EngineLLM(faults=[fault(kind, 0)])  # its own requests: every one fails
    original = engine.summarise
    calls = [0]

    def summarise(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] <= first:
            return original(*args, **kwargs)
        with kit_time():  # the kit's stand-in summariser: its time is not the engine's
            from simulator.llm.auxiliary import call_llm

            with use_llm(llm):
                try:
                    response = call_llm(
                        task="compression",
                        messages=[{"role": "user", "content": f"Summarise: {_FILLER}"}],
                    )
                except Exception as exc:
                    error = exc
                else:
                    return response.choices[0].message.content or ""
        raise error  # outside the kit's time: what the engine does with it is its own

    engine.summarise = summarise
    try:
        yield llm
    finally:
        try:
            engine.summarise = original
        except Exception:  # a read-only seam restored by the engine itself
            pass
