"""Hypothesis strategies for OpenAI-format transcripts, valid by construction.

``transcripts()`` draws whole histories: an optional system prompt, then turns of a user
message, optionally an assistant ``tool_calls`` message (parallel calls, reused provider
ids) with its ``tool`` results (in any order), and an assistant reply. Text comes from
Faker locales (Latin, CJK, RTL, Cyrillic) plus emoji, seeded by a drawn integer; long
tool outputs are built from a drawn seed, never drawn character by character. Every draw
is labelled so a failure's shrunk example reads clearly.

Knobs: ``min_turns``/``max_turns``, ``min_tokens`` (forces threshold-crossing histories by
appending filler tool turns), ``tool_calls``, ``multipart``, ``long_outputs``,
``uids`` (``"none"``, ``"all"``, ``"some"``, ``"duplicates"``, ``"any"``).

``compactable_histories()`` draws histories over a token figure with their bulk in the
compressible middle (optionally a focus fact deep in a long message, an answered ask, a given
system prompt); ``long_system_prompts()`` system messages of 2,000+ characters ending on a
unique token; ``tool_chains()`` / ``in_flight_histories()`` histories that end mid tool chain
(on a tool result, on a pending call, part-way through parallel results);
``content_part_rows()`` the same rows with list-of-parts content; ``grow_history()`` the
history a later compaction sees.
"""

from __future__ import annotations

import hashlib
import json
import random
from functools import cache, lru_cache
from typing import Any

from hypothesis import strategies as st

from simulator.provider.tokens import count_messages

LOCALES = ("en_US", "ja_JP", "zh_CN", "ar_AA", "ru_RU", "he_IL", "ko_KR")
EMOJI = ("🚀", "✅", "🔥", "🧪", "📦", "👩‍💻", "🇯🇵", "❤️")
LONG_OUTPUT_CHARS = (400, 2_000, 8_000, 40_000)
TOOL_NAMES = ("read_file", "search_code", "run_tests", "list_dir", "web_fetch")


@cache
def _faker(locale: str):
    from faker import Faker

    return Faker(locale)


@lru_cache(maxsize=4096)
def text_from_seed(seed: int, locale: str, sentences: int) -> str:
    """Deterministic text of about ``sentences`` sentences in ``locale`` (plus maybe emoji)."""
    fake = _faker(locale)
    fake.seed_instance(seed)
    text = fake.paragraph(nb_sentences=max(1, sentences))
    if seed % 3 == 0:
        text += " " + EMOJI[seed % len(EMOJI)]
    return text


@lru_cache(maxsize=256)
def blob_from_seed(seed: int, chars: int) -> str:
    """A JSON-ish tool output of about ``chars`` characters, built from ``seed``."""
    rng = random.Random(seed)
    rows = []
    size = 0
    i = 0
    while size < chars:
        row = json.dumps(
            {
                "path": f"src/mod_{rng.randrange(1000)}/file_{i}.py",
                "line": rng.randrange(1, 5000),
                "match": f"def handler_{rng.randrange(10**6)}(request): "
                f"return {rng.randrange(100)}",
            }
        )
        rows.append(row)
        size += len(row) + 1
        i += 1
    return "\n".join(rows)[:chars]


def uid_from_seed(seed: int, index: int) -> str:
    """A deterministic ``message_uid``-shaped value (32 lowercase hex)."""
    return hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:32]


def _reused(strategy_function):
    """One strategy object per argument set for a strategy built on every draw of a turn
    (``texts``, ``user_content``, ``tool_turn``, ``_turn``): Hypothesis validates each new
    strategy object and works out its properties before the first draw, work it then repeats
    for every turn of every example. A strategy's draws depend on its arguments and the choices
    drawn, not on which object draws them, so the examples are the same (bounded: LRU)."""
    return lru_cache(maxsize=1024)(strategy_function)


@_reused
@st.composite
def texts(draw, *, label: str = "text", max_sentences: int = 6) -> str:
    """Natural-language text in a drawn locale."""
    locale = draw(st.sampled_from(LOCALES), label=f"{label}.locale")
    seed = draw(st.integers(0, 2**31 - 1), label=f"{label}.seed")
    sentences = draw(st.integers(1, max_sentences), label=f"{label}.sentences")
    return text_from_seed(seed, locale, sentences)


