"""Checks of contract section L: the lifecycle (L1), in documented order and as a
Hypothesis ``RuleBasedStateMachine`` (the machine is conformance/checks/l_machine.py).

The machine drives one engine like a host: user turns (usage -> should_compress ->
compress when True, with the A7 sentinel afterwards), preflight, select_context,
on_turn_complete, model switches, /reset, clones with their own update_model, and a
second session compressing on the same instance from another thread. Invariants are
checked after every step. A failure's message carries the clause it breaks (V2, A6, ...);
the steps are written to the replay file and ``--conformance-replay`` re-runs them.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    run_state_machine_as_test,
)

from conformance.authoring.context import BudgetSpent
from conformance.authoring.expect import (
    MUST,
    declined,
    fail,
    short,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import compactable_histories
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    invoke,
    skip_unless_compacts,
    threshold_of,
    usage,
)
from conformance.checks.l_machine import (
    SYSTEM,
    LifecycleMachine,
    lifecycle_turn,
    replay_steps,
)
from conformance.clauses.errors import ContractViolation
from simulator.provider.tokens import count_messages


@check(
    "L1",
    "documented-order",
    level=MUST,
    title="instantiate -> on_session_start -> usage -> should_compress "
    "-> compress -> on_session_end -> next session never crashes",
)
def check_l1_documented_order(ctx):
    """L1: two sessions in the documented order on one engine, with a compaction in each and
    on_session_reset between; every call returns normally."""
    engine = ctx.new_engine()
    for session in ("s1", "s2"):
        invoke("L1", MUST, engine, "on_session_start", session, platform="cli", model="sim-model")
        history = [dict(SYSTEM)]
        for k in range(4):
            history += lifecycle_turn(100 + k, True, k)
            invoke("L1", MUST, engine, "update_from_response", usage(count_messages(history)))
            if invoke("L1", MUST, engine, "should_compress", count_messages(history)):
                out = compress_like_host("L1", MUST, engine, history)
                if isinstance(out, list):
                    history = out
                engine.last_prompt_tokens = -1
        history.append({"role": "user", "content": "bye"})
        compress_like_host("L1", MUST, engine, history)
        invoke("L1", MUST, engine, "on_session_end", session, copy.deepcopy(history))
        invoke("L1", MUST, engine, "on_session_reset")


@check(
    "L1",
    "lifecycle-state-machine",
    level=MUST,
    kind="stateful",
    title="random lifecycles (turns, compactions, preflight, hooks, model "
    "switches, reset, clones, a parallel session) keep every invariant",
)
def check_l1_lifecycle_state_machine(ctx):
    """L1: the :class:`LifecycleMachine`; violations name their own clause."""
    if ctx.replay is not None:
        replay_steps(ctx, ctx.replay.get("steps") or [])
        return
    machines: list[LifecycleMachine] = []
    share = ctx.share

    def factory():
        if share is not None:
            share.start()
            if share.spent():  # the check's share of the budget ran out: stop here
                raise BudgetSpent()
            share.examples += 1
        m = LifecycleMachine(ctx)
        machines.append(m)
        return m

    if share is not None:
        share.asked = max(10, ctx.budget())
    try:
        run_state_machine_as_test(
            factory, settings=ctx.settings(max_examples=max(10, ctx.budget()))
        )
    except ContractViolation as exc:
        if machines:
            exc.attach_draws({"steps": machines[-1].steps})
        raise
    except BudgetSpent:
        pass  # what ran is the verdict
    except Flaky:
        # the share ran out mid-run (a machine then stops before drawing, which Hypothesis
        # reads as flaky data generation): what ran is the verdict
        if not (share is not None and share.reached):
            raise


def _first_difference(a: list[Any], b: list[Any], session_ids: tuple[str, ...] = ()) -> str:
    """Where two compress() outputs first differ, after uid and session-id masking."""
    from conformance.checks.d_determinism import first_difference

    return first_difference(_masked(a, session_ids), _masked(b, session_ids))


def _masked(out: Any, session_ids: tuple[str, ...]) -> Any:
    """``out`` with uids masked (D1's rule) and every session id in ``session_ids`` written as
    ``<session-id>``: an engine may name the session it is in, and on rotation that is a new
    id (host practice: the new session is the same conversation)."""
    from conformance.checks.d_determinism import mask_uids

    masked = mask_uids(copy.deepcopy(out))
    ids = sorted((i for i in session_ids if i), key=len, reverse=True)
    if not ids:
        return masked
    pattern = re.compile("|".join(re.escape(i) for i in ids))

    def walk(v: Any) -> Any:
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, str):
            return pattern.sub("<session-id>", v)
        return v

    return walk(masked)


@check(
    "L1",
    "compaction-boundary-keeps-state",
    level=MUST,
    practice="host",
    title="the on_session_end + on_session_start(boundary_reason='compression') Hermes sends "
    "after a compaction (same id in place, a new id on rotation) keep the engine's state",
    examples=4,
)
def check_l1_compaction_boundary_keeps_state(ctx):
    """L1 (host practice: what Hermes sends after every committed compaction): two fresh
    engines compact the same history; one then hears ``on_session_end(id, history)`` and
    ``on_session_start(id or a new id, boundary_reason="compression", old_session_id=id)``
    (drawn: in place or rotation), the other nothing. ``compression_count`` must not drop at
    the boundary, and the next compaction (40 more turns) must equal the other engine's (uids
    masked): the previous summary, DAG or index survive. Engines that never compact skip;
    engines whose first outputs already differ are D1's business."""
    from conformance.checks.b_compressor import grow
    from conformance.checks.d_determinism import mask_uids

    skip_unless_compacts(ctx, "L1", MUST)
    probe = ctx.new_engine()
    threshold = threshold_of(probe, ctx.window // 2)
    shape = compactable_shape(ctx, probe)

    def body(draw):
        rotation = draw(st.booleans(), "rotation")
        history = draw(compactable_histories(min_tokens=threshold + 1_000, **shape), "history")
        sid = "kit-boundary-session"
        heard, quiet = ctx.new_engine(), ctx.new_engine()
        for engine in (heard, quiet):
            invoke("O1", MUST, engine, "on_session_start", sid, platform="cli", model="sim-model")
        outs = [compress_like_host("L1", MUST, e, history) for e in (heard, quiet)]
        if not all(isinstance(o, list) for o in outs) or declined(history, outs[0]):
            return  # A4 reports a non-list; a declined pass has no boundary after it
        if mask_uids(copy.deepcopy(outs[0])) != mask_uids(copy.deepcopy(outs[1])):
            return  # not deterministic: D1's business
        for engine in (heard, quiet):
            engine.last_prompt_tokens = -1  # A7: the host's sentinel after the commit
        count = getattr(heard, "compression_count", 0)
        new_id = f"{sid}-child" if rotation else sid
        how = "on rotation (a new id)" if rotation else "in place (the same id)"
        invoke("O2", MUST, heard, "on_session_end", sid, copy.deepcopy(history))
        invoke(
            "O1",
            MUST,
            heard,
            "on_session_start",
            new_id,
            boundary_reason="compression",
            old_session_id=sid,
            platform="cli",
            model="sim-model",
        )
        after = getattr(heard, "compression_count", 0)
        if isinstance(count, int) and isinstance(after, int) and after < count:
            fail(
                "L1",
                MUST,
                f"compression_count after the compaction boundary {how}",
                expected=f">= {count} (a compaction boundary is not a new conversation; /new "
                "and /reset reset the engine, through on_session_reset)",
                got=short(after),
                context="on_session_end, then on_session_start(boundary_reason='compression')",
            )
        nexts = [
            compress_like_host("L1", MUST, e, grow(o, 40, 77))
            for e, o in ((heard, outs[0]), (quiet, outs[1]))
        ]
        ids = (sid, new_id)
        if all(isinstance(o, list) for o in nexts) and _masked(nexts[0], ids) != _masked(
            nexts[1], ids
        ):
            fail(
                "L1",
                MUST,
                f"the next compaction after the compaction boundary {how}",
                expected="the same output as an engine that heard no boundary (its previous "
                "summary, DAG or index kept: the boundary is not a new conversation)",
                got=_first_difference(nexts[0], nexts[1], ids),
                context="on_session_end, then on_session_start(boundary_reason='compression')",
            )

    ctx.examples(body)
