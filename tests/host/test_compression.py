"""Covers simulator.host.compression, simulator.host.hygiene and simulator.host.gateway: TS1-TS3
compression passes (thread, timeout, snapshot, commit) and B7 gateway hygiene."""

from __future__ import annotations

import copy
import threading

from simulator.host import hygiene
from simulator.host.compression import DaemonPool, run_pass
from simulator.host.gateway import Gateway
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider
from tests.host.conftest import warnings_of
from tests.host.engines import Hanging, Mutating, Plain, always_compress


def _filled(engine, timeout=5.0, turns=4, **kw):
    s = HostSession(engine, Provider(), config=HostConfig(context_timeout_seconds=timeout), **kw)
    s.start()
    for i in range(turns):
        s.user_turn(f"turn {i} text")
    return s


# -- TS1 -------------------------------------------------------------------------------------------
def test_pass_runs_on_pool_daemon_thread_when_timeout_positive():
    """TS1: context_timeout_seconds > 0 -> compress() runs on a daemon pool thread."""
    eng = always_compress(Plain())
    eng.keep_last = 2
    s = _filled(eng)
    assert s.compress() == 1
    rec = s.recorder.last("compress")
    assert rec.thread.startswith("ctx-compress-") and rec.thread != threading.current_thread().name
    worker = next(t for t in threading.enumerate() if t.name == rec.thread)
    assert worker.daemon


def test_pass_runs_inline_when_timeout_zero():
    """TS1: 0 disables the wrapper: compress() runs on the caller's thread."""
    eng = always_compress(Plain())
    eng.keep_last = 2
    s = _filled(eng, timeout=0)
    assert s.compress() == 1
    assert s.recorder.last("compress").thread == threading.current_thread().name


# -- TS2 -------------------------------------------------------------------------------------------
def test_hung_compress_times_out_leaving_transcript_unchanged(host_log):
    """TS2: a hung compress() times out; originals stay, a cooldown starts, the late result is
    discarded."""
    eng = Hanging()
    s = _filled(eng, timeout=0.2)
    before = copy.deepcopy(s.messages)
    stored = s.store.load(s.session_id)
    try:
        assert s.compress() == 0
        assert eng.entered.is_set()
        outcome = s.passes[-1]
        assert outcome.timed_out and not outcome.committed
        assert s.messages == before and s.store.load(s.session_id) == stored
        assert s._cooling_down()
        assert any("host compress_context timeout" in w for w in warnings_of(host_log))
    finally:
        eng.release.set()
    outcome.worker.result(timeout=5)
    assert outcome.late_discarded and s.messages == before


def test_cooldown_blocks_automatic_compaction_but_not_manual():
    """TS2: during the cooldown the pre-API check does not even ask should_compress."""
    eng = always_compress(Plain())
    eng.keep_last = 2
    s = _filled(eng, timeout=5.0, force_compress_timeout=True)
    assert s.compress() == 0 and s._cooling_down()
    n = s.recorder.methods().count("should_compress")
    s.user_turn("during cooldown")
    assert s.recorder.methods().count("should_compress") == n
    s.force_compress_timeout = False
    assert s.compress() == 1  # manual /compress ignores the cooldown
    s.clock.advance(120)
    assert not s._cooling_down()


def test_forced_timeout_hook_is_deterministic():
    """TS2 test hook: force_timeout treats the pass as timed out without waiting."""
    eng = always_compress(Plain())
    eng.keep_last = 2
    s = _filled(eng, timeout=30.0, force_compress_timeout=True)
    before = copy.deepcopy(s.messages)
    assert s.compress() == 0
    s.passes[-1].worker.result(timeout=5)
    assert s.messages == before and s.passes[-1].late_discarded


def test_compress_gets_private_deep_snapshot():
    """TS2: in-place edits of the snapshot are invisible unless the pass commits."""
    s = _filled(Mutating(commit=False), timeout=5.0)
    before = copy.deepcopy(s.messages)
    assert s.compress() == 0 and s.passes[-1].noop
    assert s.messages == before


def test_hermes_profile_hands_the_live_list():
    """0.19.0: compress() gets the live list, so in-place edits leak into the transcript."""
    s = _filled(Mutating(commit=False), timeout=5.0, profile="hermes-0.19")
    s.compress()
    assert any(m.get("content") == "MUTATED" for m in s.transcript)
    assert s.recorder.last("compress").thread == threading.current_thread().name


