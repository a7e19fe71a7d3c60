"""Covers reference_engines.tokens and reference_engines.extractive, the helpers the model
engines use instead of the kit: their counts and summaries equal the provider simulator's
(simulator.provider.tokens, simulator.provider.replies.summarise), the compressor's default
summariser answers as the in-process provider answered its requests, and the engines import
Hermes' plugin API (agent.*) and no module of the simulator or the kit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.histories import KINDS, history
from reference_engines import extractive
from reference_engines import tokens as engine_tokens
from reference_engines._compressor.summariser import (
    ExtractiveSummariser,
    SummaryContextError,
    SummaryRequest,
    build_messages,
    summary_from_prompt,
)
from simulator.provider import replies as sim_replies
from simulator.provider import tokens as sim_tokens
from simulator.provider.core import Provider

ROOT = Path(__file__).resolve().parents[2]

ODD_MESSAGES = [
    {"role": "system", "content": "You are a helpful agent. <|endoftext|> stays plain text."},
    {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url"}]},
    {"role": "user", "content": [{"type": "input_audio", "data": "xyz", "cache_control": {}}]},
    {"role": "user", "content": "lone surrogate \ud800 here", "message_uid": "u-1"},
    {
        "role": "assistant",
        "content": None,
        "name": "planner",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}},
            "not a call",
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "x" * 9000, "_tool_call_uid": "t"},
    {"role": "user", "content": ["a bare string part", {"type": "text", "text": None}]},
    {"role": "assistant", "content": {"odd": "dict content"}},
]


def test_message_counts_equal_the_simulators():
    rows = ODD_MESSAGES + [m for kind in KINDS for m in history(120, 5, kind)]
    for m in rows:
        assert engine_tokens.count_message(m) == sim_tokens.count_message(m), m
    assert engine_tokens.count_messages(rows) == sim_tokens.count_messages(rows)
    engine_tokens.clear_memos()
    assert engine_tokens.count_messages(rows) == sim_tokens.count_messages(rows)  # no memo


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_text_counts_equal_the_simulators(text):
    assert engine_tokens.count_text(text) == sim_tokens.count_text(text)
    assert engine_tokens.count_content(text) == sim_tokens.count_content(text)


def test_the_encoding_is_cl100k_read_offline():
    enc = engine_tokens.encoding()
    assert enc.name == "cl100k_base"
    text = "def main():\n    return 'héllo 世界'"
    assert enc.encode_ordinary(text) == sim_tokens.encoding().encode_ordinary(text)


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from("ab cd./!?\n must use src/a.py error 世界。"), max_size=600
    ),
    focus=st.one_of(st.none(), st.sampled_from(["must", "src", "error"])),
    previous=st.one_of(st.none(), st.just("## Goal\n- ship it\n### Done\n- (none)")),
    max_chars=st.integers(min_value=50, max_value=4000),
)
def test_extractive_summary_equals_the_simulators(text, focus, previous, max_chars):
    kwargs = {"focus_topic": focus, "max_chars": max_chars, "previous_summary": previous}
    assert extractive.summarise(text, **kwargs) == sim_replies.summarise(text, **kwargs)
    assert extractive.SUMMARY_REQUEST_MARKER == sim_replies.SUMMARY_REQUEST_MARKER
    rows = history(12, 3, "mixed")
    assert extractive.request_text(rows) == sim_replies.request_text(rows)


class _EngineSummaryReplies(sim_replies.ReplyPolicy):
    """The provider reply mode the compressor's default summariser used to be answered by."""

    def reply(self, request, index, seed):
        return sim_replies.Reply(
            content=summary_from_prompt(request["messages"], int(request["max_tokens"]))
        )


def _request(turns: int, budget: int, focus: str | None = None) -> SummaryRequest:
    parts = [
        f"[user]\nTurn {i}: fix src/mod{i}.py, we must use the cache. It failed again.\n"
        f"[assistant]\nDecided to use retries for module {i}."
        for i in range(turns)
    ]
    messages = build_messages(
        turn_parts=parts,
        budget_tokens=budget,
        focus_topic=focus,
        previous_summary=None,
        memory_context="",
        turns_total=turns,
        turns_sent=turns,
    )
    return SummaryRequest(
        messages=messages,
        budget_tokens=budget,
        focus_topic=focus,
        previous_summary=None,
        memory_context="",
        turns_text="\n".join(parts),
        turns_total=turns,
        turns_sent=turns,
    )


def test_default_summariser_answers_as_the_in_process_provider_did():
    for turns, budget, focus in ((3, 2000, None), (40, 2000, "cache"), (400, 2000, None)):
        request = _request(turns, budget, focus)
        body = {
            "model": "simulated-summariser",
            "messages": request.messages,
            "max_tokens": budget,
            "temperature": 0,
        }
        provider = Provider(seed=0, replies=_EngineSummaryReplies())
        expected = provider.chat_completions(body)["choices"][0]["message"]["content"]
        summariser = ExtractiveSummariser()
        assert summariser(request) == expected
        assert summariser.last_request == dict(body, model="extractive-summariser")
        assert summariser.calls == 1


def test_default_summariser_fails_like_a_provider_when_the_prompt_does_not_fit():
    request = _request(60, 2000)
    prompt = engine_tokens.count_messages(request.messages)
    window = prompt + 1999
    try:
        ExtractiveSummariser(context_length=window)(request)
    except SummaryContextError as exc:
        assert exc.code == "context_length_exceeded"
        assert f"{prompt + 2000} tokens ({prompt} in the messages" in str(exc)
    else:  # pragma: no cover - the assertion message
        raise AssertionError("no SummaryContextError")
    assert ExtractiveSummariser(context_length=prompt + 2000)(request)


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_engines_import_agent_and_no_module_of_the_kit():
    """With the kit's agent.* shim (or hermes-agent), importing the model engines loads only
    the shim's own modules of the kit: no provider, store, host pipeline or conformance."""
    code = (
        "import sys, json\n"
        "from simulator.host import shim\n"
        "shim.install()\n"
        "before = set(sys.modules)\n"
        "import reference_engines.compressor, reference_engines.router, reference_engines.lcm\n"
        "new = sorted(m for m in set(sys.modules) - before\n"
        "             if m.split('.')[0] in ('simulator', 'conformance'))\n"
        "print(json.dumps(new))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    # the shim serves agent.context_engine from simulator.host.abc (and its redaction model)
    assert set(loaded) <= {"simulator.host.abc", "simulator.host.redaction"}, loaded


def test_the_engines_do_not_install_the_shim_themselves():
    code = (
        "import importlib.util, sys\n"
        "if importlib.util.find_spec('agent') is not None:\n"
        "    print('hermes'); sys.exit(0)\n"
        "try:\n"
        "    import reference_engines.compressor\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc.name)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('simulator', 'conformance'))))\n"
    )
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr
    first, _, rest = proc.stdout.partition("\n")
    if first == "hermes":
        return  # a real hermes-agent is importable here: nothing to show
    assert first == "agent", proc.stdout
    assert rest.strip() == "[]", proc.stdout