@_reused
@st.composite
def user_content(draw, *, multipart: bool = True, label: str = "user") -> Any:
    """A user message's content: a string, or a list of text and image parts."""
    text = draw(texts(label=label))
    if multipart and draw(st.booleans(), label=f"{label}.multipart"):
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if draw(st.booleans(), label=f"{label}.image"):
            parts.append(
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
            )
        return parts
    return text


@_reused
@st.composite
def tool_turn(
    draw,
    *,
    first_call: int,
    parallel: bool = True,
    long_outputs: bool = True,
    reuse_ids: bool = True,
    label: str = "tools",
) -> list[dict[str, Any]]:
    """An assistant ``tool_calls`` message followed by its ``tool`` results (any order)."""
    n = draw(st.integers(1, 3 if parallel else 1), label=f"{label}.calls")
    reuse = reuse_ids and draw(st.integers(0, 9), label=f"{label}.reuse_id") == 0
    ids = [f"call_{first_call + k}" for k in range(n)]
    if reuse:
        ids[0] = "call_0"  # a provider id reused from an earlier turn (valid once answered)
    if n > 1 and draw(st.integers(0, 5), label=f"{label}.duplicate_in_response") == 0:
        ids[1] = ids[0]  # the same provider id twice in one response, each with its own result (U8)
    calls = []
    for cid in ids:
        name = draw(st.sampled_from(TOOL_NAMES), label=f"{label}.name")
        calls.append(
            {
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"query": cid, "limit": 5})},
            }
        )
    content = draw(st.sampled_from([None, "", "Let me look."]), label=f"{label}.assistant_content")
    msgs: list[dict[str, Any]] = [{"role": "assistant", "content": content, "tool_calls": calls}]
    order = draw(st.permutations(list(range(n))), label=f"{label}.result_order")
    for k in order:
        if long_outputs:
            chars = draw(st.sampled_from(LONG_OUTPUT_CHARS), label=f"{label}.output_chars")
            seed = draw(st.integers(0, 2**31 - 1), label=f"{label}.output_seed")
            output = blob_from_seed(seed, chars)
        else:
            output = draw(texts(label=f"{label}.output"))
        msgs.append({"role": "tool", "tool_call_id": ids[k], "content": output})
    return msgs


#: Call ids of a tool block are drawn from here, then renumbered by :func:`_renumber`.
_DRAW_CALL_BASE = 1_000_000


@_reused
@st.composite
def _turn(
    draw, *, tool_calls: bool, parallel: bool, multipart: bool, long_outputs: bool
) -> list[dict[str, Any]]:
    """One user turn: the user message, maybe a tool block, the assistant reply."""
    out = [{"role": "user", "content": draw(user_content(multipart=multipart, label="turn.user"))}]
    if tool_calls and draw(st.booleans(), label="turn.uses_tools"):
        out += draw(
            tool_turn(
                first_call=_DRAW_CALL_BASE,
                parallel=parallel,
                long_outputs=long_outputs,
                label="turn.tools",
            )
        )
    out.append({"role": "assistant", "content": draw(texts(label="turn.reply"))})
    return out


def _renumber(block: list[dict[str, Any]], first_call: int) -> list[dict[str, Any]]:
    """``block`` (an assistant tool_calls message and its results) with the drawn call ids
    ``call_<_DRAW_CALL_BASE + k>`` renamed ``call_<first_call + k>``; a reused ``call_0`` stays."""

    def rename(cid: str) -> str:
        n = int(cid[5:]) if cid.startswith("call_") and cid[5:].isdigit() else -1
        return f"call_{first_call + n - _DRAW_CALL_BASE}" if n >= _DRAW_CALL_BASE else cid

    head = dict(block[0])
    head["tool_calls"] = [
        dict(
            c,
            id=rename(c["id"]),
            function=dict(
                c["function"], arguments=json.dumps({"query": rename(c["id"]), "limit": 5})
            ),
        )
        for c in block[0]["tool_calls"]
    ]
    return [head] + [dict(m, tool_call_id=rename(m["tool_call_id"])) for m in block[1:]]


def _stamp_uids(messages: list[dict[str, Any]], mode: str, seed: int) -> None:
    for i, m in enumerate(messages):
        if mode == "all" or (mode == "some" and (seed + i) % 3) or mode == "duplicates":
            m["message_uid"] = uid_from_seed(seed, i)
    if mode == "duplicates" and len(messages) > 3:
        messages[-2]["message_uid"] = messages[1]["message_uid"]


