"""Checks of contract section V: compress() output and select_context() replacements are
valid OpenAI-format message sequences (V1-V5). Part 2, the system prompt over
compactions (V4), is conformance/checks/v_system_prompt.py.

Each clause is checked on both surfaces (variants ``compress`` and ``select_context``).
On compress() output V1-V4 are MUST. On select_context() replacements they are SHOULD:
the seeds only require a non-empty list of dicts there, which the host then sends through
its sanitizers (docs/contract-notes.md, 2.7). V5 (only message keys the host knows) is SHOULD
on both. Histories are drawn with Hypothesis; half of them cross the engine's threshold so
the engine really compacts. Beyond the basic shapes: histories that end mid tool chain
(V2's in-flight exception) and rows of content parts (V5; P5 reuses the same inputs,
:mod:`conformance.checks.p_caching`).
"""

from __future__ import annotations

import copy

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    describe,
    fail,
    in_flight_calls,
    short,
    trailing_chain,
    unknown_key_problems,
    v1_problems,
    v2_problems,
    v3_problems,
    v4_problems,
)
from conformance.authoring.hosts import as_sent, request_as_sent, skip_unless_system_sent
from conformance.authoring.probes import at_every_offset, long_history
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    compactable_histories,
    content_part_rows,
    in_flight_histories,
    transcripts,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compaction_point,
    compress_like_host,
    overrides_select_context,
    select_like_host,
    threshold_of,
)
from conformance.clauses.errors import CheckSkipped, ContractViolation
from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS

#: B5's compaction note (the start of its text), see conformance.checks.b_compressor.
NOTE_MARKER = "[Note: Some earlier conversation turns have been compacted"

SURFACES = ("compress", "select_context")
LEVELS = {"select_context": SHOULD}


def level_of(variant):
    """MUST on compress() output, SHOULD on select_context() replacements."""
    return LEVELS.get(variant, MUST)


def _outputs(ctx, clause, variant, validate, *, at_point=False):
    """Draw histories, run the surface, and call ``validate(history, output)`` on real outputs.

    An exception from select_context() is not a V finding: the host fails open (H1 reports it).
    ``at_point``: on compress(), first try histories of the size where the engine compacts by
    its own thresholds (:func:`~conformance.checks.engine_calls.compaction_point`), at every
    offset of a tool turn.
    """
    skip_without_select(ctx, variant)

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        over = draw(st.booleans(), "over_threshold")
        history = draw(transcripts(min_tokens=threshold + 500 if over else 0), "history")
        if variant == "compress":
            history = as_sent(ctx, history, "compress")  # the system row where the host sends it
            out = compress_like_host(clause, MUST, engine, history)
        else:
            try:  # the request as that host hands it over, the conversation without system row
                out = select_like_host(
                    clause,
                    SHOULD,
                    engine,
                    history,
                    request=request_as_sent(ctx, copy.deepcopy(history)),
                    conversation=as_sent(ctx, copy.deepcopy(history), "select_context"),
                )
            except ContractViolation:
                return  # raised: fail-open, reported under H1
            if out is None:
                return  # "no change": H3
        if not isinstance(out, list):
            return  # A4 (compress) or O9 (select_context) reports a non-list
        validate(history, out)

    # one long history first: a rule broken only past N messages shows at any budget
    firsts = [{"over_threshold": True, "history": long_history()}]
    point = compaction_point(ctx, clause, MUST) if at_point and variant == "compress" else None
    if point is not None:
        firsts += [{"over_threshold": True, "history": h} for h in at_every_offset(point, [])]
    ctx.examples(body, first=firsts)


def _report(clause, variant, problems, history, out):
    if problems:
        where = "compress() output" if variant == "compress" else "select_context() replacement"
        fail(
            clause,
            level_of(variant),
            where,
            expected=_EXPECT[clause],
            got=problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
            context=f"history of {len(history)} messages, output of "
            f"{len(out) if isinstance(out, list) else '?'}",
        )


_EXPECT = {
    "V1": "a list of dicts, each with a role in system/user/assistant/tool",
    "V2": "every tool call answered exactly once after it, and no orphan tool result",
    "V3": "content a str, a list of typed parts, or None only on an assistant with tool_calls",
    "V4": "the system prompt to stay first",
    "V5": "rows carrying only message keys the host knows (role, content, name, tool_calls, "
    "tool_call_id, the U identity fields, reasoning fields, _-prefixed host fields)",
}


@check(
    "V1",
    "list-of-role-dicts",
    level=MUST,
    variants=SURFACES,
    variant_levels=LEVELS,
    title="output is a list of dicts with valid roles",
)
def check_v1_list_of_role_dicts(ctx, variant):
    """V1: every item is a dict whose role is system/user/assistant/tool."""
    _outputs(ctx, "V1", variant, lambda h, out: _report("V1", variant, v1_problems(out), h, out))


