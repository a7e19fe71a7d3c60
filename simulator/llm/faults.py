"""Scripted faults of the engine's LLM (the summary model behind ``call_llm``).

A :class:`LLMFault` fires on a request of one :class:`~simulator.llm.engine_llm.EngineLLM`
by request index (``at``), by content (``contains``) or on every request, at most
``times`` times; never by chance. Kinds and what the request gets:

=====================  ====================================================================
``context_too_small``  the provider's own 400 ``context_length_exceeded`` (real token count)
                       for a model whose window is ``window`` tokens
``rate_limit``         the provider's 429 with ``retry-after`` = ``retry_after`` seconds
``server_error``       the provider's 500 (``status`` picks another 5xx, e.g. 502 / 504)
``unavailable``        the provider's 503
``overloaded``         the provider's 529 ``overloaded_error``
``timeout``            no answer before the client's deadline (``wall_seconds`` real seconds
                       of hanging; 0: the deadline passes on the virtual clock only)
``empty``              200 with ``content: ""`` (``finish_reason: "stop"``)
``cut``                200 with the reply cut after ``cut_tokens`` tokens,
                       ``finish_reason: "length"``
=====================  ====================================================================

Request indices count every request the LLM received, 0-based; a Hermes retry is a new
request. How each kind reaches an engine through ``call_llm`` is documented in
``docs/host.md`` ("The engine's LLM (auxiliary client)").
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from simulator.provider.faults import Fault

KINDS = (
    "context_too_small",
    "rate_limit",
    "server_error",
    "unavailable",
    "overloaded",
    "timeout",
    "empty",
    "cut",
)
#: Kinds answered by the provider's own error bodies (simulator.provider.faults kinds).
PROVIDER_KINDS = ("rate_limit", "server_error", "unavailable", "overloaded")


@dataclass
class LLMFault:
    """One scripted fault of the engine's LLM.

    Attributes:
        kind: one of :data:`KINDS`.
        at: request indices (0-based) it fires on; None: any request.
        contains: fires only when the last message's text contains this substring.
        times: fires at most this many times (None: unlimited).
        status: ``server_error``: HTTP status (default 500; 502, 504 ...).
        retry_after: ``rate_limit``: seconds advertised in ``retry-after`` (virtual seconds).
        window: ``context_too_small``: the model's context window (tokens); a prompt within
            it is answered normally.
        cut_tokens: ``cut``: tokens of the reply kept (>= 1).
        wall_seconds: ``timeout``: real seconds the LLM hangs (the shim blocks
            ``min(wall_seconds, deadline)``; over HTTP the server holds the request that
            long, 0 = until the server stops, then drops the connection: make it longer
            than the client's deadline, or the client sees a connection error).
        message: provider error message override (``PROVIDER_KINDS``).
        fired: how often it fired so far.

    Raises:
        ValueError: unknown kind, negative values or a ``cut_tokens`` / ``window`` below 1.
    """

    kind: str
    at: list[int] | None = None
    contains: str | None = None
    times: int | None = None
    status: int | None = None
    retry_after: float = 1.0
    window: int = 2048
    cut_tokens: int = 16
    wall_seconds: float = 0.0
    message: str | None = None
    fired: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"LLMFault kind {self.kind!r} is unknown; use one of {', '.join(KINDS)}"
            )
        if isinstance(self.at, int):
            self.at = [self.at]
        if self.retry_after < 0 or self.wall_seconds < 0 or (self.times or 0) < 0:
            raise ValueError("LLMFault: retry_after, wall_seconds and times must be >= 0")
        if self.cut_tokens < 1 or self.window < 1:
            raise ValueError("LLMFault: cut_tokens and window must be >= 1")

    def provider_fault(self) -> Fault:
        """The one-shot provider ``Fault`` that answers a ``PROVIDER_KINDS`` fault.

        Raises:
            ValueError: ``kind`` is not answered by a provider error body.
        """
        if self.kind not in PROVIDER_KINDS:
            raise ValueError(f"LLMFault {self.kind!r} has no provider fault")
        return Fault(
            self.kind,
            when={},
            times=1,
            status=self.status,
            retry_after=self.retry_after,
            message=self.message,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (None fields and the ``fired`` counter left out)."""
        d = asdict(self)
        d.pop("fired")
        return {k: v for k, v in d.items() if v is not None}


class LLMFaultSchedule:
    """Ordered :class:`LLMFault` list; the first fault that matches a request fires. Thread-safe."""

    def __init__(self, faults: Sequence[LLMFault] = ()) -> None:
        self._faults = list(faults)
        self._lock = threading.Lock()

    @classmethod
    def from_json(cls, items: Any) -> LLMFaultSchedule:
        """Build from a JSON list of fault dicts (``[{"kind": "rate_limit", "times": 1}]``).

        Raises:
            ValueError: not a list of objects, or a bad fault (the message says which).
        """
        if not isinstance(items, list):
            raise ValueError(
                'LLM faults must be a JSON array like [{"kind": "timeout", "at": [0]}]'
            )
        out = []
        for n, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ValueError(f"LLM faults[{n}] must be an object")
            try:
                out.append(LLMFault(**dict(item)))
            except TypeError as exc:
                raise ValueError(f"LLM faults[{n}]: {exc}") from None
        return cls(out)

    def add(self, fault: LLMFault) -> None:
        """Append ``fault``."""
        with self._lock:
            self._faults.append(fault)

    def remove(self, fault: LLMFault) -> None:
        """Remove ``fault`` (the same object ``add`` was given); no-op when it is not there."""
        with self._lock:
            self._faults = [f for f in self._faults if f is not fault]

    def clear(self) -> None:
        """Remove every fault."""
        with self._lock:
            self._faults.clear()

    def to_json(self) -> list[dict[str, Any]]:
        """The schedule as JSON-ready dicts."""
        with self._lock:
            return [f.to_json() for f in self._faults]

    def __len__(self) -> int:
        return len(self._faults)

    def match(self, index: int, last_text: str) -> LLMFault | None:
        """The fault firing on request ``index`` (last message text ``last_text``); counts it."""
        with self._lock:
            for f in self._faults:
                if f.at is not None and index not in f.at:
                    continue
                if f.contains is not None and f.contains not in last_text:
                    continue
                if f.times is not None and f.fired >= f.times:
                    continue
                f.fired += 1
                return f
        return None
