"""The front ends' own code, above the core (``docs/architecture.md`` lists the modules); the
entry modules stay where users name them: :mod:`conformance.plugin` (the pytest11 entry point)
and :mod:`conformance.cli` (``context-engine-kit``).
"""
