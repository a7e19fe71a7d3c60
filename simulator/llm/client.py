"""hermes-agent 0.19.0's ``call_llm`` behaviour, against one :class:`EngineLLM`.

What the real client does for a configured custom OpenAI-compatible endpoint with no
fallback chain (``agent/auxiliary_client.py``: ``call_llm``, ``_build_call_kwargs``,
``_effective_aux_timeout``, ``_is_transient_transport_error``), minus the network:

- The request body is ``{"model", "messages"}`` plus ``temperature`` and ``tools`` when
  given and ``extra_body``'s keys; ``max_tokens`` is not sent (Hermes omits it on
  OpenAI-compatible endpoints, so the output is never capped by it).
- A 5xx / 408 answer or a connection error is retried on the same endpoint
  ``transient_retries`` times (default 2) with backoff 1 s, 2 s, 4 s ... (capped at 8 s;
  here on the provider's virtual clock), except a timeout on task ``compression``, which
  is raised at once. Everything else (400, 429 ...) is raised at once: with no fallback
  chain and no main provider configured, Hermes' fallback finds nothing.
- The deadline is ``timeout`` when given, else the task's configured timeout
  (:data:`TASK_TIMEOUTS`, 30 s for unknown tasks), floored at 300 s for ``compression``.
  A ``timeout`` fault advances the virtual clock by the deadline (and blocks
  ``min(wall_seconds, deadline)`` real seconds) before ``APITimeoutError`` is raised.
- ``stream=True`` returns the chunk iterator of one request, no retry.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from simulator.llm import errors, ledger, response
from simulator.llm.engine_llm import EngineLLM, Exchange

#: hermes-agent 0.19.0 DEFAULT_CONFIG ``auxiliary.<task>.timeout`` (seconds).
TASK_TIMEOUTS = {
    "compression": 120.0,
    "vision": 120.0,
    "web_extract": 360.0,
    "skills_hub": 30.0,
    "approval": 30.0,
    "mcp": 30.0,
    "title_generation": 30.0,
    "memory_query_rewrite": 8.0,
    "tts_audio_tags": 30.0,
}
#: Timeout of a task with no configured value (seconds).
DEFAULT_TIMEOUT = 30.0
#: Floor of the config-derived compression timeout (seconds; not applied to ``timeout=``).
COMPRESSION_TIMEOUT_FLOOR = 300.0


def effective_timeout(task: str | None, timeout: float | None) -> float:
    """The deadline (seconds) Hermes gives one request of ``task``."""
    if timeout is not None:
        return float(timeout)
    value = TASK_TIMEOUTS.get(task or "", DEFAULT_TIMEOUT)
    return max(value, COMPRESSION_TIMEOUT_FLOOR) if task == "compression" else value


def request_body(
    model: str,
    messages: Any,
    *,
    temperature: float | None = None,
    tools: list | None = None,
    extra_body: Mapping[str, Any] | None = None,
    stream: bool = False,
    stream_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The chat-completions body Hermes sends (``max_tokens`` deliberately absent)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if temperature is not None:
        body["temperature"] = temperature
    if tools:
        body["tools"] = list(tools)
    if stream:
        body["stream"] = True
        if stream_options:
            body["stream_options"] = dict(stream_options)
    body.update(dict(extra_body or {}))
    return body


def _retryable(exc: Exception, task: str | None) -> bool:
    if isinstance(exc, errors.error_class("APIConnectionError")):
        return not (
            task == "compression" and isinstance(exc, errors.error_class("APITimeoutError"))
        )
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 408 or 500 <= status < 600)


def deliver(llm: EngineLLM, ex: Exchange, deadline: float, *, stream: bool = False) -> Any:
    """The engine-side result of one exchange: a completion / chunk iterator, or the raised error.

    Raises:
        APITimeoutError: the exchange timed out (after the virtual deadline and any real wait).
        APIStatusError: (a subclass for) the provider's 4xx / 5xx answer.
    """
    if ex.outcome is None:
        wall = ex.fault.wall_seconds if ex.fault is not None else 0.0
        if wall > 0:
            time.sleep(min(wall, deadline))
        llm.provider.clock.advance(deadline)
        raise errors.timeout_error()
    outcome = ex.outcome
    if outcome.status != 200:
        raise errors.status_error(outcome.status, outcome.body or {}, outcome.headers)
    if stream:
        return response.chunks(list(outcome.events or []))
    return response.completion(outcome.body or {})


def call(
    llm: EngineLLM,
    *,
    task: str | None = None,
    model: str | None = None,
    messages: Any,
    temperature: float | None = None,
    max_tokens: int | None = None,
    tools: list | None = None,
    timeout: float | None = None,
    extra_body: Mapping[str, Any] | None = None,
    stream: bool = False,
    stream_options: Mapping[str, Any] | None = None,
) -> response.ChatCompletion | Iterator[response.ChatCompletionChunk]:
    """One ``call_llm`` on ``llm`` with Hermes' retry rules (see the module doc).

    ``max_tokens`` is accepted and not sent, as Hermes does on OpenAI-compatible endpoints.

    Returns:
        A :class:`~simulator.llm.response.ChatCompletion`, or with ``stream`` an iterator of
        :class:`~simulator.llm.response.ChatCompletionChunk`.

    Raises:
        BadRequestError, RateLimitError, InternalServerError, APIStatusError,
        APITimeoutError: as the real ``call_llm`` raises them (:mod:`simulator.llm.errors`).
    """
    del max_tokens
    ledger.note_call(llm)
    body = request_body(
        model or llm.model,
        messages,
        temperature=temperature,
        tools=tools,
        extra_body=extra_body,
        stream=stream,
        stream_options=stream_options,
    )
    deadline = effective_timeout(task, timeout)
    attempt = 0
    while True:
        try:
            return deliver(llm, llm.exchange(body), deadline, stream=stream)
        except Exception as exc:
            if stream or attempt >= llm.transient_retries or not _retryable(exc, task):
                ledger.note_error(llm, type(exc).__name__)
                raise
            attempt += 1
            llm.provider.clock.advance(min(2.0 ** (attempt - 1), 8.0))
