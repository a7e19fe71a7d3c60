"""The LLM the kit's host serves to engines (their own summary calls through ``call_llm``).

Most engines summarise with an LLM: hermes-agent's ``ContextCompressor`` (and every engine
subclassing it) and LCM-style engines call ``agent.auxiliary_client.call_llm(task=
"compression", ...)``. The kit answers those calls with a deterministic summariser-mode
provider (contract clause B4's structured template), scripted faults and a cost ledger:

- in process, when hermes-agent is not installed: :mod:`simulator.host.shim` serves
  :mod:`simulator.llm.auxiliary` as ``agent.auxiliary_client`` (``call_llm`` with Hermes'
  signature, results and errors);
- over HTTP on loopback, when it is: :mod:`simulator.llm.http` serves the LLM and
  :mod:`simulator.llm.hermes_config` points ``$HERMES_HOME/config.yaml`` at it.

Modules, one responsibility each: ``engine_llm`` (:class:`EngineLLM`: provider, faults,
ledger records), ``current`` (which LLM answers now: :func:`use_llm`), ``client`` (Hermes'
call semantics: body, deadline, retries), ``auxiliary`` (the shim module), ``errors``
(openai-SDK-shaped exceptions), ``response`` (``ChatCompletion`` look-alikes), ``faults``
(:class:`LLMFault`), ``replies`` (the summariser reply mode), ``ledger``
(:func:`collect_ledger`), ``hermes_config``, ``http``.

Per check or scenario::

    from simulator.llm import EngineLLM, LLMFault, collect_ledger, use_llm

    llm = EngineLLM(faults=[LLMFault("rate_limit", times=1, retry_after=7)])
    with use_llm(llm), collect_ledger(llm) as ledger:
        ...  # run the engine; its call_llm(...) calls are answered by llm
    ledger.as_dict()  # {"calls": ..., "requests": ..., "prompt_tokens": ..., "cost_usd": ...}
"""

from simulator.llm.current import current_llm, default_llm, use_llm
from simulator.llm.engine_llm import DEFAULT_API_KEY, DEFAULT_LLM_MODEL, EngineLLM
from simulator.llm.faults import KINDS, LLMFault, LLMFaultSchedule
from simulator.llm.hermes_config import configure_hermes_home, launch_hermes_home
from simulator.llm.ledger import Ledger, collect_ledger

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_LLM_MODEL",
    "EngineLLM",
    "KINDS",
    "LLMFault",
    "LLMFaultSchedule",
    "Ledger",
    "collect_ledger",
    "configure_hermes_home",
    "launch_hermes_home",
    "current_llm",
    "default_llm",
    "use_llm",
]
