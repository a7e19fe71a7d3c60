"""U9 at any depth: identity fields nested in a message are recorded (and rejected in strict mode).

Keys outside the message schema are journaled always and rejected only in strict mode.
"""

from __future__ import annotations

import http.client
import json

import pytest

from simulator.provider.core import Provider
from simulator.provider.errors import ProviderError, U9LeakError
from simulator.provider.http import start_server
from tests.provider.conftest import NATIVE

OPENAI_NESTED = [
    (
        {"role": "user", "content": [{"type": "text", "text": "x", "message_uid": "u1"}]},
        "messages[0].content[0]",
        "message_uid",
    ),
    (
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:,", "_tool_call_uid": "t"}}
            ],
        },
        "messages[0].content[0].image_url",
        "_tool_call_uid",
    ),
    (
        {
            "role": "user",
            "content": "x",
            "reasoning_details": [{"text": "r", "_absorbed_message_uids": ["a"]}],
        },
        "messages[0].reasoning_details[0]",
        "_absorbed_message_uids",
    ),
]


def _with_tool_call(call_extra=None, fn_extra=None):
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    call.update(call_extra or {})
    call["function"].update(fn_extra or {})
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]


@pytest.mark.parametrize("message,path,field", OPENAI_NESTED)
def test_nested_identity_fields_are_recorded_with_their_path(message, path, field):
    p = Provider()
    r = p.chat_completions({"messages": [message]})
    assert r["choices"][0]["message"]["content"]
    assert len(p.u9_leaks) == 1 and p.u9_leak_count == 1
    assert f"{path} carries persistence-only field(s) ['{field}']" in p.u9_leaks[0]
    with pytest.raises(U9LeakError, match=field):
        Provider(strict_u9=True).chat_completions({"messages": [message]})


def test_identity_fields_in_tool_calls_entries_and_functions():
    p = Provider()
    p.chat_completions({"messages": _with_tool_call({"_tool_call_uid": "t1"})})
    p.chat_completions({"messages": _with_tool_call(fn_extra={"message_uid": "m1"})})
    assert "messages[1].tool_calls[0] carries" in p.u9_leaks[0]
    assert "messages[1].tool_calls[0].function carries" in p.u9_leaks[1]
    strict = Provider(strict_u9=True)
    with pytest.raises(U9LeakError, match="tool_calls"):
        strict.chat_completions({"messages": _with_tool_call({"_tool_call_uid": "t1"})})
    assert strict.journal[-1].status == 400


def test_anthropic_blocks_nested_results_and_system_are_scanned():
    p = Provider()
    req = {
        "model": NATIVE,
        "max_tokens": 20,
        "system": [{"type": "text", "text": "sys", "message_uid": "s"}],
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "lcm_expand",
                        "input": {"message_uid": "tool argument, not a leak"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "r", "_tool_call_uid": "t"}],
                    }
                ],
            },
        ],
    }
    p.messages(req)
    joined = "\n".join(p.u9_leaks)
    assert "system[0] carries" in joined
    assert "messages[2].content[0].content[0] carries" in joined
    assert "tool_use" not in joined and "messages[1]" not in joined  # tool input is payload
    assert p.u9_leak_count == 2


def test_u9_route_counts_every_leak_over_http():
    srv = start_server(Provider())
    try:
        port = srv.server_address[1]
        for n in range(5):
            body = {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": f"x{n}", "message_uid": "u"}],
                    }
                ]
            }
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            conn.request("POST", "/v1/chat/completions", body=json.dumps(body))
            assert conn.getresponse().status == 200
            conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        conn.request("GET", "/_sim/u9")
        report = json.loads(conn.getresponse().read())
        conn.close()
        assert report["count"] == 5 and len(report["u9_leaks"]) == 5
        assert all("messages[0].content[0]" in line for line in report["u9_leaks"])
    finally:
        srv.shutdown()
        srv.server_close()


def test_unknown_keys_are_journaled_and_rejected_only_in_strict_mode():
    messages = [
        {"role": "user", "content": "x", "timestamp": 1700000000},
        {"role": "assistant", "content": [{"type": "text", "text": "y", "raw": {}}]},
        {"role": "user", "content": "z"},
    ]
    p = Provider()
    p.chat_completions({"messages": messages})
    assert p.journal[-1].unknown_keys == ("messages[0].timestamp", "messages[1].content[0].raw")
    assert p.unknown_key_count == 2 and p.unknown_keys[0] == "request 0: messages[0].timestamp"
    assert p.u9_leaks == []
    strict = Provider(strict_u9=True)
    with pytest.raises(ProviderError) as exc:
        strict.chat_completions({"messages": messages})
    assert exc.value.status == 400
    assert "'timestamp'" in exc.value.body["error"]["message"]
    assert exc.value.body["error"]["param"] == "messages[0].timestamp"
    assert strict.journal[-1].unknown_keys == (
        "messages[0].timestamp",
        "messages[1].content[0].raw",
    )
    with pytest.raises(ProviderError) as exc:
        strict.messages(
            {
                "model": NATIVE,
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x", "raw": 1}],
            }
        )
    assert exc.value.body["type"] == "error" and "'raw'" in exc.value.body["error"]["message"]
    # the schema keys clients round-trip are not unknown
    ok = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "a",
            "reasoning": "r",
            "reasoning_details": [],
            "refusal": None,
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}],
        },
    ]
    strict.chat_completions({"messages": ok})
    assert strict.journal[-1].unknown_keys == ()
