"""``context-engine-kit``: the command-line front end. argparse picks the command
(:mod:`conformance.frontends.subcommands`); each command parses its own words.

- ``check MODULE:ATTR [--json FILE] [--state-dir DIR] [pytest/plugin options...]``: the
  conformance checks, through pytest, so every plugin option works (``check`` reads only its own
  two options; pytest parses the rest, the engine word included:
  :mod:`conformance.frontends.check_run`); exit codes: :func:`main`. Failure files go to a temp
  dir (removed when left empty) unless ``--state-dir`` is given; snapshots are the project's, in
  ``./.conformance/snapshots/``. Bad input (paths that cannot be written included) is one
  ``error:`` line and exit 4 before anything runs, and ``--json FILE`` then holds the verdict
  ``ERROR`` with the message.
- ``scenario [FILE...] MODULE:ATTR``: ``check`` with the scenario expectations selected, of the
  files given (none: the bundled library; ``--library``: both).
- ``explain CLAUSE``: a clause's text, its checks, usual causes and fixes.
- ``serve``, ``install-plugin lcm --hermes-home DIR``: the provider simulator over HTTP and the
  LCM plugin's installer, each its own command line (:func:`simulator.provider.serve.main`,
  :func:`reference_engines.lcm.install.main`).

``--version`` prints the kit's version and the contract version it checks. The kit's developer
commands are ``python -m conformance.devtools`` (:mod:`conformance.devtools.__main__`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from functools import partial

from conformance.clauses.errors import KitUsageError
from conformance.frontends.subcommands import Command, command_parser, run_command
from conformance.run.results import PARTIAL_EXIT

USAGE_ERROR = 4  # pytest's exit status for a usage error, which check shares


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def _check_parser(command: str) -> argparse.ArgumentParser:
    """The options ``check`` (or ``scenario``) reads itself; every other word goes to pytest as
    it is. ``scenario`` adds ``--library`` and three short spellings of the kit's options."""
    from conformance.frontends.check_run import OneLineParser
    from conformance.frontends.option_types import Once, file_name

    scenario = command == "scenario"
    parser = OneLineParser(
        prog=f"context-engine-kit {command}",
        usage=f"context-engine-kit {command} "
        + ("[FILE...] " if scenario else "")
        + "MODULE:ATTR | --engine-plugin DIR"
        + ("" if scenario else " | --conformance-replay FILE")
        + " [options] [pytest options]",
        description=(
            "Run *.scenario.yaml files against an engine through the reference host and the "
            "provider simulator (every expectation names its contract clause and level): "
            "check, with the scenario expectations selected. FILE: scenario files; with "
            "none, the bundled library runs, and the first line says so. "
            if scenario
            else "Run the conformance checks against an engine and print a verdict by clause. "
        )
        + "Every other option goes to pytest (e.g. -k V2, --conformance-profile=quick, "
        "--conformance-report=report.html, --junit-xml=junit.xml, --engine-plugin DIR, "
        "--host-profile HOSTS, --engine-kwargs JSON: a JSON object of keyword arguments for the "
        "engine).",
        epilog="pytest-xdist's -n N (cases on N processes) needs pip install pytest-xdist; it "
        "is not part of the kit's dependencies, and on a small, fast engine it is not faster "
        "(each worker pays the start-up). context-engine-kit explain CLAUSE explains a clause "
        "a failure names.",
        allow_abbrev=False,
    )
    add = parser.add_argument
    add(
        "--json",
        type=file_name,
        action=Once,
        metavar="FILE",
        help="write the verdict as JSON (also when the run cannot start: verdict ERROR)",
    )
    add(
        "--state-dir",
        metavar="DIR",
        help="where failure files go (default: a new temp dir, removed when left empty)",
    )
    if scenario:
        add(
            "--library",
            action="store_true",
            help="also run the bundled scenario library with FILE...",
        )
        for short, option, metavar in _SCENARIO_SPELLINGS:  # each kept as pytest's option
            kind: dict = {"action": "append_const", "const": option}
            if metavar:
                kind = {"action": "append", "metavar": metavar, "type": f"{option}={{}}".format}
            add(short, dest="spelled", default=[], help=f"short for {option}", **kind)
    return parser


