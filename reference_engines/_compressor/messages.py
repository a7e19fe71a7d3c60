"""Message helpers of the reference compressor: content text, Phase-1 pruning, summary
rows, serialisation for the summariser, and tool-pair (orphan) repair.

Messages are OpenAI chat-format dicts (``role``, ``content``, ``tool_calls``,
``tool_call_id``). Nothing here mutates an input dict: rows that change are copied.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from reference_engines._compressor.constants import (
    CONTENT_HEAD_CHARS,
    CONTENT_MAX_CHARS,
    CONTENT_TAIL_CHARS,
    PRUNE_MIN_CHARS,
    PRUNED_TOOL_PLACEHOLDER,
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    TOOL_ARGS_HEAD_CHARS,
    TOOL_ARGS_MAX_CHARS,
)

Message = dict[str, Any]

#: B5: content of the stub result given to a call whose result was removed.
STUB_TOOL_RESULT = "[Tool result removed during context compaction]"


def content_text(content: Any) -> str:
    """The text of a message ``content``: a string, a list of parts, or None.

    Text parts (``{"type": "text", "text": ...}``) are joined with newlines; image parts
    read ``[image]``; other parts read ``[<type>]``. None gives ``""``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict):
                if part.get("type") == "text":
                    out.append(str(part.get("text") or ""))
                else:
                    out.append(f"[{part.get('type') or 'part'}]")
            else:
                out.append(str(part))
        return "\n".join(out)
    return str(content)


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_value(v) for v in value]
    if isinstance(value, (str, int, float, bool, type(None), tuple)):
        return value
    return copy.deepcopy(value)


def fresh_copy(message: Mapping[str, Any]) -> Message:
    """A deep copy of one message (dicts and lists copied, strings shared), so the
    output never aliases input dicts or lists."""
    return _copy_value(dict(message))


# -- B2: Phase 1 pruning --------------------------------------------------------------


def is_prunable(message: Mapping[str, Any]) -> bool:
    """B2: True for a ``tool`` result whose content text is over 200 characters."""
    if message.get("role") != "tool":
        return False
    text = content_text(message.get("content"))
    return len(text) > PRUNE_MIN_CHARS and text != PRUNED_TOOL_PLACEHOLDER


