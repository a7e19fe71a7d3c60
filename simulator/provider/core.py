"""The in-process provider: OpenAI chat-completions shaped, deterministic (first cut).

``Provider.chat_completions(request)`` returns a response dict shaped like OpenAI's
``chat.completion`` object, with ``usage`` counted by the real tokenizer
(:mod:`simulator.provider.tokens`). Every request is journaled for checks; any
persistence-only field (U9) found on the wire is recorded in ``u9_leaks``.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from simulator.provider import tokens
from simulator.provider.replies import EchoReplies, ReplyPolicy, canonical_json

DEFAULT_MODEL = "anthropic/claude-sonnet-4"


class ProviderError(Exception):
    """A provider-shaped error: HTTP ``status`` and the provider's JSON ``body``."""

    def __init__(self, status: int, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None):
        super().__init__(f"{status}: {body.get('error', body)}")
        self.status = status
        self.body = body
        self.headers = headers or {}


@dataclass
class JournalEntry:
    """One request the provider received and what it answered."""

    index: int
    request: Dict[str, Any]
    status: int
    response: Dict[str, Any]


@dataclass
class Provider:
    """Deterministic in-process provider.

    Args:
        seed: reply seed; the same seed and requests give the same replies.
        replies: the reply mode (:class:`EchoReplies` by default).
        model: default model name when a request names none.
    """

    seed: int = 0
    replies: ReplyPolicy = field(default_factory=EchoReplies)
    model: str = DEFAULT_MODEL
    journal: List[JournalEntry] = field(default_factory=list)
    u9_leaks: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def chat_completions(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """Answer one chat-completions request (OpenAI shape).

        Raises:
            ProviderError: 400 for a malformed request.
        """
        with self._lock:
            index = len(self.journal)
            messages = request.get("messages")
            if not isinstance(messages, list) or not messages:
                body = {"error": {"message": "'messages' must be a non-empty array", "type": "invalid_request_error", "param": "messages", "code": None}}
                self.journal.append(JournalEntry(index, dict(request), 400, body))
                raise ProviderError(400, body)
            self._record_u9_leaks(index, messages)
            reply = self.replies.reply(request, index, self.seed)
            prompt = tokens.count_messages(messages) + tokens.count_tools(request.get("tools"))
            msg = reply.message()
            completion = tokens.count_content(msg.get("content")) + sum(
                tokens.count_text(str((c.get("function") or {}).get("arguments") or ""))
                for c in msg.get("tool_calls") or ()
            )
            rid = hashlib.sha256(f"{self.seed}:{index}:{canonical_json(messages)[:4096]}".encode()).hexdigest()[:24]
            response = {
                "id": f"chatcmpl-{rid}",
                "object": "chat.completion",
                "created": 1_700_000_000 + index,
                "model": request.get("model") or self.model,
                "choices": [{"index": 0, "message": msg, "finish_reason": reply.finish(), "logprobs": None}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                    "prompt_tokens_details": {"cached_tokens": 0},
                },
            }
            self.journal.append(JournalEntry(index, dict(request), 200, response))
            return response

    def _record_u9_leaks(self, index: int, messages: List[Any]) -> None:
        for i, m in enumerate(messages):
            if isinstance(m, Mapping):
                leaked = tokens.PERSISTENCE_ONLY_FIELDS.intersection(m)
                if leaked:
                    self.u9_leaks.append(f"request {index} message {i}: {sorted(leaked)}")
