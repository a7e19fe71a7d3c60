"""The loopback HTTP server: routes, provider-shaped errors, admin routes, loopback guard, fuzz."""

from __future__ import annotations

import http.client
import json
import random
import socket

import pytest

from simulator.provider.core import Provider
from simulator.provider.http import (
    NonLoopbackRefused,
    SimServer,
    ensure_loopback,
    start_server,
)
from simulator.provider.serve import main
from tests.provider.conftest import NATIVE, SONNET


def call(server, method, path, body=None, headers=None, raw=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
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
    try:
        return resp.status, json.loads(payload), resp
    except ValueError:
        return resp.status, payload, resp


def test_loopback_guard():
    for host in ("127.0.0.1", "::1", "localhost", "127.5.5.5"):
        ensure_loopback(host)
    for host in ("0.0.0.0", "10.1.2.3", "example.org", "::"):
        with pytest.raises(NonLoopbackRefused, match="--allow-non-loopback"):
            ensure_loopback(host)
    ensure_loopback("0.0.0.0", allow_non_loopback=True)
    with pytest.raises(NonLoopbackRefused):
        SimServer(("0.0.0.0", 0), Provider())
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2


def test_serve_refuses_a_bad_port_in_one_line(capsys):
    """``serve`` answers a port outside 0..65535, or one it cannot listen on, with one
    ``error:`` line and exit status 2, never a traceback."""
    assert main(["--port", "99999"]) == 2
    assert capsys.readouterr().err == (
        "context-engine-kit serve: error: --port 99999: a port is a number from 0 to 65535. "
        "Pick a free port (0 picks one for you).\n"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert main(["--port", str(taken.getsockname()[1])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("context-engine-kit serve: error: cannot listen: ") and err.endswith(
        "Pick a free port between 0 and 65535 (0 picks one for you) on a loopback address.\n"
    ), err


def test_unknown_route_and_method_provider_shaped(server):
    status, body, _ = call(server, "POST", "/v1/nothing", {"a": 1})
    assert status == 404 and body["error"]["message"] == "Invalid URL (POST /v1/nothing)"
    status, body, _ = call(server, "GET", "/v1/messages/xyz")
    assert status == 404 and body["type"] == "error" and body["error"]["type"] == "not_found_error"
    status, body, _ = call(server, "DELETE", "/v1/chat/completions")
    assert status == 404 and "error" in body
    for probe in ("/api/tags", "/v1/props", "/version", "/api/v1/models"):
        assert call(server, "GET", probe)[0] == 404


def test_malformed_json_both_shapes(server):
    status, body, _ = call(server, "POST", "/v1/chat/completions", raw=b'{"messages": [')
    assert status == 400 and "could not parse the JSON body" in body["error"]["message"]
    status, body, _ = call(server, "POST", "/v1/messages", raw=b"\xff\xfe not json")
    assert (
        status == 400 and body["type"] == "error" and "not valid JSON" in body["error"]["message"]
    )
    status, body, _ = call(
        server, "POST", "/v1/chat/completions", raw=b"[" * 100_000 + b"]" * 100_000
    )
    assert status == 400
    status, body, _ = call(server, "POST", "/v1/chat/completions", raw=b'"just a string"')
    assert status == 400 and "JSON object" in body["error"]["message"]


def test_oversized_body_413():
    srv = start_server(Provider(), max_body_bytes=1000)
    try:
        status, body, _ = call(srv, "POST", "/v1/chat/completions", raw=b"x" * 5000)
        assert status == 413 and "maximum allowed number of bytes" in body["error"]["message"]
        status, body, _ = call(srv, "POST", "/v1/messages", raw=b"x" * 5000)
        assert status == 413 and body["error"]["type"] == "request_too_large"
        status, _, _ = call(
            srv, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "ok"}]}
        )
        assert status == 200
    finally:
        srv.shutdown()
        srv.server_close()


def test_chunked_request_body(server):
    sock = socket.create_connection(server.server_address[:2], timeout=10)
    payload = json.dumps({"messages": [{"role": "user", "content": "chunked"}]}).encode()
    req = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        + b"%x\r\n%s\r\n0\r\n\r\n"
        % (len(payload), payload)
    )
    sock.sendall(req)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    assert data.startswith(b"HTTP/1.1 200") and b"chunked" in data


