"""Checks of contract section TS: threads and timeouts (TS1-TS3), plus leaked threads.

TS1: the compression pass runs on a pool daemon thread: compress() from a thread other
than the one that built the engine gives the same result. TS2: a pass the host timed out
is discarded; the engine must not have written to external state (``$HERMES_HOME`` and
the temp dir are pointed at private folders and watched). TS3: one instance shared by
parallel sessions is thread-safe: no output mixes another session's messages.
"""

from __future__ import annotations

import copy
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

from conformance.authoring.expect import MUST, SHOULD, fail, short
from conformance.authoring.registry import check
from conformance.authoring.strategies import compactable_histories, filler_block, text_from_seed
from conformance.checks.engine_calls import (
    compactable_shape,
    compress_like_host,
    invoke,
    threshold_of,
    usage,
)
from conformance.clauses.errors import ContractViolation
from conformance.runtime.sandbox import Sandbox
from simulator.provider.http import is_simulator_thread
from simulator.provider.tokens import count_messages

#: TS1 (leaks): how long threads an engine started may take to finish, in seconds.
THREAD_GRACE_S = 1.0


def _run_in_thread(fn):
    box: list[Any] = []

    def run():
        try:
            box.append(("ok", fn()))
        except BaseException as exc:
            box.append(("err", exc))

    t = threading.Thread(target=run, name="conformance-pool-0", daemon=True)
    t.start()
    t.join()
    kind, value = box[0]
    if kind == "err":
        raise value
    return value


