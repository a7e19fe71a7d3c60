"""The compatibility table of published engines: run the kit on each context engine published
on the package index (installed next to ``hermes-agent``) and write ``docs/verdicts/``.

For every engine of :data:`ENGINES` that is installed, :func:`run_engine` runs
``context-engine-kit check <spec> --json <file>`` in a subprocess (timed, wall seconds; a fresh
``$HERMES_HOME`` per engine), adds a ``"run"`` block (command, wall seconds, date, ``nproc``,
Python version, exit code) to the kit's JSON verdict and writes
``docs/verdicts/<distribution>-<version>.json``. :func:`render_page` turns one such JSON into
``<distribution>-<version>.md`` (verdict, counts, failures by clause with the kit's one-line
message, and the judgement of each failure from ``docs/verdicts/judgements.yaml``);
:func:`render_index` writes ``docs/verdicts/README.md``, one row per engine and version, the
rows of pages other tools own (Hermes' own compressor, ``tox -e hermes``) included.

Facts and verdicts only: no engine code is copied into this repository (a plugin folder is
copied into a temporary directory for the run, as the engine's own installer would).

Used by ``tox -e pypi-engines``; ``python -m conformance.devtools.pypi_engines --help``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = ROOT / "docs" / "verdicts"
JUDGEMENTS = VERDICTS / "judgements.yaml"
BAD = ("failed", "error")
#: The kwargs Hermes' own verdict uses (tox.ini ``[testenv:hermes]``): a known window, so the
#: constructor does not probe the network for the model's context length.
COMPRESSOR_KWARGS = {"model": "test", "quiet_mode": True, "config_context_length": 200000}
#: Extra ``check`` options of every run: none, the default per-call limit and budget (the kit
#: serves the engines' summary LLM, so no engine waits on a provider it cannot reach).
KIT_ARGS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Engine:
    """One published engine: how the kit loads it, and how it is constructed.

    Exactly one of ``spec`` (``MODULE:ATTR``, built with ``kwargs``) or ``plugin_package``
    (an importable package holding a plugin folder, copied to a temporary folder named
    ``plugin_name`` and loaded with ``--engine-plugin``) is set. ``owned_by`` names the tool
    that writes the page instead (the row is read, never run, here); ``slug`` overrides the
    page name (default ``<distribution>-<version>``).
    """

    distribution: str
    title: str
    construction: str
    spec: str = ""
    kwargs: dict[str, Any] | None = None
    plugin_package: str = ""
    plugin_subdir: str = ""
    plugin_name: str = ""
    kit_args: tuple[str, ...] = KIT_ARGS
    env: dict[str, str] = field(default_factory=dict)
    owned_by: str = ""
    slug: str = ""


ENGINES: tuple[Engine, ...] = (
    Engine(
        distribution="hermes-agent",
        title="Hermes' built-in `ContextCompressor`",
        construction="see its page",
        owned_by="tox -e hermes",
        slug="hermes-0.19.0",
    ),
    Engine(
        distribution="hermes-context-tuner",
        title="`ContextTunerEngine` (a wrapper delegating to Hermes' `ContextCompressor`)",
        construction=(
            "The package ships a plugin folder, `hermes_context_tuner/hermes_engine/` "
            "(`plugin.yaml` name `context-tuner`, `register(ctx)` registering "
            "`ContextTunerEngine()`), which its installer `hermes-context-tuner install-hermes` "
            "copies to `plugins/context_engine/context-tuner/`. The kit loads that folder, "
            "copied to a temporary `context-tuner/`, with `--engine-plugin` (R4-R6 run too). "
            "The constructor takes no model or window: it builds the delegate with "
            "`model=$HERMES_MODEL or 'unknown'` and no `config_context_length`."
        ),
        plugin_package="hermes_context_tuner",
        plugin_subdir="hermes_engine",
        plugin_name="context-tuner",
    ),
    Engine(
        distribution="hermes-jev-compact",
        title="`JevContextCompressor` (a `ContextCompressor` subclass, engine name `jev`)",
        construction=(
            "An entry-point plugin (`hermes_agent.plugins`); its `register(ctx)` builds "
            "`JevContextCompressor(model='jev-latest', **config)`. The kit builds the class "
            "directly with the kwargs of Hermes' own verdict (a known window, quiet), since "
            "the `register` path reads the host's `config.yaml` and `ctx._manager`. No "
            "`TYPESAFE_API_KEY` is set, so the engine's documented path is its fallback to "
            "the built-in prune (no network)."
        ),
        spec="hermes_jev_compact.engine:JevContextCompressor",
        kwargs=COMPRESSOR_KWARGS,
    ),
    Engine(
        distribution="hermes-laya",
        title="`LayaContextCompressor` (a `ContextCompressor` subclass, engine name `laya`)",
        construction=(
            "An entry-point plugin (`hermes_agent.plugins`) whose `register(ctx)` also "
            "registers tools, hooks, a command and a skill, then "
            "`LayaContextCompressor()`. The kit builds the class directly with the kwargs "
            "of Hermes' own verdict. `LAYA_AUTO_INSTALL=0` and no Laya backend package "
            "installed: the engine's documented path is its fallback to the built-in prune "
            "(no model download, no pip)."
        ),
        spec="hermes_laya.engine:LayaContextCompressor",
        kwargs=COMPRESSOR_KWARGS,
        env={"LAYA_AUTO_INSTALL": "0"},
    ),
)


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
        plugin_dir = _plugin_folder(engine, Path(work)) if engine.plugin_package else None
        partial = Path(work) / "verdict.json"
        shown_json = f"docs/verdicts/{json_path.name}"
        argv, shown = kit_command(engine, partial, shown_json, plugin_dir, extra)
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
    json_path.write_text(json.dumps(verdict, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return json_path


def partial_written(verdict: dict[str, Any]) -> bool:
    """True when ``verdict`` is a kit verdict (it has counts), not a no-verdict stub."""
    return "counts" in verdict


# -- rendering -------------------------------------------------------------------------------

_PREFIX = re.compile(r"^\[(?P<clause>[A-Z]+[0-9]*) (?P<level>MUST|SHOULD)\] ")


def one_line(message: str) -> str:
    """The kit's failure message without its repro command, on one line, safe in a table.

    The repro names temporary paths (failure files), so it is cut; a "same root cause as X"
    note the kit appends after it is kept.
    """
    head, _, rest = message.partition(" Repro: ")
    note = re.search(r"Same root cause as (\S+)", rest)
    text = head.strip()
    if note:
        text += f" (same root cause as `{note.group(1)}`)"
    return text.replace("\n", " ").replace("|", "\\|")


def failures(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The failed and errored result rows of ``verdict``, in the kit's order."""
    return [r for r in verdict.get("results", []) if r.get("outcome") in BAD]


