"""Pytest sub-plugin: ``--conformance-report=report.html`` writes the HTML report at the end.

Inert unless the option is given and the conformance plugin is active. The report shows the
run's verdict and one plot per scenario, played again here when it ran on an xdist worker
(deterministic: the same plot).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conformance.frontends.pytest_session import session_plugin

if TYPE_CHECKING:
    from conformance.run.conformance_session import ConformanceSession
    from conformance.run.results import Result

_LINES = pytest.StashKey[list]()


def _scenario_runs(
    session: ConformanceSession, results: list[Result], write: Callable[[str], None]
) -> list[Any]:
    """One run per scenario file with results in this verdict (played again when needed)."""
    from conformance.run.cases import scenario_key

    cases = {c.id: c for c in session.cases() if c.kind == "scenario"}
    seen: dict[str, Any] = {}
    for r in results:
        case = cases.get(r.check)
        if case is None or str(case.path) in seen:
            continue
        fresh = scenario_key(case) not in session.scenario_runs
        seen[str(case.path)] = session.scenario_run(case)
        if fresh:
            write(f"report: ran scenario {case.scenario.name} again for its plot")
    return [seen[k] for k in sorted(seen)]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    """Write the report (on the controller) once the verdict is complete (matplotlib: only then)."""
    config = session.config
    plugin = session_plugin(config)
    path = config.getoption("--conformance-report", default=None)
    if plugin is None or not path or hasattr(config, "workerinput"):
        return
    from conformance.report import write_report

    lines = config.stash.setdefault(_LINES, [])
    results, runs, engine = plugin.verdict.results, [], ""
    if plugin.session.factory is not None:
        from conformance.runtime.sandbox import block_network

        engine = plugin.session.factory.cli_args()
        with block_network():
            runs = _scenario_runs(plugin.session, results, lines.append)
    note = write_report(Path(path), results, runs, engine=engine, strict=plugin.strict)
    lines.append(
        f"conformance report: {path} ({len(results)} results, {len(runs)} scenario plots)"
        + (f"; {note}" if note else "")
    )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: pytest.Config) -> None:
    """Print the report's lines in a section of their own, on the controller only."""
    lines = config.stash.get(_LINES, None)
    if not lines or hasattr(config, "workerinput"):
        return
    terminalreporter.write_sep("-", "conformance report")
    for line in lines:
        terminalreporter.write_line(line)
