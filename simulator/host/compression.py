"""One compression pass: threads, timeouts, snapshot and commit (TS1-TS3, A7).

Documented profile: with ``compression.context_timeout_seconds > 0`` the pass runs on a
daemon thread of a shared pool (:func:`shared_pool`) while the caller waits at most that
many real seconds (TS1); ``0`` runs it inline. compress() gets a private deep snapshot
(TS2). The pass commits only when it returned in time with a new list; after a timeout
the caller keeps the original messages and the late result is discarded (the session
starts a cooldown). ``hermes-0.19``: inline on the caller's thread, the live list, no timeout.

Progress (documented profile, as current Hermes): a new list commits only when it moved
rows or tokens, i.e. it has fewer rows or fewer cl100k tokens (U9 fields not counted) than
the input (:func:`made_progress`); an equal copy is a pass that did nothing
(``PassOutcome.no_progress``), and the store is not rewritten. The input object itself is
the engine's own "nothing to do" signal (``PassOutcome.noop``: the pass declined).

Tests force a timeout deterministically with ``force_timeout=True``: the waiter does not
wait at all, exactly as if the host timeout had expired before the engine returned.
"""

from __future__ import annotations

import copy
import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from simulator.host.profiles import get_profile
from simulator.host.sanitize import strip_persistence_fields
from simulator.provider.tokens import count_messages

log = logging.getLogger("simulator.host")

TIMEOUT_WARNING = (
    "Context compression exceeded the host timeout of %.3fs (host compress_context timeout); "
    "keeping the original messages, cooldown %ss"
)


