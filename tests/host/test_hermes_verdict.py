"""Covers the kit end to end on the real hermes-agent 0.19.0 ``ContextCompressor``, on the LLM
path (conformance.engine_llm, simulator.llm.hermes_config): Hermes' own auxiliary client reaches
the simulator's summary LLM over loopback, so its B4 and A5 checks are judged on a
model-written summary, and the verdict holds exactly the findings docs/verdicts/hermes-0.19.0.md
explains. A new failure here is a kit false alarm or a changed check: read it against that page.

Runs ``context-engine-kit check`` with ``$HERMES_VENV_PYTHON`` (a venv with hermes-agent 0.19.0
and this kit installed: ``.ci/run`` makes one); skipped when there is none.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENGINE = "agent.context_compressor:ContextCompressor"
KWARGS = {"model": "test", "quiet_mode": True, "config_context_length": 200000}
#: The findings docs/verdicts/hermes-0.19.0.md explains, by capabilities declared.
DOCUMENTED = {
    "": {"A6-compression-count-counts-every-call", "V2-in-flight-chain-kept"},
    "compressor,focus": {
        "A6-compression-count-counts-every-call",
        "V2-in-flight-chain-kept",
        "B1-documented-defaults",
        "B3-head-and-tail-protected",
    },
}


def _kit_python() -> str:
    python = os.environ.get("HERMES_VENV_PYTHON", "")
    if not python or not Path(python).is_file():
        pytest.skip("no hermes-agent venv (set HERMES_VENV_PYTHON)")
    probe = subprocess.run(
        [
            python,
            "-c",
            "import importlib.metadata as m, hypothesis, pytest, syrupy; "
            "print(m.version('hermes-agent'))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "0.19.0":
        pytest.skip(f"{python} lacks hermes-agent 0.19.0 or the kit's dependencies")
    return python


@pytest.mark.slow
@pytest.mark.parametrize("capabilities", sorted(DOCUMENTED), ids=["declared", "compressor-focus"])
def test_hermes_compressor_gets_exactly_its_documented_findings(tmp_path, capabilities):
    python = _kit_python()
    out = tmp_path / "verdict.json"
    cmd = [python, "-m", "conformance.cli", "check", ENGINE, "--engine-kwargs", json.dumps(KWARGS)]
    cmd += ["--json", str(out), "--state-dir", str(tmp_path / "state")]
    if capabilities:
        cmd.append(f"--conformance-capabilities={capabilities}")
    env = dict(os.environ, PYTHONPATH=str(REPO), HERMES_HOME=str(tmp_path / "hermes-home"))
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200, check=False
    )
    assert out.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    rows = {r["check"]: r for r in data["results"]}
    failed = {c for c, r in rows.items() if r["outcome"] in ("failed", "error")}
    assert failed == DOCUMENTED[capabilities], [rows[c]["message"][:300] for c in sorted(failed)]
    assert proc.returncode == 1 and data["verdict"] == "FAIL"
    assert data["llm"]["calls"] > 0  # Hermes' real client reached the kit's LLM
    assert rows["A4-summary-failure-not-silent"]["outcome"] == "passed"  # faults reached it
    if capabilities:  # judged on a model-written summary
        assert rows["B4-summary-template"]["outcome"] == "passed"
        assert rows["A5-focus-topic-kept"]["outcome"] == "passed"
        assert rows["B4-summary-template"]["llm"]["calls"] > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "engine, verdict", [("DropsMiddleOnFailure", "FAIL"), ("FailClosedSummariser", "PASS")]
)
def test_summary_faults_reach_an_engine_through_hermes_real_client(tmp_path, engine, verdict):
    """A4's summary-failure check on an engine calling Hermes' real ``call_llm``: the faults
    the kit scripts on the LLM it serves over loopback reach it; the mutant that drops the
    middle fails, its fail-closed twin passes."""
    python = _kit_python()
    out = tmp_path / "verdict.json"
    spec = f"reference_engines.mutants.a4_summary_failure:{engine}"
    cmd = [python, "-m", "conformance.cli", "check", spec, "-k", "A4-summary-failure"]
    cmd += ["--conformance-no-scenarios", "--conformance-no-shrink", "--json", str(out)]
    cmd += ["--state-dir", str(tmp_path / "s")]
    env = dict(os.environ, PYTHONPATH=str(REPO), HERMES_HOME=str(tmp_path / "hermes-home"))
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["verdict"] == verdict, proc.stdout[-3000:]
    (row,) = data["results"]
    assert row["llm"]["failed_requests"] > 0, row  # the scripted faults fired over HTTP
