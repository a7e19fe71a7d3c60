"""Covers simulator.host.profiles and simulator.host.record: host profiles (documented vs
hermes-0.19), H7 pre_llm_call, and the instrumentation."""

from __future__ import annotations

import json
import threading

import pytest

from simulator.host.profiles import PROFILES, get_profile
from simulator.host.record import Recorder
from simulator.host.session import HostConfig, HostSession
from simulator.provider.core import Provider
from tests.host.engines import Observing, Plain, Selecting, always_compress


def _run(engine, profile, turns=4, **kw):
    s = HostSession(
        engine, Provider(), profile=profile, config=HostConfig(context_timeout_seconds=5.0), **kw
    )
    s.start()
    for i in range(turns):
        s.user_turn(f"message {i}")
    return s


def test_unknown_profile_is_a_clear_error():
    with pytest.raises(ValueError, match="documented"):
        get_profile("hermes-9")
    assert set(PROFILES) == {"documented", "hermes-0.19", "hermes-0.22"}


def test_hermes_profile_never_calls_the_hooks():
    """0.19.0: select_context and on_turn_complete exist on the engine but are never called."""

    class Both(Selecting, Observing):
        def __init__(self):
            Selecting.__init__(self, None)
            Observing.__init__(self)

    s = _run(Both(), "hermes-0.19")
    assert s.recorder.never_called("select_context") and s.recorder.never_called("on_turn_complete")
    d = _run(Both(), "documented")
    assert not d.recorder.never_called("select_context") and not d.recorder.never_called(
        "on_turn_complete"
    )


def test_hermes_profile_compress_input_and_boundary_callbacks():
    """0.19.0: compress() gets the history without the system message, on the caller thread;
    on_session_end then on_session_start(boundary_reason="compression") follow every compaction."""
    eng = always_compress(Plain())
    eng.keep_last = 2
    s = _run(eng, "hermes-0.19", turns=3)
    assert s.compactions >= 1
    rec = s.recorder.last("compress")
    assert rec.main_thread
    assert s.recorder.called_in_order(["compress", "on_session_end", "on_session_start"])
    assert s.system_message["role"] == "system" and s.messages[0] is s.system_message

    class Starts(Plain):
        def on_session_start(self, session_id, **kwargs):
            self.starts = getattr(self, "starts", []) + [(session_id, kwargs)]

    starts = always_compress(Starts())
    starts.keep_last = 2
    d = _run(starts, "documented", turns=3)
    assert d.compactions >= 1 and not d.recorder.last("compress").main_thread
    # the documented host sends the same boundary callbacks (current Hermes), same id in place
    assert d.recorder.called_in_order(["compress", "on_session_end", "on_session_start"])
    sid, kwargs = d.engine.starts[-1]
    assert kwargs["boundary_reason"] == "compression"
    assert kwargs["old_session_id"] == sid == d.session_id


def test_compress_input_roles_per_profile():
    """Documented: the system message first; 0.19.0: none."""
    seen = {}

    class Spy(Plain):
        def compress(self, messages, current_tokens=None, focus_topic=None, **kw):
            seen.setdefault(self.profile_name, [m["role"] for m in messages])
            return messages

    for name in PROFILES:
        eng = Spy()
        eng.profile_name = name
        s = _run(eng, name, turns=2)
        s.compress()
    assert seen["documented"][0] == "system" and seen["hermes-0.19"][0] == "user"


def test_hermes_profile_mints_no_uids():
    """0.19.0 (schema 22): no message_uid on the transcript nor in the store."""
    s = _run(Plain(), "hermes-0.19", turns=2)
    assert not any("message_uid" in m for m in s.transcript)
    d = _run(Plain(), "documented", turns=2)
    assert all(len(m["message_uid"]) == 32 for m in d.transcript)


def test_hermes_profile_wire_identical_to_documented_for_plain_engine_without_cache():
    """With no markers and a non-overriding engine both profiles send the same messages, but
    for the SDK's ``refusal`` key the documented host keeps on assistant rows: real Hermes
    builds its own assistant row (``assistant_sdk_fields=False``, seen on 0.19.0 and 0.22.2
    by tests/host/test_hermes_profile.py)."""
    for real in ("hermes-0.19", "hermes-0.22"):
        a = _run(Plain(), real, turns=3)
        b = _run(Plain(), "documented", turns=3)
        assert a.requests != b.requests and b"refusal" not in b"".join(a.requests)
        assert a.requests == [r.replace(b',"refusal":null', b"") for r in b.requests]


# -- H7 -------------------------------------------------------------------------------------------
def test_pre_llm_call_can_only_append():
    """H7: a pre_llm_call hook appends text to the user message; it cannot drop messages."""

    def inject(messages, incoming):
        messages.clear()  # editing its copy changes nothing
        return "[recalled: the user prefers tabs]"

    s = HostSession(Plain(), Provider(), pre_llm_call=[inject, lambda **kw: 42])
    s.user_turn("first")
    s.user_turn("second")
    body = json.loads(s.requests[-1])
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][-1]["content"] == "second\n\n[recalled: the user prefers tabs]"
    assert s.transcript[-2]["content"] == "second"  # request-only


# -- instrumentation ------------------------------------------------------------------------------
def test_recorder_fields_and_queries():
    """Every call: method, args digest, thread, duration, outcome, order."""
    r = Recorder()
    eng = Plain()
    r.call(eng, "update_model", model="m", context_length=10)
    with pytest.raises(TypeError):
        r.call(eng, "should_compress", 1, 2, 3)
    t = threading.Thread(target=r.call, args=(eng, "on_session_reset"), name="other")
    t.start()
    t.join()
    a, b, c = r.calls
    assert a.outcome == "returned" and b.outcome == "raised TypeError" and c.thread == "other"
    assert a.main_thread and not c.main_thread and a.duration >= 0 and len(a.args_digest) == 16
    assert a.kwargs_keys == ("context_length", "model") and a.engine_id == id(eng)
    assert r.called_in_order(["update_model", "on_session_reset"])
    assert not r.called_in_order(["on_session_reset", "update_model"])
    assert r.never_called("compress") and r.threads("on_session_reset") == ["other"]
    same = Recorder()
    same.call(eng, "update_model", model="m", context_length=10)
    assert same.calls[0].args_digest == a.args_digest
