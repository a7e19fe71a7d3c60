"""OpenAI automatic prompt caching: 1024 tokens, then 128-token steps."""

from __future__ import annotations

import pytest

from simulator.provider import tokens
from simulator.provider.core import Provider
from simulator.provider.openai_cache import cached_length
from tests.provider.conftest import prose

GPT = "gpt-4o"


def usage(p, messages, **kw):
    return p.chat_completions(dict(model=GPT, messages=messages, **kw))["usage"]


def sized_text(n_tokens: int) -> str:
    enc = tokens.encoding()
    return enc.decode(enc.encode_ordinary(prose(n_tokens * 2))[:n_tokens])


def test_cached_length_steps():
    assert [cached_length(n) for n in (0, 1023, 1024, 1151, 1152, 2006)] == [
        0,
        0,
        1024,
        1024,
        1152,
        1920,
    ]


def test_below_1024_never_cached_and_cached_tokens_reported_as_zero(provider):
    msgs = [{"role": "system", "content": sized_text(900)}, {"role": "user", "content": "q"}]
    usage(provider, msgs)
    u = usage(provider, msgs)
    assert u["prompt_tokens_details"]["cached_tokens"] == 0
    assert "cache_write_tokens" not in u["prompt_tokens_details"]  # no write fee on pre-5.6 models


def test_repeat_reads_longest_prefix_rounded_to_128_steps(provider):
    msgs = [{"role": "system", "content": sized_text(1500)}, {"role": "user", "content": prose(40)}]
    u1 = usage(provider, msgs)
    assert u1["prompt_tokens_details"]["cached_tokens"] == 0  # readable only after written
    u2 = usage(
        provider,
        msgs + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}],
    )
    shared = u1["prompt_tokens"] - tokens.TOKENS_REPLY_PRIMING
    assert u2["prompt_tokens_details"]["cached_tokens"] == 1024 + ((shared - 1024) // 128) * 128
    assert u2["prompt_tokens_details"]["cached_tokens"] % 128 == 0


def test_prefix_divergence_limits_hit(provider):
    sys_text = sized_text(1300)
    usage(
        provider,
        [{"role": "system", "content": sys_text}, {"role": "user", "content": prose(300, "a ")}],
    )
    u = usage(
        provider,
        [{"role": "system", "content": sys_text}, {"role": "user", "content": prose(300, "b ")}],
    )
    sys_block = tokens.TOKENS_PER_MESSAGE + tokens.count_text(sys_text)
    assert u["prompt_tokens_details"]["cached_tokens"] == cached_length(sys_block)
    u = usage(
        provider,
        [
            {"role": "system", "content": sys_text + "!"},
            {"role": "user", "content": prose(300, "a ")},
        ],
    )
    assert u["prompt_tokens_details"]["cached_tokens"] == 0


def test_retention_expiry_on_virtual_clock(provider):
    msgs = [{"role": "system", "content": sized_text(1300)}, {"role": "user", "content": "q"}]
    usage(provider, msgs)
    provider.clock.advance(599)
    assert usage(provider, msgs)["prompt_tokens_details"]["cached_tokens"] > 0
    provider.clock.advance(601)
    assert usage(provider, msgs)["prompt_tokens_details"]["cached_tokens"] == 0


def test_cache_control_parts_ignored_for_openai_models(provider):
    parts = [
        {"type": "text", "text": f"p{k}", "cache_control": {"type": "ephemeral"}} for k in range(6)
    ]
    u = usage(
        provider, [{"role": "user", "content": parts}]
    )  # 6 markers: no 400 on an OpenAI-rules model
    assert u["prompt_tokens"] > 0


def test_cost_uses_cached_discount():
    p = Provider(seed=1)
    msgs = [{"role": "system", "content": sized_text(1500)}, {"role": "user", "content": "q"}]
    p.chat_completions({"model": GPT, "messages": msgs})
    r = p.chat_completions({"model": GPT, "messages": msgs})
    u = r["usage"]
    spec = p.models.resolve(GPT)
    read = u["prompt_tokens_details"]["cached_tokens"]
    expect = (
        spec.price_input
        / 1e6
        * ((u["prompt_tokens"] - read) + spec.openai_cached_multiplier * read)
        + spec.price_output / 1e6 * u["completion_tokens"]
    )
    assert u["cost"] == pytest.approx(expect)


def test_prompt_cache_key_partitions_and_24h_retention(provider):
    msgs = [{"role": "system", "content": sized_text(1300)}, {"role": "user", "content": "q"}]
    usage(provider, msgs, prompt_cache_key="tenant-a")
    assert (
        usage(provider, msgs, prompt_cache_key="tenant-b")["prompt_tokens_details"]["cached_tokens"]
        == 0
    )
    assert (
        usage(provider, msgs, prompt_cache_key="tenant-a")["prompt_tokens_details"]["cached_tokens"]
        > 0
    )
    usage(provider, msgs, prompt_cache_key="long", prompt_cache_retention="24h")
    provider.clock.advance(3600 * 20)
    assert (
        usage(provider, msgs, prompt_cache_key="long")["prompt_tokens_details"]["cached_tokens"] > 0
    )
