"""Lossless Context Management (LCM): the kit's reference durable context engine.

A Hermes plugin folder (R4): this ``__init__.py`` exports the ``ContextEngine`` subclass
``LCMEngine`` and a ``register(ctx)`` that calls ``ctx.register_context_engine``;
``plugin.yaml`` gives name ``lcm``, description and version. Copy the folder to
``$HERMES_HOME/plugins/lcm/`` (``context-engine-kit install-plugin lcm --hermes-home DIR``)
and select it with ``context.engine: lcm``.

It imports the stdlib and Hermes' plugin API (``agent.context_engine``, and
``agent.context_compressor.resolve_model_threshold`` when the host has it). In a real Hermes
the real ABC is used; inside the kit, the kit installs its ``agent.*`` shim before it loads
an engine (:func:`simulator.host.shim.install`) when hermes-agent is not installed.
"""

from __future__ import annotations

from agent.context_engine import ContextEngine

from .dag import DagParams
from .engine import CARRIER_TAG, LCMEngine
from .tools import TOOL_SCHEMAS

__all__ = ["LCMEngine", "DagParams", "CARRIER_TAG", "TOOL_SCHEMAS", "register"]


def register(ctx) -> None:
    """Plugin entry point (R3, R4): register one ``LCMEngine`` with the host's plugin context.

    The engine uses ``$HERMES_HOME/lcm/lcm.sqlite3``. Hermes clones it per agent with
    ``clone_for_agent()`` (C1).
    """
    ctx.register_context_engine(LCMEngine())


assert issubclass(LCMEngine, ContextEngine)
