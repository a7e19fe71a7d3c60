"""Scenario mutant for H3: ``select_context`` shortens old messages *in place* in the
list it is handed and returns None. On a host whose request dicts are the history's own
dicts this rewrites persisted history; the kit's host copies, so the request changes
while the engine claims "no change"."""

from __future__ import annotations

from reference_engines.router import ReferenceRouter


class SelectMutatesInPlace(ReferenceRouter):
    """Breaks H3 only."""

    mutant_of = "H3"

    def select_context(
        self,
        request_messages,
        *,
        conversation_messages=None,
        incoming_message=None,
        budget_tokens=0,
        **kwargs,
    ):
        self.selections += 1
        for m in request_messages[1:-4]:  # the defect: edits the caller's dicts
            if isinstance(m.get("content"), str) and len(m["content"]) > 80:
                m["content"] = m["content"][:80]
        return None
