"""Covers simulator.store.toolcalls: tool-call uid helpers (U8)."""

from __future__ import annotations

from simulator.store.toolcalls import (
    ToolCallPairing,
    build_tool_call_uids,
    occurrence_uids,
    pair_tool_results,
    stamp_tool_call_uids,
)

from .helpers import assistant, seeded_uids, tool, user


def test_stamp_shares_uid_for_repeated_id_and_keeps_existing():
    a = assistant(None, ["x", "y", "x"])
    a["_tool_call_uids"] = {"y": "kept"}
    stamp_tool_call_uids(a, seeded_uids(1))
    assert a["_tool_call_uids"]["y"] == "kept"
    assert set(a["_tool_call_uids"]) == {"x", "y"}
    assert [c["id"] for c in a["tool_calls"]] == ["x", "y", "x"]


def test_stamp_is_noop_without_tool_calls():
    a = assistant("hi")
    stamp_tool_call_uids(a)
    assert "_tool_call_uids" not in a


def test_occurrence_uids_for_str_list_and_missing():
    a = assistant(None, ["x", "x", "y", "z"])
    a["_tool_call_uids"] = {"x": ["X1", "X2"], "y": "Y"}
    assert occurrence_uids(a) == ["X1", "X2", "Y", None]


def test_build_collapses_equal_occurrences_and_skips_incomplete():
    calls = assistant(None, ["x", "x", "y", "z"])["tool_calls"]
    assert build_tool_call_uids(calls, ["X", "X", "Y", None]) == {"x": "X", "y": "Y"}
    assert build_tool_call_uids(calls, ["X", "Z", "Y", "W"]) == {
        "x": ["X", "Z"],
        "y": "Y",
        "z": "W",
    }


def test_pairing_list_values_go_to_results_in_order():
    a = assistant(None, ["x", "x"])
    a["_tool_call_uids"] = {"x": ["X1", "X2"]}
    msgs = [user("q"), a, tool("x"), tool("x"), tool("x")]
    pair_tool_results(msgs)
    assert [m.get("_tool_call_uid") for m in msgs[2:]] == ["X1", "X2", None]


def test_pairing_call_id_variant_and_legacy_call():
    a = assistant(None, ["fc_1"])
    a["tool_calls"][0]["call_id"] = "call_1"
    a["_tool_call_uids"] = {"fc_1": "U1"}
    p = ToolCallPairing()
    p.feed(user("q"))
    p.feed(a)
    assert p.feed(tool("call_1")) == "U1"
    legacy = assistant(None, ["fc_1"])  # no uid map: shadows and pairs with nothing
    p.feed(legacy)
    assert p.feed(tool("fc_1")) is None


def test_pairing_keeps_existing_unless_overwrite():
    a = assistant(None, ["x"])
    a["_tool_call_uids"] = {"x": "NEW"}
    r = tool("x")
    r["_tool_call_uid"] = "OLD"
    assert pair_tool_results([a, r]) == 0 and r["_tool_call_uid"] == "OLD"
    assert pair_tool_results([a, r], overwrite=True) == 1 and r["_tool_call_uid"] == "NEW"