def root_failures(verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per counted failure: the failures without a ``root_cause`` pointer (what the
    kit's ``failures_by_level`` counts), each with ``"shares"``: the checks pointing to it."""
    rows = failures(verdict)
    shares: dict[str, list[str]] = {}
    for r in rows:
        if r.get("root_cause"):
            shares.setdefault(r["root_cause"], []).append(r["check"])
    return [{**r, "shares": shares.get(r["check"], [])} for r in rows if not r.get("root_cause")]


def by_clause(rows: list[dict[str, Any]], level: str) -> str:
    """``"A4 ×2, E1"``: the clauses of ``rows`` at ``level`` with their counts, or ``-``."""
    counts: OrderedDict[str, int] = OrderedDict()
    for r in rows:
        if r.get("level") == level:
            counts[r.get("clause", "?")] = counts.get(r.get("clause", "?"), 0) + 1
    if not counts:
        return "-"
    return ", ".join(c if n == 1 else f"{c} ×{n}" for c, n in counts.items())


def load_judgements(path: Path = JUDGEMENTS) -> dict[str, dict[str, Any]]:
    """``{slug: {check: {"judged": "true finding" | "kit false alarm" | ..., "why": str}}}``
    from ``docs/verdicts/judgements.yaml`` (empty when the file is absent); a slug's
    ``_notes`` (a list of strings) become the page's Notes section."""
    if not path.is_file():
        return {}
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): v or {} for k, v in data.items()}


def judgement(judged: dict[str, dict[str, str]], row: dict[str, Any]) -> tuple[str, str]:
    """``(judged, why)`` for one failure row: its own entry, else its root cause's, else
    ``("not judged", "")``."""
    for key in (row["check"], row.get("root_cause")):
        if key and isinstance(judged.get(key), dict):
            entry = judged[key]
            return str(entry.get("judged", "not judged")), str(entry.get("why", "")).strip()
    return "not judged", ""


def _seconds(run: dict[str, Any] | None) -> str:
    if not run or run.get("wall_seconds") is None:
        return "see page"
    s = float(run["wall_seconds"])
    return f"{s:.0f} s" if s < 120 else f"{s:.0f} s ({s / 60:.1f} min)"


