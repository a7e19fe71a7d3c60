"""The HTML report's view of a scenario run: :class:`PlotView`, plain data that crosses processes.

The report plots a scenario run's provider calls and compactions. With fork isolation the run
is played in a supervised child (:func:`play_for_plot`), which hands back a :class:`PlotView`
(:func:`plot_view`) made of plain values only, so the kit's process never runs engine code,
not even to unpickle an engine's int subclass.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from conformance.authoring.engine_llm import engine_llm
from conformance.run.cases import scenario_key
from conformance.run.execution import GRACE_S
from conformance.run.probe import child_start
from conformance.runtime.sandbox import Sandbox, block_network, watching
from conformance.runtime.supervisor import Died, Hung, Worker, fork_available, supervised

if TYPE_CHECKING:
    from conformance.authoring.case import Case, ScenarioExpectationCase
    from conformance.run.options import RunOptions


@dataclass
class _Recorded:
    """What the report plots of a scenario run: provider calls and compactions (plain data)."""

    provider_calls: list
    compactions: list


@dataclass
class PlotView:
    """A scenario run as the HTML report reads it (``scenario``, ``recorder.provider_calls``,
    ``recorder.compactions``, ``stopped``), made of plain values only, so that it can travel
    from the child that played it to the kit's process without running engine code there."""

    scenario: Any
    recorder: _Recorded
    stopped: tuple | None = None


def _plain_record(record: Any) -> Any:
    """A copy of a recorder dataclass whose every field is a plain int, float, bool, str or
    None (an engine's int subclass, say, becomes an int)."""

    def plain(value: Any) -> Any:
        if value is None or type(value) in (int, float, str, bool):
            return value
        for kind in (bool, int, float):
            if isinstance(value, kind):
                return kind(value)
        return str(value)

    values = {f.name: plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
    return type(record)(**values)


def plot_view(run: Any) -> PlotView:
    """:class:`PlotView` of a :class:`~conformance.scenarios.run.ScenarioRun` (in the child)."""
    recorder = run.recorder
    stopped = tuple(str(x) for x in run.stopped) if run.stopped else None
    return PlotView(
        None,
        _Recorded(
            [_plain_record(c) for c in recorder.provider_calls],
            [_plain_record(e) for e in recorder.compactions],
        ),
        stopped,
    )


class PlottingSession(Protocol):
    """The run state :func:`play_for_plot` reads (a
    :class:`~conformance.run.conformance_session.ConformanceSession`).

    Attributes:
        options: the run's options (isolation, limits). factory: the engine factory.
        user_hermes_home: the user's ``HERMES_HOME`` (None: unset).
        scenario_runs: the runs played for plots so far, by :func:`scenario_key`.
    """

    options: RunOptions
    factory: Any
    user_hermes_home: str | None
    scenario_runs: dict[str, Any]

    def case_cap(self) -> float:
        """Seconds a whole case may take before its child is killed as a kit fault."""
        ...

    def scenario_group(self, case: Case) -> list[Case]:
        """Every case of ``case``'s scenario file (its expectations), in file order."""
        ...

    def play_scenario(self, case: Case) -> Any:
        """Play ``case``'s scenario on the run's engine; returns the ScenarioRun."""
        ...


def play_for_plot(session: PlottingSession, case: Case) -> Any:
    """A run of ``case``'s scenario, played once for the HTML report's plot (the verdict's
    own runs happen in the cases' children) and kept in ``session.scenario_runs``, in a
    sandbox, network blocked, served the same engine LLM as the verdict's run
    (:func:`conformance.authoring.engine_llm.engine_llm` of its first expectation's id, so the
    plot matches the verdict's run). With fork isolation it is played in a supervised child,
    which hands back plain data (:func:`plot_view`; a child that died or hung gives an empty
    :class:`PlotView` saying so): the engine never runs in this process."""
    key = scenario_key(case)
    if key not in session.scenario_runs:
        o = session.options
        if o.isolation == "inprocess" or not fork_available() or supervised():
            session.scenario_runs[key] = _play_here(session, case)
        else:
            worker = Worker(
                lambda _task: plot_view(_play_here(session, case)),
                memory_limit=o.memory_limit,
                on_start=functools.partial(child_start, session.factory),
            )
            try:
                outcome = worker.call(
                    "plot", call_limit=o.timeout + GRACE_S, case_limit=session.case_cap()
                )
            finally:
                worker.close()
            if isinstance(outcome, (Died, Hung)):
                outcome = PlotView(None, _Recorded([], []), ("(run)", "the run's process ended"))
            outcome.scenario = cast("ScenarioExpectationCase", case).scenario
            session.scenario_runs[key] = outcome
    return session.scenario_runs[key]


def _play_here(session: PlottingSession, case: Case) -> Any:
    """Play ``case``'s scenario in this process, in a sandbox, network blocked."""
    first = session.scenario_group(case)[0]
    with engine_llm(first.id) as (_ledger, seed_home):
        sandbox = Sandbox(session.user_hermes_home, seed=seed_home)
        try:
            with watching(sandbox):
                sandbox.new_home()
                with block_network():
                    return session.play_scenario(case)
        finally:
            sandbox.close()


__all__ = ["PlotView", "PlottingSession", "play_for_plot", "plot_view"]
