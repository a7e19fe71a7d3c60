"""Settling a case: turning an :class:`~conformance.run.execution.Attempt` into its
:class:`~conformance.run.results.Result`, in the kit's process.

:func:`settle` applies, for every kind of case, the rules that need the whole run: a hang
counts toward ``--conformance-max-timeouts`` once; a snapshot capture is compared with its
stored snapshot (syrupy's ``compare`` under pytest, else :func:`~conformance.run.cases.
compare_with_file`); a finding is filed under its own clause and level (:func:`failed`), as an
expected failure when the engine or the user listed its case or clause, with its failure file
(:mod:`conformance.run.replay`) and its ``Repro:`` line; what the engine reached for outside its
sandbox is a kit clause E1 finding; one root cause is counted once, and every later case it
breaks points to the first (:func:`error`, :func:`failed`). The run's state these rules read and
write is a :class:`SettlingSession` (the
:class:`~conformance.run.conformance_session.ConformanceSession`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from conformance.authoring.engine_llm import ledger_row
from conformance.authoring.expect import MUST
from conformance.authoring.hosts import host_of
from conformance.clauses.errors import ContractViolation, HostileEngine, render
from conformance.run import replay
from conformance.run.cases import compare_with_file
from conformance.run.execution import Attempt
from conformance.run.options import Declarations, RunOptions, xfail_for_clause, xfail_reason
from conformance.run.repro import before_repro
from conformance.run.results import Result
from conformance.runtime.sandbox import CLAUSE as E1

if TYPE_CHECKING:
    from conformance.authoring.case import Case, SnapshotCaptureCase
    from conformance.runtime.engine_loading import EngineFactory
    from conformance.runtime.timeouts import HangBudget


class SettlingSession(Protocol):
    """The run state settling reads and writes (a
    :class:`~conformance.run.conformance_session.ConformanceSession`).

    Attributes:
        options: the run's options. factory: the engine factory (None: not bound).
        declarations: the engine's declarations (probed on first read).
        hangs: the run's hang count (``--conformance-max-timeouts``).
        root_seen: root-cause key -> the id of the first case that reported it.
    """

    options: RunOptions
    factory: EngineFactory | None
    hangs: HangBudget
    root_seen: dict[str, str]

    @property
    def declarations(self) -> Declarations: ...

    def repro(self, case: Case, replay_file: str | None = None, violation: Any = None) -> str:
        """The ``Repro:`` command of ``case`` (:func:`conformance.run.repro.repro`)."""
        ...

    def snapshots_dir(self) -> Path | None:
        """The engine's snapshot folder (None: the tier is off)."""
        ...


def unbuildable(session: SettlingSession, case: Case, started: float) -> Result:
    """The result of ``case`` when the engine cannot be built in its sandbox (its
    constructor reached outside it, was refused and raised): kit clause E1, MUST, one root
    cause for every case of the run."""
    declared = session.declarations
    finding = ContractViolation(
        E1,
        MUST,
        f"the engine cannot be built in its sandbox ({declared.error}): "
        + _reach_detail(declared.reaches),
    )
    finding.root_cause = "E1|constructor|" + declared.reaches[0].detail
    return failed(session, case, finding, None, started)


def make_result(case: Case, outcome: str, message: str, started: float, **kw: Any) -> Result:
    """The :class:`~conformance.run.results.Result` of ``case`` with ``outcome`` and
    ``message``, timed since ``started`` (a :func:`time.perf_counter` value, seconds); ``kw``:
    further ``Result`` fields, ``clause`` and ``level`` overriding the case's (a finding's)."""
    clause, level = kw.pop("clause", case.clause), kw.pop("level", case.level)
    return Result(
        case.id,
        clause,
        level,
        outcome,
        message,
        time.perf_counter() - started,
        kind=getattr(case, "kind", "contract"),
        title=getattr(case, "title", ""),
        hosts=tuple(getattr(case, "hosts", ())),
        **kw,
    )


