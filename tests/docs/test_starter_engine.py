"""Covers docs/examples/starter_engine.py, the engine the README offers authors to start from: it
must pass every check, MUST and SHOULD, on every host profile, as its docstring says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "docs" / "examples"


def test_the_starter_engine_passes_every_check_on_every_host_profile(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), str(EXAMPLES)]))
    for name in [k for k in env if k.startswith("PYTEST_XDIST_") or k == "CONFORMANCE_ENGINE"]:
        env.pop(name)
    out = tmp_path / "verdict.json"
    run = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "check", "starter_engine:StarterEngine"]
        + ["--host-profile=all", "--conformance-profile=quick", "--json", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["verdict"] == "PASS"
    assert data["failures_by_level"] == {"MUST": 0, "SHOULD": 0}, data["failures_by_level"]
    assert data["counts"]["passed"] > 100
