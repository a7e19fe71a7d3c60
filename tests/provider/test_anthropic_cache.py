"""Anthropic prompt-caching rules (P1–P3): each test fails when its rule is broken."""

from __future__ import annotations

import pytest

from simulator.provider import tokens
from simulator.provider.core import Provider, ProviderError
from tests.provider.conftest import NATIVE, SONNET, marked, prose

SYSTEM = prose(1500, "sys ")  # well above 1024 tokens


def chat(p, messages, model=SONNET, **kw):
    return p.chat_completions(dict(model=model, messages=messages, **kw))["usage"]


def test_first_request_writes_second_reads_whole_prefix(provider):
    msgs = [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "hi"}]
    u1 = chat(provider, msgs)
    assert u1["prompt_tokens_details"]["cached_tokens"] == 0  # readable only after written
    w = u1["prompt_tokens_details"]["cache_write_tokens"]
    assert w > 1024 and w < u1["prompt_tokens"]
    u2 = chat(provider, msgs)
    assert u2["prompt_tokens_details"]["cached_tokens"] == w
    assert u2["prompt_tokens_details"]["cache_write_tokens"] == 0
    assert u2["prompt_tokens"] == u1["prompt_tokens"]


def test_breakpoint_covers_prefix_through_marked_block(provider):
    sys_tokens = tokens.TOKENS_PER_MESSAGE + tokens.count_text(SYSTEM)
    u = chat(
        provider, [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "hi"}]
    )
    assert u["prompt_tokens_details"]["cache_write_tokens"] == sys_tokens


def test_four_breakpoints_accepted_fifth_rejected_with_real_message(provider):
    msgs = [{"role": "system", "content": marked(SYSTEM)}]
    for k in range(4):
        msgs.append({"role": "user" if k % 2 == 0 else "assistant", "content": marked(f"turn {k}")})
    with pytest.raises(ProviderError) as exc:
        chat(provider, msgs)
    assert exc.value.status == 400
    assert (
        exc.value.body["error"]["message"]
        == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )
    chat(provider, msgs[:4] + [{"role": "assistant", "content": "plain"}])  # 4 is fine


def test_top_level_cache_control_is_a_breakpoint_and_counts_toward_four(provider):
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "question"}]
    u1 = chat(provider, msgs, cache_control={"type": "ephemeral"})
    assert (
        u1["prompt_tokens_details"]["cache_write_tokens"]
        == u1["prompt_tokens"] - tokens.TOKENS_REPLY_PRIMING
    )
    four = [{"role": "system", "content": marked(SYSTEM)}] + [
        {"role": r, "content": marked(f"x{k}")} for k, r in enumerate(["user", "assistant", "user"])
    ]
    with pytest.raises(ProviderError) as exc:
        chat(provider, four, cache_control={"type": "ephemeral"})
    assert "Found 5." in exc.value.body["error"]["message"]


