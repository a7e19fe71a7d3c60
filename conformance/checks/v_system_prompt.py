"""Checks of contract section V, part 2: the system prompt over compactions (V4).

- V4 (MUST on compress(), SHOULD on select_context()) a long system prompt (2,000+ characters,
  a string or content parts, a unique token at its end) stays whole at the start of message 0
  over several compactions;
- V4 (SHOULD) on later compactions message 0 stays byte-identical when nothing it is built
  from changed, so the system prompt's cache survives (P3).

Part 1 (V1-V5 on drawn histories, V2's in-flight chains) is conformance/checks/v_messages.py.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    fail,
    v1_problems,
    v4_problems,
)
from conformance.authoring.hosts import skip_unless_system_sent
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    compactable_histories,
    grow_history,
    long_system_prompts,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    select_like_host,
    threshold_of,
)
from conformance.checks.v_messages import (
    LEVELS,
    NOTE_MARKER,
    SURFACES,
    level_of,
    skip_without_select,
)
from conformance.clauses.errors import ContractViolation


def _system_text(m) -> str:
    c = m.get("content") if isinstance(m, dict) else None
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return ""


@check(
    "V4",
    "whole-system-prompt-kept",
    level=MUST,
    variants=SURFACES,
    variant_levels=LEVELS,
    title="a long system prompt (2,000+ characters, a unique token at its end) stays whole at "
    "the start of message 0, over several compactions",
    examples=3,
)
def check_v4_whole_system_prompt_kept(ctx, variant):
    """V4: the whole original system prompt, not only its opening, is a prefix of message 0's
    text (a note may be appended): after each of 1-3 compactions with new turns in between
    (compress), and in a replacement (select_context)."""
    skip_without_select(ctx, variant)
    if variant == "compress":
        skip_unless_system_sent(ctx, "compress", "V4")

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        system = draw(long_system_prompts(), "system_prompt")
        history = draw(
            compactable_histories(
                min_tokens=threshold + 1_000, system_prompt=system, **compactable_shape(ctx, engine)
            ),
            "history",
        )
        original = history[0]
        rounds = 1 if variant == "select_context" else draw(st.integers(1, 3), "compactions")
        for n in range(1, rounds + 1):
            if variant == "compress":
                out = compress_like_host("V4", MUST, engine, history)
            else:
                try:
                    out = select_like_host("V4", SHOULD, engine, history)
                except ContractViolation:
                    return  # fail-open, H1
            if not isinstance(out, list) or v1_problems(out):
                return  # None (H3), A4, O9, V1
            problems = v4_problems([original], out)
            if problems:
                text = _system_text(original)
                fail(
                    "V4",
                    level_of(variant),
                    f"message 0 after compaction {n}"
                    if variant == "compress"
                    else "message 0 of the select_context() replacement",
                    expected=f"the whole system prompt ({len(text)} characters, ending "
                    f"{text[-24:]!r}) as the start of message 0",
                    got=problems[0],
                    context=f"history of {len(history)} messages, output of {len(out)}",
                )
            history = grow_history(out, threshold + 1_000, 7 + n)

    ctx.examples(body)


def _canonical(m) -> str:
    return json.dumps(m, sort_keys=True, ensure_ascii=False, default=repr)


@check(
    "V4",
    "system-prompt-stable",
    level=SHOULD,
    title="on later compactions message 0 stays byte-identical when nothing it is built from "
    "changed (the system prompt's cache survives, P3)",
    examples=3,
)
def check_v4_system_prompt_stable(ctx):
    """V4 (SHOULD): three compactions with new turns in between; once a compaction has compacted
    (and perhaps appended its note, B5), every later compaction returns message 0 exactly as
    it got it (same JSON), so the provider's cache of the system prompt keeps hitting (P3). For
    ``compressor`` engines a note appended again is left to B5-note-added-once."""
    skip_unless_system_sent(ctx, "compress", "V4")

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        long = draw(st.booleans(), "long_system_prompt")
        system = draw(long_system_prompts(), "system_prompt") if long else None
        history = draw(
            compactable_histories(
                min_tokens=threshold + 1_000, system_prompt=system, **compactable_shape(ctx, engine)
            ),
            "history",
        )
        compacted = False
        for n in range(1, 4):
            out = compress_like_host("V4", SHOULD, engine, history)
            if not isinstance(out, list) or v1_problems(out) or not out:
                return  # A4 / V1
            if compacted and out != history and history[0].get("role") == "system":
                was, now = _canonical(history[0]), _canonical(out[0])
                renoted = "compressor" in ctx.capabilities and _system_text(out[0]).count(
                    NOTE_MARKER
                ) > _system_text(history[0]).count(NOTE_MARKER)
                if was != now and not renoted:  # a repeated compaction note is B5's finding
                    at = next(
                        (i for i, (a, b) in enumerate(zip(was, now, strict=False)) if a != b),
                        min(len(was), len(now)),
                    )
                    fail(
                        "V4",
                        SHOULD,
                        f"message 0 after compaction {n}",
                        expected="message 0 byte-identical to the one compaction "
                        f"{n - 1} left (nothing it is built from changed; P3: a rewritten "
                        "system prompt loses its prompt cache at every compaction)",
                        got=f"a rewritten message 0 ({len(was)} -> {len(now)} JSON characters; "
                        f"from character {at}: {was[at : at + 40]!r} became "
                        f"{now[at : at + 40]!r})",
                    )
            compacted = compacted or out != history
            history = grow_history(out, threshold + 1_000, 11 + n)

    ctx.examples(body)