@check(
    "TS1",
    "compress-from-pool-thread",
    level=MUST,
    title="compress() called from a thread other than the creator's gives the same result",
    examples=3,
)
def check_ts1_compress_from_pool_thread(ctx):
    """TS1: no thread affinity: two fresh engines, the same history, one compress() on the
    creating thread, one on a pool thread; the outputs are equal."""

    def body(draw):
        probe = ctx.new_engine()
        history = draw(
            compactable_histories(
                min_tokens=threshold_of(probe, ctx.window // 2) + 500,
                **compactable_shape(ctx, probe),
            ),
            "history",
        )
        here = compress_like_host("TS1", MUST, ctx.new_engine(), history)
        if compress_like_host("TS1", MUST, ctx.new_engine(), history) != here:
            return  # not deterministic even on one thread: D1's business
        engine = ctx.new_engine()
        there = _run_in_thread(lambda: compress_like_host("TS1", MUST, engine, history))
        if here != there:
            fail(
                "TS1",
                MUST,
                "compress() on a pool thread",
                expected="the same output as on the creating thread "
                f"({len(here) if isinstance(here, list) else '?'} messages)",
                got=f"{len(there) if isinstance(there, list) else short(there, 60)} "
                "messages, different",
                context="thread affinity or threading.local state",
            )

    ctx.examples(body)


def _listing(root: Path) -> dict[str, tuple]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            try:
                st_ = os.stat(p)
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (st_.st_size, st_.st_mtime_ns)
    return out


@check(
    "TS2",
    "no-writes-from-timed-out-pass",
    level=MUST,
    title="a compress() pass the host timed out has written nothing to HERMES_HOME or the temp dir",
)
def check_ts2_no_writes_from_timed_out_pass(ctx):
    """TS2: the host runs the pass on a daemon thread with a timeout and discards it; no
    commit follows. Files created or changed by that pass under the engine's own ``HOME``,
    ``$HERMES_HOME``, working directory or temp dir (set before the engine was built, so an
    engine that binds its paths in its constructor is watched too) are external writes."""
    own = ctx.sandbox is None
    sandbox = Sandbox() if own else ctx.sandbox
    try:
        if own:
            ctx = ctx.for_check(ctx.check, sandbox=sandbox)
        engine = ctx.new_engine()
        dirs = sandbox.watched_dirs()
        invoke("TS2", MUST, engine, "on_session_start", "session-ts2", platform="cli")
        history = [{"role": "system", "content": "sys"}]
        for k in range(6):
            history += filler_block(50, 4_000, k)
        history.append({"role": "user", "content": "go on"})
        before = {d.name: _listing(d) for d in dirs}
        box: list[Any] = []
        t = threading.Thread(
            target=lambda: box.append(_safe(engine, history)),
            name="conformance-pool-ts2",
            daemon=True,
        )
        t.start()
        t.join(0.0)  # the host's timeout has already passed: the pass is discarded
        t.join(30)  # wait for the abandoned work to end before looking
        after = {d.name: _listing(d) for d in dirs}
    finally:
        if own:
            sandbox.close()
    names = {
        "home": "$HOME",
        "hermes": "$HERMES_HOME",
        "cwd": "the working directory",
        "tmp": "$TMPDIR",
    }
    for where, listing in after.items():
        changed = sorted(p for p, meta in listing.items() if before[where].get(p) != meta)
        if changed:
            fail(
                "TS2",
                MUST,
                f"files under {names.get(where, where)} after a compress() pass the host timed out "
                "and discarded",
                expected="none created or changed (publish only after the host shows the pass "
                "committed)",
                got=f"{len(changed)} written: {', '.join(changed[:3])}",
            )


def _safe(engine, history):
    try:
        return compress_like_host("TS2", MUST, engine, history)
    except BaseException as exc:
        return exc


class Rendezvous:
    """Holds the TS3 session threads together at each call into ``sqlite3`` (a connection's or
    a cursor's method), so that the statements of two sessions on one shared connection meet
    on every run, not on some runs only: each thread, about to call sqlite3, waits until every
    thread still running is about to as well (a barrier, ``sys.setprofile``'s ``c_call``
    event), then all go on together. A thread kept away longer than ``wait_s`` (it waits for
    the engine's own lock, which is what a correct engine does) turns the rendezvous off for
    the rest of the check: a serialised engine has nothing to race.

    Args:
        parties: the session threads. wait_s: seconds one meeting may take (seconds).
    """

    def __init__(self, parties: int, wait_s: float = 0.25) -> None:
        self.active = parties
        self.waiting = 0
        self.generation = 0
        self.on = True
        self.meetings = 0
        self.wait_s = wait_s
        self._cv = threading.Condition()

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        """``sys.setprofile`` hook of a session thread: meet before each sqlite3 call."""
        if (
            self.on
            and event == "c_call"
            and isinstance(getattr(arg, "__self__", None), (sqlite3.Connection, sqlite3.Cursor))
        ):
            self.meet()

    def meet(self) -> None:
        """Wait until every running session thread is here too (or the rendezvous is off)."""
        with self._cv:
            generation = self.generation
            self.waiting += 1
            if self.waiting >= self.active:
                self._release()
                return
            if not self._cv.wait_for(
                lambda: self.generation != generation or not self.on, self.wait_s
            ):
                self.on = False  # someone is held elsewhere (a lock): stop holding anyone
                self._cv.notify_all()

    def leave(self) -> None:
        """A session thread is done: the others no longer wait for it."""
        with self._cv:
            self.active -= 1
            if self.waiting and self.waiting >= self.active:
                self._release()

    def _release(self) -> None:
        self.waiting = 0
        self.generation += 1
        self.meetings += 1
        self._cv.notify_all()


@check(
    "TS3",
    "parallel-sessions-isolated",
    level=MUST,
    title="one instance compressing four sessions in "
    "parallel keeps each session's messages to itself",
)
def check_ts3_parallel_sessions_isolated(ctx):
    """TS3: four threads compress four different histories on one instance at once; every
    call returns normally and no output contains a message that only another session had.
    The threads start together (a barrier) and meet again before each sqlite3 call
    (:class:`Rendezvous`), so statements of sessions sharing one connection interleave on
    every run."""
    engine = ctx.new_engine()
    threshold = threshold_of(engine, ctx.window // 2)
    histories = []
    for s in range(4):
        h = [{"role": "system", "content": f"session {s} system"}]
        k = 0
        while count_messages(h) <= threshold + 500:
            h += [
                {
                    "role": "user",
                    "content": f"[session {s}] " + text_from_seed(s * 100 + k, "en_US", 2),
                }
            ]
            h += filler_block(s * 1000 + k, 3_000, k)[1:]
            k += 1
        h += [{"role": "user", "content": f"[session {s}] last question"}]
        histories.append(h)
    barrier = threading.Barrier(4)
    meet = Rendezvous(4)
    results: list[Any] = [None] * 4

    def run(i):
        try:
            barrier.wait(10)
            sys.setprofile(meet.profile)
            invoke("TS3", MUST, engine, "update_from_response", usage(count_messages(histories[i])))
            results[i] = compress_like_host("TS3", MUST, engine, histories[i])
        except BaseException as exc:
            results[i] = exc
        finally:
            sys.setprofile(None)
            meet.leave()

    threads = [
        threading.Thread(target=run, args=(i,), name=f"conformance-session-{i}", daemon=True)
        for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, out in enumerate(results):
        if isinstance(out, BaseException):
            raise out
        if not isinstance(out, list):
            continue  # A4 reports a non-list
        foreign = [
            m
            for m in out
            if isinstance(m, dict)
            and isinstance(m.get("content"), str)
            and any(f"[session {j}]" in m["content"] for j in range(4) if j != i)
            and f"[session {i}]" not in m["content"]
        ]
        if foreign:
            fail(
                "TS3",
                MUST,
                f"compress() output of session {i} while 3 "
                "other sessions compressed on the same instance",
                expected="only session i's messages (plus its own summary)",
                got=f"{len(foreign)} message(s) of another session, "
                f"e.g. {short(foreign[0].get('content'), 60)}",
            )


@check(
    "TS1",
    "no-leaked-threads",
    level=MUST,
    title="engine calls do not leave threads running behind them",
)
def check_ts1_no_leaked_threads(ctx):
    """TS1 (hostile-engine guard): after the constructor and each lifecycle call, threads that
    call started are finished within a short grace period. A leaked non-daemon thread keeps the
    agent's process from exiting (MUST); a leaked daemon thread is a SHOULD finding."""
    before = set(threading.enumerate())
    engine = ctx.new_engine()
    _no_leaks(before, "the constructor")
    history = [{"role": "system", "content": "sys"}]
    for k in range(4):
        history += filler_block(70, 4_000, k)
    calls = (
        ("on_session_start", ("session-leak",), {"platform": "cli"}),
        ("update_from_response", (usage(count_messages(history)),), {}),
        ("should_compress", (count_messages(history),), {}),
        ("should_compress_preflight", (copy.deepcopy(history),), {}),
        ("compress", (copy.deepcopy(history),), {}),
        ("get_status", (), {}),
        ("on_session_end", ("session-leak", copy.deepcopy(history)), {}),
        ("on_session_reset", (), {}),
    )
    for method, args, kwargs in calls:
        before = set(threading.enumerate())
        try:
            invoke("TS1", SHOULD, engine, method, *args, **kwargs)
        except ContractViolation:
            continue  # raising is judged by the method's own clause
        _no_leaks(before, f"{method}()")


def _no_leaks(before: set, what: str) -> None:
    """Fail when threads started since ``before`` are still running after the grace period."""
    deadline = time.monotonic() + THREAD_GRACE_S
    leaked = [
        t
        for t in threading.enumerate()
        if t not in before and t.is_alive() and not is_simulator_thread(t)
    ]  # the LLM the kit serves the engine answers on threads of its own
    while leaked and time.monotonic() < deadline:
        time.sleep(0.02)
        leaked = [t for t in leaked if t.is_alive()]
    if leaked:
        blocking = [t for t in leaked if not t.daemon]
        fail(
            "TS1",
            MUST if blocking else SHOULD,
            what,
            expected="no threads left running after it returns",
            got=f"{len(leaked)} still running after {THREAD_GRACE_S:g} s: "
            + ", ".join(f"{t.name} (daemon={t.daemon})" for t in leaked[:3])
            + (" (a non-daemon thread keeps the agent's process from exiting)" if blocking else ""),
        )