def test_native_fifth_breakpoint_is_anthropic_400(provider):
    system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"p{k}", "cache_control": {"type": "ephemeral"}}
                for k in range(4)
            ],
        }
    ]
    with pytest.raises(ProviderError) as exc:
        provider.messages(
            {"model": NATIVE, "max_tokens": 10, "system": system, "messages": messages}
        )
    assert exc.value.status == 400
    assert exc.value.body["type"] == "error"
    assert exc.value.body["error"] == {
        "type": "invalid_request_error",
        "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    }


def test_ttl_1h_after_5m_rejected_and_1h_before_5m_split_by_ttl(provider):
    bad = [
        {"role": "system", "content": marked(SYSTEM, "5m")},
        {"role": "user", "content": marked(prose(900), "1h")},
    ]
    with pytest.raises(ProviderError) as exc:
        chat(provider, bad)
    assert "ttl='1h'" in exc.value.body["error"]["message"]
    user = prose(900, "u ")
    good = [
        {"role": "system", "content": marked(SYSTEM, "1h")},
        {"role": "user", "content": marked(user, "5m")},
    ]
    r = provider.messages(
        {
            "model": NATIVE,
            "max_tokens": 10,
            "system": [
                {
                    "type": "text",
                    "text": SYSTEM,
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                }
            ],
            "messages": [{"role": "user", "content": marked(user, "5m")}],
        }
    )
    u = r["usage"]
    sys_t = tokens.count_text(SYSTEM)
    user_t = tokens.TOKENS_PER_MESSAGE + tokens.count_text(user)
    assert u["cache_creation"] == {
        "ephemeral_1h_input_tokens": sys_t,
        "ephemeral_5m_input_tokens": user_t,
    }
    assert u["cache_creation_input_tokens"] == sys_t + user_t
    assert u["input_tokens"] == tokens.TOKENS_REPLY_PRIMING
    chat(provider, good)  # accepted on the OpenAI route too


def test_mixed_ttl_after_partial_hit_bills_1h_then_5m(provider):
    """A = read, B = last 1h write, C = last write (research §1.5)."""
    a_text, b_text, c_text = prose(1200, "a "), prose(300, "b "), prose(300, "c ")
    base = [{"role": "system", "content": marked(a_text, "1h")}]
    chat(provider, base + [{"role": "user", "content": "x"}])  # writes A
    msgs = base + [
        {"role": "user", "content": marked(b_text, "1h")},
        {"role": "assistant", "content": marked(c_text, "5m")},
    ]
    r = provider.chat_completions({"model": SONNET, "messages": msgs})
    entry = provider.journal[-1].usage
    a = tokens.TOKENS_PER_MESSAGE + tokens.count_text(a_text)
    b = tokens.TOKENS_PER_MESSAGE + tokens.count_text(b_text)
    c = tokens.TOKENS_PER_MESSAGE + tokens.count_text(c_text)
    assert (entry.read, entry.write_1h, entry.write_5m) == (a, b, c)
    assert r["usage"]["prompt_tokens_details"]["cache_write_tokens"] == b + c


@pytest.mark.parametrize(
    "model,minimum",
    [
        (SONNET, 1024),
        ("anthropic/claude-haiku-4.5", 4096),
        ("claude-3-5-haiku-20241022", 2048),
        ("anthropic/claude-opus-4.5", 4096),
    ],
)
def test_minimum_cacheable_prefix_per_family(provider, model, minimum):
    def sized(n):  # a system text whose block is exactly n tokens
        words = prose(n * 2)
        ids = tokens.encoding().encode_ordinary(words)
        return tokens.encoding().decode(ids[: n - tokens.TOKENS_PER_MESSAGE])

    below = sized(minimum - 1)
    assert tokens.TOKENS_PER_MESSAGE + tokens.count_text(below) < minimum
    u = chat(
        provider,
        [{"role": "system", "content": marked(below)}, {"role": "user", "content": "q"}],
        model=model,
    )
    assert u["prompt_tokens_details"] == {
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "audio_tokens": 0,
    }
    u = chat(
        provider,
        [{"role": "system", "content": marked(below)}, {"role": "user", "content": "q"}],
        model=model,
    )
    assert u["prompt_tokens_details"]["cached_tokens"] == 0  # nothing was written
    above = sized(minimum + 5)
    u = chat(
        provider,
        [{"role": "system", "content": marked(above)}, {"role": "user", "content": "q"}],
        model=model,
    )
    assert u["prompt_tokens_details"]["cache_write_tokens"] >= minimum


def test_minimum_is_configurable(provider):
    provider.models.override(family="claude-1024", min_cacheable_tokens=5000)
    u = chat(
        provider, [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "q"}]
    )
    assert tokens.count_text(SYSTEM) < 5000
    assert u["prompt_tokens_details"]["cache_write_tokens"] == 0


def test_exact_prefix_change_in_middle_invalidates_everything_after(provider):
    hist = [{"role": "system", "content": SYSTEM}]
    for k in range(6):
        hist.append({"role": "user" if k % 2 == 0 else "assistant", "content": prose(40, f"m{k} ")})
    hist[-1] = {"role": "assistant", "content": marked(hist[-1]["content"])}
    chat(provider, hist)
    same = [dict(m) for m in hist]
    u = chat(provider, same)
    assert u["prompt_tokens_details"]["cached_tokens"] > 0
    changed = [dict(m) for m in hist]
    changed[2] = {"role": "assistant", "content": changed[2]["content"] + " edited"}
    u = chat(provider, changed)
    assert u["prompt_tokens_details"]["cached_tokens"] == 0
    removed = hist[:2] + hist[3:]
    u = chat(provider, removed)
    assert u["prompt_tokens_details"]["cached_tokens"] == 0


