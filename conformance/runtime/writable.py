"""Can a file or a folder be written, tried before a run starts, so nothing is lost at its end.

:func:`check_writable` tries the path a command line gave (an output file such as
``--conformance-json``, ``--conformance-report``, ``--junit-xml`` or the CLI's ``--json``; a
folder such as ``--conformance-failures-dir`` or the CLI's ``--state-dir``) and raises a
:class:`~conformance.clauses.errors.KitUsageError` saying what is wrong and what to give
instead. It creates missing folders only to try them, and removes again those it made (unless
``keep``). The front ends call it before any case runs (:mod:`conformance.frontends.outputs`,
:mod:`conformance.cli`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from conformance.clauses.errors import KitUsageError

FILE, DIR = "file", "dir"


#: An example file name per output option, for the message about a folder given as a file.
_EXAMPLES = {"--conformance-report": "report.html", "--report": "report.html"}


def _problem(path: Path, kind: str, keep: bool, option: str = "") -> str | None:
    """Why ``path`` cannot be written (None: it can)."""
    if kind == FILE:
        if path.is_dir():
            name = _EXAMPLES.get(option, "junit.xml" if "junit" in option else "verdict.json")
            return f"it is a folder; give a file name (e.g. {path / name})"
        folder = path.parent
    else:
        if path.exists() and not path.is_dir():
            return "it exists and is not a folder"
        folder = path
    made: list[Path] = []
    probe = folder
    while not probe.exists() and probe.parent != probe:
        made.append(probe)
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, so no folder can be made under it"
    try:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            return f"cannot create the folder {folder} ({exc.strerror or exc})"
        try:
            if kind == FILE and path.exists():
                with open(path, "a", encoding="utf-8"):
                    pass
            else:
                fd, name = tempfile.mkstemp(dir=folder, prefix=".context-engine-kit-probe-")
                os.close(fd)
                os.unlink(name)
        except OSError as exc:
            where = path if kind == FILE and path.exists() else folder
            return f"cannot write to {where} ({exc.strerror or exc})"
        return None
    finally:
        if not keep:
            for folder_made in made:  # deepest first
                try:
                    folder_made.rmdir()
                except OSError:
                    break


def check_writable(
    path: str | os.PathLike,
    *,
    option: str,
    kind: str,
    keep: bool = False,
    base: str | os.PathLike | None = None,
) -> None:
    """Make sure ``path`` (a file or, with ``kind="dir"``, a folder) can be written now, before
    the run: nothing is lost at its end.

    Args:
        path: the value given to ``option``.
        option: the option's name, for the message (``--json``).
        kind: ``"file"`` or ``"dir"``.
        keep: keep the folders made to try it (the CLI's state dir); else they are removed.
        base: the folder a relative ``path`` is relative to (default: the current folder).

    Raises:
        KitUsageError: what is wrong with the path and what to give instead.
    """
    full = Path(os.path.abspath(os.path.join(base or os.getcwd(), os.fspath(path))))
    problem = _problem(full, kind, keep, option)
    if problem:
        thing = "file" if kind == FILE else "folder"
        raise KitUsageError(
            f"{option} {os.fspath(path)}: cannot write there: {problem}. Give a {thing} path "
            "in a folder you can write to."
        )


__all__ = ["DIR", "FILE", "check_writable"]
