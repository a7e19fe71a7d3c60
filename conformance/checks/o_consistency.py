"""Checks of contract section O, part 2: host-practice methods agree with the engine's own
behaviour (O12-O14).

- O12 ``should_compress_info()`` agrees with ``should_compress()`` in the same state;
- O13 ``prune_tool_results_only()`` never edits its input, and a list it prunes keeps the
  history valid, the system message first and the live turn verbatim;
- O14 ``has_content_to_compress()`` says False only where ``compress(force=True)`` declines.

Part 1 (the O methods' signatures and return values, O1-O11) is conformance/checks/o_optional.py.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    declined,
    fail,
    removed_and_new,
    short,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import transcripts
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    invoke,
    threshold_of,
    update_model_like_host,
)
from conformance.clauses.errors import CheckSkipped
from simulator.host.hooks import overrides as hook_overridden


# -- O12-O14: the methods Hermes 0.22's ABC added (host practice) -----------------------------
def _skip_without(engine: Any, method: str, clause: str) -> Any:
    """``engine.<method>``, or CheckSkipped when no host built on the ABC in use calls it: the
    engine defines none, or the ABC has none (hermes-agent 0.19.0's predates ``method``, so
    0.19.0 never calls an engine's own; an override that calls ``super()`` for Hermes 0.22 is
    then dead code there, not a fault)."""
    from simulator.host import shim

    bound = getattr(engine, method, None)
    if not callable(bound):
        raise CheckSkipped(
            f"the engine has no {method}() (the host ABC in use predates it; Hermes 0.22 "
            f"calls it: {clause})"
        )
    if not callable(getattr(shim.context_engine_base(), method, None)):
        raise CheckSkipped(
            f"the host ABC in use ({shim.abc_info().label()}) has no {method}(), so its host "
            f"never calls the engine's own; Hermes 0.22 does ({clause}): run the kit next to "
            "hermes-agent 0.22, or with no Hermes installed, to check it"
        )
    return bound


@check(
    "O12",
    "info-agrees-with-should-compress",
    level=SHOULD,
    practice="host",
    title="should_compress_info(p) returns (bool, reason) whose bool is should_compress(p)",
    examples=8,
)
def check_o12_info_agrees_with_should_compress(ctx):
    """O12 (host practice, Hermes 0.22): two fresh engines set up alike (update_model, a drawn
    usage); one answers ``should_compress(p)``, the other ``should_compress_info(p)``, for a
    drawn ``p`` (None, or a figure around the threshold). The info is a pair (bool, None or a
    str) and its bool equals the answer: the host words its "compaction blocked" warning from
    the info."""
    probe = ctx.new_engine()
    _skip_without(probe, "should_compress_info", "O12")
    if not hook_overridden(probe, "should_compress_info"):
        raise CheckSkipped(
            "should_compress_info() is the ABC's, which answers should_compress(): A3 judges "
            "that answer (O12)"
        )

    def body(draw):
        window = draw(st.integers(16_000, 400_000), "context_length")
        engines = []
        for _ in range(2):
            engine = ctx.new_engine(configure=False)
            update_model_like_host("O12", SHOULD, engine, "sim-model", window)
            engines.append(engine)
        threshold = threshold_of(engines[0], window // 2)
        near = [0, threshold - 1, threshold, threshold + 1, 2 * threshold]
        used = draw(st.sampled_from(near) | st.integers(0, 2 * threshold), "last_prompt_tokens")
        usage = {"prompt_tokens": used, "completion_tokens": 10, "total_tokens": used + 10}
        for engine in engines:
            invoke("O12", SHOULD, engine, "update_from_response", dict(usage))
        others = [n for n in near if (n >= threshold) != (used >= threshold)]
        asked = draw(
            st.sampled_from([None, *others]) | st.integers(0, 2 * threshold), "prompt_tokens"
        )
        said = invoke("O12", SHOULD, engines[0], "should_compress", asked)
        info = invoke("O12", SHOULD, engines[1], "should_compress_info", asked)
        call = f"should_compress_info({asked}) with the last usage at {used} tokens"
        if not (
            isinstance(info, (tuple, list))
            and len(info) == 2
            and isinstance(info[0], bool)
            and (info[1] is None or isinstance(info[1], str))
        ):
            fail(
                "O12",
                SHOULD,
                call,
                expected="a pair (bool, None or a reason str)",
                got=f"{type(info).__name__} {short(info, 80)}",
                context="host practice: Hermes 0.22 unpacks it to word its warning",
            )
        if bool(said) != info[0]:
            fail(
                "O12",
                SHOULD,
                call,
                expected=f"{bool(said)} first, as should_compress({asked}) answers on an engine "
                "in the same state",
                got=short(info, 80),
                context="host practice: Hermes 0.22 reads the info when it does not compact, "
                "to say why",
            )

    ctx.examples(body)


def _sent(rows: list[Any]) -> list[Any]:
    """``rows`` as the host sends them (``_`` keys left out; B3's rule)."""
    from conformance.checks.b_compressor import as_sent

    return [as_sent(m) for m in rows]


def _live_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The current turn: the last user message and every row after it."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[i:]
    return []


@check(
    "O13",
    "prune-keeps-history-valid",
    level=MUST,
    practice="host",
    title="prune_tool_results_only() returns (messages, n); a prune it commits keeps the "
    "history valid, the live turn whole, and its input untouched",
    examples=8,
)
def check_o13_prune_keeps_history_valid(ctx):
    """O13 (host practice, Hermes 0.22): ``prune_tool_results_only(history,
    current_tokens=...)`` on drawn tool-heavy histories (a drawn figure up to 3x the window).
    The result is ``(list, int >= 0)``; the input list and its rows are left as they were
    (the host passes its live history); a prune the host would commit (a new list and a
    non-zero count) is valid (V1-V3), pairs every tool call with its result (V2), keeps the
    system message first and the live turn (last user message onwards) verbatim."""
    from conformance.authoring.expect import v1_problems, v2_problems, v3_problems

    _skip_without(ctx.new_engine(), "prune_tool_results_only", "O13")

    def body(draw):
        history = draw(transcripts(min_turns=2, max_turns=8, tool_calls=True), "history")
        engine = ctx.new_engine()
        tokens = draw(st.integers(0, 3 * ctx.window), "current_tokens")
        given = copy.deepcopy(history)
        out = invoke("O13", MUST, engine, "prune_tool_results_only", given, current_tokens=tokens)
        call = f"prune_tool_results_only(<{len(history)} messages>, current_tokens={tokens})"
        if given != history:
            fail(
                "O13",
                MUST,
                f"the input of {call}",
                expected="left as it was (Hermes passes its live history; it commits only the "
                "new list it gets back)",
                got="its rows or the list were edited in place",
                context="host practice",
            )
        if not (
            isinstance(out, tuple)
            and len(out) == 2
            and isinstance(out[0], list)
            and isinstance(out[1], int)
            and not isinstance(out[1], bool)
            and out[1] >= 0
        ):
            fail(
                "O13",
                MUST,
                call,
                expected="a tuple (messages list, pruned count int >= 0); (messages, 0) for "
                "nothing pruned",
                got=f"{type(out).__name__} {short(out, 80)}",
                context="host practice: Hermes 0.22 unpacks it",
            )
        pruned, n = out
        if not n or pruned is given:
            return  # the host commits nothing
        problems = v1_problems(pruned)
        if not problems:
            problems = v2_problems(pruned) + v3_problems(pruned)
        if (
            not problems
            and history[0].get("role") == "system"
            and _sent(pruned[:1]) != _sent(history[:1])
        ):
            problems.append("the system message is no longer first and unchanged")
        live = _live_turn(history)
        if not problems and live and _sent(pruned[-len(live) :]) != _sent(live):
            problems.append(
                f"the live turn (the last {len(live)} rows, from the last user message) is not "
                "kept verbatim at the end"
            )
        if problems:
            fail(
                "O13",
                MUST,
                f"the pruned history of {call} (count {n}: Hermes commits it as the history)",
                expected="a valid message sequence, tool calls paired, system first, live turn "
                "whole",
                got="; ".join(problems[:3]),
                context="host practice",
            )

    ctx.examples(body)


@check(
    "O14",
    "no-content-means-compress-declines",
    level=SHOULD,
    practice="host",
    title="has_content_to_compress() returns a bool, and False only where compress() declines",
    examples=8,
)
def check_o14_no_content_means_compress_declines(ctx):
    """O14 (host practice, Hermes 0.22's gateway ``/compress``): on drawn histories over the
    engine's threshold (short and long), ``has_content_to_compress(history)`` is a bool; when
    it is False, a fresh engine's ``compress(history, force=True)`` (what /compress would run)
    declines: it removes no row. Otherwise the gateway answers "nothing to compress" where a
    compaction was possible."""
    from conformance.authoring.strategies import compactable_histories

    probe = ctx.new_engine()
    _skip_without(probe, "has_content_to_compress", "O14")
    threshold = threshold_of(probe, ctx.window // 2)
    shape = compactable_shape(ctx, probe)

    def body(draw):
        history = draw(compactable_histories(min_tokens=threshold + 1_000, **shape), "history")
        said = invoke(
            "O14", SHOULD, ctx.new_engine(), "has_content_to_compress", copy.deepcopy(history)
        )
        call = f"has_content_to_compress(<{len(history)} messages, over threshold_tokens>)"
        if not isinstance(said, bool):
            fail(
                "O14",
                SHOULD,
                call,
                expected="a bool",
                got=f"{type(said).__name__} {short(said, 60)}",
                context="host practice: Hermes 0.22 compares it with False",
            )
        if said:
            return
        out = compress_like_host("O14", SHOULD, ctx.new_engine(), history, force=True)
        if isinstance(out, list) and not declined(history, out):
            removed, _ = removed_and_new(history, out)
            fail(
                "O14",
                SHOULD,
                call,
                expected="True: compress(force=True) on the same history compacts it "
                f"(removed {removed} rows)",
                got="False (the gateway's /compress answers 'nothing to compress' without "
                "calling compress())",
                context="host practice",
            )

    ctx.examples(body)
