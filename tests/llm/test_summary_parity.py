"""Covers simulator.llm (use_llm, EngineSummaryReplies) and simulator.llm.http: an engine
summarising with ``call_llm`` gets the same summary on the shim and on hermes-agent.

The engine (``summary_engine.py``) is written as a plugin author would: it subclasses
``agent.context_engine.ContextEngine`` and calls ``call_llm(task="compression", ...)``.
In this process it runs on the kit's shim; in the hermes-agent 0.19.0 venv it runs on the
real auxiliary client, configured by ``configure_hermes_home`` to call the kit's LLM on
loopback. Both must deliver the same deterministic B4 summary.
"""

from __future__ import annotations

from simulator.llm import EngineLLM, collect_ledger, use_llm
from simulator.llm.http import serve_hermes_llm
from simulator.llm.replies import EngineSummaryReplies
from simulator.provider.replies import SUMMARY_SECTIONS
from tests.llm.conftest import conversation, run_driver


def _shim_compress(messages, seed=3):
    from tests.llm.summary_engine import SummaryEngine

    llm = EngineLLM(seed=seed)
    engine = SummaryEngine()
    with use_llm(llm):
        out = engine.compress(messages)
    return engine, out, llm


def test_shim_engine_gets_the_b4_summary_of_its_prompt(shim_agent):
    """B4: the shim answers the engine's call with the summariser's template, deterministically."""
    messages = conversation(6)
    engine, out, llm = _shim_compress(messages)
    summary = out[2]["content"]
    assert engine.last_outcome["kind"] == "ok" and engine.last_outcome["finish_reason"] == "stop"
    for section in SUMMARY_SECTIONS:
        assert f"## {section}" in summary
    (entry,) = llm.provider.journal
    expected = EngineSummaryReplies().reply(entry.request, 0, 3).content
    assert summary == expected
    assert set(entry.request) == {"model", "messages"}  # what Hermes sends
    assert _shim_compress(messages)[1] == out  # same input, same bytes


def test_same_summary_under_shim_and_hermes(shim_agent, hermes_python, tmp_path):
    """The same engine on hermes-agent 0.19.0 (real client, served LLM) gets the same summary."""
    messages = conversation(6)
    engine, out, _ = _shim_compress(messages)
    with (
        collect_ledger() as ledger,
        serve_hermes_llm(tmp_path / "home", EngineLLM(seed=3)) as (
            server,
            env,
        ),
    ):
        (result,) = run_driver(
            hermes_python, "engine", [{"id": "plain", "messages": messages}], env, tmp_path
        )
        request = server.llm.provider.journal[-1].request
    assert result["outcome"] == engine.last_outcome
    assert result["messages"] == out
    assert request == {"messages": request["messages"], "model": server.llm.model}
    assert ledger.as_dict()["requests"] == 1
