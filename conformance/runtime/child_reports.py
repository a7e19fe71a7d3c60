"""The child's side of the supervisor's pipe: the message kinds, and what a supervised child
reports while it runs (engine calls started and ended, findings so far). Every function here is a
no-op outside a supervised child."""

from __future__ import annotations

import os
import pickle
import struct
import threading
from dataclasses import dataclass, field
from typing import Any

from conformance.runtime.child_memory import CALL_MEMORY, CAP, GREW_BY, GREW_IN, address_space

#: Message kinds on the pipe: each message is a kind byte and a 4-byte length (MSG_HEADER), then
#: its payload: an engine call started or returned, the answer, an error, a finding so far.
MSG_CALL, MSG_RETURN, MSG_ANSWER, MSG_ERROR, MSG_PROGRESS = b"C", b"R", b"A", b"E", b"P"
#: An engine call that returned having grown the child's address space by a big part of its
#: cap (the method; the memory rule below names it).
MSG_GREW = b"G"
#: The child's last message before it retires (its engine left threads running): a flag byte
#: sent right after the answer.
MSG_RETIRE = b"Z"
MSG_HEADER = struct.Struct("!cI")


@dataclass
class _Monitor:
    """The child's side of the pipe: call starts and ends, then the answer."""

    fd: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, kind: bytes, payload: bytes) -> None:
        data = MSG_HEADER.pack(kind, len(payload)) + payload
        with self.lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.fd, view)
                except InterruptedError:
                    continue
                view = view[n:]


_MONITOR: _Monitor | None = None


def call_started(method: str) -> None:
    """In a supervised child: an engine call begins on this thread (no-op elsewhere)."""
    monitor = _MONITOR
    if monitor is not None:
        ident = threading.get_ident()
        if CAP[0]:
            CALL_MEMORY.setdefault(ident, []).append((method, address_space(os.getpid())))
        monitor.send(MSG_CALL, f"{ident}\x00{method}".encode("utf-8", "replace"))


def call_ended() -> None:
    """In a supervised child: the engine call of this thread returned (no-op elsewhere)."""
    monitor = _MONITOR
    if monitor is not None:
        ident = threading.get_ident()
        stack = CALL_MEMORY.get(ident)
        if stack:
            method, before = stack.pop()
            if address_space(os.getpid()) - before >= GREW_BY * CAP[0]:
                GREW_IN[0] = method  # the call that took (and kept) a big part of the cap
                monitor.send(MSG_GREW, method.encode("utf-8", "replace"))
        monitor.send(MSG_RETURN, str(ident).encode())


def supervised() -> bool:
    """True inside a supervised child."""
    return _MONITOR is not None


def report_progress(value: Any) -> None:
    """In a supervised child: hand the parent ``value`` now (a finding found so far), so it is
    not lost if the child dies or hangs later (while shrinking, say). No-op elsewhere.

    Raises:
        pickle.PicklingError: ``value`` does not pickle (a kit bug).
    """
    monitor = _MONITOR
    if monitor is not None:
        monitor.send(MSG_PROGRESS, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def start_monitor(fd: int) -> _Monitor:
    """In a new supervised child: report on pipe ``fd`` from now on (the monitor)."""
    global _MONITOR
    _MONITOR = _Monitor(fd)
    return _MONITOR
