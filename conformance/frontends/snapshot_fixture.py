"""Pytest sub-plugin of the snapshot tier (kit clause D1, whose mismatch fails the run all the
same): syrupy's ``snapshot`` bound to the engine's folder
(:func:`conformance.frontends.pytest_options.snapshots_dir` says when the tier is on).
"""

from __future__ import annotations

import pytest

from conformance.frontends.pytest_session import conformance_session


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """With the tier on, mute syrupy's "Can not relate snapshot name" (files are per case)."""
    session = conformance_session(config)
    if session is not None and session.snapshots_dir() is not None:
        config.addinivalue_line(
            "filterwarnings", r"ignore:\s*Can not relate snapshot name:UserWarning"
        )


@pytest.fixture
def conformance_snapshot(snapshot, pytestconfig: pytest.Config):
    """syrupy's ``snapshot`` storing ``<case>.json`` in ``.conformance/snapshots/<engine>/``."""
    from conformance.snapshots.extension import extension_for

    session = conformance_session(pytestconfig)
    directory = session.snapshots_dir() if session is not None else None
    if directory is None:
        pytest.skip("the snapshot tier is off (no engine, or no snapshot folder yet)")
    return snapshot.use_extension(extension_for(directory))
