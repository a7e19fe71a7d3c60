"""Covers conformance.runtime.sandbox (the network rule) and its use by conformance.run.session:
no network
while cases run, only loopback connects."""

from __future__ import annotations

import socket
import threading

import pytest

from conformance.authoring import registry
from conformance.clauses.errors import NetworkBlocked
from conformance.run.session import ConformanceSession, RunOptions
from conformance.runtime.sandbox import block_network, is_loopback
from reference_engines.mutants._base import MinimalEngine


@pytest.mark.parametrize(
    "host, loop",
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("localhost", True),
        ("192.0.2.1", False),
        ("10.0.0.1", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host, loop):
    assert is_loopback(host) is loop


def test_non_loopback_connect_is_blocked_without_touching_the_network():
    with block_network():
        with pytest.raises(NetworkBlocked, match="192.0.2.1"):
            socket.create_connection(("192.0.2.1", 80), timeout=0.01)
        with pytest.raises(NetworkBlocked):
            socket.getaddrinfo("example.com", 443)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            with pytest.raises(NetworkBlocked):
                s.connect(("198.51.100.7", 443))
        finally:
            s.close()
    # restored afterwards
    assert socket.socket.connect.__name__ == "connect" and not hasattr(
        socket.socket.connect, "__wrapped__"
    )


def test_loopback_still_works_while_blocked():
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted = []
    t = threading.Thread(target=lambda: accepted.append(server.accept()[0]))
    t.start()
    with block_network():
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
    t.join(5)
    c.close()
    accepted[0].close()
    server.close()
    assert accepted


class NetworkEngine(MinimalEngine):
    """An engine that phones home from compress(): the check sees the block as an error."""

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        socket.create_connection(("203.0.113.9", 443), timeout=0.01)
        return super().compress(messages, current_tokens, focus_topic)


def test_engine_network_access_is_blocked_during_checks():
    session = ConformanceSession(RunOptions(profile="quick"), NetworkEngine)
    result = session.run_case(registry.get("A4-compress-returns-list"))
    assert result.outcome == "failed", result.message
    assert "NetworkBlocked" in result.message and "203.0.113.9" in result.message
