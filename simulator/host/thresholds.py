"""Thresholds and model switches (K1, K2, O4).

K1: the host assigns ``compression.model_thresholds`` to ``engine.model_thresholds``
*before* the first ``update_model()``; the ABC's ``update_model`` resolves it with
:func:`simulator.host.abc.resolve_model_threshold` (longest substring wins, provider-scoped
keys, else the configured percent, snapshotted once). Every model switch goes through
``update_model`` with Hermes' keyword arguments (docs/host.md, "A turn").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from simulator.host.profiles import get_profile

log = logging.getLogger("simulator.host")


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
