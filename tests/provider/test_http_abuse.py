"""The loopback server under abuse: timeouts, the connection cap, bodies, client errors, admin.

Every server here uses short, test-only limits; assertions are about behaviour (what the
client receives, what the server counted), never about wall-clock speed.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import select
import socket
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import pytest

from simulator.provider.connections import ConnectionLimits
from simulator.provider.core import Provider
from simulator.provider.http import start_server
from tests.provider.conftest import NATIVE, SONNET

ROOT = Path(__file__).resolve().parents[2]
CHAT = "/v1/chat/completions"
MSGS = "/v1/messages"
HI = {"messages": [{"role": "user", "content": "hi"}]}
HI_ANTHROPIC = {"model": NATIVE, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


@contextmanager
def serving(provider: Provider | None = None, **limits):
    srv = start_server(provider or Provider(seed=3), limits=ConnectionLimits(**limits))
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def wait_until(predicate, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def strict_json(data: bytes):
    """Parse as JSON that a strict parser accepts (no NaN / Infinity)."""

    def reject(name):
        raise AssertionError(f"non-JSON constant {name} in {data[:200]!r}")

    return json.loads(data, parse_constant=reject)


def call(srv, method, path, body=None, headers=None, raw=None):
    conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=20)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(
        method,
        path,
        body=data,
        headers=dict({"content-type": "application/json"}, **(headers or {})),
    )
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, strict_json(payload), resp


def raw_exchange(srv, data: bytes, shut_write: bool = False) -> bytes:
    """Send ``data`` on a fresh connection and read until the server closes it."""
    s = socket.create_connection(srv.server_address[:2], timeout=20)
    try:
        s.sendall(data)
        if shut_write:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def read_one_response(s: socket.socket) -> bytes:
    """One ``Content-Length`` response from a raw keep-alive socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(rest) < length:
        rest += s.recv(65536)
    return head + b"\r\n\r\n" + rest


def split_response(data: bytes):
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, head.decode("latin-1"), strict_json(body) if body else None


def assert_openai_error(body, status_type=None):
    assert set(body) == {"error"} and {"message", "type", "param", "code"} <= set(body["error"])
    if status_type:
        assert body["error"]["type"] == status_type


def assert_anthropic_error(body, type_=None):
    assert body["type"] == "error" and {"type", "message"} <= set(body["error"])
    if type_:
        assert body["error"]["type"] == type_


# -- timeouts ---------------------------------------------------------------------------------
def test_idle_connections_are_closed_and_counted():
    with serving(idle_timeout=0.5, header_timeout=5) as srv:
        idle = [socket.create_connection(srv.server_address[:2], timeout=20) for _ in range(5)]
        for s in idle:
            assert s.recv(1) == b""  # the server closed it; nothing was ever sent
            s.close()
        # a keep-alive connection is closed once it has been idle too long
        s = socket.create_connection(srv.server_address[:2], timeout=20)
        body = json.dumps(HI).encode()
        s.sendall(
            b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
            % (CHAT.encode(), len(body), body)
        )
        data = read_one_response(s)
        assert data.startswith(b"HTTP/1.1 200") and b"Connection: close" not in data
        assert s.recv(1) == b""
        s.close()
        assert wait_until(lambda: srv.gate.active == 0)
        assert srv.gate.snapshot()["idle_closed"] >= 6


def test_slow_headers_are_cut_with_408():
    """One header trickled a byte at a time: the total head deadline cuts it."""
    with serving(idle_timeout=5, header_timeout=0.3) as srv:
        s = socket.create_connection(srv.server_address[:2], timeout=20)
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        sent, answer, cut = 0, b"", False
        while sent < 2000:  # 2000 bytes at 10 ms each would take 20 s; the cut comes long before
            try:
                s.sendall(b"a")
            except OSError:
                cut = True
                break
            sent += 1
            if select.select([s], [], [], 0.01)[0]:
                try:
                    answer = s.recv(65536)
                except OSError:
                    pass
                cut = True
                break
        s.close()
        assert cut and sent < 2000
        if answer:
            status, _, body = split_response(answer)
            assert status == 408 and "headers did not arrive" in body["error"]["message"]
        assert wait_until(lambda: srv.gate.snapshot()["header_timeouts"] == 1)


