"""No network while checks run: sockets may connect to loopback only.

``block_network()`` patches ``socket.socket.connect``/``connect_ex``, ``socket.create_connection``
and ``socket.getaddrinfo``; any non-loopback target raises :class:`NetworkBlocked` (an
``OSError``, as a real unreachable network would). Unix-domain sockets are allowed.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Iterator
from typing import Any

from conformance.errors import NetworkBlocked

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
_state = threading.local()
_lock = threading.Lock()
_depth = 0
_originals: dict = {}


def is_loopback(host: Any) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost names."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address:
        if not is_loopback(address[0]):
            raise NetworkBlocked(
                f"network access to {address[0]!r} blocked: conformance checks run offline "
                "(only loopback is allowed). An engine must not reach the network during checks."
            )


def _install() -> None:
    sock = socket.socket
    _originals.update(
        connect=sock.connect,
        connect_ex=sock.connect_ex,
        getaddrinfo=socket.getaddrinfo,
        create_connection=socket.create_connection,
    )

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        return _originals["connect"](self, address)

    def connect_ex(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address)
        return _originals["connect_ex"](self, address)

    def getaddrinfo(host, *args, **kwargs):
        _check((host,))
        return _originals["getaddrinfo"](host, *args, **kwargs)

    def create_connection(address, *args, **kwargs):
        _check(address)
        return _originals["create_connection"](address, *args, **kwargs)

    sock.connect = connect
    sock.connect_ex = connect_ex
    socket.getaddrinfo = getaddrinfo
    socket.create_connection = create_connection


def _uninstall() -> None:
    socket.socket.connect = _originals["connect"]
    socket.socket.connect_ex = _originals["connect_ex"]
    socket.getaddrinfo = _originals["getaddrinfo"]
    socket.create_connection = _originals["create_connection"]


@contextlib.contextmanager
def block_network() -> Iterator[None]:
    """Block non-loopback connections for the duration (re-entrant, process-wide)."""
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()
