"""Checks of contract section A, part 2: what a compaction achieves (A3-A5).

- A4 the output fits the budget when the protected parts allow it, and a failed summary is
  never silent (a stand-in says what was dropped);
- A5 the focus topic of a manual compaction survives in the summary;
- A3 should_compress() answers for the current threshold after a model switch.

Part 1 (the required surface: names, counters, return types, A1-A7) is
conformance/checks/a_surface.py.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    declined,
    fail,
    removed_and_new,
    row_key,
    short,
    v1_problems,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    compactable_histories,
    filler_block,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_keeping_snapshot,
    compress_like_host,
    head_size,
    invoke,
    skip_unless_compacts,
    tail_size,
    threshold_of,
    update_model_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped
from simulator.provider.tokens import count_messages

FOCUS_TOPIC = "database migration"


FOCUS_FACT = "the database migration codename is QUARTZ-HERON-417 for the Friday window."


FOCUS_TOKEN = "QUARTZ-HERON-417"


@check(
    "A4",
    "fits-budget-when-possible",
    level=SHOULD,
    practice="kit",
    title="after compress() the history is below "
    "threshold_tokens when the protected parts allow it",
    examples=5,
)
def check_a4_fits_budget_when_possible(ctx):
    """A4 (SHOULD, kit practice): a history over the threshold whose bulk sits in the middle
    (short head, short messages at the end) is brought below ``threshold_tokens``, counted
    with the simulator's cl100k count, when the engine compacts it. Engines that never compact
    skip (no clause asks an engine to compact), and a pass that removes no row is a decline,
    legal everywhere (an engine whose own settings, a fresh tail or a leaf size, protect more
    than the kit can see)."""
    skip_unless_compacts(ctx, "A4", SHOULD)

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        # 11 short messages at least: engines commonly keep the last 8 or so verbatim
        history = draw(
            compactable_histories(
                min_tokens=threshold + 1_000,
                head=head_size(ctx, engine),
                small_tail=max(tail_size(ctx, engine), 11),
            ),
            "history",
        )
        if (
            ctx.exposes(engine, "protect_first_n", "protect_last_n")
            and len(history) <= int(engine.protect_first_n) + int(engine.protect_last_n) + 1
        ):
            return  # everything is protected: the budget cannot be met
        snapshot, out = compress_keeping_snapshot("A4", SHOULD, engine, history)
        if declined(snapshot, out):
            return  # a declined pass (its own policy: a fresh tail, a leaf size) is legal (A4)
        if isinstance(out, list) and not v1_problems(out):
            tokens = count_messages(out)
            if tokens >= threshold:
                fail(
                    "A4",
                    SHOULD,
                    f"tokens after compress() of {len(history)} "
                    f"messages ({count_messages(history)} tokens)",
                    expected=f"< threshold_tokens {threshold} (the protected parts are small here)",
                    got=f"{tokens} tokens in {len(out)} messages",
                    context="kit practice; not in seeds",
                )

    ctx.examples(body)


@check(
    "A5",
    "focus-topic-kept",
    level=SHOULD,
    requires=("focus",),
    title="a fact about the focus topic, planted deep inside a long message in the "
    "compressible middle, survives compress(focus_topic)",
    examples=3,
)
def check_a5_focus_topic_kept(ctx):
    """A5 (SHOULD, engines declaring ``focus``): with ``focus_topic``, the planted fact's
    codename is still in the compressed output. The fact sits 400 to 3,000 characters into one
    long user or assistant message, so a summary that keeps each message's opening (and not the
    topic) loses it."""

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        history = draw(
            compactable_histories(
                min_tokens=threshold + 1_000,
                focus_fact=FOCUS_FACT,
                **compactable_shape(ctx, engine),
            ),
            "history",
        )
        out = compress_like_host("A5", SHOULD, engine, history, focus_topic=FOCUS_TOPIC, force=True)
        if isinstance(out, list) and out != history and FOCUS_TOKEN not in short(out, 10**7):
            fail(
                "A5",
                SHOULD,
                f"compress(focus_topic={FOCUS_TOPIC!r}) output",
                expected=f"to keep the planted fact {FOCUS_TOKEN!r} about the focus topic",
                got=f"{len(out)} messages without it",
            )

    ctx.examples(body)


def _has_text(m: Any) -> bool:
    return bool(row_key(m)[1].strip()) if isinstance(m, dict) and m.get("role") != "tool" else False


#: A line that only labels what follows: ``[Summary of earlier turns]``, ``## Summary``,
#: ``Earlier conversation:``.
_LABEL_LINE = re.compile(r"^\s*(\[[^\]]*\]|#+(\s.*)?|[^.!?]{0,60}:)\s*$")


def _stands_in(m: Any) -> bool:
    """A4: ``m`` says something about what it replaces: besides lines that only label it, at
    least three words (a summary, or a stand-in saying what was removed and why)."""
    if not _has_text(m):
        return False
    body = [ln for ln in row_key(m)[1].splitlines() if not _LABEL_LINE.match(ln)]
    return len(re.findall(r"\w+", " ".join(body))) >= 3


@check(
    "A4",
    "summary-failure-not-silent",
    level=MUST,
    practice="host",
    title="when the engine's summariser fails (context too small, 5xx, timeout, empty reply) "
    "compress() declines or puts a stand-in where the removed messages were",
    examples=8,
)
def check_a4_summary_failure_not_silent(ctx):
    """A4 (host practice: Hermes main replaced seed 002's "the middle is dropped with no
    summary"): with the engine's summariser failing (:mod:`conformance.checks.summary_faults`:
    the host's LLM for engines that call ``call_llm``, the ``summarise`` seam otherwise; a
    drawn kind, from a drawn call on), compress() of a history over the threshold either
    removes no input row (it declined: the same list back, the host's no-op signal) or puts
    at least one new message with text in the output for the rows it removed. Head + tail
    with nothing for the middle fails."""
    from conformance.checks.summary_faults import KINDS, failing_summariser, seam_of

    probe = ctx.new_engine()
    threshold = threshold_of(probe, ctx.window // 2)
    shape = compactable_shape(ctx, probe)
    sample = [{"role": "system", "content": "You are terse."}] + [
        m for k in range(6) for m in filler_block(3, 400 + threshold, k)
    ]
    seam = seam_of(ctx, probe, sample, "A4", MUST)
    if not seam:
        raise CheckSkipped(
            "the engine's summariser cannot be made to fail: its compress() made no "
            "agent.auxiliary_client.call_llm call and it has no callable 'summarise' attribute "
            "(docs/write-your-own-engine.md: the two seams)"
        )

    def body(draw):
        engine = ctx.new_engine()
        history = draw(compactable_histories(min_tokens=threshold + 1_000, **shape), "history")
        kind = draw(st.sampled_from(KINDS), "failure")
        first = draw(st.integers(0, 2), "first_failing_call")
        with failing_summariser(engine, seam, kind, first):
            out = compress_like_host("A4", MUST, engine, history)
        if not isinstance(out, list) or v1_problems(out):
            return  # A4's list check and V1 report it
        removed, new = removed_and_new(history, out)
        if removed and not any(_stands_in(out[i]) for i in new):
            labels = [short(row_key(out[i])[1], 60) for i in new if _has_text(out[i])]
            fail(
                "A4",
                MUST,
                f"compress() output while the summariser failed ({kind}, from call {first + 1} "
                f"on, through the {'host LLM' if seam == 'llm' else 'summarise seam'})",
                expected="the input back (declined: nothing dropped) or a stand-in message "
                "where the removed messages were",
                got=f"{removed} of {len(history)} messages removed with "
                + (
                    f"only a heading in their place ({labels[0]}: nothing else)"
                    if labels
                    else f"nothing in their place ({len(out)} messages: head + tail)"
                ),
                context="seed 002 drops the middle with no summary; Hermes main replaced it",
            )

    ctx.examples(body)


#: A3's model switches: (first window, second window), in tokens; each pair differs enough
#: that a trigger kept from the first model is on the wrong side of the new threshold.
WINDOW_PAIRS = (
    (1_000_000, 131_072),
    (200_000, 32_000),
    (32_000, 200_000),
    (128_000, 400_000),
    (400_000, 64_000),
)


@check(
    "A3",
    "answers-for-current-threshold",
    level=MUST,
    title="after a model switch should_compress() answers for the new threshold_tokens: for "
    "its prompt_tokens argument when given, for the last usage when not",
    examples=6,
)
def check_a3_answers_for_current_threshold(ctx):
    """A3: ``update_model(first)``, ``update_model(second)`` (a switch), then with T the engine's
    new ``threshold_tokens`` and d = T/5 (a drawn share of it): ``should_compress(T + d)`` is
    True and ``should_compress(T - d)`` False, each against a last usage on the other side (the
    argument, the host's pre-call estimate, wins), and without the argument the last usage
    decides the same way. Engines that never compact skip."""
    skip_unless_compacts(ctx, "A3", MUST)

    def body(draw):
        first, second = draw(st.sampled_from(WINDOW_PAIRS), "windows")
        share = draw(st.sampled_from([5, 10, 20]), "margin_percent")
        engine = ctx.new_engine(configure=False)
        update_model_like_host("A3", MUST, engine, "sim-big", first)
        update_model_like_host("A3", MUST, engine, "sim-small", second)
        t = threshold_of(engine, 0)
        if not 0 < t <= second:
            return  # O4 reports a threshold outside the new window
        d = max(1, t * share // 100)
        above, below = t + d, max(0, t - d)
        where = f"after update_model({first}) then update_model({second}): threshold_tokens {t}"
        for arg, last, want in ((above, below, True), (below, above, False)):
            invoke("A3", MUST, engine, "update_from_response", usage(last))
            got = invoke("A3", MUST, engine, "should_compress", arg)
            if got is not want:
                fail(
                    "A3",
                    MUST,
                    f"should_compress({arg}) with the last usage at {last} tokens",
                    expected=f"{want} ({arg} is {'over' if want else 'under'} the new threshold; "
                    "the argument is the host's estimate and wins over the last usage)",
                    got=repr(got),
                    context=where,
                )
        for last, want in ((above, True), (below, False)):
            invoke("A3", MUST, engine, "update_from_response", usage(last))
            got = invoke("A3", MUST, engine, "should_compress")
            if got is not want:
                fail(
                    "A3",
                    MUST,
                    f"should_compress() with the last usage at {last} tokens",
                    expected=f"{want} ({last} is {'over' if want else 'under'} the new threshold)",
                    got=repr(got),
                    context=where,
                )

    ctx.examples(body)
