"""Gateway session hygiene (B7): a pre-agent safety net before a gateway turn.

Triggers when the stored history has at least 4 messages, compression is enabled, and
the token figure is at least 85 % of the context window (``int(ctx * 0.85)``), or the
message count reaches ``compression.hygiene_hard_message_limit`` (default 5000). The
token figure is the last turn's real ``last_prompt_tokens`` when > 0 ("actual"), else a
rough character estimate (:func:`rough_tokens`, "estimated"). The engine's own
``should_compress`` is not consulted for this decision (as in Hermes' gateway).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HYGIENE_TRIGGER_RATIO = 0.85
HYGIENE_WARNING_RATIO = 0.95
HYGIENE_MIN_MESSAGES = 4
HYGIENE_HARD_MESSAGE_LIMIT = 5000


def rough_tokens(messages: list[dict[str, Any]]) -> int:
    """Hermes' rough estimate (tokens): ceil(len(str(message dict)) / 4) summed over messages."""
    chars = sum(len(str(m)) for m in messages)
    return (chars + 3) // 4


@dataclass(frozen=True)
class HygieneDecision:
    """Whether hygiene compresses before the turn.

    Attributes:
        run: True when hygiene should compress now.
        tokens: the token figure used (tokens).
        source: "actual" (real usage) or "estimated" (rough estimate).
        threshold: ``int(context_length * 0.85)`` in tokens.
        reason: why it did or did not fire (for logs and checks).
    """

    run: bool
    tokens: int
    source: str
    threshold: int
    reason: str


def decide(
    history: list[dict[str, Any]],
    *,
    context_length: int,
    last_prompt_tokens: int,
    compression_enabled: bool,
    hard_message_limit: int = HYGIENE_HARD_MESSAGE_LIMIT,
) -> HygieneDecision:
    """B7: decide whether gateway hygiene compresses ``history`` before the agent runs.

    Args:
        history: the stored transcript (messages).
        context_length: the model window (tokens).
        last_prompt_tokens: the session's last real prompt size (tokens; <= 0 = unknown).
        compression_enabled: ``compression.enabled``.
        hard_message_limit: message-count valve.
    """
    threshold = int(context_length * HYGIENE_TRIGGER_RATIO)
    if last_prompt_tokens and last_prompt_tokens > 0:
        tokens, source = int(last_prompt_tokens), "actual"
    else:
        tokens, source = rough_tokens(history), "estimated"
    if not compression_enabled:
        return HygieneDecision(False, tokens, source, threshold, "compression disabled")
    if len(history) < HYGIENE_MIN_MESSAGES:
        return HygieneDecision(
            False, tokens, source, threshold, f"fewer than {HYGIENE_MIN_MESSAGES} messages"
        )
    if len(history) >= hard_message_limit:
        return HygieneDecision(
            True, tokens, source, threshold, f"message count >= {hard_message_limit}"
        )
    if tokens >= threshold:
        return HygieneDecision(
            True, tokens, source, threshold, f"{source} ~{tokens} tokens >= {threshold}"
        )
    return HygieneDecision(
        False, tokens, source, threshold, f"{source} ~{tokens} tokens < {threshold}"
    )
