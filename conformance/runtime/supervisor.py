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
import random
import select
import signal
import struct
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Isolation modes: ``fork`` (default where the platform has it) or ``inprocess``.
ISOLATIONS = ("fork", "inprocess")
#: Default memory cap of a case's child (address space, bytes): 4 GiB.
DEFAULT_MEMORY_LIMIT = 4 * 1024**3
#: Largest answer a child may send (bytes); bigger is a kit bug or a hostile value.
MAX_ANSWER_BYTES = 256 * 1024 * 1024

_CALL, _RETURN, _ANSWER, _ERROR, _PROGRESS = b"C", b"R", b"A", b"E", b"P"
#: An engine call that returned having grown the child's address space by a big part of its
#: cap (the method; the memory rule below names it).
_GREW = b"G"
#: The child's last message before it retires (its engine left threads running): a flag byte
#: sent right after the answer.
_RETIRE = b"Z"
#: Threads a child may hold before it retires after its answer, so engine threads that never
#: end cannot pile up across cases (non-daemon ones retire it at once).
MAX_CHILD_THREADS = 32
_HEADER = struct.Struct("!cI")


def fork_available() -> bool:
    """True when cases can run in forked children (POSIX)."""
    return hasattr(os, "fork")


@dataclass
class Died:
    """The child ended without an answer.

    Attributes:
        method: the engine call in flight (``"compress"``), or "" when none was.
        exit_code: the child's exit status (None when a signal ended it).
        signal: the signal number that ended it (None for a plain exit).
        memory_cap: True when the child had reported reaching the memory cap.
        seconds: how long the child ran.
        progress: the last finding the child reported before it ended (or None).
    """

    method: str
    exit_code: int | None
    signal: int | None
    memory_cap: bool = False
    seconds: float = 0.0
    progress: Any = None

    def describe(self) -> str:
        """``exited with code 0 (os._exit?)`` / ``was killed by signal 11 (SIGSEGV)``."""
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"was killed by signal {self.signal} ({name})"
        return f"exited with code {self.exit_code} before the case ended"


@dataclass
class Hung:
    """An engine call stayed in flight longer than the per-call limit; the child was killed.

    Attributes:
        method: the engine call in flight. seconds: how long it had been in flight.
        thread: the child's thread id running it.
        progress: the last finding the child reported before it was killed (or None).
        case_limit: True when the whole case outlasted its cap (a kit fault), not one call.
    """

    method: str
    seconds: float
    thread: int = 0
    progress: Any = None
    case_limit: bool = False
    #: the door's memory rule (below): the child sat still at its memory cap with no engine
    #: call in flight; ``method`` is then the last engine call that returned, ``memory`` the
    #: child's address space in bytes
    stalled: bool = False
    memory: int = 0


@dataclass
class _Monitor:
    """The child's side of the pipe: call starts and ends, then the answer."""

    fd: int
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, kind: bytes, payload: bytes) -> None:
        data = _HEADER.pack(kind, len(payload)) + payload
        with self.lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(self.fd, view)
                except InterruptedError:
                    continue
                view = view[n:]


_MONITOR: _Monitor | None = None


def call_started(method: str) -> None:
    """In a supervised child: an engine call begins on this thread (no-op elsewhere)."""
    monitor = _MONITOR
    if monitor is not None:
        ident = threading.get_ident()
        if _CAP[0]:
            _CALL_MEMORY.setdefault(ident, []).append((method, address_space(os.getpid())))
        monitor.send(_CALL, f"{ident}\x00{method}".encode("utf-8", "replace"))


def call_ended() -> None:
    """In a supervised child: the engine call of this thread returned (no-op elsewhere)."""
    monitor = _MONITOR
    if monitor is not None:
        ident = threading.get_ident()
        stack = _CALL_MEMORY.get(ident)
        if stack:
            method, before = stack.pop()
            if address_space(os.getpid()) - before >= GREW_BY * _CAP[0]:
                GREW_IN[0] = method  # the call that took (and kept) a big part of the cap
                monitor.send(_GREW, method.encode("utf-8", "replace"))
        monitor.send(_RETURN, str(ident).encode())


def supervised() -> bool:
    """True inside a supervised child."""
    return _MONITOR is not None


