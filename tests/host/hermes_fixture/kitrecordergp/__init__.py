"""kitrecorder loaded through the general plugin system (``plugins.enabled: [kitrecordergp]``).

The folder's name differs from the engine's (``kitrecorder``), so a host that looks up the
configured ``context.engine`` as a plugin folder never finds this one; the engine arrives
through ``register(ctx)``, the path on which hosts call ``clone_for_agent``. The engine is
kitrecorder's own ``engine.py`` (the test copies it next to this file).
"""

from .engine import KitRecorder


def register(ctx):
    ctx.register_context_engine(KitRecorder())
