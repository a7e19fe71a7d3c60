"""The reference host: plays the Hermes agent around a context engine and records what it did.

Modules (one responsibility each): ``pipeline`` (request stages, in order), ``sanitize``,
``cache_control``, ``hooks`` (identity skip, fail-open), ``session`` (turn loop, L1),
``clones`` (C1-C3), ``thresholds`` (K1-K2), ``compression`` (TS1-TS3), ``hygiene`` (B7),
``gateway``, ``discovery`` (R1-R6), ``profiles`` (documented / hermes-0.19), ``record``
(instrumentation), ``abc`` + ``shim`` (the documented ABC and the ``agent.*`` shim).
"""
