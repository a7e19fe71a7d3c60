"""Pytest sub-plugin: ``--conformance-report=report.html`` writes the HTML report at the end.

Inert unless the option is given. It keeps its own :class:`~conformance.verdict.Verdict`
of every conformance item (checks and scenario expectations) from the reports pytest
sees, so under xdist the controller has them all. Scenario plots need the runs: runs
made in this process are reused; scenarios whose items ran on xdist workers are run
again here (deterministic, so the plot is the same). Its lines (one per scenario run again,
then where the report went) are printed in the terminal summary, in their own section, so
they never run into pytest's progress line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_KEY = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    group.addoption(
        "--conformance-report",
        default=None,
        metavar="FILE",
        help="write a self-contained HTML report (verdict by clause, one token plot per scenario; "
        "plots need the 'report' extra: matplotlib).",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--conformance-report"):
        from conformance.verdict import Verdict

        config.stash[_KEY] = {"verdict": Verdict(), "files": [], "lines": []}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    state = _STATE.get("state")
    if state is None:
        return
    props = dict(report.user_properties or ())
    if "conformance_check" in props:
        state["verdict"].record_report(report, props)
        path = props.get("scenario_file")
        if path and path not in state["files"]:
            state["files"].append(path)


_STATE: dict[str, Any] = {}


def pytest_sessionstart(session: pytest.Session) -> None:
    _STATE["state"] = session.config.stash.get(_KEY, None)


def _runs(config: pytest.Config, files: list[str], write: Any) -> list[Any]:
    from conformance.scenarios.loader import ScenarioError, load_scenario

    try:
        from conformance.scenarios.plugin import play, scenario_runs

        have = scenario_runs(config)
    except Exception:  # the scenarios sub-plugin is not active
        have, play = {}, None
    out = []
    for n, path in enumerate(sorted(files), 1):
        run = have.get(path)
        if run is None and play is not None:
            try:
                scenario = load_scenario(path)
            except ScenarioError:
                continue
            run = play(config, scenario)  # same engine, host profile and time limit as the items
            write(f"report: ran scenario {n}/{len(files)} {scenario.name} again for its plot")
        if run is not None:
            out.append(run)
    return out


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    config = session.config
    state = config.stash.get(_KEY, None)
    if state is None or hasattr(config, "workerinput"):
        return
    from conformance.report import write_report

    write = state[
        "lines"
    ].append  # printed by pytest_terminal_summary, after pytest's own progress output
    runs = _runs(config, state["files"], write)
    try:
        from conformance.plugin import engine_spec

        engine = engine_spec(config) or ""
    except (ValueError, ImportError):
        engine = ""
    try:
        strict = bool(config.getoption("--conformance-strict"))
    except ValueError:
        strict = False
    path = Path(config.getoption("--conformance-report"))
    note = write_report(path, state["verdict"].results, runs, engine=engine, strict=strict)
    write(
        f"conformance report: {path} ({len(state['verdict'].results)} results, {len(runs)} scenario plots)"
        + (f"; {note}" if note else "")
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: pytest.Config) -> None:
    """Print the report's lines (scenarios run again for their plots, the report's path) in a section
    of their own, on the controller only."""
    state = config.stash.get(_KEY, None)
    if state is None or not state["lines"] or hasattr(config, "workerinput"):
        return
    terminalreporter.write_sep("-", "conformance report")
    for line in state["lines"]:
        terminalreporter.write_line(line)
