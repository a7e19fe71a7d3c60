"""Checks of contract section U that engines must tolerate (U2, U4, U6, U7, U10).

The host guarantees uids (U1, U3, U5, U8, U9: host and store tests, docs/coverage.md);
an engine must never fail because a uid is absent, duplicated, or names changed content,
and a uid it stamps itself must be one the host can commit.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

from hypothesis import strategies as st

from conformance.authoring.expect import MUST, declined, fail, short
from conformance.authoring.registry import check
from conformance.authoring.strategies import text_from_seed, transcripts, uid_from_seed
from conformance.checks.engine_calls import (
    compress_like_host,
    fail_open,
    invoke,
    overrides,
    select_like_host,
    threshold_of,
    turn_complete_like_host,
    usage,
)
from conformance.clauses.errors import CheckSkipped, ContractViolation
from simulator.provider.tokens import count_messages

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


#: The opt-in introspection hook of engines with a store (U7; docs/write-your-own-engine.md).
STORE_HOOK = "conformance_stored_uids"


def _held(engine: Any, session_id: str) -> list[str]:
    """The uids ``engine`` says its store holds for ``session_id`` (one per stored row)."""
    out = invoke("U7", MUST, engine, STORE_HOOK, session_id)
    if not isinstance(out, (list, tuple)):
        fail(
            "U7",
            MUST,
            f"{STORE_HOOK}({session_id!r})",
            expected="a list of the message_uid values the store holds (one per stored row)",
            got=f"{type(out).__name__} {short(out, 60)}",
        )
    return [str(u) for u in out]


def _seed_of(salt: str) -> int:
    """A stable integer of ``salt`` (the same in every process, unlike ``hash``)."""
    return int(hashlib.sha256(salt.encode("utf-8")).hexdigest()[:12], 16)


def _salted(messages: list[dict[str, Any]], salt: str, start: int = 0) -> list[dict[str, Any]]:
    """Copies of ``messages`` with uids unique to this example (``salt``, position)."""
    out = copy.deepcopy(messages)
    for i, m in enumerate(out, start):
        m["message_uid"] = uid_from_seed(_seed_of(salt), i)
    return out


@check(
    "U7",
    "store-holds-each-message-once",
    level=MUST,
    title="an engine's store (opt-in hook conformance_stored_uids) holds each uid once and keeps "
    "storing: replays, the compacted output plus new turns, a restart",
    examples=6,
)
def check_u7_store_holds_each_message_once(ctx):
    """U7 (engines declaring the ``conformance_stored_uids(session_id)`` hook): a transcript goes
    through ``on_turn_complete`` turn by turn and once more whole (a replay), is compacted
    (compress(), then Hermes' boundary callbacks), the compacted output plus two new turns is
    handed over twice, the session ends, and a new engine (a restart) resumes it with one more
    turn. After each phase no uid is held twice, and the new turns' rows are held whenever the
    store held rows of that role before (a store keyed by list position stops storing after
    the first compaction)."""
    probe = ctx.new_engine()
    if not callable(getattr(probe, STORE_HOOK, None)):
        raise CheckSkipped(
            f"the engine has no {STORE_HOOK}(session_id) hook (opt-in: engines with a store "
            "expose the uids they hold; docs/write-your-own-engine.md)"
        )
    threshold = threshold_of(probe, ctx.window // 2)
    examples = [0]

    def turns(seed: int, n: int, start: int, salt: str) -> list[dict[str, Any]]:
        rows = []
        for k in range(n):
            rows += [
                {
                    "role": "user",
                    "content": f"new turn {k}: " + text_from_seed(seed + k, "en_US", 2),
                },
                {"role": "assistant", "content": text_from_seed(seed + k + 50, "en_US", 1)},
            ]
        return _salted(rows, salt, start)

    def handed(engine: Any, messages: list[dict[str, Any]], turn: str) -> None:
        fail_open(
            turn_complete_like_host,
            "U7",
            MUST,
            engine,
            copy.deepcopy(messages),
            usage(count_messages(messages)),
            turn_id=turn,
        )

    def judge(engine: Any, sid: str, phase: str, new: list[dict[str, Any]], roles: set) -> set:
        held = _held(engine, sid)
        twice = sorted({u for u in held if held.count(u) > 1})
        if twice:
            fail(
                "U7",
                MUST,
                f"uids held by the store after {phase}",
                expected="each logical message once (a uid names one message; key the store "
                "by message_uid, not by position or by sighting)",
                got=f"{len(twice)} uid(s) held more than once, e.g. {twice[0]} x"
                f"{held.count(twice[0])}",
            )
        missing = [m for m in new if m.get("role") in roles and m["message_uid"] not in held]
        if missing:
            fail(
                "U7",
                MUST,
                f"the store after {phase}",
                expected=f"the {len(missing)} new {'/'.join(sorted(roles))} row(s) stored (it "
                "stored such rows before)",
                got=f"not stored, e.g. {short(missing[0].get('content'), 60)}",
                context="a store keyed by list position stops storing once a compaction made the "
                "transcript shorter",
            )
        return roles | {m.get("role") for m in new if m["message_uid"] in held}

    def body(draw):
        examples[0] += 1
        salt = f"kit-store-{examples[0]}-{draw(st.integers(0, 10**6), 'salt')}"
        sid = f"{salt}-session"
        history = _salted(
            draw(
                transcripts(min_turns=2, max_turns=6, system=True, min_tokens=threshold + 500),
                "history",
            ),
            salt,
        )
        engine = ctx.new_engine()
        invoke("O1", MUST, engine, "on_session_start", sid, platform="cli", model="sim-model")
        ends = [i for i, m in enumerate(history) if m.get("role") == "user" and i > 1]
        for n, end in enumerate(ends + [len(history)], 1):
            handed(engine, history[:end], f"t{n}")
        handed(engine, history, "replay")  # the same transcript again
        held = set(_held(engine, sid))
        roles = {m.get("role") for m in history if m["message_uid"] in held} - {"system"}
        judge(engine, sid, "the transcript was handed over turn by turn and once more", [], roles)
        out = compress_like_host("U7", MUST, engine, history)
        compacted = isinstance(out, list) and not declined(history, out)
        committed = [dict(m) for m in (out if compacted else history)]
        for i, m in enumerate(committed):  # the host stamps rows the engine left without a uid
            m.setdefault("message_uid", uid_from_seed(_seed_of(salt + "out"), i))
        if compacted:
            invoke("O2", MUST, engine, "on_session_end", sid, copy.deepcopy(history))
            invoke(
                "O1",
                MUST,
                engine,
                "on_session_start",
                sid,
                boundary_reason="compression",
                old_session_id=sid,
                platform="cli",
            )
        new = turns(draw(st.integers(0, 10_000), "new_turns_seed"), 2, 500, salt)
        now = committed + new
        handed(engine, now, "after-compaction")
        handed(engine, now, "after-compaction-replay")
        invoke("O2", MUST, engine, "on_session_end", sid, copy.deepcopy(now))
        roles = judge(
            engine, sid, "the compacted output plus two new turns, handed over twice", new, roles
        )
        restarted = ctx.new_engine()
        invoke("O1", MUST, restarted, "on_session_start", sid, platform="cli", model="sim-model")
        more = turns(7_000, 1, 900, salt)
        handed(restarted, now + more, "after-restart")
        invoke("O2", MUST, restarted, "on_session_end", sid, copy.deepcopy(now + more))
        judge(
            restarted,
            sid,
            "a restart (a new engine on the same store) and one more turn",
            more,
            roles,
        )

    ctx.examples(body)
