"""Covers conformance.devtools.pypi_engine_runs: a published-engine verdict page names no path
of the machine that ran it ($HERMES_HOME, <state-dir> and <work> stand for them), including
the failure files its replay commands name."""

from __future__ import annotations

import json
import re

from conformance.devtools.pypi_engine_list import Engine
from conformance.devtools.pypi_engine_runs import run_engine


def test_a_verdict_page_names_no_path_of_this_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    engine = Engine(
        distribution="context-engine-kit",  # installed: the kit's own mutant stands in
        title="a mutant with a failure file",
        construction="no arguments",
        spec="reference_engines.mutants.v2_orphan_result:OrphanToolResult",
        kit_args=("-k", "V2-tool-results-paired and compress", "--conformance-profile=quick"),
        slug="page",
    )
    page = run_engine(engine, tmp_path / "out", [])
    text = page.read_text(encoding="utf-8")
    data = json.loads(text)
    assert data["verdict"] == "FAIL", data.get("run")
    assert "<state-dir>/failures/" in text  # the replay command names the failure file
    assert not re.search(r"/(tmp|work)/", text), re.findall(r"\S*/(?:tmp|work)/\S*", text)[:3]
