"""``context-engine-kit check``'s (and ``scenario``'s) plugin object, :class:`CheckRun`:
``check`` hands pytest its command line and one :class:`CheckRun`; pytest's parser reads the
command line, the kit's plugin builds the run (:mod:`conformance.plugin`), and this object
keeps what ``check`` needs back as objects and prints ``check``'s two opening lines.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import KW_ONLY, dataclass, field
from os.path import exists
from pathlib import Path
from typing import Any, NoReturn

import pytest

#: What ``check`` says when pytest ran but no engine was given.
NO_ENGINE = (
    "give the engine as MODULE:ATTR, or a plugin folder with --engine-plugin DIR (or a failure "
    "file with --conformance-replay FILE, which names its engine)."
)


class CommandLineRefused(Exception):
    """An option parser refused a command line (pytest's, for ``check``, or a
    :class:`OneLineParser`); ``str()`` is one line saying what it refused (:func:`refusal`)."""


class OneLineParser(argparse.ArgumentParser):
    """The parser of the options ``check`` and ``scenario`` read themselves: a refusal raises
    :class:`CommandLineRefused` (one line) instead of argparse's usage block and exit 2."""

    def error(self, message: str) -> NoReturn:  # noqa: D102 - argparse's hook
        raise CommandLineRefused(message)


def refusal(exc: pytest.UsageError) -> str:
    """The line of a ``pytest.UsageError`` raised by pytest's option parser: what follows its
    ``PROG: error: `` (PROG is ``pytest.main()`` or the script's name, by pytest release), with
    a hint when the option needs pytest-xdist (``-n``)."""
    text = str(exc).strip()
    # the usage block, the error, then (recent pytest) the inifile and rootdir lines
    refused = text.rsplit(": error: ", 1)[-1].splitlines()[0].strip().rstrip(".")
    if "unrecognized arguments:" in refused and re.search(
        r"(?:^|\s)(?:-n\S*|--numprocesses\S*|--dist\S*)(?:\s|$)",
        refused.split(":", 1)[1] + " ",
    ):
        refused += " (-n and --dist need pytest-xdist: pip install pytest-xdist)"
    return refused


