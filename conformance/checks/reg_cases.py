"""Regression cases from public reports (REG-a .. REG-g; REG-h .. REG-j, about repeated
compactions, are conformance/checks/reg_passes.py), each serving one clause.

Each fixes the whole kind of fault, asserting the right value. Cases that need
protect_first_n / protect_last_n set those on engines that expose them (their own class
defines them); others run with the engine's own settings.
"""

from __future__ import annotations

import copy
import sqlite3
from typing import Any

from conformance.authoring.expect import (
    MUST,
    declined,
    fail,
    short,
    v1_problems,
    v2_problems,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import add_filler, blob_from_seed, filler_block, head_exchange
from conformance.checks.engine_calls import (
    compacts,
    compress_like_host,
    head_size,
    invoke,
    overrides,
    tail_size,
    threshold_of,
    update_model_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped
from simulator.provider.tokens import count_messages


def _call(cid: str, name: str = "read_file") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _pin(ctx, engine, first: int, last: int) -> None:
    if ctx.exposes(engine, "protect_first_n", "protect_last_n"):
        engine.protect_first_n = first
        engine.protect_last_n = last


def _v2(clause: str, history, out, what: str) -> None:
    if not isinstance(out, list) or v1_problems(out):
        return  # A4 / V1 report a non-list or a non-message
    problems = v2_problems(out)
    if problems:
        fail(
            clause,
            MUST,
            what,
            expected="no tool result whose call is gone and no call without its result",
            got=problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
            context=f"history of {len(history)} messages, output of "
            f"{len(out) if isinstance(out, list) else '?'}",
        )


@check(
    "V2",
    "parallel-calls",
    reg="a",
    level=MUST,
    title="parallel tool calls around the cut keep every "
    "call paired (protect_first_n=1, protect_last_n=5)",
)
def check_reg_a_parallel_calls(ctx):
    """REG-a (V2): ``[system, user, assistant(c1), tool c1, assistant, user, assistant(c2a,c2b,c2c),
    tool c2a, tool c2b, tool c2c, assistant, user]`` over the threshold."""
    engine = ctx.new_engine()
    _pin(ctx, engine, 1, 5)
    big = max(2_000, int(threshold_of(engine, ctx.window // 2) * 1.0))
    history = [
        {"role": "system", "content": "You are a build assistant."},
        {"role": "user", "content": "Read the config."},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": blob_from_seed(1, big)},
        {"role": "assistant", "content": "Config read."},
        {"role": "user", "content": "Now read the three modules."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("c2a"), _call("c2b"), _call("c2c")],
        },
        {"role": "tool", "tool_call_id": "c2a", "content": blob_from_seed(2, big)},
        {"role": "tool", "tool_call_id": "c2b", "content": blob_from_seed(3, big)},
        {"role": "tool", "tool_call_id": "c2c", "content": blob_from_seed(4, big)},
        {"role": "assistant", "content": "All three read."},
        {"role": "user", "content": "Summarise them."},
    ]
    out = compress_like_host("V2", MUST, engine, history, force=True)
    _v2("V2", history, out, "compress() output for parallel calls c2a/c2b/c2c near the tail cut")


@check(
    "V2",
    "head-cut-in-tool-group",
    reg="b",
    level=MUST,
    title="a head that ends on an assistant tool_calls message whose 40 KB result is in the middle",
)
def check_reg_b_head_cut_in_tool_group(ctx):
    """REG-b (V2): head ``[system, user, assistant(tool_calls c1)]``, the 40 KB result of c1 at
    index 3 in the compressible middle: no call survives without its result."""
    engine = ctx.new_engine()
    _pin(ctx, engine, 3, 4)
    history = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Open the dump."},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
        {"role": "tool", "tool_call_id": "c1", "content": blob_from_seed(9, 40_000)},
        {"role": "assistant", "content": "Opened."},
    ]
    for k in range(3):
        history += filler_block(20, 2_000, k)
    history += [
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    out = compress_like_host("V2", MUST, engine, history, force=True)
    _v2("V2", history, out, "compress() output when the head ends on a tool_calls message")


def _sentinel_history(ctx, engine) -> list[dict[str, Any]]:
    threshold = threshold_of(engine, ctx.window // 2)
    history = [{"role": "system", "content": "You are terse."}] + head_exchange(
        30, head_size(ctx, engine)
    )
    add_filler(history, threshold + 1_000, 30, tools=False)
    for i in range(tail_size(ctx, engine)):
        history.append({"role": "user" if i % 2 == 0 else "assistant", "content": f"step {i}"})
    return history


@check(
    "A7",
    "no-recompression-after-compress",
    reg="c",
    level=MUST,
    practice="host",
    title="right after compress(), with last_prompt_tokens "
    "= -1, the next turn does not compress again",
)
def check_reg_c_no_recompression_after_compress(ctx):
    """REG-c (A7): after a compaction and the -1 sentinel, ``should_compress()`` and
    ``should_compress_preflight(output + next user message)`` are False and get_status() shows 0."""
    engine = ctx.new_engine()
    history = _sentinel_history(ctx, engine)
    invoke("A7", MUST, engine, "update_from_response", usage(count_messages(history)))
    out = compress_like_host("A7", MUST, engine, history)
    if not isinstance(out, list):
        raise CheckSkipped("compress() did not return a list (A4 reports it)")
    if declined(history, out):
        raise CheckSkipped(
            "compress() declined (it removed nothing): the host commits nothing and sets no "
            "-1 sentinel, so there is no 'right after a compaction' to judge (A4: a decline is "
            "legal)"
        )
    engine.last_prompt_tokens = -1
    nxt = copy.deepcopy(out) + [{"role": "user", "content": "and now?"}]
    for what, value in (
        ("should_compress()", invoke("A7", MUST, engine, "should_compress")),
        (
            "should_compress_preflight(<output + next user message>)",
            invoke("A7", MUST, engine, "should_compress_preflight", nxt),
        ),
    ):
        if value:
            fail(
                "A7",
                MUST,
                f"{what} right after a compaction (last_prompt_tokens == -1, no usage yet)",
                expected="False",
                got=short(value),
                context=f"output of {count_messages(out)} tokens",
                host_practice=True,
            )
    status = invoke("A7", MUST, engine, "get_status")
    if isinstance(status, dict) and status.get("last_prompt_tokens") != 0:
        fail(
            "A7",
            MUST,
            "get_status()['last_prompt_tokens'] on the sentinel",
            expected="0",
            got=short(status.get("last_prompt_tokens")),
            host_practice=True,
        )


@check(
    "O4",
    "model-switch",
    reg="d",
    level=MUST,
    title="big -> small model switch: the threshold follows "
    "the small window; stale session metadata is ignored",
)
def check_reg_d_model_switch(ctx):
    """REG-d (O4/K1): update_model("big", 1 000 000), usage of 300 000,
    update_model("small", 131 072): threshold_tokens follows the small window (inside it, no
    longer the big one's), should_compress(300 000) is True (reported as A3, for engines that
    compact), and a later
    on_session_start(model="big", context_length=1 000 000) keeps 131 072."""
    engine = ctx.new_engine(configure=False)
    update_model_like_host("O4", MUST, engine, "big", 1_000_000)
    share = engine.threshold_tokens / 1_000_000
    invoke("O4", MUST, engine, "update_from_response", usage(300_000))
    update_model_like_host("O4", MUST, engine, "small", 131_072)
    # "follows the small window": inside it and no longer the big model's figure. The share itself
    # is the engine's policy (K2; Hermes raises it to >= 0.75 under 512K), so it is not pinned here.
    stale = int(1_000_000 * share)
    threshold = engine.threshold_tokens
    if engine.context_length != 131_072 or not (0 < threshold <= 131_072) or threshold == stale:
        fail(
            "O4",
            MUST,
            "(context_length, threshold_tokens) after switching to the small model",
            expected="(131072, a threshold inside the 131 072-token "
            f"window; it was {stale} for the big model)",
            got=str((engine.context_length, threshold)),
        )
    # should_compress's answer after the switch is A3's (it answers for the new threshold); it
    # applies to engines that compact (no clause asks an engine to compact)
    if compacts(ctx, "A3", MUST) and not invoke("A3", MUST, engine, "should_compress", 300_000):
        fail(
            "A3",
            MUST,
            "should_compress(300000) on the 131 072-token window",
            expected=f"True (300000 tokens are over the new threshold_tokens {threshold})",
            got="False",
            context="after a switch from a 1 000 000-token model",
        )
    invoke(
        "O4",
        MUST,
        engine,
        "on_session_start",
        "session-2",
        platform="cli",
        model="big",
        context_length=1_000_000,
    )
    if engine.context_length != 131_072:
        fail(
            "O4",
            MUST,
            "context_length after on_session_start() carrying stale model metadata",
            expected="131072 (the window set by update_model)",
            got=short(engine.context_length),
        )


@check(
    "C2",
    "shared-registered-instance",
    reg="e",
    level=MUST,
    title="a child cloned from the same registered engine "
    "calls update_model; the parent keeps its window",
)
def check_reg_e_shared_registered_instance(ctx):
    """REG-e (C2): registered R; parent = R.clone_for_agent() on 32 000; child = R.clone_for_agent()
    switched to 100 000: the parent still reports 32 000 (and R is untouched by both)."""
    registered = ctx.new_engine(window=24_000)
    from conformance.checks.c_clones import clone_or_skip

    parent = clone_or_skip(ctx, registered)
    update_model_like_host("C2", MUST, parent, "parent", 32_000)
    child = clone_or_skip(ctx, registered)
    update_model_like_host("C2", MUST, child, "child", 100_000)
    if parent.context_length != 32_000 or registered.context_length != 24_000:
        fail(
            "C2",
            MUST,
            "context_length of (parent, registered engine) "
            "after a sibling child's update_model(100000)",
            expected="(32000, 24000)",
            got=str((parent.context_length, registered.context_length)),
        )


@check(
    "C1",
    "unpicklable-clone-hook",
    reg="f",
    level=MUST,
    title="an engine holding a sqlite3 connection is cloned "
    "through its clone_for_agent hook, and the clone works",
)
def check_reg_f_unpicklable_clone_hook(ctx):
    """REG-f (C1): applies when ``copy.deepcopy(engine)`` fails (e.g. a sqlite3 connection): the
    engine must override clone_for_agent, and the clone compresses and reads its store."""
    engine = ctx.new_engine()
    try:
        copy.deepcopy(engine)
        raise CheckSkipped("the engine deep-copies fine; the case needs an unpicklable engine")
    except CheckSkipped:
        raise
    except Exception:
        pass
    if not overrides(engine, "clone_for_agent"):
        fail(
            "C1",
            MUST,
            "clone_for_agent() of an engine that cannot be deep-copied",
            expected="an override that shares the durable backend",
            got="the ABC default (copy.deepcopy), which raises",
        )
    clone = invoke("C1", MUST, engine, "clone_for_agent")
    out = compress_like_host(
        "C1", MUST, clone, [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    )
    if not isinstance(out, list):
        fail("C1", MUST, "compress() on the clone", expected="a list", got=short(out, 60))
    for value in vars(clone).values():
        if isinstance(value, sqlite3.Connection):
            value.execute("select 1").fetchone()


@check(
    "A4",
    "manual-compress-with-focus",
    reg="g",
    level=MUST,
    title="/compress <topic> with force: the host passes only the arguments compress() accepts",
)
def check_reg_g_manual_compress_with_focus(ctx):
    """REG-g (A4): ``compress()`` called as the host does for ``/compress topic`` (focus_topic and
    force filtered by signature, e.g. for ``compress(self, messages, current_tokens=None)``) returns
    a list; a TypeError raised inside the engine is reported, not swallowed."""
    engine = ctx.new_engine()
    history = _sentinel_history(ctx, engine)
    out = compress_like_host("A4", MUST, engine, history, focus_topic="build errors", force=True)
    if not isinstance(out, list):
        fail(
            "A4",
            MUST,
            "compress() for /compress build errors",
            expected="a list",
            got=short(out, 60),
        )
