"""The pages of ``docs/verdicts/``: one markdown page per engine version from its JSON verdict,
and the index table.

:func:`render_page` turns one JSON verdict (with its ``"run"`` block) into
``<distribution>-<version>.md``: verdict, counts, failures by clause with the kit's one-line
message, and the judgement of each failure from ``docs/verdicts/judgements.yaml``
(:func:`load_judgements`); :func:`index_row` and :func:`render_index` write
``docs/verdicts/README.md``, one row per engine and version.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

from conformance.devtools.pypi_engine_list import Engine

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = ROOT / "docs" / "verdicts"
JUDGEMENTS = VERDICTS / "judgements.yaml"
BAD = ("failed", "error")

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


__all__ = [
    "BAD",
    "JUDGEMENTS",
    "ROOT",
    "VERDICTS",
    "by_clause",
    "failures",
    "index_row",
    "judgement",
    "load_judgements",
    "one_line",
    "render_index",
    "render_page",
    "root_failures",
]
