"""Mutants of section H (H1, H3, H5, H6). Each breaks one clause."""

from __future__ import annotations

from reference_engines.mutants._base import HookedEngine, safe_tail_start


class SelectRaises(HookedEngine):
    """Breaks H1: select_context raises (the host fails open, but it is a SHOULD failure)."""

    mutant_of = "H1"

    def select_context(self, request_messages, **kwargs):
        raise ValueError("selection index not ready")  # the defect


class SelectMutatesHistory(HookedEngine):
    """Breaks H3: select_context pops messages off conversation_messages."""

    mutant_of = "H3"

    def select_context(self, request_messages, *, conversation_messages=None, **kwargs):
        out = super().select_context(
            request_messages, conversation_messages=conversation_messages, **kwargs
        )
        if conversation_messages:
            conversation_messages.pop()  # the defect
        return out


class TurnCompleteStripsUids(HookedEngine):
    """Breaks H5: on_turn_complete edits the host's message dicts."""

    mutant_of = "H5"

    def on_turn_complete(self, messages, usage=None, **kwargs):
        for m in messages:
            m.pop("message_uid", None)  # the defect
            m["seen"] = True


class RotatingSelection(HookedEngine):
    """Breaks H6: every call rotates the selected messages, although nothing changed."""

    mutant_of = "H6"

    def __init__(self):
        super().__init__()
        self.calls = 0

    def select_context(self, request_messages, **kwargs):
        self.calls += 1
        out = list(request_messages)
        head = out[:1] if out and out[0].get("role") == "system" else []
        body = out[len(head) :]
        if len(body) <= 10:
            return None
        start = safe_tail_start(
            body, max(1, len(body) - (6 + self.calls))
        )  # the defect: a new cut per call
        return head + body[start:]
