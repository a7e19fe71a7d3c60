"""The pytest plugin: ``pytest --engine=MODULE:ATTR`` runs the conformance checks.

Inert unless an engine is given (``--engine``, ``CONFORMANCE_ENGINE``, or the ini key
``conformance_engine``): installing the kit changes nothing in other test runs. With an
engine and no test paths it collects :mod:`conformance.suite`. MUST failures fail the
run; SHOULD failures are reported but exit 0 unless ``--conformance-strict``.
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

from conformance import verdict as verdict_mod
from conformance.context import PROFILES, CheckContext
from conformance.engine_loading import (
    EngineFactory,
    EngineSpecError,
    load_engine_factory,
    parse_kwargs,
)
from conformance.outcome import ConformanceError, ConformanceFailure
from conformance.runner import expected_failures
from conformance.timeouts import DEFAULT_MAX_TIMEOUTS, EngineTimeout, HangBudget, build_engine

#: The sub-plugins (snapshot tier, scenario files, HTML report). Installed, each also has its own
#: pytest11 entry point under the same name, so loading them here is a no-op; from a source tree
#: (``-p conformance.plugin``) this is what loads them.
pytest_plugins = (
    "conformance.snapshots.plugin",
    "conformance.scenarios.plugin",
    "conformance.report.plugin",
)

ENV_ENGINE = "CONFORMANCE_ENGINE"
ENV_ENGINE_KWARGS = "CONFORMANCE_ENGINE_KWARGS"
SUITE_DIR = Path(__file__).parent / "suite"
_KEY = pytest.StashKey[dict[str, Any]]()
_FIXTURE_ROUTE = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the --engine and --conformance-* options and the ini keys."""
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    group.addoption(
        "--engine",
        default=None,
        metavar="MODULE:ATTR",
        help="engine under test: a ContextEngine subclass or factory (env CONFORMANCE_ENGINE).",
    )
    group.addoption(
        "--engine-kwargs",
        default=None,
        metavar="JSON",
        help="JSON object of keyword arguments for the engine (env CONFORMANCE_ENGINE_KWARGS).",
    )
    group.addoption(
        "--conformance-capabilities",
        default="",
        metavar="LIST",
        help="comma-separated capabilities to add to the engine's conformance_capabilities "
        "(e.g. compressor,focus for an engine you cannot edit).",
    )
    group.addoption(
        "--host-profile",
        default="documented",
        choices=("documented", "hermes-0.19"),
        help="the host the kit plays: documented (default) or hermes-0.19 (the released "
        "0.19.0 host); checks of clauses that host lacks are skipped.",
    )
    group.addoption(
        "--conformance-profile",
        default="default",
        choices=sorted(PROFILES),
        help="Hypothesis budget: quick, default or thorough.",
    )
    group.addoption(
        "--conformance-strict",
        action="store_true",
        default=False,
        help="SHOULD failures and XPASS fail the run too.",
    )
    group.addoption(
        "--conformance-random",
        action="store_true",
        default=False,
        help="do not derandomize Hypothesis (explore new examples each run).",
    )
    group.addoption(
        "--conformance-json",
        default=None,
        metavar="FILE",
        help="write the verdict as JSON to FILE.",
    )
    group.addoption(
        "--conformance-failures-dir",
        default=None,
        metavar="DIR",
        help="where shrunk failing examples are written (default .conformance/failures).",
    )
    group.addoption(
        "--conformance-xfails",
        default=None,
        metavar="FILE",
        help="expected failures: one check id, id prefix or clause per line, '# reason' optional "
        "(non-strict; --conformance-strict makes an XPASS fail).",
    )
    group.addoption(
        "--conformance-replay",
        default=None,
        metavar="FILE",
        help="rerun one failure file from .conformance/failures/ on its recorded (shrunk) draws.",
    )
    group.addoption(
        "--conformance-timeout",
        default=None,
        type=float,
        metavar="SECONDS",
        help="per-check time limit; a hanging engine method fails its check (default 120).",
    )
    group.addoption(
        "--conformance-max-timeouts",
        default=None,
        type=int,
        metavar="N",
        help="after N checks have timed out (a hanging engine), the remaining checks are errors "
        f"without running, so a hang costs about N x --conformance-timeout (default "
        f"{DEFAULT_MAX_TIMEOUTS}; 0 runs every check).",
    )
    group.addoption(
        "--conformance-no-shrink",
        action="store_true",
        default=False,
        help="do not shrink failing examples (faster failures, longer examples in failure files).",
    )
    group.addoption(
        "--conformance-seed",
        default=None,
        type=int,
        metavar="N",
        help="Hypothesis seed with --conformance-random (recorded in failure files).",
    )
    group.addoption(
        "--engine-plugin",
        default=None,
        metavar="DIR",
        help="a plugin folder ($HERMES_HOME/plugins/<name>/) to check for R4-R6; without --engine "
        "its engine is also the engine under test.",
    )
    parser.addini("conformance_engine", "engine under test, MODULE:ATTR", default="")
    parser.addini("conformance_engine_kwargs", "JSON keyword arguments for the engine", default="")


