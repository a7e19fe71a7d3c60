"""Checks of contract section A: the required surface (A1-A4, A6).

A5 (focus), A7 (sentinel) and the A3/A4 SHOULD parts join with the full check set.
"""

from __future__ import annotations

import copy
import inspect
import re

from hypothesis import given, strategies as st

from conformance.checks._drive import compress_like_host, invoke
from conformance.expect import MUST, SHOULD, fail, short
from conformance.registry import check
from conformance.strategies import transcripts, usage_dicts
from simulator.provider.tokens import count_messages

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
INT_ATTRIBUTES = ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens",
                  "threshold_tokens", "context_length", "compression_count")


@check("A1", "name-is-short-identifier", level=MUST,
       title="engine.name is a short identifier string")
def check_name_is_short_identifier(ctx):
    """A1: ``engine.name`` evaluates to a str of 1-64 characters ``[A-Za-z0-9_.-]``."""
    engine = ctx.new_engine(configure=False)
    value = invoke("A1", MUST, engine, "__getattribute__", "name")
    if not isinstance(value, str) or not NAME_RE.match(value):
        fail("A1", MUST, "engine.name", expected="a short identifier string like 'lcm'",
             got=f"{type(value).__name__} {short(value if isinstance(value, str) else repr(value), 80)}")


@check("A1", "name-is-property", level=SHOULD,
       title="name is declared as a property, as the ABC declares it")
def check_name_is_property(ctx):
    """A1: ``name`` is a property on the class (Hermes also accepts a plain str attribute)."""
    engine = ctx.new_engine(configure=False)
    static = inspect.getattr_static(type(engine), "name", None)
    if not isinstance(static, property) and not isinstance(static, str):
        fail("A1", SHOULD, f"{type(engine).__name__}.name", expected="a property (or at least a str attribute)",
             got=type(static).__name__)
    if isinstance(static, str):
        fail("A1", SHOULD, f"{type(engine).__name__}.name", expected="a property",
             got="a plain class attribute (works on Hermes, but the ABC declares a property)")


@check("A2", "usage-updates-counters", level=MUST,
       title="update_from_response(usage) sets last_prompt/completion/total_tokens")
def check_usage_updates_counters(ctx):
    """A2: after ``update_from_response(usage)`` the three ``last_*`` ints equal the usage values."""
    @ctx.settings()
    @given(usage=usage_dicts())
    def run(usage):
        engine = ctx.new_engine()
        invoke("A2", MUST, engine, "update_from_response", dict(usage), example={"usage": usage})
        for attr, key in (("last_prompt_tokens", "prompt_tokens"), ("last_completion_tokens", "completion_tokens"),
                          ("last_total_tokens", "total_tokens")):
            got = getattr(engine, attr, None)
            if got != usage[key]:
                fail("A2", MUST, f"engine.{attr} after update_from_response({short(usage, 120)})",
                     expected=str(usage[key]), got=short(got), example={"usage": usage})
    run()


@check("A3", "should-compress-returns-bool", level=MUST,
       title="should_compress(prompt_tokens) returns a bool")
def check_should_compress_returns_bool(ctx):
    """A3: ``should_compress(None | 0 | around threshold | huge)`` returns True or False."""
    @ctx.settings()
    @given(choice=st.sampled_from(["none", "zero", "below", "at", "above", "huge"]))
    def run(choice):
        engine = ctx.new_engine()
        threshold = int(getattr(engine, "threshold_tokens", 0) or 0)
        arg = {"none": None, "zero": 0, "below": max(threshold - 1, 0), "at": threshold,
               "above": threshold + 1, "huge": 10_000_000}[choice]
        out = invoke("A3", MUST, engine, "should_compress", arg) if arg is not None else invoke(
            "A3", MUST, engine, "should_compress")
        if not isinstance(out, bool):
            fail("A3", MUST, f"should_compress({arg!r})", expected="a bool", got=f"{type(out).__name__} {short(out, 60)}")
    run()


@check("A4", "compress-returns-list", level=MUST,
       title="compress() returns a list of message dicts")
def check_compress_returns_list(ctx):
    """A4: ``compress(messages, <accepted optional args>)`` returns a list (validity is V1-V4)."""
    @ctx.settings()
    @given(history=transcripts())
    def run(history):
        engine = ctx.new_engine()
        out = compress_like_host("A4", MUST, engine, history)
        if not isinstance(out, list):
            fail("A4", MUST, f"compress() on a history of {len(history)} messages", expected="a list",
                 got=type(out).__name__, example={"history": history})
    run()


@check("A6", "counters-are-ints", level=MUST,
       title="the six attributes the host reads are ints, before and after use")
def check_counters_are_ints(ctx):
    """A6: ``last_*_tokens``, ``threshold_tokens``, ``context_length``, ``compression_count`` are ints."""
    @ctx.settings()
    @given(history=transcripts(max_turns=4), usage=usage_dicts())
    def run(history, usage):
        engine = ctx.new_engine()
        _check_ints(engine, "after update_model()", {"history": history})
        invoke("A6", MUST, engine, "update_from_response", dict(usage))
        _check_ints(engine, "after update_from_response()", {"history": history, "usage": usage})
        compress_like_host("A6", MUST, engine, history)
        _check_ints(engine, "after compress()", {"history": history, "usage": usage})
    run()


def _check_ints(engine, when, example):
    for attr in INT_ATTRIBUTES:
        value = getattr(engine, attr, None)
        if not isinstance(value, int) or isinstance(value, bool):
            fail("A6", MUST, f"engine.{attr} {when}", expected="an int",
                 got=f"{type(value).__name__} {short(value, 40)}", example=example)


@check("A6", "compression-count-increments", level=MUST,
       title="compression_count goes up when compress() changes the history")
def check_compression_count_increments(ctx):
    """A6: a compress() whose output differs from its input increments ``compression_count``."""
    @ctx.settings()
    @given(data=st.data())
    def run(data):
        engine = ctx.new_engine()
        threshold = int(getattr(engine, "threshold_tokens", 0) or 0) or ctx.window // 2
        history = data.draw(transcripts(min_turns=2, min_tokens=threshold + 500, system=True), label="history")
        before = getattr(engine, "compression_count", 0)
        out = compress_like_host("A6", MUST, engine, history)
        after = getattr(engine, "compression_count", 0)
        changed = isinstance(out, list) and out != history
        if changed and not (isinstance(after, int) and isinstance(before, int) and after > before):
            fail("A6", MUST, "compression_count after a compress() that changed the history "
                 f"({len(history)} -> {len(out)} messages, {count_messages(history)} tokens)",
                 expected=f"> {before}", got=short(after), example={"history": history})
    run()


@check("A6", "compression-count-counts-every-call", level=SHOULD,
       title="compression_count counts every compress() call (seeds)")
def check_compression_count_counts_every_call(ctx):
    """A6 (seeds): ``compression_count`` is "how many times compress() has run": +1 per call,
    also when the pass returns its input unchanged. Hermes' own compressor does not count a
    no-op pass (host practice), hence SHOULD; see docs/contract-notes.md 1.1."""
    @ctx.settings()
    @given(history=transcripts(max_turns=6))
    def run(history):
        engine = ctx.new_engine()
        before = getattr(engine, "compression_count", 0)
        compress_like_host("A6", SHOULD, engine, history)
        after = getattr(engine, "compression_count", 0)
        if after != before + 1:
            fail("A6", SHOULD, f"compression_count after one compress() call on {len(history)} messages",
                 expected=f"{before + 1} (the seeds: how many times compress() has run)", got=short(after),
                 example={"history": history})
    run()
