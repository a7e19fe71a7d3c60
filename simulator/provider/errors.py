"""Provider-shaped errors: the bodies and statuses real OpenAI and Anthropic APIs send.

``ProviderError(status, body, headers)`` carries one of them; :func:`openai_error` and
:func:`anthropic_error` build the two body shapes. Message
texts are kept verbatim where the real API's text is known, because clients such as
Hermes classify errors by substring.
"""

from __future__ import annotations

from typing import Any


class ProviderError(Exception):
    """A provider-shaped error answer.

    Attributes:
        status: HTTP status code (e.g. 400, 429, 529).
        body: the provider's JSON body (OpenAI ``{"error": {...}}`` or Anthropic
            ``{"type": "error", "error": {...}, "request_id": ...}``).
        headers: extra response headers (``retry-after``, ``retry-after-ms``,
            ``x-should-retry``...).
    """

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None):
        err = body.get("error", body) if isinstance(body, dict) else body
        msg = err.get("message") if isinstance(err, dict) else err
        super().__init__(f"{status}: {msg}")
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


class U9LeakError(AssertionError):
    """Strict mode: a persistence-only field (contract clause U9) reached the provider."""


def openai_error(
    message: str,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """OpenAI error body ``{"error": {"message", "type", "param", "code"}}`` (+ ``extra`` keys)."""
    err: dict[str, Any] = {"message": message, "type": type_, "param": param, "code": code}
    err.update(extra)
    return {"error": err}


def anthropic_error(
    message: str, type_: str = "invalid_request_error", request_id: str = ""
) -> dict[str, Any]:
    """Anthropic error body ``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
    return {
        "type": "error",
        "error": {"type": type_, "message": message},
        "request_id": request_id or None,
    }


class ValidationFailure(Exception):
    """Internal: a request broke a provider rule; ``shape``-neutral, turned into a body later.

    Attributes:
        message: the provider's message text.
        param: OpenAI ``param`` (or None).
        code: OpenAI ``code`` (or None).
        status: HTTP status (400 unless stated).
        anthropic_type: Anthropic ``error.type``.
        openai_type: OpenAI ``error.type``.
    """

    def __init__(
        self,
        message: str,
        param: str | None = None,
        code: str | None = None,
        status: int = 400,
        anthropic_type: str = "invalid_request_error",
        openai_type: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status = status
        self.anthropic_type = anthropic_type
        self.openai_type = openai_type
