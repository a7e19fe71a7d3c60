"""Deterministic provider simulator and reference host for Hermes context engines.

Layout:
- ``simulator.provider``: the provider (tokenizer, caching, replies, faults, HTTP).
- ``simulator.host``: the reference host that plays the agent (pipeline, lifecycle,
  clones, threads) and the documented ``ContextEngine`` ABC with its ``agent.*`` shim.
- ``simulator.store``: session stores (in-memory; SQLite for U1-U10).

``simulator`` never imports ``conformance``.
"""
