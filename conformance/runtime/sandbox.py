"""What an engine may reach for: its own home, loopback, nothing else (kit clause E1, and TS2).

Every engine instance the kit builds gets its own temp home, set before its constructor runs
(:meth:`Sandbox.new_home`): ``HOME``, ``HERMES_HOME``, ``TMPDIR`` and the working directory all
point into ``<case root>/engine-<n>/``, so two engines never see each other's files (a SQLite
store by default path, a cache under ``~``). Clones the host makes share their parent's home
(that is what C1 is about); a scenario is one installation, so its engines share one home.
When the user set ``HERMES_HOME``, its ``config.yaml`` and ``.env`` are copied into every
engine home (configuration is kept, state is not shared).

:func:`install_audit_hook` watches the engine through Python's audit hooks (PEP 578), not by
patching module attributes: a connection or datagram to a non-loopback address (``socket.connect``,
``socket.sendto``, name lookups), a process spawn (``subprocess.Popen``, ``os.system``,
``os.fork``, ``os.posix_spawn``, ``os.exec*``) and a write outside the case root (``open`` for
writing, ``os.mkdir``, ``os.remove``, ``os.rename``...) are blocked (the engine gets an
``OSError``, as on a sealed machine) and recorded as :class:`Reach` findings of kit clause E1,
even when the engine swallows the error. Audit hooks cannot be removed, so the hook is installed
in a case's child process only (or, in-process, once, and active only while a case runs).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import platform
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.clauses.errors import NetworkBlocked
from simulator.provider.tokens import TokenizerUnavailable, tiktoken_cache_entries

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def is_loopback(host: Any) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost names (None: no address, allowed)."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


#: The kit clause of an engine reaching outside its sandbox (docs/coverage.md#e1).
CLAUSE = "E1"
_ENV = ("HOME", "HERMES_HOME", "TMPDIR", "TIKTOKEN_CACHE_DIR")
_SPAWN_EVENTS = {
    "subprocess.Popen",
    "os.system",
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.exec",
    "os.spawn",
}
_WRITE_EVENTS = {
    "os.mkdir",
    "os.remove",
    "os.rmdir",
    "os.rename",
    "os.replace",
    "os.truncate",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


@dataclass(frozen=True)
class Reach:
    """One thing the engine reached for and was refused.

    Attributes:
        kind: ``network``, ``process`` or ``file``.
        detail: what exactly (``connect to 203.0.113.9:443``, ``subprocess.Popen ['curl']``,
            ``open /root/x.db for writing``).
        method: the engine method in flight (``compress``), or "" outside a call.
    """

    kind: str
    detail: str
    method: str = ""

    def describe(self) -> str:
        """``compress() tried to connect to 203.0.113.9:443``."""
        who = f"{self.method}()" if self.method else "the engine"
        return f"{who} tried to {self.detail}"


#: The folder every case root is made in, read once when the kit is imported, before any
#: engine runs: an explicit parent no engine can move. ``tempfile`` caches its folder
#: process-wide (``tempfile.tempdir``), and an engine's daemon thread that calls
#: ``tempfile.TemporaryDirectory()`` while a case's ``TMPDIR`` is set can cache that case's
#: temp folder after the sandbox restored it; later case roots must not follow it there.
CASE_PARENT = tempfile.gettempdir()
#: The name every case root starts with (under :data:`CASE_PARENT`).
CASE_PREFIX = "conformance-case-"
#: Every case root made in this process, newest last, as text (``str(root)``, what
#: :meth:`Sandbox.allows_write` compares: every write event is checked against all of them).
_ROOTS: list[str] = []
#: In a supervised child: its idle folder's tag (``<tag>-``), which the case roots it makes
#: carry after :data:`CASE_PREFIX`, so the parent finds and removes the roots of a child that
#: died or was killed mid-case (:func:`remove_case_roots`); "" elsewhere.
_CHILD_TAG = ""


def _add_root(root: Path) -> None:
    _ROOTS.append(str(root))


def _point_tempdir(folder: Path) -> None:
    """``TMPDIR`` and ``tempfile``'s cached folder both at ``folder`` (made if missing). The
    cache is set, not cleared: a cleared cache makes the next ``tempfile`` call probe its
    candidates by writing a file in each (``/tmp``, ``/var/tmp``...), and an engine thread
    left from an earlier case would be blamed for that probe."""
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = str(folder)


def idle_folder() -> Path:
    """A new folder under :data:`CASE_PARENT` for a supervised child's temp files between
    cases (:func:`start_child`); its maker removes it when the child is done."""
    return Path(tempfile.mkdtemp(prefix="conformance-idle-", dir=CASE_PARENT)).resolve()


def start_child(idle: Path | None = None) -> None:
    """Prepare a supervised child that runs cases (its ``on_start``): the audit hook, and,
    given ``idle`` (an :func:`idle_folder`), ``TMPDIR`` and ``tempfile``'s folder pointed there
    for the time between cases (every case's :meth:`Sandbox.close` restores them): an engine's
    daemon thread still running between cases makes its temp files inside the kit's folders,
    never in the real temp folder, and no write there is held against the engine."""
    global _CHILD_TAG
    if idle is not None:
        _CHILD_TAG = _tag(Path(idle)) + "-"
        _add_root(Path(idle))
        _point_tempdir(Path(idle))
    install_audit_hook()


def _tag(idle: Path) -> str:
    return idle.name.removeprefix("conformance-idle-")


def remove_case_roots(idle: Path) -> None:
    """Remove the case roots left by the supervised children started with ``idle`` (an
    :func:`idle_folder`): a child that dies mid-case (``os._exit``, a signal, the memory cap) or
    is killed as hung never reaches :meth:`Sandbox.close`. Call it only when no such child is
    running."""
    for root in Path(CASE_PARENT).glob(f"{CASE_PREFIX}{_tag(Path(idle))}-*"):
        shutil.rmtree(root, ignore_errors=True)


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (size in bytes, mtime in ns)}`` of every entry under ``root``."""
    out = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        out[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return out


class Sandbox:
    """The homes of one case's engines, under one temp root removed at :meth:`close`.

    Args:
        user_hermes_home: the ``HERMES_HOME`` the user set (its config is copied into every
            engine home), or None.
        seed: called with each new home's ``HERMES_HOME`` folder to write what the engine
            needs there (the engine LLM's ``config.yaml``), or None.
    """

    def __init__(
        self, user_hermes_home: str | None = None, seed: Callable[[Path], None] | None = None
    ) -> None:
        prefix = CASE_PREFIX + _CHILD_TAG
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir=CASE_PARENT)).resolve()
        _add_root(self.root)
        self.user_hermes_home = user_hermes_home
        self.seed = seed
        self._count = 0
        self._saved = {k: os.environ.get(k) for k in _ENV}
        self._cwd = os.getcwd()
        self._tempdir = tempfile.tempdir
        # until the first engine home, temp files go into the case root too: a daemon thread an
        # engine left running from an earlier case writes here, not into the real temp folder
        _point_tempdir(self.root / "tmp")
        self.current: Path | None = None
        self._seeded = False
        self._seeded_listing: dict[str, tuple[int, int]] = {}

    def new_home(self) -> Path:
        """A fresh home for the next engine: ``HOME``, ``HERMES_HOME``, ``TMPDIR`` and the cwd
        point into it from now on. Returns its folder."""
        if self.current is not None and self._untouched(self.current):
            home = self.current  # the last engine left its home empty: it is as good as new
        else:
            self._count += 1
            home = self.root / f"engine-{self._count}"
            for sub in ("home", "hermes", "cwd", "tmp"):
                (home / sub).mkdir(parents=True, exist_ok=True)
            self._seeded = False
        if not self._seeded:
            if self.user_hermes_home:
                for name in ("config.yaml", ".env"):
                    source = Path(self.user_hermes_home) / name
                    if source.is_file():
                        shutil.copyfile(source, home / "hermes" / name)
            if self.seed is not None:
                self.seed(home / "hermes")  # e.g. where Hermes' auxiliary client finds its LLM
            self._seeded = True
            self._seeded_listing = _listing(home / "hermes")
        os.environ["HOME"] = str(home / "home")
        os.environ["HERMES_HOME"] = str(home / "hermes")
        _point_tempdir(home / "tmp")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(self.tiktoken_cache())
        os.chdir(home / "cwd")
        self.current = home
        return home

    def tiktoken_cache(self) -> Path:
        """The tiktoken cache folder every engine home points ``TIKTOKEN_CACHE_DIR`` at:
        ``<case root>/tiktoken-cache``, holding the kit's own sha256-verified cl100k_base file
        under the name tiktoken gives its download (:func:`simulator.provider.tokens.
        tiktoken_cache_entries`), so an engine that calls ``tiktoken.get_encoding(
        "cl100k_base")`` finds what a real install finds once it has downloaded it, without
        the network. Other encodings are not there: their download is still blocked (E1)."""
        folder = self.root / "tiktoken-cache"
        if not folder.is_dir():
            folder.mkdir()
            try:
                entries = tiktoken_cache_entries()
            except TokenizerUnavailable:
                entries = {}  # the kit's own counting fails loudly elsewhere
            for name, source in entries.items():
                (folder / name).symlink_to(source)
        return folder

    def _untouched(self, home: Path) -> bool:
        """True when nothing was written in ``home`` beyond what seeding put there."""
        seeded = self._seeded_listing if self._seeded else {}
        try:
            return all(
                _listing(home / sub) == (seeded if sub == "hermes" else {})
                for sub in ("home", "hermes", "cwd", "tmp")
            )
        except OSError:
            return False

    def watched_dirs(self) -> list[Path]:
        """The current engine's HOME, HERMES_HOME, cwd and temp dir (what TS2 watches)."""
        if self.current is None:
            return []
        return [self.current / sub for sub in ("home", "hermes", "cwd", "tmp")]

    def allows_write(self, path: Any) -> bool:
        """True for a path under the case root (or the root of an earlier case of this process:
        an engine's daemon thread still cleaning up a temp folder it made in an earlier case's
        home writes into its own former home, not outside), a device, or Python's own bytecode
        cache."""
        try:
            text = os.fsdecode(path)
        except TypeError:
            return True  # a file descriptor: already opened somewhere we allowed
        if text.startswith("/dev/") or "/__pycache__/" in text or text.endswith("/__pycache__"):
            return True  # the import system's bytecode cache: its folder and files in it
        # the root itself or a path inside it: a string test on the normalised absolute path,
        # what comparing ``Path`` objects (``root in resolved.parents``) decides, at a fraction
        # of its cost (the roots of every earlier case of the process are tried)
        resolved = os.path.abspath(text)
        return any(
            resolved == root or resolved.startswith(root if root.endswith("/") else root + "/")
            for root in _ROOTS
        )

    def close(self) -> None:
        """Restore the environment and the cwd, then remove every engine home."""
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        tempfile.tempdir = self._tempdir
        with contextlib.suppress(OSError):
            os.chdir(self._cwd)
        shutil.rmtree(self.root, ignore_errors=True)


