"""The hooks of one pytest run, holding its session: the verdict, the exit rule, the JSON file.

A case's :class:`~conformance.run.results.Result` reaches the verdict as an object: kept on the
item, put on its report (across pytest-xdist as its ``as_record()`` dict), folded into the
verdict. The junit ``user_properties`` are an output only: nothing reads them.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance import CONTRACT_VERSION
from conformance.authoring.case import Case
from conformance.clauses.errors import ConformanceError, ConformanceFailure
from conformance.frontends import pytest_options
from conformance.frontends.header import header_lines
from conformance.run.conformance_session import ConformanceSession
from conformance.run.options import unmatched_xfails
from conformance.run.results import PARTIAL_EXIT, Result
from conformance.run.verdict import Verdict
from conformance.run.verdict_format import unwritten
from conformance.runtime.stop_signals import stop_requested
from conformance.runtime.timeouts import NOT_RUN, not_run
from conformance.scenarios import SUFFIX

SESSION_KEY = pytest.StashKey["SessionPlugin"]()
#: The item's case (stashed at collection) and the Result its run reported (report_result).
CASE_KEY = pytest.StashKey[Case]()
RESULT_KEY = pytest.StashKey[Result]()
#: The kit's suite folder: the test paths of a run given none.
SUITE_DIR = Path(__file__).resolve().parents[1] / "suite"

#: The attribute of a case's report that holds its Result (a dict on the wire under xdist).
REPORT_ATTR = "conformance_result"


def session_plugin(config: pytest.Config) -> SessionPlugin | None:
    """The run's :class:`SessionPlugin` (None: the plugin is inert in this run)."""
    return config.stash.get(SESSION_KEY, None)


def conformance_session(config: pytest.Config) -> ConformanceSession | None:
    """The run's :class:`~conformance.run.conformance_session.ConformanceSession` (None: inert)."""
    plugin = session_plugin(config)
    return plugin.session if plugin is not None else None


def report_result(item: pytest.Item, result: Result, *, strict: bool) -> None:
    """Keep ``result`` on ``item`` (for the verdict), write its row into the item's junit
    ``user_properties`` (an output only) and turn it into the pytest outcome."""
    __tracebackhide__ = True
    item.stash[RESULT_KEY] = result
    llm = json.dumps(result.llm, sort_keys=True, separators=(",", ":")) if result.llm else ""
    # a run of several hosts: the host profiles this row stands for
    hosts = [("conformance_hosts", ",".join(result.hosts))] if result.hosts else []
    drop = {"clause", "level"} | {key for key, _ in hosts}
    item.user_properties[:] = [(k, v) for k, v in item.user_properties if k not in drop] + [
        ("clause", result.clause),
        ("level", result.level),
        ("conformance_outcome", result.outcome),
        ("conformance_message", result.message),
        ("conformance_root_cause", result.root_cause),
        ("conformance_examples", f"{result.examples_run or ''}/{result.examples_asked or ''}"),
        ("conformance_budget_reached", "1" if result.budget_reached else ""),
        ("conformance_llm", llm),  # the engine-LLM ledger, compact JSON ("": no LLM call)
        *hosts,
    ]
    if result.outcome == "xpassed" and strict:
        raise ConformanceFailure(
            f"[{result.clause} {result.level}] XPASS(strict): {result.message}"
        )
    if result.outcome in ("passed", "xpassed"):
        return
    if result.outcome == "failed":
        raise ConformanceFailure(result.message)
    if result.outcome == "skipped":
        pytest.skip(result.message)
    if result.outcome == "xfailed":
        pytest.xfail(result.message)
    raise ConformanceError(result.message)


#: The ``markers`` ini line of the marker every item carries (:func:`conformance_mark`).
MARKER_LINE = (
    "conformance(clause, level, kind): a context-engine-kit conformance case: its contract "
    "clause (e.g. 'V2'), level ('MUST' or 'SHOULD') and kind ('structural', 'contract', "
    "'stateful', 'determinism', 'regression', 'scenario' or 'snapshot'). Select by any of "
    "them (pytest 8.3+): -m \"conformance(clause='V2')\", "
    "-m \"conformance(level='MUST') and not conformance(kind='scenario')\"."
)


