"""Convert an Anthropic Messages request into the OpenAI chat shape reply modes read.

Reply modes (:mod:`simulator.provider.replies`) see every request in OpenAI chat shape;
this module gives them that view of a ``/v1/messages`` request: ``system`` becomes a
system message, ``tool_use`` blocks become ``tool_calls`` and ``tool_result`` blocks
become ``role: "tool"`` messages. The view is for reading only, never sent anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def anthropic_view(request: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI-shaped copy of an Anthropic request: ``{"model", "messages", "tools"}``.

    Expects an already validated request; unknown blocks are skipped.
    """
    out: list[dict[str, Any]] = []
    system = request.get("system")
    if system:
        out.append({"role": "system", "content": _text(system)})
    for m in request.get("messages") or ():
        role = m.get("role")
        content = m.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        texts, calls = [], []
        for b in content or ():
            t = b.get("type")
            if t == "text":
                texts.append(b.get("text", ""))
            elif t == "tool_use":
                calls.append(
                    {
                        "id": b.get("id"),
                        "type": "function",
                        "function": {
                            "name": b.get("name"),
                            "arguments": json.dumps(b.get("input", {}), sort_keys=True),
                        },
                    }
                )
            elif t == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": b.get("tool_use_id"),
                        "content": _text(b.get("content", "")),
                    }
                )
        if role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        elif texts:
            out.append({"role": "user", "content": "\n".join(texts)})
    return {"model": request.get("model"), "messages": out, "tools": request.get("tools")}
