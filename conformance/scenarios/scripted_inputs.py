"""The inputs a scenario file scripts, as the reference host and the provider simulator take them.

:func:`host_config`: the host's configuration from the file's ``host`` block.
:class:`ScriptedUser`: the texts of the ``user`` steps (given, or generated from a topic and a
size). :class:`ScenarioReplies`: the provider's reply policy of a scenario run (the current
turn's scripted replies, the B4 summary for a summary request, else an echo).
:func:`generated_text`: the deterministic filler a file's ``tool_outputs`` asks for by size.
:func:`step_brief`: what a step's label shows of its value.
"""

from __future__ import annotations

import random
from typing import Any

from simulator.host.scenarios import user_message
from simulator.host.session import HostConfig
from simulator.provider.replies import (
    EchoReplies,
    Reply,
    ReplyPolicy,
    is_summary_request,
    request_text,
    summarise,
)

_WORDS = (
    "alpha beta gamma delta config parser request index module handler cache token budget "
    "session compress summary output result record field value error retry build deploy"
).split()


class ScenarioReplies(ReplyPolicy):
    """Reply mode of a scenario: the current turn's scripted replies, then echo.

    Summary requests get the B4 summary (:func:`summarise`). A fault answers without
    consuming a scripted reply (the provider never asks the policy then).
    """

    def __init__(self) -> None:
        self.queue: list[Reply] = []
        self._echo = EchoReplies()

    def load(self, replies: list[Any]) -> None:
        """Queue this turn's replies (text or ``{content, tool_calls, finish_reason}``)."""
        self.queue = [
            Reply(content=r)
            if isinstance(r, str)
            else Reply(
                content=r.get("content"),
                tool_calls=[dict(c) for c in r.get("tool_calls") or ()],
                finish_reason=r.get("finish_reason"),
            )
            for r in replies
        ]

    def reply(self, request, index, seed):
        """The next scripted reply, a B4 summary for a summary request, or an echo."""
        messages = request.get("messages") or []
        if is_summary_request(messages):
            return Reply(content=summarise(request_text(messages)))
        if self.queue:
            return self.queue.pop(0)
        return self._echo.reply(request, index, seed)


def generated_text(n_bytes: int, seed: Any) -> str:
    """Deterministic filler of about ``n_bytes`` bytes (ASCII words, newline every 12 words)."""
    rng = random.Random(f"tool-output:{seed}")
    parts: list[str] = []
    size = 0
    while size < n_bytes:
        word = rng.choice(_WORDS)
        parts.append(word + ("\n" if len(parts) % 12 == 11 else " "))
        size += len(parts[-1])
    return "".join(parts)[:n_bytes]


def host_config(host: dict[str, Any], timeout: float | None) -> HostConfig:
    """The reference host's configuration for a scenario file's ``host`` block: its
    ``compression`` settings (``in_place``, ``failure_cooldown_seconds`` in seconds, the rest
    as :meth:`HostConfig.from_config` reads them) and ``max_retries``, ``fallback_model``,
    ``fallback_context_length``, ``seconds_per_turn``. ``timeout`` (seconds, the kit's limit of
    one engine call; None: none given) bounds the host's compaction timeout (an inline 0
    stays 0) and its timeout limit."""
    config = HostConfig.from_config({"compression": host.get("compression") or {}})
    comp = host.get("compression") or {}
    if "in_place" in comp:
        config.compression_in_place = bool(comp["in_place"])
    if "failure_cooldown_seconds" in comp:
        config.failure_cooldown_seconds = float(comp["failure_cooldown_seconds"])
    for key in ("max_retries", "fallback_model", "fallback_context_length", "seconds_per_turn"):
        if key in host:
            setattr(config, key, host[key])
    if timeout is not None and config.context_timeout_seconds > 0:
        # the kit's per-check limit bounds the host's compaction timeout (0 = inline stays
        # inline)
        config.context_timeout_seconds = min(config.context_timeout_seconds, float(timeout))
        config.timeout_limit_seconds = float(timeout)  # no profile floor goes past it
    return config


class ScriptedUser:
    """The user of a scenario: the texts of its ``user`` steps, with the turns numbered across
    the run (generated text is seeded by the scenario's seed and the turn number)."""

    def __init__(self, seed: Any) -> None:
        self.seed = seed
        self.turn_no = 0

    def texts(self, spec: Any) -> tuple[list[str], list[Any], bool]:
        """(texts, replies, interrupt) of a user spec; generated text when ``topic``/``words``."""
        if isinstance(spec, str):
            return [spec], [], False
        repeat = int(spec.get("repeat", 1))
        out = []
        for _ in range(repeat):
            self.turn_no += 1
            if "text" in spec and "topic" not in spec and "words" not in spec:
                out.append(spec["text"])
            else:
                text = user_message(
                    spec.get("topic", "database"),
                    self.turn_no,
                    self.seed,
                    int(spec.get("words", 60)),
                )
                out.append((spec["text"] + " " + text) if "text" in spec else text)
        return out, list(spec.get("replies") or ()), bool(spec.get("interrupt", False))


def step_brief(value: Any) -> str:
    """What a step's label shows of its value (after ``steps[i] kind``): the text or its
    first 40 characters quoted, ``<N words on TOPIC>``, a fault kind, a model or conversation
    name; "" for none."""
    if value is None or value is True:
        return ""
    if isinstance(value, str):
        return f" {value[:40]!r}"
    if isinstance(value, dict):
        if "text" in value and isinstance(value["text"], str):
            return f" {value['text'][:40]!r}"
        if "topic" in value or "words" in value:
            return f" <{value.get('words', 60)} words on {value.get('topic', 'database')}>"
        if "kind" in value:
            return f" {value['kind']}"
        if "name" in value:
            return f" {value['name']}"
        if "conversation" in value:
            return f" {value['conversation']!r}"
    return ""


__all__ = ["ScenarioReplies", "ScriptedUser", "generated_text", "host_config", "step_brief"]
