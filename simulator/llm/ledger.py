"""What an engine's own LLM calls cost, collected per check or scenario.

``with collect_ledger() as ledger:`` records every call and request any
:class:`~simulator.llm.engine_llm.EngineLLM` serves while the block runs, from any thread
(TS1: engines summarise on the host's pool threads); ``collect_ledger(llm)`` records one
LLM only. Blocks nest: each active ledger sees everything in its scope. ``ledger.as_dict()``
is a plain JSON-ready dict for a verdict:

==========================  ================================================================
``calls``                   ``call_llm`` calls (over HTTP: requests, the server cannot tell a
                            Hermes retry from a new call)
``requests``                provider requests, retries and failed ones included
``failed_requests``         requests answered with an error or timed out
``faults``                  fired :class:`~simulator.llm.faults.LLMFault` kinds -> count
``errors``                  exception class names ``call_llm`` raised to the engine -> count
``prompt_tokens`` ...       ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` (cache
                            reads), ``cache_write_tokens``: sums of the provider's usage (tokens)
``cost_usd``                simulated cost (USD) at the provider's model prices
``models``                  model id -> requests
==========================  ================================================================
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RequestRecord:
    """One request the engine's LLM answered.

    Attributes:
        index: 0-based request index of that LLM.
        model: model id requested.
        status: HTTP status answered (200, 429 ...); 0 for a timeout (no answer).
        fault: the fired fault kind, or None.
        prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens: usage (tokens).
        cost: simulated cost (USD).
    """

    index: int
    model: str
    status: int
    fault: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0


def record_from_body(
    index: int, model: str, status: int, fault: str | None, body: Any
) -> RequestRecord:
    """A :class:`RequestRecord` from a provider answer (OpenAI-shaped ``body`` dict or None)."""
    usage = body.get("usage") if isinstance(body, dict) and status == 200 else None
    if not isinstance(usage, dict):
        return RequestRecord(index, model, status, fault)
    details = usage.get("prompt_tokens_details") or {}
    return RequestRecord(
        index,
        model,
        status,
        fault,
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(details.get("cached_tokens") or 0),
        int(details.get("cache_write_tokens") or 0),
        float(usage.get("cost") or 0.0),
    )


class Ledger:
    """Running totals of engine-LLM calls (see the module doc). Thread-safe.

    Attributes:
        llm: the one LLM recorded, or None for all.
        records: every :class:`RequestRecord`, in arrival order.
    """

    def __init__(self, llm: Any = None) -> None:
        self.llm = llm
        self.records: list[RequestRecord] = []
        self.calls = 0
        self.errors: dict[str, int] = {}
        self._lock = threading.Lock()

    def _wants(self, llm: Any) -> bool:
        return self.llm is None or self.llm is llm

    def add_call(self) -> None:
        """Count one ``call_llm`` call."""
        with self._lock:
            self.calls += 1

    def add_request(self, record: RequestRecord) -> None:
        """Add one answered request."""
        with self._lock:
            self.records.append(record)

    def add_error(self, name: str) -> None:
        """Count one exception (class ``name``) raised to the engine."""
        with self._lock:
            self.errors[name] = self.errors.get(name, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        """The totals as a JSON-ready dict (map keys sorted; cost rounded to 1e-10 USD)."""
        with self._lock:
            records = list(self.records)
            calls, errors = self.calls, dict(self.errors)
        faults: dict[str, int] = {}
        models: dict[str, int] = {}
        for r in records:
            if r.fault:
                faults[r.fault] = faults.get(r.fault, 0) + 1
            models[r.model] = models.get(r.model, 0) + 1
        return {
            "calls": calls,
            "requests": len(records),
            "failed_requests": sum(1 for r in records if r.status != 200),
            "faults": dict(sorted(faults.items())),
            "errors": dict(sorted(errors.items())),
            "prompt_tokens": sum(r.prompt_tokens for r in records),
            "completion_tokens": sum(r.completion_tokens for r in records),
            "cached_tokens": sum(r.cached_tokens for r in records),
            "cache_write_tokens": sum(r.cache_write_tokens for r in records),
            "cost_usd": round(sum(r.cost for r in records), 10),
            "models": dict(sorted(models.items())),
        }


_active: list[Ledger] = []
_active_lock = threading.Lock()


def _targets(llm: Any) -> list[Ledger]:
    with _active_lock:
        return [ledger for ledger in _active if ledger._wants(llm)]


def note_call(llm: Any) -> None:
    """Count a ``call_llm`` call of ``llm`` in every active ledger that records it."""
    for ledger in _targets(llm):
        ledger.add_call()


def note_request(llm: Any, record: RequestRecord) -> None:
    """Add a request of ``llm`` to every active ledger that records it."""
    for ledger in _targets(llm):
        ledger.add_request(record)


def note_error(llm: Any, name: str) -> None:
    """Count an exception ``call_llm`` raised to the engine, for ``llm``."""
    for ledger in _targets(llm):
        ledger.add_error(name)


@contextmanager
def collect_ledger(llm: Any = None) -> Iterator[Ledger]:
    """Collect a :class:`Ledger` while the block runs (all LLMs, or ``llm`` only); any thread."""
    ledger = Ledger(llm)
    with _active_lock:
        _active.append(ledger)
    try:
        yield ledger
    finally:
        with _active_lock:
            _active.remove(ledger)
