"""Instrumentation: the host records every engine call it makes.

Each :class:`CallRecord` has the method, a digest of the arguments, the calling thread
(name and whether it is the main thread), the duration (seconds, real time; never used
for decisions) and the outcome, so checks can assert "never called", call order, or
"called from another thread" (TS1).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


def _digest(args: Any, kwargs: Any) -> str:
    try:
        blob = json.dumps([args, kwargs], sort_keys=True, default=repr, ensure_ascii=False)
    except Exception:
        blob = repr((args, kwargs))
    return hashlib.sha256(blob.encode("utf-8", "replace")).hexdigest()[:16]


@dataclass
class CallRecord:
    """One engine call.

    Attributes:
        method: the engine method name.
        args_digest: sha256 prefix (16 hex) of the canonical JSON of the arguments.
        thread: name of the calling thread.
        duration: seconds the call took (real time).
        outcome: ``"returned"`` or ``"raised <ExceptionType>"``.
        kwargs_keys: sorted keyword names passed (e.g. to check A4 filtering).
        main_thread: True when called from the process's main thread.
        seq: global call number (order across threads), from 1.
        engine_id: ``id()`` of the engine called (per-agent clones differ, C1).
    """

    method: str
    args_digest: str
    thread: str
    duration: float
    outcome: str
    kwargs_keys: tuple = ()
    main_thread: bool = True
    seq: int = 0
    engine_id: int = 0


@dataclass
class Recorder:
    """Calls engine methods and records them in ``calls`` (thread-safe)."""

    calls: list[CallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    def call(self, engine: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``engine.<method>(*args, **kwargs)``, record it, and return or re-raise."""
        started = time.perf_counter()
        seq = next(self._seq)
        outcome = "returned"
        try:
            return getattr(engine, method)(*args, **kwargs)
        except BaseException as exc:
            outcome = f"raised {type(exc).__name__}"
            raise
        finally:
            current = threading.current_thread()
            rec = CallRecord(
                method,
                _digest(args, kwargs),
                current.name,
                time.perf_counter() - started,
                outcome,
                tuple(sorted(kwargs)),
                current is threading.main_thread(),
                seq,
                id(engine),
            )
            with self._lock:
                self.calls.append(rec)

    def methods(self) -> list[str]:
        """The called method names, in completion order."""
        with self._lock:
            return [c.method for c in self.calls]

    def of(self, method: str) -> list[CallRecord]:
        """Every record of ``method``, in completion order."""
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def last(self, method: str) -> CallRecord | None:
        """The last record of ``method`` (None if never called)."""
        with self._lock:
            return next((c for c in reversed(self.calls) if c.method == method), None)

    def never_called(self, method: str) -> bool:
        """True when ``method`` was never called (e.g. H2 identity skip)."""
        return self.last(method) is None

    def called_in_order(self, methods: Sequence[str]) -> bool:
        """True when ``methods`` appear in this order (as a subsequence) by call start."""
        with self._lock:
            seq = [c.method for c in sorted(self.calls, key=lambda c: c.seq)]
        it = iter(seq)
        return all(any(m == x for x in it) for m in methods)

    def threads(self, method: str) -> list[str]:
        """Thread names ``method`` was called from, in order."""
        return [c.thread for c in self.of(method)]

    def clear(self) -> None:
        """Forget every record."""
        with self._lock:
            self.calls.clear()
