"""Response bodies and SSE stream bytes, OpenAI- and Anthropic-shaped.

Everything here is a pure function of its arguments, and JSON is written compactly with
a fixed key order, so the same reply gives byte-identical bodies and stream bytes in any
process.
"""

from __future__ import annotations

import json
import re
from typing import Any

_WORD_RE = re.compile(r"\S+\s*|\s+")


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON text (insertion key order, UTF-8 kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def text_pieces(text: str, max_pieces: int = 12) -> list[str]:
    """Split ``text`` into at most ``max_pieces`` word-aligned stream deltas (joined: ``text``)."""
    if not text:
        return []
    words = _WORD_RE.findall(text)
    per = max(1, -(-len(words) // max_pieces))
    return ["".join(words[k : k + per]) for k in range(0, len(words), per)]


def _arg_pieces(args: str, size: int = 64) -> list[str]:
    return [args[k : k + size] for k in range(0, len(args), size)] or [""]


# -- OpenAI ---------------------------------------------------------------------------------
def openai_completion(
    rid: str, created: int, model: str, message: dict[str, Any], finish: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """A ``chat.completion`` object (dict)."""
    msg = {"role": "assistant", "content": message.get("content"), "refusal": None}
    if message.get("tool_calls"):
        msg["tool_calls"] = message["tool_calls"]
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
        "usage": usage,
        "system_fingerprint": "fp_simulator",
    }


def openai_stream(
    rid: str,
    created: int,
    model: str,
    message: dict[str, Any],
    finish: str,
    usage: dict[str, Any] | None,
) -> list[bytes]:
    """SSE events (``data: ...\\n\\n`` bytes) of a streamed chat completion.

    With ``usage`` (``stream_options.include_usage``) every chunk carries ``"usage":null``
    and one last chunk with ``"choices":[]`` carries the usage, before ``data: [DONE]``.
    """
    head = (
        '{"id":'
        + dumps(rid)
        + ',"object":"chat.completion.chunk","created":'
        + str(created)
        + ',"model":'
        + dumps(model)
        + ',"system_fingerprint":"fp_simulator","choices":[{"index":0,"delta":'
    )
    tail_none = ',"logprobs":null,"finish_reason":null}]' + (
        ',"usage":null}' if usage is not None else "}"
    )
    out = [
        (
            "data: "
            + head
            + '{"role":"assistant","content":"","refusal":null}'
            + tail_none
            + "\n\n"
        ).encode()
    ]
    for piece in text_pieces(message.get("content") or ""):
        out.append(
            ("data: " + head + '{"content":' + dumps(piece) + "}" + tail_none + "\n\n").encode()
        )
    for k, call in enumerate(message.get("tool_calls") or ()):
        fn = call["function"]
        first = {
            "tool_calls": [
                {
                    "index": k,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": fn["name"], "arguments": ""},
                }
            ]
        }
        out.append(("data: " + head + dumps(first) + tail_none + "\n\n").encode())
        for piece in _arg_pieces(fn["arguments"]):
            d = {"tool_calls": [{"index": k, "function": {"arguments": piece}}]}
            out.append(("data: " + head + dumps(d) + tail_none + "\n\n").encode())
    out.append(
        (
            "data: "
            + head
            + '{},"logprobs":null,"finish_reason":'
            + dumps(finish)
            + "}]"
            + (',"usage":null}' if usage is not None else "}")
            + "\n\n"
        ).encode()
    )
    if usage is not None:
        out.append(
            (
                "data: "
                + head[: head.index(',"choices":')]
                + ',"choices":[],"usage":'
                + dumps(usage)
                + "}\n\n"
            ).encode()
        )
    out.append(b"data: [DONE]\n\n")
    return out


def openai_stream_error(status: int, message: str) -> bytes:
    """OpenRouter-style mid-stream error chunk (the openai SDK raises ``APIError`` on it)."""
    return (
        "data: "
        + dumps(
            {
                "error": {
                    "code": status,
                    "message": message,
                    "metadata": {"error_type": "provider_error"},
                }
            }
        )
        + "\n\n"
    ).encode()


# -- Anthropic ------------------------------------------------------------------------------
def anthropic_content(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Anthropic content blocks for an OpenAI-format assistant message (``call_x``→``toolu_x``)."""
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"] or "{}")
        except ValueError:
            args = {"_raw": fn["arguments"]}
        cid = call["id"]
        tid = "toolu_" + cid[5:] if cid.startswith("call_") else cid
        blocks.append({"type": "tool_use", "id": tid, "name": fn["name"], "input": args})
    return blocks


def anthropic_message(
    mid: str, model: str, content: list[dict[str, Any]], stop_reason: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """A Messages API ``message`` object (dict)."""
    return {
        "id": mid,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _event(name: str, payload: dict[str, Any]) -> bytes:
    return ("event: " + name + "\ndata: " + dumps(payload) + "\n\n").encode()


def anthropic_stream(
    mid: str, model: str, content: list[dict[str, Any]], stop_reason: str, usage: dict[str, Any]
) -> list[bytes]:
    """SSE events of a streamed Messages API answer, in the API's order.

    ``message_start`` carries the input-side usage (``output_tokens: 1``); ``message_delta``
    carries the final usage (output tokens cumulative, input fields repeated).
    """
    start_usage = dict(usage, output_tokens=1)
    out = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": anthropic_message(mid, model, [], None, start_usage),
            },
        )
    ]
    for k, blk in enumerate(content):
        if blk["type"] == "text":
            out.append(
                _event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": k,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            if k == 0:
                out.append(_event("ping", {"type": "ping"}))
            for piece in text_pieces(blk["text"]):
                out.append(
                    _event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": k,
                            "delta": {"type": "text_delta", "text": piece},
                        },
                    )
                )
        else:
            out.append(
                _event(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": k,
                        "content_block": {
                            "type": "tool_use",
                            "id": blk["id"],
                            "name": blk["name"],
                            "input": {},
                        },
                    },
                )
            )
            if k == 0:
                out.append(_event("ping", {"type": "ping"}))
            for piece in _arg_pieces(dumps(blk["input"])):
                out.append(
                    _event(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": k,
                            "delta": {"type": "input_json_delta", "partial_json": piece},
                        },
                    )
                )
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": k}))
    out.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": usage,
            },
        )
    )
    out.append(_event("message_stop", {"type": "message_stop"}))
    return out


def anthropic_stream_error(type_: str = "overloaded_error", message: str = "Overloaded") -> bytes:
    """An in-stream ``event: error`` (sent after a 200 when the stream fails)."""
    return _event("error", {"type": "error", "error": {"type": type_, "message": message}})
