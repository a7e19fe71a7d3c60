"""The reference host's session: drives an engine through the L1 lifecycle (first cut).

L1: instantiate -> ``on_session_start`` -> per provider call ``update_from_response`` ->
per turn ``should_compress`` -> ``compress`` when True -> ``on_session_end`` at a real
boundary; ``on_session_reset`` on /new or /reset. Every engine call goes through a
:class:`~simulator.host.record.Recorder`.
"""

from __future__ import annotations

import copy
import itertools
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from simulator.host import calls, hooks, pipeline
from simulator.host.record import Recorder
from simulator.host.usage import canonical_usage
from simulator.provider import tokens
from simulator.provider.core import Provider
from simulator.store.memory import MemoryStore

log = logging.getLogger("simulator.host")

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant working in a software repository."


@dataclass
class TurnResult:
    """What one user turn did: the reply, the provider calls made, compactions run."""

    reply: Optional[Dict[str, Any]]
    provider_calls: int
    compactions: int
    usage: Optional[Dict[str, int]]


@dataclass
class HostSession:
    """One agent session around ``engine``.

    Args:
        engine: the context engine (already per-agent).
        provider: the provider simulator (a fresh echo provider by default).
        store: the session store (in-memory by default).
        model: model name passed to ``update_model``.
        context_length: the model's window, in tokens.
        system_prompt: the system prompt, kept as message 0 of the transcript.
    """

    engine: Any
    provider: Provider = field(default_factory=Provider)
    store: Any = field(default_factory=MemoryStore)
    model: str = "sim-model"
    context_length: int = 32_000
    system_prompt: Optional[str] = DEFAULT_SYSTEM_PROMPT
    recorder: Recorder = field(default_factory=Recorder)
    cache_control: bool = False
    session_id: str = ""
    messages: List[Dict[str, Any]] = field(default_factory=list)
    compactions: int = 0
    _turns: Any = field(default_factory=lambda: itertools.count(1))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call an engine method through the recorder."""
        return self.recorder.call(self.engine, method, *args, **kwargs)

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """update_model (K1) then on_session_start (O1, L1)."""
        self.session_id = self.store.create_session()
        if hasattr(self.engine, "update_model"):
            self.call("update_model", model=self.model, context_length=self.context_length,
                      base_url="", api_key="", provider="", api_mode="chat_completions")
        if self.system_prompt:
            self.messages = [{"role": "system", "content": self.system_prompt}]
            self.store.append(self.session_id, self.messages)
        if hasattr(self.engine, "on_session_start"):
            self.call("on_session_start", self.session_id, platform="cli", model=self.model,
                      context_length=self.context_length)

    def end(self) -> None:
        """A real session boundary: on_session_end(session_id, messages) (O2)."""
        if hasattr(self.engine, "on_session_end"):
            self.call("on_session_end", self.session_id, copy.deepcopy(self.messages))

    def reset(self) -> None:
        """/new or /reset: on_session_reset (O3)."""
        if hasattr(self.engine, "on_session_reset"):
            self.call("on_session_reset")

    # -- turns -----------------------------------------------------------------------
    def user_turn(self, text: str) -> TurnResult:
        """Run one user turn: compaction check, provider call, usage, on_turn_complete."""
        incoming = {"role": "user", "content": text}
        compactions = 0
        estimate = tokens.count_messages(self.messages + [incoming])
        if len(self.messages) > 1 and self._should_compress(estimate):
            compactions += self.compress(current_tokens=estimate)
        self.messages.append(incoming)
        self.store.append(self.session_id, [incoming])
        request = pipeline.build_request(
            self.engine,
            system_prompt=None,
            history=self.messages,
            incoming=incoming,
            budget_tokens=int(getattr(self.engine, "context_length", 0) or 0),
            cache_control=self.cache_control,
            recorder=self.recorder,
        )
        response = self.provider.chat_completions({"model": self.model, "messages": request})
        usage = canonical_usage(response.get("usage"))
        self.call("update_from_response", usage)
        reply = dict(response["choices"][0]["message"])
        self.messages.append(reply)
        self.store.append(self.session_id, [reply])
        real = int(getattr(self.engine, "last_prompt_tokens", 0) or 0)
        if real > 0 and self._should_compress(real):
            compactions += self.compress(current_tokens=real)
        hooks.fire_on_turn_complete(
            self.engine, self.messages, usage, recorder=self.recorder,
            turn_id=f"turn-{next(self._turns)}", task_id=self.session_id, api_call_count=1,
            interrupted=False, failed=False, turn_exit_reason="text_response",
        )
        return TurnResult(reply, 1, compactions, usage)

    def _should_compress(self, prompt_tokens: int) -> bool:
        return bool(self.call("should_compress", prompt_tokens))

    def compress(self, *, current_tokens: Optional[int] = None, focus_topic: Optional[str] = None,
                 force: bool = False) -> int:
        """Run one compaction pass on a deep snapshot and commit it; return 1 if committed.

        After a commit the host sets ``last_prompt_tokens = -1`` (A7) until real usage.
        """
        snapshot = copy.deepcopy(self.messages)
        kwargs = calls.compress_kwargs(self.engine, current_tokens=current_tokens,
                                       focus_topic=focus_topic, force=force)
        result = self.call("compress", snapshot, **kwargs)
        if not isinstance(result, list) or result is snapshot:
            return 0
        self.messages = result
        self.store.replace(self.session_id, self.messages)
        self.engine.last_prompt_tokens = -1
        self.compactions += 1
        return 1