def error(
    session: SettlingSession, case: Case, detail: str, started: float, cause: str = ""
) -> Result:
    """An error result; ``cause`` (a root-cause key) groups it with the errors of the same
    cause: the verdict counts them once, and every one but the first says which it is."""
    message = render(case.clause, case.level, detail, repro=session.repro(case))
    if cause:
        earlier = session.root_seen.setdefault(cause, case.id)
        if earlier != case.id:
            message = before_repro(
                message, f"Same root cause as {earlier} (the verdict counts it once)."
            )
    return make_result(case, "error", message, started, root_cause=cause)


def settle(
    session: SettlingSession, case: Case, att: Attempt, started: float, extras: dict
) -> Result:
    """Turn an attempt into the case's result (in this process): the snapshot comparison,
    the hang budget, expected failures, failure files, sandbox findings, budget notes;
    the result carries the attempt's engine-LLM ledger (:func:`conformance.authoring.engine_llm.
    ledger_row`)."""
    result = _settle_outcome(session, case, att, started, extras)
    result.llm = ledger_row(att.llm)
    return result


def _settle_outcome(
    session: SettlingSession, case: Case, att: Attempt, started: float, extras: dict
) -> Result:
    """:func:`settle` without the ledger."""
    if att.hang is not None and att.counted:
        att.counted = False
        session.hangs.record(att.hang or None)
    if case.kind == "snapshot" and att.outcome == "passed":
        compare = extras.get("compare")
        try:
            if compare is None:
                snapshot = cast("SnapshotCaptureCase", case)
                compare_with_file(session.snapshots_dir(), snapshot.case_id, att.value)
            else:
                compare(att.value)
        except ContractViolation as exc:
            att = Attempt(case.id, "finding", finding=exc, reaches=att.reaches)
    xfail = xfail_reason(case, session.declarations.expected_failures)
    if att.outcome == "skipped":
        return make_result(case, "skipped", att.text, started, budget_reached=att.budget_reached)
    if att.outcome == "error":
        return error(session, case, att.text, started)
    if att.outcome == "finding":
        if case.kind == "snapshot" and att.hang is not None:  # no mismatch: it did not run
            return error(session, case, _detail(att.finding), started)
        result = failed(session, case, att.finding, xfail, started)
        if att.reaches:
            result.message += " Also: " + _reach_text(att.reaches)
        return result
    note = _budget_note(att)
    if att.reaches:
        keys = ["E1|" + r.detail for r in att.reaches]
        earlier = session.root_seen.get(keys[0])
        if earlier is None or earlier == case.id or not all(k in session.root_seen for k in keys):
            finding = ContractViolation(E1, MUST, _reach_detail(att.reaches))
            finding.root_cause = keys[0]
            for key in keys[1:]:
                session.root_seen.setdefault(key, case.id)
            return failed(session, case, finding, None, started)
        # the same reach (the constructor's, say) as an earlier case: one root cause is one
        # finding, reported there; this case's own clause was judged and held
        note = (
            f"{note}; " if note else ""
        ) + f"passed (E1: {att.reaches[0].describe()} again, reported under {earlier})"
    if xfail is not None:
        text = f"expected failure did not happen ({xfail})"
        return make_result(case, "xpassed", text, started)
    _clear_stale_failure(session, case)
    return make_result(
        case,
        "passed",
        note,
        started,
        examples_run=att.examples if att.asked else None,
        examples_asked=att.asked or None,
        budget_reached=att.budget_reached,
    )


