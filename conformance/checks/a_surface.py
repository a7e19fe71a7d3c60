"""Checks of contract section A: the required surface (A1-A7)."""

from __future__ import annotations

import inspect
import re
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    declined,
    fail,
    not_an_int,
    removed_and_new,
    row_key,
    short,
    v1_problems,
)
from conformance.authoring.probes import content_shapes_history
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    compactable_histories,
    filler_block,
    transcripts,
    usage_dicts,
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

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
INT_ATTRIBUTES = (
    "last_prompt_tokens",
    "last_completion_tokens",
    "last_total_tokens",
    "threshold_tokens",
    "context_length",
    "compression_count",
)
FOCUS_TOPIC = "database migration"
FOCUS_FACT = "the database migration codename is QUARTZ-HERON-417 for the Friday window."
FOCUS_TOKEN = "QUARTZ-HERON-417"


@check(
    "A1", "name-is-short-identifier", level=MUST, title="engine.name is a short identifier string"
)
def check_a1_name_is_short_identifier(ctx):
    """A1: ``engine.name`` evaluates to a str of 1-64 characters ``[A-Za-z0-9_.-]``."""
    engine = ctx.new_engine(configure=False)
    value = invoke("A1", MUST, engine, "__getattribute__", "name")
    if not isinstance(value, str) or not NAME_RE.match(value):
        fail(
            "A1",
            MUST,
            "engine.name",
            expected="a short identifier string like 'lcm'",
            got=f"{type(value).__name__} "
            f"{short(value if isinstance(value, str) else repr(value), 80)}",
        )


@check(
    "A1",
    "name-is-property",
    level=SHOULD,
    title="name is declared as a property, as the ABC declares it",
)
def check_a1_name_is_property(ctx):
    """A1: ``name`` is a property on the class (Hermes also accepts a plain str attribute)."""
    engine = ctx.new_engine(configure=False)
    static = inspect.getattr_static(type(engine), "name", None)
    if not isinstance(static, property) and not isinstance(static, str):
        fail(
            "A1",
            SHOULD,
            f"{type(engine).__name__}.name",
            expected="a property (or at least a str attribute)",
            got=type(static).__name__,
        )
    if isinstance(static, str):
        fail(
            "A1",
            SHOULD,
            f"{type(engine).__name__}.name",
            expected="a property",
            got="a plain class attribute (works on Hermes, but the ABC declares a property)",
        )


@check(
    "A2",
    "usage-updates-counters",
    level=MUST,
    title="update_from_response(usage) sets last_prompt/completion/total_tokens",
)
def check_a2_usage_updates_counters(ctx):
    """A2: after ``update_from_response(usage)`` the three ``last_*`` ints equal the usage values,
    whether or not the optional usage keys are present (host practice)."""

    def body(draw):
        u = draw(usage_dicts(), "usage")
        engine = ctx.new_engine()
        invoke("A2", MUST, engine, "update_from_response", dict(u))
        for attr, key in (
            ("last_prompt_tokens", "prompt_tokens"),
            ("last_completion_tokens", "completion_tokens"),
            ("last_total_tokens", "total_tokens"),
        ):
            got = getattr(engine, attr, None)
            if got != u[key]:
                fail(
                    "A2",
                    MUST,
                    f"engine.{attr} after update_from_response({short(u, 120)})",
                    expected=str(u[key]),
                    got=short(got),
                )

    ctx.examples(body)


@check(
    "A3",
    "should-compress-returns-bool",
    level=MUST,
    title="should_compress(prompt_tokens) returns a bool",
)
def check_a3_should_compress_returns_bool(ctx):
    """A3: ``should_compress(None | 0 | around threshold | huge)`` returns True or False."""

    def body(draw):
        choice = draw(
            st.sampled_from(["none", "zero", "below", "at", "above", "huge"]), "prompt_tokens"
        )
        engine = ctx.new_engine()
        threshold = threshold_of(engine, 0)
        arg = {
            "none": None,
            "zero": 0,
            "below": max(threshold - 1, 0),
            "at": threshold,
            "above": threshold + 1,
            "huge": 10_000_000,
        }[choice]
        out = (
            invoke("A3", MUST, engine, "should_compress", arg)
            if arg is not None
            else invoke("A3", MUST, engine, "should_compress")
        )
        if not isinstance(out, bool):
            fail(
                "A3",
                MUST,
                f"should_compress({arg!r})",
                expected="a bool",
                got=f"{type(out).__name__} {short(out, 60)}",
            )

    ctx.examples(body)


