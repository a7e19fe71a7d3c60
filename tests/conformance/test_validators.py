"""Covers conformance.authoring.expect's validators added for faults plugin authors ship: V2's
in-flight
exception (in_flight_calls, trailing_chain, v2_problems(in_flight=)), V4's whole-prompt prefix,
V5's known keys and P5's cache markers; and conformance.checks.b_compressor.sections, which
B4's answered-ask check reads headings with."""

from __future__ import annotations

from conformance.authoring.expect import (
    cache_marker_problems,
    in_flight_calls,
    trailing_chain,
    unknown_key_problems,
    v2_problems,
    v4_problems,
)
from conformance.checks.b_compressor import OPEN_WORK, sections


def _calls(*ids):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def _result(cid):
    return {"role": "tool", "tool_call_id": cid, "content": "ok"}


ASK = {"role": "user", "content": "go"}


def test_a_pending_call_is_in_flight_not_an_orphan():
    history = [ASK, _calls("a", "b"), _result("a")]
    assert in_flight_calls(history) == ["b"]
    assert trailing_chain(history) == history[1:]
    assert v2_problems(history, in_flight=["b"]) == []
    assert "has no tool result" in v2_problems(history)[0]


def test_the_exception_covers_only_the_trailing_chain_it_names():
    history = [ASK, _calls("a"), ASK, _calls("b")]
    # "a" is owed by an earlier message, not the trailing one: still an orphan
    assert [p for p in v2_problems(history, in_flight=["a", "b"]) if "'a'" in p]
    assert in_flight_calls(history) == ["b"]
    assert v2_problems([ASK, _calls("b"), {"role": "assistant", "content": "x"}], in_flight=["b"])
    assert in_flight_calls([ASK, _calls("a"), _result("a")]) == []
    assert in_flight_calls([ASK, {"role": "assistant", "content": "done"}]) == []


def test_v4_wants_the_whole_prompt_not_its_opening():
    prompt = "rule. " * 400 + "END-TOKEN"
    before = [{"role": "system", "content": prompt}]
    assert v4_problems(before, [{"role": "system", "content": prompt + "\n\n[note]"}]) == []
    cut = v4_problems(before, [{"role": "system", "content": prompt[:600]}])
    assert cut and "the first 600 of its 2409 characters kept" in cut[0]
    parts = [{"type": "text", "text": prompt[:100]}, {"type": "text", "text": prompt[100:]}]
    assert v4_problems([{"role": "system", "content": parts}], before) == []


def test_v5_unknown_keys_except_host_fields_and_pass_through():
    before = [{"role": "user", "content": "a", "finish_reason": "stop"}]
    after = [
        {"role": "user", "content": "a", "finish_reason": "stop", "_lcm": 1, "message_uid": "x"},
        {"role": "assistant", "content": "s", "reasoning": "r", "dag_node": "n1", "raw": {}},
    ]
    assert unknown_key_problems(before, after) == [
        "message 1 (assistant) carries 'dag_node', 'raw'"
    ]


def test_p5_markers_on_rows_and_parts_unless_passed_through():
    marked = {"role": "user", "content": "a", "cache_control": {"type": "ephemeral"}}
    part = {
        "role": "user",
        "content": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
    }
    assert cache_marker_problems([marked], [marked]) == []
    assert cache_marker_problems([], [marked, part]) == [
        "message 0 (user) carries cache_control on the message",
        "message 1 (user) carries cache_control on content part 0",
    ]


def test_sections_read_markdown_bold_and_label_headings():
    text = "## Goal\n- g\n### In Progress\n- a\n**Pending**\n- b\nNext Steps:\n- c\n### Done\n- d"
    got = sections(text)
    assert got == [
        ("Goal", "- g"),
        ("In Progress", "- a"),
        ("Pending", "- b"),
        ("Next Steps", "- c"),
        ("Done", "- d"),
    ]
    assert [h for h, _ in got if OPEN_WORK.search(h)] == ["In Progress", "Pending", "Next Steps"]
