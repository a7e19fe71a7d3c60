"""The ``engine_attr`` expectation: an engine attribute read at a ``check`` step or at the end.

:func:`evaluate_check` evaluates a ``check`` step's expectation in place (the runner calls it when
the step comes, :mod:`conformance.scenarios.runner`) into a
:class:`~conformance.scenarios.run.CheckOutcome`, which the expectations judge later
(:mod:`conformance.scenarios.expectations`); :func:`attr_problem` is the rule itself, also used
for an ``engine_attr`` at the end of the run; :func:`out_of_bounds` the ``{min, max}`` rule every
counting kind shares.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.scenarios.run import CheckOutcome
from conformance.scenarios.spec import Expectation
from simulator.host import hooks


def out_of_bounds(value: float, params: dict) -> str | None:
    """What ``value`` should have been when it is outside ``params``' ``min``/``max``
    (``"at least 2"``, ``"at most 0"``), None when it is within them (or none is given)."""
    lo, hi = params.get("min"), params.get("max")
    if lo is not None and value < lo:
        return f"at least {lo:g}"
    if hi is not None and value > hi:
        return f"at most {hi:g}"
    return None


def attr_problem(engine: Any, params: dict) -> tuple:
    """``(observed, expected text or None)`` for an engine_attr expectation on ``engine`` (None:
    no engine); ``params``: ``name`` and ``equals`` | ``min`` | ``max``."""
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
    want = out_of_bounds(value, params)
    return value, (f"{name} {want}" if want else None)


def evaluate_check(exp: Expectation, runner: Any, label: str) -> CheckOutcome:
    """Evaluate a ``check`` step's ``engine_attr`` expectation now (called by the runner at the
    step labelled ``label``; ``runner`` gives its ``main`` and ``subagent`` sessions, ``run`` and
    ``recorder``): the :class:`~conformance.scenarios.run.CheckOutcome` the expectation is later
    judged by."""
    params = exp.params
    session = runner.subagent if params.get("agent") == "subagent" else runner.main
    if params.get("agent") == "subagent" and session is None:
        session = next(
            (s for lbl, s in reversed(runner.run.sessions) if lbl.startswith("subagent")), None
        )
    engine = getattr(session, "engine", None)
    observed, expected = attr_problem(engine, params)
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


__all__ = ["K2_EXEMPT", "attr_problem", "evaluate_check", "out_of_bounds"]
