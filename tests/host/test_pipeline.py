"""Covers simulator.host.pipeline, simulator.host.hooks, simulator.host.sanitize and
simulator.host.cache_control: H1-H4, P1-P2, U9, the request pipeline stage by stage and in
order."""

from __future__ import annotations

import copy
import json

import pytest

from simulator.host import hooks, pipeline, shim
from simulator.host.cache_control import apply_cache_control, count_markers, marker
from simulator.host.profiles import get_profile
from simulator.host.sanitize import (
    MISSING_TOOL_RESULT,
    repair_alternation,
    repair_tool_pairs,
    strip_persistence_fields,
)
from simulator.host.session import HostSession, serialize_request
from simulator.provider.core import Provider
from tests.host.conftest import warnings_of
from tests.host.engines import Plain, Selecting

SYSTEM = {"role": "system", "content": "sys"}


def _history():
    return [
        SYSTEM,
        {"role": "user", "content": "first question", "message_uid": "a" * 32},
        {"role": "assistant", "content": "first answer", "message_uid": "b" * 32},
    ]


def _run_session(engine, turns=4, model="anthropic/claude-sonnet-4"):
    s = HostSession(engine, Provider(seed=7), model=model, context_length=200_000)
    s.start()
    for i in range(turns):
        s.user_turn(f"question number {i} about the parser")
    return s


# -- H2 / byte identity -------------------------------------------------------------------------
def test_non_overriding_engine_request_bytes_identical_to_no_engine():
    """H2/H4: a non-overriding engine leaves every serialized request byte-identical."""
    with_engine = _run_session(Plain())
    without = _run_session(None)
    assert with_engine.requests and with_engine.requests == without.requests
    assert all(b'"cache_control"' in r for r in with_engine.requests)  # P4: markers were placed


def test_overriding_engine_returning_none_is_byte_identical_too():
    """H3: None is "no change": same bytes as no engine."""
    eng = Selecting(answer=None)
    assert _run_session(eng).requests == _run_session(None).requests
    assert eng.select_calls  # it was called (overridden), and changed nothing


def test_identity_skip_never_calls_abc_default(monkeypatch, host_log):
    """H2: the ABC's own select_context is compared by identity and never invoked."""
    base = shim.context_engine_base()
    called = []

    def exploding(self, *a, **k):
        called.append(1)
        raise AssertionError("ABC default must not be called")

    monkeypatch.setattr(base, "select_context", exploding)
    request = pipeline.assemble(None, _history(), None)
    out = hooks.apply_select_context(
        Plain(), request, conversation_messages=_history(), incoming_message=None, budget_tokens=100
    )
    assert out is request and not called and not warnings_of(host_log)


def test_instance_attribute_hook_counts_as_override():
    """H2: a function set on the instance is an override and is called."""
    eng = Plain()
    eng.select_context = lambda req, **kw: [req[0], req[-1]]
    assert hooks.overrides(eng, "select_context")
    assert not hooks.overrides(Plain(), "select_context")


# -- H1 / H3 fail-open -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "answer,label",
    [
        (RuntimeError("boom"), "raises"),
        ([], "empty list"),
        (["not", "dicts"], "list of str"),
        ({"role": "user"}, "non-list"),
        ([{"role": "user", "content": "x"}, "str"], "list holding a str"),
    ],
)
def test_select_context_invalid_fails_open_with_warning(answer, label, host_log):
    """H1/H3: exception / [] / non-list / non-dict items: request unchanged and one WARNING."""

    def fn(req, conv, inc):
        if isinstance(answer, Exception):
            raise answer
        return answer

    eng = Selecting(fn)
    s = _run_session(eng, turns=2)
    assert s.requests == _run_session(None, turns=2).requests, label
    warns = [w for w in warnings_of(host_log) if "select_context" in w]
    assert len(warns) == len(eng.select_calls) >= 2, (label, warns)


def test_select_context_none_is_silent(host_log):
    """H3: None is the normal answer: no warning at all."""
    _run_session(Selecting(None), turns=2)
    assert not [w for w in warnings_of(host_log) if "select_context" in w]


def test_replacement_is_request_only_and_history_untouched():
    """H3: a replacement changes one provider call; the persisted history is never rewritten."""

    def keep_last(req, conv, inc):
        conv.append({"role": "user", "content": "engine junk"})  # editing its copies is harmless
        if inc is not None:
            inc["content"] = "EDITED"
        return [req[0], req[-1]]

    eng = Selecting(keep_last)
    s = _run_session(eng, turns=3)
    last = json.loads(s.requests[-1])
    assert [m["role"] for m in last["messages"]] == ["system", "user"]
    assert len(s.transcript) == 6
    assert all(m.get("content") != "EDITED" for m in s.transcript)
    assert all(m.get("content") != "engine junk" for m in s.transcript)
    assert [m["content"] for m in s.store.load(s.session_id) if m["role"] == "user"][0].startswith(
        "question number 0"
    )


