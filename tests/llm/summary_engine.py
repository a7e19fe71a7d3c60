"""A small context engine that summarises with the host's LLM, as a plugin author writes one.

It subclasses ``agent.context_engine.ContextEngine`` and calls
``agent.auxiliary_client.call_llm(task="compression", ...)`` in ``compress()``, so the
same file runs on hermes-agent 0.19.0 (its real auxiliary client) and on the kit's shim.
Head (system + first message) and the last two messages are kept; the middle becomes one
user message holding the LLM's summary, or a placeholder when the call fails.

``engine.call_kwargs`` adds keyword arguments to ``call_llm`` (``timeout=`` ...);
``engine.last_outcome`` is a JSON-ready description of what the call delivered, the same
on both hosts when the delivery is the same: ``{"kind": "ok", "content", "finish_reason",
"model", "prompt_tokens", "completion_tokens"}`` or ``{"kind": "error", "type", "bases",
"message", "status_code", "retry_after", "body"}``.
"""

from agent.auxiliary_client import call_llm
from agent.context_engine import ContextEngine

PROMPT = "Summarise these conversation turns for a handoff:\n\n"
OPENAI_BASES = (
    "APIError",
    "APIStatusError",
    "APIConnectionError",
    "APITimeoutError",
    "BadRequestError",
    "RateLimitError",
    "InternalServerError",
)


def describe_error(exc):
    """What the engine can see of an exception raised by call_llm (JSON-ready)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    names = {c.__name__ for c in type(exc).__mro__}
    return {
        "kind": "error",
        "type": type(exc).__name__,
        "bases": sorted(n for n in OPENAI_BASES if n in names),
        "message": str(exc),
        "status_code": getattr(exc, "status_code", None),
        "retry_after": headers.get("retry-after"),
        "body": getattr(exc, "body", None),
    }


def describe_response(response):
    """What the engine can see of a call_llm result (JSON-ready)."""
    choice = response.choices[0]
    return {
        "kind": "ok",
        "content": choice.message.content,
        "finish_reason": choice.finish_reason,
        "model": response.model,
        "prompt_tokens": response.usage.prompt_tokens,
        "completion_tokens": response.usage.completion_tokens,
    }


def serialise(messages):
    """The turns as the prompt's text, one ``[ROLE]: content`` paragraph each."""
    return "\n\n".join(f"[{m.get('role', '').upper()}]: {m.get('content') or ''}" for m in messages)


class SummaryEngine(ContextEngine):
    """Summarising engine: head + LLM summary + last two messages."""

    def __init__(self, context_length=200_000):
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)
        self.call_kwargs = {}
        self.last_outcome = None

    @property
    def name(self):
        return "summary-llm"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or 0)

    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or self.last_prompt_tokens) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        head = 2 if messages and messages[0].get("role") == "system" else 1
        if len(messages) <= head + 2:
            return list(messages)
        middle = messages[head:-2]
        try:
            response = call_llm(
                task="compression",
                messages=[{"role": "user", "content": PROMPT + serialise(middle)}],
                **self.call_kwargs,
            )
            self.last_outcome = describe_response(response)
            summary = response.choices[0].message.content or ""
        except Exception as exc:  # the host's LLM failed: keep going without a summary
            self.last_outcome = describe_error(exc)
            summary = f"[{len(middle)} earlier messages dropped: summary unavailable]"
        self.compression_count += 1
        role = "assistant" if messages[head - 1].get("role") == "user" else "user"
        return list(messages[:head]) + [{"role": role, "content": summary}] + list(messages[-2:])
