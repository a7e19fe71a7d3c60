"""Mutant for H6: a router whose selection reshuffles its turn groups on every call.

Each call permutes the selected turns (the head stays first and the current turn stays
last, so the request is still valid, V1-V4) with ``random.Random(<call count>)``: the
selection changes although nothing changed, so the provider's prompt cache misses
every time. Everything else is :class:`reference_engines.router.ReferenceRouter`.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from reference_engines.router import ReferenceRouter, split_groups


class ReshufflingRouter(ReferenceRouter):
    """Breaks H6 only: an unstable selection."""

    mutant_of = "H6"

    def select_context(
        self,
        request_messages: list[dict[str, Any]],
        *,
        conversation_messages: list[dict[str, Any]] | None = None,
        incoming_message: dict[str, Any] | None = None,
        budget_tokens: int = 0,
        **kwargs: Any,
    ) -> list[dict[str, Any]] | None:
        selected = super().select_context(
            request_messages,
            conversation_messages=conversation_messages,
            incoming_message=incoming_message,
            budget_tokens=budget_tokens,
        )
        head, groups = split_groups(selected if selected is not None else list(request_messages))
        if len(groups) < 3:
            return selected
        older, current = groups[:-1], groups[-1]
        rng = random.Random(self.selections)  # the defect: a new order on every call
        order = list(range(len(older)))
        while order == sorted(order):
            rng.shuffle(order)
        return [copy.deepcopy(m) for m in head + [m for i in order for m in older[i]] + current]
