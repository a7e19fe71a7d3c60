"""What a check gets: the engine factory, the Hypothesis budget, draws that can be replayed.

Checks build a fresh engine per example with :meth:`CheckContext.new_engine`, which calls
``update_model`` with the check window (small by default, 16 000 tokens, so that
threshold-crossing histories stay small; Hermes itself refuses windows under 64k, a
documented divergence: docs/coverage.md).

Drawing goes through :meth:`CheckContext.examples`: the check body receives a ``draw``
function; every value drawn is labelled and recorded, so a failure carries the shrunk draws
(written to the run's failure file) and ``--conformance-replay`` runs the body once with
exactly those values instead of drawing. How many examples a check draws is its registered
budget (``@check(examples=N)``) scaled by the profile (:meth:`CheckContext.budget`).
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from conformance.authoring.budget import SHRINK_GRACE_S
from conformance.authoring.engine_frames import where
from conformance.authoring.hypothesis_profiles import PROFILES, check_settings, in_ci
from conformance.clauses.errors import (
    CheckSkipped,
    ContractViolation,
    EngineUnavailable,
    exception_text,
)
from conformance.runtime.timeouts import HangBudget, calling, constructor_label
from simulator.host.calls import accepted_kwargs, update_model_kwargs
from simulator.host.shim import AbcInfo, abc_info

#: Default model window used by checks, in tokens.
CHECK_WINDOW_TOKENS = 16_000
CHECK_MODEL = "sim-model"

#: How a check's own budget (its examples under ``default``) scales: ``thorough`` draws this
#: many times more; ``quick`` draws at most ``PROFILES["quick"]``.
THOROUGH_SCALE = 5
#: Default per-check wall-clock limit in seconds (hostile engines that hang).
DEFAULT_CHECK_TIMEOUT_S = 120.0

#: The draws of the example being run (set by :meth:`CheckContext.examples`).
CURRENT_DRAWS: contextvars.ContextVar = contextvars.ContextVar("conformance_draws", default=None)


def budget(profile: str, examples: int | None) -> int:
    """Hypothesis examples for a check whose own budget is ``examples`` (its draws under the
    ``default`` profile; None: the profile's full count, :data:`PROFILES`)."""
    full = PROFILES.get(profile, PROFILES["default"])
    if examples is None:
        return full
    if profile == "quick":
        return min(examples, full)
    if profile == "thorough":
        return examples * THOROUGH_SCALE
    return examples


class _Draw:
    """``draw(strategy, label)``: draws through Hypothesis and records the value by label."""

    def __init__(self, data: Any):
        self._data = data
        self.values: dict[str, Any] = {}

    def __call__(self, strategy: Any, label: str) -> Any:
        value = self._data.draw(strategy, label=label)
        self.values[_unique(self.values, label)] = value
        return value


class _ReplayDraw:
    """``draw(strategy, label)`` during replay: returns the recorded value for ``label``."""

    def __init__(self, recorded: Mapping[str, Any]):
        self._recorded = dict(recorded)
        self.values: dict[str, Any] = {}

    def __call__(self, strategy: Any, label: str) -> Any:
        key = _unique(self.values, label)
        if key not in self._recorded:
            raise CheckSkipped(
                f"replay file has no draw {key!r} for this check (recorded: "
                f"{', '.join(sorted(self._recorded)) or 'none'}); was it written by another "
                "kit version?"
            )
        value = self._recorded[key]
        self.values[key] = value
        return value


#: Root causes (engine exceptions, by method, type and engine frame) already reported in this
#: process: a later case that hits one stops at its first example, unshrunk, since the verdict
#: points it to the first case anyway.
SEEN_ROOT_CAUSES: set[str] = set()


class _KnownRootCause(BaseException):
    """Carries a finding whose root cause was reported before out of Hypothesis at once (a
    BaseException: Hypothesis neither retries nor shrinks it)."""

    def __init__(self, violation: ContractViolation):
        super().__init__(str(violation))
        self.violation = violation


class BudgetSpent(BaseException):
    """The check's share of the drawing budget ran out: Hypothesis stops at once (a
    BaseException, so it does not retry or shrink it) and the check ends with what it found."""


def _example_size(exc: Any) -> int:
    """Messages in a finding's drawn transcripts (the smallest finding is the one reported)."""
    draws = (getattr(exc, "example", None) or {}).get("draws") or {}
    return sum(len(v) for v in draws.values() if isinstance(v, list))


def _unique(values: Mapping[str, Any], label: str) -> str:
    if label not in values:
        return label
    n = 2
    while f"{label}#{n}" in values:
        n += 1
    return f"{label}#{n}"


@dataclass
class CheckContext:
    """What one check runs with (built by the session, :mod:`conformance.run.conformance_session`).

    Attributes:
        engine_factory: returns a new engine per call (an ``EngineFactory`` or any callable).
        profile: ``quick``, ``default`` or ``thorough`` (the Hypothesis budget).
        derandomize: Hypothesis derandomize (default True, a deterministic verdict; always
            True under CI).
        window: context length passed to ``update_model`` for each new engine, in tokens.
        abc: which ContextEngine ABC is in use.
        timeout: per-check wall-clock limit in seconds.
        seed: Hypothesis seed when not derandomized (recorded in replay files).
        replay: recorded draws to run once instead of drawing (``--conformance-replay``).
        plugin_dir: an engine plugin folder for the R4-R6 checks (``--engine-plugin``).
        shrink: shrink failing examples (off: faster failures with longer examples).
        host_profile: the host the kit plays (``documented`` or ``hermes-0.19``).
        capabilities: the engine's declared capabilities plus the command line's.
        hangs: the run's :class:`~conformance.runtime.timeouts.HangBudget`.
        check: the check being run (its registered budget sizes :meth:`examples`).
        sandbox: the case's :class:`~conformance.runtime.sandbox.Sandbox` (each new engine gets
        its own
            home in it), or None outside a case.
        share: the check's :class:`~conformance.authoring.budget.Share` of the run's drawing
        budget (None:
            unlimited).
        on_finding: called with each finding as :meth:`examples` meets it (the session hands it
            to the parent process at once, so a later death or hang cannot lose it).
    """

    engine_factory: Callable[[], Any]
    profile: str = "default"
    derandomize: bool = True
    window: int = CHECK_WINDOW_TOKENS
    abc: AbcInfo = field(default_factory=abc_info)
    timeout: float = DEFAULT_CHECK_TIMEOUT_S
    seed: int | None = None
    replay: dict[str, Any] | None = None
    plugin_dir: str | None = None
    shrink: bool = True
    host_profile: str = "documented"
    capabilities: frozenset = frozenset()
    hangs: HangBudget = field(default_factory=HangBudget)
    check: Any = None
    sandbox: Any = None
    share: Any = None
    on_finding: Any = None

    def __post_init__(self) -> None:
        if in_ci():
            self.derandomize = True

    def for_check(self, chk: Any, **changes: Any) -> CheckContext:
        """A copy of this context for running ``chk`` (``changes``: replay draws, the sandbox,
        the budget share, the finding callback)."""
        return dataclasses.replace(self, check=chk, **changes)

    def new_engine(
        self, *, window: int | None = None, configure: bool = True, model: str = CHECK_MODEL
    ) -> Any:
        """A fresh engine; with ``configure``, ``update_model(model, window)`` is called with the
        host's keyword arguments (:func:`simulator.host.calls.update_model_kwargs`).

        In a case, the engine first gets its own home (:meth:`Sandbox.new_home
        <conformance.runtime.sandbox.Sandbox.new_home>`). While the constructor and update_model run
        they are the call in flight (:func:`~conformance.runtime.timeouts.calling`), so a hang
        there is
        reported as ``MyEngine(): did not return within N s`` (or ``update_model()``).
        ``update_model`` gets the host's keywords that its signature accepts.

        Raises:
            EngineUnavailable: the factory or update_model raised.
        """
        if self.sandbox is not None:
            self.sandbox.new_home()  # HOME, HERMES_HOME, TMPDIR and the cwd: this engine's own
        try:
            with calling(constructor_label(self.engine_factory)[:-2]):
                engine = self.engine_factory()
            if configure and callable(getattr(engine, "update_model", None)):
                # the keywords the host passes that the signature accepts: an update_model()
                # without api_mode= is O4's finding (and S0's), not every other check's
                kwargs = accepted_kwargs(
                    engine.update_model, update_model_kwargs(model, window or self.window)
                )
                with calling("update_model"):
                    try:
                        engine.update_model(**kwargs)
                    except Exception as exc:
                        raise EngineUnavailable(
                            f"update_model() raised {exception_text(exc)}{where(exc)}"
                        ) from exc
        except EngineUnavailable:
            raise
        except Exception as exc:
            raise EngineUnavailable(
                f"constructing the engine raised {exception_text(exc)}{where(exc)}"
            ) from exc
        return engine

    def budget(self) -> int:
        """Hypothesis examples for the check being run: its registered budget scaled by the
        profile (:func:`budget`)."""
        return budget(self.profile, getattr(self.check, "examples", None))

    def settings(self, **overrides: Any) -> settings:
        """Hypothesis settings for this check: its profile's registered settings
        (:mod:`conformance.authoring.hypothesis_profiles`: no deadline, no database, quiet) with the
        check's own example budget and the run's derandomize."""
        changes: dict[str, Any] = dict(max_examples=self.budget(), derandomize=self.derandomize)
        if not self.shrink:
            changes["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
        changes.update(overrides)
        return check_settings(self.profile, **changes)

    def examples(
        self,
        body: Callable[[Callable[[Any, str], Any]], None],
        *,
        first: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Run ``body(draw)`` over Hypothesis examples (:meth:`budget` of them), or once over
        the replayed draws. ``first`` (values by draw label, or a list of such mappings) is
        tried before any draw, as fixed examples (:mod:`conformance.authoring.probes`): a long
        input a
        slow engine must not escape, an input where the engine's own thresholds make it
        compact; the first of them that finds something stops the fixed ones.

        ``draw(strategy, label)`` returns a drawn value and records it; a
        :class:`~conformance.clauses.errors.ContractViolation` raised by ``body`` gets the (shrunk)
        draws attached as its example, for the replay file.
        """

        share = self.share
        found: list[Any] = []

        def run_once(draw: Any) -> None:
            if share is not None:
                share.start()
                # out of budget: stop drawing (what ran is the verdict); a finding gets a
                # grace to shrink in
                if share.spent(SHRINK_GRACE_S if found else 0.0):
                    raise BudgetSpent()
            token = CURRENT_DRAWS.set(draw.values)
            try:
                body(draw)
            except ContractViolation as exc:
                exc.attach_draws(draw.values)
                found.append(exc)
                if self.on_finding is not None:
                    self.on_finding(exc)
                key = getattr(exc, "root_cause", None)
                if key:
                    if key in SEEN_ROOT_CAUSES:
                        raise _KnownRootCause(exc) from None
                    SEEN_ROOT_CAUSES.add(key)
                raise
            finally:
                CURRENT_DRAWS.reset(token)
                if share is not None:
                    share.examples += 1

        if self.replay is not None:
            try:
                run_once(_ReplayDraw(self.replay))
            except _KnownRootCause as known:
                raise known.violation from None
            return
        if share is not None:
            share.asked = self.budget()
        firsts = [first] if isinstance(first, Mapping) else list(first or ())
        for fixed in firsts:
            try:  # a finding here stands unless Hypothesis finds (and shrinks) one of its own
                run_once(_ReplayDraw(fixed))
            except ContractViolation as exc:
                # a root cause new here: Hypothesis gets to find and shrink it below
                SEEN_ROOT_CAUSES.discard(getattr(exc, "root_cause", None) or "")
                break  # one fixed finding is enough
            except _KnownRootCause as known:
                raise known.violation from None
            except BudgetSpent:
                # the share ran out before a fixed example: partly checked (0 examples), and
                # a finding so far, if any, stands
                if found:
                    raise min(found, key=_example_size) from None
                return

        @self.settings()
        @given(data=st.data())
        def test(data: Any) -> None:
            run_once(_Draw(data))

        if not self.derandomize and self.seed is not None:
            test = hyp_seed(self.seed)(test)
        try:
            test()
        except ContractViolation:
            raise  # Hypothesis' own, shrunk counterexample
        except BudgetSpent:
            pass  # the share ran out: the smallest finding so far, if any, is the verdict
        except _KnownRootCause as known:
            raise known.violation from None
        except Flaky:
            # the share ran out (a test case then stops before drawing, which Hypothesis
            # reads as flaky data generation): what ran is the verdict, the smallest finding
            # so far, if any, stands
            if not (share is not None and share.reached):
                raise
        if found:
            raise min(found, key=_example_size)

    def exposes(self, engine: Any, *names: str) -> bool:
        """True when the engine itself (its instance or its own class, not only the ABC)
        defines every attribute."""
        for name in names:
            if name in getattr(engine, "__dict__", {}):
                continue  # set on the instance (e.g. from constructor arguments)
            owners = [k for k in type(engine).__mro__ if name in vars(k)]
            if not owners or all(
                k.__module__.startswith(("simulator.host.abc", "agent.")) for k in owners
            ):
                return False
        return True
