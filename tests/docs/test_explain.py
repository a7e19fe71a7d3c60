"""Covers conformance.run.explain, conformance.run.clause_advice and the packaged clause texts
(conformance/clauses.json): ``context-engine-kit explain CLAUSE`` works for every clause of the
catalogue, where the user is (an installed kit has no docs/ folder), failure messages point at
it, every engine-facing and kit clause has a cause and a fix, and an unknown clause is an error
that names the closest match."""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from conformance.authoring import registry
from conformance.clauses import catalogue
from conformance.clauses.errors import render
from conformance.run import explain
from conformance.run.clause_advice import ADVICE, HOST_ADVICE, KIT_TEXTS, advice
from tests.conformance.test_cli import cli
from tests.conftest import REPO_ROOT

CLAUSE_IDS = list(catalogue.CLAUSES)


def test_packaged_clause_texts_match_the_contract():
    contract = (REPO_ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    packaged = json.loads(explain.PACKAGED_TEXTS.read_text(encoding="utf-8"))
    assert packaged == explain.packaged_data(contract), (
        "conformance/clauses.json is stale: run python -m conformance.run.explain --write-clauses"
    )
    contract_ids = [c.id for c in catalogue.CLAUSES.values() if c.side != catalogue.KIT]
    assert sorted(packaged["clauses"]) == sorted(contract_ids)
    for cid, text in packaged["clauses"].items():
        assert text.startswith(f"{cid} ") and len(text) > 20, cid
    # two clauses under one anchor line are split where the second starts
    assert packaged["clauses"]["O5"] == "O5 `get_tool_schemas()`: `[]`."
    assert packaged["clauses"]["O6"].startswith("O6 `handle_tool_call(")


def test_the_clause_texts_are_package_data():
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = config["tool"]["setuptools"]
    assert "conformance*" in setuptools["packages"]["find"]["include"]
    assert "*.json" in setuptools["package-data"]["*"]
    assert explain.PACKAGED_TEXTS.parent.name == "conformance"


def test_an_installed_kit_reads_the_packaged_texts(monkeypatch, tmp_path):
    from_docs = dict(explain.clause_texts())
    monkeypatch.setattr(explain, "SOURCE_CONTRACT", tmp_path / "site-packages" / "docs" / "x.md")
    explain.clause_texts.cache_clear()
    try:
        installed = explain.clause_texts()
        assert installed == from_docs
        assert set(installed) == set(catalogue.CLAUSES)
        assert "(context-engine-kit explain V2)" in render("V2", "MUST", "x")
        assert "Clause text (docs/contract.md#v2):" in explain.explain("V2")
    finally:
        explain.clause_texts.cache_clear()


def test_every_engine_facing_and_kit_clause_has_a_cause_and_a_fix():
    for clause in catalogue.CLAUSES.values():
        if clause.side in (catalogue.ENGINE, catalogue.KIT):
            assert clause.id in ADVICE, (
                f"{clause.id} has no entry in conformance/run/clause_advice_surface.py or "
                "clause_advice_behaviour.py"
            )
        tip = advice(clause.id, clause.side)
        assert len(tip.cause) > 30 and len(tip.fix) > 20, clause.id
        assert not tip.cause.endswith(" ") and tip.fix.endswith("."), clause.id
    assert set(ADVICE) <= set(catalogue.CLAUSES), set(ADVICE) - set(catalogue.CLAUSES)
    assert set(KIT_TEXTS) == {c.id for c in catalogue.CLAUSES.values() if c.side == catalogue.KIT}
    assert advice("P1", catalogue.HOST) is HOST_ADVICE


@pytest.mark.parametrize("clause_id", CLAUSE_IDS)
def test_explain_every_clause(clause_id, capsys):
    clause = catalogue.get(clause_id)
    assert explain.main([clause_id.lower()]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{clause_id}: {clause.title}\n")
    flat = " ".join(out.split())
    assert " ".join(explain.clause_text(clause_id).split()) in flat
    assert f"Clause text ({clause.anchor}):" in out
    for chk in registry.all_checks():
        if chk.clause == clause_id:
            assert f"{chk.id} ({chk.level}): " in out, chk.id
    tip = advice(clause_id, clause.side)
    assert " ".join(tip.cause.split()) in flat and " ".join(tip.fix.split()) in flat
    assert "What usually causes a failure:" in out and "How to fix it:" in out


def test_explain_accepts_what_a_failure_message_shows(capsys):
    for query in ("[V2 MUST]", "docs/contract.md#v2", "V2-tool-results-paired[compress]", "v2"):
        assert explain.main([query]) == 0, query
        assert capsys.readouterr().out.startswith("V2: "), query
    assert explain.main(["scenario:c1-subagents:parent-window-unchanged"]) == 0
    assert capsys.readouterr().out.startswith("C2: ")
    assert explain.main([]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listing] == CLAUSE_IDS


def test_failure_messages_point_at_explain():
    assert render("V2", "MUST", "x", repro="pytest -k V2") == (
        "[V2 MUST] x. See docs/contract.md#v2 (context-engine-kit explain V2). Repro: pytest -k V2"
    )
    assert render("D1", "SHOULD", "y.").endswith(
        "See docs/coverage.md#d1 (context-engine-kit explain D1)."
    )
    assert render("Q9", "MUST", "z").endswith("See docs/contract.md.")  # unknown: no pointer


def test_explain_from_the_shell_and_an_unknown_clause(tmp_path):
    proc = cli("explain", "TS2", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("TS2: "), proc.stderr
    assert "Checks (" in proc.stdout and "How to fix it:" in proc.stdout
    for query, closest in (("V22", "V2"), ("V2-tool-result-paired", "V2-tool-results-paired")):
        bad = cli("explain", query, cwd=tmp_path)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        (line,) = bad.stderr.strip().splitlines()
        assert line.startswith(f"context-engine-kit explain: error: no clause or check {query!r}.")
        assert re.search(rf"Did you mean {re.escape(closest)}", line), line
        assert "explain --list" in line
