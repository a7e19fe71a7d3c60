"""Covers nothing itself: shared helpers for the reference_engines.lcm tests (conversations, a
V1-V4 validator, a host stand-in).

Holds no tests itself. Conversations are built from a seeded ``random.Random`` (no global
random) and uids from the same generator, so every run sees the same bytes.
"""

from __future__ import annotations

import json
import random
from typing import Any

from reference_engines.lcm.plan import tool_pairs_ok

ROLES = ("system", "user", "assistant", "tool")

WORDS = (
    "deploy kubernetes cluster database migration parser cache token budget invoice report "
    "refactor schema endpoint latency backup retry timeout queue worker config secret path"
).split()


def uid(rng: random.Random) -> str:
    """A 32-lowercase-hex uid (U1 format) from ``rng``."""
    return f"{rng.getrandbits(128):032x}"


def sentence(rng: random.Random, n: int = 8) -> str:
    """A sentence of ``n`` words from a small vocabulary, ending in a period."""
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def turn(
    rng: random.Random, index: int, *, with_tool: bool, with_uid: bool = True
) -> list[dict[str, Any]]:
    """One user turn: user, optionally assistant tool call(s) + results, then an assistant reply."""
    out: list[dict[str, Any]] = [{"role": "user", "content": f"Turn {index}: " + sentence(rng)}]
    if with_tool:
        calls = [
            {
                "id": f"call_{index}_{k}",
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"src/m{index}_{k}.py"}),
                },
            }
            for k in range(rng.randint(1, 2))
        ]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "content": f"result of {c['id']}: " + sentence(rng, 12),
                }
            )
    out.append({"role": "assistant", "content": f"Answer {index}: " + sentence(rng, 10)})
    if with_uid:
        for m in out:
            m["message_uid"] = uid(rng)
    return out


def conversation(
    seed: int, turns: int, *, system: bool = True, tool_every: int = 3
) -> list[dict[str, Any]]:
    """A deterministic transcript of ``turns`` turns (tool calls every ``tool_every`` turns)."""
    rng = random.Random(seed)
    msgs: list[dict[str, Any]] = []
    if system:
        msgs.append(
            {"role": "system", "content": "You are a helpful agent.", "message_uid": uid(rng)}
        )
    for i in range(turns):
        msgs.extend(turn(rng, i, with_tool=(i % tool_every == 1)))
    return msgs


def validate_sequence(messages: list[dict[str, Any]]) -> list[str]:
    """Problems with V1-V4 in ``messages``; [] when the list is a valid OpenAI sequence."""
    problems: list[str] = []
    if not isinstance(messages, list):
        return [f"V1: not a list but {type(messages).__name__}"]
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            problems.append(
                f"V1: message {i} has role {m.get('role') if isinstance(m, dict) else m!r}"
            )
            continue
        content = m.get("content")
        if content is None:
            if not (m["role"] == "assistant" and m.get("tool_calls")):
                problems.append(f"V3: message {i} ({m['role']}) has no content")
        elif not isinstance(content, (str, list)):
            problems.append(f"V3: message {i} content is {type(content).__name__}")
        if m["role"] == "system" and i != 0:
            problems.append(f"V4: system message at index {i}")
    problems += [f"V2: {p}" for p in tool_pairs_ok(messages)]
    return problems


def carrier_of(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The LCM summary carrier in ``messages`` (the message whose content starts with the tag)."""
    for m in messages:
        if isinstance(m.get("content"), str) and m["content"].startswith("[LCM summary]"):
            return m
    return None


def top_node_id(carrier: dict[str, Any]) -> str:
    """The ``Top node: lcm_...`` id written in a carrier's text."""
    return carrier["content"].split("Top node: ", 1)[1].split()[0]


def expand_all(engine, node_id: str, page: int = 500) -> list[dict[str, Any]]:
    """Every message behind ``node_id`` via ``lcm_expand``, following ``next_offset`` pages."""
    out: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        reply = json.loads(
            engine.handle_tool_call(
                "lcm_expand", {"node_id": node_id, "offset": offset, "limit": page}
            )
        )
        assert "error" not in reply, reply
        out.extend(reply["messages"])
        offset = reply["next_offset"]
    return out


def commit(
    engine, history: list[dict[str, Any]], output: list[dict[str, Any]], rng: random.Random
) -> list[dict[str, Any]]:
    """Play the host's commit of a compress() result: mint uids for rows without one (U1, U6),
    then let the engine observe the committed transcript (on_turn_complete, TS2)."""
    for m in output:
        if not m.get("message_uid"):
            m["message_uid"] = uid(rng)
    engine.on_turn_complete(list(output), usage=None)
    return output
