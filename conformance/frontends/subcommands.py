"""A command line of subcommands that each parse their own words, on argparse: argparse picks
the command, the words after it go as given to the command's function (``context-engine-kit``,
:mod:`conformance.cli`, and ``python -m conformance.devtools``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help and the function that runs it (``run``: the
    words after the command name -> the exit code)."""

    name: str
    help: str
    run: Callable[[list[str]], int]


def command_parser(
    prog: str, description: str, commands: Sequence[Command], epilog: str | None = None
) -> argparse.ArgumentParser:
    """An argparse parser of ``prog COMMAND ...`` whose help lists ``commands``, each a
    subparser without options of its own (its words are its function's, :func:`run_command`).
    Add top-level options (``--version``) to the parser returned."""
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
    """Pick the command of ``argv`` with ``parser`` (:func:`command_parser`) and return its
    function's exit code on the words after its name; else 0 for ``--help`` (and ``--version``),
    2 for a wrong command (argparse's ``invalid choice`` line), an option before the command, or
    no command (the help, on stderr)."""
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