def render_page(verdict: dict[str, Any], engine: Engine, judged: dict[str, dict[str, str]]) -> str:
    """The markdown page of one engine version from its JSON verdict (with its ``"run"``
    block) and its judgements (``{check: {"judged", "why"}}``)."""
    run = verdict.get("run", {})
    name = f"{run.get('distribution', engine.distribution)} {run.get('version', '?')}"
    lines = [f"# Verdict: {name} — {engine.title}", ""]
    lines += [
        "Written by `tox -e pypi-engines` (`python -m conformance.devtools.pypi_engines`), "
        f"which installs the published package next to hermes-agent "
        f"{run.get('hermes_agent', '?')} and runs:",
        "",
        "```sh",
        " ".join(f"{k}={v}" for k, v in run.get("env", {}).items())
        + (" " if run.get("env") else "")
        + str(run.get("command", "")),
        "```",
        "",
        engine.construction,
        "",
        "| | |",
        "|---|---|",
        f"| date | {run.get('started_utc', '?')} |",
        f"| run time | {_seconds(run)} (wall, one engine at a time) |",
        f"| kit | {verdict.get('kit_version', '?')}, "
        f"contract {verdict.get('contract_version', '?')}"
        f", host ABC {verdict.get('host_abc', '?')}, host profile "
        f"`{verdict.get('host_profile', '?')}`, Hypothesis profile "
        f"`{verdict.get('profile', '?')}` |",
        f"| machine | `nproc` {run.get('nproc', '?')}, Python {run.get('python', '?')}, "
        "no network (the kit's sandbox), no API keys |",
        f"| kit exit code | {run.get('exit_code', '?')} |",
        f"| JSON | `docs/verdicts/{run.get('distribution', engine.distribution)}-"
        f"{run.get('version', '?')}.json` |",
        "",
    ]
    counts = verdict.get("counts")
    if not counts:
        lines += [f"**Verdict: {verdict.get('verdict')}** — the kit wrote no verdict.", ""]
        if run.get("output_tail"):
            lines += ["Last lines of its output:", "", "```", *run["output_tail"], "```", ""]
        return "\n".join(lines).rstrip() + "\n"
    levels = verdict.get("failures_by_level", {})
    lines += [
        f"**Verdict: {verdict.get('verdict')} — {counts.get('total', 0)} checks: "
        f"{counts.get('passed', 0)} passed, {counts.get('failed', 0) + counts.get('error', 0)} "
        f"failed, {counts.get('skipped', 0)} skipped; counted once per root cause: "
        f"{levels.get('MUST', 0)} MUST, {levels.get('SHOULD', 0)} SHOULD.**",
        "",
    ]
    roots = root_failures(verdict)
    if not roots:
        lines += ["No failure.", ""]
        return "\n".join(lines).rstrip() + "\n"
    lines += [
        "## Failures by clause",
        "",
        "One row per counted failure (the kit's root-cause grouping: checks failing on the "
        "same engine exception from the same frame are counted once, under the first).",
        "",
        "| clause | level | check | the kit's message | also failing from it | judged |",
        "|---|---|---|---|---|---|",
    ]
    order = sorted(roots, key=lambda r: (r.get("clause", ""), r["check"]))
    for r in order:
        verdict_word, _ = judgement(judged, r)
        lines.append(
            f"| {r.get('clause')} | {r.get('level')} | `{r['check']}` | {one_line(r['message'])}"
            f" | {len(r['shares'])} check(s) | {verdict_word} |"
        )
    lines += ["", "## Judged", ""]
    lines += [
        "Each failure was judged by reading the engine's installed code: a *true finding* "
        "(the engine behaves as the kit says) or a *kit false alarm* (the engine is right, "
        "the check is wrong).",
        "",
    ]
    for r in order:
        verdict_word, why = judgement(judged, r)
        lines.append(f"- `{r['check']}` ({r.get('clause')} {r.get('level')}): **{verdict_word}**.")
        if why:
            lines.append(f"  {' '.join(why.split())}")
    notes = judged.get("_notes")
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"- {' '.join(str(n).split())}" for n in notes]
    shared = [r for r in order if r["shares"]]
    if shared:
        lines += ["", "## Checks sharing a root cause", ""]
        for r in shared:
            lines.append(f"- `{r['check']}`: " + ", ".join(f"`{c}`" for c in r["shares"]))
    return "\n".join(lines).rstrip() + "\n"


