"""``transcripts()``: whole OpenAI-format histories valid by construction (V1-V4), drawn turn by
turn (a user message, maybe an assistant ``tool_calls`` message with its results in any order,
an assistant reply), with the realistic shapes of :func:`_add_shapes` on top; and ``usage_dicts()``
(A2)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.strategies.blocks import add_filler
from conformance.authoring.strategies.seeded import (
    IMAGE_KB,
    LOCALES,
    LONG_OUTPUT_CHARS,
    PASTE_CHARS,
    PROVIDER_FIELD_KINDS,
    TOOL_NAMES,
    astral_text,
    blob_from_seed,
    image_data_url,
    paste_text,
    reasoning_fields,
    text_from_seed,
    uid_from_seed,
)


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
