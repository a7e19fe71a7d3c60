"""Pytest sub-plugin: ``*.scenario.yaml`` files become test items when an engine is given.

Inert without an engine (``--engine``, ``CONFORMANCE_ENGINE``, the ini key
``conformance_engine`` or ``--engine-plugin DIR``, read through
:func:`conformance.plugin.engine_factory`, the engine the checks use). With one:

- every ``*.scenario.yaml`` file pytest meets is collected; each expectation is one item
  (``file.scenario.yaml::<expectation id>``) whose verdict row carries its clause and
  level, so the MUST/SHOULD exit rule and the ``[CLAUSE LEVEL]`` grammar apply;
- a conformance run (an engine and no test paths) also collects the bundled library
  (:data:`conformance.scenarios.LIBRARY_DIR`) unless ``--conformance-no-scenarios``;
- a malformed file is a collection error ``file:line: field: problem``;
- ``--conformance-timeout`` bounds each scenario run and the host's compaction timeout
  (:func:`~conformance.scenarios.runner.run_scenario`): a hanging engine fails that
  scenario's expectations, naming the method and the limit, and the run goes on;
- a failure ends with ``Repro: context-engine-kit scenario FILE <engine> ...``.

The scenario runs once per file per process (items share the run); under xdist each
worker that gets an item of the file runs it (runs are deterministic).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.scenarios import LIBRARY_DIR

SUFFIX = ".scenario.yaml"
_RUNS = pytest.StashKey[dict[str, Any]]()
_HANGS = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "context-engine conformance (context-engine-kit)")
    group.addoption(
        "--conformance-no-scenarios",
        action="store_true",
        default=False,
        help="do not add the bundled scenario library to a conformance run.",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from conformance.plugin import engine_factory

    factory = engine_factory(config)  # a bad engine spec is a pytest.UsageError already
    if factory is None:
        return
    config.stash[_RUNS] = {"factory": factory}
    if config.getoption("--conformance-no-scenarios"):
        return
    if config.getoption("--conformance-replay", default=None):
        return  # a replay reruns exactly one recorded case
    if config.args_source != pytest.Config.ArgsSource.ARGS and str(LIBRARY_DIR) not in config.args:
        config.args.append(str(LIBRARY_DIR))


def _factory(config: pytest.Config) -> Any:
    return config.stash[_RUNS]["factory"]


def _hang_budget(config: pytest.Config) -> Any:
    """The run's shared :class:`~conformance.timeouts.HangBudget` (a scenario run that times out
    counts; once it is spent, scenario files not yet run are not run)."""
    from conformance.plugin import hang_budget
    from conformance.timeouts import HangBudget

    shared = hang_budget(config)
    if (
        shared is None
    ):  # the main plugin has no engine (this sub-plugin got it from CONFORMANCE_ENGINE)
        shared = config.stash.setdefault(_HANGS, HangBudget())
    return shared


def _hung_method(stopped: str) -> str | None:
    """The method named in a timed-out run's ``stopped`` text (``timeout: compress() did not ...``)."""
    import re

    match = re.match(r"timeout: ([A-Za-z_][\w.]*)\(\)", stopped or "")
    return match.group(1) if match else None


def play(config: pytest.Config, scenario: Any) -> Any:
    """Run ``scenario`` on this session's engine with the network blocked, the session's
    ``--host-profile`` and ``--conformance-timeout``; returns the
    :class:`~conformance.scenarios.runner.ScenarioRun` (see ``run_scenario`` for the timeout)."""
    from conformance.netguard import block_network
    from conformance.scenarios.runner import run_scenario

    with block_network():
        return run_scenario(
            scenario,
            _factory(config),
            host_profile=config.getoption("--host-profile", default=None),
            timeout=config.getoption("--conformance-timeout", default=None),
        )


