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
"""

from __future__ import annotations

import json
from typing import Any

from conformance.clauses.catalogue import METHOD_CLAUSES
from conformance.clauses.errors import CaseError, CheckSkipped, ContractViolation, HostileEngine
from conformance.scenarios.run import CheckOutcome, ScenarioRun
from conformance.scenarios.spec import Expectation
from simulator.host import hooks

_RANK = {"SHOULD": 0, "MUST": 1}


def finding_clause(exp: Expectation, method: str) -> tuple:
    """``(clause, level)`` an engine error in ``method`` is reported under for ``exp``: the
    method's clause (:data:`METHOD_CLAUSES`) at its registry level, capped at ``exp.level``;
    ``(exp.clause, exp.level)`` for a method outside the map."""
    from conformance.authoring.registry import clause_level

    clause = METHOD_CLAUSES.get(method)
    level = clause_level(clause) if clause else None
    if level is None:
        return exp.clause, exp.level
    return clause, min(level, exp.level, key=_RANK.__getitem__)


def check_id(run_or_name: Any, exp: Expectation) -> str:
    """The verdict id of an expectation: ``scenario:<scenario name>:<expectation id>``."""
    name = run_or_name if isinstance(run_or_name, str) else run_or_name.scenario.name
    return f"scenario:{name}:{exp.id}"


def _bounds(value: float, params: dict) -> str | None:
    lo, hi = params.get("min"), params.get("max")
    if lo is not None and value < lo:
        return f"at least {lo:g}"
    if hi is not None and value > hi:
        return f"at most {hi:g}"
    return None


def _attr_problem(engine: Any, params: dict) -> tuple:
    """(observed, expected-text or None) for an engine_attr expectation."""
    name = params["name"]
    if engine is None:
        return "no engine", "an agent with an engine"
    if not hasattr(engine, name):
        return "no such attribute", f"attribute {name!r}"
    value = getattr(engine, name)
    if "equals" in params and value != params["equals"]:
        return value, f"{name} == {json.dumps(params['equals'])}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if "min" in params or "max" in params:
            return value, f"{name} to be a number"
        return value, None
    want = _bounds(value, params)
    return value, (f"{name} {want}" if want else None)


def evaluate_check(exp: Expectation, runner: Any, label: str) -> CheckOutcome:
    """Evaluate a ``check`` step's ``engine_attr`` expectation now (called by the runner)."""
    params = exp.params
    session = runner.subagent if params.get("agent") == "subagent" else runner.main
    if params.get("agent") == "subagent" and session is None:
        session = next(
            (s for lbl, s in reversed(runner.run.sessions) if lbl.startswith("subagent")), None
        )
    engine = getattr(session, "engine", None)
    observed, expected = _attr_problem(engine, params)
    outcome = CheckOutcome(
        exp.id, label, observed, f"expected {expected}, got {observed!r}" if expected else ""
    )
    if expected and params.get("name") == "compression_count" and params.get("min", 0) >= 1:
        _count_level(outcome, runner.recorder.compactions, id(engine))
    if exp.clause == "K1" and hooks.overrides(engine, "update_model"):
        outcome.inapplicable = K2_EXEMPT
    return outcome


#: Why a K1 expectation does not judge an engine that overrides update_model() (K2), the
#: same exemption as the K1 check's.
K2_EXEMPT = (
    "engine overrides update_model() and owns its threshold policy (K2 permits ignoring "
    "compression.model_thresholds)"
)