def test_nested_conversation_edit_cannot_corrupt_history():
    """H3: conversation_messages are structural copies (a nested edit stays in the engine)."""
    history = _history()
    history[2]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ]
    before = copy.deepcopy(history)

    def nested(req, conv, inc):
        conv[2]["tool_calls"][0]["function"]["name"] = "HACKED"
        return None

    hooks.apply_select_context(
        Selecting(nested),
        pipeline.assemble(None, history, None),
        conversation_messages=history,
        incoming_message=history[1],
        budget_tokens=1,
    )
    assert history == before


def test_select_context_arguments():
    """H3: request = assembled request, conversation copy, incoming = this turn's user message,
    budget = ctx."""
    eng = Selecting(None)
    s = HostSession(eng, Provider(), context_length=50_000)
    s.start()
    s.user_turn("hello there")
    call = eng.select_calls[-1]
    assert call["budget"] == 50_000 == eng.context_length
    assert call["incoming"]["content"] == "hello there"
    assert call["request"][-1]["content"] == "hello there"
    assert (
        call["conversation"] is not s.transcript
        and call["conversation"][-1]["content"] == "hello there"
    )


# -- H4 order --------------------------------------------------------------------------------------
def test_stage_order_documented_and_hermes():
    """H4: documented assemble -> select_context -> sanitize -> cache_control; 0.19: markers
    first."""
    assert get_profile("documented").stages == (
        "assemble",
        "select_context",
        "sanitize",
        "cache_control",
    )
    assert get_profile("hermes-0.19").stages == ("assemble", "cache_control", "sanitize")
    ctx = pipeline.RequestContext(Selecting(None), None, _history(), None, 10, cache_control=True)
    pipeline.run_stages(ctx, "documented")
    assert ctx.stages_run == ["assemble", "select_context", "sanitize", "cache_control"]


def test_replacement_goes_through_sanitizers_and_cache_control():
    """H4: a replacement with user,user and an orphan tool result is repaired, then marked."""

    def weird(req, conv, inc):
        return [
            req[0],
            {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
            {"role": "user", "content": "a", "message_uid": "c" * 32},
            {"role": "user", "content": "b"},
        ]

    eng = Selecting(weird)
    out = pipeline.build_request(
        eng,
        system_prompt=None,
        history=_history(),
        incoming=None,
        budget_tokens=10,
        cache_control=True,
    )
    assert [m["role"] for m in out] == ["system", "user"]
    assert out[1]["content"][0]["text"] == "a\n\nb" and "message_uid" not in out[1]
    assert count_markers(out) == 2


def test_hermes_profile_marks_before_sanitizing():
    """0.19.0 places markers before the sanitizers: the marker turns a string row into a
    part list, which alternation repair no longer merges, so user,user reaches the wire."""
    history = [
        SYSTEM,
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
        {"role": "user", "content": "d"},
    ]
    doc = pipeline.build_request(
        None,
        system_prompt=None,
        history=history,
        incoming=None,
        budget_tokens=0,
        cache_control=True,
        profile="documented",
    )
    old = pipeline.build_request(
        None,
        system_prompt=None,
        history=history,
        incoming=None,
        budget_tokens=0,
        cache_control=True,
        profile="hermes-0.19",
    )
    assert count_markers(doc) == 4
    assert [m["role"] for m in doc] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in old] == ["system", "user", "user", "assistant", "user"]
    assert old[2]["content"][0]["cache_control"] == {"type": "ephemeral"}


