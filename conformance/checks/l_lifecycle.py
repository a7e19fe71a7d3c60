"""Checks of contract section L: the lifecycle (L1), in documented order and as a
Hypothesis ``RuleBasedStateMachine``.

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
import threading
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    INVARIANT_MARKER,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from conformance.authoring.context import BudgetSpent
from conformance.authoring.expect import (
    MUST,
    declined,
    fail,
    not_an_int,
    short,
    v1_problems,
    v2_problems,
    v3_problems,
    v4_problems,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import blob_from_seed, compactable_histories, text_from_seed
from conformance.checks.c_clones import per_agent_copy
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    skip_unless_compacts,
    threshold_of,
    turn_complete_like_host,
    update_model_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped, ContractViolation
from simulator.provider.tokens import count_messages

SYSTEM = {"role": "system", "content": "You are the lifecycle test assistant."}
INT_ATTRIBUTES = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
)


def _turn(seed: int, big: bool, k: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "user", "content": text_from_seed(seed, "en_US", 2)}]
    if big:
        cid = f"call_lc_{k}"
        msgs += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": cid, "content": blob_from_seed(seed, 12_000)},
        ]
    msgs.append({"role": "assistant", "content": text_from_seed(seed + 1, "en_US", 1)})
    return msgs


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
            history += _turn(100 + k, True, k)
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


class LifecycleMachine(RuleBasedStateMachine):
    """The lifecycle as rules; every engine call that raises is an L1 failure."""

    def __init__(self, ctx: Any):
        super().__init__()
        self.ctx = ctx
        self.engine = ctx.new_engine()
        self.history: list[dict[str, Any]] = [dict(SYSTEM)]
        self.steps: list[list[Any]] = []
        self.k = 0
        self.window = ctx.window

    def _log(self, name: str, **kwargs: Any) -> None:
        self.steps.append([name, kwargs])

    @initialize()
    def start(self):
        """on_session_start (once, first)."""
        self._log("start")
        invoke(
            "L1",
            MUST,
            self.engine,
            "on_session_start",
            "session-sm",
            platform="cli",
            model="sim-model",
        )

    @rule(seed=st.integers(0, 10_000), big=st.booleans())
    def user_turn(self, seed, big):
        """A user turn: usage, should_compress, compress when True, then the A7 sentinel."""
        if self.ctx.share is not None and self.ctx.share.spent():
            raise BudgetSpent()
        self._log("user_turn", seed=seed, big=big)
        self.k += 1
        self.history += _turn(seed, big, self.k)
        tokens = count_messages(self.history)
        invoke("L1", MUST, self.engine, "update_from_response", usage(tokens))
        wants = invoke("L1", MUST, self.engine, "should_compress", tokens)
        if wants:
            out = compress_like_host("L1", MUST, self.engine, self.history)
            if not isinstance(out, list):
                fail(
                    "A4",
                    MUST,
                    "compress() in the lifecycle",
                    expected="a list",
                    got=type(out).__name__,
                )
            problems = v1_problems(out)
            problems = (
                problems
                or [("V2", p) for p in v2_problems(out)]
                or [("V3", p) for p in v3_problems(out)]
                or [("V4", p) for p in v4_problems(self.history, out)]
            )
            if problems:
                clause, text = (
                    problems[0] if isinstance(problems[0], tuple) else ("V1", problems[0])
                )
                fail(
                    clause,
                    MUST,
                    "compress() output in the lifecycle",
                    expected="a valid history",
                    got=text,
                    context=f"after {len(self.steps)} steps",
                )
            self.history = out
            self.engine.last_prompt_tokens = (
                -1
            )  # A7: the host's sentinel after a committed compaction

    @rule()
    def preflight(self):
        """should_compress_preflight on the history plus the next user message."""
        self._log("preflight")
        out = invoke(
            "L1",
            MUST,
            self.engine,
            "should_compress_preflight",
            copy.deepcopy(self.history) + [{"role": "user", "content": "next"}],
        )
        del out  # its type is O7's business (checked there)

    @rule()
    def select(self):
        """select_context as the host calls it (fail-open)."""
        self._log("select")
        if overrides(self.engine, "select_context"):
            try:
                select_like_host("L1", MUST, self.engine, self.history)
            except ContractViolation:
                pass  # fail-open (H1)

    @rule()
    def turn_complete(self):
        """on_turn_complete with a shallow copy (fail-open)."""
        self._log("turn_complete")
        if overrides(self.engine, "on_turn_complete"):
            fail_open(  # the host fails open (H1)
                turn_complete_like_host,
                "L1",
                MUST,
                self.engine,
                list(copy.deepcopy(self.history)),
                usage(100),
                turn_id="t",
            )

    @rule(window=st.sampled_from([12_000, 16_000, 24_000, 32_000]))
    def model_switch(self, window):
        """update_model to another window; context_length follows (O4)."""
        self._log("model_switch", window=window)
        update_model_like_host("L1", MUST, self.engine, f"sim-model-{window}", window)
        if self.engine.context_length != window:
            fail(
                "O4",
                MUST,
                f"context_length after update_model({window}) in the lifecycle",
                expected=str(window),
                got=short(self.engine.context_length),
            )
        self.window = window

    @rule()
    def reset(self):
        """/reset: on_session_reset zeroes the last_* counters (O3)."""
        self._log("reset")
        invoke("L1", MUST, self.engine, "on_session_reset")
        for attr in ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens"):
            if getattr(self.engine, attr, None) != 0:
                fail(
                    "O3",
                    MUST,
                    f"engine.{attr} after on_session_reset() in the lifecycle",
                    expected="0",
                    got=short(getattr(self.engine, attr, None)),
                )
        self.history = [dict(SYSTEM)]

    @rule()
    def clone(self):
        """The per-agent copy (clone_for_agent, or deepcopy on hermes-0.19); the child switches
        model; the parent keeps its budget (C2)."""
        self._log("clone")
        budget = (self.engine.context_length, self.engine.threshold_tokens)
        try:
            child = per_agent_copy(self.ctx, self.engine, "C1")[0]  # deepcopy on hermes-0.19 (C1)
        except CheckSkipped:
            return  # a plugin-folder engine on hermes-0.19: that host copies nothing
        if child is not self.engine:
            update_model_like_host("L1", MUST, child, "child", budget[0] * 2 + 1_000)
            if (self.engine.context_length, self.engine.threshold_tokens) != budget:
                fail(
                    "C2",
                    MUST,
                    "the parent's budget after a child's update_model() in the lifecycle",
                    expected=str(budget),
                    got=str((self.engine.context_length, self.engine.threshold_tokens)),
                )

    @rule(seed=st.integers(0, 10_000))
    def other_session(self, seed):
        """Another session compresses on the same instance from another thread (TS1, TS3)."""
        self._log("other_session", seed=seed)
        other = (
            [{"role": "system", "content": "other session"}]
            + _turn(seed, True, 900)
            + _turn(seed + 7, True, 901)
        )
        box: list[Any] = []

        def run():
            try:
                box.append(compress_like_host("L1", MUST, self.engine, other))
            except BaseException as exc:  # handed back to the machine thread
                box.append(exc)

        t = threading.Thread(target=run, name="conformance-other-session")
        t.start()
        t.join(60)
        if box and isinstance(box[0], BaseException):
            raise box[0]

    @invariant()
    def counters_are_ints(self):
        """Invariant: the six attributes the host reads are ints (A6)."""
        for attr in INT_ATTRIBUTES:
            value = getattr(self.engine, attr, None)
            if not isinstance(value, int) or isinstance(value, bool):
                fail(
                    "A6",
                    MUST,
                    f"engine.{attr} in the lifecycle",
                    expected="an int",
                    got=f"{type(value).__name__} {short(value, 40)}",
                    root_cause=not_an_int(attr, value),
                )

    @invariant()
    def status_is_sane(self):
        """Invariant: get_status() never shows a negative last_prompt_tokens (A7)."""
        status = invoke("L1", MUST, self.engine, "get_status")
        if (
            isinstance(status, dict)
            and isinstance(status.get("last_prompt_tokens"), (int, float))
            and status["last_prompt_tokens"] < 0
        ):
            fail(
                "A7",
                MUST,
                "get_status()['last_prompt_tokens'] in the lifecycle",
                expected=">= 0",
                got=short(status["last_prompt_tokens"]),
                host_practice=True,
            )


def invariants(machine: LifecycleMachine) -> list[Any]:
    """The machine's invariants, as Hypothesis knows them (the ``@invariant`` methods): listed
    once, in the class, for Hypothesis and for replay alike."""
    return [
        getattr(machine, name)
        for name in sorted(dir(type(machine)))
        if hasattr(getattr(type(machine), name, None), INVARIANT_MARKER)
    ]


def replay_steps(ctx: Any, steps: list[list[Any]]) -> None:
    """Re-run recorded machine steps in order, with every invariant after each."""
    machine = LifecycleMachine(ctx)
    holds = invariants(machine)
    for name, kwargs in steps:
        getattr(machine, name)(**kwargs)
        for invariant_holds in holds:
            invariant_holds()


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
