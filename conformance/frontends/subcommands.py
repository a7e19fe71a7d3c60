"""A command line of subcommands that each parse their own arguments, on argparse.

Used by ``context-engine-kit`` (:mod:`conformance.cli`) and ``python -m conformance.devtools``
(:mod:`conformance.devtools.__main__`). argparse picks the command (``--help``, a wrong
command's ``invalid choice`` line, exit 2); the words after it go, exactly as given, to the
command's function, which has its own parser (``check`` passes what it does not know on to
pytest).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help and the function that runs it.

    ``run`` takes the words after the command name and returns the exit code.
    """

    name: str
    help: str
    run: Callable[[list[str]], int]


def command_parser(
    prog: str, description: str, commands: Sequence[Command], epilog: str | None = None
) -> argparse.ArgumentParser:
    """An argparse parser of ``prog COMMAND ...`` whose help lists ``commands``.

    Each command is a subparser without options of its own (``add_help=False``): every word
    after the command name is left for the command's function (:func:`run_command`). Add
    top-level options (``--version``) to the parser returned.
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", title="commands")
    for command in commands:
        sub.add_parser(command.name, help=command.help, add_help=False)
    return parser


def run_command(
    parser: argparse.ArgumentParser, commands: Sequence[Command], argv: list[str]
) -> int:
    """Pick the command of ``argv`` with ``parser`` (:func:`command_parser`) and run it on the
    words after its name; return its exit code.

    Exit codes of the dispatch itself: 0 for ``--help`` (and other top-level options that exit,
    such as ``--version``); 2 for a wrong command (argparse's ``invalid choice`` line), an
    unknown option before the command, or no command at all (the help, on stderr).
    """
    try:
        args, _ = parser.parse_known_args(argv)
        # top-level options take no value: the command is the first word not an option
        at = next((i for i, word in enumerate(argv) if not word.startswith("-")), len(argv))
        if at:
            parser.error("unrecognized arguments: " + " ".join(argv[:at]))
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
    except SystemExit as exc:  # argparse's --help, --version and usage errors
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    run = next(c.run for c in commands if c.name == args.command)
    return run(argv[at + 1 :])
