"""The engine's own frames of an exception, and the key that names one root cause.

An engine exception is shown with the engine's traceback only (its frames, ``file:line in
function``, innermost last; the kit's, pytest's, Hypothesis' and the standard library's frames
are left out), in the message, the failure file and junit. The same exception type raised from
the same engine frame by the same method is one root cause (:func:`root_cause`): the verdict
reports it once, under the case that owns it, and points the other cases to it.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from pathlib import Path

_KIT_ROOTS = tuple(
    str(Path(__file__).resolve().parents[2] / name) + os.sep
    for name in ("conformance", "simulator")
)
_LIBRARY_ROOTS = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
)
_THIRD_PARTY = ("hypothesis", "_pytest", "pytest", "pluggy")


def _is_engine_file(filename: str) -> bool:
    path = str(Path(filename).resolve()) if filename and not filename.startswith("<") else filename
    if path.startswith(_KIT_ROOTS) or path.startswith(_LIBRARY_ROOTS):
        return False
    parts = Path(path).parts
    return not any(part in _THIRD_PARTY for part in parts[-3:-1])


def _display(filename: str) -> str:
    """A short path: relative to the working directory when under it, else as given."""
    try:
        rel = os.path.relpath(filename)
        return rel if not rel.startswith("..") else filename
    except ValueError:
        return filename


def engine_frames(exc: BaseException, limit: int = 6) -> list[str]:
    """The engine's frames of ``exc``'s traceback, innermost last: ``["mypkg/engine.py:42 in
    compress", ...]`` (at most ``limit``, the innermost ones)."""
    frames = [
        f"{_display(f.filename)}:{f.lineno} in {f.name}"
        for f in traceback.extract_tb(exc.__traceback__)
        if _is_engine_file(f.filename)
    ]
    return frames[-limit:]


def where(exc: BaseException) -> str:
    """`` (raised at mypkg/engine.py:42 in compress <- mypkg/engine.py:10 in _summarise)``, or
    "" when no engine frame is known; innermost first."""
    frames = engine_frames(exc)
    if not frames:
        return ""
    return " (raised at " + " <- ".join(reversed(frames)) + ")"


def root_cause(exc: BaseException, method: str) -> str:
    """The key of one root cause: method, exception type and the innermost engine frame
    (``compress|TypeError|mypkg/engine.py:42``)."""
    frames = engine_frames(exc, limit=1)
    frame = frames[0].split(" in ")[0] if frames else "?"
    return f"{method}|{type(exc).__name__}|{frame}"


__all__ = ["engine_frames", "root_cause", "where"]
