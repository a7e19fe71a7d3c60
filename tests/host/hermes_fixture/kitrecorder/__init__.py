"""Recording context engine: logs every contract call it receives as one JSON line.

Loaded by a real Hermes host (0.19.0 or 0.22.2) and by the kit's host in the matching
profile, so the two call sequences can be compared (tests/host/test_hermes_profile.py).
It is loaded two ways: as a plugin folder (``$HERMES_HOME/plugins/kitrecorder/``, this
``__init__.py`` mentions the engine base class, so 0.22 loads it as an engine folder)
and as a general plugin (``kitrecordergp``, whose ``__init__.py`` only has ``register``).

The environment is read at call time (one host process runs several conversations):

- ``KIT_RECORD_PATH``: the JSONL file calls are appended to;
- ``KIT_COMPRESS_AT``: 1-based ``should_compress`` call numbers that answer True;
- ``KIT_COMPRESS_SLEEP``: seconds compress() sleeps (a compaction timeout);
- ``KIT_SELECT``: ``"tail"``: select_context returns the first row plus the last 2;
- ``KIT_CLONE_RAISES``: clone_for_agent raises (C3);
- ``KIT_TOOLS``: expose the engine tool ``kit_lookup``.

Each record: method, sorted keyword names, a shape of the arguments (roles, counts, key
sets, whether ``message_uid`` is present), and the thread kind (``main`` or ``worker``).
"""

from .engine import KitRecorder


def register(ctx):
    ctx.register_context_engine(KitRecorder())


__all__ = ["KitRecorder", "register"]
# mentions ContextEngine for the plugin-folder heuristic
