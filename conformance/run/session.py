"""The one run state: options, the engine's declarations, the case stream, results, the verdict.

A :class:`ConformanceSession` is built once per run from :class:`RunOptions` (by the pytest
plugin from its options, by :func:`run_conformance` from its arguments; ``context-engine-kit
check`` runs pytest). It probes the engine once (name, capabilities, expected failures, or the
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
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.authoring.budget import DEFAULT_BUDGET_S, RunBudget, ScenarioBudget
from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S, PROFILES, CheckContext, budget
from conformance.authoring.engine_frames import where
from conformance.authoring.engine_llm import engine_llm, ledger_row
from conformance.authoring.expect import MUST
from conformance.authoring.hosts import expand, host_of, parse_hosts, spec_text
from conformance.clauses import catalogue
from conformance.clauses.errors import (
    ContractViolation,
    EngineTimeout,
    EngineUnavailable,
    HostileEngine,
    KitUsageError,
    exception_text,
    pytest_command,
    render,
)
from conformance.run import replay
from conformance.run.cases import compare_with_file
from conformance.run.execution import GRACE_S, Attempt, attempt, attempt_scenario, from_death
from conformance.run.replay import load as load_failure
from conformance.run.results import OUTCOMES, Result, exit_code
from conformance.runtime.engine_loading import EngineFactory, as_factory, looks_like_engine
from conformance.runtime.sandbox import CLAUSE as E1
from conformance.runtime.sandbox import Sandbox, block_network, idle_folder, start_child, watching
from conformance.runtime.supervisor import (
    DEFAULT_MEMORY_LIMIT,
    ISOLATIONS,
    Died,
    Hung,
    RefusedAnswer,
    Worker,
    fork_available,
    supervised,
)
from conformance.runtime.timeouts import (
    DEFAULT_MAX_TIMEOUTS,
    HangBudget,
    build_engine,
    constructor_label,
)
from simulator.host.profiles import get_profile
from simulator.host.shim import abc_info


def kit_builtin_compressor() -> Any:
    """A new built-in compressor for the kit's scenario hosts to fall back to (C3, when an
    engine's ``clone_for_agent`` fails): the contract's B reference,
    :class:`reference_engines.compressor.ReferenceCompressor`, the kit's model of Hermes'
    built-in compressor. The host's own default (:mod:`simulator.host.builtin`) is a minimal
    one; the kit injects this one so a fallen-back agent behaves as Hermes' would. Imported
    only when an agent falls back, inside the case's child: the process that writes the
    verdict loads no engine."""
    from reference_engines.compressor import ReferenceCompressor

    return ReferenceCompressor()


def before_repro(message: str, note: str) -> str:
    """``message`` with ``note`` put before its ``Repro:`` command (so the command ends the
    line and pastes as printed), or at its end when it has none."""
    head, sep, repro = message.partition(" Repro: ")
    return f"{head} {note}{sep}{repro}" if sep else f"{message} {note}"


@dataclass
class RunOptions:
    """Everything a run is told (the pytest options, ``run_conformance`` arguments).

    Attributes:
        profile: ``quick``, ``default`` or ``thorough`` (Hypothesis budget).
        derandomize: a deterministic verdict (True unless ``--conformance-random``).
        seed: Hypothesis seed when random (drawn and recorded when None).
        timeout: the limit of one engine call in seconds (``--conformance-timeout``): a call
            longer than that is a hang.
        max_timeouts: hung cases after which the rest are not run (0: no cap).
        shrink: shrink counterexamples.
        strict: SHOULD failures and XPASS fail the run too.
        host_profile: the host profile played (``documented``, ``hermes-0.19``, ...); given
            as ``a,b`` or ``all`` (or "" for the default hosts, :func:`conformance.authoring.hosts.
            default_hosts`) it is parsed into ``host_profiles`` and becomes their first.
        host_profiles: every host the run checks the engine on (:mod:`conformance.authoring.hosts`;
            empty: parsed from ``host_profile``); set by :meth:`validate`.
        capabilities: capabilities added on the command line (validated).
        xfails: expected failures given by the user ``{id | prefix | clause: reason}``.
        replay: a failure file's content (``--conformance-replay``); only its case runs.
        replay_file: that file's absolute path (the ``Repro:`` command of a replayed failure
            names it again), or None.
        failures_dir: where failure files go (None: none written).
        scenarios: include the bundled scenario library.
        scenario_files: further scenario files.
        checks: include the registry's checks.
        snapshots_dir: the engine's snapshot folder when the tier is on (None: off).
        plugin_dir: an engine plugin folder for the R checks.
        window: the check window in tokens (None: the kit's default).
        only: case ids, id prefixes or clause ids to run (empty: all).
        budget: seconds the run's checks may spend drawing examples (``--conformance-budget``;
            0: no budget), shared out among the checks (:mod:`conformance.authoring.budget`).
        memory_limit: a case child's address-space cap in bytes (``--conformance-memory-limit``;
            None: none).
        isolation: ``fork`` (each case in a supervised child) or ``inprocess``.
    """

    profile: str = "default"
    derandomize: bool = True
    seed: int | None = None
    timeout: float = DEFAULT_CHECK_TIMEOUT_S
    max_timeouts: int = DEFAULT_MAX_TIMEOUTS
    shrink: bool = True
    strict: bool = False
    host_profile: str = ""
    host_profiles: tuple = ()
    capabilities: frozenset = frozenset()
    xfails: dict[str, str] = field(default_factory=dict)
    replay: dict[str, Any] | None = None
    replay_file: str | None = None
    failures_dir: Path | None = None
    scenarios: bool = True
    scenario_files: tuple = ()
    checks: bool = True
    snapshots_dir: Path | None = None
    plugin_dir: str | None = None
    window: int | None = None
    only: tuple = ()
    budget: float = DEFAULT_BUDGET_S
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    isolation: str = "fork"

    def validate(self) -> None:
        """Check every value.

        Raises:
            KitUsageError: a bad value; the message says which and what is accepted.
        """
        if self.profile not in PROFILES:
            raise KitUsageError(
                f"profile {self.profile!r}: use one of {', '.join(sorted(PROFILES))}"
            )
        try:
            self.host_profiles = parse_hosts(self.host_profiles or self.host_profile)
        except ValueError as exc:
            raise KitUsageError(str(exc)) from None
        self.host_profile = self.host_profiles[0]
        if not (isinstance(self.timeout, (int, float)) and 0 < self.timeout < float("inf")):
            raise KitUsageError(
                f"--conformance-timeout={self.timeout}: give a positive, finite number of seconds "
                f"(the limit of one engine call; default {DEFAULT_CHECK_TIMEOUT_S:g})"
            )
        if not (isinstance(self.budget, (int, float)) and 0 <= self.budget < float("inf")):
            raise KitUsageError(
                f"--conformance-budget={self.budget}: give a finite number of seconds, 0 or more "
                f"(the time the checks may spend drawing examples; 0: no budget; default "
                f"{DEFAULT_BUDGET_S:g})"
            )
        if self.memory_limit is not None and not (
            isinstance(self.memory_limit, int) and self.memory_limit >= 256 * 1024**2
        ):
            raise KitUsageError(
                f"--conformance-memory-limit: {self.memory_limit!r} bytes is too small or not a "
                "number; give at least 0.25 GiB (default 4 GiB), or 0 for no cap"
            )
        if self.isolation not in ISOLATIONS:
            raise KitUsageError(
                f"--conformance-isolation={self.isolation!r}: use one of {', '.join(ISOLATIONS)}"
            )
        if not isinstance(self.max_timeouts, int) or self.max_timeouts < 0:
            raise KitUsageError(
                f"--conformance-max-timeouts={self.max_timeouts}: give 0 (run every check) or a "
                f"positive number of timed-out checks (default {DEFAULT_MAX_TIMEOUTS})"
            )
        try:
            self.capabilities = catalogue.capabilities(
                self.capabilities, source="--conformance-capabilities"
            )
        except ValueError as exc:
            raise KitUsageError(str(exc)) from None


@dataclass
class Declarations:
    """What the engine declares, read once from one instance.

    Attributes:
        name: ``engine.name`` (or the class name when it cannot be read).
        capabilities: ``conformance_capabilities`` (validated) plus the command line's.
        expected_failures: ``conformance_expected_failures`` plus the user's.
        error: why no engine could be built (every case then errors), or None.
        reaches: what the constructor reached for outside its sandbox and was refused
            (:class:`~conformance.runtime.sandbox.Reach`): with ``error``, the engine cannot be
            built
            in the sandbox, a kit clause E1 finding about the engine, not a usage error.
    """

    name: str = ""
    capabilities: frozenset = frozenset()
    expected_failures: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    reaches: list = field(default_factory=list)


def _xfail_reason(case: Any, xfails: Mapping[str, str]) -> str | None:
    for key, reason in xfails.items():
        if case.id == key or case.id.startswith(key) or case.clause == key:
            return str(reason)
    return None


def xfail_for_clause(clause: str | None, xfails: Mapping[str, str]) -> str | None:
    """The reason of an expected failure keyed by ``clause`` itself (e.g. ``{"V2": why}``).

    A failure carries its own clause, which may differ from its case's (the L1 state machine
    reports a V2 break as ``[V2 MUST]``): expected failures by clause cover those too.
    """
    if not clause:
        return None
    return next((str(r) for k, r in xfails.items() if k == clause), None)


def unmatched_xfails(xfails: Mapping[str, str], cases: Iterable[Any]) -> list[str]:
    """Expected-failure keys that match no case (the user is warned about them)."""
    cases = list(cases)
    return sorted(
        k
        for k in xfails
        if not any(c.id == k or c.id.startswith(k) or c.clause == k for c in cases)
    )


def read_xfails_file(path: Path) -> dict[str, str]:
    """Expected failures from a file: one case id, id prefix or clause per line, then an
    optional reason after whitespace or ``#``; blank lines and ``#`` comments ignored.

    Raises:
        KitUsageError: the file cannot be read.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KitUsageError(f"--conformance-xfails {path}: cannot read it ({exc})") from None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, reason = line.partition("#")
        parts = key.split(None, 1)
        text = reason or (parts[1] if len(parts) > 1 else "") or f"listed in {path}"
        out[parts[0]] = text.strip()
    return out