#: ``scenario``'s short spellings of the kit's pytest options: (spelling, option, metavar).
_SCENARIO_SPELLINGS = (
    ("--timeout", "--conformance-timeout", "SECONDS"),
    ("--report", "--conformance-report", "FILE"),
    ("--strict", "--conformance-strict", None),
)


def _check(argv: list[str], command: str = "check") -> int:
    """``check`` and ``scenario`` (``command``): pytest parses the command line, the kit's plugin
    builds the run, :class:`~conformance.frontends.check_run.CheckRun` brings back the rest."""
    import pytest

    from conformance.frontends.check_run import CheckRun, CommandLineRefused
    from conformance.runtime.writable import DIR, FILE, check_writable

    parser = _check_parser(command)
    if any(a in ("-h", "--help") for a in argv):
        if command == "scenario":
            parser.add_argument("files", nargs="*", metavar="FILE", help="scenario files")
        parser.add_argument(
            "engine_arg",
            nargs="?",
            metavar="MODULE:ATTR",
            help="a ContextEngine subclass or factory (or --engine MODULE:ATTR)",
        )
        parser.print_help()
        return 0
    try:
        args, rest = parser.parse_known_args(argv)
    except CommandLineRefused as exc:
        print(
            f"context-engine-kit {command}: error: {exc}; context-engine-kit {command} --help "
            "lists the options",
            file=sys.stderr,
        )
        return USAGE_ERROR
    json_path = os.path.abspath(args.json) if args.json else None

    def error_verdict(message: str, config: pytest.Config | None, word: str = "ERROR") -> None:
        """Write the verdict ``word`` to ``--json`` (if it can be), naming what pytest parsed, or
        without ``config`` (pytest refused the command line) the engine word."""
        from conformance.frontends.outputs import usage_error
        from conformance.run.verdict_format import engine_record, write_error_verdict
        from conformance.runtime.engine_loading import is_engine_word

        if not json_path:
            return
        if config is not None:
            usage_error(config, message, word=word)
        else:
            spec = next((w for w in rest if is_engine_word(w)), None)
            engine = engine_record(spec, None, None)
            write_error_verdict(json_path, message, engine=engine, word=word)

    for option, value, kind in (("--json", args.json, FILE), ("--state-dir", args.state_dir, DIR)):
        if value:
            try:
                check_writable(value, option=option, kind=kind, keep=kind == DIR)
            except KitUsageError as exc:
                print(f"context-engine-kit {command}: error: {exc}", file=sys.stderr)
                error_verdict(str(exc), None)
                return USAGE_ERROR
    temporary = not args.state_dir
    state = os.path.abspath(args.state_dir or tempfile.mkdtemp(prefix="context-engine-kit-"))
    failures = os.path.join(state, "failures")
    # check's defaults come first (a later value given by the user wins); each value is
    # joined to its option: pytest picks its rootdir from the arguments before it knows the
    # kit's options, so a value standing alone that names an existing file or folder (a
    # --json file from an earlier run, the state dir) would move the rootdir
    pytest_args = [
        "-p",
        "no:cacheprovider",
        # the CLI imported the kit before pytest started; nothing of it needs rewriting
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        # the entry point is named "conformance.plugin" too: a no-op when installed, and
        # what pytest-xdist's workers load when the kit runs from a source tree
        "-p",
        "conformance.plugin",
        f"--conformance-failures-dir={failures}",
        # the project's snapshots, as a plain pytest run there
        f"--conformance-snapshots-dir={os.path.join(os.getcwd(), '.conformance', 'snapshots')}",
        *getattr(args, "spelled", []),
        *rest,
    ] + ([f"--conformance-json={json_path}"] if json_path else [])
    library = bool(getattr(args, "library", False))
    run = CheckRun(failures, temporary=temporary, command=command, library=library)
    before = _stat(json_path) if json_path else None
    try:
        code = int(pytest.main(pytest_args, plugins=[run]))
    except CommandLineRefused as exc:
        message = f"pytest refused the command line: {exc}"
        print(
            f"context-engine-kit {command}: error: {message}; context-engine-kit {command} "
            "--help and pytest --help list the options.",
            file=sys.stderr,
        )
        error_verdict(message, None)
        code = USAGE_ERROR
    except KeyboardInterrupt:  # Ctrl-C while pytest was still starting (before its own handler)
        code = int(pytest.ExitCode.INTERRUPTED)
    finally:
        _settle_state(state, temporary=temporary)
    unwritten = json_path and _stat(json_path) in (None, before)
    if code == int(pytest.ExitCode.INTERRUPTED) and unwritten:  # Ctrl-C before any case
        when = "(Ctrl-C or SIGTERM) before the first case ran"
        print(f"verdict: INTERRUPTED - stopped {when}", flush=True)
        error_verdict(f"interrupted {when}", run.config, "INTERRUPTED")
    elif unwritten and code not in (0, 1, 5, PARTIAL_EXIT):
        message = " ".join(run.errors) or f"pytest stopped with exit status {code} before a verdict"
        error_verdict(message, run.config)
    return code