def test_models_listing(server):
    status, body, _ = call(server, "GET", "/v1/models")
    by_id = {m["id"]: m for m in body["data"]}
    assert by_id[SONNET]["context_length"] == 200_000
    assert by_id[SONNET]["top_provider"]["max_completion_tokens"] == 64_000
    assert float(by_id[SONNET]["pricing"]["input_cache_read"]) == pytest.approx(3e-7)
    status, body, _ = call(server, "GET", "/v1/models/gpt-4.1")
    assert body["context_length"] == 1_047_576
    status, body, _ = call(server, "GET", "/v1/models", headers={"anthropic-version": "2023-06-01"})
    assert body["data"][0]["type"] == "model" and body["has_more"] is False


def test_admin_routes(server):
    assert call(server, "POST", "/_sim/clock", {"advance": 12.5})[1] == {"now": 12.5}
    assert call(server, "POST", "/_sim/clock", {"set": 100})[1] == {"now": 100.0}
    status, body, _ = call(server, "POST", "/_sim/clock", {"set": 1})
    assert status == 400 and "backwards" in body["error"]["message"]
    assert call(server, "POST", "/_sim/clock", {"advance": -1})[0] == 400
    assert call(server, "POST", "/_sim/clock", {"wat": 1})[0] == 400
    status, body, _ = call(
        server, "POST", "/_sim/faults", {"faults": [{"kind": "overloaded", "at": [0]}]}
    )
    assert status == 200 and body["faults"][0]["kind"] == "overloaded"
    assert call(server, "POST", "/_sim/faults", {"faults": [{"kind": "nope", "at": [0]}]})[0] == 400
    status, body, resp = call(
        server, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}
    )
    assert status == 529 and body["error"]["type"] == "overloaded_error"
    leak = {"messages": [{"role": "user", "content": "x", "message_uid": "f" * 32}]}
    assert call(server, "POST", "/v1/chat/completions", leak)[0] == 200
    assert "message_uid" in call(server, "GET", "/_sim/u9")[1]["u9_leaks"][0]
    journal = call(server, "GET", "/_sim/journal?full=1")[1]["entries"]
    assert [e["status"] for e in journal] == [529, 200] and journal[1]["request"] == leak
    assert (
        call(server, "POST", "/_sim/replies", {"mode": "scripted", "replies": ["scripted!"]})[0]
        == 200
    )
    assert call(server, "POST", "/_sim/replies", {"mode": "poetry"})[0] == 400
    body = call(
        server, "POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}
    )[1]
    assert body["choices"][0]["message"]["content"] == "scripted!"
    assert call(server, "POST", "/_sim/models", {"name": "mini", "context_length": 100})[0] == 200
    status, body, _ = call(
        server,
        "POST",
        "/v1/chat/completions",
        {"model": "mini", "messages": [{"role": "user", "content": "word " * 200}]},
    )
    assert status == 400 and body["error"]["code"] == "context_length_exceeded"
    assert call(server, "POST", "/_sim/models", {"context_length": 100})[0] == 400
    assert call(server, "POST", "/_sim/cache", {"hold": True})[0] == 200
    assert call(server, "POST", "/_sim/cache", {"hold": "yes"})[0] == 400
    assert call(server, "POST", "/_sim/reset", {})[1]["ok"] is True
    assert call(server, "GET", "/_sim/journal")[1]["entries"] == []
    assert call(server, "GET", "/_sim/health")[1]["internal_errors"] == 0


def test_count_tokens_route(server):
    status, body, _ = call(
        server,
        "POST",
        "/v1/messages/count_tokens",
        {"model": NATIVE, "messages": [{"role": "user", "content": "hello world"}]},
    )
    assert status == 200 and body["input_tokens"] > 0
    status, body, _ = call(
        server, "POST", "/v1/messages/count_tokens", {"model": NATIVE, "messages": 3}
    )
    assert status == 400 and body["type"] == "error"


def test_strict_u9_over_http():
    srv = start_server(Provider(strict_u9=True))
    try:
        status, body, _ = call(
            srv,
            "POST",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "x", "_absorbed_message_uids": ["a"]}]},
        )
        assert status == 400 and "U9 violation" in body["error"]["message"]
    finally:
        srv.shutdown()
        srv.server_close()


