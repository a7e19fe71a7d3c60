"""Checks of contract section C: one engine per agent (C1, C2; C3 is host behaviour)."""

from __future__ import annotations

from conformance.checks._drive import compress_like_host, invoke, usage
from conformance.context import CheckSkipped
from conformance.expect import MUST, fail, short
from conformance.registry import check

WINDOWS = (16_000, 48_000)


def _configure(clause, engine, window):
    invoke(clause, MUST, engine, "update_model", model="sim-model", context_length=window, base_url="", api_key="",
           provider="", api_mode="chat_completions")


@check("C1", "clone-distinct-usable-isolated", level=MUST,
       title="clone_for_agent() gives a distinct engine that works and keeps its own counters")
def check_clone_distinct(ctx):
    """C1: the clone is not the registered instance; it compresses; usage and compactions on
    the clone leave the parent's last_* counters and compression_count alone (and back)."""
    parent = ctx.new_engine()
    clone = invoke("C1", MUST, parent, "clone_for_agent")
    if clone is parent:
        fail("C1", MUST, "clone_for_agent()", expected="a new engine per agent", got="the registered instance itself")
    _configure("C1", clone, ctx.window)
    before = (parent.last_prompt_tokens, parent.last_total_tokens, parent.compression_count)
    invoke("C1", MUST, clone, "update_from_response", usage(7_777, 11))
    out = compress_like_host("C1", MUST, clone, [{"role": "system", "content": "sys"},
                                                 {"role": "user", "content": "hello"}])
    del out  # returning normally is C1's business; the output's type and validity are A4's and V's
    after = (parent.last_prompt_tokens, parent.last_total_tokens, parent.compression_count)
    if after != before:
        fail("C1", MUST, "the parent's (last_prompt_tokens, last_total_tokens, compression_count) after the clone "
             "was used", expected=str(before), got=str(after), context="state shared between agents")
    invoke("C1", MUST, parent, "update_from_response", usage(123, 4))
    if clone.last_prompt_tokens != 7_777:
        fail("C1", MUST, "the clone's last_prompt_tokens after the parent got usage", expected="7777",
             got=short(clone.last_prompt_tokens))


@check("C2", "child-update-model-isolated", level=MUST,
       title="a child's update_model() never changes the parent's budget")
def check_child_update_model(ctx):
    """C2: parent on window A, child (clone) switched to window B: the parent's
    context_length and threshold_tokens stay those of A."""
    parent = ctx.new_engine(window=WINDOWS[0])
    budget = (parent.context_length, parent.threshold_tokens)
    child = clone_or_skip(parent)
    if child is parent:
        return  # C1 reports it
    _configure("C2", child, WINDOWS[1])
    now = (parent.context_length, parent.threshold_tokens)
    if now != budget:
        fail("C2", MUST, "the parent's (context_length, threshold_tokens) after the child's update_model("
             f"context_length={WINDOWS[1]})", expected=str(budget), got=str(now))


def clone_or_skip(engine):
    """``engine.clone_for_agent()``; a raising clone is C1's business (this check then skips)."""
    try:
        return engine.clone_for_agent()
    except Exception as exc:
        raise CheckSkipped(f"clone_for_agent() raised {type(exc).__name__} (C1 reports it)") from None
