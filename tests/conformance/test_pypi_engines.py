"""The published-engines table (conformance/devtools/pypi_engines.py) renders pages and the index
from a JSON verdict; no kit run, no network."""

from __future__ import annotations

import json

from conformance.devtools import pypi_engines as pe

ENGINE = pe.Engine(
    distribution="hermes-example",
    title="`ExampleEngine`",
    construction="Built with no arguments.",
    spec="example.engine:ExampleEngine",
)

VERDICT = {
    "engine": {"spec": "example.engine:ExampleEngine", "kwargs": {}},
    "kit_version": "0.1.0",
    "contract_version": "1.1",
    "host_abc": "hermes-agent 0.19.0",
    "host_profile": "documented",
    "profile": "default",
    "verdict": "FAIL",
    "counts": {"total": 4, "passed": 1, "failed": 3, "skipped": 0, "error": 0},
    "failures_by_level": {"MUST": 1, "SHOULD": 1},
    "results": [
        {"check": "A1-name-is-property", "clause": "A1", "level": "SHOULD", "outcome": "passed"},
        {
            "check": "A4-compress-returns-list",
            "clause": "A4",
            "level": "MUST",
            "outcome": "failed",
            "message": "[A4 MUST] compress() raised: expected a normal return, got TypeError: "
            '"a | b". See docs/contract.md#a4. Repro: pytest --engine=x --conformance-replay '
            "/tmp/k/failures/A4.json",
        },
        {
            "check": "V1-list-of-role-dicts[compress]",
            "clause": "A4",
            "level": "MUST",
            "outcome": "failed",
            "root_cause": "A4-compress-returns-list",
            "message": "[A4 MUST] compress() raised. See docs/contract.md#a4. Repro: pytest x "
            "Same root cause as A4-compress-returns-list (the verdict counts it once).",
        },
        {
            "check": "A6-compression-count-counts-every-call",
            "clause": "A6",
            "level": "SHOULD",
            "outcome": "failed",
            "message": "[A6 SHOULD] compression_count: expected 1, got 0. See docs/contract.md#a6.",
        },
    ],
    "run": {
        "distribution": "hermes-example",
        "version": "1.0.0",
        "hermes_agent": "0.19.0",
        "command": "context-engine-kit check example.engine:ExampleEngine --json x.json",
        "env": {},
        "wall_seconds": 12.3,
        "started_utc": "2026-12-01 17:00 UTC",
        "exit_code": 1,
        "nproc": 2,
        "python": "3.11.7",
        "output_tail": [],
    },
}

JUDGED = {
    "A4-compress-returns-list": {"judged": "true finding", "why": "engine.py:10 raises."},
    "_notes": ["A note."],
}


def test_one_line_cuts_the_repro_and_keeps_the_root_cause():
    rows = pe.failures(VERDICT)
    assert pe.one_line(rows[0]["message"]).endswith("See docs/contract.md#a4.")
    assert "\\|" in pe.one_line(rows[0]["message"])  # table-safe
    assert "Repro" not in pe.one_line(rows[1]["message"])
    assert "same root cause as `A4-compress-returns-list`" in pe.one_line(rows[1]["message"])


def test_root_failures_count_a_shared_cause_once():
    roots = pe.root_failures(VERDICT)
    assert [r["check"] for r in roots] == [
        "A4-compress-returns-list",
        "A6-compression-count-counts-every-call",
    ]
    assert roots[0]["shares"] == ["V1-list-of-role-dicts[compress]"]
    assert pe.by_clause(roots, "MUST") == "A4"
    assert pe.by_clause(roots, "SHOULD") == "A6"


def test_page_has_verdict_failures_judgements_and_machine():
    page = pe.render_page(VERDICT, ENGINE, JUDGED)
    assert "# Verdict: hermes-example 1.0.0" in page
    assert "**Verdict: FAIL — 4 checks: 1 passed, 3 failed, 0 skipped" in page
    assert "1 MUST, 1 SHOULD" in page
    assert "| A4 | MUST | `A4-compress-returns-list` |" in page
    assert "**true finding**" in page and "engine.py:10 raises." in page
    assert "**not judged**" in page  # A6 has no judgement yet
    assert "`nproc` 2, Python 3.11.7" in page and "12 s" in page
    assert "## Notes" in page and "A note." in page
    assert "/tmp/k" not in page


def test_no_verdict_stub_says_so():
    stub = {
        "verdict": "NO VERDICT (kit exit 4)",
        "results": [],
        "run": {**VERDICT["run"], "exit_code": 4, "output_tail": ["usage error: cannot import"]},
    }
    page = pe.render_page(stub, ENGINE, {})
    assert "**Verdict: NO VERDICT (kit exit 4)** — the kit wrote no verdict." in page
    assert "usage error: cannot import" in page


def test_write_all_renders_pages_and_index(tmp_path, monkeypatch):
    owned = pe.Engine(
        "hermes-agent", "built-in", "see page", owned_by="tox -e hermes", slug="hermes-0.19.0"
    )
    monkeypatch.setattr(pe, "ENGINES", (owned, ENGINE))
    (tmp_path / "hermes-example-1.0.0.json").write_text(json.dumps(VERDICT), encoding="utf-8")
    hermes = {k: v for k, v in VERDICT.items() if k != "run"}
    (tmp_path / "hermes-0.19.0.json").write_text(json.dumps(hermes), encoding="utf-8")
    written = pe.write_all(tmp_path, {"hermes-example-1.0.0": JUDGED})
    assert [p.name for p in written] == ["hermes-example-1.0.0.md", "README.md"]
    index = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert (
        "| hermes-example | 1.0.0 | FAIL | A4 | A6 | 1 true finding, 1 not judged | 12 s | "
        "[hermes-example-1.0.0.md](hermes-example-1.0.0.md) |" in index
    )
    assert "| hermes-agent | 0.19.0 | FAIL | A4 | A6 |" in index
    assert "[hermes-0.19.0.md](hermes-0.19.0.md)" in index
    assert not (tmp_path / "hermes-0.19.0.md").exists()  # owned by tox -e hermes
