"""``context-engine-kit``: the command-line front end.

Subcommands:
- ``check MODULE:ATTR [--engine-kwargs JSON] [--json FILE] [pytest/plugin options...]``:
  run the conformance checks (through pytest, so every plugin option works) and exit
  non-zero when a MUST check fails. State (failure files) goes to a temp dir unless
  ``--state-dir`` is given (a temp dir left empty is removed); snapshots are the project's, in
  ``./.conformance/snapshots/`` (``--conformance-snapshots-dir`` to move them).
- ``mutants [SPEC...] [--profile P] [--shrink]``: the kill matrix (every mutant against the checks).
- ``coverage [--check]``: write or verify docs/coverage.md (clause -> checks -> mutants -> owner).
- ``serve``: the provider simulator over HTTP on loopback.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from conformance.engine_loading import load_engine_factory, parse_kwargs
from conformance.errors import EngineSpecError


def _check(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="context-engine-kit check",
        description="Run the conformance checks against an engine and print a verdict by clause. "
        "Unknown options are passed to pytest (e.g. -n 2, -k V2, --conformance-profile=quick).",
    )
    by_folder = _given("--engine-plugin", argv)
    if by_folder:  # no positional: a pytest option's value (e.g. -k EXPR) must not be taken for it
        parser.set_defaults(engine=None)
    else:
        parser.add_argument(
            "engine", nargs="?", help="MODULE:ATTR of a ContextEngine subclass or factory"
        )
    parser.add_argument(
        "--engine-plugin",
        default=None,
        metavar="DIR",
        help="a plugin folder as it ships ($HERMES_HOME/plugins/<name>/), in place of "
        "MODULE:ATTR: loaded as the host does and checked for R4-R6 too",
    )
    parser.add_argument("--engine-kwargs", default=None, metavar="JSON")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the verdict as JSON")
    parser.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where failure files go (default: a new temp dir)",
    )
    args, rest = parser.parse_known_args(argv)
    if not args.engine and not args.engine_plugin:
        print(
            "context-engine-kit check: error: give the engine as "
            "MODULE:ATTR, or a plugin folder with --engine-plugin DIR.",
            file=sys.stderr,
        )
        return 4
    if args.engine:
        try:
            load_engine_factory(
                args.engine, parse_kwargs(args.engine_kwargs)
            )  # fail fast, kit-style message
        except EngineSpecError as exc:
            print(f"context-engine-kit check: error: {exc}", file=sys.stderr)
            return 4
    elif not os.path.isdir(args.engine_plugin):
        print(
            f"context-engine-kit check: error: --engine-plugin={args.engine_plugin}: not "
            "a folder; give the plugin folder that holds __init__.py and plugin.yaml.",
            file=sys.stderr,
        )
        return 4
    problem = _output_problem(args.json, args.state_dir)
    if problem:
        print(f"context-engine-kit check: error: {problem}", file=sys.stderr)
        return 4
    import pytest

    state = (
        os.path.abspath(args.state_dir)
        if args.state_dir
        else tempfile.mkdtemp(prefix="context-engine-kit-")
    )
    os.makedirs(state, exist_ok=True)
    if not _given(
        "--conformance-snapshots-dir", rest
    ):  # the project's snapshots, as a plain pytest run there
        rest = [
            "--conformance-snapshots-dir",
            os.path.join(os.getcwd(), ".conformance", "snapshots"),
        ] + rest
    selection = (["--engine", args.engine] if args.engine else []) + (
        ["--engine-plugin", os.path.abspath(args.engine_plugin)] if args.engine_plugin else []
    )
    pytest_args = selection + [
        "-p",
        "no:cacheprovider",
        "--rootdir",
        state,
        # the CLI imported the kit before pytest started; nothing of it needs rewriting
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        "--conformance-failures-dir",
        os.path.join(state, "failures"),
    ]
    # The entry point is named "conformance.plugin" too, so this is a no-op when installed.
    pytest_args += ["-p", "conformance.plugin"]
    if args.engine_kwargs:
        pytest_args += ["--engine-kwargs", args.engine_kwargs]
    if args.json:
        pytest_args += ["--conformance-json", os.path.abspath(args.json)]
    try:
        return int(pytest.main(pytest_args + rest))
    finally:
        _settle_state(state, temporary=not args.state_dir)


def _given(option: str, argv: list[str]) -> bool:
    """True when ``option`` is among ``argv`` (as ``--opt VALUE`` or ``--opt=VALUE``)."""
    return any(a == option or a.startswith(option + "=") for a in argv)


def _settle_state(state: str, temporary: bool) -> None:
    """After a ``check`` run: drop a temp state dir the run left empty; otherwise say where its
    files are."""
    files = [os.path.join(d, f) for d, _, names in os.walk(state) for f in names]
    if temporary and not files:
        shutil.rmtree(state, ignore_errors=True)
    elif files:
        print(
            f"context-engine-kit: state kept in {state} (failure files "
            "under failures/; rerun one with --conformance-replay FILE)"
        )


def _mutants(argv: list[str]) -> int:
    from conformance.devtools.killmatrix import main as killmatrix_main

    return killmatrix_main(argv)


def _coverage(argv: list[str]) -> int:
    from conformance.devtools.coverage import main as coverage_main

    return coverage_main(argv)


def _serve(argv: list[str]) -> int:
    try:
        from simulator.provider import serve
    except ImportError as exc:  # pragma: no cover - the provider ships http
        print(f"context-engine-kit serve: error: {exc}", file=sys.stderr)
        return 2
    try:
        return int(serve.main(argv) or 0)
    except (OSError, OverflowError, ValueError) as exc:
        print(
            f"context-engine-kit serve: error: cannot listen: {exc}. Pick a free "
            "port between 0 and 65535 (0 picks one for you) on a loopback address.",
            file=sys.stderr,
        )
        return 2


def _install_plugin(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="context-engine-kit install-plugin",
        description="Copy a bundled reference engine, laid out as a Hermes plugin folder, "
        "to HERMES_HOME/plugins/<name>/.",
    )
    parser.add_argument("name", choices=["lcm"], help="the bundled plugin to install")
    parser.add_argument(
        "--hermes-home", required=True, metavar="DIR", help="the Hermes home folder"
    )
    args = parser.parse_args(argv)
    from reference_engines.lcm.install import install_plugin

    try:
        target = install_plugin(args.name, args.hermes_home)
    except OSError as exc:
        print(f"context-engine-kit install-plugin: error: {exc}", file=sys.stderr)
        return 2
    print(target)
    return 0


def _scenario(argv: list[str]) -> int:
    from conformance.frontends.scenario_cli import main as scenario_main

    return int(scenario_main(argv) or 0)


COMMANDS = {
    "check": _check,
    "scenario": _scenario,
    "mutants": _mutants,
    "coverage": _coverage,
    "serve": _serve,
    "install-plugin": _install_plugin,
}


def _output_problem(json_path: str | None, state_dir: str | None) -> str:
    """What is wrong with ``--json FILE`` or ``--state-dir DIR`` before anything runs ("" when
    both can be written): a folder given as the file, a file in the way of a folder, a parent
    that cannot be created or written."""
    if state_dir:
        if os.path.exists(state_dir) and not os.path.isdir(state_dir):
            return f"--state-dir {state_dir}: a file is there; give a folder (it is created)."
        problem = _unwritable(os.path.abspath(state_dir), "--state-dir")
        if problem:
            return problem
    if json_path:
        if os.path.isdir(json_path):
            return (
                f"--json {json_path}: a folder; give a file name (e.g. {json_path}/verdict.json)."
            )
        problem = _unwritable(os.path.dirname(os.path.abspath(json_path)), "--json")
        if problem:
            return problem
    return ""


def _unwritable(folder: str, option: str) -> str:
    """ "" when ``folder`` exists and is writable or can be created, else the error text."""
    probe = folder
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        return f"{option}: {probe} is a file, so {folder} cannot be created; choose another path."
    if not os.access(probe, os.W_OK):
        return f"{option}: {probe} is not writable; choose a path you can write to."
    return ""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``context-engine-kit`` console script; returns the exit code."""
    from simulator.host import shim

    shim.install()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(
            "usage: context-engine-kit {" + ",".join(COMMANDS) + "} ...\n\n"
            "  check MODULE:ATTR   run the conformance checks and print a verdict by clause\n"
            "  scenario [FILE...] --engine MODULE:ATTR   "
            "run scenario files (none: the bundled library)\n"
            "  mutants             run every mutant engine and print the kill matrix\n"
            "  coverage [--check]  write (or verify) docs/coverage.md from the check registry\n"
            "  serve               run the provider simulator over HTTP on 127.0.0.1\n"
            "  install-plugin lcm --hermes-home DIR   copy the LCM plugin to DIR/plugins/lcm/\n",
            file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout,
        )
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
