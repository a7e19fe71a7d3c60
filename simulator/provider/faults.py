"""Deterministic fault schedule of the provider simulator (issue 3, "Fault schedule").

A :class:`Fault` fires by request index (``at``: the 0-based index of a request in the
journal) or by condition (``when``: a dict of request properties), never by chance.
Kinds and what the client sees:

==================  ===========================================================================
``rate_limit``      429 with ``retry-after`` (s) and ``retry-after-ms``; the virtual clock moves
                    to the end of the window before the next request is answered.
``server_error``    500 (OpenAI ``server_error`` / Anthropic ``api_error``).
``unavailable``     503 (OpenAI ``service_unavailable_error`` / Anthropic ``api_error``).
``overloaded``      529 ``overloaded_error``.
``content_filter``  200 with ``finish_reason: "content_filter"`` (Anthropic
                    ``stop_reason: "refusal"``).
``terminal``        every request from then on fails with ``status`` (default 500) and
                    ``x-should-retry: false``, until reset.
``stream_cut``      streamed requests only: the stream stops after ``after_events`` events and
                    the connection closes (no ``[DONE]`` / ``message_stop``).
``stream_error``    streamed requests only: after ``after_events`` events an in-stream error
                    event (OpenRouter ``{"error": ...}`` chunk / Anthropic ``event: error``).
==================  ===========================================================================

``when`` keys (all must hold): ``route`` (``"chat.completions"`` | ``"messages"``),
``stream`` (bool), ``model`` (exact id), ``min_prompt_tokens`` (int), ``contains``
(substring of the last message's text), ``summary_request`` (bool), ``from_index`` (int).
``times`` bounds how often a condition fault fires (None = always).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

KINDS = (
    "rate_limit",
    "server_error",
    "unavailable",
    "overloaded",
    "content_filter",
    "terminal",
    "stream_cut",
    "stream_error",
)
_STATUS = {
    "rate_limit": 429,
    "server_error": 500,
    "unavailable": 503,
    "overloaded": 529,
    "terminal": 500,
}
_WHEN_KEYS = {
    "route",
    "stream",
    "model",
    "min_prompt_tokens",
    "contains",
    "summary_request",
    "from_index",
}
STREAM_ONLY = ("stream_cut", "stream_error")


@dataclass
class Fault:
    """One scheduled fault.

    Attributes:
        kind: one of :data:`KINDS`.
        at: request indices (0-based, all routes counted) at which it fires.
        when: condition dict (see module doc); used when ``at`` is None.
        times: how many times a ``when`` fault may fire (None: unlimited).
        status: HTTP status override (``terminal``, ``server_error``...).
        retry_after: seconds advertised in ``retry-after`` (``rate_limit``; virtual seconds).
        retry_after_ms: milliseconds in ``retry-after-ms`` (default ``retry_after`` × 1000).
        after_events: stream faults: events sent before the cut / error.
        message: error message override.

    Raises:
        ValueError: unknown kind, unknown ``when`` key, or neither ``at`` nor ``when``.
    """

    kind: str
    at: list[int] | None = None
    when: dict[str, Any] | None = None
    times: int | None = None
    status: int | None = None
    retry_after: float = 1.0
    retry_after_ms: int | None = None
    after_events: int = 2
    message: str | None = None
    fired: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Fault kind {self.kind!r} is unknown; use one of {', '.join(KINDS)}")
        if isinstance(self.at, int):
            self.at = [self.at]
        if self.at is None and self.when is None:
            raise ValueError(
                "Fault needs at=[request indices] or "
                "when={condition}; e.g. Fault('rate_limit', at=[0])"
            )
        if self.when is not None:
            bad = set(self.when) - _WHEN_KEYS
            if bad:
                raise ValueError(
                    f"Fault when= has unknown keys {sorted(bad)}; allowed: {sorted(_WHEN_KEYS)}"
                )
        if self.retry_after < 0 or (self.retry_after_ms is not None and self.retry_after_ms < 0):
            raise ValueError("retry_after / retry_after_ms must be >= 0")

    @property
    def http_status(self) -> int:
        """The HTTP status this fault answers with (200 for in-band faults)."""
        return self.status or _STATUS.get(self.kind, 200)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (the admin route's format)."""
        d = asdict(self)
        d.pop("fired")
        return {k: v for k, v in d.items() if v is not None}


@dataclass
class FaultContext:
    """What a fault condition can look at for one request."""

    index: int
    route: str
    stream: bool
    model: str
    prompt_tokens: int
    last_text: str
    summary_request: bool


class FaultSchedule:
    """Ordered list of :class:`Fault`; the first that matches a request fires.

    A fired ``terminal`` fault stays in force for every later request until :meth:`clear`.
    """

    def __init__(self, faults: Sequence[Fault] = ()) -> None:
        self._faults: list[Fault] = list(faults)
        self.terminal: Fault | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_json(cls, items: Any) -> FaultSchedule:
        """Build from a JSON list of fault dicts (``{"kind": ..., "at": [...]}``).

        Raises:
            ValueError: not a list of objects, or a bad fault (message says which).
        """
        if not isinstance(items, list):
            raise ValueError(
                'faults must be a JSON array of objects like {"kind": "rate_limit", "at": [0]}'
            )
        out = []
        for n, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ValueError(f"faults[{n}] must be an object")
            try:
                out.append(Fault(**{k: v for k, v in item.items()}))
            except TypeError as exc:
                raise ValueError(f"faults[{n}]: {exc}") from None
        return cls(out)

    def add(self, fault: Fault) -> None:
        """Append ``fault`` to the schedule."""
        with self._lock:
            self._faults.append(fault)

    def clear(self) -> None:
        """Remove all faults and lift a terminal failure."""
        with self._lock:
            self._faults.clear()
            self.terminal = None

    def to_json(self) -> list[dict[str, Any]]:
        """The schedule as JSON-ready dicts."""
        return [f.to_json() for f in self._faults]

    def __len__(self) -> int:
        return len(self._faults)

    def match(self, ctx: FaultContext) -> Fault | None:
        """The fault that fires for this request, or None; counts the firing."""
        with self._lock:
            if self.terminal is not None:
                return self.terminal
            for f in self._faults:
                if f.kind in STREAM_ONLY and not ctx.stream:
                    continue
                if f.at is not None:
                    if ctx.index not in f.at:
                        continue
                elif not _holds(f.when or {}, ctx) or (f.times is not None and f.fired >= f.times):
                    continue
                f.fired += 1
                if f.kind == "terminal":
                    self.terminal = f
                return f
        return None


def _holds(when: Mapping[str, Any], ctx: FaultContext) -> bool:
    for key, want in when.items():
        if key == "route" and ctx.route != want:
            return False
        if key == "stream" and ctx.stream != bool(want):
            return False
        if key == "model" and ctx.model != want:
            return False
        if key == "min_prompt_tokens" and ctx.prompt_tokens < int(want):
            return False
        if key == "contains" and str(want) not in ctx.last_text:
            return False
        if key == "summary_request" and ctx.summary_request != bool(want):
            return False
        if key == "from_index" and ctx.index < int(want):
            return False
    return True
