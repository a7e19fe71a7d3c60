"""Deterministic fault schedule of the provider simulator.

A :class:`Fault` fires by request index (``at``: the 0-based index of a request in the
journal) or by condition (``when``: a dict of request properties), never by chance.
Kinds and what the client sees:

==================  ===========================================================================
``rate_limit``      429 with ``retry-after`` (s) and ``retry-after-ms``; the virtual clock moves
                    to the end of the window before the next request is answered.
``server_error``    500 (OpenAI ``server_error`` / Anthropic ``api_error``).
``unavailable``     503 (OpenAI ``service_unavailable_error`` / Anthropic ``api_error``).
``overloaded``      529 ``overloaded_error``.
``content_filter``  200, ``finish_reason: "content_filter"`` (Anthropic ``stop_reason: "refusal"``).
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

from simulator.provider.inputs import (
    InputError,
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_object,
    check_str,
    shown,
)

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
#: Kinds that answer with an HTTP error status (``status`` may override it).
ERROR_KINDS = ("rate_limit", "server_error", "unavailable", "overloaded", "terminal")
#: Keys of a fault in the admin route's JSON format.
JSON_KEYS = (
    "kind",
    "at",
    "when",
    "times",
    "status",
    "retry_after",
    "retry_after_ms",
    "after_events",
    "message",
)
#: Bounds on fault values: request indices, retry windows (seconds / milliseconds).
MAX_INDEX = 10**12
MAX_AT = 100_000
MAX_RETRY_AFTER = 86_400.0


@dataclass
class Fault:
    """One scheduled fault.

    Attributes:
        kind: one of :data:`KINDS`.
        at: request indices (0-based, all routes counted) at which it fires.
        when: condition dict (see module doc); used when ``at`` is None.
        times: how many times a ``when`` fault may fire (None: unlimited).
        status: HTTP status override for error kinds (``terminal``, ``server_error``...),
            an integer 400..599.
        retry_after: seconds advertised in ``retry-after`` (``rate_limit``; virtual seconds,
            finite, 0..86400).
        retry_after_ms: milliseconds in ``retry-after-ms`` (default ``retry_after`` × 1000).
        after_events: stream faults: events sent before the cut / error.
        message: error message override.

    Raises:
        ValueError: unknown kind, unknown or ill-typed ``when`` key, neither ``at`` nor
            ``when``, or a value out of range (:class:`~simulator.provider.inputs.InputError`
            names the field and what it accepts): ``at`` indices 0..10**12, ``status`` an
            error status 400..599 (error kinds only), ``retry_after`` finite seconds
            0..86400, ``retry_after_ms`` 0..86_400_000, ``after_events`` 0..10**6.
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
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InputError("kind", f"{shown(self.kind)} is unknown", "one of " + ", ".join(KINDS))
        if isinstance(self.at, int) and not isinstance(self.at, bool):
            self.at = [self.at]
        elif isinstance(self.at, (tuple, range)):
            self.at = list(self.at)
        if self.at is None and self.when is None:
            raise ValueError(
                "Fault needs at=[request indices] or when={condition}; e.g. Fault('rate_limit', "
                "at=[0])"
            )
        if self.at is not None:
            if not isinstance(self.at, list) or len(self.at) > MAX_AT:
                raise InputError(
                    "at", f"got {type(self.at).__name__}", f"a list of at most {MAX_AT} indices"
                )
            for n, i in enumerate(self.at):
                check_int(i, f"at[{n}]", 0, MAX_INDEX)
        if self.when is not None:
            if not isinstance(self.when, Mapping):
                raise InputError(
                    "when", f"got {self.when!r}", f"an object with keys {sorted(_WHEN_KEYS)}"
                )
            bad = set(self.when) - _WHEN_KEYS
            if bad:
                raise ValueError(
                    f"Fault when= has unknown keys {sorted(bad)}; allowed: {sorted(_WHEN_KEYS)}"
                )
            for key, want in self.when.items():
                _check_when(key, want)
        if self.times is not None:
            check_int(self.times, "times", 0, MAX_INDEX)
        if self.status is not None:
            if self.kind not in ERROR_KINDS:
                raise InputError(
                    "status",
                    f"{self.kind!r} answers in-band (HTTP 200) and takes no status",
                    f"status only with kinds {', '.join(ERROR_KINDS)}",
                )
            check_int(self.status, "status", 400, 599)
        self.retry_after = check_number(self.retry_after, "retry_after", 0.0, MAX_RETRY_AFTER)
        if self.retry_after_ms is not None:
            check_int(self.retry_after_ms, "retry_after_ms", 0, int(MAX_RETRY_AFTER * 1000))
        check_int(self.after_events, "after_events", 0, 1_000_000)
        if self.message is not None:
            check_str(self.message, "message")

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
            check_object(item, f"faults[{n}]", JSON_KEYS)
            if "kind" not in item:
                raise InputError(f"faults[{n}].kind", "missing", "one of " + ", ".join(KINDS))
            try:
                out.append(Fault(**dict(item)))
            except InputError as exc:
                raise InputError(f"faults[{n}].{exc.field}", _problem(exc), exc.accepted) from None
            except (TypeError, ValueError) as exc:
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


def _problem(exc: InputError) -> str:
    text = str(exc)
    return text[len(exc.field) + 2 : text.rindex("; accepted: ")]


def _check_when(key: str, want: Any) -> None:
    field_ = f"when.{key}"
    if key == "route":
        check_choice(want, field_, ("chat.completions", "messages"))
    elif key in ("stream", "summary_request"):
        check_bool(want, field_)
    elif key in ("model", "contains"):
        check_str(want, field_, allow_empty=key == "contains")
    else:  # min_prompt_tokens, from_index
        check_int(want, field_, 0, MAX_INDEX)


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
