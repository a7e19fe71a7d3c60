"""Reference engines (models for plugin authors) and mutants (each breaks one clause).

Importing this package installs the ``agent.*`` shim so that, without hermes-agent,
``from agent.context_engine import ContextEngine`` resolves to the kit's documented ABC.
"""

from simulator.host import shim as _shim

_shim.install()