def test_commit_only_in_time():
    """TS2: a pass that returns in time commits (and stamps uids on the new rows)."""
    s = _filled(Mutating(commit=True), timeout=5.0)
    assert s.compress() == 1
    assert [m["role"] for m in s.messages] == ["system", "assistant"]
    assert all(m.get("message_uid") for m in s.store.load(s.session_id))


def test_run_pass_reports_engine_errors_without_raising():
    """A raising compress() leaves the originals; the host logs and goes on."""

    class Boom(Plain):
        def compress(self, *a, **k):
            raise ValueError("broken")

    msgs = [{"role": "user", "content": "x"}]
    out = run_pass(Boom(), msgs, kwargs={}, timeout_seconds=1.0)
    assert not out.committed and "ValueError" in out.error and out.original is msgs


# -- TS3 -------------------------------------------------------------------------------------------
def test_parallel_sessions_share_one_engine():
    """TS3: passes of two sessions sharing one engine run at the same time on pool threads."""
    barrier = threading.Barrier(2, timeout=5)

    class Rendezvous(Plain):
        def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
            barrier.wait()  # both passes must be inside compress() together
            with self._lock:
                self.compression_count += 1
            return [messages[0], messages[-1]]

    shared = Rendezvous()
    shared._lock = threading.Lock()
    sessions = [_filled(shared, timeout=5.0, turns=2) for _ in range(2)]
    results = []
    threads = [threading.Thread(target=lambda s=s: results.append(s.compress())) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == [1, 1] and shared.compression_count == 2
    names = {s.recorder.last("compress").thread for s in sessions}
    assert len(names) == 2


def test_daemon_pool_does_not_queue_behind_a_hung_job():
    """TS3: a new pass starts on a fresh worker while another one hangs."""
    pool = DaemonPool(max_workers=3, name="t-pool")
    gate = threading.Event()
    pool.submit(gate.wait, 5)
    assert pool.submit(lambda: 42).result(timeout=2) == 42
    gate.set()


# -- B7 --------------------------------------------------------------------------------------------
def test_hygiene_decision_rules():
    """B7: 85 % of the window, real usage first, >= 4 messages, compression enabled."""
    msgs = [{"role": "user", "content": "x" * 400}] * 4
    assert hygiene.decide(
        msgs, context_length=1000, last_prompt_tokens=850, compression_enabled=True
    ).run
    d = hygiene.decide(msgs, context_length=1000, last_prompt_tokens=849, compression_enabled=True)
    assert not d.run and d.source == "actual"
    est = hygiene.decide(msgs, context_length=500, last_prompt_tokens=0, compression_enabled=True)
    assert est.run and est.source == "estimated"
    assert not hygiene.decide(
        msgs[:3], context_length=10, last_prompt_tokens=999, compression_enabled=True
    ).run
    assert not hygiene.decide(
        msgs, context_length=10, last_prompt_tokens=999, compression_enabled=False
    ).run
    assert hygiene.decide(
        msgs,
        context_length=10**9,
        last_prompt_tokens=1,
        compression_enabled=True,
        hard_message_limit=4,
    ).run


def test_gateway_hygiene_compresses_before_the_turn_without_asking_should_compress():
    """B7: the gateway's hygiene agent (its own clone) compresses at 85 %; should_compress is not
    consulted."""
    registered = Plain()
    registered.keep_last = 2
    registered.should_compress = lambda prompt_tokens=None: False
    gw = Gateway(registered, provider=Provider(), context_length=1_500)
    for i in range(6):
        gw.handle_message("chat", f"message {i} " + "lorem ipsum " * 120)
    assert any(d.run for d in gw.hygiene_log)
    assert gw.hygiene_agents and gw.hygiene_agents[0].engine is not gw.sessions["chat"].engine
    assert any(r.method == "compress" for r in gw.sessions["chat"].recorder.calls)
    assert len(gw.sessions["chat"].transcript) < 12


def test_gateway_hygiene_off_when_compression_disabled():
    """B7: compression disabled -> hygiene never fires."""
    gw = Gateway(
        Plain(),
        provider=Provider(),
        context_length=2_000,
        config=HostConfig(compression_enabled=False),
    )
    for _ in range(6):
        gw.handle_message("chat", "lorem ipsum " * 40)
    assert not any(d.run for d in gw.hygiene_log) and not gw.hygiene_agents


# -- compaction boundaries, rotation mode, progress, generations -----------------------------------
class _Starts(Plain):
    """Records every on_session_start and on_session_end call."""

    def __init__(self):
        self.events = []

    def on_session_start(self, session_id, **kwargs):
        self.events.append(("start", session_id, kwargs))

    def on_session_end(self, session_id, messages):
        self.events.append(("end", session_id, len(messages)))


def test_in_place_compaction_keeps_the_previous_generation_and_sends_the_boundary():
    """U3/L1 (documented, compression.in_place true): a committed pass is a new generation of
    the same session; the originals stay readable; on_session_end(id) then
    on_session_start(id, boundary_reason="compression", old_session_id=id)."""
    eng = always_compress(_Starts())
    eng.keep_last = 2
    s = _filled(eng)
    before = s.store.load(s.session_id)
    n = len(s.store.generations(s.session_id))
    assert s.compress() == 1
    gens = s.store.generations(s.session_id)
    assert len(gens) == n + 1 and gens[-2] == before and gens[-1] == s.store.load(s.session_id)
    end, start = eng.events[-2:]
    assert end[:2] == ("end", s.session_id)
    assert start[0] == "start" and start[1] == s.session_id
    assert start[2]["boundary_reason"] == "compression"
    assert start[2]["old_session_id"] == s.session_id


def test_rotation_mode_continues_in_a_child_session_mid_turn():
    """L1/U3 (compression.in_place: false): an automatic mid-turn compaction rotates the session
    into a child holding the compacted rows; on_session_start(child, old_session_id=parent,
    boundary_reason="compression"); the turn goes on in the child."""
    eng = always_compress(_Starts())
    eng.keep_last = 2
    config = HostConfig.from_config({"compression": {"in_place": False}})
    assert config.compression_in_place is False
    s = HostSession(eng, Provider(), config=config)
    s.start()
    first = s.session_id
    for i in range(4):
        s.user_turn(f"turn {i} text")
    assert s.compactions >= 1 and s.session_id != first
    info = s.store.session_info(s.session_id)
    assert info.parent_session_id is not None and s.store.session_info(first).ended
    starts = [e for e in eng.events if e[0] == "start" and e[2].get("boundary_reason")]
    assert starts and all(e[2]["boundary_reason"] == "compression" for e in starts)
    assert starts[0][2]["old_session_id"] == first and starts[-1][1] == s.session_id
    assert s.store.load(s.session_id) == s.messages  # the child holds the live transcript


def test_rotate_sends_what_hermes_sends():
    """The rotate operation: on_session_end(old), on_session_start(child,
    boundary_reason="compression", old_session_id=old); no "rotation" reason."""
    eng = _Starts()
    s = _filled(eng, turns=2)
    old = s.session_id
    child = s.rotate()
    assert eng.events[-2][:2] == ("end", old)
    kind, sid, kwargs = eng.events[-1]
    assert (kind, sid) == ("start", child)
    assert kwargs["boundary_reason"] == "compression" and kwargs["old_session_id"] == old


def test_a_pass_that_moves_no_rows_or_tokens_is_not_committed():
    """Documented (current Hermes): an equal copy is no progress: nothing committed, the store
    keeps one generation, no boundary callbacks; the input object is a decline (noop)."""

    class Copies(_Starts):
        def compress(self, messages, current_tokens=None, **kw):
            return [dict(m) for m in messages]

    class Declines(_Starts):
        def compress(self, messages, current_tokens=None, **kw):
            return messages

    for cls, flag in ((Copies, "no_progress"), (Declines, "noop")):
        eng = always_compress(cls())
        s = _filled(eng, turns=2)
        ends = sum(e[0] == "end" for e in eng.events)
        assert s.compress() == 0
        assert getattr(s.passes[-1], flag) and not s.passes[-1].committed
        assert len(s.store.generations(s.session_id)) == 1
        assert sum(e[0] == "end" for e in eng.events) == ends


def test_hygiene_pass_leaves_no_stray_session_and_no_rewrite_without_progress():
    """B7: the hygiene agent works on the conversation's own session (no one-row session per
    pass); a pass that removed nothing does not rewrite the store."""
    from simulator.store.memory import MemoryStore

    class Copies(Plain):
        def compress(self, messages, current_tokens=None, **kw):
            return [dict(m) for m in messages]

    store = MemoryStore()
    gw = Gateway(Copies(), provider=Provider(), store=store, context_length=2_000)
    for i in range(14):
        gw.handle_message("chat", f"message {i} " + "word " * 120)
    fired = [d for d in gw.hygiene_log if d.run]
    assert fired, [d.reason for d in gw.hygiene_log]
    sess = gw.sessions["chat"]
    assert len(store._sessions) == 1  # noqa: SLF001  (the store's own table of sessions)
    assert len(store.generations(sess.session_id)) == 1
