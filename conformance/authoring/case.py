"""What every case of the stream is: the attributes the run reads of a case, as a Protocol.

A case is a registry check (:class:`conformance.authoring.registry.Check`), a scenario expectation
(:class:`conformance.run.cases.ScenarioCase`), a snapshot case
(:class:`conformance.run.cases.SnapshotCase`), or one of those played on one host
(:class:`conformance.authoring.hosts.HostCase`). The run
(:mod:`conformance.run.conformance_session`, :mod:`conformance.run.execution`,
:mod:`conformance.run.settle`) skips, runs, settles and reruns every kind by the attributes below;
what only one kind has is read where the run has tested ``kind`` first, through the narrower
Protocols: :class:`CheckCase` (a check's ``execute``), :class:`SnapshotCaptureCase` (a snapshot
case's ``capture`` and ``case_id``) and :class:`ScenarioExpectationCase` (a scenario
expectation's ``path``, ``scenario`` and ``expectation``).

The Protocols live here, below the run, so that :mod:`conformance.authoring.hosts` can name
them; :mod:`conformance.run.cases` re-exports :class:`Case` as ``conformance.run.cases.Case``.
"""

from __future__ import annotations

from typing import Any, Protocol


class Case(Protocol):
    """One case of the stream, as the run reads it (module doc).

    Attributes (read-only):
        id: the case id, unique in a run (``V2-tool-results-paired[compress]``,
            ``scenario:<name>:<expectation>``, ``D1-snapshot[<corpus case>]``).
        clause: the clause the case checks (a finding may carry another).
        level: ``MUST`` or ``SHOULD``.
        kind: ``contract`` (and the other registry kinds), ``scenario`` or ``snapshot``.
        title: one line saying what the case checks.
        needs: host features the case needs (skipped on a host or ABC without one).
        requires: engine capabilities the case needs (skipped when one is not declared).
        excludes: engine capabilities that make the case not apply.
        examples: Hypothesis examples under the default profile (None: the profile's count).
    """

    @property
    def id(self) -> str: ...

    @property
    def clause(self) -> str: ...

    @property
    def level(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def needs(self) -> frozenset: ...

    @property
    def requires(self) -> frozenset: ...

    @property
    def excludes(self) -> frozenset: ...

    @property
    def examples(self) -> int | None: ...

    def repro(self, base: str, violation: Any = None) -> str:
        """The command rerunning this case: ``base`` (the ``Repro:`` command base, which
        selects the engine and host) plus what selects the case; ``violation`` is the finding
        being reported, if any (a snapshot mismatch adds how to accept the change)."""
        ...


def key_selects(key: str, case_id: str, clause: str) -> bool:
    """True when ``key`` (an ``only`` entry, an expected-failure key) selects the case with id
    ``case_id`` and clause ``clause``: the id itself, the clause itself, or a prefix of the id
    that does not end inside a number (``A1`` selects ``A1-name-is-property``, not
    ``A10-summary-survives-next-compaction``; ``V2-tool`` selects ``V2-tool-results-paired``)."""
    if case_id == key or clause == key:
        return True
    if not key or not case_id.startswith(key):
        return False
    return not (key[-1].isdigit() and case_id[len(key) : len(key) + 1].isdigit())


class CheckCase(Case, Protocol):
    """A case that runs a body (kind other than ``scenario`` and ``snapshot``): a registry
    check, or one played on one host."""

    def execute(self, session: Any, ctx: Any) -> None:
        """Run the body on ``ctx`` (a :class:`~conformance.authoring.context.CheckContext`);
        returns None when the clause holds.

        Raises:
            ContractViolation, HostileEngine, CheckSkipped, EngineUnavailable: as the body does.
        """
        ...


class SnapshotCaptureCase(Case, Protocol):
    """A case of the snapshot tier (kind ``snapshot``): ``case_id`` names its corpus case."""

    @property
    def case_id(self) -> str: ...

    def capture(self, ctx: Any) -> str:
        """The engine's output for the corpus case, as snapshot text."""
        ...


class ScenarioExpectationCase(Case, Protocol):
    """One expectation of a scenario file (kind ``scenario``): the file's ``path``, its parsed
    ``scenario`` and the ``expectation`` judged on the file's run."""

    @property
    def path(self) -> Any: ...

    @property
    def scenario(self) -> Any: ...

    @property
    def expectation(self) -> Any: ...


__all__ = ["Case", "CheckCase", "ScenarioExpectationCase", "SnapshotCaptureCase"]
