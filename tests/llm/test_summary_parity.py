"""Covers simulator.llm (use_llm, EngineSummaryReplies) and simulator.llm.http: an engine
summarising with ``call_llm`` gets the same summary on the shim and on hermes-agent.

The engine (``summary_engine.py``) is written as a plugin author would: it subclasses
``agent.context_engine.ContextEngine`` and calls ``call_llm(task="compression", ...)``.
In this process it runs on the kit's shim; in the hermes-agent 0.19.0 venv it runs on the
real auxiliary client, configured by ``configure_hermes_home`` to call the kit's LLM on
loopback. Both must deliver the same deterministic B4 summary, and so must two fresh LLMs
of one seed; through the kit's per-case LLM (``conformance.authoring.engine_llm``, what checks and
scenarios serve) on both clients too (``kit_llm_driver.py`` runs it on hermes-agent).
"""

from __future__ import annotations

import json
from pathlib import Path

from simulator.llm import EngineLLM, collect_ledger, use_llm
from simulator.llm.http import serve_hermes_llm
from simulator.llm.replies import EngineSummaryReplies
from simulator.provider.replies import SUMMARY_SECTIONS
from tests.llm.conftest import REPO_ROOT, conversation, run_driver


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


#: (case id seeding the kit's per-case LLM, conversation turns, conversation seed)
KIT_CASES = [("A4-determinism-1", 6, 0), ("A4-determinism-2", 5, 4)]
KIT_DRIVER = Path(__file__).resolve().parent / "kit_llm_driver.py"


def _kit_case(case_id, messages):
    """SummaryEngine under the kit's per-case LLM (conformance.authoring.engine_llm), here (the
    shim)."""
    from conformance.authoring.engine_llm import engine_llm
    from tests.llm.summary_engine import SummaryEngine

    with engine_llm(case_id) as (ledger, seed_home):
        assert seed_home is None  # the shim needs no Hermes configuration
        engine = SummaryEngine()
        out = engine.compress(messages)
    return {"outcome": engine.last_outcome, "messages": out, "ledger": ledger.as_dict()}


def test_same_seed_same_summary_across_fresh_llms(shim_agent):
    """Determinism: two fresh EngineLLM instances of one seed (and two fresh per-case LLMs of
    one case id) give the engine the same summary, usage and ledger for the same input; a
    different input gets a different summary (the summary is of the prompt)."""
    messages = conversation(6)
    for seed in (0, 7, 12345):
        first, second = _shim_compress(messages, seed), _shim_compress(messages, seed)
        assert first[1] == second[1] and first[0].last_outcome == second[0].last_outcome
        assert first[2].provider.journal[0].request == second[2].provider.journal[0].request
    for case_id, turns, seed in KIT_CASES:
        messages = conversation(turns, seed=seed)
        a, b = _kit_case(case_id, messages), _kit_case(case_id, messages)
        assert a == b and a["ledger"]["calls"] == 1 and a["outcome"]["kind"] == "ok"
    other = _kit_case(KIT_CASES[0][0], conversation(6, seed=3))
    assert other["messages"][2] != _kit_case(KIT_CASES[0][0], conversation(6))["messages"][2]


def test_same_summary_through_the_kit_llm_on_hermes(shim_agent, hermes_python, tmp_path):
    """Hermes' real auxiliary client, configured by conformance.authoring.engine_llm's
    ``seed_home`` and
    calling the per-case LLM over loopback (in a hermes-agent 0.19.0 process running this
    repository), gives the engine the same summary and ledger as the shim here, twice."""
    import subprocess

    from tests.llm.conftest import hermes_env

    cases = [
        {"id": f"{case_id}#{n}", "case_id": case_id, "messages": conversation(turns, seed=seed)}
        for case_id, turns, seed in KIT_CASES
        for n in (1, 2)
    ]
    cases_path, out_path = tmp_path / "cases.json", tmp_path / "out.json"
    cases_path.write_text(json.dumps(cases))
    env = hermes_env({"HOME": str(tmp_path)})
    env["PYTHONPATH"] = str(REPO_ROOT)  # this checkout's kit, over the venv's install
    proc = subprocess.run(
        [hermes_python, str(KIT_DRIVER), str(cases_path), str(out_path)],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    hermes = {r["id"]: r for r in json.loads(out_path.read_text())}
    for case in cases:
        got = hermes[case["id"]]
        assert got["client"] == "hermes-agent", got["client"]  # the real client, not the shim
        shim = _kit_case(case["case_id"], case["messages"])
        assert got["outcome"] == shim["outcome"] and got["messages"] == shim["messages"]
        for key in ("requests", "failed_requests", "prompt_tokens", "completion_tokens"):
            assert got["ledger"][key] == shim["ledger"][key], key
        assert got["ledger"]["cost_usd"] == shim["ledger"]["cost_usd"]
