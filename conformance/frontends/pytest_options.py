"""The pytest front end's options (:mod:`conformance.frontends.option_registry`), read once
into the run's session (:func:`build_session`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from conformance.authoring.budget import DEFAULT_BUDGET_S
from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
from conformance.authoring.hosts import parse_hosts
from conformance.authoring.hypothesis_profiles import PROFILES, kit_profile
from conformance.clauses.errors import KitUsageError, pytest_command
from conformance.frontends.option_registry import (
    ENV_ENGINE,
    ENV_ENGINE_KWARGS,
    INI_BUDGET,
    INI_HOST_PROFILE,
    INI_PROFILE,
)
from conformance.run import replay as replays
from conformance.run.conformance_session import ConformanceSession
from conformance.run.options import RunOptions, read_xfails_file
from conformance.run.probe import probe_problem
from conformance.runtime.engine_loading import (
    EngineFactory,
    EngineSpecError,
    deferred_engine_factory,
    deferred_plugin_factory,
    factory_from_record,
    is_engine_word,
    parse_kwargs,
)
from conformance.runtime.supervisor import DEFAULT_MEMORY_LIMIT
from conformance.runtime.timeouts import DEFAULT_MAX_TIMEOUTS

#: The key of pytest-xdist's ``workerinput`` that carries the controller's seed to a worker.
WORKER_SEED = "conformance_seed"


class Inert(Exception):
    """This pytest run has no engine and no fixture route: the plugin stays out of it."""


def ini_text(config: pytest.Config, key: str) -> str:
    """The ini key ``key`` as stripped text ("" when it is not set).

    Raises:
        KitUsageError: the file gives it as something other than text; says to quote it.
    """
    try:
        value = config.getini(key)
    except (TypeError, ValueError) as exc:
        raise KitUsageError(
            f"ini key {key}: {exc}; write its value as text (quoted in a TOML file)"
        ) from None
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value)
    return str(value or "").strip()


def profile_name(config: pytest.Config) -> str:
    """The Hypothesis profile (one of :data:`~conformance.authoring.hypothesis_profiles.PROFILES`):
    ``--conformance-profile``, else ``--hypothesis-profile`` when it names one of the kit's
    (``conformance-thorough``), else the ini key ``conformance_profile``, else ``default``.

    Raises:
        KitUsageError: the ini key names no profile; the message lists them.
    """
    given = config.getoption("--conformance-profile")
    given = given or kit_profile(config.getoption("hypothesis_profile", None))
    ini = "" if given else ini_text(config, INI_PROFILE)
    if ini and ini not in PROFILES:
        raise KitUsageError(
            f"ini key {INI_PROFILE} = {ini}: not a profile; give one of "
            f"{', '.join(sorted(PROFILES))}"
        )
    return given or ini or "default"


def host_profile_text(config: pytest.Config) -> str:
    """The host profile text: ``--host-profile``, else the ini key ``conformance_host_profile``,
    else "" (the default hosts); the option's value is checked with the run's options.

    Raises:
        KitUsageError: the ini key names an unknown host profile; the message lists them.
    """
    given = config.getoption("--host-profile")
    ini = "" if given else ini_text(config, INI_HOST_PROFILE)
    try:
        if ini:
            parse_hosts(ini)
    except ValueError as exc:
        raise KitUsageError(f"ini key {INI_HOST_PROFILE} = {ini}: {exc}") from None
    return given or ini


def _budget(config: pytest.Config) -> float:
    """``--conformance-budget``, else the ini key (checked here), else the default, in seconds."""
    value = config.getoption("--conformance-budget")
    ini = "" if value is not None else ini_text(config, INI_BUDGET)
    if not ini:
        return DEFAULT_BUDGET_S if value is None else float(value)
    try:
        value = float(ini)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise KitUsageError(
            f"ini key {INI_BUDGET} = {ini}: give a finite number of seconds, 0 or more "
            f"(0: no budget; default {DEFAULT_BUDGET_S:g})"
        )
    return value


def _option(config: pytest.Config, name: str, default: Any) -> Any:
    """The option ``name``, else (not given) ``default``."""
    value = config.getoption(name)
    return default if value is None else value


def _memory_limit(config: pytest.Config) -> int | None:
    """``--conformance-memory-limit`` (GiB) in bytes (None: no cap)."""
    value = config.getoption("--conformance-memory-limit")
    if value is None:
        return DEFAULT_MEMORY_LIMIT
    if value != value or value in (float("inf"), float("-inf")):  # NaN or infinite
        raise KitUsageError(
            f"--conformance-memory-limit={value}: give a finite number of GiB (default 4; 0: none)"
        )
    if value != 0 and value < 0.25:
        raise KitUsageError(
            f"--conformance-memory-limit={value:g}: give at least 0.25 GiB (default 4), or 0 "
            "for no cap"
        )
    return None if value == 0 else int(value * 1024**3)


def take_engine_word(config: pytest.Config) -> None:
    """Take the engine given as a positional word (``pytest mypkg:Engine``) out of the test
    paths pytest parsed (``config.args``) and make it the ``--engine`` option.

    Raises:
        pytest.UsageError: two engines (two such words, or one and ``--engine``).
    """
    words = [a for a in config.args if is_engine_word(a)]
    if not words:
        return
    given = config.getoption("--engine")
    if len(words) > 1 or given:
        first, second = (given, words[0]) if given else words[:2]
        raise pytest.UsageError(
            f"give one engine: {first!r} and {second!r} both look like MODULE:ATTR. Run the "
            "checks once per engine (each writes its own failure files)."
        )
    config.option.engine = words[0]
    config.args[:] = [a for a in config.args if a != words[0]]


def _setting(config: pytest.Config, option: str, env: str, ini: str) -> tuple[str | None, str]:
    """The value of ``option``, else of the environment variable ``env``, else of the ini key
    ``ini`` (None: none is set), and where it came from ("": the command line, or nowhere)."""
    if config.getoption(option):
        return config.getoption(option), ""
    if os.environ.get(env):
        return os.environ[env], f"the environment variable {env}"
    value = (config.getini(ini) or "").strip()
    if value:
        return value, f"the ini key {ini} ({config.inipath or 'the ini file'})"
    return None, ""


def engine_spec(config: pytest.Config) -> str | None:
    """The engine spec from the option, the env var, or the ini key (in that order)."""
    return _setting(config, "--engine", ENV_ENGINE, "conformance_engine")[0]


def engine_origin(config: pytest.Config) -> str:
    """Where the engine spec came from when not from the command line (``the environment
    variable CONFORMANCE_ENGINE``, ``the ini key conformance_engine (<ini file>)``), else ""."""
    return _setting(config, "--engine", ENV_ENGINE, "conformance_engine")[1]


def from_origin(message: str, config: pytest.Config) -> str:
    """``message`` (an engine error that says ``--engine=...``) with where the engine was
    really given, when that was not the command line (:func:`engine_origin`)."""
    origin = engine_origin(config)
    if not origin:
        return message
    return (
        f"{message.rstrip()} (the engine was given by {origin}, not on the command line; "
        "fix it there or give --engine)"
    )


def engine_kwargs_text(config: pytest.Config) -> str | None:
    """The ``--engine-kwargs`` JSON text from the option, the env var, or the ini key."""
    config.getini("conformance_engine_kwargs")  # read first: a malformed key is refused anyway
    return _setting(config, "--engine-kwargs", ENV_ENGINE_KWARGS, "conformance_engine_kwargs")[0]


def snapshots_dir(config: pytest.Config, factory: EngineFactory | None) -> Path | None:
    """The engine's snapshot folder when the snapshot tier is on, else None (kit clause D1):
    under ``--conformance-snapshots-dir`` or ``<rootdir>/.conformance/snapshots``, on with
    ``--conformance-snapshots`` or ``--snapshot-update``, or when the folder exists."""
    if factory is None:
        return None
    base = config.getoption("--conformance-snapshots-dir")
    root = (config.invocation_params.dir / base).resolve() if base else None
    directory = (root or config.rootpath / ".conformance" / "snapshots") / factory.slug
    on = (
        config.getoption("--conformance-snapshots")
        or bool(config.getoption("--snapshot-update", default=False))
        or directory.is_dir()
    )
    return directory if on else None


def _factory(config: pytest.Config, replay: dict | None, given: float) -> EngineFactory | None:
    # resolved in a child (engine_loading); an import is no engine call: the per-call limit
    # (``given``) bounds it only when longer (and valid: a bad one is reported with the options)
    spec, plugin_dir = engine_spec(config), config.getoption("--engine-plugin")
    timeout = given if DEFAULT_CHECK_TIMEOUT_S < given < float("inf") else DEFAULT_CHECK_TIMEOUT_S
    if spec:
        kwargs = parse_kwargs(engine_kwargs_text(config))
        return deferred_engine_factory(spec, kwargs, timeout=timeout)
    if plugin_dir:
        return deferred_plugin_factory(plugin_dir, timeout=timeout)
    if replay is not None:
        record = replay.get("engine")
        if isinstance(record, str):
            return deferred_engine_factory(record, timeout=timeout)
        return factory_from_record(record, deferred=True)
    return None


def build_session(config: pytest.Config, *, fixture_route: bool) -> ConformanceSession:
    """The run's session from the pytest options.

    Raises:
        Inert: no engine given and no conftest fixture route.
        pytest.UsageError: a bad option value or engine (one paragraph, what to do).
    """
    opt = config.getoption
    xfails, replay_file = opt("--conformance-xfails"), opt("--conformance-replay")
    failures = opt("--conformance-failures-dir") or config.rootpath / ".conformance" / "failures"
    timeout = float(_option(config, "--conformance-timeout", DEFAULT_CHECK_TIMEOUT_S))
    worker = getattr(config, "workerinput", {})  # a pytest-xdist worker's: the controller's seed
    try:
        # a file for a check this kit lacks is refused there
        replay = replays.load(Path(replay_file)) if replay_file else None
        factory = _factory(config, replay, timeout)
        if factory is None and not fixture_route:
            raise Inert()
        options = RunOptions(
            profile=profile_name(config),
            derandomize=not opt("--conformance-random"),
            seed=_option(config, "--conformance-seed", worker.get(WORKER_SEED)),
            timeout=timeout,
            max_timeouts=int(_option(config, "--conformance-max-timeouts", DEFAULT_MAX_TIMEOUTS)),
            shrink=not opt("--conformance-no-shrink"),
            strict=bool(opt("--conformance-strict")),
            # a replayed failure runs on the host it was found on, unless the run names one
            host_profile=host_profile_text(config) or str((replay or {}).get("host_profile") or ""),
            capabilities=frozenset(c.strip() for c in opt("--conformance-capabilities").split(",")),
            xfails=read_xfails_file(xfails) if xfails else {},
            replay=replay,
            replay_file=os.path.abspath(replay_file) if replay_file else None,
            failures_dir=Path(failures),
            scenarios=not opt("--conformance-no-scenarios"),
            snapshots_dir=snapshots_dir(config, factory),
            plugin_dir=opt("--engine-plugin"),
            budget=_budget(config),
            memory_limit=_memory_limit(config),
            isolation=opt("--conformance-isolation"),
        )
        # the fixture route: rerun the same test files (the conftest supplies the engine)
        command = " ".join([pytest_command(), *(config.args or ())]) if factory is None else None
        return ConformanceSession(options, factory, command=command)
    except EngineSpecError as exc:
        raise pytest.UsageError(from_origin(str(exc), config)) from None
    except KitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def probe_or_raise(session: ConformanceSession, config: pytest.Config) -> None:
    """Probe the engine up front, in a supervised child (:func:`probe_problem`): a constructor
    that raises or hangs, or a factory that returns no engine, is one usage error instead of
    the same error in every case.

    Raises:
        pytest.UsageError: naming the engine's options, where it was given, and what to do.
    """
    try:
        declared = session.declarations
        what = session.factory.cli_args() or repr(session.factory.target)
        problem = probe_problem(declared, what, not_run="check")
    except KitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if problem:
        raise pytest.UsageError(from_origin(problem, config))
