"""The pytest plugin: ``pytest --engine=MODULE:ATTR`` runs the conformance checks.

Inert unless an engine is given (``--engine``, ``CONFORMANCE_ENGINE``, or the ini key
``conformance_engine``): installing the kit changes nothing in other test runs. With an
engine and no test paths it collects :mod:`conformance.suite`. MUST failures fail the
run; SHOULD failures are reported but exit 0 unless ``--conformance-strict``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

import pytest

from conformance import verdict as verdict_mod
from conformance.context import PROFILES, CheckContext
from conformance.engine_loading import EngineFactory, EngineSpecError, load_engine_factory, parse_kwargs
from conformance.outcome import ConformanceError, ConformanceFailure
from conformance.runner import expected_failures

ENV_ENGINE = "CONFORMANCE_ENGINE"
ENV_ENGINE_KWARGS = "CONFORMANCE_ENGINE_KWARGS"
SUITE_DIR = Path(__file__).parent / "suite"
_KEY = pytest.StashKey[Dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    group.addoption("--engine", default=None, metavar="MODULE:ATTR",
                    help="engine under test: a ContextEngine subclass or factory (env CONFORMANCE_ENGINE).")
    group.addoption("--engine-kwargs", default=None, metavar="JSON",
                    help="JSON object of keyword arguments for the engine (env CONFORMANCE_ENGINE_KWARGS).")
    group.addoption("--conformance-profile", default="default", choices=sorted(PROFILES),
                    help="Hypothesis budget: quick, default or thorough.")
    group.addoption("--conformance-strict", action="store_true", default=False,
                    help="SHOULD failures and XPASS fail the run too.")
    group.addoption("--conformance-random", action="store_true", default=False,
                    help="do not derandomize Hypothesis (explore new examples each run).")
    group.addoption("--conformance-json", default=None, metavar="FILE",
                    help="write the verdict as JSON to FILE.")
    group.addoption("--conformance-failures-dir", default=None, metavar="DIR",
                    help="where shrunk failing examples are written (default .conformance/failures).")
    parser.addini("conformance_engine", "engine under test, MODULE:ATTR", default="")
    parser.addini("conformance_engine_kwargs", "JSON keyword arguments for the engine", default="")


def engine_spec(config: pytest.Config) -> Optional[str]:
    """The engine spec from the option, the env var, or the ini key (in that order)."""
    return (config.getoption("--engine") or os.environ.get(ENV_ENGINE)
            or (config.getini("conformance_engine") or "").strip() or None)


def _kwargs_text(config: pytest.Config) -> Optional[str]:
    return (config.getoption("--engine-kwargs") or os.environ.get(ENV_ENGINE_KWARGS)
            or (config.getini("conformance_engine_kwargs") or "").strip() or None)


def pytest_configure(config: pytest.Config) -> None:
    spec = engine_spec(config)
    if not spec:
        return
    from simulator.host import shim

    shim.install()
    try:
        factory = load_engine_factory(spec, parse_kwargs(_kwargs_text(config)))
    except EngineSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    state: Dict[str, Any] = {"factory": factory, "verdict": verdict_mod.Verdict()}
    config.stash[_KEY] = state
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(SUITE_DIR)]
    if "HERMES_HOME" not in os.environ:
        # engines written for Hermes write under $HERMES_HOME: keep them in a temp dir.
        os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="conformance-hermes-home-")


def _state(config: pytest.Config) -> Optional[Dict[str, Any]]:
    return config.stash.get(_KEY, None)


def pytest_report_header(config: pytest.Config):
    state = _state(config)
    if state is None:
        return None
    from conformance import CONTRACT_VERSION, __version__
    from simulator.host.shim import abc_info

    factory: EngineFactory = state["factory"]
    return (f"conformance: engine {factory.repro_args()} | context-engine-kit {__version__} | "
            f"contract {CONTRACT_VERSION} | host ABC {abc_info().label()} | "
            f"profile {config.getoption('--conformance-profile')}")


@pytest.fixture(scope="session")
def conformance_engine_factory(pytestconfig: pytest.Config):
    """Zero-argument callable returning a fresh engine; override it in your conftest.py."""
    state = _state(pytestconfig)
    if state is None:
        pytest.skip("no engine given: pass --engine=MODULE:ATTR or override conformance_engine_factory")
    return state["factory"]


@pytest.fixture(scope="session")
def conformance_context(pytestconfig: pytest.Config, conformance_engine_factory) -> CheckContext:
    """The :class:`CheckContext` shared by all checks of this session."""
    return CheckContext(conformance_engine_factory, profile=pytestconfig.getoption("--conformance-profile"),
                        derandomize=not pytestconfig.getoption("--conformance-random"))


class _RunOptions:
    def __init__(self, config: pytest.Config, factory: Any):
        self.strict = bool(config.getoption("--conformance-strict"))
        failures = config.getoption("--conformance-failures-dir")
        self.failures_dir = Path(failures) if failures else Path(str(config.rootpath)) / ".conformance" / "failures"
        self.spec = factory.repro_args() if isinstance(factory, EngineFactory) else repr(factory)
        try:
            self.xfails = expected_failures(factory())
        except Exception:
            self.xfails = {}

    def __call__(self, chk) -> Dict[str, Any]:
        repro = f"pytest {self.spec} -k '{chk.id}'"
        return {"repro": repro, "failures_dir": self.failures_dir, "engine_spec": self.spec, "xfails": self.xfails}


@pytest.fixture(scope="session")
def conformance_run_options(pytestconfig: pytest.Config, conformance_engine_factory):
    """Options for :func:`conformance.runner.run_check` (repro line, failures dir, xfails)."""
    return _RunOptions(pytestconfig, conformance_engine_factory)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items) -> None:
    from conformance import CONTRACT_VERSION, registry

    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "check_id" not in callspec.params or item.originalname != "test_contract":
            continue
        chk = registry.get(callspec.params["check_id"])
        item.user_properties += [("conformance_check", chk.id), ("clause", chk.clause), ("level", chk.level),
                                 ("contract_version", CONTRACT_VERSION)]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance((ConformanceFailure, ConformanceError)):
        report.longrepr = str(call.excinfo.value)
        report.conformance_outcome = "error" if call.excinfo.errisinstance(ConformanceError) else "failed"
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    verdict = _ACTIVE_VERDICT.get("v")
    if verdict is None:
        return
    props = dict(report.user_properties or ())
    if "conformance_check" in props:
        verdict.record_report(report, props)
    elif report.failed:
        verdict.other_failures += 1


_ACTIVE_VERDICT: Dict[str, Any] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    state = _state(session.config)
    _ACTIVE_VERDICT["v"] = state["verdict"] if state else verdict_mod.Verdict()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    verdict: verdict_mod.Verdict = _ACTIVE_VERDICT.get("v")
    if verdict is None or not verdict.results:
        return
    for line in verdict.summary_lines(strict=config.getoption("--conformance-strict")):
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    if hasattr(session.config, "workerinput"):
        return  # xdist worker: the controller decides
    verdict: verdict_mod.Verdict = _ACTIVE_VERDICT.get("v")
    state = _state(session.config)
    if verdict is None or (state is None and not verdict.results):
        return
    strict = session.config.getoption("--conformance-strict")
    if state is not None and not verdict.ran_any():
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    elif session.exitstatus == pytest.ExitCode.TESTS_FAILED and not verdict.has_blocking_failure(strict=strict) \
            and verdict.only_conformance_failures:
        session.exitstatus = pytest.ExitCode.OK
    path = session.config.getoption("--conformance-json")
    if path and state is not None:
        verdict.write_json(Path(path), engine=state["factory"], host_profile="documented")
