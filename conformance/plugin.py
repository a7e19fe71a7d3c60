"""The pytest plugin: ``pytest --engine=MODULE:ATTR`` runs the conformance cases.

Inert unless an engine is given (``--engine``, ``CONFORMANCE_ENGINE``, the ini key
``conformance_engine``, ``--engine-plugin DIR``, or a ``--conformance-replay`` file), or a
conftest defines ``conformance_engine_factory``: installing the kit changes nothing in other
test runs. With an engine and no test paths it collects :mod:`conformance.suite`, whose test
items are the one stream of cases (:mod:`conformance.cases`): one item per check, scenario
expectation and snapshot case. Every hook here delegates to the run's
:class:`~conformance.session.ConformanceSession`, built once in ``pytest_configure``
(:mod:`conformance.pytest_options` reads the options into it). MUST failures fail the run;
SHOULD failures are reported but exit 0 unless ``--conformance-strict``.

This is the kit's one pytest11 entry point; it registers the scenario-file collector, the
snapshot fixture and the HTML report (``pytest_plugins`` below).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest

from conformance import pytest_options
from conformance.errors import ConformanceError, ConformanceFailure
from conformance.session import ConformanceSession, Result, unmatched_xfails
from conformance.verdict import Verdict

pytest_plugins = (
    "conformance.scenarios.plugin",
    "conformance.snapshots.plugin",
    "conformance.report.plugin",
)

SUITE_DIR = Path(__file__).parent / "suite"
_SESSION = pytest.StashKey["SessionPlugin"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``--engine`` and ``--conformance-*`` options and the ini keys."""
    pytest_options.add_options(parser)


def session_plugin(config: pytest.Config) -> SessionPlugin | None:
    """The run's :class:`SessionPlugin` (None: the plugin is inert in this run)."""
    return config.stash.get(_SESSION, None)


def conformance_session(config: pytest.Config) -> ConformanceSession | None:
    """The run's :class:`~conformance.session.ConformanceSession` (None: inert)."""
    plugin = session_plugin(config)
    return plugin.session if plugin is not None else None


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
    """Build the run's session (a ``pytest.UsageError`` with one paragraph when an option or
    the engine is wrong) and point collection at the suite."""
    from simulator.host import shim

    route = fixture_route(config)
    try:
        built = pytest_options.build_session(config, fixture_route=route)
    except pytest_options.Inert:
        return
    shim.install()
    plugin = SessionPlugin(config, built.session, fixture_route=route)
    config.stash[_SESSION] = plugin
    config.pluginmanager.register(plugin, "conformance-session")
    if not route and config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(SUITE_DIR)]
    if "HERMES_HOME" not in os.environ:
        # engines written for Hermes write under $HERMES_HOME: keep them in a temp dir.
        plugin.hermes_home = tempfile.mkdtemp(prefix="conformance-hermes-home-")
        os.environ["HERMES_HOME"] = plugin.hermes_home


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the temp ``HERMES_HOME`` this plugin made (and unset it again)."""
    plugin = session_plugin(config)
    home = plugin.hermes_home if plugin is not None else None
    if home and os.environ.get("HERMES_HOME") == home:
        del os.environ["HERMES_HOME"]
        shutil.rmtree(home, ignore_errors=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the suite's tests over the session's stream: ``conformance_case`` over every
    check and scenario expectation, ``conformance_snapshot_case`` over the snapshot cases."""
    session = conformance_session(metafunc.config)
    for name, snapshot in (("conformance_case", False), ("conformance_snapshot_case", True)):
        if name not in metafunc.fixturenames:
            continue
        cases = [] if session is None else session.cases()
        chosen = [c for c in cases if (c.kind == "snapshot") == snapshot]
        ids = [c.case_id if snapshot else c.id for c in chosen]
        metafunc.parametrize(name, [c.id for c in chosen], ids=ids)


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
    """The run's :class:`~conformance.session.ConformanceSession`, bound to the engine factory
    (the fixture's, which a conftest may override)."""
    session = conformance_session(pytestconfig)
    if session is None:
        pytest.skip("the conformance plugin is inert in this run (no engine given)")
    session.bind(conformance_engine_factory)
    return session


def report_result(item: pytest.Item, result: Result, *, strict: bool) -> None:
    """Record ``result`` on ``item`` (its verdict row travels in ``user_properties``, also under
    xdist and into junit) and turn it into the pytest outcome."""
    __tracebackhide__ = True
    keep = [(k, v) for k, v in item.user_properties if k not in ("clause", "level")]
    item.user_properties[:] = keep + [
        ("clause", result.clause),
        ("level", result.level),
        ("conformance_outcome", result.outcome),
        ("conformance_message", result.message),
    ]
    if result.outcome == "passed":
        return
    if result.outcome == "failed":
        raise ConformanceFailure(result.message)
    if result.outcome == "skipped":
        pytest.skip(result.message)
    if result.outcome == "xfailed":
        pytest.xfail(result.message)
    if result.outcome == "xpassed":
        if strict:
            raise ConformanceFailure(
                f"[{result.clause} {result.level}] XPASS(strict): {result.message}"
            )
        return
    raise ConformanceError(result.message)


def case_properties(case: Any) -> list[tuple[str, str]]:
    """The junit ``user_properties`` of a case's item (check id, clause, level, since, kind)."""
    from conformance import CONTRACT_VERSION

    return [
        ("conformance_check", case.id),
        ("clause", case.clause),
        ("level", case.level),
        ("since", getattr(case, "since", "1.0")),
        ("kind", case.kind),
        ("contract_version", CONTRACT_VERSION),
    ]


