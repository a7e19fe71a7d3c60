"""What one request to the provider produces, shared by the provider and its conversation handle.

- :data:`CHAT` and :data:`MESSAGES`: the two routes (OpenAI chat completions, Anthropic messages);
- :class:`Outcome`: what the transport sends back (status, JSON body, headers, SSE events);
- :func:`salt`: the text mixed into a reply's deterministic ids (seed and request fields).
"""

from __future__ import annotations

from typing import Any

from simulator.provider import responses as R

CHAT = "chat.completions"
MESSAGES = "messages"


class Outcome:
    """What the transport sends for one request.

    Attributes:
        status: HTTP status.
        body: JSON body (dict) for non-streamed answers and errors.
        headers: extra headers (request ids, retry-after...).
        events: SSE event bytes for a streamed 200, else None.
        cut: the stream must stop after ``events`` with the connection closed (fault).
    """

    __slots__ = ("status", "body", "headers", "events", "cut")

    def __init__(
        self,
        status: int,
        body: dict[str, Any] | None,
        headers: dict[str, str],
        events: list[bytes] | None = None,
        cut: bool = False,
    ) -> None:
        self.status, self.body, self.headers, self.events, self.cut = (
            status,
            body,
            headers,
            events,
            cut,
        )


def salt(*values: Any) -> str:
    """The JSON text of ``values`` ("" when all are None): what a reply's ids are derived from."""
    if all(v is None for v in values):
        return ""
    return R.dumps([v for v in values])


__all__ = ["CHAT", "MESSAGES", "Outcome", "salt"]
