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
