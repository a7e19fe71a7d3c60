"""Expectations of a scenario, judged on a :class:`~conformance.scenarios.run.ScenarioRun`.

:func:`judge_expectation` judges one expectation (a case of the run's stream,
:class:`conformance.run.cases.ScenarioCase`) and raises its finding in the kit's grammar::

    [H3 SHOULD] scenario 'h3-history-untouched', expectation 'history-not-rewritten' at
    steps[2] user <60 words on database>: select_context() changed request_messages[1].content
    in place (it returned None): expected the engine to leave its arguments untouched,
    got 1 such call (first shown). See docs/contract.md#h3.

(the session appends ``Repro:``, :mod:`conformance.run.session`).

Kinds (``params`` in brackets):

==========================  ===========================================================
``no_orphan_pairs``         every live transcript after every step has no orphan pair (V2)
``uids_stable``             a message still present keeps its message_uid (U3)
``history_not_rewritten``   select_context never edits the messages it is handed (H3)
``no_engine_errors``        no engine method raised (on any agent or thread); reported under
                            the clause of the method that raised (:data:`METHOD_CLAUSES`)
``engine_active``           no agent fell back to the built-in compressor (C1, C3)
``compressions``            committed compactions, all agents ({min, max}); a ``min`` counts
                            declined passes too (a decline is legal) and skips for an engine
                            that never compacts (``ScenarioRun.compacts``)
``turns_failed``            turns that ended on a provider failure ({min, max})
``hygiene_runs``            gateway hygiene passes that fired (B7; {min, max})
``cache_read_ratio``        cache read tokens / prompt tokens over the calls after the
                            first ``skip_calls`` (default 2) ({min})
``tokens_after_compaction`` tokens of every committed compress() output, and of every equal
                            copy returned ({max}); skips for an engine that never compacts
                            when its only passes over the line were equal copies
``call_order``              the methods were called in this order (a subsequence; L1);
                            ``compress`` is not required of an engine that never compacts
``engine_attr``             an engine attribute at a ``check`` step or at the end
                            ({name, equals | min | max, agent: main | subagent})
==========================  ===========================================================

An engine exception is reported under the clause that governs the method that raised,
at that clause's registry level (:func:`conformance.authoring.registry.clause_level`), never above
the expectation's own level: a raising select_context() is ``[H1 SHOULD]`` here as in the
H1 check (the host fails open), a raising on_session_start() ``[O1 MUST]``. The
expectation's declared clause names only errors of methods outside
:data:`METHOD_CLAUSES`.

This module judges an expectation (:func:`judge_expectation`, :func:`evaluate`); the rule of each
kind is in :mod:`conformance.scenarios.expectation_kinds`, the ``engine_attr`` rule and the
in-place evaluation of a ``check`` step in :mod:`conformance.scenarios.engine_attr`.
"""

from __future__ import annotations

from typing import Any

from conformance.clauses.catalogue import METHOD_CLAUSES
from conformance.clauses.errors import CaseError, CheckSkipped, ContractViolation, HostileEngine
from conformance.runtime.timeouts import hang_root_cause
from conformance.scenarios.engine_attr import K2_EXEMPT, evaluate_check
from conformance.scenarios.expectation_kinds import Inapplicable, evaluate_kind, finding_clause
from conformance.scenarios.expectation_kinds import _shrink as _shrink  # tests import it here
from conformance.scenarios.run import ScenarioRun
from conformance.scenarios.spec import Expectation


def check_id(run_or_name: Any, exp: Expectation) -> str:
    """The verdict id of an expectation: ``scenario:<scenario name>:<expectation id>``."""
    name = run_or_name if isinstance(run_or_name, str) else run_or_name.scenario.name
    return f"scenario:{name}:{exp.id}"


def compress_fault(run: ScenarioRun) -> str:
    """The root cause that kept every compaction of ``run`` from committing, when compress()
    itself failed: ``compress|returned|<type>`` (it returned no list, A4) or the key of the
    first exception it raised; "" when some pass committed or none failed. A missing
    compaction is then that one finding (the verdict counts it once, under A4), not a second
    one of the expectation's clause."""
    rec = run.recorder
    if any(e.committed for e in rec.compactions):
        return ""
    returned = next((e.returned for e in rec.compactions if e.returned), "")
    if returned:
        return f"compress|returned|{returned}"
    return next(
        (e.root_cause for e in rec.engine_errors if e.method == "compress" and e.root_cause), ""
    )


def evaluate(exp: Expectation, run: ScenarioRun) -> ContractViolation | None:
    """The violation of ``exp`` in ``run``, None when it holds, or :class:`Inapplicable`.
    A violation about missing compactions or a compaction count carries the root cause of a
    compress() that failed every pass (:func:`compress_fault`)."""
    violation = evaluate_kind(exp, run)
    counts = exp.kind == "compressions" or (
        exp.kind == "engine_attr" and exp.params.get("name") == "compression_count"
    )
    if (
        isinstance(violation, ContractViolation)
        and counts
        and not getattr(violation, "root_cause", "")
    ):
        cause = compress_fault(run)
        if cause:
            violation.root_cause = cause
            violation.detail = (
                violation.detail.rstrip(".")
                + "; compress() failed every pass (same root cause as its A4 finding)."
            )
    return violation


def judge_expectation(run: ScenarioRun, exp: Expectation) -> None:
    """Judge one expectation of ``run.scenario``; returns None when it holds.

    Raises:
        ContractViolation: the finding, under its own clause and level (an engine error is
            filed under the raising method's clause, :func:`finding_clause`).
        CheckSkipped: the run cannot judge it for this engine (:class:`Inapplicable`).
        HostileEngine: the run stopped at its time limit before the expectation could be
            checked (a hanging engine: a failure naming the step, the method and the limit).
        CaseError: the run stopped at a step by an exception before it could be checked.
    """
    if run.stopped is not None and not (exp.step is not None and exp.id in run.checks):
        step, error = run.stopped
        detail = (
            f"scenario {run.scenario.name!r}, expectation {exp.id!r}: the run stopped at "
            f"{step}: {error}; this expectation could not be checked."
        )
        if run.timed_out:
            hang = HostileEngine(exp.clause, exp.level, "", detail)
            # one hang, one root cause: every expectation the stop left unchecked, in every
            # file and check where the same method hung
            hang.root_cause = hang_root_cause(run.hung_method)
            raise hang
        raise CaseError(detail)
    violation = evaluate(exp, run)
    if isinstance(violation, Inapplicable):
        raise CheckSkipped(str(violation))
    if violation is not None:
        raise violation


__all__ = [
    "evaluate",
    "evaluate_check",
    "judge_expectation",
    "check_id",
    "compress_fault",
    "finding_clause",
    "Inapplicable",
    "K2_EXEMPT",
    "METHOD_CLAUSES",
]