def failed(
    session: SettlingSession, case: Case, exc: Any, xfail: str | None, started: float
) -> Result:
    """A finding: its failure file, xfail rule and ``Repro:`` line."""
    replay_file = _write_failure(session, case, exc)
    xfails = session.declarations.expected_failures
    why = xfail if xfail is not None else xfail_for_clause(exc.clause, xfails)
    size = example_messages(getattr(exc, "example", None))
    appendix = getattr(exc, "appendix", "")
    cause = getattr(exc, "root_cause", "")
    if why is not None:
        text = render(exc.clause, exc.level, _detail(exc)) + f" [expected failure: {why}]"
        return make_result(
            case,
            "xfailed",
            text,
            started,
            clause=exc.clause,
            level=exc.level,
            replay_file=replay_file,
            example_messages=size,
        )
    text = render(exc.clause, exc.level, _detail(exc), repro=session.repro(case, replay_file, exc))
    earlier = session.root_seen.setdefault(cause, case.id) if cause else case.id
    if earlier != case.id:
        text = before_repro(text, f"Same root cause as {earlier} (the verdict counts it once).")
    if appendix:
        text += "\n" + appendix
    return make_result(
        case,
        "failed",
        text,
        started,
        clause=exc.clause,
        level=exc.level,
        replay_file=replay_file,
        example_messages=size,
        root_cause=cause,
    )


def failure_file(session: SettlingSession, case: Case) -> Path | None:
    """Where ``case``'s failure file goes for this engine (None without a failures dir)."""
    if session.options.failures_dir is None or session.factory is None:
        return None
    return replay.failure_path(session.options.failures_dir, session.factory.slug, case.id)


def _write_failure(session: SettlingSession, case: Case, exc: Any) -> str | None:
    """Write ``case``'s failure file for the finding ``exc`` (one with a drawn example, when a
    failures dir is set and the run is no replay); returns its path, or None."""
    path = failure_file(session, case)
    example = getattr(exc, "example", None)
    factory = session.factory  # never None when ``path`` is not
    if path is None or factory is None or example is None or session.options.replay is not None:
        return None
    o = session.options
    return replay.write_failure(
        path,
        {
            "check": getattr(case, "base", case).id,  # replayed on its host alone
            "clause": exc.clause,
            "level": exc.level,
            "engine": factory.record(),
            "host_profile": host_of(case) or o.host_profile,
            "profile": o.profile,
            "capabilities": sorted(o.capabilities),
            "message": exc.render(),
            "example": example,
            "seed": o.seed,
            "derandomize": o.derandomize,
        },
    )


def _clear_stale_failure(session: SettlingSession, case: Case) -> None:
    """Remove ``case``'s failure file of an earlier run now that the case passed."""
    path = failure_file(session, case)
    if path is not None and session.options.replay is None:
        replay.clear_failure(path, case.id)


def example_messages(example: Any) -> int | None:
    """Messages in a failure's shrunk example: the longest drawn transcript (None if none)."""
    if not isinstance(example, dict):
        return None
    best = None
    stack = [example]
    while stack:
        v = stack.pop()
        if isinstance(v, list) and v and all(isinstance(m, dict) and "role" in m for m in v):
            best = max(best or 0, len(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
    return best


def _reach_text(reaches: list[Any]) -> str:
    return render(E1, MUST, _reach_detail(reaches))


def _reach_detail(reaches: list[Any]) -> str:
    """E1's text: what the engine reached for outside its sandbox (blocked)."""
    shown = "; ".join(r.describe() for r in reaches[:3])
    more = f" (+{len(reaches) - 3} more)" if len(reaches) > 3 else ""
    return (
        f"the engine reached outside its sandbox: expected loopback only, no processes and "
        f"writes only under its own home, got: {shown}{more} (blocked: the engine got an "
        "OSError; the finding stands even when the engine swallowed it)"
    )


def _budget_note(att: Any) -> str:
    """``passed: 9 of 40 examples in 11.2 s, budget reached`` when the share ran out, else ""."""
    if not att.budget_reached:
        return ""
    return (
        f"passed: {att.examples} of {att.asked} examples in {att.seconds:.1f} s, budget reached "
        "(--conformance-budget: the engine's calls are slow, so the check stopped drawing; no "
        "failure)"
    )


def _detail(exc: Any) -> str:
    """A finding's text after the ``[CLAUSE LEVEL]`` prefix (method included for hangs)."""
    if isinstance(exc, HostileEngine) and exc.method:
        return f"{exc.method}(): {exc.detail}"
    return exc.detail


__all__ = [
    "SettlingSession",
    "error",
    "example_messages",
    "failed",
    "failure_file",
    "make_result",
    "settle",
    "unbuildable",
]
