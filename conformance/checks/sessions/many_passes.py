"""Session invariants judged across calls: A10 (a summarised fact survives the next compaction),
A11 (the summary stays bounded over many passes), H5 (turn dicts untouched at a later call), O7
(preflight does not read image bytes as text), U6 (a summary takes no summarised row's uid)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import MUST, SHOULD, fail, short
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    IMAGE_KB,
    _stamp_uids,
    compactable_histories,
    grow_history,
    image_data_url,
    text_from_seed,
    transcripts,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    threshold_of,
    turn_complete_like_host,
    usage,
)
from conformance.checks.sessions.rows import (
    PASSES,
    compacted,
    compacting_engine,
    flat_text,
    kept_pairs,
    new_rows,
    normalised,
    where,
    wire_key,
)
from conformance.clauses.errors import CheckSkipped
from simulator.provider.tokens import count_messages

# --- A10 / A11: many compactions ----------------------------------------------------------------


def _sessions(ctx, clause: str, level: str, judge) -> None:
    """Draw a compactable history with a planted fact, then compact it up to :data:`PASSES`
    times (the history grows back over the threshold between passes) and call
    ``judge(pass_no, history, out, state)`` after each pass; a judge returning True ends the
    session early (its rule is settled). A pass the engine declines (its output is its input)
    is tried once more on a history grown by half the threshold; a second decline in a row
    ends the session."""
    engine0, threshold = compacting_engine(ctx, clause, level)

    def body(draw):
        engine = ctx.new_engine()
        seed = draw(st.integers(0, 2**20), "passes.seed")
        fact = f"FACT-{seed:06x}"
        history = draw(
            compactable_histories(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        at = next(  # after the first plain assistant reply: in the middle, alternating
            i + 1
            for i, m in enumerate(history)
            if m.get("role") == "assistant" and not m.get("tool_calls")
        )
        history[at:at] = [
            {"role": "user", "content": f"Remember for later: the staging key is {fact}."},
            {"role": "assistant", "content": f"Noted: the staging key is {fact}."},
        ]
        state: dict[str, Any] = {"fact": fact, "threshold": threshold, "window": ctx.window}
        declined = False
        for k in range(1, PASSES + 1):
            out = compacted(clause, level, engine, history)
            if out is None:
                return  # invalid: A4 / V report it
            if out == history:
                # Declined: a middle of a few short rows gains nothing (A9), so an engine may
                # keep the history. Once more after new turns give it a middle worth compacting;
                # declined twice in a row, the session ends.
                if declined:
                    return
                declined = True
                more = count_messages(history) + threshold // 2
                history = grow_history(history, more, seed + 97 * k)
                continue
            declined = False
            if judge(k, history, out, state):
                return
            history = grow_history(out, threshold + 500, seed + 97 * k)

    ctx.examples(body)


@check(
    "A10",
    "summary-survives-next-compaction",
    level=SHOULD,
    title="a fact the engine put in its summary is still there after the next compaction",
    examples=2,
)
def check_a10_summary_survives_next_compaction(ctx):
    """A10 (SHOULD): a fact planted early is followed over up to twelve passes; once the
    engine's own new rows (its summary) hold it, the output of the next compaction holds it
    somewhere (later ones may let it go: a bounded summary must drop something, A11). An
    engine that declares ``compressor`` is judged by B6 (later compactions update the previous
    summary), the built-in's stricter form of the same rule: one fault, one finding."""
    if "compressor" in (getattr(ctx, "capabilities", None) or ()):
        raise CheckSkipped(
            "the engine declares 'compressor': B6 judges how its summaries carry earlier ones"
        )

    def judge(k, history, out, state):
        fact = state["fact"]
        if "since" not in state:
            if any(fact in json.dumps(o, ensure_ascii=False) for o in new_rows(history, out)):
                state["since"] = k
            return False
        if fact in json.dumps(out, ensure_ascii=False):
            return True
        fail(
            "A10",
            SHOULD,
            f"compaction {k} of one session",
            expected=f"the fact {fact!r} the engine's summary held after compaction "
            f"{state['since']} still somewhere in the output",
            got="it is gone (the previous summary was dropped, not folded into the next)",
            context=where(history, out),
        )

    _sessions(ctx, "A10", SHOULD, judge)


