"""The LLM the host serves to engines: a summariser-mode provider behind scripted faults.

:class:`EngineLLM` owns one :class:`simulator.provider.core.Provider` (dedicate it: the LLM
swaps the provider's fault schedule, model table or reply mode for the one request a fault
fires on) and answers OpenAI chat-completions requests for the engine's own LLM calls,
in process (the ``agent.auxiliary_client`` shim) or over HTTP on loopback
(:mod:`simulator.llm.http`, what hermes-agent's real client calls). Each request is
journaled by the provider, recorded in the active ledgers (:mod:`simulator.llm.ledger`)
and may fire one :class:`~simulator.llm.faults.LLMFault`.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from simulator.llm import ledger
from simulator.llm.faults import PROVIDER_KINDS, LLMFault, LLMFaultSchedule
from simulator.llm.replies import EngineSummaryReplies
from simulator.provider import tokens
from simulator.provider.core import Provider
from simulator.provider.exchange import CHAT, Outcome
from simulator.provider.faults import FaultSchedule
from simulator.provider.replies import Reply, ReplyPolicy

#: Default summary model: hermes-agent 0.19.0's default auxiliary model on OpenRouter / Nous
#: (the kit's model table prices it as a generic model: 128k window, $1 / $4 per Mtok).
DEFAULT_LLM_MODEL = "google/gemini-3-flash-preview"
#: API key the kit's Hermes configuration sends; also the cache namespace of every request.
DEFAULT_API_KEY = "sk-kit-engine-llm"
#: Zero-argument context-manager factories every :meth:`EngineLLM.exchange` runs under. A
#: conformance run adds one that takes the simulated LLM's own time out of the engine call
#: it answers (an engine's summary call is answered inside its compress(), and the time the
#: simulator spends there is not the engine's).
ANSWER_HOOKS: list[Any] = []


@dataclass
class Exchange:
    """One request and its answer.

    Attributes:
        outcome: the provider's :class:`~simulator.provider.core.Outcome`, or None when a
            ``timeout`` fault withheld the answer.
        fault: the fault that fired, or None.
        record: the ledger's :class:`~simulator.llm.ledger.RequestRecord`.
    """

    outcome: Outcome | None
    fault: LLMFault | None
    record: ledger.RequestRecord


class _FaultReplies(ReplyPolicy):
    """Reply mode for one ``empty`` / ``cut`` request: the inner reply, emptied or cut."""

    def __init__(self, inner: ReplyPolicy, fault: LLMFault) -> None:
        self.inner, self.fault = inner, fault

    def reply(self, request, index, seed):
        """The inner policy's reply with ``content`` "" (empty) or cut to ``cut_tokens`` tokens."""
        base = self.inner.reply(request, index, seed)
        if self.fault.kind == "empty":
            return Reply(content="", finish_reason="stop")
        enc = tokens.encoding()
        cut = enc.decode(enc.encode_ordinary(base.content or "")[: self.fault.cut_tokens])
        return Reply(content=cut, finish_reason="length")


def _last_text(request: Mapping[str, Any]) -> str:
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], Mapping):
        return ""
    content = messages[-1].get("content")
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return content if isinstance(content, str) else ""


class EngineLLM:
    """The engine's LLM: summariser-mode provider (B4 template), scripted faults, ledger records.

    Args:
        provider: the provider to serve (default: a new one in summariser mode,
            :class:`~simulator.llm.replies.EngineSummaryReplies`, journal capped at 1000).
        seed: seed of the default provider.
        model: model id requested when the engine names none (tokens and prices come from
            the provider's model table).
        faults: :class:`LLMFault` list or :class:`LLMFaultSchedule`.
        transient_retries: same-provider retries ``call_llm`` makes on a 5xx / 408 /
            connection error (hermes-agent 0.19.0 ``auxiliary.transient_retries``, default 2).
        api_key: the key Hermes is configured with; the provider's cache namespace is
            ``key:<api_key>`` on both paths, so usage matches in process and over HTTP.
        max_chars: largest summary of the default reply mode (characters).

    Attributes:
        provider: the :class:`Provider` (journal, clock, models, caches).
        faults: the :class:`LLMFaultSchedule`.
        requests: requests answered so far.
    """

    def __init__(
        self,
        provider: Provider | None = None,
        *,
        seed: int = 0,
        model: str = DEFAULT_LLM_MODEL,
        faults: Sequence[LLMFault] | LLMFaultSchedule = (),
        transient_retries: int = 2,
        api_key: str = DEFAULT_API_KEY,
        max_chars: int = 4000,
    ) -> None:
        if provider is None:
            provider = Provider(
                seed=seed,
                replies=EngineSummaryReplies(max_chars),
                model=model,
                journal_limit=1000,
            )
        self.provider = provider
        self.model = model
        self.faults = faults if isinstance(faults, LLMFaultSchedule) else LLMFaultSchedule(faults)
        self.transient_retries = max(0, min(int(transient_retries), 6))
        self.api_key = api_key
        self.requests = 0
        self._lock = threading.Lock()

    @property
    def namespace(self) -> str:
        """The provider cache namespace of every request (``key:<api_key>``, as over HTTP)."""
        return f"key:{self.api_key}"

    def add_fault(self, fault: LLMFault) -> LLMFault:
        """Schedule ``fault``; returns it (its ``fired`` counter shows how often it fired)."""
        self.faults.add(fault)
        return fault

    def exchange(self, request: Mapping[str, Any]) -> Exchange:
        """Answer one OpenAI chat-completions ``request`` (dict), faults applied; never raises.

        Serialised per LLM (the provider is single-locked anyway). A ``timeout`` fault
        returns ``outcome=None`` at once: waiting (real or virtual) is the caller's part.
        Runs under every context manager of :data:`ANSWER_HOOKS` (outermost first).
        """
        with contextlib.ExitStack() as stack:
            for hook in list(ANSWER_HOOKS):
                stack.enter_context(hook())
            return self._exchange(request)

    def _exchange(self, request: Mapping[str, Any]) -> Exchange:
        with self._lock:
            index = self.requests
            self.requests += 1
            fault = self.faults.match(index, _last_text(request))
            model = str(request.get("model") or self.model)
            if fault is not None and fault.kind == "timeout":
                outcome = None
                record = ledger.RequestRecord(index, model, 0, fault.kind)
            else:
                with self._swapped(fault, model):
                    outcome = self.provider.handle(CHAT, request, namespace=self.namespace)
                record = ledger.record_from_body(
                    index, model, outcome.status, fault.kind if fault else None, outcome.body
                )
        ledger.note_request(self, record)
        return Exchange(outcome, fault, record)

    @contextmanager
    def _swapped(self, fault: LLMFault | None, model: str) -> Iterator[None]:
        """The provider set up for one faulted request, restored afterwards."""
        p = self.provider
        saved = (p.faults, p.models, p.replies)
        try:
            if fault is not None and fault.kind in PROVIDER_KINDS:
                p.faults = FaultSchedule([fault.provider_fault()])
            elif fault is not None and fault.kind == "context_too_small":
                table = copy.deepcopy(p.models)
                table.override(name=model, context_length=fault.window)
                p.models = table
                p.faults = FaultSchedule()
            elif fault is not None:  # empty / cut
                p.replies = _FaultReplies(p.replies, fault)
            yield
        finally:
            p.faults, p.models, p.replies = saved