def _after_v1(clause, variant, problems):
    """A validator that reports ``problems(history, output)`` under ``clause`` only when V1
    holds (a malformed list is V1's finding, not also V2-V4's)."""

    def validate(h, out):
        if not v1_problems(out):
            _report(clause, variant, problems(h, out), h, out)

    return validate


@check(
    "V2",
    "tool-results-paired",
    level=MUST,
    variants=SURFACES,
    variant_levels=LEVELS,
    title="no orphan tool calls or tool results",
)
def check_v2_tool_results_paired(ctx, variant):
    """V2: each assistant tool_calls id has exactly one later tool result, and vice versa."""
    _outputs(
        ctx,
        "V2",
        variant,
        _after_v1("V2", variant, lambda h, out: v2_problems(out, in_flight=in_flight_calls(h))),
        at_point=True,
    )


@check(
    "V3",
    "content-types",
    level=MUST,
    variants=SURFACES,
    variant_levels=LEVELS,
    title="content is a str, a list of parts, or None where allowed",
)
def check_v3_content_types(ctx, variant):
    """V3: content types by role."""
    _outputs(ctx, "V3", variant, _after_v1("V3", variant, lambda h, out: v3_problems(out)))


@check(
    "V4",
    "system-prompt-first",
    level=MUST,
    variants=SURFACES,
    variant_levels=LEVELS,
    title="the system prompt, if any, stays first",
)
def check_v4_system_prompt_first(ctx, variant):
    """V4: when the input starts with a system message, so does the output (a note may be
    appended)."""
    if variant == "compress":  # select_context's request carries the system row everywhere
        skip_unless_system_sent(ctx, "compress", "V4")
    _outputs(ctx, "V4", variant, _after_v1("V4", variant, v4_problems))


def _wire(m):
    """A row without identity fields and ``_*`` keys: what "verbatim" compares (V2)."""
    if not isinstance(m, dict):
        return m
    return {
        k: v
        for k, v in m.items()
        if k not in PERSISTENCE_ONLY_FIELDS and not str(k).startswith("_")
    }


def chain_problem(history, out) -> str | None:
    """V2: what became of ``history``'s newest tool chain in ``out``, or None when ``out``
    ends with it verbatim (no stub result for a call still in flight)."""
    chain = trailing_chain(history)
    if not chain:
        return None
    want = [_wire(m) for m in chain]
    rows = [_wire(m) for m in out]
    if rows[-len(want) :] == want:
        return None
    call = chain[0]
    ids = [c.get("id") for c in call.get("tool_calls") or ()]
    where = next((i for i, m in enumerate(rows) if m == want[0]), None)
    if where is None:
        named = ", ".join(map(repr, ids))
        kept = set()
        for m in out:
            if isinstance(m, dict) and m.get("role") == "assistant":
                kept.update(c.get("id") for c in m.get("tool_calls") or () if isinstance(c, dict))
        if any(i in kept for i in ids):
            return (
                f"the newest assistant tool_calls message (calls {named}) is changed in the "
                "output: the agent would not see its own calls as it made them"
            )
        return (
            f"the calls {named} of the newest assistant tool_calls message are gone from the "
            "output (the message dropped, or its calls stripped as orphans: a call whose result "
            "is not appended yet is in flight, not an orphan): the agent would run them again"
        )
    running = in_flight_calls(history)
    after = out[where + 1 :]
    stubs = [
        (where + 1 + j, m)
        for j, m in enumerate(after)
        if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") in running
    ]
    if stubs:
        i, m = stubs[0]
        return (
            f"a tool result at index {i} for {m.get('tool_call_id')!r}, a call still in flight "
            f"(its result is not appended yet): {short(m.get('content'), 60)}"
        )
    for k, w in enumerate(want[1:], 1):
        if w not in rows[where + 1 :]:
            return (
                f"the newest chain's result for {chain[k].get('tool_call_id')!r} is gone or "
                "changed: the agent would run that call again"
            )
    return (
        f"the newest chain at index {where} is followed by {len(out) - where - len(want)} other "
        f"message(s) ({', '.join(describe(m) for m in out[where + len(want) :][:3])})"
    )


