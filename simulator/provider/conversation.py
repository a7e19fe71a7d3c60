"""Incremental conversation handle: per-request cost O(new messages) for in-process use.

``Provider.chat_completions(request)`` re-walks the whole message list each time
(counts and digests are memoised, but the walk and the prefix hashes are O(n)). A
:class:`Conversation` keeps its own append-only copy of the messages and one live
:class:`~simulator.provider.render.Renderer`, so each message is validated, counted
and hashed once, when appended. Breakpoints come from the messages' own
``cache_control`` markers plus an optional strategy applied at send time (P1's
``system_and_3``: the system prompt and the last 3 non-system messages), so markers
move without copying anything.

Requests are journaled like any other (``route == "chat.completions"``); the
journal's ``request`` is materialised on first access.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.provider.errors import ProviderError, U9LeakError, ValidationFailure, openai_error
from simulator.provider.exchange import CHAT, Outcome
from simulator.provider.exchange import salt as _salt
from simulator.provider.render import Renderer

STRATEGIES = (None, "system_and_3")


class Conversation:
    """An append-only OpenAI-format conversation bound to a provider.

    Args:
        provider: the :class:`~simulator.provider.core.Provider`.
        model: model id (provider default if None).
        tools: OpenAI ``tools`` list (fixed for the conversation).
        cache_strategy: None (only the messages' own markers) or ``"system_and_3"`` (P1).
        ttl: TTL of strategy breakpoints, ``"5m"`` or ``"1h"``.
        append_replies: :meth:`send` appends the assistant reply to the conversation.
        params: other request fields sent each time (``max_tokens``, ``tool_choice``...).

    Raises:
        ValueError: unknown strategy or TTL.
        ProviderError: from :meth:`append` (400, OpenAI shape) for a malformed message;
            the conversation is left unchanged.
    """

    def __init__(
        self,
        provider: Any,
        *,
        model: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        cache_strategy: str | None = None,
        ttl: str = "5m",
        append_replies: bool = True,
        **params: Any,
    ) -> None:
        if cache_strategy not in STRATEGIES:
            raise ValueError(
                f"cache_strategy {cache_strategy!r} is unknown; use one of {STRATEGIES}"
            )
        if ttl not in ("5m", "1h"):
            raise ValueError("ttl must be '5m' or '1h'")
        self.provider = provider
        self.model = model or provider.model
        self.spec = provider.models.resolve(self.model)
        self.tools = copy.deepcopy(tools) if tools else None
        self.cache_strategy = cache_strategy
        self.ttl = ttl
        self.append_replies = append_replies
        self.params = dict(params)
        self.messages: list[dict[str, Any]] = []
        self._last_block: list[int] = []
        self._salt_src = params.get("tool_choice"), params.get("reasoning_effort")
        self._renderer = self._new_renderer()

    def _new_renderer(self) -> Renderer:

        r = Renderer(
            self.provider.namespace, self.model, self.spec.anthropic_rules, _salt(*self._salt_src)
        )
        try:
            r.add_tools(self.tools, anthropic_shape=False)
        except ValidationFailure as vf:
            raise ProviderError(
                400, openai_error(vf.message, vf.openai_type, vf.param, vf.code)
            ) from None
        return r

    def append(self, message: Mapping[str, Any]) -> None:
        """Append one OpenAI-format message (deep-copied); validates and counts it once.

        Raises:
            ProviderError: 400 with the OpenAI error body when the message is malformed or
                breaks tool pairing; nothing is appended.
        """
        m = copy.deepcopy(dict(message))
        i = len(self.messages)
        try:
            self._renderer.add_openai_message(m, i)
        except ValidationFailure as vf:
            self._rebuild()
            raise ProviderError(
                400, openai_error(vf.message, vf.openai_type, vf.param, vf.code)
            ) from None
        self.messages.append(m)
        self._last_block.append(len(self._renderer.chain) - 1)

    def extend(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Append several messages in order; stops at the first malformed one (ProviderError)."""
        for m in messages:
            self.append(m)

    def _rebuild(self) -> None:
        r = self._new_renderer()
        for i, m in enumerate(self.messages):
            r.add_openai_message(m, i)
        self._renderer = r

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens a request with the current messages would count (tokens)."""
        return self._renderer.total

    def _strategy_breakpoints(self) -> list[tuple]:
        if self.cache_strategy != "system_and_3" or not self.messages:
            return []
        out = []
        if self.messages[0].get("role") == "system":
            out.append((self._last_block[0], self.ttl, "messages.0"))
        picked = 0
        for i in range(len(self.messages) - 1, -1, -1):
            if picked == 3:
                break
            if self.messages[i].get("role") == "system":
                continue
            if i == 0 and out:
                break
            out.append((self._last_block[i], self.ttl, f"messages.{i}"))
            picked += 1
        return out

    def request(self) -> dict[str, Any]:
        """The request a :meth:`send` would make now (messages shallow-copied, no markers added)."""
        req: dict[str, Any] = {"model": self.model, "messages": list(self.messages)}
        if self.tools:
            req["tools"] = self.tools
        req.update(self.params)
        return req

    def send(self, **overrides: Any) -> dict[str, Any]:
        """Send the conversation; returns the ``chat.completion`` dict.

        ``overrides`` are extra request fields for this call only (e.g. ``max_tokens``).
        With ``append_replies`` the assistant message is appended afterwards.

        Raises:
            ProviderError: the provider's answer was an error (validation, window, faults).
            U9LeakError: strict U9 mode and a message carries a persistence-only field.
        """

        p = self.provider
        params = dict(self.params, **overrides)
        params["messages"] = self.messages
        n = len(self.messages)
        snapshot = lambda: dict(self.request(), messages=self.messages[:n], **overrides)  # noqa: E731
        with p._lock:
            index = p._begin()
            stream = params.get("stream") is True
            try:
                if n == 0:
                    raise ValidationFailure(
                        "[] is too short - 'messages'", param="messages", code="empty_array"
                    )
                err = self._renderer.pending_tool_calls()
                if err is not None:
                    raise err
                bps = self._renderer.breakpoints(
                    auto=params.get("cache_control"), extra=self._strategy_breakpoints()
                )
                outcome: Outcome = p._respond(
                    index,
                    CHAT,
                    self.spec,
                    self.model,
                    self._renderer,
                    bps,
                    params,
                    lambda: dict(params, model=self.model),
                    snapshot,
                    stream,
                    True,
                )
            except ValidationFailure as vf:
                p._record_u9(index, self._renderer)
                outcome = p._reject(index, CHAT, snapshot, vf, stream)
                if getattr(vf, "u9", False):
                    raise U9LeakError(vf.message) from None
        body = p._raise_or_body(outcome)
        if self.append_replies:
            msg = body["choices"][0]["message"]
            reply = {
                "role": "assistant",
                "content": msg.get("content")
                if msg.get("content") is not None or msg.get("tool_calls")
                else "",
            }
            if msg.get("tool_calls"):
                reply["tool_calls"] = msg["tool_calls"]
            self.append(reply)
        return body
