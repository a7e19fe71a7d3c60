"""The lifecycle as a Hypothesis ``RuleBasedStateMachine`` (L1).

:class:`LifecycleMachine` drives one engine like a host (user turns: usage -> should_compress ->
compress when True, with the A7 sentinel afterwards; preflight, select_context,
on_turn_complete, model switches, /reset, clones with their own update_model, a second session
compressing on the same instance from another thread) and checks its invariants after every
step; :func:`replay_steps` re-runs recorded steps. The checks that run it are in
conformance/checks/l_lifecycle.py.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    INVARIANT_MARKER,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from conformance.authoring.context import BudgetSpent
from conformance.authoring.expect import (
    MUST,
    fail,
    not_an_int,
    short,
    v1_problems,
    v2_problems,
    v3_problems,
    v4_problems,
)
from conformance.authoring.strategies import blob_from_seed, text_from_seed
from conformance.checks.c_clones import per_agent_copy
from conformance.checks.engine_calls import (
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
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


def lifecycle_turn(seed: int, big: bool, k: int) -> list[dict[str, Any]]:
    """One user turn of the lifecycle (L1): the user message, with ``big`` a file-reading tool
    call (id ``call_lc_<k>``) and its long result, then the assistant reply."""
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
        self.history += lifecycle_turn(seed, big, self.k)
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
            + lifecycle_turn(seed, True, 900)
            + lifecycle_turn(seed + 7, True, 901)
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
