"""The files a run writes, checked before it starts; the JSON verdict of a run that could not run.

- :func:`check_writable` tells, before any case runs, whether a file (``--conformance-json``,
  ``--conformance-report``, ``--junit-xml``) or a folder (``--conformance-failures-dir``, the
  CLI's ``--state-dir``) can be written, and raises a
  :class:`~conformance.clauses.errors.KitUsageError` saying what is wrong and what to do. It creates
  missing folders only to try them, and removes again those it made (unless ``keep``).
- :func:`error_verdict` is the JSON verdict of a run stopped by a usage error (``"verdict":
  "ERROR"`` with ``"error"``: the message), so that CI always finds a verdict file;
  :func:`write_error_verdict` writes it.
- As a pytest sub-plugin (registered by :mod:`conformance.plugin`) it checks the run's output
  options once the conformance session is built, and writes the ``ERROR`` verdict to
  ``--conformance-json`` when the run stops with a usage error while configuring (a bad option
  value: :func:`usage_error`, called by the plugin) or starting (an engine constructor that
  raises or hangs).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.clauses.errors import KitUsageError

FILE, DIR = "file", "dir"

#: Output options of the pytest front end: option -> (kind, what it writes).
OUTPUT_OPTIONS = {
    "--conformance-json": (FILE, "the JSON verdict"),
    "--conformance-report": (FILE, "the HTML report"),
    "--junit-xml": (FILE, "the junit XML report"),
    "--conformance-failures-dir": (DIR, "failure files"),
}


#: An example file name per output option, for the message about a folder given as a file.
_EXAMPLES = {"--conformance-report": "report.html", "--report": "report.html"}


def _problem(path: Path, kind: str, keep: bool, option: str = "") -> str | None:
    """Why ``path`` cannot be written (None: it can)."""
    if kind == FILE:
        if path.is_dir():
            name = _EXAMPLES.get(option, "junit.xml" if "junit" in option else "verdict.json")
            return f"it is a folder; give a file name (e.g. {path / name})"
        folder = path.parent
    else:
        if path.exists() and not path.is_dir():
            return "it exists and is not a folder"
        folder = path
    made: list[Path] = []
    probe = folder
    while not probe.exists() and probe.parent != probe:
        made.append(probe)
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, so no folder can be made under it"
    try:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            return f"cannot create the folder {folder} ({exc.strerror or exc})"
        try:
            if kind == FILE and path.exists():
                with open(path, "a", encoding="utf-8"):
                    pass
            else:
                fd, name = tempfile.mkstemp(dir=folder, prefix=".context-engine-kit-probe-")
                os.close(fd)
                os.unlink(name)
        except OSError as exc:
            where = path if kind == FILE and path.exists() else folder
            return f"cannot write to {where} ({exc.strerror or exc})"
        return None
    finally:
        if not keep:
            for folder_made in made:  # deepest first
                try:
                    folder_made.rmdir()
                except OSError:
                    break


def check_writable(
    path: str | os.PathLike,
    *,
    option: str,
    kind: str,
    keep: bool = False,
    base: str | os.PathLike | None = None,
) -> None:
    """Make sure ``path`` (a file or, with ``kind="dir"``, a folder) can be written now, before
    the run: nothing is lost at its end.

    Args:
        path: the value given to ``option``.
        option: the option's name, for the message (``--json``).
        kind: ``"file"`` or ``"dir"``.
        keep: keep the folders made to try it (the CLI's state dir); else they are removed.
        base: the folder a relative ``path`` is relative to (default: the current folder).

    Raises:
        KitUsageError: what is wrong with the path and what to give instead.
    """
    full = Path(os.path.abspath(os.path.join(base or os.getcwd(), os.fspath(path))))
    problem = _problem(full, kind, keep, option)
    if problem:
        thing = "file" if kind == FILE else "folder"
        raise KitUsageError(
            f"{option} {os.fspath(path)}: cannot write there: {problem}. Give a {thing} path "
            "in a folder you can write to."
        )


def error_verdict(
    message: str,
    *,
    engine: Any = None,
    profile: str | None = None,
    host_profile: str | None = None,
    strict: bool = False,
    word: str = "ERROR",
) -> dict[str, Any]:
    """The JSON verdict of a run stopped before any case ran (the shape of
    :meth:`conformance.run.verdict.Verdict.to_json`, ``"verdict": word`` (``ERROR``, or
    ``INTERRUPTED`` for a Ctrl-C before the first case), no results) with ``"error"``:
    ``message``; ``format_version`` first (:func:`conformance.run.verdict_format.versioned`)."""
    from conformance import CONTRACT_VERSION, __version__
    from conformance.run.results import OUTCOMES
    from conformance.run.verdict_format import versioned
    from simulator.host.shim import abc_info

    return versioned(
        {
            "engine": engine,
            "kit_version": __version__,
            "contract_version": CONTRACT_VERSION,
            "host_abc": abc_info().label(),
            "host_profile": host_profile,
            "profile": profile,
            "verdict": word,
            "error": message,
            "strict": bool(strict),
            "counts": {"total": 0, **{o: 0 for o in OUTCOMES}},
            "failures_by_level": {"MUST": 0, "SHOULD": 0},
            "other_failures": 0,
            "snapshot_mismatches": 0,
            "snapshot_errors": 0,
            "results": [],
        }
    )


def write_error_verdict(path: str | os.PathLike, message: str, **kwargs: Any) -> bool:
    """Write :func:`error_verdict` to ``path`` (with
    :func:`conformance.run.verdict_format.write_verdict_json`,
    the one writer of verdict files); False (and nothing written) when ``path`` cannot be
    written (that is then the error the user sees)."""
    from conformance.run.verdict_format import write_verdict_json

    try:
        write_verdict_json(path, error_verdict(message, **kwargs))
    except (OSError, ValueError):
        return False
    return True


def check_output_options(config: pytest.Config) -> None:
    """Check every output option given to this pytest run (:data:`OUTPUT_OPTIONS`), and the
    engine's snapshot folder under ``--snapshot-update``.

    Raises:
        KitUsageError: the first path that cannot be written.
    """
    base = config.invocation_params.dir
    for option, (kind, _what) in OUTPUT_OPTIONS.items():
        value = config.getoption(option, default=None)
        if value:
            check_writable(value, option=option, kind=kind, base=base)
    if config.getoption("--snapshot-update", default=False):
        from conformance.frontends.pytest_session import conformance_session

        session = conformance_session(config)
        folder = session.options.snapshots_dir if session is not None else None
        if folder is not None:
            check_writable(folder, option="--snapshot-update", kind=DIR)


def usage_error(config: pytest.Config, message: str, *, word: str = "ERROR") -> None:
    """A usage error stops this run: write the ERROR verdict to ``--conformance-json`` (on the
    controller; without the option, nothing), naming the engine and profiles the command line
    gave. The caller raises the error. ``word``: ``INTERRUPTED`` for a run stopped (Ctrl-C,
    SIGTERM) before its first case."""
    path = config.getoption("--conformance-json", default=None)
    if not path or hasattr(config, "workerinput"):
        return
    from conformance.frontends.pytest_options import (
        INI_HOST_PROFILE,
        INI_PROFILE,
        engine_kwargs_text,
        engine_spec,
        host_profile_text,
        ini_text,
        profile_name,
    )

    spec, plugin_dir = engine_spec(config), config.getoption("--engine-plugin", default=None)
    engine: Any = {"plugin": plugin_dir} if plugin_dir and not spec else None
    if spec:
        try:
            kwargs = json.loads(engine_kwargs_text(config) or "{}")
        except (ValueError, RecursionError):
            kwargs = engine_kwargs_text(config)
        engine = {"spec": spec, "kwargs": kwargs}
    write_error_verdict(
        Path(config.invocation_params.dir, path),
        message,
        engine=engine,
        profile=_quietly(lambda: profile_name(config), lambda: ini_text(config, INI_PROFILE)),
        host_profile=_quietly(
            lambda: host_profile_text(config) or None,
            lambda: ini_text(config, INI_HOST_PROFILE) or None,
        ),
        strict=bool(config.getoption("--conformance-strict", default=False)),
        word=word,
    )


def _quietly(read: Any, fallback: Any) -> Any:
    """``read()``, or ``fallback()`` when it raises (a bad ini value is the error being
    reported; the ERROR verdict still names what was given), else None."""
    for attempt in (read, fallback):
        try:
            return attempt()
        except Exception:  # the verdict file must be written whatever the value
            continue
    return None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """After the session is built (:mod:`conformance.plugin`): check the output options, so a
    path that cannot be written is a usage error now, not at the end of the run."""
    from conformance.frontends.pytest_session import session_plugin

    if session_plugin(config) is None or hasattr(config, "workerinput"):
        return
    try:
        check_output_options(config)
    except KitUsageError as exc:
        usage_error(config, str(exc))
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionstart(session: pytest.Session):
    """Write the ERROR verdict when the session cannot start (the engine's constructor raises or
    hangs: :func:`conformance.frontends.pytest_options.probe_or_raise`)."""
    try:
        return (yield)
    except pytest.UsageError as exc:
        usage_error(session.config, str(exc))
        raise


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session):
    """Write the ERROR verdict when pytest refuses the test paths at collection (``file or
    directory not found: x``)."""
    try:
        return (yield)
    except pytest.UsageError as exc:
        usage_error(session.config, str(exc))
        raise


__all__ = [
    "OUTPUT_OPTIONS",
    "check_output_options",
    "check_writable",
    "error_verdict",
    "usage_error",
    "write_error_verdict",
]


def engine_record(
    engine: str | None, engine_kwargs: str | None, engine_plugin: str | None
) -> dict[str, Any] | None:
    """How an ERROR verdict names the engine given on a command line, as the JSON verdict and
    failure files do: ``{"spec", "kwargs"}`` (``kwargs`` the text itself when it is not valid
    JSON), ``{"plugin": DIR}`` (absolute), or None when neither is given."""
    from conformance.clauses.errors import EngineSpecError
    from conformance.runtime.engine_loading import parse_kwargs

    if engine:
        try:
            kwargs: Any = parse_kwargs(engine_kwargs)
        except EngineSpecError:
            kwargs = engine_kwargs
        return {"spec": engine, "kwargs": kwargs}
    if engine_plugin:
        return {"plugin": os.path.abspath(engine_plugin)}
    return None
