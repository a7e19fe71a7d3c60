"""``context-engine-kit scenario [FILE...] MODULE:ATTR`` (or ``--engine MODULE:ATTR`` or
``--engine-plugin DIR`` for the engine).

Runs scenario files against one engine and prints one line per expectation in the kit's grammar (a
failure ends with ``Repro: <command>``, the pytest command that reruns that expectation), then a
verdict by clause. The expectations are cases of the run's stream, run by the session
(:mod:`conformance.run.conformance_session`) exactly as ``pytest --engine=...`` runs them. With no
FILE it runs the bundled library and says so on its first line; ``--library`` adds the library to
given files.
``--timeout SECONDS`` bounds each scenario and the host's compaction timeout (a hanging engine fails
its scenario, the run goes on). Exit status: 0 unless a MUST expectation failed or errored (any
failure with ``--strict``); 2 for a malformed scenario (``file:line: field: problem``) or a bad
option value (a ``--report`` path that cannot be written is one, found before the run); 4 for
an engine that cannot be loaded or built (its constructor raises or hangs); 5 when nothing ran;
6 when nothing failed but the scenario budget left files unplayed (``PARTIAL``). The engine's
module is resolved, and the engine built, only in supervised children (the door).
``--report FILE`` writes the HTML report (:mod:`conformance.report`); ``--json FILE`` the verdict
in the format of ``check --json`` (an ERROR verdict when the run cannot start).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
from conformance.authoring.hosts import host_of
from conformance.clauses.errors import EngineSpecError, KitUsageError, ScenarioError
from conformance.frontends.check_run import CommandLineRefused, OneLineParser
from conformance.frontends.option_types import Once, file_name
from conformance.frontends.outputs import check_writable, engine_record, write_error_verdict
from conformance.run.cases import scenario_key
from conformance.run.conformance_session import ConformanceSession
from conformance.run.options import RunOptions
from conformance.run.probe import probe_problem
from conformance.run.results import exit_code
from conformance.run.verdict import Verdict
from conformance.run.verdict_format import unwritten
from conformance.runtime.engine_loading import (
    deferred_engine_factory,
    deferred_plugin_factory,
    is_engine_word,
    parse_kwargs,
)
from conformance.scenarios import LIBRARY_DIR, library_paths


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def _engine_from_files(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Take the engine from the positional arguments when neither ``--engine`` nor
    ``--engine-plugin`` names it: the one ``MODULE:ATTR`` that is not a file (as ``check``
    takes it).

    Raises:
        CommandLineRefused: no engine, or two, are given (the command exits 2 with one line).
    """
    specs = [f for f in args.files if is_engine_word(f)]
    if args.engine or args.engine_plugin:
        if specs:
            parser.error(
                f"{specs[0]} looks like an engine, and --engine or --engine-plugin "
                "names one already: give the engine once"
            )
        return
    if len(specs) != 1:
        parser.error(
            "give the engine: MODULE:ATTR (or --engine MODULE:ATTR, or --engine-plugin DIR)"
            if not specs
            else f"two engines given ({', '.join(specs)}): give one"
        )
    args.engine = specs[0]
    args.files = [f for f in args.files if f != specs[0]]


def _error_file(args: argparse.Namespace, message: str) -> None:
    """The ERROR verdict in ``--json``'s file, when one was asked for."""
    if args.json:
        write_error_verdict(
            args.json,
            message,
            engine=engine_record(args.engine, args.engine_kwargs, args.engine_plugin),
            host_profile=args.host_profile or "",
            strict=args.strict,
        )


def _usage_error(args: argparse.Namespace, message: str, code: int) -> int:
    """Print ``message`` as the scenario command's error, write the ERROR verdict (``--json``)
    and return ``code``."""
    print(f"context-engine-kit scenario: error: {message}", file=sys.stderr)
    _error_file(args, message)
    return code


