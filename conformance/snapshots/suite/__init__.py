"""The snapshot tier's test module (collected by :mod:`conformance.snapshots.plugin`)."""
