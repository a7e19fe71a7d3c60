"""Covers simulator.store.transfer: JSONL export/import (U3) and its errors."""

from __future__ import annotations

import io
import json

import pytest

from simulator.store.identity import StoreInputError
from simulator.store.transfer import FORMAT, export_jsonl, import_jsonl

from .helpers import assistant, tool, user


def test_export_format_lines(store):
    sid = store.create_session(topic="demo")
    store.append(sid, [user("q"), assistant(None, ["c"]), tool("c")])
    buf = io.StringIO()
    assert export_jsonl(store, sid, buf) == 3
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["format"] == FORMAT
    assert lines[0]["session"]["meta"] == {"topic": "demo"}
    assert [x["type"] for x in lines[1:]] == ["message"] * 3
    assert lines[3]["message"]["_tool_call_uid"] == lines[2]["message"]["_tool_call_uids"]["c"]


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty input"),
        ("not json\n", "line 1: not JSON"),
        ('{"type": "message", "message": {}}\n', "line 1: expected the session header"),
        (
            json.dumps({"type": "session", "format": FORMAT, "version": 9, "session": {}}) + "\n",
            "version 9",
        ),
        (
            json.dumps({"type": "session", "format": FORMAT, "version": 1, "session": {}})
            + '\n{"type": "x"}\n',
            "line 2",
        ),
    ],
)
def test_import_errors_name_the_line_and_write_nothing(store, text, match):
    before = store.create_session()
    with pytest.raises(StoreInputError, match=match):
        import_jsonl(store, io.StringIO(text))
    with pytest.raises(KeyError):
        store.session_info("session-2")
    assert store.session_info(before).length == 0


def test_import_rejects_bad_message_in_file(store):
    header = json.dumps({"type": "session", "format": FORMAT, "version": 1, "session": {"id": "s"}})
    body = json.dumps({"type": "message", "message": {"role": "robot"}})
    with pytest.raises(StoreInputError, match="import message 1: role 'robot'"):
        import_jsonl(store, io.StringIO(header + "\n" + body + "\n"))
    with pytest.raises(KeyError):
        store.session_info("session-1")
