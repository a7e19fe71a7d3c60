"""The pytest run's output paths, tried before it starts (:func:`check_output_options`), and the
``ERROR`` verdict of a run that a usage error stopped (:func:`usage_error`), so that CI always
finds a verdict file; a pytest sub-plugin (registered by :mod:`conformance.plugin`) whose hooks
call them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.clauses.errors import KitUsageError
from conformance.frontends import pytest_options
from conformance.frontends.pytest_session import conformance_session, session_plugin
from conformance.run.verdict_format import engine_record, write_error_verdict
from conformance.runtime.writable import DIR, FILE, check_writable

#: Output options of the pytest front end: option -> (kind, what it writes).
OUTPUT_OPTIONS = {
    "--conformance-json": (FILE, "the JSON verdict"),
    "--conformance-report": (FILE, "the HTML report"),
    "--junit-xml": (FILE, "the junit XML report"),
    "--conformance-failures-dir": (DIR, "failure files"),
}


def check_output_options(config: pytest.Config) -> None:
    """Check every output option given to this pytest run (:data:`OUTPUT_OPTIONS`), and the
    engine's snapshot folder under ``--snapshot-update``; raises ``KitUsageError`` for the first
    path that cannot be written."""
    base = config.invocation_params.dir
    for option, (kind, _what) in OUTPUT_OPTIONS.items():
        value = config.getoption(option, default=None)
        if value:
            check_writable(value, option=option, kind=kind, base=base)
    if config.getoption("--snapshot-update", default=False):
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
    spec, kwargs = pytest_options.engine_spec(config), pytest_options.engine_kwargs_text(config)
    engine = engine_record(spec, kwargs, config.getoption("--engine-plugin", default=None))
    profile = _quietly(config, pytest_options.profile_name, pytest_options.INI_PROFILE)
    hosts = _quietly(config, pytest_options.host_profile_text, pytest_options.INI_HOST_PROFILE)
    write_error_verdict(
        Path(config.invocation_params.dir, path),
        message,
        engine=engine,
        profile=profile,
        host_profile=hosts or None,
        strict=bool(config.getoption("--conformance-strict", default=False)),
        word=word,
    )


def _quietly(config: pytest.Config, read: Any, ini_key: str) -> Any:
    """``read(config)``, or the ini key ``ini_key`` when it raises (a bad ini value is the error
    being reported; the ERROR verdict still names what was given), else None."""
    for attempt in (read, lambda config: pytest_options.ini_text(config, ini_key)):
        try:
            return attempt(config)
        except Exception:  # the verdict file must be written whatever the value
            continue
    return None


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config):
    """Write the ERROR verdict when a usage error stops the run: a bad option value or engine,
    an output path that cannot be written or no engine (configure), an engine constructor that
    raises or hangs (session start), a test path that does not exist (collection)."""
    try:
        return (yield)
    except pytest.UsageError as exc:
        usage_error(config, str(exc))
        raise


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """After the session is built (:mod:`conformance.plugin`): check the output options, so a
    path that cannot be written is a usage error now, not at the end of the run."""
    if session_plugin(config) is None or hasattr(config, "workerinput"):
        return
    try:
        check_output_options(config)
    except KitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None


__all__ = ["OUTPUT_OPTIONS", "check_output_options", "usage_error"]
