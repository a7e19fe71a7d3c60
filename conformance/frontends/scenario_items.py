"""Pytest sub-plugin: a user's ``*.scenario.yaml`` files become test items (one per expectation).

The files a user gives (``pytest --engine=mypkg:Engine my.scenario.yaml``; the bundled library
is in the suite's stream); each item is run by the session like any case. A malformed file is
a collection error ``file:line: field: problem``. Inert when the conformance plugin is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.authoring.hosts import expand
from conformance.clauses.errors import ScenarioError
from conformance.frontends.pytest_session import (
    conformance_mark,
    conformance_session,
    in_suite,
    report_result,
)
from conformance.run.cases import scenario_cases
from conformance.scenarios import SUFFIX


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect ``*.scenario.yaml`` files when the conformance plugin is active."""
    if file_path.name.endswith(SUFFIX) and conformance_session(parent.config) is not None:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """One ``*.scenario.yaml`` file: an item per expectation."""

    def collect(self):
        """An item per expectation and host view (:func:`expand`, ``name[host]`` when the views
        differ); the cases join the session's stream: the file is played once per host."""
        session = conformance_session(self.config)
        try:
            cases = expand(
                scenario_cases([self.path], bundled=False), session.options.host_profiles
            )
        except ScenarioError as exc:
            raise self.CollectError(str(exc)) from None
        if not cases:
            return
        taken = _taken(self.config, session, cases[0].scenario.name)
        if taken == self.path.resolve():  # in the run already (a bundled file, with the suite)
            return
        if taken is not None:  # case ids are scenario:NAME:EXPECTATION: one file per NAME
            raise self.CollectError(
                f"{self.path}: scenario name {cases[0].scenario.name!r} is also the name of "
                f"{taken}, in this run; give each scenario file its own name: (the ids of its "
                "expectations, scenario:NAME:ID, would be the same)"
            )
        session.extend(cases)
        for case in cases:
            host = f"[{case.host}]" if getattr(case, "suffixed", False) else ""
            yield ScenarioItem.from_parent(self, name=case.expectation.id + host, case=case)


def _taken(config: pytest.Config, session, name: str) -> Path | None:
    """The file of this run whose scenario is named ``name`` (None: no such file): a user's
    file collected before, or a bundled one when the kit's suite is among the test paths."""
    suite = any(in_suite(a, config) for a in config.args)
    for case in session.cases():
        scenario = getattr(case, "scenario", None)
        if scenario is not None and scenario.name == name and (suite or not case.bundled):
            return Path(case.path).resolve()
    return None


class ScenarioItem(pytest.Item):
    """One expectation of a user's scenario file: passes, fails (``[CLAUSE LEVEL] ...``, as
    the session plugin reports it) or errors. It carries the ``conformance`` marker."""

    def __init__(self, *, case, **kwargs) -> None:
        super().__init__(**kwargs)
        self.conformance_case_obj = case
        self.add_marker(conformance_mark(case))
        self.user_properties.append(("scenario_file", str(self.path)))  # the rest: collection

    def runtest(self) -> None:
        session = conformance_session(self.config)
        if session.factory is None:
            pytest.skip(
                "scenario files need an engine: give --engine=MODULE:ATTR or --engine-plugin DIR"
            )
        result = session.run_case(self.conformance_case_obj)
        report_result(self, result, strict=session.options.strict)

    def reportinfo(self):
        exp = self.conformance_case_obj.expectation
        line = exp.line - 1 if exp.line else None
        return self.path, line, f"scenario {self.conformance_case_obj.scenario.name}: {exp.id}"