def report_progress(value: Any) -> None:
    """In a supervised child: hand the parent ``value`` now (a finding found so far), so it is
    not lost if the child dies or hangs later (while shrinking, say). No-op elsewhere.

    Raises:
        pickle.PicklingError: ``value`` does not pickle (a kit bug).
    """
    monitor = _MONITOR
    if monitor is not None:
        monitor.send(_PROGRESS, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


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
            _write_all(self._tasks, _HEADER.pack(b"T", len(data)) + data)
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
    global _MONITOR
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        _MONITOR = _Monitor(fd)
        from conformance.runtime.timeouts import CALL_HOOKS

        CALL_HOOKS[:] = [(call_started, call_ended)]
        if memory_limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
            _CAP[0] = memory_limit
        if on_start is not None:
            on_start()
        while True:
            header = _read_exact(tasks, _HEADER.size)
            if header is None:
                break  # the parent closed the pipe: done
            _, size = _HEADER.unpack(header)
            task = pickle.loads(_read_exact(tasks, size) or b"")
            try:
                value = serve(task)
                kind = _ANSWER
            except BaseException as exc:  # noqa: BLE001 - handed to the parent
                value, kind = _portable(exc), _ERROR
            try:
                payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an answer that does not pickle is a kit bug
                payload = pickle.dumps(RuntimeError(f"the case's answer does not pickle: {exc}"))
                kind = _ERROR
            try:
                retire = _threads_left_behind() or near_memory_cap(os.getpid(), memory_limit)
            except MemoryError:  # the engine kept the memory: a fresh child for the next case
                retire = True
            if retire:
                _MONITOR.send(_RETIRE, b"")
            _MONITOR.send(kind, payload)
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
        while len(buffer) >= _HEADER.size:
            kind, size = _HEADER.unpack_from(buffer)
            if size > MAX_ANSWER_BYTES:
                _kill(pid)
                return RuntimeError(f"a case's child sent {size} bytes (more than the cap)")
            if len(buffer) < _HEADER.size + size:
                break
            payload = buffer[_HEADER.size : _HEADER.size + size]
            buffer = buffer[_HEADER.size + size :]
            if kind == _CALL:
                ident, _, method = payload.decode("utf-8", "replace").partition("\x00")
                stacks.setdefault(int(ident), []).append((method, time.monotonic()))
                last_method = method
            elif kind == _RETURN:
                stack = stacks.get(int(payload.decode()))
                if stack:
                    stack.pop()
            elif kind == _PROGRESS:
                try:
                    progress = _kit_loads(payload)
                except RefusedAnswer:
                    progress = None
            elif kind == _GREW:
                grew = payload.decode("utf-8", "replace")
            elif kind == _RETIRE:
                if flags is not None:
                    flags["retire"] = True
            else:
                answer = (kind, payload)
                break
    if answer is not None:  # the child goes on serving: it is not reaped here
        value = _kit_loads(answer[1])
        if answer[0] == _ERROR:
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


# -- the door's memory rule --------------------------------------------------------------
# An engine that allocates up to the child's memory cap and keeps what it got (on itself, in a
# module global) leaves the child unable to go on once its call returned: the kit's own next
# allocation fails, in a thread that may hold a lock, and the child sits in a futex wait with
# no engine call in flight, so the per-call limit does not apply. Two rules end that: a child
# whose address space is near its cap after a task retires (the next case gets a fresh one),
# and a child that says nothing for the per-call limit with no call in flight while at its cap
# is killed and reported (:class:`Hung` with ``stalled``), naming the last engine call.

#: The memory cap of this supervised child in bytes (0: none, or not in a child).
_CAP = [0]
#: thread ident -> (method, address space at its start) of the engine calls in flight.
_CALL_MEMORY: dict[int, list[tuple[str, int]]] = {}
#: Share of the cap one engine call must add to the address space to be named as the one
#: that took the memory (:func:`memory_taken_in`).
GREW_BY = 0.25
#: The last engine call that grew the address space by :data:`GREW_BY` of the cap or more.
GREW_IN = [""]


def memory_taken_in() -> str:
    """In a supervised child: the last engine method whose call grew the child's address space
    by a quarter of its cap or more ("" when none did)."""
    return GREW_IN[0]


#: Share of the memory cap at which a child counts as "at its cap" (address space).
NEAR_CAP = 0.9
#: Share of the cap past which a child retires after its answer (memory the engine kept).
RETIRE_AT = 0.6


_OWN_STATM: list = [None, None]  # [pid, fd] of this process's /proc/self/statm, kept open


def address_space(pid: int) -> int:
    """The address space of process ``pid`` in bytes (``/proc/<pid>/statm``; 0 where there is
    no such file: then the memory rule is off and the case cap is the backstop). This
    process's own file stays open (re-read with ``pread``)."""
    try:
        if pid == os.getpid():
            if _OWN_STATM[0] != pid:
                _OWN_STATM[:] = [pid, os.open("/proc/self/statm", os.O_RDONLY)]
            pages = int(os.pread(_OWN_STATM[1], 128, 0).split()[0])
        else:
            with open(f"/proc/{pid}/statm", "rb") as fh:
                pages = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def near_memory_cap(pid: int, memory_limit: int | None, share: float | None = None) -> bool:
    """True when ``pid``'s address space is past ``share`` of ``memory_limit`` (default: at
    its cap, :data:`NEAR_CAP`; a child checks itself against :data:`RETIRE_AT`)."""
    if not memory_limit:
        return False
    if share is None:
        share = NEAR_CAP if pid != os.getpid() else RETIRE_AT
    return address_space(pid) >= share * memory_limit


# -- the door: what a child hands back is data, never code -----------------------------------
# The child runs the engine, so the engine could write its own bytes to the answer pipe. A
# plain ``pickle.loads`` would run whatever those bytes name (``os.system``, the engine's own
# module, a patch of the verdict) in the process that writes the verdict. The parent therefore
# loads only classes: the kit's own (``conformance.*``, ``simulator.*``) and the builtin
# containers, scalars and exceptions; a function, or a class of any other module (an engine's
# own type inside a returned value, say), is refused, and the case says so.

_SAFE_BUILTINS = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "object",
        "range",
        "set",
        "slice",
        "str",
        "tuple",
        "type",
    }
)


