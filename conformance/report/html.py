"""The self-contained HTML report: failures first, verdict by clause, one plot per scenario,
every result, and the text of every clause it names.

:func:`render` returns one HTML document (str) with inline CSS and inline SVG: no script,
no external resource, so it opens anywhere and archives as one file. Its order: the verdict,
the failures summary (every failed or errored case with its message, MUST first: what a
reader needs without scrolling; in a run of several hosts the verdict per host comes before it),
the verdict by clause, the scenarios with their plots, all
results, and the clauses: each clause named in the report with its title, its text (from the
contract, :func:`conformance.run.explain.clause_text`) and what usually causes a failure and how to
fix it, so that every clause link works without a docs/ folder. Without matplotlib each
scenario shows a note and its numbers as a table instead of the plot.
"""

from __future__ import annotations

import html
import re
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from conformance.clauses import catalogue
from conformance.clauses.catalogue import sort_key
from conformance.report.llm_tables import llm_section, scenario_llm_table
from conformance.run.results import OUTCOMES

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;\
max-width:1100px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}h3{font-size:14px;margin:18px 0 4px}
table{border-collapse:collapse;font-size:12px;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}
td.l,th.l{text-align:left}td.msg{text-align:left;max-width:760px;font-family:monospace;font-size:11px}
.passed{color:#2e7d32}.failed,.error{color:#c62828;font-weight:bold}.skipped{color:#777}
.xfailed,.xpassed{color:#8d6e00}
.verdict{font-size:15px;font-weight:bold;padding:6px 10px;display:inline-block;border-radius:4px}
.v-pass{background:#e8f5e9}.v-fail{background:#ffebee}
figure.plot{margin:6px 0 18px;border:1px solid #ddd;padding:6px}\
figure.plot svg{width:100%;height:auto}figcaption{font-size:12px;color:#555}
.note{background:#fff8e1;border:1px solid #f0d58c;padding:6px 10px;font-size:12px}
.desc{font-size:12px;color:#555;margin:0 0 6px}
#failures{border-left:6px solid #b71c1c;background:#fff5f5;padding:2px 14px 8px;margin:14px 0}
#failures.none{border-left-color:#2e7d32;background:#f1f8f1}
#failures h2{margin-top:10px}
section.clause{border-top:1px solid #ddd;padding:2px 0 6px}
section.clause p{font-size:13px;margin:4px 0}
section.clause .advice{font-size:12px;color:#333}
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def clause_href(clause: str) -> str:
    """The in-page link of a clause: ``#clause-v2`` (its section in the report's clause list)."""
    return f"#clause-{clause.lower()}"


_DOC_LINK = re.compile(r"docs/(?:contract|coverage)\.md#([a-z]+\d+)")


def _message(text: str) -> str:
    """A result message as HTML: escaped, its ``docs/contract.md#v2`` pointers linked to the
    clause's section in this report."""
    return _DOC_LINK.sub(
        lambda m: (
            f'<a href="{clause_href(m.group(1))}">{m.group(0)}</a>'
            if m.group(1).upper() in catalogue.CLAUSES
            else m.group(0)
        ),
        _e(text),
    )


def failures_section(results: list[Any]) -> str:
    """The failures summary: every failed or errored case (MUST first, then in contract order)
    with its clause, level and message; a short all-clear when there is none."""
    bad = [r for r in results if r.outcome in ("failed", "error")]
    if not bad:
        ran = sum(r.outcome != "skipped" for r in results)
        return (
            '<section id="failures" class="none"><h2>Failures (0)</h2>'
            f"<p class='desc'>No case failed or errored ({ran} ran).</p></section>"
        )
    bad.sort(key=lambda r: (r.level != "MUST", sort_key(r.clause), r.check))
    must = sum(r.level == "MUST" for r in bad)
    rows = "".join(
        f'<tr><td class="l {r.outcome}">{_e(r.outcome)}</td><td class="l">{_e(r.level)}</td>'
        f'<td class="l"><a href="{clause_href(r.clause)}">{_e(r.clause)}</a></td>'
        f'<td class="l">{_e(r.check)}</td><td class="msg">{_message(r.message)}</td></tr>'
        for r in bad
    )
    return (
        f'<section id="failures"><h2>Failures ({len(bad)}: {must} MUST, {len(bad) - must} '
        "SHOULD)</h2><p class='desc'>Each message ends with the command that reruns the case; "
        "<code>context-engine-kit explain CLAUSE</code> explains a clause (its text is also at "
        "the end of this report).</p>"
        '<table id="failure-list"><tr><th class="l">outcome</th><th class="l">level</th>'
        '<th class="l">clause</th><th class="l">case</th><th class="l">message</th></tr>'
        f"{rows}</table></section>"
    )


def clauses_section(clause_ids: Iterable[str]) -> str:
    """The text of each clause in ``clause_ids`` (contract order): title, text, side, and what
    usually causes a failure and how to fix it; each section is a link target
    (:func:`clause_href`)."""
    from conformance.run.clause_advice import advice
    from conformance.run.explain import clause_text

    parts = []
    for cid in sorted(set(clause_ids), key=sort_key):
        clause = catalogue.CLAUSES.get(cid)
        if clause is None:
            continue
        tip = advice(cid, clause.side)
        parts.append(
            f'<section class="clause" id="clause-{_e(cid.lower())}">'
            f"<h3>{_e(cid)}: {_e(clause.title)}</h3><p>{_e(clause_text(cid) or clause.title)}</p>"
            f"<p class='desc'>kept by the {_e(clause.side)}; in the contract: "
            f"{_e(clause.anchor)}</p>"
            f"<p class='advice'><b>Usual cause:</b> {_e(tip.cause)}</p>"
            f"<p class='advice'><b>Fix:</b> {_e(tip.fix)}</p></section>"
        )
    return f'<h2 id="clauses">Clauses ({len(parts)})</h2>' + "".join(parts)


def verdict_table(results: list[Any]) -> str:
    """The verdict table by clause (rows in contract order) as HTML."""
    table: OrderedDict[str, dict] = OrderedDict()
    for r in sorted(results, key=lambda r: sort_key(r.clause)):
        row = table.setdefault(r.clause, {o: 0 for o in OUTCOMES})
        row[r.outcome] = row.get(r.outcome, 0) + 1
    head = "".join(f"<th>{o}</th>" for o in OUTCOMES)
    rows = []
    for clause, row in table.items():
        cells = "".join(f'<td class="{o if row[o] else ""}">{row[o]}</td>' for o in OUTCOMES)
        rows.append(
            f'<tr><td class="l"><a href="{clause_href(clause)}">{_e(clause)}</a></td>{cells}</tr>'
        )
    return (
        f'<table id="verdict-by-clause"><tr><th class="l">clause</th>{head}</tr>'
        f"{''.join(rows)}</table>"
    )


def results_table(results: list[Any]) -> str:
    """Every result: check id, clause, level, outcome and message."""
    rows = []
    for r in sorted(results, key=lambda r: (sort_key(r.clause), r.check)):
        rows.append(
            f'<tr><td class="l">{_e(r.check)}</td><td class="l title">{_e(r.title)}</td>'
            f'<td class="l"><a href="{clause_href(r.clause)}">{_e(r.clause)}</a></td>'
            f'<td class="l">{_e(r.level)}</td><td class="l {r.outcome}">{_e(r.outcome)}</td>'
            f'<td class="msg">{_message(r.message)}</td></tr>'
        )
    return (
        '<table id="results"><tr><th class="l">check</th><th class="l">what it checks</th>'
        '<th class="l">clause</th>'
        '<th class="l">level</th><th class="l">outcome</th>'
        f'<th class="l">message</th></tr>{"".join(rows)}</table>'
    )


def _numbers_table(run: Any) -> str:
    rows = "".join(
        f"<tr><td>{c.index + 1}</td><td class='l'>{_e(c.agent)}</td><td>{c.prompt_tokens}</td>"
        f"<td>{c.cache_read_tokens}</td><td>{c.cache_write_tokens}</td><td>{c.threshold_tokens}</td>"
        f"<td>{c.context_length}</td></tr>"
        for c in run.recorder.provider_calls
    )
    return (
        "<table class='numbers'><tr><th>call</th><th class='l'>agent</th><th>prompt</th>"
        "<th>cache read</th>"
        f"<th>cache write</th><th>threshold</th><th>context</th></tr>{rows}</table>"
    )


def scenario_section(run: Any, results: list[Any], svg: str | None, note: str) -> str:
    """One scenario: heading, description, its expectation results, the plot (or a note)."""
    sc = run.scenario
    mine = [r for r in results if r.check.startswith(f"scenario:{sc.name}:")]
    bad = sum(r.outcome in ("failed", "error") for r in mine)
    comp = [e for e in run.recorder.compactions if e.committed]
    summary = (
        f"{len(run.recorder.provider_calls)} provider calls, {len(comp)} committed compactions, "
        f"{len(mine) - bad}/{len(mine)} expectations hold"
    )
    stopped = (
        f'<p class="note">run stopped at {_e(run.stopped[0])}: {_e(run.stopped[1])}</p>'
        if run.stopped
        else ""
    )
    plot = (
        f'<figure class="plot" data-scenario="{_e(sc.name)}">{svg}'
        f"<figcaption>{_e(summary)}</figcaption></figure>"
        if svg
        else f'<p class="note">{_e(note)}</p>{_numbers_table(run)}'
    )
    return (
        f'<section class="scenario" id="scenario-{_e(sc.name)}"><h3>{_e(sc.name)}</h3>'
        f'<p class="desc">{_e(sc.description)}</p><p class="desc">{_e(summary)}</p>{stopped}{plot}'
        f"{scenario_llm_table(sc.name, mine)}{results_table(mine) if mine else ''}</section>"
    )


def hosts_section(results: list[Any], *, strict: bool = False) -> str:
    """In a run of several hosts (:mod:`conformance.authoring.hosts`): the verdict per host, a row
    each
    (verdict, cases, MUST and SHOULD failures, the failing clauses), and the one-line summary
    ("V2 MUST on hermes-0.19; clean on documented and hermes-0.22"); "" for one host."""
    from conformance.run.verdict import Verdict

    verdict = Verdict(list(results))
    table = verdict.by_host(strict=strict)
    if not table:
        return ""
    rows = []
    for host, row in table.items():
        lv = row["failures_by_level"]
        failing = ", ".join(
            f'<a href="{clause_href(f["clause"])}">{_e(f["clause"])}</a> {_e(f["level"])}'
            for f in row["failing"]
        )
        cls = "passed" if row["verdict"] == "PASS" else "failed"
        rows.append(
            f'<tr><td class="l">{_e(host)}</td><td class="l {cls}">{_e(row["verdict"])}</td>'
            f"<td>{row['counts']['total']}</td><td>{lv['MUST']}</td><td>{lv['SHOULD']}</td>"
            f'<td class="l">{failing or "clean"}</td></tr>'
        )
    return (
        f'<section id="by-host"><h2>By host ({len(table)})</h2>'
        f"<p class='desc'>{_e(verdict.host_line(strict=strict))}</p>"
        '<table id="verdict-by-host"><tr><th class="l">host profile</th><th class="l">verdict</th>'
        '<th>cases</th><th>MUST</th><th>SHOULD</th><th class="l">failing clauses</th></tr>'
        f"{''.join(rows)}</table></section>"
    )


def render(
    results: Iterable[Any],
    runs: Iterable[Any],
    *,
    engine: str = "",
    svgs: dict | None = None,
    note: str = "",
    strict: bool = False,
) -> str:
    """The HTML document (str): verdict, failures summary, verdict by clause, scenarios, all
    results, clause texts (the module doc gives the order and why).

    Args:
        results: :class:`~conformance.run.results.Result` objects (checks and scenario
        expectations).
        runs: ScenarioRun objects, one section each (in the given order).
        engine: the engine label shown in the title.
        svgs: scenario name -> SVG text (None values: no plot).
        note: shown instead of missing plots (e.g. matplotlib not installed).
    """
    from conformance import CONTRACT_VERSION, __version__
    from conformance.run.results import exit_code, verdict_word

    results = list(results)
    runs = list(runs)
    code = exit_code(results, strict=strict)
    word = verdict_word(code)
    cls = "v-pass" if code == 0 else "v-fail"
    counts = {o: sum(r.outcome == o for r in results) for o in OUTCOMES}
    count_text = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
    sections = "".join(
        scenario_section(run, results, (svgs or {}).get(run.scenario.name), note) for run in runs
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>context-engine-kit report: {_e(engine)}</title><style>{CSS}</style></head><body>"
        f"<h1>Conformance report: {_e(engine)}</h1>"
        f"<p class='desc'>context-engine-kit {_e(__version__)}, contract {_e(CONTRACT_VERSION)}; "
        f"{len(results)} results ({_e(count_text)}).</p>"
        f"<div class='verdict {cls}' id='verdict'>verdict: {word}</div>"
        + hosts_section(results, strict=strict)
        + failures_section(results)
        + f"<h2>Verdict by clause</h2>{verdict_table(results)}"
        f"<h2>Scenarios ({len(runs)})</h2>"
        + (f"<p class='note'>{_e(note)}</p>" if note and runs else "")
        + (sections or "<p class='desc'>No scenario ran.</p>")
        + llm_section(results)
        + "<h2>All results</h2>"
        + results_table([r for r in results if not r.check.startswith("scenario:")])
        + clauses_section(r.clause for r in results)
        + "</body></html>\n"
    )
