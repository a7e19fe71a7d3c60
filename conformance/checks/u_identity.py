"""Checks of contract section U that engines must tolerate (U2, U4, U6, U7, U10).

The host guarantees uids (U1, U3, U5, U8, U9: host and store tests, docs/coverage.md);
an engine must never fail because a uid is absent, duplicated, or names changed content,
and a uid it stamps itself must be one the host can commit.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from hypothesis import strategies as st

from conformance.checks.engine_calls import (
    compress_like_host,
    invoke,
    overrides,
    select_like_host,
    threshold_of,
    usage,
)
from conformance.errors import ContractViolation
from conformance.expect import MUST, fail
from conformance.registry import check
from conformance.strategies import transcripts, uid_from_seed

UID_RE = re.compile(r"^[0-9a-f]{32}$")


def _strip_old_uids(history: list[dict[str, Any]], n_old: int) -> list[dict[str, Any]]:
    """Rows written before the uid column existed: the first ``n_old`` lack ``message_uid``."""
    out = copy.deepcopy(history)
    for m in out[:n_old]:
        m.pop("message_uid", None)
    return out


def _surfaces(clause: str, ctx, engine: Any, history: list[dict[str, Any]]) -> None:
    """compress() and select_context() return normally (validity of the output is V's business)."""
    compress_like_host(clause, MUST, engine, history)
    if overrides(engine, "select_context"):
        try:
            select_like_host(clause, MUST, engine, history)
        except ContractViolation:
            pass  # H1 reports a raising hook (fail-open)


@check(
    "U2",
    "tolerates-missing-uid",
    level=MUST,
    title="old rows without message_uid (absence = no identity yet) are never an error",
    examples=6,
)
def check_u2_tolerates_missing_uid(ctx):
    """U2: compress() and select_context() accept histories whose oldest
    rows lack ``message_uid`` (rows written before the column existed)."""

    def body(draw):
        engine = ctx.new_engine()
        over = draw(st.booleans(), "over_threshold")
        history = draw(
            transcripts(
                min_turns=2,
                uids="all",
                end_with_user=True,
                min_tokens=threshold_of(engine, ctx.window // 2) + 500 if over else 0,
            ),
            "history",
        )
        n_old = draw(st.integers(1, max(1, len(history) - 1)), "rows_without_uid")
        _surfaces("U2", ctx, engine, _strip_old_uids(history, n_old))

    ctx.examples(body)


@check(
    "U4",
    "tolerates-changed-content",
    level=MUST,
    title="content changed under a known uid is a new version, never an error or a stale copy",
    examples=6,
)
def check_u4_tolerates_changed_content(ctx):
    """U4: after compress(H), a second compress(H') where the last message keeps its uid but
    has new content returns normally, and never brings back the old content under that uid."""

    def body(draw):
        engine = ctx.new_engine()
        history = draw(transcripts(min_turns=2, uids="all", end_with_user=True), "history")
        compress_like_host("U4", MUST, engine, history)
        changed = copy.deepcopy(history)
        last = changed[-1]
        old_text = last.get("content")
        last["content"] = "EDITED: the user rewrote this message."
        out = compress_like_host("U4", MUST, engine, changed)
        uid = last.get("message_uid")
        if isinstance(out, list):
            for m in out:
                if (
                    isinstance(m, dict)
                    and m.get("message_uid") == uid
                    and m.get("content") == old_text
                    and old_text != last["content"]
                ):
                    fail(
                        "U4",
                        MUST,
                        f"compress() output row with uid {uid}",
                        expected="the current content (message_uid, content) is a version",
                        got="the stale content from the previous call",
                    )

    ctx.examples(body)


@check(
    "U6",
    "stamped-uid-committable",
    level=MUST,
    title="a message_uid the engine stamps on a new row "
    "is a uid the host can commit (32 lowercase hex)",
    examples=6,
)
def check_u6_stamped_uid_committable(ctx):
    """U6: rows in compress() output that are not input rows and carry ``message_uid`` carry a
    32-lowercase-hex value (the host commits it as is, in place and on rotation)."""

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            transcripts(
                min_turns=1,
                uids="all",
                system=True,
                min_tokens=threshold_of(engine, ctx.window // 2) + 500,
            ),
            "history",
        )
        out = compress_like_host("U6", MUST, engine, history)
        if not isinstance(out, list):
            return
        known = {m.get("message_uid") for m in history}
        for i, m in enumerate(out):
            if not isinstance(m, dict) or "message_uid" not in m or m.get("message_uid") in known:
                continue
            uid = m.get("message_uid")
            if not isinstance(uid, str) or not UID_RE.match(uid):
                fail(
                    "U6",
                    MUST,
                    f"message_uid stamped by compress() on output row {i} ({m.get('role')})",
                    expected="32 lowercase hex characters (uuid4().hex), "
                    "which the host commits unchanged",
                    got=repr(uid)[:80],
                )

    ctx.examples(body)


@check(
    "U7",
    "tolerates-duplicate-uids",
    level=MUST,
    title="two live rows sharing a uid (one logical message) are tolerated",
    examples=6,
)
def check_u7_tolerates_duplicate_uids(ctx):
    """U7: histories where two rows share a uid go through compress() and select_context()
    without error."""

    def body(draw):
        engine = ctx.new_engine()
        over = draw(st.booleans(), "over_threshold")
        history = draw(
            transcripts(
                min_turns=2,
                uids="duplicates",
                end_with_user=True,
                min_tokens=threshold_of(engine, ctx.window // 2) + 500 if over else 0,
            ),
            "history",
        )
        _surfaces("U7", ctx, engine, history)

    ctx.examples(body)


@check(
    "U10",
    "tolerates-current-turn-without-uid",
    level=MUST,
    title="the current user message has no uid during a "
    "preflight compress() before the turn-start flush",
    examples=6,
)
def check_u10_tolerates_current_turn_without_uid(ctx):
    """U10: every row has a uid except the last (current) user message; preflight and
    compress() return normally."""

    def body(draw):
        engine = ctx.new_engine()
        history = draw(
            transcripts(
                min_turns=1,
                uids="all",
                end_with_user=True,
                system=True,
                min_tokens=threshold_of(engine, ctx.window // 2) + 500,
            ),
            "history",
        )
        history[-1].pop("message_uid", None)
        invoke("U10", MUST, engine, "update_from_response", usage(threshold_of(engine, 0) + 1))
        invoke("U10", MUST, engine, "should_compress_preflight", copy.deepcopy(history))
        compress_like_host("U10", MUST, engine, history)

    ctx.examples(body)


__all__ = ["UID_RE", "uid_from_seed"]