def repro(config: pytest.Config, path: Any) -> str:
    """The ``Repro:`` command of a failure in the scenario file ``path`` on this session's engine."""
    from conformance.scenarios.cli import repro_command

    factory = _factory(config)
    engine = factory.repro_args() if hasattr(factory, "repro_args") else repr(factory)
    return repro_command(
        path,
        engine,
        host_profile=config.getoption("--host-profile", default=None),
        timeout=config.getoption("--conformance-timeout", default=None),
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX) and _RUNS in parent.config.stash:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """One ``*.scenario.yaml`` file: loads it and yields an item per expectation."""

    def collect(self):
        from conformance.scenarios.loader import ScenarioError, load_scenario

        try:
            scenario = load_scenario(self.path)
        except ScenarioError as exc:
            raise self.CollectError(str(exc)) from None
        self.scenario = scenario
        for exp in scenario.expectations:
            yield ScenarioItem.from_parent(self, name=exp.id, expectation=exp)

    def run(self) -> Any:
        """The :class:`~conformance.scenarios.runner.ScenarioRun` of this file (run once per process)."""
        runs = self.config.stash[_RUNS]
        key = str(self.path)
        if key not in runs:
            runs[key] = play(self.config, self.scenario)
            if runs[key].timed_out:
                stopped = runs[key].stopped or (None, "")
                _hang_budget(self.config).record(_hung_method(stopped[1]))
        return runs[key]


class ScenarioItem(pytest.Item):
    """One expectation of a scenario: passes, fails (``[CLAUSE LEVEL] ...``) or errors."""

    def __init__(self, *, expectation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.expectation = expectation
        from conformance import CONTRACT_VERSION
        from conformance.scenarios.expectations import check_id

        self.check_id = check_id(self.parent.scenario.name, expectation)
        self.user_properties += [
            ("conformance_check", self.check_id),
            ("clause", expectation.clause),
            ("level", expectation.level),
            ("contract_version", CONTRACT_VERSION),
            ("scenario_file", str(self.parent.path)),
        ]

    def runtest(self) -> None:
        from conformance.outcome import ConformanceError, raise_for_result
        from conformance.plugin import check_timeout
        from conformance.runner import expected_failures, profile_skip_reason
        from conformance.scenarios.expectations import judge
        from conformance.timeouts import build_engine
        from simulator.host.shim import abc_info

        reason = profile_skip_reason(
            self.expectation.clause,
            self.config.getoption("--host-profile", default=None) or "documented",
            abc_info(),
        )
        if reason:
            pytest.skip(reason)
        budget = _hang_budget(self.config)
        if str(self.parent.path) not in self.config.stash[_RUNS] and budget.exhausted():
            raise ConformanceError(
                f"[{self.expectation.clause} {self.expectation.level}] scenario "
                f"{self.parent.scenario.name!r}: {budget.reason()}."
            )
        run = self.parent.run()
        try:
            xfails = expected_failures(
                build_engine(_factory(self.config), check_timeout(self.config))
            )
        except Exception:  # the run itself reports a constructor that raises or hangs
            xfails = {}
        result = next(
            r
            for r in judge(run, xfails=xfails, repro=repro(self.config, self.path))
            if r.check == self.check_id
        )
        self._file_under(result.clause, result.level)
        try:
            strict = bool(self.config.getoption("--conformance-strict"))
        except ValueError:
            strict = False
        raise_for_result(result, strict=strict)

    def _file_under(self, clause: str, level: str) -> None:
        """Verdict row and junit properties under the finding's clause and level (an engine
        error is filed under the raising method's clause, see ``finding_clause``)."""
        props = dict(self.user_properties)
        if (props.get("clause"), props.get("level")) != (clause, level):
            self.user_properties[:] = [
                (k, v) for k, v in self.user_properties if k not in ("clause", "level")
            ]
            self.user_properties += [("clause", clause), ("level", level)]

    def repr_failure(self, excinfo, style=None):
        from conformance.outcome import ConformanceError, ConformanceFailure

        if excinfo.errisinstance((ConformanceFailure, ConformanceError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        exp = self.expectation
        under = (
            "" if exp.kind == "no_engine_errors" else f" [{exp.clause} {exp.level}]"
        )  # clause of the raiser
        return (
            self.path,
            exp.line - 1 if exp.line else None,
            f"scenario {self.parent.scenario.name}: {exp.id}{under}",
        )


def scenario_runs(config: pytest.Config) -> dict[str, Any]:
    """Runs made in this process: scenario file path -> :class:`ScenarioRun` (for the report)."""
    runs = config.stash.get(_RUNS, None) or {}
    return {k: v for k, v in runs.items() if k != "factory"}
