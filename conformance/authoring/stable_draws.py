"""Same check, same draws: keep Hypothesis' "local constants" out of the kit's checks.

Hypothesis (6.131+) mixes into its draws constants harvested from the *local* modules
loaded in ``sys.modules`` (integers and strings of the code under the current directory),
cached by the first draw that needs them. Which modules are loaded depends on what the run
collected (the bundled scenarios import more kit modules; ``-k`` and plugins change it
too), so with a derandomized seed the same check drew different examples depending on the
other checks of the run: ``-k L1-lifecycle-state-machine`` passed an engine that the same
``-k`` plus ``--conformance-no-scenarios`` failed. The contract's promise of one verdict
per engine and seed (docs/contract.md, determinism; README "same verdict every run") needs
the draws to depend on the seed alone.

:func:`no_local_constants` empties that pool while a check runs (Hypothesis' own global
constants, which are fixed, stay in use). It patches a private Hypothesis function; on a
Hypothesis without it, it does nothing (those versions have no such pool).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

try:  # private API, present in Hypothesis >= 6.131
    from hypothesis.internal.conjecture import providers as _providers
except ImportError:  # pragma: no cover - very old Hypothesis
    _providers = None

_LOCK = threading.Lock()
_DEPTH = [0]
_SAVED: list = []


def _supported() -> bool:
    return (
        _providers is not None
        and callable(getattr(_providers, "_get_local_constants", None))
        and hasattr(_providers, "Constants")
        and hasattr(_providers, "CONSTANTS_CACHE")
    )


def _clear_cache() -> None:
    cache: Any = _providers.CONSTANTS_CACHE
    getattr(cache, "cache", cache).clear()


@contextlib.contextmanager
def no_local_constants() -> Iterator[None]:
    """While active (process-wide, re-entrant), Hypothesis draws no constants taken from the
    modules that happen to be loaded: a derandomized check draws the same examples whatever
    else the run collected or ran before it."""
    if not _supported():
        yield
        return
    with _LOCK:
        _DEPTH[0] += 1
        if _DEPTH[0] == 1:
            empty = _providers.Constants()
            _SAVED.append(_providers._get_local_constants)
            _providers._get_local_constants = lambda: empty
            _clear_cache()  # values cached from the loaded modules' constants
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH[0] -= 1
            if _DEPTH[0] == 0:
                _providers._get_local_constants = _SAVED.pop()
                _clear_cache()


__all__ = ["no_local_constants"]