class DaemonPool:
    """A small pool of daemon worker threads (TS1: "pool daemon thread").

    Args:
        max_workers: threads started at most (lazily, one per concurrent job).
        name: thread name prefix (workers are named ``<name>-<n>``).
    """

    def __init__(self, max_workers: int = 8, name: str = "ctx-compress") -> None:
        self.max_workers = max_workers
        self.name = name
        self._jobs: queue.Queue[tuple] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` on a pool thread; returns its Future.

        A new daemon thread is started when no idle thread can take the job (up to
        ``max_workers``), so a hung pass never blocks another session's pass.
        """
        fut: Future = Future()
        with self._lock:
            if self._idle <= self._jobs.qsize() and len(self._threads) < self.max_workers:
                t = threading.Thread(
                    target=self._work, name=f"{self.name}-{len(self._threads) + 1}", daemon=True
                )
                self._threads.append(t)
                self._idle += 1
                t.start()
            self._jobs.put((fut, fn, args, kwargs))
        return fut

    def _work(self) -> None:
        while True:
            fut, fn, args, kwargs = self._jobs.get()
            with self._lock:
                self._idle -= 1
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # delivered to the waiter, if it still waits
                    fut.set_exception(exc)
            with self._lock:
                self._idle += 1


_POOL: DaemonPool | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's pool threads: it starts its own pool."""
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def shared_pool() -> DaemonPool:
    """The process-wide compression pool (shared by every session, TS3)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = DaemonPool()
        return _POOL


@dataclass
class PassOutcome:
    """What one compression pass did.

    Attributes:
        committed: True when the result may replace the transcript.
        result: the engine's new list (only meaningful when ``committed``).
        original: the messages the pass started from (what the caller keeps otherwise).
        timed_out: the host timeout expired first (TS2: result discarded).
        noop: the engine returned its input object (its "nothing to do" signal: it declined).
        no_progress: the engine returned a new list with no fewer rows and no fewer tokens
            than its input (documented profile: not committed, as current Hermes).
        error: "" or the exception / invalid-return description.
        thread: name of the thread compress() ran on.
        worker: the Future of a pool pass (tests may wait on it to see the late result).
        late_discarded: set to True by the worker when a result arrived after a timeout.
    """

    committed: bool
    result: list[dict[str, Any]] | None
    original: list[dict[str, Any]]
    timed_out: bool = False
    noop: bool = False
    no_progress: bool = False
    error: str = ""
    thread: str = ""
    worker: Future | None = None
    late_discarded: bool = False
    _cancelled: threading.Event = field(default_factory=threading.Event, repr=False)


def run_pass(
    engine: Any,
    messages: list[dict[str, Any]],
    *,
    kwargs: dict[str, Any],
    profile: Any = None,
    timeout_seconds: float = 0.0,
    recorder: Any = None,
    force_timeout: bool = False,
    pool: DaemonPool | None = None,
) -> PassOutcome:
    """Run ``engine.compress`` once the way the profile's host does (TS1, TS2).

    Args:
        engine: the agent's engine.
        messages: the compress() input the host built (with or without the system message).
        kwargs: the optional arguments (already filtered by signature, A4).
        profile: host profile; ``compress_snapshot`` and ``compress_timeout`` apply.
        timeout_seconds: ``compression.context_timeout_seconds`` (real seconds; 0 = inline).
        recorder: records the compress() call (thread, duration, outcome).
        force_timeout: test hook: treat the pass as timed out without waiting.
        pool: the pool to use (default :func:`shared_pool`).
    Returns:
        :class:`PassOutcome`. Never raises for an engine error (logged, not committed).
    """
    prof = get_profile(profile)
    outcome = PassOutcome(False, None, messages)
    call = recorder.call if recorder is not None else (lambda e, m, *a, **k: getattr(e, m)(*a, **k))

    def work() -> Any:
        outcome.thread = threading.current_thread().name
        snapshot = copy.deepcopy(messages) if prof.compress_snapshot else messages
        result = call(engine, "compress", snapshot, **kwargs)
        if outcome._cancelled.is_set():
            outcome.late_discarded = True
            log.info("Discarding a compression result that arrived after the host timeout")
        return snapshot, result

    use_pool = prof.compress_timeout and timeout_seconds > 0
    try:
        if use_pool:
            fut = (pool or shared_pool()).submit(work)
            outcome.worker = fut
            try:
                if force_timeout:
                    raise TimeoutError("forced by test hook")
                snapshot, result = fut.result(timeout=timeout_seconds)
            except (TimeoutError, _FutureTimeout):
                outcome._cancelled.set()
                outcome.timed_out = True
                return outcome
        else:
            snapshot, result = work()
    except Exception as exc:
        outcome.error = f"compress() raised {type(exc).__name__}: {exc}"
        log.warning("Context engine compress() failed; keeping the original messages: %s", exc)
        return outcome
    if result is snapshot or result is messages:
        outcome.noop = True
        return outcome
    if not isinstance(result, list):
        outcome.error = f"compress() returned {type(result).__name__}, not a list"
        log.warning(
            "Context engine compress() returned %s, not a list; keeping the original messages",
            type(result).__name__,
        )
        return outcome
    if prof.commit_needs_progress and not made_progress(messages, result):
        outcome.no_progress = True
        outcome.result = result
        log.info(
            "Context engine compress() removed no rows and no tokens; keeping the transcript "
            "(nothing to commit)"
        )
        return outcome
    outcome.committed = True
    outcome.result = result
    return outcome


def made_progress(before: list[Any], after: list[Any]) -> bool:
    """Whether a compaction moved rows or tokens: ``after`` has fewer rows than ``before``,
    or fewer cl100k tokens (U9 persistence fields not counted). How current Hermes judges a
    pass before it rewrites the session (docs/host.md, Compaction)."""
    if len(after) < len(before):
        return True
    try:
        return count_messages(strip_persistence_fields(list(after))) < count_messages(
            strip_persistence_fields(list(before))
        )
    except Exception:  # rows the counter cannot read: judged by row count alone
        return False


try:  # concurrent.futures raises its own TimeoutError alias on 3.10 and older
    from concurrent.futures import TimeoutError as _FutureTimeout
except ImportError:  # pragma: no cover
    _FutureTimeout = TimeoutError  # type: ignore[misc, assignment]
