"""Fixtures for the store tests: ``store`` runs a test against both stores."""

from __future__ import annotations

import pytest

from .helpers import make_store


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    """A fresh store: once a MemoryStore, once a SQLiteStore (shared behaviour tests)."""
    s = make_store(request.param, tmp_path)
    yield s
    if hasattr(s, "close"):
        s.close()


@pytest.fixture
def sqlite_store(tmp_path):
    """A fresh SQLiteStore in ``tmp_path``."""
    from simulator.store.sqlite import SQLiteStore

    s = SQLiteStore(tmp_path / "store.sqlite3")
    yield s
    s.close()
