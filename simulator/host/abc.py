"""The documented ``ContextEngine`` ABC (contract sections A and O), the kit's own copy.

Engines written for Hermes import ``from agent.context_engine import ContextEngine``.
When hermes-agent is not installed, :mod:`simulator.host.shim` makes that import resolve
to this module. Behaviour follows the documented contract (``docs/contract.md``):

- A1-A4 are abstract: ``name`` (property), ``update_from_response``, ``should_compress``,
  ``compress``.
- A6: the int attributes the host reads directly, defaulting to 0.
- O1-O11: optional methods with their documented defaults.
- K1: ``update_model`` applies ``model_thresholds`` (longest matching substring wins,
  provider-scoped keys supported); the configured percent is snapshotted once.
"""

from __future__ import annotations

import copy
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

#: Characters kept by :func:`sanitize_memory_context`: head + marker + tail.
MEMORY_CONTEXT_HEAD_CHARS = 4000
MEMORY_CONTEXT_TAIL_CHARS = 1500
MEMORY_CONTEXT_MAX_CHARS = 6000


class ContextEngine(ABC):
    """Base class for context engines (contract A, O, H, C, K).

    Attributes (A6; ints, read directly by the host):
        last_prompt_tokens, last_completion_tokens, last_total_tokens: usage of the last
            provider call, in tokens. ``last_prompt_tokens`` is -1 right after a committed
            compaction until real usage arrives (A7).
        threshold_tokens: compaction trigger, ``int(context_length * threshold_percent)``.
        context_length: the model's window, in tokens.
        compression_count: compactions performed.
    """

    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    protect_first_n: int = 3
    protect_last_n: int = 6

    # -- A: required surface ---------------------------------------------------------
    @property
    @abstractmethod
    def name(self) -> str:
        """A1: short identifier; equals ``context.engine`` in config.yaml (R6)."""

    @abstractmethod
    def update_from_response(self, usage: dict[str, Any]) -> None:
        """A2: called after every provider call with the canonical usage dict."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """A3: True when the engine wants a compaction now."""

    @abstractmethod
    def compress(
        self,
        messages: list[dict[str, Any]],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
    ) -> list[dict[str, Any]]:
        """A4: return a new, valid (V1-V4) and possibly shorter message list."""

    # -- O: optional methods with defaults -------------------------------------------
    def should_compress_preflight(self, messages: list[dict[str, Any]]) -> bool:
        """O7: cheap estimate before the provider call; default False."""
        return False

    # O1/O2 are optional hooks, no-ops by default: @abstractmethod would break engines
    # that do not override them.
    def on_session_start(self, session_id: str, **kwargs: Any) -> None:  # noqa: B027
        """O1: no-op. Load persisted state here."""

    def on_session_end(self, session_id: str, messages: list[dict[str, Any]]) -> None:  # noqa: B027
        """O2: no-op. Called only at a real session boundary."""

    def on_session_reset(self) -> None:
        """O3: zero the per-session counters (0, not the -1 sentinel)."""
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """O5/T1: tool schemas ``{name, description, parameters}``; default none."""
        return []

    def handle_tool_call(self, name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """O6/T2: a JSON string; the default answers every name with a JSON error."""
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self) -> dict[str, Any]:
        """O8: status dict; ``last_prompt_tokens`` never negative, usage_percent in 0-100."""
        last = max(int(self.last_prompt_tokens or 0), 0)
        ctx = int(self.context_length or 0)
        usage = min(100.0, last / ctx * 100) if ctx > 0 else 0
        return {
            "last_prompt_tokens": last,
            "threshold_tokens": self.threshold_tokens,
            "context_length": ctx,
            "usage_percent": usage,
            "compression_count": self.compression_count,
        }

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
        **kwargs: Any,
    ) -> None:
        """O4/K1: set ``context_length`` and recompute ``threshold_tokens``.

        The configured ``threshold_percent`` is snapshotted on the first call, so
        per-model overrides never compound across switches.
        """
        self.context_length = int(context_length)
        if "_config_threshold_percent" not in self.__dict__:
            self._config_threshold_percent = self.threshold_percent
        percent = resolve_model_threshold(
            model,
            getattr(self, "model_thresholds", None) or {},
            self._config_threshold_percent,
            provider,
        )
        self.threshold_percent = percent
        self.threshold_tokens = int(self.context_length * percent)

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
        **kwargs: Any,
    ) -> list[dict[str, Any]] | None:
        """O9/H3: None (no change). A list replaces the messages of one provider call."""
        return None

    def on_turn_complete(
        self, messages: list[dict[str, Any]], usage: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        """O10/H5: no-op observer of a finished turn (read-only shallow copy)."""
        return None

    def clone_for_agent(self) -> ContextEngine:
        """O11/C1: a per-agent engine; default ``copy.deepcopy(self)``."""
        return copy.deepcopy(self)


def resolve_model_threshold(
    model: str,
    model_thresholds: Mapping[str, float] | None,
    default: float,
    provider: str = "",
) -> float:
    """K1: the threshold percent for ``model`` from a ``compression.model_thresholds`` map.

    Keys are substrings of the model name (case-sensitive) or ``"<provider>:<substring>"``
    (applies only when the provider matches, case-insensitively). The longest substring
    wins; on equal length a provider-scoped key beats a bare one; full ties go to the
    lexicographically greatest key. Returns ``default`` when nothing matches.
    """
    if not model or not model_thresholds:
        return float(default)
    best: tuple | None = None
    prov = (provider or "").strip().lower()
    for key, value in model_thresholds.items():
        scoped = 0
        needle = key
        if ":" in key:
            scope, _, rest = key.partition(":")
            if scope.strip().lower() and rest:
                if scope.strip().lower() != prov:
                    continue
                scoped, needle = 1, rest
        if needle and needle in model:
            rank = ((len(needle), scoped), key)
            if best is None or rank > best[0]:
                best = (rank, value)
    return float(best[1]) if best else float(default)


_SECRET_PATTERNS = [
    re.compile(r"(?i)\b(sk|pk|rk)-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"(?i)\b(api[_-]?key|token|secret|password)\s*[:=]\s*\S+"),
    re.compile(r"(?i)(https?://)[^/\s:@]+:[^/\s@]+@"),
]


def sanitize_memory_context(text: str | None, *, force: bool = False) -> str:
    """Redact secret-looking substrings and cap ``text`` at 6000 characters.

    Over the cap it keeps the first 4000 and the last 1500 characters around a marker.
    URL credentials are redacted too. ``force`` is accepted for signature compatibility.
    """
    if not text:
        return ""
    out = text
    for pattern in _SECRET_PATTERNS:
        out = pattern.sub(
            lambda m: (m.group(1) if m.re is _SECRET_PATTERNS[2] else "") + "[REDACTED]", out
        )
    if len(out) > MEMORY_CONTEXT_MAX_CHARS:
        out = (
            out[:MEMORY_CONTEXT_HEAD_CHARS]
            + "\n[... memory context truncated ...]\n"
            + out[-MEMORY_CONTEXT_TAIL_CHARS:]
        )
    return out
