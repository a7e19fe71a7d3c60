"""Strategies for the histories compaction checks need: compactable histories (bulk in the
compressible middle, optionally a focus fact or an answered ask), long system prompts, histories
that end mid tool chain, list-of-parts rows, and ``realistic_sessions()``: the shapes real agent
sessions have (docs/strategies.md)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.strategies.blocks import (
    _deep_in_long_text,
    add_filler,
    argument_heavy_turn,
    deep_tool_loop,
    head_exchange,
    live_ask_index,
    parallel_batch,
)
from conformance.authoring.strategies.seeded import (
    IMAGE_KB,
    PASTE_CHARS,
    PROVIDER_FIELD_KINDS,
    TOOL_NAMES,
    astral_text,
    blob_from_seed,
    image_data_url,
    paste_text,
    reasoning_fields,
    text_from_seed,
)

#: Asks a user makes and the assistant answers (docs/contract-notes.md 6.13): (ask, answer,
#: phrase). ``phrase`` occurs in the ask only, never in its answer, so where it shows up in a
#: summary tells how the summary presents the ask. ``{n}`` is a drawn number.
ANSWERED_ASKS = (
    (
        "Please rename the module orchid_{n} to petal_{n} in every import.",
        "Done: petal_{n} is now the name used by all imports, and the tests pass.",
        "rename the module orchid_{n}",
    ),
    (
        "Can you add a unit test for the date parser in calendar_{n}?",
        "Added tests/test_calendar_{n}.py with six cases for that parser; all of them pass.",
        "unit test for the date parser in calendar_{n}",
    ),
    (
        "Please bump the dependency quartzlib_{n} to version 2.4 in the lock file.",
        "Bumped: the lock file now pins version 2.4 of quartzlib_{n}, and the build is green.",
        "bump the dependency quartzlib_{n}",
    ),
)


@st.composite
def answered_asks(draw) -> tuple[str, str, str]:
    """(ask, answer, phrase): a user ask, the assistant's answer to it, and a phrase of the ask
    that its answer does not contain (:data:`ANSWERED_ASKS`, with a drawn number)."""
    ask, answer, phrase = draw(st.sampled_from(ANSWERED_ASKS), label="answered_ask")
    n = draw(st.integers(1000, 9999), label="answered_ask.number")
    return ask.format(n=n), answer.format(n=n), phrase.format(n=n)


#: Unique token ending every :func:`long_system_prompts` text.
SYSTEM_END_TOKEN = "SYSTEM-RULES-END"


@st.composite
def long_system_prompts(draw, *, min_chars: int = 2_000) -> dict[str, Any]:
    """A system message of at least ``min_chars`` characters (V4) whose text ends on a unique
    token ``SYSTEM-RULES-END-<8 hex>``; its content is a string or, drawn, a list of two text
    parts (the token in the second)."""
    seed = draw(st.integers(0, 2**31 - 1), label="system_prompt.seed")
    size = draw(st.integers(min_chars, 3 * min_chars), label="system_prompt.chars")
    rules, k = "You are a careful coding assistant. Follow these rules.\n", 0
    while len(rules) < size:
        rules += f"{k + 1}. " + text_from_seed(seed + k, "en_US", 2) + "\n"
        k += 1
    token = f"{SYSTEM_END_TOKEN}-{seed & 0xFFFFFFFF:08x}"
    if draw(st.booleans(), label="system_prompt.parts"):
        half = len(rules) // 2
        content: Any = [
            {"type": "text", "text": rules[:half]},
            {"type": "text", "text": rules[half:] + token},
        ]
    else:
        content = rules + token
    return {"role": "system", "content": content}


@st.composite
def compactable_histories(
    draw,
    *,
    min_tokens: int,
    small_tail: int = 25,
    system: bool = True,
    focus_fact: str | None = None,
    answered_ask: tuple[str, str] | None = None,
    system_prompt: dict[str, Any] | None = None,
    head: int = 2,
) -> list[dict[str, Any]]:
    """A history over ``min_tokens`` whose tokens sit in the compressible middle (A4, B, REG).

    Layout: [system] + ``head`` short opening messages (from a user message) + filler (the bulk:
    tool turns, or pasted-text exchanges, drawn) [+ a planted ``focus_fact``, deep (400 to 3,000
    characters in, drawn) inside one long user or assistant message, between eight messages of
    chatter on each side] [+ an ``answered_ask`` (ask, answer) user/assistant pair followed by
    six messages of chatter] + more filler [+ a two-message plain bridge after tool filler] +
    ``small_tail`` short messages alternating user/assistant from a user message (odd
    ``small_tail``: ends on a user). ``system_prompt``: the system message to open with (a copy
    is used; default a short one). The protected parts (head 3, tail of 20 by the
    seeds' defaults; see ``head_size``/``tail_size`` in the checks) stay small, so an engine can get
    under budget. Smallest draw: system, one user message, one long answer, a tail of 3.
    """
    seed = draw(st.integers(0, 2**31 - 1), label="history_seed")
    tools = draw(st.booleans(), label="filler_tools")
    out: list[dict[str, Any]] = []
    if system_prompt is not None:
        out.append(json.loads(json.dumps(system_prompt)))
    elif system:
        out.append(
            {
                "role": "system",
                "content": "You are a careful coding assistant. "
                + text_from_seed(seed, "en_US", 1),
            }
        )
    out += head_exchange(seed, head)
    if focus_fact or answered_ask:
        add_filler(out, max(min_tokens // 2, 200), seed + 10, tools=tools)
    if focus_fact:
        # deep in one long message (a summary keeping each message's opening misses it), with
        # eight messages of chatter on each side: deep enough in the middle, by messages and by
        # sentences, that a summary which ignores the focus topic (Hermes 0.19.0's fallback
        # summary, the simulator's summariser) drops the fact
        depth = draw(st.integers(400, 3_000), label="focus.depth")
        role = draw(st.sampled_from(["user", "assistant"]), label="focus.role")
        chatter = [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": text_from_seed(seed + 50 + i, "en_US", 4),
            }
            for i in range(16)
        ]
        long = {"role": role, "content": _deep_in_long_text(seed + 30, focus_fact, depth, 800)}
        if role == "user":
            pair = [long, {"role": "assistant", "content": "Noted."}]
        else:
            pair = [{"role": "user", "content": "Any notes on the schedule?"}, long]
        out += chatter[:8] + pair + chatter[8:]
    if answered_ask:
        ask, answer = answered_ask
        out += [{"role": "user", "content": ask}, {"role": "assistant", "content": answer}]
        out += [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": text_from_seed(seed + 70 + i, "en_US", 3),
            }
            for i in range(6)
        ]
    add_filler(out, min_tokens, seed + 1000, tools=tools)
    # with tool filler, a bridge of two plain messages (about min_tokens/8 tokens each) between
    # the bulk and the short tail: a tail walked back by a token budget stops inside it, not at
    # a tool group (which a boundary alignment would pull into the tail)
    bridge_chars = max(400, min_tokens // 2)
    out += (
        []
        if not tools
        else [
            {
                "role": "user",
                "content": text_from_seed(seed + 7, "en_US", 3)
                + " "
                + blob_from_seed(seed + 7, bridge_chars),
            },
            {
                "role": "assistant",
                "content": text_from_seed(seed + 8, "en_US", max(2, bridge_chars // 90)),
            },
        ]
    )
    for i in range(small_tail):
        role = "user" if i % 2 == 0 else "assistant"
        out.append(
            {"role": role, "content": f"step {i}: " + ("ok" if role == "assistant" else "continue")}
        )
    return out


#: How the current turn's tool chain ends when the host compacts (V2): right after a tool result
#: (the post-tool check), on an assistant ``tool_calls`` message whose results are not appended
#: yet, or part-way through the results of parallel calls.
CHAIN_ENDINGS = ("tool_result", "pending_call", "partial_results")
#: Sizes of the current turn's tool outputs, characters.
CHAIN_OUTPUT_CHARS = (120, 1_500, 5_000)


@st.composite
def tool_chains(draw, *, ending: str | None = None, label: str = "chain") -> list[dict[str, Any]]:
    """The current turn's tool chain after its user message, cut where the host compacts: 0-2
    complete rounds (assistant ``tool_calls`` + results) then a last round that ends as
    ``ending`` (:data:`CHAIN_ENDINGS`, drawn when None). Call ids are ``call_live_<k>``, unique
    within the chain."""
    ending = ending or draw(st.sampled_from(CHAIN_ENDINGS), label=f"{label}.ending")
    rounds = draw(st.integers(0, 2), label=f"{label}.complete_rounds")
    out: list[dict[str, Any]] = []
    k = 0
    for r in range(rounds + 1):
        last = r == rounds
        n = draw(st.integers(2 if last and ending == "partial_results" else 1, 3), f"{label}.n")
        ids = [f"call_live_{k + j}" for j in range(n)]
        k += n
        calls = [
            {
                "id": cid,
                "type": "function",
                "function": {
                    "name": draw(st.sampled_from(TOOL_NAMES), label=f"{label}.name"),
                    "arguments": json.dumps({"query": cid}),
                },
            }
            for cid in ids
        ]
        content = draw(st.sampled_from([None, "", "Let me check."]), label=f"{label}.content")
        out.append({"role": "assistant", "content": content, "tool_calls": calls})
        answered = n
        if last and ending == "pending_call":
            answered = 0
        elif last and ending == "partial_results":
            answered = draw(st.integers(1, n - 1), label=f"{label}.answered")
        for cid in ids[:answered]:
            chars = draw(st.sampled_from(CHAIN_OUTPUT_CHARS), label=f"{label}.output_chars")
            seed = draw(st.integers(0, 2**31 - 1), label=f"{label}.output_seed")
            out.append(
                {"role": "tool", "tool_call_id": cid, "content": blob_from_seed(seed, chars)}
            )
    return out


@st.composite
def in_flight_histories(
    draw, *, min_tokens: int, head: int = 2, small_tail: int = 3, ending: str | None = None
) -> list[dict[str, Any]]:
    """A compactable history (:func:`compactable_histories`) whose current turn is mid tool
    chain: it ends on the user's ask followed by :func:`tool_chains` (V2's in-flight case).
    ``small_tail`` is made odd, so the short tail ends on the ask."""
    history = draw(
        compactable_histories(min_tokens=min_tokens, head=head, small_tail=small_tail | 1),
        label="history",
    )
    return history + draw(tool_chains(ending=ending), label="chain")


@st.composite
def content_part_rows(draw, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``history`` where drawn rows with string content (user, assistant, tool; the
    system prompt too) carry it as a list of one or two text parts instead: the shape the host's
    cache control gives a row it marks (P2), and what multimodal clients send."""
    out = []
    for i, m in enumerate(history):
        m = dict(m)
        text = m.get("content")
        if isinstance(text, str) and text and draw(st.booleans(), label=f"parts.{i}"):
            cut = len(text) // 2 if len(text) > 40 and draw(st.booleans(), f"parts.{i}.two") else 0
            parts = [text[:cut], text[cut:]] if cut else [text]
            m["content"] = [{"type": "text", "text": p} for p in parts]
        out.append(m)
    return out


