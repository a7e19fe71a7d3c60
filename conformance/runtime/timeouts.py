"""The engine call in flight, per thread, and the time limits on engine code.

Every call the kit makes into engine code is wrapped in :func:`calling`, which records the
method in :data:`CURRENT_CALL` (and its start in :data:`CALL_STARTED`) and tells the
supervisor (:mod:`conformance.runtime.supervisor`, through :data:`CALL_HOOKS`), so a hang or a death
names the method in flight. A hang is one engine call longer than the per-call limit
(``--conformance-timeout``, :data:`conformance.authoring.context.DEFAULT_CHECK_TIMEOUT_S` by
default);
:func:`build_engine` and :func:`call_with_timeout` bound single calls the kit makes outside a
case (the constructor probe). Serves the kit's "nothing hangs" rule and the TS/L1 clauses'
hang reporting.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from conformance.clauses.errors import EngineTimeout
from conformance.runtime import engine_clock

#: thread ident -> (clause, level, method) of the engine call in progress on that thread
#: (clause and level None: the check's own). Set by the drivers (conformance.checks.engine_calls)
#: and by engine construction, read when a check times out to name the method that hung.
CURRENT_CALL: dict[int, tuple[str | None, str | None, str]] = {}
#: thread ident -> ``time.monotonic()`` when its call in flight started.
CALL_STARTED: dict[int, float] = {}
#: ``(started, ended)`` callables told of every engine call (the supervised child's pipe).
CALL_HOOKS: list[tuple[Callable[[str], None], Callable[[], None]]] = []


_ENGINE_SECONDS = [0.0]
_ENGINE_LOCK = threading.Lock()
#: The last outermost engine call that began in this process (its method), "" before any.
LAST_CALL: list[str] = [""]
#: thread ident -> the :func:`conformance.runtime.engine_clock.stamp` of its outermost call in
#: flight.
_CALL_STAMPS: dict[int, tuple[float, float]] = {}


def engine_seconds() -> float:
    """Demand seconds spent inside outermost engine calls (:func:`calling`) in this process so
    far, summed over threads (:mod:`conformance.runtime.engine_clock`: wall time less the time the
    thread waited for a CPU): what the drawing budget counts, so that the same engine draws the
    same examples on a loaded machine as on an idle one."""
    return _ENGINE_SECONDS[0]


@contextlib.contextmanager
def calling(method: str, clause: str | None = None, level: str | None = None) -> Iterator[None]:
    """Record ``method`` as the engine call in flight on this thread while the block runs (so a
    case that hangs or dies there names it); restores what was recorded before."""
    me = threading.get_ident()
    previous = CURRENT_CALL.get(me), CALL_STARTED.get(me)
    CURRENT_CALL[me] = (clause, level, method)
    CALL_STARTED[me] = time.monotonic()
    for started, _ in CALL_HOOKS:
        started(method)
    if previous[0] is None:  # stamped after the kit's hooks: their time is not the engine's
        _CALL_STAMPS[me] = engine_clock.stamp()
        LAST_CALL[0] = method
    try:
        yield
    finally:
        stamp = _CALL_STAMPS.pop(me, None) if previous[0] is None else None
        spent = engine_clock.demand_since(stamp) if stamp is not None else 0.0
        for _, ended in CALL_HOOKS:
            ended()
        if previous[0] is None:
            with _ENGINE_LOCK:
                _ENGINE_SECONDS[0] += spent
            CURRENT_CALL.pop(me, None)
            CALL_STARTED.pop(me, None)
        else:
            CURRENT_CALL[me], CALL_STARTED[me] = previous[0], previous[1] or time.monotonic()


@contextlib.contextmanager
def kit_time() -> Iterator[None]:
    """The kit's own work done inside an engine call on this thread (the summary LLM the kit
    serves, a summariser seam the kit replaced): its seconds are taken out of the call in
    flight (its start moves later by as much), so neither :func:`engine_seconds` (what the
    drawing budget counts) nor the per-call limit charges the engine for the kit's time.
    No-op outside an engine call."""
    me = threading.get_ident()
    began = time.monotonic()
    clock_began = engine_clock.stamp()
    try:
        yield
    finally:
        since = CALL_STARTED.get(me)
        if since is not None:
            CALL_STARTED[me] = min(since + (time.monotonic() - began), time.monotonic())
        stamp = _CALL_STAMPS.get(me)
        if stamp is not None:  # the demand clock's start moves later by the kit's own share
            now = engine_clock.stamp()
            _CALL_STAMPS[me] = (
                stamp[0] + (now[0] - clock_began[0]),
                stamp[1] + (now[1] - clock_began[1]),
            )


class _Worker(threading.Thread):
    """Runs one callable on a daemon thread so a hanging engine cannot stop the run."""

    def __init__(self, target: Callable[[], Any]):
        super().__init__(name="conformance-check", daemon=True)
        self._target_fn = target
        self.error: BaseException | None = None
        self.value: Any = None

    def run(self) -> None:
        try:
            self.value = self._target_fn()
        except BaseException as exc:  # handed to the main thread
            self.error = exc


def run_with_timeout(fn: Callable[[], Any], timeout: float) -> _Worker | None:
    """Run ``fn`` on a worker thread for at most ``timeout`` seconds.

    Returns None when it finished (its return value is dropped), or the still-running
    worker when it timed out (``worker.ident`` names its thread).

    Raises:
        BaseException: whatever ``fn`` raised, re-raised in the caller. KeyboardInterrupt
            in the waiting thread propagates (Ctrl-C still stops the run).
    """
    worker = _start(fn, timeout)
    if worker.is_alive():
        return worker
    if worker.error is not None:
        raise worker.error
    return None


def _start(fn: Callable[[], Any], timeout: float) -> _Worker:
    """Start ``fn`` on a worker and wait until it ends or ``timeout`` seconds pass."""
    worker = _Worker(fn)
    worker.start()
    deadline = time.monotonic() + timeout
    while worker.is_alive():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        worker.join(min(0.05, remaining))
    return worker


def constructor_label(factory: Any) -> str:
    """How the user wrote the engine's construction: ``MyEngine()`` for an
    :class:`~conformance.runtime.engine_loading.EngineFactory` of class ``MyEngine`` (or a factory
    function), the callable's name otherwise."""
    target = getattr(factory, "target", factory)
    if target is None:  # a deferred factory not resolved yet: the name its spec gives
        spec = getattr(factory, "spec", "") or ""
        name = spec.rpartition(":")[2].rpartition(".")[2] or "engine"
        return f"{name}()"
    name = getattr(target, "__name__", None) or type(target).__name__
    return f"{name}()"


