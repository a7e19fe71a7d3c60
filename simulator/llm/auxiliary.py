"""The kit's ``agent.auxiliary_client``: the engine's LLM when hermes-agent is not installed.

:mod:`simulator.host.shim` serves this module's public names as ``agent.auxiliary_client``
(only when no real ``agent`` package exists), so engines written for Hermes import them
unchanged. Names, as in hermes-agent 0.19.0:

- :func:`call_llm` (Hermes' signature) and :func:`async_call_llm`: answered by the current
  :class:`~simulator.llm.engine_llm.EngineLLM` (:func:`simulator.llm.current.use_llm`) with
  Hermes' semantics (:mod:`simulator.llm.client`).
- :func:`extract_content_or_reasoning`: the reply text, or reasoning fields when the
  content is empty.
- :func:`aux_interrupt_protection`: Hermes' per-thread "do not interrupt this call" flag
  (no interrupts exist in the kit; the flag is kept and restored).
- :func:`get_text_auxiliary_client` / :func:`get_async_text_auxiliary_client`:
  ``(client, model)`` with a raw ``client.chat.completions.create(...)`` on the current LLM
  (no Hermes retries: the SDK client Hermes builds has ``max_retries=0``), or
  ``(None, None)`` when no provider is configured.
- :func:`shutdown_cached_clients`, :func:`cleanup_stale_async_clients`: no-ops (nothing cached).

``provider``, ``base_url``, ``api_key``, ``main_runtime``, ``api_mode`` and
``reasoning_config`` are accepted and ignored: the current LLM is the only endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import types
from collections.abc import Iterator
from typing import Any

from simulator.llm import client, ledger
from simulator.llm.current import current_llm
from simulator.llm.engine_llm import EngineLLM

__all__ = [
    "call_llm",
    "async_call_llm",
    "extract_content_or_reasoning",
    "aux_interrupt_protection",
    "get_text_auxiliary_client",
    "get_async_text_auxiliary_client",
    "shutdown_cached_clients",
    "cleanup_stale_async_clients",
]

_THINK_TAGS = "think|thinking|reasoning|thought|REASONING_SCRATCHPAD"
_THINK_RE = re.compile(f"<(?:{_THINK_TAGS})>.*?</(?:{_THINK_TAGS})>", re.S | re.I)
_protection = threading.local()


def _no_provider(task: str | None) -> RuntimeError:
    return RuntimeError(
        f"No LLM provider configured for task={task} provider=auto. Run: hermes setup"
    )


def call_llm(
    task: str = None,
    *,
    provider: str = None,
    model: str = None,
    base_url: str = None,
    api_key: str = None,
    main_runtime: dict[str, Any] | None = None,
    messages: list,
    temperature: float | None = None,
    max_tokens: int = None,
    tools: list = None,
    timeout: float = None,
    extra_body: dict = None,
    reasoning_config: dict | None = None,
    api_mode: str = None,
    stream: bool = False,
    stream_options: dict = None,
) -> Any:
    """Hermes' synchronous auxiliary LLM call, answered by the current engine LLM.

    Args:
        task: auxiliary task name (``"compression"`` ...): picks the deadline (300 s floor
            for compression) and whether a timeout is retried.
        model: model id (default: the LLM's model, as ``auxiliary.<task>.model``).
        messages: OpenAI chat messages.
        temperature, tools, extra_body: sent as given; ``max_tokens`` is not sent (Hermes
            omits it on OpenAI-compatible endpoints).
        timeout: deadline in seconds (default: the task's, see :mod:`simulator.llm.client`).
        stream: return the chunk iterator instead (``stream_options`` passed through).

    Returns:
        A ``ChatCompletion`` (``.choices[0].message.content``, ``.choices[0].finish_reason``,
        ``.usage``), or with ``stream`` an iterator of ``ChatCompletionChunk``.

    Raises:
        RuntimeError: no provider configured (``use_llm(None)``), Hermes' message.
        BadRequestError, RateLimitError, InternalServerError, APITimeoutError ...: the
            provider failure as Hermes delivers it (:mod:`simulator.llm.errors`).
    """
    del provider, base_url, api_key, main_runtime, reasoning_config, api_mode
    llm = current_llm()
    if llm is None:
        raise _no_provider(task)
    return client.call(
        llm,
        task=task,
        model=model,
        messages=messages,
        temperature=temperature,
        max_tokens=max_tokens,
        tools=tools,
        timeout=timeout,
        extra_body=extra_body,
        stream=stream,
        stream_options=stream_options,
    )


async def async_call_llm(
    task: str = None,
    *,
    provider: str = None,
    model: str = None,
    base_url: str = None,
    api_key: str = None,
    main_runtime: dict[str, Any] | None = None,
    messages: list,
    temperature: float | None = None,
    max_tokens: int = None,
    tools: list = None,
    timeout: float = None,
    extra_body: dict = None,
    reasoning_config: dict | None = None,
) -> Any:
    """:func:`call_llm` for coroutines (run on a worker thread; same results and errors)."""
    return await asyncio.to_thread(
        call_llm,
        task,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key=api_key,
        main_runtime=main_runtime,
        messages=messages,
        temperature=temperature,
        max_tokens=max_tokens,
        tools=tools,
        timeout=timeout,
        extra_body=extra_body,
        reasoning_config=reasoning_config,
    )


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def extract_content_or_reasoning(response: Any) -> str:
    """The reply's text: ``content`` without inline think blocks, else reasoning fields.

    Order (as hermes-agent 0.19.0): ``message.content`` with ``<think>`` / ``<thinking>`` /
    ``<reasoning>`` / ``<thought>`` / ``<REASONING_SCRATCHPAD>`` blocks removed, if text
    remains; else ``message.reasoning`` and ``message.reasoning_content``, then the
    ``summary`` / ``content`` / ``text`` of ``message.reasoning_details`` entries, joined
    by blank lines; else ``""``.
    """
    message = response.choices[0].message
    content = (_field(message, "content") or "").strip()
    cleaned = _THINK_RE.sub("", content).strip()
    if cleaned:
        return cleaned
    parts: list[str] = []
    for name in ("reasoning", "reasoning_content"):
        value = _field(message, name)
        if isinstance(value, str) and value.strip() and value.strip() not in parts:
            parts.append(value.strip())
    for detail in _field(message, "reasoning_details") or ():
        if isinstance(detail, dict):
            text = detail.get("summary") or detail.get("content") or detail.get("text")
            if text and str(text).strip() not in parts:
                parts.append(str(text).strip())
    return "\n\n".join(parts)


@contextlib.contextmanager
def aux_interrupt_protection(active: bool = True) -> Iterator[None]:
    """Mark this thread's auxiliary call as not interruptible (restored on exit)."""
    previous = getattr(_protection, "active", False)
    _protection.active = active
    try:
        yield
    finally:
        _protection.active = previous


class _Completions:
    def __init__(self, llm: EngineLLM) -> None:
        self._llm = llm

    def create(self, *, model: str | None = None, messages: Any, **params: Any) -> Any:
        """One raw request (SDK ``max_retries=0``): the completion, or the provider's error."""
        timeout = params.pop("timeout", None)
        extra = params.pop("extra_body", None) or {}
        params.pop("extra_headers", None)
        body = {"model": model or self._llm.model, "messages": messages, **params, **extra}
        deadline = float(timeout) if isinstance(timeout, (int, float)) else client.DEFAULT_TIMEOUT
        ledger.note_call(self._llm)
        try:
            return client.deliver(
                self._llm, self._llm.exchange(body), deadline, stream=bool(body.get("stream"))
            )
        except Exception as exc:
            ledger.note_error(self._llm, type(exc).__name__)
            raise


class _AsyncCompletions(_Completions):
    async def create(self, **kwargs: Any) -> Any:  # type: ignore[override]
        """:meth:`_Completions.create` for coroutines."""
        return await asyncio.to_thread(_Completions.create, self, **kwargs)


def _client(llm: EngineLLM, completions: type[_Completions]) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        chat=types.SimpleNamespace(completions=completions(llm)),
        base_url="http://127.0.0.1/kit-engine-llm/v1/",
        api_key=llm.api_key,
    )


def get_text_auxiliary_client(
    task: str = "", *, main_runtime: dict[str, Any] | None = None
) -> tuple[Any, str | None]:
    """``(client, model)`` on the current LLM, or ``(None, None)`` with no provider configured."""
    del task, main_runtime
    llm = current_llm()
    return (None, None) if llm is None else (_client(llm, _Completions), llm.model)


def get_async_text_auxiliary_client(
    task: str = "", *, main_runtime: dict[str, Any] | None = None
) -> tuple[Any, str | None]:
    """:func:`get_text_auxiliary_client` with an awaitable ``chat.completions.create``."""
    del task, main_runtime
    llm = current_llm()
    return (None, None) if llm is None else (_client(llm, _AsyncCompletions), llm.model)


def shutdown_cached_clients() -> None:
    """No-op: the kit caches no clients."""


def cleanup_stale_async_clients() -> None:
    """No-op: the kit caches no clients."""


def populate(module: types.ModuleType) -> None:
    """Give ``module`` (the shim's ``agent.auxiliary_client``) this module's public names."""
    for name in __all__:
        setattr(module, name, globals()[name])
    module.__doc__ = "context-engine-kit shim: the engine's LLM (simulator.llm)."
