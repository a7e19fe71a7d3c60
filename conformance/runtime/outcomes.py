"""What a supervised case ends with when it gives no answer: the child died (:class:`Died`) or an
engine call hung and the child was killed (:class:`Hung`)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any


@dataclass
class Died:
    """The child ended without an answer.

    Attributes:
        method: the engine call in flight (``"compress"``), or "" when none was.
        exit_code: the child's exit status (None when a signal ended it).
        signal: the signal number that ended it (None for a plain exit).
        memory_cap: True when the child had reported reaching the memory cap.
        seconds: how long the child ran.
        progress: the last finding the child reported before it ended (or None).
    """

    method: str
    exit_code: int | None
    signal: int | None
    memory_cap: bool = False
    seconds: float = 0.0
    progress: Any = None

    def describe(self) -> str:
        """``exited with code 0 (os._exit?)`` / ``was killed by signal 11 (SIGSEGV)``."""
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"was killed by signal {self.signal} ({name})"
        return f"exited with code {self.exit_code} before the case ended"


@dataclass
class Hung:
    """An engine call stayed in flight longer than the per-call limit; the child was killed.

    Attributes:
        method: the engine call in flight. seconds: how long it had been in flight.
        thread: the child's thread id running it.
        progress: the last finding the child reported before it was killed (or None).
        case_limit: True when the whole case outlasted its cap (a kit fault), not one call.
    """

    method: str
    seconds: float
    thread: int = 0
    progress: Any = None
    case_limit: bool = False
    #: the door's memory rule (below): the child sat still at its memory cap with no engine
    #: call in flight; ``method`` is then the last engine call that returned, ``memory`` the
    #: child's address space in bytes
    stalled: bool = False
    memory: int = 0