def _count_level(outcome: CheckOutcome, compactions: list[Any], engine_id: int) -> None:
    """Levels agree per expectation: ``compression_count >= n`` is the expectation's own rule
    (A6's MUST: a compaction that changed the history counts) only when the host committed a
    compaction of this engine; when every compress() call so far declined, counting them is
    A6's SHOULD rule (the seeds count every run, Hermes counts none: docs/contract-notes.md
    1.1); with no compress() call at all the expectation cannot apply (the engine never
    compacted, and no clause asks it to)."""
    mine = [e for e in compactions if e.engine_id == engine_id]
    if any(e.committed for e in mine):
        return
    if not mine:
        outcome.inapplicable = (
            "compress() was never called on this agent's engine before this step (it never "
            "asked to compact): no clause asks an engine to compact"
        )
        return
    outcome.under = ("A6", "SHOULD")
    failed = sum(1 for e in mine if e.tokens_out is None)
    what = (
        "that all changed nothing"
        if not failed
        else f"none committed ({failed} raised or returned no list, "
        f"{len(mine) - failed} changed nothing)"
    )
    outcome.problem += (
        f" after {len(mine)} compress() calls {what} (counting those is A6's SHOULD rule: the "
        "seeds count every run, Hermes' built-in does not)"
    )


def _violation(
    run: ScenarioRun, exp: Expectation, where: str, detail: str, under: tuple | None = None
) -> ContractViolation:
    """The violation of ``exp``, under ``under`` = (clause, level) when given (else the
    expectation's)."""
    at = f" at {where}" if where else ""
    why = f" ({exp.why})" if exp.why else ""
    said = next((t.error for _, t in run.turns if t.failed and t.error), "")
    if said and said not in detail:  # what the provider said when a turn failed, in its words
        failed = sum(1 for _, t in run.turns if t.failed)
        detail += f" ({failed} turn(s) failed; the provider answered {said!r})"
    text = f"scenario {run.scenario.name!r}, expectation {exp.id!r}{at}: {detail}{why}"
    clause, level = under or (exp.clause, exp.level)
    return ContractViolation(
        clause, level, text.rstrip(".") + "."
    )  # one final dot; "..." inside quotes stays


def _first(findings: list[Any], what: str) -> tuple:
    first = findings[0]
    more = f" ({len(findings)} such findings, first shown)" if len(findings) > 1 else ""
    return first.step, f"{first.detail}: expected {what}{more}"


def _shrink(tokens_in: int, tokens_out: int) -> str:
    """What a compaction did to the size, e.g.
    ``took 9000 tokens and returned 7000 (22% removed)``."""
    if tokens_out >= tokens_in:
        grew = f", {tokens_out - tokens_in} more" if tokens_out > tokens_in else ""
        return f"took {tokens_in} tokens and returned {tokens_out} (nothing removed{grew})"
    return (
        f"took {tokens_in} tokens and returned {tokens_out} "
        f"({(tokens_in - tokens_out) / tokens_in:.0%} removed)"
    )


class Inapplicable(str):
    """An expectation this run cannot judge for this engine; the text is the skip reason."""


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
    violation = _evaluate(exp, run)
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


