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
    """Run every case of the stream against an engine, without pytest; returns the results
    (a list of :class:`conformance.run.results.Result`). The keyword arguments are those of
    :func:`conformance.run.entry.run_conformance` (``profile``, ``only``, ``scenarios``,
    ``json_path``, ``host_profile``, ...).

    ``engine_factory`` is a zero-argument callable returning a fresh engine (an engine class, a
    factory function), or a spec string ``"mypkg.module:Engine"`` as ``--engine`` takes it. An
    engine module that imports ``agent.context_engine`` where hermes-agent is not installed
    needs the kit's documented ABC in place first: a spec string gets it (the kit imports the
    module after installing its import hook); to pass a class, call
    ``simulator.host.shim.install()`` before importing its module.

    Raises:
        conformance.runtime.engine_loading.EngineSpecError: a spec string that does not load
            (no colon, module not importable, attribute missing, not an engine).
    """
    from conformance.run.entry import run_conformance as _run

    if isinstance(engine_factory, str):
        from conformance.runtime.engine_loading import load_engine_factory

        engine_factory = load_engine_factory(engine_factory)
    return _run(engine_factory, **kwargs)
