"""Checks of contract section A, part 1: the required surface (A1-A7: name, counters, return
types, the sentinel). Part 2, what a compaction achieves (A3-A5), is
conformance/checks/a_compaction.py."""

from __future__ import annotations

import inspect
import re

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    declined,
    fail,
    not_an_int,
    short,
    v1_problems,
)
from conformance.authoring.probes import content_shapes_history
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    compactable_histories,
    transcripts,
    usage_dicts,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_keeping_snapshot,
    compress_like_host,
    invoke,
    threshold_of,
    usage,
)
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
