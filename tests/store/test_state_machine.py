"""Covers simulator.store (memory, sqlite, merge, transfer, wire): a Hypothesis state machine over
store + host-like operations, checking U1–U10 after every step.

Operations: user turns (with and without a preflight compress before the flush), assistant
replies with tool calls (results in the same flush or a later one, provider ids reused
across turns and inside one response), compaction in place and by rotation (engine
pre-stamped carriers, tail clones, the in-flight task folded onto the carrier, a repeated
row), merges committed to the store, restore with ``repair_alternation=True``, content
rewrites, branch, rewind, export/import, rows written by an "older build" (raw SQL
without uid), restart, and starting from a migrated pre-uid (v30) database.

The model is the host's view: the live dicts it handed to the store. After every step
each session loaded from the store must equal the model (identity fields included), and
independent checks of U1, U5, U8 and U9 must hold.

CI runs 50 examples of up to 20 steps against SQLite (and 25 against MemoryStore). Set
``CEK_STORE_THOROUGH=1`` for a long local run (400 x 50).
"""

from __future__ import annotations

import copy
import io
import os
import re
import shutil
import sqlite3
import tempfile
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from simulator.store.memory import MemoryStore
from simulator.store.merge import fold_into, repair_message_sequence
from simulator.store.sqlite import SQLiteStore
from simulator.store.transfer import export_jsonl, import_jsonl
from simulator.store.wire import PERSISTENCE_ONLY_MESSAGE_FIELDS, strip_persistence_fields

from .fixtures.make_v30_fixture import FIXTURE_ROWS
from .fixtures.make_v30_fixture import build as build_v30
from .helpers import assistant, seeded_uids, tool, user

HEX32 = re.compile(r"^[0-9a-f]{32}$")
THOROUGH = os.environ.get("CEK_STORE_THOROUGH") == "1"
CALL_IDS = st.sampled_from(["call_a", "call_b", "call_c"])
TEXT = st.sampled_from(["alpha", "beta", "gamma", "delta"])
BACKFILL_BATCH = 3
#: Steps run by each example of the current test (filled by teardown), to prove the volume.
STEPS_RUN: list[int] = []


