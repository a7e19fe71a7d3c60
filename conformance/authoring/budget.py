"""The drawing budget: how long the checks of a run may spend drawing examples.

A hang is one engine call longer than the per-call limit (``--conformance-timeout``); that is a
failure. The time a check spends drawing examples is a different thing: a correct engine whose
``compress()`` takes a second (a fast summary-LLM call) must get a complete verdict, not a
timeout. So the run has a drawing budget (``--conformance-budget``, seconds), shared out among
its checks in proportion to their registered budgets (:class:`RunBudget`); a check whose share
runs out stops drawing new examples and passes with what it tested ("passed: 9 of 40 examples
in 11.2 s, budget reached"); a failure found before that is reported as usual, shrunk as far as
the share allows, else as first drawn. A check's unspent share goes back to the run.

With a fast engine no share runs out, so the draws (and the verdict) are the same on every
machine; with a slow engine the verdict says which checks ran fewer examples than the profile
asks.

The scenario files get as much again (:class:`ScenarioBudget`): a file is played whole or not
at all (its expectations need the whole run), so once the engine's calls in the files played
so far have used the budget, the files left are skipped with a note saying so, never failed.
Both count only the time spent inside the engine's calls, measured in the process that ran
them.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from conformance.runtime.timeouts import engine_seconds

#: Default drawing budget of a run, seconds (``--conformance-budget``).
DEFAULT_BUDGET_S = 120.0
#: The least share a check gets, seconds (it always runs at least one example).
MIN_SHARE_S = 1.0
#: Seconds a check may go past its share to shrink a failure it found (then the smallest
#: finding so far is reported as it stands).
SHRINK_GRACE_S = 10.0


@dataclass
class Share:
    """One check's share of the drawing budget: real-time seconds from :meth:`start`.

    Attributes:
        seconds: the share. started: ``time.monotonic()`` at :meth:`start` (None before).
        examples: examples run to their end. asked: examples the profile asks for.
        reached: True once the share ran out and drawing stopped early.
    """

    seconds: float
    started: float | None = None
    examples: int = 0
    asked: int = 0
    reached: bool = False
    engine_at_start: float = 0.0

    def start(self) -> None:
        """Start the clock (when the check's first example begins)."""
        if self.started is None:
            self.started = time.monotonic()
            self.engine_at_start = engine_seconds()

    def engine_elapsed(self) -> float:
        """Seconds the engine's own calls took since :meth:`start` (what the share counts)."""
        return 0.0 if self.started is None else engine_seconds() - self.engine_at_start

    def spent(self, grace: float = 0.0) -> bool:
        """True when the engine's calls have used the share (plus ``grace`` seconds) and at
        least one example ran (then drawing stops). The kit's own time (drawing, shrinking,
        the host) does not count, so a fast engine never runs out, whatever the load. A check
        that ran every example it asked for is not cut short (Hypothesis adds its explicit
        examples to them: 44 of 40 is a whole run)."""
        if (
            self.started is None
            or self.examples < 1
            or (self.asked and self.examples >= self.asked)
        ):
            return False
        over = self.engine_elapsed() > self.seconds + grace
        if over:
            self.reached = True
        return over

    def elapsed(self) -> float:
        """Seconds since :meth:`start` (0 before)."""
        return 0.0 if self.started is None else time.monotonic() - self.started

    def note(self) -> str:
        """``passed: 9 of 40 examples in 11.2 s, budget reached`` ("" when it did not run out)."""
        if not self.reached:
            return ""
        return (
            f"passed: {self.examples} of {self.asked} examples in {self.elapsed():.1f} s, budget "
            f"reached (--conformance-budget; the engine's calls are slow, the check stopped "
            f"drawing and is no failure)"
        )


class RunBudget:
    """The run's drawing budget, shared out among its checks (thread-safe).

    Args:
        seconds: the whole budget (0 or less: no budget, every check draws what it asks).
        weights: every case's weight (its registered examples), to share in proportion.
    """

    def __init__(self, seconds: float, weights: dict[str, float] | None = None) -> None:
        self.total = float(seconds)
        self.spent = 0.0
        self.weights = dict(weights or {})
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def share(self, case_id: str) -> Share:
        """The share for ``case_id``: the unspent budget times its weight over the weight of
        the cases not yet run (at least :data:`MIN_SHARE_S`); unlimited without a budget."""
        with self._lock:
            if self.total <= 0:
                return Share(float("inf"))
            left = max(self.total - self.spent, 0.0)
            pending = sum(w for c, w in self.weights.items() if c not in self._done) or 1.0
            weight = self.weights.get(case_id, 1.0)
            return Share(max(MIN_SHARE_S, left * weight / max(pending, weight)))

    def restrict(self, case_ids: set[str]) -> None:
        """Share among ``case_ids`` only (the cases selected to run); no-op when empty."""
        if case_ids:
            with self._lock:
                self.weights = {c: w for c, w in self.weights.items() if c in case_ids}

    def charge(self, case_id: str, seconds: float) -> None:
        """Record that ``case_id`` ran for ``seconds`` (its unspent share goes back)."""
        with self._lock:
            self._done.add(case_id)
            self.spent += max(0.0, seconds)


class ScenarioBudget:
    """The scenario files' budget: seconds of engine calls the files may use in all.

    Args:
        seconds: the budget (0 or less: no budget, every file is played).
    """

    def __init__(self, seconds: float) -> None:
        self.total = float(seconds)
        self.spent = 0.0
        self.played = 0
        self._lock = threading.Lock()

    def exhausted(self) -> bool:
        """True when the files played so far used the budget (the next file is not played)."""
        with self._lock:
            return self.total > 0 and self.spent >= self.total

    def charge(self, seconds: float) -> None:
        """Record one played file whose engine calls took ``seconds``."""
        with self._lock:
            self.played += 1
            self.spent += max(0.0, seconds)

    def note(self) -> str:
        """The skip reason of a file left unplayed (names the budget and how to play it)."""
        return (
            f"not played: the scenario files played before it used the scenario budget "
            f"({self.spent:.1f} s of engine calls in {self.played} file(s), budget "
            f"{self.total:g} s: --conformance-budget; the engine's calls are slow, no failure). "
            "Run it alone with -k 'scenario:NAME', or with --conformance-budget=0"
        )


__all__ = [
    "DEFAULT_BUDGET_S",
    "MIN_SHARE_S",
    "SHRINK_GRACE_S",
    "RunBudget",
    "ScenarioBudget",
    "Share",
]
