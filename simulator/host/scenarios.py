"""Scripted host scenarios with measured outcomes (H6 cache stability).

:func:`run_cache_scenario` drives a 30-turn conversation (about 300 tokens a turn, in
topic blocks, system prompt under 10 % of the prompt) through a documented host with
prompt caching on a Claude model of the provider simulator, and reports
``cache_read_tokens / prompt_tokens`` summed over the calls after the first two. A
stable selection (H6) keeps that ratio high; a selection that reshuffles every call
loses the cache every call.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider

SYSTEM_PROMPT = (
    "You are a careful engineering assistant. Answer briefly, cite files you touch, "
    "and keep every decision traceable."
)

TOPICS = {
    "database": (
        "postgres schema migration index query transaction replica vacuum table column "
        "constraint foreign partition backup restore latency planner"
    ).split(),
    "frontend": (
        "react component button styling layout render props state hook router bundle "
        "accessibility contrast responsive animation webpack"
    ).split(),
    "deploy": (
        "kubernetes cluster helm container pipeline rollout canary ingress secret namespace "
        "autoscaler registry terraform manifest probe"
    ).split(),
}

#: Topic of each of the 30 turns: blocks, with a return to the first topic.
DEFAULT_PLAN: tuple[str, ...] = ("database",) * 12 + ("frontend",) * 10 + ("database",) * 8


def user_message(topic: str, turn: int, seed: int = 0, words: int = 240) -> str:
    """A deterministic ~240-token user message about ``topic`` (turn number and seed vary it)."""
    rng = random.Random(f"{seed}:{topic}:{turn}")
    vocab = TOPICS[topic]
    body = " ".join(rng.choice(vocab) for _ in range(words))
    return f"Turn {turn} on {topic}: {body}."


@dataclass
class CacheReport:
    """Measured prompt-cache reuse of one scenario run.

    Attributes:
        ratio: sum(cache_read_tokens) / sum(prompt_tokens) over the calls after the first two.
        prompt_tokens: per-call prompt tokens (all calls).
        cache_read_tokens: per-call cache reads (tokens).
        system_share: system prompt tokens / mean prompt tokens (over the measured calls).
        mean_turn_tokens: mean new tokens per turn (user + assistant).
    """

    ratio: float
    prompt_tokens: list[int] = field(default_factory=list)
    cache_read_tokens: list[int] = field(default_factory=list)
    system_share: float = 0.0
    mean_turn_tokens: float = 0.0


def run_cache_scenario(
    engine: Any,
    *,
    plan: Sequence[str] = DEFAULT_PLAN,
    seed: int = 0,
    model: str = "anthropic/claude-sonnet-4",
    context_length: int = 200_000,
    profile: Any = None,
) -> CacheReport:
    """Run the H6 scenario with ``engine`` (cloned for the agent) and measure cache reuse.

    Returns a :class:`CacheReport`; raises whatever the host raises for a broken engine.
    """
    from simulator.provider import tokens

    provider = Provider(seed=seed)
    config = HostConfig(seconds_per_turn=10.0, context_timeout_seconds=0)
    session = HostSession(
        engine,
        provider,
        model=model,
        context_length=context_length,
        system_prompt=SYSTEM_PROMPT,
        profile=profile,
        config=config,
        clone=True,
    )
    session.start()
    for turn, topic in enumerate(plan, 1):
        session.user_turn(user_message(topic, turn, seed))
    usages = [e.response.get("usage") or {} for e in provider.journal if e.status == 200]
    prompts = [int(u.get("prompt_tokens", 0)) for u in usages]
    reads = [int((u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)) for u in usages]
    measured_p, measured_r = prompts[2:], reads[2:]
    ratio = sum(measured_r) / sum(measured_p) if sum(measured_p) else 0.0
    system_tokens = tokens.count_text(SYSTEM_PROMPT)
    mean_prompt = sum(measured_p) / len(measured_p) if measured_p else 0.0
    turn_tokens = tokens.count_messages(session.history()) / max(len(plan), 1)
    return CacheReport(
        ratio, prompts, reads, system_tokens / mean_prompt if mean_prompt else 0.0, turn_tokens
    )
