"""The pytest plugin: ``pytest --engine=MODULE:ATTR`` runs the conformance cases.

Inert unless an engine is given (``--engine``, ``CONFORMANCE_ENGINE``, the ini key
``conformance_engine``, ``--engine-plugin DIR``, or a ``--conformance-replay`` file), or a
conftest defines ``conformance_engine_factory``: installing the kit changes nothing in other
test runs. With an engine and no test paths it collects :mod:`conformance.suite`, whose test
items are the one stream of cases (:mod:`conformance.run.cases`): one item per check, scenario
expectation and snapshot case. Every hook here delegates to the run's
:class:`~conformance.run.conformance_session.ConformanceSession`, built once in ``pytest_configure``
(:mod:`conformance.frontends.pytest_options` reads the options into it). MUST failures fail the run;
SHOULD failures are reported but exit 0 unless ``--conformance-strict``.

This is the kit's one pytest11 entry point; it registers the scenario-file collector, the
snapshot fixture, the HTML report and the output checks (``pytest_plugins`` below).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from conformance.frontends import pytest_options
from conformance.frontends.option_registry import add_options
from conformance.frontends.pytest_session import (
    MARKER_LINE,
    SESSION_KEY,
    SUITE_DIR,
    SessionPlugin,
    conformance_mark,
    conformance_session,
)
from conformance.run.conformance_session import ConformanceSession
from conformance.runtime.stop_signals import stop_signals_as_interrupt

pytest_plugins = (
    "conformance.frontends.scenario_items",
    "conformance.frontends.snapshot_fixture",
    "conformance.frontends.report_plugin",
    "conformance.frontends.outputs",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--engine`` and ``--conformance-*`` options and the ini keys."""
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args):
    """Hold the ``agent.*`` import hook while the initial conftests load, so a conftest that
    imports an engine written for Hermes (``from agent.context_engine import ContextEngine``)
    at its top works. Taken out again afterwards unless something imported a module it serves;
    :func:`pytest_configure` puts it back when the plugin is active."""
    from simulator.host import shim

    added = not shim.installed() and shim.install()
    try:
        return (yield)
    finally:
        if added and not shim.shim_in_use():
            shim.uninstall()


def fixture_route(config: pytest.Config) -> bool:
    """True when a conftest (or another plugin) defines its own ``conformance_engine_factory``
    fixture: the engine comes from that fixture instead of ``--engine``."""
    me = sys.modules[__name__]
    for plugin in config.pluginmanager.get_plugins():
        try:
            if plugin is not me and callable(getattr(plugin, "conformance_engine_factory", None)):
                return True
        except Exception:  # a plugin object with an odd __getattr__ is not ours to judge
            continue
    return False


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``conformance`` marker, build the run's session (a ``pytest.UsageError``
    with one paragraph when an option or the engine is wrong), make SIGTERM stop the run like
    Ctrl-C (the verdict is still written) and point collection at the suite."""
    from simulator.host import shim

    config.addinivalue_line("markers", MARKER_LINE)
    route = fixture_route(config)
    try:
        pytest_options.take_engine_word(config)
        _activate(config, fixture_route=route)
    except pytest_options.Inert:
        return
    shim.install()
    if not hasattr(config, "workerinput"):  # an xdist worker is stopped by its controller
        config.add_cleanup(stop_signals_as_interrupt())
    given = config.args_source == pytest.Config.ArgsSource.ARGS and config.args
    if not route and not given:  # no test paths (the engine word is not one)
        config.args[:] = [str(SUITE_DIR)]


def _activate(config: pytest.Config, *, fixture_route: bool) -> SessionPlugin:
    """Build the run's session and register its hooks.

    Raises:
        pytest_options.Inert: no engine and no fixture route.
        pytest.UsageError: a bad option value or engine.
    """
    session = pytest_options.build_session(config, fixture_route=fixture_route)
    plugin = SessionPlugin(config, session, fixture_route=fixture_route)
    config.stash[SESSION_KEY] = plugin
    config.pluginmanager.register(plugin, "conformance-session")
    return plugin


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the suite's tests over the session's stream: ``conformance_case`` over every
    check and scenario expectation, ``conformance_snapshot_case`` over the snapshot cases;
    each item carries its case's ``conformance`` marker (:func:`conformance_mark`).

    A suite imported into a test module under a conftest pytest finds only now (not an initial
    conftest) is the fixture route too: the session is made here."""
    wanted = {"conformance_case", "conformance_snapshot_case"} & set(metafunc.fixturenames)
    if wanted and conformance_session(metafunc.config) is None:
        _activate(metafunc.config, fixture_route=True)
    session = conformance_session(metafunc.config)
    for name, snapshot in (("conformance_case", False), ("conformance_snapshot_case", True)):
        if name not in metafunc.fixturenames:
            continue
        cases = [] if session is None else session.cases()
        # a user's scenario files are items of their own files (scenario_items), not the suite's
        chosen = [
            c for c in cases if (c.kind == "snapshot") == snapshot and getattr(c, "bundled", True)
        ]
        params = [
            pytest.param(c.id, id=c.case_id if snapshot else c.id, marks=conformance_mark(c))
            for c in chosen
        ]
        metafunc.parametrize(name, params)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: Any) -> Any:
    """No ``test_compression_snapshot`` items at all when the run has no snapshot case (the
    tier is off), rather than an empty parameter set."""
    if name != "test_compression_snapshot" or not callable(obj):
        return None
    session = conformance_session(collector.config)
    if session is None or not any(c.kind == "snapshot" for c in session.cases()):
        return []
    return None


@pytest.fixture(scope="session")
def conformance_engine_factory(pytestconfig: pytest.Config):
    """Zero-argument callable returning a fresh engine; override it in your conftest.py."""
    session = conformance_session(pytestconfig)
    if session is None or session.factory is None:
        pytest.skip(
            "no engine given: pass --engine=MODULE:ATTR or override conformance_engine_factory"
        )
    return session.factory


@pytest.fixture(scope="session")
def conformance_run(pytestconfig: pytest.Config, conformance_engine_factory) -> ConformanceSession:
    """The run's :class:`~conformance.run.conformance_session.ConformanceSession`, bound to the
    engine factory (the fixture's, which a conftest may override)."""
    session = conformance_session(pytestconfig)
    if session is None:
        pytest.skip("the conformance plugin is inert in this run (no engine given)")
    session.bind(conformance_engine_factory)
    return session
