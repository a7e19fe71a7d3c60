"""Fixed first examples: inputs a check tries before Hypothesis draws any.

Hypothesis starts from the simplest example and grows; an engine that breaks only on long
histories (drops the system prompt past 40 messages, say) then passes a check whose budget
runs out after a few examples (a slow engine, a loaded machine). A check whose rule must hold on
long inputs tries one long, deterministic input first (:func:`long_history`), through the same
body as its drawn examples (``CheckContext.examples(body, first=...)``): the same verdict at any
machine load, and the same draws afterwards.
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.authoring.strategies import filler_block, text_from_seed

#: A system prompt of more than 2,000 characters that ends on a unique token (V4 keeps it whole).
LONG_SYSTEM_PROMPT = (
    "You are the repository assistant of a large project. "
    + " ".join(text_from_seed(7_000 + k, "en_US", 2) for k in range(14))
    + " Closing marker: ZEPHYR-KESTREL-9021."
)


def long_history(*, turns: int = 24, seed: int = 4_242) -> list[dict[str, Any]]:
    """A valid transcript of ``turns`` exchanges (every third a tool read): the long system
    prompt, then about ``3 * turns`` messages, well over a 16k-token window, ending on a user
    message (V2-valid: every call answered)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": LONG_SYSTEM_PROMPT}]
    for k in range(turns):
        if k % 3 == 0:
            out += filler_block(seed, 1_800, k)
        else:
            out += [
                {"role": "user", "content": text_from_seed(seed + 31 * k, "en_US", 3)},
                {"role": "assistant", "content": text_from_seed(seed + 31 * k + 1, "en_US", 4)},
            ]
    out.append({"role": "user", "content": "What is the next step?"})
    return out


def point_history(turns: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """A plain history of ``turns`` file-reading turns (:func:`filler_block`: user, assistant
    tool_calls, its result, a reply; 2,000 characters read each): a short system prompt, the
    turns, a last user message. What :func:`conformance.checks.engine_calls.compaction_point`
    grows to find where an engine compacts."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for k in range(turns):
        out += filler_block(seed, 2_000, k)
    out.append({"role": "user", "content": "and now?"})
    return out


def at_every_offset(history: list[dict[str, Any]], ending: list[dict[str, Any]]) -> list[list]:
    """Four copies of ``history`` (a :func:`point_history`: its last turn ends on an assistant
    reply, then the last user message) with 0, 5, 2 or 3 more messages of tool rounds (one call,
    then two parallel calls, and their results) put before that last reply, each followed by
    ``ending`` (a tool chain, or nothing): a cut a fixed number of messages from the end falls
    on every position of a tool turn in one of them (V2: a cut between a call and its result
    shows in one)."""

    def call(cid: str) -> dict[str, Any]:
        return {
            "id": cid,
            "type": "function",
            "function": {"name": "grep", "arguments": '{"pattern": "port"}'},
        }

    one = [
        {"role": "assistant", "content": None, "tool_calls": [call("call_pad_1")]},
        {"role": "tool", "tool_call_id": "call_pad_1", "content": "a.toml:2: port = 8080"},
    ]
    two = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_pad_2"), call("call_pad_3")],
        },
        {"role": "tool", "tool_call_id": "call_pad_2", "content": "b.toml:7: port = 9090"},
        {"role": "tool", "tool_call_id": "call_pad_3", "content": "no match"},
    ]
    body, reply, last = history[:-2], history[-2], history[-1]
    return [
        copy.deepcopy(body + extra + [reply, last] + ending) for extra in ([], one + two, one, two)
    ]


def content_shapes_history() -> list[dict[str, Any]]:
    """A short valid transcript holding every content shape the host hands compress() (V3): a
    system prompt as a list of text parts, user content as a string and as a list of text and
    image parts, an assistant message with ``content: None`` and ``tool_calls``, its tool
    result, an empty assistant string, a tool result as a list of text parts. A4's first
    example: an engine that breaks on one of these shapes (``(m.get("content") or "").lower()``
    on list content) fails A4 on its first example, at any machine load, before any other
    check draws the same crash (which then says "same root cause")."""
    call = {"id": "call_shapes_1", "type": "function"}
    return [
        {"role": "system", "content": [{"type": "text", "text": "You are a careful assistant."}]},
        {"role": "user", "content": "Read the config file, please."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {**call, "function": {"name": "read_file", "arguments": '{"path": "a.toml"}'}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_shapes_1",
            "content": [{"type": "text", "text": "[server]\nport = 8080"}],
        },
        {"role": "assistant", "content": ""},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And what is in this screenshot?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
        {"role": "assistant", "content": "The port is 8080; the screenshot shows the same."},
        {"role": "user", "content": "Thanks. What next?"},
    ]


__all__ = [
    "LONG_SYSTEM_PROMPT",
    "at_every_offset",
    "content_shapes_history",
    "long_history",
    "point_history",
]