def test_stalled_body_gets_408_but_a_trickling_body_is_served():
    with serving(idle_timeout=5, header_timeout=5, read_timeout=0.3) as srv:
        stalled = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789"
        status, _, body = split_response(raw_exchange(srv, stalled))
        assert status == 408
        assert_anthropic_error(body)
        assert "made no progress" in body["error"]["message"]
        assert srv.gate.snapshot()["read_timeouts"] == 1
    # the read timeout bounds each wait, not the whole body: a body that keeps coming
    # for longer than the timeout is served
    with serving(idle_timeout=5, header_timeout=5, read_timeout=1.0) as srv:
        payload = json.dumps(dict(HI, metadata={"pad": "p" * 200})).encode()
        s = socket.create_connection(srv.server_address[:2], timeout=20)
        s.sendall(
            b"POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
            % (CHAT.encode(), len(payload))
        )
        begun = time.monotonic()
        for k in range(0, len(payload), 4):
            s.sendall(payload[k : k + 4])
            time.sleep(0.02)
        trickled = time.monotonic() - begun
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        s.close()
        assert split_response(data)[0] == 200
        assert trickled > 1.0 and srv.gate.snapshot()["read_timeouts"] == 0


# -- the connection cap -----------------------------------------------------------------------
def test_connection_cap_answers_503_in_the_route_shape():
    with serving(idle_timeout=10, header_timeout=5, max_connections=2) as srv:
        address = srv.server_address[:2]
        holders = [socket.create_connection(address, timeout=20) for _ in range(2)]
        assert wait_until(lambda: srv.gate.active == 2)
        # the over-the-cap slots are taken by idle connections: the next one is answered at
        # once (OpenAI shape, nothing read) and closed
        extra = [
            socket.create_connection(address, timeout=20) for _ in range(srv.gate.overflow_limit)
        ]
        assert wait_until(lambda: srv.gate.snapshot()["overflow"] == len(extra))
        late = socket.create_connection(address, timeout=20)
        data = late.recv(65536)
        assert data.startswith(b"HTTP/1.1 503") and b"server_is_overloaded" in data
        assert srv.gate.snapshot()["refused"] == 1
        for s in extra + [late]:
            s.close()
        assert wait_until(lambda: srv.gate.snapshot()["overflow"] == 0)
        # with an over-the-cap slot free, the request head is read: 503 in the route's shape
        status, body, resp = call(srv, "POST", CHAT, HI)
        assert status == 503 and resp.getheader("connection") == "close"
        assert resp.getheader("retry-after") == "1"
        assert_openai_error(body, "service_unavailable_error")
        assert body["error"]["code"] == "server_is_overloaded"
        status, body, _ = call(srv, "POST", MSGS, HI_ANTHROPIC)
        assert status == 503
        assert_anthropic_error(body, "overloaded_error")
        assert srv.gate.snapshot()["busy_503"] == 2
        for s in holders:
            s.close()
        assert wait_until(lambda: srv.gate.active == 0)
        assert call(srv, "POST", CHAT, HI)[0] == 200