def _judged_cell(verdict: dict[str, Any], judged: dict[str, dict[str, str]]) -> str:
    words = [judgement(judged, r)[0] for r in root_failures(verdict)]
    if not words:
        return "-"
    tally: OrderedDict[str, int] = OrderedDict()
    for w in words:
        tally[w] = tally.get(w, 0) + 1
    return ", ".join(f"{n} {w}" for w, n in tally.items())


def index_row(
    verdict: dict[str, Any], engine: Engine, slug: str, judged: dict[str, dict[str, str]]
) -> str:
    """One row of the index table for the verdict of ``engine`` written as ``<slug>.json``."""
    run = verdict.get("run")
    version = (run or {}).get("version") or slug.rsplit("-", 1)[-1]
    roots = root_failures(verdict)
    return (
        f"| {engine.distribution} | {version} | {verdict.get('verdict', '?')} | "
        f"{by_clause(roots, 'MUST')} | {by_clause(roots, 'SHOULD')} | "
        f"{_judged_cell(verdict, judged)} | {_seconds(run)} | [{slug}.md]({slug}.md) |"
    )


def render_index(rows: list[str]) -> str:
    """``docs/verdicts/README.md`` from the rendered :func:`index_row` lines."""
    return (
        "\n".join(
            [
                "# Verdicts of published engines",
                "",
                "The kit run on each context engine published on the package index, installed "
                "next to hermes-agent 0.19.0 (`tox -e pypi-engines`, which writes this table "
                "and the pages it links; the Hermes row's page is written by `tox -e hermes`). "
                "MUST and SHOULD columns list the clauses of the failures the kit counts (once "
                "per root cause); the pages give the kit's message for each and its judgement "
                "(true finding or kit false alarm) from reading the engine's code. Run times are "
                "wall seconds, one engine at a time.",
                "",
                "| engine | version | verdict | MUST failures | SHOULD failures | judged "
                "| run time | page |",
                "|---|---|---|---|---|---|---|---|",
                *rows,
                "",
                "Judgements live in `docs/verdicts/judgements.yaml`; a new failure shows as "
                "*not judged* until someone reads the engine's code.",
            ]
        )
        + "\n"
    )


def write_all(out_dir: Path, judgements: dict[str, dict[str, dict[str, str]]]) -> list[Path]:
    """Render every page whose JSON is in ``out_dir`` (the owned-elsewhere rows only in the
    index) and the index; return the files written."""
    written = []
    rows = []
    for engine in ENGINES:
        if engine.slug:
            paths = [out_dir / f"{engine.slug}.json"]
        else:
            paths = sorted(out_dir.glob(f"{engine.distribution}-[0-9]*.json"))
        for path in paths:
            if not path.is_file():
                continue
            slug = path.stem
            verdict = json.loads(path.read_text(encoding="utf-8"))
            judged = judgements.get(slug, {})
            if not engine.owned_by:
                page = out_dir / f"{slug}.md"
                page.write_text(render_page(verdict, engine, judged), encoding="utf-8")
                written.append(page)
            rows.append(index_row(verdict, engine, slug, judged))
    index = out_dir / "README.md"
    index.write_text(render_index(rows), encoding="utf-8")
    written.append(index)
    return written


def main(argv: list[str] | None = None) -> int:
    """Run the kit on every installed engine of :data:`ENGINES` (or ``--only`` some), then
    write the pages and the index. ``--render-only`` re-renders from the JSON files already in
    ``docs/verdicts/`` (after editing judgements). Arguments after ``--`` go to the kit."""
    import argparse

    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(
        prog="python -m conformance.devtools.pypi_engines",
        description="Run the kit on the published engines and write docs/verdicts/.",
    )
    parser.add_argument("--only", action="append", default=[], help="a distribution name")
    parser.add_argument("--render-only", action="store_true", help="do not run the kit")
    parser.add_argument("--out", type=Path, default=VERDICTS, help="default docs/verdicts")
    args = parser.parse_args(argv)
    if not args.render_only:
        for engine in ENGINES:
            if engine.owned_by or (args.only and engine.distribution not in args.only):
                continue
            print(f"pypi-engines: {engine.distribution} ...", flush=True)
            path = run_engine(engine, args.out, extra)
            if path is None:
                print(f"pypi-engines: {engine.distribution} is not installed; skipped")
                continue
            verdict = json.loads(path.read_text(encoding="utf-8"))
            print(
                f"pypi-engines: {engine.distribution}: {verdict.get('verdict')} in "
                f"{verdict['run']['wall_seconds']} s -> {path}",
                flush=True,
            )
    for path in write_all(args.out, load_judgements(args.out / JUDGEMENTS.name)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