class _KitUnpickler(pickle.Unpickler):
    """Loads only the kit's own classes and the builtin data types and exceptions."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and (
            name in _SAFE_BUILTINS or name.endswith(("Error", "Exception", "Warning"))
        ):
            return super().find_class(module, name)
        if module.split(".")[0] in ("conformance", "simulator", "collections", "hypothesis"):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(
            f"the case's child sent {module}.{name}, which is not a class of the kit or a "
            "builtin data type (the kit's process loads no engine code)"
        )


class RefusedAnswer(RuntimeError):
    """What a child handed back was refused (:class:`_KitUnpickler`) or did not load."""


def _kit_loads(payload: bytes) -> Any:
    """``payload`` unpickled with :class:`_KitUnpickler`.

    Raises:
        RefusedAnswer: a refused or broken payload (saying why).
    """
    import io

    try:
        return _KitUnpickler(io.BytesIO(payload)).load()
    except Exception as exc:  # noqa: BLE001 - whatever the bytes were, they are refused
        text = f"{type(exc).__name__}: {exc}"[:300]
        raise RefusedAnswer(f"the case's answer was refused: {text}") from None


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


#: The PRNG the case threads of this process share as Hypothesis' per-thread global one
#: (``{pid: Random}``; see :func:`_share_hypothesis_prng`).
_SHARED_PRNG: dict[int, random.Random] = {}


def _share_hypothesis_prng() -> None:
    """Give this (new) case thread the process's one registered PRNG as Hypothesis' per-thread
    global ``Random``, registering it once per process.

    Left alone, Hypothesis makes that ``Random`` the first time a thread runs a test and passes
    it to ``register_random``, which runs a full ``gc.collect()`` and ``gc.get_referrers()``:
    tens of milliseconds with the kit loaded, paid by every case, since each case runs on a new
    thread. The draws do not change: Hypothesis seeds every registered PRNG (this one too) at
    the start of each example and restores it after, and it reads the PRNG's own bits only for
    a test that is neither derandomized nor given a seed, which the kit's checks never are (a
    ``--conformance-random`` run draws its seed first). Keyed by process id so that a forked
    child makes its own. If Hypothesis' internals differ from the ones this expects, nothing is
    done and Hypothesis makes its own, as before; that is the case on the Hypothesis releases
    that keep one process-wide ``Random`` (no ``hypothesis.core.threadlocal``), registered once
    by Hypothesis itself, so no thread pays for it and there is nothing to share.
    """
    try:
        import hypothesis.core as hypothesis_core
        from hypothesis import register_random

        local = hypothesis_core.threadlocal
        if local._hypothesis_global_random is not None:
            return
        prng = _SHARED_PRNG.get(os.getpid())
        if prng is None:
            _SHARED_PRNG.clear()  # a parent's entry, inherited over fork
            prng = _SHARED_PRNG[os.getpid()] = random.Random()  # held here before registering
            register_random(prng)
        local._hypothesis_global_random = prng
    except (AttributeError, ImportError):  # one process-wide PRNG, or another Hypothesis
        return


def supervise_inprocess(fn: Callable[[], Any], *, call_limit: float, case_limit: float) -> Any:
    """``fn()`` on a daemon thread here, watched for hung calls: the value, or :class:`Hung`
    when one engine call (any thread that started during ``fn``) stayed in flight longer than
    ``call_limit`` seconds, or ``fn`` outlasted ``case_limit``. A hung call's thread is
    abandoned (Python cannot kill a thread). Used in a case's child (where it names the hang
    with the case's context) and without fork.

    Raises:
        BaseException: whatever ``fn`` raised.
    """
    from conformance.runtime.timeouts import CALL_STARTED, CURRENT_CALL

    box: dict[str, Any] = {}

    def run() -> None:
        _share_hypothesis_prng()
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    before = {k: CALL_STARTED.get(k) for k in CURRENT_CALL}  # calls hung in earlier cases
    # In a supervised child the case thread is not a daemon, like the host's main thread, so
    # threads the engine starts inherit what they would in Hermes (a hang kills the child
    # anyway); in this process it must be one, so that a hung call can be abandoned.
    worker = threading.Thread(target=run, name="conformance-case", daemon=not supervised())
    started = time.monotonic()
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
        now = time.monotonic()
        for ident, since in list(CALL_STARTED.items()):
            if before.get(ident) == since or since is None:
                continue
            if now - since > call_limit:
                entry = CURRENT_CALL.get(ident)
                return Hung(entry[2] if entry else "", now - since, ident)
        if now - started > case_limit:
            hung = Hung("", now - started, worker.ident or 0)
            hung.case_limit = True
            return hung
    if "error" in box:
        raise box["error"]
    return box.get("value")


__all__ = [
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
