"""SIGTERM stops a run the way Ctrl-C does: CI cancellation and ``timeout`` send SIGTERM, and a
run stopped that way must still print and write its verdict (``INTERRUPTED``, how many cases
ran), not die with the file unwritten.

Python's default for SIGTERM ends the process at once, skipping pytest's session finish where
the verdict is written. :func:`sigterm_as_interrupt` makes SIGTERM raise ``KeyboardInterrupt``
in the main thread instead, which pytest and the kit handle as a Ctrl-C. Supervised children
put the default back (conformance/runtime/supervisor.py; their parent ends them with SIGKILL).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any


class Terminated(KeyboardInterrupt):
    """The run got SIGTERM: handled as a Ctrl-C (a ``KeyboardInterrupt``)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated("SIGTERM")


def sigterm_as_interrupt() -> Callable[[], None]:
    """Make SIGTERM raise :class:`Terminated` (a ``KeyboardInterrupt``) in this process; returns
    the function that puts the previous handler back. Does nothing (and returns a no-op) off the
    main thread, or when someone else already handles SIGTERM (an embedding program, a test
    runner): their handler wins."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    try:
        previous = signal.getsignal(signal.SIGTERM)
    except (AttributeError, ValueError):  # pragma: no cover - a platform without SIGTERM
        return lambda: None
    if previous not in (signal.SIG_DFL, None):
        return lambda: None
    signal.signal(signal.SIGTERM, _raise_terminated)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore
