"""Checks of contract section B for engines declaring the ``compressor`` capability (B1-B6).

They follow the seeds (seed 002): the head (the first protect_first_n messages, the
system prompt included) is kept on every compaction; the tail keeps at least
protect_last_n messages, uncapped. Head decay (Hermes MAIN, host practice against the
seeds) is checked only for engines that also declare ``head-decay`` (REG-i). B7 is host
behaviour (gateway hygiene; host tests).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from conformance.authoring.expect import MUST, SHOULD, declined, fail, short
from conformance.authoring.registry import check
from conformance.authoring.strategies import (
    answered_asks,
    compactable_histories,
    filler_block,
    head_exchange,
    text_from_seed,
)
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    head_size,
    invoke,
    tail_size,
    threshold_of,
)
from conformance.clauses.errors import CheckSkipped

CAP = ("compressor",)
NOTE_MARKER = "[Note: Some earlier conversation turns have been compacted"
PRUNED = "[Old tool output cleared to save context space]"
TEMPLATE = (
    "Goal",
    "Constraints & Preferences",
    "Progress",
    "Done",
    "In Progress",
    "Blocked",
    "Key Decisions",
    "Relevant Files",
    "Next Steps",
    "Critical Context",
)
B1_WINDOW = 200_000


def text_of(m: Any) -> str:
    """The text of a message's content (str, or the text parts of a list)."""
    if not isinstance(m, dict):
        return ""
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return ""


def new_messages(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[int]:
    """Indexes of output messages that are not (by role and content) input messages."""
    seen = {(m.get("role"), text_of(m), bool(m.get("tool_calls"))) for m in before}
    return [
        i
        for i, m in enumerate(after)
        if isinstance(m, dict)
        and (m.get("role"), text_of(m), bool(m.get("tool_calls"))) not in seen
        and not (i == 0 and m.get("role") == "system")
    ]


def summary_index(before, after) -> int | None:
    """The new message that holds the summary (mentions Goal and Next Steps), if any."""
    for i in new_messages(before, after):
        t = text_of(after[i])
        if "Goal" in t and "Next Steps" in t:
            return i
    return None


def kept_tail(before, after) -> int:
    """How many trailing messages of ``after`` equal the trailing messages of ``before``, each
    compared as the host sends it (:func:`as_sent`)."""
    n = 0
    while n < min(len(before), len(after)) and as_sent(after[-1 - n]) == as_sent(before[-1 - n]):
        n += 1
    return n


def as_sent(message: Any) -> Any:
    """``message`` without its ``_``-prefixed keys: the engine's own bookkeeping (Hermes 0.22
    tags the rows it carries over with ``_compaction_tail``), which the host strips before the
    wire (V5, U9), so a row that differs only there is kept verbatim."""
    if not isinstance(message, dict):
        return message
    return {k: v for k, v in message.items() if not (isinstance(k, str) and k.startswith("_"))}


def grow(history: list[dict[str, Any]], turns: int, seed: int) -> list[dict[str, Any]]:
    """``history`` plus ``turns`` new user turns (short exchange, every third with a tool read)."""
    out = copy.deepcopy(history)
    for k in range(turns):
        if k % 3 == 0:
            out += filler_block(seed, 1_500, 500 + k)
        else:
            out += [
                {"role": "user", "content": text_from_seed(seed + k, "en_US", 1)},
                {"role": "assistant", "content": text_from_seed(seed + k + 1, "en_US", 1)},
            ]
    out.append({"role": "user", "content": "What is next?"})
    return out


def two_compactions(ctx, clause, draw):
    """(engine, history1, out1, history2, out2): compress, add 40 turns, compress again."""
    engine = ctx.new_engine()
    threshold = threshold_of(engine, ctx.window // 2)
    h1 = draw(
        compactable_histories(min_tokens=threshold + 1_000, **compactable_shape(ctx, engine)),
        "history",
    )
    out1 = compress_like_host(clause, MUST, engine, h1)
    if not isinstance(out1, list):
        raise CheckSkipped("compress() did not return a list (A4 reports it)")
    h2 = grow(out1, 40, 99)
    out2 = compress_like_host(clause, MUST, engine, h2)
    if not isinstance(out2, list):
        raise CheckSkipped("compress() did not return a list (A4 reports it)")
    return engine, h1, out1, h2, out2


@check(
    "B1",
    "documented-defaults",
    level=MUST,
    requires=CAP,
    title="threshold 0.50 of the window, protect_first_n 3, "
    "protect_last_n 20; compaction fires at the threshold",
)
def check_b1_documented_defaults(ctx):
    """B1: on a 200 000-token window, threshold_tokens == 100 000; should_compress(100 000) is True
    and should_compress(99 999) False; protect_first_n/protect_last_n (when exposed) are 3 and
    20."""
    engine = ctx.new_engine(window=B1_WINDOW)
    if engine.threshold_tokens != B1_WINDOW // 2:
        fail(
            "B1",
            MUST,
            f"threshold_tokens on a {B1_WINDOW}-token window",
            expected=str(B1_WINDOW // 2),
            got=short(engine.threshold_tokens),
        )
    for attr, want in (("protect_first_n", 3), ("protect_last_n", 20)):
        if ctx.exposes(engine, attr) and getattr(engine, attr) != want:
            fail(
                "B1", MUST, f"default {attr}", expected=str(want), got=short(getattr(engine, attr))
            )
    if not invoke("B1", MUST, engine, "should_compress", B1_WINDOW // 2):
        fail(
            "B1",
            MUST,
            f"should_compress({B1_WINDOW // 2}) at the threshold",
            expected="True (fires at >= threshold)",
            got="False",
        )
    if invoke("B1", MUST, engine, "should_compress", B1_WINDOW // 2 - 1):
        fail(
            "B1",
            MUST,
            f"should_compress({B1_WINDOW // 2 - 1}) below the threshold",
            expected="False",
            got="True",
        )


@check(
    "B2",
    "old-tool-output-cleared",
    level=MUST,
    requires=CAP,
    title="tool results over 200 chars outside the protected tail become the cleared placeholder",
    examples=3,
)
def check_b2_old_tool_output_cleared(ctx):
    """B2: in the output, a tool message before the verbatim tail holds at most 200 characters
    or exactly ``[Old tool output cleared to save context space]``."""

    def body(draw):
        engine = ctx.new_engine()
        threshold = threshold_of(engine, ctx.window // 2)
        seed = draw(ctx_seed(), "seed")
        # an assistant tool_calls message at row protect_first_n - 1 (seed reading: the head's last
        # row; Hermes' reading keeps its result at row protect_first_n too), so its 2,000-char
        # result is in the head under either reading, and outside the protected tail
        head = head_size(ctx, engine)
        lead = head_exchange(seed, head - 2) if head > 2 else []
        history = (
            [{"role": "system", "content": "You are terse."}]
            + lead
            + filler_block(seed, 2_000, 0)[1:]
        )
        history += draw(
            compactable_histories(
                min_tokens=threshold + 1_000,
                head=1,
                small_tail=tail_size(ctx, engine),
                system=False,
            ),
            "rest",
        )
        out = compress_like_host("B2", MUST, engine, history)
        if not isinstance(out, list):
            return
        tail = kept_tail(history, out)
        for i, m in enumerate(out[: len(out) - tail]):
            if (
                isinstance(m, dict)
                and m.get("role") == "tool"
                and len(text_of(m)) > 200
                and text_of(m) != PRUNED
            ):
                fail(
                    "B2",
                    MUST,
                    f"tool message {i} of the output (outside the protected tail of {tail})",
                    expected=f"{PRUNED!r} (it holds more than 200 characters)",
                    got=f"{len(text_of(m))} characters kept",
                )

    ctx.examples(body)


def ctx_seed():
    """A drawn seed for generated histories."""
    from hypothesis import strategies as st

    return st.integers(0, 10_000)


@check(
    "B3",
    "head-and-tail-protected",
    level=MUST,
    requires=CAP,
    excludes=("head-decay",),
    title="the first protect_first_n messages are kept on "
    "every compaction; the tail keeps >= protect_last_n",
    examples=2,
)
def check_b3_head_and_tail_protected(ctx):
    """B3 (seeds): after each of two compactions (40 turns apart) messages 1..protect_first_n-1
    are verbatim at the start (message 0, the system prompt, may carry the note), and the
    output ends with at least protect_last_n input messages verbatim."""

    def body(draw):
        engine, h1, out1, h2, out2 = two_compactions(ctx, "B3", draw)
        first_n = int(getattr(engine, "protect_first_n", 3))
        last_n = int(getattr(engine, "protect_last_n", 20))
        for n, (before, after) in enumerate(((h1, out1), (h2, out2)), 1):
            if out_is_input(before, after):
                continue
            for i in range(1, min(first_n, len(h1))):
                if i >= len(after) or as_sent(after[i]) != as_sent(h1[i]):
                    fail(
                        "B3",
                        MUST,
                        f"message {i} after compaction {n}",
                        expected=f"the head message {i} of the first history verbatim (head = "
                        f"first {first_n} messages, kept on every compaction; seeds)",
                        got=short(after[i] if i < len(after) else None, 100),
                        context="head decay is host practice, against the "
                        "seeds; declare 'head-decay' if you follow it",
                    )
            if len(before) > first_n + last_n and kept_tail(before, after) < last_n:
                fail(
                    "B3",
                    MUST,
                    f"verbatim tail after compaction {n}",
                    expected=f">= protect_last_n = {last_n} messages (uncapped; seeds)",
                    got=f"{kept_tail(before, after)} messages",
                )

    ctx.examples(body)


def out_is_input(before, after) -> bool:
    """True when compress() declined: it returned its input, or removed no row (A4; nothing to
    judge)."""
    return after == before or declined(before, after)


@check(
    "B4",
    "summary-template",
    level=MUST,
    requires=CAP,
    title="the middle is replaced by one summary in the structured template",
    examples=3,
)
def check_b4_summary_template(ctx):
    """B4: a new summary message holds the template headings Goal; Constraints & Preferences;
    Progress (Done / In Progress / Blocked); Key Decisions; Relevant Files; Next Steps; Critical
    Context."""

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            compactable_histories(
                min_tokens=threshold_of(engine, ctx.window // 2) + 1_000,
                **compactable_shape(ctx, engine),
            ),
            "history",
        )
        out = compress_like_host("B4", MUST, engine, history)
        if not isinstance(out, list) or out == history:
            return
        news = new_messages(history, out)
        texts = [text_of(out[i]) for i in news]
        best = max(texts, key=lambda t: sum(h in t for h in TEMPLATE), default="")
        missing = [h for h in TEMPLATE if h not in best]
        if missing:
            fail(
                "B4",
                MUST,
                "the summary message of a compaction",
                expected="the template headings " + "; ".join(TEMPLATE),
                got=f"missing {', '.join(missing)}" if news else "no new summary message",
            )

    ctx.examples(body)


#: B4: headings under which a summary presents work as still open.
OPEN_WORK = re.compile(
    r"in progress|blocked|next steps?|pending"
    r"|open (?:items?|requests?|asks?|work|tasks?|questions?)"
    r"|remaining|to-?do|outstanding|unfinished|unresolved|current (?:task|request|ask)|active task",
    re.I,
)
_HEADING = re.compile(r"^\s*(?:#{1,6}\s*(.+?)\s*#*|\*\*(.+?)\*\*:?|([A-Z][\w &/-]{2,40}):)\s*$")


def sections(text: str) -> list[tuple[str, str]]:
    """``(heading, line)`` for every line of ``text``: the nearest heading above it (a markdown
    ``#`` heading, a ``**bold**`` line or a short ``Label:`` line; ``""`` before the first)."""
    heading, out = "", []
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            heading = next(g for g in m.groups() if g)
            continue
        out.append((heading, line))
    return out


@check(
    "B4",
    "answered-ask-not-open",
    level=SHOULD,
    requires=CAP,
    title="a summary never presents an ask answered in the summarised turns as open work",
    examples=3,
)
def check_b4_answered_ask_not_open(ctx):
    """B4 (SHOULD): a user ask answered by the assistant in the compressible middle (a drawn
    ask with a phrase its answer does not repeat) is not listed under an open-work heading
    (In Progress, Blocked, Next Steps, Pending, ...) of the compaction's new messages. Judged
    by where the ask's phrase appears, never by how often: recording it under Done, or not at
    all, is fine (docs/contract-notes.md 6.13)."""

    def body(draw):
        engine = ctx.new_engine()
        ask, answer, phrase = draw(answered_asks(), "ask")
        history = draw(
            compactable_histories(
                min_tokens=threshold_of(engine, ctx.window // 2) + 1_000,
                answered_ask=(ask, answer),
                **compactable_shape(ctx, engine),
            ),
            "history",
        )
        out = compress_like_host("B4", SHOULD, engine, history)
        if not isinstance(out, list) or out == history:
            return
        needle = phrase.lower()
        for i in new_messages(history, out):
            for heading, line in sections(text_of(out[i])):
                if needle in line.lower() and OPEN_WORK.search(heading):
                    fail(
                        "B4",
                        SHOULD,
                        f"the summary (message {i}) of a compaction",
                        expected=f"the ask {ask!r}, answered in the summarised turns "
                        f"({answer[:40]!r}...), recorded as done, not as open work",
                        got=f"it under the heading {heading!r}: {short(line.strip(), 100)}",
                        context="judged by the section the ask appears in; a summary that "
                        "re-opens answered asks makes the agent redo them",
                    )

    ctx.examples(body)


@check(
    "B5",
    "note-added-once",
    level=MUST,
    requires=CAP,
    title="the compaction note is appended to the system prompt on the first compaction only",
    examples=2,
)
def check_b5_note_added_once(ctx):
    """B5: after one and after two compactions the system prompt holds the note exactly once
    (a pass that declined, removing nothing, is no compaction: nothing to judge; A4)."""

    def body(draw):
        engine, h1, out1, h2, out2 = two_compactions(ctx, "B5", draw)
        for n, before, out in ((1, h1, out1), (2, h2, out2)):
            if not out or out[0].get("role") != "system" or declined(before, out):
                continue
            count = text_of(out[0]).count(NOTE_MARKER)
            if count != 1:
                fail(
                    "B5",
                    MUST,
                    f"the system prompt after compaction {n}",
                    expected=f"the note {NOTE_MARKER!r}... exactly once",
                    got=f"{count} times",
                )

    ctx.examples(body)


@check(
    "B6",
    "summary-updated",
    level=MUST,
    requires=CAP,
    title="a later compaction updates the previous summary instead of starting over",
    examples=2,
)
def check_b6_summary_updated(ctx):
    """B6: the second compaction's output has one summary, and it carries content of the
    first summary (a bullet of at least 20 characters from it)."""

    def body(draw):
        engine, h1, out1, h2, out2 = two_compactions(ctx, "B6", draw)
        s1 = summary_index(h1, out1)
        s2 = summary_index(h2, out2)
        if s1 is None:
            return  # B4 reports a missing summary
        first = text_of(out1[s1])
        bullets = [
            line.lstrip("-* ").strip()
            for line in first.splitlines()
            if line.strip().startswith(("-", "*"))
            and len(line.strip()) >= 22
            and "(none" not in line
        ]
        second = text_of(out2[s2]) if s2 is not None else ""
        if s2 is None or (bullets and not any(b[:60] in second for b in bullets)):
            fail(
                "B6",
                MUST,
                "the summary after the second compaction",
                expected="an update of the first summary (some of its content carried over)",
                got="no summary"
                if s2 is None
                else "a summary that shares nothing with the first one",
            )

    ctx.examples(body)
