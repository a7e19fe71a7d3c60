"""The one stream of cases: registry checks, scenario expectations and snapshot cases.

:func:`cases` yields every case of a run, in order: the registry's checks (sorted by id), the
expectations of the bundled scenario library and of any scenario files given (file by file,
in file order), then the snapshot cases (when the snapshot tier is on). Every front end
iterates this stream (the pytest plugin, ``run_conformance()``, ``context-engine-kit check``
and ``scenario``, the conftest fixture route), so they give the same result set.

A case (:class:`Case`, the Protocol of :mod:`conformance.authoring.case`) has ``id``, ``clause``,
``level``, ``kind``, ``title``, ``needs`` (host features), ``requires``/``excludes``
(capabilities), ``examples`` (its Hypothesis budget) and ``repro()``. A check runs with
``execute(session, ctx)``, which returns None when it holds and raises its finding otherwise
(:class:`~conformance.clauses.errors.ContractViolation`, ...); a snapshot case ``capture(ctx)``s
the engine's output; a scenario expectation is judged on its file's run. The session
(:mod:`conformance.run.conformance_session`, :mod:`conformance.run.execution`,
:mod:`conformance.run.settle`) turns each into a :class:`~conformance.run.results.Result` with one
skip rule, one xfail rule, one renderer and one ``Repro:`` rule for every kind.

:func:`run_stream` narrows the stream to one run's (a replayed case, ``only``, one case per host
view), and :func:`scenario_key` names the scenario run an expectation is judged on.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.authoring import registry
from conformance.authoring.case import Case, key_selects
from conformance.authoring.expect import SHOULD
from conformance.authoring.hosts import expand, host_of
from conformance.clauses import catalogue
from conformance.clauses.errors import ContractViolation

if TYPE_CHECKING:
    from conformance.run.options import RunOptions

#: The pytest test function that runs snapshot cases (syrupy's ``snapshot`` fixture is bound to
#: it); its items are ``test_compression_snapshot[<corpus case>]``.
SNAPSHOT_TEST = "test_compression_snapshot"


@dataclass(frozen=True)
class ScenarioCase:
    """One expectation of a scenario file (kind ``scenario``).

    Attributes:
        path: the scenario file. scenario: the parsed :class:`~conformance.scenarios.spec.Scenario`.
        expectation: the :class:`~conformance.scenarios.spec.Expectation`.
        bundled: True for the kit's scenario library (rerun by id), False for a user's file
            (rerun by file and expectation).
    """

    path: Path
    scenario: Any = field(compare=False, repr=False)
    expectation: Any = field(compare=False, repr=False)
    bundled: bool = True
    kind: str = "scenario"
    requires: frozenset = frozenset()
    excludes: frozenset = frozenset()
    examples: int | None = None
    practice: str | None = None

    @property
    def id(self) -> str:
        """``scenario:<scenario name>:<expectation id>``."""
        return f"scenario:{self.scenario.name}:{self.expectation.id}"

    @property
    def clause(self) -> str:
        """The expectation's declared clause (a finding may be filed under another)."""
        return self.expectation.clause

    @property
    def level(self) -> str:
        """The expectation's declared level."""
        return self.expectation.level

    @property
    def title(self) -> str:
        """What the expectation checks: its ``why`` text, else its kind."""
        return self.expectation.why or self.expectation.kind.replace("_", " ")

    @property
    def needs(self) -> frozenset:
        """Host features: the expectation's clause's (catalogue)."""
        feature = catalogue.get(self.clause).host_feature
        return frozenset([feature]) if feature else frozenset()

    def repro(self, base: str, violation: Any = None) -> str:
        """The command rerunning this expectation: the library's by id, a user file by path."""
        if self.bundled:
            return f"{base} -k '{self.id}'"
        return f"{base} {self.path} -k '{self.expectation.id}'"


@dataclass(frozen=True)
class SnapshotCase:
    """One corpus case of the snapshot tier (kind ``snapshot``, kit clause D1, SHOULD; a mismatch
    fails the run all the same: a stored snapshot is the author's baseline)."""

    case_id: str
    clause: str = "D1"
    level: str = SHOULD
    kind: str = "snapshot"
    needs: frozenset = frozenset()
    requires: frozenset = frozenset()
    excludes: frozenset = frozenset()
    examples: int | None = None
    practice: str | None = "kit"

    @property
    def id(self) -> str:
        """``D1-snapshot[<corpus case>]``."""
        return f"D1-snapshot[{self.case_id}]"

    @property
    def title(self) -> str:
        """What the case checks."""
        return f"compress()/select_context() output of corpus case {self.case_id!r} is unchanged"

    def capture(self, ctx: Any) -> str:
        """The engine's output for the corpus case as snapshot text (in the case's child, each
        engine in its own home); the session compares it with the stored snapshot in the
        parent (syrupy under pytest, else :func:`compare_with_file`), where
        ``--snapshot-update`` writes."""
        from conformance.snapshots import corpus
        from conformance.snapshots.canonical import snapshot_text
        from conformance.snapshots.capture import capture_case

        def fresh() -> Any:
            return ctx.new_engine(configure=False)

        return snapshot_text(capture_case(fresh, corpus.get(self.case_id)))

    def repro(self, base: str, violation: Any = None) -> str:
        """The command rerunning this snapshot case, and how to accept or create the snapshot."""
        again = f"{base} -k '{SNAPSHOT_TEST}[{self.case_id}]'"
        if violation is None or not isinstance(violation, ContractViolation):
            return again
        verb = (
            "create it"
            if getattr(violation, "missing", False)
            else ("if the change is intended, accept it")
        )
        return f"{again}; {verb}: {again} --snapshot-update"


