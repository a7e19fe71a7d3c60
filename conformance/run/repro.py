"""The ``Repro:`` commands: what reruns a case, as the last words of its failure message.

A command base selects the engine and the host again: an explicit base the front end gives
(the conftest fixture route: its test files), or this environment's pytest
(:func:`~conformance.clauses.errors.pytest_command`) with the factory's own options
(``--engine=...``, ``--engine-plugin=...``), then the options that change what a case does
(host profiles, added capabilities, the per-call limit). :func:`repro` adds what selects the
case: the failure file when one was written (or is being replayed), else the case's own rerun
(by id, by scenario file, by snapshot case), which also names the profile (it decides which
examples a case draws). :func:`before_repro` puts a note before the command, so the command
still ends the line and pastes as printed.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
from conformance.authoring.hosts import host_of, spec_text
from conformance.clauses.errors import pytest_command

if TYPE_CHECKING:
    from conformance.authoring.case import Case
    from conformance.run.options import RunOptions
    from conformance.runtime.engine_loading import EngineFactory


def command_for(
    options: RunOptions, factory: EngineFactory | None, explicit: str | None, host: str | None
) -> str:
    """The command base that selects the engine of ``factory`` again on ``host`` (None: the
    run's hosts; a rerun of one host-dependent case plays that host alone).

    Args:
        options: the run's options (plugin folder, hosts, capabilities, per-call limit).
        factory: the engine factory (its ``cli_args()``), or None when not bound yet.
        explicit: the front end's own base (replaces pytest and the factory's options).
        host: the host profile the case was played on, or None.
    """
    if explicit is not None:
        base = explicit
    else:
        args = factory.cli_args() if factory is not None else ""
        base = f"{pytest_command()} {args}".strip()
    o = options
    if o.plugin_dir and "--engine-plugin" not in base:
        base += f" --engine-plugin={o.plugin_dir}"
    hosts = (host,) if host else o.host_profiles
    if hosts != ("documented",) or len(o.host_profiles) > 1:
        base += f" --host-profile={spec_text(hosts)}"
    if o.capabilities:
        base += f" --conformance-capabilities={','.join(sorted(o.capabilities))}"
    if o.timeout != DEFAULT_CHECK_TIMEOUT_S and "--conformance-timeout" not in base:
        base += f" --conformance-timeout={o.timeout:g}"  # it decides what a hang is
    return base


def rerun_command_for(
    options: RunOptions, factory: EngineFactory | None, explicit: str | None, host: str | None
) -> str:
    """:func:`command_for` plus the options that decide which examples a case draws (profile),
    for the reruns by id that have no failure file (arguments as :func:`command_for`)."""
    return command_for(options, factory, explicit, host) + (
        f" --conformance-profile={options.profile}" if options.profile != "default" else ""
    )


def repro(
    case: Case,
    options: RunOptions,
    factory: EngineFactory | None,
    explicit: str | None,
    replay_file: str | None = None,
    violation: Any = None,
) -> str:
    """The ``Repro:`` command of ``case``: the failure file when one was written (or the one
    this run replays, ``options.replay_file``), else the case's own rerun (``case.repro``; by
    id for a case without one). ``violation``: the finding reported, passed to ``case.repro``.
    """
    host = host_of(case)
    replay_file = replay_file or options.replay_file
    if replay_file:
        # joined to its option: a value standing alone is a path argument to pytest, which
        # would take its rootdir (and ini file) from the failures folder
        base = command_for(options, factory, explicit, host)
        return f"{base} --conformance-replay={shlex.quote(str(replay_file))}"
    rerun = rerun_command_for(options, factory, explicit, host)
    if hasattr(case, "repro"):
        return case.repro(rerun, violation)
    return f"{rerun} -k '{case.id}'"


def before_repro(message: str, note: str) -> str:
    """``message`` with ``note`` put before its ``Repro:`` command (so the command ends the
    line and pastes as printed), or at its end when it has none."""
    head, sep, command = message.partition(" Repro: ")
    return f"{head} {note}{sep}{command}" if sep else f"{message} {note}"


__all__ = ["before_repro", "command_for", "repro", "rerun_command_for"]