@check(
    "A4", "compress-returns-list", level=MUST, title="compress() returns a list of message dicts"
)
def check_a4_compress_returns_list(ctx):
    """A4: ``compress(messages, <accepted optional args>)`` returns a list (validity is V1-V4)."""

    def body(draw):
        history = draw(transcripts(), "history")
        engine = ctx.new_engine()
        out = compress_like_host("A4", MUST, engine, history)
        if not isinstance(out, list):
            fail(
                "A4",
                MUST,
                f"compress() on a history of {len(history)} messages",
                expected="a list",
                got=type(out).__name__,
            )

    ctx.examples(body, first={"history": content_shapes_history()})


@check(
    "A4",
    "compress-one-message",
    level=MUST,
    title="the seeds' own smoke test: compress([user 'hello']) is a list of role dicts",
)
def check_a4_compress_one_message(ctx):
    """A4 (seeds' minimal test): ``compress([{"role": "user", "content": "hello"}])`` with no
    optional arguments returns a list whose items all have ``role``."""
    engine = ctx.new_engine()
    out = invoke("A4", MUST, engine, "compress", [{"role": "user", "content": "hello"}])
    if not isinstance(out, list) or v1_problems(out):
        fail(
            "A4",
            MUST,
            "compress([{'role': 'user', 'content': 'hello'}])",
            expected="a list of dicts with a role",
            got=short(out, 120),
        )


@check(
    "A4",
    "returns-new-list",
    level=MUST,
    title="a compaction comes back as a new list, not as the input list edited in place (the "
    "host reads the same object as 'nothing to do')",
    examples=3,
)
def check_a4_returns_new_list(ctx):
    """A4: compress() on a history over the threshold; when the output is the very list object
    compress() was handed and holds fewer messages or tokens than the history did
    (``messages[:] = out; return messages``), the host sees its no-op signal (same object),
    discards the pass, and the engine never compacts. Returning the input unchanged (a real
    no-op) is fine."""

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        history = draw(
            compactable_histories(min_tokens=threshold + 1_000, **compactable_shape(ctx, engine)),
            "history",
        )
        snapshot, out = compress_keeping_snapshot("A4", MUST, engine, history)
        if out is not snapshot or not isinstance(out, list):
            return
        before, after = count_messages(history), count_messages(out)
        if len(out) < len(history) or after < before:
            fail(
                "A4",
                MUST,
                f"compress() on {len(history)} messages ({before} tokens)",
                expected="a new list (the host treats the very list it passed as 'nothing to "
                "compact' and keeps the old history)",
                got=f"the input list itself, edited in place to {len(out)} messages ({after} "
                "tokens): the host discards this compaction, so the engine never compacts "
                "(return the new list instead of `messages[:] = out; return messages`)",
            )

    ctx.examples(body)


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


@check(
    "A6",
    "counters-are-ints",
    level=MUST,
    title="the six attributes the host reads are ints, before and after use",
)
def check_a6_counters_are_ints(ctx):
    """A6: ``last_*_tokens``, ``threshold_tokens``, ``context_length``, ``compression_count`` are
    ints."""

    def body(draw):
        history = draw(transcripts(max_turns=4), "history")
        u = draw(usage_dicts(), "usage")
        engine = ctx.new_engine()
        _check_ints(engine, "after update_model()")
        invoke("A6", MUST, engine, "update_from_response", dict(u))
        _check_ints(engine, "after update_from_response()")
        compress_like_host("A6", MUST, engine, history)
        _check_ints(engine, "after compress()")

    ctx.examples(body)


