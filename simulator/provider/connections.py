"""Connection limits of the loopback server: timeouts, a connection cap, fd-limit shedding.

A connection goes through three phases, each bounded (:class:`ConnectionLimits`):

- *idle*: waiting for the first byte of the next request, at most ``idle_timeout``
  seconds; then the server closes the connection silently (keep-alive expiry).
- *head*: from the first byte of the request line to the end of the headers, at most
  ``header_timeout`` seconds in total however slowly the bytes trickle in (a slow-headers
  client gets ``408`` and the connection is closed).
- *body and response*: each body read or response write may wait at most
  ``read_timeout`` seconds for progress (``408`` when a body stalls).

At most ``max_connections`` connections are served at once. Beyond that a few more
(:attr:`ConnectionGate.overflow_limit`) are accepted only to read their request head
(within ``min(header_timeout, 2 s)``) and answer ``503`` in the route's provider shape;
past those, connections are answered ``503`` (OpenAI shape) at once and closed. When the
process runs out of file descriptors, a reserved descriptor is released to accept and
shed one pending connection with a ``503`` instead of letting the accept loop spin.
"""

from __future__ import annotations

import errno
import io
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

from simulator.provider.inputs import check_int, check_number

#: Longest time an over-the-cap connection may take to send its request head (seconds).
OVERFLOW_HEAD_SECONDS = 2.0
#: After an error answer, unread input is drained for at most this long (seconds) ...
LINGER_SECONDS = 0.5
#: ... or this many bytes, so the client reads the answer instead of a reset.
LINGER_BYTES = 4 * 1024 * 1024
#: ``accept()`` errors that mean "out of descriptors or memory" (shed, do not spin).
_EXHAUSTED = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


@dataclass(frozen=True)
class ConnectionLimits:
    """Timeouts and the connection cap of a :class:`~simulator.provider.http.SimServer`.

    Attributes:
        idle_timeout: seconds a connection may wait for its next request (default 20;
            longer than httpx's 5 s keep-alive expiry, so pooled SDK clients close first).
        header_timeout: seconds from a request's first byte to the end of its headers
            (default 10).
        read_timeout: seconds a body read or response write may wait without progress
            (default 30).
        max_connections: connections served at once (default 128); more get ``503``.

    Raises:
        ValueError: a timeout that is not a finite number in ``[0.01, 86400]`` seconds, or
            ``max_connections`` not an integer in ``[1, 100000]``.
    """

    idle_timeout: float = 20.0
    header_timeout: float = 10.0
    read_timeout: float = 30.0
    max_connections: int = 128

    def __post_init__(self) -> None:
        for name in ("idle_timeout", "header_timeout", "read_timeout"):
            check_number(getattr(self, name), name, 0.01, 86_400.0)
        check_int(self.max_connections, "max_connections", 1, 100_000)


class DeadlineReader(io.RawIOBase):
    """Raw reader over a socket whose reads wait until a deadline or for a per-read timeout.

    :meth:`arm_deadline` bounds all reads together (idle and head phases): however the
    bytes trickle in, no read returns after the deadline. :meth:`arm_timeout` bounds each
    read separately (body phase). A read past its bound raises :class:`TimeoutError` and
    sets :attr:`timed_out`. Closing the reader leaves the socket open.
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self._deadline: float | None = None
        self._timeout: float | None = None
        self._applied: float | None = -1.0
        self.timed_out = False

    def arm_deadline(self, seconds: float) -> None:
        """From now on reads must finish within ``seconds`` in total."""
        self._deadline = time.monotonic() + seconds

    def arm_timeout(self, seconds: float) -> None:
        """From now on each read may wait ``seconds`` for data."""
        self._deadline = None
        self._timeout = seconds

    def use_timeout(self, seconds: float) -> None:
        """Set the socket's own timeout now (for writes), keeping the read bookkeeping right."""
        self._sock.settimeout(seconds)
        self._applied = seconds

    def readable(self) -> bool:
        """Always True."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Receive into ``buffer``; returns the byte count (0 at end of stream).

        Raises:
            TimeoutError: the deadline passed or the per-read timeout expired.
        """
        if self._deadline is not None:
            wait = self._deadline - time.monotonic()
            if wait <= 0:
                self.timed_out = True
                raise TimeoutError("request head deadline passed")
        else:
            wait = self._timeout
        if wait != self._applied:
            self._sock.settimeout(wait)
            self._applied = wait
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            self.timed_out = True
            raise