def pruned(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """B2: the Phase-1 view of a row outside the protected tail.

    A prunable tool result becomes a shallow copy whose ``content`` is the placeholder
    ``[Old tool output cleared to save context space]``; every other row is returned as is.
    """
    if not is_prunable(message):
        return message
    view = dict(message)
    view["content"] = PRUNED_TOOL_PLACEHOLDER
    return view


# -- B5/B6: summary rows -------------------------------------------------------------


def summary_block(summary: str) -> str:
    """B5: the text of a summary row: prefix line, summary body, end marker."""
    return f"{SUMMARY_PREFIX}\n\n{summary.strip()}\n\n{SUMMARY_END_MARKER}"


def split_summary(message: Mapping[str, Any]) -> tuple[str | None, Any]:
    """B6: split a row into (summary body, remaining content).

    A summary row is a user or assistant row whose text starts with ``SUMMARY_PREFIX``:
    standalone (content is the whole block), or merged in front of a tail row's own
    content (string: block, blank line, own text; list: a first text part holding the
    block, then the row's own parts). Returns ``(None, content)`` for any other row, and
    ``(body, remainder)`` for a summary row, where ``remainder`` is the row's own content
    (``""`` for a standalone summary).
    """
    content = message.get("content")
    if message.get("role") not in ("user", "assistant"):
        return None, content
    if isinstance(content, list):
        if not content or not isinstance(content[0], dict) or content[0].get("type") != "text":
            return None, content
        first = str(content[0].get("text") or "")
        if not first.startswith(SUMMARY_PREFIX):
            return None, content
        return _body_of(first), (copy.deepcopy(content[1:]) or "")
    text = content_text(content)
    if not text.startswith(SUMMARY_PREFIX):
        return None, content
    end = text.find(SUMMARY_END_MARKER)
    remainder = text[end + len(SUMMARY_END_MARKER) :].lstrip("\n") if end >= 0 else ""
    return _body_of(text), remainder


def _body_of(text: str) -> str:
    body = text[len(SUMMARY_PREFIX) :]
    end = body.find(SUMMARY_END_MARKER)
    if end >= 0:
        body = body[:end]
    return body.strip()


def summary_body(message: Mapping[str, Any]) -> str | None:
    """B6: the body of a summary this engine wrote (see :func:`split_summary`), or None."""
    return split_summary(message)[0]


def without_summary(message: Mapping[str, Any]) -> Mapping[str, Any]:
    """The row with a merged-in summary block removed (a shallow copy), or the row itself."""
    body, remainder = split_summary(message)
    if body is None:
        return message
    view = dict(message)
    view["content"] = remainder
    return view


def is_pure_summary(message: Mapping[str, Any]) -> bool:
    """B6: a row that holds only a summary (no text or tool calls of its own)."""
    body, remainder = split_summary(message)
    return (
        body is not None and not content_text(remainder).strip() and not message.get("tool_calls")
    )


def is_real_user(message: Mapping[str, Any]) -> bool:
    """B3: a user row with text of its own (a summary row counts only for merged-in text)."""
    if message.get("role") != "user":
        return False
    body, remainder = split_summary(message)
    return body is None or bool(content_text(remainder).strip())


def prepend_text(content: Any, text: str) -> Any:
    """Return ``content`` with ``text`` (plus a blank line) put first; never mutates."""
    if content is None or content == "":
        return text
    if isinstance(content, list):
        return [{"type": "text", "text": text}] + copy.deepcopy(content)
    return f"{text}\n\n{content_text(content)}"


def append_text(content: Any, text: str) -> Any:
    """Return ``content`` with ``text`` appended after a blank line; never mutates."""
    if content is None or content == "":
        return text
    if isinstance(content, list):
        return copy.deepcopy(content) + [{"type": "text", "text": text}]
    return f"{content_text(content)}\n\n{text}"


# -- Phase 3: serialisation for the summariser ----------------------------------------


def _clip(text: str, limit: int, head: int, tail: int) -> str:
    if len(text) <= limit:
        return text
    end = text[len(text) - tail :] if tail > 0 else ""
    return f"{text[:head]}\n...[{len(text) - head - tail} chars omitted]...\n{end}"


def serialise_parts(message: Mapping[str, Any]) -> list[str]:
    """One row as summariser input, as text parts: a label line, the text, the tool calls.

    The label reads ``\n[role]`` (``\n[tool result <id>]`` for a result; the leading
    newline leaves a blank line between rows once parts are joined with newlines).
    Content is clipped to 6000 chars (first 4000 + last 1500) and each tool call's
    arguments to 1500 chars (first 1200). Unclipped text and arguments are the row's own
    string objects, so their cl100k counts are cache hits once the row was counted.
    """
    role = str(message.get("role") or "unknown")
    label = (
        f"\n[tool result {message.get('tool_call_id') or '?'}]" if role == "tool" else f"\n[{role}]"
    )
    parts = [label]
    text = content_text(message.get("content"))
    if text:
        parts.append(_clip(text, CONTENT_MAX_CHARS, CONTENT_HEAD_CHARS, CONTENT_TAIL_CHARS))
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            fn = call.get("function") or {}
            parts.append(f"[tool call {call.get('id') or '?'}] {fn.get('name') or ''}")
            args = str(fn.get("arguments") or "")
            if args:
                parts.append(_clip(args, TOOL_ARGS_MAX_CHARS, TOOL_ARGS_HEAD_CHARS, 0))
    return parts


def serialise(message: Mapping[str, Any]) -> str:
    """One row as summariser input text: :func:`serialise_parts` joined with newlines."""
    return "\n".join(serialise_parts(message)).lstrip("\n")


# -- B5: tool-pair repair ---------------------------------------------------------------


def _call_ids(message: Mapping[str, Any]) -> list[str]:
    ids = []
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and call.get("id"):
            ids.append(str(call["id"]))
    return ids


def repair_tool_pairs(rows: Iterable[Message], *, in_flight: bool = False) -> list[Message]:
    """B5/V2: drop tool results whose call is gone; give calls whose result is gone a stub.

    One pass, pairing per occurrence (seeds, U8; docs/contract-notes.md 1.2): an id that
    occurs k times in one assistant row's ``tool_calls`` is owed k results. A call's
    results must follow it in the contiguous block of ``tool`` rows right after its
    assistant row; a result anywhere else, one more than the calls owed, or a result for
    an unknown id is dropped. After each block, every call occurrence of the assistant
    row that got no result receives a stub ``tool`` row (content ``STUB_TOOL_RESULT``),
    in ``tool_calls`` order. With ``in_flight`` (the input ended on a tool chain whose calls
    still run, V2) the last block's unanswered calls get no stub: their results are not
    appended yet, so they are not orphans. Rows passed in are owned by the caller's output
    (already copies); stubs are new.
    """
    out: list[Message] = []
    owed: list[str] = []  # call ids of the open assistant row still without a result, in order

    def close_block() -> None:
        for cid in owed:
            out.append({"role": "tool", "tool_call_id": cid, "content": STUB_TOOL_RESULT})
        owed.clear()

    for row in rows:
        role = row.get("role")
        if role == "tool":
            cid = row.get("tool_call_id")
            if cid in owed:
                owed.remove(cid)  # the first occurrence still owed
                out.append(row)
            continue  # orphan or surplus result: removed
        close_block()
        out.append(row)
        if role == "assistant":
            owed.extend(_call_ids(row))
    if in_flight:
        owed.clear()  # V2: the trailing calls are in flight, not orphans
    close_block()
    return out