# -- sanitizers ------------------------------------------------------------------------------------
def test_tool_pair_repair_drops_orphans_and_stubs_missing():
    """V2 on the wire: stray and duplicate results dropped, missing ones stubbed."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [
        SYSTEM,
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": None, "tool_calls": [call, dict(call, id="c2")]},
        {"role": "tool", "tool_call_id": "c1", "content": "r1"},
        {"role": "tool", "tool_call_id": "c1", "content": "dup"},
        {"role": "tool", "tool_call_id": "zz", "content": "stray"},
        {"role": "user", "content": "next"},
    ]
    frozen = copy.deepcopy(msgs)
    out = repair_tool_pairs(msgs)
    assert msgs == frozen
    assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in out[3:]] == [
        ("tool", "c1", "r1"),
        ("tool", "c2", MISSING_TOOL_RESULT),
        ("user", None, "next"),
    ]
    clean = [SYSTEM, {"role": "user", "content": "u"}]
    assert repair_tool_pairs(clean) is clean


def test_alternation_repair():
    """user,user merged with a blank line; assistant,assistant unions tool_calls; lists not
    merged."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "x", "tool_calls": [call]},
        {"role": "assistant", "content": "y"},
        {"role": "user", "content": [{"type": "text", "text": "img"}]},
        {"role": "user", "content": "z"},
    ]
    out = repair_alternation(msgs)
    assert out[0]["content"] == "a\n\nb"
    assert out[1]["content"] == "x\ny" and out[1]["tool_calls"] == [call]
    assert len(out) == 4 and msgs[0]["content"] == "a"


def test_u9_fields_never_reach_the_provider():
    """U9: persistence-only fields are stripped from every request (provider sees no leak)."""
    s = _run_session(Plain(), turns=3)
    assert all(m.get("message_uid") for m in s.transcript)
    assert s.provider.u9_leaks == []
    assert all(b"message_uid" not in r for r in s.requests)
    assert strip_persistence_fields([{"role": "user", "content": "x", "_tool_call_uid": "u"}]) == [
        {"role": "user", "content": "x"}
    ]


# -- P1 / P2 ---------------------------------------------------------------------------------------
def test_cache_control_system_and_3_and_placement():
    """P1: system + last 3 non-system; P2: string -> part list, list -> last part, empty ->
    message."""
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "old"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "p1"}, {"type": "text", "text": "p2"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "result"},
        {"role": "user", "content": "latest"},
    ]
    frozen = copy.deepcopy(msgs)
    out = apply_cache_control(msgs)
    assert msgs == frozen
    assert count_markers(out) == 4
    assert out[0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in out[1] and not isinstance(out[1]["content"], list)
    assert out[2]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in out[2]["content"][0]
    assert "cache_control" not in out[3]  # envelope layout: empty assistant cannot carry one
    assert out[4]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert out[5]["content"] == [
        {"type": "text", "text": "latest", "cache_control": {"type": "ephemeral"}}
    ]
    native = apply_cache_control(msgs, native_anthropic=True, ttl="1h")
    assert (
        native[4]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        and native[4]["content"] == "result"
    )
    assert native[3]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_cache_ttl_validation():
    """P1: only 5m and 1h exist."""
    assert marker("1h") == {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ValueError, match="5m"):
        marker("10m")


def test_cache_control_only_for_claude_by_default():
    """P4: markers for Claude models; none for others unless configured."""
    s = _run_session(None, turns=1, model="gpt-4o")
    assert b"cache_control" not in s.requests[0]
    s2 = HostSession(None, Provider(), model="gpt-4o", cache_control=True)
    s2.user_turn("x")
    assert b"cache_control" in s2.requests[0]
    assert serialize_request({"b": 1, "a": [1]}) == b'{"a":[1],"b":1}'


def test_reasoning_keys_stripped_from_non_assistant_rows():
    """H4 (as Hermes MAIN's request build): a replacement cannot put reasoning on a user row;
    assistant rows keep it."""

    def smuggle(req, conv, inc):
        out = [dict(m) for m in req]
        out[-1]["reasoning_content"] = "secret chain"
        out[-2]["reasoning_content"] = "assistant thinking"
        return out

    out = pipeline.build_request(
        Selecting(smuggle),
        system_prompt=None,
        history=_history(),
        incoming={"role": "user", "content": "q"},
        budget_tokens=10,
    )
    assert (
        "reasoning_content" not in out[-1] and out[-2]["reasoning_content"] == "assistant thinking"
    )


def test_tool_pair_repair_keeps_one_result_per_occurrence_of_a_repeated_id():
    """V2/U8 (seeds): a response that repeats a provider id is owed one result per occurrence."""
    from simulator.host.sanitize import repair_tool_pairs

    call = {"id": "call_dup", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [dict(call), dict(call)]},
        {"role": "tool", "tool_call_id": "call_dup", "content": "first"},
        {"role": "tool", "tool_call_id": "call_dup", "content": "second"},
    ]
    assert repair_tool_pairs(msgs) is msgs  # nothing to repair
    missing_second = msgs[:3]
    repaired = repair_tool_pairs(missing_second)
    assert [m.get("content") for m in repaired[2:]] == ["first", repaired[3]["content"]]
    assert len(repaired) == 4 and repaired[3]["tool_call_id"] == "call_dup"
