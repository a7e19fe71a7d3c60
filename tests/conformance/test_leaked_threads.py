"""TS1's leaked-thread check counts the engine's threads, not the provider simulator's.

An engine whose HTTP client pools a kept-alive connection to the simulated provider leaves the
simulator's connection thread running (a real provider runs no thread in the agent's process):
that thread is not the engine's (docs/verdicts/hermes-context-tuner-0.3.3.md, TS1).
"""

from __future__ import annotations

import http.client
import threading
import time

import pytest

from conformance.checks.ts_threads import _no_leaks
from conformance.clauses.errors import ContractViolation
from simulator.provider.http import is_simulator_thread, start_server


@pytest.fixture
def provider():
    server = start_server()
    yield server
    server.shutdown()
    server.server_close()


def _pooled_request(server) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    conn.request("GET", "/v1/models")
    conn.getresponse().read()
    return conn  # left open, as a client's pool keeps it


def test_pooled_connection_to_the_simulator_is_no_leak(provider):
    before = set(threading.enumerate())
    conn = _pooled_request(provider)
    try:
        serving = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        assert [t.name for t in serving] == ["provider-sim-conn"]
        assert all(is_simulator_thread(t) for t in serving)
        _no_leaks(before, "compress()")  # no finding
    finally:
        conn.close()


def test_an_engine_thread_borrowing_the_name_still_leaks(provider):
    before = set(threading.enumerate())
    stray = threading.Thread(target=time.sleep, args=(2.0,), name="provider-sim-conn", daemon=True)
    stray.start()
    assert not is_simulator_thread(stray)
    with pytest.raises(ContractViolation, match="expected no threads left running"):
        _no_leaks(before, "compress()")
