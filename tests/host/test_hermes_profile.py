"""Covers simulator.host.profiles (the ``hermes-0.19`` profile, played by
simulator.host.session) against the real hermes-agent 0.19.0.

A real ``AIAgent`` from hermes-agent 0.19.0 (in its own venv: ``$HERMES_VENV_PYTHON``,
default ``/tmp/hvenv/bin/python`` when present) runs a scripted conversation against the
provider simulator's HTTP server on loopback, with the recording engine
``tests/host/hermes_fixture/kitrecorder`` selected through ``$HERMES_HOME/config.yaml``
(``context.engine: kitrecorder``, enabled as a general plugin, the only plugin path of
0.19.0 outside the wheel). The kit's host runs the same conversation with the same
engine in the ``hermes-0.19`` profile; the two recorded call sequences (method, keyword
names, argument shapes, thread) must be equal. The documented profile must differ
(select_context / on_turn_complete), so the comparison can fail.

Skipped when no such venv exists. tox runs it in an env that installs hermes-agent 0.19.0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.host import discovery
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider
from simulator.provider.http import start_server

FIXTURE = Path(__file__).parent / "hermes_fixture"
TURNS = [
    "hello one",
    "second message",
    "third message",
    "fourth message",
    "fifth message",
    "sixth message",
    "seventh message",
]
COMPRESS_AT = "3,6"


def _hermes_python() -> str:
    explicit = os.environ.get("HERMES_VENV_PYTHON")
    candidate = explicit or "/tmp/hvenv/bin/python"
    if not Path(candidate).is_file():
        pytest.skip(f"no hermes-agent venv python at {candidate} (set HERMES_VENV_PYTHON)")
    probe = subprocess.run(
        [candidate, "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "0.19.0":
        pytest.skip(
            f"{candidate} has no hermes-agent 0.19.0 "
            f"({probe.stdout.strip() or probe.stderr.strip()[-200:]})"
        )
    return candidate


def _hermes_home(root: Path) -> Path:
    home = root / "hermes_home"
    (home / "plugins").mkdir(parents=True)
    shutil.copytree(FIXTURE / "kitrecorder", home / "plugins" / "kitrecorder")
    (home / "config.yaml").write_text(
        "context:\n  engine: kitrecorder\nplugins:\n  enabled: [kitrecorder]\nmodel:\n"
        "  context_length: 200000\n"
    )
    return home


def _records(path: Path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _normalise(records):
    return [
        (r["method"], tuple(r["kwargs"]), json.dumps(r["shape"], sort_keys=True), r["main_thread"])
        for r in records
    ]


def _run_kit_host(tmp_path: Path, monkeypatch, profile: str):
    home = _hermes_home(tmp_path / profile)
    rec = tmp_path / f"kit-{profile}.jsonl"
    monkeypatch.setenv("KIT_RECORD_PATH", str(rec))
    monkeypatch.setenv("KIT_COMPRESS_AT", COMPRESS_AT)
    selection = discovery.select_engine(hermes_home=home, profile="hermes-0.19")
    assert selection.source == "plugin" and selection.engine.name == "kitrecorder"
    provider = Provider(seed=1)
    session = HostSession(
        selection.engine,
        provider,
        model="test-model",
        context_length=200_000,
        profile=profile,
        clone=True,
        config=HostConfig(context_timeout_seconds=120),
    )
    session.start()
    for text in TURNS:
        session.user_turn(text)
    return _records(rec), provider, session


@pytest.fixture(scope="module")
def hermes_run(tmp_path_factory):
    """Run the real AIAgent once; returns (records, provider journal length, final roles)."""
    python = _hermes_python()
    root = tmp_path_factory.mktemp("hermes")
    home = _hermes_home(root)
    rec, turns, out = root / "hermes.jsonl", root / "turns.json", root / "out.json"
    turns.write_text(json.dumps(TURNS))
    server = start_server(Provider(seed=1))
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k and "TOKEN" not in k}
    env.update(
        HERMES_HOME=str(home),
        KIT_RECORD_PATH=str(rec),
        KIT_COMPRESS_AT=COMPRESS_AT,
        PYTHONPATH="",
        NO_PROXY="*",
        no_proxy="*",
    )
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    try:
        proc = subprocess.run(
            [python, str(FIXTURE / "drive_hermes.py"), server.url + "/v1", str(turns), str(out)],
            env=env,
            cwd=str(root),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-4000:]
    return _records(rec), len(server.provider.journal), json.loads(out.read_text())


def test_hermes_019_profile_matches_real_hermes(hermes_run, tmp_path, monkeypatch):
    """The hermes-0.19 profile makes the same engine calls, in the same order, as hermes-agent
    0.19.0."""
    real, real_requests, real_out = hermes_run
    kit, provider, session = _run_kit_host(tmp_path, monkeypatch, "hermes-0.19")
    assert [r["method"] for r in real].count("compress") == 2
    assert len(real) >= 20 and _normalise(kit) == _normalise(real)
    assert len(provider.journal) == real_requests == len(TURNS)
    assert [m["role"] for m in session.transcript] == real_out["roles"]


def test_real_hermes_facts_the_profile_encodes(hermes_run):
    """Facts of the hermes-0.19 profile (docs/host.md, Profiles) seen on the real host: no
    select_context / on_turn_complete, compress() on the main thread without the system message,
    end then start(compression)."""
    real, _, _ = hermes_run
    methods = [r["method"] for r in real]
    assert "select_context" not in methods and "on_turn_complete" not in methods
    compresses = [r for r in real if r["method"] == "compress"]
    assert all(r["main_thread"] and r["shape"]["roles"][0] != "system" for r in compresses)
    i = methods.index("compress")
    assert methods[i + 1 : i + 3] == ["on_session_end", "on_session_start"]
    assert real[i + 2]["shape"]["boundary_reason"] == "compression"


def test_documented_profile_differs_from_real_hermes(hermes_run, tmp_path, monkeypatch):
    """The comparison can fail: the documented profile calls select_context and on_turn_complete."""
    real, _, _ = hermes_run
    kit, _, _ = _run_kit_host(tmp_path, monkeypatch, "documented")
    assert _normalise(kit) != _normalise(real)
    assert "select_context" in [r["method"] for r in kit]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
