"""Reply modes: scripted (tool calls too), tool-calling scripts, echo, summariser (B4)."""

from __future__ import annotations

import json
import re

import pytest

from simulator.provider.core import Provider
from simulator.provider.replies import (
    SUMMARY_REQUEST_MARKER,
    SUMMARY_SECTIONS,
    EchoReplies,
    Reply,
    ScriptedReplies,
    SummariserReplies,
    ToolScriptReplies,
    summarise,
)
from tests.provider.conftest import NATIVE


def test_scripted_replies_with_tool_calls_and_fallback():
    p = Provider(
        seed=3,
        replies=ScriptedReplies(
            [
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}]},
                "final answer",
            ]
        ),
    )
    r = p.chat_completions({"messages": [{"role": "user", "content": "go"}]})
    call = r["choices"][0]["message"]["tool_calls"][0]
    assert r["choices"][0]["finish_reason"] == "tool_calls"
    assert call["id"].startswith("call_") and call["function"] == {
        "name": "read_file",
        "arguments": '{"path": "src/app.py"}',
    }
    msgs = [
        {"role": "user", "content": "go"},
        r["choices"][0]["message"],
        {"role": "tool", "tool_call_id": call["id"], "content": "print(1)"},
    ]
    r2 = p.chat_completions({"messages": msgs})
    assert r2["choices"][0]["message"]["content"] == "final answer"
    r3 = p.chat_completions({"messages": [{"role": "user", "content": "more"}]})
    assert r3["choices"][0]["message"]["content"].startswith("echo[")


def test_tool_script_is_pure_function_of_request():
    script = ToolScriptReplies(
        [
            [
                {"name": "search", "arguments": {"q": "x"}},
                {"name": "search", "arguments": {"q": "y"}},
            ],
            [{"name": "open", "arguments": {"n": 1}}],
        ],
        final="all done",
    )
    p = Provider(seed=5, replies=script)
    msgs = [{"role": "user", "content": "find"}]
    r = p.chat_completions({"messages": msgs})
    calls = r["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["search", "search"]
    assert len({c["id"] for c in calls}) == 2
    again = p.chat_completions({"messages": msgs})  # same request: same step (retry-safe)
    assert [c["function"]["name"] for c in again["choices"][0]["message"]["tool_calls"]] == [
        "search",
        "search",
    ]
    msgs += [r["choices"][0]["message"]] + [
        {"role": "tool", "tool_call_id": c["id"], "content": "hit"} for c in calls
    ]
    r = p.chat_completions({"messages": msgs})
    call = r["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["name"] == "open"
    msgs += [
        r["choices"][0]["message"],
        {"role": "tool", "tool_call_id": call["id"], "content": "opened"},
    ]
    assert p.chat_completions({"messages": msgs})["choices"][0]["message"]["content"] == "all done"
    with pytest.raises(ValueError):
        ToolScriptReplies([[]])


def test_tool_calls_on_anthropic_route_become_tool_use():
    p = Provider(
        seed=2,
        replies=ScriptedReplies(
            [{"tool_calls": [{"name": "grep", "arguments": {"pattern": "x"}}]}]
        ),
    )
    r = p.messages(
        {"model": NATIVE, "max_tokens": 100, "messages": [{"role": "user", "content": "go"}]}
    )
    assert r["stop_reason"] == "tool_use"
    block = r["content"][0]
    assert (
        block["type"] == "tool_use"
        and block["id"].startswith("toolu_")
        and block["input"] == {"pattern": "x"}
    )


def test_max_tokens_truncates_and_reports_length():
    p = Provider(
        replies=ScriptedReplies(["one two three four five six seven eight nine ten eleven twelve"])
    )
    r = p.chat_completions({"messages": [{"role": "user", "content": "x"}], "max_tokens": 3})
    assert r["choices"][0]["finish_reason"] == "length" and r["usage"]["completion_tokens"] == 3
    assert r["choices"][0]["message"]["content"] == "one two three"


TEXT = (
    "We must keep the public API stable. The goal is to migrate the parser to src/parser/core.py. "
    "We decided to use a recursive descent design. Tests in tests/test_parser.py failed twice. "
    "The build is blocked by a missing dependency. Next we refactor the lexer in "
    "src/parser/lexer.py. "
    "The cache layer never writes to disk. Benchmarks improved by 30 percent."
)


def test_summarise_has_b4_template_and_traceable_facts():
    s = summarise(TEXT)
    headings = re.findall(r"^## (.+)$", s, re.M)
    assert headings == list(SUMMARY_SECTIONS)
    assert re.findall(r"^### (.+)$", s, re.M) == ["Done", "In Progress", "Blocked"]
    bullets = [ln[2:] for ln in s.splitlines() if ln.startswith("- ") and not ln.startswith("- (")]
    for b in bullets:
        fact = b.split(": ", 1)[1] if b.startswith(("Continue from: ", "Earlier: ")) else b
        assert fact in TEXT, f"untraceable bullet {fact!r}"
    assert "src/parser/core.py" in s and "tests/test_parser.py" in s
    assert (
        "The build is blocked by a missing dependency." in s.split("### Blocked")[1].split("##")[0]
    )


def test_summarise_focus_previous_and_max_chars():
    s = summarise(TEXT, focus_topic="lexer")
    assert "lexer" in s.split("## Critical Context")[1]
    prev = summarise(TEXT)
    s2 = summarise("Now we add error recovery to the parser.", previous_summary=prev)
    assert "Earlier: " in s2 and "Now we add error recovery" in s2
    short = summarise(TEXT * 50, max_chars=600)
    assert len(short) <= 600 and "## Critical Context" in short


def test_summariser_and_echo_modes():
    p = Provider(replies=SummariserReplies())
    r = p.chat_completions({"messages": [{"role": "user", "content": TEXT}]})
    assert r["choices"][0]["message"]["content"].startswith("## Goal")
    p = Provider(replies=EchoReplies())
    r = p.chat_completions(
        {
            "messages": [
                {"role": "system", "content": SUMMARY_REQUEST_MARKER},
                {"role": "user", "content": TEXT},
            ]
        }
    )
    assert "## Progress" in r["choices"][0]["message"]["content"]
    r = p.chat_completions({"messages": [{"role": "user", "content": "ping"}]})
    assert r["choices"][0]["message"]["content"].endswith(": ping")


def test_reply_normalises_shorthand():
    msg = Reply(tool_calls=[{"name": "f", "arguments": {"a": 1}}]).with_ids(1, 2).message()
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"a": 1}
    with pytest.raises(ValueError, match="no function name"):
        Reply(tool_calls=[{"arguments": {}}]).message()