def conformance_mark(case: Case) -> pytest.MarkDecorator:
    """``pytest.mark.conformance(clause=..., level=..., kind=...)`` for one case of the stream
    (a host view carries its base case's values): the clause id, ``MUST``/``SHOULD`` and the
    kind (:data:`conformance.authoring.registry.KINDS`), strings as in the junit properties."""
    return pytest.mark.conformance(clause=case.clause, level=case.level, kind=case.kind)


def case_properties(case: Case) -> list[tuple[str, str]]:
    """The junit ``user_properties`` of a case's item (check id, clause, level, since, kind;
    in a run of several hosts, ``conformance_hosts``: the host profiles it stands for)."""
    hosts = tuple(getattr(case, "hosts", ()) or ())
    return [
        ("conformance_check", case.id),
        ("clause", case.clause),
        ("level", case.level),
        ("since", getattr(case, "since", "1.0")),
        ("kind", case.kind),
        ("title", case.title),
        ("contract_version", CONTRACT_VERSION),
    ] + ([("conformance_hosts", ",".join(hosts))] if hosts else [])


class SessionPlugin:
    """The hooks of one run (registered as ``conformance-session``), holding its ``session``
    and its ``verdict``: the results as reported (on the xdist controller: every worker's)."""

    def __init__(self, config: pytest.Config, session: ConformanceSession, *, fixture_route: bool):
        self.config = config
        self.session = session
        self.fixture_route = fixture_route
        self.verdict = Verdict(host_order=tuple(session.options.host_profiles))
        self.strict = session.options.strict  # --conformance-strict
        self._xdist_total = 0  # cases the xdist workers collected (the controller collects none)
        self.collection_errors = 0  # files that failed to collect (a malformed scenario file)
        self.json_problem = ""  # why --conformance-json could not be written at the end

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session):
        """After pytest's header, probe the engine (:func:`pytest_options.probe_or_raise`)."""
        result = yield
        if self.session.factory is not None and not hasattr(self.config, "workerinput"):
            pytest_options.probe_or_raise(self.session, self.config)
        return result

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist, on the controller: every worker draws with the seed the header prints."""
        seed = self.session.options.seed
        if seed is not None:
            node.workerinput[pytest_options.WORKER_SEED] = seed

    def pytest_report_header(self, config: pytest.Config):
        """Header lines: engine, kit and contract versions, host ABC, profiles, env, replay."""
        return header_lines(config, self.session, fixture_route=self.fixture_route)

    def pytest_collection_modifyitems(self, session, config: pytest.Config, items) -> None:
        """Stash each item's case, with its junit properties; warn about unmatched xfails."""
        empty = []  # a suite test whose parameter set is empty (e.g. -k on a replay)
        for item in items:
            case = getattr(item, "conformance_case_obj", None)
            params = getattr(getattr(item, "callspec", None), "params", {})
            for name in ("conformance_case", "conformance_snapshot_case"):
                if name in params:
                    if not isinstance(params[name], str):
                        empty.append(item)
                    else:
                        case = self.session.case(params[name])
            if case is not None:
                item.stash[CASE_KEY] = case
                item.user_properties += case_properties(case)
        if empty:
            config.hook.pytest_deselected(items=empty)
            items[:] = [i for i in items if i not in empty]
        for key in unmatched_xfails(self.session.options.xfails, self.session.cases()):
            message = f"--conformance-xfails: {key!r} matches no check id, id prefix or clause"
            warnings.warn(pytest.PytestConfigWarning(message), stacklevel=2)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """pytest-xdist, on the controller (which collects nothing): count the cases the workers
        selected for ``cases_total``: the node ids whose parameter or last part names one, and
        the items of a user's scenario file (the controller never parsed the file)."""
        known = {c.id for c in self.session.cases()}
        found = 0
        for path, _, name in (node_id.rpartition("::") for node_id in ids):
            found += name in known or name.partition("[")[2][:-1] in known or path.endswith(SUFFIX)
        self._xdist_total = max(found, self._xdist_total)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Count the files that failed to collect (the INTERRUPTED that follows is no stop)."""
        if report.failed:
            self.collection_errors += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Share the drawing budget among the cases selected to run (after -k, -m, --deselect)."""
        cases = (item.stash.get(CASE_KEY, None) for item in session.items)
        self.session.budget.restrict({case.id for case in cases if case is not None})

    def pytest_report_collectionfinish(self, config: pytest.Config, start_path, items):
        """With ``--collect-only``: each case's id and title (what it checks)."""
        cases = [item.stash[CASE_KEY] for item in items if CASE_KEY in item.stash]
        if not (config.option.collectonly and cases):
            return None
        return ["conformance cases (id: what it checks):"] + [f"  {c.id}: {c.title}" for c in cases]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """Show conformance failures as their one-line message; put the case's Result on its
        report (:func:`result_of`)."""
        report = yield
        if call.excinfo is not None and call.excinfo.errisinstance(
            (ConformanceFailure, ConformanceError)
        ):
            report.longrepr = str(call.excinfo.value)
        case = item.stash.get(CASE_KEY, None)
        result = None if case is None else result_of(report, case, item.stash.get(RESULT_KEY, None))
        if result is not None:
            setattr(report, REPORT_ATTR, result)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_report_to_serializable(self, config: pytest.Config, report: Any):
        """pytest-xdist, on a worker: the report's Result crosses as its record (a dict)."""
        data = yield
        result = getattr(report, REPORT_ATTR, None)
        if isinstance(data, dict) and isinstance(result, Result):
            data[REPORT_ATTR] = result.as_record()
        return data

    @pytest.hookimpl(wrapper=True)
    def pytest_report_from_serializable(self, config: pytest.Config, data: Any):
        """pytest-xdist, on the controller: the report's Result again, from its record."""
        report = yield
        record = getattr(report, REPORT_ATTR, None)
        if isinstance(record, dict):
            setattr(report, REPORT_ATTR, Result.from_record(record))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold each case's Result into the verdict; a failed other test is an other failure."""
        result = getattr(report, REPORT_ATTR, None)
        if isinstance(result, Result):
            self.verdict.add(result)
        elif report.failed:
            self.verdict.other_failures += 1

    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config):
        """A case the hang cap kept from running is ``N`` / ``NOT RUN`` in pytest's progress,
        not one FAILURES block each (the verdict still counts it as an error)."""
        result = getattr(report, REPORT_ATTR, None)
        if report.when == "call" and isinstance(result, Result) and _kept_from_running(result):
            return "not run", "N", ("NOT RUN", {"yellow": True})
        return None

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config: pytest.Config) -> None:
        """Print the verdict by clause and the verdict line, once (on the xdist controller)."""
        if hasattr(config, "workerinput"):
            return
        if exitstatus == pytest.ExitCode.USAGE_ERROR and not self.verdict.results:
            return  # pytest prints its usage error (a missing path); the JSON verdict says ERROR
        if not self.verdict.results:
            if self.verdict.interrupted:
                terminalreporter.write_line(
                    "verdict: INTERRUPTED - stopped (Ctrl-C or SIGTERM) before the first case ran"
                )
            elif not config.option.collectonly and not self.fixture_route:
                why = self._none_ran(config, terminalreporter.stats)
                terminalreporter.write_line(f"verdict: NO CHECK RAN - {why}")
            return
        kept = [r for r in self.verdict.results if _kept_from_running(r)]
        if kept:
            why = kept[0].message.partition(NOT_RUN)[2].split(". See ")[0]
            terminalreporter.write_line(
                f"not run: {len(kept)} case(s), shown as N above and counted as errors below: {why}"
            )
        for line in self.verdict.summary_lines(strict=self.strict):
            terminalreporter.write_line(line)
        if self.json_problem:
            terminalreporter.write_line(f"error: {self.json_problem}", red=True)

    def _none_ran(self, config: pytest.Config, stats: dict[str, list[Any]]) -> str:
        """Why no case ran, for the NO CHECK RAN line (``stats``: the terminal reporter's)."""
        errors = stats.get("error", [])
        if errors:
            return (
                f"collection stopped at {len(errors)} error(s) shown above (a malformed "
                "file or a module that does not import); fix them and run again"
            )
        given = [a for a in config.args if not in_suite(a, config)]
        if given and not stats.get("deselected"):
            if all(SUFFIX in a for a in given):
                return (
                    f"the scenario files given ({' '.join(given)}) hold no expectation; add "
                    "some under expect: (docs/scenarios.md lists the kinds)"
                )
            return (
                f"the test paths given ({' '.join(given)}) replace the kit's suite and hold no "
                "conformance check; give no path to check the engine (run your own tests in "
                "a separate run)"
            )
        return "every conformance check was deselected (-k, -m or --deselect); widen the selection"

    @pytest.hookimpl(trylast=True)  # after plugins (syrupy) that OR the exit status back in
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        """Apply the exit rules (MUST fails; SHOULD only with --conformance-strict; no case
        ran = failure) and write the JSON verdict."""
        self.session.close()  # end the supervised child
        if hasattr(self.config, "workerinput"):
            return
        collected = sum(1 for item in session.items if CASE_KEY in item.stash)
        if self.config.option.collectonly:  # nothing ran: the verdict file says so, and counts
            self.verdict.total = collected
            self._write_json(session)
            return
        # a second stop signal, raised while pytest handled the first, leaves another status;
        # collection errors end a run with INTERRUPTED too, but nobody stopped it
        self.verdict.interrupted = stop_requested() or (
            exitstatus == pytest.ExitCode.INTERRUPTED and not self.collection_errors
        )
        self.verdict.total = collected or self._xdist_total
        if self.fixture_route and not self.verdict.results:
            return  # the fixture was defined but this run selected none of the suite
        if self.verdict.interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED  # never a PASS
        elif not self.verdict.ran_any() and not self.collection_errors:
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        elif (
            session.exitstatus == pytest.ExitCode.TESTS_FAILED
            and not self.verdict.has_blocking_failure(strict=self.strict)
            and self.verdict.only_conformance_failures
        ):
            session.exitstatus = pytest.ExitCode.OK
        partial = self.verdict.word(strict=self.strict) == "PARTIAL"
        if session.exitstatus == pytest.ExitCode.OK and partial:
            session.exitstatus = PARTIAL_EXIT  # the budget cut cases short: never a pass
        # pytest refused the test paths at collection: outputs.py writes the ERROR verdict
        if not (exitstatus == pytest.ExitCode.USAGE_ERROR and not self.verdict.results):
            self._write_json(session)

    def _write_json(self, session: pytest.Session) -> None:
        """Write the verdict to ``--conformance-json`` when given; a file that cannot be
        written is a usage error (exit 4, one line in the summary)."""
        path = self.config.getoption("--conformance-json")
        if path:
            try:
                self.verdict.write_json(Path(path), session=self.session)
            except OSError as exc:
                self.json_problem = unwritten(path, exc)
                session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _kept_from_running(result: Result) -> bool:
    """Whether ``result`` is of a case the hang cap kept from running (an error)."""
    return result.outcome == "error" and not_run(result.message)


