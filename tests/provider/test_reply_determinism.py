"""Replies a client can rely on: the same request gets the same reply, in any order.

Default reply key mode ``"request"``: the echo content is a function of the seed and the
request. ``"sequence"`` keeps the index-dependent echo for scripted sessions. Scripted
replies and faults by request index behave the same in both modes.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import threading

import pytest

from simulator.provider.core import Provider
from simulator.provider.faults import Fault
from simulator.provider.http import start_server
from simulator.provider.replies import EchoReplies, ScriptedReplies, reply_context
from simulator.provider.serve import build_parser
from tests.provider.conftest import NATIVE


def _requests() -> list[tuple[str, dict]]:
    out = []
    for k in range(4):
        out.append(
            (
                "/v1/chat/completions",
                {
                    "messages": [
                        {"role": "system", "content": "You are terse."},
                        {"role": "user", "content": f"question {k}"},
                    ]
                },
            )
        )
    out.append(
        (
            "/v1/messages",
            {"model": NATIVE, "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]},
        )
    )
    return out


def _reply_of(body: dict) -> object:
    if "choices" in body:
        return body["choices"][0]["message"], body["choices"][0]["finish_reason"]
    return body["content"], body["stop_reason"]


def _post(port: int, path: str, payload: dict) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(
        "POST", path, body=json.dumps(payload), headers={"content-type": "application/json"}
    )
    resp = conn.getresponse()
    body = json.loads(resp.read())
    conn.close()
    assert resp.status == 200, body
    return body


def test_same_request_twice_gets_the_same_reply_in_process():
    p = Provider(seed=9)
    req = {"messages": [{"role": "user", "content": "ping"}]}
    a, b = p.chat_completions(req), p.chat_completions(req)
    assert _reply_of(a) == _reply_of(b)
    assert a["id"] != b["id"]  # each response keeps its own id
    other = p.chat_completions({"messages": [{"role": "user", "content": "pong"}]})
    assert _reply_of(other) != _reply_of(a)
    # the seed is part of the function; the request index is not
    assert _reply_of(Provider(seed=10).chat_completions(req)) != _reply_of(a)
    assert _reply_of(Provider(seed=9).chat_completions(req)) == _reply_of(a)
    anth = {"model": NATIVE, "max_tokens": 20, "messages": [{"role": "user", "content": "ping"}]}
    assert _reply_of(p.messages(anth)) == _reply_of(p.messages(anth))


def test_reply_does_not_depend_on_cache_namespace_or_markers():
    p = Provider(seed=1)
    plain = {"messages": [{"role": "user", "content": "same words"}]}
    marked = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "same words", "cache_control": {"type": "ephemeral"}}
                ],
            }
        ]
    }
    a = p.handle("chat.completions", plain, namespace="key:alice").body
    b = p.handle("chat.completions", marked, namespace="key:bob").body
    assert _reply_of(a) == _reply_of(b)


def test_echo_depends_on_what_is_echoed_not_on_the_order_of_earlier_messages():
    p = Provider(seed=1)
    a, b = {"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}
    last = {"role": "user", "content": "now"}
    one = p.chat_completions({"messages": [a, b, last]})
    other = p.chat_completions({"messages": [b, a, last]})
    assert _reply_of(one) == _reply_of(other)
    shorter = p.chat_completions({"messages": [a, last]})
    assert _reply_of(shorter) != _reply_of(one)  # another turn of the conversation


def test_same_request_twice_over_http_and_under_20_concurrent_clients():
    reference = start_server(Provider(seed=5))
    try:
        port = reference.server_address[1]
        expected = [_reply_of(_post(port, path, req)) for path, req in _requests()]
        again = [_reply_of(_post(port, path, req)) for path, req in _requests()]
        assert again == expected  # a retry or a replay gets the same answer
    finally:
        reference.shutdown()
        reference.server_close()

    srv = start_server(Provider(seed=5))
    try:
        port = srv.server_address[1]
        jobs = [k % len(_requests()) for k in range(20)]
        random.Random(20).shuffle(jobs)
        barrier = threading.Barrier(len(jobs))
        got: list[tuple[int, object]] = []
        lock = threading.Lock()

        def client(k: int) -> None:
            path, req = _requests()[k]
            barrier.wait(30)
            reply = _reply_of(_post(port, path, req))
            with lock:
                got.append((k, reply))

        threads = [threading.Thread(target=client, args=(k,)) for k in jobs]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert len(got) == 20
        for k, reply in got:
            assert reply == expected[k], k  # whatever order the 20 requests arrived in
        assert len(srv.provider.journal) == 20
    finally:
        srv.shutdown()
        srv.server_close()


def test_sequence_mode_keeps_the_index_dependent_echo():
    p = Provider(seed=3, reply_mode="sequence")
    req = {"messages": [{"role": "user", "content": "ping"}]}
    texts = [p.chat_completions(req)["choices"][0]["message"]["content"] for _ in range(2)]
    assert texts[0] != texts[1]
    for index, text in enumerate(texts):  # the original formula: seed, index and text
        digest = hashlib.sha256(f"3:{index}:ping".encode()).hexdigest()[:8]
        assert text == f"echo[{digest}]: ping"
    with pytest.raises(ValueError, match="reply_mode"):
        Provider(reply_mode="random")
    assert build_parser().parse_args(["--reply-mode", "sequence"]).reply_mode == "sequence"
    assert build_parser().parse_args([]).reply_mode == "request"


def test_echo_policy_outside_a_provider_is_a_function_of_the_request():
    echo = EchoReplies()
    req = {"messages": [{"role": "user", "content": "x"}]}
    assert echo.reply(req, 0, 1).content == echo.reply(req, 99, 1).content
    assert echo.reply(req, 0, 1).content != echo.reply(req, 0, 2).content
    with reply_context("sequence"):
        assert echo.reply(req, 0, 1).content != echo.reply(req, 1, 1).content
    with pytest.raises(ValueError):
        with reply_context("chaos"):
            pass


@pytest.mark.parametrize("mode", ["request", "sequence"])
def test_scripted_replies_and_index_faults_are_unchanged_by_the_mode(mode):
    p = Provider(
        seed=2,
        reply_mode=mode,
        replies=ScriptedReplies(["one", "two"]),
        faults=[Fault("overloaded", at=[1])],
    )
    req = {"messages": [{"role": "user", "content": "same"}]}
    first = p.handle("chat.completions", req)
    second = p.handle("chat.completions", req)
    third = p.handle("chat.completions", req)
    assert first.body["choices"][0]["message"]["content"] == "one"
    assert second.status == 529  # fault by index; consumes no scripted reply
    assert third.body["choices"][0]["message"]["content"] == "two"
    assert [e.index for e in p.journal] == [0, 1, 2]
