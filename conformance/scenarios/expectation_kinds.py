"""The rule of each expectation kind, judged on a finished
:class:`~conformance.scenarios.run.ScenarioRun`.

:func:`evaluate_kind` returns the :class:`~conformance.clauses.errors.ContractViolation` of one
expectation (its message in the kit's grammar: scenario, expectation, step, what was expected,
what the run observed), None when it holds, or :class:`Inapplicable` when this run cannot judge
it for this engine. An engine error is filed under the clause of the method that raised
(:func:`finding_clause`). The kinds are listed in :mod:`conformance.scenarios.expectations`.
"""

from __future__ import annotations

from typing import Any

from conformance.clauses.catalogue import METHOD_CLAUSES
from conformance.clauses.errors import ContractViolation
from conformance.scenarios.engine_attr import attr_problem, out_of_bounds
from conformance.scenarios.run import ScenarioRun
from conformance.scenarios.spec import Expectation

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


#: The kinds that judge the C3 fallback itself (C1): every other kind judges what the engine
#: under test did, which a run with a fallen-back agent does not show alone.
FALLBACK_KINDS = frozenset({"engine_active", "no_engine_errors"})


def fallback_exemption(run: ScenarioRun) -> Inapplicable | None:
    """Why a run where an agent fell back to the host's built-in compressor (C3: its
    ``clone_for_agent()`` failed) cannot judge the engine under test, or None when every agent
    ran it. What such a run records (compactions, calls, attributes, cache reads) is partly the
    built-in's, so only the :data:`FALLBACK_KINDS` judge it: the fallback is the engine's C1
    finding there, and the built-in is credited and charged nothing."""
    fell = [(label, s) for label, s in run.sessions if not s.engine_active]
    if not fell:
        return None
    label, first = fell[0]
    more = f" and {len(fell) - 1} more agent(s)" if len(fell) > 1 else ""
    return Inapplicable(
        "an agent ran the host's built-in compressor in place of this engine: "
        f"clone_for_agent() failed on agent {label!r}{more} ({first.clone_error}), which "
        "this scenario's engine_active/no_engine_errors expectations judge (C1); the rest of "
        "what the run shows is partly the built-in's (C3)"
    )


def evaluate_kind(exp: Expectation, run: ScenarioRun) -> ContractViolation | None:
    """The violation of ``exp`` in ``run`` by the rule of its kind (the table of
    :mod:`conformance.scenarios.expectations`), None when it holds, or :class:`Inapplicable`.
    The root cause of a compress() that failed every pass is added by
    :func:`conformance.scenarios.expectations.evaluate`, not here."""
    rec = run.recorder
    kind, params = exp.kind, exp.params
    if kind not in FALLBACK_KINDS:
        exempt = fallback_exemption(run)
        if exempt is not None:
            return exempt
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
        want = out_of_bounds(len(committed), params)
        reached = [
            c
            for c in rec.provider_calls
            if c.threshold_tokens and c.prompt_tokens >= c.threshold_tokens
        ]
        # a pass that was run and failed (raised, returned no list) is the shortfall's cause,
        # whatever the threshold: a manual /compress reaches compress() below it
        failed = [e for e in rec.compactions if not (e.committed or e.declined or e.no_progress)]
        if (
            want
            and "min" in params
            and len(committed) < params["min"]
            and not reached
            and not failed
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
        want = out_of_bounds(len(failed), params)
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
        want = out_of_bounds(len(fired), params)
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
        measured = [e for e in rec.compactions if e.committed or e.no_progress]
        if not measured:  # nothing to measure is no pass: the compactions expectations judge it
            raised = sum(1 for e in rec.compactions if not e.committed and not e.no_progress)
            return Inapplicable(
                "no compress() pass of this run handed back messages to measure ("
                + (f"{raised} declined or failed" if raised else "none ran")
                + "): there is no output to hold to the bound"
            )
        over = [e for e in measured if (e.tokens_out or 0) > params["max"]]
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
        observed, expected = attr_problem(getattr(run.main, "engine", None), params)
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


__all__ = ["Inapplicable", "evaluate_kind", "finding_clause"]
