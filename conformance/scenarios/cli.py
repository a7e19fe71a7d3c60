"""``context-engine-kit scenario [FILE...] --engine MODULE:ATTR | --engine-plugin DIR``.

Runs scenario files against one engine and prints one line per expectation in the kit's
grammar (a failure ends with ``Repro: <command>`` rerunning that scenario, see
:func:`repro_command`), then a verdict by clause. With no FILE it runs the bundled library
and says so on its first line; ``--library`` adds the library to given files.
``--timeout SECONDS`` bounds each scenario and the host's compaction timeout (a hanging
engine fails its scenario, the run goes on). Exit status: 0 unless a MUST expectation
failed or errored (any failure with ``--strict``); 2 for a malformed scenario
(``file:line: field: problem``) or a bad option value; 4 for a bad engine; 5 when nothing
ran. ``--report FILE`` writes the HTML report (:mod:`conformance.report`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conformance.scenarios import LIBRARY_DIR, library_paths


def repro_command(
    path: Any,
    engine_args: str,
    *,
    host_profile: str | None = None,
    timeout: float | None = None,
) -> str:
    """The shell command that reruns just the scenario file ``path`` on one engine.

    ``engine_args`` selects the engine (``--engine=MODULE:ATTR [--engine-kwargs='...']`` or
    ``--engine-plugin=DIR``, e.g. ``EngineFactory.repro_args()``); ``host_profile`` other
    than ``documented`` and ``timeout`` (seconds) are kept. Used for the ``Repro:`` line of
    scenario failures (the kit's failure grammar).
    """
    out = f"context-engine-kit scenario {shlex.quote(str(path))} {engine_args}"
    if host_profile and host_profile != "documented":
        out += f" --host-profile={host_profile}"
    if timeout is not None:
        out += f" --timeout={float(timeout):g}"
    return out


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds")
    return value


def _skip_if_absent(result: Any, host_profile: str) -> Any:
    """``result`` as skipped when its clause does not exist on ``host_profile`` or the host ABC
    in use (the pytest plugin's rule, :func:`conformance.runner.profile_skip_reason`)."""
    from dataclasses import replace

    from conformance.runner import profile_skip_reason
    from simulator.host.shim import abc_info

    reason = profile_skip_reason(result.clause, host_profile, abc_info())
    return replace(result, outcome="skipped", message=reason) if reason else result


def _engine(args: argparse.Namespace) -> tuple[Callable[[], Any] | None, str, str]:
    """(factory, repro args selecting it again, error): from ``--engine`` or ``--engine-plugin``."""
    if args.engine_plugin:
        from simulator.host import shim
        from simulator.host.discovery import load_engine_plugin

        shim.install()
        factory, report = load_engine_plugin(args.engine_plugin)
        if factory is None:
            problems = (
                "; ".join(f"[{f.clause}] {f.message}" for f in report.failures()) or "no finding"
            )
            return (
                None,
                "",
                f"--engine-plugin {args.engine_plugin}: no engine could be loaded ({problems})",
            )
        return factory, f"--engine-plugin={shlex.quote(args.engine_plugin)}", ""
    from conformance.engine_loading import EngineSpecError, load_engine_factory, parse_kwargs

    try:
        factory = load_engine_factory(args.engine, parse_kwargs(args.engine_kwargs))
        return factory, factory.repro_args(), ""
    except EngineSpecError as exc:
        return None, "", str(exc)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``scenario`` subcommand; returns the exit status (see module doc)."""
    parser = argparse.ArgumentParser(
        prog="context-engine-kit scenario",
        description="Run *.scenario.yaml files against an engine through the reference host and the provider "
        "simulator; every expectation names its contract clause and level.",
    )
    parser.add_argument(
        "files",
        nargs="*",
        help="scenario files; with none, the bundled library "
        f"({LIBRARY_DIR}) runs, and the first line says so",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--engine", metavar="MODULE:ATTR", help="a ContextEngine subclass or factory"
    )
    source.add_argument(
        "--engine-plugin", metavar="DIR", help="a Hermes plugin folder (plugin.yaml + __init__.py)"
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
        default="documented",
        choices=("documented", "hermes-0.19"),
        help="the host the kit plays when a file names none (as in the pytest plugin)",
    )
    parser.add_argument("--strict", action="store_true", help="SHOULD failures fail too")
    parser.add_argument(
        "--report", metavar="FILE", help="write the self-contained HTML report to FILE"
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="print failures and the verdict only"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the host's warnings (retries, fallbacks)"
    )
    args = parser.parse_args(argv)
    if not args.verbose:
        import logging

        logging.getLogger("simulator.host").setLevel(logging.ERROR)

    paths = [Path(f) for f in args.files] + (
        library_paths() if args.library or not args.files else []
    )
    if not args.files:
        print(
            f"context-engine-kit scenario: no FILE given: running the {len(paths)} bundled scenarios from "
            f"{LIBRARY_DIR}",
            flush=True,
        )
    from conformance.scenarios.loader import ScenarioError, load_scenario

    scenarios = []
    bad = []
    for p in paths:
        try:
            scenarios.append(load_scenario(p))
        except ScenarioError as exc:
            bad.append(str(exc))
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 2
    factory, label, error = _engine(args)
    if factory is None:
        print(f"context-engine-kit scenario: error: {error}", file=sys.stderr)
        return 4

    from conformance.context import DEFAULT_CHECK_TIMEOUT_S
    from conformance.netguard import block_network
    from conformance.runner import exit_code, expected_failures
    from conformance.scenarios.expectations import judge
    from conformance.scenarios.runner import run_scenario
    from conformance.timeouts import build_engine
    from conformance.verdict import Verdict

    try:
        xfails = expected_failures(build_engine(factory, args.timeout or DEFAULT_CHECK_TIMEOUT_S))
    except Exception:  # each scenario run reports a constructor that raises or hangs
        xfails = {}
    verdict = Verdict()
    runs = []
    for n, sc in enumerate(scenarios, 1):
        started = time.perf_counter()
        with block_network():
            run = run_scenario(sc, factory, host_profile=args.host_profile, timeout=args.timeout)
        runs.append(run)
        results = [
            _skip_if_absent(r, args.host_profile)
            for r in judge(
                run,
                xfails=xfails,
                repro=repro_command(
                    sc.source, label, timeout=args.timeout, host_profile=args.host_profile
                ),
            )
        ]
        verdict.extend(results)
        bad_n = sum(r.outcome in ("failed", "error") for r in results)
        print(
            f"[{n}/{len(scenarios)}] {sc.name}: {len(results) - bad_n}/{len(results)} expectations hold "
            f"({len(run.recorder.provider_calls)} provider calls, {time.perf_counter() - started:.2f} s)",
            flush=True,
        )
        for r in results:
            if r.outcome in ("failed", "error", "xfailed", "xpassed") or not args.quiet:
                print(
                    f"  {r.outcome.upper():8} {r.check}"
                    + (f"\n    {r.message}" if r.message else "")
                )
    for line in verdict.summary_lines(strict=args.strict):
        print(line)
    if args.report:
        from conformance.report import write_report

        note = write_report(Path(args.report), verdict.results, runs, engine=label)
        print(f"report: {args.report}" + (f" ({note})" if note else ""))
    return exit_code(verdict.results, strict=args.strict)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