def test_system_cache_survives_compression_of_the_middle(provider):
    """P3: after a compression the system-prompt cache survives."""
    sys_msg = {"role": "system", "content": marked(SYSTEM)}
    hist = [sys_msg] + [
        {"role": "user" if k % 2 == 0 else "assistant", "content": prose(50, f"h{k} ")}
        for k in range(8)
    ]
    chat(provider, hist)
    compressed = [
        sys_msg,
        {"role": "user", "content": "[summary of earlier turns]"},
        {"role": "user", "content": "next"},
    ]
    u = chat(provider, compressed)
    assert u["prompt_tokens_details"][
        "cached_tokens"
    ] == tokens.TOKENS_PER_MESSAGE + tokens.count_text(SYSTEM)


def test_render_order_tools_then_system_then_messages(provider):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object"},
            },
        }
    ]
    msgs = [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "q"}]
    chat(provider, msgs, tools=tools)
    assert chat(provider, msgs, tools=tools)["prompt_tokens_details"]["cached_tokens"] > 0
    tools2 = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file!",
                "parameters": {"type": "object"},
            },
        }
    ]
    assert (
        chat(provider, msgs, tools=tools2)["prompt_tokens_details"]["cached_tokens"] == 0
    )  # tools changed: all invalid


def test_tool_choice_change_invalidates_messages_not_system(provider):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    user = prose(400, "u ")
    msgs = [
        {"role": "system", "content": marked(SYSTEM)},
        {"role": "user", "content": marked(user)},
    ]
    chat(provider, msgs, tools=tools, tool_choice="auto")
    full = chat(provider, msgs, tools=tools, tool_choice="auto")["prompt_tokens_details"][
        "cached_tokens"
    ]
    part = chat(provider, msgs, tools=tools, tool_choice="required")["prompt_tokens_details"][
        "cached_tokens"
    ]
    assert 0 < part < full


def test_lookback_finds_entry_20_blocks_back_but_not_21(provider):
    sys_msg = {"role": "system", "content": marked(SYSTEM)}
    first = {"role": "user", "content": marked("start")}

    def run(extra_blocks):
        p = Provider(seed=1)
        chat(p, [sys_msg, first])  # entries at block 0 (system) and block 1 (first)
        parts = [{"type": "text", "text": f"b{k}"} for k in range(extra_blocks)]
        parts[-1]["cache_control"] = {"type": "ephemeral"}
        msgs = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "start"},
            {"role": "assistant", "content": parts},
        ]
        return chat(p, msgs)["prompt_tokens_details"]["cached_tokens"]

    full = tokens.TOKENS_PER_MESSAGE * 2 + tokens.count_text(SYSTEM) + tokens.count_text("start")
    assert run(20) == full  # breakpoint 20 blocks after the entry: found
    assert run(21) == 0  # 21 blocks: outside the lookback, whole prefix re-written


def test_lookback_longest_hit_wins_with_several_breakpoints(provider):
    msgs = [
        {"role": "system", "content": marked(SYSTEM)},
        {"role": "user", "content": marked(prose(30, "q "))},
    ]
    chat(provider, msgs)
    more = msgs + [
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": marked("again")},
    ]
    u = chat(provider, more)
    expected = (
        tokens.TOKENS_PER_MESSAGE * 2
        + tokens.count_text(SYSTEM)
        + tokens.count_text(prose(30, "q "))
    )
    assert u["prompt_tokens_details"]["cached_tokens"] == expected


def test_parallel_requests_all_miss_until_written(provider):
    msgs = [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "q"}]
    provider.hold_cache_writes()
    u1, u2 = chat(provider, msgs), chat(provider, msgs)
    assert u1["prompt_tokens_details"]["cache_write_tokens"] > 0
    assert (
        u2["prompt_tokens_details"]["cached_tokens"] == 0
        and u2["prompt_tokens_details"]["cache_write_tokens"] > 0
    )
    provider.release_cache_writes()
    assert chat(provider, msgs)["prompt_tokens_details"]["cached_tokens"] > 0


