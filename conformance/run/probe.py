"""Probing the engine once, and the skip rule that reads what it declares.

:func:`probe` builds one engine instance, in a supervised child (the kit's own process never
builds an engine, so nothing a constructor does reaches the verdict), and reads its
:class:`~conformance.run.options.Declarations`: its name, its capabilities, its expected
failures, or why it cannot be built. :func:`child_start` is the first thing every supervised
child of a run does. :func:`skip_reason` is the one skip rule of every case: a host feature the
host ABC or the host profile lacks, then a capability the engine does (not) declare.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.authoring.engine_frames import where
from conformance.authoring.hosts import host_of
from conformance.clauses import catalogue
from conformance.clauses.errors import (
    EngineTimeout,
    EngineUnavailable,
    KitUsageError,
    exception_text,
)
from conformance.run.execution import GRACE_S
from conformance.run.options import Declarations, RunOptions
from conformance.runtime.engine_loading import looks_like_engine
from conformance.runtime.sandbox import Reach, Sandbox, block_network, start_child, watching
from conformance.runtime.supervisor import Died, Hung, Worker, fork_available, supervised
from conformance.runtime.timeouts import build_engine, constructor_label
from simulator.host.profiles import get_profile

if TYPE_CHECKING:
    from conformance.authoring.case import Case


@contextlib.contextmanager
def probe_home(user_hermes_home: str | None) -> Iterator[list[Reach]]:
    """A sandbox for an engine the kit builds outside a case (the declarations probe): its
    own home, what it reaches for refused, all removed afterwards; yields the list of what it
    reached for (filled as it does). ``user_hermes_home``: the user's ``HERMES_HOME`` (None:
    unset)."""
    sandbox = Sandbox(user_hermes_home)
    try:
        with watching(sandbox) as reaches:
            sandbox.new_home()
            with block_network():
                yield reaches
    finally:
        sandbox.close()


def child_start(factory: Any, idle: Path | None = None) -> None:
    """First thing in each supervised child: the audit hook (and, given ``idle``, the child's
    temp folder between cases: :func:`conformance.runtime.sandbox.start_child`), then the
    engine's module imported (``factory``'s deferred target resolved) outside any case's
    sandbox, in the real environment, as Hermes imports it (an engine that takes ``~`` at
    import gets the real one, and writing there is E1's finding). An import error is not
    raised here: it is reported where the engine is built."""
    start_child(idle)
    resolve = getattr(factory, "resolve", None)
    if resolve is not None:
        try:
            resolve()
        except Exception:  # noqa: BLE001 - reported where the engine is built
            pass


def probe(
    options: RunOptions, factory: Any, user_hermes_home: str | None, case_cap: float
) -> Declarations:
    """The engine's declarations, probed in a supervised child (module doc); here inside a
    child, with ``inprocess`` isolation, or where fork is missing. A constructor that hangs
    past ``options.timeout`` or ends the child gives declarations with ``error`` set.

    Args:
        options: the run's options (isolation, limits, capabilities and xfails added).
        factory: the engine factory. user_hermes_home: the user's ``HERMES_HOME``, or None.
        case_cap: seconds the child may take in all before it is killed as a kit fault.
    Raises:
        KitUsageError: the engine declares an unknown capability.
    """
    o = options
    if o.isolation == "inprocess" or not fork_available() or supervised():
        return probe_here(options, factory, user_hermes_home)
    worker = Worker(
        lambda _task: probe_here(options, factory, user_hermes_home),
        memory_limit=o.memory_limit,
        on_start=functools.partial(child_start, factory),
    )
    try:
        outcome = worker.call("probe", call_limit=o.timeout + GRACE_S, case_limit=case_cap)
    finally:
        worker.close()
    if isinstance(outcome, (Died, Hung)):
        label = constructor_label(factory)
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


def probe_here(options: RunOptions, factory: Any, user_hermes_home: str | None) -> Declarations:
    """The declarations read from one engine built in this process, in its own sandbox
    (:func:`probe_home`) under the per-call limit; arguments as :func:`probe`.

    Raises:
        KitUsageError: the engine declares an unknown capability.
        KeyboardInterrupt: the user's Ctrl-C (outside a supervised child).
    """
    extra = options.capabilities  # validated by RunOptions.validate()
    reaches: list = []
    try:
        with probe_home(user_hermes_home) as reaches:
            engine = build_engine(factory, options.timeout)
    except EngineTimeout as exc:
        return Declarations(
            capabilities=extra, expected_failures=dict(options.xfails), error=str(exc)
        )
    except BaseException as exc:  # noqa: BLE001 - the constructor is the engine's
        if isinstance(exc, KeyboardInterrupt) and not supervised():
            raise
        return Declarations(
            capabilities=extra,
            expected_failures=dict(options.xfails),
            error=f"constructing the engine raised {exception_text(exc)}{where(exc)}",
            reaches=list(reaches),
        )
    if not looks_like_engine(engine):
        return Declarations(
            capabilities=extra,
            expected_failures=dict(options.xfails),
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
    xfails.update(options.xfails)
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


def skip_reason(
    case: Case, abc: Any, host_profile: str, declarations: Callable[[], Declarations]
) -> str | None:
    """Why ``case`` does not apply here (a skip reason), or None.

    Args:
        case: the case. abc: the host ABC in use (its ``lacks(feature)`` and ``label()``).
        host_profile: the run's host profile (a case played on one host uses that one).
        declarations: gives the engine's declarations; called only once the host rules
            pass (a case the host lacks is skipped without probing the engine).
    Raises:
        EngineUnavailable: the engine could not be built (its capabilities are unknown).
    """
    host = get_profile(host_of(case) or host_profile)
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
    declared = declarations()
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


def probe_problem(declared: Declarations, what: str, *, not_run: str) -> str | None:
    """Why the engine named ``what`` (its command-line words) cannot be checked at all, as one
    paragraph that says what to do, or None: every front end's usage error for an engine that
    the declarations probe (:func:`probe`) could not build. A constructor the sandbox refused
    (kit clause E1) is no usage error: its cases report it.

    Args:
        declared: the probe's declarations.
        what: how the engine was given (``--engine=mypkg:Engine``), cut to 300 characters.
        not_run: what the front end did not run, ``check`` or ``scenario``.
    """
    problem = declared.error
    if problem is None or declared.reaches:
        return None
    if len(what) > 300:
        what = what[:240] + f"...<{len(what)} chars>"
    if problem.startswith("the factory returned"):
        return f"{what}: {problem}. Return a new ContextEngine instance."
    if problem.startswith("constructing the engine raised") and "abstract class" in problem:
        return (
            f"{what}: {problem}. Implement every abstract method the error names (the "
            "ContextEngine ABC's: docs/write-your-own-engine.md lists them), or give a "
            "concrete subclass as MODULE:ATTR."
        )
    if problem.startswith("constructing the engine raised"):
        return (
            f"{what}: {problem}. Fix the constructor, or pass the arguments it needs with "
            "--engine-kwargs='{...}' (a JSON object), or give a factory function as MODULE:ATTR."
        )
    return f"{what}: {problem}. No {not_run} was run."


__all__ = ["child_start", "probe", "probe_here", "probe_home", "probe_problem", "skip_reason"]
