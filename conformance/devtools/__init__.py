"""Development tools of the kit: the kill matrix and the coverage document.

They import the mutant engines (:mod:`reference_engines.mutants`), so nothing else in
:mod:`conformance` imports them: the pytest plugin and ``run_conformance`` never load a
mutant. ``context-engine-kit mutants`` and ``context-engine-kit coverage`` load them.
"""