class ConnectionGate:
    """Counts open connections and decides which are served, answered 503, or refused.

    Args:
        max_connections: connections served at once.

    Attributes:
        overflow_limit: over-the-cap connections read for a route-shaped 503 at once.
        stats: counters (``accepted``, ``active``, ``peak_active``, ``busy_503``,
            ``refused``, ``idle_closed``, ``header_timeouts``, ``read_timeouts``,
            ``fd_sheds``); see :meth:`snapshot`.
    """

    SERVE, OVERFLOW, REFUSE = "serve", "overflow", "refuse"

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self.overflow_limit = max(8, max_connections // 4)
        self._overflow = 0
        self._lock = threading.Lock()
        self.stats = dict.fromkeys(
            (
                "accepted",
                "active",
                "peak_active",
                "busy_503",
                "refused",
                "idle_closed",
                "header_timeouts",
                "read_timeouts",
                "fd_sheds",
            ),
            0,
        )

    def admit(self) -> str:
        """Classify a newly accepted connection: ``SERVE``, ``OVERFLOW`` or ``REFUSE``."""
        with self._lock:
            self.stats["accepted"] += 1
            if self.stats["active"] < self.max_connections:
                self.stats["active"] += 1
                self.stats["peak_active"] = max(self.stats["peak_active"], self.stats["active"])
                return self.SERVE
            if self._overflow < self.overflow_limit:
                self._overflow += 1
                return self.OVERFLOW
            self.stats["refused"] += 1
            return self.REFUSE

    def release(self, kind: str) -> None:
        """A connection admitted as ``kind`` closed."""
        with self._lock:
            if kind == self.SERVE:
                self.stats["active"] -= 1
            elif kind == self.OVERFLOW:
                self._overflow -= 1

    def count(self, name: str) -> None:
        """Add one to counter ``name``."""
        with self._lock:
            self.stats[name] += 1

    @property
    def active(self) -> int:
        """Connections being served now."""
        return self.stats["active"]

    def snapshot(self) -> dict[str, int]:
        """The counters as a JSON-ready dict (``overflow`` open now, ``max_connections``)."""
        with self._lock:
            return dict(self.stats, overflow=self._overflow, max_connections=self.max_connections)


class FdReserve:
    """One spare file descriptor, given up to shed a connection when the process has none left.

    Without it, a listening socket at the descriptor limit stays readable while
    ``accept()`` fails with ``EMFILE``, and the accept loop spins at full CPU.
    """

    def __init__(self) -> None:
        self._fd = self._open()

    @staticmethod
    def _open() -> int | None:
        try:
            return os.open(os.devnull, os.O_RDONLY)
        except OSError:
            return None

    def exhausted(self, exc: OSError) -> bool:
        """True when ``exc`` (from ``accept()``) means the process is out of descriptors."""
        return exc.errno in _EXHAUSTED

    def shed(self, listener: socket.socket, answer: bytes) -> bool:
        """Accept one pending connection on the spare descriptor, send ``answer``, close it.

        Returns True when a connection was shed. Without a spare descriptor it waits
        50 ms instead (so the accept loop does not spin) and tries to get one back.
        """
        if self._fd is None:
            time.sleep(0.05)
            self._fd = self._open()
            return False
        os.close(self._fd)
        self._fd = None
        try:
            conn, _ = listener.accept()
        except OSError:
            conn = None
        if conn is not None:
            send_and_close(conn, answer)
        self._fd = self._open()
        if self._fd is None or conn is None:
            time.sleep(0.05)
        return conn is not None

    def close(self) -> None:
        """Give the spare descriptor back to the system."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def send_and_close(conn: socket.socket, data: bytes) -> None:
    """Send ``data`` without blocking (as much as fits) and close ``conn``; never raises."""
    try:
        conn.setblocking(False)
        conn.send(data)
    except OSError:
        pass
    try:
        conn.close()
    except OSError:
        pass


def linger(conn: socket.socket) -> None:
    """Half-close ``conn`` and drain unread input briefly, so an error answer is not lost.

    Closing a socket with unread input makes the kernel send a reset, which can destroy
    the answer before the client reads it. Drains at most :data:`LINGER_BYTES` bytes for
    at most :data:`LINGER_SECONDS` seconds; never raises.
    """
    try:
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        return
    deadline = time.monotonic() + LINGER_SECONDS
    drained = 0
    while drained < LINGER_BYTES:
        wait = deadline - time.monotonic()
        if wait <= 0:
            break
        try:
            conn.settimeout(wait)
            data = conn.recv(65536)
        except OSError:
            break
        if not data:
            break
        drained += len(data)