@st.composite
def transcripts(
    draw,
    *,
    min_turns: int = 1,
    max_turns: int = 10,
    system: bool | None = None,
    tool_calls: bool = True,
    parallel: bool = True,
    multipart: bool = True,
    long_outputs: bool = True,
    min_tokens: int = 0,
    uids: str = "all",
    end_with_user: bool | None = None,
    shapes: bool = True,
) -> list[dict[str, Any]]:
    """A valid OpenAI-format history (V1-V4 hold by construction).

    Args:
        min_turns, max_turns: number of user turns drawn.
        system: force a system prompt (True), none (False) or draw it (None).
        min_tokens: if the drawn history has fewer cl100k tokens, filler tool turns
            (deterministic, from a drawn seed) are appended until it has more.
        uids: how ``message_uid`` is stamped (U2 tolerance: present, absent, duplicated).
        end_with_user: end on a user message (True), an assistant reply (False) or draw.
        shapes: draw the realistic shapes of :func:`_add_shapes` (each shrinks away).
    """
    has_system = draw(st.booleans(), label="system") if system is None else system
    messages: list[dict[str, Any]] = []
    if has_system:
        messages.append(
            {"role": "system", "content": draw(texts(label="system_prompt", max_sentences=4))}
        )
    # turns are list elements, so the shrinker can delete any turn (not only the last ones);
    # call ids are numbered after the draw, in order, so they stay unique whatever is deleted
    turns = draw(
        st.lists(
            _turn(
                tool_calls=tool_calls,
                parallel=parallel,
                multipart=multipart,
                long_outputs=long_outputs,
            ),
            min_size=min_turns,
            max_size=max_turns,
        ),
        label="turns",
    )
    next_call = 0
    for turn in turns:
        messages.append(turn[0])
        if len(turn) > 2:
            block = _renumber(turn[1:-1], next_call)
            next_call += len(block[0]["tool_calls"])
            messages.extend(block)
        messages.append(turn[-1])
    if min_tokens:
        seed = draw(st.integers(0, 2**31 - 1), label="filler_seed")
        add_filler(messages, min_tokens, seed, tools=draw(st.booleans(), label="filler_tools"))
    wants_user_end = (
        draw(st.booleans(), label="end_with_user") if end_with_user is None else end_with_user
    )
    if wants_user_end:
        messages.append({"role": "user", "content": draw(texts(label="last_user"))})
    if shapes:
        _add_shapes(draw, messages)
    mode = (
        draw(st.sampled_from(["none", "all", "some", "duplicates"]), label="uids")
        if uids == "any"
        else uids
    )
    _stamp_uids(messages, mode, draw(st.integers(0, 2**31 - 1), label="uid_seed"))
    return messages


def filler_block(seed: int, chars: int, k: int = 0) -> list[dict[str, Any]]:
    """One user turn that reads a big file: user, assistant tool_calls, tool result, reply
    (V2-valid)."""
    cid = f"call_fill_{k}"
    return [
        {"role": "user", "content": text_from_seed(seed + k, "en_US", 2)},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "big.json"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": blob_from_seed(seed + k, chars)},
        {"role": "assistant", "content": text_from_seed(seed + k + 1, "en_US", 1)},
    ]


