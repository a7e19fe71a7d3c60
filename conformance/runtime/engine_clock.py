"""How long an engine call took, counted the way machine load does not change it.

The drawing budget (:mod:`conformance.authoring.budget`) is charged the time spent inside the
engine's
calls. Wall time is the wrong measure for that: on a loaded machine the same call takes longer
because the thread that runs it waits for a CPU, so the same engine would draw fewer examples,
and be judged on fewer, the busier the machine. What is charged instead is the call's **demand
time**: its wall time minus the time its thread spent runnable but waiting for a CPU (the run
queue). That leaves the time the call computed plus the time it chose to wait (a sleep, a
socket, a lock held by no busy thread), which is what the engine asks for and what load does
not change. The run-queue wait is read from Linux's per-thread scheduler statistics
(``/proc/thread-self/schedstat``, second field, nanoseconds); where that file does not exist,
demand time is wall time (the budget is then load-dependent, and the verdict still says which
checks it cut: ``PARTIAL``, never ``PASS``).

:data:`CLOCK` is the one clock the accounting reads (:func:`stamp`, :func:`demand_since`); a
test replaces it to play a loaded machine without loading one (:class:`LoadedClock`).
"""

from __future__ import annotations

import os
import threading
import time
import weakref

_SCHEDSTAT = "/proc/thread-self/schedstat"


_PER_THREAD = threading.local()


def run_queue_seconds() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU since it started (0.0
    where the kernel does not say). The file stays open per thread and process (re-read with
    ``pread``: a few microseconds a call)."""
    fd = getattr(_PER_THREAD, "fd", None)
    if fd is None or _PER_THREAD.pid != os.getpid():
        try:
            fd = os.open(_SCHEDSTAT, os.O_RDONLY)
        except OSError:
            return 0.0
        _PER_THREAD.fd, _PER_THREAD.pid = fd, os.getpid()
        weakref.finalize(threading.current_thread(), _close, fd)
    try:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


class EngineClock:
    """The real clock: monotonic wall time and this thread's run-queue wait, in seconds."""

    def wall(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def waited(self) -> float:
        """This thread's run-queue wait so far (:func:`run_queue_seconds`)."""
        return run_queue_seconds()


class LoadedClock(EngineClock):
    """A clock that plays a machine ``factor`` times slower than this one (for tests): every
    interval of wall time is stretched ``factor`` times, and the stretch is time the thread
    spent waiting for a CPU, which is what load is. ``correct=False`` hides that wait (a
    platform without scheduler statistics), so the budget sees only the longer wall time.

    Args:
        factor: how many times slower (1.0: this machine). correct: report the wait.
    """

    def __init__(self, factor: float, *, correct: bool = True) -> None:
        self.factor = float(factor)
        self.correct = correct
        self._origin = time.monotonic()

    def wall(self) -> float:
        """Wall time on the slow machine: ``factor`` times this one's since the clock began."""
        return self._origin + self.factor * (time.monotonic() - self._origin)

    def waited(self) -> float:
        """This thread's real run-queue wait plus the stretch (0 with ``correct=False``)."""
        if not self.correct:
            return 0.0
        stretch = (self.factor - 1.0) * (time.monotonic() - self._origin)
        return run_queue_seconds() + stretch


#: The clock the budget accounting reads (replace it to play load in a test).
CLOCK: EngineClock = EngineClock()


def stamp() -> tuple[float, float]:
    """``(wall, waited)`` now, on this thread: the start of an engine call."""
    clock = CLOCK
    return clock.wall(), clock.waited()


def demand_since(start: tuple[float, float]) -> float:
    """Demand seconds of the call that began at ``start`` (a :func:`stamp` on this thread): its
    wall time less its run-queue wait, never negative."""
    clock = CLOCK
    wall, waited = clock.wall(), clock.waited()
    return max(0.0, (wall - start[0]) - (waited - start[1]))


__all__ = [
    "CLOCK",
    "EngineClock",
    "LoadedClock",
    "demand_since",
    "run_queue_seconds",
    "stamp",
]