@st.composite
def realistic_sessions(
    draw,
    *,
    min_tokens: int,
    head: int = 2,
    small_tail: int = 3,
    short: bool | None = None,
    force: frozenset[str] | set[str] = frozenset(),
) -> list[dict[str, Any]]:
    """A history over ``min_tokens`` in the shapes real agent sessions have (docs/strategies.md):
    a :func:`compactable_histories` base (or, drawn, a history of 3 to 7 messages, shorter than
    any head + tail, whose bulk sits in one or two rows) plus optional shapes, each a labelled
    boolean that shrinks away: ``reasoning`` (provider fields on assistant rows),
    ``arguments`` (a file write whose bulk is in ``function.arguments``), ``parallel`` (a batch
    of 4-6 parallel calls), ``astral`` (long stretches of astral characters, in the middle and
    in the live ask), ``paste`` (the live ask is a long paste plus the question), ``image`` (the
    live ask carries a screenshot as a base64 data URL of hundreds of KB) and ``deep_loop`` (the
    live ask is followed by 2-14 tool rounds). The last user message is the live ask; its text
    ends on a unique token ``ASK-<8 hex>``. ``force``: shapes that are on without a draw (a
    check about astral text forces ``astral``)."""

    def on(shape: str) -> bool:
        return shape in force or draw(st.booleans(), label=f"session.{shape}")

    seed = draw(st.integers(0, 2**31 - 1), label="session.seed")
    # drawn as "long", so that shrinking (towards False) goes to the short shape
    is_short = not draw(st.booleans(), label="session.long") if short is None else short
    if is_short:
        out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
        out.append({"role": "user", "content": text_from_seed(seed, "en_US", 2)})
        out.append({"role": "assistant", "content": "Here it is:\n" + blob_from_seed(seed, 400)})
        add_filler(out, min_tokens, seed + 5, tools=draw(st.booleans(), label="session.tools"))
    else:
        out = draw(
            compactable_histories(min_tokens=min_tokens, head=head, small_tail=small_tail | 1),
            label="session.base",
        )
    if out[-1].get("role") != "user":
        out.append({"role": "user", "content": "continue"})
    ask_at = live_ask_index(out)
    assert ask_at is not None
    middle = _plain_gap(out, max(1, ask_at // 2))
    if on("reasoning"):
        kind = draw(st.sampled_from(PROVIDER_FIELD_KINDS), label="session.reasoning.kind")
        for i, m in enumerate(out):
            if m.get("role") == "assistant":
                out[i] = {**m, **reasoning_fields(seed + i, kind)}
    if on("arguments"):
        chars = draw(st.sampled_from((2_000, 8_000, 20_000)), label="session.arguments.chars")
        out[middle:middle] = _bridge(out, middle, argument_heavy_turn(seed + 3, chars))
        ask_at = live_ask_index(out)
    if on("parallel"):
        n = draw(st.integers(4, 6), label="session.parallel.calls")
        block = parallel_batch(seed + 4, n, 600)
        out[middle:middle] = _bridge(out, middle, block)
        ask_at = live_ask_index(out)
    ask = out[ask_at]
    ask_text = ask["content"] if isinstance(ask["content"], str) else "continue"
    if on("astral"):
        chars = draw(st.sampled_from((1_000, 4_000)), label="session.astral.chars")
        out.insert(middle, {"role": "user", "content": astral_text(seed + 6, chars)})
        out.insert(middle + 1, {"role": "assistant", "content": astral_text(seed + 7, chars)})
        ask_at += 2
        ask_text = astral_text(seed + 8, 300) + " " + ask_text
    if on("paste"):
        chars = draw(st.sampled_from(PASTE_CHARS), label="session.paste.chars")
        ask_text = paste_text(seed + 9, chars) + "\n\nWhy does the worker keep retrying?"
    ask_text += f" ASK-{seed & 0xFFFFFFFF:08x}"
    content: Any = ask_text
    if on("image"):
        kb = draw(st.sampled_from(IMAGE_KB), label="session.image.kb")
        content = [
            {"type": "text", "text": ask_text},
            {"type": "image_url", "image_url": {"url": image_data_url(seed % 7, kb)}},
        ]
    out[ask_at] = {**ask, "content": content}
    if on("deep_loop"):
        rounds = draw(st.integers(2, 14), label="session.deep_loop.rounds")
        del out[ask_at + 1 :]
        out += deep_tool_loop(seed + 11, rounds, 1_200)
    return out


def _plain_gap(out: list[dict[str, Any]], at: int) -> int:
    """The first index from ``at`` where a block may be inserted without splitting a tool chain
    (the row before it has no ``tool_calls`` and the row at it is not a tool result)."""
    while at < len(out) and (
        out[at].get("role") == "tool" or (at > 0 and out[at - 1].get("tool_calls"))
    ):
        at += 1
    return at


def _bridge(
    out: list[dict[str, Any]], at: int, block: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``block`` (starting on an assistant row, ending on a tool result) made to fit at
    ``out[at]``: a user message before it when the row before ``at`` is not a user one, an
    assistant reply after it; never inside a tool chain (``at`` is moved by the caller's
    choice of a plain position: the rows around a compactable history's middle are plain)."""
    prev = out[at - 1].get("role") if at > 0 else None
    lead = [] if prev == "user" else [{"role": "user", "content": "Go ahead."}]
    return lead + block + [{"role": "assistant", "content": "Done with that step."}]
