"""Covers simulator.llm.ledger: the ledger of an engine's own LLM calls (calls, requests,
tokens, cost, per block)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from simulator.llm import EngineLLM, LLMFault, collect_ledger, use_llm

LONG = "The parser in src/app.py must keep empty fields. " * 120  # > 1024 tokens: cacheable


def _call(text: str, *earlier: str):
    from agent.auxiliary_client import call_llm

    messages = [{"role": "user", "content": t} for t in (*earlier, text)]
    return call_llm(task="compression", messages=messages)


def test_counts_tokens_and_cost_from_the_providers_usage(shim_agent):
    """Sums equal the provider's own journal (usage and model prices)."""
    llm = EngineLLM(faults=[LLMFault("rate_limit", at=[1])])
    with use_llm(llm), collect_ledger() as ledger:
        _call("Summarise.", LONG)
        with pytest.raises(Exception, match="Error code: 429"):
            _call("second")
        _call("Summarise again.", LONG)  # the same first message: a cache read
    got = ledger.as_dict()
    journal = llm.provider.journal
    ok = [e for e in journal if e.status == 200]
    assert got["calls"] == 3 and got["requests"] == 3 and got["failed_requests"] == 1
    assert got["faults"] == {"rate_limit": 1} and got["errors"] == {"RateLimitError": 1}
    assert got["prompt_tokens"] == sum(e.usage.total for e in ok)
    assert got["completion_tokens"] == sum(e.response["usage"]["completion_tokens"] for e in ok)
    assert got["cached_tokens"] == sum(e.usage.read for e in ok) > 0  # automatic prefix cache
    assert got["cost_usd"] == round(sum(e.cost for e in journal), 10) > 0
    assert got["models"] == {llm.model: 3}
    assert json.loads(json.dumps(got)) == got


def test_retries_are_requests_of_one_call(shim_agent):
    """Hermes' same-endpoint retries on a 5xx are extra requests, not extra calls."""
    llm = EngineLLM(faults=[LLMFault("server_error", times=2)])
    with use_llm(llm), collect_ledger(llm) as ledger:
        _call("hello")
    got = ledger.as_dict()
    assert (got["calls"], got["requests"], got["failed_requests"]) == (1, 3, 2)
    assert got["faults"] == {"server_error": 2} and got["errors"] == {}


def test_ledgers_nest_and_filter_by_llm(shim_agent):
    """An outer ledger sees everything in its block; ``collect_ledger(llm)`` only that LLM."""
    a, b = EngineLLM(seed=1), EngineLLM(seed=2)
    with collect_ledger() as outer:
        with use_llm(a), collect_ledger(a) as only_a:
            _call("one")
            with use_llm(b):
                _call("two")
        _call("three")  # the process default LLM
    assert outer.as_dict()["calls"] == 3 and only_a.as_dict()["calls"] == 1
    assert [r.index for r in only_a.records] == [0]


def test_pool_threads_are_recorded(shim_agent):
    """TS1: engines call their LLM from the host's pool threads; those calls count too."""
    llm = EngineLLM()
    with use_llm(llm), collect_ledger(llm) as ledger:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: _call(f"thread call {n}"), range(8)))
    got = ledger.as_dict()
    assert got["calls"] == got["requests"] == 8 and got["failed_requests"] == 0


def test_same_calls_same_ledger(shim_agent):
    """Determinism: the same calls on fresh LLMs give the same dict."""

    def run():
        llm = EngineLLM(faults=[LLMFault("cut", times=1)])
        with use_llm(llm), collect_ledger(llm) as ledger:
            _call(LONG)
            _call(LONG)
        return ledger.as_dict()

    assert run() == run()
