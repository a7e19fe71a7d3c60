"""The one run state: options, the engine's declarations, the case stream, results, the verdict.

A :class:`ConformanceSession` is built once per run from
:class:`~conformance.run.options.RunOptions` (by the pytest plugin from its options, by
:func:`~conformance.run.entry.run_conformance` from its arguments; ``context-engine-kit check``
runs pytest). It probes the engine once (name, capabilities, expected failures, or the
constructor's error), yields the one stream of cases (:mod:`conformance.run.cases`) and runs any
case with one rule set:

1. skip when the host lacks a feature the case needs (:meth:`HostProfile.has
   <simulator.host.profiles.HostProfile.has>`, the ABC in use), or a capability rule says so;
2. error without running once ``--conformance-max-timeouts`` cases have hung;
3. run the case on a worker thread under ``--conformance-timeout`` with the network blocked;
4. file a finding under its own clause and level, as an expected failure when the engine or
   the user listed its id, id prefix or clause; write its failure file; end its message with
   ``Repro:`` (:meth:`ConformanceSession.repro`), rendered by
   :func:`conformance.clauses.errors.render`.

Front ends differ only in how they show results and in their ``Repro:`` command base (the
options that select the engine: ``--engine=...``, ``--engine-plugin=...``, or the test files of
the conftest fixture route).

The session holds the run's state and the order of the rules; each job has its own module:
the options and expected-failure rules (:mod:`conformance.run.options`), the engine probe and
the skip rule (:mod:`conformance.run.probe`), one attempt at a case in its child
(:mod:`conformance.run.execution`), settling an attempt into a result
(:mod:`conformance.run.settle`), the ``Repro:`` commands (:mod:`conformance.run.repro`), the
report's plot runs (:mod:`conformance.run.plot_view`), and the entry points without pytest
(:mod:`conformance.run.entry`). :mod:`conformance.run.session` is the public face of all this:
users import the session, its options, results and entry points from there.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from conformance.authoring.budget import RunBudget, ScenarioBudget
from conformance.authoring.case import Case
from conformance.authoring.context import CheckContext, budget
from conformance.authoring.hosts import host_of
from conformance.clauses.errors import EngineUnavailable
from conformance.run import probe, replay, repro, settle
from conformance.run.cases import run_stream, scenario_key, scenario_name
from conformance.run.execution import Attempt, attempt, attempt_scenario, cost_on, engine_time
from conformance.run.options import Declarations, RunOptions
from conformance.run.plot_view import play_for_plot
from conformance.run.results import Result
from conformance.run.supervision import CaseWorker, case_cap
from conformance.runtime.engine_loading import EngineFactory, as_factory
from conformance.runtime.sandbox import Reach
from conformance.runtime.timeouts import HangBudget
from simulator.host.shim import abc_info

if TYPE_CHECKING:
    from conformance.authoring.case import ScenarioExpectationCase


class ConformanceSession:
    """The one run state (module doc).

    Args:
        options: the :class:`~conformance.run.options.RunOptions` (validated here).
        factory: the engine factory (an :class:`~conformance.runtime.engine_loading.EngineFactory`
            or any zero-argument callable); None until :meth:`bind` gives it (the conftest
            fixture route learns it only when the first case runs).
        command: the ``Repro:`` command base that selects this engine again (default
            ``pytest <the factory's options>``).
        abc: the ContextEngine ABC in use (default: the one installed; tests pass another).

    Raises:
        KitUsageError: a bad option value.
    """

    def __init__(
        self,
        options: RunOptions,
        factory: Any = None,
        *,
        command: str | None = None,
        abc: Any = None,
    ) -> None:
        options.validate()
        self.options = options
        self.abc = abc if abc is not None else abc_info()
        self.factory: EngineFactory | None = None
        self._command = command
        self._declarations: Declarations | None = None
        self._context: CheckContext | None = None
        self._cases: list[Case] | None = None
        self._by_id: dict[str, Case] | None = None
        self.hangs = HangBudget(options.max_timeouts)
        self.results: list[Result] = []
        self.scenario_runs: dict[str, Any] = {}
        #: runs handed in already played (``scenario_results(run=...)``): judged, not replayed
        self.given_runs: dict[str, Any] = {}
        #: root cause -> the first case that reported it (:mod:`conformance.run.settle`)
        self.root_seen: dict[str, str] = {}
        self.scenario_attempts: dict[str, dict[str, Attempt]] = {}
        #: the run's supervised child (:mod:`conformance.run.supervision`)
        self.worker = CaseWorker(self, self.serve)
        self.user_hermes_home = os.environ.get("HERMES_HOME") or None
        self.budget = RunBudget(options.budget)
        self.scenario_budget = ScenarioBudget(options.budget)
        if options.seed is None and not options.derandomize:
            options.seed = random.SystemRandom().randrange(2**32)  # printed in failure files
        if factory is not None:
            self.bind(factory)

    # -- the engine -------------------------------------------------------------------
    def bind(self, factory: Any) -> None:
        """Use ``factory`` for this run's engines (idempotent for the same factory)."""
        if self.factory is not None and (self.factory is factory or self.factory.target is factory):
            return
        self.close()  # a child forked for another factory must not serve this one
        self.factory = as_factory(factory)
        self._declarations = None
        self._context = None

    @property
    def declarations(self) -> Declarations:
        """The engine's declarations, probed once from one instance (under the per-case limit;
        :func:`conformance.run.probe.probe`).

        Raises:
            KitUsageError: the engine declares an unknown capability.
        """
        if self._declarations is None:
            o, home = self.options, self.user_hermes_home
            self._declarations = probe.probe(o, self.factory, home, self.case_cap())
        return self._declarations

    def probe_home(self) -> contextlib.AbstractContextManager[list[Reach]]:
        """A sandbox for an engine the kit builds outside a case (:func:`conformance.run.probe.
        probe_home`)."""
        return probe.probe_home(self.user_hermes_home)

    @property
    def context(self) -> CheckContext:
        """The :class:`CheckContext` cases run with (built once the engine is bound)."""
        if self._context is None:
            o = self.options
            self._context = CheckContext(
                self.factory,  # type: ignore[arg-type]  # bound before a case runs
                profile=o.profile,
                derandomize=o.derandomize,
                seed=o.seed,
                timeout=float(o.timeout),
                plugin_dir=o.plugin_dir,
                shrink=o.shrink,
                host_profile=o.host_profile,
                hangs=self.hangs,
                capabilities=self.declarations.capabilities,
                abc=self.abc,
            )
            if o.window is not None:
                self._context.window = int(o.window)
        return self._context

    # -- the commands (conformance.run.repro) ----------------------------------------------
    @property
    def command(self) -> str:
        """The ``Repro:`` command base: this environment's pytest + the options selecting this
        engine and host (the failure file records the rest)."""
        return self.command_for(None)

    @property
    def multihost(self) -> bool:
        """True when the run checks the engine on several hosts."""
        return len(self.options.host_profiles) > 1

    def command_for(self, host: str | None) -> str:
        """:attr:`command` for a case played on ``host`` (None: the run's hosts)."""
        return repro.command_for(self.options, self.factory, self._command, host)

    @property
    def rerun_command(self) -> str:
        """:attr:`command` plus the profile, for the reruns by id that have no failure file."""
        return self.rerun_command_for(None)

    def rerun_command_for(self, host: str | None) -> str:
        """:attr:`rerun_command` for a case played on ``host`` (:meth:`command_for`)."""
        return repro.rerun_command_for(self.options, self.factory, self._command, host)

    def repro(self, case: Case, replay_file: str | None = None, violation: Any = None) -> str:
        """The ``Repro:`` command of ``case`` (:func:`conformance.run.repro.repro`)."""
        return repro.repro(case, self.options, self.factory, self._command, replay_file, violation)

    # -- the stream ---------------------------------------------------------------------
    def cases(self) -> list[Case]:
        """Every case of this run, in stream order (:func:`conformance.run.cases.run_stream`)."""
        if self._cases is None:
            o = self.options
            self._cases = run_stream(o)
            self.budget.weights = {
                c.id: float(budget(o.profile, getattr(c, "examples", None)))
                for c in self._cases
                if c.kind not in ("scenario", "snapshot")
            }
        return self._cases

    def extend(self, cases: Iterable[Case]) -> None:
        """Add cases to this run's stream (a scenario built in code, a check made in a test);
        a supervised child forked before knows none of them, so it is ended."""
        self.cases().extend(cases)
        self._by_id = None
        self.close()

    def case(self, case_id: str) -> Case:
        """The case with id ``case_id``.

        Raises:
            KeyError: no such case in this run's stream.
        """
        if self._by_id is None:
            self._by_id = {c.id: c for c in self.cases()}
        try:
            return self._by_id[case_id]
        except KeyError:
            raise KeyError(f"no case {case_id!r} in this run") from None

    def scenario_group(self, case: Case) -> list[Case]:
        """Every case of ``case``'s scenario file (its expectations), in file order."""
        return [
            c
            for c in self.cases()
            if getattr(c, "path", None) == getattr(case, "path", None)
            and host_of(c) == host_of(case)
        ] or [case]

    def snapshots_dir(self) -> Path | None:
        """The engine's snapshot folder (None: the tier is off)."""
        return self.options.snapshots_dir

    def play_scenario(self, case: Case) -> Any:
        """Play ``case``'s scenario on this run's engine (this run's host profile, the per-call
        limit, the host's own built-in compressor as the C3 fallback); returns the
        :class:`~conformance.scenarios.run.ScenarioRun`."""
        from conformance.scenarios.runner import run_scenario

        return run_scenario(
            cast("ScenarioExpectationCase", case).scenario,
            self.factory,  # type: ignore[arg-type]  # bound before a case runs
            host_profile=host_of(case) or self.options.host_profile,
            timeout=self.options.timeout,
        )

    def scenario_run(self, case: Case) -> Any:
        """A run of ``case``'s scenario for the HTML report's plot
        (:func:`conformance.run.plot_view.play_for_plot`)."""
        return play_for_plot(self, case)

    @property
    def replay_draws(self) -> dict[str, Any] | None:
        """The replayed failure file's draws (None when not replaying)."""
        return replay.draws(self.options.replay) if self.options.replay is not None else None

    # -- running a case -----------------------------------------------------------------
    def skip_reason(self, case: Case) -> str | None:
        """Why ``case`` does not apply here, or None (:func:`conformance.run.probe.skip_reason`).

        Raises:
            EngineUnavailable: the engine could not be built (its capabilities are unknown).
        """
        host = self.options.host_profile
        return probe.skip_reason(case, self.abc, host, lambda: self.declarations)

    def run_case(self, case: Case, **extras: Any) -> Result:
        """Run one case by the session's rules (module doc); never raises but KeyboardInterrupt.

        Checks and snapshot captures run in a supervised child
        (:mod:`conformance.runtime.supervisor`), in a sandbox of their own
        (:mod:`conformance.runtime.sandbox`), with their share of the drawing budget
        (:mod:`conformance.authoring.budget`); a scenario file is played once, in one child,
        and all its expectations judged there. ``extras``: the snapshot tier's syrupy
        ``compare``.
        """
        started = time.perf_counter()
        if not any(c is case for c in self.cases()):
            self.extend([case])  # a case made outside the stream (a test's, say)
        try:
            reason = self.skip_reason(case)
        except EngineUnavailable as exc:
            if self.declarations.reaches:  # refused by the sandbox: a finding, not a usage error
                return settle.unbuildable(self, case, started)
            # one root cause: the first case reports it, the others point to it
            text = f"engine not available: {exc}"
            return settle.error(self, case, text, started, cause="construct")
        if reason:
            return settle.make_result(case, "skipped", reason, started)
        cached = self.scenario_attempts.get(scenario_key(case), {})
        if case.id in cached:
            return settle.settle(self, case, cached[case.id], started, extras)
        if self.hangs.exhausted():
            # every case the cap keeps from running has one cause: the verdict counts it once
            return settle.error(self, case, self.hangs.reason(), started, cause="hang-cap")
        if case.kind == "scenario":
            group = self.scenario_group(case)
            if self.scenario_budget.exhausted() and scenario_key(case) not in self.given_runs:
                note = self.scenario_budget.note().replace("NAME", scenario_name(case))
                attempts = {
                    c.id: Attempt(c.id, "skipped", text=note, budget_reached=True) for c in group
                }
            else:
                attempts = self.worker.run(("scenario", case.id), group)
                self.scenario_budget.charge(engine_time(attempts.values(), started))
                cost_on(attempts, case.id)
            self.scenario_attempts[scenario_key(case)] = attempts
            return settle.settle(self, case, attempts[case.id], started, extras)
        share = self.budget.share(case.id) if case.kind != "snapshot" else None
        attempts = self.worker.run(("case", case.id, share), [case])
        self.budget.charge(case.id, engine_time(attempts.values(), started))
        return settle.settle(self, case, attempts[case.id], started, extras)

    def serve(self, task: tuple) -> dict[str, Attempt]:
        """Run one task (in the supervised child, or here): ``("case", id, share)`` or
        ``("scenario", id)``; returns the attempts by case id."""
        if task[0] == "scenario":
            return attempt_scenario(self, self.scenario_group(self.case(task[1])))
        return {task[1]: attempt(self, self.case(task[1]), task[2])}

    def close(self) -> None:
        """End the supervised child, if any (a later case forks a new one)."""
        self.worker.close()

    def case_cap(self) -> float:
        """Seconds a whole case may take (:func:`conformance.run.supervision.case_cap`)."""
        return case_cap(self.options)

    def failure_file(self, case: Case) -> Path | None:
        """Where ``case``'s failure file goes for this engine (None without a failures dir)."""
        return settle.failure_file(self, case)

    # -- the run ----------------------------------------------------------------------------
    def record(self, result: Result) -> None:
        """Add one result to this run's verdict."""
        self.results.append(result)

    def run_all(self) -> list[Result]:
        """Run every case of the stream in order; returns (and records) their results."""
        out: list[Result] = []
        try:
            for case in self.cases():
                result = self.run_case(case)
                out.append(result)
                self.results.append(result)
        finally:
            self.close()
        return out


__all__ = ["ConformanceSession"]