def in_suite(arg: str, config: pytest.Config) -> bool:
    """Whether the test path ``arg`` (maybe with ``::`` parts) is in :data:`SUITE_DIR`."""
    path = Path(config.invocation_params.dir, arg.split("::", 1)[0]).resolve()
    return path == SUITE_DIR or SUITE_DIR in path.parents


def result_of(report: pytest.TestReport, case: Case, ran: Result | None) -> Result | None:
    """The :class:`~conformance.run.results.Result` a case's report stands for (None for the
    phases that carry no outcome): on the call phase the one its run reported (``ran``), else
    one made from the report (a failed setup or teardown is an error, a pytest skip a skip)."""
    hosts = tuple(getattr(case, "hosts", ()) or ())
    if ran is not None and report.when == "call":
        # an XPASS(strict) is "failed"
        outcome = "failed" if ran.outcome == "xpassed" and report.failed else ran.outcome
        hosts = ran.hosts or hosts
        return replace(
            ran, check=case.id, outcome=outcome, kind=case.kind, title=case.title, hosts=hosts
        )
    if not (report.when == "call" or report.failed or report.skipped):
        return None
    if report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        message = (
            str(report.longrepr[2]).removeprefix("Skipped: ")
            if isinstance(report.longrepr, tuple)
            else str(getattr(report, "wasxfail", ""))
        )
    elif report.failed:
        outcome = "error" if report.when != "call" else "failed"
        text = str(report.longreprtext or "").strip()
        message = text.splitlines()[-1] if text else ""
    else:
        outcome, message = "passed", ""
    return Result(case.id, case.clause, case.level, outcome, message, kind=case.kind, hosts=hosts)
