"""Where a case's task runs: the run's persistent supervised child, or here.

A :class:`CaseWorker` hands each task (``("case", id, share)`` or ``("scenario", id)``) to one
forked :class:`~conformance.runtime.supervisor.Worker` that the run keeps between cases, under
the per-call limit plus a grace and the whole-case backstop (:func:`case_cap`); without fork
(``--conformance-isolation=inprocess``, or no fork on the platform) the task runs in this
process. A child that died or hung gives each case of the task the attempt that says so
(:func:`~conformance.run.execution.from_death`); a child that handed back more than plain data
gives each an error, and is ended.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from conformance.run.execution import GRACE_S, Attempt, AttemptSession, from_death
from conformance.run.options import RunOptions
from conformance.run.probe import child_start
from conformance.runtime.sandbox import idle_folder, remove_case_roots
from conformance.runtime.supervisor import Died, Hung, RefusedAnswer, Worker, fork_available

if TYPE_CHECKING:
    from conformance.authoring.case import Case


def case_cap(options: RunOptions) -> float:
    """Seconds a whole case may take before its child is killed as a kit fault: the budget
    and the per-call limit bound the work, so this is a generous backstop (at least 600 s;
    20 per-call limits plus the drawing budget)."""
    o = options
    return max(600.0, 20 * o.timeout + (o.budget if o.budget > 0 else 0))


class SupervisedSession(AttemptSession, Protocol):
    """The run state a :class:`CaseWorker` reads: an
    :class:`~conformance.run.execution.AttemptSession` with its engine ``factory`` (an
    :class:`~conformance.runtime.engine_loading.EngineFactory`, or None before it is bound)."""

    factory: Any


class CaseWorker:
    """The run's supervised child (module doc), forked on the first task and kept.

    Args:
        session: the run state (its ``options``, its ``factory``, whose module each new child
            imports first, and its ``context``, built before the child forks so that the
            child inherits it).
        serve: runs one task and returns the attempts by case id (in the child, or here).
    """

    def __init__(
        self, session: SupervisedSession, serve: Callable[[tuple], dict[str, Attempt]]
    ) -> None:
        self.session = session
        self.serve = serve
        self._worker: Worker | None = None
        self._idle: Path | None = None

    def run(self, task: tuple, cases: list[Case]) -> dict[str, Attempt]:
        """``task`` in the supervised child (or here without fork); returns the attempts by
        case id, one for each case of ``cases`` when the child died, hung or misbehaved."""
        o = self.session.options
        if o.isolation == "inprocess" or not fork_available():
            return self.serve(task)
        self.session.context  # noqa: B018 - built before the child forks, so it inherits it
        if self._worker is None:
            self._idle = self._idle or idle_folder()  # the child's temp folder between cases
            start = functools.partial(child_start, self.session.factory, self._idle)
            self._worker = Worker(self.serve, memory_limit=o.memory_limit, on_start=start)
        try:
            outcome = self._worker.call(
                task, call_limit=o.timeout + GRACE_S, case_limit=case_cap(o)
            )
        except RefusedAnswer as exc:  # the child handed back more than data: never loaded here
            self.close()
            return {c.id: Attempt(c.id, "error", text=str(exc)) for c in cases}
        if isinstance(outcome, (Died, Hung)):
            if self._idle is not None:  # the child never closed its case's sandbox
                remove_case_roots(self._idle)
            return {c.id: from_death(c, outcome, self.session) for c in cases}
        return outcome

    def close(self) -> None:
        """End the supervised child, if any (a later task forks a new one), and remove its
        temp folder."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._idle is not None:
            remove_case_roots(self._idle)
            shutil.rmtree(self._idle, ignore_errors=True)
            self._idle = None


__all__ = ["CaseWorker", "SupervisedSession", "case_cap"]
