"""Shared test setup: the repo root on PYTHONPATH for pytester subprocesses, pytester enabled."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent


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
