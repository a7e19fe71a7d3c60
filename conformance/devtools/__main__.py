"""``python -m conformance.devtools COMMAND``: the kit's developer commands.

- ``mutants [SPEC...] [--profile P] [--shrink]``: the kill matrix, every mutant engine against
  the checks (:func:`conformance.devtools.killmatrix.main`).
- ``coverage [--check]``: write or verify docs/coverage.md, clause -> checks -> mutants
  (:func:`conformance.devtools.coverage.main`; needs a source checkout).

They load the mutant engines, which is why they are not commands of the user CLI
``context-engine-kit`` (:mod:`conformance.cli`). Each command takes ``--help``.
"""

from __future__ import annotations

import argparse
import sys

from conformance.frontends.subcommands import Command, command_parser, run_command

PROG = "python -m conformance.devtools"


def _mutants(argv: list[str]) -> int:
    from conformance.devtools.killmatrix import main as killmatrix_main

    return killmatrix_main(argv)


def _coverage(argv: list[str]) -> int:
    from conformance.devtools.coverage import main as coverage_main

    return coverage_main(argv)


COMMANDS = (
    Command("mutants", "run every mutant engine and print the kill matrix", _mutants),
    Command("coverage", "write (or verify, --check) docs/coverage.md", _coverage),
)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser of ``python -m conformance.devtools``: one subcommand per entry of
    :data:`COMMANDS`, and ``--help``."""
    return command_parser(
        PROG,
        "The kit's developer commands: the kill matrix and the coverage document. "
        "Each command takes --help.",
        COMMANDS,
    )


def main(argv: list[str] | None = None) -> int:
    """Run a developer command.

    ``argv``: the words after the module name (default ``sys.argv[1:]``). Returns the exit
    code: ``mutants`` 0 when every mutant is killed by its own clause only, 1 otherwise, 2 for
    an unknown mutant; ``coverage`` 0 (written, or current with ``--check``), 1 when
    ``--check`` finds it stale, 2 outside a source checkout or for a bad option; 0 for
    ``--help``; 2 for a wrong or missing command.
    """
    from simulator.host import shim

    shim.install()
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_command(build_parser(), COMMANDS, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
