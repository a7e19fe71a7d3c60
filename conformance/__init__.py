"""Conformance checks for Hermes context engines, as a pytest plugin and a plain API.

``pytest --engine=mypkg:Engine`` runs every case of the stream (registry checks, bundled scenario
expectations, snapshot cases; :mod:`conformance.run.cases`); ``run_conformance`` runs the same
stream without pytest, through the same session (:mod:`conformance.run.conformance_session`).
Checks are registered by contract clause (``docs/contract.md``) in
:mod:`conformance.authoring.registry`.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:  # pytest is optional: conformance.authoring.expect is also used where pytest is absent
    import pytest

    pytest.register_assert_rewrite("conformance.authoring.expect")
except ImportError:
    pass

try:
    __version__ = _version("context-engine-kit")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0+source"

from simulator.contract import CONTRACT_VERSION  # noqa: E402

__all__ = ["CONTRACT_VERSION", "__version__", "run_conformance"]


def run_conformance(engine_factory, **kwargs):
    """Run every case of the stream against ``engine_factory``; see
    :func:`conformance.run.entry.run_conformance`."""
    from conformance.run.entry import run_conformance as _run

    return _run(engine_factory, **kwargs)