@dataclass(eq=False, repr=False)
class CheckRun:
    """The pytest plugin object of one ``check`` run (registered through ``pytest.main``'s
    ``plugins``; only in the process that runs ``check``, not on pytest-xdist workers).

    Args:
        failures_default: the failures folder ``check`` chose (under its state dir).
        temporary: the state dir is a temp dir, removed when the run leaves it empty.
        command: ``check``, or ``scenario``: only the scenario expectations selected (what
            ``-m "conformance(kind='scenario')"`` selects, under the user's ``-m`` and ``-k``),
            of the files given, else of the bundled library (the kit's suite).
        library: ``scenario --library``: the bundled library too, with the files given.
    Attributes:
        config: pytest's config once the command line parsed (None before).
        errors: the messages of the usage errors that stopped the run, in order.
        files: the scenario files (test paths) given to ``scenario``.
    """

    failures_default: str
    _: KW_ONLY
    temporary: bool
    command: str = "check"
    library: bool = False
    config: pytest.Config | None = field(default=None, init=False)
    errors: list[str] = field(default_factory=list, init=False)
    files: list[str] = field(default_factory=list, init=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_parse(self, pluginmanager: Any, args: list[str]):
        """Keep the parsed config; turn the parser's refusal into :class:`CommandLineRefused`
        (pytest then prints no usage block: ``check`` prints one line)."""
        try:
            config = yield
        except pytest.UsageError as exc:
            if ": error: " not in str(exc):
                raise  # not the option parser (a -p plugin that does not import ...)
            raise CommandLineRefused(refusal(exc)) from None
        self.config = config
        return config

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_main(self, config: pytest.Config):
        """Before the run is built: ``check``'s first word that names no file or folder is its
        engine, ``MODULE:ATTR`` or not (the engine loader then says what is wrong with it).
        Then keep the usage error that stops the run (configure, start or collection), for the
        ERROR verdict; pytest prints it."""
        from conformance.runtime.engine_loading import is_engine_word

        missing = [a for a in config.args if not (exists(a) or "::" in a or a.startswith("-"))]
        given = config.getoption("--engine") or config.getoption("--engine-plugin")
        if missing and not given and not any(is_engine_word(a) for a in missing):
            config.option.engine = missing[0]
            config.args.remove(missing[0])
        try:
            if self.command == "scenario":
                self._scenario_paths(config)
            return (yield)
        except pytest.UsageError as exc:
            self.errors.append(str(exc))
            raise

    def _scenario_paths(self, config: pytest.Config) -> None:
        """``scenario``: the test paths given are its files; the bundled library (the kit's suite)
        runs when none is given, or with ``--library``.

        Raises:
            pytest.UsageError: a file that is missing or not named ``*.scenario.yaml``, or
                ``--conformance-no-scenarios`` when the bundled library is all it would run.
        """
        from conformance.frontends.pytest_session import SUITE_DIR
        from conformance.runtime.engine_loading import is_engine_word
        from conformance.scenarios import SUFFIX

        given = config.args_source == pytest.Config.ArgsSource.ARGS
        self.files = [a for a in config.args if given and not is_engine_word(a)]
        for name in self.files:
            path = Path(config.invocation_params.dir, name.split("::", 1)[0])
            if not path.exists():
                raise pytest.UsageError(f"{name}: no such file or folder; give a scenario file")
            if path.is_file() and not path.name.endswith(SUFFIX):
                raise pytest.UsageError(
                    f"{name}: a scenario file's name ends with {SUFFIX} (pytest collects only "
                    f"those); rename it, e.g. to {path.name.split('.')[0]}{SUFFIX}"
                )
        if config.getoption("--conformance-no-scenarios") and (self.library or not self.files):
            raise pytest.UsageError(
                "--conformance-no-scenarios leaves out the bundled library, which is what "
                "scenario runs here; give scenario files without --library, or drop the option"
            )
        if self.files and self.library:
            config.args.append(str(SUITE_DIR))

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list) -> None:
        """``scenario``: deselect every item that is not a scenario expectation."""
        if self.command != "scenario":
            return
        keep: list = []
        drop: list = []
        for item in items:
            mark = item.get_closest_marker("conformance")
            (keep if mark and mark.kwargs.get("kind") == "scenario" else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """After the kit's plugin built the run: refuse a run without an engine (pytest would
        collect the folder's own tests)."""
        from conformance.frontends.pytest_session import conformance_session

        session = conformance_session(config)
        if session is None or session.factory is None:
            raise pytest.UsageError(NO_ENGINE)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Print the command's opening lines before pytest's header, once every option and output
        path is checked (a folder that cannot be written is never announced)."""
        from conformance.frontends.header import hosts_line
        from conformance.frontends.pytest_session import conformance_session

        config = session.config
        run = conformance_session(config)
        assert run is not None and run.factory is not None  # pytest_configure refused it
        replay = config.getoption("--conformance-replay")
        given = config.getoption("--engine") or config.getoption("--engine-plugin")
        what = run.factory.cli_args() if given or not replay else f"the engine named in {replay}"
        where = config.getoption("--conformance-failures-dir")
        if where == self.failures_default and self.temporary:
            where += " (a temp dir, removed if the run leaves it empty)"
        cases = "the kit's conformance cases"
        items = "each item of the kit's suite file test_contract.py is one case"
        if self.command == "scenario":
            from conformance.scenarios import LIBRARY_DIR, library_paths

            bundled = f"the {len(library_paths())} bundled scenarios from {LIBRARY_DIR}"
            files = f"the scenario files given{f' and {bundled}' if self.library else ''}"
            cases = files if self.files else f"no FILE given: running {bundled}"
            items = "each expectation is one case"
        print(
            f"context-engine-kit {self.command}: {cases} against {what}, run by pytest ({items}), "
            f"{hosts_line(run.options.host_profiles)}\n"
            f"context-engine-kit {self.command}: failure files go to {where}",
            flush=True,
        )
