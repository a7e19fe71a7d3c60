"""Covers simulator.llm.faults (every kind), conformance.checks.summary_faults and A4's
summary-failure check (conformance.checks.a_surface): the fault matrix.

Every :data:`simulator.llm.KINDS` fault, scripted on every request as A4 scripts it, reaches an
engine calling ``call_llm(task="compression")`` the way hermes-agent 0.19.0 delivers it (the
openai-SDK exception ``call_llm`` raises, after Hermes' own same-endpoint retries, or the empty
/ cut content it returns); the correct fail-closed engine
(``reference_engines.mutants.a4_summary_failure:FailClosedSummariser``) declines under every
failing kind, and A4's summary-failure check, run with only that kind drawn, passes it and
fails its mutant ``DropsMiddleOnFailure`` (which only a cut reply, still text, lets through).
tests/llm/test_faults.py compares the same deliveries with Hermes' real client.
"""

from __future__ import annotations

import pytest

from conformance import run_conformance
from conformance.checks import summary_faults
from simulator.llm import KINDS, EngineLLM, LLMFault, collect_ledger, use_llm
from tests.llm.conftest import conversation

A4_CHECK = "A4-summary-failure-not-silent"
MUTANTS = "reference_engines.mutants.a4_summary_failure"
#: kind -> (LLMFault arguments, what call_llm delivers, provider requests of one call)
MATRIX = {
    "context_too_small": (
        {"window": 64},
        {"kind": "error", "type": "BadRequestError", "status_code": 400},
        1,  # a 400 is not retried
    ),
    "rate_limit": (
        {"retry_after": 7},
        {"kind": "error", "type": "RateLimitError", "status_code": 429, "retry_after": "7"},
        1,  # Hermes does not retry a 429 on the same endpoint
    ),
    "server_error": (
        {"status": 502},
        {"kind": "error", "type": "InternalServerError", "status_code": 502},
        3,  # the first request and Hermes' 2 transient retries
    ),
    "unavailable": ({}, {"kind": "error", "type": "InternalServerError", "status_code": 503}, 3),
    "overloaded": ({}, {"kind": "error", "type": "InternalServerError", "status_code": 529}, 3),
    "timeout": (
        {},
        {"kind": "error", "type": "APITimeoutError", "message": "Request timed out."},
        1,  # a compression timeout is not retried
    ),
    "empty": ({}, {"kind": "ok", "content": "", "finish_reason": "stop"}, 1),
    "cut": ({"cut_tokens": 12}, {"kind": "ok", "finish_reason": "length"}, 1),
}
FAILING = [k for k in KINDS if k != "cut"]  # a cut reply still has text: a summary


def test_the_matrix_covers_every_kind_the_simulator_supports():
    assert sorted(MATRIX) == sorted(KINDS)


def _fault(kind: str) -> LLMFault:
    """The fault on every request (as A4 scripts it: summary_faults.fault), with its arguments."""
    base = summary_faults.fault(kind, 0).to_json()
    return LLMFault(**{**base, **MATRIX[kind][0]})


def _deliver(kind: str, messages):
    from tests.llm.summary_engine import SummaryEngine

    llm = EngineLLM(faults=[_fault(kind)])
    engine = SummaryEngine()
    engine.call_kwargs = {"timeout": 1.0} if kind == "timeout" else {}
    with use_llm(llm), collect_ledger(llm) as ledger:
        out = engine.compress(messages)
    return engine.last_outcome, ledger.as_dict(), out


@pytest.mark.parametrize("kind", KINDS)
def test_each_fault_reaches_a_call_llm_engine_as_hermes_delivers_it(shim_agent, kind):
    messages = conversation(5)
    got, ledger, _ = _deliver(kind, messages)
    _, expected, requests = MATRIX[kind]
    assert {k: got.get(k) for k in expected} == expected
    assert ledger["calls"] == 1 and ledger["requests"] == requests
    assert ledger["faults"] == {kind: requests}
    if got["kind"] == "error":
        assert ledger["errors"] == {got["type"]: 1}
        assert got["type"] in got["bases"] and "APIError" in got["bases"]  # the SDK's names
        if got["status_code"]:
            assert got["message"].startswith(f"Error code: {got['status_code']} - {{'error': ")
            assert got["body"]["message"] in got["message"]
    if kind == "context_too_small":  # the provider's real body, with the real token count
        assert got["body"]["code"] == "context_length_exceeded"
        assert got["body"]["message"].startswith("This model's maximum context length is 64 ")
    if kind == "cut":
        whole, _, _ = _deliver_unfaulted(messages)
        assert got["completion_tokens"] == 12 and whole.startswith(got["content"])
        assert 0 < len(got["content"]) < len(whole)


def _deliver_unfaulted(messages):
    from tests.llm.summary_engine import SummaryEngine

    engine = SummaryEngine()
    with use_llm(EngineLLM()):
        out = engine.compress(messages)
    return engine.last_outcome["content"], engine.last_outcome, out


def _fail_closed(cls_name: str):
    import importlib

    engine = getattr(importlib.import_module(MUTANTS), cls_name)()
    engine.threshold_tokens = 1_000
    return engine


@pytest.mark.parametrize("kind", KINDS)
def test_fail_closed_engine_declines_under_every_failing_kind(shim_agent, kind):
    history = conversation(6)
    llm = EngineLLM(faults=[_fault(kind)])
    with use_llm(llm), collect_ledger(llm) as ledger:
        out = _fail_closed("FailClosedSummariser").compress(history)
        dropped = _fail_closed("DropsMiddleOnFailure").compress(history)
    assert ledger.as_dict()["calls"] == 2 and sum(ledger.as_dict()["faults"].values()) >= 2
    if kind in FAILING:
        assert out is history  # declined: the input list itself, nothing lost
        assert len(dropped) == 5 and not any("[Summary" in str(m["content"]) for m in dropped)
    else:  # a cut reply is text: a (short) summary takes the middle's place
        (summary,) = [m for m in out if str(m["content"]).startswith("[Summary of earlier")]
        assert len(out) == 6 and summary["content"].strip() != "[Summary of earlier turns]"


@pytest.mark.parametrize("kind", KINDS)
def test_a4_check_under_each_kind_passes_fail_closed_and_fails_the_mutant(
    shim_agent, kind, monkeypatch
):
    """A4's summary-failure check with only ``kind`` drawn: the fail-closed engine is clean and
    its ledger shows the fault fired; the mutant fails unless the reply still has text."""
    from conformance.runtime.engine_loading import load_engine_factory

    monkeypatch.setattr(summary_faults, "KINDS", (kind,))
    outcomes = {}
    for name in ("FailClosedSummariser", "DropsMiddleOnFailure"):
        (result,) = run_conformance(
            load_engine_factory(f"{MUTANTS}:{name}"),
            profile="quick",
            only=[A4_CHECK],
            scenarios=False,
            isolation="inprocess",
            shrink=False,
        )
        outcomes[name] = result
    clean = outcomes["FailClosedSummariser"]
    assert clean.outcome == "passed", clean.message
    assert set(clean.llm["faults"]) == {kind} and clean.llm["faults"][kind] > 0
    assert clean.llm["failed_requests"] == (
        0 if kind in ("empty", "cut") else clean.llm["faults"][kind]
    )
    mutant = outcomes["DropsMiddleOnFailure"]
    if kind in FAILING:
        assert mutant.outcome == "failed" and f"summariser failed ({kind}" in mutant.message
    else:
        assert mutant.outcome == "passed", mutant.message
