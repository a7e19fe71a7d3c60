"""Virtual clock of the provider simulator: time that moves only when told to.

Cache TTLs (P1: "5m" / "1h"), retry-after windows and ``created`` timestamps are read
from a :class:`VirtualClock`, never from the wall clock, so the same seed and the same
requests give the same bytes in any process.

Virtual time stays finite and within ``[0, MAX_SECONDS]``: a clock pushed towards
infinity would make every later ``created`` timestamp and TTL meaningless.
"""

from __future__ import annotations

import threading

from simulator.provider.inputs import InputError, check_number

#: Virtual time 0 is reported as this Unix timestamp in ``created`` fields (seconds).
EPOCH = 1_700_000_000
#: Latest virtual time the clock accepts (seconds; about 31.7 years).
MAX_SECONDS = 1e9


class VirtualClock:
    """A monotonic clock in seconds, starting at ``start`` and moved only by :meth:`advance`.

    Args:
        start: initial virtual time in seconds (default 0.0), in ``[0, MAX_SECONDS]``.

    Raises:
        ValueError (:class:`~simulator.provider.inputs.InputError`): a bad ``start``, or from
            :meth:`advance` / :meth:`set` when asked to move backwards, by a non-finite or
            non-numeric amount, or past :data:`MAX_SECONDS`; the clock is then unchanged.

    Serves: P3 (cache expiry on virtual time).
    """

    def __init__(self, start: float = 0.0) -> None:
        self._start = check_number(start, "start", 0.0, MAX_SECONDS)
        self._now = self._start
        self._lock = threading.Lock()

    def now(self) -> float:
        """Current virtual time in seconds."""
        return self._now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (>= 0) and return the new time in seconds."""
        with self._lock:
            seconds = check_number(seconds, "advance", 0.0, MAX_SECONDS - self._now)
            self._now += seconds
            return self._now

    def set(self, when: float) -> float:
        """Jump to virtual time ``when`` (seconds, not earlier than now); returns it."""
        with self._lock:
            try:
                when = check_number(when, "set", self._now, MAX_SECONDS)
            except InputError:
                raise InputError(
                    "set",
                    f"got {when!r}; the virtual clock is at {self._now} and cannot move backwards",
                    f"a finite number of seconds from {self._now:g} to {MAX_SECONDS:g}",
                ) from None
            self._now = when
            return self._now

    def reset(self) -> float:
        """Put the clock back to its ``start`` time (a fresh simulator); returns it."""
        with self._lock:
            self._now = self._start
            return self._now

    def unix(self) -> int:
        """Current virtual time as an integer Unix timestamp (``EPOCH`` + seconds)."""
        return EPOCH + int(self._now)
