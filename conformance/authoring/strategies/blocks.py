"""Deterministic message blocks the strategies and the checks build histories from: filler turns
(tool reads or question-and-long-answer), a probe history over a threshold, an opening exchange,
a fact planted deep in a long message, a file write whose bulk is in ``function.arguments``, a
parallel batch, a deep tool loop, the history a later compaction sees. Plain functions of a seed
and sizes: no Hypothesis draw."""

from __future__ import annotations

import json
from typing import Any

from conformance.authoring.strategies.seeded import TOOL_NAMES, blob_from_seed, text_from_seed
from simulator.provider.tokens import count_messages


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