def engine_spec(config: pytest.Config) -> str | None:
    """The engine spec from the option, the env var, or the ini key (in that order)."""
    return (
        config.getoption("--engine")
        or os.environ.get(ENV_ENGINE)
        or (config.getini("conformance_engine") or "").strip()
        or None
    )


def engine_kwargs_text(config: pytest.Config) -> str | None:
    """The ``--engine-kwargs`` JSON text from the option, the env var, or the ini key (in that order)."""
    try:
        opt = config.getoption("--engine-kwargs")
    except ValueError:  # the option is not registered (this plugin is not loaded)
        opt = None
    try:
        ini = (config.getini("conformance_engine_kwargs") or "").strip()
    except ValueError:
        ini = ""
    return opt or os.environ.get(ENV_ENGINE_KWARGS) or ini or None


_kwargs_text = engine_kwargs_text


def engine_factory(config: pytest.Config) -> EngineFactory | None:
    """The engine under test for the sub-plugins (scenarios, snapshots, report): one source for all.

    Returns the factory this plugin resolved in ``pytest_configure`` (from ``--engine`` /
    ``CONFORMANCE_ENGINE`` / the ini key, else from ``--engine-plugin DIR`` as a
    :class:`PluginFolderFactory`), or None when no engine is given. When this plugin is not
    loaded (a sub-plugin registered alone), the engine comes from ``CONFORMANCE_ENGINE`` and
    ``CONFORMANCE_ENGINE_KWARGS``.

    Raises:
        pytest.UsageError: only in that fallback, for a bad ``CONFORMANCE_ENGINE`` value (the
            loader's message).
    """
    state = _state(config)
    if state is not None:
        return state["factory"]
    try:
        config.getoption("--engine")
        return None  # this plugin is loaded and found no engine
    except ValueError:
        spec = os.environ.get(ENV_ENGINE)
        try:
            return (
                load_engine_factory(spec, parse_kwargs(os.environ.get(ENV_ENGINE_KWARGS)))
                if spec
                else None
            )
        except EngineSpecError as exc:
            raise pytest.UsageError(str(exc)) from None


class PluginFolderFactory(EngineFactory):
    """An engine factory for ``--engine-plugin DIR`` alone: the folder's engine, loaded as the host does."""

    def __call__(self) -> Any:
        return self.target()

    def repro_args(self) -> str:
        """The command-line option that selects this plugin folder again."""
        return f"--engine-plugin={self.spec}"


def _plugin_factory(plugin_dir: str) -> EngineFactory:
    try:
        from simulator.host.discovery import load_engine_plugin
    except ImportError:
        raise pytest.UsageError(
            f"--engine-plugin={plugin_dir}: this kit's host cannot load plugin folders yet "
            "(simulator.host.discovery.load_engine_plugin); give --engine=MODULE:ATTR too"
        ) from None
    factory, report = load_engine_plugin(plugin_dir)
    if factory is None:
        raise pytest.UsageError(
            f"--engine-plugin={plugin_dir}: no engine could be loaded: "
            + "; ".join(f"[{f.clause}] {f.message}" for f in report.failures())
        )
    return PluginFolderFactory(plugin_dir, factory)