def _text_order(rows: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for m in rows:
        if m.get("message_uid"):
            out.append(m["message_uid"])
        out.extend(m.get("_absorbed_message_uids", []))
    return out


def _dedupe(uids: list[str]) -> list[str]:
    seen: set = set()
    return [u for u in uids if not (u in seen or seen.add(u))]


def owning_uids(messages: list[dict[str, Any]]) -> list[list[str] | None]:
    """For each tool result, the uids its call may carry, read directly from the U8 text:
    the nearest preceding assistant in the same user turn naming its id owns it, and its
    ``_tool_call_uids`` entry (a uid, or one uid per occurrence after a merge) lists them.
    None where no uid-carrying call owns the result (or for other roles)."""
    out: list[list[str] | None] = []
    for i, m in enumerate(messages):
        found: list[str] | None = None
        if m.get("role") == "tool":
            pid = m.get("tool_call_id")
            for j in range(i - 1, -1, -1):
                p = messages[j]
                if p.get("role") == "user":
                    break
                if p.get("role") == "assistant" and any(
                    c.get("id") == pid for c in p.get("tool_calls") or []
                ):
                    value = (p.get("_tool_call_uids") or {}).get(pid)
                    found = [value] if isinstance(value, str) else (list(value) if value else None)
                    break
        out.append(found)
    return out


class StoreMachine(RuleBasedStateMachine):
    """Drives one store; subclasses pick SQLite or memory."""

    kind = "sqlite"
    sessions = Bundle("sessions")

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="cek-store-sm-")
        self.path = os.path.join(self.dir, "store.sqlite3")
        self.store: Any = None
        self.model: dict[str, list[dict[str, Any]]] = {}
        self.pending: dict[str, list[dict[str, Any]]] = {}
        self.engine_uids = 0
        self.uid_factory = seeded_uids(1234)
        self.opens = 0  # opens of a migrated v30 store (0: the store was created fresh)
        self.checks = 0  # invariant passes: one after start, then one per step

    # ---------------------------------------------------------------- setup
    def _open(self) -> None:
        if self.kind == "memory":
            self.store = MemoryStore(uid_factory=self.uid_factory)
        else:
            self.store = SQLiteStore(
                self.path, uid_factory=self.uid_factory, backfill_batch_rows=BACKFILL_BATCH
            )

    @initialize(target=sessions, legacy=st.booleans())
    def start(self, legacy: bool):
        if legacy and self.kind == "sqlite":
            build_v30(self.path)
            self._open()
            assert self.store.schema_version_found == 30 and self.store.schema_version() == 31
            for sid, role, content, tool_calls, tcid in FIXTURE_ROWS:
                m: dict[str, Any] = {"role": role, "content": content}
                if tool_calls:
                    m["tool_calls"] = copy.deepcopy(tool_calls)
                if tcid:
                    m["tool_call_id"] = tcid
                self.model.setdefault(sid, []).append(m)
            self.opens = 1
            return multiple("session-1", "session-2")
        self._open()
        sid = self.store.create_session()
        self.model[sid] = []
        return sid

    def teardown(self) -> None:
        STEPS_RUN.append(max(0, self.checks - 1))
        if self.store is not None and self.kind == "sqlite":
            assert self.store.integrity_check() == "ok"
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---------------------------------------------------------------- helpers
    def _flush(self, sid: str, batch: list[dict[str, Any]]) -> None:
        self.store.append(sid, batch)
        for m in batch:
            assert HEX32.match(m["message_uid"]), "[U1/U10] the flushed dict did not receive a uid"
        self.model[sid].extend(batch)

    def _flush_pending(self, sid: str) -> None:
        batch = self.pending.pop(sid, [])
        if batch:
            self._flush(sid, batch)
            for r in batch:
                assert isinstance(r.get("_tool_call_uid"), str), (
                    "[U8] later-batch result not paired at flush"
                )

    # ---------------------------------------------------------------- rules
    @rule(target=sessions)
    def new_session(self):
        sid = self.store.create_session()
        self.model[sid] = []
        return sid

    @rule(sid=sessions, text=TEXT, preflight=st.booleans())
    def user_turn(self, sid, text, preflight):
        self._flush_pending(sid)
        current = user(text)
        if preflight:
            live = self.model[sid] + [current]
            seen = copy.copy(live)  # what a preflight compress() receives
            assert "message_uid" not in seen[-1], (
                "[U10] the current turn had a uid before its flush"
            )
        self._flush(sid, [current])
        if preflight:
            assert live[-1] is current and HEX32.match(current["message_uid"]), (
                "[U10] same dict not stamped"
            )

    @rule(sid=sessions, ids=st.lists(CALL_IDS, min_size=1, max_size=3), now=st.integers(0, 3))
    def assistant_calls(self, sid, ids, now):
        self._flush_pending(sid)
        a = assistant(None, ids)
        results = [tool(cid, f"result {k}") for k, cid in enumerate(ids)]
        self._flush(sid, [a] + results[:now])
        mapping = a["_tool_call_uids"]
        assert set(mapping) == set(ids), "[U8] every provider id needs a uid"
        assert [c["id"] for c in a["tool_calls"]] == ids, "[U8] provider ids changed"
        for r in results[:now]:
            assert r["_tool_call_uid"] == mapping[r["tool_call_id"]], (
                "[U8] same-batch result not paired"
            )
        self.pending[sid] = results[now:]

    @rule(sid=sessions)
    def flush_results_later(self, sid):
        self._flush_pending(sid)

    @rule(sid=sessions, text=TEXT)
    def assistant_text(self, sid, text):
        self._flush_pending(sid)
        self._flush(sid, [assistant(text)])

    def _engine_output(self, sid, keep, prestamp, fold, duplicate):
        self._flush_pending(sid)
        live = self.model[sid]
        tail = copy.deepcopy(live[len(live) - min(keep, len(live)) :])
        carrier: dict[str, Any] = {"role": "user", "content": f"[summary {self.engine_uids}]"}
        stamped = None
        if prestamp:
            self.engine_uids += 1
            stamped = "%032x" % (0xE0000000 + self.engine_uids)
            carrier["message_uid"] = stamped
        folded = None
        if fold:
            idx = [
                i
                for i, m in enumerate(tail)
                if m["role"] == "user" and isinstance(m.get("content"), str)
            ]
            if idx:
                folded = tail.pop(idx[-1])
                fold_into(carrier, folded)
        output = [carrier] + tail
        if duplicate and tail:
            output.append(copy.deepcopy(tail[-1]))
        return output, carrier, stamped, folded

    def _check_carrier(self, carrier, stamped, folded):
        if stamped:
            assert carrier["message_uid"] == stamped, "[U6] engine-stamped uid not committed"
        assert HEX32.match(carrier["message_uid"])
        if folded is not None and folded.get("message_uid"):
            assert carrier["_absorbed_message_uids"][0] == folded["message_uid"], (
                "[U5] fold not recorded"
            )

    @rule(
        sid=sessions,
        keep=st.integers(0, 6),
        prestamp=st.booleans(),
        fold=st.booleans(),
        duplicate=st.booleans(),
    )
    def compress_in_place(self, sid, keep, prestamp, fold, duplicate):
        output, carrier, stamped, folded = self._engine_output(sid, keep, prestamp, fold, duplicate)
        self.store.replace(sid, output)
        self._check_carrier(carrier, stamped, folded)
        self.model[sid] = output

    @rule(
        target=sessions,
        sid=sessions,
        keep=st.integers(0, 6),
        prestamp=st.booleans(),
        fold=st.booleans(),
    )
    def compress_rotate(self, sid, keep, prestamp, fold):
        output, carrier, stamped, folded = self._engine_output(sid, keep, prestamp, fold, False)
        child = self.store.rotate(sid, output)
        self._check_carrier(carrier, stamped, folded)
        self.model[child] = output
        assert self.store.session_info(child).parent_session_id == sid
        return child

    @rule(sid=sessions)
    def merge_and_commit(self, sid):
        self._flush_pending(sid)
        live = copy.deepcopy(self.model[sid])
        before = copy.deepcopy(live)
        repair_message_sequence(live)
        self._check_repair(before, live)
        self.store.replace(sid, live)
        self.model[sid] = live

    @rule(sid=sessions)
    def restore_with_repair(self, sid):
        stored = self.store.load(sid)
        repaired = self.store.load(sid, repair_alternation=True)
        self._check_repair(stored, repaired)

    def _check_repair(self, before, after):
        """U5 from its text: no alternation left, and the uids in text order (each row's uid
        then its absorbed list) are those of the rows before, minus dropped tool results."""
        for x, y in zip(after, after[1:], strict=False):
            assert not (x["role"] == y["role"] == "assistant"), "alternation not repaired"
            assert not (x["role"] == y["role"] == "user" and isinstance(x.get("content"), str)), (
                "users not merged"
            )
        kept_tools = {m.get("message_uid") for m in after if m["role"] == "tool"}
        kept = [m for m in before if m["role"] != "tool" or m.get("message_uid") in kept_tools]
        assert _dedupe(_text_order(after)) == _dedupe(_text_order(kept)), (
            f"[U5] merged uids out of text order: {_text_order(after)} vs {_text_order(kept)}"
        )

    @rule(sid=sessions, data=st.data(), text=TEXT)
    def rewrite(self, sid, data, text):
        self._flush_pending(sid)
        rows = self.model[sid]
        if not rows:
            return
        i = data.draw(st.integers(0, len(rows) - 1))
        old = rows[i]
        new = {
            k: copy.deepcopy(v)
            for k, v in old.items()
            if k in ("role", "tool_calls", "tool_call_id")
        }
        new["content"] = (
            None
            if (old["role"] == "assistant" and old.get("tool_calls") and text == "alpha")
            else f"{text} (rewritten)"
        )
        if text == "beta":
            new["message_uid"] = (
                "b" * 32
            )  # a sanitizer copy carrying a wrong uid: the row's uid wins
        self.store.rewrite(sid, i, new)
        if old.get("message_uid"):
            assert new["message_uid"] == old["message_uid"], "[U4] rewrite changed the uid"
        rows[i] = new

    @rule(target=sessions, sid=sessions, data=st.data())
    def branch(self, sid, data):
        self._flush_pending(sid)
        upto = data.draw(st.integers(0, len(self.model[sid])))
        child = self.store.branch(sid, upto)
        self.model[child] = copy.deepcopy(self.model[sid][:upto])
        parent_uids = [m.get("message_uid") for m in self.store.load(sid)[:upto]]
        assert [m.get("message_uid") for m in self.store.load(child)] == parent_uids, (
            "[U3] branch changed uids"
        )
        assert all(parent_uids), "[U3] a copied row has no uid"
        return child

    @rule(sid=sessions, data=st.data())
    def rewind(self, sid, data):
        self._flush_pending(sid)
        keep = data.draw(st.integers(0, len(self.model[sid])))
        self.store.rewind(sid, keep)
        self.model[sid] = self.model[sid][:keep]

    @rule(target=sessions, sid=sessions)
    def export_import(self, sid):
        self._flush_pending(sid)
        buf = io.StringIO()
        export_jsonl(self.store, sid, buf)
        buf.seek(0)
        new = import_jsonl(self.store, buf)
        imported = copy.deepcopy(self.model[sid])
        self.model[new] = imported
        return new

    @precondition(lambda self: self.kind == "sqlite")
    @rule(sid=sessions, text=TEXT)
    def older_build_writes_row(self, sid, text):
        """A build without uid support inserts a row into the v31 store (raw SQL)."""
        self._flush_pending(sid)
        info = self.store.session_info(sid)
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            (
                "INSERT INTO messages (session_id, generation, "
                "position, role, content) VALUES (?, ?, ?, 'user', ?)"
            ),
            (sid, info.generation, info.length, f'"{text} (old build)"'),
        )
        conn.execute("UPDATE sessions SET length = length + 1 WHERE id = ?", (sid,))
        conn.execute("COMMIT")
        conn.close()
        self.model[sid].append({"role": "user", "content": f"{text} (old build)"})

    @precondition(lambda self: self.kind == "sqlite")
    @rule()
    def restart(self):
        for sid in list(self.pending):
            self._flush_pending(sid)
        self.store.close()
        self._open()
        if self.opens:
            self.opens += 1
            cursor = min(len(FIXTURE_ROWS), BACKFILL_BATCH * self.opens)
            assert self.store.backfill_pending() <= len(FIXTURE_ROWS) - cursor, (
                "[U10] back-fill stalled"
            )

    # ---------------------------------------------------------------- invariants
    @invariant()
    def stored_sessions_match_the_host_view(self):
        if self.store is None:
            return
        self.checks += 1
        for sid, rows in self.model.items():
            loaded = self.store.load(sid)
            assert len(loaded) == len(rows), (
                f"{sid}: {len(loaded)} rows stored, host has {len(rows)}"
            )
            for i, (got, want) in enumerate(zip(loaded, rows, strict=True)):
                if "message_uid" not in want and "message_uid" in got:
                    # Legacy / older-build row, or a copy of one: the identity appears once
                    # (back-fill, trigger, or minted at the copy's first insert).
                    want["message_uid"] = got["message_uid"]
                    if "_tool_call_uids" in got and "_tool_call_uids" not in want:
                        want["_tool_call_uids"] = got["_tool_call_uids"]
                assert got == want, f"[U2/U3/U4] {sid} row {i}: stored {got!r} != host {want!r}"

    @invariant()
    def identity_fields_well_formed(self):
        if self.store is None:
            return
        for sid in self.model:
            loaded = self.store.load(sid)
            for m in loaded:
                if "message_uid" in m:
                    assert HEX32.match(m["message_uid"]), f"[U1] bad uid {m['message_uid']!r}"
                absorbed = m.get("_absorbed_message_uids", [])
                assert m.get("message_uid") not in absorbed, (
                    "[U5] survivor uid in its own absorbed list"
                )
                assert len(absorbed) == len(set(absorbed)), "[U5] duplicate absorbed uid"
            for m, owners in zip(loaded, owning_uids(loaded), strict=True):
                if owners is not None:
                    assert m.get("_tool_call_uid") in owners, (
                        f"[U8] result {m!r} should pair with one of {owners}"
                    )
            wire = strip_persistence_fields(loaded)
            for w, m in zip(wire, loaded, strict=True):
                assert not PERSISTENCE_ONLY_MESSAGE_FIELDS & set(w), (
                    "[U9] persistence field on the wire"
                )
                assert w == {k: v for k, v in m.items() if k not in PERSISTENCE_ONLY_MESSAGE_FIELDS}


def _settings(examples: int, steps: int):
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


class MemoryStoreMachine(StoreMachine):
    kind = "memory"


def _run(machine, examples: int, steps: int, min_total_steps: int) -> None:
    STEPS_RUN.clear()
    run_state_machine_as_test(machine, settings=_settings(examples, steps))
    assert len(STEPS_RUN) >= examples, f"only {len(STEPS_RUN)} examples ran"
    assert sum(STEPS_RUN) >= min_total_steps, (
        f"only {sum(STEPS_RUN)} steps ran in {len(STEPS_RUN)} examples"
    )


def test_sqlite_store_state_machine():
    """[U1-U10] >= 50 examples x up to 20 steps (>= 500 steps) on SQLite; thorough: 400 x 50."""
    if THOROUGH:
        _run(StoreMachine, 400, 50, 8000)
    else:
        _run(StoreMachine, 50, 20, 500)


def test_memory_store_state_machine():
    """[U1-U8, U10] the same machine on MemoryStore (no restart/migration rules)."""
    if THOROUGH:
        _run(MemoryStoreMachine, 200, 50, 4000)
    else:
        _run(MemoryStoreMachine, 25, 20, 250)
