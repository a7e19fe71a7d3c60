"""Pytest sub-plugin of the snapshot tier: syrupy's ``snapshot`` bound to the engine's folder.

Registered by :mod:`conformance.plugin`. The tier is on when ``--conformance-snapshots`` or
``--snapshot-update`` is given, or when ``<rootdir>/.conformance/snapshots/<engine slug>/``
exists (the base folder is ``--conformance-snapshots-dir`` when given; ``context-engine-kit
check`` gives ``<cwd>/.conformance/snapshots``), so a first conformance run never fails for
lack of snapshots (:func:`conformance.frontends.pytest_options.snapshots_dir`). Its cases are the
stream's snapshot cases, run by :func:`conformance.suite.test_contract.test_compression_snapshot`;
a mismatch is a failure of kit clause D1 (SHOULD) that fails the run all the same
(:mod:`conformance.snapshots.mismatch`).
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """With the tier on: snapshot files are named after the corpus case, not the test, so
    syrupy's "Can not relate snapshot name" warning does not apply."""
    from conformance.frontends.pytest_session import conformance_session

    session = conformance_session(config)
    if session is not None and session.snapshots_dir() is not None:
        config.addinivalue_line(
            "filterwarnings", r"ignore:\s*Can not relate snapshot name:UserWarning"
        )


@pytest.fixture
def conformance_snapshot(snapshot, pytestconfig: pytest.Config):
    """syrupy's ``snapshot`` storing ``<case>.json`` in ``.conformance/snapshots/<engine>/``."""
    from conformance.frontends.pytest_session import conformance_session
    from conformance.snapshots.extension import extension_for

    session = conformance_session(pytestconfig)
    directory = session.snapshots_dir() if session is not None else None
    if directory is None:
        pytest.skip("the snapshot tier is off (no engine, or no snapshot folder yet)")
    return snapshot.use_extension(extension_for(directory))
