"""The front ends' own code, above the core (:mod:`conformance.run.conformance_session`,
:mod:`conformance.run.cases`): the pytest options and hooks, the scenario-file collector, the
snapshot fixture, the HTML report, the output checks and the command lines' dispatch
(``docs/architecture.md`` lists the modules). What is not theirs lives in the layers below.

The entry modules stay where users name them: :mod:`conformance.plugin` (the pytest11 entry
point, ``-p conformance.plugin``) and :mod:`conformance.cli` (``context-engine-kit``).
"""
