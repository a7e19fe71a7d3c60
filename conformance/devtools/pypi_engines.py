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

The work is split by what it does: :mod:`~conformance.devtools.pypi_engine_list` (the engines and
how each is built), :mod:`~conformance.devtools.pypi_engine_runs` (one kit run, its JSON) and
:mod:`~conformance.devtools.pypi_engine_pages` (the pages and the index). This module writes them
all (:func:`write_all`, :func:`main`) and re-exports their public names.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conformance.devtools.pypi_engine_list import COMPRESSOR_KWARGS, ENGINES, KIT_ARGS, Engine
from conformance.devtools.pypi_engine_pages import (
    BAD,
    JUDGEMENTS,
    ROOT,
    VERDICTS,
    by_clause,
    failures,
    index_row,
    judgement,
    load_judgements,
    one_line,
    render_index,
    render_page,
    root_failures,
)
from conformance.devtools.pypi_engine_runs import (
    installed_version,
    kit_command,
    nproc,
    partial_written,
    run_engine,
    slug_of,
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


__all__ = [
    "BAD",
    "COMPRESSOR_KWARGS",
    "ENGINES",
    "JUDGEMENTS",
    "KIT_ARGS",
    "ROOT",
    "VERDICTS",
    "Engine",
    "by_clause",
    "failures",
    "index_row",
    "installed_version",
    "judgement",
    "kit_command",
    "load_judgements",
    "main",
    "nproc",
    "one_line",
    "partial_written",
    "render_index",
    "render_page",
    "root_failures",
    "run_engine",
    "slug_of",
    "write_all",
]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
