"""Covers simulator.llm.faults, simulator.llm.client, simulator.llm.errors and
simulator.llm.http: each fault of the engine's LLM reaches the engine as hermes-agent 0.19.0
delivers it.

Shim side (always): the exception class, its openai bases, ``str``, ``status_code``,
``retry-after`` and body, or the returned completion, and how many provider requests the
call made (Hermes' same-endpoint retries). Hermes side (with the hermes venv): the same
engine, the same cases, on the real client against the served LLM; the engine must see
exactly the same thing. Cases are told apart by a tag in the prompt (``contains``).
"""

from __future__ import annotations

import pytest

from simulator.llm import EngineLLM, LLMFault, collect_ledger, use_llm
from simulator.llm.http import serve_hermes_llm
from tests.llm.conftest import conversation, run_driver

#: id -> (fault, call_llm kwargs, expected delivery, provider requests made)
CASES = {
    "context": (
        LLMFault("context_too_small", window=512),
        {},
        {"kind": "error", "type": "BadRequestError", "status_code": 400},
        1,
    ),
    "rate-limit": (
        LLMFault("rate_limit", retry_after=7),
        {},
        {"kind": "error", "type": "RateLimitError", "status_code": 429, "retry_after": "7"},
        1,
    ),
    "overloaded": (
        LLMFault("overloaded"),
        {},
        {"kind": "error", "type": "InternalServerError", "status_code": 529},
        3,
    ),
    "server-error-once": (
        LLMFault("server_error", times=1),
        {},
        {"kind": "ok", "finish_reason": "stop"},
        2,
    ),
    "timeout": (
        LLMFault("timeout"),
        {"timeout": 1.0},
        {"kind": "error", "type": "APITimeoutError", "message": "Request timed out."},
        1,
    ),
    "empty": (LLMFault("empty"), {}, {"kind": "ok", "content": "", "finish_reason": "stop"}, 1),
    "cut": (LLMFault("cut", cut_tokens=12), {}, {"kind": "ok", "finish_reason": "length"}, 1),
}
BASES = {
    "BadRequestError": ["APIError", "APIStatusError", "BadRequestError"],
    "RateLimitError": ["APIError", "APIStatusError", "RateLimitError"],
    "InternalServerError": ["APIError", "APIStatusError", "InternalServerError"],
    "APITimeoutError": ["APIConnectionError", "APIError", "APITimeoutError"],
}


def _tag(case_id: str) -> str:
    return f"[case:{case_id}]"


def _llm() -> EngineLLM:
    faults = []
    for case_id, (fault, _, _, _) in CASES.items():
        fault = LLMFault(**{**fault.to_json(), "contains": _tag(case_id)})
        faults.append(fault)
    return EngineLLM(faults=faults)


def _cases():
    return [
        {"id": case_id, "messages": conversation(4, tag=_tag(case_id)), "call_kwargs": kwargs}
        for case_id, (_, kwargs, _, _) in CASES.items()
    ]


def _shim_outcomes():
    from tests.llm.summary_engine import SummaryEngine

    llm = _llm()
    outcomes, requests = {}, {}
    with use_llm(llm):
        for case in _cases():
            engine = SummaryEngine()
            engine.call_kwargs = case["call_kwargs"]
            with collect_ledger(llm) as ledger:
                engine.compress(case["messages"])
            outcomes[case["id"]] = engine.last_outcome
            requests[case["id"]] = ledger.as_dict()
    return outcomes, requests


@pytest.mark.parametrize("case_id", list(CASES))
def test_fault_reaches_the_engine_as_hermes_delivers_it(shim_agent, case_id):
    """Shim: the delivery Hermes' call_llm gives for this fault (see docs/host.md)."""
    outcomes, ledgers = _shim_outcomes()
    got, ledger = outcomes[case_id], ledgers[case_id]
    _, _, expected, requests = CASES[case_id]
    assert {k: got.get(k) for k in expected} == expected
    assert ledger["requests"] == requests and ledger["calls"] == 1
    if got["kind"] == "error":
        assert got["bases"] == BASES[got["type"]]
        assert ledger["errors"] == {got["type"]: 1}
        if got["status_code"]:
            assert got["message"].startswith(f"Error code: {got['status_code']} - {{'error': ")
            assert got["body"]["message"] in got["message"]


def test_fault_messages_are_the_providers(shim_agent):
    """The error texts are the provider simulator's real bodies (Hermes classifies by them)."""
    outcomes, _ = _shim_outcomes()
    context = outcomes["context"]
    assert context["body"]["code"] == "context_length_exceeded"
    assert context["body"]["message"].startswith("This model's maximum context length is 512 ")
    assert "Please try again in 7s" in outcomes["rate-limit"]["body"]["message"]
    assert outcomes["overloaded"]["body"] == {
        "message": "Overloaded",
        "type": "overloaded_error",
        "param": None,
        "code": "overloaded",
    }
    cut, whole = outcomes["cut"]["content"], outcomes["server-error-once"]["content"]
    assert cut and outcomes["cut"]["completion_tokens"] == 12 and len(cut) < len(whole)


def test_compression_timeout_is_not_retried_but_other_tasks_are(shim_agent):
    """Hermes skips the same-endpoint retry for a compression timeout only."""
    from agent.auxiliary_client import call_llm

    llm = EngineLLM(faults=[LLMFault("timeout")])
    messages = [{"role": "user", "content": "hello"}]
    with use_llm(llm):
        for task, requests, waited in (("compression", 1, 300.0), ("title_generation", 3, 93.0)):
            with collect_ledger(llm) as ledger:
                start = llm.provider.clock.now()
                with pytest.raises(Exception, match="Request timed out.") as info:
                    call_llm(task=task, messages=messages)
            assert type(info.value).__name__ == "APITimeoutError"
            assert ledger.as_dict()["requests"] == requests
            assert llm.provider.clock.now() - start == waited  # deadlines + backoff, virtual


def test_engines_see_the_same_delivery_on_hermes(shim_agent, hermes_python, tmp_path):
    """Hermes side: the real client, the same faults over loopback, the same engine outcomes."""
    shim, shim_ledgers = _shim_outcomes()
    with serve_hermes_llm(tmp_path / "home", _llm()) as (server, env):
        results = run_driver(hermes_python, "engine", _cases(), env, tmp_path)
        journal = server.llm.provider.journal
    hermes = {r["id"]: r["outcome"] for r in results}
    assert hermes == shim
    for case_id in CASES:
        tagged = [e for e in journal if _tag(case_id) in e.request["messages"][-1]["content"]]
        expected = shim_ledgers[case_id]["requests"] - (case_id == "timeout")
        assert len(tagged) == expected, case_id  # a withheld answer is never journaled
