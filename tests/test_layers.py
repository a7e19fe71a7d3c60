"""Covers the layer rules of docs/architecture.md (contracts in pyproject.toml, checked with
import-linter) and what importing the pytest plugin loads: the simulator never imports the kit
or an engine, reference engines never import the kit or the simulator (the mutants may), the
kit imports reference engines only for the C3 fallback and install-plugin, only the development
tools import the mutants, the user CLI never imports the dev tools, the conformance folders
are layers (cli; devtools, plugin, suite; front ends; report; run; checks, scenarios,
snapshots; authoring; runtime; clauses), the simulator's host is over its store over its
provider, checks never reach for the run or the front ends, and no sibling modules import each
other in a circle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter")
    lint = Path(sys.executable).parent / "lint-imports"
    # No config argument: lint-imports reads ./pyproject.toml on every release the floor allows
    # (a positional config path is 2.17's; --config, the older spelling, is deprecated there).
    proc = subprocess.run(
        [str(lint)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout or "broken" not in proc.stdout.split("Contracts:")[-1]


def test_importing_the_plugin_and_running_a_check_loads_no_mutant_and_no_engine():
    code = (
        "import sys\n"
        "import conformance.plugin, conformance.run.session, conformance.cli\n"
        "from simulator.host.session import HostSession\n"
        "bad = sorted(m for m in sys.modules if m.startswith('reference_engines'))\n"
        "print(bad)\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_conformance_folder_and_module_is_in_a_layer():
    """The layers contract names every subpackage and module of conformance/, so a new
    folder cannot sit outside the layer order (import-linter ignores what no layer names)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    layers = next(
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["type"] == "layers" and c.get("containers") == ["conformance"]
    )
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    package = ROOT / "conformance"
    present = {
        p.stem if p.is_file() else p.name
        for p in package.iterdir()
        if (p.is_file() and p.suffix == ".py" and p.stem != "__init__")
        or (p.is_dir() and (p / "__init__.py").is_file())
    }
    assert present == named, (sorted(present - named), sorted(named - present))