class _Watch:
    """The audit hook's state: the active sandbox and what was refused."""

    def __init__(self) -> None:
        self.sandbox: Sandbox | None = None
        self.network_blocks = 0  # block_network() depth: the network rule alone
        self.reaches: list[Reach] = []
        self.lock = threading.Lock()
        self.installed = False
        self.inside = threading.local()


_WATCH = _Watch()


def _method_in_flight() -> str:
    from conformance.runtime.timeouts import CURRENT_CALL

    entry = CURRENT_CALL.get(threading.get_ident())
    return entry[2] if entry else ""


def _refuse(kind: str, detail: str, error: BaseException) -> None:
    reach = Reach(kind, detail, _method_in_flight())
    with _WATCH.lock:
        if reach not in _WATCH.reaches:
            _WATCH.reaches.append(reach)
    raise error


_EVENTS = frozenset(
    {"socket.connect", "socket.sendto", "socket.getaddrinfo", "open"}
    | _SPAWN_EVENTS
    | _WRITE_EVENTS
)


def _hook(event: str, args: tuple) -> None:
    if event not in _EVENTS:
        return  # the hook sees every audit event of the process: leave the others fast
    sandbox = _WATCH.sandbox
    if (sandbox is None and not _WATCH.network_blocks) or getattr(_WATCH.inside, "busy", False):
        return
    _WATCH.inside.busy = True  # the hook's own work raises no further events for it
    try:
        _judge(sandbox, event, args)
    finally:
        _WATCH.inside.busy = False


