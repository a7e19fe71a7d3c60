"""Scenario files: scripted sessions against the reference host and the provider simulator.

A ``*.scenario.yaml`` file (schema: ``schema.json``) lists steps (user turns with
simulated replies and tool calls, provider faults, model switches, ``/compress``,
``/reset``, ``/new``, subagents, gateway messages, restart and restore from the store,
branch, rotation) and expectations that each name a contract clause and level.

- :func:`~conformance.scenarios.loader.load_scenario` ->
  :class:`~conformance.scenarios.spec.Scenario` (errors:
  :class:`~conformance.scenarios.loader.ScenarioError`, ``file:line: field: problem``);
- :func:`~conformance.scenarios.runner.run_scenario` ->
  :class:`~conformance.scenarios.run.ScenarioRun`;
- :func:`~conformance.scenarios.expectations.judge_expectation` judges one expectation (a case of
  the stream);
- :func:`library_paths`: the bundled library (``library/*.scenario.yaml``).
"""

from __future__ import annotations

from pathlib import Path

LIBRARY_DIR = Path(__file__).parent / "library"
#: How a scenario file's name ends (what pytest collects as one, and what the library holds).
SUFFIX = ".scenario.yaml"


def library_paths() -> list[Path]:
    """The bundled scenario files, sorted by name."""
    return sorted(LIBRARY_DIR.glob(f"*{SUFFIX}"))
