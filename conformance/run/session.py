"""The run's public face: the names users import to run the kit from code.

The run is split by job: :class:`ConformanceSession`, the one run state
(:mod:`conformance.run.conformance_session`); :class:`RunOptions`, :class:`Declarations` and
the expected-failure rules (:mod:`conformance.run.options`); :class:`Result`, :data:`OUTCOMES`
and :func:`exit_code` (:mod:`conformance.run.results`); :func:`run_conformance` and
:func:`scenario_results`, the entry points without pytest (:mod:`conformance.run.entry`);
:func:`scenario_key` (:mod:`conformance.run.cases`). They are importable from here as well, as
they always were; the kit's own modules import them from their homes.
"""

from __future__ import annotations

from conformance.run.cases import scenario_key
from conformance.run.conformance_session import ConformanceSession
from conformance.run.entry import run_conformance, scenario_results
from conformance.run.options import (
    Declarations,
    RunOptions,
    read_xfails_file,
    unmatched_xfails,
    xfail_for_clause,
)
from conformance.run.results import OUTCOMES, Result, exit_code

__all__ = [
    "scenario_key",
    "scenario_results",
    "OUTCOMES",
    "ConformanceSession",
    "Declarations",
    "Result",
    "RunOptions",
    "exit_code",
    "read_xfails_file",
    "run_conformance",
    "unmatched_xfails",
    "xfail_for_clause",
]
