"""Instrumentation: the host records every engine call it makes.

Each :class:`CallRecord` has the method, a digest of the arguments, the calling thread,
the duration (seconds, real time; never used for decisions) and the outcome, so checks
can assert "never called", call order, or "called from another thread".
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, List, Optional


def _digest(args: Any, kwargs: Any) -> str:
    try:
        blob = json.dumps([args, kwargs], sort_keys=True, default=repr, ensure_ascii=False)
    except Exception:
        blob = repr((args, kwargs))
    return hashlib.sha256(blob.encode("utf-8", "replace")).hexdigest()[:16]


@dataclass
class CallRecord:
    """One engine call: ``method``, ``args_digest``, ``thread`` name, ``duration`` (s), ``outcome``.

    ``outcome`` is ``"returned"`` or ``"raised <ExceptionType>"``; ``kwargs_keys`` lists the
    keyword names passed (e.g. to check A4 filtering).
    """

    method: str
    args_digest: str
    thread: str
    duration: float
    outcome: str
    kwargs_keys: tuple = ()


@dataclass
class Recorder:
    """Calls engine methods and records them in ``calls`` (thread-safe)."""

    calls: List[CallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def call(self, engine: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``engine.<method>(*args, **kwargs)``, record it, and return or re-raise."""
        started = time.perf_counter()
        outcome = "returned"
        try:
            return getattr(engine, method)(*args, **kwargs)
        except BaseException as exc:
            outcome = f"raised {type(exc).__name__}"
            raise
        finally:
            rec = CallRecord(
                method,
                _digest(args, kwargs),
                threading.current_thread().name,
                time.perf_counter() - started,
                outcome,
                tuple(sorted(kwargs)),
            )
            with self._lock:
                self.calls.append(rec)

    def methods(self) -> List[str]:
        """The called method names, in call order."""
        with self._lock:
            return [c.method for c in self.calls]

    def last(self, method: str) -> Optional[CallRecord]:
        with self._lock:
            return next((c for c in reversed(self.calls) if c.method == method), None)
