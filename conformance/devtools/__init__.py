"""Development tools of the kit: the kill matrix and the coverage document.

They import the mutant engines (:mod:`reference_engines.mutants`), so nothing else in
:mod:`conformance` imports them: the pytest plugin and ``run_conformance`` never load a
mutant. ``python -m conformance.devtools mutants`` and ``python -m conformance.devtools
coverage`` load them (:mod:`conformance.devtools.__main__`); the user CLI ``context-engine-kit``
does not.
"""