def check_timeout(config: pytest.Config) -> float:
    """The per-check limit in seconds (``--conformance-timeout``, else the kit's default, 120)."""
    from conformance.context import DEFAULT_CHECK_TIMEOUT_S

    return float(config.getoption("--conformance-timeout", default=None) or DEFAULT_CHECK_TIMEOUT_S)


def _probe_engine(factory: Any, timeout: float) -> None:
    """Build one engine up front, under ``timeout`` seconds: a constructor that raises or hangs,
    or a factory that returns no engine, is one usage error instead of the same error repeated
    by every check."""
    from conformance.engine_loading import looks_like_engine

    what = getattr(factory, "repro_args", lambda: repr(factory))()
    try:
        engine = build_engine(factory, timeout)
    except EngineTimeout as exc:
        raise pytest.UsageError(f"{what}: {exc}. No check was run.") from None
    except Exception as exc:
        raise pytest.UsageError(
            f"{what}: constructing the engine raised {type(exc).__name__}: {exc}. Fix the constructor, or pass "
            "the arguments it needs with --engine-kwargs='{...}' (a JSON object), or give a factory "
            "function as MODULE:ATTR."
        ) from None
    if not looks_like_engine(engine):
        raise pytest.UsageError(
            f"{what}: the factory returned {type(engine).__name__}, not a context engine (it needs name, "
            "update_from_response, should_compress and compress). Return a new ContextEngine instance."
        )


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args):
    """Hold the ``agent.*`` import hook while the initial conftests load, so a conftest that imports an
    engine written for Hermes (``from agent.context_engine import ContextEngine``) at its top works.

    Taken out again afterwards unless something imported a module it serves; :func:`pytest_configure`
    puts it back when an engine is given or a conftest overrides ``conformance_engine_factory``.
    """
    from simulator.host import shim

    added = not shim.installed() and shim.install()
    try:
        return (yield)
    finally:
        if added and not shim.shim_in_use():
            shim.uninstall()


def fixture_route(config: pytest.Config) -> bool:
    """True when a conftest (or another plugin) defines its own ``conformance_engine_factory`` fixture:
    the engine comes from that fixture instead of ``--engine`` (README, "Engines that need setup")."""
    me = sys.modules[__name__]
    for plugin in config.pluginmanager.get_plugins():
        try:
            if plugin is not me and callable(getattr(plugin, "conformance_engine_factory", None)):
                return True
        except Exception:  # a plugin object with an odd __getattr__ is not ours to judge
            continue
    return False


