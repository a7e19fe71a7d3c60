"""Fixtures of the engine-LLM tests: the kit's shim, the hermes-agent venv, histories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
DRIVER = HERE / "hermes_driver.py"


@pytest.fixture(scope="session")
def shim_agent():
    """The kit's ``agent.*`` shim in this process (skips when a real hermes-agent is importable)."""
    from simulator.host import shim

    if not shim.install():
        pytest.skip("hermes-agent is importable here: the kit's agent.auxiliary_client is not used")
    import agent.auxiliary_client as aux

    assert getattr(aux, "__kit_shim__", False)
    return aux


@pytest.fixture(scope="session")
def hermes_python() -> str:
    """Python of a venv with hermes-agent 0.19.0 ($HERMES_VENV_PYTHON, else .venv-hermes)."""
    candidate = os.environ.get("HERMES_VENV_PYTHON") or str(REPO_ROOT / ".venv-hermes/bin/python")
    if not Path(candidate).is_file():
        pytest.skip(f"no hermes-agent venv python at {candidate} (set HERMES_VENV_PYTHON)")
    probe = subprocess.run(
        [candidate, "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "0.19.0":
        detail = probe.stdout.strip() or probe.stderr.strip()[-200:]
        pytest.skip(f"{candidate} has no hermes-agent 0.19.0 ({detail})")
    return candidate


def hermes_env(extra: dict[str, str]) -> dict[str, str]:
    """A hermetic environment for a Hermes subprocess: no keys, no proxies, no PYTHONPATH."""
    secret = ("API_KEY", "TOKEN", "SECRET")
    env = {k: v for k, v in os.environ.items() if not any(s in k.upper() for s in secret)}
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    env.update(PYTHONPATH="", **extra)
    return env


def run_driver(python: str, mode: str, cases, env: dict[str, str], workdir: Path, timeout=600):
    """Run ``hermes_driver.py MODE`` on ``cases`` under ``python``; returns its JSON output."""
    cases_path, out_path = workdir / f"{mode}-cases.json", workdir / f"{mode}-out.json"
    cases_path.write_text(json.dumps(cases))
    env = hermes_env({"HOME": str(workdir), **env})
    proc = subprocess.run(
        [python, str(DRIVER), mode, str(cases_path), str(out_path)],
        env=env,
        cwd=str(workdir),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out_path.read_text())


def conversation(turns: int, tag: str = "", seed: int = 0) -> list[dict[str, str]]:
    """A deterministic coding conversation: system + ``turns`` user/assistant pairs.

    Each message is a few hundred tokens; ``tag`` is written into the third user message
    (a fault's ``contains`` key; that message lands in the compacted middle).
    """
    out = [{"role": "system", "content": "You are a careful coding assistant."}]
    for n in range(turns):
        k = (n * 7 + seed) % 13
        user = (
            f"Step {n}: please fix the failing test tests/test_mod_{k}.py. "
            f"The parser in src/mod_{k}.py must never drop empty fields. "
            f"We decided to use a regex tokenizer for module {k}. "
        ) * 6
        if n == 2 and tag:
            user = f"{tag} " + user
        assistant = (
            f"I edited src/mod_{k}.py and ran pytest: 3 passed, 1 failed with error "
            f"KeyError 'field_{k}'. Next I will patch the tokenizer in src/mod_{k}.py. "
        ) * 6
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return out