class SessionPlugin:
    """The hooks of one run, holding its session (registered as ``conformance-session``).

    Attributes:
        session: the :class:`~conformance.session.ConformanceSession`.
        verdict: the results as reported (on the xdist controller: every worker's).
        hermes_home: the temp ``HERMES_HOME`` made for this run, or None.
    """

    def __init__(self, config: pytest.Config, session: ConformanceSession, *, fixture_route: bool):
        self.config = config
        self.session = session
        self.fixture_route = fixture_route
        self.verdict = Verdict()
        self.hermes_home: str | None = None

    @property
    def strict(self) -> bool:
        """``--conformance-strict``."""
        return self.session.options.strict

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session):
        """After pytest's header, build one engine (under ``--conformance-timeout``): a
        constructor that raises or hangs is a usage error naming it."""
        result = yield
        if self.session.factory is not None and not hasattr(self.config, "workerinput"):
            pytest_options.probe_or_raise(self.session)
        return result

    def pytest_report_header(self, config: pytest.Config):
        """Header lines: engine, kit and contract versions, host ABC, profiles, env, replay."""
        return pytest_options.header_lines(config, self.session, fixture_route=self.fixture_route)

    def pytest_collection_modifyitems(self, session, config: pytest.Config, items) -> None:
        """Attach each case's clause/level/since/kind as junit user_properties; warn about
        expected failures that match no case."""
        empty = []  # a suite test whose parameter set is empty (e.g. -k on a replay)
        for item in items:
            case = getattr(item, "conformance_case_obj", None)
            params = getattr(getattr(item, "callspec", None), "params", {})
            for name in ("conformance_case", "conformance_snapshot_case"):
                if name in params:
                    if not isinstance(params[name], str):
                        empty.append(item)
                    else:
                        case = self.session.case(params[name])
            if case is not None:
                item.user_properties += case_properties(case)
        if empty:
            config.hook.pytest_deselected(items=empty)
            items[:] = [i for i in items if i not in empty]
        for key in unmatched_xfails(self.session.options.xfails, self.session.cases()):
            warnings.warn(
                pytest.PytestConfigWarning(
                    f"--conformance-xfails: {key!r} matches no check id, id prefix or clause"
                ),
                stacklevel=2,
            )

    def pytest_report_collectionfinish(self, config: pytest.Config, start_path, items):
        """With ``--collect-only``: each case's id and title (what it checks)."""
        if not config.option.collectonly:
            return None
        lines = ["conformance cases (id: what it checks):"]
        for item in items:
            props = dict(item.user_properties)
            if "conformance_check" in props:
                case = self.session.case(props["conformance_check"])
                lines.append(f"  {case.id}: {case.title}")
        return lines if len(lines) > 1 else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """Show conformance failures as their one-line message (no kit traceback)."""
        report = yield
        if call.excinfo is not None and call.excinfo.errisinstance(
            (ConformanceFailure, ConformanceError)
        ):
            report.longrepr = str(call.excinfo.value)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold each case's report into the verdict (also under xdist, on the controller)."""
        props = dict(report.user_properties or ())
        if "conformance_check" not in props:
            if report.failed:
                self.verdict.other_failures += 1
            return
        result = _result_of(report, props)
        if result is not None:
            self.verdict.add(result)

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        """Print the verdict by clause and the verdict line, once (on the xdist controller)."""
        if hasattr(config, "workerinput"):
            return
        if not self.verdict.results:
            if not config.option.collectonly and not self.fixture_route:
                terminalreporter.write_line(
                    "verdict: NO CHECK RAN - every conformance check was deselected "
                    "(-k, -m or --deselect); widen the selection"
                )
            return
        for line in self.verdict.summary_lines(strict=self.strict):
            terminalreporter.write_line(line)

    @pytest.hookimpl(trylast=True)  # after plugins (syrupy) that OR the exit status back in
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        """Apply the exit rules (MUST fails; SHOULD only with --conformance-strict; no case
        ran = failure) and write the JSON verdict."""
        if hasattr(self.config, "workerinput") or self.config.option.collectonly:
            return
        if self.fixture_route and not self.verdict.results:
            return  # the fixture was defined but this run selected none of the suite
        if not self.verdict.ran_any():
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        elif (
            session.exitstatus == pytest.ExitCode.TESTS_FAILED
            and not self.verdict.has_blocking_failure(strict=self.strict)
            and self.verdict.only_conformance_failures
        ):
            session.exitstatus = pytest.ExitCode.OK
        path = self.config.getoption("--conformance-json")
        if path:
            self.verdict.write_json(Path(path), session=self.session)


def _result_of(report: pytest.TestReport, props: dict[str, str]) -> Result | None:
    """The :class:`~conformance.session.Result` a case's report stands for (None for the
    phases that carry no outcome)."""
    kind = props.get("kind", "contract")
    if "conformance_outcome" in props and report.when == "call":
        outcome = props["conformance_outcome"]
        if outcome == "xpassed" and report.failed:
            outcome = "failed"  # XPASS(strict)
        return Result(
            props["conformance_check"],
            props["clause"],
            props["level"],
            outcome,
            props.get("conformance_message", ""),
            kind=kind,
        )
    if report.when == "call" or report.failed or report.skipped:
        if report.skipped:
            outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            message = (
                str(report.longrepr[2]).removeprefix("Skipped: ")
                if isinstance(report.longrepr, tuple)
                else str(getattr(report, "wasxfail", ""))
            )
        elif report.failed:
            outcome = "error" if report.when != "call" else "failed"
            text = str(report.longreprtext or "").strip()
            message = text.splitlines()[-1] if text else ""
        else:
            outcome, message = "passed", ""
        return Result(
            props["conformance_check"],
            props["clause"],
            props["level"],
            outcome,
            message,
            kind=kind,
        )
    return None
