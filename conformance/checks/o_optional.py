"""Checks of contract section O: optional methods behave as documented (O1-O11).

The ABC provides every O method; these checks hold for the defaults and for overrides:
calls with the host's arguments never raise and return what the host expects.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    declined,
    fail,
    not_an_int,
    removed_and_new,
    short,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import transcripts, usage_dicts
from conformance.checks.engine_calls import (
    RAISED,
    compactable_shape,
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    threshold_of,
    update_model_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped, ContractViolation
from simulator.host import calls
from simulator.host.hooks import overrides as hook_overridden

STATUS_KEYS = (
    "last_prompt_tokens",
    "threshold_tokens",
    "context_length",
    "usage_percent",
    "compression_count",
)
SESSION_KWARGS = {
    "platform": "cli",
    "model": "sim-model",
    "context_length": 16_000,
    "conversation_history": [],
    "hermes_home": "",
    "user_id": "u1",
    "extra_future_key": True,
}


@check(
    "O1",
    "session-start-accepts-host-kwargs",
    level=MUST,
    title="on_session_start(session_id, **kwargs) accepts the host's keyword arguments",
)
def check_o1_session_start_accepts_host_kwargs(ctx):
    """O1: ``on_session_start("s1", platform=..., model=..., <unknown future keys>)`` returns
    normally."""
    engine = ctx.new_engine()
    invoke("O1", MUST, engine, "on_session_start", "session-1", **copy.deepcopy(SESSION_KWARGS))


@check(
    "O2",
    "session-end-accepts-messages",
    level=MUST,
    title="on_session_end(session_id, messages) returns normally at a real boundary",
    examples=4,
)
def check_o2_session_end_accepts_messages(ctx):
    """O2: ``on_session_end(session_id, messages)`` with a drawn transcript returns normally."""

    def body(draw):
        history = draw(transcripts(max_turns=4), "history")
        engine = ctx.new_engine()
        invoke("O2", MUST, engine, "on_session_end", "session-1", copy.deepcopy(history))

    ctx.examples(body)


@check(
    "O3",
    "reset-zeroes-token-counters",
    level=MUST,
    title="on_session_reset() sets last_prompt/completion/total_tokens to 0",
    examples=4,
)
def check_o3_reset_zeroes_token_counters(ctx):
    """O3 (seeds: "resets the token counters"): after usage and a compaction, reset gives 0s."""

    def body(draw):
        u = draw(usage_dicts(), "usage")
        engine = ctx.new_engine()
        invoke("O3", MUST, engine, "update_from_response", dict(u))
        invoke("O3", MUST, engine, "on_session_reset")
        for attr in ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens"):
            value = getattr(engine, attr, None)
            if value != 0:
                fail(
                    "O3",
                    MUST,
                    f"engine.{attr} after on_session_reset()",
                    expected="0",
                    got=short(value),
                )

    ctx.examples(body)


@check(
    "O3",
    "reset-zeroes-compression-count",
    level=SHOULD,
    practice="host",
    title="on_session_reset() sets compression_count to 0 (host practice)",
)
def check_o3_reset_zeroes_compression_count(ctx):
    """O3 (host practice; not in seeds): compression_count is 0 after on_session_reset()."""
    engine = ctx.new_engine()
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    compress_like_host("O3", SHOULD, engine, history)
    invoke("O3", SHOULD, engine, "on_session_reset")
    value = getattr(engine, "compression_count", None)
    if value != 0:
        fail(
            "O3",
            SHOULD,
            "engine.compression_count after on_session_reset()",
            expected="0",
            got=short(value),
            host_practice=True,
        )


@check(
    "O4",
    "update-model-sets-window",
    level=MUST,
    title="update_model() sets context_length and recomputes threshold_tokens for the new window",
    examples=6,
)
def check_o4_update_model_sets_window(ctx):
    """O4: after ``update_model(m, L)``, ``context_length == L`` and ``0 < threshold_tokens <= L``;
    a second call with another window moves the threshold with it."""

    def body(draw):
        first = draw(st.integers(8_000, 400_000), "context_length")
        second = draw(
            st.integers(8_000, 400_000).filter(lambda v: abs(v - first) > 2_000),
            "second_context_length",
        )
        engine = ctx.new_engine(configure=False)
        results = []
        for window in (first, second):
            update_model_like_host("O4", MUST, engine, "sim-model", window)
            cl, th = (
                getattr(engine, "context_length", None),
                getattr(engine, "threshold_tokens", None),
            )
            if cl != window:
                fail(
                    "O4",
                    MUST,
                    f"context_length after update_model(context_length={window})",
                    expected=str(window),
                    got=short(cl),
                )
            if not isinstance(th, int) or not 0 < th <= window:
                fail(
                    "O4",
                    MUST,
                    f"threshold_tokens after update_model(context_length={window})",
                    expected=f"an int in 1..{window}",
                    got=short(th),
                    root_cause=""
                    if isinstance(th, int) and not isinstance(th, bool)
                    else not_an_int("threshold_tokens", th),
                )
            results.append(th)
        if (second > first) != (results[1] > results[0]):
            fail(
                "O4",
                MUST,
                f"threshold_tokens after switching the window {first} -> {second}",
                expected="to follow the new window",
                got=f"{results[0]} -> {results[1]}",
            )

    ctx.examples(body)


@check(
    "O5",
    "tool-schemas-is-list",
    level=MUST,
    title="get_tool_schemas() returns a list of dicts (default [])",
)
def check_o5_tool_schemas_is_list(ctx):
    """O5: ``get_tool_schemas()`` is a list whose items are dicts."""
    engine = ctx.new_engine()
    schemas = invoke("O5", MUST, engine, "get_tool_schemas")
    if not isinstance(schemas, list) or not all(isinstance(s, dict) for s in schemas):
        fail(
            "O5",
            MUST,
            "get_tool_schemas()",
            expected="a list of dicts ([] when the engine has no tools)",
            got=short(schemas, 120),
        )


@check(
    "O6",
    "unknown-tool-json-error",
    level=MUST,
    title="handle_tool_call(unknown name, args, messages=...) returns a JSON string with an error",
)
def check_o6_unknown_tool_json_error(ctx):
    """O6/T2: an unknown tool name gives a JSON object string with an ``error`` key."""
    engine = ctx.new_engine()
    out = invoke(
        "O6",
        MUST,
        engine,
        "handle_tool_call",
        "kit_no_such_tool",
        {"x": 1},
        messages=[{"role": "user", "content": "hi"}],
    )
    try:
        data = json.loads(out) if isinstance(out, str) else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or "error" not in data:
        fail(
            "O6",
            MUST,
            "handle_tool_call('kit_no_such_tool', {...})",
            expected='a JSON string like {"error": "Unknown tool: kit_no_such_tool"}',
            got=short(out, 120),
        )


@check(
    "O7",
    "preflight-returns-bool",
    level=MUST,
    title="should_compress_preflight(messages) returns a bool",
    examples=6,
)
def check_o7_preflight_returns_bool(ctx):
    """O7: ``should_compress_preflight(messages)`` returns True or False on drawn histories."""

    def body(draw):
        history = draw(transcripts(), "history")
        engine = ctx.new_engine()
        out = invoke("O7", MUST, engine, "should_compress_preflight", copy.deepcopy(history))
        if not isinstance(out, bool):
            fail(
                "O7",
                MUST,
                f"should_compress_preflight(<{len(history)} messages>)",
                expected="a bool",
                got=f"{type(out).__name__} {short(out, 60)}",
            )

    ctx.examples(body)


@check(
    "O8",
    "status-keys",
    level=MUST,
    practice="host",
    title="get_status() is a dict with the five keys the host shows; usage_percent in 0-100",
    examples=6,
)
def check_o8_status_keys(ctx):
    """O8 (key list: host practice): keys present, ints where ints, usage_percent in 0..100
    (0 when context_length is 0), last_prompt_tokens never negative."""

    def body(draw):
        u = draw(usage_dicts(), "usage")
        engine = ctx.new_engine()
        invoke("O8", MUST, engine, "update_from_response", dict(u))
        status = invoke("O8", MUST, engine, "get_status")
        if not isinstance(status, dict):
            fail(
                "O8",
                MUST,
                "get_status()",
                expected="a dict",
                got=type(status).__name__,
                host_practice=True,
            )
        missing = [k for k in STATUS_KEYS if k not in status]
        if missing:
            fail(
                "O8",
                MUST,
                "get_status()",
                expected=f"the keys {', '.join(STATUS_KEYS)}",
                got=f"missing {', '.join(missing)} (keys: {', '.join(sorted(map(str, status)))})",
                host_practice=True,
            )
        pct = status["usage_percent"]
        if not isinstance(pct, (int, float)) or isinstance(pct, bool) or not 0 <= pct <= 100:
            fail(
                "O8",
                MUST,
                "get_status()['usage_percent']",
                expected="a number in 0..100",
                got=short(pct),
                context=f"prompt_tokens {u['prompt_tokens']}, context_length "
                f"{getattr(engine, 'context_length', '?')}",
                host_practice=True,
            )
        if not isinstance(status["last_prompt_tokens"], int) or status["last_prompt_tokens"] < 0:
            fail(
                "O8",
                MUST,
                "get_status()['last_prompt_tokens']",
                expected="an int >= 0",
                got=short(status["last_prompt_tokens"]),
                host_practice=True,
            )

    ctx.examples(body)


#: O8 zero window: how the engine got to it.
ZERO_WINDOW_PATHS = ("no update_model() yet", "update_model(context_length=0)", "switched to 0")


@check(
    "O8",
    "zero-window",
    level=MUST,
    title="get_status() and should_compress() never raise before any update_model() or after "
    "update_model(context_length=0); usage_percent is then 0",
    examples=4,
)
def check_o8_zero_window(ctx):
    """O8: a zero window (a model whose window is unknown, or no update_model() yet): after
    drawn usage, ``should_compress()`` (with and without its argument) returns and
    ``get_status()`` returns a dict whose ``usage_percent`` is 0 whenever ``context_length`` is
    0; none of them, nor ``update_model(context_length=0)``, raises (a division by the window
    is a fault public engines shipped). The type of should_compress()'s answer is A3's business."""

    def body(draw):
        path = draw(st.sampled_from(ZERO_WINDOW_PATHS), "window")
        engine = ctx.new_engine(configure=False)
        if path == "switched to 0":
            update_model_like_host("O8", MUST, engine, "sim-model", ctx.window)
        if path != "no update_model() yet":
            update_model_like_host("O8", MUST, engine, "sim-unknown-model", 0)
        if draw(st.booleans(), "has_usage"):
            prompt = draw(st.integers(0, 50_000), "prompt_tokens")
            invoke("O8", MUST, engine, "update_from_response", usage(prompt))
        arg = draw(st.sampled_from([None, 0, 1_000, 1_000_000]), "should_compress_arg")
        if arg is None:
            invoke("O8", MUST, engine, "should_compress")
        else:
            invoke("O8", MUST, engine, "should_compress", arg)
        status = invoke("O8", MUST, engine, "get_status")
        if not isinstance(status, dict):
            fail("O8", MUST, f"get_status() ({path})", expected="a dict", got=type(status).__name__)
        window = getattr(engine, "context_length", None)
        pct = status.get("usage_percent")
        if window == 0 and (not isinstance(pct, (int, float)) or isinstance(pct, bool) or pct != 0):
            fail(
                "O8",
                MUST,
                f"get_status()['usage_percent'] with context_length 0 ({path})",
                expected="0",
                got=short(pct),
                host_practice=True,
            )

    ctx.examples(body)


@check(
    "O9",
    "select-context-returns-none-or-list",
    level=MUST,
    title="select_context(...) returns None (the default) or a list",
    examples=4,
)
def check_o9_select_context_returns_none_or_list(ctx):
    """O9: the default returns None; an override returns None or a list (H3 says what lists do)."""

    def body(draw):
        history = draw(transcripts(max_turns=6), "history")
        engine = ctx.new_engine()
        out = fail_open(select_like_host, "O9", MUST, engine, history, incoming=None)
        if out is RAISED:
            return  # fail-open; H1 reports it
        if out is not None and not isinstance(out, list):
            fail(
                "O9",
                MUST,
                "select_context(...)",
                expected="None or a list of messages",
                got=f"{type(out).__name__} {short(out, 60)}",
            )

    ctx.examples(body)


@check(
    "O10",
    "turn-complete-accepts-host-kwargs",
    level=MUST,
    title="on_turn_complete(messages, usage, **kwargs) returns normally with the host's keywords",
)
def check_o10_turn_complete_accepts_host_kwargs(ctx):
    """O10: called with usage=None and with a usage dict plus turn_id, task_id, api_call_count,
    interrupted, failed, turn_exit_reason (host practice names) and unknown keys."""
    engine = ctx.new_engine()
    if not overrides(engine, "on_turn_complete"):
        invoke("O10", MUST, engine, "on_turn_complete", [{"role": "user", "content": "hi"}], None)
        return
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    for u in (None, usage(120)):
        meta = calls.on_turn_complete_kwargs(
            turn_id="t1",
            task_id="task",
            api_call_count=1,
            interrupted=False,
            failed=False,
            turn_exit_reason="completed",
        )
        try:  # the host's keywords plus one it may add in a later release
            invoke("O10", MUST, engine, "on_turn_complete", list(msgs), u, **meta, kit_future_key=1)
        except ContractViolation as exc:
            if isinstance(getattr(exc, "cause", None), TypeError):
                fail(
                    "O10",
                    MUST,
                    "on_turn_complete(messages, usage, turn_id=..., ...)",
                    expected="to accept the host's keyword arguments (**kwargs)",
                    got=f"TypeError: {short(str(exc.cause), 120)}",
                )
            if getattr(exc, "cause", None) is None:
                raise
            return  # fail-open; H1 reports it


@check(
    "O11",
    "clone-is-an-engine",
    level=MUST,
    title="clone_for_agent() returns an engine with the same name",
)
def check_o11_clone_is_an_engine(ctx):
    """O11: the clone has the required methods and the same ``name`` (default deepcopy)."""
    engine = ctx.new_engine()
    clone = fail_open(invoke, "O11", MUST, engine, "clone_for_agent")
    if clone is RAISED:
        raise CheckSkipped("clone_for_agent() raised; C1 reports it")
    if not isinstance(engine.name, str):
        raise CheckSkipped("engine.name is not a str (A1 reports it)")
    missing = [
        m
        for m in ("update_from_response", "should_compress", "compress")
        if not callable(getattr(clone, m, None))
    ]
    name = getattr(clone, "name", None)
    if missing or name != engine.name:
        fail(
            "O11",
            MUST,
            "clone_for_agent()",
            expected=f"an engine named {engine.name!r}",
            got=f"{type(clone).__name__} named {short(name)}"
            + (f" missing {', '.join(missing)}" if missing else ""),
        )


# -- O12-O14: the methods Hermes 0.22's ABC added (host practice) -----------------------------
def _skip_without(engine: Any, method: str, clause: str) -> Any:
    """``engine.<method>``, or CheckSkipped when the ABC in use has none and the engine defines
    none (hermes-agent 0.19.0's ABC predates ``method``)."""
    bound = getattr(engine, method, None)
    if not callable(bound):
        raise CheckSkipped(
            f"the engine has no {method}() (the host ABC in use predates it; Hermes 0.22 "
            f"calls it: {clause})"
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