def _evaluate(exp: Expectation, run: ScenarioRun) -> ContractViolation | None:
    rec = run.recorder
    kind, params = exp.kind, exp.params
    if kind == "engine_attr" and exp.step is not None:
        outcome = run.checks.get(exp.id)
        if outcome is None:
            return _violation(run, exp, exp.step, "the run never reached this check step")
        if outcome.inapplicable:
            return Inapplicable(outcome.inapplicable)
        if not outcome.problem:
            return None
        return _violation(run, exp, outcome.step, outcome.problem, outcome.under)
    if kind == "no_orphan_pairs" and run.orphans:
        return _violation(
            run, exp, *_first(run.orphans, "every tool call answered once and no orphan result")
        )
    if kind == "uids_stable" and run.uid_changes:
        return _violation(
            run,
            exp,
            *_first(
                run.uid_changes,
                "a message kept by the host to keep its message_uid "
                "(keep message_uid on the rows compress() keeps)",
            ),
        )
    if kind == "history_not_rewritten" and rec.select_mutations:
        return _violation(
            run,
            exp,
            *_first(
                rec.select_mutations,
                "select_context() to leave its arguments untouched and return a new list instead",
            ),
        )
    if kind == "no_engine_errors" and rec.engine_errors:
        return _engine_error(run, exp, rec.engine_errors)
    if kind == "engine_active":
        for label, s in run.sessions:
            if not s.engine_active:
                return _violation(
                    run,
                    exp,
                    "",
                    f"agent {label!r} runs the built-in compressor because "
                    f"clone_for_agent() failed ({s.clone_error}): expected every "
                    f"agent to get its own working engine",
                )
        return None
    if kind == "compressions":
        committed = [e for e in rec.compactions if e.committed]
        declined = [e for e in rec.compactions if e.declined]
        if "min" in params and len(committed) < params["min"]:
            if not run.compacts:
                return Inapplicable(
                    "the engine never compacts (it declares no 'compressor' capability, its "
                    "should_compress() never answered True and compress() removed nothing, here "
                    "and on a probe over its threshold): no clause asks an engine to compact"
                )
            if len(committed) + len(declined) >= params["min"]:
                return None  # a declined pass (nothing to do, or a failed summary) is legal (A4)
        want = _bounds(len(committed), params)
        reached = [
            c
            for c in rec.provider_calls
            if c.threshold_tokens and c.prompt_tokens >= c.threshold_tokens
        ]
        if (
            want
            and "min" in params
            and len(committed) < params["min"]
            and not reached
            and rec.provider_calls
        ):
            top = max(rec.provider_calls, key=lambda c: c.prompt_tokens)
            return Inapplicable(
                f"the prompt never reached the engine's own threshold_tokens (largest prompt "
                f"{top.prompt_tokens} tokens, threshold {top.threshold_tokens}): the engine's "
                f"threshold policy (K2) puts automatic compaction out of this scenario's reach"
            )
        if want:
            where = committed[-1].step if committed and "max" in params else ""
            calls = len(rec.of("should_compress"))
            timed_out = sum(p.timed_out for _, s in run.sessions for p in s.passes)
            limit = (
                f", {timed_out} passes timed out by the host (compaction timeout "
                f"{run.sessions[0][1].config.context_timeout_seconds:g} s)"
                if timed_out
                else ""
            )
            return _violation(
                run,
                exp,
                where,
                f"expected {want} committed compactions, got {len(committed)} "
                f"({len(rec.compactions)} compress() calls, {len(declined)} of them declined, "
                f"{calls} should_compress() calls{limit})",
            )
        return None
    if kind == "turns_failed":
        failed = [(label, t) for label, t in run.turns if t.failed]
        want = _bounds(len(failed), params)
        if want:
            said = next((t.error for _, t in failed if t.error), "")
            return _violation(
                run,
                exp,
                failed[0][0] if failed else "",
                f"expected {want} failed turns, got {len(failed)}"
                + (f"; the provider answered {said!r}" if said else ""),
            )
        return None
    if kind == "hygiene_runs":
        log = run.gateway.hygiene_log if run.gateway else []
        fired = [d for d in log if d.run]
        want = _bounds(len(fired), params)
        if want and "min" in params and len(fired) < params["min"] and log:
            if not any(d.tokens >= d.threshold for d in log):
                top = max(log, key=lambda d: d.tokens)
                return Inapplicable(
                    f"the session's token figure never reached the hygiene line (largest "
                    f"{top.tokens} {top.source} tokens, line {top.threshold}): hygiene reads the "
                    "last turn's real prompt, which this engine kept small (its select_context "
                    "trims requests), so hygiene rightly stayed out"
                )
        if want:
            reasons = "; ".join(d.reason for d in (run.gateway.hygiene_log if run.gateway else []))[
                :300
            ]
            return _violation(
                run,
                exp,
                "",
                f"expected {want} hygiene passes, got "
                f"{len(fired)} ({reasons or 'no gateway step'})",
            )
        return None
    if kind == "cache_read_ratio":
        skip = int(params.get("skip_calls", 2))
        calls = rec.provider_calls[skip:]
        prompt = sum(c.prompt_tokens for c in calls)
        read = sum(c.cache_read_tokens for c in calls)
        ratio = read / prompt if prompt else 0.0
        if ratio < params["min"]:
            return _violation(
                run,
                exp,
                "",
                f"expected a cache read ratio of at least {params['min']:g} over calls "
                f"{skip + 1}-{len(rec.provider_calls)}, got {ratio:.3f} ({read} cache "
                f"read / {prompt} prompt tokens)",
            )
        return None
    if kind == "tokens_after_compaction":
        # committed passes and equal copies (a pass that ran and left the size as it was); a
        # pass that returned its input object declined, which is legal (A4)
        over = [
            e
            for e in rec.compactions
            if (e.committed or e.no_progress) and (e.tokens_out or 0) > params["max"]
        ]
        if over and not run.compacts and all(e.no_progress for e in over):
            # a pass-through engine (it never compacts) hands back an equal copy: that is its
            # way of declining, as legal as returning the input object (A4)
            return Inapplicable(
                "the engine never compacts (it declares no 'compressor' capability, its "
                "should_compress() never answered True and compress() removed nothing, here "
                "and on a probe over its threshold): its compress() hands back an equal copy, "
                "which declines the pass; no clause asks an engine to compact"
            )
        if over:
            e = max(over, key=lambda e: e.tokens_out or 0)
            return _violation(
                run,
                exp,
                e.step,
                f"compress() on agent {e.agent!r} {_shrink(e.tokens_in, e.tokens_out)}: "
                f"expected at most {params['max']} tokens after a compaction",
            )
        return None
    if kind == "call_order":
        seq = [c.method for c in sorted(rec.calls, key=lambda c: c.seq)]
        pos = 0
        if not run.compacts and "compress" in params and "compress" not in seq:
            # an engine that never compacts is never handed compress(): the order of the rest
            # is still the lifecycle's (no clause asks an engine to compact)
            params = [m for m in params if m != "compress"]
        for n, method in enumerate(params):
            try:
                pos = seq.index(method, pos) + 1
            except ValueError:
                after = f" after {params[n - 1]}()" if n else ""
                return _violation(
                    run,
                    exp,
                    "",
                    f"expected the calls {' -> '.join(params)}, but no {method}() "
                    f"came{after} ({len(seq)} engine calls; {seq.count(method)} "
                    f"{method}() calls in all)",
                )
        return None
    if kind == "engine_attr":  # top-level: at the end of the run, on the main agent
        observed, expected = _attr_problem(getattr(run.main, "engine", None), params)
        return (
            _violation(run, exp, "the end of the run", f"expected {expected}, got {observed!r}")
            if expected
            else None
        )
    return None


def _engine_error(run: ScenarioRun, exp: Expectation, errors: list[Any]) -> ContractViolation:
    """The no_engine_errors violation: the first error of the weightiest clause (MUST before
    SHOULD), reported under that clause (:func:`finding_clause`)."""
    under = [finding_clause(exp, e.method) for e in errors]
    top = max(range(len(errors)), key=lambda i: (_RANK[under[i][1]], -i))
    e = errors[top]
    more = (
        f" ({len(errors)} errors; the first under {under[top][0]} shown)" if len(errors) > 1 else ""
    )
    fails_open = (
        " (the host fails open: it logs the error and sends the request unchanged)"
        if METHOD_CLAUSES.get(e.method) == "H1"
        else ""
    )
    violation = _violation(
        run,
        exp,
        e.step,
        f"{e.method}() raised {e.error} on thread {e.thread!r}{fails_open}: "
        f"expected no engine method to raise{more}",
        under[top],
    )
    if e.root_cause:
        violation.root_cause = e.root_cause
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
            raise HostileEngine(exp.clause, exp.level, "", detail)
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
    "finding_clause",
    "METHOD_CLAUSES",
]
