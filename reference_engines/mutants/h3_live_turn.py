"""H3 (the live turn): select_context engines that build the request themselves.

The live turn is the request's own current user message (with whatever a ``pre_llm_call``
hook appended to it, H7) and this turn's assistant/tool rows after it. Two ways authors
lose it, and the fixes as shipped:

- ``RebuildsFromStore`` (mutant) assembles the request from its own store (rows indexed by
  ``message_uid`` in on_turn_complete) plus ``incoming_message``: the appended hook text is
  gone and, inside a tool loop, so are this turn's calls and results (the store only sees
  finished turns). ``KeepsLiveTurn`` (its twin) takes the live turn from
  ``request_messages``; it is a select_context-only engine: it never compacts
  (``should_compress`` is always False, compress() returns its input).
- ``WindowsConversation`` (mutant) trims ``conversation_messages`` to its last turns, which
  lack the hook text and can differ from the request. ``TrimmingSelector`` (its twin) trims
  ``request_messages`` itself, at turn boundaries, and compacts like MinimalEngine.
"""

from __future__ import annotations

import copy
from typing import Any

from reference_engines.mutants._base import MinimalEngine


def _last_user(messages: list[dict[str, Any]]) -> int | None:
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None
    )


def _turn_starts(messages: list[dict[str, Any]], lo: int, hi: int) -> list[int]:
    return [i for i in range(lo, hi) if messages[i].get("role") == "user"]


def _window_start(turns: int, keep: int) -> int:
    """The first kept turn of ``turns``: at least the last ``keep``, the start moving in steps
    of ``keep`` turns so the request's prefix stays put for several turns (H6: the prompt
    cache keeps hitting)."""
    latest = turns - keep
    return latest - latest % keep


class KeepsLiveTurn(MinimalEngine):
    """Correct twin: a select_context-only engine. Each request is the system prompt, the last
    ``keep_turns`` earlier turns (whole turns, from a user message on) and the live turn,
    taken from ``request_messages`` verbatim; None when that is the whole request."""

    keep_turns = 3

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    @property
    def name(self) -> str:
        return "live-turn-selector"

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        return False  # never compacts: the selection keeps requests small

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        self.compression_count += 1  # A6 (seeds): counts every call
        return messages  # nothing to do: the host's no-op signal

    def on_turn_complete(self, messages, usage=None, **kwargs):
        for m in messages:
            uid = m.get("message_uid") if isinstance(m, dict) else None
            if isinstance(uid, str) and uid not in self.rows:
                self.rows[uid] = copy.deepcopy(m)

    def earlier(self, request_messages, conversation_messages, incoming_message, live):
        """The earlier context to keep (rows of the request before the live turn)."""
        head = 1 if request_messages and request_messages[0].get("role") == "system" else 0
        starts = _turn_starts(request_messages, head, live)
        if len(starts) <= self.keep_turns:
            return None
        return request_messages[starts[_window_start(len(starts), self.keep_turns)] : live]

    def live_turn(self, request_messages, incoming_message, live):
        """The live turn: the request's own rows from its last user message on."""
        return [copy.deepcopy(m) for m in request_messages[live:]]

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        **kwargs,
    ):
        live = _last_user(request_messages)
        if live is None:
            return None
        kept = self.earlier(request_messages, conversation_messages, incoming_message, live)
        if kept is None:
            return None
        head = (
            [copy.deepcopy(request_messages[0])]
            if request_messages[0].get("role") == "system"
            else []
        )
        return (
            head
            + [copy.deepcopy(m) for m in kept]
            + self.live_turn(request_messages, incoming_message, live)
        )


class RebuildsFromStore(KeepsLiveTurn):
    """Breaks H3 only: the request is rebuilt from the engine's store plus incoming_message."""

    mutant_of = "H3"

    def live_turn(self, request_messages, incoming_message, live):
        # the defect: the persisted copy of the user message (no pre_llm_call text) and none of
        # this turn's assistant/tool rows (the store only holds finished turns)
        return [copy.deepcopy(incoming_message or request_messages[live])]


class TrimmingSelector(MinimalEngine):
    """Correct twin: a trimming selector that also compacts (MinimalEngine). Requests of more
    than ``keep_turns`` turns keep the system prompt and the last ``keep_turns`` turns of
    ``request_messages`` (whole turns, the live one verbatim)."""

    keep_turns = 4

    @property
    def name(self) -> str:
        return "trimming-selector"

    def source(self, request_messages, conversation_messages):
        """The list the window is cut from."""
        return request_messages

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        **kwargs,
    ):
        rows = self.source(request_messages, conversation_messages)
        if not rows:
            return None
        head = 1 if request_messages and request_messages[0].get("role") == "system" else 0
        first = 1 if rows[0].get("role") == "system" else 0
        starts = _turn_starts(rows, first, len(rows))
        if len(starts) <= self.keep_turns:
            return None
        return [copy.deepcopy(m) for m in request_messages[:head]] + [
            copy.deepcopy(m) for m in rows[starts[_window_start(len(starts), self.keep_turns)] :]
        ]


class WindowsConversation(TrimmingSelector):
    """Breaks H3 only: the window is cut from conversation_messages, not from the request."""

    mutant_of = "H3"

    def source(self, request_messages, conversation_messages):
        return conversation_messages or request_messages  # the defect
