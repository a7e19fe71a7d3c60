"""Covers simulator.llm (EngineLLM, LLMFault) and simulator.llm.http with hermes-agent 0.19.0's
real ContextCompressor summarising through the kit's served LLM.

``ContextCompressor(model="test", quiet_mode=True, config_context_length=200000)`` runs in
the hermes venv with ``$HERMES_HOME`` configured by ``configure_hermes_home``; its summary
call reaches the kit's LLM on loopback, so compress() inserts the model-written B4 summary
instead of its deterministic fallback. The same compressor with an unconfigured home takes
the old path (failed provider lookup, fallback, 600 s cooldown). Wall times of compress()
are printed for the record, never asserted. The fault cases check the compressor's
reaction to each fault of the engine's LLM, as docs/host.md states it.
"""

from __future__ import annotations

import pytest

from simulator.llm import EngineLLM, LLMFault
from simulator.llm.http import serve_hermes_llm
from tests.llm.conftest import conversation, run_driver

FALLBACK_MARK = "Recovered from a deterministic fallback"
#: id -> (fault or None, expected compressor state)
REACTIONS = {
    "context": (
        LLMFault("context_too_small", window=2048),
        {"fallback_used": True, "aborted": False, "cooldown_seconds": 60},
    ),
    "rate-limit": (
        LLMFault("rate_limit", retry_after=7),
        {"fallback_used": True, "aborted": False, "cooldown_seconds": 60},
    ),
    "overloaded": (
        LLMFault("overloaded"),
        {"fallback_used": True, "aborted": False, "cooldown_seconds": 60},
    ),
    "server-error-once": (
        LLMFault("server_error", times=1),
        {"fallback_used": False, "aborted": False, "cooldown_seconds": 0},
    ),
    "empty": (LLMFault("empty"), {"fallback_used": True, "aborted": False, "cooldown_seconds": 60}),
    "cut": (
        LLMFault("cut", cut_tokens=40),
        {"fallback_used": False, "aborted": False, "cooldown_seconds": 0},
    ),
    "timeout": (
        LLMFault("timeout"),
        {"fallback_used": False, "aborted": True, "network_failure": True, "cooldown_seconds": 60},
    ),
}


def _tag(case_id: str) -> str:
    return f"[case:{case_id}]"


@pytest.fixture(scope="module")
def served_runs(hermes_python, tmp_path_factory):
    """Fresh compressors on the served LLM (three plain runs, then each fault), and the journal."""
    root = tmp_path_factory.mktemp("compressor")
    faults = [
        LLMFault(**{**fault.to_json(), "contains": _tag(case_id)})
        for case_id, (fault, _) in REACTIONS.items()
    ]
    cases = [{"id": f"plain-{n}", "messages": conversation(40)} for n in range(3)]
    cases += [{"id": c, "messages": conversation(40, tag=_tag(c))} for c in REACTIONS]
    llm = EngineLLM(faults=faults)
    with serve_hermes_llm(root / "home", llm, timeout=1.0) as (server, env):
        env = {**env, "KIT_COMPRESSION_TIMEOUT_FLOOR": "0"}  # the 300 s floor would cost 300 s
        results = run_driver(hermes_python, "compressor", cases, env, root)
        journal = list(server.llm.provider.journal)
    return {r["id"]: r for r in results}, journal


def test_compressor_writes_the_model_summary(served_runs, record_property):
    """The summary row holds the served LLM's reply, not the deterministic fallback."""
    results, journal = served_runs
    plain = [results[f"plain-{n}"] for n in range(3)]
    replies = [e.response["choices"][0]["message"]["content"] for e in journal[:3]]
    for run, reply in zip(plain, replies, strict=True):
        assert run["fallback_used"] is False and run["aborted"] is False
        assert run["summary_error"] is None and run["cooldown_seconds"] == 0
        assert reply in run["summary"] and FALLBACK_MARK not in run["summary"]
        assert "## Key Decisions" in reply and "## Next Steps" in reply
        assert run["messages_out"] < run["messages_in"]
    prompt = journal[0].request["messages"][0]["content"]
    assert "TURNS TO SUMMARIZE:" in prompt and "src/mod_0.py" in replies[0]
    seconds = [round(r["seconds"], 4) for r in plain]
    record_property("served_compress_seconds", seconds)
    print(f"\nContextCompressor.compress() on the served LLM, fresh instances: {seconds} s")


def test_unconfigured_home_takes_the_failed_lookup_path(hermes_python, tmp_path, record_property):
    """Without the configuration: no provider, fallback summary, 600 s cooldown (the old path)."""
    cases = [{"id": f"plain-{n}", "messages": conversation(40)} for n in range(3)]
    results = run_driver(
        hermes_python, "compressor", cases, {"HERMES_HOME": str(tmp_path)}, tmp_path
    )
    for run in results:
        assert run["fallback_used"] is True and FALLBACK_MARK in run["summary"]
        assert run["summary_error"] == "no auxiliary LLM provider configured"
        assert run["cooldown_seconds"] == 600
    seconds = [round(r["seconds"], 4) for r in results]
    record_property("failed_lookup_compress_seconds", seconds)
    print(f"\nContextCompressor.compress() with no provider, fresh instances: {seconds} s")


@pytest.mark.parametrize("case_id", list(REACTIONS))
def test_compressor_reaction_to_each_fault(served_runs, case_id):
    """Fallback, abort and cooldown per fault, as docs/host.md describes Hermes 0.19.0."""
    results, journal = served_runs
    run = results[case_id]
    _, expected = REACTIONS[case_id]
    assert {k: run[k] for k in expected} == expected
    if run["fallback_used"]:
        assert FALLBACK_MARK in run["summary"]
        assert any("Further summary attempts paused for 60 seconds" in w for w in run["warnings"])
    if case_id == "cut":  # a cut reply is accepted as the summary (finish_reason not read)
        tagged = [e for e in journal if _tag(case_id) in e.request["messages"][0]["content"]]
        cut = tagged[0].response["choices"][0]
        assert cut["finish_reason"] == "length" and cut["message"]["content"] in run["summary"]
    if case_id == "timeout":
        assert run["summary"] is None and run["messages_out"] == run["messages_in"]
        assert run["summary_error"] == "Request timed out."
    if case_id == "empty":
        assert run["summary_error"].startswith("Context compression LLM returned empty content")