# -- fuzz -----------------------------------------------------------------------------------------
def _junk(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False, 0, -1, 2**70, 3.5, float("1e308")])
    if kind == 2:
        return "".join(rng.choice('ab\u00e9\u4e2d"\\\n{}[]') for _ in range(rng.randrange(12)))
    if kind == 3:
        return rng.choice(
            [
                "user",
                "assistant",
                "tool",
                "system",
                "developer",
                "function",
                "text",
                "image_url",
                "tool_use",
                "tool_result",
                "ephemeral",
                "5m",
                "1h",
                "call_1",
                "toolu_1",
            ]
        )
    if kind == 4:
        return rng.choice(
            [{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}, {"type": "x"}, {"ttl": 3}]
        )
    if kind == 5:
        return {
            "type": rng.choice(["text", "image_url", "tool_use", "tool_result", "bogus"]),
            "text": _junk(rng, depth + 1),
            "cache_control": _junk(rng, depth + 1),
        }
    if kind == 6:
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(5))]
    keys = [
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "cache_control",
        "message_uid",
        "id",
        "function",
        "arguments",
        "type",
        "input",
        "tool_use_id",
        "text",
    ]
    return {rng.choice(keys): _junk(rng, depth + 1) for _ in range(rng.randrange(5))}


def _fuzz_request(rng: random.Random) -> tuple:
    path = rng.choice(
        [
            "/v1/chat/completions",
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/models",
            "/_sim/faults",
            "/_sim/clock",
            "/_sim/replies",
            "/_sim/models",
            "/_sim/cache",
            "/zzz",
        ]
    )
    mode = rng.randrange(6)
    if mode == 0:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
    elif mode == 1:
        good = json.dumps(
            {"model": SONNET, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        )
        body = good[: rng.randrange(len(good))].encode()
    else:
        req = {
            "model": rng.choice([SONNET, NATIVE, "gpt-4o", None, 5, "x" * 20]),
            "max_tokens": rng.choice([None, 10, 0, -5, "ten", 10**9]),
            "messages": [_junk(rng) for _ in range(rng.randrange(5))] if mode != 2 else _junk(rng),
            "system": _junk(rng),
            "tools": _junk(rng) if rng.random() < 0.3 else None,
            "stream": rng.choice([None, True, False, "yes"]),
            "cache_control": _junk(rng) if rng.random() < 0.2 else None,
            "stream_options": _junk(rng),
            "tool_choice": _junk(rng),
        }
        if mode == 5 and path.startswith("/_sim"):
            req = _junk(rng)
        body = json.dumps(
            {k: v for k, v in req.items() if v is not None} if isinstance(req, dict) else req
        ).encode()
    return rng.choice(["POST", "POST", "POST", "GET"]), path, body


def test_fuzz_2000_malformed_requests_zero_crashes():
    srv = start_server(Provider(seed=1, journal_limit=500), max_body_bytes=200_000)
    rng = random.Random(20261130)
    statuses = {}
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=10)
        for _ in range(2000):
            method, path, body = _fuzz_request(rng)
            if path == "/_sim/clock" and method == "POST":
                body = b'{"advance": 1}'  # keep the clock finite and forward
            try:
                conn.request(method, path, body=body, headers={"content-type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", srv.server_address[1], timeout=10)
                continue
            statuses[resp.status] = statuses.get(resp.status, 0) + 1
            assert resp.status < 500 or resp.status in (529,), (
                resp.status,
                method,
                path,
                body[:200],
                data[:300],
            )
            if resp.getheader("content-type", "").startswith("application/json"):
                json.loads(data)
        for raw in (
            b"GARBAGE\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: -4\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ):
            s = socket.create_connection(srv.server_address[:2], timeout=10)
            s.sendall(raw)
            reply = s.recv(65536)
            s.close()
            assert reply.startswith(b"HTTP/1.")
        health = call(srv, "GET", "/_sim/health")[1]
        assert health["internal_errors"] == 0, health["last_internal_error"]
        assert health["requests_served"] >= 2000
        call(srv, "POST", "/_sim/reset", {})
        status, body, _ = call(
            srv,
            "POST",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "still here"}]},
        )
        assert status == 200 and body["choices"][0]["message"]["content"].endswith("still here")
        print("fuzz statuses", sorted(statuses.items()))
        assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 500
    finally:
        srv.shutdown()
        srv.server_close()