def _settle_state(state: str, temporary: bool) -> None:
    """After a run: drop a temp state dir it left empty; otherwise say where its files are."""
    files = [os.path.join(d, f) for d, _, names in os.walk(state) for f in names]
    if temporary and not files:
        shutil.rmtree(state, ignore_errors=True)
    elif files:
        print(
            f"context-engine-kit: state kept in {state} (failure files "
            "under failures/; rerun one with --conformance-replay FILE)"
        )


def _serve(argv: list[str]) -> int:
    from simulator.provider import serve

    return serve.main(argv)


def _install_plugin(argv: list[str]) -> int:
    from reference_engines.lcm.install import main as install_main

    return install_main(argv, prog="context-engine-kit install-plugin")


def _explain(argv: list[str]) -> int:
    from conformance.run.explain import main as explain_main

    return explain_main(argv)


COMMANDS = (
    Command("check", "run the conformance checks and print a verdict by clause", _check),
    Command(
        "scenario",
        "run scenario files (none: the bundled library)",
        partial(_check, command="scenario"),
    ),
    Command("explain", "a clause's text, its checks, usual causes and fixes", _explain),
    Command("serve", "run the provider simulator over HTTP on 127.0.0.1", _serve),
    Command("install-plugin", "copy the bundled LCM plugin to DIR/plugins/lcm/", _install_plugin),
)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser of ``context-engine-kit``: one subcommand per entry of
    :data:`COMMANDS`, ``--help`` and ``--version``."""
    from conformance import CONTRACT_VERSION, __version__

    parser = command_parser(
        "context-engine-kit",
        "Check a Hermes context engine against the contract. Each command takes --help.",
        COMMANDS,
        epilog="examples:\n"
        "  context-engine-kit check mypkg.engine:MyEngine --json verdict.json\n"
        "  context-engine-kit scenario --engine mypkg.engine:MyEngine\n"
        "  context-engine-kit explain V2\n"
        "  context-engine-kit install-plugin lcm --hermes-home DIR\n\n"
        "The kit's developer commands (kill matrix, docs/coverage.md) are\n"
        "python -m conformance.devtools --help.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {__version__} (contract {CONTRACT_VERSION})",
        help="print the kit's version and the contract version it checks, and exit",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``context-engine-kit`` console script.

    ``argv``: the words after the program name (default ``sys.argv[1:]``). Returns the exit
    code: the command's own (``check``: 0 pass, 1 a MUST failure, 4 bad input, 6 partial, as
    pytest otherwise; the others: 0, 1 on failures, 2 on bad input), 0 for ``--help`` and
    ``--version``, 2 for a wrong or missing command.
    """
    from simulator.host import shim

    shim.install()
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_command(build_parser(), COMMANDS, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
