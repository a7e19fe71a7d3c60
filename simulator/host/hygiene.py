"""Gateway session hygiene (B7): a pre-agent safety net before a gateway turn.

Triggers when the stored history has at least 4 messages, compression is enabled, and
the token figure is at least 85 % of the context window (``int(ctx * 0.85)``), or the
message count reaches ``compression.hygiene_hard_message_limit`` (default 5000). The
token figure is the last turn's real ``last_prompt_tokens`` when > 0 ("actual"), else a
rough character estimate (:func:`rough_tokens`, "estimated"). Hosts with a persisted usage
anchor (``hermes-0.22``) put it between the two: the last real prompt size plus a rough
estimate of the rows added since ("anchored"). The engine's own ``should_compress`` is not
consulted for this decision (as in Hermes' gateway).

After a hygiene pass that did not commit, ``hermes-0.22`` blocks hygiene for a cooldown that
grows with the failure streak: 300 s x1, x3, x9, at most 3600 s (virtual seconds,
:func:`failure_cooldown`); a committed pass ends the streak.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HYGIENE_TRIGGER_RATIO = 0.85
HYGIENE_WARNING_RATIO = 0.95
HYGIENE_MIN_MESSAGES = 4
HYGIENE_HARD_MESSAGE_LIMIT = 5000
#: 0.22's hygiene failure cooldown: base seconds, streak multipliers, ceiling (seconds).
HYGIENE_FAILURE_COOLDOWN_SECONDS = 300.0
HYGIENE_COOLDOWN_LADDER = (1, 3, 9)
HYGIENE_COOLDOWN_MAX_SECONDS = 3600.0


def failure_cooldown(streak: int, base: float = HYGIENE_FAILURE_COOLDOWN_SECONDS) -> float:
    """B7 on 0.22: the cooldown (seconds) after the ``streak``-th failed hygiene pass in a
    row: ``base`` x1, x3, x9 (the last multiplier from then on), at most 3600 s."""
    step = HYGIENE_COOLDOWN_LADDER[min(max(streak, 1), len(HYGIENE_COOLDOWN_LADDER)) - 1]
    return min(base * step, HYGIENE_COOLDOWN_MAX_SECONDS)


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
        source: "actual" (real usage), "anchored" (last real usage + rough delta) or
            "estimated" (rough estimate).
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
    anchored_tokens: int | None = None,
    cooling_down: bool = False,
) -> HygieneDecision:
    """B7: decide whether gateway hygiene compresses ``history`` before the agent runs.

    Args:
        history: the stored transcript (messages).
        context_length: the model window (tokens).
        last_prompt_tokens: the session's last real prompt size (tokens; <= 0 = unknown).
        compression_enabled: ``compression.enabled``.
        hard_message_limit: message-count valve.
        anchored_tokens: the persisted usage anchor's figure (tokens), or None (no anchor).
        cooling_down: a failure cooldown is active (0.22): hygiene does not run.
    """
    threshold = int(context_length * HYGIENE_TRIGGER_RATIO)
    if last_prompt_tokens and last_prompt_tokens > 0:
        tokens, source = int(last_prompt_tokens), "actual"
    elif anchored_tokens is not None:
        tokens, source = int(anchored_tokens), "anchored"
    else:
        tokens, source = rough_tokens(history), "estimated"
    if not compression_enabled:
        return HygieneDecision(False, tokens, source, threshold, "compression disabled")
    if len(history) < HYGIENE_MIN_MESSAGES:
        return HygieneDecision(
            False, tokens, source, threshold, f"fewer than {HYGIENE_MIN_MESSAGES} messages"
        )
    if cooling_down:
        return HygieneDecision(False, tokens, source, threshold, "failure cooldown active")
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
