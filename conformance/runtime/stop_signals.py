"""A stop signal ends a run the way one Ctrl-C does, and the verdict says so, however many come.

CI cancellation and ``timeout`` send SIGTERM, and GNU ``timeout`` sends its signal to the
command and to its process group, so the run may get it twice; a user may press Ctrl-C twice.
A run stopped that way must still print and write its verdict, ``INTERRUPTED`` with how many
cases ran, never ``PASS`` on the cases that ran before the stop.

Python's default for SIGTERM ends the process at once, skipping pytest's session finish where
the verdict is written, and a second ``KeyboardInterrupt`` raised while pytest handles the
first one ends its session with another exit status. :func:`stop_signals_as_interrupt` makes
the first SIGINT or SIGTERM raise ``KeyboardInterrupt`` in the main thread (pytest and the kit
handle it as a Ctrl-C), records it (:func:`stop_requested`, which the verdict reads), and lets
the next one pass while the run finishes and writes its verdict; a third ends the process as
Python's default would. Supervised children put the defaults back
(conformance/runtime/supervisor.py; their parent ends them with SIGKILL).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

_received: list[int] = []  # the stop signals received in this process, in order


class Terminated(KeyboardInterrupt):
    """The run got SIGTERM: handled as a Ctrl-C (a ``KeyboardInterrupt``)."""


def stop_requested() -> bool:
    """True once this process got a stop signal (SIGINT or SIGTERM) through the kit's
    handler: the run is interrupted whatever exit status pytest settles on."""
    return bool(_received)


def _on_stop(signum: int, frame: Any) -> None:
    _received.append(signum)
    if len(_received) == 2:
        return  # the run is already stopping: let it write its verdict
    if signum == signal.SIGTERM:
        if len(_received) > 2:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
        raise Terminated("SIGTERM")
    raise KeyboardInterrupt


def _defaults() -> dict[int, Any]:
    return {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}


def stop_signals_as_interrupt() -> Callable[[], None]:
    """Handle SIGINT and SIGTERM as the module doc says, in this process; returns the function
    that puts the previous handlers back. Does nothing for a signal someone else already
    handles (an embedding program, a test runner: their handler wins), and nothing off the main
    thread."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _received.clear()
    installed = []
    for signum, default in _defaults().items():
        try:
            previous = signal.getsignal(signum)
        except (AttributeError, ValueError):  # pragma: no cover - a platform without it
            continue
        if previous in (default, signal.SIG_DFL, None):
            signal.signal(signum, _on_stop)
            installed.append(signum)

    def restore() -> None:
        for signum in installed:
            if signal.getsignal(signum) is _on_stop:
                signal.signal(signum, _defaults()[signum])

    return restore
