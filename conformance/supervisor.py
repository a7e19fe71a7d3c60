"""Supervised cases: each case runs in a forked child that the kit watches and can kill.

Whatever the engine does by accident (``os._exit``, a segfault, a memory cap reached, a call
blocked in C, a non-daemon thread that never ends), the child ends, not the run. The parent
(the pytest process, ``run_conformance``) gets one of three answers from :func:`supervise`:

- the child's return value (its :class:`~conformance.results.Result` rows, pickled over a
  pipe);
- :class:`Died`: the child ended without an answer (exit code or signal, the engine call in
  flight, whether the memory cap was reached);
- :class:`Hung`: an engine call stayed in flight longer than the per-call limit, so the child
  was killed (the method and how long).

The child reports every engine call it starts and ends on the same pipe (:func:`call_started`,
:func:`call_ended`, called by :func:`conformance.timeouts.calling` and the host's recorder), so
the parent knows the method in flight when the child dies or hangs, on any thread. The per-call
limit is real time (a hung call can only be timed out that way); nothing else of the kit's clock
decides a verdict.

Where ``os.fork`` does not exist (Windows), or with ``isolation="inprocess"``, the function runs in
the calling process on a watched thread instead (:func:`supervise_inprocess`): hangs are still
reported, a dying engine then ends the run.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Isolation modes: ``fork`` (default where the platform has it) or ``inprocess``.
ISOLATIONS = ("fork", "inprocess")
#: Default memory cap of a case's child (address space, bytes): 4 GiB.
DEFAULT_MEMORY_LIMIT = 4 * 1024**3
#: Largest answer a child may send (bytes); bigger is a kit bug or a hostile value.
MAX_ANSWER_BYTES = 256 * 1024 * 1024

_CALL, _RETURN, _ANSWER, _ERROR = b"C", b"R", b"A", b"E"
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
    """

    method: str
    exit_code: int | None
    signal: int | None
    memory_cap: bool = False
    seconds: float = 0.0

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
    """

    method: str
    seconds: float
    thread: int = 0


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
        monitor.send(_CALL, f"{ident}\x00{method}".encode("utf-8", "replace"))


def call_ended() -> None:
    """In a supervised child: the engine call of this thread returned (no-op elsewhere)."""
    monitor = _MONITOR
    if monitor is not None:
        monitor.send(_RETURN, str(threading.get_ident()).encode())


def supervised() -> bool:
    """True inside a supervised child."""
    return _MONITOR is not None


def supervise(
    fn: Callable[[], Any],
    *,
    call_limit: float,
    case_limit: float,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    isolation: str = "fork",
    on_start: Callable[[], None] | None = None,
) -> Any:
    """Run ``fn()`` supervised and return its value, or :class:`Died` / :class:`Hung`.

    Args:
        fn: runs in the child; its return value must pickle (the case's rows).
        call_limit: seconds one engine call may stay in flight (``--conformance-timeout``).
        case_limit: seconds the whole case may take before the child is killed as a kit
            fault (a generous cap: the check budget and the per-call limit bound the work).
        memory_limit: the child's address-space cap in bytes (``RLIMIT_AS``; None: none).
        isolation: ``fork`` (a child per call) or ``inprocess`` (a watched thread here).
        on_start: runs first in the child (installs the sandbox's audit hooks, say).
    Raises:
        BaseException: whatever ``fn`` raised in the child, re-raised here when it pickles
            (KeyboardInterrupt in the parent stops the run).
    """
    if isolation == "inprocess" or not fork_available():
        return supervise_inprocess(fn, call_limit=call_limit, case_limit=case_limit)
    read_fd, write_fd = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(fn, write_fd, memory_limit, on_start)
    os.close(write_fd)
    try:
        return _watch(pid, read_fd, started, call_limit, case_limit)
    finally:
        os.close(read_fd)


def _child(fn: Callable[[], Any], fd: int, memory_limit: int | None, on_start: Any) -> None:
    global _MONITOR
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        _MONITOR = _Monitor(fd)
        if memory_limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        if on_start is not None:
            on_start()
        try:
            value = fn()
            kind = _ANSWER
        except BaseException as exc:  # noqa: BLE001 - handed to the parent
            value, kind = _portable(exc), _ERROR
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an answer that does not pickle is a kit bug
            payload = pickle.dumps(RuntimeError(f"the case's answer does not pickle: {exc}"))
            kind = _ERROR
        _MONITOR.send(kind, payload)
    except BaseException:  # noqa: BLE001 - the child must end here, whatever happened
        code = 70
    finally:
        os._exit(code)  # no atexit, no non-daemon threads: the engine's threads end here


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it pickles, else a RuntimeError carrying its text and traceback."""
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return RuntimeError(f"{type(exc).__name__}: {exc}\n{text[-2000:]}")


def _watch(pid: int, fd: int, started: float, call_limit: float, case_limit: float) -> Any:
    """The parent's side: read call starts/ends and the answer; kill on a hang."""
    buffer = b""
    in_flight: dict[int, tuple[str, float]] = {}
    answer: tuple[bytes, bytes] | None = None
    memory_cap = False
    eof = False
    while not eof and answer is None:
        now = time.monotonic()
        oldest = min(in_flight.items(), key=lambda kv: kv[1][1], default=None)
        if oldest is not None and now - oldest[1][1] > call_limit:
            _kill(pid)
            return Hung(oldest[1][0], now - oldest[1][1], oldest[0])
        if now - started > case_limit:
            _kill(pid)
            method = oldest[1][0] if oldest else ""
            return Hung(method, now - started, oldest[0] if oldest else 0)
        wait = case_limit - (now - started)
        if oldest is not None:
            wait = min(wait, call_limit - (now - oldest[1][1]))
        ready, _, _ = select.select([fd], [], [], max(0.01, min(wait, 1.0)))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            eof = True
            break
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
                in_flight[int(ident)] = (method, time.monotonic())
            elif kind == _RETURN:
                in_flight.pop(int(payload.decode()), None)
            else:
                answer = (kind, payload)
                break
    _, status = os.waitpid(pid, 0)
    if answer is not None:
        value = pickle.loads(answer[1])
        if answer[0] == _ERROR:
            raise value
        return value
    method = min(in_flight.values(), key=lambda v: v[1])[0] if in_flight else ""
    if os.WIFSIGNALED(status):
        return Died(method, None, os.WTERMSIG(status), memory_cap, time.monotonic() - started)
    return Died(method, os.WEXITSTATUS(status), None, memory_cap, time.monotonic() - started)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def supervise_inprocess(fn: Callable[[], Any], *, call_limit: float, case_limit: float) -> Any:
    """The fallback without fork: ``fn()`` on a daemon thread here, watched for hung calls
    through :data:`conformance.timeouts.CURRENT_CALL`. A hung call's thread is abandoned (Python
    cannot kill a thread); an engine that ends the process ends the run."""
    from conformance.timeouts import CURRENT_CALL

    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    before = dict(CURRENT_CALL)
    seen: dict[tuple, float] = {}
    worker = threading.Thread(target=run, name="conformance-case", daemon=True)
    started = time.monotonic()
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
        now = time.monotonic()
        for ident, (_, _, method) in list(CURRENT_CALL.items()):
            if before.get(ident) == CURRENT_CALL.get(ident):
                continue
            first = seen.setdefault((ident, method), now)
            if now - first > call_limit:
                return Hung(method, now - first, ident)
        if now - started > case_limit:
            return Hung("", now - started, worker.ident or 0)
    if "error" in box:
        raise box["error"]
    return box.get("value")


__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "Died",
    "Hung",
    "ISOLATIONS",
    "call_ended",
    "call_started",
    "fork_available",
    "supervise",
    "supervise_inprocess",
    "supervised",
]
