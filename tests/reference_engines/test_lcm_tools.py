"""Covers reference_engines.lcm.tools: the LCM tools (T1, T2, O5, O6) have valid JSON Schemas;
every answer, errors too, is JSON."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from reference_engines.lcm import LCMEngine

from .test_lcm_helpers import carrier_of, conversation, top_node_id


@pytest.fixture
def loaded(tmp_path):
    e = LCMEngine(tmp_path / "lcm.sqlite3")
    e.update_model("m", 3000)
    e.on_session_start("s1")
    msgs = conversation(1, 60)
    msgs[20]["content"] = "The invoice for ACME-77 is overdue."
    out = e.compress(copy.deepcopy(msgs))
    e.on_turn_complete(out)
    yield e, msgs, out
    e.close()


def call(engine, name, args, **kw):
    raw = engine.handle_tool_call(name, args, **kw)
    assert isinstance(raw, str)
    return json.loads(raw)


def test_schemas_are_valid(tmp_path):
    schemas = LCMEngine(tmp_path / "x.sqlite3").get_tool_schemas()
    assert [s["name"] for s in schemas] == ["lcm_grep", "lcm_describe", "lcm_expand"]
    for s in schemas:
        assert set(s) == {"name", "description", "parameters"} and s["description"]
        jsonschema.Draft202012Validator.check_schema(s["parameters"])
        assert s["parameters"]["type"] == "object"
    schemas[0]["name"] = "mutated"
    assert LCMEngine(tmp_path / "x.sqlite3").get_tool_schemas()[0]["name"] == "lcm_grep"


@pytest.mark.parametrize(
    "name,args,fragment",
    [
        ("lcm_nope", {}, "Unknown context engine tool"),
        ("lcm_grep", {}, "missing required argument 'pattern'"),
        ("lcm_grep", {"pattern": 3}, "must be a non-empty string"),
        ("lcm_grep", {"pattern": "x", "limit": 0}, "between 1 and 200"),
        ("lcm_grep", {"pattern": "x", "scope": "files"}, "must be one of"),
        ("lcm_grep", {"pattern": "(", "regex": True}, "not a valid regular expression"),
        ("lcm_grep", {"pattern": "x", "colour": "red"}, "unknown argument"),
        ("lcm_grep", "{not json", "not valid JSON"),
        ("lcm_grep", ["pattern"], "must be a JSON object"),
        ("lcm_describe", {"id": "lcm_000000000000000000000000"}, "no summary node or message"),
        ("lcm_expand", {"node_id": "nothing-here"}, "no summary node or message"),
        ("lcm_expand", {"node_id": "x", "offset": -1}, "between 0 and None"),
        ("lcm_expand", {"node_id": "x", "limit": True}, "must be an integer"),
    ],
)
def test_errors_are_json(loaded, name, args, fragment):
    engine, _, _ = loaded
    reply = call(engine, name, args)
    assert "error" in reply and fragment in reply["error"], reply


def test_grep_finds_compacted_message_and_its_leaf(loaded):
    engine, msgs, out = loaded
    reply = call(engine, "lcm_grep", {"pattern": "acme-77"})
    hits = [m for m in reply["matches"] if m["kind"] == "message"]
    assert [h["message_uid"] for h in hits] == [msgs[20]["message_uid"]]
    assert hits[0]["is_current"] is True and hits[0]["node_ids"]
    leaf = call(engine, "lcm_expand", {"node_id": hits[0]["node_ids"][0]})
    assert msgs[20] in leaf["messages"]
    rx = call(engine, "lcm_grep", {"pattern": r"ACME-\d+", "regex": True, "scope": "messages"})
    assert [m["message_uid"] for m in rx["matches"]] == [msgs[20]["message_uid"]]


def test_grep_summaries_scope_and_limit(loaded):
    engine, _, _ = loaded
    reply = call(engine, "lcm_grep", {"pattern": "Goal", "scope": "summaries", "limit": 3})
    assert len(reply["matches"]) == 3 and reply["truncated"] is True
    assert all(m["kind"] == "summary" and m["node_id"].startswith("lcm_") for m in reply["matches"])


def test_grep_is_scoped_to_the_session(loaded, tmp_path):
    engine, msgs, _ = loaded
    other = engine.clone_for_agent()
    other.on_session_start("s2")
    assert call(other, "lcm_grep", {"pattern": "acme-77"})["matches"] == []
    everywhere = call(other, "lcm_grep", {"pattern": "acme-77", "all_sessions": True})["matches"]
    assert [m["message_uid"] for m in everywhere if m["kind"] == "message"] == [
        msgs[20]["message_uid"]
    ]


def test_describe_and_expand_pages(loaded):
    engine, msgs, out = loaded
    top = call(engine, "lcm_describe", {"id": top_node_id(carrier_of(out))})
    assert top["type"] == "top" and top["committed"] is True
    total = top["message_count"]
    first = call(engine, "lcm_expand", {"node_id": top["node_id"], "limit": 7})
    assert first["total"] == total and len(first["messages"]) == 7 and first["next_offset"] == 7
    last = call(engine, "lcm_expand", {"node_id": top["node_id"], "offset": total - 2, "limit": 7})
    assert len(last["messages"]) == 2 and last["next_offset"] is None
    leaf_id = None
    node = top
    while node["type"] != "leaf":
        node = call(engine, "lcm_describe", {"id": node["children"][0]["node_id"]})
    leaf_id = node["node_id"]
    assert node["children"][0]["message_uid"] == first["messages"][0]["message_uid"]
    assert call(engine, "lcm_expand", {"node_id": leaf_id})["messages"][0] == first["messages"][0]


def test_tools_read_staged_pass_before_commit(tmp_path):
    """Before the host shows the commit, a staged node answers with committed: false."""
    e = LCMEngine(tmp_path / "s.sqlite3")
    e.update_model("m", 3000)
    out = e.compress(conversation(2, 40))
    reply = call(e, "lcm_describe", {"id": top_node_id(carrier_of(out))})
    assert reply["committed"] is False
    reply = call(e, "lcm_expand", {"node_id": top_node_id(carrier_of(out))}, messages=list(out))
    assert reply["committed"] is True and reply["messages"]
