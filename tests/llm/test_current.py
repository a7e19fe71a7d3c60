"""Covers simulator.llm.current: which LLM answers ``call_llm`` (per block, process-wide,
visible from pool threads)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from simulator.llm import EngineLLM, current_llm, default_llm, use_llm


def _ask():
    from agent.auxiliary_client import call_llm

    return call_llm(task="compression", messages=[{"role": "user", "content": "Goal: ship it."}])


def test_default_llm_answers_outside_any_block(shim_agent):
    """With no block open the process default (summariser mode) answers."""
    before = default_llm().requests
    assert "## Goal" in _ask().choices[0].message.content
    assert current_llm() is default_llm() and default_llm().requests == before + 1


def test_blocks_nest_and_restore(shim_agent):
    a, b = EngineLLM(), EngineLLM()
    with use_llm(a):
        _ask()
        with use_llm(b):
            _ask()
            assert current_llm() is b
        assert current_llm() is a
    assert (a.requests, b.requests) == (1, 1) and current_llm() is default_llm()


def test_pool_threads_see_the_blocks_llm(shim_agent):
    """TS1: compress() runs on the host's pool threads; they reach the check's LLM."""
    llm = EngineLLM()
    with use_llm(llm), ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda _: _ask(), range(6)))
    assert llm.requests == 6


def test_blocks_from_two_threads_may_end_in_any_order(shim_agent):
    a, b = EngineLLM(), EngineLLM()
    entered, release = threading.Event(), threading.Event()

    def other():
        with use_llm(b):
            entered.set()
            release.wait(5)

    with use_llm(a):
        t = threading.Thread(target=other)
        t.start()
        entered.wait(5)
        assert current_llm() is b
    release.set()
    t.join(5)
    assert current_llm() is default_llm()


def test_no_provider_configured(shim_agent):
    """``use_llm(None)``: Hermes' no-provider RuntimeError; no client either."""
    from agent.auxiliary_client import get_text_auxiliary_client

    with use_llm(None):
        with pytest.raises(RuntimeError) as info:
            _ask()
        assert get_text_auxiliary_client("compression") == (None, None)
    assert str(info.value) == (
        "No LLM provider configured for task=compression provider=auto. Run: hermes setup"
    )
