"""Checks of contract section C: one engine per agent (C1, C2; C3 is host behaviour).

The per-agent copy is made the way the host of ``--host-profile`` makes it: the documented
host calls ``clone_for_agent()`` (its default is ``copy.deepcopy``); hermes-agent 0.19.0 calls
``copy.deepcopy(engine)`` and never the hook, so there an engine whose ``__deepcopy__`` raises
is replaced by the built-in compressor (docs/host.md, Profiles).
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.authoring.expect import MUST, fail, short
from conformance.authoring.hosts import host_field
from conformance.authoring.registry import check
from conformance.checks.engine_calls import (
    compress_like_host,
    invoke,
    update_model_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped, HostileEngine

WINDOWS = (16_000, 48_000)


def _configure(clause, engine, window):
    update_model_like_host(clause, MUST, engine, "sim-model", window)


@check(
    "C1",
    "clone-distinct-usable-isolated",
    level=MUST,
    needs=(),  # runs on every host: by deepcopy where the host has no clone_for_agent
    title="the per-agent copy (clone_for_agent(), or deepcopy on "
    "hermes-0.19) is distinct, works, keeps its own counters",
)
def check_c1_clone_distinct_usable_isolated(ctx):
    """C1: the clone is not the registered instance; it compresses; usage and compactions on the
    clone leave the parent's last_* counters and compression_count alone (and back). On
    ``--host-profile=hermes-0.19`` the clone is ``copy.deepcopy(engine)``, as that host makes it."""
    parent = ctx.new_engine()
    clone, how = per_agent_copy(ctx, parent, "C1")
    if clone is parent:
        fail(
            "C1", MUST, how, expected="a new engine per agent", got="the registered instance itself"
        )
    _configure("C1", clone, ctx.window)
    before = (parent.last_prompt_tokens, parent.last_total_tokens, parent.compression_count)
    invoke("C1", MUST, clone, "update_from_response", usage(7_777, 11))
    out = compress_like_host(
        "C1",
        MUST,
        clone,
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}],
    )
    del out  # returning normally is C1's business; the output's type and validity are A4's and V's
    after = (parent.last_prompt_tokens, parent.last_total_tokens, parent.compression_count)
    if after != before:
        fail(
            "C1",
            MUST,
            "the parent's (last_prompt_tokens, last_total_tokens, "
            "compression_count) after the clone was used",
            expected=str(before),
            got=str(after),
            context="state shared between agents",
        )
    invoke("C1", MUST, parent, "update_from_response", usage(123, 4))
    if clone.last_prompt_tokens != 7_777:
        fail(
            "C1",
            MUST,
            "the clone's last_prompt_tokens after the parent got usage",
            expected="7777",
            got=short(clone.last_prompt_tokens),
        )


@check(
    "C2",
    "child-update-model-isolated",
    level=MUST,
    title="a child's update_model() never changes the parent's budget",
)
def check_c2_child_update_model_isolated(ctx):
    """C2: parent on window A, child (clone) switched to window B: the parent's
    context_length and threshold_tokens stay those of A."""
    parent = ctx.new_engine(window=WINDOWS[0])
    budget = (parent.context_length, parent.threshold_tokens)
    child = clone_or_skip(ctx, parent)
    if child is parent:
        return  # C1 reports it
    _configure("C2", child, WINDOWS[1])
    now = (parent.context_length, parent.threshold_tokens)
    if now != budget:
        fail(
            "C2",
            MUST,
            "the parent's (context_length, threshold_tokens) after the child's update_model("
            f"context_length={WINDOWS[1]})",
            expected=str(budget),
            got=str(now),
        )


def copies_by_deepcopy(ctx) -> bool:
    """True when the host of ``ctx.host_profile`` copies engines with ``copy.deepcopy`` only
    (hermes-agent 0.19.0), or the ABC in use has no ``clone_for_agent`` (C1)."""
    return not host_field(ctx, "clone_for_agent") or ctx.abc.lacks("clone_for_agent")


def why_deepcopy(ctx) -> str:
    """Why the host of ``ctx`` deep-copies the engine (C1), for failure messages: the host
    profile never calls clone_for_agent, or the ABC in use has none."""
    if not host_field(ctx, "clone_for_agent"):
        return (
            f"the host profile {ctx.host_profile!r} never "
            "calls clone_for_agent, so the host deep-copies"
        )
    return (
        f"the host ABC in use ({ctx.abc.label()}) has no clone_for_agent, so the host deep-copies"
    )


def per_agent_copy(ctx, engine: Any, clause: str) -> tuple[Any, str]:
    """C1: the engine a new agent gets from ``engine``, made as the host of ``ctx`` makes it.

    Returns:
        ``(copy, how)``: ``how`` is ``"clone_for_agent()"`` or ``"copy.deepcopy(engine)"``.
    Raises:
        CheckSkipped: hermes-0.19 with an engine plugin folder (0.19.0 loads a directory
            engine afresh for each agent and copies nothing).
        ContractViolation: the copy raised (named ``clause``, MUST).
    """
    if not copies_by_deepcopy(ctx):
        return invoke(clause, MUST, engine, "clone_for_agent"), "clone_for_agent()"
    if ctx.plugin_dir:
        raise CheckSkipped(
            f"the host profile {ctx.host_profile!r} loads a plugin-folder engine afresh for each "
            "agent and copies nothing"
        )
    try:
        return copy.deepcopy(engine), "copy.deepcopy(engine)"
    except Exception as exc:
        fail(
            clause,
            MUST,
            f"copy.deepcopy(engine) ({why_deepcopy(ctx)})",
            expected="a copy; otherwise every agent silently gets the built-in compressor",
            got=f"{type(exc).__name__}: {short(str(exc), 160)}",
            context=_deepcopy_advice(engine),
        )
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit from __deepcopy__: never let it end the run
        raise HostileEngine(
            clause,
            MUST,
            "__deepcopy__",
            f"raised {type(exc).__name__}; an engine must not end the "
            "host process. The run continued.",
        ) from None


def _deepcopy_advice(engine: Any) -> str:
    """What to do about a failing ``copy.deepcopy(engine)`` (C1): fix the engine's own
    ``__deepcopy__``, or add one that builds a fresh engine sharing the durable backend."""
    if any("__deepcopy__" in vars(k) for k in type(engine).__mro__ if k is not object):
        return (
            "the engine's own __deepcopy__ raised: make it return a fresh engine that "
            "shares the durable backend (locks, connections) and copies the budget fields"
        )
    return (
        "define __deepcopy__ returning a fresh engine that shares the "
        "durable backend (locks, connections) and copies the budget fields; "
        "with a clone_for_agent hook, `return self.clone_for_agent()`"
    )


def clone_or_skip(ctx, engine: Any) -> Any:
    """The per-agent copy of ``engine`` (:func:`per_agent_copy`); a raising copy is C1's
    business, so the calling check skips (raises CheckSkipped)."""
    try:
        return per_agent_copy(ctx, engine, "C1")[0]
    except CheckSkipped:
        raise
    except Exception as exc:
        raise CheckSkipped(
            f"the per-agent copy raised {type(exc).__name__} (C1 reports it)"
        ) from None
