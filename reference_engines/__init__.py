"""Reference context engines of the kit (and, in ``mutants/``, engines that break one clause).

Importing this package installs the ``agent.*`` import shim
(:func:`simulator.host.shim.install`), so ``from agent.context_engine import ContextEngine``
works without hermes-agent; with hermes-agent installed the real ABC is used.
"""

from simulator.host import shim as _shim

_shim.install()