def test_ttl_expiry_on_virtual_clock_and_free_refresh(provider):
    msgs = [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "q"}]
    chat(provider, msgs)
    provider.clock.advance(299)
    assert (
        chat(provider, msgs)["prompt_tokens_details"]["cached_tokens"] > 0
    )  # hit refreshes to now + 300
    provider.clock.advance(299)
    assert (
        chat(provider, msgs)["prompt_tokens_details"]["cached_tokens"] > 0
    )  # alive only thanks to the refresh
    provider.clock.advance(300.5)
    u = chat(provider, msgs)
    assert u["prompt_tokens_details"]["cached_tokens"] == 0  # expired
    assert u["prompt_tokens_details"]["cache_write_tokens"] > 0


def test_1h_ttl_outlives_5m(provider):
    m1h = [{"role": "system", "content": marked(SYSTEM, "1h")}, {"role": "user", "content": "q"}]
    chat(provider, m1h)
    provider.clock.advance(3000)
    assert chat(provider, m1h)["prompt_tokens_details"]["cached_tokens"] > 0
    provider.clock.advance(3601)
    assert chat(provider, m1h)["prompt_tokens_details"]["cached_tokens"] == 0


def test_markers_are_not_part_of_the_prefix_hermes_rolling_window(provider):
    """P1/P2: markers move every turn (system + last 3); the prefix still matches."""

    def with_markers(history):
        out = []
        n = len(history)
        for i, m in enumerate(history):
            if i == 0 or i >= n - 3:
                out.append({"role": m["role"], "content": marked(m["content"])})
            else:
                out.append(dict(m))
        return out

    hist = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "u0"}]
    prev_prompt = 0
    for turn in range(5):
        u = chat(provider, with_markers(hist))
        if turn > 0:
            assert (
                u["prompt_tokens_details"]["cached_tokens"]
                == prev_prompt - tokens.TOKENS_REPLY_PRIMING
            )
        prev_prompt = u["prompt_tokens"]
        # the next request appends two messages; the previous last-message entry is 2 blocks back
        hist += [
            {"role": "assistant", "content": f"a{turn}"},
            {"role": "user", "content": f"u{turn + 1}"},
        ]


def test_usage_fields_sum_and_cost_multipliers(provider):
    sysblk = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    req = {
        "model": NATIVE,
        "max_tokens": 50,
        "system": sysblk,
        "messages": [{"role": "user", "content": "hello"}],
    }
    r1 = provider.messages(req)
    u1 = r1["usage"]
    spec = provider.models.resolve(NATIVE)
    p, q = spec.price_input / 1e6, spec.price_output / 1e6
    e1 = provider.journal[-1]
    assert (
        e1.usage.total
        == u1["input_tokens"] + u1["cache_creation_input_tokens"] + u1["cache_read_input_tokens"]
    )
    assert u1["cache_creation"]["ephemeral_5m_input_tokens"] == u1["cache_creation_input_tokens"]
    assert e1.cost == pytest.approx(
        p * (u1["input_tokens"] + 1.25 * u1["cache_creation_input_tokens"])
        + q * u1["output_tokens"]
    )
    u2 = provider.messages(req)["usage"]
    e2 = provider.journal[-1]
    assert u2["cache_read_input_tokens"] == u1["cache_creation_input_tokens"]
    assert e2.cost == pytest.approx(
        p * (u2["input_tokens"] + 0.1 * u2["cache_read_input_tokens"]) + q * u2["output_tokens"]
    )


def test_caches_are_per_model_and_per_namespace():
    p = Provider(seed=1)
    msgs = [{"role": "system", "content": marked(SYSTEM)}, {"role": "user", "content": "q"}]
    chat(p, msgs)
    assert (
        chat(p, msgs, model="anthropic/claude-sonnet-4.5")["prompt_tokens_details"]["cached_tokens"]
        == 0
    )
    other = Provider(seed=1, namespace="org-other")
    assert chat(other, msgs)["prompt_tokens_details"]["cached_tokens"] == 0


def test_invalid_markers_rejected(provider):
    for cc, needle in [
        ({"type": "persistent"}, "'ephemeral'"),
        ({"type": "ephemeral", "ttl": "10m"}, "'5m' or '1h'"),
    ]:
        with pytest.raises(ProviderError) as exc:
            chat(
                provider,
                [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": cc}]}],
            )
        assert needle in exc.value.body["error"]["message"]
    with pytest.raises(ProviderError) as exc:
        chat(
            provider,
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}
                    ],
                }
            ],
        )
    assert "empty text blocks" in exc.value.body["error"]["message"]
