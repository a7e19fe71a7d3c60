"""Covers simulator.host.session, simulator.host.usage and simulator.host.gateway: H4 retries, H5
on_turn_complete, A2 canonical usage, A7 sentinel, L1 lifecycle order."""

from __future__ import annotations

import pytest

from simulator.host.session import HostConfig, HostSession
from simulator.host.usage import CANONICAL_USAGE_KEYS, canonical_usage
from simulator.provider.core import Provider
from simulator.provider.faults import Fault
from simulator.provider.replies import Reply, ScriptedReplies
from tests.host.conftest import warnings_of
from tests.host.engines import Observing, Plain, Selecting, always_compress


def _session(engine, provider=None, **kw):
    s = HostSession(engine, provider or Provider(), **kw)
    s.start()
    return s


# -- H4: select_context re-runs on every host retry -----------------------------------------------
@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "unavailable", "overloaded"])
def test_select_context_reruns_after_retryable_error(kind):
    """H4: after a simulated 429/5xx the host retries and select_context runs again."""
    eng = Selecting(None)
    s = _session(eng, Provider(faults=[Fault(kind, at=[0])]))
    res = s.user_turn("hello")
    assert res.provider_calls == 1 and not res.failed
    assert len(res.requests) == 2 and res.requests[0] == res.requests[1]
    assert len(eng.select_calls) == 2


def test_select_context_reruns_after_compaction():
    """H4: a compaction restarts the loop; the re-assembled request is selected again."""
    eng = Selecting(None)
    s = _session(eng, context_length=100_000)
    for i in range(3):
        s.user_turn(f"turn {i}")
    eng.threshold_tokens = 1
    eng.keep_last = 2
    before = len(eng.select_calls)
    res = s.user_turn("now compact please")
    assert res.compactions >= 1
    assert len(eng.select_calls) - before == res.provider_calls + 0  # one per provider request
    methods = s.recorder.methods()
    last_compress = max(i for i, m in enumerate(methods) if m == "compress")
    assert "select_context" in methods[last_compress:]


def test_select_context_reruns_after_fallback():
    """H4/K1: a terminal 5xx on the primary switches to the fallback model (update_model) and
    re-selects."""
    eng = Selecting(None)
    faults = [Fault("server_error", when={"model": "primary-model"})]
    cfg = HostConfig(max_retries=1, fallback_model="fallback-model", fallback_context_length=64_000)
    s = _session(
        eng, Provider(faults=faults), model="primary-model", config=cfg, context_length=128_000
    )
    res = s.user_turn("hello")
    assert not res.failed and res.provider_calls == 1
    assert len(eng.select_calls) == 3  # first try, one retry, the fallback
    switches = [c for c in s.recorder.calls if c.method == "update_model"]
    assert len(switches) == 2 and eng.context_length == 64_000
    assert switches[1].kwargs_keys == (
        "api_key",
        "api_mode",
        "base_url",
        "context_length",
        "model",
        "provider",
    )