def build_engine(factory: Callable[[], Any], timeout: float) -> Any:
    """``factory()`` under ``timeout`` seconds: the engine it returns.

    Raises:
        EngineTimeout: the constructor did not return in time; the message names it
            (``MyEngine() did not return within 5 s``) and says what to do.
        Exception: whatever the constructor raised.
    """
    return call_with_timeout(
        factory,
        timeout,
        lambda: (
            f"{constructor_label(factory)} did not return within {timeout:g} s "
            "(--conformance-timeout): the engine's constructor hangs (a blocking connection, "
            "a lock, a sleep?). Make construction fast and side-effect free, or raise "
            "--conformance-timeout"
        ),
    )


def call_with_timeout(fn: Callable[[], Any], timeout: float, describe: Callable[[], str]) -> Any:
    """``fn()`` under ``timeout`` seconds: its return value.

    Raises:
        EngineTimeout: ``fn`` did not return in time; the message is ``describe()``.
        BaseException: whatever ``fn`` raised.
    """
    worker = _start(fn, timeout)
    if worker.is_alive():
        raise EngineTimeout(describe())
    if worker.error is not None:
        raise worker.error
    return worker.value


__all__ = [
    "CURRENT_CALL",
    "run_with_timeout",
    "call_with_timeout",
    "build_engine",
    "constructor_label",
]


#: Default for ``--conformance-max-timeouts``: checks that may time out before the rest are not run.
DEFAULT_MAX_TIMEOUTS = 3


class HangBudget:
    """How many checks of a run may time out before the remaining ones are not run.

    A hanging engine method costs the per-check limit in every check that calls it; after
    ``limit`` timeouts (``--conformance-max-timeouts``, 0 = no cap) the remaining checks and
    scenario runs are reported as errors without running, so a run's time stays near
    ``limit`` x ``--conformance-timeout`` and its verdict is still complete (FAIL).
    Shared by the checks and the scenario items of one run (thread-safe).
    """

    def __init__(self, limit: int = DEFAULT_MAX_TIMEOUTS):
        self.limit = int(limit)
        self.hung: list = []
        self._lock = threading.Lock()

    def record(self, method: str | None) -> None:
        """Count one timed-out check; ``method`` is the engine method that hung (None if
        unknown)."""
        with self._lock:
            self.hung.append(method or "?")

    def exhausted(self) -> bool:
        """True once ``limit`` checks have timed out (never with ``limit`` 0)."""
        return self.limit > 0 and len(self.hung) >= self.limit

    def reason(self) -> str:
        """Why a check was not run: ``not run: the engine hung in 3 cases (compress() x3);
        ...``."""
        counts: dict[str, int] = {}
        for method in self.hung:
            counts[method] = counts.get(method, 0) + 1
        which = ", ".join(
            f"{m}() x{n}" if m != "?" else f"an unnamed call x{n}" for m, n in counts.items()
        )
        return (
            f"{NOT_RUN}the engine hung in {len(self.hung)} case"
            f"{'' if len(self.hung) == 1 else 's'} ({which}); fix the hang "
            f"first, or raise --conformance-max-timeouts (now {self.limit}; 0 runs every check)"
        )


#: How the message of a case the hang cap kept from running begins, after its clause tag.
NOT_RUN = "not run: "


def not_run(message: str) -> bool:
    """Whether a result ``message`` (``[A4 MUST] not run: ...``) is of a case the hang cap kept
    from running (:meth:`HangBudget.reason`)."""
    return message.partition("] ")[2].startswith(NOT_RUN)


def hang_root_cause(method: str) -> str:
    """The root-cause key of a hang in engine method ``method`` ("" when none was in flight):
    every case that hung there, a check or a scenario play, counts once in the verdict."""
    return f"{method or '?'}|hang"


__all__ += ["HangBudget", "DEFAULT_MAX_TIMEOUTS", "NOT_RUN", "hang_root_cause", "not_run"]
