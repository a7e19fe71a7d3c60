"""Per-block token caching (ENCODE_STATS), U9 fields never counted, and the incremental handle."""

from __future__ import annotations

import pytest

from simulator.provider import tokens
from simulator.provider.core import Provider, ProviderError, U9LeakError
from simulator.provider.render import Renderer
from tests.provider.conftest import SONNET, marked, prose

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
        "cache_control": {"type": "ephemeral"},
    }
]


def conversation(n: int, tag: str) -> list:
    msgs = [{"role": "system", "content": prose(200, f"{tag} system ")}]
    for k in range(n):
        if k % 4 == 3:
            cid = f"call_{tag}_{k}"
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": "read_file",
                                "arguments": f'{{"path": "f{k}.py"}}',
                            },
                        }
                    ],
                }
            )
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": cid,
                    "content": f'{{"lines": {k}, "text": "{tag} def f{k}(): pass"}}',
                }
            )
        else:
            msgs.append(
                {
                    "role": "user" if k % 2 == 0 else "assistant",
                    "content": [
                        {"type": "text", "text": prose(30, f"{tag} m{k} ")},
                        {"type": "image_url", "image_url": {"url": "data:x"}},
                    ]
                    if k % 5 == 0
                    else prose(30, f"{tag} m{k} "),
                }
            )
    return msgs


def test_renderer_total_equals_kit_token_count():
    msgs = conversation(30, "count")
    p = Provider()
    r = p.chat_completions({"model": "gpt-4o", "messages": msgs, "tools": TOOLS})
    assert r["usage"]["prompt_tokens"] == tokens.count_messages(msgs) + tokens.count_tools(TOOLS)


def test_growing_conversation_encodes_only_new_text():
    p = Provider()
    msgs = conversation(10, "grow")
    p.chat_completions({"messages": msgs})
    for k in range(5):
        new = {
            "role": "user" if k % 2 == 0 else "assistant",
            "content": prose(25, f"grow new {k} "),
        }
        msgs = msgs + [new]
        tokens.ENCODE_STATS.reset()
        p.chat_completions({"messages": [dict(m) for m in msgs]})  # fresh dicts, same text
        # only the new message's text and the reply's text reach the encoder
        assert tokens.ENCODE_STATS.calls <= 2, tokens.ENCODE_STATS.calls
        assert tokens.ENCODE_STATS.chars <= len(new["content"]) + 300
    tokens.ENCODE_STATS.reset()
    p.chat_completions({"messages": msgs})
    assert tokens.ENCODE_STATS.calls <= 1  # only the (new) echo reply, if any


def test_u9_fields_never_counted():
    plain = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    tagged = [
        dict(plain[0], message_uid="b" * 32),
        dict(plain[1], _tool_call_uids={"c": "d"}, _absorbed_message_uids=["x"]),
    ]
    assert tokens.count_messages(plain) == tokens.count_messages(tagged)
    part = {"type": "input_audio", "input_audio": {"data": "zz"}}
    assert tokens.count_content([part]) == tokens.count_content(
        [dict(part, cache_control={"type": "ephemeral"})]
    )


def test_conversation_handle_matches_plain_requests_and_caches():
    sys_text = prose(600, "handle system ")
    a, b = Provider(seed=9), Provider(seed=9)
    conv = a.conversation(cache_strategy="system_and_3")
    conv.append({"role": "system", "content": sys_text})
    hist = [{"role": "system", "content": sys_text}]
    for k in range(6):
        user = {"role": "user", "content": prose(20, f"q{k} ")}
        conv.append(user)
        hist.append(user)
        marked_hist = [
            {"role": m["role"], "content": marked(m["content"])}
            if (i == 0 or i >= len(hist) - 3) and m["content"]
            else m
            for i, m in enumerate(hist)
        ]
        r1 = conv.send()
        r2 = b.chat_completions({"model": SONNET, "messages": marked_hist})
        assert r1 == r2
        hist.append(r2["choices"][0]["message"])
        assert conv.messages[-1]["content"] == hist[-1]["content"]
        if k:
            assert r1["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    assert a.journal[-1].request["messages"][-1]["role"] == "user"
    assert len(a.journal[-1].request["messages"]) == len(conv.messages) - 1


def test_conversation_append_rejects_bad_message_and_stays_usable():
    p = Provider()
    conv = p.conversation()
    conv.append({"role": "user", "content": "hi"})
    with pytest.raises(ProviderError) as exc:
        conv.append({"role": "tool", "tool_call_id": "nope", "content": "x"})
    assert "preceeding" in exc.value.body["error"]["message"]
    assert len(conv) == 1
    conv.send()
    assert len(conv) == 2


def test_conversation_pending_tool_calls_and_u9_strict():
    p = Provider(strict_u9=True)
    conv = p.conversation()
    conv.append({"role": "user", "content": "go"})
    conv.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    )
    with pytest.raises(ProviderError, match="call_a"):
        conv.send()
    conv.append({"role": "tool", "tool_call_id": "call_a", "content": "ok", "_tool_call_uid": "u1"})
    with pytest.raises(U9LeakError):
        conv.send()


def test_conversation_cost_is_incremental():
    """Appending one message adds one renderer step: the handle never re-walks the list."""
    p = Provider()
    conv = p.conversation()
    conv.extend(
        [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"} for k in range(200)]
    )
    calls = []
    orig = Renderer.add_openai_message

    def spy(self, m, i):
        calls.append(i)
        return orig(self, m, i)

    Renderer.add_openai_message = spy
    try:
        conv.append({"role": "user", "content": "last"})
        conv.send()
    finally:
        Renderer.add_openai_message = orig
    assert calls == [200, 201]  # the new user message and the appended reply
