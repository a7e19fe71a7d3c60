"""Pytest sub-plugin: a user's ``*.scenario.yaml`` files become test items (one per expectation).

Registered by :mod:`conformance.plugin`; inert when the conformance plugin is. The bundled
scenario library is part of the run's case stream (items of :mod:`conformance.suite`); this
collector serves scenario files the user passes on the command line or keeps in a test path:
``pytest --engine=mypkg:Engine my.scenario.yaml``. Each expectation is one item
(``file.scenario.yaml::<expectation id>``) run by the session like any case
(:class:`conformance.run.cases.ScenarioCase`), so the same skip, xfail, message and ``Repro:`` rules
apply; a malformed file is a collection error ``file:line: field: problem``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.scenarios import SUFFIX


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect ``*.scenario.yaml`` files when the conformance plugin is active."""
    from conformance.frontends.pytest_session import conformance_session

    if file_path.name.endswith(SUFFIX) and conformance_session(parent.config) is not None:
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """One ``*.scenario.yaml`` file: an item per expectation."""

    def collect(self):
        """An item per expectation and host view of the run's hosts
        (:func:`conformance.authoring.hosts.expand`, ``name[host]`` when the views differ), as
        the bundled library's; the cases join the session's stream, so the file is played once
        per host and every expectation judged on that play."""
        from conformance.authoring.hosts import expand
        from conformance.clauses.errors import ScenarioError
        from conformance.frontends.pytest_session import conformance_session
        from conformance.run.cases import scenario_cases

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
    from conformance.frontends.pytest_session import in_suite

    suite = any(in_suite(a, config) for a in config.args)
    for case in session.cases():
        scenario = getattr(case, "scenario", None)
        if scenario is None or scenario.name != name or (case.bundled and not suite):
            continue
        return Path(case.path).resolve()
    return None


class ScenarioItem(pytest.Item):
    """One expectation of a user's scenario file: passes, fails (``[CLAUSE LEVEL] ...``) or
    errors. It carries the ``conformance`` marker
    (:func:`conformance.frontends.pytest_session.conformance_mark`)."""

    def __init__(self, *, case, **kwargs) -> None:
        super().__init__(**kwargs)
        from conformance.frontends.pytest_session import case_properties, conformance_mark

        self.conformance_case_obj = case
        self.add_marker(conformance_mark(case))
        self.user_properties += case_properties(case) + [("scenario_file", str(self.path))]

    def runtest(self) -> None:
        from conformance.frontends.pytest_session import conformance_session, report_result

        session = conformance_session(self.config)
        if session.factory is None:
            pytest.skip(
                "scenario files need an engine: give --engine=MODULE:ATTR or --engine-plugin DIR"
            )
        result = session.run_case(self.conformance_case_obj)
        report_result(self, result, strict=session.options.strict)

    def repr_failure(self, excinfo, style=None):
        from conformance.clauses.errors import ConformanceError, ConformanceFailure

        if excinfo.errisinstance((ConformanceFailure, ConformanceError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        exp = self.conformance_case_obj.expectation
        line = exp.line - 1 if exp.line else None
        return self.path, line, f"scenario {self.conformance_case_obj.scenario.name}: {exp.id}"
