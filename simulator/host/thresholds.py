"""Thresholds and model switches (K1, K2, O4).

K1: the host assigns ``compression.model_thresholds`` to ``engine.model_thresholds``
*before* the first ``update_model()``; the ABC's ``update_model`` resolves it with
:func:`simulator.host.abc.resolve_model_threshold` (longest substring wins, provider-scoped
keys, else the configured percent, snapshotted once). Every model switch goes through
``update_model`` with Hermes' keyword arguments (research/host.md §3, §22).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from simulator.host.abc import resolve_model_threshold  # noqa: F401  (re-exported for K1)
from simulator.host.profiles import get_profile

log = logging.getLogger("simulator.host")

#: The keyword arguments ``update_model`` receives, in Hermes' order.
UPDATE_MODEL_KWARGS = ("model", "context_length", "base_url", "api_key", "provider", "api_mode")


def assign_model_thresholds(
    engine: Any, model_thresholds: Mapping[str, float] | None, *, profile: Any = None
) -> bool:
    """K1: set ``engine.model_thresholds`` from the config map; True if assigned.

    Nothing is assigned when the map is None (not configured) or the profile has no
    model_thresholds (hermes-0.19). Raises nothing: an engine that refuses the attribute
    (e.g. ``__slots__``) is logged and left alone (K2: it owns its policy).
    """
    if model_thresholds is None or not get_profile(profile).model_thresholds:
        return False
    try:
        engine.model_thresholds = dict(model_thresholds)
        return True
    except Exception as exc:
        log.warning("Could not assign compression.model_thresholds to engine: %s", exc)
        return False


def update_model_kwargs(
    model: str,
    context_length: int,
    *,
    base_url: str = "",
    api_key: str = "",
    provider: str = "",
    api_mode: str = "chat_completions",
) -> dict[str, Any]:
    """O4/K1: the keyword arguments of one ``update_model`` call (context_length in tokens)."""
    return {
        "model": model,
        "context_length": int(context_length),
        "base_url": base_url,
        "api_key": api_key,
        "provider": provider,
        "api_mode": api_mode,
    }
