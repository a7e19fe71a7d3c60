"""The pytest front end's options, read once into the run's session.

:mod:`conformance.frontends.option_registry` registers every ``--engine``/``--conformance-*``
option and ini key (:func:`add_options`, re-exported here); :func:`build_session` turns a
pytest config into a :class:`~conformance.run.conformance_session.ConformanceSession` (or
raises :class:`Inert` when the run has no engine), with every bad value a
``pytest.UsageError`` that says what was wrong and what to do;
:func:`take_engine_word` takes the engine given as ``MODULE:ATTR`` out of the test paths;
:mod:`conformance.frontends.header` writes the pytest header.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
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
    add_options,
)
from conformance.run.conformance_session import ConformanceSession
from conformance.run.options import RunOptions, read_xfails_file
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


@dataclass
class Built:
    """What :func:`build_session` made: the session (and the factory it was bound to)."""

    session: ConformanceSession


def ini_text(config: pytest.Config, key: str) -> str:
    """The ini key ``key`` as stripped text ("" when it is not set).

    Raises:
        KitUsageError: the configuration file gives it as something other than text (a TOML
            number or list in a native TOML table); the message says to quote it.
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
    """The Hypothesis profile: ``--conformance-profile``, else Hypothesis' own
    ``--hypothesis-profile`` when it names one of the kit's (``conformance-thorough``), else
    the ini key ``conformance_profile``, else ``default`` (one of
    :data:`~conformance.authoring.hypothesis_profiles.PROFILES`).

    Raises:
        KitUsageError: the ini key names no profile; the message lists them.
    """
    given = config.getoption("--conformance-profile")
    if given:
        return given
    via_hypothesis = kit_profile(config.getoption("hypothesis_profile", None))
    if via_hypothesis:
        return via_hypothesis
    ini = ini_text(config, INI_PROFILE)
    if ini and ini not in PROFILES:
        raise KitUsageError(
            f"ini key {INI_PROFILE} = {ini}: not a profile; give one of "
            f"{', '.join(sorted(PROFILES))}"
        )
    return ini or "default"


def host_profile_text(config: pytest.Config) -> str:
    """The host profile text: ``--host-profile`` (or ``--conformance-host-profile``), else the
    ini key ``conformance_host_profile``, else "" (the default hosts). The option's value is
    checked where the session's options are validated
    (:meth:`conformance.run.options.RunOptions.validate`).

    Raises:
        KitUsageError: the ini key names an unknown host profile; the message lists them.
    """
    given = config.getoption("--host-profile")
    if given:
        return given
    ini = ini_text(config, INI_HOST_PROFILE)
    if ini:
        try:
            parse_hosts(ini)
        except ValueError as exc:
            raise KitUsageError(f"ini key {INI_HOST_PROFILE} = {ini}: {exc}") from None
    return ini