def pytest_configure(config: pytest.Config) -> None:
    """Resolve the engine (UsageError with one paragraph when it cannot), read replay/xfails files, point collection at the suite."""
    from simulator.host import shim

    spec = engine_spec(config)
    plugin_dir = config.getoption("--engine-plugin")
    if not spec and not plugin_dir:
        if config.getoption("--conformance-replay"):
            _read_replay(config)  # a bad file is the first thing to hear about
            raise pytest.UsageError(
                f"--conformance-replay {config.getoption('--conformance-replay')}: no engine "
                "given; rerun with the engine the file was written for: --engine=MODULE:ATTR "
                "(or --engine-plugin DIR)."
            )
        if fixture_route(
            config
        ):  # engines imported by that fixture resolve the agent.* imports too
            shim.install()
            config.stash[_FIXTURE_ROUTE] = True
        return
    shim.install()
    if plugin_dir and not os.path.isdir(plugin_dir):
        raise pytest.UsageError(
            f"--engine-plugin={plugin_dir}: not a folder; give the plugin folder "
            "(the one holding __init__.py and plugin.yaml)"
        )
    try:
        factory = (
            load_engine_factory(spec, parse_kwargs(_kwargs_text(config)))
            if spec
            else _plugin_factory(plugin_dir)
        )
    except EngineSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    timeout = config.getoption("--conformance-timeout", default=None)
    if timeout is not None and float(timeout) <= 0:
        raise pytest.UsageError(
            f"--conformance-timeout={timeout}: give a positive number of seconds "
            "(the per-check time limit; default 120)."
        )
    max_timeouts = config.getoption("--conformance-max-timeouts", default=None)
    if max_timeouts is not None and max_timeouts < 0:
        raise pytest.UsageError(
            f"--conformance-max-timeouts={max_timeouts}: give 0 (run every check) or a "
            f"positive number of timed-out checks (default {DEFAULT_MAX_TIMEOUTS})."
        )
    replay = _read_replay(config)
    file_xfails: dict[str, str] = {}
    if config.getoption("--conformance-xfails"):
        from conformance.runner import read_xfails_file

        try:
            file_xfails = read_xfails_file(Path(config.getoption("--conformance-xfails")))
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    state: dict[str, Any] = {
        "factory": factory,
        "verdict": verdict_mod.Verdict(),
        "replay": replay,
        "file_xfails": file_xfails,
        "hangs": HangBudget(DEFAULT_MAX_TIMEOUTS if max_timeouts is None else max_timeouts),
    }
    config.stash[_KEY] = state
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [str(SUITE_DIR)]
    if "HERMES_HOME" not in os.environ:
        # engines written for Hermes write under $HERMES_HOME: keep them in a temp dir (removed at the end).
        os.environ["HERMES_HOME"] = state["hermes_home"] = tempfile.mkdtemp(
            prefix="conformance-hermes-home-"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the temp ``HERMES_HOME`` this plugin made (and unset it again)."""
    home = (_state(config) or {}).get("hermes_home")
    if home and os.environ.get("HERMES_HOME") == home:
        del os.environ["HERMES_HOME"]
        shutil.rmtree(home, ignore_errors=True)


def _read_replay(config: pytest.Config) -> dict[str, Any] | None:
    """The ``--conformance-replay`` file's content (None without the option).

    Raises:
        pytest.UsageError: the file cannot be read, is not a replay file, or names a check this kit
            does not have (the known ids are listed).
    """
    path = config.getoption("--conformance-replay")
    if not path:
        return None
    from conformance import registry
    from conformance.runner import load_replay

    try:
        replay = load_replay(Path(path))
        registry.get(replay["check"])
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    except KeyError:
        raise pytest.UsageError(
            f"--conformance-replay {path}: the file is for check {replay['check']!r}, which "
            "this kit does not have (the check ids are the test ids: pytest --engine=... "
            "--collect-only -q). Replay a file written by this version of the kit, or rerun "
            "the checks to write a new one."
        ) from None
    return replay


def _state(config: pytest.Config) -> dict[str, Any] | None:
    return config.stash.get(_KEY, None)


def hang_budget(config: pytest.Config) -> HangBudget | None:
    """The run's :class:`~conformance.timeouts.HangBudget`, shared by the checks and the scenario
    items (``--conformance-max-timeouts``); None when this plugin found no engine."""
    state = _state(config)
    return None if state is None else state["hangs"]


def pytest_report_header(config: pytest.Config):
    """Header lines: engine, kit and contract versions, host ABC, profile, CONFORMANCE_* env vars, replay."""
    state = _state(config)
    if state is None:
        if config.stash.get(_FIXTURE_ROUTE, False):
            return [
                _header_line(config, "from the conformance_engine_factory fixture (conftest.py)")
            ]
        return None
    factory: EngineFactory = state["factory"]
    lines = [_header_line(config, factory.repro_args())]
    env = sorted(k for k in os.environ if k.startswith("CONFORMANCE_"))
    if env:  # typos in env var names show up here
        lines.append("conformance env: " + ", ".join(f"{k}={os.environ[k]}" for k in env))
    if state.get("replay"):
        lines.append(
            f"conformance: replaying {config.getoption('--conformance-replay')} "
            f"(check {state['replay']['check']})"
        )
    return lines


def _header_line(config: pytest.Config, engine: str) -> str:
    """The header's first line: engine, kit and contract versions, host ABC, host profile, Hypothesis profile."""
    from conformance import CONTRACT_VERSION, __version__
    from conformance.context import in_ci
    from simulator.host.shim import abc_info

    random_mode = config.getoption("--conformance-random") and not in_ci()
    return (
        f"conformance: engine {engine} | context-engine-kit {__version__} | "
        f"contract {CONTRACT_VERSION} | host ABC {abc_info().label()} | "
        f"host profile {config.getoption('--host-profile')} | "
        f"profile {config.getoption('--conformance-profile')} "
        f"({'random, seed ' + str(config.getoption('--conformance-seed')) if random_mode else 'derandomized'})"
    )


@pytest.fixture(scope="session")
def conformance_engine_factory(pytestconfig: pytest.Config):
    """Zero-argument callable returning a fresh engine; override it in your conftest.py."""
    state = _state(pytestconfig)
    if state is None:
        pytest.skip(
            "no engine given: pass --engine=MODULE:ATTR or override conformance_engine_factory"
        )
    return state["factory"]


@pytest.fixture(scope="session")
def conformance_context(pytestconfig: pytest.Config, conformance_engine_factory) -> CheckContext:
    """The :class:`CheckContext` shared by all checks of this session."""
    state = _state(pytestconfig) or {}
    ctx = CheckContext(
        conformance_engine_factory,
        profile=pytestconfig.getoption("--conformance-profile"),
        derandomize=not pytestconfig.getoption("--conformance-random"),
        seed=pytestconfig.getoption("--conformance-seed"),
        plugin_dir=pytestconfig.getoption("--engine-plugin"),
        # the option belongs to the scenarios sub-plugin (conformance.scenarios.plugin)
        scenarios=not pytestconfig.getoption("--conformance-no-scenarios", default=False),
        shrink=not pytestconfig.getoption("--conformance-no-shrink"),
        host_profile=pytestconfig.getoption("--host-profile"),
        extra_capabilities=frozenset(
            c.strip()
            for c in pytestconfig.getoption("--conformance-capabilities").split(",")
            if c.strip()
        ),
    )
    if ctx.seed is None and not ctx.derandomize:
        import random as _random

        ctx.seed = _random.SystemRandom().randrange(2**32)  # printed in failure files
    ctx.timeout = check_timeout(pytestconfig)
    ctx.hangs = hang_budget(pytestconfig) or ctx.hangs
    if state.get("replay"):
        ctx.replay = dict(state["replay"]["example"].get("draws") or {})
    return ctx


class _RunOptions:
    def __init__(self, config: pytest.Config, factory: Any):
        self.strict = bool(config.getoption("--conformance-strict"))
        failures = config.getoption("--conformance-failures-dir")
        self.failures_dir = (
            Path(failures) if failures else Path(str(config.rootpath)) / ".conformance" / "failures"
        )
        # an engine from the conftest fixture: rerun the same test files (the conftest supplies it)
        self.spec = (
            factory.repro_args()
            if isinstance(factory, EngineFactory)
            else " ".join(config.args or ())
        )
        if config.getoption("--host-profile") != "documented":
            self.spec += f" --host-profile={config.getoption('--host-profile')}"
        extra = (_state(config) or {}).get("file_xfails") or {}
        try:
            self.xfails = expected_failures(build_engine(factory, check_timeout(config)), extra)
        except Exception:  # the checks report a constructor that raises or hangs
            self.xfails = dict(extra)

    def __call__(self, chk) -> dict[str, Any]:
        repro = " ".join(p for p in ("pytest", self.spec, f"-k '{chk.id}'") if p)
        return {
            "repro": repro,
            "failures_dir": self.failures_dir,
            "engine_spec": self.spec,
            "xfails": self.xfails,
        }


@pytest.fixture(scope="session")
def conformance_run_options(pytestconfig: pytest.Config, conformance_engine_factory):
    """Options for :func:`conformance.runner.run_check` (repro line, failures dir, xfails)."""
    return _RunOptions(pytestconfig, conformance_engine_factory)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items) -> None:
    """Deselect all but the replayed check; warn about unmatched xfails; attach clause/level/since/kind as junit user_properties."""
    from conformance import CONTRACT_VERSION, registry

    state = _state(config) or {}
    if state.get("replay"):
        wanted = state["replay"]["check"]
        keep = [
            i
            for i in items
            if getattr(i, "callspec", None) is None or i.callspec.params.get("check_id") == wanted
        ]
        dropped = [i for i in items if i not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    if state.get("file_xfails"):
        from conformance.runner import unmatched_xfails

        for key in unmatched_xfails(state["file_xfails"], registry.all_checks()):
            warnings.warn(
                pytest.PytestConfigWarning(
                    f"--conformance-xfails: {key!r} matches no check id, id prefix or clause"
                ),
                stacklevel=2,
            )
    for item in items:
        callspec = getattr(item, "callspec", None)
        if (
            callspec is None
            or "check_id" not in callspec.params
            or item.originalname != "test_contract"
        ):
            continue
        chk = registry.get(callspec.params["check_id"])
        item.user_properties += [
            ("conformance_check", chk.id),
            ("clause", chk.clause),
            ("level", chk.level),
            ("since", chk.since),
            ("kind", chk.kind),
            ("contract_version", CONTRACT_VERSION),
        ]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Show conformance failures as their one-paragraph message (no kit traceback)."""
    report = yield
    if call.excinfo is not None and call.excinfo.errisinstance(
        (ConformanceFailure, ConformanceError)
    ):
        report.longrepr = str(call.excinfo.value)
        report.conformance_outcome = (
            "error" if call.excinfo.errisinstance(ConformanceError) else "failed"
        )
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Fold each conformance item report into the verdict (also under xdist, on the controller)."""
    verdict = _ACTIVE_VERDICT.get("v")
    if verdict is None:
        return
    props = dict(report.user_properties or ())
    if "conformance_check" in props:
        verdict.record_report(report, props)
    elif report.failed:
        verdict.other_failures += 1


_ACTIVE_VERDICT: dict[str, Any] = {}


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session: pytest.Session):
    """Start a fresh verdict for this session; then, after pytest has printed its header,
    build one engine (under ``--conformance-timeout``): a constructor that raises or hangs
    is a usage error naming it."""
    state = _state(session.config)
    _ACTIVE_VERDICT["v"] = state["verdict"] if state else verdict_mod.Verdict()
    result = yield
    if state is not None:
        _probe_engine(state["factory"], check_timeout(session.config))
    return result


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    """Print the verdict by clause and the verdict line, once: on the xdist controller, not on its workers
    (a worker's verdict holds only its share of the items, and its terminal is not the user's)."""
    verdict: verdict_mod.Verdict = _ACTIVE_VERDICT.get("v")
    if verdict is None or hasattr(config, "workerinput"):
        return
    if not verdict.results:
        if _state(config) is not None and not config.option.collectonly:
            terminalreporter.write_line(
                "verdict: NO CHECK RAN - every conformance check was deselected "
                "(-k, -m or --deselect); widen the selection"
            )
        return
    for line in verdict.summary_lines(strict=config.getoption("--conformance-strict")):
        terminalreporter.write_line(line)


@pytest.hookimpl(trylast=True)  # after plugins (syrupy) that OR the original exit status back in
def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    """Apply the exit rules (MUST fails; SHOULD only with --conformance-strict; no check ran = failure) and write the JSON verdict."""
    if hasattr(session.config, "workerinput"):
        return  # xdist worker: the controller decides
    verdict: verdict_mod.Verdict = _ACTIVE_VERDICT.get("v")
    state = _state(session.config)
    if verdict is None or (state is None and not verdict.results):
        return
    strict = session.config.getoption("--conformance-strict")
    if session.config.option.collectonly:
        return
    if state is not None and not verdict.ran_any():
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    elif (
        session.exitstatus == pytest.ExitCode.TESTS_FAILED
        and not verdict.has_blocking_failure(strict=strict)
        and verdict.only_conformance_failures
    ):
        session.exitstatus = pytest.ExitCode.OK
    path = session.config.getoption("--conformance-json")
    if path and state is not None:
        verdict.write_json(
            Path(path),
            engine=state["factory"],
            strict=strict,
            host_profile=session.config.getoption("--host-profile"),
        )
