"""Failure files: the shrunk example of a failing case, and ``--conformance-replay FILE``.

One format for every front end (``"format": 2``)::

    {"format": 2, "check": "V2-tool-results-paired[compress]", "clause": "V2", "level": "MUST",
     "engine": {"spec": "mypkg:Engine", "kwargs": {}} | {"plugin": "/path/to/plugin"},
     "host_profile": "documented", "profile": "default", "capabilities": [],
     "message": "[V2 MUST] ...", "example": {"history": [...], "draws": {...}},
     "seed": null, "derandomize": true}

Files live at ``<failures dir>/<engine slug>/<check id, file-safe>.json``, so a passing run of
one engine never removes another engine's counterexample. Under the derandomized profile a
seed alone does not reproduce a failure: rerun the file with ``--conformance-replay FILE``,
which runs the body once on the recorded draws (and takes the engine from the file when none
is given).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conformance.clauses.errors import KitUsageError

FORMAT = 2
_SAFE_RE = re.compile(r"[^A-Za-z0-9_.-]+")


def failure_path(failures_dir: Path, engine_slug: str, check_id: str) -> Path:
    """``<failures_dir>/<engine_slug>/<check id, made file-safe>.json``."""
    return Path(failures_dir) / engine_slug / (_SAFE_RE.sub("_", check_id) + ".json")


def write_failure(path: Path, payload: dict[str, Any]) -> str:
    """Write one failure file (``payload`` in the module's format, ``"format"`` added); return
    its path as text."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, **payload}
    text = json.dumps(data, indent=1, ensure_ascii=False, default=repr)
    path.write_text(text, encoding="utf-8")
    return str(path)


def clear_failure(path: Path, check_id: str) -> bool:
    """Remove a stale failure file of ``check_id`` now that the case passes; True if removed.

    Only a file this module wrote for this very case goes (JSON naming ``check_id`` and holding
    an ``example``); anything else at that path is left alone.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or data.get("check") != check_id or "example" not in data:
        return False
    Path(path).unlink(missing_ok=True)
    return True


def load(path: Path) -> dict[str, Any]:
    """Read a failure file for ``--conformance-replay``.

    Raises:
        KitUsageError: the file cannot be read, is not a failure file, or is for a check this
            kit does not have (the message says what is wrong and what to give instead).
    """
    from conformance.authoring import registry

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise KitUsageError(
            f"--conformance-replay {path}: cannot read it ({exc}); give a file written under "
            ".conformance/failures/ by a failing run"
        ) from None
    if not isinstance(data, dict) or "check" not in data or "example" not in data:
        raise KitUsageError(
            f"--conformance-replay {path}: not a conformance failure file (needs 'check' and "
            "'example')"
        )
    if not isinstance(data["example"], dict):
        raise KitUsageError(f"--conformance-replay {path}: 'example' must be an object")
    try:
        registry.get(data["check"])
    except (KeyError, TypeError):
        raise KitUsageError(
            f"--conformance-replay {path}: the file is for check {data['check']!r}, which this kit "
            "does not have (the check ids are the test ids: pytest --engine=... --collect-only "
            "-q). Replay a file written by this version of the kit, or rerun the checks to "
            "write a new one."
        ) from None
    return data


def draws(data: dict[str, Any]) -> dict[str, Any]:
    """The recorded draws of a failure file (what the case body gets instead of drawing)."""
    return dict(data["example"].get("draws") or {})


__all__ = ["FORMAT", "clear_failure", "draws", "failure_path", "load", "write_failure"]
