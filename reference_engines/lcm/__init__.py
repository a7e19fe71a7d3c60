"""Lossless Context Management (LCM): the kit's reference durable context engine.

A Hermes plugin folder (R4): this ``__init__.py`` exports the ``ContextEngine`` subclass
``LCMEngine`` and a ``register(ctx)`` that calls ``ctx.register_context_engine``;
``plugin.yaml`` gives name ``lcm``, description and version. Copy the folder to
``$HERMES_HOME/plugins/lcm/`` (``context-engine-kit install-plugin lcm --hermes-home DIR``)
and select it with ``context.engine: lcm``.

Inside the kit, ``simulator.host.shim.install()`` makes ``agent.context_engine`` resolve to
the kit's ABC when hermes-agent is not installed; in a real Hermes the real ABC is used.
"""

from __future__ import annotations

try:  # the kit's agent.* shim; never shadows a real hermes-agent install
    from simulator.host import shim as _shim

    _shim.install()
except ImportError:  # running inside Hermes without the kit: the real ABC is importable
    pass

from agent.context_engine import ContextEngine  # noqa: E402  (the documented ABC)

from .dag import DagParams  # noqa: E402
from .engine import CARRIER_TAG, LCMEngine  # noqa: E402
from .tools import TOOL_SCHEMAS  # noqa: E402

__all__ = ["LCMEngine", "DagParams", "CARRIER_TAG", "TOOL_SCHEMAS", "register"]


def register(ctx) -> None:
    """Plugin entry point (R3, R4): register one ``LCMEngine`` with the host's plugin context.

    The engine uses ``$HERMES_HOME/lcm/lcm.sqlite3``. Hermes clones it per agent with
    ``clone_for_agent()`` (C1).
    """
    ctx.register_context_engine(LCMEngine())


assert issubclass(LCMEngine, ContextEngine)