def _judge(sandbox: Sandbox, event: str, args: tuple) -> None:
    if event in ("socket.connect", "socket.sendto"):
        address = args[1]
        host = address[0] if isinstance(address, tuple) and address else None
        if isinstance(address, (str, bytes)):  # a Unix-domain socket
            return
        if not is_loopback(host):
            port = address[1] if isinstance(address, tuple) and len(address) > 1 else "?"
            verb = "connect to" if event == "socket.connect" else "send a datagram to"
            _refuse(
                "network",
                f"{verb} {host}:{port}",
                NetworkBlocked(f"network access outside loopback is blocked by the kit ({host})"),
            )
    elif event == "socket.getaddrinfo":
        host = args[0]
        if host is not None and not is_loopback(host):
            _refuse(
                "network",
                f"look up {host!r}",
                NetworkBlocked(f"name lookups outside loopback are blocked by the kit ({host!r})"),
            )
    elif sandbox is None:
        return  # only the network rule is on (block_network outside a case)
    elif event in _SPAWN_EVENTS:
        what = args[1] if len(args) > 1 and event != "os.system" else args[0] if args else ""
        _refuse(
            "process",
            f"start a process ({event} {str(what)[:80]})",
            PermissionError(f"starting processes is blocked by the kit ({event})"),
        )
    elif event == "open":
        path, mode, flags = (list(args) + [None, None, None])[:3]
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and mode is None and flags & _WRITE_FLAGS
        )
        if writing and not sandbox.allows_write(path):
            shown = os.fsdecode(path) if not isinstance(path, int) else path
            _refuse(
                "file",
                f"write {shown} (outside its home)",
                PermissionError(f"writing outside the engine's home is blocked by the kit: {path}"),
            )
    elif event in _WRITE_EVENTS:
        paths = _event_paths(event, args)
        bad = [p for p in paths if not sandbox.allows_write(p)]
        if bad:
            _refuse(
                "file",
                f"{event} {os.fsdecode(bad[0])} (outside its home)",
                PermissionError(f"changing files outside the engine's home is blocked: {bad[0]}"),
            )


