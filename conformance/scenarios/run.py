"""What a scenario run observed: :class:`ScenarioRun` and its records.

The runner (:mod:`conformance.scenarios.runner`) fills a :class:`ScenarioRun`; the
expectations (:mod:`conformance.scenarios.expectations`) and the HTML report read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.scenarios.observe import Finding, ScenarioRecorder
from conformance.scenarios.spec import Scenario
from simulator.host.gateway import Gateway
from simulator.host.session import HostSession, TurnResult

#: Default window of a scenario's host, in tokens (a file's ``host.context_length`` wins).
DEFAULT_CONTEXT_LENGTH = 16_000


@dataclass
class StepRecord:
    """One executed step: label, and the turns it ran (``TurnResult``)."""

    label: str
    turns: list[TurnResult] = field(default_factory=list)


@dataclass
class CheckOutcome:
    """A ``check`` step's expectation evaluated in place: ``observed`` value, ``problem`` or "".

    ``under`` is the ``(clause, level)`` the problem is reported under when that is not the
    expectation's own (levels agree per expectation); ``inapplicable`` a skip reason.
    """

    expectation_id: str
    step: str
    observed: Any
    problem: str
    under: tuple | None = None
    inapplicable: str = ""


@dataclass
class ScenarioRun:
    """Everything a scenario run observed (input of expectations and of the report).

    Attributes:
        scenario: the :class:`Scenario`. recorder: the :class:`ScenarioRecorder` (provider
            calls, compactions, select_context mutations, engine errors, call order).
        steps: :class:`StepRecord` per executed step.
        orphans: V2 problems on live transcripts (first per step). uid_changes: U3 findings.
        checks: ``check`` step outcomes by expectation id.
        sessions: every agent session (label, session) in creation order.
        gateway: the :class:`Gateway` (None when no gateway step ran).
        stopped: ``(step label, error text)`` when a step raised or the run timed out, else None.
        timed_out: True when the run exceeded its time limit (a hanging engine; a failure).
        hung_method: the engine method in flight when it did ("": none, its constructor or the
            host).
        main: the main agent's session at the end. context_length: the host window (tokens).
        compacts: why the engine counts as one that compacts, "" when it never does
            (expectations about compactions then skip: no clause asks an engine to compact).
    """

    scenario: Scenario
    recorder: ScenarioRecorder
    steps: list[StepRecord] = field(default_factory=list)
    orphans: list[Finding] = field(default_factory=list)
    uid_changes: list[Finding] = field(default_factory=list)
    checks: dict[str, CheckOutcome] = field(default_factory=dict)
    sessions: list[tuple[str, HostSession]] = field(default_factory=list)
    gateway: Gateway | None = None
    stopped: tuple[str, str] | None = None
    timed_out: bool = False
    hung_method: str = ""
    main: HostSession | None = None
    context_length: int = DEFAULT_CONTEXT_LENGTH
    compacts: str = "unknown"

    @property
    def turns(self) -> list[tuple[str, TurnResult]]:
        """Every turn with its step label, in order."""
        return [(s.label, t) for s in self.steps for t in s.turns]
