"""The front ends' own code, above the core (:mod:`conformance.run.conformance_session`,
:mod:`conformance.run.cases`).

- :mod:`~conformance.frontends.pytest_options`: the pytest options, read once into a session;
- :mod:`~conformance.frontends.pytest_session`: the hooks of one pytest run (the verdict from
  reports, xdist included; the exit rule; the JSON file);
- :mod:`~conformance.frontends.scenario_items`: a user's ``*.scenario.yaml`` files as items;
- :mod:`~conformance.frontends.snapshot_fixture`: syrupy's ``snapshot`` bound to the engine;
- :mod:`~conformance.frontends.report_plugin`: the HTML report at the end of a pytest run;
- :mod:`~conformance.frontends.subcommands`: the argparse dispatch of ``context-engine-kit`` and
  ``python -m conformance.devtools`` (each command parses its own words).

The entry modules stay where users name them: :mod:`conformance.plugin` (the pytest11 entry
point, ``-p conformance.plugin``) and :mod:`conformance.cli` (``context-engine-kit``).
"""
