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
- O12-O16: the methods Hermes 0.22's ABC added (``should_compress_info``,
  ``prune_tool_results_only``, ``should_defer_preflight_to_real_usage``,
  ``has_content_to_compress``, the automatic-compaction status hook), with 0.22's defaults.

Signatures are 0.22.2's: ``compress`` takes ``force`` and ``memory_context``; ``select_context``
and ``update_model`` take no ``**kwargs`` (an engine that calls ``super()`` with an extra keyword
fails under Hermes, so it fails under the kit too). :func:`sanitize_memory_context` redacts and
elides as 0.22 does (:mod:`simulator.host.redaction`).
"""

from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from simulator.host.redaction import elide_middle, redact_sensitive_text

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
    #: O16: False keeps successful automatic compactions silent (warnings and manual
    #: ``/compress`` still surface).
    emit_automatic_compaction_status: bool = True

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
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        """A4: return a new, valid (V1-V4) and possibly shorter message list.

        ``force`` asks to bypass an engine-owned cooldown; ``memory_context`` is provider text
        for the summary prompt. The host passes only the optional arguments the override's
        signature accepts.
        """

    # -- O12-O16: the methods Hermes 0.22's ABC added (defaults as 0.22) ----------------
    def should_compress_info(self, prompt_tokens: int | None = None) -> tuple[bool, str | None]:
        """O12: ``(should_compress(prompt_tokens), reason)``; ``reason`` (a str or None) says
        why an over-threshold compaction is blocked (cooldown, anti-thrashing guard)."""
        return self.should_compress(prompt_tokens), None

    def prune_tool_results_only(
        self, messages: list[dict[str, Any]], current_tokens: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """O13: trim old tool-result payloads without an LLM call (tokens in ``current_tokens``).

        Returns ``(messages, n_pruned)``; the no-op is the input list itself with 0. The host
        commits only a new list with a non-zero count, into the live history.
        """
        return messages, 0

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """O14: True when preflight should trust recent real usage over the rough estimate
        (``rough_tokens``); default False."""
        return False

    def get_automatic_compaction_status_message(
        self, *, phase: str, default_message: str, **context: Any
    ) -> str | None:
        """O16: the user-visible status of an automatic compaction, or None to suppress it.

        ``phase`` is ``"preflight"`` or ``"compress"``; ``context`` carries best-effort
        ``approx_tokens`` / ``threshold_tokens``.
        """
        return default_message if self.emit_automatic_compaction_status else None

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        """O15: False when a manual ``/compress`` has nothing to do (everything protected);
        the gateway then answers "nothing to compress" without calling compress()."""
        return True

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
        """O8: status dict; ``last_prompt_tokens`` never negative (the -1 sentinel reads 0),
        usage_percent in 0-100 (0 on a zero window)."""
        last = max(self.last_prompt_tokens, 0)
        return {
            "last_prompt_tokens": last,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": min(100, last / self.context_length * 100)
            if self.context_length
            else 0,
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
    ) -> None:
        """O4/K1: set ``context_length`` (tokens, stored as given) and recompute
        ``threshold_tokens``.

        The configured ``threshold_percent`` is snapshotted once (``_config_threshold_percent``,
        unless the engine already has that attribute, on the instance or its class, as 0.22
        does), so per-model overrides never compound across switches; the resolved percent is
        also kept as ``_base_threshold_percent``.
        """
        self.context_length = context_length
        if not hasattr(self, "_config_threshold_percent"):
            self._config_threshold_percent = self.threshold_percent
        self._base_threshold_percent = resolve_model_threshold(
            model,
            getattr(self, "model_thresholds", {}),
            self._config_threshold_percent,
            provider,
        )
        self.threshold_percent = self._base_threshold_percent
        self.threshold_tokens = int(context_length * self.threshold_percent)

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
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
    (every key with a ``:`` is provider-scoped and applies only when its scope equals the
    provider, case-insensitively, as in Hermes 0.22). The longest substring wins; on equal
    length a provider-scoped key beats a bare one; full ties go to the lexicographically
    greatest key. Returns ``default`` when nothing matches.
    """
    if not model or not model_thresholds:
        return float(default)
    best: tuple | None = None
    prov = (provider or "").strip().lower()
    for key, value in model_thresholds.items():
        scope, sep, needle = key.partition(":")
        scoped = 0
        if sep:
            if scope.strip().lower() != prov:
                continue
            scoped = 1
        else:
            needle = key
        if needle in model:
            rank = ((len(needle), scoped), key)
            if best is None or rank > best[0]:
                best = (rank, value)
    return float(best[1]) if best else float(default)


def sanitize_memory_context(memory_context: str) -> str:
    """Provider memory text ready for an engine's summary prompt, as Hermes 0.22 prepares it.

    Strips it, redacts credentials (:func:`simulator.host.redaction.redact_sensitive_text`
    with URL credentials), and over :data:`MEMORY_CONTEXT_MAX_CHARS` characters keeps the
    first 4000 and last 1500 around Hermes' elision marker (``⟪HERMES-CONTEXT-COMPRESSION:
    N of M chars omitted ...⟫``).

    Raises:
        AttributeError: ``memory_context`` is not a str (None included), as in Hermes.
    """
    sanitized = redact_sensitive_text(
        memory_context.strip(), force=True, redact_url_credentials=True
    )
    if len(sanitized) <= MEMORY_CONTEXT_MAX_CHARS:
        return sanitized
    return elide_middle(sanitized, MEMORY_CONTEXT_HEAD_CHARS, MEMORY_CONTEXT_TAIL_CHARS)


def automatic_compaction_status_message(
    engine: Any, *, phase: str, default_message: str, **context: Any
) -> str | None:
    """O16: the status line the host shows for an automatic compaction, or None for none.

    None when ``engine.emit_automatic_compaction_status`` is false; otherwise the engine's
    ``get_automatic_compaction_status_message(phase=, default_message=, **context)`` (or
    ``default_message`` when it has none), stripped, with an empty string read as None.
    """
    if not getattr(engine, "emit_automatic_compaction_status", True):
        return None
    formatter = getattr(engine, "get_automatic_compaction_status_message", None)
    message = (
        formatter(phase=phase, default_message=default_message, **context)
        if callable(formatter)
        else default_message
    )
    if message is None:
        return None
    return str(message).strip() or None
