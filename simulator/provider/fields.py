"""Which keys a message may carry on the wire: U9 identity fields at any depth, unknown keys.

The persistence-only identity fields of clause U9 (``message_uid``,
``_absorbed_message_uids``, ``_tool_call_uids``, ``_tool_call_uid``) must never reach a
provider. :func:`scan_openai_message` and :func:`scan_anthropic_message` find them
anywhere inside a message: on the message, in content parts, in ``tool_calls`` entries
and their ``function`` objects, in nested ``tool_result`` content, in ``image_url`` or
``source`` objects. Tool *arguments* are payload, not message structure: an OpenAI
``function.arguments`` string is not parsed and an Anthropic ``tool_use.input`` object is
not searched, so a tool whose parameter is called ``message_uid`` is not a leak.

They also list keys outside the message schema (e.g. ``timestamp``, ``raw``) on a
message, a content part or block, a tool call or its ``function``. The schema below is
permissive where real clients round-trip provider fields (OpenRouter ``reasoning``,
``reasoning_details``; streamed ``index`` on tool calls). Paths use the form
``messages[3].content[1]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS

_U9 = PERSISTENCE_ONLY_FIELDS
_CC = "cache_control"

OPENAI_MESSAGE_KEYS = frozenset(
    {
        "role",
        "content",
        "name",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "refusal",
        "audio",
        _CC,
        "reasoning",
        "reasoning_content",
        "reasoning_details",
    }
)
OPENAI_PART_KEYS = {
    "text": frozenset({"type", "text", _CC}),
    "image_url": frozenset({"type", "image_url", _CC}),
    "input_audio": frozenset({"type", "input_audio", _CC}),
    "file": frozenset({"type", "file", _CC}),
    "refusal": frozenset({"type", "refusal", _CC}),
    "audio": frozenset({"type", "audio", "input_audio", _CC}),
}
OPENAI_TOOL_CALL_KEYS = frozenset({"id", "type", "function", "index"})
OPENAI_FUNCTION_KEYS = frozenset({"name", "arguments"})

ANTHROPIC_MESSAGE_KEYS = frozenset({"role", "content"})
ANTHROPIC_BLOCK_KEYS = {
    "text": frozenset({"type", "text", _CC, "citations"}),
    "image": frozenset({"type", "source", _CC}),
    "document": frozenset({"type", "source", "title", "context", "citations", _CC}),
    "tool_use": frozenset({"type", "id", "name", "input", _CC}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", _CC}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
ANTHROPIC_SYSTEM_BLOCK_KEYS = frozenset({"type", "text", _CC, "citations"})


class Findings:
    """What one scan found.

    Attributes:
        u9: ``(path, [field names])`` per object carrying persistence-only fields.
        unknown: ``path.key`` per key outside the message schema (U9 fields excluded).
    """

    __slots__ = ("u9", "unknown")

    def __init__(self) -> None:
        self.u9: list[tuple[str, list[str]]] = []
        self.unknown: list[str] = []

    def check(self, obj: Mapping[str, Any], path: str, allowed: frozenset[str] | None) -> None:
        """Record U9 fields of ``obj`` and, when ``allowed`` is given, its unknown keys."""
        if not _U9.isdisjoint(obj):
            self.u9.append((path, sorted(_U9.intersection(obj))))
        if allowed is not None:
            for key in obj:
                if key not in allowed and key not in _U9:
                    self.unknown.append(f"{path}.{key}")

    def walk(self, value: Any, path: str) -> None:
        """Record U9 fields in every object nested anywhere in ``value`` (iteratively)."""
        stack = [(value, path)]
        while stack:
            v, p = stack.pop()
            if isinstance(v, Mapping):
                if not _U9.isdisjoint(v):
                    self.u9.append((p, sorted(_U9.intersection(v))))
                for k, sub in v.items():
                    if isinstance(sub, (Mapping, list)):
                        stack.append((sub, f"{p}.{k}"))
            elif isinstance(v, list):
                for n, sub in enumerate(v):
                    if isinstance(sub, (Mapping, list)):
                        stack.append((sub, f"{p}[{n}]"))


def _walk_values(found: Findings, obj: Mapping[str, Any], path: str, skip: str = "") -> None:
    for k, sub in obj.items():
        if k != skip and isinstance(sub, (Mapping, list)):
            found.walk(sub, f"{path}.{k}")


def scan_openai_message(m: Mapping[str, Any], i: int, found: Findings) -> None:
    """Add U9 fields and unknown keys of OpenAI-format message ``m`` (index ``i``)."""
    path = f"messages[{i}]"
    found.check(m, path, OPENAI_MESSAGE_KEYS)
    for key, value in m.items():
        sub = f"{path}.{key}"
        if key == "content" and isinstance(value, list):
            for k, part in enumerate(value):
                if isinstance(part, Mapping):
                    p = f"{path}.content[{k}]"
                    found.check(part, p, OPENAI_PART_KEYS.get(part.get("type")))  # type: ignore[arg-type]
                    _walk_values(found, part, p)
        elif key == "tool_calls" and isinstance(value, list):
            for j, call in enumerate(value):
                if isinstance(call, Mapping):
                    p = f"{path}.tool_calls[{j}]"
                    found.check(call, p, OPENAI_TOOL_CALL_KEYS)
                    fn = call.get("function")
                    if isinstance(fn, Mapping):
                        found.check(fn, f"{p}.function", OPENAI_FUNCTION_KEYS)
                        _walk_values(found, fn, f"{p}.function")
                    _walk_values(found, call, p, skip="function")
        elif isinstance(value, (Mapping, list)):
            found.walk(value, sub)


def scan_anthropic_message(m: Mapping[str, Any], i: int, found: Findings) -> None:
    """Add U9 fields and unknown keys of Anthropic-format message ``m`` (index ``i``)."""
    path = f"messages[{i}]"
    found.check(m, path, ANTHROPIC_MESSAGE_KEYS)
    for key, value in m.items():
        if key == "content" and isinstance(value, list):
            _scan_blocks(value, f"{path}.content", found)
        elif isinstance(value, (Mapping, list)):
            found.walk(value, f"{path}.{key}")


def _scan_blocks(blocks: list[Any], path: str, found: Findings) -> None:
    for k, blk in enumerate(blocks):
        if not isinstance(blk, Mapping):
            continue
        p = f"{path}[{k}]"
        btype = blk.get("type")
        found.check(blk, p, ANTHROPIC_BLOCK_KEYS.get(btype))  # type: ignore[arg-type]
        for key, value in blk.items():
            if btype == "tool_use" and key == "input":
                continue  # tool arguments are payload
            if btype == "tool_result" and key == "content" and isinstance(value, list):
                _scan_blocks(value, f"{p}.content", found)
            elif isinstance(value, (Mapping, list)):
                found.walk(value, f"{p}.{key}")


def scan_anthropic_system(system: list[Any], found: Findings) -> None:
    """Add U9 fields and unknown keys of an Anthropic ``system`` block list to ``found``."""
    for k, blk in enumerate(system):
        if isinstance(blk, Mapping):
            found.check(blk, f"system[{k}]", ANTHROPIC_SYSTEM_BLOCK_KEYS)
            _walk_values(found, blk, f"system[{k}]")
