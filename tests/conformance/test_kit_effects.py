"""Covers what the kit itself does during a case and must not be charged to the engine: the
stdlib's one ``uname -p`` (E1, conformance.sandbox) and the home a launched Hermes lays out
(TS2, simulator.llm.hermes_config.launch_hermes_home). Both were false alarms on Hermes' own
compressor once the kit served it an LLM over loopback (the simulator's threads, TS1, are
tests/conformance/test_leaked_threads.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import types

from simulator.llm.hermes_config import launch_hermes_home

PROBE = """
import platform, sys
platform._uname_cache = None  # as in a fresh interpreter: the processor is not known yet
from conformance.sandbox import Sandbox, install_audit_hook, watching
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