_FD_CHILD = textwrap.dedent(
    """
    import os, resource, sys
    from simulator.provider import tokens
    from simulator.provider.connections import ConnectionLimits
    from simulator.provider.core import Provider
    from simulator.provider.http import start_server

    tokens.encoding()
    srv = start_server(Provider(), limits=ConnectionLimits(max_connections=1000, idle_timeout=60))
    used = len(os.listdir("/proc/self/fd"))
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + 12, hard))
    print(srv.server_address[1], flush=True)
    sys.stdin.read()
    print(srv.gate.snapshot()["fd_sheds"], flush=True)
    """
)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_at_the_descriptor_limit_connections_are_shed_without_spinning():
    child = subprocess.Popen(
        [sys.executable, "-c", _FD_CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    socks = []
    try:
        port = int(child.stdout.readline())

        def cpu_seconds() -> float:
            fields = Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        socks = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(50)]
        shed = 0
        for s in socks:
            if select.select([s], [], [], 0.2)[0] and s.recv(64).startswith(b"HTTP/1.1 503"):
                shed += 1
            if shed >= 20:
                break
        assert shed >= 20, "connections past the descriptor limit must be answered 503"
        before = cpu_seconds()
        time.sleep(1.0)
        assert cpu_seconds() - before < 0.4, "the accept loop must not spin at the fd limit"
        for s in socks:
            s.close()
        socks = []
        conn = resp = None
        for _ in range(50):  # the descriptors come back as the server closes its side
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
                conn.request("POST", CHAT, body=json.dumps(HI))
                resp = conn.getresponse()
                if resp.status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        assert resp is not None and resp.status == 200
        conn.close()
        out, _ = child.communicate(b"", timeout=20)
        assert int(out) >= 20
    finally:
        for s in socks:
            s.close()
        if child.poll() is None:
            child.kill()
            child.wait()


# -- bodies -----------------------------------------------------------------------------------
_GOOD = json.dumps(HI).encode()
_MALFORMED_CHUNKED = {
    "minus_one": b"-1\r\n" + b"x" * 200_000,
    "plus_sign": b"+5\r\nhello\r\n0\r\n\r\n",
    "hex_prefix": b"0x5\r\nhello\r\n0\r\n\r\n",
    "leading_space": b" 5\r\nhello\r\n0\r\n\r\n",
    "underscore": b"1_0\r\nhello world12345\r\n0\r\n\r\n",
    "not_hex": b"zz\r\n",
    "empty_size": b"\r\nhello\r\n0\r\n\r\n",
    "bare_lf": b"%x\n%s\r\n0\r\n\r\n" % (len(_GOOD), _GOOD),
    "too_many_digits": b"00000000000000001\r\nx\r\n0\r\n\r\n",
    "no_crlf_after_data": b"%x\r\n%sXX0\r\n\r\n" % (len(_GOOD), _GOOD),
    "truncated_data": b"%x\r\n%s" % (len(_GOOD), _GOOD[:10]),
    "no_last_chunk": b"%x\r\n%s\r\n" % (len(_GOOD), _GOOD),
    "no_final_crlf": b"%x\r\n%s\r\n0\r\n" % (len(_GOOD), _GOOD),
    "bad_trailer": b"%x\r\n%s\r\n0\r\nnot a trailer\r\n\r\n" % (len(_GOOD), _GOOD),
    "long_size_line": b"5;" + b"e" * 10_000 + b"\r\nhello\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(_MALFORMED_CHUNKED))
def test_malformed_chunked_bodies_are_400_in_the_route_shape(server, case):
    for path in (CHAT, MSGS):
        head = b"POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" % path.encode()
        status, head_text, body = split_response(
            raw_exchange(server, head + _MALFORMED_CHUNKED[case], shut_write=True)
        )
        assert status == 400, (case, path, body)
        assert "Connection: close" in head_text
        if path == CHAT:
            assert_openai_error(body, "invalid_request_error")
        else:
            assert_anthropic_error(body, "invalid_request_error")
        assert "chunked" in body["error"]["message"].lower()


def test_chunk_size_minus_one_does_not_bypass_the_body_limit():
    srv = start_server(Provider(), max_body_bytes=1000)
    try:
        head = (
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        status, _, body = split_response(raw_exchange(srv, head + b"-1\r\n" + b"x" * 5000))
        assert status == 400 and "invalid chunk size" in body["error"]["message"]
        status, _, body = split_response(
            raw_exchange(srv, head + b"7d1\r\n" + b"x" * 2001 + b"\r\n0\r\n\r\n")
        )
        assert status == 413 and "maximum allowed number of bytes" in body["error"]["message"]
        assert srv.internal_errors == 0
    finally:
        srv.shutdown()
        srv.server_close()


def test_valid_chunked_with_extensions_and_trailers_is_served(server):
    half = len(_GOOD) // 2
    body = b"%x;name=value\r\n%s\r\n%X\r\n%s\r\n0\r\nX-Checksum: 1\r\n\r\n" % (
        half,
        _GOOD[:half],
        len(_GOOD) - half,
        _GOOD[half:],
    )
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n"
    )
    assert split_response(raw_exchange(server, head + body))[0] == 200


@pytest.mark.parametrize(
    "headers",
    [
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        b"Transfer-Encoding: gzip, chunked\r\n",
        b"Transfer-Encoding: chunked, chunked\r\n",
        b"Content-Length: +5\r\n",
        b"Content-Length: 0x10\r\n",
        b"Content-Length: 5, 6\r\n",
        b"Content-Length: 5\r\nContent-Length: 6\r\n",
        b"Content-Length: -1\r\n",
    ],
)
def test_framing_header_errors_are_400(server, headers):
    data = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\nhello"
    status, _, body = split_response(raw_exchange(server, data, shut_write=True))
    assert status == 400
    assert_openai_error(body, "invalid_request_error")


# -- client errors are 400s -------------------------------------------------------------------
def _client_error_cases():
    cases = []
    for options in ([], "x", 1, 1.5, True, [1], {"include_usage": "yes"}, {"include_usage": 1}):
        for stream in (True, False):
            cases.append(
                (CHAT, json.dumps(dict(HI, stream=stream, stream_options=options)).encode())
            )
    lone = ("\\ud800", "\\udfff", "\\udc00x", "a\\ud83d")  # JSON escapes of unpaired surrogates
    for s in lone:
        cases += [
            (CHAT, b'{"messages":[{"role":"user","content":"a%sb"}]}' % s.encode()),
            (CHAT, b'{"model":"m%s","messages":[{"role":"user","content":"ab"}]}' % s.encode()),
            (CHAT, b'{"messages":[{"role":"us%ser","content":"ab"}]}' % s.encode()),
            (
                CHAT,
                b'{"messages":[{"role":"user","content":[{"type":"text","text":"%s"}]}]}'
                % s.encode(),
            ),
            (CHAT, b'{"messages":[{"role":"user","name":"%s","content":"ab"}]}' % s.encode()),
            (CHAT, b'{"messages":[{"role":"user","content":"ab","k%s":1}]}' % s.encode()),
            (
                MSGS,
                b'{"model":"%s","max_tokens":5,"messages":[{"role":"user","content":"a%sb"}]}'
                % (NATIVE.encode(), s.encode()),
            ),
            (
                MSGS,
                b'{"model":"c%s","max_tokens":5,"messages":[{"role":"user","content":"ab"}]}'
                % s.encode(),
            ),
            (
                MSGS,
                b'{"model":"%s","max_tokens":5,"messages":[{"role":"%s","content":"ab"}]}'
                % (NATIVE.encode(), s.encode()),
            ),
            (
                MSGS,
                b'{"model":"%s","max_tokens":5,"system":"%s","messages":[{"role":"user","content":"ab"}]}'
                % (NATIVE.encode(), s.encode()),
            ),
            (
                "/v1/messages/count_tokens",
                b'{"model":"c%s","messages":[{"role":"user","content":"ab"}]}' % s.encode(),
            ),
        ]
    for literal in (b"NaN", b"Infinity", b"-Infinity", b"1e400"):
        cases.append(
            (CHAT, b'{"temperature":%s,"messages":[{"role":"user","content":"ab"}]}' % literal)
        )
        cases.append((MSGS, b'{"model":"x","max_tokens":%s,"messages":[]}' % literal))
    return cases


def test_client_errors_are_400_in_the_route_shape_never_500(server):
    cases = _client_error_cases()
    for path, raw in cases:
        status, body, _ = call(server, "POST", path, raw=raw)
        assert status == 400, (path, raw, body)
        if path == CHAT:
            assert_openai_error(body, "invalid_request_error")
        else:
            assert_anthropic_error(body, "invalid_request_error")
    assert len(cases) >= 68
    # a valid surrogate pair is fine
    ok = b'{"messages":[{"role":"user","content":"smile \\ud83d\\ude00"}]}'
    status, body, _ = call(server, "POST", CHAT, raw=ok)
    assert status == 200 and body["choices"][0]["message"]["content"].endswith("smile \U0001f600")
    health = call(server, "GET", "/_sim/health")[1]
    assert health["internal_errors"] == 0, health["last_internal_error"]


# -- admin inputs -----------------------------------------------------------------------------
def _fault(**kw):
    return {"faults": [dict({"kind": "server_error", "at": [0]}, **kw)]}


_BAD_ADMIN = [
    *[
        ("/_sim/faults", _fault(status=v), "faults[0].status")
        for v in ("abc", 1.5, -1, 99, 1000, 101, 204, 304, True, "500")
    ],
    ("/_sim/faults", _fault(kind="content_filter", status=500), "faults[0].status"),
    ("/_sim/faults", _fault(retry_after=-1), "faults[0].retry_after"),
    ("/_sim/faults", _fault(retry_after="1"), "faults[0].retry_after"),
    ("/_sim/faults", _fault(retry_after=1e300), "faults[0].retry_after"),
    ("/_sim/faults", _fault(retry_after_ms=1.5), "faults[0].retry_after_ms"),
    ("/_sim/faults", _fault(at=[-1]), "faults[0].at[0]"),
    ("/_sim/faults", _fault(at=["0"]), "faults[0].at[0]"),
    ("/_sim/faults", _fault(at=[True]), "faults[0].at[0]"),
    ("/_sim/faults", _fault(after_events=-2), "faults[0].after_events"),
    ("/_sim/faults", _fault(times=-1), "faults[0].times"),
    ("/_sim/faults", _fault(message=5), "faults[0].message"),
    ("/_sim/faults", _fault(fired=3), "faults[0]"),
    ("/_sim/faults", _fault(kind="meteor"), "faults[0].kind"),
    (
        "/_sim/faults",
        {"faults": [{"kind": "overloaded", "when": {"min_prompt_tokens": "x"}}]},
        "faults[0].when.min_prompt_tokens",
    ),
    (
        "/_sim/faults",
        {"faults": [{"kind": "overloaded", "when": {"route": "chat"}}]},
        "faults[0].when.route",
    ),
    (
        "/_sim/faults",
        {"faults": [{"kind": "overloaded", "when": {"stream": "yes"}}]},
        "faults[0].when.stream",
    ),
    ("/_sim/faults", {"faults": "x"}, None),
    ("/_sim/faults", {"faults": [], "append": "yes"}, "append"),
    ("/_sim/faults", {"fault": []}, "body"),
    ("/_sim/faults", 5, "body"),
    ("/_sim/clock", {"advance": -1}, "advance"),
    ("/_sim/clock", {"advance": "10"}, "advance"),
    ("/_sim/clock", {"advance": True}, "advance"),
    ("/_sim/clock", {"advance": 2e9}, "advance"),
    ("/_sim/clock", {"advance": 10**400}, "advance"),
    ("/_sim/clock", {"set": 1e308}, "set"),
    ("/_sim/clock", {"set": None}, "set"),
    ("/_sim/clock", {"advance": 1, "set": 5}, "body"),
    ("/_sim/clock", {}, "body"),
    ("/_sim/clock", [], "body"),
    ("/_sim/models", {"name": SONNET, "price_input": -1}, "price_input"),
    ("/_sim/models", {"name": SONNET, "price_output": "3"}, "price_output"),
    ("/_sim/models", {"name": SONNET, "context_length": 0}, "context_length"),
    ("/_sim/models", {"name": SONNET, "context_length": 1.5}, "context_length"),
    ("/_sim/models", {"name": SONNET, "max_output_tokens": True}, "max_output_tokens"),
    ("/_sim/models", {"name": SONNET, "cache_rules": "google"}, "cache_rules"),
    ("/_sim/models", {"name": SONNET, "openai_cached_multiplier": 2}, "openai_cached_multiplier"),
    ("/_sim/models", {"name": SONNET, "wings": 2}, None),
    ("/_sim/models", {"name": 5, "context_length": 100}, "name"),
    ("/_sim/models", {"family": "nope", "context_length": 100}, "family"),
    ("/_sim/models", {"name": SONNET}, "body"),
    ("/_sim/models", {"context_length": 100}, "body"),
    ("/_sim/cache", {"hold": "yes"}, "hold"),
    ("/_sim/cache", {"hold": 1}, "hold"),
    ("/_sim/cache", {"hold": True, "x": 1}, "body"),
    ("/_sim/replies", {"mode": "poetry"}, "mode"),
    ("/_sim/replies", {"mode": "summariser", "max_chars": 0}, "max_chars"),
    ("/_sim/replies", {"mode": "summariser", "max_chars": "9"}, "max_chars"),
    ("/_sim/replies", {"mode": "scripted", "replies": "one"}, "replies"),
    ("/_sim/replies", {"mode": "scripted", "replies": [5]}, "replies[0]"),
    ("/_sim/replies", {"mode": "scripted", "replies": [{"content": 5}]}, "replies[0].content"),
    (
        "/_sim/replies",
        {"mode": "scripted", "replies": [{"finish_reason": "x"}]},
        "replies[0].finish_reason",
    ),
    (
        "/_sim/replies",
        {"mode": "scripted", "replies": [{"tool_calls": [{"arguments": {}}]}]},
        "replies[0].tool_calls[0]",
    ),
    ("/_sim/replies", {"mode": "tool_script", "rounds": [[]]}, "rounds[0]"),
    ("/_sim/replies", {"mode": "tool_script", "rounds": [[{"name": "f"}]], "final": 3}, "final"),
    ("/_sim/replies", {"mode": "echo", "extra": 1}, "body"),
    ("/_sim/reset", {"everything": True}, "body"),
]
#: Bodies that are not JSON a provider accepts: non-finite numbers.
_NON_FINITE = [
    ("/_sim/clock", b'{"advance": Infinity}'),
    ("/_sim/clock", b'{"advance": 1e400}'),
    ("/_sim/clock", b'{"set": NaN}'),
    ("/_sim/faults", b'{"faults": [{"kind": "rate_limit", "at": [0], "retry_after": 1e999}]}'),
    ("/_sim/models", b'{"name": "anthropic/claude-sonnet-4", "price_input": -Infinity}'),
]


def test_every_admin_input_is_validated(server):
    before = call(server, "GET", "/_sim/faults")[1]
    for path, payload, param in _BAD_ADMIN:
        raw = json.dumps(payload).encode()
        status, body, _ = call(server, "POST", path, raw=raw)
        assert status == 400, (path, payload, body)
        assert_openai_error(body, "invalid_request_error")
        message = body["error"]["message"]
        assert message.startswith(path), message
        if param is not None:
            assert body["error"]["param"] == param, (payload, body)
            assert "accepted:" in message and body["error"]["accepted"], body
    for path, raw in _NON_FINITE:
        status, body, _ = call(server, "POST", path, raw=raw)
        assert status == 400 and "could not parse the JSON body" in body["error"]["message"]
    # nothing was changed by the rejected inputs
    assert call(server, "GET", "/_sim/faults")[1] == before
    assert call(server, "GET", "/_sim/clock")[1] == {"now": 0.0}
    status, body, _ = call(server, "POST", CHAT, HI)
    assert status == 200 and "echo[" in body["choices"][0]["message"]["content"]
    assert call(server, "GET", "/_sim/journal?since=x")[0] == 400
    assert call(server, "GET", "/_sim/journal?full=2")[0] == 400
    assert call(server, "GET", "/_sim/journal?bogus=1")[0] == 400
    status, body, resp = call(server, "GET", "/_sim/reset")
    assert status == 405 and resp.getheader("allow") == "POST"
    assert call(server, "GET", "/_sim/health")[1]["internal_errors"] == 0


def test_clock_near_its_limit_and_prices_keep_every_later_request_valid(server):
    assert call(server, "POST", "/_sim/clock", {"set": 999_999_000})[0] == 200
    assert call(server, "POST", "/_sim/clock", {"advance": 1e308})[0] == 400
    assert (
        call(server, "POST", "/_sim/faults", _fault(kind="rate_limit", retry_after=86_400))[0]
        == 200
    )
    assert call(server, "POST", "/_sim/models", {"name": SONNET, "price_input": 1e6})[0] == 200
    statuses = [call(server, "POST", CHAT, HI)[0] for _ in range(3)]
    assert statuses == [429, 200, 200]  # the retry window ends at the clock's limit
    for path in ("/_sim/clock", "/_sim/journal?full=1", "/_sim/faults", "/_sim/health"):
        assert call(server, "GET", path)[0] == 200  # strict_json: no NaN / Infinity anywhere
    assert call(server, "GET", "/v1/models")[0] == 200


def test_admin_fuzz_never_breaks_the_server():
    rng = random.Random(363)
    values = [
        None,
        True,
        False,
        0,
        -1,
        1,
        1.5,
        1e308,
        -1e308,
        10**30,
        "",
        "abc",
        "1",
        [],
        [1],
        {},
        {"a": 1},
        99,
        204,
        304,
        1000,
    ]
    keys = {
        "/_sim/faults": [
            "faults",
            "append",
            "kind",
            "at",
            "status",
            "retry_after",
            "retry_after_ms",
            "when",
            "times",
            "after_events",
            "message",
        ],
        "/_sim/clock": ["advance", "set"],
        "/_sim/models": [
            "name",
            "family",
            "context_length",
            "price_input",
            "price_output",
            "cache_rules",
            "min_cacheable_tokens",
        ],
        "/_sim/cache": ["hold"],
        "/_sim/replies": ["mode", "max_chars", "replies", "rounds", "final"],
        "/_sim/reset": ["x"],
    }
    with serving(idle_timeout=10) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=20)
        statuses: dict[int, int] = {}
        for n in range(400):
            path = rng.choice(sorted(keys))
            payload = {
                k: rng.choice(values)
                for k in rng.sample(keys[path], rng.randrange(1, min(3, len(keys[path])) + 1))
            }
            if path == "/_sim/faults" and rng.random() < 0.6:
                fault = {
                    "kind": rng.choice(
                        ["server_error", "rate_limit", "terminal", "stream_cut", "x"]
                    ),
                    "at": [rng.randrange(3)],
                }
                fault.update(
                    {k: rng.choice(values) for k in rng.sample(keys[path][2:], rng.randrange(0, 3))}
                )
                payload = {"faults": [fault]}
            if path == "/_sim/reset" and rng.random() < 0.5:
                payload = {}
            conn.request(
                "POST", path, body=json.dumps(payload), headers={"content-type": "application/json"}
            )
            resp = conn.getresponse()
            body = strict_json(resp.read())
            statuses[resp.status] = statuses.get(resp.status, 0) + 1
            assert resp.status in (200, 400), (path, payload, body)
            if n % 20 == 0:  # model traffic in between stays well-formed
                conn.request("POST", CHAT, body=json.dumps(HI))
                resp = conn.getresponse()
                strict_json(resp.read())
                assert resp.status in (200, 400, 429, 500, 503, 529), resp.status
            for q in ("/_sim/faults", "/_sim/clock"):
                conn.request("GET", q)
                resp = conn.getresponse()
                strict_json(resp.read())
        assert statuses.get(400, 0) > 100 and statuses.get(200, 0) > 10
        assert call(srv, "POST", "/_sim/reset", {})[0] == 200
        status, body, _ = call(srv, "POST", CHAT, HI)
        assert status == 200, body
        assert call(srv, "GET", "/_sim/health")[1]["internal_errors"] == 0


# -- reset and memory -------------------------------------------------------------------------
def test_reset_restores_a_fresh_server_state():
    provider = Provider(seed=3)
    with serving(provider) as srv:
        first = call(srv, "POST", CHAT, HI)[1]
        assert call(srv, "POST", "/_sim/clock", {"set": 5000})[0] == 200
        assert call(srv, "POST", "/_sim/faults", _fault(kind="overloaded", at=[5]))[0] == 200
        assert call(srv, "POST", "/_sim/models", {"name": SONNET, "context_length": 5})[0] == 200
        assert call(srv, "POST", "/_sim/replies", {"mode": "scripted", "replies": ["x"]})[0] == 200
        assert call(srv, "POST", "/_sim/cache", {"hold": True})[0] == 200
        leak = {"messages": [{"role": "user", "content": "x", "message_uid": "u"}]}
        assert call(srv, "POST", CHAT, leak)[0] == 400  # the 5-token window
        assert call(srv, "POST", "/_sim/reset")[1] == {"ok": True, "clock": 0.0}  # empty body
        assert call(srv, "GET", "/_sim/faults")[1] == {"faults": []}
        assert call(srv, "GET", "/_sim/journal")[1] == {"entries": []}
        assert call(srv, "GET", "/_sim/u9")[1]["count"] == 0
        assert provider.clock.now() == 0.0 and not provider.anthropic_cache.held
        assert provider.models.resolve(SONNET).context_length == 200_000
        again = call(srv, "POST", CHAT, HI)[1]
        assert again == first  # same index, clock, caches and reply policy as a fresh server
        health = call(srv, "GET", "/_sim/health")[1]
        assert health["requests_served"] == 5 and health["internal_errors"] == 0


def test_reset_releases_request_bodies():
    """Requests of 1.5 MiB each: after a reset, nothing keeps them alive (tracemalloc)."""
    with serving(Provider(seed=1, journal_limit=1000)) as srv:
        call(srv, "POST", CHAT, HI)  # warm up: tokenizer, caches
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            for i in range(8):
                text = " ".join(f"w{i}x{j % 997}" for j in range(55_000))  # ~0.5 MiB, tokenized
                req = {
                    "messages": [{"role": "user", "content": text}],
                    "metadata": {"pad": "p" * 2**20},
                }
                assert call(srv, "POST", CHAT, req)[0] in (200, 400)
                del text, req
            assert wait_until(lambda: srv.gate.active == 0)  # every handler thread is done
            held = tracemalloc.get_traced_memory()[0] - base
            assert call(srv, "POST", "/_sim/reset", {})[0] == 200
            assert wait_until(lambda: srv.gate.active == 0)
            after = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        assert held > 8 * 2**20  # the journal kept the bodies before the reset
        assert after < 2 * 2**20, f"{after / 2**20:.1f} MiB still held after reset"


def test_journal_keeps_bodies_within_its_byte_budget():
    provider = Provider(journal_body_bytes=50_000)
    with serving(provider) as srv:
        for i in range(5):
            req = {
                "messages": [{"role": "user", "content": f"n{i}"}],
                "metadata": {"pad": "p" * 20_000},
            }
            assert call(srv, "POST", CHAT, req)[0] == 200
        entries = call(srv, "GET", "/_sim/journal?full=1")[1]["entries"]
        assert [e["dropped"] for e in entries] == [True, True, True, False, False]
        assert entries[0]["request"] is None and entries[0]["usage"] is not None
        assert entries[-1]["request"]["messages"][0]["content"] == "n4"
        assert all(e["size"] > 20_000 for e in entries)
        assert len(provider.journal) == 5  # entries (and indices) stay; only bodies go


# -- one large request does not hold up the others --------------------------------------------
def test_a_slow_30_mb_upload_does_not_block_a_small_request():
    """A small request completes while a 30 MB upload is still trickling in."""
    with serving(Provider(seed=2), idle_timeout=30, read_timeout=30) as srv:
        pad = b"p" * (30 * 2**20)
        body = b'{"messages":[{"role":"user","content":"big"}],"metadata":{"pad":"' + pad + b'"}}'
        started, small_done, uploaded = threading.Event(), threading.Event(), threading.Event()
        result: dict[str, object] = {}

        def upload():
            s = socket.create_connection(srv.server_address[:2], timeout=60)
            head = b"POST %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
            s.sendall(head % (CHAT.encode(), len(body)))
            for sent in range(0, len(body), 65536):
                s.sendall(body[sent : sent + 65536])
                if sent >= 2**20:
                    started.set()
                if sent < len(body) // 2:
                    time.sleep(0.001)  # trickle the first half ...
                elif not small_done.is_set():
                    small_done.wait(30)  # ... and hold the rest until the small one is answered
            uploaded.set()
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            s.close()
            result["big"] = split_response(data)[0]

        t = threading.Thread(target=upload)
        t.start()
        assert started.wait(30)
        small = {"messages": [{"role": "user", "content": "small"}]}
        status, answer, _ = call(srv, "POST", CHAT, small)
        upload_was_finished = uploaded.is_set()
        small_done.set()
        t.join(60)
        assert status == 200 and answer["choices"][0]["message"]["content"].endswith("small")
        assert not upload_was_finished, "the small request waited for the whole upload"
        assert result["big"] == 200


class _GatedProvider(Provider):
    """Blocks while rendering a request marked ``slow`` until the test releases it."""

    def __init__(self) -> None:
        super().__init__(seed=4)
        self.entered, self.release = threading.Event(), threading.Event()

    def _prepare(self, route, request, namespace, prep):
        if isinstance(request, dict) and request.get("metadata") == {"slow": True}:
            self.entered.set()
            assert self.release.wait(30)
        return super()._prepare(route, request, namespace, prep)


def test_rendering_a_large_request_does_not_hold_the_provider_lock():
    provider = _GatedProvider()
    with serving(provider) as srv:
        big = {
            "messages": [{"role": "user", "content": "word " * 50_000}],
            "metadata": {"slow": True},
        }
        out: dict[str, int] = {}
        t = threading.Thread(target=lambda: out.setdefault("big", call(srv, "POST", CHAT, big)[0]))
        t.start()
        try:
            assert provider.entered.wait(30)
            status, body, _ = call(srv, "POST", CHAT, HI)  # answered while the big one renders
            assert status == 200 and "big" not in out
        finally:
            provider.release.set()
            t.join(60)
        assert out["big"] == 200
        assert [e.index for e in provider.journal] == [0, 1]
        assert provider.journal[0].request == HI  # the small one took index 0
