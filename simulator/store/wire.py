"""Stripping persistence-only fields from provider copies (U9).

The host pipeline calls :func:`strip_persistence_fields` on every request's message list
(after select_context and the other sanitizers, before cache control) so that no
persistence-only field ever reaches the provider. The provider simulator records any
that does (``Provider.u9_leaks``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from simulator.provider.tokens import PERSISTENCE_ONLY_FIELDS

#: Fields Hermes MAIN strips from every outgoing copy (its ``PERSISTENCE_ONLY_MESSAGE_FIELDS``):
#: the four identity fields of U9 plus display/bookkeeping fields.
PERSISTENCE_ONLY_MESSAGE_FIELDS = frozenset(PERSISTENCE_ONLY_FIELDS) | frozenset(
    {
        "timestamp",
        "display_kind",
        "display_metadata",
        "_row_id",
        "_merged_turn_prefix",
        "_db_row_snapshot",
        "_canonical_row",
    }
)


def strip_persistence_fields(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return provider copies of ``messages`` without persistence-only fields (U9).

    Input: an iterable of message dicts (not modified). Output: a new list of new dicts
    (shallow copies: nested ``content`` parts and ``tool_calls`` are shared, they carry no
    persistence fields) with every key in :data:`PERSISTENCE_ONLY_MESSAGE_FIELDS` removed.
    Raises :class:`TypeError` naming the index when an item is not a mapping.
    """
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            kind = type(m).__name__
            article = "an" if kind[:1].lower() in "aeiou" else "a"
            raise TypeError(
                f"strip_persistence_fields: message {i} is {article} {kind}, expected a dict"
            )
        out.append({k: v for k, v in m.items() if k not in PERSISTENCE_ONLY_MESSAGE_FIELDS})
    return out


def leaked_fields(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """Describe every persistence-only field present in ``messages`` (U9), e.g. for checks.

    Returns strings like ``"message 3: ['message_uid']"``; empty when clean.
    """
    leaks = []
    for i, m in enumerate(messages):
        found = sorted(PERSISTENCE_ONLY_MESSAGE_FIELDS.intersection(m))
        if found:
            leaks.append(f"message {i}: {found}")
    return leaks


__all__ = ["PERSISTENCE_ONLY_MESSAGE_FIELDS", "strip_persistence_fields", "leaked_fields"]
