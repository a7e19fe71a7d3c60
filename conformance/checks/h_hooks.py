"""Checks of contract section H: the per-request and per-turn hooks (H1, H3, H5, H6).

H2 (identity skipping), H4 (order) and H7 (pre_llm_call) are host behaviour, proven by
the host tests listed in docs/coverage.md. No check here requires on_turn_complete to
fire, or not fire, on an early exit (seeds: future work).
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import MUST, SHOULD, fail, short
from conformance.authoring.hosts import as_sent, request_as_sent
from conformance.authoring.registry import check
from conformance.authoring.strategies import filler_block, transcripts
from conformance.checks.engine_calls import (
    RAISED,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    turn_complete_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped, ContractViolation
from simulator.provider.tokens import count_messages

HOOKS = ("select_context", "on_turn_complete")
CACHE_MODEL = "gpt-4.1"
#: H6: a stable selection over identical turns should read at least this share of its
#: prompt tokens from the provider's prompt cache (turns 2..N).
MIN_CACHE_READ_SHARE = 0.5
#: The provider's minimum cacheable prefix for CACHE_MODEL (OpenAI rules), in tokens.
MIN_CACHEABLE_TOKENS = 1_024


def _need(engine: Any, hook: str) -> None:
    if not overrides(engine, hook):
        raise CheckSkipped(f"engine keeps the ABC default {hook}; the host never calls it (H2)")


@check(
    "H1",
    "hooks-do-not-raise",
    level=SHOULD,
    variants=HOOKS,
    title="select_context / on_turn_complete do not raise (the host fails open, but reports it)",
    examples=6,
)
def check_h1_hooks_do_not_raise(ctx, variant):
    """H1 (SHOULD): the hook returns normally on drawn histories. The host still fails open
    (request untouched, exception logged; host tests prove that), so this is a SHOULD."""
    _need(ctx.new_engine(), variant)

    def body(draw):
        history = draw(transcripts(max_turns=6), "history")
        engine = ctx.new_engine()
        try:
            if variant == "select_context":
                select_like_host("H1", SHOULD, engine, history)
            else:
                invoke(
                    "H1",
                    SHOULD,
                    engine,
                    "on_turn_complete",
                    list(copy.deepcopy(history)),
                    usage(500),
                )
        except ContractViolation as exc:
            fail(
                "H1",
                SHOULD,
                f"{variant}()",
                expected="a normal return (the host fails open and logs it)",
                got=getattr(exc, "raised", None) or exc.detail.rstrip("."),
            )

    ctx.examples(body)


@check(
    "H3",
    "select-context-leaves-inputs-alone",
    level=SHOULD,
    title="select_context() does not mutate request_messages, "
    "conversation_messages or incoming_message",
    examples=6,
)
def check_h3_select_context_leaves_inputs_alone(ctx):
    """H3 (SHOULD): the selection is request-scoped; mutating the inputs cannot harm (the host
    passes copies of the history) but is a SHOULD failure."""
    _need(ctx.new_engine(), "select_context")

    def body(draw):
        history = draw(transcripts(min_turns=2, max_turns=8), "history")
        engine = ctx.new_engine()
        request, conv = copy.deepcopy(history), copy.deepcopy(history)
        incoming = next(
            (copy.deepcopy(m) for m in reversed(history) if m.get("role") == "user"), None
        )
        before = copy.deepcopy((request, conv, incoming))
        selected = fail_open(
            select_like_host,
            "H3",
            SHOULD,
            engine,
            history,
            request=request,
            conversation=conv,
            incoming=incoming,
        )
        if selected is RAISED:
            return  # H1's business
        for name, now, was in zip(
            ("request_messages", "conversation_messages", "incoming_message"),
            (request, conv, incoming),
            before,
            strict=True,
        ):
            if now != was:
                fail(
                    "H3",
                    SHOULD,
                    f"select_context() argument {name}",
                    expected="left unchanged",
                    got="mutated in place",
                    context=f"history of {len(history)} messages",
                )

    ctx.examples(body)


@check(
    "H5",
    "turn-complete-does-not-mutate",
    level=MUST,
    title="on_turn_complete() does not mutate the messages "
    "(a shallow copy of the host's own dicts)",
    examples=6,
)
def check_h5_turn_complete_does_not_mutate(ctx):
    """H5 (MUST): the list is a shallow copy, so its dicts are the host's transcript; the engine
    must not change them (nor their nested content parts and tool_calls)."""
    _need(ctx.new_engine(), "on_turn_complete")

    def body(draw):
        history = draw(transcripts(max_turns=6), "history")
        engine = ctx.new_engine()
        host_dicts = copy.deepcopy(history)
        snapshot = copy.deepcopy(host_dicts)
        fail_open(  # a raise is H1's business; mutation before the raise still counts
            turn_complete_like_host,
            "H5",
            MUST,
            engine,
            list(host_dicts),
            usage(count_messages(history)),
            turn_id="t1",
            interrupted=False,
            failed=False,
            turn_exit_reason="completed",
        )
        for i, (now, was) in enumerate(zip(host_dicts, snapshot, strict=True)):
            if now != was:
                keys = sorted(set(now) ^ set(was)) or sorted(
                    k for k in now if now.get(k) != was.get(k)
                )
                fail(
                    "H5",
                    MUST,
                    f"on_turn_complete() on the host's message {i} ({was.get('role')})",
                    expected="the host's dicts left unchanged (read-only shallow copy)",
                    got=f"changed keys {', '.join(map(str, keys))}",
                )

    ctx.examples(body)


def _turns(n_turns: int, seed: int, chars: int = 1_200) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful assistant. " * 20}
    ]
    for k in range(n_turns):
        history += filler_block(seed, chars, k)
    history.append({"role": "user", "content": "And now?"})
    return history


@check(
    "H6",
    "stable-selection",
    level=SHOULD,
    title="select_context() returns the same selection while nothing has changed",
    examples=6,
)
def check_h6_stable_selection(ctx):
    """H6 (SHOULD): three calls with identical inputs give equal selections (None counts as
    "the request unchanged")."""
    _need(ctx.new_engine(), "select_context")

    def body(draw):
        history = draw(transcripts(min_turns=4, max_turns=10, end_with_user=True), "history")
        engine = ctx.new_engine()
        outs = []
        for _ in range(3):
            try:  # the request and the conversation as the host hands them over
                out = select_like_host(
                    "H6",
                    SHOULD,
                    engine,
                    history,
                    request=request_as_sent(ctx, copy.deepcopy(history)),
                    conversation=as_sent(ctx, copy.deepcopy(history), "select_context"),
                )
            except ContractViolation:
                return  # H1's business
            outs.append(history if out is None else out)
        if not (outs[0] == outs[1] == outs[2]):
            which = 2 if outs[0] != outs[1] else 3
            fail(
                "H6",
                SHOULD,
                f"select_context() call {which} with inputs identical to call 1",
                expected="the same selection (a reshuffle loses prompt-cache reuse every turn)",
                got=f"a different list ({len(outs[0])} vs {len(outs[which - 1])} messages)",
            )

    ctx.examples(body)


def _provider_with_cache():
    """A provider simulator with OpenAI-style automatic prefix caching, or None when the
    simulator in use has no cache accounting (first-cut provider)."""
    from simulator.provider.core import Provider

    try:
        provider = Provider(model=CACHE_MODEL)
    except TypeError:
        return None
    probe = {"model": CACHE_MODEL, "messages": _turns(3, 7)}
    try:
        provider.chat_completions(copy.deepcopy(probe))
        second = provider.chat_completions(copy.deepcopy(probe))
    except Exception:
        return None
    cached = ((second.get("usage") or {}).get("prompt_tokens_details") or {}).get(
        "cached_tokens", 0
    )
    if not cached:
        return None
    return Provider(model=CACHE_MODEL)


@check(
    "H6",
    "cache-reuse",
    level=SHOULD,
    title="over repeated identical turns the selection keeps the provider's prompt cache warm",
)
def check_h6_cache_reuse(ctx):
    """H6 (SHOULD): five identical requests through select_context to the provider simulator;
    turns 2-5 read at least half their prompt tokens from the cache (the simulator's
    ``prompt_tokens_details.cached_tokens``)."""
    engine = ctx.new_engine(window=200_000)
    _need(engine, "select_context")
    provider = _provider_with_cache()
    if provider is None:
        raise CheckSkipped(
            "the provider simulator in use reports no prompt-cache reads (cache accounting not "
            "available); H6-stable-selection still runs"
        )
    history = _turns(8, 11, chars=3_000)
    read = total = 0
    for turn in range(5):
        try:
            out = select_like_host("H6", SHOULD, engine, history)
        except ContractViolation:
            return  # H1's business
        valid = isinstance(out, list) and out and all(isinstance(m, dict) for m in out)
        messages = (
            out if valid else history
        )  # None or an invalid value: the host sends the request unchanged
        response = provider.chat_completions(
            {"model": CACHE_MODEL, "messages": copy.deepcopy(messages)}
        )
        u = response.get("usage") or {}
        if turn:
            read += int((u.get("prompt_tokens_details") or {}).get("cached_tokens", 0))
            total += int(u.get("prompt_tokens", 0))
    if total < 4 * MIN_CACHEABLE_TOKENS:
        raise CheckSkipped(
            "the selection is below the provider's minimum cacheable prompt "
            f"({total // 4} tokens per turn < {MIN_CACHEABLE_TOKENS}); nothing to measure"
        )
    share = read / total if total else 1.0
    if share < MIN_CACHE_READ_SHARE:
        fail(
            "H6",
            SHOULD,
            "prompt-cache reads over 4 repeated identical turns",
            expected=f">= {MIN_CACHE_READ_SHARE:.0%} of prompt tokens read from cache",
            got=f"{share:.0%} ({read} of {total} tokens)",
            context=f"model {CACHE_MODEL}, provider simulator",
        )


#: What a ``pre_llm_call`` hook appends to the request's user message (H7), drawn.
HOOK_TEXTS = (
    "<memory-context>\nThe user prefers short answers; the repo uses pytest.\n</memory-context>",
    "[recalled] Earlier you agreed to keep the public API stable.",
)


def _structure(rows: list[Any]) -> list[tuple]:
    """(role, tool-call ids or tool_call_id) per row: this turn's rows, content aside."""
    out = []
    for m in rows:
        if not isinstance(m, dict):
            out.append(("?",))
            continue
        calls = tuple(str(c.get("id")) for c in m.get("tool_calls") or () if isinstance(c, dict))
        out.append((m.get("role"), calls, m.get("tool_call_id")))
    return out


