"""Covers simulator.store.merge: alternation repair and merge witnesses (U5, U8)."""

from __future__ import annotations

import copy

import pytest

from simulator.store.merge import fold_into, merge_assistant_rows, repair_message_sequence


def U(uid, content="u"):
    return {"role": "user", "content": content, "message_uid": uid}


def A(uid, content=None, calls=(), uids=None):
    m = {"role": "assistant", "content": content, "message_uid": uid}
    if calls:
        m["tool_calls"] = [
            {"id": c, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for c in calls
        ]
        m["_tool_call_uids"] = uids if uids is not None else {c: f"tc-{uid}-{c}" for c in calls}
    return m


def T(uid, call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": "r", "message_uid": uid}


def test_users_merged_with_blank_line_and_witness_in_text_order():
    msgs = [U("a", "first"), U("b", "second"), U("c", "third")]
    assert repair_message_sequence(msgs) == 2
    assert msgs == [
        {
            "role": "user",
            "content": "first\n\nsecond\n\nthird",
            "message_uid": "a",
            "_absorbed_message_uids": ["b", "c"],
        }
    ]


def test_user_merge_drops_stale_api_content():
    first = U("a", "x")
    first["api_content"] = "x (api)"
    msgs = [first, U("b", "y")]
    repair_message_sequence(msgs)
    assert "api_content" not in msgs[0]


def test_multimodal_user_not_merged():
    mm = {"role": "user", "content": [{"type": "text", "text": "look"}], "message_uid": "b"}
    msgs = [U("a"), mm]
    assert repair_message_sequence(msgs) == 0
    assert len(msgs) == 2 and "_absorbed_message_uids" not in msgs[0]


def test_assistant_tool_calls_then_assistant_union_of_calls():
    msgs = [U("u"), A("a", " hi ", ["c1"]), A("b", "there", ["c2"]), T("t1", "c1"), T("t2", "c2")]
    repair_message_sequence(msgs)
    merged = msgs[1]
    assert [c["id"] for c in merged["tool_calls"]] == ["c1", "c2"]
    assert merged["content"] == "hi\nthere"
    assert merged["_absorbed_message_uids"] == ["b"]
    assert merged["_tool_call_uids"] == {"c1": "tc-a-c1", "c2": "tc-b-c2"}
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool"]


def test_assistant_merge_with_repeated_id_gives_uid_list():
    a = A("a", None, ["c1", "c1"], {"c1": "X"})
    b = A("b", None, ["c1"], {"c1": "Y"})
    merge_assistant_rows(a, b)
    assert a["_tool_call_uids"] == {"c1": ["X", "X", "Y"]}


def test_multimodal_assistant_is_not_joined_nor_recorded_but_calls_are_kept():
    a = A("a", [{"type": "text", "text": "pic"}])
    b = A("b", "text", ["c9"])
    assert merge_assistant_rows(a, b) is False
    assert a["content"] == [{"type": "text", "text": "pic"}]
    assert "_absorbed_message_uids" not in a
    assert a["_tool_call_uids"] == {"c9": "tc-b-c9"}


def test_reasoning_content_carried_only_if_missing():
    a, b = A("a", "x"), A("b", "y")
    b["reasoning_content"] = "think"
    merge_assistant_rows(a, b)
    assert a["reasoning_content"] == "think"
    c, d = A("c", "x"), A("d", "y")
    c["reasoning_content"], d["reasoning_content"] = "mine", "theirs"
    merge_assistant_rows(c, d)
    assert c["reasoning_content"] == "mine"


def test_duplicate_and_stray_tool_results_dropped_and_not_recorded():
    msgs = [U("u"), A("a", None, ["c1"]), T("t1", "c1"), T("t2", "c1"), T("t3", "zzz")]
    assert repair_message_sequence(msgs) == 2
    assert [m["message_uid"] for m in msgs] == ["u", "a", "t1"]
    assert all("_absorbed_message_uids" not in m for m in msgs)


def test_user_turn_resets_known_ids():
    msgs = [U("u"), A("a", None, ["c1"]), T("t1", "c1"), U("v"), T("t2", "c1")]
    repair_message_sequence(msgs)
    assert [m["message_uid"] for m in msgs] == ["u", "a", "t1", "v"]


def test_verification_candidate_replaced_not_recorded():
    cand = A("a", "draft")
    cand["finish_reason"] = "verification_required"
    msgs = [U("u"), cand, A("b", "final")]
    assert repair_message_sequence(msgs) == 1
    assert msgs[1]["message_uid"] == "b" and "_absorbed_message_uids" not in msgs[1]
    assert msgs[1]["content"] == "final"


def test_codex_interim_rows_exempt():
    interim = A("a", "partial")
    interim["finish_reason"] = "incomplete"
    msgs = [U("u"), interim, A("b", "rest")]
    assert repair_message_sequence(msgs) == 0
    assert len(msgs) == 3


def test_merge_of_already_merged_rows_keeps_text_order():
    first = U("a", "1")
    first["_absorbed_message_uids"] = ["b"]
    second = U("c", "2")
    second["_absorbed_message_uids"] = ["d"]
    msgs = [first, second]
    repair_message_sequence(msgs)
    assert msgs[0]["_absorbed_message_uids"] == ["b", "c", "d"]


def test_leading_part_without_uid_gets_none_and_others_recorded():
    legacy = {"role": "user", "content": "old"}
    msgs = [legacy, U("b", "new")]
    repair_message_sequence(msgs)
    assert "message_uid" not in msgs[0]
    assert msgs[0]["_absorbed_message_uids"] == ["b"]


def test_fold_into_rejects_multimodal():
    with pytest.raises(TypeError, match="multimodal"):
        fold_into(
            U("a"), {"role": "user", "content": [{"type": "text", "text": "x"}], "message_uid": "b"}
        )


def test_repair_is_in_place_on_list_and_survivors_only():
    msgs = [U("a", "x"), U("b", "y")]
    second = msgs[1]
    snapshot = copy.deepcopy(second)
    repair_message_sequence(msgs)
    assert second == snapshot  # the absorbed dict itself is not modified


def test_repeated_id_in_one_response_keeps_one_result_per_occurrence():
    msgs = [U("u"), A("a", None, ["c1", "c1"]), T("t1", "c1"), T("t2", "c1"), T("t3", "c1")]
    assert repair_message_sequence(msgs) == 1
    assert [m["message_uid"] for m in msgs] == ["u", "a", "t1", "t2"]
