"""The report's tables of the engine's own LLM calls (``call_llm``, answered by the kit's LLM).

Each case's :attr:`~conformance.run.results.Result.llm` ledger
(:mod:`conformance.authoring.engine_llm`) is
what the engine's own summary calls cost during that case; the host's own provider calls are
the scenario plots' and numbers' (``conformance.report.html``). :func:`llm_section` is the
report's "The engine's own LLM calls" section: one row per case that called the LLM and the
run's total; :func:`scenario_llm_table` is the same table for one scenario's rows, shown next
to its provider calls. Both return "" when no case called the LLM, so a report of an engine
that never calls ``call_llm`` is unchanged.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from conformance.authoring.engine_llm import summarise_ledgers

#: (ledger key, column heading) of each numeric column; ``cost_usd`` is shown in USD.
COLUMNS = (
    ("calls", "calls"),
    ("requests", "requests"),
    ("failed_requests", "failed"),
    ("prompt_tokens", "prompt tokens"),
    ("completion_tokens", "completion tokens"),
    ("cached_tokens", "cached tokens"),
    ("cost_usd", "cost (USD)"),
)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cells(ledger: dict[str, Any]) -> str:
    out = []
    for key, _ in COLUMNS:
        value = ledger.get(key, 0) or 0
        out.append(
            f"<td>{float(value):.6f}</td>" if key == "cost_usd" else f"<td>{int(value)}</td>"
        )
    return "".join(out)


def llm_table(results: Iterable[Any], *, table_id: str = "engine-llm") -> str:
    """The table of ``results`` (:class:`~conformance.run.results.Result`) whose ``llm`` ledger is
    not empty: one row per case (check id, then :data:`COLUMNS`), then a ``total`` row
    (:func:`~conformance.authoring.engine_llm.summarise_ledgers`); "" when none called the LLM."""
    rows = sorted((r for r in results if r.llm), key=lambda r: r.check)
    if not rows:
        return ""
    head = "".join(f"<th>{_e(title)}</th>" for _, title in COLUMNS)
    body = "".join(f'<tr><td class="l">{_e(r.check)}</td>{_cells(r.llm)}</tr>' for r in rows)
    total = summarise_ledgers([r.llm for r in rows])
    return (
        f'<table id="{_e(table_id)}" class="engine-llm"><tr><th class="l">case</th>{head}</tr>'
        f'{body}<tr class="total"><th class="l">total</th>{_cells(total)}</tr></table>'
    )


def llm_section(results: Iterable[Any]) -> str:
    """The report section "The engine's own LLM calls" (heading, one line, :func:`llm_table`)
    over every result; "" when no case called the LLM."""
    table = llm_table(results)
    if not table:
        return ""
    return (
        "<h2 id='engine-llm-calls'>The engine's own LLM calls</h2>"
        "<p class='desc'>What the engine's own summary calls (agent.auxiliary_client.call_llm, "
        "answered by the kit's simulated LLM) cost per case: tokens and simulated cost at the "
        "summary model's prices. The host's own provider calls are the scenarios' plots and "
        "tables.</p>" + table
    )


def scenario_llm_table(name: str, results: Iterable[Any]) -> str:
    """The engine-LLM table of one scenario's expectation ``results`` (its cost sits on the
    first expectation that ran), captioned; "" when the scenario's engine made no LLM call."""
    table = llm_table(results, table_id=f"engine-llm-{name}")
    if not table:
        return ""
    return f"<p class='desc'>The engine's own LLM calls in this scenario:</p>{table}"


__all__ = ["COLUMNS", "llm_section", "llm_table", "scenario_llm_table"]
