"""Covers reference_engines.lcm.store and reference_engines.lcm.engine: message identity in the
LCM store, U4 (versions), U5 (absorbed uids), U6 (carrier uid), U7."""

from __future__ import annotations

import copy
import json
import random

import pytest

from reference_engines.lcm import LCMEngine

from .test_lcm_helpers import carrier_of, conversation, expand_all, top_node_id, uid


@pytest.fixture
def engine(tmp_path):
    e = LCMEngine(tmp_path / "lcm.sqlite3")
    e.update_model("m", 3000)
    e.on_session_start("s1")
    yield e
    e.close()


def describe(engine, ident):
    return json.loads(engine.handle_tool_call("lcm_describe", {"id": ident}))


def test_content_change_under_known_uid_is_a_new_version(engine):
    """U4/U7: a rewrite is a new version, never an error; the later sighting is current."""
    msgs = conversation(1, 4)
    target = msgs[2]
    engine.on_session_end("s1", copy.deepcopy(msgs))
    target["content"] = "rewritten by a sanitizer"
    engine.on_session_end("s1", copy.deepcopy(msgs))
    info = describe(engine, target["message_uid"])
    assert [v["is_current"] for v in info["versions"]] == [False, True]
    assert info["versions"][-1]["snippet"] == "rewritten by a sanitizer"
    current = json.loads(engine.handle_tool_call("lcm_expand", {"node_id": target["message_uid"]}))
    assert current["messages"] == [target] and current["versions"] == 2


def test_two_live_rows_share_a_uid(engine):
    """U7: two rows with one uid in the same compress() input: both kept, the later current."""
    msgs = conversation(2, 30)
    dup = copy.deepcopy(msgs[8])
    dup["content"] = "a later copy of the same logical message"
    msgs.insert(14, dup)
    out = engine.compress(copy.deepcopy(msgs))
    engine.on_turn_complete(out)
    got = expand_all(engine, top_node_id(carrier_of(out)))
    assert msgs[8] in got and dup in got
    info = describe(engine, dup["message_uid"])
    assert len(info["versions"]) == 2 and info["versions"][-1]["snippet"] == dup["content"]


def test_absorbed_uids_are_followed(engine):
    """U5: a uid folded into another row resolves to the survivor in describe and expand."""
    rng = random.Random(3)
    msgs = conversation(3, 30)
    a = {"role": "user", "content": "first part", "message_uid": uid(rng)}
    b_uid = uid(rng)
    merged = dict(a, content="first part\n\nsecond part", _absorbed_message_uids=[b_uid])
    msgs[5:5] = [merged, {"role": "assistant", "content": "ok", "message_uid": uid(rng)}]
    out = engine.compress(copy.deepcopy(msgs))
    engine.on_turn_complete(out)
    info = describe(engine, b_uid)
    assert (
        info["kind"] == "message"
        and info["message_uid"] == a["message_uid"]
        and info["followed_from"] == b_uid
    )
    expanded = json.loads(engine.handle_tool_call("lcm_expand", {"node_id": b_uid}))
    assert expanded["messages"] == [merged] and expanded["followed_from"] == b_uid
    assert info["node_ids"], "the survivor is covered by a leaf"


def test_carrier_uid_survives_and_is_recognised_next_pass(engine):
    """U6: the next pass finds its own carrier by uid and carries the DAG forward."""
    msgs = conversation(4, 40)
    out1 = engine.compress(copy.deepcopy(msgs))
    c1 = carrier_of(out1)
    restored = json.loads(json.dumps(out1))  # the host restores rows (U2, U6: same uid)
    longer = restored + conversation(5, 40, system=False)
    out2 = engine.compress(longer)
    c2 = carrier_of(out2)
    assert c2["message_uid"] != c1["message_uid"]
    assert sum(1 for m in out2 if str(m.get("content", "")).startswith("[LCM summary]")) == 1
    engine.on_turn_complete(out2)
    got = expand_all(engine, top_node_id(c2))
    first = expand_all(engine, top_node_id(c1))
    start = got.index(first[0])
    assert got[start : start + len(first)] == first, (
        "the second top node covers everything the first did"
    )
    assert got[:start] == msgs[1 : start + 1], (
        "the first pass's head is summarised by the second, before it"
    )
    assert c1 not in got, "an unmodified carrier is not stored as a message"


def test_carrier_folded_by_alternation_repair(engine):
    """U4/U5: the carrier merged with its neighbour keeps its roots and the merged-in text."""
    msgs = conversation(6, 40)
    out = engine.compress(copy.deepcopy(msgs))
    carrier = carrier_of(out)
    pos = out.index(carrier)
    neighbour = {
        "role": carrier["role"],
        "content": "text folded into the carrier",
        "message_uid": "f" * 32,
    }
    merged = dict(
        carrier,
        content=carrier["content"] + "\n\n" + neighbour["content"],
        _absorbed_message_uids=[neighbour["message_uid"]],
    )
    committed = out[:pos] + [merged] + out[pos + 1 :]
    longer = committed + conversation(7, 40, system=False)
    out2 = engine.compress(longer)
    engine.on_turn_complete(out2)
    got = expand_all(engine, top_node_id(carrier_of(out2)))
    assert merged in got, "the merged carrier row is kept verbatim"
    first_batch = msgs[pos : pos + 5]
    assert all(m in got for m in first_batch), "the first pass's messages are still reachable"