def compare_with_file(directory: Path | None, case_id: str, text: str) -> None:
    """Compare ``text`` with ``<directory>/<case_id>.json`` (the front ends without syrupy).

    Raises:
        ContractViolation: D1 SHOULD, with a unified diff (``-`` stored, ``+`` this run).
    """
    from conformance.snapshots.mismatch import mismatch_detail

    path = Path(directory or ".") / f"{case_id}.json"
    try:
        stored = path.read_text(encoding="utf-8")
    except OSError:
        stored = None
    if stored == text:
        return
    diff = (
        []
        if stored is None
        else list(difflib.unified_diff(stored.splitlines(), text.splitlines(), lineterm=""))
    )
    violation = ContractViolation("D1", SHOULD, mismatch_detail(case_id, str(path), stored is None))
    violation.missing = stored is None
    violation.appendix = "\n".join(diff)
    raise violation


def scenario_cases(paths: Iterable[Path], *, bundled: bool) -> list[ScenarioCase]:
    """One case per expectation of each scenario file, in file order.

    Raises:
        ScenarioError: a malformed file (``file:line: field: problem``).
    """
    from conformance.scenarios.loader import load_scenario

    out = []
    for path in paths:
        scenario = load_scenario(path)
        out += [ScenarioCase(Path(path), scenario, exp, bundled) for exp in scenario.expectations]
    return out


def cases(
    *,
    scenarios: bool = True,
    scenario_files: Iterable[Path] = (),
    checks: bool = True,
    snapshots: bool = False,
) -> list[Case]:
    """Every case of a run, in stream order (module doc).

    Args:
        scenarios: include the bundled scenario library (``--conformance-no-scenarios``: False).
        scenario_files: further scenario files (a user's), after the library.
        checks: include the registry's checks (``run_conformance`` of scenarios only: False).
        snapshots: include the snapshot cases (the tier is on).
    Raises:
        ScenarioError: a malformed scenario file.
    """
    from conformance.scenarios import library_paths
    from conformance.snapshots import corpus

    out: list[Case] = list(registry.all_checks()) if checks else []
    if scenarios:
        out += scenario_cases(library_paths(), bundled=True)
    out += scenario_cases([Path(p) for p in scenario_files], bundled=False)
    if snapshots:
        out += [SnapshotCase(case_id) for case_id in corpus.CASES]
    return out


def run_stream(options: RunOptions) -> list[Case]:
    """The cases of one run, in stream order (:func:`cases` of its options), narrowed to the
    replayed case (``options.replay``) or to ``options.only`` (case ids, id prefixes, clause
    ids), each case once per host view of ``options.host_profiles``
    (:func:`conformance.authoring.hosts.expand`).

    Raises:
        ScenarioError: a malformed scenario file.
    """
    o = options
    out = cases(
        scenarios=o.scenarios and o.replay is None,
        scenario_files=o.scenario_files,
        checks=o.checks,
        snapshots=o.snapshots_dir is not None and o.replay is None,
    )
    if o.replay is not None:
        out = [c for c in out if c.id == o.replay["check"]]
    out = expand(out, o.host_profiles)  # one case per host view (conformance.authoring.hosts)
    if o.replay is None and o.only:
        keys = list(o.only)
        out = [
            c
            for c in out
            if any(
                key_selects(k, c.id, c.clause) or key_selects(k, getattr(c, "base", c).id, c.clause)
                for k in keys
            )
        ]
    return out


def scenario_key(case: Case) -> str:
    """The key of ``case``'s scenario run: its file, and its host in a run of several."""
    host = host_of(case)
    return str(getattr(case, "path", "")) + (f"@{host}" if host else "")


def scenario_name(case: Case) -> str:
    """The scenario's name in a case id ``scenario:NAME:EXPECTATION``."""
    return case.id.split(":")[1] if case.id.count(":") >= 2 else case.id


__all__ = [
    "Case",
    "SNAPSHOT_TEST",
    "ScenarioCase",
    "SnapshotCase",
    "cases",
    "compare_with_file",
    "run_stream",
    "scenario_cases",
    "scenario_key",
    "scenario_name",
]
