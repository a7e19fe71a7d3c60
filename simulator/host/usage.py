"""A2: build the canonical usage dict the host hands to ``update_from_response``.

The canonical dict always has ``prompt_tokens``, ``completion_tokens``, ``total_tokens``
and the five buckets ``input_tokens``, ``output_tokens``, ``cache_read_tokens``,
``cache_write_tokens``, ``reasoning_tokens`` (Hermes 0.19.0 sends exactly these 8 keys).
``prompt_tokens`` is the canonical prompt figure: uncached input plus both cache buckets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CANONICAL_USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def _int(value: Any) -> int:
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        return 0


def canonical_usage(usage: Mapping[str, Any] | None) -> dict[str, int]:
    """Map a provider ``usage`` object (OpenAI or Anthropic shape) to A2's canonical dict.

    OpenAI shape: ``prompt_tokens`` (cached included), ``completion_tokens``,
    ``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens``,
    ``completion_tokens_details.reasoning_tokens``.
    Anthropic shape: ``input_tokens`` (uncached only), ``output_tokens``,
    ``cache_read_input_tokens``, ``cache_creation_input_tokens``.
    Returns all 8 keys as non-negative ints (tokens).
    """
    usage = usage or {}
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        details = usage.get("prompt_tokens_details") or {}
        cdetails = usage.get("completion_tokens_details") or {}
        prompt = _int(usage.get("prompt_tokens"))
        cache_read = _int(details.get("cached_tokens"))
        cache_write = _int(
            details.get("cache_write_tokens") or usage.get("cache_creation_input_tokens")
        )
        completion = _int(usage.get("completion_tokens"))
        reasoning = _int(cdetails.get("reasoning_tokens"))
        uncached = max(prompt - cache_read - cache_write, 0)
    else:
        uncached = _int(usage.get("input_tokens"))
        cache_read = _int(usage.get("cache_read_input_tokens"))
        cache_write = _int(usage.get("cache_creation_input_tokens"))
        prompt = uncached + cache_read + cache_write
        completion = _int(usage.get("output_tokens"))
        reasoning = 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "input_tokens": uncached,
        "output_tokens": completion,
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": reasoning,
    }
