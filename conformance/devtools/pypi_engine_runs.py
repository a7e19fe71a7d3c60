"""One run of the kit on a published engine: ``context-engine-kit check <spec> --json <file>`` in
a subprocess, and the JSON verdict it leaves with a ``"run"`` block added.

:func:`run_engine` runs the kit on one :class:`~conformance.devtools.pypi_engine_list.Engine`
that is installed (timed, wall seconds; a fresh ``$HERMES_HOME`` per engine; a plugin folder
copied into a temporary directory, as the engine's own installer would) and writes
``<out_dir>/<distribution>-<version>.json``; :func:`kit_command` is the command it runs and the
one a page shows.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from conformance.devtools.pypi_engine_list import Engine


def installed_version(distribution: str) -> str | None:
    """The installed version string of ``distribution``, or ``None`` when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def slug_of(engine: Engine, version: str | None) -> str:
    """The page name (no suffix): ``engine.slug`` or ``<distribution>-<version>``."""
    return engine.slug or f"{engine.distribution}-{version}"


def nproc() -> int:
    """CPUs this process may use (what ``nproc`` prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _plugin_folder(engine: Engine, workdir: Path) -> Path:
    """Copy the engine's installed plugin folder to ``workdir/<plugin_name>``; return it."""
    import importlib.util

    found = importlib.util.find_spec(engine.plugin_package)
    if found is None or not found.submodule_search_locations:
        raise RuntimeError(f"{engine.plugin_package} is not an installed package")
    source = Path(list(found.submodule_search_locations)[0]) / engine.plugin_subdir
    target = workdir / engine.plugin_name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def kit_command(
    engine: Engine, json_path: Path, shown_json: str, plugin_dir: Path | None, extra: list[str]
) -> tuple[list[str], str]:
    """``(argv, shown)``: the kit's argv for ``engine`` (verdict to ``json_path``) and the same
    command as a page shows it (``context-engine-kit check ...``, the verdict as
    ``shown_json``, a temporary plugin folder named by what it is a copy of)."""
    # the pages judge the documented host (docs/multihost.md: with hermes-agent installed the
    # default run would add its profile)
    argv = [sys.executable, "-m", "conformance.cli", "check", "--host-profile=documented"]
    shown = ["context-engine-kit", "check", "--host-profile=documented"]
    if plugin_dir is not None:
        argv += ["--engine-plugin", str(plugin_dir)]
        where = f"{engine.plugin_package}/{engine.plugin_subdir}".rstrip("/")
        shown += ["--engine-plugin", f"<installed {where}/ copied to a temp {engine.plugin_name}/>"]
    else:
        argv.append(engine.spec)
        shown.append(engine.spec)
        if engine.kwargs:
            kw = json.dumps(engine.kwargs, separators=(",", ":"))
            argv += ["--engine-kwargs", kw]
            shown += ["--engine-kwargs", f"'{kw}'"]
    argv += ["--json", str(json_path), *engine.kit_args, *extra]
    shown += ["--json", shown_json, *engine.kit_args, *extra]
    return argv, " ".join(shown)


def run_engine(engine: Engine, out_dir: Path, extra: list[str]) -> Path | None:
    """Run the kit on ``engine`` once; write ``out_dir/<slug>.json`` (the kit's verdict plus a
    ``"run"`` block) and return its path, or ``None`` when the distribution is not installed.

    When the kit writes no verdict (an import or usage error), the JSON is a stub whose
    ``verdict`` names the exit code and whose ``run.output_tail`` holds the last output lines.
    """
    version = installed_version(engine.distribution)
    if version is None:
        return None
    slug = slug_of(engine, version)
    json_path = out_dir / f"{slug}.json"
    base_home = Path(os.environ.get("HERMES_HOME") or tempfile.mkdtemp(prefix="hermes-home-"))
    home = base_home / slug
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = {**os.environ, **engine.env, "HERMES_HOME": str(home), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="pypi-engine-") as work:
        state = Path(work) / "state"  # failure files: the replay commands name them
        # this machine's paths, out of the page (the longest first: state is under work)
        paths = {str(home): "$HERMES_HOME", str(state): "<state-dir>", work: "<work>"}
        plugin_dir = _plugin_folder(engine, Path(work)) if engine.plugin_package else None
        partial = Path(work) / "verdict.json"
        shown_json = f"docs/verdicts/{json_path.name}"
        argv, shown = kit_command(engine, partial, shown_json, plugin_dir, extra)
        argv += ["--state-dir", str(state)]
        started = _dt.datetime.now(_dt.UTC)
        t0 = time.monotonic()
        proc = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if partial.is_file():
            verdict = json.loads(partial.read_text(encoding="utf-8"))
        else:
            verdict = {"verdict": f"NO VERDICT (kit exit {proc.returncode})", "results": []}
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    verdict["run"] = {
        "distribution": engine.distribution,
        "version": version,
        "hermes_agent": installed_version("hermes-agent"),
        "command": shown,
        "env": {k: v for k, v in engine.env.items()},
        "wall_seconds": round(wall, 1),
        "started_utc": started.strftime("%Y-%m-%d %H:%M UTC"),
        "exit_code": proc.returncode,
        "nproc": nproc(),
        "python": platform.python_version(),
        "output_tail": [] if partial_written(verdict) else tail,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(verdict, indent=2, ensure_ascii=False) + "\n"
    for path, name in paths.items():
        text = text.replace(path, name)
    json_path.write_text(text, "utf-8")
    return json_path


def partial_written(verdict: dict[str, Any]) -> bool:
    """True when ``verdict`` is a kit verdict (it has counts), not a no-verdict stub."""
    return "counts" in verdict


__all__ = [
    "installed_version",
    "kit_command",
    "nproc",
    "partial_written",
    "run_engine",
    "slug_of",
]
