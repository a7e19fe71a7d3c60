"""Supervised cases: each case runs in a forked child that the kit watches and can kill.

Whatever the engine does by accident (``os._exit``, a segfault, a memory cap reached, a call
blocked in C, a non-daemon thread that never ends), the child ends, not the run. The parent
(the pytest process, ``run_conformance``) gets one of three answers from :meth:`Worker.call`:

- the child's answer to a task (the case's attempt, pickled over a pipe);
- :class:`Died`: the child ended without an answer (exit code or signal, the engine call in
  flight, whether the memory cap was reached);
- :class:`Hung`: an engine call stayed in flight longer than the per-call limit, so the child
  was killed (the method and how long).

One child (:class:`Worker`) serves the cases of a run one after another, and is forked anew
after a death or a hang. The child reports every engine call it starts and ends on the same
pipe (:func:`call_started`, :func:`call_ended`, called by
:func:`conformance.runtime.timeouts.calling`
and the host's recorder), so
the parent knows the method in flight when the child dies or hangs, on any thread. The per-call
limit is real time (a hung call can only be timed out that way); nothing else of the kit's clock
decides a verdict.

Where ``os.fork`` does not exist (Windows), or with ``isolation="inprocess"``, cases run in the
calling process on a watched thread instead (:func:`supervise_inprocess`): hangs are still
reported, a dying engine then ends the run.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any

from conformance.runtime.answers import RefusedAnswer, kit_loads
from conformance.runtime.child_memory import (
    CAP,
    NEAR_CAP,
    RETIRE_AT,
    address_space,
    memory_taken_in,
    near_memory_cap,
)
from conformance.runtime.child_reports import (
    MSG_ANSWER,
    MSG_CALL,
    MSG_ERROR,
    MSG_GREW,
    MSG_HEADER,
    MSG_PROGRESS,
    MSG_RETIRE,
    MSG_RETURN,
    call_ended,
    call_started,
    report_progress,
    start_monitor,
    supervised,
)
from conformance.runtime.inprocess import supervise_inprocess
from conformance.runtime.outcomes import Died, Hung

#: Isolation modes: ``fork`` (default where the platform has it) or ``inprocess``.
ISOLATIONS = ("fork", "inprocess")
#: Default memory cap of a case's child (address space, bytes): 4 GiB.
DEFAULT_MEMORY_LIMIT = 4 * 1024**3
#: Largest answer a child may send (bytes); bigger is a kit bug or a hostile value.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
#: Threads a child may hold before it retires after its answer, so engine threads that never
#: end cannot pile up across cases (non-daemon ones retire it at once).
MAX_CHILD_THREADS = 32


def fork_available() -> bool:
    """True when cases can run in forked children (POSIX)."""
    return hasattr(os, "fork")


class Worker:
    """A supervised child process that runs tasks one after another (the parent's side).

    The child is forked on the first :meth:`call` and serves tasks until it dies, hangs (then
    it is killed) or :meth:`close`; the next :meth:`call` forks a fresh one. Keeping one child
    for many cases keeps the caches a run warms (token counts, Hypothesis' strategies), while a
    death or a hang still ends only the case in flight.

    Args:
        serve: ``serve(task) -> answer``, run in the child for each task (the answer pickles).
        memory_limit: the child's address-space cap in bytes (``RLIMIT_AS``; None: none).
        on_start: runs first in each new child (installs the sandbox's audit hook, say).
    """

    def __init__(
        self,
        serve: Callable[[Any], Any],
        *,
        memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        self.serve = serve
        self.memory_limit = memory_limit
        self.on_start = on_start
        self.pid: int | None = None
        self._tasks = -1  # parent -> child
        self._answers = -1  # child -> parent
        self.spawned = 0

    def _spawn(self) -> None:
        task_read, task_write = os.pipe()
        answer_read, answer_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(task_write)
            os.close(answer_read)
            _child_loop(self.serve, task_read, answer_write, self.memory_limit, self.on_start)
        os.close(task_read)
        os.close(answer_write)
        self.pid, self._tasks, self._answers = pid, task_write, answer_read
        self.spawned += 1
        # a Worker that is forgotten (its session dropped) must not leave its child behind
        self._finalizer = weakref.finalize(self, _end_child, pid, task_write, answer_read)

    def call(self, task: Any, *, call_limit: float, case_limit: float) -> Any:
        """Run ``task`` in the child: its answer, or :class:`Died` / :class:`Hung` (then the
        child is gone and the next call forks a new one).

        Raises:
            BaseException: what ``serve`` raised in the child, re-raised here when it pickles.
        """
        if self.pid is None:
            self._spawn()
        data = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            _write_all(self._tasks, MSG_HEADER.pack(b"T", len(data)) + data)
        except OSError:  # the child is gone already
            outcome = self._reap(Died("", None, None))
            return outcome
        flags: dict[str, bool] = {}
        try:
            outcome = _watch(
                self.pid,
                self._answers,
                time.monotonic(),
                call_limit,
                case_limit,
                flags,
                memory_limit=self.memory_limit,
            )
        finally:
            if flags.get("retire") and self.pid is not None:
                self._reap(None)  # it answered and exits: the next call forks a new one
        if isinstance(outcome, (Died, Hung)):
            self._reap(outcome)
        return outcome

    def _reap(self, outcome: Any) -> Any:
        """Forget the child (it died or was killed): kill it if need be, close its pipes."""
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()  # runs once: closes the pipes, kills and reaps the child
        self.pid = None
        return outcome

    def close(self) -> None:
        """End the child (it exits when its task pipe closes)."""
        if self.pid is not None:
            self._reap(None)


def _end_child(pid: int, *fds: int) -> None:
    """Close a child's pipes, then kill and reap it (idempotent enough to run at exit)."""
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
    _kill(pid)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        view = view[n:]


def _read_exact(fd: int, size: int) -> bytes | None:
    out = b""
    while len(out) < size:
        try:
            chunk = os.read(fd, size - len(out))
        except InterruptedError:
            continue
        if not chunk:
            return None
        out += chunk
    return out


def _child_loop(
    serve: Callable[[Any], Any], tasks: int, fd: int, memory_limit: int | None, on_start: Any
) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's handler raises in it
        monitor = start_monitor(fd)
        from conformance.runtime.timeouts import CALL_HOOKS

        CALL_HOOKS[:] = [(call_started, call_ended)]
        if memory_limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
            CAP[0] = memory_limit
        if on_start is not None:
            on_start()
        while True:
            header = _read_exact(tasks, MSG_HEADER.size)
            if header is None:
                break  # the parent closed the pipe: done
            _, size = MSG_HEADER.unpack(header)
            task = pickle.loads(_read_exact(tasks, size) or b"")
            try:
                value = serve(task)
                kind = MSG_ANSWER
            except BaseException as exc:  # noqa: BLE001 - handed to the parent
                value, kind = _portable(exc), MSG_ERROR
            try:
                payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an answer that does not pickle is a kit bug
                payload = pickle.dumps(RuntimeError(f"the case's answer does not pickle: {exc}"))
                kind = MSG_ERROR
            try:
                retire = _threads_left_behind() or near_memory_cap(os.getpid(), memory_limit)
            except MemoryError:  # the engine kept the memory: a fresh child for the next case
                retire = True
            if retire:
                monitor.send(MSG_RETIRE, b"")
            monitor.send(kind, payload)
            if retire:
                break
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        code = 70
    finally:
        os._exit(code)  # no atexit, no non-daemon threads: the engine's threads end here


def _threads_left_behind() -> bool:
    """True when the engine left a non-daemon thread running, or too many threads."""
    alive = threading.enumerate()
    main = threading.main_thread()
    return len(alive) > MAX_CHILD_THREADS or any(
        t is not main and not t.daemon and t.is_alive() for t in alive
    )


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else a RuntimeError carrying its text and traceback."""
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return RuntimeError(f"{type(exc).__name__}: {exc}\n{text[-2000:]}")


def _watch(
    pid: int,
    fd: int,
    started: float,
    call_limit: float,
    case_limit: float,
    flags: dict[str, bool] | None = None,
    *,
    memory_limit: int | None = None,
) -> Any:
    """The parent's side: read call starts/ends, progress and the answer; kill on a hang, or
    on a stall at the memory cap (:func:`near_memory_cap`: no engine call in flight, no word
    from the child for ``call_limit`` seconds, its address space at its cap). ``flags["retire"]``
    is set when the child says it ends after this answer."""
    buffer = b""
    stacks: dict[int, list[tuple[str, float]]] = {}  # thread -> calls in flight, innermost last
    answer: tuple[bytes, bytes] | None = None
    progress: Any = None
    last_method, grew, heard = "", "", started
    while answer is None:
        now = time.monotonic()
        tops = [(ident, stack[-1]) for ident, stack in stacks.items() if stack]
        oldest = min(tops, key=lambda t: t[1][1], default=None)
        if oldest is not None and now - oldest[1][1] > call_limit:
            _kill(pid)
            return _with_progress(Hung(oldest[1][0], now - oldest[1][1], oldest[0]), progress)
        if oldest is None and now - heard > call_limit and near_memory_cap(pid, memory_limit):
            memory = address_space(pid)
            _kill(pid)
            stall = Hung(grew or last_method, now - heard, stalled=True, memory=memory)
            return _with_progress(stall, progress)
        if now - started > case_limit:
            _kill(pid)
            method = oldest[1][0] if oldest else ""
            hung = Hung(method, now - started, oldest[0] if oldest else 0)
            hung.case_limit = True
            return _with_progress(hung, progress)
        wait = case_limit - (now - started)
        if oldest is not None:
            wait = min(wait, call_limit - (now - oldest[1][1]))
        ready, _, _ = select.select([fd], [], [], max(0.01, min(wait, 1.0)))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break  # the child closed the pipe: it ended
        heard = time.monotonic()
        buffer += chunk
        while len(buffer) >= MSG_HEADER.size:
            kind, size = MSG_HEADER.unpack_from(buffer)
            if size > MAX_ANSWER_BYTES:
                _kill(pid)
                return RuntimeError(f"a case's child sent {size} bytes (more than the cap)")
            if len(buffer) < MSG_HEADER.size + size:
                break
            payload = buffer[MSG_HEADER.size : MSG_HEADER.size + size]
            buffer = buffer[MSG_HEADER.size + size :]
            if kind == MSG_CALL:
                ident, _, method = payload.decode("utf-8", "replace").partition("\x00")
                stacks.setdefault(int(ident), []).append((method, time.monotonic()))
                last_method = method
            elif kind == MSG_RETURN:
                stack = stacks.get(int(payload.decode()))
                if stack:
                    stack.pop()
            elif kind == MSG_PROGRESS:
                try:
                    progress = kit_loads(payload)
                except RefusedAnswer:
                    progress = None
            elif kind == MSG_GREW:
                grew = payload.decode("utf-8", "replace")
            elif kind == MSG_RETIRE:
                if flags is not None:
                    flags["retire"] = True
            else:
                answer = (kind, payload)
                break
    if answer is not None:  # the child goes on serving: it is not reaped here
        value = kit_loads(answer[1])
        if answer[0] == MSG_ERROR:
            if not isinstance(value, Exception):  # never the user's Ctrl-C: the child ignores it
                from conformance.clauses.errors import exception_text

                raise RuntimeError(f"the case's child raised {exception_text(value)}")
            raise value
        return value
    _, status = os.waitpid(pid, 0)
    tops = [stack[-1] for stack in stacks.values() if stack]
    method = min(tops, key=lambda t: t[1])[0] if tops else ""
    elapsed = time.monotonic() - started
    if os.WIFSIGNALED(status):
        died = Died(method, None, os.WTERMSIG(status), False, elapsed)
    else:
        died = Died(method, os.WEXITSTATUS(status), None, False, elapsed)
    return _with_progress(died, progress)


def _with_progress(outcome: Any, progress: Any) -> Any:
    outcome.progress = progress
    return outcome


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


__all__ = [
    "NEAR_CAP",
    "RETIRE_AT",
    "DEFAULT_MEMORY_LIMIT",
    "RefusedAnswer",
    "address_space",
    "memory_taken_in",
    "near_memory_cap",
    "Died",
    "Hung",
    "ISOLATIONS",
    "call_ended",
    "call_started",
    "fork_available",
    "report_progress",
    "Worker",
    "supervise_inprocess",
    "supervised",
]