@check(
    "A11",
    "summary-bounded",
    level=SHOULD,
    title="the summary stays bounded over many compactions",
    examples=2,
)
def check_a11_summary_bounded(ctx):
    """A11 (SHOULD): over twelve passes, the tokens of the rows each pass adds (its summary)
    stay under max(2 x the largest of the first three passes, 5 % of the window)."""

    def judge(k, history, out, state):
        tokens = count_messages(new_rows(history, out))
        sizes = state.setdefault("sizes", [])
        sizes.append(tokens)
        if k <= 3:
            return False
        bound = max(2 * max(sizes[:3]), int(0.05 * state["window"]))
        if tokens > bound:
            fail(
                "A11",
                SHOULD,
                f"the summary written by compaction {k} of one session",
                expected=f"at most {bound} tokens (2 x the largest of compactions 1-3, or 5 % "
                "of the window)",
                got=f"{tokens} tokens (per compaction: {sizes})",
                context=where(history, out),
            )
        return False

    _sessions(ctx, "A11", SHOULD, judge)


# --- H5 across calls ----------------------------------------------------------------------------


@check(
    "H5",
    "turn-dicts-untouched-later",
    level=MUST,
    title="dicts on_turn_complete() got are not edited at a later engine call",
    examples=6,
)
def check_h5_turn_dicts_untouched_later(ctx):
    """H5 (MUST): the host's dicts handed to on_turn_complete() for turn 1 stay as they were
    through the next calls (should_compress, compress, select_context, on_turn_complete of
    turn 2, on_session_end): an engine that keeps them and edits them later edits the host's
    transcript."""
    engine = ctx.new_engine()
    if not overrides(engine, "on_turn_complete"):
        raise CheckSkipped("engine keeps the ABC default on_turn_complete; the host never calls it")

    def body(draw):
        engine = ctx.new_engine()
        history = draw(transcripts(max_turns=4), "history")
        host = copy.deepcopy(history)
        snapshot = copy.deepcopy(host)
        seed = draw(st.integers(0, 2**20), "later.seed")
        later = grow_history(host, threshold_of(engine, ctx.window // 2) + 500, seed)[len(host) :]
        host2 = host + later

        def turn(msgs, tid):
            fail_open(
                turn_complete_like_host,
                "H5",
                MUST,
                engine,
                list(msgs),
                usage(count_messages(msgs)),
                turn_id=tid,
                interrupted=False,
                failed=False,
                turn_exit_reason="completed",
            )

        steps = [
            ("on_turn_complete() of turn 1", lambda: turn(host, "t1")),
            ("should_compress()", lambda: fail_open(engine.should_compress, 10**6)),
            ("compress()", lambda: fail_open(compress_like_host, "H5", MUST, engine, host2)),
            ("on_turn_complete() of turn 2", lambda: turn(host2, "t2")),
            ("select_context()", lambda: fail_open(select_like_host, "H5", MUST, engine, host2)),
            ("on_turn_complete() of turn 3", lambda: turn(host2, "t3")),
            (
                "on_session_end()",
                lambda: fail_open(engine.on_session_end, "s1", copy.deepcopy(host2)),
            ),
        ]
        for name, call in steps:
            call()
            for i, (now, was) in enumerate(zip(host, snapshot, strict=True)):
                if now != was and name != steps[0][0]:
                    keys = sorted(k for k in set(now) | set(was) if now.get(k) != was.get(k))
                    fail(
                        "H5",
                        MUST,
                        f"the host's message {i} ({was.get('role')}) handed to on_turn_complete()"
                        " of turn 1",
                        expected="left unchanged by every later call (the engine got the host's "
                        "own dicts)",
                        got=f"keys {', '.join(map(str, keys))} changed during {name}",
                    )
            if name == steps[0][0] and host != snapshot:
                return  # edited within the call: the H5 turn-complete-does-not-mutate finding

    ctx.examples(body)


# --- O7: images are not text --------------------------------------------------------------------


@check(
    "O7",
    "preflight-images-not-text",
    level=SHOULD,
    title="should_compress_preflight() does not count a screenshot's base64 bytes as text",
    examples=4,
)
def check_o7_preflight_images_not_text(ctx):
    """O7 (SHOULD): a short chat (far under the threshold) whose user pasted a screenshot as a
    base64 data URL of 120-600 KB: the estimate answers False (an image costs a flat charge,
    85 tokens here, or its tile count: never its bytes as text)."""
    engine = ctx.new_engine()
    if not overrides(engine, "should_compress_preflight"):
        raise CheckSkipped("engine keeps the ABC default should_compress_preflight (False)")

    def body(draw):
        engine = ctx.new_engine()
        seed = draw(st.integers(0, 2**20), "chat.seed")
        kb = draw(st.sampled_from(IMAGE_KB), "image.kb")
        chat = [{"role": "system", "content": "You are a helpful assistant."}]
        for k in range(draw(st.integers(0, 3), "chat.exchanges")):
            chat += [
                {"role": "user", "content": text_from_seed(seed + k, "en_US", 2)},
                {"role": "assistant", "content": text_from_seed(seed + k + 50, "en_US", 3)},
            ]
        chat.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is wrong in this screenshot?"},
                    {"type": "image_url", "image_url": {"url": image_data_url(seed % 7, kb)}},
                ],
            }
        )
        _stamp_uids(chat, "all", seed)
        tokens = count_messages(chat)
        threshold = threshold_of(engine, ctx.window // 2)
        if tokens * 2 > threshold:
            return
        out = invoke("O7", SHOULD, engine, "should_compress_preflight", copy.deepcopy(chat))
        if out is True:
            fail(
                "O7",
                SHOULD,
                f"should_compress_preflight(<{len(chat)} messages, {tokens} tokens, one "
                f"{kb} KB screenshot>)",
                expected=f"False (far under threshold_tokens {threshold}: an image part is "
                "not text)",
                got="True (the base64 bytes read as text? the host would compact a short chat "
                "and lose the screenshot)",
            )

    ctx.examples(body)


# --- U6: a summary takes no summarised row's uid ------------------------------------------------


@check(
    "U6",
    "summary-uid-fresh",
    level=SHOULD,
    title="a summary row does not reuse the message_uid of a row it summarised",
    examples=6,
)
def check_u6_summary_uid_fresh(ctx):
    """U6 (SHOULD; docs/contract-notes.md 8.10): a row compress() wrote in place of several
    removed rows does not carry the uid of one of them (U7 would read it as a new version of
    that one message)."""
    engine0, threshold = compacting_engine(ctx, "U6", SHOULD)

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            compactable_histories(min_tokens=threshold + 500, **compactable_shape(ctx, engine0)),
            "history",
        )
        _stamp_uids(history, "all", draw(st.integers(0, 2**20), "uid_seed"))
        out = compacted("U6", SHOULD, engine, history)
        if out is None:
            return
        index = {m["message_uid"]: i for i, m in enumerate(history)}
        out_uids = {o.get("message_uid") for o in out if isinstance(o, dict)}
        kept = {j for _, j in kept_pairs(history, out)}
        for j, o in enumerate(out):
            i = index.get(o.get("message_uid")) if isinstance(o, dict) else None
            if i is None or j in kept or o.get("role") == "tool":
                continue
            # a neighbour of row i (before or after it, not the system prompt) is gone too: the
            # row stands for several removed rows, not for row i rewritten in place (U4) nor for
            # row i with the summary folded into it (its text still there, as in U5's merges)
            gone = [
                n
                for n in (i - 1, i + 1)
                if 0 <= n < len(history)
                and history[n].get("role") != "system"
                and history[n].get("message_uid") not in out_uids
            ]
            own = normalised(flat_text(history[i]))
            if (
                gone
                and wire_key(o) != wire_key(history[i])
                and not (own and own in normalised(flat_text(o)))
            ):
                fail(
                    "U6",
                    SHOULD,
                    f"output row {j} ({o.get('role')}, {short(flat_text(o)[:60], 70)})",
                    expected="a fresh message_uid (or none) on a row that stands for several "
                    "removed rows",
                    got=f"the message_uid of input message {i}, which it summarised (U7 reads "
                    "the summary as a new version of that message)",
                    context=where(history, out),
                )

    ctx.examples(body)
