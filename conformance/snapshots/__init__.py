"""Snapshot diffing of compression output (syrupy), over a seeded corpus shipped in the kit.

- :mod:`~conformance.snapshots.corpus`: the >= 12 fixed histories (``CASES``, ``get``);
- :mod:`~conformance.snapshots.capture`: run a case through an engine as the host would;
- :mod:`~conformance.snapshots.canonical`: uid masking by first appearance, canonical JSON;
- :mod:`~conformance.snapshots.extension`: the syrupy extension (files in the user's project);
- :mod:`~conformance.snapshots.mismatch`: a mismatch as a kit D1 (SHOULD) failure, syrupy's diff
  kept;
- :mod:`~conformance.frontends.snapshot_fixture`: ``--conformance-snapshots`` and the tier's on/off
  rule.
"""
