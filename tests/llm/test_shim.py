"""Covers simulator.llm.auxiliary and simulator.llm.response, served by simulator.host.shim as
``agent.auxiliary_client``: Hermes' names and signatures, its return shapes."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from simulator.llm import EngineLLM, LLMFault, use_llm
from simulator.llm.response import completion
from tests.llm.conftest import run_driver

NAMES = [
    "call_llm",
    "async_call_llm",
    "extract_content_or_reasoning",
    "aux_interrupt_protection",
    "get_text_auxiliary_client",
    "get_async_text_auxiliary_client",
    "shutdown_cached_clients",
    "cleanup_stale_async_clients",
]
MESSAGES = [{"role": "user", "content": "Goal: fix src/app.py. We decided to use regex."}]


def test_shim_serves_the_module(shim_agent):
    """Registered by the host's import hook next to the other agent.* shim modules."""
    from simulator.host import shim

    assert "agent.auxiliary_client" in shim._SHIM_MODULES and shim.shim_in_use()
    for name in NAMES:
        assert callable(getattr(shim_agent, name)), name


def test_signatures_match_hermes(shim_agent, hermes_python, tmp_path):
    """Parameter names, kinds and defaults equal hermes-agent 0.19.0's."""
    real = run_driver(hermes_python, "signature", NAMES, {"HERMES_HOME": str(tmp_path)}, tmp_path)
    for name in NAMES:
        params = inspect.signature(getattr(shim_agent, name)).parameters.values()
        assert [[p.name, p.kind.name, repr(p.default)] for p in params] == real[name], name


def test_call_llm_returns_a_chat_completion(shim_agent):
    with use_llm(EngineLLM()) as llm:
        r = shim_agent.call_llm(task="compression", messages=MESSAGES, max_tokens=5)
    (entry,) = llm.provider.journal
    assert type(r).__name__ == "ChatCompletion" and r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.tool_calls is None
    assert r.usage.completion_tokens > 5  # max_tokens is not sent, as Hermes does
    assert "max_tokens" not in entry.request and r.model_dump() == entry.response
    with pytest.raises(AttributeError):
        getattr(r.choices[0].message, "no_such_field")  # noqa: B009
    assert completion(r.model_dump()) == r


def test_temperature_tools_and_extra_body_are_sent(shim_agent):
    tool = {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}
    with use_llm(EngineLLM()) as llm:
        shim_agent.call_llm(
            messages=MESSAGES, temperature=0.2, tools=[tool], extra_body={"top_p": 0.9}
        )
    request = llm.provider.journal[0].request
    assert (request["temperature"], request["tools"], request["top_p"]) == (0.2, [tool], 0.9)


def test_stream_yields_the_same_text(shim_agent):
    with use_llm(EngineLLM()):
        whole = shim_agent.call_llm(messages=MESSAGES).choices[0].message.content
        chunks = list(
            shim_agent.call_llm(
                messages=MESSAGES, stream=True, stream_options={"include_usage": True}
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole and chunks[-1].usage.completion_tokens > 0


def test_async_call_llm(shim_agent):
    with use_llm(EngineLLM()):
        r = asyncio.run(shim_agent.async_call_llm(task="compression", messages=MESSAGES))
        client, model = shim_agent.get_async_text_auxiliary_client("compression")
        raw = asyncio.run(client.chat.completions.create(model=model, messages=MESSAGES))
    assert r.choices[0].message.content == raw.choices[0].message.content


def test_raw_client_makes_no_retries(shim_agent):
    """get_text_auxiliary_client's client is Hermes' SDK client (max_retries=0), not call_llm."""
    with use_llm(EngineLLM(faults=[LLMFault("server_error", times=1)])) as llm:
        client, model = shim_agent.get_text_auxiliary_client("compression")
        with pytest.raises(Exception, match="Error code: 500") as info:
            client.chat.completions.create(model=model, messages=MESSAGES)
        ok = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=3)
    assert info.value.status_code == 500 and llm.requests == 2
    assert ok.choices[0].finish_reason == "length"  # the raw client sends max_tokens


def test_errors_are_openai_exceptions_when_openai_is_installed(shim_agent):
    openai = pytest.importorskip("openai")
    with use_llm(EngineLLM(faults=[LLMFault("rate_limit", retry_after=3)])):
        with pytest.raises(openai.RateLimitError) as info:
            shim_agent.call_llm(messages=MESSAGES)
    assert isinstance(info.value, openai.APIStatusError)
    assert info.value.response.headers["Retry-After"] == "3"
    assert info.value.request_id.startswith("req_")


def test_extract_content_or_reasoning(shim_agent):
    def response(**message):
        return completion({"choices": [{"index": 0, "message": message}]})

    extract = shim_agent.extract_content_or_reasoning
    assert extract(response(content="<think>plan</think> Answer.")) == "Answer."
    assert extract(response(content="<think>only</think>", reasoning="Because.")) == "Because."
    details = [{"summary": "S1"}, {"text": "S2"}]
    assert extract(response(content=None, reasoning_details=details)) == "S1\n\nS2"
    assert extract(response(content="")) == ""


def test_aux_interrupt_protection_restores(shim_agent):
    from simulator.llm import auxiliary

    with shim_agent.aux_interrupt_protection():
        assert auxiliary._protection.active is True
        with shim_agent.aux_interrupt_protection(False):
            assert auxiliary._protection.active is False
        assert auxiliary._protection.active is True
    assert auxiliary._protection.active is False
