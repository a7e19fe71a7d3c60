"""The official openai and anthropic SDKs against the loopback server.

Needs the test extra (``openai``, ``anthropic``); skipped without it. Loopback only.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.provider import tokens
from tests.provider.conftest import NATIVE, SONNET, prose

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

ROOT = Path(__file__).resolve().parents[2]
LONG_SYSTEM = prose(1800, "You are a careful coding agent. ")


def admin(server, path, payload=None):
    conn = http.client.HTTPConnection(
        server.server_address[0], server.server_address[1], timeout=10
    )
    body = None if payload is None else json.dumps(payload)
    conn.request(
        "POST" if payload is not None else "GET",
        path,
        body=body,
        headers={"content-type": "application/json"},
    )
    resp = conn.getresponse()
    data = json.loads(resp.read())
    conn.close()
    assert resp.status == 200, data
    return data


def oa(server, **kw):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="sk-test", **kw)


def an(server, **kw):
    return anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", **kw)


def hermes_markers(messages):
    """P1 system_and_3 with P2 placement, as Hermes sends to OpenRouter."""
    out = []
    non_system = [i for i, m in enumerate(messages) if m["role"] != "system"]
    chosen = set(non_system[-3:]) | {0}
    for i, m in enumerate(messages):
        m = dict(m)
        if i in chosen and isinstance(m.get("content"), str) and m["content"]:
            m["content"] = [
                {"type": "text", "text": m["content"], "cache_control": {"type": "ephemeral"}}
            ]
        out.append(m)
    return out


def test_openai_sdk_30_turns_cache_turn_by_turn(server):
    client = oa(server, max_retries=0)
    history = [{"role": "system", "content": LONG_SYSTEM}]
    prev_total = None
    for turn in range(30):
        history.append(
            {"role": "user", "content": f"Turn {turn}: " + prose(15 + turn % 7, f"t{turn} ")}
        )
        if turn == 20:
            admin(server, "/_sim/clock", {"advance": 301})  # the 5m entries expire
            prev_total = None
        r = client.chat.completions.create(model=SONNET, messages=hermes_markers(history))
        u = r.usage
        total = tokens.count_messages(history)
        assert u.prompt_tokens == total
        details = u.prompt_tokens_details
        if prev_total is None:
            assert details.cached_tokens == 0, turn
            assert details.cache_write_tokens == total - tokens.TOKENS_REPLY_PRIMING, turn
        else:
            assert details.cached_tokens == prev_total - tokens.TOKENS_REPLY_PRIMING, turn
            assert details.cache_write_tokens == total - prev_total, turn
        prev_total = total
        history.append({"role": "assistant", "content": r.choices[0].message.content})


def test_anthropic_sdk_30_turns_cache_turn_by_turn(server):
    client = an(server, max_retries=0)
    system = [
        {"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    ]
    messages = []
    last_written = None
    sys_tokens = tokens.count_text(LONG_SYSTEM)
    for turn in range(30):
        messages.append({"role": "user", "content": f"Turn {turn}: " + prose(12, f"a{turn} ")})
        sent = [dict(m) for m in messages]
        sent[-1] = {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": messages[-1]["content"],
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        }
        if turn == 15:
            admin(
                server, "/_sim/clock", {"advance": 400}
            )  # 5m entries expire, the 1h system entry survives
        m = client.messages.create(model=NATIVE, max_tokens=200, system=system, messages=sent)
        u = m.usage
        assert u.input_tokens == tokens.TOKENS_REPLY_PRIMING
        total = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        if turn == 0:
            assert u.cache_read_input_tokens == 0
            assert u.cache_creation.ephemeral_1h_input_tokens == sys_tokens
        elif turn == 15:
            assert u.cache_read_input_tokens == sys_tokens
            assert u.cache_creation.ephemeral_1h_input_tokens == 0
        else:
            assert u.cache_read_input_tokens == last_written, turn
            assert u.cache_creation.ephemeral_1h_input_tokens == 0
        assert u.cache_creation_input_tokens == total - u.input_tokens - u.cache_read_input_tokens
        last_written = total - u.input_tokens
        messages.append({"role": "assistant", "content": m.content[0].text})


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_sdk_retries_honour_retry_after_ms(server, sdk):
    admin(
        server,
        "/_sim/faults",
        {"faults": [{"kind": "rate_limit", "at": [0], "retry_after": 0.9, "retry_after_ms": 900}]},
    )
    start = time.monotonic()
    if sdk == "openai":
        r = oa(server, max_retries=2).chat.completions.create(
            model=SONNET, messages=[{"role": "user", "content": "hi"}]
        )
        assert r.choices[0].message.content
    else:
        m = an(server, max_retries=2).messages.create(
            model=NATIVE, max_tokens=20, messages=[{"role": "user", "content": "hi"}]
        )
        assert m.content[0].text
    elapsed = time.monotonic() - start
    # default first backoff is <= 0.5 s; waiting >= 0.9 s shows retry-after-ms was honoured
    assert elapsed >= 0.85, elapsed
    journal = admin(server, "/_sim/journal")["entries"]
    assert [e["status"] for e in journal] == [429, 200]
    assert journal[1]["clock"] == pytest.approx(0.9)  # the virtual clock moved by the advised wait


def test_sdk_sees_429_when_retries_disabled(server):
    admin(
        server,
        "/_sim/faults",
        {"faults": [{"kind": "rate_limit", "at": [0], "retry_after_ms": 10}]},
    )
    with pytest.raises(openai.RateLimitError) as exc:
        oa(server, max_retries=0).chat.completions.create(
            model=SONNET, messages=[{"role": "user", "content": "hi"}]
        )
    assert exc.value.response.headers["retry-after-ms"] == "10"


def test_overloaded_529_through_sdks(server):
    admin(server, "/_sim/faults", {"faults": [{"kind": "overloaded", "at": [0, 1]}]})
    # The SDK's own class for a 529: OverloadedError, under APIStatusError on every release the
    # test extra allows (it joined InternalServerError, and the package's top level, later).
    with pytest.raises(anthropic.APIStatusError) as exc:
        an(server, max_retries=0).messages.create(
            model=NATIVE, max_tokens=10, messages=[{"role": "user", "content": "x"}]
        )
    assert type(exc.value).__name__ == "OverloadedError"
    assert exc.value.status_code == 529 and exc.value.body["error"]["type"] == "overloaded_error"
    with pytest.raises(openai.InternalServerError) as exc2:
        oa(server, max_retries=0).chat.completions.create(
            model=SONNET, messages=[{"role": "user", "content": "x"}]
        )
    assert exc2.value.status_code == 529


def test_openai_streaming_with_usage(server):
    client = oa(server, max_retries=0)
    msgs = [
        {
            "role": "system",
            "content": [
                {"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}
            ],
        },
        {"role": "user", "content": "stream please"},
    ]
    client.chat.completions.create(model=SONNET, messages=msgs)
    stream = client.chat.completions.create(
        model=SONNET, messages=msgs, stream=True, stream_options={"include_usage": True}
    )
    text, usage, chunks = [], None, 0
    for chunk in stream:
        chunks += 1
        if chunk.choices:
            text.append(chunk.choices[0].delta.content or "")
            assert chunk.usage is None
        else:
            usage = chunk.usage
    assert usage is not None and usage.prompt_tokens == tokens.count_messages(
        [{"role": "system", "content": LONG_SYSTEM}, {"role": "user", "content": "stream please"}]
    )
    assert usage.prompt_tokens_details.cached_tokens > 1024
    journal = admin(server, "/_sim/journal?full=1")["entries"]
    assert "".join(text) == journal[-1]["response"]["choices"][0]["message"]["content"]
    assert usage.completion_tokens == tokens.count_text("".join(text))
    # without include_usage: no usage chunk
    stream = client.chat.completions.create(model=SONNET, messages=msgs, stream=True)
    assert all(c.usage is None for c in stream)


def test_openai_streamed_tool_calls(server):
    admin(
        server,
        "/_sim/replies",
        {
            "mode": "tool_script",
            "rounds": [[{"name": "read_file", "arguments": {"path": "a" * 150}}]],
        },
    )
    stream = oa(server, max_retries=0).chat.completions.create(
        model=SONNET, messages=[{"role": "user", "content": "read"}], stream=True
    )
    args, finish = "", None
    for c in stream:
        if c.choices:
            for tc in c.choices[0].delta.tool_calls or ():
                args += tc.function.arguments or ""
            finish = c.choices[0].finish_reason or finish
    assert json.loads(args) == {"path": "a" * 150} and finish == "tool_calls"


def test_anthropic_streaming_with_usage(server):
    client = an(server, max_retries=0)
    system = [{"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    client.messages.create(
        model=NATIVE, max_tokens=100, system=system, messages=[{"role": "user", "content": "hi"}]
    )
    with client.messages.stream(
        model=NATIVE, max_tokens=100, system=system, messages=[{"role": "user", "content": "hi"}]
    ) as s:
        final = s.get_final_message()
    assert final.usage.cache_read_input_tokens == tokens.count_text(LONG_SYSTEM)
    assert final.usage.output_tokens == tokens.count_text(final.content[0].text)
    assert final.stop_reason == "end_turn"


def test_five_breakpoints_rejected_by_both_sdks(server):
    parts = [
        {"type": "text", "text": f"part {k}", "cache_control": {"type": "ephemeral"}}
        for k in range(5)
    ]
    with pytest.raises(openai.BadRequestError) as exc:
        oa(server, max_retries=0).chat.completions.create(
            model=SONNET, messages=[{"role": "user", "content": parts}]
        )
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in str(exc.value)
    with pytest.raises(anthropic.BadRequestError) as exc2:
        an(server, max_retries=0).messages.create(
            model=NATIVE, max_tokens=10, messages=[{"role": "user", "content": parts}]
        )
    assert (
        exc2.value.body["error"]["message"]
        == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )
    assert exc2.value.request_id and exc2.value.request_id.startswith("req_")


def test_stream_cut_midway_surfaces_as_client_error_and_server_survives(server):
    admin(
        server, "/_sim/faults", {"faults": [{"kind": "stream_cut", "at": [0], "after_events": 2}]}
    )
    client = oa(server, max_retries=0)
    with pytest.raises((openai.APIError, Exception)):
        for _ in client.chat.completions.create(
            model=SONNET, messages=[{"role": "user", "content": "long " * 50}], stream=True
        ):
            pass
    r = client.chat.completions.create(
        model=SONNET, messages=[{"role": "user", "content": "after"}]
    )
    assert r.choices[0].message.content


def test_models_endpoint_through_sdks(server):
    models = {m.id: m for m in oa(server).models.list().data}
    assert models[SONNET].context_length == 200_000
    assert models["gpt-4o"].context_length == 128_000
    assert all(
        m.context_length >= 64_000 for m in models.values()
    )  # Hermes refuses smaller windows
    ids = [m.id for m in an(server).models.list().data]
    assert SONNET in ids


# -- determinism across two server processes --------------------------------------------------
def _spawn(seed: int) -> tuple:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="random")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simulator.provider.serve",
            "serve",
            "--port",
            "0",
            "--seed",
            str(seed),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    assert line.startswith("listening on http://127.0.0.1:"), (
        line,
        proc.stderr.read() if proc.poll() is not None else "",
    )
    return proc, int(line.rsplit(":", 1)[1])


def _exchange(port: int) -> list:
    out = []
    state = {"conn": http.client.HTTPConnection("127.0.0.1", port, timeout=10)}

    def call(method, path, payload, headers=None):
        conn = state["conn"]
        conn.request(
            method,
            path,
            body=json.dumps(payload) if payload is not None else None,
            headers=dict(
                {"content-type": "application/json", "authorization": "Bearer same-key"},
                **(headers or {}),
            ),
        )
        resp = conn.getresponse()
        try:
            body = resp.read()
        except http.client.IncompleteRead as exc:  # a scheduled stream fault closed the connection
            body = b"CUT:" + exc.partial
            conn.close()
            state["conn"] = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        hdrs = sorted((k.lower(), v) for k, v in resp.getheaders() if k.lower() not in ("date",))
        out.append((resp.status, hdrs, body))

    call(
        "POST",
        "/_sim/faults",
        {
            "faults": [
                {"kind": "rate_limit", "at": [2], "retry_after_ms": 5},
                {"kind": "stream_error", "at": [6], "after_events": 3},
            ]
        },
    )
    history = [
        {
            "role": "system",
            "content": [
                {"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}
            ],
        }
    ]
    for turn in range(5):
        history.append({"role": "user", "content": f'question {turn} 中文 {{"k": {turn}}}'})
        call("POST", "/v1/chat/completions", {"model": SONNET, "messages": history})
        history.append(
            {
                "role": "assistant",
                "content": json.loads(out[-1][2])
                .get("choices", [{}])[0]
                .get("message", {})
                .get("content")
                or "x",
            }
        )
    call(
        "POST",
        "/v1/chat/completions",
        {
            "model": SONNET,
            "messages": history + [{"role": "user", "content": "s"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    call(
        "POST",
        "/v1/chat/completions",
        {"model": SONNET, "messages": [{"role": "user", "content": "cut"}], "stream": True},
    )
    call(
        "POST",
        "/v1/messages",
        {
            "model": NATIVE,
            "max_tokens": 50,
            "stream": True,
            "system": [
                {"type": "text", "text": LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}
            ],
            "messages": [{"role": "user", "content": "hello"}],
        },
    )
    call(
        "POST",
        "/v1/messages",
        {"model": NATIVE, "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]},
    )
    call(
        "POST",
        "/v1/chat/completions",
        {"model": SONNET, "messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}]},
    )
    call("GET", "/_sim/journal", None)
    state["conn"].close()
    return out


def test_determinism_across_two_server_processes():
    procs = []
    try:
        runs = []
        for _ in range(2):
            proc, port = _spawn(seed=42)
            procs.append(proc)
            runs.append(_exchange(port))
        assert len(runs[0]) == len(runs[1]) > 10
        for a, b in zip(*runs, strict=True):
            assert a == b
        statuses = [r[0] for r in runs[0]]
        assert 429 in statuses and 400 in statuses
        assert any(b"[DONE]" in r[2] for r in runs[0]) and any(
            b"event: message_stop" in r[2] for r in runs[0]
        )
        assert any(r[2].startswith(b"CUT:") and b'"error"' in r[2] for r in runs[0])
    finally:
        for p in procs:
            p.terminate()
            assert p.wait(timeout=10) == 0  # SIGTERM: clean shutdown