# -- H5 --------------------------------------------------------------------------------------------
def test_on_turn_complete_kwargs_and_usage():
    """H5: fired once per normal turn with a copy, the canonical usage and the documented kwargs."""
    eng = Observing()
    s = _session(eng)
    s.user_turn("one")
    res = s.user_turn("two")
    assert len(eng.turns) == 2
    last = eng.turns[-1]
    assert set(last["kwargs"]) == {
        "turn_id",
        "task_id",
        "api_call_count",
        "interrupted",
        "failed",
        "turn_exit_reason",
    }
    assert (
        last["kwargs"]["api_call_count"] == 1
        and last["kwargs"]["turn_exit_reason"] == "text_response"
    )
    assert last["kwargs"]["interrupted"] is False and last["kwargs"]["failed"] is False
    assert last["usage"] == res.usage and set(last["usage"]) == set(CANONICAL_USAGE_KEYS)
    assert [m["role"] for m in last["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert last["messages"] is not s.transcript


def test_on_turn_complete_usage_none_without_response():
    """H5: usage is None when no provider response was reached (interrupt)."""
    eng = Observing()
    s = _session(eng)
    s.user_turn("stop", interrupt=True)
    assert eng.turns[-1]["usage"] is None and eng.turns[-1]["kwargs"]["interrupted"] is True


def test_on_turn_complete_cannot_edit_transcript():
    """H5: the copy is read-only for the host: edits and appends stay with the engine."""
    eng = Observing(mutate=True)
    s = _session(eng)
    s.user_turn("hello")
    assert s.transcript[-1]["content"] != "EDITED BY ENGINE" and len(s.transcript) == 2


def test_on_turn_complete_exception_swallowed_and_logged(host_log):
    """H5/H1: a raising hook is logged; the turn and the next turns go on."""
    eng = Observing(raise_in_hook=True)
    s = _session(eng)
    r1 = s.user_turn("a")
    r2 = s.user_turn("b")
    assert r1.reply and r2.reply and len(eng.turns) == 2
    assert sum("on_turn_complete hook failed" in w for w in warnings_of(host_log)) == 2


def test_on_turn_complete_not_fired_on_content_policy_block():
    """H5: a content-policy block ends the turn early without the hook."""
    eng = Observing()
    s = _session(eng, Provider(faults=[Fault("content_filter", at=[0])]))
    res = s.user_turn("bad")
    assert res.turn_exit_reason == "content_filter" and not res.on_turn_complete_fired
    assert eng.turns == []
    assert s.recorder.methods().count("update_from_response") == 1


def test_on_turn_complete_not_fired_on_terminal_failure():
    """H5: a terminal provider failure ends the turn early without the hook."""
    eng = Observing()
    s = _session(eng, Provider(faults=[Fault("terminal", at=[0])]))
    res = s.user_turn("x")
    assert res.failed and res.turn_exit_reason == "provider_error" and eng.turns == []


def test_on_turn_complete_skipped_by_identity():
    """H2/H5: an engine keeping the default is never called for on_turn_complete."""
    s = _session(Plain())
    s.user_turn("x")
    assert "on_turn_complete" not in s.recorder.methods()


def test_tool_loop_counts_api_calls():
    """H5: api_call_count counts every provider response of the turn (tool loop included)."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "grep", "arguments": '{"q": "x"}'},
    }
    provider = Provider(replies=ScriptedReplies([Reply(content=None, tool_calls=[call]), "done"]))
    eng = Observing()
    s = _session(eng, provider)
    s.user_turn("search")
    assert eng.turns[-1]["kwargs"]["api_call_count"] == 2
    assert [m["role"] for m in s.transcript] == ["user", "assistant", "tool", "assistant"]


# -- A2 --------------------------------------------------------------------------------------------
def test_canonical_usage_from_both_provider_shapes():
    """A2: the 8-key canonical dict from an OpenAI-shaped and an Anthropic-shaped response."""
    p = Provider()
    msgs = [{"role": "user", "content": "hello " * 50}]
    openai = p.chat_completions({"model": "anthropic/claude-sonnet-4", "messages": msgs})["usage"]
    anthropic = p.messages(
        {"model": "claude-sonnet-4-20250514", "max_tokens": 100, "messages": msgs}
    )["usage"]
    a, b = canonical_usage(openai), canonical_usage(anthropic)
    for u in (a, b):
        assert tuple(u) == CANONICAL_USAGE_KEYS
        assert (
            u["prompt_tokens"]
            == u["input_tokens"] + u["cache_read_tokens"] + u["cache_write_tokens"]
        )
        assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    assert b["input_tokens"] == anthropic["input_tokens"]
    assert a["prompt_tokens"] == openai["prompt_tokens"]
    assert (
        canonical_usage(
            {
                "prompt_tokens": 10,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": 4},
            }
        )["input_tokens"]
        == 6
    )


def test_update_from_response_gets_canonical_usage_every_call():
    """A2: update_from_response after every provider call, with the 8 keys."""
    eng = Selecting(None)
    s = _session(eng, Provider(faults=[Fault("rate_limit", at=[1])]))
    s.user_turn("a")
    s.user_turn("b")
    assert s.recorder.methods().count("update_from_response") == 2
    assert (
        eng.last_prompt_tokens > 0
        and eng.last_total_tokens == eng.last_prompt_tokens + eng.last_completion_tokens
    )


# -- A7 --------------------------------------------------------------------------------------------
def test_sentinel_after_committed_compaction_until_real_usage():
    """A7: last_prompt_tokens = -1 right after a committed compaction, real usage replaces it."""
    eng = always_compress(Plain())
    eng.keep_last = 2
    s = _session(eng, config=HostConfig(context_timeout_seconds=0))
    for i in range(4):
        s.user_turn(f"turn {i}")
    assert s.compress() == 1
    assert eng.last_prompt_tokens == -1 and eng.get_status()["last_prompt_tokens"] == 0
    s.user_turn("after")
    assert eng.last_prompt_tokens > 0


def test_lifecycle_order():
    """L1: update_model -> on_session_start -> per call update_from_response -> on_session_end;
    reset."""
    eng = Plain()
    s = _session(eng)
    s.user_turn("a")
    s.user_turn("b")
    s.end()
    s.reset()
    m = [x for x in s.recorder.methods() if x != "get_tool_schemas"]
    assert m[:2] == ["update_model", "on_session_start"]
    assert m[2] == "update_from_response" and m[3] == "should_compress"
    assert m[-2:] == ["on_session_end", "on_session_reset"]


# -- U with the SQLite store ----------------------------------------------------------------------
def test_host_on_sqlite_store_keeps_engine_stamped_summary_uid(tmp_path):
    """U1/U6/U9 through the host: rows get uids, the router's stamped summary uid survives
    the commit and restore, and no uid reaches the wire."""
    from reference_engines.router import ReferenceRouter
    from simulator.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "state.db")
    s = HostSession(
        ReferenceRouter(),
        Provider(),
        store,
        clone=True,
        context_length=100_000,
        config=HostConfig(context_timeout_seconds=0),
    )
    s.start()
    for i in range(8):
        s.user_turn(f"turn {i} about the parser")
    assert s.compress() == 1
    summary = next(
        m for m in s.transcript if str(m.get("content", "")).startswith("[Router summary")
    )
    restored = store.load(s.session_id)
    assert all(len(m.get("message_uid", "")) == 32 for m in restored)
    assert summary["message_uid"] in [m["message_uid"] for m in restored]
    s.user_turn("after")
    assert s.provider.u9_leaks == [] and all(b"message_uid" not in r for r in s.requests)


def test_new_session_transition_order():
    """O1-O3 / L1: /new = on_session_end(old, previous) -> on_session_reset -> on_session_start(new,
    old_session_id=)."""
    eng = Plain()
    s = _session(eng)
    s.user_turn("a")
    old = s.session_id
    new = s.new_session()
    m = s.recorder.methods()
    assert m[-3:] == ["on_session_end", "on_session_reset", "on_session_start"]
    start = s.recorder.last("on_session_start")
    assert start.kwargs_keys == ("context_length", "model", "old_session_id", "platform")
    assert new != old and s.transcript == [] and eng.compression_count == 0


def test_gateway_shutdown_ends_every_session():
    """O2: gateway stop is a real boundary for each session."""
    from simulator.host.gateway import Gateway

    gw = Gateway(Plain(), provider=Provider())
    gw.handle_message("a", "x")
    gw.handle_message("b", "y")
    gw.shutdown()
    assert all(s.recorder.methods().count("on_session_end") == 1 for s in gw.sessions.values())


def test_context_overflow_forces_compaction_and_reselects():
    """H4: a provider context-length error forces a compaction and the request is rebuilt
    (select_context runs again on the compacted history)."""
    eng = Selecting(None)
    eng.keep_last = 2
    eng.should_compress = lambda prompt_tokens=None: False  # only the overflow path compacts
    provider = Provider()
    s = _session(
        eng,
        provider,
        model="tiny-model",
        context_length=100_000,
        config=HostConfig(context_timeout_seconds=0),
    )
    for i in range(4):
        s.user_turn(f"turn {i} " + "words " * 40)
    eng.threshold_tokens = 1
    provider.models.override("tiny-model", context_length=300)
    before = len(eng.select_calls)
    res = s.user_turn("one more")
    assert res.compactions == 1 and not res.failed and res.provider_calls == 1
    assert len(eng.select_calls) - before == 2
    assert s.recorder.last("compress").kwargs_keys == ("current_tokens", "focus_topic", "force")
