"""The entry points without pytest: :func:`run_conformance` (a whole run) and
:func:`scenario_results` (one scenario's expectations).

Both build a :class:`~conformance.run.conformance_session.ConformanceSession` and run cases by
its rules, so they give the same cases, outcomes and messages as ``pytest --engine=...``; both
are importable from :mod:`conformance.run.session` (and ``run_conformance`` from
:mod:`conformance`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from conformance.authoring.budget import DEFAULT_BUDGET_S
from conformance.authoring.context import DEFAULT_CHECK_TIMEOUT_S
from conformance.run.conformance_session import ConformanceSession
from conformance.run.options import RunOptions
from conformance.run.replay import load as load_failure
from conformance.run.results import Result
from conformance.runtime.supervisor import DEFAULT_MEMORY_LIMIT
from conformance.runtime.timeouts import DEFAULT_MAX_TIMEOUTS


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
        # a sequence of names too: RunOptions.validate() parses either
        host_profile="" if host_profile is None else host_profile,  # type: ignore[arg-type]
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


__all__ = ["run_conformance", "scenario_results"]