def probe_history(threshold: int) -> list[dict[str, Any]]:
    """A plain history just over ``threshold`` tokens (system prompt, up to 64 file-reading
    turns of :func:`filler_block`, a last user message): what the "does this engine compact?"
    probes hand compress()."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    k = 0
    while count_messages(history) <= threshold + 500 and k < 64:
        history += filler_block(7, 2_000, k)
        k += 1
    history.append({"role": "user", "content": "and now?"})
    return history


def plain_filler_block(seed: int, chars: int, k: int = 0) -> list[dict[str, Any]]:
    """A short user question and a long assistant answer (no tools)."""
    return [
        {"role": "user", "content": text_from_seed(seed + k + 1, "en_US", 1)},
        {"role": "assistant", "content": f"Here is part {k}:\n" + blob_from_seed(seed + k, chars)},
    ]


def add_filler(
    messages: list[dict[str, Any]], min_tokens: int, seed: int, *, tools: bool = True
) -> None:
    """Append as few filler blocks as possible (one, usually) until ``messages`` hold more than
    ``min_tokens`` cl100k tokens: tool turns (4 messages) or, with ``tools=False``,
    question-and-long-answer exchanges (2 messages); after a trailing user message the first block
    drops its own user message (3 or 1 messages). Blob sizes are computed, never drawn, so shrinking
    stays cheap and counterexamples short."""
    k = 0
    while True:
        deficit = min_tokens - count_messages(messages)
        if deficit < 0:
            return
        chars = min(max(400, int(deficit * 3.2) + 400), 120_000)
        block = filler_block(seed, chars, k) if tools else plain_filler_block(seed, chars, k)
        if messages and messages[-1].get("role") == "user":
            block = block[1:]  # after a user message the block starts with the assistant's answer
        messages.extend(block)
        k += 1


def head_exchange(seed: int, size: int) -> list[dict[str, Any]]:
    """``size`` short messages opening a conversation, alternating from a user message."""
    return [
        {"role": "user", "content": "Hi! " + text_from_seed(seed + 1, "en_US", 1)}
        if i == 0
        else {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": text_from_seed(seed + 2 + i, "en_US", 1),
        }
        for i in range(max(1, size))
    ]


def _deep_in_long_text(seed: int, fact: str, depth: int, after: int) -> str:
    """About ``depth`` characters of prose, then the sentence ``fact``, then about ``after``
    more characters: a fact planted deep in one long message (A5)."""
    before, k = "", 0
    while len(before) < depth:
        before += text_from_seed(seed + k, "en_US", 4) + " "
        k += 1
    rest, k = "", 100
    while len(rest) < after:
        rest += " " + text_from_seed(seed + k, "en_US", 4)
        k += 1
    return f"{before}Note this for later: {fact}{rest}"


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


def grow_history(
    messages: list[dict[str, Any]], min_tokens: int, seed: int, *, tail: int = 3
) -> list[dict[str, Any]]:
    """A copy of ``messages`` plus new turns until it holds more than ``min_tokens`` cl100k
    tokens again (filler, then ``tail`` short messages alternating from a user message):
    the history a later compaction sees after the host committed an earlier one."""
    out = json.loads(json.dumps(messages))
    if out and out[-1].get("role") == "user":
        out.append({"role": "assistant", "content": text_from_seed(seed, "en_US", 1)})
    add_filler(out, min_tokens, seed, tools=seed % 2 == 0)
    if out[-1].get("role") == "user":
        out.append({"role": "assistant", "content": "ok"})
    for i in range(tail):
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"later {i}: " + ("ok" if i % 2 else "go on")})
    return out


def usage_dicts() -> st.SearchStrategy[dict[str, int]]:
    """A2 usage dicts: the three required keys, and any subset of the five buckets."""
    tokens = st.integers(0, 2_000_000)

    @st.composite
    def build(draw):
        prompt = draw(tokens, label="prompt_tokens")
        completion = draw(st.integers(0, 100_000), label="completion_tokens")
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "reasoning_tokens",
        ):
            if draw(st.booleans(), label=f"has_{key}"):
                usage[key] = draw(st.integers(0, prompt + completion), label=key)
        return usage

    return build()


# --- realistic session shapes (docs/strategies.md says where each one comes from) -------------
#
# Every shape below is an optional feature: a labelled boolean (or an integer whose 0 means
# "off") that Hypothesis shrinks to False, so a counterexample keeps only the shapes it needs.
# Bytes are built from a drawn seed and a drawn size, never drawn one by one: a 400 KB data URL
# costs one ``random.Random(seed).randbytes`` call, memoised.

#: Astral code points (outside the BMP: two UTF-16 code units, four UTF-8 bytes each): emoji
#: and CJK Unified Ideographs Extension B characters used in names and classical text.
ASTRAL = ("😀", "🚀", "🧪", "🦀", "𝔘", "𠀀", "𠮷", "𡈽", "𤭢", "𩸽", "𪚲", "🫠")
#: Sizes of a pasted screenshot, kilobytes of PNG bytes before base64 (phone screenshots and
#: desktop captures as agents' users paste them: 100 KB to 600 KB).
IMAGE_KB = (120, 260, 420, 600)
#: Sizes of a long paste in the live ask (a log, a file, a stack trace), characters.
PASTE_CHARS = (6_000, 14_000, 30_000)
#: Keys a provider adds to assistant rows that the next request must carry back.
REASONING_FIELDS = ("reasoning_content", "reasoning_details", "reasoning")


@lru_cache(maxsize=128)
def astral_text(seed: int, chars: int) -> str:
    """About ``chars`` code points of mixed ASCII words and astral characters, so that astral
    characters start at every UTF-16 and UTF-8 offset parity over the whole stretch (a cap in
    code units or bytes anywhere in it cuts one in half)."""
    rng = random.Random(seed)
    out: list[str] = []
    n = 0
    while n < chars:
        if rng.random() < 0.45:
            run = "".join(rng.choice(ASTRAL) for _ in range(rng.randint(1, 3)))
        else:
            run = "".join(
                rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 6))
            )
            run += rng.choice(" ,. ")
        out.append(run)
        n += len(run)
    return "".join(out)[:chars]


@lru_cache(maxsize=8)
def image_data_url(seed: int, kilobytes: int) -> str:
    """A ``data:image/png;base64,...`` URL of ``kilobytes`` KB of bytes (a PNG signature, then
    seeded noise: incompressible, as a real screenshot's deflated pixels are)."""
    import base64

    raw = b"\x89PNG\r\n\x1a\n" + random.Random(seed).randbytes(kilobytes * 1024 - 8)
    return "data:image/png;base64," + base64.b64encode(raw).decode("ascii")


@lru_cache(maxsize=128)
def paste_text(seed: int, chars: int) -> str:
    """A pasted log of about ``chars`` characters (timestamped lines, a traceback at the end)."""
    rng = random.Random(seed)
    lines, size, i = [], 0, 0
    while size < chars:
        line = (
            f"2026-11-30T{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z "
            f"{rng.choice(('INFO', 'WARN', 'DEBUG', 'ERROR'))} worker[{rng.randrange(16)}] "
            f"job={rng.randrange(10**6)} took {rng.randrange(5000)} ms: "
            f"{rng.choice(('retrying', 'flushed batch', 'cache miss', 'lease renewed'))}"
        )
        lines.append(line)
        size += len(line) + 1
        i += 1
    lines.append('Traceback (most recent call last):\n  File "app/worker.py", line 88, in run')
    return "\n".join(lines)


def reasoning_fields(seed: int, kind: str) -> dict[str, Any]:
    """Provider fields of an assistant row: ``kind`` is ``deepseek`` (``reasoning_content``),
    ``openrouter`` (``reasoning`` and ``reasoning_details`` with a signature) or ``named`` (the
    OpenAI ``name`` of a participant)."""
    thought = text_from_seed(seed, "en_US", 2)
    if kind == "deepseek":
        return {"reasoning_content": thought}
    if kind == "openrouter":
        sig = hashlib.sha256(f"sig:{seed}".encode()).hexdigest()
        return {
            "reasoning": thought,
            "reasoning_details": [
                {
                    "type": "reasoning.text",
                    "text": thought,
                    "signature": sig,
                    "format": "anthropic-claude-v1",
                    "index": 0,
                }
            ],
        }
    return {"name": f"planner_{seed % 7}"}


PROVIDER_FIELD_KINDS = ("deepseek", "openrouter", "named")


def argument_heavy_turn(seed: int, chars: int, k: int = 0) -> list[dict[str, Any]]:
    """An assistant row that writes a file (``content: None``, the file in
    ``function.arguments``) and its short tool result: the bulk sits in the arguments."""
    cid = f"call_write_{seed % 10_000}_{k}"
    body = blob_from_seed(seed, chars)
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": json.dumps({"path": f"out/report_{k}.json", "content": body}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": f"wrote {len(body)} bytes"},
    ]