def _decorate(message: dict[str, Any], text: str) -> None:
    """Append ``text`` to a user message the way the host's pre_llm_call stage does (H7)."""
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = list(content) + [{"type": "text", "text": text}]
    else:
        message["content"] = "\n\n".join([content or "", text])


@check(
    "H3",
    "replacement-keeps-live-turn",
    level=MUST,
    practice="kit",
    title="a select_context() replacement ends with the request's own current user message, "
    "byte-identical (pre_llm_call text included), then only this turn's assistant/tool rows",
    examples=8,
)
def check_h3_replacement_keeps_live_turn(ctx):
    """H3 (kit practice): statefully, as the host calls it: earlier turns go through
    ``on_turn_complete`` (and select_context), then select_context runs on the live turn with
    ``request_messages`` unlike ``conversation_messages``: the request's user message carries
    a ``pre_llm_call`` text (H7), and/or the request rows are sanitized copies (no uid fields)
    while the conversation has no system prompt; the live turn may be inside a tool loop.
    A list replacement must end with that user message, content byte-identical, followed by
    exactly this turn's assistant/tool rows (same roles and call ids, in order)."""
    from conformance.authoring.strategies import text_from_seed, tool_turn
    from simulator.host.sanitize import strip_persistence_fields

    _need(ctx.new_engine(), "select_context")

    def body(draw):
        history = draw(
            transcripts(min_turns=2, max_turns=8, system=True, end_with_user=False), "history"
        )
        engine = ctx.new_engine()
        ends = [i for i, m in enumerate(history) if m.get("role") == "user" and i > 1]
        for n, end in enumerate(ends + [len(history)], 1):  # the earlier turns, as the host
            done = copy.deepcopy(history[:end])
            if overrides(engine, "select_context"):
                fail_open(select_like_host, "H3", MUST, engine, done)
            if overrides(engine, "on_turn_complete"):
                fail_open(
                    turn_complete_like_host,
                    "H3",
                    MUST,
                    engine,
                    done,
                    usage(count_messages(done)),
                    turn_id=f"t{n}",
                )
        seed = draw(st.integers(0, 10_000), "live_seed")
        user = {
            "role": "user",
            "content": "Now: " + text_from_seed(seed, "en_US", 2),
            "message_uid": f"{seed:032x}"[-32:],
        }
        live = [user]
        if draw(st.booleans(), "inside_tool_loop"):
            live += draw(tool_turn(first_call=9_000, long_outputs=False), "this_turn_tools")
        conversation = copy.deepcopy(history) + copy.deepcopy(live)
        request = copy.deepcopy(conversation)
        differs = draw(st.sampled_from(["pre_llm_call", "sanitized", "both"]), "request_differs")
        cur = len(history)  # the live user message's index in the request
        if differs in ("pre_llm_call", "both"):
            _decorate(request[cur], draw(st.sampled_from(HOOK_TEXTS), "hook_text"))
        if differs in ("sanitized", "both"):
            request = strip_persistence_fields(request)
            conversation = conversation[1:]  # the persisted conversation has no system prompt
        incoming = copy.deepcopy(user)
        out = fail_open(
            select_like_host,
            "H3",
            MUST,
            engine,
            history,
            request=request,
            conversation=conversation,
            incoming=incoming,
        )
        if out is RAISED or not isinstance(out, list) or not out:
            return  # None: the request goes unchanged; raises and non-lists: H1, O9
        if not all(isinstance(m, dict) for m in out):
            return  # the host ignores it (H3)
        at = next((i for i in range(len(out) - 1, -1, -1) if out[i].get("role") == "user"), None)
        where = f"request of {len(request)} messages, request differs: {differs}"
        want = request[cur]
        if at is None or json.dumps(out[at].get("content"), ensure_ascii=False) != json.dumps(
            want.get("content"), ensure_ascii=False
        ):
            got_text = "no user message" if at is None else short(out[at].get("content"), 120)
            fail(
                "H3",
                MUST,
                "the last user message of the select_context() replacement",
                expected=f"the request's own current user message, byte-identical "
                f"({short(want.get('content'), 120)})",
                got=got_text,
                context=where,
            )
        if _structure(out[at + 1 :]) != _structure(request[cur + 1 :]):
            fail(
                "H3",
                MUST,
                "the rows after the current user message in the select_context() replacement",
                expected=f"this turn's {len(request) - cur - 1} assistant/tool rows, in order "
                f"({_structure(request[cur + 1 :])})",
                got=f"{len(out) - at - 1} rows ({short(_structure(out[at + 1 :]), 160)})",
                context=where,
            )

    ctx.examples(body)
