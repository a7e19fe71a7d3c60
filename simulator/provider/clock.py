"""Virtual clock of the provider simulator: time that moves only when told to.

Cache TTLs (P1: "5m" / "1h"), retry-after windows and ``created`` timestamps are read
from a :class:`VirtualClock`, never from the wall clock, so the same seed and the same
requests give the same bytes in any process (issue 3, "Determinism").
"""

from __future__ import annotations

import threading

#: Virtual time 0 is reported as this Unix timestamp in ``created`` fields (seconds).
EPOCH = 1_700_000_000


class VirtualClock:
    """A monotonic clock in seconds, starting at ``start`` and moved only by :meth:`advance`.

    Args:
        start: initial virtual time in seconds (default 0.0).

    Raises:
        ValueError: from :meth:`advance` / :meth:`set` when asked to move backwards or by a
            non-finite amount.

    Serves: P3 (cache expiry on virtual time), issue 3 "Determinism".
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        """Current virtual time in seconds."""
        return self._now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (>= 0) and return the new time in seconds."""
        seconds = float(seconds)
        if not seconds >= 0.0 or seconds == float("inf"):
            raise ValueError(
                f"advance({seconds!r}): the virtual clock only "
                "moves forward by a finite number of seconds >= 0"
            )
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, when: float) -> float:
        """Jump to virtual time ``when`` (seconds, not earlier than now); returns it."""
        when = float(when)
        with self._lock:
            if not when >= self._now or when == float("inf"):
                raise ValueError(
                    f"set({when!r}): the virtual clock is at {self._now} and cannot move backwards"
                )
            self._now = when
            return self._now

    def unix(self) -> int:
        """Current virtual time as an integer Unix timestamp (``EPOCH`` + seconds)."""
        return EPOCH + int(self._now)
