"""Regression cases from public reports about repeated compactions (REG-h .. REG-j).

- REG-h (B5) a summary between head and tail never leaves two same-role messages adjacent;
- REG-i (B3, engines declaring 'head-decay') after a later compaction the first user message
  is gone and the system prompt stays;
- REG-j (A3) when compaction cannot help (protected messages hold the tokens), compress() is
  attempted at most 3 times.

REG-a .. REG-g are conformance/checks/reg_cases.py.
"""

from __future__ import annotations

from conformance.authoring.expect import (
    MUST,
    SHOULD,
    fail,
    short,
)
from conformance.authoring.registry import check
from conformance.authoring.strategies import blob_from_seed, filler_block
from conformance.checks.b_compressor import new_messages, text_of
from conformance.checks.engine_calls import (
    compress_like_host,
    invoke,
    tail_size,
    threshold_of,
    usage,
)
from simulator.provider.tokens import count_messages


def _reg_h(ctx, level):
    def body(draw):
        from hypothesis import strategies as st

        engine = ctx.new_engine()
        head_end = draw(st.sampled_from(["user", "assistant"]), "head_last_role")
        tail_start = draw(st.sampled_from(["user", "assistant"]), "tail_first_role")
        threshold = threshold_of(engine, ctx.window // 2)
        history = [{"role": "system", "content": "s"}, {"role": "user", "content": "first"}]
        if head_end == "assistant":
            history.append({"role": "assistant", "content": "first reply"})
        else:
            history.append({"role": "user", "content": "and another thing"})
        k = 0
        while count_messages(history) <= threshold + 1_000:
            history += filler_block(40, 3_000, k)
            k += 1
        # the tail's length and its last role are drawn too: an engine keeps a fixed number of
        # trailing messages, so which role meets the summary from the tail side depends on the
        # parity of what follows it; with one parity a summary role that only clashes for the
        # other (e.g. never merged into an assistant message) would never be seen
        end_role = draw(st.sampled_from(["user", "assistant"]), "tail_last_role")
        extra = draw(st.integers(0, 1), "tail_extra")
        roles = ["user", "assistant"] if tail_start == "user" else ["assistant", "user"]
        for i in range(tail_size(ctx, engine) + extra):
            history.append({"role": roles[i % 2], "content": f"tail {i}"})
        if history[-1]["role"] != end_role:
            history.append(
                {"role": end_role, "content": "last" if end_role == "user" else "last reply"}
            )
        out = compress_like_host("B5", level, engine, history)
        if not isinstance(out, list):
            return
        news = set(new_messages(history, out))
        for i in range(1, len(out)):
            a, b = out[i - 1], out[i]
            if not (isinstance(a, dict) and isinstance(b, dict)) or (
                i - 1 not in news and i not in news
            ):
                continue
            if (
                a.get("role") == b.get("role")
                and a.get("role") in ("user", "assistant")
                and not a.get("tool_calls")
                and not b.get("tool_calls")
            ):
                fail(
                    "B5",
                    level,
                    f"messages {i - 1} and {i} of the output",
                    expected="no two same-role messages touching around the summary",
                    got=f"two {a.get('role')} messages ({short(text_of(a), 40)} / "
                    f"{short(text_of(b), 40)})",
                    context=f"head ends on {head_end}, tail starts with {tail_start}, "
                    f"{len(history)} messages ending on {end_role}",
                )

    ctx.examples(body)


@check(
    "B5",
    "summary-role-alternates",
    reg="h",
    level=MUST,
    requires=("compressor",),
    variants=("compressor",),
    title="a summary between head and tail never leaves two same-role messages adjacent",
    examples=6,
)
@check(
    "B5",
    "summary-role-alternates",
    reg="h",
    level=SHOULD,
    excludes=("compressor",),
    variants=("other",),
    title="a summary between head and tail never leaves two same-role messages adjacent",
    examples=6,
)
def check_reg_h_summary_role_alternates(ctx, variant):
    """REG-h (B5): MUST for compressor engines (variant ``compressor``), SHOULD for the others."""
    _reg_h(ctx, MUST if variant == "compressor" else SHOULD)


@check(
    "B3",
    "head-decays",
    reg="i",
    level=MUST,
    requires=("compressor", "head-decay"),
    title="head decay (engines declaring 'head-decay'): after a later "
    "compaction the first user message is gone and the system prompt stays",
    examples=2,
)
def check_reg_i_head_decays(ctx):
    """REG-i (B3, head-decay engines; host practice against the seeds): compress twice with
    40 new turns in between; the first user message is not verbatim in the second output,
    the system prompt is (message 0, perhaps with the note)."""
    from conformance.checks.b_compressor import two_compactions

    def body(draw):
        engine, h1, out1, h2, out2 = two_compactions(ctx, "B3", draw)
        if out2 == h2:
            return
        first_user = next(m for m in h1 if m.get("role") == "user")
        if first_user in out2:
            fail(
                "B3",
                MUST,
                "the second compaction's output",
                expected="no verbatim first user message (head decay)",
                got="it is still there",
                host_practice=True,
            )
        if (
            not out2
            or out2[0].get("role") != "system"
            or not text_of(out2[0]).startswith(text_of(h1[0]))
        ):
            fail(
                "B3",
                MUST,
                "message 0 of the second compaction's output",
                expected="the system prompt",
                got=short(out2[0] if out2 else None, 80),
                host_practice=True,
            )

    ctx.examples(body)


@check(
    "A3",
    "stops-after-ineffective-compactions",
    reg="j",
    level=SHOULD,
    practice="host",
    title="when compaction cannot help (protected messages hold "
    "the tokens), compress() is attempted at most 3 times",
)
def check_reg_j_stops_after_ineffective_compactions(ctx):
    """REG-j (A3, SHOULD): system prompt and last user message hold 90% of a history over the
    threshold; 20 turns each add a one-word user message and reply. The host asks
    should_compress() every turn and compresses when True: at most 3 compress() calls."""
    engine = ctx.new_engine()
    threshold = threshold_of(engine, ctx.window // 2)
    history = [
        {"role": "system", "content": "Rules:\n" + blob_from_seed(5, threshold * 4)},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "Here is the file:\n" + blob_from_seed(6, threshold // 2)},
    ]
    attempts = 0
    for _ in range(20):
        tokens = count_messages(history)
        invoke("A3", SHOULD, engine, "update_from_response", usage(tokens))
        if invoke("A3", SHOULD, engine, "should_compress", tokens):
            attempts += 1
            out = compress_like_host("A3", SHOULD, engine, history)
            if isinstance(out, list):
                history = out
            engine.last_prompt_tokens = -1
        history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    if attempts > 3:
        fail(
            "A3",
            SHOULD,
            "compress() attempts over 20 turns where compaction cannot reduce the history",
            expected="at most 3 (stop asking after ineffective passes; Hermes stops after 2)",
            got=str(attempts),
            host_practice=True,
        )
