"""Checks of contract section V: compress() output and select_context() replacements are
valid OpenAI-format message sequences (V1-V4).

Each clause is checked on both surfaces (variants ``compress`` and ``select_context``).
On compress() output they are MUST. On select_context() replacements they are SHOULD:
the seeds only require a non-empty list of dicts there, which the host then sends through
its sanitizers (docs/contract-notes.md, 2.7).
Histories are drawn with Hypothesis; half of them cross the engine's threshold so the
engine really compacts.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.checks.engine_calls import (
    compress_like_host,
    overrides_select_context,
    select_like_host,
    threshold_of,
)
from conformance.errors import CheckSkipped, ContractViolation
from conformance.expect import (
    MUST,
    SHOULD,
    fail,
    v1_problems,
    v2_problems,
    v3_problems,
    v4_problems,
)
from conformance.probes import long_history
from conformance.registry import check
from conformance.strategies import transcripts

SURFACES = ("compress", "select_context")
LEVELS = {"select_context": SHOULD}


def level_of(variant):
    """MUST on compress() output, SHOULD on select_context() replacements."""
    return LEVELS.get(variant, MUST)


def _outputs(ctx, clause, variant, validate):
    """Draw histories, run the surface, and call ``validate(history, output)`` on real outputs.

    An exception from select_context() is not a V finding: the host fails open (H1 reports it).
    """
    probe = ctx.new_engine()
    if variant == "select_context" and not overrides_select_context(probe):
        raise CheckSkipped(
            "engine keeps the ABC default select_context "
            "(returns None); the host never calls it (H2)"
        )

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        over = draw(st.booleans(), "over_threshold")
        history = draw(transcripts(min_tokens=threshold + 500 if over else 0), "history")
        if variant == "compress":
            out = compress_like_host(clause, MUST, engine, history)
        else:
            try:
                out = select_like_host(clause, SHOULD, engine, history)
            except ContractViolation:
                return  # raised: fail-open, reported under H1
            if out is None:
                return  # "no change": H3
        if not isinstance(out, list):
            return  # A4 (compress) or O9 (select_context) reports a non-list
        validate(history, out)

    # one long history first: a rule broken only past N messages shows at any budget
    ctx.examples(body, first={"over_threshold": True, "history": long_history()})


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
    _outputs(ctx, "V2", variant, _after_v1("V2", variant, lambda h, out: v2_problems(out)))


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
    _outputs(ctx, "V4", variant, _after_v1("V4", variant, v4_problems))
