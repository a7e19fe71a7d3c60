"""Determinism (kit clause D1, SHOULD, kit practice for snapshot diffing).

Two fresh engines given the same input produce the same output once ``message_uid``
values are masked by first appearance (``<uid-1>``, ``<uid-2>``, ...).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from conformance.authoring.expect import SHOULD, fail, short
from conformance.authoring.registry import check
from conformance.authoring.strategies import transcripts, uid_from_seed
from conformance.checks.engine_calls import compress_like_host, threshold_of

UID_KEYS = ("message_uid", "_absorbed_message_uids", "_tool_call_uids", "_tool_call_uid")
#: The shortest uid :func:`mask_uids` also masks inside text (Hermes' uids have 32 hex digits).
MIN_UID_IN_TEXT = 8


def mask_uids(value: Any, names: dict[str, str] = None) -> Any:
    """A copy of ``value`` with every uid replaced by ``<uid-N>`` (the first seen is 1).

    A uid is a string found in a uid field (:data:`UID_KEYS`, at any depth); once known it is
    masked wherever it occurs: in the uid fields, as the value of any other key (an engine's
    own ``_anchor_uid``), in a list, and inside any string (a summary that names it; uids of
    at least :data:`MIN_UID_IN_TEXT` characters, so a short one cannot eat prose). Uids are
    numbered in the order the uid fields show them, so a value seen elsewhere first gets the
    same name either way.
    """
    names = {} if names is None else names
    _collect_uids(value, names)
    long = sorted((u for u in names if len(u) >= MIN_UID_IN_TEXT), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(u) for u in long)) if long else None
    return _mask(value, names, pattern)


def _collect_uids(value: Any, names: dict[str, str]) -> None:
    def add(u: Any) -> None:
        if isinstance(u, str) and u:
            names.setdefault(u, f"<uid-{len(names) + 1}>")
        elif isinstance(u, list):
            for x in u:
                add(x)
        elif isinstance(u, dict):
            for x in u.values():
                add(x)

    if isinstance(value, list):
        for v in value:
            _collect_uids(v, names)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k in UID_KEYS:
                add(v)
            else:
                _collect_uids(v, names)


def _mask(value: Any, names: dict[str, str], pattern: Any) -> Any:
    if isinstance(value, list):
        return [_mask(v, names, pattern) for v in value]
    if isinstance(value, dict):
        return {k: _mask(v, names, pattern) for k, v in value.items()}
    if isinstance(value, str) and value in names:
        return names[value]
    if isinstance(value, str) and pattern is not None:
        return pattern.sub(lambda m: names[m.group(0)], value)
    return value


def first_difference(a: Any, b: Any, *, width: int = 60) -> str:
    """Where ``a`` and ``b`` (two outputs, already masked) first differ, for a message: the
    path (``message 3, 'content'``) and, for two strings, the character where they part with
    up to ``width`` characters of each around it, so the difference is on screen whatever its
    offset."""

    def walk(x: Any, y: Any, path: list[str]) -> str | None:
        if type(x) is not type(y):
            return f"{_where(path)}: {short(x, width)} vs {short(y, width)}"
        if isinstance(x, list):
            if len(x) != len(y):
                what = "messages" if not path else "items"
                return f"{_where(path)}: {len(x)} {what} instead of {len(y)}"
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                hit = walk(u, v, [*path, f"message {i}" if not path else f"[{i}]"])
                if hit:
                    return hit
            return None
        if isinstance(x, dict):
            for k in list(x) + [k for k in y if k not in x]:
                if k not in x or k not in y:
                    return (
                        f"{_where(path)}: key {k!r} only in the {'first' if k in x else 'second'}"
                    )
                hit = walk(x[k], y[k], [*path, repr(k)])
                if hit:
                    return hit
            return None
        if x == y:
            return None
        if isinstance(x, str):
            i = next(
                (n for n, (c, d) in enumerate(zip(x, y, strict=False)) if c != d),
                min(len(x), len(y)),
            )
            lo = max(0, i - width // 3)
            return (
                f"{_where(path)} differs at character {i}: "
                f"{_excerpt(x, lo, width)} vs {_excerpt(y, lo, width)}"
            )
        return f"{_where(path)}: {short(x, width)} vs {short(y, width)}"

    return walk(a, b, []) or "no difference"


def _where(path: list[str]) -> str:
    return ", ".join(path) if path else "the output"


def _excerpt(text: str, lo: int, width: int) -> str:
    part = text[lo : lo + width]
    return ("..." if lo else "") + repr(part) + ("..." if lo + width < len(text) else "")


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
            n = 0 if outs[0][0] != outs[1][0] else 1
            which = ("first", "second")[n]
            fail(
                "D1",
                SHOULD,
                f"the {which} compress() output of two fresh engines on the same input",
                expected="equal outputs once uids are masked",
                got=f"different outputs ({first_difference(outs[0][n], outs[1][n])})",
                context="kit practice, for snapshot diffing: "
                "seed every random choice, no wall clock",
            )

    ctx.examples(body)