def take_engine_word(config: pytest.Config) -> None:
    """Take the engine given as a positional word (``pytest mypkg:Engine``, ``context-engine-kit
    check mypkg:Engine``) out of the test paths pytest parsed (``config.args``) and make it the
    ``--engine`` option: pytest's own parser has told the words from the options' values.

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


def engine_spec(config: pytest.Config) -> str | None:
    """The engine spec from the option, the env var, or the ini key (in that order)."""
    return (
        config.getoption("--engine")
        or os.environ.get(ENV_ENGINE)
        or (config.getini("conformance_engine") or "").strip()
        or None
    )


def engine_origin(config: pytest.Config) -> str:
    """Where the engine spec came from when not from the command line: ``the environment
    variable CONFORMANCE_ENGINE`` or ``the ini key conformance_engine (<ini file>)``; "" when
    ``--engine`` (or the engine word) gave it, or none is given."""
    if config.getoption("--engine"):
        return ""
    if os.environ.get(ENV_ENGINE):
        return f"the environment variable {ENV_ENGINE}"
    if (config.getini("conformance_engine") or "").strip():
        return f"the ini key conformance_engine ({config.inipath or 'the ini file'})"
    return ""


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
    ini = (config.getini("conformance_engine_kwargs") or "").strip()
    return config.getoption("--engine-kwargs") or os.environ.get(ENV_ENGINE_KWARGS) or ini or None


def _factory(config: pytest.Config, replay: dict[str, Any] | None) -> EngineFactory | None:
    # resolved in a child: the engine's module never runs in this process (engine_loading)
    spec, plugin_dir = engine_spec(config), config.getoption("--engine-plugin")
    # an import is no engine call: the per-call limit bounds it only when it is longer (and
    # valid: a bad value is reported once the options are read)
    given = _timeout(config)
    timeout = given if 0 < given < float("inf") and given > DEFAULT_CHECK_TIMEOUT_S else None
    timeout = timeout or DEFAULT_CHECK_TIMEOUT_S
    if spec:
        return deferred_engine_factory(
            spec, parse_kwargs(engine_kwargs_text(config)), timeout=timeout
        )
    if plugin_dir:
        return deferred_plugin_factory(plugin_dir, timeout=timeout)
    if replay is not None:
        record = replay.get("engine")
        if isinstance(record, str):
            return deferred_engine_factory(record, timeout=timeout)
        return factory_from_record(record, deferred=True)
    return None


def _replay(config: pytest.Config) -> dict[str, Any] | None:
    path = config.getoption("--conformance-replay")
    if not path:
        return None
    from conformance.run import replay

    return replay.load(Path(path))  # a file for a check this kit lacks is refused there


def snapshots_dir(config: pytest.Config, factory: EngineFactory | None) -> Path | None:
    """The engine's snapshot folder when the snapshot tier is on, else None (kit clause D1).

    The base is ``--conformance-snapshots-dir`` (relative to the folder pytest was started
    from) or ``<rootdir>/.conformance/snapshots``; the tier is on with
    ``--conformance-snapshots`` or ``--snapshot-update``, or when the folder exists.
    """
    if factory is None:
        return None
    base = config.getoption("--conformance-snapshots-dir")
    root = (
        (config.invocation_params.dir / base).resolve()
        if base
        else Path(str(config.rootpath)) / ".conformance" / "snapshots"
    )
    directory = root / factory.slug
    on = (
        config.getoption("--conformance-snapshots")
        or bool(config.getoption("--snapshot-update", default=False))
        or directory.is_dir()
    )
    return directory if on else None


def build_session(config: pytest.Config, *, fixture_route: bool) -> Built:
    """The run's session from the pytest options.

    Raises:
        Inert: no engine given and no conftest fixture route.
        pytest.UsageError: a bad option value or engine (one paragraph, what to do).
    """
    try:
        replay = _replay(config)
        factory = _factory(config, replay)
        if factory is None and not fixture_route:
            raise Inert()
        options = RunOptions(
            profile=profile_name(config),
            derandomize=not config.getoption("--conformance-random"),
            seed=_seed(config),
            timeout=_timeout(config),
            max_timeouts=_max_timeouts(config),
            shrink=not config.getoption("--conformance-no-shrink"),
            strict=bool(config.getoption("--conformance-strict")),
            # a replayed failure runs on the host it was found on, unless the run names one
            host_profile=host_profile_text(config) or str((replay or {}).get("host_profile") or ""),
            capabilities=frozenset(
                c.strip() for c in config.getoption("--conformance-capabilities").split(",")
            ),
            xfails=read_xfails_file(config.getoption("--conformance-xfails"))
            if config.getoption("--conformance-xfails")
            else {},
            replay=replay,
            replay_file=os.path.abspath(config.getoption("--conformance-replay"))
            if config.getoption("--conformance-replay")
            else None,
            failures_dir=Path(config.getoption("--conformance-failures-dir"))
            if config.getoption("--conformance-failures-dir")
            else Path(str(config.rootpath)) / ".conformance" / "failures",
            scenarios=not config.getoption("--conformance-no-scenarios"),
            snapshots_dir=snapshots_dir(config, factory),
            plugin_dir=config.getoption("--engine-plugin"),
            budget=_budget(config),
            memory_limit=_memory_limit(config),
            isolation=config.getoption("--conformance-isolation"),
        )
        command = None
        if (
            factory is None
        ):  # the fixture route: rerun the same test files (the conftest supplies it)
            command = " ".join([pytest_command(), *(config.args or ())])
        return Built(ConformanceSession(options, factory, command=command))
    except EngineSpecError as exc:
        raise pytest.UsageError(from_origin(str(exc), config)) from None
    except KitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def _timeout(config: pytest.Config) -> float:
    value = config.getoption("--conformance-timeout")
    return DEFAULT_CHECK_TIMEOUT_S if value is None else float(value)


def _budget(config: pytest.Config) -> float:
    """``--conformance-budget``, else the ini key ``conformance_budget``, else the default,
    in seconds (the option's range is checked by
    :meth:`~conformance.run.options.RunOptions.validate`).

    Raises:
        KitUsageError: the ini key is not a finite number of seconds, 0 or more.
    """
    value = config.getoption("--conformance-budget")
    if value is not None:
        return float(value)
    ini = ini_text(config, INI_BUDGET)
    if not ini:
        return DEFAULT_BUDGET_S
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


def _memory_limit(config: pytest.Config) -> Any:
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


def _max_timeouts(config: pytest.Config) -> int:
    value = config.getoption("--conformance-max-timeouts")
    return DEFAULT_MAX_TIMEOUTS if value is None else int(value)


def probe_or_raise(session: ConformanceSession, config: pytest.Config) -> None:
    """Probe the engine up front, in a supervised child (the declarations: this process never
    builds an engine): a constructor that raises or hangs, or a factory that returns no engine,
    is one usage error instead of the same error in every case
    (:func:`conformance.run.probe.probe_problem`).

    Raises:
        pytest.UsageError: naming the engine's options (and where the engine was given, from
            ``config``, :func:`from_origin`) and what to do.
    """
    from conformance.run.probe import probe_problem

    try:
        problem = probe_problem(
            session.declarations,
            session.factory.cli_args() or repr(session.factory.target),
            not_run="check",
        )
    except KitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    if problem:
        raise pytest.UsageError(from_origin(problem, config))


def _seed(config: pytest.Config) -> int | None:
    """``--conformance-seed``, else (on a pytest-xdist worker) the controller's drawn seed."""
    seed = config.getoption("--conformance-seed")
    if seed is None:
        seed = getattr(config, "workerinput", {}).get(WORKER_SEED)
    return seed


__all__ = [
    "ENV_ENGINE",
    "ENV_ENGINE_KWARGS",
    "INI_BUDGET",
    "INI_HOST_PROFILE",
    "INI_PROFILE",
    "Inert",
    "add_options",
    "build_session",
    "engine_spec",
    "host_profile_text",
    "ini_text",
    "probe_or_raise",
    "profile_name",
    "snapshots_dir",
    "take_engine_word",
]
