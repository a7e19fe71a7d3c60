"""Checks of contract section O, part 1: optional methods behave as documented (O1-O11; part 2,
O12-O14, is conformance/checks/o_consistency.py).

The ABC provides every O method; these checks hold for the defaults and for overrides:
calls with the host's arguments never raise and return what the host expects.
"""

from __future__ import annotations

import copy
import json

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    fail,
    not_an_int,
    short,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import transcripts, usage_dicts
from conformance.checks.engine_calls import (
    RAISED,
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    update_model_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped, ContractViolation
from simulator.host import calls

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
