"""Determinism (kit clause D1, SHOULD, kit practice for snapshot diffing).

Two fresh engines given the same input produce the same output once ``message_uid``
values are masked by first appearance (``<uid-1>``, ``<uid-2>``, ...).
"""

from __future__ import annotations

import copy
from typing import Any

from conformance.checks.engine_calls import compress_like_host, threshold_of
from conformance.expect import SHOULD, fail
from conformance.registry import check
from conformance.strategies import transcripts, uid_from_seed

UID_KEYS = ("message_uid", "_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid")


def mask_uids(value: Any, names: dict[str, str] = None) -> Any:
    """A copy of ``value`` with every uid in the uid fields replaced by ``<uid-N>`` (the first
    seen is 1)."""
    names = {} if names is None else names

    def name(u):
        if isinstance(u, str):
            names.setdefault(u, f"<uid-{len(names) + 1}>")
            return names[u]
        if isinstance(u, list):
            return [name(x) for x in u]
        if isinstance(u, dict):
            return {k: name(v) for k, v in u.items()}
        return u

    if isinstance(value, list):
        return [mask_uids(v, names) for v in value]
    if isinstance(value, dict):
        return {k: (name(v) if k in UID_KEYS else mask_uids(v, names)) for k, v in value.items()}
    return value


def committed(history, out):
    """What the host hands the engine next: ``out`` (or ``history``) plus a new user message,
    with a uid stamped on rows lacking one when the history uses uids (U6 insert, U10 flush)."""
    nxt = copy.deepcopy(out if isinstance(out, list) else history) + [
        {"role": "user", "content": "more"}
    ]
    if any(isinstance(m, dict) and "message_uid" in m for m in history):
        for i, m in enumerate(nxt):
            if isinstance(m, dict) and "message_uid" not in m:
                m["message_uid"] = uid_from_seed(4242, i)
    return nxt


@check(
    "D1",
    "same-input-same-output",
    level=SHOULD,
    kind="determinism",
    practice="kit",
    title="two fresh engines, same input: same compress() output (uids masked)",
    examples=4,
)
def check_d1_same_input_same_output(ctx):
    """D1 (SHOULD, kit practice): compress() twice in a row on two fresh engines gives equal
    masked outputs both times."""

    def body(draw):
        probe = ctx.new_engine()
        history = draw(
            transcripts(
                min_turns=1, min_tokens=threshold_of(probe, ctx.window // 2) + 500, system=True
            ),
            "history",
        )
        outs = []
        for _ in range(2):
            engine = ctx.new_engine()
            first = compress_like_host("D1", SHOULD, engine, history)
            second = compress_like_host("D1", SHOULD, engine, committed(history, first))
            outs.append(mask_uids([first, second]))
        if outs[0] != outs[1]:
            which = "first" if outs[0][0] != outs[1][0] else "second"
            fail(
                "D1",
                SHOULD,
                f"the {which} compress() output of two fresh engines on the same input",
                expected="equal outputs once uids are masked",
                got="different outputs",
                context="kit practice, for snapshot diffing: "
                "seed every random choice, no wall clock",
            )

    ctx.examples(body)
