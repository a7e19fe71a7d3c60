"""Shared test setup: the repo root on PYTHONPATH for pytester subprocesses, pytester enabled."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="session")
def _activated_venv_path():
    """The tests run as from an activated virtualenv: this interpreter's bin folder first on
    PATH, so Repro: lines start with plain "pytest" (conformance.clauses.errors.pytest_command; the
    not-activated form is tested in tests/conformance/test_false_alarms.py). A fixture, not an
    import-time change, so a conformance run that loads this conftest is left alone."""
    saved = os.environ.get("PATH", "")
    parts = [p for p in saved.split(os.pathsep) if p]
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), *parts])
    yield
    os.environ["PATH"] = saved


@pytest.fixture
def kit_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester whose subprocesses can import the kit (installed or from this source tree)."""
    paths = [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    monkeypatch.delenv("CONFORMANCE_ENGINE", raising=False)
    monkeypatch.setenv("HERMES_HOME", str(pytester.path / "hermes-home"))
    return pytester


def pytest_configure(config: pytest.Config) -> None:
    """The kit's own tests import engines written for Hermes (``from agent.context_engine
    import ContextEngine``): keep the ``agent.*`` import hook in place for the whole run, so a
    file or folder run on its own imports them as the full run does (the plugin takes the hook
    out after the initial conftests when no engine is given)."""
    from simulator.host import shim

    shim.install()