@check(
    "V2",
    "in-flight-chain-kept",
    level=MUST,
    title="a history that ends mid tool chain keeps its newest chain verbatim at the end, and a "
    "call still in flight gets no stub result",
    examples=4,
)
def check_v2_in_flight_chain_kept(ctx):
    """V2 (in-flight exception): the host compacts right after a tool result (post-tool check)
    or while the last assistant tool_calls has no result yet. On such histories over the
    threshold the output ends with the newest assistant tool_calls message and its results,
    verbatim; a call whose result is not appended yet stays without one (no stub), and every
    other call and result is paired."""

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        history = draw(
            in_flight_histories(min_tokens=threshold + 1_000, **compactable_shape(ctx, engine)),
            "history",
        )
        out = compress_like_host("V2", MUST, engine, history)
        if not isinstance(out, list) or v1_problems(out):
            return  # A4 / V1
        ending = "a pending call" if in_flight_calls(history) else "a tool result"
        problem = chain_problem(history, out)
        if problem:
            fail(
                "V2",
                MUST,
                f"compress() output for a history ending on {ending} (mid tool chain)",
                expected="the newest tool chain verbatim at the end (a call in flight is not an "
                "orphan: no stub result)",
                got=problem,
                context=f"history of {len(history)} messages, output of {len(out)}",
            )
        problems = v2_problems(out, in_flight=in_flight_calls(history))
        if problems:
            fail(
                "V2",
                MUST,
                f"compress() output for a history ending on {ending} (mid tool chain)",
                expected=_EXPECT["V2"] + " (a call still in flight excepted)",
                got=problems[0],
                context=f"history of {len(history)} messages, output of {len(out)}",
            )

    # first, where the engine compacts by its own thresholds, ending on a pending call
    point = compaction_point(ctx, "V2", MUST)
    pending = [  # after the history's last user message: the call the host has not run yet
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_live_0",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "deploy.log"}'},
                }
            ],
        },
    ]
    firsts = [{"history": h} for h in at_every_offset(point, pending)] if point else None
    ctx.examples(body, first=firsts)


def row_inputs(ctx, engine, draw):
    """A drawn compress()/select_context() input for the row-key checks (V5, P5): a compactable
    history over the threshold or a plain transcript, with drawn rows as content parts."""
    threshold = threshold_of(engine, ctx.window // 2)
    if draw(st.booleans(), "over_threshold"):
        history = draw(
            compactable_histories(min_tokens=threshold + 1_000, **compactable_shape(ctx, engine)),
            "history",
        )
    else:
        history = draw(transcripts(min_turns=3, max_turns=8), "history")
    return draw(content_part_rows(history), "rows")


def surface_output(ctx, clause, level, variant, draw):
    """(history, output) of one drawn call of ``variant`` (compress or select_context), or None
    when there is nothing to judge (an exception on select_context: H1; None: H3; a non-list)."""
    engine = ctx.new_engine()
    history = row_inputs(ctx, engine, draw)
    if variant == "compress":
        out = compress_like_host(clause, level, engine, history)
    else:
        try:
            out = select_like_host(clause, level, engine, history)
        except ContractViolation:
            return None
    if not isinstance(out, list) or v1_problems(out):
        return None
    return history, out


def skip_without_select(ctx, variant):
    """Skip a select_context variant for an engine that keeps the ABC default (H2)."""
    if variant == "select_context" and not overrides_select_context(ctx.new_engine()):
        raise CheckSkipped(
            "engine keeps the ABC default select_context (returns None); the host never calls "
            "it (H2)"
        )


def check_surface_rows(ctx, clause, level, variant, problems_of, *, expected, context=""):
    """Draw calls of ``variant`` (:func:`surface_output`) and fail ``clause`` at ``level`` on
    the first problem ``problems_of(history, out)`` lists (a list of strings; the rest are
    counted); ``context`` is appended to the history/output sizes. Shared by V5 and P5."""
    skip_without_select(ctx, variant)

    def body(draw):
        got = surface_output(ctx, clause, level, variant, draw)
        if got is None:
            return
        history, out = got
        problems = problems_of(history, out)
        if problems:
            fail(
                clause,
                level,
                "compress() output" if variant == "compress" else "select_context() replacement",
                expected=expected,
                got=problems[0] + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""),
                context=f"history of {len(history)} messages, output of {len(out)}{context}",
            )

    ctx.examples(body)


@check(
    "V5",
    "known-message-keys",
    level=SHOULD,
    variants=SURFACES,
    title="output and replacement rows carry only message keys the host knows",
    examples=4,
)
def check_v5_known_message_keys(ctx, variant):
    """V5 (SHOULD): every top-level key of a returned row is one the host knows
    (:data:`~conformance.authoring.expect.KNOWN_MESSAGE_KEYS`, or ``_``-prefixed, which the host
    strips) or
    one the input rows carried; an engine's own fields (``raw``, ``dag_node``, a store record)
    would ride into the provider request."""
    check_surface_rows(
        ctx,
        "V5",
        SHOULD,
        variant,
        unknown_key_problems,
        expected=_EXPECT["V5"],
        context="; the provider sees unknown keys (a strict provider rejects them)",
    )