def parallel_batch(seed: int, n: int, chars: int, k: int = 0) -> list[dict[str, Any]]:
    """One assistant row calling ``n`` tools at once, then their results in reverse order."""
    ids = [f"call_par_{seed % 10_000}_{k}_{j}" for j in range(n)]
    calls = [
        {
            "id": cid,
            "type": "function",
            "function": {
                "name": TOOL_NAMES[j % len(TOOL_NAMES)],
                "arguments": json.dumps({"q": j}),
            },
        }
        for j, cid in enumerate(ids)
    ]
    out: list[dict[str, Any]] = [{"role": "assistant", "content": None, "tool_calls": calls}]
    for j, cid in reversed(list(enumerate(ids))):
        out.append(
            {"role": "tool", "tool_call_id": cid, "content": blob_from_seed(seed + j, chars)}
        )
    return out


def deep_tool_loop(seed: int, rounds: int, chars: int) -> list[dict[str, Any]]:
    """``rounds`` assistant ``tool_calls`` rows each answered by one result (an agent working
    alone on one ask), ending on the last result."""
    out: list[dict[str, Any]] = []
    for r in range(rounds):
        cid = f"call_loop_{seed % 10_000}_{r}"
        out += [
            {
                "role": "assistant",
                "content": None if r % 2 else "Checking.",
                "tool_calls": [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {
                            "name": TOOL_NAMES[r % len(TOOL_NAMES)],
                            "arguments": json.dumps({"step": r}),
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": cid, "content": blob_from_seed(seed + r, chars)},
        ]
    return out


def live_ask_index(messages: list[dict[str, Any]]) -> int | None:
    """Index of the last user message (the live ask), or None."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], dict) and messages[i].get("role") == "user":
            return i
    return None


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


def _sometimes(draw, label: str) -> bool:
    """A shape drawn one time in four (0 = off, what the shrinker goes to): the heavy shapes of
    :func:`_add_shapes` stay in every check's draws without doubling their cost."""
    return draw(st.integers(0, 3), label=label) == 3


def _add_shapes(draw, messages: list[dict[str, Any]]) -> None:
    """Realistic shapes on a drawn transcript, in place, each a labelled draw that shrinks to
    off (docs/strategies.md): provider fields on assistant rows (one time in two), and one time
    in four each: a tool call whose bulk is in
    ``function.arguments`` (``content: None``), a long stretch of astral characters, a
    screenshot of hundreds of KB in a user row, a long paste in the live ask."""
    seed = draw(st.integers(0, 2**31 - 1), label="shapes.seed")
    if draw(st.booleans(), label="shapes.provider_fields"):
        kind = draw(st.sampled_from(PROVIDER_FIELD_KINDS), label="shapes.provider_fields.kind")
        for i, m in enumerate(messages):
            if m.get("role") == "assistant":
                messages[i] = {**m, **reasoning_fields(seed + i, kind)}
    calls_at = [i for i, m in enumerate(messages) if m.get("tool_calls")]
    if calls_at and _sometimes(draw, "shapes.arguments"):
        i = calls_at[seed % len(calls_at)]
        chars = draw(st.sampled_from((1_500, 6_000)), label="shapes.arguments.chars")
        first = messages[i]["tool_calls"][0]
        heavy = dict(
            first,
            function={
                "name": "write_file",
                "arguments": json.dumps(
                    {"path": "out/data.json", "content": blob_from_seed(seed, chars)}
                ),
            },
        )
        messages[i] = {
            **messages[i],
            "content": None,
            "tool_calls": [heavy] + messages[i]["tool_calls"][1:],
        }
    plain = [
        i
        for i, m in enumerate(messages)
        if m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
    ]
    if plain and _sometimes(draw, "shapes.astral"):
        chars = draw(st.sampled_from((600, 3_000)), label="shapes.astral.chars")
        i = plain[seed % len(plain)]
        messages[i] = {**messages[i], "content": astral_text(seed, chars)}
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if users and _sometimes(draw, "shapes.image"):
        kb = draw(st.sampled_from(IMAGE_KB), label="shapes.image.kb")
        i = users[seed % len(users)]
        text = messages[i]["content"] if isinstance(messages[i]["content"], str) else "Look:"
        messages[i] = {
            **messages[i],
            "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": image_data_url(seed % 7, kb)}},
            ],
        }
    if users and _sometimes(draw, "shapes.paste"):
        chars = draw(st.sampled_from(PASTE_CHARS[:2]), label="shapes.paste.chars")
        i = users[-1]
        paste = paste_text(seed, chars) + "\n\nWhat is going wrong here?"
        c = messages[i]["content"]
        messages[i] = {
            **messages[i],
            "content": paste if isinstance(c, str) else [{"type": "text", "text": paste}] + c[1:],
        }
