"""What a check gets: the engine factory, the Hypothesis settings, the host ABC.

Checks build a fresh engine per example with :meth:`CheckContext.new_engine`, which
calls ``update_model`` with the check window (small by default so that
threshold-crossing histories stay small; Hermes itself refuses windows under 64k, a
documented divergence).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from hypothesis import HealthCheck, Verbosity, settings

from simulator.host.shim import AbcInfo, abc_info

#: Default model window used by checks, in tokens.
CHECK_WINDOW_TOKENS = 16_000
CHECK_MODEL = "sim-model"

PROFILES: Dict[str, int] = {"quick": 8, "default": 25, "thorough": 200}


class CheckSkipped(Exception):
    """The check does not apply (capability missing, ABC lacks the clause); message = reason."""


class EngineUnavailable(Exception):
    """The engine could not be constructed or configured; the message says why."""


@dataclass
class CheckContext:
    """Per-run state shared by checks.

    Attributes:
        engine_factory: returns a new engine per call (an ``EngineFactory`` or any callable).
        profile: ``quick``, ``default`` or ``thorough`` (max examples per Hypothesis check).
        derandomize: Hypothesis derandomize (the default: a deterministic verdict).
        window: context length passed to ``update_model`` for each new engine, in tokens.
        abc: which ContextEngine ABC is in use.
    """

    engine_factory: Callable[[], Any]
    profile: str = "default"
    derandomize: bool = True
    window: int = CHECK_WINDOW_TOKENS
    abc: AbcInfo = field(default_factory=abc_info)
    _capabilities: Optional[frozenset] = None

    def new_engine(self, *, window: Optional[int] = None, configure: bool = True) -> Any:
        """A fresh engine; with ``configure``, ``update_model(CHECK_MODEL, window)`` is called.

        Raises:
            EngineUnavailable: the factory or update_model raised.
        """
        try:
            engine = self.engine_factory()
        except Exception as exc:
            raise EngineUnavailable(f"constructing the engine raised {type(exc).__name__}: {exc}") from exc
        if configure and callable(getattr(engine, "update_model", None)):
            try:
                engine.update_model(model=CHECK_MODEL, context_length=window or self.window,
                                    base_url="", api_key="", provider="", api_mode="chat_completions")
            except Exception as exc:
                raise EngineUnavailable(f"update_model() raised {type(exc).__name__}: {exc}") from exc
        return engine

    @property
    def capabilities(self) -> frozenset:
        """Capabilities the engine declares in ``conformance_capabilities`` (e.g. ``compressor``)."""
        if self._capabilities is None:
            engine = self.engine_factory()
            self._capabilities = frozenset(getattr(engine, "conformance_capabilities", ()) or ())
        return self._capabilities

    def settings(self, **overrides: Any) -> settings:
        """Hypothesis settings for this profile: no deadline, no database, quiet."""
        base = dict(
            max_examples=PROFILES.get(self.profile, PROFILES["default"]),
            deadline=None,
            derandomize=self.derandomize,
            database=None,
            print_blob=False,
            verbosity=Verbosity.quiet,
            suppress_health_check=list(HealthCheck),
        )
        base.update(overrides)
        return settings(**base)
