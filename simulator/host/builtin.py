"""The built-in compressor the host falls back to (R1, R3, C3).

The host never imports an engine package: whoever builds a host may inject the built-in it
falls back to (``HostConfig.builtin_factory``, ``select_engine(builtin_factory=...)``). Without
one, the host uses a minimal built-in of its own (the conformance kit's scenario runs do):
threshold 0.50 of the context (B1), keeps the system prompt, a deterministic structured
summary of the middle (:func:`simulator.provider.replies.summarise`) and the last
``protect_last_n`` messages,
never splitting a tool call from its results (V2). It is enough for a session to go on when
the selected engine could not be used; it is not the B-clause reference.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from simulator.host import shim

log = logging.getLogger("simulator.host")

BUILTIN_NAME = "compressor"
SUMMARY_PREFIX = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
)

_minimal_class: type | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def minimal_compressor_class() -> type:
    """The host's own minimal built-in compressor class (a subclass of the ABC in use)."""
    global _minimal_class
    if _minimal_class is not None:
        return _minimal_class
    base = shim.context_engine_base()
    from simulator.provider.replies import summarise

    class MinimalBuiltinCompressor(base):  # type: ignore[misc, valid-type]
        """Minimal built-in compressor: system + summary of the middle + protected tail."""

        threshold_percent = 0.50
        protect_last_n = 20

        @property
        def name(self) -> str:
            return BUILTIN_NAME

        def update_from_response(self, usage: dict[str, Any]) -> None:
            usage = usage or {}
            self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)
            self.last_completion_tokens = int(usage.get("completion_tokens", 0) or 0)
            self.last_total_tokens = int(usage.get("total_tokens", 0) or 0)

        def should_compress(self, prompt_tokens: int | None = None) -> bool:
            tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
            return self.threshold_tokens > 0 and int(tokens or 0) >= self.threshold_tokens

        def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
            head = [dict(messages[0])] if messages and messages[0].get("role") == "system" else []
            body = list(messages[len(head) :])
            start = max(len(body) - self.protect_last_n, 0)
            while 0 < start < len(body) and body[start].get("role") == "tool":
                start -= 1
            if start <= 0:
                return messages
            middle = "\n".join(_text(m.get("content")) for m in body[:start])
            tail = [dict(m) for m in body[start:]]
            role = "assistant" if tail and tail[0].get("role") == "user" else "user"
            summary = {
                "role": role,
                "content": SUMMARY_PREFIX + "\n" + summarise(middle, focus_topic=focus_topic),
            }
            self.compression_count += 1
            return head + [summary] + tail

    _minimal_class = MinimalBuiltinCompressor
    return _minimal_class


def new_builtin(factory: Callable[[], Any] | None = None) -> Any:
    """A fresh built-in compressor (R1 default, R3 fallback, C3 fallback): ``factory()`` when a
    built-in was injected, else the host's minimal one (:func:`minimal_compressor_class`)."""
    return (factory or minimal_compressor_class())()
