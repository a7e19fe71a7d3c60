"""The front ends' own code, above the core (:mod:`conformance.run.conformance_session`,
:mod:`conformance.run.cases`).

- :mod:`~conformance.frontends.pytest_options`: the pytest options, read once into a session;
- :mod:`~conformance.frontends.pytest_session`: the hooks of one pytest run (the verdict from
  reports, xdist included; the exit rule; the JSON file);
- :mod:`~conformance.frontends.scenario_items`: a user's ``*.scenario.yaml`` files as items;
- :mod:`~conformance.frontends.snapshot_fixture`: syrupy's ``snapshot`` bound to the engine;
- :mod:`~conformance.frontends.report_plugin`: the HTML report at the end of a pytest run;
- :mod:`~conformance.frontends.outputs`: a pytest run's output paths tried before it starts, and
  its ``ERROR`` verdict when a usage error stops it;
- :mod:`~conformance.frontends.subcommands`: the argparse dispatch of ``context-engine-kit`` and
  ``python -m conformance.devtools`` (each command parses its own words).

What is not the front ends' own lives in the layers below: whether a path can be written, in
:mod:`conformance.runtime.writable`; the stop signals, in :mod:`conformance.runtime.stop_signals`;
the ``ERROR`` verdict, in :mod:`conformance.run.verdict_format`. ``context-engine-kit serve``
and ``install-plugin`` run :func:`simulator.provider.serve.main` and
:func:`reference_engines.lcm.install.main`.

The entry modules stay where users name them: :mod:`conformance.plugin` (the pytest11 entry
point, ``-p conformance.plugin``) and :mod:`conformance.cli` (``context-engine-kit``).
"""
