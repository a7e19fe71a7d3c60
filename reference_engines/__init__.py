"""Reference engines (models for plugin authors) and mutants (each breaks one clause).

The engines are Hermes plugins: they import ``agent.context_engine`` (and, for their token
counts and default summary, :mod:`reference_engines.tokens` and
:mod:`reference_engines.extractive`: the stdlib and ``tiktoken``), never the kit. Without
hermes-agent, whoever loads them installs the kit's ``agent.*`` shim first
(:func:`simulator.host.shim.install`: the kit's engine loader, CLI and pytest plugin, the
kit's tests' ``conftest.py``, :mod:`reference_engines.mutants`).
"""
