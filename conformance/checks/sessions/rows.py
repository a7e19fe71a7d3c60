"""What the session invariants judge rows by: the text of a row, its wire key (the row as the
provider gets it), which output rows are input rows kept or duplicated, which are new, and the
compress() call the checks make like the host."""

from __future__ import annotations

import json
import re
from typing import Any

from conformance.authoring.expect import v1_problems
from conformance.checks.engine_calls import (
    compress_like_host,
    skip_unless_compacts,
    threshold_of,
)
from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS, count_messages

#: Passes of the multi-compaction checks (A10, A11): "ten passes and more".
PASSES = 12


def text_parts(content: Any) -> list[str]:
    """The texts of a content value: ``[content]`` for a string, the text parts of a list."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p]
    return []


def flat_text(m: Any) -> str:
    """A row's text (its text parts joined by a space); "" for a non-dict."""
    return " ".join(text_parts(m.get("content"))) if isinstance(m, dict) else ""


def normalised(text: str) -> str:
    """``text`` without any whitespace: rows compare equal when an engine only re-wrapped them."""
    return re.sub(r"\s+", "", text)


def wire_key(m: Any) -> str:
    """A row as the provider sees it (no identity or ``_`` fields), canonical JSON."""
    if not isinstance(m, dict):
        return repr(m)
    row = {k: v for k, v in m.items() if k not in PERSISTENCE_ONLY_FIELDS and not k.startswith("_")}
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


def kept_pairs(history: list[dict[str, Any]], out: list[Any]) -> list[tuple[int, int]]:
    """``(input index, output index)`` of output rows that are input rows kept: the same role
    and the same call ids (assistant ``tool_calls``), the same tool_call_id and text (tool), or
    the same non-empty text whitespace aside (other rows), and the same message_uid when both
    carry one. Matched in order (kept rows keep their order), each input row once."""
    pairs = []
    after = 0  # kept rows keep their order: match forward only
    for j, o in enumerate(out):
        if not isinstance(o, dict):
            continue
        for i in range(after, len(history)):
            m = history[i]
            if m.get("role") != o.get("role"):
                continue
            uid = o.get("message_uid")
            if uid and m.get("message_uid") and uid != m["message_uid"]:
                continue
            if m.get("tool_calls"):
                ids_in = [c.get("id") for c in m["tool_calls"] if isinstance(c, dict)]
                calls = o.get("tool_calls")
                ids_out = (
                    [c.get("id") for c in calls if isinstance(c, dict)]
                    if isinstance(calls, list)
                    else None
                )
                same = ids_in == ids_out
            elif m.get("role") == "tool":
                same = m.get("tool_call_id") == o.get("tool_call_id") and normalised(
                    flat_text(m)
                ) == normalised(flat_text(o))
            else:
                t = normalised(flat_text(m))
                same = bool(t) and t == normalised(flat_text(o))
            if same:
                after = i + 1
                pairs.append((i, j))
                break
    return pairs


def duplicated_rows(history: list[dict[str, Any]], out: list[Any]) -> list[tuple[int, int]]:
    """``(input index, times in output)`` for input rows the output holds more often than the
    input does (V2's head/tail overlap)."""
    counts_in: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, m in enumerate(history):
        k = wire_key(m)
        counts_in[k] = counts_in.get(k, 0) + 1
        first.setdefault(k, i)
    counts_out: dict[str, int] = {}
    for o in out:
        k = wire_key(o)
        if k in counts_in:
            counts_out[k] = counts_out.get(k, 0) + 1
    return sorted((first[k], n) for k, n in counts_out.items() if n > counts_in[k])


def compacting_engine(ctx: Any, clause: str, level: str) -> tuple[Any, int]:
    """(a new engine, its compaction threshold in tokens; half the window when it declares
    none). Raises ``CheckSkipped`` for an engine that never compacts (``clause``, ``level``
    name the skip)."""
    skip_unless_compacts(ctx, clause, level)
    engine = ctx.new_engine()
    return engine, threshold_of(engine, ctx.window // 2)


def compacted(clause: str, level: str, engine: Any, history: list[dict[str, Any]]) -> Any:
    """compress() like the host; None when the output is not a V1-valid list (A4/V1 report)."""
    out = compress_like_host(clause, level, engine, history)
    if not isinstance(out, list) or v1_problems(out):
        return None
    return out


def where(history: list[dict[str, Any]], out: list[Any]) -> str:
    """The sizes a failure message gives: input messages and cl100k tokens, output messages."""
    return (
        f"history of {len(history)} messages ({count_messages(history)} tokens), "
        f"output of {len(out)}"
    )


def new_rows(history: list[dict[str, Any]], out: list[Any]) -> list[Any]:
    """Output rows found nowhere in the input as they are (a summary, a note, a rewritten
    system prompt, a cleared tool output)."""
    seen = {wire_key(m) for m in history}
    return [o for o in out if wire_key(o) not in seen]