def _event_paths(event: str, args: tuple) -> list[Any]:
    """The paths a write event names, each resolved against its ``dir_fd`` when it has one
    (``shutil.rmtree`` removes a tree's files by name relative to an open folder: the name
    alone says nothing about where the file is)."""
    if event in ("os.rename", "os.replace") and len(args) >= 4:
        pairs = [(args[0], args[2]), (args[1], args[3])]
    elif event in ("os.remove", "os.rmdir", "os.mkdir") and args:
        pairs = [(args[0], args[-1] if len(args) > 1 else None)]
    else:
        return [a for a in args if isinstance(a, (str, bytes, os.PathLike))]
    out = []
    for path, dir_fd in pairs:
        if not isinstance(path, (str, bytes, os.PathLike)):
            continue
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(os.fsdecode(path)):
            try:
                folder = os.readlink(f"/proc/self/fd/{dir_fd}")
            except OSError:
                continue  # no way to tell where it is: an fd opened where the engine could
            path = os.path.join(folder, os.fsdecode(path))
        out.append(path)
    return out


@contextlib.contextmanager
def network_blocked() -> Iterator[None]:
    """Block non-loopback connections, datagrams and name lookups for the duration (re-entrant,
    process-wide), also outside a sandbox; attempts are recorded when a sandbox is watched."""
    install_audit_hook()
    with _WATCH.lock:
        _WATCH.network_blocks += 1
    try:
        yield
    finally:
        with _WATCH.lock:
            _WATCH.network_blocks -= 1


#: The name callers outside the sandbox use (the report plugin, the scenario CLI).
block_network = network_blocked


def install_audit_hook() -> None:
    """Install the audit hook in this process (once; it is active only while :func:`watching`)."""
    if not _WATCH.installed:
        # The stdlib runs ``uname -p`` the first time anything asks for the processor
        # (platform.platform(), which HTTP clients put in their User-Agent, does): ask once
        # here, before the hook watches, so that cached answer is no process an engine starts.
        platform.processor()
        sys.addaudithook(_hook)
        _WATCH.installed = True


@contextlib.contextmanager
def watching(sandbox: Sandbox) -> Iterator[list[Reach]]:
    """Block and record what the engine reaches for while the block runs; yields the list of
    :class:`Reach` findings (filled as they happen)."""
    install_audit_hook()
    with _WATCH.lock:
        _WATCH.reaches = []
    _WATCH.sandbox = sandbox  # the network rule is part of the sandbox
    try:
        yield _WATCH.reaches
    finally:
        _WATCH.sandbox = None


__all__ = [
    "CLAUSE",
    "Reach",
    "Sandbox",
    "block_network",
    "idle_folder",
    "install_audit_hook",
    "start_child",
    "is_loopback",
    "network_blocked",
    "watching",
]
