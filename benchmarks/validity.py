"""A small V1-V4 validator for benchmark outputs and the compressor's unit tests.

Standard library only (the Hermes-side benchmark subprocess imports it). The kit's
conformance checks are the authority on V; this one serves benchmarks and tests.
"""

from __future__ import annotations

from typing import Any, Dict, List

ROLES = {"system", "user", "assistant", "tool"}


def problems(messages: List[Dict[str, Any]]) -> List[str]:
    """Return a list of V1-V4 violations (empty when the sequence is valid)."""
    out: List[str] = []
    pending: Dict[str, int] = {}
    answered: set = set()
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            out.append(f"V1 row {i}: bad role {m!r:.80}")
            continue
        role = m["role"]
        content = m.get("content")
        if role == "system" and i != 0:
            out.append(f"V4 row {i}: system prompt not first")
        if content is None and not (role == "assistant" and m.get("tool_calls")):
            out.append(f"V3 row {i}: {role} without content")
        if content is not None and not isinstance(content, (str, list)):
            out.append(f"V3 row {i}: content is {type(content).__name__}")
        if role != "tool" and pending:
            out.append(f"V2 row {i}: calls {sorted(pending)} unanswered before a {role} row")
            pending.clear()
        if role == "assistant":
            for call in m.get("tool_calls") or ():
                cid = call.get("id")
                if cid in pending or cid in answered:
                    out.append(f"V2 row {i}: duplicate call id {cid}")
                pending[cid] = i
        if role == "tool":
            cid = m.get("tool_call_id")
            if cid not in pending:
                out.append(f"V2 row {i}: orphan tool result {cid}")
            else:
                del pending[cid]
                answered.add(cid)
    if pending:
        out.append(f"V2 end: calls {sorted(pending)} unanswered")
    return out