def _json_given(argv: list[str] | None) -> str | None:
    """The ``--json`` file of a command line the parser refused (None: none readable)."""
    reader = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    reader.add_argument("--json")
    try:
        return reader.parse_known_args(sys.argv[1:] if argv is None else argv)[0].json
    except (argparse.ArgumentError, SystemExit):
        return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``scenario`` subcommand; returns the exit status (see module doc)."""
    parser = OneLineParser(
        prog="context-engine-kit scenario",
        description="Run *.scenario.yaml files against an engine through "
        "the reference host and the provider simulator; every "
        "expectation names its contract clause and level.",
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE | MODULE:ATTR",
        help="scenario files; with none, the bundled library "
        f"({LIBRARY_DIR}) runs, and the first line says so. One MODULE:ATTR among them is the "
        "engine, as in check (or give --engine)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--engine", action=Once, metavar="MODULE:ATTR", help="a ContextEngine subclass or factory"
    )
    source.add_argument(
        "--engine-plugin",
        action=Once,
        metavar="DIR",
        help="a Hermes plugin folder (plugin.yaml + __init__.py)",
    )
    parser.add_argument("--engine-kwargs", default=None, metavar="JSON")
    parser.add_argument(
        "--library", action="store_true", help="also run the bundled scenario library with FILE..."
    )
    parser.add_argument(
        "--timeout",
        "--conformance-timeout",
        dest="timeout",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="time limit of each scenario, also the host's compaction timeout: "
        "a hanging engine fails its scenario and the run goes on "
        "(default 120)",
    )
    parser.add_argument(
        "--host-profile",
        default=None,
        metavar="HOSTS",
        help="the host(s) the kit plays when a file names none, as in the pytest plugin: a "
        "profile (documented, hermes-0.19, ...), a comma-separated list, or all; each file is "
        "played once per host (default: documented, plus the profile of a real Hermes "
        "installed next to the kit)",
    )
    parser.add_argument("--strict", action="store_true", help="SHOULD failures fail too")
    parser.add_argument(
        "--json",
        type=file_name,
        action=Once,
        metavar="FILE",
        help="write the verdict as JSON (the format of check --json; also when the run cannot "
        "start: verdict ERROR)",
    )
    parser.add_argument(
        "--report",
        type=file_name,
        metavar="FILE",
        help="write the self-contained HTML report to FILE",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print failures and the verdict only"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the host's warnings (retries, fallbacks)"
    )
    try:
        args = parser.parse_args(argv)
        _engine_from_files(parser, args)
    except CommandLineRefused as exc:
        print(
            f"context-engine-kit scenario: error: {exc}; context-engine-kit scenario --help "
            "lists the options",
            file=sys.stderr,
        )
        json_path = _json_given(argv)
        if json_path:
            write_error_verdict(json_path, f"the command line was refused: {exc}")
        return 2
    if not args.verbose:
        import logging

        logging.getLogger("simulator.host").setLevel(logging.ERROR)

    for option, path in (("--report", args.report), ("--json", args.json)):
        if path:
            try:
                check_writable(path, option=option, kind="file")
            except KitUsageError as exc:
                print(f"context-engine-kit scenario: error: {exc}", file=sys.stderr)
                return 2
    library = args.library or not args.files
    if not args.files:
        print(
            f"context-engine-kit scenario: no FILE given: running the {len(library_paths())} "
            f"bundled scenarios from {LIBRARY_DIR}",
            flush=True,
        )
    timeout = args.timeout or DEFAULT_CHECK_TIMEOUT_S
    try:  # resolved in a child: the engine's module never runs in this process
        factory = (
            deferred_plugin_factory(args.engine_plugin, timeout=max(timeout, 120.0))
            if args.engine_plugin
            else deferred_engine_factory(
                args.engine, parse_kwargs(args.engine_kwargs), timeout=max(timeout, 120.0)
            )
        )
    except EngineSpecError as exc:
        return _usage_error(args, str(exc), 4)
    options = RunOptions(
        checks=False,
        scenarios=library,
        scenario_files=tuple(Path(f) for f in args.files),
        timeout=timeout,
        host_profile=args.host_profile or "",
        strict=args.strict,
    )
    try:
        session = ConformanceSession(options, factory)
        cases = session.cases()
    except ScenarioError as exc:
        print(str(exc), file=sys.stderr)
        _error_file(args, str(exc))
        return 2
    except KitUsageError as exc:
        return _usage_error(args, str(exc), 2)
    try:
        return _play(session, cases, options, factory, args)
    finally:
        session.close()  # ends the supervised child and removes its temp folder


def _play(
    session: ConformanceSession,
    cases: list,
    options: RunOptions,
    factory: object,
    args: argparse.Namespace,
) -> int:
    """Probe the engine, play every scenario file of ``cases`` and print the verdict;
    returns the exit code (4 when the engine cannot be probed)."""
    try:
        problem = probe_problem(
            session.declarations, session.factory.cli_args(), not_run="scenario"
        )
    except KitUsageError as exc:
        problem = str(exc)
    if problem:
        return _usage_error(args, problem, 4)
    by_file: dict[str, list] = {}
    for case in cases:
        by_file.setdefault(scenario_key(case), []).append(case)
    verdict = Verdict(host_order=tuple(options.host_profiles))
    for n, (path, group) in enumerate(by_file.items(), 1):
        started = time.perf_counter()
        results = [session.run_case(c) for c in group]
        verdict.results.extend(results)
        run = session.scenario_runs.get(path)  # None when it was played in a supervised child
        host = host_of(group[0])
        on = f" on {host}" if host else ""
        calls = f"{len(run.recorder.provider_calls)} provider calls, " if run is not None else ""
        bad_n = sum(r.outcome in ("failed", "error") for r in results)
        print(
            f"[{n}/{len(by_file)}] {group[0].scenario.name}{on}: "
            f"{len(results) - bad_n}/{len(results)} "
            f"expectations hold ({calls}{time.perf_counter() - started:.2f} s)",
            flush=True,
        )
        for r in results:
            if r.outcome in ("failed", "error", "xfailed", "xpassed") or not args.quiet:
                print(
                    f"  {r.outcome.upper():8} {r.check}"
                    + (f"\n    {r.message}" if r.message else "")
                )
    verdict.total = len(cases)
    for line in verdict.summary_lines(strict=args.strict):
        print(line)
    if args.json:
        try:
            verdict.write_json(args.json, session=session, strict=args.strict)
        except OSError as exc:
            print(
                f"context-engine-kit scenario: error: {unwritten(args.json, exc)}", file=sys.stderr
            )
            return 4
    if args.report:
        from conformance.report import write_report

        runs = [session.scenario_run(group[0]) for group in by_file.values()]  # for the plots
        note = write_report(Path(args.report), verdict.results, runs, engine=factory.cli_args())
        print(f"report: {args.report}" + (f" ({note})" if note else ""))
    return exit_code(verdict.results, strict=args.strict)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
