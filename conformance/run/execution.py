"""Running one case: in its sandbox, under the per-call limit, with its share of the budget.

:func:`attempt` runs a check or a snapshot capture, :func:`attempt_scenario` plays one scenario
file and judges all its expectations; both run in the case's supervised child (or here, without
fork) and return :class:`Attempt` records that pickle. The session settles an attempt in the parent
(:meth:`conformance.run.conformance_session.ConformanceSession.run_case`,
:mod:`conformance.run.settle`): expected failures, failure files, the snapshot comparison,
``Repro:`` lines. A child that died or hung becomes an attempt too (:func:`from_death`), naming the
engine call in flight, and a finding the child reported before it died is kept.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from conformance.authoring.engine_llm import engine_llm
from conformance.authoring.expect import CURRENT_CASE, MUST
from conformance.authoring.stable_draws import no_local_constants
from conformance.clauses.errors import (
    CaseError,
    CheckSkipped,
    ContractViolation,
    EngineUnavailable,
    HostileEngine,
)
from conformance.runtime.sandbox import Reach, Sandbox, block_network, watching
from conformance.runtime.supervisor import Died, Hung, report_progress, supervise_inprocess
from conformance.runtime.timeouts import engine_seconds, hang_root_cause

if TYPE_CHECKING:
    from conformance.authoring.case import (
        Case,
        CheckCase,
        ScenarioExpectationCase,
        SnapshotCaptureCase,
    )
    from conformance.authoring.context import CheckContext
    from conformance.run.options import RunOptions

#: Seconds a case's child may outlive its per-call limit before the parent kills it (the child's
#: own watcher reports a hang with more context first; this catches a call that holds the GIL).
GRACE_S = 2.0


class AttemptSession(Protocol):
    """The run state an attempt reads (a
    :class:`~conformance.run.conformance_session.ConformanceSession`).

    Attributes:
        options: the run's options (``timeout``, the per-call limit in seconds;
            ``memory_limit``, a child's cap in bytes or None).
        context: the :class:`~conformance.authoring.context.CheckContext` a check runs with.
        replay_draws: the replayed failure file's draws (None when not replaying).
        user_hermes_home: the user's ``HERMES_HOME`` (None: unset), seeding each sandbox.
        given_runs: scenario runs handed in already played, by scenario file path.
    """

    options: RunOptions
    user_hermes_home: str | None
    given_runs: dict[str, Any]

    @property
    def context(self) -> CheckContext: ...

    @property
    def replay_draws(self) -> dict[str, Any] | None: ...

    def play_scenario(self, case: Case) -> Any:
        """Play ``case``'s scenario on the run's engine; returns the
        :class:`~conformance.scenarios.run.ScenarioRun`."""
        ...


@dataclass
class Attempt:
    """What running one case produced, before the session settles it.

    Attributes:
        case_id: the case. outcome: ``passed``, ``finding``, ``skipped`` or ``error``.
        finding: the :class:`~conformance.clauses.errors.ContractViolation` or
            :class:`~conformance.clauses.errors.HostileEngine` of a ``finding``.
        text: the skip reason or the error's text.
        hang: the method of a hang (it counts toward ``--conformance-max-timeouts``), or None.
        reaches: what the engine reached for and was refused (kit clause E1).
        examples, asked, budget_reached, seconds: the budget share's record.
        value: a snapshot case's captured text.
        counted: False when another attempt of the same run already counted the hang (and the
            run's LLM cost).
        llm: the ledger of the engine's own LLM calls during the case
            (:mod:`conformance.authoring.engine_llm`).
        engine_s: seconds spent inside the engine's calls during the attempt (what the budget
            is charged; 0 for the other attempts of one scenario run).
    """

    case_id: str
    outcome: str
    finding: Any = None
    text: str = ""
    hang: str | None = None
    reaches: list[Reach] = field(default_factory=list)
    examples: int = 0
    asked: int = 0
    budget_reached: bool = False
    seconds: float = 0.0
    value: Any = None
    counted: bool = True
    llm: dict = field(default_factory=dict)
    engine_s: float = 0.0


def _hang_finding(case: Case, method: str, limit: float, what: str = "") -> HostileEngine:
    who = "" if method else "the check "
    finding = HostileEngine(
        case.clause,
        case.level,
        method,
        f"{who}did not return within {limit:g} s (--conformance-timeout, the limit of one "
        f"engine call; {what or 'the case was stopped there and the run went on'})",
    )
    finding.root_cause = hang_root_cause(method)
    return finding


def _classify(case: Case, run: Any, limit: float, share: Any) -> Attempt:
    """Run ``run()`` (the case's body) and turn what it did into an :class:`Attempt`."""
    try:
        out = supervise_inprocess(run, call_limit=limit, case_limit=float("inf"))
    except CheckSkipped as exc:
        return Attempt(case.id, "skipped", text=str(exc))
    except (ContractViolation, HostileEngine) as exc:
        return Attempt(case.id, "finding", finding=exc)
    except EngineUnavailable as exc:
        return Attempt(case.id, "error", text=f"engine not available: {exc}")
    except CaseError as exc:
        return Attempt(case.id, "error", text=str(exc))
    except KeyboardInterrupt:
        raise  # outside a supervised child it is Ctrl-C (inside, the engine's is a finding)
    except BaseException as exc:  # kit bugs, Hypothesis errors
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return Attempt(case.id, "error", text=f"check could not complete: {text[:500]}")
    if isinstance(out, Hung):
        found = getattr(share, "found", None)
        if found:  # a finding made before the hang is the verdict, never the timeout
            return Attempt(case.id, "finding", finding=found[-1], hang=out.method)
        return Attempt(
            case.id, "finding", finding=_hang_finding(case, out.method, limit), hang=out.method
        )
    return Attempt(case.id, "passed", value=out)


def attempt(session: AttemptSession, case: Case, share: Any = None) -> Attempt:
    """Run a check (``case.execute``, or a snapshot case's ``case.capture``) in a fresh
    sandbox; returns its attempt.

    Every engine the case builds gets its own home; what it reaches for outside is refused and
    recorded; the per-call limit applies to each engine call; ``share`` (a
    :class:`~conformance.authoring.budget.Share`) bounds how long the case draws examples.
    """
    draws = session.replay_draws
    findings: list[Any] = []

    def on_finding(exc: Any) -> None:
        findings.append(exc)
        report_progress(Attempt(case.id, "finding", finding=exc))

    if share is not None:
        share.found = findings

    def run() -> Any:
        token = CURRENT_CASE.set(case)
        try:
            with block_network(), no_local_constants():
                if case.kind == "snapshot":
                    return cast("SnapshotCaptureCase", case).capture(ctx)
                cast("CheckCase", case).execute(session, ctx)
                return None
        finally:
            CURRENT_CASE.reset(token)

    engine_at_start = engine_seconds()
    with engine_llm(case.id) as (ledger, seed_home):
        sandbox = Sandbox(session.user_hermes_home, seed=seed_home)
        ctx = session.context.for_check(
            case, replay=draws, sandbox=sandbox, share=share, on_finding=on_finding
        )
        try:
            with watching(sandbox) as reaches:
                result = _classify(case, run, session.options.timeout, share)
                result.reaches = list(reaches)
        finally:
            sandbox.close()
        result = _memory_kept(case, result, session)
        result.llm = ledger.as_dict()
    result.engine_s = engine_seconds() - engine_at_start
    if share is not None:
        result.examples, result.asked = share.examples, share.asked
        result.budget_reached, result.seconds = share.reached, share.elapsed()
    return result


def attempt_scenario(session: AttemptSession, cases: list[Case]) -> dict[str, Attempt]:
    """Play the scenario file of ``cases`` once, in one sandbox (one Hermes installation), and
    judge each expectation; returns the attempts by case id."""
    first = cases[0]
    out: dict[str, Attempt] = {}
    engine_at_start = engine_seconds()
    with engine_llm(first.id) as (ledger, seed_home):
        _play_and_judge(session, cast("list[ScenarioExpectationCase]", cases), out, seed_home)
        by_id = {c.id: c for c in cases}
        for key, attempt_ in list(out.items()):
            out[key] = _memory_kept(by_id[key], attempt_, session)
            out[key].counted = attempt_.counted
            out[key].hang = attempt_.hang
        for attempt_ in out.values():
            attempt_.llm = ledger.as_dict() if attempt_.counted else {}
            if attempt_.counted:
                attempt_.engine_s = engine_seconds() - engine_at_start
    return out


def _play_and_judge(
    session: AttemptSession, cases: list[ScenarioExpectationCase], out: dict, seed_home: Any
) -> None:
    """Play the scenario of ``cases`` in one sandbox and judge each expectation into ``out``."""
    from conformance.scenarios.expectations import judge_expectation

    first = cases[0]
    sandbox = Sandbox(session.user_hermes_home, seed=seed_home)
    try:
        with watching(sandbox) as reaches:
            sandbox.new_home()
            run = session.given_runs.get(str(first.path))
            if run is None:
                with block_network():
                    run = session.play_scenario(first)
            for case in cases:

                def judge(case: ScenarioExpectationCase = case) -> None:
                    judge_expectation(run, case.expectation)

                out[case.id] = _classify(case, judge, session.options.timeout, None)
            for i, attempt_ in enumerate(out.values()):
                attempt_.reaches = list(reaches)
                attempt_.counted = i == 0  # the run's hang and LLM cost count once
                if run.timed_out:
                    attempt_.hang = _hung_method(run.stopped[1] if run.stopped else "")
    finally:
        sandbox.close()


def _hung_method(stopped: str) -> str:
    import re

    match = re.match(r"timeout: ([A-Za-z_][\w.]*)\(\)", stopped or "")
    return match.group(1) if match else ""


def from_death(case: Case, outcome: Died | Hung, session: AttemptSession) -> Attempt:
    """The attempt of a case whose child died or was killed: a finding naming the engine call in
    flight and the cause, or the finding the child had reported before (never lost)."""
    progress = getattr(outcome, "progress", None)
    limit = session.options.timeout
    if isinstance(progress, Attempt) and progress.finding is not None:
        progress.case_id = case.id
        progress.hang = outcome.method if isinstance(outcome, Hung) else None
        return progress
    if isinstance(outcome, Hung) and outcome.stalled:
        return _stall_finding(case, outcome, session)
    if isinstance(outcome, Hung):
        if outcome.case_limit:
            return Attempt(
                case.id,
                "error",
                text=f"the case did not finish within {outcome.seconds:.0f} s although no single "
                "engine call hung (a kit fault: please report it with this case's Repro line)",
            )
        what = "the case's process was killed there, so no thread is left behind"
        finding = _hang_finding(case, outcome.method, limit, what)
        return Attempt(case.id, "finding", finding=finding, hang=outcome.method)
    cap = session.options.memory_limit
    memory = (
        f"; the process may have reached its memory cap ({cap / 1024**3:g} GiB, "
        "--conformance-memory-limit)"
        if cap and outcome.signal is not None
        else ""
    )
    method = outcome.method
    where = f"{method}() " if method else "the engine "
    finding = HostileEngine(
        case.clause,
        MUST,
        "",
        f"{where}ended the case's process: it {outcome.describe()}{memory} (an engine must not "
        "end the host process; the kit ran the case in a child process, so the run went on)",
    )
    finding.root_cause = f"{method or '?'}|died|{outcome.exit_code}|{outcome.signal}"
    return Attempt(case.id, "finding", finding=finding)


def _memory_kept(case: Case, result: Attempt, session: AttemptSession) -> Attempt:
    """A kit error while this child is at its memory cap (the kit's own allocation, or a
    thread it starts, failed) is the engine's finding, not a kit fault: the engine took the
    memory and kept it. The same finding as a stall at the cap (:func:`_stall_finding`)."""
    import os

    from conformance.runtime.supervisor import (
        NEAR_CAP,
        address_space,
        memory_taken_in,
        near_memory_cap,
    )

    if result.outcome != "error":
        return result
    if not near_memory_cap(os.getpid(), session.options.memory_limit, NEAR_CAP):
        return result
    method = memory_taken_in() or _last_method(case)
    stall = Hung(method, 0.0, stalled=True, memory=address_space(os.getpid()))
    kept = _stall_finding(case, stall, session)
    kept.reaches = result.reaches
    return kept


def _last_method(case: Case) -> str:
    from conformance.runtime.timeouts import LAST_CALL

    return LAST_CALL[0] if LAST_CALL else ""


def _stall_finding(case: Case, outcome: Hung, session: AttemptSession) -> Attempt:
    """The attempt of a case whose child sat still at its memory cap after an engine call
    returned (the supervisor's memory rule), or whose next allocation failed there: a MUST
    finding under the case's clause naming the last engine call and the memory held, one root
    cause across cases."""
    cap = session.options.memory_limit or 0
    method = outcome.method
    after = f"it took the memory in {method}() and kept it" if method else "between engine calls"
    then = (
        f"could not go on for {outcome.seconds:.0f} s, so the kit ended it"
        if outcome.seconds
        else "the kit's next allocation failed (MemoryError)"
    )
    finding = HostileEngine(
        case.clause,
        MUST,
        method,
        f"the engine kept memory up to the case's memory cap: {after}, the case's process held "
        f"{outcome.memory / 1024**3:.2f} GiB of its {cap / 1024**3:g} GiB cap "
        f"(--conformance-memory-limit) and {then} (an engine must free what it allocates, or "
        "handle MemoryError, and not keep the host process at its memory limit)",
    )
    finding.root_cause = "memory-kept"  # one cause, whichever case met it
    return Attempt(case.id, "finding", finding=finding)


def engine_time(attempts: Iterable[Attempt], started: float) -> float:
    """Seconds of engine calls the attempts report (what budgets are charged); the wall time
    since ``started`` (a :func:`time.perf_counter` value) for a case whose process died or hung
    (it could not report)."""
    attempts = list(attempts)
    if any(a.hang is not None or a.outcome == "error" for a in attempts):
        return time.perf_counter() - started
    return sum(a.engine_s for a in attempts)


def cost_on(attempts: dict[str, Attempt], case_id: str) -> None:
    """Put a scenario run's engine-LLM ledger on the attempt of ``case_id`` (the expectation
    whose run it was, settled first: a skipped earlier expectation never hides the cost) and
    none on the others, so the run's cost counts once."""
    ledger = next((a.llm for a in attempts.values() if a.llm), {})
    for a in attempts.values():
        a.llm = {}
    if case_id in attempts:
        attempts[case_id].llm = ledger


__all__ = [
    "Attempt",
    "AttemptSession",
    "GRACE_S",
    "attempt",
    "attempt_scenario",
    "cost_on",
    "engine_time",
    "from_death",
]
