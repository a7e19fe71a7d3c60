"""Covers what the kit itself does during a case and must not be charged to the engine: the
stdlib's one ``uname -p`` (E1, conformance.runtime.sandbox) and the home a launched Hermes lays out
(TS2, simulator.llm.hermes_config.launch_hermes_home). Both were false alarms on Hermes' own
compressor once the kit served it an LLM over loopback (the simulator's threads, TS1, are
tests/conformance/test_leaked_threads.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from simulator.llm.hermes_config import launch_hermes_home

PROBE = """
import platform, sys
platform._uname_cache = None  # as in a fresh interpreter: the processor is not known yet
from conformance.runtime.sandbox import Sandbox, install_audit_hook, watching
install_audit_hook()
box = Sandbox()
box.new_home()
with watching(box) as reaches:
    platform.platform()  # what an HTTP client's User-Agent asks for
box.close()
print(len(reaches), [r.describe() for r in reaches])
"""


def test_the_stdlibs_processor_lookup_is_no_process_the_engine_starts():
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1)[0] == "0", proc.stdout


def test_a_kit_home_is_laid_out_as_a_launched_hermes_lays_it_out(tmp_path, monkeypatch):
    seen = []

    def ensure_hermes_home():
        seen.append(os.environ["HERMES_HOME"])
        (tmp_path / "SOUL.md").write_text("soul", encoding="utf-8")

    fake = types.ModuleType("hermes_cli.config")
    fake.ensure_hermes_home = ensure_hermes_home
    monkeypatch.setitem(sys.modules, "hermes_cli", types.ModuleType("hermes_cli"))
    monkeypatch.setitem(sys.modules, "hermes_cli.config", fake)
    monkeypatch.setenv("HERMES_HOME", "/elsewhere")
    assert launch_hermes_home(tmp_path) is True
    assert seen == [str(tmp_path)] and (tmp_path / "SOUL.md").is_file()
    assert os.environ["HERMES_HOME"] == "/elsewhere"  # restored


def test_without_hermes_agent_the_home_is_left_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "hermes_cli", None)  # import fails
    assert launch_hermes_home(tmp_path) is False
    assert list(tmp_path.iterdir()) == []


def test_a_kit_home_has_the_backup_a_launched_0_22_keeps(tmp_path, monkeypatch):
    """TS2: Hermes 0.22's first config load keeps a last-known-good copy of config.yaml; a kit
    home gets it from that version's own ``backup_config`` after config.yaml is written."""
    calls = []
    config = types.ModuleType("hermes_cli.config")
    config.ensure_hermes_home = lambda: None
    backups = types.ModuleType("hermes_cli.config_backups")
    backups.backup_config = lambda path, reason: calls.append((path, reason))
    monkeypatch.setitem(sys.modules, "hermes_cli", types.ModuleType("hermes_cli"))
    monkeypatch.setitem(sys.modules, "hermes_cli.config", config)
    monkeypatch.setitem(sys.modules, "hermes_cli.config_backups", backups)
    assert launch_hermes_home(tmp_path) is True
    assert calls == []  # no config.yaml yet: nothing a first load would copy
    (tmp_path / "config.yaml").write_text("auxiliary: {}\n", encoding="utf-8")
    assert launch_hermes_home(tmp_path) is True
    assert calls == [(tmp_path / "config.yaml", "good")]


REAL_022 = """
import os, sys
from pathlib import Path
from simulator.llm.hermes_config import configure_hermes_home, launch_hermes_home
home = Path(sys.argv[1])
configure_hermes_home(home, "http://127.0.0.1:9/v1", model="m", api_key="k")
launch_hermes_home(home)
before = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
os.environ["HERMES_HOME"] = str(home)
from hermes_cli.config import load_config
load_config()
after = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
import json
print(json.dumps([[p for p in after if p not in before], [p for p in before if "backups" in p]]))
"""


@pytest.mark.slow
def test_a_real_0_22_config_load_writes_nothing_into_a_kit_home(tmp_path):
    """TS2 on the real Hermes 0.22 (``$HERMES022_VENV_PYTHON``): after the kit lays a home out,
    the engine's first ``load_config()`` finds its last-known-good copy there and writes no
    file (it wrote ``backups/config/config.yaml.good.<ts>`` into the kit's home before)."""
    python = os.environ.get("HERMES022_VENV_PYTHON", "")
    if not python or not os.path.isfile(python):
        pytest.skip("no Hermes 0.22 venv (set HERMES022_VENV_PYTHON)")
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [python, "-c", REAL_022, str(tmp_path / "home")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=dict(os.environ, PYTHONPATH=repo, HOME=str(tmp_path)),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    new, backups = json.loads(proc.stdout.strip().splitlines()[-1])
    assert new == [], new
    assert any(p.startswith("backups/config/config.yaml.good.") for p in backups), backups