def example_messages(example: Any) -> int | None:
    """Messages in a failure's shrunk example: the longest drawn transcript (None if none)."""
    if not isinstance(example, dict):
        return None
    best = None
    stack = [example]
    while stack:
        v = stack.pop()
        if isinstance(v, list) and v and all(isinstance(m, dict) and "role" in m for m in v):
            best = max(best or 0, len(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
    return best


class ConformanceSession:
    """The one run state (module doc).

    Args:
        options: the :class:`RunOptions` (validated here).
        factory: the engine factory (an :class:`~conformance.runtime.engine_loading.EngineFactory`
        or
            any zero-argument callable); None until :meth:`bind` gives it (the conftest
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
        self._cases: list[Any] | None = None
        self._by_id: dict[str, Any] | None = None
        self.hangs = HangBudget(options.max_timeouts)
        self.results: list[Result] = []
        self.scenario_runs: dict[str, Any] = {}
        #: runs handed in already played (``scenario_results(run=...)``): judged, not replayed
        self.given_runs: dict[str, Any] = {}
        self._root_seen: dict[str, str] = {}  # root cause -> the first case that reported it
        self.scenario_attempts: dict[str, dict[str, Attempt]] = {}
        self._worker: Worker | None = None
        self._idle: Path | None = None
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
        """The engine's declarations, probed once from one instance (under the per-case limit).

        Raises:
            KitUsageError: the engine declares an unknown capability.
        """
        if self._declarations is None:
            self._declarations = self._probe()
        return self._declarations

    @contextlib.contextmanager
    def probe_home(self) -> Iterator[None]:
        """A sandbox for an engine the kit builds outside a case (the declarations probe): its
        own home, what it reaches for refused, all removed afterwards."""
        sandbox = Sandbox(self.user_hermes_home)
        try:
            with watching(sandbox) as reaches:
                sandbox.new_home()
                with block_network():
                    yield reaches
        finally:
            sandbox.close()

    def _probe(self) -> Declarations:
        """The declarations, probed in a supervised child (the kit's own process never builds
        an engine, so nothing a constructor does reaches the verdict); here inside a child,
        with ``inprocess`` isolation, or where fork is missing."""
        o = self.options
        if o.isolation == "inprocess" or not fork_available() or supervised():
            return self._probe_here()
        worker = Worker(
            lambda _task: self._probe_here(),
            memory_limit=o.memory_limit,
            on_start=self._child_start,
        )
        try:
            outcome = worker.call(
                "probe", call_limit=o.timeout + GRACE_S, case_limit=self.case_cap()
            )
        finally:
            worker.close()
        if isinstance(outcome, (Died, Hung)):
            label = constructor_label(self.factory)
            if isinstance(outcome, Died):
                error = f"{label} ended the engine's process: it {outcome.describe()}"
            else:
                error = (
                    f"{label} did not return within {o.timeout:g} s (--conformance-timeout): the "
                    "engine's constructor hangs (a blocking connection, a lock, a sleep?)"
                )
            return Declarations(
                capabilities=o.capabilities, expected_failures=dict(o.xfails), error=error
            )
        return outcome

    def _child_start(self, idle: Path | None = None) -> None:
        """First thing in each supervised child: the audit hook (and, given ``idle``, the
        child's temp folder between cases: :func:`conformance.runtime.sandbox.start_child`), then
        the
        engine's module
        imported (a deferred factory resolved) outside any case's sandbox, in the real
        environment, as Hermes imports it (an engine that takes ``~`` at import gets the real
        one, and writing there is E1's finding)."""
        start_child(idle)
        resolve = getattr(self.factory, "resolve", None)
        if resolve is not None:
            try:
                resolve()
            except Exception:  # noqa: BLE001 - reported where the engine is built
                pass

    def _probe_here(self) -> Declarations:
        extra = self.options.capabilities  # validated by RunOptions.validate()
        reaches: list = []
        try:
            with self.probe_home() as reaches:
                engine = build_engine(self.factory, self.options.timeout)
        except EngineTimeout as exc:
            return Declarations(
                capabilities=extra, expected_failures=dict(self.options.xfails), error=str(exc)
            )
        except BaseException as exc:  # noqa: BLE001 - the constructor is the engine's
            if isinstance(exc, KeyboardInterrupt) and not supervised():
                raise
            return Declarations(
                capabilities=extra,
                expected_failures=dict(self.options.xfails),
                error=f"constructing the engine raised {exception_text(exc)}{where(exc)}",
                reaches=list(reaches),
            )
        if not looks_like_engine(engine):
            return Declarations(
                capabilities=extra,
                expected_failures=dict(self.options.xfails),
                error=f"the factory returned {type(engine).__name__}, not a context engine (it "
                "needs name, update_from_response, should_compress and compress)",
            )
        try:
            declared = catalogue.capabilities(
                getattr(engine, "conformance_capabilities", ()) or (),
                source=f"{type(engine).__name__}.conformance_capabilities",
            )
        except ValueError as exc:
            raise KitUsageError(str(exc)) from None
        xfails = dict(getattr(engine, "conformance_expected_failures", None) or {})
        xfails.update(self.options.xfails)
        try:
            name = str(engine.name)
        except Exception:  # A1 reports it
            name = type(engine).__name__
        # plain data only: this may travel from the probe's child to the kit's process
        return Declarations(
            name,
            frozenset(str(c) for c in declared | extra),
            {str(k): str(v) for k, v in xfails.items()},
        )

    @property
    def context(self) -> CheckContext:
        """The :class:`CheckContext` cases run with (built once the engine is bound)."""
        if self._context is None:
            o = self.options
            self._context = CheckContext(
                self.factory,
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

    @property
    def command(self) -> str:
        """The ``Repro:`` command base: this environment's pytest
        (:func:`~conformance.clauses.errors.
        pytest_command`) + the options selecting this engine and host
        (the failure file records the rest)."""
        return self.command_for(None)

    @property
    def multihost(self) -> bool:
        """True when the run checks the engine on several hosts
        (:mod:`conformance.authoring.hosts`)."""
        return len(self.options.host_profiles) > 1

    def command_for(self, host: str | None) -> str:
        """:attr:`command` for a case played on ``host`` (None: the run's hosts): a rerun of
        one host-dependent case plays that host alone."""
        if self._command is not None:
            base = self._command
        else:
            args = self.factory.cli_args() if self.factory is not None else ""
            base = f"{pytest_command()} {args}".strip()
        o = self.options
        if o.plugin_dir and "--engine-plugin" not in base:
            base += f" --engine-plugin={o.plugin_dir}"
        hosts = (host,) if host else o.host_profiles
        if hosts != ("documented",) or self.multihost:
            base += f" --host-profile={spec_text(hosts)}"
        if o.capabilities:
            base += f" --conformance-capabilities={','.join(sorted(o.capabilities))}"
        if o.timeout != DEFAULT_CHECK_TIMEOUT_S and "--conformance-timeout" not in base:
            base += f" --conformance-timeout={o.timeout:g}"  # it decides what a hang is
        return base

    @property
    def rerun_command(self) -> str:
        """:attr:`command` plus the options that decide which examples a case draws (profile),
        for the reruns by id that have no failure file."""
        return self.rerun_command_for(None)

    def rerun_command_for(self, host: str | None) -> str:
        """:attr:`rerun_command` for a case played on ``host`` (:meth:`command_for`)."""
        o = self.options
        return self.command_for(host) + (
            f" --conformance-profile={o.profile}" if o.profile != "default" else ""
        )

    # -- the stream ---------------------------------------------------------------------
    def cases(self) -> list[Any]:
        """Every case of this run, in stream order (:func:`conformance.run.cases.cases`), narrowed
        to the replayed case or to ``only``."""
        if self._cases is None:
            from conformance.run.cases import cases

            o = self.options
            out = cases(
                scenarios=o.scenarios and o.replay is None,
                scenario_files=o.scenario_files,
                checks=o.checks,
                snapshots=o.snapshots_dir is not None and o.replay is None,
            )
            if o.replay is not None:
                out = [c for c in out if c.id == o.replay["check"]]
            out = expand(
                out, o.host_profiles
            )  # one case per host view (conformance.authoring.hosts)
            if o.replay is None and o.only:
                keys = list(o.only)
                out = [
                    c
                    for c in out
                    if any(
                        c.id.startswith(k)
                        or getattr(c, "base", c).id.startswith(k)
                        or c.clause == k
                        for k in keys
                    )
                ]
            self._cases = out
            self.budget.weights = {
                c.id: float(budget(o.profile, getattr(c, "examples", None)))
                for c in out
                if c.kind not in ("scenario", "snapshot")
            }
        return self._cases

    def extend(self, cases: Iterable[Any]) -> None:
        """Add cases to this run's stream (a scenario built in code, a check made in a test);
        a supervised child forked before knows none of them, so it is ended."""
        self.cases().extend(cases)
        self._by_id = None
        self.close()

    def case(self, case_id: str) -> Any:
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

    def snapshots_dir(self) -> Path | None:
        """The engine's snapshot folder (None: the tier is off)."""
        return self.options.snapshots_dir

    def play_scenario(self, case: Any) -> Any:
        """Play ``case``'s scenario on this run's engine (this run's host profile, the per-call
        limit, :func:`kit_builtin_compressor` as the C3 fallback); returns the
        :class:`~conformance.scenarios.run.ScenarioRun`."""
        from conformance.scenarios.runner import run_scenario

        return run_scenario(
            case.scenario,
            self.factory,
            host_profile=host_of(case) or self.options.host_profile,
            timeout=self.options.timeout,
            builtin_factory=kit_builtin_compressor,
        )

    def scenario_run(self, case: Any) -> Any:
        """A run of ``case``'s scenario, played once for the HTML report's plot (the verdict's
        own runs happen in the cases' children), in a sandbox, network blocked, served the same
        engine LLM as the verdict's run (:func:`conformance.authoring.engine_llm.engine_llm` of
        its first
        expectation's id, so the plot matches the verdict's run). With fork isolation it is
        played in a supervised child, which hands back plain data (:func:`plot_view`): the
        engine never runs in this process."""
        key = scenario_key(case)
        if key not in self.scenario_runs:
            o = self.options
            if o.isolation == "inprocess" or not fork_available() or supervised():
                self.scenario_runs[key] = self._play_for_plot(case)
            else:
                worker = Worker(
                    lambda _task: plot_view(self._play_for_plot(case)),
                    memory_limit=o.memory_limit,
                    on_start=self._child_start,
                )
                try:
                    outcome = worker.call(
                        "plot", call_limit=o.timeout + GRACE_S, case_limit=self.case_cap()
                    )
                finally:
                    worker.close()
                if isinstance(outcome, (Died, Hung)):
                    outcome = PlotView(
                        None, _Recorded([], []), ("(run)", "the run's process ended")
                    )
                outcome.scenario = case.scenario
                self.scenario_runs[key] = outcome
        return self.scenario_runs[key]

    def _play_for_plot(self, case: Any) -> Any:
        first = self._scenario_group(case)[0]
        with engine_llm(first.id) as (_ledger, seed_home):
            sandbox = Sandbox(self.user_hermes_home, seed=seed_home)
            try:
                with watching(sandbox):
                    sandbox.new_home()
                    with block_network():
                        return self.play_scenario(case)
            finally:
                sandbox.close()

    @property
    def replay_draws(self) -> dict[str, Any] | None:
        """The replayed failure file's draws (None when not replaying)."""
        return replay.draws(self.options.replay) if self.options.replay is not None else None

    # -- running a case -----------------------------------------------------------------
    def skip_reason(self, case: Any) -> str | None:
        """Why ``case`` does not apply here (a skip reason), or None.

        Raises:
            EngineUnavailable: the engine could not be built (its capabilities are unknown).
        """
        abc = self.abc
        host = get_profile(host_of(case) or self.options.host_profile)
        for feature in sorted(case.needs):
            if abc.lacks(feature):
                return (
                    f"the host ABC in use ({abc.label()}) has no {feature}; clause "
                    f"{case.clause} does not exist there"
                )
            if not host.has(feature):
                return (
                    f"the host profile {host.name!r} has no {feature}; clause {case.clause} "
                    "does not exist on that host"
                )
        declared = self.declarations
        if declared.error is not None:
            raise EngineUnavailable(declared.error)
        missing = sorted(case.requires - declared.capabilities)
        if missing:
            names = ", ".join(repr(m) for m in missing)
            return f"engine lacks capability {names} (conformance_capabilities)"
        present = sorted(case.excludes & declared.capabilities)
        if present:
            names = ", ".join(repr(m) for m in present)
            return (
                f"engine declares capability {names}; the {'/'.join(sorted(case.excludes))} "
                "variant of this case applies instead"
            )
        return None

    def repro(self, case: Any, replay_file: str | None = None, violation: Any = None) -> str:
        """The ``Repro:`` command of ``case``: the failure file when one was written (or the
        one this run replays), else the case's own rerun (by id, by file, by snapshot case)."""
        host = host_of(case)
        replay_file = replay_file or self.options.replay_file
        if replay_file:
            return f"{self.command_for(host)} --conformance-replay {replay_file}"
        if hasattr(case, "repro"):
            return case.repro(self.rerun_command_for(host), violation)
        return f"{self.rerun_command_for(host)} -k '{case.id}'"

    def run_case(self, case: Any, **extras: Any) -> Result:
        """Run one case by the session's rules (module doc); never raises but KeyboardInterrupt.

        Checks and snapshot captures run in a supervised child
        (:mod:`conformance.runtime.supervisor`),
        in a sandbox of their own (:mod:`conformance.runtime.sandbox`), with their share of the
        drawing
        budget (:mod:`conformance.authoring.budget`); a scenario file is played once, in one
        child, and
        all its expectations judged there. ``extras``: the snapshot tier's syrupy ``compare``.
        """
        started = time.perf_counter()
        if not any(c is case for c in self.cases()):
            self.extend([case])  # a case made outside the stream (a test's, say)
        try:
            reason = self.skip_reason(case)
        except EngineUnavailable as exc:
            if self.declarations.reaches:  # refused by the sandbox: a finding, not a usage error
                return self._unbuildable(case, started)
            # one root cause: the first case reports it, the others point to it
            return self._error(case, f"engine not available: {exc}", started, cause="construct")
        if reason:
            return self._result(case, "skipped", reason, started)
        cached = self.scenario_attempts.get(scenario_key(case), {})
        if case.id in cached:
            return self._settle(case, cached[case.id], started, extras)
        if self.hangs.exhausted():
            return self._error(case, self.hangs.reason(), started)
        if case.kind == "scenario":
            group = self._scenario_group(case)
            if self.scenario_budget.exhausted() and scenario_key(case) not in self.given_runs:
                note = self.scenario_budget.note().replace("NAME", _scenario_name(case))
                attempts = {
                    c.id: Attempt(c.id, "skipped", text=note, budget_reached=True) for c in group
                }
            else:
                attempts = self._supervised(("scenario", case.id), group)
                self.scenario_budget.charge(_engine_time(attempts.values(), started))
                _cost_on(attempts, case.id)
            self.scenario_attempts[scenario_key(case)] = attempts
            return self._settle(case, attempts[case.id], started, extras)
        share = self.budget.share(case.id) if case.kind != "snapshot" else None
        attempts = self._supervised(("case", case.id, share), [case])
        self.budget.charge(case.id, _engine_time(attempts.values(), started))
        return self._settle(case, attempts[case.id], started, extras)

    def _unbuildable(self, case: Any, started: float) -> Result:
        """The result of ``case`` when the engine cannot be built in its sandbox (its
        constructor reached outside it, was refused and raised): kit clause E1, MUST, one root
        cause for every case of the run."""
        declared = self.declarations
        finding = ContractViolation(
            E1,
            MUST,
            f"the engine cannot be built in its sandbox ({declared.error}): "
            + _reach_detail(declared.reaches),
        )
        finding.root_cause = "E1|constructor|" + declared.reaches[0].detail
        return self._failed(case, finding, None, started)

    def _scenario_group(self, case: Any) -> list[Any]:
        """Every case of ``case``'s scenario file (its expectations), in file order."""
        return [
            c
            for c in self.cases()
            if getattr(c, "path", None) == case.path and host_of(c) == host_of(case)
        ] or [case]

    def serve(self, task: tuple) -> dict[str, Attempt]:
        """Run one task (in the supervised child, or here): ``("case", id, share)`` or
        ``("scenario", id)``; returns the attempts by case id."""
        if task[0] == "scenario":
            return attempt_scenario(self, self._scenario_group(self.case(task[1])))
        return {task[1]: attempt(self, self.case(task[1]), task[2])}

    def _supervised(self, task: tuple, cases: list[Any]) -> dict[str, Attempt]:
        """``task`` in the supervised child (or here without fork); a child that died or hung
        gives every case of ``cases`` the attempt that says so."""
        o = self.options
        if o.isolation == "inprocess" or not fork_available():
            return self.serve(task)
        self.context  # noqa: B018 - built before the child forks, so it inherits it
        if self._worker is None:
            self._idle = self._idle or idle_folder()  # the child's temp folder between cases
            self._worker = Worker(
                self.serve,
                memory_limit=o.memory_limit,
                on_start=functools.partial(self._child_start, self._idle),
            )
        try:
            outcome = self._worker.call(
                task, call_limit=o.timeout + GRACE_S, case_limit=self.case_cap()
            )
        except RefusedAnswer as exc:  # the child handed back more than data: never loaded here
            self.close()
            return {c.id: Attempt(c.id, "error", text=str(exc)) for c in cases}
        if isinstance(outcome, (Died, Hung)):
            return {c.id: from_death(c, outcome, self) for c in cases}
        return outcome

    def close(self) -> None:
        """End the supervised child, if any (a later case forks a new one)."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._idle is not None:
            shutil.rmtree(self._idle, ignore_errors=True)
            self._idle = None

    def case_cap(self) -> float:
        """Seconds a whole case may take before its child is killed as a kit fault: the budget
        and the per-call limit bound the work, so this is a generous backstop."""
        o = self.options
        return max(600.0, 20 * o.timeout + (o.budget if o.budget > 0 else 0))

    def _result(self, case: Any, outcome: str, message: str, started: float, **kw: Any) -> Result:
        clause, level = kw.pop("clause", case.clause), kw.pop("level", case.level)
        return Result(
            case.id,
            clause,
            level,
            outcome,
            message,
            time.perf_counter() - started,
            kind=getattr(case, "kind", "contract"),
            title=getattr(case, "title", ""),
            hosts=tuple(getattr(case, "hosts", ())),
            **kw,
        )

    def _error(self, case: Any, detail: str, started: float, cause: str = "") -> Result:
        """An error result; ``cause`` (a root-cause key) groups it with the errors of the same
        cause: the verdict counts them once, and every one but the first says which it is."""
        message = render(case.clause, case.level, detail, repro=self.repro(case))
        if cause:
            earlier = self._root_seen.setdefault(cause, case.id)
            if earlier != case.id:
                message = before_repro(
                    message, f"Same root cause as {earlier} (the verdict counts it once)."
                )
        return self._result(case, "error", message, started, root_cause=cause)

    def _settle(self, case: Any, att: Attempt, started: float, extras: dict) -> Result:
        """Turn an attempt into the case's result (in this process): the snapshot comparison,
        the hang budget, expected failures, failure files, sandbox findings, budget notes;
        the result carries the attempt's engine-LLM ledger (:func:`conformance.authoring.engine_llm.
        ledger_row`)."""
        result = self._settle_outcome(case, att, started, extras)
        result.llm = ledger_row(att.llm)
        return result

    def _settle_outcome(self, case: Any, att: Attempt, started: float, extras: dict) -> Result:
        if att.hang is not None and att.counted:
            att.counted = False
            self.hangs.record(att.hang or None)
        if case.kind == "snapshot" and att.outcome == "passed":
            compare = extras.get("compare")
            try:
                if compare is None:
                    compare_with_file(self.snapshots_dir(), case.case_id, att.value)
                else:
                    compare(att.value)
            except ContractViolation as exc:
                att = Attempt(case.id, "finding", finding=exc, reaches=att.reaches)
        xfail = _xfail_reason(case, self.declarations.expected_failures)
        if att.outcome == "skipped":
            return self._result(
                case, "skipped", att.text, started, budget_reached=att.budget_reached
            )
        if att.outcome == "error":
            return self._error(case, att.text, started)
        if att.outcome == "finding":
            if case.kind == "snapshot" and att.hang is not None:  # no mismatch: it did not run
                return self._error(case, _detail(att.finding), started)
            result = self._failed(case, att.finding, xfail, started)
            if att.reaches:
                result.message += " Also: " + _reach_text(att.reaches)
            return result
        note = _budget_note(att)
        if att.reaches:
            keys = ["E1|" + r.detail for r in att.reaches]
            earlier = self._root_seen.get(keys[0])
            if earlier is None or earlier == case.id or not all(k in self._root_seen for k in keys):
                finding = ContractViolation(E1, MUST, _reach_detail(att.reaches))
                finding.root_cause = keys[0]
                for key in keys[1:]:
                    self._root_seen.setdefault(key, case.id)
                return self._failed(case, finding, None, started)
            # the same reach (the constructor's, say) as an earlier case: one root cause is one
            # finding, reported there; this case's own clause was judged and held
            note = (
                f"{note}; " if note else ""
            ) + f"passed (E1: {att.reaches[0].describe()} again, reported under {earlier})"
        if xfail is not None:
            text = f"expected failure did not happen ({xfail})"
            return self._result(case, "xpassed", text, started)
        self._clear_stale_failure(case)
        return self._result(
            case,
            "passed",
            note,
            started,
            examples_run=att.examples if att.asked else None,
            examples_asked=att.asked or None,
            budget_reached=att.budget_reached,
        )

    def _failed(self, case: Any, exc: Any, xfail: str | None, started: float) -> Result:
        """A finding: its failure file, xfail rule and ``Repro:`` line."""
        replay_file = self._write_failure(case, exc)
        xfails = self.declarations.expected_failures
        why = xfail if xfail is not None else xfail_for_clause(exc.clause, xfails)
        size = example_messages(getattr(exc, "example", None))
        appendix = getattr(exc, "appendix", "")
        cause = getattr(exc, "root_cause", "")
        if why is not None:
            text = render(exc.clause, exc.level, _detail(exc)) + f" [expected failure: {why}]"
            return self._result(
                case,
                "xfailed",
                text,
                started,
                clause=exc.clause,
                level=exc.level,
                replay_file=replay_file,
                example_messages=size,
            )
        text = render(exc.clause, exc.level, _detail(exc), repro=self.repro(case, replay_file, exc))
        earlier = self._root_seen.setdefault(cause, case.id) if cause else case.id
        if earlier != case.id:
            text = before_repro(text, f"Same root cause as {earlier} (the verdict counts it once).")
        if appendix:
            text += "\n" + appendix
        return self._result(
            case,
            "failed",
            text,
            started,
            clause=exc.clause,
            level=exc.level,
            replay_file=replay_file,
            example_messages=size,
            root_cause=cause,
        )

    def failure_file(self, case: Any) -> Path | None:
        """Where ``case``'s failure file goes for this engine (None without a failures dir)."""
        if self.options.failures_dir is None or self.factory is None:
            return None
        return replay.failure_path(self.options.failures_dir, self.factory.slug, case.id)

    def _write_failure(self, case: Any, exc: Any) -> str | None:
        path = self.failure_file(case)
        example = getattr(exc, "example", None)
        if path is None or example is None or self.options.replay is not None:
            return None
        o = self.options
        return replay.write_failure(
            path,
            {
                "check": getattr(case, "base", case).id,  # replayed on its host alone
                "clause": exc.clause,
                "level": exc.level,
                "engine": self.factory.record(),
                "host_profile": host_of(case) or o.host_profile,
                "profile": o.profile,
                "capabilities": sorted(o.capabilities),
                "message": exc.render(),
                "example": example,
                "seed": o.seed,
                "derandomize": o.derandomize,
            },
        )

    def _clear_stale_failure(self, case: Any) -> None:
        path = self.failure_file(case)
        if path is not None and self.options.replay is None:
            replay.clear_failure(path, case.id)

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


@dataclass
class _Recorded:
    """What the report plots of a scenario run: provider calls and compactions (plain data)."""

    provider_calls: list
    compactions: list


@dataclass
class PlotView:
    """A scenario run as the HTML report reads it (``scenario``, ``recorder.provider_calls``,
    ``recorder.compactions``, ``stopped``), made of plain values only, so that it can travel
    from the child that played it to the kit's process without running engine code there."""

    scenario: Any
    recorder: _Recorded
    stopped: tuple | None = None


def _plain_record(record: Any) -> Any:
    """A copy of a recorder dataclass whose every field is a plain int, float, bool, str or
    None (an engine's int subclass, say, becomes an int)."""
    import dataclasses

    def plain(value: Any) -> Any:
        if value is None or type(value) in (int, float, str, bool):
            return value
        for kind in (bool, int, float):
            if isinstance(value, kind):
                return kind(value)
        return str(value)

    values = {f.name: plain(getattr(record, f.name)) for f in dataclasses.fields(record)}
    return type(record)(**values)


def plot_view(run: Any) -> PlotView:
    """:class:`PlotView` of a :class:`~conformance.scenarios.run.ScenarioRun` (in the child)."""
    recorder = run.recorder
    stopped = tuple(str(x) for x in run.stopped) if run.stopped else None
    return PlotView(
        None,
        _Recorded(
            [_plain_record(c) for c in recorder.provider_calls],
            [_plain_record(e) for e in recorder.compactions],
        ),
        stopped,
    )


def _reach_text(reaches: list[Any]) -> str:
    return render(E1, MUST, _reach_detail(reaches))


def _reach_detail(reaches: list[Any]) -> str:
    """E1's text: what the engine reached for outside its sandbox (blocked)."""
    shown = "; ".join(r.describe() for r in reaches[:3])
    more = f" (+{len(reaches) - 3} more)" if len(reaches) > 3 else ""
    return (
        f"the engine reached outside its sandbox: expected loopback only, no processes and "
        f"writes only under its own home, got: {shown}{more} (blocked: the engine got an "
        "OSError; the finding stands even when the engine swallowed it)"
    )


def _engine_time(attempts: Iterable[Any], started: float) -> float:
    """Seconds of engine calls the attempts report (what budgets are charged); the wall time
    since ``started`` for a case whose process died or hung (it could not report)."""
    attempts = list(attempts)
    if any(a.hang is not None or a.outcome == "error" for a in attempts):
        return time.perf_counter() - started
    return sum(a.engine_s for a in attempts)


def scenario_key(case: Any) -> str:
    """The key of ``case``'s scenario run: its file, and its host in a run of several."""
    host = host_of(case)
    return str(getattr(case, "path", "")) + (f"@{host}" if host else "")


def _scenario_name(case: Any) -> str:
    """The scenario's name in a case id ``scenario:NAME:EXPECTATION``."""
    return case.id.split(":")[1] if case.id.count(":") >= 2 else case.id


def _budget_note(att: Any) -> str:
    """``passed: 9 of 40 examples in 11.2 s, budget reached`` when the share ran out, else ""."""
    if not att.budget_reached:
        return ""
    return (
        f"passed: {att.examples} of {att.asked} examples in {att.seconds:.1f} s, budget reached "
        "(--conformance-budget: the engine's calls are slow, so the check stopped drawing; no "
        "failure)"
    )


def _detail(exc: Any) -> str:
    """A finding's text after the ``[CLAUSE LEVEL]`` prefix (method included for hangs)."""
    if isinstance(exc, HostileEngine) and exc.method:
        return f"{exc.method}(): {exc.detail}"
    return exc.detail


def run_conformance(
    engine_factory: Callable[[], Any],
    *,
    profile: str = "default",
    only: Iterable[str] | None = None,
    failures_dir: Path | None = None,
    derandomize: bool = True,
    xfails: Mapping[str, str] | None = None,
    timeout: float | None = None,
    replay: Path | None = None,
    plugin_dir: str | None = None,
    scenarios: bool = True,
    seed: int | None = None,
    window: int | None = None,
    shrink: bool = True,
    host_profile: str | Iterable[str] | None = None,
    max_timeouts: int | None = None,
    capabilities: Iterable[str] = (),
    strict: bool = False,
    json_path: Path | None = None,
    budget: float = DEFAULT_BUDGET_S,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    isolation: str = "fork",
) -> list[Result]:
    """Run every case of the stream (checks and bundled scenario expectations) against
    ``engine_factory``, without pytest: the same cases, outcomes and messages as
    ``pytest --engine=...``.

    Args:
        engine_factory: zero-argument callable returning a fresh engine.
        profile: ``quick``, ``default`` or ``thorough``.
        only: case ids, id prefixes or clause ids to run.
        failures_dir: where failure files go (none written if None).
        xfails: expected failures ``{case id | prefix | clause: reason}`` (non-strict).
        timeout: per-case limit in seconds (default 120).
        replay: a failure file; runs only its case, once, on the recorded draws.
        plugin_dir: engine plugin folder for the R4-R6 checks.
        scenarios: False leaves the bundled scenario library out.
        shrink: False skips Hypothesis shrinking.
        host_profile: the host profile(s) to check on: a name (``documented``, ``hermes-0.19``,
            ...), a comma-separated list, ``all``, or a sequence of names; None: the default
            hosts (:func:`conformance.authoring.hosts.default_hosts`). Several hosts: each case
            runs once
            per host view and each result's ``hosts`` says which hosts it stands for.
        max_timeouts: hung cases after which the rest are not run (default 3; 0: no cap).
        capabilities: capabilities to add to the engine's declared ones.
        strict: the JSON verdict's exit rule (SHOULD failures fail too).
        json_path: write the JSON verdict there.
        budget: seconds the checks may spend drawing examples (0: no budget).
        memory_limit: a case child's address-space cap in bytes (None: none).
        isolation: ``fork`` (each case in a supervised child) or ``inprocess``.
    Returns:
        one :class:`Result` per case, in stream order.
    Raises:
        KitUsageError: a bad argument (an unknown capability or profile, a malformed replay
            file, a non-positive timeout).
    """
    options = RunOptions(
        profile=profile,
        derandomize=derandomize,
        seed=seed,
        timeout=DEFAULT_CHECK_TIMEOUT_S if timeout is None else float(timeout),
        max_timeouts=DEFAULT_MAX_TIMEOUTS if max_timeouts is None else int(max_timeouts),
        shrink=shrink,
        strict=strict,
        host_profile="" if host_profile is None else host_profile,
        capabilities=frozenset(capabilities),
        xfails=dict(xfails or {}),
        replay=load_failure(Path(replay)) if replay is not None else None,
        replay_file=os.path.abspath(replay) if replay is not None else None,
        failures_dir=Path(failures_dir) if failures_dir is not None else None,
        scenarios=scenarios,
        plugin_dir=plugin_dir,
        window=window,
        only=tuple(only or ()),
        budget=budget,
        memory_limit=memory_limit,
        isolation=isolation,
    )
    session = ConformanceSession(options, engine_factory)
    from conformance.run.verdict import Verdict

    try:
        results = session.run_all()
    except KeyboardInterrupt:  # the user's Ctrl-C: the verdict says how far the run got
        if json_path is not None:
            verdict = Verdict(
                list(session.results),
                interrupted=True,
                total=len(session.cases()),
                host_order=options.host_profiles,
            )
            verdict.write_json(Path(json_path), session=session)
        raise
    if json_path is not None:
        Verdict(results, total=len(results), host_order=options.host_profiles).write_json(
            Path(json_path), session=session
        )
    return results


def _cost_on(attempts: dict[str, Attempt], case_id: str) -> None:
    """Put a scenario run's engine-LLM ledger on the attempt of ``case_id`` (the expectation
    whose run it was, settled first: a skipped earlier expectation never hides the cost) and
    none on the others, so the run's cost counts once."""
    ledger = next((a.llm for a in attempts.values() if a.llm), {})
    for a in attempts.values():
        a.llm = {}
    if case_id in attempts:
        attempts[case_id].llm = ledger


def scenario_results(
    scenario: Any,
    engine_factory: Callable[[], Any],
    *,
    run: Any = None,
    xfails: Mapping[str, str] | None = None,
    host_profile: str = "documented",
    timeout: float | None = None,
) -> list[Result]:
    """Judge every expectation of one scenario on ``engine_factory`` by the session's rules (the
    same skip, xfail, message and ``Repro:`` rules as every front end).

    Args:
        scenario: a parsed :class:`~conformance.scenarios.spec.Scenario` (from a file or text).
        engine_factory: zero-argument callable returning a fresh engine.
        run: a :class:`~conformance.scenarios.run.ScenarioRun` of it already played (else it
            is played here, once).
        xfails: expected failures ``{case id | prefix | clause: reason}``.
        host_profile: ``documented`` or ``hermes-0.19``.
        timeout: the scenario's limit in seconds (default 120).
    Returns:
        one :class:`Result` per expectation, in file order; the engine's own LLM calls of the
        play are on the first row's ``llm`` (``{}`` everywhere for a ``run`` handed in: its
        calls were made, unrecorded, where it was played).
    """
    from conformance.run.cases import ScenarioCase

    options = RunOptions(
        checks=False,
        scenarios=False,
        xfails=dict(xfails or {}),
        host_profile=host_profile,
        timeout=DEFAULT_CHECK_TIMEOUT_S if timeout is None else float(timeout),
    )
    session = ConformanceSession(options, engine_factory)
    path = Path(scenario.source)
    if run is not None:
        session.scenario_runs[str(path)] = run
        session.given_runs[str(path)] = run
    cases = [ScenarioCase(path, scenario, exp, bundled=False) for exp in scenario.expectations]
    session.extend(cases)
    try:
        return [session.run_case(c) for c in cases]
    finally:
        session.close()


__all__ = [
    "kit_builtin_compressor",
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