def _check_ints(engine, when):
    for attr in INT_ATTRIBUTES:
        value = getattr(engine, attr, None)
        if not isinstance(value, int) or isinstance(value, bool):
            fail(
                "A6",
                MUST,
                f"engine.{attr} {when}",
                expected="an int",
                got=f"{type(value).__name__} {short(value, 40)}",
                root_cause=not_an_int(attr, value),
            )


@check(
    "A6",
    "compression-count-increments",
    level=MUST,
    title="compression_count goes up when compress() changes the history",
)
def check_a6_compression_count_increments(ctx):
    """A6: a compress() that compacted (removed input rows) increments ``compression_count``;
    a pass that declined (removed nothing: the input back, or only old tool outputs
    cleared, as Hermes main's abort does) is no compaction, and A6's SHOULD rule judges
    whether it counts."""

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        history = draw(transcripts(min_turns=2, min_tokens=threshold + 500, system=True), "history")
        before = getattr(engine, "compression_count", 0)
        out = compress_like_host("A6", MUST, engine, history)
        after = getattr(engine, "compression_count", 0)
        changed = isinstance(out, list) and out != history and not declined(history, out)
        if changed and not (isinstance(after, int) and isinstance(before, int) and after > before):
            fail(
                "A6",
                MUST,
                "compression_count after a compress() that changed the history "
                f"({len(history)} -> {len(out)} messages, {count_messages(history)} tokens)",
                expected=f"> {before}",
                got=short(after),
            )

    ctx.examples(body)


@check(
    "A6",
    "compression-count-counts-every-call",
    level=SHOULD,
    title="compression_count counts every compress() call (seeds)",
)
def check_a6_compression_count_counts_every_call(ctx):
    """A6 (seeds): ``compression_count`` is "how many times compress() has run": +1 per call,
    also when the pass returns its input unchanged. Hermes' own compressor does not count a
    no-op pass (host practice), hence SHOULD; see docs/contract-notes.md 1.1."""

    def body(draw):
        history = draw(transcripts(max_turns=6), "history")
        engine = ctx.new_engine()
        before = getattr(engine, "compression_count", 0)
        compress_like_host("A6", SHOULD, engine, history)
        after = getattr(engine, "compression_count", 0)
        if after != before + 1:
            fail(
                "A6",
                SHOULD,
                f"compression_count after one compress() call on {len(history)} messages",
                expected=f"{before + 1} (the seeds: how many times compress() has run)",
                got=short(after),
            )

    ctx.examples(body)


@check(
    "A7",
    "no-compress-on-sentinel",
    level=MUST,
    practice="host",
    title="with last_prompt_tokens == -1 (compression just ran) should_compress() is False and "
    "get_status() never shows a negative value",
    examples=3,
)
def check_a7_no_compress_on_sentinel(ctx):
    """A7 (host practice): right after a compaction the host sets ``last_prompt_tokens = -1``;
    ``should_compress()`` must then be False and ``get_status()['last_prompt_tokens']`` >= 0."""

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        history = draw(
            compactable_histories(min_tokens=threshold + 1_000, **compactable_shape(ctx, engine)),
            "history",
        )
        invoke("A7", MUST, engine, "update_from_response", usage(count_messages(history)))
        compress_like_host("A7", MUST, engine, history)
        engine.last_prompt_tokens = -1  # what the host does after a committed compaction
        wants = invoke("A7", MUST, engine, "should_compress")
        if wants:
            fail(
                "A7",
                MUST,
                "should_compress() right after a compaction (last_prompt_tokens == -1)",
                expected="False (no second compaction on the sentinel)",
                got=short(wants),
                host_practice=True,
            )
        status = invoke("A7", MUST, engine, "get_status")
        shown = status.get("last_prompt_tokens") if isinstance(status, dict) else None
        if isinstance(shown, (int, float)) and shown < 0:
            fail(
                "A7",
                MUST,
                "get_status()['last_prompt_tokens'] on the -1 sentinel",
                expected="0 (never negative)",
                got=short(shown),
                host_practice=True,
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
