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
